// The writer's per-record cost of CUPMON_AUTO_WINDOW (monitor/src/auto_window.cc): StepWatch::Add
// over 4 MiB buffers of CUpti_ActivityKernel10 records shaped like a training loop (one stream,
// 200 kernels a step: 5 layers of the same 20 kernels, then 100 kernels of their own; one step in
// 50 twice as long).
// Run: build-BRANCH/tests/bench/cupmon_step_watch_bench; the figure goes in docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>
#include <cupti.h>

#include <cstring>
#include <string>
#include <vector>

#include "cupmon/format/record_sizes.h"
#include "monitor/src/auto_window.h"
#include "monitor/testing/kernel10_facts.h"

namespace cupmon {
namespace {

constexpr size_t kKernelsPerStep = 200;

struct Stream {
  std::vector<std::vector<uint8_t>> buffers;
  size_t kernels = 0;
};

Stream MakeStream(size_t steps) {
  Stream s;
  const size_t per_buffer = (size_t{4} << 20) / sizeof(CUpti_ActivityKernel10);
  uint64_t t = 1'000'000'000;
  std::vector<uint8_t> buf;
  for (size_t step = 0; step < steps; ++step) {
    const uint64_t gap = step % 50 == 49 ? 20'000 : 10'000;
    for (size_t i = 0; i < kKernelsPerStep; ++i) {
      CUpti_ActivityKernel10 k{};
      k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
      k.start = t;
      k.end = t + gap / 2;
      k.streamId = 7;
      const size_t name = i < 100 ? i % 20 : i;
      k.name = reinterpret_cast<const char*>(0x7f0000001000ull + name * 64);
      t += gap;
      const auto* p = reinterpret_cast<const uint8_t*>(&k);
      buf.insert(buf.end(), p, p + sizeof(k));
      ++s.kernels;
      if (buf.size() / sizeof(k) == per_buffer) s.buffers.push_back(std::move(buf)), buf.clear();
    }
  }
  if (!buf.empty()) s.buffers.push_back(std::move(buf));
  return s;
}

// One iteration: a fresh watch learns the pattern and times every step of a 500-step stream
// (100,000 kernels); per_kernel is the time per kernel record (seconds, SI-prefixed).
// Arg 0: no flush marks (the reorder stage releases kernels by its count bound, 2^15 held);
// arg 1: Settle() after every buffer, as the control thread's mark after each flush does.
void BM_StepWatchAdd(benchmark::State& state) {
  const Stream stream = MakeStream(500);
  const SessionFacts facts = cupmon::testing::Kernel10Facts();
  const bool settle = state.range(0) != 0;
  uint64_t timed = 0;
  for (auto _ : state) {
    AutoWindowMailbox mailbox;
    StepWatch watch(facts, StepWatch::Options{}, mailbox);
    for (const auto& b : stream.buffers) {
      watch.Add(b.data(), b.size());
      if (settle) watch.Settle();
    }
    timed = watch.steps_timed();
    benchmark::DoNotOptimize(timed);
  }
  state.counters["per_kernel"] = benchmark::Counter(
      static_cast<double>(stream.kernels) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["steps_timed"] = static_cast<double>(timed);
}
BENCHMARK(BM_StepWatchAdd)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// CUPMON_AUTO_WINDOW_ANCHOR=kernel:step_begin: the step's 101st kernel is named step_begin (the
// others kernel_N); Settle() after every buffer.
void BM_StepWatchAnchor(benchmark::State& state) {
  const Stream stream = MakeStream(500);
  const SessionFacts facts = cupmon::testing::Kernel10Facts();
  std::vector<pb::StringEntry> strings(kKernelsPerStep);
  for (size_t name = 0; name < kKernelsPerStep; ++name) {
    strings[name].set_pointer(0x7f0000001000ull + name * 64);
    strings[name].set_text(name == 100 ? "step_begin" : "kernel_" + std::to_string(name));
  }
  StepWatch::Options o;
  o.anchor_kernel = "step_begin";
  uint64_t timed = 0;
  for (auto _ : state) {
    AutoWindowMailbox mailbox;
    StepWatch watch(facts, o, mailbox);
    watch.NoteStrings(strings);
    for (const auto& b : stream.buffers) {
      watch.Add(b.data(), b.size());
      watch.Settle();
    }
    timed = watch.steps_timed();
    benchmark::DoNotOptimize(timed);
  }
  state.counters["per_kernel"] = benchmark::Counter(
      static_cast<double>(stream.kernels) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["steps_timed"] = static_cast<double>(timed);
}
BENCHMARK(BM_StepWatchAnchor)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cupmon

BENCHMARK_MAIN();
