// The file operations the rolling store needs, behind an interface so tests can simulate a full
// or unwritable disk. The POSIX implementation opens everything close-on-exec.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "cupmon/format/error.h"

namespace cupmon {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Creates `dir` and missing parents (mode 0755 unless `private_dir`: 0700).
  virtual Expected<void> MakeDirectories(const std::string& dir, bool private_dir = false) = 0;
  // Creates a new file for appending; fails if it exists (an old file is never overwritten).
  virtual Expected<int> CreateExclusive(const std::string& path) = 0;
  // Writes all of `data` or fails. On failure, the file keeps its first `size_before` bytes.
  virtual Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) = 0;
  virtual Expected<void> Sync(int fd) = 0;
  virtual void Close(int fd) = 0;
  virtual Expected<void> Remove(const std::string& path) = 0;
};

// The real file system. Stateless; one shared instance.
FileSystem& PosixFileSystem();

}  // namespace cupmon
