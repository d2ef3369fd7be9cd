// ClockDomainWatch: notices that CUPTI's clock moved to another domain (another client's timestamp
// callback) and writes a calibration sample soon after, so that the decoder can map the new
// domain. Control thread.
#pragma once

#include "cupmon.pb.h"
#include "cupmon/base/thread_checker.h"
#include "cupmon/monitor/cupti_api.h"
#include "cupmon/monitor/monitor_clock.h"
#include "writer_queue.h"

namespace cupmon {

// Threading: control thread only (checked).
class ClockDomainWatch {
 public:
  // `start` is the sample the recording header carries; `control_thread` the control thread's
  // check (ControlLoop's).
  ClockDomainWatch(CuptiApi& cupti, MonitorClock& clock, WriterQueue& queue,
                   const pb::CalibrationSample& start, const ThreadChecker& control_thread)
      : cupti_(cupti), clock_(clock), queue_(queue), thread_(control_thread), last_(start) {}
  ClockDomainWatch(const ClockDomainWatch&) = delete;
  ClockDomainWatch& operator=(const ClockDomainWatch&) = delete;

  // At each flush tick, before the flush (so that a sample precedes the records it completes in
  // the stream): writes a sample when CUPTI time left the line the last samples predict.
  void Check();
  // A sample written by someone else (the stats tick).
  void NoteWritten(const pb::CalibrationSample& s);

 private:
  CuptiApi& cupti_;
  MonitorClock& clock_;
  WriterQueue& queue_;

  const ThreadChecker& thread_;  // the control thread (ControlLoop binds it)
  // The last two samples written.
  pb::CalibrationSample last_, prev_;
  int written_ = 1;
};

}  // namespace cupmon
