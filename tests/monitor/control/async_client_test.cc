// Tests AsyncCall (monitor/control/src/async_client.cc), the node agent's client: a real
// ControlPlane, a socket that never answers, one that answers garbage, and one that is not there.
#include <sys/socket.h>
#include <sys/un.h>

#include <boost/asio/io_context.hpp>

#include "control_test_util.h"
#include "cupmon/control/async_client.h"

namespace cupmon::control {
namespace {

class AsyncClientTest : public testing::ControlPlaneFixture {
 protected:
  // Runs one AsyncCall on a private io_context until it finished; `inline_call` says whether
  // `done` ran inside AsyncCall itself (it must not).
  ClientExpected<pb::ControlReply> CallOnce(const std::string& path, const pb::ControlRequest& req,
                                            std::chrono::milliseconds timeout, bool* inline_call) {
    boost::asio::io_context io;
    std::optional<ClientExpected<pb::ControlReply>> result;
    bool in_async_call = true;
    AsyncCall(io, path, req, timeout, [&](ClientExpected<pb::ControlReply> r) {
      *inline_call = in_async_call;
      result = std::move(r);
    });
    in_async_call = false;
    io.run();
    EXPECT_TRUE(result.has_value());
    return result ? *result
                  : std::unexpected(ClientError{ClientError::Code::kProtocol, "never called"});
  }

  // A listening socket in the test directory that nobody accepts on unless the test does.
  int Listen(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    EXPECT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd, 8), 0);
    return fd;
  }
};

TEST_F(AsyncClientTest, StatusFromALivePlaneAndOpenWindowReachTheTarget) {
  ASSERT_TRUE(StartPlane().has_value());
  bool inline_call = true;
  auto reply = CallOnce(plane_->socket_path(), StatusRequest(), std::chrono::seconds(10),
                        &inline_call);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_TRUE(reply->ok());
  EXPECT_EQ(reply->status().output_dir(), "/fake/output");
  EXPECT_FALSE(inline_call);
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(250);
  reply = CallOnce(plane_->socket_path(), open, std::chrono::seconds(10), &inline_call);
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_TRUE(reply->ok()) << reply->error();
  EXPECT_EQ(target_.open_count(), 1u);
}

TEST_F(AsyncClientTest, MissingSocketIsAConnectErrorReportedLater) {
  bool inline_call = true;
  auto reply = CallOnce(root_ + "/nothing.sock", StatusRequest(), std::chrono::seconds(10),
                        &inline_call);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code, ClientError::Code::kConnect);
  EXPECT_NE(reply.error().message.find(root_ + "/nothing.sock"), std::string::npos);
  EXPECT_FALSE(inline_call);  // posted, never from inside AsyncCall
}

TEST_F(AsyncClientTest, SocketThatNeverAnswersTimesOutAtItsDeadline) {
  const std::string path = root_ + "/hung.sock";
  const int fd = Listen(path);  // the kernel accepts into the backlog; nobody reads
  bool inline_call = true;
  const auto start = std::chrono::steady_clock::now();
  auto reply = CallOnce(path, StatusRequest(), std::chrono::milliseconds(200), &inline_call);
  const auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code, ClientError::Code::kTimeout);
  EXPECT_NE(reply.error().message.find("within the deadline"), std::string::npos);
  // Not a timing figure: the call must not wait for anything but its own deadline.
  EXPECT_LT(waited, std::chrono::seconds(10));
}

TEST_F(AsyncClientTest, GarbageOversizedAndTruncatedRepliesAreProtocolErrors) {
  const std::string path = root_ + "/bad.sock";
  const int listener = Listen(path);
  struct Case {
    std::string reply;  // what the fake server writes before closing
    std::string needle;
  };
  const std::vector<Case> cases = {
      {Prefix(3) + "\xff\xff\xff", "unparsable reply"},
      {Prefix(64u << 20), "too large"},
      {Prefix(100) + "abc", "closed the connection"},
      {"", "closed the connection"},
  };
  for (const Case& c : cases) {
    std::thread server([&] {
      const int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      char buf[64];
      (void)::recv(conn, buf, sizeof(buf), 0);  // the request
      WriteAll(conn, c.reply);
      ::close(conn);
    });
    bool inline_call = true;
    auto reply = CallOnce(path, StatusRequest(), std::chrono::seconds(10), &inline_call);
    server.join();
    ASSERT_FALSE(reply.has_value()) << c.needle;
    EXPECT_EQ(reply.error().code, ClientError::Code::kProtocol) << reply.error().message;
    EXPECT_NE(reply.error().message.find(c.needle), std::string::npos) << reply.error().message;
  }
  ::close(listener);
}

}  // namespace
}  // namespace cupmon::control
