// Steps: a RecordConsumer of the trace builder's records (a decode-only builder for FindSteps, no
// joins and no rows) that feeds the kernels to a StepDetector and places every GPU activity in its
// step.
#include "cupmon/decoder/steps.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <deque>
#include <regex>
#include <unordered_map>

#include "cupmon/base/growing_ring.h"
#include "cupmon/base/mapped_array.h"
#include "cupmon/decoder/clock_map.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {
namespace {

constexpr uint32_t kNoLabel = UINT32_MAX;
constexpr size_t kMaxPending = size_t{1} << 20;
// CUPTI hands external correlations over in the API buffers, after the GPU buffers holding the
// activities they label: the annotation path looks labels up this many records later, as the
// trace builder joins them.
constexpr size_t kJoinHorizon = kDefaultJoinHorizon;

enum class ActivityType : uint8_t { kKernel, kMemcpy, kMemset };

struct Activity {
  uint64_t start, end, bytes;
  uint32_t device;
  uint32_t corr;
  uint32_t label;  // step label id (kNoLabel), set on the annotation path
  ActivityType type;
  bool comm;
};

// Places activities in steps whose boundaries arrive separately, and measures each device's
// busy time and longest gap in each step. An activity waits until every step that could hold it is
// known (`settled`), so other streams' records may arrive ahead of the stream the steps are cut on.
// CUPTI delivers records out of start order (a kernel is recorded when it ends, streams fill
// buffers side by side), so activities are also held until kReorder later ones have come and then
// released in start order: each device's union of intervals is then swept from left to right,
// which is what makes its busy time and gaps exact. An activity further out of order than that is
// late: counted, and left out of its device's figures where it would overlap what was swept.
class StepAccumulator {
 public:
  // times_only: each step's end alone (StepOptions::times_only).
  explicit StepAccumulator(bool times_only = false) : times_only_(times_only) {}
  void AddBoundary(uint64_t start, uint64_t record = UINT64_MAX) {
    if (!steps_.empty() && start <= steps_.back().start) return;  // never out of order
    Step s;
    s.first_record = record;
    s.number = steps_.size() + 1;
    s.start = start;
    steps_.push_back(std::move(s));
  }
  void Add(const Activity& a) {
    // The run with the latest tail at or before a.start (the tightest fit keeps runs few).
    size_t fit = kRuns;
    for (size_t r = 0; r < kRuns; ++r) {
      if (runs_[r].empty()) {
        if (fit == kRuns) fit = r;
      } else if (tails_[r] <= a.start &&
                 (fit == kRuns || runs_[fit].empty() || tails_[r] > tails_[fit])) {
        fit = r;
      }
    }
    if (fit < kRuns) {
      runs_[fit].push_back(a);
      tails_[fit] = a.start;
    } else {
      heap_.push_back(a);
      std::push_heap(heap_.begin(), heap_.end(), StartsLater);
    }
    if (++held_ > kMaxPending) ReleaseFirst();
  }
  // Releases, in start order, the activities held beyond the reorder window whose steps are known.
  void Release(uint64_t settled) {
    while (held() > kReorder && FirstStart() <= settled) ReleaseFirst();
  }
  // Releases everything and closes the steps; `labels` holds the text of each label id.
  std::vector<Step> Finish(const std::vector<std::string>& labels) {
    while (held()) ReleaseFirst();
    for (Merge& m : merges_) Flush(m);
    label_of_.resize(steps_.size(), kNoLabel);
    for (size_t i = 0; i < steps_.size(); ++i) {
      Step& s = steps_[i];
      s.end = std::max(s.end, s.start);
      s.since = i ? std::min(steps_[i - 1].end, s.start) : s.start;
      // The lead-in and the tail are gaps too: [since, first start] and [last end, end].
      for (StepDeviceTime& d : s.devices)
        d.max_gap_ns = std::max({d.max_gap_ns, d.first_start - s.since, s.end - d.last_end});
      if (label_of_[i] != kNoLabel) s.label = labels[label_of_[i]];
    }
    return std::move(steps_);
  }
  uint64_t before() const { return before_; }
  uint64_t end_before() const { return end_before_; }
  size_t size() const { return steps_.size(); }
  uint64_t late() const { return late_; }
  uint64_t late_busy_ns() const { return late_busy_ns_; }

 private:
  // Activities held in start order before they are placed: at least this many, while the steps'
  // boundaries allow (the reorder window of the commands' rows).
  static constexpr size_t kReorder = kDefaultReorderRows;

