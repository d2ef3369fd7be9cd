// The chunk-decoding thread of ReadFileBytes: scan, checksums, zstd and the columnar inverse of
// raw buffers, kept a few chunks ahead of the thread that walks the records.
#include "chunk_decode_thread.h"

#include <system_error>

#include "cupmon/base/check.h"

namespace cupmon::decoder {
namespace {
// Twice the monitor's default raw-buffer size (4 MiB); larger chunks still grow the vector.
// Reserved once per slot: grown by resize, chunk after slightly larger chunk, the vector would be
// reallocated, copied and faulted in again.
constexpr size_t kRecordsReserve = size_t{8} << 20;
}  // namespace

ChunkDecodeThread::ChunkDecodeThread(std::span<const uint8_t> bytes, bool background,
                                     const ColumnSelection* keep, uint64_t start)
    : scanner_(bytes, start), background_(background) {
  if (keep) {
    use_selection_ = true;
    selection_ = *keep;
  }
  // Inline, only slot 0 is ever used.
  for (size_t i = 0; i < (background_ ? kSlots : 1); ++i) slots_[i].records.reserve(kRecordsReserve);
  if (!background_) return;
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error&) {
    background_ = false;  // no thread to be had (a process or memory limit): decode inline
  }
}

ChunkDecodeThread::~ChunkDecodeThread() {
  if (!thread_.joinable()) return;
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  slot_free_.notify_one();
  thread_.join();
}

bool ChunkDecodeThread::Produce(DecodedChunk* out) {
  out->damage.clear();
  out->short_prefix = false;
  out->decode_error.clear();
  auto c = scanner_.Next(&out->damage);
  out->position = scanner_.position();
  if (!c) {
    out->end = true;
    out->future_major = scanner_.future_major();
    return false;
  }
  out->end = false;
  out->chunk = *c;
  if (c->header.type != static_cast<uint8_t>(ChunkType::kRawBuffer)) return true;
  if (c->payload.size() < kRawBufferPrefixSize) {
    out->short_prefix = true;
    return true;
  }
  out->prefix = DecodeRawBufferPrefix(c->payload.data());
  auto r = codec_.Decode(c->header.encoding, c->payload.subspan(kRawBufferPrefixSize),
                         c->header.uncompressed_length, &out->records,
                         use_selection_ ? &selection_ : nullptr, &out->packed);
  if (!r) out->decode_error = r.error().message;
  if (out->packed) out->packed_with = selection_;
  return true;
}

void ChunkDecodeThread::Run() noexcept {
  try {
    for (;;) {
      uint64_t slot = 0;
      {
        MutexLock lock(mu_);
        while (!stop_ && produced_ - released_ >= kSlots) lock.Wait(slot_free_);
        if (stop_) break;
        if (selection_changed_) {
          selection_changed_ = false;
          use_selection_ = true;
          selection_ = next_selection_;
        }
        slot = produced_ % kSlots;
      }
      // This slot is neither held by the consumer nor visible to it until produced_ moves.
      const bool more = Produce(&slots_[slot]);
      {
        MutexLock lock(mu_);
        ++produced_;
      }
      slot_ready_.notify_one();
      if (!more) break;
    }
  } catch (...) {
    thread_error_ = std::current_exception();
  }
  {
    MutexLock lock(mu_);
    thread_ended_ = true;
  }
  slot_ready_.notify_one();
}

void ChunkDecodeThread::SetColumnSelection(const ColumnSelection& keep) {
  if (!background_) {
    use_selection_ = true;
    selection_ = keep;
    return;
  }
  MutexLock lock(mu_);
  selection_changed_ = true;
  next_selection_ = keep;
}

const DecodedChunk& ChunkDecodeThread::Next() {
  if (!background_) {
    DecodedChunk& s = slots_[0];
    if (!end_taken_) end_taken_ = !Produce(&s);
    return s;
  }
  if (end_taken_) return slots_[(taken_ - 1) % kSlots];
  MutexLock lock(mu_);
  if (taken_ > released_) {
    ++released_;  // the chunk handed out last time is done with
    slot_free_.notify_one();
  }
  while (produced_ <= taken_ && !thread_ended_) lock.Wait(slot_ready_);
  if (produced_ == taken_) {
    // The thread ended without an end item: it caught an exception at this place in the stream.
    CUPMON_CHECK(thread_error_ != nullptr);
    std::rethrow_exception(thread_error_);
  }
  const DecodedChunk& s = slots_[taken_++ % kSlots];
  end_taken_ = s.end;
  return s;
}

}  // namespace cupmon::decoder
