// Tests for ControlPlane over a real Unix socket: round trips, bad clients, stop, permissions,
// close-on-exec, peer credentials (with a real second uid when running as root) and scheduled windows.
#include "cupmon/control/control_plane.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <fstream>
#include <set>

#include "control_test_util.h"
#include "descriptors_used_up.h"
#include "cupmon/control/private_dir.h"

namespace cupmon::control {
namespace {

using testing::ControlPlaneFixture;

class ControlPlaneTest : public ControlPlaneFixture {};

std::set<int> OpenFds() {
  std::set<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') fds.insert(std::atoi(e->d_name));
  }
  const int own = ::dirfd(dir);
  ::closedir(dir);
  fds.erase(own);
  return fds;
}

TEST_F(ControlPlaneTest, StatusRoundTrip) {
  ASSERT_TRUE(StartPlane().has_value());
  auto reply = Send(StatusRequest());
  ASSERT_TRUE(reply.has_value()) << reply.error().message;
  EXPECT_TRUE(reply->ok());
  EXPECT_EQ(reply->status().output_dir(), "/fake/output");
  EXPECT_EQ(reply->status().pid(), static_cast<uint32_t>(::getpid()));
  EXPECT_FALSE(reply->status().version().empty());
  EXPECT_EQ(Counters().requests, 1u);
}

// A job whose argument, path or job id is not UTF-8 (a Latin-1 file name): the client still
// parses the replies, each such byte reads as U+FFFD, and libprotobuf writes nothing into the
// job's stderr.
TEST_F(ControlPlaneTest, ProcessTextThatIsNotUtf8ReachesTheClientReadable) {
  const std::string latin1 = "/data/caf\xE9 \xFF\xC3";
  const std::string shown = "/data/caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD";
  {
    std::lock_guard lock(target_.mu);
    target_.process_text = latin1;
    target_.open_error = "cannot write " + latin1;
  }
  ASSERT_TRUE(StartPlane().has_value());
  ::testing::internal::CaptureStderr();
  auto status = Send(StatusRequest());
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(100);
  auto refused = Send(open);
  const std::string stderr_text = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_EQ(status->status().current_file(), shown);
  ASSERT_EQ(status->status().command_line_size(), 1);
  EXPECT_EQ(status->status().command_line(0), shown);
  EXPECT_EQ(status->status().job_id(), shown);
  ASSERT_TRUE(refused.has_value()) << refused.error().message;
  EXPECT_FALSE(refused->ok());
  EXPECT_EQ(refused->error(), "cannot write " + shown);
  EXPECT_EQ(stderr_text, "");
}

TEST_F(ControlPlaneTest, OpenCloseFlushRotateReachTheTarget) {
  ASSERT_TRUE(StartPlane().has_value());
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(1500);
  open.mutable_open_window()->add_kinds("runtime");
  open.mutable_open_window()->add_kinds("Synchronization");
  auto opened = Send(open);
  ASSERT_TRUE(opened.has_value()) << opened.error().message;
  ASSERT_TRUE(opened->ok()) << opened->error();
  EXPECT_EQ(opened->window_id(), 1u);
  {
    std::lock_guard lock(target_.mu);
    ASSERT_EQ(target_.opened.size(), 1u);
    EXPECT_EQ(target_.opened[0].duration_ms, 1500u);
    EXPECT_EQ(target_.opened[0].kinds, (std::vector<std::string>{"RUNTIME", "SYNCHRONIZATION"}));
    EXPECT_EQ(target_.opened[0].source, pb::TRIGGER_SOCKET);
    EXPECT_EQ(target_.opened[0].at_unix_ms, 0);
  }
  auto status = Send(StatusRequest());
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->status().window_open());

  pb::ControlRequest close;
  close.mutable_close_window();
  auto closed = Send(close);
  ASSERT_TRUE(closed.has_value());
  EXPECT_TRUE(closed->ok()) << closed->error();
  // A second close has nothing to close: the target's error reaches the client.
  auto closed_again = Send(close);
  ASSERT_TRUE(closed_again.has_value());
  EXPECT_FALSE(closed_again->ok());
  EXPECT_EQ(closed_again->error(), "no window is open");

