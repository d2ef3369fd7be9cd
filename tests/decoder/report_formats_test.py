"""`cupmon-decode summary|info --format json|csv` on the recordings of tests/data: each document
parsed by Python's json and csv modules, its figures against the text report (formatted here the
way the text formats them) and against counts of `export --format jsonl`, merged totals against
the sum of the ranks, warnings against stderr on a damaged copy, device memory on a synthetic
recording, and the sample's summary against tests/data/golden/real-sample.summary.json
(CUPMON_UPDATE_GOLDEN=1 rewrites it).

Run by ctest (tests/decoder/CMakeLists.txt): report_formats_test.py --decode BIN --make-sample BIN
--source DIR.
"""

import argparse
import collections
import csv
import datetime
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None
RECORDINGS = ("sample", "ddp-2rank", "synthetic-sample", "h200-nvtx", "h200-torch-nvtx")


def decode(*args, cwd=None):
    return subprocess.run([ARGS.decode] + list(args), capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def data(name):
    return os.path.join(ARGS.source, "tests", "data", name)


def format_duration(ns):
    """FormatDuration (decoder/src/reports.cc): nvprof's units, 5 significant digits."""
    ns = float(ns)
    if ns < 1000.0:
        return "%.0fns" % ns if ns == int(ns) else "%.4gns" % ns
    v, unit = ns / 1e3, "us"
    if v >= 1000.0:
        v, unit = v / 1e3, "ms"
        if v >= 1000.0:
            v, unit = v / 1e3, "s"
    decimals = 4 if v < 10.0 else 3 if v < 100.0 else 2 if v < 1000.0 else 1
    return "%.*f%s" % (decimals, v, unit)


def iso_time(unix_ns):
    """IsoTime: UTC with nanoseconds."""
    secs, frac = divmod(unix_ns, 10**9)
    t = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % frac


TABLE_LINE = re.compile(r"^\s*(GPU activities:|API calls:|NVTX ranges:)?\s+([\d.]+)%\s+(\S+)\s+"
                        r"(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$")
TITLES = {"GPU activities:": "gpu_activities", "API calls:": "api_calls", "NVTX ranges:": "nvtx"}


def text_tables(section):
    """{table: [(percent, time, calls, avg, min, max, name)]} of one text summary section."""
    tables, current = {}, None
    for line in section:
        m = TABLE_LINE.match(line)
        if not m:
            continue
        if m.group(1):
            current = TITLES[m.group(1)]
        tables.setdefault(current, []).append(m.groups()[1:])
    return tables


def json_lines_as_text(lines):
    """A JSON table's lines formatted as the text formats them."""
    out = []
    for l in lines:
        dash = lambda v: "-" if v is None else format_duration(v)
        out.append(("%.2f" % l["time_percent"], format_duration(l["total_ns"]), str(l["calls"]),
                    dash(l["avg_ns"]), dash(l["min_ns"]), dash(l["max_ns"]), l["shown_name"]))
    return out


def split_summary(text):
    """The text summary's sections: one per recording, then the merged one (or None)."""
    sections, merged = [], None
    for line in text.splitlines():
        if re.match(r"^==cupmon== (rank \d+ \(.*\): )?Recording 0x", line):
            sections.append([line])
        elif line.startswith("==cupmon== Merged:"):
            merged = [line]
        elif merged is not None:
            merged.append(line)
        elif sections:
            sections[-1].append(line)
    return sections, merged


def stderr_messages(stderr, level):
    """`cupmon-decode: <level>: ...` lines of stderr, without the prefix."""
    p = "cupmon-decode: %s: " % level
    return [l[len(p):] for l in stderr.splitlines() if l.startswith(p)]


class SummaryJsonTest(unittest.TestCase):
    def load(self, path, *extra):
        r = decode("summary", path, "--format", "json", *extra)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["schema"], "cupmon.summary/1")
        return doc, r

    def test_against_text(self):
        for name in RECORDINGS:
            for extra in ((), ("--full-names",)):
                with self.subTest(recording=name, options=extra):
                    doc, jr = self.load(data(name), *extra)
                    tr = decode("summary", data(name), *extra)
                    self.assertEqual(jr.returncode, tr.returncode)
                    self.assertEqual(jr.stderr, tr.stderr)
                    sections, merged = split_summary(tr.stdout)
                    recs = doc["recordings"]
                    self.assertEqual(len(recs), len(sections))
                    self.assertEqual(doc["merged"] is None, merged is None)
                    for rec, section in zip(recs, sections):
                        self.check_section(rec, section)
                    if merged:
                        self.check_merged(doc["merged"], merged)

    def check_section(self, rec, section):
        head = "\n".join(l for l in section if l.startswith("==cupmon== "))
        self.assertIn("Recording %s: host %s, pid %d" % (rec["recording_id"], rec["host"],
                                                          rec["pid"]), head)
        self.assertIn("Command: " + (" ".join(rec["command"]) or "(unknown)"), head)
        span = rec["span"]
        if span["first_record_unix_ns"] is None:
            self.assertIn("Span: no timed records", head)
        else:
            self.assertIn("Span: %s + %s" % (iso_time(span["first_record_unix_ns"]),
                                             format_duration(span["duration_ns"])), head)
        devices = "".join(" [%d] %s (sm_%d%d)" % (d["id"], d["name"], d["cc_major"], d["cc_minor"])
                          for d in rec["devices"]) or " (none listed)"
        self.assertIn("Devices:" + devices + "\n", head + "\n")
        windows = "Windows: %d" % len(rec["windows"])
        for w in rec["windows"]:
            windows += " #%d" % w["id"]
            d = w["duration_ns"]
            windows += " (open)" if d is None else " " + format_duration(d)
            if w["launched_before"]:
                windows += " (%d launched before it opened)" % w["launched_before"]
        self.assertIn(windows + "\n", head + "\n")
        d = rec["drops"]
        self.assertIn("Drops: %d dropped records, %d buffer requests unmet, %d records with "
                      "unknown timestamps, %d buffers cut short" % (
                          d["dropped_records"], d["unmet_buffer_requests"],
                          d["unknown_timestamps"], d["buffers_cut_short"]), head)
        i = rec["integrity"]
        self.assertIn("Integrity: %d files, %d chunks, %d damaged ranges (%d bytes), %d chunks "
                      "missing, %d undecodable chunks" % (
                          i["files"], i["chunks"], i["damaged_ranges"], i["damaged_bytes"],
                          i["missing_chunks"], i["undecodable_chunks"]), head)
        tables = text_tables(section)
        self.assertEqual(json_lines_as_text(rec["gpu_activities"]),
                         tables.get("gpu_activities", []))
        self.assertEqual(json_lines_as_text(rec["api_calls"]), tables.get("api_calls", []))
        if rec["nvtx"] is None:
            self.assertNotIn("nvtx", tables)
        else:
            self.assertEqual(json_lines_as_text(rec["nvtx"]["table"]), tables.get("nvtx", []))
            n = rec["nvtx"]
            self.assertIn("NVTX: %d ranges, %d marks, %d unended, %d END(s) without START, "
                          "%d unresolved names" % (n["ranges"], n["marks"], n["unended"],
                                                   n["ends_without_start"],
                                                   n["unresolved_names"]), head)
        self.assertEqual(rec["memory"] is None, "Device memory:" not in head)

    def check_merged(self, m, section):
        self.assertTrue(section[0].startswith("==cupmon== Merged: %d ranks, " % m["ranks"]))
        job = m["job"]
        if not job["mixed"]:
            self.assertIn("job " + job["id"] if job["id"] else "no job id", section[0])
        rows = [l for l in section if re.match(r"^==cupmon== rank \d+ ", l)]
        self.assertEqual(len(rows), len(m["per_rank"]))
        for line, r in zip(rows, m["per_rank"]):
            first = iso_time(r["first_record_unix_ns"]) if r["first_record_unix_ns"] else "-"
            self.assertEqual(line.split()[1:], r["label"].split() + [
                format_duration(r["gpu_time_ns"]), str(r["gpu_rows"]), str(r["api_rows"]),
                str(r["windows"]), first])
        tables = text_tables(section)
        self.assertEqual(json_lines_as_text(m["gpu_activities"]), tables["gpu_activities"])
        self.assertEqual(json_lines_as_text(m["api_calls"]), tables["api_calls"])

    def test_merged_is_the_sum_of_the_ranks(self):
        doc, _ = self.load(data("ddp-2rank"))
        m = doc["merged"]
        self.assertEqual(m["ranks"], 2)
        self.assertEqual(len(doc["recordings"]), 2)
        self.assertEqual([r["rank"] for r in doc["recordings"]], [0, 1])
        for table in ("gpu_activities", "api_calls"):
            summed = {}
            for rec in doc["recordings"]:
                for l in rec[table]:
                    s = summed.setdefault(l["name"], {"calls": 0, "timed": 0, "total_ns": 0,
                                                      "min_ns": None, "max_ns": None})
                    for k in ("calls", "timed", "total_ns"):
                        s[k] += l[k]
                    if l["min_ns"] is not None:
                        lo, hi = s["min_ns"], s["max_ns"]
                        s["min_ns"] = l["min_ns"] if lo is None else min(lo, l["min_ns"])
                        s["max_ns"] = l["max_ns"] if hi is None else max(hi, l["max_ns"])
            got = {l["name"]: {k: l[k] for k in ("calls", "timed", "total_ns", "min_ns", "max_ns")}
                   for l in m[table]}
            self.assertEqual(got, summed, table)
            total = sum(l["total_ns"] for l in m[table])
            self.assertAlmostEqual(sum(l["time_percent"] for l in m[table]), 100.0, places=6)
            for l in m[table]:
                self.assertEqual(l["avg_ns"], l["total_ns"] / l["timed"])
                self.assertAlmostEqual(l["time_percent"], 100.0 * l["total_ns"] / total)
        for rec, r in zip(doc["recordings"], m["per_rank"]):
            self.assertEqual((r["rank"], r["label"], r["pid"]),
                             (rec["rank"], rec["label"], rec["pid"]))
            self.assertEqual(r["gpu_time_ns"], sum(l["total_ns"] for l in rec["gpu_activities"]))
            self.assertEqual(r["gpu_rows"], sum(l["calls"] for l in rec["gpu_activities"]))
            self.assertEqual(r["api_rows"], sum(l["calls"] for l in rec["api_calls"]))
            self.assertEqual(r["windows"], len(rec["windows"]))
            self.assertEqual(r["first_record_unix_ns"], rec["span"]["first_record_unix_ns"])

    def test_against_export_rows(self):
        """Calls and total time per name equal the rows of export --format jsonl, by rank."""
        for name in ("sample", "ddp-2rank", "h200-nvtx"):
            with self.subTest(recording=name):
                doc, _ = self.load(data(name), "--full-names")
                r = decode("export", data(name), "--format", "jsonl")
                self.assertIn(r.returncode, (0, 1), r.stderr)
                rows = collections.defaultdict(lambda: [0, 0])
                for line in r.stdout.splitlines():
                    row = json.loads(line)
                    table = "api_calls" if row["type"] == "api" else "gpu_activities"
                    if row["type"] not in ("api", "kernel", "memcpy", "memset"):
                        continue
                    key = (row.get("rank", 0), table, row["name"])
                    rows[key][0] += 1
                    if row["duration_ns"] is not None:
                        rows[key][1] += row["duration_ns"]
                got = {(rec["rank"], t, l["name"]): [l["calls"], l["total_ns"]]
                       for rec in doc["recordings"] for t in ("gpu_activities", "api_calls")
                       for l in rec[t]}
                self.assertEqual(got, dict(rows))
                kernels = sum(l["calls"] for rec in doc["recordings"] for l in rec["gpu_activities"]
                              if not l["name"].startswith("[CUDA mem"))
                self.assertEqual(kernels, sum(v[0] for k, v in rows.items()
                                              if k[1] == "gpu_activities"
                                              and not k[2].startswith("[CUDA mem")))

    def test_csv_is_the_json_tables(self):
        for name in ("sample", "ddp-2rank", "h200-torch-nvtx"):
            with self.subTest(recording=name):
                doc, _ = self.load(data(name))
                r = decode("summary", data(name), "--format", "csv")
                self.assertIn(r.returncode, (0, 1), r.stderr)
                rows = list(csv.DictReader(io.StringIO(r.stdout)))
                self.assertEqual(r.stdout.splitlines()[0],
                                 "rank,pid,table,name,shown_name,calls,timed,total_ns,"
                                 "time_percent,avg_ns,min_ns,max_ns")
                want = []
                for rec in doc["recordings"]:
                    tables = [("gpu", rec["gpu_activities"]), ("api", rec["api_calls"]),
                              ("nvtx", rec["nvtx"]["table"] if rec["nvtx"] else [])]
                    for t, lines in tables:
                        for l in lines:
                            want.append([str(rec["rank"]), str(rec["pid"]), t, l["name"],
                                         l["shown_name"], str(l["calls"]), str(l["timed"]),
                                         str(l["total_ns"]), repr(float(l["time_percent"])),
                                         "" if l["avg_ns"] is None else repr(float(l["avg_ns"])),
                                         "" if l["min_ns"] is None else str(l["min_ns"]),
                                         "" if l["max_ns"] is None else str(l["max_ns"])])
                got = [[row[k] for k in ("rank", "pid", "table", "name", "shown_name", "calls",
                                         "timed", "total_ns", "time_percent", "avg_ns", "min_ns",
                                         "max_ns")] for row in rows]
                got = [g[:8] + [repr(float(g[8]))] + [repr(float(g[9])) if g[9] else ""] + g[10:]
                       for g in got]
                self.assertEqual(got, want)

    def test_device_memory(self):
        """A synthetic recording with MEMORY2 and MEMORY_POOL records (cupmon-make-sample)."""
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([ARGS.make_sample, "--memory", tmp], check=True, capture_output=True)
            doc, _ = self.load(tmp)
            text = decode("summary", tmp).stdout
        (rec,) = doc["recordings"]
        m = rec["memory"]
        self.assertIsNotNone(m)
        self.assertIn("Device memory: %d MEMORY2 records, %d MEMORY_POOL records" % (
            m["memory_records"], m["memory_pool_records"]), text)
        self.assertTrue(m["devices"])
        for d in m["devices"]:
            self.assertIn("device %d: peak %d B" % (d["device"], d["peak_bytes"]), text)
            if d["peak_unix_ns"] is not None:
                self.assertIn(" in use at %s; %d B" % (iso_time(d["peak_unix_ns"]),
                                                       d["in_use_at_end_bytes"]), text)
            self.assertIn("%d allocations, %d releases" % (d["allocations"], d["releases"]), text)
            if d["allocations"]:
                self.assertIn("allocation size: total %d B" % d["allocated_bytes"], text)
                self.assertIn(", min %d B" % d["allocation_min_bytes"], text)
                self.assertIn(", max %d B" % d["allocation_max_bytes"], text)
                self.assertIn(", mean %d B" % d["allocation_mean_bytes"], text)
                self.assertEqual(d["allocation_mean_bytes"],
                                 d["allocated_bytes"] // d["allocations"])
            self.assertEqual(sum(k["allocations"] for k in d["by_kind"]), d["allocations"])
            for k in d["by_kind"]:
                self.assertIn("%s: %d allocations, %d B" % (k["name"], k["allocations"],
                                                            k["bytes"]), text)

    def test_golden_sample(self):
        r = decode("summary", data("sample"), "--format", "json")
        self.assertEqual(r.returncode, 0, r.stderr)
        path = data("golden/real-sample.summary.json")
        if os.environ.get("CUPMON_UPDATE_GOLDEN") == "1":
            with open(path, "w") as f:
                f.write(r.stdout)
        with open(path) as f:
            self.assertEqual(r.stdout, f.read())


class InfoJsonTest(unittest.TestCase):
    def test_against_text(self):
        for name in RECORDINGS:
            with self.subTest(recording=name):
                jr = decode("info", data(name), "--format", "json")
                tr = decode("info", data(name))
                self.assertIn(jr.returncode, (0, 1), jr.stderr)
                self.assertEqual((jr.returncode, jr.stderr), (tr.returncode, tr.stderr))
                doc = json.loads(jr.stdout)
                self.assertEqual(doc["schema"], "cupmon.info/1")
                blocks = re.split(r"\n(?=(?:rank \d+ \(.*\): )?Recording 0x)", tr.stdout)
                if doc["merged"]:
                    self.check_merged(doc["merged"], blocks[0])
                    blocks = blocks[1:]
                self.assertEqual(len(blocks), len(doc["recordings"]))
                for rec, block in zip(doc["recordings"], blocks):
                    self.check_block(rec, block)

    def check_block(self, rec, text):
        self.assertIn("Recording " + rec["recording_id"], text)
        versions = tuple(rec[k] for k in (
            "host", "pid", "format_major", "format_minor", "cupti_api_version",
            "cuda_driver_version", "cuda_runtime_version", "cupmon_version"))
        self.assertIn("host %s, pid %d, format %d.%d, CUPTI API %d, driver %d, runtime %d, "
                      "cupmon %s" % versions, text)
        self.assertIn("files: %d\n" % len(rec["files"]), text)
        for f in rec["files"]:
            self.assertIn("[%d] %s (%d bytes)" % (f["index"], f["path"], f["bytes"]), text)
        self.assertIn("chunks: %d, raw buffers: %d, records: %d" % (
            rec["chunks"], rec["raw_buffers"], rec["records"]), text)
        self.assertIn("records by kind:" + "".join(" %d=%d" % (k["kind"], k["records"])
                                                   for k in rec["records_by_kind"]) + "\n", text)
        self.assertEqual(sum(k["records"] for k in rec["records_by_kind"]), rec["records"])
        self.assertIn("windows: %d\n" % len(rec["windows"]), text)
        for w in rec["windows"]:
            d = w["duration_ns"]
            dur = "open/unknown end" if d is None else format_duration(d)
            self.assertIn("#%d source %s, %s" % (w["id"], w["source"], dur), text)
            if w["launched_before"]:
                self.assertIn("%d GPU activities launched before it opened" % w["launched_before"],
                              text)
        self.assertIn("no records inside): %d\n" % len(rec["gaps"]), text)
        self.assertIn("not counted by CUPTI): %d\n" % len(rec["cupti_behind"]), text)
        o = rec["other_cupti_client"]
        if any(o[k] for k in ("stranded_buffers", "imports_rebound", "shared_records",
                              "undelivered_records")):
            self.assertIn("another CUPTI client: %d cupmon buffers stranded with it (their records "
                          "lost), %d records shared with it, %d it could not be given, %d CUPTI "
                          "imports rebound" % (o["stranded_buffers"], o["shared_records"],
                                               o["undelivered_records"], o["imports_rebound"]), text)
        else:
            self.assertNotIn("another CUPTI client:", text)
        s = rec["stats"]
        self.assertIn("stats: %d buffers, %d dropped records, %d unmet buffer requests, %d "
                      "zero-timestamp records, %d write errors, %d chunks lost, %d files deleted "
                      "by retention" % (s["buffers_completed"], s["dropped_records"],
                                     s["unmet_buffer_requests"], s["zero_timestamp_records"],
                                     s["write_errors"], s["chunks_lost"], s["files_deleted"]), text)
        i = tuple(rec["integrity"][k] for k in (
            "damaged_ranges", "damaged_bytes", "undecodable_chunks", "unknown_chunk_types",
            "sequence_gaps", "missing_chunks", "missing_files", "files_without_footer"))
        self.assertIn("integrity: %d damaged ranges (%d bytes), %d undecodable chunks, %d unknown "
                      "chunk types, %d sequence gaps (%d chunks), %d missing files, %d files "
                      "without footer" % i, text)
        d = rec["decoding"]
        self.assertIn("decoding: %d buffers cut short, %d records of kinds not decoded, %d unknown "
                      "timestamps, %d unresolved names, %d duplicate API correlation ids, %d GPU "
                      "records without API record (%d of them launched before their window), %d "
                      "calibration samples (%d non-monotonic)" % (
                          d["buffers_cut_short"], d["records_not_decoded"],
                          d["unknown_timestamps"], d["unresolved_names"],
                          d["duplicate_api_correlation_ids"], d["gpu_without_api"],
                          d["launched_before_window"], d["calibration_samples"],
                          d["calibration_non_monotonic"]), text)
        b = rec["record_balance"]
        if b["have_stats"]:
            self.assertIn("records: %d in, %d decoded, %d lost before disk, %d deleted by retention"
                          % (b["in"], b["decoded"], b["lost_before_disk"],
                             b["deleted_by_retention"]), text)
            if b["balanced"]:
                self.assertIn("all accounted for", text)
        c = rec["calibration"]
        if c is None:
            self.assertNotIn("  calibration:", text)
        else:
            self.assertIn("offset %d to %d ns over the samples (first %d ns)" % (
                c["offset_min_ns"], c["offset_max_ns"], c["offset_first_ns"]), text)

    def check_merged(self, m, text):
        self.assertTrue(text.startswith("Ranks: %d, " % m["ranks"]))
        for r in m["per_rank"]:
            first = iso_time(r["first_record_unix_ns"]) if r["first_record_unix_ns"] else "-"
            self.assertIn("%s: recording %s, %d file(s), %d records, %d window(s), rank %s" % (
                r["label"], r["recording_id"], r["files"], r["records"], r["windows"],
                "from the launcher" if r["rank_from_launcher"] else "by (host, pid) order"), text)
            self.assertIn("first record " + first, text)
        for w in m["windows"]:
            self.assertIn("  #%d\n" % w["id"], text)
            begins = [r["begin_unix_ns"] for r in w["ranks"] if r["begin_unix_ns"] is not None]
            self.assertEqual(w["spread_ns"], max(begins) - min(begins) if begins else None)
            self.assertIn("spread of begins: " + (format_duration(w["spread_ns"])
                                                  if w["spread_ns"] is not None else "-"), text)
            for r in w["ranks"]:
                if r["begin_unix_ns"] is not None:
                    self.assertIn("%s  %s  %s" % (r["label"], iso_time(r["begin_unix_ns"]),
                                                  format_duration(r["duration_ns"])), text)

    def test_ddp_windows_and_ranks(self):
        r = decode("info", data("ddp-2rank"), "--format", "json")
        doc = json.loads(r.stdout)
        m = doc["merged"]
        self.assertEqual([p["rank"] for p in m["per_rank"]], [0, 1])
        self.assertEqual(m["job"], {"id": "f2c22ece-effc-4568-9ebc-df0adb79b60a", "mixed": False})
        self.assertEqual([w["id"] for w in m["windows"]], [1])
        for rec, p in zip(doc["recordings"], m["per_rank"]):
            self.assertEqual(p["records"], rec["records"])
            self.assertEqual(p["files"], len(rec["files"]))
            self.assertEqual(p["windows"], len(rec["windows"]))
            (w,) = rec["windows"]
            (mw,) = [x for x in m["windows"][0]["ranks"] if x["rank"] == rec["rank"]]
            self.assertEqual((mw["begin_unix_ns"], mw["duration_ns"]),
                             (w["begin_unix_ns"], w["duration_ns"]))

    def test_damage_is_in_the_document(self):
        """A damaged copy: its warnings are stderr's, its integrity says so, exit code 1."""
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "sample")
            shutil.copytree(data("sample"), copy)
            first = sorted(f for f in os.listdir(copy) if f.endswith(".cupmon"))[0]
            with open(os.path.join(copy, first), "r+b") as f:
                f.seek(400000)
                f.write(b"\0" * 4096)
            for command in ("info", "summary"):
                r = decode(command, copy, "--format", "json")
                self.assertEqual(r.returncode, 1, r.stderr)
                doc = json.loads(r.stdout)
                (rec,) = doc["recordings"]
                self.assertGreater(rec["integrity"]["damaged_ranges"], 0)
                self.assertTrue(rec["warnings"])
                self.assertEqual(rec["warnings"], stderr_messages(r.stderr, "warning"))
                if command == "info":
                    self.assertTrue(rec["integrity"]["damaged"])


class CommandLineTest(unittest.TestCase):
    def test_info_csv_is_refused(self):
        r = decode("info", data("sample"), "--format", "csv")
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stdout, "")

    def test_help_shows_json(self):
        for command in ("summary", "info"):
            r = decode(command, "--help")
            self.assertEqual(r.returncode, 0)
            self.assertIn("cupmon-decode %s job/ --format json" % command, r.stdout)

    def test_output_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "s.json")
            r = decode("summary", data("sample"), "--format", "json", "-o", out)
            self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f)["schema"], "cupmon.summary/1")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--decode", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--make-sample", required=True)
    ARGS, rest = p.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
