// `cupmon-decode info --quick`: what the files' footers alone say about a recording, without
// reading its chunks (docs/DECODER.md, "Quick info"; the footer: docs/FORMAT.md, "Chunk index").
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

struct QuickFile {
  std::string path;
  uint64_t bytes = 0;
  bool footer = false;     // ends with a good footer chunk
  std::string no_footer;   // why not, when it does not (cut, damaged, unreadable)
  bool ended = false;      // the footer's recording_ended
  bool indexed = false;    // the footer's chunk index lists every chunk
  uint64_t chunks = 0;     // from the footer
  uint64_t records = 0;    // from the footer
  uint64_t raw_chunks = 0, untimed_raw_chunks = 0;  // from the index
  uint64_t min_ns = 0, max_ns = 0;  // CUPTI time of the timed raw chunks (0: none)
};

struct QuickRecording {
  const Recording* recording = nullptr;
  std::vector<QuickFile> files;
  // The stats of the last file with a footer, and whether any file had one.
  pb::Stats stats;
  bool have_stats = false;
  // Wall-clock bounds of the indexed records (0: not known), from the footers' calibration.
  int64_t first_wall_ns = 0, last_wall_ns = 0;
};

// Reads only the end of each file of `recording` (mapped; the pages of the footer are touched).
QuickRecording ReadQuick(const Recording& recording);

// The text `info --quick` prints for `recordings`, ending with the lines plain `info` has and this
// leaves out.
void PrintQuickInfo(const std::vector<QuickRecording>& recordings, std::ostream& out);

}  // namespace cupmon::decoder
