// The entries the decoder fuzzers drive: DecodeFuzzInput reads every byte string as a cupmon file
// (chunk scan, decompression, parsing) and decodes it with joins and reordering;
// DecodeRawBufferFuzzInput decodes it as one raw CUPTI buffer, DecodeStepsFuzzInput finds steps
// in it. The libFuzzer targets and the gcc-built regression test
// (tests/decoder/fuzz_regression_test.cc) call them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/torch_monitor_dump.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::fuzz {

class DiscardingSink : public decoder::RowSink {
 public:
  // Touches what a report would read, so sanitizers see every view.
  void OnRow(const decoder::Row& row) override {
    for (char c : row.name) sum_ += static_cast<unsigned char>(c);
    for (char c : row.api.name) sum_ += static_cast<unsigned char>(c);
    for (char c : row.annotation) sum_ += static_cast<unsigned char>(c);
    // Names out of damaged string tables: the short form must never crash or grow.
    if (row.type == decoder::RowType::kKernel) {
      const std::string short_name = decoder::ShortKernelName(row.name);
      if (short_name.size() > row.name.size()) __builtin_trap();
      sum_ += short_name.size();
    }
    for (char c : row.range) sum_ += static_cast<unsigned char>(c);
    for (char c : row.range_domain) sum_ += static_cast<unsigned char>(c);
    sum_ += row.duration + row.launched + row.nvtx.depth;
    ++rows_;
  }
  bool WantsRanges() const override { return true; }  // NVTX rows too (MARKER records)
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
  RecordingFile file{"fuzz.cupmon", size, 0, {}};
  ReadFileBytes(std::span<const uint8_t>(data, size), file, builder, &integrity, &sequences);
  FinishSequences(sequences, &integrity);
  builder.Finish();
  return sink.rows();
}

// Hands `visitor` one raw CUPTI buffer (the input after its flags byte) as a recording would: a
// CUPTI 13.0 header, a string table, calibration and a window around it. Flags: bit 5 the buffer
// twice (ids and strings seen again).
inline void FeedRawBuffer(decoder::ChunkVisitor& visitor, uint8_t flags,
                          std::span<const uint8_t> buffer) {
  using namespace cupmon::decoder;
  pb::RecordingHeader header;
  header.set_cupti_api_version(130001);
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!sizes.Size(k)) continue;
    auto* rs = header.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(sizes.Size(k));
  }
  const std::string path = "fuzz-records";
  const ChunkOrigin at{&path, 0, 0};
  visitor.OnHeader(header, at);
  pb::StringTable strings;
  const std::pair<uint64_t, const char*> kStrings[] = {{0x10, "_Z6vecAddPKfS0_Pfi"},
                                                       {0x20, "_ZN5flash14softmax_kernelIfEEvPT_i"},
                                                       {0x30, "_Z"},
                                                       {0x40, "not mangled"},
                                                       {7, "annotation \"label\"\n"}};
  for (const auto& [pointer, text] : kStrings) {
    auto* e = strings.add_entries();
    e->set_pointer(pointer);
    e->set_text(text);
  }
  visitor.OnStrings(strings);
  pb::Calibration calibration;
  auto* sample = calibration.add_samples();
  sample->set_cupti_ns(1000);
  sample->set_realtime_ns(2000);
  visitor.OnCalibration(calibration);
  pb::WindowMarker begin;
  begin.set_window_id(1);
  begin.set_edge(pb::WindowMarker::BEGIN);
  begin.set_cupti_ns(1500);
  visitor.OnWindowMarker(begin);
  visitor.OnRawBuffer(RawBufferPrefix{}, buffer, at);
  if (flags & 32) {
    visitor.OnStrings(strings);
    visitor.OnRawBuffer(RawBufferPrefix{}, buffer, at);
  }
  pb::WindowMarker end = begin;
  end.set_edge(pb::WindowMarker::END);
  end.set_cupti_ns(UINT64_MAX / 2);
  visitor.OnWindowMarker(end);
}

