/* SPDX-License-Identifier: MIT */
/*
 * bench_wave.c: guest GCN kernels at the Lane, Wavefront and Subgroup levels and in
 * the reference interpreter, against the same computation written directly
 * in GLSL and run through kiln, side by side in one run.
 *
 * The kernels are tests/wave/kernels/bench.cl's, compiled by clang for
 * gfx900 into the build's tests/data/wave/bench.o (KILN_TEST_DATA, or the
 * build tree's own): saxpy (y = a * x + y, a float a work-item: memory
 * bound), scale (out = in * k + 1, a uint: memory bound) and poly (64 steps
 * of a polynomial a work-item: computing). Each way does what a user's
 * call does end to end: a level's kiln_wave_run (its memory packed and
 * uploaded, the dispatch, the results read back), the hand GLSL's upload
 * of its inputs, submit and wait, and readback of its output. Figures, per
 * kernel: each level's first run on a fresh context (its translation and
 * compile included) and its steady run, the hand GLSL's run, the
 * reference's run (on fewer items where the whole would take long: its
 * time scaled per item), each level's ratio to hand and the fastest
 * level's. Rounds take the ways in turn, as the other benchmarks do, and
 * each figure is the median of its rounds. Every level's outputs must
 * equal the reference's bit for bit (checked once per kernel); anything
 * else is an error. The ratios order auto's levels (src/wave/level.c).
 *
 *   bench_wave [--items N] [--rounds R] [--quick]
 *
 * Goals: the Wavefront level within 8x of hand GLSL on the memory-bound
 * kernels (the wave levels, part A) and the fastest valid level within 2x
 * (part B), on the GPU; every figure is reported.
 */
#define BENCH_NAME "bench_wave"
#include "bench.h"

#include <inttypes.h>
#include <unistd.h>

#include "kiln_wave.h"

#ifndef BENCH_WAVE_DATA
#define BENCH_WAVE_DATA "tests/data"
#endif

static const char *hand_saxpy = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) buffer Y { float y[]; };\n"
                                "layout(std430, binding = 1) readonly buffer X { float x[]; };\n"
                                "void main() { uint g = gl_GlobalInvocationID.x;\n"
                                "  y[g] = fma(uintBitsToFloat(kiln_param(0)), x[g], y[g]); }\n";
static const char *hand_scale = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
                                "layout(std430, binding = 1) readonly buffer I { uint i[]; };\n"
                                "void main() { uint g = gl_GlobalInvocationID.x; o[g] = i[g] * kiln_param(0) + 1u; }\n";
static const char *hand_poly = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) writeonly buffer O { float o[]; };\n"
                               "layout(std430, binding = 1) readonly buffer I { float i[]; };\n"
                               "void main() { uint g = gl_GlobalInvocationID.x; float x = i[g], acc = 0.0;\n"
                               "  for (int k = 0; k < 64; k++) acc = fma(acc, x, 0.25);\n"
                               "  o[g] = acc; }\n";

/* The GPU levels, each against the hand GLSL (every kernel here is valid
 * at each). */
static const char *const levels[] = {"lane", "wavefront", "subgroup"};
#define NLEVELS 3

struct kernel {
    const char *name, *hand;
    bool in_out;          /* argument 0 is read and written (saxpy) */
    bool has_value;       /* a third argument: a u32 or f32 value */
    uint32_t value;
};

static const struct kernel kernels[] = {
    {"saxpy", NULL, true, true, 0x3fc00000u},   /* a = 1.5 */
    {"scale", NULL, false, true, 2654435761u},
    {"poly", NULL, false, false, 0},
};

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return p;
}

static uint32_t rnd_state = 99;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1664525u + 1013904223u;
    return rnd_state >> 8;
}

/* Inputs: whole eighths for the floats (normal, either sign), any bits
 * for scale. */
static void fill(const struct kernel *k, uint32_t *a0, uint32_t *a1, uint32_t items)
{
    rnd_state = 99;
    for (uint32_t i = 0; i < items; i++) {
        float f = (float)((int)(rnd() % 2001) - 1000) / 8.0f, g = (float)((int)(rnd() % 201) - 100) / 128.0f;
        if (!strcmp(k->name, "scale")) {
            a0[i] = 0;
            a1[i] = rnd() ^ rnd() << 16;
        } else if (!strcmp(k->name, "poly")) {
            a0[i] = 0;
            memcpy(&a1[i], &g, 4);
        } else {
            memcpy(&a0[i], &f, 4);
            memcpy(&a1[i], &g, 4);
        }
    }
}

