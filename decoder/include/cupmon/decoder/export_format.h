// The formats of `cupmon-decode export` and the choices they take (ReportOptions in reports.h
// carries them; decoder/src/export/registry.h names and builds each format).
#pragma once

namespace cupmon::decoder {

// kPerfetto: Perfetto's protobuf trace format (.pftrace), binary. kKineto: one Kineto-shaped
// JSON trace per rank in ReportOptions::output_dir, for Holistic Trace Analysis. kSqlite: an
// SQLite database in the Nsight Systems export schema, written to ReportOptions::output_path
// (never to a stream).
enum class ExportFormat { kChromeJson, kCsv, kJsonl, kPerfetto, kKineto, kSqlite };
// export --format kineto: where its ProfilerStep#N (HTA's iterations) come from. kAuto: step
// annotations when the recording has any ("step 12"), else the steps `cupmon-decode steps`
// detects in the kernel stream; kDetected, kAnnotation: only that source; kNone: no steps.
enum class KinetoSteps { kAuto, kDetected, kAnnotation, kNone };

}  // namespace cupmon::decoder
