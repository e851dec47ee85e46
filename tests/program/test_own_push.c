/* SPDX-License-Identifier: MIT */
/*
 * test_own_push.c: shaders that declare their own push_constant block run
 * unchanged on a real device (lavapipe in CI, validation on). kiln adds no
 * block of its own; a node's param words are the block's words; set_param
 * reaches every word of it; kiln_param and kiln_len name the way out;
 * kiln_groups() still works; a block past the device's limit is refused
 * before any Vulkan call.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>

#include "test.h"

#define N 1024u

/* A block of 29 words in the style real kernels write: sizes, strides,
 * scalars of three types, a vec2 and a trailing array. std430 offsets:
 * n 0, stride 4, bias 8, scale 12, shift 16, offs 24 (vec2 at 8-byte
 * alignment), k[20] 32..111, last 112: 29 words (116 bytes). */
static const char *k_own = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(push_constant) uniform Push {\n"
                           "    uint n;\n"
                           "    uint stride;\n"
                           "    int bias;\n"
                           "    float scale;\n"
                           "    uint shift;\n"
                           "    vec2 offs;\n"
                           "    uint k[20];\n"
                           "    uint last;\n"
                           "} pc;\n"
                           "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
                           "void main() {\n"
                           "    uint i = gl_GlobalInvocationID.x;\n"
                           "    if (i >= pc.n) return;\n"
                           "    uint v = (i * pc.stride + pc.k[i % 20u]) >> pc.shift;\n"
                           "    o[i] = float(int(v) + pc.bias) * pc.scale + pc.offs.x - pc.offs.y + float(pc.last);\n"
                           "}\n";

enum { W_N = 0, W_STRIDE = 1, W_BIAS = 2, W_SCALE = 3, W_SHIFT = 4, W_OFFX = 6, W_OFFY = 7, W_K = 8, W_LAST = 28,
       WORDS = 29 };

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float cpu_own(const uint32_t *w, uint32_t i)
{
    uint32_t v = (i * w[W_STRIDE] + w[W_K + i % 20]) >> w[W_SHIFT];
    return (float)((int32_t)v + (int32_t)w[W_BIAS]) * bitsf(w[W_SCALE]) + bitsf(w[W_OFFX]) - bitsf(w[W_OFFY]) +
           (float)w[W_LAST];
}

static void init_words(uint32_t *w)
{
    memset(w, 0, WORDS * sizeof *w);
    w[W_N] = N - 5;   /* the tail stays as uploaded */
    w[W_STRIDE] = 3;
    w[W_BIAS] = (uint32_t)-7;
    w[W_SCALE] = fbits(0.5f);
    w[W_SHIFT] = 1;
    w[W_OFFX] = fbits(2.0f);
    w[W_OFFY] = fbits(0.25f);
    for (int k = 0; k < 20; k++)
        w[W_K + k] = (uint32_t)(k * k + 1);
    w[W_LAST] = 9;
}

/* Runs the scheme once and checks every element against the CPU. */
static void check_run(kiln_context ctx, kiln_scheme s, kiln_buffer out, const uint32_t *w, int line)
{
    static float got[N];
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    uint32_t bad = 0, first = 0;
    for (uint32_t i = 0; i < N; i++) {
        float want = i < w[W_N] ? cpu_own(w, i) : -1.0f;
        if (fabsf(got[i] - want) > 1e-5f * fmaxf(1.0f, fabsf(want)) && !bad++)
            first = i;
    }
    if (bad) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: %u of %u elements wrong, first %u: %g, expected %g\n", __FILE__, line,
                test_name_, bad, N, first, got[first], first < w[W_N] ? cpu_own(w, first) : -1.0);
    }
}

TEST(own_block_words_are_the_node_params)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_own, .name = "own.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.own_push_block, 1);
    CHECK_EQ(iface.push_constant_size, 4 * WORDS);
    CHECK_EQ(iface.param_words, WORDS);
    CHECK(iface.params_read == (1ull << WORDS) - 1);   /* the code reads every word of its block */
    CHECK_EQ(iface.push_float_words, 1ull << W_SCALE | 1ull << W_OFFX | 1ull << W_OFFY);

    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "out"}, &out));
    static float minus[N];
    for (uint32_t i = 0; i < N; i++)
        minus[i] = -1.0f;
    REQUIRE_OK(kiln_buffer_upload(ctx, out, 0, minus, sizeof minus));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    uint32_t w[WORDS];
    init_words(w);
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                      .binding_count = 1, .groups = {N / 64}, .params = w,
                                                      .param_count = WORDS},
                                    &n));
    check_run(ctx, s, out, w, __LINE__);

    /* Every word of the block is a param: the last one, a float, the array. */
    w[W_LAST] = 1000;
    CHECK_OK(kiln_node_set_param(ctx, n, W_LAST, w[W_LAST]));
    w[W_SCALE] = fbits(-1.5f);
    CHECK_OK(kiln_node_set_param(ctx, n, W_SCALE, w[W_SCALE]));
    w[W_K + 19] = 77;
    CHECK_OK(kiln_node_set_param(ctx, n, W_K + 19, w[W_K + 19]));
    check_run(ctx, s, out, w, __LINE__);
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.records_full, 1);     /* words changed: params-only records */
    CHECK_EQ(st.records_params, 1);

    uint32_t back[KILN_MAX_PARAM_WORDS], count = 0;
    CHECK_OK(kiln_node_get_params(ctx, n, back, KILN_MAX_PARAM_WORDS, &count));
    CHECK_EQ(count, WORDS);
    CHECK(!memcmp(back, w, sizeof w));
    CHECK_RESULT(kiln_node_set_param(ctx, n, WORDS, 1), KILN_ERR_INVALID);
    CHECK_MSG("push_constant block");

    /* More words than the block holds: refused naming its size (here at
     * add_node: the program is compiled; a pending one's node is refused
     * by the submit that binds it). */
    uint32_t many[WORDS + 1] = {0};
    kiln_node n2;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                      &(kiln_node_desc){.program = p,
                                                        .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                        .binding_count = 1, .groups = {1}, .params = many,
                                                        .param_count = WORDS + 1},
                                      &n2)),
                 KILN_ERR_INVALID);
    CHECK_MSG("30 param words given; program own.comp has 29");
    check_run(ctx, s, out, w, __LINE__);
    test_context_done(ctx);
}

