// DescriptorsUsedUp: for tests of what a server does when its process has no descriptor left
// (accept fails with EMFILE).
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

namespace cupmon::testing {

// While it lives, the process can open no descriptor: RLIMIT_NOFILE's soft limit is lowered to
// just above the highest descriptor open, and every free number below it is taken with dup.
// Destroying it closes those and puts the limit back. ok() is false unless a new descriptor now
// fails with EMFILE. Other threads of the process meet EMFILE meanwhile too.
class DescriptorsUsedUp {
 public:
  DescriptorsUsedUp() {
    if (getrlimit(RLIMIT_NOFILE, &saved_) != 0) return;
    null_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_ < 0) return;
    int highest = null_;
    if (DIR* dir = opendir("/proc/self/fd")) {
      while (const dirent* e = readdir(dir)) highest = std::max(highest, std::atoi(e->d_name));
      closedir(dir);  // its own descriptor was among those read: one number above the rest
    }
    rlimit lowered = saved_;
    lowered.rlim_cur = static_cast<rlim_t>(highest) + 1;
    if (setrlimit(RLIMIT_NOFILE, &lowered) != 0) return;
    lowered_ = true;
    for (;;) {
      const int fd = fcntl(null_, F_DUPFD_CLOEXEC, 0);
      if (fd < 0) break;
      taken_.push_back(fd);
    }
  }
  ~DescriptorsUsedUp() {
    for (int fd : taken_) close(fd);
    if (null_ >= 0) close(null_);
    if (lowered_) setrlimit(RLIMIT_NOFILE, &saved_);
  }
  DescriptorsUsedUp(const DescriptorsUsedUp&) = delete;
  DescriptorsUsedUp& operator=(const DescriptorsUsedUp&) = delete;

  // True when the limit is lowered and a new descriptor now fails with EMFILE.
  bool ok() const {
    if (!lowered_) return false;
    const int fd = fcntl(null_, F_DUPFD_CLOEXEC, 0);
    if (fd >= 0) {
      close(fd);
      return false;
    }
    return errno == EMFILE;
  }

 private:
  rlimit saved_{};
  bool lowered_ = false;
  int null_ = -1;
  std::vector<int> taken_;
};

// A server's listener while the process has no descriptor left: `connect` connects a socket made
// beforehand and sends a request (true on success); 0.6 s later `counters` gives the server's
// accept_errors and connections. The listener must have failed to accept about once per 100 ms
// (a listener spinning on it fails thousands of times) and taken no connection.
template <class Connect, class Counters>
void ConnectWhileDescriptorsAreUsedUp(Connect connect, Counters counters) {
  DescriptorsUsedUp used_up;
  ASSERT_TRUE(used_up.ok());
  ASSERT_TRUE(connect());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const std::pair<uint64_t, uint64_t> c = counters();
  EXPECT_GE(c.first, 2u);
  EXPECT_LE(c.first, 20u);
  EXPECT_EQ(c.second, 0u);
}

}  // namespace cupmon::testing
