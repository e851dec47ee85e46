/* SPDX-License-Identifier: MIT */
/*
 * bench_gen.h: the seeded program generator kiln's compile benchmarks share
 * (bench_compile, bench_archive). From a seed it writes distinct small
 * compute programs (20 to 60 lines of random op chains over one storage
 * buffer and kiln_param words) and optionally giants (long straight-line
 * bodies), each with constants of its own so that no two compile to the same
 * SPIR-V, plus a shuffled list to compile that may repeat some of them.
 * The same seed and sizes give the same text in every benchmark except the
 * comment naming the benchmark (BENCH_NAME), which kiln's compile keys see
 * like any other source byte. Include bench.h first.
 */
#ifndef KILN_BENCH_GEN_H
#define KILN_BENCH_GEN_H

#include <stdbool.h>

/* ---- randomness ------------------------------------------------------------------- */

static inline uint64_t rng_next(uint64_t *s)   /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static inline uint32_t rng_below(uint64_t *s, uint32_t n) { return (uint32_t)(rng_next(s) % n); }

/* A uniform double in [lo, hi). */
static inline double rng_const(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

/* ---- the generator ------------------------------------------------------------- */

struct text {
    char *p;
    size_t len, cap;
    uint32_t lines;
};

static inline void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void put(struct text *t, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof line)
        die("generator: a line too long");
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4096;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p)
            die("out of memory");
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, line, (size_t)n + 1);
    t->len += (size_t)n;
    for (int i = 0; i < n; i++)
        t->lines += line[i] == '\n';
}

/* One random statement over the float variables a and b (and g, a param). */
static inline void small_op(struct text *t, uint64_t *s, const char *ind, const char *a, const char *b)
{
    double c = rng_const(s, 0.05, 3.0);
    switch (rng_below(s, 12)) {
    case 0: put(t, "%s%s = %s * %.4f + %s;\n", ind, a, a, c, b); break;
    case 1: put(t, "%s%s = %s - %s * %.4f;\n", ind, b, b, a, c); break;
    case 2: put(t, "%s%s = max(%s, %s * %.4f);\n", ind, a, a, b, c); break;
    case 3: put(t, "%s%s = min(%s + %.4f, %s);\n", ind, b, b, c, a); break;
    case 4: put(t, "%s%s = fract(%s * %.4f) + %s;\n", ind, a, a, c, b); break;
    case 5: put(t, "%s%s = abs(%s) * %.4f + g;\n", ind, b, b, c); break;
    case 6: put(t, "%s%s = sqrt(abs(%s) + %.4f);\n", ind, a, a, c); break;
    case 7: put(t, "%s%s = sin(%s * %.4f) + %s;\n", ind, b, a, c, b); break;
    case 8: put(t, "%s%s = clamp(%s, -%.4f, %.4f) + %s * g;\n", ind, a, a, c, c, b); break;
    case 9: put(t, "%s%s = exp2(-abs(%s) * %.4f) + %s;\n", ind, b, b, c, a); break;
    case 10:
        put(t, "%s%s = uintBitsToFloat((floatBitsToUint(%s) ^ %uu) & 0x7f7fffffu) + %s;\n", ind, a, a,
            (unsigned)(rng_next(s) & 0xffffu), b);
        break;
    default: put(t, "%sif (%s > %.4f) %s = %s * 0.5; else %s = %s + %.4f;\n", ind, a, c, a, a, b, b, c); break;
    }
}

/* A small program: 20 to 60 lines. `tag` makes its constants its own. */
static inline char *gen_small(uint64_t *s, uint32_t tag)
{
    struct text t = {0};
    static const unsigned sizes[] = {32, 64, 128, 256};
    uint32_t target = 20 + rng_below(s, 41);
    uint32_t fixed = 18;   /* the lines written below outside the op chains */
    uint32_t ops = target - fixed;
    uint32_t helper = ops / 3;
    put(&t, "#version 450\n");
    put(&t, "// " BENCH_NAME ": small program %u\n", tag);
    put(&t, "layout(local_size_x = %u) in;\n", sizes[rng_below(s, 4)]);
    put(&t, "layout(std430, binding = 0) buffer Data { float d[]; };\n");
    put(&t, "\n");
    put(&t, "float step_%u(float a, float b, float g) {\n", tag);
    for (uint32_t k = 0; k < helper; k++)
        small_op(&t, s, "    ", k % 2 ? "b" : "a", k % 2 ? "a" : "b");
    put(&t, "    return a + b;\n");
    put(&t, "}\n");
    put(&t, "\n");
    put(&t, "void main() {\n");
    put(&t, "    uint i = gl_GlobalInvocationID.x;\n");
    put(&t, "    uint n = kiln_param(0);\n");
    put(&t, "    if (i >= n) return;\n");
    put(&t, "    float g = kiln_paramf(1);\n");
    put(&t, "    float a = d[i];\n");
    put(&t, "    float b = d[(i + %uu) %% n];\n", 1 + rng_below(s, 1000));
    for (uint32_t k = helper; k < ops; k++)
        small_op(&t, s, "    ", k % 2 ? "b" : "a", k % 2 ? "a" : "b");
    put(&t, "    d[i] = step_%u(a, b, g) + %u.0;\n", tag, tag);
    put(&t, "}\n");
    if (t.lines != target)
        die("generator: small program %u has %u lines, meant %u", tag, t.lines, target);
    return t.p;
}

