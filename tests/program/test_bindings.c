/* SPDX-License-Identifier: MIT */
/*
 * test_bindings.c: bindings as real shaders declare them, run for real
 * (lavapipe in CI, validation on), every result checked against the CPU:
 * a packed f16 and an unpacked f32 view of one buffer (two blocks on one
 * binding), buffers in set 1 and in sets 0 and 2 with set 1 empty, an
 * array of 4 blocks, storage texel buffers (imageLoad, imageStore, an
 * image atomic) and uniform texel buffers (texelFetch); the interface
 * each reports; a node of such a program specialized (its variant binds
 * like it); a buffer two nodes share through different sets ordered by a
 * barrier; slices of one buffer across three nodes (a barrier where two
 * slices meet, none where they do not); and the errors, each by name: a set binding not given, an
 * array element not bound, a storage and a uniform block on one binding,
 * a texel buffer bound without a format, and their kin.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

#define N 256u

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

/* An IEEE half's bits for a float that a half holds exactly (the test's
 * values are small multiples of 1/4). */
static uint16_t half_bits(float f)
{
    if (f == 0)
        return signbit(f) ? 0x8000 : 0;
    uint32_t u = fbits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = (u >> 13) & 0x3ff;
    return (uint16_t)(sign | (uint32_t)exp << 10 | mant);
}

/* A program made and waited for; KILN_OK or what the wait returned. */
static kiln_result make(kiln_context ctx, const char *name, const char *src, kiln_program *p)
{
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, p);
    return r < 0 ? r : kiln_program_wait(ctx, *p);
}

static kiln_buffer buffer(kiln_context ctx, uint64_t size, const void *data)
{
    kiln_buffer b = {0};
    CHECK_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = size}, &b));
    if (data)
        CHECK_OK(kiln_buffer_upload(ctx, b, 0, data, size));
    return b;
}

/* Adds one node and submits the scheme once, waiting for it. */
static kiln_result run_once(kiln_context ctx, kiln_scheme s, const kiln_node_desc *nd)
{
    kiln_node node;
    kiln_result r = kiln_scheme_add_node(ctx, s, nd, &node);
    kiln_ticket t;
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, s, &t);
    if (r == KILN_OK)
        r = kiln_ticket_wait(ctx, t, UINT64_MAX);
    return r;
}

/* ---- several blocks on one binding ------------------------------------------------ */

/* The style of a large kernel library: binding 0 seen as packed halves and
 * as floats. Mode 0 packs io's floats into binding 0 through the f16 view;
 * mode 1 reads binding 0 through the f32 view, each float being two halves. */
static const char *k_views = "#version 450\n"
                             "#extension GL_EXT_shader_16bit_storage : require\n"
                             "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) writeonly buffer Packed { f16vec2 h[]; } packed;\n"
                             "layout(std430, binding = 0) readonly buffer Full { float head; float f[]; } full;\n"
                             "layout(std430, binding = 1) buffer Io { uint u[]; } io;\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    if (kiln_param(0) == 0u)\n"
                             "        packed.h[i] = f16vec2(uintBitsToFloat(io.u[2u * i]), uintBitsToFloat(io.u[2u * i + 1u]));\n"
                             "    else\n"
                             "        io.u[i] = floatBitsToUint(i == 0u ? full.head : full.f[i - 1u]);\n"
                             "}\n";

TEST(a_packed_and_an_unpacked_view_of_one_buffer)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    CHECK_OK(make(ctx, "views.comp", k_views, &p));
    kiln_program_interface it;
    CHECK_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.binding_count, 2);   /* binding 0 once */
    const kiln_binding_info *b0 = &it.bindings[0];
    CHECK(b0->set == 0 && b0->binding == 0 && b0->kind == KILN_BINDING_STORAGE_BUFFER && b0->count == 1);
    CHECK_EQ(b0->access, KILN_ACCESS_READ | KILN_ACCESS_WRITE);   /* writeonly + readonly */
    CHECK_EQ(b0->min_size, 4);                                     /* Full's head; Packed has none */
    CHECK(strstr(b0->name, "Packed") && strstr(b0->name, "Full") && strchr(b0->name, '|'));

    uint32_t io[2 * N], back[2 * N];
    for (uint32_t i = 0; i < 2 * N; i++)
        io[i] = fbits((float)((int)(i % 97) - 48) * 0.25f);
    kiln_buffer data = buffer(ctx, N * 4, NULL), iobuf = buffer(ctx, sizeof io, io);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[2] = {{.binding = 0, .buffer = data}, {.binding = 1, .buffer = iobuf}};
    uint32_t pack = 0, unpack = 1;
    kiln_node a, b;
    /* Two nodes: the first writes through the packed view, the second
     * reads the same bytes through the float view (a barrier between). */
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                                             .groups = {N / 64}, .params = &pack, .param_count = 1},
                                  &a));
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                                             .groups = {N / 64}, .params = &unpack, .param_count = 1},
                                  &b));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.barriers, 1);
    uint32_t packed[N];
    CHECK_OK(kiln_buffer_readback(ctx, data, 0, packed, sizeof packed));
    CHECK_OK(kiln_buffer_readback(ctx, iobuf, 0, back, sizeof back));
    int bad = 0;
    for (uint32_t i = 0; i < N && bad < 5; i++) {
        uint32_t want = half_bits(bitsf(io[2 * i])) | (uint32_t)half_bits(bitsf(io[2 * i + 1])) << 16;
        if (packed[i] != want || back[i] != want) {
            fprintf(stderr, "word %u: packed 0x%08x, read through the float view 0x%08x, CPU 0x%08x\n", i, packed[i],
                    back[i], want);
            bad++;
        }
    }
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* ---- descriptor sets other than 0 ------------------------------------------------- */

