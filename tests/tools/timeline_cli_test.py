"""`cupmon-decode timeline` on the real recordings of tests/data: its kernel counts against
`summary`, its busy time against a union of intervals computed here from `export --format jsonl`,
the shape of its rows (every bucket, aligned, csv = jsonl), the filters, and its refusals.

Run by ctest (tests/tools/CMakeLists.txt) with CUPMON_DECODE and CUPMON_SOURCE in the environment.
"""

import csv
import io
import json
import os
import re
import subprocess
import tempfile
import unittest

DECODE = os.environ.get("CUPMON_DECODE", "")
DATA = os.path.join(os.environ.get("CUPMON_SOURCE", ""), "tests", "data")
SAMPLE = os.path.join(DATA, "sample")
DDP = os.path.join(DATA, "ddp-2rank")
GPU_TYPES = ("kernel", "memcpy", "memset")


def decode(*args):
    return subprocess.run([DECODE] + list(args), capture_output=True, text=True, timeout=300)


def timeline_rows(*args):
    r = decode("timeline", *args)
    if r.returncode not in (0, 1):
        raise AssertionError(f"timeline {args}: exit {r.returncode}: {r.stderr}")
    return list(csv.DictReader(io.StringIO(r.stdout))), r


def summary_kernels(*args):
    """Kernel calls in `summary`'s GPU activities table (every row that is no memcpy/memset)."""
    r = decode("summary", *args)
    assert r.returncode in (0, 1), r.stderr
    total, in_gpu = 0, False
    row = re.compile(r"^\s*(?:GPU activities:)?\s+[\d.]+%\s+\S+\s+(\d+)\s+\S+\s+\S+\s+\S+\s+(.*)$")
    for line in r.stdout.splitlines():
        if "GPU activities:" in line:
            in_gpu = True
        elif "API calls:" in line:
            in_gpu = False
        m = row.match(line)
        if in_gpu and m and not m.group(2).startswith("[CUDA mem"):
            total += int(m.group(1))
    return total


def export_intervals(*args):
    """{(rank, device): [(start, end), ...]} of GPU rows, from export --format jsonl."""
    r = decode("export", "--format", "jsonl", *args)
    assert r.returncode in (0, 1), r.stderr
    out = {}
    for line in r.stdout.splitlines():
        row = json.loads(line)
        if row["type"] in GPU_TYPES and row["start_ns"] is not None:
            key = (row.get("rank", 0), row["device"])
            out.setdefault(key, []).append((row["start_ns"], max(row["end_ns"], row["start_ns"])))
    return out


def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def busy_by_bucket(intervals, bucket):
    """{bucket start: busy ns} of the union of `intervals`, clipped to buckets of `bucket` ns."""
    busy = {}
    for s, e in union(intervals):
        b = s // bucket * bucket
        while b < e:
            busy[b] = busy.get(b, 0) + min(e, b + bucket) - max(s, b)
            b += bucket
    return busy


