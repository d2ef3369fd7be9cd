"""ctypes mirror of monitor/include/cupmon/cupmon.h and the loader that finds libcupmon.so.

The Structure classes must match the C header field for field; tests/deploy checks their sizes and
offsets against a C program compiled from the header.
"""

import ctypes
import ctypes.util
import os
import threading

# Functions every libcupmon has (monitor/include/cupmon/cupmon.h).
REQUIRED_SYMBOLS = (
    "cupmon_config_init",
    "cupmon_start",
    "cupmon_stop",
    "cupmon_flush",
    "cupmon_get_stats",
    "cupmon_last_error",
)

# Trace-window and annotation functions (cupmon.h, docs/CONTROL.md "C API"). The module binds them
# only when the library exports them (older libraries lack them). Signatures, as in cupmon.h:
#   int cupmon_window_open(uint32_t duration_ms, const char* kinds)  -> window id > 0, or -1
#   int cupmon_window_close(void)                                    -> 0, or -1
#   int cupmon_annotation_push(const char* label)                    -> 0, or -1
#   int cupmon_annotation_pop(void)                                  -> 0, or -1
#   const char* cupmon_version(void)                                 -> "libcupmon.so 0.1.0\n..."
OPTIONAL_SYMBOLS = (
    "cupmon_window_open",
    "cupmon_window_close",
    "cupmon_annotation_push",
    "cupmon_annotation_pop",
    "cupmon_get_stats_sized",
    "cupmon_version",
)


class CupmonConfig(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("flush_ms", ctypes.c_uint32),
        ("output_dir", ctypes.c_char_p),
        ("kinds", ctypes.c_char_p),
        ("encoding", ctypes.c_char_p),
        ("buffer_bytes", ctypes.c_uint64),
        ("pool_bytes", ctypes.c_uint64),
        ("file_bytes", ctypes.c_uint64),
        ("retention_bytes", ctypes.c_uint64),
        ("retention_files", ctypes.c_uint32),
        ("zstd_level", ctypes.c_int32),
        ("stats_ms", ctypes.c_uint32),
        ("zero_buffers", ctypes.c_uint32),
    ]


