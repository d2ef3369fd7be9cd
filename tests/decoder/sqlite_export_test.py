#!/usr/bin/env python3
"""Checks `cupmon-decode export --format sqlite` on the real recordings, as an nsys user would.

Builds the database of tests/data/sample and of tests/data/ddp-2rank (two ranks in one database)
and queries it with Python's sqlite3 module: nsys's kernel-launch join
(kernel.correlationId = runtime.correlationId AND kernel.globalPid = (runtime.globalTid &
0xFFFFFFFFFF000000)) returns exactly one row per kernel that has a launch call, and as many as
the decoder joined; the StringIds and ENUM joins resolve every id; counts equal the decoder's own
(`info`'s records by kind, `summary`'s calls, the JSONL export's rows and times); the two ranks'
CUPMON_JOB_STEP_RANK holds `job --format json`'s figures, a row per job step and rank (none for a
single recording, nor with --kernel). Then bad input:
no -o (standard output is refused), an unwritable or directory path, an existing file (replaced,
or left as it was when the export fails), a region with no rows, damaged and truncated
recordings. With --have-sqlite 0 (a build without SQLite) it checks the message instead.

usage: sqlite_export_test.py --decode BIN --source REPO --have-sqlite 0|1
"""
import argparse
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

failures = []
MASK = 0xFFFFFFFFFF000000
GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
KERNEL_JOIN = ("FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r "
               "ON k.correlationId = r.correlationId AND k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000)")


def check(cond, what):
    if not cond:
        failures.append(what)
        if len(failures) <= 40:
            print("FAIL:", what)
    return cond


