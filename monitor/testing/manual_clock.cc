// TEST DOUBLE: the virtual clock (see manual_clock.h).
#include "monitor/testing/manual_clock.h"

#include <vector>

#include <boost/asio/post.hpp>

namespace cupmon::testing {

ManualClock::ManualClock(int64_t realtime_start_ns, int64_t steady_start_ns)
    : steady_ns_(steady_start_ns), wall_minus_steady_(realtime_start_ns - steady_start_ns) {}

int64_t ManualClock::SteadyNs() {
  MutexLock lk(mu_);
  return steady_ns_;
}

int64_t ManualClock::RealtimeNs() {
  MutexLock lk(mu_);
  return steady_ns_ + wall_minus_steady_;
}

size_t ManualClock::armed() const {
  MutexLock lk(mu_);
  return armed_.size();
}

uint64_t ManualClock::fired() const {
  MutexLock lk(mu_);
  return fired_;
}

void ManualClock::Schedule(ClockTimer* timer, int64_t deadline_ns, uint64_t generation) {
  MutexLock lk(mu_);
  armed_[timer] = Armed{deadline_ns, generation};
}

void ManualClock::Unschedule(ClockTimer* timer) {
  MutexLock lk(mu_);
  armed_.erase(timer);
}

bool ManualClock::Advance(std::chrono::nanoseconds step, std::chrono::milliseconds wait) {
  MutexLock lk(mu_);
  steady_ns_ += step.count();
  for (;;) {
    std::vector<std::pair<ClockTimer*, uint64_t>> due;
    for (auto it = armed_.begin(); it != armed_.end();) {
      if (it->second.deadline_ns <= steady_ns_) {
        due.emplace_back(it->first, it->second.generation);
        it = armed_.erase(it);
      } else {
        ++it;
      }
    }
    if (due.empty()) return true;
    handlers_running_ += due.size();
    fired_ += due.size();
    for (const auto& d : due) {
      // Named copies: clang before 16 cannot capture structured bindings.
      ClockTimer* const timer = d.first;
      const uint64_t generation = d.second;
      boost::asio::post(timer->io(), [this, timer, generation]() noexcept {
        try {
          timer->FireOnIoThread(generation);
        } catch (...) {
          // The monitor's handlers catch their own; a test's timer must not end the test here.
        }
        MutexLock done(mu_);
        --handlers_running_;
        done_cv_.notify_all();
      });
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (handlers_running_ != 0) {
      if (!lk.WaitUntil(done_cv_, deadline) && handlers_running_ != 0) return false;
    }
  }
}

}  // namespace cupmon::testing
