// The Nsight Systems schema helpers of the SQLite export
// (decoder/src/export/sqlite/nsys_schema.cc): short kernel names, id packing, memory kinds, UUID
// text, and the table list itself. Runs in builds without SQLite too.
#include "export/sqlite/nsys_schema.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder::nsys {
namespace {

TEST(NsysSchemaTest, ShortNameIsTheBaseFunctionName) {
  EXPECT_EQ(KernelShortName("void at::native::vectorized_elementwise_kernel<4, "
                            "at::native::BinaryFunctor<float, float, float, "
                            "at::native::binary_internal::MulFunctor<float> >, "
                            "at::detail::Array<char*, 3> >(int, at::native::BinaryFunctor<float, "
                            "float, float, at::native::binary_internal::MulFunctor<float> >, "
                            "at::detail::Array<char*, 3>)"),
            "vectorized_elementwise_kernel");
  EXPECT_EQ(KernelShortName("void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>("
                            "cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)"),
            "Kernel2");
  // Anonymous namespaces and lambdas sit inside brackets.
  EXPECT_EQ(KernelShortName("void at::native::(anonymous namespace)::distribution_kernel<float, "
                            "4, at::native::foo(at::TensorBase const&)::{lambda(int)#1}>(long, "
                            "at::PhiloxCudaState)"),
            "distribution_kernel");
  EXPECT_EQ(KernelShortName("vecAdd(float const*, float const*, float*, int)"), "vecAdd");
  EXPECT_EQ(KernelShortName(Demangle("_Z10gemm_tiledILi16EEvPKfS1_Pfi")), "gemm_tiled");
  EXPECT_EQ(KernelShortName(Demangle("_ZN5flash14softmax_kernelIfEEvPT_i")), "softmax_kernel");
  // Not a C++ signature: whole.
  EXPECT_EQ(KernelShortName("ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  EXPECT_EQ(KernelShortName("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(KernelShortName("<unresolved kernel name 0x99>"), "<unresolved kernel name 0x99>");
  EXPECT_EQ(KernelShortName(""), "");
  EXPECT_EQ(KernelShortName("(broken"), "(broken");
  EXPECT_EQ(KernelShortName("void foo(int))"), "void foo(int))");
  EXPECT_EQ(KernelShortName(std::string(100000, '<')), std::string(100000, '<'));
  // Member functions: the qualifier after the parameters is no name, nor are operators brackets.
  EXPECT_EQ(KernelShortName("Functor::operator()(int) const"), "operator()");
  EXPECT_EQ(KernelShortName("Ptr<int>::operator->() const"), "operator->");
  EXPECT_EQ(KernelShortName("void k<&Cmp::operator<, 2>(int)"), "k");
  EXPECT_EQ(KernelShortName("void f(int)::{lambda(at::Foo)#1}::operator()(int) const"),
            "operator()");
  EXPECT_EQ(KernelShortName("(anonymous namespace)::k(int)"), "k");
}

TEST(NsysSchemaTest, GlobalIdsPackAsNsysDoes) {
  // <hardware id:8><VM id:8><process id:24><thread id:24>; a globalPid has thread id 0.
  EXPECT_EQ(GlobalPid(0, 2098), int64_t{2098} << 24);
  EXPECT_EQ(GlobalTid(GlobalPid(0, 2098), 3), (int64_t{2098} << 24) | 3);
  EXPECT_EQ(GlobalPid(1, 2098), (int64_t{1} << 48) | (int64_t{2098} << 24));
  // nsys's kernel-launch join: kernel.globalPid = runtime.globalTid & 0xFFFFFFFFFF000000.
  const int64_t tid = GlobalTid(GlobalPid(5, 4194303), 16777215);
  EXPECT_EQ(tid & static_cast<int64_t>(0xFFFFFFFFFF000000), GlobalPid(5, 4194303));
  EXPECT_EQ(tid / 0x1000000 % 0x1000000, 4194303);  // the PID recipe of the nsys docs
  EXPECT_EQ(tid % 0x1000000, 16777215);             // and the TID recipe
  EXPECT_GT(GlobalTid(GlobalPid(kMaxNode, 0xFFFFFF), 0xFFFFFF), 0);  // positive in SQLite
}

TEST(NsysSchemaTest, MemoryKindsFollowNsysNumbering) {
  EXPECT_EQ(MemKind(1), 0);  // CUPTI PAGEABLE -> nsys Pageable
  EXPECT_EQ(MemKind(2), 1);  // PINNED
  EXPECT_EQ(MemKind(3), 2);  // DEVICE
  EXPECT_EQ(MemKind(7), 6);  // MANAGED_STATIC
  EXPECT_EQ(MemKind(0), 7);  // UNKNOWN is last in nsys
  EXPECT_EQ(MemKind(99), 7);
}

TEST(NsysSchemaTest, UuidTextAsNvidiaSmiPrintsIt) {
  const std::string bytes("\x4f\x3a\xb6\xcf\x3e\xf9\xf5\x06\x06\x57\x47\x24\x46\x73\xca\x3b", 16);
  EXPECT_EQ(GpuUuidText(bytes), "GPU-4f3ab6cf-3ef9-f506-0657-47244673ca3b");
  EXPECT_EQ(GpuUuidText("short"), "");
}

TEST(NsysSchemaTest, TablesAndEnumsAreConsistent) {
  std::set<std::string> names;
  for (const Table& t : Tables()) {
    EXPECT_TRUE(names.insert(t.name).second) << t.name;
    EXPECT_EQ(std::string(t.create).rfind(std::string("CREATE TABLE ") + t.name + " (", 0), 0u)
        << t.name;
  }
  for (const char* required :
       {"StringIds", "META_DATA_EXPORT", "TARGET_INFO_GPU", "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "ENUM_NSYS_EVENT_CLASS", "ENUM_CUDA_MEMCPY_OPER",
        "ENUM_CUDA_MEM_KIND", "ENUM_CUPTI_SYNC_TYPE", "CUPMON_RANKS"})
    EXPECT_TRUE(names.count(required)) << required;
  std::set<std::pair<std::string, int>> ids;
  for (const EnumRow& e : EnumRows()) {
    EXPECT_TRUE(names.count(e.table)) << e.table;
    EXPECT_TRUE(ids.insert({e.table, e.id}).second) << e.table << " " << e.id;
  }
  // The ids the export writes have labels.
  EXPECT_TRUE(ids.count({"ENUM_NSYS_EVENT_CLASS", kEventClassCudaRuntime}));
  EXPECT_TRUE(ids.count({"ENUM_NSYS_EVENT_CLASS", kEventClassCudaDriver}));
  for (int k = 0; k <= 10; ++k) EXPECT_TRUE(ids.count({"ENUM_CUDA_MEMCPY_OPER", k})) << k;
  for (int k = 0; k <= 7; ++k) EXPECT_TRUE(ids.count({"ENUM_CUDA_MEM_KIND", MemKind(k)})) << k;
  for (int k = 0; k <= 4; ++k) EXPECT_TRUE(ids.count({"ENUM_CUPTI_SYNC_TYPE", k})) << k;
}

}  // namespace
}  // namespace cupmon::decoder::nsys
