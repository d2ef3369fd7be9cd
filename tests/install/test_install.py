"""Tests of `cmake --install` (cmake/CupmonInstall.cmake): installs the build tree into a temporary
prefix, checks the layout, then builds and runs downstream projects against it: consumer/ with
find_package(cupmon), consumer/consumer_capi.c with pkg-config, the installed tools, and the installed
Python package. In a build without CUDA there is no libcupmon.so: the package exports the decoder
and format only, and the C API parts check that nothing of it was installed.

Run by ctest (tests/install/CMakeLists.txt) with CUPMON_BUILD_DIR, CUPMON_SOURCE_DIR, CMAKE_COMMAND,
CUPMON_GENERATOR, CC, CXX, PKG_CONFIG, CUPMON_HAVE_CAPI (0/1) and CUPMON_SANITIZE in the environment.
"""

import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("CUPMON_BUILD_DIR", "")
SOURCE = os.environ.get("CUPMON_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")
GENERATOR = os.environ.get("CUPMON_GENERATOR", "")
HAVE_CAPI = os.environ.get("CUPMON_HAVE_CAPI") == "1"
SANITIZE = os.environ.get("CUPMON_SANITIZE", "")
SAMPLE = os.path.join(SOURCE, "tests", "data", "sample")


def run(cmd, **kwargs):
    """Runs cmd; on failure, the assertion shows the command and everything it printed."""
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)
    if r.returncode != 0:
        raise AssertionError(f"{cmd} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def clean_env(**extra):
    """This environment without anything that would point a consumer at the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUPMON_LIB", "CUDA_INJECTION64_PATH", "LD_LIBRARY_PATH", "PKG_CONFIG_PATH",
                        "CMAKE_PREFIX_PATH", "PYTHONPATH")}
    env.update(extra)
    return env


@unittest.skipUnless(BUILD and os.path.isdir(BUILD), "CUPMON_BUILD_DIR (a built tree) is not set")
class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="cupmon-install-test-")
        cls.prefix = os.path.join(cls.tmp, "prefix with space")
        run([CMAKE, "--install", BUILD, "--prefix", cls.prefix])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_layout(self):
        always = [
            "bin/cupmonctl", "bin/cupmon-decode",
            "lib/libcupmon_base.a", "lib/libcupmon_format.a", "lib/libcupmon_decoder.a",
            "lib/libcupmon_proto.a",
            "include/cupmon/format/chunk.h", "include/cupmon/base/error.h",
            "include/cupmon/decoder/recording_reader.h", "include/cupmon/proto/cupmon.pb.h",
            "lib/cmake/cupmon/cupmonConfig.cmake", "lib/cmake/cupmon/cupmonConfigVersion.cmake",
            "lib/cmake/cupmon/cupmonTargets.cmake",
            "share/cupmon/LICENSE", "share/cupmon/README.md", "share/cupmon/docs/DEPLOY.md",
            "share/cupmon/deploy/slurm/cupmon-slurm-trigger", "share/cupmon/deploy/docker/Dockerfile",
            "share/cupmon/deploy/kubernetes/cupmon-job.yaml", "share/cupmon/deploy/systemd/cupmon.conf",
            "share/cupmon/python/pyproject.toml", "share/cupmon/python/cupmon/__init__.py",
            "share/cupmon/python/cupmon/_capi.py",
        ]
        capi = ["bin/cupmon-run", "lib/libcupmon.so", "lib/libcupmon-preload.so",
                "include/cupmon/cupmon.h", "lib/pkgconfig/cupmon.pc"]
        for rel in always + (capi if HAVE_CAPI else []):
            with self.subTest(path=rel):
                self.assertTrue(os.path.isfile(self.path(rel)), f"{rel} is not installed")
        for rel in ([] if HAVE_CAPI else capi):
            with self.subTest(absent=rel):
                self.assertFalse(os.path.exists(self.path(rel)), f"{rel} without a C API build")
        for rel in ("bin/cupmonctl", "bin/cupmon-decode", "share/cupmon/deploy/slurm/cupmon-slurm-trigger"):
            self.assertTrue(os.stat(self.path(rel)).st_mode & stat.S_IXUSR, f"{rel} is not executable")
        # Nothing of the test suite, the build tree or Python's caches is installed.
        for root, dirs, files in os.walk(self.prefix):
            for name in dirs + files:
                with self.subTest(entry=os.path.join(root, name)):
                    self.assertNotIn(name, ("__pycache__", "tests", "CMakeFiles"))
                    self.assertFalse(name.endswith((".pyc", ".o")))
                    self.assertNotIn("gtest", name)
        with open(self.path("lib/cmake/cupmon/cupmonTargets.cmake")) as f:
            targets = f.read()
        self.assertNotIn(SOURCE + "/", targets, "the export names source-tree paths")
        self.assertNotIn(BUILD + "/", targets, "the export names build-tree paths")
        self.assertEqual("add_library(cupmon::cupmon " in targets, HAVE_CAPI)

    def test_installed_tools_run(self):
        env = clean_env()
        self.assertIn("Usage", run([self.path("bin/cupmon-decode"), "--help"], env=env))
        self.assertIn("Usage", run([self.path("bin/cupmonctl"), "--help"], env=env))
        if not HAVE_CAPI:
            return
        # cupmon-run picks the libcupmon.so of its own prefix (../lib), not the build tree's. `sh` is
        # not a CUDA program, so nothing is injected: it only prints what it was given.
        r = subprocess.run([self.path("bin/cupmon-run"), "-o", os.path.join(self.tmp, "run-out"),
                            "--", "sh", "-c", 'printf "%s|%s" "$CUDA_INJECTION64_PATH" "$LD_PRELOAD"'],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        injected, preloaded = r.stdout.split("|")
        self.assertEqual(os.path.realpath(injected), os.path.realpath(self.path("lib/libcupmon.so")))
        # The prefix holds a space, which LD_PRELOAD cannot: cupmon-run names the
        # libcupmon-preload.so it found beside the library and runs with injection only.
        self.assertIn(" ", self.prefix)
        self.assertEqual(preloaded, "")
        self.assertIn(self.path("lib/libcupmon-preload.so") + " cannot go into LD_PRELOAD", r.stderr)

    def consumer_build_dir(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d, exist_ok=True)
        return d

    def sanitizer_env(self):
        # The sanitizers' leak checker reports the C++ runtime's and protobuf's static allocations in
        # an uninstrumented consumer; the consumer itself is not what a sanitized build checks.
        return {"ASAN_OPTIONS": "detect_leaks=0"} if SANITIZE else {}

    def test_find_package_consumer(self):
        build = self.consumer_build_dir("consumer-build")
        configure = [CMAKE, "-S", os.path.join(HERE, "consumer"), "-B", build,
                     f"-DCMAKE_PREFIX_PATH={self.prefix}", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"]
        if GENERATOR:
            configure.append(f"-G{GENERATOR}")
        for var in ("CC", "CXX"):
            if os.environ.get(var):
                configure.append(f"-DCMAKE_{'C' if var == 'CC' else 'CXX'}_COMPILER={os.environ[var]}")
        env = clean_env()
        out = run(configure, env=env)
        self.assertIn(f"C API {'TRUE' if HAVE_CAPI else 'FALSE'}", out)
        run([CMAKE, "--build", build], env=env)
        env.update(self.sanitizer_env())
        out = run([os.path.join(build, "consumer_decoder"), SAMPLE], env=env)
        self.assertRegex(out, r"^recordings [1-9]")
        if HAVE_CAPI:
            self.check_capi_consumer(os.path.join(build, "consumer_capi"), env)
        else:
            self.assertFalse(os.path.exists(os.path.join(build, "consumer_capi")))

    def check_capi_consumer(self, exe, env):
        # Linked against the installed library (RUNPATH into the prefix), not the build tree's.
        resolved = [line.split("=>", 1)[1].rsplit("(", 1)[0].strip()
                    for line in run(["ldd", exe], env=env).splitlines() if "libcupmon.so =>" in line]
        self.assertEqual([os.path.realpath(p) for p in resolved],
                         [os.path.realpath(self.path("lib", "libcupmon.so"))])
        # libcupmon.so finds libcupmon-preload.so beside it (its RUNPATH $ORIGIN).
        resolved = [line.split("=>", 1)[1].rsplit("(", 1)[0].strip()
                    for line in run(["ldd", exe], env=env).splitlines()
                    if "libcupmon-preload.so =>" in line]
        self.assertEqual([os.path.realpath(p) for p in resolved],
                         [os.path.realpath(self.path("lib", "libcupmon-preload.so"))])
        out = run([exe, os.path.join(self.tmp, "capi-out")], env=env)
        # No GPU here: a clean failure with cupmon's explanation. On a GPU machine it starts.
        self.assertRegex(out, r"^(start failed: \S.*|started)\n$")
        print(f"\n  {os.path.basename(os.path.dirname(exe))}: {out.strip()}", file=sys.stderr)

    def configure_finding(self, name, components):
        src = os.path.join(self.tmp, name)
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.22)\nproject(p LANGUAGES CXX)\n"
                    f"find_package(cupmon REQUIRED COMPONENTS {components})\n")
        return subprocess.run([CMAKE, "-S", src, "-B", os.path.join(src, "build"),
                               f"-DCMAKE_PREFIX_PATH={self.prefix}"],
                              capture_output=True, text=True, env=clean_env(), timeout=300)

    def test_find_package_refuses_a_missing_component(self):
        r = self.configure_finding("unknown-component", "decoder nosuch")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("unknown component nosuch", r.stdout + r.stderr)
        r = self.configure_finding("capi-component", "capi")
        if HAVE_CAPI:
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        else:
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("component capi: this cupmon was built without CUDA", r.stdout + r.stderr)

    def test_pkg_config_consumer(self):
        pkg_config = os.environ.get("PKG_CONFIG") or shutil.which("pkg-config")
        if not pkg_config:
            self.skipTest("pkg-config is not installed")
        env = clean_env(PKG_CONFIG_PATH=self.path("lib", "pkgconfig"))
        exists = subprocess.run([pkg_config, "--exists", "cupmon"], env=env)
        if not HAVE_CAPI:
            self.assertNotEqual(exists.returncode, 0, "cupmon.pc installed without libcupmon.so")
            return
        self.assertEqual(exists.returncode, 0)
        self.assertEqual(run([pkg_config, "--modversion", "cupmon"], env=env).strip(), "0.1.0")
        flags = shlex.split(run([pkg_config, "--cflags", "--libs", "cupmon"], env=env))
        # pkg-config escapes the spaces of the prefix ("prefix\\ with\\ space"), as a shell would.
        libdir = shlex.split(run([pkg_config, "--variable=libdir", "cupmon"], env=env))[0]
        self.assertEqual(os.path.realpath(libdir), os.path.realpath(self.path("lib")))
        exe = os.path.join(self.consumer_build_dir("pkg-config"), "consumer_capi")
        cc = os.environ.get("CC") or "cc"
        run([cc, "-std=c11", "-Wall", "-Werror", "-o", exe, os.path.join(HERE, "consumer", "consumer_capi.c"),
             *flags, f"-Wl,-rpath,{libdir}"], env=env)
        env.update(self.sanitizer_env())
        self.check_capi_consumer(exe, env)

    def test_installed_python_package_finds_the_installed_library(self):
        env = clean_env(PYTHONPATH=self.path("share", "cupmon", "python"), PYTHONDONTWRITEBYTECODE="1")
        code = ("import cupmon, cupmon._capi as c\n"
                "print(cupmon.__file__)\n"
                "print([p for p, _ in c._candidates()])\n")
        out = run([sys.executable, "-c", code], env=env, cwd=self.tmp).splitlines()
        self.assertTrue(out[0].startswith(self.path("share", "cupmon", "python", "cupmon")), out[0])
        self.assertIn(os.path.normpath(self.path("lib", "libcupmon.so")), out[1])
        if not HAVE_CAPI or SANITIZE:
            return  # nothing to load; a sanitized library does not load into an uninstrumented python
        code = ("import cupmon\n"
                "print(cupmon.library_path())\n"
                "try:\n"
                "    cupmon.start(dir=%r)\n"
                "    print('started'); cupmon.stop()\n"
                "except cupmon.CupmonError as e:\n"
                "    print('error', e)\n") % os.path.join(self.tmp, "py-out")
        out = run([sys.executable, "-c", code], env=env, cwd=self.tmp).splitlines()
        self.assertEqual(out[0], os.path.normpath(self.path("lib", "libcupmon.so")))
        self.assertRegex(out[1], r"^(started|error cupmon_start failed: \S)")


if __name__ == "__main__":
    unittest.main()
