// Table B-trees in SQLite's file format (https://www.sqlite.org/fileformat2.html), built without
// SQLite, for the SQLite export's batched tables: their rows only ever append (rowids 1, 2, 3, ...
// in the order given), so their leaves can be filled one after another and the tree above them
// built once, bottom up, where SQLite would run its bytecode and B-tree insert per row. Private to
// the decoder; sqlite_writer.cc drives it (docs/DECODER.md, "How the big tables are written").
//
// The leaves go to a file of their own while rows stream (an unlinked temporary: nothing is
// left behind), because the database's page count is known only once SQLite has written the
// rest. Finish then copies them to the database's end, writes the interior pages after them and
// each tree's top page into the (empty) root page SQLite gave the table when it created it, and
// updates the page count in the header. SQLite must have the database closed meanwhile; it reads
// the tables afterwards as its own (indexes, UPDATEs, queries).
//
// Indexes on one integer column of such a table are built here too, from their entries sorted
// after the last row, where SQLite would read the whole table back and sort it.
//
// Limits. The caller gives only tables without an INTEGER PRIMARY KEY (the rowid would be a
// column's value) and with values in INTEGER and TEXT columns only (REAL affinity stores values
// differently); SetTable checks that a record always fits a page (no overflow pages: the export's
// rows are integers and short constants). Memory: a page or two per table, 16 bytes per leaf (a
// day of history at 10k kernels/s: about a million leaves), per index up to kRunEntries entries
// (16 MiB) while rows arrive, and a run's coded bytes (at most 20 per entry, touched as written);
// at Finish a buffer of decoded entries per run (32 MiB in all up to 2,048 runs, one block that
// every index reuses) and about 30 bytes per index leaf. Disk: the leaves once (copied out, then
// freed) and the runs, delta-coded: at most 20 bytes per index entry, a few where keys are close
// (docs/DECODER.md has the figures).
// Single-threaded: the connection's owner calls it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cupmon/base/huge_pages.h"  // ByteBuffer

namespace cupmon::decoder {

class SqliteTablePages {
 public:
  // A column of a table, in the table's order, and where each row's value comes from.
  struct Column {
    enum Source : uint8_t { kCell, kNull, kInt, kText };
    Source source = kNull;
    int cell = 0;           // kCell: the row's cell; its value kNullCell is SQL NULL
    int64_t value = 0;      // kInt: the same in every row
    std::string text;       // kText: the same in every row
    bool not_null = false;  // NULL there fails the write, as SQLite's NOT NULL constraint does
    std::string name;       // for the message
  };
  static constexpr int64_t kNullCell = INT64_MIN;
  // An index entry: a row's value in the indexed column and its rowid.
  struct Entry {
    int64_t key, rowid;  // key kNullCell: NULL
  };

  // `fd`: an empty file opened for reading and writing, owned by the caller (the leaves go
  // there); `runs_fd`: another (sorted runs of index entries; -1: none, and an index must then
  // fit in memory); `page_size`: the database's; `reserved`: its bytes reserved per page (header
  // byte 20); `small_ints`: schema format 4 or more (0 and 1 stored in the record header alone,
  // as SQLite does there).
  SqliteTablePages(int fd, int runs_fd, uint32_t page_size, uint32_t reserved, bool small_ints);
  ~SqliteTablePages();
  SqliteTablePages(const SqliteTablePages&) = delete;
  SqliteTablePages& operator=(const SqliteTablePages&) = delete;

  // Table `id` (0-63) is written here from now on. False, with error(), when a column is of a
  // kind these pages cannot hold (see above).
  bool SetTable(int id, const std::string& name, std::vector<Column> columns);
  bool Has(int id) const { return id >= 0 && id < kMaxTables && tables_[id] != nullptr; }
  // An index `name` on table `id`'s column `column` (one that takes a cell), which SQLite
  // created, empty, before any row. Its entries (the value, the rowid) are kept as rows arrive,
  // sorted and written to runs_fd in runs of kRunEntries, and merged by Finish into an index
  // B-tree in the index's root page: SQLite's own order (NULL first, then by value, then by
  // rowid), so that SQLite searches it as the index it built would be searched.
  bool SetIndex(int id, const std::string& name, const std::string& column);
  static constexpr size_t kRunEntries = size_t{1} << 20;  // 16 MiB per index in memory
  void set_run_entries(size_t n) { run_entries_ = n; }     // smaller runs (tests)
  // Finish reads the runs back n bytes at a time (tests: entries cut by the reads; 0: as many
  // as 32 MiB over the runs allow, 4 KiB or more); at least 20, an entry's most.
  void set_read_bytes(size_t n) { read_bytes_ = n ? std::max<size_t>(n, 20) : 0; }
  // Rows `rows` of `stride` cells each, row after row, with the table's next rowids. False after
  // any error (the first one stays in error()).
  bool Append(int id, const int64_t* cells, size_t rows, int stride);
  // Moves the trees into the database `db_fd` (SQLite's file, closed by SQLite), whose page count
  // is `db_pages`; `roots`: each table's and index's root page by name (sqlite_schema.rootpage).
  // False, with error(), on a failed read or write; the database is not usable then.
  bool Finish(int db_fd, uint32_t db_pages, const std::map<std::string, uint32_t>& roots);
  const std::string& error() const { return error_; }
  uint64_t rows(int id) const;

 private:
  static constexpr int kMaxTables = 64;
  struct Table;
  struct Index;
  struct RunCoder;
  bool Spill(Index& x);
  class IndexMerge;     // BuildIndex's merge of an index's runs and memory buffer
  struct IndexDivider;  // an index cell that goes up a level
  bool BuildIndex(Index& x, int db_fd, uint64_t root_at, uint32_t* next_page);
  bool WriteIndexLevels(std::vector<uint32_t> children, std::vector<IndexDivider> dividers,
                        std::vector<uint8_t>& page, int db_fd, uint64_t root_at,
                        uint32_t* next_page);
  bool Fail(std::string what);
  bool PutCell(Table& t, const uint8_t* cell, size_t size, int64_t rowid);
  bool LeafFull(Table& t);
  bool WritePage(const uint8_t* page, uint64_t offset, int fd, const char* where);

  int fd_, runs_fd_;
  uint32_t page_size_, usable_;
  bool small_ints_;
  uint32_t leaves_ = 0;    // pages written to fd_
  uint64_t runs_end_ = 0;  // bytes written to runs_fd_
  size_t run_entries_ = kRunEntries;
  size_t read_bytes_ = 0;
  std::unique_ptr<Entry[]> read_buf_;  // BuildIndex's buffers for the runs' decoded entries
  size_t read_buf_size_ = 0;           // entries
  // A run's bytes: Spill's to write, BuildIndex's read; pages touched only as used.
  ByteBuffer spill_;
  std::unique_ptr<Table> tables_[kMaxTables];
  std::vector<std::unique_ptr<Index>> indexes_;
  std::string error_;
};

}  // namespace cupmon::decoder
