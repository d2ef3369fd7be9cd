// Reader and bad-input tests: damaged, truncated, empty, foreign and future files, unknown chunk
// types, sequence gaps and missing files are each reported and counted, never a crash.
#include "cupmon/decoder/recording_reader.h"

#include <gtest/gtest.h>

#include <sstream>

#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/crc32c.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::CupmonFiles;
using testing::ReadAll;
using testing::TempDir;
using testing::WriteAll;

class CountingVisitor : public ChunkVisitor {
 public:
  void OnHeader(const pb::RecordingHeader&, const ChunkOrigin&) override { ++headers; }
  void OnRawBuffer(const RawBufferPrefix&, std::span<const uint8_t> r, const ChunkOrigin&) override {
    ++buffers;
    bytes += r.size();
  }
  void OnWindowMarker(const pb::WindowMarker&) override { ++markers; }
  int headers = 0, buffers = 0, markers = 0;
  size_t bytes = 0;
};

struct Result {
  int exit_code;
  std::string out, err;
};

Result RunDecode(ReportKind kind, const std::string& dir) {
  std::ostringstream out, err;
  const int rc = RunReport(kind, dir, ReportOptions{}, out, err);
  return {rc, out.str(), err.str()};
}

std::vector<ScannedChunk> Chunks(const std::vector<uint8_t>& bytes) {
  ChunkScanner s(bytes);
  std::vector<Damage> d;
  std::vector<ScannedChunk> out;
  while (auto c = s.Next(&d)) out.push_back(*c);
  return out;
}

std::vector<uint8_t> MakeChunk(uint8_t major, uint8_t type, uint64_t seq,
                               const std::vector<uint8_t>& payload) {
  ChunkHeader h;
  h.major = major;
  h.type = type;
  h.encoding = 0;
  h.sequence = seq;
  h.payload_length = static_cast<uint32_t>(payload.size());
  h.uncompressed_length = h.payload_length;
  h.payload_crc = Crc32c(payload.data(), payload.size());
  std::vector<uint8_t> out(kChunkHeaderSize);
  EncodeChunkHeader(h, out.data());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

TEST(RecordingReaderTest, CleanSampleReadsWithoutWarnings) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->recordings.size(), 1u);
  EXPECT_EQ(listing->recordings[0].id, testing::kTestRecordingId);
  EXPECT_TRUE(listing->recordings[0].header.synthetic());
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], v, &integrity);
  EXPECT_EQ(v.buffers, 2);
  EXPECT_EQ(v.markers, 2);
  EXPECT_FALSE(integrity.HasWarnings()) << (integrity.messages.empty() ? "" : integrity.messages[0]);
  EXPECT_EQ(RunDecode(ReportKind::kSummary, dir.path()).exit_code, kExitClean);
}

TEST(RecordingReaderTest, UnrelatedFilesAreIgnoredNotErrors) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  WriteAll(dir.path() + "/notes.txt", {'h', 'i'});
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->ignored.size(), 1u);
  const Result r = RunDecode(ReportKind::kSummary, dir.path());
  EXPECT_EQ(r.exit_code, kExitClean);
  EXPECT_NE(r.err.find("ignored"), std::string::npos);
}

TEST(RecordingReaderTest, ForeignAndEmptyFilesAreRefused) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  WriteAll(dir.path() + "/junk.cupmon", {'n', 'o', 't', ' ', 'o', 'u', 'r', 's'});
  WriteAll(dir.path() + "/empty.cupmon", {});
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->refused.size(), 2u);
  EXPECT_NE(listing->refused[0].find("empty file"), std::string::npos);
  EXPECT_NE(listing->refused[1].find("not a cupmon file"), std::string::npos);
  EXPECT_EQ(RunDecode(ReportKind::kSummary, dir.path()).exit_code, kExitWarnings);

  TempDir only_junk;
  WriteAll(only_junk.path() + "/junk.cupmon", {'x'});
  EXPECT_EQ(RunDecode(ReportKind::kSummary, only_junk.path()).exit_code, kExitUnusable);
  EXPECT_EQ(RunDecode(ReportKind::kSummary, only_junk.path() + "/missing").exit_code, kExitUnusable);
}

