// Private directories for control sockets and the per-user discovery registry: created 0700, and an
// existing one is used only when it belongs to us and nobody else can enter it.
#pragma once

#include <string>

#include "cupmon/format/error.h"

namespace cupmon::control {

// Creates `path` (and missing parents, 0700) or checks an existing one. Refuses, with a message that
// says how to fix it, a path that is not a directory, is a symlink, is owned by another uid than our
// effective uid, or grants any permission to group or others.
Expected<void> EnsurePrivateDir(const std::string& path);

// `${XDG_RUNTIME_DIR:-/tmp}/cupmon-<euid>`: where monitors register `<pid>.sock` symlinks so that
// cupmonctl finds a process without knowing its output directory.
std::string DefaultRegistryDir();

// "<dir>/<pid>.sock"
std::string SocketFileName(const std::string& dir, int pid);

}  // namespace cupmon::control
