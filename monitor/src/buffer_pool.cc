// BufferPool: one anonymous mapping split into fixed buffers, claimed with atomic slot flags.
#include "cupmon/monitor/buffer_pool.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace cupmon {

Expected<std::unique_ptr<BufferPool>> BufferPool::Create(size_t buffer_bytes, size_t count) {
  if (buffer_bytes == 0 || buffer_bytes % 8 != 0 || count == 0)
    return MakeError("buffer pool: buffer size must be a non-zero multiple of 8 and count > 0");
  const size_t total = buffer_bytes * count;
  // MAP_NORESERVE: untouched buffers cost no memory, so a large cap is cheap until used.
  void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    return MakeError("buffer pool: cannot map " + std::to_string(total) + " bytes: " +
                         std::strerror(e),
                     e);
  }
  return std::unique_ptr<BufferPool>(new BufferPool(static_cast<uint8_t*>(p), buffer_bytes, count));
}

BufferPool::BufferPool(uint8_t* base, size_t buffer_bytes, size_t count)
    : base_(base),
      buffer_bytes_(buffer_bytes),
      count_(count),
      busy_(new std::atomic<uint32_t>[count]) {
  for (size_t i = 0; i < count; ++i) busy_[i].store(0, std::memory_order_relaxed);
}

BufferPool::~BufferPool() { munmap(base_, buffer_bytes_ * count_); }

uint8_t* BufferPool::Acquire() noexcept {
  // Exhausted: answer at once instead of scanning every slot on each request, when the job is
  // already behind. in_use_ can lag a concurrent Release by a moment; that request then gets no
  // buffer, as it would have a moment earlier.
  if (in_use_.load(std::memory_order_relaxed) >= count_) {
    exhausted_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  const size_t start = next_.fetch_add(1, std::memory_order_relaxed) % count_;
  for (size_t i = 0; i < count_; ++i) {
    const size_t slot = (start + i) % count_;
    uint32_t expected = 0;
    if (busy_[slot].load(std::memory_order_relaxed) == 0 &&
        busy_[slot].compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
      in_use_.fetch_add(1, std::memory_order_relaxed);
      return base_ + slot * buffer_bytes_;
    }
  }
  exhausted_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

bool BufferPool::ReleaseMemory() noexcept {
  if (in_use() != 0) return false;
  return madvise(base_, buffer_bytes_ * count_, MADV_DONTNEED) == 0;
}

bool BufferPool::Owns(const uint8_t* p) const noexcept {
  if (p < base_ || p >= base_ + buffer_bytes_ * count_) return false;
  return static_cast<size_t>(p - base_) % buffer_bytes_ == 0;
}

void BufferPool::Release(uint8_t* buffer) noexcept {
  if (!Owns(buffer)) return;
  const size_t slot = static_cast<size_t>(buffer - base_) / buffer_bytes_;
  if (busy_[slot].exchange(0, std::memory_order_release) == 1)
    in_use_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace cupmon