TEST(RecordingReaderTest, FutureMajorVersionIsRefusedClearly) {
  TempDir dir;
  WriteAll(dir.path() + "/future.cupmon", MakeChunk(kFormatMajor + 1, 1, 0, {1, 2, 3}));
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing.has_value());
  ASSERT_EQ(listing->refused.size(), 1u);
  EXPECT_NE(listing->refused[0].find("major version 2"), std::string::npos) << listing->refused[0];
  EXPECT_NE(listing->refused[0].find("newer cupmon-decode"), std::string::npos);
  EXPECT_EQ(RunDecode(ReportKind::kInfo, dir.path()).exit_code, kExitUnusable);
}

TEST(RecordingReaderTest, TruncatedFileKeepsEverythingBeforeTheCut) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  const std::string file = CupmonFiles(dir.path())[0];
  auto bytes = ReadAll(file);
  const auto chunks = Chunks(bytes);
  // Cut in the middle of the second raw buffer (the API buffer).
  size_t raw_seen = 0, cut = 0;
  for (const auto& c : chunks)
    if (c.header.type == static_cast<uint8_t>(ChunkType::kRawBuffer) && ++raw_seen == 2)
      cut = c.offset + 40;
  ASSERT_GT(cut, 0u);
  bytes.resize(cut);
  WriteAll(file, bytes);
  auto listing = ListRecordings(dir.path());
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), v, &integrity);
  EXPECT_EQ(v.buffers, 1);
  EXPECT_EQ(integrity.damaged_ranges, 1u);
  EXPECT_EQ(integrity.files_without_footer, 1u);
  ASSERT_FALSE(integrity.messages.empty());
  EXPECT_NE(integrity.messages[0].find("at offset " + std::to_string(cut - 40)), std::string::npos)
      << integrity.messages[0];
  EXPECT_EQ(RunDecode(ReportKind::kGpuTrace, dir.path()).exit_code, kExitWarnings);
}

TEST(RecordingReaderTest, FlippedByteSkipsOneChunkAndDecodesTheRest) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  const std::string file = CupmonFiles(dir.path())[0];
  auto bytes = ReadAll(file);
  const auto chunks = Chunks(bytes);
  size_t first_raw = 0;
  for (const auto& c : chunks)
    if (c.header.type == static_cast<uint8_t>(ChunkType::kRawBuffer)) {
      first_raw = c.offset;
      break;
    }
  bytes[first_raw + kChunkHeaderSize + 20] ^= 0x40;
  WriteAll(file, bytes);
  auto listing = ListRecordings(dir.path());
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), v, &integrity);
  EXPECT_EQ(v.buffers, 1);  // the API buffer after it survives
  EXPECT_EQ(v.markers, 2);
  EXPECT_EQ(integrity.damaged_ranges, 1u);
  EXPECT_NE(integrity.messages.at(0).find("offset " + std::to_string(first_raw)), std::string::npos);
  const Result r = RunDecode(ReportKind::kApiTrace, dir.path());
  EXPECT_EQ(r.exit_code, kExitWarnings);
  EXPECT_NE(r.out.find("cudaGraphLaunch"), std::string::npos);
}

TEST(RecordingReaderTest, UnknownChunkTypeIsSkippedAndCounted) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  const std::string file = CupmonFiles(dir.path())[0];
  auto bytes = ReadAll(file);
  const auto chunks = Chunks(bytes);
  // Insert a type-42 chunk that takes its place in the sequence: renumbering is not needed since
  // a duplicate number is only noted, but put it after the footer with the next number.
  const auto extra = MakeChunk(kFormatMajor, 42, chunks.back().header.sequence + 1, {9, 9, 9});
  bytes.insert(bytes.end(), extra.begin(), extra.end());
  WriteAll(file, bytes);
  auto listing = ListRecordings(dir.path());
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), v, &integrity);
  EXPECT_EQ(integrity.unknown_chunk_types, 1u);
  EXPECT_EQ(integrity.damaged_ranges, 0u);
  EXPECT_EQ(v.buffers, 2);
}

