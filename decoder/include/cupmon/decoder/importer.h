// Importer: one input format the decoder reads (cupmon's files, PyTorch CUPTI monitor dumps).
// ListRecordings offers a path to every importer and ReadRecording forwards a recording to the
// importer that listed it, as Perfetto's trace processor forwards by trace type: no format knows
// another.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

class Importer {
 public:
  virtual ~Importer() = default;
  // Whether `file` is one of this format's files, by its name: a directory entry an importer
  // claims is not listed as ignored, and a file named on the command line goes to the first
  // importer that claims it (to the last importer, cupmon's, when none does).
  virtual bool Claims(const std::filesystem::path& file) const = 0;
  // Adds the recordings found to out->recordings and the files that cannot be read to
  // out->refused. `dir` is the directory listed (for a file named on the command line, the
  // directory holding it); `files` the regular files in it this importer claimed, in name order
  // (for a file named on the command line, that file alone).
  virtual void List(const std::string& dir, const std::vector<std::string>& files,
                    DirectoryListing* out) const = 0;
  // Streams every chunk of `recording`, one this importer listed (ReadRecording's contract).
  virtual void Read(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
                    const ReadProgressFn& progress) const = 0;
  // Names the process that wrote `recording`, for rank labels: "host:pid", or where it lies
  // when the format does not say.
  virtual std::string ProcessName(const Recording& recording) const = 0;
};

// Every importer, in the order ListRecordings offers a path to them; cupmon's comes last.
std::span<const Importer* const> Importers();

}  // namespace cupmon::decoder