  // The piece of one device's union being swept: [begin, end] in step `step`.
  struct Merge {
    uint32_t device = 0;
    size_t step = SIZE_MAX;
    uint64_t begin = 0, end = 0;
  };
  static bool StartsLater(const Activity& x, const Activity& y) { return x.start > y.start; }
  size_t held() const { return held_; }
  // Where the earliest held activity is: a run, or kRuns for the heap. Only while some are held.
  size_t First() const {
    size_t first = kRuns;
    uint64_t start = heap_.empty() ? UINT64_MAX : heap_.front().start;  // starts are below 2^62
    for (size_t r = 0; r < kRuns; ++r)
      if (!runs_[r].empty() && runs_[r].front().start < start)
        first = r, start = runs_[r].front().start;
    return first;
  }
  uint64_t FirstStart() const {
    const size_t r = First();
    return r < kRuns ? runs_[r].front().start : heap_.front().start;
  }
  void ReleaseFirst() {
    const size_t r = First();
    --held_;
    if (r < kRuns) {
      const Activity a = runs_[r].front();
      runs_[r].pop_front();
      Place(a);
    } else {
      std::pop_heap(heap_.begin(), heap_.end(), StartsLater);
      const Activity a = heap_.back();
      heap_.pop_back();
      Place(a);
    }
  }
  void Place(const Activity& a) {
    if (steps_.empty() || a.start < steps_.front().start) {
      before_ += a.type == ActivityType::kKernel;
      end_before_ = std::max(end_before_, a.end);
      return;
    }
    // Activities come out in time order: try the step of the previous one first.
    size_t i = std::min(cursor_, steps_.size() - 1);
    if (a.start < steps_[i].start || (i + 1 < steps_.size() && a.start >= steps_[i + 1].start)) {
      if (i + 2 < steps_.size() && a.start >= steps_[i + 1].start && a.start < steps_[i + 2].start) {
        ++i;
      } else {
        auto it = std::upper_bound(steps_.begin(), steps_.end(), a.start,
                                   [](uint64_t t, const Step& s) { return t < s.start; });
        i = static_cast<size_t>(it - steps_.begin()) - 1;
      }
    }
    cursor_ = i;
    Step& s = steps_[i];
    if (a.end > s.end) s.end = a.end;
    if (times_only_) return;
    if (label_of_.size() < steps_.size()) label_of_.resize(steps_.size(), kNoLabel);
    if (a.type == ActivityType::kKernel) {
      ++s.kernels;
      if (a.comm) s.comm_ns += a.end - a.start;
      if (a.label != kNoLabel && label_of_[i] == kNoLabel) label_of_[i] = a.label;
    } else if (a.type == ActivityType::kMemcpy) {
      ++s.memcpys;
      s.memcpy_bytes += a.bytes;
    } else {
      ++s.memsets;
    }
    Sweep(a, i);
  }
  // Extends device a.device's union in step i by [a.start, a.end], in start order.
  void Sweep(const Activity& a, size_t i) {
    Merge* m = nullptr;
    for (Merge& x : merges_)
      if (x.device == a.device) {
        m = &x;
        break;
      }
    if (!m) m = &merges_.emplace_back(Merge{a.device});
    uint64_t start = a.start;
    if (m->step != SIZE_MAX && (i < m->step || (i == m->step && start < m->begin))) {
      // Behind the sweep (further out of order than kReorder): what lies before the piece being
      // swept may overlap pieces already counted, so it is left out rather than counted twice.
      ++late_;
      const uint64_t swept = i < m->step ? a.end : std::min(a.end, m->begin);
      late_busy_ns_ += swept - start;
      if (i < m->step || a.end <= m->begin) return;
      start = m->begin;
    }
    if (m->step != i) {
      Flush(*m);
      m->step = i;
      m->begin = start;
      m->end = a.end;
      StepDeviceTime& d = Device(steps_[i], a.device);
      d.first_start = start;
    } else if (start <= m->end) {
      m->end = std::max(m->end, a.end);
    } else {
      StepDeviceTime& d = Device(steps_[i], a.device);
      d.max_gap_ns = std::max(d.max_gap_ns, start - m->end);
      Flush(*m);
      m->step = i;
      m->begin = start;
      m->end = a.end;
    }
  }
  void Flush(Merge& m) {
    if (m.step == SIZE_MAX || m.step >= steps_.size()) return;
    StepDeviceTime& d = Device(steps_[m.step], m.device);
    d.busy_ns += m.end - m.begin;
    d.last_end = std::max(d.last_end, m.end);
    m.step = SIZE_MAX;
  }
  static StepDeviceTime& Device(Step& s, uint32_t device) {
    for (StepDeviceTime& d : s.devices)
      if (d.device == device) return d;
    StepDeviceTime& d = s.devices.emplace_back();
    d.device = device;
    return d;
  }

