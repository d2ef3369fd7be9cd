// Report sinks (nvprof-style tables, traces, CSV/JSONL/Chrome-trace exports) and their driver.
#include "cupmon/decoder/reports.h"

#include <algorithm>
#include <cinttypes>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>

namespace cupmon::decoder {
namespace {

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return {};
  if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.resize(static_cast<size_t>(n));
  return big;
}

std::string Hex(uint64_t v) { return Printf("0x%" PRIx64, v); }

std::string IsoTime(int64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1'000'000'000);
  int64_t frac = unix_ns % 1'000'000'000;
  if (frac < 0) frac += 1'000'000'000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return Printf("%s.%09" PRId64 "Z", buf, frac);
}

// Signed relative time with nvprof units.
std::string FormatRel(int64_t ns) {
  return ns < 0 ? "-" + FormatDuration(static_cast<double>(-ns)) : FormatDuration(static_cast<double>(ns));
}

std::string FormatBytes(uint64_t b) {
  if (b < 1024) return Printf("%" PRIu64 "B", b);
  const char* units[] = {"KB", "MB", "GB", "TB"};
  double v = static_cast<double>(b) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  return Printf("%.4g%s", v, units[u]);
}

const char* RowTypeName(RowType t) {
  switch (t) {
    case RowType::kKernel: return "kernel";
    case RowType::kMemcpy: return "memcpy";
    case RowType::kMemset: return "memset";
    case RowType::kApi: return "api";
  }
  return "?";
}

// The streaming sinks' output: rows are formatted into one large buffer (integers with
// std::to_chars, no per-row stream calls or temporary strings) that goes to the stream in ~1 MiB
// writes. Everything a sink writes passes through here, so its order is kept.
class OutBuf {
 public:
  explicit OutBuf(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 64 * 1024); }
  ~OutBuf() { Flush(); }
  OutBuf(const OutBuf&) = delete;
  OutBuf& operator=(const OutBuf&) = delete;

  OutBuf& operator<<(std::string_view s) {
    buf_.append(s);
    return *this;
  }
  OutBuf& operator<<(const char* s) { return *this << std::string_view(s); }
  OutBuf& operator<<(const std::string& s) { return *this << std::string_view(s); }
  OutBuf& operator<<(char c) {
    buf_.push_back(c);
    return *this;
  }
  template <typename T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>)
  OutBuf& operator<<(T v) {
    char tmp[24];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, static_cast<size_t>(r.ptr - tmp));
    return *this;
  }
  // Appends `s` escaped for a JSON string body.
  OutBuf& Json(std::string_view s) {
    size_t plain = 0;
    while (plain < s.size() && NeedsNoEscape(static_cast<unsigned char>(s[plain]))) ++plain;
    if (plain == s.size()) return *this << s;
    buf_.append(JsonEscape(s));
    return *this;
  }
  // Appends `s` as a CSV field in double quotes (quotes doubled).
  OutBuf& Csv(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      if (c == '"') buf_.push_back('"');
      buf_.push_back(c);
    }
    buf_.push_back('"');
    return *this;
  }
  // Call after each row: writes the buffer out once it is large.
  void EndRow() {
    if (buf_.size() >= kFlushAt) Flush();
  }
  void Flush() {
    if (buf_.empty()) return;
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static bool NeedsNoEscape(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }
  static constexpr size_t kFlushAt = 1 << 20;
  std::ostream& out_;
  std::string buf_;
};

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
  virtual void End(const TraceBuilder& /*b*/, const Recording& /*r*/, const ReadIntegrity& /*i*/) {}
  virtual void Close() { out_.Flush(); }

 protected:
  virtual bool Wants(const Row& /*row*/) const { return true; }
  virtual void Write(const Row& row) = 0;
  OutBuf out_;
  std::optional<uint64_t> limit_;
  uint64_t written_ = 0;
  const TraceBuilder* builder_ = nullptr;
};

// ---- summary ----

struct Stat {
  uint64_t calls = 0, timed = 0, total = 0, min = UINT64_MAX, max = 0;
  void Add(const Row& r) {
    ++calls;
    if (!r.valid_time) return;
    ++timed;
    total += r.duration;
    min = std::min(min, r.duration);
    max = std::max(max, r.duration);
  }
};

