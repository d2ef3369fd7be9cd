// `cupmon-decode report`: one self-contained HTML page (inline SVG drawn here, no script or
// network fetch) with the recording header, step times, busy time per device, device memory in
// use (when the recording has MEMORY2 records), top GPU activities, windows, drops and integrity,
// and per-rank rows; for several ranks of a job with collectives, `job`'s verdicts and ranks. The
// ranks are read by ReadRank (html_report_read.cc) into RankPages (html_report_page.h), drawn
// here.
#include "commands/html_report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include "cupmon/base/check.h"
#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/timeline.h"
#include "commands/html_job_section.h"
#include "commands/html_report_page.h"
#include "commands/html_text.h"
#include "commands/rank_pass.h"
#include "duration_stat.h"
#include "job/job_analysis.h"
#include "job/job_merge.h"
#include "job/rank_reading.h"
#include "job/rank_table.h"
#include "memory_room.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

using html::Busy;
using html::RankPage;
using html::ReadRank;
using html::Stat;
using html::WindowRow;

// Pixel columns of the plots; the step chart keeps min, median and max per column.
constexpr int kPlotWidth = 1000, kLeft = 90, kRight = 20;
constexpr size_t kTopActivities = 50, kSlowListed = 100;
// More slow steps than this are counted but not each drawn (a pathological recording).
constexpr size_t kSlowDrawn = 20000;


// "6.0 MiB", for a chart's label (FormatByteCount gives the exact count too).
std::string ShortBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) v /= 1024, ++u;
  return (u ? Fixed(v, 1) : std::to_string(bytes)) + " " + kUnits[u];
}

uint64_t Percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

std::string DrillCommand(const std::vector<std::string>& paths, const RankPage& r, bool merged,
                         const Step& s) {
  std::string cmd = "cupmon-decode gpu-trace";
  for (const auto& p : paths) cmd += " " + p;
  if (merged) cmd += " --pid " + std::to_string(r.rank->recording.header.pid());
  return cmd + " --from " + UtcTime(s.drill_from, 9) + " --to " + UtcTime(s.drill_to, 9);
}

double X(const RankPage& r, int64_t t) {
  const double span = static_cast<double>(std::max<int64_t>(r.t1 - r.t0, 1));
  return kLeft + kPlotWidth * std::clamp(static_cast<double>(t - r.t0) / span, 0.0, 1.0);
}

void TimeAxis(std::ostream& o, const RankPage& r, int y) {
  o << "<line class=\"axis\" x1=\"" << kLeft << "\" y1=\"" << y << "\" x2=\"" << kLeft + kPlotWidth
    << "\" y2=\"" << y << "\"/>";
  for (int k = 0; k <= 4; ++k) {
    const int64_t t = r.t0 + (r.t1 - r.t0) * k / 4;
    o << "<text class=\"tick\" x=\"" << Fixed(X(r, t), 1) << "\" y=\"" << y + 14
      << "\" text-anchor=\"" << (k == 0 ? "start" : k == 4 ? "end" : "middle") << "\">"
      << (k == 0 ? Esc(UtcTime(t, 3)) : "+" + Esc(Dur(static_cast<uint64_t>(t - r.t0))))
      << "</text>";
  }
}

