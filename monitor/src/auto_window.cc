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
  recent_.values.reserve(kMedianSteps);
  scratch_.reserve(kMedianSteps);
  if (options_.sums) sums_ = std::make_unique<StepSums>(facts);
}

void StepWatch::Recent::Add(uint64_t v) {
  if (values.size() < kMedianSteps) {
    values.push_back(v);
  } else {
    values[pos] = v;
    pos = (pos + 1) % kMedianSteps;
  }
}

void StepWatch::NoteStrings(const std::vector<pb::StringEntry>& entries) {
  if (sums_) sums_->NoteStrings(entries);
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
  if (sums_) sums_->Add(buffer, valid);
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

uint64_t StepWatch::Median(const Recent& r) {
  scratch_.assign(r.values.begin(), r.values.end());
  auto mid = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

uint64_t StepWatch::Mad(const Recent& r, uint64_t median) {
  scratch_.clear();
  for (uint64_t d : r.values) scratch_.push_back(d > median ? d - median : median - d);
  auto mid = scratch_.begin() + static_cast<ptrdiff_t>(scratch_.size() / 2);
  std::nth_element(scratch_.begin(), mid, scratch_.end());
  return *mid;
}

void StepWatch::OnBoundaries() {
  for (const StepBoundary& b : detector_.TakeBoundaries()) OnBoundary(b);
}

bool StepWatch::Exceeds(const Recent& r, uint64_t value, double factor, bool spread,
                        uint64_t* median) {
  *median = Median(r);
  if (!(factor > 0) || static_cast<double>(value) <= factor * static_cast<double>(*median))
    return false;
  // Per step, not per record: a second nth_element over at most 64 values.
  return !spread || static_cast<double>(value) >
                        static_cast<double>(*median) +
                            kSpreadMads * static_cast<double>(Mad(r, *median));
}

void StepWatch::OnBoundary(const StepBoundary& b) {
  if (last_boundary_ && b.start <= last_boundary_->start) return;  // out of order: not timed
  if (last_boundary_) {
    const uint64_t duration = b.start - last_boundary_->start;
    if (timed_ >= options_.min_steps && !recent_.values.empty()) {
      const double once = mailbox_.once_factor();
      const double factor = options_.by == AutoWindowBy::kStep ? options_.factor : 0;
      uint64_t median = 0;
      const bool by_once = Exceeds(recent_, duration, once, false, &median);
      if (by_once || Exceeds(recent_, duration, factor, true, &median)) {
        SlowStep s;
        s.step = last_boundary_->number;
        s.duration_ns = duration;
        s.median_ns = median;
        s.once = by_once;
        s.factor = s.once ? once : options_.factor;
        if (!mailbox_.Offer(s)) ++refused_;
      }
    }
    recent_.Add(duration);
    ++timed_;
  }
  last_boundary_ = b;
  if (sums_) {
    sums_->OnBoundary(b.number, b.start);
    for (const StepFigures& f : sums_->finished()) OnFigures(f);
    sums_->ClearFinished();
  }
}

void StepWatch::OnFigures(const StepFigures& f) {
  uint64_t value = 0;
  switch (options_.by) {
    case AutoWindowBy::kStep: return;
    case AutoWindowBy::kWork: value = f.work_ns; break;
    case AutoWindowBy::kHostGap: value = f.host_gap_ns; break;
    case AutoWindowBy::kOwn: value = f.work_ns + f.host_gap_ns; break;
  }
  uint64_t median = 0;
  if (figures_seen_ >= options_.min_steps && !recent_by_.values.empty() &&
      Exceeds(recent_by_, value, options_.factor, true, &median) &&
      value > median + kMinExcessNs) {
    SlowStep s;
    s.step = f.number;
    s.duration_ns = value;
    s.median_ns = median;
    s.by = options_.by;
    s.factor = options_.factor;
    if (!mailbox_.Offer(s)) ++refused_;
  }
  recent_by_.Add(value);
  ++figures_seen_;
}

}  // namespace cupmon
