// StepSums: activity intervals held per step, summed into work, collective time and host gap.
#include "step_sums.h"

#include <cupti.h>

#include <algorithm>
#include <span>

#include "unaligned_load.h"

namespace cupmon {

bool IsCollectiveKernelName(std::string_view name) {
  return name.starts_with("ncclDevKernel_") || name.starts_with("ncclKernel_") ||
         name.starts_with("void ncclKernel_") || name.starts_with("void ncclDevKernel_");
}

StepSums::StepSums(const SessionFacts& facts) : facts_(facts) { totals_.on = true; }

void StepSums::NoteStrings(const std::vector<pb::StringEntry>& entries) {
  for (const pb::StringEntry& e : entries) {
    if (collective_names_.size() >= kMaxCollectiveNames) return;
    if (IsCollectiveKernelName(e.text())) collective_names_.insert(e.pointer());
  }
  last_pointer_ = 0;  // the cache may say "not a collective" for a pointer just learned
  last_collective_ = false;
}

bool StepSums::IsCollective(uint64_t pointer) {
  if (pointer != last_pointer_ || pointer == 0) {
    last_pointer_ = pointer;
    last_collective_ = collective_names_.count(pointer) != 0;
  }
  return last_collective_;
}

void StepSums::Add(const uint8_t* buffer, size_t valid) {
  WalkRecords({buffer, valid}, facts_.sizes, [&](uint32_t kind, std::span<const uint8_t> rec) {
    const BusyOffsets* o = nullptr;
    const bool kernel =
        kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL;
    if (kernel)
      o = &facts_.kernel;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY)
      o = &facts_.memcpy;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY2)
      o = &facts_.memcpy2;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMSET)
      o = &facts_.memset;
    if (!o || o->end == 0) return;
    const auto start = LoadUnaligned<uint64_t>(rec.data() + o->start);
    const auto end = LoadUnaligned<uint64_t>(rec.data() + o->end);
    if (start == 0 || end <= start) return;  // unknown times are never shown as durations
    const bool collective =
        kernel && facts_.kernel_name_offset != 0 &&
        IsCollective(LoadUnaligned<uint64_t>(rec.data() + facts_.kernel_name_offset));
    Hold(start, end, collective);
  });
}

void StepSums::Hold(uint64_t start, uint64_t end, bool collective) {
  if (!holding_) {
    floor_end_ = std::max(floor_end_, end);
    unheld_until_ = have_unheld_ ? std::max(unheld_until_, start) : start;
    have_unheld_ = true;
    return;
  }
  if (start < summed_until_) {
    // Its step was summed already: left out, but its end still bounds the next host gap.
    ++dropped_;
    floor_end_ = std::max(floor_end_, end);
    return;
  }
  if (held_.size() >= kMaxHeld) DropOldest();
  held_.push_back({start, end, collective});
}

void StepSums::DropOldest() {
  const size_t half = held_.size() / 2;
  std::nth_element(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(half), held_.end(),
                   [](const Interval& a, const Interval& b) { return a.start < b.start; });
  for (size_t i = 0; i < half; ++i) {
    floor_end_ = std::max(floor_end_, held_[i].end);
    cut_until_ = have_cut_ ? std::max(cut_until_, held_[i].start) : held_[i].start;
    have_cut_ = true;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<ptrdiff_t>(half));
  dropped_ += half;
}

void StepSums::OnBoundary(uint64_t number, uint64_t start) {
  if (!bounds_.empty() && start <= bounds_.back().start) return;  // the watch keeps them ordered
  holding_ = true;
  bounds_.push_back({number, start});
  while (bounds_.size() >= 3) SumOldestStep();
}

void StepSums::SumOldestStep() {
  const uint64_t begin = bounds_[0].start, end = bounds_[1].start;
  // In place: activities before the step (late ones) only bound its host gap; the step's own are
  // sorted by start; later ones stay held.
  const auto before = std::partition(held_.begin(), held_.end(),
                                     [&](const Interval& iv) { return iv.start < begin; });
  for (auto it = held_.begin(); it != before; ++it) floor_end_ = std::max(floor_end_, it->end);
  const auto own_end =
      std::partition(before, held_.end(), [&](const Interval& iv) { return iv.start < end; });
  std::sort(before, own_end, [](const Interval& a, const Interval& b) { return a.start < b.start; });
  const std::span<const Interval> own(before, own_end);

  StepFigures f;
  f.number = bounds_[0].number;
  f.step_ns = end - begin;
  uint64_t work_until = 0, coll_until = 0, last_end = 0;
  std::optional<uint64_t> first_collective;
  for (const Interval& iv : own) {
    uint64_t& until = iv.collective ? coll_until : work_until;
    uint64_t& sum = iv.collective ? f.collective_ns : f.work_ns;
    if (iv.end > until) {
      sum += iv.end - std::max(iv.start, until);
      until = iv.end;
    }
    if (iv.collective && !first_collective) first_collective = iv.start;
    last_end = std::max(last_end, iv.end);
  }
  // Host gap: [the latest end of every earlier activity, the first collective's start), or to the
  // step's last end (at most its end) without a collective, less what the step's own activities
  // cover of it. Nothing of a later step starts before the window ends, nothing earlier ends
  // inside it: the GPU is idle exactly where the step's activities are not.
  const uint64_t lo = floor_end_;
  const uint64_t hi = first_collective ? *first_collective : std::min(last_end, end);
  if (hi > lo) {
    uint64_t covered = 0, until = lo;
    for (const Interval& iv : own) {
      if (iv.start >= hi) break;
      const uint64_t a = std::max(iv.start, until), b = std::min(iv.end, hi);
      if (b > a) {
        covered += b - a;
        until = b;
      }
    }
    f.host_gap_ns = (hi - lo) - covered;
  }
  floor_end_ = std::max(floor_end_, last_end);
  summed_until_ = end;
  held_.erase(held_.begin(), own_end);

  if (have_unheld_ && unheld_until_ >= begin) {
    // Began before the first boundary came: its activities were not held.
  } else if (have_cut_ && cut_until_ >= begin) {
    ++cut_steps_;  // an interval of this step, or a later one, was dropped
  } else {
    ++totals_.steps;
    totals_.step_ns += f.step_ns;
    totals_.work_ns += f.work_ns;
    totals_.collective_ns += f.collective_ns;
    totals_.host_gap_ns += f.host_gap_ns;
    finished_.push_back(f);
  }
  bounds_.pop_front();
}

}  // namespace cupmon
