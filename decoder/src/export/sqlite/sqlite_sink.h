// The database writer of `cupmon-decode export --format sqlite` (sqlite_exporter.h): rows written
// as an SQLite database in the Nsight Systems export schema (nsys_schema.h), through writer
// threads of its own. Built only where SQLite is found (CUPMON_HAVE_SQLITE). Private to the
// decoder.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/sqlite/sqlite_batches.h"
#include "export/sqlite/sqlite_connection.h"
#include "export/sqlite/sqlite_fact_tables.h"
#include "export/sqlite/sqlite_rank_state.h"
#include "export/sqlite/sqlite_strings.h"

struct sqlite3;

namespace cupmon::decoder {

// Writes one database for one or several recordings (ranks). Everything goes into a temporary
// file beside the output path, and only a complete database is renamed onto the path (an
// existing file there is replaced then, and left as it was when anything fails). By default
// (Options::own_pages) the batched tables and their indexes are written as B-tree pages by
// cupmon (export/sqlite_pages.h) and moved into the database at Close; otherwise, and for the
// tables the pages cannot hold, inside one transaction, a batch of rows per statement (INSERT
// INTO T SELECT ... FROM cupmon_batch, a virtual table over the batch's column values: fewer
// SQLite instructions per row than bound parameters), the indexes built at the end.
//
// Threads: the caller's thread turns rows into batches of column values (names, ids and times
// resolved there); one writer thread, started by Create, owns the SQLite connection while rows
// stream and inserts the batches, so decoding and SQLite overlap. With `split` (off by default:
// with the batch statements it gains no wall time and costs more CPU) kernel rows, the costliest
// (nsys's 40-column table) and most of the rows, have the database's connection and writer thread
// to themselves; the other tables are written through a second
// connection on a second writer thread, into a second temporary file (beside the output) with
// the same tables. At Close the two build their indexes at the same time, then the second file's
// tables are copied into the database's empty ones (INSERT INTO ... SELECT * between identical
// tables with identical indexes: SQLite's transfer, which copies records and index entries
// without decoding them) and the second file is removed. The hand-over is a bounded queue of batches
// per connection (sqlite_batches.h; the caller waits when one is full), so memory stays bounded:
// the batches in flight, plus the distinct names, threads, contexts, annotations and per-rank
// facts, which the caller's thread writes in Close once the writers have stopped. With
// `writer_thread` false (or one CPU) the caller's thread inserts the batches itself, through
// one connection; by default (`split` false) one connection has one writer thread.
//
// Ids: each rank gets a globalPid packed as nsys packs it (nsys_schema.h: host number, pid), API
// rows a globalTid with the rank's thread numbers (CUPMON_THREADS keeps CUPTI's thread ids).
// Times are nanoseconds since TARGET_INFO_SESSION_START_TIME.utcEpochNs (`SetTimeBase`), on the
// wall clock through each rank's calibration, as in the other exports. Rows without a usable time
// (zero or reversed timestamps) cannot be placed and are not written; CUPMON_COUNTERS counts
// them ('export.untimed.<type>').
//
// Use: Create, SetTimeBase, then per recording Begin, Write per row, End; Close once. A write
// error stops the writing (later calls do nothing) and Close reports it.
class SqliteSink {
 public:
  struct Options {
    bool writer_thread = true;
    bool split = false;  // the second connection; with writer_thread and more than one CPU
    // Where the second connection's temporary file goes; empty: beside the output.
    std::string split_dir;
    // The batched tables' B-trees written by cupmon (export/sqlite_pages.h) rather than through
    // SQLite's INSERT (the same database content); not with `split`. Tables the pages cannot
    // hold (an INTEGER PRIMARY KEY) still go through SQLite.
    bool own_pages = true;
  };
  // Creates the temporary database beside `path` (and the second connection's file) and
  // their tables. Fails (with a message naming the path) when the path is a directory or cannot
  // be written; nothing is left behind then.
  static Expected<std::unique_ptr<SqliteSink>> Create(const std::string& path, Options options);
  static Expected<std::unique_ptr<SqliteSink>> Create(const std::string& path) {
    return Create(path, Options{});
  }
  ~SqliteSink();
  SqliteSink(const SqliteSink&) = delete;
  SqliteSink& operator=(const SqliteSink&) = delete;

  // Unix ns of time 0 (TARGET_INFO_SESSION_START_TIME.utcEpochNs); 0 leaves times in unix ns.
  void SetTimeBase(int64_t unix_ns) { base_ = unix_ns; }
  // `rank` is null for a single recording.
  void Begin(const TraceBuilder& builder, const Recording& recording, const Rank* rank);
  void Write(const Row& row);
  void End(const TraceBuilder& builder, const Recording& recording, const ReadIntegrity& integrity);
  // Close's last write, after every other table, in a transaction of its own through the
  // database's connection (export/sqlite/sqlite_job_table.h's table): returns what failed, ""
  // when nothing did.
  void SetLastWrite(std::function<std::string(sqlite3* db)> write) {
    last_write_ = std::move(write);
  }
  // Builds the indexes, commits, copies the second file's tables in, renames the database onto the
  // path. On failure the temporary files are removed and the error says what failed.
  Expected<void> Close();

  // Rows given to the activity tables (kernel, memcpy, memset, runtime, secondary API calls,
  // synchronization) so far.
  uint64_t activity_rows() const { return activity_rows_; }
  const std::string& path() const { return path_; }
  // The tables written as cupmon's pages rather than through SQLite (Options::own_pages), so
  // far (NVTX_EVENTS joins with the first NVTX batch, which may be one of Close's). After Close:
  // while rows stream, the writer thread may be adding one.
  std::vector<std::string> PagedTables() const;
  // The indexes built as cupmon's pages (Options::own_pages), by name in sorted order: those of
  // nsys::Indexes() on PagedTables' tables when Create ran (the NVTX table has none).
  std::vector<std::string> PagedIndexes() const;
  // True after a write error (Close reports it): later rows are not written.
  bool failed() const { return failed_.load(std::memory_order_relaxed); }

  // The tables the writer threads fill (int-only columns), in batches.
  using Table = SqliteBatch::Table;
  using enum SqliteBatch::Table;

 private:
  using enum SqliteBatches::ConnIndex;

  explicit SqliteSink(std::string path);
  // Close's last step with two connections: the second file's tables copied into the database.
  void BringInRest();

  // Caller's side: the rows into their tables' batches.
  int64_t ThreadTid(uint32_t cupti_pid, uint32_t cupti_tid);
  int64_t Rel(int64_t wall) const { return wall - base_; }
  void Annotate(const Row& r);
  void WriteRange(const Row& r);
  bool split() const { return batches_.split(); }

  std::string path_;
  // [kMain]: the database, and the first failure of all once the writers are joined (the
  // caller's thread's own failures too). [kRest]: the second file; no path: not used.
  SqliteConnection conns_[kConnCount];
  std::atomic<bool> failed_{false};
  bool closed_ = false;
  int64_t base_ = 0;
  std::function<std::string(sqlite3* db)> last_write_;
  uint64_t activity_rows_ = 0;
  SqliteBatches batches_{conns_, &failed_};  // the hand-over to the writer threads
  // The caller's thread's: names and ids across ranks, the tables Close writes, the rank whose
  // rows stream (Begin resets it).
  SqliteStrings strings_;
  SqliteFactTables facts_;
  SqliteRankState rank_;
};

}  // namespace cupmon::decoder
