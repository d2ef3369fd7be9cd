// RecordWalker: the trace builder's decoding, on its (reading) thread: the recording's record
// layouts, its raw buffers walked with them, and each record handed to the part of its class.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/record_consumer.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_counts.h"

namespace cupmon::decoder {

class JoinStage;
class MemoryRows;
class NvtxRows;

// The first header read fixes the record layouts (a RecordDecoder); a raw buffer before it is
// counted and noted, never decoded. Each raw buffer, whole or packed (decoded with the words
// RecordWordsRead asked for), goes first to the consumers (RecordConsumer::OnRecords), then
// record by record to the builder's parts: GPU, API, external correlation and (when the sink
// wants them) synchronization records to the join stage, NVTX markers to the NVTX rows, memory
// records to the memory rows; overhead records are counted here, other kinds only by kind. After
// each buffer the join stage emits what is due. Without parts (all null: a builder without rows)
// the buffers go to the consumers alone and nothing is counted. The parts and counts are the
// builder's and outlive this. Single-threaded.
class RecordWalker {
 public:
  // `fields_read`: the fields (FieldBit) the parts read of a record, beside the consumers'.
  RecordWalker(TraceCounts* counts, JoinStage* join, NvtxRows* nvtx, MemoryRows* memory,
               uint64_t fields_read);
  ~RecordWalker();
  RecordWalker(const RecordWalker&) = delete;
  RecordWalker& operator=(const RecordWalker&) = delete;

  // Adds a consumer of the records, before the read begins.
  void AddConsumer(RecordConsumer* consumer);
  const std::vector<RecordConsumer*>& consumers() const { return consumers_; }

  void OnHeader(const pb::RecordingHeader& header);
  // The first header read (empty before).
  const pb::RecordingHeader& header() const { return header_; }
  // The words of the layouts that the parts and the consumers read, packed; false before a
  // header (ChunkVisitor::RecordWordsRead).
  bool RecordWordsRead(ColumnSelection* keep) const;
  void OnRawBuffer(std::span<const uint8_t> records, const ChunkOrigin& at);
  void OnPackedRawBuffer(std::span<const uint8_t> records, const ColumnSelection& packed_with,
                         const ChunkOrigin& at);

 private:
  // One raw buffer's records, whole (decoder_) or packed (packed_decoder_).
  void WalkBuffer(const RecordDecoder& decoder, std::span<const uint8_t> records,
                  const ChunkOrigin& at);
  void AddRecord(const RecordLayout& layout, const FieldReader& f, const uint8_t* rec);

  TraceCounts* counts_;
  JoinStage* join_;
  NvtxRows* nvtx_;
  MemoryRows* memory_;
  uint64_t fields_read_;
  std::vector<RecordConsumer*> consumers_;
  uint64_t consumer_fields_ = 0;  // FieldsRead of every consumer
  pb::RecordingHeader header_;
  bool have_header_ = false;
  std::unique_ptr<RecordDecoder> decoder_;
  // decoder_->Packed(packed_with_), for the packed buffers decoded with that selection.
  std::unique_ptr<RecordDecoder> packed_decoder_;
  ColumnSelection packed_with_;
  // Records by kind in the buffer being walked (TraceCounts::records_by_kind is a map for
  // readers).
  std::array<uint64_t, RecordSizeTable::kMaxKind> by_kind_{};
};

}  // namespace cupmon::decoder
