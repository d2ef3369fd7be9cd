// The importer of cupmon's own files (listing by header, chunk streaming), and the file mapping,
// sequence tracking and decode threads both importers use.
#include "cupmon/decoder/recording_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "chunk_decode_thread.h"
#include "file_chunk_reader.h"
#include "cupmon/decoder/importer.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "hex_text.h"
#include "importers.h"
#include "ranged_read.h"

namespace cupmon::decoder {
namespace {

// Decompresses a message chunk's payload into `scratch` and parses it into `msg`.
bool ParsePayload(RawBufferDecoder& codec, const ScannedChunk& c, std::vector<uint8_t>* scratch,
                  google::protobuf::MessageLite* msg, std::string* why) {
  auto r = codec.Decode(c.header.encoding, c.payload, c.header.uncompressed_length, scratch);
  if (!r) {
    *why = r.error().message;
    return false;
  }
  if (!msg->ParseFromArray(scratch->data(), static_cast<int>(scratch->size()))) {
    *why = "protobuf payload does not parse";
    return false;
  }
  return true;
}

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
    if (ParsePayload(codec, *c, &scratch, &header, &why)) return header;
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

}  // namespace

bool ParseChunkPayload(RawBufferDecoder& codec, const ScannedChunk& c, std::vector<uint8_t>* scratch,
                       google::protobuf::MessageLite* msg, std::string* why) {
  return ParsePayload(codec, c, scratch, msg, why);
}

void ReadIntegrity::Note(std::string message) {
  if (messages.size() < kMaxMessages) messages.push_back(std::move(message));
}

Expected<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(path + ": cannot open: " + std::strerror(errno), errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return MakeError(path + ": cannot stat: " + std::strerror(e), e);
  }
  MappedFile m;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return MakeError(path + ": cannot map: " + std::strerror(e), e);
    }
    m.data_ = static_cast<const uint8_t*>(p);
    m.size_ = static_cast<size_t>(st.st_size);
    ::madvise(p, m.size_, MADV_SEQUENTIAL);
  }
  ::close(fd);  // the mapping stays valid
  return m;
}

