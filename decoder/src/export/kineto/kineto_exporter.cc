// The Kineto JSON export (see kineto_exporter.h). The trace shape follows what Kineto's
// ChromeTraceLogger writes (pytorch/kineto libkineto/src/output_json.cpp) and what HTA reads
// (facebookresearch/HolisticTraceAnalysis: hta/common/trace_file.py finds the rank with
// `"rank":\s+(\d+)`, trace_parser.py and trace_filter.py take events with a stream >= 0 as GPU
// work and `cat` kernel/gpu_mem* as kernels, types.py matches "nccl*" kernels as communication
// and "ProfilerStep#N" as iterations).
#include "export/kineto/kineto_exporter.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace cupmon::decoder {
namespace {

// Kineto's names for what it traces (libkineto ActivityType's toString).
constexpr std::string_view kCatKernel = "kernel";
constexpr std::string_view kCatMemcpy = "gpu_memcpy";
constexpr std::string_view kCatMemset = "gpu_memset";
constexpr std::string_view kCatRuntime = "cuda_runtime";
constexpr std::string_view kCatDriver = "cuda_driver";
constexpr std::string_view kCatUserAnnotation = "user_annotation";
constexpr std::string_view kCatTrace = "Trace";  // Kineto's trace spans; HTA drops them
constexpr std::string_view kFlow = "ac2g";       // Kineto's async CPU-to-GPU flows
constexpr uint32_t kDriverKind = 4;              // CUPTI_ACTIVITY_KIND_DRIVER
constexpr uint32_t kWindowsTid = 0;              // the thread row of cupmon's trace windows

std::string SysError(int err) { return std::strerror(err); }

}  // namespace

std::optional<uint64_t> StepNumberOf(std::string_view label) {
  static constexpr std::string_view kWords[] = {"profilerstep", "training_step", "training step",
                                                "train_step",   "train step",    "iteration",
                                                "step",         "iter"};
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  for (std::string_view word : kWords) {
    if (label.size() <= word.size()) continue;
    bool match = true;
    for (size_t i = 0; i < word.size() && match; ++i) match = lower(label[i]) == word[i];
    if (!match) continue;
    size_t at = word.size();
    while (at < label.size() && label[at] != '\0' && std::strchr(" #_:=-/", label[at])) ++at;
    uint64_t n = 0;
    const auto r = std::from_chars(label.data() + at, label.data() + label.size(), n);
    if (at < label.size() && r.ec == std::errc() && r.ptr == label.data() + label.size()) return n;
  }
  return std::nullopt;
}

// ---- DetectedKinetoSteps ----

StepOptions DetectedKinetoSteps::Options() const {
  StepOptions options;
  options.source = StepSource::kPattern;
  options.detector = detector_;
  options.times_only = true;  // Steps() reads number and drill range alone
  options.cupti_clock = cupti_clock_;
  return options;
}

void DetectedKinetoSteps::Begin(const TraceBuilder& builder, const Recording& recording) {
  recording_ = &recording;
  cupti_clock_ = builder.filter().cupti_clock;
  finder_.reset();
}

RecordConsumer* DetectedKinetoSteps::RecordsWanted() {
  // The finder takes the records of the export's own read, those FindSteps would read.
  finder_ = std::make_unique<StepFinder>(Options());
  return &finder_->consumer();
}

std::vector<TrainingStep> DetectedKinetoSteps::Steps() {
  std::vector<TrainingStep> steps;
  if (!recording_) return steps;
  const StepList list = finder_ ? finder_->Finish() : FindSteps(*recording_, Options());
  finder_.reset();
  recording_ = nullptr;
  steps.reserve(list.steps.size());
  for (size_t i = 0; i < list.steps.size(); ++i) {
    // `steps` puts an activity in the last step whose first kernel starts at or before it: the
    // slice runs from this step's first kernel up to (not including) the next one's, mapped as
    // the trace builder maps those kernels (drill_from), so HTA's "ts <= e.ts < ts + dur"
    // selects the same activities.
    const Step& s = list.steps[i];
    const int64_t to = i + 1 < list.steps.size() ? list.steps[i + 1].drill_from : s.drill_to + 1;
    steps.push_back({s.number, s.drill_from, std::max(to, s.drill_from), 0, kDetectedStepsTid,
                     "cupmon-detected"});
  }
  return steps;
}

