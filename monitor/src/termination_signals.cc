// TerminationSignals: a self-pipe signal handler for SIGTERM/SIGINT, read on the control thread.
#include "termination_signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include <boost/asio/buffer.hpp>

#include "cupmon/base/fork_child_cleanup.h"

namespace cupmon {
namespace {

std::atomic<int> g_write_fd{-1};

void OnSignal(int sig) {
  const int saved = errno;
  const int fd = g_write_fd.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    ssize_t ignored = ::write(fd, &b, 1);  // non-blocking; a full pipe already holds a signal
    (void)ignored;
  }
  errno = saved;
}

bool IsOurs(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) == 0 && a.sa_handler == OnSignal;
}

}  // namespace

TerminationSignals::TerminationSignals(boost::asio::io_context& io,
                                       std::function<void(int)> on_signal)
    : io_(io), on_signal_(std::move(on_signal)), reader_(io) {}

TerminationSignals::~TerminationSignals() { Stop(); }

int TerminationSignals::Start() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return 0;
  boost::system::error_code ec;
  reader_.assign(fds[0], ec);
  if (ec) {
    ::close(fds[0]);
    ::close(fds[1]);
    return 0;
  }
  g_write_fd.store(fds[1], std::memory_order_release);
  CloseInForkedChild(fds[0]);
  CloseInForkedChild(fds[1]);
  int taken = 0;
  for (size_t i = 0; i < kSignals.size(); ++i) {
    struct sigaction now {};
    if (::sigaction(kSignals[i], nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) != 0 || now.sa_handler != SIG_DFL) continue;  // not ours
    struct sigaction ours {};
    ours.sa_handler = OnSignal;
    sigemptyset(&ours.sa_mask);
    ours.sa_flags = SA_RESTART;  // the application's blocking calls resume after our handler
    if (::sigaction(kSignals[i], &ours, nullptr) != 0) continue;
    RestoreInForkedChild(kSignals[i], now);
    installed_[i] = true;
    ++taken;
  }
  Read();
  return taken;
}

void TerminationSignals::Stop() {
  for (size_t i = 0; i < kSignals.size(); ++i) {
    if (!installed_[i]) continue;
    installed_[i] = false;
    ForgetForkedChildSignal(kSignals[i]);
    struct sigaction now {};
    ::sigaction(kSignals[i], nullptr, &now);
    if (!IsOurs(now)) continue;  // the application took it over: leave its handler
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(kSignals[i], &dfl, nullptr);
  }
  const int wfd = g_write_fd.exchange(-1, std::memory_order_acq_rel);
  if (wfd >= 0) {
    ForgetForkedChildFd(wfd);
    ::close(wfd);
  }
  if (reader_.is_open()) {
    ForgetForkedChildFd(reader_.native_handle());
    boost::system::error_code ec;
    reader_.close(ec);
  }
}

bool TerminationSignals::handles(int sig) const {
  for (size_t i = 0; i < kSignals.size(); ++i)
    if (kSignals[i] == sig) return installed_[i];
  return false;
}

void TerminationSignals::Read() {
  reader_.async_read_some(boost::asio::buffer(&byte_, 1),
                          [this](const boost::system::error_code& ec, size_t n) noexcept {
                            if (ec || n != 1) return;  // closed at stop
                            try {
                              on_signal_(byte_);
                              Read();
                            } catch (...) {
                              // A flush that cannot be arranged: end the process as without us.
                              RaiseDefault(byte_);
                            }
                          });
}

void TerminationSignals::RaiseDefault(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
}

}  // namespace cupmon
