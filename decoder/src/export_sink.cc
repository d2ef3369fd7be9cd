// `cupmon-decode export`'s sink (export_sink.h).
#include "export_sink.h"

namespace cupmon::decoder {

Outcome ExportSink::Conclude(Diagnostics& diagnostics) {
  switch (exporter_->Conclude(diagnostics)) {
    case ExportOutcome::kWritten: return Outcome::kClean;
    case ExportOutcome::kWarnings: return Outcome::kWarnings;
    case ExportOutcome::kIncomplete: return Outcome::kFailed;
    case ExportOutcome::kNotWritten: lost_ = true; return Outcome::kFailed;
  }
  return Outcome::kFailed;
}

Expected<std::unique_ptr<LimitedSink>> MakeExportSink(ExportFormat format,
                                                      const ExportSettings& settings,
                                                      std::optional<uint64_t> limit,
                                                      const std::vector<const Rank*>& ranks,
                                                      std::ostream& out) {
  auto exporter = MakeExporter(format, out, ranks, settings);
  if (!exporter) return unexpected(exporter.error());
  return std::make_unique<ExportSink>(out, limit, std::move(*exporter));
}

}  // namespace cupmon::decoder
