// libFuzzer target over ShortKernelName and the SQLite export's base name: any byte string, as a
// kernel name, gives back a name no longer than itself, non-empty when it is, without crashing.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cupmon/decoder/kernel_names.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view name(reinterpret_cast<const char*>(data), size);
  const std::string short_name = cupmon::decoder::ShortKernelName(name);
  if (short_name.size() > name.size() || short_name.empty() != name.empty()) __builtin_trap();
  // Idempotent: a short name is its own short name.
  if (cupmon::decoder::ShortKernelName(short_name) != short_name) __builtin_trap();
  return 0;
}
