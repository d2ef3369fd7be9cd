// MonitorMetrics: the metrics snapshot of a monitor (monitor_metrics.h).
#include "monitor_metrics.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "0.0.0"
#endif

namespace cupmon {

metrics::MetricsSnapshot MonitorMetrics::Snapshot() {
  const PipelineSnapshot snap = pipeline_.Snapshot();
  metrics::MetricsSnapshot m;
  m.version = CUPMON_VERSION_STRING;
  m.output_dir = facts_.config.output_dir;
  // The counters as the status reply and the stats chunks have them: the writer's, plus every
  // part's (the pool, the windows, the atomics).
  pb::Stats s = snap.stats;
  fill_stats_(&s);
  metrics::CopyCounters(s, &m);
  m.last_write_failed = !snap.last_write_error.empty();
  m.device_busy = snap.device_busy;
  m.stream_busy = snap.stream_busy;
  m.steps = snap.steps;
  m.files = snap.files;
  m.disk_bytes = snap.disk_bytes;
  m.cupti_delivery_lag_ns = snap.cupti_delivery_lag_ns;
  m.gpu_uuids = snap.gpu_uuids;  // dcgm-exporter's UUID label, once the devices are known
  return m;
}

}  // namespace cupmon
