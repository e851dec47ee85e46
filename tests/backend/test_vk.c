/* SPDX-License-Identifier: MIT */
/*
 * test_vk.c: kiln on a real Vulkan device (lavapipe in CI), results checked
 * against the same computation on the CPU. Validation (with synchronization
 * validation) is on; any validation error fails the test.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "test.h"

#define N 65536u   /* elements per buffer */

/* In-place: x = x * p0 + p1 over binding 0. */
static const char *k_mad = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() {\n"
                           "    uint i = gl_GlobalInvocationID.x;\n"
                           "    x[i] = x[i] * kiln_param(0) + kiln_param(1);\n"
                           "}\n";

/* out = a (op) b, op in word 0: 0 add, 1 sub, 2 mul, 3 xor; word 1 rotates b's index. */
static const char *k_binop = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                             "layout(std430, binding = 1) readonly buffer B { uint b[]; };\n"
                             "layout(std430, binding = 2) writeonly buffer O { uint o[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    uint n = gl_NumWorkGroups.x * 64u;\n"
                             "    uint x = a[i], y = b[(i + kiln_param(1)) % n];\n"
                             "    uint op = kiln_param(0);\n"
                             "    o[i] = op == 0u ? x + y : op == 1u ? x - y : op == 2u ? x * y : x ^ y;\n"
                             "}\n";

static uint32_t cpu_binop(uint32_t op, uint32_t x, uint32_t y)
{
    return op == 0 ? x + y : op == 1 ? x - y : op == 2 ? x * y : x ^ y;
}

struct chain_node {
    int kind;          /* 0 mad on buffer a; 1 binop a,b -> o */
    int a, b, o;
    uint32_t p[2];
};

static void cpu_run(uint32_t *bufs[], const struct chain_node *nodes, int count)
{
    static uint32_t tmp[N];
    for (int k = 0; k < count; k++) {
        const struct chain_node *c = &nodes[k];
        if (c->kind == 0) {
            for (uint32_t i = 0; i < N; i++)
                bufs[c->a][i] = bufs[c->a][i] * c->p[0] + c->p[1];
        } else {
            for (uint32_t i = 0; i < N; i++)
                tmp[i] = cpu_binop(c->p[0], bufs[c->a][i], bufs[c->b][(i + c->p[1]) % N]);
            memcpy(bufs[c->o], tmp, sizeof tmp);
        }
    }
}

TEST(chain_of_twelve_nodes_with_hazards_matches_the_cpu)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_program mad, binop;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_mad, .name = "mad.comp"}, &mad));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_binop, .name = "binop.comp"}, &binop));
    enum { NB = 4 };
    kiln_buffer buf[NB];
    static uint32_t host[NB][N], want[NB][N], got[N];
    uint32_t *bufs[NB];
    srand(7);
    for (int b = 0; b < NB; b++) {
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "chain"}, &buf[b]));
        for (uint32_t i = 0; i < N; i++)
            host[b][i] = want[b][i] = (uint32_t)rand();
        REQUIRE_OK(kiln_buffer_upload(ctx, buf[b], 0, host[b], N * 4));
        bufs[b] = want[b];
    }
    /* Every hazard kind: RAW (1 after 0), WAR (2 writes what 1 read), WAW
     * (4 after 3), chains through all four buffers. */
    struct chain_node nodes[] = {
        {0, 0, 0, 0, {3, 1}},  {1, 0, 1, 2, {0, 5}}, {0, 0, 0, 0, {5, 7}}, {1, 2, 0, 3, {2, 0}},
        {1, 1, 2, 3, {3, 9}},  {0, 3, 0, 0, {7, 2}}, {1, 3, 3, 1, {1, 1}}, {0, 1, 0, 0, {2, 2}},
        {1, 1, 0, 2, {0, 64}}, {0, 2, 0, 0, {9, 4}}, {1, 2, 1, 0, {3, 3}}, {1, 0, 2, 3, {2, 17}},
    };
    enum { NN = sizeof nodes / sizeof nodes[0] };
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "chain"}, &s));
    kiln_node handles[NN];
    for (int k = 0; k < NN; k++) {
        kiln_node_desc d = {.groups = {N / 64}, .params = (const uint32_t[KILN_PARAM_WORDS]){nodes[k].p[0], nodes[k].p[1]}, .param_count = KILN_PARAM_WORDS};
        kiln_binding b[3];
        if (nodes[k].kind == 0) {
            b[0] = (kiln_binding){.binding = 0, .buffer = buf[nodes[k].a]};
            d.program = mad;
            d.binding_count = 1;
        } else {
            b[0] = (kiln_binding){.binding = 0, .buffer = buf[nodes[k].a]};
            b[1] = (kiln_binding){.binding = 1, .buffer = buf[nodes[k].b]};
            b[2] = (kiln_binding){.binding = 2, .buffer = buf[nodes[k].o]};
            d.program = binop;
            d.binding_count = 3;
        }
        d.bindings = b;
        REQUIRE_OK(kiln_scheme_add_node(ctx, s, &d, &handles[k]));
    }
    /* Three frames; params change between frames 1 and 2. */
    for (int frame = 0; frame < 3; frame++) {
        if (frame == 2) {
            nodes[4].p[0] = 1;
            nodes[9].p[1] = 11;
            CHECK_OK(kiln_node_set_param(ctx, handles[4], 0, 1));
            CHECK_OK(kiln_node_set_param(ctx, handles[9], 1, 11));
        }
        kiln_ticket t;
        REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
        CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        cpu_run(bufs, nodes, NN);
    }
    for (int b = 0; b < NB; b++) {
        REQUIRE_OK(kiln_buffer_readback(ctx, buf[b], 0, got, N * 4));
        uint32_t bad = 0;
        for (uint32_t i = 0; i < N; i++)
            bad += got[i] != want[b][i];
        if (bad)
            fprintf(stderr, "buffer %d: %u of %u words differ (first: got %u want %u)\n", b, bad, N, got[0],
                    want[b][0]);
        CHECK_EQ(bad, 0);
    }
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.submits, 3);
    CHECK_EQ(st.records_full, 1);
    CHECK_EQ(st.records_params, 1);
    CHECK_EQ(st.replays, 1);
    CHECK(st.barriers >= 8 && st.barriers <= NN - 1);
    test_context_done(ctx);
}

