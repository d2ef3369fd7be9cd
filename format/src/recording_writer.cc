// RecordingWriter: framing, encodings, per-file preamble and footer, counters.
#include "cupmon/format/recording_writer.h"

#include <time.h>

#include <algorithm>

#include "cupmon/format/crc32c.h"

namespace cupmon {
namespace {

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

constexpr size_t kCompressMessagesAbove = 4096;

bool IsGpuActivity(uint32_t kind) {
  return kind == 1 || kind == 2 || kind == 3 || kind == 10 || kind == 22;
}

// Adds `n` to the entry for `kind` in a repeated KindCount field kept in ascending kind order.
void AddKindCount(google::protobuf::RepeatedPtrField<pb::KindCount>* counts, uint32_t kind,
                  uint64_t n) {
  int at = 0;
  while (at < counts->size() && counts->Get(at).kind() < kind) ++at;
  if (at < counts->size() && counts->Get(at).kind() == kind) {
    counts->Mutable(at)->set_count(counts->Get(at).count() + n);
    return;
  }
  pb::KindCount* added = counts->Add();
  added->set_kind(kind);
  added->set_count(n);
  for (int i = counts->size() - 1; i > at; --i) counts->SwapElements(i, i - 1);
}

}  // namespace

RecordingWriter::RecordingWriter(RecordingWriterOptions options, pb::RecordingHeader header,
                                 FileSystem& fs, RollingFileSink::Clock clock)
    : options_(std::move(options)),
      header_(std::move(header)),
      sink_(options_.files, fs, clock ? std::move(clock) : RollingFileSink::Clock(MonotonicNs),
            [this](uint32_t index) { return Preamble(index); }),
      encoder_(options_.zstd_level) {
  header_.set_format_major(kFormatMajor);
  header_.set_format_minor(kFormatMinor);
  for (const auto& rs : header_.record_sizes()) sizes_.Set(rs.kind(), rs.size());
}

RecordingWriter::~RecordingWriter() {
  if (!closed_) Close(RealtimeNs());
}

Expected<void> RecordingWriter::Open() {
  auto r = sink_.Open();
  if (!r) Fail(r.error());
  return r;
}

void RecordingWriter::Fail(const Error& e) {
  stats_.set_write_errors(stats_.write_errors() + 1);
  last_error_ = e.message;
}

void RecordingWriter::Frame(ChunkType type, Encoding encoding, std::span<const uint8_t> payload,
                            uint32_t uncompressed_length, std::vector<uint8_t>* out) {
  ChunkHeader h;
  h.type = static_cast<uint8_t>(type);
  h.encoding = static_cast<uint8_t>(encoding);
  h.sequence = 0;  // stamped by Stamp() when the chunk's place in the stream is final
  h.payload_length = static_cast<uint32_t>(payload.size());
  h.uncompressed_length = uncompressed_length;
  h.payload_crc = Crc32c(payload.data(), payload.size());
  const size_t at = out->size();
  out->resize(at + kChunkHeaderSize + payload.size());
  EncodeChunkHeader(h, out->data() + at);
  std::copy(payload.begin(), payload.end(), out->begin() + static_cast<ptrdiff_t>(at + kChunkHeaderSize));
}

void RecordingWriter::Stamp(uint8_t* header) {
  // Sequence numbers follow the order of bytes on disk: a rotation between framing and writing
  // puts the next file's preamble first, so the number is assigned only now.
  PutLe64(header + 8, sequence_++);
  PutLe32(header + 28, Crc32c(header, 28));
}

void RecordingWriter::FrameMessage(ChunkType type, const google::protobuf::MessageLite& msg,
                                   std::vector<uint8_t>* out) {
  serialized_.clear();
  msg.SerializeToString(&serialized_);
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(serialized_.data()),
                                 serialized_.size());
  if (bytes.size() > kCompressMessagesAbove && encoder_.Compress(bytes, &encoded_)) {
    Frame(type, Encoding::kZstd, encoded_, static_cast<uint32_t>(bytes.size()), out);
  } else {
    Frame(type, Encoding::kStored, bytes, static_cast<uint32_t>(bytes.size()), out);
  }
}

std::vector<uint8_t> RecordingWriter::Preamble(uint32_t file_index) {
  // Retention has just run for this new file: its first stats chunk accounts for the deletions.
  AccountRetired();
  header_.set_file_index(file_index);
  header_.set_file_created_unix_ns(RealtimeNs());
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kMetadata, header_, &out);
  chunks_in_file_ = 2;
  index_.clear();
  indexed_ = true;
  if (strings_.entries_size() > 0) {
    FrameMessage(ChunkType::kStringTable, strings_, &out);
    ++chunks_in_file_;
  }
  FrameMessage(ChunkType::kStats, stats_, &out);
  // Format 1.1: the metadata chunk again, so one damaged byte in either copy leaves the file
  // decodable on its own (docs/FORMAT.md section 6). It goes after the string table and stats
  // rather than next to the first copy so that a short burst of damage is less likely to take
  // both; it still comes before any raw buffer, which needs its record-size table.
  FrameMessage(ChunkType::kMetadata, header_, &out);
  ++chunks_in_file_;
  // The last calibration samples written before this file: with retention, the oldest file left
  // maps its first records between samples instead of extrapolating from a later one.
  if (recent_calibration_.samples_size() > 0) {
    FrameMessage(ChunkType::kCalibration, recent_calibration_, &out);
    ++chunks_in_file_;
  }
  StampAll(&out);
  Index(out, 0, nullptr);
  return out;
}