// Step durations over time: per pixel column the min..max range and the median, and every slow
// step as its own mark (with its number and drill-down range in the tooltip).
void StepChart(std::ostream& o, const RankPage& r, int rank_index) {
  const auto& steps = r.steps.steps;
  constexpr int kHeight = 240, kTop = 10, kPlotH = 200;
  // One very slow step (the first, warming up) would flatten all others: the scale stops at
  // twice the 99th percentile and taller steps are drawn at its top edge (their tooltips say).
  std::vector<uint64_t> sorted;
  sorted.reserve(steps.size());
  for (const Step& s : steps) sorted.push_back(s.duration());
  std::sort(sorted.begin(), sorted.end());
  uint64_t ymax = std::max<uint64_t>(std::min(sorted.back(), 2 * Percentile(sorted, 0.99)), 1);
  ymax += ymax / 20;
  const auto Y = [&](uint64_t d) {
    const double f = static_cast<double>(d) / static_cast<double>(ymax);
    return kTop + kPlotH - kPlotH * std::min(1.0, f);
  };
  o << "<svg class=\"chart steps-chart\" id=\"rank" << rank_index << "-steps-chart\" width=\""
    << kLeft + kPlotWidth + kRight << "\" height=\"" << kHeight << "\" data-steps=\""
    << steps.size() << "\" data-slow=\"" << r.slow.size() << "\" data-from-ns=\"" << r.t0
    << "\" data-to-ns=\"" << r.t1 << "\" role=\"img\">";
  for (int k = 0; k <= 4; ++k) {
    const uint64_t d = ymax * static_cast<uint64_t>(k) / 4;
    o << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kLeft + kPlotWidth << "\" y1=\""
      << Fixed(Y(d), 1) << "\" y2=\"" << Fixed(Y(d), 1) << "\"/><text class=\"tick\" x=\""
      << kLeft - 4 << "\" y=\"" << Fixed(Y(d) + 4, 1) << "\" text-anchor=\"end\">" << Esc(Dur(d))
      << "</text>";
  }
  // Steps by pixel column (sorted: a calibration that steps back can put a step's wall-clock
  // start before its predecessor's).
  std::vector<std::pair<int, uint64_t>> by_column;
  by_column.reserve(steps.size());
  for (const Step& s : steps)
    by_column.emplace_back(std::min(static_cast<int>(X(r, s.wall_start)) - kLeft, kPlotWidth - 1),
                           s.duration());
  std::sort(by_column.begin(), by_column.end());
  std::string median_path;
  size_t columns = 0;
  std::vector<uint64_t> col;
  for (size_t i = 0; i < by_column.size();) {
    const int c = by_column[i].first;
    col.clear();
    size_t j = i;
    for (; j < by_column.size() && by_column[j].first == c; ++j) col.push_back(by_column[j].second);
    auto mid = col.begin() + static_cast<ptrdiff_t>(col.size() / 2);
    std::nth_element(col.begin(), mid, col.end());
    const uint64_t median = *mid;
    const auto [lo, hi] = std::minmax_element(col.begin(), col.end());
    const double x = kLeft + c + 0.5;
    if (*hi > *lo)
      o << "<line class=\"range\" x1=\"" << Fixed(x, 1) << "\" x2=\"" << Fixed(x, 1) << "\" y1=\""
        << Fixed(Y(*lo), 1) << "\" y2=\"" << Fixed(Y(*hi), 1) << "\"/>";
    median_path += (median_path.empty() ? "M" : " L") + Fixed(x, 1) + " " + Fixed(Y(median), 1);
    ++columns;
    i = j;
  }
  o << "<path class=\"median\" d=\"" << median_path << "\" data-columns=\"" << columns << "\"/>";
  for (size_t k = 0; k < r.slow.size() && k < kSlowDrawn; ++k) {
    const Step& s = steps[r.slow[k]];
    o << "<circle class=\"slow\" data-step=\"" << s.number << "\" cx=\""
      << Fixed(X(r, s.wall_start), 1) << "\" cy=\"" << Fixed(Y(s.duration()), 1)
      << "\" r=\"3.5\"><title>step " << s.number << ": " << Esc(Dur(s.duration())) << ", "
      << Fixed(static_cast<double>(s.duration()) / static_cast<double>(r.medians[r.slow[k]]), 1)
      << "x the rolling median; --from " << UtcTime(s.drill_from, 9) << " --to "
      << UtcTime(s.drill_to, 9) << "</title></circle>";
  }
  TimeAxis(o, r, kTop + kPlotH);
  o << "</svg>\n";
  if (sorted.back() > ymax)
    o << "<p class=\"note\">Steps longer than " << Esc(Dur(ymax)) << " (the longest: "
      << Esc(Dur(sorted.back())) << ") are drawn at the chart's top edge.</p>\n";
}

// Busy % per device over time, one strip per device, from the timeline's buckets.
void BusyChart(std::ostream& o, const RankPage& r, int rank_index) {
  constexpr int kStrip = 46, kGap = 8, kTop = 6;
  const int height = kTop + static_cast<int>(r.busy.size()) * (kStrip + kGap) + 20;
  o << "<svg class=\"chart busy-chart\" id=\"rank" << rank_index << "-busy-chart\" width=\""
    << kLeft + kPlotWidth + kRight << "\" height=\"" << height << "\" data-bucket-ns=\""
    << r.bucket_ns << "\" data-from-ns=\"" << r.t0 << "\" data-to-ns=\"" << r.t1
    << "\" role=\"img\">";
  int row = 0;
  for (const auto& [device, busy] : r.busy) {
    const int top = kTop + row++ * (kStrip + kGap), base = top + kStrip;
    // Of the rank's own span (merged ranks share a wider axis).
    const int64_t span = r.steps.last_wall - r.steps.first_wall;
    const double pct =
        span > 0 ? 100.0 * static_cast<double>(busy.busy_ns) / static_cast<double>(span) : 0.0;
    o << "<g class=\"device\" data-device=\"" << device << "\" data-buckets=\""
      << busy.buckets.size() << "\" data-busy-ns=\"" << busy.busy_ns << "\">";
    o << "<rect class=\"strip\" x=\"" << kLeft << "\" y=\"" << top << "\" width=\"" << kPlotWidth
      << "\" height=\"" << kStrip << "\"/>";
    std::string d = "M" + Fixed(kLeft, 1) + " " + std::to_string(base);
    for (const TimelineBucket& b : busy.buckets) {
      const double f =
          std::min(1.0, static_cast<double>(b.busy_ns) / static_cast<double>(b.length));
      const double y = base - kStrip * f;
      d += " L" + Fixed(X(r, b.start), 1) + " " + Fixed(y, 1) + " L" +
           Fixed(X(r, b.start + static_cast<int64_t>(b.length)), 1) + " " + Fixed(y, 1);
    }
    d += " L" + Fixed(kLeft + kPlotWidth, 1) + " " + std::to_string(base) + " Z";
    o << "<path class=\"busy\" d=\"" << d << "\"/>";
    o << "<text class=\"tick\" x=\"" << kLeft - 4 << "\" y=\"" << top + 18
      << "\" text-anchor=\"end\">GPU " << device << "</text><text class=\"tick\" x=\"" << kLeft - 4
      << "\" y=\"" << top + 32 << "\" text-anchor=\"end\">" << Fixed(pct, 1) << "% busy</text>";
    o << "</g>";
  }
  TimeAxis(o, r, height - 20);
  o << "</svg>\n";
}

