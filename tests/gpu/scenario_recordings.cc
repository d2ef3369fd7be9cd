// TEST DOUBLE for check_gpu_scenarios (no GPU): writes, for every scenario of gpu_scenarios.h, the
// recording and expect.txt that a correct GPU run produces, built from synthetic CUPTI 13 records
// with the mangled kernel names nvcc gives the kernels in gpu_scenarios.cu. With --wrong, each
// scenario gets one realistic mistake (a lost kernel, a run timed 3% longer than its events, a
// kernel on the wrong stream, a graph launch split in two, another pid, a miscounted deletion, a
// peer copy in the wrong direction) that the checker must catch; multigpu gets two more wrong
// variants, for the ways CUPTI might report peer copies that the checker must refuse
// (multigpu-peer-as-memcpy: plain MEMCPY records without device ids; multigpu-peer-twice: a MEMCPY
// and a MEMCPY2 record per copy). The ctest gpu_scenarios_checker_selftest runs the checker on both
// sets.
//   scenario_recordings OUTDIR [--wrong]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cupmon/base/check.h"
#include "gpu_scenarios.h"
#include "recording_builder.h"

namespace {

namespace gs = cupmon::gpu_scenarios;
using cupmon::RecordingWriter;
using cupmon::testing::BufferBuilder;
using cupmon::testing::Field;
using cupmon::testing::kT0;

bool g_wrong = false;

// The device-side names in gpu_scenarios.cu's cubin (readelf -s of `nvcc -cubin -arch=sm_90`).
constexpr const char* kMangledScale = "_ZN11cupmon_test5ScaleIfEEvPT_S1_i";
constexpr const char* kMangledFill = "_ZN11cupmon_test5inner4FillIjLi4EEEvPT_S2_i";
constexpr const char* kMangledSpin = "_ZN11cupmon_test4SpinEy";
constexpr const char* kMangledNode = "_ZN11cupmon_test5graph4NodeEPii";
constexpr const char* kMangledRotation = "_ZN11cupmon_test12RotationWorkILi7EEEvPi";
std::string MangledStream(int i) { return "_ZN11cupmon_test10StreamWorkILi" + std::to_string(i) + "EEEvPi"; }
std::string MangledThread(int t) { return "_ZN11cupmon_test10ThreadWorkILi" + std::to_string(t) + "EEEvPi"; }
std::string MangledFork(int i) { return "_ZN11cupmon_test8ForkWorkILi" + std::to_string(i) + "EEEvPi"; }
std::string MangledDevice(int d) { return "_ZN11cupmon_test10DeviceWorkILi" + std::to_string(d) + "EEEvPi"; }

constexpr uint32_t kCbidGraphLaunch = 311;       // cudaGraphLaunch_v10000
constexpr uint32_t kCbidStreamSynchronize = 131;  // cudaStreamSynchronize_v3020

// One scenario's recording: a writer, kernel-name pointers, and a clock that moves forward.
class Scenario {
 public:
  // The recording of scenario `name` goes to root/dir_name (root/name when dir_name is empty).
  Scenario(const std::string& root, const std::string& name, uint64_t file_bytes = 64ull << 20,
           uint32_t keep_files = 0, const std::string& dir_name = "", uint32_t devices = 1)
      : dir_(root + "/" + (dir_name.empty() ? name : dir_name)),
        expect_((std::filesystem::create_directories(dir_), dir_ + "/expect.txt")),
        writer_(Options(dir_ + "/rec", file_bytes, keep_files), Header(devices)) {
    CUPMON_CHECK(writer_.Open().has_value());
    expect_ << "scenario_" << name << " 1\n";
  }
  uint64_t Name(const std::string& mangled) {
    const uint64_t ptr = 0x7f0000000000ull + 0x100 * ++names_;
    cupmon::pb::StringEntry e;
    e.set_id(static_cast<uint32_t>(names_));
    e.set_pointer(ptr);
    e.set_text(mangled);
    writer_.AddStrings({&e, 1});
    return ptr;
  }
  // A GPU record [now, now + ns) with the next correlation id.
  uint64_t Next(uint64_t ns) {
    const uint64_t s = now_;
    now_ += ns + 100;
    return s;
  }
  uint32_t Corr() { return ++corr_; }
  void Kernel(uint64_t name, uint32_t stream, uint64_t ns = 1000, uint32_t corr = 0, uint32_t graph = 0,
              uint32_t device = 0) {
    const uint64_t s = Next(ns);
    gpu_.Add(cupmon::decoder::kKindConcurrentKernel,
             {{Field::kStart, s}, {Field::kEnd, s + ns}, {Field::kCorrelationId, corr ? corr : Corr()},
              {Field::kNamePointer, name}, {Field::kStreamId, stream}, {Field::kContextId, 1 + device},
              {Field::kDeviceId, device},
              {Field::kGraphId, graph}, {Field::kGridX, 1}, {Field::kGridY, 1}, {Field::kGridZ, 1},
              {Field::kBlockX, 32}, {Field::kBlockY, 1}, {Field::kBlockZ, 1}});
    if (gpu_.records() >= 1000) Flush();
  }
  void Memcpy(uint32_t kind, uint64_t bytes, uint32_t stream = 7) {
    const uint64_t s = Next(5000);
    gpu_.Memcpy(s, s + 5000, Corr(), kind, bytes, stream);
  }
  void Memset(uint64_t bytes, uint32_t stream = 7) {
    const uint64_t s = Next(2000);
    gpu_.Memset(s, s + 2000, Corr(), bytes, stream);
  }
  // Multi-device variants: a memset or a copy on `device` (context 1 + device).
  void DeviceMemset(uint64_t bytes, uint32_t device, uint32_t stream = 7) {
    const uint64_t s = Next(2000);
    gpu_.Add(cupmon::decoder::kKindMemset,
             {{Field::kStart, s}, {Field::kEnd, s + 2000}, {Field::kCorrelationId, Corr()}, {Field::kBytes, bytes},
              {Field::kStreamId, stream}, {Field::kContextId, 1 + device}, {Field::kDeviceId, device}});
  }
  void DeviceMemcpy(uint32_t copy_kind, uint64_t bytes, uint32_t device, uint32_t stream = 7, uint32_t corr = 0) {
    const uint64_t s = Next(5000);
    gpu_.Add(cupmon::decoder::kKindMemcpy,
             {{Field::kStart, s}, {Field::kEnd, s + 5000}, {Field::kCorrelationId, corr ? corr : Corr()},
              {Field::kCopyKind, copy_kind}, {Field::kBytes, bytes}, {Field::kStreamId, stream},
              {Field::kContextId, 1 + device}, {Field::kDeviceId, device}});
  }
  // A MEMCPY2 record (CUpti_ActivityMemcpyPtoP4), reported on the source device.
  void PeerMemcpy(uint64_t bytes, uint32_t src, uint32_t dst, uint32_t stream = 7, uint32_t corr = 0) {
    const uint64_t s = Next(5000);
    gpu_.Add(cupmon::decoder::kKindMemcpy2,
             {{Field::kStart, s}, {Field::kEnd, s + 5000}, {Field::kCorrelationId, corr ? corr : Corr()},
              {Field::kCopyKind, gs::kPtoP}, {Field::kBytes, bytes}, {Field::kStreamId, stream},
              {Field::kContextId, 1 + src}, {Field::kDeviceId, src}, {Field::kSrcDeviceId, src},
              {Field::kDstDeviceId, dst}});
  }
  BufferBuilder& api() { return api_; }
  void Flush() {
    if (gpu_.records()) writer_.WriteRawBuffer(gpu_.bytes(), 1, 0);
    if (api_.records()) writer_.WriteRawBuffer(api_.bytes(), 0, 0);
    gpu_.Clear();
    api_.Clear();
  }
  void Window(bool begin) {
    Flush();
    cupmon::pb::WindowMarker m;
    m.set_window_id(1);
    m.set_edge(begin ? cupmon::pb::WindowMarker::BEGIN : cupmon::pb::WindowMarker::END);
    m.set_source(cupmon::pb::TRIGGER_API);
    m.set_cupti_ns(Next(0));
    writer_.WriteWindowMarker(m);
  }
  template <typename T>
  void Expect(const std::string& key, const T& value) { expect_ << key << ' ' << value << '\n'; }
  RecordingWriter& writer() { return writer_; }
  void Close() {
    Flush();
    writer_.WriteStats(static_cast<int64_t>(now_));
    writer_.Close(static_cast<int64_t>(now_));
  }

