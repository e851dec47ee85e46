# SPDX-License-Identifier: MIT
# Server mode from a user's side: a real server on a thread of the test,
# clients through its socket (two at once, quotas, a client that dies, a
# server that goes away, bulk data, the socket file, the pipe's counters).
kiln_test(test_remote remote/test_remote.c)
