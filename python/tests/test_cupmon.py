"""Tests of the cupmon Python module (python/cupmon) without a GPU: the ctypes structs against the C
header, library discovery and its errors, the wrappers against a TEST STUB libcupmon, and the real
libcupmon.so's error paths on a machine without a GPU.

Run by ctest (tests/deploy/CMakeLists.txt) as `python3 -m unittest discover -s python/tests`.
Environment: CUPMON_INCLUDE_DIR (monitor/include), CUPMON_TEST_LIB (the built libcupmon.so, optional),
CUPMON_PROJECT_VERSION (CMakeLists.txt's project version, optional), CC (a C compiler, default cc).
"""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
INCLUDE = os.environ.get("CUPMON_INCLUDE_DIR", os.path.join(REPO, "monitor", "include"))
HEADER = os.path.join(INCLUDE, "cupmon", "cupmon.h")
CC = os.environ.get("CC", "cc")

sys.path.insert(0, PYTHON_DIR)
import cupmon  # noqa: E402  (the import itself must work without any libcupmon)
from cupmon import _capi  # noqa: E402


def compile_c(source, out, *flags, shared=False):
    cmd = [CC, "-std=c11", "-Wall", "-Werror", "-I", INCLUDE, *flags, "-o", out, source]
    if shared:
        cmd[1:1] = ["-shared", "-fPIC"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def header_fields(struct_name):
    """Field names of `typedef struct NAME { ... } NAME;` in cupmon.h, in order."""
    with open(HEADER) as f:
        text = f.read()
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (struct_name, struct_name), text, re.S)
    if not m:
        raise AssertionError(f"{struct_name} not found in {HEADER}")
    body = re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)
    fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if decl:
            fields.append(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", decl)[-1])
    return fields


class Scratch(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="cupmon-py-test-")
        self.saved_env = dict(os.environ)
        _capi._loaded = None  # every test picks its own library

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        _capi._loaded = None
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stub(self, *defines):
        """Builds the TEST STUB libcupmon with the given -D flags; returns its path."""
        name = "libcupmon-stub%s.so" % "".join(d.lower() for d in defines)
        out = os.path.join(self.tmp, name)
        compile_c(os.path.join(HERE, "stub_libcupmon.c"), out, *("-D" + d for d in defines), shared=True)
        return out

    def use(self, path):
        os.environ["CUPMON_LIB"] = path
        _capi._loaded = None


class StructLayoutTest(Scratch):
    """The ctypes mirror must match the C header byte for byte."""

    def test_fields_sizes_and_offsets_match_the_c_header(self):
        structs = {"cupmon_config": _capi.CupmonConfig, "cupmon_stats": _capi.CupmonStats,
                   "cupmon_stats_sized": _capi.CupmonStatsSized}
        lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "cupmon/cupmon.h"',
                 "int main(void) {"]
        for cname in structs:
            lines.append(f'  printf("{cname} sizeof %zu\\n", sizeof({cname}));')
            for field in header_fields(cname):
                lines.append(f'  printf("{cname} {field} %zu\\n", offsetof({cname}, {field}));')
        lines += ["  return 0;", "}"]
        src = os.path.join(self.tmp, "layout_probe.c")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        exe = os.path.join(self.tmp, "layout_probe")
        compile_c(src, exe)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        c_layout = {}
        for line in out.splitlines():
            cname, field, value = line.split()
            c_layout[(cname, field)] = int(value)
        for cname, cls in structs.items():
            with self.subTest(struct=cname):
                self.assertEqual([f for f, _ in cls._fields_], header_fields(cname),
                                 "field names/order differ from cupmon.h")
                self.assertEqual(ctypes.sizeof(cls), c_layout[(cname, "sizeof")])
                for field, _ in cls._fields_:
                    self.assertEqual(getattr(cls, field).offset, c_layout[(cname, field)], field)

    def test_header_parser_sees_every_field(self):
        # Guards the guard: a parser that found nothing would make the test above vacuous.
        self.assertEqual(header_fields("cupmon_config")[0], "struct_size")
        self.assertIn("retention_bytes", header_fields("cupmon_config"))
        self.assertEqual(header_fields("cupmon_stats")[-1], "reserved")


