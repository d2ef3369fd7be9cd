// The tables the SQLite export writes at Close (see sqlite_fact_tables.h): the per-rank facts
// kept as rows, StringIds, the session start and the export's metadata.
#include "export/sqlite/sqlite_fact_tables.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <utility>

#include "export/sqlite/nsys_schema.h"
#include "hex_text.h"
#include "text/utc_time.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "unknown"
#endif

namespace cupmon::decoder {
namespace {

// The tables Close writes.
constexpr const char* kInsertString = "INSERT INTO StringIds (id, value) VALUES (?1, ?2)";
constexpr const char* kInsertRank =
    "INSERT INTO CUPMON_RANKS (globalPid, rank, rankFromLauncher, label, jobId, host, pid, node, "
    "recordingId, localRank, worldSize, commandLine, processStartUtcNs, cuptiApiVersion, "
    "cudaDriverVersion, cudaRuntimeVersion, cupmonVersion, synthetic, files, calibrated, "
    "calibrationSamples, calibrationNonMonotonic, clockDomainChanges, firstStart, lastEnd) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
    "?21, ?22, ?23, ?24, ?25)";
constexpr const char* kInsertWindow =
    "INSERT INTO CUPMON_WINDOWS (globalPid, windowId, start, end, source, beginNote, endNote, "
    "firstApiCorrelationId, launchedBefore) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
constexpr const char* kInsertGap =
    "INSERT INTO CUPMON_GAPS (globalPid, gapId, start, end, note) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kInsertBehind =
    "INSERT INTO CUPMON_BEHIND (globalPid, behindId, start, end, note) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kInsertCounter =
    "INSERT INTO CUPMON_COUNTERS (globalPid, name, value) VALUES (?1, ?2, ?3)";
constexpr const char* kInsertAnnotation =
    "INSERT INTO CUPMON_ANNOTATIONS (globalPid, externalId, labelId, start, end, rows) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6)";
constexpr const char* kInsertGpu =
    "INSERT INTO TARGET_INFO_GPU (vmId, id, name, uuid, totalMemory, smCount, cuDevice, "
    "computeMajor, computeMinor, smMajor, smMinor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
    "?8, ?9)";
constexpr const char* kInsertSessionStart =
    "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime) VALUES (?1, ?2)";
constexpr const char* kInsertMeta = "INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)";
constexpr const char* kInsertNvtxDomain =
    "INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES "
    "(?1, ?2, ?3, ?4, ?5)";

}  // namespace

uint32_t SqliteFactTables::NodeFor(const std::string& host, uint32_t pid) {
  const uint32_t node = FreeNode(host, pid);
  node_pids_.insert({node, pid});
  return node;
}

uint32_t SqliteFactTables::FreeNode(const std::string& host, uint32_t pid) {
  // The first node of this host whose pid is free; a second recording of one (host, pid) (a
  // restarted monitor, a reused pid) gets a node of its own, so that its rows stay apart.
  for (uint32_t n = 0; n < node_hosts_.size(); ++n)
    if (node_hosts_[n] == host && !node_pids_.count({n, pid})) return n;
  node_hosts_.push_back(host);
  return static_cast<uint32_t>(std::min<size_t>(node_hosts_.size() - 1, nsys::kMaxNode));
}

void SqliteFactTables::Counter(int64_t global_pid, const std::string& name, int64_t value) {
  Defer(kInsertCounter, {Value{Value::kInt, global_pid, {}}, Value{Value::kText, 0, name},
                         Value{Value::kInt, value, {}}});
}

void SqliteFactTables::AddRank(const TraceBuilder& b, const Recording& rec,
                               const ReadIntegrity& integrity, const SqliteRankState& rank,
                               SqliteStrings& strings, int64_t base) {
  const auto& h = rec.header;
  const auto I = [](int64_t v) { return Value{Value::kInt, v, {}}; };
  const auto T = [](std::string v) { return Value{Value::kText, 0, std::move(v)}; };
  const auto N = [] { return Value{}; };
  const auto IfI = [&](bool has, int64_t v) { return has ? I(v) : N(); };
  const auto Rel = [base](int64_t wall) { return wall - base; };
  const auto wall = [&](uint64_t cupti) { return Rel(b.clock().ToWall(cupti)); };
  const int64_t global_pid = rank.global_pid;
  const uint32_t node = rank.node;
  if (rank.sync_unknown_device) sync_fixes_.push_back(SyncFix{global_pid, rank.context_devices});

  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  Defer(kInsertRank, {I(global_pid),
                      IfI(rank.rank != nullptr, rank.rank ? rank.rank->rank : 0),
                      IfI(rank.rank != nullptr, rank.rank && rank.rank->rank_from_header),
                      rank.rank ? T(rank.rank->label) : N(),
                      h.job_id().empty() ? N() : T(h.job_id()),
                      T(h.host()),
                      I(h.pid()),
                      I(node),
                      T(Hex(rec.id)),
                      IfI(h.has_local_rank(), h.local_rank()),
                      IfI(h.has_world_size(), h.world_size()),
                      T(cmd),
                      IfI(h.process_start_unix_ns() != 0, h.process_start_unix_ns()),
                      I(h.cupti_api_version()),
                      I(h.cuda_driver_version()),
                      I(h.cuda_runtime_version()),
                      T(h.cupmon_version()),
                      I(h.synthetic()),
                      I(static_cast<int64_t>(rec.files.size())),
                      I(b.clock().calibrated()),
                      I(static_cast<int64_t>(b.clock().samples())),
                      I(static_cast<int64_t>(b.clock().non_monotonic())),
                      I(static_cast<int64_t>(b.clock().domain_changes())),
                      IfI(b.first_ts() != 0, b.first_ts() ? wall(b.first_ts()) : 0),
                      IfI(b.last_ts() != 0, b.last_ts() ? wall(b.last_ts()) : 0)});
  for (const auto& [id, w] : b.windows()) {
    const bool ended = w.end != 0 && w.end >= w.begin;
    Defer(kInsertWindow, {I(global_pid), I(id), IfI(w.begin != 0, w.begin ? wall(w.begin) : 0),
                          IfI(ended, ended ? wall(w.end) : 0), T(w.source), T(w.begin_note),
                          T(w.note), IfI(w.first_api_correlation != 0, w.first_api_correlation),
                          I(static_cast<int64_t>(w.launched_before))});
  }
  for (const auto& [id, g] : b.gaps()) {
    const bool ended = g.end != 0 && g.end >= g.begin;
    Defer(kInsertGap, {I(global_pid), I(id), IfI(g.begin != 0, g.begin ? wall(g.begin) : 0),
                       IfI(ended, ended ? wall(g.end) : 0), T(g.note)});
  }
  for (const auto& [id, g] : b.behind()) {
    const bool ended = g.end != 0 && g.end >= g.begin;
    Defer(kInsertBehind, {I(global_pid), I(id), IfI(g.begin != 0, g.begin ? wall(g.begin) : 0),
                          IfI(ended, ended ? wall(g.end) : 0), T(g.note)});
  }
  for (const auto& [id, a] : rank.annotations)
    Defer(kInsertAnnotation, {I(global_pid), I(static_cast<int64_t>(id)), I(strings.Id(a.label)),
                              I(Rel(a.start)), I(Rel(a.end)), I(static_cast<int64_t>(a.rows))});
  // The devices the recording lists, once per (host, id, uuid).
  for (const auto& d : h.devices()) {
    const std::string uuid = nsys::GpuUuidText(d.uuid());
    if (!gpus_.insert({node, d.id(), uuid}).second) continue;
    Defer(kInsertGpu,
          {I(nsys::GlobalVid(node)), I(d.id()), T(d.name()), uuid.empty() ? N() : T(uuid),
           IfI(d.global_memory_bytes() != 0, static_cast<int64_t>(d.global_memory_bytes())),
           IfI(d.sm_count() != 0, d.sm_count()), I(d.id()), I(d.cc_major()), I(d.cc_minor())});
  }

  AddCounters(b, integrity, rank);
  for (const auto& [name, d] : rank.nvtx_domains)
    Defer(kInsertNvtxDomain,
          {I(d.start), I(nsys::kEventTypeNvtxDomainCreate), T(name), I(d.global_tid), I(d.id)});
}

void SqliteFactTables::AddCounters(const TraceBuilder& b, const ReadIntegrity& integrity,
                                   const SqliteRankState& rank) {
  const int64_t global_pid = rank.global_pid;
  const auto& c = b.counts();
  const auto* desc = c.stats.GetDescriptor();
  const auto* refl = c.stats.GetReflection();
  for (int i = 0; i < desc->field_count(); ++i) {
    const auto* f = desc->field(i);
    if (f->is_repeated()) continue;
    int64_t v = 0;
    switch (f->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        v = static_cast<int64_t>(refl->GetUInt64(c.stats, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_INT64:
        v = refl->GetInt64(c.stats, f);
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
        v = refl->GetUInt32(c.stats, f);
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_INT32:
        v = refl->GetInt32(c.stats, f);
        break;
      default:
        continue;
    }
    Counter(global_pid, "stats." + f->name(), v);
  }
  for (const auto& k : c.stats.lost_records_by_kind())
    Counter(global_pid, "stats.lost_records_by_kind." + std::to_string(k.kind()),
            static_cast<int64_t>(k.count()));
  Counter(global_pid, "stats.present", c.have_stats);
  Counter(global_pid, "stats.final", c.stats_final);
  const std::pair<const char*, uint64_t> counts[] = {
      {"integrity.files", integrity.files},
      {"integrity.chunks", integrity.chunks},
      {"integrity.damaged_ranges", integrity.damaged_ranges},
      {"integrity.damaged_bytes", integrity.damaged_bytes},
      {"integrity.undecodable_chunks", integrity.undecodable_chunks},
      {"integrity.unknown_chunk_types", integrity.unknown_chunk_types},
      {"integrity.sequence_gaps", integrity.sequence_gaps},
      {"integrity.missing_chunks", integrity.missing_chunks},
      {"integrity.missing_files", integrity.missing_files},
      {"integrity.earlier_files_gone", integrity.earlier_files_gone},
      {"integrity.unreadable_files", integrity.unreadable_files},
      {"integrity.files_without_footer", integrity.files_without_footer},
      {"integrity.borrowed_headers", integrity.borrowed_headers},
      {"decoder.raw_buffers", c.raw_buffers},
      {"decoder.records", c.records},
      {"decoder.gpu_rows", c.gpu_rows},
      {"decoder.api_rows", c.api_rows},
      {"decoder.sync_rows", c.sync_rows},
      {"decoder.filtered_out", c.filtered_out},
      {"decoder.unknown_timestamps", c.unknown_timestamps},
      {"decoder.unresolved_names", c.unresolved_names},
      {"decoder.gpu_without_api", c.gpu_without_api},
      {"decoder.api_without_gpu", c.api_without_gpu},
      {"decoder.duplicate_api_correlation", c.duplicate_api_correlation},
      {"decoder.out_of_order", c.out_of_order},
      {"decoder.buffers_stopped", c.buffers_stopped},
      {"decoder.records_not_decoded", c.records_not_decoded},
      {"decoder.overhead_records", c.overhead_records},
      {"decoder.overhead_ns", c.overhead_ns},
      {"decoder.external_correlations", c.external_correlations},
  };
  for (const auto& [name, v] : counts) Counter(global_pid, name, static_cast<int64_t>(v));
  for (const auto& [kind, n] : c.records_by_kind)
    Counter(global_pid, "decoder.records_by_kind." + std::to_string(kind), static_cast<int64_t>(n));
  for (const auto& [kind, n] : c.stopped_by_kind)
    Counter(global_pid, "decoder.stopped_by_kind." + std::to_string(kind), static_cast<int64_t>(n));
  for (int t = 0; t < kSqliteRowTypes; ++t) {
    Counter(global_pid, std::string("export.rows.") + kSqliteRowTypeNames[t],
            static_cast<int64_t>(rank.rows[t]));
    Counter(global_pid, std::string("export.untimed.") + kSqliteRowTypeNames[t],
            static_cast<int64_t>(rank.untimed[t]));
  }
  // NVTX counters only where there is NVTX, so that other exports keep their rows.
  if (c.nvtx.ranges || c.nvtx.marks || c.nvtx.ends_without_start || c.nvtx.unended) {
    const std::pair<const char*, uint64_t> nvtx[] = {
        {"decoder.nvtx_ranges", c.nvtx.ranges},
        {"decoder.nvtx_marks", c.nvtx.marks},
        {"decoder.nvtx_range_ends_without_start", c.nvtx.ends_without_start},
        {"decoder.nvtx_unended_ranges", c.nvtx.unended},
        {"decoder.nvtx_unresolved_names", c.nvtx.unresolved_names},
        {"export.rows.nvtx", rank.nvtx_rows},
        {"export.untimed.nvtx", rank.nvtx_untimed},
    };
    for (const auto& [name, v] : nvtx) Counter(global_pid, name, static_cast<int64_t>(v));
  }
}

void SqliteFactTables::Write(SqliteConnection& conn, const SqliteStrings& strings,
                             int64_t base) const {
  // Statements by text: a few kinds of row, prepared once each.
  std::map<const char*, sqlite3_stmt*> prepared;
  const auto insert = [&](const char* sql, const std::vector<Value>& values) {
    if (!conn.error.empty()) return;
    sqlite3_stmt*& s = prepared[sql];
    if (!s && sqlite3_prepare_v2(conn.db, sql, -1, &s, nullptr) != SQLITE_OK) {
      conn.Fail(std::string("preparing ") + std::string(sql).substr(0, 40));
      return;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const Value& v = values[i];
      const int at = static_cast<int>(i) + 1;
      if (v.kind == Value::kInt)
        sqlite3_bind_int64(s, at, v.i);
      else if (v.kind == Value::kText)
        sqlite3_bind_text(s, at, v.text.data(), static_cast<int>(v.text.size()), SQLITE_STATIC);
      else
        sqlite3_bind_null(s, at);
    }
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) conn.Fail(std::string("writing ") + std::string(sql).substr(0, 40));
  };
  for (size_t id = 0; id < strings.strings().size(); ++id)
    insert(kInsertString, {Value{Value::kInt, static_cast<int64_t>(id + 1), {}},
                           Value{Value::kText, 0, *strings.strings()[id]}});
  // Synchronization rows written before their context's first GPU row: the device it had.
  for (const SyncFix& f : sync_fixes_) {
    for (const auto& [context, device] : f.context_devices)
      conn.Exec("UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET deviceId = " +
                std::to_string(device) + " WHERE globalPid = " + std::to_string(f.global_pid) +
                " AND contextId = " + std::to_string(context) + " AND deviceId = -1");
  }
  for (const DeferredRow& row : deferred_) insert(row.insert, row.values);
  const std::string session_start = UtcTime(base);
  insert(kInsertSessionStart,
         {Value{Value::kInt, base, {}}, Value{Value::kText, 0, session_start}});
  const std::pair<const char*, std::string> meta[] = {
      {"EXPORT_SCHEMA_VERSION", nsys::kSchemaVersion},
      {"CUPMON_SCHEMA_SOURCE",
       std::string(nsys::kSchemaRelease) + " Analysis Guide, SQLite Schema Reference"},
      {"CUPMON_EXPORTER", std::string("cupmon-decode ") + CUPMON_VERSION_STRING},
      {"CUPMON_TIME_BASE",
       "ns since TARGET_INFO_SESSION_START_TIME.utcEpochNs (unix ns), on the "
       "wall clock through each rank's calibration"},
  };
  for (const auto& [name, value] : meta)
    insert(kInsertMeta, {Value{Value::kText, 0, name}, Value{Value::kText, 0, value}});
  for (auto& [sql, s] : prepared) sqlite3_finalize(s);
}

}  // namespace cupmon::decoder
