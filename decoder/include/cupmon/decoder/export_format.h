// The formats of `cupmon-decode export`, their names, and the choices they take (ExportSettings;
// decoder/src/export/registry.cc lists and builds each format).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"

namespace cupmon::decoder {

// kPerfetto: Perfetto's protobuf trace format (.pftrace), binary. kKineto: one Kineto-shaped
// JSON trace per rank in ExportSettings::output_dir, for Holistic Trace Analysis. kSqlite: an
// SQLite database in the Nsight Systems export schema, written to ExportSettings::output_path
// (never to a stream).
enum class ExportFormat { kChromeJson, kCsv, kJsonl, kPerfetto, kKineto, kSqlite };
// export --format kineto: where its ProfilerStep#N (HTA's iterations) come from. kAuto: step
// annotations when the recording has any ("step 12"), else the steps `cupmon-decode steps`
// detects in the kernel stream; kDetected, kAnnotation: only that source; kNone: no steps.
enum class KinetoSteps { kAuto, kDetected, kAnnotation, kNone };

// The choices of the export command that some format takes (the others ignore them).
struct ExportSettings {
  // kineto: the directory of the per-rank files (created when missing).
  std::string output_dir;
  // sqlite: the database file (written beside it, then renamed onto it).
  std::string output_path;
  // kineto: where ProfilerStep#N come from, and whether GPU activities without a launch record
  // get a marked zero-length CPU event that HTA correlates with them (KinetoOptions).
  KinetoSteps kineto_steps = KinetoSteps::kAuto;
  bool kineto_synthetic_launches = false;
  // sqlite and perfetto: the ranks' job analysis (`cupmon-decode job`'s, default step options)
  // when they have collectives: sqlite's table CUPMON_JOB_STEP_RANK, perfetto's "job" track. The export command sets it for several
  // ranks read whole (no filter, no --limit, no --mangled): the analysis needs every GPU
  // activity, with its demangled name.
  bool job_table = false;
};

// The names `export --format` takes ("chrome-json", "perfetto", ...), in the order its help lists
// them.
std::vector<std::string_view> ExportFormatNames();
// `export --format`'s help: every name in that order, with what the format writes or needs in
// parentheses ("chrome-json, perfetto (binary protobuf ...), ... csv or jsonl").
std::string ExportFormatsHelp();
// The format called `name`; an unknown name gives the message the command line prints for it.
Expected<ExportFormat> ExportFormatNamed(std::string_view name);
// --format's value for `format`.
std::string_view ExportFormatName(ExportFormat format);

// Whether this build has the SQLite export (SQLite was found when it was built).
bool SqliteExportBuilt();

}  // namespace cupmon::decoder
