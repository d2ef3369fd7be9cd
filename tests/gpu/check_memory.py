#!/usr/bin/env python3
"""Device memory on a real GPU (issue 19): tests/gpu/memory_check under cupmon-run with the
memory kinds always on (--kinds concurrent_kernel,memcpy,memset,memory2,memory_pool), then the
decoder.

The program prints every cudaMalloc/cudaFree and pool (cudaMallocFromPoolAsync/cudaFreeAsync on a
cudaMemPoolCreate pool with a release threshold) operation with its address and size, and the
expected figures. Checks, exactly:
- `export --format jsonl`: the MEMORY2 rows of the program's addresses, in time order, are its
  operations (operation, address, bytes), memory kind "device", on its device, pool_type non-zero
  and one pool_address for the pool's operations and zero for the others; no other MEMORY2 row;
  the MEMORY_POOL rows are one "created", at least one "trimmed" (CUPTI reports trims at
  cudaFreeAsync too), one "destroyed", at the pool_address of the pool's allocations;
- `summary`'s Device memory section: peak bytes, bytes in use at the end, allocation and release
  counts, and the peak's time nearest the row of the operation that reached it;
- `timeline --format jsonl`: the largest memory_peak_bytes of the device is the peak, its last
  memory_in_use_bytes the bytes at the end.
Prints a table; exits 1 on any failure.
Usage: check_memory.py --run build/tools/cupmon-run --program build/tests/gpu/memory_check
                       --decode build/tools/cupmon-decode --out DIR
       check_memory.py --recording DIR --expected FILE --decode ... --out DIR
         (no GPU: checks a recording against the program's JSON line in FILE; the self-test
         feeds it `cupmon-make-sample --memory-check`'s synthetic one and its wrong variant)
"""
import argparse
import collections
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

KINDS = "concurrent_kernel,memcpy,memset,memory2,memory_pool"
MEMORY2, MEMORY_POOL = 49, 50


