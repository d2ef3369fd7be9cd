#!/usr/bin/env python3
"""train_mlp.py's training loop with a known number of steps and one deliberately slow step, for
`cupmon-decode steps` (tests/gpu/torch/steps_check.py runs it under cupmon-run).

Runs WARMUP + STEPS iterations of the same 24-layer MLP with AdamW, each followed by
torch.cuda.synchronize(). Before the launches of iteration SLOW (0-based over all iterations) it
sleeps SLEEP seconds with the GPU idle, so that iteration takes SLEEP longer than the others.
No annotations, no cupmon API: the steps must be found in the kernel stream alone.
Prints one JSON line: the iteration count, the slow iteration and the median step time.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import build  # noqa: E402  the same model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warmup", type=int, default=20, help="iterations before the timed ones")
    ap.add_argument("--steps", type=int, default=300, help="timed iterations")
    ap.add_argument("--slow", type=int, default=170, help="0-based iteration that sleeps first")
    ap.add_argument("--sleep", type=float, default=1.0, help="seconds")
    args = ap.parse_args()
    total = args.warmup + args.steps
    if not 0 <= args.slow < total:
        sys.exit(f"--slow must be in [0, {total})")

    dev = torch.device("cuda")
    torch.manual_seed(0)
    batch, width = 64, 512  # train_mlp.py's defaults: launch-bound, hundreds of kernels a step
    model = build(width, 24, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, width, device=dev)
    y = torch.randn(batch, width, device=dev)
    torch.cuda.synchronize()

    times = []
    for i in range(total):
        t0 = time.perf_counter()
        if i == args.slow:
            time.sleep(args.sleep)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    print(json.dumps({"iterations": total, "slow": args.slow, "slow_ms": times[args.slow],
                      "median_ms": statistics.median(times)}))


if __name__ == "__main__":
    sys.exit(main())
