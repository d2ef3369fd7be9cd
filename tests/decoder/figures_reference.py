#!/usr/bin/env python3
"""The figures of `steps`, `timeline` and `summary`, computed the plain way from an export.

A reference written to be read, not to be fast: every figure is computed from the rows of
`cupmon-decode export --format jsonl` by its definition in docs/DECODER.md, holding whole lists in
memory and sorting them. tests/decoder/figures_test.py compares the decoder's streaming figures
with these, figure by figure.

Time base: `steps` measures busy time and gaps in CUPTI nanoseconds, so its figures are checked
against an export made with `--clock cupti` (rows carry the CUPTI times as recorded). `timeline`
buckets the trace builder's wall-clock times, the very times a plain export writes. `summary`
sums durations, which both exports carry as recorded (duration_ns).

Standalone: figures_reference.py steps EXPORT.jsonl STEPS.jsonl, or
figures_reference.py timeline EXPORT.jsonl BUCKET_NS, prints the reference's rows as JSON lines.
"""

import bisect
import json
import sys
from collections import defaultdict

GPU_TYPES = ("kernel", "memcpy", "memset")
MEMORY2_KIND = 49
# `steps` counts a kernel as communication when its name holds this (NCCL's kernels).
COMM_MARK = "nccl"
# Bucket arithmetic refuses times past 2^62 ns (timeline.cc's kLimit).
TIME_LIMIT = 1 << 62
# Names of the memcpy directions timeline splits bytes by (kernel_names.cc's memcpy names).
H2D, D2H, D2D = "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", ("[CUDA memcpy DtoD]", "[CUDA memcpy PtoP]")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return read_jsonl_text(f.read())


