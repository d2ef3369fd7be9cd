// ThreadChecker: the thread a member belongs to when no lock guards it ("control thread only"),
// checked in debug and sanitizer builds (Perfetto's ThreadChecker and PERFETTO_DCHECK_THREAD).
//
// Members guarded by a lock say so to the compiler (thread_annotations.h); members that belong to
// one thread say so with a ThreadChecker beside them and CUPMON_DCHECK_THREAD(checker) at the top
// of each function that touches them. The check is on where NDEBUG is unset or CUPMON_THREAD_CHECKS
// is defined (CMake sets it for CUPMON_SANITIZE builds and with -DCUPMON_THREAD_CHECKS=ON); else
// the macro compiles to nothing. The class itself has one layout in every build, so objects built
// with the check on and off may be mixed.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#if !defined(NDEBUG) || defined(CUPMON_THREAD_CHECKS)
#define CUPMON_THREAD_CHECKS_ON 1
#else
#define CUPMON_THREAD_CHECKS_ON 0
#endif

namespace cupmon {

// Threading: any thread. Unbound until the first check (or BindToCurrentThread()), which binds it
// to the calling thread; from then on a check from any other thread fails. A thread's body binds
// its checker before it serves anything, so that a first use from the wrong thread is caught
// too; the parts of one thread may share that checker by reference.
class ThreadChecker {
 public:
  ThreadChecker() = default;
  ThreadChecker(const ThreadChecker&) = delete;
  ThreadChecker& operator=(const ThreadChecker&) = delete;

  // Binds to the calling thread now (a thread's body, before it serves anything).
  void BindToCurrentThread() { owner_.store(std::this_thread::get_id(), std::memory_order_relaxed); }
  // Unbound again: the next check binds (an object built on one thread and handed to the thread
  // that will own it).
  void Detach() { owner_.store(std::thread::id(), std::memory_order_relaxed); }
  // True on the owning thread; binds to the calling thread when unbound.
  bool CalledOnValidThread() const {
    const std::thread::id self = std::this_thread::get_id();
    std::thread::id owner = owner_.load(std::memory_order_relaxed);
    if (owner == std::thread::id() &&
        owner_.compare_exchange_strong(owner, self, std::memory_order_relaxed))
      return true;
    return owner == self;
  }
  // The owning thread; a default id when unbound.
  std::thread::id owner() const { return owner_.load(std::memory_order_relaxed); }

 private:
  mutable std::atomic<std::thread::id> owner_{};
};

namespace internal {

[[noreturn]] inline void ThreadCheckFailed(const ThreadChecker& checker, const char* what,
                                           const char* function, const char* file, int line) {
  std::fprintf(stderr,
               "cupmon: thread check failed: %s() used %s on thread %zu, but it belongs to thread "
               "%zu (%s:%d)\n",
               function, what, std::hash<std::thread::id>{}(std::this_thread::get_id()),
               std::hash<std::thread::id>{}(checker.owner()), file, line);
  std::abort();
}

}  // namespace internal
}  // namespace cupmon

// At the top of a function that touches members owned by `checker`'s thread.
#if CUPMON_THREAD_CHECKS_ON
#define CUPMON_DCHECK_THREAD(checker)                                                         \
  do {                                                                                        \
    if (!(checker).CalledOnValidThread()) [[unlikely]]                                        \
      ::cupmon::internal::ThreadCheckFailed((checker), #checker, __func__, __FILE__, __LINE__); \
  } while (0)
#else
#define CUPMON_DCHECK_THREAD(checker) \
  do {                                \
  } while (0)
#endif
