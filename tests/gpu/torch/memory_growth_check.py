#!/usr/bin/env python3
"""Device memory growing in a PyTorch loop, seen through cupmon (issue 19).

Runs memory_growth_train.py (STEPS steps, each keeping a fresh GROW_MIB MiB tensor) under
`cupmon-run --kinds concurrent_kernel,memcpy,memset,memory2,memory_pool`, then checks:
  - `export --format jsonl`: exactly STEPS MEMORY2 allocations of GROW_MIB MiB on the device, none
    of them released;
  - `summary`: the device's peak is at least STEPS x GROW_MIB MiB;
  - `timeline --bucket 10ms --format jsonl`: memory_in_use_bytes at the buckets holding the growth
    allocations never falls, and rises by at least (STEPS - 1) x GROW_MIB MiB from the first to the
    last; the largest memory_peak_bytes equals summary's peak.
Prints a table of the steps (bucket, bytes in use); exits 1 on any failure.
Usage: memory_growth_check.py --run build/tools/cupmon-run --decode build/tools/cupmon-decode --out DIR
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = "concurrent_kernel,memcpy,memset,memory2,memory_pool"
BUCKET_NS = 10_000_000


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--grow-mib", type=int, default=34)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rec = os.path.join(args.out, "rec")
    shutil.rmtree(rec, ignore_errors=True)
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)  # expandable segments would map, not cudaMalloc
    env.pop("PYTORCH_NO_CUDA_MEMORY_CACHING", None)
    train = [sys.executable, os.path.join(HERE, "memory_growth_train.py"), "--steps", str(args.steps),
             "--grow-mib", str(args.grow_mib)]
    r = subprocess.run([args.run, "--kinds", KINDS, "-o", rec, "--"] + train, capture_output=True,
                       text=True, env=env)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        sys.exit(f"memory_growth_train.py under cupmon-run exited {r.returncode}:\n{r.stdout}")
    did = json.loads(r.stdout.strip().splitlines()[-1])
    grow, steps = did["grow_bytes"], did["steps"]
    failures = []

    def check(what, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
        if not ok:
            failures.append(what)

    rows_path = os.path.join(args.out, "rows.jsonl")
    d = subprocess.run([args.decode, "export", rec, "--format", "jsonl", "-o", rows_path],
                       capture_output=True, text=True)
    if d.returncode not in (0, 1):
        sys.exit(f"cupmon-decode export exited {d.returncode}: {d.stderr}")
    mem2 = sorted((x for x in map(json.loads, open(rows_path))
                   if x["type"] == "memory" and x["kind"] == 49 and x["ts_ns"] is not None),
                  key=lambda x: x["ts_ns"])
    growth = [x for x in mem2 if x["operation"] == "allocation" and x["bytes"] == grow]
    released = {x["address"] for x in mem2 if x["operation"] == "release"}
    devices = {x["device"] for x in growth}
    check(f"MEMORY2 allocations of {grow >> 20} MiB", len(growth) == steps,
          f"{len(growth)} (expected {steps}); {len(mem2)} MEMORY2 rows in all")
    check("on one device", len(devices) == 1, f"devices {sorted(devices)}")
    check("none of them released", not any(x["address"] in released for x in growth),
          f"{sum(1 for x in growth if x['address'] in released)} released")
    device = min(devices) if devices else 0

    summary = subprocess.run([args.decode, "summary", rec], capture_output=True, text=True).stdout
    m = re.search(rf"==cupmon==   device {device}: peak (\d+) B", summary)
    peak = int(m.group(1)) if m else None
    check("summary: peak at least steps x size", peak is not None and peak >= steps * grow,
          f"{peak} B (steps x size: {steps * grow} B)")

    t = subprocess.run([args.decode, "timeline", rec, "--bucket", f"{BUCKET_NS // 1_000_000}ms",
                        "--format", "jsonl"], capture_output=True, text=True)
    buckets = {b["bucket_start_ns"]: b for b in map(json.loads, t.stdout.splitlines())
               if b["device"] == device}
    at_steps = []
    print(f"{'step':>4} {'bucket (UTC)':>28} {'in use at its end':>20}")
    for k, x in enumerate(growth):
        start = x["ts_ns"] // BUCKET_NS * BUCKET_NS
        b = buckets.get(start)
        at_steps.append(b["memory_in_use_bytes"] if b else None)
        print(f"{k:>4} {b['bucket_start'] if b else '(no bucket)':>28} "
              f"{(b['memory_in_use_bytes'] >> 20) if b else '-':>16} MiB")
    ok = bool(at_steps) and None not in at_steps
    check("timeline: a bucket for every growth allocation", ok, f"{len(at_steps)} steps")
    if ok:
        check("timeline: bytes in use never fall from step to step",
              all(a <= b for a, b in zip(at_steps, at_steps[1:])), "")
        rise = at_steps[-1] - at_steps[0]
        check("timeline: rise from the first step to the last", rise >= (steps - 1) * grow,
              f"{rise} B (at least {(steps - 1) * grow} B)")
        top = max(b["memory_peak_bytes"] for b in buckets.values())
        check("timeline: largest memory_peak_bytes equals summary's peak", top == peak, f"{top} B")
    print(f"torch {did['torch']}: reserved {did['reserved_first'] >> 20} MiB after step 0, "
          f"{did['reserved_last'] >> 20} MiB after the last")
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")


if __name__ == "__main__":
    main()
