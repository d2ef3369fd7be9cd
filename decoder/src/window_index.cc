// WindowIndex: windows and gaps from the recording's markers (window_index.h).
#include "window_index.h"

#include <algorithm>

namespace cupmon::decoder {

void WindowIndex::OnMarker(const pb::WindowMarker& m) {
  const bool gap = m.edge() == pb::WindowMarker::GAP_BEGIN || m.edge() == pb::WindowMarker::GAP_END;
  const bool behind =
      m.edge() == pb::WindowMarker::BEHIND_BEGIN || m.edge() == pb::WindowMarker::BEHIND_END;
  if (gap || behind) {
    WindowSpan& g = (gap ? gaps_ : behind_)[m.window_id()];
    g.id = m.window_id();
    if (m.edge() == pb::WindowMarker::GAP_BEGIN || m.edge() == pb::WindowMarker::BEHIND_BEGIN) {
      g.begin = m.cupti_ns();
      g.note = m.note() + (g.note.empty() ? "" : " / " + g.note);
    } else {
      g.end = m.cupti_ns();
      g.note += (g.note.empty() ? "" : " / ") + m.note();
    }
    return;
  }
  WindowSpan& w = windows_[m.window_id()];
  w.id = m.window_id();
  changed_ = true;
  if (m.edge() == pb::WindowMarker::BEGIN) {
    w.begin = m.cupti_ns();
    w.source = pb::TriggerSource_Name(m.source());
    w.begin_note = m.note();
    w.trigger_step = m.trigger_step();
    w.trigger_step_ns = m.trigger_step_ns();
    w.trigger_median_ns = m.trigger_median_ns();
    w.trigger_factor = m.trigger_factor();
    w.trigger_by = m.trigger_by();
  } else if (m.edge() == pb::WindowMarker::END) {
    w.end = m.cupti_ns();
    w.note = m.note();
  }
}

WindowSpan* WindowIndex::At(uint64_t t) {
  const auto holds = [t](const WindowSpan& w) {
    return w.begin && t >= w.begin && (w.end == 0 || w.end < w.begin || t <= w.end);
  };
  if (!changed_) {
    if (last_ && holds(*last_)) return last_;
    if (t >= gap_lo_ && t <= gap_hi_) return nullptr;  // between the same two windows as before
  } else {
    by_begin_.clear();
    for (auto& [id, w] : windows_)
      if (w.begin) by_begin_.push_back(&w);
    std::sort(by_begin_.begin(), by_begin_.end(),
              [](const WindowSpan* a, const WindowSpan* b) { return a->begin < b->begin; });
    changed_ = false;
    gap_lo_ = 1;  // the gap was between the old windows
    gap_hi_ = 0;
  }
  // The last window that begins at or before t (windows do not overlap).
  auto it = std::upper_bound(by_begin_.begin(), by_begin_.end(), t,
                             [](uint64_t v, const WindowSpan* w) { return v < w->begin; });
  if (it == by_begin_.begin() || !holds(**(it - 1))) {
    // Every time after the window before t (which ended before t) and before the next window's
    // begin finds the same two windows here, so the same answer: remember the gap. Most GPU rows
    // without an API record lie outside every window.
    gap_lo_ = it == by_begin_.begin() ? 0 : (*(it - 1))->end + 1;
    gap_hi_ = it == by_begin_.end() ? UINT64_MAX : (*it)->begin - 1;
    return nullptr;
  }
  return last_ = *(it - 1);
}

}  // namespace cupmon::decoder
