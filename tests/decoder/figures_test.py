#!/usr/bin/env python3
"""Checks `steps`, `timeline` and `summary` figure by figure against figures_reference.py, which
computes each from the rows of `export --format jsonl` by its definition (docs/DECODER.md,
"Figures and their reference"). Inputs: every recording directory bundled in tests/data, each
rank alone (--pid), and synthetic recordings written by cupmon-make-sample whose records arrive
out of start order across streams and buffers.

Compared exactly: every integer (ns, counts, bytes) as an integer; timeline's four float columns
(busy_pct, kernel_busy_pct, kernels_per_s, memcpy_bytes_per_s) as the text both print from the
same double arithmetic ("%.3f"); summary's columns as the text it prints (FormatDuration, "%.2f%%").
Step boundaries (each step's start) are taken from `steps` itself: step detection is not what is
checked here, the figures given the boundaries are.

usage: figures_test.py --decode BIN --make-sample BIN --source REPO [--work DIR]
"""
import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import figures_reference as ref  # noqa: E402

failures = []
MAX_SHOWN = 8  # disagreements printed per figure and input (all are counted)


class Report:
    """Collects disagreements of one check, prints the first few, counts them all."""

    def __init__(self, what):
        self.what, self.count, self.compared = what, 0, 0

    def equal(self, fast, reference, where):
        self.compared += 1
        if fast != reference:
            self.count += 1
            if self.count <= MAX_SHOWN:
                print("  differs: %s %s: decoder %r, reference %r" % (self.what, where, fast, reference))

    def check(self, cond, where):
        self.compared += 1
        if not cond:
            self.count += 1
            if self.count <= MAX_SHOWN:
                print("  fails: %s %s" % (self.what, where))

    def close(self):
        print("%s: %d compared, %d differ" % (self.what, self.compared, self.count))
        if self.count:
            failures.append("%s: %d of %d differ" % (self.what, self.count, self.compared))


def run(args, stdout=None):
    p = subprocess.run(args, stdout=subprocess.PIPE if stdout is None else stdout,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 1):  # 1: warnings (damage, drops), figures still written
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr[-2000:]))
    return p.stdout


def pids_of(decode, path):
    """The pid of each rank `info` lists (a launcher without records is left out there)."""
    return [int(p) for p in re.findall(r"^  host .*?, pid (\d+),", run([decode, "info", path]), re.M)]


def check_steps(decode, path, pid, by, export_cupti, tag):
    steps = [json.loads(l) for l in run([decode, "steps", path, "--pid", str(pid), "--by", by,
                                         "--format", "jsonl", "--clock", "cupti"]).splitlines()
             if l.strip()]
    if not steps:
        print("%s: no steps --by %s" % (tag, by))
        return
    reference = ref.step_figures(ref.timed_activities(export_cupti), [s["start_ns"] for s in steps])
    r = Report("%s steps --by %s (%d steps)" % (tag, by, len(steps)))
    for fast, mine in zip(steps, reference):
        at = "step %d" % fast["step"]
        r.equal(fast["end_ns"], mine["end"], at + " end_ns")
        for key in ("duration_ns", "kernels", "memcpys", "memsets", "memcpy_bytes", "comm_ns"):
            r.equal(fast[key], mine[key], at + " " + key)
        devices = {d["device"]: d for d in fast["devices"]}
        r.equal(sorted(devices), sorted(mine["devices"]), at + " devices")
        for device, d in mine["devices"].items():
            f = devices.get(device, {})
            r.equal(f.get("busy_ns"), d["busy_ns"], "%s dev%d busy_ns" % (at, device))
            r.equal(f.get("max_gap_ns"), d["max_gap_ns"], "%s dev%d max_gap_ns" % (at, device))
        # What must hold whatever the rows: the longest gap fits in the idle time.
        for d in fast["devices"]:
            r.check(d["max_gap_ns"] <= fast["duration_ns"] - d["busy_ns"],
                    "%s dev%d max_gap_ns %d <= idle %d" % (at, d["device"], d["max_gap_ns"],
                                                            fast["duration_ns"] - d["busy_ns"]))
    r.close()


