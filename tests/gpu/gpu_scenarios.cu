// GPU workloads with known answers (tests/gpu/gpu_scenarios.h), one scenario per process:
//   gpu_scenarios SCENARIO OUTDIR
// basic, timing, streams, graph, threads, rotation and multigpu start cupmon through the C API into
// OUTDIR/rec; fork must run under cupmon-run (injection). Values measured at run time (CUDA event
// times, the launch count, the pid) go to OUTDIR/expect.txt as "key value" lines for
// check_gpu_scenarios. multigpu exits 77 (skipped) where fewer than two GPUs are present.
// Device-side counters confirm that every launch really ran, so the expected counts are facts.
#include <cuda_runtime.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/cupmon.h"
#include "gpu_scenarios.h"

namespace cupmon_test {

template <typename T>
__global__ void Scale(T* data, T factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

namespace inner {
template <typename T, int kStride>
__global__ void Fill(T* data, T value, int n) {
  const int i = (blockIdx.x * blockDim.x + threadIdx.x) * kStride;
  if (i < n) data[i] = value;
}
}  // namespace inner

__device__ __forceinline__ unsigned long long GlobalTimerNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void Spin(unsigned long long ns) {
  const unsigned long long t0 = GlobalTimerNs();
  while (GlobalTimerNs() - t0 < ns) {
  }
}

// Each launch adds 1 to counter[I], so the host can check how many launches ran.
template <int I>
__global__ void StreamWork(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter + I, 1);
}

namespace graph {
__global__ void Node(int* counter, int i) {
  if (threadIdx.x == 0) atomicAdd(counter + i, 1);
}
}  // namespace graph

template <int I>
__global__ void ThreadWork(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter + I, 1);
}

template <int I>
__global__ void ForkWork(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter + I, 1);
}

template <int I>
__global__ void RotationWork(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

// Launched on device D only; each launch adds 1 to that device's counter.
template <int D>
__global__ void DeviceWork(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

}  // namespace cupmon_test

extern "C" __global__ void cupmon_plain_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

namespace {

namespace gs = cupmon::gpu_scenarios;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "gpu_scenarios: FAILED: %s\n", what.c_str());
  std::fflush(nullptr);
  std::_Exit(1);  // no atexit handlers: a failed run needs no orderly recording
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) Die(std::string(what) + ": " + cudaGetErrorString(e));
}
#define CK(x) Check((x), #x)

// "key value" lines for the checker.
class ExpectFile {
 public:
  explicit ExpectFile(const std::string& path) : out_(path) {
    if (!out_) Die("cannot write " + path);
  }
  template <typename T>
  void Put(const std::string& key, const T& value) {
    out_ << key << ' ' << value << '\n';
    out_.flush();
    std::printf("expect %s %s\n", key.c_str(), std::to_string(value).c_str());
  }

 private:
  std::ofstream out_;
};

// Device counters, zeroed (the caller frees them).
int* Counters(int n) {
  int* c = nullptr;
  CK(cudaMalloc(&c, n * sizeof(int)));
  CK(cudaMemset(c, 0, n * sizeof(int)));
  CK(cudaDeviceSynchronize());
  return c;
}