  bool times_only_;
  std::vector<Step> steps_;
  std::vector<uint32_t> label_of_;
  // Held activities: those that extend one of the sorted runs in its FIFO (one run per buffer
  // filled side by side, mostly), the others in a min-heap by start.
  static constexpr size_t kRuns = 8;
  std::array<GrowingRing<Activity>, kRuns> runs_;
  std::array<uint64_t, kRuns> tails_{};  // the start of each run's last activity
  std::vector<Activity> heap_;
  size_t held_ = 0;
  std::vector<Merge> merges_;
  uint64_t before_ = 0, end_before_ = 0;
  uint64_t late_ = 0, late_busy_ns_ = 0;
  size_t cursor_ = 0;
};

// Step labels: "step 12", "Step#3", "ProfilerStep#12", "iteration 7", "iter_7", "batch 4".
std::optional<uint64_t> StepNumberOf(const std::string& label) {
  static const std::regex kStep(R"((step|iter|iteration|batch)\D{0,3}(\d+)\s*$)", std::regex::icase);
  std::smatch m;
  if (!std::regex_search(label, m, kStep)) return std::nullopt;
  return std::stoull(m[2].str());
}

// The names the steps read, interned by id: the string tables' entries (a kernel's name pointer
// and an annotation's external id name one), and the names of kernels no table held. Per name:
// whether it is a communication kernel (NCCL), and the step number it names, if any.
class StepNames {
 public:
  void OnStrings(const pb::StringTable& table) {
    for (const auto& e : table.entries()) by_pointer_[e.pointer()] = Intern(e.text());
    cache_.fill(CacheSlot{});
  }
  // The id of the kernel name at `pointer`; one no table holds is named by its address, counted
  // in unresolved().
  uint32_t KernelName(uint64_t pointer) {
    CacheSlot& slot = cache_[(pointer ^ pointer >> 8 ^ pointer >> 16) & 255];
    if (slot.id_plus_1 && slot.pointer == pointer) return slot.id_plus_1 - 1;
    auto it = by_pointer_.find(pointer);
    uint32_t id;
    if (it != by_pointer_.end()) {
      id = it->second;
      slot = CacheSlot{pointer, id + 1};
    } else {
      ++unresolved_;
      char text[48];
      std::snprintf(text, sizeof text, "<unresolved kernel name 0x%llx>",
                    static_cast<unsigned long long>(pointer));
      id = Intern(text);
    }
    return id;
  }
  // The id of the name at `pointer` when a table holds it and it is a step label (StepNumberOf),
  // else kNoLabel.
  uint32_t StepLabelAt(uint64_t pointer) {
    auto it = by_pointer_.find(pointer);
    return it != by_pointer_.end() && StepLabel(it->second) ? it->second : kNoLabel;
  }
  // The step number of a step label's id (one StepLabelAt gave).
  int64_t StepNumber(uint32_t label) const { return step_label_[label]; }
  bool comm(uint32_t id) const { return comm_[id]; }
  // Each id's text.
  const std::vector<std::string>& texts() const { return names_; }
  uint64_t unresolved() const { return unresolved_; }

 private:
  struct CacheSlot {
    uint64_t pointer = 0;
    uint32_t id_plus_1 = 0;
  };

  uint32_t Intern(const std::string& text) {
    auto it = ids_.find(text);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<uint32_t>(names_.size());
    names_.push_back(text);
    ids_.emplace(text, id);
    comm_.push_back(text.find("nccl") != std::string::npos);
    step_label_.push_back(-2);
    return id;
  }
  bool StepLabel(uint32_t id) {
    if (step_label_[id] == -2) {
      const auto n = StepNumberOf(names_[id]);
      step_label_[id] = n ? static_cast<int64_t>(*n) : -1;
    }
    return step_label_[id] >= 0;
  }

  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<bool> comm_;
  std::vector<int64_t> step_label_;  // per name id: -2 not parsed yet, -1 not a step label
  std::unordered_map<uint64_t, uint32_t> by_pointer_;
  std::array<CacheSlot, 256> cache_{};
  uint64_t unresolved_ = 0;
};

// The step labels the annotations give activities, by correlation id: an external correlation
// whose id names a step label ("step 12"), or else the step-like NVTX range open on the launching
// thread when the launch call began.
class StepLabels {
 public:
  explicit StepLabels(StepNames& names) : names_(names) {}

