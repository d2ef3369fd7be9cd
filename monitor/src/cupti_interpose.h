// The interposed CUPTI activity entry points of libcupmon.so (cupti_interpose.cc, shared library
// only): what the entry points need to know about them.
#pragma once

namespace cupmon {

class CuptiMux;

// True when the process's calls to cuptiActivityRegisterCallbacks resolve to libcupmon.so's
// definition (libcupmon.so was preloaded, or loaded globally ahead of libcupti).
bool CuptiCallsInterposed() noexcept;

// True when LD_PRELOAD names this library (its file name), as cupmon-run --preload sets it.
bool PreloadedByEnvironment() noexcept;

// The process-wide multiplexer over the dlopen'd libcupti, created on first use and never
// destroyed (CUPTI may call its trampolines until exit). Null when libcupti cannot be loaded.
CuptiMux* ProcessCuptiMux() noexcept;

}  // namespace cupmon
