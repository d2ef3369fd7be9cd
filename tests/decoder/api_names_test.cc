// Checks the generated cbid tables: display rules everywhere, and every entry against
// cuptiGetCallbackName when libcupti is available (it answers without a GPU).
#include "cupmon/decoder/api_names.h"

#include <gtest/gtest.h>

#ifdef CUPMON_HAVE_CUPTI
#include <cupti.h>
#endif

namespace cupmon::decoder {
namespace {

TEST(ApiNamesTest, DisplayNamesDropTheVersionSuffix) {
  EXPECT_EQ(CallbackName(false, 211), "cudaLaunchKernel_v7000");
  EXPECT_EQ(ApiDisplayName(false, 211), "cudaLaunchKernel");
  EXPECT_EQ(ApiDisplayName(true, 307), "cuLaunchKernel");
  EXPECT_EQ(ApiDisplayName(false, 100000), "cbid#100000");
  EXPECT_EQ(ApiDisplayName(true, CallbackTableSize(true)), "cbid#" + std::to_string(CallbackTableSize(true)));
  EXPECT_EQ(ApiDisplayName(false, 0), "cbid#0");
}

#ifdef CUPMON_HAVE_CUPTI
TEST(ApiNamesTest, EveryEntryMatchesCuptiGetCallbackName) {
  for (bool driver : {false, true}) {
    const auto domain = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    uint32_t checked = 0;
    for (uint32_t id = 1; id < CallbackTableSize(driver); ++id) {
      const char* name = nullptr;
      const CUptiResult r = cuptiGetCallbackName(domain, id, &name);
      if (CallbackName(driver, id).empty()) continue;  // no such id in the header
      ASSERT_EQ(r, CUPTI_SUCCESS) << "id " << id;
      EXPECT_EQ(CallbackName(driver, id), name) << (driver ? "driver " : "runtime ") << id;
      ++checked;
    }
    EXPECT_GT(checked, 500u);
    const char* name = nullptr;
    EXPECT_NE(cuptiGetCallbackName(domain, CallbackTableSize(driver), &name), CUPTI_SUCCESS)
        << "libcupti knows ids past the generated table: regenerate cbid_names.inc";
  }
}
#endif

}  // namespace
}  // namespace cupmon::decoder
