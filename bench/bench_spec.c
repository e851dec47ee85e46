/* SPDX-License-Identifier: MIT */
/*
 * bench_spec.c: what kiln's specialization buys, and what it costs once
 * settled.
 *
 * Part 1, the gain. Three kernels over N elements (default 4M on a GPU, 1M on
 * a CPU device such as lavapipe; --elements), each one node of 64-wide
 * workgroups in a scheme of its own, run three ways:
 *   universal  specialization off (.specialization = -1): the program reads
 *              its param word from push constants;
 *   auto       specialization on (.specialization = 1): the scheme is first
 *              submitted until it settles (below); its node must have been
 *              promoted to the variant kiln compiled with the word baked in
 *              (never promoted is an error; a variant kiln's cost model
 *              demoted as no faster is said, and auto then runs universal);
 *   hand       specialization off, the program created with the define
 *              KILN_SPEC_MAIN_UW0 set to the literal kiln bakes (the decimal
 *              word and 'u'): what a person would write by hand.
 * The kernels:
 *   loop  per element a loop of kiln_param(0) = 64 iterations of integer
 *         ALU work; baked, the trip count is a constant;
 *   flag  a cheap hash per element, then an expensive path (64 rounds of
 *         lookups in a second buffer) under `if (kiln_param(0) != 0u)`, run
 *         with the flag 0: baked, the path is gone;
 *   own   the loop kernel with its bound a member of the shader's own
 *         push_constant block: kiln bakes it in the SPIR-V (no GLSL
 *         compile); "hand" is the same source with the bound defined to
 *         the literal (TRIPS).
 * Each way lives in a context of its own, made up front. Timing: after a
 * warm-up (whose times also size the blocks), rounds (default 9, --rounds)
 * of one block per way, the order rotating each round (A,B,C then B,C,A,
 * ...) so that a burst of machine noise hits all three alike. A block is M
 * submits, each followed by kiln_ticket_wait, M chosen per way so that a
 * block takes about BLOCK_S seconds (at least 3 submits); its figure is the
 * block's wall time over M: one dispatch plus the submit and wait around it
 * (on lavapipe the dispatch dominates; on a fast GPU the fixed part is a
 * larger share). Each way's figure is the median over the rounds. Printed:
 * auto/hand (target <= 1.03x: kiln's variant runs as fast as one baked by
 * hand) and universal/auto (the gain). Checks: every measured submit is a
 * replay, the auto node runs as it settled, with no promotion or demotion
 * while measured; each way's output is read back once and must equal the
 * other ways' and a reference computed on the host.
 *
 * Settled: nothing compiles in the context (kiln_compiles_pending() is 0)
 * and the last SETTLE_REPLAYS submits were plain replays. By then the
 * predictor has promoted what it will, and its cost model, which times a
 * promoted variant over a few submits before keeping or demoting it, has
 * judged. The submits and seconds this took are printed.
 *
 * Part 2, the cost. One scheme of 10,000 one-workgroup nodes (--nodes),
 * each on its own range of one buffer (so no barriers), all running one
 * program that adds its param word 0 to its range's first word, every node
 * with the same word that never changes; one variant compile serves them
 * all. Two contexts: predictor on (.specialization = 1) and off (-1), both
 * settled first. Timed: the kiln_scheme_submit call alone; the ticket is
 * waited for after the clock stops, on every submit. The two sides
 * alternate submit by submit (the order flipping each pair), in rounds
 * (default 15) sized so the measured part takes about PART2_S seconds; each
 * figure is the median over every timed submit. Printed: on/off (target <=
 * 1.02x) with a bootstrap 90% interval of that ratio: the submit call is
 * tens of microseconds, and on a loaded machine with few samples (lavapipe
 * runs 10,000 dispatches in a few hundred milliseconds) the interval shows
 * how far the point estimate can be trusted. Checks: all measured submits
 * are replays, nothing promoted or demoted while measured, and each node's
 * word is the number of submits times its param.
 *
 * Cold compiles: the drivers' disk caches are turned off
 * (MESA_SHADER_CACHE_DISABLE=true, __GL_SHADER_DISK_CACHE=0) and kiln's
 * archive too unless KILN_ARCHIVE is set, before any context is made, so
 * the promotion times are those of a first run. Validation is off.
 *
 * Exit status: 0 whether or not the targets are met (a miss prints
 * MISSED); 1 on errors: a failed call, a compile failure, an auto node that
 * never promotes, a scheme that never settles, a result that differs.
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
#define BLOCK_S 0.25              /* part 1: seconds per block, about */
#define PART2_S 60.0              /* part 2: seconds measured, about */
#define MAX_BLOCK 2000u           /* submits per block at most */
#define SETTLE_REPLAYS 8u         /* replays in a row that show a scheme settled */
#define SETTLE_TIMEOUT_S 600.0    /* a scheme must settle within this */
#define BOOTSTRAP 300             /* resamples for part 2's interval */

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

