// Rolling, size- and age-bounded storage for one recording's chunk stream.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>

#include "cupmon/base/error.h"
#include "cupmon/base/file_system.h"

namespace cupmon {

struct RollingFileOptions {
  std::string directory;
  // File names: <prefix>-<seq:06>.cupmon, e.g. cupmon-20261129T081033-host-1234-000003.cupmon.
  std::string prefix;
  uint64_t file_bytes = 64ull << 20;         // rotate before a file would exceed this
  uint32_t file_age_s = 0;                   // rotate files older than this (0: never)
  uint64_t retention_bytes = 2ull << 30;     // total bytes of this recording's files
  uint32_t retention_files = 0;              // at most this many files (0: no count limit)
  uint32_t fsync_interval_ms = 10000;        // fdatasync at most this often while appending
};

// What retention deleted, so the remaining files can account for it.
struct RetiredFile {
  std::string path;
  uint64_t bytes = 0;
  uint64_t records = 0;
  uint64_t kernel_records = 0;
};

// Owns the file being written and the list of this recording's files. Single-threaded: only the
// writer thread calls it.
//
// Security: the directory is opened and vetted once (FileSystem::OpenDirectory: ours, not writable
// by others, not a symlink) and held by descriptor; files are created (0600) and deleted relative
// to it. It is opened again, and vetted again, only after a failed open or rotation.
//
// Durability: a file is fdatasync'ed when it is closed (rotation or stop) and at most every
// fsync_interval_ms while appending. Files are created with O_EXCL and only appended to, so an
// old file is never partly overwritten; a failed append is truncated back to the last whole chunk.
class RollingFileSink {
 public:
  using Clock = std::function<int64_t()>;  // monotonic nanoseconds
  // Produces the bytes each new file starts with (metadata, string table), given its index.
  using Preamble = std::function<std::vector<uint8_t>(uint32_t file_index)>;

  RollingFileSink(RollingFileOptions options, FileSystem& fs, Clock clock, Preamble preamble);
  ~RollingFileSink();
  RollingFileSink(const RollingFileSink&) = delete;
  RollingFileSink& operator=(const RollingFileSink&) = delete;

  // Creates or vets the directory, then creates the first file.
  Expected<void> Open();
  // True when a chunk of `next_chunk_bytes` should go into a new file (size or age limit). A file
  // always takes at least one chunk with records, however large its preamble is.
  bool ShouldRotate(size_t next_chunk_bytes) const;
  // Appends one or more whole chunks. `records` and `kernel_records` are attributed to the current
  // file. On error nothing is appended. Opens a new file first if none is open.
  Expected<void> Append(std::span<const uint8_t> chunk, uint64_t records, uint64_t kernel_records);
  // Closes the current file (after appending `trailer`, normally a footer) and starts the next.
  Expected<void> Rotate(std::span<const uint8_t> trailer);
  // Appends `trailer`, syncs and closes the current file; no new file is opened.
  Expected<void> Close(std::span<const uint8_t> trailer);

  bool is_open() const { return fd_ >= 0; }
  const std::string& current_path() const { return current_.path; }
  uint64_t current_bytes() const { return current_.bytes; }
  uint64_t current_records() const { return current_.records; }
  uint32_t file_index() const { return next_index_ == 0 ? 0 : next_index_ - 1; }
  // Files deleted by retention since the last call (cleared by the call).
  std::vector<RetiredFile> TakeRetired();
  const RollingFileOptions& options() const { return options_; }

 private:
  Expected<void> OpenNext();
  Expected<void> CloseCurrent(std::span<const uint8_t> trailer);
  void EnforceRetention();
  Expected<void> OpenDirectory();
  std::string NameFor(uint32_t index) const;

  RollingFileOptions options_;
  FileSystem& fs_;
  Clock clock_;
  Preamble preamble_;
  int dir_fd_ = -1;
  int fd_ = -1;
  uint32_t next_index_ = 0;
  int64_t opened_ns_ = 0;
  int64_t last_sync_ns_ = 0;
  RetiredFile current_;
  std::deque<RetiredFile> closed_;  // oldest first
  uint64_t closed_bytes_ = 0;
  std::vector<RetiredFile> retired_;
};

}  // namespace cupmon