void MappedFile::ReleaseBefore(uint64_t offset) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min<uint64_t>(offset, size_) / page * page;
  // A private read-only mapping: MADV_DONTNEED only drops our page references (nothing was
  // written), and a later touch reads the file again. Failure just keeps the pages.
  if (data_ && end) ::madvise(const_cast<uint8_t*>(data_), end, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

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

namespace {

int DecodeThreadsFromEnvironment() {
  const char* v = std::getenv("CUPMON_DECODE_THREADS");
  if (v && std::strcmp(v, "1") == 0) return 1;
  if (v && std::strcmp(v, "2") == 0) return 2;
  return std::thread::hardware_concurrency() >= 2 ? 2 : 1;
}

std::atomic<int> g_decode_threads{0};  // 0: not yet chosen

}  // namespace

void SetDecodeThreads(int threads) { g_decode_threads.store(threads >= 2 ? 2 : 1); }

int DecodeThreads() {
  int n = g_decode_threads.load();
  if (n == 0) {
    n = DecodeThreadsFromEnvironment();
    g_decode_threads.store(n);
  }
  return n;
}

FileChunkReader::FileChunkReader(std::span<const uint8_t> bytes, const RecordingFile& file,
                                 ChunkVisitor& visitor, ReadIntegrity* integrity,
                                 SequenceTracker* sequences,
                                 const std::function<void(uint64_t consumed)>& consumed)
    : bytes_(bytes),
      file_(file),
      visitor_(visitor),
      integrity_(integrity),
      sequences_(sequences),
      consumed_(consumed) {}

void FileChunkReader::ReportDamage(const std::vector<Damage>& damage) {
  for (const Damage& d : damage) {
    ++integrity_->damaged_ranges;
    integrity_->damaged_bytes += d.skipped_bytes;
    integrity_->Note(file_.path + " at offset " + std::to_string(d.offset) + ": " + d.what +
                     " (" + std::to_string(d.skipped_bytes) + " bytes skipped" +
                     (d.kind == Damage::Kind::kTruncatedTail ? ", truncated tail)" : ")"));
  }
}

bool FileChunkReader::ReadPiece(uint64_t start, uint64_t end, bool background) {
  // Scan, checksums and decompression run ahead on a second thread when there is one; everything
  // that counts, notes or calls the visitor stays here, in file order, so the messages and counts
  // are those of the single-threaded read.
  // A visitor that reads only some words of each record gets a partial columnar inverse.
  const bool partial = visitor_.RecordWordsRead(&keep_);
  ChunkDecodeThread chunks(bytes_.subspan(0, end), background, partial ? &keep_ : nullptr, start);
  current_ = &chunks;
  for (;;) {
    const DecodedChunk& d = chunks.Next();
    ReportDamage(d.damage);
    if (d.end) {
      if (d.future_major) {
        ++integrity_->unreadable_files;
        integrity_->Note(file_.path + " at offset " + std::to_string(d.position) +
                         ": format major version " + std::to_string(d.future_major) +
                         " is newer than this decoder; rest of file not read");
        ended_ = true;
      }
      break;
    }
    if (!Handle(d)) {
      current_ = nullptr;
      return false;
    }
  }
  current_ = nullptr;
  return !ended_;
}

bool FileChunkReader::ReadOne(uint64_t start, uint64_t end) {
  ChunkScanner scanner(bytes_.subspan(0, end), start);
  one_.damage.clear();
  auto c = scanner.Next(&one_.damage);
  ReportDamage(one_.damage);
  one_.damage.clear();
  if (!c) return true;  // damage where the index said a chunk starts: reported above
  one_.chunk = *c;
  one_.position = scanner.position();
  return Handle(one_);
}

bool FileChunkReader::Handle(const DecodedChunk& d) {
  const ScannedChunk* c = &d.chunk;
  ++integrity_->chunks;
  const ChunkOrigin at{&file_.path, c->offset, c->header.sequence};
  if (sequences_ && !sequences_->Add(c->header.sequence)) {
    integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) + ": chunk sequence " +
                     std::to_string(c->header.sequence) + " seen twice");
  }
  std::string why;
  auto undecodable = [&] {
    ++integrity_->undecodable_chunks;
    integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) + ": " +
                     ChunkTypeName(c->header.type) + " chunk cannot be decoded: " + why);
  };
  switch (static_cast<ChunkType>(c->header.type)) {
    case ChunkType::kMetadata:
      if (ParsePayload(codec_, *c, &scratch_, &header_, &why)) {
        visitor_.OnHeader(header_, at);
        if (visitor_.RecordWordsRead(&keep_) && current_) current_->SetColumnSelection(keep_);
      } else {
        undecodable();
      }
      break;
    case ChunkType::kRawBuffer:
      if (d.short_prefix) {
        why = "payload shorter than the raw-buffer prefix";
        undecodable();
      } else if (!d.decode_error.empty()) {
        why = d.decode_error;
        undecodable();
      } else {
        if (d.packed) visitor_.OnPackedRawBuffer(d.prefix, d.records, d.packed_with, at);
        else visitor_.OnRawBuffer(d.prefix, d.records, at);
      }
      break;
    case ChunkType::kStringTable:
      if (ParsePayload(codec_, *c, &scratch_, &strings_, &why)) visitor_.OnStrings(strings_);
      else undecodable();
      break;
    case ChunkType::kWindowMarker:
      if (ParsePayload(codec_, *c, &scratch_, &marker_, &why)) visitor_.OnWindowMarker(marker_);
      else undecodable();
      break;
    case ChunkType::kStats:
      if (ParsePayload(codec_, *c, &scratch_, &stats_, &why)) visitor_.OnStats(stats_);
      else undecodable();
      break;
    case ChunkType::kCalibration:
      if (ParsePayload(codec_, *c, &scratch_, &calibration_, &why))
        visitor_.OnCalibration(calibration_);
      else
        undecodable();
      break;
    case ChunkType::kFooter:
      if (ParsePayload(codec_, *c, &scratch_, &foot_, &why)) {
        footer_ = true;
        visitor_.OnFooter(foot_);
      } else {
        undecodable();
      }
      break;
    default:
      // FORMAT.md: a reader skips chunk types it does not know, and counts them.
      ++integrity_->unknown_chunk_types;
      integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) +
                       ": unknown chunk type " + std::to_string(c->header.type) + " skipped");
      break;
  }
  if (consumed_) consumed_(d.position);
  if (visitor_.StopReading()) {
    integrity_->stopped = true;
    return false;  // the rest of the file is not read, so its footer is not missing
  }
  return true;
}