@unittest.skipUnless(DECODE and os.path.exists(DECODE), "CUPMON_DECODE is not set")
class TimelineCliTest(unittest.TestCase):
    def check_against_export(self, path, bucket, bucket_ns, *extra):
        rows, r = timeline_rows(path, "--bucket", bucket, *extra)
        self.assertTrue(rows, r.stderr)
        intervals = export_intervals(path, *extra)
        self.assertEqual({(int(x["rank"]), int(x["device"])) for x in rows}, set(intervals))
        for key, ivs in intervals.items():
            with self.subTest(path=path, bucket=bucket, rank_device=key):
                mine = [x for x in rows if (int(x["rank"]), int(x["device"])) == key]
                expect = busy_by_bucket(ivs, bucket_ns)
                got = {int(x["bucket_start_ns"]): int(x["busy_ns"]) for x in mine}
                # Every bucket with busy time is there with the same busy time; the others are 0.
                for b, ns in expect.items():
                    self.assertEqual(got.get(b), ns, f"bucket {b}")
                self.assertEqual(sum(got.values()), sum(e - s for s, e in union(ivs)))
                self.assertEqual(sum(got.values()), sum(expect.values()))
                # Buckets are aligned, consecutive from the first to the last (empty ones as 0).
                starts = sorted(got)
                self.assertEqual(starts, list(range(starts[0], starts[-1] + 1, bucket_ns)))
                self.assertTrue(all(b % bucket_ns == 0 for b in starts))
                for x in mine:
                    self.assertEqual(int(x["bucket_ns"]), bucket_ns)
                    self.assertAlmostEqual(float(x["busy_pct"]),
                                           100 * int(x["busy_ns"]) / bucket_ns, delta=0.001)
                    self.assertLessEqual(int(x["kernel_busy_ns"]), int(x["busy_ns"]))
                    self.assertLessEqual(int(x["busy_ns"]), bucket_ns)
        return rows, r

    def test_sample_busy_time_is_the_union_of_the_exported_intervals(self):
        for bucket, ns in (("1s", 10**9), ("100ms", 10**8), ("10ms", 10**7)):
            rows, r = self.check_against_export(SAMPLE, bucket, ns)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("left out of the rows", r.stderr)
            self.assertNotIn("of their busy time is left out", r.stderr)

    def test_sample_kernels_sum_to_the_summary_count(self):
        rows, _ = timeline_rows(SAMPLE, "--bucket", "100ms")
        kernels = sum(int(x["kernels"]) for x in rows)
        self.assertEqual(kernels, summary_kernels(SAMPLE))
        self.assertGreater(kernels, 100000)  # the sample's ~166k kernels, not an empty parse

    def test_two_ranks_each_get_rows_and_match_summary_and_export(self):
        rows, r = self.check_against_export(DDP, "1s", 10**9)
        self.assertNotIn("left out", r.stderr.replace("left out: vm:1532", ""))
        self.assertEqual({(x["rank"], x["pid"], x["device"]) for x in rows},
                         {("0", "1611", "0"), ("1", "1612", "1")})
        for rank, pid in (("0", "1611"), ("1", "1612")):
            with self.subTest(rank=rank):
                mine = [x for x in rows if x["rank"] == rank]
                self.assertEqual(sum(int(x["kernels"]) for x in mine),
                                 summary_kernels(DDP, "--pid", pid))

    def test_jsonl_holds_the_same_rows_as_csv(self):
        rows, _ = timeline_rows(DDP, "--bucket", "500ms")
        r = decode("timeline", DDP, "--bucket", "500ms", "--format", "jsonl")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        js = [json.loads(line) for line in r.stdout.splitlines()]
        self.assertEqual(len(js), len(rows))
        for c, j in zip(rows, js):
            self.assertEqual(set(c), set(j))
            for k, v in c.items():
                self.assertEqual(str(j[k]) if not isinstance(j[k], float) else f"{j[k]:.3f}", v, k)

    def test_memcpy_bytes_split_by_direction_add_up(self):
        rows, _ = timeline_rows(DDP, "--bucket", "1s")
        total = sum(int(x["memcpy_bytes"]) for x in rows)
        self.assertGreater(total, 0)
        split = sum(int(x[k]) for x in rows
                    for k in ("memcpy_h2d_bytes", "memcpy_d2h_bytes", "memcpy_d2d_bytes"))
        self.assertLessEqual(split, total)
        self.assertGreater(split, 0)
        for x in rows:
            self.assertAlmostEqual(float(x["memcpy_bytes_per_s"]), int(x["memcpy_bytes"]),
                                   delta=0.001)  # 1 s buckets: bytes/s = bytes

    def test_filters_apply(self):
        rows, _ = timeline_rows(DDP, "--bucket", "1s", "--device", "1")
        self.assertTrue(rows)
        self.assertEqual({x["device"] for x in rows}, {"1"})
        rows, _ = timeline_rows(DDP, "--bucket", "1s", "--pid", "1611")
        self.assertEqual({x["pid"] for x in rows}, {"1611"})
        everything, _ = timeline_rows(SAMPLE, "--bucket", "1s")
        gemm, _ = timeline_rows(SAMPLE, "--bucket", "1s", "--kernel", "gemm")
        n_all = sum(int(x["kernels"]) for x in everything)
        n_gemm = sum(int(x["kernels"]) for x in gemm)
        self.assertTrue(0 < n_gemm < n_all, (n_gemm, n_all))
        self.assertTrue(all(int(x["memcpys"]) == 0 for x in gemm))
        # A trace window: the kernels export lists in it.
        windowed, _ = timeline_rows(SAMPLE, "--bucket", "100ms", "--window", "1")
        exported = decode("export", SAMPLE, "--format", "jsonl", "--window", "1").stdout
        n_window = sum(json.loads(line)["type"] == "kernel" for line in exported.splitlines())
        self.assertEqual(sum(int(x["kernels"]) for x in windowed), n_window)
        self.assertTrue(0 < n_window < n_all, (n_window, n_all))
        # A time range (the sample's GPU work runs from ~5 s to its end at ~10.7 s): only the
        # activities that export lists for it, in buckets from the first to the last.
        ranged, _ = self.check_against_export(SAMPLE, "100ms", 10**8, "--from", "6s", "--to", "8s")
        n_ranged = sum(int(x["kernels"]) for x in ranged)
        self.assertTrue(0 < n_ranged < n_all, (n_ranged, n_all))
        # 2 s not aligned to 100 ms: 21 buckets, and one more that an activity's end reaches.
        self.assertLessEqual(len({x["bucket_start_ns"] for x in ranged}), 22)

    def test_an_empty_region_writes_only_the_header(self):
        r = decode("timeline", SAMPLE, "--from", "@1000", "--to", "@2000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[0].split(",")[0], "bucket_start")
        self.assertEqual(len(r.stdout.splitlines()), 1)
        self.assertIn("no GPU activity", r.stderr)

    def test_bad_bucket_sizes_are_refused_with_the_reason(self):
        for arg, says in (("0s", "is zero"), ("--bucket=-1s", "has a sign"), ("-1s", "has a sign"),
                          ("abc", "is not a number"), ("10", "has no unit"),
                          ("1week", "unknown unit 'week'"), ("100ns", "below 1us"),
                          ("", "is empty")):
            with self.subTest(arg=arg):
                args = [arg] if arg.startswith("--") else ["--bucket", arg]
                r = decode("timeline", SAMPLE, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("cupmon-decode: --bucket: bucket size", r.stderr)
                self.assertIn(says, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_a_bucket_too_small_for_the_span_is_refused(self):
        # The sample spans ~10.7 s: ~10.7e6 buckets of 1 us, over a limit of 1e6.
        r = decode("timeline", SAMPLE, "--bucket", "1us", "--max-rows", "1000000")
        self.assertEqual(r.returncode, 2, r.stderr[-500:])
        self.assertIn("--bucket 1.0000us would write more than 1000000 rows", r.stderr)
        self.assertIn("give a larger --bucket", r.stderr)
        lines = r.stdout.splitlines()
        self.assertLessEqual(len(lines), 1000001)

    def test_damaged_input_warns_and_keeps_what_is_intact(self):
        with tempfile.TemporaryDirectory() as d:
            names = sorted(n for n in os.listdir(SAMPLE) if n.endswith(".cupmon"))
            for n in names:
                with open(os.path.join(SAMPLE, n), "rb") as f:
                    data = f.read()
                if n == names[-1]:
                    data = data[: len(data) // 2]  # the last file cut in the middle
                with open(os.path.join(d, n), "wb") as f:
                    f.write(data)
            r = decode("timeline", d)
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("cupmon-decode: warning:", r.stderr)
            rows = list(csv.DictReader(io.StringIO(r.stdout)))
            whole, _ = timeline_rows(SAMPLE)
            cut = sum(int(x["kernels"]) for x in rows)
            self.assertTrue(0 < cut < sum(int(x["kernels"]) for x in whole), cut)
        r = decode("timeline", "/nonexistent-recording-dir")
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent-recording-dir", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_other_formats_are_refused(self):
        r = decode("timeline", SAMPLE, "--format", "chrome-json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("chrome-json not in {csv,jsonl}", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_limit_is_refused(self):
        r = decode("timeline", SAMPLE, "--limit", "5")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--limit does not apply", r.stderr)

    def test_unwritable_output_is_reported(self):
        r = decode("timeline", SAMPLE, "-o", "/nonexistent-dir/t.csv")
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot write /nonexistent-dir/t.csv", r.stderr)
        if os.path.exists("/dev/full"):
            r = decode("timeline", SAMPLE, "--bucket", "10ms", "-o", "/dev/full")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("writing the timeline failed", r.stderr)

    def test_output_file_equals_stdout(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.csv")
            r = decode("timeline", SAMPLE, "-o", path)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(path) as f:
                self.assertEqual(f.read(), decode("timeline", SAMPLE).stdout)

    def test_help_has_examples(self):
        r = decode("--help")
        self.assertIn("cupmon-decode timeline job/ --bucket 1s", r.stdout)
        r = decode("timeline", "--help")
        self.assertIn("--bucket", r.stdout)
        self.assertIn("--max-rows", r.stdout)
        self.assertIn("cupmon-decode timeline job/ --bucket 100ms -o busy.csv", r.stdout)
        self.assertIn("not NVML utilization", r.stdout)


if __name__ == "__main__":
    unittest.main()