  // An external correlation record.
  void AddExternal(const FieldReader& f, const uint8_t* rec) {
    const uint32_t corr = f.Get32(rec, Field::kCorrelationId);
    ExtSlot& e = ext_[corr & (ext_.size() - 1)];
    if (!(e.used && e.corr == corr)) e = ExtSlot{corr, true, f.Get(rec, Field::kExternalId)};
    if (!have_step_labels_) {
      // The annotation path (a heap) costs only once some label names a step.
      have_step_labels_ = names_.StepLabelAt(e.external) != kNoLabel;
    }
  }
  // An NVTX marker record: a step-like range starts or ends.
  void AddMarker(const FieldReader& f, const uint8_t* rec) {
    constexpr uint32_t kStart = 2, kEnd = 4;           // CUPTI_ACTIVITY_FLAG_MARKER_*
    constexpr uint32_t kProcess = 1, kThread = 2;      // CUpti_ActivityObjectKind
    const uint32_t flags = f.Get32(rec, Field::kMarkerFlags);
    const uint32_t id = f.Get32(rec, Field::kMarkerId);
    const uint64_t ts = f.Get(rec, Field::kTimestamp);
    if (flags & kEnd) {
      auto it = nvtx_open_.find(id);
      if (it == nvtx_open_.end()) return;
      for (NvtxStep& r : nvtx_threads_[it->second])
        if (r.id == id && r.end == 0) r.end = ts ? ts : r.start;
      nvtx_open_.erase(it);
      return;
    }
    if (!(flags & kStart) || !ts) return;
    const uint32_t label = names_.StepLabelAt(f.Get(rec, Field::kNamePointer));
    if (label == kNoLabel) return;
    const uint32_t object_kind = f.Get32(rec, Field::kObjectKind);
    if (object_kind != kThread && object_kind != kProcess) return;  // not on a CPU thread
    const bool thread = object_kind == kThread;
    const uint64_t key = uint64_t{f.Get32(rec, Field::kObjectId0)} << 32 |
                         (thread ? f.Get32(rec, Field::kObjectId1) : 0);
    std::deque<NvtxStep>& list = nvtx_threads_[key];
    if (list.size() == kNvtxPerThread) {
      if (list.front().end == 0) nvtx_open_.erase(list.front().id);
      list.pop_front();
    }
    list.push_back(NvtxStep{ts, 0, id, label});
    if (nvtx_open_.size() < kJoinHorizon) nvtx_open_[id] = key;
    if (nvtx_labels_.empty()) nvtx_labels_.resize(ext_.size());
    have_step_labels_ = true;
  }
  // An API record: the step-like NVTX range holding its start on its thread labels its
  // correlation id.
  void AddLaunch(const FieldReader& f, const uint8_t* rec) {
    if (nvtx_threads_.empty()) return;
    const uint64_t key = uint64_t{f.Get32(rec, Field::kProcessId)} << 32 |
                         f.Get32(rec, Field::kThreadId);
    auto it = nvtx_threads_.find(key);
    if (it == nvtx_threads_.end()) return;
    const uint64_t t = f.Get(rec, Field::kStart);
    const NvtxStep* best = nullptr;
    for (const NvtxStep& r : it->second)
      if (r.start <= t && (r.end == 0 || r.end >= t) && (!best || r.start >= best->start))
        best = &r;
    if (!best) return;
    const uint32_t corr = f.Get32(rec, Field::kCorrelationId);
    NvtxSlot& slot = nvtx_labels_[corr & (nvtx_labels_.size() - 1)];
    slot = NvtxSlot{corr, best->label, true};
  }

  // Whether some label read so far names a step.
  bool any() const { return have_step_labels_; }
  // The step label a kernel's annotation names (kNoLabel when none), and whether it carries any
  // annotation at all. Without a step-like annotation, the step-like NVTX range open on its
  // launching thread when the launch call began (AddLaunch) labels it.
  uint32_t LabelOf(uint32_t corr, bool* annotated) {
    const ExtSlot& e = ext_[corr & (ext_.size() - 1)];
    if (e.used && e.corr == corr) {
      *annotated = true;
      const uint32_t label = names_.StepLabelAt(e.external);
      if (label != kNoLabel) return label;
    }
    if (!nvtx_labels_.empty()) {
      const NvtxSlot& n = nvtx_labels_[corr & (nvtx_labels_.size() - 1)];
      if (n.used && n.corr == corr) {
        *annotated = true;
        return n.label;
      }
    }
    return kNoLabel;
  }

 private:
  struct ExtSlot {
    uint32_t corr = 0;
    bool used = false;
    uint64_t external = 0;
  };
  // NVTX ranges whose names look like steps ("step 12", as annotation labels): kept per thread
  // (the last kNvtxPerThread), so that a launch call inside one labels its activities. Other
  // ranges are ignored here (the trace builder shows them).
  struct NvtxStep {
    uint64_t start = 0, end = 0;  // end 0: not ended yet
    uint32_t id = 0, label = 0;
  };
  struct NvtxSlot {
    uint32_t corr = 0, label = 0;
    bool used = false;
  };
  static constexpr size_t kNvtxPerThread = 64;

