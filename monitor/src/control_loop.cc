// ControlLoop: the control thread's start, stop and cross-thread entry, and the wiring of its
// parts (control_loop.h).
#include "control_loop.h"

#include <pthread.h>

#include <future>

#include <boost/asio/post.hpp>

#include "cupmon/format/recording_writer.h"
#include "own_thread.h"

namespace cupmon {

ControlLoop::ControlLoop(Parts parts)
    : parts_(std::move(parts)), work_(boost::asio::make_work_guard(io_)), clock_(*parts_.clock) {}

ControlLoop::~ControlLoop() {
  if (thread_.joinable()) {
    work_.reset();
    io_.stop();
    thread_.join();
  }
}

void ControlLoop::Start() {
  const SessionFacts& f = parts_.facts;
  const MonitorConfig& c = f.config;
  TraceWindow::Options wo;
  wo.default_kinds = c.window_kinds;
  wo.always_on = f.enabled_kinds;
  wo.runtime_filter = f.runtime_filter;
  wo.driver_filter = f.driver_filter;
  TraceWindow::Hooks hooks;
  hooks.write_marker = [this](const pb::WindowMarker& marker) {
    PostToWriter(parts_.queue, [marker](RecordingWriter& w) { w.WriteWindowMarker(marker); });
  };
  hooks.flush = [this] { FlushForWindow(); };
  window_ =
      std::make_unique<TraceWindow>(io_, parts_.cupti, std::move(wo), std::move(hooks), clock_);
  takeover_ = std::make_unique<TakeoverWatch>(f, parts_.cupti, parts_.pool, parts_.queue,
                                              parts_.counters, clock_, control_thread_);
  behind_ = std::make_unique<BehindWatch>(parts_.cupti, parts_.queue, parts_.pipeline,
                                          parts_.counters, c.flush_ms, control_thread_);
  clock_domain_ = std::make_unique<ClockDomainWatch>(
      parts_.cupti, clock_, parts_.queue, f.start_calibration.samples(0), control_thread_);
  auto_ = std::make_unique<AutoWindowTrigger>(f, parts_.auto_window, parts_.queue, *window_,
                                              parts_.counters, io_, clock_, stopping_,
                                              control_thread_);
  ticks_ = std::make_unique<PeriodicTicks>(
      PeriodicTicks::Parts{f, parts_.cupti, clock_, parts_.queue, parts_.counters,
                           parts_.fill_stats, parts_.faults, parts_.rebinder, *clock_domain_,
                           *behind_, *takeover_, *auto_},
      io_, stopping_, control_thread_);
  metrics_ = std::make_unique<MonitorMetrics>(f, parts_.pipeline, parts_.fill_stats);
  requests_ = std::make_unique<ControlRequests>(ControlRequests::Parts{
      f, parts_.pipeline, parts_.queue, parts_.counters, clock_, parts_.fill_stats, *window_,
      *auto_, *ticks_, *metrics_, stopping_, control_thread_});
  endpoints_ = std::make_unique<ControlEndpoints>(
      io_, c, *requests_, *metrics_, parts_.on_termination_signal, parts_.counters.control_faults,
      control_thread_);
  ticks_->RebindAllImports();
  MaybeFault(parts_.faults, "start.control_thread");
  ticks_->StartFlushThread();
  thread_ = StartOwnThread([this] { Run(); });
  RunAndWait([this, auto_window = c.auto_window] {
    ticks_->Start();
    if (auto_window) auto_->Start();
    endpoints_->Start();
  });
}

void ControlLoop::Run() noexcept {
  pthread_setname_np(pthread_self(), "cupmon-control");
  control_thread_.BindToCurrentThread();
  window_->BindToCurrentThread();
  for (;;) {
    try {
      io_.run();
      return;
    } catch (...) {
      // A handler threw past its own catch: count it and keep serving.
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void ControlLoop::FlushForWindow() {
  parts_.cupti.ActivityFlushAll(0);
  MarkFlushed();
  PollDroppedRecords(parts_.cupti, parts_.counters);
}

void ControlLoop::Shutdown() noexcept {
  try {
    if (window_) window_->Shutdown();
  } catch (...) {
    parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
  }
  if (endpoints_) endpoints_->Shutdown();
}

bool ControlLoop::Stop(std::chrono::milliseconds timeout) {
  if (!thread_.joinable()) return true;
  stopping_ = true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // An open window ends with note "stop" (its kinds disabled, its records flushed, END written),
  // then the socket, the signal trigger and the endpoint go away. The task refers to nothing on
  // this stack, so it may outlive the wait.
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> shut = done->get_future();
  boost::asio::post(io_, [this, done]() noexcept {
    Shutdown();
    done->set_value();
  });
  const bool shut_in_time = shut.wait_until(deadline) == std::future_status::ready;
  work_.reset();
  io_.stop();
  if (!shut_in_time) return false;
  // io_.run() returns within the handler that is running now; the join is then immediate.
  thread_.join();
  return true;
}

void ControlLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

bool ControlLoop::RunAndWait(std::function<void()> task) {
  if (!thread_.joinable()) return false;
  if (std::this_thread::get_id() == thread_.get_id()) {
    task();
    return true;
  }
  // The task usually refers to the caller's stack, so it may run only while the caller waits:
  // `state` goes queued -> running (control thread) or queued -> abandoned (caller, once the
  // io_context stopped), never both. A task already running is waited for even after a stop.
  enum : int { kQueued, kRunning, kAbandoned };
  struct Shared {
    std::atomic<int> state{kQueued};
    std::promise<void> done;
  };
  auto shared = std::make_shared<Shared>();
  std::future<void> finished = shared->done.get_future();
  boost::asio::post(io_, [task = std::move(task), shared, this]() noexcept {
    int expected = kQueued;
    if (!shared->state.compare_exchange_strong(expected, kRunning)) return;
    try {
      task();
    } catch (...) {
      parts_.counters.control_faults.fetch_add(1, std::memory_order_relaxed);
    }
    shared->done.set_value();
  });
  while (finished.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready) {
    int expected = kQueued;
    if (io_.stopped() && shared->state.compare_exchange_strong(expected, kAbandoned)) return false;
  }
  return true;
}

Expected<uint32_t> ControlLoop::RequestWindow(uint32_t duration_ms, std::vector<uint32_t> kinds,
                                              pb::TriggerSource source) {
  Expected<uint32_t> result = MakeError("the control thread has stopped");
  TraceWindow::Request r;
  r.duration_ms = duration_ms ? duration_ms : parts_.facts.config.window_ms;
  r.kinds = std::move(kinds);
  r.source = source;
  RunAndWait([&] { result = window_->Open(r); });
  return result;
}

Expected<void> ControlLoop::RequestCloseWindow() {
  Expected<void> result = MakeError("the control thread has stopped");
  RunAndWait([&] { result = window_->Close("closed"); });
  return result;
}

void ControlLoop::MarkFlushed() {
  if (auto_) auto_->MarkFlushed();
}

std::string ControlLoop::control_socket_path() const {
  return endpoints_ ? endpoints_->control_socket_path() : std::string();
}

uint64_t ControlLoop::flush_running_since_cupti_ns() const {
  return ticks_ ? ticks_->flush_running_since_cupti_ns() : 0;
}

int64_t ControlLoop::flush_running_for_ns() const {
  return ticks_ ? ticks_->flush_running_for_ns() : 0;
}

bool ControlLoop::StopFlushThread(std::chrono::steady_clock::time_point deadline) {
  return !ticks_ || ticks_->StopFlushThread(deadline);
}

}  // namespace cupmon
