# SPDX-License-Identifier: MIT
# Clients killed with SIGKILL at random points while two others run: the
# server's connections, objects and descriptors return to their level, its
# resident memory stays within 10%, the others' results stay right. A short
# run here; the long one by hand: test_kill 1000.
kiln_test(test_kill remote/test_kill.c)
set_tests_properties(test_kill PROPERTIES TIMEOUT 600)
