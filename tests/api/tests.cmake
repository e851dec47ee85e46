# SPDX-License-Identifier: MIT
# api/: the public calls across threads, their defaults and settings, and
# an application naming its own functions as kiln's modules do (it links
# the shipped library and runs).
kiln_test(test_threads api/test_threads.c)
set_tests_properties(test_threads PROPERTIES LABELS threads)
kiln_test(test_defaults api/test_defaults.c)
kiln_test(test_settings api/test_settings.c)
add_executable(test_link_names api/test_link_names.c)
target_link_libraries(test_link_names PRIVATE kiln)
add_test(NAME test_link_names COMMAND test_link_names)