static const char *k_set1 = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, set = 1, binding = 0) readonly buffer In { uint a[]; };\n"
                            "layout(std430, set = 1, binding = 1) writeonly buffer Out { uint b[]; };\n"
                            "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] * 3u + kiln_param(0); }\n";

/* Sets 0 and 2; set 1 is empty. The uniform block sits in set 2 too. */
static const char *k_set02 = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, set = 0, binding = 0) readonly buffer In { uint a[]; };\n"
                             "layout(std430, set = 2, binding = 3) writeonly buffer Out { uint b[]; };\n"
                             "layout(std140, set = 2, binding = 0) uniform U { uint add; };\n"
                             "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] ^ add; }\n";

TEST(bindings_in_set_1_and_in_sets_0_and_2)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i * 2654435761u;
    kiln_buffer a = buffer(ctx, sizeof in, in), b = buffer(ctx, sizeof out, NULL);

    kiln_program p1;
    CHECK_OK(make(ctx, "set1.comp", k_set1, &p1));
    kiln_program_interface it;
    CHECK_OK(kiln_program_interface_get(ctx, p1, &it));
    REQUIRE(it.binding_count == 2);
    CHECK(it.bindings[0].set == 1 && it.bindings[0].binding == 0 && it.bindings[0].access == KILN_ACCESS_READ);
    CHECK(it.bindings[1].set == 1 && it.bindings[1].binding == 1 && it.bindings[1].access == KILN_ACCESS_WRITE);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    uint32_t word = 7;
    kiln_binding bind1[2] = {{.set = 1, .binding = 0, .buffer = a}, {.set = 1, .binding = 1, .buffer = b}};
    CHECK_OK(run_once(ctx, s, &(kiln_node_desc){.program = p1, .bindings = bind1, .binding_count = 2,
                                                 .groups = {N / 64}, .params = &word, .param_count = 1}));
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, out, sizeof out));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != in[i] * 3u + 7u;
    CHECK_EQ(bad, 0);

    kiln_program p02;
    CHECK_OK(make(ctx, "set02.comp", k_set02, &p02));
    CHECK_OK(kiln_program_interface_get(ctx, p02, &it));
    REQUIRE(it.binding_count == 3);   /* sorted by (set, binding) */
    CHECK(it.bindings[0].set == 0 && it.bindings[0].binding == 0);
    CHECK(it.bindings[1].set == 2 && it.bindings[1].binding == 0 && it.bindings[1].kind == KILN_BINDING_UNIFORM_BUFFER);
    CHECK(it.bindings[2].set == 2 && it.bindings[2].binding == 3);
    kiln_buffer u;
    uint32_t add[4] = {0x5a5a5a5au};
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16, .usage = KILN_BUFFER_UNIFORM}, &u));
    CHECK_OK(kiln_buffer_upload(ctx, u, 0, add, 16));
    kiln_scheme s2;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s2));
    kiln_binding bind02[3] = {{.set = 2, .binding = 3, .buffer = b},
                              {.binding = 0, .buffer = a},
                              {.set = 2, .binding = 0, .buffer = u}};
    CHECK_OK(run_once(ctx, s2, &(kiln_node_desc){.program = p02, .bindings = bind02, .binding_count = 3,
                                                  .groups = {N / 64}}));
    CHECK_OK(kiln_buffer_readback(ctx, b, 0, out, sizeof out));
    bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != (in[i] ^ 0x5a5a5a5au);
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* ---- arrays of blocks ------------------------------------------------------------- */

