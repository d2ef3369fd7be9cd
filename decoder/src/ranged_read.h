// RangePlan: which chunks of a recording a ranged read (ChunkVisitor::Ranged) reads, from the chunk
// index in each file's footer (FORMAT.md, "Chunk index"), and the read of one file by that plan.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/recording_reader.h"
#include "window_index.h"

namespace cupmon::decoder {

// Single-threaded: built and used on the reading thread of one recording's read.
//
// Every chunk that is not a raw buffer is read, in stream order (the clock's samples, the
// windows, strings, stats, footers). Of the raw buffers, those before the first with a valid
// start are read (relative times count from it). The others are chosen once that origin is
// known: the raw buffers whose timestamps, mapped to wall-clock time with every calibration sample
// of the indexed files, meet the range widened by kSlackNs (and to the begin of any window that
// overlaps it, whose first launch tells which activities were launched before it opened); the
// buffers whose correlation ids meet those buffers' ids (the launch records of their kernels, and
// untimed buffers that annotate them); and untimed buffers that no timed buffer's correlation ids
// place (their time is not known). When a window was never closed (the exports end it at the
// recording's last record), also every buffer whose timestamps reach the latest buffer start, and
// the last buffer. From a margin before the first chosen buffer (at least
// 2 x JoinHorizon() records by a lower bound of each buffer's records) to the last chosen one,
// every raw buffer is read, then more until JoinHorizon() + 1 records have joined after it: each
// row of the range is then emitted at the place in the stream a whole read emits it, with the same
// calibration samples, join partners and windows read before it.
//
// A file without a good footer, or whose index is not complete and in order (entries from the
// first byte, each with room for a chunk header before the next one or the footer), is read whole.
// Chunk headers are checked where chunks are read.
// True when CUPMON_READ_ALL=1 is set: no read is saved, neither by the files' chunk indexes (a
// ranged read, RangePlan; `report`'s bucket sizes) nor by finding the steps in the read that
// takes the rows (`report`, `diff`), so that what a shortcut gives can be compared with the reads
// it saves.
bool ReadAllForced();

class RangePlan {
 public:
  static constexpr int64_t kSlackNs = 2'000'000'000;

  // Null when the read must be whole: no file of `recording` is indexed, the recording holds
  // kinds whose rows depend on its whole history (NVTX markers, device memory) or does not say
  // which kinds it holds, or CUPMON_READ_ALL=1 is set (for comparing a ranged read with a whole one).
  static std::unique_ptr<RangePlan> Make(const Recording& recording, const RangedVisitor& visitor);
  ~RangePlan();

  bool indexed(size_t file) const;
  // The mapping of an indexed file, opened by the plan; the read of the file uses it (its pages
  // the plan touched are not faulted in again). Null when `file` is not indexed.
  MappedFile* mapped(size_t file);
  // Reads file number `file` (of recording.files) by the plan. Counts what it leaves out in
  // integrity->chunks_not_read and bytes_not_read. False when the visitor asked to stop.
  bool ReadFile(size_t file, std::span<const uint8_t> bytes, ChunkVisitor& visitor,
                ReadIntegrity* integrity, const std::function<void(uint64_t)>& consumed);

 private:
  struct Entry;
  struct FileIndex;
  RangePlan(const Recording& recording, const RangedVisitor& visitor);
  // The raw buffer's decision: read it, or not.
  bool WantRaw(size_t g);
  // Raw buffer g's lower bound of records, read from its chunk header on first use.
  uint64_t RecordsAtLeast(size_t g);
  void Choose();

  const Recording& recording_;
  const RangedVisitor& visitor_;
  const ReadRange range_;
  uint64_t max_record_bytes_ = 0;
  std::vector<FileIndex> files_;
  std::vector<Entry> raw_;  // every indexed file's raw buffers, in stream order
  ClockMap clock_;          // every calibration sample of the indexed files
  WindowIndex windows_;     // every window marker of the indexed files
  bool chosen_ = false;
  bool any_ = false;          // some raw buffer can hold the range
  size_t head_ = 0, last_ = 0;  // [head_, last_]: the run read in full
  bool tail_started_ = false;
  uint64_t joined_at_last_ = 0;
};

}  // namespace cupmon::decoder