void RecordingWriter::Index(std::span<const uint8_t> bytes, uint64_t offset,
                            const pb::ChunkSpan* span) {
  size_t at = 0;
  while (indexed_ && at + kChunkHeaderSize <= bytes.size()) {
    if (index_.size() >= options_.max_indexed_chunks) {
      indexed_ = false;
      std::vector<pb::ChunkSpan>().swap(index_);
      return;
    }
    pb::ChunkSpan& e = index_.emplace_back();
    if (span) e = *span;
    e.set_offset(offset + at);
    e.set_type(bytes[at + 6]);
    at += kChunkHeaderSize + GetLe32(bytes.data() + at + 16);
  }
}

void RecordingWriter::StampAll(std::vector<uint8_t>* chunks) {
  size_t at = 0;
  while (at + kChunkHeaderSize <= chunks->size()) {
    Stamp(chunks->data() + at);
    at += kChunkHeaderSize + GetLe32(chunks->data() + at + 16);
  }
}

std::vector<uint8_t> RecordingWriter::Footer(bool ended) {
  pb::Footer footer;
  footer.set_chunks(chunks_in_file_);
  footer.set_records(sink_.current_records());
  footer.set_recording_ended(ended);
  *footer.mutable_stats() = stats_;
  footer.set_indexed(indexed_);
  for (const pb::ChunkSpan& e : index_) *footer.add_index() = e;
  if (recent_calibration_.samples_size() > 0) *footer.mutable_calibration() = recent_calibration_;
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kFooter, footer, &out);
  StampAll(&out);
  return out;
}

void RecordingWriter::CountLost(const RecordsByKind* records) {
  stats_.set_chunks_lost(stats_.chunks_lost() + 1);
  if (!records) return;
  for (const auto& [kind, n] : *records) {
    stats_.set_lost_records(stats_.lost_records() + n);
    if (kind == 3 || kind == 10) stats_.set_lost_kernel_records(stats_.lost_kernel_records() + n);
    AddKindCount(stats_.mutable_lost_records_by_kind(), kind, n);
  }
}

void RecordingWriter::Emit(std::span<uint8_t> bytes, uint64_t records, uint64_t kernel_records,
                           const RecordsByKind* by_kind, const pb::ChunkSpan* span) {
  if (closed_) return;
  if (sink_.ShouldRotate(bytes.size())) Rotate();
  Stamp(bytes.data());
  auto r = sink_.Append(bytes, records, kernel_records);
  if (!r) {
    Fail(r.error());
    CountLost(by_kind);
    return;
  }
  Index(bytes, sink_.current_bytes() - bytes.size(), span);
  ++chunks_in_file_;
  stats_.set_compressed_bytes(stats_.compressed_bytes() + bytes.size());
}

void RecordingWriter::AccountRetired() {
  for (const RetiredFile& f : sink_.TakeRetired()) {
    stats_.set_files_deleted(stats_.files_deleted() + 1);
    stats_.set_bytes_deleted(stats_.bytes_deleted() + f.bytes);
    stats_.set_records_deleted(stats_.records_deleted() + f.records);
    stats_.set_kernel_records_deleted(stats_.kernel_records_deleted() + f.kernel_records);
  }
}

