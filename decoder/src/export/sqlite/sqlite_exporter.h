// `cupmon-decode export --format sqlite -o FILE`: the rows as an SQLite database in the Nsight
// Systems export schema, so that SQL written for `nsys export --type sqlite` runs on cupmon's
// history. The database itself is SqliteSink's (sqlite_sink.h: its writer threads, connections
// and table pages); this is the export around it. Private to the decoder.
#pragma once

#include <memory>
#include <ostream>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/rank_listing.h"
#include "export/exporter.h"

namespace cupmon::decoder {

class SqliteJobTable;
class SqliteSink;

// One database for all ranks: session time 0 (TARGET_INFO_SESSION_START_TIME) at the earliest
// process start, each rank's rows as SqliteSink writes them; with ExportSettings::job_table, the
// ranks' job analysis as CUPMON_JOB_STEP_RANK (SqliteJobTable). Conclude says why the database
// could not be written (nothing is left at the path then), or that it holds no activity rows.
class SqliteExporter final : public Exporter {
 public:
  // Opens the temporary database beside settings.output_path, so that an unwritable path fails
  // before anything is read. Fails too without a path, and in a build without SQLite.
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);

  // `job`: null for no job table.
  SqliteExporter(std::unique_ptr<SqliteSink> sink, std::unique_ptr<SqliteJobTable> job);
  ~SqliteExporter() override;

  bool WantsSynchronization() const override { return true; }
  bool WantsRanges() const override { return true; }
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  RecordConsumer* RecordsWanted() override;
  void Write(const Row& row) override;
  void End(const TraceBuilder& builder, const Recording& recording,
           const ReadIntegrity& integrity) override;
  void Close() override;
  ExportOutcome Conclude(Diagnostics& diagnostics) override;
  bool Failed() const override;

 private:
  std::unique_ptr<SqliteSink> sink_;
  std::unique_ptr<SqliteJobTable> job_;
  RecordConsumer* job_steps_ = nullptr;  // the recording's, from Begin to RecordsWanted
  Expected<void> result_;  // Close's
};

}  // namespace cupmon::decoder
