// Device memory from CUPTI MEMORY2 / MEMORY_POOL records: the decoded rows, the running sums per
// device (peak and when, counts, sizes, a release of an unknown address, two devices, records out
// of time order), the summary's "Device memory" section, and damaged records.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/trace_builder.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::kT0;
using testing::TempDir;

constexpr uint64_t kMiB = 1 << 20;
uint64_t Us(uint64_t n) { return kT0 + n * 1000; }

class MemorySink : public RowSink {
 public:
  explicit MemorySink(bool wants) : wants_(wants) {}
  void OnRow(const Row& r) override {
    if (r.type == RowType::kMemory) {
      memory.push_back(r);
      usage.Add(r);
    } else {
      ++others;
    }
  }
  bool WantsMemory() const override { return wants_; }
  std::vector<Row> memory;
  MemoryUsage usage;
  size_t others = 0;

 private:
  bool wants_;
};

TraceCounts Build(const std::string& dir, MemorySink* sink, TraceFilter filter = {}) {
  auto listing = ListRecordings(dir);
  EXPECT_TRUE(listing.has_value());
  TraceBuilder b(std::move(filter), sink);
  ReadIntegrity integrity;
  ReadRecording(listing->recordings.at(0), b, &integrity);
  b.Finish();
  sink->usage.Finish();
  return b.counts();
}

TEST(MemoryTest, RowsCarryEveryDecodedField) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  MemorySink sink(true);
  const TraceCounts c = Build(dir.path(), &sink);
  EXPECT_EQ(c.memory_records, 9u);
  EXPECT_EQ(c.memory_pool_records, 2u);
  EXPECT_EQ(c.memory_rows, 11u);
  EXPECT_EQ(c.records_not_decoded, 0u);
  ASSERT_EQ(sink.memory.size(), 11u);
  EXPECT_EQ(sink.others, 2u);  // the kernel and its launch
  // The 2 MiB allocation came from the pool at 0x70000000 (delivery order: pool, 1 MiB, 2 MiB).
  const Row& r = sink.memory[2];
  EXPECT_EQ(r.kind, kKindMemory2);
  EXPECT_EQ(r.memory.op, 1u);
  EXPECT_EQ(r.memory.kind, 3u);
  EXPECT_EQ(r.address, 0x2000'0000u);
  EXPECT_EQ(r.bytes, 2 * kMiB);
  EXPECT_EQ(r.start, Us(20));
  EXPECT_EQ(r.stream, 7u);
  EXPECT_EQ(r.context, 1u);
  EXPECT_EQ(r.pid, testing::kTestPid);
  EXPECT_EQ(r.memory.pool_type, 1u);
  EXPECT_EQ(r.pool_address, 0x7000'0000u);
  const Row& pool = sink.memory[0];
  EXPECT_EQ(pool.kind, kKindMemoryPool);
  EXPECT_EQ(pool.memory.op, 1u);
  EXPECT_EQ(pool.address, 0x7000'0000u);
  EXPECT_EQ(pool.bytes, 32 * kMiB);
}

TEST(MemoryTest, SinksThatDoNotAskGetNoMemoryRows) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  MemorySink sink(false);
  const TraceCounts c = Build(dir.path(), &sink);
  EXPECT_TRUE(sink.memory.empty());
  EXPECT_EQ(sink.others, 2u);
  EXPECT_EQ(c.memory_records, 9u);  // still counted
  EXPECT_EQ(c.memory_rows, 0u);
}

TEST(MemoryTest, PeakCountsAndSizesPerDeviceInTimeOrder) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  MemorySink sink(true);
  Build(dir.path(), &sink);
  const auto& devs = sink.usage.devices();
  ASSERT_EQ(devs.size(), 2u);
  const MemoryDeviceStats& d0 = devs.at(0);
  // 1 MiB at 10, +2 MiB at 20, -1 MiB at 30, +4 MiB at 40: 6 MiB, the peak.
  EXPECT_EQ(d0.peak, 6 * kMiB);
  EXPECT_EQ(d0.peak_ts, Us(40));
  EXPECT_EQ(d0.in_use, 2 * kMiB + 256 * 1024);
  EXPECT_EQ(d0.allocations, 4u);
  EXPECT_EQ(d0.releases, 3u);
  EXPECT_EQ(d0.unknown_releases, 1u);  // 0xdead0000; the out-of-order release at 50 is known
  EXPECT_EQ(d0.replaced, 0u);
  EXPECT_EQ(d0.alloc_bytes, 7 * kMiB + 256 * 1024);
  EXPECT_EQ(d0.alloc_min, 256u * 1024);
  EXPECT_EQ(d0.alloc_max, 4 * kMiB);
  ASSERT_EQ(d0.by_kind.size(), 2u);
  EXPECT_EQ(d0.by_kind.at(3).allocations, 3u);
  EXPECT_EQ(d0.by_kind.at(3).bytes, 7 * kMiB);
  EXPECT_EQ(d0.by_kind.at(5).allocations, 1u);
  EXPECT_EQ(d0.pools_created, 1u);
  EXPECT_EQ(d0.pools_trimmed, 1u);
  EXPECT_EQ(d0.pools_destroyed, 0u);
  EXPECT_EQ(d0.pool_max_size, 32 * kMiB);
  const MemoryDeviceStats& d1 = devs.at(1);
  EXPECT_EQ(d1.peak, 8 * kMiB);
  EXPECT_EQ(d1.peak_ts, Us(15));
  EXPECT_EQ(d1.in_use, 0u);
  EXPECT_EQ(d1.allocations, 1u);
  EXPECT_EQ(d1.releases, 1u);
  // Steps are in time order across devices.
  const auto& steps = sink.usage.steps();
  ASSERT_FALSE(steps.empty());
  for (size_t i = 1; i < steps.size(); ++i) EXPECT_LE(steps[i - 1].ts, steps[i].ts);
  EXPECT_EQ(steps.front().ts, Us(10));
  EXPECT_EQ(steps.back().in_use, d0.in_use);
}

