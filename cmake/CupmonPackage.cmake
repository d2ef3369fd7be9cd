# `cmake --build build --target package` (CPack): the runtime install component of
# cmake/CupmonInstall.cmake (bin/, the shared libraries, cupmon.h, cupmon.pc, share/cupmon; not the
# static libraries and CMake package, which `cmake --install` adds for building against cupmon)
# under /opt/cupmon, the prefix the deploy/ recipes name (/opt/cupmon/lib/libcupmon.so,
# /opt/cupmon/bin/cupmonctl), as
#   cupmon_<version>-1~<distro>_<arch>.deb   for the distribution it is built on (debian12,
#                                            ubuntu24.04), where dpkg-deb and dpkg-shlibdeps exist
#   cupmon-<version>-<distro>-<arch>.tar.gz  opt/cupmon/..., for `tar -C / -xzf`
# The .deb's Depends come from dpkg-shlibdeps (CPACK_DEBIAN_PACKAGE_SHLIBDEPS): the libraries the
# binaries link (libprotobuf, libzstd, libsqlite3, libstdc++, libc) under the names and versions of
# the distribution the package is built on, which differ between Debian 12 and Ubuntu 24.04 (the
# 64-bit time_t renames). libcupti is not among them: libcupmon.so loads it at run time from the
# CUDA installation (cupmon/monitor/cupti_api.h says where it looks).
# Included once, at the end of the top-level CMakeLists.txt, after the install rules.

set(CUPMON_PACKAGE_DISTRO "linux")
if(EXISTS /etc/os-release)
  file(STRINGS /etc/os-release _id REGEX "^ID=")
  file(STRINGS /etc/os-release _version REGEX "^VERSION_ID=")
  string(REGEX REPLACE "^ID=\"?([^\"]*)\"?$" "\\1" _id "${_id}")
  string(REGEX REPLACE "^VERSION_ID=\"?([^\"]*)\"?$" "\\1" _version "${_version}")
  if(_id)
    set(CUPMON_PACKAGE_DISTRO "${_id}${_version}")
  endif()
endif()

set(CPACK_PACKAGE_NAME cupmon)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "The cupmon Authors")
set(CPACK_PACKAGE_CONTACT "The cupmon Authors <maintainers@users.noreply.a-seed-17ecd5ad.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "always-on CUDA activity monitor (libcupmon.so, cupmon-run, cupmonctl) and offline decoder")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /opt/cupmon)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_FILE_NAME
    "cupmon-${PROJECT_VERSION}-${CUPMON_PACKAGE_DISTRO}-${CMAKE_SYSTEM_PROCESSOR}")
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY OFF)
set(CPACK_INSTALL_CMAKE_PROJECTS "${PROJECT_BINARY_DIR};cupmon;runtime;/")
set(CPACK_GENERATOR TGZ)

find_program(CUPMON_DPKG_DEB dpkg-deb)
find_program(CUPMON_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(CUPMON_DPKG_DEB AND CUPMON_DPKG_SHLIBDEPS)
  list(APPEND CPACK_GENERATOR DEB)
  set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
  set(CPACK_DEBIAN_PACKAGE_RELEASE "1~${CUPMON_PACKAGE_DISTRO}")
  set(CPACK_DEBIAN_PACKAGE_SECTION utils)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  message(STATUS "cupmon: dpkg-deb or dpkg-shlibdeps not found (package dpkg-dev); "
                 "the package target makes the .tar.gz only")
endif()

include(CPack)
