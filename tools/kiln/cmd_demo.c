/* SPDX-License-Identifier: MIT */
/*
 * cmd_demo.c: `kiln demo`, kiln's built-in image-processing scheme run for a
 * number of frames on the default device, with a progress line, a summary
 * table and the last frame written as PNG.
 *
 * The scheme is five nodes, each its own compute program embedded below:
 *
 *   generate -> blur x -> blur y -> grade -> tonemap -> PNG
 *
 * generate draws a procedural HDR image (gradient, checker, bright rings
 * that move with the frame number); the two blur passes are a separable
 * Gaussian of a fixed radius; grade applies an exposure that changes every
 * frame and a tint switched on halfway through the run; tonemap maps HDR to
 * display (clamp, Reinhard or an ACES fit) and packs RGBA8.
 *
 * Design decisions:
 * - Every fact a pass uses is a param word (push constant) read through
 *   kiln_param(n), never a compiled-in constant or a uniform buffer: the
 *   image size (word 7 of every node, width | height << 16), the blur radius,
 *   the tint switch and colour, the exposure (float bits), the tonemap mode,
 *   the frame number. Some never change (size, radius, mode), one changes
 *   once (tint), some change every frame (exposure, frame): the mix that
 *   kiln's specialization is built to exploit, and that later work will show
 *   with this same demo.
 * - Intermediate images are RGBA half floats packed two per uint (8 bytes a
 *   pixel): HDR range at half the bytes of vec4, which is also what lets a
 *   4096x4096 image fit lavapipe's 128 MiB storage-buffer range. Two such
 *   buffers ping-pong between the passes; every block says readonly or
 *   writeonly, since kiln derives its barriers from the declared access.
 * - A frame's time is the wall time of its submit and wait: recording (if
 *   any), the device's work and the wait. Param changes before the submit
 *   are not counted; they only write host memory.
 * - Errors from kiln go through cli_fail and exit 1; bad arguments print
 *   the usage with the bad argument named and exit 2. Every object is
 *   destroyed on every path, the context last.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"

/* ---- the programs ---------------------------------------------------------- */

/* Shared by every pass: 8x8 workgroups over the image, the size from word 7,
 * and the half-float RGBA pixel format. */
#define DEMO_COMMON                                                                                            \
    "layout(local_size_x = 8, local_size_y = 8) in;\n"                                                         \
    "uint img_w() { return kiln_param(7) & 0xffffu; }\n"                                                       \
    "uint img_h() { return kiln_param(7) >> 16; }\n"                                                           \
    "vec4 unpack_px(uvec2 v) { return vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y)); }\n"                     \
    "uvec2 pack_px(vec4 c) { return uvec2(packHalf2x16(c.xy), packHalf2x16(c.zw)); }\n"

/* Word 0: frame number (moves the rings). Word 7: size. */
static const char gen_src[] =
    "#version 450\n" DEMO_COMMON
    "layout(std430, binding = 0) writeonly buffer Dst { uvec2 px[]; } dst;\n"
    "void main() {\n"
    "    uint w = img_w(), h = img_h();\n"
    "    uvec2 p = gl_GlobalInvocationID.xy;\n"
    "    if (p.x >= w || p.y >= h) return;\n"
    "    vec2 uv = (vec2(p) + 0.5) / vec2(w, h);\n"
    "    float t = float(kiln_param(0)) * 0.04;\n"
    "    vec3 c = mix(vec3(0.05, 0.08, 0.30), vec3(0.90, 0.45, 0.15), clamp(0.75 * uv.x + 0.35 * uv.y, 0.0, 1.0));\n"
    "    uvec2 cell = uvec2(uv * 8.0);\n"
    "    c *= ((cell.x + cell.y) & 1u) == 0u ? 1.0 : 0.55;\n"
    "    vec2 centre = vec2(0.5 + 0.18 * cos(t), 0.5 + 0.18 * sin(t));\n"
    "    float d = length((uv - centre) * vec2(float(w) / float(h), 1.0));\n"
    "    float ring = smoothstep(0.55, 0.95, 0.5 + 0.5 * cos(d * 48.0 - t * 6.0));\n"
    "    c = mix(c, vec3(3.0, 2.6, 1.9), ring * exp(-d * 3.5));\n"
    "    dst.px[p.y * w + p.x] = pack_px(vec4(c, 1.0));\n"
    "}\n";

