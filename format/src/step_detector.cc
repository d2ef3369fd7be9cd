// StepDetector: learning the repeating kernel-name pattern of a stream, then cutting it into steps.
#include "cupmon/format/step_detector.h"

#include <algorithm>
#include <unordered_map>

namespace cupmon {
namespace {

constexpr size_t kMaxSignature = 16;

// Min-heap order of the reorder stage (std::push_heap keeps the largest first).
template <typename T>
bool Later(const T& a, const T& b) {
  return a.start > b.start;
}

// The repetition found in one stream's name sequence.
struct Cycle {
  uint32_t period = 0;
  double coverage = 0;
  size_t first = 0;            // first position where the anchor pair opens a repetition
  std::vector<uint32_t> unit;  // one exact repetition, starting right after the anchor pair's cut
};

// Looks at every pair of consecutive names. A pair that occurs once per step recurs at a fixed
// distance (the step's kernel count, its most common distance) wherever steps repeat; its
// coverage is how much of the sequence such repetitions span (distances within 1/16 of it count). The pair of best coverage wins (layers repeated inside
// a step cover only their part of it); near ties go to the shorter period, so an event every N
// steps (an evaluation) does not pass for the step, then to the earlier first occurrence.
std::optional<Cycle> FindCycle(const std::vector<uint32_t>& seq, uint32_t min_cycles,
                               double min_coverage) {
  const size_t n = seq.size();
  if (n < 2 * static_cast<size_t>(min_cycles)) return std::nullopt;
  // Pair ids per position (position i holds the pair (seq[i-1], seq[i])), then positions per pair.
  std::unordered_map<uint64_t, uint32_t> ids;
  std::vector<uint32_t> pair(n, 0), counts;
  for (size_t i = 1; i < n; ++i) {
    const uint64_t key = uint64_t{seq[i - 1]} << 32 | seq[i];
    auto [it, inserted] = ids.try_emplace(key, static_cast<uint32_t>(counts.size()));
    if (inserted) counts.push_back(0);
    pair[i] = it->second;
    ++counts[it->second];
  }
  std::vector<uint32_t> offset(counts.size() + 1, 0);
  for (size_t p = 0; p < counts.size(); ++p) offset[p + 1] = offset[p] + counts[p];
  std::vector<uint32_t> positions(n - 1), fill(offset.begin(), offset.end() - 1);
  for (size_t i = 1; i < n; ++i) positions[fill[pair[i]]++] = static_cast<uint32_t>(i);

  std::optional<Cycle> best;
  size_t best_first = 0;
  std::vector<uint32_t> diffs;
  for (size_t p = 0; p < counts.size(); ++p) {
    if (counts[p] < min_cycles) continue;
    const uint32_t* pos = positions.data() + offset[p];
    diffs.assign(counts[p] - 1, 0);
    for (size_t i = 0; i + 1 < counts[p]; ++i) diffs[i] = pos[i + 1] - pos[i];
    std::sort(diffs.begin(), diffs.end());
    uint32_t mode = 0, mode_count = 0;
    for (size_t i = 0; i < diffs.size();) {
      size_t j = i;
      while (j < diffs.size() && diffs[j] == diffs[i]) ++j;
      if (j - i > mode_count) mode = diffs[i], mode_count = static_cast<uint32_t>(j - i);
      i = j;
    }
    if (mode < 2 || mode_count + 1 < min_cycles) continue;
    // Steps a few kernels longer or shorter (a data-dependent kernel, an extra copy kernel) still
    // repeat the step.
    const uint32_t tolerance = std::max<uint32_t>(1, mode / 16);
    uint64_t covered = 0;
    for (uint32_t d : diffs)
      if (d + tolerance >= mode && d <= mode + tolerance) covered += d;
    const double coverage = static_cast<double>(covered) / static_cast<double>(n);
    if (coverage < min_coverage) continue;
    bool better = !best;
    if (best) {
      if (coverage > best->coverage + 0.02) better = true;
      else if (coverage + 0.02 >= best->coverage)
        better = mode < best->period || (mode == best->period && pos[0] < best_first);
    }
    if (!better) continue;
    // One exact repetition: from the first occurrence followed by the next at distance `mode`.
    size_t at = 0;
    while (pos[at + 1] - pos[at] != mode) ++at;
    Cycle c;
    c.period = mode;
    c.coverage = coverage;
    c.first = pos[0];
    c.unit.assign(seq.begin() + pos[at], seq.begin() + pos[at] + mode);
    best = std::move(c);
    best_first = pos[0];
  }
  return best;
}

}  // namespace

StepDetector::StepDetector(StepDetectorOptions options)
    : options_(options),
      heap_(Allocator<Buffered>(options.huge_mappings)),
      buffer_(Allocator<Buffered>(options.huge_mappings)),
      next_attempt_(std::max<size_t>(options.first_attempt, 16)) {
  options_.max_learn_kernels = std::max(options_.max_learn_kernels, next_attempt_);
}

void StepDetector::OnKernel(uint64_t stream_key, uint32_t name, uint64_t start, uint64_t tag) {
  const Buffered b{stream_key, start, tag, name};
  if (options_.reorder_kernels == 0) {
    Process(b);
    return;
  }
  // The run with the latest tail at or before `start` (the tightest fit keeps runs few).
  Run* fit = nullptr;
  for (Run& r : runs_) {
    if (r.empty()) {
      if (!fit) fit = &r;
    } else if (r.items.back().start <= start && (!fit || fit->empty() ||
                                                  r.items.back().start > fit->items.back().start)) {
      fit = &r;
    }
  }
  if (!fit && runs_.size() < kMaxRuns) {
    fit = &runs_.emplace_back(Run{Kernels(Allocator<Buffered>(options_.huge_mappings)), 0});
    // In a huge mapping from the start: growing through the heap's sizes first cost a page
    // fault per 4 KiB, twice over (1,500 of the kineto export's 3,400 on tests/data/ddp-2rank).
    if (options_.huge_mappings) fit->items.reserve((size_t{2} << 20) / sizeof(Buffered));
  }
  if (fit) {
    if (fit->empty()) fit->items.clear(), fit->head = 0;
    fit->items.push_back(b);
  } else {
    heap_.push_back(b);
    std::push_heap(heap_.begin(), heap_.end(), Later<Buffered>);
  }
  if (++held_ > options_.reorder_kernels) ReleaseOne();
}

void StepDetector::ReleaseOne() {
  Run* first = nullptr;
  for (Run& r : runs_)
    if (!r.empty() && (!first || Later(first->items[first->head], r.items[r.head]))) first = &r;
  --held_;
  if (first && (heap_.empty() || !Later(first->items[first->head], heap_.front()))) {
    const Buffered b = first->items[first->head++];
    if (first->empty()) {
      first->items.clear();
      first->head = 0;
    } else if (first->head >= 4096 && 2 * first->head >= first->items.size()) {
      first->items.erase(first->items.begin(),
                         first->items.begin() + static_cast<ptrdiff_t>(first->head));
      first->head = 0;
    }
    Process(b);
    return;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later<Buffered>);
  const Buffered b = heap_.back();
  heap_.pop_back();
  Process(b);
}

void StepDetector::Process(const Buffered& b) {
  if (pattern_) {
    if (b.stream_key == pattern_->stream_key) Track(b, true);
    return;
  }
  buffer_.push_back(b);
  if (buffer_.size() >= options_.max_learn_kernels && next_attempt_ >= options_.max_learn_kernels &&
      retry_wait_) {
    // Sliding: no step can be cut in the dropped half any more.
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(buffer_.size() / 2));
    dropped_prefix_ = true;
  }
  if (retry_after_) {
    --retry_after_;
    return;
  }
  if (!retry_wait_ && buffer_.size() < next_attempt_) return;
  if (TryLearn(false)) return;
  if (next_attempt_ < options_.max_learn_kernels) {
    next_attempt_ = std::min(2 * next_attempt_, options_.max_learn_kernels);
    return;
  }
  // Doubling up to 8 buffers: a loop that starts after that long may lose up to that many
  // kernels' worth of its first steps.
  retry_wait_ = retry_wait_ ? std::min(2 * retry_wait_, 8 * options_.max_learn_kernels)
                            : options_.max_learn_kernels / 2;
  retry_after_ = retry_wait_;
}

