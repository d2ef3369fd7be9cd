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

Expected<std::unique_ptr<LimitedSink>> MakeExportSink(const ReportOptions& options,
                                                      const std::vector<const Rank*>& ranks,
                                                      std::ostream& out) {
  ExportSettings settings;
  settings.output_dir = options.output_dir;
  settings.output_path = options.output_path;
  settings.kineto_steps = options.kineto_steps;
  settings.kineto_synthetic_launches = options.kineto_synthetic_launches;
  auto exporter = MakeExporter(options.format, out, ranks, settings);
  if (!exporter) return unexpected(exporter.error());
  return std::make_unique<ExportSink>(out, options.limit, std::move(*exporter));
}

}  // namespace cupmon::decoder