// Bytes in use per device over time, one strip per device on its own scale (0 to its peak), the
// peak marked. Per pixel column the path goes to the column's highest value and leaves at its
// last, so that a peak narrower than a pixel is still drawn and the path stays bounded.
void MemoryChart(std::ostream& o, const RankPage& r, int rank_index) {
  constexpr int kStrip = 60, kGap = 10, kTop = 6;
  const int height = kTop + static_cast<int>(r.memory.size()) * (kStrip + kGap) + 20;
  o << "<svg class=\"chart memory-chart\" id=\"rank" << rank_index << "-memory-chart\" width=\""
    << kLeft + kPlotWidth + kRight << "\" height=\"" << height << "\" data-from-ns=\"" << r.t0
    << "\" data-to-ns=\"" << r.t1 << "\" role=\"img\">";
  int row = 0;
  for (const auto& [device, m] : r.memory) {
    const int top = kTop + row++ * (kStrip + kGap), base = top + kStrip;
    const double scale = static_cast<double>(std::max<uint64_t>(m.stats.peak, 1));
    const auto Y = [&](uint64_t v) { return base - kStrip * (static_cast<double>(v) / scale); };
    o << "<g class=\"memory-device\" data-device=\"" << device << "\" data-peak-bytes=\""
      << m.stats.peak << "\" data-peak-ns=\"" << m.peak_wall << "\" data-in-use-bytes=\""
      << m.stats.in_use << "\" data-allocations=\"" << m.stats.allocations
      << "\" data-releases=\"" << m.stats.releases << "\" data-changes=\"" << m.steps.size()
      << "\">";
    o << "<rect class=\"strip\" x=\"" << kLeft << "\" y=\"" << top << "\" width=\"" << kPlotWidth
      << "\" height=\"" << kStrip << "\"/>";
    std::string d = "M" + Fixed(kLeft, 1) + " " + std::to_string(base);
    uint64_t current = 0;
    for (size_t i = 0; i < m.steps.size();) {
      const int column = std::min(static_cast<int>(X(r, m.steps[i].first)) - kLeft, kPlotWidth);
      uint64_t high = 0;
      size_t j = i;
      for (; j < m.steps.size() &&
             std::min(static_cast<int>(X(r, m.steps[j].first)) - kLeft, kPlotWidth) == column;
           ++j)
        high = std::max(high, m.steps[j].second);
      const std::string x = Fixed(kLeft + column, 1);
      d += " L" + x + " " + Fixed(Y(current), 1) + " L" + x + " " + Fixed(Y(high), 1);
      current = m.steps[j - 1].second;
      d += " L" + x + " " + Fixed(Y(current), 1);
      i = j;
    }
    d += " L" + Fixed(kLeft + kPlotWidth, 1) + " " + Fixed(Y(current), 1);
    o << "<path class=\"in-use\" d=\"" << d << "\"/>";
    o << "<circle class=\"peak\" cx=\"" << Fixed(X(r, m.peak_wall), 1) << "\" cy=\""
      << Fixed(Y(m.stats.peak), 1) << "\" r=\"3.5\"><title>GPU " << device << " peak "
      << Esc(FormatByteCount(m.stats.peak)) << " at " << UtcTime(m.peak_wall, 6)
      << "</title></circle>";
    o << "<text class=\"tick\" x=\"" << kLeft - 4 << "\" y=\"" << top + 18
      << "\" text-anchor=\"end\">GPU " << device << "</text><text class=\"tick\" x=\"" << kLeft - 4
      << "\" y=\"" << top + 32 << "\" text-anchor=\"end\">peak</text><text class=\"tick\" x=\""
      << kLeft - 4 << "\" y=\"" << top + 46 << "\" text-anchor=\"end\">"
      << Esc(ShortBytes(m.stats.peak)) << "</text>";
    o << "</g>";
  }
  TimeAxis(o, r, height - 20);
  o << "</svg>\n";
}

