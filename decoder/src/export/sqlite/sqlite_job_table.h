// CUPMON_JOB_STEP_RANK of `cupmon-decode export --format sqlite`: the job analysis of the ranks
// the export reads (`cupmon-decode job`'s, decoder/src/job/), fed from the export's own pass, one
// row per job step and rank. Built only where SQLite is found. Private to the decoder.
#pragma once

#include <string>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "job/rank_reading.h"

struct sqlite3;

namespace cupmon::decoder {

// Per rank: Begin, the rows (Take), End; then Write once. Each rank's GPU activity is kept only
// until its End (its step table is built there, as `job` builds it); the tables until Write.
// Single-threaded (the export's pass, then SqliteSink::Close on the same thread).
class SqliteJobTable {
 public:
  // The consumer that finds the rank's steps in the pass's records (TraceBuilder::AddConsumer).
  RecordConsumer* Begin(const Rank& rank) { return tables_.Begin(rank); }
  void Take(const Row& row) { tables_.Take(row); }
  void End() { tables_.End(); }
  // Creates and fills the table through `db` (inside the caller's transaction) when the ranks'
  // collectives were matched; nothing otherwise. Returns what failed, "" when nothing did.
  std::string Write(sqlite3* db);

 private:
  job::ExportRankTables tables_;
};

}  // namespace cupmon::decoder
