# The transport's tests (src/transport/).
kiln_test(test_frame transport/test_frame.c)
