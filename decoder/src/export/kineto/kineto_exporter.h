// `cupmon-decode export --format kineto -o DIR`: one JSON trace per rank (DIR/rank0.json, ...) in
// the shape PyTorch's profiler (Kineto) writes, so that Holistic Trace Analysis (HTA) and other
// Kineto readers take cupmon's history. Private to the decoder; built by the export registry
// (export/registry.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/output_file.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/exporter.h"
#include "export/trace_event_json.h"
#include "text/out_buf.h"

namespace cupmon::decoder {

// One iteration of a training loop on one rank: written as Kineto's "ProfilerStep#<number>", the
// CPU-side slice from which HTA numbers iterations (a CPU event belongs to the step whose span
// holds its start; a GPU activity to the step of the call that launched it).
struct TrainingStep {
  uint64_t number = 0;
  int64_t wall_start = 0, wall_end = 0;  // wall-clock ns, the CPU time the step spans
  uint32_t pid = 0, tid = 0;             // the thread to draw it on (0: the rank's process)
  std::string source;                    // args.source: "annotation", or the detector's name
};

// Where iterations come from besides annotations (DetectedKinetoSteps below: the steps
// `cupmon-decode steps` detects): a source sees every row of a recording that the export writes,
// in the order the export writes them, and hands over that recording's steps at its end. Which
// of its steps and the annotations that look like steps (StepNumberOf) name the iterations is
// KinetoOptions::steps' choice (see KinetoTraceWriter::Begin); the others stay plain annotations.
class KinetoStepSource {
 public:
  virtual ~KinetoStepSource() = default;
  // Before the recording's first row.
  virtual void Begin(const TraceBuilder& builder, const Recording& recording) = 0;
  virtual void OnRow(const Row& row) = 0;
  // After its last row: the steps found, in any order.
  virtual std::vector<TrainingStep> Steps() = 0;
  // After Begin, by a caller that reads the recording for the export (the rows command): a consumer
  // that caller adds to that one pass's builder, or nullptr when the source wants none.
  // A source whose consumer was not asked for reads the recording itself, if it needs to.
  virtual RecordConsumer* RecordsWanted() { return nullptr; }
};

// Steps found in the kernel stream, as `cupmon-decode steps --by pattern` finds them: in the
// export's own pass over the recording (RecordsWanted, a StepFinder), else FindSteps in a pass of
// its own at Steps. Step N is written as "ProfilerStep#N" from its
// first kernel's start (as the trace builder maps it, so exactly the rows `steps` counts in it
// fall inside) to the next step's first kernel (the last step: to its drill_to), on the
// process's pid and the thread kDetectedStepsTid, with args.source "cupmon-detected".
class DetectedKinetoSteps : public KinetoStepSource {
 public:
  explicit DetectedKinetoSteps(StepDetectorOptions detector = {}) : detector_(detector) {}
  void Begin(const TraceBuilder& builder, const Recording& recording) override;
  void OnRow(const Row&) override {}
  std::vector<TrainingStep> Steps() override;
  RecordConsumer* RecordsWanted() override;

