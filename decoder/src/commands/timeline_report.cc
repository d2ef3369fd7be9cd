// `cupmon-decode timeline`: per rank and device, fixed wall-clock buckets of busy %, kernels/s,
// memcpy bytes/s and device memory in use, streamed as CSV or JSONL rows while each recording is
// read.
#include "commands/timeline_report.h"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <functional>
#include <memory>

#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/timeline.h"
#include "cupmon/decoder/trace_builder.h"
#include "commands/rank_pass.h"
#include "text/out_buf.h"

namespace cupmon::decoder {
namespace {

// CUPTI_ActivityMemcpyKind values (cupti_activity.h).
constexpr uint32_t kCopyHtoD = 1, kCopyDtoH = 2, kCopyDtoD = 8, kCopyPtoP = 10;

CopyDirection DirectionOf(uint32_t copy_kind) {
  switch (copy_kind) {
    case kCopyHtoD: return CopyDirection::kHostToDevice;
    case kCopyDtoH: return CopyDirection::kDeviceToHost;
    case kCopyDtoD:
    case kCopyPtoP: return CopyDirection::kDeviceToDevice;
    default: return CopyDirection::kOther;
  }
}

// Bucket starts in UTC with as many decimals as the bucket size needs (buckets are aligned to it).
std::string BucketTime(int64_t unix_ns, uint64_t bucket_ns) {
  const int digits = bucket_ns % 1'000'000'000 == 0 ? 0
                     : bucket_ns % 1'000'000 == 0   ? 3
                     : bucket_ns % 1'000 == 0       ? 6
                                                    : 9;
  int64_t secs = unix_ns / 1'000'000'000, frac = unix_ns % 1'000'000'000;
  if (frac < 0) frac += 1'000'000'000, --secs;
  const auto t = static_cast<time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[40], text[72];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  if (digits == 0) return std::string(date) + "Z";
  for (int d = digits; d < 9; ++d) frac /= 10;
  std::snprintf(text, sizeof text, "%s.%0*" PRId64 "Z", date, digits, frac);
  return text;
}

std::string Fixed3(double v) {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

// CUpti_ActivityMemoryOperationType values.
constexpr uint8_t kMemoryAllocation = 1, kMemoryRelease = 2;

// Feeds the trace builder's GPU rows (in delivery order) to the timeline, MEMORY2 allocations and
// releases included; API, synchronization and memory pool rows are not activity on a device.
class TimelineSink : public RowSink {
 public:
  explicit TimelineSink(TimelineBuilder* timeline) : timeline_(timeline) {}
  bool WantsMemory() const override { return true; }
  void OnRow(const Row& r) override {
    TimelineActivityKind kind;
    switch (r.type) {
      case RowType::kKernel: kind = TimelineActivityKind::kKernel; break;
      case RowType::kMemcpy: kind = TimelineActivityKind::kMemcpy; break;
      case RowType::kMemset: kind = TimelineActivityKind::kMemset; break;
      case RowType::kMemory:
        if (r.kind != kKindMemory2) return;
        if (r.memory.op == kMemoryAllocation) kind = TimelineActivityKind::kAllocation;
        else if (r.memory.op == kMemoryRelease) kind = TimelineActivityKind::kRelease;
        else return;
        break;
      default: return;
    }
    if (!r.valid_time) {
      ++untimed_;
      return;
    }
    timeline_->Add({.device = r.device,
                    .start = r.wall_start,
                    .end = r.wall_end,
                    .kind = kind,
                    .bytes = kind == TimelineActivityKind::kMemcpy ||
                                     kind == TimelineActivityKind::kAllocation
                                 ? r.bytes
                                 : 0,
                    .direction = DirectionOf(r.copy.kind),
                    .address = r.address});
  }
  uint64_t untimed() const { return untimed_; }

 private:
  TimelineBuilder* timeline_;
  uint64_t untimed_ = 0;
};

class RowWriter {
 public:
  RowWriter(std::ostream& out, bool jsonl) : out_(out), jsonl_(jsonl) {
    if (!jsonl_)
      out_ << "bucket_start,bucket_start_ns,bucket_ns,rank,pid,device,busy_ns,busy_pct,"
              "kernel_busy_ns,kernel_busy_pct,kernels,kernels_per_s,memcpys,memcpy_bytes,"
              "memcpy_bytes_per_s,memcpy_h2d_bytes,memcpy_d2h_bytes,memcpy_d2d_bytes,memsets,"
              "memory_in_use_bytes,memory_peak_bytes,allocations,releases\n";
  }
  void Write(const TimelineBucket& b, uint32_t rank, uint32_t pid) {
    const double len = static_cast<double>(b.length);
    const std::string when = BucketTime(b.start, b.length);
    const std::string busy = Fixed3(100.0 * static_cast<double>(b.busy_ns) / len);
    const std::string kbusy = Fixed3(100.0 * static_cast<double>(b.kernel_busy_ns) / len);
    const std::string kps = Fixed3(static_cast<double>(b.kernels) * 1e9 / len);
    const std::string bps = Fixed3(static_cast<double>(b.memcpy_bytes) * 1e9 / len);
    if (!jsonl_) {
      out_ << when << ',' << b.start << ',' << b.length << ',' << rank << ',' << pid << ','
           << b.device << ',' << b.busy_ns << ',' << busy << ',' << b.kernel_busy_ns << ','
           << kbusy << ',' << b.kernels << ',' << kps << ',' << b.memcpys << ',' << b.memcpy_bytes
           << ',' << bps << ',' << b.h2d_bytes << ',' << b.d2h_bytes << ',' << b.d2d_bytes << ','
           << b.memsets << ',' << b.memory_in_use << ',' << b.memory_peak << ',' << b.allocations
           << ',' << b.releases << '\n';
    } else {
      out_ << "{\"bucket_start\":\"" << when << "\",\"bucket_start_ns\":" << b.start
           << ",\"bucket_ns\":" << b.length << ",\"rank\":" << rank << ",\"pid\":" << pid
           << ",\"device\":" << b.device << ",\"busy_ns\":" << b.busy_ns << ",\"busy_pct\":"
           << busy << ",\"kernel_busy_ns\":" << b.kernel_busy_ns << ",\"kernel_busy_pct\":"
           << kbusy << ",\"kernels\":" << b.kernels << ",\"kernels_per_s\":" << kps
           << ",\"memcpys\":" << b.memcpys << ",\"memcpy_bytes\":" << b.memcpy_bytes
           << ",\"memcpy_bytes_per_s\":" << bps << ",\"memcpy_h2d_bytes\":" << b.h2d_bytes
           << ",\"memcpy_d2h_bytes\":" << b.d2h_bytes << ",\"memcpy_d2d_bytes\":" << b.d2d_bytes
           << ",\"memsets\":" << b.memsets << ",\"memory_in_use_bytes\":" << b.memory_in_use
           << ",\"memory_peak_bytes\":" << b.memory_peak << ",\"allocations\":" << b.allocations
           << ",\"releases\":" << b.releases << "}\n";
    }
    out_.EndRow();
  }
  void Flush() { out_.Flush(); }

 private:
  OutBuf out_;
  bool jsonl_;
};

// One rank's read for the timeline: the builder's rows through the sink into the buckets.
struct TimelineRead {
  TimelineRead(const TimelineOptions& timeline_options,
               std::function<void(const TimelineBucket&)> emit, const RankReadOptions& options)
      : timeline(timeline_options, std::move(emit)),
        sink(&timeline),
        builder(options.filter, &sink, options.horizon, ReorderOptions{}) {}
  TimelineBuilder timeline;
  TimelineSink sink;
  TraceBuilder builder;
  ReadIntegrity integrity;
};

}  // namespace

Outcome RunTimelineReport(const std::vector<const Rank*>& chosen,
                          const TimelineReportOptions& options, std::ostream& out,
                          Diagnostics& diagnostics, bool warnings) {
  if (options.limit) {
    diagnostics.Error(
        "timeline writes every bucket of the time span: --limit does not apply (narrow it with "
        "--from/--to or --window)");
    return Outcome::kUsageError;
  }
  if (options.format != ExportFormat::kCsv && options.format != ExportFormat::kJsonl) {
    diagnostics.Error("timeline writes csv or jsonl");
    return Outcome::kUsageError;
  }
  RankPass pass(chosen, 1, diagnostics);
  RowWriter writer(out, options.format == ExportFormat::kJsonl);
  uint64_t activities = 0;
  bool too_many_rows = false;
  // One rank at a time: its rows stream to `out` as its buckets close.
  pass.Run(
      1,
      [&](size_t i, const PassProgress& progress) {
        const Rank* rank = chosen[i];
        // The timeline orders activities by wall-clock start itself (TimelineOptions::
        // reorder_rows): the trace builder's reorder stage, by CUPTI start, would only add work.
        TimelineOptions timeline_options = options.timeline;
        timeline_options.reorder_rows = options.reorder_rows;
        auto read = std::make_unique<TimelineRead>(
            timeline_options,
            [&writer, rank, pid = rank->recording.header.pid()](const TimelineBucket& b) {
              writer.Write(b, rank->rank, pid);
            },
            options.read);
        ReadRecording(rank->recording, read->builder, &read->integrity,
                      [&](uint64_t done, uint64_t) { progress(0, done); });
        read->builder.Finish();
        read->timeline.Finish();
        return read;
      },
      [&](size_t i, std::unique_ptr<TimelineRead> read) {
        const std::string who = pass.Who(i);
        const TraceCounts& c = read->builder.counts();
        const TimelineCounts& t = read->timeline.counts();
        const TimelineSink& sink = read->sink;
        activities += t.activities;
        RankMessageLog log(diagnostics, who);
        log.ReadProblems(read->integrity, &c);
        for (const auto& m : c.notes) log.Note(m);
        if (sink.untimed())
          log.Warning(std::to_string(sink.untimed()) +
                      " GPU record(s) with zero or reversed timestamps are left out of the "
                      "timeline");
        if (c.unresolved_names)
          log.Warning(std::to_string(c.unresolved_names) +
                      " kernel record(s) whose name pointer has no string entry");
        if (c.stats.dropped_records())
          log.Warning("CUPTI dropped " + std::to_string(c.stats.dropped_records()) +
                      " record(s): the buckets where they were lack them");
        if (c.stats.chunks_lost() || c.stats.lost_records())
          log.Warning("lost before disk: " + std::to_string(c.stats.lost_records()) +
                      " record(s) in " + std::to_string(c.stats.chunks_lost()) +
                      " chunk(s): the buckets where they were lack them");
        if (t.late) {
          log.Warning(std::to_string(t.late) +
                      " activit(ies) arrived after their bucket was written (further out of start "
                      "order than --reorder-rows holds) and are left out of the rows; raise "
                      "--reorder-rows");
          warnings = true;
        }
        if (t.out_of_range) {
          log.Warning(std::to_string(t.out_of_range) +
                      " activit(ies) with wall-clock times beyond the year 2116 or before 1824 (a "
                      "damaged calibration?) are left out of the timeline");
          warnings = true;
        }
        if (t.unknown_releases)
          log.Note(std::to_string(t.unknown_releases) +
                   " release(s) of memory whose allocation the recording lacks (made before it "
                   "began) are left out of memory_in_use_bytes");
        if (t.late_busy_ns_missed)
          log.Note("activities out of start order within a bucket: " +
                   FormatDuration(static_cast<double>(t.late_busy_ns_missed)) +
                   " of their busy time is left out, so that no overlap counts twice");
        warnings |= read->integrity.HasWarnings() || c.HasWarnings() || sink.untimed() != 0;
        if (t.too_many_rows) {
          writer.Flush();
          diagnostics.Error(who + "--bucket " +
                            FormatDuration(static_cast<double>(options.timeline.bucket_ns)) +
                            " would write more than " + std::to_string(options.timeline.max_rows) +
                            " rows (the activity reaches the bucket of " +
                            BucketTime(t.too_many_rows_at, options.timeline.bucket_ns) +
                            "); give a larger --bucket or a shorter --from/--to range");
          too_many_rows = true;
          return false;
        }
        return true;
      });
  if (too_many_rows) {
    out.flush();
    return Outcome::kFailed;
  }
  writer.Flush();
  out.flush();
  if (!out) {
    diagnostics.Error(
        "writing the timeline failed (a full disk, or the reader of the pipe went away): the rows "
        "are incomplete");
    return Outcome::kFailed;
  }
  if (activities == 0)
    diagnostics.Note(
        "no GPU activity (kernel, memcpy, memset, memory allocation) in the region asked for: no "
        "buckets");
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace cupmon::decoder
