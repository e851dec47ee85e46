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
#include "half.h"

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
                uint16_t h = half_from_float(v);
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
                v = half_to_float(h);
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

