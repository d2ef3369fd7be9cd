// Tests RecordingWriter (format/src/recording_writer.cc) end to end on disk: preamble, footer,
// rotation, retention accounting, simulated full and unwritable disks, and a crash.
#include "cupmon/format/recording_writer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "cupmon/format/chunk_scanner.h"
#include "test_data.h"
#include "test_files.h"

namespace cupmon {
namespace {

using testing::FaultyFileSystem;
using testing::ListFiles;
using testing::ScanFile;
using testing::ScannedFile;
using testing::TempDir;

pb::RecordingHeader TestHeader(bool synthetic) {
  pb::RecordingHeader h;
  h.set_host("testhost");
  h.set_pid(4242);
  h.set_cupti_api_version(130001);
  // Set only where the records come from the test's own generator (a test double), not a GPU.
  h.set_synthetic(synthetic);
  const RecordSizeTable t = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!t.Size(k)) continue;
    auto* rs = h.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(t.Size(k));
  }
  return h;
}

RecordingWriterOptions Options(const std::string& dir) {
  RecordingWriterOptions o;
  o.files.directory = dir;
  o.files.prefix = "cupmon-testhost-4242";
  return o;
}

// `n` synthetic kernel records (kind 10, 216 bytes) with increasing timestamps; every `zero_every`th
// one has start == end == 0 like a record whose timestamp pool ran out.
std::vector<uint8_t> KernelRecords(size_t n, uint64_t t0, size_t zero_every = 0) {
  std::vector<uint8_t> out(n * 216, 0);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* r = out.data() + i * 216;
    PutLe32(r, 10);
    const bool zero = zero_every && i % zero_every == 0;
    PutLe64(r + 16, zero ? 0 : t0 + i * 1000);
    PutLe64(r + 24, zero ? 0 : t0 + i * 1000 + 700);
    PutLe64(r + 104, 0x7f0000001000ull);  // name pointer
  }
  return out;
}

template <typename Msg>
Msg Parse(const ScannedChunk& c) {
  std::vector<uint8_t> bytes;
  RawBufferDecoder d;
  auto r = d.Decode(c.header.encoding, c.payload, c.header.uncompressed_length, &bytes);
  Msg m;
  if (r) m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  return m;
}

uint8_t T(ChunkType t) { return static_cast<uint8_t>(t); }
uint8_t T(Encoding e) { return static_cast<uint8_t>(e); }

// Decodes every raw-buffer chunk of `f` and appends the CUPTI bytes to `out`.
void AppendRawBytes(const ScannedFile& f, std::vector<uint8_t>* out, uint64_t* records = nullptr) {
  RawBufferDecoder d;
  for (const auto& c : f.chunks) {
    if (c.header.type != T(ChunkType::kRawBuffer)) continue;
    ASSERT_GE(c.payload.size(), kRawBufferPrefixSize);
    const RawBufferPrefix p = DecodeRawBufferPrefix(c.payload.data());
    if (records) *records += p.record_count;
    std::vector<uint8_t> raw;
    auto r = d.Decode(c.header.encoding, c.payload.subspan(kRawBufferPrefixSize),
                      c.header.uncompressed_length, &raw);
    ASSERT_TRUE(r.has_value()) << r.error().message;
    out->insert(out->end(), raw.begin(), raw.end());
  }
}

