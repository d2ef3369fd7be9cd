// The report sinks the driver (commands/rows_report.cc) holds by their base: LimitedSink, the row limit and
// per-recording calls of the text traces and exports; SummarySink, the nvprof-style summary
// (summary_report.cc); and the text traces gpu-trace, api-trace and kern-exec (text_traces.cc).
// Private to the decoder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/memory_usage.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/trace_builder.h"
#include "duration_stat.h"
#include "text/out_buf.h"
#include "text/row_text.h"

namespace cupmon::decoder {

// Keeps rows and the limit for the trace-like sinks.
class LimitedSink : public RowSink {
 public:
  LimitedSink(std::ostream& out, std::optional<uint64_t> limit) : out_(out), limit_(limit) {}
  void OnRow(const Row& row) final {
    if (!Wants(row)) return;
    if (limit_ && written_ >= *limit_) return;
    ++written_;
    Write(row);
    out_.EndRow();
  }
  virtual void Begin(const TraceBuilder& /*b*/, const Recording& /*r*/, size_t /*index*/) {}
  // After Begin: a consumer that wants the records of the builder's read of the recording, in
  // the same pass (the kineto export's step detector, which would otherwise read it again), or
  // nullptr. The caller adds it to that builder (TraceBuilder::AddConsumer).
  virtual RecordConsumer* RecordsWanted() { return nullptr; }
  virtual void End(const TraceBuilder& /*b*/, const Recording& /*r*/, const ReadIntegrity& /*i*/) {}
  virtual void Close() { out_.Flush(); }
  // After Close: reports problems of the output itself to `diagnostics` and returns the outcome
  // they make (exports that write their own files).
  virtual Outcome Conclude(Diagnostics& /*diagnostics*/) { return Outcome::kClean; }
  // After Conclude: true when the output was not written at all (an export whose file could not
  // be completed), so that the report ends there.
  virtual bool OutputLost() const { return false; }
  // True once the output can no longer be written (its stream has failed: a full disk, a file
  // size limit; exports that write their own files override it), so that the report stops
  // reading. Asked after every chunk.
  virtual bool OutputFailed() const { return out_.failed(); }
  // True once --limit rows are written and nothing more can reach the output: the rows past the
  // limit are dropped, and the export writes nothing at End that needs the rest of the recording
  // (text traces, csv, jsonl). The report then reads no further (a day of history printed with
  // `--limit 20` reads a chunk or a few, not the day). The other exports write the recording's
  // windows, steps or tables at End, from the whole read, and answer false.
  bool LimitReachedAndFinal() const { return LimitEndsOutput() && limit_ && written_ >= *limit_; }
  // Merged (multi-rank) reports: the rank whose rows come next; call before Begin. Single
  // recordings never call it, so their output stays as it was.
  virtual void SetRank(const Rank* rank) { rank_ = rank; }
  // Text traces: kernels by their short name (ShortKernelName) from here on. Exports never call it.
  void SetShortNames(bool on) { short_names_ = on; }

 protected:
  // A kernel row's name as the trace shows it; other rows' names as they are.
  std::string_view ShownName(const Row& r) { return short_names_ ? ShortName(r) : r.name; }
  // A kernel row's short name (of its demangled name also under --mangled); other rows' names as
  // they are. Each name id's is computed once per recording (ids are the builder's).
  std::string_view ShortName(const Row& r) { return short_by_id_.Of(r); }
  // The same for a name without an id (an API row's launched kernel).
  std::string_view ShownName(std::string_view kernel) {
    if (!short_names_ || kernel.empty()) return kernel;
    auto it = short_by_view_.find(kernel);
    if (it == short_by_view_.end())
      it = short_by_view_.emplace(kernel, ShortKernelName(kernel)).first;
    return it->second;
  }
  // Call from Begin: the next recording's builder numbers its names anew.
  void ForgetShortNames() {
    short_by_id_.Clear();
    short_by_view_.clear();
  }
  virtual bool Wants(const Row& /*row*/) const { return true; }
  // True when nothing the export writes depends on rows past the limit (LimitReachedAndFinal).
  virtual bool LimitEndsOutput() const { return false; }
  // "rank N (host:pid): " in merged reports, else "".
  std::string RankPrefix() const { return rank_ ? rank_->label + ": " : std::string(); }
  virtual void Write(const Row& row) = 0;
  OutBuf out_;
  std::optional<uint64_t> limit_;
  uint64_t written_ = 0;
  const TraceBuilder* builder_ = nullptr;
  const Rank* rank_ = nullptr;

