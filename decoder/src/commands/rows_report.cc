// The commands of one rows pass per rank (rows_report.h): their loop over the ranks, `info` and
// the merged summary. The summary is in summary_report.cc, its json and csv forms and info's json
// in summary_json.cc, summary_csv.cc and info_json.cc (report_documents.h), the text traces in
// text_traces.cc (report_sinks.h), the export's sink in export_sink.h and the export formats
// under export/ (export/registry.h).
#include "commands/rows_report.h"

#include <algorithm>
#include <cinttypes>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "text/out_buf.h"
#include "text/row_text.h"
#include "commands/rank_pass.h"
#include "duration_stat.h"
#include "export_sink.h"
#include "json_writer.h"
#include "memory_room.h"
#include "report_documents.h"
#include "report_sinks.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

// Hands each chunk of one read to the trace builder, and stops the read once `output` has failed
// (LimitedSink::OutputFailed): a full disk ends the export within a chunk instead of after
// decoding the rest of the recording.
class StoppableRead : public ChunkVisitor {
 public:
  StoppableRead(ChunkVisitor& builder, const LimitedSink& output)
      : a_(builder), output_(output) {}
  void OnFile(const RecordingFile& f) override { a_.OnFile(f); }
  void OnHeader(const pb::RecordingHeader& h, const ChunkOrigin& at) override { a_.OnHeader(h, at); }
  void OnRawBuffer(const RawBufferPrefix& prefix, std::span<const uint8_t> records,
                   const ChunkOrigin& at) override {
    a_.OnRawBuffer(prefix, records, at);
  }
  bool RecordWordsRead(ColumnSelection* keep) const override { return a_.RecordWordsRead(keep); }
  void OnPackedRawBuffer(const RawBufferPrefix& prefix, std::span<const uint8_t> records,
                         const ColumnSelection& packed_with, const ChunkOrigin& at) override {
    a_.OnPackedRawBuffer(prefix, records, packed_with, at);
  }
  void OnStrings(const pb::StringTable& t) override { a_.OnStrings(t); }
  void OnWindowMarker(const pb::WindowMarker& m) override { a_.OnWindowMarker(m); }
  void OnCalibration(const pb::Calibration& c) override { a_.OnCalibration(c); }
  void OnStats(const pb::Stats& s) override { a_.OnStats(s); }
  void OnFooter(const pb::Footer& f) override { a_.OnFooter(f); }
  bool StopReading() const override {
    return output_.OutputFailed() || output_.LimitReachedAndFinal();
  }
  const RangedVisitor* Ranged() const override { return a_.Ranged(); }

 private:
  ChunkVisitor& a_;
  const LimitedSink& output_;
};

class NullSink : public RowSink {
 public:
  void OnRow(const Row&) override {}
  bool NeedsWallTimes() const override { return false; }
  bool ReadsTotalsOnly() const override { return true; }  // reads nothing
};

// One rank's read for RunRowsReport: its builder, the sink it feeds (`trace`, else the summary's or
// none), what the read found, and how many bytes it read.
struct RankRead {
  RankRead(ReportKind kind, RowSink* trace, bool short_names, const RowsReportOptions& options)
      : summary(short_names),
        builder(
            options.read.filter,
            trace                          ? trace
            : kind == ReportKind::kSummary ? static_cast<RowSink*>(&summary)
                                           : &null,
            options.read.horizon,
            trace ? ReorderOptions{options.reorder_rows, options.reorder_ns} : ReorderOptions{}) {
    // info is the whole check; the others' rows of a time range are those of a whole read.
    if (kind != ReportKind::kInfo) builder.AllowRangedRead();
  }
  SummarySink summary;
  NullSink null;
  TraceBuilder builder;
  ReadIntegrity integrity;
  bool skipped = false;  // not read: --limit was reached at the rank's Begin
};

}  // namespace

