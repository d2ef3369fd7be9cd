// Writes a synthetic recording (CUPTI TEST DOUBLE, not GPU data) into a directory:
//   cupmon-make-sample tests/data/synthetic-sample   the small synthetic sample (golden tests write their own)
//   cupmon-make-sample /tmp/big 10000000          N records (WriteLarge), to time cupmon-decode
//   cupmon-make-sample --ranks 8 /tmp/job 1000000  eight ranks of a job, N records each, in
//                                                 /tmp/job/rank0 ... rank7 (merged reports)
//   cupmon-make-sample --overlap DIR              overlapping slices on one stream and one thread
//   cupmon-make-sample --annotated-steps DIR      two ranks with annotated training steps
//   cupmon-make-sample --nvtx DIR                 NVTX ranges, a mark and labelled kernels
//   cupmon-make-sample --memory DIR               device memory allocations on two devices
//   cupmon-make-sample --memory-check DIR [--wrong]  what tests/gpu/memory_check.cu records (the
//                                                 checker's self-test), or a wrong variant
//   cupmon-make-sample --steps DIR 10000000       a training loop of N records, to time `steps`
//   cupmon-make-sample --steps DIR 100000 2       the same loop with gemm_wgrad 2x slower (`diff`)
//   cupmon-make-sample --overlapping-steps DIR    a training loop whose streams overlap and whose
//                                                 records come when kernels end, out of start order
//   cupmon-make-sample --job DIR RANKS [WHAT...]  a data-parallel job of RANKS ranks (DIR/rank*),
//                                                 clocks seconds apart, with injected stragglers:
//                                                 host-gap:R:S:MS gpu-work:R:S:MS collectives:S:MS
//                                                 hang:R:S first-step:R:S steps:N
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>

#include "cupmon/base/check.h"
#include "job/job_analysis.h"
#include "job/rank_table.h"
#include "job_stream.h"
#include "recording_builder.h"
#include "step_stream.h"

