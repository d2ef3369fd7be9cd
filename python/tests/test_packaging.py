"""`pip install ./python` into a fresh virtual environment, offline: the package installs as pure
Python (no compiled extension), imports from outside the repository, and, with no libcupmon
anywhere, fails on first use with an OSError that names the paths it tried.

Needs python3's venv, pip, setuptools and wheel (tools/install-deps installs them from apt); the
virtual environment sees the system's setuptools and wheel, so no network is used. Skipped, naming
what is missing, where they are not installed.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)


def missing_prerequisites():
    missing = []
    for module in ("venv", "ensurepip", "setuptools", "wheel"):
        r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True)
        if r.returncode != 0:
            missing.append(module)
    return missing


class PipInstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = missing_prerequisites()
        if missing:
            raise unittest.SkipTest(f"{sys.executable} lacks {', '.join(missing)} "
                                    "(tools/install-deps installs python3-venv/-setuptools/-wheel)")
        cls.tmp = tempfile.mkdtemp(prefix="cupmon-pip-test-")
        # A copy: pip builds in the source tree (build/, *.egg-info), which must stay clean.
        cls.src = os.path.join(cls.tmp, "python")
        shutil.copytree(PYTHON_DIR, cls.src, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        cls.venv = os.path.join(cls.tmp, "venv")
        cls.run_checked([sys.executable, "-m", "venv", "--system-site-packages", cls.venv])
        cls.python = os.path.join(cls.venv, "bin", "python")
        cls.install_log = cls.run_checked(
            [cls.python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps",
             "--disable-pip-version-check", cls.src])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def env():
        env = {k: v for k, v in os.environ.items()
               if k not in ("CUPMON_LIB", "CUDA_INJECTION64_PATH", "PYTHONPATH", "LD_LIBRARY_PATH",
                            "PIP_INDEX_URL", "PIP_FIND_LINKS")}
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env["PIP_NO_INPUT"] = "1"
        return env

    @classmethod
    def run_checked(cls, cmd, **kwargs):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=cls.env(), **kwargs)
        if r.returncode != 0:
            raise AssertionError(f"{cmd} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def test_installs_as_pure_python_into_site_packages(self):
        out = self.run_checked([self.python, "-c", "import cupmon; print(cupmon.__file__, cupmon.__version__)"],
                               cwd=self.tmp)
        path, version = out.split()
        self.assertTrue(path.startswith(self.venv), f"imported {path}, not the installed copy")
        self.assertEqual(version, "0.1.0")
        show = self.run_checked([self.python, "-m", "pip", "show", "-f", "cupmon"])
        self.assertIn("Version: 0.1.0", show)
        files = [line.strip() for line in show.splitlines() if line.startswith("  ")]
        self.assertIn("cupmon/__init__.py", files)
        self.assertIn("cupmon/_capi.py", files)
        self.assertFalse([f for f in files if f.endswith((".so", ".pyd", ".c"))], files)
        # A pure wheel: no platform tag on the installed distribution.
        wheel_files = glob.glob(os.path.join(self.venv, "lib", "python*", "site-packages",
                                             "cupmon-0.1.0.dist-info", "WHEEL"))
        self.assertEqual(len(wheel_files), 1)
        with open(wheel_files[0]) as f:
            self.assertIn("Root-Is-Purelib: true", f.read())

    def test_without_a_library_the_first_call_names_the_paths_tried(self):
        code = textwrap.dedent("""
            import ctypes.util, cupmon
            if ctypes.util.find_library("cupmon"):
                print("SKIP"); raise SystemExit(0)
            try:
                cupmon.stats()
            except OSError as e:
                print("ERR", type(e).__name__, e)
        """)
        out = self.run_checked([self.python, "-c", code], cwd=self.tmp)
        if out.startswith("SKIP"):
            self.skipTest("this machine has a libcupmon in the ldconfig cache")
        self.assertTrue(out.startswith("ERR LibraryError cupmon: libcupmon.so not found"), out)
        site_lib = os.path.join(self.venv, "lib", "libcupmon.so")  # <prefix>/lib of the venv
        self.assertIn(site_lib, out)


if __name__ == "__main__":
    unittest.main()
