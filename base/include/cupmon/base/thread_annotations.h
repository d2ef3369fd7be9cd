// Clang's thread-safety analysis for cupmon: which lock guards which member (CUPMON_GUARDED_BY),
// which function must be called with it held (CUPMON_REQUIRES), and a mutex the analysis knows.
// Checked by clang's -Wthread-safety (the TSan suite of tools/run-tests builds with it, findings
// as errors); other compilers ignore the annotations.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define CUPMON_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CUPMON_THREAD_ANNOTATION(x)
#endif

// On a class: it is a capability (a lock), named `x` in the analysis's messages.
#define CUPMON_CAPABILITY(x) CUPMON_THREAD_ANNOTATION(capability(x))
// On a class: an RAII object that holds a capability from its constructor to its destructor.
#define CUPMON_SCOPED_CAPABILITY CUPMON_THREAD_ANNOTATION(scoped_lockable)
// On a data member: read or written only with `x` held.
#define CUPMON_GUARDED_BY(x) CUPMON_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: what it points to is read or written only with `x` held.
#define CUPMON_PT_GUARDED_BY(x) CUPMON_THREAD_ANNOTATION(pt_guarded_by(x))
// On a lock: it is taken before (after) the locks named, never the other way round.
#define CUPMON_ACQUIRED_BEFORE(...) CUPMON_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define CUPMON_ACQUIRED_AFTER(...) CUPMON_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// On a function: the caller holds the locks named (exclusively; shared).
#define CUPMON_REQUIRES(...) CUPMON_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define CUPMON_REQUIRES_SHARED(...) \
  CUPMON_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// On a function: it takes (releases) the locks named, or with none named the object itself.
#define CUPMON_ACQUIRE(...) CUPMON_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define CUPMON_RELEASE(...) CUPMON_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// On a function: it takes the lock when it returns `result`.
#define CUPMON_TRY_ACQUIRE(...) CUPMON_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: the caller must not hold the locks named (the function takes them).
#define CUPMON_EXCLUDES(...) CUPMON_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: it checks at run time that the lock is held, and the analysis then assumes it.
#define CUPMON_ASSERT_CAPABILITY(x) CUPMON_THREAD_ANNOTATION(assert_capability(x))
// On a function: it returns a reference to the lock `x`.
#define CUPMON_RETURN_CAPABILITY(x) CUPMON_THREAD_ANNOTATION(lock_returned(x))
// On a function: not analysed. Each use says why the analysis cannot follow it.
#define CUPMON_NO_THREAD_SAFETY_ANALYSIS CUPMON_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace cupmon {

// A std::mutex the analysis knows (libstdc++'s carries no annotations). Taken with MutexLock;
// waited on through MutexLock's Wait with a std::condition_variable.
class CUPMON_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() CUPMON_ACQUIRE() { mu_.lock(); }
  void Unlock() CUPMON_RELEASE() { mu_.unlock(); }
  bool TryLock() CUPMON_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // For code that already holds the lock and cannot say so to the analysis (a callback the
  // lock's owner runs): documents the fact; checks nothing at run time.
  void AssertHeld() const CUPMON_ASSERT_CAPABILITY(this) {}

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds a Mutex for its scope, like std::unique_lock: Unlock() and Lock() release and take it
// again within the scope, and Wait* wait on a condition variable, releasing the mutex meanwhile.
// A wait returns with the mutex held; the caller loops on its condition:
//   while (queue_.empty()) lock.Wait(cv_);
// so that the condition is read where the analysis sees the lock held.
class CUPMON_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) CUPMON_ACQUIRE(mu) : lock_(mu.mu_) {}
  ~MutexLock() CUPMON_RELEASE() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() CUPMON_RELEASE() { lock_.unlock(); }
  void Lock() CUPMON_ACQUIRE() { lock_.lock(); }

  void Wait(std::condition_variable& cv) { cv.wait(lock_); }
  // False when `deadline` passed (the caller reads its condition once more, as after any wait).
  template <class Clock, class Duration>
  bool WaitUntil(std::condition_variable& cv,
                 const std::chrono::time_point<Clock, Duration>& deadline) {
    return cv.wait_until(lock_, deadline) == std::cv_status::no_timeout;
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

// A std::timed_mutex the analysis knows: for a lock that a caller may give up waiting for (the
// exit path must not wait without end for a thread that holds it).
class CUPMON_CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void Lock() CUPMON_ACQUIRE() { mu_.lock(); }
  void Unlock() CUPMON_RELEASE() { mu_.unlock(); }
  template <class Rep, class Period>
  bool TryLockFor(const std::chrono::duration<Rep, Period>& timeout) CUPMON_TRY_ACQUIRE(true) {
    return mu_.try_lock_for(timeout);
  }

 private:
  std::timed_mutex mu_;
};

// Holds a TimedMutex for its scope: takes it, or with std::adopt_lock takes over one that the
// caller holds already (after TryLockFor succeeded).
class CUPMON_SCOPED_CAPABILITY TimedMutexLock {
 public:
  explicit TimedMutexLock(TimedMutex& mu) CUPMON_ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  TimedMutexLock(TimedMutex& mu, std::adopt_lock_t) CUPMON_REQUIRES(mu) : mu_(mu) {}
  ~TimedMutexLock() CUPMON_RELEASE() { mu_.Unlock(); }
  TimedMutexLock(const TimedMutexLock&) = delete;
  TimedMutexLock& operator=(const TimedMutexLock&) = delete;

 private:
  TimedMutex& mu_;
};

}  // namespace cupmon
