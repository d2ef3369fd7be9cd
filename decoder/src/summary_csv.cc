// `cupmon-decode summary --format csv`: the summary's tables as one CSV table, a line per rank,
// table and name (docs/DECODER.md, "Machine-readable summary and info").
#include <charconv>
#include <cinttypes>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "report_documents.h"
#include "report_sinks.h"
#include "text/csv.h"

namespace cupmon::decoder {
namespace {

std::string Number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

void WriteRows(std::ostream& out, const Rank& rank, std::string_view table_name,
               const std::vector<SummaryTableRow>& table) {
  uint64_t total = 0;
  for (const auto& r : table) total += r.stat.total;
  const std::string who =
      std::to_string(rank.rank) + "," + std::to_string(rank.recording.header.pid()) + ",";
  for (const auto& [name, shown_name, s] : table) {
    out << who << table_name << "," << CsvQuote(name) << "," << CsvQuote(shown_name) << ","
        << s.calls << "," << s.timed << "," << s.total << ","
        << Number(total ? 100.0 * static_cast<double>(s.total) / static_cast<double>(total) : 0.0);
    // Empty when no call has a known time (the text's "-").
    if (s.timed)
      out << "," << Number(static_cast<double>(s.total) / static_cast<double>(s.timed)) << ","
          << s.min << "," << s.max << "\n";
    else
      out << ",,,\n";
  }
}

}  // namespace

void WriteSummaryCsvHeader(std::ostream& out) {
  out << "rank,pid,table,name,shown_name,calls,timed,total_ns,time_percent,avg_ns,min_ns,"
         "max_ns\n";
}

void SummarySink::WriteCsv(std::ostream& out, const TraceBuilder& b, const Rank& rank) const {
  WriteRows(out, rank, "gpu", TableRows(Named(b, gpu_), short_names_));
  WriteRows(out, rank, "api", TableRows(Named(b, api_), false));
  WriteRows(out, rank, "nvtx", TableRows(Named(b, ranges_), false));
}

}  // namespace cupmon::decoder
