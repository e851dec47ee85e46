# SPDX-License-Identifier: MIT
# base/: pools, parsers, lists, byte buffers, and allocation failures at
# every step (test_memfault).
kiln_test(test_pool base/test_pool.c)
kiln_test(test_parse base/test_parse.c)
kiln_test(test_list base/test_list.c)
kiln_test(test_bytes base/test_bytes.c)
kiln_test(test_thread base/test_thread.c)
set_tests_properties(test_thread PROPERTIES LABELS threads)
kiln_test(test_memfault base/test_memfault.c)
# Its mock half alone is also in the threaded (TSan) suite: stable there,
# while lavapipe's own threads race under TSan.
add_test(NAME test_memfault_mock COMMAND test_memfault mock)
set_tests_properties(test_memfault_mock PROPERTIES ENVIRONMENT "${KILN_TEST_ENV}" TIMEOUT 300 LABELS threads)
