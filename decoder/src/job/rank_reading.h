// What the job analysis (job_analysis.h) takes from a rank's read, for each command that reads the
// ranks anyway: `job`, `report` and `export --format sqlite` feed it from their own decode pass.
// The same rows and steps give the same tables, so every one of them answers as `job` does.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/row.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "job/job_analysis.h"
#include "job/rank_table.h"

namespace cupmon::decoder::job {

// The GPU rows of one rank as the analysis takes them: spans with an end, and kernels recorded
// without one. The rows must carry demangled names (no --mangled: IsCollectiveName) and be
// unfiltered by device, stream and kernel, as `job` reads them.
class SpanCollector : public RowSink {
 public:
  void OnRow(const Row& row) override;
  // The rank's input so far; AddRank completes it.
  RankInput input;

 private:
  uint32_t Intern(uint32_t id, std::string_view name);
  std::unordered_map<uint32_t, uint32_t> ids_;
  std::vector<bool> collective_;
};

// Completes `in` with the rank's identity (`paths`: the user's arguments, for the drill-down
// commands) and its steps (FindSteps' or a StepFinder's).
void AddRank(const Rank& rank, const std::vector<std::string>& paths, const StepList& steps,
             RankInput* in);

// The merge's options as `job` takes them from `steps`' options, over every step.
JobOptions OptionsFor(const StepOptions& steps);

// Each rank's step table from an export's pass (export/exporter.h), `job`'s default step options:
// per rank Begin (its consumer given to the pass's builder), its rows (Take), End; then Release.
// A rank's GPU activity is kept until its End, where its table is built; the tables until
// Release. Single-threaded.
class ExportRankTables {
 public:
  RecordConsumer* Begin(const Rank& rank);
  void Take(const Row& row) { spans_.OnRow(row); }
  void End();
  std::vector<RankTable> Release() { return std::move(tables_); }

 private:
  const Rank* rank_ = nullptr;
  std::unique_ptr<StepFinder> finder_;
  SpanCollector spans_;
  std::vector<RankTable> tables_;
};

}  // namespace cupmon::decoder::job
