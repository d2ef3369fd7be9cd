// OutputFile: a temporary beside the destination, written through one descriptor whose first
// failed write is kept, then renamed onto the destination.
#include "cupmon/decoder/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace cupmon::decoder {
namespace {

constexpr size_t kBufBytes = 64 << 10;
// Blocks at least this large skip the buffer (the exports hand over ~1 MiB at a time).
constexpr std::streamsize kDirectBytes = kBufBytes / 2;

// EFBIG on a file system with room is a size limit (ulimit -f); say so.
std::string SysText(int err) {
  return err == EFBIG ? "File too large (a file size limit, ulimit -f?)" : std::strerror(err);
}

}  // namespace

OutputFile::FdBuf::FdBuf(int fd) : fd_(fd), buf_(new char[kBufBytes]) {
  setp(buf_.get(), buf_.get() + kBufBytes);
}

bool OutputFile::FdBuf::WriteAll(const char* p, size_t n) {
  if (first_errno_ != 0) return false;
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      first_errno_ = errno;
      return false;
    }
    if (w == 0) {  // not expected of a regular file or device; do not spin
      first_errno_ = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool OutputFile::FdBuf::Drain() {
  const size_t n = static_cast<size_t>(pptr() - pbase());
  setp(buf_.get(), buf_.get() + kBufBytes);  // after a failure, what was buffered is dropped
  return WriteAll(buf_.get(), n);
}

OutputFile::FdBuf::int_type OutputFile::FdBuf::overflow(int_type c) {
  if (!Drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

std::streamsize OutputFile::FdBuf::xsputn(const char* s, std::streamsize n) {
  if (first_errno_ != 0) return 0;
  if (n >= kDirectBytes) {
    if (!Drain() || !WriteAll(s, static_cast<size_t>(n))) return 0;
    return n;
  }
  std::streamsize done = 0;
  while (done < n) {
    const std::streamsize room = epptr() - pptr();
    if (room == 0) {
      if (!Drain()) return done;
      continue;
    }
    const std::streamsize take = std::min(room, n - done);
    std::memcpy(pptr(), s + done, static_cast<size_t>(take));
    pbump(static_cast<int>(take));
    done += take;
  }
  return n;
}

int OutputFile::FdBuf::sync() { return Drain() ? 0 : -1; }

Expected<std::unique_ptr<OutputFile>> OutputFile::Open(const std::string& path, std::string temp) {
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return MakeError("cannot write " + path + ": is a directory", EISDIR);
  if (exists && !S_ISREG(st.st_mode)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      return MakeError("cannot write " + path + ": " + SysText(err), err);
    }
    return std::unique_ptr<OutputFile>(new OutputFile(path, "", fd));
  }
  if (temp.empty()) temp = path + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    return MakeError(
        "cannot write " + path + ": cannot create " + temp + " beside it: " + SysText(err), err);
  }
  // A file that is replaced keeps its permission bits.
  if (exists) (void)::fchmod(fd, st.st_mode & 07777);
  return std::unique_ptr<OutputFile>(new OutputFile(path, std::move(temp), fd));
}

OutputFile::OutputFile(std::string path, std::string temp, int fd)
    : path_(std::move(path)), temp_(std::move(temp)), fd_(fd), buf_(fd), stream_(&buf_) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!done_ && !temp_.empty()) ::unlink(temp_.c_str());
}

Expected<void> OutputFile::Commit() {
  done_ = true;
  stream_.flush();
  int err = buf_.first_errno();
  if (::close(fd_) != 0 && err == 0) err = errno;
  fd_ = -1;
  if (err == 0 && !temp_.empty() && ::rename(temp_.c_str(), path_.c_str()) != 0) {
    err = errno;
    ::unlink(temp_.c_str());
    return MakeError("cannot rename " + temp_ + " onto " + path_ + ": " + SysText(err), err);
  }
  if (err == 0) return {};
  if (temp_.empty())
    return MakeError(
        "writing " + path_ + " failed: " + SysText(err) + "; what it holds is incomplete", err);
  ::unlink(temp_.c_str());
  return MakeError("cannot write " + path_ + ": " + SysText(err) + " (while writing " + temp_ +
                       "); " + path_ + " is left as it was",
                   err);
}

}  // namespace cupmon::decoder