class SummarySink : public RowSink {
 public:
  // Aggregates by the builder's name id (a vector index): no string key per row.
  void OnRow(const Row& row) override {
    auto& table = row.type == RowType::kApi ? api_ : gpu_;
    if (row.name_id >= table.size()) table.resize(row.name_id + 1);
    table[row.name_id].Add(row);
  }
  void Print(std::ostream& out, const TraceBuilder& b, const Recording& rec,
             const ReadIntegrity& integrity) {
    const auto& h = rec.header;
    const auto& c = b.counts();
    out << "==cupmon== Recording " << Hex(rec.id) << ": host " << h.host() << ", pid " << h.pid()
        << "\n";
    if (h.synthetic())
      out << "==cupmon== SYNTHETIC: written by the CUPTI test double, not measured on a GPU\n";
    std::string cmd;
    for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
    out << "==cupmon== Command: " << (cmd.empty() ? "(unknown)" : cmd) << "\n";
    if (b.first_ts()) {
      out << "==cupmon== Span: " << IsoTime(b.clock().ToWall(b.first_ts())) << " + "
          << FormatDuration(static_cast<double>(b.last_ts() - b.first_ts()))
          << (b.clock().calibrated()
                  ? " (calibrated, " + std::to_string(b.clock().samples()) + " samples)"
                  : " (no calibration: CUPTI clock taken as wall clock)")
          << "\n";
    } else {
      out << "==cupmon== Span: no timed records\n";
    }
    out << "==cupmon== Devices:";
    if (h.devices_size() == 0) out << " (none listed)";
    for (const auto& d : h.devices())
      out << " [" << d.id() << "] " << d.name() << " (sm_" << d.cc_major() << d.cc_minor() << ")";
    out << "\n==cupmon== Windows: " << b.windows().size();
    for (const auto& [id, w] : b.windows()) {
      out << " #" << id;
      if (w.begin && w.end >= w.begin && w.end) out << " " << FormatDuration(static_cast<double>(w.end - w.begin));
      else out << " (open)";
    }
    out << "\n==cupmon== Drops: " << c.stats.dropped_records() << " dropped records, "
        << c.stats.pool_exhausted() << " buffer requests unmet, " << c.unknown_timestamps
        << " records with unknown timestamps, " << c.buffers_stopped << " buffers cut short\n";
    out << "==cupmon== Integrity: " << integrity.files << " files, " << integrity.chunks
        << " chunks, " << integrity.damaged_ranges << " damaged ranges ("
        << integrity.damaged_bytes << " bytes), " << integrity.missing_chunks
        << " chunks missing, " << integrity.undecodable_chunks << " undecodable chunks\n";
    out << "==cupmon== Profiling result:\n";
    out << Printf("%16s  %7s  %9s  %8s  %9s  %9s  %9s  %s\n", "Type", "Time(%)", "Time", "Calls",
                  "Avg", "Min", "Max", "Name");
    PrintTable(out, "GPU activities:", Named(b, gpu_));
    PrintTable(out, "API calls:", Named(b, api_));
  }

 private:
  static std::vector<std::pair<std::string, Stat>> Named(const TraceBuilder& b,
                                                         const std::vector<Stat>& table) {
    std::vector<std::pair<std::string, Stat>> rows;
    for (size_t id = 0; id < table.size(); ++id)
      if (table[id].calls) rows.emplace_back(std::string(b.NameOf(static_cast<uint32_t>(id))), table[id]);
    return rows;
  }
  static void PrintTable(std::ostream& out, const char* title,
                         std::vector<std::pair<std::string, Stat>> rows) {
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
    });
    uint64_t total = 0;
    for (const auto& r : rows) total += r.second.total;
    bool first = true;
    for (const auto& [name, s] : rows) {
      const double pct = total ? 100.0 * static_cast<double>(s.total) / static_cast<double>(total) : 0.0;
      const std::string avg = s.timed ? FormatDuration(static_cast<double>(s.total) / static_cast<double>(s.timed)) : "-";
      const std::string mn = s.timed ? FormatDuration(static_cast<double>(s.min)) : "-";
      const std::string mx = s.timed ? FormatDuration(static_cast<double>(s.max)) : "-";
      out << Printf("%16s  %6.2f%%  %9s  %8" PRIu64 "  %9s  %9s  %9s  %s\n", first ? title : "",
                    pct, FormatDuration(static_cast<double>(s.total)).c_str(), s.calls, avg.c_str(),
                    mn.c_str(), mx.c_str(), name.c_str());
      first = false;
    }
    if (rows.empty()) out << Printf("%16s  (none)\n", title);
  }

  std::vector<Stat> gpu_, api_;
};

