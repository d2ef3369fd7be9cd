#!/usr/bin/env python3
"""In-process on/off benchmark on a launch-bound torch training loop (issue 16).

The MLP of train_mlp.py (8 x Linear(512) + ReLU, AdamW, batch 64). After warm-up, CYCLES cycles of
two phases of STEPS training steps each: one with CUPTI's always-on kinds (memcpy, memset,
concurrent kernel) disabled and one with them enabled, through cuptiActivityDisable/Enable of the
libcupti the injected client loaded (found in /proc/self/maps), while the client stays attached.
Cycles alternate their order (off-on, on-off). Prints the JSON line of tests/gpu/onoff_bench.cu.
--nvtx: each step is inside an NVTX range (torch.cuda.nvtx.range_push/pop), and so is each layer's
forward (a forward pre-hook pushes, a forward hook pops): 1 + 16 ranges per step, in every phase.
ONOFF_KINDS (comma-separated CUpti_ActivityKind numbers, default 1,2,10) names the kinds that are
switched: add 12 for a client with MARKER always on, 49 for MEMORY2.
Usage: onoff_bench.py [--steps 20] [--cycles 8] [--batch 64] [--nvtx]
"""
import argparse
import ctypes
import json
import os
import sys
import time

import torch

DEFAULT_KINDS = (1, 2, 10)  # CUpti_ActivityKind: memcpy, memset, concurrent kernel


def switched_kinds():
    text = os.environ.get("ONOFF_KINDS", "")
    if not text:
        return DEFAULT_KINDS
    try:
        kinds = tuple(int(k) for k in text.split(","))
    except ValueError:
        kinds = ()
    if not kinds or any(not 1 <= k <= 127 for k in kinds):
        sys.exit(f"onoff_bench.py: ONOFF_KINDS='{text}' is not a list of kind numbers such as 1,2,10,12")
    return kinds


def loaded_cupti():
    for line in open("/proc/self/maps"):
        at = line.find("/")
        if at >= 0 and "libcupti.so" in line[at:]:
            return ctypes.CDLL(line[at:].strip(), mode=os.RTLD_NOW | os.RTLD_NOLOAD)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--nvtx", action="store_true", help="an NVTX range around each step and each layer")
    args = ap.parse_args()
    kinds = switched_kinds()
    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    if args.nvtx:
        # The hooks return None: a value returned by a hook would replace the layer's input/output.
        def push(module, inputs):
            torch.cuda.nvtx.range_push(module.nvtx_name)

        def pop(module, inputs, output):
            torch.cuda.nvtx.range_pop()

        for i, layer in enumerate(model):
            layer.nvtx_name = f"layer{i}"
            layer.register_forward_pre_hook(push)
            layer.register_forward_hook(pop)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, 512, device=dev)
    y = torch.randn(args.batch, 512, device=dev)

    def run(n):
        for _ in range(n):
            if args.nvtx:
                torch.cuda.nvtx.range_push("step")
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            if args.nvtx:
                torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()

    run(20)
    cupti = loaded_cupti()
    if cupti is None:
        sys.exit("onoff_bench.py: no libcupti in the process: inject a client")

    def switch(on):
        fn = cupti.cuptiActivityEnable if on else cupti.cuptiActivityDisable
        for k in kinds:
            if fn(k) != 0:
                sys.exit(f"onoff_bench.py: cuptiActivity{'Enable' if on else 'Disable'}({k}) failed")
        run(2)  # untimed: the switch settles

    run(args.steps)
    cycles = []
    for c in range(args.cycles):
        t = {}
        for half in range(2):
            on = (c % 2 == 0) == (half == 1)
            switch(on)
            w0, c0 = time.monotonic(), time.process_time()
            run(args.steps)
            t["on" if on else "off"] = (time.monotonic() - w0, time.process_time() - c0)
        cycles.append({"off_wall_s": t["off"][0], "on_wall_s": t["on"][0],
                       "off_cpu_s": t["off"][1], "on_cpu_s": t["on"][1]})
    switch(True)
    print(json.dumps({"threads": 1, "steps": args.steps, "nvtx": args.nvtx, "kinds": list(kinds),
                      "cycles": cycles}))


if __name__ == "__main__":
    main()
