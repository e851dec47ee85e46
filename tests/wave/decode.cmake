# SPDX-License-Identifier: MIT
# The decoder held to LLVM's disassembler (llvm-mc and llvm-objdump with the
# amdgcn target); skipped, and reported so, where LLVM lacks the target.
kiln_test(test_decode wave/test_decode.c)
target_link_libraries(test_decode PRIVATE kiln_wave_internal)
set_tests_properties(test_decode PROPERTIES SKIP_RETURN_CODE 77)