/* A program whose words steer loops and branches. `precise` keeps the
 * driver from contracting differently once the words are constants (see
 * kiln.h), so the outputs must match bit for bit. */
static const char *k_steer = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) readonly buffer In { float x[]; };\n"
                             "layout(std430, binding = 1) writeonly buffer Out { float y[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    precise float v = x[i];\n"
                             "    for (uint k = 0u; k < kiln_param(0); k++)\n"
                             "        v = v * kiln_paramf(1) + 0.25;\n"
                             "    if (kiln_param(2) != 0u) v = -v;\n"
                             "    y[i] = v + float(kiln_param(3));\n"
                             "}\n";

static kiln_result run_steer(kiln_context ctx, kiln_program p, kiln_buffer in, kiln_buffer out, const uint32_t w[4])
{
    kiln_scheme s;
    kiln_result r = kiln_scheme_create(ctx, NULL, &s);
    if (r != KILN_OK)
        return r;
    kiln_binding b[2] = {{.binding = 0, .buffer = in}, {.binding = 1, .buffer = out}};
    kiln_node n;
    kiln_node_desc d = {.program = p, .bindings = b, .binding_count = 2, .groups = {16},
                        .params = (const uint32_t[KILN_PARAM_WORDS]){w[0], w[1], w[2], w[3]}, .param_count = KILN_PARAM_WORDS};
    kiln_ticket t;
    r = kiln_scheme_add_node(ctx, s, &d, &n);
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, s, &t);
    if (r == KILN_OK)
        r = kiln_ticket_wait(ctx, t, UINT64_MAX);
    kiln_result r2 = kiln_scheme_destroy(ctx, s);
    return r ? r : r2;
}

