"""Tests of cupmon-run (tools/cupmon_run/) as a user runs it: LD_PRELOAD gets libcupmon-preload.so by
default (cupmon shares CUPTI with torch.profiler, docs/COEXISTENCE.md), after the user's own
entries, never twice, and not at all with --no-preload; and a program that never uses CUDA (a
shell, /bin/true, the preload_bystander test program, cupmon's own tools) is left alone by it: same
threads, file descriptors and signal handlers as without it, no output, no files, none of
libcupmon.so's dependencies loaded.

Run by ctest (tests/tools/CMakeLists.txt) with CUPMON_RUN, CUPMON_LIB, CUPMON_PRELOAD_LIB,
PRELOAD_BYSTANDER, CUPMON_DECODE, CUPMONCTL and CUPMON_SANITIZE in the environment.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

CUPMON_RUN = os.environ.get("CUPMON_RUN", "")
LIB = os.path.realpath(os.environ.get("CUPMON_LIB", "/nonexistent"))
PRELOAD_LIB = os.path.realpath(os.environ.get("CUPMON_PRELOAD_LIB", "/nonexistent"))
BYSTANDER = os.environ.get("PRELOAD_BYSTANDER", "")
SANITIZE = os.environ.get("CUPMON_SANITIZE", "")
DECODE = os.environ.get("CUPMON_DECODE", "")
CTL = os.environ.get("CUPMONCTL", "")


def sanitizer_runtime():
    """The runtime a sanitizer build of cupmon-run puts first in LD_PRELOAD ('' otherwise)."""
    name = {"address": "libasan.so", "thread": "libtsan.so"}
    for key, lib in name.items():
        if key in SANITIZE:
            out = subprocess.run(["ldd", CUPMON_RUN], capture_output=True, text=True).stdout
            for line in out.splitlines():
                if lib in line and "=>" in line:
                    return line.split("=>")[1].split("(")[0].strip()
    return ""


def users_preload(*entries):
    """LD_PRELOAD as a user sets it. In an ASan build cupmon-run itself needs the ASan runtime first
    (it refuses to start otherwise), so the user's list starts with it there."""
    runtime = sanitizer_runtime() if "address" in SANITIZE else ""
    return ":".join(([runtime] if runtime else []) + list(entries))


