/*
 * bench_spec.c: what kiln's specialization buys, and what it costs once
 * settled.
 *
 * Part 1, the gain. Two kernels over N elements (default 4M on a GPU, 1M on
 * a CPU device such as lavapipe; --elements), each one node of 64-wide
 * workgroups in a scheme of its own, run three ways:
 *   universal  specialization off (.specialization = -1): the program reads
 *              its param word from push constants;
 *   auto       specialization on (.specialization = 1): the scheme is
 *              submitted until kiln_compiles_pending() is 0 and
 *              kiln_node_is_specialized() is 1 (the run fails if that has not
 *              happened after PROMOTE_TIMEOUT_S seconds), so the node runs
 *              the variant kiln compiled with the word baked in;
 *   hand       specialization off, the program created with the define
 *              KILN_SPEC_MAIN_UW0 set to the same literal kiln bakes (the
 *              decimal word and 'u'): what a person would write by hand.
 * The kernels:
 *   loop  per element a loop of kiln_param(0) = 64 iterations of integer
 *         ALU work; baked, the trip count is a constant;
 *   flag  a cheap hash per element, then an expensive path (64 rounds of
 *         lookups in a second buffer) under `if (kiln_param(0) != 0u)`, run
 *         with the flag 0: baked, the path is gone.
 * Each way lives in a context of its own, made up front. Timing: after a
 * warm-up (whose times also size the blocks), rounds (default 9, --rounds)
 * of one block per way, the order rotating each round (A,B,C then B,C,A,
 * ...) so that a burst of machine noise hits all three alike. A block is M
 * submits, each followed by kiln_ticket_wait, with M chosen per way so that
 * a block takes about BLOCK_S seconds (at least 3 submits); its figure is
 * the block's wall time over M, the time of one dispatch plus the submit
 * and wait around it (the dispatch dominates). Each way's figure is the
 * median over the rounds. Printed: auto/hand (target <= 1.03x: the variant
 * kiln made runs as fast as a hand-baked one) and universal/auto (the gain).
 * Checks: every measured submit is a replay of the recording; the auto
 * node still runs its variant at the end with no demotion; the output
 * buffer of each way is read back once and must equal the others' and a
 * reference computed on the host.
 *
 * Part 2, the cost. One scheme of 10,000 one-workgroup nodes (--nodes),
 * each on its own range of one buffer (so no barriers), all running one
 * program that adds its param word 0 to its range's first word, every node
 * with the same word that never changes. Two contexts: predictor on
 * (.specialization = 1) and off (-1). The "on" scheme is first submitted
 * until compiles are 0 and every node runs the variant (one compile serves
 * them all), then until a submit is a plain replay; the predictor has then
 * nothing left to look at. Timed: the kiln_scheme_submit call alone; the
 * ticket is waited for after the clock stops, on every submit. Rounds of
 * one block of K submits per context, the order alternating, K chosen so a
 * block takes about BLOCK_S seconds; each figure is the median over every
 * timed submit. Printed: on/off (target <= 1.02x). Checks: all measured
 * submits are replays, nothing demoted, and each node's word is the number
 * of submits times its param.
 *
 * Cold compiles: the drivers' disk caches are turned off
 * (MESA_SHADER_CACHE_DISABLE=true, __GL_SHADER_DISK_CACHE=0) and kiln's
 * archive too unless KILN_ARCHIVE is set, before any context is made, so
 * the promotion times printed are those of a first run. Validation is off.
 *
 * Exit status: 0 whether or not the targets are met (a miss prints
 * MISSED); 1 on errors: a failed call, a compile failure, an auto node that
 * never promotes, a result that differs.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln.h"

#define BENCH_NAME "bench_spec"
#include "bench.h"

#define TARGET_AUTO_HAND 1.03     /* part 1: auto / hand at most */
#define TARGET_ON_OFF 1.02        /* part 2: on / off at most */
#define LOOP_TRIPS 64u            /* the loop kernel's kiln_param(0) */
#define TABLE_WORDS 1024u         /* the flag kernel's second buffer */
#define GROUP 64u                 /* workgroup width of both kernels */
#define NODE_WORD 3u              /* part 2: every node's param word 0 */
#define PROMOTE_TIMEOUT_S 120.0   /* auto ways and the "on" scheme must settle within it */
#define MAX_BLOCK 2000u           /* submits per block at most */

/* ---- the kernels ------------------------------------------------------------------ */

/* Both compute out[i] from in[i]; kiln's prelude supplies kiln_param(). The
 * element count is the output buffer's length, not a param, so word 0 is
 * the only word either kernel reads. */