  StepNames& names_;
  // Off the stack: 4 MiB as a member put FindSteps' consumer on the stack past a 4 MiB limit
  // (`ulimit -s 4096`: a segmentation fault of `cupmon-decode steps`). Zero-filled (an ExtSlot{})
  // by a fresh huge mapping whose pages cost nothing until an external correlation is read (a
  // std::vector would clear all 4 MiB again after the kernel had, page by page).
  ZeroedArray<ExtSlot> ext_{size_t{1} << 18};
  bool have_step_labels_ = false;
  // NVTX step ranges by thread (pid << 32 | tid), open ones by marker id, and the labels they
  // give launch calls by correlation id (direct-mapped like ext_; allocated at the first one).
  std::unordered_map<uint64_t, std::deque<NvtxStep>> nvtx_threads_;
  std::unordered_map<uint32_t, uint64_t> nvtx_open_;
  std::vector<NvtxSlot> nvtx_labels_;
};

// The annotated steps: a kernel labelled with a new step number opens a step. Activities are
// placed kJoinHorizon records behind (the labels have arrived by then), in start order (a
// min-heap), as the annotated steps are cut in time order across streams. Until some label names
// a step, activities are only delayed, in case their label is still to come.
class AnnotatedSteps {
 public:
  AnnotatedSteps(StepLabels& labels, const StepNames& names) : labels_(labels), names_(names) {}

  void Add(const Activity& a) {
    if (!labels_.any()) {
      delayed_.push_back(a);
      if (delayed_.size() > kJoinHorizon) delayed_.pop_front();
      return;
    }
    if (!delayed_.empty()) {
      for (size_t i = 0; i < delayed_.size(); ++i) Push(delayed_[i]);
      delayed_.clear();
    }
    Push(a);
    while (by_start_.size() > kJoinHorizon) Pop();
  }
  // Places every activity still held; once, after the last Add.
  void Flush() {
    if (labels_.any())
      for (size_t i = 0; i < delayed_.size(); ++i) Push(delayed_[i]);
    while (!by_start_.empty()) Pop();
  }
  // The steps (none when no annotated kernel was read); once, after Flush.
  std::vector<Step> Finish(const std::vector<std::string>& labels) {
    return steps_ ? steps_->Finish(labels) : std::vector<Step>{};
  }
  // Null when no annotated kernel was read.
  const StepAccumulator* steps() const { return steps_ ? &*steps_ : nullptr; }
  // Kernels that start before the first annotated step.
  uint64_t before() const { return before_ + (steps_ ? steps_->before() : 0); }

 private:
  static bool StartsLater(const Activity& x, const Activity& y) { return x.start > y.start; }
  void Push(const Activity& a) {
    by_start_.push_back(a);
    std::push_heap(by_start_.begin(), by_start_.end(), StartsLater);
  }
  void Pop() {
    std::pop_heap(by_start_.begin(), by_start_.end(), StartsLater);
    Activity a = by_start_.back();
    by_start_.pop_back();
    bool annotated = false;
    a.label = labels_.LabelOf(a.corr, &annotated);
    if (!steps_) {
      // Before the first annotated kernel nothing can be in an annotated step.
      if (a.type != ActivityType::kKernel || !annotated) {
        before_ += a.type == ActivityType::kKernel;
        return;
      }
      steps_.emplace();
    }
    if (a.type == ActivityType::kKernel) Annotate(a, annotated);
    steps_->Add(a);
    // A nested label's kernels may still open the next step: hold them until it is known.
    steps_->Release(nested_start_ ? std::min(latest_, nested_start_ - 1) : latest_);
  }
  // Kernels under a nested label ("forward") launched since the previous step's last labelled
  // kernel open the step earlier (the nested label hides the step label on their records).
  void Annotate(const Activity& a, bool annotated) {
    latest_ = std::max(latest_, a.start);
    if (a.label == kNoLabel) {
      if (annotated && !nested_start_) nested_start_ = a.start;
      return;
    }
    const int64_t number = names_.StepNumber(a.label);
    if (number != current_number_) {
      current_number_ = number;
      steps_->AddBoundary(nested_start_ && nested_start_ < a.start ? nested_start_ : a.start);
    }
    nested_start_ = 0;
  }

