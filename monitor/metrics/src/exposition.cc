// Renders a MetricsSnapshot as Prometheus text exposition format 0.0.4 (what /metrics serves).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>

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

void Scalar(std::string& out, std::string_view name, std::string_view type, std::string_view help,
            uint64_t value) {
  Family(out, name, type, help);
  Sample(out, name, "", std::to_string(value));
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

std::string RenderExposition(const MetricsSnapshot& s) {
  std::string out;
  out.reserve(4096 + 96 * (s.device_busy.size() + s.stream_busy.size()));

  Family(out, "cupmon_info", "gauge",
         "Always 1; labels carry the monitor version, output directory and host name.");
  std::string info = "version=\"" + EscapeLabelValue(s.version) + "\",output_dir=\"" +
                     EscapeLabelValue(s.output_dir) + "\"";
  if (!s.hostname.empty()) info += ",Hostname=\"" + EscapeLabelValue(s.hostname) + "\"";
  Sample(out, "cupmon_info", info, "1");

  Scalar(out, "cupmon_kernel_records_total", "counter", "Kernel activity records received from CUPTI.",
         s.kernel_records);
  Scalar(out, "cupmon_memcpy_records_total", "counter", "Memcpy activity records received from CUPTI.",
         s.memcpy_records);
  Scalar(out, "cupmon_memset_records_total", "counter", "Memset activity records received from CUPTI.",
         s.memset_records);

  // Sorted and merged so that each series appears once and scrapes diff cleanly.
  std::map<uint32_t, uint64_t> devices;
  for (const DeviceBusy& d : s.device_busy) devices[d.device] += d.busy_ns;
  Family(out, "cupmon_gpu_busy_seconds_total", "counter",
         "Time a device had at least one kernel, memcpy or memset running, from activity records.");
  for (const auto& [device, ns] : devices) {
    Sample(out, "cupmon_gpu_busy_seconds_total", GpuLabels(s, device, ""), FormatNanosecondsAsSeconds(ns));
  }
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> streams;
  for (const StreamBusy& st : s.stream_busy) streams[{st.device, st.stream}] += st.busy_ns;
  Family(out, "cupmon_stream_busy_seconds_total", "counter",
         "Time a stream had a kernel, memcpy or memset running, from activity records.");
  for (const auto& [key, ns] : streams) {
    Sample(out, "cupmon_stream_busy_seconds_total",
           GpuLabels(s, key.first, "stream=\"" + std::to_string(key.second) + "\""),
           FormatNanosecondsAsSeconds(ns));
  }

  Scalar(out, "cupmon_raw_bytes_total", "counter", "Activity record bytes before encoding.", s.raw_bytes);
  Scalar(out, "cupmon_compressed_bytes_total", "counter",
         "Bytes written after encoding and compression.", s.compressed_bytes);
  Scalar(out, "cupmon_dropped_records_total", "counter", "Records CUPTI reported as dropped.",
         s.dropped_records);
  Scalar(out, "cupmon_pool_exhausted_total", "counter",
         "Buffer requests refused because the buffer pool was exhausted.", s.pool_exhausted);
  Scalar(out, "cupmon_windows_opened_total", "counter", "Trace windows opened.", s.windows_opened);
  Scalar(out, "cupmon_write_errors_total", "counter", "Failed writes of recording files.", s.write_errors);
  Scalar(out, "cupmon_write_error", "gauge", "1 while the most recent write failed, else 0.",
         s.last_write_failed ? 1 : 0);
  Scalar(out, "cupmon_files", "gauge", "Recording files on disk after retention.", s.files);
  Scalar(out, "cupmon_disk_bytes", "gauge", "Total size of the recording files on disk.", s.disk_bytes);
  return out;
}

}  // namespace cupmon::metrics