static const char loop_source[] = "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                                  "layout(std430, binding = 1) writeonly buffer Out { uint o[]; };\n"
                                  "void main()\n"
                                  "{\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    if (i >= uint(o.length()))\n"
                                  "        return;\n"
                                  "    uint x = a[i];\n"
                                  "    for (uint k = 0u; k < kiln_param(0); k++) {\n"
                                  "        x = x * 1664525u + 1013904223u;\n"
                                  "        x ^= x >> 13;\n"
                                  "        x += k;\n"
                                  "    }\n"
                                  "    o[i] = x;\n"
                                  "}\n";

static const char flag_source[] = "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                                  "layout(std430, binding = 1) readonly buffer Table { uint t[]; };\n"
                                  "layout(std430, binding = 2) writeonly buffer Out { uint o[]; };\n"
                                  "void main()\n"
                                  "{\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    if (i >= uint(o.length()))\n"
                                  "        return;\n"
                                  "    uint x = a[i] * 2654435761u + 40503u;\n"
                                  "    x ^= x >> 15;\n"
                                  "    if (kiln_param(0) != 0u) {\n"
                                  "        for (uint k = 0u; k < 64u; k++) {\n"
                                  "            x += t[(x ^ k) & 1023u];\n"
                                  "            x = x * 747796405u + 2891336453u;\n"
                                  "            x ^= x >> 11;\n"
                                  "        }\n"
                                  "    }\n"
                                  "    o[i] = x;\n"
                                  "}\n";

/* Part 2's program: one invocation adds its word to the first word of the
 * node's range. */
static const char tiny_source[] = "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(std430, binding = 0) buffer B { uint d[]; };\n"
                                  "void main() { d[0] += kiln_param(0); }\n";

enum kernel { K_LOOP, K_FLAG, K_COUNT };
static const char *const kernel_name[K_COUNT] = {"loop", "flag"};
static const char *const kernel_what[K_COUNT] = {"loop of 64 (param 0 = 64)", "flag off (param 0 = 0)"};
static const uint32_t kernel_word[K_COUNT] = {LOOP_TRIPS, 0u};

/* The host's reference of each kernel, with its word. */
static uint32_t reference(enum kernel k, uint32_t a, uint32_t word, const uint32_t *table)
{
    if (k == K_LOOP) {
        uint32_t x = a;
        for (uint32_t i = 0; i < word; i++) {
            x = x * 1664525u + 1013904223u;
            x ^= x >> 13;
            x += i;
        }
        return x;
    }
    uint32_t x = a * 2654435761u + 40503u;
    x ^= x >> 15;
    if (word != 0u)
        for (uint32_t i = 0; i < 64u; i++) {
            x += table[(x ^ i) & (TABLE_WORDS - 1)];
            x = x * 747796405u + 2891336453u;
            x ^= x >> 11;
        }
    return x;
}

static uint32_t input_word(uint32_t i) { return (i * 2654435769u) ^ (i >> 7) ^ 0x5bd1e995u; }

/* ---- small helpers ---------------------------------------------------------------- */

static bool verbose;

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median of n samples; sorts them. */
static double median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

static kiln_context make_context(int specialization, kiln_caps *caps)
{
    kiln_context ctx;
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .specialization = specialization}, &ctx));
    KCHECK(kiln_context_caps(ctx, caps));
    if (caps->validation)
        die("the validation layer is on; timings would be meaningless");
    return ctx;
}

static kiln_program make_program(kiln_context ctx, const char *source, const char *name, const kiln_define *defines,
                                 uint32_t define_count, kiln_program_interface *iface)
{
    kiln_program prog;
    KCHECK(kiln_program_create(ctx,
                               &(kiln_program_desc){.source = source,
                                                    .name = name,
                                                    .defines = defines,
                                                    .define_count = define_count},
                               &prog));
    if (kiln_program_wait(ctx, prog) != KILN_OK) {
        char log[4096] = "";
        if (kiln_program_log(ctx, prog, log, sizeof log, NULL) != KILN_OK)
            snprintf(log, sizeof log, "(no log: %s)", kiln_last_error());
        die("%s failed to compile: %s", name, log);
    }
    KCHECK(kiln_program_interface_get(ctx, prog, iface));
    return prog;
}

