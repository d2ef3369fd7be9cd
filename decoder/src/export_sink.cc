// `cupmon-decode export`'s sink (export_sink.h).
#include "export_sink.h"

namespace cupmon::decoder {

int ExportSink::Conclude(std::ostream& err) {
  switch (exporter_->Conclude(err)) {
    case ExportOutcome::kWritten: return kExitClean;
    case ExportOutcome::kWarnings: return kExitWarnings;
    case ExportOutcome::kIncomplete: return kExitUnusable;
    case ExportOutcome::kNotWritten: lost_ = true; return kExitUnusable;
  }
  return kExitUnusable;
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