// ---- gpu-trace, api-trace, kern-exec ----

std::string TimeOrDash(const Row& r, int64_t wall, int64_t origin, bool valid) {
  (void)r;
  return valid ? FormatRel(wall - origin) : "-";
}

class GpuTraceSink : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    builder_ = &b;
    out_ << "==cupmon== Recording " << Hex(r.id) << " pid " << r.header.pid()
         << (r.header.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "") << "\n";
    out_ << Printf("%12s  %10s  %15s  %15s  %5s  %8s  %8s  %9s  %12s  %6s  %7s  %6s  %8s  %s\n",
                   "Start", "Duration", "Grid Size", "Block Size", "Regs", "SSMem", "DSMem", "Size",
                   "Throughput", "Device", "Context", "Stream", "CorrId", "Name");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type != RowType::kApi; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    std::string grid = "-", block = "-", regs = "-", ss = "-", ds = "-", size = "-", tp = "-";
    if (r.type == RowType::kKernel) {
      grid = Printf("(%u %u %u)", r.grid[0], r.grid[1], r.grid[2]);
      block = Printf("(%u %u %u)", r.block[0], r.block[1], r.block[2]);
      regs = std::to_string(r.registers);
      ss = FormatBytes(r.static_smem);
      ds = FormatBytes(r.dynamic_smem);
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
                   static_cast<int>(r.name.size()), r.name.data());
  }
};

class ApiTraceSink : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    builder_ = &b;
    out_ << "==cupmon== Recording " << Hex(r.id) << " pid " << r.header.pid()
         << (r.header.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "") << "\n";
    out_ << Printf("%12s  %10s  %8s  %8s  %8s  %-28s  %s\n", "Start", "Duration", "Thread",
                   "Return", "CorrId", "Name", "GPU activity");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type == RowType::kApi; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    std::string gpu = "-";
    if (r.launched == 1 && !r.launched_name.empty()) gpu = std::string(r.launched_name);
    else if (r.launched) gpu = std::to_string(r.launched) + " activities" +
                              (r.launched_name.empty() ? "" : " (first: " + std::string(r.launched_name) + ")");
    out_ << Printf("%12s  %10s  %8u  %8u  %8u  %-28.*s  %s\n",
                   TimeOrDash(r, r.wall_start, origin, r.valid_time).c_str(),
                   r.valid_time ? FormatDuration(static_cast<double>(r.duration)).c_str() : "-", r.tid,
                   r.return_value, r.correlation, static_cast<int>(r.name.size()), r.name.data(),
                   gpu.c_str());
  }
};

class KernExecSink : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    builder_ = &b;
    out_ << "==cupmon== Recording " << Hex(r.id) << " pid " << r.header.pid()
         << (r.header.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "") << "\n";
    out_ << Printf("%12s  %10s  %10s  %12s  %10s  %10s  %8s  %-20s  %s\n", "API Start", "API Dur",
                   "Queue Dur", "Kernel Start", "Kernel Dur", "Total Dur", "CorrId", "API Name",
                   "Kernel Name");
  }

 protected:
  bool Wants(const Row& row) const override { return row.type == RowType::kKernel; }
  void Write(const Row& r) override {
    const int64_t origin = builder_->origin_wall();
    const bool api = r.has_api && r.api_valid_time;
    std::string queue = "-", total = "-";
    if (api && r.valid_time) {
      // Queue: from the end of the launch call to the kernel's start (0 when it started earlier).
      const int64_t q = static_cast<int64_t>(r.start) - static_cast<int64_t>(r.api_end);
      queue = FormatDuration(q > 0 ? static_cast<double>(q) : 0.0);
      const int64_t t = static_cast<int64_t>(r.end) - static_cast<int64_t>(r.api_start);
      total = t >= 0 ? FormatDuration(static_cast<double>(t)) : "-";
    }
    out_ << Printf("%12s  %10s  %10s  %12s  %10s  %10s  %8u  %-20.*s  %.*s\n",
                   api ? FormatRel(r.api_wall_start - origin).c_str() : "-",
                   api ? FormatDuration(static_cast<double>(r.api_end - r.api_start)).c_str() : "-",
                   queue.c_str(), TimeOrDash(r, r.wall_start, origin, r.valid_time).c_str(),
                   r.valid_time ? FormatDuration(static_cast<double>(r.duration)).c_str() : "-",
                   total.c_str(), r.correlation,
                   static_cast<int>(r.has_api ? r.api_name.size() : 1),
                   r.has_api ? r.api_name.data() : "-", static_cast<int>(r.name.size()), r.name.data());
  }
};

