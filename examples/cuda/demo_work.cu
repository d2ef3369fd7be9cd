// The demo's CUDA program (tools/demo): a little training-like loop for cupmon-run to record, with
// no cupmon code in it. Per step: a forward and a backward kernel and an update; every 10 steps a
// copy to the host. Names and counts are what `cupmon-decode summary` then shows:
//   demo::Forward, demo::Backward, demo::Update: 200 launches each; 2 HtoD, 20 DtoH, 1 memset.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

namespace demo {
__global__ void Forward(const float* x, float* y, float w, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = w * x[i];
}
__global__ void Backward(const float* x, const float* y, float* g, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) g[i] = (y[i] - 1.0f) * x[i];
}
__global__ void Update(float* x, const float* g, float rate, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] -= rate * g[i];
}
}  // namespace demo

#define CHECK_CUDA(x)                                                                \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      std::fprintf(stderr, "demo_work: %s failed: %s\n", #x, cudaGetErrorString(e)); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main() {
  constexpr int kN = 1 << 20;  // 4 MiB of floats per array
  constexpr int kSteps = 200;
  constexpr int kThreads = 256;
  std::vector<float> host(kN, 0.5f);
  float *x = nullptr, *y = nullptr, *g = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kN * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, kN * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&g, kN * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(y, host.data(), kN * sizeof(float), cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemset(g, 0, kN * sizeof(float)));
  for (int step = 0; step < kSteps; ++step) {
    demo::Forward<<<kN / kThreads, kThreads>>>(x, y, 1.5f, kN);
    demo::Backward<<<kN / kThreads, kThreads>>>(x, y, g, kN);
    demo::Update<<<kN / kThreads, kThreads>>>(x, g, 0.01f, kN);
    if (step % 10 == 9) {
      CHECK_CUDA(cudaMemcpy(host.data(), x, kN * sizeof(float), cudaMemcpyDeviceToHost));
    }
  }
  CHECK_CUDA(cudaGetLastError());
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y));
  CHECK_CUDA(cudaFree(g));
  std::printf("demo_work: %d steps done (x[0] = %g)\n", kSteps, host[0]);
  return 0;
}
