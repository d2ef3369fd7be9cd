// TEST DOUBLE: the virtual clock (see manual_clock.h).
#include "monitor/testing/manual_clock.h"

#include <vector>

#include <boost/asio/post.hpp>

namespace cupmon::testing {

ManualClock::ManualClock(int64_t realtime_start_ns, int64_t steady_start_ns)
    : steady_ns_(steady_start_ns), wall_minus_steady_(realtime_start_ns - steady_start_ns) {}

int64_t ManualClock::SteadyNs() {
  std::lock_guard<std::mutex> lk(mu_);
  return steady_ns_;
}

int64_t ManualClock::RealtimeNs() {
  std::lock_guard<std::mutex> lk(mu_);
  return steady_ns_ + wall_minus_steady_;
}

size_t ManualClock::armed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return armed_.size();
}

uint64_t ManualClock::fired() const {
  std::lock_guard<std::mutex> lk(mu_);
  return fired_;
}

void ManualClock::Schedule(ClockTimer* timer, int64_t deadline_ns, uint64_t generation) {
  std::lock_guard<std::mutex> lk(mu_);
  armed_[timer] = Armed{deadline_ns, generation};
}

void ManualClock::Unschedule(ClockTimer* timer) {
  std::lock_guard<std::mutex> lk(mu_);
  armed_.erase(timer);
}

bool ManualClock::Advance(std::chrono::nanoseconds step, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lk(mu_);
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
    for (auto [timer, generation] : due) {
      boost::asio::post(timer->io(), [this, timer, generation]() noexcept {
        try {
          timer->FireOnIoThread(generation);
        } catch (...) {
          // The monitor's handlers catch their own; a test's timer must not end the test here.
        }
        std::lock_guard<std::mutex> done(mu_);
        --handlers_running_;
        done_cv_.notify_all();
      });
    }
    if (!done_cv_.wait_for(lk, wait, [&] { return handlers_running_ == 0; })) return false;
  }
}

}  // namespace cupmon::testing
