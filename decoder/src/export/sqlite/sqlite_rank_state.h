// What the SQLite export (sqlite_sink.h) keeps about the rank whose rows stream: its ids, its
// threads' and contexts' numbers, its annotations, NVTX domains and row counts. Private to the
// SQLite export.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <unordered_map>

#include "cupmon/decoder/rank_listing.h"

namespace cupmon::decoder {

// The types of rows the activity tables take, as the export counts them ('export.rows.<type>').
enum SqliteRowType { kRowKernel, kRowMemcpy, kRowMemset, kRowRuntime, kRowSecondary, kRowSync };
inline constexpr int kSqliteRowTypes = 6;
inline constexpr const char* kSqliteRowTypeNames[kSqliteRowTypes] = {
    "kernel", "memcpy", "memset", "runtime", "secondary_api", "synchronization"};

// Begin sets it for each rank; the rows fill it; End writes what it holds into the tables Close
// writes (sqlite_fact_tables.h). The caller's thread's.
struct SqliteRankState {
  struct Annotation {
    std::string label;
    int64_t start = 0, end = 0;
    uint64_t rows = 0;
  };
  struct NvtxDomain {
    int64_t id = 0, start = 0, global_tid = 0;
  };

  void Begin(const Rank* r, uint32_t n, int64_t pid) {
    rank = r;
    node = n;
    global_pid = pid;
    threads.clear();
    last_thread_key = ~uint64_t{0};
    context_devices.clear();
    last_context = last_device = ~0u;
    sync_unknown_device = 0;
    annotations.clear();
    nvtx_domains.clear();
    nvtx_rows = nvtx_untimed = 0;
    std::fill(std::begin(rows), std::end(rows), 0);
    std::fill(std::begin(untimed), std::end(untimed), 0);
  }
  // A GPU row's context ran on `device`.
  void NoteDevice(uint32_t context, uint32_t device) {
    if (context == last_context && device == last_device) return;
    context_devices[context] = device;
    last_context = context;
    last_device = device;
  }

  const Rank* rank = nullptr;  // null for a single recording
  uint32_t node = 0;
  int64_t global_pid = 0;
  std::unordered_map<uint64_t, int64_t> threads;  // (cupti pid << 32 | cupti tid) -> globalTid
  uint64_t last_thread_key = ~uint64_t{0};
  int64_t last_thread_tid = 0;
  std::map<uint32_t, uint32_t> context_devices;
  uint32_t last_context = ~0u, last_device = ~0u;
  uint64_t sync_unknown_device = 0;  // synchronization rows whose context had no GPU row yet
  std::map<uint64_t, Annotation> annotations;      // external id -> span and count
  std::map<std::string, NvtxDomain> nvtx_domains;  // domain name -> domainId, first use, globalTid
  uint64_t nvtx_rows = 0, nvtx_untimed = 0;        // NVTX rows given and left out
  // Rows given (and left out for want of a time) by SqliteRowType.
  uint64_t rows[kSqliteRowTypes] = {}, untimed[kSqliteRowTypes] = {};
};

}  // namespace cupmon::decoder
