# SPDX-License-Identifier: MIT
# Tests of the kiln command-line tool (tools/kiln). test_cli runs the kiln
# binary as a user would, on shaders and files it writes into a temporary
# folder, and checks the results against values computed on the CPU. Like
# every kiln test it runs with the Vulkan validation layer on, and fails on
# any validation error a kiln run reports.
add_executable(test_cli cli/test_cli.c)
target_link_libraries(test_cli PRIVATE kiln_internal m)
target_include_directories(test_cli PRIVATE ${CMAKE_CURRENT_LIST_DIR}/..)
add_dependencies(test_cli kiln-cli)
add_test(NAME cli COMMAND test_cli $<TARGET_FILE:kiln-cli>)
set_tests_properties(cli PROPERTIES ENVIRONMENT "KILN_VALIDATION=1;KILN_ARCHIVE=0" TIMEOUT 600)