/* The loop kernel as real shaders write it: the bound is a member of the
 * shader's own push_constant block (a node's word 0); kiln bakes it in the
 * SPIR-V. "hand" defines TRIPS to the literal. */
static const char own_source[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(push_constant) uniform Push { uint trips; } pc;\n"
                                 "#ifndef TRIPS\n"
                                 "#define TRIPS pc.trips\n"
                                 "#endif\n"
                                 "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                                 "layout(std430, binding = 1) writeonly buffer Out { uint o[]; };\n"
                                 "void main()\n"
                                 "{\n"
                                 "    uint i = gl_GlobalInvocationID.x;\n"
                                 "    if (i >= uint(o.length()))\n"
                                 "        return;\n"
                                 "    uint x = a[i];\n"
                                 "    for (uint k = 0u; k < TRIPS; k++) {\n"
                                 "        x = x * 1664525u + 1013904223u;\n"
                                 "        x ^= x >> 13;\n"
                                 "        x += k;\n"
                                 "    }\n"
                                 "    o[i] = x;\n"
                                 "}\n";

/* Part 2's program: one invocation adds its word to the first word of the
 * node's range. */
static const char tiny_source[] = "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(std430, binding = 0) buffer B { uint d[]; };\n"
                                  "void main() { d[0] += kiln_param(0); }\n";

enum kernel { K_LOOP, K_FLAG, K_OWN, K_COUNT };
static const char *const kernel_name[K_COUNT] = {"loop", "flag", "own"};
static const char *const kernel_what[K_COUNT] = {"loop bound, param 0 = 64", "flag off, param 0 = 0",
                                                 "loop bound in its own push block = 64"};
static const uint32_t kernel_word[K_COUNT] = {LOOP_TRIPS, 0u, LOOP_TRIPS};

/* The host's reference of each kernel, with its word. */
static uint32_t reference(enum kernel k, uint32_t a, uint32_t word, const uint32_t *table)
{
    if (k == K_LOOP || k == K_OWN) {
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

static double seconds_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e9; }

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

/* Submits and waits; returns the wall time. */
static uint64_t submit_wait(kiln_context ctx, kiln_scheme scheme)
{
    uint64_t t0 = now_ns();
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(ctx, scheme, &t));
    KCHECK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    return now_ns() - t0;
}

static uint32_t clamp_count(double v, uint32_t least)
{
    return v < least ? least : v > MAX_BLOCK ? MAX_BLOCK : (uint32_t)v;
}

/* ---- specialization events and settling ------------------------------------------- */

/* Takes the scheme's specialization events; prints the first `lines` of
 * them and, when there were more, a count of each kind. Returns the submit
 * of the last promotion seen (0: none). */
static uint64_t take_events(kiln_context ctx, kiln_scheme scheme, const char *what, uint32_t lines)
{
    static const char *const kind_name[] = {"?", "warm", "promote", "demote", "failed", "pinned"};
    uint64_t count[6] = {0}, promoted_at = 0, seen = 0;
    kiln_spec_event ev[64];
    uint32_t n;
    do {
        KCHECK(kiln_scheme_spec_events(ctx, scheme, ev, 64, &n));
        for (uint32_t i = 0; i < n; i++, seen++) {
            int kind = ev[i].kind >= 1 && ev[i].kind <= 5 ? (int)ev[i].kind : 0;
            count[kind]++;
            if (kind == KILN_SPEC_PROMOTE)
                promoted_at = ev[i].submit;
            if (seen < lines)
                printf("    %s: submit %" PRIu64 ": %s node '%s' (%s), baked mask 0x%llx, word 0 = %u\n", what,
                       ev[i].submit, kind_name[kind], ev[i].node_label, ev[i].program,
                       (unsigned long long)ev[i].mask, ev[i].words[0]);
        }
    } while (n == 64);
    if (lines && seen > lines) {
        printf("    %s: %" PRIu64 " events taken (the scheme keeps the last 256):", what, seen);
        for (int k = 1; k <= 5; k++)
            if (count[k])
                printf(" %" PRIu64 " %s", count[k], kind_name[k]);
        printf("\n");
    }
    return promoted_at;
}

struct settled {
    uint64_t submits;        /* submits made until settled */
    double seconds;
    double promoted_s;       /* with a node: until a submit first ran it on a variant (0: none did) */
};

/* Submits the scheme, waiting for each, until it is settled (see the top
 * of the file). Dies, with the scheme's events, after SETTLE_TIMEOUT_S. */
static struct settled settle(kiln_context ctx, kiln_scheme scheme, const char *what, kiln_node node)
{
    struct settled r = {0};
    uint64_t t0 = now_ns();
    uint32_t replays_in_row = 0, pending = 0;
    for (;;) {
        kiln_scheme_stats before, after;
        KCHECK(kiln_scheme_stats_get(ctx, scheme, &before));
        (void)submit_wait(ctx, scheme);
        r.submits++;
        KCHECK(kiln_scheme_stats_get(ctx, scheme, &after));
        KCHECK(kiln_compiles_pending(ctx, &pending));
        if (node.id && !r.promoted_s) {
            int specialized;
            KCHECK(kiln_node_is_specialized(ctx, node, &specialized));
            if (specialized)
                r.promoted_s = seconds_since(t0);
        }
        /* Replays count only once nothing compiles: a variant that lands
         * is swapped in by the next submit, which records. */
        replays_in_row = after.replays > before.replays && !pending ? replays_in_row + 1 : 0;
        if (!pending && replays_in_row >= SETTLE_REPLAYS)
            break;
        if (seconds_since(t0) > SETTLE_TIMEOUT_S) {
            printf("  specialization events of %s:\n", what);
            (void)take_events(ctx, scheme, what, 32);
            die("%s never settled: after %" PRIu64 " submits in %.0f s, compiles pending %u, %u replays in a row, "
                "%" PRIu64 " nodes specialized, %" PRIu64 " promotions, %" PRIu64 " demotions (%" PRIu64 " no gain)",
                what, r.submits, seconds_since(t0), pending, replays_in_row, after.spec_specialized,
                after.spec_promotions, after.spec_demotions, after.spec_no_gain);
        }
    }
    r.seconds = seconds_since(t0);
    return r;
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
    struct settled settled;      /* auto only */
    uint64_t promote_submit;     /* auto: the submit that promoted it */
    int specialized;             /* auto: the node runs a variant once settled */
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
    kiln_define def = {k == K_OWN ? "TRIPS" : "KILN_SPEC_MAIN_UW0", value};
    snprintf(name, sizeof name, "%s_%s.comp", kernel_name[k], way_name[way]);
    kiln_program_interface iface;
    kn->prog = make_program(w->ctx, k == K_LOOP ? loop_source : k == K_OWN ? own_source : flag_source, name,
                            way == W_HAND ? &def : NULL,
                            way == W_HAND ? 1 : 0, &iface);
    kn->spirv_words = iface.spirv_words;
    if (way != W_HAND && iface.params_read != 1u)
        die("%s: kiln reports params_read 0x%llx, expected 0x1 (word 0 only)", name,
            (unsigned long long)iface.params_read);

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
                         .params = (const uint32_t[]){kernel_word[k]},
                         /* the hand-written own-block shader may have no block left to fill */
                         .param_count = k == K_OWN && way == W_HAND ? 0 : 1,
                         .label = kernel_name[k]};
    KCHECK(kiln_scheme_add_node(w->ctx, kn->scheme, &nd, &kn->node));
}