// The "Device memory" part of a rank's section: only when it has MEMORY2 allocations.
void MemorySection(std::ostream& o, const RankPage& r, int ri) {
  if (r.memory.empty()) return;
  o << "<h3>Device memory</h3><p>Bytes allocated and not yet released (CUPTI MEMORY2 records) per "
    << "GPU over time, each strip on its own scale; the red dot marks the peak. Only memory "
    << "allocated since the recording began is known; caching allocators (PyTorch's) allocate "
    << "from the driver rarely, so this is what they hold, not what tensors use.</p>\n";
  MemoryChart(o, r, ri);
  o << "<table class=\"memory\" id=\"rank" << ri << "-memory\"><tr><th>GPU</th><th>peak</th>"
    << "<th>peak at (UTC)</th><th>in use at the end</th><th>allocations</th><th>releases</th>"
    << "</tr>";
  for (const auto& [device, m] : r.memory)
    o << "<tr data-device=\"" << device << "\"><td class=\"n\">" << device << "</td><td class=\"n\">"
      << Esc(FormatByteCount(m.stats.peak)) << "</td><td class=\"t\">" << UtcTime(m.peak_wall, 6)
      << "</td><td class=\"n\">" << Esc(FormatByteCount(m.stats.in_use)) << "</td><td class=\"n\">"
      << m.stats.allocations << "</td><td class=\"n\">" << m.stats.releases << "</td></tr>";
  o << "</table>\n";
}