  pb::ControlRequest flush;
  flush.mutable_flush();
  pb::ControlRequest rotate;
  rotate.mutable_rotate();
  EXPECT_TRUE(Send(flush)->ok());
  EXPECT_TRUE(Send(rotate)->ok());
  {
    std::lock_guard lock(target_.mu);
    EXPECT_EQ(target_.closes, 2);
    EXPECT_EQ(target_.flushes, 1);
    EXPECT_EQ(target_.rotates, 1);
  }
  const ControlCounters c = Counters();
  EXPECT_EQ(c.requests, 6u);
  EXPECT_EQ(c.error_replies, 1u);
}

TEST_F(ControlPlaneTest, TargetRefusalBecomesErrorReply) {
  target_.open_error = "a window is already open (id 3); close it first";
  ASSERT_TRUE(StartPlane().has_value());
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(100);
  auto reply = Send(open);
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok());
  EXPECT_EQ(reply->error(), "a window is already open (id 3); close it first");
}

TEST_F(ControlPlaneTest, ExceptionFromTargetIsCaughtAndServingContinues) {
  target_.throw_on_flush = true;
  ASSERT_TRUE(StartPlane().has_value());
  pb::ControlRequest flush;
  flush.mutable_flush();
  auto reply = Send(flush);
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok());
  EXPECT_EQ(reply->error(), "internal error: boom");
  EXPECT_EQ(Counters().handler_exceptions, 1u);
  auto status = Send(StatusRequest());
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok());
}

TEST_F(ControlPlaneTest, BadWindowRequestsNeverReachTheTarget) {
  ASSERT_TRUE(StartPlane().has_value());
  const int64_t now = NowUnixMs();
  struct Case {
    uint32_t duration_ms;
    std::vector<std::string> kinds;
    int64_t at;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {0, {}, 0, "must be positive"},
      {static_cast<uint32_t>(kMaxWindowMs + 1), {}, 0, "exceeds the limit"},
      {100, {"runtime", "KERNEL"}, 0, "unknown activity kind 'KERNEL'"},
      {100, {}, now - 60'000, "in the past"},
      {100, {}, now + 25LL * 3600 * 1000, "ahead"},
  };
  for (const Case& c : cases) {
    pb::ControlRequest request;
    request.mutable_open_window()->set_duration_ms(c.duration_ms);
    for (const auto& k : c.kinds) request.mutable_open_window()->add_kinds(k);
    request.mutable_open_window()->set_at_unix_ms(c.at);
    auto reply = Send(request);
    ASSERT_TRUE(reply.has_value());
    EXPECT_FALSE(reply->ok());
    EXPECT_NE(reply->error().find(c.expect), std::string::npos) << reply->error();
  }
  EXPECT_EQ(target_.open_count(), 0u);
  EXPECT_EQ(Counters().error_replies, cases.size());
}

// --when-slower: a good factor reaches the target as an armed request (source AUTO, the factor,
// the duration and kinds); bad factors and a factor with --at never do.
TEST_F(ControlPlaneTest, WhenSlowerReachesTheTargetArmedAndBadFactorsDoNot) {
  ASSERT_TRUE(StartPlane().has_value());
  auto ask = [&](double factor, int64_t at) {
    pb::ControlRequest request;
    request.mutable_open_window()->set_duration_ms(2000);
    request.mutable_open_window()->add_kinds("runtime");
    request.mutable_open_window()->set_when_slower(factor);
    request.mutable_open_window()->set_at_unix_ms(at);
    return Send(request);
  };
  for (double bad : {1.0, 0.25, -1.5, 1000.5, std::nan("")}) {
    auto reply = ask(bad, 0);
    ASSERT_TRUE(reply.has_value());
    EXPECT_FALSE(reply->ok()) << bad;
    EXPECT_NE(reply->error().find("--when-slower factor must be above 1"), std::string::npos)
        << reply->error();
  }
  auto with_at = ask(1.5, NowUnixMs() + 60'000);
  ASSERT_TRUE(with_at.has_value());
  EXPECT_FALSE(with_at->ok());
  EXPECT_NE(with_at->error().find("exclude each other"), std::string::npos) << with_at->error();
  EXPECT_EQ(target_.open_count(), 0u);

  auto armed = ask(1.5, 0);
  ASSERT_TRUE(armed.has_value());
  ASSERT_TRUE(armed->ok()) << armed->error();
  EXPECT_NE(armed->message().find("armed"), std::string::npos) << armed->message();
  std::lock_guard lock(target_.mu);
  ASSERT_EQ(target_.opened.size(), 1u);
  EXPECT_DOUBLE_EQ(target_.opened[0].when_slower, 1.5);
  EXPECT_EQ(target_.opened[0].source, pb::TRIGGER_AUTO);
  EXPECT_EQ(target_.opened[0].duration_ms, 2000u);
  EXPECT_EQ(target_.opened[0].kinds, (std::vector<std::string>{"RUNTIME"}));
}

TEST_F(ControlPlaneTest, SeveralRequestsOnOneConnection) {
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  const std::string frame = EncodeFrame(StatusRequest());
  ASSERT_TRUE(WriteAll(fd, frame + frame));  // pipelined
  for (int i = 0; i < 2; ++i) {
    auto reply = ReadReply(fd);
    ASSERT_TRUE(reply.has_value()) << i;
    EXPECT_TRUE(reply->ok());
  }
  ::close(fd);
}

TEST_F(ControlPlaneTest, MalformedRequestGetsErrorReplyThenClose) {
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteAll(fd, Prefix(5) + std::string("\xff\xff\xff\xff\xff", 5)));
  auto reply = ReadReply(fd);
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok());
  EXPECT_NE(reply->error().find("malformed"), std::string::npos) << reply->error();
  EXPECT_TRUE(ServerClosed(fd));
  ::close(fd);

  const int empty = ConnectRaw();  // a zero-length message is a request with nothing set
  ASSERT_TRUE(WriteAll(empty, Prefix(0)));
  auto empty_reply = ReadReply(empty);
  ASSERT_TRUE(empty_reply.has_value());
  EXPECT_FALSE(empty_reply->ok());
  ::close(empty);
  EXPECT_EQ(Counters().malformed, 2u);
  EXPECT_EQ(target_.open_count(), 0u);
}

