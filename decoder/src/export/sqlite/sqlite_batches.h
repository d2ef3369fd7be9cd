// The SQLite export's hand-over of rows from the caller's thread to the writer threads
// (sqlite_sink.h): batches of column values, a bounded queue of them per connection, and the
// writer threads that insert them. Private to the SQLite export.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "cupmon/base/thread_annotations.h"
#include "export/sqlite/sqlite_connection.h"
#include "export/sqlite/sqlite_tables.h"

namespace cupmon::decoder {

// The caller's open batch per table; full batches go to their connection's queue (the caller
// waits while it holds kMaxQueued), and the writer thread of that connection inserts them and
// gives the emptied batch back for reuse. A connection without a writer thread (Start not called)
// has its batches inserted by the caller's thread, which owns the connection then.
//
// Threads: NewRow, RowDone, Submit, Start, Stop and Join on the caller's thread; WriterLoop on
// one writer thread per started connection. The queues, the free batches and stop_ are guarded
// by mu_; the open batches are the caller's.
class SqliteBatches {
 public:
  using Table = SqliteBatch::Table;
  enum ConnIndex { kMain, kRest, kConnCount };

  // `conns`: the sink's kConnCount connections (kRest takes every table but the kernel table's
  // when it has a path); `failed`: the sink's flag, which stops every writer. Both outlive this.
  SqliteBatches(SqliteConnection* conns, const std::atomic<bool>* failed)
      : conns_(conns), failed_(failed) {}
  ~SqliteBatches() {
    Stop();
    for (int c = 0; c < kConnCount; ++c) Join(c);
  }
  SqliteBatches(const SqliteBatches&) = delete;
  SqliteBatches& operator=(const SqliteBatches&) = delete;

  // The next row's cells in the table's open batch.
  int64_t* NewRow(Table t) {
    std::unique_ptr<SqliteBatch>& b = open_[t];
    if (!b) {
      {
        MutexLock lock(mu_);
        if (!free_.empty()) {
          b = std::move(free_.back());
          free_.pop_back();
        }
      }
      if (!b) b = std::make_unique<SqliteBatch>();
      b->table = t;
      b->rows = 0;
      const size_t need = kBatchRows * static_cast<size_t>(kBatched[t].count);
      if (b->cells.size() < need) b->cells.resize(need);
    }
    return b->cells.data() + b->rows++ * static_cast<size_t>(kBatched[t].count);
  }
  // After filling NewRow's cells: hands the batch over once it is full.
  void RowDone(Table t) {
    if (open_[t]->rows == kBatchRows) Submit(t);
  }
  // Hands the open batch over (to the writer, or inserts it).
  void Submit(Table t);

  // Starts connection `conn`'s writer thread.
  void Start(int conn);
  // Lets the writers finish what is queued and end (with the sink failed, they skip it).
  void Stop();
  void Join(int conn) {
    if (writers_[conn].joinable()) writers_[conn].join();
  }
  // True with the second connection (SqliteSink::Options::split).
  bool split() const { return !conns_[kRest].path.empty(); }

 private:
  int ConnOf(Table t) const { return t != SqliteBatch::kKernel && split() ? kRest : kMain; }
  void WriterLoop(int conn);

  SqliteConnection* conns_;
  const std::atomic<bool>* failed_;
  std::thread writers_[kConnCount];
  Mutex mu_;
  std::condition_variable cv_;
  // Full batches, oldest first.
  std::deque<std::unique_ptr<SqliteBatch>> queue_[kConnCount] CUPMON_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<SqliteBatch>> free_ CUPMON_GUARDED_BY(mu_);  // for reuse
  bool stop_ CUPMON_GUARDED_BY(mu_) = false;
  std::unique_ptr<SqliteBatch> open_[SqliteBatch::kTableCount];  // the caller's batch per table
};

}  // namespace cupmon::decoder
