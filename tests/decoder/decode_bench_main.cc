// Times cupmon-decode's stages on a recording (make one with cupmon-make-sample DIR N):
//   cupmon-decode-bench DIR [STAGE]   (STAGE: only that report stage, e.g. steps)
// 1. reader: chunk scan, CRC, zstd and the columnar inverse (format/, the floor under the decoder);
// 2. reader + record walk (kinds and sizes only);
// 3. summary, steps and 4. chrome-json/csv exports and gpu-trace through RunReport into a discarding
// stream (chrome-json also per trace event, counted in an untimed second pass), and export
// perfetto, export kineto into a temporary directory (events counted afterwards, untimed), and
// sqlite into a temporary file where built with SQLite; 5. the Perfetto, Kineto and SQLite writers
// alone (export/perfetto/, export/kineto/ and export/sqlite/sqlite_sink.cc) on rows
// captured beforehand (up to 2M; the sink's own cost without reading or decoding).
// Prints records (or events) per second of wall and of process CPU time: CPU time is the figure to
// compare on a machine shared with other work.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <streambuf>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/kineto/kineto_exporter.h"
#include "export/perfetto/perfetto_exporter.h"
#if CUPMON_HAVE_SQLITE
#include <unistd.h>

#include "export/sqlite/sqlite_sink.h"
#endif

namespace {

using namespace cupmon::decoder;
using cupmon::testing::ReportOptions;  // the options of every command (report_run.h)
using cupmon::testing::RunReport;  // messages rendered as cupmon-decode writes them

double Now(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A stream that counts and drops what it is given (the figures leave out disk writes). With
// count_lines it also counts newlines: chrome-json writes one trace event per line.
class CountingBuf : public std::streambuf {
 public:
  explicit CountingBuf(bool count_lines = false) : count_lines_(count_lines) {}
  uint64_t bytes = 0, lines = 0;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    bytes += static_cast<uint64_t>(n);
    if (count_lines_) lines += static_cast<uint64_t>(std::count(s, s + n, '\n'));
    return n;
  }
  int_type overflow(int_type c) override {
    ++bytes;
    if (count_lines_ && c == '\n') ++lines;
    return c;
  }

 private:
  bool count_lines_;
};

class WalkVisitor : public ChunkVisitor {
 public:
  explicit WalkVisitor(bool walk) : walk_(walk) {}
  void OnHeader(const cupmon::pb::RecordingHeader& h, const ChunkOrigin&) override {
    cupmon::RecordSizeTable sizes;
    for (const auto& rs : h.record_sizes()) sizes.Set(rs.kind(), rs.size());
    if (!decoder_) decoder_ = std::make_unique<RecordDecoder>(sizes, h.cupti_api_version());
  }
  void OnRawBuffer(const cupmon::RawBufferPrefix&, std::span<const uint8_t> buffer,
                   const ChunkOrigin&) override {
    bytes += buffer.size();
    if (!walk_ || !decoder_) return;
    const auto r = decoder_->Walk(buffer, [&](const RecordLayout&, const FieldReader& f,
                                               const uint8_t* rec) {
      checksum += f.Get(rec, Field::kStart);
    });
    this->records += r.records;
  }
  uint64_t bytes = 0, records = 0, checksum = 0;

 private:
  bool walk_;
  std::unique_ptr<RecordDecoder> decoder_;
};

void Report(const char* what, uint64_t n, const char* unit, double wall, double cpu) {
  std::printf("%-28s %10llu %-7s wall %7.3f s  cpu %7.3f s  %8.2f M%s/s (cpu)  %8.2f M%s/s (wall)\n",
              what, static_cast<unsigned long long>(n), unit, wall, cpu,
              static_cast<double>(n) / cpu / 1e6, unit, static_cast<double>(n) / wall / 1e6, unit);
}

// Keeps copies of the first `cap` rows (their names point into the builder, which outlives them).
class CaptureSink : public RowSink {
 public:
  explicit CaptureSink(size_t cap, bool sync = false) : cap_(cap), sync_(sync) {}
  bool WantsSynchronization() const override { return sync_; }
  void OnRow(const Row& row) override {
    if (rows.size() < cap_) rows.push_back(row);
  }
  std::vector<Row> rows;

