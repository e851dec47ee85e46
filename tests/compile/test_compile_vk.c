/* SPDX-License-Identifier: MIT */
/*
 * test_compile_vk.c: the compile service through the public API on a real
 * Vulkan device (lavapipe in CI): distinct programs compile once however
 * many times they are asked for, every program computes its own function,
 * and a submit waits for (or, under the skip policy, leaves out) a node
 * whose program is still compiling. Results are checked against the CPU.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "test.h"

#define N 256u   /* elements per buffer: 4 workgroups of 64 */
/* Lines of a big source: its front end takes 0.15-0.4 s on lavapipe's
 * machine, ages next to the microseconds between create and submit. */
#define BIG_LINES 10000u

/* In place: x = x * k + c, with k and c compiled into the source. */
static void mad_src(char *buf, size_t cap, uint32_t k, uint32_t c)
{
    snprintf(buf, cap,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
             "void main() {\n"
             "    uint i = gl_GlobalInvocationID.x;\n"
             "    x[i] = x[i] * %uu + %uu;\n"
             "}\n",
             k, c);
}

/* A source that takes the front end a while (thousands of lines of
 * functions main never calls) but makes a small pipeline: x = x * k + c. */
static char *big_src(uint32_t k, uint32_t c, unsigned lines)
{
    size_t cap = 512 + (size_t)lines * 96;
    char *s = malloc(cap);
    if (!s)
        return NULL;
    size_t o = (size_t)snprintf(s, cap,
                                "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) buffer X { uint x[]; };\n");
    for (unsigned j = 0; j < lines; j++)
        o += (size_t)snprintf(s + o, cap - o, "uint unused%u(uint v) { return (v ^ %uu) * %uu + (v >> %uu); }\n", j,
                              j * 2654435761u, 2 * j + 1, j % 31 + 1);
    snprintf(s + o, cap - o,
             "void main() {\n"
             "    uint i = gl_GlobalInvocationID.x;\n"
             "    x[i] = x[i] * %uu + %uu;\n"
             "}\n",
             k, c);
    return s;
}

static void fill(uint32_t *x, uint32_t seed)
{
    for (uint32_t i = 0; i < N; i++)
        x[i] = i * 2654435761u + seed;
}

/* Runs prog once over `buf` (uploaded from `in`) in a one-node scheme and
 * reads the buffer back into `out`. */
static kiln_result run_once(kiln_context ctx, kiln_program prog, kiln_buffer buf, const uint32_t *in, uint32_t *out)
{
    kiln_scheme sc;
    kiln_node node;
    kiln_result r = kiln_buffer_upload(ctx, buf, 0, in, N * 4);
    if (r == KILN_OK)
        r = kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "one"}, &sc);
    if (r < 0)
        return r;
    kiln_binding b = {.binding = 0, .buffer = buf};
    r = kiln_scheme_add_node(
        ctx, sc, &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1, .groups = {N / 64}}, &node);
    kiln_ticket t;
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, sc, &t);
    if (r == KILN_OK)
        r = kiln_buffer_readback(ctx, buf, 0, out, N * 4);
    kiln_result d = kiln_scheme_destroy(ctx, sc);
    return r < 0 ? r : d;
}

static int mismatches(const uint32_t *in, const uint32_t *out, uint32_t k, uint32_t c)
{
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != in[i] * k + c;
    return bad;
}

TEST(fifty_programs_with_duplicates_compile_once_and_compute_right)
{
    enum { DISTINCT = 35, DUPS = 15, ALL = DISTINCT + DUPS };
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_context_stats st0, st;
    CHECK_OK(kiln_context_stats_get(ctx, &st0));
    kiln_program prog[ALL];
    uint32_t k[ALL], c[ALL];
    /* Duplicates follow their original at varying distances: some join a
     * compile in flight, some are served a finished one. */
    int order[ALL], n = 0, dup = 0;
    for (int d = 0; d < DISTINCT; d++) {
        order[n++] = d;
        if (d % 2 == 1 && dup < DUPS) {
            int back = (dup % 3) * 3;   /* 0: right after it; 3, 6: a few programs later */
            order[n++] = d >= back ? d - back : d;
            dup++;
        }
    }
    REQUIRE(n == ALL);
    char src[1024], name[32];
    for (int j = 0; j < ALL; j++) {
        int d = order[j];
        k[j] = 3u + 2u * (uint32_t)d;
        c[j] = 1000u + 17u * (uint32_t)d;
        mad_src(src, sizeof src, k[j], c[j]);
        snprintf(name, sizeof name, "mad%02d-%02d.comp", d, j);
        REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, &prog[j]));
    }
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "x"}, &buf));
    static uint32_t in[N], out[N];
    for (int j = 0; j < ALL; j++) {
        fill(in, (uint32_t)j);
        memset(out, 0, sizeof out);
        CHECK_OK(run_once(ctx, prog[j], buf, in, out));
        int bad = mismatches(in, out, k[j], c[j]);
        if (bad)
            fprintf(stderr, "program %d (x * %u + %u): %d of %u wrong\n", j, k[j], c[j], bad, N);
        CHECK_EQ(bad, 0);
    }
    CHECK_OK(kiln_context_stats_get(ctx, &st));
    CHECK_EQ(st.compile_requests - st0.compile_requests, ALL);
    CHECK_EQ(st.compiles_started - st0.compiles_started, 2 * DISTINCT);   /* a front and a back end each */
    CHECK_EQ((st.compiles_adopted - st0.compiles_adopted) + (st.compiles_deduplicated - st0.compiles_deduplicated),
             DUPS);
    CHECK_EQ(st.compiles_failed, 0);
    CHECK_EQ(st.compiles_pending, 0);
    CHECK_EQ(st.programs_compiled, ALL);
    for (int j = 0; j < ALL; j++)
        CHECK_OK(kiln_program_destroy(ctx, prog[j]));
    CHECK_OK(kiln_buffer_destroy(ctx, buf));
    test_context_done(ctx);
}

