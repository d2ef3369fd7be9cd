"""cupmon-decode's command line as a new user meets it: a mistyped command is named with the nearest
one, an empty or inverted --from/--to range is refused instead of printing an empty report, and
kernel names are short unless --full-names or --mangled asks otherwise.

Run by ctest (tests/tools/CMakeLists.txt) with CUPMON_DECODE and CUPMON_SOURCE in the environment.
"""

import os
import re
import resource
import subprocess
import tempfile
import unittest

DECODE = os.environ.get("CUPMON_DECODE", "")
SAMPLE = os.path.join(os.environ.get("CUPMON_SOURCE", ""), "tests", "data", "sample")
MAKE_SAMPLE = os.environ.get("CUPMON_MAKE_SAMPLE", "")
DDP = os.path.join(os.environ.get("CUPMON_SOURCE", ""), "tests", "data", "ddp-2rank")
SANITIZE = os.environ.get("CUPMON_SANITIZE", "")


def decode(*args):
    return subprocess.run([DECODE] + list(args), capture_output=True, text=True, timeout=120)


def bytes_read(test, stderr, before, after):
    """(read, total) in bytes from a line `<before>X of Y<after>` of a stopped read (X and Y as
    FormatBytes writes them: 754.6KB); fails `test` when stderr has no such line."""
    size = r"([0-9.]+)(B|KB|MB|GB)"
    m = re.search(re.escape(before) + size + " of " + size + re.escape(after), stderr)
    test.assertIsNotNone(m, stderr[-2000:])
    scale = {"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30}
    return float(m[1]) * scale[m[2]], float(m[3]) * scale[m[4]]


@unittest.skipUnless(DECODE and os.path.exists(DECODE), "CUPMON_DECODE is not set")
class DecodeCliTest(unittest.TestCase):
    def test_a_typo_names_the_word_and_the_nearest_command(self):
        for typo, nearest in (("sumary", "summary"), ("expor", "export"), ("gputrace", "gpu-trace"),
                              ("stpes", "steps"), ("inf", "info"), ("dif", "diff")):
            with self.subTest(typo=typo):
                r = decode(typo, SAMPLE)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(f"unknown command '{typo}'; did you mean '{nearest}'?", r.stderr)
                self.assertIn("commands: summary, gpu-trace", r.stderr)
                self.assertEqual(r.stdout, "")

    def test_a_word_far_from_every_command_gets_no_suggestion(self):
        r = decode("xyzzyq", SAMPLE)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown command 'xyzzyq'", r.stderr)
        self.assertNotIn("did you mean", r.stderr)

    def test_every_real_command_still_runs(self):
        for cmd in ("summary", "info", "steps"):
            with self.subTest(cmd=cmd):
                r = decode(cmd, SAMPLE)
                self.assertIn(r.returncode, (0, 1), r.stderr)
                self.assertNotIn("unknown command", r.stderr)
                self.assertNotEqual(r.stdout, "")

    def test_an_inverted_or_empty_range_is_refused(self):
        for frm, to in (("5s", "1s"), ("1s", "1s"), ("@2000", "@1000"),
                        ("2026-03-01T12:00:01Z", "2026-03-01T12:00:00Z")):
            with self.subTest(frm=frm, to=to):
                r = decode("summary", SAMPLE, "--from", frm, "--to", to)
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn(f"--to {to} is not after --from {frm}: the range is empty", r.stderr)
                self.assertEqual(r.stdout, "")

    def test_output_dash_is_standard_output(self):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([DECODE, "export", SAMPLE, "--format", "csv", "-o", "-"], cwd=d,
                               capture_output=True, text=True, timeout=120)
            self.assertIn(r.returncode, (0, 1), r.stderr)
            self.assertTrue(r.stdout.startswith("recording,type,kind,"), r.stdout[:200])
            self.assertEqual(os.listdir(d), [])  # no file named "-"
            # Formats that cannot stream say what to give instead.
            for fmt, want in (("sqlite", "give -o FILE.sqlite"), ("kineto", "give -o DIR")):
                with self.subTest(fmt=fmt):
                    r = subprocess.run([DECODE, "export", SAMPLE, "--format", fmt, "-o", "-"],
                                       cwd=d, capture_output=True, text=True, timeout=120)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    if "built without SQLite" not in r.stderr:  # a build without it says so
                        self.assertIn(want, r.stderr)
            self.assertEqual(os.listdir(d), [])
            r = subprocess.run([DECODE, "export", SAMPLE, "--format", "csv", "-o", "./-"], cwd=d,
                               capture_output=True, text=True, timeout=120)
            self.assertIn(r.returncode, (0, 1), r.stderr)
            self.assertEqual(os.listdir(d), ["-"])

    def test_a_write_that_fails_is_an_error_and_leaves_the_old_file(self):
        # A file size limit makes write() fail part way with EFBIG, as a full disk does with
        # ENOSPC (SIGXFSZ ignored, as the limit would otherwise kill the process). Each -o format
        # must fail rather than exit 0 with a truncated file.
        import resource
        import signal

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, resource.RLIM_INFINITY))

        with tempfile.TemporaryDirectory() as d:
            for fmt in ("csv", "jsonl", "chrome-json", "perfetto"):
                with self.subTest(fmt=fmt):
                    path = os.path.join(d, "out." + fmt)
                    with open(path, "w") as f:
                        f.write("the old export\n")
                    r = subprocess.run([DECODE, "export", DDP, "--format", fmt, "-o", path],
                                       capture_output=True, text=True, timeout=300,
                                       preexec_fn=limited)
                    self.assertEqual(r.returncode, 2, r.stderr[-2000:])
                    self.assertIn(f"cannot write {path}: File too large", r.stderr)
                    self.assertIn("is left as it was", r.stderr)
                    with open(path) as f:
                        self.assertEqual(f.read(), "the old export\n")
                    self.assertEqual(sorted(os.listdir(d)), [f"out.{fmt}"])  # no temporary left
                    os.remove(path)
            # Without the limit the same export goes through whole, onto the same name.
            path = os.path.join(d, "out.csv")
            r = subprocess.run([DECODE, "export", DDP, "--format", "csv", "-o", path],
                               capture_output=True, text=True, timeout=300)
            self.assertIn(r.returncode, (0, 1), r.stderr[-2000:])
            self.assertGreater(os.path.getsize(path), 256 << 10)
            self.assertEqual(sorted(os.listdir(d)), ["out.csv"])

    @unittest.skipUnless(os.path.exists("/dev/full") and MAKE_SAMPLE,
                         "no /dev/full or no sample maker")
    def test_an_export_stops_reading_once_its_output_fails(self):
        # On a full disk the export stops after the chunk in which its output failed, rather than
        # reading the whole recording before the error, and says how far it got.
        import resource
        import signal

        def read_so_far(stderr):
            return bytes_read(self, stderr, "stopped reading after ",
                              ": the output could not be written")

        def limited():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, resource.RLIM_INFINITY))

        with tempfile.TemporaryDirectory() as d:
            rec = os.path.join(d, "rec")
            subprocess.run([MAKE_SAMPLE, rec, "3000000"], check=True, capture_output=True,
                           timeout=300)
            for fmt in ("csv", "chrome-json", "perfetto"):
                with self.subTest(fmt=fmt):
                    r = decode("export", rec, "--format", fmt, "-o", "/dev/full")
                    self.assertEqual(r.returncode, 2, r.stderr[-2000:])
                    self.assertIn("writing /dev/full failed: No space left on device", r.stderr)
                    done, total = read_so_far(r.stderr)
                    self.assertGreater(total, 10 << 20)
                    self.assertLess(done, total / 2)  # the first flush fails: ~1 MiB of output
            with open("/dev/full", "w") as full:
                r = subprocess.run([DECODE, "export", rec, "--format", "jsonl"], stdout=full,
                                   stderr=subprocess.PIPE, text=True, timeout=300)
            self.assertEqual(r.returncode, 2, r.stderr[-2000:])
            self.assertIn("writing standard output failed", r.stderr)
            done, total = read_so_far(r.stderr)
            self.assertLess(done, total / 2)
            # Kineto's per-rank files: the rank's file fails, the read stops, the reason follows.
            out = os.path.join(d, "kineto")
            r = subprocess.run([DECODE, "export", rec, "--format", "kineto", "-o", out],
                               capture_output=True, text=True, timeout=300, preexec_fn=limited)
            self.assertEqual(r.returncode, 2, r.stderr[-2000:])
            self.assertIn("File too large", r.stderr)
            done, total = read_so_far(r.stderr)
            self.assertLess(done, total / 2)
            self.assertEqual(os.listdir(out), [])  # no partial rank file
            # SQLite's own writes fail as its page cache fills: the export stops then.
            db = os.path.join(d, "out.sqlite")
            r = subprocess.run([DECODE, "export", rec, "--format", "sqlite", "-o", db],
                               capture_output=True, text=True, timeout=300, preexec_fn=limited)
            self.assertEqual(r.returncode, 2, r.stderr[-2000:])
            if "built without SQLite" not in r.stderr:
                self.assertIn(f"cannot write {db}", r.stderr)
                done, total = read_so_far(r.stderr)
                self.assertLess(done, total / 2)
                self.assertEqual(sorted(os.listdir(d)), ["kineto", "rec"])  # nothing left behind

    @unittest.skipUnless(MAKE_SAMPLE, "no sample maker")
    def test_ranks_read_at_once_report_as_ranks_read_in_turn(self):
        # summary, info, steps and report of several ranks read --jobs ranks at once; what they
        # print (per rank, in rank order, with each rank's warnings after its own report) is the
        # same as one rank after another, a damaged rank and the exit code included.
        with tempfile.TemporaryDirectory() as d:
            job = os.path.join(d, "job")
            subprocess.run([MAKE_SAMPLE, "--ranks", "5", job, "200000"], check=True,
                           capture_output=True, timeout=300)
            damaged = os.path.join(job, "rank2", "cupmon-large-000000.cupmon")
            with open(damaged, "r+b") as f:
                f.seek(os.path.getsize(damaged) // 2)
                byte = f.read(1)
                f.seek(-1, os.SEEK_CUR)
                f.write(bytes([byte[0] ^ 0xFF]))
            for cmd in ("summary", "info", "steps", "report"):
                runs = {jobs: decode(cmd, job, "--jobs", jobs) for jobs in ("1", "3", "8")}
                one = runs["1"]
                with self.subTest(cmd=cmd):
                    self.assertEqual(one.returncode, 1, one.stderr)  # the damage
                    self.assertIn("warning: rank 2 (synthetic-host:4244): ", one.stderr)
                    starts = [one.stdout.find(f"rank {r} (synthetic-host:{4242 + r})")
                              for r in range(5)]
                    self.assertTrue(all(x >= 0 for x in starts), one.stdout[:2000])
                    self.assertEqual(starts, sorted(starts))
                for jobs in ("3", "8"):
                    with self.subTest(cmd=cmd, jobs=jobs):
                        r = runs[jobs]
                        self.assertEqual(r.returncode, one.returncode, r.stderr)
                        self.assertEqual(r.stdout, one.stdout)
                        self.assertEqual(r.stderr, one.stderr)
            # diff reads both sides at once: rank 0 against the damaged rank 2.
            sides = [os.path.join(job, "rank0"), os.path.join(job, "rank2")]
            one = decode("diff", *sides, "--jobs", "1")
            self.assertEqual(one.returncode, 1, one.stderr)
            self.assertIn("warning: B: ", one.stderr)
            for jobs in ("2", "8"):
                with self.subTest(cmd="diff", jobs=jobs):
                    r = decode("diff", *sides, "--jobs", jobs)
                    self.assertEqual((r.returncode, r.stdout, r.stderr),
                                     (one.returncode, one.stdout, one.stderr))
        for bad in ("0", "-1", "x"):
            with self.subTest(jobs=bad):
                r = decode("summary", DDP, "--jobs", bad)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn("--jobs", r.stderr)
                self.assertEqual(r.stdout, "")

    @unittest.skipUnless(MAKE_SAMPLE, "no sample maker")
    @unittest.skipIf(SANITIZE, "a sanitizer's runtime needs more address space than the limit")
    def test_out_of_memory_is_an_error_that_names_the_way_out(self):
        # Under an address-space limit (RLIMIT_AS, as `ulimit -v`) the reads' allocations and
        # threads fail: exit 2 with what to try, no std::terminate, and no output file left.
        def limited():
            resource.setrlimit(resource.RLIMIT_AS, (100 << 20, 100 << 20))

        with tempfile.TemporaryDirectory() as d:
            job = os.path.join(d, "job")
            subprocess.run([MAKE_SAMPLE, "--ranks", "3", job, "200000"], check=True,
                           capture_output=True, timeout=300)
            out = os.path.join(d, "out.csv")
            for args in (["summary", job, "--jobs", "3"], ["summary", job, "--jobs", "1"],
                         ["export", job, "--format", "csv", "-o", out]):
                with self.subTest(args=args[0] + " " + args[-1]):
                    r = subprocess.run([DECODE] + args, capture_output=True, text=True,
                                       timeout=120, preexec_fn=limited)
                    self.assertEqual(r.returncode, 2, r.stderr[-2000:])
                    self.assertIn("cupmon-decode: out of memory; --jobs 1 reads one rank at "
                                  "a time", r.stderr)
                    self.assertNotIn("terminate called", r.stderr)
                    self.assertEqual(sorted(os.listdir(d)), ["job"])  # no out.csv, no temporary
            # Without the limit the same commands run.
            r = decode("summary", job, "--jobs", "3")
            self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipUnless(MAKE_SAMPLE, "no sample maker")
    def test_a_limit_stops_the_read_once_its_rows_are_written(self):
        # `gpu-trace --limit 20` of a day of history must not read the whole day. Text traces, csv
        # and jsonl stop reading once their last row is written; what they print is the head
        # of the unlimited output, and the damage past the limit is not read, so not reported.
        def read_so_far(stderr, limit):
            return bytes_read(self, stderr,
                              f"note: --limit {limit}: every row written after reading ",
                              "; the rest was not read or checked")

        def unlimited_head(args, lines):
            # The same command without --limit, its first lines read and the pipe then closed.
            with subprocess.Popen([DECODE] + args, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True) as p:
                head = [p.stdout.readline() for _ in range(lines)]
                p.stdout.close()
                p.kill()
            return "".join(head)

        with tempfile.TemporaryDirectory() as d:
            rec = os.path.join(d, "rec")
            subprocess.run([MAKE_SAMPLE, rec, "1000000"], check=True, capture_output=True,
                           timeout=300)
            for args, header_lines in ((["export", rec, "--format", "csv"], 1),
                                       (["export", rec, "--format", "jsonl"], 0),
                                       (["gpu-trace", rec], 2), (["api-trace", rec], 2),
                                       (["kern-exec", rec], 2)):
                with self.subTest(args=args):
                    r = decode(*args, "--limit", "100")
                    self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                    self.assertEqual(r.stdout.count("\n"), header_lines + 100)
                    self.assertEqual(r.stdout, unlimited_head(args, header_lines + 100))
                    done, total = read_so_far(r.stderr, 100)
                    self.assertGreater(total, 4 << 20)
                    self.assertLess(done, total / 4)
            # Exports that write the whole recording's windows, steps or tables at the end read
            # it whole, as before.
            r = decode("export", rec, "--format", "chrome-json", "--limit", "100", "-o",
                       os.path.join(d, "out.json"))
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            self.assertNotIn("--limit 100", r.stderr)

            # One damaged byte past the limit is not read; one before it is reported.
            path = os.path.join(rec, os.listdir(rec)[0])
            with open(path, "rb") as f:
                data = bytearray(f.read())
            late, early = len(data) * 3 // 4, 2000
            for at, rc in ((late, 0), (early, 1)):
                with self.subTest(damaged_at=at):
                    damaged = bytearray(data)
                    damaged[at] ^= 0xFF
                    with open(path, "wb") as f:
                        f.write(damaged)
                    self.assertEqual(decode("summary", rec).returncode, 1)  # the damage is real
                    r = decode("gpu-trace", rec, "--limit", "100")
                    self.assertEqual(r.returncode, rc, r.stderr[-2000:])
                    self.assertEqual(r.stdout.count("\n"), 102)
                    self.assertEqual("warning:" in r.stderr, rc == 1, r.stderr[-2000:])
                    read_so_far(r.stderr, 100)
            with open(path, "wb") as f:
                f.write(data)

        # Merged ranks: each rank's opening lines as before, the rows from the first rank only,
        # the second rank not read, and no window warnings drawn from ranks read in part.
        r = decode("gpu-trace", DDP, "--limit", "10")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertEqual(r.stdout.count("==cupmon== rank "), 2, r.stdout)
        self.assertEqual(r.stdout.count("\n"), 2 * 2 + 10)
        read_so_far(r.stderr, 10)
        self.assertNotIn("lacks window", r.stderr)

    @unittest.skipUnless(os.path.exists("/dev/full"), "no /dev/full here")
    def test_a_full_device_or_standard_output_is_an_error(self):
        r = decode("export", SAMPLE, "--format", "jsonl", "-o", "/dev/full")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("writing /dev/full failed: No space left on device", r.stderr)
        with open("/dev/full", "w") as full:
            r = subprocess.run([DECODE, "export", SAMPLE, "--format", "chrome-json"],
                               stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("writing standard output failed", r.stderr)
        # A report that fits in the stream's buffer fails at the final flush just the same.
        with open("/dev/full", "w") as full:
            r = subprocess.run([DECODE, "info", SAMPLE], stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=120)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("writing standard output failed", r.stderr)
        r = decode("export", SAMPLE, "--format", "jsonl", "-o", os.devnull)
        self.assertIn(r.returncode, (0, 1), r.stderr)

    def test_an_unusable_run_leaves_the_old_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.csv")
            with open(path, "w") as f:
                f.write("kept\n")
            r = decode("export", os.path.join(d, "no-recording-here"), "--format", "csv",
                       "-o", path)
            self.assertEqual(r.returncode, 2, r.stderr)
            with open(path) as f:
                self.assertEqual(f.read(), "kept\n")
            self.assertEqual(os.listdir(d), ["out.csv"])

    def test_a_forward_range_still_reports(self):
        r = decode("summary", SAMPLE, "--from", "1s", "--to", "2s")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertIn("GPU activities", r.stdout)

    def test_kernel_names_are_short_unless_asked_for_whole(self):
        short = decode("summary", SAMPLE)
        whole = decode("summary", SAMPLE, "--full-names")
        for r in (short, whole):
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("  cutlass::Kernel2 [1]\n", short.stdout)
        self.assertIn("Kernel names are short; [n] numbers kernels that share one.", short.stdout)
        self.assertNotIn("void cutlass::Kernel2<", short.stdout)
        self.assertIn("  void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(",
                      whole.stdout)
        self.assertNotIn("Kernel names are short", whole.stdout)
        # The table fits a screen now: the longest line was over 5,000 characters.
        self.assertLess(max(len(line) for line in short.stdout.splitlines()), 250)
        self.assertGreater(max(len(line) for line in whole.stdout.splitlines()), 5000)

    def test_full_names_and_mangled_exclude_each_other(self):
        r = decode("gpu-trace", SAMPLE, "--full-names", "--mangled")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--mangled excludes --full-names", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_help_explains_names_and_the_kernel_filter(self):
        r = decode("gpu-trace", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--full-names", r.stdout)
        self.assertIn("searched in the full", r.stdout)
        r = decode("--help")
        self.assertIn("cupmon-decode summary rec/ --full-names", r.stdout)


    # diff: the command line around RunDiffReport (tests/decoder/diff_test.cc checks the figures).
    def test_diff_of_a_recording_with_itself_passes_the_gate(self):
        r = decode("diff", SAMPLE, SAMPLE, "--fail-above", "0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("verdict: B is as fast as A (+0.0%) in GPU time per step", r.stdout)
        self.assertIn("gate: +0.0% <= --fail-above 0.1%: pass", r.stdout)

    def test_diff_gate_exit_code_follows_the_threshold(self):
        # Window 2 of the sample has 0.7% more GPU time per step than window 1.
        args = ("diff", SAMPLE, SAMPLE, "--window-a", "1", "--window-b", "2", "--format", "jsonl")
        r = decode(*args, "--fail-above", "0.5")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("cupmon-decode: regression: B is 0.7% slower than A", r.stderr)
        self.assertIn('"regression":true', r.stdout)
        r = decode(*args, "--fail-above", "1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"regression":false', r.stdout)

    @unittest.skipUnless(MAKE_SAMPLE and os.path.exists(MAKE_SAMPLE),
                         "CUPMON_MAKE_SAMPLE is not set")
    def test_diff_finds_a_kernel_made_twice_as_slow_and_fails_the_gate(self):
        with tempfile.TemporaryDirectory() as tmp:
            base, slow = os.path.join(tmp, "base"), os.path.join(tmp, "slow")
            for out, extra in ((base, []), (slow, ["2"])):
                r = subprocess.run([MAKE_SAMPLE, "--steps", out, "100000"] + extra,
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
            r = decode("diff", base, slow, "--fail-above", "5")
            self.assertEqual(r.returncode, 3, r.stderr)
            # Each side read once (its steps found with its rows) says what reads that find the
            # steps first say (CUPMON_READ_ALL=1), in every format, with and without time ranges
            # (a side then takes a run of steps inside its range).
            ranges = ([], ["--from-a", "50ms", "--to-a", "300ms", "--from-b", "400ms", "--to-b",
                           "800ms"], ["--from", "200ms", "--to", "600ms"], ["--from-a", "100ms"],
                      ["--to-b", "500ms"])
            for fmt in ("table", "jsonl", "csv"):
                for extra in ranges:
                    args = ["diff", base, slow, "--format", fmt] + extra
                    one = decode(*args)
                    two = subprocess.run([DECODE] + args, capture_output=True, text=True,
                                         timeout=120, env=dict(os.environ, CUPMON_READ_ALL="1"))
                    self.assertEqual((one.returncode, one.stdout, one.stderr),
                                     (two.returncode, two.stdout, two.stderr), args)
                    if fmt == "table":  # both sides' ranges hold steps
                        m = re.search(r"^steps +(\d+) +(\d+) ", one.stdout, re.M)
                        self.assertTrue(m and int(m.group(1)) and int(m.group(2)), one.stdout)
            rows = r.stdout.split("  name\n", 1)[1].splitlines()
            self.assertIn("+100.0%", rows[0])
            self.assertIn("gemm_wgrad(float const*, float const*, float*)", rows[0])
            self.assertIn("% slower than A in GPU time per step", r.stdout)
            self.assertIn("cupmon-decode: regression: B is", r.stderr)
            r = subprocess.run([MAKE_SAMPLE, "--steps", base, "100000", "0"], capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(r.returncode, 2)
            self.assertIn("SLOWER must be a whole factor 1..1000, not '0'", r.stderr)

    def test_diff_of_two_rank_files(self):
        files = sorted(os.path.join(DDP, f) for f in os.listdir(DDP) if "-vm-161" in f)
        self.assertEqual(len(files), 2)
        r = decode("diff", files[0], files[1], "--format", "csv")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("kind,name,status,delta_total_ns,"), r.stdout[:200])
        self.assertIn('kernel,"ncclDevKernel_AllReduce_Sum_f32_RING_LL', r.stdout)
        self.assertIn("cupmon-decode: verdict: B is", r.stderr)

    def test_diff_refuses_bad_arguments(self):
        cases = (
            (("diff", SAMPLE),
             "diff compares two recordings: cupmon-decode diff A B (got 1 path(s))"),
            (("diff", SAMPLE, SAMPLE + "/nothing-here"), "cupmon-decode: B: "),
            (("diff", SAMPLE, SAMPLE, "--from-a", "soon"), "cannot parse --from-a soon"),
            (("diff", SAMPLE, SAMPLE, "--to-b", "2s", "--from-b", "5s"),
             "side B's range is empty (from +5.0000s, to +2.0000s)"),
            (("diff", SAMPLE, SAMPLE, "--window-b", "7"), "there is no window 7 (windows: 1, 2)"),
            (("diff", SAMPLE, SAMPLE, "--fail-above", "-3"), "--fail-above"),
            (("diff", SAMPLE, SAMPLE, "--format", "xml"), "--format"),
            (("diff", SAMPLE, SAMPLE, "-o", "/nonexistent-dir/diff.txt"),
             "cannot write /nonexistent-dir/diff.txt"),
        )
        for args, message in cases:
            with self.subTest(args=args):
                r = decode(*args)
                self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
                self.assertIn(message, r.stderr)
                self.assertEqual(r.stdout, "")

    def test_help_shows_diff_examples_and_exit_code_3(self):
        r = decode("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("cupmon-decode diff base/ new/ --fail-above 5", r.stdout)
        self.assertIn("3 diff --fail-above", r.stdout)


if __name__ == "__main__":
    unittest.main()