void RecordingWriter::WriteRawBuffer(std::span<const uint8_t> valid, uint32_t context_id,
                                     uint32_t stream_id, uint32_t flags) {
  if (closed_) return;
  uint64_t kernels = 0, memcpys = 0, memsets = 0, zero_ts = 0;
  by_kind_.clear();
  // The chunk's place in time for the index: every record timed, or the chunk is not.
  bool timed = true;
  uint64_t min_ns = UINT64_MAX, max_ns = 0, newest_gpu_end = 0;
  uint32_t min_corr = UINT32_MAX, max_corr = 0;
  const RecordTimeLayout& layout = options_.time_layout;
  const WalkResult walk = WalkRecords(valid, sizes_, [&](uint32_t kind, std::span<const uint8_t> rec) {
    // A buffer holds a handful of kinds: a linear search is cheaper than a map.
    auto it = std::find_if(by_kind_.begin(), by_kind_.end(),
                           [kind](const auto& e) { return e.first == kind; });
    if (it == by_kind_.end()) it = by_kind_.emplace(by_kind_.end(), kind, 0);
    ++it->second;
    if (kind == 10 || kind == 3) ++kernels;
    else if (kind == 1 || kind == 22) ++memcpys;
    else if (kind == 2) ++memsets;
    // CUPTI 13 GPU activity records keep start at offset 16 and end at 24.
    if (IsGpuActivity(kind) && rec.size() >= 32) {
      const uint64_t gpu_end = GetLe64(rec.data() + 24);
      if (GetLe64(rec.data() + 16) == 0 && gpu_end == 0) ++zero_ts;
      newest_gpu_end = std::max(newest_gpu_end, gpu_end);
    }
    const RecordTimeFields& f = layout.Get(kind);
    if (f.correlation && f.correlation + 4 <= rec.size()) {
      const uint32_t c = GetLe32(rec.data() + f.correlation);
      if (c) {
        min_corr = std::min(min_corr, c);
        max_corr = std::max(max_corr, c);
      }
    }
    if (!timed) return;
    if (!f.start || f.start + 8 > rec.size() || f.end + 8 > rec.size()) {
      timed = false;
      return;
    }
    const uint64_t start = GetLe64(rec.data() + f.start);
    const uint64_t end = GetLe64(rec.data() + f.end);
    if (start == 0) {
      timed = false;
      return;
    }
    min_ns = std::min(min_ns, start);
    max_ns = std::max({max_ns, start, end});
  });
  newest_gpu_end_ns_ = newest_gpu_end;
  RawBufferPrefix prefix{context_id, stream_id,
                         walk.complete ? static_cast<uint32_t>(walk.records)
                                       : RawBufferPrefix::kUnknownCount,
                         flags};
  if (!walk.complete) stats_.set_truncated_buffers(stats_.truncated_buffers() + 1);
  // Records in: counted whether or not the chunk reaches the disk, so that records in = records
  // decoded + lost_records (+ records_deleted by retention).
  stats_.set_buffers_completed(stats_.buffers_completed() + 1);
  stats_.set_records(stats_.records() + walk.records);
  stats_.set_raw_bytes(stats_.raw_bytes() + valid.size());
  stats_.set_kernel_records(stats_.kernel_records() + kernels);
  stats_.set_memcpy_records(stats_.memcpy_records() + memcpys);
  stats_.set_memset_records(stats_.memset_records() + memsets);
  stats_.set_zero_timestamp_records(stats_.zero_timestamp_records() + zero_ts);

  encoded_.resize(kRawBufferPrefixSize);
  EncodeRawBufferPrefix(prefix, encoded_.data());
  std::vector<uint8_t> body;
  body.swap(framed_);  // reuse capacity
  auto used = encoder_.Encode(valid, sizes_, options_.encoding, &body);
  if (!used) {
    Fail(used.error());
    CountLost(&by_kind_);
    body.swap(framed_);
    return;
  }
  encoded_.insert(encoded_.end(), body.begin(), body.end());
  body.clear();
  Frame(ChunkType::kRawBuffer, *used, encoded_, static_cast<uint32_t>(valid.size()), &body);
  pb::ChunkSpan span;
  span.set_timed(timed && walk.complete && walk.records > 0);
  if (span.timed()) {
    span.set_min_ns(min_ns);
    span.set_max_ns(max_ns);
  }
  if (max_corr) {
    span.set_min_correlation(min_corr);
    span.set_max_correlation(max_corr);
  }
  Emit(body, walk.records, kernels, &by_kind_, &span);
  body.clear();
  framed_.swap(body);
}

void RecordingWriter::AddStrings(std::span<const pb::StringEntry> entries) {
  if (entries.empty() || closed_) return;
  pb::StringTable delta;
  for (const auto& e : entries) {
    *delta.add_entries() = e;
    *strings_.add_entries() = e;
  }
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kStringTable, delta, &out);
  Emit(out, 0, 0);
}

void RecordingWriter::WriteWindowMarker(const pb::WindowMarker& marker) {
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kWindowMarker, marker, &out);
  Emit(out, 0, 0);
}

void RecordingWriter::WriteCalibration(const pb::Calibration& calibration) {
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kCalibration, calibration, &out);
  Emit(out, 0, 0);
  // The last two samples, restated in the next file's preamble.
  for (const pb::CalibrationSample& s : calibration.samples()) {
    if (recent_calibration_.samples_size() == 2)
      recent_calibration_.mutable_samples()->DeleteSubrange(0, 1);
    *recent_calibration_.add_samples() = s;
  }
}

void RecordingWriter::WriteStats(int64_t realtime_ns) {
  stats_.set_realtime_ns(realtime_ns);
  std::vector<uint8_t> out;
  FrameMessage(ChunkType::kStats, stats_, &out);
  Emit(out, 0, 0);
}

void RecordingWriter::Rotate() {
  if (closed_) return;
  const std::vector<uint8_t> footer = Footer(false);
  if (auto r = sink_.Rotate(footer); !r) Fail(r.error());
}

void RecordingWriter::Close(int64_t realtime_ns) {
  if (closed_) return;
  stats_.set_realtime_ns(realtime_ns);
  const std::vector<uint8_t> footer = Footer(true);
  if (auto r = sink_.Close(footer); !r) Fail(r.error());
  closed_ = true;
}

}  // namespace cupmon
