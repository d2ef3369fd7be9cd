// The known answers shared by tests/gpu/gpu_scenarios.cu (which does the work on the GPU) and
// tests/gpu/check_gpu_scenarios.cc (which decodes the recording and compares): one source for both.
// Host-only C++17, no CUDA types.
#pragma once

#include <cstdint>

namespace cupmon::gpu_scenarios {

// CUPTI_ACTIVITY_MEMCPY_KIND_* (cupti_activity.h), repeated here so the .cu needs no CUPTI header.
inline constexpr uint32_t kHtoD = 1;
inline constexpr uint32_t kDtoH = 2;
inline constexpr uint32_t kDtoD = 8;
inline constexpr uint32_t kPtoP = 10;  // CUPTI_ACTIVITY_MEMCPY_KIND_PTOP

// ---- basic: copies, memsets, kernels with templated, namespaced and extern "C" names ----
struct CopySpec {
  uint32_t copy_kind;
  uint64_t bytes;
};
// In this order; the host side is pinned memory (one CUPTI record per call).
inline constexpr CopySpec kCopies[] = {
    {kHtoD, 1u << 20}, {kHtoD, 2u << 20}, {kHtoD, 4u << 10},   // HtoD: cudaMemcpy, cudaMemcpy, async
    {kDtoH, 1u << 20}, {kDtoH, 12u << 10},                     // DtoH: cudaMemcpy, async
    {kDtoD, 1u << 20}, {kDtoD, 256u << 10},                    // DtoD: cudaMemcpy, async
};
inline constexpr uint64_t kMemsets[] = {1u << 20, 512u << 10, 4u << 10};  // cudaMemset, x2 async
inline constexpr int kScaleLaunches = 300;
inline constexpr int kFillLaunches = 7;
inline constexpr int kPlainLaunches = 3;
// Exactly what the decoder must show (abi::__cxa_demangle of the names CUPTI reports).
inline constexpr const char* kScaleName = "void cupmon_test::Scale<float>(float*, float, int)";
inline constexpr const char* kFillName =
    "void cupmon_test::inner::Fill<unsigned int, 4>(unsigned int*, unsigned int, int)";
inline constexpr const char* kPlainName = "cupmon_plain_kernel";  // extern "C": not mangled

// ---- timing: a kernel that spins for kSpinNs on %globaltimer, timed with CUDA events ----
inline constexpr int kSpinRuns = 5;                 // timed runs, after one untimed warm-up run
inline constexpr uint64_t kSpinNs = 2'000'000;      // 2 ms
inline constexpr double kSpinTolerance = 0.02;      // |cupmon - events| / events, median of runs
inline constexpr const char* kSpinName = "cupmon_test::Spin(unsigned long long)";

// ---- streams: kStreams non-blocking streams, stream i gets StreamLaunches(i) launches of
// cupmon_test::StreamWork<i>, issued round-robin ----
inline constexpr int kStreams = 6;
constexpr int StreamLaunches(int i) { return 20 + 15 * i; }
inline constexpr const char* kStreamNames[kStreams] = {
    "void cupmon_test::StreamWork<0>(int*)", "void cupmon_test::StreamWork<1>(int*)",
    "void cupmon_test::StreamWork<2>(int*)", "void cupmon_test::StreamWork<3>(int*)",
    "void cupmon_test::StreamWork<4>(int*)", "void cupmon_test::StreamWork<5>(int*)"};

// ---- graph: kGraphNodes kernels captured from a stream, the graph launched kGraphLaunches times
// inside a trace window with the runtime kind ----
inline constexpr int kGraphNodes = 8;
inline constexpr int kGraphLaunches = 25;
inline constexpr const char* kGraphNodeName = "cupmon_test::graph::Node(int*, int)";
inline constexpr const char* kGraphLaunchApi = "cudaGraphLaunch";

// ---- threads: kThreads host threads launch at once, thread t ThreadLaunches(t) times
// cupmon_test::ThreadWork<t> on its own stream ----
inline constexpr int kThreads = 8;
constexpr int ThreadLaunches(int t) { return 1000 + 250 * t; }
inline constexpr const char* kThreadNames[kThreads] = {
    "void cupmon_test::ThreadWork<0>(int*)", "void cupmon_test::ThreadWork<1>(int*)",
    "void cupmon_test::ThreadWork<2>(int*)", "void cupmon_test::ThreadWork<3>(int*)",
    "void cupmon_test::ThreadWork<4>(int*)", "void cupmon_test::ThreadWork<5>(int*)",
    "void cupmon_test::ThreadWork<6>(int*)", "void cupmon_test::ThreadWork<7>(int*)"};

// ---- fork (run under cupmon-run): kForkBefore launches, not synchronised, then two children
// that do CUDA-free work (one ends with _exit, one with exit, which runs the atexit handlers),
// then kForkAfter more launches ----
inline constexpr int kForkBefore = 20000;
inline constexpr int kForkAfter = 5000;
inline constexpr int kForkChildTimeoutMs = 20000;
inline constexpr const char* kForkNames[2] = {"void cupmon_test::ForkWork<0>(int*)",
                                              "void cupmon_test::ForkWork<1>(int*)"};

// ---- rotation: small files and a file-count retention; launches continue until the monitor has
// written kRotationTargetBytes (so several files were deleted), at most kRotationMaxLaunches ----
inline constexpr uint64_t kRotationFileBytes = 1u << 20;  // the monitor's minimum file size
inline constexpr uint32_t kRotationKeepFiles = 3;
inline constexpr uint64_t kRotationTargetBytes = 11u << 19;  // 5.5 MiB: >= 5 files, >= 2 deleted
inline constexpr int kRotationBatch = 20000;
inline constexpr int kRotationMaxLaunches = 2'000'000;
inline constexpr const char* kRotationName = "void cupmon_test::RotationWork<7>(int*)";

// ---- multigpu: one process, two devices. Device d gets DeviceLaunches(d) launches of
// cupmon_test::DeviceWork<d> and one HtoD copy of kDeviceHtoD[d]; then the kPeerCopies (peer access
// enabled both ways where cudaDeviceCanAccessPeer allows it). Copy d -> e reads device d's source
// buffer from offset 0 and lands at the next free offset of device e's destination buffer, so that
// each copy is verified on the host. The other work of the scenario is listed below too: it is
// part of the recording. ----
inline constexpr int kDevices = 2;
constexpr int DeviceLaunches(int d) { return d == 0 ? 40 : 70; }
inline constexpr const char* kDeviceWorkNames[kDevices] = {"void cupmon_test::DeviceWork<0>(int*)",
                                                          "void cupmon_test::DeviceWork<1>(int*)"};
inline constexpr uint64_t kDeviceHtoD[kDevices] = {512u << 10, 768u << 10};
struct PeerCopySpec {
  uint32_t src_device;
  uint32_t dst_device;
  uint64_t bytes;
};
// In this order; the first copy of each direction uses cudaMemcpyPeer, the others
// cudaMemcpyPeerAsync.
inline constexpr PeerCopySpec kPeerCopies[] = {
    {0, 1, 1u << 20}, {0, 1, 256u << 10}, {0, 1, 4u << 20},  // dev0 -> dev1
    {1, 0, 2u << 20}, {1, 0, 64u << 10},                     // dev1 -> dev0
};
// Device d's peer-copy source: memset to a byte, then the HtoD copy over its start.
inline constexpr uint64_t kPeerSourceBytes[kDevices] = {4u << 20, 2u << 20};
// Device d's peer-copy destination: zeroed by a memset, read back whole by one DtoH copy.
constexpr uint64_t PeerDestinationBytes(int d) {
  uint64_t n = 0;
  for (const auto& c : kPeerCopies)
    if (c.dst_device == static_cast<uint32_t>(d)) n += c.bytes;
  return n;
}
// Per device: the launch counter is zeroed by a memset and read back by a DtoH copy.
inline constexpr uint64_t kDeviceCounterBytes = 4;

}  // namespace cupmon::gpu_scenarios
