/* SPDX-License-Identifier: MIT */
/*
 * test_images.c: images and samplers, run for real (lavapipe in CI,
 * validation on), every result checked against the CPU: storage images
 * read and written in rgba8, rgba16f, rgba32f, r32f and r32ui; every format
 * a format qualifier names copied texel by texel (or refused by its name
 * where the device cannot store it: r64ui and r64i on lavapipe); what a
 * shader stores in r11f_g11f_b10f, rgb10_a2, rg16f, r16ui and rgba16_snorm
 * against the CPU's packing; a uimage2DArray written per layer; mip
 * levels made down through a sampler and a storage view per level; a 1D
 * image and a cube map; a 3D image
 * written texel by texel; a sampled image read through a combined image
 * sampler with linear filtering (within 1/255 of the CPU's bilinear
 * filter), through a separate texture and sampler with nearest filtering
 * and repeat; image hazards in a scheme (a node reading an image another
 * wrote sees the write; a node writing an image another read waits for the
 * read); a node over images specialized and verified against its
 * universal program; the interface each program reports; and the errors,
 * each by name:
 * a sampler on a storage image, a buffer where an image goes, an image of
 * another format or dims, a layered image where a plain one is declared, a
 * level the image lacks, a 2D image for a cube, multisampled, rectangle
 * and cube-array images in a shader, upload sizes, a bound image
 * destroyed, limits.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"

#define KILN_ARRAY_LEN_T(a) (sizeof(a) / sizeof((a)[0]))

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* A half's bits for a float a half holds exactly, and back. */
static uint16_t half_bits(float f)
{
    if (f == 0)
        return 0;
    uint32_t u = fbits(f);
    uint32_t sign = (u >> 16) & 0x8000;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    return (uint16_t)(sign | (uint32_t)exp << 10 | ((u >> 13) & 0x3ff));
}

static float half_value(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    float mant = (float)(h & 0x3ff);
    float v = exp ? ldexpf(1.0f + mant / 1024.0f, exp - 15) : ldexpf(mant / 1024.0f, -14);
    return (h & 0x8000) ? -v : v;
}

static kiln_result make(kiln_context ctx, const char *name, const char *src, kiln_program *p)
{
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, p);
    return r < 0 ? r : kiln_program_wait(ctx, *p);
}

static kiln_image image(kiln_context ctx, uint32_t w, uint32_t h, uint32_t d, kiln_format f, const void *data)
{
    kiln_image img = {0};
    CHECK_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = w, .height = h, .depth = d, .format = f}, &img));
    if (data)
        CHECK_OK(kiln_image_upload(ctx, img, data, (uint64_t)w * h * (d ? d : 1) * kiln_format_size(f)));
    return img;
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

/* ---- storage images ------------------------------------------------------------------- */

#define W 13u   /* not a multiple of the workgroup: the bounds check matters */
#define H 7u

/* dst = src * 2 + 0.25 (floats), 255 - src (rgba8), src * 3 + 1 (r32ui). */
static void storage_round_trip(kiln_format f)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    const char *q = kiln_format_name(f);
    bool uint_ = f == KILN_FORMAT_R32UI, unorm = f == KILN_FORMAT_RGBA8;
    char src[1024];
    snprintf(src, sizeof src,
             "#version 450\n"
             "layout(local_size_x = 4, local_size_y = 4) in;\n"
             "layout(set = 0, binding = 0, %s) uniform readonly %simage2D Src;\n"
             "layout(set = 0, binding = 1, %s) uniform writeonly %simage2D Dst;\n"
             "void main() {\n"
             "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
             "    if (any(greaterThanEqual(p, imageSize(Src)))) return;\n"
             "    imageStore(Dst, p, %s);\n"
             "}\n",
             q, uint_ ? "u" : "", q, uint_ ? "u" : "",
             uint_ ? "imageLoad(Src, p) * 3u + 1u" : unorm ? "1.0 - imageLoad(Src, p)" : "imageLoad(Src, p) * 2.0 + 0.25");
    kiln_program p;
    REQUIRE_OK(make(ctx, q, src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.binding_count, 2);
    CHECK_EQ(it.bindings[0].kind, KILN_BINDING_STORAGE_IMAGE);
    CHECK_EQ(it.bindings[0].image_dims, 2);
    CHECK_EQ(it.bindings[0].format, f);
    CHECK_EQ(it.bindings[0].access, KILN_ACCESS_READ);
    CHECK_EQ(it.bindings[1].access, KILN_ACCESS_WRITE);

    uint32_t texel = kiln_format_size(f), n = W * H * texel;
    uint8_t *in = malloc(n), *out = malloc(n);
    REQUIRE(in && out);
    for (uint32_t i = 0; i < n / texel; i++) {
        uint8_t *t = in + (size_t)i * texel;
        switch (f) {
        case KILN_FORMAT_RGBA8:
            for (int c = 0; c < 4; c++)
                t[c] = (uint8_t)(i * 7 + (uint32_t)c * 61);
            break;
        case KILN_FORMAT_RGBA16F:
            for (int c = 0; c < 4; c++) {
                uint16_t h = half_bits((float)((i + (uint32_t)c) % 64) / 4.0f);
                memcpy(t + 2 * c, &h, 2);
            }
            break;
        case KILN_FORMAT_RGBA32F:
            for (int c = 0; c < 4; c++) {
                float v = (float)(i * 4 + (uint32_t)c) * 0.5f - 3.0f;
                memcpy(t + 4 * c, &v, 4);
            }
            break;
        case KILN_FORMAT_R32F: {
            float v = (float)i * 0.75f - 10.0f;
            memcpy(t, &v, 4);
            break;
        }
        default: {
            uint32_t v = i * 1000003u;
            memcpy(t, &v, 4);
            break;
        }
        }
    }
    kiln_image a = image(ctx, W, H, 0, f, in), b = image(ctx, W, H, 0, f, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[2] = {{.binding = 0, .image = a}, {.binding = 1, .image = b}};
    REQUIRE_OK(run_once(ctx, s,
                        &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                          .groups = {(W + 3) / 4, (H + 3) / 4, 1}}));
    REQUIRE_OK(kiln_image_readback(ctx, b, out, n));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < n / texel; i++) {
        const uint8_t *t = in + (size_t)i * texel, *o = out + (size_t)i * texel;
        switch (f) {
        case KILN_FORMAT_RGBA8:
            for (int c = 0; c < 4; c++)
                wrong += abs((int)o[c] - (255 - (int)t[c])) > 1;   /* within 1/255 */
            break;
        case KILN_FORMAT_RGBA16F:
            for (int c = 0; c < 4; c++) {
                uint16_t hi, ho;
                memcpy(&hi, t + 2 * c, 2);
                memcpy(&ho, o + 2 * c, 2);
                wrong += half_value(ho) != half_value(hi) * 2.0f + 0.25f;
            }
            break;
        case KILN_FORMAT_RGBA32F:
        case KILN_FORMAT_R32F:
            for (uint32_t c = 0; c < texel / 4; c++) {
                float vi, vo;
                memcpy(&vi, t + 4 * c, 4);
                memcpy(&vo, o + 4 * c, 4);
                wrong += vo != vi * 2.0f + 0.25f;
            }
            break;
        default: {
            uint32_t vi, vo;
            memcpy(&vi, t, 4);
            memcpy(&vo, o, 4);
            wrong += vo != vi * 3u + 1u;
            break;
        }
        }
    }
    CHECK_EQ(wrong, 0);
    free(in);
    free(out);
    test_context_done(ctx);
}