/* One run at level (NULL: the reference) over items; its wall time. */
static uint64_t wave_run(kiln_wave_code *code, uint32_t kernel, const struct kernel *k, kiln_context ctx,
                         const char *level, uint32_t *a0, uint32_t *a1, uint32_t items)
{
    kiln_wave_value args[3] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = a0, .size = 4ull * items},
                               {.kind = KILN_WAVE_VALUE_BUFFER, .data = a1, .size = 4ull * items},
                               {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
    memcpy(args[2].bytes, &k->value, 4);
    kiln_wave_result *res = NULL;
    uint64_t t0 = now_ns();
    kiln_result r = kiln_wave_run(code,
                                  &(kiln_wave_run_desc){.level = level, .kernel = kernel, .groups = {items / 64, 1, 1},
                                                        .block = {64, 1, 1}, .args = args,
                                                        .arg_count = k->has_value ? 3 : 2, .context = ctx},
                                  &res);
    uint64_t t = now_ns() - t0;
    if (r != KILN_OK)
        die("%s at %s: %s", k->name, level ? level : "reference", kiln_wave_last_error());
    kiln_wave_result_destroy(res);
    return t;
}

struct hand {
    kiln_buffer b0, b1;
    kiln_program prog;
    kiln_scheme sch;
};

static void hand_make(kiln_context ctx, const struct kernel *k, const char *src, uint32_t items, struct hand *h)
{
    KCHECK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4ull * items}, &h->b0));
    KCHECK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4ull * items}, &h->b1));
    KCHECK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = k->name}, &h->prog));
    KCHECK(kiln_program_wait(ctx, h->prog));
    KCHECK(kiln_scheme_create(ctx, NULL, &h->sch));
    kiln_binding b[2] = {{.binding = 0, .buffer = h->b0}, {.binding = 1, .buffer = h->b1}};
    kiln_node n;
    KCHECK(kiln_scheme_add_node(ctx, h->sch,
                                &(kiln_node_desc){.program = h->prog, .bindings = b, .binding_count = 2,
                                                  .groups = {items / 64, 1, 1}, .params = &k->value,
                                                  .param_count = k->has_value ? 1 : 0},
                                &n));
}

/* The hand GLSL's run: inputs up, the dispatch, the output back. */
static uint64_t hand_run(kiln_context ctx, const struct kernel *k, struct hand *h, uint32_t *a0, uint32_t *a1,
                         uint32_t items)
{
    uint64_t t0 = now_ns();
    if (k->in_out)
        KCHECK(kiln_buffer_upload(ctx, h->b0, 0, a0, 4ull * items));
    KCHECK(kiln_buffer_upload(ctx, h->b1, 0, a1, 4ull * items));
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(ctx, h->sch, &t));
    KCHECK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    KCHECK(kiln_buffer_readback(ctx, h->b0, 0, a0, 4ull * items));
    return now_ns() - t0;
}

