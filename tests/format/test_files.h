// Test helpers: temporary directories, reading files back, scanning them, and a FileSystem that
// simulates a full or unwritable disk on top of the real one.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "cupmon/base/file_system.h"
#include "cupmon/format/chunk_scanner.h"

namespace cupmon::testing {

// A fresh directory under $TMPDIR, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "cupmon-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) ? pattern : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::vector<uint8_t> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

// The regular files in `dir`, sorted by name (which is time order for cupmon files).
inline std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct ScannedFile {
  std::vector<uint8_t> bytes;
  std::vector<ScannedChunk> chunks;  // payload spans point into `bytes`
  std::vector<Damage> damage;
  uint8_t future_major = 0;
};

inline ScannedFile ScanFile(const std::string& path) {
  ScannedFile f;
  f.bytes = ReadFileBytes(path);
  ChunkScanner scanner(f.bytes);
  while (auto c = scanner.Next(&f.damage)) f.chunks.push_back(*c);
  f.future_major = scanner.future_major();
  return f;
}

// Wraps the real file system and injects the failures of a full or unwritable disk.
// - Appends succeed until `space_left` bytes have been written; the append that does not fit
//   writes what fits, then, like the POSIX implementation after a short write, truncates the
//   file back to `size_before` and fails with ENOSPC.
// - With `deny_create` set, OpenDirectory and CreateExclusive fail with EACCES.
class FaultyFileSystem final : public FileSystem {
 public:
  static constexpr uint64_t kUnlimited = ~uint64_t{0};
  uint64_t space_left = kUnlimited;
  bool deny_create = false;
  int append_failures = 0;

  Expected<int> OpenDirectory(const std::string& dir) override {
    if (deny_create) return MakeError("cannot create directory " + dir + ": Permission denied", EACCES);
    return real_.OpenDirectory(dir);
  }
  Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                const std::string& name) override {
    if (deny_create) {
      return MakeError("cannot create " + dir_path + "/" + name + ": Permission denied", EACCES);
    }
    return real_.CreateExclusive(dir_fd, dir_path, name);
  }
  Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) override {
    if (space_left != kUnlimited && data.size() > space_left) {
      ++append_failures;
      if (space_left > 0) (void)real_.Append(fd, data.first(space_left), size_before);
      space_left = 0;
      if (::ftruncate(fd, static_cast<off_t>(size_before)) != 0) return MakeError("ftruncate", errno);
      return MakeError(std::string("write failed: ") + std::strerror(ENOSPC), ENOSPC);
    }
    if (space_left != kUnlimited) space_left -= data.size();
    return real_.Append(fd, data, size_before);
  }
  Expected<void> Sync(int fd) override { return real_.Sync(fd); }
  void Close(int fd) override { real_.Close(fd); }
  Expected<void> Remove(int dir_fd, const std::string& dir_path, const std::string& name) override {
    return real_.Remove(dir_fd, dir_path, name);
  }

 private:
  FileSystem& real_ = PosixFileSystem();
};

}  // namespace cupmon::testing
