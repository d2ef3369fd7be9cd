// Accepting a listener's connections inside someone else's process, for the control plane and
// the metrics endpoint: the process may run out of descriptors (its own files, or a limit set low),
// and the listener must then neither spin nor stop.
#pragma once

#include <chrono>
#include <functional>
#include <utility>

namespace cupmon {

enum class AcceptOutcome {
  kDrained,  // no connection is waiting: wait until the listener is readable again
  kFailed,   // accept failed otherwise (out of descriptors or memory): the connections stay in
             // the backlog; try again after kAcceptRetry rather than spin on a readable listener
};

// How long a server waits after kFailed before it accepts again.
inline constexpr std::chrono::milliseconds kAcceptRetry{100};

// Accepts every connection waiting on `listener` (a non-blocking listening socket) and hands each
// to `on_connection`, non-blocking and close-on-exec from its first instant (accept4: a child
// forked meanwhile never holds it); on_connection owns it then. An interrupted accept and a
// connection aborted before it was accepted are passed over. An exception from on_connection
// propagates; the connections not yet accepted wait.
AcceptOutcome AcceptWaiting(int listener, const std::function<void(int fd)>& on_connection);

// After kFailed, or an exception while taking a connection: arms `timer` so that `resume` (which
// accepts again) runs kAcceptRetry from now, unless the timer is cancelled first (the server's
// Stop). False when it could not be armed (out of memory). `resume` must keep the server alive
// (hold its shared_ptr) and must not throw. `Timer`: boost::asio::steady_timer.
template <class Timer, class Resume>
bool ResumeAcceptingLater(Timer& timer, Resume resume) noexcept {
  try {
    timer.expires_after(kAcceptRetry);
    timer.async_wait(
        [resume = std::move(resume)](const auto& e) mutable noexcept {
          if (!e) resume();
        });
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace cupmon
