// Launch-bound benchmark: N empty kernel launches; prints microseconds per launch.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void Empty() {}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 200000;
  for (int i = 0; i < 1000; ++i) Empty<<<1, 1>>>();  // warm-up: module load, buffers
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) Empty<<<1, 1>>>();
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  const auto t1 = std::chrono::steady_clock::now();
  const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
  std::printf("us_per_launch %.4f launches %ld\n", us, n);
  return 0;
}
