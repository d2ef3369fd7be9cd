# The facts `--version` and cupmon_version() report, fixed when CMake configures the build:
#   CUPMON_GIT_REVISION      `git describe --always --dirty` of the source tree, "unknown" without
#                            git or .git (a release tarball)
#   CUPMON_CUPTI_API_VERSION CUPTI_API_VERSION of the toolkit's cupti_version.h (cupti.h includes
#                            it), 0 when the build has no CUDA headers
# Run in script mode (cmake -DSOURCE_DIR=DIR -P CupmonVersion.cmake) it prints the revision alone,
# which is how tests/tools checks the fallback.

function(cupmon_git_revision source_dir out_var)
  set(revision "unknown")
  find_program(CUPMON_GIT_EXECUTABLE git)
  if(CUPMON_GIT_EXECUTABLE)
    # GIT_CEILING_DIRECTORIES: a tarball unpacked inside some other repository must not report
    # that repository's revision.
    get_filename_component(parent "${source_dir}" DIRECTORY)
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env "GIT_CEILING_DIRECTORIES=${parent}"
              ${CUPMON_GIT_EXECUTABLE} describe --always --dirty
      WORKING_DIRECTORY "${source_dir}"
      OUTPUT_VARIABLE out OUTPUT_STRIP_TRAILING_WHITESPACE
      RESULT_VARIABLE rc ERROR_QUIET)
    if(rc EQUAL 0 AND NOT out STREQUAL "")
      set(revision "${out}")
    endif()
  endif()
  set(${out_var} "${revision}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE)
  cupmon_git_revision("${SOURCE_DIR}" revision)
  message("${revision}")
  return()
endif()

cupmon_git_revision("${PROJECT_SOURCE_DIR}" CUPMON_GIT_REVISION)
# Configure again when HEAD moves (commit, checkout, reset), so that the revision follows it; a tree
# that only becomes dirty keeps the last configure's answer until then.
if(NOT CUPMON_GIT_REVISION STREQUAL "unknown")
  execute_process(
    COMMAND ${CUPMON_GIT_EXECUTABLE} rev-parse --path-format=absolute --git-path logs/HEAD
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    OUTPUT_VARIABLE _cupmon_head_log OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc ERROR_QUIET)
  if(_rc EQUAL 0 AND EXISTS "${_cupmon_head_log}")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_cupmon_head_log}")
  endif()
endif()

set(CUPMON_CUPTI_API_VERSION 0)
if(CUPMON_HAVE_CUDA_HEADERS)
  find_file(CUPMON_CUPTI_VERSION_H cupti_version.h
    PATHS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_TARGET_DIR}/extras/CUPTI/include NO_DEFAULT_PATH)
  if(CUPMON_CUPTI_VERSION_H)
    file(STRINGS "${CUPMON_CUPTI_VERSION_H}" _line REGEX "^#define CUPTI_API_VERSION [0-9]+")
    string(REGEX REPLACE "^#define CUPTI_API_VERSION ([0-9]+).*" "\\1" CUPMON_CUPTI_API_VERSION "${_line}")
  endif()
endif()
message(STATUS "cupmon: version ${PROJECT_VERSION}, revision ${CUPMON_GIT_REVISION}, CUPTI API ${CUPMON_CUPTI_API_VERSION}")
