// A bounded pool of fixed-size activity buffers for the CUPTI buffer-request callback.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "cupmon/base/error.h"

namespace cupmon {

// Owns `count` buffers of `buffer_bytes` each, carved from one anonymous mapping made at start, so
// the steady state never allocates. Pages are committed by the kernel on first touch.
//
// Memory ordering: each slot is one atomic flag. Acquire() claims a free slot with a
// compare-exchange (acquire ordering, so the writer's last use of the buffer happens-before CUPTI's
// next one); Release() stores "free" with release ordering. No locks: Acquire() runs on the
// application's launching threads inside the CUPTI request callback.
class BufferPool {
 public:
  static Expected<std::unique_ptr<BufferPool>> Create(size_t buffer_bytes, size_t count);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer, or null when every buffer is in use (counted in exhausted()). Lock-free.
  uint8_t* Acquire() noexcept;
  // Returns a buffer obtained from Acquire(). Lock-free.
  void Release(uint8_t* buffer) noexcept;
  // Gives the pages of every buffer back to the kernel (MADV_DONTNEED) when none is handed out;
  // the mapping stays, and a buffer touched again reads as zeros. For a stopped monitor that is
  // kept (never freed) after a C API restart. Returns false (and does nothing) while any buffer is
  // in use.
  bool ReleaseMemory() noexcept;
  // True when `p` is the start of one of this pool's buffers.
  bool Owns(const uint8_t* p) const noexcept;
  // Slot `slot`'s buffer while it is handed out, else null (a racy snapshot, for the control
  // thread's takeover check: monitor/src/callback_watch.h).
  const uint8_t* BufferIfInUse(size_t slot) const noexcept {
    if (slot >= count_ || busy_[slot].load(std::memory_order_relaxed) == 0) return nullptr;
    return base_ + slot * buffer_bytes_;
  }

  size_t buffer_bytes() const { return buffer_bytes_; }
  size_t count() const { return count_; }
  size_t in_use() const noexcept { return in_use_.load(std::memory_order_relaxed); }
  size_t free_count() const noexcept { return count_ - in_use(); }
  uint64_t exhausted() const noexcept { return exhausted_.load(std::memory_order_relaxed); }

 private:
  BufferPool(uint8_t* base, size_t buffer_bytes, size_t count);

  uint8_t* const base_;
  const size_t buffer_bytes_;
  const size_t count_;
  std::unique_ptr<std::atomic<uint32_t>[]> busy_;
  std::atomic<uint32_t> next_{0};  // where the next scan starts, spreading threads over slots
  std::atomic<size_t> in_use_{0};
  std::atomic<uint64_t> exhausted_{0};
};

}  // namespace cupmon