  StepLabels& labels_;
  const StepNames& names_;
  GrowingRing<Activity> delayed_;
  std::vector<Activity> by_start_;
  std::optional<StepAccumulator> steps_;
  uint64_t before_ = 0;
  int64_t current_number_ = -1;
  uint64_t nested_start_ = 0;
  uint64_t latest_ = 0;  // the latest start of an annotated kernel placed
};

// The steps' wall-clock times: the recording's calibration, and the calibration read by the end of
// each buffer, with which the trace builder maps the rows it emits there.
class StepClock {
 public:
  void Add(const pb::Calibration& c) {
    clock_.Add(c);
    calibrations_.push_back(c);
  }
  // A buffer ends once `records` GPU and API records were read (what the trace builder's join
  // ring counts).
  void EndBuffer(uint64_t records) { buffer_ends_.push_back({records, calibrations_.size()}); }
  int64_t ToWall(uint64_t cupti_ns) const { return clock_.ToWall(cupti_ns); }

  // Wall-clock times, and for each step a range to drill into: from midway through the idle gap
  // before it to midway through the one after it. gpu-trace maps its rows with the calibration
  // read so far, which can differ from the final mapping used here by microseconds; the margins
  // keep exactly the step's activities inside.
  void SetWallTimes(uint64_t end_before, std::vector<Step>* steps) const {
    constexpr uint64_t kEdge = 1'000'000;  // no gap known: 1 ms
    bool exact = !steps->empty();
    for (size_t i = 0; i < steps->size(); ++i) {
      Step& s = (*steps)[i];
      s.wall_start = clock_.ToWall(s.start);
      s.wall_end = clock_.ToWall(s.end);
      const uint64_t before = i ? (*steps)[i - 1].end : (end_before ? end_before : s.start - kEdge);
      const uint64_t after = i + 1 < steps->size() ? (*steps)[i + 1].start : s.end + 2 * kEdge;
      s.drill_from = clock_.ToWall(before < s.start ? s.start - (s.start - before) / 2 : s.start);
      s.drill_to = clock_.ToWall(after > s.end ? s.end + (after - s.end) / 2 : s.end);
      exact &= s.first_record != UINT64_MAX;
    }
    if (!exact) return;
    // The trace builder maps a row when it leaves its join ring: at the end of the first buffer
    // that brings more than a horizon of records after it, with the calibration read by then.
    // The same mapping of each step's first kernel makes --from/--to select exactly its rows.
    std::vector<std::pair<size_t, size_t>> need;  // calibrations seen, step
    for (size_t i = 0; i < steps->size(); ++i) {
      const uint64_t due = (*steps)[i].first_record + kJoinHorizon;
      auto it = std::upper_bound(buffer_ends_.begin(), buffer_ends_.end(), due,
                                 [](uint64_t d, const BufferEnd& e) { return d < e.records; });
      need.emplace_back(it == buffer_ends_.end() ? calibrations_.size() : it->calibrations, i);
    }
    std::sort(need.begin(), need.end());
    ClockMap then;
    size_t added = 0;
    std::vector<int64_t> first_wall(steps->size());
    for (const auto& [calibrations, i] : need) {
      while (added < calibrations) then.Add(calibrations_[added++]);
      first_wall[i] = then.ToWall((*steps)[i].start);
    }
    for (size_t i = 0; i < steps->size(); ++i) {
      Step& s = (*steps)[i];
      s.drill_from = first_wall[i];
      if (i + 1 < steps->size()) s.drill_to = first_wall[i + 1] - 1;
    }
  }

 private:
  struct BufferEnd {
    uint64_t records;
    size_t calibrations;
  };

  ClockMap clock_;
  std::vector<pb::Calibration> calibrations_;
  std::vector<BufferEnd> buffer_ends_;
};

// Pattern steps carry the label of the annotated step around their middle.
void LabelFrom(const std::vector<Step>& annotated, std::vector<Step>* steps) {
  if (annotated.empty()) return;
  for (Step& s : *steps) {
    const uint64_t mid = s.start + (s.end - s.start) / 2;
    auto it = std::upper_bound(annotated.begin(), annotated.end(), mid,
                               [](uint64_t t, const Step& a) { return t < a.start; });
    if (it == annotated.begin()) continue;
    --it;
    if (mid < it->end) s.label = it->label;
  }
}

// The steps of one recording from its records: the kernels go to a StepDetector, whose boundaries
// cut the pattern steps, and every GPU activity to the pattern steps and the annotated ones.
class StepConsumer : public RecordConsumer {
 public:
  explicit StepConsumer(const StepOptions& options)
      : options_(options),
        detector_(InHugeMappings(options.detector)),
        labels_(names_),
        pattern_(options.times_only),
        annotated_(labels_, names_) {}

