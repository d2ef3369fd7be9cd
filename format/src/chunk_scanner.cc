// ChunkScanner: validation and resynchronization over one file's bytes.
#include "cupmon/format/chunk_scanner.h"

#include <cstring>

#include "cupmon/format/crc32c.h"

namespace cupmon {

std::optional<ScannedChunk> ChunkScanner::FindFooter(std::span<const uint8_t> file,
                                                     uint64_t search_bytes) {
  const ChunkScanner scanner(file);
  const uint64_t size = file.size();
  if (size < kChunkHeaderSize) return std::nullopt;
  const uint64_t lowest = size > search_bytes ? size - search_bytes : 0;
  // Backwards over the magic's first byte: the footer is the last chunk, so the first good
  // header found whose payload ends at the end of the file is it.
  for (uint64_t at = size - kChunkHeaderSize + 1; at-- > lowest;) {
    const void* hit = memrchr(file.data() + lowest, 'C', at + 1 - lowest);
    if (!hit) return std::nullopt;
    at = static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - file.data());
    if (at + kChunkHeaderSize > size || std::memcmp(file.data() + at, "CPMN", 4) != 0) continue;
    if (GetLe32(file.data() + at + 16) != size - at - kChunkHeaderSize) continue;
    ScannedChunk chunk;
    std::string why;
    if (scanner.CheckAt(at, &chunk, &why) != Check::kGood) continue;
    if (chunk.header.type != static_cast<uint8_t>(ChunkType::kFooter)) return std::nullopt;
    return chunk;
  }
  return std::nullopt;
}

ChunkScanner::Check ChunkScanner::CheckAt(uint64_t offset, ScannedChunk* chunk,
                                          std::string* why) const {
  const uint64_t left = file_.size() - offset;
  if (left < kChunkHeaderSize) {
    *why = "incomplete chunk header (" + std::to_string(left) + " of 32 bytes)";
    return Check::kTruncated;
  }
  ChunkHeader h;
  switch (DecodeChunkHeader(file_.data() + offset, &h)) {
    case HeaderStatus::kBadMagic:
      *why = "no chunk magic";
      return Check::kBad;
    case HeaderStatus::kBadHeaderCrc:
      *why = "chunk header checksum mismatch";
      return Check::kBad;
    case HeaderStatus::kOk:
      break;
  }
  if (h.major > kFormatMajor) {
    *why = "format major version " + std::to_string(h.major);
    return Check::kFuture;
  }
  if (h.major != kFormatMajor) {
    *why = "format major version " + std::to_string(h.major) + " is not supported";
    return Check::kBad;
  }
  if (h.payload_length > kMaxChunkPayload) {
    *why = "payload length " + std::to_string(h.payload_length) + " exceeds the format limit";
    return Check::kBad;
  }
  if (h.payload_length > left - kChunkHeaderSize) {
    *why = "chunk payload cut short (" + std::to_string(left - kChunkHeaderSize) + " of " +
           std::to_string(h.payload_length) + " bytes)";
    return Check::kTruncated;
  }
  const uint8_t* payload = file_.data() + offset + kChunkHeaderSize;
  if (Crc32c(payload, h.payload_length) != h.payload_crc) {
    *why = "payload checksum mismatch";
    return Check::kBad;
  }
  chunk->header = h;
  chunk->offset = offset;
  chunk->payload = std::span<const uint8_t>(payload, h.payload_length);
  return Check::kGood;
}

std::optional<ScannedChunk> ChunkScanner::Next(std::vector<Damage>* damage) {
  if (future_major_ || pos_ >= file_.size()) return std::nullopt;
  ScannedChunk chunk;
  std::string why;
  Check c = CheckAt(pos_, &chunk, &why);
  if (c == Check::kGood) {
    pos_ += kChunkHeaderSize + chunk.header.payload_length;
    return chunk;
  }
  if (c == Check::kFuture) {
    future_major_ = file_[pos_ + 4];
    return std::nullopt;
  }
  // Damage: look for the next good chunk after the bad start.
  const uint64_t bad_at = pos_;
  const Damage::Kind first_kind =
      c == Check::kTruncated ? Damage::Kind::kTruncatedTail : Damage::Kind::kCorrupt;
  static constexpr uint8_t kMagicBytes[4] = {'C', 'P', 'M', 'N'};
  uint64_t probe = bad_at + 1;
  while (probe + 4 <= file_.size()) {
    const void* hit = memmem(file_.data() + probe, file_.size() - probe, kMagicBytes, 4);
    if (!hit) break;
    probe = static_cast<uint64_t>(static_cast<const uint8_t*>(hit) - file_.data());
    std::string ignored;
    if (CheckAt(probe, &chunk, &ignored) == Check::kGood) {
      damage->push_back(Damage{Damage::Kind::kCorrupt, bad_at, probe - bad_at, why});
      pos_ = probe + kChunkHeaderSize + chunk.header.payload_length;
      return chunk;
    }
    ++probe;
  }
  damage->push_back(Damage{first_kind, bad_at, file_.size() - bad_at, why});
  pos_ = file_.size();
  return std::nullopt;
}

}  // namespace cupmon
