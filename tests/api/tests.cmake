# SPDX-License-Identifier: MIT
# api/: the public calls across threads, their defaults and settings, and
# an application naming its own functions as kiln's modules do (it links
# the shipped library and runs).
kiln_test(test_threads api/test_threads.c)
set_tests_properties(test_threads PROPERTIES LABELS threads)
kiln_test(test_defaults api/test_defaults.c)
# A wait on one thread lets another's calls on the context go on (the real
# device; in process and through a server).
kiln_test(test_concurrency api/test_concurrency.c)
kiln_test(test_settings api/test_settings.c)
add_executable(test_link_names api/test_link_names.c)
target_link_libraries(test_link_names PRIVATE kiln)
add_test(NAME test_link_names COMMAND test_link_names)
# A catalogue row without its local or remote function does not build.
pkg_check_modules(KILN_MISSING_OP_DEPS QUIET vulkan spirv-cross-c-shared libxxhash)
add_test(NAME missing_op COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/missing_op.sh ${CMAKE_C_COMPILER} ${PROJECT_SOURCE_DIR}
                                 ${KILN_MISSING_OP_DEPS_CFLAGS})
# The public structs laid out as this minor version recorded them
# (docs/abi.md; 77 without clang).
add_test(NAME abi_layout COMMAND sh ${PROJECT_SOURCE_DIR}/abi/check.sh ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(abi_layout PROPERTIES SKIP_RETURN_CODE 77)
# docs/architecture.md's map of files matches the tree.
add_test(NAME file_map COMMAND sh ${PROJECT_SOURCE_DIR}/docs/check_map.sh ${PROJECT_SOURCE_DIR})
