// ProgressLine: when and what a command shows as its progress while it reads.
#include "cupmon/decoder/progress_line.h"

#include <time.h>

#include <cstdio>

namespace cupmon::decoder {
namespace {

std::string Bytes(uint64_t b) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, kUnits[u]);
  return buf;
}

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

std::string ProgressLine::Format(uint64_t done_bytes, uint64_t total_bytes) {
  if (done_bytes > total_bytes) done_bytes = total_bytes;
  // Whole percent, rounded down: 100% only once everything is read.
  // 128 bits: done * 100 must not wrap for totals near 2^64.
  __extension__ using Wide = unsigned __int128;
  const unsigned percent =
      total_bytes ? static_cast<unsigned>(Wide{done_bytes} * 100 / total_bytes) : 100;
  return "read " + Bytes(done_bytes) + " of " + Bytes(total_bytes) + " (" +
         std::to_string(percent) + "%)";
}

ProgressLine::ProgressLine(Diagnostics& out, bool enabled, Clock clock)
    : out_(out), enabled_(enabled), clock_(clock ? std::move(clock) : Clock(MonotonicNs)) {
  if (enabled_) last_ns_ = clock_();  // the first redraw waits one interval: short reads show none
}

void ProgressLine::Update(uint64_t done_bytes, uint64_t total_bytes) {
  if (!enabled_) return;
  const int64_t now = clock_();
  if (now - last_ns_ < kIntervalNs) return;
  last_ns_ = now;
  out_.Progress(Format(done_bytes, total_bytes));
  drawn_ = true;
}

void ProgressLine::Finish() {
  if (!drawn_) return;
  out_.ClearProgress();
  drawn_ = false;
}

}  // namespace cupmon::decoder
