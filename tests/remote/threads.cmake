# SPDX-License-Identifier: MIT
# The server's locking under many client threads, on the mock backend: in
# the ThreadSanitizer suite too (label threads).
kiln_test(test_remote_threads remote/test_remote_threads.c)
set_tests_properties(test_remote_threads PROPERTIES LABELS threads)
