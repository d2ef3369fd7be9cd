// CallbackWatch: the takeover signal and the reclaim timing (see callback_watch.h).
#include "callback_watch.h"

#include <algorithm>

namespace cupmon {

CallbackWatch::Action CallbackWatch::Tick(uint64_t callback_calls, uint64_t in_flight, bool grew,
                                          int64_t now_ms) {
  // A stranded buffer that CUPTI still held comes back after a reclaim: no longer stranded.
  stranded_ = std::min(stranded_, in_flight);
  const uint64_t live = in_flight - stranded_;
  const bool silent = have_last_ && callback_calls == last_calls_;
  const bool quiet = silent && !grew;  // nothing of cupmon's moved inside CUPTI
  Action action = Action::kNone;
  if (!in_gap_) {
    if (quiet && live > 0 && last_live_ > 0) {
      in_gap_ = true;
      gap_start_ms_ = now_ms;
      ++gaps_;
      action = Action::kGapBegins;
    }
  } else if (!silent) {
    in_gap_ = false;
    action = Action::kGapEnds;
  } else if (reclaim_ms_ > 0 && now_ms - gap_start_ms_ >= static_cast<int64_t>(reclaim_ms_)) {
    action = Action::kReclaim;
  }
  have_last_ = true;
  last_calls_ = callback_calls;
  last_live_ = live;
  return action;
}

void CallbackWatch::Reclaimed(uint64_t in_flight) {
  in_gap_ = false;
  stranded_ = in_flight;
  last_live_ = 0;
}

// Deliberately racy against CUPTI's (or the test double's) writes: an estimate is enough.
__attribute__((no_sanitize("thread"))) size_t FilledPrefixBytes(const uint8_t* buffer,
                                                                size_t size) noexcept {
  // First window with nothing written, in [0, windows].
  size_t lo = 0, hi = size / kFillWindowBytes;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    // Volatile loads of memory another agent writes; uninstrumented, so TSan stays quiet.
    const auto* words = reinterpret_cast<const volatile uint64_t*>(buffer + mid * kFillWindowBytes);
    bool written = false;
    for (size_t i = 0; i < kFillWindowBytes / sizeof(uint64_t) && !written; ++i)
      written = words[i] != 0;
    if (written)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo * kFillWindowBytes;
}

}  // namespace cupmon
