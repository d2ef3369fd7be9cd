// The monitor's CPU tests' directories: one fresh directory per process and name, removed when the
// test program passes. For gtest programs only (term_child and the other helpers do not link it).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

namespace cupmon::testing {

// Removes the directories FreshTestDir made in this process when the test program ends with every
// test passed, and keeps them, with a line naming each, when a test failed. Only the process that
// runs the tests tears down: a forked child that exits leaves them alone.
class TestDirCleanup : public ::testing::Environment {
 public:
  void Add(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.insert(dir);
  }
  void TearDown() override {
    std::lock_guard<std::mutex> lock(mu_);
    const bool passed = ::testing::UnitTest::GetInstance()->Passed();
    for (const std::string& dir : dirs_) {
      if (!passed) {
        std::fprintf(stderr, "test directory kept (a test failed): %s\n", dir.c_str());
        continue;
      }
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
      if (ec)
        std::fprintf(stderr, "cannot remove test directory %s: %s\n", dir.c_str(),
                     ec.message().c_str());
    }
    dirs_.clear();
  }

 private:
  std::mutex mu_;
  std::set<std::string> dirs_;
};

// Registered before main, as gtest asks; gtest owns it.
inline TestDirCleanup* const kTestDirCleanup =
    static_cast<TestDirCleanup*>(::testing::AddGlobalTestEnvironment(new TestDirCleanup));

// ${TMPDIR:-/tmp}/<prefix>-<pid>-<name>, emptied: per pid, so ctest -j runs do not collide.
// Removed at the end of a passing test program (TestDirCleanup).
inline std::string FreshTestDir(const std::string& prefix, const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-" +
                     std::to_string(getpid()) + "-" + name;
  std::filesystem::remove_all(base);
  kTestDirCleanup->Add(base);
  return base;
}

}  // namespace cupmon::testing
