/* SPDX-License-Identifier: MIT */
/*
 * test_exit_drain.c: a process that exits with compiles still queued and
 * running, without destroying its context, exits cleanly: kiln's exit
 * handler cancels what has not started and lets running compiles end
 * before the compiler's own globals go away. Run twice by CTest: "child"
 * does the exiting; the parent checks the child's exit status.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static int child(void)
{
    kiln_context ctx;
    if (kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .compile_threads = 2}, &ctx))
        return 3;
    /* Big enough that some are still compiling, many still queued, at exit. */
    static char src[200000];
    for (int p = 0; p < 40; p++) {
        size_t n = (size_t)snprintf(src, sizeof src, "#version 450\nlayout(local_size_x = 1) in;\n"
                                                      "layout(std430, binding = 0) buffer D { uint d[]; };\n");
        for (int f = 0; f < 300; f++)
            n += (size_t)snprintf(src + n, sizeof src - n, "uint f%d(uint x) { return x * %du + %du; }\n", f, p + 3,
                                  f);
        snprintf(src + n, sizeof src - n, "void main() { d[0] = f299(d[%d]); }\n", p);
        kiln_program prog;
        if (kiln_program_create(ctx, &(kiln_program_desc){.source = src}, &prog))
            return 4;
    }
    kiln_context_stats st;
    if (kiln_context_stats_get(ctx, &st) || st.compiles_pending == 0)
        return 5;   /* nothing left to drain: the test would prove nothing */
    return 0;       /* exit with the context alive */
}

TEST(exit_with_compiles_in_flight_is_clean)
{
    char log[] = "/tmp/kiln-exit-drain-XXXXXX";
    int fd = mkstemp(log);
    REQUIRE(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(fd, 2);
        setenv("KILN_LOG", "info", 1);
        int r = child();
        if (r == 0)
            exit(0);   /* runs exit handlers, kiln's among them */
        _exit(r);
    }
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws));
    if (WIFEXITED(ws))
        CHECK_EQ(WEXITSTATUS(ws), 0);
    else
        fprintf(stderr, "child died of signal %d\n", WTERMSIG(ws));
    /* The exit handler ran and said what it cancelled and waited for. */
    char text[8192] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    unlink(log);
    text[n > 0 ? n : 0] = 0;
    CHECK(strstr(text, "compile: process exit with a context not destroyed:") != NULL);
    CHECK(strstr(text, "queued compiles cancelled") != NULL);
    if (!strstr(text, "process exit"))
        fprintf(stderr, "child's stderr:\n%s\n", text);
}

int main(void)
{
    RUN(exit_with_compiles_in_flight_is_clean);
    return TEST_SUMMARY();
}