TEST(baked_program_matches_the_universal_one)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    float gain = 0.5f;
    uint32_t gain_bits;
    memcpy(&gain_bits, &gain, 4);
    const uint32_t words[4] = {7, gain_bits, 1, 3};
    char lit[4][32];
    kiln_define defs[4];
    for (int i = 0; i < 4; i++) {
        snprintf(lit[i], sizeof lit[i], "%uu", words[i]);
        static char names[4][32];
        snprintf(names[i], sizeof names[i], "KILN_SPEC_MAIN_UW%d", i);
        defs[i] = (kiln_define){names[i], lit[i]};
    }
    kiln_program uni, baked, partly;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_steer, .name = "steer.comp"}, &uni));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_steer, .name = "steer-baked.comp",
                                                             .defines = defs, .define_count = 4}, &baked));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_steer, .name = "steer-w0.comp",
                                                             .defines = defs, .define_count = 1}, &partly));
    CHECK_OK(kiln_program_wait(ctx, baked));
    kiln_buffer in, out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 1024 * 4}, &in));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 1024 * 4}, &out));
    static float x[1024], y_uni[1024], y_baked[1024], y_part[1024];
    for (int i = 0; i < 1024; i++)
        x[i] = (float)i * 0.01f - 3.0f;
    REQUIRE_OK(kiln_buffer_upload(ctx, in, 0, x, sizeof x));
    REQUIRE_OK(run_steer(ctx, uni, in, out, words));
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, y_uni, sizeof y_uni));
    REQUIRE_OK(run_steer(ctx, baked, in, out, words));
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, y_baked, sizeof y_baked));
    REQUIRE_OK(run_steer(ctx, partly, in, out, words));
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, y_part, sizeof y_part));
    CHECK(!memcmp(y_uni, y_baked, sizeof y_uni));
    for (int i = 0; i < 1024; i++) if (y_uni[i] != y_baked[i]) { fprintf(stderr, "i=%d x=%g uni=%.9g baked=%.9g\n", i, x[i], y_uni[i], y_baked[i]); break; }
    CHECK(!memcmp(y_uni, y_part, sizeof y_uni));
    /* And both are right. */
    int bad = 0;
    for (int i = 0; i < 1024; i++) {
        float v = x[i];
        for (int k = 0; k < 7; k++)
            v = v * 0.5f + 0.25f;
        bad += y_uni[i] != -v + 3.0f;
    }
    CHECK_EQ(bad, 0);
    /* The baked program ignores the pushed words it baked: different words,
     * same output. */
    const uint32_t other[4] = {1, gain_bits, 0, 3};
    REQUIRE_OK(run_steer(ctx, baked, in, out, other));
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, y_part, sizeof y_part));
    CHECK(!memcmp(y_part, y_baked, sizeof y_part));
    test_context_done(ctx);
}

TEST(set_program_swaps_a_variant_under_a_recorded_node)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_define bake = {"KILN_SPEC_MAIN_UW0", "2u"};
    kiln_program uni, baked;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_mad}, &uni));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_mad, .defines = &bake, .define_count = 1},
                                   &baked));
    kiln_buffer x;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256 * 4}, &x));
    uint32_t v[256] = {0};
    REQUIRE_OK(kiln_buffer_upload(ctx, x, 0, v, sizeof v));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = uni,
                                                              .bindings = &(kiln_binding){.binding = 0, .buffer = x},
                                                              .binding_count = 1, .groups = {4}, .params = (const uint32_t[KILN_PARAM_WORDS]){2, 1}, .param_count = KILN_PARAM_WORDS},
                                    &n));
    uint32_t want = 0;
    for (int frame = 0; frame < 6; frame++) {
        if (frame == 2)
            CHECK_OK(kiln_node_set_program(ctx, n, baked));
        if (frame == 4)
            CHECK_OK(kiln_node_set_program(ctx, n, uni));
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        want = want * 2 + 1;
    }
    REQUIRE_OK(kiln_buffer_readback(ctx, x, 0, v, sizeof v));
    CHECK_EQ(v[0], want);
    CHECK_EQ(v[255], want);
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.records_full, 1);
    CHECK_EQ(st.records_params, 2);
    test_context_done(ctx);
}