TEST_F(ControlPlaneTest, OversizedLengthPrefixGetsErrorReplyThenClose) {
  options_.max_request_bytes = 1024;
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteAll(fd, Prefix(0xFFFFFFFFu) + "xyz"));
  auto reply = ReadReply(fd);
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok());
  EXPECT_NE(reply->error().find("exceeds the limit of 1024 bytes"), std::string::npos) << reply->error();
  EXPECT_TRUE(ServerClosed(fd));
  ::close(fd);
  EXPECT_EQ(Counters().oversized, 1u);
}

TEST_F(ControlPlaneTest, SlowClientIsClosedAndOthersAreStillServed) {
  options_.read_timeout_ms = 100;
  ASSERT_TRUE(StartPlane().has_value());
  const int slow = ConnectRaw();
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(WriteAll(slow, Prefix(10) + "abc"));  // half a message, then silence
  // While the slow client hangs, another client is served: the io thread does not block on it.
  auto status = Send(StatusRequest());
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok());
  EXPECT_TRUE(ServerClosed(slow));
  ::close(slow);
  EXPECT_EQ(Counters().timeouts, 1u);
}

TEST_F(ControlPlaneTest, ConnectionsOverTheLimitAreClosed) {
  options_.max_connections = 2;
  ASSERT_TRUE(StartPlane().has_value());
  const std::string frame = EncodeFrame(StatusRequest());
  int held[2];
  for (int& fd : held) {  // a round trip each, so both are accepted sessions
    fd = ConnectRaw();
    ASSERT_TRUE(WriteAll(fd, frame));
    ASSERT_TRUE(ReadReply(fd).has_value());
  }
  const int extra = ConnectRaw();
  ASSERT_GE(extra, 0);
  EXPECT_TRUE(ServerClosed(extra));
  ::close(extra);
  EXPECT_EQ(Counters().rejected_connections, 1u);
  for (int fd : held) ::close(fd);
}

