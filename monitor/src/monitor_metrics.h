// MonitorMetrics: what this process's /metrics and the status reply's metrics show, read from the
// writer's published snapshot and the counters.
#pragma once

#include <functional>

#include "cupmon.pb.h"
#include "cupmon/metrics/metrics_server.h"
#include "recording_pipeline.h"
#include "session_facts.h"

namespace cupmon {

// Threading: any thread (the metrics endpoint calls it on the control thread). Snapshots only: no
// directory listing, no stat, no lock the writer holds while writing.
class MonitorMetrics final : public metrics::MetricsSource {
 public:
  // `fill_stats` adds every part's counters to a stats message (the session's).
  MonitorMetrics(const SessionFacts& facts, RecordingPipeline& pipeline,
                 std::function<void(pb::Stats*)> fill_stats)
      : facts_(facts), pipeline_(pipeline), fill_stats_(std::move(fill_stats)) {}

  metrics::MetricsSnapshot Snapshot() override;

 private:
  const SessionFacts& facts_;
  RecordingPipeline& pipeline_;
  const std::function<void(pb::Stats*)> fill_stats_;
};

}  // namespace cupmon