namespace {

// The CUPTI activity attributes the monitor set (CUPMON_CUPTI_*, CUPMON_ZERO_BUFFERS); empty when
// it left all of CUPTI's defaults, as in every recording made before these options existed.
std::string CuptiAttributesText(const pb::Config& c) {
  std::string s;
  auto add = [&](const std::string& item) { s += (s.empty() ? "" : ", ") + item; };
  if (c.has_cupti_per_thread_buffers())
    add(std::string("per-thread buffers ") + (c.cupti_per_thread_buffers() ? "1" : "0"));
  if (c.has_cupti_device_buffer_bytes())
    add("device buffer " + std::to_string(c.cupti_device_buffer_bytes()) + " bytes");
  if (c.has_cupti_device_buffer_preallocate())
    add("device buffers pre-allocated " + std::to_string(c.cupti_device_buffer_preallocate()));
  if (c.has_cupti_device_buffer_pool_limit())
    add("device buffer pool limit " + std::to_string(c.cupti_device_buffer_pool_limit()));
  if (c.zero_buffers()) add("zeroed-out buffers 1");
  return s;
}

void PrintInfo(std::ostream& out, const TraceBuilder& b, const Recording& r,
               const ReadIntegrity& integrity) {
  const auto& h = r.header;
  const auto& c = b.counts();
  out << "Recording " << RecordingIdText(r.id) << (h.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "")
      << "\n  host " << h.host() << ", pid " << h.pid() << ", format " << h.format_major() << "."
      << h.format_minor() << ", CUPTI API " << h.cupti_api_version() << ", driver "
      << h.cuda_driver_version() << ", runtime " << h.cuda_runtime_version() << ", cupmon "
      << h.cupmon_version() << "\n";
  if (!r.source_note.empty()) out << "  source: " << r.source_note << "\n";
  if (const std::string attrs = CuptiAttributesText(h.config()); !attrs.empty())
    out << "  CUPTI attributes set: " << attrs << "\n";
  out << "  command:";
  for (const auto& a : h.command_line()) out << " " << a;
  out << "\n  files: " << r.files.size() << "\n";
  for (const auto& f : r.files) out << "    [" << f.file_index << "] " << f.path << " (" << f.bytes << " bytes)\n";
  out << "  chunks: " << integrity.chunks << ", raw buffers: " << c.raw_buffers
      << ", records: " << c.records << "\n  records by kind:";
  for (const auto& [k, n] : c.records_by_kind) out << " " << k << "=" << n;
  out << "\n  windows: " << b.windows().size() << "\n";
  for (const auto& [id, w] : b.windows())
    out << "    #" << id << " source " << w.source << ", "
        << (w.end && w.end >= w.begin ? FormatDuration(static_cast<double>(w.end - w.begin)) : "open/unknown end")
        << (w.note.empty() ? "" : ", " + w.note)
        << (AutoTriggerText(w).empty() ? "" : "; why: " + AutoTriggerText(w))
        << (w.begin_note.empty() ? "" : "; begin: " + w.begin_note)
        << (w.launched_before ? ", " + std::to_string(w.launched_before) +
                                    " GPU activities launched before it opened (no launch record)"
                              : std::string())
        << "\n";
  // Another CUPTI client held CUPTI: cupmon's stream has no records in these intervals.
  out << "  gaps (another CUPTI client held CUPTI; no records inside): " << b.gaps().size() << "\n";
  for (const auto& [id, g] : b.gaps())
    out << "    gap #" << id << " " << (g.begin ? IsoTime(b.clock().ToWall(g.begin)) : "?") << " + "
        << (g.end && g.end >= g.begin ? FormatDuration(static_cast<double>(g.end - g.begin))
                                      : "open/unknown end")
        << (g.note.empty() ? "" : ", " + g.note) << "\n";
  // CUPTI's worker could not keep up: records inside may be missing, not counted as dropped.
  out << "  CUPTI behind its own records (records inside may be missing, not counted by CUPTI): "
      << b.behind().size() << "\n";
  for (const auto& [id, g] : b.behind())
    out << "    behind #" << id << " " << (g.begin ? IsoTime(b.clock().ToWall(g.begin)) : "?")
        << " + "
        << (g.end && g.end >= g.begin ? FormatDuration(static_cast<double>(g.end - g.begin))
                                      : "open/unknown end")
        << (g.note.empty() ? "" : ", " + g.note) << "\n";
  if (c.stats.stranded_buffers() || c.stats.imports_rebound() || c.stats.shared_client_records() ||
      c.stats.shared_client_undelivered())
    out << "  another CUPTI client: " << c.stats.stranded_buffers()
        << " cupmon buffers stranded with it (their records lost), "
        << c.stats.shared_client_records() << " records shared with it, "
        << c.stats.shared_client_undelivered() << " it could not be given, "
        << c.stats.imports_rebound() << " CUPTI imports rebound to cupmon (injection only)\n";
  out << "  stats: " << c.stats.buffers_completed() << " buffers, " << c.stats.dropped_records()
      << " dropped records, " << c.stats.pool_exhausted() << " unmet buffer requests, "
      << c.stats.zero_timestamp_records() << " zero-timestamp records, " << c.stats.write_errors()
      << " write errors, " << c.stats.chunks_lost() << " chunks lost, " << c.stats.files_deleted()
      << " files deleted by retention\n";
  out << "  lost before disk: " << LostBeforeDisk(c.stats) << "\n";
  out << "  records: " << RecordBalance(c) << "\n";
  out << "  integrity: " << integrity.damaged_ranges << " damaged ranges (" << integrity.damaged_bytes
      << " bytes), " << integrity.undecodable_chunks << " undecodable chunks, "
      << integrity.unknown_chunk_types << " unknown chunk types, " << integrity.sequence_gaps
      << " sequence gaps (" << integrity.missing_chunks << " chunks), " << integrity.missing_files
      << " missing files, " << integrity.files_without_footer << " files without footer\n";
  out << "  decoding: " << c.buffers_stopped << " buffers cut short, " << c.records_not_decoded
      << " records of kinds not decoded, " << c.unknown_timestamps << " unknown timestamps, "
      << c.unresolved_names << " unresolved names, " << c.duplicate_api_correlation
      << " duplicate API correlation ids, " << c.gpu_without_api << " GPU records without API record ("
      << c.launched_before_window << " of them launched before their window), "
      << c.calibration.samples << " calibration samples (" << c.calibration.non_monotonic
      << " non-monotonic)\n";
  if (c.calibration.samples)
    out << "  calibration: realtime - CUPTI offset " << c.calibration.offset_min << " to "
        << c.calibration.offset_max << " ns over the samples (first " << c.calibration.offset_first
        << " ns)\n";
  if (c.nvtx.ranges || c.nvtx.marks || c.nvtx.ends_without_start || c.nvtx.unended)
    out << "  nvtx: " << NvtxCountsText(c) << "\n";
}

}  // namespace

