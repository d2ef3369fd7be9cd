// The file mapping, sequence tracking and decode threads that every importer's read uses.
#include "cupmon/decoder/recording_reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace cupmon::decoder {

void ReadIntegrity::Note(std::string message) {
  if (messages.size() < kMaxMessages) messages.push_back(std::move(message));
}

Expected<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return MakeError(path + ": cannot open: " + std::strerror(errno), errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return MakeError(path + ": cannot stat: " + std::strerror(e), e);
  }
  MappedFile m;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return MakeError(path + ": cannot map: " + std::strerror(e), e);
    }
    m.data_ = static_cast<const uint8_t*>(p);
    m.size_ = static_cast<size_t>(st.st_size);
    ::madvise(p, m.size_, MADV_SEQUENTIAL);
  }
  ::close(fd);  // the mapping stays valid
  return m;
}

void MappedFile::ReleaseBefore(uint64_t offset) {
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t end = std::min<uint64_t>(offset, size_) / page * page;
  // A private read-only mapping: MADV_DONTNEED only drops our page references (nothing was
  // written), and a later touch reads the file again. Failure just keeps the pages.
  if (data_ && end) ::madvise(const_cast<uint8_t*>(data_), end, MADV_DONTNEED);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

namespace {

int DecodeThreadsFromEnvironment() {
  const char* v = std::getenv("CUPMON_DECODE_THREADS");
  if (v && std::strcmp(v, "1") == 0) return 1;
  if (v && std::strcmp(v, "2") == 0) return 2;
  return std::thread::hardware_concurrency() >= 2 ? 2 : 1;
}

std::atomic<int> g_decode_threads{0};  // 0: not yet chosen

}  // namespace

void SetDecodeThreads(int threads) { g_decode_threads.store(threads >= 2 ? 2 : 1); }

int DecodeThreads() {
  int n = g_decode_threads.load();
  if (n == 0) {
    n = DecodeThreadsFromEnvironment();
    g_decode_threads.store(n);
  }
  return n;
}

std::optional<MappedFile> OpenRecordingFile(const RecordingFile& file, ChunkVisitor& visitor,
                                            ReadIntegrity* integrity) {
  ++integrity->files;
  visitor.OnFile(file);
  auto mapped = MappedFile::Open(file.path);
  if (mapped) return std::move(*mapped);
  ++integrity->unreadable_files;
  integrity->Note(mapped.error().message);
  return std::nullopt;
}

bool SequenceTracker::Add(uint64_t seq) {
  if (last_ == UINT64_MAX) {
    last_ = seq;
    return true;
  }
  if (seq > last_) {
    if (seq > last_ + 1) {
      if (holes_.size() < kMaxHoles) {
        holes_.emplace_back(last_ + 1, seq - 1);
      } else {
        ++dropped_holes_;
        dropped_missing_ += seq - last_ - 1;
      }
    }
    last_ = seq;
    return true;
  }
  // Out of order: fill the hole that holds it, if any.
  auto it = std::upper_bound(holes_.begin(), holes_.end(), seq,
                             [](uint64_t s, const auto& h) { return s < h.first; });
  if (it == holes_.begin()) return false;
  --it;
  if (seq > it->second) return false;
  if (it->first == it->second) {
    holes_.erase(it);
  } else if (seq == it->first) {
    ++it->first;
  } else if (seq == it->second) {
    --it->second;
  } else {
    const auto tail = std::make_pair(seq + 1, it->second);
    it->second = seq - 1;
    holes_.insert(it + 1, tail);
  }
  return true;
}

uint64_t SequenceTracker::missing_chunks() const {
  uint64_t n = dropped_missing_;
  for (const auto& h : holes_) n += h.second - h.first + 1;
  return n;
}

void FinishSequences(const SequenceTracker& sequences, ReadIntegrity* integrity) {
  if (sequences.holes() == 0) return;
  integrity->sequence_gaps += sequences.holes();
  integrity->missing_chunks += sequences.missing_chunks();
  integrity->Note(std::to_string(sequences.missing_chunks()) + " chunk(s) missing in " +
                  std::to_string(sequences.holes()) + " sequence gap(s)");
}

}  // namespace cupmon::decoder