/* Settles the auto way's scheme; its node must have been promoted. */
static void promote(struct way_ctx *w, enum kernel k)
{
    struct kern *kn = &w->k[k];
    char what[64];
    snprintf(what, sizeof what, "the %s kernel's auto scheme", kernel_name[k]);
    kn->settled = settle(w->ctx, kn->scheme, what, kn->node);
    kiln_scheme_stats st;
    KCHECK(kiln_scheme_stats_get(w->ctx, kn->scheme, &st));
    KCHECK(kiln_node_is_specialized(w->ctx, kn->node, &kn->specialized));
    kn->promote_submit = take_events(w->ctx, kn->scheme, "auto", verbose || !kn->specialized ? 32 : 0);
    if (!st.spec_promotions)
        die("%s: the node never ran a variant (%" PRIu64 " submits, %.1f s, %" PRIu64 " variant compiles)", what,
            kn->settled.submits, kn->settled.seconds, st.spec_warms);
    if (!kn->specialized)
        printf("  note: %s: kiln demoted the variant (%" PRIu64 " demotions, %" PRIu64
               " judged no faster by its cost model); auto runs the universal program\n",
               what, st.spec_demotions, st.spec_no_gain);
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
    int specialized[K_COUNT];
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

    printf("part 1: each kernel over %u elements (%u workgroups of %u), one node\n", elements,
           (elements + GROUP - 1) / GROUP, GROUP);
    for (int k = 0; k < K_COUNT; k++) {
        promote(&w[W_AUTO], (enum kernel)k);
        const struct kern *a = &w[W_AUTO].k[k];
        printf("  %s kernel, auto: promoted at submit %" PRIu64 " (%.2f s), settled after %" PRIu64
               " submits (%.2f s); SPIR-V words universal %u, hand %u\n",
               kernel_name[k], a->promote_submit, a->settled.promoted_s, a->settled.submits, a->settled.seconds,
               w[W_UNIVERSAL].k[k].spirv_words, w[W_HAND].k[k].spirv_words);
        res->specialized[k] = a->specialized;
    }

    /* Warm-up: two submits per way (a driver may build a pipeline's machine
     * code at its first dispatch), then one timed to size the blocks. */
    for (int k = 0; k < K_COUNT; k++)
        for (int v = 0; v < W_COUNT; v++) {
            struct kern *kn = &w[v].k[k];
            (void)submit_wait(w[v].ctx, kn->scheme);
            (void)submit_wait(w[v].ctx, kn->scheme);
            double one = (double)submit_wait(w[v].ctx, kn->scheme);
            kn->block = clamp_count(block_s * 1e9 / (one > 1 ? one : 1), 3);
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
    double measured_s = seconds_since(t_start);

    /* The recordings held, and every node ran as it settled. */
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
            if (specialized != (v == W_AUTO && kn->specialized))
                die("%s kernel, %s way: the node %s a variant at the end", kernel_name[k], way_name[v],
                    specialized ? "runs" : "does not run");
            if (a->spec_promotions != b->spec_promotions || a->spec_demotions != b->spec_demotions)
                die("%s kernel, %s way: %" PRIu64 " promotions and %" PRIu64 " demotions while measured",
                    kernel_name[k], way_name[v], a->spec_promotions - b->spec_promotions,
                    a->spec_demotions - b->spec_demotions);
        }
    for (int k = 0; k < K_COUNT; k++)
        check_outputs(w, (enum kernel)k, elements, input, table);

    printf("  %u rounds, the ways' order rotating; submits per block (universal/auto/hand): loop %u/%u/%u, "
           "flag %u/%u/%u\n",
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
    printf("  results checked: the three ways' outputs equal the host's reference, %u elements per kernel; "
           "all measured submits replays\n",
           elements);
    printf("  measured part: %.1f s\n\n", measured_s);

    for (int k = 0; k < K_COUNT; k++) {
        for (int v = 0; v < W_COUNT; v++)
            res->ms[k][v] = bench_median(w[v].k[k].round_ns, rounds) / 1e6;
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
    struct settled settled;
    uint64_t specialized;        /* nodes running the variant once settled */
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
        kiln_node_desc nd = {.program = m->prog, .bindings = &b, .binding_count = 1, .groups = {1, 1, 1},
                             .params = (const uint32_t[]){NODE_WORD}, .param_count = 1};
        kiln_node node;
        KCHECK(kiln_scheme_add_node(m->ctx, m->scheme, &nd, &node));
    }
}

static void many_check(struct many *m, uint32_t nodes, const char *what)
{
    uint32_t words = (uint32_t)(m->stride / 4);
    uint32_t *d = xcalloc((size_t)nodes * words, 4);
    KCHECK(kiln_buffer_readback(m->ctx, m->buf, 0, d, m->stride * nodes));
    uint32_t want = (uint32_t)(m->submits * NODE_WORD);
    for (uint32_t i = 0; i < nodes; i++)
        if (d[(size_t)i * words] != want)
            die("%s: node %u's word is %u, expected %u (%" PRIu64 " submits of %u)", what, i, d[(size_t)i * words],
                want, m->submits, NODE_WORD);
    free(d);
}

/* A small deterministic generator for the bootstrap. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The 5% and 95% points of median(on)/median(off) over resamples of both
 * sample sets (n each, drawn with replacement). */
static void bootstrap_ratio(const uint64_t *on, const uint64_t *off, size_t n, double *lo, double *hi)
{
    uint64_t *tmp = xcalloc(n, sizeof *tmp), seed = 0x9e3779b97f4a7c15u;
    double *ratio = xcalloc(BOOTSTRAP, sizeof *ratio);
    for (int b = 0; b < BOOTSTRAP; b++) {
        for (size_t i = 0; i < n; i++)
            tmp[i] = on[rng_next(&seed) % n];
        double m_on = bench_median(tmp, n);
        for (size_t i = 0; i < n; i++)
            tmp[i] = off[rng_next(&seed) % n];
        double m_off = bench_median(tmp, n);
        ratio[b] = m_on / (m_off > 0 ? m_off : 1);
    }
    qsort(ratio, BOOTSTRAP, sizeof *ratio, cmp_double);
    *lo = ratio[BOOTSTRAP / 20];
    *hi = ratio[BOOTSTRAP - 1 - BOOTSTRAP / 20];
    free(ratio);
    free(tmp);
}

struct part2_result {
    double submit_us[S_COUNT], total_us[S_COUNT];
    double on_off, lo, hi;
    struct settled settled;      /* the "on" side's */
    uint64_t specialized;
};

static void part2(uint32_t nodes, uint32_t rounds, double part_s, struct part2_result *res)
{
    struct many m[S_COUNT] = {0};
    many_init(&m[S_ON], 1, nodes);
    many_init(&m[S_OFF], -1, nodes);
    printf("part 2: %u nodes of one workgroup in one scheme, one program, param word 0 = %u on every node\n", nodes,
           NODE_WORD);
    for (int s = 0; s < S_COUNT; s++) {
        m[s].settled = settle(m[s].ctx, m[s].scheme, side_name[s], (kiln_node){0});
        m[s].submits += m[s].settled.submits;
    }
    kiln_scheme_stats st;
    KCHECK(kiln_scheme_stats_get(m[S_ON].ctx, m[S_ON].scheme, &st));
    if (!st.spec_promotions)
        die("predictor on: no node ever ran a variant (%" PRIu64 " submits, %" PRIu64 " variant compiles)",
            m[S_ON].settled.submits, st.spec_warms);
    printf("  predictor on: settled after %" PRIu64 " submits (%.2f s): %" PRIu64 " variant compile%s, %" PRIu64
           " promotions, %" PRIu64 " demotions (%" PRIu64 " judged no faster); %" PRIu64 " of %u nodes run the "
           "variant\n",
           m[S_ON].settled.submits, m[S_ON].settled.seconds, st.spec_warms, st.spec_warms == 1 ? "" : "s",
           st.spec_promotions, st.spec_demotions, st.spec_no_gain, st.spec_specialized, nodes);
    (void)take_events(m[S_ON].ctx, m[S_ON].scheme, "on", verbose ? 8 : 0);
    m[S_ON].specialized = st.spec_specialized;
    res->settled = m[S_ON].settled;
    res->specialized = st.spec_specialized;

    /* Warm-up, then rounds sized from it. */
    uint64_t per = 0;
    for (int s = 0; s < S_COUNT; s++)
        for (int i = 0; i < 3; i++) {
            uint64_t t = submit_wait(m[s].ctx, m[s].scheme);
            m[s].submits++;
            per = i == 2 && t > per ? t : per;
        }
    uint32_t block = clamp_count(part_s * 1e9 / ((double)rounds * S_COUNT * (double)(per ? per : 1)), 5);
    size_t total = (size_t)rounds * block;
    for (int s = 0; s < S_COUNT; s++) {
        m[s].submit_ns = xcalloc(total, sizeof(uint64_t));
        m[s].total_ns = xcalloc(total, sizeof(uint64_t));
    }

    kiln_scheme_stats before[S_COUNT], after[S_COUNT];
    for (int s = 0; s < S_COUNT; s++)
        KCHECK(kiln_scheme_stats_get(m[s].ctx, m[s].scheme, &before[s]));
    uint64_t t_start = now_ns();
    for (size_t i = 0; i < total; i++)
        for (int j = 0; j < S_COUNT; j++) {
            struct many *ms = &m[(i + (size_t)j) % S_COUNT];
            kiln_ticket t;
            uint64_t t0 = now_ns();
            KCHECK(kiln_scheme_submit(ms->ctx, ms->scheme, &t));
            uint64_t t1 = now_ns();
            KCHECK(kiln_ticket_wait(ms->ctx, t, UINT64_MAX));
            ms->submit_ns[i] = t1 - t0;
            ms->total_ns[i] = now_ns() - t0;
            ms->submits++;
        }
    double measured_s = seconds_since(t_start);

    for (int s = 0; s < S_COUNT; s++) {
        KCHECK(kiln_scheme_stats_get(m[s].ctx, m[s].scheme, &after[s]));
        uint64_t submits = after[s].submits - before[s].submits;
        if (after[s].replays - before[s].replays != submits)
            die("%s: %" PRIu64 " of %" PRIu64 " measured submits were not replays (full records %" PRIu64
                ", params-only %" PRIu64 ")",
                side_name[s], submits - (after[s].replays - before[s].replays), submits,
                after[s].records_full - before[s].records_full, after[s].records_params - before[s].records_params);
        if (after[s].spec_promotions != before[s].spec_promotions ||
            after[s].spec_demotions != before[s].spec_demotions || after[s].spec_specialized != m[s].specialized)
            die("%s: %" PRIu64 " promotions and %" PRIu64 " demotions while measured; %" PRIu64
                " nodes specialized at the end, %" PRIu64 " when settled",
                side_name[s], after[s].spec_promotions - before[s].spec_promotions,
                after[s].spec_demotions - before[s].spec_demotions, after[s].spec_specialized, m[s].specialized);
        many_check(&m[s], nodes, side_name[s]);
    }

    printf("  %zu timed submits per side in %u rounds, the sides alternating submit by submit; each ticket waited "
           "for untimed\n",
           total, rounds);
    if (verbose) {
        printf("  per-round on/off (submit call):");
        for (uint32_t r = 0; r < rounds; r++) {
            /* Sorting a round's slice leaves the overall median as it is. */
            size_t at = (size_t)r * block;
            printf(" %.3f", bench_median(m[S_ON].submit_ns + at, block) / bench_median(m[S_OFF].submit_ns + at, block));
        }
        printf("\n");
        for (int s = 0; s < S_COUNT; s++) {
            uint64_t *v = m[s].submit_ns;
            qsort(v, total, sizeof *v, bench_cmp_u64);
            printf("  %s, submit call: min %.1f us, p10 %.1f, p25 %.1f, p50 %.1f, p75 %.1f, p90 %.1f, max %.1f\n",
                   side_name[s], v[0] / 1e3, v[total / 10] / 1e3, v[total / 4] / 1e3, v[total / 2] / 1e3,
                   v[total * 3 / 4] / 1e3, v[total * 9 / 10] / 1e3, v[total - 1] / 1e3);
        }
    }
    printf("  results checked: every node's word is its submits times %u, both sides; all measured submits "
           "replays\n",
           NODE_WORD);
    printf("  measured part: %.1f s\n\n", measured_s);

    bootstrap_ratio(m[S_ON].submit_ns, m[S_OFF].submit_ns, total, &res->lo, &res->hi);
    for (int s = 0; s < S_COUNT; s++) {
        res->submit_us[s] = bench_median(m[s].submit_ns, total) / 1e3;
        res->total_us[s] = bench_median(m[s].total_ns, total) / 1e3;
        free(m[s].submit_ns);
        free(m[s].total_ns);
        (void)kiln_context_destroy(m[s].ctx);
    }
    res->on_off = res->submit_us[S_ON] / res->submit_us[S_OFF];
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
               "  --verbose     per-round ratios, sample spread and specialization events\n");
}

