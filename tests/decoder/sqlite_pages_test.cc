// SqliteTablePages (decoder/src/export/sqlite/sqlite_pages.h): table B-trees written without
// SQLite, then read, searched, indexed, checked and appended to by SQLite itself. Small pages (512
// bytes) so that a few thousand rows make a tree of three levels. Built only where SQLite is.
#include "export/sqlite/sqlite_pages.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sqlite_test_db.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

using Column = SqliteTablePages::Column;
using testing::TempDir;

// Read-write: the tests go on writing through SQLite.
struct Db : testing::SqliteDb {
  explicit Db(const std::string& path)
      : SqliteDb(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {}
};

// A database of `page_size` with the tables of `creates`; returns its page count and the roots.
uint32_t MakeDb(const std::string& path, int page_size, const std::vector<std::string>& creates,
                std::map<std::string, uint32_t>* roots) {
  Db db(path);
  db.Exec("PRAGMA page_size = " + std::to_string(page_size));
  for (const std::string& c : creates) db.Exec(c);
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(raw, "SELECT name, rootpage FROM sqlite_master WHERE rootpage > 0", -1, &s,
                     nullptr);
  while (sqlite3_step(s) == SQLITE_ROW)
    (*roots)[reinterpret_cast<const char*>(sqlite3_column_text(s, 0))] =
        static_cast<uint32_t>(sqlite3_column_int64(s, 1));
  sqlite3_finalize(s);
  sqlite3_close(raw);
  return static_cast<uint32_t>(db.Int("PRAGMA page_count"));
}

// Moves `p`'s trees into the database at `path` (of `pages` pages, `roots` as MakeDb gave them)
// and closes the leaves' file `fd`.
void FinishInto(SqliteTablePages& p, const std::string& path, uint32_t pages,
                const std::map<std::string, uint32_t>& roots, int fd) {
  const int db_fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_TRUE(p.Finish(db_fd, pages, roots)) << p.error();
  close(db_fd);
  close(fd);
}

Column Cell(const char* name, int cell, bool not_null = false) {
  Column c;
  c.source = Column::kCell;
  c.cell = cell;
  c.name = name;
  c.not_null = not_null;
  return c;
}
Column Const(const char* name, Column::Source source, int64_t value, std::string text = {}) {
  Column c;
  c.source = source;
  c.value = value;
  c.text = std::move(text);
  c.name = name;
  return c;
}

// Values that take every integer serial type, both signs, 0 and 1 (stored in the header alone).
int64_t ValueOf(int64_t i) {
  static const int64_t kEdges[] = {0,
                                   1,
                                   -1,
                                   127,
                                   128,
                                   -129,
                                   32767,
                                   -32769,
                                   8388607,
                                   8388608,
                                   INT32_MAX,
                                   int64_t{INT32_MIN} - 1,
                                   (int64_t{1} << 47) - 1,
                                   -(int64_t{1} << 47) - 1,
                                   INT64_MAX,
                                   INT64_MIN + 1};
  constexpr int64_t kCount = sizeof kEdges / sizeof kEdges[0];
  return i % 3 == 0 ? kEdges[i % kCount] : i * 7919;
}

TEST(SqliteTablePagesTest, ThreeLevelsOfPagesReadBackThroughSqlite) {
  TempDir dir;
  const std::string path = dir.path() + "/t.sqlite";
  std::map<std::string, uint32_t> roots;
  const uint32_t pages = MakeDb(path, 512,
                                {"CREATE TABLE t (a INTEGER NOT NULL, b INTEGER, c TEXT NOT NULL, "
                                 "d INTEGER, e INTEGER)",
                                 "CREATE TABLE one (x INTEGER)", "CREATE TABLE none (x INTEGER)"},
                                &roots);
  const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  SqliteTablePages p(fd, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(0, "t",
                         {Cell("a", 1, true), Cell("b", 0), Const("c", Column::kText, 0, "txt"),
                          Const("d", Column::kInt, 7), Const("e", Column::kNull, 0)}))
      << p.error();
  ASSERT_TRUE(p.SetTable(1, "one", {Cell("x", 0)}));
  ASSERT_TRUE(p.SetTable(2, "none", {Cell("x", 0)}));
  // 20,000 rows in batches of 1 to 999 rows; b is NULL in every 5th row.
  constexpr int64_t kRows = 20'000;
  std::vector<int64_t> cells;
  int64_t done = 0;
  for (int batch = 1; done < kRows; batch = batch * 7 % 1000 + 1) {
    const int64_t n = std::min<int64_t>(batch, kRows - done);
    cells.clear();
    for (int64_t i = done; i < done + n; ++i) {
      cells.push_back(i % 5 == 0 ? SqliteTablePages::kNullCell : -ValueOf(i + 1));
      cells.push_back(ValueOf(i));
      cells.push_back(99);  // a cell no column reads
    }
    ASSERT_TRUE(p.Append(0, cells.data(), static_cast<size_t>(n), 3)) << p.error();
    done += n;
  }
  const int64_t one[] = {42};
  ASSERT_TRUE(p.Append(1, one, 1, 1));
  EXPECT_EQ(p.rows(0), static_cast<uint64_t>(kRows));
  FinishInto(p, path, pages, roots, fd);

  Db db(path);
  EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
  // Leaves, interior pages and a root above them.
  EXPECT_EQ(db.Int("SELECT MAX(length(path) - length(replace(path, '/', ''))) FROM dbstat WHERE "
                   "name = 't'"),
            3);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t"), kRows);
  EXPECT_EQ(db.Int("SELECT MIN(rowid) FROM t"), 1);
  EXPECT_EQ(db.Int("SELECT MAX(rowid) FROM t"), kRows);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t WHERE c != 'txt' OR d != 7 OR e IS NOT NULL"), 0);
  EXPECT_EQ(db.Text("SELECT typeof(c) || typeof(d) || typeof(e) FROM t WHERE rowid = 1"),
            "textintegernull");
  // Every row as written, in rowid order (rowid i + 1 for row i).
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT rowid, a, b FROM t ORDER BY rowid", -1, &s, nullptr),
              SQLITE_OK);
    int64_t i = 0, wrong = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
      const bool null_b = sqlite3_column_type(s, 2) == SQLITE_NULL;
      if (sqlite3_column_int64(s, 0) != i + 1 || sqlite3_column_int64(s, 1) != ValueOf(i) ||
          null_b != (i % 5 == 0) || (!null_b && sqlite3_column_int64(s, 2) != -ValueOf(i + 1)))
        ++wrong;
      ++i;
    }
    sqlite3_finalize(s);
    sqlite3_close(raw);
    EXPECT_EQ(i, kRows);
    EXPECT_EQ(wrong, 0);
  }
  // Rowid searches descend through the interior pages.
  for (int64_t r : {int64_t{1}, int64_t{2}, int64_t{777}, int64_t{12'345}, kRows})
    EXPECT_EQ(db.Int("SELECT a FROM t WHERE rowid = " + std::to_string(r)), ValueOf(r - 1)) << r;
  EXPECT_EQ(db.Text("SELECT a FROM t WHERE rowid = 20001"), "");
  EXPECT_EQ(db.Int("SELECT x FROM one"), 42);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM none"), 0);
  // SQLite takes the trees as its own: an index over them, rows added, still sound.
  db.Exec("CREATE INDEX t_a ON t (a)");
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t INDEXED BY t_a WHERE a = " + std::to_string(INT64_MAX)),
            db.Int("SELECT COUNT(*) FROM t NOT INDEXED WHERE a = " + std::to_string(INT64_MAX)));
  db.Exec("INSERT INTO t (a, c) SELECT a, c FROM t WHERE rowid <= 3000");
  db.Exec("INSERT INTO one VALUES (43)");
  db.Exec("DELETE FROM t WHERE rowid % 2 = 0");
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t"), (kRows + 3000) / 2);
  EXPECT_EQ(db.Int("SELECT SUM(x) FROM one"), 85);
  EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
}

TEST(SqliteTablePagesTest, ConstantsAndNullsBeyondOneStepAreWrittenWhole) {
  // Append encodes neighbouring NULLs and constants beforehand, in steps of at most 32 serial-type
  // and 32 body bytes: here 40 NULLs in a row, texts of 0, 33 and 100 bytes, integer constants of
  // every size, between cells. SQLite's own INSERT of the same rows into `ref` must give the same
  // table, row by row.
  TempDir dir;
  const std::string path = dir.path() + "/t.sqlite";
  std::string columns = "a INTEGER";
  std::vector<Column> pages_columns{Cell("a", 0)};
  std::vector<std::string> names{"a"};
  std::vector<std::string> constants{"?1"};  // the INSERT's values; cells are ?1, ?2, ?3
  const auto add = [&](const std::string& name, const std::string& type, Column c,
                       const std::string& sql) {
    columns += ", " + name + " " + type;
    c.name = name;
    pages_columns.push_back(c);
    names.push_back(name);
    constants.push_back(sql);
  };
  for (int i = 0; i < 40; ++i)
    add("n" + std::to_string(i), "INTEGER", Const("", Column::kNull, 0), "NULL");
  std::string hundred;
  for (int i = 0; i < 10; ++i) hundred += "0123456789";
  add("t100", "TEXT", Const("", Column::kText, 0, hundred), "'" + hundred + "'");
  for (int i = 0; i < 16; ++i) {
    const int64_t v = ValueOf(3 * i);  // the edges: every integer size, 0 and 1
    add("k" + std::to_string(i), "INTEGER", Const("", Column::kInt, v), std::to_string(v));
  }
  add("b", "INTEGER", Cell("b", 1), "?2");
  add("t0", "TEXT", Const("", Column::kText, 0, ""), "''");
  add("n40", "INTEGER", Const("", Column::kNull, 0), "NULL");
  add("t33", "TEXT", Const("", Column::kText, 0, hundred.substr(0, 33)),
      "'" + hundred.substr(0, 33) + "'");
  add("c", "INTEGER", Cell("c", 2), "?3");
  std::map<std::string, uint32_t> roots;
  const uint32_t pages =
      MakeDb(path, 4096, {"CREATE TABLE t (" + columns + ")", "CREATE TABLE ref (" + columns + ")"},
             &roots);
  const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  SqliteTablePages p(fd, -1, 4096, 0, true);
  ASSERT_TRUE(p.SetTable(0, "t", pages_columns)) << p.error();
  constexpr int64_t kRows = 3'000;
  std::vector<int64_t> cells;
  for (int64_t i = 0; i < kRows; ++i) {
    cells.push_back(ValueOf(i));
    cells.push_back(i % 7 == 0 ? SqliteTablePages::kNullCell : -ValueOf(i + 1));
    cells.push_back(i);
  }
  ASSERT_TRUE(p.Append(0, cells.data(), kRows, 3)) << p.error();
  FinishInto(p, path, pages, roots, fd);

  Db db(path);
  EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
  std::string values;
  for (const std::string& v : constants) values += (values.empty() ? "" : ", ") + v;
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(
      sqlite3_prepare_v2(raw, ("INSERT INTO ref VALUES (" + values + ")").c_str(), -1, &s, nullptr),
      SQLITE_OK)
      << sqlite3_errmsg(raw);
  ASSERT_EQ(sqlite3_exec(raw, "BEGIN", nullptr, nullptr, nullptr), SQLITE_OK);
  for (int64_t i = 0; i < kRows; ++i) {
    for (int k = 0; k < 3; ++k) {
      const int64_t v = cells[static_cast<size_t>(3 * i + k)];
      if (v == SqliteTablePages::kNullCell)
        sqlite3_bind_null(s, k + 1);
      else
        sqlite3_bind_int64(s, k + 1, v);
    }
    ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_reset(s);
  }
  sqlite3_finalize(s);
  ASSERT_EQ(sqlite3_exec(raw, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t"), kRows);
  // Row by row and column by column, by value and by storage class (typeof).
  std::string typed;
  for (const std::string& n : names)
    typed += (typed.empty() ? "" : ", ") + n + ", typeof(" + n + ")";
  const std::string both = "SELECT rowid, " + typed + " FROM ";
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM (" + both + "t EXCEPT " + both + "ref)"), 0);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM (" + both + "ref EXCEPT " + both + "t)"), 0);
  EXPECT_EQ(db.Text("SELECT t100 || t0 || t33 FROM t WHERE rowid = 77"),
            hundred + hundred.substr(0, 33));
}

TEST(SqliteTablePagesTest, IndexesMergedFromRunsAreTheIndexesSqliteWouldBuild) {
  // Two indexes on one table, built from sorted runs of 1,000 entries (spilled to a file) and
  // merged: values out of order, repeated, negative, NULL. integrity_check compares every
  // index entry with its row; the queries search through each index.
  // The runs are read back as Finish reads them (chunks of many entries), and 20 and 37 bytes at
  // a time: entries cut by the reads.
  for (const size_t read_bytes : {size_t{0}, size_t{20}, size_t{37}}) {
    SCOPED_TRACE(read_bytes);
    TempDir dir;
    const std::string path = dir.path() + "/t.sqlite";
    std::map<std::string, uint32_t> roots;
    const uint32_t pages =
        MakeDb(path, 512,
               {"CREATE TABLE t (a INTEGER, b INTEGER NOT NULL, c INTEGER)",
                "CREATE TABLE small (x INTEGER)", "CREATE INDEX t_a ON t (a)",
                "CREATE INDEX t_b ON t (b)", "CREATE INDEX small_x ON small (x)",
                "CREATE TABLE empty (x INTEGER)", "CREATE INDEX empty_x ON empty (x)"},
               &roots);
    const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    const int runs = open((dir.path() + "/runs").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(runs, 0);
    SqliteTablePages p(fd, runs, 512, 0, true);
    p.set_run_entries(1000);
    p.set_read_bytes(read_bytes);
    ASSERT_TRUE(p.SetTable(0, "t", {Cell("a", 0), Cell("b", 1, true), Cell("c", 2)}));
    ASSERT_TRUE(p.SetTable(1, "small", {Cell("x", 0)}));
    ASSERT_TRUE(p.SetTable(2, "empty", {Cell("x", 0)}));
    ASSERT_TRUE(p.SetIndex(0, "t_a", "a"));
    ASSERT_TRUE(p.SetIndex(0, "t_b", "b"));
    ASSERT_TRUE(p.SetIndex(1, "small_x", "x"));
    ASSERT_TRUE(p.SetIndex(2, "empty_x", "x"));
    constexpr int64_t kRows = 20'000;
    uint64_t state = 88172645463325252u;  // xorshift64: the same rows every run
    std::vector<int64_t> cells;
    std::map<int64_t, int64_t> b_counts;
    for (int64_t i = 0; i < kRows; ++i) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const int64_t r = static_cast<int64_t>(state % 5000) - 2500;
      cells.push_back(i % 11 == 0 ? SqliteTablePages::kNullCell : ValueOf(r + 2500));  // a
      cells.push_back(r);                                                              // b
      cells.push_back(i);                                                              // c
      ++b_counts[r];
    }
    for (size_t at = 0; at < cells.size(); at += 3 * 777) {
      const size_t n = std::min<size_t>(777, (cells.size() - at) / 3);
      ASSERT_TRUE(p.Append(0, cells.data() + at, n, 3)) << p.error();
    }
    const int64_t small[] = {3, SqliteTablePages::kNullCell, 1};
    ASSERT_TRUE(p.Append(1, small, 3, 1));
    FinishInto(p, path, pages, roots, fd);
    close(runs);

    Db db(path);
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
    // Each index at least three levels deep (a root, interior pages, leaves; dbstat's paths: "/",
    // "/000/", "/000/000/").
    for (const char* index : {"t_a", "t_b"})
      EXPECT_GE(db.Int(std::string("SELECT MAX(length(path) - length(replace(path, '/', ''))) FROM "
                                   "dbstat WHERE name = '") +
                       index + "'"),
                3)
          << index;
    // Searches through each index agree with scans of the table.
    for (int64_t b : {int64_t{-2500}, int64_t{-1}, int64_t{0}, int64_t{1234}, int64_t{2499}}) {
      const std::string where = " WHERE b = " + std::to_string(b);
      EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t INDEXED BY t_b" + where), b_counts[b]) << b;
      EXPECT_EQ(db.Text("SELECT group_concat(c) FROM (SELECT c FROM t INDEXED BY t_b" + where +
                        " ORDER BY c)"),
                db.Text("SELECT group_concat(c) FROM (SELECT c FROM t NOT INDEXED" + where +
                        " ORDER BY c)"));
    }
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t INDEXED BY t_a WHERE a IS NULL"), (kRows + 10) / 11);
    EXPECT_EQ(db.Text("SELECT group_concat(a) FROM (SELECT a FROM t INDEXED BY t_a WHERE a > 0 "
                      "ORDER BY a LIMIT 50)"),
              db.Text("SELECT group_concat(a) FROM (SELECT a FROM t NOT INDEXED WHERE a > 0 "
                      "ORDER BY a LIMIT 50)"));
    // The index's own order is SQLite's: NULL, then values, then rowids.
    EXPECT_EQ(db.Text("SELECT group_concat(quote(x)) FROM (SELECT x FROM small INDEXED BY small_x "
                      "ORDER BY x)"),
              "NULL,1,3");
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM empty INDEXED BY empty_x"), 0);
    // SQLite goes on with them: rows added and removed through the indexes.
    db.Exec("INSERT INTO t SELECT a, b + 1, c FROM t WHERE c % 3 = 0");
    db.Exec("DELETE FROM t WHERE b BETWEEN 100 AND 400");
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
  }
}

TEST(SqliteTablePagesTest, RanksOneAfterAnotherMergeIntoOneIndex) {
  // Rows as a job's ranks give them: rank after rank, each in order of its own values, with one
  // row out of order per rank. The entries are a few sorted stretches, which are merged rather
  // than sorted; in memory alone (runs of 1 M) and through runs of 700 that cut the stretches.
  for (const size_t run_entries : {SqliteTablePages::kRunEntries, size_t{700}}) {
    TempDir dir;
    const std::string path = dir.path() + "/t.sqlite";
    std::map<std::string, uint32_t> roots;
    const uint32_t pages = MakeDb(
        path, 512, {"CREATE TABLE t (a INTEGER, r INTEGER)", "CREATE INDEX t_a ON t (a)"}, &roots);
    const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    const int runs = open((dir.path() + "/runs").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    SqliteTablePages p(fd, runs, 512, 0, true);
    p.set_run_entries(run_entries);
    ASSERT_TRUE(p.SetTable(0, "t", {Cell("a", 0), Cell("r", 1)}));
    ASSERT_TRUE(p.SetIndex(0, "t_a", "a"));
    constexpr int64_t kRanks = 5, kPerRank = 1500;
    std::vector<int64_t> cells;
    for (int64_t r = 0; r < kRanks; ++r) {
      for (int64_t i = 0; i < kPerRank; ++i) {
        cells.push_back(i == 700 ? -5 : i * 3 + r % 3);  // ranks' values interleave; -5 early
        cells.push_back(r);
      }
    }
    ASSERT_TRUE(p.Append(0, cells.data(), cells.size() / 2, 2)) << p.error();
    FinishInto(p, path, pages, roots, fd);
    close(runs);
    Db db(path);
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok") << run_entries;
    const std::string order = "SELECT group_concat(rowid) FROM (SELECT rowid FROM t ";
    EXPECT_EQ(db.Text(order + "INDEXED BY t_a ORDER BY a, rowid)"),
              db.Text(order + "NOT INDEXED ORDER BY a, rowid)"));
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t INDEXED BY t_a WHERE a = -5"), kRanks);
  }
}

TEST(SqliteTablePagesTest, AnIndexOnAColumnTheRowsDoNotGiveIsRefused) {
  SqliteTablePages p(-1, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(0, "t", {Cell("a", 0), Const("d", Column::kInt, 4)}));
  EXPECT_FALSE(p.SetIndex(0, "t_d", "d"));
  EXPECT_EQ(p.error(), "index t_d is on t.d, which is not a column the rows give");
  SqliteTablePages q(-1, -1, 512, 0, true);
  EXPECT_FALSE(q.SetIndex(5, "u_a", "a"));
  EXPECT_EQ(q.error(), "index u_a is on a table the pages do not hold");
  // Entries beyond a run with no file for runs.
  SqliteTablePages r(-1, -1, 512, 0, true);
  r.set_run_entries(4);
  ASSERT_TRUE(r.SetTable(0, "t", {Cell("a", 0)}));
  ASSERT_TRUE(r.SetIndex(0, "t_a", "a"));
  const int64_t cells[] = {1, 2, 3, 4, 5};
  EXPECT_FALSE(r.Append(0, cells, 5, 1));
  EXPECT_EQ(r.error(), "index t_a has more entries than memory holds and no file for runs");
}

TEST(SqliteTablePagesTest, ANullInANotNullColumnFailsNamingIt) {
  TempDir dir;
  const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  SqliteTablePages p(fd, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(3, "t", {Cell("a", 0, true)}));
  const int64_t cells[] = {5, SqliteTablePages::kNullCell};
  EXPECT_FALSE(p.Append(3, cells, 2, 1));
  EXPECT_EQ(p.error(), "writing t: NOT NULL constraint failed: t.a");
  EXPECT_FALSE(p.Append(3, cells, 1, 1));  // nothing more after a failure
  close(fd);
}

TEST(SqliteTablePagesTest, TablesItCannotHoldAreRefusedWhenSet) {
  SqliteTablePages p(-1, -1, 512, 0, true);
  EXPECT_FALSE(p.SetTable(0, "wide", {Const("c", Column::kText, 0, std::string(600, 'x'))}));
  EXPECT_EQ(p.error(), "the rows of wide may not fit a page of 512 bytes");
  SqliteTablePages q(-1, -1, 512, 0, true);
  Column no_value = Const("a", Column::kNull, 0);
  no_value.not_null = true;
  EXPECT_FALSE(q.SetTable(1, "u", {no_value}));
  EXPECT_EQ(q.error(), "u.a is NOT NULL and has no value");
  SqliteTablePages r(-1, -1, 1000, 0, true);
  EXPECT_FALSE(r.SetTable(0, "t", {Cell("a", 0)}));
  EXPECT_EQ(r.error(), "unusable page size 1000");
  SqliteTablePages s(-1, -1, 512, 0, true);
  ASSERT_TRUE(s.SetTable(0, "t", {Cell("a", 2)}));
  const int64_t cells[] = {1, 2};
  EXPECT_FALSE(s.Append(0, cells, 1, 2));
  EXPECT_EQ(s.error(), "rows of t have 2 cells, fewer than its columns read");
}

TEST(SqliteTablePagesTest, ADatabaseOfAnotherPageSizeIsRefusedAndLeftAsItWas) {
  TempDir dir;
  const std::string path = dir.path() + "/t.sqlite";
  std::map<std::string, uint32_t> roots;
  const uint32_t pages = MakeDb(path, 1024, {"CREATE TABLE t (a INTEGER)"}, &roots);
  const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  SqliteTablePages p(fd, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(0, "t", {Cell("a", 0)}));
  std::vector<int64_t> cells(1000, 5);
  ASSERT_TRUE(p.Append(0, cells.data(), cells.size(), 1));
  const int db_fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_FALSE(p.Finish(db_fd, pages, roots));
  EXPECT_EQ(p.error(),
            "the database's header does not match the table pages (page size, reserved bytes, "
            "schema format or text encoding)");
  close(db_fd);
  close(fd);
  Db db(path);
  EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM t"), 0);
}

TEST(SqliteTablePagesTest, ATableTheDatabaseLacksIsNamed) {
  TempDir dir;
  const std::string path = dir.path() + "/t.sqlite";
  std::map<std::string, uint32_t> roots;
  const uint32_t pages = MakeDb(path, 512, {"CREATE TABLE t (a INTEGER)"}, &roots);
  const int fd = open((dir.path() + "/leaves").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  SqliteTablePages p(fd, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(0, "elsewhere", {Cell("a", 0)}));
  const int64_t one[] = {1};
  ASSERT_TRUE(p.Append(0, one, 1, 1));
  const int db_fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  EXPECT_FALSE(p.Finish(db_fd, pages, roots));
  EXPECT_EQ(p.error(), "the database has no root page for elsewhere");
  close(db_fd);
  close(fd);
}

TEST(SqliteTablePagesTest, AFullDiskFailsWithTheReason) {
  const int fd = open("/dev/full", O_RDWR | O_CLOEXEC);
  if (fd < 0) GTEST_SKIP() << "no /dev/full here";
  SqliteTablePages p(fd, -1, 512, 0, true);
  ASSERT_TRUE(p.SetTable(0, "t", {Cell("a", 0)}));
  // Enough rows for three leaves: the first is held (it may be the root), the second is written.
  std::vector<int64_t> cells(300, 1234567);
  EXPECT_FALSE(p.Append(0, cells.data(), cells.size(), 1));
  EXPECT_EQ(p.error(), "writing the table pages: No space left on device");
  close(fd);
}

}  // namespace
}  // namespace cupmon::decoder
