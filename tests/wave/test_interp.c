/* SPDX-License-Identifier: MIT */
/*
 * test_interp.c: the reference interpreter runs clang's gfx900 code for
 * OpenCL C kernels (tests/wave/kernels/, one .cl file each: loops with per-lane trip
 * counts, divergent and nested branches, select chains, atomics, LDS with
 * barriers across four waves, a __local argument, 64-bit addresses,
 * scratch arrays, a 2D grid, integer and float math, conversions) and
 * computes what the same kernels written in C compute, lane by lane. Also:
 * the linked (.so) form runs alike, a run past any of its budgets
 * (instructions; work, counted from the memory a group starts with and
 * every access, on a kernel with 128 KiB of scratch per work-item,
 * scratch.s; wall-clock time) stops with KILN_ERR_LIMIT naming it, while
 * runs within them are unaffected, an access past a buffer is an error
 * naming the address, the arguments are checked, and the observation
 * holds every lane's registers in its documented layout.
 *
 * Skipped (exit 77) where clang cannot compile for amdgcn.
 */
#include "kernels/kernels.h"

#include <math.h>

#include "test.h"
#include "wave/interp.h"
#include "wave/loader.h"
#include "wave/observe.h"

#define SOURCES 5
static struct wave_code codes[SOURCES];
static const char *const sources[SOURCES] = {"control", "memory", "math", "lanes", "more"};
static bool loaded[SOURCES];

static const struct wave_kernel *kernel(int src, const char *name)
{
    if (!loaded[src])
        return NULL;
    return wave_code_kernel(&codes[src], name);
}

static struct wave_value buf(void *p, size_t n) { return (struct wave_value){.kind = WAVE_VALUE_BUFFER, .data = p, .size = n}; }
static struct wave_value u32v(uint32_t v)
{
    struct wave_value x = {.kind = WAVE_VALUE_BYTES, .size = 4};
    memcpy(x.bytes, &v, 4);
    return x;
}
static struct wave_value f32v(float v)
{
    struct wave_value x = {.kind = WAVE_VALUE_BYTES, .size = 4};
    memcpy(x.bytes, &v, 4);
    return x;
}
static struct wave_value u64v(uint64_t v)
{
    struct wave_value x = {.kind = WAVE_VALUE_BYTES, .size = 8};
    memcpy(x.bytes, &v, 8);
    return x;
}

static kiln_result run(int src, const char *name, uint32_t gx, uint32_t gy, uint32_t bx, uint32_t by,
                       struct wave_value *args, uint32_t n)
{
    const struct wave_kernel *k = kernel(src, name);
    if (!k) {
        fprintf(stderr, "no kernel %s\n", name);
        return KILN_ERR_INVALID;
    }
    struct wave_run_desc d = {.code = &codes[src], .kernel = k, .groups = {gx, gy, 1}, .block = {bx, by, 1},
                              .args = args, .arg_count = n};
    struct wave_result res;
    kiln_result r = wave_run(&d, &res);
    wave_result_finish(&res);
    return r;
}

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* ---- control.cl ---------------------------------------------------------------- */

static uint32_t loop_sum_ref(uint32_t g, uint32_t n)
{
    uint32_t trips = (g * 7u) % n, acc = g;
    for (uint32_t i = 0; i < trips; i++)
        acc = acc * 31u + (i ^ g);
    return acc;
}

TEST(loop_sum)
{
    /* whole waves, and a block of 100: a second wave with 36 lanes */
    static const uint32_t blocks[] = {64, 100, 256};
    for (unsigned b = 0; b < 3; b++) {
        uint32_t n = 13, groups = 3, total = groups * blocks[b];
        uint32_t *out = calloc(total, 4);
        struct wave_value args[] = {buf(out, total * 4), u32v(n)};
        CHECK_OK(run(0, "loop_sum", groups, 1, blocks[b], 1, args, 2));
        int bad = 0;
        for (uint32_t g = 0; g < total; g++)
            bad += out[g] != loop_sum_ref(g, n);
        CHECK_EQ(bad, 0);
        free(out);
    }
}

static int32_t branches_ref(int32_t v)
{
    int32_t r;
    if (v < 0) {
        r = v < -100 ? v * 3 : -v;
    } else if (v & 1) {
        r = v >> 1;
        for (int i = 0; i < (v & 7); i++) {
            if (i == 5)
                break;
            if (i & 1)
                continue;
            r += i * v;
        }
    } else {
        r = v / 3 + v % 5;
    }
    return r;
}

TEST(branches)
{
    enum { N = 320 };
    int32_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = (int32_t)(rnd() % 601) - 300;
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in)};
    CHECK_OK(run(0, "branches", 5, 1, 64, 1, args, 2));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != branches_ref(in[i]);
    CHECK_EQ(bad, 0);
}

static uint32_t nested_ref(uint32_t g, uint32_t rows)
{
    uint32_t acc = 0;
    for (uint32_t i = 0; i < rows; i++) {
        if ((g + i) % 3 == 0)
            continue;
        for (uint32_t j = 0; j <= (g & 15); j++) {
            if (j * i > 40)
                break;
            acc += (i + 1) * (j ^ g);
        }
        if (acc > 100000u)
            break;
    }
    return acc;
}

TEST(nested)
{
    enum { N = 192 };
    uint32_t out[N];
    struct wave_value args[] = {buf(out, sizeof out), u32v(9)};
    CHECK_OK(run(0, "nested", 3, 1, 64, 1, args, 2));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != nested_ref(i, 9);
    CHECK_EQ(bad, 0);
}

TEST(selects)
{
    enum { N = 128 };
    float in[N], out[2 * N];
    for (int i = 0; i < N; i++)
        in[i] = (float)((int)(rnd() % 4001) - 2000) / 100.0f;
    in[0] = 0.0f, in[1] = -0.0f, in[2] = 1.0f, in[3] = 10.0f;
    float lo = -5.5f, hi = 7.25f;
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in), f32v(lo), f32v(hi)};
    CHECK_OK(run(0, "selects", 2, 1, 64, 1, args, 4));
    int bad = 0;
    for (uint32_t g = 0; g < N; g++) {
        float x = in[g];
        float y = x < lo ? lo : x > hi ? hi : x;
        int k = x < 0.0f ? -1 : x == 0.0f ? 0 : x < 1.0f ? 1 : x < 10.0f ? 2 : 3;
        bad += out[2 * g] != y || out[2 * g + 1] != (float)k + (g & 1 ? y : -y);
    }
    CHECK_EQ(bad, 0);
}

