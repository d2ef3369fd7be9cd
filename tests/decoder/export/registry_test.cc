// The export registry (decoder/src/export/registry.h): every format has a name that resolves to it
// and an exporter, and an unknown name gets the message the command line prints for it.
#include "export/registry.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cupmon/decoder/export_format.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {

constexpr ExportFormat kEveryFormat[] = {ExportFormat::kChromeJson, ExportFormat::kCsv,
                                         ExportFormat::kJsonl,      ExportFormat::kPerfetto,
                                         ExportFormat::kKineto,     ExportFormat::kSqlite};

TEST(ExportRegistryTest, EveryFormatIsListedOnceAndItsNameResolvesToIt) {
  std::set<ExportFormat> listed;
  std::vector<std::string> names;
  for (const ExportFormatEntry& e : ExportFormats()) {
    EXPECT_TRUE(listed.insert(e.format).second) << e.name;
    EXPECT_NE(e.make, nullptr) << e.name;
    auto named = ExportFormatNamed(e.name);
    ASSERT_TRUE(named.has_value()) << e.name;
    EXPECT_EQ(*named, e.format);
    EXPECT_EQ(ExportFormatName(e.format), e.name);
    names.emplace_back(e.name);
  }
  for (ExportFormat f : kEveryFormat) EXPECT_TRUE(listed.count(f)) << static_cast<int>(f);
  // The names and their order of `cupmon-decode export --format`.
  EXPECT_EQ(names, (std::vector<std::string>{"chrome-json", "perfetto", "kineto", "sqlite", "csv",
                                             "jsonl"}));
  EXPECT_EQ(ExportFormatNames(), (std::vector<std::string_view>(names.begin(), names.end())));
}

TEST(ExportRegistryTest, TheHelpNamesEveryFormatInOrderWithWhatItNeeds) {
  const std::string help = ExportFormatsHelp();
  size_t at = 0;
  for (const ExportFormatEntry& e : ExportFormats()) {
    const size_t found = help.find(std::string(e.name), at);
    ASSERT_NE(found, std::string::npos) << e.name << " after " << at << " in: " << help;
    at = found + e.name.size();
    if (!e.help.empty()) {
      EXPECT_EQ(help.compare(at, e.help.size() + 3, " (" + std::string(e.help) + ")"), 0)
          << e.name << " in: " << help;
    }
  }
  EXPECT_TRUE(help.starts_with("chrome-json, perfetto (")) << help;
  EXPECT_TRUE(help.ends_with(", csv or jsonl")) << help;
}

TEST(ExportRegistryTest, AnUnknownNameGetsTheCommandLinesMessage) {
  auto named = ExportFormatNamed("parquet");
  ASSERT_FALSE(named.has_value());
  EXPECT_EQ(named.error().message,
            "--format: parquet not in {chrome-json,perfetto,kineto,sqlite,csv,jsonl}");
  EXPECT_FALSE(ExportFormatNamed("").has_value());
  EXPECT_FALSE(ExportFormatNamed("CSV").has_value());
}

TEST(ExportRegistryTest, EveryFormatMakesAnExporter) {
  testing::TempDir dir;
  ExportSettings settings;
  settings.output_dir = dir.path() + "/kineto";
  settings.output_path = dir.path() + "/out.sqlite";
  for (const ExportFormatEntry& e : ExportFormats()) {
    std::ostringstream out;
    auto exporter = MakeExporter(e.format, out, {}, settings);
    if (e.format == ExportFormat::kSqlite && !SqliteExportBuilt()) {
      ASSERT_FALSE(exporter.has_value());
      EXPECT_NE(exporter.error().message.find("--format sqlite is not available"),
                std::string::npos);
      continue;
    }
    ASSERT_TRUE(exporter.has_value()) << e.name << ": " << exporter.error().message;
    EXPECT_NE(*exporter, nullptr) << e.name;
    EXPECT_FALSE((*exporter)->Failed()) << e.name;
  }
  EXPECT_TRUE(std::filesystem::is_directory(settings.output_dir));
}

TEST(ExportRegistryTest, FormatsThatWriteFilesNeedTheirPath) {
  std::ostringstream out;
  auto kineto = MakeExporter(ExportFormat::kKineto, out, {}, ExportSettings{});
  ASSERT_FALSE(kineto.has_value());
  EXPECT_EQ(kineto.error().message, "--format kineto writes one file per rank: give -o DIR");
  auto sqlite = MakeExporter(ExportFormat::kSqlite, out, {}, ExportSettings{});
  ASSERT_FALSE(sqlite.has_value());
  if (SqliteExportBuilt()) {
    EXPECT_EQ(sqlite.error().message,
              "--format sqlite writes a database file, not a stream: give -o FILE");
  }
}

}  // namespace
}  // namespace cupmon::decoder