class LoaderTest(Scratch):
    def test_missing_library_names_the_path_it_tried(self):
        missing = os.path.join(self.tmp, "nope", "libcupmon.so")
        self.use(missing)
        with self.assertRaises(cupmon.LibraryError) as ctx:
            cupmon.start(output_dir=self.tmp)
        self.assertIsInstance(ctx.exception, OSError)
        self.assertIn(missing, str(ctx.exception))
        self.assertEqual(ctx.exception.tried, [missing])

    def test_a_file_that_is_not_a_shared_library(self):
        bogus = os.path.join(self.tmp, "libcupmon.so")
        with open(bogus, "w") as f:
            f.write("not an ELF file\n")
        self.use(bogus)
        with self.assertRaises(OSError) as ctx:
            cupmon.stats()
        self.assertIn(bogus, str(ctx.exception))
        self.assertIn("cannot load", str(ctx.exception))

    def test_a_library_without_the_cupmon_api_is_mismatched(self):
        src = os.path.join(self.tmp, "other.c")
        with open(src, "w") as f:
            f.write("int cupmon_start(void* c) { (void)c; return 0; }\n")
        lib = os.path.join(self.tmp, "libother.so")
        compile_c(src, lib, shared=True)
        self.use(lib)
        with self.assertRaises(cupmon.LibraryError) as ctx:
            cupmon.library_path()
        self.assertIn(lib, str(ctx.exception))
        self.assertIn("lacks cupmon_config_init", str(ctx.exception))

    def test_a_smaller_config_struct_is_a_mismatch(self):
        self.use(self.stub("STUB_SMALL_CONFIG"))
        with self.assertRaises(cupmon.LibraryError) as ctx:
            cupmon.start(output_dir=self.tmp)
        self.assertIn("mismatched libcupmon", str(ctx.exception))

    def test_not_found_anywhere_lists_every_place(self):
        # In a child process, so that no CUPMON_LIB, injection path or ldconfig entry is inherited.
        env = {k: v for k, v in os.environ.items()
               if k not in ("CUPMON_LIB", "CUDA_INJECTION64_PATH", "LD_LIBRARY_PATH")}
        env["PYTHONPATH"] = PYTHON_DIR
        code = textwrap.dedent("""
            import ctypes.util, cupmon
            if ctypes.util.find_library("cupmon"):
                print("SKIP ldconfig has a libcupmon"); raise SystemExit(0)
            try:
                cupmon.start()
            except ImportError:
                raise
            except OSError as e:
                print("ERR", e)
        """)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        if r.stdout.startswith("SKIP"):
            self.skipTest(r.stdout)
        self.assertIn("libcupmon.so not found", r.stdout)
        self.assertIn("CUPMON_LIB", r.stdout)
        self.assertIn("next to the package", r.stdout)

    def test_injection_path_is_preferred_when_it_is_cupmon(self):
        stub = self.stub()
        os.environ.pop("CUPMON_LIB", None)
        os.environ["CUDA_INJECTION64_PATH"] = stub  # basename contains "cupmon"
        self.assertEqual(cupmon.library_path(), stub)


class VersionTest(unittest.TestCase):
    """cupmon.__version__ is the project's version: pyproject.toml's and CMakeLists.txt's."""

    def test_version_agrees_with_pyproject_and_cmake(self):
        with open(os.path.join(PYTHON_DIR, "pyproject.toml")) as f:
            pyproject = re.search(r'^version = "([^"]+)"$', f.read(), re.M).group(1)
        self.assertEqual(cupmon.__version__, pyproject)
        with open(os.path.join(REPO, "CMakeLists.txt")) as f:
            cmake = re.search(r"^project\(cupmon VERSION ([0-9.]+) ", f.read(), re.M).group(1)
        self.assertEqual(cupmon.__version__, cmake)
        if os.environ.get("CUPMON_PROJECT_VERSION"):
            self.assertEqual(cupmon.__version__, os.environ["CUPMON_PROJECT_VERSION"])


