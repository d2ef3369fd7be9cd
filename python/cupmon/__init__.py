"""cupmon for Python: turn the always-on CUDA activity monitor on from a training script.

    import cupmon
    cupmon.start(output_dir="/scratch/cupmon")   # or: with cupmon.start(output_dir=...):
    ...                                          # train
    cupmon.stop()

Pure Python over libcupmon.so's C API (ctypes); no compiled extension. See docs/DEPLOY.md.
"""

import ctypes

from . import _capi
from ._capi import LibraryError

__all__ = [
    "CupmonError",
    "LibraryError",
    "Session",
    "Window",
    "annotate",
    "flush",
    "library_path",
    "library_version",
    "start",
    "stats",
    "stop",
    "window",
]

# The project version (CMakeLists.txt, pyproject.toml); tests/deploy checks that all three agree
# with the library's cupmon_version().
__version__ = "0.1.0"

# cupmon_config fields that start() accepts as keyword arguments, with the C type's Python kind.
_CONFIG_STRINGS = ("output_dir", "kinds", "encoding")
_CONFIG_NUMBERS = ("flush_ms", "buffer_bytes", "pool_bytes", "file_bytes", "retention_bytes",
                   "retention_files", "zstd_level", "stats_ms", "zero_buffers")


class CupmonError(RuntimeError):
    """A cupmon C function failed; the message is the library's cupmon_last_error()."""


def _lib():
    return _capi.library()[0]


def library_path():
    """The path of the libcupmon.so in use (loads it if needed; raises LibraryError)."""
    return _capi.library()[1]


def library_version():
    """The loaded libcupmon.so's cupmon_version() text: "libcupmon.so 0.1.0", then "revision: ...",
    "format: ..." and "cupti: ..." lines (raises LibraryError when no library loads)."""
    lib = _lib()
    if not hasattr(lib, "cupmon_version"):
        return "libcupmon.so (exports no cupmon_version(): built before the version call)"
    return lib.cupmon_version().decode("utf-8", "replace")


def _check(rc, what):
    if rc < 0:
        message = _lib().cupmon_last_error() or b""
        raise CupmonError(f"{what} failed: {message.decode('utf-8', 'replace') or 'no detail'}")
    return rc


def _optional(name, python_name):
    lib = _lib()
    if not hasattr(lib, name):
        raise CupmonError(
            f"cupmon.{python_name}() needs {name}() in libcupmon, and {library_path()} does not "
            "export it: this libcupmon predates trace windows and annotations. Use a newer build, "
            "or open windows with `cupmonctl window PID` / `kill -USR2 PID`.")
    return getattr(lib, name)


