// Writes a synthetic recording (CUPTI TEST DOUBLE, not GPU data) into a directory:
//   cupmon-make-sample tests/data/synthetic-sample   the small synthetic sample (golden tests write their own)
//   cupmon-make-sample /tmp/big 10000000          N records (WriteLarge), to time cupmon-decode
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cupmon/format/check.h"
#include "recording_builder.h"

namespace {

// A training-like mix for timing the decoder. Always on: kernels (64 mangled template names, four
// streams, two devices), memcpys (HtoD, DtoH, DtoD) and memsets, in ~4 MiB GPU buffers. In trace
// windows (3 GPU buffers of every 10, with BEGIN/END markers) also the API records: one runtime
// call per activity (a driver cuLaunchKernel for 1 kernel in 20), a cudaStreamSynchronize with no
// GPU activity per 32 launches, and an external correlation (annotation) per 64, in their own
// buffers after the GPU buffer as CUPTI delivers them. A calibration sample per buffer.
size_t WriteLarge(const std::string& dir, uint64_t records) {
  using namespace cupmon::testing;
  auto opts = WriterOptions(dir, "cupmon-large");
  opts.files.retention_bytes = 1ull << 40;
  cupmon::pb::RecordingHeader header = SyntheticHeader();
  auto* d1 = header.add_devices();
  d1->CopyFrom(header.devices(0));
  d1->set_id(1);
  cupmon::RecordingWriter w(opts, header);
  CUPMON_CHECK(w.Open().has_value());
  constexpr int kNames = 64;
  constexpr uint64_t kNameBase = 0x7f0000100000;
  std::vector<cupmon::pb::StringEntry> strings(kNames + 4);
  for (int i = 0; i < kNames; ++i) {
    // _ZN5model6layer07forwardILi16EEEvPKfPfi: model::layer0::forward<16>(float const*, ...)
    const std::string layer = "layer" + std::to_string(i);
    strings[i].set_pointer(kNameBase + 0x100u * i);
    strings[i].set_text("_ZN5model" + std::to_string(layer.size()) + layer + "7forwardILi" +
                        std::to_string(16 << (i % 4)) + "EEEvPKfPfi");
  }
  for (int i = 0; i < 4; ++i) {  // annotation labels (pointer = external id)
    strings[kNames + i].set_pointer(100 + i);
    strings[kNames + i].set_text("step/phase" + std::to_string(i));
  }
  w.AddStrings(strings);
  cupmon::pb::Calibration cal;
  auto* sample = cal.add_samples();

  uint64_t t = kT0, written = 0, lcg = 12345;
  uint32_t corr = 1, window = 0;
  auto next = [&lcg] {  // deterministic pseudo-random numbers
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(lcg >> 33);
  };
  BufferBuilder gpu, api;  // reused: one allocation each for the whole run
  for (uint64_t buffer = 0; written < records; ++buffer) {
    const bool in_window = buffer % 10 < 3;
    if (buffer % 10 == 0) {
      cupmon::pb::WindowMarker m;
      m.set_window_id(++window);
      m.set_edge(cupmon::pb::WindowMarker::BEGIN);
      m.set_source(cupmon::pb::TRIGGER_SOCKET);
      m.set_cupti_ns(t);
      w.WriteWindowMarker(m);
    }
    gpu.Clear();
    api.Clear();
    const uint64_t budget = records - written;
    while (gpu.records() < 19000 && gpu.records() + api.records() < budget) {
      const uint32_t r = next();
      const uint32_t stream = 7 + r % 4, device = (r >> 2) % 2;
      const uint64_t launch = t, begin = t + 4000, dur = 1000 + (r >> 4) % 20000;
      const uint32_t what = (r >> 8) % 100;
      uint32_t cbid = 211;
      if (what < 90) {
        const uint32_t name = (r >> 12) % kNames;
        gpu.Kernel(begin, begin + dur, corr, kNameBase + 0x100u * name, stream, device);
      } else if (what < 97) {
        const uint32_t copy_kind = what < 93 ? 1 : what < 95 ? 2 : 8;  // HtoD, DtoH, DtoD
        gpu.Memcpy(begin, begin + dur, corr, copy_kind, 4096u << (r % 10), stream);
        cbid = 41;
      } else {
        gpu.Memset(begin, begin + dur / 4, corr, 1u << 20, stream);
        cbid = 51;
      }
      if (in_window) {
        if (cbid == 211 && r % 20 == 0)
          api.Driver(launch, launch + 2500, corr, 307, 101 + r % 3);
        else
          api.Runtime(launch, launch + 3000, corr, cbid, 101 + r % 3);
        if (corr % 64 == 0) api.External(corr, 100 + (corr / 64) % 4);
        if (corr % 32 == 0) api.Runtime(launch + 3500, launch + 9000, ++corr, 131, 101);
      }
      ++corr;
      t += 1500;
    }
    w.WriteRawBuffer(gpu.bytes(), 1, 7);
    if (api.records()) w.WriteRawBuffer(api.bytes(), 0, 0);
    written += gpu.records() + api.records();
    sample->set_cupti_ns(t);
    sample->set_realtime_ns(static_cast<int64_t>(t) + 2000);
    sample->set_monotonic_ns(t - kT0);
    w.WriteCalibration(cal);
    if (buffer % 10 == 2) {
      cupmon::pb::WindowMarker m;
      m.set_window_id(window);
      m.set_edge(cupmon::pb::WindowMarker::END);
      m.set_source(cupmon::pb::TRIGGER_SOCKET);
      m.set_cupti_ns(t);
      m.set_note("duration");
      w.WriteWindowMarker(m);
    }
  }
  w.WriteStats(static_cast<int64_t>(t));
  w.Close(static_cast<int64_t>(t));
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  const bool help = argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0);
  if (help || (argc != 2 && argc != 3) || argv[1][0] == '-') {
    std::fprintf(help ? stdout : stderr,
                 "usage: %s DIR [RECORDS]\n"
                 "Writes a synthetic recording (CUPTI test double, not GPU data) into DIR: the small\n"
                 "sample, or RECORDS records of a training-like mix for timing cupmon-decode.\n"
                 "  %s /tmp/sample\n  %s /tmp/big 10000000\n",
                 argv[0], argv[0], argv[0]);
    return help ? 0 : 2;
  }
  char* end = nullptr;
  const unsigned long long records = argc == 3 ? std::strtoull(argv[2], &end, 10) : 0;
  if (argc == 3 && (end == argv[2] || *end != '\0' || records == 0)) {
    std::fprintf(stderr, "%s: RECORDS must be a positive number, not '%s'\n", argv[0], argv[2]);
    return 2;
  }
  const size_t n = argc == 3 ? WriteLarge(argv[1], records)
                             : cupmon::testing::WriteSampleRecording(argv[1]);
  std::printf("wrote a synthetic recording (%zu records, CUPTI test double) to %s\n", n, argv[1]);
  return 0;
}
