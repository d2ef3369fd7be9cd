// Byte-exact encodings of raw CUPTI buffers (plain zstd, per-kind byte columns, word deltas).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/base/huge_pages.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon {

// Reversible transforms used by Encoding::kColumns*: exposed for tests and benchmarks.
// Returns false (and leaves `out` unspecified) when `raw` cannot be walked with `sizes`.
bool ColumnarTransform(std::span<const uint8_t> raw, const RecordSizeTable& sizes, bool delta,
                       std::vector<uint8_t>* out);

// The 64-bit words of each kind's records that a reader looks at, for a partial inverse. Bit w of
// `words` stands for bytes 8w..8w+7 of a record of `size` bytes. A kind with size 0 is not listed.
struct ColumnSelection {
  struct Kind {
    uint32_t size = 0;
    uint64_t words = 0;
    bool operator==(const Kind&) const = default;
  };
  std::array<Kind, RecordSizeTable::kMaxKind> kinds{};
  // Packed output: each record becomes its selected words in ascending order followed by the bytes
  // after its last whole word (PackedSize bytes), records back to back in stream order, instead of
  // the selected words in place in a buffer of the full size. Fewer bytes for the inverse to write
  // and a reader to read (8 of a kernel record's 27 words for `summary`).
  bool pack = false;
  bool operator==(const ColumnSelection&) const = default;
};

// Whether word w of a record is written under `words` (words from the 64th on always are).
inline bool WordSelected(uint64_t words, uint32_t w) { return w >= 64 || (words >> w & 1); }
// A record of `size` bytes packed with `words`: 8 bytes per selected whole word, then the bytes
// after the last whole word.
uint32_t PackedSize(uint32_t size, uint64_t words);
// Where byte `offset` of such a record lands when packed. Only for a byte of a selected word or
// of the tail after the last whole word.
uint32_t PackedOffset(uint32_t offset, uint32_t size, uint64_t words);

// Inverse of ColumnarTransform. Validates every count and length in `in`.
// With `keep`, when every column group's kind is listed in it with the group's record size, only
// the listed words of each record are written (the bytes after a record's last whole word, and
// words from the 64th on, always are); the other bytes of `out` are left as they were (stale or
// zero). Any group that is not listed, or listed with another size, gives the full inverse. The
// columns of each word are independent (deltas run word by word), so a written word is always
// the word the full inverse writes.
// A ByteBuffer's bytes outside the selection are indeterminate when it grew.
// With keep->pack, when the selection applies, `out` holds the packed records instead (see
// ColumnSelection::pack) and `*packed` (when given) is set to true; otherwise it is set to false.
Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, std::vector<uint8_t>* out,
                               const ColumnSelection* keep = nullptr, bool* packed = nullptr);
Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, ByteBuffer* out,
                               const ColumnSelection* keep = nullptr, bool* packed = nullptr);

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
  // `keep`: for the columnar encodings, the words of each record the caller reads (see
  // ColumnarInverse); the other bytes of `out` are then unspecified. Ignored by other encodings.
  Expected<void> Decode(uint8_t encoding, std::span<const uint8_t> payload,
                        uint32_t uncompressed_length, std::vector<uint8_t>* out,
                        const ColumnSelection* keep = nullptr);
  // `packed`: set to whether `out` holds packed records (keep->pack, a columnar encoding, and the
  // selection applied: ColumnarInverse); `uncompressed_length` is then the unpacked size.
  Expected<void> Decode(uint8_t encoding, std::span<const uint8_t> payload,
                        uint32_t uncompressed_length, ByteBuffer* out,
                        const ColumnSelection* keep = nullptr, bool* packed = nullptr);

 private:
  template <class Buffer>
  Expected<void> DecodeInto(uint8_t encoding, std::span<const uint8_t> payload,
                            uint32_t uncompressed_length, Buffer* out, const ColumnSelection* keep,
                            bool* packed);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cupmon
