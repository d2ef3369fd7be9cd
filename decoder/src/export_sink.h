// `cupmon-decode export`: the report driver's sink (LimitedSink: --limit, the rank of merged
// reports) over the exporter of the format asked for (export/registry.h). Private to the
// decoder; the rows driver (commands/rows_report.cc) holds it by its base.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/reports.h"
#include "export/registry.h"
#include "report_sinks.h"

namespace cupmon::decoder {

// Hands the rows within --limit and the driver's per-recording calls to one Exporter, and turns
// what became of its output into the command's outcome. Single-threaded, as the driver.
class ExportSink final : public LimitedSink {
 public:
  ExportSink(std::ostream& out, std::optional<uint64_t> limit, std::unique_ptr<Exporter> exporter)
      : LimitedSink(out, limit), exporter_(std::move(exporter)) {}
  bool WantsSynchronization() const override { return exporter_->WantsSynchronization(); }
  bool WantsRanges() const override { return exporter_->WantsRanges(); }
  bool WantsMemory() const override { return exporter_->WantsMemory(); }
  void Begin(const TraceBuilder& b, const Recording& r, size_t index) override {
    exporter_->Begin(b, r, index, rank_);
  }
  RecordConsumer* RecordsWanted() override { return exporter_->RecordsWanted(); }
  void End(const TraceBuilder& b, const Recording& r, const ReadIntegrity& i) override {
    exporter_->End(b, r, i);
  }
  void Close() override { exporter_->Close(); }
  Outcome Conclude(Diagnostics& diagnostics) override;
  bool OutputFailed() const override { return exporter_->Failed(); }
  bool OutputLost() const override { return lost_; }

 protected:
  bool LimitEndsOutput() const override { return exporter_->LimitEndsOutput(); }
  void Write(const Row& row) override { exporter_->Write(row); }

 private:
  std::unique_ptr<Exporter> exporter_;
  bool lost_ = false;
};

// The sink of `export --format format` over `ranks` (MakeExporter), `limit` rows at most: its
// output is opened here, so that an unwritable path fails before anything is read.
Expected<std::unique_ptr<LimitedSink>> MakeExportSink(ExportFormat format,
                                                      const ExportSettings& settings,
                                                      std::optional<uint64_t> limit,
                                                      const std::vector<const Rank*>& ranks,
                                                      std::ostream& out);

}  // namespace cupmon::decoder
