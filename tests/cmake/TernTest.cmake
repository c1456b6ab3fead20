# Helpers for tests/<area>/CMakeLists.txt.
#
# tern_c_test(NAME src... [LIBS lib...] [LABELS l...] [NO_SANITIZE] [CORE_ONLY])
#   builds a cmocka test program and registers it with ctest, plus a twin
#   NAME_asan built with ASan+UBSan (unless NO_SANITIZE) against sanitized
#   copies of the core and io libraries, so `make test` runs both.
#   CORE_ONLY links the core alone (no drivers, no runtime).
#   The test helpers many tests list (TERN_TEST_SHARED: th.c, the TCP
#   harness, the bad-input driver) are compiled once per kind of link into
#   static libraries, not once per test.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET GLOBAL cmocka)

# CACHE INTERNAL: this file is read once (include_guard), in the first
# tests/ directory that includes it; its variables must reach the others.
set(TERN_SAN_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer
                   -fno-sanitize-recover=all CACHE INTERNAL "")
if(NOT TARGET tern_asan)
  add_library(tern_asan STATIC ${TERN_CORE_SOURCES})
  target_include_directories(tern_asan PUBLIC ${CMAKE_SOURCE_DIR}/include
                                              ${CMAKE_SOURCE_DIR}/src/core)
  target_compile_options(tern_asan PRIVATE -Wall -Wextra -DTERN_USE_BUILTIN_MEM
                         ${TERN_SAN_FLAGS})
  # The sanitized core also checks every payload sum an app hands over
  # (tern_tcp_send_buf_sum), so that debugging build is tested too.
  target_compile_definitions(tern_asan PUBLIC TERN_CHECK_APP_CSUM=1)
  target_link_options(tern_asan PUBLIC -fsanitize=address,undefined)
  add_library(tern_io_asan STATIC ${TERN_IO_SOURCES})
  target_include_directories(tern_io_asan PUBLIC ${CMAKE_SOURCE_DIR}/src/io
                                                 ${CMAKE_SOURCE_DIR}/src/rt)
  target_compile_options(tern_io_asan PRIVATE -Wall -Wextra -D_GNU_SOURCE
                         ${TERN_SAN_FLAGS})
  target_link_libraries(tern_io_asan PUBLIC tern_asan Threads::Threads)
  if(XDP_FOUND)
    target_link_libraries(tern_io_asan PUBLIC PkgConfig::XDP)
    target_compile_definitions(tern_io_asan PUBLIC TERN_HAVE_AFXDP=1)
  endif()
endif()

set(TERN_TEST_SHARED ${CMAKE_SOURCE_DIR}/tests/common/th.c
                     ${CMAKE_SOURCE_DIR}/tests/tcp/harness.c
                     ${CMAKE_SOURCE_DIR}/tests/badinput/bi.c CACHE INTERNAL "")

# The static library of one shared helper for one link (io: tern_io,
# tern_static, tern_io_asan or tern_asan; san: sanitizer flags or empty);
# made on first use. Its name goes to the caller's `out`.
function(tern_test_helper_lib_ out src io san)
  get_filename_component(base ${src} NAME_WE)
  set(lib tern_test_${base}_${io})
  if(NOT TARGET ${lib})
    add_library(${lib} STATIC ${src})
    target_include_directories(${lib} PUBLIC ${CMAKE_SOURCE_DIR}/tests/common
                               ${CMAKE_SOURCE_DIR}/tests/tcp
                               ${CMAKE_SOURCE_DIR}/src/core)
    target_compile_options(${lib} PRIVATE -Wall -Wextra -D_GNU_SOURCE ${san})
    target_link_libraries(${lib} PUBLIC ${io} PkgConfig::CMOCKA m)
  endif()
  set(${out} ${lib} PARENT_SCOPE)
endfunction()

# Split a test's sources into its own and the shared helpers' libraries.
function(tern_test_sources_ own_out libs_out io san)
  set(own)
  set(libs)
  foreach(src ${ARGN})
    get_filename_component(abs ${src} ABSOLUTE)
    if(abs IN_LIST TERN_TEST_SHARED)
      tern_test_helper_lib_(lib ${abs} ${io} "${san}")
      list(APPEND libs ${lib})
    else()
      list(APPEND own ${src})
    endif()
  endforeach()
  set(${own_out} ${own} PARENT_SCOPE)
  set(${libs_out} ${libs} PARENT_SCOPE)
endfunction()

function(tern_c_test name)
  cmake_parse_arguments(T "NO_SANITIZE;CORE_ONLY" "" "LIBS;LABELS" ${ARGN})
  set(io tern_io)
  set(io_asan tern_io_asan)
  if(T_CORE_ONLY)
    set(io tern_static)
    set(io_asan tern_asan)
  endif()
  tern_test_sources_(srcs helpers ${io} "" ${T_UNPARSED_ARGUMENTS})
  add_executable(${name} ${srcs})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR}/tests/common
                             ${CMAKE_SOURCE_DIR}/src/core)
  target_compile_options(${name} PRIVATE -Wall -Wextra -D_GNU_SOURCE)
  target_link_libraries(${name} PRIVATE ${helpers} ${io} PkgConfig::CMOCKA m
                        ${T_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                        ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  if(NOT T_NO_SANITIZE)
    tern_test_sources_(srcs helpers ${io_asan} "${TERN_SAN_FLAGS}"
                       ${T_UNPARSED_ARGUMENTS})
    add_executable(${name}_asan ${srcs})
    target_include_directories(${name}_asan PRIVATE
                               ${CMAKE_SOURCE_DIR}/tests/common
                               ${CMAKE_SOURCE_DIR}/src/core)
    target_compile_options(${name}_asan PRIVATE -Wall -Wextra -D_GNU_SOURCE
                           ${TERN_SAN_FLAGS})
    target_link_libraries(${name}_asan PRIVATE ${helpers} ${io_asan}
                          PkgConfig::CMOCKA m ${T_LIBS})
    set_target_properties(${name}_asan PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                          ${CMAKE_BINARY_DIR}/tests)
    add_test(NAME ${name}_asan COMMAND ${name}_asan)
    set_tests_properties(${name}_asan PROPERTIES LABELS "${T_LABELS};asan"
      ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
endfunction()
