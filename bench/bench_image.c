/* SPDX-License-Identifier: MIT */
/*
 * bench_image.c: a 2D blur through storage images against the same blur
 * through storage buffers, and against one that reads through a sampler.
 *
 * The blur: separable, 9 taps a side, weights 1 2 3 4 5 4 3 2 1 over 25 (a
 * tent, two 5-wide boxes convolved: a cheap Gaussian), edges clamped, of
 * a W x H image of rgba8 texels (default 1024x1024, --size). Each way is
 * one scheme of two nodes: a horizontal pass from the input into an
 * intermediate, then a vertical pass from the intermediate into the
 * output; kiln must put a barrier between them (checked). The three ways:
 *   images   storage images: imageLoad and imageStore of rgba8 images
 *            (layout(rgba8)); the format converts texels to and from vec4;
 *   buffers  storage buffers holding one uint per texel, the texel's four
 *            bytes as an rgba8 image holds them, converted by hand with
 *            unpackUnorm4x8 and packUnorm4x8 (the same conversions as
 *            rgba8's). A uint rather than a vec4 of floats so that both
 *            ways move the same bytes: the comparison is of the access
 *            path, not of four times the memory traffic;
 *   sampled  each pass reads its input through a sampler2D (textureLod
 *            at the texel's centre, nearest filtering, clamped to the
 *            edge: the sampler does the edge clamp the other two do in
 *            code) and writes a storage image; the intermediate is written
 *            as a storage image and read as a sampled one.
 * The arithmetic is the same float arithmetic in all three (a weighted
 * vec4 sum, times 1/25). The image's size reaches every program the same
 * way, as param words 0 and 1; specialization is off so that no way's
 * programs get baked variants partway through. The workgroup is 8x8 in
 * all three, over the same grid.
 *
 * Checked results: each pass rounds to 8 bits, and the weights sum to 25,
 * an odd number, so a pass's exact value (an integer over 25) is never
 * within 1/50 of a rounding tie; float error is some 1e-4 of a step. The
 * buffers' packUnorm4x8 rounds to nearest, so they make exactly the
 * texels of the CPU's integer blur ((sum + 12) / 25 per pass). An image
 * store's float to unorm conversion may give either of the two nearest
 * values (Vulkan's "should round to nearest": NVIDIA's driver often takes
 * the other one), so through images each pass may be 1 off and the two
 * passes 2. The three outputs are read back once, after the measured
 * part: the buffers' must equal the CPU's texel for texel, the images'
 * and the sampler's be within 2; anything else is an error. How many
 * channels were not exact is printed.
 *
 * Timing, as bench_spec does it: a warm-up (two frames of each way, then
 * three timed, whose median sizes the blocks), then rounds (default 15,
 * --rounds) of one block per way, the order rotating each round (images,
 * buffers, sampled; then buffers, sampled, images; ...), so that a burst
 * of noise on the shared machine hits all three alike. A block is M
 * frames, each a kiln_scheme_submit and a kiln_ticket_wait, M chosen per
 * way so a block takes about BLOCK_S seconds (the default run measures
 * about 30 s); a round's figure is the block's wall time over M. Each
 * way's time per frame is the median over the rounds. Printed: the three
 * times, images/buffers and sampled/buffers (no target is set: the ratios
 * are the result), and the per-round ratios to show their spread. Every
 * measured submit must be a replay. Validation is off.
 *
 * Exit status: 0 after a run whose results check; 1 on errors (a failed
 * call, a compile failure, a missing barrier, a texel that differs).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

#define BENCH_NAME "bench_image"
#include "bench.h"

#define GROUP 8u            /* workgroups are GROUP x GROUP */
#define RADIUS 4            /* taps each side: 9 in all */
#define WEIGHT_SUM 25u      /* sum of the weights 5 - |k|, k in -4..4 */
#define BLOCK_S 0.6         /* seconds per block, about */
#define MAX_BLOCK 2000u     /* frames per block at most */
#define DEFAULT_SIZE 1024u
#define QUICK_SIZE 256u

/* ---- the shaders ------------------------------------------------------------------- */

