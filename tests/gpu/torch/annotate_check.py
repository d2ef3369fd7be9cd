#!/usr/bin/env python3
"""The Python module (python/cupmon) on a real GPU with torch: start, window, annotate, stats, stop,
then the labels checked in cupmon-decode's output (issue 7).

Trains the MLP of train_mlp.py through `import cupmon` (ctypes over libcupmon.so, no compiled
extension): cupmon.start(dir=OUT/rec) before torch touches the GPU, warm-up steps without labels, then
a trace window (cupmon.window) holding STEPS steps, each inside `with cupmon.annotate("step N")`, its
forward pass inside a nested `with cupmon.annotate("forward")`. Then cupmon.stats(), cupmon.stop(),
and `cupmon-decode export --format jsonl` and `--format chrome-json`.

Checks: every label "step 0".."step N-1" and "forward" appears on kernels in the jsonl export; each
step label holds the same number of kernels (the steps are identical) and "forward" holds STEPS times
the forward pass's kernels; no kernel of the warm-up carries a label; the Chrome trace has an
annotation slice per label; stats(), read before stop(), counted records and dropped none. Exits 1 on any failure.
Usage: annotate_check.py --lib build/monitor/libcupmon.so --decode build/tools/cupmon-decode --out DIR
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
    ap.add_argument("--lib", required=True)
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()

    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
    os.environ["CUPMON_LIB"] = os.path.abspath(args.lib)
    import cupmon

    rec = os.path.join(args.out, "rec")
    cupmon.start(dir=rec)
    import torch  # after start: the monitor's kinds are on before torch's modules load

    dev = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 512, device=dev)
    y = torch.randn(64, 512, device=dev)

    def forward():
        return torch.nn.functional.mse_loss(model(x), y)

    for _ in range(5):  # warm-up, unlabelled
        opt.zero_grad(set_to_none=True)
        forward().backward()
        opt.step()
    torch.cuda.synchronize()

    with cupmon.window(seconds=60):  # external correlation (the labels' carrier) is a window kind
        for i in range(args.steps):
            with cupmon.annotate(f"step {i}"):
                opt.zero_grad(set_to_none=True)
                with cupmon.annotate("forward"):
                    loss = forward()
                loss.backward()
                opt.step()
            torch.cuda.synchronize()
    st = cupmon.stats()
    cupmon.stop()
    print("cupmon.stats():", json.dumps(st))

    jsonl = os.path.join(args.out, "all.jsonl")
    chrome = os.path.join(args.out, "timeline.json")
    for fmt, path in (("jsonl", jsonl), ("chrome-json", chrome)):
        r = subprocess.run([args.decode, "export", rec, "--format", fmt, "-o", path])
        if r.returncode not in (0, 1):  # 1: decoded with warnings (printed)
            sys.exit(f"cupmon-decode export --format {fmt} exited {r.returncode}")

    failures = []

    def expect(ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    kernels = [json.loads(line) for line in open(jsonl) if '"type":"kernel"' in line]
    by_label = collections.Counter(k.get("annotation", "") for k in kernels)
    print("kernels by annotation:", dict(sorted(by_label.items())))
    steps = [by_label.get(f"step {i}", 0) for i in range(args.steps)]
    expect(all(steps) and len(set(steps)) == 1,
           f"every step label on kernels, the same count each: {steps}")
    expect(by_label.get("forward", 0) > 0 and by_label["forward"] % args.steps == 0,
           f"'forward' on {by_label.get('forward', 0)} kernels, a multiple of {args.steps} steps")
    first_labelled = min((k["start_ns"] for k in kernels if k.get("annotation")), default=None)
    warmup = [k for k in kernels if first_labelled is not None and k["start_ns"] < first_labelled]
    expect(len(warmup) > 0 and not any(k.get("annotation") for k in warmup),
           f"{len(warmup)} warm-up kernels before the first labelled one, none labelled")
    unknown = [lbl for lbl in by_label if lbl and lbl != "forward" and not lbl.startswith("step ")]
    expect(not unknown, f"no labels other than the ones pushed: {unknown}")

    trace = json.load(open(chrome))
    slices = {e["name"] for e in trace["traceEvents"] if e.get("cat") == "annotation"}
    want = {f"step {i}" for i in range(args.steps)} | {"forward"}
    expect(want <= slices, f"Chrome trace has an annotation slice per label ({len(slices & want)}/{len(want)})")
    expect(st["records"] > 0 and st["dropped_records"] == 0 and st["running"],
           f"stats before stop: {st['records']} records, {st['dropped_records']} dropped, running={st['running']}")
    print("annotate check:", "FAILED" if failures else "passed", f"({len(failures)} failed checks)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
