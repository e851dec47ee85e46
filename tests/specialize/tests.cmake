# SPDX-License-Identifier: MIT
# specialize/: the predictor on the mock backend, variants on the device.
kiln_test(test_specialize_mock specialize/test_specialize_mock.c)
set_tests_properties(test_specialize_mock PROPERTIES LABELS threads)
kiln_test(test_specialize_vk specialize/test_specialize_vk.c)
