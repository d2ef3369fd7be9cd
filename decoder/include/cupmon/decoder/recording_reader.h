// Reads a directory of cupmon files: groups files by recording, orders them, and streams their
// chunks (one memory-mapped file at a time) to a visitor, reporting damage with file and offset.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/raw_codec.h"

namespace cupmon::decoder {

struct RecordingFile {
  std::string path;
  uint64_t bytes = 0;
  uint32_t file_index = 0;
  // Empty when the file has a readable metadata chunk of its own. Otherwise every copy of it is
  // damaged: the file was matched to its recording by name (<prefix>-<seq>.cupmon, file_index
  // from <seq>) and is decoded with the header of this other file of the recording.
  std::string header_from;
};

class Importer;  // importer.h

// All files of one monitored process, in file_index order.
struct Recording {
  uint64_t id = 0;
  pb::RecordingHeader header;  // from the lowest-indexed file
  std::vector<RecordingFile> files;
  // The format that listed it and reads it (importer.h); null: cupmon's.
  const Importer* importer = nullptr;
  // Other writers' recordings: one line saying what was read and what it lacks ("" for cupmon's).
  std::string source_note;
};

struct DirectoryListing {
  std::vector<Recording> recordings;  // ordered by process start, then id
  std::vector<std::string> ignored;   // files not named *.cupmon (not an error)
  std::vector<std::string> refused;   // "path: why" for *.cupmon files that cannot be read at all
};

// Lists `path`, a directory or a single file, through every importer (importer.h): each lists
// the files it claims. A directory holding a PyTorch CUPTI monitor dump (cupti_monitor_meta.bin,
// cupti_monitor_raw_buffers.bin) lists it as one more recording, and `path` may name either of
// those files (torch_monitor_dump.h); any other file named is read as cupmon's. Recordings come
// ordered by process start. Of cupmon's files, each is opened and its first readable metadata
// chunk read. Files that are empty, hold no good chunk at all (not cupmon's), or come
// from a future major format version are refused with a message. A file whose every metadata
// copy is damaged is kept when another file of the same name prefix (`<prefix>-<seq>.cupmon`)
// has a header: it joins that recording (RecordingFile::header_from); otherwise it is refused.
Expected<DirectoryListing> ListRecordings(const std::string& path);

// A read-only mapping of a whole file. Empty files map to an empty span.
class MappedFile {
 public:
  static Expected<MappedFile> Open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  ~MappedFile();
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Drops the mapped pages of [0, offset) from this process's memory (they are read again from
  // the file if touched again): a streaming reader calls it for what it has read, so resident
  // memory does not grow with the file. Rounded down to whole pages.
  void ReleaseBefore(uint64_t offset);

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Where a chunk came from, for messages.
struct ChunkOrigin {
  const std::string* path = nullptr;
  uint64_t offset = 0;
  uint64_t sequence = 0;
};

// The records a visitor needs when they are those of one time range (TraceFilter's bounds, which a
// row must meet): a ranged read may leave out the chunks the files' indexes show cannot hold them.
struct ReadRange {
  std::optional<uint32_t> window;
  std::optional<int64_t> from_wall, to_wall;  // absolute wall-clock ns
  std::optional<int64_t> from_rel, to_rel;    // ns after TimeOrigin's wall-clock time
};

// What a ranged read asks of the visitor it feeds (ChunkVisitor::Ranged), on the reading thread.
// The read keeps the visitor's output that of a whole read (FORMAT.md, "Chunk index"): it reads
// every chunk that is not a raw buffer, in stream order, and of the raw buffers one contiguous
// run from a margin before the first that can hold the range to JoinHorizon() joined records
// after the last.
class RangedVisitor {
 public:
  virtual ~RangedVisitor() = default;
  virtual ReadRange Range() const = 0;
  // CUPTI time of the first valid GPU or API start read (relative times count from it); 0 before.
  virtual uint64_t TimeOrigin() const = 0;
  // Records that entered the join so far, and how many later ones a record waits for its partner
  // before it is emitted.
  virtual uint64_t JoinedRecords() const = 0;
  virtual uint64_t JoinHorizon() const = 0;
};

// Receives a recording's chunks in stream order. Payloads are already decompressed and parsed; the
// spans are valid only during the call.
class ChunkVisitor {
 public:
  virtual ~ChunkVisitor() = default;
  virtual void OnFile(const RecordingFile& /*file*/) {}
  virtual void OnHeader(const pb::RecordingHeader& /*header*/, const ChunkOrigin& /*at*/) {}
  virtual void OnRawBuffer(const RawBufferPrefix& /*prefix*/, std::span<const uint8_t> /*records*/,
                           const ChunkOrigin& /*at*/) {}
  virtual void OnStrings(const pb::StringTable& /*table*/) {}
  virtual void OnWindowMarker(const pb::WindowMarker& /*marker*/) {}
  virtual void OnCalibration(const pb::Calibration& /*calibration*/) {}
  virtual void OnStats(const pb::Stats& /*stats*/) {}
  virtual void OnFooter(const pb::Footer& /*footer*/) {}
  // The words of each raw-buffer record this visitor reads (ColumnSelection, raw_codec.h), for a
  // partial columnar inverse; false (the default) while it may read any byte. Asked on the
  // reading thread at the start of each file and after each OnHeader. Once it has answered true,
  // the words it named must cover everything it reads for the rest of the read: chunks decoded
  // ahead keep the words they were decoded with.
  virtual bool RecordWordsRead(ColumnSelection* /*keep*/) const { return false; }
  // A raw buffer decoded as packed records (a selection from RecordWordsRead with `pack` set,
  // ColumnSelection::pack), with that selection; walk it with RecordDecoder::Packed(packed_with).
  // Only a visitor that asks for packing gets this call; a buffer the selection did not apply to
  // (another kind, another size) still comes whole, through OnRawBuffer.
  virtual void OnPackedRawBuffer(const RawBufferPrefix& /*prefix*/, std::span<const uint8_t> /*records*/,
                                 const ColumnSelection& /*packed_with*/, const ChunkOrigin& /*at*/) {}
  // True once the visitor wants nothing more (an export whose output can no longer be written):
  // the read ends after the chunk it was asked after (ReadIntegrity::stopped), and what was not
  // read is not counted as missing. Asked on the reading thread after every chunk.
  virtual bool StopReading() const { return false; }
  // Non-null when the visitor needs only the records of a time range (RangedVisitor): cupmon's
  // importer then reads through the files' chunk indexes where they have one. Asked once, before
  // the read.
  virtual const RangedVisitor* Ranged() const { return nullptr; }
};

// What went wrong while reading, counted; `messages` keeps the first kMaxMessages descriptions.
struct ReadIntegrity {
  static constexpr size_t kMaxMessages = 50;
  uint64_t files = 0;
  uint64_t chunks = 0;
  uint64_t damaged_ranges = 0;    // corrupt or truncated byte ranges (skipped)
  uint64_t damaged_bytes = 0;
  uint64_t undecodable_chunks = 0;  // valid checksum, but decompression or parsing failed
  uint64_t unknown_chunk_types = 0;
  uint64_t sequence_gaps = 0;     // places where chunk sequence numbers jump
  uint64_t missing_chunks = 0;    // sum of the jumps
  uint64_t missing_files = 0;     // file indexes absent between present ones
  uint64_t earlier_files_gone = 0;  // first present index > 0 (usually retention)
  uint64_t unreadable_files = 0;
  uint64_t files_without_footer = 0;  // cut files (crash, or the file still being written)
  uint64_t borrowed_headers = 0;  // files decoded with another file's header (their own damaged)
  bool stopped = false;  // the visitor asked to stop (ChunkVisitor::StopReading) before the end
  // A ranged read (ChunkVisitor::Ranged): the chunks the files' indexes showed cannot hold the
  // range, and their bytes, not read. Non-zero: the counts, damage and chunk sequence numbers
  // speak of what was read only (sequence numbers are not checked).
  uint64_t chunks_not_read = 0;
  uint64_t bytes_not_read = 0;
  std::vector<std::string> messages;

