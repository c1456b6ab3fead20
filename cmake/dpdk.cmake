# dpdk.cmake - build the DPDK driver (src/io/dpdk.c) when pkg-config finds
# libdpdk (Debian: dpdk-dev / libdpdk-dev).
#
# Include it from the top-level CMakeLists.txt after the tern_io target is
# defined:
#     include(cmake/dpdk.cmake)
#
# Found: tern_io links libdpdk and gets TERN_HAVE_DPDK=1 (so dpdk.c compiles
# and registry.c lists "dpdk"); so does tern_io_asan, the sanitized copy made
# later by tests/cmake/TernTest.cmake, when it exists at the end of the
# configure run. Not found: nothing changes and dpdk.c compiles to nothing.
# -DTERN_DPDK=OFF turns the driver off even when libdpdk is installed.
#
# libdpdk's compile flags (-include rte_config.h, -march=...) are PRIVATE to
# the library so they do not leak into the apps and tests that link it; the
# link libraries still propagate (tern_io is static).
include_guard(GLOBAL)

option(TERN_DPDK "Build the DPDK driver when libdpdk is found" ON)
set(TERN_DPDK_FOUND OFF)

if(TERN_DPDK)
  find_package(PkgConfig QUIET)
  if(PkgConfig_FOUND)
    pkg_check_modules(DPDK QUIET IMPORTED_TARGET GLOBAL libdpdk)
  endif()
  if(DPDK_FOUND)
    set(TERN_DPDK_FOUND ON)
    if(TARGET tern_io)
      target_link_libraries(tern_io PRIVATE PkgConfig::DPDK)
      target_compile_definitions(tern_io PUBLIC TERN_HAVE_DPDK=1)
    else()
      message(WARNING "tern: include cmake/dpdk.cmake after tern_io is "
                      "defined; the dpdk driver is not built")
      set(TERN_DPDK_FOUND OFF)
    endif()
  endif()
endif()

# The sanitized copy of the I/O library is made by tests/cmake/TernTest.cmake
# inside a tests/ subdirectory, i.e. after this file ran: link it at the end
# of the top-level directory, once it exists.
function(tern_dpdk_link_asan_)
  if(TERN_DPDK_FOUND AND TARGET tern_io_asan)
    target_link_libraries(tern_io_asan PRIVATE PkgConfig::DPDK)
    target_compile_definitions(tern_io_asan PUBLIC TERN_HAVE_DPDK=1)
  endif()
endfunction()
if(TERN_DPDK_FOUND)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.19)
    cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR}
                   CALL tern_dpdk_link_asan_)
  else()
    message(STATUS "tern: CMake < 3.19, tern_io_asan is built without DPDK")
  endif()
endif()