/* Each source is one pass; VERTICAL, defined, makes the vertical one. */
#define SHADER_HEAD                                                                                \
    "#version 450\n"                                                                               \
    "layout(local_size_x = 8, local_size_y = 8) in;\n"                                             \
    "#ifdef VERTICAL\n"                                                                            \
    "const ivec2 DIR = ivec2(0, 1);\n"                                                             \
    "#else\n"                                                                                      \
    "const ivec2 DIR = ivec2(1, 0);\n"                                                             \
    "#endif\n"

#define SHADER_SIZE                                                                                \
    "    ivec2 size = ivec2(kiln_param(0), kiln_param(1));\n"                                       \
    "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"                                              \
    "    if (any(greaterThanEqual(p, size)))\n"                                                     \
    "        return;\n"                                                                            \
    "    vec4 sum = vec4(0.0);\n"

static const char images_source[] = SHADER_HEAD
    "layout(binding = 0, rgba8) uniform readonly image2D Src;\n"
    "layout(binding = 1, rgba8) uniform writeonly image2D Dst;\n"
    "void main()\n"
    "{\n" SHADER_SIZE
    "    for (int k = -4; k <= 4; k++)\n"
    "        sum += float(5 - abs(k)) * imageLoad(Src, clamp(p + k * DIR, ivec2(0), size - 1));\n"
    "    imageStore(Dst, p, sum * (1.0 / 25.0));\n"
    "}\n";

static const char buffers_source[] = SHADER_HEAD
    "layout(std430, binding = 0) readonly buffer Src { uint src[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Dst { uint dst[]; };\n"
    "void main()\n"
    "{\n" SHADER_SIZE
    "    for (int k = -4; k <= 4; k++) {\n"
    "        ivec2 q = clamp(p + k * DIR, ivec2(0), size - 1);\n"
    "        sum += float(5 - abs(k)) * unpackUnorm4x8(src[q.y * size.x + q.x]);\n"
    "    }\n"
    "    dst[p.y * size.x + p.x] = packUnorm4x8(sum * (1.0 / 25.0));\n"
    "}\n";

static const char sampled_source[] = SHADER_HEAD
    "layout(binding = 0) uniform sampler2D Src;\n"
    "layout(binding = 1, rgba8) uniform writeonly image2D Dst;\n"
    "void main()\n"
    "{\n" SHADER_SIZE
    "    vec2 texel = 1.0 / vec2(size);\n"
    "    for (int k = -4; k <= 4; k++)\n"
    "        sum += float(5 - abs(k)) * textureLod(Src, (vec2(p + k * DIR) + 0.5) * texel, 0.0);\n"
    "    imageStore(Dst, p, sum * (1.0 / 25.0));\n"
    "}\n";

enum way { W_IMAGES, W_BUFFERS, W_SAMPLED, W_COUNT };
static const char *const way_name[W_COUNT] = {"images", "buffers", "sampled"};
static const char *const way_what[W_COUNT] = {"storage images (imageLoad, imageStore)",
                                              "storage buffers (uint per texel, unpack/packUnorm4x8)",
                                              "sampler2D (textureLod, nearest) into storage images"};
static const char *const way_source[W_COUNT] = {images_source, buffers_source, sampled_source};

/* ---- the CPU's blur ------------------------------------------------------------------ */

/* One pass over rgba8 texels, rows packed: the weights 5 - |k|, edges
 * clamped, rounded to nearest (no ties: see the top of the file). */
static void cpu_pass(const uint8_t *src, uint8_t *dst, uint32_t w, uint32_t h, bool vertical)
{
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            for (uint32_t c = 0; c < 4; c++) {
                uint32_t sum = 0;
                for (int k = -RADIUS; k <= RADIUS; k++) {
                    int64_t qx = (int64_t)x + (vertical ? 0 : k), qy = (int64_t)y + (vertical ? k : 0);
                    qx = qx < 0 ? 0 : qx >= w ? w - 1 : qx;
                    qy = qy < 0 ? 0 : qy >= h ? h - 1 : qy;
                    sum += (uint32_t)(5 - abs(k)) * src[((size_t)qy * w + (size_t)qx) * 4 + c];
                }
                dst[((size_t)y * w + x) * 4 + c] = (uint8_t)((sum + WEIGHT_SUM / 2) / WEIGHT_SUM);
            }
}

