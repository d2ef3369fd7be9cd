// The SQLite export (sqlite_exporter.h), in builds with SQLite (sqlite_unavailable.cc otherwise).
#include "export/sqlite/sqlite_exporter.h"

#include <utility>

#include "cupmon/decoder/export_format.h"
#include "export/sqlite/sqlite_job_table.h"
#include "export/sqlite/sqlite_sink.h"

namespace cupmon::decoder {

Expected<std::unique_ptr<Exporter>> SqliteExporter::Make(std::ostream& /*out*/,
                                                         const std::vector<const Rank*>& ranks,
                                                         const ExportSettings& settings) {
  if (settings.output_path.empty())
    return unexpected(
        Error{"--format sqlite writes a database file, not a stream: give -o FILE", 0});
  auto sink = SqliteSink::Create(settings.output_path);
  if (!sink) return unexpected(sink.error());
  (*sink)->SetTimeBase(EarliestProcessStart(ranks));
  std::unique_ptr<SqliteJobTable> job;
  if (settings.job_table && ranks.size() > 1) job = std::make_unique<SqliteJobTable>();
  return std::make_unique<SqliteExporter>(std::move(*sink), std::move(job));
}

SqliteExporter::SqliteExporter(std::unique_ptr<SqliteSink> sink,
                               std::unique_ptr<SqliteJobTable> job)
    : sink_(std::move(sink)), job_(std::move(job)) {
  if (job_) sink_->SetLastWrite([job = job_.get()](sqlite3* db) { return job->Write(db); });
}

SqliteExporter::~SqliteExporter() = default;

void SqliteExporter::Begin(const TraceBuilder& builder, const Recording& recording, size_t,
                           const Rank* rank) {
  sink_->Begin(builder, recording, rank);
  if (job_ && rank) job_steps_ = job_->Begin(*rank);
}

RecordConsumer* SqliteExporter::RecordsWanted() {
  return std::exchange(job_steps_, nullptr);
}

void SqliteExporter::Write(const Row& row) {
  sink_->Write(row);
  if (job_) job_->Take(row);
}

void SqliteExporter::End(const TraceBuilder& builder, const Recording& recording,
                         const ReadIntegrity& integrity) {
  sink_->End(builder, recording, integrity);
  if (job_) job_->End();
}

void SqliteExporter::Close() { result_ = sink_->Close(); }

ExportOutcome SqliteExporter::Conclude(Diagnostics& diagnostics) {
  if (!result_) {
    diagnostics.Error(result_.error().message);
    return ExportOutcome::kNotWritten;
  }
  if (sink_->activity_rows() == 0)
    diagnostics.Note(sink_->path() +
                     " holds no activity rows: the recordings have none in the region asked for");
  return ExportOutcome::kWritten;
}

bool SqliteExporter::Failed() const { return sink_->failed(); }

bool SqliteExportBuilt() { return true; }

}  // namespace cupmon::decoder
