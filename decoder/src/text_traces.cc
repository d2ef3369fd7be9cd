// The text traces: `gpu-trace` (every GPU activity), `api-trace` (every API call) and `kern-exec`
// (each kernel with its launch: launch, queue and execution, never counted twice).
#include <cstdint>
#include <string>

#include "text/row_text.h"
#include "report_sinks.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

std::string TimeOrDash(const Row& r, int64_t wall, int64_t origin, bool valid) {
  (void)r;
  return valid ? FormatRel(wall - origin) : "-";
}

// The text traces' shared part: per recording, the builder to read times against and the line
// naming the recording, before each trace's column header.
class TextTrace : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;

 protected:
  bool LimitEndsOutput() const override { return true; }  // rows only, after each Begin's lines
  void BeginRecording(const TraceBuilder& b, const Recording& r) {
    builder_ = &b;
    ForgetShortNames();
    out_ << "==cupmon== " << RankPrefix() << "Recording " << RecordingIdText(r.id) << " pid " << r.header.pid()
         << (r.header.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "") << "\n";
  }
};

class GpuTraceSink : public TextTrace {
 public:
  using TextTrace::TextTrace;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    BeginRecording(b, r);
    out_ << Printf("%12s  %10s  %15s  %15s  %5s  %8s  %8s  %9s  %12s  %6s  %7s  %6s  %8s  %s\n",
                   "Start", "Duration", "Grid Size", "Block Size", "Regs", "SSMem", "DSMem", "Size",
                   "Throughput", "Device", "Context", "Stream", "CorrId", "Name");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type != RowType::kApi; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    const std::string_view name = ShownName(r);
    std::string grid = "-", block = "-", regs = "-", ss = "-", ds = "-", size = "-", tp = "-";
    if (r.type == RowType::kKernel) {
      grid = Printf("(%u %u %u)", r.launch.grid[0], r.launch.grid[1], r.launch.grid[2]);
      block = Printf("(%u %u %u)", r.launch.block[0], r.launch.block[1], r.launch.block[2]);
      regs = std::to_string(r.launch.registers);
      ss = FormatBytes(r.launch.static_smem);
      ds = FormatBytes(r.launch.dynamic_smem);
    } else {
      size = FormatBytes(r.bytes);
      if (r.valid_time && r.duration)
        tp = Printf("%.4gGB/s", static_cast<double>(r.bytes) / static_cast<double>(r.duration));
    }
    out_ << Printf("%12s  %10s  %15s  %15s  %5s  %8s  %8s  %9s  %12s  %6u  %7u  %6u  %8u  %.*s\n",
                   TimeOrDash(r, r.wall_start, origin, r.valid_time).c_str(),
                   r.valid_time ? FormatDuration(static_cast<double>(r.duration)).c_str() : "-",
                   grid.c_str(), block.c_str(), regs.c_str(), ss.c_str(), ds.c_str(), size.c_str(),
                   tp.c_str(), r.device, r.context, r.stream, r.correlation,
                   static_cast<int>(name.size()), name.data());
  }
};

class ApiTraceSink : public TextTrace {
 public:
  using TextTrace::TextTrace;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    BeginRecording(b, r);
    out_ << Printf("%12s  %10s  %8s  %8s  %8s  %-28s  %s\n", "Start", "Duration", "Thread",
                   "Return", "CorrId", "Name", "GPU activity");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type == RowType::kApi; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    std::string gpu = "-";
    const std::string_view launched = ShownName(r.launched_name);
    if (r.launched == 1 && !launched.empty()) gpu = std::string(launched);
    else if (r.launched) gpu = std::to_string(r.launched) + " activities" +
                              (launched.empty() ? "" : " (first: " + std::string(launched) + ")");
    out_ << Printf("%12s  %10s  %8u  %8u  %8u  %-28.*s  %s\n",
                   TimeOrDash(r, r.wall_start, origin, r.valid_time).c_str(),
                   r.valid_time ? FormatDuration(static_cast<double>(r.duration)).c_str() : "-", r.tid,
                   r.return_value, r.correlation, static_cast<int>(r.name.size()), r.name.data(),
                   gpu.c_str());
  }
};

class KernExecSink : public TextTrace {
 public:
  // The API Name column: the launch call, or why there is none.
  static std::string_view ApiColumn(const Row& r) {
    if (r.api.found) return r.api.name;
    return r.api.before_window ? "(before window)" : "-";
  }
  using TextTrace::TextTrace;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    BeginRecording(b, r);
    out_ << Printf("%12s  %10s  %10s  %12s  %10s  %10s  %8s  %-20s  %s\n", "API Start", "API Dur",
                   "Queue Dur", "Kernel Start", "Kernel Dur", "Total Dur", "CorrId", "API Name",
                   "Kernel Name");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type == RowType::kKernel; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    const std::string_view name = ShownName(r);
    const bool api = r.api.found && r.api.valid_time;
    std::string queue = "-", total = "-";
    if (api && r.valid_time) {
      // Queue: from the end of the launch call to the kernel's start (0 when it started earlier).
      const int64_t q = static_cast<int64_t>(r.start) - static_cast<int64_t>(r.api.end);
      queue = FormatDuration(q > 0 ? static_cast<double>(q) : 0.0);
      const int64_t t = static_cast<int64_t>(r.end) - static_cast<int64_t>(r.api.start);
      total = t >= 0 ? FormatDuration(static_cast<double>(t)) : "-";
    }
    out_ << Printf("%12s  %10s  %10s  %12s  %10s  %10s  %8u  %-20.*s  %.*s\n",
                   api ? FormatRel(r.api.wall_start - origin).c_str() : "-",
                   api ? FormatDuration(static_cast<double>(r.api.end - r.api.start)).c_str() : "-",
                   queue.c_str(), TimeOrDash(r, r.wall_start, origin, r.valid_time).c_str(),
                   r.valid_time ? FormatDuration(static_cast<double>(r.duration)).c_str() : "-",
                   total.c_str(), r.correlation, static_cast<int>(ApiColumn(r).size()),
                   ApiColumn(r).data(), static_cast<int>(name.size()), name.data());
  }
};

}  // namespace

std::unique_ptr<LimitedSink> MakeTextTrace(ReportKind kind, std::ostream& out,
                                           std::optional<uint64_t> limit) {
  switch (kind) {
    case ReportKind::kGpuTrace:
      return std::make_unique<GpuTraceSink>(out, limit);
    case ReportKind::kApiTrace:
      return std::make_unique<ApiTraceSink>(out, limit);
    case ReportKind::kKernExec:
      return std::make_unique<KernExecSink>(out, limit);
    default:
      return nullptr;
  }
}

}  // namespace cupmon::decoder