void ExpectCounters(const int* device, int n, const std::vector<int>& expected, const char* what) {
  std::vector<int> host(n, -1);
  CK(cudaMemcpy(host.data(), device, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    if (host[i] != expected[i])
      Die(std::string(what) + ": device counter " + std::to_string(i) + " is " +
          std::to_string(host[i]) + ", expected " + std::to_string(expected[i]) + " launches");
  }
}

// ---- basic ----
void Basic() {
  constexpr int kN = 1 << 18;  // 256K floats = 1 MiB
  constexpr size_t kHostBytes = 2u << 20;
  float* a = nullptr;
  float* b = nullptr;
  char* host = nullptr;
  int* counter = nullptr;
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaMallocHost(&host, kHostBytes));  // pinned: one record per copy
  std::memset(host, 1, kHostBytes);
  CK(cudaMalloc(&a, 2u << 20));
  CK(cudaMalloc(&b, 2u << 20));
  CK(cudaMalloc(&counter, 4u << 10));
  // Copies in the order of gs::kCopies.
  CK(cudaMemcpy(a, host, 1u << 20, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, host, 2u << 20, cudaMemcpyHostToDevice));
  CK(cudaMemcpyAsync(a, host, 4u << 10, cudaMemcpyHostToDevice, s));
  CK(cudaStreamSynchronize(s));
  for (int i = 0; i < gs::kScaleLaunches; ++i)
    cupmon_test::Scale<float><<<kN / 256, 256>>>(a, 1.0001f, kN);
  for (int i = 0; i < gs::kFillLaunches; ++i)
    cupmon_test::inner::Fill<unsigned int, 4>
        <<<kN / 256 / 4, 256>>>(reinterpret_cast<unsigned int*>(b), 7u, kN);
  CK(cudaGetLastError());
  CK(cudaMemcpy(host, a, 1u << 20, cudaMemcpyDeviceToHost));
  CK(cudaMemcpyAsync(host, b, 12u << 10, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(b, a, 1u << 20, cudaMemcpyDeviceToDevice));
  CK(cudaMemcpyAsync(a, b, 256u << 10, cudaMemcpyDeviceToDevice, s));
  CK(cudaStreamSynchronize(s));
  // Memsets in the order of gs::kMemsets; the last one zeroes the counter page.
  CK(cudaMemset(a, 0, 1u << 20));
  CK(cudaMemsetAsync(b, 0, 512u << 10, s));
  CK(cudaMemsetAsync(counter, 0, 4u << 10, s));
  CK(cudaStreamSynchronize(s));
  for (int i = 0; i < gs::kPlainLaunches; ++i) cupmon_plain_kernel<<<1, 32>>>(counter);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());  // no read-back: it would add a copy to the known set
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(counter));
  CK(cudaFreeHost(host));
  CK(cudaStreamDestroy(s));
}

// ---- timing ----
void Timing(ExpectFile& expect) {
  cudaStream_t s;
  cudaEvent_t e0, e1;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cupmon_test::Spin<<<1, 1, 0, s>>>(0);  // warm-up: loads the module outside the timed runs
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));
  for (int i = 0; i < gs::kSpinRuns; ++i) {
    CK(cudaEventRecord(e0, s));
    cupmon_test::Spin<<<1, 1, 0, s>>>(gs::kSpinNs);
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (ms < gs::kSpinNs / 1e6) Die("event time " + std::to_string(ms) + " ms is below the spin length");
    expect.Put("spin_event_ns_" + std::to_string(i), static_cast<long long>(ms * 1e6));
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  CK(cudaStreamDestroy(s));
}

// ---- streams ----
using StreamLauncher = void (*)(cudaStream_t, int*);
template <int I>
void LaunchStreamWork(cudaStream_t s, int* counters) {
  cupmon_test::StreamWork<I><<<1, 32, 0, s>>>(counters);
}
constexpr StreamLauncher kStreamLaunchers[] = {&LaunchStreamWork<0>, &LaunchStreamWork<1>,
                                               &LaunchStreamWork<2>, &LaunchStreamWork<3>,
                                               &LaunchStreamWork<4>, &LaunchStreamWork<5>};
static_assert(std::size(kStreamLaunchers) == gs::kStreams);

