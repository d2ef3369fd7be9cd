#!/usr/bin/env python3
"""CUPMON_AUTO_WINDOW on a real GPU (issue 18): does the window open right after the slow step, and
do the defaults leave a loop without one alone?

Runs tests/gpu/torch/slow_step_train.py (no annotations, no cupmon API) under `cupmon-run` three
times and reads each recording with `cupmon-decode steps` (its "windows:" list: the step each window
began in, and why the step trigger opened it):
  fast-flush  --auto-window --flush-ms FLUSH --buffer-size 256K, a SLEEP-second sleep before
              iteration SLOW: exactly one window, source TRIGGER_AUTO, opened for the monitor's
              step SLOW (it cuts steps at first kernels, so the wait before iteration SLOW's
              launches is in its step SLOW), and beginning at most LAG steps after the decoder's
              slow step SLOW+1 (end to end);
  default     the same with the default flush period (1000 ms): one window at step SLOW; its lag is
              printed, bounded by the flush period, not asserted in steps;
  no-slow     --auto-window, no sleep (--sleep 0): no window at all.
Prints a table; exits 1 on any failure. Usage:
  auto_window_check.py --run build/tools/cupmon-run --decode build/tools/cupmon-decode --out DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WINDOW = re.compile(r"^  #(\d+) (\S+) at ([^,]+)(?:, in step (\d+))?")
WHY = re.compile(r"^    why: step (\d+) took (\S+), (\S+)x the median (\S+) \(threshold (\S+)x\)")


def windows(decode, rec):
    r = subprocess.run([decode, "steps", rec], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"cupmon-decode steps {rec} exited {r.returncode}: {r.stderr}")
    out = []
    for line in r.stdout.splitlines():
        m = WINDOW.match(line)
        if m:
            out.append({"id": int(m.group(1)), "source": m.group(2),
                        "in_step": int(m.group(4)) if m.group(4) else None})
            continue
        m = WHY.match(line)
        if m and out:
            out[-1].update(trigger_step=int(m.group(1)), took=m.group(2), ratio=m.group(3),
                           median=m.group(4), threshold=m.group(5))
    return out, r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="cupmon-run")
    ap.add_argument("--decode", required=True, help="cupmon-decode")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=700)
    ap.add_argument("--slow", type=int, default=170, help="0-based iteration that sleeps first")
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--flush-ms", type=int, default=5)
    ap.add_argument("--lag", type=int, default=2, help="steps the window may begin after the slow one")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    train = [sys.executable, os.path.join(HERE, "slow_step_train.py"), "--steps", str(args.steps)]
    # Small buffers with the short flush: each flush hands back every thread's buffer, and CUPTI
    # zeroes each new one on the launching thread (CUPTI_NOTES.md), 4 MiB by default.
    runs = [("fast-flush", ["--auto-window", "--flush-ms", str(args.flush_ms), "--buffer-size", "256K"],
             ["--slow", str(args.slow), "--sleep", str(args.sleep)]),
            ("default", ["--auto-window"], ["--slow", str(args.slow), "--sleep", str(args.sleep)]),
            ("no-slow", ["--auto-window"], ["--slow", "0", "--sleep", "0"])]
    failures, rows = [], []
    slow_decoder_step = args.slow + 1  # the decoder's step holding the sleep (end to end)
    for name, opts, train_opts in runs:
        rec = os.path.join(args.out, name)
        shutil.rmtree(rec, ignore_errors=True)  # one recording per directory: steps would merge two
        r = subprocess.run([args.run, "--output-dir", rec] + opts + ["--"] + train + train_opts)
        if r.returncode != 0:
            failures.append(f"{name}: the training loop under cupmon-run exited {r.returncode}")
            continue
        ws, text = windows(args.decode, rec)
        with open(os.path.join(args.out, name + ".steps.txt"), "w") as f:
            f.write(text)
        auto = [w for w in ws if w["source"] == "TRIGGER_AUTO"]
        w = auto[0] if auto else {}
        lag = w["in_step"] - slow_decoder_step if w.get("in_step") is not None else None
        rows.append((name, " ".join(opts), len(ws), w.get("trigger_step", "-"), w.get("took", "-"),
                     w.get("median", "-"), w.get("in_step", "-"), "-" if lag is None else lag))
        if name == "no-slow":
            if ws:
                failures.append(f"no-slow: {len(ws)} window(s) opened in a loop without a slow step "
                                f"(first: {ws[0]})")
            continue
        if len(ws) != 1 or len(auto) != 1:
            failures.append(f"{name}: {len(ws)} window(s), {len(auto)} automatic; expected exactly 1")
            continue
        if w.get("trigger_step") != args.slow:
            failures.append(f"{name}: the window was opened for the monitor's step "
                            f"{w.get('trigger_step')}, expected {args.slow}")
        if lag is None:
            failures.append(f"{name}: the window began after the last step")
        elif name == "fast-flush" and not 0 <= lag <= args.lag:
            failures.append(f"{name}: the window began in step {w['in_step']}, {lag} step(s) after "
                            f"the slow step {slow_decoder_step}; expected at most {args.lag}")
    head = ("run", "options", "windows", "trigger step", "took", "median", "began in step",
            "steps after the slow one")
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    for row in [head] + rows:
        print("  ".join(str(x).ljust(n) for x, n in zip(row, widths)))
    print(f"(the slow step: iteration {args.slow}, the decoder's step {slow_decoder_step}, "
          f"the monitor's step {args.slow})")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
