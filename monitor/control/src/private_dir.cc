// Creating and vetting the 0700 directories that hold control sockets and registry symlinks.
#include "cupmon/control/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cupmon::control {
namespace {

std::string OctalMode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// mkdir that tolerates an existing entry; the caller vets the final directory.
Expected<void> MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return {};
  const int err = errno;
  return MakeError("cannot create directory " + path + ": " + std::strerror(err), err);
}

}  // namespace

Expected<void> EnsurePrivateDir(const std::string& path) {
  if (path.empty()) return MakeError("empty directory path");
  // Parents: created 0700 if missing, not vetted (they may legitimately be shared, like /tmp).
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    if (auto made = MakeDir(path.substr(0, pos)); !made) return made;
  }
  bool created = false;
  if (::mkdir(path.c_str(), 0700) == 0) {
    created = true;
  } else if (errno != EEXIST) {
    const int err = errno;
    return MakeError("cannot create directory " + path + ": " + std::strerror(err), err);
  }
  // O_NOFOLLOW + fstat: judge the directory itself, never what a symlink planted there points to.
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return MakeError(path + " is not a usable directory (a symlink or a file?): " + std::strerror(err),
                     err);
  }
  struct stat st {};
  const int stat_rc = ::fstat(fd, &st);
  const int stat_err = errno;
  if (stat_rc == 0 && created && (st.st_mode & 0777) != 0700) {
    ::fchmod(fd, 0700);  // the umask may have taken owner bits away
    ::fstat(fd, &st);
  }
  ::close(fd);
  if (stat_rc != 0) {
    return MakeError("cannot stat " + path + ": " + std::strerror(stat_err), stat_err);
  }
  const uid_t euid = ::geteuid();
  if (st.st_uid != euid) {
    return MakeError("refusing directory " + path + ": it is owned by uid " + std::to_string(st.st_uid) +
                     ", not by uid " + std::to_string(euid) + " (choose another directory)");
  }
  if ((st.st_mode & 077) != 0) {
    return MakeError("refusing directory " + path + ": permissions " + OctalMode(st.st_mode) +
                     " let group or others in (run: chmod 700 " + path + ")");
  }
  return {};
}

std::string DefaultRegistryDir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string base = (runtime != nullptr && runtime[0] != '\0') ? runtime : "/tmp";
  return base + "/cupmon-" + std::to_string(::geteuid());
}

std::string SocketFileName(const std::string& dir, int pid) {
  return dir + "/" + std::to_string(pid) + ".sock";
}

}  // namespace cupmon::control
