// Raw-buffer encodings. The columnar transform groups records by kind, optionally replaces each
// 64-bit word by its difference from the same word of the previous record of that kind, and
// stores each byte position as a column. Timestamps, ids and pointers then compress far better.
#include "cupmon/format/raw_codec.h"

#include <zstd.h>

#include <array>
#include <cstring>
#include <string>

namespace cupmon {
namespace {

constexpr uint32_t kMaxGroups = 64;

struct Group {
  uint32_t kind = 0;
  uint32_t size = 0;
  uint32_t count = 0;
  size_t column_base = 0;  // offset of this group's columns in the transform output
};

inline uint64_t LoadWord(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void StoreWord(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }

}  // namespace

bool ColumnarTransform(std::span<const uint8_t> raw, const RecordSizeTable& sizes, bool delta,
                       std::vector<uint8_t>* out) {
  std::array<Group, kMaxGroups> groups;
  std::array<int8_t, RecordSizeTable::kMaxKind> group_of;
  group_of.fill(-1);
  uint32_t n_groups = 0;
  // Runs of consecutive records of one group, (group, length).
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  runs.reserve(64);

  size_t off = 0;
  while (off < raw.size()) {
    if (raw.size() - off < 4) return false;
    const uint32_t kind = RecordKindAt(raw.data() + off);
    const uint32_t size = sizes.Size(kind);
    if (size == 0 || size > raw.size() - off) return false;
    int g = group_of[kind];
    if (g < 0) {
      if (n_groups == kMaxGroups) return false;
      g = static_cast<int>(n_groups);
      group_of[kind] = static_cast<int8_t>(g);
      groups[n_groups++] = Group{kind, size, 0, 0};
    }
    ++groups[static_cast<size_t>(g)].count;
    if (!runs.empty() && runs.back().first == static_cast<uint32_t>(g)) {
      ++runs.back().second;
    } else {
      runs.emplace_back(static_cast<uint32_t>(g), 1);
    }
    off += size;
  }

  const size_t header = 4 + 12 * size_t{n_groups} + 4 + 8 * runs.size();
  out->resize(header + raw.size());
  uint8_t* o = out->data();
  PutLe32(o, n_groups);
  size_t pos = 4;
  size_t base = header;
  for (uint32_t g = 0; g < n_groups; ++g) {
    PutLe32(o + pos, groups[g].kind);
    PutLe32(o + pos + 4, groups[g].size);
    PutLe32(o + pos + 8, groups[g].count);
    pos += 12;
    groups[g].column_base = base;
    base += size_t{groups[g].size} * groups[g].count;
  }
  PutLe32(o + pos, static_cast<uint32_t>(runs.size()));
  pos += 4;
  for (const auto& [g, len] : runs) {
    PutLe32(o + pos, g);
    PutLe32(o + pos + 4, len);
    pos += 8;
  }

  std::array<uint32_t, kMaxGroups> index{};
  std::array<const uint8_t*, kMaxGroups> prev{};
  alignas(8) uint8_t tmp[4096];
  off = 0;
  for (const auto& [g, len] : runs) {
    Group& grp = groups[g];
    const size_t words = delta ? grp.size / 8 : 0;
    for (uint32_t r = 0; r < len; ++r) {
      const uint8_t* rec = raw.data() + off;
      const uint8_t* src = rec;
      if (words && prev[g] && grp.size <= sizeof(tmp)) {
        std::memcpy(tmp, rec, grp.size);
        for (size_t w = 0; w < words; ++w)
          StoreWord(tmp + 8 * w, LoadWord(rec + 8 * w) - LoadWord(prev[g] + 8 * w));
        src = tmp;
      }
      uint8_t* col = o + grp.column_base + index[g];
      for (uint32_t b = 0; b < grp.size; ++b) col[size_t{b} * grp.count] = src[b];
      prev[g] = rec;
      ++index[g];
      off += grp.size;
    }
  }
  return true;
}

Expected<void> ColumnarInverse(std::span<const uint8_t> in, bool delta, std::vector<uint8_t>* out) {
  auto bad = [](const std::string& what) { return MakeError("bad column header: " + what); };
  if (in.size() < 4) return bad("shorter than 4 bytes");
  const uint32_t n_groups = GetLe32(in.data());
  if (n_groups > kMaxGroups) return bad("group count " + std::to_string(n_groups));
  size_t pos = 4;
  if (in.size() - pos < 12 * size_t{n_groups} + 4) return bad("truncated group table");
  std::array<Group, kMaxGroups> groups;
  size_t base_total = 0;
  for (uint32_t g = 0; g < n_groups; ++g) {
    groups[g].kind = GetLe32(in.data() + pos);
    groups[g].size = GetLe32(in.data() + pos + 4);
    groups[g].count = GetLe32(in.data() + pos + 8);
    pos += 12;
    if (groups[g].size == 0 || groups[g].size > 4096)
      return bad("record size " + std::to_string(groups[g].size));
    if (groups[g].count > in.size()) return bad("record count " + std::to_string(groups[g].count));
    base_total += size_t{groups[g].size} * groups[g].count;
  }
  const uint32_t n_runs = GetLe32(in.data() + pos);
  pos += 4;
  if ((in.size() - pos) / 8 < n_runs) return bad("truncated run table");
  const size_t header = pos + 8 * size_t{n_runs};
  if (in.size() - header != base_total) return bad("column bytes do not match the group table");
  size_t base = header;
  for (uint32_t g = 0; g < n_groups; ++g) {
    groups[g].column_base = base;
    base += size_t{groups[g].size} * groups[g].count;
  }

  out->resize(base_total);
  uint8_t* o = out->data();
  std::array<uint32_t, kMaxGroups> index{};
  std::array<const uint8_t*, kMaxGroups> prev{};
  size_t off = 0;
  for (uint32_t r = 0; r < n_runs; ++r) {
    const uint32_t g = GetLe32(in.data() + pos);
    const uint32_t len = GetLe32(in.data() + pos + 4);
    pos += 8;
    if (g >= n_groups) return bad("run names group " + std::to_string(g));
    Group& grp = groups[g];
    if (len > grp.count - index[g]) return bad("runs exceed the group's record count");
    for (uint32_t k = 0; k < len; ++k) {
      uint8_t* rec = o + off;
      const uint8_t* col = in.data() + grp.column_base + index[g];
      for (uint32_t b = 0; b < grp.size; ++b) rec[b] = col[size_t{b} * grp.count];
      if (delta && prev[g]) {
        for (size_t w = 0; w < grp.size / 8; ++w)
          StoreWord(rec + 8 * w, LoadWord(rec + 8 * w) + LoadWord(prev[g] + 8 * w));
      }
      prev[g] = rec;
      ++index[g];
      off += grp.size;
    }
  }
  if (off != base_total) return bad("runs cover fewer records than the group table");
  return {};
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
  std::vector<uint8_t> scratch;
  ~Impl() { ZSTD_freeDCtx(dctx); }
};

RawBufferDecoder::RawBufferDecoder() : impl_(std::make_unique<Impl>()) {}
RawBufferDecoder::~RawBufferDecoder() = default;

Expected<void> RawBufferDecoder::Decode(uint8_t encoding, std::span<const uint8_t> payload,
                                        uint32_t uncompressed_length, std::vector<uint8_t>* out) {
  if (!impl_->dctx) return MakeError("zstd: cannot create a decompression context");
  auto unzstd = [&](std::vector<uint8_t>* dst, size_t expected) -> Expected<void> {
    const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (content == ZSTD_CONTENTSIZE_ERROR) return MakeError("not a zstd frame");
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && expected != SIZE_MAX && content != expected)
      return MakeError("zstd frame holds " + std::to_string(content) + " bytes, header says " +
                       std::to_string(expected));
    if (content == ZSTD_CONTENTSIZE_UNKNOWN || content > kMaxChunkPayload)
      return MakeError("zstd frame content size is missing or too large");
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
      if (auto r = ColumnarInverse(impl_->scratch,
                                   encoding == static_cast<uint8_t>(Encoding::kColumnsDeltaZstd),
                                   out);
          !r)
        return r;
      if (out->size() != uncompressed_length)
        return MakeError("columns decode to " + std::to_string(out->size()) +
                         " bytes, header says " + std::to_string(uncompressed_length));
      return {};
    }
  }
  return MakeError("unknown encoding " + std::to_string(encoding));
}

}  // namespace cupmon
