/* SPDX-License-Identifier: MIT */
/*
 * bench_overlap: whether an upload's device copy runs beside a dispatch
 * that does not touch its bytes, measured side by side in one run.
 *
 * A dispatch of a fixed-length loop (its count calibrated so the dispatch
 * alone takes about --ms, 40 by default) writes buffer A; an upload of
 * --mib MiB (256 by default) goes into buffer B, through staging (the
 * context is made with force_staging, so the bytes travel as a discrete
 * GPU's do: a host copy into staging, then a device copy). Three times,
 * each the median of --rounds alternating rounds:
 *
 *   dispatch alone:  submit, wait
 *   upload alone:    upload, wait_idle
 *   both:            submit, upload, wait_idle
 *
 * If nothing overlaps, both = dispatch + upload (ratio 1.00); if the
 * upload's host copy and device copy both run under the dispatch, both =
 * max(dispatch, upload), the floor printed beside it. Before kiln's
 * transfers waited for their own bytes only, each began with a barrier
 * behind every earlier dispatch, so the device copies waited for the
 * dispatch to end. The results are checked: A holds the loop's values, B
 * the uploaded bytes.
 *
 *   bench_overlap [--mib M] [--ms T] [--rounds R] [--quick]
 */
#define BENCH_NAME "bench_overlap"
#include <stdbool.h>
#include <stdlib.h>

#include "bench.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static const char source[] = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) writeonly buffer A { uint a[]; };\n"
                             "void main() {\n"
                             "    uint x = gl_GlobalInvocationID.x;\n"
                             "    for (uint i = 0u; i < kiln_param(0); i++)\n"
                             "        x = x * 1664525u + 1013904223u;\n"
                             "    a[gl_GlobalInvocationID.x] = x;\n"
                             "}\n";

#define GROUPS 1024u
#define LANES (GROUPS * 64u)

struct rig {
    kiln_context ctx;
    kiln_program prog;
    kiln_buffer a, b;
    kiln_scheme scheme;
    kiln_node node;
    uint8_t *host;
    uint64_t bytes;
};

static uint64_t dispatch_alone(struct rig *g)
{
    uint64_t t0 = now_ns();
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(g->ctx, g->scheme, &t));
    KCHECK(kiln_ticket_wait(g->ctx, t, UINT64_MAX));
    return now_ns() - t0;
}

static uint64_t upload_alone(struct rig *g)
{
    uint64_t t0 = now_ns();
    KCHECK(kiln_buffer_upload(g->ctx, g->b, 0, g->host, g->bytes));
    KCHECK(kiln_context_wait_idle(g->ctx));
    return now_ns() - t0;
}

static uint64_t both(struct rig *g)
{
    uint64_t t0 = now_ns();
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(g->ctx, g->scheme, &t));
    KCHECK(kiln_buffer_upload(g->ctx, g->b, 0, g->host, g->bytes));
    KCHECK(kiln_context_wait_idle(g->ctx));
    return now_ns() - t0;
}

static uint32_t lcg(uint32_t x, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        x = x * 1664525u + 1013904223u;
    return x;
}

