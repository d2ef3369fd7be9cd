// ClockDomainWatch: a calibration sample when CUPTI's clock leaves its line (clock_domain_watch.h).
#include "clock_domain_watch.h"

#include <algorithm>
#include <cmath>

#include "cupmon/format/recording_writer.h"
#include "session_facts.h"

namespace cupmon {

void ClockDomainWatch::NoteWritten(const pb::CalibrationSample& s) {
  CUPMON_DCHECK_THREAD(thread_);
  prev_ = last_;
  last_ = s;
  written_ = std::min(written_ + 1, 2);
}

void ClockDomainWatch::Check() {
  CUPMON_DCHECK_THREAD(thread_);
  // Another CUPTI client's timestamp callback (Kineto registers one at each profiler session; on
  // x86-64 it returns TSC ticks) moves CUPTI's records and cuptiGetTimestamp() to its clock for the
  // rest of the process. The decoder maps each clock domain with its own samples
  // (decoder/.../clock_map.h), so a domain needs samples soon after it begins. One CUPTI and two
  // CLOCK_REALTIME readings per tick: the sample is written when CUPTI time is more than 1 ms away
  // from where the last written samples predict it (their rate when the last two lie in one
  // domain, else one CUPTI unit per ns). A TSC domain thus gets two samples in two ticks, then
  // only the periodic ones.
  const pb::CalibrationSample now = TakeCalibrationSample(cupti_, clock_);
  const auto& a = last_;
  double rate = 1.0;
  if (written_ == 2) {
    const double dc = static_cast<double>(a.cupti_ns()) - static_cast<double>(prev_.cupti_ns());
    const double dw = static_cast<double>(a.realtime_ns() - prev_.realtime_ns());
    if (dw >= 1e8 && dc > 0 && dc / dw >= 1.0 / 128 && dc / dw <= 128) rate = dc / dw;
  }
  const double predicted = static_cast<double>(a.cupti_ns()) +
                           rate * static_cast<double>(now.realtime_ns() - a.realtime_ns());
  if (std::fabs(static_cast<double>(now.cupti_ns()) - predicted) <= 1e6) return;
  NoteWritten(now);
  pb::Calibration cal;
  *cal.add_samples() = now;
  PostToWriter(queue_, [cal = std::move(cal)](RecordingWriter& w) { w.WriteCalibration(cal); });
}

}  // namespace cupmon