  // Damage a user should be warned about (exit code 1).
  bool HasWarnings() const {
    return damaged_ranges || undecodable_chunks || unknown_chunk_types || sequence_gaps ||
           missing_files || unreadable_files || borrowed_headers;
  }
  void Note(std::string message);
};

// Streams every chunk of `recording` to `visitor`, file by file, in order. Memory use is one file
// mapping plus one decompressed chunk. Never fails as a whole: problems go to `integrity`.
// A file with no readable header of its own (RecordingFile::header_from) gets the recording's
// header through OnHeader before its first chunk, so its raw buffers can be walked.
// The recording's importer reads it (Recording::importer; a PyTorch monitor dump: ReadTorchDump,
// torch_monitor_dump.h).
// `progress`, when set, is called after every chunk with the bytes of the recording's files read
// so far (files before the current one count whole) and their total.
using ReadProgressFn = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;
void ReadRecording(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
                   const ReadProgressFn& progress = {});

// Counts `file` in `integrity`, calls visitor.OnFile and maps it; nullopt (counted as unreadable,
// with the reason noted) when it cannot be mapped. Both readers start each file with it.
std::optional<MappedFile> OpenRecordingFile(const RecordingFile& file, ChunkVisitor& visitor,
                                            ReadIntegrity* integrity);

// Tracks chunk sequence numbers across a recording's files. The writer may put a chunk after the
// next file's preamble with a lower number (the chunk that triggered rotation), so a number is only
// missing if it never shows up; numbers seen out of order fill the holes they left.
class SequenceTracker {
 public:
  // Returns false when `seq` was already seen or lies below everything tracked (a duplicate).
  bool Add(uint64_t seq);
  // Holes never filled, in chunks, and how many separate holes. Call once at the end.
  uint64_t missing_chunks() const;
  uint64_t holes() const { return holes_.size() + dropped_holes_; }
  // Forgets continuity (after a missing file, which is reported on its own).
  void Reset() { last_ = UINT64_MAX; }