// The record-level entry: the chunk framing's CRCs make almost every mutation of a file a damaged
// chunk, so records inside a valid chunk are rarely reached by DecodeFuzzInput. Here the input is
// one raw CUPTI buffer (after a flags byte) handed straight to a TraceBuilder (FeedRawBuffer).
// Flags: bit 0 --mangled, bit 1 no reordering, bits 2-3 the join horizon (1, 4, 64, 4096
// records), bit 4 a time filter (window 1), bit 5 the buffer twice.
inline uint64_t DecodeRawBufferFuzzInput(const uint8_t* data, size_t size) {
  using namespace cupmon::decoder;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  TraceFilter filter;
  filter.mangled = flags & 1;
  if (flags & 16) filter.window = 1;
  static constexpr size_t kHorizons[] = {1, 4, 64, 4096};
  DiscardingSink sink;
  TraceBuilder builder(std::move(filter), &sink, kHorizons[(flags >> 2) & 3],
                       (flags & 2) ? ReorderOptions{} : ReorderOptions{16, 1000});
  FeedRawBuffer(builder, flags, std::span<const uint8_t>(data + 1, size - 1));
  builder.Finish();
  return sink.rows();
}

// Reads what a steps report prints of `list`, so that sanitizers see it: each step's numbers,
// label and devices, the windows, the pattern's names, and the slow steps over them. Returns a
// sum of it all, to keep the reads.
inline uint64_t TouchSteps(const decoder::StepList& list, const decoder::StepOptions& options) {
  uint64_t sum = list.activities + list.kernels_before + list.unresolved_names;
  for (const decoder::Step& s : list.steps) {
    sum += s.number + s.duration() + s.label.size();
    for (const decoder::StepDeviceTime& d : s.devices) sum += d.busy_ns + d.max_gap_ns;
  }
  for (const decoder::StepWindow& w : list.windows) sum += w.id + w.source.size();
  for (const std::string& name : list.signature_names) sum += name.size();
  const std::vector<uint64_t> medians = decoder::RollingMedians(list.steps, options.rolling);
  for (size_t i : decoder::SlowSteps(list.steps, medians, options)) {
    if (i >= list.steps.size()) __builtin_trap();  // a slow step that is not a step
    sum += i;
  }
  return sum;
}

// The steps entry: the same input as DecodeRawBufferFuzzInput, handed to the step finder of
// `cupmon-decode steps` and the kineto export, its kernel-pattern detector learning from a few
// kernels. Flags: bit 5 the buffer twice; bits 6-7 the steps' source (auto, the kernel pattern,
// annotations, auto). Returns the activities it read (kernels, memcpys and memsets).
inline uint64_t DecodeStepsFuzzInput(const uint8_t* data, size_t size) {
  using namespace cupmon::decoder;
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  static constexpr StepSource kSources[] = {StepSource::kAuto, StepSource::kPattern,
                                            StepSource::kAnnotation, StepSource::kAuto};
  StepOptions options;
  options.source = kSources[flags >> 6];
  options.detector.first_attempt = 8;
  options.detector.max_learn_kernels = 64;
  options.detector.min_cycles = 2;
  options.detector.reorder_kernels = 16;
  StepFinder finder(options);
  TraceBuilder decoder(&finder.consumer());
  FeedRawBuffer(decoder, flags, std::span<const uint8_t>(data + 1, size - 1));
  const StepList list = finder.Finish();
  [[maybe_unused]] volatile uint64_t read = TouchSteps(list, options);
  return list.activities;
}

// A PyTorch CUPTI monitor dump: the input is read both as a metadata file and as a raw-buffer file
// (chunk headers, lengths, resynchronisation, calibration pairs), decoded under a CUPTI 13.0 dump
// header with joins and reordering.
inline uint64_t DecodeTorchDumpFuzzInput(const uint8_t* data, size_t size) {
  using namespace cupmon::decoder;
  const std::span<const uint8_t> bytes(data, size);
  auto meta = ParseTorchDumpMeta(bytes, "fuzz-meta");
  TorchDumpMeta m;
  m.cupti_version = meta ? meta->cupti_version : 130001;
  DiscardingSink sink;
  TraceBuilder builder(TraceFilter{}, &sink, /*horizon=*/64, ReorderOptions{16, 1000});
  const std::string path = "fuzz-raw";
  builder.OnHeader(TorchDumpHeader(m, 1), ChunkOrigin{&path, 0, 0});
  ReadIntegrity integrity;
  ReadTorchRawBytes(bytes, RecordingFile{path, size, 1, {}}, builder, &integrity);
  builder.Finish();
  return sink.rows();
}

}  // namespace cupmon::fuzz
