#include "periodic_flush.h"

#include <pthread.h>

#include "own_thread.h"

namespace cupmon {

PeriodicFlush::PeriodicFlush(CuptiApi& cupti, MonitorClock& clock,
                             std::function<void(Done)> on_done)
    : cupti_(cupti),
      clock_(clock),
      on_done_(std::move(on_done)),
      inline_(clock.timers() != nullptr) {}

PeriodicFlush::~PeriodicFlush() {
  Stop(std::chrono::steady_clock::time_point::max());
  if (thread_.joinable()) thread_.join();
}

void PeriodicFlush::Start() {
  if (!inline_) thread_ = StartOwnThread([this] { Run(); });
}

bool PeriodicFlush::Request() {
  if (inline_) {
    {
      MutexLock lk(mu_);
      if (stopping_) return false;
    }
    on_done_(FlushOnce());
    return true;
  }
  {
    MutexLock lk(mu_);
    if (stopping_ || requested_ || running_ || !thread_.joinable()) return false;
    requested_ = true;
  }
  cv_.notify_one();
  return true;
}

bool PeriodicFlush::Stop(std::chrono::steady_clock::time_point deadline) {
  {
    MutexLock lk(mu_);
    stopping_ = true;
    requested_ = false;
  }
  cv_.notify_all();
  if (!thread_.joinable()) return true;
  {
    MutexLock lk(mu_);
    while (!ended_)
      if (!lk.WaitUntil(cv_, deadline) && !ended_) return false;
  }
  thread_.join();
  return true;
}

int64_t PeriodicFlush::running_for_ns() const {
  if (!began_cupti_ns_.load(std::memory_order_acquire)) return 0;
  return clock_.SteadyNs() - began_steady_ns_.load(std::memory_order_relaxed);
}

PeriodicFlush::Done PeriodicFlush::FlushOnce() {
  uint64_t began_cupti = 0;
  cupti_.GetTimestamp(&began_cupti);
  const int64_t began = clock_.SteadyNs();
  began_steady_ns_.store(began, std::memory_order_relaxed);
  began_cupti_ns_.store(began_cupti ? began_cupti : 1, std::memory_order_release);
  // Non-forced: only buffers whose records are complete come back.
  cupti_.ActivityFlushAll(0);
  const Done done{clock_.SteadyNs() - began, began_cupti};
  began_cupti_ns_.store(0, std::memory_order_release);
  return done;
}

void PeriodicFlush::Run() noexcept {
  pthread_setname_np(pthread_self(), "cupmon-periodic");
  for (;;) {
    {
      MutexLock lk(mu_);
      while (!requested_ && !stopping_) lk.Wait(cv_);
      if (stopping_) break;
      requested_ = false;
      running_ = true;
    }
    const Done done = FlushOnce();
    bool stopping;
    {
      MutexLock lk(mu_);
      running_ = false;
      stopping = stopping_;
    }
    if (stopping) break;
    try {
      on_done_(done);
    } catch (...) {
      // The caller counts its own faults; a throw here must not end the thread.
    }
  }
  {
    MutexLock lk(mu_);
    ended_ = true;
  }
  cv_.notify_all();
}

}  // namespace cupmon
