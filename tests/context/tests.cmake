# SPDX-License-Identifier: MIT
# context/: a lost device, on the mock and through the Vulkan backend's
# fault hook.
kiln_test(test_lost context/test_lost.c)
