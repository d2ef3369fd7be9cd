#!/usr/bin/env python3
"""Checks `cupmon-decode job` end to end: synthetic jobs from `cupmon-make-sample --job` (2 and 8
ranks, clocks seconds apart, histories cut at different steps) with stragglers injected on known
ranks and steps must get exactly those verdicts (rank, step, class) and no other; a hang names the
rank behind; and on those and on tests/data/ddp-2rank (real, nothing injected) every rank's step
splits into work alone + collective alone + both + idle = step time, each part equal to a plain
reference swept here from the rows of `export --format jsonl` (same clock: --clock cupti).

usage: job_command_test.py --decode BIN --make-sample BIN --source REPO [--work DIR]
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(what):
    print("FAIL: " + what)
    failures.append(what)


def run(args, max_files=None):
    def limit():
        if max_files:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, max_files))
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       preexec_fn=limit if max_files else None)
    return p.returncode, p.stdout, p.stderr


def is_collective(name):
    for prefix in ("ncclDevKernel_", "ncclKernel_", "void ncclDevKernel_", "void ncclKernel_"):
        if name.startswith(prefix):
            return True
    return False


def reference_split(rows, start, end):
    """work alone, collective alone, both, idle and the host gap of one rank's step [start, end]:
    every instant by what runs on the rank's GPU then (docs/DECODER.md, `job`)."""
    edges = []
    first_coll = None
    for r in rows:
        if r["start_ns"] < end and is_collective(r["name"]) and r["start_ns"] >= start:
            first_coll = r["start_ns"] if first_coll is None else min(first_coll, r["start_ns"])
        a, b = max(r["start_ns"], start), min(r["end_ns"], end)
        if b <= a:
            continue
        c = is_collective(r["name"])
        edges.append((a, 0 if c else 1, 1 if c else 0))
        edges.append((b, 0 if c else -1, -1 if c else 0))
    edges.sort(key=lambda e: e[0])
    cutoff = end if first_coll is None else first_coll
    out = {"work_alone_ns": 0, "collective_alone_ns": 0, "both_ns": 0, "idle_ns": 0, "host_gap_ns": 0}
    work = coll = 0
    at = start

    def account(to):
        nonlocal at
        if to <= at:
            return
        n = to - at
        if work > 0 and coll > 0:
            out["both_ns"] += n
        elif work > 0:
            out["work_alone_ns"] += n
        elif coll > 0:
            out["collective_alone_ns"] += n
        else:
            out["idle_ns"] += n
            if at < cutoff:
                out["host_gap_ns"] += min(to, cutoff) - at
        at = to

    for t, dw, dc in edges:
        account(t)
        work += dw
        coll += dc
    account(end)
    return out


def check_figures(decode, path, doc, what):
    """Sums add up, and each part equals the reference over the jsonl rows."""
    rc, out, err = run([decode, "export", path, "--format", "jsonl", "--clock", "cupti"])
    if rc not in (0, 1):
        fail("%s: export failed: %s" % (what, err))
        return
    by_rank = {}
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("type") in ("kernel", "memcpy", "memset") and r.get("end_ns"):
            by_rank.setdefault(r.get("rank", 0), []).append(r)
    max_end = {}
    for k, rows in by_rank.items():
        rows.sort(key=lambda r: r["start_ns"])
        m, ends = 0, []
        for r in rows:
            m = max(m, r["end_ns"])
            ends.append(m)
        max_end[k] = ends
    ranks = [r["rank"] for r in doc["ranks"]]
    compared = differ = 0
    for s in doc["steps"]:
        for i, f in enumerate(s["ranks"]):
            if not f["present"]:
                continue
            parts = f["work_alone_ns"] + f["collective_alone_ns"] + f["both_ns"] + f["idle_ns"]
            if parts != f["step_ns"]:
                fail("%s: step %d rank %d: parts add to %d, step %d" % (what, s["step"], i, parts, f["step_ns"]))
            if f["start_ns"] + f["step_ns"] != f["end_ns"]:
                fail("%s: step %d rank %d: start + step != end" % (what, s["step"], i))
            rows = by_rank.get(ranks[i], [])
            # Rows that can touch the step: those starting before its end (sorted by start).
            lo, hi = 0, len(rows)
            while lo < hi:
                mid = (lo + hi) // 2
                if rows[mid]["start_ns"] < f["end_ns"]:
                    lo = mid + 1
                else:
                    hi = mid
            # Back from there while some earlier row may still run into the step.
            near, ends = [], max_end.get(ranks[i], [])
            j = lo - 1
            while j >= 0 and (ends[j] > f["start_ns"] or rows[j]["start_ns"] >= f["start_ns"]):
                near.append(rows[j])
                j -= 1
            ref = reference_split(near, f["start_ns"], f["end_ns"])
            for k, v in ref.items():
                compared += 1
                if f[k] != v:
                    differ += 1
                    if differ <= 8:
                        print("  differs: %s step %d rank %d %s: job %d, reference %d"
                              % (what, s["step"], i, k, f[k], v))
    print("%s: %d figures compared with the reference, %d differ" % (what, compared, differ))
    if differ:
        fail("%s: %d of %d figures differ from the reference" % (what, differ, compared))