static void round_trip(const char *staging)
{
    if (staging)
        setenv("KILN_FORCE_STAGING", staging, 1);
    kiln_context ctx;
    kiln_result r = test_context(&ctx);
    unsetenv("KILN_FORCE_STAGING");
    REQUIRE_OK(r);
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    if (staging)
        CHECK_EQ(caps.unified_memory, 0);   /* (a discrete GPU is never unified either) */
    enum { SIZE = 3 << 20 };
    uint8_t *a = malloc(SIZE), *b = malloc(SIZE);
    REQUIRE(a && b);
    for (int i = 0; i < SIZE; i++)
        a[i] = (uint8_t)(i * 7 + 3);
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = SIZE}, &buf));
    memset(b, 0xff, SIZE);
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, b, SIZE));
    size_t nonzero = 0;
    for (int i = 0; i < SIZE; i++)
        nonzero += b[i] != 0;
    CHECK_EQ(nonzero, 0);   /* a new buffer reads as zeros */
    CHECK_OK(kiln_buffer_upload(ctx, buf, 0, a, SIZE));
    CHECK_OK(kiln_buffer_upload(ctx, buf, 1001, "kiln", 4));
    memcpy(a + 1001, "kiln", 4);
    memset(b, 0, SIZE);
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, b, SIZE));
    CHECK(!memcmp(a, b, SIZE));
    char word[5] = {0};
    CHECK_OK(kiln_buffer_readback(ctx, buf, 1001, word, 4));
    CHECK(!strcmp(word, "kiln"));
    /* A shader's writes are visible to a staged readback too. */
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_mad}, &p));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p,
                                                              .bindings = &(kiln_binding){.binding = 0, .buffer = buf,
                                                                                          .offset = 4096, .size = 256},
                                                              .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){0, 77}, .param_count = KILN_PARAM_WORDS},
                                    &n));
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    uint32_t out[66];
    CHECK_OK(kiln_buffer_readback(ctx, buf, 4096 - 4, out, sizeof out));
    uint32_t before, after;
    memcpy(&before, a + 4092, 4);
    memcpy(&after, a + 4096 + 256, 4);
    CHECK_EQ(out[0], before);   /* outside the bound range: untouched */
    CHECK_EQ(out[1], 77);
    CHECK_EQ(out[64], 77);
    CHECK_EQ(out[65], after);
    /* Sizes that are no multiple of 4 read as zeros to the last byte. */
    for (uint64_t size = 1; size < 12; size += 2) {
        kiln_buffer odd;
        uint8_t bytes[12];
        memset(bytes, 0xee, sizeof bytes);
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = size}, &odd));
        CHECK_OK(kiln_buffer_readback(ctx, odd, 0, bytes, size));
        for (uint64_t i = 0; i < size; i++)
            CHECK_EQ(bytes[i], 0);
        CHECK_OK(kiln_buffer_destroy(ctx, odd));
    }
    free(a);
    free(b);
    test_context_done(ctx);
}

TEST(buffers_round_trip_unified) { round_trip(NULL); }
TEST(buffers_round_trip_staged) { round_trip("1"); }

/* A staged copy of more than one chunk (64 MiB): an upload in chunks left
 * to run, a readback in a batch of chunks waited for once (more than one
 * batch, past 256 MiB, with KILN_TEST_STAGED_MIB=300). */
TEST(buffers_round_trip_staged_in_chunks)
{
    const char *mib = getenv("KILN_TEST_STAGED_MIB");
    size_t size = ((size_t)(mib ? atoi(mib) : 130) << 20) + 12345;
    setenv("KILN_FORCE_STAGING", "1", 1);
    kiln_context ctx;
    kiln_result r = test_context(&ctx);
    unsetenv("KILN_FORCE_STAGING");
    REQUIRE_OK(r);
    uint8_t *a = malloc(size), *b = malloc(size);
    REQUIRE(a && b);
    for (size_t i = 0; i < size; i++)
        a[i] = (uint8_t)(i * 131 + (i >> 20));
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = size}, &buf));
    CHECK_OK(kiln_buffer_upload(ctx, buf, 0, a, size));
    memset(b, 0, size);
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, b, size));
    CHECK(!memcmp(a, b, size));
    CHECK_OK(kiln_buffer_readback(ctx, buf, size - 100, b, 100));   /* a tail in one chunk */
    CHECK(!memcmp(a + size - 100, b, 100));
    free(a);
    free(b);
    test_context_done(ctx);
}

