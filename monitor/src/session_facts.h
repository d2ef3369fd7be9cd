// SessionFacts: what a monitor learns once at start (CUPTI version, record sizes, field offsets,
// the kinds that CUPTI enabled, the recording id), frozen before any of its threads starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/monitor/config.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"

namespace cupmon {

// Offsets of the fields the monitor reads in records of one kind; 0: the layout of the loaded
// libcupti is not known for that kind, so the field is never read.
struct BusyOffsets {
  uint32_t start = 0, end = 0, device = 0, stream = 0;
};

// The launcher's view of the job, read from the environment once at start: RANK, LOCAL_RANK,
// WORLD_SIZE (torchrun), else SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS; job_id from
// TORCHELASTIC_RUN_ID (unless "none"), else SLURM_JOB_ID. A number is unset when its variable is
// absent or not a non-negative int32. The recording header and the status reply carry it.
struct LauncherIdentity {
  std::optional<int32_t> rank, local_rank, world_size;
  std::string job_id;
};

// Starting thread only (getenv races with a concurrent setenv of the application).
LauncherIdentity ReadLauncherIdentity();

// Threading: built by the session on the starting thread (ProbeSessionFacts, then
// Monitor::Start fills enabled_kinds), then shared read-only by every part of the monitor. Nothing
// writes it after the writer and control threads started.
struct SessionFacts {
  MonitorConfig config;             // normalized
  std::string entry_point;          // "injection", "api", "test-double"
  bool synthetic = false;
  uint32_t cupti_version = 0;
  RecordSizeTable sizes;
  // False when cuptiActivityGetNextRecord could not be probed: `sizes` is then the CUPTI 13.0
  // table, good enough to walk buffers for the decoder's sake but never used to read pointers.
  bool sizes_probed = false;
  // Offsets of string pointers in records of the loaded CUPTI; 0: not read (size mismatch, or the
  // sizes were not probed).
  uint32_t kernel_name_offset = 0;
  uint32_t marker_name_offset = 0;
  uint32_t marker_domain_offset = 0;
  // GPU busy time for the metrics endpoint (only when it is on). `kernel` is filled whenever the
  // layout matches (the step watch reads it too); the others with track_busy or the step sums.
  bool track_busy = false;
  BusyOffsets kernel, memcpy, memcpy2, memset;
  // Timestamp and correlation fields of the kinds whose probed size matches the structs compiled
  // in, for the footer's chunk index (empty when the sizes were not probed).
  RecordTimeLayout time_layout;
  std::vector<uint32_t> enabled_kinds;  // the always-on kinds CUPTI accepted
  std::vector<uint32_t> runtime_filter, driver_filter;
  uint64_t recording_id = 0;
  pb::Calibration start_calibration;
  LauncherIdentity launcher;
};

// Probes the record sizes and fills the offsets, the API filter and the recording id. Warnings
// (size probe failed, unknown API names) go to `warnings`. Starting thread, before any callback is
// registered.
// The start calibration sample is read from `clock`.
SessionFacts ProbeSessionFacts(CuptiApi& cupti, MonitorConfig config, std::string entry_point,
                               bool synthetic, std::vector<std::string>* warnings,
                               MonitorClock& clock = RealClock());

// One {cuptiGetTimestamp, CLOCK_REALTIME midpoint, CLOCK_MONOTONIC} sample. Any thread.
pb::CalibrationSample TakeCalibrationSample(CuptiApi& cupti, MonitorClock& clock = RealClock());
int64_t ClockNs(int clock_id);

// Process facts read from /proc (any thread; small reads, at most 1 MiB).
std::string ReadSmallFile(const char* path);
std::vector<std::string> ProcessCommandLine();

}  // namespace cupmon
