// Creating and vetting the 0700 directories that hold control sockets and registry symlinks.
#include "cupmon/control/private_dir.h"

#include <unistd.h>

#include <cstdlib>

#include "cupmon/base/file_system.h"

namespace cupmon::control {

Expected<int> OpenPrivateDir(const std::string& path, bool create) {
  if (path.empty()) return MakeError("empty directory path");
  return OpenVettedDirectory(path, DirPrivacy::kOwnerOnly, create);
}

Expected<void> EnsurePrivateDir(const std::string& path) {
  auto fd = OpenPrivateDir(path);
  if (!fd) return cupmon::unexpected(fd.error());
  ::close(*fd);
  return {};
}

std::string DefaultRegistryDir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string base = (runtime != nullptr && runtime[0] != '\0') ? runtime : "/tmp";
  return base + "/cupmon-" + std::to_string(::geteuid());
}

std::string SocketBaseName(int pid) { return std::to_string(pid) + ".sock"; }

std::string SocketFileName(const std::string& dir, int pid) { return dir + "/" + SocketBaseName(pid); }

}  // namespace cupmon::control