TEST(RecordingWriterTest, RealRecordsRoundTripWithPreambleAndFooter) {
  TempDir dir;
  const std::vector<uint8_t> all = testing::LoadRealRecords(testing::kWindowFile);
  ASSERT_FALSE(all.empty());
  {
    RecordingWriter w(Options(dir.path()), TestHeader(false));
    ASSERT_TRUE(w.Open().has_value());
    pb::StringEntry e;
    e.set_id(1);
    e.set_pointer(0x1234);
    e.set_text("tiny");
    w.AddStrings(std::span(&e, 1));
    for (auto b : testing::SplitIntoBuffers(all, w.sizes(), 1 << 20)) w.WriteRawBuffer(b, 1, 7);
    w.Close(123);
    EXPECT_EQ(w.stats().write_errors(), 0u);
    EXPECT_EQ(w.stats().records(), 48936u);
    EXPECT_EQ(w.stats().kernel_records(), 16000u);
    EXPECT_EQ(w.stats().raw_bytes(), all.size());
  }
  const auto files = ListFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(std::filesystem::path(files[0]).filename(), "cupmon-testhost-4242-000000.cupmon");
  const ScannedFile f = ScanFile(files[0]);
  EXPECT_TRUE(f.damage.empty());
  ASSERT_GE(f.chunks.size(), 6u);
  EXPECT_EQ(f.chunks[0].header.type, T(ChunkType::kMetadata));
  EXPECT_EQ(f.chunks[1].header.type, T(ChunkType::kStats));  // no strings yet at open
  // Format 1.1: the preamble ends with a second, identical metadata chunk.
  ASSERT_EQ(f.chunks[2].header.type, T(ChunkType::kMetadata));
  EXPECT_TRUE(std::equal(f.chunks[0].payload.begin(), f.chunks[0].payload.end(),
                         f.chunks[2].payload.begin(), f.chunks[2].payload.end()));
  EXPECT_EQ(f.chunks[3].header.type, T(ChunkType::kStringTable));
  for (size_t i = 0; i < f.chunks.size(); ++i) EXPECT_EQ(f.chunks[i].header.sequence, i);
  const auto meta = Parse<pb::RecordingHeader>(f.chunks[0]);
  EXPECT_EQ(meta.host(), "testhost");
  EXPECT_EQ(meta.format_major(), kFormatMajor);
  EXPECT_EQ(meta.format_minor(), 1u);
  EXPECT_EQ(meta.file_index(), 0u);
  EXPECT_EQ(meta.record_sizes_size(), 16);
  ASSERT_EQ(f.chunks.back().header.type, T(ChunkType::kFooter));
  const auto footer = Parse<pb::Footer>(f.chunks.back());
  EXPECT_TRUE(footer.recording_ended());
  EXPECT_EQ(footer.chunks(), f.chunks.size() - 1);
  EXPECT_EQ(footer.records(), 48936u);
  EXPECT_EQ(footer.stats().realtime_ns(), 123);

  std::vector<uint8_t> back;
  uint64_t records = 0;
  AppendRawBytes(f, &back, &records);
  EXPECT_EQ(back, all);
  EXPECT_EQ(records, 48936u);
  const RawBufferPrefix p = DecodeRawBufferPrefix(f.chunks[4].payload.data());
  EXPECT_EQ(p.context_id, 1u);
  EXPECT_EQ(p.stream_id, 7u);
  EXPECT_EQ(f.chunks[4].header.encoding, T(Encoding::kColumnsDeltaZstd));
}

TEST(RecordingWriterTest, EveryFileRestatesMetadataAndStrings) {
  TempDir dir;
  auto o = Options(dir.path());
  o.files.file_bytes = 8 << 10;
  o.encoding = Encoding::kZstd;  // larger chunks: more files
  RecordingWriter w(o, TestHeader(true));
  ASSERT_TRUE(w.Open().has_value());
  std::vector<size_t> strings_before_file;
  for (int i = 0; i < 40; ++i) {
    pb::StringEntry e;
    e.set_id(static_cast<uint32_t>(i));
    e.set_pointer(0x1000 + static_cast<uint64_t>(i));
    e.set_text("kernel_" + std::to_string(i));
    w.AddStrings(std::span(&e, 1));
    const auto recs = KernelRecords(500, 1'700'000'000'000'000'000ull + i * 1'000'000ull);
    w.WriteRawBuffer(recs, 1, 1);
  }
  w.Close(0);
  const auto files = ListFiles(dir.path());
  ASSERT_GE(files.size(), 3u);
  uint64_t last_seq = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const ScannedFile f = ScanFile(files[i]);
    ASSERT_TRUE(f.damage.empty());
    ASSERT_GE(f.chunks.size(), 4u);
    EXPECT_EQ(f.chunks[0].header.type, T(ChunkType::kMetadata));
    const auto meta = Parse<pb::RecordingHeader>(f.chunks[0]);
    EXPECT_EQ(meta.file_index(), i);
    EXPECT_TRUE(meta.synthetic());
    if (i > 0) {
      // The string table so far comes right after the metadata.
      ASSERT_EQ(f.chunks[1].header.type, T(ChunkType::kStringTable));
      const auto table = Parse<pb::StringTable>(f.chunks[1]);
      ASSERT_GE(table.entries_size(), 1);
      EXPECT_EQ(table.entries(0).text(), "kernel_0");
      // Every string a record in this file may point to has been restated or appears later.
      EXPECT_GE(table.entries_size(), static_cast<int>(i));
      EXPECT_GT(f.chunks[0].header.sequence, last_seq);
      // Then the stats, then the metadata again (the second copy).
      ASSERT_EQ(f.chunks[3].header.type, T(ChunkType::kMetadata));
      EXPECT_EQ(Parse<pb::RecordingHeader>(f.chunks[3]).file_index(), i);
    }
    ASSERT_EQ(f.chunks.back().header.type, T(ChunkType::kFooter));
    const auto footer = Parse<pb::Footer>(f.chunks.back());
    EXPECT_EQ(footer.recording_ended(), i + 1 == files.size());
    EXPECT_EQ(footer.chunks(), f.chunks.size() - 1);
    last_seq = f.chunks.back().header.sequence;
    EXPECT_LE(f.bytes.size(), (8u << 10) + 1024) << "only a footer may exceed file_bytes";
  }
}