TEST(MemoryTest, DeviceFilterKeepsOneDevice) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  MemorySink sink(true);
  TraceFilter f;
  f.device = 1;
  Build(dir.path(), &sink, f);
  ASSERT_EQ(sink.usage.devices().size(), 1u);
  EXPECT_EQ(sink.usage.devices().at(1).peak, 8 * kMiB);
}

TEST(MemoryTest, ReallocatingALiveAddressTakesTheOldOneAsReleased) {
  MemoryUsage u;
  Row r;
  r.type = RowType::kMemory;
  r.kind = kKindMemory2;
  r.valid_time = true;
  r.memory.op = 1;
  r.address = 0x10;
  r.start = 100;
  r.bytes = 1000;
  u.Add(r);
  r.start = 200;
  r.bytes = 300;
  u.Add(r);  // same address again: its release was not recorded
  r.valid_time = false;
  u.Add(r);  // unknown time: counted, left out
  r.valid_time = true;
  r.start = 300;
  r.memory.op = 7;  // not a CUPTI operation type
  u.Add(r);
  u.Finish();
  const MemoryDeviceStats& d = u.devices().at(0);
  EXPECT_EQ(d.replaced, 1u);
  EXPECT_EQ(d.in_use, 300u);
  EXPECT_EQ(d.peak, 1000u);
  EXPECT_EQ(d.peak_ts, 100u);
  EXPECT_EQ(u.untimed(), 1u);
  EXPECT_EQ(u.unknown_operations(), 1u);
}

TEST(MemoryTest, SummaryHasADeviceMemorySection) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  std::ostringstream out, err;
  ReportOptions o;
  RunReport(ReportKind::kSummary, dir.path(), o, out, err);
  const std::string s = out.str();
  EXPECT_NE(s.find("==cupmon== Device memory: 9 MEMORY2 records, 2 MEMORY_POOL records; bytes "
                   "in use are those allocated since the recording began\n"),
            std::string::npos)
      << s;
  // No calibration: the CUPTI clock is the wall clock, so the peak at 40 us reads as such.
  EXPECT_NE(s.find("device 0: peak 6291456 B (6.00 MiB) in use at "
                   "2026-01-01T00:00:00.000040000Z; 2359296 B (2.25 MiB) at the end\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("4 allocations, 3 releases (1 of an address not allocated since the "
                   "recording began: not subtracted)\n"),
            std::string::npos);
  EXPECT_NE(s.find("allocation size: total 7602176 B (7.25 MiB), min 262144 B (256.00 KiB), "
                   "max 4194304 B (4.00 MiB), mean 1900544 B (1.81 MiB)\n"),
            std::string::npos);
  EXPECT_NE(s.find("device: 3 allocations, 7340032 B (7.00 MiB)\n"), std::string::npos);
  EXPECT_NE(s.find("managed: 1 allocations, 262144 B (256.00 KiB)\n"), std::string::npos);
  EXPECT_NE(s.find("pools: 1 created, 1 trimmed, 0 destroyed, largest size 33554432 B"),
            std::string::npos);
  EXPECT_NE(s.find("device 1: peak 8388608 B (8.00 MiB) in use at "
                   "2026-01-01T00:00:00.000015000Z; 0 B at the end\n"),
            std::string::npos);
}

