// A multi-rank training job on one GPU, for tools/gpu-check-job (issue 44's GPU proof): NRANKS
// processes meet every step in an emulated collective, a kernel named like NCCL's that spins on
// device memory shared through CUDA IPC until every rank has arrived. Time-slicing between the
// processes' contexts inflates the waits; ranks and classes are what the check compares.
//
//   job_emul RANK NRANKS STEPS DIR [INJECT...]
//
// Per step: fwd_work (300 us), bwd_work (600 us), the collective, opt_work (100 us), then a
// stream synchronize (as a loop that reads its loss). Rank 0 allocates the arrival counters and
// writes their IPC handle to DIR/handle; the others open it. Each rank appends "STEP LAUNCH_NS"
// (CLOCK_REALTIME just before the step's first launch) to DIR/truth-RANK.txt.
// INJECT: host-gap:R:S:MS  rank R sleeps MS ms before launching step S (it launches late)
//         gpu-work:R:S:MS  rank R's bwd_work of step S runs MS ms longer
//         collectives:S:MS every rank's collective of step S lasts MS ms after all arrived
//         hang:R:S         rank R stops before step S's collective and waits for a signal; the
//                          others spin in that collective (bounded at 60 s)
// Exit 0 when every step ran; 1 on a CUDA error or a collective that timed out; 2 on bad usage.
#include <cuda_runtime.h>
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

__device__ uint64_t GlobalNs() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ void SpinFor(uint64_t ns) {
  const uint64_t t0 = GlobalNs();
  while (GlobalNs() - t0 < ns) __nanosleep(1000);
}

}  // namespace

extern "C" __global__ void fwd_work(uint64_t ns) {
  if (threadIdx.x == 0) SpinFor(ns);
}
extern "C" __global__ void bwd_work(uint64_t ns) {
  if (threadIdx.x == 0) SpinFor(ns);
}
extern "C" __global__ void opt_work(uint64_t ns) {
  if (threadIdx.x == 0) SpinFor(ns);
}

// Arrives at instance `i`, then spins until every rank has (or the timeout), then `extra_ns`
// more. timed_out[i] is set when the timeout ended the wait.
extern "C" __global__ void ncclDevKernel_AllReduce_Sum_f32_RING_LL(unsigned* arrive, unsigned* timed_out,
                                                                   unsigned i, unsigned nranks,
                                                                   uint64_t timeout_ns,
                                                                   uint64_t extra_ns) {
  if (threadIdx.x != 0) return;
  atomicAdd(&arrive[i], 1u);
  const uint64_t t0 = GlobalNs();
  while (*static_cast<volatile unsigned*>(&arrive[i]) < nranks) {
    if (GlobalNs() - t0 > timeout_ns) {
      atomicExch(&timed_out[i], 1u);
      return;
    }
    __nanosleep(2000);
  }
  SpinFor(extra_ns);
}

