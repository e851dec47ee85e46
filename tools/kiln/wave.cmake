# SPDX-License-Identifier: MIT
# kiln wave (tools/kiln/cmd_wave.c): the wave sources it runs are compiled
# into the tool, as the shipped library exports kiln_* only; cmd_wave.c
# defines the base helpers they call (errors, allocation, logging), and
# base/bytes.c (which defines no kiln_* symbol) comes along for the
# observation.
set(KILN_CLI_WAVE_SOURCES
  ${PROJECT_SOURCE_DIR}/src/wave/loader.c
  ${PROJECT_SOURCE_DIR}/src/wave/decode.c
  ${PROJECT_SOURCE_DIR}/src/wave/print.c
  ${PROJECT_SOURCE_DIR}/src/wave/interp.c
  ${PROJECT_SOURCE_DIR}/src/wave/interp_valu.c
  ${PROJECT_SOURCE_DIR}/src/wave/observe.c
  ${PROJECT_SOURCE_DIR}/src/base/bytes.c)
target_sources(kiln-cli PRIVATE ${PROJECT_SOURCE_DIR}/tools/kiln/cmd_wave.c ${KILN_CLI_WAVE_SOURCES})
set_source_files_properties(${KILN_CLI_WAVE_SOURCES} PROPERTIES COMPILE_DEFINITIONS _POSIX_C_SOURCE=200809L)
target_include_directories(kiln-cli PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(kiln-cli PRIVATE PkgConfig::LIBELF m)