int main(int argc, char **argv)
{
    uint64_t mib = 256, ms = 40, rounds = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mib") && i + 1 < argc)
            mib = bench_parse_num("--mib", argv[++i], 1, 4096);
        else if (!strcmp(argv[i], "--ms") && i + 1 < argc)
            ms = bench_parse_num("--ms", argv[++i], 1, 10000);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = bench_parse_num("--rounds", argv[++i], 1, 1000);
        else if (!strcmp(argv[i], "--quick"))
            mib = 16, ms = 10, rounds = 2;
        else
            die("usage: bench_overlap [--mib M] [--ms T] [--rounds R] [--quick]");
    }
    struct rig g = {.bytes = mib << 20};
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .specialization = -1, .force_staging = 1},
                               &g.ctx));
    KCHECK(kiln_program_create(g.ctx, &(kiln_program_desc){.source = source, .name = "spin"}, &g.prog));
    KCHECK(kiln_program_wait(g.ctx, g.prog));
    KCHECK(kiln_buffer_create(g.ctx, &(kiln_buffer_desc){.size = LANES * 4, .label = "A"}, &g.a));
    KCHECK(kiln_buffer_create(g.ctx, &(kiln_buffer_desc){.size = g.bytes, .label = "B"}, &g.b));
    KCHECK(kiln_scheme_create(g.ctx, NULL, &g.scheme));
    kiln_binding bind = {.binding = 0, .buffer = g.a};
    KCHECK(kiln_scheme_add_node(g.ctx, g.scheme,
                                &(kiln_node_desc){.program = g.prog, .groups = {GROUPS, 1, 1}, .bindings = &bind,
                                                  .binding_count = 1},
                                &g.node));
    g.host = malloc(g.bytes);
    if (!g.host)
        die("out of memory for %llu MiB", (unsigned long long)mib);
    for (uint64_t i = 0; i < g.bytes; i++)
        g.host[i] = (uint8_t)(i * 131 + 7);

    /* The loop's count: doubled until the dispatch alone takes ms (a
     * count of at most 2^30: every run ends). */
    uint32_t count = 1024;
    uint64_t took = 0;
    for (;;) {
        KCHECK(kiln_node_set_param(g.ctx, g.node, 0, count));
        took = dispatch_alone(&g);
        if (took >= ms * 1000000u || count >= (1u << 30))
            break;
        uint64_t want = ms * 1000000u, scale = took ? want / took : 64;
        count = (uint32_t)MIN((uint64_t)count * MAX(MIN(scale, 64), 2), 1u << 30);
    }
    kiln_caps caps;
    KCHECK(kiln_context_caps(g.ctx, &caps));
    printf("bench_overlap on %s: a dispatch of %u lanes x %u steps, an upload of %llu MiB through staging, %llu "
           "rounds\n",
           caps.device_name, LANES, count, (unsigned long long)mib, (unsigned long long)rounds);

    uint64_t *d = calloc(rounds, 8), *u = calloc(rounds, 8), *b = calloc(rounds, 8);
    if (!d || !u || !b)
        die("out of memory");
    (void)upload_alone(&g);   /* staging made once, as a steady state would have it */
    for (uint64_t r = 0; r < rounds; r++) {
        d[r] = dispatch_alone(&g);
        u[r] = upload_alone(&g);
        b[r] = both(&g);
    }
    double md = bench_median(d, rounds) / 1e6, mu = bench_median(u, rounds) / 1e6, mb = bench_median(b, rounds) / 1e6;
    double serial = md + mu, floor = MAX(md, mu);
    printf("dispatch alone %8.2f ms   upload alone %8.2f ms   both %8.2f ms\n", md, mu, mb);
    printf("both / (dispatch + upload) %.2f (1.00: nothing overlaps; the floor, max of the two: %.2f); "
           "overlapped %.2f ms of the %.2f ms that could\n",
           mb / serial, floor / serial, serial - mb, serial - floor);

    uint32_t *got = malloc(LANES * 4);
    uint8_t *back = malloc(g.bytes);
    if (!got || !back)
        die("out of memory");
    KCHECK(kiln_buffer_readback(g.ctx, g.a, 0, got, LANES * 4));
    for (uint32_t i = 0; i < LANES; i += 4099)
        if (got[i] != lcg(i, count))
            die("lane %u: the dispatch wrote %u, the loop gives %u", i, got[i], lcg(i, count));
    KCHECK(kiln_buffer_readback(g.ctx, g.b, 0, back, g.bytes));
    if (memcmp(back, g.host, g.bytes))
        die("the uploaded bytes read back differ");
    free(got);
    free(back);
    free(d);
    free(u);
    free(b);
    free(g.host);
    KCHECK(kiln_scheme_destroy(g.ctx, g.scheme));
    KCHECK(kiln_context_destroy(g.ctx));
    return 0;
}