// ---- exports ----

class CsvSink : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    builder_ = &b;
    recording_ = Hex(r.id);
    if (!header_done_) {
      out_ << "recording,type,kind,start_ns,end_ns,duration_ns,device,context,stream,"
              "correlation_id,name,api_name,api_start_ns,api_end_ns,pid,tid,return_value,bytes,"
              "grid,block,registers,annotation\n";
      header_done_ = true;
    }
  }

 protected:
  void Write(const Row& r) override {
    const bool api = r.type == RowType::kApi;
    const bool kernel = r.type == RowType::kKernel;
    const bool api_time = r.has_api && r.api_valid_time;
    out_ << recording_ << ',' << RowTypeName(r.type) << ',' << r.kind << ',';
    if (r.valid_time) out_ << r.wall_start << ',' << r.wall_end << ',' << r.duration;
    else out_ << ",,";
    out_ << ',';
    if (!api) out_ << r.device << ',' << r.context << ',' << r.stream;
    else out_ << ",,";
    out_ << ',' << r.correlation << ',';
    out_.Csv(r.name) << ',';
    out_.Csv(r.api_name) << ',';
    if (api_time) out_ << r.api_wall_start << ',' << r.api_wall_end;
    else out_ << ',';
    out_ << ',' << (api ? r.pid : r.api_pid) << ',' << (api ? r.tid : r.api_tid) << ','
         << (api ? r.return_value : r.api_return) << ',' << r.bytes << ',';
    if (kernel) {
      out_ << r.grid[0] << 'x' << r.grid[1] << 'x' << r.grid[2] << ',' << r.block[0] << 'x'
           << r.block[1] << 'x' << r.block[2] << ',' << r.registers;
    } else {
      out_ << ",,";
    }
    out_ << ',';
    out_.Csv(r.annotation) << '\n';
  }
  std::string recording_;
  bool header_done_ = false;
};

class JsonlSink : public LimitedSink {
 public:
  using LimitedSink::LimitedSink;
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    builder_ = &b;
    recording_ = Hex(r.id);
  }

 protected:
  void Write(const Row& r) override {
    out_ << "{\"recording\":\"" << recording_ << "\",\"type\":\"" << RowTypeName(r.type)
         << "\",\"kind\":" << r.kind;
    if (r.valid_time) {
      out_ << ",\"start_ns\":" << r.wall_start << ",\"end_ns\":" << r.wall_end
           << ",\"duration_ns\":" << r.duration;
    } else {
      out_ << ",\"start_ns\":null,\"end_ns\":null,\"duration_ns\":null";
    }
    out_ << ",\"correlation_id\":" << r.correlation << ",\"name\":\"";
    out_.Json(r.name) << '"';
    if (r.type == RowType::kApi) {
      out_ << ",\"pid\":" << r.pid << ",\"tid\":" << r.tid << ",\"return_value\":" << r.return_value
           << ",\"launched\":" << r.launched;
    } else {
      out_ << ",\"device\":" << r.device << ",\"context\":" << r.context << ",\"stream\":"
           << r.stream;
      if (r.type == RowType::kKernel)
        out_ << ",\"grid\":[" << r.grid[0] << ',' << r.grid[1] << ',' << r.grid[2] << "],\"block\":["
             << r.block[0] << ',' << r.block[1] << ',' << r.block[2] << "],\"registers\":"
             << r.registers << ",\"static_shared_memory\":" << r.static_smem
             << ",\"dynamic_shared_memory\":" << r.dynamic_smem;
      else
        out_ << ",\"bytes\":" << r.bytes;
      if (r.has_api) {
        out_ << ",\"api\":{\"name\":\"";
        out_.Json(r.api_name) << "\",\"tid\":" << r.api_tid;
        if (r.api_valid_time)
          out_ << ",\"start_ns\":" << r.api_wall_start << ",\"end_ns\":" << r.api_wall_end;
        out_ << '}';
      }
    }
    if (!r.annotation.empty()) {
      out_ << ",\"annotation\":\"";
      out_.Json(r.annotation) << '"';
    }
    out_ << "}\n";
  }
  std::string recording_;
};

