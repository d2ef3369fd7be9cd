// The build's facts behind --version (cupmon/format/build_info.h); CMake passes them in as macros.
#include "cupmon/format/build_info.h"

#include "cupmon/format/chunk.h"

#if !defined(CUPMON_PROJECT_VERSION) || !defined(CUPMON_GIT_REVISION) || \
    !defined(CUPMON_CUPTI_API_VERSION)
#error "format/CMakeLists.txt defines the version macros"
#endif

namespace cupmon {

std::string_view ProjectVersion() { return CUPMON_PROJECT_VERSION; }
std::string_view GitRevision() { return CUPMON_GIT_REVISION; }
uint32_t CuptiApiVersion() { return CUPMON_CUPTI_API_VERSION; }

std::string VersionText(std::string_view program, std::string_view more_lines) {
  std::string s;
  s.append(program).append(" ").append(ProjectVersion());
  s.append("\nrevision: ").append(GitRevision());
  // A reader takes every minor version of its major one (docs/FORMAT.md, "Versioning rules").
  s.append("\nformat: writes ")
      .append(std::to_string(kFormatMajor))
      .append(".")
      .append(std::to_string(kFormatMinor))
      .append(", reads ")
      .append(std::to_string(kFormatMajor))
      .append(".x");
  s.append("\ncupti: ");
  if (CuptiApiVersion() != 0) {
    s.append(std::to_string(CuptiApiVersion()));
  } else {
    s.append("none (built without CUDA)");
  }
  if (!more_lines.empty()) s.append("\n").append(more_lines);
  return s;
}

}  // namespace cupmon