TEST(MemoryTest, JsonlHasMemoryRows) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  std::ostringstream out, err;
  ReportOptions o;
  o.format = ExportFormat::kJsonl;
  RunReport(ReportKind::kExport, dir.path(), o, out, err);
  const std::string s = out.str();
  EXPECT_NE(s.find("\"type\":\"memory\",\"kind\":49,\"operation\":\"allocation\",\"ts_ns\":"
                   "1767225600000020000,\"device\":0,\"pid\":4242,\"correlation_id\":0,"
                   "\"address\":536870912,\"bytes\":2097152,\"pool_type\":1,"
                   "\"memory_kind\":\"device\",\"context\":1,\"stream\":7,"
                   "\"pool_address\":1879048192}\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\"kind\":50,\"operation\":\"trimmed\""), std::string::npos);
  size_t rows = 0;
  for (size_t at = s.find("\"type\":\"memory\""); at != std::string::npos;
       at = s.find("\"type\":\"memory\"", at + 1))
    ++rows;
  EXPECT_EQ(rows, 11u);
}

TEST(MemoryTest, ChromeJsonHasBytesInUseCountersInTimeOrder) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  std::ostringstream out, err;
  ReportOptions o;
  o.format = ExportFormat::kChromeJson;
  RunReport(ReportKind::kExport, dir.path(), o, out, err);
  const std::string s = out.str();
  std::vector<uint64_t> values;
  const std::string key = "\"ph\":\"C\"";
  for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + 1)) {
    const std::string args = "\"args\":{\"bytes\":";
    const size_t v = s.find(args, at);
    ASSERT_NE(v, std::string::npos);
    values.push_back(std::stoull(s.substr(v + args.size())));
  }
  // Device 0 at 10, 20, 30, 40, 50, 70 us and device 1 at 15, 35 us, merged by time.
  const std::vector<uint64_t> want = {1 * kMiB, 8 * kMiB, 3 * kMiB, 2 * kMiB,
                                      0,        6 * kMiB, 2 * kMiB, 2 * kMiB + 256 * 1024};
  EXPECT_EQ(values, want) << s;
  EXPECT_NE(s.find("\"name\":\"memory in use (since the recording began)\""), std::string::npos);
}

// A JSONL row's unsigned field (the timeline writes flat objects of numbers and one string).
uint64_t Field(const std::string& row, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = row.find(k);
  EXPECT_NE(at, std::string::npos) << key << " in " << row;
  return at == std::string::npos ? 0 : std::stoull(row.substr(at + k.size()));
}