// Chrome Trace Event Format, streamed: events as rows arrive, track names and window/annotation
// slices at the end of each recording.
class ChromeSink : public LimitedSink {
 public:
  ChromeSink(std::ostream& out, std::optional<uint64_t> limit) : LimitedSink(out, limit) {
    out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  }
  void Begin(const TraceBuilder& b, const Recording& r, size_t index) override {
    builder_ = &b;
    rec_ = &r;
    index_ = index;
    base_ = r.header.process_start_unix_ns();
    gpu_tracks_.clear();
    cpu_threads_.clear();
    annotations_.clear();
  }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity&) override {
    if (!base_) base_ = b.origin_wall();
    const uint32_t pid = r.header.pid();
    std::string cmd;
    for (const auto& a : r.header.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
    Meta("process_name", pid, 0,
         "CPU pid " + std::to_string(pid) + (cmd.empty() ? "" : " " + cmd) +
             (r.header.synthetic() ? " (SYNTHETIC)" : ""));
    Meta("thread_name", pid, 0, "cupmon windows");
    Meta("thread_name", pid, 1, "annotations");
    for (uint32_t tid : cpu_threads_) Meta("thread_name", pid, tid, "thread " + std::to_string(tid));
    std::set<uint32_t> devices;
    for (const auto& [dev, stream] : gpu_tracks_) {
      devices.insert(dev);
      Meta("thread_name", GpuPid(dev), stream, "stream " + std::to_string(stream));
    }
    for (uint32_t dev : devices) {
      std::string name = "GPU " + std::to_string(dev);
      for (const auto& d : r.header.devices())
        if (d.id() == dev && !d.name().empty()) name += " " + d.name();
      Meta("process_name", GpuPid(dev), 0, name + " (pid " + std::to_string(pid) + ")");
    }
    for (const auto& [id, w] : b.windows()) {
      if (!w.begin) continue;
      const uint64_t end = w.end >= w.begin && w.end ? w.end : std::max(b.last_ts(), w.begin);
      Slice("window " + std::to_string(id), "window", pid, 0, b.clock().ToWall(w.begin),
            b.clock().ToWall(end) - b.clock().ToWall(w.begin),
            "\"source\":\"" + JsonEscape(w.source) + "\",\"note\":\"" + JsonEscape(w.note) + "\"");
    out_.EndRow();
    }
    for (const auto& [label, span] : annotations_)
      Slice(label, "annotation", pid, 1, span.first, span.second - span.first, "");
  }
  void Close() override {
    out_ << "\n]}\n";
    out_.Flush();
  }

 protected:
  void Write(const Row& r) override {
    if (!r.valid_time) return;  // cannot be placed on a timeline; counted in the summary
    if (!base_) base_ = builder_->origin_wall();
    if (r.type == RowType::kApi) {
      if (r.tid != last_tid_ || cpu_threads_.empty()) {
        cpu_threads_.insert(r.tid);
        last_tid_ = r.tid;
      }
      SliceHead(r.name, r.kind == 4 ? "cuda_driver" : "cuda_runtime", r.pid, r.tid, r.wall_start,
                static_cast<int64_t>(r.duration));
      out_ << "\"correlation\":" << r.correlation << ",\"return\":" << r.return_value << "}}";
      if (!r.annotation.empty()) Annotate(r);
      return;
    }
    const uint32_t gpid = GpuPid(r.device);
    if (r.device != last_track_.first || r.stream != last_track_.second || gpu_tracks_.empty()) {
      gpu_tracks_.emplace(r.device, r.stream);
      last_track_ = {r.device, r.stream};
    }
    SliceHead(r.name, RowTypeName(r.type), gpid, r.stream, r.wall_start,
              static_cast<int64_t>(r.duration));
    out_ << "\"correlation\":" << r.correlation << ",\"context\":" << r.context;
    if (r.type == RowType::kKernel)
      out_ << ",\"grid\":\"" << r.grid[0] << ',' << r.grid[1] << ',' << r.grid[2]
           << "\",\"block\":\"" << r.block[0] << ',' << r.block[1] << ',' << r.block[2]
           << "\",\"registers\":" << r.registers;
    else
      out_ << ",\"bytes\":" << r.bytes;
    if (!r.annotation.empty()) {
      out_ << ",\"annotation\":\"";
      out_.Json(r.annotation) << '"';
    }
    out_ << "}}";
    if (r.has_api && r.api_valid_time) {
      // A flow arrow from the launch call to this activity (one per activity: graphs fan out).
      const uint64_t id = ++flow_id_;
      Comma();
      out_ << "{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":" << id
           << ",\"pid\":" << r.api_pid << ",\"tid\":" << r.api_tid << ",\"ts\":";
      Us(r.api_wall_start);
      out_ << '}';
      Comma();
      out_ << "{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":" << id
           << ",\"pid\":" << gpid << ",\"tid\":" << r.stream << ",\"ts\":";
      Us(r.wall_start);
      out_ << '}';
    }
  }

 private:
  uint32_t GpuPid(uint32_t device) const {
    return 1'000'000u + static_cast<uint32_t>(index_) * 1000u + device;
  }
  // Microseconds since base_ with three decimals (exact ns).
  void Us(int64_t wall) {
    const int64_t rel = wall - base_;
    const uint64_t a = rel < 0 ? 0 - static_cast<uint64_t>(rel) : static_cast<uint64_t>(rel);
    if (rel < 0) out_ << '-';
    const uint64_t frac = a % 1000;
    out_ << a / 1000 << '.' << static_cast<char>('0' + frac / 100)
         << static_cast<char>('0' + frac / 10 % 10) << static_cast<char>('0' + frac % 10);
  }
  void Comma() {
    if (!first_) out_ << ",\n";
    first_ = false;
  }
  // Writes an "X" event up to and including `"args":{`; the caller writes the args and "}}".
  void SliceHead(std::string_view name, const char* cat, uint32_t pid, uint32_t tid, int64_t wall,
                 int64_t dur) {
    Comma();
    out_ << "{\"name\":\"";
    out_.Json(name) << "\",\"cat\":\"" << cat << "\",\"ph\":\"X\",\"pid\":" << pid
                    << ",\"tid\":" << tid << ",\"ts\":";
    Us(wall);
    out_ << ",\"dur\":";
    Us(base_ + dur);
    out_ << ",\"args\":{";
  }
  void Slice(const std::string& name, const char* cat, uint32_t pid, uint32_t tid, int64_t wall,
             int64_t dur, const std::string& args) {
    SliceHead(name, cat, pid, tid, wall, dur);
    out_ << args << "}}";
  }
  void Meta(const char* what, uint32_t pid, uint32_t tid, const std::string& name) {
    Comma();
    out_ << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"ts\":0,\"args\":{\"name\":\"";
    out_.Json(name) << "\"}}";
  }
  void Annotate(const Row& r) {
    auto [it, inserted] = annotations_.try_emplace(std::string(r.annotation), r.wall_start, r.wall_end);
    if (!inserted) {
      it->second.first = std::min(it->second.first, r.wall_start);
      it->second.second = std::max(it->second.second, r.wall_end);
    }
  }

  const Recording* rec_ = nullptr;
  size_t index_ = 0;
  int64_t base_ = 0;
  bool first_ = true;
  uint64_t flow_id_ = 0;
  std::set<std::pair<uint32_t, uint32_t>> gpu_tracks_;
  std::pair<uint32_t, uint32_t> last_track_{0, 0};
  std::set<uint32_t> cpu_threads_;
  uint32_t last_tid_ = 0;
  std::map<std::string, std::pair<int64_t, int64_t>> annotations_;
};

