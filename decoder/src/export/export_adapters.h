// The exports' adapters to LimitedSink (report_sinks.h): each takes the row limit and the report
// driver's per-recording calls (reports.cc, RunReport) and hands them to its format's writer in
// this directory. Private to the decoder; used by the report driver only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "export/chrome_json_sink.h"
#include "export/csv_sink.h"
#include "export/jsonl_sink.h"
#include "export/kineto_sink.h"
#include "export/perfetto_sink.h"
#include "report_sinks.h"
#if CUPMON_HAVE_SQLITE
#include "export/sqlite_sink.h"
#endif

namespace cupmon::decoder {


// export --format csv: the row limit and the report's per-recording calls, handed to the CSV
// writer (export/csv_sink.cc).
class CsvExport : public LimitedSink {
 public:
  CsvExport(std::ostream& out, std::optional<uint64_t> limit)
      : LimitedSink(out, limit), csv_(out) {}
  void Begin(const TraceBuilder&, const Recording& r, size_t) override {
    csv_.Begin(r, rank_);
  }
  void Close() override { csv_.Close(); }

 protected:
  bool LimitEndsOutput() const override { return true; }  // rows only, after the header
  void Write(const Row& row) override { csv_.Write(row); }

 private:
  CsvSink csv_;
};

// export --format jsonl: likewise, handed to the JSON Lines writer (export/jsonl_sink.cc).
class JsonlExport : public LimitedSink {
 public:
  JsonlExport(std::ostream& out, std::optional<uint64_t> limit)
      : LimitedSink(out, limit), jsonl_(out) {}
  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  void Begin(const TraceBuilder&, const Recording& r, size_t) override {
    jsonl_.Begin(r, rank_);
  }
  void Close() override { jsonl_.Close(); }

 protected:
  bool LimitEndsOutput() const override { return true; }  // rows only
  void Write(const Row& row) override { jsonl_.Write(row); }

 private:
  JsonlSink jsonl_;
};

// export --format chrome-json: likewise, handed to the Chrome Trace Event Format writer
// (export/chrome_json_sink.cc).
class ChromeJsonExport : public LimitedSink {
 public:
  ChromeJsonExport(std::ostream& out, std::optional<uint64_t> limit)
      : LimitedSink(out, limit), chrome_(out) {}
  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  void SetCommonBase(int64_t base) { chrome_.SetCommonBase(base); }
  void Begin(const TraceBuilder& b, const Recording& r, size_t index) override {
    chrome_.Begin(b, r, index, rank_);
  }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity&) override {
    chrome_.End(b, r);
  }
  void Close() override { chrome_.Close(); }

 protected:
  void Write(const Row& row) override { chrome_.Write(row); }

 private:
  ChromeJsonSink chrome_;
};

// export --format perfetto: the row limit and the report's per-recording calls, handed to the
// Perfetto writer (export/perfetto_sink.cc), which writes its own binary output.
class PerfettoExport : public LimitedSink {
 public:
  PerfettoExport(std::ostream& out, std::optional<uint64_t> limit)
      : LimitedSink(out, limit), perfetto_(out) {}
  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  void Begin(const TraceBuilder& b, const Recording& r, size_t index) override {
    perfetto_.Begin(b, r, index, rank_);
  }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity&) override {
    perfetto_.End(b, r);
  }
  void Close() override { perfetto_.Close(); }

 protected:
  void Write(const Row& row) override { perfetto_.Write(row); }

 private:
  PerfettoSink perfetto_;
};

// export --format kineto: the row limit and the report's per-recording calls, handed to the
// Kineto writer (export/kineto_sink.cc), which writes one file per rank into a directory. Steps
// come from annotations or, per ReportOptions::kineto_steps, from the step detector
// (`cupmon-decode steps`), which KinetoSink runs per rank.
class KinetoExport : public LimitedSink {
 public:
  KinetoExport(std::ostream& out, std::optional<uint64_t> limit, const std::string& dir,
               const std::vector<const Rank*>& ranks, const KinetoOptions& options)
      : LimitedSink(out, limit), kineto_(dir, ranks, {}, options) {}
  bool WantsRanges() const override { return true; }
  void Begin(const TraceBuilder& b, const Recording& r, size_t index) override {
    kineto_.Begin(b, r, index);
  }
  RecordConsumer* RecordsWanted() override { return kineto_.RecordsWanted(); }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity&) override {
    kineto_.End(b, r);
  }
  void Close() override { kineto_.Close(); }
  int Conclude(std::ostream& err) override { return kineto_.Report(err); }
  bool OutputFailed() const override { return kineto_.Failed(); }

 protected:
  void Write(const Row& row) override { kineto_.Write(row); }

 private:
  KinetoSink kineto_;
};
#if CUPMON_HAVE_SQLITE
// export --format sqlite: the row limit and the report's per-recording calls, handed to the
// SQLite writer (export/sqlite_sink.cc), which writes its own file (`out` is not used).
class SqliteExport : public LimitedSink {
 public:
  SqliteExport(std::ostream& out, std::optional<uint64_t> limit, std::unique_ptr<SqliteSink> sink)
      : LimitedSink(out, limit), sqlite_(std::move(sink)) {}
  bool WantsSynchronization() const override { return true; }
  bool WantsRanges() const override { return true; }
  void Begin(const TraceBuilder& b, const Recording& r, size_t) override {
    sqlite_->Begin(b, r, rank_);
  }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity& i) override {
    sqlite_->End(b, r, i);
  }
  void Close() override { result_ = sqlite_->Close(); }
  bool OutputFailed() const override { return sqlite_->failed(); }
  SqliteSink& sink() { return *sqlite_; }
  const Expected<void>& result() const { return result_; }

 protected:
  void Write(const Row& row) override { sqlite_->Write(row); }

 private:
  std::unique_ptr<SqliteSink> sqlite_;
  Expected<void> result_;
};
#endif

}  // namespace cupmon::decoder
