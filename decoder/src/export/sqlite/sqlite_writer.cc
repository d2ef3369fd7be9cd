// The SQLite export's writer side (see sqlite_sink.h): one connection per writer thread, which
// hands each batch of rows to the table pages (sqlite_pages.h) or turns it into one INSERT
// INTO T SELECT ... FROM cupmon_batch. The caller's side, rows into batches and Close, is
// sqlite_sink.cc; the hand-over of the batches, sqlite_batches.cc.
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "export/sqlite/nsys_schema.h"
#include "export/sqlite/sqlite_sink.h"
#include "export/sqlite/sqlite_tables.h"

namespace cupmon::decoder {
namespace {

// cupmon_batch: an eponymous virtual table (SQLite's public API) whose rows are the cells of the
// batch its connection is inserting (SqliteConnection::batch), so that one INSERT INTO T SELECT ... FROM
// cupmon_batch writes a whole batch. Against multi-row INSERTs of bound parameters (20 binds, 20
// OP_Variable and 24 OP_SCopy per kernel row), a row here costs 20 OP_VColumn calls into
// BatchColumn and no copies: with the SELECT list in the table's column order and no column
// list, SQLite builds the record in the registers the SELECT fills. Nothing of it is stored in
// the database (an eponymous table has no schema entry).
struct BatchTable {
  sqlite3_vtab base;
  const SqliteBatchView* view;
};
struct BatchCursor {
  sqlite3_vtab_cursor base;
  const SqliteBatchView* view;
  size_t row;
};

int BatchConnect(sqlite3* db, void* view, int, const char* const*, sqlite3_vtab** out, char**) {
  std::string declare = "CREATE TABLE x(";
  for (int c = 0; c < kMaxCells; ++c) declare += (c ? ", c" : "c") + std::to_string(c);
  declare += ")";
  const int rc = sqlite3_declare_vtab(db, declare.c_str());
  if (rc != SQLITE_OK) return rc;
  auto* t = static_cast<BatchTable*>(sqlite3_malloc(sizeof(BatchTable)));
  if (!t) return SQLITE_NOMEM;
  std::memset(t, 0, sizeof *t);
  t->view = static_cast<const SqliteBatchView*>(view);
  *out = &t->base;
  return SQLITE_OK;
}
int BatchDisconnect(sqlite3_vtab* t) {
  sqlite3_free(t);
  return SQLITE_OK;
}
int BatchBestIndex(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = static_cast<double>(kBatchRows);
  info->estimatedRows = static_cast<sqlite3_int64>(kBatchRows);
  return SQLITE_OK;
}
int BatchOpen(sqlite3_vtab* t, sqlite3_vtab_cursor** out) {
  auto* c = static_cast<BatchCursor*>(sqlite3_malloc(sizeof(BatchCursor)));
  if (!c) return SQLITE_NOMEM;
  std::memset(c, 0, sizeof *c);
  c->view = reinterpret_cast<BatchTable*>(t)->view;
  *out = &c->base;
  return SQLITE_OK;
}
int BatchClose(sqlite3_vtab_cursor* c) {
  sqlite3_free(c);
  return SQLITE_OK;
}
int BatchFilter(sqlite3_vtab_cursor* c, int, const char*, int, sqlite3_value**) {
  reinterpret_cast<BatchCursor*>(c)->row = 0;
  return SQLITE_OK;
}
int BatchNext(sqlite3_vtab_cursor* c) {
  ++reinterpret_cast<BatchCursor*>(c)->row;
  return SQLITE_OK;
}
int BatchEof(sqlite3_vtab_cursor* c) {
  const auto* cur = reinterpret_cast<BatchCursor*>(c);
  return cur->row >= cur->view->rows;
}
int BatchColumn(sqlite3_vtab_cursor* c, sqlite3_context* ctx, int column) {
  const auto* cur = reinterpret_cast<BatchCursor*>(c);
  const SqliteBatchView& v = *cur->view;
  // The INSERTs name only the columns their table has cells for.
  if (column >= v.columns) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  const int64_t cell = v.cells[cur->row * static_cast<size_t>(v.columns) + column];
  if (cell == kNull) sqlite3_result_null(ctx);
  else sqlite3_result_int64(ctx, cell);
  return SQLITE_OK;
}
int BatchRowid(sqlite3_vtab_cursor* c, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(reinterpret_cast<BatchCursor*>(c)->row);
  return SQLITE_OK;
}
// Eponymous only (no xCreate), read only; the members SQLite versions add stay null.
const sqlite3_module kBatchModule = [] {
  sqlite3_module m{};
  m.xConnect = BatchConnect;
  m.xBestIndex = BatchBestIndex;
  m.xDisconnect = BatchDisconnect;
  m.xOpen = BatchOpen;
  m.xClose = BatchClose;
  m.xFilter = BatchFilter;
  m.xNext = BatchNext;
  m.xEof = BatchEof;
  m.xColumn = BatchColumn;
  m.xRowid = BatchRowid;
  return m;
}();

// "a, b, c" -> {"a", "b", "c"}
std::vector<std::string> SplitList(std::string_view list) {
  std::vector<std::string> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

// ---- a connection ----

bool SqliteConnection::Open(const std::string& file) {
  const int rc = sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
  if (rc != SQLITE_OK) {
    error = "cannot open " + file + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    failed->store(true, std::memory_order_relaxed);
    return false;
  }
  // One writer and no reader until the rename: no journal, no syncs, one transaction. Large
  // pages: fewer page splits as rows append.
  Exec("PRAGMA page_size = 65536");
  Exec("PRAGMA journal_mode = OFF");
  Exec("PRAGMA synchronous = OFF");
  Exec("PRAGMA locking_mode = EXCLUSIVE");
  Exec(kCacheRows);
  if (sqlite3_create_module_v2(db, "cupmon_batch", &kBatchModule, &batch, nullptr) != SQLITE_OK) {
    Fail("registering the cupmon_batch virtual table");
    return false;
  }
  return Exec("BEGIN");
}

void SqliteConnection::Fail(const std::string& what) {
  if (!error.empty()) return;
  error = what;
  if (db && sqlite3_errcode(db) != SQLITE_OK && sqlite3_errcode(db) != SQLITE_DONE)
    error += std::string(": ") + sqlite3_errmsg(db);
  failed->store(true, std::memory_order_relaxed);
}

bool SqliteConnection::Exec(const std::string& sql) {
  if (!error.empty()) return false;
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) {
    error = std::string(msg ? msg : "error") + " (in: " + sql.substr(0, 60) + ")";
    sqlite3_free(msg);
    failed->store(true, std::memory_order_relaxed);
    return false;
  }
  return true;
}

int64_t SqliteConnection::PragmaInt(const char* pragma) {
  sqlite3_stmt* s = nullptr;
  int64_t value = 0;
  if (sqlite3_prepare_v2(db, pragma, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    value = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return value;
}

bool SqliteConnection::IndexForPages(const nsys::Index& index) {
  int table = -1;
  for (int t = 0; t < SqliteBatch::kTableCount; ++t)
    if (std::string_view(index.table) == kBatched[t].table) table = t;
  if (!pages->Has(table)) return false;
  if (!Exec(nsys::CreateIndex(index))) return false;
  if (!pages->SetIndex(table, index.name, index.column)) {
    Fail(pages->error());
    return false;
  }
  indexes_made.insert(index.name);
  return true;
}

std::vector<std::string> SqliteSink::PagedTables() const {
  std::vector<std::string> names;
  const SqliteConnection& main = conns_[kMain];
  for (int t = 0; t < SqliteBatch::kTableCount; ++t)
    if (main.pages && main.pages->Has(t)) names.emplace_back(kBatched[t].table);
  return names;
}

std::vector<std::string> SqliteSink::PagedIndexes() const {
  const std::set<std::string>& made = conns_[kMain].indexes_made;
  return {made.begin(), made.end()};
}

bool SqliteConnection::MovePagesIn() {
  if (!Exec("COMMIT")) return false;
  // Where the pages go: after the database's last page, and into each table's root page.
  const auto page_count = static_cast<uint32_t>(PragmaInt("PRAGMA page_count"));
  std::map<std::string, uint32_t> roots;
  sqlite3_stmt* s = nullptr;
  constexpr const char* kRoots =
      "SELECT name, rootpage FROM sqlite_master WHERE type IN ('table', 'index')";
  if (sqlite3_prepare_v2(db, kRoots, -1, &s, nullptr) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW) {
      const auto* name = sqlite3_column_text(s, 0);
      if (name) roots[reinterpret_cast<const char*>(name)] =
                    static_cast<uint32_t>(sqlite3_column_int64(s, 1));
    }
  }
  sqlite3_finalize(s);
  if (page_count == 0 || roots.empty()) {
    Fail("reading the page count and root pages of " + path);
    return false;
  }
  CloseDb();
  if (!error.empty()) return false;
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    Fail("opening " + path + " again: " + std::strerror(errno));
    return false;
  }
  const bool moved = pages->Finish(fd, page_count, roots);
  if (close(fd) != 0 && moved) {
    Fail("writing " + path + ": " + std::strerror(errno));
    return false;
  }
  if (!moved) {
    Fail(pages->error());
    return false;
  }
  return Open(path);
}

void SqliteConnection::Finalize() {
  for (auto& shapes : inserts) {
    for (auto& [shape, s] : shapes) sqlite3_finalize(s);
    shapes.clear();
  }
}

void SqliteConnection::CloseDb() {
  Finalize();
  if (db && sqlite3_close(db) != SQLITE_OK) Fail("closing " + path);
  db = nullptr;
}

bool SqliteConnection::CreateNvtxTables() {
  for (const nsys::Table& t : nsys::NvtxTables()) Exec(t.create);
  for (const nsys::EnumRow& row : nsys::NvtxEnumRows()) {
    char* sql = sqlite3_mprintf("INSERT INTO %s (id, name, label) VALUES (%d, %Q, %Q)", row.table,
                                row.id, row.name, row.label);
    Exec(sql);
    sqlite3_free(sql);
  }
  nvtx = true;
  return error.empty() && PrepareInsert(SqliteBatch::kNvtx);
}

bool SqliteConnection::PrepareInsert(int t) {
  const BatchedTable& bt = kBatched[t];
  // The SELECT list in the table's column order (PRAGMA table_info), no column list: SQLite
  // then builds each record in the registers the SELECT fills.
  const std::vector<std::string> named = SplitList(bt.columns);
  const std::vector<std::string> fixed = SplitList(bt.fixed);
  if (named.size() != static_cast<size_t>(bt.count) + fixed.size() || bt.count > kMaxCells) {
    Fail(std::string("the column list of ") + bt.table + " does not match its values");
    return false;
  }
  sqlite3_stmt* info = nullptr;
  if (sqlite3_prepare_v2(db, (std::string("PRAGMA table_info(") + bt.table + ")").c_str(), -1,
                         &info, nullptr) != SQLITE_OK) {
    Fail(std::string("reading the columns of ") + bt.table);
    return false;
  }
  std::vector<Slot>& slots = select[t];
  slots.clear();
  size_t found = 0;
  // The same columns for the pages, while the table is one they can hold.
  std::vector<SqliteTablePages::Column> columns;
  bool pageable = pages != nullptr;
  while (sqlite3_step(info) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(info, 1);
    const std::string column = text ? reinterpret_cast<const char*>(text) : "";
    const auto* type_text = sqlite3_column_text(info, 2);
    const std::string type = type_text ? reinterpret_cast<const char*>(type_text) : "";
    SqliteTablePages::Column& c = columns.emplace_back();
    c.name = column;
    c.not_null = sqlite3_column_int(info, 3) != 0;
    // A primary key (an INTEGER one is the rowid) leaves the table to SQLite, and so does a
    // value for anything but an INTEGER or TEXT column (affinity rules beyond what the pages
    // do; NULL is NULL in any column).
    if (sqlite3_column_int(info, 5) != 0) pageable = false;
    const auto it = std::find(named.begin(), named.end(), column);
    if (it == named.end()) {
      slots.push_back(Slot{-1, "NULL"});
      continue;
    }
    if (type != "INTEGER" && type != "TEXT") pageable = false;
    ++found;
    const size_t at = static_cast<size_t>(it - named.begin());
    if (at < static_cast<size_t>(bt.count)) {
      slots.push_back(Slot{static_cast<int>(at), {}});
      c.source = SqliteTablePages::Column::kCell;
      c.cell = static_cast<int>(at);
      if (type != "INTEGER") pageable = false;
      continue;
    }
    const std::string& value = fixed[at - bt.count];
    slots.push_back(Slot{-1, value});
    // The constants the export uses: integers into INTEGER columns, '' into TEXT ones.
    if (value == "''" && type == "TEXT") {
      c.source = SqliteTablePages::Column::kText;
    } else if (const auto [end, ec] =
                   std::from_chars(value.data(), value.data() + value.size(), c.value);
               ec == std::errc() && end == value.data() + value.size() && type == "INTEGER") {
      c.source = SqliteTablePages::Column::kInt;
    } else {
      pageable = false;
    }
  }
  sqlite3_finalize(info);
  if (found != named.size()) {
    Fail(std::string("columns named for ") + bt.table + " that it does not have");
    return false;
  }
  if (pageable && !pages->SetTable(t, bt.table, std::move(columns))) {
    Fail(pages->error());
    return false;
  }
  return InsertFor(t, 0) != nullptr;
}

sqlite3_stmt* SqliteConnection::InsertFor(int t, uint32_t shape) {
  auto& shapes = inserts[t];
  if (const auto it = shapes.find(shape); it != shapes.end()) return it->second;
  if (shape != 0 && shapes.size() >= kMaxShapes) return InsertFor(t, 0);
  std::string sql = std::string("INSERT INTO ") + kBatched[t].table + " SELECT ";
  bool first = true;
  for (const Slot& slot : select[t]) {
    sql += first ? "" : ", ";
    first = false;
    if (slot.cell < 0) sql += slot.text;
    else sql += (shape >> slot.cell & 1 ? "?" + std::to_string(slot.cell + 1)
                                        : "c" + std::to_string(slot.cell));
  }
  sql += " FROM cupmon_batch";
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) !=
      SQLITE_OK) {
    Fail(std::string("preparing the INSERT into ") + kBatched[t].table);
    return nullptr;
  }
  shapes.emplace(shape, s);
  return s;
}