TEST(storage_images_rgba8) { storage_round_trip(KILN_FORMAT_RGBA8); }
TEST(storage_images_rgba16f) { storage_round_trip(KILN_FORMAT_RGBA16F); }
TEST(storage_images_rgba32f) { storage_round_trip(KILN_FORMAT_RGBA32F); }
TEST(storage_images_r32f) { storage_round_trip(KILN_FORMAT_R32F); }
TEST(storage_images_r32ui) { storage_round_trip(KILN_FORMAT_R32UI); }

TEST(a_3d_image_written_texel_by_texel)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 4, local_size_y = 4, local_size_z = 2) in;\n"
                              "layout(binding = 0, r32f) uniform writeonly image3D Vol;\n"
                              "void main() {\n"
                              "    ivec3 p = ivec3(gl_GlobalInvocationID);\n"
                              "    if (any(greaterThanEqual(p, imageSize(Vol)))) return;\n"
                              "    imageStore(Vol, p, vec4(float(p.x + 10 * p.y + 100 * p.z)));\n"
                              "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "vol.comp", src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.bindings[0].image_dims, 3);
    enum { X = 6, Y = 5, Z = 3 };
    kiln_image vol = image(ctx, X, Y, Z, KILN_FORMAT_R32F, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    REQUIRE_OK(run_once(ctx, s,
                        &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.image = vol}, .binding_count = 1,
                                          .groups = {2, 2, 2}}));
    float out[X * Y * Z];
    REQUIRE_OK(kiln_image_readback(ctx, vol, out, sizeof out));
    uint32_t wrong = 0;
    for (int z = 0; z < Z; z++)
        for (int y = 0; y < Y; y++)
            for (int x = 0; x < X; x++)
                wrong += out[(z * Y + y) * X + x] != (float)(x + 10 * y + 100 * z);
    CHECK_EQ(wrong, 0);
    test_context_done(ctx);
}

/* ---- sampled images -------------------------------------------------------------------- */

#define TW 4
#define TH 4

/* The CPU's reading of an rgba8 texture at (u, v) in texels' units (the
 * shader's coordinate times the size), filtered as Vulkan says, clamped
 * to the edge or repeated. */
static float texel_at(const uint8_t *tex, int x, int y, int c, bool repeat)
{
    if (repeat) {
        x = ((x % TW) + TW) % TW;
        y = ((y % TH) + TH) % TH;
    } else {
        x = x < 0 ? 0 : x >= TW ? TW - 1 : x;
        y = y < 0 ? 0 : y >= TH ? TH - 1 : y;
    }
    return tex[(y * TW + x) * 4 + c] / 255.0f;
}

static float bilinear(const uint8_t *tex, float u, float v, int c)
{
    float x = u - 0.5f, y = v - 0.5f;
    int x0 = (int)floorf(x), y0 = (int)floorf(y);
    float a = x - (float)x0, b = y - (float)y0;
    return (1 - a) * (1 - b) * texel_at(tex, x0, y0, c, false) + a * (1 - b) * texel_at(tex, x0 + 1, y0, c, false) +
           (1 - a) * b * texel_at(tex, x0, y0 + 1, c, false) + a * b * texel_at(tex, x0 + 1, y0 + 1, c, false);
}

/* Sample positions at quarter texels (weights any conforming filter
 * represents exactly), some past the edges. */
#define SAMPLES 64
static void sample_uv(uint32_t i, float *u, float *v)
{
    *u = (float)(i % 8) * 0.75f - 0.5f;   /* -0.5 .. 4.75 texels */
    *v = (float)(i / 8) * 0.625f - 0.25f;
}

static const char sample_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) uniform sampler2D Tex;\n"
    "layout(std430, binding = 1) writeonly buffer Out { vec4 o[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    vec2 uv = vec2(float(i % 8u) * 0.75 - 0.5, float(i / 8u) * 0.625 - 0.25) / vec2(textureSize(Tex, 0));\n"
    "    o[i] = textureLod(Tex, uv, 0.0);\n"
    "}\n";

static void fill_texture(uint8_t tex[TW * TH * 4])
{
    for (int i = 0; i < TW * TH * 4; i++)
        tex[i] = (uint8_t)((i * 37 + 11) % 256);
}

TEST(a_sampled_image_with_linear_filtering)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(make(ctx, "sample.comp", sample_src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.bindings[0].kind, KILN_BINDING_COMBINED_IMAGE_SAMPLER);
    CHECK_EQ(it.bindings[0].image_dims, 2);
    uint8_t tex[TW * TH * 4];
    fill_texture(tex);
    kiln_image img = image(ctx, TW, TH, 0, KILN_FORMAT_RGBA8, tex);
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = SAMPLES * 16}, &out));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    /* The default sampler: linear, clamped to the edge. */
    kiln_binding bind[2] = {{.binding = 0, .image = img}, {.binding = 1, .buffer = out}};
    REQUIRE_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2, .groups = {1}}));
    float got[SAMPLES * 4];
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < SAMPLES; i++) {
        float u, v;
        sample_uv(i, &u, &v);
        for (int c = 0; c < 4; c++) {
            float want = bilinear(tex, u, v, c);
            if (fabsf(got[i * 4 + c] - want) > 1.0f / 255.0f) {
                if (wrong++ < 4)
                    fprintf(stderr, "sample %u (%.3f, %.3f) channel %d: %f, the CPU's %f\n", i, u, v, c,
                            got[i * 4 + c], want);
            }
        }
    }
    CHECK_EQ(wrong, 0);
    test_context_done(ctx);
}

