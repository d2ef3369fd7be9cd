// WriterQueue: the hand-over from CUPTI's completion thread and the control thread to the writer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "cupmon/base/thread_annotations.h"

namespace cupmon {

class RecordingWriter;

// A completed CUPTI buffer (buffer != null) or a task that runs on the writer thread in order
// with the buffers queued before it.
struct WriterItem {
  uint8_t* buffer = nullptr;
  size_t valid = 0;
  // The monitor's steady clock when CUPTI completed `buffer` (0: unknown): its delivery lag.
  int64_t completed_steady_ns = 0;
  std::function<void(RecordingWriter&)> task;
  // A task that needs the file open even when no buffer came before it (the final task at stop);
  // other tasks queued before the first buffer wait for it.
  bool needs_file = false;
  // The control thread's mark after a periodic flush returned: the buffers queued before it are
  // all those CUPTI filled until the flush (the step watch settles its order on it).
  bool flush_mark = false;
  // Runs on the writer thread after the item, whether the task ran, waits for the first file, or
  // was dropped by a fault: the place to wake a waiting caller.
  std::function<void()> after;
};

// Multi-producer, one consumer. Buffers are bounded by the pool that owns them and are always
// accepted while open; tasks are bounded (kMaxTasks) so that a flood of requests cannot grow
// memory: a task beyond it is refused and counted. The lock is held only to move items, never
// while calling CUPTI or doing I/O; the two vectors keep their capacity, so the steady state does
// not allocate.
class WriterQueue {
 public:
  static constexpr size_t kMaxTasks = 4096;

  // False when closed (the caller still owns the buffer) or, for a task, when full.
  bool Push(WriterItem item) {
    {
      MutexLock lk(mu_);
      if (closed_) return false;
      if (!item.buffer) {
        if (tasks_ >= kMaxTasks) {
          tasks_dropped_.fetch_add(1, std::memory_order_relaxed);
          return false;
        }
        ++tasks_;
      }
      items_.push_back(std::move(item));
    }
    cv_.notify_one();
    return true;
  }
  // Writer thread: waits for items and swaps them into `out` (cleared first). False once the
  // queue is closed and drained.
  bool PopAll(std::vector<WriterItem>* out) {
    out->clear();
    MutexLock lk(mu_);
    while (items_.empty() && !closed_) lk.Wait(cv_);
    if (items_.empty()) return false;
    out->swap(items_);
    tasks_ = 0;
    return true;
  }
  // No more items after this; the writer drains what is queued, then PopAll returns false.
  void Close() {
    {
      MutexLock lk(mu_);
      closed_ = true;
    }
    cv_.notify_one();
  }
  bool closed() const {
    MutexLock lk(mu_);
    return closed_;
  }
  uint64_t tasks_dropped() const { return tasks_dropped_.load(std::memory_order_relaxed); }

 private:
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::vector<WriterItem> items_ CUPMON_GUARDED_BY(mu_);
  size_t tasks_ CUPMON_GUARDED_BY(mu_) = 0;
  bool closed_ CUPMON_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> tasks_dropped_{0};
};

// Any thread: queues `task` for the writer, in order with what was queued before it. False when
// the queue is full or closed: the task is dropped (counted by the queue).
inline bool PostToWriter(WriterQueue& queue, std::function<void(RecordingWriter&)> task) {
  WriterItem item;
  item.task = std::move(task);
  return queue.Push(std::move(item));
}

}  // namespace cupmon
