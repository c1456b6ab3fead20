# tern_linux.cmake - libtern-linux, the installed Linux side: the drivers,
# the buffer pool and the per-core runtime behind include/tern_linux.h.
#
# Built from tern_io's objects (the same code the programs run). Like
# libtern, both forms define only the API's names (src/io/tern_linux.syms,
# one per line): the shared library through a version script made from
# that list, the static one as one object whose other names objcopy made
# local. The drivers' own libraries (libxdp, libbpf, DPDK) stay dependencies
# of the shared library and are listed in tern-linux.pc (Libs.private, for
# static links) only when those drivers were built; their compile flags
# never reach a program (tern_linux.h needs none of their headers).
include_guard(GLOBAL)

set(TERN_LINUX_SYMS ${CMAKE_SOURCE_DIR}/src/io/tern_linux.syms)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${TERN_LINUX_SYMS})
file(STRINGS ${TERN_LINUX_SYMS} tern_linux_names)
list(JOIN tern_linux_names ";\n    " tern_linux_list)
file(WRITE ${CMAKE_BINARY_DIR}/tern_linux.map
     "/* made by cmake/tern_linux.cmake from src/io/tern_linux.syms */\n"
     "{\n  global:\n    ${tern_linux_list};\n  local:\n    *;\n};\n")

add_library(tern_linux_shared SHARED $<TARGET_OBJECTS:tern_io>)
set_target_properties(tern_linux_shared PROPERTIES OUTPUT_NAME tern-linux
                      VERSION ${PROJECT_VERSION} SOVERSION 0)
target_link_libraries(tern_linux_shared PRIVATE tern_shared Threads::Threads)
if(XDP_FOUND)
  target_link_libraries(tern_linux_shared PRIVATE PkgConfig::XDP)
endif()
if(TERN_DPDK_FOUND)
  target_link_libraries(tern_linux_shared PRIVATE PkgConfig::DPDK)
endif()
target_link_options(tern_linux_shared PRIVATE
  -Wl,--version-script=${CMAKE_BINARY_DIR}/tern_linux.map -Wl,--no-undefined)
set_property(TARGET tern_linux_shared APPEND PROPERTY LINK_DEPENDS
             ${TERN_LINUX_SYMS})

set(TERN_LINUX_API_LIB ${CMAKE_BINARY_DIR}/api/libtern-linux.a)
add_custom_command(
  OUTPUT ${TERN_LINUX_API_LIB}
  COMMAND ${CMAKE_LINKER} -r -o ${CMAKE_BINARY_DIR}/tern_linux_all.o
          $<TARGET_OBJECTS:tern_io>
  COMMAND ${TERN_OBJCOPY} --keep-global-symbols=${TERN_LINUX_SYMS}
          ${CMAKE_BINARY_DIR}/tern_linux_all.o
          ${CMAKE_BINARY_DIR}/tern_linux_api.o
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/api
  COMMAND ${CMAKE_COMMAND} -E rm -f ${TERN_LINUX_API_LIB}
  COMMAND ${CMAKE_AR} rcs ${TERN_LINUX_API_LIB}
          ${CMAKE_BINARY_DIR}/tern_linux_api.o
  DEPENDS tern_io $<TARGET_OBJECTS:tern_io> ${TERN_LINUX_SYMS}
  COMMAND_EXPAND_LISTS
  COMMENT "libtern-linux.a for install: the API's names only")
add_custom_target(tern_linux_api_static ALL DEPENDS ${TERN_LINUX_API_LIB})

configure_file(${CMAKE_SOURCE_DIR}/tern-linux.pc.in
               ${CMAKE_BINARY_DIR}/tern-linux.pc @ONLY)
install(TARGETS tern_linux_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${TERN_LINUX_API_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/tern_linux.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/tern-linux.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
