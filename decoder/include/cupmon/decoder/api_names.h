// CUDA runtime and driver API names from callback ids, from tables generated out of the toolkit's
// cbid headers (tools/gen_cbid_names.py), so no libcupti is needed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cupmon::decoder {

// The name exactly as cuptiGetCallbackName gives it (e.g. "cudaLaunchKernel_v7000"), or "" when
// the id is past the table or unused. `driver` selects the driver table, else the runtime table.
std::string_view CallbackName(bool driver, uint32_t cbid);
// The name for display: the version suffix removed ("cudaLaunchKernel"); "cbid#N" past the table.
std::string ApiDisplayName(bool driver, uint32_t cbid);
// How many ids each table holds (largest id + 1).
uint32_t CallbackTableSize(bool driver);

}  // namespace cupmon::decoder
