# SPDX-License-Identifier: MIT
# bench_transport: the ring against memcpy (64-byte and 4 KiB records), wake
# latency spinning and parked, and the in-process transport against a
# socketpair between two processes. It reaches into src/transport/, so it
# links kiln_internal.
add_executable(bench_transport bench_transport.c)
target_compile_definitions(bench_transport PRIVATE _POSIX_C_SOURCE=200809L)
target_include_directories(bench_transport PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(bench_transport PRIVATE kiln_internal)
# Its smoke test (--quick) is listed with the transport's tests.
