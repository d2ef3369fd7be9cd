// Tests the vetting of recording and control directories and the descriptor-relative file
// operations (base/src/file_system.cc), and that RollingFileSink creates, rotates and deletes
// through them, on real directories (chmod, symlinks; chown to another uid when run as root).
#include "cupmon/base/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cupmon/format/rolling_file_sink.h"
#include "test_files.h"

namespace cupmon {
namespace {

using testing::ListFiles;
using testing::TempDir;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// Opens `dir` as the rolling store would and returns the error message ("" when it was accepted).
std::string RefusalOf(const std::string& dir, DirPrivacy privacy = DirPrivacy::kNoOtherWriters) {
  auto fd = OpenVettedDirectory(dir, privacy);
  if (fd) {
    ::close(*fd);
    return "";
  }
  return fd.error().message;
}

RollingFileSink MakeSink(const std::string& dir, RollingFileOptions o = {}) {
  o.directory = dir;
  o.prefix = "rec";
  return RollingFileSink(
      o, PosixFileSystem(), [] { return int64_t{0}; },
      [](uint32_t) { return std::vector<uint8_t>(10, 'P'); });
}

std::vector<uint8_t> Bytes(size_t n) { return std::vector<uint8_t>(n, 1); }

TEST(FileSystemTest, CreatesDirectories0700AndFiles0600WhateverTheUmask) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/b/out";
  const mode_t old = ::umask(0);
  auto sink = MakeSink(dir);
  auto opened = sink.Open();
  ::umask(old);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  EXPECT_EQ(ModeOf(dir), 0700u);
  EXPECT_EQ(ModeOf(tmp.path() + "/a"), 0700u);  // parents cupmon creates are private too
  EXPECT_EQ(ModeOf(sink.current_path()), 0600u);
  ASSERT_TRUE(sink.Close({}).has_value());
}

TEST(FileSystemTest, AcceptsAnExistingDirectoryOthersMayReadButNotWrite) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/out";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);
  EXPECT_EQ(RefusalOf(dir), "");
  EXPECT_EQ(ModeOf(dir), 0755u);  // an existing directory's mode is the user's business
  // The control and registry directories are stricter.
  EXPECT_NE(RefusalOf(dir, DirPrivacy::kOwnerOnly).find("chmod 700 " + dir), std::string::npos);
}

TEST(FileSystemTest, RefusesGroupOrWorldWritableDirectories) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/out";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  EXPECT_NE(RefusalOf(dir).find("refusing directory " + dir + ": group-writable (mode 0775"),
            std::string::npos)
      << RefusalOf(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 01777), 0);  // sticky like /tmp: others still create files in it
  EXPECT_NE(RefusalOf(dir).find("world-writable (mode 1777"), std::string::npos) << RefusalOf(dir);

  // The sink reports it, writes nothing there, and works once the mode is fixed.
  auto sink = MakeSink(dir);
  auto opened = sink.Open();
  ASSERT_FALSE(opened.has_value());
  EXPECT_NE(opened.error().message.find("world-writable"), std::string::npos);
  EXPECT_FALSE(sink.Append(Bytes(20), 1, 1).has_value());
  EXPECT_TRUE(ListFiles(dir).empty());
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  EXPECT_TRUE(sink.Append(Bytes(20), 1, 1).has_value());
  EXPECT_EQ(ListFiles(dir).size(), 1u);
}

TEST(FileSystemTest, RefusesASymbolicLinkButFollowsLinksAbove) {
  TempDir tmp;
  const std::string real = tmp.path() + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  const std::string link = tmp.path() + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  EXPECT_NE(RefusalOf(link).find("refusing directory " + link + ": it is a symbolic link"),
            std::string::npos)
      << RefusalOf(link);
  // A dangling link is not replaced by a directory either.
  const std::string dangling = tmp.path() + "/dangling";
  ASSERT_EQ(::symlink((tmp.path() + "/nowhere").c_str(), dangling.c_str()), 0);
  EXPECT_NE(RefusalOf(dangling).find("symbolic link"), std::string::npos) << RefusalOf(dangling);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/nowhere"));
  // A link further up (like /var/run -> /run) is the user's choice of path.
  EXPECT_EQ(RefusalOf(link + "/out"), "");
  EXPECT_TRUE(std::filesystem::is_directory(real + "/out"));
}

