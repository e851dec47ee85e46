/* SPDX-License-Identifier: MIT */
/*
 * texels.c: a PNG's rgba8 pixels as the texels of an image format and back,
 * for `kiln run`'s --image and --out-image (image_args.c) and the PNG fuzz
 * target. A PNG converts to the normalized and float formats: 8-bit unorm
 * ones take the bytes as they are, 16-bit unorm ones b * 257, rgb10_a2
 * round(b * 1023 / 255) (alpha round(b * 3 / 255)), float ones value / 255
 * (halves and r11f_g11f_b10f's small floats rounded to nearest); on the way
 * back values are clamped to [0, 1] and rounded, NaN as 0. One channel
 * reads as grey, two as red and green, alpha 255 where the format has none.
 * A byte survives the round trip exactly through every format but two
 * (a half holds b / 255 within 2^-12 relative, well inside half a step of
 * 255): r11f_g11f_b10f keeps 6 and 5 bits of mantissa (a byte comes back
 * within 2 and 4), rgb10_a2 2 bits of alpha (within 43); cli_png_error
 * says by how much each channel may move.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "half.h"

/* How a format's channels hold a PNG's bytes. */
enum pack { NONE, BYTES, UNORM16, HALVES, FLOATS, RGB10_A2, R11G11B10 };

