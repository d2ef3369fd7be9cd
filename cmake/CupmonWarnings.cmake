# Warning flags and sanitizer flags for every cupmon target, in one place.
add_library(cupmon_warnings INTERFACE)
target_compile_options(cupmon_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wconversion -Wno-sign-conversion>)

if(CUPMON_SANITIZE)
  add_compile_options(-fsanitize=${CUPMON_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${CUPMON_SANITIZE})
endif()