/* One source, two programs: DEMO_AXIS_Y picks the vertical pass. Word 0:
 * radius in pixels (Gaussian with sigma = radius / 2), at most 64 (the
 * loop's cap keeps it within a device's loop budget). Word 7: size. */
static const char blur_src[] =
    "#version 450\n" DEMO_COMMON
    "layout(std430, binding = 0) readonly buffer Src { uvec2 px[]; } src;\n"
    "layout(std430, binding = 1) writeonly buffer Dst { uvec2 px[]; } dst;\n"
    "void main() {\n"
    "    uint w = img_w(), h = img_h();\n"
    "    uvec2 p = gl_GlobalInvocationID.xy;\n"
    "    if (p.x >= w || p.y >= h) return;\n"
    "    int r = kiln_parami(0);\n"
    "    float k = -0.5 / max(0.25 * float(r * r), 0.25);\n"
    "    vec4 acc = vec4(0.0);\n"
    "    float wsum = 0.0;\n"
    "    for (int i = -r; i <= r && i <= 64; i++) {\n"
    "#ifdef DEMO_AXIS_Y\n"
    "        uint q = uint(clamp(int(p.y) + i, 0, int(h) - 1)) * w + p.x;\n"
    "#else\n"
    "        uint q = p.y * w + uint(clamp(int(p.x) + i, 0, int(w) - 1));\n"
    "#endif\n"
    "        float wt = exp(k * float(i * i));\n"
    "        acc += wt * unpack_px(src.px[q]);\n"
    "        wsum += wt;\n"
    "    }\n"
    "    dst.px[p.y * w + p.x] = pack_px(acc / wsum);\n"
    "}\n";

/* Word 0: tint on (non-zero) or off. Word 1: tint, packed RGBA8: colour in
 * rgb, strength in a (a duotone of the colour at the pixel's luminance,
 * mixed in by the strength). Word 2: exposure in stops, float bits. Word 7: size. */
static const char grade_src[] =
    "#version 450\n" DEMO_COMMON
    "layout(std430, binding = 0) readonly buffer Src { uvec2 px[]; } src;\n"
    "layout(std430, binding = 1) writeonly buffer Dst { uvec2 px[]; } dst;\n"
    "void main() {\n"
    "    uint w = img_w(), h = img_h();\n"
    "    uvec2 p = gl_GlobalInvocationID.xy;\n"
    "    if (p.x >= w || p.y >= h) return;\n"
    "    uint i = p.y * w + p.x;\n"
    "    vec4 c = unpack_px(src.px[i]);\n"
    "    c.rgb *= exp2(kiln_paramf(2));\n"
    "    if (kiln_param(0) != 0u) {\n"
    "        vec4 tint = unpackUnorm4x8(kiln_param(1));\n"
    "        vec3 y = vec3(0.2126, 0.7152, 0.0722);\n"
    "        c.rgb = mix(c.rgb, dot(c.rgb, y) / max(dot(tint.rgb, y), 0.01) * tint.rgb, tint.a);\n"
    "    }\n"
    "    dst.px[i] = pack_px(c);\n"
    "}\n";

/* Word 0: mode, 0 clamp, 1 Reinhard, 2 ACES (Narkowicz's fit). Word 7:
 * size. Writes display-gamma RGBA8, red in the lowest byte. */
static const char tonemap_src[] =
    "#version 450\n" DEMO_COMMON
    "layout(std430, binding = 0) readonly buffer Src { uvec2 px[]; } src;\n"
    "layout(std430, binding = 1) writeonly buffer Dst { uint px[]; } dst;\n"
    "void main() {\n"
    "    uint w = img_w(), h = img_h();\n"
    "    uvec2 p = gl_GlobalInvocationID.xy;\n"
    "    if (p.x >= w || p.y >= h) return;\n"
    "    uint i = p.y * w + p.x;\n"
    "    vec3 x = max(unpack_px(src.px[i]).rgb, vec3(0.0));\n"
    "    uint mode = kiln_param(0);\n"
    "    if (mode == 1u)\n"
    "        x = x / (1.0 + x);\n"
    "    else if (mode == 2u)\n"
    "        x = (x * (2.51 * x + 0.03)) / (x * (2.43 * x + 0.59) + 0.14);\n"
    "    x = pow(clamp(x, 0.0, 1.0), vec3(1.0 / 2.2));\n"
    "    dst.px[i] = packUnorm4x8(vec4(x, 1.0));\n"
    "}\n";

enum { N_GEN, N_BLUR_X, N_BLUR_Y, N_GRADE, N_TONEMAP, N_COUNT };

