// Private directories for control sockets and the per-user discovery registry: created 0700, and an
// existing one is used only when it belongs to us and nobody else can enter it.
#pragma once

#include <string>

#include "cupmon/base/error.h"

namespace cupmon::control {

// Creates `path` (and missing parents, 0700) or checks an existing one, and returns a descriptor of
// it (O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC; the caller closes it) so that the socket and registry
// entries are made and removed relative to the directory that was checked. Refuses, with a message
// that names the path and says how to fix it, a path that is not a directory, is a symlink, is
// owned by another uid than our effective uid, or grants any permission to group or others
// (cupmon::OpenVettedDirectory with DirPrivacy::kOwnerOnly). With `create` false a missing
// directory is an error with errno ENOENT.
Expected<int> OpenPrivateDir(const std::string& path, bool create = true);

// OpenPrivateDir, closing the descriptor.
Expected<void> EnsurePrivateDir(const std::string& path);

// `${XDG_RUNTIME_DIR:-/tmp}/cupmon-<euid>`: where monitors register `<pid>.sock` symlinks so that
// cupmonctl finds a process without knowing its output directory.
std::string DefaultRegistryDir();

// "<dir>/<pid>.sock"
std::string SocketFileName(const std::string& dir, int pid);
// "<pid>.sock"
std::string SocketBaseName(int pid);

}  // namespace cupmon::control