void Streams() {
  int* counters = Counters(gs::kStreams);
  std::vector<cudaStream_t> streams(gs::kStreams);
  for (auto& s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  // Round-robin, so that the streams are busy at the same time.
  for (int k = 0; k < gs::StreamLaunches(gs::kStreams - 1); ++k)
    for (int i = 0; i < gs::kStreams; ++i)
      if (k < gs::StreamLaunches(i)) kStreamLaunchers[i](streams[i], counters);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  std::vector<int> expected;
  for (int i = 0; i < gs::kStreams; ++i) expected.push_back(gs::StreamLaunches(i));
  ExpectCounters(counters, gs::kStreams, expected, "streams");
  for (auto& s : streams) CK(cudaStreamDestroy(s));
  CK(cudaFree(counters));
}

// ---- graph ----
void Graph(ExpectFile& expect) {
  int* counters = Counters(gs::kGraphNodes);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < gs::kGraphNodes; ++i) cupmon_test::graph::Node<<<1, 32, 0, s>>>(counters, i);
  CK(cudaGetLastError());
  CK(cudaStreamEndCapture(s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaDeviceSynchronize());
  // The runtime kind (for the cudaGraphLaunch records) is on only inside this window.
  const int window = cupmon_window_open(600000, "runtime");
  if (window <= 0) Die(std::string("cupmon_window_open: ") + cupmon_last_error());
  expect.Put("window_id", window);
  for (int j = 0; j < gs::kGraphLaunches; ++j) CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  if (cupmon_window_close() != 0) Die(std::string("cupmon_window_close: ") + cupmon_last_error());
  ExpectCounters(counters, gs::kGraphNodes, std::vector<int>(gs::kGraphNodes, gs::kGraphLaunches),
                 "graph nodes");
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaStreamDestroy(s));
  CK(cudaFree(counters));
}

// ---- threads ----
using ThreadLauncher = void (*)(cudaStream_t, int*);
template <int I>
void LaunchThreadWork(cudaStream_t s, int* counters) {
  cupmon_test::ThreadWork<I><<<1, 32, 0, s>>>(counters);
}
constexpr ThreadLauncher kThreadLaunchers[] = {
    &LaunchThreadWork<0>, &LaunchThreadWork<1>, &LaunchThreadWork<2>, &LaunchThreadWork<3>,
    &LaunchThreadWork<4>, &LaunchThreadWork<5>, &LaunchThreadWork<6>, &LaunchThreadWork<7>};
static_assert(std::size(kThreadLaunchers) == gs::kThreads);

void Threads() {
  int* counters = Counters(gs::kThreads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < gs::kThreads; ++t) {
    threads.emplace_back([&, t] {
      cudaStream_t s;
      if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        ++errors;
        ++ready;
        return;
      }
      ++ready;
      while (!go.load()) std::this_thread::yield();
      for (int k = 0; k < gs::ThreadLaunches(t); ++k) kThreadLaunchers[t](s, counters);
      if (cudaGetLastError() != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess ||
          cudaStreamDestroy(s) != cudaSuccess)
        ++errors;
    });
  }
  while (ready.load() < gs::kThreads) std::this_thread::yield();
  go.store(true);  // all threads launch at once
  for (auto& th : threads) th.join();
  if (errors.load()) Die(std::to_string(errors.load()) + " launch thread(s) hit a CUDA error");
  CK(cudaDeviceSynchronize());
  std::vector<int> expected;
  for (int t = 0; t < gs::kThreads; ++t) expected.push_back(gs::ThreadLaunches(t));
  ExpectCounters(counters, gs::kThreads, expected, "threads");
  CK(cudaFree(counters));
}

// ---- fork ----
// CUDA-free work in a child: allocate, compute, check. Returns the exit status to use.
int ChildWork() {
  std::vector<unsigned long long> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  unsigned long long sum = 0;
  for (auto x : v) sum += x;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // overlaps the parent's launches
  return sum == (v.size() - 1) * v.size() / 2 ? 0 : 3;
}

// Waits for `pid` at most gs::kForkChildTimeoutMs; kills it and dies when it does not end.
void WaitChild(pid_t pid, const char* how, ExpectFile& expect, const std::string& key) {
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) Die(std::string("waitpid: ") + std::strerror(errno));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    if (ms > gs::kForkChildTimeoutMs) {
      std::string wchan;
      std::ifstream w("/proc/" + std::to_string(pid) + "/wchan");
      std::getline(w, wchan);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      Die(std::string("forked child ending with ") + how + " (pid " + std::to_string(pid) +
          ") did not end within " + std::to_string(gs::kForkChildTimeoutMs) +
          " ms: hung (wchan " + wchan + "); killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    Die(std::string("forked child ending with ") + how + ": " +
        (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                           : "killed by signal " + std::to_string(WTERMSIG(status))));
  expect.Put(key, static_cast<long long>(ms));
}

