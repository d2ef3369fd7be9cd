// Chunk framing: the fixed 32-byte little-endian header in front of every chunk (docs/FORMAT.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cupmon {

inline constexpr uint8_t kFormatMajor = 1;
inline constexpr uint8_t kFormatMinor = 1;  // 1.1: two metadata copies per preamble
inline constexpr uint32_t kChunkMagic = 0x4E4D5043;  // "CPMN" as little-endian bytes
inline constexpr size_t kChunkHeaderSize = 32;
inline constexpr size_t kRawBufferPrefixSize = 16;
// Larger lengths are treated as damage, never allocated.
inline constexpr uint32_t kMaxChunkPayload = 256u << 20;

enum class ChunkType : uint8_t {
  kMetadata = 1,     // pb::RecordingHeader
  kRawBuffer = 2,    // RawBufferPrefix + encoded CUPTI buffer bytes
  kStringTable = 3,  // pb::StringTable
  kWindowMarker = 4, // pb::WindowMarker
  kStats = 5,        // pb::Stats
  kCalibration = 6,  // pb::Calibration
  kFooter = 7,       // pb::Footer
};

enum class Encoding : uint8_t {
  kStored = 0,            // payload bytes as they are
  kZstd = 1,              // one zstd frame
  kColumnsZstd = 2,       // per-kind byte columns, then one zstd frame (raw buffers only)
  kColumnsDeltaZstd = 3,  // per-kind u64-word deltas, byte columns, then zstd (raw buffers only)
};

const char* ChunkTypeName(uint8_t type);
const char* EncodingName(uint8_t encoding);

struct ChunkHeader {
  uint8_t major = kFormatMajor;
  uint8_t minor = kFormatMinor;
  uint8_t type = 0;
  uint8_t encoding = 0;
  uint64_t sequence = 0;
  uint32_t payload_length = 0;
  uint32_t uncompressed_length = 0;
  uint32_t payload_crc = 0;
};

// Serializes `h` (computing the header checksum) into exactly kChunkHeaderSize bytes at `out`.
void EncodeChunkHeader(const ChunkHeader& h, uint8_t* out);

enum class HeaderStatus { kOk, kBadMagic, kBadHeaderCrc };
// Parses a header; checks magic and header checksum only (version policy is the reader's).
HeaderStatus DecodeChunkHeader(const uint8_t* in, ChunkHeader* out);

// The uncompressed prefix of every raw-buffer chunk's payload.
struct RawBufferPrefix {
  uint32_t context_id = 0;
  uint32_t stream_id = 0;
  uint32_t record_count = 0;  // as walked by the writer; kUnknownCount when it could not walk
  uint32_t flags = 0;
  static constexpr uint32_t kUnknownCount = 0xFFFFFFFFu;
};
void EncodeRawBufferPrefix(const RawBufferPrefix& p, uint8_t* out);
RawBufferPrefix DecodeRawBufferPrefix(const uint8_t* in);

// Little-endian helpers (the format is little-endian on every host).
inline void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void PutLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline uint32_t GetLe32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
inline uint64_t GetLe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace cupmon
