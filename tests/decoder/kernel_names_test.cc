// ShortKernelName (decoder/src/kernel_names.cc): the real kernel names of tests/data/sample, the
// C++ shapes a demangler writes, and inputs that are no signature at all.
#include "cupmon/decoder/kernel_names.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {
namespace {

// tests/data/sample-kernel-names.txt: the demangled kernel names of tests/data/sample, one a line,
// in the order `cupmon-decode summary tests/data/sample --full-names` lists them (memcpy left out).
TEST(ShortKernelNameTest, RealNamesOfTheSample) {
  std::ifstream f(CUPMON_SOURCE_DIR "/tests/data/sample-kernel-names.txt");
  ASSERT_TRUE(f.good()) << "missing tests/data/sample-kernel-names.txt";
  std::vector<std::string> names;
  for (std::string line; std::getline(f, line);) names.push_back(line);
  const std::vector<std::string> expected = {
      "cutlass::Kernel2",
      "cutlass::Kernel2",
      "sm80_xmma_gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_"
      "alignc4_execute_kernel__5x_cublas",
      "at::native::reduce_kernel",
      "cublasLt::splitKreduce_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "cublasLt::splitKreduce_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::vectorized_elementwise_kernel",
      "at::native::vectorized_elementwise_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::(anonymous namespace)::multi_tensor_apply_kernel",
      "at::native::reduce_kernel",
      "at::native::elementwise_kernel",
      "at::native::vectorized_elementwise_kernel",
      "at::native::vectorized_elementwise_kernel",
      "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel",
  };
  ASSERT_EQ(names.size(), expected.size());
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(ShortKernelName(names[i]), expected[i]) << i;
  // The longest of them, the one that pushed the summary off the screen.
  size_t longest = 0;
  for (const auto& n : names) longest = std::max(longest, n.size());
  EXPECT_GT(longest, 3000u);
}

TEST(ShortKernelNameTest, ShapesOfDemangledNames) {
  EXPECT_EQ(ShortKernelName("vecAdd(float const*, float const*, float*, int)"), "vecAdd");
  EXPECT_EQ(ShortKernelName("void gemm_tiled<16>(float const*, float const*, float*, int)"),
            "gemm_tiled");
  EXPECT_EQ(ShortKernelName(Demangle("_Z10gemm_tiledILi16EEvPKfS1_Pfi")), "gemm_tiled");
  EXPECT_EQ(ShortKernelName(Demangle("_ZN5flash14softmax_kernelIfEEvPT_i")),
            "flash::softmax_kernel");
  // Class templates lose their arguments, the class stays.
  EXPECT_EQ(ShortKernelName("Foo<int, Bar<char> >::bar(int)"), "Foo::bar");
  // Return types, also templated or with qualifiers.
  EXPECT_EQ(ShortKernelName("std::pair<int, int> ns::pairs<3>(int)"), "ns::pairs");
  EXPECT_EQ(ShortKernelName("int const* ns::f()"), "ns::f");
  EXPECT_EQ(ShortKernelName("unsigned long long ns::g(int)"), "ns::g");
  // Operators, whose names hold brackets that are none.
  EXPECT_EQ(ShortKernelName("Functor::operator()(int) const"), "Functor::operator()");
  EXPECT_EQ(ShortKernelName("Ptr<int>::operator->() const"), "Ptr::operator->");
  EXPECT_EQ(ShortKernelName("bool operator< <Key>(Key const&, Key const&)"), "operator<");
  EXPECT_EQ(ShortKernelName("std::ostream& operator<< <char>(std::ostream&, char)"), "operator<<");
  EXPECT_EQ(ShortKernelName("X::operator>>=(int)"), "X::operator>>=");
  EXPECT_EQ(ShortKernelName("X::operator bool() const"), "X::operator bool");
  EXPECT_EQ(ShortKernelName("operator new[](unsigned long)"), "operator new[]");
  EXPECT_EQ(ShortKernelName("void k<&Cmp::operator<, 2>(int)"), "k");
  EXPECT_EQ(ShortKernelName("void k<Less<int>, (Op)1>(decltype(a->b))"), "k");
  // "operators" is an identifier, not the keyword.
  EXPECT_EQ(ShortKernelName("void operators::apply<int>(int)"), "operators::apply");
  // Scopes that hold brackets: anonymous namespaces, lambdas, local entities.
  EXPECT_EQ(ShortKernelName("(anonymous namespace)::k(int)"), "(anonymous namespace)::k");
  EXPECT_EQ(ShortKernelName("{lambda(int)#1}::operator()(int) const"),
            "{lambda(int)#1}::operator()");
  EXPECT_EQ(ShortKernelName("void f(int)::{lambda()#1}::operator()() const"),
            "f::{lambda()#1}::operator()");
  EXPECT_EQ(ShortKernelName("a::f(int) const &::Local::run(float)"), "a::f::Local::run");
  // What follows the parameter list goes with it.
  EXPECT_EQ(ShortKernelName("void foo(int) [clone .cold]"), "foo");
  // Template arguments without a parameter list.
  EXPECT_EQ(ShortKernelName("ns::var<int>"), "ns::var");
}

TEST(ShortKernelNameTest, NamesThatAreNoSignatureComeBackWhole) {
  for (const std::string s : {
           "",
           "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
           "triton_poi_fused_add_0",
           "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEE",  // mangled
           "[CUDA memcpy HtoD]",
           "<unresolved kernel name 0x7f00dead>",
           "void foo",                // words, no parameter list
           "a b c",
           "()",                      // a parameter list without a name
           "void (*fp())(int)",       // a function returning a function pointer
           "ns::",                    // a scope without a name
           "foo()::(int)",
           "a%b(int)",                // no C++ name
           "foo<int> (int)",          // a space no demangler writes there
       }) {
    EXPECT_EQ(ShortKernelName(s), s);
  }
}

TEST(ShortKernelNameTest, UnbalancedBracketsComeBackWhole) {
  for (const std::string s : {
           "void foo<int(float)",
           "void foo<int>(float",
           "void foo<int>>(float)",
           "void foo(int))",
           "foo)(",
           "void foo<(int>)(float)",
           "void foo{lambda(int)#1(int)",
           "foo}",
           "operator",
           "void foo<operator",
           "(anonymous namespace",
       }) {
    EXPECT_EQ(ShortKernelName(s), s);
  }
}

TEST(ShortKernelNameTest, HugeAndRandomInputsNeverCrashNorGrow) {
  const std::vector<std::string> huge = {
      std::string(100000, '<'),
      std::string(100000, '('),
      std::string(100000, '>'),
      "void k" + std::string(50000, '<') + std::string(50000, '>') + "(int)",
      "void k<" + std::string(99990, 'x') + ">(int)",
  };
  EXPECT_EQ(ShortKernelName(huge[0]), huge[0]);
  EXPECT_EQ(ShortKernelName(huge[1]), huge[1]);
  EXPECT_EQ(ShortKernelName(huge[2]), huge[2]);
  EXPECT_EQ(ShortKernelName(huge[3]), "k");
  EXPECT_EQ(ShortKernelName(huge[4]), "k");
  std::string scopes;
  for (int i = 0; i < 20000; ++i) scopes += "ns::";
  EXPECT_EQ(ShortKernelName(scopes), scopes);
  EXPECT_EQ(ShortKernelName(scopes + "k<int>(int)"), scopes + "k");

  // Random strings over the characters that matter: the result is the input or shorter, and
  // never empty for a non-empty input.
  const std::string alphabet = "<>(){}[]: ,&*#abcoperator-=";
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (int round = 0; round < 20000; ++round) {
    std::string s;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const size_t length = (state >> 33) % 64;
    for (size_t i = 0; i < length; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      s += alphabet[(state >> 33) % alphabet.size()];
    }
    const std::string out = ShortKernelName(s);
    ASSERT_LE(out.size(), s.size()) << s;
    ASSERT_EQ(out.empty(), s.empty()) << s;
  }
  // Bytes that are no text, NULs included.
  std::string bytes;
  for (int i = 0; i < 256; ++i) bytes += static_cast<char>(i);
  EXPECT_EQ(ShortKernelName(bytes), bytes);
}

}  // namespace
}  // namespace cupmon::decoder
