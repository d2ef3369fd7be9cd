#!/usr/bin/env python3
"""Checks `cupmon-decode export --format kineto -o DIR` as Holistic Trace Analysis (HTA) reads it.

First, without HTA: every file of the export is one rank's JSON trace whose rank HTA's regular
expression finds; every row of the JSONL export of the same recording is exactly one event with
the right category, name, time, stream and correlation (and no stream on CPU calls); the launch
flows pair up; bad output directories, a region without rows, damaged input and other traces in DIR
behave as documented. Then HTA itself (../shared/third_party/hta, a test tool that is not part of
cupmon, with Debian's python3-pandas & co.) on tests/data/ddp-2rank's export: ranks 0 and 1 found,
the kernel counts equal the decoder's, temporal breakdown, idle-time breakdown, communication/
computation overlap and kernel breakdown run, NCCL kernels count as communication; and on a
two-rank job with annotated steps (cupmon-make-sample --annotated-steps): ProfilerStep#N are HTA's
iterations and trace diff finds the kernel rank 1 adds in step 3. Detected steps
(--kineto-steps, --kineto-synthetic-launches): on tests/data/sample every ProfilerStep#N holds
the kernels `cupmon-decode steps --by pattern` counts; with HTA on regions of ddp-2rank and the
sample, kernels get the iterations of their steps, trace diff compares ranks and iteration ranges,
and launch statistics do not change with the synthetic events. Exits 77 (skipped, with the
reason) after the first part when HTA or one of its modules is missing.

usage: kineto_export_test.py --decode BIN --make-sample BIN --source REPO [--shared DIR]
"""
import argparse
import bisect
import collections
import csv
import io
import math
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from export_checks import check, failures, sanitizer_clean

SKIP = 77
RANK_RE = re.compile(r'"rank":\s+(\d+)')  # hta/common/trace_file.py
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
API_CATS = {"cuda_runtime", "cuda_driver"}
SYNTHETIC_CAT = "cupmon_synthetic"  # --kineto-synthetic-launches (export/kineto/kineto_exporter.h)
SYNTHETIC_NAME = "cupmon: launch not recorded"
STEPS_TID = 0x7ffffffe               # kDetectedStepsTid



