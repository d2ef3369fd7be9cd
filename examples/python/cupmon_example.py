#!/usr/bin/env python3
"""Start cupmon from Python with ctypes, run some CUDA work, read the counters, stop."""
import ctypes, sys

lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else "libcupmon.so")
u32, u64, i32, s = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_char_p

class Config(ctypes.Structure):  # mirrors cupmon_config in cupmon/cupmon.h
    _fields_ = [("struct_size", u32), ("flush_ms", u32), ("output_dir", s), ("kinds", s),
                ("encoding", s), ("buffer_bytes", u64), ("pool_bytes", u64), ("file_bytes", u64),
                ("retention_bytes", u64), ("retention_files", u32), ("zstd_level", i32),
                ("stats_ms", u32), ("zero_buffers", u32)]

class Stats(ctypes.Structure):  # mirrors cupmon_stats
    _fields_ = [(n, u64) for n in ("buffers_completed", "records", "raw_bytes", "compressed_bytes",
                "dropped_records", "pool_exhausted", "zero_timestamp_records", "write_errors",
                "chunks_lost", "buffers_free", "buffers_in_flight", "strings")] + [("running", u32), ("reserved", u32)]

lib.cupmon_last_error.restype = s
cfg = Config(); lib.cupmon_config_init(ctypes.byref(cfg)); cfg.output_dir = b"/tmp/cupmon-python"
if lib.cupmon_start(ctypes.byref(cfg)) != 0:
    sys.exit("cupmon_start: " + lib.cupmon_last_error().decode())
import torch  # any CUDA work; import after start so CONCURRENT_KERNEL is on before modules load
x = torch.ones(1 << 20, device="cuda"); [x.mul_(1.0001) for _ in range(100)]; torch.cuda.synchronize()
lib.cupmon_flush(); st = Stats(); lib.cupmon_get_stats(ctypes.byref(st))
print(f"records={st.records} dropped={st.dropped_records} bytes={st.compressed_bytes}")
lib.cupmon_stop()
