// StepWatch: kernel records -> StepDetector -> step durations -> slow steps for the control thread.
#include "auto_window.h"

#include <cupti.h>

#include <algorithm>
#include <cstring>

#include "cupmon/format/record_sizes.h"

namespace cupmon {
namespace {

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

StepDetectorOptions StepWatch::MonitorDetectorOptions() {
  StepDetectorOptions o;
  o.max_learn_kernels = size_t{1} << 16;
  o.reorder_kernels = size_t{1} << 15;
  return o;
}

StepWatch::StepWatch(const SessionFacts& facts, Options options, AutoWindowMailbox& mailbox)
    : facts_(facts), options_(options), mailbox_(mailbox), detector_(options.detector) {
  recent_.reserve(kMedianSteps);
  scratch_.reserve(kMedianSteps);
}

uint32_t StepWatch::NameId(uint64_t pointer) {
  // Consecutive kernels often share a name (one-entry cache before the map).
  if (pointer == last_pointer_ && last_id_) return last_id_;
  uint32_t id = 0;  // names past kMaxNames share id 0: bounded, and rare names rarely open steps
  if (auto it = names_.find(pointer); it != names_.end()) {
    id = it->second;
  } else if (names_.size() < kMaxNames) {
    id = static_cast<uint32_t>(names_.size() + 1);
    names_.emplace(pointer, id);
  }
  last_pointer_ = pointer;
  last_id_ = id;
  return id;
}

void StepWatch::Add(const uint8_t* buffer, size_t valid) {
  const BusyOffsets& o = facts_.kernel;
  const uint32_t name_at = facts_.kernel_name_offset;
  if (o.start == 0 || name_at == 0) return;  // layout unknown: nothing is read
  WalkRecords({buffer, valid}, facts_.sizes, [&](uint32_t kind, std::span<const uint8_t> rec) {
    if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && kind != CUPTI_ACTIVITY_KIND_KERNEL)
      return;
    const uint8_t* p = rec.data();
    const auto start = Load<uint64_t>(p + o.start);
    if (start == 0) return;
    const uint64_t stream_key =
        (uint64_t{Load<uint32_t>(p + o.device)} << 32) | Load<uint32_t>(p + o.stream);
    detector_.OnKernel(stream_key, NameId(Load<uint64_t>(p + name_at)), start);
    ++kernels_;
  });
  if (detector_.has_boundaries()) OnBoundaries();
}

uint64_t StepWatch::Median() {
  scratch_.assign(recent_.begin(), recent_.end());
  auto mid = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

void StepWatch::OnBoundaries() {
  for (const StepBoundary& b : detector_.TakeBoundaries()) {
    if (last_boundary_ && b.start > last_boundary_->start) {
      const uint64_t duration = b.start - last_boundary_->start;
      if (timed_ >= options_.min_steps && !recent_.empty()) {
        const uint64_t median = Median();
        const double once = mailbox_.once_factor();
        const auto passes = [&](double f) {
          return f > 0 && static_cast<double>(duration) > f * static_cast<double>(median);
        };
        if (passes(once) || passes(options_.factor)) {
          SlowStep s;
          s.step = last_boundary_->number;
          s.duration_ns = duration;
          s.median_ns = median;
          s.once = passes(once);
          s.factor = s.once ? once : options_.factor;
          if (!mailbox_.Offer(s)) ++refused_;
        }
      }
      if (recent_.size() < kMedianSteps) {
        recent_.push_back(duration);
      } else {
        recent_[recent_pos_] = duration;
        recent_pos_ = (recent_pos_ + 1) % kMedianSteps;
      }
      ++timed_;
    }
    last_boundary_ = b;
  }
}

}  // namespace cupmon