/* The input: hashed noise over a smooth ramp, so both flat and busy areas
 * and every byte value occur. */
static uint8_t input_byte(uint32_t x, uint32_t y, uint32_t c)
{
    uint32_t h = (x * 73856093u) ^ (y * 19349663u) ^ (c * 83492791u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    uint32_t ramp = (x * 3 + y * 5 + c * 64) & 255u;
    return (uint8_t)((ramp + (h & 127u)) & 255u);
}

/* ---- small helpers ------------------------------------------------------------------ */

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory");
    return p;
}

static kiln_program make_program(kiln_context ctx, enum way w, bool vertical, uint32_t *spirv_words)
{
    char name[64];
    snprintf(name, sizeof name, "blur_%s_%s.comp", way_name[w], vertical ? "v" : "h");
    kiln_define def = {"VERTICAL", "1"};
    kiln_program prog;
    KCHECK(kiln_program_create(ctx,
                               &(kiln_program_desc){.source = way_source[w],
                                                    .name = name,
                                                    .defines = vertical ? &def : NULL,
                                                    .define_count = vertical ? 1 : 0},
                               &prog));
    if (kiln_program_wait(ctx, prog) != KILN_OK) {
        char log[4096] = "";
        if (kiln_program_log(ctx, prog, log, sizeof log, NULL) != KILN_OK)
            snprintf(log, sizeof log, "(no log: %s)", kiln_last_error());
        die("%s failed to compile: %s", name, log);
    }
    kiln_program_interface iface;
    KCHECK(kiln_program_interface_get(ctx, prog, &iface));
    static const kiln_binding_kind src_kind[W_COUNT] = {KILN_BINDING_STORAGE_IMAGE, KILN_BINDING_STORAGE_BUFFER,
                                                        KILN_BINDING_COMBINED_IMAGE_SAMPLER};
    if (iface.binding_count != 2 || iface.bindings[0].kind != src_kind[w])
        die("%s: kiln reports %u bindings, binding 0 of kind %d (expected 2 and %d)", name, iface.binding_count,
            (int)iface.bindings[0].kind, (int)src_kind[w]);
    *spirv_words += iface.spirv_words;
    return prog;
}

static uint64_t submit_wait(kiln_context ctx, kiln_scheme scheme)
{
    uint64_t t0 = now_ns();
    kiln_ticket t;
    KCHECK(kiln_scheme_submit(ctx, scheme, &t));
    KCHECK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    return now_ns() - t0;
}

/* ---- one way ------------------------------------------------------------------------ */

struct way_run {
    kiln_image img[3];           /* images and sampled: input, intermediate, output */
    kiln_buffer buf[3];          /* buffers: the same three */
    kiln_scheme scheme;
    uint32_t spirv_words;        /* both passes' */
    uint32_t block;              /* M: frames per timed block */
    uint64_t *round_ns;          /* per round: the block's wall time over M */
    kiln_scheme_stats first;     /* after the first submit: the recording's barriers */
};

