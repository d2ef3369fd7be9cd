// RecordConsumer: what takes decoded records from the one record decoder, TraceBuilder, in the
// same pass as its rows (steps, for instance, read the kernels themselves).
#pragma once

#include <cstdint>
#include <span>

#include "cupmon/decoder/record_layout.h"
#include "cupmon.pb.h"

namespace cupmon::decoder {

// Called by TraceBuilder on the reading thread, in stream order, for one recording: the builder
// reads the header, fixes the record layouts and the column selection, and hands each raw buffer
// to its consumers with the decoder to walk it with. Single-threaded; the builder does not own
// its consumers.
class RecordConsumer {
 public:
  virtual ~RecordConsumer() = default;
  // The fields (FieldBit) OnRecord reads, fixed for the consumer's life: the builder's column
  // selection covers them, and a field not listed may hold bytes a partial read left unset.
  virtual uint64_t FieldsRead() const = 0;
  virtual void OnStrings(const pb::StringTable& /*table*/) {}
  virtual void OnWindowMarker(const pb::WindowMarker& /*marker*/) {}
  virtual void OnCalibration(const pb::Calibration& /*calibration*/) {}
  // One raw buffer's records, valid only during the call, to walk with `decoder` (whole or
  // packed, as the buffer came): decoder.Walk(records, ...). The builder walks them itself
  // afterwards, for its rows, when it builds any.
  virtual void OnRecords(const RecordDecoder& decoder, std::span<const uint8_t> records) = 0;
};

}  // namespace cupmon::decoder
