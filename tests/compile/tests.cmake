# SPDX-License-Identifier: MIT
# compile/: the compile service, its scheduling policy alone (test_board),
# its helper process, the exit drain and precompile.
kiln_test(test_board compile/test_board.c)
kiln_test(test_compile compile/test_compile.c)
set_tests_properties(test_compile PROPERTIES LABELS threads)
# Front ends in their helper process, bounded in time and memory (77: no
# helper built).
kiln_test(test_front compile/test_front.c)
set_tests_properties(test_front PROPERTIES SKIP_RETURN_CODE 77)
kiln_test(test_compile_vk compile/test_compile_vk.c)
kiln_test(test_exit_drain compile/test_exit_drain.c)
kiln_test(test_precompile compile/test_precompile.c)
set_tests_properties(test_precompile PROPERTIES LABELS threads)