def run(decode, args):
    r = subprocess.run([decode, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check("Sanitizer" not in r.stderr and "runtime error:" not in r.stderr,
          f"{args}: sanitizer report: {r.stderr[-2000:]}")
    return r


def export(decode, inputs, out, extra=(), want=(0,)):
    r = run(decode, ["export", *inputs, "--format", "sqlite", "-o", out, *extra])
    check(r.returncode in want, f"export {inputs} {extra} exited {r.returncode}: {r.stderr[-3000:]}")
    check(r.stdout == "", f"export {inputs} wrote to standard output: {r.stdout[:200]}")
    return r


def no_temporaries(directory, label):
    left = [f for f in os.listdir(directory) if re.search(r"\.sqlite\.[A-Za-z0-9]{6}$", f)]
    check(not left, f"{label}: temporary files left in {directory}: {left}")


def records_by_kind(info_text):
    """`info` prints one 'records by kind:' line per recording, in rank order."""
    out = []
    for line in info_text.splitlines():
        m = re.match(r"\s*records by kind:(.*)$", line)
        if m:
            out.append({int(k): int(v) for k, v in (p.split("=") for p in m.group(1).split())})
    return out


def summary_calls(summary_text):
    """Sums of the Calls column of the GPU activities and API calls tables (single recording)."""
    calls = {"gpu": 0, "api": 0}
    section = None
    for line in summary_text.splitlines():
        if "GPU activities:" in line:
            section = "gpu"
        elif "API calls:" in line:
            section = "api"
        m = re.match(r"^\s*(?:GPU activities:|API calls:)?\s+[\d.]+%\s+\S+\s+(\d+)\s", line)
        if section and m:
            calls[section] += int(m.group(1))
    return calls


def jsonl_rows(decode, inputs, work, label):
    path = os.path.join(work, label + ".jsonl")
    r = run(decode, ["export", *inputs, "--format", "jsonl", "-o", path])
    check(r.returncode in (0, 1), f"jsonl {label} exited {r.returncode}")
    with open(path) as f:
        rows = [json.loads(line) for line in f]
    os.remove(path)  # ddp-2rank's is 341 MB, and CI's disk is not large
    return rows


def counter(db, gpid, name):
    row = db.execute("SELECT value FROM CUPMON_COUNTERS WHERE globalPid = ? AND name = ?",
                     (gpid, name)).fetchone()
    return row[0] if row else None


def check_database(db, label):
    """What must hold of any database the export writes."""
    check(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", f"{label}: integrity_check")
    version = db.execute("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'").fetchone()
    check(version == ("3.28.1",), f"{label}: EXPORT_SCHEMA_VERSION {version}")
    # Every id resolves: names through StringIds, enum columns through their ENUM_* table.
    for table, column, target in [
            ("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName", "StringIds"),
            ("CUPTI_ACTIVITY_KIND_KERNEL", "shortName", "StringIds"),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "nameId", "StringIds"),
            ("CUPTI_ACTIVITY_KIND_RUNTIME", "eventClass", "ENUM_NSYS_EVENT_CLASS"),
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "copyKind", "ENUM_CUDA_MEMCPY_OPER"),
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind", "ENUM_CUDA_MEM_KIND"),
            ("CUPTI_ACTIVITY_KIND_MEMCPY", "dstKind", "ENUM_CUDA_MEM_KIND"),
            ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "syncType", "ENUM_CUPTI_SYNC_TYPE"),
            ("CUPMON_ANNOTATIONS", "labelId", "StringIds")]:
        dangling = db.execute(f"SELECT COUNT(*) FROM {table} AS a LEFT JOIN {target} AS b "
                              f"ON a.{column} = b.id WHERE b.id IS NULL").fetchone()[0]
        check(dangling == 0, f"{label}: {dangling} {table}.{column} without a {target} row")
    mangled = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s "
                         "ON s.id = k.mangledName WHERE k.mangledName IS NOT NULL AND s.id IS NULL").fetchone()[0]
    check(mangled == 0, f"{label}: {mangled} mangledName ids without a StringIds row")
    # The forum query of the issue: runtime calls with their class and name, no call-chain rows.
    rows = db.execute("SELECT e.label, n_str.value FROM CUPTI_ACTIVITY_KIND_RUNTIME AS r "
                      "LEFT JOIN ENUM_NSYS_EVENT_CLASS AS e ON r.eventClass == e.id "
                      "LEFT JOIN StringIds AS n_str ON r.nameId == n_str.id "
                      "WHERE r.start >= 0 AND r.callchainId IS NULL").fetchall()
    check(all(l in ("CUDA runtime", "CUDA driver") and n for l, n in rows),
          f"{label}: runtime rows without an event class label or a name")
    # nsys's kernel-launch join: never two launches for one kernel.
    dup = db.execute(f"SELECT COUNT(*) FROM (SELECT k.rowid {KERNEL_JOIN} GROUP BY k.rowid "
                     "HAVING COUNT(*) > 1)").fetchone()[0]
    check(dup == 0, f"{label}: {dup} kernels joined to more than one launch call")
    # Every kernel's globalPid is a rank's, and every call's globalTid belongs to one.
    ranks = {g for (g,) in db.execute("SELECT globalPid FROM CUPMON_RANKS")}
    for table in GPU_TABLES + ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",):
        pids = {g for (g,) in db.execute(f"SELECT DISTINCT globalPid FROM {table}")}
        check(pids <= ranks, f"{label}: {table} globalPids {pids - ranks} are no rank's")
    tids = {t for (t,) in db.execute("SELECT DISTINCT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")}
    check({t & MASK for t in tids} <= ranks, f"{label}: runtime globalTids outside the ranks")
    threads = {t for (t,) in db.execute("SELECT globalTid FROM CUPMON_THREADS")}
    check(tids <= threads, f"{label}: runtime globalTids missing from CUPMON_THREADS")


