#!/usr/bin/env python3
"""A 2-rank (or N-rank) DistributedDataParallel training loop over NCCL for cupmon's multi-GPU checks.

Run it with torchrun, one process per GPU, for example under cupmon by injection:
  cupmon-run -o OUT -- torchrun --standalone --nproc_per_node 2 tests/gpu/torch/ddp_train.py --steps 600

Each rank trains the same MLP as train_mlp.py on its own GPU (LOCAL_RANK); DDP all-reduces the
gradients through NCCL every step. Before the timed steps every rank checks one all-reduce result,
so a broken NCCL set-up fails loudly. With --ready-dir, rank R writes READY_DIR/rank-R holding its pid
once its timed steps begin (tools/gpu-check-multi uses it to find the pids and to time the windows).
Prints one JSON line per rank.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--ready-dir", default="")
    args = ap.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dev = torch.device("cuda", local_rank)
    dist.init_process_group("nccl", device_id=dev)
    rank, world = dist.get_rank(), dist.get_world_size()

    # One all-reduce with a known answer: sum of (rank + 1) over all ranks.
    t = torch.full((1024,), float(rank + 1), device=dev)
    dist.all_reduce(t)
    expected = world * (world + 1) / 2
    if not torch.all(t == expected):
        sys.exit(f"rank {rank}: all_reduce gave {t[0].item()}, expected {expected}")

    torch.manual_seed(0)
    layers = []
    for _ in range(args.depth):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers).to(dev),
                                                      device_ids=[local_rank])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.width, device=dev)
    y = torch.randn(args.batch, args.width, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    if args.ready_dir:
        path = os.path.join(args.ready_dir, f"rank-{rank}")
        with open(path + ".tmp", "w") as f:
            f.write(f"{os.getpid()}\n")
        os.rename(path + ".tmp", path)
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    dist.barrier()
    print(json.dumps({"rank": rank, "world_size": world, "device": local_rank, "pid": os.getpid(),
                      "steps": args.steps, "median_ms": statistics.median(times)}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
