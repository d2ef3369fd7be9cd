// StepWatch: kernel records -> StepDetector -> step durations -> slow steps for the control thread.
#include "auto_window.h"

#include <cupti.h>

#include <algorithm>

#include "cupmon/format/record_sizes.h"
#include "unaligned_load.h"

namespace cupmon {

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

void StepWatch::NoteStrings(const std::vector<pb::StringEntry>& entries) {
  if (options_.anchor_kernel.empty()) return;
  for (const pb::StringEntry& e : entries) {
    // Bounded as the names are; a name that was given an id before its text came is not one
    // CUPTI's records point to (the text always precedes the records).
    if (anchors_.size() >= kMaxNames || e.text().find(options_.anchor_kernel) == std::string::npos)
      continue;
    anchors_.insert(std::upper_bound(anchors_.begin(), anchors_.end(), e.pointer()), e.pointer());
  }
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
    if (!options_.anchor_kernel.empty()) {
      anchor_id_.resize(id + 1, false);
      anchor_id_[id] = std::binary_search(anchors_.begin(), anchors_.end(), pointer);
    }
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
    const auto start = LoadUnaligned<uint64_t>(p + o.start);
    if (start == 0) return;
    const uint64_t stream_key = (uint64_t{LoadUnaligned<uint32_t>(p + o.device)} << 32) |
                                LoadUnaligned<uint32_t>(p + o.stream);
    const uint64_t pointer = LoadUnaligned<uint64_t>(p + name_at);
    const uint32_t id = NameId(pointer);
    ++kernels_;
    if (options_.anchor_kernel.empty()) {
      detector_.OnKernel(stream_key, id, start);
      return;
    }
    const bool anchor = id ? anchor_id_[id]
                           : std::binary_search(anchors_.begin(), anchors_.end(), pointer);
    if (!anchor) return;
    if (!have_anchor_stream_) anchor_stream_ = stream_key, have_anchor_stream_ = true;
    if (stream_key != anchor_stream_) return;
    held_anchors_.push_back(start);
    if (held_anchors_.size() >= kMaxHeldAnchors) ReleaseAnchors(kMaxHeldAnchors / 2);
  });
  if (detector_.has_boundaries()) OnBoundaries();
}

void StepWatch::Settle() {
  if (!options_.anchor_kernel.empty()) {
    ReleaseAnchors(held_anchors_.size());
    return;
  }
  detector_.ReleaseHeld();
  if (detector_.has_boundaries()) OnBoundaries();
}

void StepWatch::ReleaseAnchors(size_t count) {
  std::sort(held_anchors_.begin(), held_anchors_.end());
  for (size_t i = 0; i < count; ++i) OnBoundary(StepBoundary{++anchor_count_, held_anchors_[i], 0});
  held_anchors_.erase(held_anchors_.begin(), held_anchors_.begin() + static_cast<ptrdiff_t>(count));
}

uint64_t StepWatch::Median() {
  scratch_.assign(recent_.begin(), recent_.end());
  auto mid = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

uint64_t StepWatch::Mad(uint64_t median) {
  scratch_.clear();
  for (uint64_t d : recent_) scratch_.push_back(d > median ? d - median : median - d);
  auto mid = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

void StepWatch::OnBoundaries() {
  for (const StepBoundary& b : detector_.TakeBoundaries()) OnBoundary(b);
}

void StepWatch::OnBoundary(const StepBoundary& b) {
  if (last_boundary_ && b.start <= last_boundary_->start) return;  // out of order: not timed
  if (last_boundary_) {
    const uint64_t duration = b.start - last_boundary_->start;
    if (timed_ >= options_.min_steps && !recent_.empty()) {
      const uint64_t median = Median();
      const double once = mailbox_.once_factor();
      const auto passes = [&](double f) {
        return f > 0 && static_cast<double>(duration) > f * static_cast<double>(median);
      };
      // Per step, not per record: a second nth_element over at most 64 durations.
      const auto beyond_spread = [&] {
        return static_cast<double>(duration) >
               static_cast<double>(median) + kSpreadMads * static_cast<double>(Mad(median));
      };
      if (passes(once) || (passes(options_.factor) && beyond_spread())) {
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

}  // namespace cupmon