const char* kStyle =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}"
    "td,th{padding:2px 8px;border-bottom:1px solid #eee;"
    "text-align:left;vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "code{font-size:12px;word-break:break-all}.warn{color:#a40000;font-weight:bold}"
    ".chart{display:block;margin:6px 0}.chart text{font-size:11px;fill:#444}"
    ".grid{stroke:#e4e4e4}.axis{stroke:#888}.range{stroke:#9bb8d8;stroke-width:1}"
    ".median{fill:none;stroke:#1f5fa8;stroke-width:1.5}.slow{fill:#d62728;stroke:#fff}"
    ".strip{fill:#f3f3f3}.busy{fill:#2ca02c;fill-opacity:.75}dt{font-weight:bold}"
    ".in-use{fill:none;stroke:#6a3d9a;stroke-width:1.5}.peak{fill:#d62728;stroke:#fff}"
    "dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px}dd{margin:0}"
    "td.name{max-width:760px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}"
    ".note{color:#555;font-size:12px}td.t{white-space:nowrap}";

void Header(std::ostream& o, const RankPage& r) {
  const auto& h = r.rank->recording.header;
  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  o << "<dl class=\"header\">";
  char id[24];
  std::snprintf(id, sizeof id, "0x%" PRIx64, r.rank->recording.id);
  o << "<dt>Recording</dt><dd>" << id << (h.synthetic()
                                             ? " <span class=\"warn\">SYNTHETIC: written by the "
                                               "CUPTI test double, not measured on a GPU</span>"
                                             : "")
    << "</dd>";
  o << "<dt>Host</dt><dd class=\"host\">" << Esc(h.host()) << "</dd><dt>PID</dt><dd class=\"pid\">"
    << h.pid() << "</dd>";
  o << "<dt>Command</dt><dd><code>" << Esc(cmd.empty() ? "(unknown)" : cmd) << "</code></dd>";
  o << "<dt>CUPTI / CUDA</dt><dd>CUPTI API " << h.cupti_api_version() << ", driver "
    << h.cuda_driver_version() << ", runtime " << h.cuda_runtime_version() << ", cupmon "
    << Esc(h.cupmon_version()) << "</dd>";
  o << "<dt>Devices</dt><dd>";
  if (h.devices_size() == 0) o << "(none listed)";
  for (const auto& d : h.devices())
    o << "[" << d.id() << "] " << Esc(d.name()) << " (sm_" << d.cc_major() << d.cc_minor()
      << ", " << d.sm_count() << " SMs) ";
  o << "</dd><dt>Span</dt><dd>";
  if (r.steps.activities)
    o << UtcTime(r.steps.first_wall, 6) << " + "
      << Dur(static_cast<uint64_t>(r.steps.last_wall - r.steps.first_wall));
  else
    o << "no GPU activity";
  o << (r.calibrated ? " (calibrated, " + std::to_string(r.samples) + " samples)"
                     : " (no calibration: CUPTI clock taken as wall clock)")
    << "</dd>";
  if (!r.rank->recording.source_note.empty())
    o << "<dt>Source</dt><dd>" << Esc(r.rank->recording.source_note) << "</dd>";
  o << "</dl>\n";
}

void StepsSection(std::ostream& o, const RankPage& r, int ri, const StepOptions& so) {
  const auto& steps = r.steps.steps;
  o << "<h3>Step time</h3>";
  if (steps.empty()) {
    o << "<p id=\"rank" << ri << "-steps\" data-count=\"0\">No training steps found (no repeating "
      << "kernel pattern, no step annotations).</p>\n";
    return;
  }
  std::vector<uint64_t> d;
  d.reserve(steps.size());
  for (const Step& s : steps) d.push_back(s.duration());
  std::sort(d.begin(), d.end());
  o << "<p><span id=\"rank" << ri << "-steps\" data-count=\"" << steps.size() << "\">"
    << steps.size() << "</span> steps from "
    << (r.steps.source == StepSource::kAnnotation ? "step annotations" : "the kernel pattern")
    << "; median " << Dur(Percentile(d, 0.5)) << ", p90 " << Dur(Percentile(d, 0.9)) << ", p99 "
    << Dur(Percentile(d, 0.99)) << ", max " << Dur(d.back()) << ". Slow (at least "
    << Fixed(so.slow_factor, 2) << "x the median of the " << so.rolling
    << " steps before, and 50us more): <span id=\"rank" << ri << "-slow\" data-count=\""
    << r.slow.size() << "\">" << r.slow.size() << "</span>, marked in red.</p>\n";
  StepChart(o, r, ri);
}

// The slow steps, slowest excess first, each with the gpu-trace command that shows its rows.
void SlowStepsTable(std::ostream& o, const RankPage& r, int ri,
                    const std::vector<std::string>& paths, bool merged) {
  const auto& steps = r.steps.steps;
  if (r.slow.empty()) return;
  o << "<h3>Slow steps</h3><table class=\"slow-steps\" id=\"rank" << ri
    << "-slow-steps\"><tr><th>step</th>"
    << "<th>start (UTC)</th><th>duration</th><th>rolling median</th><th>ratio</th>"
    << "<th>drill down</th></tr>";
  for (size_t k = 0; k < r.slow.size() && k < kSlowListed; ++k) {
    const Step& s = steps[r.slow[k]];
    const uint64_t m = r.medians[r.slow[k]];
    o << "<tr data-step=\"" << s.number << "\" data-duration-ns=\"" << s.duration()
      << "\"><td class=\"n\">" << s.number << "</td><td class=\"t\">" << UtcTime(s.wall_start, 6)
      << "</td><td class=\"n\">" << Dur(s.duration()) << "</td><td class=\"n\">" << Dur(m)
      << "</td><td class=\"n\">"
      << Fixed(static_cast<double>(s.duration()) / static_cast<double>(m), 1)
      << "x</td><td><code>" << Esc(DrillCommand(paths, r, merged, s)) << "</code></td></tr>";
  }
  o << "</table>";
  if (r.slow.size() > kSlowListed)
    o << "<p>" << r.slow.size() - kSlowListed << " more slow steps (cupmon-decode steps lists "
      << "them all).</p>";
  if (r.slow.size() > kSlowDrawn)
    o << "<p class=\"warn\">Only the " << kSlowDrawn << " slowest of " << r.slow.size()
      << " slow steps are marked in the chart.</p>";
  o << "\n";
}

void IntegritySection(std::ostream& o, const RankPage& r, int ri) {
  const auto& c = r.counts;
  const auto& i = r.integrity;
  o << "<h3>Windows</h3>";
  if (r.windows.empty()) {
    o << "<p>No trace windows.</p>";
  } else {
    o << "<table class=\"windows\" id=\"rank" << ri << "-windows\"><tr><th>#</th><th>begin (UTC)"
      << "</th><th>duration</th><th>source</th><th>end</th><th>launched before it</th>"
      << "<th>why it opened</th></tr>";
    for (const WindowRow& w : r.windows)
      o << "<tr data-window=\"" << w.id << "\"><td class=\"n\">" << w.id << "</td><td>"
        << (w.begin_wall ? UtcTime(w.begin_wall, 6) : "(begin marker missing)")
        << "</td><td class=\"n\">" << (w.duration ? Dur(*w.duration) : "(open)") << "</td><td>"
        << Esc(w.source) << "</td><td>" << Esc(w.note) << "</td><td class=\"n\">"
        << w.launched_before << "</td><td class=\"why\">" << Esc(w.why) << "</td></tr>";
    o << "</table>";
  }
  const bool bad = i.HasWarnings() || c.HasWarnings();
  o << "<h3>Drops and integrity</h3><table class=\"integrity\" id=\"rank" << ri
    << "-integrity\" data-warnings=\"" << (bad ? 1 : 0) << "\">";
  const auto Row2 = [&](const char* name, uint64_t v, const char* key) {
    o << "<tr><td>" << name << "</td><td class=\"n" << (v ? " warn" : "") << "\" data-key=\""
      << key << "\">" << v << "</td></tr>";
  };
  Row2("records dropped by CUPTI", c.stats.dropped_records(), "dropped");
  Row2("buffer requests unmet", c.stats.pool_exhausted(), "pool_exhausted");
  Row2("records lost before disk", c.stats.lost_records(), "lost_records");
  Row2("chunks lost before disk", c.stats.chunks_lost(), "chunks_lost");
  Row2("records with unknown timestamps", c.unknown_timestamps, "unknown_timestamps");
  Row2("buffers cut short", c.buffers_stopped, "buffers_stopped");
  Row2("damaged byte ranges", i.damaged_ranges, "damaged_ranges");
  Row2("chunks missing", i.missing_chunks, "missing_chunks");
  Row2("undecodable chunks", i.undecodable_chunks, "undecodable_chunks");
  Row2("files missing", i.missing_files, "missing_files");
  Row2("late timeline activities (left out of the busy chart)", r.timeline.late, "timeline_late");
  o << "<tr><td>files, chunks</td><td class=\"n\">" << i.files << ", " << i.chunks
    << "</td></tr><tr><td>records decoded</td><td class=\"n\">" << c.records << "</td></tr>"
    << "</table>";
  if (!i.messages.empty() || !c.messages.empty()) {
    o << "<ul class=\"messages\">";
    for (const auto& m : i.messages) o << "<li>" << Esc(m) << "</li>";
    for (const auto& m : c.messages) o << "<li>" << Esc(m) << "</li>";
    o << "</ul>";
  }
  o << "\n";
}

// `shorten`: kernel names shown as `summary` shows them (ShortKernelName, " [1]", " [2]", ... on
// rows that share a short name, in table order), the full name in the cell's title.
void ActivityTable(std::ostream& o, const std::map<std::string, Stat>& all, size_t ranks,
                   bool shorten) {
  std::vector<std::pair<std::string, Stat>> rows(all.begin(), all.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
  });
  std::vector<std::string> shown;
  for (const auto& r : rows) shown.push_back(shorten ? ShortKernelName(r.first) : r.first);
  if (shorten) {
    std::unordered_map<std::string, int> sharing, numbered;
    for (const auto& n : shown) ++sharing[n];
    for (auto& n : shown)
      if (sharing[n] > 1) n += " [" + std::to_string(++numbered[n]) + "]";
  }
  uint64_t total = 0, calls = 0, kernels = 0;
  for (const auto& [name, s] : rows) {
    total += s.total;
    calls += s.calls;
    if (s.type == RowType::kKernel) kernels += s.calls;
  }
  o << "<h2>Top GPU activities" << (ranks > 1 ? " (all ranks)" : "") << "</h2>";
  o << "<p><span id=\"kernels-total\">" << kernels
    << "</span> kernels, <span id=\"gpu-rows-total\">"
    << calls << "</span> GPU activities (kernels, memcpys, memsets) in all, <span "
    << "id=\"gpu-time-total\" data-ns=\"" << total << "\">" << Dur(total) << "</span> of GPU time"
    << (rows.size() > kTopActivities
            ? "; the " + std::to_string(kTopActivities) + " with the most time of " +
                  std::to_string(rows.size()) + " names"
            : "")
    << ".</p>\n<table class=\"activities\" id=\"activities\"><tr><th>Time(%)</th><th>Time</th>"
    << "<th>Calls</th><th>Avg</th><th>Min</th><th>Max</th><th>Name</th></tr>";
  for (size_t k = 0; k < rows.size() && k < kTopActivities; ++k) {
    const auto& [name, s] = rows[k];
    const double pct =
        total ? 100.0 * static_cast<double>(s.total) / static_cast<double>(total) : 0;
    const std::string top = k == 0 ? " id=\"top-activity\"" : "";
    o << "<tr" << top << " data-ns=\"" << s.total << "\" data-calls=\"" << s.calls
      << "\"><td class=\"n\">" << Fixed(pct, 2) << "%</td><td class=\"n time\">" << Dur(s.total)
      << "</td><td class=\"n calls\">" << s.calls << "</td><td class=\"n\">"
      << (s.timed ? Dur(s.total / s.timed) : "-") << "</td><td class=\"n\">"
      << (s.timed ? Dur(s.min) : "-") << "</td><td class=\"n\">" << (s.timed ? Dur(s.max) : "-")
      << "</td><td class=\"name\" title=\"" << Esc(name) << "\">" << Esc(shown[k])
      << "</td></tr>";
  }
  if (rows.empty()) o << "<tr><td colspan=\"7\">(none)</td></tr>";
  o << "</table>\n";
}

