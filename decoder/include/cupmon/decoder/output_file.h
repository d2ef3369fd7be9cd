// The file behind `cupmon-decode ... -o FILE`: written beside FILE under a temporary name and
// renamed onto it only when every byte was stored, so that a full disk or a size limit never leaves
// a truncated export behind an exit code of 0.
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

#include "cupmon/base/error.h"

namespace cupmon::decoder {

// Not thread-safe: one thread writes, then commits. Writes are not checked one by one: the first
// failed write (its errno kept) turns the stream bad, later writes are dropped, and Commit()
// reports it.
class OutputFile {
 public:
  // A regular file (or a path that does not exist yet) is written as `temp` (by default
  // `path.tmp-<pid>`) beside it; an existing path that is not a regular file (a device such as
  // /dev/null, a FIFO) is written in place, as there is nothing to rename onto it. Fails when the
  // file cannot be created; the error names it and the system's reason.
  static Expected<std::unique_ptr<OutputFile>> Open(const std::string& path, std::string temp = {});

  // Removes the temporary file when Commit() was not reached or failed: `path` is left as it was.
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream() { return stream_; }

  // Flushes and closes, then renames the temporary onto `path`. Fails, naming `path` and the
  // first error (such as "No space left on device" or "File too large"), when any write, the
  // close or the rename failed; then `path` is left as it was and the temporary is removed.
  // Call once.
  Expected<void> Commit();

 private:
  class FdBuf : public std::streambuf {
   public:
    explicit FdBuf(int fd);
    int first_errno() const { return first_errno_; }

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    bool WriteAll(const char* p, size_t n);
    bool Drain();

    int fd_;
    int first_errno_ = 0;
    std::unique_ptr<char[]> buf_;
  };

  OutputFile(std::string path, std::string temp, int fd);

  std::string path_;
  std::string temp_;  // empty when writing in place
  int fd_;
  FdBuf buf_;
  std::ostream stream_;
  bool done_ = false;
};

}  // namespace cupmon::decoder
