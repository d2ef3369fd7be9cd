#!/usr/bin/env python3
"""`cupmon-decode steps` on a real GPU recording with a known step count and one slow step (issue 15).

Runs tests/gpu/torch/slow_step_train.py (WARMUP + STEPS iterations, a SLEEP-second sleep before the
launches of iteration SLOW) under `cupmon-run` (injection, no annotations), then:
  - `cupmon-decode steps OUT --format jsonl`: exactly WARMUP + STEPS steps, step SLOW+1 (1-based)
    lasting at least SLEEP seconds;
  - `cupmon-decode steps OUT` (the table): the first step under "slow steps" is SLOW+1, and it comes
    with a `cupmon-decode gpu-trace ... --from ... --to ...` line; that command lists kernels.
Exits 1 on any failure. Usage:
  steps_check.py --run build/tools/cupmon-run --decode build/tools/cupmon-decode --out DIR
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="cupmon-run")
    ap.add_argument("--decode", required=True, help="cupmon-decode")
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--slow", type=int, default=170)
    ap.add_argument("--sleep", type=float, default=1.0)
    args = ap.parse_args()
    rec = os.path.join(args.out, "rec")
    os.makedirs(args.out, exist_ok=True)
    train = [sys.executable, os.path.join(HERE, "slow_step_train.py"), "--warmup", str(args.warmup),
             "--steps", str(args.steps), "--slow", str(args.slow), "--sleep", str(args.sleep)]
    r = subprocess.run([args.run, "--output-dir", rec, "--"] + train)
    if r.returncode != 0:
        sys.exit(f"training loop under cupmon-run exited {r.returncode}")

    failures = []
    expected = args.warmup + args.steps
    slow_number = args.slow + 1
    r = subprocess.run([args.decode, "steps", rec, "--format", "jsonl"], capture_output=True, text=True)
    if r.returncode not in (0, 1):  # 1: decoded with warnings (printed)
        sys.exit(f"cupmon-decode steps --format jsonl exited {r.returncode}: {r.stderr}")
    steps = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    print(f"steps found: {len(steps)} (expected {expected})")
    if len(steps) != expected:
        failures.append(f"{len(steps)} steps found, expected {expected}")
    by_number = {s["step"]: s for s in steps}
    slow = by_number.get(slow_number)
    if slow is None:
        failures.append(f"no step {slow_number}")
    elif slow["duration_ns"] < args.sleep * 1e9:
        failures.append(f"step {slow_number} lasts {slow['duration_ns']} ns, less than the sleep")
    else:
        print(f"step {slow_number}: {slow['duration_ns'] / 1e6:.1f} ms")

    r = subprocess.run([args.decode, "steps", rec], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f"cupmon-decode steps exited {r.returncode}: {r.stderr}")
    lines = r.stdout.splitlines()
    at = next((i for i, l in enumerate(lines) if l.startswith("slow steps (")), None)
    if at is None or at + 2 >= len(lines):
        failures.append("no slow steps listed")
    else:
        print("\n".join(lines[at:at + 5]))
        first = lines[at + 1].split()
        if first[:2] != ["step", str(slow_number)]:
            failures.append(f"first slow step listed is {' '.join(first[:2])}, expected step {slow_number}")
        drill = lines[at + 2].strip()
        if not drill.startswith("cupmon-decode gpu-trace ") or " --from " not in drill:
            failures.append(f"no drill-down command under the slow step: {drill}")
        else:
            cmd = shlex.split(drill)
            cmd[0] = args.decode
            t = subprocess.run(cmd, capture_output=True, text=True)
            kernels = sum(1 for l in t.stdout.splitlines() if l.strip() and not l.startswith("==") and "Start" not in l)
            print(f"drill-down lists {kernels} rows")
            if t.returncode not in (0, 1) or kernels == 0:
                failures.append(f"the drill-down command gave exit {t.returncode} and {kernels} rows")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
