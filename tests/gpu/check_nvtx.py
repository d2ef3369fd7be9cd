#!/usr/bin/env python3
"""NVTX ranges on a real GPU (issue 19): tests/gpu/nvtx_ranges under cupmon-run, then the decoder.

cupmon-run points NVTX_INJECTION64_PATH at libcupti; the program opens a trace window (C API),
names two threads, nests "step N" > "forward"/"backward" push/pop ranges around known kernels,
places a mark, pushes a range of its own domain, a start/end range, and "worker" ranges on a second
thread. Checks on `cupmon-decode export --format jsonl`: every range once with its name, domain and
nesting depth, on the right thread; every ForwardKernel labelled "forward", BackwardKernel
"backward", WorkerKernel "worker", DomainKernel "domain-range", the first OutsideKernel unlabelled;
`summary` lists the ranges. Prints a table; exits 1 on any failure.
Usage: check_nvtx.py --run build/tools/cupmon-run --program build/tests/gpu/nvtx_ranges
                     --decode build/tools/cupmon-decode --out DIR
       check_nvtx.py --recording tests/data/h200-nvtx --decode build/tools/cupmon-decode --out DIR
         (no GPU: checks a recording the program made on the H200, kept in tests/data)
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run")
    ap.add_argument("--program")
    ap.add_argument("--recording", help="check this recording instead of running the program")
    ap.add_argument("--decode", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.recording:
        rec = args.recording
        # What nvtx_ranges.cu prints (its constants).
        want = {"steps": 10, "forward_kernels_per_step": 3, "backward_kernels_per_step": 2,
                "worker_kernels": 5, "outside_kernels": 2, "domain_kernels": 1, "marks": 1}
    else:
        if not args.run or not args.program:
            ap.error("--run and --program are required without --recording")
        rec = os.path.join(args.out, "rec")
        shutil.rmtree(rec, ignore_errors=True)
        env = dict(os.environ)
        env.pop("NVTX_INJECTION64_PATH", None)  # cupmon-run sets it
        r = subprocess.run([args.run, "-o", rec, "--", args.program], capture_output=True, text=True, env=env)
        sys.stderr.write(r.stderr)
        if r.returncode != 0:
            sys.exit(f"nvtx_ranges under cupmon-run exited {r.returncode}")
        want = json.loads(r.stdout.strip().splitlines()[-1])
    rows_path = os.path.join(args.out, "rows.jsonl")
    d = subprocess.run([args.decode, "export", rec, "--format", "jsonl", "-o", rows_path],
                       capture_output=True, text=True)
    if d.returncode not in (0, 1):
        sys.exit(f"cupmon-decode export exited {d.returncode}: {d.stderr}")
    rows = [json.loads(line) for line in open(rows_path)]
    ranges = [x for x in rows if x["type"] == "range"]
    kernels = [x for x in rows if x["type"] == "kernel"]
    results = []  # (check, expected, got, ok)

    def check(name, expected, got):
        results.append((name, expected, got, expected == got))

    by_name = collections.defaultdict(list)
    for x in ranges:
        by_name[x["name"]].append(x)
    steps = want["steps"]
    check("step ranges (depth 0)", steps,
          sum(1 for s in range(steps) for x in by_name.get(f"step {s}", []) if x.get("depth") == 0))
    check("forward ranges (depth 1)", steps, sum(1 for x in by_name.get("forward", []) if x.get("depth") == 1))
    check("backward ranges (depth 1)", steps, sum(1 for x in by_name.get("backward", []) if x.get("depth") == 1))
    check("worker ranges", want["worker_kernels"], len(by_name.get("worker", [])))
    check("mark 'begin'", want["marks"], len(by_name.get("begin", [])))
    dom = by_name.get("domain-range", [])
    check("domain-range in domain cupmon-test", 1, sum(1 for x in dom if x.get("domain") == "cupmon-test"))
    check("start/end range", 1, len(by_name.get("async-range", [])))
    main_tids = {x["tid"] for x in by_name.get("forward", [])}
    worker_tids = {x["tid"] for x in by_name.get("worker", [])}
    check("threads: main and worker distinct", True,
          len(main_tids) == 1 and len(worker_tids) == 1 and main_tids != worker_tids)
    # Nesting: each forward range lies inside one step range of its thread.
    step_spans = [(x["tid"], x["start_ns"], x["end_ns"]) for s in range(steps) for x in by_name.get(f"step {s}", [])]
    inside = sum(1 for f in by_name.get("forward", [])
                 if any(t == f["tid"] and a <= f["start_ns"] and f["end_ns"] <= b for t, a, b in step_spans))
    check("forward ranges inside a step range", steps, inside)

    def labelled(fragment, label):
        ks = [k for k in kernels if fragment in k["name"]]
        return len(ks), sum(1 for k in ks if k.get("range") == label)

    for fragment, label, n in (("ForwardKernel", "forward", steps * want["forward_kernels_per_step"]),
                               ("BackwardKernel", "backward", steps * want["backward_kernels_per_step"]),
                               ("WorkerKernel", "worker", want["worker_kernels"]),
                               ("DomainKernel", "domain-range", want["domain_kernels"])):
        total, good = labelled(fragment, label)
        check(f"{fragment}s", n, total)
        check(f"{fragment}s labelled '{label}'", n, good)
    outside = sorted((k for k in kernels if "OutsideKernel" in k["name"]), key=lambda k: k["start_ns"])
    check("OutsideKernels", want["outside_kernels"], len(outside))
    check("first OutsideKernel unlabelled", True, bool(outside) and "range" not in outside[0])
    second = outside[1].get("range", "(none)") if len(outside) > 1 else "(missing)"
    summary = subprocess.run([args.decode, "summary", rec], capture_output=True, text=True).stdout
    check("summary lists the forward range", True, "forward" in summary and "NVTX" in summary)

    print(f"{'check':44} {'expected':>10} {'got':>10}  result")
    for name, expected, got, ok in results:
        print(f"{name:44} {str(expected):>10} {str(got):>10}  {'ok' if ok else 'FAIL'}")
    print(f"(not checked) the OutsideKernel inside the start/end range carries: {second}")
    print(f"{len(ranges)} range rows, {len(kernels)} kernel rows"
          + ("" if args.recording else "; NVTX_INJECTION64_PATH set by cupmon-run"))
    if not all(ok for *_, ok in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
