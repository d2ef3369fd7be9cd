// The chunk-decoding thread (decoder/src/chunk_decode_thread.cc): a damaged and truncated
// recording read with the decoding on a second thread gives the same chunks, counts and messages
// as the single-threaded read; exceptions and early exits end the thread cleanly.
#include "chunk_decode_thread.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

namespace fs = std::filesystem;
using testing::CupmonFiles;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

// Restores the process-wide thread setting whatever a test leaves it at.
class DecodeThreadsGuard {
 public:
  DecodeThreadsGuard() : saved_(DecodeThreads()) {}
  ~DecodeThreadsGuard() { SetDecodeThreads(saved_); }

 private:
  int saved_;
};

class KernelCountingSink : public RowSink {
 public:
  void OnRow(const Row& row) override {
    kernels += row.type == RowType::kKernel;
    apis += row.type == RowType::kApi;
  }
  uint64_t kernels = 0, apis = 0;
};

// Everything a read produced that the two paths must agree on.
struct ReadOutcome {
  ReadIntegrity integrity;
  TraceCounts counts;
  uint64_t kernels = 0, apis = 0;
};

ReadOutcome ReadWith(int threads, const std::string& dir) {
  SetDecodeThreads(threads);
  EXPECT_EQ(DecodeThreads(), threads);
  ReadOutcome out;
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  if (!listing) return out;
  EXPECT_EQ(listing->recordings.size(), 1u);
  for (const Recording& r : listing->recordings) {
    KernelCountingSink sink;
    TraceBuilder builder(TraceFilter{}, &sink, /*horizon=*/4096);
    ReadRecording(r, builder, &out.integrity);
    builder.Finish();
    out.counts = builder.counts();
    out.kernels += sink.kernels;
    out.apis += sink.apis;
  }
  return out;
}

void ExpectSameIntegrity(const ReadIntegrity& a, const ReadIntegrity& b) {
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.chunks, b.chunks);
  EXPECT_EQ(a.damaged_ranges, b.damaged_ranges);
  EXPECT_EQ(a.damaged_bytes, b.damaged_bytes);
  EXPECT_EQ(a.undecodable_chunks, b.undecodable_chunks);
  EXPECT_EQ(a.unknown_chunk_types, b.unknown_chunk_types);
  EXPECT_EQ(a.sequence_gaps, b.sequence_gaps);
  EXPECT_EQ(a.missing_chunks, b.missing_chunks);
  EXPECT_EQ(a.missing_files, b.missing_files);
  EXPECT_EQ(a.unreadable_files, b.unreadable_files);
  EXPECT_EQ(a.files_without_footer, b.files_without_footer);
  EXPECT_EQ(a.borrowed_headers, b.borrowed_headers);
  EXPECT_EQ(a.messages, b.messages);
}