static const kiln_define axis_y_define[] = {{"DEMO_AXIS_Y", NULL}};

static const struct demo_pass {
    const char *label;
    const char *source;
    const kiln_define *defines;
    uint32_t define_count;
} passes[N_COUNT] = {
    [N_GEN] = {"generate", gen_src, NULL, 0},
    [N_BLUR_X] = {"blur_x", blur_src, NULL, 0},
    [N_BLUR_Y] = {"blur_y", blur_src, axis_y_define, 1},
    [N_GRADE] = {"grade", grade_src, NULL, 0},
    [N_TONEMAP] = {"tonemap", tonemap_src, NULL, 0},
};

/* The fixed facts of the run. */
#define DEMO_BLUR_RADIUS 6u
#define DEMO_TINT 0xb8ffc020u /* RGBA8, red in the low byte: r 0x20, g 0xc0, b 0xff, strength 0xb8 */
#define DEMO_MAX_DIM 8192u
#define DEMO_MAX_FRAMES 10000000ull

static const char *const tonemap_names[] = {"clamp", "reinhard", "aces"};

/* ---- options ---------------------------------------------------------------- */

struct demo_opts {
    uint32_t frames;
    uint32_t w, h;
    uint32_t tonemap;
    const char *out;
    bool precompile;
    const char *trace;   /* --trace FILE.json, NULL: none */
    const char *remote;  /* --remote PATH, NULL: KILN_REMOTE decides */
    FILE *json;          /* --json: the stream of stdout its object goes to; NULL: none */
};

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln demo [--frames N] [--size WxH] [--tonemap MODE] [--out FILE.png] [--precompile]\n"
               "                 [--trace FILE.json] [--remote PATH] [--json]\n"
               "\n"
               "Runs kiln's built-in image-processing scheme (generate, blur x, blur y,\n"
               "grade, tonemap) for N frames on the default device, prints a summary of\n"
               "frame times and recording, and writes the last frame as PNG.\n"
               "\n"
               "options:\n"
               "  --frames N       frames to run, at least 1 (default 120)\n"
               "  --size WxH       image size, each 1..%u (default 512x512)\n"
               "  --tonemap MODE   clamp, reinhard or aces, or 0..2 (default aces)\n"
               "  --out FILE.png   where the last frame goes (default kiln-demo.png); - is standard output\n"
               "                   (the summary then goes to stderr; a file named - is ./-)\n"
               "  --precompile     first make every program the archive holds (kiln_context_precompile)\n"
               "  --trace FILE.json  write a Chrome trace of the run (compiles, submits, device time,\n"
               "                   specialization, archive): open it in Perfetto or chrome://tracing\n"
               "  --remote PATH    run in the kiln server listening at PATH (kiln serve), as\n"
               "                   KILN_REMOTE=unix:PATH does\n"
               "  --json           the summary as one JSON object on stdout: {\"ok\": true, \"device\",\n"
               "                   \"width\", \"height\", \"tonemap\", \"nodes\", \"frames\", \"compile_ms\",\n"
               "                   \"run_ms\", \"min_ms\", \"median_ms\", \"mean_ms\", \"max_ms\", \"precompile\"\n"
               "                   (with --precompile), \"archive\", \"scheme\" (kiln_scheme_stats),\n"
               "                   \"specialization\", \"validation\", \"validation_errors\",\n"
               "                   \"validation_warnings\", \"output\"}; on failure {\"ok\": false,\n"
               "                   \"exit_status\", \"error\"}; not with --out -\n"
               "  --help           this text\n"
               "\n"
               "KILN_DEVICE picks another device; KILN_VALIDATION=1 turns on the\n"
               "Vulkan validation layer.\n",
               DEMO_MAX_DIM);
}

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kiln demo: %s\n\n", msg);
    cli_note_failure("%s", msg);
    usage(stderr);
    return 2;
}

/* Parses a plain decimal dimension 1..DEMO_MAX_DIM at *s, moving *s past it. */
static bool parse_dim(const char **s, uint32_t *out)
{
    uint32_t v = 0;
    const char *p = *s;
    if (*p < '0' || *p > '9')
        return false;
    for (; *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (uint32_t)(*p - '0');
        if (v > DEMO_MAX_DIM)
            return false;
    }
    if (v == 0)
        return false;
    *s = p;
    *out = v;
    return true;
}

