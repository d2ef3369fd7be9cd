// Byte-exact encodings of raw CUPTI buffers (plain zstd, per-kind byte columns, word deltas).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cupmon/format/chunk.h"
#include "cupmon/format/error.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon {

// Reversible transforms used by Encoding::kColumns*: exposed for tests and benchmarks.
// Returns false (and leaves `out` unspecified) when `raw` cannot be walked with `sizes`.
bool ColumnarTransform(std::span<const uint8_t> raw, const RecordSizeTable& sizes, bool delta,
                       std::vector<uint8_t>* out);
// Inverse of ColumnarTransform. Validates every count and length in `in`.
Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, std::vector<uint8_t>* out);

// Compresses raw buffers. Owns a zstd context and scratch space: reuse one per writer thread.
// Not thread-safe.
class RawBufferEncoder {
 public:
  explicit RawBufferEncoder(int zstd_level);
  ~RawBufferEncoder();
  RawBufferEncoder(const RawBufferEncoder&) = delete;
  RawBufferEncoder& operator=(const RawBufferEncoder&) = delete;

  // Replaces `out` with the encoded form of `raw`. Returns the encoding actually used: a buffer that
  // cannot be walked with `sizes` falls back from the columnar encodings to kZstd.
  Expected<Encoding> Encode(std::span<const uint8_t> raw, const RecordSizeTable& sizes,
                            Encoding wanted, std::vector<uint8_t>* out);
  // Compresses arbitrary bytes into one zstd frame (replaces `out`).
  Expected<void> Compress(std::span<const uint8_t> in, std::vector<uint8_t>* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Decompresses chunk payloads. Not thread-safe; one per reader.
class RawBufferDecoder {
 public:
  RawBufferDecoder();
  ~RawBufferDecoder();
  RawBufferDecoder(const RawBufferDecoder&) = delete;
  RawBufferDecoder& operator=(const RawBufferDecoder&) = delete;

  // Replaces `out` with the `uncompressed_length` bytes that `payload` holds in `encoding`.
  // Any mismatch (bad frame, wrong length, bad column header) is an error, never a partial result.
  Expected<void> Decode(uint8_t encoding, std::span<const uint8_t> payload,
                        uint32_t uncompressed_length, std::vector<uint8_t>* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cupmon
