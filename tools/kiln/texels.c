/* SPDX-License-Identifier: MIT */
/*
 * texels.c: a PNG's rgba8 pixels as the texels of an image format and back,
 * for `kiln run`'s --image and --out-image (image_args.c) and the PNG fuzz
 * target. rgba8 and r8 take the bytes as they are; the float formats take
 * them as value / 255 (halves rounded to nearest even), and give them back
 * clamped to [0, 1] and rounded, NaN as 0; one channel reads as grey, two
 * as red and green, alpha 255 where the format has none. A byte survives
 * the round trip through every format here exactly (a half holds b / 255
 * within 2^-12 relative, well inside half a step of 255).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Channels a PNG fills in a format it converts to (0: it converts to
 * none of them), and whether the channels are floats of 16 bits (else
 * 32; bytes for rgba8 and r8). */
uint32_t cli_png_channels(kiln_format f, uint32_t *bits)
{
    switch (f) {
    case KILN_FORMAT_RGBA8: *bits = 8; return 4;
    case KILN_FORMAT_R8: *bits = 8; return 1;
    case KILN_FORMAT_RGBA16F: *bits = 16; return 4;
    case KILN_FORMAT_RG16F: *bits = 16; return 2;
    case KILN_FORMAT_R16F: *bits = 16; return 1;
    case KILN_FORMAT_RGBA32F: *bits = 32; return 4;
    case KILN_FORMAT_RG32F: *bits = 32; return 2;
    case KILN_FORMAT_R32F: *bits = 32; return 1;
    default: *bits = 0; return 0;
    }
}

/* IEEE half from float, rounded to nearest even (values past the range
 * become infinities; small ones flush through subnormals). */
static uint16_t half_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, mag = u & 0x7fffffff;
    if (mag >= 0x7f800000)
        return (uint16_t)(sign | 0x7c00 | (mag > 0x7f800000 ? 0x200 : 0));
    if (mag >= 0x477ff000)   /* rounds past 65504 */
        return (uint16_t)(sign | 0x7c00);
    if (mag < 0x38800000) {   /* below the smallest normal half: a subnormal */
        float scaled = fabsf(f) * 16777216.0f;   /* in units of 2^-24 */
        return (uint16_t)(sign | (uint32_t)nearbyintf(scaled));
    }
    uint32_t h = ((mag - 0x38000000) >> 13);
    uint32_t rest = mag & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return (uint16_t)(sign | h);
}

static float float_of_half(uint16_t h)
{
    int exp = (h >> 10) & 0x1f;
    float mant = (float)(h & 0x3ff);
    float v = exp == 31 ? (mant ? NAN : INFINITY)
              : exp      ? ldexpf(1.0f + mant / 1024.0f, exp - 15)
                         : ldexpf(mant / 1024.0f, -14);
    return (h & 0x8000) ? -v : v;
}

/* A PNG's rgba8 pixels as texels of f (png_channels(f) != 0); malloc'd. */
uint8_t *cli_texels_from_png(const uint8_t *rgba, uint64_t pixels, kiln_format f)
{
    uint32_t bits, ch = cli_png_channels(f, &bits);
    uint8_t *t = malloc((size_t)pixels * kiln_format_size(f));
    if (!t)
        return NULL;
    for (uint64_t i = 0; i < pixels; i++)
        for (uint32_t c = 0; c < ch; c++) {
            uint8_t byte = rgba[i * 4 + c];
            float v = (float)byte / 255.0f;
            if (bits == 8) {
                t[i * ch + c] = byte;
            } else if (bits == 16) {
                uint16_t h = half_of(v);
                memcpy(t + (i * ch + c) * 2, &h, 2);
            } else {
                memcpy(t + (i * ch + c) * 4, &v, 4);
            }
        }
    return t;
}

/* Texels of f as rgba8 pixels (floats clamped to [0, 1]; one channel as
 * grey, two as red and green); malloc'd. */
uint8_t *cli_texels_to_png(const uint8_t *t, uint64_t pixels, kiln_format f)
{
    uint32_t bits, ch = cli_png_channels(f, &bits);
    uint8_t *rgba = malloc((size_t)pixels * 4);
    if (!rgba)
        return NULL;
    for (uint64_t i = 0; i < pixels; i++) {
        uint8_t px[4] = {0, 0, 0, 255};
        for (uint32_t c = 0; c < ch; c++) {
            if (bits == 8) {
                px[c] = t[i * ch + c];
                continue;
            }
            float v;
            if (bits == 16) {
                uint16_t h;
                memcpy(&h, t + (i * ch + c) * 2, 2);
                v = float_of_half(h);
            } else {
                memcpy(&v, t + (i * ch + c) * 4, 4);
            }
            v = v != v ? 0.0f : v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;   /* NaN reads as 0 */
            px[c] = (uint8_t)lrintf(v * 255.0f);
        }
        if (ch == 1)
            px[1] = px[2] = px[0];
        memcpy(rgba + i * 4, px, 4);
    }
    return rgba;
}

