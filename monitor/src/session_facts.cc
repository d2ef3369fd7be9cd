// ProbeSessionFacts: record sizes probed from the loaded libcupti, and what follows from them.
#include "session_facts.h"

#include <cupti.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>

#include "cupmon/monitor/trace_window.h"

namespace cupmon {
namespace {

// One synthetic record per kind, walked with cuptiActivityGetNextRecord: the second call returns
// the record after the first, so the distance is the size compiled into this libcupti.
bool ProbeRecordSizes(CuptiApi& cupti, RecordSizeTable* sizes) {
  alignas(8) static thread_local uint8_t probe[8192];
  for (uint32_t kind = 1; kind < RecordSizeTable::kMaxKind; ++kind) {
    std::memset(probe, 0, sizeof(probe));
    for (size_t off = 0; off + 8 <= sizeof(probe); off += 8) std::memcpy(probe + off, &kind, 4);
    CUpti_Activity* rec = nullptr;
    if (cupti.ActivityGetNextRecord(probe, sizeof(probe), &rec) != CUPTI_SUCCESS) continue;
    if (cupti.ActivityGetNextRecord(probe, sizeof(probe), &rec) != CUPTI_SUCCESS) continue;
    const auto size = reinterpret_cast<uint8_t*>(rec) - probe;
    if (size > 0 && size < 4096 && size % 8 == 0) sizes->Set(kind, static_cast<uint32_t>(size));
  }
  return !sizes->Empty();
}

}  // namespace

LauncherIdentity ReadLauncherIdentity() {
  LauncherIdentity id;
  auto env = [](const char* name, const char* fallback) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback ? std::getenv(fallback) : nullptr;
  };
  auto number = [](const char* v) -> std::optional<int32_t> {
    if (!v || !*v) return std::nullopt;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end == '\0' && n >= 0 && n <= INT32_MAX) return static_cast<int32_t>(n);
    return std::nullopt;
  };
  id.rank = number(env("RANK", "SLURM_PROCID"));
  id.local_rank = number(env("LOCAL_RANK", "SLURM_LOCALID"));
  id.world_size = number(env("WORLD_SIZE", "SLURM_NTASKS"));
  const char* run_id = std::getenv("TORCHELASTIC_RUN_ID");  // torchrun's default is "none"
  const char* job =
      run_id && *run_id && std::strcmp(run_id, "none") != 0 ? run_id : std::getenv("SLURM_JOB_ID");
  if (job && *job) id.job_id = job;
  return id;
}

