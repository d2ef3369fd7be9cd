// Consumer of the installed cupmon::decoder, cupmon::format and cupmon::base libraries: lists a
// directory of recordings (argv[1]) and checks CRC-32C's standard check value. Prints "recordings N".
#include <cstdio>
#include <string>

#include "cupmon/base/check.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/format/crc32c.h"

int main(int argc, char** argv) {
  CUPMON_CHECK(argc >= 1);
  if (cupmon::Crc32c("123456789", 9) != 0xE3069283u) {
    std::fprintf(stderr, "crc32c check value mismatch\n");
    return 1;
  }
  if (argc < 2) return 0;
  const auto listing = cupmon::decoder::ListRecordings(argv[1]);
  if (!listing) {
    std::fprintf(stderr, "%s\n", listing.error().message.c_str());
    return 2;
  }
  std::printf("recordings %zu\n", listing->recordings.size());
  return 0;
}
