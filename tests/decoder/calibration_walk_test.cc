// WalkCalibration (decoder/src/calibration_walk.h) and `report`'s bucket plan (PlanBuckets,
// decoder/src/commands/html_report_read.cc): the span of a recording's records guessed without
// reading them, from its footers' chunk index or, for files without one, from the times of its
// calibration samples.
#include "calibration_walk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "commands/html_report_page.h"
#include "cupmon/base/check.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/format/chunk.h"
#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

using testing::BufferBuilder;
using testing::kT0;
using testing::TempDir;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kWallAhead = 2000;  // the CUPTI clock is 2 us behind the wall clock

// Kernels of 100 us, one a second for `seconds` s from kT0, and a calibration sample every
// `sample_every` s from kT0 on; the file rotates after `rotate_at` s when that is > 0. Closed
// with a footer. Returns the records' span in ns.
uint64_t WriteLoop(const std::string& dir, int seconds, int sample_every, int rotate_at = 0) {
  RecordingWriter w(testing::WriterOptions(dir, "cupmon-loop-4242"), testing::SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  std::vector<pb::StringEntry> strings(1);
  strings[0].set_id(1), strings[0].set_pointer(0x1000), strings[0].set_text("_Z4stepv");
  w.AddStrings(strings);
  for (int s = 0; s < seconds; ++s) {
    const uint64_t t = kT0 + static_cast<uint64_t>(s) * kSecond;
    if (s % sample_every == 0) {
      pb::Calibration cal;
      auto* sample = cal.add_samples();
      sample->set_cupti_ns(t);
      sample->set_realtime_ns(static_cast<int64_t>(t) + kWallAhead);
      w.WriteCalibration(cal);
    }
    if (rotate_at > 0 && s == rotate_at) w.Rotate();
    BufferBuilder b;
    b.Kernel(t, t + 100'000, static_cast<uint32_t>(s + 1), 0x1000);
    w.WriteRawBuffer(b.bytes(), 1, 7);
  }
  w.Close(static_cast<int64_t>(kT0) + seconds * kSecond);
  return static_cast<uint64_t>(seconds - 1) * kSecond + 100'000;
}

std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".cupmon") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Cut as a crash cuts a file: the footer's last bytes never reached the disk.
void Cut(const std::string& path) {
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
}

html::BucketPlan Plan(const std::string& dir) {
  auto listing = ListRecordings(dir);
  CUPMON_CHECK(listing && listing->recordings.size() == 1u);
  return html::PlanBuckets(listing->recordings[0]);
}

bool Plans(const html::BucketPlan& plan, uint64_t span) {
  return std::find(plan.sizes.begin(), plan.sizes.end(), html::BucketFor(span)) != plan.sizes.end();
}

TEST(CalibrationWalkTest, GivesEverySampleOfAFileWithOrWithoutItsFooter) {
  TempDir dir;
  WriteLoop(dir.path(), 100, 10);
  const std::string path = Files(dir.path()).at(0);
  for (bool cut : {false, true}) {
    SCOPED_TRACE(cut ? "cut" : "whole");
    if (cut) Cut(path);
    const CalibrationTimes t = WalkCalibration(Bytes(path));
    EXPECT_EQ(t.samples, 10u);
    EXPECT_EQ(t.first_ns, static_cast<int64_t>(kT0) + kWallAhead);
    EXPECT_EQ(t.last_ns, static_cast<int64_t>(kT0) + 90 * kSecond + kWallAhead);
    EXPECT_EQ(t.longest_gap_ns, 10 * kSecond);
  }
}

TEST(CalibrationWalkTest, StopsAtADamagedHeaderOrACutChunkAndKeepsWhatCameBefore) {
  TempDir dir;
  WriteLoop(dir.path(), 100, 10);
  const std::vector<uint8_t> whole = Bytes(Files(dir.path()).at(0));
  // The offsets of the calibration chunks, by a walk of the headers.
  std::vector<uint64_t> at;
  for (uint64_t pos = 0; whole.size() - pos >= kChunkHeaderSize;) {
    ChunkHeader h;
    ASSERT_EQ(DecodeChunkHeader(whole.data() + pos, &h), HeaderStatus::kOk);
    if (h.type == static_cast<uint8_t>(ChunkType::kCalibration)) at.push_back(pos);
    pos += kChunkHeaderSize + h.payload_length;
  }
  ASSERT_EQ(at.size(), 10u);
  // A damaged header before the sixth sample: the first five.
  std::vector<uint8_t> damaged = whole;
  damaged[at[5] + 8] ^= 0x40;
  CalibrationTimes t = WalkCalibration(damaged);
  EXPECT_EQ(t.samples, 5u);
  EXPECT_EQ(t.last_ns, static_cast<int64_t>(kT0) + 40 * kSecond + kWallAhead);
  // Cut inside the eighth sample's chunk: the first seven.
  t = WalkCalibration(std::span<const uint8_t>(whole).first(at[7] + kChunkHeaderSize + 1));
  EXPECT_EQ(t.samples, 7u);
  EXPECT_EQ(t.last_ns, static_cast<int64_t>(kT0) + 60 * kSecond + kWallAhead);
  // A damaged payload in the third sample's chunk: the first two.
  damaged = whole;
  damaged[at[2] + kChunkHeaderSize] ^= 0x01;
  EXPECT_EQ(WalkCalibration(damaged).samples, 2u);
  EXPECT_EQ(WalkCalibration({}).samples, 0u);
}

TEST(ReportBucketPlanTest, HoldsTheSizeTheRecordsSpanAsksForWithOrWithoutTheIndex) {
  TempDir closed, last_cut, all_cut;
  const uint64_t span = WriteLoop(closed.path(), 100, 10);
  WriteLoop(last_cut.path(), 100, 10, 60);
  WriteLoop(all_cut.path(), 100, 10);
  ASSERT_EQ(Files(last_cut.path()).size(), 2u);
  Cut(Files(last_cut.path()).back());
  Cut(Files(all_cut.path()).at(0));
  for (const TempDir* dir : {&closed, &last_cut, &all_cut}) {
    SCOPED_TRACE(dir->path());
    const html::BucketPlan plan = Plan(dir->path());
    EXPECT_TRUE(Plans(plan, span));
    ASSERT_GT(plan.fine, 0u);
    for (uint64_t size : plan.sizes) EXPECT_EQ(size % plan.fine, 0u) << size;
  }
  // Without an index the guess is wider, never narrower.
  EXPECT_GE(Plan(all_cut.path()).sizes.size(), Plan(closed.path()).sizes.size());
}

TEST(ReportBucketPlanTest, NoPlanWhereNoSpanCanBeGuessed) {
  // One sample, in a file without its footer: the records' end is not known.
  TempDir one_sample;
  WriteLoop(one_sample.path(), 30, 1000);
  Cut(Files(one_sample.path()).at(0));
  EXPECT_TRUE(Plan(one_sample.path()).sizes.empty());
}

}  // namespace
}  // namespace cupmon::decoder