TEST(RecordingWriterTest, RotatesByAgeWithInjectedClock) {
  TempDir dir;
  auto o = Options(dir.path());
  o.files.file_age_s = 10;
  int64_t now = 0;
  RecordingWriter w(o, TestHeader(true), PosixFileSystem(), [&] { return now; });
  ASSERT_TRUE(w.Open().has_value());
  const auto recs = KernelRecords(10, 1);
  w.WriteRawBuffer(recs, 1, 1);
  now += 9'000'000'000;
  w.WriteRawBuffer(recs, 1, 1);
  EXPECT_EQ(ListFiles(dir.path()).size(), 1u);
  now += 1'000'000'000;
  w.WriteRawBuffer(recs, 1, 1);
  EXPECT_EQ(ListFiles(dir.path()).size(), 2u);
  w.Close(0);
}

TEST(RecordingWriterTest, RetentionIsAccountedInTheNextFilesStats) {
  TempDir dir;
  auto o = Options(dir.path());
  o.files.file_bytes = 32 << 10;
  o.files.retention_files = 3;
  o.encoding = Encoding::kZstd;
  RecordingWriter w(o, TestHeader(true));
  ASSERT_TRUE(w.Open().has_value());
  for (int i = 0; i < 60; ++i)
    w.WriteRawBuffer(KernelRecords(300, 1'000'000ull * i), 1, 1);
  w.Close(0);
  const auto files = ListFiles(dir.path());
  ASSERT_EQ(files.size(), 3u);
  const auto& st = w.stats();
  ASSERT_GT(st.files_deleted(), 0u);
  // The oldest went first: the survivors are the newest indices.
  const auto meta = Parse<pb::RecordingHeader>(ScanFile(files[0]).chunks[0]);
  EXPECT_EQ(meta.file_index(), st.files_deleted());

  // Records in the surviving files plus the records retention deleted are all records written.
  uint64_t surviving = 0;
  for (const auto& p : files) {
    std::vector<uint8_t> raw;
    AppendRawBytes(ScanFile(p), &raw, &surviving);
  }
  EXPECT_EQ(surviving + st.records_deleted(), st.records());
  EXPECT_EQ(st.records(), 60u * 300u);
  EXPECT_EQ(st.kernel_records_deleted(), st.records_deleted());

  // The stats chunk in the newest file's preamble already counts the deletions before it.
  const ScannedFile newest = ScanFile(files.back());
  const ScannedChunk* stats = nullptr;
  for (const auto& c : newest.chunks) {
    if (c.header.type == T(ChunkType::kStats)) {
      stats = &c;
      break;
    }
  }
  ASSERT_NE(stats, nullptr);
  const auto pre = Parse<pb::Stats>(*stats);
  EXPECT_EQ(pre.files_deleted(), meta.file_index());  // newest index - 2 kept
  EXPECT_GT(pre.records_deleted(), 0u);
  EXPECT_GT(pre.bytes_deleted(), 0u);
}

