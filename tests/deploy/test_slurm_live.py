"""deploy/slurm/ on a REAL Slurm: a single-node cluster (Debian's munged, slurmctld, slurmd) that
this test starts on localhost, as root, with a generated slurm.conf, munge key and sockets in a temporary
directory, and stops by pid at the end (also on failure). Jobs are submitted with sbatch; their
ranks are slurm_rank_double (tests/deploy/slurm_rank_double.cc): the cupmon monitor on the CUPTI
TEST DOUBLE, run by the real cupmon-srun-wrapper and cupmon-run. Only CUPTI is a stand-in.

Skips, saying why, where the Slurm or munge binaries are missing, when not root (slurmd must be root
to start tasks), or when the cupmon binaries were not built (run it through ctest). As root with the
packages installed (CI), a cluster that does not start is a failure, with its logs.
"""

import ctypes
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SLURM = os.path.join(REPO, "deploy", "slurm")
WRAPPER = os.path.join(SLURM, "cupmon-srun-wrapper")
TRIGGER = os.path.join(SLURM, "cupmon-slurm-trigger")
COLLECT = os.path.join(SLURM, "cupmon-slurm-collect")
DECODE = os.path.join(SLURM, "cupmon-slurm-decode")
AGENT_PROLOG = os.path.join(SLURM, "cupmon-agent-prolog")
AGENT_EPILOG = os.path.join(SLURM, "cupmon-agent-epilog")

DAEMONS = {"munged": "munge", "slurmctld": "slurm-wlm", "slurmd": "slurm-wlm"}
CLIENTS = ("sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo")
BUILT = ("CUPMON_SLURM_RANK", "CUPMON_RUN", "CUPMONCTL", "CUPMON_DECODE")
FINISHED = ("COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY")


def find_binary(name):
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin:/sbin")


