#!/usr/bin/env python3
"""Checks the recording made by tools/gpu-window-check (real GPU, real CUPTI).

Asserts: two windows, one from the signal and one from the socket; inside each window, every kernel
that started at least MARGIN after the window's first API record has its launch API record joined
(same correlation id); the always-on kernel stream has no gap longer than MAX_GAP around the windows;
the request-to-enabled latency from each BEGIN marker. Prints what it measured; exits 1 on failure.
Usage: check_windows.py OUT_DIR
"""
import json
import re
import sys

MARGIN_NS = 50_000_000   # kernels queued before the window opened may start inside it
MAX_GAP_NS = 100_000_000  # the loop launches ~330 kernels per ~10 ms step


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    out = sys.argv[1]
    failures = []
    info = open(f"{out}/info.txt").read()
    sources = re.findall(r"#(\d+) source (\w+)", info)
    print("windows in info:", sources)
    if [s for _, s in sources] != ["TRIGGER_SIGNAL", "TRIGGER_SOCKET"]:
        failures.append(f"expected windows from SIGNAL then SOCKET, got {sources}")
    for wid, us in re.findall(r"#(\d+) source \w+.*request_to_enabled_us=(-?\d+)", info):
        print(f"window {wid}: request-to-enabled latency {int(us)} us")

    spans = []
    for w in (1, 2):
        rs = rows(f"{out}/window{w}.jsonl")
        api = [r for r in rs if r["type"] == "api"]
        kernels = [r for r in rs if r["type"] == "kernel"]
        if not api or not kernels:
            failures.append(f"window {w}: {len(api)} API rows, {len(kernels)} kernel rows")
            continue
        lo = min(r["start_ns"] for r in api)
        hi = max(r["start_ns"] for r in api)
        spans.append((lo, hi))
        inside = [k for k in kernels if k["start_ns"] >= lo + MARGIN_NS and k["start_ns"] <= hi]
        unjoined = [k for k in inside if "api" not in k]
        launches = {}
        for r in api:
            launches[r["name"]] = launches.get(r["name"], 0) + 1
        top = sorted(launches.items(), key=lambda kv: -kv[1])[:5]
        print(f"window {w}: {len(api)} API rows ({(hi - lo) / 1e6:.1f} ms of API starts), "
              f"{len(kernels)} kernels, {len(inside)} checked, {len(unjoined)} without launch record; "
              f"top APIs {top}")
        if not inside:
            failures.append(f"window {w}: no kernel to check")
        if unjoined:
            failures.append(f"window {w}: {len(unjoined)} kernels without their launch API record, "
                            f"first {unjoined[0]}")

    kernels = sorted(r["start_ns"] for r in rows(f"{out}/all.jsonl") if r["type"] == "kernel")
    print(f"whole run: {len(kernels)} kernels")
    if spans and kernels:
        lo = min(s[0] for s in spans) - 500_000_000
        hi = max(s[1] for s in spans) + 500_000_000
        seg = [t for t in kernels if lo <= t <= hi]
        gap = max((b - a for a, b in zip(seg, seg[1:])), default=0)
        print(f"always-on stream from 0.5 s before the first window to 0.5 s after the last: "
              f"{len(seg)} kernels, largest gap between kernel starts {gap / 1e6:.2f} ms")
        if gap > MAX_GAP_NS:
            failures.append(f"gap of {gap / 1e6:.1f} ms in the always-on kernel stream")
    for f in failures:
        print("FAIL:", f)
    print("window check:", "FAILED" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
