// TraceFilter: which rows a trace builder hands its sink, and how they read; the commands' read
// options hold one (commands.h), the builder applies it (trace_builder.h).
#pragma once

#include <cstdint>
#include <optional>
#include <regex>

#include "cupmon/decoder/row.h"

namespace cupmon::decoder {

// Which rows reach the sink (all unset: every row).
struct TraceFilter {
  std::optional<uint32_t> window;
  std::optional<int64_t> from_wall, to_wall;   // absolute wall-clock ns
  std::optional<int64_t> from_rel, to_rel;     // ns relative to the recording's first timestamp
  std::optional<uint32_t> device, stream;
  // Searched in Row::name: the full demangled name (raw when `mangled`), not the short form the
  // text reports show (ShortKernelName), so patterns with template arguments keep working.
  std::optional<std::regex> kernel;
  bool mangled = false;
  // Like `mangled`, how rows read rather than which are kept: the NVTX ranges that label GPU rows
  // (Row::range). kProcess (the default) adds the process-wide projection to the thread's own.
  NvtxScope nvtx_scope = NvtxScope::kProcess;
  // Rows' wall_* times are the CUPTI times as recorded: the recording's calibration is read but
  // not applied (`--clock cupti`). A figure computed from an export so made is in the time base of
  // `steps`' busy and gap figures (tests/decoder/figures_reference.py).
  bool cupti_clock = false;

  // A filter on time: by window, or from/to in wall-clock or relative time.
  bool timed() const { return window || from_wall || to_wall || from_rel || to_rel; }
};

}  // namespace cupmon::decoder
