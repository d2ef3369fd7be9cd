// Rolling file storage: rotation by size and age, retention by bytes and count, oldest first.
#include "cupmon/format/rolling_file_sink.h"

#include <cstdio>

namespace cupmon {
namespace {

// FileSystem::Append only sees a descriptor; the user needs to know which file failed.
Expected<void> NameFile(Expected<void> r, const std::string& path) {
  if (r) return r;
  return MakeError(path + ": " + r.error().message, r.error().sys_errno);
}

}  // namespace

RollingFileSink::RollingFileSink(RollingFileOptions options, FileSystem& fs, Clock clock,
                                 Preamble preamble)
    : options_(std::move(options)), fs_(fs), clock_(std::move(clock)),
      preamble_(std::move(preamble)) {
  // A file must fit at least twice in the retention budget, or retention could delete the only
  // closed file and still be over.
  if (options_.retention_bytes && options_.file_bytes > options_.retention_bytes / 2)
    options_.file_bytes = options_.retention_bytes / 2;
}

RollingFileSink::~RollingFileSink() {
  if (fd_ >= 0) fs_.Close(fd_);
  if (dir_fd_ >= 0) fs_.Close(dir_fd_);
}

std::string RollingFileSink::NameFor(uint32_t index) const {
  char seq[16];
  std::snprintf(seq, sizeof(seq), "%06u", index);
  return options_.prefix + "-" + seq + ".cupmon";
}

Expected<void> RollingFileSink::OpenDirectory() {
  if (dir_fd_ >= 0) fs_.Close(dir_fd_);
  dir_fd_ = -1;
  auto dir = fs_.OpenDirectory(options_.directory);
  if (!dir) return cupmon::unexpected(dir.error());
  dir_fd_ = *dir;
  return {};
}

Expected<void> RollingFileSink::Open() {
  if (auto r = OpenDirectory(); !r) return r;
  return OpenNext();
}

Expected<void> RollingFileSink::OpenNext() {
  if (dir_fd_ < 0) return MakeError("no directory for recordings is open (" + options_.directory + ")");
  EnforceRetention();
  const uint32_t index = next_index_;
  const std::string name = NameFor(index);
  const std::string path = options_.directory + "/" + name;
  auto fd = fs_.CreateExclusive(dir_fd_, options_.directory, name);
  if (!fd) return cupmon::unexpected(fd.error());
  ++next_index_;
  fd_ = *fd;
  current_ = RetiredFile{path, 0, 0, 0};
  opened_ns_ = last_sync_ns_ = clock_();
  const std::vector<uint8_t> pre = preamble_(index);
  if (auto r = NameFile(fs_.Append(fd_, pre, 0), path); !r) {
    // Leave no headerless file behind.
    fs_.Close(fd_);
    fd_ = -1;
    (void)fs_.Remove(dir_fd_, options_.directory, name);
    return r;
  }
  current_.bytes = pre.size();
  return {};
}

Expected<void> RollingFileSink::Append(std::span<const uint8_t> chunk, uint64_t records,
                                       uint64_t kernel_records) {
  if (fd_ < 0) {
    // The last rotation or open failed (full disk, removed directory): open the directory again,
    // vetted again (it may have been replaced meanwhile), and try again now.
    if (auto r = OpenDirectory(); !r) return r;
    if (auto r = OpenNext(); !r) return r;
  }
  const int64_t now = clock_();
  if (auto r = NameFile(fs_.Append(fd_, chunk, current_.bytes), current_.path); !r) return r;
  current_.bytes += chunk.size();
  current_.records += records;
  current_.kernel_records += kernel_records;
  if (options_.fsync_interval_ms &&
      now - last_sync_ns_ >= int64_t{options_.fsync_interval_ms} * 1'000'000) {
    last_sync_ns_ = now;
    (void)fs_.Sync(fd_);  // best effort; a failure shows up in the next write
  }
  return {};
}

bool RollingFileSink::ShouldRotate(size_t next_chunk_bytes) const {
  if (fd_ < 0 || current_.records == 0) return false;  // a file takes at least one raw buffer
  if (current_.bytes + next_chunk_bytes > options_.file_bytes) return true;
  return options_.file_age_s &&
         clock_() - opened_ns_ >= int64_t{options_.file_age_s} * 1'000'000'000;
}

Expected<void> RollingFileSink::CloseCurrent(std::span<const uint8_t> trailer) {
  if (fd_ < 0) return {};
  Expected<void> result;
  if (!trailer.empty()) {
    result = NameFile(fs_.Append(fd_, trailer, current_.bytes), current_.path);
    if (result) current_.bytes += trailer.size();
  }
  (void)fs_.Sync(fd_);
  fs_.Close(fd_);
  fd_ = -1;
  closed_.push_back(current_);
  closed_bytes_ += current_.bytes;
  return result;
}

Expected<void> RollingFileSink::Rotate(std::span<const uint8_t> trailer) {
  auto closed = CloseCurrent(trailer);
  auto opened = OpenNext();
  if (!closed) return closed;
  return opened;
}

Expected<void> RollingFileSink::Close(std::span<const uint8_t> trailer) {
  return CloseCurrent(trailer);
}

void RollingFileSink::EnforceRetention() {
  auto over = [&] {
    const bool bytes_over = options_.retention_bytes &&
                            closed_bytes_ + options_.file_bytes > options_.retention_bytes;
    const bool count_over =
        options_.retention_files && closed_.size() + 1 > options_.retention_files;
    return bytes_over || count_over;
  };
  while (!closed_.empty() && over()) {
    RetiredFile oldest = closed_.front();
    closed_.pop_front();
    closed_bytes_ -= oldest.bytes;
    // Relative to the directory we vetted, by the name we gave the file.
    const size_t slash = oldest.path.find_last_of('/');
    (void)fs_.Remove(dir_fd_, options_.directory,
                     slash == std::string::npos ? oldest.path : oldest.path.substr(slash + 1));
    retired_.push_back(std::move(oldest));
  }
}

std::vector<RetiredFile> RollingFileSink::TakeRetired() {
  std::vector<RetiredFile> out;
  out.swap(retired_);
  return out;
}

}  // namespace cupmon
