// The job analysis in memory: each rank's table, merged (decoder/src/job/job_merge.cc); the
// collective names and verdict classes.
#include "job/job_analysis.h"

#include "cupmon/base/check.h"
#include "job/job_merge.h"

namespace cupmon::decoder::job {

bool IsCollectiveName(std::string_view name) {
  return name.starts_with("ncclDevKernel_") || name.starts_with("ncclKernel_") ||
         name.starts_with("void ncclKernel_") || name.starts_with("void ncclDevKernel_");
}

std::string_view VerdictName(VerdictClass c) {
  switch (c) {
    case VerdictClass::kGpuWork:
      return "gpu-work";
    case VerdictClass::kHostGap:
      return "host-gap";
    case VerdictClass::kCollectives:
      return "collectives";
    case VerdictClass::kUnexplained:
      break;
  }
  return "unexplained";
}

JobAnalysis AnalyzeJob(const std::vector<RankInput>& inputs, const JobOptions& options) {
  std::vector<RankTable> tables;
  tables.reserve(inputs.size());
  for (const RankInput& in : inputs) tables.push_back(BuildRankTable(in));
  auto a = MergeJob(MemoryTables(std::move(tables)), options);
  CUPMON_CHECK(a.has_value());  // tables in memory cannot fail to read
  return std::move(*a);
}

}  // namespace cupmon::decoder::job
