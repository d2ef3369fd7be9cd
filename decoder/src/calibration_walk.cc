// WalkCalibration (calibration_walk.h): a walk over chunk headers that reads calibration chunks.
#include "calibration_walk.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "file_chunk_reader.h"

namespace cupmon::decoder {

CalibrationTimes WalkCalibration(std::span<const uint8_t> file) {
  CalibrationTimes t;
  RawBufferDecoder codec;
  std::vector<uint8_t> scratch;
  std::vector<Damage> damage;
  std::string why;
  int64_t previous = 0;
  uint64_t at = 0;
  while (file.size() - at >= kChunkHeaderSize) {
    ChunkHeader h;
    if (DecodeChunkHeader(file.data() + at, &h) != HeaderStatus::kOk) break;
    if (h.payload_length > kMaxChunkPayload ||
        h.payload_length > file.size() - at - kChunkHeaderSize)
      break;
    if (h.type == static_cast<uint8_t>(ChunkType::kCalibration)) {
      // The payload's checksum and encoding are checked as a read checks them.
      ChunkScanner scanner(file, at);
      const auto chunk = scanner.Next(&damage);
      pb::Calibration c;
      if (!chunk || chunk->offset != at || !ParseChunkPayload(codec, *chunk, &scratch, &c, &why))
        break;
      for (const pb::CalibrationSample& s : c.samples()) {
        const int64_t ns = s.realtime_ns();
        if (ns <= 0) continue;
        t.first_ns = t.samples ? std::min(t.first_ns, ns) : ns;
        t.last_ns = t.samples ? std::max(t.last_ns, ns) : ns;
        if (t.samples) t.longest_gap_ns = std::max(t.longest_gap_ns, ns - previous);
        previous = ns;
        ++t.samples;
      }
    }
    at += kChunkHeaderSize + h.payload_length;
  }
  return t;
}

}  // namespace cupmon::decoder
