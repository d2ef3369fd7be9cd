// Table B-trees in SQLite's file format (https://www.sqlite.org/fileformat2.html), built without
// SQLite, for the SQLite export's batched tables: their rows only ever append (rowids 1, 2, 3, ...
// in the order given), so their leaves can be filled one after another and the tree above them
// built once, bottom up, where SQLite would run its bytecode and B-tree insert per row. Private to
// the decoder; sqlite_writer.cc drives it (docs/DECODER.md, "SQLite export").
//
// The leaves go to a file of their own while rows stream (an unlinked temporary: nothing is
// left behind), because the database's page count is known only once SQLite has written the
// rest. Finish then copies them to the database's end, writes the interior pages after them and
// each tree's top page into the (empty) root page SQLite gave the table when it created it, and
// updates the page count in the header. SQLite must have the database closed meanwhile; it reads
// the tables afterwards as its own (indexes, UPDATEs, queries).
//
// Limits, checked where a table is set: no INTEGER PRIMARY KEY (the rowid would be a column's
// value), no column of REAL affinity (SQLite stores those differently), records that fit a page
// (no overflow pages: the export's rows are integers and short constants). Memory: a page or two
// per table, and 12 bytes per leaf (a day of history: about 1.4 M leaves).
// Single-threaded: the connection's owner calls it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

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

  // `fd`: an empty file opened for reading and writing, owned by the caller (the leaves go
  // there); `page_size`: the database's; `reserved`: its bytes reserved per page (header byte
  // 20); `small_ints`: schema format 4 or more (0 and 1 stored in the record header alone, as
  // SQLite does there).
  SqliteTablePages(int fd, uint32_t page_size, uint32_t reserved, bool small_ints);
  ~SqliteTablePages();
  SqliteTablePages(const SqliteTablePages&) = delete;
  SqliteTablePages& operator=(const SqliteTablePages&) = delete;

  // Table `id` (0-63) is written here from now on. False, with error(), when a column is of a
  // kind these pages cannot hold (see above).
  bool SetTable(int id, const std::string& name, std::vector<Column> columns);
  bool Has(int id) const { return id >= 0 && id < kMaxTables && tables_[id] != nullptr; }
  // Rows `rows` of `stride` cells each, row after row, with the table's next rowids. False after
  // any error (the first one stays in error()).
  bool Append(int id, const int64_t* cells, size_t rows, int stride);
  // Moves the trees into the database `db_fd` (SQLite's file, closed by SQLite), whose page count
  // is `db_pages`; `roots`: each table's root page by name (sqlite_schema.rootpage). False, with
  // error(), on a failed read or write; the database is not usable then.
  bool Finish(int db_fd, uint32_t db_pages, const std::map<std::string, uint32_t>& roots);
  const std::string& error() const { return error_; }
  uint64_t rows(int id) const;

 private:
  static constexpr int kMaxTables = 64;
  struct Table;
  bool Fail(std::string what);
  bool PutCell(Table& t, const uint8_t* cell, size_t size, int64_t rowid);
  bool LeafFull(Table& t);
  bool WritePage(const uint8_t* page, uint64_t offset, int fd, const char* where);

  int fd_;
  uint32_t page_size_, usable_;
  bool small_ints_;
  uint32_t leaves_ = 0;  // pages written to fd_
  std::unique_ptr<Table> tables_[kMaxTables];
  std::string error_;
};

}  // namespace cupmon::decoder