 private:
  StepOptions Options() const;
  StepDetectorOptions detector_;
  bool cupti_clock_ = false;  // the builder's (TraceFilter::cupti_clock): steps in the rows' time
  const Recording* recording_ = nullptr;
  std::unique_ptr<StepFinder> finder_;  // fed by the export's pass, when it asked
};

// The thread row of detected steps and synthetic launch events: above any Linux thread id
// (pid_max is at most 2^22), so that it is never a real thread's.
inline constexpr uint32_t kDetectedStepsTid = 0x7ffffffe;

// What KinetoTraceWriter writes besides the rows (ExportSettings: --kineto-steps and
// --kineto-synthetic-launches).
struct KinetoOptions {
  KinetoSteps steps = KinetoSteps::kAuto;
  // GPU activities without a launch record get a zero-duration CPU event at their start, on the
  // steps thread, with their correlation id: name "cupmon: launch not recorded", cat
  // kCatSyntheticLaunch (no category HTA's launch or CPU-operator analyses count), args
  // {"synthetic": true}. HTA then gives the activity the iteration of the step it starts in.
  bool synthetic_launches = false;
};
inline constexpr std::string_view kCatSyntheticLaunch = "cupmon_synthetic";
inline constexpr std::string_view kSyntheticLaunchName = "cupmon: launch not recorded";

// The step number of an annotation label that names one step: a word for a step ("step",
// "iteration", "iter", "train_step", "train step", "training step", "ProfilerStep"; any case)
// followed by separators (space, '#', '_', ':', '=', '-', '/') and a number, and nothing else:
// "step 12", "ProfilerStep#12", "Iteration 3", "iter_3", "train_step=7". Otherwise nothing
// ("train_step", "step 1 forward", "warmup 2").
std::optional<uint64_t> StepNumberOf(std::string_view label);

// What one rank's trace says about the rank.
struct KinetoRank {
  uint32_t rank = 0;
  uint32_t world_size = 1;
  int64_t base = 0;       // baseTimeNanoseconds; 0: the first row's start
  std::string label;      // "rank 0 (host:pid)"
  std::string file_name;  // "rank0.json", for traceName
};

// Writes one rank's trace into `out`: the header (schemaVersion, deviceProperties,
// distributedInfo with "rank": N as HTA's regular expression wants it, baseTimeNanoseconds), then
// traceEvents as rows arrive: kernels (cat "kernel"), memcpys ("gpu_memcpy", "Memcpy HtoD"),
// memsets ("gpu_memset", "Memset") on pid = device, tid = stream with args device, context,
// stream, correlation; API calls ("cuda_runtime"/"cuda_driver") on the process's pid and thread
// with args cbid and correlation (no "stream": HTA takes every event with a stream as GPU work);
// launch flows ("ac2g"). At End: windows (cat "Trace", which HTA leaves out of its analyses),
// annotations ("user_annotation"), steps ("ProfilerStep#N", "user_annotation") and the process
// and thread names. Holds only per-track, per-label and per-name state. Single-threaded.
class KinetoTraceWriter {
 public:
  explicit KinetoTraceWriter(std::ostream& out);
  KinetoTraceWriter(const KinetoTraceWriter&) = delete;
  KinetoTraceWriter& operator=(const KinetoTraceWriter&) = delete;

  // Before Begin; the default writes steps as KinetoSteps::kAuto, no synthetic launches.
  void set_options(const KinetoOptions& options) { options_ = options; }

  // `steps` may be null (annotations that look like steps are the steps); it is not owned.
  // With kAuto, annotation steps win when there are any and `steps` gives the steps otherwise;
  // kDetected: only `steps`; kAnnotation: only annotations; kNone: none.
  void Begin(const TraceBuilder& builder, const Recording& recording, const KinetoRank& rank,
             KinetoStepSource* steps);
  void Write(const Row& row);
  // Writes what is known at the end and closes the JSON document; flushes `out`.
  void End(const TraceBuilder& builder, const Recording& recording);

  uint64_t events() const { return ev_.events(); }  // trace events, metadata included
  uint64_t rows() const { return rows_; }           // rows written as slices
  uint64_t steps() const { return steps_; }         // ProfilerStep events
  uint64_t synthetic_launches() const { return synthetic_; }  // "launch not recorded" events

 private:
  void Header(int64_t base);
  uint32_t GpuPid(uint32_t device) const { return gpu_pid_offset_ + device; }

