// WindowIndex: the trace builder's windows and gaps, on its (reading) thread, and which window
// holds a time.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/window_span.h"

namespace cupmon::decoder {

// Trace windows by id from their BEGIN and END markers, and gaps (another CUPTI client held
// CUPTI's callbacks) by gap number from GAP_BEGIN and GAP_END, and the intervals in which CUPTI was
// behind its own records (BEHIND_BEGIN, BEHIND_END). Markers may arrive in any order
// across files; a window's fields are whatever its markers read so far said.
class WindowIndex {
 public:
  void OnMarker(const pb::WindowMarker& marker);

  // The window whose span holds the time (CUPTI ns), or null. Windows do not overlap. Rows come
  // mostly in time order, so the last answer, and the last gap between two windows, are kept:
  // most calls return without a search.
  WindowSpan* At(uint64_t cupti_ns);

  bool empty() const { return windows_.empty(); }
  const std::map<uint32_t, WindowSpan>& windows() const { return windows_; }
  // `note` is the begin note, then " / " and the end note.
  const std::map<uint32_t, WindowSpan>& gaps() const { return gaps_; }
  // Intervals in which CUPTI was behind its own records (BEHIND_BEGIN/BEHIND_END), notes as gaps'.
  const std::map<uint32_t, WindowSpan>& behind() const { return behind_; }

 private:
  std::map<uint32_t, WindowSpan> windows_, gaps_, behind_;
  // At's index: windows by begin (map nodes never move), rebuilt after a marker.
  std::vector<WindowSpan*> by_begin_;
  bool changed_ = false;
  WindowSpan* last_ = nullptr;  // At's last answer
  // At answers nullptr for [gap_lo_, gap_hi_] until changed_ (empty: lo > hi).
  uint64_t gap_lo_ = 1, gap_hi_ = 0;
};

}  // namespace cupmon::decoder
