/* SPDX-License-Identifier: MIT */
/*
 * test_specialize_vk.c: the no-wrong-frame invariant on lavapipe. Two chained
 * nodes run one program whose output depends on every param word it reads:
 * a flag gating a step, a loop count, a scale, a frame counter. Seeded
 * random scripts move the words over 200 submits (the flag rarely, the loop
 * count now and then, the scale never, the counter every frame), with
 * pauses that let variant compiles land. Every frame's output is read back
 * and must equal the universal program's result for that frame's words,
 * computed on the CPU; the run must have promoted and demoted nodes, so
 * frames ran on variants and on the universal program both.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"

#define N 256

static const char *k_src = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                           "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                           "void main() {\n"
                           "    uint i = gl_GlobalInvocationID.x;\n"
                           "    uint v = a[i];\n"
                           "    if (kiln_param(0) != 0u) v = v * 3u + 1u;\n"
                           "    for (uint k = 0u; k < kiln_param(1); k++) v = v * 1664525u + 1013904223u;\n"
                           "    v += kiln_param(2) * 7u + kiln_param(3);\n"
                           "    b[i] = v;\n"
                           "}\n";

/* The same computation with the shader's own push_constant block: its
 * words are the node's params, baked at the SPIR-V level. */
static const char *k_own_src = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(push_constant) uniform P { uint flag; uint loops; uint mul; uint add; } pc;\n"
                               "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                               "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                               "void main() {\n"
                               "    uint i = gl_GlobalInvocationID.x;\n"
                               "    uint v = a[i];\n"
                               "    if (pc.flag != 0u) v = v * 3u + 1u;\n"
                               "    for (uint k = 0u; k < pc.loops; k++) v = v * 1664525u + 1013904223u;\n"
                               "    v += pc.mul * 7u + pc.add;\n"
                               "    b[i] = v;\n"
                               "}\n";

/* Lets the variant compiles in flight land (at most about 5 s). */
static void wait_compiles(kiln_context ctx)
{
    uint32_t pending = 1;
    for (int w = 0; w < 5000 && pending; w++) {
        CHECK_OK(kiln_compiles_pending(ctx, &pending));
        if (pending)
            nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    }
}

static uint32_t f(uint32_t v, const uint32_t p[4])
{
    if (p[0])
        v = v * 3u + 1u;
    for (uint32_t k = 0; k < p[1]; k++)
        v = v * 1664525u + 1013904223u;
    return v + p[2] * 7u + p[3];
}

static uint32_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static void run_script(const char *src, uint32_t seed, uint64_t *promotions, uint64_t *demotions)
{
    rng_state = seed;
    kiln_context ctx;
    if (kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx) != KILN_OK) {
        test_failures_++;
        fprintf(stderr, "%s: context: %s\n", test_name_, kiln_last_error());
        return;
    }
    kiln_program prog;
    kiln_buffer in, mid, out;
    kiln_scheme s;
    kiln_node node[2];
    uint32_t p[2][4] = {{1, 3, 5, 0}, {0, 2, 9, 0}};
    uint32_t input[N];
    for (uint32_t i = 0; i < N; i++)
        input[i] = i * 2654435761u;
    CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "frames.comp"}, &prog));
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &in));
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &mid));
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &out));
    CHECK_OK(kiln_buffer_upload(ctx, in, 0, input, sizeof input));
    CHECK_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "frames"}, &s));
    kiln_binding b0[2] = {{.binding = 0, .buffer = in}, {.binding = 1, .buffer = mid}};
    kiln_binding b1[2] = {{.binding = 0, .buffer = mid}, {.binding = 1, .buffer = out}};
    kiln_node_desc d0 = {.program = prog, .bindings = b0, .binding_count = 2, .groups = {N / 64}, .label = "first"};
    kiln_node_desc d1 = {.program = prog, .bindings = b1, .binding_count = 2, .groups = {N / 64}, .label = "second"};
    d0.params = p[0];
    d1.params = p[1];
    d0.param_count = d1.param_count = 4;
    CHECK_OK(kiln_scheme_add_node(ctx, s, &d0, &node[0]));
    CHECK_OK(kiln_scheme_add_node(ctx, s, &d1, &node[1]));

    uint32_t bad_frames = 0;
    for (uint32_t frame = 1; frame <= 200; frame++) {
        for (int k = 0; k < 2; k++) {
            uint32_t r = rnd() % 100;
            uint32_t before[4];
            memcpy(before, p[k], sizeof before);
            if (r < 3)
                p[k][0] ^= 1u;                      /* the flag: rarely */
            if (r >= 90)
                p[k][1] = rnd() % 6;                /* the loop count: now and then */
            if (k == 0)
                p[k][3] = frame;                    /* a frame counter on the first node */
            for (uint32_t w = 0; w < 4; w++)
                if (p[k][w] != before[w])
                    CHECK_OK(kiln_node_set_param(ctx, node[k], w, p[k][w]));
        }
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        uint32_t got[N];
        CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
        uint32_t wrong = 0;
        for (uint32_t i = 0; i < N; i++)
            wrong += got[i] != f(f(input[i], p[0]), p[1]);
        if (wrong && bad_frames++ < 3)
            fprintf(stderr, "%s: seed %u frame %u: %u of %d values differ from the universal program's\n",
                    test_name_, seed, frame, wrong, N);
        if (frame % 25 == 0) {   /* let variant compiles land */
            wait_compiles(ctx);
        }
    }
    CHECK_EQ(bad_frames, 0);
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    *promotions += st.spec_promotions;
    *demotions += st.spec_demotions;
    test_context_done(ctx);
}