TEST(a_submit_waits_for_a_program_still_compiling)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "x"}, &buf));
    char *src = big_src(5, 77, BIG_LINES);
    REQUIRE(src);
    kiln_program prog;
    kiln_program_state state = KILN_PROGRAM_READY;
    static uint32_t in[N], out[N];
    fill(in, 9);
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "big.comp"}, &prog);
    free(src);
    REQUIRE_OK(r);
    CHECK_OK(kiln_program_status(ctx, prog, &state));
    CHECK_EQ(state, KILN_PROGRAM_PENDING);   /* the submit below really has to wait */
    CHECK_OK(run_once(ctx, prog, buf, in, out));
    CHECK_EQ(mismatches(in, out, 5, 77), 0);
    CHECK_OK(kiln_program_status(ctx, prog, &state));
    CHECK_EQ(state, KILN_PROGRAM_READY);
    kiln_context_stats st;
    CHECK_OK(kiln_context_stats_get(ctx, &st));
    CHECK_EQ(st.skipped_nodes, 0);
    CHECK_OK(kiln_program_destroy(ctx, prog));
    CHECK_OK(kiln_buffer_destroy(ctx, buf));
    test_context_done(ctx);
}

TEST(the_skip_policy_leaves_out_a_compiling_program_then_runs_it)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.pending = KILN_PENDING_SKIP, .specialization = -1}, &ctx));
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "x"}, &buf));
    static uint32_t in[N], out[N];
    fill(in, 3);
    REQUIRE_OK(kiln_buffer_upload(ctx, buf, 0, in, N * 4));
    kiln_scheme sc;
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "skipper"}, &sc));

    char *src = big_src(11, 5, BIG_LINES);
    REQUIRE(src);
    kiln_program prog;
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "big-skip.comp"}, &prog);
    free(src);
    REQUIRE_OK(r);
    kiln_binding b = {.binding = 0, .buffer = buf};
    kiln_node node;
    REQUIRE_OK(kiln_scheme_add_node(
        ctx, sc, &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1, .groups = {N / 64}}, &node));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, sc, &t));   /* at once: the program is still compiling */
    kiln_program_state state = KILN_PROGRAM_READY;
    CHECK_OK(kiln_program_status(ctx, prog, &state));
    CHECK_EQ(state, KILN_PROGRAM_PENDING);
    kiln_scheme_stats ss;
    CHECK_OK(kiln_scheme_stats_get(ctx, sc, &ss));
    CHECK_EQ(ss.skipped_nodes, 1);
    kiln_context_stats cs;
    CHECK_OK(kiln_context_stats_get(ctx, &cs));
    CHECK_EQ(cs.skipped_nodes, 1);
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, out, N * 4));
    CHECK(!memcmp(in, out, sizeof in));   /* nothing ran */

    CHECK_OK(kiln_program_wait(ctx, prog));
    CHECK_OK(kiln_scheme_submit(ctx, sc, &t));   /* records the node now and runs it */
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, out, N * 4));
    CHECK_EQ(mismatches(in, out, 11, 5), 0);
    CHECK_OK(kiln_scheme_stats_get(ctx, sc, &ss));
    CHECK_EQ(ss.skipped_nodes, 1);
    CHECK_EQ(ss.submits, 2);
    CHECK_EQ(ss.records_full, 2);   /* the node's arrival is a structural change */
    CHECK_OK(kiln_scheme_destroy(ctx, sc));
    CHECK_OK(kiln_program_destroy(ctx, prog));
    CHECK_OK(kiln_buffer_destroy(ctx, buf));
    test_context_done(ctx);
}

int main(void)
{
    RUN(fifty_programs_with_duplicates_compile_once_and_compute_right);
    RUN(a_submit_waits_for_a_program_still_compiling);
    RUN(the_skip_policy_leaves_out_a_compiling_program_then_runs_it);
    return TEST_SUMMARY();
}
