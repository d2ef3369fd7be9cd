# Warning flags and sanitizer flags for every cupmon target, in one place.
add_library(cupmon_warnings INTERFACE)
target_compile_options(cupmon_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>)

# Clang checks which lock guards which member (CUPMON_GUARDED_BY, CUPMON_REQUIRES:
# base/include/cupmon/base/thread_annotations.h); GCC ignores the annotations. Only cupmon's own
# targets link cupmon_warnings, and third-party headers come in as system headers, so neither
# Boost, GoogleTest nor protobuf's code is analysed. With CUPMON_THREAD_SAFETY_WERROR (the TSan
# suite of tools/run-tests) a finding fails the build.
option(CUPMON_THREAD_SAFETY_WERROR "With clang: thread-safety findings are errors" OFF)
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  target_compile_options(cupmon_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wthread-safety>)
  if(CUPMON_THREAD_SAFETY_WERROR)
    target_compile_options(cupmon_warnings INTERFACE
      $<$<COMPILE_LANGUAGE:CXX>:-Werror=thread-safety>)
  endif()
elseif(CUPMON_THREAD_SAFETY_WERROR)
  message(FATAL_ERROR "CUPMON_THREAD_SAFETY_WERROR needs clang (CMAKE_CXX_COMPILER=clang++)")
endif()

if(CUPMON_SANITIZE)
  add_compile_options(-fsanitize=${CUPMON_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${CUPMON_SANITIZE})
endif()

# Thread checks (CUPMON_DCHECK_THREAD, base/include/cupmon/base/thread_checker.h): on in builds
# without NDEBUG, and here in the sanitizer builds (which are RelWithDebInfo) or when asked for.
if(CUPMON_SANITIZE)
  set(_thread_checks_default ON)
else()
  set(_thread_checks_default OFF)
endif()
option(CUPMON_THREAD_CHECKS "Check which thread uses one-thread members, also with NDEBUG"
       ${_thread_checks_default})
if(CUPMON_THREAD_CHECKS)
  add_compile_definitions(CUPMON_THREAD_CHECKS=1)
endif()