int64_t ClockNs(int clock_id) {
  timespec ts{};
  clock_gettime(static_cast<clockid_t>(clock_id), &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

pb::CalibrationSample TakeCalibrationSample(CuptiApi& cupti, MonitorClock& clock) {
  // Two realtime readings bracket the CUPTI one and the midpoint is taken, so a sample's error is
  // at most half the bracket. One slow read (the first cuptiGetTimestamp of a process, the thread
  // descheduled) makes that hundreds of microseconds, and every time the decoder maps near the
  // sample moves with it: the narrowest of a few brackets is kept (each costs well under 1 us).
  constexpr int kTries = 5;
  pb::CalibrationSample s;
  int64_t best_bracket = INT64_MAX;
  for (int i = 0; i < kTries; ++i) {
    uint64_t cupti_ns = 0;
    const int64_t before = clock.RealtimeNs();
    cupti.GetTimestamp(&cupti_ns);
    const int64_t after = clock.RealtimeNs();
    if (after - before >= best_bracket) continue;
    best_bracket = after - before;
    s.set_cupti_ns(cupti_ns);
    s.set_realtime_ns(before + (after - before) / 2);
  }
  s.set_monotonic_ns(clock.SteadyNs());
  return s;
}

SessionFacts ProbeSessionFacts(CuptiApi& cupti, MonitorConfig config, std::string entry_point,
                               bool synthetic, std::vector<std::string>* warnings,
                               MonitorClock& clock) {
  SessionFacts f;
  f.config = std::move(config);
  f.entry_point = std::move(entry_point);
  f.synthetic = synthetic;
  cupti.GetVersion(&f.cupti_version);
  f.sizes_probed = ProbeRecordSizes(cupti, &f.sizes);
  if (!f.sizes_probed) {
    // The table lets the writer count records and the decoder walk buffers of a 13.0 libcupti;
    // a guessed layout is never used to read pointers (a wrong offset would dereference garbage).
    warnings->push_back(
        "could not probe CUPTI record sizes with cuptiActivityGetNextRecord; the files carry the "
        "CUPTI 13.0 size table, and kernel names and GPU busy time are not captured");
    f.sizes = RecordSizeTable::Cupti13();
  }
  auto matches = [&](uint32_t kind, size_t struct_size) {
    return f.sizes_probed && f.sizes.Size(kind) == struct_size;
  };
  // String pointers and busy-time fields are read at the offsets of the structs this library was
  // compiled with, only when the loaded libcupti's size for the kind matches them.
  if (matches(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10))) {
    f.kernel_name_offset = offsetof(CUpti_ActivityKernel10, name);
  } else if (f.sizes_probed) {
    warnings->push_back(
        "kernel record size differs from CUpti_ActivityKernel10; kernel names are not captured");
  }
  if (matches(CUPTI_ACTIVITY_KIND_MARKER, sizeof(CUpti_ActivityMarker2))) {
    f.marker_name_offset = offsetof(CUpti_ActivityMarker2, name);
    f.marker_domain_offset = offsetof(CUpti_ActivityMarker2, domain);
  }
  std::vector<std::string> unknown_apis;
  ResolveApiFilter(cupti, f.config.api_filter, &f.runtime_filter, &f.driver_filter, &unknown_apis);
  for (const auto& name : unknown_apis)
    warnings->push_back("API filter: no CUDA runtime or driver API is named '" + name +
                        "'; ignored");
  // Kernel fields are read for busy time and by the step watch (CUPMON_AUTO_WINDOW, or armed
  // later over the control socket), so they are known whenever the layout matches.
  if (matches(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, sizeof(CUpti_ActivityKernel10)))
    f.kernel = {offsetof(CUpti_ActivityKernel10, start), offsetof(CUpti_ActivityKernel10, end),
                offsetof(CUpti_ActivityKernel10, deviceId),
                offsetof(CUpti_ActivityKernel10, streamId)};
  // Copies and memsets: busy time (the metrics endpoint) and the step sums (SumsSteps).
  if (!f.config.metrics_address.empty()) f.track_busy = true;
  if (f.track_busy || SumsSteps(f.config)) {
    if (matches(CUPTI_ACTIVITY_KIND_MEMCPY, sizeof(CUpti_ActivityMemcpy6)))
      f.memcpy = {offsetof(CUpti_ActivityMemcpy6, start), offsetof(CUpti_ActivityMemcpy6, end),
                  offsetof(CUpti_ActivityMemcpy6, deviceId),
                  offsetof(CUpti_ActivityMemcpy6, streamId)};
    if (matches(CUPTI_ACTIVITY_KIND_MEMCPY2, sizeof(CUpti_ActivityMemcpyPtoP4)))
      f.memcpy2 = {offsetof(CUpti_ActivityMemcpyPtoP4, start),
                   offsetof(CUpti_ActivityMemcpyPtoP4, end),
                   offsetof(CUpti_ActivityMemcpyPtoP4, deviceId),
                   offsetof(CUpti_ActivityMemcpyPtoP4, streamId)};
    if (matches(CUPTI_ACTIVITY_KIND_MEMSET, sizeof(CUpti_ActivityMemset4)))
      f.memset = {offsetof(CUpti_ActivityMemset4, start), offsetof(CUpti_ActivityMemset4, end),
                  offsetof(CUpti_ActivityMemset4, deviceId),
                  offsetof(CUpti_ActivityMemset4, streamId)};
  }
  // Every kind cupmon records with a time: a buffer holding any other is indexed as not timed.
  auto time_fields = [&](uint32_t kind, size_t struct_size, size_t start, size_t end,
                         size_t correlation) {
    if (matches(kind, struct_size))
      f.time_layout.Set(kind, {static_cast<uint32_t>(start), static_cast<uint32_t>(end),
                               static_cast<uint32_t>(correlation)});
  };
#define CUPMON_TIMED(kind, type, start, end) \
  time_fields(kind, sizeof(type), offsetof(type, start), offsetof(type, end), \
              offsetof(type, correlationId))
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUpti_ActivityKernel10, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_KERNEL, CUpti_ActivityKernel10, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_MEMCPY, CUpti_ActivityMemcpy6, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_MEMCPY2, CUpti_ActivityMemcpyPtoP4, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_MEMSET, CUpti_ActivityMemset4, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_RUNTIME, CUpti_ActivityAPI, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_DRIVER, CUpti_ActivityAPI, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_OVERHEAD, CUpti_ActivityOverhead3, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUpti_ActivitySynchronization2, start, end);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_MEMORY2, CUpti_ActivityMemory4, timestamp, timestamp);
  CUPMON_TIMED(CUPTI_ACTIVITY_KIND_MEMORY_POOL, CUpti_ActivityMemoryPool3, timestamp, timestamp);
#undef CUPMON_TIMED
  if (matches(CUPTI_ACTIVITY_KIND_MARKER, sizeof(CUpti_ActivityMarker2)))
    f.time_layout.Set(CUPTI_ACTIVITY_KIND_MARKER,
                      {static_cast<uint32_t>(offsetof(CUpti_ActivityMarker2, timestamp)),
                       static_cast<uint32_t>(offsetof(CUpti_ActivityMarker2, timestamp)), 0});
  std::random_device rd;
  f.recording_id =
      (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(ClockNs(CLOCK_REALTIME));
  *f.start_calibration.add_samples() = TakeCalibrationSample(cupti, clock);
  f.launcher = ReadLauncherIdentity();
  return f;
}

}  // namespace cupmon
