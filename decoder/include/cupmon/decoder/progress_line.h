// The progress line a command keeps while it reads a large input: bytes read of the total and a
// percentage, handed to Diagnostics::Progress a few times a second and cleared at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "cupmon/decoder/diagnostics.h"

namespace cupmon::decoder {

class ProgressLine {
 public:
  // Inputs smaller than this finish too fast for a progress line to help.
  static constexpr uint64_t kMinBytes = 64ull << 20;
  // At most one redraw per this many nanoseconds.
  static constexpr int64_t kIntervalNs = 250'000'000;
  using Clock = std::function<int64_t()>;  // monotonic nanoseconds

  // Whether to show a line at all: only where the caller wants one (Diagnostics::WantsProgress:
  // cupmon-decode, when stderr is a terminal) and only for inputs of at least kMinBytes.
  static bool ShouldShow(bool wanted, uint64_t total_bytes) {
    return wanted && total_bytes >= kMinBytes;
  }
  // The line's text, e.g. "read 1.25 GiB of 4.00 GiB (31%)".
  static std::string Format(uint64_t done_bytes, uint64_t total_bytes);

  // Draws through `out` only when `enabled` (see ShouldShow). `clock` defaults to CLOCK_MONOTONIC.
  ProgressLine(Diagnostics& out, bool enabled, Clock clock = {});
  ~ProgressLine() { Finish(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Called as reading advances; redraws when kIntervalNs has passed since the last redraw.
  void Update(uint64_t done_bytes, uint64_t total_bytes);
  // Clears the line if one was drawn (before any other output or message). Idempotent.
  void Finish();
  bool drawn() const { return drawn_; }

 private:
  Diagnostics& out_;
  bool enabled_;
  Clock clock_;
  bool drawn_ = false;
  int64_t last_ns_ = 0;
};

}  // namespace cupmon::decoder