def check_timeline(decode, path, pid, export_wall, bucket_ns, tag):
    text = run([decode, "timeline", path, "--pid", str(pid), "--bucket", "%dns" % bucket_ns,
                "--format", "csv"])
    fast = {(int(row["bucket_start_ns"]), int(row["device"])): row
            for row in csv.DictReader(io.StringIO(text))}
    reference = ref.timeline_figures(export_wall, bucket_ns)
    r = Report("%s timeline --bucket %dns (%d rows)" % (tag, bucket_ns, len(fast)))
    r.equal(sorted(fast), sorted(reference), "rows (bucket, device)")
    for key in sorted(set(fast) & set(reference)):
        f, mine = fast[key], reference[key]
        for col, value in mine.items():
            r.equal(f[col] if col.endswith(("_pct", "_per_s")) else int(f[col]), value,
                    "bucket %d dev%d %s" % (key[0], key[1], col))
    r.close()


def summary_tables(text):
    """`summary --full-names`' GPU activities and API calls tables: section -> name -> columns."""
    tables, section = {}, None
    row = re.compile(r"^\s*(GPU activities:|API calls:)?\s+(\d+\.\d\d%)\s+(\S+)\s+(\d+)\s+(\S+)"
                     r"\s+(\S+)\s+(\S+)\s+(.*)$")
    for line in text.splitlines():
        if line.startswith("==cupmon==") or line.lstrip().startswith("NVTX ranges:"):
            section = None
            continue
        m = row.match(line)
        if not m:
            continue
        section = m.group(1) or section
        if section is None:  # another table (NVTX ranges)
            continue
        pct, time, calls, avg, mn, mx, name = m.groups()[1:]
        tables.setdefault(section, {})[name] = {"pct": pct, "time": time, "calls": calls,
                                                "avg": avg, "min": mn, "max": mx}
    return tables


def check_summary(decode, path, pid, export_wall, tag):
    fast = summary_tables(run([decode, "summary", path, "--pid", str(pid), "--full-names"]))
    reference = {k: v for k, v in ref.summary_figures(export_wall).items() if v}
    r = Report("%s summary" % tag)
    r.equal(sorted(fast), sorted(reference), "sections")
    for section, table in reference.items():
        r.equal(sorted(fast.get(section, {})), sorted(table), section + " names")
        for name, cols in table.items():
            for col, value in cols.items():
                r.equal(fast.get(section, {}).get(name, {}).get(col), value,
                        "%s %s %s" % (section, name, col))
    r.close()


def check_recording(decode, path, tag, buckets):
    for pid in pids_of(decode, path):
        who = "%s pid %d" % (tag, pid)
        export_cupti = ref.read_jsonl_text(run([decode, "export", path, "--pid", str(pid),
                                                "--format", "jsonl", "--clock", "cupti"]))
        export_wall = ref.read_jsonl_text(run([decode, "export", path, "--pid", str(pid),
                                               "--format", "jsonl"]))
        for by in ("pattern", "annotation"):
            check_steps(decode, path, pid, by, export_cupti, who)
        for bucket_ns in buckets:
            check_timeline(decode, path, pid, export_wall, bucket_ns, who)
        check_summary(decode, path, pid, export_wall, who)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--make-sample", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", help="where the synthetic recordings go (default: a temporary dir)")
    ap.add_argument("--only", help="only inputs whose name holds this")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="cupmon-figures-")
    data = os.path.join(a.source, "tests", "data")
    inputs = []
    for name in sorted(os.listdir(data)):
        path = os.path.join(data, name)
        if os.path.isdir(path) and any(f.endswith(".cupmon") for f in os.listdir(path)):
            inputs.append((name, path))
    # Synthetic recordings (CUPTI test double) made to arrive out of start order: across two
    # buffers filled side by side, and across streams whose long kernels are recorded when they
    # end (overlapping communication, a side stream crossing step boundaries, a second device).
    for flag, extra in (("--steps", ["20000"]), ("--overlapping-steps", []),
                        ("--annotated-steps", []), ("--memory", []), ("--overlap", [])):
        out = os.path.join(work, flag.strip("-"))
        shutil.rmtree(out, ignore_errors=True)
        subprocess.run([a.make_sample, flag, out] + extra, check=True, stdout=subprocess.DEVNULL)
        inputs.append(("synthetic " + flag.strip("-"), out))
    for name, path in inputs:
        if a.only and a.only not in name:
            continue
        print("== %s" % name)
        # 1 ms buckets: many bucket edges fall inside activities; 10 ms: a coarser cut; the short
        # synthetic recordings also at 10 us, a few kernels and memory records a bucket.
        buckets = (1_000_000, 10_000_000) + ((10_000,) if name.startswith("synthetic") else ())
        check_recording(a.decode, path, name, buckets)
    if failures:
        print("\n%d check(s) failed:" % len(failures))
        for f in failures:
            print("  " + f)
        return 1
    print("\nall figures agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