 private:
  bool short_names_ = false;
  ShortKernelNames short_by_id_;
  // Keys view the builder's names, which live as long as it.
  std::unordered_map<std::string_view, std::string> short_by_view_;
};

using Stat = DurationStat;
using NamedStats = std::vector<std::pair<std::string, Stat>>;

// What a summary table did to its kernel names, for the line under the tables.
struct ShownNames {
  bool shortened = false;  // some name is shown in its short form
  bool numbered = false;   // some short name stands for several kernels: " [1]", " [2]", ...
};

// The line under a summary whose kernel names are short: how to read them, how to get them whole.
void PrintShownNames(std::ostream& out, const ShownNames& shown);

// A line of a summary table: the name rows are grouped by, the name the table shows, its stats.
struct SummaryTableRow {
  std::string name, shown_name;
  Stat stat;
};

class JsonWriter;
struct RankMessages;

// `summary`: durations per name (GPU activities, API calls, NVTX ranges) and device memory.
class SummarySink : public RowSink {
 public:
  explicit SummarySink(bool short_names = false) : short_names_(short_names) {}
  // Aggregates by the builder's name id (a vector index): no string key per row.
  void OnRow(const Row& row) override;
  bool NeedsWallTimes() const override { return false; }  // durations only
  bool ReadsTotalsOnly() const override { return true; }  // type, name_id, valid_time, duration
  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  // `prefix` starts the first line ("rank N (host:pid): " in merged summaries).
  void Print(std::ostream& out, const TraceBuilder& b, const Recording& rec,
             const ReadIntegrity& integrity, const std::string& prefix = {});
  // --format json: this recording's object of the cupmon.summary document, with every figure
  // Print shows and the warnings and notes its read wrote (summary_json.cc). Call once, as Print.
  void WriteJson(JsonWriter& w, const TraceBuilder& b, const Rank& rank,
                 const ReadIntegrity& integrity, const RankMessages& messages);
  // --format csv: this recording's rows of the GPU activity, API call and NVTX range tables, each
  // with its rank (summary_csv.cc; WriteSummaryCsvHeader writes the header).
  void WriteCsv(std::ostream& out, const TraceBuilder& b, const Rank& rank) const;
  // This recording's rows by display name, for the merged total.
  NamedStats NamedGpu(const TraceBuilder& b) const { return Named(b, gpu_); }
  NamedStats NamedApi(const TraceBuilder& b) const { return Named(b, api_); }

  // Rows are grouped by full name (one row per kernel). `shorten`: each is shown by its short
  // name (ShortKernelName); rows whose short names are equal get " [1]", " [2]", ... in table
  // order (by total time), so they stay apart and a reader sees that they are several kernels.
  static ShownNames PrintTable(std::ostream& out, const char* title, NamedStats rows,
                               bool shorten = false);
  // The lines of such a table in its order (by total time, then name), with their shown names.
  static std::vector<SummaryTableRow> TableRows(NamedStats rows, bool shorten,
                                                ShownNames* shown = nullptr);

 private:
  static NamedStats Named(const TraceBuilder& b, const std::vector<Stat>& table);
  // The "Device memory" section: only when the recording has MEMORY2 or MEMORY_POOL records.
  void PrintMemory(std::ostream& out, const TraceBuilder& b, const TraceCounts& c);

  bool short_names_;
  std::vector<Stat> gpu_, api_, ranges_;
  MemoryUsage memory_;
};

// The text trace of `kind` (kGpuTrace, kApiTrace or kKernExec), writing to `out`.
std::unique_ptr<LimitedSink> MakeTextTrace(ReportKind kind, std::ostream& out,
                                           std::optional<uint64_t> limit);

}  // namespace cupmon::decoder
