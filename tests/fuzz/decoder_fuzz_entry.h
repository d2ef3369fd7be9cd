// The one entry the decoder fuzzer drives: every byte string is read as a cupmon file (chunk scan,
// decompression, parsing) and decoded with joins and reordering. The libFuzzer target and the
// gcc-built regression test (tests/decoder/fuzz_regression_test.cc) both call it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::fuzz {

class DiscardingSink : public decoder::RowSink {
 public:
  // Touches what a report would read, so sanitizers see every view.
  void OnRow(const decoder::Row& row) override {
    for (char c : row.name) sum_ += static_cast<unsigned char>(c);
    for (char c : row.api_name) sum_ += static_cast<unsigned char>(c);
    for (char c : row.annotation) sum_ += static_cast<unsigned char>(c);
    sum_ += row.duration + row.launched;
    ++rows_;
  }
  uint64_t rows() const { return rows_; }

 private:
  uint64_t sum_ = 0, rows_ = 0;
};

// Returns the number of rows emitted (for tests); never crashes on any input.
inline uint64_t DecodeFuzzInput(const uint8_t* data, size_t size) {
  using namespace cupmon::decoder;
  DiscardingSink sink;
  // Small horizons so that short inputs reach eviction, release and out-of-order paths.
  TraceBuilder builder(TraceFilter{}, &sink, /*horizon=*/64, ReorderOptions{16, 1000});
  ReadIntegrity integrity;
  SequenceTracker sequences;
  RecordingFile file{"fuzz.cupmon", size, 0};
  ReadFileBytes(std::span<const uint8_t>(data, size), file, builder, &integrity, &sequences);
  FinishSequences(sequences, &integrity);
  builder.Finish();
  return sink.rows();
}

}  // namespace cupmon::fuzz
