// What a forked child of a monitored process must not keep: the monitor's listening sockets and
// its signal handlers. The child has none of the parent's threads, so a listener there accepts
// connections nobody serves, and a handler that writes to the parent's signal pipe swallows the
// signal (a child that SIGTERM cannot end).
#pragma once

#include <signal.h>

namespace cupmon {

// Registration, from normal (non-signal) context; the first call installs a pthread_atfork child
// handler that closes every registered descriptor and puts back every registered disposition.
// The handler is async-signal-safe (fixed tables of atomics, close(), sigaction()), as a child
// handler of a multi-threaded parent must be. Capacity: 16 descriptors, 8 signals; beyond that a
// registration is ignored (returns false).
bool CloseInForkedChild(int fd) noexcept;
// Before the owner closes `fd` itself (the number may be reused for someone else's file).
void ForgetForkedChildFd(int fd) noexcept;
// In a forked child, signal `sig` gets `previous` back (what was there before the monitor).
bool RestoreInForkedChild(int sig, const struct sigaction& previous) noexcept;
void ForgetForkedChildSignal(int sig) noexcept;

}  // namespace cupmon