static const char *k_array = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, set = 1, binding = 2) readonly buffer Parts { uint v[]; } parts[4];\n"
                             "layout(std430, binding = 0) writeonly buffer Out { uint o[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    o[i] = parts[0].v[i] + 2u * parts[1].v[i] + 3u * parts[2].v[i] + 4u * parts[3].v[i];\n"
                             "}\n";

TEST(an_array_of_four_blocks)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    CHECK_OK(make(ctx, "array.comp", k_array, &p));
    kiln_program_interface it;
    CHECK_OK(kiln_program_interface_get(ctx, p, &it));
    REQUIRE(it.binding_count == 2);
    CHECK(it.bindings[1].set == 1 && it.bindings[1].binding == 2 && it.bindings[1].count == 4);
    CHECK_EQ(it.bindings[0].count, 1);
    /* Elements 0, 1 and 3 are buffers of their own; element 2 is the
     * second half of element 3's buffer. */
    uint32_t v[4][N], both[2 * N], out[N];
    for (uint32_t k = 0; k < 4; k++)
        for (uint32_t i = 0; i < N; i++)
            v[k][i] = (k + 1) * 1000u + i;
    memcpy(both, v[3], sizeof v[3]);
    memcpy(both + N, v[2], sizeof v[2]);
    kiln_buffer b0 = buffer(ctx, N * 4, v[0]), b1 = buffer(ctx, N * 4, v[1]), b23 = buffer(ctx, sizeof both, both);
    kiln_buffer o = buffer(ctx, sizeof out, NULL);
    kiln_binding bind[5] = {
        {.binding = 0, .buffer = o},
        {.set = 1, .binding = 2, .element = 3, .buffer = b23, .size = N * 4},
        {.set = 1, .binding = 2, .element = 0, .buffer = b0},
        {.set = 1, .binding = 2, .element = 2, .buffer = b23, .offset = N * 4},
        {.set = 1, .binding = 2, .element = 1, .buffer = b1},
    };
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 5,
                                                 .groups = {N / 64}}));
    CHECK_OK(kiln_buffer_readback(ctx, o, 0, out, sizeof out));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != v[0][i] + 2 * v[1][i] + 3 * v[2][i] + 4 * v[3][i];
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* ---- texel buffers ---------------------------------------------------------------- */

/* Storage texel buffers: floats in (r32f, read), bytes out (rgba8 unorm,
 * written), and a count of odd inputs by image atomic (r32ui). */
static const char *k_storage_texel = "#version 450\n"
                                     "layout(local_size_x = 64) in;\n"
                                     "layout(set = 0, binding = 0, r32f) uniform readonly imageBuffer src;\n"
                                     "layout(set = 0, binding = 1, rgba8) uniform writeonly imageBuffer dst;\n"
                                     "layout(set = 1, binding = 0, r32ui) uniform uimageBuffer counts;\n"
                                     "void main() {\n"
                                     "    int i = int(gl_GlobalInvocationID.x);\n"
                                     "    float x = imageLoad(src, i).x;\n"
                                     "    imageStore(dst, i, vec4(x, 1.0 - x, x * 0.5, 1.0));\n"
                                     "    if ((i & 1) == 1) imageAtomicAdd(counts, i % 4, 1u);\n"
                                     "    imageStore(counts, 4 + i, uvec4(uint(x * 1000.0)));\n"
                                     "}\n";

static uint8_t unorm8(float x)
{
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    return (uint8_t)lrintf(x * 255.0f);
}

TEST(storage_texel_buffers_load_store_and_atomics)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    CHECK_OK(make(ctx, "texel.comp", k_storage_texel, &p));
    kiln_program_interface it;
    CHECK_OK(kiln_program_interface_get(ctx, p, &it));
    REQUIRE(it.binding_count == 3);
    CHECK(it.bindings[0].kind == KILN_BINDING_STORAGE_TEXEL_BUFFER && it.bindings[0].format == KILN_FORMAT_R32F &&
          it.bindings[0].access == KILN_ACCESS_READ);
    CHECK(it.bindings[1].format == KILN_FORMAT_RGBA8 && it.bindings[1].access == KILN_ACCESS_WRITE);
    CHECK(it.bindings[2].set == 1 && it.bindings[2].format == KILN_FORMAT_R32UI &&
          it.bindings[2].access == (KILN_ACCESS_READ | KILN_ACCESS_WRITE));
    float src[N];
    for (uint32_t i = 0; i < N; i++)
        src[i] = (float)(i % 64) / 63.0f;
    kiln_buffer bs = buffer(ctx, sizeof src, src), bd = buffer(ctx, N * 4, NULL);
    uint32_t zero[4 + N] = {0};
    kiln_buffer bc = buffer(ctx, sizeof zero, zero);
    kiln_binding bind[3] = {{.binding = 0, .buffer = bs},
                            {.binding = 1, .buffer = bd, .format = KILN_FORMAT_RGBA8},   /* as declared: fine */
                            {.set = 1, .binding = 0, .buffer = bc}};
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 3,
                                                 .groups = {N / 64}}));
    uint8_t dst[N * 4];
    uint32_t counts[4 + N];
    CHECK_OK(kiln_buffer_readback(ctx, bd, 0, dst, sizeof dst));
    CHECK_OK(kiln_buffer_readback(ctx, bc, 0, counts, sizeof counts));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        float x = src[i];
        uint8_t want[4] = {unorm8(x), unorm8(1.0f - x), unorm8(x * 0.5f), 255};
        for (int c = 0; c < 4; c++)   /* a driver may round the last bit either way */
            bad += abs((int)dst[4 * i + c] - (int)want[c]) > 1;
        bad += counts[4 + i] != (uint32_t)(x * 1000.0f);
    }
    CHECK_EQ(bad, 0);
    CHECK(counts[0] == 0 && counts[1] == N / 4 && counts[2] == 0 && counts[3] == N / 4);
    test_context_done(ctx);
}

