// TraceCounts: what the trace builder counted while it read a recording, for the reports' headers
// and the exit code.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cupmon.pb.h"

namespace cupmon::decoder {

// NVTX (CUPTI MARKER records): ranges paired START to END, marks, and the ones that did not pair.
struct NvtxCounts {
  uint64_t ranges = 0, marks = 0;
  uint64_t range_rows = 0;          // ranges and marks emitted to a sink that wants them
  uint64_t ends_without_start = 0;  // END with an id no START had (or one long forgotten)
  uint64_t unended = 0;             // START with no END by the recording's end (or evicted)
  uint64_t unresolved_names = 0;    // START or mark whose name pointer has no string entry
};

// The calibration samples read.
struct CalibrationCounts {
  uint64_t non_monotonic = 0;
  uint64_t samples = 0;
  // realtime - CUPTI ns over the samples (their spread shows a sample taken badly: later samples
  // of one clock agree within a microsecond).
  int64_t offset_first = 0, offset_min = 0, offset_max = 0;
  uint64_t domain_changes = 0;  // CUPTI's clock switched domain; not a warning
};

// Counters for the reports' headers and the exit code.
struct TraceCounts {
  uint64_t raw_buffers = 0;
  uint64_t records = 0;
  std::map<uint32_t, uint64_t> records_by_kind;
  uint64_t gpu_rows = 0, api_rows = 0;  // emitted (after filters)
  uint64_t sync_rows = 0;               // emitted to a sink that wants synchronization rows
  uint64_t filtered_out = 0;
  uint64_t unknown_timestamps = 0;      // GPU/API records with zero, reversed or >= 2^62 times
  uint64_t unresolved_names = 0;        // kernel name pointers with no string entry
  uint64_t gpu_without_api = 0;         // no API record with its correlation id
  // Of those, inside a trace window and launched before it opened (Row::api.before_window).
  uint64_t launched_before_window = 0;
  uint64_t api_without_gpu = 0;         // launch-like... every API row with no GPU activity
  uint64_t duplicate_api_correlation = 0;  // a second API record with a correlation id already held
  uint64_t out_of_order = 0;            // rows that arrived after later-starting rows were emitted
  uint64_t buffers_stopped = 0;         // buffers cut short (unknown kind/layout)
  uint64_t records_not_decoded = 0;     // sized, but kinds the decoder has no layout for
  std::map<uint32_t, uint64_t> stopped_by_kind;
  uint64_t overhead_ns = 0;
  uint64_t overhead_records = 0;
  uint64_t external_correlations = 0;
  NvtxCounts nvtx;
  uint64_t memory_records = 0, memory_pool_records = 0;  // MEMORY2 and MEMORY_POOL records read
  uint64_t memory_rows = 0;  // emitted to a sink that wants them
  CalibrationCounts calibration;
  bool have_stats = false;
  pb::Stats stats;  // latest Stats (or Footer stats) chunk
  // The latest stats came from the footer of a recording that ended (stop): nothing was written
  // after them, so records in = decoded + lost before disk + deleted by retention must hold.
  bool stats_final = false;
  std::vector<std::string> messages;    // first few descriptions of the above
  // Facts worth one line that are not problems (CUPTI's clock changed domain): "note:", exit 0.
  std::vector<std::string> notes;
  void Note(std::string m) {
    if (messages.size() < 50) messages.push_back(std::move(m));
  }
  // Problems that make the exit code 1.
  bool HasWarnings() const {
    return unknown_timestamps || unresolved_names || nvtx.unresolved_names || buffers_stopped ||
           duplicate_api_correlation ||
           calibration.non_monotonic || stats.dropped_records() || stats.pool_exhausted() ||
           stats.chunks_lost() || stats.lost_records();
  }
};

}  // namespace cupmon::decoder