static bool parse_wxh(const char *s, uint32_t *w, uint32_t *h)
{
    return parse_dim(&s, w) && (*s == 'x' || *s == 'X') && (s++, parse_dim(&s, h)) && *s == 0;
}

static bool parse_tonemap(const char *s, uint32_t *out)
{
    for (uint32_t i = 0; i < sizeof tonemap_names / sizeof tonemap_names[0]; i++) {
        char digit[2] = {(char)('0' + i), 0};
        if (!strcmp(s, tonemap_names[i]) || !strcmp(s, digit)) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* Fills *o from argv (argv[0] is "demo"). Returns -1 to go on, else the exit
 * status: 0 after --help, 2 after a bad argument (already reported). */
static int parse_opts(int argc, char **argv, struct demo_opts *o)
{
    FILE *json = o->json;
    *o = (struct demo_opts){.frames = 120, .w = 512, .h = 512, .tonemap = 2, .out = "kiln-demo.png", .json = json};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--precompile")) {
            o->precompile = true;
            continue;
        }
        if (!strcmp(a, "--json"))
            continue;   /* seen by cmd_demo */
        static const char *const with_value[] = {"--frames", "--size", "--tonemap", "--out", "--trace", "--remote"};
        const char *name = NULL, *val = NULL;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0] && !name; k++) {
            size_t n = strlen(with_value[k]);
            if (!strncmp(a, with_value[k], n) && (a[n] == 0 || a[n] == '=')) {
                name = with_value[k];
                val = a[n] == '=' ? a + n + 1 : NULL;
            }
        }
        if (!name)
            return bad_usage("unknown argument '%s'", a);
        if (!val) {
            if (i + 1 >= argc)
                return bad_usage("%s needs a value", name);
            val = argv[++i];
        }
        if (!strcmp(name, "--frames")) {
            uint64_t v;
            char why[PARSE_WHY_LEN];
            if (!parse_u64(val, &v, why))
                return bad_usage("bad --frames: %s", why);
            if (v < 1 || v > DEMO_MAX_FRAMES)
                return bad_usage("bad --frames '%s': want a number 1..%llu", val, DEMO_MAX_FRAMES);
            o->frames = (uint32_t)v;
        } else if (!strcmp(name, "--size")) {
            if (!parse_wxh(val, &o->w, &o->h))
                return bad_usage("bad --size '%s': want WxH, each 1..%u (like 512x512)", val, DEMO_MAX_DIM);
        } else if (!strcmp(name, "--tonemap")) {
            if (!parse_tonemap(val, &o->tonemap))
                return bad_usage("bad --tonemap '%s': want clamp, reinhard, aces or 0..2", val);
        } else if (!strcmp(name, "--trace")) {
            if (!*val)
                return bad_usage("bad --trace '': want a file name");
            o->trace = val;
        } else if (!strcmp(name, "--remote")) {
            if (!*val)
                return bad_usage("bad --remote '': want a socket path");
            o->remote = val;
        } else {
            if (!*val)
                return bad_usage("bad --out '': want a file name");
            o->out = val;
        }
    }
    if (o->json && !strcmp(o->out, "-"))
        return bad_usage("--out -: standard output carries --json's object; write the PNG to a file (a file "
                         "named - is ./-)");
    return -1;
}

/* ---- the run ------------------------------------------------------------------- */