  void OnStrings(const pb::StringTable& table) override { names_.OnStrings(table); }
  void OnWindowMarker(const pb::WindowMarker& m) override {
    if (m.edge() != pb::WindowMarker::BEGIN) return;
    StepWindow w;
    w.id = m.window_id();
    w.source = pb::TriggerSource_Name(m.source());
    w.wall_begin = m.realtime_ns();
    w.trigger_step = m.trigger_step();
    w.trigger_step_ns = m.trigger_step_ns();
    w.trigger_median_ns = m.trigger_median_ns();
    w.trigger_factor = m.trigger_factor();
    w.trigger_by = m.trigger_by();
    windows_.push_back(std::move(w));
  }
  void OnCalibration(const pb::Calibration& c) override {
    if (options_.cupti_clock) return;  // a ClockMap without samples passes CUPTI times through
    clock_.Add(c);
  }
  // Only the fields Add and the parts it calls read (kFieldsRead).
  uint64_t FieldsRead() const override { return kFieldsRead; }
  void OnRecords(const RecordDecoder& decoder, std::span<const uint8_t> records) override {
    decoder.Walk(records, [this](const RecordLayout& layout, const FieldReader& f,
                                 const uint8_t* rec) { Add(layout, f, rec); });
    clock_.EndBuffer(joined_);
  }

  StepList Finish() {
    detector_.Finish();
    Drain();
    pattern_.Release(UINT64_MAX);
    annotated_.Flush();
    StepList out;
    const std::vector<std::string>& names = names_.texts();
    out.pattern = detector_.pattern();
    if (out.pattern)
      for (uint32_t id : out.pattern->signature) out.signature_names.push_back(Demangle(names[id]));
    std::vector<Step> by_pattern = pattern_.Finish(names);
    std::vector<Step> by_label = annotated_.Finish(names);
    out.pattern_steps = by_pattern.size();
    out.annotated_steps = by_label.size();
    bool use_labels = options_.source == StepSource::kAnnotation && !options_.times_only;
    if (options_.source == StepSource::kAuto && !options_.times_only)
      use_labels = !by_label.empty() && (by_pattern.empty() || 2 * by_label.size() >= by_pattern.size());
    out.source = use_labels ? StepSource::kAnnotation : StepSource::kPattern;
    if (!use_labels) LabelFrom(by_label, &by_pattern);
    out.steps = use_labels ? std::move(by_label) : std::move(by_pattern);
    const StepAccumulator* annotated = annotated_.steps();
    clock_.SetWallTimes(use_labels && annotated ? annotated->end_before() : pattern_.end_before(),
                        &out.steps);
    out.kernels_before = use_labels ? annotated_.before() : pattern_.before();
    const StepAccumulator& used = use_labels && annotated ? *annotated : pattern_;
    out.late_activities = used.late();
    out.late_busy_ns = used.late_busy_ns();
    out.activities = activities_;
    if (activities_) {
      out.first_wall = clock_.ToWall(first_start_);
      out.last_wall = clock_.ToWall(last_end_);
    }
    out.unresolved_names = names_.unresolved();
    out.windows = std::move(windows_);
    return out;
  }

 private:
  // Every field Add and the parts it calls read; a field read without being listed here would
  // see bytes the partial columnar inverse left unset (FieldsRead).
  static constexpr uint64_t kFieldsRead =
      FieldBit(Field::kBytes) | FieldBit(Field::kCorrelationId) | FieldBit(Field::kDeviceId) |
      FieldBit(Field::kEnd) | FieldBit(Field::kExternalId) | FieldBit(Field::kMarkerFlags) |
      FieldBit(Field::kMarkerId) | FieldBit(Field::kNamePointer) | FieldBit(Field::kObjectId0) |
      FieldBit(Field::kObjectId1) | FieldBit(Field::kObjectKind) | FieldBit(Field::kProcessId) |
      FieldBit(Field::kStart) | FieldBit(Field::kStreamId) | FieldBit(Field::kThreadId) |
      FieldBit(Field::kTimestamp);
  void Add(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec) {
    const RecordClass cls = layout.record_class;
    // Labels (external correlations, NVTX markers) only serve annotated steps and step labels.
    if (cls == RecordClass::kExternalCorrelation && !options_.times_only) {
      labels_.AddExternal(f, rec);
      return;
    }
    if (cls == RecordClass::kMarker) {
      if (!options_.times_only) labels_.AddMarker(f, rec);
      return;
    }
    if (cls == RecordClass::kApi) {
      ++joined_;
      labels_.AddLaunch(f, rec);
    }
    if (cls != RecordClass::kKernel && cls != RecordClass::kMemcpy && cls != RecordClass::kMemset)
      return;
    const uint64_t index = joined_++;
    Activity a;
    a.start = f.Get(rec, Field::kStart);
    a.end = f.Get(rec, Field::kEnd);
    if (!TimedSpan(a.start, a.end)) return;  // cannot be placed in time
    ++activities_;
    first_start_ = std::min(first_start_, a.start);
    last_end_ = std::max(last_end_, a.end);
    a.device = f.Get32(rec, Field::kDeviceId);
    a.label = kNoLabel;
    a.comm = false;
    a.bytes = 0;
    a.corr = f.Get32(rec, Field::kCorrelationId);
    if (cls == RecordClass::kKernel) {
      a.type = ActivityType::kKernel;
      const uint32_t name = names_.KernelName(f.Get(rec, Field::kNamePointer));
      a.comm = names_.comm(name);
      const uint64_t stream = f.Get32(rec, Field::kStreamId);
      detector_.OnKernel(uint64_t{a.device} << 32 | stream, name, a.start, index);
      if (++since_drain_ >= 64) Drain();
    } else {
      a.type = cls == RecordClass::kMemcpy ? ActivityType::kMemcpy : ActivityType::kMemset;
      if (cls == RecordClass::kMemcpy) a.bytes = f.Get(rec, Field::kBytes);
    }
    pattern_.Add(a);
    if (options_.times_only) return;
    annotated_.Add(a);
  }

