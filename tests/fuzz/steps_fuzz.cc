// libFuzzer target over the step finder (`cupmon-decode steps`, the kineto export's ProfilerStep
// events): the input is a flags byte and one raw CUPTI buffer, as for cupmon_record_fuzz, whose
// corpus (record_corpus/) seeds it (see DecodeStepsFuzzInput).
#include <cstddef>
#include <cstdint>

#include "decoder_fuzz_entry.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cupmon::fuzz::DecodeStepsFuzzInput(data, size);
  return 0;
}
