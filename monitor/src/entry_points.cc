// The library's entry points: InitializeInjection (CUDA_INJECTION64_PATH) and the C API in
// cupmon/cupmon.h. Both end in one process-wide Monitor that is never destroyed.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/cupmon.h"
#include "cupmon/control/protocol.h"
#include "cupmon/format/build_info.h"
#include "cupmon/monitor/monitor.h"
#include "cupti_interpose.h"
#include "cupti_mux.h"

namespace cupmon {
namespace {

// g_mu serialises start/stop/flush from the entry points; CUPTI callbacks never take it, and the
// monitor's Stop()/Flush() only call CUPTI without holding the monitor's own callback locks. Timed,
// so that exit never waits without end for an application thread that holds it.
TimedMutex g_mu;
// Never freed: CUPTI may call back until exit.
Monitor* g_monitor CUPMON_GUARDED_BY(g_mu) = nullptr;
// g_monitor for the annotation calls, which do not take g_mu. Stopped monitors are retired, never
// freed, so a pointer read here stays valid however a concurrent stop and restart interleave.
std::atomic<Monitor*> g_active_monitor{nullptr};
// Restarts through the C API keep the stopped monitor; its stop gave the pool's pages back when
// CUPTI held none of its buffers (a restart is refused otherwise). Bounded.
constexpr int kMaxStarts = 64;
int g_starts CUPMON_GUARDED_BY(g_mu) = 0;
// Leaked on purpose: libcupti is never unloaded.
CuptiApi* g_cupti CUPMON_GUARDED_BY(g_mu) = nullptr;
thread_local std::string t_last_error;

void Say(const std::string& line) { std::fprintf(stderr, "cupmon: %s\n", line.c_str()); }

std::string KindList(const std::vector<uint32_t>& kinds) {
  std::string s;
  for (uint32_t k : kinds) s += std::string(s.empty() ? "" : ",") + KindName(k);
  return s;
}

// The forced flush at exit (registered once, for either entry point). A forked child takes no
// lock at all: a parent thread may have held one at the fork, and it is never released there.
void StopAtExit() {
  if (Monitor::InForkedChild()) return;
  Monitor* m = g_active_monitor.load(std::memory_order_acquire);
  if (!m) return;
  const auto timeout = std::chrono::milliseconds(m->config().exit_timeout_ms);
  if (!g_mu.TryLockFor(timeout)) {
    Say("exit: an application thread is inside a cupmon call; not waiting for it (the last "
        "flush period of records may be lost)");
    return;
  }
  TimedMutexLock g(g_mu, std::adopt_lock);
  if (!g_monitor) return;
  // Preloaded: the other client's statics may already be destroyed at exit, so its callbacks are
  // never called from cupmon's final flush, and the multiplexer stays attached (detaching would
  // register them with CUPTI again).
  if (CuptiMux* mux = CuptiMux::Current()) mux->ForgetClientAtExit();
  g_monitor->Stop(timeout);
}

// Starts the process-wide monitor. Caller holds g_mu.
Expected<void> StartLocked(MonitorConfig config, const char* entry_point) CUPMON_REQUIRES(g_mu) {
  if (Monitor::InForkedChild())
    return MakeError("monitoring is off in a forked child of a monitored process");
  if (g_monitor) {
    if (!g_monitor->stopped())
      return MakeError(std::string("cupmon is already running in this process (started by ") +
                       g_monitor->entry_point() + "); a second start is refused");
    if (g_monitor->buffers_in_flight() > 0)
      return MakeError("the previous monitor still has buffers inside CUPTI; cannot restart");
    // The stopped monitor is retired, not freed: an annotation call on another thread may still
    // hold its pointer.
  }
  if (g_starts >= kMaxStarts)
    return MakeError("cupmon was started " + std::to_string(kMaxStarts) +
                     " times in this process; further starts are refused");
  if (!g_cupti) {
    auto loaded = LoadCupti();
    if (!loaded) return std::unexpected(loaded.error());
    g_cupti = loaded->release();
  }
  MonitorOptions o;
  o.config = std::move(config);
  o.cupti = g_cupti;
  // Preloaded (cupmon-run --preload): other CUPTI clients' calls reach our entry points, and the
  // monitor runs on the multiplexer that shares CUPTI with them (docs/COEXISTENCE.md).
  const bool interposed = CuptiCallsInterposed();
  CuptiMux* mux = interposed ? ProcessCuptiMux() : nullptr;
  // Said only when another client's calls can reach the multiplexer: libcupmon.so preloaded or
  // linked in. Injected by the driver into a program with no libcupti of its own, nobody else
  // calls CUPTI through us, so saying "sharing" there would mislead.
  const bool interposed_for_clients =
      mux && (std::string_view(entry_point) != "injection" || PreloadedByEnvironment());
  // Not interposed (injection only, or the C API loaded after libcupti): the objects already
  // bound to libcupti (torch's) are rebound to the multiplexer's entry points, at start and, for
  // objects loaded later, on the flush timer.
  static ImportRebinder* rebinder = nullptr;  // leaked: its table outlives every monitor
  if (!interposed && o.config.rebind_imports && ImportRebinder::Supported()) {
    mux = ProcessCuptiMux();
    if (mux && !rebinder) rebinder = new ImportRebinder(InterposedEntryPoints(), "libcupti");
    if (mux) o.rebinder = rebinder;
  }
  const bool rebinding = o.rebinder != nullptr;
  if (mux) o.cupti = mux;
  o.entry_point = entry_point;
  auto m = Monitor::Start(std::move(o));
  if (!m) {
    if (mux) mux->Detach();  // CUPTI stays as the other client (if any) set it up
    return std::unexpected(m.error());
  }
  ++g_starts;
  g_monitor = m->release();
  g_active_monitor.store(g_monitor, std::memory_order_release);
  static std::once_flag atexit_once;
  std::call_once(atexit_once, [] { std::atexit(StopAtExit); });
  std::string sharing;
  if (mux && interposed_for_clients) {
    sharing = "; sharing CUPTI with other clients (preloaded)";
  } else if (rebinding) {
    const uint64_t slots = g_monitor->GetStats().imports_rebound;
    if (slots)
      sharing = "; sharing CUPTI with other clients (" + std::to_string(slots) +
                " CUPTI imports rebound, no preload)";
  }
  Say(std::string("monitoring pid ") + std::to_string(getpid()) + " (" +
      KindList(g_monitor->enabled_kinds()) + ") into " + g_monitor->config().output_dir + sharing);
  return {};
}

int Fail(const std::string& message) {
  t_last_error = message;
  return -1;
}

}  // namespace
}  // namespace cupmon

