#!/usr/bin/env python3
"""Checks the 2-rank NCCL recording made by tools/gpu-check-multi (real GPUs, real CUPTI).

Reads OUT/info.txt, OUT/summary.txt, OUT/all.jsonl, OUT/window1.jsonl and OUT/timeline.json, written
by cupmon-decode from the one output directory that both ranks wrote into, and asserts:
- info: WORLD ranks, numbered from the launcher's RANK, world size WORLD; window #1 on every rank, the
  spread of the window begins (wall clock, from each rank's own CUPTI clock and calibration) < 1 ms;
- all.jsonl: each rank's kernels ran on one device, a different one per rank (LOCAL_RANK); NCCL
  kernels (names starting with "nccl") on every rank, the same names on every rank;
- window1.jsonl: on every rank, API records inside the window, and every NCCL kernel that started
  well inside the window joined to its launch API record;
- summary.txt: the merged table names every rank and a total; timeline.json: one GPU process per
  rank in the Chrome trace.
Prints what it measured; exits 1 on any failure.
Usage: check_multi.py OUT [WORLD=2]
"""
import collections
import json
import re
import sys

MAX_SPREAD_NS = 1_000_000
MARGIN_NS = 50_000_000  # kernels queued before the window opened may start inside it


def duration_ns(text):
    m = re.fullmatch(r"([0-9.]+)(ns|us|ms|s)", text.strip())
    if not m:
        raise ValueError(f"not a duration: {text!r}")
    return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    out = sys.argv[1]
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    failures = []

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    info = open(f"{out}/info.txt").read()
    print(info)
    ranks = re.findall(r"^  (rank (\d+) \([^)]*\)): recording (0x[0-9a-f]+),.*?rank (from the launcher|by \(host, pid\) order)"
                       r"(?:, world size (\d+))?", info, re.M)
    expect(len(ranks) == world, f"{world} ranks in info: {[r[0] for r in ranks]}")
    expect(all(r[3] == "from the launcher" and r[4] == str(world) for r in ranks),
           "ranks numbered from the launcher's RANK, world size " + str(world))
    rank_of = {r[2]: int(r[1]) for r in ranks}  # recording id -> rank
    spread = re.search(r"#1\n(?:    .*\n)*?    spread of begins: (\S+)(.*)", info)
    if spread:
        s = duration_ns(spread.group(1))
        expect(not spread.group(2).strip() and s < MAX_SPREAD_NS,
               f"window #1 begins on every rank within 1 ms: spread {spread.group(1)} {spread.group(2).strip()}")
    else:
        expect(False, "window #1 with a spread line in info")

    all_rows = rows(f"{out}/all.jsonl")
    kernels = collections.defaultdict(list)
    for r in all_rows:
        if r["type"] == "kernel":
            kernels[rank_of.get(r["recording"], -1)].append(r)
    expect(-1 not in kernels, "every kernel row belongs to a listed rank")
    devices = {}
    nccl_names = {}
    for rank in sorted(k for k in kernels if k >= 0):
        ks = kernels[rank]
        devs = collections.Counter(k["device"] for k in ks)
        devices[rank] = set(devs)
        nccl = collections.Counter(k["name"] for k in ks if k["name"].startswith("nccl"))
        nccl_names[rank] = set(nccl)
        print(f"rank {rank}: {len(ks)} kernels on devices {dict(devs)}; NCCL kernels {sum(nccl.values())}: "
              + "; ".join(f"{n} x{c}" for n, c in nccl.most_common(4)))
        expect(len(devs) == 1, f"rank {rank}: all kernels on one device")
        expect(sum(nccl.values()) > 0, f"rank {rank}: NCCL kernels recorded with their names")
    expect(len(kernels) == world and len(set(frozenset(d) for d in devices.values())) == world,
           f"each rank on its own device: {devices}")
    expect(len({frozenset(n) for n in nccl_names.values()}) == 1, "the same NCCL kernel names on every rank")

    win = rows(f"{out}/window1.jsonl")
    for rank in sorted(rank_of.values()):
        rid = [k for k, v in rank_of.items() if v == rank][0]
        api = [r for r in win if r["recording"] == rid and r["type"] == "api"]
        nccl = [r for r in win if r["recording"] == rid and r["type"] == "kernel" and r["name"].startswith("nccl")]
        if not api:
            expect(False, f"rank {rank}: API records inside window 1")
            continue
        lo, hi = min(r["start_ns"] for r in api), max(r["start_ns"] for r in api)
        inside = [k for k in nccl if lo + MARGIN_NS <= k["start_ns"] <= hi]
        joined = [k for k in inside if "api" in k]
        expect(len(api) > 0 and len(inside) > 0 and len(joined) == len(inside),
               f"rank {rank}: window 1 has {len(api)} API records; {len(joined)} of {len(inside)} NCCL kernels "
               f"inside it joined to their launch")

    summary = open(f"{out}/summary.txt").read()
    expect(f"Total profiling result ({world} ranks)" in summary, "merged summary with a total over all ranks")
    expect(all(f"rank {r}" in summary for r in range(world)), "merged summary names every rank")

    trace = json.load(open(f"{out}/timeline.json"))
    gpu_procs = [e["args"]["name"] for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("GPU")]
    print("timeline GPU processes:", gpu_procs)
    expect(len(gpu_procs) >= world, f"timeline has a GPU process per rank ({len(gpu_procs)})")

    print("multi-rank check:", "FAILED" if failures else "passed", f"({len(failures)} failed checks)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
