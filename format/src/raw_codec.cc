// Raw-buffer encodings. The columnar transform groups records by kind, optionally replaces each
// 64-bit word by its difference from the same word of the previous record of that kind, and
// stores each byte position as a column. Timestamps, ids and pointers then compress far better.
#include "cupmon/format/raw_codec.h"

#include <zstd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

namespace cupmon {
namespace {

constexpr uint32_t kMaxGroups = 64;
// Larger records are not CUPTI's (the largest 13.0 record is 216 bytes); refusing them keeps the
// inverse's scratch bounded. The transform refuses them too, so the writer falls back to kZstd.
constexpr uint32_t kMaxRecordSize = 4096;

struct Group {
  uint32_t kind = 0;
  uint32_t size = 0;
  uint32_t count = 0;
  size_t column_base = 0;  // offset of this group's columns in the transform output
  size_t first = 0;        // index of this group's first record in the record-offset list
};

inline uint64_t LoadWord(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void StoreWord(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

// Transposes the 8x8 byte matrix held in x[0..7] (row i = word i, column j = byte j of the
// little-endian word, i.e. bits 8j..8j+7): afterwards byte i of x[j] is what byte j of x[i] was.
// Three rounds of block swaps (4x4, 2x2, 1x1 blocks of bytes), all on registers.
[[gnu::always_inline]] inline void SwapBlocks(uint64_t& a, uint64_t& b, int shift, uint64_t mask) {
  const uint64_t t = ((a >> shift) ^ b) & mask;
  a ^= t << shift;
  b ^= t;
}
[[gnu::always_inline]] inline void Transpose8x8(uint64_t x[8]) {
  // Spelled out so that the compiler keeps all eight words in registers.
  constexpr uint64_t k32 = 0x00000000FFFFFFFFull, k16 = 0x0000FFFF0000FFFFull,
                     k8 = 0x00FF00FF00FF00FFull;
  SwapBlocks(x[0], x[4], 32, k32);
  SwapBlocks(x[1], x[5], 32, k32);
  SwapBlocks(x[2], x[6], 32, k32);
  SwapBlocks(x[3], x[7], 32, k32);
  SwapBlocks(x[0], x[2], 16, k16);
  SwapBlocks(x[1], x[3], 16, k16);
  SwapBlocks(x[4], x[6], 16, k16);
  SwapBlocks(x[5], x[7], 16, k16);
  SwapBlocks(x[0], x[1], 8, k8);
  SwapBlocks(x[2], x[3], 8, k8);
  SwapBlocks(x[4], x[5], 8, k8);
  SwapBlocks(x[6], x[7], 8, k8);
}

// Records per tile. A tile's records stay in L1 while its columns are written: for each word,
// 8 columns receive kTile contiguous bytes, so only 8 pages and cache lines are live at a time
// instead of one per byte position (216 for a kernel record), which thrashed the TLB.
constexpr size_t kTile = 64;

// Touches the next tile's records and column segments ahead of use: the columns are up to 216
// streams a group's record count apart, more than hardware prefetchers follow.
// The read/write hint is a template argument: clang requires __builtin_prefetch's to be a
// constant expression (GCC folded the old `write_cols ? 0 : 1`).
template <bool kWriteCols>
inline void PrefetchTileAs(const uint8_t* base, const uint32_t* recs, size_t tile, size_t size,
                           const uint8_t* cols, size_t n) {
  constexpr int kRecs = kWriteCols ? 0 : 1, kCols = kWriteCols ? 1 : 0;
  for (size_t t = 0; t < tile; ++t) {
    const uint8_t* rec = base + recs[t];
    for (size_t b = 0; b < size; b += 64) __builtin_prefetch(rec + b, kRecs);
    __builtin_prefetch(rec + size - 1, kRecs);
  }
  for (size_t b = 0; b < size; ++b) {
    __builtin_prefetch(cols + b * n, kCols);
    __builtin_prefetch(cols + b * n + tile - 1, kCols);
  }
}
inline void PrefetchTile(const uint8_t* base, const uint32_t* recs, size_t tile, size_t size,
                         const uint8_t* cols, size_t n, bool write_cols) {
  if (write_cols)
    PrefetchTileAs<true>(base, recs, tile, size, cols, n);
  else
    PrefetchTileAs<false>(base, recs, tile, size, cols, n);
}

// Scatters the records of one group into its byte columns. `recs[r]` is the r-th record of the
// group in stream order; with `delta`, every whole 64-bit word is replaced by its difference from
// the same word of the group's previous record (the first record is kept as it is).
// Eight records at a time: load one word of each, transpose, store 8 bytes into each of 8 columns.
void ScatterGroup(const uint8_t* raw, const uint32_t* recs, const Group& grp, bool delta,
                  uint8_t* cols) {
  const size_t n = grp.count;
  const size_t size = grp.size;
  const size_t words = size / 8;
  const uint8_t* prev = nullptr;
  size_t r = 0;
  while (r + 8 <= n) {
    const size_t tile = std::min(kTile, (n - r) & ~size_t{7});
    if (r + tile + kTile <= n)
      PrefetchTile(raw, recs + r + tile, kTile, size, cols + r + tile, n, /*write_cols=*/true);
    for (size_t w = 0; w < words; ++w) {
      const uint8_t* before = prev;
      uint8_t* col = cols + 8 * w * n;
      for (size_t t = 0; t < tile; t += 8) {
        const uint32_t* rec = recs + r + t;
        uint64_t x[8];
        #pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) x[i] = LoadWord(raw + rec[i] + 8 * w);
        if (delta) {
          #pragma GCC unroll 8
          for (int i = 7; i > 0; --i) x[i] -= LoadWord(raw + rec[i - 1] + 8 * w);
          if (before) x[0] -= LoadWord(before + 8 * w);
          before = raw + rec[7];
        }
        Transpose8x8(x);
        #pragma GCC unroll 8
        for (size_t j = 0; j < 8; ++j) StoreWord(col + j * n + r + t, x[j]);
      }
    }
    for (size_t b = 8 * words; b < size; ++b) {  // bytes after the last whole word
      for (size_t t = 0; t < tile; ++t) cols[b * n + r + t] = raw[recs[r + t] + b];
    }
    r += tile;
    prev = raw + recs[r - 1];
  }
  for (; r < n; ++r) {
    const uint8_t* rec = raw + recs[r];
    for (size_t w = 0; w < words; ++w) {
      uint64_t v = LoadWord(rec + 8 * w);
      if (delta && prev) v -= LoadWord(prev + 8 * w);
      #pragma GCC unroll 8
      for (size_t j = 0; j < 8; ++j) cols[(8 * w + j) * n + r] = static_cast<uint8_t>(v >> (8 * j));
    }
    for (size_t b = 8 * words; b < size; ++b) cols[b * n + r] = rec[b];
    prev = rec;
  }
}

// Inverse of ScatterGroup: gathers the group's columns back into records at out + recs[r].
// Two passes over slices of kSliceTiles whole tiles, each pass with few sequential streams (a
// direct gather from up to 216 column streams is several times slower): first copy each column's
// kTile-byte segments of the slice into a tile-major scratch (tile after tile, byte position after
// byte position), then transpose each tile's block, which sits in L1, into its records. The
// scratch holds one slice, so it stays in L2.
// Only the whole words whose bit is set in `keep_words` (words from the 64th on always) and the
// bytes after the last whole word are gathered: a word's column bytes and its delta chain depend
// on no other word. With `pack`, a record's gathered words go to its first bytes in ascending
// order, then its tail (ColumnSelection::pack); `recs` then holds the packed records' offsets.
constexpr size_t kSliceTiles = 16;

void GatherGroup(const uint8_t* cols, const uint32_t* recs, const Group& grp, bool delta,
                 uint64_t keep_words, bool pack, uint8_t* out, std::vector<uint8_t>* scratch) {
  const size_t n = grp.count;
  const size_t size = grp.size;
  const size_t words = size / 8;
  std::array<uint16_t, kMaxRecordSize / 8> kept;  // the words to write, ascending
  std::array<uint16_t, kMaxRecordSize / 8> dst;   // where each goes in its record
  size_t n_kept = 0;
  for (size_t w = 0; w < words; ++w) {
    if (!WordSelected(keep_words, static_cast<uint32_t>(w))) continue;
    dst[n_kept] = static_cast<uint16_t>(8 * (pack ? n_kept : w));
    kept[n_kept++] = static_cast<uint16_t>(w);
  }
  const size_t tail = pack ? 8 * n_kept : 8 * words;  // where the bytes after the last word go
  const size_t tiles = n / kTile;
  const size_t block = size * kTile;  // one tile's bytes in the scratch
  if (scratch->size() < kSliceTiles * block) scratch->resize(kSliceTiles * block);
  uint8_t* s = scratch->data();
  const uint8_t* prev = nullptr;
  auto copy_column = [&](size_t b, size_t k0, size_t slice) {
    const uint8_t* col = cols + b * n + k0 * kTile;
    uint8_t* to = s + b * kTile;
    for (size_t k = 0; k < slice; ++k) std::memcpy(to + k * block, col + k * kTile, kTile);
  };
  for (size_t k0 = 0; k0 < tiles; k0 += kSliceTiles) {
    const size_t slice = std::min(kSliceTiles, tiles - k0);
    for (size_t i = 0; i < n_kept; ++i)
      for (size_t b = 8 * size_t{kept[i]}; b < 8 * size_t{kept[i]} + 8; ++b) copy_column(b, k0, slice);
    for (size_t b = 8 * words; b < size; ++b) copy_column(b, k0, slice);
    for (size_t k = 0; k < slice; ++k) {
      const uint8_t* blk = s + k * block;
      const uint32_t* tile_recs = recs + (k0 + k) * kTile;
      for (size_t i = 0; i < n_kept; ++i) {
        const size_t w = kept[i], d = dst[i];
        uint64_t carry = delta && prev ? LoadWord(prev + d) : 0;
        const uint8_t* col = blk + 8 * w * kTile;
        for (size_t t = 0; t < kTile; t += 8) {
          const uint32_t* rec = tile_recs + t;
          uint64_t x[8];
          #pragma GCC unroll 8
          for (size_t j = 0; j < 8; ++j) x[j] = LoadWord(col + j * kTile + t);
          Transpose8x8(x);
          if (delta) {
            x[0] += carry;
            #pragma GCC unroll 8
            for (int r = 1; r < 8; ++r) x[r] += x[r - 1];
            carry = x[7];
          }
          #pragma GCC unroll 8
          for (int r = 0; r < 8; ++r) StoreWord(out + rec[r] + d, x[r]);
        }
      }
      for (size_t b = 8 * words; b < size; ++b) {
        for (size_t t = 0; t < kTile; ++t) out[tile_recs[t] + tail + b - 8 * words] = blk[b * kTile + t];
      }
      prev = out + tile_recs[kTile - 1];
    }
  }
  for (size_t r = tiles * kTile; r < n; ++r) {
    uint8_t* rec = out + recs[r];
    for (size_t i = 0; i < n_kept; ++i) {
      const size_t w = kept[i], d = dst[i];
      uint64_t v = 0;
      #pragma GCC unroll 8
      for (size_t j = 0; j < 8; ++j) v |= uint64_t{cols[(8 * w + j) * n + r]} << (8 * j);
      if (delta && prev) v += LoadWord(prev + d);
      StoreWord(rec + d, v);
    }
    for (size_t b = 8 * words; b < size; ++b) rec[tail + b - 8 * words] = cols[b * n + r];
    prev = rec;
  }
}

}  // namespace

bool ColumnarTransform(std::span<const uint8_t> raw, const RecordSizeTable& sizes, bool delta,
                       std::vector<uint8_t>* out) {
  if (raw.size() > UINT32_MAX) return false;  // record offsets are 32-bit
  std::array<Group, kMaxGroups> groups;
  std::array<int8_t, RecordSizeTable::kMaxKind> group_of;
  group_of.fill(-1);
  uint32_t n_groups = 0;
  // Runs of consecutive records of one group, (group, length).
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  runs.reserve(64);

  size_t off = 0;
  size_t n_records = 0;
  while (off < raw.size()) {
    if (raw.size() - off < 4) return false;
    const uint32_t kind = RecordKindAt(raw.data() + off);
    const uint32_t size = sizes.Size(kind);
    if (size == 0 || size > kMaxRecordSize || size > raw.size() - off) return false;
    int g = group_of[kind];
    if (g < 0) {
      if (n_groups == kMaxGroups) return false;
      g = static_cast<int>(n_groups);
      group_of[kind] = static_cast<int8_t>(g);
      groups[n_groups++] = Group{kind, size, 0, 0, 0};
    }
    ++groups[static_cast<size_t>(g)].count;
    if (!runs.empty() && runs.back().first == static_cast<uint32_t>(g)) {
      ++runs.back().second;
    } else {
      runs.emplace_back(static_cast<uint32_t>(g), 1);
    }
    off += size;
    ++n_records;
  }

  const size_t header = 4 + 12 * size_t{n_groups} + 4 + 8 * runs.size();
  out->resize(header + raw.size());
  uint8_t* o = out->data();
  PutLe32(o, n_groups);
  size_t pos = 4;
  size_t base = header;
  size_t first = 0;
  for (uint32_t g = 0; g < n_groups; ++g) {
    PutLe32(o + pos, groups[g].kind);
    PutLe32(o + pos + 4, groups[g].size);
    PutLe32(o + pos + 8, groups[g].count);
    pos += 12;
    groups[g].column_base = base;
    groups[g].first = first;
    base += size_t{groups[g].size} * groups[g].count;
    first += groups[g].count;
  }
  PutLe32(o + pos, static_cast<uint32_t>(runs.size()));
  pos += 4;
  for (const auto& [g, len] : runs) {
    PutLe32(o + pos, g);
    PutLe32(o + pos + 4, len);
    pos += 8;
  }

  // Each group's record offsets in stream order, group after group (a counting sort of the runs).
  std::vector<uint32_t> recs(n_records);
  std::array<size_t, kMaxGroups> fill{};
  for (uint32_t g = 0; g < n_groups; ++g) fill[g] = groups[g].first;
  off = 0;
  for (const auto& [g, len] : runs) {
    const uint32_t size = groups[g].size;
    for (uint32_t k = 0; k < len; ++k, off += size) recs[fill[g]++] = static_cast<uint32_t>(off);
  }
  for (uint32_t g = 0; g < n_groups; ++g)
    ScatterGroup(raw.data(), recs.data() + groups[g].first, groups[g], delta,
                 o + groups[g].column_base);
  return true;
}

namespace {

template <class Buffer>
Expected<void> InverseInto(std::span<const uint8_t> in, bool delta, Buffer* out,
                           const ColumnSelection* keep, bool* packed_out, size_t* full_size) {
  if (packed_out) *packed_out = false;
  auto bad = [](const std::string& what) { return MakeError("bad column header: " + what); };
  if (in.size() < 4) return bad("shorter than 4 bytes");
  const uint32_t n_groups = GetLe32(in.data());
  if (n_groups > kMaxGroups) return bad("group count " + std::to_string(n_groups));
  size_t pos = 4;
  if (in.size() - pos < 12 * size_t{n_groups} + 4) return bad("truncated group table");
  std::array<Group, kMaxGroups> groups;
  size_t base_total = 0;
  size_t n_records = 0;
  for (uint32_t g = 0; g < n_groups; ++g) {
    groups[g].kind = GetLe32(in.data() + pos);
    groups[g].size = GetLe32(in.data() + pos + 4);
    groups[g].count = GetLe32(in.data() + pos + 8);
    pos += 12;
    if (groups[g].size == 0 || groups[g].size > kMaxRecordSize)
      return bad("record size " + std::to_string(groups[g].size));
    if (groups[g].count > in.size()) return bad("record count " + std::to_string(groups[g].count));
    groups[g].first = n_records;
    n_records += groups[g].count;
    base_total += size_t{groups[g].size} * groups[g].count;
  }
  const uint32_t n_runs = GetLe32(in.data() + pos);
  pos += 4;
  if ((in.size() - pos) / 8 < n_runs) return bad("truncated run table");
  const size_t header = pos + 8 * size_t{n_runs};
  if (in.size() - header != base_total) return bad("column bytes do not match the group table");
  if (base_total > UINT32_MAX) return bad("more than 4 GiB of records");
  size_t base = header;
  for (uint32_t g = 0; g < n_groups; ++g) {
    groups[g].column_base = base;
    base += size_t{groups[g].size} * groups[g].count;
  }
  if (full_size) *full_size = base_total;

  // The partial inverse only when the selection covers every group with the group's size.
  std::array<uint64_t, kMaxGroups> keep_words;
  keep_words.fill(~uint64_t{0});
  bool partial = keep != nullptr;
  for (uint32_t g = 0; g < n_groups && partial; ++g) {
    const uint32_t kind = groups[g].kind;
    partial = kind < keep->kinds.size() && keep->kinds[kind].size == groups[g].size;
    if (partial) keep_words[g] = keep->kinds[kind].words;
  }
  if (!partial) keep_words.fill(~uint64_t{0});
  const bool pack = partial && keep->pack;
  // Each record's size in the output.
  std::array<uint32_t, kMaxGroups> out_size;
  size_t out_total = 0;
  for (uint32_t g = 0; g < n_groups; ++g) {
    out_size[g] = pack ? PackedSize(groups[g].size, keep_words[g]) : groups[g].size;
    out_total += size_t{out_size[g]} * groups[g].count;
  }

  // Where each record goes in the output, per group in stream order; validates the run table.
  // Reused across calls on this thread (every entry is written below before it is read): a fresh
  // zero-filled vector per buffer was an allocation and a memset of 4 bytes a record.
  thread_local std::vector<uint32_t> recs_storage;
  if (recs_storage.size() < n_records) recs_storage.resize(n_records);
  std::span<uint32_t> recs(recs_storage.data(), n_records);
  std::array<size_t, kMaxGroups> fill{};
  for (uint32_t g = 0; g < n_groups; ++g) fill[g] = groups[g].first;
  size_t off = 0, covered = 0;
  for (uint32_t r = 0; r < n_runs; ++r) {
    const uint32_t g = GetLe32(in.data() + pos);
    const uint32_t len = GetLe32(in.data() + pos + 4);
    pos += 8;
    if (g >= n_groups) return bad("run names group " + std::to_string(g));
    const Group& grp = groups[g];
    if (len > grp.first + grp.count - fill[g]) return bad("runs exceed the group's record count");
    const uint32_t step = out_size[g];
    for (uint32_t k = 0; k < len; ++k, off += step) recs[fill[g]++] = static_cast<uint32_t>(off);
    covered += len;
  }
  // Counted in records: a packed size may be 0 (a selection of no word of a tail-less record).
  if (covered != n_records) return bad("runs cover fewer records than the group table");

  out->resize(out_total);
  if (packed_out) *packed_out = pack;
  // Reused across calls on this thread: the tile-major copy is as large as the biggest group.
  thread_local std::vector<uint8_t> scratch;
  for (uint32_t g = 0; g < n_groups; ++g)
    GatherGroup(in.data() + groups[g].column_base, recs.data() + groups[g].first, groups[g], delta,
                keep_words[g], pack, out->data(), &scratch);
  return {};
}

}  // namespace

uint32_t PackedSize(uint32_t size, uint64_t words) {
  uint32_t n = size % 8;
  for (uint32_t w = 0; w < size / 8; ++w) n += WordSelected(words, w) ? 8 : 0;
  return n;
}

uint32_t PackedOffset(uint32_t offset, uint32_t size, uint64_t words) {
  uint32_t before = 0;  // selected whole words before the one holding `offset`
  for (uint32_t w = 0; w < offset / 8 && w < size / 8; ++w) before += WordSelected(words, w);
  return offset >= size / 8 * 8 ? 8 * before + offset - size / 8 * 8 : 8 * before + offset % 8;
}

Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, std::vector<uint8_t>* out,
                               const ColumnSelection* keep, bool* packed) {
  return InverseInto(in, delta, out, keep, packed, nullptr);
}
Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, ByteBuffer* out,
                               const ColumnSelection* keep, bool* packed) {
  return InverseInto(in, delta, out, keep, packed, nullptr);
}

struct RawBufferEncoder::Impl {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  int level;
  std::vector<uint8_t> scratch;
  explicit Impl(int l) : level(l) {}
  ~Impl() { ZSTD_freeCCtx(cctx); }
};

RawBufferEncoder::RawBufferEncoder(int zstd_level) : impl_(std::make_unique<Impl>(zstd_level)) {}
RawBufferEncoder::~RawBufferEncoder() = default;

Expected<void> RawBufferEncoder::Compress(std::span<const uint8_t> in, std::vector<uint8_t>* out) {
  if (!impl_->cctx) return MakeError("zstd: cannot create a compression context");
  out->resize(ZSTD_compressBound(in.size()));
  const size_t n = ZSTD_compressCCtx(impl_->cctx, out->data(), out->size(), in.data(), in.size(),
                                     impl_->level);
  if (ZSTD_isError(n)) return MakeError(std::string("zstd: ") + ZSTD_getErrorName(n));
  out->resize(n);
  return {};
}

Expected<Encoding> RawBufferEncoder::Encode(std::span<const uint8_t> raw,
                                            const RecordSizeTable& sizes, Encoding wanted,
                                            std::vector<uint8_t>* out) {
  switch (wanted) {
    case Encoding::kStored:
      out->assign(raw.begin(), raw.end());
      return Encoding::kStored;
    case Encoding::kZstd:
      break;
    case Encoding::kColumnsZstd:
    case Encoding::kColumnsDeltaZstd: {
      const bool delta = wanted == Encoding::kColumnsDeltaZstd;
      if (ColumnarTransform(raw, sizes, delta, &impl_->scratch)) {
        if (auto r = Compress(impl_->scratch, out); !r) return std::unexpected(r.error());
        return wanted;
      }
      break;  // unknown kind: plain zstd
    }
  }
  if (auto r = Compress(raw, out); !r) return std::unexpected(r.error());
  return Encoding::kZstd;
}

struct RawBufferDecoder::Impl {
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ByteBuffer scratch;  // the columns, all written by zstd before the inverse reads them
  ~Impl() { ZSTD_freeDCtx(dctx); }
};

RawBufferDecoder::RawBufferDecoder() : impl_(std::make_unique<Impl>()) {}
RawBufferDecoder::~RawBufferDecoder() = default;

Expected<void> RawBufferDecoder::Decode(uint8_t encoding, std::span<const uint8_t> payload,
                                        uint32_t uncompressed_length, std::vector<uint8_t>* out,
                                        const ColumnSelection* keep) {
  return DecodeInto(encoding, payload, uncompressed_length, out, keep, nullptr);
}
Expected<void> RawBufferDecoder::Decode(uint8_t encoding, std::span<const uint8_t> payload,
                                        uint32_t uncompressed_length, ByteBuffer* out,
                                        const ColumnSelection* keep, bool* packed) {
  return DecodeInto(encoding, payload, uncompressed_length, out, keep, packed);
}

template <class Buffer>
Expected<void> RawBufferDecoder::DecodeInto(uint8_t encoding, std::span<const uint8_t> payload,
                                            uint32_t uncompressed_length, Buffer* out,
                                            const ColumnSelection* keep, bool* packed) {
  if (packed) *packed = false;
  if (!impl_->dctx) return MakeError("zstd: cannot create a decompression context");
  auto unzstd = [&](auto* dst, size_t expected) -> Expected<void> {
    const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (content == ZSTD_CONTENTSIZE_ERROR) return MakeError("not a zstd frame");
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && expected != SIZE_MAX && content != expected)
      return MakeError("zstd frame holds " + std::to_string(content) + " bytes, header says " +
                       std::to_string(expected));
    if (content == ZSTD_CONTENTSIZE_UNKNOWN || content > kMaxChunkPayload)
      return MakeError("zstd frame content size is missing or too large");
    if (dst->capacity() < content) {
      // Growing by resize would first copy the old bytes, all overwritten below (a ByteBuffer
      // copies them one at a time). Twice the old capacity: buffers that grow chunk after
      // slightly larger chunk are not mapped anew each time.
      dst->clear();
      dst->reserve(std::max<size_t>(content, 2 * dst->capacity()));
    }
    dst->resize(content);
    const size_t n = ZSTD_decompressDCtx(impl_->dctx, dst->data(), dst->size(), payload.data(),
                                         payload.size());
    if (ZSTD_isError(n)) return MakeError(std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != content) return MakeError("zstd frame decompressed to fewer bytes than it declares");
    return {};
  };
  switch (static_cast<Encoding>(encoding)) {
    case Encoding::kStored:
      if (payload.size() != uncompressed_length)
        return MakeError("stored payload length differs from the header's uncompressed length");
      out->assign(payload.begin(), payload.end());
      return {};
    case Encoding::kZstd:
      return unzstd(out, uncompressed_length);
    case Encoding::kColumnsZstd:
    case Encoding::kColumnsDeltaZstd: {
      if (auto r = unzstd(&impl_->scratch, SIZE_MAX); !r) return r;
      size_t full_size = 0;
      bool was_packed = false;
      if (auto r = InverseInto(std::span<const uint8_t>(impl_->scratch),
                               encoding == static_cast<uint8_t>(Encoding::kColumnsDeltaZstd), out,
                               keep, &was_packed, &full_size);
          !r)
        return r;
      if (full_size != uncompressed_length)
        return MakeError("columns decode to " + std::to_string(full_size) +
                         " bytes, header says " + std::to_string(uncompressed_length));
      if (packed) *packed = was_packed;
      return {};
    }
  }
  return MakeError("unknown encoding " + std::to_string(encoding));
}

}  // namespace cupmon