TEST(a_separate_texture_and_sampler_nearest_and_repeat)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char src[] =
        "#version 450\n"
        "layout(local_size_x = 64) in;\n"
        "layout(binding = 0) uniform texture2D Tex;\n"
        "layout(binding = 1) uniform sampler Smp;\n"
        "layout(std430, binding = 2) writeonly buffer Out { vec4 o[]; };\n"
        "void main() {\n"
        "    uint i = gl_GlobalInvocationID.x;\n"
        "    vec2 uv = vec2(float(i % 8u) * 0.75 - 0.5, float(i / 8u) * 0.625 - 0.25) / vec2(4.0);\n"
        "    o[i] = textureLod(sampler2D(Tex, Smp), uv * 3.0 - 1.0, 0.0);\n"
        "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "separate.comp", src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.bindings[0].kind, KILN_BINDING_SAMPLED_IMAGE);
    CHECK_EQ(it.bindings[1].kind, KILN_BINDING_SAMPLER);
    uint8_t tex[TW * TH * 4];
    fill_texture(tex);
    kiln_image img = image(ctx, TW, TH, 0, KILN_FORMAT_RGBA8, tex);
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = SAMPLES * 16}, &out));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[3] = {
        {.binding = 0, .image = img},
        {.binding = 1, .sampler = {.filter = KILN_FILTER_NEAREST, .address = KILN_ADDRESS_REPEAT}},
        {.binding = 2, .buffer = out},
    };
    REQUIRE_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 3, .groups = {1}}));
    float got[SAMPLES * 4];
    REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < SAMPLES; i++) {
        float u, v;
        sample_uv(i, &u, &v);
        /* uv * 3 - 1 in normalized units is u * 3 - 4 in texels; every
         * value here is exact in binary, so the device's floor and the
         * CPU's agree. */
        float x = u * 3.0f - (float)TW, y = v * 3.0f - (float)TH;
        for (int c = 0; c < 4; c++)
            wrong += fabsf(got[i * 4 + c] - texel_at(tex, (int)floorf(x), (int)floorf(y), c, true)) > 1e-6f;
    }
    CHECK_EQ(wrong, 0);
    test_context_done(ctx);
}

/* ---- hazards ---------------------------------------------------------------------------- */

/* Node 0 writes an image; node 1 reads it (sampled) into a buffer; node 2
 * writes the image again, after node 1's read. Submitted several times,
 * each round's values differ (a param word), so a missing barrier shows. */
TEST(image_hazards_write_then_read_then_write)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    static const char write_src[] = "#version 450\n"
                                    "layout(local_size_x = 8, local_size_y = 8) in;\n"
                                    "layout(binding = 0, r32f) uniform writeonly image2D Img;\n"
                                    "void main() {\n"
                                    "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                                    "    imageStore(Img, p, vec4(float(kiln_param(0) * 1000u + uint(p.y * 16 + p.x))));\n"
                                    "}\n";
    static const char read_src[] = "#version 450\n"
                                   "layout(local_size_x = 8, local_size_y = 8) in;\n"
                                   "layout(binding = 0) uniform sampler2D Img;\n"
                                   "layout(std430, binding = 1) writeonly buffer Out { float o[]; };\n"
                                   "void main() {\n"
                                   "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                                   "    o[p.y * 16 + p.x] = texelFetch(Img, p, 0).r;\n"
                                   "}\n";
    kiln_program pw, pr;
    REQUIRE_OK(make(ctx, "write.comp", write_src, &pw));
    REQUIRE_OK(make(ctx, "read.comp", read_src, &pr));
    kiln_image img = image(ctx, 16, 16, 0, KILN_FORMAT_R32F, NULL);
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256 * 4}, &out));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node w1, r1, w2;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = pw, .bindings = &(kiln_binding){.image = img},
                                                      .binding_count = 1, .groups = {2, 2}},
                                    &w1));
    kiln_binding rb[2] = {{.binding = 0, .image = img}, {.binding = 1, .buffer = out}};
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = pr, .bindings = rb, .binding_count = 2,
                                                      .groups = {2, 2}},
                                    &r1));
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = pw, .bindings = &(kiln_binding){.image = img},
                                                      .binding_count = 1, .groups = {2, 2}},
                                    &w2));
    for (uint32_t round = 1; round <= 4; round++) {
        CHECK_OK(kiln_node_set_param(ctx, w1, 0, round));
        CHECK_OK(kiln_node_set_param(ctx, w2, 0, round + 100));
        kiln_ticket t;
        REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
        REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        float got[256], img_now[256];
        REQUIRE_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
        REQUIRE_OK(kiln_image_readback(ctx, img, img_now, sizeof img_now));
        uint32_t wrong = 0;
        for (uint32_t i = 0; i < 256; i++) {
            wrong += got[i] != (float)(round * 1000 + i);            /* the read saw the first write */
            wrong += img_now[i] != (float)((round + 100) * 1000 + i); /* the second write came after it */
        }
        CHECK_EQ(wrong, 0);
    }
    kiln_scheme_stats st;
    REQUIRE_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK_EQ(st.barriers, 2);   /* one before the read, one before the second write */
    test_context_done(ctx);
}

/* ---- specialization ------------------------------------------------------------------------ */

/* A node over images is specialized like any other: its variant binds
 * the same images (the layout follows the signature), KILN_SPEC_VERIFY
 * runs both programs on the same texels (it copies images too) and finds
 * them equal, and every frame is right. */
TEST(a_node_over_images_is_specialized_and_verified)
{
    setenv("KILN_SPEC_VERIFY", "1", 1);
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx));
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 8, local_size_y = 8) in;\n"
                              "layout(binding = 0) uniform sampler2D Src;\n"
                              "layout(binding = 1, r32f) uniform image2D Acc;\n"
                              "void main() {\n"
                              "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                              "    float v = texelFetch(Src, p, 0).r * float(kiln_param(0));\n"
                              "    imageStore(Acc, p, imageLoad(Acc, p) + vec4(v));\n"
                              "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "acc.comp", src, &p));
    float in[16 * 16];
    for (int i = 0; i < 256; i++)
        in[i] = (float)(i % 17);
    kiln_image a = image(ctx, 16, 16, 0, KILN_FORMAT_R32F, in), acc = image(ctx, 16, 16, 0, KILN_FORMAT_R32F, NULL);
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[2] = {{.binding = 0, .image = a, .sampler = {.filter = KILN_FILTER_NEAREST}},
                            {.binding = 1, .image = acc}};
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                                      .groups = {2, 2}, .params = (const uint32_t[]){3},
                                                      .param_count = 1},
                                    &n));
    float want[256] = {0}, got[256];
    for (int frame = 1; frame <= 24; frame++) {
        kiln_ticket t;
        REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
        REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
        for (int i = 0; i < 256; i++)
            want[i] += in[i] * 3.0f;
        REQUIRE_OK(kiln_image_readback(ctx, acc, got, sizeof got));
        CHECK(!memcmp(got, want, sizeof got));
        uint32_t pending = 1;
        for (int w = 0; w < 5000 && pending; w++) {   /* lets a variant's compile land (at most 5 s) */
            CHECK_OK(kiln_compiles_pending(ctx, &pending));
            if (pending)
                nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        }
    }
    kiln_scheme_stats st;
    REQUIRE_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK(st.spec_promotions >= 1);
    unsetenv("KILN_SPEC_VERIFY");
    test_context_done(ctx);
}

/* ---- every format a format qualifier names ------------------------------------------------ */

/* The channels of a format as the test packs them (an independent copy of
 * what Vulkan's formats say, not kiln's). */
