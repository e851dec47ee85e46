# The transport's tests (src/transport/).
kiln_test(test_frame transport/test_frame.c)
kiln_test(test_ring transport/test_ring.c)