TEST_F(ControlPlaneTest, OutOfDescriptorsTheListenerWaitsThenServes) {
  // A client connects while the process has no descriptor left, so accept fails with EMFILE. The
  // listener neither spins on that nor stops: it tries again every 100 ms, and serves the client
  // once descriptors are free.
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // while it still can be made
  ASSERT_GE(fd, 0);
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, plane_->socket_path().c_str(), sizeof(addr.sun_path) - 1);
  // The request is encoded, and the counters read, without anything that may open a descriptor:
  // UBSan's check of a protobuf's vptr probes memory through a pipe, and fails without one.
  const std::string frame = EncodeFrame(StatusRequest());
  ::cupmon::testing::ConnectWhileDescriptorsAreUsedUp(
      [&] {
        return ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0 &&
               WriteAll(fd, frame);
      },
      [&] {
        const ControlCounters c = plane_->counters();  // any thread may read them
        return std::make_pair(c.accept_errors, c.connections);
      });
  const auto reply = ReadReply(fd);  // accepted at the next try, and answered
  ::close(fd);
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->ok());
  EXPECT_EQ(Counters().connections, 1u);
}

TEST_F(ControlPlaneTest, RequestDuringAndAfterStop) {
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WriteAll(fd, EncodeFrame(StatusRequest())));
  ASSERT_TRUE(ReadReply(fd).has_value());  // the session is live and waits for its next request
  const std::string socket = plane_->socket_path();
  const std::string link = SocketFileName(options_.registry_dir, ::getpid());

  RunOnIo([&] { plane_->Stop(); });
  // The open connection was closed by Stop: the next request gets no reply.
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(100);
  WriteAll(fd, EncodeFrame(open));
  EXPECT_FALSE(ReadReply(fd).has_value());
  ::close(fd);
  // New connections find nothing: the socket and the registry entry are gone.
  auto reply = Call(socket, StatusRequest(), std::chrono::seconds(5));
  ASSERT_FALSE(reply.has_value());
  EXPECT_EQ(reply.error().code, ClientError::Code::kConnect);
  EXPECT_NE(::access(socket.c_str(), F_OK), 0);
  EXPECT_NE(::access(link.c_str(), F_OK), 0);
  struct stat st {};
  EXPECT_NE(::lstat(link.c_str(), &st), 0);
  auto found = FindSocket(::getpid(), options_.registry_dir);
  ASSERT_FALSE(found.has_value());
  EXPECT_EQ(found.error().code, ClientError::Code::kNotMonitored);
  EXPECT_EQ(target_.open_count(), 0u);
  RunOnIo([&] { plane_->Stop(); });  // idempotent
}

