# SPDX-License-Identifier: MIT
# Server mode's fuzz target: the applier, fed request streams as one client
# of a mock-backend server.
kiln_fuzz_target(fuzz_pipe_apply fuzz_pipe_apply.c)
