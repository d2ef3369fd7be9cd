// TimelineBuilder: activities swept in start order into fixed wall-clock buckets, one open bucket
// per device; and the bucket-size parser of `cupmon-decode timeline --bucket`.
#include "cupmon/decoder/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace cupmon::decoder {

uint64_t TimelineBuilder::Sweep::Insert(int64_t start, int64_t end, uint64_t* missed) {
  const int64_t pos = open ? s : done;
  if (start < pos) {
    // Out of start order: what lies before the sweep position may overlap intervals already
    // counted, so it is left out (and reported) rather than counted twice.
    *missed += static_cast<uint64_t>(std::min(end, pos) - start);
    if (end <= pos) return 0;
    start = pos;
  }
  if (!open) {
    open = true;
    s = start;
    e = end;
    return 0;
  }
  if (start <= e) {
    e = std::max(e, end);
    return 0;
  }
  const auto closed = static_cast<uint64_t>(e - s);
  done = e;
  s = start;
  e = end;
  return closed;
}

uint64_t TimelineBuilder::Sweep::Cut(int64_t boundary) {
  if (!open || s >= boundary) return 0;
  const auto busy = static_cast<uint64_t>(std::min(e, boundary) - s);
  if (e > boundary) {
    s = boundary;
  } else {
    open = false;
    done = e;
  }
  return busy;
}

TimelineBuilder::TimelineBuilder(TimelineOptions options, EmitFn emit)
    : options_(options), emit_(std::move(emit)) {
  if (options_.bucket_ns == 0) options_.bucket_ns = 1;  // ParseBucketSize refuses 0 first
}

int64_t TimelineBuilder::BucketIndex(int64_t t) const {
  const auto b = static_cast<int64_t>(options_.bucket_ns);
  return t >= 0 ? t / b : -((-t + b - 1) / b);
}

bool TimelineBuilder::Advance() {
  const auto b = static_cast<int64_t>(options_.bucket_ns);
  const int64_t start = current_ * b;
  for (auto& [id, d] : devices_) {
    TimelineBucket& bucket = d.bucket;
    bucket.busy_ns += d.all.Cut(start + b);
    bucket.kernel_busy_ns += d.kernels.Cut(start + b);
    bucket.start = start;
    bucket.length = options_.bucket_ns;
    bucket.device = id;
    if (counts_.rows >= options_.max_rows) {
      counts_.too_many_rows = true;
      counts_.too_many_rows_at = start;
      stopped_ = true;
      return false;
    }
    bucket.memory_in_use = d.in_use;
    emit_(bucket);
    ++counts_.rows;
    bucket = TimelineBucket{};
    bucket.memory_peak = d.in_use;  // what the next bucket begins with
  }
  ++current_;
  return true;
}

namespace {
// Later starts first out of std::push_heap's max-heap: a min-heap by start.
bool LaterStart(const TimelineActivity& a, const TimelineActivity& b) { return a.start > b.start; }
}  // namespace

void TimelineBuilder::Add(const TimelineActivity& a) {
  if (stopped_) return;
  ++counts_.activities;
  if (options_.reorder_rows == 0) return SweepOne(a);
  // Most activities extend the sorted run (O(1)); only those that do not go to the heap.
  if (run_.empty() || a.start >= run_.back().start) {
    run_.push_back(a);
  } else {
    late_heap_.push_back(a);
    std::push_heap(late_heap_.begin(), late_heap_.end(), LaterStart);
  }
  if (run_.size() + late_heap_.size() > options_.reorder_rows) ReleaseFirst();
}

void TimelineBuilder::ReleaseFirst() {
  if (!late_heap_.empty() && (run_.empty() || late_heap_.front().start < run_.front().start)) {
    std::pop_heap(late_heap_.begin(), late_heap_.end(), LaterStart);
    const TimelineActivity first = late_heap_.back();
    late_heap_.pop_back();
    SweepOne(first);
  } else {
    const TimelineActivity first = run_.front();
    run_.pop_front();
    SweepOne(first);
  }
}

