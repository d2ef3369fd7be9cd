// AutoWindowTrigger: opens the window a slow step asked for (auto_window_trigger.h).
#include "auto_window_trigger.h"

#include <cstdio>
#include <string>

namespace cupmon {

void AutoWindowTrigger::MarkFlushed() {
  // Only while the step trigger can fire or steps are summed; cuptiActivityFlushAll is blocking,
  // so the buffers it handed back are queued ahead of the mark.
  const MonitorConfig& c = facts_.config;
  if (!mailbox_ || !(c.auto_window || SumsSteps(c) || mailbox_->once_factor() > 0)) return;
  // One queued at a time; while one waits, the writer queues the next when it takes it.
  if (!mailbox_->ClaimMark()) return;
  WriterItem mark;
  mark.flush_mark = true;
  // Full or closed: dropped (the count bound still holds); the next flush may queue one.
  if (!queue_.Push(std::move(mark))) mailbox_->DropMark();
}

void AutoWindowTrigger::Start() {
  CUPMON_DCHECK_THREAD(thread_);
  if (running_ || !mailbox_) return;
  running_ = true;
  timer_.Start(PollMs(facts_.config.flush_ms), [this] { OnPoll(); });
}

Expected<void> AutoWindowTrigger::ArmWhenSlower(double factor,
                                                const TraceWindow::Request& request) {
  CUPMON_DCHECK_THREAD(thread_);
  if (!mailbox_) return MakeError("this monitor has no step watch");
  if (!(factor > 1.0) || factor > 1000.0)
    return MakeError("--when-slower " + std::to_string(factor) +
                     ": expected a factor above 1 and at most 1000, such as 1.5");
  if (facts_.kernel.start == 0 || facts_.kernel_name_offset == 0)
    return MakeError("the loaded CUPTI's kernel record layout is unknown to this cupmon, so steps "
                     "cannot be timed");
  mailbox_->ArmOnce(factor);
  Start();
  once_request_ = request;
  return {};
}

void AutoWindowTrigger::OnPoll() {
  CUPMON_DCHECK_THREAD(thread_);
  const std::optional<SlowStep> slow = mailbox_->Take();
  if (!slow) return;
  const MonitorConfig& c = facts_.config;
  const int64_t now = clock_.SteadyNs();
  // Never while a window is open (whoever opened it), and, for CUPMON_AUTO_WINDOW, at most one
  // per MIN_GAP: a job that stays slow gets one window, not one per step.
  const int64_t min_gap_ns = static_cast<int64_t>(c.auto_window_min_gap_ms) * 1'000'000;
  const bool in_gap = !slow->once && last_auto_ns_ && now - *last_auto_ns_ < min_gap_ns;
  if (window_.is_open() || in_gap) {
    counters_.auto_windows_skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  TraceWindow::Request r;
  r.duration_ms = c.window_ms;
  if (slow->once && once_request_) r = *once_request_;  // cupmonctl's duration and kinds
  r.source = pb::TRIGGER_AUTO;
  r.received_realtime_ns = clock_.RealtimeNs();
  r.trigger_step = slow->step;
  r.trigger_step_ns = slow->duration_ns;
  r.trigger_median_ns = slow->median_ns;
  r.trigger_factor = slow->factor;
  if (slow->by != AutoWindowBy::kStep) r.trigger_by = AutoWindowByName(slow->by);
  if (auto opened = window_.Open(r); !opened) {
    counters_.auto_windows_skipped.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "cupmon: automatic trace window at step %s not opened: %s\n",
                 std::to_string(slow->step).c_str(), opened.error().message.c_str());
    return;
  }
  last_auto_ns_ = now;
  opened_.fetch_add(1, std::memory_order_relaxed);
  if (slow->once) {
    mailbox_->Disarm();
    once_request_.reset();
  }
}

}  // namespace cupmon