static void print_events(kiln_context ctx, kiln_scheme scheme, const char *what)
{
    kiln_spec_event ev[16];
    uint32_t n;
    do {
        KCHECK(kiln_scheme_spec_events(ctx, scheme, ev, 16, &n));
        for (uint32_t i = 0; i < n; i++) {
            static const char *const kind[] = {"?", "warm", "promote", "demote", "failed", "pinned"};
            printf("  %s: submit %" PRIu64 ": %s node '%s' (%s) mask 0x%x word0 %u\n", what, ev[i].submit,
                   ev[i].kind >= 1 && ev[i].kind <= 5 ? kind[ev[i].kind] : "?", ev[i].node_label, ev[i].program,
                   ev[i].mask, ev[i].words[0]);
        }
    } while (n == 16);
}

/* Submits and waits; returns the wall time. */
static uint64_t submit_wait(kiln_context ctx, kiln_scheme scheme)
{
    uint64_t t0 = now_ns();
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(ctx, scheme, &t));
    KCHECK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    return now_ns() - t0;
}

static uint32_t block_size(double per_submit_ns, double block_s, uint32_t least)
{
    double m = block_s * 1e9 / (per_submit_ns > 1 ? per_submit_ns : 1);
    return m < least ? least : m > MAX_BLOCK ? MAX_BLOCK : (uint32_t)m;
}

/* ---- part 1: universal, auto, hand ------------------------------------------------ */

enum way { W_UNIVERSAL, W_AUTO, W_HAND, W_COUNT };
static const char *const way_name[W_COUNT] = {"universal", "auto", "hand"};

struct kern {
    kiln_program prog;
    kiln_buffer in, table, out;
    kiln_scheme scheme;
    kiln_node node;
    uint32_t spirv_words;
    uint32_t block;              /* M: submits per timed block */
    uint64_t *round_ns;          /* per round: the block's wall time over M */
    uint64_t promote_submits;    /* auto: submits until the node ran its variant */
    double promote_s;
};

struct way_ctx {
    kiln_context ctx;
    kiln_caps caps;
    struct kern k[K_COUNT];
};

static void kern_init(struct way_ctx *w, enum way way, enum kernel k, uint32_t elements, const uint32_t *input,
                      const uint32_t *table)
{
    struct kern *kn = &w->k[k];
    char value[16], name[64];
    snprintf(value, sizeof value, "%uu", kernel_word[k]);
    kiln_define def = {"KILN_SPEC_MAIN_UW0", value};
    snprintf(name, sizeof name, "%s_%s.comp", kernel_name[k], way_name[way]);
    kiln_program_interface iface;
    kn->prog = make_program(w->ctx, k == K_LOOP ? loop_source : flag_source, name, way == W_HAND ? &def : NULL,
                            way == W_HAND ? 1 : 0, &iface);
    kn->spirv_words = iface.spirv_words;
    if (way != W_HAND && iface.params_read != 1u)
        die("%s: kiln reports params_read 0x%x, expected 0x1 (word 0 only)", name, iface.params_read);

    uint64_t bytes = (uint64_t)elements * 4;
    KCHECK(kiln_buffer_create(w->ctx, &(kiln_buffer_desc){.size = bytes, .label = "in"}, &kn->in));
    KCHECK(kiln_buffer_create(w->ctx, &(kiln_buffer_desc){.size = bytes, .label = "out"}, &kn->out));
    KCHECK(kiln_buffer_upload(w->ctx, kn->in, 0, input, bytes));
    kiln_binding b[3] = {{.binding = 0, .buffer = kn->in}};
    uint32_t nb = 1;
    if (k == K_FLAG) {
        KCHECK(kiln_buffer_create(w->ctx, &(kiln_buffer_desc){.size = TABLE_WORDS * 4, .label = "table"}, &kn->table));
        KCHECK(kiln_buffer_upload(w->ctx, kn->table, 0, table, TABLE_WORDS * 4));
        b[nb++] = (kiln_binding){.binding = 1, .buffer = kn->table};
        b[nb++] = (kiln_binding){.binding = 2, .buffer = kn->out};
    } else {
        b[nb++] = (kiln_binding){.binding = 1, .buffer = kn->out};
    }
    KCHECK(kiln_scheme_create(w->ctx, &(kiln_scheme_desc){.label = name}, &kn->scheme));
    kiln_node_desc nd = {.program = kn->prog,
                         .bindings = b,
                         .binding_count = nb,
                         .groups = {(elements + GROUP - 1) / GROUP, 1, 1},
                         .label = kernel_name[k]};
    nd.params[0] = kernel_word[k];
    KCHECK(kiln_scheme_add_node(w->ctx, kn->scheme, &nd, &kn->node));
}

