// MergeJob: the ranks' step tables (decoder/src/job/rank_table.h) merged into the job analysis.
// The tables come from memory (AnalyzeJob, `cupmon-decode job` over recordings) or from
// `.cupmon-job` files written where the data lives (`cupmon-decode job --tables-out`).
//
// Memory: every rank's header (identity, names, streams), each stream's sequence on its reference
// rank plus one other rank's at a time, a few numbers per job step, and the rows of a block of job
// steps across the ranks (JobOptions::rows_per_block rank steps): not ranks x steps. At most one
// table file is open at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "cupmon/base/error.h"
#include "job/job_analysis.h"
#include "job/rank_table.h"

namespace cupmon::decoder::job {

// Where the ranks' tables come from, in rank order.
class TableSource {
 public:
  virtual ~TableSource() = default;
  virtual size_t size() const = 0;
  virtual const RankTableHeader& header(size_t rank) const = 0;
  virtual Expected<std::vector<std::vector<Instance>>> Sequences(size_t rank) const = 0;
  // As RankTableFile::Rows: rows from *pos (0: the first) until take() returns false.
  virtual Expected<void> Rows(size_t rank, uint64_t* pos,
                              const std::function<bool(const TableRow&)>& take) const = 0;
};

class MemoryTables : public TableSource {
 public:
  explicit MemoryTables(std::vector<RankTable> tables) : tables_(std::move(tables)) {}
  size_t size() const override { return tables_.size(); }
  const RankTableHeader& header(size_t r) const override { return tables_[r].header; }
  Expected<std::vector<std::vector<Instance>>> Sequences(size_t r) const override {
    return tables_[r].sequences;
  }
  Expected<void> Rows(size_t r, uint64_t* pos,
                      const std::function<bool(const TableRow&)>& take) const override;

 private:
  std::vector<RankTable> tables_;
};

class FileTables : public TableSource {
 public:
  explicit FileTables(std::vector<RankTableFile> files) : files_(std::move(files)) {}
  size_t size() const override { return files_.size(); }
  const RankTableHeader& header(size_t r) const override { return files_[r].header(); }
  Expected<std::vector<std::vector<Instance>>> Sequences(size_t r) const override {
    return files_[r].Sequences();
  }
  Expected<void> Rows(size_t r, uint64_t* pos,
                      const std::function<bool(const TableRow&)>& take) const override {
    return files_[r].Rows(pos, take);
  }

 private:
  std::vector<RankTableFile> files_;
};

// Takes every job step in order, as it is completed (its verdict included), on the caller's thread.
class JobStepSink {
 public:
  virtual ~JobStepSink() = default;
  virtual void OnStep(const JobStep& step) = 0;
};

// A sink that drops every step: MergeJob then keeps only the slow ones.
class DiscardSteps final : public JobStepSink {
 public:
  void OnStep(const JobStep&) override {}
};

// Merges the tables. With a sink, every step goes to it and JobAnalysis::steps keeps only the
// slow ones; without, it keeps every step. Errors: a table that cannot be read (file, offset).
Expected<JobAnalysis> MergeJob(const TableSource& tables, const JobOptions& options,
                               JobStepSink* sink = nullptr);

}  // namespace cupmon::decoder::job
