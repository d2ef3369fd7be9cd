// AcceptWaiting (base/src/accept_waiting.cc) on a real listening socket: what
// it hands over, what it leaves waiting, and what it reports when the process has no descriptor.
#include "cupmon/base/accept_waiting.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "descriptors_used_up.h"

namespace cupmon {
namespace {

// A non-blocking listener on an abstract unix socket, and clients connected to it.
class AcceptWaitingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ASSERT_GE(listener_, 0);
    addr_.sun_family = AF_UNIX;
    const std::string name = "cupmon-accept-waiting-test-" + std::to_string(::getpid());
    std::memcpy(addr_.sun_path + 1, name.data(), name.size());  // abstract: no file
    addr_len_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    ASSERT_EQ(::bind(listener_, reinterpret_cast<const sockaddr*>(&addr_), addr_len_), 0);
    ASSERT_EQ(::listen(listener_, 16), 0);
  }
  void TearDown() override {
    for (int fd : clients_) ::close(fd);
    for (int fd : accepted_) ::close(fd);
    ::close(listener_);
  }
  int NewClient() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    clients_.push_back(fd);
    return fd;
  }
  bool Connect(int fd) {
    return ::connect(fd, reinterpret_cast<const sockaddr*>(&addr_), addr_len_) == 0;
  }

  int listener_ = -1;
  sockaddr_un addr_{};
  socklen_t addr_len_ = 0;
  std::vector<int> clients_, accepted_;
};

TEST_F(AcceptWaitingTest, HandsOverEveryWaitingConnectionNonBlockingAndCloseOnExec) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Connect(NewClient()));
  EXPECT_EQ(AcceptWaiting(listener_, [&](int fd) { accepted_.push_back(fd); }),
            AcceptOutcome::kDrained);
  ASSERT_EQ(accepted_.size(), 3u);
  for (int fd : accepted_) {
    EXPECT_TRUE(::fcntl(fd, F_GETFD) & FD_CLOEXEC) << fd;
    EXPECT_TRUE(::fcntl(fd, F_GETFL) & O_NONBLOCK) << fd;
  }
  // Nothing waiting: drained at once, nothing handed over.
  EXPECT_EQ(AcceptWaiting(listener_, [&](int fd) { accepted_.push_back(fd); }),
            AcceptOutcome::kDrained);
  EXPECT_EQ(accepted_.size(), 3u);
}

TEST_F(AcceptWaitingTest, AnExceptionFromTheHandlerLeavesTheRestWaiting) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Connect(NewClient()));
  int calls = 0;
  EXPECT_THROW(AcceptWaiting(listener_,
                             [&](int fd) {
                               accepted_.push_back(fd);  // the handler owns it, thrown or not
                               if (++calls == 2) throw std::runtime_error("boom");
                             }),
               std::runtime_error);
  EXPECT_EQ(accepted_.size(), 2u);
  EXPECT_EQ(AcceptWaiting(listener_, [&](int fd) { accepted_.push_back(fd); }),
            AcceptOutcome::kDrained);
  EXPECT_EQ(accepted_.size(), 3u);
}

TEST_F(AcceptWaitingTest, OutOfDescriptorsFailsAndTheConnectionWaits) {
  const int client = NewClient();
  {
    ::cupmon::testing::DescriptorsUsedUp used_up;
    ASSERT_TRUE(used_up.ok());
    ASSERT_TRUE(Connect(client));
    EXPECT_EQ(AcceptWaiting(listener_, [&](int fd) { accepted_.push_back(fd); }),
              AcceptOutcome::kFailed);
    EXPECT_TRUE(accepted_.empty());
  }
  EXPECT_EQ(AcceptWaiting(listener_, [&](int fd) { accepted_.push_back(fd); }),
            AcceptOutcome::kDrained);
  EXPECT_EQ(accepted_.size(), 1u);
}

}  // namespace
}  // namespace cupmon