// ---- KinetoTraceWriter ----

KinetoTraceWriter::KinetoTraceWriter(std::ostream& out) : out_(out), ev_(out_) {
  for (uint32_t kind = 0; kind < std::size(memcpy_names_); ++kind) {
    // "[CUDA memcpy HtoD]" -> "Memcpy HtoD", as Kineto names copies (without the memory kinds,
    // which rows do not carry); HTA groups memory work by that prefix.
    const std::string_view ours = MemcpyKindName(kind);
    constexpr std::string_view kPrefix = "[CUDA memcpy ";
    memcpy_names_[kind] = "Memcpy " + std::string(ours.substr(kPrefix.size(),
                                                              ours.size() - kPrefix.size() - 1));
  }
}

void KinetoTraceWriter::Begin(const TraceBuilder& builder, const Recording& recording,
                              const KinetoRank& rank, KinetoStepSource* steps) {
  recording_ = &recording;
  rank_ = rank;
  step_source_ = steps;
  started_ = false;
  rows_ = steps_ = flow_id_ = synthetic_ = 0;
  rows_from_ = INT64_MAX;
  rows_to_ = INT64_MIN;
  gpu_tracks_.clear();
  cpu_threads_.clear();
  last_gpu_ = last_cpu_ = {UINT32_MAX, UINT32_MAX};
  annotations_.Clear();
  plain_name_.Clear();  // name ids are the builder's, and each recording has its own builder
  last_label_ = {};
  last_label_step_.reset();
  step_instance_ = 0;
  process_pid_ = recording.header.pid();
  // Kineto puts device N's work under pid N. A process that is itself pid N (pid 1 in a
  // container) would share that process: its devices move to 1000000 + N instead.
  uint32_t device_limit = 64;  // device ids the rows may use beyond those the header lists
  for (const auto& d : recording.header.devices()) device_limit = std::max(device_limit, d.id() + 1);
  gpu_pid_offset_ = process_pid_ < device_limit ? 1'000'000 : 0;
  if (step_source_) step_source_->Begin(builder, recording);
  if (rank_.base) Header(rank_.base);
}

void KinetoTraceWriter::Header(int64_t base) {
  started_ = true;
  ev_.set_base(base);
  const auto& h = recording_->header;
  out_ << "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  bool first = true;
  for (const auto& d : h.devices()) {
    out_ << (first ? "\n" : ",\n") << "    {\"id\": " << d.id() << ", \"name\": \"";
    out_.Json(d.name()) << "\", \"totalGlobalMem\": " << d.global_memory_bytes()
                        << ", \"computeMajor\": " << d.cc_major()
                        << ", \"computeMinor\": " << d.cc_minor() << ", \"numSms\": "
                        << d.sm_count() << "}";
    first = false;
  }
  out_ << (first ? "],\n" : "\n  ],\n");
  // HTA reads the rank with "rank":\s+(\d+): the space matters, and this must be the file's
  // first "rank" key.
  out_ << "  \"distributedInfo\": {\"rank\": " << rank_.rank << ", \"world_size\": "
       << rank_.world_size << "},\n";
  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  char id[24];
  std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(recording_->id));
  out_ << "  \"cupmon\": {\"recording\": \"" << id << "\", \"label\": \"";
  out_.Json(rank_.label) << "\", \"host\": \"";
  out_.Json(h.host()) << "\", \"pid\": " << h.pid() << ", \"command\": \"";
  out_.Json(cmd) << "\", \"synthetic\": " << (h.synthetic() ? "true" : "false")
                 << ", \"cupti_api_version\": " << h.cupti_api_version() << "},\n";
  out_ << "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " << base
       << ",\n  \"traceEvents\": [\n";
  // Metadata first, as Kineto writes it: HTA numbers events from 0 and takes a correlation
  // that points at index 0 for "not in the trace", so index 0 must not be a call or a kernel.
  ev_.Meta("process_name", process_pid_, 0, rank_.label + (h.synthetic() ? " (SYNTHETIC)" : ""));
  ev_.Meta("process_labels", process_pid_, 0, "CPU", "labels");
  ev_.SortIndex(process_pid_, 0);
}