static enum pack pack_of(kiln_format f, uint32_t *channels)
{
    static const struct { kiln_format f; enum pack p; uint32_t ch; } forms[] = {
        {KILN_FORMAT_RGBA8, BYTES, 4},     {KILN_FORMAT_RG8, BYTES, 2},       {KILN_FORMAT_R8, BYTES, 1},
        {KILN_FORMAT_RGBA16, UNORM16, 4},  {KILN_FORMAT_RG16, UNORM16, 2},    {KILN_FORMAT_R16, UNORM16, 1},
        {KILN_FORMAT_RGBA16F, HALVES, 4},  {KILN_FORMAT_RG16F, HALVES, 2},    {KILN_FORMAT_R16F, HALVES, 1},
        {KILN_FORMAT_RGBA32F, FLOATS, 4},  {KILN_FORMAT_RG32F, FLOATS, 2},    {KILN_FORMAT_R32F, FLOATS, 1},
        {KILN_FORMAT_RGB10_A2, RGB10_A2, 4}, {KILN_FORMAT_R11F_G11F_B10F, R11G11B10, 3},
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (forms[i].f == f) {
            *channels = forms[i].ch;
            return forms[i].p;
        }
    *channels = 0;
    return NONE;
}

uint32_t cli_png_channels(kiln_format f)
{
    uint32_t ch;
    pack_of(f, &ch);
    return ch;
}

uint32_t cli_png_error(kiln_format f, uint32_t channel)
{
    if (f == KILN_FORMAT_R11F_G11F_B10F)
        return channel < 2 ? 2 : channel == 2 ? 4 : 0;
    return f == KILN_FORMAT_RGB10_A2 && channel == 3 ? 43 : 0;
}

/* An unsigned float of 5 exponent bits (bias 15) and m mantissa bits, as
 * r11f_g11f_b10f holds (m 6 and 5): rounded to nearest, the largest finite
 * past it, NaN and negatives as 0. */
static uint32_t ufloat_bits(float v, int m)
{
    if (!(v > 0))
        return 0;
    int e;
    float fr = frexpf(v, &e);   /* v = fr * 2^e, fr in [0.5, 1) */
    int biased = e - 1 + 15;
    uint32_t bits = biased <= 0 ? (uint32_t)lrintf(ldexpf(v, 14 + m))   /* subnormal: steps of 2^(-14-m) */
                                : ((uint32_t)biased << m) + (uint32_t)lrintf(ldexpf(2 * fr - 1, m));
    uint32_t most = (31u << m) - 1;
    return bits > most ? most : bits;
}

static float ufloat_value(uint32_t bits, int m)
{
    uint32_t e = bits >> m, f = bits & ((1u << m) - 1);
    if (e == 31)
        return f ? NAN : INFINITY;
    return e ? ldexpf((float)((1u << m) + f), (int)e - 15 - m) : ldexpf((float)f, -14 - m);
}

static float clamp01(float v) { return v != v ? 0.0f : v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v; }

static uint8_t byte_of(float v) { return (uint8_t)lrintf(clamp01(v) * 255.0f); }

/* A PNG's rgba8 pixels as texels of f (png_channels(f) != 0); malloc'd. */
uint8_t *cli_texels_from_png(const uint8_t *rgba, uint64_t pixels, kiln_format f)
{
    uint32_t ch;
    enum pack p = pack_of(f, &ch);
    uint32_t size = kiln_format_size(f);
    uint8_t *t = malloc((size_t)pixels * size);
    if (!t)
        return NULL;
    for (uint64_t i = 0; i < pixels; i++) {
        const uint8_t *px = rgba + i * 4;
        uint8_t *o = t + i * size;
        if (p == RGB10_A2 || p == R11G11B10) {
            uint32_t w;
            if (p == RGB10_A2) {
                w = 0;
                for (uint32_t c = 0; c < 3; c++)
                    w |= ((px[c] * 1023u + 127u) / 255u) << (10 * c);
                w |= ((px[3] * 3u + 127u) / 255u) << 30;
            } else {
                w = ufloat_bits(px[0] / 255.0f, 6) | ufloat_bits(px[1] / 255.0f, 6) << 11 |
                    ufloat_bits(px[2] / 255.0f, 5) << 22;
            }
            memcpy(o, &w, 4);
            continue;
        }
        for (uint32_t c = 0; c < ch; c++) {
            uint8_t byte = px[c];
            float v = (float)byte / 255.0f;
            if (p == BYTES) {
                o[c] = byte;
            } else if (p == UNORM16 || p == HALVES) {
                uint16_t h = p == UNORM16 ? (uint16_t)(byte * 257u) : half_from_float(v);
                memcpy(o + c * 2, &h, 2);
            } else {
                memcpy(o + c * 4, &v, 4);
            }
        }
    }
    return t;
}

/* Texels of f as rgba8 pixels (one channel as grey, two as red and
 * green); malloc'd. */
uint8_t *cli_texels_to_png(const uint8_t *t, uint64_t pixels, kiln_format f)
{
    uint32_t ch;
    enum pack p = pack_of(f, &ch);
    uint32_t size = kiln_format_size(f);
    uint8_t *rgba = malloc((size_t)pixels * 4);
    if (!rgba)
        return NULL;
    for (uint64_t i = 0; i < pixels; i++) {
        const uint8_t *in = t + i * size;
        uint8_t px[4] = {0, 0, 0, 255};
        uint32_t w = 0;
        if (size == 4)
            memcpy(&w, in, 4);
        for (uint32_t c = 0; c < ch; c++) {
            if (p == BYTES) {
                px[c] = in[c];
            } else if (p == UNORM16) {
                uint16_t u;
                memcpy(&u, in + c * 2, 2);
                px[c] = (uint8_t)((u * 255u + 32767u) / 65535u);
            } else if (p == HALVES) {
                uint16_t h;
                memcpy(&h, in + c * 2, 2);
                px[c] = byte_of(half_to_float(h));
            } else if (p == FLOATS) {
                float v;
                memcpy(&v, in + c * 4, 4);
                px[c] = byte_of(v);
            } else if (p == RGB10_A2) {
                uint32_t q = c < 3 ? (w >> (10 * c)) & 1023u : w >> 30, most = c < 3 ? 1023u : 3u;
                px[c] = (uint8_t)((q * 255u + most / 2) / most);
            } else {
                static const int shift[3] = {0, 11, 22}, mant[3] = {6, 6, 5};
                px[c] = byte_of(ufloat_value((w >> shift[c]) & ((1u << (mant[c] + 5)) - 1), mant[c]));
            }
        }
        if (ch == 1)
            px[1] = px[2] = px[0];
        memcpy(rgba + i * 4, px, 4);
    }
    return rgba;
}
