// GPU test program with known work: 2 HtoD copies, 300 launches of one templated kernel in a
// namespace, 1 DtoH copy, 2 memsets. Mode "plain" (run under cupmon-run) or "api DIR" (C API).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "cupmon/cupmon.h"

namespace cupmon_test {
template <typename T>
__global__ void Scale(T* data, T factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
}  // namespace cupmon_test

#define CHECK_CUDA(x)                                                                 \
  do {                                                                                \
    cudaError_t e = (x);                                                              \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "known_work: %s failed: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char** argv) {
  const bool api = argc >= 3 && std::strcmp(argv[1], "api") == 0;
  if (api) {
    cupmon_config c;
    cupmon_config_init(&c);
    c.output_dir = argv[2];
    if (cupmon_start(&c) != 0) {
      std::fprintf(stderr, "known_work: cupmon_start: %s\n", cupmon_last_error());
      return 1;
    }
  }
  constexpr int kN = 1 << 18;  // 256K floats = 1 MiB
  std::vector<float> host(2 * kN, 1.0f);
  float* a = nullptr;
  float* b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, kN * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, 2 * kN * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(a, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));      // 1 MiB
  CHECK_CUDA(cudaMemcpy(b, host.data(), 2 * kN * sizeof(float), cudaMemcpyHostToDevice));  // 2 MiB
  for (int i = 0; i < 300; ++i) cupmon_test::Scale<float><<<kN / 256, 256>>>(a, 1.0001f, kN);
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaMemcpy(host.data(), a, kN * sizeof(float), cudaMemcpyDeviceToHost));      // 1 MiB
  CHECK_CUDA(cudaMemset(a, 0, kN * sizeof(float)));                                       // 1 MiB
  CHECK_CUDA(cudaMemset(b, 0, kN * sizeof(float) / 2));                                   // 512 KiB
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(a));
  CHECK_CUDA(cudaFree(b));
  if (api && cupmon_stop() != 0) {
    std::fprintf(stderr, "known_work: cupmon_stop: %s\n", cupmon_last_error());
    return 1;
  }
  std::printf("known_work: done\n");
  return 0;
}