void StepDetector::ReleaseHeld() {
  while (held_) ReleaseOne();
}

void StepDetector::Finish() {
  ReleaseHeld();
  if (!pattern_) TryLearn(true);
}

std::vector<StepBoundary> StepDetector::TakeBoundaries() {
  std::vector<StepBoundary> out;
  out.swap(out_);
  return out;
}

uint64_t StepDetector::settled_until() const {
  if (pattern_) return last_start_;
  return buffer_.empty() ? 0 : buffer_.front().start;
}

bool StepDetector::TryLearn(bool final) {
  if (buffer_.empty()) return false;
  // The busiest stream carries the steps; the others are placed in them by time (the caller).
  std::unordered_map<uint64_t, size_t> per_stream;
  for (const Buffered& b : buffer_) ++per_stream[b.stream_key];
  uint64_t key = 0;
  size_t most = 0;
  for (const auto& [k, c] : per_stream)
    if (c > most || (c == most && k < key)) key = k, most = c;
  std::vector<uint32_t> seq;
  seq.reserve(most);
  for (const Buffered& b : buffer_)
    if (b.stream_key == key) seq.push_back(b.name);
  const auto cycle = FindCycle(seq, options_.min_cycles, options_.min_coverage);
  if (!cycle) {
    if (final) buffer_.clear();
    return false;
  }
  const std::vector<uint32_t>& unit = cycle->unit;
  const size_t p = unit.size();

  // Phase: where the stream's first repetition begins. Walk back from the anchor's first cut
  // matching the unit backwards; kernels that only the first steps have (optimizer state, lazy
  // initialisation) are skipped within a budget, kernels from before the loop end the walk.
  size_t phase = 0, first = cycle->first;
  bool aligned = false;
  if (!dropped_prefix_) {
    ptrdiff_t j = static_cast<ptrdiff_t>(p) - 1;
    size_t skips = 0;
    const size_t budget = p / 2 + 8;
    for (ptrdiff_t k = static_cast<ptrdiff_t>(cycle->first) - 1; k >= 0 && j >= 0; --k) {
      if (seq[static_cast<size_t>(k)] == unit[static_cast<size_t>(j)]) {
        first = static_cast<size_t>(k);
        --j;
      } else if (++skips > budget) {
        break;
      }
    }
    if (j < static_cast<ptrdiff_t>(p) - 1) {
      phase = static_cast<size_t>(j + 1) % p;
      aligned = true;
    }
  }
  // The signature: the shortest run of names ending at the phase's kernel that occurs once in the
  // (cyclic) unit. The anchor pair itself always does (phase 0, length 2).
  auto at = [&](ptrdiff_t i) { return unit[static_cast<size_t>(((i % static_cast<ptrdiff_t>(p)) +
                                                                static_cast<ptrdiff_t>(p)) %
                                                               static_cast<ptrdiff_t>(p))]; };
  std::vector<uint32_t> signature;
  for (size_t len = 2; len <= std::min(kMaxSignature, p) && signature.empty(); ++len) {
    size_t occurrences = 0;
    for (size_t q = 0; q < p && occurrences < 2; ++q) {
      bool same = true;
      for (size_t m = 0; m < len && same; ++m)
        same = at(static_cast<ptrdiff_t>(q) - static_cast<ptrdiff_t>(m)) ==
               at(static_cast<ptrdiff_t>(phase) - static_cast<ptrdiff_t>(m));
      occurrences += same;
    }
    if (occurrences == 1)
      for (size_t m = len; m-- > 0;)
        signature.push_back(at(static_cast<ptrdiff_t>(phase) - static_cast<ptrdiff_t>(m)));
  }
  if (signature.empty()) {
    phase = 0;
    first = cycle->first;
    aligned = false;
    signature = {unit[p - 1], unit[0]};
  }

  StepPattern pat;
  pat.stream_key = key;
  pat.period = cycle->period;
  pat.coverage = cycle->coverage;
  pat.signature = std::move(signature);
  pat.aligned_to_start = aligned;
  pattern_ = std::move(pat);
  ring_.assign(pattern_->signature.size(), 0);
  // Replay the buffered kernels of the stream: the first step opens at `first`, later ones at
  // each signature.
  size_t i = 0;
  for (const Buffered& b : buffer_) {
    if (b.stream_key != key) continue;
    if (i == first && count_ == 0) {
      Emit(b);
      Track(b, false);
    } else {
      Track(b, i > first);
    }
    ++i;
  }
  buffer_.clear();
  buffer_.shrink_to_fit();
  return true;
}

void StepDetector::Track(const Buffered& b, bool emit) {
  const uint32_t name = b.name;
  const uint64_t start = b.start;
  const size_t len = ring_.size();
  ring_[ring_pos_] = name;
  ring_pos_ = ring_pos_ + 1 == len ? 0 : ring_pos_ + 1;
  if (ring_fill_ < len) ++ring_fill_;
  if (start > last_start_) last_start_ = start;
  const std::vector<uint32_t>& sig = pattern_->signature;
  if (!emit || name != sig.back() || ring_fill_ < len) return;
  // ring_pos_ now points at the oldest name.
  for (size_t m = 0; m < len; ++m) {
    const size_t r = ring_pos_ + m < len ? ring_pos_ + m : ring_pos_ + m - len;
    if (ring_[r] != sig[m]) return;
  }
  Emit(b);
}

void StepDetector::Emit(const Buffered& b) { out_.push_back(StepBoundary{++count_, b.start, b.tag}); }

}  // namespace cupmon
