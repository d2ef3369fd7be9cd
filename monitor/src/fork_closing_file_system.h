// A FileSystem that forwards to another and registers every descriptor it opens (the recordings'
// directory and the file being written) to be closed in a forked child (fork_child_cleanup.h).
// Without it a child forked without exec (PyTorch's DataLoader workers, multiprocessing) keeps the
// parent's open recording file and directory for its whole life: a file that retention deletes
// afterwards keeps its disk space until every such child exits. Writer thread only, as the sink
// that calls it; the registry itself is lock-free.
#pragma once

#include "cupmon/base/file_system.h"
#include "cupmon/base/fork_child_cleanup.h"

namespace cupmon {

class ForkClosingFileSystem final : public FileSystem {
 public:
  explicit ForkClosingFileSystem(FileSystem& inner) : inner_(inner) {}

  Expected<int> OpenDirectory(const std::string& dir) override {
    return Registered(inner_.OpenDirectory(dir));
  }
  Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                const std::string& name) override {
    return Registered(inner_.CreateExclusive(dir_fd, dir_path, name));
  }
  Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) override {
    return inner_.Append(fd, data, size_before);
  }
  Expected<void> Sync(int fd) override { return inner_.Sync(fd); }
  // Forgotten before it is closed: the registry never holds a number that may be reused.
  void Close(int fd) override {
    ForgetForkedChildFd(fd);
    inner_.Close(fd);
  }
  Expected<void> Remove(int dir_fd, const std::string& dir_path, const std::string& name) override {
    return inner_.Remove(dir_fd, dir_path, name);
  }

 private:
  static Expected<int> Registered(Expected<int> fd) {
    // A full registry (16 slots, shared with the listeners) leaves the descriptor inherited, as
    // before; nothing else changes.
    if (fd) (void)CloseInForkedChild(*fd);
    return fd;
  }
  FileSystem& inner_;
};

}  // namespace cupmon