void Fork(ExpectFile& expect) {
  if (!std::getenv("CUDA_INJECTION64_PATH")) Die("the fork scenario must run under cupmon-run");
  int* counters = Counters(2);
  // Launches still in flight (no synchronisation) while the process forks.
  for (int k = 0; k < gs::kForkBefore; ++k) cupmon_test::ForkWork<0><<<1, 32>>>(counters);
  CK(cudaGetLastError());
  std::fflush(nullptr);  // nothing buffered for the children to print twice
  const pid_t quick = fork();
  if (quick < 0) Die(std::string("fork: ") + std::strerror(errno));
  if (quick == 0) _exit(ChildWork());  // like a worker that ends without atexit handlers
  const pid_t full = fork();
  if (full < 0) Die(std::string("fork: ") + std::strerror(errno));
  if (full == 0) std::exit(ChildWork());  // runs the atexit handlers (cupmon's, the runtime's)
  // The parent keeps launching while the children run.
  for (int k = 0; k < gs::kForkAfter; ++k) cupmon_test::ForkWork<1><<<1, 32>>>(counters);
  CK(cudaGetLastError());
  WaitChild(quick, "_exit()", expect, "child_quick_ms");
  WaitChild(full, "exit()", expect, "child_exit_ms");
  CK(cudaDeviceSynchronize());
  ExpectCounters(counters, 2, {gs::kForkBefore, gs::kForkAfter}, "fork");
  CK(cudaFree(counters));
  expect.Put("pid", static_cast<long long>(getpid()));
}

// ---- rotation ----
void Rotation(ExpectFile& expect) {
  int* counter = Counters(1);
  long long launches = 0;
  cupmon_stats st{};
  while (launches < gs::kRotationMaxLaunches) {
    for (int k = 0; k < gs::kRotationBatch; ++k) cupmon_test::RotationWork<7><<<1, 32>>>(counter);
    launches += gs::kRotationBatch;
    CK(cudaGetLastError());
    if (cupmon_flush() != 0) Die(std::string("cupmon_flush: ") + cupmon_last_error());
    if (cupmon_get_stats(&st) != 0) Die(std::string("cupmon_get_stats: ") + cupmon_last_error());
    if (st.compressed_bytes >= gs::kRotationTargetBytes) break;
  }
  CK(cudaDeviceSynchronize());
  std::printf("rotation: %lld launches, %llu bytes written before the last flush\n", launches,
              static_cast<unsigned long long>(st.compressed_bytes));
  ExpectCounters(counter, 1, {static_cast<int>(launches)}, "rotation");
  CK(cudaFree(counter));
  expect.Put("launches", launches);
}

// ---- multigpu ----
using DeviceLauncher = void (*)(cudaStream_t, int*);
template <int D>
void LaunchDeviceWork(cudaStream_t s, int* counter) {
  cupmon_test::DeviceWork<D><<<1, 32, 0, s>>>(counter);
}
constexpr DeviceLauncher kDeviceLaunchers[] = {&LaunchDeviceWork<0>, &LaunchDeviceWork<1>};
static_assert(std::size(kDeviceLaunchers) == gs::kDevices);

// Device d's peer-copy source after setup: the HtoD pattern over its first kDeviceHtoD[d] bytes,
// the memset byte kSourceFill[d] after that. No byte is 0, the destinations' initial value.
constexpr unsigned char kSourceFill[gs::kDevices] = {0x5a, 0xc3};
unsigned char PatternByte(uint64_t i) { return static_cast<unsigned char>(1 + (i * 131 + 7) % 251); }
unsigned char SourceByte(int d, uint64_t i) { return i < gs::kDeviceHtoD[d] ? PatternByte(i) : kSourceFill[d]; }

void SynchronizeDevices() {
  for (int d = 0; d < gs::kDevices; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaDeviceSynchronize());
  }
}

