# SPDX-License-Identifier: MIT
# A server against clients that do not play fair: hellos of another
# version, connections past the cap, connections that never make a
# context, descriptors run out (a child server), handle serials come
# round, a client's archive tidy, an image past the byte quota.
kiln_test(test_hostile remote/test_hostile.c)
