# SPDX-License-Identifier: MIT
# context/: a lost device, on the mock and through the Vulkan backend's
# fault hook.
kiln_test(test_lost context/test_lost.c)
# Waits let the context go: other threads' calls run while one waits
# (mock: its gate holds work in flight exactly as long as the test says).
kiln_test(test_waits context/test_waits.c)
set_tests_properties(test_waits PROPERTIES LABELS threads)
# Check mode (the validation layer's GPU-assisted checks, out-of-bounds
# accesses named by node and binding) and robust access.
kiln_test(test_check context/test_check.c)