def iso_ns(text):
    """2026-12-01T15:39:34.123456789Z -> unix ns."""
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z", text)
    secs = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(
        tzinfo=datetime.timezone.utc).timestamp()
    return int(secs) * 1_000_000_000 + int(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run")
    ap.add_argument("--program")
    ap.add_argument("--recording", help="check this recording instead of running the program")
    ap.add_argument("--expected", help="with --recording: a file whose last line is the JSON line")
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.recording:
        if not args.expected:
            ap.error("--recording needs --expected")
        rec = args.recording
        want = json.loads(open(args.expected).read().strip().splitlines()[-1])
    else:
        if not args.run or not args.program:
            ap.error("--run and --program are required without --recording")
        rec = os.path.join(args.out, "rec")
        shutil.rmtree(rec, ignore_errors=True)
        r = subprocess.run([args.run, "--kinds", KINDS, "-o", rec, "--", args.program],
                           capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            sys.exit(f"memory_check under cupmon-run exited {r.returncode}:\n{r.stdout}")
        lines = r.stdout.strip().splitlines()
        print("\n".join(lines[:-1]))
        want = json.loads(lines[-1])
    ops, device = want["ops"], want["device"]

    rows_path = os.path.join(args.out, "rows.jsonl")
    d = subprocess.run([args.decode, "export", rec, "--format", "jsonl", "-o", rows_path],
                       capture_output=True, text=True)
    if d.returncode not in (0, 1):
        sys.exit(f"cupmon-decode export exited {d.returncode}: {d.stderr}")
    rows = [json.loads(line) for line in open(rows_path)]
    memory = [x for x in rows if x["type"] == "memory"]
    mem2 = sorted((x for x in memory if x["kind"] == MEMORY2), key=lambda x: x["ts_ns"] or 0)
    pools = [x for x in memory if x["kind"] == MEMORY_POOL]
    results = []  # (check, expected, got, ok)

    def check(name, expected, got):
        results.append((name, expected, got, expected == got))

    ours = {op["address"] for op in ops}
    mine = [x for x in mem2 if x["address"] in ours]
    others = [x for x in mem2 if x["address"] not in ours]
    check("MEMORY2 rows of the program's addresses", len(ops), len(mine))
    check("(operation, address, bytes) in time order", [(o["operation"], o["address"], o["bytes"]) for o in ops],
          [(x["operation"], x["address"], x["bytes"]) for x in mine])
    check("memory kind 'device', all", ["device"] * len(ops), [x["memory_kind"] for x in mine])
    check("on the program's device, all", [device] * len(ops), [x["device"] for x in mine])
    check("from a pool: the pool's operations", [o["pool"] for o in ops], [x["pool_type"] != 0 for x in mine])
    pool_addresses = {x["pool_address"] for x, o in zip(mine, ops) if o["pool"]}
    check("one pool_address for the pool's operations, not 0", True,
          len(pool_addresses) == 1 and 0 not in pool_addresses)
    check("no timestamp unknown", True, all(x["ts_ns"] is not None for x in memory))
    check("no other MEMORY2 row", [], [(x["operation"], x["address"], x["bytes"]) for x in others])
    pool_ops = collections.Counter(x["operation"] for x in pools)
    # CUPTI 13.0 on the H200 reports a trim at cudaFreeAsync too, not only at cudaMemPoolTrimTo
    # (3 "trimmed" rows for this program's one TrimTo): at least the program's trims.
    check("MEMORY_POOL rows created, destroyed", (want["pools_created"], want["pools_destroyed"]),
          (pool_ops["created"], pool_ops["destroyed"]))
    check(f"MEMORY_POOL rows trimmed: at least {want['pools_trimmed']}", True,
          pool_ops["trimmed"] >= want["pools_trimmed"])
    check("MEMORY_POOL rows at the pool's address", sorted(pool_addresses) * len(pools),
          [x["address"] for x in pools])

    summary = subprocess.run([args.decode, "summary", rec], capture_output=True, text=True).stdout
    m = re.search(rf"==cupmon==   device {device}: peak (\d+) B[^\n]* in use at (\S+); (\d+) B[^\n]* at the end\n"
                  r"==cupmon==     (\d+) allocations, (\d+) releases", summary)
    check("summary: Device memory section for the device", True, m is not None)
    if m:
        allocations = sum(1 for o in ops if o["operation"] == "allocation")
        check("summary: peak bytes", want["peak_bytes"], int(m.group(1)))
        check("summary: bytes in use at the end", want["in_use_bytes"], int(m.group(3)))
        check("summary: allocations, releases", (allocations, len(ops) - allocations),
              (int(m.group(4)), int(m.group(5))))
        if len(mine) == len(ops) and want["peak_op"] + 1 < len(mine):
            peak_ns = iso_ns(m.group(2))
            op = ops[want["peak_op"]]
            # Each row's wall time uses the calibration known when it was read, the summary's the
            # whole recording's: the two differ by tens of microseconds, as much as the time
            # between two of the program's operations. So: the operation whose row is nearest the
            # summary's peak time is the one that reached the peak.
            nearest = min(range(len(mine)), key=lambda i: abs(mine[i]["ts_ns"] - peak_ns))
            check(f"summary: peak time nearest op {want['peak_op'] + 1} ({op['api']} {op['label']})",
                  want["peak_op"] + 1, nearest + 1)
            print(f"    summary's peak at {m.group(2)}: {peak_ns - mine[want['peak_op']]['ts_ns']:+d} ns "
                  f"from op {want['peak_op'] + 1}'s row; operations "
                  f"{[x['ts_ns'] - mine[0]['ts_ns'] for x in mine]} ns after the first")

    t = subprocess.run([args.decode, "timeline", rec, "--bucket", "10ms", "--format", "jsonl"],
                       capture_output=True, text=True)
    buckets = [json.loads(line) for line in t.stdout.splitlines() if line.strip()]
    dev = [b for b in buckets if b["device"] == device]
    check("timeline: rows for the device", True, bool(dev))
    if dev:
        check("timeline: largest memory_peak_bytes", want["peak_bytes"], max(b["memory_peak_bytes"] for b in dev))
        check("timeline: last memory_in_use_bytes", want["in_use_bytes"], dev[-1]["memory_in_use_bytes"])
        check("timeline: allocations, releases summed", (sum(1 for o in ops if o["operation"] == "allocation"),
                                                         sum(1 for o in ops if o["operation"] == "release")),
              (sum(b["allocations"] for b in dev), sum(b["releases"] for b in dev)))

    width = 60
    print(f"{'check':{width}} result")
    for name, expected, got, ok in results:
        print(f"{name:{width}} {'ok' if ok else 'FAIL'}")
        if not ok:
            print(f"    expected {expected}\n    got      {got}")
    print(f"{len(mem2)} MEMORY2 rows ({len(others)} of other addresses), {len(pools)} MEMORY_POOL rows; "
          f"kinds {KINDS}")
    if not all(ok for *_, ok in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
