#!/usr/bin/env python3
"""NVTX ranges pushed on the main thread, kernels launched by autograd's thread (issue 41). GPU only.

  nvtx_threads.py --run BUILD/tools/cupmon-run --lib BUILD/monitor/libcupmon.so \\
                  --decode BUILD/tools/cupmon-decode --out DIR [--steps 20]
  nvtx_threads.py child --steps N     one training run (the driver starts it under cupmon-run)

The child trains train_mlp.py's model (24-layer MLP, AdamW, batch 64): warm-up steps without
ranges, then, inside a trace window opened through the C API of the injected libcupmon (its window
kinds, marker among them), STEPS steps each marked on the main thread with
torch.cuda.nvtx.range_push/pop: "fwd" around the forward pass and loss, "bwd" around
loss.backward(), "opt" around opt.step(). cupmon-run points NVTX_INJECTION64_PATH at libcupti.

The driver decodes the recording twice (`export --format jsonl --nvtx-scope thread` and
`--nvtx-scope process`) and prints, per range name, the kernels whose launch call began inside one
of its ranges (by time, on any thread), how many of those the main thread launched and how many
other threads did, and how many carry the range's name under each scope (and, under process, how
many of those are marked range_scope "process"). Checks, exit 1 on any failure:
  - the recording has STEPS ranges of each name, all on one thread;
  - autograd launched backward kernels from another thread (the case this is about);
  - thread scope (Nsight Systems' projection): exactly the main thread's kernels carry the name;
  - process scope: every kernel launched inside the range carries it, the other threads' ones
    marked "process" and the main thread's not.
"""
import argparse
import collections
import ctypes
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = ("fwd", "bwd", "opt")


def child(args):
    import torch
    sys.path.insert(0, HERE)
    from train_mlp import build

    assert torch.cuda.is_available(), "no CUDA device"
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = build(512, 24, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 512, device=dev)
    y = torch.randn(64, 512, device=dev)

    def step(mark):
        opt.zero_grad(set_to_none=True)
        if mark:
            torch.cuda.nvtx.range_push("fwd")
        loss = torch.nn.functional.mse_loss(model(x), y)
        if mark:
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("bwd")
        loss.backward()
        if mark:
            torch.cuda.nvtx.range_pop()
            torch.cuda.nvtx.range_push("opt")
        opt.step()
        if mark:
            torch.cuda.nvtx.range_pop()

    for _ in range(5):
        step(False)
    torch.cuda.synchronize()
    # The injected copy (CUDA initialised it): the same path gives the same handle.
    lib = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
    lib.cupmon_last_error.restype = ctypes.c_char_p
    if lib.cupmon_window_open(ctypes.c_uint32(600_000), None) < 0:
        sys.exit("cupmon_window_open: " + lib.cupmon_last_error().decode())
    for _ in range(args.steps):
        step(True)
    torch.cuda.synchronize()
    if lib.cupmon_window_close() < 0:
        sys.exit("cupmon_window_close: " + lib.cupmon_last_error().decode())
    print(json.dumps({"steps": args.steps}))


def decode(args, rec, scope):
    path = os.path.join(args.out, f"rows-{scope}.jsonl")
    d = subprocess.run([args.decode, "export", rec, "--format", "jsonl", "--nvtx-scope", scope,
                        "-o", path], capture_output=True, text=True)
    if d.returncode not in (0, 1):
        sys.exit(f"cupmon-decode export --nvtx-scope {scope} exited {d.returncode}: {d.stderr}")
    return [json.loads(line) for line in open(path)]


