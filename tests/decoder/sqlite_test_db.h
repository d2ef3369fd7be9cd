// A database opened through SQLite, with one-value queries: how the SQLite tests read back what
// the export wrote. Test-only.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace cupmon::testing {

class SqliteDb {
 public:
  explicit SqliteDb(const std::string& path, int flags = SQLITE_OPEN_READONLY) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, flags, nullptr), SQLITE_OK) << path;
  }
  ~SqliteDb() { sqlite3_close(db_); }
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;
  // The first column of the first row as text ("NULL" for NULL, "" when no row).
  std::string Text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return "<error>";
    }
    std::string out;
    if (sqlite3_step(s) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(s, 0);
      out = t ? reinterpret_cast<const char*>(t) : "NULL";
    }
    sqlite3_finalize(s);
    return out;
  }
  int64_t Int(const std::string& sql) { return std::stoll(Text(sql)); }
  void Exec(const std::string& sql) {
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK)
        << sql << ": " << (msg ? msg : "");
    sqlite3_free(msg);
  }
  sqlite3* get() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace cupmon::testing
