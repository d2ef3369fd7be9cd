"""Checks of deploy/kubernetes, deploy/systemd and deploy/docker without a cluster, systemd or docker:
the Job manifest parses (a small YAML-subset parser, cross-checked with PyYAML when present) and holds
the fields the recipe relies on; cupmon-k8s-window runs against a TEST STUB kubectl; the systemd
drop-in and the Dockerfile agree with the files and layout they reference.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEPLOY = os.path.join(REPO, "deploy")
STUBS = os.path.join(HERE, "stubs")
JOB_YAML = os.path.join(DEPLOY, "kubernetes", "cupmon-job.yaml")
K8S_WINDOW = os.path.join(DEPLOY, "kubernetes", "cupmon-k8s-window")
DROPIN = os.path.join(DEPLOY, "systemd", "cupmon.conf")
DOCKERFILE = os.path.join(DEPLOY, "docker", "Dockerfile")
DAEMONSET_YAML = os.path.join(DEPLOY, "kubernetes", "cupmon-agent-daemonset.yaml")
AGENT_UNIT = os.path.join(DEPLOY, "systemd", "cupmon-agent.service")
BUILD_DIR = os.environ.get("CUPMON_BUILD_DIR", "")
PACKAGE_DIR = os.environ.get("CUPMON_PACKAGE_DIR", "")
CMAKE_COMMAND = os.environ.get("CMAKE_COMMAND", "cmake")

# Environment variables the monitor reads (monitor/src/config.cc) and the ones this component adds.
KNOWN_CUPMON_VARS = {
    "CUPMON_OUTPUT_DIR", "CUPMON_KINDS", "CUPMON_BUFFER_SIZE", "CUPMON_POOL_SIZE", "CUPMON_FLUSH_MS",
    "CUPMON_FILE_SIZE", "CUPMON_RETENTION_BYTES", "CUPMON_RETENTION_FILES", "CUPMON_ZSTD_LEVEL",
    "CUPMON_ENCODING", "CUPMON_STATS_MS", "CUPMON_ZERO_BUFFERS",
    "CUPMON_METRICS_ADDRESS", "CUPMON_METRICS_ALLOW_REMOTE",
}


# ---- a YAML subset: block mappings and sequences, plain/quoted scalars, [flow, lists], {} ----------

def _scalar(text):
    text = text.strip()
    if text == "{}":
        return {}
    if text == "[]":
        return []
    if text.startswith("[") and text.endswith("]"):
        return [_scalar(p) for p in re.findall(r'"(?:[^"\\]|\\.)*"|[^,\s][^,]*', text[1:-1])]
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    return text


def parse_yaml(text):
    lines = []
    for raw in text.splitlines():
        stripped = re.sub(r"\s+#.*$", "", raw) if not raw.lstrip().startswith("#") else ""
        if stripped.strip():
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise ValueError(f"tab indentation: {raw!r}")
            lines.append((len(stripped) - len(stripped.lstrip()), stripped.strip()))
    pos = 0

    def block(indent):
        nonlocal pos
        if pos >= len(lines):
            return None
        if lines[pos][1].startswith("- "):
            out = []
            while pos < len(lines) and lines[pos][0] == indent and lines[pos][1].startswith("- "):
                ind, content = lines[pos]
                # "- key: value" starts a mapping whose keys sit at indent + 2.
                lines[pos] = (ind + 2, content[2:])
                if re.match(r"^[A-Za-z0-9_.\-/]+:( |$)", content[2:]):
                    out.append(block(ind + 2))
                else:
                    pos += 1
                    out.append(_scalar(content[2:]))
            return out
        out = {}
        while pos < len(lines) and lines[pos][0] == indent:
            content = lines[pos][1]
            m = re.match(r"^([A-Za-z0-9_.\-/]+):(?: (.*))?$", content)
            if not m:
                raise ValueError(f"not a mapping entry at line {pos}: {content!r}")
            key, value = m.group(1), m.group(2)
            if key in out:
                raise ValueError(f"duplicate key {key}")
            pos += 1
            if value is None or value == "":
                if pos < len(lines) and (lines[pos][0] > indent or
                                         (lines[pos][0] == indent and lines[pos][1].startswith("- "))):
                    out[key] = block(lines[pos][0])
                else:
                    out[key] = None
            else:
                out[key] = _scalar(value)
        if pos < len(lines) and lines[pos][0] > indent:
            raise ValueError(f"bad indentation at {lines[pos]!r}")
        return out

    result = block(0)
    if pos != len(lines):
        raise ValueError(f"unparsed input from {lines[pos]!r}")
    return result


def run_with_recipe_environment(test, injection, preload):
    """Runs the build's cupti_preload_probe (a program linked against libcupti, as torch is) with
    the recipe's CUDA_INJECTION64_PATH and LD_PRELOAD, their directory mapped to the build tree's
    monitor/ (where libcupmon.so and libcupmon-preload.so lie side by side, as installed), and
    checks that its CUPTI calls reach libcupmon-preload.so."""
    build = os.environ.get("CUPMON_BUILD_DIR", "")
    probe = os.path.join(build, "tests", "monitor", "cupti_preload_probe")
    if not build or not os.path.exists(probe):
        test.skipTest("cupti_preload_probe is not built (CUPTI headers missing?)")
    ldd = subprocess.run(["ldd", probe], capture_output=True, text=True).stdout
    if "libasan" in ldd or "libtsan" in ldd:
        test.skipTest("sanitizer build: its runtime must come first in LD_PRELOAD")
    lib_dir = os.path.dirname(injection)
    test.assertEqual(os.path.dirname(preload), lib_dir, "the two libraries lie side by side")
    test.assertEqual(os.path.basename(injection), "libcupmon.so")
    test.assertEqual(os.path.basename(preload), "libcupmon-preload.so")
    here = os.path.join(build, "monitor")
    env = dict(os.environ)
    env["CUDA_INJECTION64_PATH"] = os.path.join(here, os.path.basename(injection))
    env["LD_PRELOAD"] = os.path.join(here, os.path.basename(preload))
    for path in (env["CUDA_INJECTION64_PATH"], env["LD_PRELOAD"]):
        test.assertTrue(os.path.exists(path), f"{path} is not built")
    r = subprocess.run([probe], capture_output=True, text=True, env=env, timeout=60)
    # The probe's other checks compare libcupti's answers with and without cupmon, which differ on
    # a machine with a GPU; the recipe is about where the calls go.
    test.assertIn("ok: cuptiActivityEnable resolves to libcupmon-preload.so", r.stdout,
                  r.stdout + r.stderr)
    test.assertIn("ok: cuptiActivityRegisterCallbacks forwarded", r.stdout, r.stdout + r.stderr)


def env_map(container):
    return {e["name"]: e for e in container.get("env", [])}


class KubernetesManifestTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(JOB_YAML) as f:
            cls.text = f.read()
        cls.doc = parse_yaml(cls.text)
        cls.pod = cls.doc["spec"]["template"]["spec"]
        cls.init = cls.pod["initContainers"][0]
        cls.main = cls.pod["containers"][0]
        cls.volumes = {v["name"]: v for v in cls.pod["volumes"]}

    def test_parser_agrees_with_pyyaml_when_available(self):
        try:
            import yaml
        except ImportError:
            self.skipTest("PyYAML is not installed; the subset parser alone is used")
        self.assertEqual(self.doc, yaml.safe_load(self.text))

    def test_parser_rejects_broken_yaml(self):
        for bad in ("a: 1\n  b: 2\n", "a: 1\na: 2\n", "a:\n\t- b\n", "just text\n"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                parse_yaml(bad)

    def test_is_a_job_with_an_init_container_copying_into_an_empty_dir(self):
        self.assertEqual(self.doc["apiVersion"], "batch/v1")
        self.assertEqual(self.doc["kind"], "Job")
        self.assertEqual(self.pod["restartPolicy"], "Never")
        mount = {m["name"]: m for m in self.init["volumeMounts"]}
        self.assertIn("cupmon-bin", mount)
        self.assertEqual(self.volumes["cupmon-bin"]["emptyDir"], {})
        self.assertEqual(self.init["command"][-1], f"cp -a /opt/cupmon/. {mount['cupmon-bin']['mountPath']}/")

    def test_main_container_loads_cupmon_from_the_shared_volume(self):
        env = env_map(self.main)
        mounts = {m["name"]: m for m in self.main["volumeMounts"]}
        bin_path = mounts["cupmon-bin"]["mountPath"]
        self.assertTrue(mounts["cupmon-bin"]["readOnly"])
        # /opt/cupmon/lib/libcupmon.so in the image (Dockerfile) lands at <mount>/lib/libcupmon.so.
        self.assertEqual(env["CUDA_INJECTION64_PATH"]["value"], f"{bin_path}/lib/libcupmon.so")
        # Preloaded as cupmon-run does: torch.profiler in the job shares CUPTI with cupmon.
        self.assertEqual(env["LD_PRELOAD"]["value"], f"{bin_path}/lib/libcupmon-preload.so")
        for name, e in env.items():
            if name.startswith("CUPMON_"):
                self.assertIn(name, KNOWN_CUPMON_VARS)
                self.assertIsInstance(e["value"], str, f"{name} must be a quoted string")

    def test_its_environment_makes_a_cupti_client_reach_cupmon(self):
        env = env_map(self.main)
        run_with_recipe_environment(self, env["CUDA_INJECTION64_PATH"]["value"],
                                    env["LD_PRELOAD"]["value"])

    def test_output_goes_to_a_persistent_volume_per_pod(self):
        env = env_map(self.main)
        names = list(env)
        out = env["CUPMON_OUTPUT_DIR"]["value"]
        mounts = {m["name"]: m["mountPath"] for m in self.main["volumeMounts"]}
        self.assertTrue(out.startswith(mounts["cupmon-out"] + "/"), out)
        self.assertIn("persistentVolumeClaim", self.volumes["cupmon-out"])
        # $(POD_NAME) only expands when POD_NAME is defined earlier in the list.
        self.assertIn("$(POD_NAME)", out)
        self.assertLess(names.index("POD_NAME"), names.index("CUPMON_OUTPUT_DIR"))
        self.assertEqual(env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"], "metadata.name")

    def test_metrics_port_is_exposed_and_consistent(self):
        env = env_map(self.main)
        address = env["CUPMON_METRICS_ADDRESS"]["value"]
        host, port = address.rsplit(":", 1)
        ports = {p["name"]: p for p in self.main["ports"]}
        self.assertEqual(ports["cupmon-metrics"]["containerPort"], int(port))
        annotations = self.doc["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/port"], port)
        self.assertEqual(annotations["prometheus.io/path"], "/metrics")
        if host not in ("127.0.0.1", "::1", "[::1]", "localhost"):
            self.assertEqual(env["CUPMON_METRICS_ALLOW_REMOTE"]["value"], "1")

    def test_window_recipe_matches_the_manifest(self):
        with open(K8S_WINDOW) as f:
            script = f.read()
        mounts = {m["name"]: m["mountPath"] for m in self.main["volumeMounts"]}
        self.assertIn(f"ctl={mounts['cupmon-bin']}/bin/cupmonctl", script)
        self.assertIn(f"container={self.main['name']}", script)
        self.assertIn("job-name=$job", script)  # the label the Job controller puts on its pods


def built_cupmonctl():
    path = os.path.join(BUILD_DIR, "tools", "cupmonctl", "cupmonctl") if BUILD_DIR else ""
    return path if os.access(path, os.X_OK) else ""


def check_serve_flags(test, argv):
    """Every --flag of a `cupmonctl ... serve ...` command line is one the built cupmonctl has."""
    ctl = built_cupmonctl()
    if not ctl:
        test.skipTest("CUPMON_BUILD_DIR with a built cupmonctl is not given")
    helps = subprocess.run([ctl, "--help"], capture_output=True, text=True).stdout + \
        subprocess.run([ctl, "serve", "--help"], capture_output=True, text=True).stdout
    for flag in (a for a in argv if a.startswith("--")):
        test.assertIn(flag, helps, f"cupmonctl has no {flag}")


class KubernetesDaemonSetTest(unittest.TestCase):
    """deploy/kubernetes/cupmon-agent-daemonset.yaml: the node agent on every GPU node."""

    @classmethod
    def setUpClass(cls):
        with open(DAEMONSET_YAML) as f:
            cls.text = f.read()
        cls.doc = parse_yaml(cls.text)
        cls.pod = cls.doc["spec"]["template"]["spec"]
        cls.agent = cls.pod["containers"][0]

    def test_parser_agrees_with_pyyaml_when_available(self):
        try:
            import yaml
        except ImportError:
            self.skipTest("PyYAML is not installed")
        self.assertEqual(self.doc, yaml.safe_load(self.text))

    def test_is_a_daemonset_running_cupmonctl_serve(self):
        self.assertEqual((self.doc["apiVersion"], self.doc["kind"]), ("apps/v1", "DaemonSet"))
        self.assertEqual(self.doc["spec"]["selector"]["matchLabels"],
                         self.doc["spec"]["template"]["metadata"]["labels"])
        cmd = self.agent["command"]
        self.assertEqual(cmd[0], "/opt/cupmon/bin/cupmonctl")  # the image's layout (Dockerfile)
        self.assertIn("serve", cmd)
        check_serve_flags(self, cmd)

    def test_port_is_consistent_and_remote_listening_is_explicit(self):
        cmd = self.agent["command"]
        listen = cmd[cmd.index("--listen") + 1]
        port = int(listen.rsplit(":", 1)[1])
        self.assertIn("--allow-remote", cmd)  # 0.0.0.0 is refused without it
        self.assertTrue(self.pod["hostNetwork"])
        ports = self.agent["ports"][0]
        self.assertEqual((ports["containerPort"], ports["hostPort"]), (port, port))
        annotations = self.doc["spec"]["template"]["metadata"]["annotations"]
        self.assertEqual(annotations["prometheus.io/port"], str(port))

    def test_registry_is_shared_with_the_host_and_owned_by_the_agents_uid(self):
        # hostPID: the registry is keyed by pid, and the agent checks each pid is alive.
        self.assertTrue(self.pod["hostPID"])
        cmd = self.agent["command"]
        registry = cmd[cmd.index("--registry") + 1]
        mounts = {m["name"]: m["mountPath"] for m in self.agent["volumeMounts"]}
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        (name, path), = mounts.items()
        self.assertTrue(registry.startswith(path + "/"), (registry, path))
        self.assertEqual(volumes[name]["hostPath"]["path"], path)
        # The init container creates it 0700 for the uid the agent runs as.
        uid = self.agent["securityContext"]["runAsUser"]
        init = " ".join(self.pod["initContainers"][0]["command"])
        self.assertIn(f"-o {uid} ", init)
        self.assertIn("-m 0700", init)
        self.assertIn(registry, init)
        self.assertFalse(self.agent["securityContext"]["allowPrivilegeEscalation"])


class SystemdAgentUnitTest(unittest.TestCase):
    def sections(self):
        out, current = {}, None
        with open(AGENT_UNIT) as f:
            for line in f:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                if line.startswith("["):
                    current = out.setdefault(line[1:-1], [])
                    continue
                key, _, value = line.partition("=")
                current.append((key, value))
        return out

    def test_runs_cupmonctl_serve_on_loopback_as_a_user(self):
        sections = self.sections()
        self.assertEqual(list(sections), ["Unit", "Service", "Install"])
        service = dict(sections["Service"])
        argv = service["ExecStart"].split()
        self.assertEqual(argv[0], "/opt/cupmon/bin/cupmonctl")
        self.assertIn("serve", argv)
        self.assertTrue(argv[argv.index("--listen") + 1].startswith("127.0.0.1:"))
        self.assertNotEqual(service.get("User", "root"), "root")
        env = dict(v.split("=", 1) for k, v in sections["Service"] if k == "Environment")
        # The agent removes stale registry entries: its registry must be writable under the sandbox.
        self.assertTrue(env["CUPMON_REGISTRY_DIR"].startswith(service["ReadWritePaths"] + "/"))
        check_serve_flags(self, argv)

    @unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze is not installed")
    def test_systemd_accepts_it(self):
        ctl = built_cupmonctl()
        if not ctl:
            self.skipTest("CUPMON_BUILD_DIR with a built cupmonctl is not given")
        tmp = tempfile.mkdtemp(prefix="cupmon-systemd-agent-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        unit = os.path.join(tmp, "cupmon-agent.service")
        with open(AGENT_UNIT) as f:  # the binary at its build path: verify checks it exists
            text = f.read().replace("/opt/cupmon/bin/cupmonctl", ctl)
        with open(unit, "w") as f:
            f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True)
        self.assertNotIn("cupmon-agent.service", r.stderr, r.stderr)


class KubernetesWindowStubTest(unittest.TestCase):
    """cupmon-k8s-window against the TEST STUB kubectl in tests/deploy/stubs."""

    def run_script(self, *args, **env):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-k8s-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.log = os.path.join(self.tmp, "stub.log")
        full_env = {"PATH": STUBS + os.pathsep + os.environ["PATH"], "STUB_LOG": self.log}
        full_env.update(env)
        return subprocess.run([K8S_WINDOW, *args], env=full_env, capture_output=True, text=True, timeout=60)

    def calls(self):
        with open(self.log) as f:
            return [line.rstrip("\n").split("\t")[1:] for line in f]

    def test_opens_a_window_on_every_monitored_process_of_every_pod(self):
        r = self.run_script("-n", "ml", "--duration", "2s", "--kinds", "runtime", "train-cupmon",
                            STUB_PODS="pod-a pod-b")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        calls = self.calls()
        self.assertEqual(calls[0], ["get", "pods", "--namespace", "ml", "--selector=job-name=train-cupmon",
                                    "--field-selector=status.phase=Running", "-o",
                                    "jsonpath={.items[*].metadata.name}"])
        windows = [c for c in calls if "window" in c]
        self.assertEqual(len(windows), 2)  # pid 42 in each pod; unreachable pid 43 skipped
        for pod, c in zip(("pod-a", "pod-b"), windows):
            self.assertEqual(c, ["exec", "--namespace", "ml", pod, "-c", "train", "--",
                                 "/cupmon/bin/cupmonctl", "window", "42", "--duration", "2s",
                                 "--align", "10s", "--kinds", "runtime"])
        self.assertIn("pod-b pid 42: window scheduled", r.stdout)

    def test_errors(self):
        r = self.run_script("train-cupmon", STUB_PODS="")
        self.assertEqual(r.returncode, 3)
        self.assertIn("no running pod", r.stderr)
        r = self.run_script("train-cupmon", STUB_PODS="pod-a pod-b", STUB_FAIL_PODS="pod-b")
        self.assertEqual(r.returncode, 1)
        self.assertIn("pod-b pid 42: FAILED", r.stdout)
        r = self.run_script()
        self.assertEqual(r.returncode, 2)
        r = self.run_script("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("kubectl exec", r.stdout)


def read_dropin():
    sections, current = {}, None
    with open(DROPIN) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], [])
                continue
            key, _, value = line.partition("=")
            if current is None or not key or not _:
                raise ValueError(f"bad drop-in line {line!r}")
            current.append((key, value))
    return sections


class SystemdDropInTest(unittest.TestCase):
    def test_injects_cupmon_with_known_variables_and_retention(self):
        sections = read_dropin()
        self.assertEqual(list(sections), ["Service"])
        env = dict(v.split("=", 1) for k, v in sections["Service"] if k == "Environment")
        keys = dict(sections["Service"])
        self.assertEqual(env["CUDA_INJECTION64_PATH"], "/opt/cupmon/lib/libcupmon.so")
        self.assertEqual(env["LD_PRELOAD"], "/opt/cupmon/lib/libcupmon-preload.so")
        for name in env:
            if name.startswith("CUPMON_"):
                self.assertIn(name, KNOWN_CUPMON_VARS)
        self.assertRegex(env["CUPMON_RETENTION_BYTES"], r"^[0-9]+[KMGT]?$")
        # The output directory is the one StateDirectory= creates (under /var/lib), private.
        self.assertEqual(env["CUPMON_OUTPUT_DIR"], "/var/lib/" + keys["StateDirectory"])
        self.assertEqual(keys["StateDirectoryMode"], "0700")
        host = env["CUPMON_METRICS_ADDRESS"].rsplit(":", 1)[0]
        self.assertEqual(host, "127.0.0.1")

    def test_its_environment_makes_a_cupti_client_reach_cupmon(self):
        sections = read_dropin()
        env = dict(v.split("=", 1) for k, v in sections["Service"] if k == "Environment")
        run_with_recipe_environment(self, env["CUDA_INJECTION64_PATH"], env["LD_PRELOAD"])

    @unittest.skipUnless(shutil.which("systemd-analyze"), "systemd-analyze is not installed")
    def test_systemd_accepts_it(self):
        tmp = tempfile.mkdtemp(prefix="cupmon-systemd-test-")
        self.addCleanup(shutil.rmtree, tmp, True)
        unit = os.path.join(tmp, "gpu-infer.service")
        with open(unit, "w") as f:
            f.write("[Service]\nExecStart=/bin/true\n")
        os.makedirs(unit + ".d")
        shutil.copy(DROPIN, os.path.join(unit + ".d", "cupmon.conf"))
        r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True)
        self.assertNotIn("cupmon.conf", r.stderr, r.stderr)


class DockerfileTest(unittest.TestCase):
    """docker cannot run here: check what can be checked without building the image."""

    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE) as f:
            text = f.read()
        cls.text = text
        # Join continuation lines into instructions.
        cls.instructions = []
        for line in re.sub(r"\\\n", " ", text).splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                cls.instructions.append(line)

    def test_bases(self):
        froms = [i.split()[1:] for i in self.instructions if i.startswith("FROM ")]
        self.assertEqual(froms[0], ["nvidia/cuda:13.0.0-devel-ubuntu24.04", "AS", "build"])
        self.assertEqual(len(froms), 2)
        self.assertNotIn("devel", froms[-1][0])  # the runtime layer is not the devel image

    def test_context_copies_exist_in_the_repository(self):
        copies = [i.split()[1:] for i in self.instructions if i.startswith("COPY ") and "--from" not in i]
        self.assertTrue(copies)
        for args in copies:
            for src in args[:-1]:
                with self.subTest(src=src):
                    self.assertTrue(os.path.exists(os.path.join(REPO, src)), src)
        # Everything the top-level CMakeLists.txt adds is copied into the build stage.
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            subdirs = re.findall(r"add_subdirectory\((\w+)\)", f.read())
        copied = {s.rstrip("/") for args in copies for s in args[:-1]}
        for d in subdirs:
            if d in ("tests", "examples") and f"-DCUPMON_BUILD_{d.upper()}=OFF" in self.text:
                continue  # not configured, so not needed
            self.assertIn(d, copied, f"add_subdirectory({d}) is not copied into the image")

    def test_source_paths_used_in_the_build_stage_exist(self):
        for path in sorted(set(re.findall(r"/src/((?!build\b|package\b)[\w./-]+)", self.text))):
            with self.subTest(path=path):
                self.assertTrue(os.path.exists(os.path.join(REPO, path)), path)

    def test_builds_what_the_install_needs(self):
        build = next(i for i in self.instructions if "cmake --build" in i)
        targets = build.split("--target", 1)[1].split()
        # Every target with an install rule that is not a dependency of another one listed.
        self.assertEqual(sorted(targets),
                         sorted(["cupmon_shared", "cupmon_preload", "cupmon-run", "cupmonctl",
                                 "cupmon-decode"]))
        # /opt/cupmon is the package's tree (cmake/CupmonPackage.cmake), nothing copied by hand.
        self.assertIn("cpack --config /src/build/CPackConfig.cmake -G DEB -B /src/package", self.text)
        self.assertIn("dpkg-deb -x /src/package/cupmon_*.deb /", self.text)
        self.assertNotRegex(self.text, r"cp [^&]*/src/build/",
                            "files copied by hand from the build tree")

    def test_runtime_layer_holds_only_opt_cupmon(self):
        final = self.text[self.text.rindex("\nFROM "):]
        copies = re.findall(r"^COPY .*$", final, re.M)
        self.assertEqual(copies, ["COPY --from=build /opt/cupmon /opt/cupmon"])
        self.assertNotIn("apt-get", final)

    def install_run(self):
        """The commands of the RUN instruction that unpacks the package into /opt/cupmon."""
        run = next(i for i in self.instructions if "dpkg-deb -x" in i)
        return [c.strip() for c in run[len("RUN "):].split("&&")]

    def test_install_step_gives_the_layout_the_image_and_recipes_use(self):
        """Unpacks the .deb of CUPMON_BUILD_DIR (made by the package_build test, as the Dockerfile's
        cpack makes it) into a temporary root as the Dockerfile's dpkg-deb -x does, and checks every
        /opt/cupmon path the Dockerfile and the deploy/ recipes name, and that the unpacked
        binaries run."""
        if not BUILD_DIR or not os.path.exists(os.path.join(BUILD_DIR, "monitor", "libcupmon.so")):
            self.skipTest("CUPMON_BUILD_DIR with a built libcupmon.so is not given")
        debs = glob.glob(os.path.join(PACKAGE_DIR, "cupmon_*.deb")) if PACKAGE_DIR else []
        if len(debs) != 1:
            self.skipTest(f"no .deb in CUPMON_PACKAGE_DIR ({PACKAGE_DIR or 'not set'}): run through "
                          "ctest, whose package_build test makes it (needs dpkg-dev)")
        tmp = tempfile.mkdtemp(prefix="cupmon-docker-layout-")
        self.addCleanup(shutil.rmtree, tmp, True)
        prefix = os.path.join(tmp, "opt", "cupmon")

        def here(path):
            return path.replace("/opt/cupmon", prefix)

        unpacked = False
        for command in self.install_run():
            argv = command.split()
            if argv[0] == "cpack":
                self.assertEqual(argv[argv.index("-G") + 1], "DEB")
                package_dir = argv[argv.index("-B") + 1]
            elif argv[:2] == ["dpkg-deb", "-x"]:
                # The package the cpack before it made, unpacked at the root of the image.
                self.assertEqual(argv[2:], [package_dir + "/cupmon_*.deb", "/"])
                r = subprocess.run(["dpkg-deb", "-x", debs[0], tmp], capture_output=True,
                                   text=True, timeout=300)
                self.assertEqual(r.returncode, 0, r.stderr)
                unpacked = True
            elif argv[:2] == ["cp", "-L"]:
                # From the build image (libprotobuf, libcupti): the destination must be the lib dir.
                self.assertEqual(argv[-1], "/opt/cupmon/lib/")
            # patchelf and its loop: their /opt/cupmon paths are checked below.
        self.assertTrue(unpacked)
        # Every /opt/cupmon path of the Dockerfile (patchelf targets, ENV PATH, the final COPY) ...
        named = set(re.findall(r"/opt/cupmon(?:/[\w.-]+)*", self.text))
        named -= {"/opt/cupmon/lib/libprotobuf.so.32", "/opt/cupmon/lib/libcupti.so.13"}
        # ... and of the recipes that run from the image.
        with open(DROPIN) as f:
            named |= set(re.findall(r"/opt/cupmon(?:/[\w.-]+)+", f.read()))
        with open(AGENT_UNIT) as f:
            named |= set(re.findall(r"/opt/cupmon(?:/[\w.-]+)+", f.read()))
        with open(DAEMONSET_YAML) as f:
            named |= set(re.findall(r"/opt/cupmon(?:/[\w.-]+)+", f.read()))
        # The Job's init container copies /opt/cupmon/. to /cupmon: its paths are /cupmon/...
        for recipe in (JOB_YAML, K8S_WINDOW):
            with open(recipe) as f:
                named |= {"/opt" + p for p in re.findall(r"(?<![\w/])/cupmon/(?:bin|lib)/[\w.-]+",
                                                         f.read())}
        self.assertIn("/opt/cupmon/lib/libcupmon.so", named)
        self.assertIn("/opt/cupmon/bin/cupmonctl", named)
        for path in sorted(named):
            with self.subTest(path=path):
                self.assertTrue(os.path.exists(here(path)), f"{path} is not in the install tree")
        # What is left is what runs: no static library or CMake package without its libraries.
        for root, _, files in os.walk(prefix):
            for name in files:
                self.assertFalse(name.endswith(".a"), os.path.join(root, name))
        self.assertEqual(sorted(os.listdir(os.path.join(prefix, "bin"))),
                         ["cupmon-decode", "cupmon-run", "cupmonctl"])
        env = {"PATH": "/usr/bin:/bin"}  # no LD_LIBRARY_PATH, nothing of the build tree
        for tool in os.listdir(os.path.join(prefix, "bin")):
            with self.subTest(tool=tool):
                r = subprocess.run([os.path.join(prefix, "bin", tool), "--help"],
                                   capture_output=True, text=True, timeout=60, env=env)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("Usage", r.stdout + r.stderr)

if __name__ == "__main__":
    unittest.main()