void TimelineBuilder::SweepOne(const TimelineActivity& a) {
  if (stopped_) return;
  // Bucket arithmetic stays far from int64 overflow (2^62 ns is the year 2116).
  constexpr int64_t kLimit = int64_t{1} << 62;
  if (a.start < -kLimit || a.start > kLimit || a.end > kLimit) {
    ++counts_.out_of_range;
    return;
  }
  const int64_t end = std::max(a.end, a.start);
  const int64_t k = BucketIndex(a.start);
  if (!started_) {
    started_ = true;
    current_ = k;
  }
  if (k < current_) {
    ++counts_.late;
    return;
  }
  if (k > current_) {
    // Refuse a gap that alone would pass the row limit before writing any of it (a bucket far too
    // small for the span, or a bogus timestamp far away).
    const uint64_t buckets = static_cast<uint64_t>(k - current_);
    const uint64_t per = std::max<uint64_t>(devices_.size(), 1);
    if (buckets > (options_.max_rows - std::min(counts_.rows, options_.max_rows)) / per) {
      counts_.too_many_rows = true;
      counts_.too_many_rows_at = k * static_cast<int64_t>(options_.bucket_ns);
      stopped_ = true;
      return;
    }
    while (current_ < k)
      if (!Advance()) return;
  }
  Device& d = devices_[a.device];
  switch (a.kind) {
    case TimelineActivityKind::kAllocation: {
      ++d.bucket.allocations;
      auto [it, fresh] = live_.try_emplace(a.address, Live{a.device, a.bytes});
      if (!fresh) {
        ChangeInUse(it->second.device, -static_cast<int64_t>(it->second.bytes));
        it->second = Live{a.device, a.bytes};
      }
      ChangeInUse(a.device, static_cast<int64_t>(a.bytes));
      return;
    }
    case TimelineActivityKind::kRelease: {
      ++d.bucket.releases;
      auto it = live_.find(a.address);
      if (it == live_.end()) {
        ++counts_.unknown_releases;
        return;
      }
      const Live l = it->second;  // the allocation's size and device: what was added
      live_.erase(it);
      ChangeInUse(l.device, -static_cast<int64_t>(l.bytes));
      return;
    }
    case TimelineActivityKind::kKernel: ++d.bucket.kernels; break;
    case TimelineActivityKind::kMemset: ++d.bucket.memsets; break;
    case TimelineActivityKind::kMemcpy:
      ++d.bucket.memcpys;
      d.bucket.memcpy_bytes += a.bytes;
      if (a.direction == CopyDirection::kHostToDevice) d.bucket.h2d_bytes += a.bytes;
      if (a.direction == CopyDirection::kDeviceToHost) d.bucket.d2h_bytes += a.bytes;
      if (a.direction == CopyDirection::kDeviceToDevice) d.bucket.d2d_bytes += a.bytes;
      break;
  }
  d.bucket.busy_ns += d.all.Insert(a.start, end, &counts_.late_busy_ns_missed);
  if (a.kind == TimelineActivityKind::kKernel)
    d.bucket.kernel_busy_ns += d.kernels.Insert(a.start, end, &counts_.kernel_busy_ns_missed);
}

void TimelineBuilder::ChangeInUse(uint32_t device, int64_t delta) {
  Device& d = devices_[device];
  d.in_use = static_cast<uint64_t>(static_cast<int64_t>(d.in_use) + delta);
  d.bucket.memory_peak = std::max(d.bucket.memory_peak, d.in_use);
}

void TimelineBuilder::Finish() {
  while (!run_.empty() || !late_heap_.empty()) ReleaseFirst();
  if (stopped_ || !started_) return;
  int64_t last = current_;
  for (const auto& [id, d] : devices_)
    if (d.all.open) last = std::max(last, BucketIndex(d.all.e > d.all.s ? d.all.e - 1 : d.all.e));
  const uint64_t buckets = static_cast<uint64_t>(last - current_) + 1;
  const uint64_t per = std::max<uint64_t>(devices_.size(), 1);
  if (buckets > (options_.max_rows - std::min(counts_.rows, options_.max_rows)) / per) {
    counts_.too_many_rows = true;
    counts_.too_many_rows_at = current_ * static_cast<int64_t>(options_.bucket_ns);
    stopped_ = true;
    return;
  }
  while (current_ <= last)
    if (!Advance()) return;
  stopped_ = true;  // a second Finish, or an Add after it, does nothing
}

Expected<uint64_t> ParseBucketSize(const std::string& text) {
  const std::string expected =
      "expected a positive number with a unit (ns, us, ms, s, m, h), e.g. 100ms, 1s, 10s, 1m, 1h";
  if (text.empty()) return MakeError("bucket size is empty: " + expected);
  if (text[0] == '-' || text[0] == '+')
    return MakeError("bucket size '" + text + "' has a sign: " + expected);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(v) || text.find_first_of("xXpP") != std::string::npos)
    return MakeError("bucket size '" + text + "' is not a number: " + expected);
  const std::string unit(end);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else if (unit.empty()) return MakeError("bucket size '" + text + "' has no unit: " + expected);
  else
    return MakeError("bucket size '" + text + "' has an unknown unit '" + unit + "': " + expected);
  const double ns = v * scale;
  if (ns <= 0) return MakeError("bucket size '" + text + "' is zero: " + expected);
  if (ns < 1e3)
    return MakeError("bucket size '" + text +
                     "' is below 1us: far finer than the clocks' calibration, and one row per "
                     "device per bucket would be mostly empty");
  if (ns > 366.0 * 24 * 3600e9)
    return MakeError("bucket size '" + text + "' is longer than 366 days");
  return static_cast<uint64_t>(std::llround(ns));
}

}  // namespace cupmon::decoder