 private:
  static cupmon::RecordingWriterOptions Options(const std::string& dir, uint64_t file_bytes, uint32_t keep) {
    auto o = cupmon::testing::WriterOptions(dir, "cupmon-scenario");
    o.files.file_bytes = file_bytes;
    o.files.retention_files = keep;
    o.encoding = cupmon::Encoding::kStored;  // predictable file sizes for rotation
    return o;
  }
  static cupmon::pb::RecordingHeader Header(uint32_t devices) {
    auto h = cupmon::testing::SyntheticHeader();
    h.set_synthetic(false);  // the checker insists on a real header; this double stands in for one
    for (auto d = static_cast<uint32_t>(h.devices_size()); d < devices; ++d) {
      auto* dev = h.add_devices();
      *dev = h.devices(0);
      dev->set_id(d);
    }
    return h;
  }
  std::string dir_;
  std::ofstream expect_;
  RecordingWriter writer_;
  BufferBuilder gpu_, api_;
  uint64_t now_ = kT0 + 1'000'000;
  uint32_t corr_ = 0;
  int names_ = 0;
};

void Basic(const std::string& root) {
  Scenario s(root, "basic");
  const uint64_t scale = s.Name(kMangledScale), fill = s.Name(kMangledFill), plain = s.Name(gs::kPlainName);
  for (const auto& c : gs::kCopies) s.Memcpy(c.copy_kind, c.bytes);
  for (int i = 0; i < gs::kScaleLaunches - (g_wrong ? 1 : 0); ++i) s.Kernel(scale, 7);
  for (int i = 0; i < gs::kFillLaunches; ++i) s.Kernel(fill, 7);
  for (uint64_t b : gs::kMemsets) s.Memset(b, 13);
  for (int i = 0; i < gs::kPlainLaunches; ++i) s.Kernel(plain, 7);
  s.Close();
}

void Timing(const std::string& root) {
  Scenario s(root, "timing");
  const uint64_t spin = s.Name(kMangledSpin);
  s.Kernel(spin, 13, 3000);  // warm-up
  for (int i = 0; i < gs::kSpinRuns; ++i) {
    // --wrong: cupmon's duration of one run 3% longer than the events that bracket it (an event
    // interval that jumps, with cupmon's duration unchanged, is what a real H200 does now and
    // then, and must pass).
    s.Kernel(spin, 13, g_wrong && i == 2 ? gs::kSpinNs * 103 / 100 : gs::kSpinNs + 1200);
    // Events bracket the kernel: a little longer; one run's much longer, as seen on the H200.
    s.Expect("spin_event_ns_" + std::to_string(i),
             i == 3 ? gs::kSpinNs * 1037 / 1000 : gs::kSpinNs + 4000);
  }
  s.Close();
}

void Streams(const std::string& root) {
  Scenario s(root, "streams");
  s.Memset(gs::kStreams * 4);
  std::vector<uint64_t> names;
  for (int i = 0; i < gs::kStreams; ++i) names.push_back(s.Name(MangledStream(i)));
  for (int k = 0; k < gs::StreamLaunches(gs::kStreams - 1); ++k)
    for (int i = 0; i < gs::kStreams; ++i)
      if (k < gs::StreamLaunches(i)) s.Kernel(names[i], g_wrong && i == 3 && k == 5 ? 14u + 4 : 14u + i);
  s.Memcpy(gs::kDtoH, gs::kStreams * 4);
  s.Close();
}

void Graph(const std::string& root) {
  Scenario s(root, "graph");
  s.Memset(gs::kGraphNodes * 4);
  const uint64_t node = s.Name(kMangledNode);
  s.Window(true);
  for (int j = 0; j < gs::kGraphLaunches; ++j) {
    const uint32_t corr = s.Corr();
    const uint64_t t = s.Next(3000);
    s.api().Runtime(t, t + 3000, corr, kCbidGraphLaunch);
    for (int i = 0; i < gs::kGraphNodes; ++i)
      s.Kernel(node, 15, 1500, g_wrong && j == 4 && i >= 4 ? corr + 100000 : corr, 3);
  }
  const uint64_t t = s.Next(50000);
  s.api().Runtime(t, t + 50000, s.Corr(), kCbidStreamSynchronize);
  s.Window(false);
  s.Memcpy(gs::kDtoH, gs::kGraphNodes * 4);
  s.Close();
}

void Threads(const std::string& root) {
  Scenario s(root, "threads");
  s.Memset(gs::kThreads * 4);
  std::vector<uint64_t> names;
  for (int t = 0; t < gs::kThreads; ++t) names.push_back(s.Name(MangledThread(t)));
  for (int k = 0; k < gs::ThreadLaunches(gs::kThreads - 1); ++k)
    for (int t = 0; t < gs::kThreads; ++t)
      if (k < gs::ThreadLaunches(t) - (g_wrong && t == 6 ? 1 : 0)) s.Kernel(names[t], 20u + t);
  s.Memcpy(gs::kDtoH, gs::kThreads * 4);
  s.Close();
}

void Fork(const std::string& root) {
  Scenario s(root, "fork");
  s.Memset(8);
  const uint64_t before = s.Name(MangledFork(0)), after = s.Name(MangledFork(1));
  for (int k = 0; k < gs::kForkBefore; ++k) s.Kernel(before, 7);
  for (int k = 0; k < gs::kForkAfter; ++k) s.Kernel(after, 7);
  s.Memcpy(gs::kDtoH, 8);
  s.Expect("child_quick_ms", 205);
  s.Expect("child_exit_ms", 230);
  s.Expect("pid", cupmon::testing::kTestPid + (g_wrong ? 1 : 0));
  s.Close();
}

void Rotation(const std::string& root) {
  Scenario s(root, "rotation", gs::kRotationFileBytes, gs::kRotationKeepFiles);
  s.Memset(4);
  const uint64_t name = s.Name(kMangledRotation);
  long long launches = 0;
  while (s.writer().stats().compressed_bytes() < gs::kRotationTargetBytes) {
    for (int k = 0; k < 1000; ++k) s.Kernel(name, 7);
    launches += 1000;
  }
  s.Memcpy(gs::kDtoH, 4);
  s.Expect("launches", launches + (g_wrong ? 1 : 0));
  s.Close();
}

// How the multigpu recording reports the peer copies.
enum class PeerReport {
  kMemcpy2,        // one MEMCPY2 record per copy (right; --wrong moves one to the wrong direction)
  kMemcpyOnly,     // one plain MEMCPY record (copy kind PTOP, no device ids) per copy
  kMemcpyAndMemcpy2,  // both, with the same correlation id
};

void Multigpu(const std::string& root, const std::string& dir_name, PeerReport peers) {
  Scenario s(root, "multigpu", 64ull << 20, 0, dir_name, gs::kDevices);
  s.Expect("device_count", gs::kDevices);
  s.Expect("p2p_access", 1);
  for (int d = 0; d < gs::kDevices; ++d) {
    const auto dev = static_cast<uint32_t>(d);
    s.DeviceMemset(gs::kDeviceCounterBytes, dev);
    s.DeviceMemset(gs::kPeerSourceBytes[d], dev);
    s.DeviceMemset(gs::PeerDestinationBytes(d), dev);
    s.DeviceMemcpy(gs::kHtoD, gs::kDeviceHtoD[d], dev);
  }
  std::vector<uint64_t> names;
  for (int d = 0; d < gs::kDevices; ++d) names.push_back(s.Name(MangledDevice(d)));
  for (int d = 0; d < gs::kDevices; ++d)
    for (int k = 0; k < gs::DeviceLaunches(d); ++k) {
      const bool moved = g_wrong && peers == PeerReport::kMemcpy2 && d == 0 && k == 17;  // on device 1
      s.Kernel(names[d], 20u + d, 1000, 0, 0, moved ? 1u : static_cast<uint32_t>(d));
    }
  for (const auto& c : gs::kPeerCopies) {
    const bool swapped = g_wrong && peers == PeerReport::kMemcpy2 && c.bytes == (64u << 10);
    const uint32_t corr = s.Corr();
    if (peers != PeerReport::kMemcpy2) s.DeviceMemcpy(gs::kPtoP, c.bytes, c.src_device, 20 + c.src_device, corr);
    if (peers != PeerReport::kMemcpyOnly)
      s.PeerMemcpy(c.bytes, swapped ? c.dst_device : c.src_device, swapped ? c.src_device : c.dst_device,
                   20 + c.src_device, corr);
  }
  for (int d = 0; d < gs::kDevices; ++d) {
    s.DeviceMemcpy(gs::kDtoH, gs::PeerDestinationBytes(d), static_cast<uint32_t>(d));
    s.DeviceMemcpy(gs::kDtoH, gs::kDeviceCounterBytes, static_cast<uint32_t>(d));
  }
  s.Close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (argc == 3 && std::strcmp(argv[2], "--wrong") != 0) || argc > 3) {
    std::fprintf(stderr, "usage: scenario_recordings OUTDIR [--wrong]\n");
    return 2;
  }
  g_wrong = argc == 3;
  const std::string root = argv[1];
  std::filesystem::remove_all(root);
  Basic(root);
  Timing(root);
  Streams(root);
  Graph(root);
  Threads(root);
  Fork(root);
  Rotation(root);
  Multigpu(root, "multigpu", PeerReport::kMemcpy2);
  if (g_wrong) {
    Multigpu(root, "multigpu-peer-as-memcpy", PeerReport::kMemcpyOnly);
    Multigpu(root, "multigpu-peer-twice", PeerReport::kMemcpyAndMemcpy2);
  }
  std::printf("scenario_recordings: wrote %s recordings into %s\n", g_wrong ? "wrong" : "correct", root.c_str());
  return 0;
}