TEST(MemoryTest, TimelineHasBytesInUseAtEachBucketsEndAndItsPeak) {
  TempDir dir;
  testing::WriteMemoryRecording(dir.path());
  std::ostringstream out, err;
  ReportOptions o;
  o.format = ExportFormat::kJsonl;
  o.timeline.bucket_ns = 10'000;  // 10 us: one change (or none) per bucket and device
  EXPECT_EQ(RunReport(ReportKind::kTimeline, dir.path(), o, out, err), kExitClean) << err.str();
  struct Want {
    uint32_t device;
    uint64_t at_us, in_use, peak, allocations, releases;
  };
  // Device 0: +1 MiB at 10, +2 MiB at 20, -1 MiB at 30, +4 MiB at 40, -4 MiB at 50 (delivered
  // before its allocation), a release of an unknown address at 60, +256 KiB at 70. Device 1:
  // +8 MiB at 15, -8 MiB at 35. A bucket's peak includes what it began with.
  const std::vector<Want> want = {
      {0, 10, 1 * kMiB, 1 * kMiB, 1, 0},  {1, 10, 8 * kMiB, 8 * kMiB, 1, 0},
      {0, 20, 3 * kMiB, 3 * kMiB, 1, 0},  {1, 20, 8 * kMiB, 8 * kMiB, 0, 0},
      {0, 30, 2 * kMiB, 3 * kMiB, 0, 1},  {1, 30, 0, 8 * kMiB, 0, 1},
      {0, 40, 6 * kMiB, 6 * kMiB, 1, 0},  {1, 40, 0, 0, 0, 0},
      {0, 50, 2 * kMiB, 6 * kMiB, 0, 1},  {1, 50, 0, 0, 0, 0},
      {0, 60, 2 * kMiB, 2 * kMiB, 0, 1},  {1, 60, 0, 0, 0, 0},
      {0, 70, 2 * kMiB + 256 * 1024, 2 * kMiB + 256 * 1024, 1, 0},  {1, 70, 0, 0, 0, 0},
  };
  std::istringstream rows(out.str());
  std::string row;
  size_t i = 0;
  for (; std::getline(rows, row); ++i) {
    ASSERT_LT(i, want.size()) << row;
    const Want& w = want[i];
    EXPECT_EQ(Field(row, "device"), w.device) << row;
    EXPECT_EQ(Field(row, "bucket_start_ns"), Us(w.at_us)) << row;
    EXPECT_EQ(Field(row, "memory_in_use_bytes"), w.in_use) << row;
    EXPECT_EQ(Field(row, "memory_peak_bytes"), w.peak) << row;
    EXPECT_EQ(Field(row, "allocations"), w.allocations) << row;
    EXPECT_EQ(Field(row, "releases"), w.releases) << row;
  }
  EXPECT_EQ(i, want.size());
  EXPECT_NE(err.str().find("1 release(s) of memory whose allocation the recording lacks"),
            std::string::npos)
      << err.str();
  // The CSV carries the same figures in its last four columns.
  std::ostringstream csv, csv_err;
  o.format = ExportFormat::kCsv;
  RunReport(ReportKind::kTimeline, dir.path(), o, csv, csv_err);
  const std::string text = csv.str();
  EXPECT_NE(text.find(",memsets,memory_in_use_bytes,memory_peak_bytes,allocations,releases\n"),
            std::string::npos);
  // Device 0's bucket at 50 us: no memsets, 2 MiB in use, 6 MiB peak, no allocation, 1 release.
  EXPECT_NE(text.find(",0,0," + std::to_string(2 * kMiB) + "," + std::to_string(6 * kMiB) +
                      ",0,1\n"),
            std::string::npos)
      << text;
}

TEST(MemoryTest, SummaryWithoutMemoryRecordsHasNoSection) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  std::ostringstream out, err;
  RunReport(ReportKind::kSummary, dir.path(), ReportOptions{}, out, err);
  EXPECT_EQ(out.str().find("Device memory"), std::string::npos);
}

// Every truncation of the memory buffer decodes without a crash, and never reports more bytes in
// use than were allocated.
TEST(MemoryTest, TruncatedAndDamagedMemoryBuffersAreSafe) {
  testing::BufferBuilder mem;
  mem.Memory(1, Us(10), 0x10, 4096).Memory(2, Us(20), 0x10, 4096).Memory(1, Us(30), 0x20, 100);
  const std::vector<uint8_t> full = mem.bytes();
  for (size_t len = 0; len <= full.size(); len += 8) {
    for (int flip = 0; flip < 2; ++flip) {
      TempDir dir;
      RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
      ASSERT_TRUE(w.Open().has_value());
      std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<long>(len));
      if (flip && len > 40) part[len / 2] ^= 0xff;  // garbage inside a record
      testing::BufferBuilder api;
      api.Runtime(Us(1), Us(2), 1, 211);
      w.WriteRawBuffer(api.bytes(), 0, 0);
      w.WriteRawBuffer(part, 0, 0);
      w.Close(static_cast<int64_t>(kT0) + 1'000'000);
      MemorySink sink(true);
      Build(dir.path(), &sink);
      for (const auto& [dev, d] : sink.usage.devices()) EXPECT_LE(d.in_use, d.alloc_bytes);
      std::ostringstream out, err;
      RunReport(ReportKind::kSummary, dir.path(), ReportOptions{}, out, err);
    }
  }
}

}  // namespace
}  // namespace cupmon::decoder
