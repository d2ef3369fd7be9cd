// Checks a recording of known_work: exactly its records, names, sizes and directions, no drops.
#include <cupti.h>

#include <cstdio>
#include <string>

#include "recording_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: check_known_work DIR\n");
    return 2;
  }
  const auto rb = cupmon::testing::ReadRecording(argv[1]);
  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += !ok;
  };
  auto count = [&](uint32_t kind) {
    auto it = rb.records_by_kind.find(kind);
    return it == rb.records_by_kind.end() ? uint64_t{0} : it->second;
  };
  expect(rb.files >= 1, "files found: " + std::to_string(rb.files));
  expect(rb.damage == 0 && rb.truncated_tails == 0 && rb.decode_errors == 0, "no damage");
  expect(!rb.header.synthetic(), "header not synthetic");
  expect(rb.header.devices_size() > 0, "devices in header: " + std::to_string(rb.header.devices_size()));
  expect(count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 300,
         "300 kernel records: " + std::to_string(count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)));
  uint64_t named = 0;
  for (const auto& [name, n] : rb.kernels_by_name) {
    std::printf("     kernel %s x%llu\n", name.c_str(), static_cast<unsigned long long>(n));
    if (name.find("cupmon_test") != std::string::npos && name.find("Scale") != std::string::npos)
      named += n;
  }
  expect(named == 300 && rb.kernels_without_name == 0, "all 300 named cupmon_test::Scale<float>");
  expect(count(CUPTI_ACTIVITY_KIND_MEMCPY) == 3, "3 memcpy records");
  auto by_copy = [&](uint32_t k) {
    auto it = rb.memcpy_by_copy_kind.find(k);
    return it == rb.memcpy_by_copy_kind.end() ? uint64_t{0} : it->second;
  };
  expect(by_copy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD) == 2, "2 HtoD");
  expect(by_copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH) == 1, "1 DtoH");
  expect(rb.memcpy_bytes == (4ull << 20), "memcpy bytes 4 MiB: " + std::to_string(rb.memcpy_bytes));
  expect(count(CUPTI_ACTIVITY_KIND_MEMSET) == 2, "2 memset records");
  expect(rb.memset_bytes == (1536ull << 10), "memset bytes 1.5 MiB: " + std::to_string(rb.memset_bytes));
  expect(rb.records == 305, "305 records in all: " + std::to_string(rb.records));
  expect(rb.last_stats.dropped_records() == 0 && rb.last_stats.pool_exhausted() == 0, "no drops");
  expect(rb.last_stats.zero_timestamp_records() == 0, "no zero timestamps");
  expect(rb.have_footer_ended, "footer with recording_ended");
  return failures ? 1 : 0;
}
