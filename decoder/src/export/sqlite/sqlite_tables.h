// The SQLite export's batched tables as its two halves share them (the caller's side, rows
// into batches: sqlite_sink.cc, sqlite_batches.h; the writer threads, batches into a connection:
// sqlite_batches.cc, sqlite_writer.cc). Included by those files only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "export/sqlite/sqlite_connection.h"

namespace cupmon::decoder {

inline constexpr int64_t kNull = INT64_MIN;  // a cell that is SQL NULL (no column holds this value)
inline constexpr size_t kBatchRows = 4096;
inline constexpr size_t kMaxQueued = 16;  // full batches waiting for the writer
// Statements per table and connection for batches whose rows share some cells (the rank's
// globalPid, deviceId and contextId, ...): those cells are bound once per batch as parameters,
// which costs SQLite less per row than reading them through cupmon_batch. Batches of fewer rows
// than kMinShapedRows, and shapes past kMaxShapes, take the statement that reads every cell.
inline constexpr size_t kMaxShapes = 32;
inline constexpr size_t kMinShapedRows = 64;
// The page cache while rows go in (a larger one gained nothing), and while the indexes are
// built: SQLite's sorter keeps as much in memory as the cache may hold and spills the rest to
// temporary files, then merges them; 64 MiB keeps 2M rows' kernel indexes in memory, where
// 16 MiB spills them.
inline constexpr const char* kCacheRows = "PRAGMA cache_size = -16384";
inline constexpr const char* kCacheIndexes = "PRAGMA cache_size = -65536";

// The batched tables: their columns with values. The first `count` columns take the batch's
// cells, one per column (cupmon_batch's c0, c1, ...); the rest take the constants of `fixed`, in
// order, where nsys declares a column NOT NULL that cupmon has no value for (nsys's default: 0,
// ''). Every other column is NULL.
struct BatchedTable {
  const char* table;
  const char* columns;
  int count;          // columns with a cell per row
  const char* fixed;  // constant values of the columns after them ("" when none)
};
inline constexpr BatchedTable kBatched[SqliteBatch::kTableCount] = {
    {"CUPTI_ACTIVITY_KIND_KERNEL",
     "start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
     "shortName, mangledName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
     "staticSharedMemory, dynamicSharedMemory, graphId, localMemoryPerThread, localMemoryTotal, "
     "gridId, tensorSizeMinusOneElements",
     20, ", 0, 0, 0, ''"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY",
     "start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind, "
     "srcKind, dstKind, srcDeviceId, dstDeviceId",
     13, ""},
    {"CUPTI_ACTIVITY_KIND_MEMSET",
     "start, end, deviceId, contextId, streamId, correlationId, globalPid, value, bytes", 9, ""},
    {"CUPTI_ACTIVITY_KIND_RUNTIME",
     "start, end, eventClass, globalTid, correlationId, nameId, returnValue", 7, ""},
    {"CUPMON_SECONDARY_API",
     "start, end, eventClass, globalTid, correlationId, nameId, returnValue, reason", 8, ""},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
     "start, end, deviceId, contextId, streamId, correlationId, globalPid, syncType, eventId, "
     "eventSyncId",
     10, ""},
    {"CUPMON_THREADS", "globalTid, cuptiThreadId, cuptiProcessId", 3, ""},
    {"CUPMON_CORRELATION_ANNOTATIONS", "globalPid, correlationId, externalId", 3, ""},
    {"NVTX_EVENTS", "start, end, eventType, rangeId, globalTid, textId, domainId", 7, ""},
};

inline constexpr int kMaxCells = 20;  // cupmon_batch's columns: the most cells a row has (kernel rows)

}  // namespace cupmon::decoder
