// The SQLite export's StringIds table and name ids (see sqlite_strings.h): the first look-up of
// each name.
#include "export/sqlite/sqlite_strings.h"

#include "cupmon/decoder/api_names.h"
#include "cupmon/decoder/kernel_names.h"
#include "export/sqlite/nsys_schema.h"

namespace cupmon::decoder {

SqliteStrings::SqliteStrings() {
  for (int d = 0; d < 2; ++d) api_name_ids_[d].assign(CallbackTableSize(d == 1), 0);
}

void SqliteStrings::ResolveKernel(const Row& r, KernelNames& k) {
  k.known = true;
  if (r.raw_name.empty()) {
    // Unresolved: the placeholder for both names, no mangled name.
    k.demangled = k.short_name = Id(r.name);
    return;
  }
  const std::string demangled = Demangle(std::string(r.raw_name));
  k.demangled = Id(demangled);
  k.short_name = Id(nsys::KernelShortName(demangled));
  k.mangled = Id(r.raw_name);
}

int64_t SqliteStrings::ResolveApiName(bool driver, uint32_t cbid) {
  std::vector<int64_t>& ids = api_name_ids_[driver];
  // nsys names calls as CUPTI does, with the version suffix ("cudaLaunchKernel_v7000").
  const std::string_view cupti = CallbackName(driver, cbid);
  const int64_t id = cupti.empty() ? Id(ApiDisplayName(driver, cbid)) : Id(cupti);
  if (cbid < ids.size()) ids[cbid] = id;
  return id;
}

}  // namespace cupmon::decoder
