/* SPDX-License-Identifier: MIT */
/*
 * image_args.c: `kiln run`'s images and samplers: --image, --out-image and
 * --sampler, from their arguments to kiln images bound by the run's node.
 *
 * An image comes from a PNG (its pixels as rgba8, converted to the image's
 * format), from raw texels (FILE:WxH[xD]:FORMAT, the file exactly that
 * many bytes), or zeroed (size:WxH[xD][:FORMAT]); a D makes it 3D. Its
 * format is the one given, else the one the shader declares at the binding
 * (a storage image's format qualifier), else rgba8. A PNG converts to and
 * from the unsigned normalized and float formats (texels.c says how);
 * one channel reads as grey, two as red and green. Integer and snorm
 * formats take and give raw texels only: a PNG for one is refused by name,
 * as is a PNG of a 3D image.
 *
 * The image takes the shape the shader declares at its binding: an
 * arrayed binding (image2DArray) reads WxHxL as L layers (a file's layers
 * one after another), a cube binding (samplerCube) takes six faces of WxW
 * (raw or size: only), a 1D binding Wx1 as a 1D image.
 *
 * A --sampler at a binding with an --image makes a combined image
 * sampler's sampler; at a binding without one, a sampler binding's.
 *
 * Everything the arguments alone can check is checked with them (exit 2);
 * what needs the shader's interface (the format) is checked once it is
 * known, before the run (exit 2 as well). Input files are read with a
 * bound (the device's largest buffer: kiln stages an image in one).
 *
 * "-" is standard input or output, through cli_in_open and cli_out_open:
 * --image B=- reads a PNG (-:WxH:FORMAT raw texels), and --out-image B=-
 * writes raw texels, since whether a PNG is written goes by the .png name.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "parse.h"

#define PNG_FILE_MAX (256ull << 20)   /* bytes of a PNG file read at most */

static bool fail(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return false;
}

/* Reads "WxH" or "WxHxD" at the start of s (each a decimal number from 1);
 * *end past it. */