namespace {

std::string JobLine(const RankListing& listing, const std::vector<const Rank*>& chosen) {
  if (listing.mixed_jobs) return "recordings of several jobs (see the warning)";
  const std::string& job = chosen.front()->job;
  return job.empty() ? "no job id" : "job " + job;
}

// Window ids some rank has and `r` lacks.
std::vector<uint32_t> MissingWindows(const RankResult& r, const std::set<uint32_t>& all) {
  std::vector<uint32_t> missing;
  for (uint32_t id : all)
    if (std::none_of(r.windows.begin(), r.windows.end(), [&](const auto& w) { return w.id == id; }))
      missing.push_back(id);
  return missing;
}

void PrintMergedSummary(std::ostream& out, const RankListing& listing,
                        const std::vector<const Rank*>& chosen,
                        const std::vector<RankResult>& results,
                        const std::map<std::string, Stat>& gpu,
                        const std::map<std::string, Stat>& api, bool short_names) {
  out << "\n==cupmon== Merged: " << results.size() << " ranks, " << JobLine(listing, chosen)
      << "\n";
  int width = 4;
  for (const RankResult& r : results)
    width = std::max(width, static_cast<int>(r.rank->label.size()));
  out << Printf("==cupmon== %-*s  %10s  %9s  %9s  %7s  %s\n", width, "Rank", "GPU time", "GPU rows",
                "API rows", "Windows", "First record (UTC)");
  for (const RankResult& r : results)
    out << Printf("==cupmon== %-*s  %10s  %9" PRIu64 "  %9" PRIu64 "  %7zu  %s\n", width,
                  r.rank->label.c_str(), FormatDuration(static_cast<double>(r.gpu_time)).c_str(),
                  r.gpu_rows, r.api_rows, r.windows.size(),
                  r.first_wall ? IsoTime(r.first_wall).c_str() : "-");
  out << "==cupmon== Total profiling result (" << results.size() << " ranks):\n";
  out << Printf("%16s  %7s  %9s  %8s  %9s  %9s  %9s  %s\n", "Type", "Time(%)", "Time", "Calls",
                "Avg", "Min", "Max", "Name");
  const ShownNames shown = SummarySink::PrintTable(out, "GPU activities:",
                                                   NamedStats(gpu.begin(), gpu.end()), short_names);
  SummarySink::PrintTable(out, "API calls:", NamedStats(api.begin(), api.end()));
  PrintShownNames(out, shown);
}

void PrintMergedInfo(std::ostream& out, const RankListing& listing,
                     const std::vector<const Rank*>& chosen,
                     const std::vector<RankResult>& results) {
  out << "Ranks: " << results.size() << ", " << JobLine(listing, chosen) << "\n";
  std::set<uint32_t> ids;
  for (const RankResult& r : results) {
    const auto& h = r.rank->recording.header;
    out << "  " << r.rank->label << ": recording " << RecordingIdText(r.rank->recording.id) << ", "
        << r.rank->recording.files.size() << " file(s), " << r.records << " records, "
        << r.windows.size() << " window(s), rank "
        << (r.rank->rank_from_header ? "from the launcher" : "by (host, pid) order");
    if (h.has_world_size()) out << ", world size " << h.world_size();
    if (h.has_local_rank()) out << ", local rank " << h.local_rank();
    out << ", first record " << (r.first_wall ? IsoTime(r.first_wall) : std::string("-")) << ", "
        << (r.calibrated ? "calibrated (" + std::to_string(r.samples) + " samples)"
                         : std::string("not calibrated"))
        << (r.damaged ? ", DAMAGED (see warnings)" : "") << "\n";
    for (const auto& w : r.windows) ids.insert(w.id);
  }
  out << "Windows by id (begin in wall-clock time):";
  if (ids.empty()) out << " none";
  out << "\n";
  size_t width = 0;
  for (const RankResult& r : results) width = std::max(width, r.rank->label.size());
  for (uint32_t id : ids) {
    out << "  #" << id << "\n";
    std::optional<int64_t> lo, hi;
    size_t missing = 0;
    for (const RankResult& r : results) {
      out << "    " << r.rank->label << std::string(width - r.rank->label.size(), ' ') << "  ";
      const auto w = std::find_if(r.windows.begin(), r.windows.end(),
                                  [&](const auto& x) { return x.id == id; });
      if (w == r.windows.end()) {
        out << "(no such window)\n";
        ++missing;
        continue;
      }
      if (!w->begin_wall) {
        out << "(begin marker missing)\n";
        continue;
      }
      lo = lo ? std::min(*lo, *w->begin_wall) : *w->begin_wall;
      hi = hi ? std::max(*hi, *w->begin_wall) : *w->begin_wall;
      out << IsoTime(*w->begin_wall) << "  "
          << (w->duration ? FormatDuration(static_cast<double>(*w->duration))
                          : std::string("open/unknown end"))
          << "\n";
    }
    out << "    spread of begins: "
        << (lo ? FormatDuration(static_cast<double>(*hi - *lo)) : std::string("-"));
    if (missing) out << " (missing on " << missing << " rank(s))";
    out << "\n";
  }
}

// A rank's warnings and notes of its read, in the order every rows command writes them. True
// when they make the outcome kWarnings.
bool WarnRank(RankMessageLog& log, const ReadIntegrity& integrity, const TraceCounts& c) {
  bool warnings = integrity.HasWarnings() || c.HasWarnings();
  log.ReadProblems(integrity, &c);
  for (const auto& m : c.notes) log.Note(m);
  if (c.unknown_timestamps)
    log.Warning(std::to_string(c.unknown_timestamps) +
                " record(s) with zero or reversed timestamps shown as unknown");
  if (c.unresolved_names)
    log.Warning(std::to_string(c.unresolved_names) +
                " kernel record(s) whose name pointer has no string entry");
  if (c.out_of_order)
    log.Note(std::to_string(c.out_of_order) +
             " row(s) arrived later than the reorder bound allows and are out of start-time order");
  if (c.stats.dropped_records())
    log.Warning("CUPTI dropped " + std::to_string(c.stats.dropped_records()) + " record(s)");
  if (c.stats.cupti_behind())
    log.Warning("CUPTI fell behind its own records " + std::to_string(c.stats.cupti_behind()) +
                " time(s): records in those intervals may be missing without being counted as "
                "dropped (cupmon-decode info lists them)");
  if (c.stats.chunks_lost() || c.stats.lost_records())
    log.Warning("lost before disk: " + LostBeforeDisk(c.stats));
  // Damage already explains a shortfall; without it, records the writer counted but that are
  // neither decoded, lost nor deleted mean the counters or the files are wrong.
  if (c.stats_final && !integrity.HasWarnings() && !integrity.chunks_not_read &&
      c.stats.records() != c.records + c.records_not_decoded + c.stats.lost_records() +
                               c.stats.records_deleted()) {
    log.Warning("records: " + RecordBalance(c));
    warnings = true;
  }
  return warnings;
}

// What a merged report keeps of one rank once it is read (the summary's times are added by the
// caller).
RankResult RankResultOf(const Rank& rank, const TraceBuilder& builder,
                        const ReadIntegrity& integrity) {
  const TraceCounts& c = builder.counts();
  RankResult r;
  r.rank = &rank;
  for (const auto& [id, w] : builder.windows()) {
    RankResult::Window rw;
    rw.id = id;
    if (w.begin) rw.begin_wall = builder.clock().ToWall(w.begin);
    if (w.begin && w.end >= w.begin && w.end) rw.duration = w.end - w.begin;
    r.windows.push_back(rw);
  }
  r.records = c.records;
  r.gpu_rows = c.gpu_rows;
  r.api_rows = c.api_rows;
  r.first_wall = builder.first_ts() ? builder.clock().ToWall(builder.first_ts()) : 0;
  r.calibrated = builder.clock().calibrated();
  r.samples = builder.clock().samples();
  r.damaged = integrity.HasWarnings();
  return r;
}

// A window that some ranks have and others lack: usually a rank that did not get the request.
// Warns of each such rank to `diagnostics` and in `job_warnings`; true when there was one.
bool WarnMissingWindows(const std::vector<RankResult>& results, Diagnostics& diagnostics,
                        std::vector<std::string>* job_warnings) {
  bool warned = false;
  std::set<uint32_t> all;
  for (const RankResult& r : results)
    for (const auto& w : r.windows) all.insert(w.id);
  for (const RankResult& r : results) {
    const std::vector<uint32_t> missing = MissingWindows(r, all);
    if (missing.empty()) continue;
    std::string list;
    for (uint32_t id : missing) list += (list.empty() ? "#" : ", #") + std::to_string(id);
    const std::string line =
        r.rank->label + (r.windows.empty() ? " has no trace window" : " lacks window(s) " + list) +
        " that other ranks have" + (r.windows.empty() ? " (" + list + ")" : std::string());
    diagnostics.Warning(line);
    job_warnings->push_back(line);
    warned = true;
  }
  return warned;
}

// The sink of a trace or export (nullptr for summary and info, which keep their rows per rank).
// An export's output is opened here (export/registry.h), so that an unwritable path fails before
// anything is read.
Expected<std::unique_ptr<LimitedSink>> MakeRowSink(ReportKind kind,
                                                   const RowsReportOptions& options,
                                                   const std::vector<const Rank*>& chosen,
                                                   bool short_names, std::ostream& out) {
  switch (kind) {
    case ReportKind::kGpuTrace:
    case ReportKind::kApiTrace:
    case ReportKind::kKernExec: {
      std::unique_ptr<LimitedSink> trace = MakeTextTrace(kind, out, options.limit);
      trace->SetShortNames(short_names);
      return trace;
    }
    case ReportKind::kExport: {
      ExportSettings settings = options.export_settings;
      const TraceFilter& f = options.read.filter;
      settings.job_table = chosen.size() > 1 && !options.limit && !f.window && !f.from_wall &&
                           !f.to_wall && !f.from_rel && !f.to_rel && !f.device && !f.stream &&
                           !f.kernel && !f.mangled;
      return MakeExportSink(options.export_format, settings, options.limit, chosen, out);
    }
    default:
      return std::unique_ptr<LimitedSink>();
  }
}

// Adds one rank's summary to the merged summary's totals, and its GPU time to its result.
void AddToTotals(const SummarySink& summary, const TraceBuilder& builder, RankResult* r,
                 std::map<std::string, Stat>* total_gpu, std::map<std::string, Stat>* total_api) {
  for (auto& [name, s] : summary.NamedGpu(builder)) {
    r->gpu_time += s.total;
    (*total_gpu)[name].Merge(s);
  }
  for (auto& [name, s] : summary.NamedApi(builder)) (*total_api)[name].Merge(s);
}

// Closes summary's or info's --format json document: the ranks' array, the merged object (null
// for one rank) and the warnings of no one rank.
void EndDocument(JsonWriter& json, ReportKind kind, const RankListing& listing,
                 const std::vector<const Rank*>& chosen, const std::vector<RankResult>& results,
                 const std::map<std::string, Stat>& total_gpu,
                 const std::map<std::string, Stat>& total_api, bool short_names,
                 const std::vector<std::string>& job_warnings) {
  json.EndArray();
  json.Key("merged");
  if (chosen.size() <= 1)
    json.Null();
  else if (kind == ReportKind::kSummary)
    WriteMergedSummaryJson(json, listing, chosen, results, total_gpu, total_api, short_names);
  else
    WriteMergedInfoJson(json, listing, chosen, results);
  json.Key("warnings");
  WriteStrings(json, job_warnings);
  json.EndObject();
  json.End();
}

}  // namespace