def run(decode, args):
    r = subprocess.run([decode, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sanitizer_clean(r.stderr, str(args))
    return r


def export(decode, inputs, out, extra=(), want=(0, 1), kineto=()):
    r = run(decode, ["export", *inputs, "--format", "kineto", "-o", out, *extra, *kineto])
    check(r.returncode in want, f"export {inputs} {extra} exited {r.returncode}, want {want}: "
          f"{r.stderr[-3000:]}")
    check(r.stdout == "", f"export {extra} wrote to standard output: {r.stdout[:200]}")
    return r


def hta_rank(path):
    """The rank as HTA finds it: the first line where its regular expression matches."""
    with open(path) as f:
        for line in f:
            m = RANK_RE.search(line)
            if m:
                return int(m.group(1))
    return None


def jsonl(decode, inputs, extra, work, label):
    """The decoder's rows by rank (from the JSONL export of the same inputs and filters)."""
    path = os.path.join(work, label + ".jsonl")
    r = run(decode, ["export", *inputs, "--format", "jsonl", "-o", path, *extra])
    check(r.returncode in (0, 1), f"jsonl export exited {r.returncode}: {r.stderr[-2000:]}")
    rows = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            rows[row.get("rank", 0)].append(row)
    os.remove(path)  # ddp-2rank's is 341 MB, and CI's disk is not large
    return rows


def want_events(rows):
    """What each decoder row must be in the trace: (category, name, start ns, duration ns, ...)."""
    want = collections.Counter()
    for row in rows:
        if row["start_ns"] is None:
            continue  # no time: not on a timeline
        if row["type"] == "api":
            cat = "cuda_driver" if row["kind"] == 4 else "cuda_runtime"
            want[(cat, row["name"], row["start_ns"], row["duration_ns"], row["pid"], row["tid"],
                  row["correlation_id"])] += 1
            continue
        name = row["name"]
        if row["type"] == "memcpy":
            name = "Memcpy " + name[len("[CUDA memcpy "):-1]
        elif row["type"] == "memset":
            name = "Memset"
        cat = {v: k for k, v in GPU_CATS.items()}[row["type"]]
        want[(cat, name, row["start_ns"], row["duration_ns"], row["device"], row["stream"],
              row["correlation_id"])] += 1
    return want


def ns(base, us):
    return base + round(us * 1000)


def check_trace(path, rank, rows, label):
    """One rank's file against the decoder's rows; returns (trace, kernels by count)."""
    name = os.path.basename(path)
    check(hta_rank(path) == rank, f"{label}: HTA's regular expression reads rank "
          f"{hta_rank(path)} in {name}, want {rank}")
    with open(path) as f:
        trace = json.load(f)
    check(trace.get("schemaVersion") == 1, f"{label}: schemaVersion {trace.get('schemaVersion')}")
    info = trace.get("distributedInfo", {})
    check(info.get("rank") == rank, f"{label}: distributedInfo {info}")
    check(trace.get("traceName") == name, f"{label}: traceName {trace.get('traceName')}")
    base = trace["baseTimeNanoseconds"]
    events = trace["traceEvents"]
    check(events and events[0].get("ph") == "M",
          f"{label}: the first event is not metadata (HTA reads index 0 as 'no event')")
    got = collections.Counter()
    starts, ends = {}, collections.Counter()
    gpu_pids = set()
    for e in events:
        ph, cat, args = e.get("ph"), e.get("cat"), e.get("args", {})
        if ph == "X":
            check("ts" in e and "dur" in e and e["dur"] >= 0, f"{label}: bad slice {e}")
            if cat in GPU_CATS:
                check(args.get("stream") == e["tid"], f"{label}: stream {args.get('stream')} on "
                      f"tid {e['tid']}")
                gpu_pids.add((e["pid"], args.get("device")))
                got[(cat, e["name"], ns(base, e["ts"]), round(e["dur"] * 1000), args["device"],
                     args["stream"], args["correlation"])] += 1
            elif cat in API_CATS:
                check("stream" not in args, f"{label}: a CPU call has a stream (HTA would take it "
                      "for GPU work)")
                got[(cat, e["name"], ns(base, e["ts"]), round(e["dur"] * 1000), e["pid"], e["tid"],
                     args["correlation"])] += 1
            else:
                check(cat in ("user_annotation", "Trace", SYNTHETIC_CAT),
                      f"{label}: unexpected category {cat}")
                check("stream" not in args, f"{label}: {cat} event with a stream")
        elif ph == "s":
            check(e["id"] not in starts, f"{label}: flow {e['id']} starts twice")
            starts[e["id"]] = e
        elif ph == "f":
            ends[e["id"]] += 1
            check(e.get("bp") == "e", f"{label}: flow end without bp=e")
        else:
            check(ph == "M", f"{label}: unexpected phase {ph}")
    for pid, device in gpu_pids:
        check(pid in (device, 1000000 + device), f"{label}: device {device} under pid {pid}")
    want = want_events(rows)
    check(got == want, f"{label}: events differ from the decoder's rows: "
          f"{sum((want - got).values())} missing, {sum((got - want).values())} extra; e.g. "
          f"missing {list((want - got).items())[:2]} extra {list((got - want).items())[:2]}")
    check(set(ends) == set(starts) and all(n == 1 for n in ends.values()),
          f"{label}: {len(starts)} flow starts, {len(ends)} flow ends do not pair up")
    joined = sum(1 for row in rows if row["type"] != "api" and row["start_ns"] is not None
                 and "start_ns" in row.get("api", {}))
    check(len(starts) == joined, f"{label}: {len(starts)} flows, {joined} GPU rows with a timed "
          "launch call")
    kernels = collections.Counter(k[1] for k, n in want.items() for _ in range(n)
                                  if k[0] == "kernel")
    print(f"{label}: {name} rank {rank}: {sum(want.values())} rows as events "
          f"({sum(kernels.values())} kernels), {len(starts)} flows")
    return trace, kernels


def check_export(decode, inputs, extra, work, label, want_ranks, kineto=()):
    out = os.path.join(work, label)
    r = export(decode, inputs, out, extra, kineto=kineto)
    files = sorted(os.listdir(out))
    check(files == [f"rank{n}.json" for n in want_ranks], f"{label}: files {files}")
    for n in want_ranks:
        check(f"wrote {os.path.join(out, f'rank{n}.json')}" in r.stderr,
              f"{label}: no 'wrote' line for rank {n}: {r.stderr[-1000:]}")
    rows = jsonl(decode, inputs, extra, work, label)
    check(sorted(rows) == list(want_ranks), f"{label}: JSONL ranks {sorted(rows)}")
    traces, kernels = {}, {}
    bases = set()
    for n in want_ranks:
        traces[n], kernels[n] = check_trace(os.path.join(out, f"rank{n}.json"), n, rows[n],
                                            f"{label} rank {n}")
        bases.add(traces[n]["baseTimeNanoseconds"])
    check(len(bases) == 1, f"{label}: ranks on different time bases {bases}")
    return out, traces, kernels, r


def bad_inputs(decode, ddp, steps, work):
    # No -o: a usage error.
    r = run(decode, ["export", steps, "--format", "kineto"])
    check(r.returncode == 2 and "give -o DIR" in r.stderr, f"no -o: {r.returncode} {r.stderr}")
    # DIR is a file, or under a file: exit 2 before reading.
    plain = os.path.join(work, "plain-file")
    with open(plain, "w") as f:
        f.write("x")
    r = export(decode, [steps], plain, want=(2,))
    check("not a directory" in r.stderr, f"DIR is a file: {r.stderr}")
    r = export(decode, [steps], os.path.join(plain, "sub"), want=(2,))
    check("cannot create" in r.stderr, f"DIR under a file: {r.stderr}")
    if os.geteuid() != 0:
        ro = os.path.join(work, "read-only")
        os.mkdir(ro, 0o555)
        r = export(decode, [steps], ro, want=(2,))
        check("cannot write" in r.stderr, f"read-only DIR: {r.stderr}")
        os.chmod(ro, 0o755)
    else:
        print("bad inputs: running as root, so the read-only directory case is left out "
              "(root writes anywhere; the file cases above still fail)")
    # A directory where rank0.json.tmp is a directory: that rank fails, exit 2, no rank0.json.
    blocked = os.path.join(work, "blocked")
    os.makedirs(os.path.join(blocked, "rank0.json.tmp"))
    r = export(decode, [steps], blocked, want=(2,))
    check("cannot create" in r.stderr and not os.path.exists(os.path.join(blocked, "rank0.json")),
          f"blocked rank0: {r.stderr}")
    check(os.path.exists(os.path.join(blocked, "rank1.json")), "blocked rank0: rank1 not written")

    # A region with no rows: exit 0, a note per rank, traces without events that HTA still ranks.
    empty = os.path.join(work, "empty")
    r = export(decode, [ddp], empty, ["--from", "1h"], want=(0,))
    check(r.stderr.count("no rows in the region") == 2, f"empty region: {r.stderr[-1500:]}")
    for n in (0, 1):
        path = os.path.join(empty, f"rank{n}.json")
        check(hta_rank(path) == n, f"empty region: rank of {path}")
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        rowlike = [e for e in events if e.get("cat") in GPU_CATS or e.get("cat") in API_CATS]
        check(not rowlike, f"empty region: {len(rowlike)} row events in rank {n}")

    # Damaged input: rank 1's file with 64 KiB overwritten mid-file. Exit 1 with the damage
    # reported; both traces still whole JSON, rank 0 as without damage.
    damaged = os.path.join(work, "damaged-in")
    os.mkdir(damaged)
    names = sorted(n for n in os.listdir(ddp) if n.endswith(".cupmon"))
    for n in names:
        shutil.copy(os.path.join(ddp, n), damaged)
    victim = os.path.join(damaged, next(n for n in names if "-vm-1612-" in n))
    size = os.path.getsize(victim)
    with open(victim, "r+b") as f:
        f.seek(size * 2 // 5)
        f.write(b"\xa5" * 65536)
    cut = ["--window", "1"]
    _, _, clean_k, _ = check_export(decode, [ddp], cut, work, "window1", (0, 1))
    out, traces, kernels, r = check_export(decode, [damaged], cut, work, "damaged", (0, 1))
    check(r.returncode == 1 and "damaged" in r.stderr, f"damaged: exit {r.returncode}, "
          f"{r.stderr[-1500:]}")
    check(kernels[0] == clean_k[0], "damaged: rank 0 differs from the undamaged export")
    check(sum(kernels[1].values()) <= sum(clean_k[1].values()), "damaged: rank 1 grew")
    print(f"damaged: rank 1 kept {sum(kernels[1].values())} of {sum(clean_k[1].values())} "
          "kernels in window 1")
    for done in ("window1", "damaged", "damaged-in"):  # CI's disk is not large
        shutil.rmtree(os.path.join(work, done))

    # Another trace in DIR: a warning (HTA would read it as a rank), exit 1.
    stale = os.path.join(work, "stale")
    os.mkdir(stale)
    with open(os.path.join(stale, "rank7.json"), "w") as f:
        f.write("{}")
    r = export(decode, [steps], stale, want=(1,))
    check("rank7.json is not from this export" in r.stderr, f"stale file: {r.stderr}")


def import_hta(shared):
    root = os.path.join(shared, "third_party", "hta")
    if not os.path.isdir(os.path.join(root, "hta")):
        print(f"SKIP: {root} is absent (HTA is a test tool kept in ../shared; a user's checkout "
              "has none)")
        sys.exit(SKIP)
    sys.path.insert(0, root)
    try:
        import warnings
        warnings.filterwarnings("ignore")
        from hta.trace_analysis import TraceAnalysis
        from hta.trace_diff import LabeledTrace, TraceDiff
    except ImportError as e:
        print(f"SKIP: HTA cannot be imported ({e}); Debian: python3-pandas python3-plotly "
              "python3-networkx python3-pydot python3-yaml python3-psutil (tools/install-deps)")
        sys.exit(SKIP)
    import logging
    logging.getLogger("hta").setLevel(logging.ERROR)
    return TraceAnalysis, LabeledTrace, TraceDiff


def hta_kernels(analysis, rank):
    """HTA's kernels of one rank by name (its events of category "kernel")."""
    df = analysis.t.get_trace(rank)
    sym = analysis.t.symbol_table.get_sym_table()
    kernel_cat = analysis.t.symbol_table.get_sym_id_map()["kernel"]
    return collections.Counter(sym[i] for i in df[df["cat"] == kernel_cat]["name"]), df


def hta_on_ddp(hta, out, kernels):
    TraceAnalysis, LabeledTrace, TraceDiff = hta
    a = TraceAnalysis(trace_dir=out)
    check(a.t.get_ranks() == [0, 1], f"HTA ranks {a.t.get_ranks()}")
    for rank in (0, 1):
        got, _ = hta_kernels(a, rank)
        check(got == kernels[rank], f"HTA rank {rank}: {sum(got.values())} kernels, the decoder "
              f"{sum(kernels[rank].values())}")
    nccl = {r: sum(n for k, n in kernels[r].items() if k.startswith("nccl")) for r in (0, 1)}
    print(f"HTA: ranks {a.t.get_ranks()}, kernels {[sum(kernels[r].values()) for r in (0, 1)]} "
          f"as the decoder's ({nccl[0]} and {nccl[1]} NCCL)")
    check(a.get_profiler_steps() == [], "ddp-2rank has no annotated steps, yet HTA found some")

    temporal = a.get_temporal_breakdown(visualize=False)
    check(list(temporal["rank"]) == [0, 1], f"temporal breakdown ranks {list(temporal['rank'])}")
    for _, row in temporal.iterrows():
        check(row["kernel_time(us)"] > 0 and row["idle_time(us)"] >= 0 and
              abs(row["idle_time_pctg"] + row["compute_time_pctg"] +
                  row["non_compute_time_pctg"] - 100) < 0.1, f"temporal breakdown row {dict(row)}")
    print("HTA temporal breakdown:\n" + temporal.to_string())

    idle, _ = a.get_idle_time_breakdown(ranks=[0, 1], visualize=False)
    check(set(idle["rank"]) == {0, 1} and (idle["idle_time"] >= 0).all(),
          f"idle time breakdown: {idle}")
    print(f"HTA idle-time breakdown: {len(idle)} rows over streams "
          f"{sorted(set(idle['stream']))}")

    overlap = a.get_comm_comp_overlap(visualize=False)
    check(list(overlap["rank"]) == [0, 1] and
          overlap["comp_comm_overlap_pctg"].between(0, 100).all(),
          f"communication/computation overlap: {overlap}")
    print("HTA communication/computation overlap:\n" + overlap.to_string())

    by_type, by_kernel = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=100)
    types = dict(zip(by_type["kernel_type"], by_type["sum"]))
    check(types.get("COMMUNICATION", 0) > 0, f"kernel breakdown has no communication: {types}")
    for _, row in by_kernel.iterrows():
        is_nccl = row["name"].startswith("nccl")
        check(is_nccl == (row["kernel_type"] == "COMMUNICATION"),
              f"kernel breakdown: {row['name'][:60]} is {row['kernel_type']}")
    comm = by_kernel[by_kernel["kernel_type"] == "COMMUNICATION"]
    check(len(comm) > 0 and all(n.startswith("nccl") for n in comm["name"]),
          "kernel breakdown: the communication kernels are not the NCCL ones")
    print("HTA kernel breakdown by type:\n" + by_type.to_string())

    # Trace diff compares iterations, and this export has no steps (--kineto-steps none): HTA
    # refuses. With detected steps it compares them (hta_on_detected).
    try:
        TraceDiff.compare_traces(LabeledTrace(label="rank0", trace_dir=out),
                                 LabeledTrace(label="rank1", trace_dir=out),
                                 control_rank=0, test_rank=1)
        check(False, "HTA's trace diff ran on ddp-2rank without iterations")
    except ValueError as e:
        check("iteration" in str(e), f"trace diff on ddp-2rank: {e}")
        print(f"HTA trace diff on ddp-2rank without steps: {e} (see the detected steps below)")


def hta_on_steps(hta, out, kernels):
    TraceAnalysis, LabeledTrace, TraceDiff = hta
    a = TraceAnalysis(trace_dir=out, include_last_profiler_step=True)
    check(a.t.get_ranks() == [0, 1], f"steps: HTA ranks {a.t.get_ranks()}")
    check(a.get_profiler_steps() == [1, 2, 3, 4], f"steps: HTA iterations {a.get_profiler_steps()}")
    for rank in (0, 1):
        got, df = hta_kernels(a, rank)
        check(got == kernels[rank], f"steps: HTA rank {rank} kernels {got}, decoder "
              f"{kernels[rank]}")
        gpu = df[df["stream"] >= 0]
        check(len(gpu) > 0 and set(gpu["iteration"]) == {1, 2, 3, 4},
              f"steps: rank {rank} GPU iterations {sorted(set(gpu['iteration']))}")
    for f in (a.get_temporal_breakdown, a.get_comm_comp_overlap):
        check(len(f(visualize=False)) == 2, f"steps: {f.__name__}")
    diff = TraceDiff.compare_traces(LabeledTrace(label="rank0", trace_dir=out),
                                    LabeledTrace(label="rank1", trace_dir=out),
                                    control_rank=0, test_rank=1,
                                    control_iteration=3, test_iteration=3)
    changed = {name: int(n) for name, n in diff["diff_counts"].items() if n}
    check(changed == {"void gemm_tiled<16>(float const*, float const*, float*, int)": 1,
                      "cudaLaunchKernel": 1}, f"trace diff of step 3: {changed}")
    nccl = [name for name in diff.index if name.startswith("nccl")]
    check(len(nccl) == 1 and diff.loc[nccl[0], "diff_counts"] == 0, f"trace diff: nccl {nccl}")
    print(f"HTA on the annotated job: iterations {a.get_profiler_steps()}; trace diff of step 3, "
          f"rank 1 against rank 0: {changed}")


def step_kernels(decode, inputs):
    """`cupmon-decode steps --by pattern --format csv`: kernels by (rank, step)."""
    r = run(decode, ["steps", *inputs, "--by", "pattern", "--format", "csv"])
    check(r.returncode in (0, 1), f"steps {inputs} exited {r.returncode}: {r.stderr[-1000:]}")
    return {(int(row["rank"]), int(row["step"])): int(row["kernels"])
            for row in csv.DictReader(io.StringIO(r.stdout))}


def detected_in(trace, label, want_synthetic):
    """One trace's detected steps and synthetic launches, checked; returns (steps as (number,
    start ns, end ns) in order, kernels by step by start time, the launch calls' start ns by
    correlation, the synthetic correlation ids, launched kernels whose call is in no step)."""
    base = trace["baseTimeNanoseconds"]
    events = trace["traceEvents"]
    steps, api_corr, synthetic, hta_steps = [], {}, collections.Counter(), []
    synthetic_ts = {}
    for e in events:
        args = e.get("args", {})
        if e.get("name", "").startswith("ProfilerStep#"):
            check(args.get("source") == "cupmon-detected" and e["tid"] == STEPS_TID and
                  e["cat"] == "user_annotation", f"{label}: step {e}")
            steps.append((int(e["name"][len("ProfilerStep#"):]), ns(base, e["ts"]),
                          ns(base, e["ts"]) + round(e["dur"] * 1000)))
            # As HTA reads it: start rounded up, end down to whole microseconds
            # (trace_parser.round_down_time_stamps), which leaves gaps under 1 us between steps.
            hta_steps.append((math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])))
        elif e.get("cat") in API_CATS:
            api_corr[args["correlation"]] = e["ts"]
        elif e.get("cat") == SYNTHETIC_CAT:
            check(e["name"] == SYNTHETIC_NAME and e["dur"] == 0 and
                  args.get("synthetic") is True and "stream" not in args and
                  e["tid"] == STEPS_TID, f"{label}: synthetic event {e}")
            synthetic[args["correlation"]] += 1
            synthetic_ts[args["correlation"]] = e["ts"]
    names = [e for e in events if e.get("ph") == "M" and e.get("tid") == STEPS_TID]
    check(len(names) == 1 and names[0]["args"]["name"] == "cupmon: detected steps",
          f"{label}: the steps thread's name {names}")
    numbers = [s[0] for s in steps]
    check(numbers and numbers == list(range(numbers[0], numbers[0] + len(numbers))),
          f"{label}: step numbers {numbers[:5]}...")
    check(all(a[2] <= b[1] for a, b in zip(steps, steps[1:])), f"{label}: steps overlap")
    starts = [s[1] for s in steps]
    by_start, outside = collections.Counter(), 0
    for e in events:
        if e.get("cat") not in GPU_CATS:
            continue
        corr = e["args"]["correlation"]
        has_api = corr in api_corr
        if want_synthetic:
            check(synthetic[corr] == (0 if has_api else 1) and
                  (has_api or synthetic_ts[corr] == e["ts"]),
                  f"{label}: {synthetic[corr]} synthetic launches for correlation {corr} "
                  f"(launch record: {has_api})")
        if e["cat"] != "kernel":
            continue
        # HTA numbers a launched kernel by its call: none when the call, rounded up to a whole
        # microsecond, is in no step (before the first, or in a rounding gap).
        if has_api:
            c = math.ceil(api_corr[corr])
            outside += not any(a <= c < b for a, b in hta_steps)
        t = ns(base, e["ts"])
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t < steps[i][2]:
            by_start[steps[i][0]] += 1
    if not want_synthetic:
        check(not synthetic, f"{label}: synthetic launches without the flag")
    return steps, by_start, api_corr, set(synthetic), outside


