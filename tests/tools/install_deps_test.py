"""tools/install-deps: what it asks apt for, with dpkg, apt-get, sudo and id replaced by stubs in a
PATH of its own (no package is installed). For the demo a command on PATH or a header stands for
its package, and apt runs, through sudo when not root, only for what is missing; for the tests the
whole list is wanted.

Run by ctest (-R tools_install_deps) or directly: python3 -m unittest -v install_deps_test.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "install-deps")
# What the script itself runs, taken from the system.
REAL = ("bash", "grep", "cat")
DEMO_COMMANDS = {"cmake": "cmake", "ninja": "ninja-build", "g++": "g++", "pkg-config": "pkg-config",
                 "protoc": "protobuf-compiler"}
DEMO_HEADERS = {"google/protobuf/message.h": "libprotobuf-dev", "zstd.h": "libzstd-dev",
                "boost/asio.hpp": "libboost-dev", "CLI/CLI.hpp": "libcli11-dev"}


class InstallDepsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-install-deps-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.bin = os.path.join(self.tmp, "bin")
        os.mkdir(self.bin)
        self.log = os.path.join(self.tmp, "log")
        for name in REAL:
            os.symlink(shutil.which(name), os.path.join(self.bin, name))
        # Nothing is installed as dpkg sees it; apt-get and sudo only log how they were called.
        self.stub("dpkg-query", "exit 1")
        self.stub("apt-get", f'echo "apt-get $*" >> {self.log}')
        self.stub("sudo", f'echo "sudo $1" >> {self.log}; "$@"')

    def stub(self, name, body):
        path = os.path.join(self.bin, name)
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\n# TEST STUB of {name}\n{body}\n")
        os.chmod(path, 0o755)

    def run_script(self, *args, uid=0):
        self.stub("id", f'[ "$1" = -u ] && echo {uid}')
        r = subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=60,
                           env={"PATH": self.bin, "HOME": self.tmp})
        calls = []
        if os.path.exists(self.log):
            with open(self.log) as f:
                calls = f.read().splitlines()
        return r, calls

    def installed(self, calls):
        lines = [c for c in calls if c.startswith("apt-get install")]
        self.assertEqual(len(lines), 1, calls)
        return set(lines[0].split()[5:])  # after: apt-get install -y -qq --no-install-recommends

    def headers_present(self):
        return {pkg for header, pkg in DEMO_HEADERS.items()
                if any(os.path.exists(os.path.join(d, header))
                       for d in ("/usr/include", "/usr/local/include"))}

    def test_demo_with_every_command_and_header_present_runs_no_apt(self):
        present = self.headers_present()
        if present != set(DEMO_HEADERS.values()):
            self.skipTest("the demo's headers are not all installed here")
        for command in DEMO_COMMANDS:
            self.stub(command, "exit 0")
        r, calls = self.run_script("--for", "demo", uid=1000)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("all packages for the demo present", r.stdout)
        self.assertEqual(calls, [])

    def test_demo_asks_apt_through_sudo_for_what_is_missing_only(self):
        self.stub("pkgconf", "exit 0")  # stands for pkg-config too
        r, calls = self.run_script("--for", "demo", uid=1000)
        self.assertEqual(r.returncode, 0, r.stderr)
        expected = {"cmake", "ninja-build", "g++", "protobuf-compiler"}
        expected |= set(DEMO_HEADERS.values()) - self.headers_present()
        self.assertEqual(self.installed(calls), expected)
        self.assertEqual(calls[0], "sudo apt-get")

    def test_as_root_no_sudo(self):
        r, calls = self.run_script("--for", "demo", uid=0)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse([c for c in calls if c.startswith("sudo")], calls)

    def test_without_root_or_sudo_it_names_the_command(self):
        os.remove(os.path.join(self.bin, "sudo"))
        r, calls = self.run_script("--for", "demo", uid=1000)
        self.assertEqual(r.returncode, 1)
        self.assertIn("as root: apt-get install", r.stderr)
        self.assertIn("cmake", r.stderr)
        self.assertEqual(calls, [])

    def test_tests_want_the_test_suites_packages_too(self):
        for command in DEMO_COMMANDS:
            self.stub(command, "exit 0")
        r, calls = self.run_script(uid=0)  # --for tests is the default
        self.assertEqual(r.returncode, 0, r.stderr)
        wanted = self.installed(calls)
        for pkg in ("libgtest-dev", "prometheus", "slurm-wlm", "munge", "dpkg-dev", "python3"):
            self.assertIn(pkg, wanted)
        # The commands on PATH stand for their packages here too.
        self.assertNotIn("cmake", wanted)

    def test_the_demo_needs_none_of_the_tests_packages(self):
        r, calls = self.run_script("--for", "demo", uid=0)
        self.assertEqual(r.returncode, 0, r.stderr)
        wanted = self.installed(calls)
        for pkg in ("libgtest-dev", "libgmock-dev", "prometheus", "slurm-wlm", "munge", "chromium",
                    "python3"):
            self.assertNotIn(pkg, wanted)

    def test_unknown_choice_is_a_usage_error(self):
        r, calls = self.run_script("--for", "everything")
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