  OutBuf out_;
  TraceEventWriter ev_;
  const Recording* recording_ = nullptr;
  KinetoRank rank_;
  KinetoStepSource* step_source_ = nullptr;
  KinetoOptions options_;
  bool started_ = false;
  // The wall-clock span of the rows written: detected steps outside it are left out (a region
  // or --limit exports part of a recording that FindSteps reads whole).
  int64_t rows_from_ = INT64_MAX, rows_to_ = INT64_MIN;
  uint64_t synthetic_ = 0;
  uint32_t gpu_pid_offset_ = 0;
  uint32_t process_pid_ = 0;
  uint64_t rows_ = 0, steps_ = 0, flow_id_ = 0;
  std::set<std::pair<uint32_t, uint32_t>> gpu_tracks_, cpu_threads_;
  std::pair<uint32_t, uint32_t> last_gpu_{UINT32_MAX, UINT32_MAX}, last_cpu_{UINT32_MAX, UINT32_MAX};
  AnnotationSpans annotations_;
  // The last annotation label seen (a view into the builder, stable for its life), its step
  // number when it names a step, and the instance that labels seen now belong to.
  std::string_view last_label_;
  std::optional<uint64_t> last_label_step_;
  uint64_t step_instance_ = 0;
  std::string memcpy_names_[11];  // "Memcpy HtoD" by copy kind
  // Builder name id -> 1 when the name needs no JSON escaping, 0 when it does, -1 not known yet:
  // kernel names run to kilobytes, and scanning each once instead of per row is most of the
  // writer's time saved.
  PlainJsonNames plain_name_;
};

// The whole export: one KinetoTraceWriter per rank, each into DIR/rank<N>.json, written as
// rank<N>.json.tmp and renamed when complete (a reader never sees half a trace; an export that
// fails leaves the previous file). The decode pass's `out` is not used. Steps come from
// annotations or, per KinetoOptions::steps, from the step detector (`cupmon-decode steps`), run
// per rank in the export's own pass (RecordsWanted).
class KinetoExporter final : public Exporter {
 public:
  // PrepareDirectory(settings.output_dir), then the exporter over `ranks`.
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);
  // Creates `dir` (and missing parents); an error when it is not a directory or cannot be
  // written. Call before reading: an unwritable DIR fails at once.
  static Expected<void> PrepareDirectory(const std::string& dir);

  // `ranks`: the recordings in output order (their rank numbers and labels). `steps`: one per
  // rank, or empty: then, unless options.steps is kAnnotation or kNone, each recording gets a
  // DetectedKinetoSteps. Not owned.
  KinetoExporter(std::string dir, const std::vector<const Rank*>& ranks,
                 std::vector<KinetoStepSource*> steps = {}, KinetoOptions options = {});
  ~KinetoExporter() override;

  bool WantsRanges() const override { return true; }
  // `rank` is not used: the ranks given at construction, by `index`, name the files.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  // After Begin: the consumer of this recording's step source that the caller's read of the
  // recording should feed too (KinetoStepSource::RecordsWanted), or nullptr.
  RecordConsumer* RecordsWanted() override;
  void Write(const Row& row) override;
  void End(const TraceBuilder& builder, const Recording& recording,
           const ReadIntegrity& integrity) override;
  void Close() override;
  // Prints the files written, notes and problems: kWarnings for other traces in DIR, kIncomplete
  // when a file could not be written.
  ExportOutcome Conclude(Diagnostics& diagnostics) override;

  // True once a write to the rank's file has failed (a full disk, a size limit: Conclude says why
  // once the file is closed); the read can stop. A rank whose file could not be created is not a
  // failure here: its rows are dropped and the other ranks are still written.
  bool Failed() const override { return file_ && file_->stream().fail(); }
  const std::vector<std::string>& files() const { return files_; }
  uint64_t events() const { return events_; }

 private:
  std::string dir_;
  std::vector<const Rank*> ranks_;
  std::vector<KinetoStepSource*> step_sources_;
  KinetoOptions options_;
  std::unique_ptr<KinetoStepSource> detected_;  // this recording's, when step_sources_ is empty
  KinetoStepSource* source_ = nullptr;           // this recording's, if any
  int64_t base_ = 0;
  uint32_t world_size_ = 1;
  std::unique_ptr<OutputFile> file_;  // the rank being written, as path_ + ".tmp"
  std::string path_;
  std::unique_ptr<KinetoTraceWriter> writer_;
  size_t index_ = 0;
  std::set<std::string> names_used_;
  std::vector<std::string> files_, warnings_, notes_, errors_;
  uint64_t events_ = 0;
};

}  // namespace cupmon::decoder
