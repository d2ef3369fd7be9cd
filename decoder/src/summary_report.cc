// `cupmon-decode summary`: nvprof's profiling result per recording (report_sinks.h); the driver
// and the merged summary of several ranks are in commands/rows_report.cc.
#include <algorithm>
#include <cinttypes>
#include <string>
#include <unordered_map>
#include <vector>

#include "text/row_text.h"
#include "report_sinks.h"
#include "report_text.h"

namespace cupmon::decoder {

void PrintShownNames(std::ostream& out, const ShownNames& shown) {
  if (!shown.shortened) return;
  out << "==cupmon== Kernel names are short";
  if (shown.numbered) out << "; [n] numbers kernels that share one";
  out << ". Whole: --full-names, raw: --mangled\n";
}

void SummarySink::OnRow(const Row& row) {
  if (row.type == RowType::kRange) {
    // Marks have no duration; a range never ended counts as a call with no time.
    if (row.nvtx.kind == RangeKind::kMark) return;
    if (row.name_id >= ranges_.size()) ranges_.resize(row.name_id + 1);
    if (row.nvtx.ended) ranges_[row.name_id].Add(row);
    else ++ranges_[row.name_id].calls;
    return;
  }
  if (row.type == RowType::kMemory) {
    memory_.Add(row);
    return;
  }
  auto& table = row.type == RowType::kApi ? api_ : gpu_;
  if (row.name_id >= table.size()) table.resize(row.name_id + 1);
  table[row.name_id].Add(row);
}

void SummarySink::Print(std::ostream& out, const TraceBuilder& b, const Recording& rec,
                        const ReadIntegrity& integrity, const std::string& prefix) {
  const auto& h = rec.header;
  const auto& c = b.counts();
  out << "==cupmon== " << prefix << "Recording " << RecordingIdText(rec.id) << ": host " << h.host()
      << ", pid " << h.pid() << "\n";
  if (h.synthetic())
    out << "==cupmon== SYNTHETIC: written by the CUPTI test double, not measured on a GPU\n";
  if (!rec.source_note.empty()) out << "==cupmon== Source: " << rec.source_note << "\n";
  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  out << "==cupmon== Command: " << (cmd.empty() ? "(unknown)" : cmd) << "\n";
  if (b.first_ts()) {
    out << "==cupmon== Span: " << IsoTime(b.clock().ToWall(b.first_ts())) << " + "
        << FormatDuration(static_cast<double>(b.last_ts() - b.first_ts()))
        << (b.clock().calibrated()
                ? " (calibrated, " + std::to_string(b.clock().samples()) + " samples)"
                : " (no calibration: CUPTI clock taken as wall clock)")
        << "\n";
  } else {
    out << "==cupmon== Span: no timed records\n";
  }
  out << "==cupmon== Devices:";
  if (h.devices_size() == 0) out << " (none listed)";
  for (const auto& d : h.devices())
    out << " [" << d.id() << "] " << d.name() << " (sm_" << d.cc_major() << d.cc_minor() << ")";
  out << "\n==cupmon== Windows: " << b.windows().size();
  for (const auto& [id, w] : b.windows()) {
    out << " #" << id;
    if (w.begin && w.end >= w.begin && w.end) out << " " << FormatDuration(static_cast<double>(w.end - w.begin));
    else out << " (open)";
    if (w.launched_before) out << " (" << w.launched_before << " launched before it opened)";
  }
  out << "\n==cupmon== Drops: " << c.stats.dropped_records() << " dropped records, "
      << c.stats.pool_exhausted() << " buffer requests unmet, " << c.unknown_timestamps
      << " records with unknown timestamps, " << c.buffers_stopped << " buffers cut short\n";
  if (c.stats.chunks_lost() || c.stats.lost_records())
    out << "==cupmon== Lost before disk: " << LostBeforeDisk(c.stats) << "\n";
  out << "==cupmon== Integrity: " << integrity.files << " files, " << integrity.chunks
      << " chunks, " << integrity.damaged_ranges << " damaged ranges ("
      << integrity.damaged_bytes << " bytes), " << integrity.missing_chunks
      << " chunks missing, " << integrity.undecodable_chunks << " undecodable chunks\n";
  out << "==cupmon== Profiling result:\n";
  out << Printf("%16s  %7s  %9s  %8s  %9s  %9s  %9s  %s\n", "Type", "Time(%)", "Time", "Calls",
                "Avg", "Min", "Max", "Name");
  const ShownNames shown = PrintTable(out, "GPU activities:", Named(b, gpu_), short_names_);
  PrintTable(out, "API calls:", Named(b, api_));
  PrintShownNames(out, shown);
  // NVTX ranges (CPU time between push and pop; nested ranges overlap, so their Time(%) is of
  // the ranges' summed time, as in nsys's nvtx_sum). Only when the recording has NVTX.
  if (c.nvtx.ranges || c.nvtx.marks || c.nvtx.unended || c.nvtx.ends_without_start) {
    out << "==cupmon== NVTX: " << NvtxCountsText(c) << "\n";
    PrintTable(out, "NVTX ranges:", Named(b, ranges_));
  }
  if (c.memory_records || c.memory_pool_records) PrintMemory(out, b, c);
}

std::vector<SummaryTableRow> SummarySink::TableRows(NamedStats rows, bool shorten,
                                                    ShownNames* shown) {
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
  });
  std::vector<SummaryTableRow> table;
  table.reserve(rows.size());
  for (const auto& [name, s] : rows) table.push_back({name, name, s});
  if (!shorten) return table;
  std::unordered_map<std::string, int> sharing;
  for (auto& r : table) {
    r.shown_name = ShortKernelName(r.name);
    ++sharing[r.shown_name];
    if (shown) shown->shortened |= r.shown_name != r.name;
  }
  std::unordered_map<std::string, int> numbered;
  for (auto& r : table) {
    if (sharing[r.shown_name] > 1) {
      if (shown) shown->numbered = true;
      r.shown_name += " [" + std::to_string(++numbered[r.shown_name]) + "]";
    }
  }
  return table;
}

