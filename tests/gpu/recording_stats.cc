// Prints one line of key=value figures about the recording(s) in a directory, for
// tools/gpu-bench-overhead: kernel rows decoded, the writer's final Stats (records, raw and written
// bytes, drops, losses, retention, windows) and read damage. Exit status 1 when the directory holds no readable recording.
//   recording_stats DIR
#include <cstdio>
#include <string>

#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"

namespace {

class KernelCounter : public cupmon::decoder::RowSink {
 public:
  void OnRow(const cupmon::decoder::Row& r) override {
    if (r.type == cupmon::decoder::RowType::kKernel) ++kernels;
    else if (r.type == cupmon::decoder::RowType::kApi) ++api;
  }
  unsigned long long kernels = 0, api = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: recording_stats DIR\n");
    return 2;
  }
  auto listing = cupmon::decoder::ListRecordings(argv[1]);
  if (!listing || listing->recordings.empty()) {
    std::fprintf(stderr, "recording_stats: no recording in %s%s\n", argv[1],
                 listing ? "" : (": " + listing.error().message).c_str());
    return 1;
  }
  for (const auto& rec : listing->recordings) {
    KernelCounter sink;
    cupmon::decoder::TraceBuilder builder(cupmon::decoder::TraceFilter{}, &sink);
    cupmon::decoder::ReadIntegrity integrity;
    cupmon::decoder::ReadRecording(rec, builder, &integrity);
    builder.Finish();
    const auto& s = builder.counts().stats;
    std::printf(
        "pid=%u files=%zu kernels_decoded=%llu api_decoded=%llu records=%llu kernel_records=%llu "
        "raw_bytes=%llu written_bytes=%llu dropped=%llu unmet_requests=%llu zero_ts=%llu "
        "chunks_lost=%llu damage=%llu lost_records=%llu lost_kernels=%llu records_deleted=%llu "
        "kernels_deleted=%llu files_deleted=%llu windows_opened=%llu windows_refused=%llu "
        "ended=%d\n",
        rec.header.pid(), rec.files.size(), sink.kernels, sink.api,
        static_cast<unsigned long long>(s.records()), static_cast<unsigned long long>(s.kernel_records()),
        static_cast<unsigned long long>(s.raw_bytes()), static_cast<unsigned long long>(s.compressed_bytes()),
        static_cast<unsigned long long>(s.dropped_records()), static_cast<unsigned long long>(s.pool_exhausted()),
        static_cast<unsigned long long>(s.zero_timestamp_records()),
        static_cast<unsigned long long>(s.chunks_lost()),
        static_cast<unsigned long long>(integrity.damaged_ranges + integrity.undecodable_chunks +
                                        integrity.sequence_gaps + integrity.missing_files),
        static_cast<unsigned long long>(s.lost_records()),
        static_cast<unsigned long long>(s.lost_kernel_records()),
        static_cast<unsigned long long>(s.records_deleted()),
        static_cast<unsigned long long>(s.kernel_records_deleted()),
        static_cast<unsigned long long>(s.files_deleted()),
        static_cast<unsigned long long>(s.windows_opened()),
        static_cast<unsigned long long>(s.windows_refused()), builder.counts().stats_final ? 1 : 0);
  }
  return 0;
}
