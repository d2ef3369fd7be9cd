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
Variants (tools/gpu-bench-onoff ONOFF_VARIANTS): a client name CLIENT-S1-S2... is compared with its
reference, the nearest name with settings dropped from the end that ran on the workload
(floor-ptb0 with floor, cupmon-nvtx-marker with cupmon-nvtx, floor-devbuf8M-prealloc16 with floor
when floor-devbuf8M did not run). Per variant: the geometric mean of its processes'
on/off ratios with a 95% t interval; variant/reference with its Welch interval; and the change in
the client's cost, (r_variant - 1) / (r_reference - 1) - 1, with a 95% Fieller interval (the
uncertainty of both costs, the reference's as the denominator; unbounded when the reference's cost
is not resolved from zero). For the floor the cost is CUPTI's own. A verdict per row, and per
setting over the workloads (wall time): "adopt" when some workload shows a cut of at least 20%
(the interval's upper end at or below -20%) and none shows a rise (its lower end above 0);
"no 20% cut" when every workload's lower end is above -20% (the intervals exclude the goal).
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


def geo_interval(a):
    """exp(mean log a) and its 95% t interval."""
    la = [math.log(x) for x in a]
    m = statistics.fmean(la)
    if len(la) < 2:
        return math.exp(m), 0.0, float("inf")
    h = t95(len(la) - 1) * math.sqrt(statistics.variance(la) / len(la))
    return math.exp(m), math.exp(m - h), math.exp(m + h)


def cost_change(variant, reference):
    """(c_v / c_r - 1, lo, hi): the change of the cost c = r - 1 (r: geometric mean of on/off) of a
    variant against its reference, with a 95% Fieller interval for c_v / c_r. c_v and c_r are taken
    as normal with the delta-method standard errors exp(mean log r) * se(mean log r); the t
    quantile's degrees of freedom are Welch-Satterthwaite's at the estimate. lo and hi are None when
    the interval is unbounded (the reference's cost is not resolved from zero)."""
    lv, lr = [math.log(x) for x in variant], [math.log(x) for x in reference]
    a, b = statistics.fmean(lv), statistics.fmean(lr)
    cv, cr = math.exp(a) - 1, math.exp(b) - 1
    est = cv / cr - 1 if cr != 0 else float("nan")
    if len(lv) < 2 or len(lr) < 2 or cr <= 0:
        return est, None, None
    sv2 = math.exp(a) ** 2 * statistics.variance(lv) / len(lv)
    sr2 = math.exp(b) ** 2 * statistics.variance(lr) / len(lr)
    rho = cv / cr
    w1, w2 = sv2, rho * rho * sr2
    den = (w1 * w1 / (len(lv) - 1) if w1 else 0) + (w2 * w2 / (len(lr) - 1) if w2 else 0)
    t = t95((w1 + w2) ** 2 / den if den > 0 else 1e9)
    qa = cr * cr - t * t * sr2
    qb = -2 * cv * cr
    qc = cv * cv - t * t * sv2
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        return est, None, None
    r = math.sqrt(disc)
    return est, (-qb - r) / (2 * qa) - 1, (-qb + r) / (2 * qa) - 1


GOAL = -0.20  # issue 16: adopt a setting that cuts CUPTI's own cost by at least 20%


def verdict(lo, hi):
    if lo is None:
        return "reference cost not resolved"
    if hi <= GOAL:
        return "cut >=20%"
    if hi < 0:
        return "lower"
    if lo > 0:
        return "higher"
    if lo > GOAL:
        return "no 20% cut"
    return "not resolved"


def reference_of(client, ran=None):
    """The name without its last setting; with `ran` (the names that ran), the nearest such
    ancestor that ran (floor-devbuf32M-prealloc16 against floor when floor-devbuf32M did not)."""
    while "-" in client:
        client = client.rsplit("-", 1)[0]
        if ran is None or client in ran:
            return client
    return None


def parse(lines):
    runs = collections.defaultdict(list)  # (workload, client) -> [json]
    for line in lines:
        if not line.strip():
            continue
        workload, client, js = line.split(" ", 2)
        runs[(workload, client)].append(json.loads(js))
    return runs


def variants_table(runs):
    """Each variant against its reference, per workload and metric, and a verdict per setting."""
    out = []
    workloads = sorted({w for w, _ in runs})
    ran = collections.defaultdict(set)
    for w, c in runs:
        ran[w].add(c)
    refs = {(w, c): reference_of(c, ran[w]) for w, c in runs}
    pairs = sorted(k for k, ref in refs.items() if ref)
    if not pairs:
        return ""
    setting_rows = collections.defaultdict(list)  # variant -> [(workload, ref, lo, hi)] (wall)
    for metric in ("wall", "cpu"):
        out.append(f"Variants against their reference, {metric} time: on/off geometric mean over "
                   f"processes (95%); variant/reference (95% Welch); change of the client's cost "
                   f"r - 1 (95% Fieller)")
        out.append(f"{'workload':10} {'variant':26} {'n':>3} {'on/off (95%)':>22} {'reference':18} "
                   f"{'n':>3} {'on/off (95%)':>22} {'variant/ref (95%)':>24} "
                   f"{'cost change (95%)':>26}  verdict")
        for w, c in pairs:
            ref = refs[(w, c)]
            rv = [process_ratio(p["cycles"], metric) for p in runs[(w, c)]]
            rr = [process_ratio(p["cycles"], metric) for p in runs[(w, ref)]]
            gv, gr = geo_interval(rv), geo_interval(rr)
            q = compare(rv, rr)
            est, lo, hi = cost_change(rv, rr)
            change = (f"{100 * est:+.1f}% ({100 * lo:+.1f}% to {100 * hi:+.1f}%)" if lo is not None
                      else f"{100 * est:+.1f}% (unbounded)")
            out.append(f"{w:10} {c:26} {len(rv):3d} {f'{gv[0]:.4f} ({gv[1]:.4f}-{gv[2]:.4f})':>22} "
                       f"{ref:18} {len(rr):3d} {f'{gr[0]:.4f} ({gr[1]:.4f}-{gr[2]:.4f})':>22} "
                       f"{f'{q[0]:.4f} ({q[1]:.4f}-{q[2]:.4f})':>24} {change:>26}  {verdict(lo, hi)}")
            if metric == "wall":
                setting_rows[c].append((w, ref, lo, hi))
        out.append("")
    out.append("Per variant over the workloads (wall time; goal: a cut of at least 20% of the "
               "reference's cost on one workload, a rise on none):")
    for c, rows in sorted(setting_rows.items()):
        cut = [w for w, _, lo, hi in rows if lo is not None and hi <= GOAL]
        rise = [w for w, _, lo, hi in rows if lo is not None and lo > 0]
        excluded = all(lo is not None and lo > GOAL for _, _, lo, _ in rows)
        missing = sorted(set(workloads) - {w for w, _, _, _ in rows})
        against = sorted({ref for _, ref, _, _ in rows})
        if cut and not rise:
            say = f"adopt: cut >=20% on {', '.join(cut)}, a rise on none"
        elif rise:
            say = (f"do not adopt: higher on {', '.join(rise)}" +
                   (f" (cut >=20% on {', '.join(cut)})" if cut else ""))
        elif excluded:
            say = "no 20% cut: every workload's interval excludes it"
        else:
            say = "undecided: the intervals neither show nor exclude a 20% cut"
        if missing:
            say += f"; not run on {', '.join(missing)}"
        out.append(f"  {c} (against {', '.join(against)}): {say}")
    out.append("")
    return "\n".join(out)


def table(lines, target_pct):
    runs = parse(lines)
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
    if not any((w, "floor") in runs and (w, "cupmon") in runs for w in workloads):
        out = []  # no workload ran both: the cupmon/floor table would be headers only
    return "\n".join(out) + variants_table(runs)


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
    # Variants: CUPTI's cost 0.12 on the floor; floor-ptb0 costs 0.084 on loop8 (-30%) and the same
    # as the floor on loop1; floor-zero costs 0.15 on loop1 (+25%).
    truth = {("loop8", "floor"): 1.12, ("loop8", "floor-ptb0"): 1.084,
             ("loop1", "floor"): 1.12, ("loop1", "floor-ptb0"): 1.12, ("loop1", "floor-zero"): 1.15}
    lines = [f"{w} {c} {json.dumps(p)}" for (w, c), r in truth.items() for p in fake(r, 0.005, 16)]
    t = table(lines, 2.0)
    rows = {tuple(l.split()[:2]): l for l in t.splitlines()
            if l.startswith("loop") and len(l.split()) > 2 and l.split()[1].startswith("floor-")}
    want = {("loop8", "floor-ptb0"): "cut >=20%", ("loop1", "floor-zero"): "higher",
            ("loop1", "floor-ptb0"): "no 20% cut"}
    for key, v in want.items():
        row = rows.get(key, "")
        if not row.endswith(v):
            failures.append(f"{key}: expected verdict '{v}', got: {row!r}")
    if "floor-ptb0 (against floor): adopt: cut >=20% on loop8, a rise on none" not in t:
        failures.append("floor-ptb0 should be adopted (a cut on loop8, no rise on loop1):\n" + t)
    if "floor-zero (against floor): do not adopt: higher on loop1; not run on loop8" not in t:
        failures.append("floor-zero should not be adopted (higher on loop1):\n" + t)
    if "cupmon/floor" in t:
        failures.append("the cupmon/floor table was printed without a cupmon client")
    if reference_of("floor-devbuf32M-prealloc16", {"floor", "floor-ptb0"}) != "floor" or \
            reference_of("cupmon-nvtx-marker") != "cupmon-nvtx" or reference_of("floor") is not None:
        failures.append("a variant's reference is the nearest ancestor name that ran")
    # The cost change's estimate and Fieller interval: close to the truth with small noise.
    f = [process_ratio(p["cycles"], "wall") for p in fake(1.12, 0.005, 16)]
    v = [process_ratio(p["cycles"], "wall") for p in fake(1.084, 0.005, 16)]
    est, lo, hi = cost_change(v, f)
    if lo is None or not lo <= 0.084 / 0.12 - 1 <= hi or abs(est - (0.084 / 0.12 - 1)) > 0.03:
        failures.append(f"cost change {est} ({lo} to {hi}) misses the true -30%")
    # A reference whose cost is positive but not resolved from zero: an unbounded interval.
    f = [process_ratio(p["cycles"], "wall") for p in fake(1.06, 0.05, 3)]
    v = [process_ratio(p["cycles"], "wall") for p in fake(1.04, 0.05, 3)]
    if geo_interval(f)[0] <= 1 or geo_interval(f)[1] > 1 or cost_change(v, f)[1] is not None:
        failures.append(f"a reference cost {geo_interval(f)} not resolved from 0 over 3 processes "
                        f"should give an unbounded interval: {cost_change(v, f)}")
    # Coverage of the cost change's interval: a true -50% (costs 0.10 and 0.05), 6 processes each.
    cover = unbounded = 0
    for _ in range(200):
        f = [process_ratio(p["cycles"], "wall") for p in fake(1.10, 0.03, 6, 4)]
        v = [process_ratio(p["cycles"], "wall") for p in fake(1.05, 0.03, 6, 4)]
        _, lo, hi = cost_change(v, f)
        if lo is None:
            unbounded += 1
            cover += 1
        else:
            cover += lo <= -0.5 <= hi
    if cover < 180 or unbounded > 20:
        failures.append(f"the cost change's interval held the truth in {cover} of 200 repetitions "
                        f"({unbounded} unbounded)")
    for f in failures:
        print("FAIL:", f)
    print("onoff_stats self-test:", "failed" if failures else
          f"ok (coverage {hits}/200; cost change {cover}/200, {unbounded} unbounded)")
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
