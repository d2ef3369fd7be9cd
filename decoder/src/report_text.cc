// Small text formatters the reports share (report_text.h).
#include "report_text.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "cupmon/decoder/reports.h"

namespace cupmon::decoder {

std::string Fixed(double v, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  return text;
}

// "N records (K kernel; by kind 10=K 5=M) in C chunks not written (W write errors)".
std::string LostBeforeDisk(const pb::Stats& s) {
  std::string text = std::to_string(s.lost_records()) + " records (" +
                     std::to_string(s.lost_kernel_records()) + " kernel";
  if (s.lost_records_by_kind_size()) {
    text += "; by kind";
    for (const auto& k : s.lost_records_by_kind())
      text += " " + std::to_string(k.kind()) + "=" + std::to_string(k.count());
  }
  return text + ") in " + std::to_string(s.chunks_lost()) + " chunks not written (" +
         std::to_string(s.write_errors()) + " write errors)";
}

// Records the writer took in (Stats.records) against where they went. Only a recording that ended
// cleanly has final stats; otherwise records after its last stats chunk are not in them.
std::string RecordBalance(const TraceCounts& c) {
  const uint64_t decoded = c.records + c.records_not_decoded;
  const uint64_t accounted = decoded + c.stats.lost_records() + c.stats.records_deleted();
  std::string text = std::to_string(c.stats.records()) + " in, " + std::to_string(decoded) +
                     " decoded, " + std::to_string(c.stats.lost_records()) + " lost before disk, " +
                     std::to_string(c.stats.records_deleted()) + " deleted by retention";
  if (!c.have_stats) return "no stats chunk";
  if (!c.stats_final) return text + " (stats not final: the recording did not end with a footer)";
  if (accounted == c.stats.records()) return text + ": all accounted for";
  return text + ": " +
         (accounted < c.stats.records()
              ? std::to_string(c.stats.records() - accounted) + " not accounted for"
              : std::to_string(accounted - c.stats.records()) + " more than the writer counted");
}


std::string IsoTime(int64_t unix_ns) { return UtcTime(unix_ns, 9); }

// Signed relative time with nvprof units.
std::string FormatRel(int64_t ns) {
  return ns < 0 ? "-" + FormatDuration(static_cast<double>(-ns)) : FormatDuration(static_cast<double>(ns));
}

std::string FormatBytes(uint64_t b) {
  if (b < 1024) return Printf("%" PRIu64 "B", b);
  const char* units[] = {"KB", "MB", "GB", "TB"};
  double v = static_cast<double>(b) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  return Printf("%.4g%s", v, units[u]);
}

// "5 ranges, 1 marks, 1 unended, 1 END(s) without START, 1 unresolved names" (summary, info).
std::string NvtxCountsText(const TraceCounts& c) {
  return std::to_string(c.nvtx.ranges) + " ranges, " + std::to_string(c.nvtx.marks) + " marks, " +
         std::to_string(c.nvtx.unended) + " unended, " +
         std::to_string(c.nvtx.ends_without_start) + " END(s) without START, " +
         std::to_string(c.nvtx.unresolved_names) + " unresolved names";
}

}  // namespace cupmon::decoder
