// Which report a command writes (ReportKind) and in which form (ReportFormat): the choices the
// commands' options (commands.h) take. The exports' formats: export_format.h.
#pragma once

namespace cupmon::decoder {

// kTimeline writes ExportFormat kCsv or kJsonl. kReport: one self-contained HTML page
// (decoder/src/commands/html_report.cc). kJob: which rank made a step slow, and why
// (decoder/src/commands/job_command.cc).
enum class ReportKind { kSummary, kGpuTrace, kApiTrace, kKernExec, kExport, kInfo, kSteps,
                        kTimeline, kDiff, kReport, kJob };
// summary and info: the text report, one JSON document (schemas cupmon.summary/1 and
// cupmon.info/1, docs/DECODER.md), or CSV (summary's tables only; info has none).
enum class ReportFormat { kText, kJson, kCsv };

}  // namespace cupmon::decoder
