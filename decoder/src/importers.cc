// The reader over the importers: ListRecordings offers a path to each importer, ReadRecording
// forwards a recording to the one that listed it.
#include <algorithm>
#include <array>
#include <filesystem>
#include <system_error>

#include "cupmon/decoder/importer.h"
#include "importers.h"

namespace cupmon::decoder {

std::span<const Importer* const> Importers() {
  // A file named on the command line that no importer claims is cupmon's: it stays last.
  static const std::array<const Importer*, 2> kImporters = {&TorchMonitorDumps(), &CupmonFiles()};
  return kImporters;
}

Expected<DirectoryListing> ListRecordings(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::span<const Importer* const> importers = Importers();
  std::vector<std::vector<std::string>> claimed(importers.size());
  std::vector<bool> offered(importers.size(), false);
  DirectoryListing out;
  std::string dir;
  if (fs::is_regular_file(path, ec)) {
    size_t i = 0;
    while (i + 1 < importers.size() && !importers[i]->Claims(path)) ++i;
    claimed[i].push_back(path);
    offered[i] = true;
    const std::string parent = fs::path(path).parent_path().string();
    dir = parent.empty() ? "." : parent;
  } else if (fs::is_directory(path, ec)) {
    dir = path;
    offered.assign(importers.size(), true);
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      auto by = std::find_if(importers.begin(), importers.end(),
                             [&](const Importer* im) { return im->Claims(it->path()); });
      if (by != importers.end())
        claimed[static_cast<size_t>(by - importers.begin())].push_back(it->path().string());
      else
        out.ignored.push_back(it->path().string());
    }
    if (ec) return MakeError(path + ": cannot list directory: " + ec.message());
  } else {
    return MakeError(path + ": no such file or directory");
  }
  std::sort(out.ignored.begin(), out.ignored.end());
  for (size_t i = 0; i < importers.size(); ++i) {
    if (!offered[i]) continue;
    std::sort(claimed[i].begin(), claimed[i].end());
    importers[i]->List(dir, claimed[i], &out);
  }
  std::stable_sort(out.recordings.begin(), out.recordings.end(),
                   [](const Recording& a, const Recording& b) {
                     return a.header.process_start_unix_ns() < b.header.process_start_unix_ns();
                   });
  return out;
}

void ReadRecording(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
                   const ReadProgressFn& progress) {
  const Importer& importer = recording.importer ? *recording.importer : CupmonFiles();
  importer.Read(recording, visitor, integrity, progress);
}

}  // namespace cupmon::decoder
