# SPDX-License-Identifier: MIT
# wave/ (libkiln-wave): the decoder, loader, interpreter, public calls and CLI.

# The decoder held to LLVM's disassembler (llvm-mc and llvm-objdump with the
# amdgcn target); skipped, and reported so, where LLVM lacks the target.
kiln_test(test_decode wave/test_decode.c)
target_link_libraries(test_decode PRIVATE kiln_wave_internal)
set_tests_properties(test_decode PROPERTIES SKIP_RETURN_CODE 77)

# The wave recompiler's loader, reference interpreter, observation and CLI
# tests. Kernels (tests/wave/kernels/*.cl) are compiled by clang at test
# time; where clang lacks the amdgcn target the tests are skipped (exit 77).
find_program(KILN_WAVE_CLANG NAMES clang-14 clang)
find_program(KILN_WAVE_LLD NAMES ld.lld-14 ld.lld)
find_program(KILN_WAVE_LLVM_MC NAMES llvm-mc-14 llvm-mc)
# The kernels, compiled at build time too, into the build tree's
# tests/data/wave/: a machine without clang (the H200 machine) runs the
# tests on them (KILN_TEST_DATA; kernels.h).
set(KILN_WAVE_KERNEL_FILES control.cl external.cl hidden.cl lanes.cl levels.cl math.cl memory.cl more.cl bench.cl crosslane.cl modifiers.s oracle.s bounds.s oracle2.s scratch.s lane_rules.s
                           common.h)
list(TRANSFORM KILN_WAVE_KERNEL_FILES PREPEND ${CMAKE_CURRENT_LIST_DIR}/kernels/)
if(KILN_WAVE_CLANG AND KILN_WAVE_LLD AND KILN_WAVE_LLVM_MC)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/tests/data/wave/.stamp
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/kernels/make_data.sh ${KILN_WAVE_CLANG} ${KILN_WAVE_LLD}
            ${KILN_WAVE_LLVM_MC} ${CMAKE_CURRENT_LIST_DIR}/kernels ${CMAKE_BINARY_DIR}/tests/data/wave
    DEPENDS ${KILN_WAVE_KERNEL_FILES} ${CMAKE_CURRENT_LIST_DIR}/kernels/make_data.sh
    COMMENT "Compiling the wave tests' kernels into tests/data/wave")
  add_custom_target(wave_test_data ALL DEPENDS ${CMAKE_BINARY_DIR}/tests/data/wave/.stamp)
endif()
foreach(name test_loader test_interp test_wave_diff)
  kiln_test(${name} wave/${name}.c)
  target_link_libraries(${name} PRIVATE kiln_wave_internal)
  target_compile_definitions(${name} PRIVATE KILN_WAVE_CLANG="${KILN_WAVE_CLANG}" KILN_WAVE_LLD="${KILN_WAVE_LLD}"
                                             KILN_WAVE_LLVM_MC="${KILN_WAVE_LLVM_MC}"
                                             KILN_WAVE_KERNELS="${CMAKE_CURRENT_LIST_DIR}/kernels")
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# kiln wave info / run, the built tool on a compiled kernel.
add_test(NAME wave_cli COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/kernels/cli_test.sh $<TARGET_FILE:kiln-cli>
                               ${KILN_WAVE_CLANG} ${CMAKE_CURRENT_LIST_DIR}/kernels)
set_tests_properties(wave_cli PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

# libkiln-wave's public calls, linked as its users link it (the shipped
# kiln-wave and kiln, nothing internal).
add_executable(test_wave_api wave/test_wave_api.c)
target_link_libraries(test_wave_api PRIVATE kiln-wave kiln)
target_include_directories(test_wave_api PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(test_wave_api PRIVATE KILN_WAVE_CLANG="${KILN_WAVE_CLANG}" KILN_WAVE_LLD="${KILN_WAVE_LLD}"
                                                 KILN_WAVE_LLVM_MC="${KILN_WAVE_LLVM_MC}"
                                                 KILN_WAVE_KERNELS="${CMAKE_CURRENT_LIST_DIR}/kernels")
add_test(NAME test_wave_api COMMAND test_wave_api)
set_tests_properties(test_wave_api PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${KILN_TEST_ENV}")

# The GPU levels against the reference on the default device: the corpus,
# each kernel at every level that runs it compared observation for
# observation; the refusals named. Run alone (RUN_SERIAL): its hundred-odd
# large compiles would hold up a test beside it that waits for a variant
# compile on the same compile service (the socket suite's one server).
add_executable(test_wavefront wave/test_wavefront.c)
target_link_libraries(test_wavefront PRIVATE kiln-wave kiln)
target_include_directories(test_wavefront PRIVATE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(test_wavefront PRIVATE KILN_WAVE_CLANG="${KILN_WAVE_CLANG}" KILN_WAVE_LLD="${KILN_WAVE_LLD}"
                                                  KILN_WAVE_LLVM_MC="${KILN_WAVE_LLVM_MC}"
                                                  KILN_WAVE_KERNELS="${CMAKE_CURRENT_LIST_DIR}/kernels")
add_test(NAME test_wavefront COMMAND test_wavefront)
set_tests_properties(test_wavefront PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT "${KILN_TEST_ENV}" TIMEOUT 300
                                                RUN_SERIAL TRUE)
