"""The node agent (`cupmonctl serve`, `cupmonctl window --job`, tools/cupmonctl/node_agent.cc) with
several monitored processes on one host: slurm_rank_double (tests/deploy/slurm_rank_double.cc), the
real monitor on the CUPTI TEST DOUBLE (no GPU, synthetic records), each started with its own
SLURM_JOB_ID / SLURM_PROCID and a shared registry directory. Checks the one endpoint's labels,
processes exiting mid-test, a hung socket, malformed registry entries, an untrusted registry, the
job-wide window, usage errors, and a real Prometheus (Debian's) scraping the agent (skipped, saying
why, where /usr/bin/prometheus is absent).

Run through ctest (-R deploy_node_agent): it needs CUPMONCTL and CUPMON_SLURM_RANK.
"""

import ctypes
import getpass
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

BUILT = ("CUPMONCTL", "CUPMON_SLURM_RANK")
SLURM = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "deploy", "slurm")
SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def why_not_runnable():
    unset = [v for v in BUILT if not os.environ.get(v)]
    if unset:
        return f"{' '.join(unset)} not set: run this through ctest (-R deploy_node_agent)"
    absent = [os.environ[v] for v in BUILT if not os.access(os.environ[v], os.X_OK)]
    if absent:
        return f"not built: {' '.join(absent)} (ninja cupmonctl slurm_rank_double)"
    return None


def die_with_parent():
    # Children get SIGKILL if this test process dies (a crash, ctest's timeout kill).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def parse_exposition(text):
    """[(name, {label: value}, float)] for every sample line; fails on a line it cannot read."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SERIES.match(line)
        if not m:
            raise AssertionError(f"unparsable exposition line: {line!r}")
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def samples(parsed, name, **labels):
    return [(l, v) for n, l, v in parsed
            if n == name and all(l.get(k) == x for k, x in labels.items())]


def varint(n):
    out = b""
    while True:
        byte, n = n & 0x7F, n >> 7
        out += bytes([byte | (0x80 if n else 0)])
        if not n:
            return out


def field(number, payload):
    """A length-delimited protobuf field."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


class FakeMonitor:
    """TEST DOUBLE of a monitored process's control socket (hand-encoded cupmon.pb messages, no
    protobuf module needed): status says `job` and `rank`; every open_window is refused."""
    REFUSAL = "refused by the fake monitor"

    def __init__(self, path, job, rank):
        self.path, self.requests = path, []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve, args=(job, rank), daemon=True)
        self.thread.start()

    def serve(self, job, rank):
        # StatusReply: pid (2), rank (14), job_id (17); ControlReply: ok (1), error (2), status (3).
        status = (varint(2 << 3) + varint(os.getpid()) + varint(14 << 3) + varint(rank) +
                  field(17, job.encode()))
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                head = conn.recv(4, socket.MSG_WAITALL)
                if len(head) < 4:
                    continue
                body = conn.recv(int.from_bytes(head, "little"), socket.MSG_WAITALL)
                if body[:1] == b"\x0a":  # field 1: status
                    self.requests.append("status")
                    reply = varint(1 << 3) + varint(1) + field(3, status)
                else:
                    self.requests.append("open_window" if body[:1] == b"\x12" else repr(body))
                    reply = field(2, self.REFUSAL.encode())
                conn.sendall(len(reply).to_bytes(4, "little") + reply)

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self.thread.join(timeout=10)