namespace {

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

bool Check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "job_emul: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

struct Inject {
  std::string what;
  int rank = -1;
  long step = -1;
  long ms = 0;
};

bool ParseInject(const char* arg, Inject* out) {
  int r = -1;
  long s = -1, ms = 0;
  if (std::sscanf(arg, "host-gap:%d:%ld:%ld", &r, &s, &ms) == 3) {
    *out = {"host-gap", r, s, ms};
  } else if (std::sscanf(arg, "gpu-work:%d:%ld:%ld", &r, &s, &ms) == 3) {
    *out = {"gpu-work", r, s, ms};
  } else if (std::sscanf(arg, "collectives:%ld:%ld", &s, &ms) == 2) {
    *out = {"collectives", -1, s, ms};
  } else if (std::sscanf(arg, "hang:%d:%ld", &r, &s) == 2) {
    *out = {"hang", r, s, 0};
  } else {
    return false;
  }
  return true;
}

bool WaitForFile(const std::string& path, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    if (access(path.c_str(), F_OK) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: job_emul RANK NRANKS STEPS DIR [INJECT...]\n");
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const unsigned nranks = static_cast<unsigned>(std::atoi(argv[2]));
  const long steps = std::atol(argv[3]);
  const std::string dir = argv[4];
  std::vector<Inject> injects;
  for (int i = 5; i < argc; ++i) {
    Inject in;
    if (!ParseInject(argv[i], &in)) {
      std::fprintf(stderr, "job_emul: cannot parse '%s'\n", argv[i]);
      return 2;
    }
    injects.push_back(in);
  }
  if (rank < 0 || nranks < 1 || rank >= static_cast<int>(nranks) || steps < 1) {
    std::fprintf(stderr, "job_emul: bad RANK, NRANKS or STEPS\n");
    return 2;
  }
  const size_t counters = static_cast<size_t>(steps) + 1;
  unsigned* arrive = nullptr;
  unsigned* timed_out = nullptr;
  const std::string handle_path = dir + "/handle";
  if (rank == 0) {
    if (!Check(cudaMalloc(&arrive, 2 * counters * sizeof(unsigned)), "cudaMalloc") ||
        !Check(cudaMemset(arrive, 0, 2 * counters * sizeof(unsigned)), "cudaMemset") ||
        !Check(cudaDeviceSynchronize(), "synchronize"))
      return 1;
    cudaIpcMemHandle_t h;
    if (!Check(cudaIpcGetMemHandle(&h, arrive), "cudaIpcGetMemHandle")) return 1;
    const std::string tmp = handle_path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f || std::fwrite(&h, sizeof h, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), handle_path.c_str()) != 0) {
      std::perror("job_emul: writing the handle");
      return 1;
    }
  } else {
    if (!WaitForFile(handle_path, 60)) {
      std::fprintf(stderr, "job_emul: no %s after 60 s\n", handle_path.c_str());
      return 1;
    }
    cudaIpcMemHandle_t h;
    FILE* f = std::fopen(handle_path.c_str(), "rb");
    if (!f || std::fread(&h, sizeof h, 1, f) != 1) {
      std::perror("job_emul: reading the handle");
      return 1;
    }
    std::fclose(f);
    void* p = nullptr;
    if (!Check(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle"))
      return 1;
    arrive = static_cast<unsigned*>(p);
  }
  timed_out = arrive + counters;
  const std::string truth_path = dir + "/truth-" + std::to_string(rank) + ".txt";
  FILE* truth = std::fopen(truth_path.c_str(), "w");
  if (!truth) {
    std::perror("job_emul: truth file");
    return 1;
  }
  cudaStream_t stream;
  if (!Check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream")) return 1;
  const uint64_t us = 1000;
  for (long s = 0; s < steps; ++s) {
    uint64_t extra_work = 0, extra_coll = 0;
    bool hang = false;
    for (const Inject& in : injects) {
      if (in.step != s) continue;
      if (in.what == "host-gap" && in.rank == rank)
        std::this_thread::sleep_for(std::chrono::milliseconds(in.ms));
      if (in.what == "gpu-work" && in.rank == rank) extra_work = static_cast<uint64_t>(in.ms) * 1000 * us;
      if (in.what == "collectives") extra_coll = static_cast<uint64_t>(in.ms) * 1000 * us;
      if (in.what == "hang" && in.rank == rank) hang = true;
    }
    std::fprintf(truth, "%ld %lld\n", s, static_cast<long long>(RealtimeNs()));
    std::fflush(truth);
    fwd_work<<<1, 32, 0, stream>>>(300 * us);
    bwd_work<<<1, 32, 0, stream>>>(600 * us + extra_work);
    if (hang) {
      if (!Check(cudaStreamSynchronize(stream), "synchronize")) return 1;
      std::printf("rank %d hangs before the collective of step %ld\n", rank, s);
      std::fflush(stdout);
      for (;;) pause();  // until a signal ends the process
    }
    ncclDevKernel_AllReduce_Sum_f32_RING_LL<<<1, 32, 0, stream>>>(
        arrive, timed_out, static_cast<unsigned>(s), nranks, 60'000'000'000ull, extra_coll);
    opt_work<<<1, 32, 0, stream>>>(100 * us);
    if (!Check(cudaStreamSynchronize(stream), "synchronize")) return 1;
  }
  std::fclose(truth);
  std::vector<unsigned> flags(counters);
  if (!Check(cudaMemcpy(flags.data(), timed_out, counters * sizeof(unsigned), cudaMemcpyDeviceToHost),
             "copy back"))
    return 1;
  unsigned timeouts = 0;
  for (unsigned f : flags) timeouts += f;
  // Rank 0's allocation must outlive the others' use of it.
  const std::string done = dir + "/done-" + std::to_string(rank);
  if (FILE* f = std::fopen(done.c_str(), "w")) std::fclose(f);
  if (rank == 0)
    for (unsigned r = 1; r < nranks; ++r) WaitForFile(dir + "/done-" + std::to_string(r), 60);
  std::printf("rank %d steps %ld timeouts %u\n", rank, steps, timeouts);
  return timeouts ? 1 : 0;
}
