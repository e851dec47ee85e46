/* SPDX-License-Identifier: MIT */
/*
 * test_loops.c: the warning for loops a device's loop budget may cut
 * (kiln_caps.loop_budget: lavapipe stops a shader after 65,535 loop
 * iterations in all, per invocation, and returns what it has), run for
 * real. Where the device has a budget, a program's loops are each named
 * when it compiles if their count is not a constant within it (a bound
 * read from a push word, a constant past the budget, a while (true) left
 * by a break) and not otherwise (a constant bound, a push-word bound
 * capped by a constant with &&); a device without one names none. And the
 * budget is real: a loop of 70,000 iterations on lavapipe gives a short
 * count, which is why the warning exists.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>

#include "test.h"


static const char *k_loops = "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                             "void main() {\n"
                             "    uint s = 0u;\n"
                             "    for (uint i = 0u; i < 100u; i++) s += i;\n"                  /* 1: a constant */
                             "    for (uint i = 0u; i < kiln_param(0); i++) s += i;\n"         /* 2: a push word */
                             "    for (uint i = 0u; i < kiln_param(1) && i < 64u; i++) s += 1u;\n"   /* 3: capped */
                             "    for (int i = 0; i < 100000; i++) s += 1u;\n"                /* 4: past the budget */
                             "    uint j = 0u;\n"
                             "    while (true) { j++; if (j >= v[1]) break; }\n"            /* 5: a break */
                             "    v[0] = s + j;\n"
                             "}\n";


TEST(loops_past_the_budget_are_named_when_compiled)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    test_log_start();
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_loops, .name = "loops.comp"}, &p));
    kiln_result r = kiln_program_wait(ctx, p);
    kiln_set_log_callback(NULL, NULL);
    REQUIRE_OK(r);
    if (caps.loop_budget) {
        CHECK_EQ(caps.loop_budget, 65535);
        CHECK(strstr(test_log_text(), "loops.comp: loop 2 of 5 (in main()) runs a count not known when it compiles") != NULL);
        CHECK(strstr(test_log_text(), "loops.comp: loop 4 of 5 (in main()) runs up to 100000 iterations") != NULL);
        CHECK(strstr(test_log_text(), "loops.comp: loop 5 of 5 (in main()) runs a count not known") != NULL);
        CHECK(strstr(test_log_text(), "stops a shader after 65535 loop iterations in all, per invocation") != NULL);
        CHECK(!strstr(test_log_text(), "loop 1 of") && !strstr(test_log_text(), "loop 3 of"));
    } else {
        CHECK(!strstr(test_log_text(), "loops.comp: loop"));
    }
    test_context_done(ctx);
}

/* What the budget does where there is one: 70,000 iterations come back
 * as fewer. A device without a budget counts them all. */
TEST(the_budget_cuts_a_long_loop_short)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    static const char *k_long = "#version 450\nlayout(local_size_x = 1) in;\n"
                                "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                                "void main() { uint s = 0u; for (uint i = 0u; i < kiln_param(0); i++) s += 1u; "
                                "v[0] = s; }\n";
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_long, .name = "long.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4}, &b));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    uint32_t count = 70000;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.buffer = b},
                                                               .binding_count = 1, .groups = {1}, .params = &count,
                                                               .param_count = 1},
                                    &n));
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
    REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    uint32_t got = 0;
    REQUIRE_OK(kiln_buffer_readback(ctx, b, 0, &got, 4));
    if (caps.loop_budget)
        CHECK(got <= caps.loop_budget);   /* cut short, without a word: what the warning is for */
    else
        CHECK_EQ(got, count);
    test_context_done(ctx);
}

int main(void)
{
    TEST_LOCAL_ONLY("the warnings go to the log of the process that compiles");
    RUN(loops_past_the_budget_are_named_when_compiled);
    RUN(the_budget_cuts_a_long_loop_short);
    return TEST_SUMMARY();
}
