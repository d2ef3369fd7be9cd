// Renders MetricsSnapshots as Prometheus text exposition format 0.0.4: one process's (its own
// /metrics) or a node's (cupmonctl serve), and converts them to and from the status reply's view.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cupmon/metrics/metrics_server.h"

namespace cupmon::metrics {
namespace {

// HELP text escapes backslash and newline only (quotes stay as they are), per the format spec.
std::string EscapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  out += EscapeHelp(help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

void Sample(std::string& out, std::string_view name, std::string_view labels, std::string_view value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

// The labels a device's series share with dcgm-exporter's: `gpu`, then `UUID` and `Hostname` where
// known. `extra` (such as `stream="7"`) goes after `gpu`.
std::string GpuLabels(const MetricsSnapshot& s, uint32_t device, std::string_view extra) {
  std::string out = "gpu=\"" + std::to_string(device) + "\"";
  if (!extra.empty()) {
    out += ',';
    out += extra;
  }
  if (auto it = s.gpu_uuids.find(device); it != s.gpu_uuids.end() && !it->second.empty())
    out += ",UUID=\"" + EscapeLabelValue(FormatGpuUuid(it->second)) + "\"";
  if (!s.hostname.empty()) out += ",Hostname=\"" + EscapeLabelValue(s.hostname) + "\"";
  return out;
}

// The counter families: the PROM rows of the counter list, in its order.
struct CounterFamily {
  std::string_view name;
  std::string_view help;
  uint64_t MetricsSnapshot::*field;
};
#define CUPMON_COUNTER_FAMILY(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_PROM_##prom({prom_name, help, &MetricsSnapshot::name}, )
constexpr CounterFamily kCounterFamilies[] = {CUPMON_COUNTERS(CUPMON_COUNTER_FAMILY)};
#undef CUPMON_COUNTER_FAMILY

}  // namespace

std::string FormatGpuUuid(std::string_view raw) {
  if (raw.size() != 16) return std::string(raw);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (size_t i = 0; i < raw.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    const auto b = static_cast<unsigned char>(raw[i]);
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string FormatNanosecondsAsSeconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%llu.%09llu", static_cast<unsigned long long>(ns / 1'000'000'000ULL),
                static_cast<unsigned long long>(ns % 1'000'000'000ULL));
  return buf;
}

std::string RenderExposition(const MetricsSnapshot& snapshot) {
  return RenderExposition(std::vector<LabelledSnapshot>{{{}, snapshot}});
}

std::string RenderExposition(const std::vector<LabelledSnapshot>& processes) {
  std::string out;
  size_t series = 0;
  for (const LabelledSnapshot& p : processes)
    series += p.snapshot.device_busy.size() + p.snapshot.stream_busy.size();
  out.reserve(processes.size() * 4096 + 160 * series);
  // `pid="1",rank="0",job="7"` for each process, "" for a single process's own endpoint.
  std::vector<std::string> own(processes.size());
  for (size_t i = 0; i < processes.size(); ++i) {
    for (const auto& [name, value] : processes[i].labels) {
      if (!own[i].empty()) own[i] += ',';
      own[i] += name + "=\"" + EscapeLabelValue(value) + "\"";
    }
  }
  const auto joined = [](const std::string& a, const std::string& b) {
    return a.empty() ? b : b.empty() ? a : a + "," + b;
  };
  const auto scalar = [&](std::string_view name, std::string_view type, std::string_view help,
                          uint64_t MetricsSnapshot::*field) {
    Family(out, name, type, help);
    for (size_t i = 0; i < processes.size(); ++i)
      Sample(out, name, own[i], std::to_string(processes[i].snapshot.*field));
  };

  Family(out, "cupmon_info", "gauge",
         "Always 1; labels carry the monitor version, output directory and host name.");
  for (size_t i = 0; i < processes.size(); ++i) {
    const MetricsSnapshot& s = processes[i].snapshot;
    std::string info = "version=\"" + EscapeLabelValue(s.version) + "\",output_dir=\"" +
                       EscapeLabelValue(s.output_dir) + "\"";
    if (!s.hostname.empty()) info += ",Hostname=\"" + EscapeLabelValue(s.hostname) + "\"";
    Sample(out, "cupmon_info", joined(own[i], info), "1");
  }

  for (const CounterFamily& f : kCounterFamilies) scalar(f.name, "counter", f.help, f.field);

  // Sorted and merged so that each series appears once and scrapes diff cleanly.
  Family(out, "cupmon_gpu_busy_seconds_total", "counter",
         "Time a device had at least one kernel, memcpy or memset running, from activity records.");
  for (size_t i = 0; i < processes.size(); ++i) {
    const MetricsSnapshot& s = processes[i].snapshot;
    std::map<uint32_t, uint64_t> devices;
    for (const DeviceBusy& d : s.device_busy) devices[d.device] += d.busy_ns;
    for (const auto& [device, ns] : devices) {
      Sample(out, "cupmon_gpu_busy_seconds_total", joined(own[i], GpuLabels(s, device, "")),
             FormatNanosecondsAsSeconds(ns));
    }
  }
  Family(out, "cupmon_stream_busy_seconds_total", "counter",
         "Time a stream had a kernel, memcpy or memset running, from activity records.");
  for (size_t i = 0; i < processes.size(); ++i) {
    const MetricsSnapshot& s = processes[i].snapshot;
    std::map<std::pair<uint32_t, uint32_t>, uint64_t> streams;
    for (const StreamBusy& st : s.stream_busy) streams[{st.device, st.stream}] += st.busy_ns;
    for (const auto& [key, ns] : streams) {
      Sample(
          out, "cupmon_stream_busy_seconds_total",
          joined(own[i], GpuLabels(s, key.first, "stream=\"" + std::to_string(key.second) + "\"")),
          FormatNanosecondsAsSeconds(ns));
    }
  }

  // The writer's per-step sums (docs/CONTROL.md, "Per-step figures"); only for the processes that
  // sum steps, so that a process that does not is never shown as zeros.
  const auto step_family = [&](std::string_view name, std::string_view help, bool seconds,
                               uint64_t StepTotals::*field) {
    bool any = false;
    for (const LabelledSnapshot& p : processes) any = any || p.snapshot.steps.on;
    if (!any) return;
    Family(out, name, "counter", help);
    for (size_t i = 0; i < processes.size(); ++i) {
      const StepTotals& t = processes[i].snapshot.steps;
      if (!t.on) continue;
      Sample(out, name, own[i],
             seconds ? FormatNanosecondsAsSeconds(t.*field) : std::to_string(t.*field));
    }
  };
  step_family("cupmon_steps_total", "Steps the writer summed (from one step's first kernel to the next's).",
              false, &StepTotals::steps);
  step_family("cupmon_step_seconds_total", "Time of the steps summed.", true, &StepTotals::step_ns);
  step_family("cupmon_step_work_seconds_total",
              "GPU time of the steps' kernels, memcpys and memsets other than collectives (union).",
              true, &StepTotals::work_ns);
  step_family("cupmon_step_collective_seconds_total",
              "GPU time of the steps' collective (NCCL) kernels (union).", true,
              &StepTotals::collective_ns);
  step_family("cupmon_step_host_gap_seconds_total",
              "GPU idle before each step's first collective with nothing in flight: launched late.",
              true, &StepTotals::host_gap_ns);

  Family(out, "cupmon_write_error", "gauge", "1 while the most recent write failed, else 0.");
  for (size_t i = 0; i < processes.size(); ++i)
    Sample(out, "cupmon_write_error", own[i], processes[i].snapshot.last_write_failed ? "1" : "0");
  scalar("cupmon_files", "gauge", "Recording files on disk after retention.",
         &MetricsSnapshot::files);
  scalar("cupmon_disk_bytes", "gauge", "Total size of the recording files on disk.",
         &MetricsSnapshot::disk_bytes);
  Family(out, "cupmon_cupti_delivery_lag_seconds", "gauge",
         "How long after its newest GPU record ended CUPTI completed the last buffer.");
  for (size_t i = 0; i < processes.size(); ++i)
    Sample(out, "cupmon_cupti_delivery_lag_seconds", own[i],
           FormatNanosecondsAsSeconds(processes[i].snapshot.cupti_delivery_lag_ns));
  return out;
}

pb::MetricsView ToMetricsView(const MetricsSnapshot& s) {
  pb::MetricsView v;
  for (const DeviceBusy& d : s.device_busy) {
    auto* b = v.add_device_busy();
    b->set_device(d.device);
    b->set_busy_ns(d.busy_ns);
  }
  for (const StreamBusy& st : s.stream_busy) {
    auto* b = v.add_stream_busy();
    b->set_device(st.device);
    b->set_stream(st.stream);
    b->set_busy_ns(st.busy_ns);
  }
  for (const auto& [device, uuid] : s.gpu_uuids) (*v.mutable_gpu_uuids())[device] = uuid;
  v.set_last_write_failed(s.last_write_failed);
  v.set_files(s.files);
  v.set_disk_bytes(s.disk_bytes);
  v.set_cupti_delivery_lag_ns(s.cupti_delivery_lag_ns);
  if (s.steps.on) {
    pb::MetricsView::StepTotals* t = v.mutable_steps();
    t->set_steps(s.steps.steps);
    t->set_step_ns(s.steps.step_ns);
    t->set_work_ns(s.steps.work_ns);
    t->set_collective_ns(s.steps.collective_ns);
    t->set_host_gap_ns(s.steps.host_gap_ns);
  }
#define CUPMON_TO_VIEW(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_PROM_##prom(v.set_##name(s.name);)
  CUPMON_COUNTERS(CUPMON_TO_VIEW)
#undef CUPMON_TO_VIEW
  return v;
}

void CopyCounters(const pb::Stats& stats, MetricsSnapshot* snapshot) {
#define CUPMON_FROM_STATS(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_PROM_##prom(snapshot->name = stats.name();)
  CUPMON_COUNTERS(CUPMON_FROM_STATS)
#undef CUPMON_FROM_STATS
}

MetricsSnapshot FromMetricsView(const pb::MetricsView& v) {
  MetricsSnapshot s;
  for (const auto& b : v.device_busy()) s.device_busy.push_back({b.device(), b.busy_ns()});
  for (const auto& b : v.stream_busy())
    s.stream_busy.push_back({b.device(), b.stream(), b.busy_ns()});
  for (const auto& [device, uuid] : v.gpu_uuids()) s.gpu_uuids[device] = uuid;
  s.last_write_failed = v.last_write_failed();
  s.files = v.files();
  s.disk_bytes = v.disk_bytes();
  s.cupti_delivery_lag_ns = v.cupti_delivery_lag_ns();
  if (v.has_steps()) {
    const pb::MetricsView::StepTotals& t = v.steps();
    s.steps = {t.steps(), t.step_ns(), t.work_ns(), t.collective_ns(), t.host_gap_ns(), true};
  }
#define CUPMON_FROM_VIEW(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_PROM_##prom(s.name = v.name();)
  CUPMON_COUNTERS(CUPMON_FROM_VIEW)
#undef CUPMON_FROM_VIEW
  return s;
}

}  // namespace cupmon::metrics