TEST(RecordingWriterTest, FullDiskIsCountedAndWritingResumes) {
  TempDir dir;
  FaultyFileSystem fs;
  auto o = Options(dir.path());
  o.files.file_bytes = 256 << 10;
  RecordingWriter w(o, TestHeader(true), fs);
  ASSERT_TRUE(w.Open().has_value());
  std::vector<uint8_t> written;
  uint64_t t = 1;
  auto write = [&](bool expect_kept) {
    const auto recs = KernelRecords(200, t, 7);
    t += 1'000'000;
    w.WriteRawBuffer(recs, 1, 1);
    if (expect_kept) written.insert(written.end(), recs.begin(), recs.end());
  };
  for (int i = 0; i < 5; ++i) write(true);
  ASSERT_EQ(w.stats().write_errors(), 0u);
  fs.space_left = 100;  // the disk fills up
  for (int i = 0; i < 10; ++i) write(false);
  EXPECT_GE(w.stats().write_errors(), 10u);
  EXPECT_GE(w.stats().chunks_lost(), 10u);
  EXPECT_NE(w.last_error().find(dir.path()), std::string::npos) << w.last_error();
  EXPECT_NE(w.last_error().find("No space"), std::string::npos) << w.last_error();

  // Nothing already written was damaged: every chunk on disk is valid.
  for (const auto& p : ListFiles(dir.path())) EXPECT_TRUE(ScanFile(p).damage.empty()) << p;

  fs.space_left = FaultyFileSystem::kUnlimited;  // space again
  const uint64_t lost = w.stats().chunks_lost();
  for (int i = 0; i < 5; ++i) write(true);
  EXPECT_EQ(w.stats().chunks_lost(), lost);
  w.Close(0);

  std::vector<uint8_t> back;
  for (const auto& p : ListFiles(dir.path())) {
    const ScannedFile f = ScanFile(p);
    EXPECT_TRUE(f.damage.empty()) << p;
    AppendRawBytes(f, &back);
  }
  EXPECT_EQ(back, written);
  EXPECT_EQ(w.stats().zero_timestamp_records(), 20u * 29u);  // 200 records, every 7th zero
}

// A buffer of `kernels` kernel (kind 10), `memcpys` memcpy (kind 1) and `runtime` runtime API
// (kind 5) records, interleaved; the bytes other than kind and timestamps are zero.
std::vector<uint8_t> MixedRecords(size_t kernels, size_t memcpys, size_t runtime, uint64_t t0) {
  std::vector<uint8_t> out;
  auto add = [&](uint32_t kind, size_t size) {
    const size_t at = out.size();
    out.resize(at + size, 0);
    PutLe32(out.data() + at, kind);
    PutLe64(out.data() + at + 16, t0 + at);
    PutLe64(out.data() + at + 24, t0 + at + 10);
  };
  for (size_t i = 0; i < std::max({kernels, memcpys, runtime}); ++i) {
    if (i < kernels) add(10, 216);
    if (i < memcpys) add(1, 96);
    if (i < runtime) add(5, 40);
  }
  return out;
}

// Issue 13: a full disk lost chunks whose records nobody could see. Every record of a chunk that
// is not written is counted as lost, by kind, so records in = records on disk + records lost.
TEST(RecordingWriterTest, FullDiskCountsTheLostRecordsByKind) {
  TempDir dir;
  FaultyFileSystem fs;
  RecordingWriter w(Options(dir.path()), TestHeader(true), fs);
  ASSERT_TRUE(w.Open().has_value());
  uint64_t t = 1;
  auto write = [&](size_t k, size_t m, size_t r) {
    w.WriteRawBuffer(MixedRecords(k, m, r, t), 1, 1);
    t += 1'000'000;
  };
  write(30, 4, 50);
  fs.space_left = 0;  // the disk is full: the next three buffers never reach it
  write(11, 2, 7);
  write(13, 0, 5);
  write(0, 3, 1);
  fs.space_left = FaultyFileSystem::kUnlimited;
  write(20, 1, 9);
  w.Close(0);

  const pb::Stats& s = w.stats();
  EXPECT_EQ(s.chunks_lost(), 3u);
  EXPECT_EQ(s.lost_records(), 11u + 2 + 7 + 13 + 5 + 3 + 1);
  EXPECT_EQ(s.lost_kernel_records(), 24u);
  ASSERT_EQ(s.lost_records_by_kind_size(), 3);  // ascending kind
  EXPECT_EQ(s.lost_records_by_kind(0).kind(), 1u);
  EXPECT_EQ(s.lost_records_by_kind(0).count(), 5u);
  EXPECT_EQ(s.lost_records_by_kind(1).kind(), 5u);
  EXPECT_EQ(s.lost_records_by_kind(1).count(), 13u);
  EXPECT_EQ(s.lost_records_by_kind(2).kind(), 10u);
  EXPECT_EQ(s.lost_records_by_kind(2).count(), 24u);

  // What is on disk plus what was counted lost is what came in, kind by kind.
  uint64_t on_disk = 0;
  std::map<uint32_t, uint64_t> disk_by_kind;
  RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (const auto& p : ListFiles(dir.path())) {
    const ScannedFile f = ScanFile(p);
    std::vector<uint8_t> raw;
    AppendRawBytes(f, &raw);
    WalkRecords(raw, sizes, [&](uint32_t kind, std::span<const uint8_t>) {
      ++on_disk;
      ++disk_by_kind[kind];
    });
  }
  EXPECT_EQ(s.records(), on_disk + s.lost_records());
  EXPECT_EQ(s.kernel_records(), disk_by_kind[10] + s.lost_kernel_records());
  EXPECT_EQ(s.memcpy_records(), disk_by_kind[1] + s.lost_records_by_kind(0).count());
  // The footer carries the same counters.
  const ScannedFile last = ScanFile(ListFiles(dir.path()).back());
  const auto footer = Parse<pb::Footer>(last.chunks.back());
  EXPECT_EQ(footer.stats().lost_records(), s.lost_records());
}

