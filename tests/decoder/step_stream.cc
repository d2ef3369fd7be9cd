// WriteStepRecording: synthetic training loops for the steps tests and benchmark.
#include "step_stream.h"

#include <algorithm>

#include "cupmon/base/check.h"
#include "recording_builder.h"

namespace cupmon::testing {
namespace {

constexpr uint64_t kNameBase = 0x7f0000200000;
constexpr uint64_t kForwardLabel = 999, kStepLabelBase = 1000;
enum Name : uint32_t {
  kInitNormal, kGemmFwd, kBiasAdd, kRelu, kMse, kMean, kReluBwd, kGemmDgrad, kGemmWgrad,
  kBiasGrad, kFillZeros, kAdamA, kAdamB, kNoise, kSideNoise, kAllReduce, kNameCount
};
const char* const kNames[kNameCount] = {
    "_Z11init_normalPfi",   "_Z8gemm_fwdPKfS0_Pfi", "_Z8bias_addPfPKfi",
    "_Z4reluPfi",           "_Z8mse_lossPKfS0_Pf",  "_Z11mean_reducePKfPf",
    "_Z8relu_bwdPfPKfi",    "_Z10gemm_dgradPKfS0_Pf", "_Z10gemm_wgradPKfS0_Pf",
    "_Z9bias_gradPKfPf",    "_Z10fill_zerosPfi",    "_Z19adam_multi_tensor_aPPfi",
    "_Z19adam_multi_tensor_bPPfi", "_Z12index_selectPKfPKiPf", "_Z13prefetch_copyPfPKfi",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};

struct Rec {
  bool kernel;
  uint64_t start, end;
  uint32_t corr, name, stream;
  uint64_t label;  // external id, 0: none
  uint32_t device_offset = 0;  // its device is the rank's plus this
  bool deliver_last = false;
};

struct Rank {
  std::vector<Rec> recs;
  uint64_t t = 0;
  uint32_t corr = 1;
};

}  // namespace

StepStreamTruth WriteStepRecording(const std::string& dir, const StepStreamSpec& spec) {
  StepStreamTruth truth;
  truth.kernels_per_step = 3 * spec.layers + 2 + 4 * spec.layers + 2;
  std::vector<Rank> ranks(std::max<uint32_t>(spec.ranks, 1));
  uint64_t lcg = 2024;
  auto next = [&lcg] {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(lcg >> 33);
  };
  auto kernel = [&](Rank& r, uint32_t name, uint64_t dur, uint64_t label, uint32_t stream = 7) {
    r.recs.push_back(Rec{true, r.t, r.t + dur, r.corr++, name, stream, label});
    r.t += dur + 2'000;
  };
  for (Rank& r : ranks) {
    r.t = kT0 + 1'000'000;
    for (int i = 0; i < 4; ++i) {
      r.recs.push_back(Rec{false, r.t, r.t + 20'000, r.corr++, 0, 7, 0});
      r.t += 30'000;
    }
    for (uint32_t i = 0; i < spec.init_kernels; ++i) kernel(r, kInitNormal, 4'000, 0);
    r.t += 50'000'000;  // building the model, the optimizer, the data loader
  }
  uint64_t records = 0;
  for (uint32_t k = 1; k <= spec.steps; ++k) {
    if (spec.max_records && records >= spec.max_records) break;
    const uint64_t dur = k <= spec.warmup ? 12'000 : 6'000;
    const uint64_t step_label = spec.annotate ? kStepLabelBase + k - 1 : 0;
    const uint64_t forward_label = spec.annotate ? kForwardLabel : 0;
    std::vector<uint64_t> bwd_end(ranks.size());
    for (size_t ri = 0; ri < ranks.size(); ++ri) {
      Rank& r = ranks[ri];
      r.t += 300'000 + next() % 100'000;  // the loop, the data loader
      if (k == spec.slow_step) r.t += spec.slow_gap_ns;
      if (ranks.size() > 1 && ri == spec.straggler_rank && k == spec.straggler_step)
        r.t += spec.straggler_ns;
      if (ri == 0) truth.step_starts.push_back(r.t);
      const uint64_t step_t = r.t;
      for (uint32_t l = 0; l < spec.layers; ++l) {
        kernel(r, kGemmFwd, dur + next() % 2'000, forward_label);
        if (l == 0) r.recs.push_back(Rec{false, r.t, r.t + 5'000, r.corr++, 0, 7, step_label});
        if (spec.overlap_streams && l == 1)
          r.recs.push_back(Rec{true, r.t, r.t + 3 * dur, r.corr++, kSideNoise, 21, 0, 1});
        kernel(r, kBiasAdd, dur / 2, forward_label);
        kernel(r, kRelu, dur / 2, forward_label);
      }
      if (spec.noise) {  // a side stream's prefetch somewhere in the step
        r.recs.push_back(Rec{true, step_t + 20'000, step_t + 30'000, r.corr++, kSideNoise, 9, 0});
      }
      if (k == spec.late_step)
        r.recs.push_back(
            Rec{true, step_t + 40'000, step_t + 45'000, r.corr++, kSideNoise, 9, 0, 0, true});
      kernel(r, kMse, dur, forward_label);
      kernel(r, kMean, dur, forward_label);
      for (uint32_t l = 0; l < spec.layers; ++l) {
        if (spec.overlap_streams && l == spec.layers / 2)  // runs past the backward pass
          r.recs.push_back(Rec{true, r.t, r.t + 3 * dur * (spec.layers - l) + 40'000, r.corr++,
                               kAllReduce, 13, step_label});
        kernel(r, kReluBwd, dur / 2, step_label);
        kernel(r, kGemmDgrad, dur, step_label);
        if (spec.noise && k % 7 == 3 && l == spec.layers / 2) kernel(r, kNoise, dur, step_label);
        kernel(r, kGemmWgrad, dur * spec.wgrad_factor, step_label);
        kernel(r, kBiasGrad, dur / 2, step_label);
      }
      bwd_end[ri] = r.t;
    }
    if (ranks.size() > 1) {
      // The all-reduce ends when the last rank has joined it.
      const uint64_t done = *std::max_element(bwd_end.begin(), bwd_end.end()) + 30'000;
      for (Rank& r : ranks) {
        r.recs.push_back(Rec{true, r.t, done, r.corr++, kAllReduce, 13, step_label});
        r.t = done + 2'000;
      }
    }
    for (Rank& r : ranks) {
      if (k == 1)
        for (uint32_t i = 0; i < spec.first_step_extra; ++i) kernel(r, kFillZeros, 2'000, step_label);
      kernel(r, kAdamA, dur, step_label);
      kernel(r, kAdamB, dur, step_label);
      if (spec.overlap_streams && k % 5 == 0)  // longer than the wait before the next step
        r.recs.push_back(Rec{true, r.t, r.t + 500'000, r.corr++, kSideNoise, 9, 0});
    }
    records = 0;
    for (const Rank& r : ranks) records += r.recs.size() * (spec.annotate ? 2 : 1);
  }

  for (size_t ri = 0; ri < ranks.size(); ++ri) {
    Rank& r = ranks[ri];
    pb::RecordingHeader header = SyntheticHeader(kTestRecordingId + ri, kTestPid + static_cast<uint32_t>(ri));
    if (ranks.size() > 1) {
      header.set_rank(static_cast<int32_t>(ri));
      header.set_world_size(static_cast<int32_t>(ranks.size()));
      header.set_job_id("synthetic-job");
    }
    auto opts = WriterOptions(dir, "cupmon-steps-r" + std::to_string(ri));
    opts.files.retention_bytes = 1ull << 40;
    RecordingWriter w(opts, header);
    CUPMON_CHECK(w.Open().has_value());
    std::vector<pb::StringEntry> strings;
    for (uint32_t i = 0; i < kNameCount; ++i) {
      auto& e = strings.emplace_back();
      e.set_pointer(kNameBase + 0x100u * i);
      e.set_text(kNames[i]);
    }
    if (spec.annotate) {
      auto& f = strings.emplace_back();
      f.set_pointer(kForwardLabel);
      f.set_text("forward");
      for (uint32_t k = 0; k < spec.steps; ++k) {
        auto& e = strings.emplace_back();
        e.set_pointer(kStepLabelBase + k);
        e.set_text("step " + std::to_string(k));
      }
    }
    w.AddStrings(strings);
    pb::Calibration cal;
    auto* sample = cal.add_samples();
    sample->set_cupti_ns(kT0);
    sample->set_realtime_ns(static_cast<int64_t>(kT0) + 2000);
    sample->set_monotonic_ns(1000);
    w.WriteCalibration(cal);
    std::stable_partition(r.recs.begin(), r.recs.end(),
                          [](const Rec& x) { return !x.deliver_last; });
    // CUPTI records a kernel when it ends.
    if (spec.overlap_streams)
      std::stable_sort(r.recs.begin(), r.recs.end(),
                       [](const Rec& x, const Rec& y) { return x.end < y.end; });
    // Two buffers filled side by side (records alternate in runs of five), the first delivered
    // first; external correlations in their own buffer after them, as CUPTI hands them over.
    BufferBuilder a, b, ext;
    for (size_t at = 0; at < r.recs.size(); at += 2 * spec.buffer_records) {
      a.Clear(), b.Clear(), ext.Clear();
      const size_t end = std::min(r.recs.size(), at + 2 * spec.buffer_records);
      for (size_t i = at; i < end; ++i) {
        const Rec& x = r.recs[i];
        BufferBuilder& to = (i / 5) % 2 ? b : a;
        if (x.kernel)
          to.Kernel(x.start, x.end, x.corr, kNameBase + 0x100u * x.name, x.stream,
                    static_cast<uint32_t>(ri) + x.device_offset);
        else to.Memcpy(x.start, x.end, x.corr, 1, spec.memcpy_bytes, 7);
        if (x.label) ext.External(x.corr, x.label);
      }
      for (BufferBuilder* buf : {&a, &b, &ext})
        if (buf->records()) w.WriteRawBuffer(buf->bytes(), buf == &ext ? 0 : 1, buf == &ext ? 0 : 7);
      truth.records += a.records() + b.records() + ext.records();
    }
    w.WriteStats(static_cast<int64_t>(r.t));
    w.Close(static_cast<int64_t>(r.t));
  }
  return truth;
}

}  // namespace cupmon::testing