def a_real_library():
    """An existing shared library other than cupmon's (this Python's libc), for a user's LD_PRELOAD."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libc.so"):
                return path
    raise AssertionError("no libc.so in /proc/self/maps")


@unittest.skipUnless(CUPMON_RUN and os.path.exists(CUPMON_RUN), "CUPMON_RUN is not set")
class CupmonRunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-run-test-")
        # Every place cupmon could write to by default, empty: the checks below see any file.
        self.dirs = {name: os.path.join(self.tmp, name)
                     for name in ("home", "tmp", "runtime", "output")}
        for d in self.dirs.values():
            os.makedirs(d)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "CUDA_INJECTION64_PATH") and not k.startswith("CUPMON_")}
        env.update(HOME=self.dirs["home"], TMPDIR=self.dirs["tmp"],
                   XDG_RUNTIME_DIR=self.dirs["runtime"], CUPMON_OUTPUT_DIR=self.dirs["output"])
        if "address" in SANITIZE:
            # A sanitizer build preloads the ASan runtime into sh and true as well; their own
            # allocations at exit are not what this build checks.
            env["ASAN_OPTIONS"] = "detect_leaks=0"
        env.update(extra)
        return env

    def run_cupmon(self, args, env=None, check=True):
        r = subprocess.run([CUPMON_RUN] + args, capture_output=True, text=True, timeout=60,
                           env=env if env is not None else self.env())
        if check and r.returncode != 0:
            raise AssertionError(f"cupmon-run {args} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def preload_seen(self, args=(), env=None):
        """LD_PRELOAD as the program sees it ('<unset>' when it is not set)."""
        r = self.run_cupmon(list(args) + ["--", "sh", "-c", 'printf %s "${LD_PRELOAD-<unset>}"'],
                            env=env)
        return r.stdout

    def expected(self, *user):
        runtime = sanitizer_runtime()
        return ":".join(([runtime] if runtime and runtime not in user else []) + list(user) +
                        [PRELOAD_LIB])

    def files_written(self):
        return sorted(os.path.relpath(os.path.join(root, f), self.tmp)
                      for root, dirs, files in os.walk(self.tmp) for f in dirs + files
                      if os.path.join(root, f) not in self.dirs.values())

    def test_preload_is_the_default_and_preload_is_still_accepted(self):
        self.assertEqual(self.preload_seen(), self.expected())
        self.assertEqual(self.preload_seen(["--preload"]), self.expected())
        r = self.run_cupmon(["--", "sh", "-c", 'printf %s "$CUDA_INJECTION64_PATH"'])
        self.assertEqual(r.stdout, LIB)

    def test_users_preload_stays_in_front_and_nothing_is_added_twice(self):
        libc = a_real_library()
        self.assertEqual(self.preload_seen(env=self.env(LD_PRELOAD=users_preload(libc))),
                         self.expected(*users_preload(libc).split(":")))
        # ld.so also separates with spaces; the user's entries keep their order.
        spaced = users_preload(libc).replace(":", " ") + f"  {libc}"
        self.assertEqual(self.preload_seen(env=self.env(LD_PRELOAD=" " + spaced)),
                         self.expected(*spaced.split()))
        # cupmon-run under cupmon-run (a wrapper script that calls it again, torchrun under it).
        once = self.preload_seen()
        self.assertEqual(self.preload_seen(env=self.env(LD_PRELOAD=once)), once)

    def test_no_preload_leaves_ld_preload_alone(self):
        self.assertEqual(self.preload_seen(["--no-preload"]), "<unset>")
        user = users_preload(a_real_library())
        self.assertEqual(self.preload_seen(["--no-preload"], env=self.env(LD_PRELOAD=user)), user)
        r = self.run_cupmon(["--no-preload", "--", "sh", "-c", 'printf %s "$CUDA_INJECTION64_PATH"'])
        self.assertEqual(r.stdout, LIB)
        r = self.run_cupmon(["--preload", "--no-preload", "--", "true"], check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("excludes", r.stderr)

    def test_nvtx_injection_is_the_libcupti_cupmon_loads_unless_set(self):
        show = ["--", "sh", "-c", 'printf %s "${NVTX_INJECTION64_PATH-<unset>}"']
        env = self.env()
        env.pop("NVTX_INJECTION64_PATH", None)
        seen = self.run_cupmon(show, env=env).stdout
        # The first of cupmon's candidates that loads here (cupmon/monitor/cupti_library.h).
        import ctypes
        first = None
        for c in ["libcupti.so.13", "libcupti.so"] + [
                os.path.join(root, sub) for root in (env.get("CUDA_HOME"), env.get("CUDA_PATH"), "/usr/local/cuda")
                if root for sub in ("lib64/libcupti.so", "extras/CUPTI/lib64/libcupti.so",
                                    "targets/x86_64-linux/lib/libcupti.so")]:
            try:
                ctypes.CDLL(c)
            except OSError:
                continue
            first = c
            break
        self.assertEqual(seen, first if first else "<unset>")
        self.assertEqual(self.run_cupmon(show, env=dict(env, NVTX_INJECTION64_PATH="/opt/other/libnvtx-tool.so")).stdout,
                         "/opt/other/libnvtx-tool.so")
        self.assertEqual(self.run_cupmon(["--no-nvtx"] + show, env=env).stdout, "<unset>")
        # No libcupti anywhere cupmon looks: one line says NVTX ranges will not be recorded.
        bare = dict(env, CUDA_HOME=self.tmp, CUDA_PATH=self.tmp, LD_LIBRARY_PATH=self.tmp)
        if first and os.path.isabs(first):
            r = self.run_cupmon(show, env=bare)
            self.assertEqual(r.stdout, "<unset>")
            self.assertIn("NVTX ranges will not be recorded", r.stderr)

    def test_a_path_ld_preload_cannot_hold_is_not_preloaded(self):
        spaced = os.path.join(self.tmp, "lib dir")
        os.makedirs(spaced)
        lib = os.path.join(spaced, "libcupmon.so")
        shutil.copy(LIB, lib)
        shutil.copy(PRELOAD_LIB, os.path.join(spaced, "libcupmon-preload.so"))
        r = self.run_cupmon(["--lib", lib, "--", "sh", "-c",
                             'printf "%s|%s" "${LD_PRELOAD-<unset>}" "$CUDA_INJECTION64_PATH"'])
        self.assertEqual(r.stdout, "<unset>|" + lib)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn("cannot go into LD_PRELOAD", r.stderr)

    def test_a_library_without_its_preload_library_is_injected_only(self):
        alone = os.path.join(self.tmp, "alone")
        os.makedirs(alone)
        lib = os.path.join(alone, "libcupmon.so")
        shutil.copy(LIB, lib)
        r = self.run_cupmon(["--lib", lib, "--", "sh", "-c",
                             'printf "%s|%s" "${LD_PRELOAD-<unset>}" "$CUDA_INJECTION64_PATH"'])
        self.assertEqual(r.stdout, "<unset>|" + lib)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(os.path.join(alone, "libcupmon-preload.so") + " not found beside " + lib,
                      r.stderr)

    def test_a_preloaded_program_without_cuda_loads_nothing_else_of_cupmons(self):
        r = self.run_cupmon(["--", "cat", "/proc/self/maps"])
        loaded = {os.path.basename(line.split()[-1]) for line in r.stdout.splitlines()
                  if "/" in line}
        self.assertIn("libcupmon-preload.so", loaded)
        for name in loaded:
            # No libstdc++ either: preloaded first, it would shadow a newer one the program brings.
            # (A sanitizer build's runtime, preloaded too, brings its own: libubsan needs it.)
            unwanted_libs = ("libcupmon.so", "libprotobuf", "libzstd", "libcupti") + \
                (() if SANITIZE else ("libstdc++",))
            for unwanted in unwanted_libs:
                self.assertFalse(name.startswith(unwanted), f"{name} loaded: {sorted(loaded)}")

    def test_auto_window_options_become_the_variables(self):
        show = ["--", "sh", "-c", 'printf "%s|%s|%s|%s" "${CUPMON_AUTO_WINDOW-<unset>}" '
                '"${CUPMON_AUTO_WINDOW_FACTOR-<unset>}" "${CUPMON_AUTO_WINDOW_MIN_GAP-<unset>}" '
                '"${CUPMON_AUTO_WINDOW_MIN_STEPS-<unset>}"']
        self.assertEqual(self.run_cupmon(show).stdout, "<unset>|<unset>|<unset>|<unset>")
        self.assertEqual(self.run_cupmon(["--auto-window"] + show).stdout,
                         "1|<unset>|<unset>|<unset>")
        # A factor alone turns the trigger on.
        r = self.run_cupmon(["--auto-window-factor", "2", "--auto-window-min-gap", "30m",
                             "--auto-window-min-steps", "20"] + show)
        self.assertEqual(r.stdout, "1|2|30m|20")
        # So does an anchor, which goes into its own variable.
        anchor = ["--", "sh", "-c", 'printf "%s|%s" "${CUPMON_AUTO_WINDOW-<unset>}" '
                  '"${CUPMON_AUTO_WINDOW_ANCHOR-<unset>}"']
        r = self.run_cupmon(["--auto-window-anchor", "kernel:adam"] + anchor)
        self.assertEqual(r.stdout, "1|kernel:adam")
        # And the quantity the test compares; a value the monitor does not know is refused here.
        by = ["--", "sh", "-c", 'printf "%s|%s" "${CUPMON_AUTO_WINDOW-<unset>}" '
              '"${CUPMON_AUTO_WINDOW_BY-<unset>}"']
        self.assertEqual(self.run_cupmon(by).stdout, "<unset>|<unset>")
        self.assertEqual(self.run_cupmon(["--auto-window-by", "own"] + by).stdout, "1|own")
        self.assertEqual(self.run_cupmon(["--auto-window-by", "host-gap"] + by).stdout,
                         "1|host-gap")
        r = self.run_cupmon(["--auto-window-by", "wait"] + by, check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--auto-window-by", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_relative_lib_becomes_absolute(self):
        rel = os.path.relpath(LIB, self.tmp)
        r = subprocess.run([CUPMON_RUN, "--lib", rel, "--", "sh", "-c", 'printf %s "$LD_PRELOAD"'],
                           capture_output=True, text=True, timeout=60, cwd=self.tmp, env=self.env())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, self.expected())

    @unittest.skipUnless(BYSTANDER, "PRELOAD_BYSTANDER is not set")
    def test_program_without_cuda_is_left_alone(self):
        env = self.env()
        plain = subprocess.run([BYSTANDER], capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertRegex(plain.stdout, r"cupmon 0\n$")
        r = self.run_cupmon(["--", BYSTANDER])
        # The library is there (so this compares something) and changed nothing the program sees.
        self.assertEqual(r.stdout, plain.stdout.replace("cupmon 0", "cupmon 1"))
        self.assertEqual(r.stderr, "")
        self.assertEqual(self.files_written(), [])

    def test_non_cuda_commands_print_nothing_and_write_nothing(self):
        for cmd, out, code in ((["true"], "", 0), (["false"], "", 1),
                               (["sh", "-c", "echo hello; (true); exit 3"], "hello\n", 3),
                               (["sh", "-c", "sh -c 'echo child' | cat"], "child\n", 0)):
            with self.subTest(cmd=cmd):
                r = self.run_cupmon(["--"] + cmd, check=False)
                self.assertEqual((r.returncode, r.stdout, r.stderr), (code, out, ""))
        self.assertEqual(self.files_written(), [])

    @unittest.skipUnless(DECODE and CTL, "CUPMON_DECODE or CUPMONCTL is not set")
    def test_cupmons_own_tools_run_under_the_preload(self):
        # Once libcupmon.so itself was preloaded, and it and cupmon-decode / cupmonctl both
        # registered cupmon.proto with the shared libprotobuf, which aborted (exit 134) before main.
        for tool in (DECODE, CTL):
            with self.subTest(tool=tool):
                r = self.run_cupmon(["--", tool, "--help"], check=False)
                self.assertEqual(r.returncode, 0, r.stderr)

    @unittest.skipUnless(DECODE and CTL, "CUPMON_DECODE or CUPMONCTL is not set")
    def test_cupmons_own_tools_run_with_no_preload(self):
        for tool in (DECODE, CTL):
            with self.subTest(tool=tool):
                r = self.run_cupmon(["--no-preload", "--", tool, "--help"], check=False)
                self.assertEqual(r.returncode, 0, r.stderr)

    def test_help_names_both_ways(self):
        r = self.run_cupmon(["--help"])
        self.assertIn("--no-preload", r.stdout)
        self.assertIn("--preload", r.stdout)


if __name__ == "__main__":
    unittest.main()
