// Format benchmarks: write path (frame + encode + zstd + file write through RecordingWriter),
// compression ratio, and read path (scan + checksum + decompress + inverse transform), for each
// raw-buffer encoding on the real H200 records and on a larger synthetic kernel stream.
// Run: build-format/tests/bench/cupmon_format_bench; figures go in docs/PERFORMANCE.md.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/format/recording_writer.h"
#include "test_data.h"
#include "test_files.h"

namespace cupmon {
namespace {

struct DataSet {
  std::string name;
  std::vector<uint8_t> bytes;
  std::vector<std::span<const uint8_t>> buffers;  // 4 MiB, record-aligned, as CUPTI hands them over
  size_t records = 0;
};

// A synthetic stream of CUPTI 13.0 concurrent-kernel records (216 bytes) shaped like a training
// step: a few hundred distinct kernels (name pointers, grid sizes), increasing timestamps and
// correlation ids, one device and a few streams. Not real CUPTI output: a stand-in for a larger
// and more varied recording than the real files.
std::vector<uint8_t> SyntheticKernels(size_t n) {
  std::mt19937_64 rng(2024);
  std::vector<uint8_t> out(n * 216, 0);
  uint64_t t = 1'760'000'000'000'000'000ull;
  constexpr size_t kDistinct = 330;
  std::vector<uint64_t> names(kDistinct), grids(kDistinct), durations(kDistinct);
  for (size_t k = 0; k < kDistinct; ++k) {
    names[k] = 0x7f3a00000000ull + rng() % 0x1000000 * 16;
    grids[k] = (rng() % 4096 + 1) | uint64_t{rng() % 8 + 1} << 32;
    durations[k] = 2'000 + rng() % 200'000;
  }
  for (size_t i = 0; i < n; ++i) {
    uint8_t* r = out.data() + i * 216;
    const size_t k = i % kDistinct;
    PutLe32(r, 10);                                // kind
    PutLe64(r + 8, 0x000A0020);                    // cache config, shared memory, registers
    t += 1'500 + rng() % 3'000;
    PutLe64(r + 16, t);                            // start
    PutLe64(r + 24, t + durations[k] + rng() % 500);  // end
    PutLe64(r + 32, t - 4'000 - rng() % 1'000);    // completed/queued
    PutLe32(r + 40, 0);                            // device
    PutLe32(r + 44, 1);                            // context
    PutLe32(r + 48, 7 + static_cast<uint32_t>(rng() % 4));  // stream
    PutLe64(r + 52, grids[k]);                     // grid x, y
    PutLe32(r + 60, 1);
    PutLe64(r + 64, 0x0000000100000100ull);        // block
    PutLe32(r + 88, static_cast<uint32_t>(i + 1000));  // correlation id
    PutLe64(r + 104, names[k]);                    // name pointer
    PutLe64(r + 120, i / 330);                     // graph node id-like counter
  }
  return out;
}

// 0: real always-on, 1: real window, 2: synthetic kernels (4 MiB buffers, as the monitor's default);
// 3: the real always-on records in 1 MiB buffers, to show how buffer size affects speed.
constexpr int kDataSets = 4;

DataSet& Data(int which) {
  static DataSet sets[kDataSets];
  DataSet& d = sets[which];
  if (!d.bytes.empty()) return d;
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  if (which == 0) {
    d.name = "alwayson";
    d.bytes = testing::LoadRealRecords(testing::kAlwaysOnFile);
  } else if (which == 1) {
    d.name = "window";
    d.bytes = testing::LoadRealRecords(testing::kWindowFile);
  } else if (which == 2) {
    d.name = "synthetic_kernels";
    d.bytes = SyntheticKernels(400'000);  // 86.4 MB
  } else {
    d.name = "alwayson_1MiB";
    d.bytes = testing::LoadRealRecords(testing::kAlwaysOnFile);
  }
  d.buffers = testing::SplitIntoBuffers(d.bytes, sizes, which == 3 ? 1u << 20 : 4u << 20);
  d.records = WalkRecords(d.bytes, sizes, [](uint32_t, std::span<const uint8_t>) {}).records;
  return d;
}

pb::RecordingHeader Header(bool synthetic) {
  pb::RecordingHeader h;
  h.set_host("bench");
  h.set_synthetic(synthetic);
  const RecordSizeTable t = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!t.Size(k)) continue;
    auto* rs = h.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(t.Size(k));
  }
  return h;
}

RecordingWriterOptions Options(const std::string& dir, Encoding e) {
  RecordingWriterOptions o;
  o.files.directory = dir;
  o.files.prefix = "bench";
  o.files.retention_bytes = 512ull << 20;  // bounded disk use however long it runs
  o.encoding = e;
  return o;
}

void SetCounters(benchmark::State& state, const DataSet& d, double ratio) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * d.records));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * d.bytes.size()));
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(state.iterations() * d.records),
                         benchmark::Counter::kIsRate);
  state.counters["ratio"] = ratio;
}

