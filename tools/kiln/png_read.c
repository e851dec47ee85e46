/* SPDX-License-Identifier: MIT */
/*
 * png_read.c: cli_read_png, the tool's one image reader, over libpng's
 * simplified read API (png_image), which converts any PNG (palette, grey,
 * 16-bit, interlaced, with or without alpha) to 8-bit RGBA.
 *
 * Design decisions:
 * - Bytes in, bytes out: the reader takes the file's bytes from memory, so
 *   the fuzz target (tests/fuzz/fuzz_png.c) drives exactly what `kiln run`
 *   does, and the file itself is read once, bounded, by the caller.
 * - The header is read first and the pixel bytes it promises are checked
 *   against the caller's bound before anything is allocated: a 1 KiB file
 *   claiming 2^31 x 2^31 pixels is refused by name, never allocated.
 * - libpng's simplified API reports errors in image.message, not by
 *   longjmp into our frames; png_image_free releases what it holds on
 *   every path.
 */
#define _POSIX_C_SOURCE 200809L
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_read_png(const uint8_t *data, size_t len, uint64_t max_bytes, struct cli_image *out, char *err,
                  size_t err_cap)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    memset(out, 0, sizeof *out);
    if (!png_image_begin_read_from_memory(&img, data, len)) {
        snprintf(err, err_cap, "not a readable PNG: %s", img.message);
        png_image_free(&img);
        return false;
    }
    img.format = PNG_FORMAT_RGBA;
    uint64_t bytes = (uint64_t)img.width * img.height * 4;
    if (!img.width || !img.height || bytes > max_bytes) {
        snprintf(err, err_cap, "PNG of %ux%u pixels needs %llu bytes as RGBA; at most %llu are allowed",
                 img.width, img.height, (unsigned long long)bytes, (unsigned long long)max_bytes);
        png_image_free(&img);
        return false;
    }
    uint8_t *rgba = malloc((size_t)bytes);
    if (!rgba) {
        snprintf(err, err_cap, "out of host memory for %llu bytes of pixels", (unsigned long long)bytes);
        png_image_free(&img);
        return false;
    }
    if (!png_image_finish_read(&img, NULL, rgba, 0, NULL)) {
        snprintf(err, err_cap, "damaged PNG: %s", img.message);
        png_image_free(&img);
        free(rgba);
        return false;
    }
    out->rgba = rgba;
    out->width = img.width;
    out->height = img.height;
    return true;
}