/* Submits the auto way's scheme until its variant runs and nothing compiles. */
static void promote(struct way_ctx *w, enum kernel k)
{
    struct kern *kn = &w->k[k];
    uint64_t t0 = now_ns();
    for (;;) {
        (void)submit_wait(w->ctx, kn->scheme);
        kn->promote_submits++;
        uint32_t pending;
        int specialized;
        KCHECK(kiln_compiles_pending(w->ctx, &pending));
        KCHECK(kiln_node_is_specialized(w->ctx, kn->node, &specialized));
        if (!pending && specialized)
            break;
        double s = (double)(now_ns() - t0) / 1e9;
        if (s > PROMOTE_TIMEOUT_S) {
            printf("spec events of the %s kernel's auto scheme:\n", kernel_name[k]);
            print_events(w->ctx, kn->scheme, "auto");
            die("the %s kernel's node never ran a variant: after %" PRIu64 " submits in %.0f s, compiles pending %u, "
                "specialized %d",
                kernel_name[k], kn->promote_submits, s, pending, specialized);
        }
    }
    kn->promote_s = (double)(now_ns() - t0) / 1e9;
    if (verbose)
        print_events(w->ctx, kn->scheme, "auto");
}

static void check_outputs(struct way_ctx *w, enum kernel k, uint32_t elements, const uint32_t *input,
                          const uint32_t *table)
{
    uint32_t *out[W_COUNT];
    for (int v = 0; v < W_COUNT; v++) {
        out[v] = xcalloc(elements, 4);
        KCHECK(kiln_buffer_readback(w[v].ctx, w[v].k[k].out, 0, out[v], (uint64_t)elements * 4));
    }
    for (uint32_t i = 0; i < elements; i++) {
        uint32_t want = reference(k, input[i], kernel_word[k], table);
        for (int v = 0; v < W_COUNT; v++)
            if (out[v][i] != want)
                die("%s kernel, %s way: element %u is 0x%08x, expected 0x%08x (universal 0x%08x, auto 0x%08x, "
                    "hand 0x%08x)",
                    kernel_name[k], way_name[v], i, out[v][i], want, out[W_UNIVERSAL][i], out[W_AUTO][i],
                    out[W_HAND][i]);
    }
    for (int v = 0; v < W_COUNT; v++)
        free(out[v]);
}

struct part1_result {
    double ms[K_COUNT][W_COUNT];
    double auto_hand[K_COUNT], universal_auto[K_COUNT];
};

