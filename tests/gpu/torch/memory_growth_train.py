#!/usr/bin/env python3
"""A training loop whose device memory grows every step (issue 19's torch memory check).

Each step trains a small MLP for one batch, then allocates a fresh float32 tensor of GROW_MIB MiB
and keeps it in a list, so the caching allocator has no free block to reuse and asks the driver
for a new segment of exactly that size (sizes above 10 MiB are rounded to 2 MiB; GROW_MIB is
even). A short sleep after each step puts steps in distinct timeline buckets. The last stdout line
is a JSON object with what it did, for memory_growth_check.py.
Usage: memory_growth_train.py [--steps 20] [--grow-mib 34] [--sleep 0.05]
"""
import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--grow-mib", type=int, default=34)
    ap.add_argument("--sleep", type=float, default=0.05)
    a = ap.parse_args()
    if a.grow_mib % 2 or a.grow_mib <= 10:
        ap.error("--grow-mib must be even and above 10 (the caching allocator's rounding)")
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    kept = []
    grow = a.grow_mib << 20
    reserved = []
    for step in range(a.steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        t = torch.empty(grow // 4, dtype=torch.float32, device=dev)
        t.fill_(float(step))  # touched: the allocation is real
        kept.append(t)
        torch.cuda.synchronize()
        reserved.append(torch.cuda.memory_reserved())
        print(f"step {step}: kept {len(kept)} x {a.grow_mib} MiB, torch reserved "
              f"{reserved[-1] >> 20} MiB", flush=True)
        time.sleep(a.sleep)
    print(json.dumps({"steps": a.steps, "grow_bytes": grow, "torch": torch.__version__,
                      "reserved_first": reserved[0], "reserved_last": reserved[-1]}))


if __name__ == "__main__":
    main()
