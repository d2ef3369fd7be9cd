"""The packages of `cmake --build build --target package` (cmake/CupmonPackage.cmake), as a host
gets them: the .deb and the .tar.gz that ctest's package_build made with cpack, the .deb unpacked by
`dpkg-deb -x` into a temporary root, and from there the installed cupmon-decode
decodes tests/data/sample, every installed tool answers --version, and the installed libcupmon.so,
loaded by the installed Python package, records kernels from the CUPTI test double
(fake_libcupti.cc, a libcupti.so.13 of synthetic records) that the installed cupmon-decode then
counts. Also: the control fields, the /opt/cupmon paths the deploy/ recipes name, and that the
tarball holds the same files.

Run by ctest (tests/install/CMakeLists.txt, -R install_package, which runs package_build first) with
CUPMON_PACKAGE_DIR (package_build's output), CUPMON_SOURCE_DIR, CUPMON_VERSION, CUPMON_HAVE_CAPI (0/1),
CUPMON_FAKE_CUPTI_DIR (empty in sanitized builds and without CUDA) and CUPMON_DECODE (the build
tree's) in the environment.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

PACKAGES = os.environ.get("CUPMON_PACKAGE_DIR", "")
SOURCE = os.environ.get("CUPMON_SOURCE_DIR", "")
VERSION = os.environ.get("CUPMON_VERSION", "")
HAVE_CAPI = os.environ.get("CUPMON_HAVE_CAPI") == "1"
FAKE_CUPTI_DIR = os.environ.get("CUPMON_FAKE_CUPTI_DIR", "")
PREFIX = "opt/cupmon"


def run(cmd, **kwargs):
    """Runs cmd; on failure, the assertion shows the command and everything it printed."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    if r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def clean_env(**extra):
    """This environment without anything that points at the build tree or a CUDA installation."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUPMON_LIB", "CUDA_INJECTION64_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD",
                        "PYTHONPATH", "CUDA_HOME")}
    env.update(extra)
    return env


def why_not_runnable():
    if not PACKAGES or not os.path.isdir(PACKAGES):
        return "no CUPMON_PACKAGE_DIR: run through ctest -R install_package (after package_build)"
    missing = [t for t in ("dpkg-deb", "dpkg-shlibdeps") if not shutil.which(t)]
    if missing:
        return f"{' and '.join(missing)} not installed (package dpkg-dev): no .deb is made"
    return None


@unittest.skipIf(why_not_runnable(), why_not_runnable())
class DebPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cupmon-package-test-")
        debs = glob.glob(os.path.join(PACKAGES, "*.deb"))
        tarballs = glob.glob(os.path.join(PACKAGES, "*.tar.gz"))
        assert len(debs) == 1 and len(tarballs) == 1, os.listdir(PACKAGES)
        cls.deb, cls.tarball = debs[0], tarballs[0]
        cls.root = os.path.join(cls.tmp, "root")
        run(["dpkg-deb", "-x", cls.deb, cls.root])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.root, PREFIX, *parts)

    def distro(self):
        fields = {}
        with open("/etc/os-release") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                fields[key] = value.strip('"')
        return fields["ID"] + fields.get("VERSION_ID", "")

    def test_control_names_this_distribution_and_its_libraries(self):
        arch = run(["dpkg", "--print-architecture"]).strip()
        self.assertEqual(os.path.basename(self.deb), f"cupmon_{VERSION}-1~{self.distro()}_{arch}.deb")
        self.assertEqual(run(["dpkg-deb", "-f", self.deb, "Package"]).strip(), "cupmon")
        self.assertEqual(run(["dpkg-deb", "-f", self.deb, "Version"]).strip(),
                         f"{VERSION}-1~{self.distro()}")
        # dpkg-shlibdeps' answer: the distribution's names for what the binaries link.
        depends = [d.strip().split()[0] for d in
                   run(["dpkg-deb", "-f", self.deb, "Depends"]).split(",")]
        for lib in ("libc6", "libstdc++6", "libzstd1"):
            self.assertIn(lib, depends)
        self.assertTrue(any(d.startswith("libprotobuf") for d in depends), depends)

    def test_layout_is_the_runtime_under_opt_cupmon(self):
        tops = os.listdir(self.root)
        self.assertEqual(tops, ["opt"])
        for rel in ["bin/cupmon-decode", "bin/cupmonctl", "share/cupmon/README.md",
                    "share/cupmon/docs/DEPLOY.md", "share/cupmon/deploy/systemd/cupmon.conf",
                    "share/cupmon/python/cupmon/__init__.py"] + (
                        ["bin/cupmon-run", "lib/libcupmon.so", "lib/libcupmon-preload.so",
                         "include/cupmon/cupmon.h", "lib/pkgconfig/cupmon.pc"] if HAVE_CAPI else []):
            with self.subTest(path=rel):
                self.assertTrue(os.path.isfile(self.path(rel)), f"{rel} is not in the package")
        # What `cmake --install` adds for building against cupmon is not.
        for rel in ("lib/cmake", "include/cupmon/base", "include/cupmon/decoder",
                    "include/cupmon/format", "include/cupmon/proto"):
            self.assertFalse(os.path.exists(self.path(rel)), rel)
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                self.assertFalse(name.endswith((".a", ".pyc", ".o")), os.path.join(dirpath, name))
        # Every /opt/cupmon path of the host recipes is there.
        named = set()
        for recipe in ("deploy/systemd/cupmon.conf", "deploy/systemd/cupmon-agent.service",
                       "deploy/slurm/cupmon-agent-prolog"):
            with open(os.path.join(SOURCE, recipe)) as f:
                named |= set(re.findall(r"/opt/cupmon(?:/[\w.-]+)+", f.read()))
        if not HAVE_CAPI:  # a build without CUDA has no monitor libraries to package
            named -= {"/opt/cupmon/lib/libcupmon.so", "/opt/cupmon/lib/libcupmon-preload.so"}
        self.assertIn("/opt/cupmon/bin/cupmonctl", named)
        for path in sorted(named):
            with self.subTest(path=path):
                self.assertTrue(os.path.exists(os.path.join(self.root, path.lstrip("/"))), path)

    def test_tarball_holds_the_same_files(self):
        with tarfile.open(self.tarball) as t:
            in_tar = {m.name.lstrip("./").rstrip("/") for m in t.getmembers() if m.isfile()}
        in_deb = set()
        for dirpath, _, files in os.walk(self.root):
            for name in files:
                in_deb.add(os.path.relpath(os.path.join(dirpath, name), self.root))
        self.assertEqual(in_tar, in_deb)

    def test_installed_decoder_decodes_the_sample(self):
        sample = os.path.join(SOURCE, "tests", "data", "sample")
        out = run([self.path("bin", "cupmon-decode"), "summary", sample], env=clean_env())
        self.assertIn("GPU activities", out)
        # The same text as the build tree's decoder gives.
        self.assertEqual(out, run([os.environ["CUPMON_DECODE"], "summary", sample]))

    def test_installed_tools_answer_version(self):
        tools = ["cupmon-decode", "cupmonctl"] + (["cupmon-run"] if HAVE_CAPI else [])
        self.assertEqual(sorted(os.listdir(self.path("bin"))), sorted(tools))
        for tool in tools:
            with self.subTest(tool=tool):
                out = run([self.path("bin", tool), "--version"], env=clean_env())
                self.assertEqual(out.splitlines()[0], f"{tool} {VERSION}")
                self.assertRegex(out, r"\nrevision: \S+\n")

    def test_installed_library_records_the_test_double(self):
        if not HAVE_CAPI:
            self.skipTest("built without CUDA: no libcupmon.so")
        if not FAKE_CUPTI_DIR:
            self.skipTest("sanitized build: the library cannot load into an uninstrumented python3")
        out_dir = os.path.join(self.tmp, "recording")
        code = ("import ctypes, cupmon\n"
                f"cupmon.start(dir={out_dir!r})\n"
                "fake = ctypes.CDLL('libcupti.so.13')\n"  # the one libcupmon.so loaded
                "fake.fake_cupti_launch_kernels.restype = ctypes.c_uint32\n"
                "n = fake.fake_cupti_launch_kernels(b'packaged::Kernel', 250)\n"
                "cupmon.stop()\n"
                "print(cupmon.library_path())\n"
                "print(n)\n"
                "print(cupmon.library_version().splitlines()[0])\n")
        env = clean_env(PYTHONPATH=self.path("share", "cupmon", "python"),
                        LD_LIBRARY_PATH=FAKE_CUPTI_DIR)
        lines = run([sys.executable, "-c", code], env=env, cwd=self.tmp).splitlines()
        self.assertEqual(lines[0], os.path.normpath(self.path("lib", "libcupmon.so")))
        self.assertEqual(lines[1], "250")
        self.assertEqual(lines[2], f"libcupmon.so {VERSION}")
        summary = run([self.path("bin", "cupmon-decode"), "summary", out_dir], env=clean_env())
        rows = [line.split() for line in summary.splitlines() if line.endswith(" packaged::Kernel")]
        self.assertEqual(len(rows), 1, summary)
        self.assertEqual(rows[0][-5], "250", rows[0])  # Calls


if __name__ == "__main__":
    unittest.main()