/* A long loop over each lane's word of A, into B. */
static const char *k_steps = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                             "layout(std430, binding = 1) writeonly buffer B { uint b[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x, x = a[i];\n"
                             "    for (uint k = 0u; k < kiln_param(0); k++)\n"
                             "        x = x * 1664525u + 1013904223u;\n"
                             "    b[i] = x;\n"
                             "}\n";

static uint32_t cpu_steps(uint32_t x, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        x = x * 1664525u + 1013904223u;
    return x;
}

/* Uploads and readbacks right behind a dispatch still running land where
 * their order says, on mapped memory and through staging (where a
 * transfer waits on the device for the dispatches that touch its bytes
 * alone): an upload into what the dispatch reads does not change what it
 * read; a readback of what it writes sees its writes; an upload into what
 * it writes lands after them; an upload into a buffer it does not touch
 * is there too. */
static void transfers_in_order(const char *staging)
{
    if (staging)
        setenv("KILN_FORCE_STAGING", staging, 1);
    kiln_context ctx;
    kiln_result r = test_context(&ctx);
    unsetenv("KILN_FORCE_STAGING");
    REQUIRE_OK(r);
    enum { LANES = 8192, STEPS = 1 << 14 };
    static uint32_t old_a[LANES], new_a[LANES], pattern[LANES], got[LANES];
    for (uint32_t i = 0; i < LANES; i++) {
        old_a[i] = i * 2654435761u;
        new_a[i] = ~old_a[i];
        pattern[i] = i ^ 0x5a5a5a5au;
    }
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_steps, .name = "steps"}, &p));
    kiln_buffer a, b, other;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof old_a, .label = "a"}, &a));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof old_a, .label = "b"}, &b));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof old_a, .label = "other"}, &other));
    REQUIRE_OK(kiln_buffer_upload(ctx, a, 0, old_a, sizeof old_a));
    kiln_scheme s;
    kiln_node n;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding binds[2] = {{.binding = 0, .buffer = a}, {.binding = 1, .buffer = b}};
    uint32_t steps = STEPS;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .groups = {LANES / 64, 1, 1},
                                                             .bindings = binds, .binding_count = 2,
                                                             .params = &steps, .param_count = 1}, &n));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_buffer_upload(ctx, a, 0, new_a, sizeof new_a));            /* after the dispatch read a */
    CHECK_OK(kiln_buffer_upload(ctx, other, 0, pattern, sizeof pattern));   /* beside it */
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, got, sizeof got));              /* after it wrote b */
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < LANES; i += 7)
        wrong += got[i] != cpu_steps(old_a[i], STEPS);
    CHECK_EQ(wrong, 0);
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_buffer_upload(ctx, b, 0, pattern, sizeof pattern));       /* after the dispatch wrote b */
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, got, sizeof got));
    CHECK(!memcmp(got, pattern, sizeof got));
    CHECK_OK(kiln_buffer_readback(ctx, other, 0, got, sizeof got));
    CHECK(!memcmp(got, pattern, sizeof got));
    CHECK_OK(kiln_buffer_readback(ctx, a, 0, got, sizeof got));
    CHECK(!memcmp(got, new_a, sizeof got));
    CHECK_OK(kiln_scheme_destroy(ctx, s));
    test_context_done(ctx);
}

TEST(transfers_behind_a_running_dispatch_land_in_order_unified) { transfers_in_order(NULL); }
TEST(transfers_behind_a_running_dispatch_land_in_order_staged) { transfers_in_order("1"); }

