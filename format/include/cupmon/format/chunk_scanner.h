// Finds and validates the chunks of one cupmon file held in memory, resynchronizing after damage.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cupmon/format/chunk.h"

namespace cupmon {

struct ScannedChunk {
  ChunkHeader header;
  uint64_t offset = 0;  // of the chunk header in the file
  std::span<const uint8_t> payload;
};

struct Damage {
  enum class Kind { kCorrupt, kTruncatedTail };
  Kind kind = Kind::kCorrupt;
  uint64_t offset = 0;         // first byte that could not be used
  uint64_t skipped_bytes = 0;  // bytes skipped until the next good chunk (or the end)
  std::string what;
};

// Walks `file` from its first byte. A chunk is good when its magic, header checksum, length and
// payload checksum all hold and its major version is kFormatMajor. After a bad chunk the scanner
// searches forward for the next good header and reports the skipped range as Damage.
// A chunk with a newer major version is not skipped silently: Next() stops and future_major() says so.
class ChunkScanner {
 public:
  explicit ChunkScanner(std::span<const uint8_t> file) : file_(file) {}
  // Walks `file` from byte `start` on (a chunk boundary a file's index gave): offsets stay those
  // of `file`, and damage is reported from there, as for a walk from the first byte.
  ChunkScanner(std::span<const uint8_t> file, uint64_t start) : file_(file), pos_(start) {}

  // The next good chunk, or nullopt at the end of the file. Damage found on the way is appended.
  std::optional<ScannedChunk> Next(std::vector<Damage>* damage);

  // The footer chunk that ends `file` exactly, found from the end without reading the rest (at
  // most the last `search_bytes` are looked at); nullopt when the file does not end with a good
  // footer (cut by a crash, damaged, or longer than that).
  static std::optional<ScannedChunk> FindFooter(std::span<const uint8_t> file,
                                                uint64_t search_bytes = 64ull << 20);

  // Non-zero when a chunk declared a major version this reader does not know (the file is refused).
  uint8_t future_major() const { return future_major_; }
  uint64_t position() const { return pos_; }

 private:
  enum class Check { kGood, kBad, kTruncated, kFuture };
  Check CheckAt(uint64_t offset, ScannedChunk* chunk, std::string* why) const;

  std::span<const uint8_t> file_;
  uint64_t pos_ = 0;
  uint8_t future_major_ = 0;
};

}  // namespace cupmon
