// The options every command that reads recordings takes (filters, which recordings, how they are
// read); each command's own options struct holds one, beside its own choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

struct RankReadOptions {
  TraceFilter filter;
  std::optional<uint32_t> pid;  // only the recording of this process
  size_t horizon = 1 << 16;  // join horizon in records (see TraceBuilder)
  // Search the given directories' subdirectories at any depth, not only one level down.
  bool recursive = false;
  // Ranks read at once where the command reads several (RankJobs; 0 chooses).
  size_t jobs = 0;
  // Text reports show kernels by their full demangled names, not the short form.
  bool full_names = false;
};

}  // namespace cupmon::decoder
