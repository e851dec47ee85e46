/*
 * png.c: cli_write_png, the tool's one image writer, over libpng's write API.
 *
 * Design decisions:
 * - The image is always 8-bit RGBA, non-interlaced, rows top to bottom: what
 *   the demo's tonemap pass packs (packUnorm4x8, red in the lowest byte) is
 *   byte for byte what PNG stores, so no conversion happens here.
 * - libpng reports errors by longjmp to the setjmp point; its default
 *   handler has already printed "libpng error: ..." to stderr. Everything
 *   that must survive the longjmp (the FILE and libpng's structs) is set
 *   before setjmp and never changed after it, and the rows are written by a
 *   separate function, so no local is clobbered.
 * - A failed write removes the partial file, so a truncated PNG is never
 *   left behind. errno is kept from the failing call (fopen, fwrite, fclose)
 *   for the caller's message; a failure inside libpng itself with no errno of
 *   its own reads as EIO.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <png.h>
#include <stdio.h>

#include "cli.h"

/* Writes every row; libpng longjmps out of here on an error. */
static void write_rows(png_structp png, const uint8_t *rgba, uint32_t w, uint32_t h)
{
    size_t stride = (size_t)w * 4;
    for (uint32_t y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(rgba + (size_t)y * stride));
}

bool cli_write_png(const char *path, const uint8_t *rgba, uint32_t w, uint32_t h)
{
    if (!path || !rgba || w == 0 || h == 0 || w > PNG_UINT_31_MAX / 4 || h > PNG_UINT_31_MAX) {
        errno = EINVAL;
        return false;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(png ? &png : NULL, NULL);
        fclose(f);
        remove(path);
        errno = ENOMEM;
        return false;
    }
    if (setjmp(png_jmpbuf(png))) {
        int err = errno ? errno : EIO;
        png_destroy_write_struct(&png, &info);
        fclose(f);
        remove(path);
        errno = err;
        return false;
    }
    errno = 0;
    png_init_io(png, f);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    write_rows(png, rgba, w, h);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    /* libpng checks each fwrite; bytes still in stdio's buffer are checked
     * by fclose (a full disk shows up there). */
    bool ok = !ferror(f);
    ok &= fclose(f) == 0;
    if (!ok) {
        int err = errno ? errno : EIO;
        remove(path);
        errno = err;
    }
    return ok;
}