def driver(args):
    os.makedirs(args.out, exist_ok=True)
    rec = os.path.join(args.out, "rec")
    shutil.rmtree(rec, ignore_errors=True)
    r = subprocess.run([args.run, "--lib", args.lib, "-o", rec, "--", sys.executable,
                        os.path.abspath(__file__), "child", "--steps", str(args.steps)],
                       capture_output=True, text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        sys.exit(f"the child under cupmon-run exited {r.returncode}:\n{r.stdout}")
    did = json.loads(r.stdout.strip().splitlines()[-1])
    rows = {scope: decode(args, rec, scope) for scope in ("thread", "process")}
    failures = []

    def check(what, ok, detail):
        print(f"{'ok  ' if ok else 'FAIL'} {what}: {detail}")
        if not ok:
            failures.append(what)

    ranges = [x for x in rows["thread"] if x["type"] == "range" and x["name"] in NAMES]
    range_tids = {x["tid"] for x in ranges}
    for name in NAMES:
        n = sum(1 for x in ranges if x["name"] == name and x["end_ns"] is not None)
        check(f"{name} ranges", n == did["steps"], f"{n} ended (expected {did['steps']})")
    check("ranges on one thread", len(range_tids) == 1, f"threads {sorted(range_tids)}")
    main_tid = min(range_tids) if range_tids else None
    spans = sorted((x["start_ns"], x["end_ns"], x["name"]) for x in ranges if x["end_ns"] is not None)

    def inside(t):
        for s, e, name in spans:
            if s <= t <= e:
                return name
        return None

    # Per scope: kernel correlation -> (launching tid, range launched in, label, label's scope).
    tallies = {}
    for scope, rs in rows.items():
        t = collections.Counter()
        for k in rs:
            api = k.get("api") if k["type"] == "kernel" else None
            if not api or api.get("start_ns") is None:
                continue
            name = inside(api["start_ns"])
            if name is None:
                continue
            main = api["tid"] == main_tid
            t[(name, "launched")] += 1
            t[(name, "main" if main else "other")] += 1
            if k.get("range") == name:
                t[(name, "labelled")] += 1
                if k.get("range_scope") == "process":
                    t[(name, "from process")] += 1
                    t[(name, "from process, main")] += main
        tallies[scope] = t
    th, pr = tallies["thread"], tallies["process"]
    print()
    print(f"{'range':6} {'kernels':>8} {'main thr':>9} {'other thr':>10} {'labelled:thread':>16} "
          f"{'labelled:process':>17} {'of which from process':>22}")
    for name in NAMES:
        print(f"{name:6} {th[(name, 'launched')]:>8} {th[(name, 'main')]:>9} {th[(name, 'other')]:>10} "
              f"{th[(name, 'labelled')]:>16} {pr[(name, 'labelled')]:>17} "
              f"{pr[(name, 'from process')]:>22}")
    print()
    check("backward kernels launched off the main thread", th[("bwd", "other")] > 0,
          f"{th[('bwd', 'other')]} of {th[('bwd', 'launched')]} (autograd's own thread)")
    for name in NAMES:
        check(f"thread scope: {name} labels exactly the main thread's kernels",
              th[(name, "labelled")] == th[(name, "main")] and th[(name, "from process")] == 0,
              f"{th[(name, 'labelled')]} labelled, {th[(name, 'main')]} launched by the main thread")
        check(f"process scope: {name} labels every kernel launched inside it",
              pr[(name, "labelled")] == pr[(name, "launched")],
              f"{pr[(name, 'labelled')]} of {pr[(name, 'launched')]}")
        check(f"process scope: {name}'s other-thread kernels marked process, the main thread's not",
              pr[(name, "from process")] == pr[(name, "other")]
              and pr[(name, "from process, main")] == 0,
              f"{pr[(name, 'from process')]} marked, {pr[(name, 'other')]} off the main thread")
    print(f"{len(ranges)} fwd/bwd/opt ranges on thread {main_tid}; recording {rec}")
    if failures:
        sys.exit(1)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        ap = argparse.ArgumentParser()
        ap.add_argument("child")
        ap.add_argument("--steps", type=int, default=20)
        child(ap.parse_args())
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    driver(ap.parse_args())


if __name__ == "__main__":
    main()
