// WalkCalibration: the wall-clock times of one file's calibration samples, read without decoding
// its records (for a file without a chunk index, whose footer cannot say when its records lie).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cupmon::decoder {

struct CalibrationTimes {
  size_t samples = 0;
  int64_t first_ns = 0, last_ns = 0;  // the earliest and the latest realtime_ns (samples > 0)
  // The longest time from one sample to the next in file order, when that one is later.
  int64_t longest_gap_ns = 0;
};

// Walks the chunk headers of `file` (a whole file's bytes) from its first byte and reads only the
// calibration chunks' payloads. Stops at the first header that is damaged or whose chunk is cut
// short: what follows is left out, so a damaged file gives fewer samples, never wrong ones.
CalibrationTimes WalkCalibration(std::span<const uint8_t> file);

}  // namespace cupmon::decoder
