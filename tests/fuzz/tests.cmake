# SPDX-License-Identifier: MIT
# kiln's fuzz targets: one per parser of outside bytes. Each target is a
# file defining LLVMFuzzerTestOneInput (and, optionally, fuzz_write_seeds).
#
# Every build links each target with replay.c into <target>_replay and runs
# it over corpus/<target>/ as a CTest test, so a crash that a fuzzer once
# found stays found. -DKILN_FUZZ=ON (clang) also builds <target> itself with
# libFuzzer, against an instrumented libkiln; scripts/fuzz.sh runs them.
set(KILN_FUZZ_TARGETS "" CACHE INTERNAL "")

set(KILN_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
function(kiln_fuzz_target name)
  set(sources)
  foreach(src ${ARGN})
    if(IS_ABSOLUTE ${src})
      list(APPEND sources ${src})
    else()
      list(APPEND sources ${KILN_FUZZ_DIR}/${src})
    endif()
  endforeach()
  add_executable(${name}_replay ${KILN_FUZZ_DIR}/replay.c ${sources})
  # in build/tests/fuzz/, where scripts/fuzz.sh runs them
  set_target_properties(${name}_replay PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
  target_link_libraries(${name}_replay PRIVATE kiln_internal)
  target_include_directories(${name}_replay PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/base
                                                   ${PROJECT_SOURCE_DIR}/tools/kiln)
  add_test(NAME ${name}_corpus COMMAND ${name}_replay ${KILN_FUZZ_DIR}/corpus/${name})
  set_tests_properties(${name}_corpus PROPERTIES LABELS fuzz TIMEOUT 300)
  if(KILN_FUZZ)
    add_executable(${name} ${sources})
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    target_link_libraries(${name} PRIVATE kiln_internal)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/src/base
                                               ${PROJECT_SOURCE_DIR}/tools/kiln)
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  endif()
  set(KILN_FUZZ_TARGETS ${KILN_FUZZ_TARGETS} ${name} CACHE INTERNAL "")
endfunction()

kiln_fuzz_target(fuzz_archive fuzz_archive.c)
kiln_fuzz_target(fuzz_include fuzz_include.c)
kiln_fuzz_target(fuzz_parse fuzz_parse.c)
kiln_fuzz_target(fuzz_push_bake fuzz_push_bake.c)
kiln_fuzz_target(fuzz_spirv_in fuzz_spirv_in.c)
kiln_fuzz_target(fuzz_png fuzz_png.c ${PROJECT_SOURCE_DIR}/tools/kiln/png_read.c ${PROJECT_SOURCE_DIR}/tools/kiln/texels.c)
target_link_libraries(fuzz_png_replay PRIVATE PkgConfig::PNG)
if(KILN_FUZZ)
  target_link_libraries(fuzz_png PRIVATE PkgConfig::PNG)
endif()

# The transport's fuzz targets: the frame reader, the ring consumer (and the
# producer against a hostile consumer, and the event ring) over a control
# page and rings the input writes, and the sideband parser.
kiln_fuzz_target(fuzz_transport_frame fuzz_transport_frame.c)
kiln_fuzz_target(fuzz_transport_ring fuzz_transport_ring.c)
kiln_fuzz_target(fuzz_transport_sideband fuzz_transport_sideband.c)

# The wave recompiler's fuzz targets: code objects through the loader,
# decoder and interpreter (fuzz_wave_load), and raw instruction streams
# through the decoder and interpreter (fuzz_wave_code).
kiln_fuzz_target(fuzz_wave_load fuzz_wave_load.c)
kiln_fuzz_target(fuzz_wave_code fuzz_wave_code.c)
foreach(t fuzz_wave_load fuzz_wave_code)
  target_link_libraries(${t}_replay PRIVATE kiln_wave_internal)
  if(KILN_FUZZ)
    target_link_libraries(${t} PRIVATE kiln_wave_internal)
  endif()
endforeach()

# Server mode's fuzz target: the applier, fed request streams as one client
# of a mock-backend server.
kiln_fuzz_target(fuzz_pipe_apply fuzz_pipe_apply.c)


# scripts/fuzz.sh reads the list of targets from here.
file(WRITE ${CMAKE_BINARY_DIR}/fuzz-targets.txt "${KILN_FUZZ_TARGETS}\n")