class NullSink : public RowSink {
 public:
  void OnRow(const Row&) override {}
};

void PrintInfo(std::ostream& out, const TraceBuilder& b, const Recording& r,
               const ReadIntegrity& integrity) {
  const auto& h = r.header;
  const auto& c = b.counts();
  out << "Recording " << Hex(r.id) << (h.synthetic() ? " (SYNTHETIC: CUPTI test double)" : "")
      << "\n  host " << h.host() << ", pid " << h.pid() << ", format " << h.format_major() << "."
      << h.format_minor() << ", CUPTI API " << h.cupti_api_version() << ", driver "
      << h.cuda_driver_version() << ", runtime " << h.cuda_runtime_version() << ", cupmon "
      << h.cupmon_version() << "\n  command:";
  for (const auto& a : h.command_line()) out << " " << a;
  out << "\n  files: " << r.files.size() << "\n";
  for (const auto& f : r.files) out << "    [" << f.file_index << "] " << f.path << " (" << f.bytes << " bytes)\n";
  out << "  chunks: " << integrity.chunks << ", raw buffers: " << c.raw_buffers
      << ", records: " << c.records << "\n  records by kind:";
  for (const auto& [k, n] : c.records_by_kind) out << " " << k << "=" << n;
  out << "\n  windows: " << b.windows().size() << "\n";
  for (const auto& [id, w] : b.windows())
    out << "    #" << id << " source " << w.source << ", "
        << (w.end && w.end >= w.begin ? FormatDuration(static_cast<double>(w.end - w.begin)) : "open/unknown end")
        << (w.note.empty() ? "" : ", " + w.note)
        << (w.begin_note.empty() ? "" : "; begin: " + w.begin_note) << "\n";
  out << "  stats: " << c.stats.buffers_completed() << " buffers, " << c.stats.dropped_records()
      << " dropped records, " << c.stats.pool_exhausted() << " unmet buffer requests, "
      << c.stats.zero_timestamp_records() << " zero-timestamp records, " << c.stats.write_errors()
      << " write errors, " << c.stats.chunks_lost() << " chunks lost, " << c.stats.files_deleted()
      << " files deleted by retention\n";
  out << "  integrity: " << integrity.damaged_ranges << " damaged ranges (" << integrity.damaged_bytes
      << " bytes), " << integrity.undecodable_chunks << " undecodable chunks, "
      << integrity.unknown_chunk_types << " unknown chunk types, " << integrity.sequence_gaps
      << " sequence gaps (" << integrity.missing_chunks << " chunks), " << integrity.missing_files
      << " missing files, " << integrity.files_without_footer << " files without footer\n";
  out << "  decoding: " << c.buffers_stopped << " buffers cut short, " << c.records_not_decoded
      << " records of kinds not decoded, " << c.unknown_timestamps << " unknown timestamps, "
      << c.unresolved_names << " unresolved names, " << c.duplicate_api_correlation
      << " duplicate API correlation ids, " << c.gpu_without_api << " GPU records without API record, "
      << c.calibration_samples << " calibration samples (" << c.calibration_non_monotonic
      << " non-monotonic)\n";
}

}  // namespace

