// Test helper: reads a monitor's output directory back with ChunkScanner + RawBufferDecoder and
// counts records per kind, resolving kernel names through the string-table chunks.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cupmon.pb.h"

namespace cupmon::testing {

struct ReadBack {
  size_t files = 0;
  size_t damage = 0;             // damaged ranges other than a truncated tail
  size_t truncated_tails = 0;
  uint64_t records = 0;
  std::map<uint32_t, uint64_t> records_by_kind;
  std::map<std::string, uint64_t> kernels_by_name;
  uint64_t kernels_without_name = 0;
  uint64_t decode_errors = 0;
  bool have_footer_ended = false;
  pb::Stats last_stats;          // from the last stats or footer chunk
  pb::RecordingHeader header;    // of the first file
  uint64_t calibration_chunks = 0;
  // Records of kind 1 (memcpy) by copyKind, and memcpy bytes summed.
  std::map<uint32_t, uint64_t> memcpy_by_copy_kind;
  uint64_t memcpy_bytes = 0;
  uint64_t memset_bytes = 0;
};

// Reads every *.cupmon file in `dir` in name order.
ReadBack ReadRecording(const std::string& dir);

}  // namespace cupmon::testing
