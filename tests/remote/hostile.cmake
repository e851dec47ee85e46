# SPDX-License-Identifier: MIT
# A server against clients that do not play fair: hellos of another
# version, connections past the cap, connections that never make a
# context, descriptors run out (a child server), handle serials come
# round, a client's archive tidy, an image past the byte quota.
kiln_test(test_hostile remote/test_hostile.c)
# A second uid admitted by --allow-uid, another refused (needs root: 77
# without it).
kiln_test(test_allow_uid remote/test_allow_uid.c)
set_tests_properties(test_allow_uid PROPERTIES SKIP_RETURN_CODE 77)