def read_jsonl_text(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def timed_activities(rows):
    """Kernels, memcpys and memsets with a known time, in the order the export wrote them."""
    return [r for r in rows if r.get("type") in GPU_TYPES and r.get("start_ns") is not None]


def union(intervals):
    """The union of [start, end] intervals as sorted, disjoint intervals. Touching ones merge."""
    merged = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


# ---- steps ----

def step_figures(activities, step_starts):
    """Per step: its activities are those that start at or after its start and before the next
    step's; `end` is the latest end among them (the step's start when it has none); `since` the
    previous step's end, or its start when that is earlier (the first step: its start); the
    duration end - since. Per device with an activity in the step: busy, the length of the union
    of those activities; max_gap, the longest stretch of [since, end] that union leaves uncovered
    (the lead-in from since and the tail to end included). Activities before the first step
    belong to none."""
    members = [[] for _ in step_starts]
    for a in activities:
        i = bisect.bisect_right(step_starts, a["start_ns"]) - 1
        if i >= 0:
            members[i].append(a)
    out = []
    previous_end = None
    for start, acts in zip(step_starts, members):
        end = max([start] + [a["end_ns"] for a in acts])
        since = start if previous_end is None else min(previous_end, start)
        previous_end = end
        kernels = [a for a in acts if a["type"] == "kernel"]
        memcpys = [a for a in acts if a["type"] == "memcpy"]
        step = {
            "start": start,
            "end": end,
            "since": since,
            "duration_ns": end - since,
            "kernels": len(kernels),
            "memcpys": len(memcpys),
            "memsets": sum(1 for a in acts if a["type"] == "memset"),
            "memcpy_bytes": sum(a["bytes"] for a in memcpys),
            "comm_ns": sum(a["end_ns"] - a["start_ns"] for a in kernels if COMM_MARK in a["name"]),
            "devices": {},
        }
        by_device = defaultdict(list)
        for a in acts:
            by_device[a["device"]].append((a["start_ns"], a["end_ns"]))
        for device, intervals in by_device.items():
            busy = union(intervals)
            edges = [since] + [t for piece in busy for t in piece] + [end]
            # edges pairs up as (since, first start), (first end, second start), ..., (last end, end)
            gaps = [edges[k + 1] - edges[k] for k in range(0, len(edges), 2)]
            step["devices"][device] = {
                "busy_ns": sum(e - s for s, e in busy),
                "max_gap_ns": max(gaps),
            }
        out.append(step)
    return out


# ---- timeline ----

def bucket_of(t, bucket_ns):
    return t // bucket_ns  # floor, also for times before 1970


def timeline_figures(rows, bucket_ns):
    """Rows of `timeline` keyed by (bucket start, device). A device has rows from the bucket of its
    first row (activity or memory record) to the last bucket of all. busy_ns: the length of the
    union of the device's kernels, memcpys and memsets within the bucket; kernel_busy_ns the same
    for kernels. Counts and bytes belong to the bucket an activity starts in. Device memory:
    allocations add their bytes to the device's bytes in use, releases take back what their
    address's allocation added (an unknown address: counted, nothing taken back), an allocation
    of an address still in use replaces it; memory_in_use_bytes at the bucket's end,
    memory_peak_bytes the most in use at any instant of it (what it began with included)."""
    events = []
    for r in rows:
        if r.get("type") in GPU_TYPES:
            if r.get("start_ns") is None:
                continue
            events.append(r)
        elif r.get("type") == "memory" and r.get("kind") == MEMORY2_KIND and \
                r.get("operation") in ("allocation", "release") and r.get("ts_ns") is not None:
            events.append(r)
    # Times beyond the bucket arithmetic's range are left out by timeline (counted there).
    events = [e for e in events if abs(e.get("start_ns", e.get("ts_ns"))) <= TIME_LIMIT and
              e.get("end_ns", e.get("ts_ns")) <= TIME_LIMIT]
    if not events:
        return {}
    time_of = lambda e: e["start_ns"] if "start_ns" in e else e["ts_ns"]
    events.sort(key=time_of)  # stable: equal times keep the export's order
    first_bucket = bucket_of(time_of(events[0]), bucket_ns)
    last_bucket = bucket_of(time_of(events[-1]), bucket_ns)
    for e in events:
        if e.get("type") in GPU_TYPES and e["end_ns"] > e["start_ns"]:
            last_bucket = max(last_bucket, bucket_of(e["end_ns"] - 1, bucket_ns))

    first_of_device = {}
    for e in events:
        first_of_device.setdefault(e["device"], bucket_of(time_of(e), bucket_ns))
    zero = dict(busy_ns=0, kernel_busy_ns=0, kernels=0, memcpys=0, memcpy_bytes=0,
                memcpy_h2d_bytes=0, memcpy_d2h_bytes=0, memcpy_d2d_bytes=0, memsets=0,
                allocations=0, releases=0)
    table = {}
    for device, first in first_of_device.items():
        for k in range(first, last_bucket + 1):
            table[(k * bucket_ns, device)] = dict(zero)

    def add_busy(field, device, intervals):
        for start, end in union(intervals):
            k = bucket_of(start, bucket_ns)
            while k * bucket_ns < end:
                lo, hi = max(start, k * bucket_ns), min(end, (k + 1) * bucket_ns)
                table[(k * bucket_ns, device)][field] += max(0, hi - lo)
                k += 1

    all_busy, kernel_busy = defaultdict(list), defaultdict(list)
    for e in events:
        if e.get("type") not in GPU_TYPES:
            continue
        row = table[(bucket_of(e["start_ns"], bucket_ns) * bucket_ns, e["device"])]
        all_busy[e["device"]].append((e["start_ns"], e["end_ns"]))
        if e["type"] == "kernel":
            row["kernels"] += 1
            kernel_busy[e["device"]].append((e["start_ns"], e["end_ns"]))
        elif e["type"] == "memset":
            row["memsets"] += 1
        else:
            row["memcpys"] += 1
            row["memcpy_bytes"] += e["bytes"]
            if e["name"] == H2D:
                row["memcpy_h2d_bytes"] += e["bytes"]
            elif e["name"] == D2H:
                row["memcpy_d2h_bytes"] += e["bytes"]
            elif e["name"] in D2D:
                row["memcpy_d2d_bytes"] += e["bytes"]
    for device, intervals in all_busy.items():
        add_busy("busy_ns", device, intervals)
    for device, intervals in kernel_busy.items():
        add_busy("kernel_busy_ns", device, intervals)

    # Device memory, replayed in time order bucket by bucket.
    in_use = defaultdict(int)
    live = {}  # address -> (device, bytes)
    memory = [e for e in events if e.get("type") == "memory"]
    at = 0
    for k in range(first_bucket, last_bucket + 1):
        peak = {d: in_use[d] for d in first_of_device}
        while at < len(memory) and bucket_of(memory[at]["ts_ns"], bucket_ns) == k:
            e = memory[at]
            at += 1
            row = table[(k * bucket_ns, e["device"])]
            if e["operation"] == "allocation":
                row["allocations"] += 1
                if e["address"] in live:
                    old_device, old_bytes = live[e["address"]]
                    in_use[old_device] -= old_bytes
                live[e["address"]] = (e["device"], e["bytes"])
                in_use[e["device"]] += e["bytes"]
                peak[e["device"]] = max(peak.get(e["device"], 0), in_use[e["device"]])
            else:
                row["releases"] += 1
                if e["address"] in live:
                    old_device, old_bytes = live.pop(e["address"])
                    in_use[old_device] -= old_bytes
        for d, first in first_of_device.items():
            if first <= k:
                table[(k * bucket_ns, d)]["memory_in_use_bytes"] = in_use[d]
                table[(k * bucket_ns, d)]["memory_peak_bytes"] = peak.get(d, 0)
    for (start, device), row in table.items():
        length = float(bucket_ns)
        # The float columns as timeline writes them: the same double arithmetic, printed "%.3f".
        row["busy_pct"] = "%.3f" % (100.0 * float(row["busy_ns"]) / length)
        row["kernel_busy_pct"] = "%.3f" % (100.0 * float(row["kernel_busy_ns"]) / length)
        row["kernels_per_s"] = "%.3f" % (float(row["kernels"]) * 1e9 / length)
        row["memcpy_bytes_per_s"] = "%.3f" % (float(row["memcpy_bytes"]) * 1e9 / length)
    return table


# ---- summary ----

def format_duration(ns):
    """FormatDuration (decoder/src/reports.cc): 5 significant digits, the unit scaled."""
    ns = float(ns)
    if ns < 1000.0:
        return "%.0fns" % ns if ns == int(ns) else "%.4gns" % ns
    unit, v = "us", ns / 1e3
    if v >= 1000.0:
        v, unit = v / 1e3, "ms"
        if v >= 1000.0:
            v, unit = v / 1e3, "s"
    decimals = 4 if v < 10.0 else 3 if v < 100.0 else 2 if v < 1000.0 else 1
    return "%.*f%s" % (decimals, v, unit)


def summary_figures(rows):
    """`summary --full-names`' GPU activities and API calls tables: per section and name, Time(%)
    (of the section's summed time), Time (summed durations of the timed rows), Calls (all rows),
    Avg, Min and Max (over the timed rows; '-' when none)."""
    sections = {"GPU activities:": defaultdict(list), "API calls:": defaultdict(list)}
    for r in rows:
        if r.get("type") in GPU_TYPES:
            sections["GPU activities:"][r["name"]].append(r.get("duration_ns"))
        elif r.get("type") == "api":
            sections["API calls:"][r["name"]].append(r.get("duration_ns"))
    out = {}
    for title, by_name in sections.items():
        total = sum(d for ds in by_name.values() for d in ds if d is not None)
        table = {}
        for name, ds in by_name.items():
            timed = [d for d in ds if d is not None]
            t = sum(timed)
            pct = 100.0 * float(t) / float(total) if total else 0.0
            table[name] = {
                "pct": "%.2f%%" % pct,
                "time": format_duration(t),
                "calls": str(len(ds)),
                "avg": format_duration(float(t) / float(len(timed))) if timed else "-",
                "min": format_duration(min(timed)) if timed else "-",
                "max": format_duration(max(timed)) if timed else "-",
            }
        out[title] = table
    return out


def main(argv):
    if len(argv) == 4 and argv[1] == "steps":
        starts = [s["start_ns"] for s in read_jsonl(argv[3])]
        for s in step_figures(timed_activities(read_jsonl(argv[2])), starts):
            print(json.dumps(s))
        return 0
    if len(argv) == 4 and argv[1] == "timeline":
        table = timeline_figures(read_jsonl(argv[2]), int(argv[3]))
        for (start, device), row in sorted(table.items()):
            print(json.dumps(dict(bucket_start_ns=start, device=device, **row)))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
