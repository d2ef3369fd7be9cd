// ThreadChecker (base/include/cupmon/base/thread_checker.h): binding, and CUPMON_DCHECK_THREAD
// ending the process on a foreign thread where the check is compiled in.
#include "cupmon/base/thread_checker.h"

#include <thread>

#include <gtest/gtest.h>

namespace cupmon {
namespace {

bool CheckedOn(const ThreadChecker& checker) {
  bool valid = false;
  std::thread([&] { valid = checker.CalledOnValidThread(); }).join();
  return valid;
}

TEST(ThreadCheckerTest, FirstUseBindsAndOtherThreadsFail) {
  ThreadChecker checker;
  EXPECT_EQ(checker.owner(), std::thread::id());
  EXPECT_TRUE(checker.CalledOnValidThread());
  EXPECT_EQ(checker.owner(), std::this_thread::get_id());
  EXPECT_TRUE(checker.CalledOnValidThread());
  EXPECT_FALSE(CheckedOn(checker));
}

TEST(ThreadCheckerTest, BindAndDetach) {
  ThreadChecker checker;
  std::thread([&] { checker.BindToCurrentThread(); }).join();
  EXPECT_FALSE(checker.CalledOnValidThread());
  checker.Detach();
  EXPECT_TRUE(CheckedOn(checker));   // binds the helper thread
  EXPECT_FALSE(checker.CalledOnValidThread());
}

class OwnedCounter {
 public:
  void Add() {
    CUPMON_DCHECK_THREAD(thread_);
    ++n_;
  }

 private:
  ThreadChecker thread_;
  int n_ = 0;
};

TEST(ThreadCheckerDeathTest, ForeignThreadAborts) {
  if (!CUPMON_THREAD_CHECKS_ON)
    GTEST_SKIP() << "thread checks are compiled out here (NDEBUG without CUPMON_THREAD_CHECKS); "
                    "they are on in debug builds and the sanitizer builds of tools/run-tests";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        OwnedCounter c;
        c.Add();
        std::thread([&] { c.Add(); }).join();
      },
      "thread check failed: Add\\(\\) used thread_ on thread");
}

TEST(ThreadCheckerDeathTest, OwningThreadPasses) {
  OwnedCounter c;
  c.Add();
  c.Add();
  std::thread([] {
    OwnedCounter other;
    other.Add();
  }).join();
}

}  // namespace
}  // namespace cupmon