TEST(RecordingWriterTest, UnwritableDirectoryIsCountedAndRecovers) {
  TempDir dir;
  FaultyFileSystem fs;
  fs.deny_create = true;
  auto o = Options(dir.path() + "/missing/sub");
  RecordingWriter w(o, TestHeader(true), fs);
  auto r = w.Open();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno, EACCES);
  EXPECT_NE(w.last_error().find(dir.path() + "/missing/sub"), std::string::npos);
  EXPECT_EQ(w.stats().write_errors(), 1u);
  const auto recs = KernelRecords(50, 1);
  w.WriteRawBuffer(recs, 1, 1);
  w.WriteRawBuffer(recs, 1, 1);
  EXPECT_EQ(w.stats().chunks_lost(), 2u);
  EXPECT_EQ(w.stats().write_errors(), 3u);

  fs.deny_create = false;
  w.WriteRawBuffer(recs, 1, 1);
  EXPECT_EQ(w.stats().chunks_lost(), 2u);
  w.Close(0);
  const auto files = ListFiles(dir.path() + "/missing/sub");
  ASSERT_EQ(files.size(), 1u);
  const ScannedFile f = ScanFile(files[0]);
  EXPECT_TRUE(f.damage.empty());
  EXPECT_EQ(f.chunks.front().header.type, T(ChunkType::kMetadata));
  EXPECT_EQ(f.chunks.back().header.type, T(ChunkType::kFooter));
  std::vector<uint8_t> back;
  AppendRawBytes(f, &back);
  EXPECT_EQ(back, recs);
  // The losses before the file existed are recorded in it.
  EXPECT_EQ(Parse<pb::Footer>(f.chunks.back()).stats().chunks_lost(), 2u);
}

TEST(RecordingWriterTest, ACrashLeavesNoFooterAndWholeChunks) {
  TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RecordingWriter* w = new RecordingWriter(Options(dir.path()), TestHeader(true));
    if (!w->Open()) ::_exit(2);
    for (int i = 0; i < 20; ++i) w->WriteRawBuffer(KernelRecords(100, 1000ull * i), 1, 1);
    ::_exit(0);  // a crash: no destructor, no Close, no footer
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  const auto files = ListFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  const ScannedFile f = ScanFile(files[0]);
  EXPECT_TRUE(f.damage.empty());
  ASSERT_FALSE(f.chunks.empty());
  EXPECT_NE(f.chunks.back().header.type, T(ChunkType::kFooter));
  std::vector<uint8_t> back;
  AppendRawBytes(f, &back);
  EXPECT_EQ(back.size(), 20u * 100u * 216u);

  // A crash in the middle of a write leaves a torn tail: everything before it still decodes.
  std::vector<uint8_t> cut(f.bytes.begin(), f.bytes.end() - 100);
  std::vector<Damage> damage;
  ChunkScanner s(cut);
  size_t n = 0;
  while (s.Next(&damage)) ++n;
  EXPECT_EQ(n, f.chunks.size() - 1);
  ASSERT_EQ(damage.size(), 1u);
  EXPECT_EQ(damage[0].kind, Damage::Kind::kTruncatedTail);
  EXPECT_EQ(damage[0].offset, f.chunks.back().offset);
}

TEST(RecordingWriterTest, UnknownKindIsStoredWithZstdAndCounted) {
  TempDir dir;
  RecordingWriter w(Options(dir.path()), TestHeader(true));
  ASSERT_TRUE(w.Open().has_value());
  auto recs = KernelRecords(10, 5);
  recs.resize(recs.size() + 64, 0);
  PutLe32(recs.data() + 10 * 216, 99);
  w.WriteRawBuffer(recs, 1, 1);
  w.Close(0);
  EXPECT_EQ(w.stats().truncated_buffers(), 1u);
  const ScannedFile f = ScanFile(ListFiles(dir.path())[0]);
  const ScannedChunk* raw = nullptr;
  for (const auto& c : f.chunks)
    if (c.header.type == T(ChunkType::kRawBuffer)) raw = &c;
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(raw->header.encoding, T(Encoding::kZstd));
  EXPECT_EQ(DecodeRawBufferPrefix(raw->payload.data()).record_count, RawBufferPrefix::kUnknownCount);
  std::vector<uint8_t> back;
  AppendRawBytes(f, &back);
  EXPECT_EQ(back, recs);
}

