"""tools/bench-pairs: alternated pairs, the ratio pair by pair, and its refusals."""
import json
import os
import subprocess
import sys
import unittest

TOOL = os.path.join(os.environ["CUPMON_SOURCE"], "tools", "bench-pairs")


def run(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class BenchPairsTest(unittest.TestCase):
    def test_pairs_alternate_and_the_ratio_follows_the_slower_command(self):
        # A sleeps 0.3 s and B 0.1 s: every pair's wall ratio is near 3, never below 1.5.
        r = run("-n", "3", "--warmup", "0", "--json", "--a", "sleep 0.3", "--b", "sleep 0.1")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["pairs"], 3)
        self.assertEqual([c["command"] for c in out["commands"]], ["sleep 0.3", "sleep 0.1"])
        wall = out["ratio_a_over_b"]["wall_s"]
        self.assertGreater(wall["min"], 1.5)
        self.assertLessEqual(wall["min"], wall["median"])
        self.assertLessEqual(wall["median"], wall["max"])
        self.assertGreaterEqual(out["commands"][0]["wall_s"]["min"], 0.3)

    def test_one_command_alone_prints_its_table(self):
        r = run("-n", "2", "--a", "true")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 runs after 1 warm-up", r.stdout)
        self.assertIn("s wall", r.stdout)
        self.assertNotIn("A/B", r.stdout)

    def test_a_failing_command_stops_with_its_status(self):
        r = run("--a", "sh -c 'exit 3'")
        self.assertEqual(r.returncode, 1)
        self.assertIn("exited with status 3", r.stderr)

    def test_bad_usage_exits_2(self):
        for args in (["-n", "0", "--a", "true"], ["--b", "true"], ["--a", ""]):
            r = run(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn("bench-pairs", r.stderr)


if __name__ == "__main__":
    unittest.main()