def detected_steps(decode, ddp, sample, work):
    """Detected steps in the export without HTA; returns what hta_on_detected reads."""
    # Bad flags: usage errors that name the flag.
    r = run(decode, ["export", sample, "--format", "kineto", "-o", os.path.join(work, "x"),
                     "--kineto-steps", "bogus"])
    check(r.returncode == 2 and "--kineto-steps" in r.stderr, f"--kineto-steps bogus: "
          f"{r.returncode} {r.stderr[-500:]}")
    for flag in (["--kineto-steps", "detected"], ["--kineto-synthetic-launches"]):
        r = run(decode, ["export", sample, "--format", "jsonl", "-o", os.devnull, *flag])
        check(r.returncode == 2 and "apply to export --format kineto only" in r.stderr,
              f"{flag} with jsonl: {r.returncode} {r.stderr[-500:]}")

    # The whole sample, default flags (auto: no step annotations, so detected steps): every one
    # of `steps`' steps, holding exactly its kernels by start time; no synthetic launches.
    out = os.path.join(work, "sample-auto")
    export(decode, [sample], out)
    with open(os.path.join(out, "rank0.json")) as f:
        steps, by_start, _, _, _ = detected_in(json.load(f), "sample auto", False)
    got = {(0, n): c for n, c in by_start.items()}
    sample_want = step_kernels(decode, [sample])
    check(len(steps) == len(sample_want) == 820, f"sample: {len(steps)} ProfilerStep#N, steps "
          f"finds {len(sample_want)}")
    check(got == sample_want, f"sample: kernels per step differ from `steps` in "
          f"{sum(1 for k in sample_want if got.get(k) != sample_want[k])} steps")
    print(f"sample: {len(steps)} detected steps as ProfilerStep#N, kernels per step as `steps`")
    wants = {"ddp": step_kernels(decode, [ddp]), "sample": sample_want}
    # --kineto-steps annotation on the sample, which has no step annotations: no steps.
    export(decode, [sample], os.path.join(work, "sample-annotation"),
           kineto=["--kineto-steps", "annotation"])
    with open(os.path.join(work, "sample-annotation", "rank0.json")) as f:
        names = [e for e in json.load(f)["traceEvents"] if e.get("name", "").startswith("Prof")]
    check(not names, f"--kineto-steps annotation on the sample: {len(names)} steps")

    # Regions for HTA, with and without synthetic launches: ddp-2rank at 11 s (no launch
    # records there) and the sample's first window (launch records for some kernels).
    regions = {}
    for label, inputs, extra, ranks in (("ddp", [ddp], ["--from", "11s", "--to", "11.1s"], (0, 1)),
                                        ("sample", [sample], ["--window", "1", "--limit", "8000"],
                                         (0,))):
        for synthetic in (True, False):
            name = f"{label}-detected{'-synthetic' if synthetic else ''}"
            kineto = ["--kineto-steps", "detected"] + (["--kineto-synthetic-launches"]
                                                       if synthetic else [])
            out, traces, _, r = check_export(decode, inputs, extra, work, name, ranks, kineto)
            check(("launch record got a zero-length" in r.stderr) == synthetic,
                  f"{name}: the note on synthetic launches: {r.stderr[-800:]}")
            info = {n: detected_in(traces[n], f"{name} rank {n}", synthetic) for n in ranks}
            want = wants[label]
            # Every step but the first and last (cut by the region) holds `steps`' kernels.
            for n, (steps, by_start, _, _, _) in info.items():
                inner = [s[0] for s in steps[1:-1]]
                check(len(inner) >= 5, f"{name} rank {n}: {len(inner)} whole steps")
                bad = [s for s in inner if by_start[s] != want.get((n, s))]
                check(not bad, f"{name} rank {n}: kernels by start differ from `steps` in steps "
                      f"{bad[:5]}")
            regions[name] = (out, info, want)
    return regions


