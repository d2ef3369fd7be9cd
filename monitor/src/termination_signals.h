// TerminationSignals: SIGTERM and SIGINT of a job that has no handler of its own (a scheduler's
// SIGTERM at the time limit, Ctrl-C) end it without atexit, losing what sits in CUPTI's buffers.
// This catches them, has the session flush (bounded), then lets the default action run.
#pragma once

#include <signal.h>

#include <array>
#include <functional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

namespace cupmon {

// Threading: Start() and Stop() on the control thread. The signal handler only writes the signal
// number to a pipe (async-signal-safe); the control thread reads it and calls `on_signal(sig)`,
// which must not block the control thread (the session hands the flush to a thread of its own).
// Policy: a signal whose disposition is not SIG_DFL at Start (the application's handler, or
// SIG_IGN) is left alone; so is one the application takes over later. A forked child gets SIG_DFL
// back and the pipe closed (fork_child_cleanup.h).
class TerminationSignals {
 public:
  static constexpr std::array<int, 2> kSignals = {SIGTERM, SIGINT};

  TerminationSignals(boost::asio::io_context& io, std::function<void(int)> on_signal);
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Installs the handler for each signal still at SIG_DFL. Returns how many it took.
  int Start();
  // Puts SIG_DFL back where the handler is still ours, closes the pipe.
  void Stop();
  bool handles(int sig) const;

  // Restores SIG_DFL for `sig` and raises it on the calling thread (unblocked there): the process
  // ends as it would have without cupmon. Returns only if the signal did not end it.
  static void RaiseDefault(int sig);

 private:
  void Read();

  boost::asio::io_context& io_;
  std::function<void(int)> on_signal_;
  boost::asio::posix::stream_descriptor reader_;
  std::array<bool, 2> installed_{};
  unsigned char byte_ = 0;
};

}  // namespace cupmon
