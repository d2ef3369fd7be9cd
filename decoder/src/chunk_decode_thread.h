// The reading half of ReadFileBytes: finds, checks and decompresses one file's chunks, either
// inline or on a thread of its own a few chunks ahead of the thread that walks them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/base/thread_annotations.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"

namespace cupmon::decoder {

// One good chunk in file order, with the damage the scan passed on the way to it; or the end of
// the file (`end`), with the damage after the last chunk. Raw-buffer chunks arrive decompressed
// into `records` (or with `decode_error` set); every other chunk type arrives as scanned, its
// payload still a view of the file for the consumer to parse (they are few and small).
struct DecodedChunk {
  std::vector<Damage> damage;
  bool end = false;
  uint8_t future_major = 0;  // end only: ChunkScanner::future_major()
  uint64_t position = 0;     // ChunkScanner::position() after this chunk (or at the end)
  ScannedChunk chunk;
  // kRawBuffer chunks only.
  bool short_prefix = false;  // payload shorter than the raw-buffer prefix: nothing decoded
  RawBufferPrefix prefix{};
  ByteBuffer records;  // bytes of words no selected field reads are indeterminate
  // The records are packed (ColumnSelection::pack) with `packed_with`, the selection they were
  // decoded with.
  bool packed = false;
  ColumnSelection packed_with;
  std::string decode_error;  // empty when `records` holds the decoded buffer
};

// Yields the chunks of one file's bytes, in order, to one consumer thread.
//
// Inline (background false), Next() scans and decodes the next chunk on the caller's thread.
// Background: a thread started by the constructor does that work up to kSlots - 1 chunks ahead
// of the consumer, into a fixed ring of kSlots DecodedChunk slots (the bound on memory: a few
// decoded buffers, whatever the file's size).
//
// Memory ordering: the ring's counters `produced_` and `released_` are guarded by `mu_`; a slot
// below `produced_` and not yet released belongs to the consumer, every other slot to the
// decoding thread, so the slots themselves need no lock. The thread touches `bytes` and its own
// scanner, codec and selection only; a new selection passes through `next_selection_` (mu_).
//
// Errors: damage and undecodable chunks are data (DecodedChunk), never exceptions. An exception
// on the decoding thread (std::bad_alloc) ends it and is rethrown by the Next() that reaches its
// place in the stream. The destructor stops the thread and joins it on every exit path, also
// while the consumer unwinds from an exception of its own.
class ChunkDecodeThread {
 public:
  // With the two threads' work per chunk about equal (summary, steps), each stalls whenever the
  // other runs a few chunks slow; the ring is deep enough that a few slow chunks on either side
  // do not stall the other. About 3-4 MiB a slot.
  static constexpr size_t kSlots = 8;

  // `keep`, when set, is the first column selection (SetColumnSelection). The chunks are those of
  // `bytes` from offset `start` on (ChunkScanner's), offsets counted from the start of `bytes`.
  ChunkDecodeThread(std::span<const uint8_t> bytes, bool background,
                    const ColumnSelection* keep = nullptr, uint64_t start = 0);
  ~ChunkDecodeThread();
  ChunkDecodeThread(const ChunkDecodeThread&) = delete;
  ChunkDecodeThread& operator=(const ChunkDecodeThread&) = delete;

  // The next chunk (or the end, then again the end). Valid until the next call. Consumer thread.
  const DecodedChunk& Next();

  // From the next chunk decoded on, raw buffers are decoded with `keep` (a partial columnar
  // inverse: RawBufferDecoder::Decode). Chunks already decoded ahead keep what they had: the caller
  // must read no more of any chunk than of the ones decoded with `keep`. Consumer thread.
  void SetColumnSelection(const ColumnSelection& keep);

 private:
  // Fills `out` with the next chunk or the end. Returns false at the end.
  bool Produce(DecodedChunk* out);
  void Run() noexcept;  // the decoding thread's loop

  ChunkScanner scanner_;
  RawBufferDecoder codec_;
  bool background_;
  // The selection Produce decodes with (the decoding thread's; inline, the caller's).
  bool use_selection_ = false;
  ColumnSelection selection_;
  DecodedChunk slots_[kSlots];
  bool end_taken_ = false;  // the consumer holds the end (it stays there)

  Mutex mu_;
  std::condition_variable slot_free_;   // the thread waits for the consumer to release a slot
  std::condition_variable slot_ready_;  // the consumer waits for the thread to fill one
  uint64_t produced_ CUPMON_GUARDED_BY(mu_) = 0;  // slots filled, in order
  uint64_t released_ CUPMON_GUARDED_BY(mu_) = 0;  // slots the consumer is done with
  uint64_t taken_ = 0;  // slots handed to the consumer (consumer thread only)
  bool stop_ CUPMON_GUARDED_BY(mu_) = false;  // the destructor asks the thread to end
  // next_selection_ waits for the thread.
  bool selection_changed_ CUPMON_GUARDED_BY(mu_) = false;
  ColumnSelection next_selection_ CUPMON_GUARDED_BY(mu_);
  bool thread_ended_ CUPMON_GUARDED_BY(mu_) = false;
  std::exception_ptr thread_error_;     // set before thread_ended_, read after it
  std::thread thread_;
};

}  // namespace cupmon::decoder
