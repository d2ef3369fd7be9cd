#!/usr/bin/env python3
"""torch.cuda.nvtx ranges in a cupmon trace window on a real GPU (issue 19), through the Python module.

A linked-in program (cupmon.start) sets NVTX_INJECTION64_PATH itself before its first NVTX call, as
docs/CONTROL.md says: here to the libcupti cupmon loaded (from /proc/self/maps). Warm-up steps
without ranges, then a window holding STEPS steps, each inside range_push("step N"), its forward
pass inside a nested range_push("forward"). Checks on `cupmon-decode export --format jsonl`: one
"step N" range per step at depth 0 and STEPS "forward" ranges at depth 1, each inside its step;
every kernel whose launch call falls inside a forward range carries the label "forward", the same
number in every step; every kernel launched inside a step by another thread (autograd's backward
thread) carries the step's name, marked range_scope "process"; no warm-up kernel carries a label. Prints a table; exits 1 on any failure.
Usage: nvtx_check.py --lib build/monitor/libcupmon.so --decode build/tools/cupmon-decode --out DIR
       nvtx_check.py --recording tests/data/h200-torch-nvtx --decode ... --out DIR
         (no GPU: checks a recording this script made on the H200, kept in tests/data)
"""
import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib")
    ap.add_argument("--recording", help="check this recording instead of training")
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.recording:
        check(args, args.recording)
        return
    if not args.lib:
        ap.error("--lib is required without --recording")
    train(args)


def train(args):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
    os.environ["CUPMON_LIB"] = os.path.abspath(args.lib)
    import cupmon

    rec = os.path.join(args.out, "rec")
    cupmon.start(dir=rec)
    cupti = next((line.split()[-1] for line in open("/proc/self/maps") if "libcupti.so" in line),
                 "libcupti.so.13")
    os.environ.setdefault("NVTX_INJECTION64_PATH", cupti)
    import torch

    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 512, device=dev)
    y = torch.randn(64, 512, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(5):  # warm-up, no ranges
        step()
    torch.cuda.synchronize()
    w = cupmon.window(60)
    for i in range(args.steps):
        torch.cuda.nvtx.range_push(f"step {i}")
        opt.zero_grad(set_to_none=True)
        torch.cuda.nvtx.range_push("forward")
        loss = torch.nn.functional.mse_loss(model(x), y)
        torch.cuda.nvtx.range_pop()
        loss.backward()
        opt.step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    w.close()
    cupmon.stop()
    check(args, rec)


def check(args, rec):
    rows_path = os.path.join(args.out, "rows.jsonl")
    d = subprocess.run([args.decode, "export", rec, "--format", "jsonl", "-o", rows_path],
                       capture_output=True, text=True)
    if d.returncode not in (0, 1):
        sys.exit(f"cupmon-decode export exited {d.returncode}: {d.stderr}")
    rows = [json.loads(line) for line in open(rows_path)]
    ranges = [r for r in rows if r["type"] == "range"]
    kernels = [r for r in rows if r["type"] == "kernel"]
    results = []

    def check(name, expected, got):
        results.append((name, expected, got, expected == got))

    steps = [r for r in ranges if r["name"].startswith("step ")]
    forwards = [r for r in ranges if r["name"] == "forward"]
    check("step ranges at depth 0", args.steps,
          len({r["name"] for r in steps if r.get("depth") == 0}))
    check("forward ranges at depth 1", args.steps, sum(1 for r in forwards if r.get("depth") == 1))
    check("forward ranges inside a step range", args.steps,
          sum(1 for f in forwards if any(s["tid"] == f["tid"] and s["start_ns"] <= f["start_ns"]
                                         and f["end_ns"] <= s["end_ns"] for s in steps)))
    per_step = collections.Counter()
    in_forward = labelled = 0
    for k in kernels:
        api = k.get("api")
        if not api or "start_ns" not in api:
            continue
        f = next((f for f in forwards if f["tid"] == api["tid"] and f["start_ns"] <= api["start_ns"] <= f["end_ns"]), None)
        if f is None:
            continue
        in_forward += 1
        labelled += k.get("range") == "forward"
        per_step[f["start_ns"]] += 1
    check("kernels launched in forward ranges, labelled", in_forward, labelled)
    # Autograd's backward thread pushes no range: under the default --nvtx-scope process its
    # kernels take the step open on the main thread, marked range_scope "process".
    off_thread = off_labelled = 0
    for k in kernels:
        api = k.get("api")
        if not api or "start_ns" not in api:
            continue
        s = next((s for s in steps if s["tid"] != api["tid"] and s["start_ns"] <= api["start_ns"] <= s["end_ns"]), None)
        if s is None:
            continue
        off_thread += 1
        off_labelled += k.get("range") == s["name"] and k.get("range_scope") == "process"
    check("off-thread kernels in a step, labelled", off_thread, off_labelled)
    check("forward kernels: same count in every step", True,
          len(per_step) == args.steps and len(set(per_step.values())) == 1 and in_forward > 0)
    first_window_api = min((k["api"]["start_ns"] for k in kernels if k.get("api", {}).get("start_ns")),
                           default=None)
    warm = [k for k in kernels if first_window_api is None or k["start_ns"] < first_window_api]
    check("warm-up kernels with a range label", 0, sum(1 for k in warm if "range" in k))
    print(f"{'check':44} {'expected':>10} {'got':>10}  result")
    for name, expected, got, ok in results:
        print(f"{name:44} {str(expected):>10} {str(got):>10}  {'ok' if ok else 'FAIL'}")
    print(f"{len(ranges)} range rows, {len(kernels)} kernel rows, {in_forward} kernels in forward "
          f"ranges ({sorted(set(per_step.values()))} per step), {off_thread} launched inside a step "
          f"off its thread; NVTX_INJECTION64_PATH={os.environ.get('NVTX_INJECTION64_PATH', '(not set here)')}")
    if not all(ok for *_, ok in results):
        # What a failure looks like, for the log: kernels of the window without their launch
        # record, and kernels launched inside a forward range that carry another label.
        lo = min((f["start_ns"] for f in forwards), default=0)
        late = [k for k in kernels if k["start_ns"] >= lo]
        print(f"kernels starting after the first forward range: {len(late)}, without a launch "
              f"record: {sum(1 for k in late if 'api' not in k)}, marked launched before the "
              f"window: {sum(1 for k in late if k.get('launched_before_window'))}")
        for k in kernels:
            api = k.get("api") or {}
            f = next((f for f in forwards if f["tid"] == api.get("tid") and "start_ns" in api
                      and f["start_ns"] <= api["start_ns"] <= f["end_ns"]), None)
            if f is not None and k.get("range") != "forward":
                print(f"  launched in forward [{f['start_ns']}, {f['end_ns']}] by {api.get('name')} "
                      f"at {api['start_ns']}, labelled {k.get('range')!r}: {k['name'][:80]}")
        # Records CUPTI dropped (no buffer in time), join and range counts: what `info` says.
        info = subprocess.run([args.decode, "info", rec], capture_output=True, text=True)
        print("cupmon-decode info (for the failure above):")
        print(info.stdout[-4000:] + info.stderr[-1000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
