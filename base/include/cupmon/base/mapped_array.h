// MappedArray: storage for large arrays of trivially copyable elements, in huge-page mappings (the
// decoder's join ring, correlation table, and the reorder stage's rows and key rings).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "cupmon/base/huge_pages.h"

namespace cupmon {

// An array of n elements that are never constructed or destroyed. Large ones live in huge-page
// mappings (huge_pages.h): pages are faulted in only once used, one fault per 2 MiB instead
// of one per 4 KiB.
// - kZeroed (the correlation table): the elements start zero-filled. From 2 MiB on they live in
//   a fresh mapping (MapZeroedHugeBytes), whose untouched pages cost nothing; smaller ones are
//   calloc'd.
// - Otherwise the elements are indeterminate until written. From 64 KiB on they live in a kept
//   mapping (MapHugeBytes), which hands out again what an earlier builder or another array
//   released: the next rank's builder finds its pages faulted in. The reorder stage's key rings
//   double from 1,024 keys (24 KiB) up to 65,536 (1.5 MiB): in kept 2 MiB mappings each ring
//   that grows reuses the one another ring or rank released, where fresh mappings of their own
//   size would each be faulted in anew. Smaller ones come from the heap.
// Under AddressSanitizer (CUPMON_HUGE_MAPPINGS 0) every array is on the heap, where it watches
// them.
template <class T, bool kZeroed>
class MappedArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  MappedArray() = default;
  explicit MappedArray(size_t n) : size_(n) {
    if (!n) return;
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    bytes_ = n * sizeof(T);
    if (Mapped()) {
      data_ = static_cast<T*>(kZeroed ? MapZeroedHugeBytes(bytes_) : MapHugeBytes(bytes_));
      return;
    }
    data_ = static_cast<T*>(kZeroed ? std::calloc(n, sizeof(T)) : std::malloc(bytes_));
    if (!data_) throw std::bad_alloc();
  }
  ~MappedArray() {
    if (!data_) return;
    if (Mapped()) UnmapHugeBytes(data_, bytes_);
    else std::free(data_);
  }
  MappedArray(MappedArray&& o) noexcept { *this = std::move(o); }
  MappedArray& operator=(MappedArray&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  MappedArray(const MappedArray&) = delete;
  MappedArray& operator=(const MappedArray&) = delete;

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kMappedMin = !CUPMON_HUGE_MAPPINGS ? SIZE_MAX
                                       : kZeroed             ? size_t{2} << 20
                                                             : size_t{64} << 10;
  bool Mapped() const { return bytes_ >= kMappedMin; }

  T* data_ = nullptr;
  size_t size_ = 0, bytes_ = 0;
};

template <class T>
using ZeroedArray = MappedArray<T, true>;
template <class T>
using UninitArray = MappedArray<T, false>;

}  // namespace cupmon