/* Uniform texel buffers: a textureBuffer (rgba32f) and an isamplerBuffer
 * (r32i), read with texelFetch; GLSL gives them no format, the binding
 * does. */
static const char *k_uniform_texel = "#version 450\n"
                                     "#extension GL_EXT_samplerless_texture_functions : require\n"
                                     "layout(local_size_x = 64) in;\n"
                                     "layout(binding = 0) uniform textureBuffer colors;\n"
                                     "layout(set = 1, binding = 1) uniform isamplerBuffer offsets;\n"
                                     "layout(std430, binding = 2) writeonly buffer Out { vec4 o[]; };\n"
                                     "void main() {\n"
                                     "    int i = int(gl_GlobalInvocationID.x);\n"
                                     "    o[i] = texelFetch(colors, i) * float(texelFetch(offsets, i).x);\n"
                                     "}\n";

TEST(uniform_texel_buffers_texel_fetch)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    CHECK_OK(make(ctx, "utexel.comp", k_uniform_texel, &p));
    kiln_program_interface it;
    CHECK_OK(kiln_program_interface_get(ctx, p, &it));
    REQUIRE(it.binding_count == 3);
    CHECK(it.bindings[0].kind == KILN_BINDING_UNIFORM_TEXEL_BUFFER && it.bindings[0].format == 0 &&
          it.bindings[0].access == KILN_ACCESS_READ);
    CHECK(it.bindings[2].set == 1 && it.bindings[2].kind == KILN_BINDING_UNIFORM_TEXEL_BUFFER);
    float colors[4 * N];
    int32_t offsets[N];
    for (uint32_t i = 0; i < N; i++) {
        for (int c = 0; c < 4; c++)
            colors[4 * i + c] = (float)i * 0.5f + (float)c;
        offsets[i] = (int32_t)(i % 7) - 3;
    }
    kiln_buffer bcol = buffer(ctx, sizeof colors, colors), boff = buffer(ctx, sizeof offsets, offsets);
    kiln_buffer bout = buffer(ctx, sizeof colors, NULL);
    /* The colors start 16 bytes in (one texel): the texel offset alignment
     * lavapipe and the H200 report is at most 16. */
    kiln_buffer bcol2 = buffer(ctx, sizeof colors + 16, NULL);
    CHECK_OK(kiln_buffer_upload(ctx, bcol2, 16, colors, sizeof colors));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    bool offset_ok = caps.min_texel_buffer_offset_alignment <= 16;
    kiln_binding bind[3] = {{.binding = 0, .buffer = offset_ok ? bcol2 : bcol, .offset = offset_ok ? 16 : 0,
                             .format = KILN_FORMAT_RGBA32F},
                            {.set = 1, .binding = 1, .buffer = boff, .format = KILN_FORMAT_R32I},
                            {.binding = 2, .buffer = bout}};
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 3,
                                                 .groups = {N / 64}}));
    float out[4 * N];
    CHECK_OK(kiln_buffer_readback(ctx, bout, 0, out, sizeof out));
    int bad = 0;
    for (uint32_t i = 0; i < 4 * N; i++)
        bad += out[i] != colors[i] * (float)offsets[i / 4];
    CHECK_EQ(bad, 0);
    (void)kiln_buffer_destroy(ctx, bcol);
    test_context_done(ctx);
}

/* ---- specialization and hazards ----------------------------------------------------- */

/* A node of a program with sets and an array is specialized like any: its
 * variant binds like the universal program, so it swaps in under the
 * recorded node, and every frame stays right. */