TEST(uniform_buffers_and_two_dimensional_grids)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    const char *src = "#version 450\n"
                      "layout(local_size_x = 8, local_size_y = 8) in;\n"
                      "layout(std140, binding = 0) uniform Scale { uvec4 k; };\n"
                      "layout(std430, binding = 1) writeonly buffer Out { uint o[]; };\n"
                      "void main() {\n"
                      "    uvec2 p = gl_GlobalInvocationID.xy;\n"
                      "    uint w = gl_NumWorkGroups.x * 8u;\n"
                      "    o[p.y * w + p.x] = p.x * k.x + p.y * k.y + kiln_param(5);\n"
                      "}\n";
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "grid.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));   /* bindings are then checked at add */
    kiln_buffer u, o, wrong;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16, .usage = KILN_BUFFER_UNIFORM}, &u));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 32 * 24 * 4}, &o));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16}, &wrong));
    uint32_t k[4] = {3, 1000, 0, 0};
    REQUIRE_OK(kiln_buffer_upload(ctx, u, 0, k, sizeof k));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding b[2] = {{.binding = 0, .buffer = wrong}, {.binding = 1, .buffer = o}};
    kiln_node_desc d = {.program = p, .bindings = b, .binding_count = 2, .groups = {4, 3}, .params = (const uint32_t[KILN_PARAM_WORDS]){[5] = 9}, .param_count = KILN_PARAM_WORDS};
    kiln_node n;
    /* A storage-only buffer where the program declares a uniform block. */
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &d, &n)), KILN_ERR_LAYOUT);
    CHECK_MSG("uniform");
    b[0].buffer = u;
    b[1].buffer = u;   /* and a uniform-only buffer where it wants storage */
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &d, &n)), KILN_ERR_LAYOUT);
    CHECK_MSG("KILN_BUFFER_STORAGE");
    b[1].buffer = o;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &d, &n));
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    static uint32_t got[32 * 24];
    REQUIRE_OK(kiln_buffer_readback(ctx, o, 0, got, sizeof got));
    int bad = 0;
    for (uint32_t y = 0; y < 24; y++)
        for (uint32_t x = 0; x < 32; x++)
            bad += got[y * 32 + x] != x * 3 + y * 1000 + 9;
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

TEST(grids_outside_the_device_limits_are_refused)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_mad}, &p));
    kiln_buffer x;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &x));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding b = {.binding = 0, .buffer = x};
    kiln_node n;
    kiln_node_desc d = {.program = p, .bindings = &b, .binding_count = 1};
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &d, &n)), KILN_ERR_INVALID);
    CHECK_MSG("0 workgroups in x");
    d.groups[0] = caps.max_workgroup_count[0] + 1u;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &d, &n)), KILN_ERR_LIMIT);
    CHECK_MSG("workgroups in x");
    d.groups[0] = 1;
    d.groups[2] = caps.max_workgroup_count[2] + 1u;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &d, &n)), KILN_ERR_LIMIT);
    CHECK_MSG("in z");
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.nodes, 0);
    /* An empty scheme submits fine. */
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    CHECK_OK(kiln_context_wait_idle(ctx));
    test_context_done(ctx);
}

/* A program whose `shared` memory is over the device's limit fails before
 * any Vulkan call sees it (KILN_ERR_LIMIT naming the size and the limit);
 * one just under it runs. Sizes come from the device's caps. */
