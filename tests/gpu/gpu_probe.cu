// Exit status 0 when a CUDA device is usable, 77 (ctest's skip code here) when none is: GPU tests
// run it first, so that on a machine without a GPU they show as "Skipped", not "Failed".
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::printf("no usable CUDA device (%s): GPU test skipped\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  std::printf("%d CUDA device(s)\n", count);
  return 0;
}
