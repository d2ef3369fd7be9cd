// Huge-page mappings for large buffers, and the cache of released ones that hands them out again.
#include "cupmon/base/huge_pages.h"

#include <sys/mman.h>

#include <array>
#include <cstdint>
#include <new>

#include "cupmon/base/thread_annotations.h"

namespace cupmon {
namespace {
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
size_t WholeHugePages(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }

// Huge mappings released by UnmapHugeBytes, kept for the next MapHugeBytes. A mapping's pages were
// faulted in and cleared by the kernel when first written; a fresh mapping's are again. The decoder
// frees its chunk slots, zstd scratch and join arrays at the end of each rank and maps the same
// sizes for the next one, which the kernel would otherwise clear again. Bounded: at most kEntries
// mappings and kBytes of address space (what was touched of them stays resident until reused or
// the process ends). Thread-safe: the decoding thread and the reading thread both allocate.
class HugeMappingCache {
 public:
  // A kept mapping of at least `length` bytes (whole huge pages), its excess unmapped; the
  // smallest that fits. Null when none does.
  void* Take(size_t length) {
    MutexLock lock(mutex_);
    size_t best = count_;
    for (size_t i = 0; i < count_; ++i)
      if (kept_[i].length >= length && (best == count_ || kept_[i].length < kept_[best].length))
        best = i;
    if (best == count_) return nullptr;
    const Kept k = kept_[best];
    kept_[best] = kept_[--count_];
    bytes_ -= k.length;
    if (k.length > length)
      ::munmap(static_cast<uint8_t*>(k.p) + length, k.length - length);  // whole huge pages
    return k.p;
  }
  // Keeps the mapping when there is room; false when the caller must unmap it.
  bool Keep(void* p, size_t length) {
    MutexLock lock(mutex_);
    if (count_ == kEntries || length > kBytes - bytes_) return false;
    kept_[count_++] = Kept{p, length};
    bytes_ += length;
    return true;
  }

 private:
  static constexpr size_t kEntries = 32;
  static constexpr size_t kBytes = size_t{512} << 20;
  struct Kept {
    void* p;
    size_t length;
  };
  Mutex mutex_;
  std::array<Kept, kEntries> kept_ CUPMON_GUARDED_BY(mutex_){};
  size_t count_ CUPMON_GUARDED_BY(mutex_) = 0;
  size_t bytes_ CUPMON_GUARDED_BY(mutex_) = 0;
};

// Never destroyed: a ByteBuffer may be freed while statics are torn down.
HugeMappingCache& KeptMappings() {
  static auto* cache = new HugeMappingCache;
  return *cache;
}

// A fresh anonymous mapping of `length` bytes (whole huge pages) on a 2 MiB boundary, advised.
void* MapFreshHugePages(size_t length) {
  // Map one huge page more than needed, then unmap the part before the first 2 MiB boundary and
  // what is left after the whole pages.
  void* p = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t raw = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (raw + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > raw) ::munmap(p, aligned - raw);
  const uintptr_t tail = aligned + length, mapped_end = raw + length + kHugePage;
  if (mapped_end > tail) ::munmap(reinterpret_cast<void*>(tail), mapped_end - tail);
#ifdef MADV_HUGEPAGE
  ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
#endif
  return reinterpret_cast<void*>(aligned);
}

size_t HugeLength(size_t bytes) {
  const size_t length = WholeHugePages(bytes);
  if (length < bytes || length + kHugePage < length) throw std::bad_alloc();
  return length;
}
}  // namespace

void* MapHugeBytes(size_t bytes) {
  const size_t length = HugeLength(bytes);
  if (void* kept = KeptMappings().Take(length)) return kept;
  return MapFreshHugePages(length);
}

void* MapZeroedHugeBytes(size_t bytes) { return MapFreshHugePages(HugeLength(bytes)); }

void UnmapHugeBytes(void* p, size_t bytes) noexcept {
  if (!p) return;
  const size_t length = WholeHugePages(bytes);
  if (!KeptMappings().Keep(p, length)) ::munmap(p, length);
}


}  // namespace cupmon
