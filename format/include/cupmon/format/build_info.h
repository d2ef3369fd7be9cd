// What this build of cupmon is: its version, git revision, file format and the CUPTI it was
// compiled against, as every tool's --version and the C API's cupmon_version() report them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cupmon {

// Fixed when CMake configured the build (cmake/CupmonVersion.cmake). Thread-safe, no allocation.
std::string_view ProjectVersion();  // "0.1.0", the project() version in CMakeLists.txt
std::string_view GitRevision();     // `git describe --always --dirty`, or "unknown"
uint32_t CuptiApiVersion();         // CUPTI_API_VERSION of cupti.h; 0 in a build without CUDA

// The text `<program> --version` prints, one fact a line, with no final newline:
//   <program> <version>
//   revision: <git describe>
//   format: writes <major>.<minor>, reads <major>.x
//   cupti: <CUPTI_API_VERSION>            (or "cupti: none (built without CUDA)")
// then `more_lines` (each "key: value", without newlines at either end) where a program reads
// something else too. Tests and scripts read these lines by their keys.
std::string VersionText(std::string_view program, std::string_view more_lines = {});

}  // namespace cupmon