static void part1(uint32_t elements, uint32_t rounds, double block_s, struct part1_result *res, kiln_caps *caps_out)
{
    uint32_t *input = xcalloc(elements, 4), table[TABLE_WORDS];
    for (uint32_t i = 0; i < elements; i++)
        input[i] = input_word(i);
    for (uint32_t i = 0; i < TABLE_WORDS; i++)
        table[i] = (i * 40503u) ^ 0x9e3779b9u;

    /* Contexts first, all three, then their programs and schemes. */
    struct way_ctx w[W_COUNT] = {0};
    static const int spec_of[W_COUNT] = {-1, 1, -1};
    for (int v = 0; v < W_COUNT; v++)
        w[v].ctx = make_context(spec_of[v], &w[v].caps);
    *caps_out = w[0].caps;
    for (int v = 0; v < W_COUNT; v++)
        for (int k = 0; k < K_COUNT; k++)
            kern_init(&w[v], (enum way)v, (enum kernel)k, elements, input, table);

    printf("part 1: each kernel over %u elements (%u workgroups of %u), one node; validation off\n", elements,
           (elements + GROUP - 1) / GROUP, GROUP);
    for (int k = 0; k < K_COUNT; k++) {
        promote(&w[W_AUTO], (enum kernel)k);
        printf("  %s kernel: auto ran its variant after %" PRIu64 " submits, %.2f s; SPIR-V words universal %u, "
               "hand %u\n",
               kernel_name[k], w[W_AUTO].k[k].promote_submits, w[W_AUTO].k[k].promote_s,
               w[W_UNIVERSAL].k[k].spirv_words, w[W_HAND].k[k].spirv_words);
    }

    /* Warm-up: two submits per way (the first dispatch of a pipeline may
     * build its machine code), then one timed to size the blocks. */
    for (int k = 0; k < K_COUNT; k++)
        for (int v = 0; v < W_COUNT; v++) {
            struct kern *kn = &w[v].k[k];
            (void)submit_wait(w[v].ctx, kn->scheme);
            (void)submit_wait(w[v].ctx, kn->scheme);
            kn->block = block_size((double)submit_wait(w[v].ctx, kn->scheme), block_s, 3);
            kn->round_ns = xcalloc(rounds, sizeof(uint64_t));
        }

    kiln_scheme_stats before[W_COUNT][K_COUNT], after[W_COUNT][K_COUNT];
    for (int v = 0; v < W_COUNT; v++)
        for (int k = 0; k < K_COUNT; k++)
            KCHECK(kiln_scheme_stats_get(w[v].ctx, w[v].k[k].scheme, &before[v][k]));

    uint64_t t_start = now_ns();
    for (int k = 0; k < K_COUNT; k++)
        for (uint32_t r = 0; r < rounds; r++)
            for (uint32_t j = 0; j < W_COUNT; j++) {
                int v = (int)((r + j) % W_COUNT);
                struct kern *kn = &w[v].k[k];
                uint64_t t0 = now_ns();
                for (uint32_t m = 0; m < kn->block; m++) {
                    kiln_ticket t;
                    KCHECK(kiln_scheme_submit(w[v].ctx, kn->scheme, &t));
                    KCHECK(kiln_ticket_wait(w[v].ctx, t, UINT64_MAX));
                }
                kn->round_ns[r] = (now_ns() - t0) / kn->block;
            }
    double measured_s = (double)(now_ns() - t_start) / 1e9;

    /* The recordings held, and the auto nodes stayed on their variants. */
    for (int v = 0; v < W_COUNT; v++)
        for (int k = 0; k < K_COUNT; k++) {
            struct kern *kn = &w[v].k[k];
            kiln_scheme_stats *a = &after[v][k], *b = &before[v][k];
            KCHECK(kiln_scheme_stats_get(w[v].ctx, kn->scheme, a));
            uint64_t submits = a->submits - b->submits;
            if (a->replays - b->replays != submits)
                die("%s kernel, %s way: %" PRIu64 " of %" PRIu64 " measured submits were not replays "
                    "(full records %" PRIu64 ", params-only %" PRIu64 ")",
                    kernel_name[k], way_name[v], submits - (a->replays - b->replays), submits,
                    a->records_full - b->records_full, a->records_params - b->records_params);
            int specialized;
            KCHECK(kiln_node_is_specialized(w[v].ctx, kn->node, &specialized));
            if (specialized != (v == W_AUTO))
                die("%s kernel, %s way: the node %s a variant at the end", kernel_name[k], way_name[v],
                    specialized ? "runs" : "does not run");
            if (a->spec_demotions)
                die("%s kernel, %s way: %" PRIu64 " demotions", kernel_name[k], way_name[v], a->spec_demotions);
        }
    for (int k = 0; k < K_COUNT; k++)
        check_outputs(w, (enum kernel)k, elements, input, table);

    printf("  %u rounds, the ways' order rotating; submits per block: loop %u/%u/%u, flag %u/%u/%u "
           "(universal/auto/hand)\n",
           rounds, w[0].k[0].block, w[1].k[0].block, w[2].k[0].block, w[0].k[1].block, w[1].k[1].block,
           w[2].k[1].block);
    if (verbose)
        for (int k = 0; k < K_COUNT; k++) {
            printf("  per-round auto/hand, %s:", kernel_name[k]);
            for (uint32_t r = 0; r < rounds; r++)
                printf(" %.3f", (double)w[W_AUTO].k[k].round_ns[r] / (double)w[W_HAND].k[k].round_ns[r]);
            printf("\n  per-round universal/auto, %s:", kernel_name[k]);
            for (uint32_t r = 0; r < rounds; r++)
                printf(" %.2f", (double)w[W_UNIVERSAL].k[k].round_ns[r] / (double)w[W_AUTO].k[k].round_ns[r]);
            printf("\n");
        }
    printf("  results checked: all three ways' outputs equal the host's reference, %u elements per kernel\n",
           elements);
    printf("  measured part: %.1f s\n\n", measured_s);

    for (int k = 0; k < K_COUNT; k++) {
        for (int v = 0; v < W_COUNT; v++)
            res->ms[k][v] = median(w[v].k[k].round_ns, rounds) / 1e6;
        res->auto_hand[k] = res->ms[k][W_AUTO] / res->ms[k][W_HAND];
        res->universal_auto[k] = res->ms[k][W_UNIVERSAL] / res->ms[k][W_AUTO];
    }

    for (int v = 0; v < W_COUNT; v++) {
        for (int k = 0; k < K_COUNT; k++)
            free(w[v].k[k].round_ns);
        (void)kiln_context_destroy(w[v].ctx);
    }
    free(input);
}

/* ---- part 2: the predictor's cost on settled nodes --------------------------------- */