enum kind { UNORM, SNORM, UINT, SINT, FLOAT, UFLOAT };
struct form {
    kiln_format f;
    enum kind kind;
    uint32_t channels;
    uint32_t bits[4];    /* per channel, red first; packed formats' fields low to high */
};
static const struct form forms[] = {
    {KILN_FORMAT_R32F, FLOAT, 1, {32}},              {KILN_FORMAT_R32UI, UINT, 1, {32}},
    {KILN_FORMAT_R32I, SINT, 1, {32}},               {KILN_FORMAT_RG32F, FLOAT, 2, {32, 32}},
    {KILN_FORMAT_RG32UI, UINT, 2, {32, 32}},         {KILN_FORMAT_RG32I, SINT, 2, {32, 32}},
    {KILN_FORMAT_RGBA32F, FLOAT, 4, {32, 32, 32, 32}}, {KILN_FORMAT_RGBA32UI, UINT, 4, {32, 32, 32, 32}},
    {KILN_FORMAT_RGBA32I, SINT, 4, {32, 32, 32, 32}}, {KILN_FORMAT_R16F, FLOAT, 1, {16}},
    {KILN_FORMAT_RG16F, FLOAT, 2, {16, 16}},         {KILN_FORMAT_RGBA16F, FLOAT, 4, {16, 16, 16, 16}},
    {KILN_FORMAT_RGBA16UI, UINT, 4, {16, 16, 16, 16}}, {KILN_FORMAT_RGBA16I, SINT, 4, {16, 16, 16, 16}},
    {KILN_FORMAT_RGBA8, UNORM, 4, {8, 8, 8, 8}},     {KILN_FORMAT_RGBA8_SNORM, SNORM, 4, {8, 8, 8, 8}},
    {KILN_FORMAT_RGBA8UI, UINT, 4, {8, 8, 8, 8}},    {KILN_FORMAT_RGBA8I, SINT, 4, {8, 8, 8, 8}},
    {KILN_FORMAT_R8, UNORM, 1, {8}},                 {KILN_FORMAT_R8UI, UINT, 1, {8}},
    {KILN_FORMAT_R8I, SINT, 1, {8}},                 {KILN_FORMAT_R11F_G11F_B10F, UFLOAT, 3, {11, 11, 10}},
    {KILN_FORMAT_RGB10_A2, UNORM, 4, {10, 10, 10, 2}}, {KILN_FORMAT_RGBA16, UNORM, 4, {16, 16, 16, 16}},
    {KILN_FORMAT_RG16, UNORM, 2, {16, 16}},          {KILN_FORMAT_RG8, UNORM, 2, {8, 8}},
    {KILN_FORMAT_R16, UNORM, 1, {16}},               {KILN_FORMAT_RGBA16_SNORM, SNORM, 4, {16, 16, 16, 16}},
    {KILN_FORMAT_RG16_SNORM, SNORM, 2, {16, 16}},    {KILN_FORMAT_RG8_SNORM, SNORM, 2, {8, 8}},
    {KILN_FORMAT_R16_SNORM, SNORM, 1, {16}},         {KILN_FORMAT_R8_SNORM, SNORM, 1, {8}},
    {KILN_FORMAT_RG16I, SINT, 2, {16, 16}},          {KILN_FORMAT_RG8I, SINT, 2, {8, 8}},
    {KILN_FORMAT_R16I, SINT, 1, {16}},               {KILN_FORMAT_RGB10_A2UI, UINT, 4, {10, 10, 10, 2}},
    {KILN_FORMAT_RG16UI, UINT, 2, {16, 16}},         {KILN_FORMAT_RG8UI, UINT, 2, {8, 8}},
    {KILN_FORMAT_R16UI, UINT, 1, {16}},              {KILN_FORMAT_R64UI, UINT, 1, {64}},
    {KILN_FORMAT_R64I, SINT, 1, {64}},
};

static const char *image_prefix(const struct form *fm)
{
    if (fm->bits[0] == 64)
        return fm->kind == UINT ? "u64" : "i64";
    return fm->kind == UINT ? "u" : fm->kind == SINT ? "i" : "";
}

/* Channel c's field of texel t (fields packed low to high in a 32-bit
 * word where the texel is one word of several channels). */
static uint64_t field_get(const struct form *fm, const uint8_t *t, uint32_t c)
{
    uint32_t off = 0;
    for (uint32_t k = 0; k < c; k++)
        off += fm->bits[k];
    uint64_t all = 0;
    memcpy(&all, t, kiln_format_size(fm->f) < 8 ? kiln_format_size(fm->f) : 8);
    if (fm->bits[c] >= 32 && fm->bits[c] != 64) {
        uint32_t w;
        memcpy(&w, t + off / 8, 4);
        return w;
    }
    return fm->bits[c] == 64 ? all : (all >> off) & ((1ull << fm->bits[c]) - 1);
}

static void field_set(const struct form *fm, uint8_t *t, uint32_t c, uint64_t v)
{
    uint32_t off = 0, size = kiln_format_size(fm->f);
    for (uint32_t k = 0; k < c; k++)
        off += fm->bits[k];
    if (fm->bits[c] == 32 || fm->bits[c] == 64) {
        memcpy(t + off / 8, &v, fm->bits[c] / 8);
        return;
    }
    uint64_t all = 0;
    memcpy(&all, t, size);
    all = (all & ~(((1ull << fm->bits[c]) - 1) << off)) | (v & ((1ull << fm->bits[c]) - 1)) << off;
    memcpy(t, &all, size);
}

/* A channel value every format keeps as it is through a load and a store:
 * no NaN or infinity, no snorm's most negative (it reads -1.0, and -1.0
 * stores as the next one up). */
static uint64_t keepable(const struct form *fm, uint32_t c, uint64_t seed)
{
    uint32_t b = fm->bits[c];
    uint64_t mask = b == 64 ? UINT64_MAX : (1ull << b) - 1, v = (seed * 0x9e3779b97f4a7c15ull >> 11) & mask;
    if (fm->kind == SNORM && v == 1ull << (b - 1))
        v++;
    if (fm->kind == FLOAT || fm->kind == UFLOAT) {
        uint32_t mant = b == 32 ? 23 : b == 16 ? 10 : b - 5, exp = b == 32 ? 8 : 5;
        uint64_t e = (v >> mant) & ((1ull << exp) - 1);
        if (e == (1ull << exp) - 1)
            v &= ~(1ull << mant);   /* the largest exponent less one: finite */
        if (e == 0)
            v &= ~((1ull << mant) - 1);   /* no subnormals: a device may flush them */
    }
    return v;
}

/* Every format: an image made (or refused by the format's name where the
 * device cannot store it), a shader declaring the format copying it texel
 * by texel, the texels back as they went in. */
