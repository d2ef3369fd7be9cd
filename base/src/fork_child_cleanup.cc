// Fixed tables of descriptors and signal dispositions undone in a forked child.
#include "cupmon/base/fork_child_cleanup.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <mutex>

namespace cupmon {
namespace {

constexpr int kFds = 16;
constexpr int kSignals = 8;

std::atomic<int> g_fds[kFds];
struct SignalSlot {
  std::atomic<int> sig{0};  // 0: free; published with release after `previous` is written
  struct sigaction previous {};
};
SignalSlot g_signals[kSignals];

void InChild() noexcept {
  for (auto& slot : g_fds) {
    const int fd = slot.exchange(-1, std::memory_order_acq_rel);
    if (fd >= 0) ::close(fd);
  }
  for (auto& slot : g_signals) {
    const int sig = slot.sig.exchange(0, std::memory_order_acq_rel);
    if (sig > 0) ::sigaction(sig, &slot.previous, nullptr);
  }
}

void InstallOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (auto& slot : g_fds) slot.store(-1, std::memory_order_relaxed);
    pthread_atfork(nullptr, nullptr, InChild);
  });
}

}  // namespace

bool CloseInForkedChild(int fd) noexcept {
  if (fd < 0) return false;
  try {
    InstallOnce();
  } catch (...) {
    return false;
  }
  for (auto& slot : g_fds) {
    int expected = -1;
    if (slot.compare_exchange_strong(expected, fd, std::memory_order_acq_rel)) return true;
  }
  return false;
}

void ForgetForkedChildFd(int fd) noexcept {
  if (fd < 0) return;
  for (auto& slot : g_fds) {
    int expected = fd;
    if (slot.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) return;
  }
}

bool RestoreInForkedChild(int sig, const struct sigaction& previous) noexcept {
  if (sig <= 0) return false;
  try {
    InstallOnce();
  } catch (...) {
    return false;
  }
  // One writer at a time (the control thread); a slot is claimed by a sentinel, filled, published.
  for (auto& slot : g_signals) {
    int expected = 0;
    if (!slot.sig.compare_exchange_strong(expected, -1, std::memory_order_acq_rel)) continue;
    slot.previous = previous;
    slot.sig.store(sig, std::memory_order_release);
    return true;
  }
  return false;
}

void ForgetForkedChildSignal(int sig) noexcept {
  for (auto& slot : g_signals) {
    int expected = sig;
    if (slot.sig.compare_exchange_strong(expected, 0, std::memory_order_acq_rel)) return;
  }
}

}  // namespace cupmon
