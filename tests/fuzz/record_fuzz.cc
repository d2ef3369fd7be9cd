// libFuzzer target over the record decoder, joins, names and reordering with no chunk framing in
// the way: the input is a flags byte and one raw CUPTI buffer (see DecodeRawBufferFuzzInput).
#include <cstddef>
#include <cstdint>

#include "decoder_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cupmon::fuzz::DecodeRawBufferFuzzInput(data, size);
  return 0;
}
