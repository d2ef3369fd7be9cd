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
iterations and trace diff finds the kernel rank 1 adds in step 3. Exits 77 (skipped, with the
reason) after the first part when HTA or one of its modules is missing.

usage: kineto_export_test.py --decode BIN --make-sample BIN --source REPO [--shared DIR]
"""
import argparse
import collections
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



def run(decode, args):
    r = subprocess.run([decode, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sanitizer_clean(r.stderr, str(args))
    return r


def export(decode, inputs, out, extra=(), want=(0, 1)):
    r = run(decode, ["export", *inputs, "--format", "kineto", "-o", out, *extra])
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
                check(cat in ("user_annotation", "Trace"), f"{label}: unexpected category {cat}")
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


def check_export(decode, inputs, extra, work, label, want_ranks):
    out = os.path.join(work, label)
    r = export(decode, inputs, out, extra)
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

    # Trace diff compares iterations, and ddp-2rank has no annotated step: HTA refuses. (Detected
    # steps, `cupmon-decode steps`, are to give it some; then this expectation changes.)
    try:
        TraceDiff.compare_traces(LabeledTrace(label="rank0", trace_dir=out),
                                 LabeledTrace(label="rank1", trace_dir=out),
                                 control_rank=0, test_rank=1)
        check(False, "HTA's trace diff ran on ddp-2rank without iterations")
    except ValueError as e:
        check("iteration" in str(e), f"trace diff on ddp-2rank: {e}")
        print(f"HTA trace diff on ddp-2rank: {e} (no steps annotated; see the annotated job)")


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
        steps = os.path.join(work, "steps-in")
        subprocess.run([a.make_sample, "--annotated-steps", steps], check=True, stdout=subprocess.DEVNULL)

        # Without HTA: the files, every row, flows, steps, bad inputs.
        ddp_out, _, ddp_kernels, _ = check_export(a.decode, [ddp], [], work, "ddp-2rank", (0, 1))
        steps_out, traces, steps_kernels, _ = check_export(a.decode, [steps], [], work, "steps",
                                                           (0, 1))
        for n in (0, 1):
            names = sorted(e["name"] for e in traces[n]["traceEvents"]
                           if e.get("cat") == "user_annotation")
            check(names == ["ProfilerStep#1", "ProfilerStep#2", "ProfilerStep#3",
                            "ProfilerStep#4"] + ["forward"] * 4,
                  f"steps rank {n}: annotations {names}")
        bad_inputs(a.decode, ddp, steps, work)
        if failures:
            print(f"{len(failures)} check(s) failed")
            return 1

        hta = import_hta(shared)
        hta_on_ddp(hta, ddp_out, ddp_kernels)
        hta_on_steps(hta, steps_out, steps_kernels)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