 private:
  size_t cap_;
  bool sync_;
};

// Up to 2M rows of one recording, decoded and kept (untimed) for the writer benchmarks, with the
// builder their names point into.
struct CapturedRows {
  explicit CapturedRows(const Recording& rec)
      : capture(2'000'000), builder(TraceFilter{}, &capture, 1 << 16, ReorderOptions{1 << 16, 0}) {
    ReadIntegrity integrity;
    ReadRecording(rec, builder, &integrity);
    builder.Finish();
  }
  CaptureSink capture;
  TraceBuilder builder;
};

// The Perfetto writer alone: rows of the first recording, decoded and captured first (untimed),
// then written `repeat` times into a discarding stream.
void BenchPerfettoWriter(const Recording& rec) {
  const CapturedRows captured(rec);
  const TraceBuilder& builder = captured.builder;
  const CaptureSink& capture = captured.capture;
  constexpr int kRepeat = 5;
  CountingBuf buf;
  std::ostream out(&buf);
  uint64_t slices = 0, packets = 0;
  const double w0 = Now(CLOCK_MONOTONIC), c0 = Now(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < kRepeat; ++i) {
    PerfettoExporter sink(out);
    sink.Begin(builder, rec, 0, nullptr);
    for (const Row& r : capture.rows) sink.Write(r);
    sink.End(builder, rec, ReadIntegrity{});
    sink.Close();
    slices += sink.slices();
    packets += sink.packets();
  }
  const double w = Now(CLOCK_MONOTONIC) - w0, c = Now(CLOCK_PROCESS_CPUTIME_ID) - c0;
  std::printf("perfetto writer alone: %zu rows of recording %llx, written %d times\n",
              capture.rows.size(), static_cast<unsigned long long>(rec.id), kRepeat);
  Report("  rows (slices)", slices, "rows", w, c);
  Report("  track events (begin+end)", 2 * slices, "events", w, c);
  Report("  packets", packets, "packets", w, c);
  std::printf("  (%llu output bytes per pass)\n",
              static_cast<unsigned long long>(buf.bytes / kRepeat));
}

// The Kineto writer alone: as BenchPerfettoWriter, one rank's trace per pass.
void BenchKinetoWriter(const Recording& rec) {
  const CapturedRows captured(rec);
  const TraceBuilder& builder = captured.builder;
  const CaptureSink& capture = captured.capture;
  constexpr int kRepeat = 5;
  CountingBuf buf;
  std::ostream out(&buf);
  uint64_t rows = 0, events = 0;
  KinetoRank rank;
  rank.label = "rank 0";
  rank.file_name = "rank0.json";
  rank.base = rec.header.process_start_unix_ns();
  const double w0 = Now(CLOCK_MONOTONIC), c0 = Now(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < kRepeat; ++i) {
    KinetoTraceWriter writer(out);
    writer.Begin(builder, rec, rank, nullptr);
    for (const Row& r : capture.rows) writer.Write(r);
    writer.End(builder, rec);
    rows += writer.rows();
    events += writer.events();
  }
  const double w = Now(CLOCK_MONOTONIC) - w0, c = Now(CLOCK_PROCESS_CPUTIME_ID) - c0;
  std::printf("kineto writer alone: %zu rows of recording %llx, written %d times\n",
              capture.rows.size(), static_cast<unsigned long long>(rec.id), kRepeat);
  Report("  rows", rows, "rows", w, c);
  Report("  trace events", events, "events", w, c);
  std::printf("  (%llu output bytes per pass)\n",
              static_cast<unsigned long long>(buf.bytes / kRepeat));
}

// Trace events in the files of a kineto export: one per line, lines that open an object.
uint64_t KinetoEvents(const std::string& dir) {
  uint64_t events = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream f(e.path());
    std::string line;
    while (std::getline(f, line)) events += line.rfind("{\"", 0) == 0;
  }
  return events;
}

#if CUPMON_HAVE_SQLITE
std::string TempDatabase() {
  char dir[] = "/tmp/cupmon-bench-XXXXXX";
  if (!mkdtemp(dir)) return "cupmon-bench.sqlite";
  return std::string(dir) + "/bench.sqlite";
}

void RemoveDatabase(const std::string& path) {
  unlink(path.c_str());
  rmdir(path.substr(0, path.rfind('/')).c_str());
}