TEST(shared_memory_over_the_device_limit_is_refused)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    uint32_t limit = caps.max_shared_memory_size;
    REQUIRE(limit >= 1024 && limit % 16 == 0);
    static char over[1024], over_vec[1024], under[1024];
    /* limit + 4 bytes: as one array, and as vectors plus a float. */
    snprintf(over, sizeof over,
             "#version 450\nlayout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "shared uint s[%u];\n"
             "void main() { uint i = gl_LocalInvocationID.x; s[i * 64u] = i; barrier(); x[i] = s[(i * 64u + 64u) %% %uu]; }\n",
             limit / 4 + 1, limit / 4 + 1);
    snprintf(over_vec, sizeof over_vec,
             "#version 450\nlayout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "shared vec4 v[%u]; shared float f;\n"
             "void main() { uint i = gl_LocalInvocationID.x; v[i].x = float(i); if (i == 0u) f = 1.0; barrier();\n"
             "    x[i] = uint(v[(i + 1u) %% 64u].x + f); }\n",
             limit / 16);
    /* 16 bytes under the limit: runs, and shared memory works. */
    snprintf(under, sizeof under,
             "#version 450\nlayout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "shared uint s[%u];\n"
             "void main() { uint i = gl_LocalInvocationID.x; s[%uu - i] = i * 3u; barrier();\n"
             "    x[i] = s[%uu - ((i + 1u) %% 64u)]; }\n",
             limit / 4 - 4, limit / 4 - 5, limit / 4 - 5);
    const char *names[2] = {"big.comp", "bigvec.comp"};
    const char *srcs[2] = {over, over_vec};
    char want[128];
    kiln_buffer x;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &x));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding b = {.binding = 0, .buffer = x};
    for (int k = 0; k < 2; k++) {
        kiln_program p;
        REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = srcs[k], .name = names[k]}, &p));
        CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_LIMIT);
        snprintf(want, sizeof want, "uses %u bytes of shared memory; the device allows %u (maxComputeSharedMemorySize)",
                 limit + 4, limit);
        CHECK_MSG(want);
        CHECK_MSG(names[k]);
        kiln_program_state st;
        CHECK_OK(kiln_program_status(ctx, p, &st));
        CHECK_EQ(st, KILN_PROGRAM_FAILED);
        /* A node of it is refused when its scheme submits, by the same limit. */
        kiln_scheme s2;
        REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s2));
        kiln_node n;
        kiln_result r = kiln_scheme_add_node(ctx, s2, &(kiln_node_desc){.program = p, .bindings = &b,
                                                                        .binding_count = 1, .groups = {1}}, &n);
        if (r == KILN_OK)
            CHECK_RESULT(test_settled(ctx, kiln_scheme_submit(ctx, s2, NULL)), KILN_ERR_LIMIT);
        else
            CHECK_EQ(r, KILN_ERR_LIMIT);
        CHECK_MSG("maxComputeSharedMemorySize");
    }
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = under, .name = "fits.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = &b, .binding_count = 1,
                                                              .groups = {1}}, &n));
    REQUIRE_OK(kiln_scheme_submit(ctx, s, NULL));
    uint32_t got[64];
    REQUIRE_OK(kiln_buffer_readback(ctx, x, 0, got, sizeof got));
    int bad = 0;
    for (uint32_t i = 0; i < 64; i++)
        bad += got[i] != ((i + 1) % 64) * 3;
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* Buffer sizes past the device's largest buffer, up to 2^64 - 1, are refused
 * before Vulkan sees them (the size once wrapped to 0 when rounded up). */
TEST(buffer_sizes_past_the_device_limit_are_refused)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    REQUIRE(caps.max_buffer_size >= 4096 && caps.max_buffer_size % 4 == 0);
    const uint64_t sizes[] = {UINT64_MAX, UINT64_MAX - 1, UINT64_MAX - 2, UINT64_MAX - 3, caps.max_buffer_size + 1,
                              1ull << 63};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        kiln_buffer b;
        CHECK_RESULT(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizes[i], .label = "huge"}, &b), KILN_ERR_LIMIT);
        CHECK_MSG("max_buffer_size");
        CHECK_MSG("'huge'");
    }
    /* Ranges that wrap around 2^64 are refused, not read. */
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64}, &b));
    uint32_t w[16] = {0};
    CHECK_RESULT(kiln_buffer_upload(ctx, b, UINT64_MAX - 3, w, 8), KILN_ERR_INVALID);
    CHECK_RESULT(kiln_buffer_readback(ctx, b, 8, w, UINT64_MAX - 3), KILN_ERR_INVALID);
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, w, 64));
    test_context_done(ctx);
}

