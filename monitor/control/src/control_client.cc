// Blocking control-socket client with a deadline (poll), and the registry walk behind `cupmonctl list`.
#include "cupmon/control/control_client.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "cupmon/base/file_system.h"
#include "cupmon/control/private_dir.h"
#include "cupmon/control/protocol.h"

namespace cupmon::control {
namespace {

using Clock = std::chrono::steady_clock;

std::unexpected<ClientError> Fail(ClientError::Code code, std::string message) {
  return std::unexpected<ClientError>(ClientError{code, std::move(message)});
}

// Waits until `fd` is ready for `events` or the deadline passes. false on timeout.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1 << 30)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the following read/write report the error
  }
}

bool ProcessAlive(int pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

std::string ReadCommand(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  std::ranges::replace(raw, '\0', ' ');
  return raw;
}

// Opens the registry as FindSocket documents; -1 (no error) when it does not exist.
ClientExpected<int> OpenRegistry(const std::string& registry_dir) {
  auto fd = OpenPrivateDir(registry_dir, /*create=*/false);
  if (fd) return *fd;
  if (fd.error().sys_errno == ENOENT) return -1;
  return Fail(ClientError::Code::kUntrusted, "registry: " + fd.error().message);
}

ClientExpected<std::string> FindSocketIn(int registry_fd, const std::string& registry_dir, int pid) {
  if (pid <= 0) return Fail(ClientError::Code::kNotMonitored, "invalid pid " + std::to_string(pid));
  const std::string link = SocketFileName(registry_dir, pid);
  char target[4096];
  const ssize_t n = registry_fd < 0 ? -1
                                    : ::readlinkat(registry_fd, SocketBaseName(pid).c_str(), target,
                                                   sizeof(target) - 1);
  if (n <= 0) {
    return Fail(ClientError::Code::kNotMonitored,
                "pid " + std::to_string(pid) + " is not monitored (no " + link + ")");
  }
  std::string path(target, static_cast<size_t>(n));
  struct stat st {};
  if (!ProcessAlive(pid) || ::stat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Fail(ClientError::Code::kNotMonitored,
                "pid " + std::to_string(pid) + " is not monitored any more (stale " + link + ")");
  }
  return path;
}

}  // namespace

ClientExpected<std::string> FindSocket(int pid, const std::string& registry_dir) {
  if (pid <= 0) return Fail(ClientError::Code::kNotMonitored, "invalid pid " + std::to_string(pid));
  auto registry = OpenRegistry(registry_dir);
  if (!registry) return std::unexpected(registry.error());
  UniqueFd owned(*registry);
  return FindSocketIn(owned.get(), registry_dir, pid);
}

ClientExpected<pb::ControlReply> Call(const std::string& socket_path, const pb::ControlRequest& request,
                                      std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof(addr.sun_path)) {
    return Fail(ClientError::Code::kConnect, "socket path too long: " + socket_path);
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (fd.get() < 0) return Fail(ClientError::Code::kConnect, std::string("socket: ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    // Unix sockets connect at once or fail (EAGAIN: backlog full).
    return Fail(ClientError::Code::kConnect,
                "cannot connect to " + socket_path + ": " + std::strerror(errno));
  }
  // Who serves the socket, before a byte is sent: a socket that another user planted in the
  // registry (or one named with --socket) must neither see our request nor answer it.
  ucred cred{};
  socklen_t cred_len = sizeof(cred);
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
    return Fail(ClientError::Code::kUntrusted, "cannot read who serves " + socket_path + ": " +
                                                   std::strerror(errno) + "; nothing was sent");
  }
  const uid_t own = ::geteuid();
  if (!PeerAllowed(cred.uid, own)) {
    return Fail(ClientError::Code::kUntrusted,
                "refusing " + socket_path + ": it is served by uid " + std::to_string(cred.uid) +
                    " (pid " + std::to_string(cred.pid) + "), not by uid " + std::to_string(own) +
                    " or root; it may be someone else's socket planted where cupmonctl looks (check " +
                    "the registry directory); nothing was sent. To control another user's process, " +
                    "run cupmonctl as that user");
  }
  const std::string frame = EncodeFrame(request);
  size_t sent = 0;
  while (sent < frame.size()) {
    if (!WaitFor(fd.get(), POLLOUT, deadline)) {
      return Fail(ClientError::Code::kTimeout, "timed out sending to " + socket_path);
    }
    const ssize_t n = ::send(fd.get(), frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Fail(ClientError::Code::kProtocol, std::string("send: ") + std::strerror(errno));
    }
    sent += static_cast<size_t>(n);
  }
  // Read the 4-byte prefix, then the body it announces.
  std::string in;
  size_t want = kLengthPrefixBytes;
  bool have_length = false;
  while (in.size() < want) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) {
      return Fail(ClientError::Code::kTimeout, "timed out waiting for the reply from " + socket_path);
    }
    char buf[4096];
    const ssize_t n = ::recv(fd.get(), buf, std::min(sizeof(buf), want - in.size()), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return Fail(ClientError::Code::kProtocol, std::string("recv: ") + std::strerror(errno));
    }
    if (n == 0) return Fail(ClientError::Code::kProtocol, "the monitor closed the connection");
    in.append(buf, static_cast<size_t>(n));
    if (!have_length && in.size() == kLengthPrefixBytes) {
      unsigned char prefix[kLengthPrefixBytes];
      std::memcpy(prefix, in.data(), kLengthPrefixBytes);
      const uint32_t length = DecodeLengthPrefix(prefix);
      if (length > (16u << 20)) return Fail(ClientError::Code::kProtocol, "reply length too large");
      want = kLengthPrefixBytes + length;
      have_length = true;
    }
  }
  pb::ControlReply reply;
  if (!reply.ParseFromArray(in.data() + kLengthPrefixBytes, static_cast<int>(in.size() - kLengthPrefixBytes))) {
    return Fail(ClientError::Code::kProtocol, "unparsable reply");
  }
  return reply;
}

ClientExpected<std::vector<MonitoredProcess>> ListMonitored(const std::string& registry_dir,
                                                            bool remove_stale) {
  std::vector<MonitoredProcess> out;
  auto registry = OpenRegistry(registry_dir);
  if (!registry) return std::unexpected(registry.error());
  if (*registry < 0) return out;
  DIR* dir = ::fdopendir(*registry);  // owns the descriptor from here on
  if (dir == nullptr) {
    ::close(*registry);
    return out;
  }
  const int registry_fd = ::dirfd(dir);
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    constexpr std::string_view kSuffix = ".sock";
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;
    const std::string digits = name.substr(0, name.size() - kSuffix.size());
    if (!std::ranges::all_of(digits, [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 9) {
      continue;
    }
    const int pid = std::stoi(digits);
    auto socket = FindSocketIn(registry_fd, registry_dir, pid);
    if (!socket) {
      if (remove_stale) ::unlinkat(registry_fd, name.c_str(), 0);
      continue;
    }
    out.push_back(MonitoredProcess{pid, *socket, ReadCommand(pid)});
  }
  ::closedir(dir);
  std::ranges::sort(out, {}, &MonitoredProcess::pid);
  return out;
}

}  // namespace cupmon::control