// The SQLite writer alone: rows of the first recording, decoded and captured first (untimed),
// then written `repeat` times into a database (a temporary file), indexes and commit included;
// with two connections and their writer threads (as the export runs), with one connection and
// its writer thread, and with this thread inserting.
void BenchSqliteSink(const Recording& rec) {
  CaptureSink capture(2'000'000, /*sync=*/true);
  TraceBuilder builder(TraceFilter{}, &capture, 1 << 16, ReorderOptions{1 << 16, 0});
  ReadIntegrity integrity;
  ReadRecording(rec, builder, &integrity);
  builder.Finish();
  constexpr int kRepeat = 3;
  const std::pair<const char*, SqliteSink::Options> configs[] = {
      {"two connections, writer threads", {true, true, {}}},
      {"one connection, writer thread", {true, false, {}}},
      {"one thread", {false, false, {}}}};
  for (const auto& [label, options] : configs) {
    const std::string path = TempDatabase();
    uint64_t rows = 0;
    const double w0 = Now(CLOCK_MONOTONIC), c0 = Now(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < kRepeat; ++i) {
      auto sink = SqliteSink::Create(path, options);
      if (!sink) {
        std::fprintf(stderr, "%s\n", sink.error().message.c_str());
        return;
      }
      (*sink)->Begin(builder, rec, nullptr);
      for (const Row& r : capture.rows) (*sink)->Write(r);
      (*sink)->End(builder, rec, integrity);
      if (!(*sink)->Close()) return;
      rows += (*sink)->activity_rows();
    }
    const double w = Now(CLOCK_MONOTONIC) - w0, c = Now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    std::printf("sqlite writer alone (%s): %zu rows of recording %llx, written %d times\n",
                label, capture.rows.size(),
                static_cast<unsigned long long>(rec.id), kRepeat);
    Report("  rows", rows, "rows", w, c);
    RemoveDatabase(path);
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DIR [STAGE]   (STAGE: only the report stages named so; sqlite-writer: only the SQLite writer alone)\n", argv[0]);
    return 2;
  }
  const std::string only = argc == 3 ? argv[2] : "";
  const std::string dir = argv[1];
  auto listing = ListRecordings(dir);
  if (!listing || listing->recordings.empty()) {
    std::fprintf(stderr, "no recording in %s\n", dir.c_str());
    return 2;
  }
  uint64_t records = 0;
  for (bool walk : {false, true}) {
    WalkVisitor v(walk);
    ReadIntegrity integrity;
    const double w0 = Now(CLOCK_MONOTONIC), c0 = Now(CLOCK_PROCESS_CPUTIME_ID);
    for (const auto& r : listing->recordings) ReadRecording(r, v, &integrity);
    const double w = Now(CLOCK_MONOTONIC) - w0, c = Now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (walk) {
      records = v.records;
      Report("reader + record walk", v.records, "records", w, c);
    } else {
      std::printf("reader: %llu raw bytes decompressed\n", static_cast<unsigned long long>(v.bytes));
      Report("reader only (format floor)", v.bytes / 100, "x100B", w, c);
    }
  }
  struct Run {
    const char* name;
    ReportKind kind;
    ExportFormat format;
  };
  for (const Run& run : {Run{"summary", ReportKind::kSummary, ExportFormat::kChromeJson},
                         Run{"steps", ReportKind::kSteps, ExportFormat::kChromeJson},
                         Run{"export chrome-json", ReportKind::kExport, ExportFormat::kChromeJson},
                         Run{"export csv", ReportKind::kExport, ExportFormat::kCsv},
                         Run{"export perfetto", ReportKind::kExport, ExportFormat::kPerfetto},
                         Run{"export kineto", ReportKind::kExport, ExportFormat::kKineto},
#if CUPMON_HAVE_SQLITE
                         Run{"export sqlite", ReportKind::kExport, ExportFormat::kSqlite},
#endif
                         Run{"gpu-trace", ReportKind::kGpuTrace, ExportFormat::kChromeJson}}) {
    if (!only.empty() && only != run.name) continue;
    CountingBuf buf;
    std::ostream out(&buf), err(&buf);
    ReportOptions opt;
    opt.format = run.format;
    // kineto writes files: into a fresh directory (in memory where /dev/shm exists).
    const std::string shm = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    if (run.format == ExportFormat::kKineto) {
      opt.output_dir = shm + "/cupmon-decode-bench-kineto-" + std::to_string(getpid());
      std::filesystem::remove_all(opt.output_dir);
    }
#if CUPMON_HAVE_SQLITE
    if (run.format == ExportFormat::kSqlite) opt.output_path = TempDatabase();
#endif
    const double w0 = Now(CLOCK_MONOTONIC), c0 = Now(CLOCK_PROCESS_CPUTIME_ID);
    RunReport(run.kind, dir, opt, out, err);
    const double w = Now(CLOCK_MONOTONIC) - w0, c = Now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    Report(run.name, records, "records", w, c);
    std::printf("  (%llu output bytes)\n", static_cast<unsigned long long>(buf.bytes));
#if CUPMON_HAVE_SQLITE
    if (!opt.output_path.empty()) RemoveDatabase(opt.output_path);
#endif
    if (run.kind == ReportKind::kExport && run.format == ExportFormat::kChromeJson) {
      // Events (slices, flow starts and ends, metadata): counted in a second, untimed pass so
      // that the count does not weigh on the timing above. Two lines are the JSON's frame.
      CountingBuf lines(/*count_lines=*/true), dropped;
      std::ostream counted(&lines), warnings(&dropped);
      RunReport(run.kind, dir, opt, counted, warnings);
      const uint64_t events = lines.lines >= 2 ? lines.lines - 2 : 0;
      Report("  as trace events", events, "events", w, c);
    }
    if (run.format == ExportFormat::kKineto) {
      Report("  as trace events", KinetoEvents(opt.output_dir), "events", w, c);
      std::filesystem::remove_all(opt.output_dir);
    }
  }
  for (const auto& r : listing->recordings)
    if ((only.empty() || only == "sqlite-writer") && !r.files.empty() &&
        r.files.front().bytes > 4096) {  // skip empty launcher recordings
      if (only.empty()) {
        BenchPerfettoWriter(r);
        BenchKinetoWriter(r);
      }
#if CUPMON_HAVE_SQLITE
      BenchSqliteSink(r);
#endif
      break;
    }
  return 0;
}