def job_json(decode, path, what, extra=()):
    rc, out, err = run([decode, "job", path, "--format", "json", "--clock", "cupti"] + list(extra))
    if rc != 0:
        fail("%s: exit %d: %s" % (what, rc, err))
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--make-sample", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="cupmon-job-test-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    # (ranks, what make-sample injects, the verdicts expected: step -> (class, culprit))
    cases = [
        ("clean-8", 8, ["first-step:3:12"], {}),
        ("two", 2, ["host-gap:1:20:30", "gpu-work:0:45:25", "collectives:65:20", "first-step:1:5"],
         {20: ("host-gap", 1), 45: ("gpu-work", 0), 65: ("collectives", None)}),
        ("eight", 8, ["gpu-work:5:30:20", "host-gap:2:50:40", "collectives:70:15", "host-gap:7:75:5",
                      "first-step:3:12", "first-step:6:40"],
         {30: ("gpu-work", 5), 50: ("host-gap", 2), 70: ("collectives", None), 75: ("host-gap", 7)}),
        # 64 ranks, clocks up to 7 x 1.7 s apart, histories cut at three points.
        ("sixty-four", 64, ["skew-period:8", "gpu-work:40:30:20", "host-gap:63:50:40",
                            "collectives:70:15", "host-gap:7:75:5", "first-step:3:12",
                            "first-step:60:40", "first-step:33:5"],
         {30: ("gpu-work", 40), 50: ("host-gap", 63), 70: ("collectives", None), 75: ("host-gap", 7)}),
    ]
    for name, ranks, inject, expected in cases:
        d = os.path.join(work, name)
        rc, _, err = run([a.make_sample, "--job", d, str(ranks)] + inject)
        if rc:
            fail("%s: make-sample: %s" % (name, err))
            continue
        doc = job_json(a.decode, d, name)
        got = {s["step"]: (s["verdict"], s["culprit"]) for s in doc["slow_steps"]}
        if got != expected:
            fail("%s: verdicts %r, injected %r" % (name, got, expected))
        for s in doc["slow_steps"]:
            if s["verdict"] == "gpu-work" and not s["kernel"].startswith("gemm_wgrad"):
                fail("%s: step %d: the kernel that grew is %r, not gemm_wgrad" % (name, s["step"], s["kernel"]))
        if doc["hang"]["hung"]:
            fail("%s: a hang where none was injected" % name)
        if len(doc["steps"]) != 80:
            fail("%s: %d job steps, not 80" % (name, len(doc["steps"])))
        for m in doc["streams"][0]["ranks"]:
            if m["name_mismatches"]:
                fail("%s: collectives matched to other names" % name)
        check_figures(a.decode, d, doc, name)
        # The text leads with the answers: a line per injected step naming its rank.
        rc, text, err = run([a.decode, "job", d])
        for step, (cls, culprit) in expected.items():
            head = "  step %d: %s: " % (step, cls)
            line = next((l for l in text.splitlines() if l.startswith(head)), None)
            if line is None:
                fail("%s: no line '%s' in the text" % (name, head))
            elif culprit is not None and ("rank %d (" % culprit) not in line:
                fail("%s: '%s' does not name rank %d" % (name, line, culprit))
        print("%s: %d ranks, verdicts %s" % (name, ranks, sorted(got.items())))

    # A hang: rank 3 of 8 never reaches step 50's first all-reduce; rank 61 of 64 likewise.
    for ranks, who in ((64, 61), (8, 3)):
        d = os.path.join(work, "hang")
        shutil.rmtree(d, ignore_errors=True)
        run([a.make_sample, "--job", d, str(ranks), "hang:%d:50" % who, "steps:60", "skew-period:8"])
        doc = job_json(a.decode, d, "hang")
        h = doc["hang"]
        if not h["hung"] or h["behind"] != [who] or h["waiting_at"] != 98 or doc["slow_steps"]:
            fail("hang of %d ranks: %r, slow steps %r" % (ranks, h, doc["slow_steps"]))
    for r in doc["ranks"]:
        running = r["unfinished"]
        if (r["rank"] == 3) != (not running):
            fail("hang: rank %d unfinished %r" % (r["rank"], running))
    d = os.path.join(work, "hang")
    shutil.rmtree(d, ignore_errors=True)
    run([a.make_sample, "--job", d, "8", "hang:3:50", "steps:60"])
    rc, text, _ = run([a.decode, "job", d])
    if "hang: rank 3 (synthetic-host-3:5003) never launched collective #98" not in text:
        fail("hang: the text does not name rank 3:\n" + text)

    # --from/--to: the steps that start in the range.
    doc_all = job_json(a.decode, os.path.join(work, "two"), "two")
    s = doc_all["steps"]
    ref = doc_all["reference_rank"]
    doc = job_json(a.decode, os.path.join(work, "two"), "range",
                   ["--from", "@%d" % s[9]["ranks"][ref]["start_ns"], "--to", "@%d" % s[30]["ranks"][ref]["start_ns"]])
    if [x["step"] for x in doc["steps"]] != list(range(10, 31)):
        fail("range: steps %r" % [x["step"] for x in doc["steps"]])

    # Step tables written per node (--tables-out) and merged elsewhere: the same answers as over
    # the recordings; 64 ranks read and merged with 16 files open at most.
    for name, split in (("eight", ((0, 5), (5, 8))), ("sixty-four", ((0, 30), (30, 64)))):
        d = os.path.join(work, name)
        tables = os.path.join(work, name + "-tables")
        shutil.rmtree(tables, ignore_errors=True)
        for node, (lo, hi) in enumerate(split):
            rc, out, err = run([a.decode, "job"] + [os.path.join(d, "rank%d" % r) for r in range(lo, hi)]
                               + ["--tables-out", os.path.join(tables, "node%d" % node), "--clock", "cupti"],
                               max_files=16)
            if rc != 0 or len(out.splitlines()) != hi - lo or ".cupmon-job: rank %d (" % lo not in out:
                fail("%s: --tables-out: exit %d, %s %s" % (name, rc, out, err))
        direct = job_json(a.decode, d, name)
        rc, out, err = run([a.decode, "job", tables, "--format", "json", "--clock", "cupti"], max_files=16)
        if rc != 0 or json.loads(out) != direct:
            fail("%s: the merged tables' answers differ from the recordings': exit %d, %s" % (name, rc, err))
        rc, text, err = run([a.decode, "job", tables], max_files=16)
        rc2, text2, _ = run([a.decode, "job", d, "--clock", "cupti"])
        strip = lambda t: [l for l in t.splitlines() if "cupmon-decode gpu-trace" not in l]
        if rc != 0 or strip(text) != strip(text2):
            fail("%s: the merged tables' text differs: exit %d, %s" % (name, rc, err))
        # The drill-down names what the culprit's node read.
        drill = "cupmon-decode gpu-trace %s %s %s --pid 5005 " % tuple(
            os.path.join(d, "rank%d" % r) for r in (5, 6, 7))
        if name == "eight" and drill not in text:
            fail("eight: tables: the drill-down does not name rank 5's recording:\n" + text)
    rc, _, err = run([a.decode, "job", os.path.join(work, "eight-tables"), "--tables-out", "x"])
    if rc != 2 or "job tables already" not in err:
        fail("--tables-out over tables: exit %d, %s" % (rc, err))
    # A table cut short is refused (exit 1), the others merged.
    cut = os.path.join(work, "eight-tables", "node1")
    f = os.path.join(cut, sorted(os.listdir(cut))[0])
    os.truncate(f, os.path.getsize(f) - 5)
    rc, out, err = run([a.decode, "job", os.path.join(work, "eight-tables"), "--format", "json"])
    if rc != 1 or "refused: " + f + ": cut short" not in err or len(json.loads(out)["ranks"]) != 7:
        fail("cut table: exit %d, %s" % (rc, err))

    # Real data: two DDP ranks, nothing injected. Every figure adds up and matches the reference.
    real = os.path.join(a.source, "tests", "data", "ddp-2rank")
    doc = job_json(a.decode, real, "ddp-2rank")
    if len(doc["steps"]) < 1400:
        fail("ddp-2rank: %d job steps" % len(doc["steps"]))
    m = doc["streams"][0]
    if m["ranks"][1]["matched"] != m["ranks"][1]["instances"] or m["ranks"][1]["first_instance"] != 0:
        fail("ddp-2rank: all-reduces not all matched: %r" % m)
    check_figures(a.decode, real, doc, "ddp-2rank")

    # Refusals and bad input.
    rc, _, err = run([a.decode, "job", real, "--kernel", "gemm"])
    if rc != 2 or "do not apply" not in err:
        fail("job --kernel: exit %d, %s" % (rc, err))
    rc, out, err = run([a.decode, "job", os.path.join(a.source, "tests", "data", "sample")])
    if rc != 1 or "no collective (NCCL) kernel on any rank" not in err:
        fail("job on a recording without NCCL: exit %d, %s" % (rc, err))

    # A single rank: its own figures, no culprit but against its own past.
    doc = job_json(a.decode, os.path.join(work, "two", "rank1"), "single rank")
    if len(doc["ranks"]) != 1 or len(doc["steps"]) != 76:
        fail("single rank: %d ranks, %d steps" % (len(doc["ranks"]), len(doc["steps"])))
    got = {s["step"]: (s["verdict"], s["culprit"]) for s in doc["slow_steps"]}
    if got.get(16) != ("host-gap", 0):  # its 16th step is the job's 20th (it starts at step 5)
        fail("single rank: verdicts %r" % got)
    # Ranks of two jobs mixed: merged with the listing's warning (exit 1), analysed anyway.
    rc, out, err = run([a.decode, "job", os.path.join(work, "two"), real, "--format", "json"])
    if (rc != 1 or "different jobs are mixed together" not in err
            or "job: the ranks belong to 2 jobs" not in err):
        fail("mixed jobs: exit %d, %s" % (rc, err[-500:]))
    # A rank's file cut short: its damage is reported (exit 1), the steps it still has are matched.
    cut = os.path.join(work, "cut")
    shutil.copytree(os.path.join(work, "two"), cut)
    f = os.path.join(cut, "rank1", sorted(os.listdir(os.path.join(cut, "rank1")))[0])
    os.truncate(f, os.path.getsize(f) * 2 // 3)
    rc, out, err = run([a.decode, "job", cut, "--format", "json"])
    doc = json.loads(out) if out else {"steps": []}
    if rc != 1 or not doc["steps"] or not any(s["ranks"][1]["present"] for s in doc["steps"]):
        fail("cut rank: exit %d, %d steps, %s" % (rc, len(doc["steps"]), err[-500:]))

    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