TEST(a_variant_binds_like_its_program_across_sets_and_arrays)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char *src = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, set = 2, binding = 1) readonly buffer P { uint v[]; } parts[2];\n"
                             "layout(std430, set = 0, binding = 0) buffer Out { uint o[]; };\n"
                             "void main() {\n"
                             "    uint i = gl_GlobalInvocationID.x;\n"
                             "    o[i] += parts[0].v[i] * kiln_param(0) + parts[1].v[i];\n"
                             "}\n";
    kiln_program p;
    CHECK_OK(make(ctx, "variant.comp", src, &p));
    uint32_t v0[N], v1[N], out[N];
    for (uint32_t i = 0; i < N; i++) {
        v0[i] = i;
        v1[i] = 3 * i + 1;
    }
    kiln_buffer b0 = buffer(ctx, N * 4, v0), b1 = buffer(ctx, N * 4, v1);
    uint32_t zero[N] = {0};
    kiln_buffer o = buffer(ctx, N * 4, zero);
    kiln_binding bind[3] = {{.set = 2, .binding = 1, .element = 1, .buffer = b1},
                            {.binding = 0, .buffer = o},
                            {.set = 2, .binding = 1, .buffer = b0}};
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    uint32_t word = 5;
    kiln_node node;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 3,
                                                                .groups = {N / 64}, .params = &word, .param_count = 1},
                                    &node));
    /* Until the variant runs (its compile takes its time): at most 60 s. */
    int specialized = 0;
    uint32_t frames = 0;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (now = t0; now.tv_sec - t0.tv_sec < 60 && !specialized; frames++, clock_gettime(CLOCK_MONOTONIC, &now)) {
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        CHECK_OK(kiln_node_is_specialized(ctx, node, &specialized));
    }
    CHECK(specialized);
    CHECK_OK(kiln_buffer_readback(ctx, o, 0, out, sizeof out));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != frames * (v0[i] * 5 + v1[i]);
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* Two nodes share a buffer through different sets: the first writes it as
 * set 1's binding 0, the second reads it as set 0's binding 2. Hazards
 * are a buffer's bytes, so a barrier orders them; a third node that only
 * reads the first's input needs none. */
TEST(hazards_through_different_sets)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    static const char *writer = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, set = 1, binding = 0) writeonly buffer W { uint w[]; };\n"
                                "layout(std430, set = 0, binding = 0) readonly buffer In { uint a[]; };\n"
                                "void main() { uint i = gl_GlobalInvocationID.x; w[i] = a[i] + 1u; }\n";
    static const char *reader = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, set = 0, binding = 2) readonly buffer R { uint r[]; };\n"
                                "layout(std430, set = 3, binding = 1) writeonly buffer Out { uint o[]; };\n"
                                "void main() { uint i = gl_GlobalInvocationID.x; o[i] = r[i] * 2u; }\n";
    kiln_program pw, pr;
    CHECK_OK(make(ctx, "writer.comp", writer, &pw));
    CHECK_OK(make(ctx, "reader.comp", reader, &pr));
    uint32_t in[N], out[N], out2[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i * 7u;
    kiln_buffer a = buffer(ctx, sizeof in, in), shared = buffer(ctx, N * 4, NULL);
    kiln_buffer o = buffer(ctx, N * 4, NULL), o2 = buffer(ctx, N * 4, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n1, n2, n3;
    kiln_binding bw[2] = {{.set = 1, .binding = 0, .buffer = shared}, {.binding = 0, .buffer = a}};
    kiln_binding br[2] = {{.binding = 2, .buffer = shared}, {.set = 3, .binding = 1, .buffer = o}};
    kiln_binding br2[2] = {{.binding = 2, .buffer = a}, {.set = 3, .binding = 1, .buffer = o2}};
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = pw, .bindings = bw, .binding_count = 2,
                                                             .groups = {N / 64}}, &n1));
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = pr, .bindings = br2, .binding_count = 2,
                                                             .groups = {N / 64}}, &n3));
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = pr, .bindings = br, .binding_count = 2,
                                                             .groups = {N / 64}}, &n2));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.barriers, 1);   /* before the third node only: the second reads what the first only read */
    CHECK_OK(kiln_buffer_readback(ctx, o, 0, out, sizeof out));
    CHECK_OK(kiln_buffer_readback(ctx, o2, 0, out2, sizeof out2));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != (in[i] + 1u) * 2u || out2[i] != in[i] * 2u;
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

/* Slices of one buffer across nodes, as hosts bind them: the first node
 * writes the middle third, the third reads it (after a barrier) and
 * writes the last third; the second reads the first third, which no node
 * writes, and so needs no barrier; each slice's length is what the
 * shader's runtime array sees. */
