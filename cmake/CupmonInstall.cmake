# What `cmake --install` lays out, and the exported CMake and pkg-config packages:
#   bin/                cupmon-run, cupmonctl, cupmon-decode      (install rules next to each target)
#   lib/                libcupmon.so (C API), libcupmon_{base,format,decoder,proto}.a
#   include/            cupmon/cupmon.h, cupmon/base/, cupmon/format/, cupmon/decoder/,
#                       cupmon/proto/cupmon.pb.h
#   lib/cmake/cupmon/   cupmonConfig.cmake, cupmonConfigVersion.cmake, cupmonTargets.cmake (cupmon::)
#   lib/pkgconfig/      cupmon.pc (the C API library; only when libcupmon.so is built)
#   share/cupmon/       docs, deploy recipes, the Python package (python/cupmon)
# Two install components: `runtime` (the default: bin/, the shared libraries, cupmon.h, cupmon.pc and
# share/cupmon, what a host or an image runs, and what the packages of cmake/CupmonPackage.cmake
# hold) and `development` (the static libraries, their headers and the CMake package, for building
# against the decoder). `cmake --install` without --component installs both.
# The package exports what this configuration built: without CUDA there is no libcupmon.so, so no
# cupmon::cupmon and no cupmon.pc; base, format and decoder are always there. Included once, at the end of
# the top-level CMakeLists.txt, after every target exists.
include(CMakePackageConfigHelpers)

set(CUPMON_INSTALL_CMAKEDIR lib/cmake/cupmon)

# The libraries an outside project may link. Their include directories are source paths in the build
# tree; exported, they must name the install tree instead (CMake refuses source paths in an export).
function(cupmon_export_static_library target install_include_dir)
  get_target_property(build_dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(dirs "")
  foreach(dir IN LISTS build_dirs)
    list(APPEND dirs "$<BUILD_INTERFACE:${dir}>")
  endforeach()
  list(APPEND dirs "$<INSTALL_INTERFACE:${install_include_dir}>")
  set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${dirs}")
  # The public headers use <expected> and std::span: C++23 for whoever includes them.
  set_property(TARGET ${target} APPEND PROPERTY INTERFACE_COMPILE_FEATURES cxx_std_23)
endfunction()

cupmon_export_static_library(cupmon_base include)
cupmon_export_static_library(cupmon_format include)
cupmon_export_static_library(cupmon_decoder include)
cupmon_export_static_library(cupmon_proto include/cupmon/proto)
set_target_properties(cupmon_base PROPERTIES EXPORT_NAME base)
set_target_properties(cupmon_format PROPERTIES EXPORT_NAME format)
set_target_properties(cupmon_decoder PROPERTIES EXPORT_NAME decoder)
set_target_properties(cupmon_proto PROPERTIES EXPORT_NAME proto)

# The generated protobuf code (proto/ has no install rules of its own). The format and decoder
# headers include "cupmon.pb.h", hence its own folder on the include path, not include/ itself.
install(TARGETS cupmon_proto EXPORT cupmonTargets ARCHIVE DESTINATION lib COMPONENT development)
install(FILES ${PROJECT_BINARY_DIR}/proto/cupmon.pb.h DESTINATION include/cupmon/proto
  COMPONENT development)
# cupmon_warnings only carries warning flags; the static libraries name it as a link-only
# dependency, so the export needs it too (it adds nothing to a consumer's compile).
install(TARGETS cupmon_warnings EXPORT cupmonTargets COMPONENT development)

if(TARGET cupmon_shared)
  set_target_properties(cupmon_shared PROPERTIES EXPORT_NAME cupmon)
endif()

# A sanitized build exports sanitized code: whoever links it needs the sanitizer runtime first.
set(CUPMON_PC_SANITIZE "")
if(CUPMON_SANITIZE)
  foreach(target cupmon_base cupmon_format cupmon_decoder cupmon_proto cupmon_shared)
    if(TARGET ${target})
      set_property(TARGET ${target} APPEND PROPERTY INTERFACE_LINK_OPTIONS
                   "$<INSTALL_INTERFACE:-fsanitize=${CUPMON_SANITIZE}>")
    endif()
  endforeach()
  set(CUPMON_PC_SANITIZE " -fsanitize=${CUPMON_SANITIZE}")
endif()

install(EXPORT cupmonTargets NAMESPACE cupmon:: DESTINATION ${CUPMON_INSTALL_CMAKEDIR}
  COMPONENT development)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/cupmonConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cupmonConfig.cmake INSTALL_DESTINATION ${CUPMON_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cupmonConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cupmonConfig.cmake ${PROJECT_BINARY_DIR}/cupmonConfigVersion.cmake
  DESTINATION ${CUPMON_INSTALL_CMAKEDIR} COMPONENT development)

if(TARGET cupmon_shared)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/cupmon.pc.in ${PROJECT_BINARY_DIR}/cupmon.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/cupmon.pc DESTINATION lib/pkgconfig)
endif()

# share/cupmon: documentation, the deploy recipes (scripts keep their execute bits) and the
# pure-Python package, which finds ../../../../lib/libcupmon.so from there.
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION share/cupmon)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/cupmon/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/ DESTINATION share/cupmon/deploy USE_SOURCE_PERMISSIONS)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ DESTINATION share/cupmon/python
  PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE PATTERN "*.egg-info" EXCLUDE
  PATTERN build EXCLUDE PATTERN tests EXCLUDE)
