#!/usr/bin/env python3
"""Where CUPTI was behind its own records in a soak, and what the job ran meanwhile.

Usage: soak_behind.py DECODE DIR PROGRESS LAUNCHED [TIMELINE]
Reads the intervals marked CUPTI-behind (`cupmon-decode info --format json`, `cupti_behind`) and
the job's PROGRESS file (lines "<kernels completed> <steps> <CLOCK_REALTIME ns>", one a second)
and prints one line of key=value: behind (intervals), behind_s (their length; an interval open
at the end runs to the last progress line), launched_inside (kernels the job completed between
each interval's begin and end, read from the progress lines around them, and LAUNCHED, the job's
final count, for an interval that ends after its last progress line: an upper bound of what
CUPTI could have lost there without counting it), first_begin_unix (the first interval's begin,
unix seconds; 0 when none). With TIMELINE (`cupmon-decode timeline DIR --bucket 5s` csv), also
unmarked_short: the buckets outside every interval (widened by 2 s) in which the recording holds
fewer than 98% of the kernels the job completed (interpolated from the progress lines), from the
second bucket the files hold (retention deleted what came before) to the last progress line,
and unmarked_missing: the kernels they lack. Counted drops also show there: CUPTI's drops came
only inside the intervals in the soak's runs.
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    decode, directory, progress, launched = sys.argv[1:5]
    timeline = sys.argv[5] if len(sys.argv) == 6 else None
    run = subprocess.run([decode, "info", directory, "--format", "json"], capture_output=True,
                         text=True)
    try:
        doc = json.loads(run.stdout)
    except ValueError:
        print(f"behind=? behind_s=? launched_inside=? (info --format json failed: "
              f"{run.stderr.strip()[:200]})")
        return 1
    points = []
    for line in open(progress):
        p = line.split()
        if len(p) == 3:
            points.append((int(p[2]), int(p[0])))
    if not points:
        print("behind=? behind_s=? launched_inside=? (empty progress file)")
        return 1
    last_t = points[-1][0]

    def completed_before(t):  # the last progress at or before t (0 before the first)
        k = 0
        for ts, n in points:
            if ts <= t:
                k = n
        return k

    def completed_after(t):  # the first progress at or after t (the final count when none)
        for ts, n in points:
            if ts >= t:
                return n
        return int(launched)

    count, seconds, inside, first = 0, 0.0, 0, 0
    spans = []
    for rec in doc.get("recordings", []):
        for b in rec.get("cupti_behind", []):
            count += 1
            begin = b.get("begin_unix_ns") or points[0][0]
            end = begin + b["duration_ns"] if b.get("duration_ns") is not None else last_t
            end = max(end, begin)
            first = begin if not first else min(first, begin)
            spans.append((begin, end))
            seconds += (min(end, last_t) - begin) / 1e9
            inside += completed_after(end) - completed_before(begin)
    line = (f"behind={count} behind_s={seconds:.1f} launched_inside={inside} "
            f"first_begin_unix={first / 1e9:.3f}")
    if timeline:
        short, missing = unmarked_shortfall(timeline, points, spans)
        line += f" unmarked_short={short} unmarked_missing={missing}"
    print(line)
    return 0


def completed_at(points, t):
    """Kernels the job had completed at t (unix ns), linear between progress lines."""
    if t <= points[0][0]:
        return points[0][1] * 0  # before the first line: not known, count from there
    for (t0, k0), (t1, k1) in zip(points, points[1:]):
        if t0 <= t <= t1:
            return k0 + (k1 - k0) * (t - t0) / max(t1 - t0, 1)
    return points[-1][1]


def unmarked_shortfall(timeline, points, spans, margin_ns=2_000_000_000):
    buckets = []
    for line in open(timeline):
        f = line.strip().split(",")
        if len(f) < 11 or not f[1].isdigit():
            continue
        buckets.append((int(f[1]), int(f[2]), int(f[10])))
    if not buckets:
        return 0, 0
    buckets.sort()
    # Buckets without a record are not in the timeline: walk the grid to the last progress line.
    length = buckets[0][1]
    held = {start: kernels for start, _, kernels in buckets}
    grid = range(buckets[0][0] + length, points[-1][0], length)
    short, missing = 0, 0
    for start in grid:
        kernels = held.get(start, 0)
        end = start + length
        if start < points[0][0] or end > points[-1][0]:
            continue
        if any(start < e + margin_ns and end > b - margin_ns for b, e in spans):
            continue
        ran = completed_at(points, end) - completed_at(points, start)
        if kernels < 0.98 * ran:
            short += 1
            missing += int(ran - kernels)
    return short, missing


if __name__ == "__main__":
    sys.exit(main())