TEST(slices_of_one_buffer_across_nodes)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    static const char *step = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                              "layout(std430, binding = 1) writeonly buffer Out { uint o[]; };\n"
                              "void main() {\n"
                              "    uint i = gl_GlobalInvocationID.x;\n"
                              "    o[i] = a[i] * 2u + uint(a.length()) + kiln_param(0);\n"
                              "}\n";
    kiln_program p;
    CHECK_OK(make(ctx, "step.comp", step, &p));
    uint32_t init[3 * N], got[3 * N], side[N];
    for (uint32_t i = 0; i < 3 * N; i++)
        init[i] = i * 5u + 1u;
    kiln_buffer big = buffer(ctx, sizeof init, init), in = buffer(ctx, N * 4, init), o = buffer(ctx, N * 4, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    const uint64_t third = N * 4;
    kiln_binding b1[2] = {{.binding = 0, .buffer = in}, {.binding = 1, .buffer = big, .offset = third, .size = third}};
    kiln_binding b2[2] = {{.binding = 0, .buffer = big, .offset = 0, .size = third}, {.binding = 1, .buffer = o}};
    kiln_binding b3[2] = {{.binding = 0, .buffer = big, .offset = third, .size = third},
                          {.binding = 1, .buffer = big, .offset = 2 * third}};   /* size 0: to the end */
    const kiln_binding *bs[3] = {b1, b2, b3};
    for (uint32_t k = 0; k < 3; k++)
        CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = bs[k], .binding_count = 2,
                                                                .groups = {N / 64}, .params = &k, .param_count = 1},
                                      &n));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.barriers, 1);   /* before the third node only */
    CHECK_OK(kiln_buffer_readback(ctx, big, 0, got, sizeof got));
    CHECK_OK(kiln_buffer_readback(ctx, o, 0, side, sizeof side));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        uint32_t mid = init[i] * 2u + N + 0u;
        bad += got[i] != init[i] || got[N + i] != mid || got[2 * N + i] != mid * 2u + N + 2u;
        bad += side[i] != init[i] * 2u + N + 1u;
    }
    CHECK_EQ(bad, 0);
    /* An offset off the device's alignment is refused naming the limit. */
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    if (caps.min_storage_buffer_offset_alignment > 1) {
        kiln_binding off[2] = {{.binding = 0, .buffer = big, .offset = 1, .size = 64}, {.binding = 1, .buffer = o}};
        CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                                            &(kiln_node_desc){.program = p, .bindings = off,
                                                                              .binding_count = 2, .groups = {1}},
                                                            &n)),
                     KILN_ERR_INVALID);
        CHECK_MSG("offset 1 is not a multiple of");
        CHECK_MSG("minStorageBufferOffsetAlignment");
    }
    test_context_done(ctx);
}

/* A shader that writes through a buffer's device address (a push word
 * pair, GL_EXT_buffer_reference), the buffer named in the node's reaches;
 * a second node reads it through a binding, after the barrier the reach
 * makes; both against the CPU. Without bufferDeviceAddress, the buffer is
 * refused naming the feature. */