TEST(storage_images_of_every_format_copy_exactly)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(KILN_ARRAY_LEN_T(forms), KILN_FORMAT_COUNT - 1);
    uint32_t ran = 0;
    for (size_t i = 0; i < KILN_ARRAY_LEN_T(forms); i++) {
        const struct form *fm = &forms[i];
        const char *q = kiln_format_name(fm->f), *pre = image_prefix(fm);
        bool wide = fm->bits[0] == 64;
        char src[1024];
        snprintf(src, sizeof src,
                 "#version 450\n%s"
                 "layout(local_size_x = 4, local_size_y = 4) in;\n"
                 "layout(set = 0, binding = 0, %s) uniform readonly %simage2D Src;\n"
                 "layout(set = 0, binding = 1, %s) uniform writeonly %simage2D Dst;\n"
                 "void main() {\n"
                 "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                 "    if (any(greaterThanEqual(p, imageSize(Src)))) return;\n"
                 "    imageStore(Dst, p, imageLoad(Src, p));\n"
                 "}\n",
                 wide ? "#extension GL_EXT_shader_image_int64 : require\n"
                        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n" : "",
                 q, pre, q, pre);
        kiln_program p;
        kiln_result r = make(ctx, q, src, &p);
        if (wide && !(caps.shader_features & KILN_FEATURE_IMAGE_INT64)) {
            /* Refused by the capability and the feature, naming the formats. */
            CHECK_RESULT(r, KILN_ERR_LIMIT);
            CHECK_MSG("Int64ImageEXT, which needs shaderImageInt64Atomics (VK_EXT_shader_image_atomic_int64: r64ui "
                      "and r64i images)");
            continue;
        }
        REQUIRE_OK(r);
        kiln_program_interface it;
        REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
        CHECK_EQ(it.bindings[0].format, fm->f);
        kiln_image a, b;
        r = kiln_image_create(ctx, &(kiln_image_desc){.width = W, .height = H, .format = fm->f,
                                                      .usage = KILN_IMAGE_STORAGE}, &a);
        if (r == KILN_ERR_LIMIT) {   /* the device cannot store texels of it: said by name */
            CHECK(strstr(kiln_last_error(), q) != NULL);
            continue;
        }
        REQUIRE_OK(r);
        REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = W, .height = H, .format = fm->f}, &b));
        uint32_t texel = kiln_format_size(fm->f), n = W * H * texel;
        uint8_t *in = calloc(1, n), *out = malloc(n);
        REQUIRE(in && out);
        for (uint32_t t = 0; t < W * H; t++)
            for (uint32_t c = 0; c < fm->channels; c++)
                field_set(fm, in + (size_t)t * texel, c, keepable(fm, c, t * 4 + c + 1));
        REQUIRE_OK(kiln_image_upload(ctx, a, in, n));
        kiln_scheme s;
        REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
        kiln_binding bind[2] = {{.binding = 0, .image = a}, {.binding = 1, .image = b}};
        REQUIRE_OK(run_once(ctx, s,
                            &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                              .groups = {(W + 3) / 4, (H + 3) / 4, 1}}));
        REQUIRE_OK(kiln_image_readback(ctx, b, out, n));
        uint32_t wrong = 0;
        for (uint32_t t = 0; t < W * H; t++)
            for (uint32_t c = 0; c < fm->channels; c++)
                wrong += field_get(fm, out + (size_t)t * texel, c) != field_get(fm, in + (size_t)t * texel, c);
        if (wrong) {
            test_failures_++;
            fprintf(stderr, "%s: %u channels of %u came back changed\n", q, wrong, W * H * fm->channels);
        }
        ran++;
        free(in);
        free(out);
        CHECK_OK(kiln_scheme_destroy(ctx, s));
        CHECK_OK(kiln_image_destroy(ctx, a));
        CHECK_OK(kiln_image_destroy(ctx, b));
    }
    CHECK(ran >= 21);   /* Vulkan requires storage of the formats kiln had before these */
    test_context_done(ctx);
}

/* An unsigned float of 5 exponent bits and m of mantissa (exact values
 * only: the test stores multiples of powers of two). */
static uint32_t ufloat(float v, int m)
{
    if (v == 0)
        return 0;
    int e;
    float fr = frexpf(v, &e);
    return (uint32_t)(e - 1 + 15) << m | (uint32_t)lrintf(ldexpf(2 * fr - 1, m));
}

/* What a shader stores is what the CPU packs: a value computed from the
 * texel's place, in the formats whose packing differs most from kiln's
 * first ones. */
TEST(storage_images_store_what_the_cpu_packs)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const struct {
        kiln_format f;
        const char *type, *value;
    } cases[] = {
        {KILN_FORMAT_R11F_G11F_B10F, "image2D", "vec4(float(p.x) / 16.0, float(p.y) / 8.0, 0.75, 1.0)"},
        {KILN_FORMAT_RGB10_A2, "image2D", "vec4(float(p.x) / 12.0, float(p.y) / 6.0, 0.5, 1.0 / 3.0)"},
        {KILN_FORMAT_RG16F, "image2D", "vec4(float(p.x) * 0.25 - 1.0, float(p.y) * 64.0, 0, 0)"},
        {KILN_FORMAT_R16UI, "uimage2D", "uvec4(uint(p.x) * 4099u + uint(p.y) * 2000u + 3u)"},
        {KILN_FORMAT_RGBA16_SNORM, "image2D", "vec4(float(p.x) / 6.0 - 1.0, -float(p.y) / 6.0, 0.5, -1.0 / 3.0)"},
    };
    for (size_t i = 0; i < KILN_ARRAY_LEN_T(cases); i++) {
        kiln_format f = cases[i].f;
        const char *q = kiln_format_name(f);
        char src[1024];
        snprintf(src, sizeof src,
                 "#version 450\n"
                 "layout(local_size_x = 4, local_size_y = 4) in;\n"
                 "layout(set = 0, binding = 0, %s) uniform writeonly %s Dst;\n"
                 "void main() {\n"
                 "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                 "    if (any(greaterThanEqual(p, imageSize(Dst)))) return;\n"
                 "    imageStore(Dst, p, %s);\n"
                 "}\n",
                 q, cases[i].type, cases[i].value);
        kiln_program p;
        REQUIRE_OK(make(ctx, q, src, &p));
        kiln_image img;
        kiln_result r = kiln_image_create(ctx, &(kiln_image_desc){.width = W, .height = H, .format = f}, &img);
        if (r == KILN_ERR_LIMIT) {
            CHECK(strstr(kiln_last_error(), q) != NULL);
            continue;
        }
        REQUIRE_OK(r);
        kiln_scheme s;
        REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
        REQUIRE_OK(run_once(ctx, s,
                            &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.image = img},
                                              .binding_count = 1, .groups = {(W + 3) / 4, (H + 3) / 4, 1}}));
        uint32_t texel = kiln_format_size(f);
        uint8_t out[W * H * 8];
        REQUIRE_OK(kiln_image_readback(ctx, img, out, W * H * texel));
        uint32_t wrong = 0;
        for (uint32_t y = 0; y < H; y++)
            for (uint32_t x = 0; x < W; x++) {
                const uint8_t *t = out + (y * W + x) * texel;
                uint32_t w32;
                memcpy(&w32, t, 4);
                switch (f) {
                case KILN_FORMAT_R11F_G11F_B10F:
                    wrong += w32 != (ufloat((float)x / 16.0f, 6) | ufloat((float)y / 8.0f, 6) << 11 |
                                     ufloat(0.75f, 5) << 22);
                    break;
                case KILN_FORMAT_RGB10_A2: {
                    /* float to unorm rounds to nearest (within one step). */
                    float want[4] = {(float)x / 12.0f * 1023.0f, (float)y / 6.0f * 1023.0f, 511.5f, 1.0f};
                    for (uint32_t c = 0; c < 4; c++) {
                        uint32_t got = c < 3 ? (w32 >> (10 * c)) & 1023u : w32 >> 30;
                        wrong += fabsf((float)got - want[c]) > 1.0f;
                    }
                    break;
                }
                case KILN_FORMAT_RG16F: {
                    uint16_t h[2];
                    memcpy(h, t, 4);
                    wrong += half_value(h[0]) != (float)x * 0.25f - 1.0f || half_value(h[1]) != (float)y * 64.0f;
                    break;
                }
                case KILN_FORMAT_R16UI: {
                    uint16_t u;
                    memcpy(&u, t, 2);
                    wrong += u != (uint16_t)(x * 4099u + y * 2000u + 3u);
                    break;
                }
                default: {   /* rgba16_snorm */
                    int16_t v[4];
                    memcpy(v, t, 8);
                    float want[4] = {((float)x / 6.0f - 1.0f) * 32767.0f, -(float)y / 6.0f * 32767.0f, 16383.5f,
                                     -32767.0f / 3.0f};
                    for (int c = 0; c < 4; c++)
                        wrong += fabsf((float)v[c] - want[c]) > 1.0f;
                    break;
                }
                }
            }
        if (wrong) {
            test_failures_++;
            fprintf(stderr, "%s: %u texels differ from the CPU's packing\n", q, wrong);
        }
        CHECK_OK(kiln_scheme_destroy(ctx, s));
        CHECK_OK(kiln_image_destroy(ctx, img));
    }
    test_context_done(ctx);
}

