// POSIX FileSystem: O_CLOEXEC everywhere, partial writes retried, a failed append truncated back.
#include "cupmon/format/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cupmon {
namespace {

std::string Describe(const char* what, const std::string& path, int err) {
  return std::string(what) + " " + path + ": " + std::strerror(err);
}

class Posix final : public FileSystem {
 public:
  Expected<void> MakeDirectories(const std::string& dir, bool private_dir) override {
    if (dir.empty()) return MakeError("empty directory name");
    const mode_t mode = private_dir ? 0700 : 0755;
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = dir.find('/', pos + 1);
      partial = dir.substr(0, pos);
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), mode) != 0 && errno != EEXIST)
        return MakeError(Describe("cannot create directory", partial, errno), errno);
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) return MakeError(Describe("cannot stat", dir, errno), errno);
    if (!S_ISDIR(st.st_mode)) return MakeError(dir + " exists and is not a directory", ENOTDIR);
    if (::access(dir.c_str(), W_OK | X_OK) != 0)
      return MakeError(Describe("directory is not writable:", dir, errno), errno);
    return {};
  }

  Expected<int> CreateExclusive(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return MakeError(Describe("cannot create", path, errno), errno);
    return fd;
  }

  Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) override {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        const int err = errno;
        // Drop the torn chunk so the file ends at its last whole chunk.
        if (done > 0 && ::ftruncate(fd, static_cast<off_t>(size_before)) != 0) {
        }
        return MakeError(std::string("write failed: ") + std::strerror(err), err);
      }
      done += static_cast<size_t>(n);
    }
    return {};
  }

  Expected<void> Sync(int fd) override {
    if (::fdatasync(fd) != 0) return MakeError(std::string("fdatasync: ") + std::strerror(errno), errno);
    return {};
  }

  void Close(int fd) override { ::close(fd); }

  Expected<void> Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
      return MakeError(Describe("cannot remove", path, errno), errno);
    return {};
  }
};

}  // namespace

FileSystem& PosixFileSystem() {
  static Posix fs;
  return fs;
}

}  // namespace cupmon
