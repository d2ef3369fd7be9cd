// The monitor's thread checks (CUPMON_DCHECK_THREAD, base/include/cupmon/base/thread_checker.h):
// a control-thread part used from another thread ends the process where the checks are compiled
// in; used through the control thread, it does not.
#include <gtest/gtest.h>

#include <memory>

#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using testing::FakeCupti;

MonitorOptions Options(FakeCupti* fake, const std::string& name) {
  MonitorOptions o =
      testing::TestDoubleOptions(fake, testing::FreshTestDir("cupmon-thread-checks", name));
  o.config.control = false;  // nothing but the calls below reaches the control thread
  return o;
}

TEST(ThreadChecksTest, ControlRequestsOnTheControlThreadPass) {
  FakeCupti fake;
  auto m = Monitor::Start(Options(&fake, "pass"));
  ASSERT_TRUE(m) << m.error().message;
  pb::StatusReply status;
  ASSERT_TRUE((*m)->RunOnControl([&] { status = (*m)->control_target().Status(); }));
  EXPECT_EQ(status.pid(), static_cast<uint32_t>(getpid()));
  EXPECT_TRUE((*m)->RequestWindow(50, {}, pb::TRIGGER_API));  // the C API's way in
  EXPECT_TRUE((*m)->Stop());
}

TEST(ThreadChecksDeathTest, ControlRequestsOffTheControlThreadAbort) {
  if (!CUPMON_THREAD_CHECKS_ON)
    GTEST_SKIP() << "thread checks are compiled out here (NDEBUG without CUPMON_THREAD_CHECKS); "
                    "they are on in debug builds and the sanitizer builds of tools/run-tests";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        FakeCupti fake;
        auto m = Monitor::Start(Options(&fake, "abort"));
        if (!m) std::abort();
        // The test's thread, not the control thread: ControlRequests' check fires.
        (void)(*m)->control_target().Status();
      },
      "thread check failed: Status\\(\\) used thread_ on thread");
}

}  // namespace
}  // namespace cupmon
