# SPDX-License-Identifier: MIT
# remote/: server mode, from a user's side, on the wire, under threads,
# killed clients and hostile ones.

# Server mode from a user's side: a real server on a thread of the test,
# clients through its socket (two at once, quotas, a client that dies, a
# server that goes away, bulk data, the socket file, the pipe's counters).
kiln_test(test_remote remote/test_remote.c)

# The wire itself: hand-built requests against a mock server's applier
# (foreign handles, broken records, the catalogue's order, the counters'
# names), and the catalogue checked against kiln.h.
kiln_test(test_pipe remote/test_pipe.c)
add_test(NAME catalogue COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/catalogue.sh ${PROJECT_SOURCE_DIR}/include/kiln.h
                                ${PROJECT_SOURCE_DIR}/src/context/calls.def)

# The server's locking under many client threads, on the mock backend: in
# the ThreadSanitizer suite too (label threads).
kiln_test(test_remote_threads remote/test_remote_threads.c)
set_tests_properties(test_remote_threads PROPERTIES LABELS threads)
# No client stalls another: one waits on the server for a compile, one for
# a ticket, while a third's calls finish (mock: held and gated).
kiln_test(test_server_waits remote/test_server_waits.c)
set_tests_properties(test_server_waits PROPERTIES LABELS threads)

# The command stream: calls as records in shared memory, the control page
# live, big messages as frames, a stopped server noticed, a replaced one
# (its epoch), a forked child refused, a client scribbling on its rings
# losing its own connection alone.
kiln_test(test_stream remote/test_stream.c)
# The command stream's two rings model-checked with Spin (stream.pml): no
# side asleep for good on either ring, answers in call order, for one and
# two slots; and a client that waits for room without taking answers must
# deadlock with its server.
set(KILN_STREAM_MODEL ${CMAKE_CURRENT_LIST_DIR}/stream.pml)
add_test(NAME spin_stream COMMAND sh ${KILN_SPIN_SH} ${KILN_STREAM_MODEL} ${CMAKE_CURRENT_BINARY_DIR}/spin/stream holds)
add_test(NAME spin_stream_two_slots COMMAND sh ${KILN_SPIN_SH} ${KILN_STREAM_MODEL}
         ${CMAKE_CURRENT_BINARY_DIR}/spin/stream2 holds -DN=5 -DCAPC=2 -DCAPR=2)
add_test(NAME spin_stream_nodrain COMMAND sh ${KILN_SPIN_SH} ${KILN_STREAM_MODEL}
         ${CMAKE_CURRENT_BINARY_DIR}/spin/nodrain finds-deadlock -DNODRAIN)
set_tests_properties(spin_stream spin_stream_two_slots spin_stream_nodrain PROPERTIES TIMEOUT 300 LABELS spin)

# Clients killed with SIGKILL at random points while two others run: the
# server's connections, objects and descriptors return to their level, its
# resident memory stays within 10%, the others' results stay right. A short
# run here; the long one by hand: test_kill 1000.
kiln_test(test_kill remote/test_kill.c)
set_tests_properties(test_kill PROPERTIES TIMEOUT 600)

# A server against clients that do not play fair: hellos of another
# version, connections past the cap, connections that never make a
# context, descriptors run out (a child server), handle serials come
# round, a client's archive tidy, an image past the byte quota.
kiln_test(test_hostile remote/test_hostile.c)
# A second uid admitted by --allow-uid, another refused (needs root: 77
# without it).
kiln_test(test_allow_uid remote/test_allow_uid.c)
set_tests_properties(test_allow_uid PROPERTIES SKIP_RETURN_CODE 77)