/* ---- memory.cl ------------------------------------------------------------------ */

TEST(atomics)
{
    enum { GROUPS = 5, N = GROUPS * 64 };
    uint32_t counters[5] = {0}, hist[16] = {0};
    int32_t minmax[2] = {INT32_MAX, INT32_MIN};
    struct wave_value args[] = {buf(counters, sizeof counters), buf(minmax, sizeof minmax), buf(hist, sizeof hist)};
    CHECK_OK(run(1, "atomics", GROUPS, 1, 64, 1, args, 3));
    uint32_t c[5] = {0}, h[16] = {0};
    int32_t mn = INT32_MAX, mx = INT32_MIN;
    for (uint32_t g = 0; g < N; g++) {
        c[0] += g, c[1] += 1, c[2] |= 1u << (g & 31), c[3] ^= g * 2654435761u;
        int32_t v = (int32_t)(g * 37u % 1001u) - 500;
        mn = v < mn ? v : mn, mx = v > mx ? v : mx;
        h[g % 16]++;
        if (g % 64 == 5 && c[4] == 0)
            c[4] = g;
    }
    for (int i = 0; i < 5; i++)
        CHECK_EQ(counters[i], c[i]);
    CHECK_EQ(minmax[0], mn);
    CHECK_EQ(minmax[1], mx);
    CHECK(!memcmp(hist, h, sizeof h));
}

TEST(reduce_lds_barriers)
{
    enum { GROUPS = 3, N = GROUPS * 256 };
    uint32_t in[N], out[GROUPS];
    for (int i = 0; i < N; i++)
        in[i] = rnd() & 0xffff;
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in)};
    CHECK_OK(run(1, "reduce", GROUPS, 1, 256, 1, args, 2));
    for (int g = 0; g < GROUPS; g++) {
        uint32_t s = 0;
        for (int i = 0; i < 256; i++)
            s += in[g * 256 + i];
        CHECK_EQ(out[g], s);
    }
    /* reqd_work_group_size is kept */
    CHECK_RESULT(run(1, "reduce", 1, 1, 128, 1, args, 2), KILN_ERR_INVALID);
    CHECK_MSG("requires workgroups of 256x1x1");
}

TEST(local_argument)
{
    enum { B = 128, GROUPS = 2 };
    int32_t data[B * GROUPS], orig[B * GROUPS];
    for (int i = 0; i < B * GROUPS; i++)
        data[i] = orig[i] = (int32_t)(rnd() % 1000);
    struct wave_value args[] = {buf(data, sizeof data), {.kind = WAVE_VALUE_LOCAL, .size = B * 4}};
    CHECK_OK(run(1, "reverse_local", GROUPS, 1, B, 1, args, 2));
    int bad = 0;
    for (int g = 0; g < GROUPS; g++)
        for (int t = 0; t < B; t++)
            bad += data[g * B + t] != orig[g * B + B - 1 - t] * 2 + 1;
    CHECK_EQ(bad, 0);
    /* too little LDS for the block: reads past the group's LDS are errors */
    args[1].size = 16;
    CHECK_RESULT(run(1, "reverse_local", 1, 1, B, 1, args, 2), KILN_ERR_INVALID);
    CHECK_MSG("LDS offset");
}

TEST(gather64)
{
    enum { N = 192 };
    uint32_t table[1024 + 1];
    uint64_t out[N];
    for (int i = 0; i < 1025; i++)
        table[i] = rnd();
    uint64_t stride = 0x123456789ull, bias = 0xfedcba9876543ull;
    struct wave_value args[] = {buf(out, sizeof out), buf(table, sizeof table), u64v(stride), u64v(bias)};
    CHECK_OK(run(1, "gather64", 3, 1, 64, 1, args, 4));
    int bad = 0;
    for (uint64_t g = 0; g < N; g++) {
        uint64_t idx = (g * stride + bias) & 1023;
        uint64_t wide = (uint64_t)table[idx] << 32 | table[idx + 1];
        bad += out[g] != wide + (g << 40) - idx * 3ull;
    }
    CHECK_EQ(bad, 0);
    /* a table too short: the read past it names its address */
    args[1].size = 64;
    CHECK_RESULT(run(1, "gather64", 3, 1, 64, 1, args, 4), KILN_ERR_INVALID);
    CHECK_MSG("outside every mapped region");
    CHECK_MSG("at address 0x4001");
}

TEST(grid2d)
{
    enum { W = 48, H = 8 };
    uint32_t out[W * H];
    memset(out, 0xff, sizeof out);
    struct wave_value args[] = {buf(out, sizeof out), u32v(W)};
    CHECK_OK(run(1, "grid2d", 3, 2, 16, 4, args, 2));
    int bad = 0;
    for (uint32_t y = 0; y < H; y++)
        for (uint32_t x = 0; x < W; x++)
            bad += out[y * W + x] != x * 1000u + y;
    CHECK_EQ(bad, 0);
}

TEST(private_array_scratch)
{
    enum { N = 128 };
    int32_t out[N];
    int32_t seed = -7;
    struct wave_value args[] = {buf(out, sizeof out), u32v((uint32_t)seed)};
    CHECK_OK(run(1, "private_array", 2, 1, 64, 1, args, 2));
    int bad = 0;
    for (uint32_t g = 0; g < N; g++) {
        int32_t a[24], s = 0;
        for (int i = 0; i < 24; i++)
            a[i] = seed * i + (int32_t)g;
        for (uint32_t i = 0; i < 24; i++)
            s += a[(i * 7 + g) % 24] * (int32_t)(i + 1);
        bad += out[g] != s;
    }
    CHECK_EQ(bad, 0);
}

