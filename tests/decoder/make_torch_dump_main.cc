// Writes a PyTorch CUPTI monitor dump (cupti_monitor_meta.bin + cupti_monitor_raw_buffers.bin, the
// layout of torch.profiler._cupti_monitor) from the real CUPTI 13.0 buffers of tests/data, and
// optionally the same buffers as a cupmon recording, to compare and time the two readers:
//   cupmon-make-torch-dump OUT_DIR [--window] [--copies N] [--cupmon DIR]
// --window takes h200-cupti13-window.raw.zst (with API records) instead of the always-on buffers;
// --copies repeats the buffers N times (chunk indexes and calibration pairs go on increasing, the
// records' own times repeat). Real GPU bytes; the dump's metadata is written here, not by PyTorch.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cupmon/base/check.h"
#include "cupmon/decoder/torch_monitor_dump.h"
#include "real_cupti_bytes.h"
#include "recording_builder.h"

int main(int argc, char** argv) {
  using namespace cupmon;
  std::string out, cupmon_dir, raw_name = "h200-cupti13-alwayson.raw.zst";
  long copies = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--window")) raw_name = "h200-cupti13-window.raw.zst";
    else if (!std::strcmp(argv[i], "--copies") && i + 1 < argc) copies = std::atol(argv[++i]);
    else if (!std::strcmp(argv[i], "--cupmon") && i + 1 < argc) cupmon_dir = argv[++i];
    else if (out.empty() && argv[i][0] != '-') out = argv[i];
    else out.clear(), i = argc;
  }
  if (out.empty() || copies < 1) {
    std::fprintf(stderr, "usage: cupmon-make-torch-dump OUT_DIR [--window] [--copies N] [--cupmon DIR]\n");
    return 2;
  }
  const auto raw = testing::Unzstd(testing::RealCuptiPath(raw_name));
  const auto buffers = testing::SplitAtRecords(raw);
  if (buffers.empty()) {
    std::fprintf(stderr, "cannot read %s\n", testing::RealCuptiPath(raw_name).c_str());
    return 1;
  }
  constexpr uint64_t kTicks = 1700000000000000000ull;  // identity pairs: the times are CUPTI ns
  const std::string json =
      "{\"activities\":[10,1,2],\"buffer_size\":4194304,\"cuda_version\":\"13.0\","
      "\"cupti_version\":130001,\"flush_period_ns\":1000000000,\"hes_enabled\":false,"
      "\"libcupti_path\":\"/usr/local/cuda/lib64/libcupti.so.13\",\"meta_version\":2,"
      "\"raw_buffer_dump\":true,\"session_start_approx_ns\":" + std::to_string(kTicks) +
      ",\"session_start_calibrated_unix_ns\":" + std::to_string(kTicks) +
      ",\"session_start_unix_ns\":1795938001000000000,\"timestamp_mode\":\"approximate_clock\"}";
  testing::WriteAll(out + "/" + decoder::kTorchMetaFileName, decoder::EncodeTorchMeta(json));
  std::vector<uint8_t> dump;
  uint32_t index = 0;
  for (long c = 0; c < copies; ++c) {
    for (const auto b : buffers) {
      const uint64_t t = kTicks + (index + 1) * 100'000'000ull;
      decoder::AppendTorchChunk(decoder::TorchDumpChunk{index, 7, 0x5555deadbeefull, t, t, b}, &dump);
      ++index;
    }
  }
  testing::WriteAll(out + "/" + decoder::kTorchRawFileName, dump);
  std::printf("%s: %u chunks, %zu bytes of raw buffers\n", out.c_str(), index, dump.size());
  if (cupmon_dir.empty()) return 0;
  pb::RecordingHeader h = testing::SyntheticHeader(testing::kTestRecordingId, 0);
  h.set_synthetic(false);
  h.clear_devices();
  auto opts = testing::WriterOptions(cupmon_dir, "cupmon-h200");
  opts.files.retention_bytes = 1ull << 40;
  RecordingWriter w(opts, h);
  CUPMON_CHECK(w.Open().has_value());
  for (long c = 0; c < copies; ++c)
    for (const auto b : buffers) w.WriteRawBuffer(b, 1, 7);
  w.Close(0);
  std::printf("%s: the same buffers as a cupmon recording\n", cupmon_dir.c_str());
  return 0;
}