TEST(RecordingWriterTest, WritesAfterCloseAreIgnored) {
  TempDir dir;
  RecordingWriter w(Options(dir.path()), TestHeader(true));
  ASSERT_TRUE(w.Open().has_value());
  w.Close(0);
  const auto size = std::filesystem::file_size(ListFiles(dir.path())[0]);
  w.WriteRawBuffer(KernelRecords(10, 5), 1, 1);
  w.WriteStats(1);
  EXPECT_EQ(std::filesystem::file_size(ListFiles(dir.path())[0]), size);
  EXPECT_EQ(w.stats().buffers_completed(), 0u);
}

// A process may hand cupmon text that is not UTF-8: an NVTX label in Latin-1, a path argument.
// Those fields are `bytes`, so the chunk parses and the text comes back as it was given.
TEST(RecordingWriterTest, TextThatIsNotUtf8ComesBackByteForByte) {
  TempDir dir;
  pb::RecordingHeader h = TestHeader(true);
  const std::string arg("--data=/d\xe9p\xf4t", 14);  // Latin-1 "dépôt"
  h.add_command_line(arg);
  h.set_job_id(std::string("j\xff", 2));
  RecordingWriter w(Options(dir.path()), h);
  ASSERT_TRUE(w.Open().has_value());
  pb::StringEntry e;
  e.set_id(1);
  e.set_pointer(0x7f0000001000ull);
  const std::string label("fwd \xb5s \xc3", 7);  // Latin-1 micro sign, a cut-off sequence
  e.set_text(label);
  w.AddStrings(std::span(&e, 1));
  w.WriteRawBuffer(KernelRecords(10, 1'700'000'000'000'000'000ull), 1, 1);
  w.Close(0);
  const ScannedFile f = ScanFile(ListFiles(dir.path())[0]);
  ASSERT_TRUE(f.damage.empty());
  bool saw_table = false;
  for (const auto& c : f.chunks) {
    if (c.header.type != T(ChunkType::kMetadata) && c.header.type != T(ChunkType::kStringTable))
      continue;
    std::vector<uint8_t> bytes;
    RawBufferDecoder d;
    ASSERT_TRUE(d.Decode(c.header.encoding, c.payload, c.header.uncompressed_length, &bytes));
    if (c.header.type == T(ChunkType::kMetadata)) {
      pb::RecordingHeader m;
      ASSERT_TRUE(m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
      ASSERT_EQ(m.command_line_size(), 1);
      EXPECT_EQ(m.command_line(0), arg);
      EXPECT_EQ(m.job_id(), std::string("j\xff", 2));
    } else if (c.header.type == T(ChunkType::kStringTable)) {
      pb::StringTable t;
      ASSERT_TRUE(t.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())));
      ASSERT_EQ(t.entries_size(), 1);
      EXPECT_EQ(t.entries(0).text(), label);
      saw_table = true;
    }
  }
  EXPECT_TRUE(saw_table);
}

// ---- The footer's chunk index (docs/FORMAT.md, "Chunk index") ----

// The test's own layout for kind 10 (the writer takes whatever layout it is given): start at 16,
// end at 24, correlation id at 96.
RecordingWriterOptions IndexedOptions(const std::string& dir) {
  RecordingWriterOptions o = Options(dir);
  o.time_layout.Set(10, {16, 24, 96});
  return o;
}

// Kernel records (kind 10, 216 bytes) with the given start, end and correlation id each.
std::vector<uint8_t> Kernels(std::initializer_list<std::array<uint64_t, 3>> recs) {
  std::vector<uint8_t> out(recs.size() * 216, 0);
  size_t i = 0;
  for (const auto& [start, end, corr] : recs) {
    uint8_t* r = out.data() + i++ * 216;
    PutLe32(r, 10);
    PutLe64(r + 16, start);
    PutLe64(r + 24, end);
    PutLe32(r + 96, static_cast<uint32_t>(corr));
  }
  return out;
}

pb::Footer FooterOf(const std::string& path, std::vector<uint8_t>* bytes) {
  std::ifstream in(path, std::ios::binary);
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const auto footer = ChunkScanner::FindFooter(*bytes);
  EXPECT_TRUE(footer.has_value()) << path;
  return footer ? Parse<pb::Footer>(*footer) : pb::Footer();
}