/* ---- math.cl -------------------------------------------------------------------- */

TEST(int_math)
{
    enum { N = 256 };
    uint32_t a[N], b[N], out[12 * N];
    for (int i = 0; i < N; i++)
        a[i] = rnd(), b[i] = i % 4 == 0 ? rnd() % 100 : rnd();
    a[0] = 0x80000000u, b[0] = 0xffffffffu;   /* INT_MIN / -1: b | 1 keeps it -1 */
    a[0] = 0x80000001u;                        /* not INT_MIN: C would trap */
    struct wave_value args[] = {buf(out, sizeof out), buf(a, sizeof a), buf(b, sizeof b)};
    CHECK_OK(run(2, "int_math", 4, 1, 64, 1, args, 3));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        uint32_t x = a[g], y = b[g] | 1u, o[12];
        int32_t sx = (int32_t)x, sy = (int32_t)y;
        o[0] = x + y * 3u;
        o[1] = x * y;
        o[2] = (uint32_t)(((uint64_t)x * y) >> 32);
        o[3] = x / y;
        o[4] = x % y;
        o[5] = (uint32_t)(sx / sy);
        o[6] = (uint32_t)(sx % sy);
        o[7] = (x << (y & 31)) ^ (x >> (y & 15)) ^ (uint32_t)(sx >> (y & 31));
        o[8] = (uint32_t)__builtin_popcount(x) + (uint32_t)__builtin_clz(y) * 64u;
        o[9] = (x << (y & 31)) | (x >> ((32u - (y & 31)) & 31));
        o[10] = (uint32_t)((uint64_t)x * (uint64_t)y >> 16);
        o[11] = (uint32_t)(((int64_t)sx * (int64_t)sy) >> 33) + (x < y) + (sx < sy) * 2u;
        for (int k = 0; k < 12; k++)
            if (out[12 * g + k] != o[k] && bad++ < 5)
                fprintf(stderr, "int_math lane %d o[%d]: 0x%x, C 0x%x\n", g, k, out[12 * g + k], o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(float_math)
{
    enum { N = 192 };
    float a[N], b[N], out[8 * N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)((int32_t)(rnd() % 200001) - 100000) / 997.0f;
        b[i] = (float)((int32_t)(rnd() % 200001) - 100000) / 1009.0f;
        if (b[i] == 0)
            b[i] = 0.5f;
    }
    struct wave_value args[] = {buf(out, sizeof out), buf(a, sizeof a), buf(b, sizeof b)};
    CHECK_OK(run(2, "float_math", 3, 1, 64, 1, args, 3));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        float x = a[g], y = b[g], o[8];
        o[0] = x + y;
        o[1] = x * y - 1.5f;
        o[2] = fmaf(x, y, 0.25f);
        o[3] = x / y;
        o[4] = sqrtf(fabsf(x));
        o[5] = fminf(x, y) + fmaxf(x, y) * 2.0f;
        o[6] = floorf(x) + truncf(y) * 0.5f;
        o[7] = x > y ? x - y : y * 0.125f;
        for (int k = 0; k < 8; k++)
            if (memcmp(&out[8 * g + k], &o[k], 4) && bad++ < 5)
                fprintf(stderr, "float_math lane %d o[%d]: %a, C %a\n", g, k, out[8 * g + k], o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(conversions)
{
    enum { N = 128 };
    float in[N];
    int32_t oi[4 * N];
    float of[2 * N];
    double od[2 * N];
    for (int i = 0; i < N; i++)
        in[i] = (float)((int32_t)(rnd() % 200001) - 100000) / 77.0f;
    struct wave_value args[] = {buf(oi, sizeof oi), buf(of, sizeof of), buf(od, sizeof od), buf(in, sizeof in)};
    CHECK_OK(run(2, "conversions", 2, 1, 64, 1, args, 4));
    int bad = 0;
    for (uint32_t g = 0; g < N; g++) {
        float x = in[g];
        bad += oi[4 * g] != (int32_t)x;
        bad += oi[4 * g + 1] != (int32_t)(uint32_t)fabsf(x);
        bad += oi[4 * g + 2] != (int32_t)(int16_t)(int32_t)x;
        bad += oi[4 * g + 3] != (int32_t)(uint8_t)(int32_t)x;
        bad += of[2 * g] != (float)(int32_t)(g * 2654435761u);
        bad += of[2 * g + 1] != (float)(g * 2654435761u);
        double d = (double)x * 3.0 + (double)(int32_t)g;
        bad += od[2 * g] != d;
        bad += od[2 * g + 1] != (double)(int64_t)(d * 1000.0) + (double)(uint64_t)g;
    }
    CHECK_EQ(bad, 0);
}

/* ---- lanes.cl ------------------------------------------------------------------- */

TEST(lane_crossing)
{
    enum { N = 192 };
    uint32_t in[N], out[8 * N];
    for (int i = 0; i < N; i++)
        in[i] = rnd();
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in)};
    CHECK_OK(run(3, "lanes", 3, 1, 64, 1, args, 2));
    int bad = 0;
    for (uint32_t g = 0; g < N; g++) {
        uint32_t w = g / 64 * 64, l = g % 64, o[8];
        uint64_t ballot = 0;
        for (uint32_t k = 0; k < 64; k++)
            ballot |= (uint64_t)(in[w + k] & 1) << k;
        o[0] = in[w];
        o[1] = l;
        o[2] = in[w + (l ^ 1)];                           /* swizzle: and 31, or 0, xor 1 */
        o[3] = in[w + ((l + 5) & 63)];
        o[4] = l % 16 == 0 ? 0 : in[w + l - 1];           /* row_shr:1, bound_ctrl */
        o[5] = in[w + 7];
        o[6] = (uint32_t)ballot;
        o[7] = (uint32_t)(ballot >> 32);
        for (int k = 0; k < 8; k++)
            if (out[8 * g + k] != o[k] && bad++ < 5)
                fprintf(stderr, "lanes lane %u o[%d]: 0x%x, C 0x%x\n", g, k, out[8 * g + k], o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(half_precision)
{
    enum { N = 128 };
    float in[2 * N], out[6 * N];
    for (int i = 0; i < 2 * N; i++)
        in[i] = (float)((int32_t)(rnd() % 20001) - 10000) / 100.0f;
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in)};
    CHECK_OK(run(3, "halves", 2, 1, 64, 1, args, 2));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        _Float16 x = (_Float16)in[2 * g], y = (_Float16)in[2 * g + 1];
        _Float16 s = (_Float16)(x + y), p = (_Float16)(x * y), m = x < y ? x : y;
        float o[6] = {(float)s, (float)p, (float)m, (float)p, (float)p,
                      (float)(int16_t)(float)x + (float)(uint16_t)(float)(y > 0 ? y : (_Float16)-y)};
        for (int k = 0; k < 6; k++)
            if (memcmp(&out[6 * g + k], &o[k], 4) && bad++ < 5)
                fprintf(stderr, "halves lane %d o[%d]: %a, C %a\n", g, k, out[6 * g + k], o[k]);
    }
    CHECK_EQ(bad, 0);
}

/* ---- more.cl -------------------------------------------------------------------- */

static uint32_t mix(uint32_t a, uint32_t b)
{
    uint32_t r = a;
    for (uint32_t i = 0; i < (b & 7u) + 1u; i++)
        r = (r ^ (r >> 3)) * 0x9e3779b1u + b;
    return r;
}

TEST(calls_and_stack)
{
    enum { N = 128 };
    uint32_t out[N];
    struct wave_value args[] = {buf(out, sizeof out)};
    CHECK_OK(run(4, "calls", 2, 1, 64, 1, args, 1));
    int bad = 0;
    for (uint32_t g = 0; g < N; g++) {
        uint32_t t[10], s = 0;
        for (uint32_t i = 0; i < 10; i++)
            t[i] = mix(g, i);
        for (uint32_t i = 0; i < 10; i++)
            s += t[(i * 3 + g) % 10] * (i + 1);
        bad += out[g] != mix(g, g * 3u) + s;
    }
    CHECK_EQ(bad, 0);
}

TEST(wide_division)
{
    enum { N = 128 };
    uint64_t a[N], b[N], out[4 * N];
    for (int i = 0; i < N; i++) {
        a[i] = (uint64_t)rnd() << 32 | rnd();
        b[i] = i % 3 == 0 ? rnd() % 1000 : i % 3 == 1 ? (uint64_t)rnd() << 32 | rnd() : (uint64_t)rnd();
    }
    struct wave_value args[] = {buf(out, sizeof out), buf(a, sizeof a), buf(b, sizeof b)};
    CHECK_OK(run(4, "wide_div", 2, 1, 64, 1, args, 3));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        uint64_t x = a[g], y = b[g] | 1;
        int64_t sx = (int64_t)x, sy = (int64_t)y;
        bad += out[4 * g] != x / y || out[4 * g + 1] != x % y;
        if (!(sx == INT64_MIN && sy == -1))
            bad += out[4 * g + 2] != (uint64_t)(sx / sy) || out[4 * g + 3] != (uint64_t)(sx % sy);
    }
    CHECK_EQ(bad, 0);
}