using cupmon::g_monitor;
using cupmon::g_mu;

extern "C" {

// Called by the CUDA driver inside cuInit when CUDA_INJECTION64_PATH names this library, before
// any module loads: the right moment to enable CONCURRENT_KERNEL.
CUPMON_API int InitializeInjection(void) {
  try {
    cupmon::MonitorConfig config;
    std::vector<std::string> warnings;
    cupmon::ApplyEnvironment(&config, &warnings);
    for (const auto& w : warnings) cupmon::Say(w);
    cupmon::TimedMutexLock g(g_mu);
    if (auto r = cupmon::StartLocked(std::move(config), "injection"); !r) {
      cupmon::Say(r.error().message + "; the application runs unmonitored");
      return 1;
    }
  } catch (...) {
    cupmon::Say("internal error during InitializeInjection; the application runs unmonitored");
  }
  return 1;  // never make cuInit fail because of the monitor
}

CUPMON_API void cupmon_config_init(cupmon_config* c) {
  if (!c) return;
  const cupmon::MonitorConfig d;
  *c = cupmon_config{};
  c->struct_size = sizeof(cupmon_config);
  c->flush_ms = d.flush_ms;
  c->buffer_bytes = d.buffer_bytes;
  c->pool_bytes = d.pool_bytes;
  c->file_bytes = d.file_bytes;
  c->retention_bytes = d.retention_bytes;
  c->retention_files = d.retention_files;
  c->zstd_level = d.zstd_level;
  c->stats_ms = d.stats_ms;
  c->zero_buffers = d.zero_buffers ? 1 : 0;
}

CUPMON_API int cupmon_start(const cupmon_config* c) {
  try {
    cupmon::MonitorConfig config;
    cupmon_config defaults;
    if (!c) {
      cupmon_config_init(&defaults);
      c = &defaults;
    }
    if (c->struct_size != sizeof(cupmon_config))
      return cupmon::Fail("cupmon_config was not initialised with cupmon_config_init");
    std::vector<std::string> warnings;
    if (c->output_dir && *c->output_dir) config.output_dir = c->output_dir;
    if (c->kinds && *c->kinds) {
      auto kinds = cupmon::ParseKinds(c->kinds, &warnings);
      if (!kinds.empty()) config.kinds = std::move(kinds);
    }
    if (c->encoding && *c->encoding) {
      auto e = cupmon::ParseEncoding(c->encoding);
      if (e) config.encoding = *e;
      else warnings.push_back(std::string("encoding '") + c->encoding + "': " + e.error().message);
    }
    if (c->buffer_bytes) config.buffer_bytes = c->buffer_bytes;
    if (c->pool_bytes) config.pool_bytes = c->pool_bytes;
    if (c->file_bytes) config.file_bytes = c->file_bytes;
    if (c->retention_bytes) config.retention_bytes = c->retention_bytes;
    config.retention_files = c->retention_files;
    config.flush_ms = c->flush_ms;
    config.stats_ms = c->stats_ms;
    if (c->zstd_level) config.zstd_level = c->zstd_level;
    config.zero_buffers = c->zero_buffers != 0;
    cupmon::ApplyControlEnvironment(&config, &warnings);
    cupmon::ApplyCuptiAttributeEnvironment(&config, &warnings);
    for (const auto& w : warnings) cupmon::Say(w);
    cupmon::TimedMutexLock g(g_mu);
    if (auto r = cupmon::StartLocked(std::move(config), "api"); !r)
      return cupmon::Fail(r.error().message);
    cupmon::t_last_error.clear();
    return 0;
  } catch (const std::exception& e) {
    return cupmon::Fail(std::string("internal error: ") + e.what());
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_stop(void) {
  try {
    if (cupmon::Monitor::InForkedChild()) return cupmon::Fail("monitoring is off in a forked child");
    cupmon::TimedMutexLock g(g_mu);
    if (!g_monitor || g_monitor->stopped()) return cupmon::Fail("cupmon is not running");
    g_monitor->Stop(std::chrono::milliseconds(g_monitor->config().exit_timeout_ms));
    if (cupmon::CuptiMux* mux = cupmon::CuptiMux::Current()) mux->Detach();
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_flush(void) {
  try {
    // Before any lock: in a forked child, a lock held by a parent thread at the fork stays held.
    if (cupmon::Monitor::InForkedChild()) return cupmon::Fail("monitoring is off in a forked child");
    cupmon::TimedMutexLock g(g_mu);
    if (!g_monitor || g_monitor->stopped()) return cupmon::Fail("cupmon is not running");
    g_monitor->FlushAndWait();
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

namespace cupmon {
namespace {

// The C structs as the counter list places its counters (the size-versioned ABI): each BASE or
// SIZED row is a uint64_t at its c_offset, and the counters together with the fields that are not
// counters (strings, running, reserved; filled, window_open, stop_timed_out) fill each struct, so
// a field that cupmon.h has and the list lacks fails here too (python/tests/test_counter_list.py
// names it).
#define CUPMON_C_PLACE(name, field, source, c_struct, c_offset, prom, prom_name, help)      \
  CUPMON_COUNTER_IF_BASE_##c_struct(                                                            \
      static_assert(std::is_same_v<decltype(cupmon_stats::name), uint64_t> &&                   \
                        offsetof(cupmon_stats, name) == (c_offset),                             \
                    "cupmon_stats." #name " is not a uint64_t at the counter list's c_offset");) \
  CUPMON_COUNTER_IF_SIZED_##c_struct(                                                           \
      static_assert(std::is_same_v<decltype(cupmon_stats_sized::name), uint64_t> &&             \
                        offsetof(cupmon_stats_sized, name) == (c_offset),                       \
                    "cupmon_stats_sized." #name                                                 \
                    " is not a uint64_t at the counter list's c_offset");)
CUPMON_COUNTERS(CUPMON_C_PLACE)
#undef CUPMON_C_PLACE
#define CUPMON_C_BASE_BYTES(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_BASE_##c_struct(+sizeof(uint64_t))
#define CUPMON_C_SIZED_BYTES(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_SIZED_##c_struct(+sizeof(uint64_t))
static_assert(sizeof(cupmon_stats) == 0 CUPMON_COUNTERS(CUPMON_C_BASE_BYTES) +
                                          sizeof(uint64_t) + 2 * sizeof(uint32_t),
              "cupmon_stats has a field the counter list does not place as BASE, or lacks one");
static_assert(sizeof(cupmon_stats_sized) == sizeof(uint64_t) + sizeof(cupmon_stats) +
                                                0 CUPMON_COUNTERS(CUPMON_C_SIZED_BYTES) +
                                                2 * sizeof(uint32_t),
              "cupmon_stats_sized has a field the counter list does not place as SIZED, or lacks "
              "one");
#undef CUPMON_C_BASE_BYTES
#undef CUPMON_C_SIZED_BYTES

void FillBase(const MonitorStats& s, const Monitor& m, cupmon_stats* out) {
#define CUPMON_FILL_BASE(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_BASE_##c_struct(out->name = s.name;)
  CUPMON_COUNTERS(CUPMON_FILL_BASE)
#undef CUPMON_FILL_BASE
  out->strings = s.strings;
  out->running = m.stopped() || Monitor::InForkedChild() ? 0 : 1;
}
}  // namespace
}  // namespace cupmon

CUPMON_API int cupmon_get_stats(cupmon_stats* out) {
  try {
    if (!out) return cupmon::Fail("null stats pointer");
    *out = cupmon_stats{};
    // No lock: the active monitor is never freed, and GetStats reads snapshots. In a forked child
    // the numbers are the parent's as of the fork (running = 0).
    cupmon::Monitor* m = cupmon::g_active_monitor.load(std::memory_order_acquire);
    if (!m) return cupmon::Fail("cupmon was never started in this process");
    cupmon::FillBase(m->GetStats(), *m, out);
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_get_stats_sized(cupmon_stats_sized* out, size_t size) {
  try {
    if (!out) return cupmon::Fail("null stats pointer");
    if (size < sizeof(out->filled))
      return cupmon::Fail("cupmon_get_stats_sized: size " + std::to_string(size) +
                          " is below 8 (pass sizeof(cupmon_stats_sized))");
    cupmon::Monitor* m = cupmon::g_active_monitor.load(std::memory_order_acquire);
    if (!m) return cupmon::Fail("cupmon was never started in this process");
    const cupmon::MonitorStats s = m->GetStats();
    cupmon_stats_sized full{};
    cupmon::FillBase(s, *m, &full.base);
#define CUPMON_FILL_SIZED(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_SIZED_##c_struct(full.name = s.name;)
    CUPMON_COUNTERS(CUPMON_FILL_SIZED)
#undef CUPMON_FILL_SIZED
    full.window_open = s.window_open ? 1 : 0;
    full.stop_timed_out = s.stop_timed_out ? 1 : 0;
    // An older caller gets the fields it knows; a newer one learns from `filled` where ours end.
    full.filled = std::min(size, sizeof(full));
    std::memcpy(out, &full, full.filled);
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_window_open(uint32_t duration_ms, const char* kinds) {
  try {
    if (duration_ms > cupmon::control::kMaxWindowMs)
      return cupmon::Fail("window duration " + std::to_string(duration_ms) +
                          " ms is longer than 24 h");
    std::vector<uint32_t> kind_list;
    if (kinds && *kinds) {
      std::vector<std::string> names;
      std::string_view text = kinds;
      while (!text.empty()) {
        const size_t comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (!item.empty()) names.emplace_back(item);
      }
      auto normalized = cupmon::control::NormalizeWindowKinds(names);
      if (!normalized) return cupmon::Fail(normalized.error().message);
      for (std::string& name : *normalized) {
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        std::vector<std::string> unused;
        for (uint32_t k : cupmon::ParseKinds(name, &unused)) kind_list.push_back(k);
      }
    }
    cupmon::TimedMutexLock g(g_mu);
    if (!g_monitor || g_monitor->stopped()) return cupmon::Fail("cupmon is not running");
    auto id = g_monitor->RequestWindow(duration_ms, std::move(kind_list), cupmon::pb::TRIGGER_API);
    if (!id) return cupmon::Fail(id.error().message);
    return static_cast<int>(*id);
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_window_close(void) {
  try {
    cupmon::TimedMutexLock g(g_mu);
    if (!g_monitor || g_monitor->stopped()) return cupmon::Fail("cupmon is not running");
    if (auto r = g_monitor->RequestCloseWindow(); !r) return cupmon::Fail(r.error().message);
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

// Annotations do not take g_mu: they sit on the application's step loop, and a concurrent
// cupmon_stop must not make them wait. The process-wide monitor is never destroyed while running
// (StartLocked replaces it only after it stopped), so the pointer read is safe.
CUPMON_API int cupmon_annotation_push(const char* label) {
  try {
    if (!label) return cupmon::Fail("null annotation label");
    cupmon::Monitor* m = cupmon::g_active_monitor.load(std::memory_order_acquire);
    if (!m || m->stopped()) return cupmon::Fail("cupmon is not running");
    if (auto r = m->PushAnnotation(label); !r) return cupmon::Fail(r.error().message);
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API int cupmon_annotation_pop(void) {
  try {
    cupmon::Monitor* m = cupmon::g_active_monitor.load(std::memory_order_acquire);
    if (!m || m->stopped()) return cupmon::Fail("cupmon is not running");
    if (auto r = m->PopAnnotation(); !r) return cupmon::Fail(r.error().message);
    return 0;
  } catch (...) {
    return cupmon::Fail("internal error");
  }
}

CUPMON_API const char* cupmon_last_error(void) { return cupmon::t_last_error.c_str(); }

CUPMON_API const char* cupmon_version(void) {
  try {
    // Built once (a function-local static is thread-safe) and never freed: callers keep it.
    static const std::string* const text = new std::string(cupmon::VersionText("libcupmon.so"));
    return text->c_str();
  } catch (...) {
    return "libcupmon.so (version text unavailable: out of memory)";
  }
}

}  // extern "C"