// tests/data/sample (two files) with bytes overwritten in the middle of the first file and the
// second file cut short.
void WriteDamagedSample(const std::string& dir) {
  const auto files = CupmonFiles(std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample");
  ASSERT_EQ(files.size(), 2u);
  auto first = ReadAll(files[0]);
  auto second = ReadAll(files[1]);
  ASSERT_GT(first.size(), 100000u);
  ASSERT_GT(second.size(), 10000u);
  for (size_t i = first.size() / 2; i < first.size() / 2 + 64; ++i) first[i] ^= 0x5a;
  for (size_t i = first.size() / 3; i < first.size() / 3 + 8; ++i) first[i] = 0;
  second.resize(second.size() - 3000);
  WriteAll(dir + "/" + fs::path(files[0]).filename().string(), first);
  WriteAll(dir + "/" + fs::path(files[1]).filename().string(), second);
}

TEST(ChunkDecodeThreadTest, DamagedRecordingReadsTheSameOnTheDecodingThread) {
  DecodeThreadsGuard guard;
  TempDir dir;
  WriteDamagedSample(dir.path());
  const ReadOutcome one = ReadWith(1, dir.path());
  const ReadOutcome two = ReadWith(2, dir.path());
  // The damage is seen, and seen the same way.
  EXPECT_GE(one.integrity.damaged_ranges, 2u);
  EXPECT_EQ(one.integrity.files, 2u);
  EXPECT_GE(one.integrity.files_without_footer, 1u);
  bool truncated = false;
  for (const auto& m : one.integrity.messages) truncated |= m.find("truncated tail") != std::string::npos;
  EXPECT_TRUE(truncated);
  EXPECT_GT(one.kernels, 1000u);
  ExpectSameIntegrity(one.integrity, two.integrity);
  EXPECT_EQ(one.kernels, two.kernels);
  EXPECT_EQ(one.apis, two.apis);
  EXPECT_EQ(one.counts.records, two.counts.records);
  EXPECT_EQ(one.counts.raw_buffers, two.counts.raw_buffers);
  EXPECT_EQ(one.counts.buffers_stopped, two.counts.buffers_stopped);
  EXPECT_EQ(one.counts.records_not_decoded, two.counts.records_not_decoded);
  EXPECT_EQ(one.counts.records_by_kind, two.counts.records_by_kind);
  EXPECT_EQ(one.counts.messages, two.counts.messages);
}

// Records every value of `fields` of every record it can decode; with `partial`, it asks for the
// partial columnar inverse of just those fields (ChunkVisitor::RecordWordsRead).
// With `pack` too, packed records (ColumnSelection::pack), walked with RecordDecoder::Packed.
class FieldRecorder : public ChunkVisitor {
 public:
  FieldRecorder(uint64_t fields, bool partial, bool pack = false)
      : fields_(fields), partial_(partial), pack_(pack) {}
  void OnHeader(const pb::RecordingHeader& header, const ChunkOrigin&) override {
    if (decoder_) return;
    RecordSizeTable sizes;
    for (const auto& rs : header.record_sizes()) sizes.Set(rs.kind(), rs.size());
    decoder_ = std::make_unique<RecordDecoder>(sizes, header.cupti_api_version());
  }
  bool RecordWordsRead(ColumnSelection* keep) const override {
    if (!partial_ || !decoder_) return false;
    *keep = decoder_->WordsRead(fields_, pack_);
    return true;
  }
  void OnPackedRawBuffer(const RawBufferPrefix&, std::span<const uint8_t> records,
                         const ColumnSelection& packed_with, const ChunkOrigin&) override {
    ASSERT_TRUE(pack_) << "packed records for a visitor that did not ask for them";
    ++packed_buffers;
    packed_bytes += records.size();
    const RecordDecoder packed = decoder_->Packed(packed_with);
    auto r = packed.Walk(records, [&](const RecordLayout& layout, const FieldReader& f,
                                      const uint8_t* rec) {
      packed_record_bytes += PackedSize(layout.size, packed_with.kinds[layout.kind].words);
      unpacked_record_bytes += layout.size;
      values.push_back(layout.kind);
      for (size_t i = 0; i < kFieldCount; ++i)
        if (fields_ & FieldBit(static_cast<Field>(i))) values.push_back(f.Get(rec, static_cast<Field>(i)));
    });
    stops.push_back(r.complete ? 0 : r.stop.offset + 1);
  }
  void OnRawBuffer(const RawBufferPrefix&, std::span<const uint8_t> records,
                   const ChunkOrigin&) override {
    if (!decoder_) return;
    whole_bytes += records.size();
    auto r = decoder_->Walk(records, [&](const RecordLayout& layout, const FieldReader& f,
                                         const uint8_t* rec) {
      values.push_back(layout.kind);
      for (size_t i = 0; i < kFieldCount; ++i)
        if (fields_ & FieldBit(static_cast<Field>(i))) values.push_back(f.Get(rec, static_cast<Field>(i)));
      bytes.emplace_back(rec, rec + layout.size);
    });
    stops.push_back(r.complete ? 0 : r.stop.offset + 1);
  }
  std::vector<uint64_t> values, stops;
  std::vector<std::vector<uint8_t>> bytes;  // each record as the visitor saw it (not packed ones)
  size_t packed_buffers = 0, packed_bytes = 0, whole_bytes = 0;
  size_t packed_record_bytes = 0, unpacked_record_bytes = 0;  // of the records walked packed

 private:
  uint64_t fields_;
  bool partial_, pack_;
  std::unique_ptr<RecordDecoder> decoder_;
};

// The partial inverse is exact for what a visitor reads: on the damaged sample, with one and two
// threads, the fields it names read the same as from whole records, and the other bytes were in
// fact left out. Packed records likewise (every value, every buffer's stop, the integrity
// counts), and buffers came packed, their records in a third of the bytes or less. (How many come
// whole with two threads depends on timing: those decoded ahead before the header's selection.)
TEST(ChunkDecodeThreadTest, PartialAndPackedInverseReadTheSameFields) {
  DecodeThreadsGuard guard;
  TempDir dir;
  WriteDamagedSample(dir.path());
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  const uint64_t fields = FieldBit(Field::kStart) | FieldBit(Field::kEnd) |
                          FieldBit(Field::kCorrelationId) | FieldBit(Field::kNamePointer) |
                          FieldBit(Field::kStreamId) | FieldBit(Field::kCbid);
  for (int threads : {1, 2}) {
    SetDecodeThreads(threads);
    FieldRecorder whole(fields, false), partial(fields, true);
    ReadIntegrity a, b;
    ReadRecording(listing->recordings[0], whole, &a);
    ReadRecording(listing->recordings[0], partial, &b);
    ExpectSameIntegrity(a, b);
    ASSERT_GT(whole.bytes.size(), 1000u) << threads << " threads";
    EXPECT_EQ(whole.values, partial.values) << threads << " threads";
    EXPECT_EQ(whole.stops, partial.stops) << threads << " threads";
    ASSERT_EQ(whole.bytes.size(), partial.bytes.size());
    size_t differ = 0;
    for (size_t i = 0; i < whole.bytes.size(); ++i) differ += whole.bytes[i] != partial.bytes[i];
    EXPECT_GT(differ, whole.bytes.size() / 2) << threads << " threads: the selection was not applied";
    FieldRecorder packed(fields, true, true);
    ReadIntegrity c;
    ReadRecording(listing->recordings[0], packed, &c);
    ExpectSameIntegrity(a, c);
    EXPECT_EQ(whole.values, packed.values) << threads << " threads";
    EXPECT_EQ(whole.stops, packed.stops) << threads << " threads";
    EXPECT_GT(packed.packed_buffers, 0u) << threads << " threads";
    EXPECT_GT(packed.packed_bytes, 0u);
    EXPECT_LT(packed.packed_bytes + packed.whole_bytes, whole.whole_bytes);
    EXPECT_LT(packed.packed_record_bytes, packed.unpacked_record_bytes / 3)
        << threads << " threads";
  }
}

// The sequence of chunks and damage, compared item by item between the two modes on bytes with
// damage at the start, in the middle and a truncated tail.
TEST(ChunkDecodeThreadTest, BackgroundYieldsTheInlineSequence) {
  const auto files = CupmonFiles(std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample");
  ASSERT_FALSE(files.empty());
  auto bytes = ReadAll(files[0]);
  bytes[10] ^= 0xff;
  bytes[bytes.size() / 2] ^= 0xff;
  bytes.resize(bytes.size() - 777);
  ChunkDecodeThread inline_chunks(bytes, /*background=*/false);
  ChunkDecodeThread background(bytes, /*background=*/true);
  size_t n = 0, damage = 0;
  for (;; ++n) {
    const DecodedChunk& a = inline_chunks.Next();
    const DecodedChunk& b = background.Next();
    ASSERT_EQ(a.end, b.end) << "item " << n;
    ASSERT_EQ(a.position, b.position) << "item " << n;
    ASSERT_EQ(a.damage.size(), b.damage.size()) << "item " << n;
    for (size_t i = 0; i < a.damage.size(); ++i) {
      EXPECT_EQ(a.damage[i].offset, b.damage[i].offset);
      EXPECT_EQ(a.damage[i].skipped_bytes, b.damage[i].skipped_bytes);
      EXPECT_EQ(a.damage[i].what, b.damage[i].what);
    }
    damage += a.damage.size();
    if (a.end) {
      EXPECT_EQ(a.future_major, b.future_major);
      break;
    }
    EXPECT_EQ(a.chunk.offset, b.chunk.offset);
    EXPECT_EQ(a.chunk.header.type, b.chunk.header.type);
    EXPECT_EQ(a.short_prefix, b.short_prefix);
    EXPECT_EQ(a.decode_error, b.decode_error);
    if (a.chunk.header.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) {
      EXPECT_EQ(a.records, b.records);
    }
  }
  EXPECT_GT(n, 10u);
  EXPECT_GE(damage, 3u);
  // After the end, the end again (the consumer may ask twice).
  EXPECT_TRUE(background.Next().end);
  EXPECT_TRUE(inline_chunks.Next().end);
}

// A consumer that stops after one chunk: the destructor stops and joins the thread, which may be
// blocked on a full ring.
TEST(ChunkDecodeThreadTest, EarlyExitJoinsTheThread) {
  const auto files = CupmonFiles(std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample");
  ASSERT_FALSE(files.empty());
  const auto bytes = ReadAll(files[0]);
  for (int i = 0; i < 20; ++i) {
    ChunkDecodeThread chunks(bytes, /*background=*/true);
    EXPECT_FALSE(chunks.Next().end);
  }
}

class ThrowingVisitor : public ChunkVisitor {
 public:
  void OnRawBuffer(const RawBufferPrefix&, std::span<const uint8_t>, const ChunkOrigin&) override {
    if (++buffers == 3) throw std::runtime_error("visitor gave up at buffer 3");
  }
  int buffers = 0;
};

// An exception of the visitor leaves ReadRecording as it did single-threaded, with the decoding
// thread joined (a joinable std::thread destroyed would end the process).
TEST(ChunkDecodeThreadTest, VisitorExceptionPropagatesAndJoins) {
  DecodeThreadsGuard guard;
  SetDecodeThreads(2);
  auto listing = ListRecordings(std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample");
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  ThrowingVisitor visitor;
  ReadIntegrity integrity;
  try {
    ReadRecording(listing->recordings[0], visitor, &integrity);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "visitor gave up at buffer 3");
  }
  EXPECT_EQ(visitor.buffers, 3);
}

// Asks to stop after its third raw buffer (as an export whose output failed does).
class StoppingVisitor : public ChunkVisitor {
 public:
  void OnFile(const RecordingFile&) override { ++files; }
  void OnRawBuffer(const RawBufferPrefix&, std::span<const uint8_t>, const ChunkOrigin&) override {
    ++buffers;
  }
  bool StopReading() const override { return buffers >= 3; }
  int files = 0, buffers = 0;
};

// StopReading ends the read after the chunk it was asked after, with the same chunks seen on
// both paths; the part not read is not counted as missing (no footer, no sequence holes) and the
// second file is not opened.
TEST(ChunkDecodeThreadTest, StopReadingEndsTheReadAfterThatChunk) {
  DecodeThreadsGuard guard;
  auto listing = ListRecordings(std::string(CUPMON_SOURCE_DIR) + "/tests/data/sample");
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  ASSERT_EQ(listing->recordings[0].files.size(), 2u);
  ReadIntegrity whole;
  {
    ChunkVisitor all;
    ReadRecording(listing->recordings[0], all, &whole);
  }
  ASSERT_FALSE(whole.stopped);
  uint64_t chunks[2] = {};
  for (int threads : {1, 2}) {
    SCOPED_TRACE(threads);
    SetDecodeThreads(threads);
    StoppingVisitor visitor;
    ReadIntegrity integrity;
    ReadRecording(listing->recordings[0], visitor, &integrity);
    EXPECT_TRUE(integrity.stopped);
    EXPECT_EQ(visitor.buffers, 3);
    EXPECT_EQ(visitor.files, 1);
    EXPECT_EQ(integrity.files, 1u);
    EXPECT_LT(integrity.chunks, whole.chunks);
    EXPECT_EQ(integrity.files_without_footer, 0u);
    EXPECT_EQ(integrity.sequence_gaps, 0u);
    EXPECT_EQ(integrity.missing_chunks, 0u);
    EXPECT_TRUE(integrity.messages.empty());
    chunks[threads - 1] = integrity.chunks;
  }
  EXPECT_EQ(chunks[0], chunks[1]);
}

}  // namespace
}  // namespace cupmon::decoder