def check_recording(db, decode, inputs, work, label, base):
    """Counts and times against the decoder's own outputs."""
    info = run(decode, ["info", *inputs]).stdout
    kinds = records_by_kind(info)
    ranks = db.execute("SELECT globalPid, rank FROM CUPMON_RANKS ORDER BY rank").fetchall()
    check(len(ranks) == len(kinds), f"{label}: {len(ranks)} ranks, info lists {len(kinds)} recordings")
    for (gpid, _), by_kind in zip(ranks, kinds):
        def n(table, where=""):
            return db.execute(f"SELECT COUNT(*) FROM {table} WHERE globalPid = ? {where}", (gpid,)).fetchone()[0]

        def api(table, event_class):
            return db.execute(f"SELECT COUNT(*) FROM {table} WHERE (globalTid & 0xFFFFFFFFFF000000) = ? "
                              "AND eventClass = ?", (gpid, event_class)).fetchone()[0]

        def untimed(t):
            return counter(db, gpid, "export.untimed." + t)
        got = {
            "kernel": n("CUPTI_ACTIVITY_KIND_KERNEL") + untimed("kernel"),
            "memcpy": n("CUPTI_ACTIVITY_KIND_MEMCPY") + untimed("memcpy"),
            "memset": n("CUPTI_ACTIVITY_KIND_MEMSET") + untimed("memset"),
            "api": sum(api(t, c) for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPMON_SECONDARY_API")
                       for c in (0, 1)) + untimed("runtime") + untimed("secondary_api"),
            "synchronization": n("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") + untimed("synchronization"),
        }
        want = {
            "kernel": by_kind.get(3, 0) + by_kind.get(10, 0),
            "memcpy": by_kind.get(1, 0) + by_kind.get(22, 0),
            "memset": by_kind.get(2, 0),
            "api": by_kind.get(4, 0) + by_kind.get(5, 0),
            "synchronization": by_kind.get(38, 0),
        }
        check(got == want, f"{label}: rank {gpid:#x}: rows {got}, info's records by kind {want}")
        if untimed("runtime") + untimed("secondary_api") == 0:
            classes = (api("CUPTI_ACTIVITY_KIND_RUNTIME", 0) + api("CUPMON_SECONDARY_API", 0),
                       api("CUPTI_ACTIVITY_KIND_RUNTIME", 1) + api("CUPMON_SECONDARY_API", 1))
            check(classes == (by_kind.get(5, 0), by_kind.get(4, 0)),
                  f"{label}: rank {gpid:#x}: runtime/driver rows {classes}, records {by_kind.get(5)}/{by_kind.get(4)}")
        check(counter(db, gpid, "decoder.records") == sum(by_kind.values()),
              f"{label}: CUPMON_COUNTERS decoder.records != info's records")

    # The JSONL export of the same recordings: same rows, names and times (wall clock).
    rows = jsonl_rows(decode, inputs, work, label)
    rank_of = {r: g for g, r in ranks}
    joined_by_decoder = collections.Counter()
    kernels_want = collections.Counter()
    for r in rows:
        gpid = rank_of.get(r.get("rank"), ranks[0][0])
        if r["type"] == "kernel" and r["start_ns"] is not None:
            kernels_want[(gpid, r["correlation_id"], r["start_ns"] - base, r["end_ns"] - base, r["name"])] += 1
            if "api" in r:
                joined_by_decoder[gpid] += 1
    kernels_got = collections.Counter(db.execute(
        "SELECT k.globalPid, k.correlationId, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
        "JOIN StringIds s ON s.id = k.demangledName").fetchall())
    check(kernels_got == kernels_want,
          f"{label}: kernels (rank, correlation, start, end, name) differ from the JSONL export: "
          f"{len(kernels_got - kernels_want)} only in SQLite, {len(kernels_want - kernels_got)} only in JSONL")
    joined = dict(db.execute(f"SELECT k.globalPid, COUNT(*) {KERNEL_JOIN} GROUP BY k.globalPid").fetchall())
    check(joined == dict(joined_by_decoder),
          f"{label}: the kernel-launch join finds {joined} launches, the decoder {dict(joined_by_decoder)}")
    api_want = collections.Counter((rank_of.get(r.get("rank"), ranks[0][0]), r["name"]) for r in rows
                                   if r["type"] == "api" and r["start_ns"] is not None)
    api_got = collections.Counter()
    for table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPMON_SECONDARY_API"):
        for tid, name, count in db.execute(f"SELECT r.globalTid, s.value, COUNT(*) FROM {table} r "
                                           "JOIN StringIds s ON s.id = r.nameId GROUP BY 1, 2"):
            # nsys names calls as CUPTI does ("cudaLaunchKernel_v7000"); the decoder shows them
            # without the version suffix.
            api_got[(tid & MASK, re.sub(r"_v\d+$", "", name))] += count
    check(api_got == api_want, f"{label}: API calls by name differ from the JSONL export: "
                               f"{list((api_got - api_want).items())[:5]} / {list((api_want - api_got).items())[:5]}")
    return rows