TEST_F(ControlPlaneTest, PermissionsRegistryAndDiscovery) {
  ASSERT_TRUE(StartPlane().has_value());
  const std::string socket = plane_->socket_path();
  EXPECT_EQ(socket, SocketFileName(options_.control_dir, ::getpid()));
  struct stat st {};
  ASSERT_EQ(::stat(socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(options_.control_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  ASSERT_EQ(::stat(options_.registry_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto found = FindSocket(::getpid(), options_.registry_dir);
  ASSERT_TRUE(found.has_value()) << found.error().message;
  EXPECT_EQ(*found, socket);
  const auto listed = ListMonitored(options_.registry_dir, /*remove_stale=*/false);
  ASSERT_TRUE(listed.has_value()) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].pid, ::getpid());
  EXPECT_EQ((*listed)[0].socket_path, socket);
  EXPECT_FALSE((*listed)[0].command.empty());
}

TEST_F(ControlPlaneTest, ListRemovesStaleEntries) {
  ASSERT_TRUE(StartPlane().has_value());
  // A pid that surely is dead: a child we forked and reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const std::string stale = SocketFileName(options_.registry_dir, child);
  ASSERT_EQ(::symlink(plane_->socket_path().c_str(), stale.c_str()), 0);
  const std::string vanished = options_.registry_dir + "/1.sock";  // pid 1 lives, its socket does not
  ASSERT_EQ(::symlink((root_ + "/nowhere.sock").c_str(), vanished.c_str()), 0);

  const auto listed = ListMonitored(options_.registry_dir, /*remove_stale=*/true);
  ASSERT_TRUE(listed.has_value()) << listed.error().message;
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].pid, ::getpid());
  struct stat st {};
  EXPECT_NE(::lstat(stale.c_str(), &st), 0);
  EXPECT_NE(::lstat(vanished.c_str(), &st), 0);
}

TEST_F(ControlPlaneTest, RefusesControlDirOpenToOthers) {
  ASSERT_EQ(::mkdir(options_.control_dir.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(options_.control_dir.c_str(), 0755), 0);
  auto started = StartPlane();
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("chmod 700"), std::string::npos) << started.error().message;
  EXPECT_NE(::access(SocketFileName(options_.control_dir, ::getpid()).c_str(), F_OK), 0);
}

TEST_F(ControlPlaneTest, EveryDescriptorItOpensIsCloseOnExec) {
  options_.signal_number = SIGUSR2;
  ::signal(SIGUSR2, SIG_DFL);
  const std::set<int> before = OpenFds();
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();  // keep an accepted connection open on the server side
  ASSERT_TRUE(WriteAll(fd, EncodeFrame(StatusRequest())));
  ASSERT_TRUE(ReadReply(fd).has_value());
  size_t checked = 0;
  for (int open_fd : OpenFds()) {
    if (before.contains(open_fd)) continue;
    const int flags = ::fcntl(open_fd, F_GETFD);
    if (flags < 0) continue;  // closed meanwhile
    EXPECT_TRUE(flags & FD_CLOEXEC) << "fd " << open_fd << " lacks FD_CLOEXEC";
    ++checked;
  }
  EXPECT_GE(checked, 3u);  // listener, accepted connection, our client
  ::close(fd);
}

// With the filesystem opened up on purpose, a process of another uid reaches the socket: SO_PEERCRED
// must still refuse it.
TEST_F(ControlPlaneTest, PeerOfAnotherUidIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a child as another uid";
  ASSERT_TRUE(StartPlane().has_value());
  const std::string socket = plane_->socket_path();
  const std::string frame = EncodeFrame(StatusRequest());

  // Returns {child exit code, bytes the child read}. The child only makes system calls.
  const auto run_as_nobody = [&](bool open_up) -> std::pair<int, std::string> {
    if (open_up) {
      ::chmod(root_.c_str(), 0711);
      ::chmod(options_.control_dir.c_str(), 0711);
      ::chmod(socket.c_str(), 0666);
    }
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {-1, ""};
    const pid_t child = ::fork();
    if (child == 0) {
      if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(90);
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::memcpy(addr.sun_path, socket.c_str(), socket.size() + 1);
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
        ::_exit(errno == EACCES ? 13 : 91);
      }
      timeval tv{20, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
      ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) {
        if (::write(pipe_fds[1], buf, static_cast<size_t>(n)) != n) ::_exit(92);
      }
      ::_exit(0);
    }
    ::close(pipe_fds[1]);
    std::string got;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, got};
  };

  // As configured (0700 directory, 0600 socket) the other uid cannot even connect.
  EXPECT_EQ(run_as_nobody(false).first, 13);

  const auto [code, bytes] = run_as_nobody(true);
  ASSERT_EQ(code, 0);
  ASSERT_GE(bytes.size(), kLengthPrefixBytes);
  pb::ControlReply reply;
  ASSERT_TRUE(reply.ParseFromString(bytes.substr(kLengthPrefixBytes)));
  EXPECT_FALSE(reply.ok());
  EXPECT_NE(reply.error().find("peer uid 65534"), std::string::npos) << reply.error();
  EXPECT_FALSE(reply.has_status());
  const ControlCounters c = Counters();
  EXPECT_EQ(c.refused_peers, 1u);
  EXPECT_EQ(c.requests, 0u);
}

