// `cupmon-decode summary --format json`: the cupmon.summary document's objects (docs/DECODER.md,
// "Machine-readable summary and info"); the driver (commands/rows_report.cc) writes the document around them.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "text/row_text.h"
#include "report_documents.h"
#include "report_sinks.h"

namespace cupmon::decoder {
namespace {

// A summary table as an array: each line's names and stats, and its share of the table's total
// time (what the text's Time(%) shows, unrounded). Min, max and avg are null when no call of the
// line has a known time (the text's "-").
void WriteTable(JsonWriter& w, const std::vector<SummaryTableRow>& table) {
  uint64_t total = 0;
  for (const auto& r : table) total += r.stat.total;
  w.BeginArray();
  for (const auto& [name, shown_name, s] : table) {
    w.BeginObject();
    w.Key("name").String(name);
    w.Key("shown_name").String(shown_name);
    w.Key("calls").Uint(s.calls);
    w.Key("timed").Uint(s.timed);
    w.Key("total_ns").Uint(s.total);
    w.Key("time_percent")
        .Double(total ? 100.0 * static_cast<double>(s.total) / static_cast<double>(total) : 0.0);
    if (s.timed) {
      w.Key("avg_ns").Double(static_cast<double>(s.total) / static_cast<double>(s.timed));
      w.Key("min_ns").Uint(s.min);
      w.Key("max_ns").Uint(s.max);
    } else {
      w.Key("avg_ns").Null();
      w.Key("min_ns").Null();
      w.Key("max_ns").Null();
    }
    w.EndObject();
  }
  w.EndArray();
}

void WriteLostBeforeDisk(JsonWriter& w, const pb::Stats& s) {
  w.BeginObject();
  w.Key("records").Uint(s.lost_records());
  w.Key("kernel_records").Uint(s.lost_kernel_records());
  w.Key("by_kind").BeginArray();
  for (const auto& k : s.lost_records_by_kind())
    w.BeginObject().Key("kind").Uint(k.kind()).Key("records").Uint(k.count()).EndObject();
  w.EndArray();
  w.Key("chunks").Uint(s.chunks_lost());
  w.Key("write_errors").Uint(s.write_errors());
  w.EndObject();
}

}  // namespace

void SummarySink::WriteJson(JsonWriter& w, const TraceBuilder& b, const Rank& rank,
                            const ReadIntegrity& integrity, const RankMessages& messages) {
  const Recording& rec = rank.recording;
  const auto& h = rec.header;
  const auto& c = b.counts();
  w.BeginObject();
  WriteRankFields(w, rank);
  w.Key("recording_id").String(RecordingIdText(rec.id));
  w.Key("host").String(h.host());
  w.Key("synthetic").Bool(h.synthetic());
  w.Key("source");
  if (rec.source_note.empty()) w.Null();
  else w.String(rec.source_note);
  w.Key("command").BeginArray();
  for (const auto& a : h.command_line()) w.String(a);
  w.EndArray();

  w.Key("span").BeginObject();
  if (b.first_ts()) {
    w.Key("first_record_unix_ns").Int(b.clock().ToWall(b.first_ts()));
    w.Key("duration_ns").Uint(b.last_ts() - b.first_ts());
  } else {
    w.Key("first_record_unix_ns").Null();
    w.Key("duration_ns").Null();
  }
  w.Key("calibrated").Bool(b.clock().calibrated());
  w.Key("calibration_samples").Uint(b.clock().samples());
  w.EndObject();

  w.Key("devices").BeginArray();
  for (const auto& d : h.devices()) {
    w.BeginObject().Key("id").Uint(d.id()).Key("name").String(d.name());
    w.Key("cc_major").Uint(d.cc_major()).Key("cc_minor").Uint(d.cc_minor()).EndObject();
  }
  w.EndArray();

  w.Key("windows").BeginArray();
  for (const auto& [id, win] : b.windows()) {
    w.BeginObject().Key("id").Uint(id).Key("duration_ns");
    if (win.begin && win.end >= win.begin && win.end) w.Uint(win.end - win.begin);
    else w.Null();  // open, or its END marker is missing
    w.Key("launched_before").Uint(win.launched_before).EndObject();
  }
  w.EndArray();

  w.Key("drops").BeginObject();
  w.Key("dropped_records").Uint(c.stats.dropped_records());
  w.Key("unmet_buffer_requests").Uint(c.stats.pool_exhausted());
  w.Key("unknown_timestamps").Uint(c.unknown_timestamps);
  w.Key("buffers_cut_short").Uint(c.buffers_stopped);
  w.EndObject();
  w.Key("lost_before_disk");
  WriteLostBeforeDisk(w, c.stats);

  w.Key("integrity").BeginObject();
  w.Key("files").Uint(integrity.files);
  w.Key("chunks").Uint(integrity.chunks);
  w.Key("damaged_ranges").Uint(integrity.damaged_ranges);
  w.Key("damaged_bytes").Uint(integrity.damaged_bytes);
  w.Key("missing_chunks").Uint(integrity.missing_chunks);
  w.Key("undecodable_chunks").Uint(integrity.undecodable_chunks);
  w.EndObject();

  w.Key("gpu_activities");
  WriteTable(w, TableRows(Named(b, gpu_), short_names_));
  w.Key("api_calls");
  WriteTable(w, TableRows(Named(b, api_), false));

  // As in the text: only when the recording has NVTX.
  w.Key("nvtx");
  if (c.nvtx.ranges || c.nvtx.marks || c.nvtx.unended || c.nvtx.ends_without_start) {
    w.BeginObject();
    w.Key("ranges").Uint(c.nvtx.ranges);
    w.Key("marks").Uint(c.nvtx.marks);
    w.Key("unended").Uint(c.nvtx.unended);
    w.Key("ends_without_start").Uint(c.nvtx.ends_without_start);
    w.Key("unresolved_names").Uint(c.nvtx.unresolved_names);
    w.Key("table");
    WriteTable(w, TableRows(Named(b, ranges_), false));
    w.EndObject();
  } else {
    w.Null();
  }

  w.Key("memory");
  if (c.memory_records || c.memory_pool_records) {
    memory_.Finish();
    w.BeginObject();
    w.Key("memory_records").Uint(c.memory_records);
    w.Key("memory_pool_records").Uint(c.memory_pool_records);
    w.Key("untimed").Uint(memory_.untimed());
    w.Key("unknown_operations").Uint(memory_.unknown_operations());
    w.Key("devices").BeginArray();
    for (const auto& [dev, d] : memory_.devices()) {
      w.BeginObject();
      w.Key("device").Uint(dev);
      w.Key("peak_bytes").Uint(d.peak);
      w.Key("peak_unix_ns");
      if (d.peak_ts) w.Int(d.peak_wall ? d.peak_wall : b.clock().ToWall(d.peak_ts));
      else w.Null();
      w.Key("in_use_at_end_bytes").Uint(d.in_use);
      w.Key("allocations").Uint(d.allocations);
      w.Key("releases").Uint(d.releases);
      w.Key("unknown_releases").Uint(d.unknown_releases);
      w.Key("replaced").Uint(d.replaced);
      w.Key("allocated_bytes").Uint(d.alloc_bytes);
      if (d.allocations) {
        w.Key("allocation_min_bytes").Uint(d.alloc_min);
        w.Key("allocation_max_bytes").Uint(d.alloc_max);
        w.Key("allocation_mean_bytes").Uint(d.alloc_bytes / d.allocations);
      } else {
        w.Key("allocation_min_bytes").Null();
        w.Key("allocation_max_bytes").Null();
        w.Key("allocation_mean_bytes").Null();
      }
      w.Key("by_kind").BeginArray();
      for (const auto& [kind, k] : d.by_kind) {
        w.BeginObject().Key("kind").Uint(kind).Key("name").String(MemoryKindName(kind));
        w.Key("allocations").Uint(k.allocations).Key("bytes").Uint(k.bytes).EndObject();
      }
      w.EndArray();
      w.Key("pools_created").Uint(d.pools_created);
      w.Key("pools_trimmed").Uint(d.pools_trimmed);
      w.Key("pools_destroyed").Uint(d.pools_destroyed);
      w.Key("pool_max_size_bytes").Uint(d.pool_max_size);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  } else {
    w.Null();
  }

  w.Key("warnings");
  WriteStrings(w, messages.warnings);
  w.Key("notes");
  WriteStrings(w, messages.notes);
  w.EndObject();
}

void WriteMergedSummaryJson(JsonWriter& w, const RankListing& listing,
                            const std::vector<const Rank*>& chosen,
                            const std::vector<RankResult>& results,
                            const std::map<std::string, DurationStat>& gpu,
                            const std::map<std::string, DurationStat>& api, bool short_names) {
  w.BeginObject();
  w.Key("ranks").Uint(results.size());
  w.Key("job");
  WriteJob(w, listing, chosen);
  w.Key("per_rank").BeginArray();
  for (const RankResult& r : results) {
    w.BeginObject();
    WriteRankFields(w, *r.rank);
    w.Key("gpu_time_ns").Uint(r.gpu_time);
    w.Key("gpu_rows").Uint(r.gpu_rows);
    w.Key("api_rows").Uint(r.api_rows);
    w.Key("windows").Uint(r.windows.size());
    w.Key("first_record_unix_ns");
    if (r.first_wall) w.Int(r.first_wall);
    else w.Null();
    w.EndObject();
  }
  w.EndArray();
  w.Key("gpu_activities");
  WriteTable(w, SummarySink::TableRows(NamedStats(gpu.begin(), gpu.end()), short_names));
  w.Key("api_calls");
  WriteTable(w, SummarySink::TableRows(NamedStats(api.begin(), api.end()), false));
  w.EndObject();
}

}  // namespace cupmon::decoder