TEST(RecordingWriterTest, TheFooterIndexesEveryChunkWithItsTimeAndCorrelationRange) {
  TempDir dir;
  {
    RecordingWriter w(IndexedOptions(dir.path()), TestHeader(true));
    ASSERT_TRUE(w.Open().has_value());
    // Delivery order is not start order: the range is the smallest start and the largest end.
    w.WriteRawBuffer(Kernels({{5000, 5600, 12}, {1000, 1900, 10}, {3000, 9000, 11}}), 1, 1);
    pb::WindowMarker m;
    m.set_window_id(1);
    w.WriteWindowMarker(m);
    // A record still running at a forced flush has end 0: its start bounds it.
    w.WriteRawBuffer(Kernels({{20000, 21000, 0}, {22000, 0, 14}}), 1, 1);
    // A record without timestamps: the chunk's place in time is not known.
    w.WriteRawBuffer(Kernels({{30000, 31000, 15}, {0, 0, 16}}), 1, 1);
    // A kind the layout does not know (memset, 2): likewise, whatever its bytes say.
    std::vector<uint8_t> mixed = Kernels({{40000, 41000, 17}});
    std::vector<uint8_t> memset(RecordSizeTable::Cupti13().Size(2), 0);
    PutLe32(memset.data(), 2);
    PutLe64(memset.data() + 16, 40500);
    PutLe64(memset.data() + 24, 40600);
    mixed.insert(mixed.end(), memset.begin(), memset.end());
    w.WriteRawBuffer(mixed, 1, 1);
    pb::Calibration cal;
    cal.add_samples()->set_cupti_ns(777);
    w.WriteCalibration(cal);
    w.Close(5);
  }
  const auto files = ListFiles(dir.path());
  ASSERT_EQ(files.size(), 1u);
  std::vector<uint8_t> bytes;
  const pb::Footer footer = FooterOf(files[0], &bytes);
  const ScannedFile f = ScanFile(files[0]);
  ASSERT_TRUE(footer.indexed());
  ASSERT_EQ(static_cast<uint64_t>(footer.index_size()), footer.chunks());
  ASSERT_EQ(f.chunks.size(), footer.chunks() + 1);  // and the footer
  std::vector<const pb::ChunkSpan*> raw;
  for (int i = 0; i < footer.index_size(); ++i) {
    const pb::ChunkSpan& e = footer.index(i);
    EXPECT_EQ(e.offset(), f.chunks[i].offset) << i;
    EXPECT_EQ(e.type(), f.chunks[i].header.type) << i;
    if (e.type() == T(ChunkType::kRawBuffer)) raw.push_back(&e);
    else EXPECT_FALSE(e.timed()) << i;
  }
  ASSERT_EQ(raw.size(), 4u);
  EXPECT_TRUE(raw[0]->timed());
  EXPECT_EQ(raw[0]->min_ns(), 1000u);
  EXPECT_EQ(raw[0]->max_ns(), 9000u);
  EXPECT_EQ(raw[0]->min_correlation(), 10u);
  EXPECT_EQ(raw[0]->max_correlation(), 12u);
  EXPECT_TRUE(raw[1]->timed());
  EXPECT_EQ(raw[1]->min_ns(), 20000u);
  EXPECT_EQ(raw[1]->max_ns(), 22000u);
  EXPECT_EQ(raw[1]->min_correlation(), 14u);  // correlation 0 is no correlation
  EXPECT_EQ(raw[1]->max_correlation(), 14u);
  EXPECT_FALSE(raw[2]->timed());
  EXPECT_EQ(raw[2]->min_correlation(), 15u);
  EXPECT_EQ(raw[2]->max_correlation(), 16u);
  EXPECT_FALSE(raw[3]->timed());
  ASSERT_EQ(footer.calibration().samples_size(), 1);
  EXPECT_EQ(footer.calibration().samples(0).cupti_ns(), 777u);
}

