# SPDX-License-Identifier: MIT
# bench_remote: submits, set_param and a large upload through a kiln server
# (a child process on a unix socket) against the same calls in process.
# It uses the public API only.
add_executable(bench_remote bench_remote.c)
target_link_libraries(bench_remote PRIVATE kiln PkgConfig::VULKAN)
add_test(NAME bench_remote_smoke COMMAND bench_remote --quick)
set_tests_properties(bench_remote_smoke PROPERTIES LABELS bench TIMEOUT 300 ENVIRONMENT "KILN_ARCHIVE=0")
