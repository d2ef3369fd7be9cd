// libFuzzer target over the reader (chunk scanning, decompression, parsing) and the record decoder
// with joins: any input must be reported and counted, never crash.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"

namespace {
class NullSink : public cupmon::decoder::RowSink {
 public:
  void OnRow(const cupmon::decoder::Row& row) override { sink_ += row.name.size() + row.duration; }
  uint64_t sink_ = 0;
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cupmon::decoder;
  NullSink sink;
  TraceBuilder builder(TraceFilter{}, &sink, /*horizon=*/64);
  ReadIntegrity integrity;
  SequenceTracker sequences;
  RecordingFile file{"fuzz.cupmon", size, 0};
  ReadFileBytes(std::span<const uint8_t>(data, size), file, builder, &integrity, &sequences);
  FinishSequences(sequences, &integrity);
  builder.Finish();
  return 0;
}