// ---- the writers ----

void SqliteConnection::InsertBatch(const SqliteBatch& b) {
  if (!error.empty()) return;
  if (b.table == SqliteBatch::kNvtx && select[SqliteBatch::kNvtx].empty() && !CreateNvtxTables())
    return;
  if (b.rows == 0) return;
  const int n = kBatched[b.table].count;
  const int64_t* first = b.cells.data();
  if (pages && pages->Has(b.table)) {
    if (!pages->Append(b.table, first, b.rows, n)) Fail(pages->error());
    return;
  }
  // The cells every row shares (bit i: cell i).
  uint32_t shape = 0;
  if (b.rows >= kMinShapedRows) {
    uint32_t differ = 0;
    for (size_t r = 1; r < b.rows; ++r) {
      const int64_t* row = first + r * static_cast<size_t>(n);
      for (int i = 0; i < n; ++i) differ |= static_cast<uint32_t>(row[i] != first[i]) << i;
    }
    shape = ~differ & ((uint32_t{1} << n) - 1);
  }
  sqlite3_stmt* s = InsertFor(b.table, shape);
  if (!s) return;
  if (s != inserts[b.table][0]) {
    for (int i = 0; i < n; ++i) {
      if (!(shape >> i & 1)) continue;
      if (first[i] == kNull) sqlite3_bind_null(s, i + 1);
      else sqlite3_bind_int64(s, i + 1, first[i]);
    }
  }
  batch = SqliteBatchView{first, b.rows, n};
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  batch = SqliteBatchView{};
  if (rc != SQLITE_DONE) Fail(std::string("writing ") + kBatched[b.table].table);
}

}  // namespace cupmon::decoder
