/* SPDX-License-Identifier: MIT */
/*
 * fuzz_png.c: fuzz target for the PNG reader `kiln run` uses for image
 * inputs (tools/kiln/png_read.c). Any bytes are decoded with a 16 MiB pixel
 * bound, then (small ones) converted to the texels of every image format a
 * PNG converts to and back. A crash, a sanitizer report, an accepted image
 * over the bound, one whose size disagrees with its dimensions, or a
 * channel that does not survive the round trip is a bug.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cli_image img;
    char err[256];
    const uint64_t bound = 16u << 20;
    if (!cli_read_png(data, size, bound, &img, err, sizeof err))
        return 0;
    uint64_t bytes = (uint64_t)img.width * img.height * 4;
    if (!img.width || !img.height || bytes > bound)
        abort();
    volatile uint8_t last = img.rgba[bytes - 1];   /* the whole image is there (ASan) */
    (void)last;
    /* As an image's texels: every format a PNG converts to gives the
     * channels it keeps back, exactly or within cli_png_error (texels.c
     * says why). */
    uint64_t pixels = (uint64_t)img.width * img.height;
    for (kiln_format f = 1; f < KILN_FORMAT_COUNT && pixels <= (1u << 16); f++) {
        uint32_t ch = cli_png_channels(f);
        if (!ch)
            continue;
        uint8_t *texels = cli_texels_from_png(img.rgba, pixels, f);
        uint8_t *back = texels ? cli_texels_to_png(texels, pixels, f) : NULL;
        if (!texels || !back)
            abort();   /* a few MiB at most */
        for (uint64_t i = 0; i < pixels; i++)
            for (uint32_t c = 0; c < 4; c++) {
                uint8_t want = c < ch ? img.rgba[i * 4 + c] : c == 3 ? 255 : ch == 1 ? img.rgba[i * 4] : 0;
                if (abs((int)back[i * 4 + c] - (int)want) > (int)cli_png_error(f, c < ch ? c : 0))
                    abort();
            }
        free(texels);
        free(back);
    }
    free(img.rgba);
    return 0;
}

/* Writes seed images into dir (libpng's own writer): RGBA, grey, grey with
 * alpha, RGB 1x1. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    uint8_t px[8 * 4 * 8];
    for (size_t i = 0; i < sizeof px; i++)
        px[i] = (uint8_t)(i * 37);
    static const struct { const char *name; uint32_t format, w, h; } seeds[] = {
        {"rgba-8x4.png", PNG_FORMAT_RGBA, 8, 4},
        {"grey-8x4.png", PNG_FORMAT_GRAY, 8, 4},
        {"grey-alpha-4x4.png", PNG_FORMAT_GA, 4, 4},
        {"rgb-1x1.png", PNG_FORMAT_RGB, 1, 1},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        img.format = seeds[i].format;
        img.width = seeds[i].w;
        img.height = seeds[i].h;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        if (!png_image_write_to_file(&img, path, 0, px, 0, NULL))
            return 1;
    }
    return 0;
}