class Session:
    """Returned by start(). As a context manager it stops the monitor on exit."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        stop()
        return False

    def stats(self):
        return stats()

    def flush(self):
        flush()

    def stop(self):
        stop()


def start(output_dir=None, *, dir=None, **config):  # noqa: A002 - `dir=` is the issue's spelling
    """Starts monitoring this process. Keyword arguments are cupmon_config fields:

    output_dir (alias dir), kinds ("concurrent_kernel,memcpy,memset"), encoding, flush_ms,
    buffer_bytes, pool_bytes, file_bytes, retention_bytes, retention_files, zstd_level, stats_ms,
    zero_buffers. Left out (or None): the library's defaults (monitor/README.md).
    Raises LibraryError when libcupmon cannot be loaded, CupmonError when the monitor cannot start
    (no GPU, already running, bad option), ValueError/TypeError for a bad argument.
    """
    if dir is not None:
        if output_dir is not None:
            raise TypeError("start(): give output_dir or dir, not both")
        output_dir = dir
    unknown = set(config) - set(_CONFIG_STRINGS) - set(_CONFIG_NUMBERS)
    if unknown:
        raise TypeError(f"start(): unknown option(s) {', '.join(sorted(unknown))}; valid: "
                        f"{', '.join(_CONFIG_STRINGS + _CONFIG_NUMBERS)}")
    config["output_dir"] = output_dir
    lib = _lib()
    # A buffer larger than our struct: a newer library may initialise more fields (struct_size
    # tells it how many the caller filled in, and it set that itself).
    raw = ctypes.create_string_buffer(ctypes.sizeof(_capi.CupmonConfig) + _capi.SLACK_BYTES)
    lib.cupmon_config_init(raw)
    cfg = _capi.CupmonConfig.from_buffer(raw)
    if cfg.struct_size < ctypes.sizeof(_capi.CupmonConfig):
        raise LibraryError(
            f"cupmon: {library_path()} has a cupmon_config of {cfg.struct_size} bytes, this module "
            f"expects {ctypes.sizeof(_capi.CupmonConfig)}: mismatched libcupmon", [library_path()])
    keep_alive = []  # the C side copies strings in cupmon_start; keep ours alive until then
    for name in _CONFIG_STRINGS:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, (bytes, bytearray)):
            encoded = bytes(value)
        else:
            encoded = str(value if not hasattr(value, "__fspath__") else value.__fspath__()).encode()
        if b"\0" in encoded:
            raise ValueError(f"start(): {name} contains a NUL byte")
        keep_alive.append(encoded)
        setattr(cfg, name, encoded)
    for name in _CONFIG_NUMBERS:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"start(): {name} must be an int, not {type(value).__name__}")
        if name == "zstd_level":  # int32_t
            low, high = -(1 << 31), (1 << 31) - 1
        else:  # uint64_t for *_bytes, uint32_t otherwise
            low, high = 0, (1 << (64 if name.endswith("_bytes") else 32)) - 1
        if not low <= value <= high:
            raise ValueError(f"start(): {name}={value} is out of range [{low}, {high}]")
        setattr(cfg, name, value)
    _check(lib.cupmon_start(raw), "cupmon_start")
    del keep_alive
    return Session()


def stop():
    """Forced flush and footer; the files are complete when it returns."""
    _check(_lib().cupmon_stop(), "cupmon_stop")


def flush():
    """Non-forced flush: returns once the delivered buffers are written."""
    _check(_lib().cupmon_flush(), "cupmon_flush")


def stats():
    """Counters since start, as a dict: cupmon_stats' fields (`running` a bool) and, from a library
    that has cupmon_get_stats_sized, the later ones it filled (lost_records, faults, ...)."""
    lib = _lib()
    if not hasattr(lib, "cupmon_get_stats_sized"):
        raw = ctypes.create_string_buffer(ctypes.sizeof(_capi.CupmonStats) + _capi.SLACK_BYTES)
        _check(lib.cupmon_get_stats(raw), "cupmon_get_stats")
        s = _capi.CupmonStats.from_buffer(raw)
        out = {name: getattr(s, name) for name, _ in _capi.CupmonStats._fields_ if name != "reserved"}
        out["running"] = bool(out["running"])
        return out
    sized = _capi.CupmonStatsSized()
    _check(lib.cupmon_get_stats_sized(ctypes.byref(sized), ctypes.sizeof(sized)),
           "cupmon_get_stats_sized")
    out = {name: getattr(sized.base, name) for name, _ in _capi.CupmonStats._fields_
           if name != "reserved"}
    out["running"] = bool(out["running"])
    for name, ctype in _capi.CupmonStatsSized._fields_[2:]:
        # Only what an older library filled: the rest is not in its struct.
        if getattr(_capi.CupmonStatsSized, name).offset + ctypes.sizeof(ctype) <= sized.filled:
            out[name] = getattr(sized, name)
    for flag in ("window_open", "stop_timed_out"):
        if flag in out:
            out[flag] = bool(out[flag])
    return out


class Window:
    """An open trace window. Closes itself when used as a context manager; otherwise it ends after
    its duration."""

    def __init__(self, window_id):
        self.id = window_id

    def close(self):
        _check(_optional("cupmon_window_close", "window")(), "cupmon_window_close")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def window(seconds=5.0, kinds=None):
    """Opens a trace window now for `seconds` (adds API/synchronization detail; see docs/CONTROL.md).

    kinds: None for the monitor's configured window kinds, or names such as ["runtime",
    "synchronization"]. Returns a Window. Raises CupmonError when the library has no window API
    or refuses (for example, a window is already open).
    """
    duration_ms = int(round(float(seconds) * 1000))
    if not 1 <= duration_ms <= 24 * 3600 * 1000:
        raise ValueError(f"window(): seconds={seconds} must be between 0.001 and 86400")
    if kinds is None:
        kinds_arg = None
    elif isinstance(kinds, str):
        kinds_arg = kinds.encode()
    else:
        kinds_arg = ",".join(kinds).encode()
    fn = _optional("cupmon_window_open", "window")
    return Window(_check(fn(duration_ms, kinds_arg), "cupmon_window_open"))


class annotate:  # noqa: N801 - used as `with cupmon.annotate("step 12"):`, like a function
    """Labels the GPU work launched inside the block ("step 12", "forward"); the decoder shows it.

    Nests. Pushed on enter, popped on exit, on the calling thread.
    """

    def __init__(self, label):
        label = label.encode() if isinstance(label, str) else bytes(label)
        if b"\0" in label:
            raise ValueError("annotate(): label contains a NUL byte")
        self._label = label

    def __enter__(self):
        fn = _optional("cupmon_annotation_push", "annotate")
        _check(fn(self._label), "cupmon_annotation_push")
        return self

    def __exit__(self, *exc):
        _check(_optional("cupmon_annotation_pop", "annotate")(), "cupmon_annotation_pop")
        return False