void RanksTable(std::ostream& o, const std::vector<RankPage>& pages) {
  o << "<h2>Ranks</h2><table class=\"ranks\" id=\"ranks\"><tr><th>rank</th><th>host</th>"
    << "<th>pid</th><th>steps</th><th>slow</th><th>median step</th><th>GPU time</th>"
    << "<th>kernels</th><th>windows</th><th>integrity</th></tr>";
  for (const RankPage& r : pages) {
    std::vector<uint64_t> d;
    for (const Step& s : r.steps.steps) d.push_back(s.duration());
    std::sort(d.begin(), d.end());
    const bool bad = r.integrity.HasWarnings() || r.counts.HasWarnings();
    o << "<tr class=\"rank\" data-rank=\"" << r.rank->rank << "\" data-steps=\""
      << r.steps.steps.size() << "\" data-slow=\"" << r.slow.size() << "\" data-gpu-ns=\""
      << r.gpu_time << "\" data-kernels=\"" << r.kernels << "\"><td>" << Esc(r.rank->label)
      << "</td><td>" << Esc(r.rank->recording.header.host()) << "</td><td class=\"n\">"
      << r.rank->recording.header.pid() << "</td><td class=\"n\">" << r.steps.steps.size()
      << "</td><td class=\"n\">" << r.slow.size() << "</td><td class=\"n\">"
      << (d.empty() ? "-" : Dur(Percentile(d, 0.5))) << "</td><td class=\"n\">" << Dur(r.gpu_time)
      << "</td><td class=\"n\">" << r.kernels << "</td><td class=\"n\">" << r.windows.size();
    if (!r.missing_windows.empty()) {
      o << " <span class=\"warn missing-windows\">lacks";
      for (uint32_t id : r.missing_windows) o << " #" << id;
      o << "</span>";
    }
    o << "</td><td" << (bad ? " class=\"warn\">warnings (see its section)" : ">clean")
      << "</td></tr>";
  }
  o << "</table>\n";
}

