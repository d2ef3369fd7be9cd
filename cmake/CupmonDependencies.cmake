# Finds cupmon's dependencies: distribution packages only (see tools/install-deps).
find_package(Threads REQUIRED)
find_package(Protobuf REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET libzstd)
find_package(Boost 1.74 REQUIRED)  # headers only: Asio
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

# SQLite (Debian libsqlite3-dev) for `cupmon-decode export --format sqlite`, optional: where it is
# absent (the GPU machine) the decoder builds without that export, which then says so.
option(CUPMON_ENABLE_SQLITE "Build the SQLite export where SQLite is found" ON)
set(CUPMON_HAVE_SQLITE OFF)
if(CUPMON_ENABLE_SQLITE)
  find_package(SQLite3 QUIET)
  if(SQLite3_FOUND)
    set(CUPMON_HAVE_SQLITE ON)
  endif()
endif()

# The static zstd archive lets the monitor hide zstd from the host process (torch ships its own).
find_library(CUPMON_ZSTD_STATIC NAMES libzstd.a)

set(CUPMON_HAVE_CUPTI OFF)
set(CUPMON_HAVE_CUDA_HEADERS OFF)
if(CUPMON_ENABLE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cupti)
    set(CUPMON_HAVE_CUPTI ON)
    set(CUPMON_HAVE_CUDA_HEADERS ON)
  endif()
endif()
