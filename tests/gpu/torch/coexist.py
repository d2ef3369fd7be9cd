#!/usr/bin/env python3
"""cupmon alongside torch.profiler (issue 9, docs/COEXISTENCE.md). GPU machine only.

  coexist.py --build BUILD --out DIR     runs the checks below, prints one result line each,
                                         exits 1 when any fails
  coexist.py child --profile middle|whole|none --json FILE [--after-s S]
                                         one training run (the driver starts these)

The training loop is train_mlp.py's model (24-layer MLP, AdamW, batch 64): `before` steps, then
`profiled` steps (torch.profiler, CUDA only, when --profile middle), then `after` steps. With
--profile whole the profiler covers every step instead (the ground truth for "every kernel").

Checks:
  1. preload-profiler  under `cupmon-run` (preloaded by default), torch.profiler's kernel events for its steps
                       equal (per kernel name) those of an identical run without cupmon;
  2. preload-cupmon    cupmon's files hold every kernel of the whole run (per kernel name at least
                       the count torch.profiler saw over the whole run), and no gap is marked;
     preload-timestamps every one of those kernels has timestamps; the kernels without are counted
                       by phase (before / during / after the profiler's steps), and compared with
                       the same preloaded run without the profiler;
  3. plain-profiler    with `cupmon-run --no-preload` (injection only; cupmon rebinds torch's CUPTI
                       imports at start), torch.profiler's kernels for its steps equal the baseline's;
     plain-cupmon      and cupmon's files hold every kernel of the whole run, with no gap, and its
                       start line says how many imports it rebound;
     plain-short       the same with cupmon's defaults and a run that ends right after the
                       profiler's steps: nothing is lost, or whatever cupmon lost is marked as a gap;
     norebind-gap      with CUPMON_REBIND_IMPORTS=0 (what escapes the rebinding), cupmon marks the
                       profiler's takeover as a gap with an end, and records again after it;
  4. exclusive-tool    (when compute-sanitizer exists) cupmon under compute-sanitizer: the program
                       exits 0; cupmon's stderr lines are shown.
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the child: one training run ----

def child(args):
    import torch
    sys.path.insert(0, HERE)
    from train_mlp import build

    assert torch.cuda.is_available(), "no CUDA device"
    torch.cuda.init()  # CUDA context (cupmon is injected here); no kernels yet
    dev = torch.device("cuda")
    acts = [torch.profiler.ProfilerActivity.CUDA]
    prof = None
    times = {}
    if args.profile == "whole":
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    times["start_ns"] = time.time_ns()
    torch.manual_seed(0)
    model = build(512, 24, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(64, 512, device=dev)
    y = torch.randn(64, 512, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(args.before):
        step()
    torch.cuda.synchronize()
    if args.profile == "middle":
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    times["prof_start_ns"] = time.time_ns()
    for _ in range(args.profiled):
        step()
    torch.cuda.synchronize()
    times["prof_end_ns"] = time.time_ns()
    if args.profile == "middle":
        prof.__exit__(None, None, None)
    times["after_start_ns"] = time.time_ns()
    t0 = time.monotonic()
    after = 0
    while after < args.after or time.monotonic() - t0 < args.after_s:
        step()
        after += 1
        torch.cuda.synchronize()
    times["end_ns"] = time.time_ns()
    if args.profile == "whole":
        prof.__exit__(None, None, None)

    counts = collections.Counter()
    if prof is not None:
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                counts[e.name] += 1
    maps = []
    with open("/proc/self/maps") as f:
        for line in f:
            if "cupti" in line or "cupmon" in line:
                path = line.split()[-1]
                if path not in maps:
                    maps.append(path)
    with open(args.json, "w") as f:
        json.dump({"times": times, "counts": counts, "after_steps": after, "libraries": maps,
                   "torch": torch.__version__}, f, indent=1, sort_keys=True)
    return 0


# ---- the driver ----

def kernels_only(counts):
    return {k: v for k, v in counts.items() if not k.startswith("Memcpy") and not k.startswith("Memset")}


def run(cmd, log, env=None):
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
    return p.returncode


def cupmon_kernels(build, rec_dir, out_dir, name, rows_out=None):
    """Kernel rows of cupmon's recording: {name: count} and [start_ns or None]; with rows_out (a
    list), also appends (correlation_id, start_ns or None) for every kernel."""
    jsonl = os.path.join(out_dir, name + ".jsonl")
    rc = run([os.path.join(build, "tools", "cupmon-decode"), "export", rec_dir, "--format", "jsonl",
              "-o", jsonl], os.path.join(out_dir, name + "-export.log"))
    counts, starts = collections.Counter(), []
    # Exit 1 means decoded with warnings (they are in the export log and shown by info); only 2 is
    # unusable input.
    if rc not in (0, 1):
        return None, None
    with open(jsonl) as f:
        for line in f:
            row = json.loads(line)
            if row.get("type", row.get("kind", "")) in ("kernel", "concurrent_kernel"):
                counts[row["name"]] += 1
                starts.append(row.get("start_ns"))
                if rows_out is not None:
                    rows_out.append((row.get("correlation_id", 0), row.get("start_ns")))
    return counts, starts


def cupmon_gaps(build, rec_dir, out_dir, name):
    """(number of gaps, their lines) from `cupmon-decode info`."""
    log = os.path.join(out_dir, name + "-info.log")
    run([os.path.join(build, "tools", "cupmon-decode"), "info", rec_dir], log)
    text = open(log).read()
    m = re.search(r"gaps \(another CUPTI client held CUPTI; no records inside\): (\d+)", text)
    lines = [l.strip() for l in text.splitlines() if l.strip().startswith("gap #")]
    return (int(m.group(1)) if m else None), lines


def zero_timestamps_by_phase(rows, times):
    """Kernels without timestamps, each placed in the phase (before / during / after the profiler's
    steps) of the nearest timestamped kernel launched before it (correlation ids follow launch
    order). Returns {phase: count}."""
    phases = collections.Counter()
    phase = "before"
    for corr, start in sorted(rows, key=lambda r: r[0]):
        if start is not None:
            phase = ("before" if start < times["prof_start_ns"] else
                     "during" if start <= times["prof_end_ns"] else "after")
        else:
            phases[phase] += 1
    return phases


def diff_counts(want, got):
    names = sorted(set(want) | set(got))
    return [(n, want.get(n, 0), got.get(n, 0)) for n in names if want.get(n, 0) != got.get(n, 0)]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        ap = argparse.ArgumentParser()
        ap.add_argument("child")
        ap.add_argument("--profile", choices=["middle", "whole", "none"], default="middle")
        ap.add_argument("--json", required=True)
        ap.add_argument("--before", type=int, default=20)
        ap.add_argument("--profiled", type=int, default=5)
        ap.add_argument("--after", type=int, default=20)
        ap.add_argument("--after-s", type=float, default=0.0)
        return child(ap.parse_args())

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    me = os.path.abspath(__file__)
    cupmon_run = os.path.join(build, "tools", "cupmon-run")
    results = []

    def result(name, ok, text):
        results.append(ok)
        print(f"{name:18s} {'ok  ' if ok else 'FAIL'} {text}", flush=True)

    def child_cmd(profile, js, *extra):
        return [sys.executable, me, "child", "--profile", profile, "--json", js, *extra]

    def load(js):
        try:
            return json.load(open(js))
        except (OSError, ValueError):
            return None

    # Ground truth, no cupmon: the profiler's steps, and the whole run.
    base_mid, base_whole = os.path.join(out, "base-middle.json"), os.path.join(out, "base-whole.json")
    rc1 = run(child_cmd("middle", base_mid), os.path.join(out, "base-middle.log"))
    rc2 = run(child_cmd("whole", base_whole), os.path.join(out, "base-whole.log"))
    b_mid, b_whole = load(base_mid), load(base_whole)
    if rc1 or rc2 or not b_mid or not b_whole:
        result("baseline", False, f"runs without cupmon failed (exit {rc1}, {rc2}); see {out}/base-*.log")
        return 1
    p0, t0 = kernels_only(b_mid["counts"]), kernels_only(b_whole["counts"])

    # 1 + 2: preloaded, the profiler in the middle.
    rec = os.path.join(out, "preload")
    js = os.path.join(out, "preload.json")
    rc = run([cupmon_run, "-o", rec, "--"] + child_cmd("middle", js),
             os.path.join(out, "preload.log"))
    pre = load(js)
    if rc or not pre:
        result("preload-profiler", False, f"run failed (exit {rc}); see {out}/preload.log")
        result("preload-cupmon", False, "no run")
    else:
        p1 = kernels_only(pre["counts"])
        bad = diff_counts(p0, p1)
        result("preload-profiler", not bad and sum(p0.values()) > 0,
               f"torch.profiler kernels for its steps: {sum(p1.values())} with cupmon, "
               f"{sum(p0.values())} without; names differing: {len(bad)}"
               + "".join(f"\n    {n}: without {a}, with {b}" for n, a, b in bad[:10]))
        rows = []
        counts, _ = cupmon_kernels(build, rec, out, "preload", rows)
        gaps, gap_lines = cupmon_gaps(build, rec, out, "preload")
        if counts is None:
            result("preload-cupmon", False, f"cupmon-decode export failed; see {out}/preload-export.log")
        else:
            missing = {n: v - counts.get(n, 0) for n, v in t0.items() if counts.get(n, 0) < v}
            ok = not missing and gaps == 0 and sum(t0.values()) > 0
            result("preload-cupmon", ok,
                   f"cupmon kernels {sum(counts.values())} for the whole run, torch.profiler (whole run) "
                   f"{sum(t0.values())}; missing {sum(missing.values())} in {len(missing)} names; "
                   f"gaps {gaps}; libraries {pre.get('libraries')}"
                   + "".join(f"\n    missing {v}: {n}" for n, v in list(missing.items())[:10])
                   + "".join(f"\n    {l}" for l in gap_lines[:5]))
            # Kernels whose records came without timestamps (start = end = 0), by phase; and, to
            # tell whether the profiler's session causes them, the same run without the profiler.
            zero = zero_timestamps_by_phase(rows, pre["times"])
            rec_np, js_np = os.path.join(out, "preload-noprof"), os.path.join(out, "preload-noprof.json")
            rc_np = run([cupmon_run, "-o", rec_np, "--"] + child_cmd("none", js_np),
                        os.path.join(out, "preload-noprof.log"))
            rows_np = []
            np_pre = load(js_np)
            cupmon_kernels(build, rec_np, out, "preload-noprof", rows_np)
            zero_np = (zero_timestamps_by_phase(rows_np, np_pre["times"])
                       if not rc_np and np_pre else None)
            result("preload-timestamps", sum(zero.values()) == 0 and zero_np is not None
                   and sum(zero_np.values()) == 0,
                   f"kernels without timestamps, with the profiler in the middle: {sum(zero.values())} of "
                   f"{len(rows)} (before its steps {zero['before']}, during {zero['during']}, after "
                   f"{zero['after']}); same run without the profiler: "
                   + (f"{sum(zero_np.values())} of {len(rows_np)}" if zero_np is not None
                      else f"run failed (exit {rc_np})"))

    # 3: plain injection (--no-preload): torch's CUPTI imports are rebound to cupmon's multiplexer.
    rec = os.path.join(out, "plain")
    js = os.path.join(out, "plain.json")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    rc = run([cupmon_run, "--no-preload", "-o", rec, "--"] + child_cmd("middle", js),
             os.path.join(out, "plain.log"), env=env)
    pl = load(js)
    if rc or not pl:
        result("plain-profiler", False, f"run failed (exit {rc}); see {out}/plain.log")
        result("plain-cupmon", False, "no run")
    else:
        p1 = kernels_only(pl["counts"])
        bad = diff_counts(p0, p1)
        result("plain-profiler", not bad and sum(p0.values()) > 0,
               f"torch.profiler kernels for its steps: {sum(p1.values())} with cupmon injected only, "
               f"{sum(p0.values())} without; names differing: {len(bad)}"
               + "".join(f"\n    {n}: without {a}, with {b}" for n, a, b in bad[:10]))
        counts, _ = cupmon_kernels(build, rec, out, "plain")
        gaps, gap_lines = cupmon_gaps(build, rec, out, "plain")
        said = [l.strip() for l in open(os.path.join(out, "plain.log")) if l.startswith("cupmon:")]
        rebound = any("imports rebound" in l for l in said)
        counts = counts or {}
        missing = {n: v - counts.get(n, 0) for n, v in t0.items() if counts.get(n, 0) < v}
        result("plain-cupmon", not missing and gaps == 0 and rebound and sum(t0.values()) > 0,
               f"cupmon kernels {sum(counts.values())} for the whole run, torch.profiler (whole run) "
               f"{sum(t0.values())}; missing {sum(missing.values())} in {len(missing)} names; gaps {gaps}"
               + "".join(f"\n    missing {v}: {n}" for n, v in list(missing.items())[:5])
               + "".join(f"\n    {l}" for l in gap_lines[:3])
               + "".join(f"\n    stderr: {l}" for l in said[:4]))

    # 3c: what escapes the rebinding (here: switched off) is a marked gap, then cupmon takes CUPTI back.
    rec = os.path.join(out, "norebind")
    js = os.path.join(out, "norebind.json")
    env = dict(os.environ, CUPMON_FLUSH_MS="200", CUPMON_RECLAIM_MS="2000", CUPMON_REBIND_IMPORTS="0")
    env.pop("LD_PRELOAD", None)
    rc = run([cupmon_run, "--no-preload", "-o", rec, "--"] + child_cmd("middle", js, "--after-s", "5"),
             os.path.join(out, "norebind.log"), env=env)
    pl = load(js)
    if rc or not pl:
        result("norebind-gap", False, f"run failed (exit {rc}); see {out}/norebind.log")
    else:
        gaps, gap_lines = cupmon_gaps(build, rec, out, "norebind")
        counts, starts = cupmon_kernels(build, rec, out, "norebind")
        t = pl["times"]
        starts = [s for s in (starts or []) if s is not None]
        before = sum(1 for s in starts if s < t["prof_start_ns"])
        during = sum(1 for s in starts if t["prof_start_ns"] <= s <= t["prof_end_ns"])
        after = sum(1 for s in starts if s > t["after_start_ns"])
        ended = bool(gap_lines) and "open/unknown end" not in gap_lines[0]
        warned = [l.strip() for l in open(os.path.join(out, "norebind.log")) if l.startswith("cupmon:")]
        ok = bool(gaps) and ended and after > 0 and before > 0
        result("norebind-gap", ok,
               f"gaps {gaps}; cupmon kernels before the profiler {before}, during {during}, after "
               f"{after} ({pl['after_steps']} steps after it); torch.profiler kernels "
               f"{sum(kernels_only(pl['counts']).values())} (without cupmon {sum(p0.values())})"
               + "".join(f"\n    {l}" for l in gap_lines[:3])
               + "".join(f"\n    stderr: {l}" for l in warned[:4]))

    # 3b: a short job, cupmon's defaults: a loss must not be silent.
    rec = os.path.join(out, "plain-short")
    js = os.path.join(out, "plain-short.json")
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and k not in ("CUPMON_FLUSH_MS", "CUPMON_RECLAIM_MS")}
    rc = run([cupmon_run, "--no-preload", "-o", rec, "--"] + child_cmd("middle", js),
             os.path.join(out, "plain-short.log"), env=env)
    if rc or not load(js):
        result("plain-short", False, f"run failed (exit {rc}); see {out}/plain-short.log")
    else:
        gaps, gap_lines = cupmon_gaps(build, rec, out, "plain-short")
        counts, _ = cupmon_kernels(build, rec, out, "plain-short")
        kept, whole = sum((counts or {}).values()), sum(t0.values())
        result("plain-short", kept >= whole or bool(gaps),
               f"cupmon kept {kept} of {whole} kernels (the whole run without cupmon); gaps {gaps}"
               + "".join(f"\n    {l}" for l in gap_lines[:3]))

    # 4: a tool that takes CUPTI exclusively.
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    loop = os.path.join(build, "tests", "gpu", "launch_loop")
    if os.path.exists(sanitizer) and os.path.exists(loop):
        log = os.path.join(out, "sanitizer.log")
        rc = run([sanitizer, "--target-processes", "all", cupmon_run, "-o", os.path.join(out, "sanitizer"),
                  "--", loop, "2000"], log)
        lines = [l.strip() for l in open(log) if "cupmon:" in l]
        result("exclusive-tool", rc == 0,
               f"compute-sanitizer + cupmon: program exit {rc}; cupmon said:"
               + "".join(f"\n    {l}" for l in lines[:4]) + ("" if lines else " (nothing)"))
    else:
        print("exclusive-tool     skip compute-sanitizer or launch_loop not found")

    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