namespace {

// What tests/gpu/memory_check.cu does, as CUPTI should record it (MEMORY2 and MEMORY_POOL records
// at made-up addresses), for tests/gpu/check_memory.py's self-test; returns the program's JSON
// line for these addresses. `wrong`: the release of b is missing, as if its record were lost.
std::string WriteMemoryCheck(const std::string& dir, bool wrong) {
  using namespace cupmon::testing;
  cupmon::RecordingWriter w(WriterOptions(dir, "cupmon-memory-check"), SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  constexpr uint64_t kMiB = 1 << 20, kPool = 0x7e00'0000'0000;
  constexpr uint32_t kAlloc = 1, kRelease = 2, kDevice = 3;
  struct Op {
    const char* what;
    const char* api;
    const char* label;
    uint64_t address, bytes;
    bool pool;
  };
  const Op ops[] = {
      {"allocation", "cudaMalloc", "a", 0x7f00'0000'0000, 64 * kMiB, false},
      {"allocation", "cudaMalloc", "b", 0x7f00'1000'0000, 32 * kMiB, false},
      {"release", "cudaFree", "a", 0x7f00'0000'0000, 64 * kMiB, false},
      {"allocation", "cudaMalloc", "c", 0x7f00'2000'0000, 128 * kMiB, false},
      {"release", "cudaFree", "b", 0x7f00'1000'0000, 32 * kMiB, false},
      {"release", "cudaFree", "c", 0x7f00'2000'0000, 128 * kMiB, false},
      {"allocation", "cudaMallocFromPoolAsync", "d", 0x7e00'0000'0000, 16 * kMiB, true},
      {"allocation", "cudaMallocFromPoolAsync", "e", 0x7e00'0100'0000, 8 * kMiB, true},
      {"release", "cudaFreeAsync", "d", 0x7e00'0000'0000, 16 * kMiB, true},
      {"release", "cudaFreeAsync", "e", 0x7e00'0100'0000, 8 * kMiB, true},
  };
  auto us = [](uint64_t n) { return kT0 + n * 1000; };
  BufferBuilder b;
  uint64_t t = 10;
  for (size_t i = 0; i < std::size(ops); ++i, t += 10) {
    const Op& op = ops[i];
    if (i == 6) b.MemoryPool(1, us(t++), kPool, 0);
    if (wrong && i == 4) continue;
    b.Memory(op.what[0] == 'a' ? kAlloc : kRelease, us(t), op.address, op.bytes, 0, kDevice, 7,
             op.pool ? 1 : 0, op.pool ? kPool : 0);
  }
  b.MemoryPool(3, us(t), kPool, 24 * kMiB).MemoryPool(2, us(t + 10), kPool, 0);
  w.WriteRawBuffer(b.bytes(), 0, 0);
  w.WriteStats(static_cast<int64_t>(kT0) + 1'000'000);
  w.Close(static_cast<int64_t>(kT0) + 1'000'000);
  std::string json =
      "{\"device\":0,\"peak_bytes\":" + std::to_string(160 * kMiB) +
      ",\"peak_op\":3,\"in_use_bytes\":0,\"pools_created\":1,\"pools_trimmed\":1,"
      "\"pools_destroyed\":1,\"ops\":[";
  for (size_t i = 0; i < std::size(ops); ++i)
    json += std::string(i ? "," : "") + "{\"operation\":\"" + ops[i].what + "\",\"api\":\"" +
            ops[i].api + "\",\"label\":\"" + ops[i].label + "\",\"address\":" +
            std::to_string(ops[i].address) + ",\"bytes\":" + std::to_string(ops[i].bytes) +
            ",\"pool\":" + (ops[i].pool ? "true" : "false") + "}";
  return json + "]}";
}

// A training-like mix for timing the decoder. Always on: kernels (64 mangled template names, four
// streams, two devices), memcpys (HtoD, DtoH, DtoD) and memsets, in ~4 MiB GPU buffers. In trace
// windows (3 GPU buffers of every 10, with BEGIN/END markers) also the API records: one runtime
// call per activity (a driver cuLaunchKernel for 1 kernel in 20), a cudaStreamSynchronize with no
// GPU activity per 32 launches, and an external correlation (annotation) per 64, in their own
// buffers after the GPU buffer as CUPTI delivers them. A calibration sample per buffer.
// `rank` of `ranks` (ranks 0: a recording of its own, no rank): a recording of its own id, pid
// and pseudo-random sequence, in the same synthetic job as the other ranks.
// How WriteLarge spaces its records in time; the defaults are the timing recording's.
struct LargeShape {
  uint64_t step_ns = 1500;        // CUPTI time from one activity's launch to the next
  uint64_t window_every = 10;     // a window opens every this many GPU buffers...
  uint64_t window_buffers = 3;    // ...and stays open this many
  uint64_t file_bytes = 0;        // rotation size (0: the writer's default, 64 MiB)
  // From this GPU buffer on, CUPTI's clock is another domain (as when torch.profiler registers
  // its timestamp callback): its values are kDomainShift ahead of the wall clock's.
  uint64_t domain_change_buffer = UINT64_MAX;
};
constexpr uint64_t kDomainShift = 400ull * 86400 * 1'000'000'000;  // 400 days

size_t WriteLarge(const std::string& dir, uint64_t records, uint32_t rank = 0, uint32_t ranks = 0,
                  const LargeShape& shape = {}) {
  using namespace cupmon::testing;
  auto opts = WriterOptions(dir, "cupmon-large");
  opts.files.retention_bytes = 1ull << 40;
  if (shape.file_bytes) opts.files.file_bytes = shape.file_bytes;
  cupmon::pb::RecordingHeader header = SyntheticHeader(kTestRecordingId + rank, kTestPid + rank);
  if (ranks) {
    header.set_rank(static_cast<int32_t>(rank));
    header.set_local_rank(static_cast<int32_t>(rank));
    header.set_world_size(static_cast<int32_t>(ranks));
    header.set_job_id("synthetic-job");
  }
  auto* d1 = header.add_devices();
  d1->CopyFrom(header.devices(0));
  d1->set_id(1);
  cupmon::RecordingWriter w(opts, header);
  CUPMON_CHECK(w.Open().has_value());
  constexpr int kNames = 64;
  constexpr uint64_t kNameBase = 0x7f0000100000;
  std::vector<cupmon::pb::StringEntry> strings(kNames + 4);
  for (int i = 0; i < kNames; ++i) {
    // _ZN5model6layer07forwardILi16EEEvPKfPfi: model::layer0::forward<16>(float const*, ...)
    const std::string layer = "layer" + std::to_string(i);
    strings[i].set_pointer(kNameBase + 0x100u * i);
    strings[i].set_text("_ZN5model" + std::to_string(layer.size()) + layer + "7forwardILi" +
                        std::to_string(16 << (i % 4)) + "EEEvPKfPfi");
  }
  for (int i = 0; i < 4; ++i) {  // annotation labels (pointer = external id)
    strings[kNames + i].set_pointer(100 + i);
    strings[kNames + i].set_text("step/phase" + std::to_string(i));
  }
  w.AddStrings(strings);
  cupmon::pb::Calibration cal;
  auto* sample = cal.add_samples();

  uint64_t t = kT0, written = 0, lcg = 12345 + rank;
  uint32_t corr = 1, window = 0;
  auto next = [&lcg] {  // deterministic pseudo-random numbers
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(lcg >> 33);
  };
  BufferBuilder gpu, api;  // reused: one allocation each for the whole run
  uint64_t shift = 0;  // CUPTI time - the test double's time (the domain change)
  for (uint64_t buffer = 0; written < records; ++buffer) {
    if (buffer == shape.domain_change_buffer) shift = kDomainShift;
    const bool in_window = buffer % shape.window_every < shape.window_buffers;
    if (buffer % shape.window_every == 0) {
      cupmon::pb::WindowMarker m;
      m.set_window_id(++window);
      m.set_edge(cupmon::pb::WindowMarker::BEGIN);
      m.set_source(cupmon::pb::TRIGGER_SOCKET);
      m.set_cupti_ns(t + shift);
      w.WriteWindowMarker(m);
    }
    gpu.Clear();
    api.Clear();
    const uint64_t budget = records - written;
    while (gpu.records() < 19000 && gpu.records() + api.records() < budget) {
      const uint32_t r = next();
      const uint32_t stream = 7 + r % 4, device = (r >> 2) % 2;
      const uint64_t launch = t + shift, begin = t + shift + 4000, dur = 1000 + (r >> 4) % 20000;
      const uint32_t what = (r >> 8) % 100;
      uint32_t cbid = 211;
      if (what < 90) {
        const uint32_t name = (r >> 12) % kNames;
        gpu.Kernel(begin, begin + dur, corr, kNameBase + 0x100u * name, stream, device);
      } else if (what < 97) {
        const uint32_t copy_kind = what < 93 ? 1 : what < 95 ? 2 : 8;  // HtoD, DtoH, DtoD
        gpu.Memcpy(begin, begin + dur, corr, copy_kind, 4096u << (r % 10), stream);
        cbid = 41;
      } else {
        gpu.Memset(begin, begin + dur / 4, corr, 1u << 20, stream);
        cbid = 51;
      }
      if (in_window) {
        if (cbid == 211 && r % 20 == 0)
          api.Driver(launch, launch + 2500, corr, 307, 101 + r % 3);
        else
          api.Runtime(launch, launch + 3000, corr, cbid, 101 + r % 3);
        if (corr % 64 == 0) api.External(corr, 100 + (corr / 64) % 4);
        if (corr % 32 == 0) api.Runtime(launch + 3500, launch + 9000, ++corr, 131, 101);
      }
      ++corr;
      t += shape.step_ns;
    }
    w.WriteRawBuffer(gpu.bytes(), 1, 7);
    if (api.records()) w.WriteRawBuffer(api.bytes(), 0, 0);
    written += gpu.records() + api.records();
    sample->set_cupti_ns(t + shift);
    sample->set_realtime_ns(static_cast<int64_t>(t) + 2000);
    sample->set_monotonic_ns(t - kT0);
    w.WriteCalibration(cal);
    if (buffer % shape.window_every == shape.window_buffers - 1) {
      cupmon::pb::WindowMarker m;
      m.set_window_id(window);
      m.set_edge(cupmon::pb::WindowMarker::END);
      m.set_source(cupmon::pb::TRIGGER_SOCKET);
      m.set_cupti_ns(t + shift);
      m.set_note("duration");
      w.WriteWindowMarker(m);
    }
  }
  w.WriteStats(static_cast<int64_t>(t));
  w.Close(static_cast<int64_t>(t));
  return written;
}

// One calibration sample (the wall clock 2 us ahead of CUPTI's at kT0) and window 1's BEGIN
// marker at `begin_ns`, which is returned (its END is a copy with another edge and time).
cupmon::pb::WindowMarker CalibrateAndOpenWindow(cupmon::RecordingWriter& w, uint64_t begin_ns) {
  using cupmon::testing::kT0;
  cupmon::pb::Calibration cal;
  auto* s0 = cal.add_samples();
  s0->set_cupti_ns(kT0);
  s0->set_realtime_ns(static_cast<int64_t>(kT0) + 2000);
  s0->set_monotonic_ns(1000);
  w.WriteCalibration(cal);
  cupmon::pb::WindowMarker begin;
  begin.set_window_id(1);
  begin.set_edge(cupmon::pb::WindowMarker::BEGIN);
  begin.set_source(cupmon::pb::TRIGGER_SOCKET);
  begin.set_cupti_ns(begin_ns);
  w.WriteWindowMarker(begin);
  return begin;
}

// Slices that overlap on one track, for the Perfetto export's lanes (tests/decoder/
// perfetto_export_test.py knows these times): a CUDA graph launch whose five kernels CUPTI reports
// on one stream, three of them running at once, and a driver call inside a runtime call on one
// thread. Expected lanes: stream 7 three (kernels at 30-80, 80-100, 100-120, 122-128 and 150-160 us
// share the first; 122-128 comes last in its buffer, so it is late when rows are not reordered),
// thread 101 two.
size_t WriteOverlap(const std::string& dir) {
  using namespace cupmon::testing;
  cupmon::RecordingWriter w(WriterOptions(dir, "cupmon-overlap-4242"), SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  constexpr uint64_t kGemm = 0x7f0000002000, kCopy = 0x7f0000004000;
  std::vector<cupmon::pb::StringEntry> strings(3);
  strings[0].set_id(1), strings[0].set_pointer(kGemm), strings[0].set_text("_Z10gemm_tiledILi16EEvPKfS1_Pfi");
  strings[1].set_id(2), strings[1].set_pointer(kCopy), strings[1].set_text("copy_kernel");
  strings[2].set_id(3), strings[2].set_pointer(9), strings[2].set_text("step 1");  // annotation
  w.AddStrings(strings);
  const cupmon::pb::WindowMarker begin = CalibrateAndOpenWindow(w, kT0 + 1'000);
  const uint64_t t = kT0;
  auto us = [](uint64_t n) { return n * 1000; };
  BufferBuilder api;
  api.Runtime(t + us(10), t + us(20), 1, 311)               // cudaGraphLaunch: five kernels
      .External(2, 9)
      .Runtime(t + us(130), t + us(140), 2, 211)            // cudaLaunchKernel
      .Driver(t + us(132), t + us(138), 3, 307);            // cuLaunchKernel inside it
  BufferBuilder gpu;
  gpu.Kernel(t + us(30), t + us(80), 1, kGemm)
      .Kernel(t + us(35), t + us(60), 1, kCopy)
      .Kernel(t + us(40), t + us(90), 1, kGemm)
      .Kernel(t + us(80), t + us(100), 1, kCopy)
      .Kernel(t + us(100), t + us(120), 1, kGemm)
      .Kernel(t + us(150), t + us(160), 2, kGemm)
      .Kernel(t + us(155), t + us(170), 3, kCopy, 8)
      .Kernel(t + us(122), t + us(128), 4, kCopy);  // delivered late: fits lane 1's gap
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  cupmon::pb::WindowMarker end = begin;
  end.set_edge(cupmon::pb::WindowMarker::END);
  end.set_cupti_ns(kT0 + 200'000);
  end.set_note("duration");
  w.WriteWindowMarker(end);
  w.WriteStats(static_cast<int64_t>(kT0) + 300'000);
  w.Close(static_cast<int64_t>(kT0) + 300'000);
  return api.records() + gpu.records();
}

// A two-rank job whose training steps are annotated "step 1".."step 4", for the Kineto export's
// ProfilerStep#N and HTA's iterations (tests/decoder/kineto_export_test.py knows this layout).
// Rank R (pid 4300 + R, device R): per step, 1 ms apart, on thread 101, all inside the step's
// annotation: cudaLaunchKernel -> gemm (stream 7), cudaLaunchKernel -> copy_kernel (stream 7),
// cudaMemcpyAsync -> HtoD memcpy (stream 7), a launch under a nested "forward" annotation ->
// copy_kernel, and cuLaunchKernel -> an NCCL all-reduce (stream 8). Rank 1 launches one more gemm
// in step 3. Both ranks in one window.
size_t WriteSteps(const std::string& dir) {
  using namespace cupmon::testing;
  using cupmon::decoder::Field;
  constexpr uint64_t kGemm = 0x7f0000002000, kCopy = 0x7f0000004000, kNccl = 0x7f0000006000;
  constexpr int kSteps = 4;
  size_t records = 0;
  for (uint32_t rank = 0; rank < 2; ++rank) {
    const uint32_t pid = 4300 + rank;
    cupmon::pb::RecordingHeader header = SyntheticHeader(kTestRecordingId + 0x10 + rank, pid);
    auto* d1 = header.add_devices();
    d1->CopyFrom(header.devices(0));
    d1->set_id(1);
    header.set_rank(static_cast<int32_t>(rank));
    header.set_world_size(2);
    header.set_job_id("synthetic-steps");
    cupmon::RecordingWriter w(WriterOptions(dir, "cupmon-steps-" + std::to_string(pid)), header);
    CUPMON_CHECK(w.Open().has_value());
    std::vector<cupmon::pb::StringEntry> strings(4 + kSteps);
    strings[0].set_pointer(kGemm), strings[0].set_text("_Z10gemm_tiledILi16EEvPKfS1_Pfi");
    strings[1].set_pointer(kCopy), strings[1].set_text("copy_kernel");
    strings[2].set_pointer(kNccl);
    strings[2].set_text("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
    strings[3].set_pointer(900), strings[3].set_text("forward");  // annotations: pointer = id
    for (int n = 1; n <= kSteps; ++n)
      strings[3 + n].set_pointer(1000 + n), strings[3 + n].set_text("step " + std::to_string(n));
    for (size_t i = 0; i < strings.size(); ++i) strings[i].set_id(static_cast<uint32_t>(i + 1));
    w.AddStrings(strings);
    const cupmon::pb::WindowMarker begin = CalibrateAndOpenWindow(w, kT0 + 500'000);
    auto us = [](uint64_t n) { return n * 1000; };
    BufferBuilder api, gpu;
    auto call = [&](uint32_t kind, uint64_t start, uint64_t end, uint32_t corr, uint32_t cbid,
                    uint64_t annotation) {
      api.External(corr, annotation);
      api.Add(kind, {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
                     {Field::kCbid, cbid}, {Field::kProcessId, pid}, {Field::kThreadId, 101}});
    };
    uint32_t corr = 1;
    for (int n = 1; n <= kSteps; ++n) {
      const uint64_t t = kT0 + us(1000) * n + us(20) * rank, step = 1000 + n;
      call(cupmon::decoder::kKindRuntime, t, t + us(5), corr, 211, step);
      gpu.Kernel(t + us(10), t + us(60), corr++, kGemm, 7, rank);
      call(cupmon::decoder::kKindRuntime, t + us(10), t + us(15), corr, 211, step);
      gpu.Kernel(t + us(60), t + us(110), corr++, kCopy, 7, rank);
      call(cupmon::decoder::kKindRuntime, t + us(20), t + us(24), corr, 41, step);
      gpu.Memcpy(t + us(110), t + us(115), corr++, 1, 1 << 20, 7);
      call(cupmon::decoder::kKindRuntime, t + us(25), t + us(28), corr, 211, 900);
      gpu.Kernel(t + us(115), t + us(125), corr++, kCopy, 7, rank);
      call(cupmon::decoder::kKindDriver, t + us(30), t + us(35), corr, 307, step);
      gpu.Kernel(t + us(130), t + us(300), corr++, kNccl, 8, rank);
      if (rank == 1 && n == 3) {
        call(cupmon::decoder::kKindRuntime, t + us(36), t + us(40), corr, 211, step);
        gpu.Kernel(t + us(300), t + us(350), corr++, kGemm, 7, rank);
      }
    }
    w.WriteRawBuffer(gpu.bytes(), 1, 7);
    w.WriteRawBuffer(api.bytes(), 0, 0);
    cupmon::pb::WindowMarker end = begin;
    end.set_edge(cupmon::pb::WindowMarker::END);
    end.set_cupti_ns(kT0 + us(1000) * (kSteps + 1));
    end.set_note("duration");
    w.WriteWindowMarker(end);
    w.WriteStats(static_cast<int64_t>(kT0) + 10'000'000);
    w.Close(static_cast<int64_t>(kT0) + 10'000'000);
    records += api.records() + gpu.records();
  }
  return records;
}

}  // namespace

// `--job-tables DIR RANKS [WHAT...]`: MakeJobRank's job as the step tables `cupmon-decode job
// --tables-out` writes, a rank at a time (jobs of 1024 ranks and hours of steps).
int WriteJobTables(const char* dir, const cupmon::testing::JobStreamSpec& spec, double scale) {
  namespace job = cupmon::decoder::job;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::vector<std::string> names = cupmon::testing::JobStreamNames();
  uint64_t rows = 0;
  for (uint32_t r = 0; r < spec.ranks; ++r) {
    const cupmon::testing::JobRankTruth t = cupmon::testing::MakeJobRank(spec, r, scale);
    job::RankInput in;
    in.label = "rank " + std::to_string(r) + " (" + t.host + ":" + std::to_string(5000 + r) + ")";
    in.who = {.label = in.label, .rank = r, .rank_from_header = true, .pid = 5000 + r,
              .host = t.host, .job = "synthetic-job",
              .paths = {std::string(dir) + "/rank" + std::to_string(r)}};
    in.names = names;
    for (const auto& k : t.kernels) {
      const bool coll = job::IsCollectiveName(names[k.name]);
      if (!k.end)
        in.unfinished.push_back({k.name, k.stream, coll});
      else
        in.spans.push_back({k.start, k.end, static_cast<int64_t>(k.end) + t.wall_minus_cupti,
                            k.name, k.stream, coll});
    }
    for (size_t i = 0; i < t.steps.size(); ++i)
      in.steps.push_back({i + 1, t.steps[i].since, t.steps[i].end,
                          static_cast<int64_t>(t.steps[i].since) + t.wall_minus_cupti,
                          static_cast<int64_t>(t.steps[i].end) + t.wall_minus_cupti});
    char name[64];
    std::snprintf(name, sizeof name, "/rank%05u-%s-%u%s", r, t.host.c_str(), 5000 + r,
                  job::kTableSuffix);
    const job::RankTable table = job::BuildRankTable(in);
    rows += table.rows.size();
    if (auto ok = job::WriteRankTable(dir + std::string(name), table); !ok) {
      std::fprintf(stderr, "%s\n", ok.error().message.c_str());
      return 1;
    }
  }
  std::printf("wrote the step tables of a synthetic job of %u ranks, %llu rank steps, to %s\n",
              spec.ranks, static_cast<unsigned long long>(rows), dir);
  return 0;
}

// `--job DIR RANKS [WHAT...]`: the job of tests/decoder/job_stream.h; returns an exit code.
// `--job-tables` (argv[1]): the same WHATs, plus step-ms:MS (about MS ms a step).
int WriteJob(int argc, char** argv) {
  const bool tables = std::strcmp(argv[1], "--job-tables") == 0;
  double scale = 1.0;
  using cupmon::testing::JobInjection;
  cupmon::testing::JobStreamSpec spec;
  char* end = nullptr;
  const unsigned long ranks = std::strtoul(argv[3], &end, 10);
  if (end == argv[3] || *end || ranks == 0 || ranks > 1024) {
    std::fprintf(stderr, "%s: RANKS must be a number 1..1024, not '%s'\n", argv[0], argv[3]);
    return 2;
  }
  spec.ranks = static_cast<uint32_t>(ranks);
  for (int i = 4; i < argc; ++i) {
    const std::string what = argv[i];
    std::vector<unsigned long long> n;
    const size_t colon = what.find(':');
    const std::string kind = what.substr(0, colon);
    for (size_t at = colon; at != std::string::npos;) {
      const size_t next = what.find(':', at + 1);
      n.push_back(std::strtoull(what.substr(at + 1, next - at - 1).c_str(), nullptr, 10));
      at = next;
    }
    const auto u = [&](size_t k) { return static_cast<uint32_t>(n[k]); };
    if ((kind == "host-gap" || kind == "gpu-work") && n.size() == 3)
      spec.inject.push_back({kind == "host-gap" ? JobInjection::kHostGap : JobInjection::kGpuWork,
                             u(0), u(1), n[2] * 1'000'000});
    else if (kind == "collectives" && n.size() == 2)
      spec.inject.push_back({JobInjection::kCollectives, 0, u(0), n[1] * 1'000'000});
    else if (kind == "hang" && n.size() == 2)
      spec.inject.push_back({JobInjection::kHang, u(0), u(1), 0});
    else if (kind == "first-step" && n.size() == 2 && u(0) < spec.ranks) {
      spec.first_step.resize(spec.ranks, 1);
      spec.first_step[u(0)] = u(1);
    } else if (kind == "steps" && n.size() == 1 && n[0] > 0)
      spec.steps = u(0);
    else if (kind == "skew-period" && n.size() == 1)
      spec.skew_period = u(0);
    else if (tables && kind == "step-ms" && n.size() == 1 && n[0] > 0)
      scale = static_cast<double>(n[0]) / 1.6;  // MakeJobStream's steps: about 1.6 ms
    else {
      std::fprintf(stderr, "%s: cannot read '%s' (host-gap:R:S:MS, gpu-work:R:S:MS, "
                   "collectives:S:MS, hang:R:S, first-step:R:S, steps:N or skew-period:N)\n",
                   argv[0], argv[i]);
      return 2;
    }
  }
  if (tables) return WriteJobTables(argv[2], spec, scale);
  cupmon::testing::WriteJobStream(argv[2], cupmon::testing::MakeJobStream(spec));
  std::printf("wrote a synthetic job of %u ranks (CUPTI test double) to %s/rank*\n", spec.ranks,
              argv[2]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && (std::strcmp(argv[1], "--job") == 0 || std::strcmp(argv[1], "--job-tables") == 0))
    return WriteJob(argc, argv);
  if (argc == 3 && std::strcmp(argv[1], "--overlap") == 0) {
    const size_t n = WriteOverlap(argv[2]);
    std::printf("wrote a synthetic recording (%zu records, CUPTI test double) to %s\n", n, argv[2]);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--nvtx") == 0) {
    const size_t n = cupmon::testing::WriteNvtxRecording(argv[2]);
    std::printf("wrote a synthetic recording with NVTX ranges (%zu records, CUPTI test double) to "
                "%s\n", n, argv[2]);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--memory") == 0) {
    const size_t n = cupmon::testing::WriteMemoryRecording(argv[2]);
    std::printf("wrote a synthetic recording with device memory records (%zu records, CUPTI test "
                "double) to %s\n", n, argv[2]);
    return 0;
  }
  if ((argc == 3 || (argc == 4 && std::strcmp(argv[3], "--wrong") == 0)) &&
      std::strcmp(argv[1], "--memory-check") == 0) {
    std::printf("%s\n", WriteMemoryCheck(argv[2], argc == 4).c_str());
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--annotated-steps") == 0) {
    const size_t n = WriteSteps(argv[2]);
    std::printf("wrote two synthetic recordings (%zu records, CUPTI test double) to %s\n", n,
                argv[2]);
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--overlapping-steps") == 0) {
    cupmon::testing::StepStreamSpec spec;
    spec.overlap_streams = true;
    spec.annotate = true;
    spec.steps = 40;
    const auto truth = cupmon::testing::WriteStepRecording(argv[2], spec);
    std::printf(
        "wrote a synthetic training loop (%llu records, %zu steps, CUPTI test double) to %s\n",
        static_cast<unsigned long long>(truth.records), truth.step_starts.size(), argv[2]);
    return 0;
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--steps") == 0) {
    // The MLP of tests/gpu/torch/train_mlp.py in shape (24 layers), one slow step, noise.
    cupmon::testing::StepStreamSpec spec;
    spec.steps = UINT32_MAX;
    spec.layers = 24;
    spec.slow_step = 1000;
    spec.buffer_records = 20000;
    spec.max_records = std::strtoull(argv[3], nullptr, 10);
    if (spec.max_records == 0) {
      std::fprintf(stderr, "%s: RECORDS must be a positive number, not '%s'\n", argv[0], argv[3]);
      return 2;
    }
    if (argc == 5) {  // a regression to find with cupmon-decode diff
      char* end = nullptr;
      const unsigned long factor = std::strtoul(argv[4], &end, 10);
      if (end == argv[4] || *end || factor == 0 || factor > 1000) {
        std::fprintf(stderr, "%s: SLOWER must be a whole factor 1..1000, not '%s'\n", argv[0],
                     argv[4]);
        return 2;
      }
      spec.wgrad_factor = static_cast<uint32_t>(factor);
    }
    const auto truth = cupmon::testing::WriteStepRecording(argv[2], spec);
    std::printf(
        "wrote a synthetic training loop (%llu records, %zu steps, CUPTI test double) to %s\n",
        static_cast<unsigned long long>(truth.records), truth.step_starts.size(), argv[2]);
    return 0;
  }
  if (argc >= 5 && argc <= 8 && std::strcmp(argv[1], "--day") == 0) {
    // A history: HOURS of activities at RATE a second (the timing recording's mix), rotated at
    // FILE_MB (default 64), a window of 3 GPU buffers every WINDOW_S seconds (default 3600), and
    // from DOMAIN_S seconds on (default: never) CUPTI's clock in another domain.
    const double hours = std::strtod(argv[3], nullptr);
    const double rate = std::strtod(argv[4], nullptr);
    const double file_mb = argc > 5 ? std::strtod(argv[5], nullptr) : 64;
    const double window_s = argc > 6 ? std::strtod(argv[6], nullptr) : 3600;
    const double domain_s = argc > 7 ? std::strtod(argv[7], nullptr) : -1;
    if (!(hours > 0) || !(rate >= 1 && rate <= 1e8) || !(file_mb >= 1) || !(window_s > 0)) {
      std::fprintf(stderr, "%s: --day DIR HOURS RATE [FILE_MB [WINDOW_S [DOMAIN_S]]]: positive "
                   "numbers, RATE at least 1, FILE_MB at least 1\n", argv[0]);
      return 2;
    }
    constexpr double kBufferRecords = 19000;  // WriteLarge's GPU records a buffer
    LargeShape shape;
    shape.step_ns = static_cast<uint64_t>(1e9 / rate);
    shape.file_bytes = static_cast<uint64_t>(file_mb * (1 << 20));
    shape.window_every = std::max<uint64_t>(4, static_cast<uint64_t>(window_s * rate / kBufferRecords));
    if (domain_s >= 0) shape.domain_change_buffer = static_cast<uint64_t>(domain_s * rate / kBufferRecords);
    const size_t n = WriteLarge(argv[2], static_cast<uint64_t>(hours * 3600 * rate), 0, 0, shape);
    std::printf("wrote a synthetic history (%zu records over %g h, CUPTI test double) to %s\n", n,
                hours, argv[2]);
    return 0;
  }
  if (argc == 5 && std::strcmp(argv[1], "--ranks") == 0) {
    char* end = nullptr;
    const unsigned long ranks = std::strtoul(argv[2], &end, 10);
    if (end == argv[2] || *end || ranks == 0 || ranks > 1024) {
      std::fprintf(stderr, "%s: RANKS must be a number 1..1024, not '%s'\n", argv[0], argv[2]);
      return 2;
    }
    const unsigned long long records = std::strtoull(argv[4], &end, 10);
    if (end == argv[4] || *end || records == 0) {
      std::fprintf(stderr, "%s: RECORDS must be a positive number, not '%s'\n", argv[0], argv[4]);
      return 2;
    }
    size_t n = 0;
    for (uint32_t r = 0; r < ranks; ++r)
      n += WriteLarge(std::string(argv[3]) + "/rank" + std::to_string(r), records, r,
                      static_cast<uint32_t>(ranks));
    std::printf("wrote %lu synthetic ranks (%zu records, CUPTI test double) to %s/rank*\n", ranks,
                n, argv[3]);
    return 0;
  }
  const bool help = argc > 1 && (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0);
  if (help || (argc != 2 && argc != 3) || argv[1][0] == '-') {
    std::fprintf(
        help ? stdout : stderr,
        "usage: %s DIR [RECORDS] | --ranks RANKS DIR RECORDS | --overlap DIR |\n"
        "       --annotated-steps DIR | --nvtx DIR | --memory DIR |\n"
        "       --memory-check DIR [--wrong] | --steps DIR RECORDS [SLOWER] |\n"
        "       --overlapping-steps DIR | --job DIR RANKS [WHAT...] |\n"
        "       --job-tables DIR RANKS [WHAT...] |\n"
        "       --day DIR HOURS RATE [FILE_MB [WINDOW_S [DOMAIN_S]]]\n"
        "Writes a synthetic recording (CUPTI test double, not GPU data) into DIR: the small\n"
        "sample, RECORDS records of a training-like mix for timing cupmon-decode,\n"
        "(--ranks) RANKS such recordings of one job in DIR/rank0, DIR/rank1, ...,\n"
        "(--overlap) slices that overlap on one stream and on one thread,\n"
        "(--annotated-steps) a two-rank job with annotated training steps, (--nvtx) NVTX\n"
        "ranges nested on two threads with kernels launched inside them, (--memory)\n"
        "device memory allocated and released on two devices (MEMORY2, MEMORY_POOL),\n"
        "(--memory-check) the records tests/gpu/memory_check.cu should make, its JSON line\n"
        "on stdout (--wrong: one release missing), or\n"
        "(--steps) a training loop of about RECORDS records for timing cupmon-decode steps\n"
        "(SLOWER: its gemm_wgrad kernel lasts SLOWER times longer, a regression for diff), or\n"
        "(--overlapping-steps) such a loop whose streams overlap, recorded out of start order,\n"
        "or (--job) a data-parallel job of RANKS ranks on clocks seconds apart, with WHAT\n"
        "injected: host-gap:R:S:MS, gpu-work:R:S:MS (rank R, step S, MS milliseconds),\n"
        "collectives:S:MS, hang:R:S, first-step:R:S (history from step S), steps:N,\n"
        "skew-period:N (rank R's clocks (R mod N) skews ahead, not R: many ranks);\n"
        "(--job-tables) such a job's step tables, as cupmon-decode job --tables-out\n"
        "writes them, made a rank at a time (WHAT also step-ms:MS, steps of about MS ms); or\n"
        "(--day) HOURS of that mix at RATE activities a second, rotated at FILE_MB (64),\n"
        "a window every WINDOW_S seconds (3600), CUPTI's clock in another domain from\n"
        "DOMAIN_S seconds on (never), for timing ranged reads.\n"
        "  %s /tmp/sample\n  %s /tmp/big 10000000\n  %s --ranks 8 /tmp/job 1000000\n"
        "  %s --memory /tmp/mem\n  %s --day /tmp/day 24 2000\n",
        argv[0], argv[0], argv[0], argv[0], argv[0], argv[0]);
    return help ? 0 : 2;
  }
  char* end = nullptr;
  const unsigned long long records = argc == 3 ? std::strtoull(argv[2], &end, 10) : 0;
  if (argc == 3 && (end == argv[2] || *end != '\0' || records == 0)) {
    std::fprintf(stderr, "%s: RECORDS must be a positive number, not '%s'\n", argv[0], argv[2]);
    return 2;
  }
  const size_t n = argc == 3 ? WriteLarge(argv[1], records)
                             : cupmon::testing::WriteSampleRecording(argv[1]);
  std::printf("wrote a synthetic recording (%zu records, CUPTI test double) to %s\n", n, argv[1]);
  return 0;
}