struct demo {
    kiln_context ctx;
    kiln_buffer img[2], out;
    kiln_program prog[N_COUNT];
    kiln_scheme scheme;
    kiln_node node[N_COUNT];
    double *ms;          /* per-frame times */
    uint8_t *rgba;       /* the read-back image */
    struct cli_spec spec;   /* specialization events seen */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* Exposure of frame f of n, in stops: a ramp from -2 up to 0 at the last
 * frame, so every frame's word differs. */
static float exposure_at(uint32_t f, uint32_t n)
{
    float t = n > 1 ? (float)f / (float)(n - 1) : 1.0f;
    return -2.0f + 2.0f * t;
}

/* Creates the programs, waits for their compiles and prints a failed one's
 * log. */
static int make_programs(struct demo *d)
{
    for (int i = 0; i < N_COUNT; i++) {
        char name[64];
        snprintf(name, sizeof name, "demo_%s.comp", passes[i].label);
        kiln_result r = kiln_program_create(d->ctx,
                                            &(kiln_program_desc){.source = passes[i].source,
                                                                 .name = name,
                                                                 .defines = passes[i].defines,
                                                                 .define_count = passes[i].define_count},
                                            &d->prog[i]);
        if (r < 0)
            return cli_fail("create program", r);
    }
    for (int i = 0; i < N_COUNT; i++) {
        kiln_result r = kiln_program_wait(d->ctx, d->prog[i]);
        if (r == KILN_OK)
            continue;
        int rc = cli_fail("compile demo program", r);
        char log[4096];
        if (r == KILN_ERR_COMPILE && kiln_program_log(d->ctx, d->prog[i], log, sizeof log, NULL) == KILN_OK)
            fprintf(stderr, "kiln demo: program %s's compile log:\n%s\n", passes[i].label, log);
        return rc;
    }
    return 0;
}

/* Creates the buffers and the scheme's nodes with their starting params. */
static int make_scheme(struct demo *d, const struct demo_opts *o)
{
    uint64_t px = (uint64_t)o->w * o->h;
    kiln_result r;
    for (int i = 0; i < 2; i++) {
        r = kiln_buffer_create(d->ctx, &(kiln_buffer_desc){.size = px * 8, .label = i ? "image_b" : "image_a"},
                               &d->img[i]);
        if (r < 0)
            return cli_fail("create image buffer", r);
    }
    r = kiln_buffer_create(d->ctx, &(kiln_buffer_desc){.size = px * 4, .label = "rgba8"}, &d->out);
    if (r < 0)
        return cli_fail("create output buffer", r);
    r = kiln_scheme_create(d->ctx, &(kiln_scheme_desc){.label = "demo"}, &d->scheme);
    if (r < 0)
        return cli_fail("create scheme", r);

    /* Ping-pong: generate -> a, blur x a -> b, blur y b -> a, grade a -> b,
     * tonemap b -> rgba8. */
    const kiln_buffer src[N_COUNT] = {{0}, d->img[0], d->img[1], d->img[0], d->img[1]};
    const kiln_buffer dst[N_COUNT] = {d->img[0], d->img[1], d->img[0], d->img[1], d->out};
    uint32_t size_word = o->w | o->h << 16;
    for (int i = 0; i < N_COUNT; i++) {
        kiln_binding b[2];
        uint32_t nb = 0;
        if (src[i].id)
            b[nb++] = (kiln_binding){.binding = 0, .buffer = src[i]};
        b[nb] = (kiln_binding){.binding = nb, .buffer = dst[i]};
        nb++;
        kiln_node_desc nd = {.program = d->prog[i],
                             .bindings = b,
                             .binding_count = nb,
                             .groups = {(o->w + 7) / 8, (o->h + 7) / 8, 1},
                             .label = passes[i].label};
        uint32_t words[KILN_PARAM_WORDS] = {0};
        nd.params = words;
        nd.param_count = KILN_PARAM_WORDS;
        words[7] = size_word;
        switch (i) {
        case N_BLUR_X:
        case N_BLUR_Y:
            words[0] = DEMO_BLUR_RADIUS;
            break;
        case N_GRADE:
            words[0] = 0; /* tint off until halfway */
            words[1] = DEMO_TINT;
            words[2] = float_bits(exposure_at(0, o->frames));
            break;
        case N_TONEMAP:
            words[0] = o->tonemap;
            break;
        }
        r = kiln_scheme_add_node(d->ctx, d->scheme, &nd, &d->node[i]);
        if (r < 0) {
            char what[64];
            snprintf(what, sizeof what, "add node %s", passes[i].label);
            return cli_fail(what, r);
        }
    }
    return 0;
}

/* Prints the progress line: rewritten in place on a terminal, else one line
 * about every tenth of the run. */
static void progress(bool tty, uint32_t f, uint32_t n, double ms, float ev, bool tint, double *last_print)
{
    bool last = f + 1 == n;
    if (tty) {
        double t = now_ms();
        if (!last && t - *last_print < 50.0)
            return;
        *last_print = t;
        fprintf(stderr, "\rkiln demo: frame %u/%u  %8.2f ms  exposure %+5.2f EV  tint %-3s", f + 1, n, ms,
                (double)ev, tint ? "on" : "off");
        if (last)
            fputc('\n', stderr);
        fflush(stderr);
        return;
    }
    uint32_t step = n >= 10 ? n / 10 : 1;
    if ((f + 1) % step == 0 || last)
        fprintf(stderr, "kiln demo: frame %u/%u  %.2f ms  exposure %+.2f EV  tint %s\n", f + 1, n, ms, (double)ev,
                tint ? "on" : "off");
}

/* Runs the frames, filling d->ms. */
static int run_frames(struct demo *d, const struct demo_opts *o)
{
    uint32_t tint_frame = o->frames / 2;
    bool tty = isatty(STDERR_FILENO);
    double last_print = 0;
    bool tint = false;
    const char *what = NULL;
    kiln_result r = KILN_OK;
    uint32_t f;
    for (f = 0; f < o->frames; f++) {
        what = "set param";
        if (f == tint_frame) {
            tint = true;
            r = kiln_node_set_param(d->ctx, d->node[N_GRADE], 0, 1);
        }
        float ev = exposure_at(f, o->frames);
        if (r == KILN_OK)
            r = kiln_node_set_param(d->ctx, d->node[N_GRADE], 2, float_bits(ev));
        if (r == KILN_OK)
            r = kiln_node_set_param(d->ctx, d->node[N_GEN], 0, f);
        if (r < 0)
            break;
        double t0 = now_ms();
        kiln_ticket ticket;
        what = "submit";
        if ((r = kiln_scheme_submit(d->ctx, d->scheme, &ticket)) < 0)
            break;
        what = "wait";
        if ((r = kiln_ticket_wait(d->ctx, ticket, UINT64_MAX)) < 0)
            break;
        d->ms[f] = now_ms() - t0;
        if (cli_spec_drain(d->ctx, d->scheme, "kiln demo", f, tty, &d->spec))
            last_print = 0;   /* redraw the progress line at once */
        progress(tty, f, o->frames, d->ms[f], ev, tint, &last_print);
    }
    if (r == KILN_OK)
        return 0;
    if (tty && f > 0)
        fputc('\n', stderr);   /* end the progress line before the message */
    char msg[64];
    snprintf(msg, sizeof msg, "frame %u: %s", f + 1, what);
    return cli_fail(msg, r);
}

/* Prints the summary table to f; sorts d->ms. */
static void summary(FILE *f, struct demo *d, const struct demo_opts *o, const kiln_caps *caps,
                    const kiln_scheme_stats *st, const kiln_context_stats *cs, const kiln_precompile_result *pre, double compile_ms, double run_ms)
{
    uint32_t n = o->frames;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += d->ms[i];
    qsort(d->ms, n, sizeof *d->ms, cli_cmp_double);
    double median = n % 2 ? d->ms[n / 2] : 0.5 * (d->ms[n / 2 - 1] + d->ms[n / 2]);

    fprintf(f, "kiln demo\n");
    fprintf(f, "  %-18s %s\n", "device", caps->device_name);
    fprintf(f, "  %-18s %ux%u, %d nodes, blur radius %u, tonemap %s\n", "image", o->w, o->h, N_COUNT,
            DEMO_BLUR_RADIUS, tonemap_names[o->tonemap]);
    fprintf(f, "  %-18s %u (tint on from frame %u, exposure %+.2f to %+.2f EV)\n", "frames", n, n / 2 + 1,
            (double)exposure_at(0, n), (double)exposure_at(n - 1, n));
    if (o->precompile)
        fprintf(f, "  %-18s %u of %u archived programs ready in %.1f ms (%u noted on this device, %u failed, %u left "
                "to the background)\n",
                "precompile", pre->ready, pre->programs, pre->seconds * 1e3, pre->noted, pre->failed, pre->background);
    fprintf(f, "  %-18s %.1f ms\n", "compile", compile_ms);
    if (cs->archive_hits == (uint64_t)N_COUNT)
        fprintf(f, "  %-18s every program (%d of %d) came from the archive: no SPIR-V compiled; %llu of %d pipelines "
                "made from it\n", "archive", N_COUNT, N_COUNT, (unsigned long long)cs->archive_pipeline_hits, N_COUNT);
    else if (cs->archive_hits || cs->archive_added || cs->archive_misses)
        fprintf(f, "  %-18s %llu of %d programs from the archive, %llu compiled and added\n", "archive",
                (unsigned long long)cs->archive_hits, N_COUNT, (unsigned long long)cs->archive_added);
    else
        fprintf(f, "  %-18s off\n", "archive");
    fprintf(f, "  %-18s %.1f ms (%.1f frames/s)\n", "run", run_ms, run_ms > 0 ? 1e3 * n / run_ms : 0.0);
    fprintf(f, "  %-18s min %.2f  median %.2f  mean %.2f  max %.2f\n", "frame time (ms)", d->ms[0], median, sum / n,
            d->ms[n - 1]);
    fprintf(f, "  %-18s %llu\n", "submits", (unsigned long long)st->submits);
    fprintf(f, "  %-18s %llu\n", "records, full", (unsigned long long)st->records_full);
    fprintf(f, "  %-18s %llu\n", "records, params", (unsigned long long)st->records_params);
    fprintf(f, "  %-18s %llu\n", "replays", (unsigned long long)st->replays);
    fprintf(f, "  %-18s %llu\n", "barriers", (unsigned long long)st->barriers);
    cli_spec_summary(f, "specialization", &d->spec, d->ms, o->frames);
    fprintf(f, "  %-18s %llu of %d nodes\n", "specialized now", (unsigned long long)st->spec_specialized, N_COUNT);
    if (caps->validation)
        fprintf(f, "  %-18s on, %llu errors, %llu warnings\n", "validation", (unsigned long long)cs->validation_errors,
                (unsigned long long)cs->validation_warnings);
    fprintf(f, "  %-18s %s\n", "output", o->out);
}

/* The summary as --json's object (d->ms sorted by summary). */
static void summary_json(FILE *f, const struct demo *d, const struct demo_opts *o, const kiln_caps *caps,
                         const kiln_scheme_stats *st, const kiln_context_stats *cs, const kiln_precompile_result *pre,
                         double compile_ms, double run_ms)
{
    uint32_t n = o->frames;
    double sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += d->ms[i];
    struct cli_json j;
    cli_json_init(&j, f);
    cli_json_open(&j, NULL, '{');
    cli_json_bool(&j, "ok", true);
    cli_json_str(&j, "device", caps->device_name);
    cli_json_uint(&j, "width", o->w);
    cli_json_uint(&j, "height", o->h);
    cli_json_str(&j, "tonemap", tonemap_names[o->tonemap]);
    cli_json_uint(&j, "nodes", N_COUNT);
    cli_json_uint(&j, "frames", n);
    cli_json_double(&j, "compile_ms", compile_ms);
    cli_json_double(&j, "run_ms", run_ms);
    cli_json_double(&j, "min_ms", d->ms[0]);
    cli_json_double(&j, "median_ms", cli_median(d->ms, 0, n));
    cli_json_double(&j, "mean_ms", sum / n);
    cli_json_double(&j, "max_ms", d->ms[n - 1]);
    if (o->precompile) {
        cli_json_open(&j, "precompile", '{');
        cli_json_uint(&j, "programs", pre->programs);
        cli_json_uint(&j, "ready", pre->ready);
        cli_json_uint(&j, "noted", pre->noted);
        cli_json_uint(&j, "failed", pre->failed);
        cli_json_uint(&j, "background", pre->background);
        cli_json_double(&j, "seconds", pre->seconds);
        cli_json_close(&j, '}');
    }
    cli_json_open(&j, "archive", '{');
    cli_json_uint(&j, "hits", cs->archive_hits);
    cli_json_uint(&j, "added", cs->archive_added);
    cli_json_uint(&j, "misses", cs->archive_misses);
    cli_json_uint(&j, "pipeline_hits", cs->archive_pipeline_hits);
    cli_json_close(&j, '}');
    cli_json_open(&j, "scheme", '{');
    cli_json_uint(&j, "submits", st->submits);
    cli_json_uint(&j, "records_full", st->records_full);
    cli_json_uint(&j, "records_params", st->records_params);
    cli_json_uint(&j, "replays", st->replays);
    cli_json_uint(&j, "barriers", st->barriers);
    cli_json_uint(&j, "spec_specialized", st->spec_specialized);
    cli_json_close(&j, '}');
    cli_json_open(&j, "specialization", '{');
    cli_json_uint(&j, "warms", d->spec.warms);
    cli_json_uint(&j, "promotions", d->spec.promotions);
    cli_json_uint(&j, "demotions", d->spec.demotions);
    cli_json_uint(&j, "failed", d->spec.failed);
    cli_json_uint(&j, "pinned", d->spec.pinned);
    cli_json_close(&j, '}');
    cli_json_bool(&j, "validation", caps->validation);
    cli_json_uint(&j, "validation_errors", cs->validation_errors);
    cli_json_uint(&j, "validation_warnings", cs->validation_warnings);
    cli_json_str(&j, "output", o->out);
    cli_json_close(&j, '}');
}

/* Destroys every object that was made, the context last, and frees the
 * host arrays. Each failed destroy is reported at once (the next kiln call
 * clears the error's text); returns 1 if any failed, else 0. */
static int demo_finish(struct demo *d)
{
    int rc = 0;
#define DESTROY(call, what)                                                                                    \
    do {                                                                                                       \
        kiln_result r_ = (call);                                                                               \
        if (r_ < 0)                                                                                            \
            rc = cli_fail(what, r_);                                                                           \
    } while (0)
    if (d->ctx.id) {
        if (d->scheme.id)
            DESTROY(kiln_scheme_destroy(d->ctx, d->scheme), "destroy scheme");
        for (int i = 0; i < N_COUNT; i++)
            if (d->prog[i].id)
                DESTROY(kiln_program_destroy(d->ctx, d->prog[i]), "destroy program");
        for (int i = 0; i < 2; i++)
            if (d->img[i].id)
                DESTROY(kiln_buffer_destroy(d->ctx, d->img[i]), "destroy image buffer");
        if (d->out.id)
            DESTROY(kiln_buffer_destroy(d->ctx, d->out), "destroy output buffer");
        DESTROY(kiln_context_destroy(d->ctx), "destroy context");
    }
#undef DESTROY
    free(d->ms);
    free(d->rgba);
    *d = (struct demo){0};
    return rc;
}

static int demo_run(struct demo *d, const struct demo_opts *o)
{
    d->ms = malloc((size_t)o->frames * sizeof *d->ms);
    d->rgba = malloc((size_t)o->w * o->h * 4);
    if (!d->ms || !d->rgba) {
        fprintf(stderr, "kiln demo: out of host memory\n");
        return 1;
    }
    kiln_result r = kiln_context_create(&(kiln_context_desc){.trace_path = o->trace, .remote = o->remote}, &d->ctx);
    if (r < 0)
        return cli_fail("create context", r);
    kiln_caps caps;
    r = kiln_context_caps(d->ctx, &caps);
    if (r < 0)
        return cli_fail("device caps", r);

    kiln_precompile_result pre = {0};
    if (o->precompile && (r = kiln_context_precompile(d->ctx, NULL, &pre)) < 0)
        return cli_fail("precompile", r);
    double t0 = now_ms();
    int rc = make_programs(d);
    if (rc)
        return rc;
    double compile_ms = now_ms() - t0;
    if ((rc = make_scheme(d, o)))
        return rc;

    t0 = now_ms();
    if ((rc = run_frames(d, o)))
        return rc;
    double run_ms = now_ms() - t0;

    kiln_scheme_stats st;
    kiln_context_stats cs;
    if ((r = kiln_scheme_stats_get(d->ctx, d->scheme, &st)) < 0)
        return cli_fail("scheme stats", r);
    if ((r = kiln_context_stats_get(d->ctx, &cs)) < 0)
        return cli_fail("context stats", r);
    if ((r = kiln_buffer_readback(d->ctx, d->out, 0, d->rgba, (uint64_t)o->w * o->h * 4)) < 0)
        return cli_fail("read back image", r);
    char why[320];
    if (!cli_write_png(o->out, d->rgba, o->w, o->h, why, sizeof why)) {
        fprintf(stderr, "kiln demo: cannot write %s: %s\n", o->out, why);
        cli_note_failure("cannot write %s: %s", o->out, why);
        return 1;
    }
    /* stdout holds the PNG (--out -) or the JSON object: the table goes to stderr. */
    summary(o->json || !strcmp(o->out, "-") ? stderr : stdout, d, o, &caps, &st, &cs, &pre, compile_ms, run_ms);
    if (o->json)
        summary_json(o->json, d, o, &caps, &st, &cs, &pre, compile_ms, run_ms);
    return 0;
}

int cmd_demo(int argc, char **argv)
{
    struct demo_opts o = {0};
    bool json = false, help = false;   /* --help, which prints on stdout, wins over --json */
    for (int i = 1; i < argc; i++) {
        json |= !strcmp(argv[i], "--json");
        help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    }
    if (json && !help)
        o.json = cli_json_stdout();
    int rc = parse_opts(argc, argv, &o);
    if (rc < 0) {
        struct demo d = {0};
        rc = demo_run(&d, &o);
        if (demo_finish(&d) && rc == 0)
            rc = 1;
    }
    fflush(stdout);
    if (o.json && rc)
        cli_json_failure(o.json, rc);
    if (o.json && o.json != stdout)
        fclose(o.json);
    return rc;
}