  void Drain() {
    since_drain_ = 0;
    if (detector_.has_boundaries())
      for (const StepBoundary& b : detector_.TakeBoundaries()) pattern_.AddBoundary(b.start, b.tag);
    pattern_.Release(detector_.settled_until());
  }

  // The decoder's detector keeps its buffers where the decoder keeps its other large ones.
  static StepDetectorOptions InHugeMappings(StepDetectorOptions o) {
    o.huge_mappings = true;
    return o;
  }

  const StepOptions& options_;
  StepDetector detector_;
  std::vector<StepWindow> windows_;
  StepClock clock_;
  uint64_t joined_ = 0;  // GPU and API records so far (what the trace builder's join ring counts)
  StepNames names_;
  StepLabels labels_;
  StepAccumulator pattern_;
  AnnotatedSteps annotated_;
  uint64_t activities_ = 0;
  uint64_t first_start_ = UINT64_MAX, last_end_ = 0;  // CUPTI ns of the activities placed
  uint32_t since_drain_ = 0;
};

}  // namespace

StepList FindSteps(const Recording& recording, const StepOptions& options,
                   const ReadProgressFn& progress) {
  StepConsumer steps(options);
  TraceBuilder decoder(&steps);
  ReadIntegrity integrity;
  ReadRecording(recording, decoder, &integrity, progress);
  StepList out = steps.Finish();
  out.integrity = std::move(integrity);
  return out;
}

struct StepFinder::Impl {
  explicit Impl(const StepOptions& o) : options(o), steps(options) {}
  StepOptions options;  // the consumer keeps a reference
  StepConsumer steps;
};

StepFinder::StepFinder(const StepOptions& options) : impl_(std::make_unique<Impl>(options)) {}
StepFinder::~StepFinder() = default;
RecordConsumer& StepFinder::consumer() { return impl_->steps; }
StepList StepFinder::Finish() { return impl_->steps.Finish(); }

std::vector<uint64_t> RollingMedians(const std::vector<Step>& steps, uint32_t window) {
  std::vector<uint64_t> all;
  all.reserve(steps.size());
  for (const Step& s : steps) all.push_back(s.duration());
  std::vector<uint64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  const uint64_t global = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  std::vector<uint64_t> out(steps.size(), global), scratch;
  const size_t w = std::max<uint32_t>(window, 1);
  for (size_t i = 5; i < steps.size(); ++i) {
    const size_t from = i > w ? i - w : 0;
    scratch.assign(all.begin() + static_cast<ptrdiff_t>(from), all.begin() + static_cast<ptrdiff_t>(i));
    auto mid = scratch.begin() + static_cast<ptrdiff_t>(scratch.size() / 2);
    std::nth_element(scratch.begin(), mid, scratch.end());
    out[i] = *mid;
  }
  return out;
}

std::vector<size_t> SlowSteps(const std::vector<Step>& steps, const std::vector<uint64_t>& median,
                              const StepOptions& options) {
  std::vector<size_t> slow;
  for (size_t i = 0; i < steps.size(); ++i) {
    const auto d = static_cast<double>(steps[i].duration());
    if (median[i] && d >= options.slow_factor * static_cast<double>(median[i]) &&
        steps[i].duration() >= median[i] + 50'000)
      slow.push_back(i);
  }
  std::stable_sort(slow.begin(), slow.end(), [&](size_t a, size_t b) {
    return steps[a].duration() - median[a] > steps[b].duration() - median[b];
  });
  return slow;
}

}  // namespace cupmon::decoder
