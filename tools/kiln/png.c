/* SPDX-License-Identifier: MIT */
/*
 * png.c: cli_write_png, the tool's one image writer, over libpng's write API.
 *
 * Design decisions:
 * - The image is always 8-bit RGBA, non-interlaced, rows top to bottom: what
 *   the demo's tonemap pass packs (packUnorm4x8, red in the lowest byte) is
 *   byte for byte what PNG stores, so no conversion happens here.
 * - The bytes go through cli_out (out_file.c): a temporary file renamed
 *   over the target once complete, so a failed write leaves whatever was
 *   there before, and a device such as /dev/null is written in place and
 *   never removed.
 * - libpng reports errors by longjmp to the setjmp point. Its write
 *   callback here turns a failed cli_out_write into png_error, so every
 *   failure, libpng's own or the file's, lands there; the error handler
 *   stays quiet (the caller prints one line naming the file and why).
 *   Everything that must survive the longjmp (the cli_out and libpng's
 *   structs) is set before setjmp and never changed after it, and the rows
 *   are written by a separate function, so no local is clobbered.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void on_write(png_structp png, png_bytep data, png_size_t len)
{
    struct cli_out *o = png_get_io_ptr(png);
    if (!cli_out_write(o, data, len))
        png_error(png, o->why);
}

static void on_flush(png_structp png) { (void)png; }

/* Keeps libpng's message for the caller instead of printing it. */
static void on_error(png_structp png, png_const_charp msg)
{
    struct cli_out *o = png_get_error_ptr(png);
    if (!o->failed) {
        snprintf(o->why, sizeof o->why, "libpng: %s", msg);
        o->failed = true;
    }
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* Writes every row; libpng longjmps out of here on an error. */
static void write_rows(png_structp png, const uint8_t *rgba, uint32_t w, uint32_t h)
{
    size_t stride = (size_t)w * 4;
    for (uint32_t y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(rgba + (size_t)y * stride));
}

bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h, char *why, size_t why_len)
{
    if (!path || !rgba || w == 0 || h == 0 || w > PNG_UINT_31_MAX / 4 || h > PNG_UINT_31_MAX) {
        snprintf(why, why_len, "no image to write");
        return false;
    }
    static struct cli_out o;   /* static: untouched by the longjmp */
    if (!cli_out_open(&o, path)) {
        snprintf(why, why_len, "%s", o.why);
        return false;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &o, on_error, on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        cli_out_abort(&o);
        snprintf(why, why_len, "out of host memory");
        return false;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        snprintf(why, why_len, "%s", o.why);
        cli_out_abort(&o);
        return false;
    }
    png_set_write_fn(png, &o, on_write, on_flush);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    write_rows(png, rgba, w, h);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    if (!cli_out_commit(&o)) {
        snprintf(why, why_len, "%s", o.why);
        return false;
    }
    return true;
}
