# cupmon::monitor (static, for tests and tools) and libcupmon.so (the injectable library). Both need
# the CUPTI headers; libcupti itself is loaded with dlopen at run time, never linked.
# The shared libraries refuse undefined symbols (-Wl,--no-undefined), except where clang
# sanitizes them: clang links its sanitizer runtime into the executable only, and the libraries'
# calls into it resolve there when they are loaded (GCC links libtsan.so into each of them).
set(CUPMON_NO_UNDEFINED -Wl,--no-undefined)
if(CUPMON_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(CUPMON_NO_UNDEFINED "")
endif()

set(CUPMON_MONITOR_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/activity_intake.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/auto_window.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/auto_window_trigger.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/behind_watch.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/buffer_pool.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/busy_time.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/callback_watch.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/clock_domain_watch.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/config.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/control_endpoints.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/control_loop.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/control_requests.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/driver_probe.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/monitor.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/monitor_clock.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/monitor_metrics.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/periodic_flush.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/periodic_ticks.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/recording_pipeline.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/repeating_timer.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/session_facts.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/step_sums.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/string_table.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/takeover_watch.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/termination_signals.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/trace_window.cc
)

# The CUPTI loader and multiplexer: in the static library, and on their own in
# libcupmon-preload.so (below) for libcupmon.so.
set(CUPMON_CUPTI_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cupti_loader.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cupti_mux.cc
  ${CMAKE_CURRENT_SOURCE_DIR}/src/import_rebind.cc
)

add_library(cupmon_monitor STATIC ${CUPMON_MONITOR_SOURCES} ${CUPMON_CUPTI_SOURCES})
add_library(cupmon::monitor ALIAS cupmon_monitor)
target_include_directories(cupmon_monitor PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
                           ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(cupmon_monitor PUBLIC cupmon::format cupmon::control cupmon::metrics
                      cupmon::counters
                      Boost::headers Threads::Threads
                      ${CMAKE_DL_LIBS} PRIVATE cupmon_warnings)
target_compile_definitions(cupmon_monitor PRIVATE CUPMON_VERSION_STRING="${PROJECT_VERSION}")

# TEST DOUBLE for CPU tests: a fake CUPTI (never part of libcupmon.so).
add_library(cupmon_monitor_testing STATIC ${CMAKE_CURRENT_SOURCE_DIR}/testing/fake_cupti.cc
            ${CMAKE_CURRENT_SOURCE_DIR}/testing/manual_clock.cc)
target_include_directories(cupmon_monitor_testing PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(cupmon_monitor_testing PUBLIC cupmon::monitor PRIVATE cupmon_warnings)

# libcupmon-preload.so: what cupmon-run puts in LD_PRELOAD (docs/COEXISTENCE.md). CUPTI's
# interposed activity entry points, the CUPTI loader and the multiplexer, and nothing else: it
# needs only libc (the C++ runtime is linked in, below), so the children of a job that never
# start CUDA (shells, compilers, cupmon-decode) load no protobuf, zstd or monitor code, and it
# starts no thread.
# It exports the interposed entry points and, for libcupmon.so, the multiplexer's C++ API.
add_library(cupmon_preload SHARED
  ${CUPMON_CUPTI_SOURCES}
  ${CMAKE_CURRENT_SOURCE_DIR}/src/cupti_interpose.cc)
set_target_properties(cupmon_preload PROPERTIES
  OUTPUT_NAME cupmon-preload
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/libcupmon-preload.map)
target_include_directories(cupmon_preload PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/include
  $<TARGET_PROPERTY:cupmon_base,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_format,INTERFACE_INCLUDE_DIRECTORIES>
  ${CUDAToolkit_INCLUDE_DIRS})
target_link_libraries(cupmon_preload PRIVATE cupmon_warnings Threads::Threads ${CMAKE_DL_LIBS})
# The C++ runtime is linked in and hidden: preloaded, the library is loaded before the program's
# own libraries, and a dependency on the system's libstdc++.so.6 would shadow a newer one that the
# program brings (a conda environment's), whose symbol versions its modules then fail to find.
target_link_options(cupmon_preload PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/libcupmon-preload.map
  -static-libstdc++ -static-libgcc -Wl,--exclude-libs,ALL
  -Wl,--gc-sections -Wl,-z,nodelete ${CUPMON_NO_UNDEFINED})
install(TARGETS cupmon_preload EXPORT cupmonTargets LIBRARY DESTINATION lib)

# libcupmon.so: the monitor plus base, format and proto objects, with zstd linked statically (protobuf:
# see below) and every symbol hidden except InitializeInjection and cupmon_* (libcupmon.map), so that the copies
# of zstd/protobuf inside torch or the application cannot clash with ours.
# protobuf is linked dynamically: the distribution's libprotobuf.a (3.21, Ubuntu 24.04 / Debian 12)
# uses local-exec TLS (R_X86_64_TPOFF32 in arena.o) and cannot go into a shared object. Our generated
# code binds to libprotobuf.so.32 by soname; the copy inside torch is linked statically and hidden.
add_library(cupmon_shared SHARED
  ${CUPMON_MONITOR_SOURCES}
  ${CMAKE_CURRENT_SOURCE_DIR}/src/entry_points.cc
  $<TARGET_OBJECTS:cupmon_base>
  $<TARGET_OBJECTS:cupmon_format>
  $<TARGET_OBJECTS:cupmon_proto>
  $<TARGET_OBJECTS:cupmon_control>
  $<TARGET_OBJECTS:cupmon_metrics>
)
add_dependencies(cupmon_shared cupmon_base cupmon_format cupmon_proto cupmon_control cupmon_metrics)
set_target_properties(cupmon_shared PROPERTIES
  OUTPUT_NAME cupmon
  # libcupmon-preload.so lies beside it, in the build tree and installed.
  INSTALL_RPATH "$ORIGIN"
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON
  LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/libcupmon.map)
target_include_directories(cupmon_shared PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/include
  $<TARGET_PROPERTY:cupmon_base,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_format,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_proto,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_control,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_metrics,INTERFACE_INCLUDE_DIRECTORIES>
  $<TARGET_PROPERTY:cupmon_counters,INTERFACE_INCLUDE_DIRECTORIES>
  ${Protobuf_INCLUDE_DIRS}
  ${CUDAToolkit_INCLUDE_DIRS})
target_compile_definitions(cupmon_shared PRIVATE CUPMON_VERSION_STRING="${PROJECT_VERSION}")
target_link_libraries(cupmon_shared PRIVATE cupmon_warnings cupmon_preload cupmon::build_info Boost::headers
                      Threads::Threads ${CMAKE_DL_LIBS})
if(CUPMON_ZSTD_STATIC)
  target_link_libraries(cupmon_shared PRIVATE ${CUPMON_ZSTD_STATIC})
else()
  message(WARNING "cupmon: libzstd.a not found; libcupmon.so links the shared libzstd")
  target_link_libraries(cupmon_shared PRIVATE PkgConfig::ZSTD)
endif()
target_link_libraries(cupmon_shared PRIVATE protobuf::libprotobuf)
target_link_options(cupmon_shared PRIVATE
  -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/src/libcupmon.map
  -Wl,--exclude-libs,ALL -Wl,--gc-sections -Wl,-z,nodelete ${CUPMON_NO_UNDEFINED})
# Exported as cupmon::cupmon (cmake/CupmonInstall.cmake); consumers include <cupmon/cupmon.h>.
install(TARGETS cupmon_shared EXPORT cupmonTargets LIBRARY DESTINATION lib INCLUDES DESTINATION include)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/include/cupmon/cupmon.h DESTINATION include/cupmon)