class StubWrapperTest(Scratch):
    """The wrappers against the TEST STUB libcupmon (python/tests/stub_libcupmon.c)."""

    def setUp(self):
        super().setUp()
        self.path = self.stub("STUB_WITH_WINDOWS")
        self.use(self.path)
        self.lib = ctypes.CDLL(self.path)  # same handle as the module's: read back what it got
        for name in ("stub_output_dir", "stub_kinds", "stub_encoding", "stub_log"):
            getattr(self.lib, name).restype = ctypes.c_char_p
        self.lib.stub_config.restype = ctypes.POINTER(_capi.CupmonConfig)

    def tearDown(self):
        try:
            cupmon.stop()
        except cupmon.CupmonError:
            pass
        super().tearDown()

    def test_start_passes_every_option_through_the_struct(self):
        out = os.path.join(self.tmp, "out dir")
        cupmon.start(output_dir=out, kinds="concurrent_kernel,memcpy", encoding="zstd",
                     flush_ms=250, buffer_bytes=8 << 20, pool_bytes=1 << 33, file_bytes=123456789,
                     retention_bytes=(1 << 64) - 1, retention_files=17, zstd_level=-5, stats_ms=5000,
                     zero_buffers=1)
        self.assertEqual(self.lib.stub_output_dir().decode(), out)
        self.assertEqual(self.lib.stub_kinds(), b"concurrent_kernel,memcpy")
        self.assertEqual(self.lib.stub_encoding(), b"zstd")
        c = self.lib.stub_config().contents
        self.assertEqual(c.struct_size, ctypes.sizeof(_capi.CupmonConfig))
        self.assertEqual((c.flush_ms, c.buffer_bytes, c.pool_bytes, c.file_bytes),
                         (250, 8 << 20, 1 << 33, 123456789))
        self.assertEqual((c.retention_bytes, c.retention_files, c.zstd_level, c.stats_ms, c.zero_buffers),
                         ((1 << 64) - 1, 17, -5, 5000, 1))

    def test_defaults_are_left_to_the_library_and_dir_is_an_alias(self):
        cupmon.start(dir=self.tmp)
        self.assertEqual(self.lib.stub_output_dir().decode(), self.tmp)
        self.assertEqual(self.lib.stub_kinds(), b"(null)")  # NULL keeps the library default
        self.assertEqual(self.lib.stub_config().contents.flush_ms, 1000)  # from cupmon_config_init

    def test_context_manager_stops_and_stats_reads_the_struct(self):
        with cupmon.start(output_dir=self.tmp) as session:
            s = session.stats()
            self.assertTrue(s["running"])
            self.assertEqual(s["records"], 123)
            self.assertEqual(s["raw_bytes"], 1 << 40)
            self.assertEqual(s["dropped_records"], 7)
            self.assertEqual(s["strings"], 99)
            self.assertNotIn("reserved", s)
            # From cupmon_get_stats_sized, as far as this (older-shaped) stub filled it.
            self.assertEqual((s["lost_buffers"], s["lost_records"]), (2, 5000))
            self.assertNotIn("lost_kernel_records", s)
            self.assertNotIn("stop_timed_out", s)
            cupmon.flush()
        self.assertFalse(cupmon.stats()["running"])
        self.assertEqual(self.lib.stub_log(), b"start;flush;stop;")

    def test_errors_carry_the_library_message(self):
        with self.assertRaises(cupmon.CupmonError) as ctx:
            cupmon.start(output_dir="/fail")
        self.assertIn("stub: refused /fail", str(ctx.exception))
        with self.assertRaises(cupmon.CupmonError) as ctx:
            cupmon.stop()
        self.assertIn("stub: not running", str(ctx.exception))

    def test_bad_arguments_are_refused_before_the_library_is_called(self):
        with self.assertRaises(TypeError):
            cupmon.start(output_dir=self.tmp, flush_sec=1)
        with self.assertRaises(TypeError):
            cupmon.start(output_dir=self.tmp, dir=self.tmp)
        with self.assertRaises(ValueError):
            cupmon.start(output_dir=self.tmp, retention_bytes=-1)
        with self.assertRaises(ValueError):
            cupmon.start(output_dir=self.tmp, flush_ms=1 << 32)
        with self.assertRaises(TypeError):
            cupmon.start(output_dir=self.tmp, flush_ms=1.5)
        with self.assertRaises(ValueError):
            cupmon.start(output_dir="a\0b")
        self.assertEqual(self.lib.stub_log(), b"")
        with self.assertRaises(ValueError):
            cupmon.window(seconds=0)

    def test_window_and_annotations_call_the_c_api(self):
        cupmon.start(output_dir=self.tmp)
        with cupmon.window(seconds=1.5, kinds=["runtime", "synchronization"]) as w:
            self.assertEqual(w.id, 41)
        cupmon.window(seconds=2)
        with cupmon.annotate("step 12"):
            with cupmon.annotate("forward"):
                pass
        self.assertEqual(
            self.lib.stub_log(),
            b"start;window_open 1500 runtime,synchronization;window_close;window_open 2000 (null);"
            b"push step 12;push forward;pop;pop;")

    def test_without_the_window_api_the_error_says_so(self):
        self.use(self.stub())
        cupmon.start(output_dir=self.tmp)
        with self.assertRaises(cupmon.CupmonError) as ctx:
            cupmon.window(seconds=1)
        self.assertIn("cupmon_window_open", str(ctx.exception))
        self.assertIn(cupmon.library_path(), str(ctx.exception))
        with self.assertRaises(cupmon.CupmonError) as ctx:
            with cupmon.annotate("x"):
                pass
        self.assertIn("cupmon_annotation_push", str(ctx.exception))