/* ---- layers, levels, 1D and cube images -------------------------------------------------- */

/* A uimage2DArray written per layer: texel (x, y) of layer z holds
 * x + 100 y + 10000 z + 1, one workgroup layer a layer; read back whole
 * (layers one after another) and checked against the CPU. A node binding
 * it as a plain image2D is refused naming the layers. */
TEST(an_arrayed_image_written_per_layer)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char *src = "#version 450\n"
                             "layout(local_size_x = 4, local_size_y = 4) in;\n"
                             "layout(binding = 0, r32ui) uniform writeonly uimage2DArray Layers;\n"
                             "void main() {\n"
                             "    ivec3 p = ivec3(gl_GlobalInvocationID);\n"
                             "    if (any(greaterThanEqual(p, imageSize(Layers)))) return;\n"
                             "    imageStore(Layers, p, uvec4(uint(p.x + 100 * p.y + 10000 * p.z + 1)));\n"
                             "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "layers.comp", src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK(it.bindings[0].image_dims == 2 && it.bindings[0].image_arrayed == 1 && it.bindings[0].image_cube == 0);
    enum { LW = 9, LH = 5, LAYERS = 3 };
    kiln_image img;
    REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = LW, .height = LH, .layers = LAYERS,
                                                         .format = KILN_FORMAT_R32UI},
                                 &img));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    REQUIRE_OK(run_once(ctx, s,
                        &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.image = img},
                                          .binding_count = 1, .groups = {(LW + 3) / 4, (LH + 3) / 4, LAYERS}}));
    uint32_t got[LW * LH * LAYERS];
    REQUIRE_OK(kiln_image_readback(ctx, img, got, sizeof got));
    uint32_t wrong = 0;
    for (uint32_t z = 0; z < LAYERS; z++)
        for (uint32_t y = 0; y < LH; y++)
            for (uint32_t x = 0; x < LW; x++)
                wrong += got[(z * LH + y) * LW + x] != x + 100 * y + 10000 * z + 1;
    CHECK_EQ(wrong, 0);
    /* One layer alone, up and back: layer 1 overwritten, layers 0 and 2 as
     * the shader left them. */
    uint32_t one[LW * LH], back[LW * LH];
    for (uint32_t i = 0; i < LW * LH; i++)
        one[i] = 7000000u + i;
    REQUIRE_OK(kiln_image_upload_part(ctx, img, &(kiln_image_part){.layer = 1}, one, sizeof one));
    REQUIRE_OK(kiln_image_readback_part(ctx, img, &(kiln_image_part){.layer = 1}, back, sizeof back));
    CHECK(!memcmp(one, back, sizeof one));
    REQUIRE_OK(kiln_image_readback(ctx, img, got, sizeof got));
    CHECK(!memcmp(got + LW * LH, one, sizeof one));
    CHECK_EQ(got[0], 1);
    CHECK_EQ(got[2 * LW * LH], 20001);
    CHECK_RESULT(kiln_image_readback_part(ctx, img, &(kiln_image_part){.layer = 2, .layers = 2}, got, 8 * LW * LH),
                 KILN_ERR_INVALID);
    CHECK_MSG("level 0, layers 2..3; it has 1 level of 3 layers");
    CHECK_RESULT(kiln_image_readback_part(ctx, img, &(kiln_image_part){.layer = 0}, got, 4), KILN_ERR_INVALID);
    CHECK_MSG("4 bytes given; level 0's 1 layer are 180 bytes");
    /* The wrong size names the layers; a plain declaration is refused. */
    CHECK_RESULT(kiln_image_readback(ctx, img, got, sizeof got - 4), KILN_ERR_INVALID);
    CHECK_MSG("(3 layers, 1 level)");
    static const char *plain = "#version 450\nlayout(local_size_x = 1) in;\n"
                               "layout(binding = 0, r32ui) uniform writeonly uimage2D I;\n"
                               "void main() { imageStore(I, ivec2(0), uvec4(1)); }\n";
    kiln_program pp;
    REQUIRE_OK(make(ctx, "plain.comp", plain, &pp));
    kiln_node n;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                                        &(kiln_node_desc){.program = pp,
                                                                          .bindings = &(kiln_binding){.image = img},
                                                                          .binding_count = 1, .groups = {1}},
                                                        &n)),
                 KILN_ERR_LAYOUT);
    CHECK_MSG("has 3 layers: declare an arrayed image (image2DArray)");
    test_context_done(ctx);
}

/* Mip levels up and down: level 0 uploaded, each next level made by a
 * node reading the level above through a sampler (textureLod: the 2x2
 * average with linear filtering at the texel corner) and writing its own
 * level through a storage view of it; then the levels read back whole and
 * checked against the CPU's box filter. */