void KinetoTraceWriter::Write(const Row& r) {
  if (!r.valid_time) return;  // cannot be placed on a timeline; counted in the summary
  rows_from_ = std::min(rows_from_, r.wall_start);
  rows_to_ = std::max(rows_to_, r.wall_start + static_cast<int64_t>(r.duration));
  if (r.type == RowType::kRange) {
    // An NVTX range: a user_annotation on its thread, as Kineto writes record_function ranges.
    // Marks (no duration) and ranges never ended are left out.
    if (r.nvtx.kind == RangeKind::kMark || !r.nvtx.ended) return;
    if (!started_) Header(r.wall_start);
    ++rows_;
    cpu_threads_.emplace(r.pid, r.tid);
    last_cpu_ = {r.pid, r.tid};
    ev_.SliceHead(r.name, "user_annotation", r.pid, r.tid, r.wall_start,
                  static_cast<int64_t>(r.duration));
    out_ << "\"nvtx\":true,\"depth\":" << r.nvtx.depth << "}}";
    out_.EndRow();
    return;
  }
  if (!started_) Header(r.wall_start);
  if (step_source_) step_source_->OnRow(r);
  ++rows_;
  if (r.type == RowType::kApi) {
    if (r.pid != last_cpu_.first || r.tid != last_cpu_.second) {
      cpu_threads_.emplace(r.pid, r.tid);
      last_cpu_ = {r.pid, r.tid};
    }
    // An API call's name is a cbid's, plain JSON; the answer is kept per name id all the same.
    ev_.SliceHead(r.name, r.kind == kDriverKind ? kCatDriver : kCatRuntime, r.pid, r.tid,
                  r.wall_start, static_cast<int64_t>(r.duration),
                  plain_name_.Plain(r.name_id, r.name));
    char* p = out_.Cursor();  // in the room SliceHead left
    p = PutKeyUint(p, "\"correlation\":", r.correlation);
    out_.Commit(PutAt(p, "}}"));
    if (!r.annotation.empty()) {
      // A label repeated in every step ("forward") gets one slice per step, not one spanning
      // them all: its instance is the step seen last.
      if (r.annotation.data() != last_label_.data() || r.annotation.size() != last_label_.size()) {
        last_label_ = r.annotation;
        last_label_step_ = StepNumberOf(r.annotation);
      }
      if (last_label_step_) step_instance_ = *last_label_step_ + 1;
      annotations_.Add(r, last_label_step_ ? 0 : step_instance_);
    }
    out_.EndRow();
    return;
  }
  if (r.device != last_gpu_.first || r.stream != last_gpu_.second) {
    gpu_tracks_.emplace(r.device, r.stream);
    last_gpu_ = {r.device, r.stream};
  }
  const uint32_t gpid = GpuPid(r.device);
  const std::string_view name =
      r.type == RowType::kKernel ? r.name
      : r.type == RowType::kMemset
          ? std::string_view("Memset")
          : memcpy_names_[r.copy.kind < std::size(memcpy_names_) ? r.copy.kind : 0];
  const std::string_view cat = r.type == RowType::kKernel   ? kCatKernel
                               : r.type == RowType::kMemcpy ? kCatMemcpy
                                                            : kCatMemset;
  // The memcpy and memset names are ours.
  const bool plain = r.type != RowType::kKernel || plain_name_.Plain(r.name_id, r.name);
  ev_.SliceHead(name, cat, gpid, r.stream, r.wall_start, static_cast<int64_t>(r.duration), plain);
  // The args, at most 400 bytes: in the room SliceHead left (TraceEventWriter::kArgsRoom).
  char* p = out_.Cursor();
  p = PutKeyUint(p, "\"device\":", r.device);
  p = PutKeyUint(p, ",\"context\":", r.context);
  p = PutKeyUint(p, ",\"stream\":", r.stream);
  p = PutKeyUint(p, ",\"correlation\":", r.correlation);
  if (r.type == RowType::kKernel) {
    p = PutKeyUint(p, ",\"registers per thread\":", r.launch.registers);
    p = PutKeyUint(p, ",\"shared memory\":",
                   r.launch.static_smem + r.launch.dynamic_smem);  // as 32 bits
    p = PutAt(p, ",\"grid\":[");
    p = PutUint3At(p, r.launch.grid);
    p = PutAt(p, "],\"block\":[");
    p = PutUint3At(p, r.launch.block);
    *p++ = ']';
  } else {
    // GB/s = bytes per ns, as Kineto computes it; 0 for a zero duration (Kineto: "N/A").
    const double gbps = r.duration ? static_cast<double>(r.bytes) / static_cast<double>(r.duration)
                                   : 0.0;
    p = PutKeyUint(p, ",\"bytes\":", r.bytes);
    p = PutAt(p, ",\"memory bandwidth (GB/s)\":");
    p = std::to_chars(p, p + 32, gbps).ptr;  // shortest form: at most 24 bytes
  }
  if (r.api.before_window) p = PutAt(p, ",\"launched_before_window\":true");
  out_.Commit(PutAt(p, "}}"));
  if (r.api.found && r.api.valid_time) ev_.LaunchFlow(kFlow, kFlow, ++flow_id_, r, r.api.pid, gpid);
  if (options_.synthetic_launches && !r.api.found && r.correlation) {
    // No launch record (always-on recordings keep few): HTA gives a GPU event the iteration of
    // its correlated CPU event only, so a marked stand-in at the activity's start lets it take
    // the iteration of the step it starts in. Zero duration and a category of cupmon's own:
    // HTA's launch statistics (by name) and CPU-operator analyses (by category) skip it.
    cpu_threads_.emplace(process_pid_, kDetectedStepsTid);
    ev_.SliceHead(kSyntheticLaunchName, kCatSyntheticLaunch, process_pid_, kDetectedStepsTid,
                  r.wall_start, 0, true);
    out_ << "\"correlation\":" << r.correlation << ",\"synthetic\":true}}";
    ++synthetic_;
  }
  out_.EndRow();
}

