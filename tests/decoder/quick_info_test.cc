// info --quick (decoder/src/quick_info.cc): footers only.
#include "cupmon/decoder/quick_info.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "recording_builder.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

using testing::TempDir;

TEST(QuickInfoTest, FootersGiveFilesRecordsAndTimeSpan) {
  TempDir dir;
  const size_t records = testing::WriteSampleRecording(dir.path());
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  const QuickRecording q = ReadQuick(listing->recordings[0]);
  ASSERT_EQ(q.files.size(), 1u);
  const QuickFile& f = q.files[0];
  EXPECT_TRUE(f.footer) << f.no_footer;
  EXPECT_TRUE(f.ended);
  EXPECT_TRUE(f.indexed);
  EXPECT_EQ(f.records, records);
  EXPECT_GE(f.raw_chunks, 1u);
  EXPECT_LT(f.untimed_raw_chunks, f.raw_chunks);
  ASSERT_TRUE(q.have_stats);
  EXPECT_EQ(q.stats.records(), records);
  EXPECT_GT(q.first_wall_ns, 0);
  EXPECT_LE(q.first_wall_ns, q.last_wall_ns);
  std::ostringstream out;
  PrintQuickInfo({q}, out);
  EXPECT_NE(out.str().find("with a footer: 1, indexed: 1"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("records in files with a footer: " + std::to_string(records)),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("indexed records from 20"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("plain `cupmon-decode info` reads them all"), std::string::npos);
}

TEST(QuickInfoTest, AFileWithoutItsFooterIsNamedNotCounted) {
  TempDir dir;
  testing::WriteSampleRecording(dir.path());
  auto listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  const std::string path = listing->recordings[0].files[0].path;
  // Cut as a crash cuts a file: the footer's last bytes never reached the disk.
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 3);
  listing = ListRecordings(dir.path());
  ASSERT_TRUE(listing && listing->recordings.size() == 1u);
  const QuickRecording q = ReadQuick(listing->recordings[0]);
  ASSERT_EQ(q.files.size(), 1u);
  EXPECT_FALSE(q.files[0].footer);
  EXPECT_FALSE(q.have_stats);
  EXPECT_EQ(q.first_wall_ns, 0);
  std::ostringstream out;
  PrintQuickInfo({q}, out);
  EXPECT_NE(out.str().find("with a footer: 0"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(path + ": no footer (cut by a crash"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace cupmon::decoder
