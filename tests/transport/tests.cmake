# SPDX-License-Identifier: MIT
# The transport's tests (src/transport/).
kiln_test(test_frame transport/test_frame.c)
kiln_test(test_ring transport/test_ring.c)
# The doorbell: two threads, random delays, both sides sleeping; a short run
# here (also under TSan), the long one by hand: test_doorbell --handoffs 10000000.
kiln_test(test_doorbell transport/test_doorbell.c)
set_tests_properties(test_doorbell PROPERTIES LABELS threads)
# The doorbell's protocol model-checked with Spin on a machine with store
# buffers: no lost wakeup and no deadlock, for one and for two slots; and
# with the fences removed, Spin must find the lost wakeup.
set(KILN_SPIN_MODEL ${CMAKE_CURRENT_LIST_DIR}/doorbell.pml)
set(KILN_SPIN_SH ${CMAKE_CURRENT_LIST_DIR}/spin.sh)
add_test(NAME spin_doorbell COMMAND sh ${KILN_SPIN_SH} ${KILN_SPIN_MODEL} ${CMAKE_CURRENT_BINARY_DIR}/spin/holds holds)
add_test(NAME spin_doorbell_two_slots COMMAND sh ${KILN_SPIN_SH} ${KILN_SPIN_MODEL}
         ${CMAKE_CURRENT_BINARY_DIR}/spin/holds2 holds -DN=4 -DCAP=2)
add_test(NAME spin_doorbell_nofence COMMAND sh ${KILN_SPIN_SH} ${KILN_SPIN_MODEL}
         ${CMAKE_CURRENT_BINARY_DIR}/spin/nofence finds-lost-wakeup -DNOFENCE)
set_tests_properties(spin_doorbell spin_doorbell_two_slots spin_doorbell_nofence PROPERTIES TIMEOUT 300 LABELS spin)
kiln_test(test_segment transport/test_segment.c)
# Socket and in-process ends through the same cases; two processes, one
# killed and one stopped.
kiln_test(test_transport transport/test_transport.c)
set_tests_properties(test_transport PROPERTIES LABELS threads)
