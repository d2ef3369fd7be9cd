"""`--version` of every installed tool (cupmon-decode, cupmonctl, cupmon-run where it is built) and
the git revision's fallback (cmake/CupmonVersion.cmake). The expected values are read here from
their sources: CMakeLists.txt's project version, format/.../chunk.h's format version, the toolkit's
cupti_version.h, decoder/.../torch_monitor_dump.h's dump version, and `git describe` of the tree.

Run by ctest (tests/tools/CMakeLists.txt, -R tools_version) with CUPMON_DECODE, CUPMONCTL,
CUPMON_RUN (empty without CUDA), CUPMON_SOURCE, CMAKE_COMMAND and CUPMON_CUPTI_VERSION_H (the
header the build read; empty without CUDA) in the environment.
"""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

SOURCE = os.environ.get("CUPMON_SOURCE", "")
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")


def read(*parts):
    with open(os.path.join(SOURCE, *parts)) as f:
        return f.read()


def one(pattern, text):
    m = re.search(pattern, text, re.M)
    if not m:
        raise AssertionError(f"{pattern!r} not found")
    return m.group(1)


@unittest.skipUnless(os.environ.get("CUPMON_DECODE") and SOURCE, "run through ctest (-R tools_version)")
class VersionFlagTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.version = one(r"^project\(cupmon VERSION ([0-9.]+) ", read("CMakeLists.txt"))
        chunk = read("format", "include", "cupmon", "format", "chunk.h")
        major = one(r"kFormatMajor = ([0-9]+);", chunk)
        minor = one(r"kFormatMinor = ([0-9]+);", chunk)
        cls.format = f"writes {major}.{minor}, reads {major}.x"
        header = os.environ.get("CUPMON_CUPTI_VERSION_H", "")
        if header:
            with open(header) as f:
                cls.cupti = one(r"^#define CUPTI_API_VERSION ([0-9]+)", f.read())
        else:
            cls.cupti = "none (built without CUDA)"
        cls.dumps = one(r"kTorchDumpVersion = ([0-9]+);",
                        read("decoder", "include", "cupmon", "decoder", "torch_monitor_dump.h"))

    def fields(self, tool, name):
        """`tool --version`: checks its first line and returns the other lines as {key: value}."""
        r = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        lines = r.stdout.rstrip("\n").split("\n")
        self.assertEqual(lines[0], f"{name} {self.version}")
        fields = dict(line.split(": ", 1) for line in lines[1:])
        self.assertEqual(len(fields), len(lines) - 1, "a key appears twice")
        self.assertEqual(fields.pop("format"), self.format)
        self.assertEqual(fields.pop("cupti"), self.cupti)
        self.assertRegex(fields.pop("revision"), r"^(unknown|\S+)$")
        return fields

    def test_decode(self):
        fields = self.fields(os.environ["CUPMON_DECODE"], "cupmon-decode")
        self.assertEqual(fields, {"pytorch-dumps": f"reads version {self.dumps}"})

    def test_cupmonctl(self):
        self.assertEqual(self.fields(os.environ["CUPMONCTL"], "cupmonctl"), {})

    def test_cupmon_run(self):
        if not os.environ.get("CUPMON_RUN"):
            self.skipTest("built without CUDA: no cupmon-run")
        self.assertEqual(self.fields(os.environ["CUPMON_RUN"], "cupmon-run"), {})

    def test_revision_is_the_trees_git_describe(self):
        git = shutil.which("git")
        if not git or subprocess.run([git, "-C", SOURCE, "rev-parse"], capture_output=True).returncode:
            self.skipTest("no git, or the source is not a git checkout")
        r = subprocess.run([os.environ["CUPMON_DECODE"], "--version"], capture_output=True, text=True,
                           timeout=60)
        revision = one(r"^revision: (\S+)$", r.stdout)
        head = subprocess.run([git, "-C", SOURCE, "describe", "--always"], capture_output=True,
                              text=True, check=True).stdout.strip()
        # The build configures again when HEAD moves; whether the tree is dirty is the configure's.
        self.assertEqual(revision.removesuffix("-dirty"), head)

    def test_revision_without_git_is_unknown(self):
        # A release tarball unpacked inside some other git repository: not that repository's
        # revision, "unknown".
        git = shutil.which("git")
        with tempfile.TemporaryDirectory() as outer:
            tree = os.path.join(outer, "cupmon-0.1.0")
            os.mkdir(tree)
            if git:
                env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
                           GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
                for cmd in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "outer"]):
                    subprocess.run([git, "-C", outer, *cmd], check=True, capture_output=True,
                                   env=env)
            r = subprocess.run([CMAKE, f"-DSOURCE_DIR={tree}", "-P",
                                os.path.join(SOURCE, "cmake", "CupmonVersion.cmake")],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stderr.strip(), "unknown")

if __name__ == "__main__":
    unittest.main()