class CupmonStats(ctypes.Structure):
    _fields_ = [
        ("buffers_completed", ctypes.c_uint64),
        ("records", ctypes.c_uint64),
        ("raw_bytes", ctypes.c_uint64),
        ("compressed_bytes", ctypes.c_uint64),
        ("dropped_records", ctypes.c_uint64),
        ("pool_exhausted", ctypes.c_uint64),
        ("zero_timestamp_records", ctypes.c_uint64),
        ("write_errors", ctypes.c_uint64),
        ("chunks_lost", ctypes.c_uint64),
        ("buffers_free", ctypes.c_uint64),
        ("buffers_in_flight", ctypes.c_uint64),
        ("strings", ctypes.c_uint64),
        ("running", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


class CupmonStatsSized(ctypes.Structure):
    """cupmon_stats_sized: `filled` (bytes the library wrote), cupmon_stats, then later counters."""
    _fields_ = [
        ("filled", ctypes.c_uint64),
        ("base", CupmonStats),
        ("lost_buffers", ctypes.c_uint64),
        ("lost_records", ctypes.c_uint64),
        ("lost_kernel_records", ctypes.c_uint64),
        ("windows_opened", ctypes.c_uint64),
        ("cupti_gaps", ctypes.c_uint64),
        ("writer_faults", ctypes.c_uint64),
        ("control_faults", ctypes.c_uint64),
        ("intake_faults", ctypes.c_uint64),
        ("strings_refused", ctypes.c_uint64),
        ("labels_refused", ctypes.c_uint64),
        ("tasks_dropped", ctypes.c_uint64),
        ("window_open", ctypes.c_uint32),
        ("stop_timed_out", ctypes.c_uint32),
        ("stranded_buffers", ctypes.c_uint64),
        ("truncated_buffers", ctypes.c_uint64),
        ("imports_rebound", ctypes.c_uint64),
        ("cupti_behind", ctypes.c_uint64),
    ]


# A later library may fill a larger struct than this module knows (cupmon_config has struct_size for
# that; cupmon_stats has none). The C side always writes into a buffer this large, so a newer
# library can never write past the end of our memory.
SLACK_BYTES = 4096


class LibraryError(OSError):
    """libcupmon.so could not be found or is not a usable cupmon library. `tried` lists the paths."""

    def __init__(self, message, tried):
        super().__init__(message)
        self.tried = list(tried)


def _candidates():
    """(path, source) pairs in the order they are tried."""
    env = os.environ.get("CUPMON_LIB")
    if env:
        # An explicit choice is final: falling back to another copy would hide the mistake.
        return [(env, "CUPMON_LIB")]
    out = []
    injected = os.environ.get("CUDA_INJECTION64_PATH", "")
    if "cupmon" in os.path.basename(injected):
        # Already injected into this process by cupmon-run: use that very copy.
        out.append((injected, "CUDA_INJECTION64_PATH"))
    here = os.path.dirname(os.path.abspath(__file__))
    out.append((os.path.join(here, "libcupmon.so"), "next to the package"))
    # pip-installed: <prefix>/lib/pythonX.Y/site-packages/cupmon -> <prefix>/lib.
    out.append((os.path.normpath(os.path.join(here, "..", "..", "..", "libcupmon.so")), "prefix/lib"))
    # cmake --install: <prefix>/share/cupmon/python/cupmon -> <prefix>/lib.
    out.append((os.path.normpath(os.path.join(here, "..", "..", "..", "..", "lib", "libcupmon.so")),
                "cmake install prefix/lib"))
    found = ctypes.util.find_library("cupmon")  # ldconfig cache (and LD_LIBRARY_PATH via gcc/ld)
    if found:
        out.append((found, "ldconfig"))
    out.append(("libcupmon.so", "dynamic loader search path"))
    return out


def load():
    """Loads libcupmon and declares its functions. Raises LibraryError with every path it tried."""
    tried = []
    errors = []
    for path, source in _candidates():
        is_name = "/" not in path
        if not is_name and not os.path.exists(path):
            tried.append(path)
            errors.append(f"{path} ({source}): no such file")
            continue
        tried.append(path)
        try:
            # RTLD_GLOBAL is not needed: we only call into it. RTLD_NODELETE is implied by the library.
            lib = ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path} ({source}): {e}")
            if source == "CUPMON_LIB" or not is_name:
                # The file exists but does not load (wrong architecture, missing dependency): that is
                # the answer, not a reason to pick up some other copy.
                raise LibraryError(
                    f"cupmon: cannot load libcupmon from {path} ({source}): {e}", tried) from e
            continue
        missing = [s for s in REQUIRED_SYMBOLS if not hasattr(lib, s)]
        if missing:
            raise LibraryError(
                f"cupmon: {path} ({source}) is not a compatible libcupmon: it lacks "
                f"{', '.join(missing)}", tried)
        _declare(lib)
        return lib, path
    raise LibraryError(
        "cupmon: libcupmon.so not found. Set CUPMON_LIB=/path/to/libcupmon.so, or put it next to "
        "the cupmon package or in the ldconfig cache. Tried:\n  " + "\n  ".join(errors), tried)


def _declare(lib):
    lib.cupmon_config_init.argtypes = [ctypes.c_void_p]
    lib.cupmon_config_init.restype = None
    lib.cupmon_start.argtypes = [ctypes.c_void_p]
    lib.cupmon_start.restype = ctypes.c_int
    lib.cupmon_stop.argtypes = []
    lib.cupmon_stop.restype = ctypes.c_int
    lib.cupmon_flush.argtypes = []
    lib.cupmon_flush.restype = ctypes.c_int
    lib.cupmon_get_stats.argtypes = [ctypes.c_void_p]
    lib.cupmon_get_stats.restype = ctypes.c_int
    lib.cupmon_last_error.argtypes = []
    lib.cupmon_last_error.restype = ctypes.c_char_p
    if hasattr(lib, "cupmon_window_open"):
        lib.cupmon_window_open.argtypes = [ctypes.c_uint32, ctypes.c_char_p]
        lib.cupmon_window_open.restype = ctypes.c_int
    if hasattr(lib, "cupmon_window_close"):
        lib.cupmon_window_close.argtypes = []
        lib.cupmon_window_close.restype = ctypes.c_int
    if hasattr(lib, "cupmon_annotation_push"):
        lib.cupmon_annotation_push.argtypes = [ctypes.c_char_p]
        lib.cupmon_annotation_push.restype = ctypes.c_int
    if hasattr(lib, "cupmon_get_stats_sized"):
        lib.cupmon_get_stats_sized.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.cupmon_get_stats_sized.restype = ctypes.c_int
    if hasattr(lib, "cupmon_annotation_pop"):
        lib.cupmon_annotation_pop.argtypes = []
        lib.cupmon_annotation_pop.restype = ctypes.c_int
    if hasattr(lib, "cupmon_version"):
        lib.cupmon_version.argtypes = []
        lib.cupmon_version.restype = ctypes.c_char_p


_lock = threading.Lock()
_loaded = None


def library():
    """(CDLL, path), loaded once per process."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = load()
        return _loaded