void ReadFileBytes(std::span<const uint8_t> bytes, const RecordingFile& file, ChunkVisitor& visitor,
                   ReadIntegrity* integrity, SequenceTracker* sequences,
                   const std::function<void(uint64_t consumed)>& consumed) {
  FileChunkReader reader(bytes, file, visitor, integrity, sequences, consumed);
  if (!reader.ReadPiece(0, bytes.size(), DecodeThreads() >= 2) && integrity->stopped) return;
  if (!reader.footer()) ++integrity->files_without_footer;
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
    auto mapped = OpenRecordingFile(file, visitor, integrity);
    if (!mapped) continue;
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
    if (plan && plan->indexed(k))
      plan->ReadFile(k, mapped->bytes(), visitor, integrity, consumed);
    else
      ReadFileBytes(mapped->bytes(), file, visitor, integrity, plan ? nullptr : &sequences,
                    consumed);
    done_before += mapped->bytes().size();
    if (integrity->stopped) return;  // what follows was not read, not lost
  }
  if (!plan) FinishSequences(sequences, integrity);
}

std::optional<MappedFile> OpenRecordingFile(const RecordingFile& file, ChunkVisitor& visitor,
                                            ReadIntegrity* integrity) {
  ++integrity->files;
  visitor.OnFile(file);
  auto mapped = MappedFile::Open(file.path);
  if (mapped) return std::move(*mapped);
  ++integrity->unreadable_files;
  integrity->Note(mapped.error().message);
  return std::nullopt;
}

bool SequenceTracker::Add(uint64_t seq) {
  if (last_ == UINT64_MAX) {
    last_ = seq;
    return true;
  }
  if (seq > last_) {
    if (seq > last_ + 1) {
      if (holes_.size() < kMaxHoles) {
        holes_.emplace_back(last_ + 1, seq - 1);
      } else {
        ++dropped_holes_;
        dropped_missing_ += seq - last_ - 1;
      }
    }
    last_ = seq;
    return true;
  }
  // Out of order: fill the hole that holds it, if any.
  auto it = std::upper_bound(holes_.begin(), holes_.end(), seq,
                             [](uint64_t s, const auto& h) { return s < h.first; });
  if (it == holes_.begin()) return false;
  --it;
  if (seq > it->second) return false;
  if (it->first == it->second) {
    holes_.erase(it);
  } else if (seq == it->first) {
    ++it->first;
  } else if (seq == it->second) {
    --it->second;
  } else {
    const auto tail = std::make_pair(seq + 1, it->second);
    it->second = seq - 1;
    holes_.insert(it + 1, tail);
  }
  return true;
}

uint64_t SequenceTracker::missing_chunks() const {
  uint64_t n = dropped_missing_;
  for (const auto& h : holes_) n += h.second - h.first + 1;
  return n;
}

void FinishSequences(const SequenceTracker& sequences, ReadIntegrity* integrity) {
  if (sequences.holes() == 0) return;
  integrity->sequence_gaps += sequences.holes();
  integrity->missing_chunks += sequences.missing_chunks();
  integrity->Note(std::to_string(sequences.missing_chunks()) + " chunk(s) missing in " +
                  std::to_string(sequences.holes()) + " sequence gap(s)");
}

}  // namespace cupmon::decoder