@unittest.skipIf(os.environ.get("CUPMON_TEST_LIB_UNUSABLE"), os.environ.get("CUPMON_TEST_LIB_UNUSABLE"))
@unittest.skipUnless(os.path.exists(os.environ.get("CUPMON_TEST_LIB", "/nonexistent")),
                     "CUPMON_TEST_LIB (the built libcupmon.so) is not set")
class RealLibraryTest(Scratch):
    """The real libcupmon.so. Without a GPU, start() must fail with the library's explanation."""

    def setUp(self):
        super().setUp()
        self.use(os.environ["CUPMON_TEST_LIB"])

    def test_loads_and_reports_errors_before_start(self):
        self.assertEqual(cupmon.library_path(), os.environ["CUPMON_TEST_LIB"])
        with self.assertRaises(cupmon.CupmonError) as ctx:
            cupmon.flush()
        self.assertRegex(str(ctx.exception), r"cupmon_flush failed: \S")

    def test_library_version_agrees_with_the_module(self):
        lines = cupmon.library_version().split("\n")
        self.assertEqual(lines[0], f"libcupmon.so {cupmon.__version__}")
        fields = dict(line.split(": ", 1) for line in lines[1:])
        self.assertEqual(sorted(fields), ["cupti", "format", "revision"])
        self.assertRegex(fields["revision"], r"^\S+$")
        self.assertRegex(fields["format"], r"^writes 1\.[0-9]+, reads 1\.x$")
        self.assertRegex(fields["cupti"], r"^[1-9][0-9]{5}$")  # libcupmon.so exists only with CUDA

    def test_start_without_a_gpu_explains_why(self):
        try:
            session = cupmon.start(output_dir=os.path.join(self.tmp, "out"))
        except cupmon.CupmonError as e:
            # The library's own explanation, word for word (cupmon_last_error on this thread).
            c_message = _capi.library()[0].cupmon_last_error().decode()
            self.assertTrue(c_message)
            self.assertEqual(str(e), f"cupmon_start failed: {c_message}")
            try:
                self.assertFalse(cupmon.stats()["running"])
            except cupmon.CupmonError:
                pass  # never started: cupmon_get_stats refuses, which is also fine
            return
        # A machine with a GPU: the monitor runs; exercise the rest and stop it.
        with session:
            self.assertTrue(cupmon.stats()["running"])
            cupmon.flush()
        self.assertFalse(cupmon.stats()["running"])

    def test_window_and_annotate_without_a_running_monitor_fail_with_its_message(self):
        # This libcupmon exports the window and annotation API: the error is the library's refusal,
        # not the module's "does not export" message.
        lib = _capi.library()[0]
        for name in _capi.OPTIONAL_SYMBOLS:
            self.assertTrue(hasattr(lib, name), f"{cupmon.library_path()} lacks {name}")
        with self.assertRaises(cupmon.CupmonError) as ctx:
            cupmon.window(seconds=1)
        self.assertRegex(str(ctx.exception), r"^cupmon_window_open failed: \S")
        self.assertNotIn("does not export", str(ctx.exception))
        with self.assertRaises(cupmon.CupmonError) as ctx:
            with cupmon.annotate("step 12"):
                pass
        self.assertRegex(str(ctx.exception), r"^cupmon_annotation_push failed: \S")


if __name__ == "__main__":
    unittest.main()
