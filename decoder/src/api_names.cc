// cbid -> API name lookups over the generated tables in cbid_names.inc.
#include "cupmon/decoder/api_names.h"

#include <iterator>

namespace cupmon::decoder {
namespace {
#include "cbid_names.inc"
}  // namespace

std::string_view CallbackName(bool driver, uint32_t cbid) {
  if (driver) return cbid < std::size(kDriverCbidNames) ? kDriverCbidNames[cbid] : "";
  return cbid < std::size(kRuntimeCbidNames) ? kRuntimeCbidNames[cbid] : "";
}

std::string ApiDisplayName(bool driver, uint32_t cbid) {
  std::string_view name = CallbackName(driver, cbid);
  if (name.empty()) return "cbid#" + std::to_string(cbid);
  // Runtime names carry the version that introduced them ("_v3020"); nvprof shows them without.
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      name.find_first_not_of("0123456789", v + 2) == std::string_view::npos)
    name = name.substr(0, v);
  return std::string(name);
}

uint32_t CallbackTableSize(bool driver) {
  return static_cast<uint32_t>(driver ? std::size(kDriverCbidNames) : std::size(kRuntimeCbidNames));
}

}  // namespace cupmon::decoder
