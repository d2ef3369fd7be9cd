// CallbackWatch: notices, from the flush timer, that another CUPTI client has taken CUPTI's
// activity callbacks away from cupmon (plain injection or the C API, where cupmon cannot see the
// other client's calls), and decides when to take them back. docs/COEXISTENCE.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cupmon {

// The signal: for one whole flush period CUPTI has called neither of cupmon's buffer callbacks
// and written no new record into any cupmon buffer it holds, although cupmon buffers were inside
// CUPTI at both ends of that period (so the period's non-forced flush returned none of them).
// While cupmon owns the callbacks, new activity either lands in a buffer of cupmon's (CUPTI places
// a record in the host buffer when the activity starts and completes it later) or makes CUPTI
// request or complete one. After another client registered its own callbacks, CUPTI requests
// buffers from that client and completes cupmon's buffers into it (Kineto logs "bufferCompleted
// called with unknown buffer"), so they stop growing and never come back ("stranded").
// Growth is seen by FilledPrefixBytes: buffers are handed to CUPTI zeroed (CUPTI zeroes them, or
// the writer does with zero_buffers) and filled from the front.
// Limits (stated in docs/COEXISTENCE.md): a kernel running longer than the flush period with no
// other CUDA work at all reads the same way (a marked interval that ends when cupmon's callbacks
// run again; no records lost); a takeover while no cupmon buffer is inside CUPTI (an idle
// application) is not seen; the end of the other client's session cannot be seen, so the
// callbacks are taken back after `reclaim_ms` (0: never).
//
// Control thread only (the flush timer's handler); plain data, no locks.
class CallbackWatch {
 public:
  enum class Action {
    kNone,
    kGapBegins,  // write GAP_BEGIN, warn once
    kGapEnds,    // cupmon's callbacks ran again by themselves: write GAP_END
    kReclaim,    // register cupmon's callbacks and kinds again, then call Reclaimed()
  };

  explicit CallbackWatch(uint32_t reclaim_ms) : reclaim_ms_(reclaim_ms) {}

  // After each periodic non-forced flush. `callback_calls`: request + completed callback calls so
  // far (monotonic); `in_flight`: cupmon's buffers handed to CUPTI and not back yet; `grew`: a
  // buffer inside CUPTI holds more records than at the previous tick.
  Action Tick(uint64_t callback_calls, uint64_t in_flight, bool grew, int64_t now_ms);
  // After a reclaim: the gap ends; buffers still out are counted as stranded.
  void Reclaimed(uint64_t in_flight);

  bool in_gap() const { return in_gap_; }
  uint32_t gaps() const { return gaps_; }
  uint64_t stranded() const { return stranded_; }
  int64_t gap_start_ms() const { return gap_start_ms_; }

 private:
  uint32_t reclaim_ms_;
  bool have_last_ = false;
  uint64_t last_calls_ = 0;
  uint64_t last_live_ = 0;
  uint64_t stranded_ = 0;
  bool in_gap_ = false;
  int64_t gap_start_ms_ = 0;
  uint32_t gaps_ = 0;
};

// How much of a zeroed buffer has been written, to `kWindow` bytes: the end of the last window
// of kWindow bytes holding a non-zero byte, found by bisection (records are written back to back
// from the front, and each record starts with its non-zero kind, so every window inside the
// written part holds a non-zero word). Reads race with CUPTI's writes (volatile loads); an
// estimate.
inline constexpr size_t kFillWindowBytes = 1024;
size_t FilledPrefixBytes(const uint8_t* buffer, size_t size) noexcept;

}  // namespace cupmon
