#!/usr/bin/env python3
"""Runs every cupmon-decode command on a PyTorch CUPTI monitor dump written here with Python's
struct module and the monitor's own format strings (`<8sII` meta, `<8sIIIIQQQ` chunks, sorted
compact JSON, as torch/profiler/_cupti_monitor.py writes them): a writer independent of the
decoder's C++ test helpers. The dump holds the real H200 CUPTI 13.0 buffers of
tests/data/h200-cupti13-*.raw.zst (unpacked with the zstd tool), and the counts must be those
measured when the buffers were dumped (../shared/data/README.md). Also: an unwritable -o, a region
with no rows, a truncated dump, and the --help example.

usage: torch_dump_cli_test.py --decode BIN --source REPO
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

SIZES = {1: 96, 2: 88, 3: 216, 4: 40, 5: 40, 10: 216, 11: 32, 12: 56, 17: 56, 22: 96, 36: 56,
         38: 56, 39: 24, 49: 128, 50: 80, 51: 56}  # CUPTI 13.0 (docs/FORMAT.md)
KINDS = {"h200-cupti13-alwayson.raw.zst": {10: 60000, 1: 600, 2: 600},
         "h200-cupti13-window.raw.zst": {10: 16000, 5: 16403, 4: 16120, 1: 160, 2: 160, 38: 81,
                                         17: 12}}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write_dump(raw, out_dir, truncate=0):
    """Cuts `raw` into ~1 MiB buffers at record boundaries and writes them as the monitor does."""
    buffers, off, begin = [], 0, 0
    while off < len(raw):
        off += SIZES[struct.unpack_from("<I", raw, off)[0]]
        if off - begin >= 1 << 20:
            buffers.append(raw[begin:off])
            begin = off
    if off > begin:
        buffers.append(raw[begin:off])
    meta = {"meta_version": 2, "cupti_version": 130001, "cuda_version": "13.0",
            "hes_enabled": False, "timestamp_mode": "approximate_clock",
            "session_start_unix_ns": 1795938001000000000,
            "session_start_approx_ns": 1700000000000000000,
            "session_start_calibrated_unix_ns": 1700000000000000000,
            "buffer_size": 4 << 20, "flush_period_ns": 10**9, "raw_buffer_dump": True,
            "activities": [10, 1, 2], "libcupti_path": "/usr/local/cuda/lib64/libcupti.so.13"}
    payload = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    with open(os.path.join(out_dir, "cupti_monitor_meta.bin"), "wb") as f:
        f.write(struct.pack("<8sII", b"CUPMMETA", 2, len(payload)) + payload)
    data = b""
    for i, b in enumerate(buffers):
        t = 1700000000000000000 + (i + 1) * 100000000  # identity pairs: the times are CUPTI ns
        data += struct.pack("<8sIIIIQQQ", b"CUPMRBUF", 2, i, 7, len(b), 0x5555DEADBEEF, t, t) + b
    if truncate:
        data = data[:-truncate]
    with open(os.path.join(out_dir, "cupti_monitor_raw_buffers.bin"), "wb") as f:
        f.write(data)
    return buffers


def run(decode, *args):
    p = subprocess.run([decode, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for name, kinds in KINDS.items():
            raw = subprocess.run(["zstd", "-dc", os.path.join(a.source, "tests", "data", name)],
                                 check=True, capture_output=True).stdout
            d = os.path.join(work, name)
            os.mkdir(d)
            buffers = write_dump(raw, d)
            total, kernels = sum(kinds.values()), kinds[10]
            gpu = kernels + kinds.get(1, 0) + kinds.get(2, 0)
            api = kinds.get(4, 0) + kinds.get(5, 0)

            rc, out, err = run(a.decode, "info", d)
            check(rc == 1, f"{name}: info exits 1 (unresolved names), got {rc}: {err}")
            want = " ".join(f"{k}={n}" for k, n in sorted(kinds.items()))
            check(f"records by kind: {want}" in out, f"{name}: info says records by kind {want}")
            check(f"chunks: {len(buffers)}, raw buffers: {len(buffers)}, records: {total}" in out,
                  f"{name}: info counts {len(buffers)} chunks and {total} records:\n{out}")
            check(f"{kernels} kernel record(s) whose name pointer has no string entry" in err,
                  f"{name}: the unresolved names are counted: {err}")

            rc, out, err = run(a.decode, "summary", d)
            check(rc == 1 and "==cupmon== Source: PyTorch CUPTI monitor dump" in out,
                  f"{name}: summary names the source: {out[:600]}")
            # ... Calls Avg Min Max Name, the name being "<unresolved kernel name 0x...>".
            calls = sum(int(line.split()[-8]) for line in out.splitlines()
                        if "<unresolved kernel name 0x" in line)
            check(calls == kernels, f"{name}: summary counts {kernels} kernel calls, got {calls}")

            rc, out, _ = run(a.decode, "gpu-trace", d)
            rows = [l for l in out.splitlines() if l and not l.startswith("==cupmon==")][1:]
            check(len(rows) == gpu, f"{name}: gpu-trace has {gpu} rows, got {len(rows)}")
            rc, out, _ = run(a.decode, "kern-exec", d)
            rows = [l for l in out.splitlines() if l and not l.startswith("==cupmon==")][1:]
            check(len(rows) == kernels, f"{name}: kern-exec has {kernels} rows, got {len(rows)}")
            rc, out, _ = run(a.decode, "api-trace", d)
            rows = [l for l in out.splitlines() if l and not l.startswith("==cupmon==")][1:]
            check(len(rows) == api, f"{name}: api-trace has {api} rows, got {len(rows)}")

            for fmt in ("csv", "jsonl", "chrome-json", "perfetto"):
                path = os.path.join(work, f"{name}.{fmt}")
                rc, _, err = run(a.decode, "export", d, "--format", fmt, "-o", path)
                check(rc == 1 and os.path.getsize(path) > 100000,
                      f"{name}: export {fmt} writes a file (rc {rc}): {err}")
            with open(os.path.join(work, f"{name}.jsonl")) as f:
                types = [json.loads(line)["type"] for line in f]
            check(len(types) == gpu + api and types.count("kernel") == kernels,
                  f"{name}: jsonl has {gpu + api} rows, {kernels} kernels")
            with open(os.path.join(work, f"{name}.chrome-json")) as f:
                events = json.load(f)["traceEvents"]
            check(sum(1 for e in events if e.get("cat") == "kernel") == kernels,
                  f"{name}: chrome-json has {kernels} kernel events")

        d = os.path.join(work, "h200-cupti13-alwayson.raw.zst")
        rc, _, err = run(a.decode, "export", d, "--format", "csv", "-o", "/nonexistent/dir/x.csv")
        check(rc == 2 and "cannot write /nonexistent/dir/x.csv" in err,
              f"an unwritable -o exits 2 and names the path (rc {rc}): {err}")
        rc, out, _ = run(a.decode, "export", d, "--format", "csv", "--from", "1h")
        check(rc == 1 and len(out.splitlines()) == 1,
              f"a region with no rows gives the CSV header only (rc {rc}): {out[:300]}")
        rc, out, err = run(a.decode, "gpu-trace", os.path.join(d, "cupti_monitor_raw_buffers.bin"))
        check(rc == 1 and "<unresolved kernel name 0x" in out, "naming the raw file reads the dump")
        t = os.path.join(work, "truncated")
        os.mkdir(t)
        raw = subprocess.run(["zstd", "-dc", os.path.join(a.source, "tests", "data",
                                                          "h200-cupti13-alwayson.raw.zst")],
                             check=True, capture_output=True).stdout
        buffers = write_dump(raw, t, truncate=5000)
        off, n_last = 0, 0
        while off < len(buffers[-1]):
            off += SIZES[struct.unpack_from("<I", buffers[-1], off)[0]]
            n_last += 1
        rc, out, err = run(a.decode, "info", t)
        check(rc == 1 and "truncated tail" in err, f"a truncated dump warns (rc {rc}): {err}")
        check(f"records: {61200 - n_last}\n" in out,
              f"a truncated dump loses only its last chunk's {n_last} records:\n{out}")

        # --limit ends the read of a dump too, after the buffer in which the last row was written.
        # Rows leave the join once 65,536 records are read (its horizon), so the always-on dump's
        # buffers are written three times over (183,600 records), with a small reorder bound.
        big = os.path.join(work, "three-times")
        os.mkdir(big)
        write_dump(raw * 3, big)
        _, whole, _ = run(a.decode, "gpu-trace", big, "--reorder-rows", "100")
        rc, out, err = run(a.decode, "gpu-trace", big, "--reorder-rows", "100", "--limit", "10")
        check(rc == 1 and len(out.splitlines()) == 12 and
              out.splitlines() == whole.splitlines()[:12],
              f"--limit 10 prints the first 10 rows of the whole trace (rc {rc}): {out}")
        m = re.search(r"note: --limit 10: every row written after reading ([0-9.]+)MB of "
                      r"([0-9.]+)MB; the rest was not read or checked", err)
        check(m and float(m[1]) < float(m[2]) / 2, f"--limit 10 stops before half the dump: {err}")

        rc, out, _ = run(a.decode, "--help")
        check("torch.profiler._cupti_monitor dump" in out, "--help shows the dump example")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("ok: every command reads the dumps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
