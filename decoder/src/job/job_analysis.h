// The job analysis behind `cupmon-decode job`: each rank's GPU activity and steps in, the ranks'
// collectives matched instance by instance (without trusting their clocks), per step and rank the
// split of step time, wait and host gap, a verdict per slow step, stragglers and hangs out.
// Plain data both ways, no reading: decoder/src/commands/job_command.cc feeds it from recordings,
// the tests from hand-made ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "job/rank_table.h"

namespace cupmon::decoder::job {

// One GPU activity of a rank (kernel, memcpy, memset), in the rank's own CUPTI clock.
struct GpuSpan {
  uint64_t start = 0, end = 0;  // CUPTI ns of its rank, end >= start
  int64_t wall_end = 0;         // unix ns through the rank's calibration (the clock cross-check)
  uint32_t name = 0;            // index into RankInput::names
  uint32_t stream = 0;
  bool collective = false;  // an NCCL kernel (IsCollectiveName)
};

// A GPU activity recorded without an end: a kernel still running when its process ended (a
// SIGTERM flush hands it over with end 0).
struct Unfinished {
  uint32_t name = 0;
  uint32_t stream = 0;
  bool collective = false;
};

// A step of one rank, as `steps` finds it: [since, end] in the rank's CUPTI clock.
struct StepSpan {
  uint64_t number = 0;  // the rank's own step number (1-based)
  uint64_t since = 0, end = 0;
  int64_t wall_start = 0, wall_end = 0;  // unix ns of since and end (--from/--to, drill-down)
};

struct RankInput {
  std::string label;                   // "rank 1 (node3:812)"
  RankIdentity who;                    // the rest of its identity (who.label: label)
  std::vector<std::string> names;      // by GpuSpan::name
  std::vector<GpuSpan> spans;          // any order
  std::vector<Unfinished> unfinished;  // in the order they were recorded
  std::vector<StepSpan> steps;         // in time order
};

// NCCL's collective and point-to-point kernels: ncclDevKernel_* (NCCL 2.19 on) and ncclKernel_*
// (before), also as demangled names with their parameter lists.
bool IsCollectiveName(std::string_view name);

// How the sequence of collectives on one NCCL stream was matched across the ranks. NCCL launches
// the collectives of a communicator in the same order on every rank, and every rank's instance of
// one collective ends at about the same moment (the last arrival releases all). So the sequences
// are aligned once, by the gaps between consecutive ends (the same on every rank whatever its
// clock), the wall clock only choosing where the search starts and breaking ties; instance i of a
// rank is then global instance offset[rank] + i.
struct StreamMatch {
  std::string op;  // the stream's most frequent collective name (the key streams are matched by)
  uint32_t reference = 0;  // the rank with the most instances: its instance i is global i
  // Per rank (empty optional: the rank has no such stream).
  std::vector<std::optional<uint32_t>> stream;
  std::vector<int64_t> offset;      // global index of the rank's first instance
  std::vector<uint64_t> instances;  // the rank's instances on the stream
  std::vector<uint64_t> matched;    // of them, how many the reference also holds
  // The rank's wall clock minus the reference's, as the matched instances' ends show it (median).
  std::vector<int64_t> clock_offset_ns;
  // Where the wall clock alone would have put the rank's first instance (global index), to report
  // when it disagrees with the match.
  std::vector<int64_t> wall_offset;
  // Matched pairs whose names differ (a drop in the middle of a history shifts the sequence).
  std::vector<uint64_t> name_mismatches;
};

// Figures of one rank in one step. work_alone + collective_alone + both + idle == step_ns: every
// instant of the rank's step [since, end] is in exactly one of them (its GPU running
// non-collective work only, collectives only, both at once, or nothing), whichever step the
// activity covering it started in.
struct RankStep {
  bool present = false;  // the rank has this step (histories start and end at different points)
  uint64_t number = 0;   // the rank's own step number
  uint64_t step_ns = 0;
  uint64_t work_alone_ns = 0, collective_alone_ns = 0, both_ns = 0, idle_ns = 0;
  // GPU work outside collectives, and a collective in flight.
  uint64_t work_ns() const { return work_alone_ns + both_ns; }
  uint64_t collective_ns() const { return collective_alone_ns + both_ns; }
  // Over the collectives that start in the step: each one's duration on this rank minus the
  // shortest duration of that instance over the ranks.
  uint64_t wait_ns = 0;
  // The GPU idle from the step's start to its first collective's start (the whole step when it
  // has none): the rank launched late.
  uint64_t host_gap_ns = 0;
  uint64_t collectives = 0;
  int64_t wall_start = 0, wall_end = 0;
};

enum class VerdictClass {
  kGpuWork,      // one rank's GPU work outside collectives grew; the others waited for it
  kHostGap,      // one rank's GPU sat idle before its first collective: it launched late
  kCollectives,  // every rank's collectives took longer, no rank late: the communication itself
  kUnexplained,  // none of the above reaches the threshold (sizes shown)
};
// "gpu-work", "host-gap", "collectives", "unexplained".
std::string_view VerdictName(VerdictClass c);

struct Verdict {
  VerdictClass what = VerdictClass::kUnexplained;
  std::optional<uint32_t> culprit;  // kGpuWork, kHostGap
  uint64_t excess_ns = 0;           // the job's step time over its rolling median
  uint64_t culprit_ns = 0;          // the culprit's work or host gap over the other ranks' median
  uint64_t collective_ns = 0;       // the step's shortest collective time over its rolling median
  // kGpuWork: the kernel whose time in the step grew most over the other ranks' median.
  std::string kernel;
  uint64_t kernel_ns = 0;
};

// One step of the job: the ranks' steps that hold the same collectives.
struct JobStep {
  uint64_t number = 0;                  // 1-based over the job (the reference rank's steps)
  std::vector<RankStep> ranks;          // by rank
  uint64_t step_ns = 0;                 // the longest of the ranks' steps
  uint64_t rolling_median_ns = 0;       // of step_ns over the job steps before (as `steps`)
  uint64_t shortest_collective_ns = 0;  // sum over its collectives of their shortest duration
  bool slow = false;
  Verdict verdict;  // slow steps only
};

// Per rank over the steps analysed.
struct RankSummary {
  uint64_t steps = 0;
  uint64_t median_step_ns = 0, median_work_ns = 0, median_collective_ns = 0, median_wait_ns = 0,
           median_host_gap_ns = 0;
  uint64_t culprit_of = 0;  // slow steps whose verdict names this rank
  // The job's end on this rank: collectives completed (all streams), the global index of the
  // last one completed on the main stream (-1: none), collectives still running, and the last
  // kernel that completed.
  uint64_t completed_collectives = 0;
  int64_t last_collective = -1;
  std::vector<std::string> unfinished;  // names of activities recorded without an end
  uint64_t unfinished_collectives = 0;
  std::string last_kernel;
  int64_t last_kernel_wall_end = 0;
};

struct Hang {
  bool hung = false;  // some rank ended with a collective still running
  // Ranks that launched fewer collectives on the main stream than the others: the ones the
  // others wait for.
  std::vector<uint32_t> behind;
  int64_t waiting_at = -1;  // the global index of the collective the others wait in
};

struct JobOptions {
  // Slow steps as `steps` finds them, on the job's step time: at least slow_factor x the median
  // of the `rolling` steps before and 50 us more.
  double slow_factor = 1.5;
  uint32_t rolling = 50;
  // A rank is the culprit when its work or host gap exceeds the other ranks' median by at least
  // this share of the step's excess; the collectives are when their shortest time exceeds its
  // rolling median by that share while no rank does.
  double culprit_share = 0.5;
  // How far apart the ranks' wall clocks may be when the sequences are aligned (the search range).
  uint64_t max_clock_error_ns = 60'000'000'000;
  // Job steps whose reference step starts in [from_wall, to_wall) (unix ns) only.
  std::optional<int64_t> from_wall, to_wall;
  // Rank steps the merge's last pass holds at once: a block of job steps across the ranks (at
  // least one job step).
  size_t rows_per_block = 65536;
};

struct JobAnalysis {
  std::vector<StreamMatch> streams;  // the main stream (the one the job's steps are keyed by) first
  // Every job step in the range; when a JobStepSink took them (MergeJob), the slow ones only.
  std::vector<JobStep> steps;
  std::vector<size_t> slow;  // indices into steps, largest excess first
  uint64_t step_count = 0;   // job steps in the range
  // The range's first step start and last step end on the reference rank (unix ns).
  int64_t first_wall_start = 0, last_wall_end = 0;
  std::vector<RankIdentity> who;  // by rank
  std::vector<RankSummary> ranks;
  Hang hang;
  uint32_t reference = 0;  // the rank whose steps number the job's
  // Rank steps that could not be placed in a job step (no collective in them, or outside the
  // reference's history), per rank.
  std::vector<uint64_t> unplaced_steps;
  // What could not be matched or looks wrong, one sentence each.
  std::vector<std::string> problems;
};

// Matches the collectives and computes every figure: each rank's table (BuildRankTable) merged
// by MergeJob (decoder/src/job/job_merge.h). `ranks` in rank order; each rank's spans need not be
// sorted. Single-threaded, pure.
JobAnalysis AnalyzeJob(const std::vector<RankInput>& ranks, const JobOptions& options = {});

}  // namespace cupmon::decoder::job
