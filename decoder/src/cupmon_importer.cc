// The importer of cupmon's own files: listing by header, and the read of a recording's files in
// turn, whole or by a range plan (ranged_read.h).
#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>

#include "cupmon/decoder/importer.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "file_chunk_reader.h"
#include "hex_text.h"
#include "importers.h"
#include "ranged_read.h"

namespace cupmon::decoder {
namespace {

bool IsCupmonName(const std::filesystem::path& p) { return p.extension() == ".cupmon"; }

// Reads the first readable metadata chunk of a file (format 1.1 files have two copies), or says
// why the file is refused. nullopt: the file holds good chunks but every metadata copy is damaged;
// the caller may still match it to its recording by name.
Expected<std::optional<pb::RecordingHeader>> ReadFirstHeader(const std::string& path) {
  auto mapped = MappedFile::Open(path);
  if (!mapped) return cupmon::unexpected(mapped.error());
  const auto bytes = mapped->bytes();
  if (bytes.empty()) return MakeError(path + ": empty file (0 bytes)");
  // No magic at offset 0 is not enough to refuse: one damaged byte there would cost the whole
  // file. A file is not cupmon's when no good chunk (magic, both checksums) is found anywhere.
  const bool magic_at_start = bytes.size() >= 4 && GetLe32(bytes.data()) == kChunkMagic;
  ChunkScanner scanner(bytes);
  std::vector<Damage> damage;
  RawBufferDecoder codec;
  std::vector<uint8_t> scratch;
  bool any_good = false;
  while (auto c = scanner.Next(&damage)) {
    any_good = true;
    if (c->header.type != static_cast<uint8_t>(ChunkType::kMetadata)) continue;
    pb::RecordingHeader header;
    std::string why;
    if (ParseChunkPayload(codec, *c, &scratch, &header, &why)) return header;
  }
  if (scanner.future_major())
    return MakeError(path + ": written in cupmon format major version " +
                     std::to_string(scanner.future_major()) + " at offset " +
                     std::to_string(scanner.position()) + "; this decoder reads major version " +
                     std::to_string(kFormatMajor) + " (use a newer cupmon-decode)");
  if (!any_good) {
    if (!magic_at_start) return MakeError(path + ": not a cupmon file (no chunk magic at offset 0)");
    return MakeError(path + ": no readable recording header (metadata chunk)");
  }
  return std::optional<pb::RecordingHeader>();
}

// Splits ".../<prefix>-<seq>.cupmon" (seq: at least 6 decimal digits, as the writer names files)
// into ".../<prefix>" and seq. False for any other name.
bool SplitFileName(const std::string& path, std::string* prefix, uint32_t* seq) {
  const std::filesystem::path p(path);
  if (p.extension() != ".cupmon") return false;
  const std::string stem = p.stem().string();
  const size_t dash = stem.rfind('-');
  if (dash == std::string::npos || stem.size() - dash - 1 < 6 || stem.size() - dash - 1 > 9)
    return false;
  uint32_t v = 0;
  for (size_t i = dash + 1; i < stem.size(); ++i) {
    if (stem[i] < '0' || stem[i] > '9') return false;
    v = v * 10 + static_cast<uint32_t>(stem[i] - '0');
  }
  *prefix = (p.parent_path() / stem.substr(0, dash)).string();
  *seq = v;
  return true;
}

// cupmon's files: *.cupmon in a directory, or any file named on the command line.
class CupmonImporter final : public Importer {
 public:
  bool Claims(const std::filesystem::path& file) const override { return IsCupmonName(file); }
  void List(const std::string& dir, const std::vector<std::string>& files,
            DirectoryListing* out) const override;
  void Read(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
            const ReadProgressFn& progress) const override;
  std::string ProcessName(const Recording& recording) const override {
    return recording.header.host() + ":" + std::to_string(recording.header.pid());
  }
};

}  // namespace

const Importer& CupmonFiles() {
  static const CupmonImporter importer;
  return importer;
}

void CupmonImporter::List(const std::string& /*dir*/, const std::vector<std::string>& candidates,
                          DirectoryListing* listing) const {
  namespace fs = std::filesystem;
  DirectoryListing& out = *listing;
  std::map<uint64_t, Recording> by_id;
  std::map<uint64_t, std::string> header_path;  // recording id -> file its header came from
  std::vector<std::string> headerless;
  auto size_of = [](const std::string& file) {
    std::error_code size_ec;
    const uint64_t bytes = fs::file_size(file, size_ec);
    return size_ec ? uint64_t{0} : bytes;
  };
  for (const std::string& file : candidates) {
    auto header = ReadFirstHeader(file);
    if (!header) {
      out.refused.push_back(header.error().message);
      continue;
    }
    if (!header->has_value()) {
      headerless.push_back(file);
      continue;
    }
    const pb::RecordingHeader& h = **header;
    Recording& r = by_id[h.recording_id()];
    r.id = h.recording_id();
    r.files.push_back(RecordingFile{file, size_of(file), h.file_index(), {}});
    if (r.files.size() == 1 || h.file_index() < r.header.file_index()) {
      r.header = h;
      header_path[r.id] = file;
    }
  }
  // A file whose every metadata copy is damaged belongs to the recording whose other files share
  // its name prefix (the monitor's prefix holds start time, host and pid). Exactly one such
  // recording, and its index not taken, or the file is refused: a header is never guessed.
  for (const std::string& file : headerless) {
    std::string prefix, other_prefix;
    uint32_t seq = 0, other_seq = 0;
    std::vector<uint64_t> owners;
    if (SplitFileName(file, &prefix, &seq)) {
      for (const auto& [id, r] : by_id) {
        const bool same = std::any_of(r.files.begin(), r.files.end(), [&](const RecordingFile& f) {
          return SplitFileName(f.path, &other_prefix, &other_seq) && other_prefix == prefix;
        });
        if (same) owners.push_back(id);
      }
    }
    const bool taken =
        owners.size() == 1 &&
        std::any_of(by_id[owners[0]].files.begin(), by_id[owners[0]].files.end(),
                    [&](const RecordingFile& f) { return f.file_index == seq; });
    if (owners.size() != 1 || taken) {
      out.refused.push_back(file + ": no readable recording header (every metadata chunk " +
                            "damaged), and " +
                            (owners.empty()  ? std::string("no other file of its recording")
                             : taken         ? std::string("its file index is taken")
                                             : std::string("several recordings")) +
                            " to take one from");
      continue;
    }
    Recording& r = by_id[owners[0]];
    r.files.push_back(RecordingFile{file, size_of(file), seq, header_path[r.id]});
  }
  for (auto& [id, r] : by_id) {
    std::stable_sort(r.files.begin(), r.files.end(),
                     [](const RecordingFile& a, const RecordingFile& b) {
                       return a.file_index < b.file_index;
                     });
    r.importer = this;
    out.recordings.push_back(std::move(r));
  }
}

void CupmonImporter::Read(const Recording& recording, ChunkVisitor& visitor,
                          ReadIntegrity* integrity, const ReadProgressFn& progress) const {
  SequenceTracker sequences;
  // A ranged read skips chunks: their sequence numbers are not checked.
  std::unique_ptr<RangePlan> plan;
  if (const RangedVisitor* ranged = visitor.Ranged()) plan = RangePlan::Make(recording, *ranged);
  uint64_t total = 0, done_before = 0;  // the listing's sizes; a growing file may pass them
  for (const RecordingFile& file : recording.files) total += file.bytes;
  bool first = true;
  uint32_t expected_index = 0;
  for (size_t k = 0; k < recording.files.size(); ++k) {
    const RecordingFile& file = recording.files[k];
    if (first && file.file_index > 0) {
      integrity->earlier_files_gone += file.file_index;
      integrity->Note("recording " + Hex(recording.id) + ": starts at file index " +
                      std::to_string(file.file_index) +
                      " (earlier files are gone, usually removed by retention)");
    } else if (!first && file.file_index > expected_index) {
      sequences.Reset();
      integrity->missing_files += file.file_index - expected_index;
      integrity->Note("recording " + Hex(recording.id) + ": file index(es) " +
                      std::to_string(expected_index) + ".." + std::to_string(file.file_index - 1) +
                      " missing before " + file.path);
    }
    first = false;
    expected_index = file.file_index + 1;
    // An indexed file is read through the plan's mapping, whose pages the plan touched already.
    std::optional<MappedFile> opened;
    MappedFile* mapped = plan ? plan->mapped(k) : nullptr;
    if (mapped) {
      ++integrity->files;
      visitor.OnFile(file);
    } else {
      opened = OpenRecordingFile(file, visitor, integrity);
      if (!opened) continue;
      mapped = &*opened;
    }
    if (!file.header_from.empty()) {
      // Every file of a recording carries the same header but for file_index and creation time.
      ++integrity->borrowed_headers;
      integrity->Note(file.path + ": no readable recording header (every metadata chunk damaged); "
                      "decoded with the header of " + file.header_from +
                      " (same recording by file name)");
      pb::RecordingHeader header = recording.header;
      header.set_file_index(file.file_index);
      header.clear_file_created_unix_ns();
      visitor.OnHeader(header, ChunkOrigin{&file.path, 0, 0});
    }
    // Pages already read are given back every few MiB, so resident memory stays flat however
    // large the file (a mapping's touched pages count as the process's own).
    constexpr uint64_t kReleaseEvery = 8 << 20;
    uint64_t released = 0;
    const std::function<void(uint64_t)> consumed = [&](uint64_t at) {
      if (at >= released + kReleaseEvery) {
        mapped->ReleaseBefore(at);
        released = at;
      }
      if (progress) progress(done_before + at, std::max(total, done_before + at));
    };
    if (!opened)
      plan->ReadFile(k, mapped->bytes(), visitor, integrity, consumed);
    else
      ReadFileBytes(mapped->bytes(), file, visitor, integrity, plan ? nullptr : &sequences,
                    consumed);
    done_before += mapped->bytes().size();
    if (integrity->stopped) return;  // what follows was not read, not lost
  }
  if (!plan) FinishSequences(sequences, integrity);
}

}  // namespace cupmon::decoder
