# SPDX-License-Identifier: MIT
# program/: front ends, interfaces, push blocks, bindings, real shaders,
# specialization constants, images.
kiln_test(test_program program/test_program.c)
kiln_test(test_push_bake program/test_push_bake.c)
kiln_test(test_own_push program/test_own_push.c)
kiln_test(test_bindings program/test_bindings.c)
kiln_test(test_real_shaders program/test_real_shaders.c)
kiln_test(test_spec_constants program/test_spec_constants.c)
kiln_test(test_images program/test_images.c)
# The loop budget's warning (lavapipe stops long loops), and the budget itself.
kiln_test(test_loops program/test_loops.c)
kiln_test(test_languages program/test_languages.c)
kiln_test(test_preamble program/test_preamble.c)
