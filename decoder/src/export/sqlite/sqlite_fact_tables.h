// The tables the SQLite export (sqlite_sink.h) writes at Close rather than in batches: each
// rank's facts (CUPMON_RANKS, CUPMON_WINDOWS, CUPMON_GAPS, CUPMON_BEHIND, CUPMON_COUNTERS,
// CUPMON_ANNOTATIONS, TARGET_INFO_GPU, NVTX domains), StringIds, the session start and
// META_DATA_EXPORT. Private to the SQLite export.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/sqlite/sqlite_connection.h"
#include "export/sqlite/sqlite_rank_state.h"
#include "export/sqlite/sqlite_strings.h"

namespace cupmon::decoder {

// Kept as rows on the caller's thread until Close, which owns a connection only once the
// writers have stopped; also numbers the hosts' nodes across ranks.
class SqliteFactTables {
 public:
  // A rank's node: the first of its host whose pid is free, so that a second recording of one
  // (host, pid) (a restarted monitor, a reused pid) gets a node of its own.
  uint32_t NodeFor(const std::string& host, uint32_t pid);
  // End of a rank: its facts as rows (its annotation labels take StringIds ids now). `base`:
  // unix ns of time 0.
  void AddRank(const TraceBuilder& b, const Recording& rec, const ReadIntegrity& integrity,
               const SqliteRankState& rank, SqliteStrings& strings, int64_t base);
  // Close: the rows kept, StringIds, the synchronization rows' device fix, the session start and
  // the metadata, into `conn` (its transaction). A failure is `conn`'s error.
  void Write(SqliteConnection& conn, const SqliteStrings& strings, int64_t base) const;

 private:
  struct Value {
    enum Kind : uint8_t { kNullValue, kInt, kText } kind = kNullValue;
    int64_t i = 0;
    std::string text;
  };
  struct DeferredRow {
    const char* insert;  // the statement (one of the kInsert* constants of the .cc)
    std::vector<Value> values;
  };
  // Ranks with synchronization rows whose context had no GPU row yet: fixed up by Write.
  struct SyncFix {
    int64_t global_pid;
    std::map<uint32_t, uint32_t> context_devices;
  };

  uint32_t FreeNode(const std::string& host, uint32_t pid);
  void Defer(const char* insert, std::vector<Value> values) {
    deferred_.push_back(DeferredRow{insert, std::move(values)});
  }
  void Counter(int64_t global_pid, const std::string& name, int64_t value);
  // A rank's CUPMON_COUNTERS rows: the monitor's stats (every scalar of the latest Stats), the
  // reader's integrity report, the decoder's counts and the export's own.
  void AddCounters(const TraceBuilder& b, const ReadIntegrity& integrity,
                   const SqliteRankState& rank);

  std::vector<std::string> node_hosts_;                         // node -> host
  std::set<std::pair<uint32_t, uint32_t>> node_pids_;           // (node, pid) given a globalPid
  std::set<std::tuple<uint32_t, uint32_t, std::string>> gpus_;  // TARGET_INFO_GPU rows given
  std::vector<DeferredRow> deferred_;
  std::vector<SyncFix> sync_fixes_;
};

}  // namespace cupmon::decoder
