// Synthetic training loops (CUPTI test double, not GPU data) for `cupmon-decode steps`: an MLP-like
// step of forward, loss, backward and optimizer kernels repeated, with initialisation before the
// first step, warm-up steps that differ, noise kernels, a deliberately slow step, annotations and
// several ranks. Used by tests/decoder/steps_test.cc and `cupmon-make-sample --steps`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cupmon::testing {

struct StepStreamSpec {
  uint32_t steps = 60;
  uint32_t layers = 8;           // per layer: 3 forward and 4 backward kernels
  uint32_t warmup = 3;           // the first steps: longer kernels
  uint32_t first_step_extra = 16;  // step 1 only: optimizer-state fills before the optimizer
  uint32_t init_kernels = 5;     // before the first step (parameter init), plus 4 memcpys
  uint32_t slow_step = 0;        // 1-based; 0: none. Its launches start slow_gap_ns late
  uint64_t slow_gap_ns = 40'000'000;
  bool noise = true;             // a side stream's unrelated kernels, and an extra kernel in
                                 // every 7th step's backward pass
  bool annotate = false;         // external correlations: "step N" (0-based N), "forward" nested
  uint64_t memcpy_bytes = 1 << 20;  // one HtoD copy at the start of every step
  uint32_t wgrad_factor = 1;     // gemm_wgrad lasts this many times longer (a regression to diff)
  uint32_t ranks = 1;            // >1: one recording per rank, NCCL all-reduce each step
  uint32_t straggler_rank = 1, straggler_step = 0;  // that rank starts that step late
  uint64_t straggler_ns = 5'000'000;
  size_t buffer_records = 4000;  // records per raw buffer, delivered as CUPTI does: two buffers
                                 // filled side by side, so the stream is not in start order
  uint64_t max_records = 0;      // >0: stop after about this many records (benchmarks)
  // Streams that overlap, recorded as CUPTI records kernels (when they end), so that records
  // arrive far out of start order: an all-reduce on stream 13 launched halfway through the
  // backward pass and running past it, a kernel on device rank+1 beside the forward pass, and in
  // every 5th step a side-stream kernel after the optimizer that runs into the next step.
  bool overlap_streams = false;
  // >0: that step (1-based) has a side-stream kernel whose record comes after every other record
  // of the recording (further out of start order than `steps` holds, on a long recording).
  uint32_t late_step = 0;
};

struct StepStreamTruth {
  std::vector<uint64_t> step_starts;  // CUPTI ns of each step's first kernel (rank 0)
  uint64_t records = 0;               // all ranks
  uint32_t kernels_per_step = 0;      // on the main stream, a plain step
};

// Writes the recording(s) into `dir` (one file set per rank, prefix cupmon-steps-r<rank>).
StepStreamTruth WriteStepRecording(const std::string& dir, const StepStreamSpec& spec);

}  // namespace cupmon::testing