class Agent:
    """`cupmonctl serve` on a free loopback port, stopped by pid."""

    def __init__(self, registry, *extra):
        self.proc = subprocess.Popen(
            [os.environ["CUPMONCTL"], "--registry", registry, "serve", "--listen", "127.0.0.1:0",
             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=die_with_parent)
        line = self.proc.stdout.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            self.stop()
            raise AssertionError(
                f"cupmonctl serve did not start: {line!r} {self.proc.stderr.read()}")
        self.port = int(m.group(1))

    def scrape(self, timeout=20):
        url = f"http://127.0.0.1:{self.port}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@unittest.skipIf(why_not_runnable(), why_not_runnable() or "")
class NodeAgentTest(unittest.TestCase):
    # (job, rank) of the processes each test starts: two ranks of job 77, one of job 88.
    RANKS = (("77", 0), ("77", 1), ("88", 0))

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-node-agent-test-")
        self.registry = os.path.join(self.tmp, "registry")
        os.mkdir(self.registry, 0o700)
        self.ranks = []
        self.agents = []
        for i, (job, rank) in enumerate(self.RANKS):
            self.start_rank(i, job, rank)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(os.path.islink(self.link(p.pid)) for p in self.ranks):
                break
            dead = [p for p in self.ranks if p.poll() is not None]
            if dead:
                self.fail(f"a rank exited early: {dead[0].stderr.read()}")
            time.sleep(0.05)
        else:
            self.fail(f"the ranks did not register in {self.registry}: {os.listdir(self.registry)}")

    def start_rank(self, i, job, rank):
        env = dict(os.environ, CUPMON_OUTPUT_DIR=os.path.join(self.tmp, f"out-{i}"),
                   CUPMON_REGISTRY_DIR=self.registry, CUPMON_SIGNAL="off",
                   SLURM_JOB_ID=job, SLURM_PROCID=str(rank))
        # The first rank sums steps (its endpoint is off, so only this turns them on).
        env["CUPMON_STEP_METRICS"] = "1" if i == 0 else "0"
        for var in ("RANK", "TORCHELASTIC_RUN_ID", "LOCAL_RANK", "WORLD_SIZE"):
            env.pop(var, None)
        p = subprocess.Popen([os.environ["CUPMON_SLURM_RANK"], "0", "5"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=die_with_parent)
        self.ranks.append(p)
        return p

    def tearDown(self):
        for a in self.agents:
            a.stop()
            a.proc.stdout.close()
            a.proc.stderr.close()
        for p in self.ranks:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.ranks:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            p.stderr.close()
        os.chmod(self.registry, 0o700)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def link(self, pid):
        return os.path.join(self.registry, f"{pid}.sock")

    def agent(self, *extra):
        a = Agent(self.registry, *extra)
        self.agents.append(a)
        return a

    def ctl(self, *args):
        return subprocess.run([os.environ["CUPMONCTL"], "--registry", self.registry, *args],
                              capture_output=True, text=True, timeout=60)

    def scrape_ok(self, agent):
        status, body = agent.scrape()
        self.assertEqual(status, 200, body)
        return parse_exposition(body)

    def test_one_endpoint_labels_every_process(self):
        agent = self.agent()
        parsed = self.scrape_ok(agent)
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 3)
        for p, (job, rank) in zip(self.ranks, self.RANKS):
            pid = str(p.pid)
            info = samples(parsed, "cupmon_info", pid=pid)
            self.assertEqual(len(info), 1, f"pid {pid}: {info}")
            labels, value = info[0]
            self.assertEqual(value, 1)
            self.assertEqual((labels["job"], labels["rank"]), (job, str(rank)))
            self.assertEqual(labels["Hostname"], socket.gethostname())
            self.assertEqual(labels["output_dir"],
                             os.path.join(self.tmp, f"out-{self.ranks.index(p)}"))
            self.assertEqual(samples(parsed, "cupmon_agent_process_up", pid=pid)[0][1], 1)
            for family in ("cupmon_kernel_records_total", "cupmon_compressed_bytes_total",
                           "cupmon_windows_opened_total", "cupmon_files", "cupmon_write_error"):
                got = samples(parsed, family, pid=pid, job=job, rank=str(rank))
                self.assertEqual(len(got), 1, f"{family} for pid {pid}")
        # The per-step sums of the rank that has them on, relayed with its labels (0 so far: one
        # kernel a step is no pattern the watch learns in this test's time); none for the others,
        # never zeros for a process that does not sum steps.
        step_families = ("cupmon_steps_total", "cupmon_step_seconds_total",
                         "cupmon_step_work_seconds_total", "cupmon_step_collective_seconds_total",
                         "cupmon_step_host_gap_seconds_total")
        for i, (p, (job, rank)) in enumerate(zip(self.ranks, self.RANKS)):
            for family in step_families:
                got = samples(parsed, family, pid=str(p.pid), job=job, rank=str(rank))
                self.assertEqual(len(got), 1 if i == 0 else 0, f"{family} for pid {p.pid}: {got}")
        # Each family's HELP/TYPE once, whatever the number of processes.
        status, body = agent.scrape()
        self.assertEqual(body.count("# TYPE cupmon_kernel_records_total counter"), 1)
        # The synthetic kernels of every rank reach the counters (the writer publishes them).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            parsed = self.scrape_ok(agent)
            counts = [samples(parsed, "cupmon_kernel_records_total", pid=str(p.pid))[0][1]
                      for p in self.ranks]
            if all(c > 0 for c in counts):
                break
            time.sleep(0.5)
        self.assertTrue(all(c > 0 for c in counts), f"kernel records per rank: {counts}")
        # The same figure as the process's own status reply, read just after the scrape: never
        # fewer (counters only grow).
        st = json.loads(self.ctl("--json", "status", str(self.ranks[0].pid)).stdout)
        self.assertGreaterEqual(int(st["status"]["metrics"]["kernel_records"]), counts[0])
        self.assertEqual(st["status"]["job_id"], "77")
        self.assertEqual(st["status"]["rank"], 0)

    def test_processes_coming_and_going(self):
        agent = self.agent("--rescan", "200ms")
        self.assertEqual(samples(self.scrape_ok(agent), "cupmon_agent_processes")[0][1], 3)
        # A process that starts after the agent is found at the next scrape.
        late = self.start_rank(len(self.ranks), "77", 2)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.islink(self.link(late.pid)):
            time.sleep(0.05)
        parsed = self.scrape_ok(agent)
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 4)
        self.assertEqual(samples(parsed, "cupmon_info", pid=str(late.pid))[0][0]["rank"], "2")
        late.send_signal(signal.SIGTERM)
        late.wait(timeout=30)
        gone = self.ranks[1]
        gone.kill()  # SIGKILL: the registry entry stays behind, stale
        gone.wait()
        self.assertTrue(os.path.islink(self.link(gone.pid)))
        parsed = self.scrape_ok(agent)
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 2)
        self.assertEqual(samples(parsed, "cupmon_info", pid=str(gone.pid)), [])
        self.assertFalse(os.path.lexists(self.link(gone.pid)), "stale entry not removed")
        # A clean exit (SIGTERM: the monitor removes its own entry) is followed as well.
        self.ranks[2].send_signal(signal.SIGTERM)
        self.ranks[2].wait(timeout=30)
        parsed = self.scrape_ok(agent)
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 1)
        self.assertEqual(len(samples(parsed, "cupmon_info", pid=str(self.ranks[0].pid))), 1)
        self.assertIsNone(agent.proc.poll(), "the agent exited")
        time.sleep(0.5)  # two --rescan periods: the departures are logged
        self.assertEqual(agent.stop(), 0)
        log = agent.proc.stderr.read()
        self.assertIn(f"monitoring pid {self.ranks[0].pid}", log)
        self.assertIn(f"pid {self.ranks[2].pid} is gone", log)

    def test_max_processes_bounds_a_scrape(self):
        parsed = self.scrape_ok(self.agent("--max-processes", "2"))
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 3)
        self.assertEqual(samples(parsed, "cupmon_agent_processes_skipped")[0][1], 1)
        self.assertEqual(len(samples(parsed, "cupmon_info")), 2)

    def test_hung_process_costs_only_its_deadline(self):
        # A socket that accepts (the kernel's backlog) and never answers, registered under a live
        # pid of our own uid (this test's), so that it passes the registry and peer checks.
        hung_path = os.path.join(self.tmp, "hung.sock")
        hung = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        hung.bind(hung_path)
        hung.listen(16)
        os.symlink(hung_path, self.link(os.getpid()))
        try:
            agent = self.agent("--process-timeout", "300ms")
            started = time.monotonic()
            parsed = self.scrape_ok(agent)
            elapsed = time.monotonic() - started
            # Not a timing figure: a stalled scrape would take the urllib timeout (20 s).
            self.assertLess(elapsed, 10, "the scrape waited for the hung socket")
            up = samples(parsed, "cupmon_agent_process_up", pid=str(os.getpid()))
            self.assertEqual(up[0][1], 0)
            for p in self.ranks:
                up = samples(parsed, "cupmon_agent_process_up", pid=str(p.pid))
                self.assertEqual(up[0][1], 1)
            self.assertGreaterEqual(samples(parsed, "cupmon_agent_unreachable_total")[0][1], 1)
            # window --job skips it, says so, and still reaches the job's processes.
            r = self.ctl("--timeout", "300ms", "window", "--job", "77", "--duration", "200ms")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"could not ask pid {os.getpid()}", r.stderr)
        finally:
            os.unlink(self.link(os.getpid()))
            hung.close()

    def test_a_monitor_without_metrics_in_its_status_is_up_without_series(self):
        # An older monitor: its status reply has no `metrics` (the fake monitor's has none).
        fake = FakeMonitor(os.path.join(self.tmp, "old.sock"), job="77", rank=9)
        os.symlink(fake.path, self.link(os.getpid()))
        try:
            parsed = self.scrape_ok(self.agent())
        finally:
            os.unlink(self.link(os.getpid()))
            fake.close()
        pid = str(os.getpid())
        self.assertEqual(samples(parsed, "cupmon_agent_process_up", pid=pid)[0][1], 1)
        self.assertEqual(samples(parsed, "cupmon_info", pid=pid), [])
        self.assertEqual(samples(parsed, "cupmon_kernel_records_total", pid=pid), [])
        self.assertEqual(len(samples(parsed, "cupmon_info")), 3)

    def test_malformed_registry_entries_are_skipped(self):
        with open(os.path.join(self.registry, "123.sock"), "w") as f:  # a regular file
            f.write("x")
        open(os.path.join(self.registry, "notapid.sock"), "w").close()
        open(os.path.join(self.registry, "README"), "w").close()
        os.symlink("/nonexistent/x.sock", os.path.join(self.registry, "999999999.sock"))
        os.symlink("/etc/hostname", os.path.join(self.registry, "1.sock"))  # live pid, not a socket
        os.symlink(os.path.join(self.tmp, "missing.sock"), self.link(os.getpid()))
        parsed = self.scrape_ok(self.agent())
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 3)
        self.assertEqual(sorted(int(l["pid"]) for l, _ in samples(parsed, "cupmon_info")),
                         sorted(p.pid for p in self.ranks))
        self.assertFalse(os.path.lexists(os.path.join(self.registry, "999999999.sock")))
        self.assertFalse(os.path.lexists(self.link(os.getpid())))

    def test_untrusted_registry_is_a_clear_error(self):
        agent = self.agent()
        os.chmod(self.registry, 0o755)
        status, body = agent.scrape()
        self.assertEqual(status, 500, body)
        self.assertIn(self.registry, body)
        self.assertIn("group or others", body)
        r = self.ctl("window", "--job", "77", "--duration", "1s")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("group or others", r.stderr)

    def test_job_window_opens_every_rank_of_the_job_at_one_instant(self):
        r = self.ctl("--json", "window", "--job", "77", "--duration", "300ms", "--align", "1s")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["job"], "77")
        self.assertEqual(out["at_unix_ms"] % 1000, 0)
        self.assertEqual(sorted(p["pid"] for p in out["processes"]),
                         sorted(p.pid for p in self.ranks[:2]))
        self.assertTrue(all(p["ok"] for p in out["processes"]), out)
        self.assertEqual(sorted(p["rank"] for p in out["processes"]), [0, 1])
        # After the instant, both ranks of job 77 opened a window; job 88's did not.
        deadline = time.monotonic() + 30
        opened = []
        while time.monotonic() < deadline:
            opened = []
            for p in self.ranks:
                st = json.loads(self.ctl("--json", "status", str(p.pid)).stdout)
                opened.append(int(st["status"]["metrics"].get("windows_opened", 0)))
            if opened[0] >= 1 and opened[1] >= 1:
                break
            time.sleep(0.2)
        self.assertEqual([min(n, 1) for n in opened], [1, 1, 0], opened)

    def test_job_window_errors(self):
        r = self.ctl("window", "--job", "999", "--duration", "1s")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("no monitored process of job 999", r.stderr)
        self.assertIn("jobs seen: 77, 88", r.stderr)
        # A process of the job that refuses (the fake monitor below) makes the exit status 1; the
        # job's other process still gets its window.
        fake = FakeMonitor(os.path.join(self.tmp, "fake.sock"), job="88", rank=5)
        os.symlink(fake.path, self.link(os.getpid()))
        try:
            r = self.ctl("window", "--job", "88", "--duration", "1s")
        finally:
            os.unlink(self.link(os.getpid()))
            fake.close()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"cupmonctl: pid {os.getpid()} rank 5: {FakeMonitor.REFUSAL}", r.stderr)
        self.assertIn(f"pid {self.ranks[2].pid} rank 0: window scheduled", r.stdout)
        self.assertEqual(fake.requests, ["status", "open_window"])

    def test_usage_errors(self):
        cases = [
            (("window", "--duration", "1s"), "give a pid or --job"),
            (("window", "5", "--job", "3", "--duration", "1s"), "excludes"),
            (("window", "--job", "77", "--duration", "0s"), "duration"),
            (("serve", "--listen", "0.0.0.0:0"), "not a loopback address"),
            (("serve", "--listen", "nonsense"), "--listen"),
            (("serve", "--process-timeout", "0s"), "--process-timeout"),
            (("serve", "--rescan", "1ms"), "--rescan"),
            (("serve", "--max-processes", "0"), "--max-processes"),
        ]
        for args, needle in cases:
            r = self.ctl(*args)
            self.assertEqual(r.returncode, 2, f"{args}: {r.stdout}{r.stderr}")
            self.assertIn(needle, r.stdout + r.stderr, args)
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        try:
            r = self.ctl("serve", "--listen", f"127.0.0.1:{held.getsockname()[1]}")
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn("another process uses this port", r.stderr)
        finally:
            held.close()
        r = self.ctl("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("window --job", r.stdout)
        self.assertIn("serve --listen", r.stdout)

    def test_slurm_prolog_and_epilog_run_one_agent_per_user(self):
        # The scripts as slurmd runs them, without Slurm: its variables set by hand. Here the job's
        # uid is this test's, so the prolog starts the agent without changing user.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        state = os.path.join(self.tmp, "agent-state")
        uid = os.getuid()
        env = dict(os.environ, SLURM_JOB_UID=str(uid), SLURM_JOB_USER=getpass.getuser(),
                   CUPMON_AGENT_LISTEN=f"127.0.0.1:{port}", CUPMON_AGENT_REGISTRY=self.registry,
                   CUPMON_AGENT_STATE=state)

        def script(name, job, **extra):
            return subprocess.run([os.path.join(SLURM, name)],
                                  env=dict(env, SLURM_JOB_ID=job, **extra),
                                  capture_output=True, text=True, timeout=60)

        pidfile = os.path.join(state, f"{uid}.pid")
        r = script("cupmon-agent-prolog", "77")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        with open(pidfile) as f:
            agent_pid = int(f.read())
        self.addCleanup(lambda: self.alive(agent_pid) and os.kill(agent_pid, signal.SIGKILL))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=20) as resp:
            parsed = parse_exposition(resp.read().decode())
        self.assertEqual(samples(parsed, "cupmon_agent_processes")[0][1], 3)
        # A second job of the same user joins the running agent.
        self.assertEqual(script("cupmon-agent-prolog", "88").returncode, 0)
        with open(pidfile) as f:
            self.assertEqual(int(f.read()), agent_pid)
        self.assertEqual(script("cupmon-agent-epilog", "77").returncode, 0)
        self.assertTrue(os.path.exists(f"/proc/{agent_pid}"), "stopped while job 88 still runs")
        r = script("cupmon-agent-epilog", "88")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.alive(agent_pid):
            time.sleep(0.05)
        self.assertFalse(self.alive(agent_pid), "the last epilog did not stop the agent")
        self.assertFalse(os.path.exists(pidfile))
        # Never a failing prolog (it would drain the node), but a message naming the problem.
        r = script("cupmon-agent-prolog", "99", CUPMONCTL="/nonexistent/cupmonctl")
        self.assertEqual(r.returncode, 0)
        self.assertIn("/nonexistent/cupmonctl is not executable", r.stderr)
        r = subprocess.run([os.path.join(SLURM, "cupmon-agent-prolog")], capture_output=True,
                           text=True, timeout=60, env={"PATH": os.environ["PATH"]})
        self.assertEqual(r.returncode, 0)
        self.assertIn("SLURM_JOB_ID, SLURM_JOB_UID and SLURM_JOB_USER must be set", r.stderr)
        r = script("cupmon-agent-prolog", "100", CUPMON_AGENT_LISTEN="127.0.0.1:99999")
        self.assertEqual(r.returncode, 0)
        self.assertIn("the agent did not start for job 100", r.stderr)
        self.assertIn("port must be a number", r.stderr)
        script("cupmon-agent-epilog", "100")

    @staticmethod
    def alive(pid):
        # A zombie (exited, not yet reaped by its parent) counts as gone.
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def test_live_prometheus_scrapes_the_agent(self):
        prometheus = os.environ.get("CUPMON_PROMETHEUS") or shutil.which("prometheus") or ""
        if not os.access(prometheus, os.X_OK):
            self.skipTest("Debian's prometheus is not installed (tools/install-deps installs it, "
                          "or set CUPMON_PROMETHEUS=/path/to/prometheus)")
        agent = self.agent()
        prom_dir = os.path.join(self.tmp, "prom")
        os.mkdir(prom_dir)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            prom_port = s.getsockname()[1]
        with open(os.path.join(prom_dir, "prometheus.yml"), "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: cupmon-node\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{agent.port}']\n")
        log = open(os.path.join(prom_dir, "prometheus.log"), "w")
        prom = subprocess.Popen(
            [prometheus, f"--config.file={prom_dir}/prometheus.yml",
             f"--storage.tsdb.path={prom_dir}/data", f"--web.listen-address=127.0.0.1:{prom_port}"],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        try:
            query = urllib.parse.quote('cupmon_info{job="cupmon-node"}')
            deadline = time.monotonic() + 120
            result = []
            while time.monotonic() < deadline and prom.poll() is None:
                try:
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{prom_port}/api/v1/query?query={query}",
                            timeout=5) as r:
                        result = json.load(r)["data"]["result"]
                except (urllib.error.URLError, ConnectionError, KeyError, ValueError):
                    result = []
                if len(result) == 3:
                    break
                time.sleep(1)
            with open(os.path.join(prom_dir, "prometheus.log")) as f:
                prom_log = f.read()
            self.assertEqual(len(result), 3,
                             f"series: {result}; prometheus log:\n{prom_log[-3000:]}")
            # The target's own `job` label is Prometheus' scrape job; cupmon's `job` (the Slurm
            # job) arrives as exported_job, as Prometheus renames a clashing label.
            got = sorted((m["metric"]["pid"], m["metric"]["rank"], m["metric"]["exported_job"])
                         for m in result)
            want = sorted((str(p.pid), str(rank), job)
                          for p, (job, rank) in zip(self.ranks, self.RANKS))
            self.assertEqual(got, want)
        finally:
            prom.send_signal(signal.SIGTERM)
            try:
                prom.wait(timeout=30)
            except subprocess.TimeoutExpired:
                prom.kill()
                prom.wait()
            log.close()


if __name__ == "__main__":
    unittest.main()