TEST(FileSystemTest, RefusesAFile) {
  TempDir tmp;
  const std::string file = tmp.path() + "/file";
  std::ofstream(file) << "x";
  EXPECT_NE(RefusalOf(file).find("exists and is not a directory"), std::string::npos)
      << RefusalOf(file);
}

TEST(FileSystemTest, RefusesADirectoryOwnedByAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown a directory to uid 65534";
  TempDir tmp;
  const std::string dir = tmp.path() + "/theirs";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
  const std::string why = RefusalOf(dir);
  EXPECT_NE(why.find("refusing directory " + dir + ": owned by uid 65534, not 0"), std::string::npos)
      << why;
  auto sink = MakeSink(dir);
  EXPECT_FALSE(sink.Open().has_value());
  EXPECT_TRUE(ListFiles(dir).empty());  // root could have written there: it did not
}

// The directory is judged once and then held by descriptor: replacing it with a symlink to another
// directory afterwards does not redirect new files or retention's deletes.
TEST(FileSystemTest, ADirectorySwappedForASymlinkLaterRedirectsNothing) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/out";
  const std::string moved = tmp.path() + "/out.moved";
  const std::string elsewhere = tmp.path() + "/elsewhere";
  ASSERT_EQ(::mkdir(elsewhere.c_str(), 0700), 0);
  RollingFileOptions o;
  o.retention_files = 2;
  auto sink = MakeSink(dir, o);
  ASSERT_TRUE(sink.Open().has_value());
  ASSERT_TRUE(sink.Append(Bytes(20), 1, 1).has_value());
  const std::string first = std::filesystem::path(sink.current_path()).filename();
  ASSERT_EQ(::rename(dir.c_str(), moved.c_str()), 0);
  ASSERT_EQ(::symlink(elsewhere.c_str(), dir.c_str()), 0);
  // A file of the victim's with the name retention will delete next.
  std::ofstream(elsewhere + "/" + first) << "victim";

  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(sink.Rotate({}).has_value());
    ASSERT_TRUE(sink.Append(Bytes(20), 1, 1).has_value());
  }
  ASSERT_TRUE(sink.Close({}).has_value());
  EXPECT_EQ(ListFiles(elsewhere).size(), 1u);  // only the victim's file, untouched
  EXPECT_TRUE(std::filesystem::exists(elsewhere + "/" + first));
  const auto kept = ListFiles(moved);
  EXPECT_EQ(kept.size(), 2u);  // retention worked in the real directory
  EXPECT_FALSE(std::filesystem::exists(moved + "/" + first));
}

TEST(FileSystemTest, DeletesAndCreatesNeverFollowAPlantedSymlink) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/out";
  auto fd = PosixFileSystem().OpenDirectory(dir);
  ASSERT_TRUE(fd.has_value()) << fd.error().message;
  const std::string target = tmp.path() + "/target";
  std::ofstream(target) << "keep";
  ASSERT_EQ(::symlink(target.c_str(), (dir + "/planted").c_str()), 0);
  auto created = PosixFileSystem().CreateExclusive(*fd, dir, "planted");
  ASSERT_FALSE(created.has_value());
  EXPECT_NE(created.error().message.find(dir + "/planted"), std::string::npos);
  ASSERT_TRUE(PosixFileSystem().Remove(*fd, dir, "planted").has_value());  // removes the link only
  EXPECT_TRUE(std::filesystem::exists(target));
  EXPECT_TRUE(PosixFileSystem().Remove(*fd, dir, "absent").has_value());
  ::close(*fd);
}

}  // namespace
}  // namespace cupmon
