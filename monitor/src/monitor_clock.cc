// RealClock and ClockTimer: the monitor's clock in production, and timers on any MonitorClock.
#include "cupmon/monitor/monitor_clock.h"

#include <time.h>

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

namespace cupmon {
namespace {

int64_t Now(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

class ProcessClock final : public MonitorClock {
 public:
  int64_t SteadyNs() override { return Now(CLOCK_MONOTONIC); }
  int64_t RealtimeNs() override { return Now(CLOCK_REALTIME); }
};

}  // namespace

MonitorClock& RealClock() {
  static ProcessClock* const clock = new ProcessClock();  // never destroyed: used at exit
  return *clock;
}

ClockTimer::ClockTimer(boost::asio::io_context& io, MonitorClock& clock)
    : io_(io), clock_(clock), service_(clock.timers()), real_(io) {}

ClockTimer::~ClockTimer() {
  if (service_) service_->Unschedule(this);
}

void ClockTimer::ExpiresAfterWait(std::chrono::nanoseconds after, Handler handler) {
  if (!service_) {
    real_.expires_after(after);
    real_.async_wait(std::move(handler));
    return;
  }
  Cancel();
  pending_ = std::move(handler);
  service_->Schedule(this, clock_.SteadyNs() + after.count(), ++generation_);
}

void ClockTimer::Cancel() {
  if (!service_) {
    real_.cancel();
    return;
  }
  if (!pending_) return;
  service_->Unschedule(this);
  ++generation_;
  boost::asio::post(io_, [h = std::move(pending_)]() { h(boost::asio::error::operation_aborted); });
  pending_ = nullptr;
}

void ClockTimer::FireOnIoThread(uint64_t generation) {
  if (generation != generation_ || !pending_) return;  // cancelled or re-armed since
  Handler h = std::move(pending_);
  pending_ = nullptr;
  h(boost::system::error_code());
}

}  // namespace cupmon
