// A rank's step table: what the job analysis needs of one rank, computed from its GPU activity
// alone (where its recording lives) and small: per step the split of its time, its collectives
// and its work by kernel name; per NCCL stream the sequence of collectives the ranks are matched
// by; how its recording ended. Built here from a RankInput, kept in memory or written to a
// `.cupmon-job` file (`cupmon-decode job --tables-out`) and merged with the other ranks' tables
// by decoder/src/job/job_merge.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "cupmon/base/error.h"

namespace cupmon::decoder::job {

struct RankInput;

// Who a rank is, as the listing of its recording named it.
struct RankIdentity {
  std::string label;              // "rank 1 (node3:812)"
  uint32_t rank = 0;              // the launcher's rank, else its number in the listing
  bool rank_from_header = false;  // false: numbered by the listing (host, pid order)
  uint32_t pid = 0;
  std::string host, job;
  // The paths given to the command that read the rank (its drill-down commands read them).
  std::vector<std::string> paths;
};

// One NCCL stream of a rank.
struct TableStream {
  // The key streams are matched across ranks by: their most frequent collective name, " #2" for a
  // second stream of that name on the rank (by first launch).
  std::string key;
  uint32_t stream = 0;     // the CUDA stream id
  uint64_t instances = 0;  // collectives recorded with an end
};

// One collective instance of a stream, in launch order.
struct Instance {
  uint64_t start = 0, end = 0;  // CUPTI ns of the rank
  int64_t wall_end = 0;
  uint32_t name = 0;  // index into RankTableHeader::names
};

// The collectives of one stream that start in a step: instances first .. first + size - 1.
struct StepCollectives {
  uint32_t stream = 0;  // index into RankTableHeader::streams
  uint64_t first = 0;
  std::vector<uint64_t> durations;  // of each instance on this rank
};

struct NameTime {
  uint32_t name = 0;  // index into RankTableHeader::names
  uint64_t ns = 0;
};

// One step of the rank (RankStep's figures that need no other rank).
struct TableRow {
  uint64_t number = 0;
  uint64_t since = 0, end = 0;  // CUPTI ns of the rank
  int64_t wall_start = 0, wall_end = 0;
  uint64_t work_alone_ns = 0, collective_alone_ns = 0, both_ns = 0, idle_ns = 0, host_gap_ns = 0;
  uint64_t collectives = 0;
  std::vector<StepCollectives> streams;  // streams with collectives in the step, by index
  std::vector<NameTime> work_by_name;    // non-collective time by name, activities started in it
};

// An activity recorded without an end (still running when the process ended).
struct TableUnfinished {
  uint32_t name = 0;  // index into names
  uint32_t stream = 0;
  bool collective = false;
};

struct RankTableHeader {
  RankIdentity who;
  std::vector<std::string> names;
  std::vector<TableStream> streams;  // by first launch
  // The recording's end: collectives completed, the last activity that completed (by wall end),
  // what was still running.
  uint64_t completed_collectives = 0;
  std::string last_kernel;
  int64_t last_kernel_wall_end = 0;
  std::vector<TableUnfinished> unfinished;
  uint64_t rows = 0;
};

struct RankTable {
  RankTableHeader header;
  std::vector<std::vector<Instance>> sequences;  // by stream index
  std::vector<TableRow> rows;                    // by step, in time order
};

// Computes the rank's table. Pure, single-threaded; `in`'s spans need not be sorted.
RankTable BuildRankTable(const RankInput& in);

// The file form (`.cupmon-job`): a versioned header, the sequences, then one length-prefixed row
// per step. Integers are varints; the header gives the byte sizes of the parts, so that a file
// cut short is refused when it is opened.
inline constexpr const char* kTableSuffix = ".cupmon-job";
Expected<void> WriteRankTable(const std::string& path, const RankTable& table);

// Reads one table file a part at a time; each call opens the file and closes it again, so a merge
// of any number of ranks holds at most one file open.
class RankTableFile {
 public:
  // Reads and checks the header (the file's parts must be as long as it says).
  static Expected<RankTableFile> Open(const std::string& path);
  const RankTableHeader& header() const { return header_; }
  RankTableHeader& mutable_header() { return header_; }  // the merge renumbers ranks
  const std::string& path() const { return path_; }
  Expected<std::vector<std::vector<Instance>>> Sequences() const;
  // Rows from byte position *pos (0: the first row): each is handed to take(), which returns false
  // to leave it unread; *pos is then where the next read starts. Stops at the last row.
  template <typename Take>
  Expected<void> Rows(uint64_t* pos, Take&& take) const;

 private:
  Expected<void> ReadRows(uint64_t* pos, bool (*take)(void*, const TableRow&), void* ctx) const;
  std::string path_;
  RankTableHeader header_;
  uint64_t sequences_at_ = 0, sequences_size_ = 0, rows_at_ = 0, rows_size_ = 0;
};

template <typename Take>
Expected<void> RankTableFile::Rows(uint64_t* pos, Take&& take) const {
  using T = std::remove_reference_t<Take>;
  return ReadRows(
      pos, [](void* c, const TableRow& r) { return static_cast<bool>((*static_cast<T*>(c))(r)); },
      const_cast<void*>(static_cast<const void*>(&take)));
}

// The table files among `paths`: files named *.cupmon-job, and those in directories given (and
// one level down), sorted by path.
std::vector<std::string> FindTableFiles(const std::vector<std::string>& paths);

}  // namespace cupmon::decoder::job