TEST(RecordingReaderTest, RemovedChunkIsASequenceGap) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  const std::string file = CupmonFiles(dir.path())[0];
  auto bytes = ReadAll(file);
  const auto chunks = Chunks(bytes);
  const auto& victim = chunks.at(4);
  bytes.erase(bytes.begin() + static_cast<ptrdiff_t>(victim.offset),
              bytes.begin() + static_cast<ptrdiff_t>(victim.offset + kChunkHeaderSize +
                                                     victim.payload.size()));
  WriteAll(file, bytes);
  auto listing = ListRecordings(dir.path());
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), v, &integrity);
  EXPECT_EQ(integrity.sequence_gaps, 1u);
  EXPECT_EQ(integrity.missing_chunks, 1u);
  EXPECT_EQ(integrity.damaged_ranges, 0u);
}

// Many small files: order by file_index, no false gaps across rotations, a deleted middle file
// is reported as missing.
TEST(RecordingReaderTest, RotatedFilesReadInOrderAndMissingFilesAreReported) {
  TempDir dir;
  {
    auto opts = testing::WriterOptions(dir.path());
    opts.files.file_bytes = 600;
    RecordingWriter w(opts, testing::SyntheticHeader());
    ASSERT_TRUE(w.Open().has_value());
    for (uint32_t i = 0; i < 20; ++i) {
      testing::BufferBuilder b;
      b.Kernel(testing::kT0 + i * 1000, testing::kT0 + i * 1000 + 500, i + 1, 0x10);
      w.WriteRawBuffer(b.bytes(), 1, 7);
    }
    w.Close(0);
  }
  const auto files = CupmonFiles(dir.path());
  ASSERT_GE(files.size(), 4u);
  auto listing = ListRecordings(dir.path());
  ASSERT_EQ(listing->recordings.size(), 1u);
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], v, &integrity);
  EXPECT_EQ(v.buffers, 20);
  EXPECT_EQ(integrity.sequence_gaps, 0u) << (integrity.messages.empty() ? "" : integrity.messages[0]);
  EXPECT_FALSE(integrity.HasWarnings());

  std::filesystem::remove(files[1]);
  listing = ListRecordings(dir.path());
  ReadIntegrity after;
  CountingVisitor v2;
  ReadRecording(listing->recordings[0], v2, &after);
  EXPECT_EQ(after.missing_files, 1u);
  EXPECT_TRUE(after.HasWarnings());
  EXPECT_LT(v2.buffers, 20);

  std::filesystem::remove(files[0]);  // as retention would
  listing = ListRecordings(dir.path());
  ReadIntegrity retained;
  CountingVisitor v3;
  ReadRecording(listing->recordings[0], v3, &retained);
  EXPECT_EQ(retained.earlier_files_gone, 2u);
  EXPECT_EQ(retained.missing_files, 0u);
}

// The progress hook (cupmon-decode's progress line) counts every file's bytes, in order, and ends
// at the recording's total.
TEST(RecordingReaderTest, ProgressCountsBytesAcrossFilesUpToTheTotal) {
  TempDir dir;
  {
    auto opts = testing::WriterOptions(dir.path());
    opts.files.file_bytes = 600;
    RecordingWriter w(opts, testing::SyntheticHeader());
    ASSERT_TRUE(w.Open().has_value());
    for (uint32_t i = 0; i < 20; ++i) {
      testing::BufferBuilder b;
      b.Kernel(testing::kT0 + i * 1000, testing::kT0 + i * 1000 + 500, i + 1, 0x10);
      w.WriteRawBuffer(b.bytes(), 1, 7);
    }
    w.Close(0);
  }
  auto listing = ListRecordings(dir.path());
  ASSERT_EQ(listing->recordings.size(), 1u);
  uint64_t total = 0;
  for (const auto& f : listing->recordings[0].files) total += f.bytes;
  ASSERT_GE(listing->recordings[0].files.size(), 4u);
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  CountingVisitor v;
  ReadIntegrity integrity;
  ReadRecording(listing->recordings[0], v, &integrity,
                [&](uint64_t done, uint64_t of) { calls.emplace_back(done, of); });
  EXPECT_EQ(v.buffers, 20);
  ASSERT_FALSE(calls.empty());
  for (size_t i = 1; i < calls.size(); ++i) EXPECT_GE(calls[i].first, calls[i - 1].first);
  for (const auto& [done, of] : calls) {
    EXPECT_EQ(of, total);
    EXPECT_LE(done, total);
  }
  EXPECT_EQ(calls.back().first, total);
}