def hta_on_detected(hta, detected):
    TraceAnalysis, LabeledTrace, TraceDiff = hta
    regions = detected
    # ddp-2rank at 11 s: no launch records, so every kernel's iteration comes through its
    # synthetic launch, and HTA's kernels per iteration are `steps`' kernels per step.
    out, info, want = regions["ddp-detected-synthetic"]
    a = TraceAnalysis(trace_dir=out, include_last_profiler_step=True)
    iters = {}
    for rank in (0, 1):
        steps = [s[0] for s in info[rank][0]]
        check(a.get_profiler_steps() == steps or rank == 1, f"ddp: HTA iterations "
              f"{a.get_profiler_steps()[:3]}..., the export's {steps[:3]}...")
        _, df = hta_kernels(a, rank)
        kcat = a.t.symbol_table.get_sym_id_map()["kernel"]
        per_iter = collections.Counter(df[df["cat"] == kcat]["iteration"])
        check(per_iter[-1] == 0, f"ddp rank {rank}: {per_iter[-1]} kernels without iteration")
        inner = steps[1:-1]
        bad = [s for s in inner if per_iter[s] != want[(rank, s)]]
        check(not bad, f"ddp rank {rank}: HTA's kernels per iteration differ from `steps` in "
              f"{[(s, per_iter[s], want[(rank, s)]) for s in bad[:5]]}")
        iters[rank] = inner
        print(f"HTA ddp rank {rank}: iterations {inner[0]}..{inner[-1]} hold `steps`' kernels "
              f"({sum(per_iter[s] for s in inner)} kernels, none at -1)")
    temporal = a.get_temporal_breakdown(visualize=False)
    check(list(temporal["rank"]) == [0, 1] and (temporal["kernel_time(us)"] > 0).all(),
          f"ddp detected: temporal breakdown {temporal}")
    idle, _ = a.get_idle_time_breakdown(ranks=[0, 1], visualize=False)
    check(set(idle["rank"]) == {0, 1}, f"ddp detected: idle time {idle}")
    by_type, _ = a.get_gpu_kernel_breakdown(visualize=False)
    check("COMMUNICATION" in set(by_type["kernel_type"]), f"ddp detected: kernels {by_type}")
    # Trace diff, rank 1 against rank 0 in one step (before: refused, no iterations).
    step = iters[0][len(iters[0]) // 2]
    diff = TraceDiff.compare_traces(LabeledTrace(label="rank0", trace_dir=out),
                                    LabeledTrace(label="rank1", trace_dir=out),
                                    control_rank=0, test_rank=1,
                                    control_iteration=step, test_iteration=step)
    kernel_names = set(hta_kernels(a, 0)[0]) | set(hta_kernels(a, 1)[0])
    for rank, col in ((0, "rank0_counts"), (1, "rank1_counts")):
        got = int(sum(n for name, n in diff[col].items() if name in kernel_names))
        check(got == want[(rank, step)], f"ddp trace diff of step {step}: rank {rank} "
              f"{got} kernels, `steps` {want[(rank, step)]}")
    check(SYNTHETIC_NAME in diff.index, "ddp trace diff: the synthetic launches are not listed "
          "(docs/DECODER.md says trace diff shows them as a CPU operator)")
    changed = {name: int(n) for name, n in diff["diff_counts"].items() if n}
    print(f"HTA trace diff of detected step {step}, ddp rank 1 against rank 0: "
          f"{want[(0, step)]} and {want[(1, step)]} kernels, changed {changed}")

    # The sample's window 1: kernels with a launch record take the iteration of the call (HTA's
    # rule); the others, through their synthetic launch, the step they start in.
    out, info, want = regions["sample-detected-synthetic"]
    plain_out = regions["sample-detected"][0]
    a = TraceAnalysis(trace_dir=out, include_last_profiler_step=True)
    steps, by_start, api_corr, synthetic, outside = info[0]
    _, df = hta_kernels(a, 0)
    kcat = a.t.symbol_table.get_sym_id_map()["kernel"]
    k = df[df["cat"] == kcat]
    via = collections.Counter(k[k["correlation"].isin(synthetic)]["iteration"])
    check(via[-1] == 0 and sum(via.values()) > 0, f"sample: {via[-1]} of the kernels without "
          "a launch record have no iteration")
    launched = k[k["correlation"].isin(list(api_corr))]
    # Those whose call lies before the first step's span (the region cuts into a step) have none.
    unnumbered = int((launched["iteration"] < 0).sum())
    check(len(launched) > 0 and unnumbered == outside,
          f"sample: {unnumbered} kernels with a launch record without iteration, {outside} with "
          "the call outside every step")
    inner = [s[0] for s in steps[1:-1]]
    # Kernels per iteration: via synthetic launches plus via launch calls. The launch calls run
    # ahead of the GPU, so a call can sit in the previous step's span: per step these differ
    # from `steps` by at most the launched kernels, and in sum over the whole steps not at all
    # but for the edges.
    allk = collections.Counter(k["iteration"])
    moved = sum(abs(allk[s] - want[(0, s)]) for s in inner)
    check(moved <= len(launched), f"sample: {moved} kernels in other iterations than `steps`'")
    print(f"HTA sample window 1: {sum(via.values())} kernels without a launch record in "
          f"iterations by start, {len(launched)} by their launch call ({moved} counted in a "
          f"neighbouring step, {unnumbered} with the call in no step as HTA rounds it)")
    # Launch statistics: the same with and without the synthetic events.
    plain = TraceAnalysis(trace_dir=plain_out, include_last_profiler_step=True)
    with_syn = a.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
    without = plain.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)[0]
    check(len(with_syn) > 0 and with_syn.reset_index(drop=True).equals(
        without.reset_index(drop=True)), f"sample: launch statistics change with synthetic "
          f"launches: {len(with_syn)} rows, {len(without)} without")
    # Trace diff of two ranges of iterations of one rank.
    first, second = inner[:3], inner[3:6]
    diff = TraceDiff.compare_traces(LabeledTrace(label="early", trace_dir=out),
                                    LabeledTrace(label="late", trace_dir=out),
                                    control_rank=0, test_rank=0,
                                    control_iteration=first, test_iteration=second)
    names = set(hta_kernels(a, 0)[0])
    early = int(sum(n for name, n in diff["early_counts"].items() if name in names))
    check(early == sum(allk[s] for s in first), f"sample trace diff: {early} kernels in "
          f"iterations {first}, HTA's trace {sum(allk[s] for s in first)}")
    print(f"HTA sample: launch statistics unchanged by synthetic launches ({len(with_syn)} "
          f"launches); trace diff of iterations {first} against {second} ran ({early} kernels)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--make-sample", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--shared")
    a = ap.parse_args()
    shared = a.shared or os.path.join(a.source, "..", "shared")
    with tempfile.TemporaryDirectory() as work:
        ddp = os.path.join(a.source, "tests", "data", "ddp-2rank")
        sample = os.path.join(a.source, "tests", "data", "sample")
        steps = os.path.join(work, "steps-in")
        subprocess.run([a.make_sample, "--annotated-steps", steps], check=True, stdout=subprocess.DEVNULL)

        # Without HTA: the files, every row, flows, steps, bad inputs.
        # Without steps: HTA numbers events by a Python loop over the steps for each event, and
        # the whole of ddp-2rank with its 1520 detected steps a rank takes minutes to load.
        ddp_out, _, ddp_kernels, _ = check_export(a.decode, [ddp], [], work, "ddp-2rank", (0, 1),
                                                  kineto=["--kineto-steps", "none"])
        steps_out, traces, steps_kernels, _ = check_export(a.decode, [steps], [], work, "steps",
                                                           (0, 1))
        for n in (0, 1):
            names = sorted(e["name"] for e in traces[n]["traceEvents"]
                           if e.get("cat") == "user_annotation")
            check(names == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3",
                            "ProfilerStep#4"] + ["forward"] * 4,
                  f"steps rank {n}: annotations {names}")
        bad_inputs(a.decode, ddp, steps, work)
        detected = detected_steps(a.decode, ddp, sample, work)
        if failures:
            print(f"{len(failures)} check(s) failed")
            return 1

        hta = import_hta(shared)
        hta_on_ddp(hta, ddp_out, ddp_kernels)
        hta_on_steps(hta, steps_out, steps_kernels)
        hta_on_detected(hta, detected)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
