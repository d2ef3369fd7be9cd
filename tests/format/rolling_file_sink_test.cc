// Tests RollingFileSink (format/src/rolling_file_sink.cc): naming, rotation, retention, cloexec.
#include "cupmon/format/rolling_file_sink.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>

#include "test_files.h"

namespace cupmon {
namespace {

using testing::ListFiles;
using testing::ReadFileBytes;
using testing::TempDir;

struct Fixture {
  TempDir dir;
  int64_t now_ns = 1'000'000'000;
  std::vector<uint32_t> preambles;

  RollingFileSink Make(RollingFileOptions o, FileSystem& fs = PosixFileSystem()) {
    o.directory = dir.path() + "/out";
    o.prefix = "cupmon-host-42";
    return RollingFileSink(
        o, fs, [this] { return now_ns; },
        [this](uint32_t index) {
          preambles.push_back(index);
          return std::vector<uint8_t>(10, static_cast<uint8_t>('A' + index));
        });
  }
};

std::vector<uint8_t> Bytes(size_t n, uint8_t v) { return std::vector<uint8_t>(n, v); }

TEST(RollingFileSinkTest, NamesSortInOrderAndEachFileStartsWithItsPreamble) {
  Fixture f;
  RollingFileOptions o;
  o.file_bytes = 100;
  auto sink = f.Make(o);
  ASSERT_TRUE(sink.Open().has_value());
  for (int i = 0; i < 12; ++i) {
    const auto chunk = Bytes(40, static_cast<uint8_t>(i));
    if (sink.ShouldRotate(chunk.size())) {
      ASSERT_TRUE(sink.Rotate({}).has_value());
    }
    ASSERT_TRUE(sink.Append(chunk, 1, 1).has_value());
  }
  ASSERT_TRUE(sink.Close(Bytes(3, 'Z')).has_value());
  const auto files = ListFiles(f.dir.path() + "/out");
  // 10-byte preamble + two 40-byte chunks per file: 12 chunks make 6 files.
  ASSERT_EQ(files.size(), 6u);
  for (size_t i = 0; i < files.size(); ++i) {
    char expect[64];
    std::snprintf(expect, sizeof(expect), "cupmon-host-42-%06zu.cupmon", i);
    EXPECT_EQ(std::filesystem::path(files[i]).filename().string(), expect);
    const auto bytes = ReadFileBytes(files[i]);
    ASSERT_GE(bytes.size(), 10u);
    EXPECT_EQ(bytes[0], 'A' + i);
    EXPECT_LE(bytes.size(), i + 1 == files.size() ? 103u : 100u);
  }
  EXPECT_EQ(ReadFileBytes(files.back()).back(), 'Z');
  EXPECT_EQ(f.preambles, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
}

TEST(RollingFileSinkTest, AFileTakesAtLeastOneChunkWithRecords) {
  Fixture f;
  RollingFileOptions o;
  o.file_bytes = 20;  // smaller than preamble + chunk
  auto sink = f.Make(o);
  ASSERT_TRUE(sink.Open().has_value());
  EXPECT_FALSE(sink.ShouldRotate(1000));  // nothing with records yet
  ASSERT_TRUE(sink.Append(Bytes(1000, 1), 0, 0).has_value());
  EXPECT_FALSE(sink.ShouldRotate(1000));  // still no records
  ASSERT_TRUE(sink.Append(Bytes(1000, 1), 5, 5).has_value());
  EXPECT_TRUE(sink.ShouldRotate(1));
}

TEST(RollingFileSinkTest, RotatesByAge) {
  Fixture f;
  RollingFileOptions o;
  o.file_age_s = 60;
  auto sink = f.Make(o);
  ASSERT_TRUE(sink.Open().has_value());
  ASSERT_TRUE(sink.Append(Bytes(10, 1), 1, 0).has_value());
  f.now_ns += 59'000'000'000;
  EXPECT_FALSE(sink.ShouldRotate(10));
  f.now_ns += 1'000'000'000;
  EXPECT_TRUE(sink.ShouldRotate(10));
  ASSERT_TRUE(sink.Rotate({}).has_value());
  ASSERT_TRUE(sink.Append(Bytes(10, 1), 1, 0).has_value());
  EXPECT_FALSE(sink.ShouldRotate(10));  // the age restarts with the new file
  EXPECT_EQ(sink.file_index(), 1u);
}

TEST(RollingFileSinkTest, RetentionByCountDeletesOldestFirst) {
  Fixture f;
  RollingFileOptions o;
  o.retention_files = 3;
  auto sink = f.Make(o);
  ASSERT_TRUE(sink.Open().has_value());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(sink.Append(Bytes(50, 1), 10, 7).has_value());
    ASSERT_TRUE(sink.Rotate({}).has_value());
  }
  const auto files = ListFiles(f.dir.path() + "/out");
  ASSERT_EQ(files.size(), 3u);
  EXPECT_NE(files[0].find("-000004.cupmon"), std::string::npos);
  EXPECT_NE(files[2].find("-000006.cupmon"), std::string::npos);
  const auto retired = sink.TakeRetired();
  ASSERT_EQ(retired.size(), 4u);
  for (size_t i = 0; i < retired.size(); ++i) {
    EXPECT_NE(retired[i].path.find("-00000" + std::to_string(i) + ".cupmon"), std::string::npos);
    EXPECT_EQ(retired[i].bytes, 60u);
    EXPECT_EQ(retired[i].records, 10u);
    EXPECT_EQ(retired[i].kernel_records, 7u);
  }
  EXPECT_TRUE(sink.TakeRetired().empty());
}

TEST(RollingFileSinkTest, RetentionByBytesKeepsTheTotalUnderBudget) {
  Fixture f;
  RollingFileOptions o;
  o.file_bytes = 200;
  o.retention_bytes = 1000;
  auto sink = f.Make(o);
  ASSERT_TRUE(sink.Open().has_value());
  for (int i = 0; i < 60; ++i) {
    const auto chunk = Bytes(45, 2);
    if (sink.ShouldRotate(chunk.size())) {
      ASSERT_TRUE(sink.Rotate({}).has_value());
    }
    ASSERT_TRUE(sink.Append(chunk, 1, 1).has_value());
    uint64_t total = 0;
    for (const auto& p : ListFiles(f.dir.path() + "/out")) total += std::filesystem::file_size(p);
    ASSERT_LE(total, 1000u) << "after chunk " << i;
  }
  const auto files = ListFiles(f.dir.path() + "/out");
  const auto retired = sink.TakeRetired();
  ASSERT_FALSE(retired.empty());
  // The oldest went first: every deleted file sorts before every survivor, in deletion order.
  for (size_t i = 1; i < retired.size(); ++i) EXPECT_LT(retired[i - 1].path, retired[i].path);
  EXPECT_LT(retired.back().path, files.front());
  EXPECT_EQ(retired.size() + files.size(), sink.file_index() + 1u);
}

TEST(RollingFileSinkTest, FilesAreOpenedCloseOnExec) {
  Fixture f;
  auto sink = f.Make({});
  ASSERT_TRUE(sink.Open().has_value());
  const std::string target = std::filesystem::canonical(sink.current_path()).string();
  int found = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    char link[PATH_MAX];
    const ssize_t n = ::readlink(e.path().c_str(), link, sizeof(link) - 1);
    if (n <= 0) continue;
    link[n] = 0;
    if (target != link) continue;
    const int fd = std::stoi(e.path().filename().string());
    const int flags = ::fcntl(fd, F_GETFD);
    ASSERT_GE(flags, 0);
    EXPECT_TRUE(flags & FD_CLOEXEC);
    ++found;
  }
  EXPECT_EQ(found, 1);
}

TEST(RollingFileSinkTest, NeverOverwritesAnExistingFile) {
  Fixture f;
  std::filesystem::create_directories(f.dir.path() + "/out");
  { std::ofstream(f.dir.path() + "/out/cupmon-host-42-000000.cupmon") << "precious"; }
  auto sink = f.Make({});
  auto r = sink.Open();
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("cupmon-host-42-000000.cupmon"), std::string::npos);
  EXPECT_EQ(r.error().sys_errno, EEXIST);
  const auto bytes = ReadFileBytes(f.dir.path() + "/out/cupmon-host-42-000000.cupmon");
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), "precious");
}

TEST(RollingFileSinkTest, AppendErrorNamesTheFile) {
  Fixture f;
  testing::FaultyFileSystem fs;
  auto sink = f.Make({}, fs);
  ASSERT_TRUE(sink.Open().has_value());
  fs.space_left = 5;
  auto r = sink.Append(Bytes(50, 1), 1, 1);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().sys_errno, ENOSPC);
  EXPECT_NE(r.error().message.find(sink.current_path()), std::string::npos) << r.error().message;
  // The file keeps only its preamble.
  EXPECT_EQ(ReadFileBytes(sink.current_path()).size(), 10u);
  EXPECT_EQ(sink.current_bytes(), 10u);
}

}  // namespace
}  // namespace cupmon