 private:
  static constexpr size_t kMaxHoles = 4096;
  uint64_t last_ = UINT64_MAX;
  std::vector<std::pair<uint64_t, uint64_t>> holes_;  // [first, last] missing, ascending
  uint64_t dropped_holes_ = 0;
  uint64_t dropped_missing_ = 0;
};

// Threads a read uses: 1, everything on the caller's thread; 2, the chunk scan, checksums, zstd
// and the columnar inverse on a second thread, at most seven chunks ahead of the visitor (which
// still sees every chunk, count and message in file order, on the caller's thread). The default
// comes from CUPMON_DECODE_THREADS (1 or 2; anything else is ignored here, and cupmon-decode
// refuses it) or, unset, 2 when the machine has two or more CPUs.
// SetDecodeThreads (cupmon-decode --threads) overrides both; call it before any read starts.
int DecodeThreads();
void SetDecodeThreads(int threads);

// Streams the chunks of one file's bytes (used by ReadRecording and the fuzzer).
// `consumed`, when set, is called after each chunk with the offset up to which the file has been
// read; nothing before that offset is looked at again.
void ReadFileBytes(std::span<const uint8_t> bytes, const RecordingFile& file, ChunkVisitor& visitor,
                   ReadIntegrity* integrity, SequenceTracker* sequences,
                   const std::function<void(uint64_t consumed)>& consumed = {});
// Adds the sequence holes left at the end of a recording to `integrity`.
void FinishSequences(const SequenceTracker& sequences, ReadIntegrity* integrity);

}  // namespace cupmon::decoder