TEST_F(ControlPlaneTest, ScheduledWindowOpensAtTheRequestedInstant) {
  ASSERT_TRUE(StartPlane().has_value());
  const int64_t at = NowUnixMs() + 1000;  // far enough that a loaded CI machine still schedules it
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(200);
  open.mutable_open_window()->set_at_unix_ms(at);
  auto reply = Send(open);
  ASSERT_TRUE(reply.has_value());
  ASSERT_TRUE(reply->ok()) << reply->error();
  EXPECT_NE(reply->message().find("scheduled for"), std::string::npos) << reply->message();
  EXPECT_EQ(reply->window_id(), 0u);  // not known until it opens
  ASSERT_TRUE(target_.WaitForOpens(1));
  std::lock_guard lock(target_.mu);
  EXPECT_EQ(target_.opened[0].source, pb::TRIGGER_SOCKET);
  EXPECT_EQ(target_.opened[0].at_unix_ms, at);
  EXPECT_EQ(target_.opened[0].duration_ms, 200u);
  EXPECT_GE(target_.opened_at_unix_ms[0], at);  // never early
}

TEST_F(ControlPlaneTest, CloseCancelsScheduledWindows) {
  ASSERT_TRUE(StartPlane().has_value());
  pb::ControlRequest open;
  open.mutable_open_window()->set_duration_ms(200);
  open.mutable_open_window()->set_at_unix_ms(NowUnixMs() + 3'600'000);
  ASSERT_TRUE(Send(open)->ok());
  EXPECT_EQ(Counters().windows_scheduled, 1u);
  pb::ControlRequest close;
  close.mutable_close_window();
  auto closed = Send(close);
  ASSERT_TRUE(closed.has_value());
  EXPECT_TRUE(closed->ok()) << closed->error();  // nothing was open, but a scheduled one was cancelled
  EXPECT_NE(closed->message().find("cancelled 1 scheduled"), std::string::npos) << closed->message();
  auto again = Send(close);
  EXPECT_FALSE(again->ok());  // nothing left to cancel or close
}

}  // namespace
}  // namespace cupmon::control

