// Where cupmon looks for libcupti, in order. The loader (monitor/src/cupti_loader.cc) opens the
// first that loads; cupmon-run points NVTX's injection (NVTX_INJECTION64_PATH) at the same one,
// so that a process never holds two copies of libcupti.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

namespace cupmon {

// Bare sonames first: dlopen returns a libcupti already in the process (a framework's own copy)
// or finds one on the library path; then the toolkit under $CUDA_HOME, $CUDA_PATH and
// /usr/local/cuda.
inline std::vector<std::string> CuptiLibraryCandidates() {
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  const char* roots[] = {std::getenv("CUDA_HOME"), std::getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (const char* root : roots) {
    if (!root || !*root) continue;
    for (const char* sub : {"/lib64/libcupti.so", "/extras/CUPTI/lib64/libcupti.so",
                            "/targets/x86_64-linux/lib/libcupti.so"})
      candidates.push_back(std::string(root) + sub);
  }
  return candidates;
}

}  // namespace cupmon