/* The same scripts on a shader with its own push_constant block: variants
 * are its SPIR-V with the block's words made constants. */
TEST(own_block_frames_match_the_universal_program)
{
    uint64_t promotions = 0, demotions = 0;
    for (uint32_t seed = 1; seed <= 3; seed++)
        run_script(k_own_src, seed, &promotions, &demotions);
    CHECK(promotions > 0);
    CHECK(demotions > 0);
}

TEST(every_frame_matches_the_universal_program)
{
    uint64_t promotions = 0, demotions = 0;
    for (uint32_t seed = 1; seed <= 3; seed++)
        run_script(k_src, seed, &promotions, &demotions);
    /* Frames ran on variants and went back to the universal program. */
    CHECK(promotions > 0);
    CHECK(demotions > 0);
    printf("  %llu promotions, %llu demotions over 3 scripts of 200 frames\n", (unsigned long long)promotions,
           (unsigned long long)demotions);
}

/* KILN_SPEC_VERIFY=1 on correct variants: every promotion checked, none
 * fails, frames still right. */
TEST(verify_mode_passes_correct_variants)
{
    setenv("KILN_SPEC_VERIFY", "1", 1);
    uint64_t promotions = 0, demotions = 0;
    run_script(k_src, 7, &promotions, &demotions);
    run_script(k_own_src, 7, &promotions, &demotions);   /* variants baked in SPIR-V, checked too */
    unsetenv("KILN_SPEC_VERIFY");
    CHECK(promotions > 0);
}

/* A variant that lies: the source maps the baked literal 3u to 4u, so the
 * variant multiplies by 4 where the universal program multiplies by 3.
 * KILN_SPEC_VERIFY catches it at the promoting submit, which fails loudly;
 * the node is pinned to its universal program and later frames are right. */
static const char *k_liar = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                            "#define PASTE(a, b) a##b\n"
                            "#define XPASTE(a, b) PASTE(a, b)\n"
                            "#define WORD_kiln_pc kiln_pc\n"
                            "#define WORD_3u 4u\n"
                            "void main() { uint i = gl_GlobalInvocationID.x; x[i] = x[i] * XPASTE(WORD_, "
                            "KILN_SPEC_MAIN_UW0) + 1u; }\n";

