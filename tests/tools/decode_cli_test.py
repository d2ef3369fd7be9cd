"""cupmon-decode's command line as a new user meets it: a mistyped command is named with the nearest
one, and an empty or inverted --from/--to range is refused instead of printing an empty report.

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


if __name__ == "__main__":
    unittest.main()
