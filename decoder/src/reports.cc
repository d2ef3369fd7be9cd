// The time and duration texts the commands share (reports.h).
#include "cupmon/decoder/reports.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "cupmon/decoder/window_span.h"
#include "text/printf.h"

namespace cupmon::decoder {

std::string AutoTriggerText(const WindowSpan& w) {
  if (w.trigger_step == 0 || w.trigger_median_ns == 0) return "";
  char ratio[64];
  std::snprintf(ratio, sizeof(ratio), "%.2fx the median ",
                static_cast<double>(w.trigger_step_ns) / static_cast<double>(w.trigger_median_ns));
  char threshold[64];
  std::snprintf(threshold, sizeof(threshold), " (threshold %gx)", w.trigger_factor);
  // CUPMON_AUTO_WINDOW_BY: the quantity the monitor compared, in the step it cut.
  std::string what = " took ";
  if (w.trigger_by == "own") what = ": own time (work + host gap) ";
  else if (w.trigger_by == "work") what = ": work ";
  else if (w.trigger_by == "host-gap") what = ": host gap ";
  else if (!w.trigger_by.empty()) what = ": " + w.trigger_by + " ";
  return "step " + std::to_string(w.trigger_step) + what +
         FormatDuration(static_cast<double>(w.trigger_step_ns)) + ", " + ratio +
         FormatDuration(static_cast<double>(w.trigger_median_ns)) + threshold;
}

std::string FormatDuration(double ns) {
  if (ns < 1000.0) {
    if (ns == std::floor(ns)) return Printf("%.0fns", ns);
    return Printf("%.4gns", ns);
  }
  const char* unit = "us";
  double v = ns / 1e3;
  if (v >= 1000.0) {
    v /= 1e3;
    unit = "ms";
    if (v >= 1000.0) {
      v /= 1e3;
      unit = "s";
    }
  }
  const int decimals = v < 10.0 ? 4 : v < 100.0 ? 3 : v < 1000.0 ? 2 : 1;
  return Printf("%.*f%s", decimals, v, unit);
}

bool ParseTimeArg(const std::string& text, std::optional<int64_t>* rel, std::optional<int64_t>* wall) {
  if (text.empty()) return false;
  if (text[0] == '@') {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str() + 1, &end, 10);
    if (*end) return false;
    *wall = v;
    return true;
  }
  if (text.find('T') != std::string::npos) {
    std::tm tm{};
    const char* p = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p) return false;
    int64_t frac_ns = 0;
    if (*p == '.') {
      ++p;
      int digits = 0;
      while (*p >= '0' && *p <= '9') {
        if (digits < 9) {
          frac_ns = frac_ns * 10 + (*p - '0');
          ++digits;
        }
        ++p;
      }
      while (digits++ < 9) frac_ns *= 10;
    }
    if (*p == 'Z') ++p;
    if (*p) return false;
    *wall = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + frac_ns;
    return true;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s" || unit.empty()) scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  *rel = static_cast<int64_t>(v * scale);
  return true;
}

}  // namespace cupmon::decoder
