// GrowingRing: a FIFO in one growing power-of-two ring (the decoder's join ring, the reorder
// stage's key runs, the step consumer's queues).
#pragma once

#include <algorithm>
#include <cstddef>

#include "cupmon/base/mapped_array.h"

namespace cupmon {

// A FIFO of trivially copyable elements in one ring whose capacity is a power of two, doubled
// when full (std::deque allocates a block per few dozen entries). Its storage is an UninitArray:
// nothing is zeroed, and from 64 KiB on it lives in the kept huge mappings, so a ring that grows
// reuses what another ring, or the previous rank's, released.
// - Why not a std::vector: growing one zero-fills every new capacity, a page fault for each of
//   its 4 KiB pages.
// - The cost: the smaller mappings a ring grew through stay in that cache, resident, about as
//   much again as the ring.
template <typename T>
class GrowingRing {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  // The i-th element from the front; i < size().
  const T& operator[](size_t i) const { return items_[(head_ + i) & (items_.size() - 1)]; }
  void push_back(const T& v) { PushSlot() = v; }
  // A new element at the back, as an earlier one left it (indeterminate), for the caller to fill
  // in place. Growing makes room for at least `min_capacity` elements: a ring whose size is
  // known ahead (the join ring holds a horizon of records and a buffer) grows once, and its
  // untouched pages cost nothing.
  T& PushSlot(size_t min_capacity = 0) {
    if (size_ == items_.size()) Grow(min_capacity);
    return items_[(head_ + size_++) & (items_.size() - 1)];
  }
  void pop_front() {
    head_ = (head_ + 1) & (items_.size() - 1);
    --size_;
  }
  void clear() { head_ = size_ = 0; }

 private:
  [[gnu::noinline]] void Grow(size_t min_capacity) {
    size_t capacity = 1024;
    while (capacity < std::max(2 * items_.size(), min_capacity)) capacity *= 2;
    UninitArray<T> grown(capacity);
    for (size_t i = 0; i < size_; ++i) grown[i] = (*this)[i];
    items_ = std::move(grown);
    head_ = 0;
  }

  UninitArray<T> items_;
  size_t head_ = 0, size_ = 0;
};

}  // namespace cupmon
