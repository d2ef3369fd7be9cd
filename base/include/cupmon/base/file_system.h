// The file operations the rolling store needs, behind an interface so tests can simulate a full
// or unwritable disk. The POSIX implementation opens everything close-on-exec and works relative to
// a vetted directory descriptor, so a directory swapped for a symlink after the check cannot
// redirect a write or a delete.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "cupmon/base/error.h"

namespace cupmon {

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Opens the directory recordings go to, creating it and missing parents (0700), and vets it:
  // it must be owned by our effective uid, not group- or world-writable, and not a symbolic link
  // (VetDirectory). Returns a directory descriptor for the calls below; the caller closes it.
  virtual Expected<int> OpenDirectory(const std::string& dir) = 0;
  // Creates `name` in `dir_fd` for appending, mode 0600; fails if it exists (an old file is never
  // overwritten) or is a symlink. `dir_path` only names the file in errors.
  virtual Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                        const std::string& name) = 0;
  // Writes all of `data` or fails. On failure, the file keeps its first `size_before` bytes.
  virtual Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) = 0;
  virtual Expected<void> Sync(int fd) = 0;
  virtual void Close(int fd) = 0;
  // Removes `name` from `dir_fd`; a missing file is not an error.
  virtual Expected<void> Remove(int dir_fd, const std::string& dir_path, const std::string& name) = 0;
};

// Owns a file descriptor and closes it when destroyed (-1: none).
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_;
};

// The real file system. Stateless; one shared instance.
FileSystem& PosixFileSystem();

// How private a directory that cupmon writes into must be.
enum class DirPrivacy {
  kNoOtherWriters,  // recordings: group and others may read and enter, not write (0755 is fine)
  kOwnerOnly,       // control sockets and the registry: no permission at all for group or others
};

// Opens `dir` (O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), creating it and missing parents with mode
// 0700 (then exactly 0700, whatever the umask), and vets the directory itself: a symbolic link, a
// directory owned by another uid than our effective uid, or one open to others beyond `privacy` is
// refused with one message naming the path and what is wrong ("is a symbolic link", "owned by uid
// 1001, not 1000", "group-writable (mode 0775)") and how to fix it. Existing parents are not
// vetted (they may be shared, like /tmp); each is resolved once on the way down, relative to the
// one above, so nothing is looked up by path twice. Returns the descriptor; the caller closes it.
// With `create` false nothing is created: a missing directory is an error with errno ENOENT.
Expected<int> OpenVettedDirectory(const std::string& dir, DirPrivacy privacy, bool create = true);

}  // namespace cupmon
