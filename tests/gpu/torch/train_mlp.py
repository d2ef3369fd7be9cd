#!/usr/bin/env python3
"""A small PyTorch training loop for cupmon's GPU checks and overhead benchmarks.

A 24-layer MLP trained with AdamW. Launch-bound at batch 64 (hundreds of tiny kernels per step),
GPU-bound at large batches. Prints one JSON line with the median step time and its spread.

Modes:
  --profiler none|cuda|cpu+cuda   run every timed step inside torch.profiler with those activities
  --cupmon-lib PATH               start cupmon through its C API (ctypes) before the loop, stop after
  --kernel-counts FILE            profile the timed steps with torch.profiler (CUDA) and write
                                  per-kernel-name counts as JSON (ground truth for cupmon's counts)
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch


def build(width, depth, device):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).to(device)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--profiler", default="none", choices=["none", "cuda", "cpu+cuda"])
    ap.add_argument("--cupmon-lib", default="")
    ap.add_argument("--cupmon-out", default="")
    ap.add_argument("--kernel-counts", default="")
    ap.add_argument("--open-window", default="", metavar="LIBCUPMON",
                    help="after warm-up, open a 10-minute cupmon trace window through the C API of this "
                         "(already injected) libcupmon.so, for the whole timed loop")
    ap.add_argument("--ready-file", default="", help="created once warm-up is done and the timed steps start")
    ap.add_argument("--stop-file", default="",
                    help="end the timed steps once this file exists (checked after each step; "
                         "--steps stays the upper bound): a job that lasts as long as a script needs")
    args = ap.parse_args()

    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = build(args.width, args.depth, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.width, device=dev)
    y = torch.randn(args.batch, args.width, device=dev)

    cupmon = None
    if args.cupmon_lib:
        # The C API through ctypes (python/cupmon), started after warm-up so that its records cover
        # exactly the timed steps, like torch.profiler's in --kernel-counts mode.
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
        os.environ["CUPMON_LIB"] = args.cupmon_lib
        import cupmon as cupmon_module
        cupmon = cupmon_module

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    if cupmon is not None:
        cupmon.start(output_dir=args.cupmon_out)

    activities = []
    if args.profiler in ("cuda", "cpu+cuda") or args.kernel_counts:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    if args.profiler == "cpu+cuda":
        activities.append(torch.profiler.ProfilerActivity.CPU)

    if args.open_window:
        import ctypes
        lib = ctypes.CDLL(args.open_window)  # the injected copy: same path, same handle
        lib.cupmon_last_error.restype = ctypes.c_char_p
        if lib.cupmon_window_open(ctypes.c_uint32(600_000), None) < 0:
            sys.exit("cupmon_window_open: " + lib.cupmon_last_error().decode())
    if args.ready_file:
        open(args.ready_file, "w").close()

    times = []
    prof = torch.profiler.profile(activities=activities) if activities else None
    if prof:
        prof.__enter__()
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        if args.stop_file and os.path.exists(args.stop_file):
            break
    if prof:
        prof.__exit__(None, None, None)

    if args.kernel_counts:
        counts = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                counts[e.name] = counts.get(e.name, 0) + 1
        with open(args.kernel_counts, "w") as f:
            json.dump({"steps": len(times), "counts": counts}, f, indent=1, sort_keys=True)

    if cupmon is not None:
        torch.cuda.synchronize()
        cupmon.stop()

    q = statistics.quantiles(times, n=4)
    print(json.dumps({"batch": args.batch, "profiler": args.profiler, "cupmon_api": cupmon is not None,
                      "median_ms": statistics.median(times), "q1_ms": q[0], "q3_ms": q[2],
                      "steps": len(times)}))


if __name__ == "__main__":
    sys.exit(main())