TEST(a_buffer_reached_through_its_address)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    kiln_buffer target;
    kiln_result r = kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4,
                                                                .usage = KILN_BUFFER_STORAGE | KILN_BUFFER_ADDRESS},
                                       &target);
    if (!(caps.shader_features & KILN_FEATURE_DEVICE_ADDRESS)) {
        CHECK_RESULT(r, KILN_ERR_LIMIT);
        CHECK_MSG("KILN_BUFFER_ADDRESS needs bufferDeviceAddress");
        test_context_done(ctx);
        return;
    }
    REQUIRE_OK(r);
    static const char *writer = "#version 450\n"
                                "#extension GL_EXT_buffer_reference : require\n"
                                "#extension GL_EXT_buffer_reference_uvec2 : require\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(buffer_reference, std430) buffer Data { uint v[]; };\n"
                                "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                                "void main() {\n"
                                "    uint i = gl_GlobalInvocationID.x;\n"
                                "    Data d = Data(uvec2(kiln_param(0), kiln_param(1)));\n"
                                "    d.v[i] = a[i] * 3u + 1u;\n"
                                "}\n";
    static const char *reader = "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) readonly buffer T { uint t[]; };\n"
                                "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
                                "void main() { uint i = gl_GlobalInvocationID.x; o[i] = t[i] + 7u; }\n";
    kiln_program pw, pr;
    REQUIRE_OK(make(ctx, "writer.comp", writer, &pw));
    REQUIRE_OK(make(ctx, "reader.comp", reader, &pr));
    uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i * 5u;
    kiln_buffer a = buffer(ctx, sizeof in, in), o = buffer(ctx, sizeof out, NULL);
    uint64_t address = 0;
    REQUIRE_OK(kiln_buffer_address(ctx, target, &address));
    CHECK(address != 0);
    CHECK_RESULT(kiln_buffer_address(ctx, a, &address), KILN_ERR_INVALID);   /* made without KILN_BUFFER_ADDRESS */
    CHECK_MSG("made without KILN_BUFFER_ADDRESS");
    REQUIRE_OK(kiln_buffer_address(ctx, target, &address));
    uint32_t words[2] = {(uint32_t)address, (uint32_t)(address >> 32)};
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = pw, .bindings = &(kiln_binding){.buffer = a},
                                                      .binding_count = 1, .groups = {N / 64}, .params = words,
                                                      .param_count = 2, .reaches = &target, .reach_count = 1},
                                    &n));
    kiln_binding rb[2] = {{.binding = 0, .buffer = target}, {.binding = 1, .buffer = o}};
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = pr, .bindings = rb, .binding_count = 2,
                                                               .groups = {N / 64}},
                                    &n));
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
    REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    kiln_scheme_stats st;
    REQUIRE_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.barriers, 1);   /* the reach is a write the reader waits for */
    REQUIRE_OK(kiln_buffer_readback(ctx, o, 0, out, sizeof out));
    int bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += out[i] != in[i] * 3u + 1u + 7u;
    CHECK_EQ(bad, 0);
    /* A reached buffer is held like a bound one; one made without an
     * address is refused. */
    CHECK_RESULT(kiln_buffer_destroy(ctx, target), KILN_ERR_BUSY);
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                                        &(kiln_node_desc){.program = pw,
                                                                          .bindings = &(kiln_binding){.buffer = a},
                                                                          .binding_count = 1, .groups = {1},
                                                                          .reaches = &o, .reach_count = 1},
                                                        &n)),
                 KILN_ERR_INVALID);
    CHECK_MSG("was made without KILN_BUFFER_ADDRESS");
    test_context_done(ctx);
}

/* ---- errors, by name ------------------------------------------------------------------ */

/* What a program declares that kiln cannot bind fails it, the log naming it. */
static void check_fails(kiln_context ctx, const char *name, const char *src, const char *needle)
{
    kiln_program p;
    kiln_result r = make(ctx, name, src, &p);
    if (r != KILN_ERR_COMPILE) {
        test_failures_++;
        fprintf(stderr, "%s: %s: %s, expected KILN_ERR_COMPILE\n", test_name_, name, kiln_result_name(r));
        return;
    }
    char log[1024] = "";
    if (kiln_program_log(ctx, p, log, sizeof log, NULL) < 0)
        log[0] = 0;
    if (!strstr(log, needle)) {
        test_failures_++;
        fprintf(stderr, "%s: %s: log '%s' lacks '%s'\n", test_name_, name, log, needle);
    }
}

TEST(declarations_kiln_cannot_bind_are_refused_by_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    check_fails(ctx, "mix.comp",
                "#version 450\n"
                "layout(local_size_x = 1) in;\n"
                "layout(std430, set = 1, binding = 4) buffer S { uint s[]; };\n"
                "layout(std140, set = 1, binding = 4) uniform U { uint u; };\n"
                "void main() { s[0] = u; }\n",
                "binding 4 of set 1 is declared as a storage buffer ('S') and as a uniform buffer ('U')");
    check_fails(ctx, "lengths.comp",
                "#version 450\n"
                "layout(local_size_x = 1) in;\n"
                "layout(std430, binding = 0) buffer A { uint a[]; } as[2];\n"
                "layout(std430, binding = 0) buffer B { uint b[]; } bs[3];\n"
                "void main() { as[1].a[0] = bs[2].b[0]; }\n",
                "declared as arrays of 2 ('A') and 3 ('B') elements");
    check_fails(ctx, "texel_vs_block.comp",
                "#version 450\n"
                "layout(local_size_x = 1) in;\n"
                "layout(std430, binding = 0) buffer A { float a[]; };\n"
                "layout(binding = 0, r32f) uniform imageBuffer t;\n"
                "void main() { imageStore(t, 0, vec4(a[1])); }\n",
                "as a storage buffer ('A') and as a storage texel buffer ('t')");
    check_fails(ctx, "unsized.comp",
                "#version 450\n"
                "#extension GL_EXT_nonuniform_qualifier : require\n"
                "layout(local_size_x = 1) in;\n"
                "layout(std430, set = 2, binding = 1) buffer A { uint a[]; } as[];\n"
                "void main() { as[nonuniformEXT(as[0].a[0])].a[1] = 1u; }\n",
                "'A' (set 2, binding 1) is an array of unknown length");
    check_fails(ctx, "set8.comp",
                "#version 450\n"
                "layout(local_size_x = 1) in;\n"
                "layout(std430, set = 8, binding = 0) buffer A { uint a[]; };\n"
                "void main() { a[0] = 1u; }\n",
                "is in descriptor set 8; kiln binds sets 0..7");
    test_context_done(ctx);
}

