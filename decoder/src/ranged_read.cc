// RangePlan (ranged_read.h): a read of the chunks that can hold a time range, through the chunk
// index in each file's footer.
#include "ranged_read.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>

#include <fcntl.h>
#include <unistd.h>

#include "cupmon/format/chunk.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "file_chunk_reader.h"

namespace cupmon::decoder {
namespace {

constexpr uint32_t kKindMarker = 12, kKindMemory2 = 49, kKindMemoryPool = 50;

// a + b, held inside int64_t.
int64_t SaturatingAdd(int64_t a, int64_t b) {
  __extension__ const __int128 s = static_cast<__int128>(a) + b;
  if (s > std::numeric_limits<int64_t>::max()) return std::numeric_limits<int64_t>::max();
  if (s < std::numeric_limits<int64_t>::min()) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(s);
}

}  // namespace

// One raw buffer of an indexed file.
struct RangePlan::Entry {
  bool timed = false;
  bool records_known = false;  // records_at_least was read from the chunk's header
  uint64_t min_ns = 0, max_ns = 0;
  uint32_t min_corr = 0, max_corr = 0;
  uint64_t records_at_least = 0;  // a lower bound of its records, from its decompressed size
  size_t file = 0;
  uint64_t offset = 0;  // of its chunk header in the file
};

// One file's chunks by its index: each chunk's [offset, end) and type, and for raw buffers their
// place in raw_; and the file's mapping, which the read of the file uses too.
struct RangePlan::FileIndex {
  bool indexed = false;
  struct Span {
    uint64_t offset = 0, end = 0;
    uint8_t type = 0;
    size_t raw = 0;  // raw buffers: the entry in raw_
  };
  std::vector<Span> spans;
  uint64_t footer_offset = 0;
  std::optional<MappedFile> mapped;
  // Copies of the small chunks that are not raw buffers (calibration samples, markers, strings,
  // stats), read with pread: thousands of them lie a raw buffer apart, and a page fault for each
  // costs far more than a read. Span i's copy is copies[copy_at[i], copy_at[i + 1]) when
  // copied[i].
  std::vector<uint8_t> copies;
  std::vector<size_t> copy_at;
  std::vector<bool> copied;

