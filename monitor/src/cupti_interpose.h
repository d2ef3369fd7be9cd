// The interposed CUPTI activity entry points of libcupmon-preload.so (cupti_interpose.cc): what
// libcupmon.so's entry points need to know about them. libcupmon-preload.so is the small library
// cupmon-run puts in LD_PRELOAD: the interposed entry points, the CUPTI loader and the
// multiplexer, with no dependency beyond libc (the C++ runtime linked in), so that a preloaded
// child process that never starts CUDA (a compiler, a shell, cupmon-decode) loads nothing else of
// cupmon's. libcupmon.so needs it (DT_NEEDED), so a process has one multiplexer either way.
#pragma once

#include <vector>

#include "cupmon/monitor/cupti_api.h"
#include "import_rebind.h"

namespace cupmon {

class CuptiMux;

// True when the process's calls to cuptiActivityRegisterCallbacks resolve to libcupmon-preload.so's
// definition (it was preloaded, or loaded ahead of libcupti as libcupmon.so's dependency).
CUPMON_PRELOAD_API bool CuptiCallsInterposed() noexcept;

// True when LD_PRELOAD names libcupmon-preload.so (its file name), as cupmon-run sets it.
CUPMON_PRELOAD_API bool PreloadedByEnvironment() noexcept;

// The process-wide multiplexer over the dlopen'd libcupti, created on first use and never
// destroyed (CUPTI may call its trampolines until exit). Null when libcupti cannot be loaded.
CUPMON_PRELOAD_API CuptiMux* ProcessCuptiMux() noexcept;

// The interposed entry points as an ImportRebinder table: each name with the hidden definition
// behind the exported one. For injection without the preload (docs/COEXISTENCE.md).
CUPMON_PRELOAD_API std::vector<ImportRebinding> InterposedEntryPoints();

}  // namespace cupmon
