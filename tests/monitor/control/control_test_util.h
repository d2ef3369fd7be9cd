// Test helpers for the control plane: a ControlTarget that records calls, a fixture that runs a real
// ControlPlane on its own io thread in a temporary directory, and raw-socket helpers.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "cupmon.pb.h"
#include "cupmon/control/control_client.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/control/protocol.h"

namespace cupmon::control::testing {

// Records every call. Called on the io thread; read by the test thread under `mu`.
class FakeTarget : public ControlTarget {
 public:
  pb::StatusReply Status() override {
    std::lock_guard lock(mu);
    pb::StatusReply status;
    status.set_output_dir("/fake/output");
    status.set_window_open(window_open);
    status.set_window_id(window_open ? next_id - 1 : 0);
    status.add_enabled_kinds("CONCURRENT_KERNEL");
    if (process_text) {
      status.set_current_file(*process_text);
      status.add_command_line(*process_text);
      status.set_job_id(*process_text);
    }
    return status;
  }
  Expected<uint32_t> OpenWindow(const WindowRequest& request) override {
    std::lock_guard lock(mu);
    opened.push_back(request);
    opened_at_unix_ms.push_back(NowUnixMs());
    cv.notify_all();
    if (open_error) return MakeError(*open_error);
    window_open = true;
    return next_id++;
  }
  Expected<void> CloseWindow() override {
    std::lock_guard lock(mu);
    ++closes;
    if (!window_open) return MakeError("no window is open");
    window_open = false;
    return {};
  }
  Expected<void> Flush() override {
    std::lock_guard lock(mu);
    ++flushes;
    if (throw_on_flush) throw std::runtime_error("boom");
    return {};
  }
  Expected<void> Rotate() override {
    std::lock_guard lock(mu);
    ++rotates;
    return {};
  }

  // Waits (bounded, generously) until `n` OpenWindow calls arrived. Not a timing assertion.
  bool WaitForOpens(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return opened.size() >= n; });
  }
  size_t open_count() {
    std::lock_guard lock(mu);
    return opened.size();
  }

  std::mutex mu;
  std::condition_variable cv;
  std::vector<WindowRequest> opened;
  std::vector<int64_t> opened_at_unix_ms;
  int closes = 0;
  int flushes = 0;
  int rotates = 0;
  bool window_open = false;
  uint32_t next_id = 1;
  std::optional<std::string> open_error;
  // Set: the status's current file, command line and job id hold it (text of the process).
  std::optional<std::string> process_text;
  bool throw_on_flush = false;
};

class ControlPlaneFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/cupmon-control-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    options_.control_dir = root_ + "/control";
    options_.registry_dir = root_ + "/registry";
    options_.signal_number = 0;
    options_.default_window_ms = 1234;
    io_thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (plane_) RunOnIo([&] { plane_->Stop(); });
    guard_.reset();
    io_.stop();
    io_thread_.join();
    plane_.reset();
    std::filesystem::remove_all(root_);
  }

  template <typename F>
  auto RunOnIo(F f) -> decltype(f()) {
    std::packaged_task<decltype(f())()> task(std::move(f));
    auto result = task.get_future();
    boost::asio::post(io_, [&task] { task(); });
    return result.get();
  }

  Expected<void> StartPlane() {
    plane_ = std::make_unique<ControlPlane>(io_, options_, target_);
    return RunOnIo([&] { return plane_->Start(); });
  }

  ControlCounters Counters() {
    return RunOnIo([&] { return plane_->counters(); });
  }

  ClientExpected<pb::ControlReply> Send(const pb::ControlRequest& request) {
    return Call(plane_->socket_path(), request, std::chrono::seconds(10));
  }

  static pb::ControlRequest StatusRequest() {
    pb::ControlRequest request;
    request.mutable_status();
    return request;
  }

  // A blocking client socket with a receive timeout so that a broken test cannot hang.
  int ConnectRaw() {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, plane_->socket_path().c_str(), sizeof(addr.sun_path) - 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
      ::close(fd);
      return -1;
    }
    timeval tv{20, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }

  static bool WriteAll(int fd, const std::string& bytes) {
    return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }

  static bool ReadExact(int fd, char* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::recv(fd, out + got, n - got, 0);
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    return true;
  }

  // One framed reply, or nullopt when the server closed the connection first.
  static std::optional<pb::ControlReply> ReadReply(int fd) {
    unsigned char prefix[kLengthPrefixBytes];
    if (!ReadExact(fd, reinterpret_cast<char*>(prefix), sizeof(prefix))) return std::nullopt;
    std::string body(DecodeLengthPrefix(prefix), '\0');
    if (!ReadExact(fd, body.data(), body.size())) return std::nullopt;
    pb::ControlReply reply;
    if (!reply.ParseFromString(body)) return std::nullopt;
    return reply;
  }

  // True when the server closed the connection (EOF or reset), false on the receive timeout.
  static bool ServerClosed(int fd) {
    char c;
    for (;;) {
      const ssize_t r = ::recv(fd, &c, 1, 0);
      if (r == 0) return true;
      if (r < 0) return errno == ECONNRESET || errno == EPIPE;
    }
  }

  static std::string Prefix(uint32_t length) {
    std::string out(kLengthPrefixBytes, '\0');
    for (size_t i = 0; i < kLengthPrefixBytes; ++i) out[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    return out;
  }

  std::string root_;
  ControlOptions options_;
  FakeTarget target_;
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_ =
      boost::asio::make_work_guard(io_);
  std::thread io_thread_;
  std::unique_ptr<ControlPlane> plane_;
};

}  // namespace cupmon::control::testing