int main(int argc, char **argv)
{
    uint32_t items = 1u << 20, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            items = 1u << 12, rounds = 1;
        else if (!strcmp(argv[i], "--items") && i + 1 < argc)
            items = (uint32_t)bench_parse_num("--items", argv[++i], 64, 1u << 24) / 64 * 64;
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = (uint32_t)bench_parse_num("--rounds", argv[++i], 1, 1000);
        else
            die("usage: bench_wave [--items N] [--rounds R] [--quick]");
    }
    char path[1024];
    const char *data = getenv("KILN_TEST_DATA");
    snprintf(path, sizeof path, "%s/wave/bench.o", data && *data ? data : BENCH_WAVE_DATA);
    size_t len;
    uint8_t *bytes = read_file(path, &len);
    if (!bytes) {
        printf("bench_wave: no %s (the build makes it where clang has the amdgcn target): skipped\n", path);
        return 77;
    }
    kiln_wave_code *code;
    if (kiln_wave_code_load(bytes, len, &code) != KILN_OK)
        die("%s: %s", path, kiln_wave_last_error());
    free(bytes);
    kiln_context ctx;
    KCHECK(kiln_context_create(&(kiln_context_desc){.specialization = -1}, &ctx));
    kiln_caps caps;
    KCHECK(kiln_context_caps(ctx, &caps));
    printf("bench_wave on %s: %u items a kernel, %u rounds\n", caps.device_name, items, rounds);
    uint32_t *a0 = malloc(4ull * items), *a1 = malloc(4ull * items), *r0 = malloc(4ull * items),
             *r1 = malloc(4ull * items);
    uint64_t *tl[NLEVELS], *th = calloc(rounds, sizeof *th);
    for (int l = 0; l < NLEVELS; l++)
        if (!(tl[l] = calloc(rounds, sizeof *tl[l])))
            die("out of memory");
    if (!a0 || !a1 || !r0 || !r1 || !th)
        die("out of memory");
    const char *hands[] = {hand_saxpy, hand_scale, hand_poly};
    bool missed_wavefront = false, missed_fastest = false;
    for (size_t ki = 0; ki < sizeof kernels / sizeof kernels[0]; ki++) {
        const struct kernel *k = &kernels[ki];
        uint32_t kernel;
        if (kiln_wave_kernel_find(code, k->name, &kernel) != KILN_OK)
            die("%s", kiln_wave_last_error());
        /* the reference on at most 64 Ki items, scaled per item */
        uint32_t ref_items = items < (1u << 16) ? items : 1u << 16;
        fill(k, r0, r1, ref_items);
        double ref = (double)wave_run(code, kernel, k, ctx, NULL, r0, r1, ref_items) * items / ref_items;
        /* each GPU level: first run on a fresh context, then steady */
        double first[NLEVELS];
        for (int l = 0; l < NLEVELS; l++) {
            kiln_context fresh;
            KCHECK(kiln_context_create(&(kiln_context_desc){.specialization = -1, .archive = -1}, &fresh));
            fill(k, a0, a1, items);
            first[l] = (double)wave_run(code, kernel, k, fresh, levels[l], a0, a1, items);
            kiln_context_destroy(fresh);
            fill(k, a0, a1, ref_items);
            (void)wave_run(code, kernel, k, ctx, levels[l], a0, a1, ref_items);
            if (memcmp(a0, r0, 4ull * ref_items))
                die("%s: the %s level's output differs from the reference's", k->name, levels[l]);
        }
        struct hand h;
        hand_make(ctx, k, hands[ki], items, &h);
        for (uint32_t r = 0; r < rounds; r++) {
            for (int way = 0; way <= NLEVELS; way++) {   /* the ways in turn, a round starting at another */
                int w = (int)((way + r) % (NLEVELS + 1));
                fill(k, a0, a1, items);
                if (w < NLEVELS)
                    tl[w][r] = wave_run(code, kernel, k, ctx, levels[w], a0, a1, items);
                else
                    th[r] = hand_run(ctx, k, &h, a0, a1, items);
            }
        }
        double hd = bench_median(th, rounds), best = 0;
        printf("%-6s hand GLSL %8.1f ms; reference %10.1f ms (%.1fx hand)\n", k->name, hd / 1e6, ref / 1e6, ref / hd);
        for (int l = 0; l < NLEVELS; l++) {
            double w = bench_median(tl[l], rounds);
            printf("%-6s %-9s first %9.1f ms, steady %9.1f ms: %6.2fx hand; compile and first run less a steady "
                   "run %.1f ms\n",
                   k->name, levels[l], first[l] / 1e6, w / 1e6, w / hd, (first[l] - w) / 1e6);
            best = l == 0 || w < best ? w : best;
            if (!strcmp(levels[l], "wavefront") && ki < 2 && w / hd > 8.0)
                missed_wavefront = true;
        }
        printf("%-6s fastest valid level %.2fx hand\n", k->name, best / hd);
        if (best / hd > 2.0)
            missed_fastest = true;
        kiln_scheme_destroy(ctx, h.sch);
        kiln_program_destroy(ctx, h.prog);
        kiln_buffer_destroy(ctx, h.b0);
        kiln_buffer_destroy(ctx, h.b1);
    }
    printf("goal: wavefront within 8x of hand GLSL on the memory-bound kernels (saxpy, scale; the GPU's figure): %s "
           "here\n",
           missed_wavefront ? "missed" : "met");
    printf("goal: the fastest valid level within 2x of hand GLSL (the GPU's figure): %s here\n",
           missed_fastest ? "missed" : "met");
    free(a0);
    free(a1);
    free(r0);
    free(r1);
    for (int l = 0; l < NLEVELS; l++)
        free(tl[l]);
    free(th);
    kiln_wave_code_destroy(code);
    kiln_context_destroy(ctx);
    return 0;
}