static void way_init(kiln_context ctx, enum way w, struct way_run *r, uint32_t width, uint32_t height,
                     const uint8_t *input)
{
    uint64_t bytes = (uint64_t)width * height * 4;
    static const char *const role[3] = {"input", "intermediate", "output"};
    for (int i = 0; i < 3; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s %s", way_name[w], role[i]);
        if (w == W_BUFFERS) {
            KCHECK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = bytes, .label = label}, &r->buf[i]));
            continue;
        }
        /* Only the uses each image has: a driver may lay out a storage-only
         * image differently from a sampled one. */
        uint32_t usage = w == W_IMAGES ? KILN_IMAGE_STORAGE
                         : i == 0      ? KILN_IMAGE_SAMPLED
                         : i == 1      ? KILN_IMAGE_STORAGE | KILN_IMAGE_SAMPLED
                                       : KILN_IMAGE_STORAGE;
        KCHECK(kiln_image_create(ctx,
                                 &(kiln_image_desc){.width = width,
                                                    .height = height,
                                                    .format = KILN_FORMAT_RGBA8,
                                                    .usage = usage,
                                                    .label = label},
                                 &r->img[i]));
    }
    if (w == W_BUFFERS)
        KCHECK(kiln_buffer_upload(ctx, r->buf[0], 0, input, bytes));
    else
        KCHECK(kiln_image_upload(ctx, r->img[0], input, bytes));

    char label[64];
    snprintf(label, sizeof label, "blur through %s", way_name[w]);
    KCHECK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = label}, &r->scheme));
    const uint32_t params[2] = {width, height};
    for (int pass = 0; pass < 2; pass++) {
        kiln_program prog = make_program(ctx, w, pass == 1, &r->spirv_words);
        kiln_binding b[2] = {{.binding = 0}, {.binding = 1}};
        if (w == W_BUFFERS) {
            b[0].buffer = r->buf[pass];
            b[1].buffer = r->buf[pass + 1];
        } else {
            b[0].image = r->img[pass];
            b[1].image = r->img[pass + 1];
            if (w == W_SAMPLED)
                b[0].sampler = (kiln_sampler_desc){.filter = KILN_FILTER_NEAREST, .address = KILN_ADDRESS_CLAMP};
        }
        kiln_node node;
        KCHECK(kiln_scheme_add_node(ctx, r->scheme,
                                    &(kiln_node_desc){.program = prog,
                                                      .bindings = b,
                                                      .binding_count = 2,
                                                      .groups = {(width + GROUP - 1) / GROUP,
                                                                 (height + GROUP - 1) / GROUP, 1},
                                                      .params = params,
                                                      .param_count = 2,
                                                      .label = pass ? "vertical" : "horizontal"},
                                    &node));
    }
}

static void way_readback(kiln_context ctx, enum way w, const struct way_run *r, uint8_t *out, uint64_t bytes)
{
    if (w == W_BUFFERS)
        KCHECK(kiln_buffer_readback(ctx, r->buf[2], 0, out, bytes));
    else
        KCHECK(kiln_image_readback(ctx, r->img[2], out, bytes));
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_image [--quick] [--size WxH | --size N] [--rounds N]\n"
               "  --size WxH  the image's size in texels (N: N x N; default %ux%u)\n"
               "  --rounds N  rounds of one block per way (default 15)\n"
               "  --quick     a %ux%u image, 2 rounds of short blocks (a smoke test;\n"
               "              results still checked)\n",
               DEFAULT_SIZE, DEFAULT_SIZE, QUICK_SIZE, QUICK_SIZE);
}

static void parse_size(const char *s, uint32_t *w, uint32_t *h)
{
    char buf[64];
    if (!s || strlen(s) >= sizeof buf)
        die("--size wants WxH or N, got '%s'", s ? s : "");
    strcpy(buf, s);
    char *x = strchr(buf, 'x');
    if (x)
        *x = '\0';
    *w = (uint32_t)bench_parse_num("--size", buf, 1, 16384);
    *h = x ? (uint32_t)bench_parse_num("--size", x + 1, 1, 16384) : *w;
}

