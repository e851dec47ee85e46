# SPDX-License-Identifier: MIT
# libkiln-wave (include/kiln_wave.h): guest GCN code objects, the level
# table, the reference interpreter, observations and their comparison. Its
# own library beside libkiln, built on kiln.h; it alone needs libelf.
#
# - kiln-wave, as it ships: the wave sources and the few base/ helpers they
#   call (errors, allocation, logging, byte buffers, parsers) compiled in,
#   every symbol but kiln_wave_* made local (static: one relocatable object
#   through cmake/localize.sh; shared: libkiln-wave.so.0.3 with a version
#   script), so its copy of base/ never meets libkiln's.
# - kiln_wave_internal: the wave sources alone, for tests and fuzz targets,
#   which link kiln_internal's base/ beside them.
# libelf is libkiln-wave's alone (kiln_pkg would list it for libkiln).
pkg_check_modules(LIBELF REQUIRED IMPORTED_TARGET libelf)
set(KILN_CONFIG_WAVE_DEPS "  pkg_check_modules(LIBELF REQUIRED QUIET IMPORTED_TARGET libelf)\n")
set(KILN_WAVE_SOURCES
  src/wave/api.c
  src/wave/cfg.c
  src/wave/compare.c
  src/wave/decode.c
  src/wave/decode_vector.c
  src/wave/diff.c
  src/wave/describe.c
  src/wave/interp.c
  src/wave/interp_mem.c
  src/wave/interp_salu.c
  src/wave/interp_lane.c
  src/wave/interp_valu.c
  src/wave/lane_check.c
  src/wave/level.c
  src/wave/loader.c
  src/wave/loader_meta.c
  src/wave/observe.c
  src/wave/print.c
  src/wave/subgroup.c
  src/wave/wavefront_gen.c
  src/wave/wavefront_run.c
)
set(KILN_WAVE_BASE_SOURCES src/base/base.c src/base/bytes.c src/base/parse.c)
set(KILN_WAVE_DEPS PkgConfig::LIBELF PkgConfig::XXHASH Threads::Threads m)

add_library(kiln_wave_objs OBJECT ${KILN_WAVE_SOURCES} ${KILN_WAVE_BASE_SOURCES})
set_target_properties(kiln_wave_objs PROPERTIES C_VISIBILITY_PRESET hidden POSITION_INDEPENDENT_CODE ${BUILD_SHARED_LIBS})
target_include_directories(kiln_wave_objs PUBLIC include PRIVATE src)
target_compile_definitions(kiln_wave_objs PRIVATE _POSIX_C_SOURCE=200809L)
target_link_libraries(kiln_wave_objs PUBLIC ${KILN_WAVE_DEPS})

if(BUILD_SHARED_LIBS)
  add_library(kiln-wave SHARED $<TARGET_OBJECTS:kiln_wave_objs>)
  target_link_libraries(kiln-wave PRIVATE ${KILN_WAVE_DEPS} kiln)
  target_link_options(kiln-wave PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/kiln-wave.map -Wl,--no-undefined)
  set_target_properties(kiln-wave PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${KILN_SOVERSION}
                                             LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/kiln-wave.map)
else()
  set(KILN_WAVE_ALL_OBJECT ${CMAKE_CURRENT_BINARY_DIR}/kiln_wave_all.o)
  add_custom_command(OUTPUT ${KILN_WAVE_ALL_OBJECT}
    COMMAND ${CMAKE_LINKER} -r -o ${KILN_WAVE_ALL_OBJECT} $<TARGET_OBJECTS:kiln_wave_objs>
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/localize.sh ${KILN_WAVE_ALL_OBJECT} kiln_wave_
    DEPENDS $<TARGET_OBJECTS:kiln_wave_objs> ${PROJECT_SOURCE_DIR}/cmake/localize.sh
    COMMAND_EXPAND_LISTS VERBATIM
    COMMENT "Making libkiln-wave.a's one object (kiln_wave_* its only global symbols)")
  set_source_files_properties(${KILN_WAVE_ALL_OBJECT} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
  add_library(kiln-wave STATIC ${KILN_WAVE_ALL_OBJECT})
  add_dependencies(kiln-wave kiln_wave_objs)
  set_target_properties(kiln-wave PROPERTIES LINKER_LANGUAGE C)
  target_link_libraries(kiln-wave INTERFACE ${KILN_WAVE_DEPS})
endif()
# kiln_wave.h includes kiln.h: a user of kiln-wave is a user of kiln.
target_link_libraries(kiln-wave INTERFACE kiln)
target_include_directories(kiln-wave INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                               $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(kiln-wave PROPERTIES EXPORT_NAME wave)
add_library(kiln::wave ALIAS kiln-wave)
set(KILN_WAVE_SHIPPED $<TARGET_FILE:kiln-wave>)

if(KILN_INTERNAL)
  add_library(kiln_wave_internal STATIC ${KILN_WAVE_SOURCES})
  target_include_directories(kiln_wave_internal PUBLIC include src)
  target_compile_definitions(kiln_wave_internal PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(kiln_wave_internal PUBLIC kiln_internal PkgConfig::LIBELF m)
endif()
