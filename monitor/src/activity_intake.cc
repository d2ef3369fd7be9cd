// ActivityIntake: CUPTI's buffer callbacks, their trampolines and the process's one target.
#include "activity_intake.h"

namespace cupmon {
namespace {

// The intake the CUPTI callbacks reach; null when no monitor runs.
std::atomic<ActivityIntake*> g_intake{nullptr};
// Set in a forked child: nothing of the parent's monitor may run there.
std::atomic<bool> g_forked_child{false};

void CUPTIAPI RequestTrampoline(uint8_t** buffer, size_t* size, size_t* max_records) noexcept {
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (g_forked_child.load(std::memory_order_relaxed)) return;
  if (ActivityIntake* in = g_intake.load(std::memory_order_acquire))
    in->OnBufferRequested(buffer, size);
}

void CUPTIAPI CompleteTrampoline(CUcontext, uint32_t, uint8_t* buffer, size_t,
                                 size_t valid_size) noexcept {
  if (g_forked_child.load(std::memory_order_relaxed)) return;
  if (ActivityIntake* in = g_intake.load(std::memory_order_acquire))
    in->OnBufferCompleted(buffer, valid_size);
}

}  // namespace

ActivityIntake::ActivityIntake(const SessionFacts& facts, BufferPool& pool, StringTable& strings,
                               WriterQueue& queue, MonitorCounters& counters, MonitorClock& clock)
    : facts_(facts),
      pool_(pool),
      strings_(strings),
      queue_(queue),
      counters_(counters),
      clock_(clock) {}

bool ActivityIntake::Publish() noexcept {
  ActivityIntake* expected = nullptr;
  return g_intake.compare_exchange_strong(expected, this, std::memory_order_acq_rel);
}

void ActivityIntake::Unpublish() noexcept {
  ActivityIntake* self = this;
  g_intake.compare_exchange_strong(self, nullptr, std::memory_order_acq_rel);
}

CUpti_BuffersCallbackRequestFunc ActivityIntake::RequestCallback() noexcept {
  return RequestTrampoline;
}
CUpti_BuffersCallbackCompleteFunc ActivityIntake::CompleteCallback() noexcept {
  return CompleteTrampoline;
}

void ActivityIntake::DisableInForkedChild() noexcept {
  g_forked_child.store(true, std::memory_order_relaxed);
}

bool ActivityIntake::InForkedChild() noexcept {
  return g_forked_child.load(std::memory_order_relaxed);
}

void ActivityIntake::OnBufferRequested(uint8_t** buffer, size_t* size) noexcept {
  // Hot path (application thread). Exhausted: no buffer, CUPTI drops the records and counts them;
  // the pool counts the event.
  counters_.callback_calls.fetch_add(1, std::memory_order_relaxed);
  uint8_t* b = pool_.Acquire();
  if (!b) return;
  *buffer = b;
  *size = pool_.buffer_bytes();
}

void ActivityIntake::OnBufferCompleted(uint8_t* buffer, size_t valid_size) noexcept {
  counters_.callback_calls.fetch_add(1, std::memory_order_relaxed);
  if (!buffer || !pool_.Owns(buffer)) {
    counters_.foreign_buffers.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  try {
    // Strings first: every name reaches the files ahead of the buffer that points to it.
    strings_.InternBuffer(facts_, buffer, valid_size);
    WriterItem item;
    item.buffer = buffer;
    item.valid = valid_size;
    item.completed_steady_ns = clock_.SteadyNs();
    counters_.buffers_at_writer.fetch_add(1, std::memory_order_relaxed);
    if (queue_.Push(std::move(item))) return;
    counters_.buffers_at_writer.fetch_sub(1, std::memory_order_relaxed);
    // The writer has stopped (a late buffer after stop): the records are lost, the buffer is not.
  } catch (...) {
    // Out of memory while copying names: lose this buffer rather than throw into CUPTI.
    counters_.intake_faults.fetch_add(1, std::memory_order_relaxed);
  }
  counters_.lost_buffers.fetch_add(1, std::memory_order_relaxed);
  pool_.Release(buffer);
}

}  // namespace cupmon
