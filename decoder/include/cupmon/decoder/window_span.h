// WindowSpan: a trace window, or a gap in CUPTI's callbacks, as the recording's markers place it.
#pragma once

#include <cstdint>
#include <string>

namespace cupmon::decoder {

// A trace window (or a gap in CUPTI's callbacks) as the recording's markers place it.
struct WindowSpan {
  uint32_t id = 0;
  uint64_t begin = 0, end = 0;  // CUPTI ns; end 0 while open or when the END marker is missing
  std::string source, note;  // note: the END marker's ("duration", "closed", "stop")
  std::string begin_note;     // the BEGIN marker's (the monitor's request-to-enabled latency probe)
  // The smallest correlation id among the API records that start inside the window, 0 while
  // none has been read. CUPTI hands out correlation ids in call order, so a GPU record inside the
  // window with a smaller id was launched before the window opened.
  uint32_t first_api_correlation = 0;
  uint64_t launched_before = 0;  // GPU rows marked Row::api.before_window in it
  // TRIGGER_AUTO (CUPMON_AUTO_WINDOW): the slow step that opened it, from the BEGIN marker.
  uint64_t trigger_step = 0, trigger_step_ns = 0, trigger_median_ns = 0;
  double trigger_factor = 0;
  std::string trigger_by;  // what trigger_step_ns measures: empty the step time, else "work", ...
};

// Why an automatic window opened ("step 2000 took 3.0000ms, 3.00x the median 1.0000ms
// (threshold 1.5x)"; under CUPMON_AUTO_WINDOW_BY=own "step 2000: own time (work + host gap)
// 3.0000ms, ..."); empty for other windows.
std::string AutoTriggerText(const WindowSpan& w);

}  // namespace cupmon::decoder
