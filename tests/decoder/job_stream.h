// Synthetic multi-rank training jobs (CUPTI test double, not GPU data) with known stragglers, for
// `cupmon-decode job` and its analysis (tests/decoder/job/, `cupmon-make-sample --job`): per rank a
// data-parallel step of forward and backward kernels, two all-reduces that end when the last rank
// has joined them, and an optimizer; each rank on a clock seconds away from the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cupmon::testing {

struct JobInjection {
  enum Kind { kHostGap, kGpuWork, kCollectives, kHang };
  Kind kind = kHostGap;
  uint32_t rank = 0;  // kCollectives: every rank
  uint32_t step = 0;  // 1-based
  uint64_t ns = 0;    // the extra time (kHang: none)
};

struct JobStreamSpec {
  uint32_t ranks = 2;
  uint32_t steps = 80;
  uint32_t layers = 4;
  // Rank r's CUPTI clock reads r * cupti_skew_ns more than rank 0's at one instant, and its wall
  // clock r * wall_skew_ns more: the hosts' clocks disagree by seconds.
  uint64_t cupti_skew_ns = 3'000'000'000, wall_skew_ns = 1'700'000'000;
  // Non-zero: rank r's clocks are (r % skew_period) skews ahead instead, so that jobs of many
  // ranks keep their clocks within seconds of each other (the analysis searches +-60 s).
  uint32_t skew_period = 0;
  std::vector<JobInjection> inject;
  // Per rank (missing: 1): the first step its history holds (older records lost to retention).
  std::vector<uint32_t> first_step;
};

struct JobKernel {
  uint64_t start = 0, end = 0;  // the rank's CUPTI ns; end 0: still running at the end
  uint32_t name = 0;            // index into JobStreamTruth::names
  uint32_t stream = 7;
};

struct JobStepTruth {
  uint64_t number = 0;          // 1-based, the job's
  uint64_t since = 0, end = 0;  // the rank's CUPTI ns, as `steps` cuts a step
};

struct JobRankTruth {
  std::vector<JobKernel> kernels;  // in start order
  std::vector<JobStepTruth> steps;
  int64_t wall_minus_cupti = 0;  // its calibration: wall = CUPTI + this
  // Ranks on other clocks are on other hosts: "synthetic-host", then "synthetic-host-K" for K
  // skews (the analysis takes ranks of one host to share one wall clock).
  std::string host = "synthetic-host";
};

struct JobStreamTruth {
  std::vector<std::string> names;
  std::vector<JobRankTruth> ranks;
};

JobStreamTruth MakeJobStream(const JobStreamSpec& spec);

// One rank of a job like MakeJobStream's, made without the other ranks, for jobs too large to
// hold at once: a step's all-reduces end after the latest arrival any rank can have in that step
// (its injections included), not the latest actual one. Every duration is `scale` times
// MakeJobStream's (scale 600: steps of about a second); injections are as given. Names as in
// `names` of MakeJobStream.
JobRankTruth MakeJobRank(const JobStreamSpec& spec, uint32_t rank, double scale = 1.0);
std::vector<std::string> JobStreamNames();

// Writes each rank's recording into dir/rank<R> (header rank R, world size, job "synthetic-job",
// the rank's host).
void WriteJobStream(const std::string& dir, const JobStreamTruth& job);

}  // namespace cupmon::testing
