// Byte-exact encodings of raw CUPTI buffers (plain zstd, per-kind byte columns, word deltas).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon {

// Storage of at least kHugeMappingMin bytes for the decoder's large buffers: an anonymous mapping
// that starts on a 2 MiB boundary and spans whole 2 MiB pages, with transparent huge pages asked
// for (a hint: without THP it is ordinary memory). A malloc'd block of that size starts and ends on
// 4 KiB pages, each faulted in on its own. Throws std::bad_alloc when the mapping fails. Release
// with UnmapHugeBytes(p, bytes), the same `bytes`: it keeps released mappings
// (at most 32, 512 MiB of address space) and MapHugeBytes hands out the smallest that fits, its
// excess unmapped, so memory a decoder frees between ranks is not cleared by the kernel again. The
// bytes of such a mapping are what was last written there. Thread-safe.
// Under AddressSanitizer every allocation stays on its heap, where reads past a buffer's end are
// caught; it does not watch mappings.
#if defined(__SANITIZE_ADDRESS__)
#define CUPMON_HUGE_MAPPINGS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUPMON_HUGE_MAPPINGS 0
#endif
#endif
#ifndef CUPMON_HUGE_MAPPINGS
#define CUPMON_HUGE_MAPPINGS 1
#endif
inline constexpr size_t kHugeMappingMin = CUPMON_HUGE_MAPPINGS ? size_t{2} << 20 : SIZE_MAX;
void* MapHugeBytes(size_t bytes);
// The same, for storage that must start zero-filled (the decoder's correlation table): always a
// fresh mapping, never a kept one, so the kernel clears each page as it is first touched and pages
// never touched cost nothing. Released with UnmapHugeBytes, and then kept like any other.
void* MapZeroedHugeBytes(size_t bytes);
void UnmapHugeBytes(void* p, size_t bytes) noexcept;

// An allocator whose resize leaves new elements default-initialized: for bytes, not written at all.
// std::vector<uint8_t>::resize zeroes what it adds, a memset of each decoded buffer's growth that
// the decoder then overwrites. Allocations of kHugeMappingMin bytes or more are huge-page mappings
// (MapHugeBytes).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) >= kHugeMappingMin) return static_cast<T*>(MapHugeBytes(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kHugeMappingMin) return UnmapHugeBytes(p, n * sizeof(T));
    std::allocator<T>::deallocate(p, n);
  }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Bytes that are written before they are read (a decoded buffer). Growing one does not zero it:
// its new bytes are indeterminate until written.
using ByteBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

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
