// libFuzzer target over the reader (chunk scanning, decompression, parsing) and the record decoder
// with joins and reordering: any input must be reported and counted, never crash.
#include <cstddef>
#include <cstdint>

#include "decoder_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cupmon::fuzz::DecodeFuzzInput(data, size);
  return 0;
}