// Write path: WriteRawBuffer per 4 MiB buffer, into real files (rotation and retention included).
void BM_Write(benchmark::State& state, int which, Encoding e) {
  const DataSet& d = Data(which);
  testing::TempDir dir;
  RecordingWriter w(Options(dir.path(), e), Header(which == 2));
  if (!w.Open()) {
    state.SkipWithError("cannot open the writer");
    return;
  }
  for (auto _ : state) {
    for (auto b : d.buffers) w.WriteRawBuffer(b, 1, 1);
  }
  const double ratio = static_cast<double>(w.stats().raw_bytes()) /
                       static_cast<double>(w.stats().compressed_bytes());
  if (w.stats().write_errors()) state.SkipWithError(w.last_error().c_str());
  w.Close(0);
  SetCounters(state, d, ratio);
}

// Read path on one file written with `e`: scan (header and payload checksums), decompress and
// invert the transform for every raw-buffer chunk.
void BM_Read(benchmark::State& state, int which, Encoding e) {
  const DataSet& d = Data(which);
  testing::TempDir dir;
  {
    auto o = Options(dir.path(), e);
    o.files.file_bytes = 1ull << 30;
    o.files.retention_bytes = 4ull << 30;
    RecordingWriter w(o, Header(which == 2));
    if (!w.Open()) {
      state.SkipWithError("cannot open the writer");
      return;
    }
    for (auto b : d.buffers) w.WriteRawBuffer(b, 1, 1);
    w.Close(0);
  }
  const auto files = testing::ListFiles(dir.path());
  if (files.size() != 1) {
    state.SkipWithError("expected one file");
    return;
  }
  const std::vector<uint8_t> file = testing::ReadFileBytes(files[0]);
  RawBufferDecoder decoder;
  std::vector<uint8_t> raw;
  std::vector<Damage> damage;
  size_t bytes_out = 0;
  for (auto _ : state) {
    ChunkScanner scanner(file);
    bytes_out = 0;
    while (auto c = scanner.Next(&damage)) {
      if (c->header.type != static_cast<uint8_t>(ChunkType::kRawBuffer)) continue;
      auto r = decoder.Decode(c->header.encoding, c->payload.subspan(kRawBufferPrefixSize),
                              c->header.uncompressed_length, &raw);
      if (!r) state.SkipWithError(r.error().message.c_str());
      bytes_out += raw.size();
      benchmark::DoNotOptimize(raw.data());
    }
  }
  if (bytes_out != d.bytes.size() || !damage.empty()) state.SkipWithError("read back wrong bytes");
  SetCounters(state, d, static_cast<double>(d.bytes.size()) / static_cast<double>(file.size()));
}

// The transform alone (no zstd), to show where the time goes.
void BM_Transform(benchmark::State& state, int which, bool delta, bool inverse) {
  const DataSet& d = Data(which);
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  std::vector<std::vector<uint8_t>> cols(d.buffers.size());
  for (size_t i = 0; i < d.buffers.size(); ++i)
    ColumnarTransform(d.buffers[i], sizes, delta, &cols[i]);
  std::vector<uint8_t> out;
  for (auto _ : state) {
    for (size_t i = 0; i < d.buffers.size(); ++i) {
      if (inverse) {
        (void)ColumnarInverse(cols[i], delta, &out);
      } else {
        ColumnarTransform(d.buffers[i], sizes, delta, &out);
      }
      benchmark::DoNotOptimize(out.data());
    }
  }
  SetCounters(state, d, 1.0);
}

}  // namespace
}  // namespace cupmon

int main(int argc, char** argv) {
  using cupmon::Encoding;
  const Encoding encodings[] = {Encoding::kStored, Encoding::kZstd, Encoding::kColumnsZstd,
                                Encoding::kColumnsDeltaZstd};
  for (int which = 0; which < cupmon::kDataSets; ++which) {
    const std::string data = cupmon::Data(which).name;
    for (Encoding e : encodings) {
      if (which == 3 && e != Encoding::kColumnsDeltaZstd) continue;
      const std::string enc = cupmon::EncodingName(static_cast<uint8_t>(e));
      benchmark::RegisterBenchmark(("Write/" + data + "/" + enc).c_str(), cupmon::BM_Write, which, e)
          ->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark(("Read/" + data + "/" + enc).c_str(), cupmon::BM_Read, which, e)
          ->Unit(benchmark::kMillisecond);
    }
    for (bool delta : {false, true}) {
      if (which == 3 && !delta) continue;
      for (bool inverse : {false, true}) {
        const std::string name = std::string(inverse ? "Inverse/" : "Transform/") + data +
                                 (delta ? "/columns+delta" : "/columns");
        benchmark::RegisterBenchmark(name.c_str(), cupmon::BM_Transform, which, delta, inverse)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
