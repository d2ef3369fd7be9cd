// OutputFile: what `cupmon-decode -o FILE` writes through. A write that fails (a file size limit
// standing in for a full disk, /dev/full) is reported with its reason and leaves FILE as it was.
#include "cupmon/decoder/output_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace cupmon::decoder {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  static std::string Read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  // Names in the directory: after any outcome, only FILE (or nothing), never a temporary.
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }

  testing::TempDir tmp_;
  const std::string dir_ = tmp_.path();
};

// Every size of write, including single characters through overflow() and blocks larger than
// the buffer, arrives in order.
TEST_F(OutputFileTest, WritesEveryByteAndRenamesOntoThePath) {
  const std::string path = dir_ + "/out.json";
  auto f = OutputFile::Open(path);
  ASSERT_TRUE(f) << f.error().message;
  std::string want;
  for (int i = 0; i < 5000; ++i) {
    const std::string piece = std::to_string(i) + (i % 7 ? "," : "\n");
    (*f)->stream() << piece;
    want += piece;
    if (i % 1000 == 0) {
      const std::string big(300000 + i, static_cast<char>('a' + i % 26));
      (*f)->stream() << big;
      want += big;
    }
    (*f)->stream() << 'x';
    want += 'x';
  }
  EXPECT_FALSE(fs::exists(path)) << "written in place before Commit";
  ASSERT_TRUE((*f)->Commit());
  EXPECT_EQ(Read(path), want);
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

TEST_F(OutputFileTest, ReplacedFileKeepsItsPermissions) {
  const std::string path = dir_ + "/out.csv";
  Write(path, "old");
  ASSERT_EQ(chmod(path.c_str(), 0640), 0);
  auto f = OutputFile::Open(path);
  ASSERT_TRUE(f) << f.error().message;
  (*f)->stream() << "new";
  ASSERT_TRUE((*f)->Commit());
  EXPECT_EQ(Read(path), "new");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(OutputFileTest, WithoutCommitTheOldFileStaysAndTheTemporaryGoes) {
  const std::string path = dir_ + "/out.csv";
  Write(path, "old");
  {
    auto f = OutputFile::Open(path);
    ASSERT_TRUE(f) << f.error().message;
    (*f)->stream() << std::string(200000, 'n');
  }
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.csv"});
}

// A file size limit (RLIMIT_FSIZE, with SIGXFSZ ignored) makes write() fail part way with EFBIG,
// as a full disk fails with ENOSPC: the error names the path and the reason, the old file stays.
TEST_F(OutputFileTest, AFailedWriteIsReportedAndTheOldFileStays) {
  const std::string path = dir_ + "/out.json";
  Write(path, "old");
  Expected<std::unique_ptr<OutputFile>> f = MakeError("not opened");
  bool good_after = true;
  Expected<void> committed;
  {
    testing::ScopedFileSizeLimit limit(100000);
    ASSERT_TRUE(limit.ok());
    f = OutputFile::Open(path);
    if (f) {
      for (int i = 0; i < 1000; ++i) (*f)->stream() << std::string(1000, 'x') << i << '\n';
      good_after = static_cast<bool>((*f)->stream());
      committed = (*f)->Commit();
    }
  }
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_FALSE(good_after) << "the stream stays good after a failed write";
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().sys_errno, EFBIG);
  EXPECT_NE(committed.error().message.find("cannot write " + path + ": File too large"),
            std::string::npos)
      << committed.error().message;
  EXPECT_NE(committed.error().message.find("left as it was"), std::string::npos);
  EXPECT_EQ(Read(path), "old");
  EXPECT_EQ(Names(), std::vector<std::string>{"out.json"});
}

// A device is written in place: /dev/null takes everything, /dev/full fails with ENOSPC.
TEST_F(OutputFileTest, DevicesAreWrittenInPlace) {
  auto null = OutputFile::Open("/dev/null");
  ASSERT_TRUE(null) << null.error().message;
  (*null)->stream() << std::string(1 << 20, 'z');
  EXPECT_TRUE((*null)->Commit());
  EXPECT_TRUE(fs::is_character_file("/dev/null")) << "/dev/null was replaced";
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  auto full = OutputFile::Open("/dev/full");
  ASSERT_TRUE(full) << full.error().message;
  (*full)->stream() << std::string(1 << 20, 'z');
  auto committed = (*full)->Commit();
  ASSERT_FALSE(committed);
  EXPECT_EQ(committed.error().sys_errno, ENOSPC);
  EXPECT_NE(committed.error().message.find("writing /dev/full failed: No space left on device"),
            std::string::npos)
      << committed.error().message;
}

TEST_F(OutputFileTest, AnUncreatableFileIsRefusedAtOpen) {
  auto missing = OutputFile::Open(dir_ + "/no-such-dir/out.csv");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_NE(missing.error().message.find("cannot write " + dir_ + "/no-such-dir/out.csv"),
            std::string::npos)
      << missing.error().message;
  auto directory = OutputFile::Open(dir_);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().message, "cannot write " + dir_ + ": is a directory");
}

}  // namespace
}  // namespace cupmon::decoder
