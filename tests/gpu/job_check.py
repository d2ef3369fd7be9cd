#!/usr/bin/env python3
"""Checks `cupmon-decode job` against what tests/gpu/job_emul injected (tools/gpu-check-job).

  job_check.py DECODE REC EMUL_DIR NRANKS STEPS MODE [INJECT...]

MODE is `stragglers` (every injection must be the verdict of the slow step that holds it: the
job step whose span, on the injected rank, holds that rank's launch of the injected step) or
`hang` (the job must report a hang with the hung rank, and only it, behind). Prints one row per
check (name|ok or FAILED|truth|cupmon) and exits 1 when any failed.
"""
import json
import os
import subprocess
import sys


def load_truth(emul_dir, nranks):
    truth = {}
    for r in range(nranks):
        path = os.path.join(emul_dir, f"truth-{r}.txt")
        rows = {}
        if os.path.exists(path):
            for line in open(path):
                s, t = line.split()
                rows[int(s)] = int(t)
        truth[r] = rows
    return truth


def main(argv):
    if len(argv) < 7:
        print(__doc__, file=sys.stderr)
        return 2
    decode, rec, emul, nranks, steps, mode = argv[1:7]
    nranks, steps = int(nranks), int(steps)
    injects = argv[7:]
    res = subprocess.run([decode, "job", rec, "--format", "json"], capture_output=True, text=True)
    with open(os.path.join(emul, "job.json"), "w") as f:
        f.write(res.stdout)
    with open(os.path.join(emul, "job.stderr"), "w") as f:
        f.write(res.stderr)
    rows = []
    def row(name, ok, truth, seen):
        rows.append((name, "ok" if ok else "FAILED", truth, seen))
    try:
        job = json.loads(res.stdout)
    except json.JSONDecodeError:
        row("job-json", False, "cupmon.job/1 on stdout", f"exit {res.returncode}: {res.stderr.strip()[:200]}")
        return report(rows)
    truth = load_truth(emul, nranks)
    index = {rk["rank"]: i for i, rk in enumerate(job["ranks"])}
    row("ranks-named", sorted(index) == list(range(nranks)),
        f"ranks 0..{nranks - 1} from RANK", ", ".join(rk["label"] for rk in job["ranks"]))
    if mode == "stragglers":
        for rk in job["ranks"]:
            row(f"rank-{rk['rank']}-collectives", rk["completed_collectives"] == steps,
                f"{steps} collectives", f"{rk['completed_collectives']} completed, {rk['steps']} steps")
    slow = {s["step"]: s for s in job["slow_steps"]}
    explained = set()
    for inj in injects:
        parts = inj.split(":")
        what = parts[0]
        if what == "hang":
            r, s = int(parts[1]), int(parts[2])
            hang = job["hang"]
            behind = [job["ranks"][i]["rank"] for i in hang["behind"]]
            row(f"hang-rank-{r}", hang["hung"] and behind == [r],
                f"rank {r} stopped before the collective of step {s}",
                f"hung={hang['hung']} behind={behind} waiting_at={hang['waiting_at']}")
            continue
        if what == "collectives":
            r, s, ms = 0, int(parts[1]), int(parts[2])
        else:
            r, s, ms = int(parts[1]), int(parts[2]), int(parts[3])
        t = truth.get(r, {}).get(s)
        name = f"{what}-rank-{r}-step-{s}" if what != "collectives" else f"collectives-step-{s}"
        want = f"{what}" + (f", rank {r}" if what != "collectives" else "") + f", {ms} ms"
        if t is None or r not in index:
            row(name, False, want, "no truth row or rank missing")
            continue
        i = index[r]
        step = None
        for js in job["steps"]:
            f = js["ranks"][i]
            if f["present"] and f["start_ns"] <= t <= f["end_ns"]:
                step = js
                break
        if step is None:
            row(name, False, want, "no job step holds the injected launch")
            continue
        v = slow.get(step["step"])
        if v is None:
            row(name, False, want, f"job step {step['step']} not slow ({step['step_ns'] / 1e6:.3f} ms, "
                f"median {step['rolling_median_ns'] / 1e6:.3f} ms)")
            continue
        explained.add(step["step"])
        culprit = job["ranks"][v["culprit"]]["rank"] if v["culprit"] is not None else None
        ok = v["verdict"] == what and (what == "collectives" or culprit == r)
        if what == "gpu-work":
            ok = ok and "bwd_work" in v["kernel"]
        seen = f"job step {step['step']}: {v['verdict']}, culprit rank {culprit}, excess {v['excess_ns'] / 1e6:.3f} ms"
        if v["kernel"]:
            seen += f", kernel {v['kernel']} +{v['kernel_ns'] / 1e6:.3f} ms"
        row(name, ok, want, seen)
    if mode == "stragglers":
        others = [s for s in job["slow_steps"] if s["step"] not in explained]
        kinds = {}
        for s in others:
            kinds[s["verdict"]] = kinds.get(s["verdict"], 0) + 1
        # Shown, not bounded: time-slicing between the processes' contexts on one GPU makes noise.
        row("other-slow-steps", True, "noise of time-slicing (shown)",
            f"{len(others)} of {len(job['steps'])}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return report(rows)


def report(rows):
    for r in rows:
        print("|".join(str(x) for x in r))
    return 0 if all(r[1] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
