// What one packet sequence of the Perfetto export has interned (see sequence_interning.h).
#include "export/perfetto/sequence_interning.h"

#include <string>

#include "export/perfetto/perfetto_protos.h"

namespace cupmon::decoder::perfetto {
namespace {

// "grid 256,1,1 block 128,1,1 registers 32".
std::string LaunchText(const Row& r) {
  std::string s = "grid ";
  for (int i = 0; i < 3; ++i) s += std::to_string(r.launch.grid[i]) + (i < 2 ? "," : "");
  s += " block ";
  for (int i = 0; i < 3; ++i) s += std::to_string(r.launch.block[i]) + (i < 2 ? "," : "");
  return s + " registers " + std::to_string(r.launch.registers);
}

}  // namespace

void SequenceInterning::Clear() {
  name_interned_.clear();
  name_iids_ = 0;
  launches_.clear();
  next_launch_iid_ = 1;
  nvtx_interned_ = false;
  nvtx_scope_interned_ = false;
}

void SequenceInterning::InternFixed(proto_wire::Writer& w) {
  for (uint64_t i = kCatKernel; i <= kCatAnnotation; ++i)
    Intern(w, kInternedCategories, i, kCategoryNames[i]);
  for (uint64_t i = kAnnCorrelation; i <= kAnnLaunchedBeforeWindow; ++i)
    Intern(w, kInternedAnnotationNames, i, kAnnotationNames[i]);
}

void SequenceInterning::InternLaunch(proto_wire::Writer& w, uint64_t iid, const Row& r) {
  Intern(w, kInternedAnnotationStrings, iid, LaunchText(r));
}

void SequenceInterning::InternNvtx(proto_wire::Writer& w) {
  Intern(w, kInternedCategories, kCatNvtx, kCategoryNames[kCatNvtx]);
  for (uint64_t i = kAnnNvtxRange; i <= kAnnUnended; ++i)
    Intern(w, kInternedAnnotationNames, i, kAnnotationNames[i]);
  nvtx_interned_ = true;
}

void SequenceInterning::InternNvtxScope(proto_wire::Writer& w) {
  Intern(w, kInternedAnnotationNames, kAnnNvtxScope, kAnnotationNames[kAnnNvtxScope]);
  nvtx_scope_interned_ = true;
}

}  // namespace cupmon::decoder::perfetto
