// OrderedParallel: runs independent pieces of work (the ranks of a merged report) on several
// threads and hands their results over in order, with a bound on how far ahead they run. How many
// ranks the merged reports read at once: RankJobs (memory_room.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include "cupmon/base/thread_annotations.h"

namespace cupmon::decoder {

// Calls work(i, progress_i) for i = 0 .. n-1 on up to `jobs` threads, in order of i, and hands
// the results over in that order (Take). Work i starts only once fewer than `jobs` results are
// ahead of the last one taken, so at most jobs + 1 results exist at once (the jobs ahead and the
// one the caller holds), whatever n is. work reports its progress (bytes read) by storing into
// its counter; Take adds all counters up for the caller's progress line. An exception thrown by
// work(i) is rethrown by Take(i). The destructor starts no more work and waits for the work under
// way. One thread takes.
template <class T>
class OrderedParallel {
 public:
  using Work = std::function<std::unique_ptr<T>(size_t i, std::atomic<uint64_t>& progress)>;

  // Threads that cannot be created are done without, as long as one can.
  OrderedParallel(size_t n, size_t jobs, Work work)
      : work_(std::move(work)),
        jobs_(std::max<size_t>(jobs, 1)),
        n_(n),
        slots_(n),
        progress_(new std::atomic<uint64_t>[n]) {
    for (size_t i = 0; i < n; ++i) progress_[i].store(0, std::memory_order_relaxed);
    const size_t threads = std::min(jobs_, n);
    threads_.reserve(threads);  // so that only a thread's creation can throw once one runs
    for (size_t t = 0; t < threads; ++t) {
      try {
        threads_.emplace_back([this] { Run(); });
      } catch (const std::system_error&) {
        if (threads_.empty()) throw;
        break;
      }
    }
  }
  ~OrderedParallel() {
    {
      MutexLock lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  OrderedParallel(const OrderedParallel&) = delete;
  OrderedParallel& operator=(const OrderedParallel&) = delete;

  // Result i, waited for; i = 0, 1, 2, ... in turn. While it waits, tick(progress of all work)
  // is called every `every`.
  std::unique_ptr<T> Take(size_t i, std::chrono::milliseconds every,
                          const std::function<void(uint64_t done)>& tick) {
    MutexLock lock(mutex_);
    while (!slots_[i].done) {
      const auto deadline = std::chrono::steady_clock::now() + every;
      while (!slots_[i].done && lock.WaitUntil(changed_, deadline)) {
      }
      if (slots_[i].done) break;
      lock.Unlock();
      tick(Progress());
      lock.Lock();
    }
    taken_ = i + 1;
    Slot slot = std::move(slots_[i]);
    lock.Unlock();
    changed_.notify_all();  // a worker may start the next piece of work
    if (slot.error) std::rethrow_exception(slot.error);
    return std::move(slot.result);
  }

  // The progress of all work so far.
  uint64_t Progress() const {
    uint64_t sum = 0;
    for (size_t i = 0; i < n_; ++i) sum += progress_[i].load(std::memory_order_relaxed);
    return sum;
  }

 private:
  struct Slot {
    bool done = false;
    std::unique_ptr<T> result;
    std::exception_ptr error;
  };

  void Run() {
    for (;;) {
      size_t i;
      {
        MutexLock lock(mutex_);
        while (!stop_ && next_ < n_ && next_ >= taken_ + jobs_) lock.Wait(changed_);
        if (stop_ || next_ >= n_) return;
        i = next_++;
      }
      Slot slot;
      try {
        slot.result = work_(i, progress_[i]);
      } catch (...) {
        slot.error = std::current_exception();
      }
      slot.done = true;
      {
        MutexLock lock(mutex_);
        slots_[i] = std::move(slot);
      }
      changed_.notify_all();
    }
  }

  Work work_;
  const size_t jobs_;
  const size_t n_;
  Mutex mutex_;
  std::condition_variable changed_;
  std::vector<Slot> slots_ CUPMON_GUARDED_BY(mutex_);
  size_t next_ CUPMON_GUARDED_BY(mutex_) = 0;
  size_t taken_ CUPMON_GUARDED_BY(mutex_) = 0;
  bool stop_ CUPMON_GUARDED_BY(mutex_) = false;
  std::unique_ptr<std::atomic<uint64_t>[]> progress_;
  std::vector<std::thread> threads_;
};

}  // namespace cupmon::decoder
