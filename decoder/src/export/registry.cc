// The export formats by name (registry.h). A new format is a folder beside this file with one
// Exporter class, its header included here and one line in kFormats.
#include "export/registry.h"

#include <iterator>
#include <string>

#include "cupmon/base/check.h"
#include "export/chrome/chrome_json_exporter.h"
#include "export/csv/csv_exporter.h"
#include "export/jsonl/jsonl_exporter.h"
#include "export/kineto/kineto_exporter.h"
#include "export/perfetto/perfetto_exporter.h"
#include "export/sqlite/sqlite_exporter.h"

namespace cupmon::decoder {
namespace {

constexpr ExportFormatEntry kFormats[] = {
    {"chrome-json", ExportFormat::kChromeJson, &ChromeJsonExporter::Make, ""},
    {"perfetto", ExportFormat::kPerfetto, &PerfettoExporter::Make,
     "binary protobuf .pftrace: needs -o or a redirected stdout"},
    {"kineto", ExportFormat::kKineto, &KinetoExporter::Make,
     "-o DIR: one Kineto JSON trace per rank, DIR/rank0.json..., for Holistic Trace Analysis"},
    {"sqlite", ExportFormat::kSqlite, &SqliteExporter::Make,
     "a database in the Nsight Systems export schema: needs -o FILE, which it replaces"},
    {"csv", ExportFormat::kCsv, &CsvExporter::Make, ""},
    {"jsonl", ExportFormat::kJsonl, &JsonlExporter::Make, ""},
};

const ExportFormatEntry* Find(ExportFormat format) {
  for (const ExportFormatEntry& e : kFormats)
    if (e.format == format) return &e;
  return nullptr;
}

}  // namespace

std::span<const ExportFormatEntry> ExportFormats() { return kFormats; }

std::vector<std::string_view> ExportFormatNames() {
  std::vector<std::string_view> names;
  for (const ExportFormatEntry& e : kFormats) names.push_back(e.name);
  return names;
}

Expected<ExportFormat> ExportFormatNamed(std::string_view name) {
  std::string names;
  for (const ExportFormatEntry& e : kFormats) {
    if (e.name == name) return e.format;
    names += (names.empty() ? "" : ",") + std::string(e.name);
  }
  // As the command line's check of --format words it.
  return unexpected(Error{"--format: " + std::string(name) + " not in {" + names + "}", 0});
}

std::string ExportFormatsHelp() {
  std::string help;
  const size_t n = std::size(kFormats);
  for (size_t i = 0; i < n; ++i) {
    const ExportFormatEntry& e = kFormats[i];
    help += i == 0 ? "" : i + 1 == n ? " or " : ", ";
    help += e.name;
    if (!e.help.empty()) help += " (" + std::string(e.help) + ")";
  }
  return help;
}

std::string_view ExportFormatName(ExportFormat format) {
  const ExportFormatEntry* e = Find(format);
  CUPMON_CHECK(e != nullptr);
  return e->name;
}

Expected<std::unique_ptr<Exporter>> MakeExporter(ExportFormat format, std::ostream& out,
                                                 const std::vector<const Rank*>& ranks,
                                                 const ExportSettings& settings) {
  const ExportFormatEntry* e = Find(format);
  CUPMON_CHECK(e != nullptr);
  return e->make(out, ranks, settings);
}

}  // namespace cupmon::decoder
