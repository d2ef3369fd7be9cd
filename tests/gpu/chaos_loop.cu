// Workloads for tools/gpu-chaos (issue 13's GPU proof), run under cupmon-run (injection):
//   chaos_loop paced RATE SECONDS PROGRESS   empty kernels at RATE per second for SECONDS; after
//                                            every 10 ms batch it synchronizes and appends
//                                            "<kernels completed> <CLOCK_REALTIME ns>" to PROGRESS
//                                            (unbuffered), so a killer knows what had run
//   chaos_loop flood N                       N empty kernels as fast as they go (sync every 10k);
//                                            prints "kernels N"
//   chaos_loop soak SECONDS PROGRESS [RATE]  the highest record rate for SECONDS: steps of one
//                                            StepAnchor kernel then a CUDA graph of 1000 empty
//                                            kernels; every 45 s one step 50 ms slower (a slow step
//                                            for CUPMON_AUTO_WINDOW); appends "<kernels completed>
//                                            <steps> <CLOCK_REALTIME ns>" to PROGRESS each second;
//                                            prints "kernels K steps S slow N". RATE (kernels/s,
//                                            0: no limit) launches each step at its own time, so
//                                            that every step lasts as long
//   chaos_loop forkstorm CHILDREN            launches kernels while forking CHILDREN children that
//                                            call exit(0) at once (atexit handlers included); waits
//                                            for each with a 10 s bound; prints
//                                            "kernels K children C failed F"
#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

__global__ void Empty() {}
__global__ void StepAnchor() {}

namespace {

int64_t NowNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "chaos_loop: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

int Paced(long rate, double seconds, const char* progress) {
  const int fd = open(progress, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 2;
  const long per_batch = rate / 100;  // one batch per 10 ms
  const int64_t t0 = NowNs(CLOCK_MONOTONIC);
  uint64_t done = 0;
  for (long batch = 0;; ++batch) {
    const int64_t due = t0 + batch * 10'000'000;
    if (due - t0 > static_cast<int64_t>(seconds * 1e9)) break;
    while (NowNs(CLOCK_MONOTONIC) < due) std::this_thread::sleep_for(std::chrono::microseconds(200));
    for (long i = 0; i < per_batch; ++i) Empty<<<1, 1>>>();
    if (!Check(cudaDeviceSynchronize(), "synchronize")) return 1;
    done += static_cast<uint64_t>(per_batch);
    char line[64];
    const int n = std::snprintf(line, sizeof(line), "%llu %lld\n",
                                static_cast<unsigned long long>(done),
                                static_cast<long long>(NowNs(CLOCK_REALTIME)));
    if (write(fd, line, static_cast<size_t>(n)) != n) return 2;
  }
  close(fd);
  std::printf("kernels %llu\n", static_cast<unsigned long long>(done));
  return 0;
}

int Flood(long n) {
  for (long i = 0; i < n; ++i) {
    Empty<<<1, 1>>>();
    if ((i + 1) % 10000 == 0 && !Check(cudaDeviceSynchronize(), "synchronize")) return 1;
  }
  if (!Check(cudaDeviceSynchronize(), "synchronize")) return 1;
  std::printf("kernels %ld\n", n);
  return 0;
}

int Soak(double seconds, const char* progress, double rate) {
  const int fd = open(progress, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return 2;
  cudaStream_t stream;
  if (!Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream")) return 1;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  constexpr int kGraphKernels = 1000;
  if (!Check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture")) return 1;
  for (int i = 0; i < kGraphKernels; ++i) Empty<<<1, 1, 0, stream>>>();
  if (!Check(cudaStreamEndCapture(stream, &graph), "end capture") ||
      !Check(cudaGraphInstantiate(&exec, graph, 0), "instantiate"))
    return 1;
  const int64_t t0 = NowNs(CLOCK_MONOTONIC);
  int64_t next_slow = t0 + 45'000'000'000, next_progress = t0 + 1'000'000'000;
  uint64_t steps = 0, slow = 0, done = 0;
  for (;;) {
    const int64_t now = NowNs(CLOCK_MONOTONIC);
    if (now - t0 >= static_cast<int64_t>(seconds * 1e9)) break;
    if (now >= next_slow) {  // one slow step: the queue drains, then 50 ms of nothing
      if (!Check(cudaStreamSynchronize(stream), "synchronize")) return 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      next_slow += 45'000'000'000;
      ++slow;
    }
    if (rate > 0) {  // step k is launched at t0 + k steps' worth of kernels at RATE
      const auto at =
          t0 + static_cast<int64_t>(static_cast<double>(steps) * (kGraphKernels + 1) / rate * 1e9);
      while (NowNs(CLOCK_MONOTONIC) < at) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    StepAnchor<<<1, 1, 0, stream>>>();
    if (!Check(cudaGraphLaunch(exec, stream), "graph launch")) return 1;
    ++steps;
    if (steps % 32 == 0) {  // bounded queue depth; completed kernels are known here
      if (!Check(cudaStreamSynchronize(stream), "synchronize")) return 1;
      done = steps * (kGraphKernels + 1);
      if (NowNs(CLOCK_MONOTONIC) >= next_progress) {
        next_progress += 1'000'000'000;
        char line[96];
        const int n = std::snprintf(line, sizeof(line), "%llu %llu %lld\n",
                                    static_cast<unsigned long long>(done),
                                    static_cast<unsigned long long>(steps),
                                    static_cast<long long>(NowNs(CLOCK_REALTIME)));
        if (write(fd, line, static_cast<size_t>(n)) != n) return 2;
      }
    }
  }
  if (!Check(cudaStreamSynchronize(stream), "synchronize")) return 1;
  done = steps * (kGraphKernels + 1);
  close(fd);
  std::printf("kernels %llu steps %llu slow %llu\n", static_cast<unsigned long long>(done),
              static_cast<unsigned long long>(steps), static_cast<unsigned long long>(slow));
  return 0;
}

int ForkStorm(int children) {
  uint64_t kernels = 0;
  int failed = 0;
  for (int c = 0; c < children; ++c) {
    for (int i = 0; i < 1000; ++i) Empty<<<1, 1>>>();
    kernels += 1000;
    const pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) exit(0);  // no CUDA in the child; exit() runs the atexit handlers (cupmon's too)
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    pid_t r = 0;
    while ((r = waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (r != pid) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++failed;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  if (!Check(cudaDeviceSynchronize(), "synchronize")) return 1;
  std::printf("kernels %llu children %d failed %d\n", static_cast<unsigned long long>(kernels),
              children, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "paced" && argc == 5) return Paced(std::atol(argv[2]), std::atof(argv[3]), argv[4]);
  if (mode == "flood" && argc == 3) return Flood(std::atol(argv[2]));
  if (mode == "soak" && (argc == 4 || argc == 5))
    return Soak(std::atof(argv[2]), argv[3], argc == 5 ? std::atof(argv[4]) : 0);
  if (mode == "forkstorm" && argc == 3) return ForkStorm(std::atoi(argv[2]));
  std::fprintf(stderr,
               "usage: chaos_loop paced RATE SECONDS PROGRESS | flood N | soak SECONDS PROGRESS [RATE] | "
               "forkstorm CHILDREN\n");
  return 2;
}