enum side { S_ON, S_OFF, S_COUNT };
static const char *const side_name[S_COUNT] = {"predictor on", "predictor off"};

struct many {
    kiln_context ctx;
    kiln_caps caps;
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    uint64_t stride;             /* bytes per node's range */
    uint64_t submits;            /* all of them, for the check */
    uint64_t settle_submits;
    double settle_s;
    uint64_t *submit_ns, *total_ns;   /* per timed submit */
};

static void many_init(struct many *m, int specialization, uint32_t nodes)
{
    m->ctx = make_context(specialization, &m->caps);
    kiln_program_interface iface;
    m->prog = make_program(m->ctx, tiny_source, "tiny.comp", NULL, 0, &iface);
    uint64_t align = m->caps.min_storage_buffer_offset_alignment ? m->caps.min_storage_buffer_offset_alignment : 1;
    m->stride = (16 + align - 1) / align * align;
    KCHECK(kiln_buffer_create(m->ctx, &(kiln_buffer_desc){.size = m->stride * nodes, .label = "many"}, &m->buf));
    KCHECK(kiln_scheme_create(m->ctx, &(kiln_scheme_desc){.label = "many"}, &m->scheme));
    for (uint32_t i = 0; i < nodes; i++) {
        kiln_binding b = {.binding = 0, .buffer = m->buf, .offset = m->stride * i, .size = m->stride};
        kiln_node_desc nd = {.program = m->prog, .bindings = &b, .binding_count = 1, .groups = {1, 1, 1}};
        nd.params[0] = NODE_WORD;
        kiln_node node;
        KCHECK(kiln_scheme_add_node(m->ctx, m->scheme, &nd, &node));
    }
}

/* Submits until every node runs the variant, nothing compiles and a submit
 * is a plain replay. */
static void many_settle(struct many *m, uint32_t nodes, bool on)
{
    uint64_t t0 = now_ns();
    kiln_scheme_stats st;
    for (;;) {
        uint64_t replays_before;
        KCHECK(kiln_scheme_stats_get(m->ctx, m->scheme, &st));
        replays_before = st.replays;
        (void)submit_wait(m->ctx, m->scheme);
        m->submits++;
        m->settle_submits++;
        uint32_t pending;
        KCHECK(kiln_compiles_pending(m->ctx, &pending));
        KCHECK(kiln_scheme_stats_get(m->ctx, m->scheme, &st));
        bool replayed = st.replays > replays_before;
        if (!pending && replayed && (!on || st.spec_specialized == nodes))
            break;
        double s = (double)(now_ns() - t0) / 1e9;
        if (s > PROMOTE_TIMEOUT_S) {
            printf("spec events of the %u-node scheme (the last 256 at most):\n", nodes);
            print_events(m->ctx, m->scheme, "many");
            die("%s: the scheme never settled: after %" PRIu64 " submits in %.0f s, compiles pending %u, %" PRIu64
                " of %u nodes specialized, last submit %s",
                side_name[on ? S_ON : S_OFF], m->settle_submits, s, pending, st.spec_specialized, nodes,
                replayed ? "a replay" : "a record");
        }
    }
    m->settle_s = (double)(now_ns() - t0) / 1e9;
    if (on && st.spec_warms != 1)
        printf("  note: %" PRIu64 " variant compiles for %u nodes of one program and one word (1 expected)\n",
               st.spec_warms, nodes);
}

static void many_check(struct many *m, uint32_t nodes, const char *what)
{
    uint32_t words = (uint32_t)(m->stride / 4);
    uint32_t *d = xcalloc((size_t)nodes * words, 4);
    KCHECK(kiln_buffer_readback(m->ctx, m->buf, 0, d, m->stride * nodes));
    uint32_t want = (uint32_t)(m->submits * NODE_WORD);
    for (uint32_t i = 0; i < nodes; i++)
        if (d[(size_t)i * words] != want)
            die("%s: node %u's word is %u, expected %u (%" PRIu64 " submits of %u)", what, i,
                d[(size_t)i * words], want, m->submits, NODE_WORD);
    free(d);
}

struct part2_result {
    double submit_us[S_COUNT], total_us[S_COUNT];
    double on_off;
};