int main(int argc, char **argv)
{
    /* Cold drivers and a cold kiln: before any Vulkan call. */
    setenv("MESA_SHADER_CACHE_DISABLE", "true", 1);
    setenv("__GL_SHADER_DISK_CACHE", "0", 1);
    setenv("KILN_ARCHIVE", "0", 0);

    uint32_t elements = 0, nodes = 0, rounds = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--elements"))
            elements = (uint32_t)bench_parse_num(a, v, 1, 1u << 28), i++;
        else if (!strcmp(a, "--nodes"))
            nodes = (uint32_t)bench_parse_num(a, v, 1, 1000000), i++;
        else if (!strcmp(a, "--rounds"))
            rounds = (uint32_t)bench_parse_num(a, v, 1, 10000), i++;
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
    if (!nodes)
        nodes = quick ? 300 : 10000;
    uint32_t rounds1 = rounds ? rounds : quick ? 2 : 9;
    uint32_t rounds2 = rounds ? rounds : quick ? 2 : 15;

    /* The device decides the default size: a context made and let go. */
    if (!elements) {
        kiln_caps caps;
        kiln_context probe = make_context(-1, &caps);
        (void)kiln_context_destroy(probe);
        elements = quick ? 65536 : caps.device_type == KILN_DEVICE_CPU ? 1048576 : 4194304;
    }

    printf("bench_spec: kiln's specialization: its own variant against one baked by hand and the universal "
           "program, then the predictor's cost on settled nodes (validation off)\n");
    fflush(stdout);
    struct part1_result r1;
    kiln_caps caps;
    part1(elements, rounds1, quick ? 0.02 : BLOCK_S, &r1, &caps);
    fflush(stdout);
    struct part2_result r2;
    part2(nodes, rounds2, quick ? 1.0 : PART2_S, &r2);

    printf("device: %s (%s; %s)\n", caps.device_name, caps.driver_name, caps.driver_info);
    printf("part 1, %u elements, median time per dispatch (submit + wait):\n", elements);
    printf("%-44s%11s%11s%11s%11s%16s\n", "", "universal", "auto", "hand", "auto/hand", "universal/auto");
    for (int k = 0; k < K_COUNT; k++) {
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", kernel_name[k], kernel_what[k]);
        printf("  %-42s%8.2f ms%8.2f ms%8.2f ms%10.3fx%15.2fx%s\n", label, r1.ms[k][W_UNIVERSAL], r1.ms[k][W_AUTO],
               r1.ms[k][W_HAND], r1.auto_hand[k], r1.universal_auto[k],
               r1.specialized[k] ? "" : " (auto demoted: runs universal)");
    }
    printf("part 2, %u settled nodes, median:\n", nodes);
    printf("%-44s%13s%15s\n", "", "submit call", "submit + wait");
    for (int s = 0; s < S_COUNT; s++)
        printf("  %-42s%10.1f us%12.1f us\n", side_name[s], r2.submit_us[s], r2.total_us[s]);
    printf("  predictor on: settled after %" PRIu64 " submits (%.1f s); %" PRIu64 " of %u nodes run the variant\n",
           r2.settled.submits, r2.settled.seconds, r2.specialized, nodes);
    printf("\n");
    for (int k = 0; k < K_COUNT; k++)
        printf("%s kernel, auto / hand: %.3fx (target <= %.2fx) %s\n", kernel_name[k], r1.auto_hand[k],
               TARGET_AUTO_HAND, r1.auto_hand[k] <= TARGET_AUTO_HAND ? "met" : "MISSED");
    for (int k = 0; k < K_COUNT; k++)
        printf("%s kernel, universal / auto: %.2fx\n", kernel_name[k], r1.universal_auto[k]);
    printf("%u settled nodes, submit call, predictor on / off: %.3fx, 90%% interval %.3f-%.3f (target <= %.2fx) "
           "%s\n",
           nodes, r2.on_off, r2.lo, r2.hi, TARGET_ON_OFF, r2.on_off <= TARGET_ON_OFF ? "met" : "MISSED");
    if (quick)
        printf("(--quick: small sizes and few rounds; the ratios are rough)\n");
    return 0;
}