TEST(RecordingWriterTest, EachFilesFooterIndexesItsOwnChunks) {
  TempDir dir;
  {
    RecordingWriterOptions o = IndexedOptions(dir.path());
    o.files.file_bytes = 64 << 10;
    o.encoding = Encoding::kStored;
    RecordingWriter w(std::move(o), TestHeader(true));
    ASSERT_TRUE(w.Open().has_value());
    // 40 buffers of 30 records (6.5 KB each): several files.
    for (uint64_t b = 0; b < 40; ++b) {
      std::vector<uint8_t> buffer;
      for (uint64_t i = 0; i < 30; ++i) {
        const std::vector<uint8_t> r =
            Kernels({{b * 100000 + 1 + i * 10, b * 100000 + 1 + i * 10 + 50, b * 30 + i + 1}});
        buffer.insert(buffer.end(), r.begin(), r.end());
      }
      w.WriteRawBuffer(buffer, 1, 1);
    }
    w.Close(5);
  }
  const auto files = ListFiles(dir.path());
  ASSERT_GE(files.size(), 2u);
  uint64_t raw_chunks = 0, next_min = 1;
  for (const auto& path : files) {
    std::vector<uint8_t> bytes;
    const pb::Footer footer = FooterOf(path, &bytes);
    const ScannedFile f = ScanFile(path);
    ASSERT_TRUE(footer.indexed());
    ASSERT_EQ(static_cast<size_t>(footer.index_size()), f.chunks.size() - 1) << path;
    for (int i = 0; i < footer.index_size(); ++i) {
      const pb::ChunkSpan& e = footer.index(i);
      ASSERT_EQ(e.offset(), f.chunks[i].offset) << path << " " << i;
      if (e.type() != T(ChunkType::kRawBuffer)) continue;
      ++raw_chunks;
      EXPECT_EQ(e.min_ns(), next_min);
      EXPECT_EQ(e.max_ns(), next_min + 290 + 50);
      EXPECT_EQ(e.min_correlation(), (next_min / 100000) * 30 + 1);
      EXPECT_EQ(e.max_correlation(), (next_min / 100000) * 30 + 30);
      next_min += 100000;
    }
  }
  EXPECT_EQ(raw_chunks, 40u);
}

TEST(RecordingWriterTest, AFileWithMoreChunksThanTheIndexHoldsKeepsNone) {
  TempDir dir;
  {
    RecordingWriterOptions o = IndexedOptions(dir.path());
    o.max_indexed_chunks = 6;
    RecordingWriter w(std::move(o), TestHeader(true));
    ASSERT_TRUE(w.Open().has_value());
    for (uint64_t b = 0; b < 10; ++b) w.WriteRawBuffer(Kernels({{b + 1, b + 2, b + 1}}), 1, 1);
    w.Close(5);
  }
  std::vector<uint8_t> bytes;
  const pb::Footer footer = FooterOf(ListFiles(dir.path())[0], &bytes);
  EXPECT_FALSE(footer.indexed());
  EXPECT_EQ(footer.index_size(), 0);
  EXPECT_EQ(footer.records(), 10u);
}

TEST(RecordingWriterTest, AFooterIsFoundFromTheEndOnlyWhenWholeAndLast) {
  TempDir dir;
  {
    RecordingWriter w(IndexedOptions(dir.path()), TestHeader(true));
    ASSERT_TRUE(w.Open().has_value());
    for (uint64_t b = 0; b < 5; ++b) w.WriteRawBuffer(Kernels({{b + 1, b + 2, b + 1}}), 1, 1);
    w.Close(5);
  }
  std::vector<uint8_t> bytes;
  const pb::Footer footer = FooterOf(ListFiles(dir.path())[0], &bytes);
  ASSERT_TRUE(footer.indexed());
  const ScannedFile f = ScanFile(ListFiles(dir.path())[0]);
  const uint64_t footer_at = f.chunks.back().offset;
  // Any byte of the footer changed: no footer (its checksums), never a wrong one.
  for (uint64_t at = footer_at; at < bytes.size(); ++at) {
    std::vector<uint8_t> damaged = bytes;
    damaged[at] ^= 0x20;
    EXPECT_FALSE(ChunkScanner::FindFooter(damaged).has_value()) << "byte " << at;
  }
  // Cut anywhere: no footer (a crash leaves none).
  for (uint64_t cut = 1; cut < bytes.size(); cut += 37)
    EXPECT_FALSE(ChunkScanner::FindFooter(std::span(bytes).first(bytes.size() - cut)).has_value())
        << "cut " << cut;
  // Bytes after the footer: not a cleanly closed file.
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(ChunkScanner::FindFooter(longer).has_value());
  // Beyond the search window: not looked for.
  EXPECT_FALSE(ChunkScanner::FindFooter(bytes, bytes.size() - footer_at - 1).has_value());
  EXPECT_TRUE(ChunkScanner::FindFooter(bytes, bytes.size() - footer_at).has_value());
}

}  // namespace
}  // namespace cupmon
