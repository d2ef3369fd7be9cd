// Known device memory work for the MEMORY2 / MEMORY_POOL check (tests/gpu/check_memory.py): plain
// cudaMalloc/cudaFree of known sizes, then cudaMallocFromPoolAsync/cudaFreeAsync on a pool made by
// cudaMemPoolCreate with a release threshold, trimmed and destroyed. Run under cupmon-run with
// --kinds ...,memory2,memory_pool. Prints each operation as it does it, then the expected figures,
// and as its last line one JSON object with every operation (address, bytes) for the checker.
// Sizes are multiples of 2 MiB, so that no allocation granularity can change what is recorded.
#include <cuda_runtime.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kMiB = 1ull << 20;

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "memory_check: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

struct Op {
  const char* what;  // "allocation" or "release", as cupmon-decode's jsonl names them
  const char* api;
  const char* label;  // the buffer's name in the printout
  uint64_t address;
  uint64_t bytes;  // the allocation's size (a release: the size of what it frees)
  bool pool;       // from the pool (cudaMallocFromPoolAsync / cudaFreeAsync)
};

std::vector<Op> ops;
uint64_t in_use = 0, peak = 0;
size_t peak_op = 0;  // index of the operation that reached the peak

void Did(const char* what, const char* api, const char* label, void* p, uint64_t bytes, bool pool) {
  const bool alloc = what[0] == 'a';
  in_use = alloc ? in_use + bytes : in_use - bytes;
  ops.push_back(Op{what, api, label, reinterpret_cast<uint64_t>(p), bytes, pool});
  if (in_use > peak) {
    peak = in_use;
    peak_op = ops.size() - 1;
  }
  std::printf("op %zu: %-24s %-2s %4" PRIu64 " MiB at 0x%" PRIx64 " -> %4" PRIu64 " MiB in use\n",
              ops.size(), api, label, bytes / kMiB, reinterpret_cast<uint64_t>(p), in_use / kMiB);
}

}  // namespace

int main() {
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaFree(nullptr));  // the context first: its own setup is not ours to count
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));

  // Plain allocations: 64, 32, free 64, 128 (the peak: 160 MiB), free 32, free 128.
  void *a = nullptr, *b = nullptr, *c = nullptr;
  CHECK_CUDA(cudaMalloc(&a, 64 * kMiB));
  Did("allocation", "cudaMalloc", "a", a, 64 * kMiB, false);
  CHECK_CUDA(cudaMalloc(&b, 32 * kMiB));
  Did("allocation", "cudaMalloc", "b", b, 32 * kMiB, false);
  CHECK_CUDA(cudaFree(a));
  Did("release", "cudaFree", "a", a, 64 * kMiB, false);
  CHECK_CUDA(cudaMalloc(&c, 128 * kMiB));
  Did("allocation", "cudaMalloc", "c", c, 128 * kMiB, false);
  CHECK_CUDA(cudaMemset(c, 0, 128 * kMiB));  // touch it: the allocation is real
  CHECK_CUDA(cudaFree(b));
  Did("release", "cudaFree", "b", b, 32 * kMiB, false);
  CHECK_CUDA(cudaFree(c));
  Did("release", "cudaFree", "c", c, 128 * kMiB, false);

  // A pool of our own, keeping up to 64 MiB when freed (the release threshold), so that the frees
  // return memory to the pool rather than to the driver: 16 and 8 MiB from it, both freed.
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool;
  CHECK_CUDA(cudaMemPoolCreate(&pool, &props));
  std::printf("pool: cudaMemPoolCreate\n");
  uint64_t threshold = 64 * kMiB;
  CHECK_CUDA(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void *d = nullptr, *e = nullptr;
  CHECK_CUDA(cudaMallocFromPoolAsync(&d, 16 * kMiB, pool, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  Did("allocation", "cudaMallocFromPoolAsync", "d", d, 16 * kMiB, true);
  CHECK_CUDA(cudaMallocFromPoolAsync(&e, 8 * kMiB, pool, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  Did("allocation", "cudaMallocFromPoolAsync", "e", e, 8 * kMiB, true);
  CHECK_CUDA(cudaMemsetAsync(d, 1, 16 * kMiB, stream));
  CHECK_CUDA(cudaFreeAsync(d, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  Did("release", "cudaFreeAsync", "d", d, 16 * kMiB, true);
  CHECK_CUDA(cudaFreeAsync(e, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  Did("release", "cudaFreeAsync", "e", e, 8 * kMiB, true);
  CHECK_CUDA(cudaMemPoolTrimTo(pool, 0));
  std::printf("pool: cudaMemPoolTrimTo 0\n");
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaMemPoolDestroy(pool));
  std::printf("pool: cudaMemPoolDestroy\n");
  CHECK_CUDA(cudaDeviceSynchronize());

  size_t allocations = 0, releases = 0;
  uint64_t allocated = 0;
  for (const Op& op : ops) {
    if (op.what[0] == 'a') ++allocations, allocated += op.bytes;
    else ++releases;
  }
  std::printf("expected: %zu allocations (%" PRIu64 " MiB), %zu releases on device %d; peak %" PRIu64
              " MiB, reached by op %zu (%s %s) and held until op %zu (%s %s); %" PRIu64
              " MiB in use at the end; 1 pool created, trimmed and destroyed\n",
              allocations, allocated / kMiB, releases, device, peak / kMiB, peak_op + 1,
              ops[peak_op].api, ops[peak_op].label, peak_op + 2, ops[peak_op + 1].api,
              ops[peak_op + 1].label, in_use / kMiB);
  std::string json = "{\"device\":" + std::to_string(device) +
                     ",\"peak_bytes\":" + std::to_string(peak) +
                     ",\"peak_op\":" + std::to_string(peak_op) +
                     ",\"in_use_bytes\":" + std::to_string(in_use) +
                     ",\"pools_created\":1,\"pools_trimmed\":1,\"pools_destroyed\":1,\"ops\":[";
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    json += std::string(i ? "," : "") + "{\"operation\":\"" + op.what + "\",\"api\":\"" + op.api +
            "\",\"label\":\"" + op.label + "\",\"address\":" + std::to_string(op.address) +
            ",\"bytes\":" + std::to_string(op.bytes) + ",\"pool\":" + (op.pool ? "true" : "false") +
            "}";
  }
  std::printf("%s]}\n", json.c_str());
  return 0;
}
