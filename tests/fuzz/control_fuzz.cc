// libFuzzer target over the control socket's request handling (length check, protobuf parsing,
// validation, dispatch to a fake target): any bytes must be answered or refused, never crash, and
// never make libprotobuf write to the application's stderr.
#include <cstddef>
#include <cstdint>

#include "control_fuzz_entry.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(cupmon::fuzz::AbortOnProtobufLog);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cupmon::fuzz::RunControlFuzzInput(data, size);
  return 0;
}
