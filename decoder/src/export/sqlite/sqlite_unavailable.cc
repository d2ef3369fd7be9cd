// The SQLite export in a build without SQLite (sqlite_exporter.cc where SQLite is found): the
// format is listed, and asking for it says how to get it.
#include "cupmon/decoder/export_format.h"
#include "export/sqlite/sqlite_exporter.h"

namespace cupmon::decoder {

Expected<std::unique_ptr<Exporter>> SqliteExporter::Make(std::ostream&,
                                                         const std::vector<const Rank*>&,
                                                         const ExportSettings&) {
  return unexpected(Error{
      "--format sqlite is not available: this cupmon-decode was built without SQLite (install "
      "libsqlite3-dev, or run tools/install-deps, and rebuild)",
      0});
}

bool SqliteExportBuilt() { return false; }

}  // namespace cupmon::decoder