TEST(mip_levels_made_down_and_read_up)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char *down = "#version 450\n"
                              "layout(local_size_x = 4, local_size_y = 4) in;\n"
                              "layout(binding = 0) uniform sampler2D Above;\n"
                              "layout(binding = 1, r32f) uniform writeonly image2D Level;\n"
                              "void main() {\n"
                              "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                              "    ivec2 size = imageSize(Level);\n"
                              "    if (any(greaterThanEqual(p, size))) return;\n"
                              "    float lod = float(kiln_param(0));\n"
                              "    vec2 uv = (vec2(p) * 2.0 + 1.0) / vec2(textureSize(Above, int(lod)));\n"
                              "    imageStore(Level, p, textureLod(Above, uv, lod));\n"
                              "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "down.comp", down, &p));
    enum { MW = 16, MH = 8, LEVELS = 4 };   /* 16x8, 8x4, 4x2, 2x1 */
    kiln_image img;
    REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = MW, .height = MH, .levels = LEVELS,
                                                         .format = KILN_FORMAT_R32F},
                                 &img));
    float all[MW * MH + 8 * 4 + 4 * 2 + 2 * 1], want[sizeof all / sizeof all[0]];
    memset(all, 0, sizeof all);
    for (uint32_t i = 0; i < MW * MH; i++)
        all[i] = want[i] = (float)((i * 37) % 64);   /* small integers: every average exact */
    REQUIRE_OK(kiln_image_upload(ctx, img, all, sizeof all));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    uint32_t above = 0, at = MW * MH;
    for (uint32_t l = 1; l < LEVELS; l++) {
        uint32_t w = MW >> l, h = MH >> l, aw = MW >> (l - 1);
        uint32_t lod = l - 1;
        kiln_binding b[2] = {{.binding = 0, .image = img, .sampler = {.filter = KILN_FILTER_LINEAR}},
                             {.binding = 1, .image = img, .level = l}};
        kiln_node n;
        REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2,
                                                                   .groups = {(w + 3) / 4, (h + 3) / 4, 1},
                                                                   .params = &lod, .param_count = 1},
                                        &n));
        for (uint32_t y = 0; y < h; y++)
            for (uint32_t x = 0; x < w; x++) {
                const float *a = want + above;
                want[at + y * w + x] = (a[2 * y * aw + 2 * x] + a[2 * y * aw + 2 * x + 1] +
                                        a[(2 * y + 1) * aw + 2 * x] + a[(2 * y + 1) * aw + 2 * x + 1]) / 4.0f;
            }
        above = at;
        at += w * h;
    }
    /* A level the image lacks is refused naming its count. */
    kiln_node bad;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(
                                       ctx, s,
                                       &(kiln_node_desc){.program = p,
                                                         .bindings = (kiln_binding[]){{.binding = 0, .image = img},
                                                                                      {.binding = 1, .image = img,
                                                                                       .level = LEVELS}},
                                                         .binding_count = 2, .groups = {1}},
                                       &bad)),
                 KILN_ERR_INVALID);
    CHECK_MSG("level 4; image 'image' has 4 levels");
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
    REQUIRE_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    REQUIRE_OK(kiln_image_readback(ctx, img, all, sizeof all));
    uint32_t wrong = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        wrong += fabsf(all[i] - want[i]) > 1e-4f;
    float level2[4 * 2];   /* one level alone: 4x2 */
    REQUIRE_OK(kiln_image_readback_part(ctx, img, &(kiln_image_part){.level = 2}, level2, sizeof level2));
    for (int i = 0; i < 8; i++)
        wrong += fabsf(level2[i] - want[MW * MH + 8 * 4 + i]) > 1e-4f;
    if (wrong) {
        test_failures_++;
        fprintf(stderr, "%u of %zu texels differ from the CPU's box filter\n", wrong, sizeof all / sizeof all[0]);
    }
    /* More levels than the sides allow are refused. */
    kiln_image too;
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = 4, .height = 4, .levels = 4,
                                                           .format = KILN_FORMAT_R32F},
                                   &too),
                 KILN_ERR_INVALID);
    CHECK_MSG("4 mip levels; a 4x4x1 image has at most 3");
    test_context_done(ctx);
}

/* A 1D image and a cube map: a storage image1D written, a samplerCube
 * read at each face's centre (nearest), both against the CPU. */
TEST(a_1d_image_and_a_cube_map)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char *src = "#version 450\n"
                             "layout(local_size_x = 6) in;\n"
                             "layout(binding = 0) uniform samplerCube Sky;\n"
                             "layout(binding = 1, r32f) uniform writeonly image1D Line;\n"
                             "void main() {\n"
                             "    int f = int(gl_GlobalInvocationID.x);\n"
                             "    vec3 dirs[6] = vec3[6](vec3(1, 0, 0), vec3(-1, 0, 0), vec3(0, 1, 0), vec3(0, -1, 0),\n"
                             "                           vec3(0, 0, 1), vec3(0, 0, -1));\n"
                             "    imageStore(Line, f, textureLod(Sky, dirs[f], 0.0) * 10.0 + float(f));\n"
                             "}\n";
    kiln_program p;
    REQUIRE_OK(make(ctx, "cube.comp", src, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK(it.bindings[0].image_cube == 1 && it.bindings[0].image_dims == 2);
    CHECK(it.bindings[1].image_dims == 1 && it.bindings[1].image_arrayed == 0);
    kiln_image sky, line;
    REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = 2, .height = 2, .cube = 1,
                                                         .format = KILN_FORMAT_R32F},
                                 &sky));
    REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = 6, .height = 1, .dims = 1,
                                                         .format = KILN_FORMAT_R32F},
                                 &line));
    float faces[6 * 4];
    for (int f = 0; f < 6; f++)
        for (int k = 0; k < 4; k++)
            faces[f * 4 + k] = (float)(f + 1);   /* every texel of face f holds f + 1 */
    REQUIRE_OK(kiln_image_upload(ctx, sky, faces, sizeof faces));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding b[2] = {{.binding = 0, .image = sky, .sampler = {.filter = KILN_FILTER_NEAREST}},
                         {.binding = 1, .image = line}};
    REQUIRE_OK(run_once(ctx, s, &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2, .groups = {1}}));
    float got[6];
    REQUIRE_OK(kiln_image_readback(ctx, line, got, sizeof got));
    for (int f = 0; f < 6; f++)
        CHECK(got[f] == (float)(f + 1) * 10.0f + (float)f);
    /* A 2D image bound where the shader declares a cube is refused by name. */
    kiln_image flat;
    REQUIRE_OK(kiln_image_create(ctx, &(kiln_image_desc){.width = 2, .height = 2, .format = KILN_FORMAT_R32F}, &flat));
    b[0].image = flat;
    kiln_node n;
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                                        &(kiln_node_desc){.program = p, .bindings = b,
                                                                          .binding_count = 2, .groups = {1}},
                                                        &n)),
                 KILN_ERR_LAYOUT);
    CHECK_MSG("is no cube map (kiln_image_desc.cube)");
    kiln_image bad;
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = 2, .height = 3, .cube = 1,
                                                           .format = KILN_FORMAT_R32F},
                                   &bad),
                 KILN_ERR_INVALID);
    CHECK_MSG("a cube map is 2D, square and six layers a cube");
    test_context_done(ctx);
}

/* ---- errors ------------------------------------------------------------------------------ */