/* kiln_groups() reads gl_NumWorkGroups beside an own block, and a block
 * spelled through a macro (which kiln's scan cannot see) still compiles:
 * kiln compiles again without its own block. */
TEST(groups_and_a_block_behind_a_macro)
{
    static const char *src = "#version 450\n"
                             "#define PC_LAYOUT layout(push_constant)\n"
                             "layout(local_size_x = 64) in;\n"
                             "PC_LAYOUT uniform P { uint add; } pc;\n"
                             "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                             "void main() { o[gl_GlobalInvocationID.x] = kiln_groups().x * 1000u + pc.add; }\n";
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "macro.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK(iface.own_push_block == 1 && iface.param_words == 1);
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 3 * 64 * 4}, &out));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                      .binding_count = 1, .groups = {3}, .params = (const uint32_t[]){5},
                                                      .param_count = 1},
                                    &n));
    uint32_t got[3 * 64];
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    CHECK_EQ(got[0], 3005);
    CHECK_EQ(got[191], 3005);
    test_context_done(ctx);
}

/* Fails to compile; the log holds `needle`. */
static void check_refused(kiln_context ctx, const char *src, const char *needle, int line)
{
    kiln_program p;
    char log[4096] = "";
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "bad.comp"}, &p);
    if (r == KILN_OK) {
        r = kiln_program_wait(ctx, p);
        if (kiln_program_log(ctx, p, log, sizeof log, NULL) != KILN_OK)
            log[0] = 0;
    }
    if (r != KILN_ERR_COMPILE || !strstr(log, needle)) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: got %s, log '%s' lacks '%s'\n", __FILE__, line, test_name_, kiln_result_name(r),
                log, needle);
    }
}

TEST(kiln_accessors_beside_an_own_block_name_the_way_out)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    check_refused(ctx,
                  "#version 450\nlayout(local_size_x = 1) in;\nlayout(push_constant) uniform P { uint a; } pc;\n"
                  "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                  "void main() { o[0] = pc.a + kiln_param(0); }\n",
                  "kiln_param(n) reads kiln's push-constant block", __LINE__);
    check_refused(ctx,
                  "#version 450\nlayout(local_size_x = 1) in;\nlayout(push_constant) uniform P { uint a; } pc;\n"
                  "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                  "void main() { o[0] = pc.a + kiln_len(0); }\n",
                  "use the buffer's .length() instead", __LINE__);
    test_context_done(ctx);
}

/* A block larger than the device takes fails as KILN_ERR_LIMIT naming the
 * limit, before any Vulkan call sees it (validation stays quiet). */
TEST(a_block_past_the_device_limit_is_refused)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    uint32_t words = caps.max_push_constants_size / 4 + 1;
    char src[1024];
    snprintf(src, sizeof src,
             "#version 450\nlayout(local_size_x = 1) in;\nlayout(push_constant) uniform P { uint w[%u]; } pc;\n"
             "layout(std430, binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = pc.w[%u]; }\n",
             words, words - 1);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "big.comp"}, &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_LIMIT);
    CHECK_MSG("push");
    /* Past what a node carries (KILN_MAX_PARAM_WORDS) too, whatever the
     * device takes: its compiled front end comes back whole (from the
     * compile helper, through the archive's codec) and the limit is named. */
    words = KILN_MAX_PARAM_WORDS + 1;
    snprintf(src, sizeof src,
             "#version 450\nlayout(local_size_x = 1) in;\nlayout(push_constant) uniform P { uint w[%u]; } pc;\n"
             "layout(std430, binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = pc.w[%u]; }\n",
             words, words - 1);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "bigger.comp"}, &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_LIMIT);
    CHECK_MSG("push");
    test_context_done(ctx);
}

/* The interface names the block's float words through structs, arrays
 * and matrices: s[0].a word 0, s[1].a word 2, m words 4..7 (two vec2
 * columns), u word 8 (a uint). */
TEST(the_float_words_of_a_nested_block)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char *src = "#version 450\nlayout(local_size_x = 1) in;\n"
                             "struct S { float a; uint b; };\n"
                             "layout(push_constant) uniform P { S s[2]; mat2 m; uint u; } pc;\n"
                             "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
                             "void main() { o[0] = pc.s[1].a + pc.m[1][0] + float(pc.u + pc.s[0].b); }\n";
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "nested.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.param_words, 9);
    CHECK_EQ(iface.push_float_words, 0xf5);
    test_context_done(ctx);
}

int main(void)
{
    RUN(own_block_words_are_the_node_params);
    RUN(groups_and_a_block_behind_a_macro);
    RUN(kiln_accessors_beside_an_own_block_name_the_way_out);
    RUN(a_block_past_the_device_limit_is_refused);
    RUN(the_float_words_of_a_nested_block);
    return TEST_SUMMARY();
}