// Exactly the work listed in gpu_scenarios.h: per device a counter (memset, read back), a source
// (memset, HtoD) and a destination (memset, read back); the kernels; the peer copies.
void Multigpu(ExpectFile& expect) {
  // Peer access where the devices allow it; without it the runtime stages peer copies through
  // the host, which the checker's memcpy list then shows.
  int can[gs::kDevices] = {0, 0};
  CK(cudaDeviceCanAccessPeer(&can[0], 0, 1));
  CK(cudaDeviceCanAccessPeer(&can[1], 1, 0));
  for (int d = 0; d < gs::kDevices; ++d) {
    if (!can[d]) continue;
    CK(cudaSetDevice(d));
    const cudaError_t e = cudaDeviceEnablePeerAccess(1 - d, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) CK(cudaGetLastError());  // clears the error
    else CK(e);
  }
  expect.Put("p2p_access", can[0] && can[1] ? 1 : 0);

  uint64_t host_bytes = 0;
  for (int d = 0; d < gs::kDevices; ++d) host_bytes = std::max(host_bytes, gs::kDeviceHtoD[d]);
  unsigned char* pattern = nullptr;  // pinned and portable: one record per copy, from any device
  CK(cudaHostAlloc(&pattern, host_bytes, cudaHostAllocPortable));
  for (uint64_t i = 0; i < host_bytes; ++i) pattern[i] = PatternByte(i);

  struct DeviceBuffers {
    cudaStream_t stream = nullptr;
    int* counter = nullptr;
    unsigned char* src = nullptr;
    unsigned char* dst = nullptr;
    unsigned char* readback = nullptr;  // pinned host copy of dst
  };
  DeviceBuffers b[gs::kDevices];
  for (int d = 0; d < gs::kDevices; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaStreamCreateWithFlags(&b[d].stream, cudaStreamNonBlocking));
    b[d].counter = Counters(1);  // memset of kDeviceCounterBytes
    CK(cudaMalloc(&b[d].src, gs::kPeerSourceBytes[d]));
    CK(cudaMalloc(&b[d].dst, gs::PeerDestinationBytes(d)));
    CK(cudaHostAlloc(&b[d].readback, gs::PeerDestinationBytes(d), cudaHostAllocPortable));
    CK(cudaMemset(b[d].src, kSourceFill[d], gs::kPeerSourceBytes[d]));
    CK(cudaMemset(b[d].dst, 0, gs::PeerDestinationBytes(d)));
    CK(cudaMemcpy(b[d].src, pattern, gs::kDeviceHtoD[d], cudaMemcpyHostToDevice));
    CK(cudaDeviceSynchronize());
  }

  // Both devices' launches are queued before either is waited for, so the devices run together.
  for (int d = 0; d < gs::kDevices; ++d) {
    CK(cudaSetDevice(d));
    for (int k = 0; k < gs::DeviceLaunches(d); ++k) kDeviceLaunchers[d](b[d].stream, b[d].counter);
    CK(cudaGetLastError());
  }
  SynchronizeDevices();

  // Peer copies: from offset 0 of the source to the next free offset of the destination.
  uint64_t offset[gs::kDevices] = {0, 0};
  bool first[gs::kDevices] = {true, true};  // by source device
  for (const auto& c : gs::kPeerCopies) {
    const int from = static_cast<int>(c.src_device), to = static_cast<int>(c.dst_device);
    unsigned char* dst = b[to].dst + offset[to];
    CK(cudaSetDevice(from));
    if (first[from]) CK(cudaMemcpyPeer(dst, to, b[from].src, from, c.bytes));
    else CK(cudaMemcpyPeerAsync(dst, to, b[from].src, from, c.bytes, b[from].stream));
    first[from] = false;
    offset[to] += c.bytes;
  }
  SynchronizeDevices();

  // Read every destination back and compare, so that each copy is known to have happened.
  for (int d = 0; d < gs::kDevices; ++d) {
    CK(cudaSetDevice(d));
    CK(cudaMemcpy(b[d].readback, b[d].dst, gs::PeerDestinationBytes(d), cudaMemcpyDeviceToHost));
  }
  offset[0] = offset[1] = 0;
  for (const auto& c : gs::kPeerCopies) {
    const int from = static_cast<int>(c.src_device), to = static_cast<int>(c.dst_device);
    const unsigned char* got = b[to].readback + offset[to];
    for (uint64_t i = 0; i < c.bytes; ++i) {
      if (got[i] != SourceByte(from, i))
        Die("peer copy of " + std::to_string(c.bytes) + " bytes from device " + std::to_string(from) +
            " to device " + std::to_string(to) + ": byte " + std::to_string(i) + " is " +
            std::to_string(got[i]) + ", expected " + std::to_string(SourceByte(from, i)));
    }
    offset[to] += c.bytes;
  }
  std::printf("multigpu: %zu peer copies verified on the host\n", std::size(gs::kPeerCopies));

  for (int d = 0; d < gs::kDevices; ++d) {
    CK(cudaSetDevice(d));
    ExpectCounters(b[d].counter, 1, {gs::DeviceLaunches(d)}, d == 0 ? "device 0" : "device 1");
    CK(cudaStreamDestroy(b[d].stream));
    CK(cudaFree(b[d].counter));
    CK(cudaFree(b[d].src));
    CK(cudaFree(b[d].dst));
    CK(cudaFreeHost(b[d].readback));
  }
  CK(cudaFreeHost(pattern));
  CK(cudaSetDevice(0));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: gpu_scenarios basic|timing|streams|graph|threads|rotation|multigpu OUTDIR\n"
                 "       cupmon-run -o OUTDIR/rec -- gpu_scenarios fork OUTDIR\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string dir = argv[2];
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) Die("cannot create " + dir + ": " + ec.message());
  ExpectFile expect(dir + "/expect.txt");
  expect.Put("scenario_" + scenario, 1);

  if (scenario == "multigpu") {
    // Before cupmon starts: on a machine with one GPU the scenario is skipped, not failed.
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess && e != cudaErrorNoDevice) Check(e, "cudaGetDeviceCount(&devices)");
    if (devices < gs::kDevices) {
      std::printf("multigpu: needs %d GPUs, found %d\n", gs::kDevices, devices);
      return 77;  // ctest SKIP_RETURN_CODE
    }
    expect.Put("device_count", devices);
  }

  const bool api = scenario != "fork";
  if (api) {
    const std::string rec = dir + "/rec";
    cupmon_config c;
    cupmon_config_init(&c);
    c.output_dir = rec.c_str();
    if (scenario == "rotation") {
      c.file_bytes = gs::kRotationFileBytes;
      c.retention_files = gs::kRotationKeepFiles;
      // zstd rather than the default columns-delta, which packs these identical records so well
      // (> 100x) that filling several files would take millions of launches.
      c.encoding = "zstd";
    }
    // memcpy2: peer-to-peer copies as CUpti_ActivityMemcpyPtoP4, with source and destination device.
    if (scenario == "multigpu") c.kinds = "concurrent_kernel,memcpy,memset,memcpy2";
    // Experiment hook (tools/gpu-check-multi): how peer copies look with other kinds, e.g. the
    // always-on defaults without memcpy2. The checker expects memcpy2 and fails otherwise.
    const char* kinds_override = std::getenv("CUPMON_SCENARIO_KINDS");
    if (scenario == "multigpu" && kinds_override && *kinds_override) c.kinds = kinds_override;
    if (cupmon_start(&c) != 0) Die(std::string("cupmon_start: ") + cupmon_last_error());
  }
  if (scenario == "basic") Basic();
  else if (scenario == "timing") Timing(expect);
  else if (scenario == "streams") Streams();
  else if (scenario == "graph") Graph(expect);
  else if (scenario == "threads") Threads();
  else if (scenario == "fork") Fork(expect);
  else if (scenario == "rotation") Rotation(expect);
  else if (scenario == "multigpu") Multigpu(expect);
  else Die("unknown scenario " + scenario);
  CK(cudaDeviceSynchronize());
  if (api && cupmon_stop() != 0) Die(std::string("cupmon_stop: ") + cupmon_last_error());
  std::printf("gpu_scenarios %s: done\n", scenario.c_str());
  return 0;
}
