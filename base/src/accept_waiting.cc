#include "cupmon/base/accept_waiting.h"

#include <sys/socket.h>

#include <cerrno>

namespace cupmon {

AcceptOutcome AcceptWaiting(int listener, const std::function<void(int fd)>& on_connection) {
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
      on_connection(fd);
      continue;
    }
    const int e = errno;
    if (e == EINTR || e == ECONNABORTED) continue;
    return e == EAGAIN || e == EWOULDBLOCK ? AcceptOutcome::kDrained : AcceptOutcome::kFailed;
  }
}

}  // namespace cupmon