void KinetoTraceWriter::End(const TraceBuilder& builder, const Recording& recording) {
  if (!started_) Header(builder.origin_wall() ? builder.origin_wall() : recording.header.process_start_unix_ns());
  const auto& h = recording.header;
  const uint32_t pid = process_pid_;

  // Steps: annotations that look like steps (kAuto, kAnnotation), else the step source's
  // (kAuto, kDetected). Annotations that are not the steps written stay plain annotations.
  const KinetoSteps mode = options_.steps;
  const bool from_annotations =
      mode == KinetoSteps::kAnnotation ||
      (mode == KinetoSteps::kAuto &&
       std::any_of(annotations_.spans().begin(), annotations_.spans().end(),
                   [](const auto& a) { return StepNumberOf(a.first.first).has_value(); }));
  std::vector<TrainingStep> steps;
  if (step_source_) {
    std::vector<TrainingStep> found = step_source_->Steps();
    if (!from_annotations && (mode == KinetoSteps::kAuto || mode == KinetoSteps::kDetected)) {
      // Only the steps that overlap the rows written (a region, --window or --limit).
      for (TrainingStep& s : found)
        if (s.wall_end > rows_from_ && s.wall_start <= rows_to_) steps.push_back(std::move(s));
    }
  }
  for (const auto& [key, span] : annotations_.spans()) {
    const std::string& label = key.first;
    const std::optional<uint64_t> n = from_annotations ? StepNumberOf(label) : std::nullopt;
    if (n) {
      steps.push_back({*n, span.start, span.end, span.pid, span.tid, "annotation"});
      continue;
    }
    ev_.SliceHead(label, kCatUserAnnotation, span.pid, span.tid, span.start, span.end - span.start);
    out_ << "}}";
  }
  std::sort(steps.begin(), steps.end(), [](const TrainingStep& a, const TrainingStep& b) {
    return a.wall_start != b.wall_start ? a.wall_start < b.wall_start : a.number < b.number;
  });
  for (const TrainingStep& s : steps) {
    const uint32_t spid = s.pid ? s.pid : pid;
    if (s.tid) cpu_threads_.emplace(spid, s.tid);
    ev_.SliceHead("ProfilerStep#" + std::to_string(s.number), kCatUserAnnotation, spid, s.tid,
                  s.wall_start, s.wall_end - s.wall_start);
    out_ << "\"source\":\"";
    out_.Json(s.source) << "\"}}";
    ++steps_;
  }

  // cupmon's trace windows, as Kineto's own trace spans.
  for (const auto& [id, w] : builder.windows()) {
    if (!w.begin) continue;
    const uint64_t end = w.end >= w.begin && w.end ? w.end : std::max(builder.last_ts(), w.begin);
    const int64_t wall = builder.clock().ToWall(w.begin);
    ev_.SliceHead("cupmon window " + std::to_string(id), kCatTrace, pid, kWindowsTid, wall,
                  builder.clock().ToWall(end) - wall);
    out_ << "\"source\":\"";
    out_.Json(w.source) << "\",\"note\":\"";
    out_.Json(w.note) << "\"}}";
  }

  // Names and order of the threads and devices seen.
  if (!builder.windows().empty()) ev_.Meta("thread_name", pid, kWindowsTid, "cupmon windows");
  for (const auto& [tpid, tid] : cpu_threads_) {
    ev_.Meta("thread_name", tpid, tid,
             tid == kDetectedStepsTid ? std::string("cupmon: detected steps")
                                      : "thread " + std::to_string(tid));
  }
  std::set<uint32_t> devices;
  for (const auto& [dev, stream] : gpu_tracks_) {
    devices.insert(dev);
    ev_.Meta("thread_name", GpuPid(dev), stream, "stream " + std::to_string(stream));
    ev_.SortIndex(GpuPid(dev), stream, "thread_sort_index", stream);
  }
  for (uint32_t dev : devices) {
    std::string label = "GPU " + std::to_string(dev);
    for (const auto& d : h.devices())
      if (d.id() == dev && !d.name().empty()) label += " " + d.name();
    ev_.Meta("process_name", GpuPid(dev), 0, "GPU " + std::to_string(dev));
    ev_.Meta("process_labels", GpuPid(dev), 0, label, "labels");
    ev_.SortIndex(GpuPid(dev), 1 + static_cast<uint64_t>(dev));
  }
  out_ << "\n  ],\n  \"traceName\": \"";
  out_.Json(rank_.file_name) << "\"\n}\n";
  out_.Flush();
}