TEST(verify_mode_catches_a_wrong_variant)
{
    setenv("KILN_SPEC_VERIFY", "1", 1);
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx));
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme s;
    kiln_node node;
    CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_liar, .name = "liar.comp"}, &prog));
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64 * 4}, &buf));
    CHECK_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(kiln_scheme_add_node(ctx, s,
                                  &(kiln_node_desc){.program = prog,
                                                    .bindings = &(kiln_binding){.binding = 0, .buffer = buf},
                                                    .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){3}, .param_count = KILN_PARAM_WORDS, .label = "liar"},
                                  &node));
    uint32_t want[64] = {0}, got[64];
    int verify_errors = 0;
    for (int frame = 1; frame <= 40; frame++) {
        kiln_ticket t;
        kiln_result r = test_settled(ctx, kiln_scheme_submit(ctx, s, &t));
        if (r == KILN_ERR_VERIFY) {
            verify_errors++;
            CHECK(strstr(kiln_last_error(), "node 'liar' (liar.comp)") != NULL);
            continue;   /* that frame did not run */
        }
        CHECK_OK(r);
        for (int i = 0; i < 64; i++)
            want[i] = want[i] * 3u + 1u;
        CHECK_OK(kiln_buffer_readback(ctx, buf, 0, got, sizeof got));
        CHECK(!memcmp(got, want, sizeof got));
        wait_compiles(ctx);
    }
    CHECK_EQ(verify_errors, 1);
    int spec = 1;
    CHECK_OK(kiln_node_is_specialized(ctx, node, &spec));
    CHECK_EQ(spec, 0);
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.spec_pinned, 1);
    unsetenv("KILN_SPEC_VERIFY");
    test_context_done(ctx);
}

/* The certain facts: the range length at a binding (kiln_len) and the grid
 * (kiln_groups) are pushed for the universal program and baked into the
 * variant; both compute the same. */
static const char *k_facts = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    uint n = kiln_len(0) / 4u;   /* the bound range, in words */\n"
                             "    if (i < n) x[i] = x[i] + kiln_groups().x * 1000u + n;\n"
                             "}\n";

TEST(lengths_and_grid_bake_as_certain_facts)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx));
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme s;
    kiln_node node;
    CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_facts, .name = "facts.comp"}, &prog));
    CHECK_OK(kiln_program_wait(ctx, prog));
    kiln_program_interface iface;
    CHECK_OK(kiln_program_interface_get(ctx, prog, &iface));
    CHECK_EQ(iface.lens_read, 1);
    CHECK_EQ(iface.groups_read, 1);
    CHECK_EQ(iface.params_read, 0);
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4096}, &buf));
    CHECK_OK(kiln_scheme_create(ctx, NULL, &s));
    /* 100 words bound of 1024, a grid of 3 workgroups (192 invocations). */
    CHECK_OK(kiln_scheme_add_node(ctx, s,
                                  &(kiln_node_desc){.program = prog,
                                                    .bindings = &(kiln_binding){.binding = 0, .buffer = buf,
                                                                                .size = 400},
                                                    .binding_count = 1, .groups = {3}, .label = "facts"},
                                  &node));
    uint32_t want[1024] = {0}, got[1024];
    bool promoted_seen = false;
    for (int frame = 1; frame <= 30; frame++) {
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        for (int i = 0; i < 100; i++)
            want[i] += 3000u + 100u;
        CHECK_OK(kiln_buffer_readback(ctx, buf, 0, got, sizeof got));
        CHECK(!memcmp(got, want, sizeof got));
        kiln_spec_event ev[8];
        uint32_t n = 0;
        CHECK_OK(kiln_scheme_spec_events(ctx, s, ev, 8, &n));
        for (uint32_t k = 0; k < n; k++)
            if (ev[k].kind == KILN_SPEC_PROMOTE) {
                promoted_seen = true;
                CHECK_EQ(ev[k].mask, 0);
                CHECK_EQ(ev[k].lens_mask, 1);
                CHECK_EQ(ev[k].lens[0], 400);
                CHECK_EQ(ev[k].groups_baked, 1);
                CHECK_EQ(ev[k].groups[0], 3);
            }
        wait_compiles(ctx);
    }
    CHECK(promoted_seen);
    test_context_done(ctx);
}

int main(void)
{
    unsetenv("KILN_SPECIALIZATION");
    unsetenv("KILN_SPEC_VERIFY");
    RUN(own_block_frames_match_the_universal_program);
    RUN(every_frame_matches_the_universal_program);
    RUN(verify_mode_passes_correct_variants);
    RUN(verify_mode_catches_a_wrong_variant);
    RUN(lengths_and_grid_bake_as_certain_facts);
    return TEST_SUMMARY();
}