// `job_analysis`: the job section's, null for none.
void WritePage(std::ostream& o, const std::vector<RankPage>& pages, const HtmlReportOptions& options,
               const std::vector<std::string>& paths, const job::JobAnalysis* job_analysis) {
  const bool merged = pages.size() > 1;
  std::map<std::string, Stat> all;
  for (const RankPage& r : pages)
    for (const auto& [name, s] : r.gpu) all[name].Merge(s);
  std::string where;
  for (const auto& p : paths) where += (where.empty() ? "" : " ") + p;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    << "<meta name=\"generator\" content=\"cupmon-decode report\">"
    << "<title>cupmon report: " << Esc(where) << "</title><style>" << kStyle
    << "</style></head>\n<body>\n<h1>cupmon report: " << Esc(where) << "</h1>\n<p id=\"overview\" "
    << "data-ranks=\"" << pages.size() << "\">" << pages.size() << " recording(s)"
    << (merged ? ", merged as the ranks of one job" : "") << ".";
  const TraceFilter& f = options.read.filter;
  if (f.device || f.stream || f.kernel)
    o << " <span class=\"warn\">Filtered (--device/--stream/--kernel): the activity table and busy "
      << "chart show only matching activities; steps are found in whole recordings.</span>";
  o << "</p>\n";
  if (merged) RanksTable(o, pages);
  if (job_analysis) WriteJobSection(o, *job_analysis, options, kSlowListed);
  for (size_t i = 0; i < pages.size(); ++i) {
    const RankPage& r = pages[i];
    const int ri = static_cast<int>(i);
    o << "<section class=\"rank-section\" id=\"rank" << ri << "\" data-rank=\"" << r.rank->rank
      << "\"><h2>" << (merged ? Esc(r.rank->label) : std::string("Recording")) << "</h2>\n";
    Header(o, r);
    StepsSection(o, r, ri, options.steps);
    o << "<h3>Busy time per GPU</h3>";
    if (r.busy.empty())
      o << "<p>No GPU activity.</p>";
    else
      o << "<p>The union of kernel, memcpy and memset intervals per " << Dur(r.bucket_ns)
        << " bucket (not NVML utilization).</p>\n";
    if (!r.busy.empty()) BusyChart(o, r, ri);
    MemorySection(o, r, ri);
    SlowStepsTable(o, r, ri, paths, merged);
    IntegritySection(o, r, ri);
    o << "</section>\n";
  }
  ActivityTable(o, all, pages.size(), !options.read.full_names && !options.read.filter.mangled);
  o << "</body></html>\n";
}

// The job section takes the GPU rows `job` takes: of several ranks, unfiltered, with demangled
// names (the collectives are told by them).
bool JobSectionApplies(const HtmlReportOptions& options, size_t ranks) {
  const TraceFilter& f = options.read.filter;
  return ranks > 1 && !f.device && !f.stream && !f.kernel && !f.mangled;
}