def check_job_table(db, decode, inputs, label):
    """CUPMON_JOB_STEP_RANK against `job --format json` over the same inputs: a row per job step
    and rank with the same figures, verdict and culprit; the per-rank sums besides."""
    r = run(decode, ["job", *inputs, "--format", "json"])
    check(r.returncode in (0, 1), f"{label}: job --format json exited {r.returncode}: {r.stderr[-2000:]}")
    if r.returncode not in (0, 1):
        return
    doc = json.loads(r.stdout)
    slow = {s["step"]: s for s in doc["slow_steps"]}
    want = []
    for s in doc["steps"]:
        v = slow.get(s["step"])
        for i, f in enumerate(s["ranks"]):
            figures = ((f["rank_step"], f["step_ns"], f["work_ns"], f["collective_ns"], f["wait_ns"],
                        f["host_gap_ns"]) if f["present"] else (None,) * 6)
            want.append((s["step"], doc["ranks"][i]["rank"], *figures,
                         int(v is not None and v["culprit"] == i), v["verdict"] if v else None))
    got = db.execute("SELECT step, rank, rankStep, stepNs, workNs, collectiveNs, waitNs, hostGapNs, "
                     "culprit, verdict FROM CUPMON_JOB_STEP_RANK ORDER BY step, rank").fetchall()
    check(len(got) == len(doc["steps"]) * len(doc["ranks"]),
          f"{label}: {len(got)} job rows, not {len(doc['steps'])} steps x {len(doc['ranks'])} ranks")
    check(got == want, f"{label}: CUPMON_JOB_STEP_RANK differs from job: "
          f"{[(g, w) for g, w in zip(got, want) if g != w][:3]}")
    for i, rank in enumerate(doc["ranks"]):
        sums = db.execute("SELECT SUM(stepNs), SUM(workNs), SUM(waitNs), SUM(hostGapNs), SUM(culprit) "
                          "FROM CUPMON_JOB_STEP_RANK WHERE rank = ?", (rank["rank"],)).fetchone()
        ranks = [s["ranks"][i] for s in doc["steps"] if s["ranks"][i]["present"]]
        expect = tuple(sum(f[k] for f in ranks) for k in ("step_ns", "work_ns", "wait_ns", "host_gap_ns"))
        check(sums == expect + (rank["culprit_of"],),
              f"{label}: rank {rank['rank']} sums {sums}, job's {expect + (rank['culprit_of'],)}")
    check(len(doc["slow_steps"]) > 0 and
          db.execute("SELECT COUNT(DISTINCT step) FROM CUPMON_JOB_STEP_RANK WHERE verdict IS NOT NULL")
          .fetchone()[0] == len(doc["slow_steps"]), f"{label}: slow steps")