// ---- KinetoExporter ----

Expected<std::unique_ptr<Exporter>> KinetoExporter::Make(std::ostream&,
                                                         const std::vector<const Rank*>& ranks,
                                                         const ExportSettings& settings) {
  if (auto dir = PrepareDirectory(settings.output_dir); !dir) return unexpected(dir.error());
  return std::make_unique<KinetoExporter>(
      settings.output_dir, ranks, std::vector<KinetoStepSource*>{},
      KinetoOptions{settings.kineto_steps, settings.kineto_synthetic_launches});
}

Expected<void> KinetoExporter::PrepareDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty())
    return unexpected(Error{"--format kineto writes one file per rank: give -o DIR", 0});
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    return unexpected(Error{"cannot write " + dir + ": not a directory", ENOTDIR});
  if (!fs::exists(st)) {
    fs::create_directories(dir, ec);
    if (ec) return unexpected(Error{"cannot create " + dir + ": " + ec.message(), ec.value()});
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    const int err = errno;
    return unexpected(Error{"cannot write " + dir + ": " + SysError(err), err});
  }
  return {};
}

KinetoExporter::KinetoExporter(std::string dir, const std::vector<const Rank*>& ranks,
                               std::vector<KinetoStepSource*> steps, KinetoOptions options)
    : dir_(std::move(dir)), ranks_(ranks), step_sources_(std::move(steps)), options_(options) {
  // One time axis for all ranks: from the earliest process start, as the merged chrome-json
  // export (each rank's times are mapped to wall clock through its own calibration).
  for (const Rank* r : ranks_) {
    const int64_t start = r->recording.header.process_start_unix_ns();
    if (start && (!base_ || start < base_)) base_ = start;
    // The launcher's world size; without one, at least every rank exported (--pid may export
    // one rank of several).
    if (r->recording.header.has_world_size() && r->recording.header.world_size() > 0)
      world_size_ = std::max(world_size_, static_cast<uint32_t>(r->recording.header.world_size()));
    world_size_ = std::max(world_size_, r->rank + 1);
  }
  world_size_ = std::max(world_size_, static_cast<uint32_t>(ranks_.size()));
}

// An export cut short leaves no partial file behind: file_'s temporary goes with it.
KinetoExporter::~KinetoExporter() = default;