std::string FormatDuration(double ns) {
  if (ns < 1000.0) {
    if (ns == std::floor(ns)) return Printf("%.0fns", ns);
    return Printf("%.4gns", ns);
  }
  const char* unit = "us";
  double v = ns / 1e3;
  if (v >= 1000.0) {
    v /= 1e3;
    unit = "ms";
    if (v >= 1000.0) {
      v /= 1e3;
      unit = "s";
    }
  }
  const int decimals = v < 10.0 ? 4 : v < 100.0 ? 3 : v < 1000.0 ? 2 : 1;
  return Printf("%.*f%s", decimals, v, unit);
}

bool ParseTimeArg(const std::string& text, std::optional<int64_t>* rel, std::optional<int64_t>* wall) {
  if (text.empty()) return false;
  if (text[0] == '@') {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str() + 1, &end, 10);
    if (*end) return false;
    *wall = v;
    return true;
  }
  if (text.find('T') != std::string::npos) {
    std::tm tm{};
    const char* p = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p) return false;
    int64_t frac_ns = 0;
    if (*p == '.') {
      ++p;
      int digits = 0;
      while (*p >= '0' && *p <= '9') {
        if (digits < 9) {
          frac_ns = frac_ns * 10 + (*p - '0');
          ++digits;
        }
        ++p;
      }
      while (digits++ < 9) frac_ns *= 10;
    }
    if (*p == 'Z') ++p;
    if (*p) return false;
    *wall = static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + frac_ns;
    return true;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return false;
  const std::string unit(end);
  double scale = 0;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s" || unit.empty()) scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  *rel = static_cast<int64_t>(v * scale);
  return true;
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) out += Printf("\\u%04x", c);
        else out += static_cast<char>(c);
    }
  }
  return out;
}