def why_not_runnable():
    """The reason this machine cannot run the live cluster, or None."""
    missing = [n for n in list(DAEMONS) + list(CLIENTS) if not find_binary(n)]
    if missing:
        return (f"Slurm/munge binaries not found: {' '.join(missing)} "
                "(apt-get install slurm-wlm munge, as tools/install-deps does)")
    if os.geteuid() != 0:
        return "not root: the test's slurmd must run as root to start job tasks (CI runs as root)"
    unset = [v for v in BUILT if not os.environ.get(v)]
    if unset:
        return f"{' '.join(unset)} not set: run this through ctest (-R deploy_slurm_live)"
    absent = [os.environ[v] for v in BUILT if not os.access(os.environ[v], os.X_OK)]
    if absent:
        return (f"not built: {' '.join(absent)} "
                "(ninja slurm_rank_double cupmon-run cupmonctl cupmon-decode)")
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    # The daemons get SIGKILL if this test process dies (a crash, ctest's timeout kill).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Cluster:
    """munged, slurmctld and slurmd in the foreground, children of this process."""

    def __init__(self, root):
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.procs = []
        for d in ("state", "spool", "log", "munge"):
            os.makedirs(os.path.join(root, d))
        os.chmod(os.path.join(root, "munge"), 0o700)
        self.conf = os.path.join(root, "slurm.conf")
        self.munge_socket = os.path.join(root, "munge", "munge.socket")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for v in list(self.env):
            if v.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_")) and v != "SLURM_CONF":
                del self.env[v]  # a test run inside a Slurm job must not talk to that job

    def log(self, name):
        path = os.path.join(self.root, "log", name)
        if not os.path.exists(path):
            return f"({name}: no log)"
        with open(path, errors="replace") as f:
            return f"--- {name} (last 40 lines)\n" + "".join(f.readlines()[-40:])

    def logs(self):
        return "\n".join(self.log(n) for n in ("munged.log", "slurmctld.log", "slurmd.log",
                                                 "munged.out", "slurmctld.out", "slurmd.out"))

    def spawn(self, name, args):
        out = open(os.path.join(self.root, "log", name + ".out"), "w")
        p = subprocess.Popen([find_binary(name)] + args, stdout=out, stderr=subprocess.STDOUT,
                             env=self.env, preexec_fn=die_with_parent)
        out.close()
        self.procs.append((name, p))
        return p

    def start(self):
        key = os.path.join(self.root, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        m = os.path.join(self.root, "munge")
        self.spawn("munged", ["--foreground", "--force", f"--socket={self.munge_socket}",
                              f"--key-file={key}", f"--pid-file={m}/munged.pid",
                              f"--seed-file={m}/munged.seed",
                              f"--log-file={self.root}/log/munged.log"])
        self.wait(lambda: os.path.exists(self.munge_socket), 20, "munged did not create its socket")
        r = self.root
        with open(self.conf, "w") as f:
            f.write(f"""# Generated by tests/deploy/test_slurm_live.py: a one-node test cluster.
ClusterName=cupmontest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={self.munge_socket}
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
# Take CPUs=8 from here, not from the 2-core machine: three jobs and the trigger's and decode's
# steps run at once.
SlurmdParameters=config_overrides
ReturnToService=2
# SIGKILL 5 s after the time limit's SIGTERM (cupmon's final flush is bounded by 2 s).
KillWait=5
OverTimeLimit=0
MinJobAge=600
InactiveLimit=0
NodeName={self.host} NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=debug Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")
        self.spawn("slurmctld", ["-D", "-i"])
        self.spawn("slurmd", ["-D"])

        def idle():
            for name, p in self.procs:
                if p.poll() is not None:
                    raise AssertionError(f"{name} exited with status {p.returncode}\n{self.logs()}")
            r = self.run("sinfo", "--noheader", "--format=%T", check=False)
            return r.returncode == 0 and r.stdout.strip() == "idle"
        self.wait(idle, 90, "the node did not become idle in sinfo")

    def wait(self, predicate, seconds, what):
        deadline = time.monotonic() + seconds
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} within {seconds} s\n{self.logs()}")
            time.sleep(0.2)

    def run(self, *args, check=True, env=None, timeout=120):
        r = subprocess.run(list(args), env=env or self.env, capture_output=True, text=True,
                           timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}{r.stderr}")
        return r

    def job_field(self, job, field):
        r = self.run("scontrol", "show", "job", "--oneliner", str(job), check=False)
        m = re.search(rf"(?:^|\s){field}=(\S+)", r.stdout)
        return m.group(1) if m else None

    def wait_job(self, job, states, seconds):
        state = [None]

        def reached():
            state[0] = self.job_field(job, "JobState")
            return state[0] in states
        self.wait(reached, seconds, f"job {job} (last state {state[0]}) did not reach {states}")
        return state[0]

    def stop(self):
        """Cancels every job, then stops the daemons by pid: SIGTERM, SIGKILL after 15 s."""
        if any(p.poll() is None for n, p in self.procs if n == "slurmctld"):
            r = self.run("squeue", "--noheader", "--format=%i", check=False, timeout=30)
            jobs = r.stdout.split()
            if jobs:
                self.run("scancel", *jobs, check=False, timeout=30)
                try:
                    self.wait(lambda: not self.run("squeue", "--noheader", check=False,
                                                   timeout=30).stdout.strip(), 30, "jobs ending")
                except AssertionError as e:
                    print(f"test_slurm_live: jobs left at stop: {e}")
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.procs = []


REASON = why_not_runnable()


@unittest.skipIf(REASON, f"live Slurm test skipped: {REASON}")
class SlurmLiveTest(unittest.TestCase):
    """One cluster for all tests; the time-limit job runs from the start, beside the others."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cupmon-slurm-live-")
        os.chmod(cls.tmp, 0o755)
        cls.cluster = Cluster(os.path.join(cls.tmp, "cluster"))
        try:
            cls.cluster.start()
        except BaseException:
            cls.cluster.stop()
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        cls.node_dir = os.path.join(cls.tmp, "node")
        cls.shared = os.path.join(cls.tmp, "shared")
        # Inherited by the jobs (sbatch exports the environment) and by the srun steps of the
        # trigger and collect: where the wrapper writes, and where cupmonctl finds the ranks.
        cls.env = dict(cls.cluster.env, CUPMON_NODE_DIR=cls.node_dir,
                       CUPMON_REGISTRY_DIR=os.path.join(cls.tmp, "registry"),
                       CUPMON_WINDOW_MS="1000")
        cls.rank = os.environ["CUPMON_SLURM_RANK"]
        cls.decoder = os.environ["CUPMON_DECODE"]
        try:
            # Two jobs that reach their time limit. In the first the rank is the batch step's own
            # program: Slurm's SIGTERM, then SIGKILL after KillWait (5 s). No periodic flush
            # (CUPMON_FLUSH_MS=0) and 4 MiB buffers that a minute of this rank does not fill:
            # whatever reaches the files after SIGTERM came by cupmon's SIGTERM flush.
            run = f"{WRAPPER} --cupmon-run {os.environ['CUPMON_RUN']} -- {cls.rank} 0"
            cls.time_limit_job = cls.sbatch(
                "--time=1", "--ntasks=1", script=run,
                extra_env={"CUPMON_FLUSH_MS": "0", "CUPMON_EXIT_TIMEOUT_MS": "4000"})
            # In the second the rank runs under srun, as training jobs do: srun answers its own
            # SIGTERM by SIGKILLing its tasks at once ("srun: forcing job termination"), so the
            # rank's SIGTERM flush races a SIGKILL. One CI run lost that race with no periodic
            # flush and kept nothing; here the flush period bounds what such a race can lose.
            cls.srun_time_limit_job = cls.sbatch(
                "--time=1", "--ntasks=1", script=f"srun {run}",
                extra_env={"CUPMON_FLUSH_MS": "200"})
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()
        if os.environ.get("CUPMON_KEEP_SLURM_TEST_DIR"):
            print(f"test_slurm_live: kept {cls.tmp}")
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def sbatch(cls, *options, script, extra_env=None):
        path = os.path.join(cls.tmp, f"job-{time.monotonic_ns()}.sh")
        with open(path, "w") as f:
            f.write("#!/bin/bash\nset -e\n" + script + "\n")
        env = dict(cls.env, **(extra_env or {}))
        r = cls.cluster.run("sbatch", "--parsable", f"--output={cls.tmp}/job-%j.out",
                            f"--chdir={cls.tmp}", *options, path, env=env)
        return r.stdout.strip().split(";")[0]

    def output(self, job):
        path = os.path.join(self.tmp, f"job-{job}.out")
        if not os.path.exists(path):  # slurmstepd creates it when the batch script starts
            return ""
        with open(path, errors="replace") as f:
            return f.read()

    def script(self, *args, timeout=120):
        return self.cluster.run(*args, check=False, env=self.env, timeout=timeout)

    def decode(self, *args):
        r = subprocess.run([self.decoder, *args], capture_output=True, text=True, timeout=120)
        self.assertIn(r.returncode, (0, 1), r.stdout + r.stderr)
        return r

    def kernel_ends(self, path):
        rows = self.decode("export", path, "--format", "jsonl").stdout.splitlines()
        return [json.loads(x)["end_ns"] for x in rows if json.loads(x).get("type") == "kernel"]

    def test_1_finished_job_each_rank_under_cupmon_then_decode_and_collect(self):
        job = self.sbatch("--ntasks=3", script=(
            f"srun {WRAPPER} --cupmon-run {os.environ['CUPMON_RUN']} -- {self.rank} 3"))
        state = self.cluster.wait_job(job, FINISHED, 90)
        out = self.output(job)
        self.assertEqual(state, "COMPLETED", out)
        self.assertEqual(out.count("TEST DOUBLE: the CUPTI test double stands in for CUDA"), 3, out)
        job_dir = os.path.join(self.node_dir, "cupmon", job)
        self.assertEqual(sorted(os.listdir(job_dir)), ["rank-0", "rank-1", "rank-2"])
        for rank in range(3):
            d = os.path.join(job_dir, f"rank-{rank}")
            with open(os.path.join(d, "pids")) as f:
                pid = f.read().split()
            self.assertEqual(len(pid), 1)
            # The wrapper's pid is the rank's (exec all the way): the rank printed the same one.
            self.assertIn(f"job {job} rank {rank} pid {pid[0]} ", out)
            self.assertTrue([n for n in os.listdir(d) if n.endswith(".cupmon")], os.listdir(d))
        summary = self.decode("summary", job_dir).stdout
        self.assertIn("SYNTHETIC: written by the CUPTI test double", summary)
        self.assertIn("Merged: 3 ranks", summary)
        # Three rank tables and the merged total.
        self.assertEqual(summary.count("slurm_rank_double_step"), 4, summary)
        for rank in range(3):  # rank numbers from SLURM_PROCID, stored by the monitor
            self.assertRegex(summary, rf"==cupmon== rank {rank} \({self.cluster.host}:\d+\)")

        # cupmon-slurm-decode: one task on the node decodes its three ranks; the summaries meet in
        # the shared directory.
        r = self.script(DECODE, "--dest", self.shared, "--decode", self.decoder, job)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        host = self.cluster.host
        node_out = os.path.join(self.shared, job, "decode", host)
        self.assertEqual(sorted(os.listdir(node_out)),
                         ["decode.log", "info.txt", "summary.txt", "trace.pftrace"])
        self.assertIn(f"{host}: 3 rank(s) of job {job} decoded", r.stdout)
        with open(os.path.join(node_out, "summary.txt")) as f:
            self.assertEqual(f.read(), summary)  # what cupmon-decode says on the node itself
        self.assertGreater(os.path.getsize(os.path.join(node_out, "trace.pftrace")), 1000)
        with open(os.path.join(self.shared, job, "decode", "summary.txt")) as f:
            merged = f.read()
        self.assertIn(f"job {job}, 1 node(s), 3 rank(s)", merged)
        self.assertIn("(SYNTHETIC: CUPTI test double, not measured on a GPU)", merged)
        row = re.compile(r"\s(\d+)\s+\S+\s+\S+\s+\S+\s+slurm_rank_double_step")
        calls = [int(row.search(line).group(1)) for line in summary.splitlines()
                 if line.endswith("slurm_rank_double_step") and "%" in line]
        total = re.search(r"GPU activities:\s+100\.00%\s+\S+\s+(\d+)\s.*slurm_rank_double_step",
                          merged)
        self.assertIsNotNone(total, merged)
        self.assertEqual(int(total.group(1)), sum(calls[:3]), merged)  # the three ranks' calls
        self.assertEqual(sum(calls[:3]), calls[3])  # and the decoder's own total agrees
        # No raw data left the node: the shared directory holds only the reports.
        for root, _, files in os.walk(os.path.join(self.shared, job)):
            self.assertFalse([f for f in files if f.endswith(".cupmon")], root)

        # cupmon-slurm-collect after the job: a new srun on its node list.
        nodes = self.cluster.job_field(job, "NodeList")
        r = self.script(COLLECT, "--dest", self.shared, "--nodelist", nodes, job)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        archive = os.path.join(self.shared, job, f"{host}.tar.gz")
        listing = subprocess.run(["tar", "-tzf", archive], capture_output=True, text=True).stdout
        for rank in range(3):
            self.assertIn(f"{job}/rank-{rank}/pids", listing)
        self.assertFalse(os.path.exists(job_dir), "the node-local copy was not removed")

    def test_2_running_job_windows_by_socket_and_signal_and_collect(self):
        job = self.sbatch("--ntasks=2", script=(
            f"srun {WRAPPER} --cupmon-run {os.environ['CUPMON_RUN']} -- {self.rank} 25"))
        self.cluster.wait_job(job, ("RUNNING",), 60)
        self.cluster.wait(lambda: self.output(job).count("TEST DOUBLE") == 2, 30,
                          f"job {job}'s two ranks did not start")
        # The ranks' control sockets are served once the monitor started (before the line). A
        # 3 s lead: srun --overlap must reach the ranks before the instant on a loaded machine.
        r = self.script(TRIGGER, "--duration", "1s", "--align", "2s", "--lead", "3s", job)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("window scheduled"), 2, r.stdout)
        time.sleep(6)  # past the aligned instant (at most 5 s away) and the 1 s window
        r = self.script(TRIGGER, "--signal", job)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(f"sent SIGUSR2 to the steps of job {job}", r.stdout)
        time.sleep(2)  # the 1 s signal window (CUPMON_WINDOW_MS)
        # Inside the running job: srun --overlap into its allocation; --keep for the decode below.
        r = self.script(COLLECT, "--dest", self.shared, "--keep", job)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        archive = os.path.join(self.shared, job, f"{self.cluster.host}.tar.gz")
        self.assertTrue(os.path.exists(archive), r.stdout)
        # Decoding a running job is refused.
        r = self.script(DECODE, "--dest", self.shared, job)
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn(f"job {job} is RUNNING, not finished", r.stderr)

        state = self.cluster.wait_job(job, FINISHED, 60)
        self.assertEqual(state, "COMPLETED", self.output(job))
        info = self.decode("info", os.path.join(self.node_dir, "cupmon", job)).stdout
        # Both ranks have both windows: #1 by the socket at one instant, #2 by SIGUSR2.
        self.assertEqual(info.count("#1 source TRIGGER_SOCKET"), 2, info)
        self.assertEqual(info.count("#2 source TRIGGER_SIGNAL"), 2, info)
        # Window #1 opened on both ranks at the one instant the trigger computed: a multiple of
        # --align 2s (the begins are within the 100 ms a loaded 2-core machine needs).
        section = re.search(r"  #1\n((?:    rank .*\n)+)    spread of begins: (\S+)", info)
        self.assertIsNotNone(section, info)
        begins = re.findall(r"T\d\d:\d\d:(\d\d)\.(\d{9})Z", section.group(1))
        self.assertEqual(len(begins), 2, info)
        for seconds, nanos in begins:
            offset = (int(seconds) % 2) + int(nanos) / 1e9
            self.assertLess(offset, 0.1, f"window #1 began {offset:.6f} s after the instant\n{info}")
        print(f"job {job}: window #1 begins {begins}, spread {section.group(2)}")

    def test_3_decode_errors_on_a_real_cluster(self):
        r = self.script(DECODE, "--dest", self.shared, "987654")
        self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
        self.assertIn("job 987654 not found", r.stderr)
        self.assertIn("Invalid job id", r.stderr)  # what scontrol said
        self.assertIn("--nodelist", r.stderr)
        # A job that ran without the wrapper: its node has no recording.
        job = self.sbatch("--ntasks=1", script="srun true")
        self.assertEqual(self.cluster.wait_job(job, FINISHED, 60), "COMPLETED")
        r = self.script(DECODE, "--dest", self.shared, "--decode", self.decoder, job)
        self.assertEqual(r.returncode, 4, r.stdout + r.stderr)
        self.assertIn(f"{self.cluster.host}: no recording of job {job} on this node", r.stderr)
        self.assertIn(f"no node had a recording of job {job}", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.shared, job)))

    def test_4_trigger_and_collect_errors_from_real_squeue(self):
        unknown = "987655"
        for script, extra in ((TRIGGER, ()), (COLLECT, ("--dest", self.shared))):
            with self.subTest(script=os.path.basename(script), job="unknown"):
                r = self.script(script, *extra, unknown)
                self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
                self.assertIn(f"job {unknown} not found: squeue says: slurm_load_jobs error: "
                              "Invalid job id specified", r.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.shared, unknown)))
        pending = self.sbatch("--begin=now+3600", "--ntasks=1", script="true")
        try:
            self.assertEqual(self.cluster.wait_job(pending, ("PENDING",), 30), "PENDING")
            r = self.script(TRIGGER, pending)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn(f"job {pending} is PENDING, not RUNNING", r.stderr)
            r = self.script(COLLECT, "--dest", self.shared, pending)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn(f"job {pending} is PENDING, not RUNNING; pass --nodelist", r.stderr)
            r = self.script(DECODE, "--dest", self.shared, pending)
            self.assertEqual(r.returncode, 3, r.stdout + r.stderr)
            self.assertIn(f"job {pending} is PENDING, not finished", r.stderr)
        finally:
            self.cluster.run("scancel", pending, check=False)
        # A running job whose step is not under cupmon-srun-wrapper: nothing to open a window on.
        plain = self.sbatch("--ntasks=1", script="srun sleep 60")
        try:
            self.cluster.wait_job(plain, ("RUNNING",), 60)
            steps = ("squeue", "--noheader", "--steps", f"--jobs={plain}")
            self.cluster.wait(lambda: self.cluster.run(*steps, check=False).stdout.strip(), 30,
                              f"job {plain}'s step starting")
            r = self.script(TRIGGER, plain)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(f"{self.cluster.host}: no live monitored rank of job {plain}", r.stderr)
            self.assertIn("some ranks did not get a window", r.stderr)
        finally:
            self.cluster.run("scancel", plain, check=False)

    def test_5_node_agent_scrapes_and_triggers_a_running_job(self):
        # The agent recipe (cupmon-agent-prolog/-epilog, run here by hand with the variables
        # slurmd gives a prolog) on the job's node: one /metrics for both ranks, and a window
        # opened in both through `cupmonctl window --job`.
        job = self.sbatch("--ntasks=2", script=(
            f"srun {WRAPPER} --cupmon-run {os.environ['CUPMON_RUN']} -- {self.rank} 20"))
        self.cluster.wait_job(job, ("RUNNING",), 60)
        self.cluster.wait(lambda: self.output(job).count("TEST DOUBLE") == 2, 30,
                          f"job {job}'s two ranks did not start")
        port = free_port()
        agent_env = dict(self.env, SLURM_JOB_ID=job, SLURM_JOB_UID=str(os.getuid()),
                         SLURM_JOB_USER=pwd.getpwuid(os.getuid()).pw_name,
                         CUPMONCTL=os.environ["CUPMONCTL"], CUPMON_AGENT_LISTEN=f"127.0.0.1:{port}",
                         CUPMON_AGENT_REGISTRY=self.env["CUPMON_REGISTRY_DIR"],
                         CUPMON_AGENT_STATE=os.path.join(self.tmp, "agent-state"))
        r = subprocess.run([AGENT_PROLOG], env=agent_env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
                text = resp.read().decode()
            ranks = sorted(re.findall(r'^cupmon_info\{pid="\d+",rank="(\d+)",job="' + job + '"',
                                      text, re.M))
            self.assertEqual(ranks, ["0", "1"], text)
            r = subprocess.run([os.environ["CUPMONCTL"], "--registry",
                                self.env["CUPMON_REGISTRY_DIR"], "window", "--job", job,
                                "--duration", "1s", "--align", "2s"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(r.stdout.count("window scheduled"), 2, r.stdout)
        finally:
            r = subprocess.run([AGENT_EPILOG], env=agent_env, capture_output=True, text=True,
                               timeout=60)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        state = self.cluster.wait_job(job, FINISHED, 60)
        self.assertEqual(state, "COMPLETED", self.output(job))
        info = self.decode("info", os.path.join(self.node_dir, "cupmon", job)).stdout
        self.assertEqual(info.count("#1 source TRIGGER_SOCKET"), 2, info)
        section = re.search(r"  #1\n((?:    rank .*\n)+)", info)
        self.assertIsNotNone(section, info)
        for seconds, nanos in re.findall(r"T\d\d:\d\d:(\d\d)\.(\d{9})Z", section.group(1)):
            offset = (int(seconds) % 2) + int(nanos) / 1e9
            self.assertLess(offset, 0.1,
                            f"window #1 began {offset:.6f} s after the instant\n{info}")

    def time_limit_result(self, job):
        """Waits for a --time=1 job; returns its output, the rank's (produced, last_end_ns)
        lines and the kernel end times in the rank's recording."""
        # --time=1: Slurm's time-limit check runs every 30 s or so, so SIGTERM comes 60-90 s in.
        state = self.cluster.wait_job(job, FINISHED, 150)
        out = self.output(job)
        self.assertEqual(state, "TIMEOUT", out)
        self.assertIn("DUE TO TIME LIMIT", out)
        lines = [(int(n), int(t)) for n, t in re.findall(r"produced (\d+) last_end_ns (\d+)", out)]
        self.assertTrue(lines, out)
        rank_dir = os.path.join(self.node_dir, "cupmon", job, "rank-0")
        ends = self.kernel_ends(rank_dir)
        if not ends:
            # The rank's 'produced' lines are many; what matters (cupmon's and Slurm's lines
            # around the signal) is printed first so that a cut log still shows it.
            info = self.decode("info", rank_dir)
            others = "\n".join(l for l in out.splitlines() if not l.startswith("produced "))
            self.fail(f"no kernel record in {rank_dir}\njob output without its "
                      f"{len(lines)} 'produced' lines (last: {lines[-1]}):\n{others}\n"
                      f"info (exit {info.returncode}):\n{info.stdout}\n{info.stderr}\n"
                      f"files: {os.listdir(rank_dir)}")
        return out, lines, ends

    def test_8_time_limit_under_srun_loses_at_most_a_flush_period(self):
        job = self.srun_time_limit_job
        out, lines, ends = self.time_limit_result(job)
        produced, printed_end = lines[-1]
        # What srun's SIGKILL can cut off is what CUPTI held since the last periodic flush
        # (200 ms): everything the rank had produced 1 s before its last line is on disk.
        # Counted, not timed: the rank prints every 10 kernels (about 0.2 s).
        earlier = [n for n, t in lines if t <= printed_end - 1_000_000_000]
        self.assertTrue(earlier, out)
        self.assertGreaterEqual(len(ends), earlier[-1], out)
        won = len(ends) >= produced
        forced = "forcing job termination" in out
        print(f"time-limit job {job} under srun: {len(ends)} kernels kept, {produced} produced "
              f"by the last line, {earlier[-1]} by 1 s before it; the SIGTERM flush "
              f"{'won' if won else 'lost'} the race with srun's SIGKILL "
              f"(srun {'printed' if forced else 'did not print'} 'forcing job termination')")

    def test_9_time_limit_sigterm_keeps_the_last_seconds(self):
        job = self.time_limit_job
        out, lines, ends = self.time_limit_result(job)
        produced, printed_end = lines[-1]
        # Everything the rank produced up to its last line is on disk: with no periodic flush and
        # unfilled buffers, only the SIGTERM final flush can have written it. Counted, not timed:
        # the export's end_ns is the record's time mapped through the recording's calibration,
        # which may differ from the raw stamp the rank printed by tens of ns (77 ns seen).
        self.assertGreaterEqual(len(ends), produced, out)
        self.assertGreaterEqual(max(ends), printed_end - 1_000_000, out)
        end_time = self.cluster.job_field(job, "EndTime")
        print(f"time-limit job {job}: {len(ends)} kernels kept, last {max(ends)}, "
              f"{produced} produced by the last line, which printed {printed_end}, "
              f"Slurm EndTime {end_time}")


if __name__ == "__main__":
    unittest.main()