Outcome RunRowsReport(ReportKind kind, const RankListing& listing,
                      const std::vector<const Rank*>& chosen, const RowsReportOptions& options,
                      std::ostream& out, Diagnostics& diagnostics, bool warnings,
                  std::vector<std::string> job_warnings) {
  // Several recordings: one rank each, merged. One recording: the single-recording report.
  const bool merged = chosen.size() > 1;
  // Text reports show kernels by their short names; --mangled names are raw, not shortened.
  const bool short_names = !options.read.full_names && !options.read.filter.mangled;

  auto made = MakeRowSink(kind, options, chosen, short_names, out);
  if (!made) {
    diagnostics.Error(made.error().message);
    return Outcome::kFailed;
  }
  std::unique_ptr<LimitedSink> trace = std::move(*made);
  // One progress line for all chosen recordings (bytes of all their files).
  RankPass pass(chosen, 1, diagnostics);
  std::vector<RankResult> results;
  std::map<std::string, Stat> total_gpu, total_api;
  std::ostringstream info_blocks;
  bool stopped = false;  // the output failed: the export ends with exit 2
  // --limit's rows are all written and nothing more can reach the output: the read stops there,
  // and later ranks are not read (LimitedSink::LimitReachedAndFinal).
  auto limit_reached = [&trace] { return trace && trace->LimitReachedAndFinal(); };
  bool cut_short = false;  // the limit was reached with some of the recordings not read
  // Summary and info of several ranks: the ranks are read on `jobs` threads at once, each into
  // its own builder, and reported below in rank order, as when read one after the other.
  // Traces and exports share one sink across ranks, so they read one rank at a time.
  const size_t jobs = trace ? 1 : RankJobs(chosen.size(), options.read.jobs, DecodeThreads());
  // summary and info --format json: one document, each rank's object written once it is read.
  const bool document = kind == ReportKind::kSummary || kind == ReportKind::kInfo;
  const ReportFormat format = document ? options.format : ReportFormat::kText;
  std::optional<JsonWriter> json;
  if (format == ReportFormat::kJson) {
    json.emplace(out);
    json->BeginObject();
    json->Key("schema").String(kind == ReportKind::kSummary ? kSummarySchema : kInfoSchema);
    json->Key("recordings").BeginArray();
  } else if (format == ReportFormat::kCsv) {
    WriteSummaryCsvHeader(out);
  }
  // Summary and info read on the pass's threads; a trace or export reads on this one, into its
  // sink, the rank's Begin written first.
  auto read_rank = [&](size_t i, const PassProgress& progress) {
    const Recording& rec = chosen[i]->recording;
    auto read = std::make_unique<RankRead>(kind, trace.get(), short_names, options);
    const auto read_progress = [&](uint64_t done, uint64_t) { progress(0, done); };
    if (!trace) {
      ReadRecording(rec, read->builder, &read->integrity, read_progress);
      read->builder.Finish();
      return read;
    }
    if (merged) trace->SetRank(chosen[i]);
    trace->Begin(read->builder, rec, i);
    if (limit_reached()) {
      read->skipped = true;  // its Begin lines are written as before; its rows would be dropped
      return read;
    }
    if (RecordConsumer* also = trace->RecordsWanted()) read->builder.AddConsumer(also);
    StoppableRead stoppable(read->builder, *trace);
    ReadRecording(rec, stoppable, &read->integrity, read_progress);
    return read;
  };
  pass.Run(jobs, read_rank, [&](size_t i, std::unique_ptr<RankRead> read) {
    if (read->skipped) {
      cut_short = true;
      return true;
    }
    const Rank& rank = *chosen[i];
    const Recording& rec = rank.recording;
    const std::string who = pass.Who(i);
    TraceBuilder& builder = read->builder;
    const ReadIntegrity& integrity = read->integrity;
    SummarySink& summary = read->summary;
    if (trace) {
      builder.Finish();
      trace->End(builder, rec, integrity);
    }
    if (integrity.stopped && !limit_reached()) {
      // The output failed (StoppableRead): nothing more is read; the sink (Conclude) or the caller
      // (the -o file, standard output) says why. The counts of a partial read are not reported.
      diagnostics.Error(who + "stopped reading after " + FormatBytes(pass.bytes_done()) + " of " +
                        FormatBytes(pass.total_bytes()) + ": the output could not be written");
      stopped = true;
      return false;
    }
    if (format == ReportFormat::kText && kind == ReportKind::kSummary) {
      if (i) out << "\n";
      summary.Print(out, builder, rec, integrity, who);
    } else if (format == ReportFormat::kText && kind == ReportKind::kInfo) {
      std::ostream& to = merged ? static_cast<std::ostream&>(info_blocks) : out;
      if (i || merged) to << "\n";
      to << who;
      PrintInfo(to, builder, rec, integrity);
    }
    const auto& c = builder.counts();
    RankMessageLog log(diagnostics, who);  // as reported, for a document
    warnings |= WarnRank(log, integrity, c);
    if (integrity.stopped && limit_reached()) cut_short = true;
    // The document's object of this rank, once its warnings are known (the damaged line of a
    // merged report below is the driver's, not the rank's read's: it is not among them).
    if (json && kind == ReportKind::kSummary)
      summary.WriteJson(*json, builder, rank, integrity, log.said());
    if (json && kind == ReportKind::kInfo)
      WriteInfoJson(*json, builder, rank, integrity, log.said());
    if (format == ReportFormat::kCsv) summary.WriteCsv(out, builder, rank);
    if (!merged) return true;

    RankResult r = RankResultOf(rank, builder, integrity);
    if (r.damaged)
      diagnostics.Warning(rank.label +
                          " is damaged (see above); what is intact is merged with the other ranks");
    if (kind == ReportKind::kSummary) AddToTotals(summary, builder, &r, &total_gpu, &total_api);
    results.push_back(std::move(r));
    return true;
  });
  if (cut_short) {
    // What was not read: its damage, counts and windows are not known.
    diagnostics.Note("--limit " + std::to_string(*options.limit) +
                     ": every row written after reading " + FormatBytes(pass.bytes_done()) +
                     " of " + FormatBytes(pass.total_bytes()) +
                     "; the rest was not read or checked");
  }
  if (trace) trace->Close();
  const Outcome output = trace ? trace->Conclude(diagnostics) : Outcome::kClean;
  if (trace && trace->OutputLost()) return Outcome::kFailed;
  if (stopped) {
    out.flush();
    return Outcome::kFailed;
  }

  if (merged) {
    // Windows some ranks lack are not known when --limit ended the read early (cut_short): some
    // windows were not read.
    if (!cut_short) warnings |= WarnMissingWindows(results, diagnostics, &job_warnings);
    if (format == ReportFormat::kText && kind == ReportKind::kSummary)
      PrintMergedSummary(out, listing, chosen, results, total_gpu, total_api, short_names);
    if (format == ReportFormat::kText && kind == ReportKind::kInfo) {
      PrintMergedInfo(out, listing, chosen, results);
      out << info_blocks.str();
    }
  }
  if (json)
    EndDocument(*json, kind, listing, chosen, results, total_gpu, total_api, short_names,
                job_warnings);
  out.flush();
  return Worse(output, warnings ? Outcome::kWarnings : Outcome::kClean);
}

}  // namespace cupmon::decoder
