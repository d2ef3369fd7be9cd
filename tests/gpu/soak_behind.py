#!/usr/bin/env python3
"""Where CUPTI was behind its own records in a soak, and what the job ran meanwhile.

Usage: soak_behind.py DECODE DIR PROGRESS LAUNCHED
Reads the intervals marked CUPTI-behind (`cupmon-decode info --format json`, `cupti_behind`) and
the job's PROGRESS file (lines "<kernels completed> <steps> <CLOCK_REALTIME ns>", one a second)
and prints one line of key=value: behind (intervals), behind_s (their length; an interval open
at the end runs to the last progress line), launched_inside (kernels the job completed between
each interval's begin and end, read from the progress lines around them, and LAUNCHED, the job's
final count, for an interval that ends after its last progress line: an upper bound of what
CUPTI could have lost there without counting it), first_begin_unix (the first interval's begin,
unix seconds; 0 when none).
"""
import json
import subprocess
import sys


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    decode, directory, progress, launched = sys.argv[1:]
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
    for rec in doc.get("recordings", []):
        for b in rec.get("cupti_behind", []):
            count += 1
            begin = b.get("begin_unix_ns") or points[0][0]
            end = begin + b["duration_ns"] if b.get("duration_ns") is not None else last_t
            end = max(end, begin)
            first = begin if not first else min(first, begin)
            seconds += (min(end, last_t) - begin) / 1e9
            inside += completed_after(end) - completed_before(begin)
    print(f"behind={count} behind_s={seconds:.1f} launched_inside={inside} "
          f"first_begin_unix={first / 1e9:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
