// libFuzzer target over the PyTorch CUPTI monitor dump reader (metadata JSON, chunk headers,
// lengths and resynchronisation) and the record decoder behind it: never crash on any input.
#include <cstddef>
#include <cstdint>

#include "decoder_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cupmon::fuzz::DecodeTorchDumpFuzzInput(data, size);
  return 0;
}