int RunReport(ReportKind kind, const std::string& path, const ReportOptions& options,
              std::ostream& out, std::ostream& err) {
  auto listing = ListRecordings(path);
  if (!listing) {
    err << "cupmon-decode: " << listing.error().message << "\n";
    return kExitUnusable;
  }
  bool warnings = false;
  for (const auto& f : listing->ignored) err << "cupmon-decode: ignored (not *.cupmon): " << f << "\n";
  for (const auto& f : listing->refused) {
    err << "cupmon-decode: refused: " << f << "\n";
    warnings = true;
  }
  std::vector<const Recording*> chosen;
  for (const auto& r : listing->recordings)
    if (!options.pid || r.header.pid() == *options.pid) chosen.push_back(&r);
  if (chosen.empty()) {
    err << "cupmon-decode: no usable recording in " << path
        << (options.pid ? " with pid " + std::to_string(*options.pid) : "") << "\n";
    return kExitUnusable;
  }

  std::unique_ptr<LimitedSink> trace;
  switch (kind) {
    case ReportKind::kGpuTrace: trace = std::make_unique<GpuTraceSink>(out, options.limit); break;
    case ReportKind::kApiTrace: trace = std::make_unique<ApiTraceSink>(out, options.limit); break;
    case ReportKind::kKernExec: trace = std::make_unique<KernExecSink>(out, options.limit); break;
    case ReportKind::kExport:
      if (options.format == ExportFormat::kCsv) trace = std::make_unique<CsvSink>(out, options.limit);
      else if (options.format == ExportFormat::kJsonl) trace = std::make_unique<JsonlSink>(out, options.limit);
      else trace = std::make_unique<ChromeSink>(out, options.limit);
      break;
    default: break;
  }
  for (size_t i = 0; i < chosen.size(); ++i) {
    const Recording& rec = *chosen[i];
    SummarySink summary;
    NullSink null;
    RowSink* sink = trace ? static_cast<RowSink*>(trace.get())
                    : kind == ReportKind::kSummary ? static_cast<RowSink*>(&summary)
                                                   : &null;
    ReorderOptions reorder;
    if (trace) reorder = ReorderOptions{options.reorder_rows, options.reorder_ns};
    TraceBuilder builder(options.filter, sink, options.horizon, reorder);
    if (trace) trace->Begin(builder, rec, i);
    ReadIntegrity integrity;
    if (options.progress) err << "cupmon-decode: reading recording " << Hex(rec.id) << " ("
                              << rec.files.size() << " files)\n";
    ReadRecording(rec, builder, &integrity);
    builder.Finish();
    if (trace) trace->End(builder, rec, integrity);
    if (kind == ReportKind::kSummary) {
      if (i) out << "\n";
      summary.Print(out, builder, rec, integrity);
    } else if (kind == ReportKind::kInfo) {
      if (i) out << "\n";
      PrintInfo(out, builder, rec, integrity);
    }
    const auto& c = builder.counts();
    for (const auto& m : integrity.messages) err << "cupmon-decode: warning: " << m << "\n";
    for (const auto& m : c.messages) err << "cupmon-decode: warning: " << m << "\n";
    if (c.unknown_timestamps)
      err << "cupmon-decode: warning: " << c.unknown_timestamps
          << " record(s) with zero or reversed timestamps shown as unknown\n";
    if (c.unresolved_names)
      err << "cupmon-decode: warning: " << c.unresolved_names
          << " kernel record(s) whose name pointer has no string entry\n";
    if (c.out_of_order)
      err << "cupmon-decode: note: " << c.out_of_order
          << " row(s) arrived later than the reorder bound allows and are out of start-time order\n";
    if (c.stats.dropped_records())
      err << "cupmon-decode: warning: CUPTI dropped " << c.stats.dropped_records() << " record(s)\n";
    warnings |= integrity.HasWarnings() || c.HasWarnings();
  }
  if (trace) trace->Close();
  out.flush();
  return warnings ? kExitWarnings : kExitClean;
}

}  // namespace cupmon::decoder
