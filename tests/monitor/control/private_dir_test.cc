// Tests that control and registry directories are created private and that unsafe ones are refused.
#include "cupmon/control/private_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace cupmon::control {
namespace {

class PrivateDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cupmon-private-dir-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
};

TEST_F(PrivateDirTest, CreatesNestedDirectory0700EvenWithPermissiveUmask) {
  const mode_t old = ::umask(0);
  const std::string path = root_ + "/a/b/control";
  auto made = EnsurePrivateDir(path);
  ::umask(old);
  ASSERT_TRUE(made.has_value()) << made.error().message;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_TRUE(EnsurePrivateDir(path).has_value());  // existing and fine
}

TEST_F(PrivateDirTest, RefusesGroupOrOtherPermissions) {
  const std::string path = root_ + "/open";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0750), 0);
  auto made = EnsurePrivateDir(path);
  ASSERT_FALSE(made.has_value());
  EXPECT_NE(made.error().message.find("0750"), std::string::npos) << made.error().message;
  EXPECT_NE(made.error().message.find("chmod 700"), std::string::npos);
}

TEST_F(PrivateDirTest, RefusesDirectoryOwnedByAnotherUid) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  const std::string path = root_ + "/theirs";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  auto made = EnsurePrivateDir(path);
  ASSERT_FALSE(made.has_value());
  EXPECT_NE(made.error().message.find("owned by uid 65534"), std::string::npos) << made.error().message;
}

TEST_F(PrivateDirTest, RefusesSymlinkAndFile) {
  const std::string real = root_ + "/real";
  ASSERT_EQ(::mkdir(real.c_str(), 0700), 0);
  const std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  auto linked = EnsurePrivateDir(link);
  ASSERT_FALSE(linked.has_value());
  EXPECT_NE(linked.error().message.find(link + ": it is a symbolic link"), std::string::npos)
      << linked.error().message;
  const std::string file = root_ + "/file";
  FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto filed = EnsurePrivateDir(file);
  ASSERT_FALSE(filed.has_value());
  EXPECT_NE(filed.error().message.find("not a directory"), std::string::npos) << filed.error().message;
  // Without `create`, a missing directory is reported as missing and not made.
  auto missing = OpenPrivateDir(root_ + "/missing", /*create=*/false);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_NE(::access((root_ + "/missing").c_str(), F_OK), 0);
}

TEST(DefaultRegistryDirTest, UsesXdgRuntimeDirOrTmp) {
  const char* saved = std::getenv("XDG_RUNTIME_DIR");
  const std::string saved_value = saved ? saved : "";
  const std::string uid = std::to_string(::geteuid());
  ::setenv("XDG_RUNTIME_DIR", "/run/user/77", 1);
  EXPECT_EQ(DefaultRegistryDir(), "/run/user/77/cupmon-" + uid);
  ::unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(DefaultRegistryDir(), "/tmp/cupmon-" + uid);
  if (saved) ::setenv("XDG_RUNTIME_DIR", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace cupmon::control
