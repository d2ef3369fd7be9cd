// In-process on/off benchmark (issue 16): one process alternates phases with CUPTI's always-on
// kinds (concurrent kernel, memcpy, memset) disabled and enabled, calling cuptiActivityDisable /
// cuptiActivityEnable on the libcupti the injected client loaded, while that client (the bare-
// CUPTI floor or cupmon) stays attached. Phases are the same empty-kernel launch loop, timed in
// wall and process CPU time; cycles alternate their order (off-on, on-off, ...) so that drift
// cancels. tools/gpu-bench-onoff runs it in many interleaved processes and computes intervals.
//   onoff_bench THREADS LAUNCHES_PER_PHASE CYCLES
// ONOFF_KINDS (comma-separated CUpti_ActivityKind numbers, default 1,2,10) names the kinds that are
// switched: those the client enables always-on (add 12 for a client with MARKER always on, 49 for
// MEMORY2), so that the off phase has none of them.
// prints one JSON line: {"threads":..,"launches":..,"kinds":[..],"cycles":[{"off_wall_s":..,"on_wall_s":..,
// "off_cpu_s":..,"on_cpu_s":..},...]}. Exits 1 when no libcupti is loaded (no client injected).
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

__global__ void Empty() {}

namespace {

// CUpti_ActivityKind values (cupti_activity.h, CUDA 13.0): memcpy, memset, concurrent kernel.
constexpr int kDefaultKinds[] = {1, 2, 10};
using KindFn = int (*)(int);

// ONOFF_KINDS, or the default; empty on a malformed list.
std::vector<int> SwitchedKinds() {
  const char* v = std::getenv("ONOFF_KINDS");
  if (!v || !*v) return {std::begin(kDefaultKinds), std::end(kDefaultKinds)};
  std::vector<int> kinds;
  for (const char* p = v; *p;) {
    char* end = nullptr;
    const long k = std::strtol(p, &end, 10);
    if (end == p || k < 1 || k > 127 || (*end && *end != ',')) return {};
    kinds.push_back(static_cast<int>(k));
    p = *end ? end + 1 : end;
  }
  return kinds;
}

double Seconds(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// The libcupti already in the process (loaded by the injected client), found in /proc/self/maps;
// dlsym on its handle reaches libcupti's own entry points even where a preload interposes them.
void* LoadedCupti() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const size_t at = line.find('/');
    if (at == std::string::npos || line.find("libcupti.so", at) == std::string::npos) continue;
    if (void* h = dlopen(line.substr(at).c_str(), RTLD_NOW | RTLD_NOLOAD)) return h;
  }
  return nullptr;
}

// Launches `per_thread` empty kernels on each of the threads' streams, all threads started
// together, then synchronizes the device.
class LaunchPhase {
 public:
  explicit LaunchPhase(int threads) : streams_(threads) {
    for (auto& s : streams_) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  }
  void Run(long per_thread) {
    if (streams_.size() == 1) {
      for (long i = 0; i < per_thread; ++i) Empty<<<1, 1, 0, streams_[0]>>>();
    } else {
      std::atomic<int> ready{0};
      std::vector<std::thread> pool;
      for (size_t t = 0; t < streams_.size(); ++t) {
        pool.emplace_back([&, t] {
          ready.fetch_add(1);
          while (ready.load() < static_cast<int>(streams_.size())) {
          }
          for (long i = 0; i < per_thread; ++i) Empty<<<1, 1, 0, streams_[t]>>>();
        });
      }
      for (auto& th : pool) th.join();
    }
    cudaDeviceSynchronize();
  }

 private:
  std::vector<cudaStream_t> streams_;
};

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  const long launches = argc > 2 ? std::atol(argv[2]) : 20000;
  const int cycles = argc > 3 ? std::atoi(argv[3]) : 10;
  if (threads < 1 || launches < threads || cycles < 1) {
    std::fprintf(stderr, "usage: onoff_bench THREADS LAUNCHES_PER_PHASE CYCLES\n");
    return 2;
  }
  const std::vector<int> kinds = SwitchedKinds();
  if (kinds.empty()) {
    std::fprintf(stderr, "onoff_bench: ONOFF_KINDS='%s' is not a list of kind numbers such as "
                 "1,2,10,12\n", std::getenv("ONOFF_KINDS"));
    return 2;
  }
  for (int i = 0; i < 1000; ++i) Empty<<<1, 1>>>();  // cuInit: the client attaches here
  if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) {
    std::fprintf(stderr, "onoff_bench: warm-up: %s\n", cudaGetErrorString(e));
    return 1;
  }
  void* cupti = LoadedCupti();
  if (!cupti) {
    std::fprintf(stderr, "onoff_bench: no libcupti in the process: inject a client\n");
    return 1;
  }
  auto enable = reinterpret_cast<KindFn>(dlsym(cupti, "cuptiActivityEnable"));
  auto disable = reinterpret_cast<KindFn>(dlsym(cupti, "cuptiActivityDisable"));
  if (!enable || !disable) {
    std::fprintf(stderr, "onoff_bench: libcupti lacks cuptiActivityEnable/Disable\n");
    return 1;
  }
  LaunchPhase phase(threads);
  const long per_thread = launches / threads;
  const auto set = [&](bool on) {
    for (int k : kinds)
      if ((on ? enable : disable)(k) != 0) return false;
    phase.Run(200);  // untimed: the switch settles before the timed phase
    return true;
  };
  phase.Run(per_thread);  // one untimed phase with the client's kinds on
  std::string kind_list;
  for (int k : kinds) kind_list += (kind_list.empty() ? "" : ",") + std::to_string(k);
  std::string out = "{\"threads\":" + std::to_string(threads) +
                    ",\"launches\":" + std::to_string(per_thread * threads) + ",\"kinds\":[" +
                    kind_list + "],\"cycles\":[";
  for (int c = 0; c < cycles; ++c) {
    double wall[2], cpu[2];  // [0] off, [1] on
    for (int half = 0; half < 2; ++half) {
      const bool on = (c % 2 == 0) == (half == 1);  // even cycles off-on, odd on-off
      if (!set(on)) {
        std::fprintf(stderr, "onoff_bench: cuptiActivity%s failed\n", on ? "Enable" : "Disable");
        return 1;
      }
      const double w0 = Seconds(CLOCK_MONOTONIC), c0 = Seconds(CLOCK_PROCESS_CPUTIME_ID);
      phase.Run(per_thread);
      wall[on] = Seconds(CLOCK_MONOTONIC) - w0;
      cpu[on] = Seconds(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%s{\"off_wall_s\":%.6f,\"on_wall_s\":%.6f,\"off_cpu_s\":%.6f,\"on_cpu_s\":%.6f}",
                  c ? "," : "", wall[0], wall[1], cpu[0], cpu[1]);
    out += buf;
  }
  set(true);  // leave the client as it was
  std::printf("%s]}\n", out.c_str());
  return 0;
}