static void part2(uint32_t nodes, uint32_t rounds, double block_s, struct part2_result *res)
{
    struct many m[S_COUNT] = {0};
    many_init(&m[S_ON], 1, nodes);
    many_init(&m[S_OFF], -1, nodes);
    printf("part 2: %u nodes of one workgroup in one scheme, one program, param word 0 = %u on every node\n", nodes,
           NODE_WORD);
    many_settle(&m[S_ON], nodes, true);
    many_settle(&m[S_OFF], nodes, false);
    kiln_scheme_stats st;
    KCHECK(kiln_scheme_stats_get(m[S_ON].ctx, m[S_ON].scheme, &st));
    printf("  predictor on: all %" PRIu64 " nodes ran the variant and replayed after %" PRIu64
           " submits, %.2f s (%" PRIu64 " variant compile%s)\n",
           st.spec_specialized, m[S_ON].settle_submits, m[S_ON].settle_s, st.spec_warms,
           st.spec_warms == 1 ? "" : "s");

    /* Warm-up, then blocks sized from it. */
    uint64_t per = 0;
    for (int s = 0; s < S_COUNT; s++)
        for (int i = 0; i < 3; i++) {
            uint64_t t = submit_wait(m[s].ctx, m[s].scheme);
            m[s].submits++;
            per = i == 2 && t > per ? t : per;
        }
    uint32_t block = block_size((double)per, block_s, 5);
    size_t total = (size_t)rounds * block;
    for (int s = 0; s < S_COUNT; s++) {
        m[s].submit_ns = xcalloc(total, sizeof(uint64_t));
        m[s].total_ns = xcalloc(total, sizeof(uint64_t));
    }

    kiln_scheme_stats before[S_COUNT], after[S_COUNT];
    for (int s = 0; s < S_COUNT; s++)
        KCHECK(kiln_scheme_stats_get(m[s].ctx, m[s].scheme, &before[s]));
    uint64_t t_start = now_ns();
    double *round_ratio = xcalloc(rounds, sizeof(double));
    for (uint32_t r = 0; r < rounds; r++) {
        for (int j = 0; j < S_COUNT; j++) {
            int s = (int)((r + (uint32_t)j) % S_COUNT);
            struct many *ms = &m[s];
            for (uint32_t i = 0; i < block; i++) {
                kiln_ticket t;
                uint64_t t0 = now_ns();
                KCHECK(kiln_scheme_submit(ms->ctx, ms->scheme, &t));
                uint64_t t1 = now_ns();
                KCHECK(kiln_ticket_wait(ms->ctx, t, UINT64_MAX));
                ms->submit_ns[(size_t)r * block + i] = t1 - t0;
                ms->total_ns[(size_t)r * block + i] = now_ns() - t0;
                ms->submits++;
            }
        }
        /* Sorting a round's slice leaves the overall median as it is. */
        round_ratio[r] = median(m[S_ON].submit_ns + (size_t)r * block, block) /
                         median(m[S_OFF].submit_ns + (size_t)r * block, block);
    }
    double measured_s = (double)(now_ns() - t_start) / 1e9;

    for (int s = 0; s < S_COUNT; s++) {
        KCHECK(kiln_scheme_stats_get(m[s].ctx, m[s].scheme, &after[s]));
        uint64_t submits = after[s].submits - before[s].submits;
        if (after[s].replays - before[s].replays != submits)
            die("%s: %" PRIu64 " of %" PRIu64 " measured submits were not replays", side_name[s],
                submits - (after[s].replays - before[s].replays), submits);
        if (after[s].spec_demotions || after[s].spec_specialized != (s == S_ON ? nodes : 0))
            die("%s: %" PRIu64 " demotions, %" PRIu64 " nodes specialized at the end", side_name[s],
                after[s].spec_demotions, after[s].spec_specialized);
        many_check(&m[s], nodes, side_name[s]);
    }

    printf("  %u rounds x %u timed submits per side, the order alternating; each submit waited for untimed\n",
           rounds, block);
    if (verbose) {
        printf("  per-round on/off (submit call):");
        for (uint32_t r = 0; r < rounds; r++)
            printf(" %.3f", round_ratio[r]);
        printf("\n");
    }
    printf("  results checked: every node's word is its submits times %u, both sides; all measured submits "
           "replays\n",
           NODE_WORD);
    printf("  measured part: %.1f s\n\n", measured_s);

    for (int s = 0; s < S_COUNT; s++) {
        res->submit_us[s] = median(m[s].submit_ns, total) / 1e3;
        res->total_us[s] = median(m[s].total_ns, total) / 1e3;
        free(m[s].submit_ns);
        free(m[s].total_ns);
        (void)kiln_context_destroy(m[s].ctx);
    }
    res->on_off = res->submit_us[S_ON] / res->submit_us[S_OFF];
    free(round_ratio);
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_spec [--quick] [--elements N] [--nodes N] [--rounds N] [--verbose]\n"
               "  --elements N  elements per kernel in part 1 (default 4194304 on a GPU,\n"
               "                1048576 on a CPU device)\n"
               "  --nodes N     nodes of part 2's scheme (default 10000)\n"
               "  --rounds N    rounds of each part (default 9 and 15)\n"
               "  --quick       small sizes and few rounds (a smoke test; results still checked)\n"
               "  --verbose     per-round ratios and specialization events\n");
}