// A streaming read gives back the pages it has read; what is released reads back the same if
// touched again (the file is mapped privately and never written).
TEST(RecordingReaderTest, ReleasedMappingPagesReadBackFromTheFile) {
  TempDir dir;
  const std::string path = dir.path() + "/bytes.bin";
  std::vector<uint8_t> bytes(3 * 65536 + 123);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 4096);
  WriteAll(path, bytes);
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->bytes().size(), bytes.size());
  uint64_t sum = 0;
  for (uint8_t b : m->bytes()) sum += b;  // touch every page
  m->ReleaseBefore(2 * 65536 + 5);        // rounded down to a page
  m->ReleaseBefore(bytes.size() + 4096);  // past the end: clamped
  EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), m->bytes().begin()));
  uint64_t again = 0;
  for (uint8_t b : m->bytes()) again += b;
  EXPECT_EQ(sum, again);
}

// The real file system, except that appends fail (ENOSPC) while `full` is set.
class FullDiskFileSystem final : public FileSystem {
 public:
  bool full = false;
  Expected<int> OpenDirectory(const std::string& dir) override { return real_.OpenDirectory(dir); }
  Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                const std::string& name) override {
    return real_.CreateExclusive(dir_fd, dir_path, name);
  }
  Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) override {
    if (full) return MakeError("write failed: No space left on device", ENOSPC);
    return real_.Append(fd, data, size_before);
  }
  Expected<void> Sync(int fd) override { return real_.Sync(fd); }
  void Close(int fd) override { real_.Close(fd); }
  Expected<void> Remove(int dir_fd, const std::string& dir_path, const std::string& name) override {
    return real_.Remove(dir_fd, dir_path, name);
  }

 private:
  FileSystem& real_ = PosixFileSystem();
};

// Records in chunks that a full disk never got are reported by kind, and records in = decoded +
// lost holds.
TEST(RecordingReaderTest, RecordsLostBeforeDiskAreReportedByKind) {
  TempDir dir;
  FullDiskFileSystem fs;
  {
    RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader(), fs);
    ASSERT_TRUE(w.Open().has_value());
    for (uint32_t i = 0; i < 6; ++i) {
      fs.full = i == 2 || i == 3;
      testing::BufferBuilder b;
      for (uint32_t k = 0; k < 5; ++k)
        b.Kernel(testing::kT0 + i * 10000 + k * 100, testing::kT0 + i * 10000 + k * 100 + 50,
                 i * 10 + k + 1, 0x10);
      b.Memcpy(testing::kT0 + i * 10000 + 900, testing::kT0 + i * 10000 + 950, i * 10 + 9, 1, 64);
      w.WriteRawBuffer(b.bytes(), 1, 7);
    }
    fs.full = false;
    w.Close(0);
  }
  const Result r = RunDecode(ReportKind::kInfo, dir.path());
  EXPECT_EQ(r.exit_code, kExitWarnings) << r.err;
  EXPECT_NE(r.out.find("lost before disk: 12 records (10 kernel; by kind 1=2 10=10) in 2 chunks "
                       "not written (2 write errors)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("records: 36 in, 24 decoded, 12 lost before disk, 0 deleted by retention: "
                       "all accounted for"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("warning: lost before disk: 12 records"), std::string::npos) << r.err;
  const Result summary = RunDecode(ReportKind::kSummary, dir.path());
  EXPECT_NE(summary.out.find("==cupmon== Lost before disk: 12 records (10 kernel;"),
            std::string::npos)
      << summary.out;
}

TEST(RecordingReaderTest, FilesOfTwoProcessesAreTwoRecordings) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  {
    RecordingWriter w(testing::WriterOptions(dir.path(), "other"), testing::SyntheticHeader(77, 99));
    ASSERT_TRUE(w.Open().has_value());
    w.Close(0);
  }
  auto listing = ListRecordings(dir.path());
  ASSERT_EQ(listing->recordings.size(), 2u);
  std::ostringstream out, err;
  ReportOptions opt;
  opt.pid = 99;
  EXPECT_EQ(RunReport(ReportKind::kInfo, dir.path(), opt, out, err), kExitClean);
  EXPECT_NE(out.str().find("pid 99"), std::string::npos);
  EXPECT_EQ(out.str().find("pid 4242"), std::string::npos);
  opt.pid = 5;
  EXPECT_EQ(RunReport(ReportKind::kInfo, dir.path(), opt, out, err), kExitUnusable);
}

}  // namespace
}  // namespace cupmon::decoder
