// One connection of the SQLite export (sqlite_sink.h) and the batches of rows it inserts. The
// statements and the cupmon_batch virtual table are sqlite_writer.cc's. Private to the SQLite
// export.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "export/sqlite/nsys_schema.h"
#include "export/sqlite/sqlite_pages.h"

struct sqlite3;
struct sqlite3_stmt;

namespace cupmon::decoder {

// The rows a connection's cupmon_batch virtual table yields: `rows` rows of `columns` cells, row
// after row (INT64_MIN: NULL).
struct SqliteBatchView {
  const int64_t* cells = nullptr;
  size_t rows = 0;
  int columns = 0;
};

// Column values of up to kBatchRows rows of one table (sqlite_tables.h); kNull marks SQL NULL.
struct SqliteBatch {
  // The tables the writer threads fill (int-only columns), in batches.
  enum Table : int {
    kKernel,
    kMemcpy,
    kMemset,
    kRuntime,
    kSecondaryApi,
    kSync,
    kThreads,
    kCorrelationAnnotations,
    kNvtx,  // created by the first batch of NVTX rows (nsys_schema.h, NvtxTables)
    kTableCount
  };
  Table table = kKernel;
  size_t rows = 0;
  std::vector<int64_t> cells;
};

// One SQLite connection, its prepared INSERTs and its first failure. Used by whichever thread
// owns it at the time (its writer thread while rows stream, the caller's in Close).
struct SqliteConnection {
  sqlite3* db = nullptr;
  // Per table: its SELECT list, in the table's column order: a cell (its index), or NULL or
  // a constant (`text`, cell -1). And INSERT INTO it SELECT ... FROM cupmon_batch (which reads
  // `batch`) per shape: the cells that are the same in every row of a batch (bit i: cell i),
  // which that statement takes as bound parameters (?<i+1>) rather than from cupmon_batch;
  // shape 0 reads every cell from cupmon_batch.
  struct Slot {
    int cell;  // -1: `text`
    std::string text;
  };
  std::vector<Slot> select[SqliteBatch::kTableCount];
  std::map<uint32_t, sqlite3_stmt*> inserts[SqliteBatch::kTableCount];
  SqliteBatchView batch;  // the rows cupmon_batch yields (set while a batch is inserted)
  std::string error;      // the first failure
  std::atomic<bool>* failed = nullptr;  // the sink's: any failure stops every writer
  std::string path;                     // its temporary file
  bool nvtx = false;                    // CreateNvtxTables ran
  // The batched tables written as pages (SqliteSink::Options::own_pages), and their leaves'
  // unlinked file.
  std::unique_ptr<SqliteTablePages> pages;
  int pages_fd = -1, runs_fd = -1;
  std::set<std::string> indexes_made;            // names of the indexes `pages` builds
  bool IndexForPages(const nsys::Index& index);  // creates it empty for `pages` if it can
  bool Open(const std::string& file);  // and the pragmas, cupmon_batch and the transaction
  bool Exec(const std::string& sql);
  int64_t PragmaInt(const char* pragma);  // "PRAGMA page_size" and the like; 0 if it fails
  void Fail(const std::string& what);
  bool PrepareInsert(int table);  // its SELECT list, and the statement of shape 0
  sqlite3_stmt* InsertFor(int table, uint32_t shape);  // prepared on first use (shape 0: full)
  bool CreateNvtxTables();                             // before the first NVTX batch
  void InsertBatch(const SqliteBatch& b);
  // Close, with `pages`: commits, closes the database, moves the pages in, opens it again.
  bool MovePagesIn();
  void Finalize();  // the statements
  void CloseDb();
};

}  // namespace cupmon::decoder
