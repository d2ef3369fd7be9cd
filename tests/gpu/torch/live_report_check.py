#!/usr/bin/env python3
"""`report` and `diff` of a real recording copied while it is written (issue 43): one read against
two, byte for byte.

Runs tests/gpu/torch/slow_step_train.py under `cupmon-run` (injection, a calibration sample every
second: CUPMON_STATS_MS=1000, files rotated at 8 MiB) and copies the recording directory while the
job runs, as a backup or a crash leaves it: its last file has no footer. Then, on the copy (`live`)
and on the finished recording (`done`):
  - `report` as it reads by default (each rank once: the steps found in the read that takes the
    rows, the busy chart's bucket sizes guessed from the footers' index or, for the cut file, its
    calibration samples) and with CUPMON_READ_ALL=1 (two reads: the steps first): the same page;
  - `diff` of the two recordings, whole and with time ranges on each side, in the same two ways:
    the same output.
Prints a table and exits 1 on any difference. Usage:
  live_report_check.py --run build/tools/cupmon-run --decode build/tools/cupmon-decode --out DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def decode(binary, args, read_all):
    env = dict(os.environ)
    env.pop("CUPMON_READ_ALL", None)
    if read_all:
        env["CUPMON_READ_ALL"] = "1"
    return subprocess.run([binary] + args, capture_output=True, env=env, timeout=300)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="cupmon-run")
    ap.add_argument("--decode", required=True, help="cupmon-decode")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--copy-after", type=float, default=6.0, help="seconds after the first file")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    done, live = os.path.join(args.out, "done"), os.path.join(args.out, "live")
    os.makedirs(args.out)
    env = dict(os.environ, CUPMON_STATS_MS="1000", CUPMON_FILE_SIZE="8M")
    train = [sys.executable, os.path.join(HERE, "slow_step_train.py"), "--warmup", "20",
             "--steps", str(args.steps), "--slow", str(args.steps // 2), "--sleep", "0.5"]
    job = subprocess.Popen([args.run, "--output-dir", done, "--"] + train, env=env,
                           stdout=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.isdir(done) and os.listdir(done)):
        time.sleep(0.05)
    time.sleep(args.copy_after)
    if job.poll() is not None:
        sys.exit(f"the job ended (exit {job.returncode}) before the copy; give it more --steps")
    # The recording's files, as a backup copies them (not the control socket beside them).
    os.makedirs(live)
    for name in sorted(os.listdir(done)):
        if name.endswith(".cupmon"):
            shutil.copyfile(os.path.join(done, name), os.path.join(live, name))
    rc = job.wait(timeout=300)
    if rc != 0:
        sys.exit(f"training loop under cupmon-run exited {rc}")
    files = sorted(os.listdir(live))
    last = os.path.getsize(os.path.join(live, files[-1]))
    print(f"copy while written: {len(files)} file(s), the last {last} bytes")

    rows, failures = [], []

    def compare(name, argv, outfile=None):
        results = []
        for read_all in (False, True):
            if outfile and os.path.exists(outfile):
                os.remove(outfile)
            r = decode(args.decode, argv, read_all)
            page = open(outfile, "rb").read() if outfile and os.path.exists(outfile) else b""
            results.append((r.returncode, r.stdout, r.stderr, page))
        code, stdout, stderr, page = results[0]
        same = results[0] == results[1]
        rows.append((name, code, len(stdout) + len(page), "same" if same else "DIFFERENT"))
        if not same:
            failures.append(name)
        if code not in (0, 1):
            failures.append(f"{name}: exit {code}: {stderr.decode(errors='replace')[-500:]}")

    for rec in ("live", "done"):
        out = os.path.join(args.out, rec + ".html")
        compare(f"report {rec}", ["report", os.path.join(args.out, rec), "-o", out], out)
    # Ranges in the steps: the middle half of the copy's steps, and the second half of the whole
    # recording's (unix ns, as `--from @NS` takes them).
    def steps_of(rec):
        r = decode(args.decode, ["steps", rec, "--format", "jsonl"], False)
        return [json.loads(line) for line in r.stdout.decode().splitlines() if line.strip()]
    a_steps, b_steps = steps_of(live), steps_of(done)
    if len(a_steps) < 8 or len(b_steps) < 8:
        sys.exit(f"too few steps for the ranges: {len(a_steps)} in the copy, {len(b_steps)} in all")
    a = (a_steps[len(a_steps) // 4]["start_ns"], a_steps[3 * len(a_steps) // 4]["end_ns"])
    b = (b_steps[len(b_steps) // 2]["start_ns"], b_steps[-2]["end_ns"])
    sides = ["--from-a", f"@{a[0]}", "--to-a", f"@{a[1]}",
             "--from-b", f"@{b[0]}", "--to-b", f"@{b[1]}"]
    for name, extra in (("diff live done", []), ("diff, ranges on each side", sides),
                        ("diff, one range for both", ["--from", f"@{a[0]}", "--to", f"@{a[1]}"])):
        for fmt in ("table", "jsonl"):
            compare(f"{name} ({fmt})", ["diff", live, done, "--format", fmt] + extra)

    print(f"{'check':36} {'exit':>4} {'bytes':>9}  one read against two")
    for name, code, size, verdict in rows:
        print(f"{name:36} {code:>4} {size:>9}  {verdict}")
    if failures:
        print("FAILED: " + "; ".join(failures))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
