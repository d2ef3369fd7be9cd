// The export formats by name: the one place that lists them (one line each, in registry.cc) and
// builds the exporter a command asks for. What the report driver includes of the exports.
// Private to the decoder (decoder/src).
#pragma once

#include <memory>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/rank_listing.h"
#include "export/exporter.h"

namespace cupmon::decoder {

// Builds a format's exporter over `ranks` (the recordings in output order, with their labels,
// rank numbers and process starts). Stream formats write to `out` (standard output or -o FILE);
// the others open their own files here, so that an unwritable path fails before anything is read
// (the error's message is what the user sees after "cupmon-decode: ").
using ExporterMaker = Expected<std::unique_ptr<Exporter>> (*)(
    std::ostream& out, const std::vector<const Rank*>& ranks, const ExportSettings& settings);

struct ExportFormatEntry {
  std::string_view name;  // --format's value
  ExportFormat format;
  ExporterMaker make;
  // What `export --help` says of it after its name, in parentheses (what it writes, what it
  // needs); empty: the name alone.
  std::string_view help;
};

// Every format, in the order `cupmon-decode export --help` lists them (ExportFormatNames,
// ExportFormatNamed and ExportFormatName in export_format.h read this list).
std::span<const ExportFormatEntry> ExportFormats();

// The exporter of `format` (ExporterMaker). A format this build lacks (sqlite without SQLite)
// fails with the message that says how to get it.
Expected<std::unique_ptr<Exporter>> MakeExporter(ExportFormat format, std::ostream& out,
                                                 const std::vector<const Rank*>& ranks,
                                                 const ExportSettings& settings);

}  // namespace cupmon::decoder
