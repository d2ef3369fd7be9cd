// RecordWalker: raw buffers decoded and their records handed out by class.
#include "record_walker.h"

#include <string>

#include "join_stage.h"
#include "memory_rows.h"
#include "nvtx_rows.h"

namespace cupmon::decoder {

RecordWalker::RecordWalker(TraceCounts* counts, JoinStage* join, NvtxRows* nvtx,
                           MemoryRows* memory, uint64_t fields_read)
    : counts_(counts), join_(join), nvtx_(nvtx), memory_(memory), fields_read_(fields_read) {}

RecordWalker::~RecordWalker() = default;

void RecordWalker::AddConsumer(RecordConsumer* consumer) {
  consumers_.push_back(consumer);
  consumer_fields_ |= consumer->FieldsRead();
}

void RecordWalker::OnHeader(const pb::RecordingHeader& header) {
  // Every file restates the header; the first one read defines the layouts.
  if (have_header_) return;
  have_header_ = true;
  header_ = header;
  RecordSizeTable sizes;
  for (const auto& rs : header.record_sizes()) sizes.Set(rs.kind(), rs.size());
  decoder_ = std::make_unique<RecordDecoder>(sizes, header.cupti_api_version());
}

bool RecordWalker::RecordWordsRead(ColumnSelection* keep) const {
  if (!decoder_) return false;
  *keep = decoder_->WordsRead(fields_read_ | consumer_fields_, /*pack=*/true);
  return true;
}

void RecordWalker::OnPackedRawBuffer(std::span<const uint8_t> records,
                                     const ColumnSelection& packed_with, const ChunkOrigin& at) {
  // Packed buffers come only after RecordWordsRead, so after the header that made decoder_.
  if (!decoder_) return OnRawBuffer(records, at);  // counted and noted there
  if (!packed_decoder_ || !(packed_with_ == packed_with)) {
    packed_decoder_ = std::make_unique<RecordDecoder>(decoder_->Packed(packed_with));
    packed_with_ = packed_with;
  }
  WalkBuffer(*packed_decoder_, records, at);
}

void RecordWalker::OnRawBuffer(std::span<const uint8_t> records, const ChunkOrigin& at) {
  if (!decoder_) {
    if (!join_) return;
    ++counts_->raw_buffers;
    ++counts_->buffers_stopped;
    counts_->Note(*at.path + " at offset " + std::to_string(at.offset) +
                  ": raw buffer before any recording header; not decoded");
    return;
  }
  WalkBuffer(*decoder_, records, at);
}

void RecordWalker::WalkBuffer(const RecordDecoder& decoder, std::span<const uint8_t> records,
                              const ChunkOrigin& at) {
  for (RecordConsumer* c : consumers_) c->OnRecords(decoder, records);
  if (!join_) return;
  ++counts_->raw_buffers;
  const auto r = decoder.Walk(records, [this](const RecordLayout& layout, const FieldReader& f,
                                              const uint8_t* rec) { AddRecord(layout, f, rec); });
  counts_->records_not_decoded += r.skipped;
  if (!r.complete) {
    ++counts_->buffers_stopped;
    ++counts_->stopped_by_kind[r.stop.kind];
    counts_->Note(*at.path + " at offset " + std::to_string(at.offset) +
                  ": buffer stopped at byte " + std::to_string(r.stop.offset) + " of " +
                  std::to_string(records.size()) + ": " + r.stop.why);
  }
  if (r.records) {
    for (uint32_t k = 0; k < by_kind_.size(); ++k) {
      if (!by_kind_[k]) continue;
      counts_->records_by_kind[k] += by_kind_[k];
      by_kind_[k] = 0;
    }
  }
  join_->EmitDue();
}

void RecordWalker::AddRecord(const RecordLayout& layout, const FieldReader& f,
                             const uint8_t* rec) {
  ++counts_->records;
  ++by_kind_[layout.kind];  // layouts only exist for kinds < kMaxKind
  const RecordClass cls = layout.record_class;
  if (cls == RecordClass::kExternalCorrelation) {
    join_->AddExternal(f, rec);
    return;
  }
  if (cls == RecordClass::kOverhead) {
    ++counts_->overhead_records;
    const uint64_t s = f.Get(rec, Field::kStart), e = f.Get(rec, Field::kEnd);
    if (TimedSpan(s, e)) counts_->overhead_ns += e - s;
    return;
  }
  if (cls == RecordClass::kSynchronization && join_->sync_rows()) {
    join_->AddSync(layout, f, rec);
    return;
  }
  if (cls == RecordClass::kMarker) {
    nvtx_->Add(f, rec);
    return;
  }
  if (cls == RecordClass::kMemory || cls == RecordClass::kMemoryPool) {
    memory_->Add(layout, f, rec);
    return;
  }
  if (cls != RecordClass::kKernel && cls != RecordClass::kMemcpy && cls != RecordClass::kMemset &&
      cls != RecordClass::kApi)
    return;  // synchronization (unless the sink wants it), CUDA events, names: counted only
  join_->Add(layout, f, rec);
}

}  // namespace cupmon::decoder
