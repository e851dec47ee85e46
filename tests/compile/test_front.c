/* SPDX-License-Identifier: MIT */
/*
 * test_front.c: front-end compiles bounded in time and memory (their
 * helper process, src/compile/front.c), as a user meets it. A compile bomb
 * (nested macros doubling 30 times: a 900-byte shader that would compile
 * for minutes at gigabytes) fails with KILN_ERR_LIMIT naming the limit it
 * passed, memory or time; the context goes on compiling other programs; a
 * bomb nobody wants any more (its program destroyed) is stopped within its
 * grace and the context closes at once. The limits come from
 * KILN_COMPILE_MAX_BYTES and KILN_COMPILE_TIMEOUT_S, read when the context
 * (its compile service) is made; every bomb here has a bound, so none runs
 * away whatever happens.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compile/compile_private.h"
#include "test.h"

static char bomb[2048];

static void make_bomb(void)
{
    size_t n = (size_t)snprintf(bomb, sizeof bomb,
                                "#version 450\nlayout(local_size_x = 1) in;\n"
                                "layout(std430, binding = 0) buffer O { uint o[]; };\n#define A0 1u+\n");
    for (int i = 1; i <= 30; i++)
        n += (size_t)snprintf(bomb + n, sizeof bomb - n, "#define A%d A%d A%d\n", i, i - 1, i - 1);
    snprintf(bomb + n, sizeof bomb - n, "void main() { o[0] = A30 0u; }\n");
}

static const char *k_small = "#version 450\nlayout(local_size_x = 1) in;\n"
                             "layout(std430, binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = 7u; }\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static kiln_result mock_context(kiln_context *c)
{
    return kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, c);
}

/* The bomb against a limit: KILN_ERR_LIMIT, the log naming it; then a
 * small program compiles in the same context (a new helper). */
static void bomb_against(const char *max_bytes, const char *timeout_s, const char *want)
{
    setenv("KILN_COMPILE_MAX_BYTES", max_bytes, 1);
    setenv("KILN_COMPILE_TIMEOUT_S", timeout_s, 1);
    kiln_context c;
    REQUIRE_OK(mock_context(&c));
    alarm(120);
    kiln_program p, q;
    REQUIRE_OK(kiln_program_create(c, &(kiln_program_desc){.source = bomb, .name = "bomb.comp"}, &p));
    CHECK_RESULT(kiln_program_wait(c, p), KILN_ERR_LIMIT);
    CHECK_MSG(want);
    char log[1024] = "";
    CHECK_OK(kiln_program_log(c, p, log, sizeof log, NULL));
    CHECK(strstr(log, want) != NULL);
    if (!strstr(log, want))
        fprintf(stderr, "log: %s\n", log);
    REQUIRE_OK(kiln_program_create(c, &(kiln_program_desc){.source = k_small, .name = "small.comp"}, &q));
    CHECK_OK(kiln_program_wait(c, q));
    alarm(0);
    kiln_context_destroy(c);
}

TEST(a_compile_past_its_memory_limit_is_stopped_naming_it)
{
    bomb_against("256M", "60", "passed its memory limit of 256 MiB");
}

TEST(a_compile_past_its_time_limit_is_stopped_naming_it)
{
    /* 3 s: the bomb takes minutes; the small program after it, in a new
     * helper, well under it even under ASan on two loaded cores */
    bomb_against("4G", "3", "ran past its time limit of 3.0 s");
}

/* A bomb whose program is destroyed while it compiles is stopped after
 * its grace (2 s), not at its limits (30 s, 4 GiB): the service has
 * nothing pending soon after, and the context closes at once. */
TEST(a_compile_nobody_wants_is_stopped)
{
    setenv("KILN_COMPILE_MAX_BYTES", "4G", 1);
    setenv("KILN_COMPILE_TIMEOUT_S", "30", 1);
    kiln_context c;
    REQUIRE_OK(mock_context(&c));
    alarm(120);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(c, &(kiln_program_desc){.source = bomb, .name = "bomb.comp"}, &p));
    double t0 = now_s();
    kiln_context_stats st;
    for (int i = 0; i < 200; i++) {   /* until its compile runs */
        CHECK_OK(kiln_context_stats_get(c, &st));
        if (st.compiles_started)
            break;
        usleep(10000);
    }
    CHECK_OK(kiln_program_destroy(c, p));
    uint64_t pending = 1;
    while (pending && now_s() - t0 < 20) {
        CHECK_OK(kiln_context_stats_get(c, &st));
        pending = st.compiles_pending;
        usleep(50000);
    }
    double stopped = now_s() - t0;
    CHECK_EQ(pending, 0);
    CHECK(stopped < 10);
    double t1 = now_s();
    kiln_context_destroy(c);
    CHECK(now_s() - t1 < 5);
    alarm(0);
    printf("bomb stopped %.2f s after its create (grace 2 s)\n", stopped);
}

/* A context destroyed while a bomb compiles closes without waiting for it
 * to reach a limit: the service's close stops its helpers. */
TEST(a_closing_context_stops_its_compiles)
{
    setenv("KILN_COMPILE_MAX_BYTES", "4G", 1);
    setenv("KILN_COMPILE_TIMEOUT_S", "30", 1);
    kiln_context c;
    REQUIRE_OK(mock_context(&c));
    alarm(120);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(c, &(kiln_program_desc){.source = bomb, .name = "bomb.comp"}, &p));
    usleep(300000);
    double t0 = now_s();
    kiln_context_destroy(c);
    double took = now_s() - t0;
    CHECK(took < 5);
    alarm(0);
    printf("context closed %.2f s into the bomb's compile\n", took);
}

int main(void)
{
    TEST_LOCAL_ONLY("it sets the compile service's limits through this process's environment");
    if (!front_helper_path()[0]) {
        printf("no kiln-front helper found: compiles run in process, unbounded\n");
        return 77;
    }
    unsetenv("KILN_COMPILE_HELPER");
    make_bomb();
    RUN(a_compile_past_its_memory_limit_is_stopped_naming_it);
    RUN(a_compile_past_its_time_limit_is_stopped_naming_it);
    RUN(a_compile_nobody_wants_is_stopped);
    RUN(a_closing_context_stops_its_compiles);
    return TEST_SUMMARY();
}