static uint32_t parse_count(const char *opt, const char *s, uint32_t hi)
{
    char *end;
    unsigned long v = s ? strtoul(s, &end, 10) : 0;
    if (!s || !*s || *end || s[0] == '-' || v == 0 || v > hi)
        die("%s wants a count from 1 to %u, got '%s'", opt, hi, s ? s : "");
    return (uint32_t)v;
}

int main(int argc, char **argv)
{
    /* Cold drivers and a cold kiln: before any Vulkan call. */
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    setenv("__GL_SHADER_DISK_CACHE", "0", 1);
    setenv("KILN_ARCHIVE", "0", 0);

    uint32_t elements = 0, nodes = 10000, rounds = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--elements"))
            elements = parse_count(a, v, 1u << 28), i++;
        else if (!strcmp(a, "--nodes"))
            nodes = parse_count(a, v, 1000000), i++;
        else if (!strcmp(a, "--rounds"))
            rounds = parse_count(a, v, 10000), i++;
        else if (!strcmp(a, "--quick"))
            quick = true;
        else if (!strcmp(a, "--verbose"))
            verbose = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown argument '%s'", a);
        }
    }
    bool nodes_given = false;
    for (int i = 1; i < argc; i++)
        nodes_given |= !strcmp(argv[i], "--nodes");
    if (quick && !nodes_given)
        nodes = 300;
    uint32_t rounds1 = rounds ? rounds : quick ? 2 : 9;
    uint32_t rounds2 = rounds ? rounds : quick ? 2 : 15;
    double block_s = quick ? 0.02 : 0.25;

    /* The device decides the default size; a context made and let go. */
    if (!elements) {
        kiln_caps caps;
        kiln_context probe = make_context(-1, &caps);
        (void)kiln_context_destroy(probe);
        elements = quick ? 65536 : caps.device_type == KILN_DEVICE_CPU ? 1048576 : 4194304;
    }

    struct part1_result r1;
    kiln_caps caps;
    printf("bench_spec: kiln's specialization: a baked variant made by kiln against one baked by hand and the "
           "universal program, then the predictor's cost on settled nodes\n");
    fflush(stdout);
    part1(elements, rounds1, block_s, &r1, &caps);
    struct part2_result r2;
    part2(nodes, rounds2, block_s, &r2);

    printf("device: %s (%s; %s)\n", caps.device_name, caps.driver_name, caps.driver_info);
    printf("part 1, median per dispatch (submit + wait)    universal        auto        hand   auto/hand   "
           "universal/auto\n");
    for (int k = 0; k < K_COUNT; k++)
        printf("  %-4s %-37s %9.2f ms %8.2f ms %8.2f ms %9.3fx %11.2fx\n", kernel_name[k], kernel_what[k],
               r1.ms[k][W_UNIVERSAL], r1.ms[k][W_AUTO], r1.ms[k][W_HAND], r1.auto_hand[k], r1.universal_auto[k]);
    printf("part 2, %u settled nodes, median       submit call   submit + wait\n", nodes);
    for (int s = 0; s < S_COUNT; s++)
        printf("  %-36s %9.1f us %12.1f us\n", side_name[s], r2.submit_us[s], r2.total_us[s]);
    printf("\n");
    for (int k = 0; k < K_COUNT; k++)
        printf("%s kernel, auto / hand: %.3fx (target <= %.2fx) %s\n", kernel_name[k], r1.auto_hand[k],
               TARGET_AUTO_HAND, r1.auto_hand[k] <= TARGET_AUTO_HAND ? "met" : "MISSED");
    for (int k = 0; k < K_COUNT; k++)
        printf("%s kernel, universal / auto: %.2fx\n", kernel_name[k], r1.universal_auto[k]);
    printf("%u settled nodes, submit call, predictor on / off: %.3fx (target <= %.2fx) %s\n", nodes, r2.on_off,
           TARGET_ON_OFF, r2.on_off <= TARGET_ON_OFF ? "met" : "MISSED");
    if (quick)
        printf("(--quick: small sizes and %u rounds; the ratios are rough)\n", rounds1);
    return 0;
}