int main(int argc, char **argv)
{
    uint32_t width = 0, height = 0, rounds = 0;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size"))
            parse_size(v, &width, &height), i++;
        else if (!strcmp(a, "--rounds"))
            rounds = (uint32_t)bench_parse_num(a, v, 1, 10000), i++;
        else if (!strcmp(a, "--quick"))
            quick = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown argument '%s'", a);
        }
    }
    if (!width)
        width = height = quick ? QUICK_SIZE : DEFAULT_SIZE;
    if (!rounds)
        rounds = quick ? 2 : 15;
    double block_s = quick ? 0.02 : BLOCK_S;

    kiln_context ctx;
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .specialization = -1}, &ctx));
    kiln_caps caps;
    KCHECK(kiln_context_caps(ctx, &caps));
    if (caps.validation)
        die("the validation layer is on; timings would be meaningless");
    if (width > caps.max_image_dimension_2d || height > caps.max_image_dimension_2d)
        die("%ux%u is larger than the device's largest 2D image (%u)", width, height, caps.max_image_dimension_2d);

    printf("bench_image: a separable 9-tap blur (weights 1 2 3 4 5 4 3 2 1 over 25, edges clamped) of a %ux%u "
           "rgba8 image, two passes (two nodes) per frame, three ways (validation off)\n",
           width, height);
    printf("device: %s (%s; %s)\n", caps.device_name, caps.driver_name, caps.driver_info);
    fflush(stdout);

    size_t texels = (size_t)width * height;
    uint64_t bytes = (uint64_t)texels * 4;
    uint8_t *input = xcalloc(texels, 4), *mid = xcalloc(texels, 4), *want = xcalloc(texels, 4);
    for (uint32_t y = 0; y < height; y++)
        for (uint32_t x = 0; x < width; x++)
            for (uint32_t c = 0; c < 4; c++)
                input[((size_t)y * width + x) * 4 + c] = input_byte(x, y, c);
    cpu_pass(input, mid, width, height, false);
    cpu_pass(mid, want, width, height, true);

    struct way_run run[W_COUNT] = {0};
    for (int w = 0; w < W_COUNT; w++)
        way_init(ctx, (enum way)w, &run[w], width, height, input);

    /* Warm-up: two frames per way (a driver may build a pipeline's machine
     * code at its first dispatch), then three timed, whose median sizes the
     * blocks (one frame alone is at the mercy of the machine's noise). */
    for (int w = 0; w < W_COUNT; w++) {
        struct way_run *r = &run[w];
        (void)submit_wait(ctx, r->scheme);
        KCHECK(kiln_scheme_stats_get(ctx, r->scheme, &r->first));
        if (r->first.nodes != 2 || r->first.barriers < 1)
            die("%s: the scheme records %" PRIu64 " nodes and %" PRIu64 " barriers between them; the vertical pass "
                "must wait for the horizontal one",
                way_name[w], r->first.nodes, r->first.barriers);
        (void)submit_wait(ctx, r->scheme);
        uint64_t three[3];
        for (int i = 0; i < 3; i++)
            three[i] = submit_wait(ctx, r->scheme);
        double one = bench_median(three, 3);
        double m = block_s * 1e9 / (one > 1 ? one : 1);
        r->block = m < 3 ? 3 : m > MAX_BLOCK ? MAX_BLOCK : (uint32_t)m;
        r->round_ns = xcalloc(rounds, sizeof(uint64_t));
    }
    printf("SPIR-V words (both passes): images %u, buffers %u, sampled %u; barriers between the passes: %" PRIu64
           ", %" PRIu64 ", %" PRIu64 "\n",
           run[W_IMAGES].spirv_words, run[W_BUFFERS].spirv_words, run[W_SAMPLED].spirv_words,
           run[W_IMAGES].first.barriers, run[W_BUFFERS].first.barriers, run[W_SAMPLED].first.barriers);
    printf("%u rounds, the ways' order rotating; frames per block: images %u, buffers %u, sampled %u\n", rounds,
           run[W_IMAGES].block, run[W_BUFFERS].block, run[W_SAMPLED].block);
    fflush(stdout);

    kiln_scheme_stats before[W_COUNT], after[W_COUNT];
    for (int w = 0; w < W_COUNT; w++)
        KCHECK(kiln_scheme_stats_get(ctx, run[w].scheme, &before[w]));
    uint64_t t_start = now_ns();
    for (uint32_t round = 0; round < rounds; round++)
        for (uint32_t j = 0; j < W_COUNT; j++) {
            struct way_run *r = &run[(round + j) % W_COUNT];
            uint64_t t0 = now_ns();
            for (uint32_t m = 0; m < r->block; m++) {
                kiln_ticket t;
                KCHECK(kiln_scheme_submit(ctx, r->scheme, &t));
                KCHECK(kiln_ticket_wait(ctx, t, UINT64_MAX));
            }
            r->round_ns[round] = (now_ns() - t0) / r->block;
        }
    double measured_s = (double)(now_ns() - t_start) / 1e9;

    /* The recordings held: every measured submit a replay. */
    for (int w = 0; w < W_COUNT; w++) {
        KCHECK(kiln_scheme_stats_get(ctx, run[w].scheme, &after[w]));
        uint64_t submits = after[w].submits - before[w].submits;
        if (after[w].replays - before[w].replays != submits)
            die("%s: %" PRIu64 " of %" PRIu64 " measured submits were not replays (full records %" PRIu64
                ", params-only %" PRIu64 ")",
                way_name[w], submits - (after[w].replays - before[w].replays), submits,
                after[w].records_full - before[w].records_full, after[w].records_params - before[w].records_params);
    }

    /* The results, once: each way's output against the CPU's, texel by
     * texel: the buffers' exactly, the images' within 2 (see the top). */
    uint8_t *got[W_COUNT];
    uint64_t wrong[W_COUNT] = {0}, inexact[W_COUNT] = {0};
    size_t first_wrong = SIZE_MAX;
    for (int w = 0; w < W_COUNT; w++) {
        got[w] = xcalloc(texels, 4);
        way_readback(ctx, (enum way)w, &run[w], got[w], bytes);
        int slack = w == W_BUFFERS ? 0 : 2;
        for (size_t i = 0; i < texels * 4; i++) {
            int d = abs((int)got[w][i] - (int)want[i]);
            inexact[w] += d != 0;
            if (d > slack) {
                wrong[w]++;
                first_wrong = i < first_wrong ? i : first_wrong;
            }
        }
    }
    if (first_wrong != SIZE_MAX) {
        size_t t = first_wrong / 4;
        die("the outputs differ from the CPU's blur: %" PRIu64 " channels through images, %" PRIu64
            " through buffers, %" PRIu64 " through the sampler (of %zu); first at texel (%zu, %zu) channel %zu: "
            "images %u, buffers %u, sampled %u, CPU %u",
            wrong[W_IMAGES], wrong[W_BUFFERS], wrong[W_SAMPLED], texels * 4, t % width, t / width, first_wrong % 4,
            got[W_IMAGES][first_wrong], got[W_BUFFERS][first_wrong], got[W_SAMPLED][first_wrong], want[first_wrong]);
    }

    /* Per-round ratios, printed before the medians sort the rounds. */
    printf("per-round images/buffers:");
    for (uint32_t round = 0; round < rounds; round++)
        printf(" %.2f", (double)run[W_IMAGES].round_ns[round] / (double)run[W_BUFFERS].round_ns[round]);
    printf("\nper-round sampled/buffers:");
    for (uint32_t round = 0; round < rounds; round++)
        printf(" %.2f", (double)run[W_SAMPLED].round_ns[round] / (double)run[W_BUFFERS].round_ns[round]);
    printf("\n");
    printf("results checked, %zu texels x 4 channels: the buffers' equal the CPU's blur, the images' and the "
           "sampler's are within 2 (channels not exact: images %" PRIu64 ", buffers %" PRIu64 ", sampled %" PRIu64
           "); all measured submits replays\n",
           texels, inexact[W_IMAGES], inexact[W_BUFFERS], inexact[W_SAMPLED]);
    printf("measured part: %.1f s\n\n", measured_s);

    double ms[W_COUNT];
    for (int w = 0; w < W_COUNT; w++)
        ms[w] = bench_median(run[w].round_ns, rounds) / 1e6;
    printf("median time per frame (two passes; submit + wait):\n");
    for (int w = 0; w < W_COUNT; w++)
        printf("  %-8s %-54s %9.3f ms %8.1f Mtexel/s\n", way_name[w], way_what[w], ms[w],
               (double)texels / (ms[w] * 1e3));
    printf("\n");
    printf("blur %ux%u, images / buffers: %.2fx\n", width, height, ms[W_IMAGES] / ms[W_BUFFERS]);
    printf("blur %ux%u, sampled / buffers: %.2fx\n", width, height, ms[W_SAMPLED] / ms[W_BUFFERS]);
    if (quick)
        printf("(--quick: a small image and few rounds; the ratios are rough)\n");

    for (int w = 0; w < W_COUNT; w++) {
        free(got[w]);
        free(run[w].round_ns);
    }
    free(input);
    free(mid);
    free(want);
    (void)kiln_context_destroy(ctx);
    return 0;
}