// The pages' step tables merged as `job` merges them (the slow steps kept); none without
// collectives matched across the ranks.
std::optional<job::JobAnalysis> JobOf(std::vector<RankPage>& pages, const StepOptions& steps) {
  std::vector<job::RankTable> tables;
  for (RankPage& p : pages) {
    if (!p.job_table) return std::nullopt;
    tables.push_back(std::move(*p.job_table));
    p.job_table.reset();
  }
  job::DiscardSteps discard;
  auto a = job::MergeJob(job::MemoryTables(std::move(tables)), job::OptionsFor(steps), &discard);
  CUPMON_CHECK(a.has_value());  // tables in memory cannot fail to read
  if (a->streams.empty()) return std::nullopt;
  return std::move(*a);
}

}  // namespace

Outcome RunHtmlReport(const std::vector<const Rank*>& chosen,
                      const std::vector<std::string>& paths, const HtmlReportOptions& options,
                      std::ostream& out, Diagnostics& diagnostics, bool warnings) {
  const TraceFilter& f = options.read.filter;
  if (f.timed() || options.limit) {
    diagnostics.Error(
        "report covers whole recordings: --window, --from, --to and --limit do not apply (the "
        "page's drill-down commands take them)");
    return Outcome::kUsageError;
  }
  // Each recording is read once, unless ReadRank must read it again; the progress line counts one
  // read.
  RankPass pass(chosen, 1, diagnostics);
  const bool merged = pass.merged();
  const bool job = JobSectionApplies(options, chosen.size());
  std::vector<RankPage> pages(chosen.size());
  // Several ranks are read at once (RankJobs), their pages kept and reported in rank order.
  pass.Run(
      RankJobs(chosen.size(), options.read.jobs, DecodeThreads()),
      [&](size_t i, const PassProgress& progress) {
        auto page = std::make_unique<RankPage>();
        ReadRank(*chosen[i], options, page.get(), progress, paths, job);
        return page;
      },
      [&](size_t i, std::unique_ptr<RankPage> read) {
        pages[i] = std::move(*read);
        const RankPage& p = pages[i];
        RankMessageLog log(diagnostics, pass.Who(i));
        log.ReadProblems(p.integrity, &p.counts);
        if (p.counts.stats.dropped_records())
          log.Warning("CUPTI dropped " + std::to_string(p.counts.stats.dropped_records()) +
                      " record(s)");
        if (p.timeline.late)
          log.Warning(std::to_string(p.timeline.late) +
                      " activit(ies) came after their bucket was drawn and are left out of the "
                      "busy chart; raise --reorder-rows");
        if (p.timeline.too_many_rows)
          log.Warning("the busy chart stops at " + UtcTime(p.timeline.too_many_rows_at, 3) +
                      ": activity far outside the recording's span (a damaged calibration?)");
        warnings |= p.integrity.HasWarnings() || p.counts.HasWarnings() || p.timeline.late ||
                    p.timeline.too_many_rows;
        return true;
      });
  // A window some ranks have and others lack: usually a rank the request did not reach.
  if (merged) {
    std::set<uint32_t> all;
    for (const RankPage& p : pages)
      for (const WindowRow& w : p.windows) all.insert(w.id);
    for (RankPage& p : pages) {
      for (uint32_t id : all)
        if (std::none_of(p.windows.begin(), p.windows.end(),
                         [&](const WindowRow& w) { return w.id == id; }))
          p.missing_windows.push_back(id);
      if (p.missing_windows.empty()) continue;
      std::string list;
      for (uint32_t id : p.missing_windows)
        list += (list.empty() ? "#" : ", #") + std::to_string(id);
      diagnostics.Warning(p.rank->label + " lacks window(s) " + list + " that other ranks have");
      warnings = true;
    }
  }
  // Ranks of one job on one time axis, so that their charts line up (each rank's buckets were
  // sized from its own span, which the union hardly exceeds).
  if (merged) {
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (const RankPage& p : pages)
      if (p.steps.activities || !p.memory.empty()) t0 = std::min(t0, p.t0), t1 = std::max(t1, p.t1);
    for (RankPage& p : pages)
      if ((p.steps.activities || !p.memory.empty()) && t0 < t1) p.t0 = t0, p.t1 = t1;
  }
  // -o FILE is the caller's (cupmon-decode writes it beside FILE and renames it, OutputFile).
  const std::optional<job::JobAnalysis> job_analysis = JobOf(pages, options.steps);
  WritePage(out, pages, options, paths, job_analysis ? &*job_analysis : nullptr);
  out.flush();
  if (!out) {
    diagnostics.Error(
        "writing the report failed (a full disk, or the reader of the pipe went away)");
    return Outcome::kFailed;
  }
  bool any_steps = false;
  for (const RankPage& p : pages) any_steps |= !p.steps.steps.empty();
  if (!any_steps)
    diagnostics.Note("no training steps found; the page has no step chart");
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace cupmon::decoder
