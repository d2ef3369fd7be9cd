"""Tests of deploy/slurm/ against TEST STUB srun/squeue/scancel/scontrol/cupmonctl/cupmon-run/hostname
commands (tests/deploy/stubs/, each labelled as a stub) put first on PATH: argument handling, exact
command lines sent to Slurm, and what one real node cannot produce (several nodes, a rank refusing a
window, Slurm commands missing). What a real Slurm can do (unknown, pending and unmonitored jobs,
windows, collect, decode, time limits) runs on a real one-node cluster in test_slurm_live.py.
"""

import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SLURM = os.path.join(REPO, "deploy", "slurm")
STUBS = os.path.join(HERE, "stubs")
WRAPPER = os.path.join(SLURM, "cupmon-srun-wrapper")
TRIGGER = os.path.join(SLURM, "cupmon-slurm-trigger")
COLLECT = os.path.join(SLURM, "cupmon-slurm-collect")
NODE = os.path.join(SLURM, "cupmon-slurm-node")
DECODE = os.path.join(SLURM, "cupmon-slurm-decode")
SAMPLE = os.path.join(REPO, "tests", "data", "synthetic-sample")


def bare_path(tmp, left_out):
    """A PATH directory with the stubs but `left_out`, and only the system tools the scripts run
    before they look for Slurm (bash, dirname)."""
    bare = os.path.join(tmp, "bin")
    os.makedirs(bare)
    for name in os.listdir(STUBS):
        if name != left_out:
            os.symlink(os.path.join(STUBS, name), os.path.join(bare, name))
    for tool in ("bash", "dirname"):
        os.symlink(shutil.which(tool), os.path.join(bare, tool))
    return bare


class SlurmStubTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-slurm-test-")
        self.node_dir = os.path.join(self.tmp, "node")
        self.log = os.path.join(self.tmp, "stub.log")
        self.env = {
            "PATH": STUBS + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.tmp,
            "STUB_LOG": self.log,
            "CUPMON_NODE_DIR": self.node_dir,
            "STUB_JOBS": "1234:RUNNING:2 555:PENDING:1",
            "STUB_HOSTS": "node1 node2",
        }
        self.sleepers = []

    def tearDown(self):
        for p in self.sleepers:
            p.kill()
            p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_script(self, *args, **extra_env):
        env = dict(self.env)
        env.update(extra_env)
        return subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=60)

    def stub_calls(self, name):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            rows = [line.rstrip("\n").split("\t") for line in f]
        return [row[1:] for row in rows if row[0] == name]

    def live_pid(self):
        p = subprocess.Popen(["sleep", "300"])
        self.sleepers.append(p)
        return p.pid

    @staticmethod
    def dead_pid():
        p = subprocess.Popen(["true"])
        p.wait()
        return p.pid

    def rank_dir(self, job, rank, pids, files=()):
        d = os.path.join(self.node_dir, "cupmon", str(job), f"rank-{rank}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "pids"), "w") as f:
            f.write("".join(f"{p}\n" for p in pids))
        for name in files:
            with open(os.path.join(d, name), "w") as f:
                f.write(name)
        return d


class WrapperTest(SlurmStubTest):
    def test_help(self):
        r = self.run_script(WRAPPER, "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: srun", r.stdout)
        self.assertIn("rank-$SLURM_PROCID", r.stdout)

    def test_runs_the_rank_under_cupmon_run_in_its_own_directory(self):
        r = self.run_script(WRAPPER, "--run-opt=--retention-bytes=20G", "--",
                            "sh", "-c", 'echo "$$ $CUPMON_OUTPUT_DIR"; exit 7',
                            SLURM_JOB_ID="1234", SLURM_PROCID="3")
        self.assertEqual(r.returncode, 7, r.stderr)  # the program's own status
        expected = os.path.join(self.node_dir, "cupmon", "1234", "rank-3")
        pid, out_dir = r.stdout.split()
        self.assertEqual(out_dir, expected)
        self.assertEqual(stat.S_IMODE(os.stat(expected).st_mode), 0o700)
        with open(os.path.join(expected, "pids")) as f:
            self.assertEqual(f.read().split(), [pid])  # exec all the way: the program's pid
        self.assertEqual(self.stub_calls("cupmon-run"),
                         [["--output-dir", expected, "--retention-bytes=20G", "--", "sh", "-c",
                           'echo "$$ $CUPMON_OUTPUT_DIR"; exit 7']])

    def test_a_second_step_appends_its_pid(self):
        for _ in range(2):
            r = self.run_script(WRAPPER, "true", SLURM_JOB_ID="1234", SLURM_PROCID="0")
            self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.node_dir, "cupmon", "1234", "rank-0", "pids")) as f:
            self.assertEqual(len(f.read().split()), 2)

    def test_node_dir_option_and_metrics_port_per_local_rank(self):
        other = os.path.join(self.tmp, "local-ssd")
        r = self.run_script(WRAPPER, "--node-dir", other, "--metrics-port-base=9400", "true",
                            SLURM_JOB_ID="77_3", SLURM_PROCID="5", SLURM_LOCALID="2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isdir(os.path.join(other, "cupmon", "77_3", "rank-5")))
        env = self.stub_calls("cupmon-run-env")[0]
        self.assertIn("CUPMON_METRICS_ADDRESS=127.0.0.1:9402", env)

    def test_errors(self):
        cases = [
            ((WRAPPER, "true"), {}, 2, "run me as the program of srun"),
            ((WRAPPER, "true"), {"SLURM_JOB_ID": "abc", "SLURM_PROCID": "0"}, 2, "not a Slurm job id"),
            ((WRAPPER, "true"), {"SLURM_JOB_ID": "1", "SLURM_PROCID": "x"}, 2, "not a number"),
            ((WRAPPER, "--bogus", "true"), {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0"}, 2, "unknown option"),
            ((WRAPPER,), {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0"}, 2, "no program"),
            ((WRAPPER, "--node-dir=rel", "true"), {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0"}, 2, "absolute"),
            ((WRAPPER, "--cupmon-run=/nonexistent/cupmon-run", "true"),
             {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0"}, 127, "cupmon-run not found"),
            ((WRAPPER, "--node-dir=/proc/cupmon-no", "true"),
             {"SLURM_JOB_ID": "1", "SLURM_PROCID": "0"}, 1, "cannot create"),
        ]
        for args, env, code, message in cases:
            with self.subTest(args=args, env=env):
                r = self.run_script(*args, **env)
                self.assertEqual(r.returncode, code, r.stderr)
                self.assertIn(message, r.stderr)
        self.assertEqual(self.stub_calls("cupmon-run"), [])


class TriggerTest(SlurmStubTest):
    def test_help(self):
        r = self.run_script(TRIGGER, "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("srun --overlap --jobid=JOBID", r.stdout)

    def test_usage_errors(self):
        for args, message in [((), "no JOBID"), (("12a",), "not a Slurm job id"),
                              (("1234", "99"), "more than one JOBID"),
                              (("--duration", "5", "1234"), "with a unit"),
                              (("--align=0s", "1234"), "positive"),
                              (("--full", "1234"), "--full only applies"),
                              (("--frobnicate", "1234"), "unknown option")]:
            with self.subTest(args=args):
                r = self.run_script(TRIGGER, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
        self.assertEqual(self.stub_calls("srun") + self.stub_calls("scancel"), [])

    def test_without_slurm_commands_it_says_so(self):
        # PATH is only this directory, so a real Slurm installed here (CI has one) is not found.
        bare = bare_path(self.tmp, "squeue")
        for script in (TRIGGER, COLLECT):
            with self.subTest(script=os.path.basename(script)):
                extra = ("--dest", os.path.join(self.tmp, "d")) if script == COLLECT else ()
                r = self.run_script(script, *extra, "1234", PATH=bare)
                self.assertEqual(r.returncode, 3, r.stderr)
                self.assertIn("squeue not found", r.stderr)
        self.assertEqual(self.stub_calls("srun"), [])

    def test_aligned_window_on_every_live_rank_of_every_node(self):
        a, b = self.live_pid(), self.live_pid()
        gone = self.dead_pid()
        self.rank_dir(1234, 0, [gone, a])  # an earlier step's pid that exited, then this step's
        self.rank_dir(1234, 1, [b])
        self.rank_dir(4321, 0, [self.live_pid()])  # another job's rank: not touched
        before_ms = int(time.time() * 1000)
        r = self.run_script(TRIGGER, "--duration", "2s", "--align=10s", "--lead=1s",
                            "--kinds=runtime,synchronization", "1234")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        srun = self.stub_calls("srun")
        self.assertEqual(len(srun), 1)
        self.assertEqual(srun[0][:5], ["--overlap", "--jobid=1234", "--nodes=2", "--ntasks-per-node=1",
                                       "--kill-on-bad-exit=0"])
        self.assertEqual(srun[0][5], NODE)
        calls = self.stub_calls("cupmonctl")
        # Two stub nodes share this machine's node dir, so each sees both ranks.
        self.assertEqual(sorted((c[0], c[2]) for c in calls),
                         sorted([("node1", str(a)), ("node1", str(b)), ("node2", str(a)), ("node2", str(b))]))
        ats = set()
        for c in calls:
            self.assertEqual(c[1], "window")
            args = c[3:]
            self.assertEqual(args[args.index("--duration") + 1], "2s")
            self.assertEqual(args[args.index("--kinds") + 1], "runtime,synchronization")
            ats.add(int(args[args.index("--at") + 1]))
        self.assertEqual(len(ats), 1, "every rank must get the same instant")
        at = ats.pop()
        self.assertEqual(at % 10000, 0)
        self.assertGreater(at, before_ms + 1000)
        self.assertLessEqual(at, int(time.time() * 1000) + 1000 + 10000)
        self.assertIn(f"rank-0 pid {a}: window scheduled", r.stdout)

    def test_a_refusing_rank_makes_the_trigger_fail(self):
        a, b = self.live_pid(), self.live_pid()
        self.rank_dir(1234, 0, [a])
        self.rank_dir(1234, 1, [b])
        r = self.run_script(TRIGGER, "1234", STUB_HOSTS="node1", STUB_REFUSE_PIDS=str(b))
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"rank-1 pid {b}: FAILED (cupmonctl exit 1): error: window 3 is already open", r.stdout)
        self.assertIn(f"rank-0 pid {a}: window scheduled", r.stdout)
        self.assertIn("some ranks did not get a window", r.stderr)

    def test_signal_mode_uses_scancel(self):
        r = self.run_script(TRIGGER, "--signal", "1234")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.stub_calls("scancel"), [["--signal=USR2", "1234"]])
        r = self.run_script(TRIGGER, "--signal", "--full", "1234")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.stub_calls("scancel")[-1], ["--signal=USR2", "--full", "1234"])
        self.assertEqual(self.stub_calls("srun"), [])
        r = self.run_script(TRIGGER, "--signal", "999")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(len(self.stub_calls("scancel")), 2)


class CollectTest(SlurmStubTest):
    def setUp(self):
        super().setUp()
        self.dest = os.path.join(self.tmp, "shared")

    def members(self, archive):
        with tarfile.open(archive) as t:
            return sorted(m.name for m in t.getmembers() if m.isfile())

    def test_help_and_usage_errors(self):
        r = self.run_script(COLLECT, "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--nodelist", r.stdout)
        for args, message in [(("1234",), "--dest DIR is required"),
                              (("--dest=rel", "1234"), "absolute"),
                              (("--dest", self.dest), "no JOBID"),
                              (("--dest", self.dest, "x1"), "not a Slurm job id")]:
            with self.subTest(args=args):
                r = self.run_script(COLLECT, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)

    def test_collects_inside_the_running_job_and_cleans_up(self):
        self.rank_dir(1234, 0, [1], files=["cupmon-a.cupmon"])
        self.rank_dir(1234, 1, [2], files=["cupmon-b.cupmon"])
        r = self.run_script(COLLECT, "--dest", self.dest, "1234", STUB_HOSTS="node1",
                            STUB_JOBS="1234:RUNNING:1")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.stub_calls("srun")[0][:4],
                         ["--overlap", "--jobid=1234", "--nodes=1", "--ntasks-per-node=1"])
        archive = os.path.join(self.dest, "1234", "node1.tar.gz")
        self.assertEqual(self.members(archive), ["1234/rank-0/cupmon-a.cupmon", "1234/rank-0/pids",
                                                 "1234/rank-1/cupmon-b.cupmon", "1234/rank-1/pids"])
        self.assertFalse(os.path.exists(os.path.join(self.node_dir, "cupmon", "1234")))
        self.assertIn("1 archive(s) from 1 node(s)", r.stdout)

    def test_keep_and_one_archive_per_node(self):
        self.rank_dir(1234, 0, [1], files=["x.cupmon"])
        r = self.run_script(COLLECT, "--dest", self.dest, "--keep", "1234")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(sorted(os.listdir(os.path.join(self.dest, "1234"))), ["node1.tar.gz", "node2.tar.gz"])
        self.assertTrue(os.path.isdir(os.path.join(self.node_dir, "cupmon", "1234")))

    def test_after_the_job_ended_it_needs_a_nodelist(self):
        self.rank_dir(4444, 0, [1], files=["y.cupmon"])
        r = self.run_script(COLLECT, "--dest", self.dest, "4444")
        self.assertEqual(r.returncode, 3)
        self.assertIn("pass --nodelist", r.stderr)
        self.assertEqual(self.stub_calls("srun"), [])
        r = self.run_script(COLLECT, "--dest", self.dest, "--nodelist", "node[1-2]",
                            "--srun-opt=--partition=debug", "4444")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.stub_calls("scontrol"), [["show", "hostnames", "node[1-2]"]])
        srun = self.stub_calls("srun")[0]
        self.assertEqual(srun[:5], ["--nodelist=node[1-2]", "--nodes=2", "--ntasks-per-node=1",
                                    "--kill-on-bad-exit=0", "--partition=debug"])
        # The first stub node collects and removes; the second finds nothing (same disk here).
        self.assertEqual(os.listdir(os.path.join(self.dest, "4444")), ["node1.tar.gz"])
        self.assertIn("node2: nothing to collect", r.stdout)

    def test_a_nodelist_where_no_node_has_the_job(self):
        self.rank_dir(1234, 0, [1], files=["x.cupmon"])  # another job's files: not collected
        r = self.run_script(COLLECT, "--dest", self.dest, "--nodelist", "node[1-2]", "999")
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn(f"no node had {self.node_dir}/cupmon/999", r.stderr)
        self.assertIn("right job id", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dest, "999")))
        self.assertTrue(os.path.isdir(os.path.join(self.node_dir, "cupmon", "1234")))

    def test_node_script_usage(self):
        r = self.run_script(NODE, "window", "--job=1234", f"--node-dir={self.node_dir}")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--duration is required", r.stderr)
        r = self.run_script(NODE, "explode")
        self.assertEqual(r.returncode, 2)
        r = self.run_script(NODE, "--help")
        self.assertEqual(r.returncode, 0)


class DecodeTest(SlurmStubTest):
    """cupmon-slurm-decode's usage errors, and what one real node cannot show: several nodes."""

    def test_help_and_usage_errors(self):
        r = self.run_script(DECODE, "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Examples:", r.stdout)
        self.assertIn("cupmon-slurm-decode --dest /shared/cupmon 4242", r.stdout)
        dest = os.path.join(self.tmp, "shared")
        for args, message in [(("1234",), "--dest DIR is required"),
                              (("--dest=rel", "1234"), "must be an absolute path"),
                              (("--dest", dest), "no JOBID"),
                              (("--dest", dest, "x1"), "not a Slurm job id"),
                              (("--dest", dest, "1", "2"), "more than one JOBID"),
                              (("--dest", dest, "--export", "pdf", "1234"), "--export 'pdf'"),
                              (("--dest", dest, "--node-dir=rel", "1234"), "absolute"),
                              (("--dest", dest, "--bogus", "1234"), "unknown option"),
                              (("--dest",), "--dest needs a value")]:
            with self.subTest(args=args):
                r = self.run_script(DECODE, *args)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn(message, r.stderr)
        self.assertEqual(self.stub_calls("srun") + self.stub_calls("scontrol"), [])

    def test_without_scontrol_it_says_so(self):
        r = self.run_script(DECODE, "--dest", os.path.join(self.tmp, "d"), "1234",
                            PATH=bare_path(self.tmp, "scontrol"))
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("scontrol not found", r.stderr)

    def test_node_script_decode_errors(self):
        dest = os.path.join(self.tmp, "shared")
        r = self.run_script(NODE, "decode", "--job=1234", f"--node-dir={self.node_dir}",
                            f"--dest={dest}", "--export=pdf")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--export 'pdf'", r.stderr)
        self.rank_dir(1234, 0, [1], files=["x.cupmon"])
        r = self.run_script(NODE, "decode", "--job=1234", f"--node-dir={self.node_dir}",
                            f"--dest={dest}", "--export=none", "--decode=/nonexistent/cupmon-decode")
        self.assertEqual(r.returncode, 127)
        self.assertIn("cupmon-decode not found (/nonexistent/cupmon-decode)", r.stderr)
        self.assertFalse(os.path.exists(dest))

    def test_a_failing_srun_is_not_called_no_recording(self):
        # srun (here: the node program) fails on every node without a word about recordings.
        r = self.run_script(DECODE, "--dest", os.path.join(self.tmp, "shared"), "--nodelist",
                            "node1", "--node-script", shutil.which("false"), "4444")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("srun exited 1 and no node wrote a summary", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "shared", "4444")))

    def test_an_unwritable_destination(self):
        r = self.run_script(DECODE, "--dest", "/proc/cupmon-no", "--nodelist", "node1", "4444")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("cannot create /proc/cupmon-no/4444/decode", r.stderr)
        self.assertEqual(self.stub_calls("srun"), [])

    def sample_rank(self, job, truncate_to=None):
        rank = os.path.join(self.node_dir, "cupmon", str(job), "rank-0")
        os.makedirs(rank)
        for name in os.listdir(SAMPLE):
            if name.endswith(".cupmon"):
                shutil.copy(os.path.join(SAMPLE, name), rank)
                if truncate_to is not None:
                    os.truncate(os.path.join(rank, name), truncate_to)
        return rank

    @unittest.skipUnless(os.environ.get("CUPMON_DECODE"), "CUPMON_DECODE not set (run through ctest)")
    def test_a_damaged_recording_is_decoded_with_warnings(self):
        size = os.path.getsize([os.path.join(SAMPLE, n) for n in os.listdir(SAMPLE)
                                if n.endswith(".cupmon")][0])
        self.sample_rank(4444, truncate_to=size * 2 // 3)  # the file cut short, as by a crash
        dest = os.path.join(self.tmp, "shared")
        r = self.run_script(DECODE, "--dest", dest, "--nodelist", "node1", "--export", "none",
                            "--decode", os.environ["CUPMON_DECODE"], "4444", STUB_HOSTS="node1")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        log = os.path.join(dest, "4444", "decode", "node1", "decode.log")
        self.assertIn(f"node1: 1 rank(s) of job 4444 decoded into {os.path.dirname(log)}, with "
                      f"warnings (see {log})", r.stdout)
        self.assertIn("srun exited 1", r.stderr)
        with open(log) as f:
            self.assertIn("cupmon-decode:", f.read())  # the decoder's own warnings are kept
        # What was intact is still summarised and merged.
        self.assertIn("1 of 1 node summaries merged", r.stdout)

    @unittest.skipUnless(os.environ.get("CUPMON_DECODE"), "CUPMON_DECODE not set (run through ctest)")
    def test_merges_the_summaries_of_several_nodes(self):
        # Two stub nodes share this machine's node dir, so each decodes the same rank: the merge
        # must count it twice, once per node. scontrol (a stub) does not know job 4444: --nodelist.
        self.sample_rank(4444)
        dest = os.path.join(self.tmp, "shared")
        r = self.run_script(DECODE, "--dest", dest, "--nodelist", "node[1-2]", "--export", "jsonl",
                            "--decode", os.environ["CUPMON_DECODE"], "4444")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(self.stub_calls("srun")[0][:4], ["--nodelist=node[1-2]", "--nodes=2",
                                                         "--ntasks-per-node=1", "--kill-on-bad-exit=0"])
        out = os.path.join(dest, "4444", "decode")
        self.assertEqual(sorted(os.listdir(out)), ["node1", "node2", "summary.txt"])
        self.assertEqual(sorted(os.listdir(os.path.join(out, "node1"))),
                         ["decode.log", "info.txt", "summary.txt", "trace.jsonl"])
        with open(os.path.join(out, "node1", "summary.txt")) as f:
            node = f.read()
        with open(os.path.join(out, "summary.txt")) as f:
            merged = f.read()
        self.assertIn("job 4444, 2 node(s), 2 rank(s)", merged)
        self.assertEqual(merged.count("(SYNTHETIC: CUPTI test double, not measured on a GPU)"), 2)
        # The sample's rows: "180.00us 3 ... gemm_tiled" on one node; merged: twice the time and
        # calls, the same min and max.
        self.assertIn("180.00us         3   60.000us   40.000us   100.00us  void gemm_tiled<16>", node)
        self.assertIn("360.00us         6   60.000us   40.000us   100.00us  void gemm_tiled<16>", merged)
        self.assertIn("node1: 1 rank(s) of job 4444 decoded", r.stdout)
        self.assertIn("2 of 2 node summaries merged", r.stdout)


@unittest.skipUnless(shutil.which("shellcheck"), "shellcheck is not installed")
class ShellcheckTest(unittest.TestCase):
    def test_scripts_are_clean(self):
        scripts = [os.path.join(SLURM, n) for n in ("cupmon-srun-wrapper", "cupmon-slurm-trigger",
                                                     "cupmon-slurm-collect", "cupmon-slurm-node",
                                                     "cupmon-slurm-lib.sh", "cupmon-slurm-decode",
                                                     "cupmon-agent-prolog", "cupmon-agent-epilog")]
        scripts.append(os.path.join(REPO, "deploy", "kubernetes", "cupmon-k8s-window"))
        r = subprocess.run(["shellcheck", "-x", *scripts], capture_output=True, text=True, cwd=SLURM)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
