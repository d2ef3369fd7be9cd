// The SQLite export's hand-over of batches to the writer threads (see sqlite_batches.h).
#include "export/sqlite/sqlite_batches.h"

#include "export/sqlite/nsys_schema.h"

namespace cupmon::decoder {

void SqliteBatches::Submit(Table t) {
  std::unique_ptr<SqliteBatch>& b = open_[t];
  if (!b || b->rows == 0) return;
  const int conn = ConnOf(t);
  if (!writers_[conn].joinable()) {
    conns_[conn].InsertBatch(*b);  // no writer thread: this thread owns the connection
    b->rows = 0;
    return;
  }
  MutexLock lock(mu_);
  while (queue_[conn].size() >= kMaxQueued) lock.Wait(cv_);
  queue_[conn].push_back(std::move(b));
  lock.Unlock();
  cv_.notify_all();
}

void SqliteBatches::Start(int conn) {
  writers_[conn] = std::thread([this, conn] { WriterLoop(conn); });
}

void SqliteBatches::Stop() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

void SqliteBatches::WriterLoop(int conn) {
  SqliteConnection& c = conns_[conn];
  const auto failed = [this] { return failed_->load(std::memory_order_relaxed); };
  for (;;) {
    std::unique_ptr<SqliteBatch> b;
    {
      MutexLock lock(mu_);
      while (!stop_ && queue_[conn].empty()) lock.Wait(cv_);
      if (queue_[conn].empty()) break;  // stop_, and everything written
      b = std::move(queue_[conn].front());
      queue_[conn].pop_front();
    }
    cv_.notify_all();  // room in the queue
    // The connection and its error are this thread's while it runs; Close reads them after
    // the join.
    if (!failed()) c.InsertBatch(*b);
    b->rows = 0;
    MutexLock lock(mu_);
    free_.push_back(std::move(b));
  }
  // Close goes on with the connection; with two, this one's indexes first (the kernel table's
  // take the time), while Close writes the rest into the other.
  if (conn == kRest || !split() || failed()) return;
  c.Exec("PRAGMA threads = 1");  // the sorter's helper thread, for the other core's idle moments
  c.Exec(kCacheIndexes);
  for (const nsys::Index& index : nsys::Indexes()) c.Exec(nsys::CreateIndex(index));
  c.Exec("COMMIT");  // ATTACH cannot run inside a transaction
}

}  // namespace cupmon::decoder
