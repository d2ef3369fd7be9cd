"""cupmon-decode's command line as a new user meets it: a mistyped command is named with the nearest
one, an empty or inverted --from/--to range is refused instead of printing an empty report, and
kernel names are short unless --full-names or --mangled asks otherwise.

Run by ctest (tests/tools/CMakeLists.txt) with CUPMON_DECODE and CUPMON_SOURCE in the environment.
"""

import os
import subprocess
import unittest

DECODE = os.environ.get("CUPMON_DECODE", "")
SAMPLE = os.path.join(os.environ.get("CUPMON_SOURCE", ""), "tests", "data", "sample")


def decode(*args):
    return subprocess.run([DECODE] + list(args), capture_output=True, text=True, timeout=120)


@unittest.skipUnless(DECODE and os.path.exists(DECODE), "CUPMON_DECODE is not set")
class DecodeCliTest(unittest.TestCase):
    def test_a_typo_names_the_word_and_the_nearest_command(self):
        for typo, nearest in (("sumary", "summary"), ("expor", "export"), ("gputrace", "gpu-trace"),
                              ("stpes", "steps"), ("inf", "info")):
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


if __name__ == "__main__":
    unittest.main()
