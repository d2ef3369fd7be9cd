// Names a person can read: demangled kernel names, the short form the text reports show by default
// (the function's qualified name without return type, template arguments and parameter list), and
// memcpy kinds as nvprof prints them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cupmon::decoder {

// Demangles an Itanium C++ name; returns `name` unchanged when it is not a mangled name.
std::string Demangle(const std::string& name);

// Display names for memcpy kinds as nvprof prints them ("[CUDA memcpy HtoD]"); "[CUDA memcpy
// Unknown]" past the table.
const char* MemcpyKindName(uint32_t copy_kind);

// The qualified name of the function a demangled kernel name denotes, without its return type,
// template argument lists and parameter list:
//   "void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4,
//    ...>(long, ...)"
//     -> "at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel"
// Namespaces and classes stay ("cutlass::Kernel2", "Foo<int>::bar(int)" -> "Foo::bar"), as do
// "(anonymous namespace)", lambda scopes ("{lambda(int)#1}") and operator names ("operator()",
// "operator<<", "operator->"); the parameter list of an enclosing function of a local entity is
// dropped ("f(int)::{lambda()#1}::operator()() const" -> "f::{lambda()#1}::operator()").
//
// nsys's export has two such columns and this is neither exactly: its `shortName` is the base
// function name alone ("distribution_elementwise_grid_stride_kernel": the SQLite schema reference
// calls it "Base function name", and `nsys stats` reports' `:base` option sums "over the base name
// of the kernel, rather than the templated name"), which the SQLite export keeps
// (nsys::KernelShortName). Reports keep the scope because bare names collide more often (every
// `at::native::` elementwise kernel is `elementwise_kernel`) and say less (`Kernel2`).
//
// Never fails: a name that is not a C++ function signature (plain C names, "[CUDA memcpy HtoD]",
// "<unresolved kernel name 0x...>", a mangled name, unbalanced brackets, text with spaces but no
// parameter list) comes back whole. Linear in the name's length; pure, so any thread may call it.
std::string ShortKernelName(std::string_view demangled);

}  // namespace cupmon::decoder