TEST(images_given_wrong_are_refused_by_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const char storage_src[] = "#version 450\n"
                                      "layout(local_size_x = 1) in;\n"
                                      "layout(binding = 0, rgba8) uniform image2D Img;\n"
                                      "void main() { imageStore(Img, ivec2(0), imageLoad(Img, ivec2(1))); }\n";
    kiln_program p, ps;
    REQUIRE_OK(make(ctx, "storage.comp", storage_src, &p));
    REQUIRE_OK(make(ctx, "sample.comp", sample_src, &ps));
    kiln_image rgba8 = image(ctx, 4, 4, 0, KILN_FORMAT_RGBA8, NULL);
    kiln_image r32f = image(ctx, 4, 4, 0, KILN_FORMAT_R32F, NULL);
    kiln_image vol = image(ctx, 4, 4, 2, KILN_FORMAT_RGBA8, NULL);
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 1024}, &buf));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
#define ADD(prog, ...)                                                                             \
    test_settled(ctx, kiln_scheme_add_node(ctx, s,                                                 \
                         &(kiln_node_desc){.program = prog, .bindings = (kiln_binding[]){__VA_ARGS__}, \
                                           .binding_count = sizeof((kiln_binding[]){__VA_ARGS__}) /     \
                                                            sizeof(kiln_binding),                   \
                                           .groups = {1}},                                          \
                         &n))
    CHECK_RESULT(ADD(p, {.image = rgba8, .sampler = {.filter = KILN_FILTER_NEAREST}}), KILN_ERR_INVALID);
    CHECK_MSG("a storage image is read with imageLoad");
    CHECK_RESULT(ADD(p, {.buffer = buf}), KILN_ERR_LAYOUT);
    CHECK_MSG("not a buffer");
    CHECK_RESULT(ADD(p, {.binding = 0}), KILN_ERR_LAYOUT);
    CHECK_MSG("bound without an image");
    CHECK_RESULT(ADD(p, {.image = r32f}), KILN_ERR_LAYOUT);
    CHECK_MSG("is declared rgba8");
    CHECK_RESULT(ADD(p, {.image = vol}), KILN_ERR_LAYOUT);
    CHECK_MSG("is a 2D image");
    CHECK_RESULT(ADD(ps, {.binding = 0, .buffer = buf}, {.binding = 1, .buffer = buf}), KILN_ERR_LAYOUT);
    CHECK_MSG("combined image sampler");
    CHECK_RESULT(ADD(ps, {.binding = 0, .image = rgba8}, {.binding = 1, .buffer = buf, .image = rgba8}),
                 KILN_ERR_INVALID);
    CHECK_MSG("takes a buffer alone");
    kiln_image bad = {0};
    CHECK_RESULT(ADD(p, {.image = (kiln_image){rgba8.id ^ 0x100000000ull}}), KILN_ERR_HANDLE);
    (void)bad;
#undef ADD
    /* A bound image cannot be destroyed; a destroyed one is a stale handle. */
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.image = rgba8},
                                                      .binding_count = 1, .groups = {1}},
                                    &n));
    CHECK_RESULT(kiln_image_destroy(ctx, rgba8), KILN_ERR_BUSY);
    CHECK_MSG("is bound by 1 node");
    CHECK_OK(kiln_node_remove(ctx, n));
    CHECK_OK(kiln_image_destroy(ctx, rgba8));
    uint8_t bytes[64] = {0};
    CHECK_RESULT(kiln_image_upload(ctx, rgba8, bytes, sizeof bytes), KILN_ERR_HANDLE);
    /* Upload and readback move every texel: another size is refused. */
    CHECK_RESULT(kiln_image_upload(ctx, r32f, bytes, 60), KILN_ERR_INVALID);
    CHECK_MSG("64 bytes");
    CHECK_RESULT(kiln_image_readback(ctx, r32f, NULL, 64), KILN_ERR_INVALID);
    /* Descs. */
    kiln_image img;
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = 4, .height = 4}, &img), KILN_ERR_INVALID);
    CHECK_MSG("no kiln_format");
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = 0, .height = 4, .format = KILN_FORMAT_R32F}, &img),
                 KILN_ERR_INVALID);
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = 4, .height = 4, .depth = 2, .dims = 2,
                                                           .format = KILN_FORMAT_R32F},
                                   &img),
                 KILN_ERR_INVALID);
    CHECK_MSG("a 2D image of depth 2");
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    CHECK(caps.max_image_dimension_2d >= 4096);
    CHECK_RESULT(kiln_image_create(ctx, &(kiln_image_desc){.width = caps.max_image_dimension_2d + 1, .height = 1,
                                                           .format = KILN_FORMAT_R32F},
                                   &img),
                 KILN_ERR_LIMIT);
    CHECK_MSG("maxImageDimension2D");
    test_context_done(ctx);
}

TEST(images_kiln_cannot_bind_are_refused_by_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static const struct {
        const char *decl, *use, *msg;
    } cases[] = {
        {"layout(binding = 0, r32f) uniform image2DMS I;", "imageStore(I, ivec2(0), 0, vec4(1));",
         "is a multisampled image"},
        {"layout(binding = 0) uniform samplerCubeArray I;", "vec4 v = textureLod(I, vec4(1), 0.0);",
         "is an arrayed cube image (a cube array)"},
        {"layout(binding = 0) uniform sampler2DRect I;", "vec4 v = texture(I, vec2(1));", "is a rectangle image"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[512];
        snprintf(src, sizeof src, "#version 450\nlayout(local_size_x = 1) in;\n%s\nvoid main() { %s }\n",
                 cases[i].decl, cases[i].use);
        kiln_program p;
        CHECK_RESULT(make(ctx, "shape.comp", src, &p), KILN_ERR_COMPILE);
        char log[1024];
        CHECK_OK(kiln_program_log(ctx, p, log, sizeof log, NULL));
        if (!strstr(log, cases[i].msg) && !strstr(kiln_last_error(), cases[i].msg)) {
            test_failures_++;
            fprintf(stderr, "case %zu: neither the log '%s' nor the message names '%s'\n", i, log, cases[i].msg);
        }
    }
    test_context_done(ctx);
}

int main(void)
{
    RUN(storage_images_rgba8);
    RUN(storage_images_rgba16f);
    RUN(storage_images_rgba32f);
    RUN(storage_images_r32f);
    RUN(storage_images_r32ui);
    RUN(storage_images_of_every_format_copy_exactly);
    RUN(storage_images_store_what_the_cpu_packs);
    RUN(a_3d_image_written_texel_by_texel);
    RUN(an_arrayed_image_written_per_layer);
    RUN(mip_levels_made_down_and_read_up);
    RUN(a_1d_image_and_a_cube_map);
    RUN(a_sampled_image_with_linear_filtering);
    RUN(a_separate_texture_and_sampler_nearest_and_repeat);
    RUN(image_hazards_write_then_read_then_write);
    RUN(a_node_over_images_is_specialized_and_verified);
    RUN(images_given_wrong_are_refused_by_name);
    RUN(images_kiln_cannot_bind_are_refused_by_name);
    return TEST_SUMMARY();
}
