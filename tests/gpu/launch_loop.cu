// Launch-bound benchmark programs for tools/gpu-bench-overhead.
//   launch_loop [N=200000]        N empty-kernel launches; prints microseconds per launch over the
//                                 whole loop, and the fastest of its 10 equal segments (each timed
//                                 from its first launch to the next segment's; the last one ends
//                                 with the synchronize), which leaves out transient interference
//   launch_loop graph [REPLAYS]   a CUDA graph of 1000 empty kernels replayed REPLAYS times (300);
//                                 prints kernels per second (the highest record rate we can make)
// Both print `kernels_total` (warm-up included), the number of kernel records a monitor should hold.
// With LAUNCH_LOOP_WINDOW=1 the program opens a cupmon trace window (the configured window kinds,
// 10 min) after the warm-up, through cupmon_window_open of the libcupmon.so that
// CUDA_INJECTION64_PATH injected; it fails when that is impossible.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void Empty() {}

namespace {

constexpr int kGraphKernels = 1000;

int Fail(const char* what, cudaError_t e) {
  std::fprintf(stderr, "launch_loop: %s: %s\n", what, cudaGetErrorString(e));
  return 1;
}

// Opens a window in the injected cupmon (already loaded: the warm-up ran cuInit). 0 on success.
int OpenWindow() {
  const char* lib = std::getenv("CUDA_INJECTION64_PATH");
  if (!lib || !*lib) {
    std::fprintf(stderr, "launch_loop: LAUNCH_LOOP_WINDOW=1 needs CUDA_INJECTION64_PATH (libcupmon.so)\n");
    return 1;
  }
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    std::fprintf(stderr, "launch_loop: %s is not loaded: %s\n", lib, dlerror());
    return 1;
  }
  using OpenFn = int (*)(uint32_t, const char*);
  using ErrorFn = const char* (*)();
  auto open = reinterpret_cast<OpenFn>(dlsym(h, "cupmon_window_open"));
  auto error = reinterpret_cast<ErrorFn>(dlsym(h, "cupmon_last_error"));
  if (!open || !error) {
    std::fprintf(stderr, "launch_loop: %s has no cupmon_window_open\n", lib);
    return 1;
  }
  const int id = open(600000, nullptr);
  if (id <= 0) {
    std::fprintf(stderr, "launch_loop: cupmon_window_open: %s\n", error());
    return 1;
  }
  std::printf("window %d open\n", id);
  return 0;
}

int Loop(long n, bool window) {
  for (int i = 0; i < 1000; ++i) Empty<<<1, 1>>>();  // warm-up: module load, buffers
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return Fail("warm-up", e);
  if (window && OpenWindow() != 0) return 1;
  constexpr long kSegments = 10;
  std::chrono::steady_clock::time_point marks[kSegments + 1];
  const auto t0 = std::chrono::steady_clock::now();
  marks[0] = t0;
  for (long s = 0; s < kSegments; ++s) {
    const long end = n * (s + 1) / kSegments;
    for (long i = n * s / kSegments; i < end; ++i) Empty<<<1, 1>>>();
    if (s + 1 < kSegments) marks[s + 1] = std::chrono::steady_clock::now();
  }
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) return Fail("loop", e);
  const auto t1 = std::chrono::steady_clock::now();
  marks[kSegments] = t1;
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / static_cast<double>(n);
  double best = 0;
  for (long s = 0; s < kSegments; ++s) {
    const long count = n * (s + 1) / kSegments - n * s / kSegments;
    const double seg = std::chrono::duration<double, std::micro>(marks[s + 1] - marks[s]).count() /
                       static_cast<double>(count > 0 ? count : 1);
    if (s == 0 || seg < best) best = seg;
  }
  std::printf("us_per_launch %.4f min_segment_us %.4f launches %ld kernels_total %ld\n", us, best, n,
              n + 1000);
  return 0;
}

int GraphLoop(long replays, bool window) {
  cudaStream_t s;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  if (cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); e != cudaSuccess)
    return Fail("cudaStreamCreate", e);
  if (cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal); e != cudaSuccess)
    return Fail("cudaStreamBeginCapture", e);
  for (int i = 0; i < kGraphKernels; ++i) Empty<<<1, 1, 0, s>>>();
  if (cudaError_t e = cudaStreamEndCapture(s, &graph); e != cudaSuccess) return Fail("cudaStreamEndCapture", e);
  if (cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess)
    return Fail("cudaGraphInstantiate", e);
  constexpr int kWarmup = 3;
  for (int i = 0; i < kWarmup; ++i) cudaGraphLaunch(exec, s);
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) return Fail("warm-up", e);
  if (window && OpenWindow() != 0) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < replays; ++i) cudaGraphLaunch(exec, s);
  if (cudaError_t e = cudaStreamSynchronize(s); e != cudaSuccess) return Fail("replays", e);
  const auto t1 = std::chrono::steady_clock::now();
  const double sec = std::chrono::duration<double>(t1 - t0).count();
  const long kernels = replays * kGraphKernels;
  std::printf("kernels_per_s %.0f kernels %ld seconds %.4f kernels_total %ld\n",
              static_cast<double>(kernels) / sec, kernels, sec, kernels + kWarmup * kGraphKernels);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* w = std::getenv("LAUNCH_LOOP_WINDOW");
  const bool window = w && std::strcmp(w, "1") == 0;
  if (argc > 1 && std::strcmp(argv[1], "graph") == 0)
    return GraphLoop(argc > 2 ? std::atol(argv[2]) : 300, window);
  return Loop(argc > 1 ? std::atol(argv[1]) : 200000, window);
}
