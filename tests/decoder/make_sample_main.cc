// Writes a synthetic recording (CUPTI TEST DOUBLE, not GPU data) into a directory:
//   cupmon-make-sample tests/data/synthetic-sample   the small synthetic sample (golden tests write their own)
//   cupmon-make-sample /tmp/big 10000000          N kernel/API records, for timing cupmon-decode
#include <cstdio>
#include <cstdlib>

#include "cupmon/format/check.h"
#include "recording_builder.h"

namespace {

// Launch-like traffic: 19 kernels per runtime launch record, 3 kernel names, in 4 MiB-ish buffers.
size_t WriteLarge(const std::string& dir, uint64_t records) {
  using namespace cupmon::testing;
  auto opts = WriterOptions(dir, "cupmon-large");
  opts.files.retention_bytes = 1ull << 40;
  cupmon::RecordingWriter w(opts, SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  std::vector<cupmon::pb::StringEntry> strings(3);
  const char* names[] = {"_Z6vecAddPKfS0_Pfi", "_Z10gemm_tiledILi16EEvPKfS1_Pfi",
                         "_ZN5flash14softmax_kernelIfEEvPT_i"};
  for (int i = 0; i < 3; ++i) {
    strings[i].set_pointer(0x1000u * (i + 1));
    strings[i].set_text(names[i]);
  }
  w.AddStrings(strings);
  uint64_t t = kT0, written = 0;
  uint32_t corr = 1;
  BufferBuilder b;  // reused: one allocation for the whole run
  while (written < records) {
    b.Clear();
    for (int i = 0; i < 19000 && written < records; ++i, ++written) {
      if (i % 20 == 0) {
        b.Runtime(t, t + 3000, corr, 211);
      } else {
        b.Kernel(t + 5000, t + 5000 + 1000 + (written % 7) * 100, corr, 0x1000u * (1 + written % 3));
        ++corr;
      }
      t += 1500;
    }
    w.WriteRawBuffer(b.bytes(), 1, 7);
  }
  w.Close(0);
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s DIR [RECORDS]\n", argv[0]);
    return 2;
  }
  const size_t n = argc == 3 ? WriteLarge(argv[1], std::strtoull(argv[2], nullptr, 10))
                             : cupmon::testing::WriteSampleRecording(argv[1]);
  std::printf("wrote a synthetic recording (%zu records, CUPTI test double) to %s\n", n, argv[1]);
  return 0;
}
