// `cupmon-decode info --format json`: the cupmon.info document's objects (docs/DECODER.md,
// "Machine-readable summary and info"); the driver (commands/rows_report.cc) writes the document around them.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "text/row_text.h"
#include "report_documents.h"

namespace cupmon::decoder {
namespace {

// The CUPTI activity attributes the monitor set; a field only for those it set (none in
// recordings made before these options existed), as the text's "CUPTI attributes set" line.
void WriteCuptiAttributes(JsonWriter& w, const pb::Config& c) {
  w.BeginObject();
  if (c.has_cupti_per_thread_buffers())
    w.Key("per_thread_buffers").Bool(c.cupti_per_thread_buffers());
  if (c.has_cupti_device_buffer_bytes())
    w.Key("device_buffer_bytes").Uint(c.cupti_device_buffer_bytes());
  if (c.has_cupti_device_buffer_preallocate())
    w.Key("device_buffers_preallocated").Uint(c.cupti_device_buffer_preallocate());
  if (c.has_cupti_device_buffer_pool_limit())
    w.Key("device_buffer_pool_limit").Uint(c.cupti_device_buffer_pool_limit());
  if (c.zero_buffers()) w.Key("zeroed_out_buffers").Bool(true);
  w.EndObject();
}

// A window's or a gap's duration: null while open or when its END marker is missing.
void WriteDuration(JsonWriter& w, const WindowSpan& s) {
  if (s.end && s.end >= s.begin) w.Uint(s.end - s.begin);
  else w.Null();
}

void WriteStringOrNull(JsonWriter& w, const std::string& s) {
  if (s.empty()) w.Null();
  else w.String(s);
}

// The recording's trace windows, its gaps and behind intervals, and what sharing CUPTI cost.
void WriteWindowsJson(JsonWriter& w, const TraceBuilder& b) {
  const auto& c = b.counts();
  w.Key("windows").BeginArray();
  for (const auto& [id, win] : b.windows()) {
    w.BeginObject();
    w.Key("id").Uint(id);
    w.Key("source").String(win.source);
    w.Key("begin_unix_ns");
    if (win.begin) w.Int(b.clock().ToWall(win.begin));
    else w.Null();
    w.Key("duration_ns");
    WriteDuration(w, win);
    w.Key("end_note");
    WriteStringOrNull(w, win.note);
    w.Key("begin_note");
    WriteStringOrNull(w, win.begin_note);
    w.Key("launched_before").Uint(win.launched_before);
    // TRIGGER_AUTO: the slow step that opened it (the text's "why").
    w.Key("trigger");
    if (win.trigger_step && win.trigger_median_ns) {
      w.BeginObject();
      w.Key("step").Uint(win.trigger_step);
      w.Key("step_ns").Uint(win.trigger_step_ns);
      w.Key("median_ns").Uint(win.trigger_median_ns);
      w.Key("factor").Double(win.trigger_factor);
      w.Key("by").String(win.trigger_by.empty() ? "step" : win.trigger_by.c_str());
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();

  // Marked intervals: `id`, `begin_unix_ns`, `duration_ns`, `note`.
  const auto spans = [&](const char* key, const std::map<uint32_t, WindowSpan>& by_id) {
    w.Key(key).BeginArray();
    for (const auto& [id, g] : by_id) {
      w.BeginObject().Key("id").Uint(id).Key("begin_unix_ns");
      if (g.begin) w.Int(b.clock().ToWall(g.begin));
      else w.Null();
      w.Key("duration_ns");
      WriteDuration(w, g);
      w.Key("note");
      WriteStringOrNull(w, g.note);
      w.EndObject();
    }
    w.EndArray();
  };
  // Another CUPTI client held CUPTI: cupmon's stream has no records in these intervals.
  spans("gaps", b.gaps());
  // CUPTI's worker could not keep up: records inside may be missing, not counted as dropped.
  spans("cupti_behind", b.behind());
  // The other client's side of sharing CUPTI, and what a takeover cost (docs/COEXISTENCE.md).
  w.Key("other_cupti_client").BeginObject();
  w.Key("stranded_buffers").Uint(c.stats.stranded_buffers());
  w.Key("foreign_buffers").Uint(c.stats.foreign_buffers());
  w.Key("shared_records").Uint(c.stats.shared_client_records());
  w.Key("undelivered_records").Uint(c.stats.shared_client_undelivered());
  w.Key("imports_rebound").Uint(c.stats.imports_rebound());
  w.EndObject();
}

// The writer's stats, what was lost before disk, and the record balance.
void WriteStatsJson(JsonWriter& w, const TraceCounts& c) {
  w.Key("stats").BeginObject();
  w.Key("buffers_completed").Uint(c.stats.buffers_completed());
  w.Key("dropped_records").Uint(c.stats.dropped_records());
  w.Key("unmet_buffer_requests").Uint(c.stats.pool_exhausted());
  w.Key("zero_timestamp_records").Uint(c.stats.zero_timestamp_records());
  w.Key("write_errors").Uint(c.stats.write_errors());
  w.Key("chunks_lost").Uint(c.stats.chunks_lost());
  w.Key("files_deleted").Uint(c.stats.files_deleted());
  w.EndObject();

  w.Key("lost_before_disk").BeginObject();
  w.Key("records").Uint(c.stats.lost_records());
  w.Key("kernel_records").Uint(c.stats.lost_kernel_records());
  w.Key("by_kind").BeginArray();
  for (const auto& k : c.stats.lost_records_by_kind())
    w.BeginObject().Key("kind").Uint(k.kind()).Key("records").Uint(k.count()).EndObject();
  w.EndArray();
  w.Key("chunks").Uint(c.stats.chunks_lost());
  w.Key("write_errors").Uint(c.stats.write_errors());
  w.EndObject();

  // The text's "records:" line: what the writer took in against where it went. "balanced" is
  // null when it cannot be told (no stats, or stats not final).
  w.Key("record_balance").BeginObject();
  w.Key("have_stats").Bool(c.have_stats);
  w.Key("stats_final").Bool(c.stats_final);
  w.Key("in").Uint(c.stats.records());
  w.Key("decoded").Uint(c.records + c.records_not_decoded);
  w.Key("lost_before_disk").Uint(c.stats.lost_records());
  w.Key("deleted_by_retention").Uint(c.stats.records_deleted());
  w.Key("balanced");
  if (c.have_stats && c.stats_final)
    w.Bool(c.records + c.records_not_decoded + c.stats.lost_records() +
               c.stats.records_deleted() ==
           c.stats.records());
  else
    w.Null();
  w.EndObject();
}

// The read's damage, the decoder's findings, the calibration and the NVTX counts.
void WriteIntegrityJson(JsonWriter& w, const TraceCounts& c, const ReadIntegrity& integrity) {
  w.Key("integrity").BeginObject();
  w.Key("files").Uint(integrity.files);
  w.Key("damaged_ranges").Uint(integrity.damaged_ranges);
  w.Key("damaged_bytes").Uint(integrity.damaged_bytes);
  w.Key("undecodable_chunks").Uint(integrity.undecodable_chunks);
  w.Key("unknown_chunk_types").Uint(integrity.unknown_chunk_types);
  w.Key("sequence_gaps").Uint(integrity.sequence_gaps);
  w.Key("missing_chunks").Uint(integrity.missing_chunks);
  w.Key("missing_files").Uint(integrity.missing_files);
  w.Key("files_without_footer").Uint(integrity.files_without_footer);
  w.Key("earlier_files_gone").Uint(integrity.earlier_files_gone);
  w.Key("unreadable_files").Uint(integrity.unreadable_files);
  w.Key("borrowed_headers").Uint(integrity.borrowed_headers);
  w.Key("damaged").Bool(integrity.HasWarnings());
  w.EndObject();

  w.Key("decoding").BeginObject();
  w.Key("buffers_cut_short").Uint(c.buffers_stopped);
  w.Key("records_not_decoded").Uint(c.records_not_decoded);
  w.Key("unknown_timestamps").Uint(c.unknown_timestamps);
  w.Key("unresolved_names").Uint(c.unresolved_names);
  w.Key("duplicate_api_correlation_ids").Uint(c.duplicate_api_correlation);
  w.Key("gpu_without_api").Uint(c.gpu_without_api);
  w.Key("launched_before_window").Uint(c.launched_before_window);
  w.Key("calibration_samples").Uint(c.calibration.samples);
  w.Key("calibration_non_monotonic").Uint(c.calibration.non_monotonic);
  w.EndObject();

  // realtime - CUPTI ns over the calibration samples; null without samples.
  w.Key("calibration");
  if (c.calibration.samples) {
    w.BeginObject();
    w.Key("offset_min_ns").Int(c.calibration.offset_min);
    w.Key("offset_max_ns").Int(c.calibration.offset_max);
    w.Key("offset_first_ns").Int(c.calibration.offset_first);
    w.EndObject();
  } else {
    w.Null();
  }

  w.Key("nvtx");
  if (c.nvtx.ranges || c.nvtx.marks || c.nvtx.ends_without_start || c.nvtx.unended) {
    w.BeginObject();
    w.Key("ranges").Uint(c.nvtx.ranges);
    w.Key("marks").Uint(c.nvtx.marks);
    w.Key("unended").Uint(c.nvtx.unended);
    w.Key("ends_without_start").Uint(c.nvtx.ends_without_start);
    w.Key("unresolved_names").Uint(c.nvtx.unresolved_names);
    w.EndObject();
  } else {
    w.Null();
  }
}

}  // namespace

void WriteInfoJson(JsonWriter& w, const TraceBuilder& b, const Rank& rank,
                   const ReadIntegrity& integrity, const RankMessages& messages) {
  const Recording& r = rank.recording;
  const auto& h = r.header;
  const auto& c = b.counts();
  w.BeginObject();
  WriteRankFields(w, rank);
  w.Key("recording_id").String(RecordingIdText(r.id));
  w.Key("synthetic").Bool(h.synthetic());
  w.Key("host").String(h.host());
  w.Key("format_major").Uint(h.format_major());
  w.Key("format_minor").Uint(h.format_minor());
  w.Key("cupti_api_version").Uint(h.cupti_api_version());
  w.Key("cuda_driver_version").Uint(h.cuda_driver_version());
  w.Key("cuda_runtime_version").Uint(h.cuda_runtime_version());
  w.Key("cupmon_version").String(h.cupmon_version());
  w.Key("source");
  WriteStringOrNull(w, r.source_note);
  w.Key("cupti_attributes");
  WriteCuptiAttributes(w, h.config());
  w.Key("command").BeginArray();
  for (const auto& a : h.command_line()) w.String(a);
  w.EndArray();
  w.Key("files").BeginArray();
  for (const auto& f : r.files) {
    w.BeginObject().Key("index").Uint(f.file_index).Key("path").String(f.path);
    w.Key("bytes").Uint(f.bytes).EndObject();
  }
  w.EndArray();
  w.Key("chunks").Uint(integrity.chunks);
  w.Key("raw_buffers").Uint(c.raw_buffers);
  w.Key("records").Uint(c.records);
  w.Key("records_by_kind").BeginArray();
  for (const auto& [k, n] : c.records_by_kind)
    w.BeginObject().Key("kind").Uint(k).Key("records").Uint(n).EndObject();
  w.EndArray();
  WriteWindowsJson(w, b);
  WriteStatsJson(w, c);
  WriteIntegrityJson(w, c, integrity);

  w.Key("warnings");
  WriteStrings(w, messages.warnings);
  w.Key("notes");
  WriteStrings(w, messages.notes);
  w.EndObject();
}

void WriteMergedInfoJson(JsonWriter& w, const RankListing& listing,
                         const std::vector<const Rank*>& chosen,
                         const std::vector<RankResult>& results) {
  w.BeginObject();
  w.Key("ranks").Uint(results.size());
  w.Key("job");
  WriteJob(w, listing, chosen);
  w.Key("per_rank").BeginArray();
  std::set<uint32_t> ids;
  for (const RankResult& r : results) {
    const auto& h = r.rank->recording.header;
    w.BeginObject();
    WriteRankFields(w, *r.rank);
    w.Key("recording_id").String(RecordingIdText(r.rank->recording.id));
    w.Key("files").Uint(r.rank->recording.files.size());
    w.Key("records").Uint(r.records);
    w.Key("windows").Uint(r.windows.size());
    // true: the launcher's rank (RANK, SLURM_PROCID); false: numbered by (host, pid) order.
    w.Key("rank_from_launcher").Bool(r.rank->rank_from_header);
    w.Key("world_size");
    if (h.has_world_size()) w.Uint(h.world_size());
    else w.Null();
    w.Key("local_rank");
    if (h.has_local_rank()) w.Uint(h.local_rank());
    else w.Null();
    w.Key("first_record_unix_ns");
    if (r.first_wall) w.Int(r.first_wall);
    else w.Null();
    w.Key("calibrated").Bool(r.calibrated);
    w.Key("calibration_samples").Uint(r.samples);
    w.Key("damaged").Bool(r.damaged);
    w.EndObject();
    for (const auto& win : r.windows) ids.insert(win.id);
  }
  w.EndArray();

  w.Key("windows").BeginArray();
  for (uint32_t id : ids) {
    w.BeginObject().Key("id").Uint(id).Key("ranks").BeginArray();
    std::optional<int64_t> lo, hi;
    uint64_t missing = 0;
    for (const RankResult& r : results) {
      const auto win = std::find_if(r.windows.begin(), r.windows.end(),
                                    [&](const auto& x) { return x.id == id; });
      w.BeginObject().Key("rank").Uint(r.rank->rank).Key("label").String(r.rank->label);
      w.Key("present").Bool(win != r.windows.end());
      if (win == r.windows.end()) {
        ++missing;
        w.Key("begin_unix_ns").Null().Key("duration_ns").Null().EndObject();
        continue;
      }
      if (win->begin_wall) {
        lo = lo ? std::min(*lo, *win->begin_wall) : *win->begin_wall;
        hi = hi ? std::max(*hi, *win->begin_wall) : *win->begin_wall;
      }
      w.Key("begin_unix_ns").IntOrNull(win->begin_wall);
      w.Key("duration_ns").UintOrNull(win->duration);
      w.EndObject();
    }
    w.EndArray();
    // Between the earliest and the latest begin; null when no rank has the BEGIN marker.
    w.Key("spread_ns");
    if (lo) w.Int(*hi - *lo);
    else w.Null();
    w.Key("missing_on").Uint(missing);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

}  // namespace cupmon::decoder