TEST(caps_and_device_choice)
{
    kiln_device_info devs[8];
    uint32_t count = 0;
    REQUIRE_OK(kiln_devices(devs, 8, &count));
    REQUIRE(count >= 1);
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK(caps.device_name[0] != 0);
    CHECK(caps.subgroup_size >= 1);
    CHECK(caps.max_workgroup_invocations >= 128);
    CHECK(caps.max_push_constants_size >= 32);
    CHECK(caps.api_version >= ((1u << 22) | (2u << 12)));
    test_context_done(ctx);
    /* By name substring and by index. */
    char sel[32];
    snprintf(sel, sizeof sel, "%.8s", caps.device_name);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.device = sel}, &ctx));
    test_context_done(ctx);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.device = "0"}, &ctx));
    test_context_done(ctx);
    /* A workgroup the device cannot run fails the program, saying why. */
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){0}, &ctx));
    char src[256];
    snprintf(src, sizeof src, "#version 450\nlayout(local_size_x = %u, local_size_y = 2) in;\nvoid main() {}\n",
             caps.max_workgroup_size[0]);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "wide.comp"}, &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_LIMIT);
    CHECK_MSG("invocations");
    CHECK_MSG("(maxComputeWorkGroupInvocations)");
    test_context_done(ctx);
    /* Nothing fits: the message lists what was seen. */
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.device = "no-such-gpu-9000"}, &ctx), KILN_ERR_NO_DEVICE);
    CHECK_MSG("no-such-gpu-9000");
    CHECK_MSG(devs[0].name);
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.device = "42"}, &ctx), KILN_ERR_NO_DEVICE);
    CHECK_MSG("devices seen");
    /* The settings rule (kiln.h): the desc wins, its 0 or NULL leaves the
     * choice to the environment. */
    setenv("KILN_DEVICE", "no-such-gpu-9001", 1);
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){0}, &ctx), KILN_ERR_NO_DEVICE);
    CHECK_MSG("no-such-gpu-9001");
    CHECK_OK(kiln_context_create(&(kiln_context_desc){.device = "0"}, &ctx));
    kiln_context_destroy(ctx);
    unsetenv("KILN_DEVICE");
}

/* A process makes and destroys contexts many times over (a tool run per
 * file, a server's clients): each works like the first. Some drivers
 * cannot be unloaded and loaded again many times in one process (static
 * TLS); kiln keeps the driver mapped, so the 64th context is made like the
 * 1st, and each one computes. */
TEST(many_contexts_made_and_destroyed_in_one_process)
{
    for (int i = 0; i < 64; i++) {
        kiln_context ctx;
        kiln_result r = kiln_context_create(&(kiln_context_desc){.compile_threads = 1}, &ctx);
        if (r != KILN_OK) {
            fprintf(stderr, "context %d: %s: %s\n", i, kiln_result_name(r), kiln_last_error());
            CHECK_RESULT(r, KILN_OK);
            return;
        }
        if (i % 16 == 0) {   /* and it runs work, not just opens */
            kiln_buffer buf;
            uint32_t v = (uint32_t)i, back = 0;
            REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4}, &buf));
            REQUIRE_OK(kiln_buffer_upload(ctx, buf, 0, &v, 4));
            REQUIRE_OK(kiln_buffer_readback(ctx, buf, 0, &back, 4));
            CHECK_EQ(back, v);
        }
        CHECK_RESULT(kiln_context_destroy(ctx), KILN_OK);
    }
}

int main(void)
{
    RUN(chain_of_twelve_nodes_with_hazards_matches_the_cpu);
    RUN(baked_program_matches_the_universal_one);
    RUN(set_program_swaps_a_variant_under_a_recorded_node);
    RUN(buffers_round_trip_unified);
    RUN(buffers_round_trip_staged);
    RUN(buffers_round_trip_staged_in_chunks);
    RUN(transfers_behind_a_running_dispatch_land_in_order_unified);
    RUN(transfers_behind_a_running_dispatch_land_in_order_staged);
    RUN(uniform_buffers_and_two_dimensional_grids);
    RUN(grids_outside_the_device_limits_are_refused);
    RUN(caps_and_device_choice);
    RUN(shared_memory_over_the_device_limit_is_refused);
    RUN(buffer_sizes_past_the_device_limit_are_refused);
    RUN(many_contexts_made_and_destroyed_in_one_process);
    return TEST_SUMMARY();
}
