// StartOwnThread: how cupmon starts each of its threads (writer, control; at SIGTERM or stop the
// final flush, its bound and CUPTI's flush). A new thread inherits its creator's signal mask;
// cupmon's threads are started with every asynchronous signal blocked, so a process-directed signal
// (SIGTERM, SIGINT, SIGHUP, SIGUSR1/2, SIGCHLD, ...) is always delivered to one of the
// application's threads, as it would be without cupmon. Without this, a job that blocks a signal in
// its own threads to take it with sigwait() (or that handles it in a thread of its choosing) could
// have it land on a cupmon thread instead: with SIG_DFL that ends the process, bypassing the job's
// orderly shutdown. cupmon's own handlers (the window signal, TerminationSignals) only write to a
// pipe, so they run on whichever thread takes them. Synchronous signals (SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGTRAP, SIGSYS) stay unblocked: blocking them is undefined when they are raised by a
// fault. SIGABRT too (abort() unblocks it anyway).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace cupmon {

// The set of signals cupmon's threads block: all but the synchronous ones above. glibc leaves its
// internal signals (thread cancellation, setxid) out of any mask it is asked to set.
inline sigset_t OwnThreadBlockedSignals() {
  sigset_t set;
  sigfillset(&set);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) sigdelset(&set, sig);
  return set;
}

// Starts `f` on a new std::thread whose signal mask blocks OwnThreadBlockedSignals(). The calling
// thread's mask is blocked only for the moment of pthread_create and restored before returning
// (a signal arriving meanwhile stays pending and is delivered on the restore). Throws what
// std::thread throws when no thread can be made, with the caller's mask restored.
template <typename F>
std::thread StartOwnThread(F&& f) {
  const sigset_t blocked = OwnThreadBlockedSignals();
  sigset_t saved;
  pthread_sigmask(SIG_BLOCK, &blocked, &saved);
  struct Restore {
    sigset_t mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{saved};
  return std::thread(std::forward<F>(f));
}

}  // namespace cupmon