def has_table(db, name):
    return db.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0] == 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--have-sqlite", type=int, default=1)
    a = ap.parse_args()
    sample = os.path.join(a.source, "tests", "data", "sample")
    ddp = os.path.join(a.source, "tests", "data", "ddp-2rank")
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "sample.sqlite")
        if not a.have_sqlite:
            r = run(a.decode, ["export", sample, "--format", "sqlite", "-o", out])
            check(r.returncode == 2 and "built without SQLite" in r.stderr,
                  f"without SQLite: exit {r.returncode}, {r.stderr!r}")
            check(not os.path.exists(out), "without SQLite: a file was written")
            return finish()

        # ---- one real recording (H200, CUPTI 13.0) ----
        export(a.decode, [sample], out)
        no_temporaries(work, "sample")
        db = sqlite3.connect(out)
        check_database(db, "sample")
        base = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        rank = db.execute("SELECT processStartUtcNs, host, pid FROM CUPMON_RANKS").fetchone()
        check(base == rank[0], f"sample: session start {base} is not the process start {rank[0]}")
        check(rank[1:] == ("vm", 2098), f"sample: rank {rank}")
        check(not has_table(db, "CUPMON_JOB_STEP_RANK"), "sample: a job table for one recording")
        check_recording(db, a.decode, [sample], work, "sample", base)
        calls = summary_calls(run(a.decode, ["summary", sample]).stdout)
        gpu_rows = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in GPU_TABLES)
        api_rows = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                       for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPMON_SECONDARY_API"))
        check(calls == {"gpu": gpu_rows, "api": api_rows},
              f"sample: summary's calls {calls}, database rows gpu {gpu_rows} api {api_rows}")
        windows = db.execute("SELECT windowId, source, end - start FROM CUPMON_WINDOWS ORDER BY 1").fetchall()
        check([w[:2] for w in windows] == [(1, "TRIGGER_SIGNAL"), (2, "TRIGGER_SOCKET")] and
              all(abs(w[2] - 1_000_000_000) < 1_000_000 for w in windows), f"sample: windows {windows}")
        # (A window's BEGIN marker is stamped once CUPTI's API kinds are on: calls already under
        # way then start up to the request-to-enabled latency, well under 1 ms, before it.)
        in_window = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUPMON_WINDOWS w "
                               "ON r.start BETWEEN w.start - 1000000 AND w.end").fetchone()[0]
        total_api = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()[0]
        check(in_window == total_api, f"sample: {total_api - in_window} API calls outside the windows")
        gpu = db.execute("SELECT name, computeMajor, uuid FROM TARGET_INFO_GPU").fetchall()
        check(len(gpu) == 1 and gpu[0][0] == "NVIDIA H200" and gpu[0][1] == 9 and
              gpu[0][2].startswith("GPU-"), f"sample: TARGET_INFO_GPU {gpu}")
        syncs = db.execute("SELECT COUNT(*), SUM(deviceId < 0) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION").fetchone()
        check(syncs == (294, 0), f"sample: synchronization rows {syncs}")
        short = db.execute("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                           "ON s.id = k.shortName GROUP BY 1").fetchall()
        check(all("(" not in v and "<" not in v for (v,) in short), f"sample: short names {short[:5]}")
        db.close()

        # ---- two ranks in one database ----
        out2 = os.path.join(work, "ddp.sqlite")
        export(a.decode, [ddp], out2)
        db = sqlite3.connect(out2)
        check_database(db, "ddp-2rank")
        base = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
        ranks = db.execute("SELECT rank, pid, label, globalPid FROM CUPMON_RANKS ORDER BY rank").fetchall()
        check([(r[0], r[1]) for r in ranks] == [(0, 1611), (1, 1612)], f"ddp-2rank: ranks {ranks}")
        check(all(g == (pid << 24) for _, pid, _, g in ranks), f"ddp-2rank: globalPids {ranks}")
        check_recording(db, a.decode, [ddp], work, "ddp-2rank", base)
        nccl = db.execute("SELECT k.globalPid, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                          "ON s.id = k.shortName WHERE s.value = 'ncclDevKernel_AllReduce_Sum_f32_RING_LL' "
                          "GROUP BY 1 ORDER BY 1").fetchall()
        check([c for _, c in nccl] == [3041, 3041], f"ddp-2rank: NCCL kernels per rank {nccl}")
        # Correlation ids repeat across ranks: without the globalPid condition the join pairs
        # kernels with other ranks' calls.
        loose = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                           "ON k.correlationId = r.correlationId").fetchone()[0]
        strict = db.execute(f"SELECT COUNT(*) {KERNEL_JOIN}").fetchone()[0]
        check(loose > strict, f"ddp-2rank: join without globalPid {loose}, with {strict}")
        begins = [b for (b,) in db.execute("SELECT start FROM CUPMON_WINDOWS WHERE windowId = 1")]
        check(len(begins) == 2 and abs(begins[0] - begins[1]) < 1_000_000,
              f"ddp-2rank: window #1 begins {begins} (one per rank, within 1 ms)")
        gpus = db.execute("SELECT id FROM TARGET_INFO_GPU ORDER BY id").fetchall()
        check(gpus == [(0,), (1,)], f"ddp-2rank: TARGET_INFO_GPU {gpus}")
        check_job_table(db, a.decode, [ddp], "ddp-2rank")
        db.close()
        # Filtered rows cannot feed the job analysis: no job table then.
        out3 = os.path.join(work, "ddp-gemm.sqlite")
        export(a.decode, [ddp], out3, ["--kernel", "gemm"])
        db = sqlite3.connect(out3)
        check(not has_table(db, "CUPMON_JOB_STEP_RANK"), "ddp-2rank --kernel gemm: a job table")
        db.close()
        os.remove(out3)

        # ---- bad input ----
        r = run(a.decode, ["export", sample, "--format", "sqlite"])
        check(r.returncode == 2 and "cannot write to standard output" in r.stderr and r.stdout == "",
              f"no -o: exit {r.returncode}, {r.stderr!r}")
        missing_dir = os.path.join(work, "no", "such", "dir", "x.sqlite")
        r = export(a.decode, [sample], missing_dir, want=(2,))
        check("cannot write" in r.stderr and missing_dir in r.stderr, f"missing directory: {r.stderr!r}")
        r = export(a.decode, [sample], work, want=(2,))
        check("is a directory" in r.stderr, f"directory as output: {r.stderr!r}")
        if os.geteuid() != 0:  # root writes into a read-only directory anyway
            ro = os.path.join(work, "readonly")
            os.mkdir(ro, 0o500)
            r = export(a.decode, [sample], os.path.join(ro, "x.sqlite"), want=(2,))
            check("Permission denied" in r.stderr, f"read-only directory: {r.stderr!r}")
            os.chmod(ro, 0o700)
        # An existing file is replaced by a complete database, and stays as it was when the
        # export fails.
        existing = os.path.join(work, "existing.sqlite")
        with open(existing, "w") as f:
            f.write("not a database")
        export(a.decode, [sample], existing)
        db = sqlite3.connect(existing)
        check(db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] == 166558,
              "existing file: not replaced by the sample's database")
        db.close()
        before = open(existing, "rb").read()
        r = export(a.decode, [os.path.join(work, "no-recording-here")], existing, want=(2,))
        check(open(existing, "rb").read() == before, "existing file: changed by a failed export")
        # A region with no rows: the tables, empty, and a note.
        empty = os.path.join(work, "empty.sqlite")
        r = export(a.decode, [sample], empty, ["--from", "100h"])
        check("holds no activity rows" in r.stderr, f"empty region: no note in {r.stderr!r}")
        db = sqlite3.connect(empty)
        check_database(db, "empty region")
        rows = sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                   for t in GPU_TABLES + ("CUPTI_ACTIVITY_KIND_RUNTIME",))
        check(rows == 0, f"empty region: {rows} rows")
        check(db.execute("SELECT COUNT(*) FROM CUPMON_RANKS").fetchone()[0] == 1, "empty region: no rank row")
        db.close()
        # Damaged input: bytes overwritten in the middle of a file, and a file cut short. What is
        # intact is exported (exit 1, as the other reports), and the counts still match the
        # decoder's view of the same damaged files.
        for how in ("overwritten", "truncated"):
            damaged = os.path.join(work, "damaged-" + how)
            shutil.copytree(sample, damaged)
            first = sorted(f for f in os.listdir(damaged) if f.endswith(".cupmon"))[0]
            path = os.path.join(damaged, first)
            data = bytearray(open(path, "rb").read())
            if how == "overwritten":
                data[len(data) // 2:len(data) // 2 + 4096] = b"\xff" * 4096
            else:
                del data[len(data) * 6 // 10:]
            open(path, "wb").write(bytes(data))
            out3 = os.path.join(work, "damaged-" + how + ".sqlite")
            export(a.decode, [damaged], out3, want=(1,))
            no_temporaries(work, how)
            db = sqlite3.connect(out3)
            check_database(db, how)
            kernels = db.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
            check(0 < kernels < 166558, f"{how}: {kernels} kernels")
            gpid = db.execute("SELECT globalPid FROM CUPMON_RANKS").fetchone()[0]
            damage = (counter(db, gpid, "integrity.damaged_ranges") or 0) + \
                (counter(db, gpid, "integrity.files_without_footer") or 0)
            check(damage > 0, f"{how}: CUPMON_COUNTERS shows no damage")
            base = db.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
            check_recording(db, a.decode, [damaged], work, how, base)
            db.close()
        no_temporaries(work, "all")
    return finish()


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
