// CorrelationTable: the trace builder's join state by correlation id (correlation_table.h).
#include "correlation_table.h"

#include <algorithm>

#include "cupmon/base/thread_annotations.h"

namespace cupmon::decoder {
namespace {

size_t PowerOfTwoAtLeast(size_t n) {
  size_t p = 1024;
  while (p < n) p *= 2;
  return p;
}

// The table the builder that finished last gave back, emptied. Never destroyed: builders may
// outlive statics.
struct SpareTable {
  Mutex mutex;
  std::unique_ptr<CorrelationTable> table CUPMON_GUARDED_BY(mutex);
};
SpareTable& Spare() {
  static auto* spare = new SpareTable;
  return *spare;
}

}  // namespace

CorrelationTable::CorrelationTable(size_t max_live)
    : max_live_(std::max<size_t>(max_live, 1)),
      ring_(max_live_ + 1),
      index_(PowerOfTwoAtLeast(8 * (max_live_ + 1))) {
  index_mask_ = index_.size() - 1;
}

std::unique_ptr<CorrelationTable> CorrelationTable::Make(size_t max_live) {
  {
    SpareTable& spare = Spare();
    MutexLock lock(spare.mutex);
    if (spare.table && spare.table->max_live_ == std::max<size_t>(max_live, 1))
      return std::move(spare.table);
  }
  return std::make_unique<CorrelationTable>(max_live);
}

void CorrelationTable::Recycle(std::unique_ptr<CorrelationTable> table) {
  if (!table) return;
  // Forgetting every entry in creation order clears each index slot used: the index is all zero
  // again and the table is as a new one, whatever its ring held.
  table->Retire(0);
  CUPMON_CHECK(table->overflow_.empty());
  SpareTable& spare = Spare();
  MutexLock lock(spare.mutex);
  spare.table = std::move(table);
}

}  // namespace cupmon::decoder