static bool read_size(const char *s, uint32_t *w, uint32_t *h, uint32_t *d, bool *three, const char **end)
{
    uint32_t v[3] = {0, 0, 1};
    int n = 0;
    const char *p = s;
    while (n < 3) {
        uint64_t x = 0;
        const char *start = p;
        for (; *p >= '0' && *p <= '9'; p++)
            if ((x = x * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
                return false;
        if (p == start || x == 0)
            return false;
        v[n++] = (uint32_t)x;
        if (*p != 'x' || n == 3)
            break;
        p++;
    }
    if (n < 2)
        return false;
    *w = v[0];
    *h = v[1];
    *d = v[2];
    *three = n == 3;
    *end = p;
    return true;
}

static struct cli_image_arg *find_image(struct cli_images *s, struct cli_site at)
{
    for (uint32_t i = 0; i < s->count; i++)
        if (cli_site_same(s->images[i].at, at))
            return &s->images[i];
    return NULL;
}

bool cli_image_add(struct cli_images *s, const char *v, char *why, size_t cap)
{
    struct cli_image_arg a = {.arg = v, .in = {.fd = -1}};
    const char *rest;
    if (!cli_site_split(v, &a.at, &rest) || !*rest)
        return fail(why, cap, "--image %s: expected B=FILE.png, B=size:WxH[xD][:FORMAT] or B=FILE:WxH[xD]:FORMAT, "
                    "where B is a binding (S.B in set S, B[E] for element E of an array)", v);
    cli_site_text(a.at, a.site);
    if (find_image(s, a.at))
        return fail(why, cap, "--image %s: binding %s is given twice", v, a.site);
    if (s->count == KILN_MAX_DESCRIPTORS)
        return fail(why, cap, "--image %s: at most %d images", v, KILN_MAX_DESCRIPTORS);
    const char *end;
    if (!strncmp(rest, "size:", 5)) {
        if (!read_size(rest + 5, &a.width, &a.height, &a.depth, &a.three, &end) || (*end && *end != ':'))
            return fail(why, cap, "--image %s: expected size:WxH[xD][:FORMAT], sides from 1", v);
        if (*end && !(a.format = cli_format_named(end + 1)))
            return fail(why, cap, "--image %s: '%s' is not a format kiln knows (r32f, rgba8, rgba16f, ...)", v,
                        end + 1);
    } else {
        /* FILE:WxH[xD]:FORMAT (raw texels) when it ends so; else a PNG. */
        const char *last = strrchr(rest, ':');
        const char *mid = NULL;
        for (const char *c = rest; last && c < last; c++)
            if (*c == ':')
                mid = c;
        uint32_t w, h, d;
        bool three;
        if (mid && mid > rest && read_size(mid + 1, &w, &h, &d, &three, &end) && end == last) {
            a.raw = true;
            a.width = w, a.height = h, a.depth = d, a.three = three;
            if (!(a.format = cli_format_named(last + 1)))
                return fail(why, cap, "--image %s: '%s' is not a format kiln knows (r32ui, rgba8ui, r32f, ...)", v,
                            last + 1);
            size_t n = (size_t)(mid - rest);
            if (!(a.path = malloc(n + 1)))
                return fail(why, cap, "--image %s: out of host memory", v);
            memcpy(a.path, rest, n);
            a.path[n] = 0;
        } else if (!(a.path = strdup(rest))) {
            return fail(why, cap, "--image %s: out of host memory", v);
        }
        char err[256];
        if (!cli_in_open(&a.in, a.path, err, sizeof err)) {
            free(a.path);
            return fail(why, cap, "--image %s: cannot read '%s': %s", v, rest, err);
        }
    }
    s->images[s->count++] = a;
    return true;
}

bool cli_image_out_add(struct cli_images *s, const char *v, char *why, size_t cap)
{
    struct cli_image_out o = {.arg = v};
    if (!cli_site_split(v, &o.at, &o.file) || !*o.file)
        return fail(why, cap, "--out-image %s: expected B=FILE, where B is a binding (S.B in set S, B[E] for element "
                    "E of an array)", v);
    char where[48];
    for (uint32_t k = 0; k < s->out_count; k++)
        if (cli_site_same(s->outs[k].at, o.at))
            return fail(why, cap, "--out-image %s: binding %s is written out twice", v, cli_site_text(o.at, where));
    if (s->out_count == KILN_MAX_DESCRIPTORS)
        return fail(why, cap, "--out-image %s: at most %d outputs", v, KILN_MAX_DESCRIPTORS);
    s->outs[s->out_count++] = o;
    return true;
}

bool cli_sampler_add(struct cli_images *s, const char *v, char *why, size_t cap)
{
    struct cli_sampler_arg a = {.arg = v};
    const char *rest;
    if (!cli_site_split(v, &a.at, &rest) || !*rest)
        return fail(why, cap, "--sampler %s: expected B=linear|nearest[,clamp|repeat|mirror|border]", v);
    cli_site_text(a.at, a.site);
    for (uint32_t k = 0; k < s->sampler_count; k++)
        if (cli_site_same(s->samplers[k].at, a.at))
            return fail(why, cap, "--sampler %s: binding %s is given a sampler twice", v, a.site);
    if (s->sampler_count == KILN_MAX_DESCRIPTORS)
        return fail(why, cap, "--sampler %s: at most %d samplers", v, KILN_MAX_DESCRIPTORS);
    const char *comma = strchr(rest, ',');
    size_t n = comma ? (size_t)(comma - rest) : strlen(rest);
    if (n == 6 && !strncmp(rest, "linear", 6))
        a.desc.filter = KILN_FILTER_LINEAR;
    else if (n == 7 && !strncmp(rest, "nearest", 7))
        a.desc.filter = KILN_FILTER_NEAREST;
    else
        return fail(why, cap, "--sampler %s: filter '%.*s' is neither linear nor nearest", v, (int)n, rest);
    a.desc.address = KILN_ADDRESS_CLAMP;
    if (comma) {
        static const struct { const char *name; kiln_address_mode mode; } modes[] = {
            {"clamp", KILN_ADDRESS_CLAMP}, {"repeat", KILN_ADDRESS_REPEAT},
            {"mirror", KILN_ADDRESS_MIRROR}, {"border", KILN_ADDRESS_BORDER}};
        a.desc.address = KILN_ADDRESS_DEFAULT;
        for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
            if (!strcmp(comma + 1, modes[k].name))
                a.desc.address = modes[k].mode;
        if (!a.desc.address)
            return fail(why, cap, "--sampler %s: address mode '%s' is none of clamp, repeat, mirror, border", v,
                        comma + 1);
    }
    s->samplers[s->sampler_count++] = a;
    return true;
}

bool cli_images_check(struct cli_images *s, char *why, size_t cap)
{
    for (uint32_t k = 0; k < s->out_count; k++) {
        struct cli_image_out *o = &s->outs[k];
        char where[48];
        struct cli_image_arg *a = find_image(s, o->at);
        cli_site_text(o->at, where);
        if (!a)
            return fail(why, cap, "--out-image %s: binding %s has no --image; give it with --image %s=size:WxH or "
                        "--image %s=FILE.png", o->arg, where, where, where);
        a->out = o->file;
        size_t n = strlen(o->file);
        a->out_png = n > 4 && !strcasecmp(o->file + n - 4, ".png");
        if (a->out_png && a->three)
            return fail(why, cap, "--out-image %s: binding %s is a 3D image; a PNG holds one 2D image (name a file "
                        "not ending in .png for its raw texels)", o->arg, where);
    }
    return true;
}

static const char *png_formats = "rgba8, rg8, r8, rgba16, rg16, r16, rgb10_a2, rgba16f, rg16f, r16f, "
                                  "r11f_g11f_b10f, rgba32f, rg32f, r32f";

/* ---- making, binding, writing back ---------------------------------------------------- */

static const kiln_binding_info *declared(const kiln_program_interface *it, struct cli_site at)
{
    for (uint32_t k = 0; k < it->binding_count; k++)
        if (it->bindings[k].set == at.set && it->bindings[k].binding == at.binding)
            return &it->bindings[k];
    return NULL;
}

/* One image's texels: read and converted (PNG), read and sized (raw), or
 * none (size:, zeroed by kiln). 0, or 2 with why. */
static int image_texels(struct cli_image_arg *a, const kiln_caps *caps, uint8_t **texels, char *why, size_t cap)
{
    *texels = NULL;
    if (!a->path)
        return 0;
    char err[256];
    size_t len = 0;
    uint64_t texel = kiln_format_size(a->format);
    if (a->raw) {
        uint64_t want = (uint64_t)a->width * a->height * a->depth * a->layers * texel;
        if (want > caps->max_buffer_size)
            return fail(why, cap, "--image %s: %" PRIu64 " bytes of texels; kiln stages an image in one buffer, and "
                        "the device allows %" PRIu64, a->arg, want, caps->max_buffer_size), 2;
        uint8_t *data = (uint8_t *)cli_in_read(&a->in, want + 1, &len, err, sizeof err);
        if (!data)
            return fail(why, cap, "--image %s: '%s' %s", a->arg, a->path, err), 2;
        if (len != want) {
            free(data);
            char layers[32] = "";
            if (a->layers > 1)
                snprintf(layers, sizeof layers, " (%" PRIu32 " layers)", a->layers);
            return fail(why, cap, "--image %s: '%s' holds %zu bytes; %" PRIu32 "x%" PRIu32 "x%" PRIu32 " %s texels%s "
                        "are %" PRIu64, a->arg, a->path, len, a->width, a->height, a->depth,
                        kiln_format_name(a->format), layers, want), 2;
        }
        *texels = data;
        return 0;
    }
    if (!cli_png_channels(a->format))
        return fail(why, cap, "--image %s: a PNG converts to normalized and float formats (%s), not %s; give %s's "
                    "raw texels as --image %s=FILE:WxH:%s", a->arg, png_formats, kiln_format_name(a->format),
                    kiln_format_name(a->format), a->site, kiln_format_name(a->format)), 2;
    uint8_t *file = (uint8_t *)cli_in_read(&a->in, PNG_FILE_MAX, &len, err, sizeof err);
    if (!file)
        return fail(why, cap, "--image %s: '%s' %s", a->arg, a->path, err), 2;
    struct cli_image img;
    bool ok = cli_read_png(file, len, caps->max_buffer_size, &img, err, sizeof err);
    free(file);
    if (!ok)
        return fail(why, cap, "--image %s: '%s': %s", a->arg, a->path, err), 2;
    a->width = img.width, a->height = img.height, a->depth = 1;
    *texels = cli_texels_from_png(img.rgba, (uint64_t)img.width * img.height, a->format);
    free(img.rgba);
    if (!*texels)
        return fail(why, cap, "--image %s: out of host memory", a->arg), 2;
    return 0;
}

int cli_images_make(kiln_context ctx, struct cli_images *s, const kiln_program_interface *it, const kiln_caps *caps,
                    char *why, size_t cap)
{
    for (uint32_t i = 0; i < s->count; i++) {
        struct cli_image_arg *a = &s->images[i];
        const kiln_binding_info *bi = declared(it, a->at);
        if (!a->format)   /* the shader's format qualifier, else rgba8 */
            a->format = bi && bi->kind == KILN_BINDING_STORAGE_IMAGE && bi->format ? bi->format : KILN_FORMAT_RGBA8;
        if (a->out_png && !cli_png_channels(a->format))
            return fail(why, cap, "--out-image %s=%s: a PNG holds normalized and float formats (%s), not %s; name a "
                        "file not ending in .png for its raw texels", a->site, a->out, png_formats,
                        kiln_format_name(a->format)), 2;
        /* The shape the shader declares: WxHxL is L layers of an arrayed
         * binding, a cube binding takes six faces, a 1D one a row. */
        a->layers = 1;
        a->dims = a->three ? 3 : 2;
        if (bi && bi->image_cube) {
            if (a->three || (a->path && !a->raw))
                return fail(why, cap, "--image %s: binding %s is a cube image: give its six faces as "
                            "size:WxW[:FORMAT] or FILE:WxW:FORMAT (the faces one after another)", a->arg,
                            a->site), 2;
            a->cube = true;
            a->layers = 6;
        } else if (bi && bi->image_arrayed && a->three) {
            a->layers = a->depth;
            a->depth = 1;
            a->dims = bi->image_dims;
        } else if (bi && bi->image_dims == 1 && !a->three) {
            a->dims = 1;
        }
        if (a->out_png && (a->layers > 1 || a->three))
            return fail(why, cap, "--out-image %s=%s: binding %s holds %s; a PNG holds one 2D image (name a file not "
                        "ending in .png for its raw texels)", a->site, a->out, a->site,
                        a->three ? "a 3D image" : "several layers"), 2;
        uint8_t *texels;
        int rc = image_texels(a, caps, &texels, why, cap);
        if (rc)
            return rc;
        kiln_image_desc d = {.width = a->width, .height = a->height, .depth = a->depth, .dims = a->dims,
                             .format = a->format, .label = a->arg, .layers = a->layers, .cube = a->cube};
        kiln_result r = kiln_image_create(ctx, &d, &a->image);
        if (r == KILN_OK && texels)
            r = kiln_image_upload(ctx, a->image, texels,
                                  (uint64_t)a->width * a->height * a->depth * a->layers * kiln_format_size(a->format));
        free(texels);
        if (r < 0) {
            fprintf(stderr, "kiln run: --image %s: ", a->arg);
            return cli_fail("making the image", r);
        }
    }
    return 0;
}

uint32_t cli_images_bind(const struct cli_images *s, kiln_binding *out, uint32_t count, uint32_t cap)
{
    for (uint32_t i = 0; i < s->count && count < cap; i++) {
        const struct cli_image_arg *a = &s->images[i];
        kiln_binding b = {.set = a->at.set, .binding = a->at.binding, .element = a->at.element, .image = a->image};
        for (uint32_t k = 0; k < s->sampler_count; k++)
            if (cli_site_same(s->samplers[k].at, a->at))
                b.sampler = s->samplers[k].desc;
        out[count++] = b;
    }
    for (uint32_t k = 0; k < s->sampler_count && count < cap; k++) {
        const struct cli_sampler_arg *m = &s->samplers[k];
        bool with_image = false;
        for (uint32_t i = 0; i < s->count; i++)
            with_image |= cli_site_same(s->images[i].at, m->at);
        if (!with_image)
            out[count++] = (kiln_binding){.set = m->at.set, .binding = m->at.binding, .element = m->at.element,
                                          .sampler = m->desc};
    }
    return count;
}

int cli_images_write(kiln_context ctx, const struct cli_images *s)
{
    for (uint32_t i = 0; i < s->count; i++) {
        const struct cli_image_arg *a = &s->images[i];
        if (!a->out)
            continue;
        uint64_t pixels = (uint64_t)a->width * a->height * a->depth * a->layers,
                 bytes = pixels * kiln_format_size(a->format);
        uint8_t *texels = malloc((size_t)bytes);
        if (!texels) {
            fprintf(stderr, "kiln run: --out-image %s=%s: out of host memory for %" PRIu64 " bytes\n", a->site,
                    a->out, bytes);
            return 1;
        }
        kiln_result r = kiln_image_readback(ctx, a->image, texels, bytes);
        if (r < 0) {
            free(texels);
            char what[96];
            snprintf(what, sizeof what, "reading back the image at binding %s", a->site);
            return cli_fail(what, r);
        }
        char why[320];
        bool ok;
        if (a->out_png) {
            uint8_t *rgba = cli_texels_to_png(texels, pixels, a->format);
            ok = rgba && cli_write_png(a->out, rgba, a->width, a->height, why, sizeof why);
            if (!rgba)
                snprintf(why, sizeof why, "out of host memory");
            free(rgba);
        } else {
            ok = cli_write_file(a->out, texels, (size_t)bytes, why, sizeof why);
        }
        free(texels);
        if (!ok) {
            fprintf(stderr, "kiln run: --out-image %s=%s: %s\n", a->site, a->out, why);
            cli_note_failure("--out-image %s=%s: %s", a->site, a->out, why);
            return 1;
        }
    }
    return 0;
}

void cli_images_finish(struct cli_images *s)
{
    for (uint32_t i = 0; i < s->count; i++) {
        cli_in_close(&s->images[i].in);
        free(s->images[i].path);
    }
}