void KinetoExporter::Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
                           const Rank*) {
  index_ = index;
  const Rank* rank = index < ranks_.size() ? ranks_[index] : nullptr;
  KinetoRank info;
  info.rank = rank ? rank->rank : static_cast<uint32_t>(index);
  info.world_size = world_size_;
  info.base = base_;
  info.label = rank ? rank->label : "pid " + std::to_string(recording.header.pid());
  // Two recordings with one rank number (recordings of several jobs): the second gets its own
  // file, and HTA (one trace per rank) would read only one of them.
  std::string name = "rank" + std::to_string(info.rank) + ".json";
  if (!names_used_.insert(name).second) {
    name = "rank" + std::to_string(info.rank) + "-" + std::to_string(index) + ".json";
    names_used_.insert(name);
    warnings_.push_back(info.label + " has the rank number of an earlier recording: written to " +
                        name + ", which HTA reads as the same rank");
  }
  info.file_name = name;
  path_ = (std::filesystem::path(dir_) / name).string();
  auto opened = OutputFile::Open(path_, path_ + ".tmp");
  if (!opened) {
    errors_.push_back(opened.error().message);
    writer_.reset();
    source_ = nullptr;
    return;
  }
  file_ = std::move(*opened);
  writer_ = std::make_unique<KinetoTraceWriter>(file_->stream());
  writer_->set_options(options_);
  KinetoStepSource* source = index < step_sources_.size() ? step_sources_[index] : nullptr;
  detected_.reset();
  if (!source && step_sources_.empty() &&
      (options_.steps == KinetoSteps::kAuto || options_.steps == KinetoSteps::kDetected)) {
    detected_ = std::make_unique<DetectedKinetoSteps>();
    source = detected_.get();
  }
  source_ = source;
  writer_->Begin(builder, recording, info, source);
}

RecordConsumer* KinetoExporter::RecordsWanted() {
  return writer_ && source_ ? source_->RecordsWanted() : nullptr;
}

void KinetoExporter::Write(const Row& row) {
  if (writer_) writer_->Write(row);
}

void KinetoExporter::End(const TraceBuilder& builder, const Recording& recording,
                         const ReadIntegrity&) {
  if (!writer_) return;
  writer_->End(builder, recording);
  events_ += writer_->events();
  const Rank* rank = index_ < ranks_.size() ? ranks_[index_] : nullptr;
  const std::string who = rank ? rank->label : path_;
  if (writer_->rows() == 0)
    notes_.push_back(who + ": no rows in the region (or past --limit): " + path_ +
                     " holds no events (HTA leaves out a rank without events)");
  if (options_.steps == KinetoSteps::kDetected && writer_->rows() && !writer_->steps())
    notes_.push_back(who + ": no steps detected in the kernel stream (`cupmon-decode steps "
                     "--by pattern` finds none): no ProfilerStep#N, so HTA has no iterations");
  if (writer_->synthetic_launches())
    notes_.push_back(who + ": " + std::to_string(writer_->synthetic_launches()) +
                     " GPU activities without a launch record got a zero-length \"" +
                     std::string(kSyntheticLaunchName) + "\" event (--kineto-synthetic-launches)");
  writer_.reset();
  auto committed = file_->Commit();
  file_.reset();
  if (!committed) {
    errors_.push_back(committed.error().message);
    return;
  }
  files_.push_back(path_);
}

void KinetoExporter::Close() {
  // Other traces in DIR: HTA reads every .json and .gz file there as one rank's trace.
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    const bool trace = name.ends_with(".json") || name.ends_with(".gz");
    if (trace && !names_used_.count(name))
      warnings_.push_back(entry.path().string() +
                          " is not from this export, and HTA would read it as a rank's trace too");
  }
}

ExportOutcome KinetoExporter::Conclude(Diagnostics& diagnostics) {
  for (const auto& f : files_) diagnostics.Status("wrote " + f);
  for (const auto& n : notes_) diagnostics.Note(n);
  for (const auto& w : warnings_) diagnostics.Warning(w);
  for (const auto& e : errors_) diagnostics.Error(e);
  return !errors_.empty()     ? ExportOutcome::kIncomplete
         : !warnings_.empty() ? ExportOutcome::kWarnings
                              : ExportOutcome::kWritten;
}

}  // namespace cupmon::decoder