/* A giant: `lines` straight-line statements over 8 accumulators read from
 * the buffer, with a store every 50 lines, so nothing folds or dies. */
static inline char *gen_giant(uint64_t *s, uint32_t tag, uint32_t lines)
{
    struct text t = {0};
    put(&t, "#version 450\n");
    put(&t, "// " BENCH_NAME ": giant program %u, %u straight-line statements\n", tag, lines);
    put(&t, "layout(local_size_x = 64) in;\n");
    put(&t, "layout(std430, binding = 0) buffer Data { float d[]; };\n");
    put(&t, "void main() {\n");
    put(&t, "    uint i = gl_GlobalInvocationID.x;\n");
    put(&t, "    uint n = kiln_param(0);\n");
    put(&t, "    float g = kiln_paramf(1);\n");
    for (int k = 0; k < 8; k++)
        put(&t, "    float a%d = d[i + %du * n];\n", k, k);
    for (uint32_t k = 0; k < lines; k++) {
        unsigned dst = k % 8, x = (k * 3 + 1) % 8, y = (k * 5 + 2) % 8;
        double c = rng_const(s, 0.05, 2.0), e = rng_const(s, 0.05, 2.0);
        if (k % 50 == 49) {
            put(&t, "    d[i + %uu * n] = a%u;\n", 8 + k / 50, dst);
            continue;
        }
        switch (rng_below(s, 8)) {
        case 0: put(&t, "    a%u = a%u * %.4f + a%u * %.4f;\n", dst, dst, c, x, e); break;
        case 1: put(&t, "    a%u = fma(a%u, a%u, %.4f);\n", dst, x, y, c); break;
        case 2: put(&t, "    a%u = max(a%u - %.4f, a%u * g);\n", dst, x, c, y); break;
        case 3: put(&t, "    a%u = sin(a%u * %.4f) + a%u;\n", dst, x, c, dst); break;
        case 4: put(&t, "    a%u = sqrt(abs(a%u) + %.4f) * a%u;\n", dst, y, c, x); break;
        case 5: put(&t, "    a%u = clamp(a%u, -%.4f, %.4f) + a%u;\n", dst, dst, c, c + e, y); break;
        case 6: put(&t, "    a%u = fract(a%u * %.4f) - a%u * %.4f;\n", dst, x, c, y, e); break;
        default: put(&t, "    a%u = (a%u > a%u ? a%u : a%u * %.4f) + %.4f;\n", dst, x, y, dst, y, c, e); break;
        }
    }
    put(&t, "    d[i] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + %u.0;\n", tag);
    put(&t, "}\n");
    return t.p;
}

struct program {
    char *source;
    char name[32];
    bool giant;
};

struct workload {
    uint32_t distinct, dups, giants, giant_lines;
    struct program *progs;      /* the distinct programs */
    uint32_t *list;             /* indices into progs: the list to compile */
    uint32_t count;             /* list length */
    uint32_t giant_dups;        /* duplicates that copy a giant */
};

static inline void workload_make(struct workload *w, uint64_t seed)
{
    uint64_t s = seed;
    w->progs = calloc(w->distinct, sizeof *w->progs);
    w->count = w->distinct + w->dups;
    w->list = calloc(w->count, sizeof *w->list);
    if (!w->progs || !w->list)
        die("out of memory");
    /* Giants spread evenly over the distinct indices. */
    for (uint32_t g = 0; g < w->giants; g++)
        w->progs[(uint64_t)g * w->distinct / w->giants].giant = true;
    for (uint32_t i = 0; i < w->distinct; i++) {
        struct program *p = &w->progs[i];
        p->source = p->giant ? gen_giant(&s, i, w->giant_lines) : gen_small(&s, i);
        snprintf(p->name, sizeof p->name, "p%03u%s.comp", i, p->giant ? "-giant" : "");
    }
    for (uint32_t i = 0; i < w->distinct; i++)
        w->list[i] = i;
    for (uint32_t i = 0; i < w->dups; i++) {
        uint32_t pick = rng_below(&s, w->distinct);
        w->list[w->distinct + i] = pick;
        w->giant_dups += w->progs[pick].giant;
    }
    for (uint32_t i = w->count; i > 1; i--) {   /* Fisher-Yates */
        uint32_t j = rng_below(&s, i);
        uint32_t tmp = w->list[i - 1];
        w->list[i - 1] = w->list[j];
        w->list[j] = tmp;
    }
}

static inline kiln_program_desc desc_of(const struct program *p)
{
    return (kiln_program_desc){.source = p->source, .name = p->name};
}

#endif
