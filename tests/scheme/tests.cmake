# SPDX-License-Identifier: MIT
# scheme/: recording, replay and barriers on the mock backend.
kiln_test(test_scheme_mock scheme/test_scheme_mock.c)