namespace cupmon::control {
namespace {

// The control and registry directories are held by descriptor from Start() to Stop(): after their
// paths are swapped for symlinks to directories of someone else's choosing, Stop() removes the
// socket and the registry entry from the directories it created them in, and nothing elsewhere.
TEST_F(ControlPlaneTest, StopCleansUpInTheVettedDirectoriesAfterTheirPathsWereSwapped) {
  ASSERT_TRUE(StartPlane().has_value());
  const std::string entry = std::to_string(::getpid()) + ".sock";
  const std::string decoy = root_ + "/decoy";
  ASSERT_EQ(::mkdir(decoy.c_str(), 0700), 0);
  const std::string decoy_file = decoy + "/" + entry;
  std::ofstream(decoy_file) << "not cupmon's";
  for (const std::string& dir : {options_.control_dir, options_.registry_dir}) {
    ASSERT_EQ(::rename(dir.c_str(), (dir + ".moved").c_str()), 0);
    ASSERT_EQ(::symlink(decoy.c_str(), dir.c_str()), 0);
  }
  RunOnIo([&] { plane_->Stop(); });
  struct stat st {};
  EXPECT_EQ(::stat(decoy_file.c_str(), &st), 0) << "a file in the decoy was removed";
  EXPECT_NE(::lstat((options_.control_dir + ".moved/" + entry).c_str(), &st), 0);
  EXPECT_NE(::lstat((options_.registry_dir + ".moved/" + entry).c_str(), &st), 0);
}

TEST_F(ControlPlaneTest, RefusesARegistryOpenToOthers) {
  ASSERT_EQ(::mkdir(options_.registry_dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(options_.registry_dir.c_str(), 0777), 0);
  auto started = StartPlane();
  ASSERT_FALSE(started.has_value());
  EXPECT_NE(started.error().message.find("registry: refusing directory " + options_.registry_dir +
                                         ": group or others have access (mode 0777"),
            std::string::npos)
      << started.error().message;
  // Nothing left behind in the control directory either.
  EXPECT_NE(::access(SocketFileName(options_.control_dir, ::getpid()).c_str(), F_OK), 0);
}

}  // namespace
}  // namespace cupmon::control

namespace cupmon::control {
namespace {

// Bad clients over the real socket: each is answered or closed, and the server serves on.
class BadClientTest : public ControlPlaneFixture {
 protected:
  void ExpectStillServing() {
    auto status = Send(StatusRequest());
    ASSERT_TRUE(status.has_value()) << status.error().message;
    EXPECT_TRUE(status->ok());
  }
  // Sends `bytes` on a new connection and returns the reply, if the server sent one.
  std::optional<pb::ControlReply> SendRaw(const std::string& bytes, bool* closed_after = nullptr) {
    const int fd = ConnectRaw();
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(WriteAll(fd, bytes));
    auto reply = ReadReply(fd);
    if (closed_after != nullptr) *closed_after = ServerClosed(fd);
    ::close(fd);
    return reply;
  }
};

TEST_F(BadClientTest, TruncatedFrameThenHangUpIsDroppedWithoutAReply) {
  ASSERT_TRUE(StartPlane().has_value());
  const std::string frame = EncodeFrame(StatusRequest());
  for (size_t cut : {size_t{1}, size_t{3}, frame.size() - 1}) {
    const int fd = ConnectRaw();
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(WriteAll(fd, frame.substr(0, cut)));
    ::shutdown(fd, SHUT_WR);  // the peer is done: the server sees EOF inside the frame
    EXPECT_FALSE(ReadReply(fd).has_value()) << "cut at " << cut;
    ::close(fd);
  }
  ExpectStillServing();
  const ControlCounters c = Counters();
  EXPECT_EQ(c.requests, 1u);  // only the status above
  EXPECT_EQ(c.malformed, 0u);
  EXPECT_EQ(target_.open_count(), 0u);
}

TEST_F(BadClientTest, UnknownRequestTypeIsMalformedAndClosed) {
  ASSERT_TRUE(StartPlane().has_value());
  // Field 6 of ControlRequest, as a newer client might send: parses, but no request is set.
  const std::string unknown("\x32\x00", 2);
  bool closed = false;
  auto reply = SendRaw(Prefix(static_cast<uint32_t>(unknown.size())) + unknown, &closed);
  ASSERT_TRUE(reply.has_value());
  EXPECT_FALSE(reply->ok());
  EXPECT_NE(reply->error().find("malformed request: 2 bytes"), std::string::npos) << reply->error();
  EXPECT_TRUE(closed);
  // Garbage protobuf (a field with a wire type that does not exist) as well.
  auto garbage = SendRaw(Prefix(3) + std::string("\x0f\x01\x02", 3), &closed);
  ASSERT_TRUE(garbage.has_value());
  EXPECT_FALSE(garbage->ok());
  EXPECT_TRUE(closed);
  EXPECT_EQ(Counters().malformed, 2u);
  ExpectStillServing();
}

TEST_F(BadClientTest, HugeDurationAndExtremeStartTimesAreRefusedOnAnOpenConnection) {
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  struct Case {
    uint32_t duration_ms;
    int64_t at;
    const char* expect;
  };
  for (const Case& c : {Case{0xFFFFFFFFu, 0, "exceeds the limit"},
                        Case{100, INT64_MIN, "in the past"}, Case{100, INT64_MAX, "ahead"},
                        Case{100, -1, "in the past"}}) {
    pb::ControlRequest open;
    open.mutable_open_window()->set_duration_ms(c.duration_ms);
    open.mutable_open_window()->set_at_unix_ms(c.at);
    ASSERT_TRUE(WriteAll(fd, EncodeFrame(open)));
    auto reply = ReadReply(fd);  // a validation error keeps the connection open
    ASSERT_TRUE(reply.has_value()) << c.expect;
    EXPECT_FALSE(reply->ok());
    EXPECT_NE(reply->error().find(c.expect), std::string::npos) << reply->error();
  }
  ASSERT_TRUE(WriteAll(fd, EncodeFrame(StatusRequest())));
  auto status = ReadReply(fd);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->ok());
  ::close(fd);
  EXPECT_EQ(target_.open_count(), 0u);
  EXPECT_EQ(Counters().windows_scheduled, 0u);
}

TEST_F(BadClientTest, OversizedPrefixIsRefusedWithoutReadingTheBody) {
  ASSERT_TRUE(StartPlane().has_value());  // default limit, 64 KiB
  bool closed = false;
  auto reply = SendRaw(Prefix(64 * 1024 + 1), &closed);  // no body follows: none is awaited
  ASSERT_TRUE(reply.has_value());
  EXPECT_NE(reply->error().find("65537 bytes exceeds the limit of 65536"), std::string::npos)
      << reply->error();
  EXPECT_TRUE(closed);
  ExpectStillServing();
}

// A slow-loris client trickles a valid frame one byte at a time, each well inside the read
// timeout: the deadline runs from the start of the request, not from the last byte, so it is
// closed, while other clients are served in between.
TEST_F(BadClientTest, SlowLorisHitsTheDeadline) {
  options_.read_timeout_ms = 300;
  ASSERT_TRUE(StartPlane().has_value());
  const int fd = ConnectRaw();
  ASSERT_GE(fd, 0);
  pb::ControlRequest big;
  big.mutable_open_window()->set_duration_ms(100);
  for (int i = 0; i < 20; ++i) big.mutable_open_window()->add_kinds("RUNTIME");
  const std::string frame = EncodeFrame(big);
  ASSERT_GT(frame.size(), 40u);
  bool closed_early = false;
  const auto begin = std::chrono::steady_clock::now();
  for (size_t i = 0; i < frame.size(); ++i) {
    if (::send(fd, frame.data() + i, 1, MSG_NOSIGNAL) != 1) {
      closed_early = true;  // EPIPE / ECONNRESET: the server closed it
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (i == 2) ExpectStillServing();
  }
  EXPECT_TRUE(closed_early || ServerClosed(fd));
  EXPECT_FALSE(ReadReply(fd).has_value());
  ::close(fd);
  // The whole frame took >= 40 x 50 ms = 2 s, far beyond the 300 ms deadline.
  EXPECT_GE(std::chrono::steady_clock::now() - begin, std::chrono::milliseconds(300));
  EXPECT_EQ(Counters().timeouts, 1u);
  EXPECT_EQ(target_.open_count(), 0u);
  ExpectStillServing();
}

// Many connections at once, far over max_connections, some silent, some closing at once: the
// ones over the limit are closed, the silent ones time out, and afterwards the server serves again
// without having leaked a descriptor.
TEST_F(BadClientTest, ManyConnectionsAreShedAndServingResumes) {
  options_.max_connections = 8;
  options_.read_timeout_ms = 200;
  ASSERT_TRUE(StartPlane().has_value());
  auto count_fds = [] {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                                             std::filesystem::directory_iterator()));
  };
  // The server closes its side of a finished connection a moment after the client saw the reply.
  auto settles_at = [&](size_t want) {
    for (int i = 0; i < 200 && count_fds() != want; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return count_fds();
  };
  ExpectStillServing();  // lazily created descriptors exist before counting
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const size_t fds_before = count_fds();
  std::vector<int> clients;
  for (int i = 0; i < 100; ++i) {
    const int fd = ConnectRaw();
    if (fd < 0) continue;  // the backlog (16) was full: refused by the kernel, also fine
    clients.push_back(fd);
  }
  ASSERT_GE(clients.size(), 16u);
  size_t closed = 0;
  for (int fd : clients) {
    closed += ServerClosed(fd) ? 1 : 0;  // over the limit at once, the others by their deadline
    ::close(fd);
  }
  EXPECT_EQ(closed, clients.size());
  const ControlCounters c = Counters();
  EXPECT_GE(c.rejected_connections, 1u);
  EXPECT_GE(c.timeouts, 1u);
  EXPECT_EQ(c.rejected_connections + c.timeouts, clients.size());  // each shed one way or the other
  EXPECT_EQ(c.connections, c.timeouts + 1);                        // + the first status request
  ExpectStillServing();
  EXPECT_EQ(settles_at(fds_before), fds_before);
}

}  // namespace
}  // namespace cupmon::control
