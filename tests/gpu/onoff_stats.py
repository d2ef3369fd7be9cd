#!/usr/bin/env python3
"""Statistics of the in-process on/off benchmark (tools/gpu-bench-onoff, issue 16).

Input: lines "WORKLOAD CLIENT JSON" where JSON is one process's output of tests/gpu/onoff_bench.cu
(or tests/gpu/torch/onoff_bench.py): per cycle the wall and process-CPU seconds of a phase with
CUPTI's always-on kinds off and of one with them on.
Per process, the on/off ratio is the median over its cycles of on/off (a median: a phase hit by
another tenant's burst on the shared machine moves one cycle, not the process's figure). Per client and
workload: the median and range of the processes' ratios. cupmon/floor is exp(mean log r_cupmon -
mean log r_floor) over processes, with a 95% Welch t interval on that difference (processes are
the independent units; cycles inside one process are not). "resolved" says whether the interval's
half-width is within the target (2% by default).
Usage: onoff_stats.py RESULTS [--target-pct 2]      (prints the table; exit 0)
       onoff_stats.py --self-test                    (checks the statistics on made-up data)
"""
import argparse
import collections
import json
import math
import random
import statistics
import sys

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom, then 1.96.
T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
       2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
       2.052, 2.048, 2.045, 2.042]


def t95(df):
    if df < 1:
        return float("inf")
    return T95[min(int(df), 30) - 1] if df <= 30 else 1.96


def process_ratio(cycles, metric):
    logs = [math.log(c[f"on_{metric}_s"] / c[f"off_{metric}_s"]) for c in cycles
            if c[f"off_{metric}_s"] > 0 and c[f"on_{metric}_s"] > 0]
    return math.exp(statistics.median(logs)) if logs else float("nan")


def compare(a, b):
    """exp(mean log a - mean log b) and its 95% Welch interval (lo, hi)."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    d = statistics.fmean(la) - statistics.fmean(lb)
    if len(la) < 2 or len(lb) < 2:
        return math.exp(d), 0.0, float("inf")
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / (len(la) - 1) if va else 0) + (vb ** 2 / (len(lb) - 1) if vb else 0)) \
        if va + vb > 0 else 1e9
    h = t95(df) * se
    return math.exp(d), math.exp(d - h), math.exp(d + h)


def table(lines, target_pct):
    runs = collections.defaultdict(list)  # (workload, client) -> [json]
    for line in lines:
        if not line.strip():
            continue
        workload, client, js = line.split(" ", 2)
        runs[(workload, client)].append(json.loads(js))
    out = []
    workloads = sorted({w for w, _ in runs})
    for metric in ("wall", "cpu"):
        out.append(f"on/off ratio of {metric} time: median (range) over processes; cupmon/floor "
                   f"with its 95% interval")
        out.append(f"{'workload':10} {'n':>3} {'floor':>22} {'cupmon':>22} {'cupmon/floor':>14} "
                   f"{'95% interval':>17} {'half-width':>10}  resolved")
        for w in workloads:
            r = {c: [process_ratio(p["cycles"], metric) for p in runs.get((w, c), [])]
                 for c in ("floor", "cupmon")}
            if not r["floor"] or not r["cupmon"]:
                continue
            ratio, lo, hi = compare(r["cupmon"], r["floor"])
            half = 100.0 * (hi - lo) / 2 / ratio
            cell = {c: f"{statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})" for c, v in r.items()}
            out.append(f"{w:10} {min(len(r['floor']), len(r['cupmon'])):3d} {cell['floor']:>22} "
                       f"{cell['cupmon']:>22} {ratio:14.4f} {f'{lo:.4f}-{hi:.4f}':>17} "
                       f"{f'±{half:.2f}%':>10}  {'yes' if half <= target_pct else 'no'}")
        out.append("")
    return "\n".join(out)


def self_test():
    rng = random.Random(7)
    failures = []

    def fake(true_ratio, noise, procs, cycles=10):
        res = []
        for _ in range(procs):
            proc_bias = math.exp(rng.gauss(0, noise))
            cs = []
            for _ in range(cycles):
                off = 0.1 * math.exp(rng.gauss(0, noise))
                on = off * true_ratio * proc_bias * math.exp(rng.gauss(0, noise))
                cs.append({"off_wall_s": off, "on_wall_s": on, "off_cpu_s": off, "on_cpu_s": on})
            res.append({"cycles": cs})
        return res

    # A small noise, many processes: the estimate is close and the interval holds the truth.
    floor = [process_ratio(p["cycles"], "wall") for p in fake(1.20, 0.01, 20)]
    cupmon = [process_ratio(p["cycles"], "wall") for p in fake(1.14, 0.01, 20)]
    ratio, lo, hi = compare(cupmon, floor)
    truth = 1.14 / 1.20
    if not lo <= truth <= hi:
        failures.append(f"interval {lo:.4f}-{hi:.4f} misses the true {truth:.4f}")
    if abs(ratio - truth) > 0.01:
        failures.append(f"estimate {ratio:.4f} is not within 1% of {truth:.4f}")
    if (hi - lo) / 2 / ratio > 0.02:
        failures.append("a 1% noise over 20 processes should resolve 2%")
    # Large noise, few processes: the interval is wide and the table says "no".
    lines = [f"loop1 floor {json.dumps(p)}" for p in fake(1.2, 0.15, 3)] + \
            [f"loop1 cupmon {json.dumps(p)}" for p in fake(1.2, 0.15, 3)]
    t = table(lines, 2.0)
    row = next((l for l in t.splitlines() if l.startswith("loop1")), "")
    if not row.endswith("no"):
        failures.append(f"a noisy 3-process run was reported resolved: {row}")
    # Coverage: over 200 repetitions the 95% interval holds the truth at least 90% of the time.
    hits = 0
    for _ in range(200):
        f = [process_ratio(p["cycles"], "wall") for p in fake(1.10, 0.03, 6, 4)]
        c = [process_ratio(p["cycles"], "wall") for p in fake(1.05, 0.03, 6, 4)]
        _, lo, hi = compare(c, f)
        hits += lo <= 1.05 / 1.10 <= hi
    if hits < 180:
        failures.append(f"the 95% interval held the truth in only {hits} of 200 repetitions")
    for f in failures:
        print("FAIL:", f)
    print("onoff_stats self-test:", "failed" if failures else f"ok (coverage {hits}/200)")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="?")
    ap.add_argument("--target-pct", type=float, default=2.0)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test())
    if not args.results:
        ap.error("RESULTS is required (or --self-test)")
    print(table(open(args.results).read().splitlines(), args.target_pct))


if __name__ == "__main__":
    main()
