# SPDX-License-Identifier: MIT
# The wire itself: hand-built requests against a mock server's applier
# (foreign handles, broken records, the catalogue's order, the counters'
# names), and the catalogue checked against kiln.h.
kiln_test(test_pipe remote/test_pipe.c)
add_test(NAME catalogue COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/catalogue.sh ${PROJECT_SOURCE_DIR}/include/kiln.h
                                ${PROJECT_SOURCE_DIR}/src/pipe/calls.def)
