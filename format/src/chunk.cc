// Chunk header and raw-buffer prefix serialization.
#include "cupmon/format/chunk.h"

#include "cupmon/format/crc32c.h"

namespace cupmon {

const char* ChunkTypeName(uint8_t type) {
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::kMetadata: return "metadata";
    case ChunkType::kRawBuffer: return "raw-buffer";
    case ChunkType::kStringTable: return "string-table";
    case ChunkType::kWindowMarker: return "window-marker";
    case ChunkType::kStats: return "stats";
    case ChunkType::kCalibration: return "calibration";
    case ChunkType::kFooter: return "footer";
  }
  return "unknown";
}

const char* EncodingName(uint8_t encoding) {
  switch (static_cast<Encoding>(encoding)) {
    case Encoding::kStored: return "stored";
    case Encoding::kZstd: return "zstd";
    case Encoding::kColumnsZstd: return "columns+zstd";
    case Encoding::kColumnsDeltaZstd: return "columns+delta+zstd";
  }
  return "unknown";
}

void EncodeChunkHeader(const ChunkHeader& h, uint8_t* out) {
  PutLe32(out + 0, kChunkMagic);
  out[4] = h.major;
  out[5] = h.minor;
  out[6] = h.type;
  out[7] = h.encoding;
  PutLe64(out + 8, h.sequence);
  PutLe32(out + 16, h.payload_length);
  PutLe32(out + 20, h.uncompressed_length);
  PutLe32(out + 24, h.payload_crc);
  PutLe32(out + 28, Crc32c(out, 28));
}

HeaderStatus DecodeChunkHeader(const uint8_t* in, ChunkHeader* out) {
  if (GetLe32(in) != kChunkMagic) return HeaderStatus::kBadMagic;
  if (GetLe32(in + 28) != Crc32c(in, 28)) return HeaderStatus::kBadHeaderCrc;
  out->major = in[4];
  out->minor = in[5];
  out->type = in[6];
  out->encoding = in[7];
  out->sequence = GetLe64(in + 8);
  out->payload_length = GetLe32(in + 16);
  out->uncompressed_length = GetLe32(in + 20);
  out->payload_crc = GetLe32(in + 24);
  return HeaderStatus::kOk;
}

void EncodeRawBufferPrefix(const RawBufferPrefix& p, uint8_t* out) {
  PutLe32(out + 0, p.context_id);
  PutLe32(out + 4, p.stream_id);
  PutLe32(out + 8, p.record_count);
  PutLe32(out + 12, p.flags);
}

RawBufferPrefix DecodeRawBufferPrefix(const uint8_t* in) {
  return RawBufferPrefix{GetLe32(in), GetLe32(in + 4), GetLe32(in + 8), GetLe32(in + 12)};
}

}  // namespace cupmon
