// Huge-page storage for large buffers: anonymous mappings on 2 MiB boundaries with transparent huge
// pages asked for, kept for reuse when released, and an allocator that hands them to std::vector
// without zeroing what it adds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace cupmon {

// Storage of at least kHugeMappingMin bytes for the decoder's large buffers: an anonymous mapping
// that starts on a 2 MiB boundary and spans whole 2 MiB pages, with transparent huge pages asked
// for (a hint: without THP it is ordinary memory). A malloc'd block of that size starts and ends on
// 4 KiB pages, each faulted in on its own. Throws std::bad_alloc when the mapping fails. Release
// with UnmapHugeBytes(p, bytes), the same `bytes`: it keeps released mappings
// (at most 32, 512 MiB of address space) and MapHugeBytes hands out the smallest that fits, its
// excess unmapped, so memory a decoder frees between ranks is not cleared by the kernel again. The
// bytes of such a mapping are what was last written there. Thread-safe.
// Under AddressSanitizer every allocation stays on its heap, where reads past a buffer's end are
// caught; it does not watch mappings.
#if defined(__SANITIZE_ADDRESS__)
#define CUPMON_HUGE_MAPPINGS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CUPMON_HUGE_MAPPINGS 0
#endif
#endif
#ifndef CUPMON_HUGE_MAPPINGS
#define CUPMON_HUGE_MAPPINGS 1
#endif
inline constexpr size_t kHugeMappingMin = CUPMON_HUGE_MAPPINGS ? size_t{2} << 20 : SIZE_MAX;
void* MapHugeBytes(size_t bytes);
// The same, for storage that must start zero-filled (the decoder's correlation table): always a
// fresh mapping, never a kept one, so the kernel clears each page as it is first touched and pages
// never touched cost nothing. Released with UnmapHugeBytes, and then kept like any other.
void* MapZeroedHugeBytes(size_t bytes);
void UnmapHugeBytes(void* p, size_t bytes) noexcept;

// An allocator whose resize leaves new elements default-initialized: for bytes, not written at all.
// std::vector<uint8_t>::resize zeroes what it adds, a memset of each decoded buffer's growth that
// the decoder then overwrites. Allocations of kHugeMappingMin bytes or more are huge-page mappings
// (MapHugeBytes).
template <class T>
struct DefaultInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) >= kHugeMappingMin) return static_cast<T*>(MapHugeBytes(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) >= kHugeMappingMin) return UnmapHugeBytes(p, n * sizeof(T));
    std::allocator<T>::deallocate(p, n);
  }
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Bytes that are written before they are read (a decoded buffer). Growing one does not zero it:
// its new bytes are indeterminate until written.
using ByteBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;
}  // namespace cupmon