TEST(bindings_given_wrong_are_refused_by_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p1, parr, ptex, pst;
    CHECK_OK(make(ctx, "set1.comp", k_set1, &p1));
    CHECK_OK(make(ctx, "array.comp", k_array, &parr));
    CHECK_OK(make(ctx, "utexel.comp", k_uniform_texel, &ptex));
    CHECK_OK(make(ctx, "texel.comp", k_storage_texel, &pst));
    kiln_buffer b = buffer(ctx, N * 4, NULL), c = buffer(ctx, N * 4, NULL), odd = buffer(ctx, 10, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node node;
    kiln_node_desc nd = {.program = p1, .groups = {1}};

    /* A set's binding not given: set 1's binding 1 given as set 0's. */
    kiln_binding miss[2] = {{.set = 1, .binding = 0, .buffer = b}, {.binding = 1, .buffer = c}};
    nd.bindings = miss;
    nd.binding_count = 2;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 1 is not declared by program set1.comp");
    nd.binding_count = 1;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("program set1.comp declares binding 1 of set 1 ('Out') but nothing is bound to it");

    /* An array element not bound, one past the end, one given twice. */
    kiln_binding arr[5] = {{.binding = 0, .buffer = c},
                           {.set = 1, .binding = 2, .element = 0, .buffer = b},
                           {.set = 1, .binding = 2, .element = 1, .buffer = b},
                           {.set = 1, .binding = 2, .element = 3, .buffer = b},
                           {.set = 1, .binding = 2, .element = 4, .buffer = b}};
    nd = (kiln_node_desc){.program = parr, .bindings = arr, .binding_count = 4, .groups = {1}};
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("declares binding 2 of set 1 ('Parts') as an array of 4; element 2 is not bound");
    nd.binding_count = 5;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 2 of set 1 ('Parts') is an array; element 4 is past its end");
    arr[4].element = 1;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_INVALID);
    CHECK_MSG("binding 2 of set 1 element 1 is given twice");

    /* A texel buffer without a format, with another than its shader's,
     * not a whole number of texels; a format on a buffer block. */
    kiln_binding tex[3] = {{.binding = 0, .buffer = b},
                           {.set = 1, .binding = 1, .buffer = c, .format = KILN_FORMAT_R32I},
                           {.binding = 2, .buffer = c}};
    nd = (kiln_node_desc){.program = ptex, .bindings = tex, .binding_count = 3, .groups = {1}};
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 0 ('colors') is a uniform texel buffer bound without a format");
    tex[0].format = KILN_FORMAT_RGBA32F;
    tex[2].format = KILN_FORMAT_R32F;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_INVALID);
    CHECK_MSG("binding 2 is a storage buffer in utexel.comp; a format (r32f) is for texel buffers only");
    tex[2].format = 0;
    tex[1].buffer = odd;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_INVALID);
    CHECK_MSG("binding 1 of set 1 (r32i, 4-byte texels): a range of 10 bytes is not a whole number of texels");
    kiln_binding st[3] = {{.binding = 0, .buffer = b, .format = KILN_FORMAT_R32UI},
                          {.binding = 1, .buffer = c},
                          {.set = 1, .binding = 0, .buffer = c}};
    nd = (kiln_node_desc){.program = pst, .bindings = st, .binding_count = 3, .groups = {1}};
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &nd, &node)), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 0 ('src') is bound as r32ui, but texel.comp declares it r32f");
    CHECK_EQ(kiln_format_size(KILN_FORMAT_RGBA8), 4);
    CHECK(!strcmp(kiln_format_name(KILN_FORMAT_RGBA8_SNORM), "rgba8_snorm") && !kiln_format_name(0) &&
          !kiln_format_name(KILN_FORMAT_COUNT));
    test_context_done(ctx);
}

int main(void)
{
    RUN(a_packed_and_an_unpacked_view_of_one_buffer);
    RUN(bindings_in_set_1_and_in_sets_0_and_2);
    RUN(an_array_of_four_blocks);
    RUN(storage_texel_buffers_load_store_and_atomics);
    RUN(uniform_texel_buffers_texel_fetch);
    RUN(a_variant_binds_like_its_program_across_sets_and_arrays);
    RUN(hazards_through_different_sets);
    RUN(slices_of_one_buffer_across_nodes);
    RUN(a_buffer_reached_through_its_address);
    RUN(declarations_kiln_cannot_bind_are_refused_by_name);
    RUN(bindings_given_wrong_are_refused_by_name);
    return TEST_SUMMARY();
}
