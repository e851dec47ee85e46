/* SPDX-License-Identifier: MIT */
/*
 * test_check.c: check mode and robust access, run for real (lavapipe in
 * CI). Check mode: a node reading past the end of its buffer is reported
 * once, naming the node, the binding and the byte, and counted; a node
 * that stays in range beside it is not named.
 * Robust access: the device reports it on, and where robustness2 is there
 * a read past the range gives zero and a write past it leaves the rest of
 * the buffer as it was. The two together are refused by name.
 *
 * Both are the device's settings: through a server, its own apply (the
 * client's ask is named in the log), so these tests run in process only.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>

#include "test.h"


/* in[i + shift] into out[i]: past the input's range for i + shift at or
 * past its length. */
static const char *k_shift = "#version 450\n"
                             "layout(local_size_x = 16) in;\n"
                             "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                             "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                             "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i + kiln_param(0)]; }\n";


/* Two nodes reading one 64-word buffer: 'inside' words 0..63, 'past'
 * words 8..71 (bytes 256..287 past the buffer's end); each writes its own
 * slice of a second buffer. */
static void add_nodes(kiln_context ctx, kiln_scheme s, kiln_program p, kiln_buffer data, kiln_buffer out)
{
    kiln_node n;
    kiln_binding b[2] = {{.binding = 0, .buffer = data}, {.binding = 1, .buffer = out, .offset = 0, .size = 256}};
    uint32_t zero = 0, eight = 8;
    CHECK_OK(kiln_scheme_add_node(ctx, s,
                                  &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2, .groups = {4},
                                                    .params = &zero, .param_count = 1, .label = "inside"},
                                  &n));
    b[1].offset = 256;
    CHECK_OK(kiln_scheme_add_node(ctx, s,
                                  &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2, .groups = {4},
                                                    .params = &eight, .param_count = 1, .label = "past"},
                                  &n));
}

TEST(check_mode_names_the_node_the_binding_and_the_byte)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.check = 1, .specialization = -1}, &ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(caps.check, 1);
    CHECK_EQ(caps.validation, 1);
    CHECK_EQ(caps.robust_access, 0);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_shift, .name = "shift.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_buffer data, out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &data));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 1024}, &out));   /* no binding of it reaches 256 */
    uint32_t words[64];
    for (uint32_t i = 0; i < 64; i++)
        words[i] = i;
    REQUIRE_OK(kiln_buffer_upload(ctx, data, 0, words, sizeof words));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    add_nodes(ctx, s, p, data, out);
    test_log_start();
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    kiln_set_log_callback(NULL, NULL);
    kiln_context_stats st;
    REQUIRE_OK(kiln_context_stats_get(ctx, &st));
    CHECK_EQ(st.check_findings, 1);   /* the layer reports a dispatch's first access past a range */
    CHECK(st.validation_errors >= 1);
    if (!strstr(test_log_text(), "check: node 'past' (dispatch 1 of its submit) accessed byte ") ||
        !strstr(test_log_text(), " of binding 0 of set 0, past the 256 bytes it reaches (0..255), by invocation (") ||
        strstr(test_log_text(), "node 'inside'")) {
        test_failures_++;
        fprintf(stderr, "the log names the access wrongly:\n%s", test_log_text());
    }
    kiln_context_destroy(ctx);
}

TEST(robust_access_reads_zero_and_writes_nothing_past_a_range)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.robust = 1}, &ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(caps.check, 0);
    CHECK(caps.robust_access >= 1);   /* every Vulkan device has robustBufferAccess */
    if (caps.robust_access == 2) {
        static const char *k_robust = "#version 450\n"
                                      "layout(local_size_x = 16) in;\n"
                                      "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                                      "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                                      "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i + 8u] + 1000u; }\n";
        kiln_program p;
        REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_robust, .name = "robust.comp"}, &p));
        REQUIRE_OK(kiln_program_wait(ctx, p));
        kiln_buffer in, out;
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 512}, &in));
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 512}, &out));
        uint32_t words[128], marks[128], got[128];
        for (uint32_t i = 0; i < 128; i++) {
            words[i] = i;
            marks[i] = 0xdead0000u + i;
        }
        REQUIRE_OK(kiln_buffer_upload(ctx, in, 0, words, sizeof words));
        REQUIRE_OK(kiln_buffer_upload(ctx, out, 0, marks, sizeof marks));
        kiln_scheme s;
        REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
        kiln_node n;
        /* 64 invocations over 32-word slices: reads past the first give
         * zero, writes past the second are dropped. */
        kiln_binding b[2] = {{.binding = 0, .buffer = in, .size = 128}, {.binding = 1, .buffer = out, .size = 128}};
        CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2,
                                                                 .groups = {4}},
                                      &n));
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
        int bad = 0;
        for (uint32_t i = 0; i < 128; i++)
            bad += got[i] != (i < 24 ? i + 8 + 1000 : i < 32 ? 1000 : marks[i]);
        CHECK_EQ(bad, 0);
    }
    test_context_done(ctx);
}

TEST(check_and_robust_together_are_refused)
{
    kiln_context ctx;
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.check = 1, .robust = 1}, &ctx), KILN_ERR_INVALID);
    CHECK_MSG("check mode and robust access exclude each other");
    setenv("KILN_ROBUST", "1", 1);
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.check = 1}, &ctx), KILN_ERR_INVALID);
    CHECK_MSG("robust by KILN_ROBUST");
    unsetenv("KILN_ROBUST");
}

int main(void)
{
    TEST_LOCAL_ONLY("check mode and robust access are the device's settings, a server's its own");
    RUN(check_mode_names_the_node_the_binding_and_the_byte);
    RUN(robust_access_reads_zero_and_writes_nothing_past_a_range);
    RUN(check_and_robust_together_are_refused);
    return TEST_SUMMARY();
}
