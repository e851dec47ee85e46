# SPDX-License-Identifier: MIT
# The wave recompiler's loader, reference interpreter, observation and CLI
# tests. Kernels (tests/wave/kernels/*.cl) are compiled by clang at test
# time; where clang lacks the amdgcn target the tests are skipped (exit 77).
find_program(KILN_WAVE_CLANG NAMES clang-14 clang)
find_program(KILN_WAVE_LLD NAMES ld.lld-14 ld.lld)
find_program(KILN_WAVE_LLVM_MC NAMES llvm-mc-14 llvm-mc)
foreach(name test_loader test_interp)
  kiln_test(${name} wave/${name}.c)
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
