// POSIX FileSystem: vetted directories held by descriptor, files created 0600 relative to them,
// O_CLOEXEC everywhere, partial writes retried, a failed append truncated back.
#include "cupmon/base/file_system.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace cupmon {
namespace {

std::string Describe(const char* what, const std::string& path, int err) {
  return std::string(what) + " " + path + ": " + std::strerror(err);
}

std::string OctalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

// Why `name` in `parent_fd` could not be opened as a directory without following a symlink.
Error WhyNotADirectory(int parent_fd, const std::string& name, const std::string& path, int err) {
  struct stat st {};
  if (::fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode)) {
      return Error{"refusing directory " + path +
                       ": it is a symbolic link (cupmon does not follow a link here, where it could "
                       "be swapped; name the real directory or choose another one)",
                   ELOOP};
    }
    if (!S_ISDIR(st.st_mode)) {
      return Error{"refusing directory " + path + ": it exists and is not a directory", ENOTDIR};
    }
  }
  return Error{Describe("cannot open directory", path, err), err};
}

// Mode bits that `privacy` forbids, and the fix to suggest.
Expected<void> CheckModeAndOwner(const struct stat& st, const std::string& path, DirPrivacy privacy) {
  const uid_t euid = ::geteuid();
  if (st.st_uid != euid) {
    return MakeError("refusing directory " + path + ": owned by uid " + std::to_string(st.st_uid) +
                         ", not " + std::to_string(euid) +
                         " (another user may have created it first; choose another directory)",
                     EPERM);
  }
  const mode_t mode = st.st_mode & 07777;
  if (privacy == DirPrivacy::kOwnerOnly) {
    if ((mode & 077) != 0) {
      return MakeError("refusing directory " + path + ": group or others have access (mode " +
                           OctalMode(mode) + "; run: chmod 700 " + path + ")",
                       EPERM);
    }
    return {};
  }
  if ((mode & 002) != 0) {
    return MakeError("refusing directory " + path + ": world-writable (mode " + OctalMode(mode) +
                         "; run: chmod go-w " + path + ", or choose another directory)",
                     EPERM);
  }
  if ((mode & 020) != 0) {
    return MakeError("refusing directory " + path + ": group-writable (mode " + OctalMode(mode) +
                         "; run: chmod g-w " + path + ", or choose another directory)",
                     EPERM);
  }
  return {};
}

class Posix final : public FileSystem {
 public:
  Expected<int> OpenDirectory(const std::string& dir) override {
    return OpenVettedDirectory(dir, DirPrivacy::kNoOtherWriters);
  }

  Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                const std::string& name) override {
    // O_EXCL also refuses a symlink planted under the name; O_NOFOLLOW says so explicitly.
    const int fd = ::openat(dir_fd, name.c_str(),
                            O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return MakeError(Describe("cannot create", Join(dir_path, name), errno), errno);
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

  Expected<void> Remove(int dir_fd, const std::string& dir_path, const std::string& name) override {
    if (::unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT)
      return MakeError(Describe("cannot remove", Join(dir_path, name), errno), errno);
    return {};
  }
};

}  // namespace

Expected<int> OpenVettedDirectory(const std::string& dir, DirPrivacy privacy, bool create) {
  if (dir.empty()) return MakeError("empty directory name");
  std::vector<std::string> parts;
  for (size_t pos = 0; pos < dir.size();) {
    const size_t end = std::min(dir.find('/', pos), dir.size());
    if (end > pos && dir.compare(pos, end - pos, ".") != 0) parts.push_back(dir.substr(pos, end - pos));
    pos = end + 1;
  }
  const char* start = dir.front() == '/' ? "/" : ".";
  UniqueFd current(::open(start, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (current.get() < 0) return MakeError(Describe("cannot open directory", start, errno), errno);
  std::string walked = dir.front() == '/' ? "/" : "";
  bool created = false;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& name = parts[i];
    const bool last = i + 1 == parts.size();
    walked = walked.empty() ? name : Join(walked, name);
    created = create && ::mkdirat(current.get(), name.c_str(), 0700) == 0;
    if (create && !created && errno != EEXIST) {
      return MakeError(Describe("cannot create directory", walked, errno), errno);
    }
    // Parents may be symlinks (/var/run -> /run); the directory itself may not.
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (last ? O_NOFOLLOW : 0);
    const int next = ::openat(current.get(), name.c_str(), flags);
    if (next < 0) {
      const int err = errno;
      if (last) return cupmon::unexpected(WhyNotADirectory(current.get(), name, walked, err));
      return MakeError(Describe("cannot open directory", walked, err), err);
    }
    current.reset(next);
  }
  // The umask may have taken bits of the owner's away, or left none for group and others already.
  if (created) (void)::fchmod(current.get(), 0700);
  struct stat st {};
  if (::fstat(current.get(), &st) != 0) return MakeError(Describe("cannot stat", dir, errno), errno);
  if (auto vetted = CheckModeAndOwner(st, dir, privacy); !vetted) {
    return cupmon::unexpected(vetted.error());
  }
  if (::faccessat(current.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
    const int err = errno;
    return MakeError("directory " + dir + " is not writable (mode " + OctalMode(st.st_mode) +
                         "): " + std::strerror(err),
                     err);
  }
  return current.release();
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

FileSystem& PosixFileSystem() {
  // Never destroyed: the monitor's final close at exit (an atexit handler registered before this
  // object would be) and a writer thread still running past a bounded stop both use it.
  static Posix* fs = new Posix;
  return *fs;
}

}  // namespace cupmon
