// GPU test program for NVTX ranges (issue 19): run under cupmon-run, which points NVTX's injection
// at libcupti. Inside one trace window (opened and closed through the C API) it names its threads,
// nests push/pop ranges, launches known kernels inside and outside them, places a mark, uses a
// domain, a start/end range and a second thread. tests/gpu/check_nvtx.py checks the decoder's
// output against the counts below, which the program also prints as JSON on stdout.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "cupmon/cupmon.h"

namespace nvtx_test {
__global__ void ForwardKernel(float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += 1.0f;
}
__global__ void BackwardKernel(float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] -= 0.5f;
}
__global__ void OutsideKernel(float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] *= 0.5f;
}
__global__ void WorkerKernel(float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] *= 2.0f;
}
__global__ void DomainKernel(float* d, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] += 3.0f;
}
}  // namespace nvtx_test

#define CHECK_CUDA(x)                                                                 \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "nvtx_ranges: %s failed: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

constexpr int kSteps = 10, kForward = 3, kBackward = 2, kWorker = 5;
constexpr int kN = 1 << 16;

int main() {
  float* a = nullptr;
  float* b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kN * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, kN * sizeof(float)));
  CHECK_CUDA(cudaDeviceSynchronize());
  if (cupmon_window_open(20000, nullptr) < 0) {
    std::fprintf(stderr, "nvtx_ranges: cupmon_window_open: %s\n", cupmon_last_error());
    return 1;
  }
  nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "nvtx-main");
  nvtxMarkA("begin");
  for (int s = 0; s < kSteps; ++s) {
    char name[32];
    std::snprintf(name, sizeof name, "step %d", s);
    nvtxRangePushA(name);
    nvtxRangePushA("forward");
    for (int k = 0; k < kForward; ++k) nvtx_test::ForwardKernel<<<kN / 256, 256>>>(a, kN);
    nvtxRangePop();
    nvtxRangePushA("backward");
    for (int k = 0; k < kBackward; ++k) nvtx_test::BackwardKernel<<<kN / 256, 256>>>(a, kN);
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtx_test::OutsideKernel<<<kN / 256, 256>>>(a, kN);
  CHECK_CUDA(cudaGetLastError());

  // A second thread, named, with ranges of its own on its own stream.
  int worker_rc = 0;
  std::thread worker([&] {
    nvtxNameOsThreadA(static_cast<uint32_t>(syscall(SYS_gettid)), "nvtx-worker");
    cudaStream_t st;
    if (cudaStreamCreate(&st) != cudaSuccess) {
      worker_rc = 1;
      return;
    }
    for (int k = 0; k < kWorker; ++k) {
      nvtxRangePushA("worker");
      nvtx_test::WorkerKernel<<<kN / 256, 256, 0, st>>>(b, kN);
      nvtxRangePop();
    }
    if (cudaStreamSynchronize(st) != cudaSuccess || cudaStreamDestroy(st) != cudaSuccess)
      worker_rc = 1;
  });
  worker.join();
  if (worker_rc) {
    std::fprintf(stderr, "nvtx_ranges: the worker thread's CUDA calls failed\n");
    return 1;
  }

  // A domain of its own, and a start/end range.
  nvtxDomainHandle_t domain = nvtxDomainCreateA("cupmon-test");
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "domain-range";
  nvtxDomainRangePushEx(domain, &attr);
  nvtx_test::DomainKernel<<<kN / 256, 256>>>(a, kN);
  nvtxDomainRangePop(domain);
  const nvtxRangeId_t id = nvtxRangeStartA("async-range");
  nvtx_test::OutsideKernel<<<kN / 256, 256>>>(a, kN);
  nvtxRangeEnd(id);
  nvtxDomainDestroy(domain);
  CHECK_CUDA(cudaDeviceSynchronize());
  if (cupmon_window_close() < 0) {
    std::fprintf(stderr, "nvtx_ranges: cupmon_window_close: %s\n", cupmon_last_error());
    return 1;
  }
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  std::printf(
      "{\"steps\": %d, \"forward_kernels_per_step\": %d, \"backward_kernels_per_step\": %d, "
      "\"worker_kernels\": %d, \"outside_kernels\": 2, \"domain_kernels\": 1, \"marks\": 1}\n",
      kSteps, kForward, kBackward, kWorker);
  return 0;
}