  // Copies spans' chunks until `budget` bytes (of the whole plan) are used.
  void CopySmallChunks(const std::string& path, uint64_t* budget);
  // Span i's bytes: its copy, or the mapping's.
  std::span<const uint8_t> Piece(size_t i, std::span<const uint8_t> bytes) const {
    if (copied[i]) return {copies.data() + copy_at[i], copy_at[i + 1] - copy_at[i]};
    return bytes.subspan(spans[i].offset, spans[i].end - spans[i].offset);
  }
};

void RangePlan::FileIndex::CopySmallChunks(const std::string& path, uint64_t* budget) {
  // Chunks of at most kChunkBytes; the rest, and everything when the file cannot be read this
  // way, comes from the mapping. A file's copies are dropped once it is read.
  constexpr uint64_t kChunkBytes = 4096;
  copy_at.assign(spans.size() + 1, 0);
  copied.assign(spans.size(), false);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  constexpr auto kRaw = static_cast<uint8_t>(ChunkType::kRawBuffer);
  for (size_t i = 0; i < spans.size(); ++i) {
    copy_at[i] = copies.size();
    const Span& span = spans[i];
    const uint64_t n = span.end - span.offset;
    if (span.type == kRaw || n > kChunkBytes || n > *budget) continue;
    copies.resize(copies.size() + n);
    const ssize_t got = ::pread(fd, copies.data() + copy_at[i], n, static_cast<off_t>(span.offset));
    if (got == static_cast<ssize_t>(n)) {
      copied[i] = true;
      *budget -= n;
    } else {
      copies.resize(copy_at[i]);
    }
  }
  copy_at[spans.size()] = copies.size();
  ::close(fd);
}

RangePlan::RangePlan(const Recording& recording, const RangedVisitor& visitor)
    : recording_(recording), visitor_(visitor), range_(visitor.Range()) {}

RangePlan::~RangePlan() = default;

bool ReadAllForced() {
  const char* all = std::getenv("CUPMON_READ_ALL");
  return all && std::strcmp(all, "1") == 0;
}

std::unique_ptr<RangePlan> RangePlan::Make(const Recording& recording,
                                           const RangedVisitor& visitor) {
  if (ReadAllForced()) return nullptr;
  const pb::RecordingHeader& h = recording.header;
  if (h.enabled_kinds_size() == 0 || h.record_sizes_size() == 0) return nullptr;
  for (uint32_t k : h.enabled_kinds())
    if (k == kKindMarker || k == kKindMemory2 || k == kKindMemoryPool) return nullptr;
  std::unique_ptr<RangePlan> plan(new RangePlan(recording, visitor));
  for (const auto& s : h.record_sizes())
    plan->max_record_bytes_ = std::max<uint64_t>(plan->max_record_bytes_, s.size());
  if (plan->max_record_bytes_ == 0) return nullptr;

  RawBufferDecoder codec;
  std::vector<uint8_t> scratch;
  std::string why;
  bool any_indexed = false;
  uint64_t copy_budget = 64 << 20;
  plan->files_.resize(recording.files.size());
  for (size_t f = 0; f < recording.files.size(); ++f) {
    auto mapped = MappedFile::Open(recording.files[f].path);
    if (!mapped) continue;  // read whole, which reports it
    const auto bytes = mapped->bytes();
    const auto found = ChunkScanner::FindFooter(bytes);
    if (!found) continue;
    pb::Footer footer;
    if (!ParseChunkPayload(codec, *found, &scratch, &footer, &why)) continue;
    if (!footer.indexed() || footer.index_size() == 0) continue;
    // Trusted only whole: the entries in file order from the first byte, each with room for a
    // chunk header before the next one (its end) or the footer. Chunk headers are checked where
    // chunks are read (FileChunkReader), and a raw buffer's where the margin needs its size.
    FileIndex index;
    std::vector<Entry> raw;
    bool good = footer.index(0).offset() == 0;
    for (int i = 0; good && i < footer.index_size(); ++i) {
      const pb::ChunkSpan& s = footer.index(i);
      const uint64_t end = i + 1 < footer.index_size() ? footer.index(i + 1).offset()
                                                       : found->offset;
      if (s.type() > 0xFF || end < s.offset() || end - s.offset() < kChunkHeaderSize ||
          end > found->offset) {
        good = false;
        break;
      }
      FileIndex::Span span{s.offset(), end, static_cast<uint8_t>(s.type()), 0};
      if (span.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) {
        Entry e;
        e.timed = s.timed();
        e.min_ns = s.min_ns();
        e.max_ns = s.max_ns();
        e.min_corr = s.min_correlation();
        e.max_corr = s.max_correlation();
        e.file = f;
        e.offset = s.offset();
        span.raw = plan->raw_.size() + raw.size();
        raw.push_back(e);
      }
      index.spans.push_back(span);
    }
    if (!good) continue;
    index.indexed = true;
    index.footer_offset = found->offset;
    index.CopySmallChunks(recording.files[f].path, &copy_budget);
    // The clock and the windows the choice maps chunks with. A damaged chunk is left to the read,
    // which reports it.
    for (size_t i = 0; i < index.spans.size(); ++i) {
      const auto& span = index.spans[i];
      const bool calibration = span.type == static_cast<uint8_t>(ChunkType::kCalibration);
      const bool marker = span.type == static_cast<uint8_t>(ChunkType::kWindowMarker);
      if (!calibration && !marker) continue;
      std::vector<Damage> damage;
      ChunkScanner scanner(index.Piece(i, bytes));
      const auto c = scanner.Next(&damage);
      if (!c || c->offset != 0) continue;
      if (calibration) {
        pb::Calibration cal;
        if (ParseChunkPayload(codec, *c, &scratch, &cal, &why)) plan->clock_.Add(cal);
      } else {
        pb::WindowMarker m;
        if (ParseChunkPayload(codec, *c, &scratch, &m, &why)) plan->windows_.OnMarker(m);
      }
    }
    plan->raw_.insert(plan->raw_.end(), raw.begin(), raw.end());
    index.mapped = std::move(*mapped);
    plan->files_[f] = std::move(index);
    any_indexed = true;
  }
  if (!any_indexed) return nullptr;
  return plan;
}

bool RangePlan::indexed(size_t file) const { return file < files_.size() && files_[file].indexed; }

MappedFile* RangePlan::mapped(size_t file) {
  return indexed(file) && files_[file].mapped ? &*files_[file].mapped : nullptr;
}

uint64_t RangePlan::RecordsAtLeast(size_t g) {
  Entry& e = raw_[g];
  if (e.records_known) return e.records_at_least;
  e.records_known = true;
  // A header that is not a good raw buffer's counts 0 records: the margin reaches further back.
  const auto bytes = files_[e.file].mapped->bytes();
  ChunkHeader header;
  if (e.offset + kChunkHeaderSize <= bytes.size() &&
      DecodeChunkHeader(bytes.data() + e.offset, &header) == HeaderStatus::kOk &&
      header.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) {
    const uint64_t body = header.uncompressed_length > kRawBufferPrefixSize
                              ? header.uncompressed_length - kRawBufferPrefixSize
                              : 0;
    e.records_at_least = body / max_record_bytes_;
  }
  return e.records_at_least;
}

void RangePlan::Choose() {
  chosen_ = true;
  if (raw_.empty()) return;
  const bool timed_range = range_.from_wall || range_.to_wall || range_.from_rel || range_.to_rel;
  int64_t from = std::numeric_limits<int64_t>::min(), to = std::numeric_limits<int64_t>::max();
  if (range_.from_rel || range_.to_rel) {
    const int64_t origin = clock_.ToWall(visitor_.TimeOrigin());
    if (range_.from_rel) from = std::max(from, SaturatingAdd(origin, *range_.from_rel));
    if (range_.to_rel) to = std::min(to, SaturatingAdd(origin, *range_.to_rel));
  }
  if (range_.from_wall) from = std::max(from, *range_.from_wall);
  if (range_.to_wall) to = std::min(to, *range_.to_wall);
  from = SaturatingAdd(from, -kSlackNs);
  to = SaturatingAdd(to, kSlackNs);
  uint64_t window_begin = 0, window_end = std::numeric_limits<uint64_t>::max();
  if (range_.window) {
    const auto w = windows_.windows().find(*range_.window);
    if (w == windows_.windows().end()) {
      window_begin = 1;  // no row can pass: no buffer is chosen for the range
      window_end = 0;
    } else {
      window_begin = w->second.begin;
      if (w->second.end) window_end = w->second.end;
    }
  }
  // A window that overlaps the range: its rows' "launched before it opened" comes from its first
  // launch, so the range starts at its begin.
  if (timed_range) {
    const int64_t lo = from;
    for (const auto& [id, w] : windows_.windows()) {
      if (!w.begin) continue;
      const int64_t b = clock_.ToWall(w.begin);
      const int64_t e = w.end ? clock_.ToWall(w.end) : std::numeric_limits<int64_t>::max();
      if (b <= to && e >= lo) from = std::min(from, SaturatingAdd(b, -kSlackNs));
    }
  }
  const auto timed_meets = [&](const Entry& e) {
    if (timed_range) {
      const int64_t a = clock_.ToWall(e.min_ns), b = clock_.ToWall(e.max_ns);
      if (std::max(a, b) < from || std::min(a, b) > to) return false;
    }
    return !range_.window || (e.max_ns >= window_begin && e.min_ns <= window_end);
  };
  std::vector<bool> chosen(raw_.size(), false);
  uint32_t corr_lo = std::numeric_limits<uint32_t>::max(), corr_hi = 0;
  for (size_t g = 0; g < raw_.size(); ++g) {
    const Entry& e = raw_[g];
    if (!e.timed || !timed_meets(e)) continue;
    chosen[g] = true;
    if (e.min_corr) {
      corr_lo = std::min(corr_lo, e.min_corr);
      corr_hi = std::max(corr_hi, e.max_corr);
    }
  }
  // Timed buffers by their lowest correlation id, with the highest id up to each: whether some
  // timed buffer's ids meet [lo, hi].
  std::vector<std::pair<uint32_t, uint32_t>> timed_ids;
  for (const Entry& e : raw_)
    if (e.timed && e.min_corr) timed_ids.emplace_back(e.min_corr, e.max_corr);
  std::sort(timed_ids.begin(), timed_ids.end());
  for (size_t i = 1; i < timed_ids.size(); ++i)
    timed_ids[i].second = std::max(timed_ids[i].second, timed_ids[i - 1].second);
  const auto placed = [&](uint32_t lo, uint32_t hi) {
    auto it = std::upper_bound(timed_ids.begin(), timed_ids.end(),
                               std::make_pair(hi, std::numeric_limits<uint32_t>::max()));
    return it != timed_ids.begin() && std::prev(it)->second >= lo;
  };
  for (size_t g = 0; g < raw_.size(); ++g) {
    const Entry& e = raw_[g];
    if (chosen[g]) continue;
    const bool ids_meet = e.min_corr && corr_lo <= corr_hi && e.max_corr >= corr_lo &&
                          e.min_corr <= corr_hi;
    if (ids_meet) chosen[g] = true;  // launch records, annotations of the chosen buffers
    else if (!e.timed && (!e.min_corr || !placed(e.min_corr, e.max_corr))) chosen[g] = true;
  }
  // A window never closed ends, in the exports, at the recording's last record end (last_ts):
  // read on to the end, and every buffer that can hold an end at or after the start of the
  // buffer that starts last (whose records end no earlier).
  bool open_window = false;
  for (const auto& [id, w] : windows_.windows()) open_window |= w.begin && !(w.end && w.end >= w.begin);
  if (open_window) {
    uint64_t latest_start = 0;
    for (const Entry& e : raw_)
      if (e.timed) latest_start = std::max(latest_start, e.min_ns);
    for (size_t g = 0; g < raw_.size(); ++g)
      if (raw_[g].timed && raw_[g].max_ns >= latest_start) chosen[g] = true;
    chosen.back() = true;
  }
  if (std::find(chosen.begin(), chosen.end(), true) == chosen.end()) return;
  any_ = true;
  const size_t first_g =
      static_cast<size_t>(std::find(chosen.begin(), chosen.end(), true) - chosen.begin());
  last_ = static_cast<size_t>(chosen.rend() - std::find(chosen.rbegin(), chosen.rend(), true)) - 1;
  // The margin: the join's ring is full before the first record of the range, as in a whole read.
  head_ = first_g;
  uint64_t margin = 0;
  while (head_ > 0 && margin < 2 * visitor_.JoinHorizon()) margin += RecordsAtLeast(--head_);
}

bool RangePlan::WantRaw(size_t g) {
  if (!chosen_) {
    // Relative times (of the range, and of the rows text traces print) count from the first
    // valid start in stream order: read up to it.
    if (!visitor_.TimeOrigin()) return true;
    Choose();
    if (any_ && last_ < g) {
      // Everything chosen was read before the origin was known: the tail counts from here.
      tail_started_ = true;
      joined_at_last_ = visitor_.JoinedRecords();
    }
  }
  if (!any_ || g < head_) return false;
  if (g <= last_) return true;
  return !tail_started_ ||
         visitor_.JoinedRecords() - joined_at_last_ <= visitor_.JoinHorizon();
}

bool RangePlan::ReadFile(size_t file, std::span<const uint8_t> bytes, ChunkVisitor& visitor,
                         ReadIntegrity* integrity, const std::function<void(uint64_t)>& consumed) {
  FileIndex& index = files_[file];
  struct DropCopies {  // once the file is read, however the read ends
    FileIndex& index;
    ~DropCopies() {
      std::fill(index.copied.begin(), index.copied.end(), false);
      std::vector<uint8_t>().swap(index.copies);
    }
  } drop{index};
  FileChunkReader reader(bytes, recording_.files[file], visitor, integrity, nullptr, consumed);
  constexpr auto kRaw = static_cast<uint8_t>(ChunkType::kRawBuffer);
  const auto& spans = index.spans;
  for (size_t i = 0; i < spans.size();) {
    const auto& span = spans[i];
    if (span.type != kRaw) {
      if (!reader.ReadOne(span.offset, index.Piece(i, bytes))) return false;
      ++i;
      continue;
    }
    if (!WantRaw(span.raw)) {
      ++integrity->chunks_not_read;
      integrity->bytes_not_read += span.end - span.offset;
      ++i;
      continue;
    }
    // Inside the run, every chunk up to its last raw buffer in this file is read as one scan.
    size_t j = i + 1;
    if (chosen_ && any_ && span.raw >= head_ && span.raw <= last_)
      while (j < spans.size() && (spans[j].type != kRaw || spans[j].raw <= last_)) ++j;
    size_t last_raw = i;
    for (size_t k = i; k < j; ++k)
      if (spans[k].type == kRaw) last_raw = k;
    if (!reader.ReadPiece(span.offset, spans[j - 1].end, j - i > 1 && DecodeThreads() >= 2))
      return !integrity->stopped;  // a future major version: the rest of the file is not read
    if (chosen_ && any_ && spans[last_raw].raw == last_ && !tail_started_) {
      tail_started_ = true;
      joined_at_last_ = visitor_.JoinedRecords();
    }
    i = j;
  }
  if (!reader.ReadOne(index.footer_offset, bytes.subspan(index.footer_offset))) return false;
  return true;
}

}  // namespace cupmon::decoder