ShownNames SummarySink::PrintTable(std::ostream& out, const char* title, NamedStats rows,
                                    bool shorten) {
  ShownNames shown;
  const std::vector<SummaryTableRow> table = TableRows(std::move(rows), shorten, &shown);
  uint64_t total = 0;
  for (const auto& r : table) total += r.stat.total;
  bool first = true;
  for (const auto& [name, shown_name, s] : table) {
    const double pct = total ? 100.0 * static_cast<double>(s.total) / static_cast<double>(total) : 0.0;
    const std::string avg = s.timed ? FormatDuration(static_cast<double>(s.total) / static_cast<double>(s.timed)) : "-";
    const std::string mn = s.timed ? FormatDuration(static_cast<double>(s.min)) : "-";
    const std::string mx = s.timed ? FormatDuration(static_cast<double>(s.max)) : "-";
    out << Printf("%16s  %6.2f%%  %9s  %8" PRIu64 "  %9s  %9s  %9s  %s\n", first ? title : "",
                  pct, FormatDuration(static_cast<double>(s.total)).c_str(), s.calls, avg.c_str(),
                  mn.c_str(), mx.c_str(), shown_name.c_str());
    first = false;
  }
  if (table.empty()) out << Printf("%16s  (none)\n", title);
  return shown;
}

NamedStats SummarySink::Named(const TraceBuilder& b, const std::vector<Stat>& table) {
  std::vector<std::pair<std::string, Stat>> rows;
  for (size_t id = 0; id < table.size(); ++id)
    if (table[id].calls) rows.emplace_back(std::string(b.NameOf(static_cast<uint32_t>(id))), table[id]);
  return rows;
}

void SummarySink::PrintMemory(std::ostream& out, const TraceBuilder& b, const TraceCounts& c) {
  memory_.Finish();
  out << "==cupmon== Device memory: " << c.memory_records << " MEMORY2 records, "
      << c.memory_pool_records << " MEMORY_POOL records; bytes in use are those allocated "
      << "since the recording began\n";
  if (memory_.untimed())
    out << "==cupmon==   " << memory_.untimed() << " memory records with unknown timestamps "
        << "(left out)\n";
  if (memory_.unknown_operations())
    out << "==cupmon==   " << memory_.unknown_operations()
        << " memory records with an unknown operation type (left out)\n";
  for (const auto& [dev, d] : memory_.devices()) {
    out << "==cupmon==   device " << dev << ": peak " << FormatByteCount(d.peak) << " in use";
    if (d.peak_ts) out << " at " << IsoTime(d.peak_wall ? d.peak_wall : b.clock().ToWall(d.peak_ts));
    out << "; " << FormatByteCount(d.in_use) << " at the end\n";
    out << "==cupmon==     " << d.allocations << " allocations, " << d.releases << " releases";
    if (d.unknown_releases)
      out << " (" << d.unknown_releases << " of an address not allocated since the recording "
          << "began: not subtracted)";
    if (d.replaced)
      out << ", " << d.replaced << " allocations of an address still in use (its release was "
          << "not recorded: taken as released)";
    out << "\n";
    if (d.allocations) {
      out << "==cupmon==     allocation size: total " << FormatByteCount(d.alloc_bytes)
          << ", min " << FormatByteCount(d.alloc_min) << ", max " << FormatByteCount(d.alloc_max) << ", mean "
          << FormatByteCount(d.alloc_bytes / d.allocations) << "\n";
      for (const auto& [kind, k] : d.by_kind)
        out << "==cupmon==     " << MemoryKindName(kind) << ": " << k.allocations
            << " allocations, " << FormatByteCount(k.bytes) << "\n";
    }
    if (d.pools_created || d.pools_destroyed || d.pools_trimmed)
      out << "==cupmon==     pools: " << d.pools_created << " created, " << d.pools_trimmed
          << " trimmed, " << d.pools_destroyed << " destroyed, largest size "
          << FormatByteCount(d.pool_max_size) << "\n";
  }
}

}  // namespace cupmon::decoder