TEST(double_precision)
{
    enum { N = 128 };
    double a[N], b[N], out[4 * N];
    for (int i = 0; i < N; i++) {
        a[i] = (double)((int32_t)rnd()) / 4096.0 + (double)rnd() / 4294967296.0;
        b[i] = (double)((int32_t)(rnd() % 2000001) - 1000000) / 999.0;
        if (b[i] == 0)
            b[i] = 1.25;
    }
    struct wave_value args[] = {buf(out, sizeof out), buf(a, sizeof a), buf(b, sizeof b)};
    CHECK_OK(run(4, "f64_math", 2, 1, 64, 1, args, 3));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        double x = a[g], y = b[g], o[4];
        o[0] = x / y;
        o[1] = sqrt(fabs(x));
        o[2] = fma(x, y, -1.0) + floor(y);
        o[3] = x < y ? fmin(x, y * 2.0) : fmax(x, -y);
        for (int k = 0; k < 4; k++)
            if (memcmp(&out[4 * g + k], &o[k], 8) && bad++ < 5)
                fprintf(stderr, "f64_math lane %d o[%d]: %a, C %a\n", g, k, out[4 * g + k], o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(lds_atomics)
{
    enum { GROUPS = 3, N = GROUPS * 128 };
    uint32_t in[N], out[GROUPS * 17];
    for (int i = 0; i < N; i++)
        in[i] = rnd() % 100000;
    struct wave_value args[] = {buf(out, sizeof out), buf(in, sizeof in)};
    CHECK_OK(run(4, "lds_histogram", GROUPS, 1, 128, 1, args, 2));
    for (int g = 0; g < GROUPS; g++) {
        uint32_t h[16] = {0}, top = 0;
        for (int t = 0; t < 128; t++) {
            h[in[g * 128 + t] % 16]++;
            top = in[g * 128 + t] > top ? in[g * 128 + t] : top;
        }
        CHECK(!memcmp(&out[g * 17], h, sizeof h));
        CHECK_EQ(out[g * 17 + 16], top);
    }
}

TEST(small_integers)
{
    enum { N = 128 };
    uint8_t ib[N + 1], ob[N];
    int16_t is[N + 1], os[2 * N];
    for (int i = 0; i <= N; i++)
        ib[i] = (uint8_t)rnd(), is[i] = (int16_t)rnd();
    struct wave_value args[] = {buf(ob, sizeof ob), buf(os, sizeof os), buf(ib, sizeof ib), buf(is, sizeof is)};
    CHECK_OK(run(4, "small_types", 2, 1, 64, 1, args, 4));
    int bad = 0;
    for (int g = 0; g < N; g++) {
        uint8_t a = ib[g], b = ib[g + 1];
        int16_t c = is[g], d = is[g + 1];
        bad += ob[g] != (uint8_t)(a * b + (a >> 2));
        bad += os[2 * g] != (int16_t)(c * d - (int16_t)a);
        bad += os[2 * g + 1] != (c < d ? (int16_t)(c >> 3) : (int16_t)(d / (int16_t)((a & 7) + 1)));
    }
    CHECK_EQ(bad, 0);
}

TEST(compare_and_swap_loop)
{
    enum { N = 256 };
    float in[N], acc[4] = {0};
    float want[4] = {0};
    for (int i = 0; i < N; i++) {
        in[i] = (float)(rnd() % 101);   /* small integers: every order of the sums is exact */
        want[i % 4] += in[i];
    }
    struct wave_value args[] = {buf(acc, sizeof acc), buf(in, sizeof in)};
    CHECK_OK(run(4, "float_cas", 4, 1, 64, 1, args, 2));
    CHECK(!memcmp(acc, want, sizeof want));
}

/* ---- modifiers.s ---------------------------------------------------------------- */

TEST(dpp_sdwa_gpr_idx)
{
    char path[700];
    REQUIRE(kt_assemble("modifiers", path, sizeof path) == 0);
    size_t len;
    uint8_t *bytes = kt_read(path, &len);
    REQUIRE(bytes);
    struct wave_code c;
    REQUIRE_OK(wave_code_load(bytes, len, &c));
    free(bytes);
    uint32_t out[8 * 64];
    struct wave_value arg = buf(out, sizeof out);
    struct wave_run_desc d = {.code = &c, .kernel = wave_code_kernel(&c, "k"), .groups = {1, 1, 1},
                              .block = {64, 1, 1}, .args = &arg, .arg_count = 1};
    struct wave_result res;
    CHECK_OK(wave_run(&d, &res));
    wave_result_finish(&res);
    int bad = 0;
    for (uint32_t l = 0; l < 64; l++) {
        uint32_t v1[64], row = l & ~15u, in_row = l & 15u, o[8];
        for (uint32_t k = 0; k < 64; k++)
            v1[k] = 3 * k + 100;
        o[0] = v1[(l & ~3u) + (3 - (l & 3))];                           /* quad_perm:[3,2,1,0] */
        o[1] = in_row + 1 < 16 ? v1[l + 1] : 7;                          /* row_shl:1, old value kept */
        o[2] = l == 0 ? 0 : v1[l - 1];                                   /* wave_shr:1 bound_ctrl:0 */
        o[3] = (row == 16 || row == 48) ? v1[row - 1] : 7;               /* row_bcast:15 row_mask:0xa */
        uint32_t sum = ((0x11223344u + l) & 0xff) + 0x5566u;
        o[4] = (0xaabbccddu & ~0xff00u) | (sum & 0xff) << 8;             /* BYTE_1, preserve */
        o[5] = 0x00110000u;                                              /* sext(BYTE_3) into WORD_1 */
        o[6] = 0x55667788u;                                              /* v1 read as v3 by gpr_idx 2 */
        o[7] = 62;                                                       /* s_movrels: s6 + m0 2 = s8 */
        for (int k = 0; k < 8; k++)
            if (out[8 * l + k] != o[k] && bad++ < 5)
                fprintf(stderr, "modifiers lane %u v%d: 0x%x, expected 0x%x\n", l, 10 + k, out[8 * l + k], o[k]);
    }
    CHECK_EQ(bad, 0);
    wave_code_finish(&c);
}

/* ---- oracle.s: the interpreter's own defects, fixed ------------------------------ */

/* Runs kernel `name` of the hand-written FILE.s over one wave, its one
 * argument a buffer of `words` dwords (out). false when it did not run. */
static bool run_asm_wave(const char *file, const char *name, uint32_t *out, size_t words)
{
    char path[700];
    if (kt_assemble(file, path, sizeof path) != 0)
        return false;
    size_t len;
    uint8_t *bytes = kt_read(path, &len);
    struct wave_code c;
    bool ok = bytes && wave_code_load(bytes, len, &c) == KILN_OK;
    free(bytes);
    if (!ok)
        return false;
    struct wave_value arg = buf(out, words * 4);
    struct wave_run_desc d = {.code = &c, .kernel = wave_code_kernel(&c, name), .groups = {1, 1, 1},
                              .block = {64, 1, 1}, .args = &arg, .arg_count = 1};
    struct wave_result res;
    ok = d.kernel && wave_run(&d, &res) == KILN_OK;
    if (d.kernel)
        wave_result_finish(&res);
    wave_code_finish(&c);
    return ok;
}

/* Each of oracle.s's two kernels (MODE.IEEE on and off) against what the
 * ISA says, lane by lane: DPP with bound_ctrl where src1 is src0's
 * register, VOP3's clamp on integer adds and subtracts, min and max of a
 * signalling NaN. */
static void oracle_kernel(const char *name, bool ieee)
{
    uint32_t out[12 * 64];
    REQUIRE(run_asm_wave("oracle", name, out, 12 * 64));
    int bad = 0;
    for (uint32_t l = 0; l < 64; l++) {
        uint32_t v1 = 3 * l + 100, prev = 3 * (l - 1) + 100, o[12];
        o[0] = l == 0 ? v1 : prev + v1;                                  /* wave_shr:1: src0 0, src1 v1 */
        o[1] = (l & 15) == 0 ? v1 : prev + v1;                           /* row_shr:1 likewise */
        o[2] = l >= 32 ? UINT32_MAX : 0xffffffe0u + l;                   /* v_add_u32 clamp */
        o[3] = l < 32 ? 0 : l - 32;                                      /* v_sub_u32 clamp */
        o[4] = o[2];                                                     /* v_add_co_u32 clamp */
        /* v_add_i32 clamp of 0x7ffffff0 + l (negative from lane 16) and 8:
         * saturates only where the signed sum overflows */
        o[5] = l >= 8 && l < 16 ? 0x7fffffffu : 0x7ffffff8u + l;
        o[6] = l >= 31 ? 0xffffu : 0xffe0u + l;                          /* v_add_u16 clamp */
        o[7] = ieee ? 0x7fc00001u : 0x3f800000u;                         /* max(sNaN, 1.0) */
        o[8] = ieee ? 0x7fc00001u : 0x3f800000u;                         /* min(1.0, sNaN) */
        o[9] = 0x40000000u;                                              /* max(2.0, qNaN) */
        o[10] = l - 32;                                                  /* v_sub_u32, wraps */
        o[11] = 0xffffffe0u + l;                                         /* v_add_co_u32, wraps */
        for (int k = 0; k < 12; k++)
            if (out[12 * l + k] != o[k] && bad++ < 8)
                fprintf(stderr, "oracle %s lane %u v%d: 0x%x, expected 0x%x\n", name, l, 10 + k, out[12 * l + k],
                        o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(oracle_in_ieee_mode) { oracle_kernel("ieee", true); }
TEST(oracle_in_non_ieee_mode) { oracle_kernel("noieee", false); }

/* Each of oracle2.s's two kernels (MODE.FP_DENORM flushing denormals of
 * every precision, and keeping them) against what the ISA says, lane by
 * lane: denormal sources and results of f32, f16 and f64 multiplies, DPP
 * row_ror's direction, v_fract of a NaN, v_med3 of a signalling NaN. */
static void oracle2_kernel(const char *name, bool flush)
{
    uint32_t out[14 * 64];
    REQUIRE(run_asm_wave("oracle2", name, out, 14 * 64));
    int bad = 0;
    for (uint32_t l = 0; l < 64; l++) {
        uint32_t row = l & ~15u, o[14];
        o[0] = flush ? 0 : 0x00400000u;                  /* 1.0 * denormal 2^-127 */
        o[1] = flush ? 0 : 0x00400000u;                  /* 0.5 * 2^-126: a denormal result */
        o[2] = flush ? 0x80000000u : 0x80400000u;        /* 0.5 * -2^-126: flushed to -0 */
        o[3] = flush ? 0 : 0x200u;                       /* v_mul_f16 1.0 * denormal half */
        o[4] = 3 * (row + ((l - 1) & 15)) + 100;         /* row_ror:1: lane l - 1 of the row */
        o[5] = 0x7fc00000u;                              /* fract(qNaN) */
        o[6] = 0x40000000u;                              /* med3(sNaN, 1.0, 2.0) */
        o[7] = 3 * (row + ((l - 15) & 15)) + 100;        /* row_ror:15: lane l + 1 of the row */
        o[8] = flush ? 0 : UINT32_MAX;                   /* v_mul_f64 1.0 * largest denormal */
        o[9] = flush ? 0 : 0xfffffu;
        o[10] = flush ? 0 : 0x200u;                      /* v_pk_mul_f16: both halves */
        o[11] = flush ? 0 : 0x00400000u;                 /* v_max_f32 x, x of a denormal */
        o[12] = 1;                                       /* v_cmp_class_f32: denormal */
        o[13] = 1;                                       /* v_cmp_class_f16: denormal */
        for (int k = 0; k < 14; k++)
            if (out[14 * l + k] != o[k] && bad++ < 8)
                fprintf(stderr, "oracle2 %s lane %u v%d: 0x%x, expected 0x%x\n", name, l, 10 + k, out[14 * l + k],
                        o[k]);
    }
    CHECK_EQ(bad, 0);
}

TEST(oracle2_denormals_flushed) { oracle2_kernel("flush", true); }
TEST(oracle2_denormals_kept) { oracle2_kernel("keep", false); }

/* ---- the machine --------------------------------------------------------------- */

TEST(linked_object_runs_alike)
{
    char path[700];
    REQUIRE(kt_compile("control", 1, path, sizeof path) == 0);
    size_t len;
    uint8_t *bytes = kt_read(path, &len);
    REQUIRE(bytes);
    struct wave_code so;
    REQUIRE_OK(wave_code_load(bytes, len, &so));
    free(bytes);
    CHECK(!so.relocatable);
    uint32_t out[128];
    struct wave_value args[] = {buf(out, sizeof out), u32v(11)};
    struct wave_run_desc d = {.code = &so, .kernel = wave_code_kernel(&so, "loop_sum"), .groups = {2, 1, 1},
                              .block = {64, 1, 1}, .args = args, .arg_count = 2};
    struct wave_result res;
    CHECK_OK(wave_run(&d, &res));
    wave_result_finish(&res);
    int bad = 0;
    for (uint32_t g = 0; g < 128; g++)
        bad += out[g] != loop_sum_ref(g, 11);
    CHECK_EQ(bad, 0);
    wave_code_finish(&so);
}

TEST(budget)
{
    uint32_t out[64];
    struct wave_value args[] = {buf(out, sizeof out), u32v(0x7fffffff)};
    const struct wave_kernel *k = kernel(0, "loop_sum");
    REQUIRE(k);
    struct wave_run_desc d = {.code = &codes[0], .kernel = k, .groups = {1, 1, 1}, .block = {64, 1, 1},
                              .args = args, .arg_count = 2, .max_instructions = 1000};
    struct wave_result res;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("budget of 1000 instructions");
    CHECK_MSG("kernel 'loop_sum'");
    CHECK_EQ(res.instructions, 1001);
    wave_result_finish(&res);
}

/* scratch.s's big_scratch: what a group of 64 starts with zeroed (8 MiB of
 * scratch, a 64 KiB register file) and what its wave moves (s_load_dwordx2,
 * five scratch accesses and a global store of a dword per lane). */
#define BIG_GROUP_BYTES (131072ull * 64 + 65536)
#define BIG_WAVE_MOVED (8ull + 6 * 256)
#define BIG_WAVE_INSTRUCTIONS 15

static bool big_loaded;
static struct wave_code big;

static const struct wave_kernel *big_scratch(void)
{
    if (!big_loaded) {
        char path[700];
        size_t len;
        uint8_t *bytes = kt_assemble("scratch", path, sizeof path) == 0 ? kt_read(path, &len) : NULL;
        big_loaded = bytes && wave_code_load(bytes, len, &big) == KILN_OK;
        free(bytes);
    }
    return big_loaded ? wave_code_kernel(&big, "big_scratch") : NULL;
}

TEST(work_budget)
{
    /* 100,000 groups of 128 KiB of scratch per work-item, 8256 units of
     * work each as it starts: a budget of 40,000 lets four run and stops
     * the fifth before its scratch is cleared */
    const struct wave_kernel *k = big_scratch();
    REQUIRE(k);
    uint32_t out[64];
    struct wave_value arg = buf(out, sizeof out);
    struct wave_run_desc d = {.code = &big, .kernel = k, .groups = {100000, 1, 1}, .block = {64, 1, 1},
                              .args = &arg, .arg_count = 1, .max_work = 40000};
    struct wave_result res;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("work budget of 40000 units");
    CHECK_MSG("kernel 'big_scratch', group (4,0,0), as it starts");
    CHECK_EQ(res.waves, 4);
    CHECK_EQ(res.instructions, 4 * BIG_WAVE_INSTRUCTIONS);
    CHECK(res.bytes == 4 * (BIG_GROUP_BYTES + BIG_WAVE_MOVED));
    wave_result_finish(&res);
    /* within a wave: loop_sum's instructions and the bytes they move, the
     * instruction budget far off; the message names the wave and its pc */
    uint32_t sums[64];
    struct wave_value args[] = {buf(sums, sizeof sums), u32v(0x7fffffff)};
    d = (struct wave_run_desc){.code = &codes[0], .kernel = kernel(0, "loop_sum"), .groups = {1, 1, 1},
                               .block = {64, 1, 1}, .args = args, .arg_count = 2, .max_work = 1000};
    REQUIRE(d.kernel);
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("work budget of 1000 units");
    CHECK_MSG("kernel 'loop_sum', group (0,0,0) wave 0, at image offset");
    CHECK(res.instructions < 1000 && res.instructions + res.bytes / WAVE_WORK_UNIT_BYTES > 1000);
    wave_result_finish(&res);
}

TEST(budgets_leave_runs_within_them)
{
    /* the defaults, shown by wave_run_defaults */
    struct wave_run_desc dflt = wave_run_defaults(&(struct wave_run_desc){.max_work = 7});
    CHECK(dflt.max_instructions == WAVE_DEFAULT_MAX_INSTRUCTIONS);
    CHECK(dflt.max_work == 7);
    CHECK(dflt.max_seconds == WAVE_DEFAULT_MAX_SECONDS);
    CHECK_EQ(dflt.groups[2], 1);
    /* big_scratch under the default budgets: every group starts with its
     * scratch zeroed (the last dword the group before wrote reads 0), and
     * the bytes are counted exactly */
    const struct wave_kernel *k = big_scratch();
    REQUIRE(k);
    uint32_t out[64];
    struct wave_value arg = buf(out, sizeof out);
    struct wave_run_desc d = {.code = &big, .kernel = k, .groups = {6, 1, 1}, .block = {64, 1, 1}, .args = &arg,
                              .arg_count = 1};
    struct wave_result res;
    CHECK_OK(wave_run(&d, &res));
    CHECK_EQ(res.instructions, 6 * BIG_WAVE_INSTRUCTIONS);
    CHECK(res.bytes == 6 * (BIG_GROUP_BYTES + BIG_WAVE_MOVED));
    wave_result_finish(&res);
    int bad = 0;
    for (uint32_t l = 0; l < 64; l++)
        bad += out[l] != 1 + 5 + 0x1000 + l;
    CHECK_EQ(bad, 0);
    /* a work budget of exactly what the run does is enough, one unit less
     * is not: the run's last instruction passes it */
    d.max_work = 6 * BIG_WAVE_INSTRUCTIONS + 6 * (BIG_GROUP_BYTES + BIG_WAVE_MOVED) / WAVE_WORK_UNIT_BYTES;
    CHECK_OK(wave_run(&d, &res));
    wave_result_finish(&res);
    d.max_work--;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("group (5,0,0) wave 0, at image offset 0x64 ('s_endpgm'): the run passed its work budget");
    wave_result_finish(&res);
}

TEST(time_budget)
{
    /* 64 groups of 256 loop_sum work-items of up to 100,000 trips each run
     * for many seconds; 5 ms of wall-clock time stops them (when depends on
     * the machine; that it stops, and the message, do not) */
    const struct wave_kernel *k = kernel(0, "loop_sum");
    REQUIRE(k);
    uint32_t *out = calloc(64 * 256, 4);
    REQUIRE(out);
    struct wave_value args[] = {buf(out, 64 * 256 * 4), u32v(0x7fffffff)};
    struct wave_run_desc d = {.code = &codes[0], .kernel = k, .groups = {64, 1, 1}, .block = {256, 1, 1},
                              .args = args, .arg_count = 2, .max_seconds = 0.005};
    struct wave_result res;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("time budget of 0.005 s");
    CHECK_MSG("kernel 'loop_sum', group (");
    CHECK(res.instructions < WAVE_DEFAULT_MAX_INSTRUCTIONS);
    wave_result_finish(&res);
    /* and between groups: big_scratch's groups, a million of them */
    const struct wave_kernel *b = big_scratch();
    REQUIRE(b);
    struct wave_value arg = buf(out, 256);
    d = (struct wave_run_desc){.code = &big, .kernel = b, .groups = {1000000, 1, 1}, .block = {64, 1, 1},
                               .args = &arg, .arg_count = 1, .max_seconds = 0.005};
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_LIMIT);
    CHECK_MSG("time budget of 0.005 s");
    CHECK(res.waves < 1000000);
    wave_result_finish(&res);
    /* a time that is none is refused */
    d.max_seconds = -1;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_INVALID);
    CHECK_MSG("max_seconds -1 is not a time above 0 s");
    wave_result_finish(&res);
    d.max_seconds = NAN;
    CHECK_RESULT(wave_run(&d, &res), KILN_ERR_INVALID);
    wave_result_finish(&res);
    free(out);
}

TEST(arguments_checked)
{
    uint32_t out[64];
    struct wave_value one[] = {buf(out, sizeof out)};
    CHECK_RESULT(run(0, "loop_sum", 1, 1, 64, 1, one, 1), KILN_ERR_INVALID);
    CHECK_MSG("takes 2 arguments, 1 given");
    struct wave_value swapped[] = {u32v(1), buf(out, sizeof out)};
    CHECK_RESULT(run(0, "loop_sum", 1, 1, 64, 1, swapped, 2), KILN_ERR_INVALID);
    CHECK_MSG("is a buffer");
    struct wave_value wide[] = {buf(out, sizeof out), u64v(1)};
    CHECK_RESULT(run(0, "loop_sum", 1, 1, 64, 1, wide, 2), KILN_ERR_INVALID);
    CHECK_MSG("is a value of 4 bytes");
    struct wave_value ok[] = {buf(out, sizeof out), u32v(3)};
    CHECK_RESULT(run(0, "loop_sum", 1, 1, 2048, 1, ok, 2), KILN_ERR_LIMIT);
    /* a buffer too short for the grid: the write past it is an error */
    struct wave_value shortbuf[] = {buf(out, 16), u32v(3)};
    CHECK_RESULT(run(0, "loop_sum", 1, 1, 64, 1, shortbuf, 2), KILN_ERR_INVALID);
    CHECK_MSG("writes 4 bytes at address 0x400000000010");
}

TEST(observation)
{
    uint32_t out[100];
    struct wave_value args[] = {buf(out, sizeof out), u32v(5)};
    const struct wave_kernel *k = kernel(0, "loop_sum");
    REQUIRE(k);
    struct wave_run_desc d = {.code = &codes[0], .kernel = k, .groups = {1, 1, 1}, .block = {100, 1, 1},
                              .args = args, .arg_count = 2, .observe = true};
    struct wave_result res;
    REQUIRE_OK(wave_run(&d, &res));
    CHECK_EQ(res.final_count, 2);
    CHECK_EQ(res.waves, 2);
    /* wave 1 holds work-items 64..99: its lanes mask, exec at the end */
    CHECK(res.finals[1].lanes == (1ull << 36) - 1);
    /* v0 held each lane's work-item id at the start; the kernel keeps it
     * or not, but s_endpgm leaves exec as the wave had it */
    struct bytes b = {0};
    REQUIRE_OK(wave_observe_encode(&d, &res, &b));
    struct bytes_reader rd;
    bytes_reader_init(&rd, b.p, b.len);
    CHECK_EQ(bytes_read_u32(&rd), WAVE_OBSERVE_MAGIC);
    CHECK_EQ(bytes_read_u32(&rd), WAVE_OBSERVE_VERSION);
    CHECK_EQ(bytes_read_u32(&rd), 2);                 /* waves */
    CHECK_EQ(bytes_read_u32(&rd), res.vgpr_count);
    CHECK_EQ(bytes_read_u32(&rd), 1);                 /* buffers */
    CHECK_EQ(bytes_read_u32(&rd), 0);
    CHECK_EQ(bytes_read_u64(&rd), res.instructions);
    /* wave 0 */
    for (int i = 0; i < 3; i++)
        CHECK_EQ(bytes_read_u32(&rd), 0);   /* group */
    CHECK_EQ(bytes_read_u32(&rd), 0);       /* wave */
    CHECK(bytes_read_u64(&rd) == UINT64_MAX);
    CHECK_EQ(bytes_read_u32(&rd), res.finals[0].scc);
    for (int i = 0; i < 1 + 4 + 8; i++)
        CHECK_EQ(bytes_read_u32(&rd), 0);   /* the reference sees every register: no blind bits */
    for (int i = 0; i < 128; i++)
        CHECK_EQ(bytes_read_u32(&rd), res.finals[0].sgpr[i]);
    for (uint32_t r = 0; r < res.vgpr_count; r++)
        for (int l = 0; l < 64; l++)
            CHECK_EQ(bytes_read_u32(&rd), res.finals[0].vgpr[r][l]);
    /* the JSON form names the same things */
    struct bytes j = {0};
    REQUIRE_OK(wave_observe_json(&d, &res, &j));
    bytes_put_u8(&j, 0);
    CHECK(strstr((char *)j.p, "\"lanes\": \"0x0000000fffffffff\"") != NULL);
    CHECK(strstr((char *)j.p, "\"written\": [[0, 400]]") != NULL);
    free(j.p);
    free(b.p);
    wave_result_finish(&res);
}

int main(void)
{
    kt_require_target();
    for (int i = 0; i < SOURCES; i++) {
        char path[700];
        if (kt_compile(sources[i], 0, path, sizeof path) != 0) {
            fprintf(stderr, "could not compile %s.cl\n", sources[i]);
            return 1;
        }
        size_t len;
        uint8_t *bytes = kt_read(path, &len);
        if (!bytes || wave_code_load(bytes, len, &codes[i]) != KILN_OK) {
            fprintf(stderr, "could not load %s: %s\n", path, kiln_last_error());
            return 1;
        }
        free(bytes);
        loaded[i] = true;
    }
    RUN(loop_sum);
    RUN(branches);
    RUN(nested);
    RUN(selects);
    RUN(atomics);
    RUN(reduce_lds_barriers);
    RUN(local_argument);
    RUN(gather64);
    RUN(grid2d);
    RUN(private_array_scratch);
    RUN(int_math);
    RUN(float_math);
    RUN(conversions);
    RUN(lane_crossing);
    RUN(half_precision);
    RUN(calls_and_stack);
    RUN(wide_division);
    RUN(double_precision);
    RUN(lds_atomics);
    RUN(small_integers);
    RUN(compare_and_swap_loop);
    RUN(dpp_sdwa_gpr_idx);
    RUN(oracle_in_ieee_mode);
    RUN(oracle_in_non_ieee_mode);
    RUN(oracle2_denormals_flushed);
    RUN(oracle2_denormals_kept);
    RUN(linked_object_runs_alike);
    RUN(budget);
    RUN(work_budget);
    RUN(budgets_leave_runs_within_them);
    RUN(time_budget);
    RUN(arguments_checked);
    RUN(observation);
    for (int i = 0; i < SOURCES; i++)
        wave_code_finish(&codes[i]);
    if (big_loaded)
        wave_code_finish(&big);
    return TEST_SUMMARY();
}
