/* SPDX-License-Identifier: MIT */
/*
 * cmd_run.c: `kiln run`: compile one GLSL compute shader and run it on
 * buffers given as files, for trying a shader without writing a host program.
 *
 * The run is a one-node scheme: the node's program is the shader, its
 * bindings the --buffer arguments, its grid --groups and its param words
 * --param. Every flag that names a binding takes `[S.]B[[E]]`: binding B
 * of descriptor set S (0 when not given), element E of an array binding
 * (0 when not given); --texel-format gives a texel buffer's format. The scheme is submitted --frames times over the same buffers;
 * kiln orders submits of a context, so frame k+1 reads what frame k wrote.
 * After the last frame the --out buffers are read back whole into files.
 *
 * Decisions:
 * - All argument checking happens before any Vulkan work, input files
 *   included (a missing file is a bad argument): exit 2 with a line naming
 *   the argument, then a one-line usage. The only exception is --groups over
 *   the device's limit, which needs the device's caps: it is refused with the
 *   same exit status once the context exists.
 * - Exit 1 is everything the shader or the device caused: a compile error
 *   (the compiler's log is printed whole: its lines read file:line, since the
 *   program is named after the shader's path), a binding the shader declares
 *   but no --buffer gives (kiln names it at kiln_scheme_add_node; we add the
 *   shader's declared bindings), a device error, or a Vulkan validation
 *   error reported during the run.
 * - Buffers are created after the compile so their usage follows the
 *   program's interface: a binding the shader declares uniform gets a
 *   KILN_BUFFER_UNIFORM buffer, every other one a storage buffer.
 * - A `size:BYTES` buffer is always written before the run: kiln does not
 *   promise new buffers are zeroed. `:fill:WORD` repeats the word's 4
 *   little-endian bytes; when BYTES is not a multiple of 4 the last 1..3
 *   bytes are the word's low-order bytes (the pattern simply stops), so any
 *   size is accepted. Fills and --out copies go through a bounded host
 *   buffer in chunks, so a large buffer needs no host copy of its own size.
 * - The shader's folder is passed as an include folder, so both
 *   #include "x" and #include <x> find files next to the shader.
 * - Nothing is read without a bound. An input FILE is opened and checked
 *   with the arguments (a folder is refused by name) but read once the
 *   device is known: a regular file larger than the device's storage
 *   buffer range is refused before a byte is read; a pipe or device
 *   (/dev/zero) is read up to that range or STREAM_MAX, whichever is
 *   less, and refused past it. The shader is read up to SOURCE_MAX.
 *   --frames is at most MAX_FRAMES, checked with the arguments (each frame
 *   keeps its time for the summary).
 * - Numbers, sizes and words go through base/parse.h, the parsers of the
 *   library's environment switches: size:BYTES takes K, M, G, T.
 * - --out files are written through cli_out: to a temporary file renamed
 *   over the target once complete, so `--buffer 0=p.bin --out 0=p.bin`
 *   keeps p.bin whole when the write fails.
 * - "-" is standard input for the shader, a --buffer, an --image or
 *   --push-file (one of them: stdin is read once), and standard output for
 *   one --out or --out-image; every input is opened with the arguments, so
 *   a second "-" is refused before any Vulkan work.
 * - --json prints one object on stdout once the run ends (the summary, or
 *   {"ok": false, ...} on any failure) and so takes stdout for itself: an
 *   output to "-" with it is refused. The human lines stay on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "parse.h"

#if defined(__GNUC__)
#define RUN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define RUN_PRINTF(f, a)
#endif

#define CHUNK (1u << 20)   /* bytes per fill upload and per readback */
#define SOURCE_MAX (64u << 20)             /* bytes of shader source read at most */
#define STREAM_MAX (256ull << 20)          /* bytes read at most from an input that is not a regular file */
#define MAX_FRAMES 10000000ull             /* --frames at most: 80 MB of frame times */

/* One --buffer argument, and the buffer made for it; or one --bind, a
 * slice of a named buffer. */
struct buf_arg {
    struct cli_site at;
    char site[48];         /* `at` as the flags write it (a named buffer: its name), for messages */
    bool named;            /* --buffer NAME=...: bound by no binding of its own, only by --bind slices */
    char of_name[32];      /* a --bind: the named buffer it slices ("" for a --buffer) */
    int of;                /* a --bind: the index of that buffer in bufs, once resolved; -1 otherwise */
    uint64_t offset;       /* a --bind: the slice's first byte in that buffer */
    bool to_end;           /* a --bind without SIZE: the slice runs to the buffer's end */
    kiln_format format;    /* --texel-format for this binding; 0: the shader's */
    const char *arg;       /* the argument's value as given, for messages; borrowed from argv */
    const char *file;      /* FILE, NULL for size:; borrowed from argv */
    struct cli_in in;      /* FILE opened and checked, read once the device's limit is known */
    char *data;            /* a FILE's bytes (owned); NULL for size: */
    uint64_t size;
    uint32_t fill;         /* size: pattern; 0 = zeroed */
    const char *out;       /* --out FILE for this binding, NULL if none; borrowed from argv */
    bool png_in;           /* png:FILE: the image's pixels as 8-bit RGBA */
    bool png_out;          /* --out B=png:FILE: written as an image */
    uint32_t width, height;   /* png_in: the image's; png_out: the image written */
    kiln_buffer buf;
};

struct run_args {
    const char *shader;    /* borrowed from argv */
    char *source;          /* owned */
    size_t source_len;
    const char *entry;     /* NULL = main */
    kiln_language lang;    /* --lang, else by the file's name (AUTO: by its bytes) */
    kiln_define *defines;  /* owned array; each name points into its define_text */
    char **define_text;    /* owned copies of K=V, split in place */
    uint32_t define_count, define_cap;
    char *preamble;        /* --preamble FILE's text then --preamble-text's, owned; NULL: none */
    size_t preamble_len;
    uint32_t workgroup_size[3];   /* --workgroup-size; 0: the shader's own */
    uint32_t groups[3];
    const char *groups_arg;
    uint32_t params[KILN_PARAM_WORDS];
    bool param_given;      /* some --param */
    uint32_t push[KILN_MAX_PARAM_WORDS];   /* --push N=WORD, over --push-file's words */
    bool push_seen[KILN_MAX_PARAM_WORDS];
    const char *push_text[KILN_MAX_PARAM_WORDS];   /* each --push as given (N=WORD), for notes */
    const char *push_first;   /* the first --push, for messages */
    const char *push_file;    /* --push-file */
    struct cli_in push_in;    /* push_file opened with the arguments, read once the block's size is known */
    struct cli_spec_args spec;   /* --spec ID=VALUE, read once the shader's constants are known */
    struct buf_arg bufs[KILN_MAX_DESCRIPTORS];
    uint32_t buf_count;
    struct cli_images images;   /* --image, --out-image, --sampler */
    uint64_t frames;
    double timeout_s;      /* --timeout: 0 = none */
    const char *trace;     /* --trace FILE.json; NULL: none */
    const char *remote;    /* --remote PATH: a kiln server's socket; NULL: KILN_REMOTE decides */
    bool quiet;
    bool json;             /* --json: the summary as one JSON object on stdout */
    int check, robust;     /* --check, --robust: 1; 0 leaves them to KILN_CHECK and KILN_ROBUST */
    /* --address N=NAME: param words N and N+1 take named buffer NAME's
     * device address (low word first), and the node reaches the buffer. */
    struct addr_arg {
        uint32_t word;
        char name[48];
        const char *arg;   /* borrowed from argv */
        int buf;           /* its index in bufs, once resolved */
    } addrs[KILN_MAX_REACHES];
    uint32_t addr_count;
};

/* What --json reports of a run that succeeded. */
struct run_summary {
    double compile_ms, run_ms, median_ms;
    struct cli_spec spec;
    uint64_t validation_errors, validation_warnings;
    uint32_t workgroup_size[3];
    char device[256];
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kiln run SHADER.comp [options]\n"
            "\n"
            "Compiles one compute shader (GLSL, HLSL or a SPIR-V module), binds files as\n"
            "its buffers, runs it as a one-node scheme and writes buffers back to files.\n"
            "\n"
            "options:\n"
            "  --entry NAME          entry point: a `void NAME()` of the source, an HLSL kernel's\n"
            "                        function, a module's GLCompute entry point (default main)\n"
            "  --lang glsl|hlsl|spirv\n"
            "                        the shader's language; default: spirv for a .spv file,\n"
            "                        hlsl for .hlsl, else spirv when its bytes start with\n"
            "                        SPIR-V's magic number, else glsl (see LANGUAGES)\n"
            "  --define K[=V]        preprocessor define; K alone means K=1; a function-like\n"
            "                        macro as 'F(a,b)=V' (repeatable; no count limit)\n"
            "  --preamble FILE       text put before the shader, after its #version and\n"
            "                        #extension lines (HLSL: first), as hosts insert their\n"
            "                        macros and #extension lines (repeatable)\n"
            "  --preamble-text TEXT  the same, from the command line\n"
            "  --workgroup-size X[,Y[,Z]]\n"
            "                        the workgroup size, set over the shader's own (its\n"
            "                        local_size literals or specialization constants)\n"
            "  --groups X[,Y[,Z]]    workgroups to dispatch (default 1,1,1)\n"
            "  --param N=WORD        node param word N (0..7); shaders read it as kiln_param(N)\n"
            "  --push N=WORD         word N of the shader's own push_constant block (bytes 4N..4N+3)\n"
            "  --push-file FILE      the block's bytes from FILE (bytes past the block are ignored,\n"
            "                        with a note); --push then sets single words over them\n"
            "  --spec ID=VALUE       specialization constant ID (layout(constant_id = ID), or\n"
            "                        local_size_x_id = ID), VALUE read by its declared type (see\n"
            "                        SPECIALIZATION CONSTANTS)\n"
            "  --buffer B=FILE       the bytes of FILE as the buffer at binding B (see BINDINGS)\n"
            "  --buffer B=size:BYTES[:fill:WORD]\n"
            "                        a new buffer of BYTES bytes (or with K, M, G, T: powers\n"
            "                        of 1024), zeroed or filled with WORD\n"
            "  --buffer B=png:FILE   the pixels of a PNG image as 8-bit RGBA, rows top to bottom\n"
            "  --buffer NAME=FILE|png:FILE|size:BYTES[:fill:WORD]\n"
            "                        a buffer no binding takes whole: --bind gives its slices\n"
            "  --bind B=NAME[:OFFSET[:SIZE]]\n"
            "                        binding B takes SIZE bytes (default: to the end) of buffer\n"
            "                        NAME from byte OFFSET (default 0; K, M, G as for size:)\n"
            "  --address N=NAME      param words N and N+1 take buffer NAME's device address, low word\n"
            "                        first (GL_EXT_buffer_reference; the node reaches the buffer)\n"
            "  --out B=FILE          after the run, write the whole buffer at binding B (a --bind:\n"
            "                        its slice) to FILE; --out NAME=FILE: the named buffer\n"
            "                        (B must be given by --buffer or --bind; FILE may be its input\n"
            "                        file: it is replaced only once the new content is complete)\n"
            "  --out B=png:FILE      the same, as a PNG image of the size of binding B's png:\n"
            "                        input, or of the png: input with as many bytes\n"
            "  --image B=FILE.png    the pixels of a PNG as the image at binding B (rgba8; or the\n"
            "                        format the shader declares there, converted: see IMAGES)\n"
            "  --image B=size:WxH[xD][:FORMAT]\n"
            "                        a new image, zeroed (xD: a 3D image of D slices, or D layers\n"
            "                        where the shader declares an arrayed image; a cube image\n"
            "                        takes six WxW faces, a 1D image Wx1)\n"
            "  --image B=FILE:WxH[xD]:FORMAT\n"
            "                        an image of FILE's raw texels (exactly that many bytes)\n"
            "  --out-image B=FILE    after the run, write the image at binding B to FILE: a PNG\n"
            "                        when FILE ends in .png, else its raw texels\n"
            "  --sampler B=linear|nearest[,clamp|repeat|mirror|border]\n"
            "                        the sampler at binding B (a sampler2D's, or a separate\n"
            "                        sampler's); default linear, clamp\n"
            "  --texel-format B=FORMAT\n"
            "                        the texel format of the texel buffer at binding B\n"
            "                        (imageBuffer, textureBuffer, samplerBuffer): r32f, r32ui,\n"
            "                        r32i, rgba32f, rgba8, ...; default: the shader's format\n"
            "                        qualifier (a textureBuffer has none: it needs this flag)\n"
            "  --frames N            submit N times over the same buffers (default 1, at most\n"
            "                        10000000); each frame sees the previous frame's results\n"
            "  --check               check mode (KILN_CHECK=1): each access past a buffer binding's\n"
            "                        range is reported, naming the node, the binding and the byte\n"
            "                        (exit 1); slow\n"
            "  --robust              robust access (KILN_ROBUST=1): an access past a binding's range\n"
            "                        touches no other memory (reads give zero with robustness2)\n"
            "  -q, --quiet           no summary line, compiler warnings or notes on stderr\n"
            "  --json                print the summary as one JSON object on stdout (see JSON)\n"
            "  --trace FILE.json     write a Chrome trace of the run (compiles, submits, device time,\n"
            "                        specialization, archive): open it in Perfetto or chrome://tracing\n"
            "  --remote PATH         run in the kiln server listening at PATH (kiln serve), as\n"
            "                        KILN_REMOTE=unix:PATH does\n"
            "  --timeout S           a submit still running S seconds (fractions allowed) after it\n"
            "                        could start ends the run with KILN_ERR_DEVICE_LOST (exit 1)\n"
            "  -h, --help            this text\n"
            "\n"
            "A WORD is an integer: decimal (42, -5 as two's complement) or 0x hex (0xff);\n"
            "or a float, as its IEEE-754 bits: 1.5, -2e3, 1f, inf. A FILE is read up to the\n"
            "device's max storage buffer range (a pipe or device: 256 MiB at most). A fill\n"
            "WORD repeats as its 4 little-endian bytes; if BYTES is not a multiple of 4 the\n"
            "pattern stops short (the last bytes are the word's low bytes). Name a file\n"
            "that starts with 'size:' or 'png:' as ./size:... or ./png:... Bindings the\n"
            "shader declares uniform get uniform buffers. The shader's folder is searched\n"
            "by #include. Options also take the --name=value form.\n"
            "\n"
            "BINDINGS: B is a binding number in descriptor set 0; S.B is binding B of set\n"
            "S (1.0: set 1, binding 0); an array of blocks (buffer B { ... } b[4]) takes\n"
            "one --buffer per element, B[E] or S.B[E] (0.2[3]: element 3 of binding 2;\n"
            "B alone is element 0). Several blocks the shader declares on one binding\n"
            "see the one buffer given there.\n"
            "\n"
            "IMAGES: an image's format is FORMAT where given, else the one the shader\n"
            "declares at its binding (a storage image's format qualifier), else rgba8. A\n"
            "PNG converts to and from the unorm formats (rgba8, rg8, r8, rgba16, rg16, r16,\n"
            "rgb10_a2) and the float ones (rgba16f, rg16f, r16f, r11f_g11f_b10f, rgba32f,\n"
            "rg32f, r32f): bytes as value/255 in, values clamped to [0,1] on the way out,\n"
            "one channel as grey. Integer and snorm formats take raw texels\n"
            "(FILE:WxH:FORMAT, --out-image to a file not ending in .png).\n"
            "\n"
            "SPECIALIZATION CONSTANTS: --spec reads VALUE as the constant's type: an int\n"
            "or uint (16- and 8-bit ones too) in decimal (-5) or 0x hex for its bits; a\n"
            "float or float16 as 0.5, 0.5f, 2, 1e-3, inf, or 0x hex for its bits; a bool\n"
            "as true, false, 1 or 0. A value its type cannot hold, an ID the shader does\n"
            "not declare and 64-bit constants are refused by name. Constants left at their\n"
            "defaults are named in a note (a workgroup of 1, a loop bound of 1 is seldom\n"
            "what a shader's author meant).\n"
            "\n"
            "LANGUAGES: HLSL registers are bindings by class, in the set their space\n"
            "names: uN is binding N, tN binding 16+N, bN binding 32+N, sN binding 48+N; a\n"
            "resource without register() takes the next free binding of its class, and\n"
            "globals outside a cbuffer are one uniform buffer ($Global) among the b\n"
            "bindings. A SPIR-V module takes no --define and includes nothing; its own\n"
            "push_constant block is what --push sets.\n"
            "\n"
            "STDIN AND STDOUT: '-' is standard input as SHADER, a --buffer or --image FILE\n"
            "or --push-file (one of them: it is read once), and standard output as one --out\n"
            "or --out-image FILE (--out-image B=- writes raw texels; a PNG needs a .png name,\n"
            "--out B=png:- writes one). A file named - is ./-.\n"
            "\n"
            "JSON: {\"ok\": true, \"shader\", \"device\", \"frames\", \"median_ms\", \"run_ms\",\n"
            "\"compile_ms\", \"groups\": [X,Y,Z], \"workgroup_size\": [X,Y,Z], \"specialization\": {\"warms\",\n"
            "\"promotions\", \"demotions\", \"failed\", \"pinned\"}, \"validation_errors\",\n"
            "\"validation_warnings\"}; on failure {\"ok\": false, \"exit_status\", \"error\"}.\n"
            "Specialization counts are kept only without -q.\n"
            "\n"
            "exit status: 0 ran; 1 the shader failed to compile or the run failed; 2 bad\n"
            "arguments.\n");
}

/* Names a bad argument and why, then the short usage; returns 2. */
static int bad(const char *fmt, ...) RUN_PRINTF(1, 2);
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "kiln run: %s", msg);
    cli_note_failure("%s", msg);
    fprintf(stderr, "\nusage: kiln run SHADER.comp [options]   ('kiln run --help' lists them)\n");
    return 2;
}

static bool is_ident(const char *s, size_t n)
{
    if (!n || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return false;
    return true;
}

/* Splits "B=REST" into a binding number and REST (borrowed). */
static bool split_binding(const char *v, uint32_t *binding, const char **rest)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v)
        return false;
    char num[32];
    size_t n = (size_t)(eq - v);
    if (n >= sizeof num)
        return false;
    memcpy(num, v, n);
    num[n] = 0;
    uint64_t b;
    if (!parse_u64(num, &b, NULL) || b > UINT32_MAX)
        return false;
    *binding = (uint32_t)b;
    *rest = eq + 1;
    return true;
}

/* The --buffer or --bind at a binding. */
static struct buf_arg *find_buf(struct run_args *a, struct cli_site at)
{
    for (uint32_t i = 0; i < a->buf_count; i++)
        if (!a->bufs[i].named && cli_site_same(a->bufs[i].at, at))
            return &a->bufs[i];
    return NULL;
}

/* A named buffer's index, -1 if none has the name. */
static int find_named(const struct run_args *a, const char *name, size_t len)
{
    for (uint32_t i = 0; i < a->buf_count; i++)
        if (a->bufs[i].named && strlen(a->bufs[i].site) == len && !strncmp(a->bufs[i].site, name, len))
            return (int)i;
    return -1;
}

/* The length of the buffer name v starts with (a letter or '_', then
 * letters, digits, '_' and '-'); 0 if it starts with none. */
static size_t buffer_name_len(const char *v)
{
    if (!isalpha((unsigned char)v[0]) && v[0] != '_')
        return 0;
    size_t n = 1;
    while (isalnum((unsigned char)v[n]) || v[n] == '_' || v[n] == '-')
        n++;
    return n;
}

/* --preamble FILE and --preamble-text TEXT: appended in the order given,
 * each on lines of its own. */
static int add_preamble(struct run_args *a, const char *opt, const char *text, size_t n)
{
    if (a->preamble_len + n + 2 > KILN_MAX_PREAMBLE_BYTES)
        return bad("%s: the preamble would pass %u bytes (KILN_MAX_PREAMBLE_BYTES)", opt, KILN_MAX_PREAMBLE_BYTES);
    if (memchr(text, 0, n))
        return bad("%s: the preamble holds a NUL byte", opt);
    char *p = realloc(a->preamble, a->preamble_len + n + 2);
    if (!p)
        return bad("%s: out of host memory", opt);
    memcpy(p + a->preamble_len, text, n);
    a->preamble_len += n;
    if (n && text[n - 1] != '\n')
        p[a->preamble_len++] = '\n';
    p[a->preamble_len] = 0;
    a->preamble = p;
    return 0;
}

static int parse_preamble_file(struct run_args *a, const char *path)
{
    char why[300];
    size_t n;
    char *text = cli_read_file(path, KILN_MAX_PREAMBLE_BYTES, &n, why, sizeof why);
    if (!text)
        return bad("--preamble %s: %s", path, why);
    int r = add_preamble(a, "--preamble", text, n);
    free(text);
    return r;
}

static int parse_workgroup_size(struct run_args *a, const char *v)
{
    uint32_t s[3] = {0, 0, 0};
    const char *p = v;
    for (int d = 0;; d++) {
        char *end = (char *)p;
        unsigned long x = d < 3 && isdigit((unsigned char)*p) ? strtoul(p, &end, 10) : 0;
        if (d == 3 || !x || x > 65535 || (*end && *end != ','))
            return bad("--workgroup-size %s: expected X[,Y[,Z]], each 1 to 65535 (axes not given keep the "
                       "shader's own)", v);
        s[d] = (uint32_t)x;
        if (!*end)
            break;
        p = end + 1;
    }
    memcpy(a->workgroup_size, s, sizeof s);
    return 0;
}

static int parse_groups(struct run_args *a, const char *v)
{
    a->groups_arg = v;
    uint32_t g[3] = {1, 1, 1};
    const char *p = v;
    for (int d = 0;; d++) {
        if (d == 3)
            return bad("--groups %s: at most 3 counts (X,Y,Z)", v);
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char num[32];
        uint64_t x;
        if (n == 0 || n >= sizeof num)
            return bad("--groups %s: expected X[,Y[,Z]] with counts of at least 1", v);
        memcpy(num, p, n);
        num[n] = 0;
        if (!parse_u64(num, &x, NULL) || x > UINT32_MAX)
            return bad("--groups %s: '%s' is not a workgroup count (1 to %" PRIu32 ")", v, num, UINT32_MAX);
        if (x == 0)
            return bad("--groups %s: a count of 0 workgroups runs nothing; each count must be at least 1", v);
        g[d] = (uint32_t)x;
        if (!comma)
            break;
        p = comma + 1;
    }
    memcpy(a->groups, g, sizeof g);
    return 0;
}

static int parse_param(struct run_args *a, const char *v, bool seen[KILN_PARAM_WORDS])
{
    uint32_t n, word;
    const char *w;
    if (!split_binding(v, &n, &w))
        return bad("--param %s: expected N=WORD with N in 0..%d", v, KILN_PARAM_WORDS - 1);
    if (n >= KILN_PARAM_WORDS)
        return bad("--param %s: param word %" PRIu32 " does not exist; N is 0..%d", v, n, KILN_PARAM_WORDS - 1);
    char why[PARSE_WHY_LEN];
    if (!parse_word(w, &word, why))
        return bad("--param %s: %s", v, why);
    if (seen[n])
        return bad("--param %s: param word %" PRIu32 " is given twice", v, n);
    seen[n] = true;
    a->params[n] = word;
    a->param_given = true;
    return 0;
}

static int parse_address(struct run_args *a, const char *v)
{
    uint32_t n;
    const char *w;
    size_t len;
    if (!split_binding(v, &n, &w) || !(len = buffer_name_len(w)) || w[len])
        return bad("--address %s: expected N=NAME: param words N and N+1 take the device address of the buffer "
                   "--buffer NAME=... gives", v);
    if (n + 1 >= KILN_MAX_PARAM_WORDS)
        return bad("--address %s: words %" PRIu32 " and %" PRIu32 " are past the most a node carries (%d)", v, n,
                   n + 1, KILN_MAX_PARAM_WORDS);
    if (a->addr_count == KILN_MAX_REACHES)
        return bad("--address %s: at most %d addresses", v, KILN_MAX_REACHES);
    if (len >= sizeof a->addrs[0].name)
        return bad("--address %s: no buffer has a name that long", v);
    struct addr_arg *d = &a->addrs[a->addr_count++];
    *d = (struct addr_arg){.word = n, .arg = v, .buf = -1};
    memcpy(d->name, w, len);
    return 0;
}

static int parse_push(struct run_args *a, const char *v)
{
    uint32_t n, word;
    const char *w;
    if (!split_binding(v, &n, &w))
        return bad("--push %s: expected N=WORD with N a word of the shader's push_constant block (0..%d)", v,
                   KILN_MAX_PARAM_WORDS - 1);
    if (n >= KILN_MAX_PARAM_WORDS)
        return bad("--push %s: word %" PRIu32 " is past the largest push_constant block kiln takes (%d words)", v, n,
                   KILN_MAX_PARAM_WORDS);
    char why[PARSE_WHY_LEN];
    if (!parse_word(w, &word, why))
        return bad("--push %s: %s", v, why);
    if (a->push_seen[n])
        return bad("--push %s: word %" PRIu32 " is given twice", v, n);
    a->push_seen[n] = true;
    a->push[n] = word;
    a->push_text[n] = v;
    if (!a->push_first)
        a->push_first = v;
    return 0;
}

/* The node's param words, once the program's interface is known: kiln's 8
 * from --param, or the shader's own block from --push-file then --push.
 * 0 with *count set, or 2 (bad arguments) after saying what was wrong. */
static int node_words(const struct run_args *a, const kiln_program_interface *iface, uint32_t *out, uint32_t *count)
{
    if (!iface->own_push_block) {
        if (a->push_first || a->push_file)
            return bad("%s: the shader declares no push_constant block of its own; kiln's param words are set with "
                       "--param N=WORD (kiln_param(N))",
                       a->push_first ? "--push" : "--push-file");
        memcpy(out, a->params, sizeof a->params);
        *count = KILN_PARAM_WORDS;
        return 0;
    }
    uint32_t words = iface->param_words;
    if (!words && (a->push_file || a->push_first || a->param_given))   /* HLSL, or a module, without a block */
        return bad("%s: %s has no push_constant block, so nothing takes its words (kiln's --param words are "
                   "GLSL's kiln_param)", a->param_given ? "--param" : a->push_first ? "--push" : "--push-file",
                   a->shader);
    if (a->param_given)
        return bad("--param: %s declares its own push_constant block (%u bytes), so kiln's param words do not exist; "
                   "set the block's words with --push N=WORD or --push-file FILE",
                   a->shader, iface->push_constant_size);
    memset(out, 0, words * sizeof *out);
    if (words && !a->push_file && !a->push_first && !a->addr_count && !a->quiet)   /* zeros: seldom meant */
        fprintf(stderr, "note: %s: its push_constant block (%u bytes) is given no values, so it runs with zeros; "
                "set them with --push N=WORD or --push-file FILE\n", a->shader, iface->push_constant_size);
    if (a->push_file) {
        char why[512];
        size_t len;
        char *data = cli_in_read((struct cli_in *)&a->push_in, 1u << 20, &len, why, sizeof why);   /* its size is said below */
        if (!data)
            return bad("--push-file %s: %s", a->push_file, why);
        /* Hosts pad their structs past a block's last member (Vulkan takes
         * a larger range): the block's bytes are used, the rest named. */
        if (len > iface->push_constant_size && !a->quiet)
            fprintf(stderr, "note: --push-file %s: %zu bytes; the shader's push_constant block holds %u, so bytes "
                    "%u..%zu are ignored\n", a->push_file, len, iface->push_constant_size,
                    iface->push_constant_size, len - 1);
        memcpy(out, data, len < iface->push_constant_size ? len : iface->push_constant_size);
        free(data);
    }
    for (uint32_t n = 0; n < KILN_MAX_PARAM_WORDS; n++) {
        if (!a->push_seen[n])
            continue;
        if (n >= words)
            return bad("--push: word %" PRIu32 " is past the shader's push_constant block (%u bytes: words 0..%u)", n,
                       iface->push_constant_size, words - 1);
        out[n] = a->push[n];
        /* A float member given a decimal integer gets its bits, which is
         * seldom what was meant: say which bits. */
        const char *w = strchr(a->push_text[n], '=') + 1;
        if (n < 64 && (iface->push_float_words >> n & 1) && cli_decimal_integer(w) && !a->quiet) {
            float f;
            memcpy(&f, &a->push[n], 4);
            fprintf(stderr, "note: --push %s: word %" PRIu32 " of the push_constant block is a float, and %s is read "
                    "as the integer bits 0x%08" PRIx32 " (the float %g); write %s.0 for the value\n",
                    a->push_text[n], n, w, a->push[n], (double)f, w);
        }
    }
    *count = words;
    return 0;
}

/* The identifier a define's name starts with: its length. */
static size_t define_ident_len(const char *name)
{
    size_t n = 0;
    while (name[n] && (isalnum((unsigned char)name[n]) || name[n] == '_'))
        n++;
    return n;
}

/* --define K[=V] or a function-like macro, --define 'F(a,b)=V': the value
 * starts after the first '=' past the macro's ')'. The library checks the
 * name's form (prog_define_name_ok) and says what is wrong. */
static int parse_define(struct run_args *a, const char *v)
{
    const char *paren = strchr(v, '('), *eq = strchr(v, '=');
    if (paren && (!eq || paren < eq)) {
        const char *close = strchr(paren, ')');
        if (!close)
            return bad("--define %s: the macro's parameters have no ')'", v);
        eq = strchr(close, '=');
    }
    size_t n = eq ? (size_t)(eq - v) : strlen(v);
    size_t id = define_ident_len(v);
    if (!id || id > n || isdigit((unsigned char)v[0]) || (id < n && v[id] != '('))
        return bad("--define %s: '%.*s' is not an identifier or a macro's head NAME(a, b)", v, (int)n, v);
    for (uint32_t i = 0; i < a->define_count; i++)
        if (define_ident_len(a->defines[i].name) == id && !strncmp(a->defines[i].name, v, id))
            return bad("--define %s: %.*s is defined twice", v, (int)id, v);
    if (a->define_count == a->define_cap) {
        uint32_t cap = a->define_cap ? a->define_cap * 2 : 16;
        kiln_define *d = realloc(a->defines, cap * sizeof *d);
        if (d)
            a->defines = d;
        char **t = d ? realloc(a->define_text, cap * sizeof *t) : NULL;
        if (!t)
            return bad("--define %s: out of host memory", v);
        a->define_text = t;
        a->define_cap = cap;
    }
    char *t = strdup(v);
    if (!t)
        return bad("--define %s: out of host memory", v);
    a->define_text[a->define_count] = t;
    kiln_define *d = &a->defines[a->define_count++];
    d->name = t;
    d->value = NULL;   /* "1" */
    if (eq) {
        t[n] = 0;
        d->value = t + n + 1;
    }
    return 0;
}

static int parse_buffer(struct run_args *a, const char *v)
{
    struct cli_site at = {0};
    const char *rest;
    char where[48];
    size_t named = buffer_name_len(v);
    if (named && v[named] == '=') {   /* NAME=...: a buffer --bind slices */
        if (named >= sizeof where)
            return bad("--buffer %s: a buffer's name is at most %zu characters", v, sizeof where - 1);
        if (find_named(a, v, named) >= 0)
            return bad("--buffer %s: buffer '%.*s' is given twice", v, (int)named, v);
        rest = v + named + 1;
        if (!*rest)
            return bad("--buffer %s: expected NAME=FILE, NAME=png:FILE or NAME=size:BYTES[:fill:WORD]", v);
    } else if (!cli_site_split(v, &at, &rest) || !*rest) {
        return bad("--buffer %s: expected B=FILE, B=png:FILE or B=size:BYTES[:fill:WORD], where B is a binding "
                   "(S.B in set S, B[E] for element E of an array) or a name --bind takes slices of", v);
    } else if (find_buf(a, at)) {
        return bad("--buffer %s: binding %s is given twice", v, cli_site_text(at, where));
    }
    if (a->buf_count == KILN_MAX_DESCRIPTORS)
        return bad("--buffer %s: at most %d buffers", v, KILN_MAX_DESCRIPTORS);
    struct buf_arg b = {.at = at, .arg = v, .in = {.fd = -1}, .of = -1, .named = named && v[named] == '='};
    if (b.named)
        snprintf(b.site, sizeof b.site, "%.*s", (int)named, v);
    else
        cli_site_text(at, b.site);
    if (!strncmp(rest, "size:", 5)) {
        const char *num = rest + 5;
        const char *fill = strstr(num, ":fill:");
        char bytes[32];
        size_t n = fill ? (size_t)(fill - num) : strlen(num);
        if (n == 0 || n >= sizeof bytes)
            return bad("--buffer %s: expected size:BYTES[:fill:WORD]", v);
        memcpy(bytes, num, n);
        bytes[n] = 0;
        char why[PARSE_WHY_LEN];
        if (!parse_size(bytes, &b.size, why))
            return bad("--buffer %s: %s", v, why);
        if (b.size == 0)
            return bad("--buffer %s: a buffer holds at least 1 byte", v);
        if (fill && !parse_word(fill + 6, &b.fill, why))
            return bad("--buffer %s: fill %s", v, why);
    } else {
        char why[256];
        b.png_in = !strncmp(rest, "png:", 4);
        if (b.png_in && !*(rest += 4))
            return bad("--buffer %s: expected png:FILE", v);
        b.file = rest;
        if (!cli_in_open(&b.in, rest, why, sizeof why))
            return bad("--buffer %s: cannot read '%s': %s", v, rest, why);
        if (!b.in.stream && b.in.size == 0) {
            cli_in_close(&b.in);
            return bad("--buffer %s: '%s' is empty; a buffer holds at least 1 byte", v, rest);
        }
    }
    a->bufs[a->buf_count++] = b;
    return 0;
}

/* --bind B=NAME[:OFFSET[:SIZE]]: binding B takes bytes OFFSET (default
 * 0) to OFFSET+SIZE (default: the end) of the buffer --buffer NAME gives;
 * the name is resolved and the range checked once every argument is in
 * and the buffer's size is known. */
static int parse_bind(struct run_args *a, const char *v)
{
    struct cli_site at;
    const char *rest;
    char where[48];
    size_t n;
    if (!cli_site_split(v, &at, &rest) || !(n = buffer_name_len(rest)) || (rest[n] && rest[n] != ':'))
        return bad("--bind %s: expected B=NAME[:OFFSET[:SIZE]], where B is a binding (S.B in set S, B[E] for "
                   "element E of an array) and NAME a buffer given by --buffer NAME=...", v);
    if (find_buf(a, at))
        return bad("--bind %s: binding %s is given twice", v, cli_site_text(at, where));
    if (a->buf_count == KILN_MAX_DESCRIPTORS)
        return bad("--bind %s: at most %d bindings", v, KILN_MAX_DESCRIPTORS);
    if (n >= sizeof ((struct buf_arg *)0)->of_name)
        return bad("--bind %s: no buffer has a name that long", v);
    struct buf_arg b = {.at = at, .arg = v, .in = {.fd = -1}, .of = -1, .to_end = true};
    cli_site_text(at, b.site);
    memcpy(b.of_name, rest, n);
    const char *p = rest + n;
    for (int field = 0; *p == ':' && field < 2; field++) {
        const char *num = p + 1, *end = strchr(num, ':');
        char text[32], why[PARSE_WHY_LEN];
        size_t len = end ? (size_t)(end - num) : strlen(num);
        if (len == 0 || len >= sizeof text)
            return bad("--bind %s: expected B=NAME[:OFFSET[:SIZE]]", v);
        memcpy(text, num, len);
        text[len] = 0;
        uint64_t x;
        if (!parse_size(text, &x, why))
            return bad("--bind %s: %s %s", v, field ? "size" : "offset", why);
        if (field) {
            if (x == 0)
                return bad("--bind %s: a slice holds at least 1 byte", v);
            b.size = x;
            b.to_end = false;
        } else {
            b.offset = x;
        }
        p = num + len;
    }
    if (*p)
        return bad("--bind %s: expected B=NAME[:OFFSET[:SIZE]]", v);
    a->bufs[a->buf_count++] = b;
    return 0;
}

/* Records an --out or a --texel-format; checked against the buffers once
 * every argument is in. */
struct out_arg {
    struct cli_site at;
    const char *file, *arg;
    const char *name;      /* --out NAME=FILE: the name (name_len characters); NULL for a binding */
    size_t name_len;
};

/* Parses argv into *a. Returns 0 to run, -1 after printing --help, or 2
 * after naming a bad argument. */
/* The language a shader's file name says: .spv SPIR-V, .hlsl (.hlsli)
 * HLSL; AUTO for any other (SPIR-V by its bytes, else GLSL). */
static kiln_language lang_of_name(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return KILN_LANGUAGE_AUTO;
    if (!strcmp(dot, ".spv"))
        return KILN_LANGUAGE_SPIRV;
    if (!strcmp(dot, ".hlsl") || !strcmp(dot, ".hlsli"))
        return KILN_LANGUAGE_HLSL;
    return KILN_LANGUAGE_AUTO;
}

static int parse_args(int argc, char **argv, struct run_args *a)
{
    struct out_arg outs[KILN_MAX_DESCRIPTORS], formats[KILN_MAX_DESCRIPTORS];
    uint32_t out_count = 0, format_count = 0;
    bool param_seen[KILN_PARAM_WORDS] = {false};
    bool lang_given = false;
    bool options_done = false;
    a->groups[0] = a->groups[1] = a->groups[2] = 1;
    a->frames = 1;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || !arg[1]) {
            if (a->shader)
                return bad("unexpected argument '%s': one SHADER.comp is run at a time", arg);
            a->shader = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            options_done = true;
            continue;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(arg, "-q") || !strcmp(arg, "--quiet")) {
            a->quiet = true;
            continue;
        }
        if (!strcmp(arg, "--check") || !strcmp(arg, "--robust")) {
            *(arg[2] == 'c' ? &a->check : &a->robust) = 1;
            continue;
        }
        if (!strcmp(arg, "--json")) {
            a->json = true;
            continue;
        }
        /* Options with a value: --name VALUE or --name=VALUE. */
        static const char *const with_value[] = {"--entry", "--lang", "--define", "--preamble", "--preamble-text",
                                                 "--workgroup-size", "--groups", "--param", "--push", "--push-file",
                                                 "--buffer", "--bind", "--address", "--out", "--texel-format", "--frames",
                                                 "--timeout", "--spec", "--image", "--out-image", "--sampler",
                                                 "--trace", "--remote"};
        const char *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const char *name = NULL;
        for (size_t k = 0; k < sizeof with_value / sizeof with_value[0]; k++)
            if (strlen(with_value[k]) == name_len && !strncmp(arg, with_value[k], name_len))
                name = with_value[k];
        if (!name) {
            if (eq && ((name_len == 7 && !strncmp(arg, "--quiet", 7)) || (name_len == 6 && !strncmp(arg, "--help", 6)) ||
                       (name_len == 6 && !strncmp(arg, "--json", 6))))
                return bad("%s: %.*s takes no value", arg, (int)name_len, arg);
            return bad("unknown option '%s'", arg);
        }
        const char *v;
        if (eq) {
            v = eq + 1;
        } else if (i + 1 < argc) {
            v = argv[++i];
        } else {
            return bad("%s needs a value", name);
        }
        int r = 0;
        if (!strcmp(name, "--entry")) {
            if (!is_ident(v, strlen(v)))
                return bad("--entry %s: the entry must name a function (an identifier)", v);
            a->entry = v;
        } else if (!strcmp(name, "--lang")) {
            if (!strcmp(v, "glsl"))
                a->lang = KILN_LANGUAGE_GLSL;
            else if (!strcmp(v, "hlsl"))
                a->lang = KILN_LANGUAGE_HLSL;
            else if (!strcmp(v, "spirv"))
                a->lang = KILN_LANGUAGE_SPIRV;
            else
                return bad("--lang %s: expected glsl, hlsl or spirv", v);
            lang_given = true;
        } else if (!strcmp(name, "--define")) {
            r = parse_define(a, v);
        } else if (!strcmp(name, "--preamble")) {
            r = parse_preamble_file(a, v);
        } else if (!strcmp(name, "--preamble-text")) {
            r = add_preamble(a, "--preamble-text", v, strlen(v));
        } else if (!strcmp(name, "--workgroup-size")) {
            r = parse_workgroup_size(a, v);
        } else if (!strcmp(name, "--groups")) {
            r = parse_groups(a, v);
        } else if (!strcmp(name, "--param")) {
            r = parse_param(a, v, param_seen);
        } else if (!strcmp(name, "--push")) {
            r = parse_push(a, v);
        } else if (!strcmp(name, "--spec")) {
            char why[320];
            if (!cli_spec_add(&a->spec, v, why, sizeof why))
                return bad("%s", why);
        } else if (!strcmp(name, "--push-file")) {
            if (a->push_file)
                return bad("--push-file %s: given twice (the first: %s)", v, a->push_file);
            a->push_file = v;
        } else if (!strcmp(name, "--buffer")) {
            r = parse_buffer(a, v);
        } else if (!strcmp(name, "--bind")) {
            r = parse_bind(a, v);
        } else if (!strcmp(name, "--address")) {
            r = parse_address(a, v);
        } else if (!strcmp(name, "--image") || !strcmp(name, "--out-image") || !strcmp(name, "--sampler")) {
            char why[400];
            bool ok = !strcmp(name, "--image")       ? cli_image_add(&a->images, v, why, sizeof why)
                      : !strcmp(name, "--out-image") ? cli_image_out_add(&a->images, v, why, sizeof why)
                                                     : cli_sampler_add(&a->images, v, why, sizeof why);
            if (!ok)
                return bad("%s", why);
        } else if (!strcmp(name, "--out")) {
            struct out_arg o = {.arg = v};
            char where[48];
            size_t n = buffer_name_len(v);
            if (n && v[n] == '=' && v[n + 1]) {   /* NAME=FILE: a named buffer, whole */
                o.name = v;
                o.name_len = n;
                o.file = v + n + 1;
            } else if (!cli_site_split(v, &o.at, &o.file) || !*o.file) {
                return bad("--out %s: expected B=FILE, where B is a binding (S.B in set S, B[E] for element E of an "
                           "array) or the name of a buffer given by --buffer NAME=...", v);
            }
            for (uint32_t k = 0; k < out_count; k++)
                if (o.name ? outs[k].name && outs[k].name_len == n && !strncmp(outs[k].name, v, n)
                           : !outs[k].name && cli_site_same(outs[k].at, o.at))
                    return bad("--out %s: %s %s is written out twice", v, o.name ? "buffer" : "binding",
                               o.name ? o.name : cli_site_text(o.at, where));
            if (out_count == KILN_MAX_DESCRIPTORS)
                return bad("--out %s: at most %d outputs", v, KILN_MAX_DESCRIPTORS);
            outs[out_count++] = o;
        } else if (!strcmp(name, "--texel-format")) {
            struct out_arg o = {.arg = v};
            char where[48];
            if (!cli_site_split(v, &o.at, &o.file) || !*o.file)
                return bad("--texel-format %s: expected B=FORMAT, where B is a binding (S.B in set S, B[E] for "
                           "element E of an array)", v);
            if (!cli_format_named(o.file)) {
                char names[400] = "";
                size_t len = 0;
                for (kiln_format f = 1; f < KILN_FORMAT_COUNT && len < sizeof names; f++)
                    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                            kiln_format_name(f));
                return bad("--texel-format %s: '%s' is not a format kiln knows (%s)", v, o.file, names);
            }
            for (uint32_t k = 0; k < format_count; k++)
                if (cli_site_same(formats[k].at, o.at))
                    return bad("--texel-format %s: binding %s is given a format twice", v, cli_site_text(o.at, where));
            if (format_count == KILN_MAX_DESCRIPTORS)
                return bad("--texel-format %s: at most %d formats", v, KILN_MAX_DESCRIPTORS);
            formats[format_count++] = o;
        } else if (!strcmp(name, "--trace")) {
            if (!*v)
                return bad("--trace: expected a file name");
            a->trace = v;
        } else if (!strcmp(name, "--remote")) {
            if (!*v)
                return bad("--remote: expected a socket path");
            a->remote = v;
        } else if (!strcmp(name, "--timeout")) {
            char why[PARSE_WHY_LEN];
            if (!parse_seconds(v, &a->timeout_s, why))
                return bad("--timeout %s: %s", v, why);
            if (a->timeout_s <= 0)
                return bad("--timeout %s: expected seconds above 0", v);
        } else {   /* --frames */
            char why[PARSE_WHY_LEN];
            if (!parse_u64(v, &a->frames, why))
                return bad("--frames %s: %s", v, why);
            if (a->frames == 0 || a->frames > MAX_FRAMES)
                return bad("--frames %s: expected a frame count from 1 to %llu", v, MAX_FRAMES);
        }
        if (r)
            return r;
    }
    if (!a->shader)
        return bad("no SHADER.comp given");
    if (!lang_given)
        a->lang = lang_of_name(a->shader);
    if (a->lang == KILN_LANGUAGE_SPIRV && a->define_count)
        return bad("--define %s: %s is a SPIR-V module, which has no preprocessor (its specialization constants "
                   "are set by --spec)", a->define_text[0], a->shader);
    char img_why[400];
    if (!cli_images_check(&a->images, img_why, sizeof img_why))
        return bad("%s", img_why);
    for (uint32_t i = 0; i < a->images.count; i++)
        if (find_buf(a, a->images.images[i].at))
            return bad("--image %s: binding %s is given a --buffer too; a binding takes one or the other",
                       a->images.images[i].arg, a->images.images[i].site);
    for (uint32_t k = 0; k < format_count; k++) {
        char where[48];
        struct buf_arg *b = find_buf(a, formats[k].at);
        cli_site_text(formats[k].at, where);
        if (!b)
            return bad("--texel-format %s: binding %s has no --buffer; give it with --buffer %s=FILE or --buffer "
                       "%s=size:BYTES", formats[k].arg, where, where, where);
        b->format = cli_format_named(formats[k].file);
    }
    /* Each --bind's buffer, by name; every named buffer sliced by one. */
    for (uint32_t i = 0; i < a->buf_count; i++) {
        struct buf_arg *b = &a->bufs[i];
        if (b->named || !b->of_name[0])
            continue;
        if ((b->of = find_named(a, b->of_name, strlen(b->of_name))) < 0)
            return bad("--bind %s: no buffer is named '%s'; give it with --buffer %s=FILE or --buffer "
                       "%s=size:BYTES", b->arg, b->of_name, b->of_name, b->of_name);
    }
    for (uint32_t k = 0; k < a->addr_count; k++) {
        struct addr_arg *d = &a->addrs[k];
        if ((d->buf = find_named(a, d->name, strlen(d->name))) < 0)
            return bad("--address %s: no buffer is named '%s'; give it with --buffer %s=FILE or --buffer "
                       "%s=size:BYTES", d->arg, d->name, d->name, d->name);
        for (uint32_t j = 0; j < k; j++)
            if (a->addrs[j].word == d->word || a->addrs[j].word == d->word + 1 || a->addrs[j].word + 1 == d->word)
                return bad("--address %s: its words overlap --address %s's", d->arg, a->addrs[j].arg);
    }
    for (uint32_t i = 0; i < a->buf_count; i++) {
        bool used = !a->bufs[i].named;
        for (uint32_t k = 0; k < a->buf_count && !used; k++)
            used = a->bufs[k].of == (int)i;
        for (uint32_t k = 0; k < a->addr_count && !used; k++)
            used = a->addrs[k].buf == (int)i;
        if (!used)
            return bad("--buffer %s: no --bind takes a slice of buffer '%s' (--bind B=%s[:OFFSET[:SIZE]]) and no "
                       "--address its address", a->bufs[i].arg, a->bufs[i].site, a->bufs[i].site);
    }
    for (uint32_t k = 0; k < out_count; k++) {
        char where[48];
        if (outs[k].name) {
            int i = find_named(a, outs[k].name, outs[k].name_len);
            if (i < 0)
                return bad("--out %s: no buffer is named '%.*s' (--buffer NAME=... names one)", outs[k].arg,
                           (int)outs[k].name_len, outs[k].name);
        }
        struct buf_arg *b = outs[k].name ? &a->bufs[find_named(a, outs[k].name, outs[k].name_len)]
                                         : find_buf(a, outs[k].at);
        cli_site_text(outs[k].at, where);
        bool image = false;
        for (uint32_t i = 0; i < a->images.count; i++)
            image |= cli_site_same(a->images.images[i].at, outs[k].at);
        if (!b && image)
            return bad("--out %s: binding %s is an --image; write it with --out-image %s=FILE", outs[k].arg, where,
                       where);
        if (!b)
            return bad("--out %s: binding %s has no --buffer; give it with --buffer %s=FILE or --buffer %s=size:BYTES",
                       outs[k].arg, where, where, where);
        b->out = outs[k].file;
        if (!strncmp(b->out, "png:", 4)) {
            b->png_out = true;
            if (!*(b->out += 4))
                return bad("--out %s: expected png:FILE", outs[k].arg);
        }
    }
    /* Standard output takes one output, and none beside --json. */
    const char *to_stdout = NULL;
    for (uint32_t i = 0; i < a->buf_count + a->images.out_count; i++) {
        const char *file = i < a->buf_count ? a->bufs[i].out : a->images.outs[i - a->buf_count].file;
        const char *flag = i < a->buf_count ? "--out" : "--out-image";
        char site_arg[64];
        const char *arg = i < a->buf_count ? a->bufs[i].site : a->images.outs[i - a->buf_count].arg;
        if (!file || strcmp(file, "-"))
            continue;
        if (i < a->buf_count) {
            snprintf(site_arg, sizeof site_arg, "%s=-", arg);
            arg = site_arg;
        }
        if (a->json)
            return bad("%s %s: standard output ('-') carries --json's object; write the output to a file (a file "
                       "named - is ./-)", flag, arg);
        if (to_stdout)
            return bad("%s %s: standard output ('-') takes one output, and %s writes there already", flag, arg,
                       to_stdout);
        to_stdout = flag;
    }
    char why[256];
    if (a->push_file && !cli_in_open(&a->push_in, a->push_file, why, sizeof why))
        return bad("--push-file %s: %s", a->push_file, why);
    a->source = cli_read_file(a->shader, SOURCE_MAX, &a->source_len, why, sizeof why);
    if (!a->source)
        return bad("%s: cannot read the shader: %s", a->shader, why);
    return 0;
}

static void run_args_finish(struct run_args *a)
{
    free(a->source);
    cli_in_close(&a->push_in);
    for (uint32_t i = 0; i < a->define_count; i++)
        free(a->define_text[i]);
    free(a->define_text);
    free(a->defines);
    free(a->preamble);
    for (uint32_t i = 0; i < a->buf_count; i++) {
        cli_in_close(&a->bufs[i].in);
        free(a->bufs[i].data);
    }
    cli_images_finish(&a->images);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The folder part of path ("." when it has none); malloc'd, NULL on exhaustion. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = 0;
    }
    return d;
}

/* Prints the program's compile log to stderr, newline-terminated. */
static void print_log(kiln_context ctx, kiln_program prog)
{
    size_t len = 0;
    if (kiln_program_log(ctx, prog, NULL, 0, &len) < 0 || !len)
        return;
    char *log = malloc(len + 1);
    if (!log)
        return;
    if (kiln_program_log(ctx, prog, log, len + 1, NULL) == KILN_OK)
        fprintf(stderr, "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
    free(log);
}

/* Writes a buffer's bytes, in the --fill pattern, chunk by chunk. */
static kiln_result fill_buffer(kiln_context ctx, const struct buf_arg *b, uint8_t *chunk)
{
    for (uint32_t i = 0; i < CHUNK; i += 4)
        memcpy(chunk + i, (const uint8_t[4]){(uint8_t)b->fill, (uint8_t)(b->fill >> 8), (uint8_t)(b->fill >> 16),
                                             (uint8_t)(b->fill >> 24)},
               4);
    for (uint64_t off = 0; off < b->size; off += CHUNK) {
        uint64_t n = b->size - off < CHUNK ? b->size - off : CHUNK;
        kiln_result r = kiln_buffer_upload(ctx, b->buf, off, chunk, n);
        if (r < 0)
            return r;
    }
    return KILN_OK;
}

/* Reads back a buffer whose --out is png: and writes it as an image. */
static int write_png_out(kiln_context ctx, const struct buf_arg *b)
{
    uint8_t *rgba = malloc(b->size);
    if (!rgba) {
        fprintf(stderr, "kiln run: --out %s=png:%s: out of host memory for %" PRIu64 " bytes\n",
                b->site, b->out, b->size);
        return 1;
    }
    kiln_result r = kiln_buffer_readback(ctx, b->buf, b->offset, rgba, b->size);
    if (r < 0) {
        free(rgba);
        char what[96];
        snprintf(what, sizeof what, "reading back %s %s", b->named ? "buffer" : "binding", b->site);
        return cli_fail(what, r);
    }
    char why[320];
    bool ok = cli_write_png(b->out, rgba, b->width, b->height, why, sizeof why);
    free(rgba);
    if (!ok) {
        fprintf(stderr, "kiln run: --out %s=png:%s: %s\n", b->site, b->out, why);
        cli_note_failure("--out %s=png:%s: %s", b->site, b->out, why);
        return 1;
    }
    return 0;
}

/* Reads a whole buffer into file b->out, through cli_out: a failure leaves
 * the file as it was. 0, or 1 after printing why. */
static int write_out(kiln_context ctx, const struct buf_arg *b, uint8_t *chunk)
{
    if (b->png_out)
        return write_png_out(ctx, b);
    struct cli_out o;
    if (!cli_out_open(&o, b->out)) {
        fprintf(stderr, "kiln run: --out %s=%s: %s\n", b->site, b->out, o.why);
        cli_note_failure("--out %s=%s: %s", b->site, b->out, o.why);
        return 1;
    }
    for (uint64_t off = 0; off < b->size; off += CHUNK) {
        uint64_t n = b->size - off < CHUNK ? b->size - off : CHUNK;
        kiln_result r = kiln_buffer_readback(ctx, b->buf, b->offset + off, chunk, n);
        if (r < 0) {
            cli_out_abort(&o);
            char what[96];
            snprintf(what, sizeof what, "reading back %s %s", b->named ? "buffer" : "binding", b->site);
            return cli_fail(what, r);
        }
        if (!cli_out_write(&o, chunk, n))
            break;
    }
    if (!cli_out_commit(&o)) {
        fprintf(stderr, "kiln run: --out %s=%s: %s%s\n", b->site, b->out, o.why,
                o.in_place ? "" : "; the file is as it was");
        cli_note_failure("--out %s=%s: %s", b->site, b->out, o.why);
        return 1;
    }
    return 0;
}

/* Gives every --out png: its image size: its own png: input's, else that
 * of the one png: input whose bytes match the buffer's. 0, or 2 after
 * naming the argument. */
static int png_out_sizes(struct run_args *a)
{
    for (uint32_t i = 0; i < a->buf_count; i++) {
        struct buf_arg *b = &a->bufs[i];
        if (!b->png_out || b->png_in)
            continue;
        const struct buf_arg *like = NULL;
        for (uint32_t k = 0; k < a->buf_count; k++) {
            const struct buf_arg *o = &a->bufs[k];
            if (!o->png_in || o->size != b->size)
                continue;
            if (like && (like->width != o->width || like->height != o->height))
                return bad("--out %s=png:%s: png: inputs of %" PRIu64 " bytes differ in shape, so the "
                           "image's size is not known", b->site, b->out, b->size);
            like = like ? like : o;
        }
        if (!like)
            return bad("--out %s=png:%s: the image's size is not known: binding %s holds %" PRIu64
                       " bytes, and no png: input holds as many", b->site, b->out, b->site, b->size);
        b->width = like->width;
        b->height = like->height;
    }
    return 0;
}

/* Reads every --buffer FILE, bounded by what a binding of the device can
 * use; size: buffers are checked against the same bound. 0, or 2 after
 * naming the argument. */
static int read_inputs(struct run_args *a, const kiln_caps *caps)
{
    for (uint32_t i = 0; i < a->buf_count; i++) {
        struct buf_arg *b = &a->bufs[i];
        /* A binding holds the device's max storage buffer range; a named
         * buffer, whose slices the bindings take, its largest buffer. */
        uint64_t limit = b->named ? caps->max_buffer_size : caps->max_storage_buffer_range;
        if (b->of >= 0)
            continue;   /* a slice: sized below */
        if (!b->file) {
            if (b->size > limit)
                return bad("--buffer %s: %" PRIu64 " bytes; %s of the device (%s) holds at most %" PRIu64
                           " bytes (its %s)", b->arg, b->size, b->named ? "a buffer" : "a binding",
                           caps->device_name, limit, b->named ? "largest buffer" : "max storage buffer range");
            continue;
        }
        bool stream = b->in.stream;
        uint64_t max = stream && STREAM_MAX < limit ? STREAM_MAX : limit;
        char why[256];
        size_t len = 0;
        b->data = cli_in_read(&b->in, max, &len, why, sizeof why);
        if (!b->data)
            return bad("--buffer %s: '%s' %s%s", b->arg, b->file, why,
                       stream ? " (what is not a regular file is read up to 256 MiB or the device's max storage"
                                " buffer range)"
                              : " (the device's max storage buffer range)");
        if (len == 0) {
            free(b->data);
            b->data = NULL;
            return bad("--buffer %s: '%s' is empty; a buffer holds at least 1 byte", b->arg, b->file);
        }
        b->size = len;
        if (b->png_in) {
            struct cli_image img;
            bool ok = cli_read_png((const uint8_t *)b->data, len, limit, &img, why, sizeof why);
            free(b->data);
            b->data = NULL;
            if (!ok)
                return bad("--buffer %s: '%s': %s", b->arg, b->file, why);
            b->data = (char *)img.rgba;
            b->size = (uint64_t)img.width * img.height * 4;
            b->width = img.width;
            b->height = img.height;
        }
    }
    for (uint32_t i = 0; i < a->buf_count; i++) {   /* each slice within its buffer */
        struct buf_arg *b = &a->bufs[i];
        if (b->of < 0)
            continue;
        const struct buf_arg *of = &a->bufs[b->of];
        if (b->offset >= of->size || (!b->to_end && b->size > of->size - b->offset))
            return bad("--bind %s: bytes %" PRIu64 "..%" PRIu64 " are past the end of buffer '%s' (%" PRIu64
                       " bytes)", b->arg, b->offset, b->to_end ? of->size : b->offset + b->size - 1, of->site,
                       of->size);
        if (b->to_end)
            b->size = of->size - b->offset;
    }
    return png_out_sizes(a);
}

static const char *access_name(uint32_t access)
{
    switch (access & (KILN_ACCESS_READ | KILN_ACCESS_WRITE)) {
    case KILN_ACCESS_READ: return "read-only";
    case KILN_ACCESS_WRITE: return "write-only";
    default: return "read-write";
    }
}

/* After a binding mismatch: what the shader declares and what was given. */
static void print_bindings(const struct run_args *a, const kiln_program_interface *iface)
{
    fprintf(stderr, "kiln run: %s declares:", a->shader);
    if (!iface->binding_count)
        fprintf(stderr, " no bindings");
    for (uint32_t i = 0; i < iface->binding_count; i++) {
        const kiln_binding_info *bi = &iface->bindings[i];
        char where[48];
        static const char *const kinds[] = {
            [KILN_BINDING_STORAGE_BUFFER] = "storage",
            [KILN_BINDING_UNIFORM_BUFFER] = "uniform",
            [KILN_BINDING_STORAGE_TEXEL_BUFFER] = "storage texel buffer",
            [KILN_BINDING_UNIFORM_TEXEL_BUFFER] = "uniform texel buffer",
            [KILN_BINDING_STORAGE_IMAGE] = "storage image",
            [KILN_BINDING_SAMPLED_IMAGE] = "sampled image",
            [KILN_BINDING_SAMPLER] = "sampler",
            [KILN_BINDING_COMBINED_IMAGE_SAMPLER] = "combined image sampler",
        };
        const char *kind = (size_t)bi->kind < sizeof kinds / sizeof kinds[0] && kinds[bi->kind] ? kinds[bi->kind]
                                                                                                : "binding";
        fprintf(stderr, "%s binding %s '%s' (%s", i ? ";" : "",
                cli_site_text((struct cli_site){bi->set, bi->binding, 0}, where), bi->name, kind);
        if (bi->format)
            fprintf(stderr, " %s", kiln_format_name(bi->format));
        if (bi->image_dims)
            fprintf(stderr, " %s", bi->image_cube ? "cube" : bi->image_dims == 3 ? "3D" : bi->image_dims == 1 ? "1D" : "2D");
        if (bi->image_arrayed)
            fprintf(stderr, " array");
        fprintf(stderr, " %s", access_name(bi->access));
        if (bi->count > 1)
            fprintf(stderr, ", an array of %" PRIu32 ": [0] to [%" PRIu32 "]", bi->count, bi->count - 1);
        if (bi->min_size)
            fprintf(stderr, ", at least %" PRIu64 " bytes", bi->min_size);
        fprintf(stderr, ")");
    }
    fprintf(stderr, "\nkiln run: given by --buffer:");
    if (!a->buf_count)
        fprintf(stderr, " none");
    for (uint32_t i = 0, shown = 0; i < a->buf_count; i++) {
        const struct buf_arg *b = &a->bufs[i];
        if (b->named)
            continue;
        fprintf(stderr, "%s %s (%" PRIu64 " bytes", shown++ ? "," : "", b->site, b->size);
        if (b->of >= 0)
            fprintf(stderr, " from byte %" PRIu64 " of buffer '%s'", b->offset, a->bufs[b->of].site);
        fprintf(stderr, ")");
    }
    for (uint32_t i = 0; i < a->images.count; i++) {
        const struct cli_image_arg *im = &a->images.images[i];
        fprintf(stderr, "%s %s (%" PRIu32 "x%" PRIu32, i ? ";" : "; by --image:", im->site, im->width, im->height);
        if (im->three)
            fprintf(stderr, "x%" PRIu32, im->depth);
        fprintf(stderr, " %s)", kiln_format_name(im->format) ? kiln_format_name(im->format) : "");
    }
    for (uint32_t i = 0; i < a->images.sampler_count; i++)
        fprintf(stderr, "%s %s", i ? "," : "; by --sampler:", a->images.samplers[i].site);
    fprintf(stderr, "\n");
}

/* Makes the shader a program with constants c[0..n) and waits for it:
 * the wait's result, or the create's (*made false) when none was made. */
static kiln_result make_program(kiln_context ctx, const struct run_args *a, const kiln_spec_constant *c, uint32_t n,
                                kiln_program *prog, bool *made)
{
    *made = false;
    char *folder = folder_of(a->shader);
    if (!folder) {
        fprintf(stderr, "kiln run: out of host memory\n");
        return KILN_ERR_NO_MEMORY;
    }
    const char *dirs[1] = {folder};
    kiln_program_desc pd = {
        .source = a->source,
        .source_len = a->source_len,
        .language = a->lang,
        .name = a->shader,
        .entry = a->entry,
        .defines = a->defines,
        .define_count = a->define_count,
        .preamble = a->preamble,
        .workgroup_size = {a->workgroup_size[0], a->workgroup_size[1], a->workgroup_size[2]},
        .constants = c,
        .constant_count = n,
    };
    if (kiln_program_desc_defaults(&pd).language != KILN_LANGUAGE_SPIRV) {   /* a module includes nothing */
        pd.include_dirs = dirs;
        pd.include_dir_count = 1;
    }
    kiln_result r = kiln_program_create(ctx, &pd, prog);
    free(folder);
    *made = r == KILN_OK;
    return r < 0 ? r : kiln_program_wait(ctx, *prog);
}

/* Compiles the shader; 0 with *prog ready, or 1 after printing the log (2:
 * a --spec its constants cannot take). With --spec, the values are read
 * without their types first (spec_args.c says why), then by the types the
 * interface gives: a program whose words differ is made again (sharing the
 * compile of the source). */
static int compile(kiln_context ctx, const struct run_args *a, kiln_program *prog)
{
    kiln_spec_constant guess[KILN_MAX_SPEC_CONSTANTS], typed[KILN_MAX_SPEC_CONSTANTS];
    bool guessed = a->spec.count && cli_spec_guess(&a->spec, guess), made = false;
    kiln_result r = KILN_ERR_INVALID;
    if (guessed) {
        r = make_program(ctx, a, guess, a->spec.count, prog, &made);
        if (r < 0 && made && r != KILN_ERR_COMPILE) {
            (void)kiln_program_destroy(ctx, *prog);   /* read the types from the shader without constants */
            guessed = made = false;
        }
    }
    if (!made)
        r = make_program(ctx, a, NULL, 0, prog, &made);
    if (!made)
        return cli_fail("creating the program", r);
    if (r == KILN_ERR_COMPILE) {
        print_log(ctx, *prog);
        fprintf(stderr, "kiln run: %s failed to compile\n", a->shader);
        cli_note_failure("%s failed to compile", a->shader);
        return 1;
    }
    if (r < 0)
        return cli_fail("compiling the shader", r);
    if (!a->quiet)
        print_log(ctx, *prog);   /* warnings */
    kiln_program_interface it;
    if ((r = kiln_program_interface_get(ctx, *prog, &it)) < 0)
        return cli_fail("reading the program's interface", r);
    if (a->spec.count) {
        char why[1024];
        if (!cli_spec_words(&a->spec, &it, typed, a->quiet, why, sizeof why)) {
            bool fixed = a->workgroup_size[0] || a->workgroup_size[1] || a->workgroup_size[2];
            return bad("%s%s", why, fixed && strstr(why, "declares no specialization constant")
                                        ? "; --workgroup-size fixed the constants that sized its workgroup" : "");
        }
        if (!guessed || memcmp(guess, typed, a->spec.count * sizeof typed[0])) {
            /* Let go first (its compile is kept for re-use, and an error
             * of the next call stays the last one). */
            (void)kiln_program_destroy(ctx, *prog);
            r = make_program(ctx, a, typed, a->spec.count, prog, &made);
            if (!made)
                return cli_fail("creating the program with its constants", r);
            if (r < 0)
                return cli_fail("making the program with its constants", r);
            if ((r = kiln_program_interface_get(ctx, *prog, &it)) < 0)
                return cli_fail("reading the program's interface", r);
        }
    }
    if (!a->quiet)
        cli_spec_notes(stderr, a->shader, &it);
    return 0;
}

/* Everything after argument parsing. Exit status as cmd_run's. */
static int run(struct run_args *a, struct run_summary *sum)
{
    kiln_context ctx;
    /* --timeout in whole milliseconds, at least 1, at most what the desc
     * holds (parse_args took only seconds above 0). */
    double tms = a->timeout_s * 1e3 + 0.5;
    uint32_t timeout_ms = a->timeout_s == 0 ? 0 : tms < 1 ? 1 : tms >= UINT32_MAX ? UINT32_MAX : (uint32_t)tms;
    kiln_result r =
        kiln_context_create(&(kiln_context_desc){.device_timeout_ms = timeout_ms, .trace_path = a->trace,
                                                 .remote = a->remote, .check = a->check, .robust = a->robust},
                            &ctx);
    if (r < 0)
        return cli_fail("creating a context", r);
    int rc = 1;
    uint8_t *chunk = NULL;
    kiln_caps caps;
    if ((r = kiln_context_caps(ctx, &caps)) < 0) {
        cli_fail("reading the device's capabilities", r);
        goto done;
    }
    for (int d = 0; d < 3; d++)
        if (a->groups[d] > caps.max_workgroup_count[d]) {
            rc = bad("--groups %s: %" PRIu32 " workgroups in %c, the device (%s) allows at most %" PRIu32,
                     a->groups_arg, a->groups[d], "xyz"[d], caps.device_name, caps.max_workgroup_count[d]);
            goto done;
        }
    if ((rc = read_inputs(a, &caps)) != 0)
        goto done;
    rc = 1;

    double t0 = now_ms();
    kiln_program prog;
    if ((rc = compile(ctx, a, &prog)) != 0)
        goto done;
    rc = 1;
    double compile_ms = now_ms() - t0;
    kiln_program_interface iface;
    if ((r = kiln_program_interface_get(ctx, prog, &iface)) < 0) {
        cli_fail("reading the program's interface", r);
        goto done;
    }

    chunk = malloc(CHUNK);
    if (!chunk) {
        fprintf(stderr, "kiln run: out of host memory\n");
        goto done;
    }
    kiln_binding bindings[KILN_MAX_DESCRIPTORS];
    uint32_t buffer_bindings = 0;
    for (uint32_t i = 0; i < a->buf_count; i++) {
        struct buf_arg *b = &a->bufs[i];
        if (b->of >= 0)
            continue;   /* a slice: bound below, once its buffer is made */
        /* Uniform where the binding (a named buffer: a binding of a slice
         * of it) is declared uniform; storage otherwise (also a storage or
         * uniform texel buffer); both where slices differ. */
        uint32_t usage = 0;
        for (uint32_t j = 0; j < a->buf_count; j++) {
            const struct buf_arg *at = &a->bufs[j];
            if (j == i ? b->named : at->of != (int)i)
                continue;
            uint32_t one = KILN_BUFFER_STORAGE;
            for (uint32_t k = 0; k < iface.binding_count; k++)
                if (iface.bindings[k].set == at->at.set && iface.bindings[k].binding == at->at.binding &&
                    iface.bindings[k].kind == KILN_BINDING_UNIFORM_BUFFER)
                    one = KILN_BUFFER_UNIFORM;
            usage |= one;
        }
        for (uint32_t k = 0; k < a->addr_count; k++)
            if (a->addrs[k].buf == (int)i)
                usage |= KILN_BUFFER_ADDRESS | (usage ? 0 : KILN_BUFFER_STORAGE);
        char what[64];
        snprintf(what, sizeof what, "--buffer %s", b->site);
        r = kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = b->size, .usage = usage, .label = what}, &b->buf);
        if (r < 0) {
            fprintf(stderr, "kiln run: --buffer %s: ", b->arg);
            cli_fail("creating the buffer", r);
            goto done;
        }
        r = b->data ? kiln_buffer_upload(ctx, b->buf, 0, b->data, b->size) : fill_buffer(ctx, b, chunk);
        if (r < 0) {
            fprintf(stderr, "kiln run: --buffer %s: ", b->arg);
            cli_fail("writing the buffer", r);
            goto done;
        }
        free(b->data);
        b->data = NULL;
    }
    for (uint32_t i = 0; i < a->buf_count; i++) {
        struct buf_arg *b = &a->bufs[i];
        if (b->of >= 0)
            b->buf = a->bufs[b->of].buf;
        if (!b->named)
            bindings[buffer_bindings++] = (kiln_binding){.set = b->at.set, .binding = b->at.binding,
                                                         .element = b->at.element, .buffer = b->buf,
                                                         .offset = b->offset, .size = b->of >= 0 ? b->size : 0,
                                                         .format = b->format};
    }

    char img_why[400];
    int img_rc = cli_images_make(ctx, &a->images, &iface, &caps, img_why, sizeof img_why);
    if (img_rc) {
        rc = img_rc == 2 ? bad("%s", img_why) : 1;
        goto done;
    }
    uint32_t binding_count = cli_images_bind(&a->images, bindings, buffer_bindings, KILN_MAX_DESCRIPTORS);

    kiln_scheme scheme;
    if ((r = kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = a->shader}, &scheme)) < 0) {
        cli_fail("creating the scheme", r);
        goto done;
    }
    kiln_node_desc nd = {
        .program = prog,
        .bindings = bindings,
        .binding_count = binding_count,
        .groups = {a->groups[0], a->groups[1], a->groups[2]},
        .label = "run",
    };
    uint32_t words[KILN_MAX_PARAM_WORDS];
    if (node_words(a, &iface, words, &nd.param_count)) {
        rc = 2;
        goto done;
    }
    nd.params = words;
    kiln_buffer reaches[KILN_MAX_REACHES];
    for (uint32_t k = 0; k < a->addr_count; k++) {
        const struct addr_arg *d = &a->addrs[k];
        uint64_t address;
        if (d->word + 1 >= nd.param_count) {
            rc = bad("--address %s: words %" PRIu32 " and %" PRIu32 " are past the node's %" PRIu32 " param words",
                     d->arg, d->word, d->word + 1, nd.param_count);
            goto done;
        }
        if ((r = kiln_buffer_address(ctx, a->bufs[d->buf].buf, &address)) < 0) {
            fprintf(stderr, "kiln run: --address %s: ", d->arg);
            cli_fail("reading the buffer's address", r);
            goto done;
        }
        words[d->word] = (uint32_t)address;
        words[d->word + 1] = (uint32_t)(address >> 32);
        reaches[k] = a->bufs[d->buf].buf;
    }
    nd.reaches = reaches;
    nd.reach_count = a->addr_count;
    kiln_node node;
    /* A remote context runs the add ahead: what only its server can refuse
     * comes at the next synchronization point, asked for here so that it
     * is named as the binding's. */
    if ((r = kiln_scheme_add_node(ctx, scheme, &nd, &node)) < 0 || (r = kiln_context_wait_idle(ctx)) < 0) {
        cli_fail("binding the shader's buffers", r);
        if (r == KILN_ERR_LAYOUT || r == KILN_ERR_INVALID)
            print_bindings(a, &iface);
        goto done;
    }

    /* One frame: a submit and its wait, timed; specialization events
     * printed as they happen. */
    double *ms = calloc(a->frames, sizeof *ms);
    struct cli_spec spec = {0};
    if (!ms) {
        fprintf(stderr, "kiln run: out of host memory for %" PRIu64 " frame times\n", a->frames);
        goto done;
    }
    t0 = now_ms();
    for (uint64_t f = 0; f < a->frames; f++) {
        double f0 = now_ms();
        kiln_ticket ticket;
        if ((r = kiln_scheme_submit(ctx, scheme, &ticket)) < 0 ||
            (r = kiln_ticket_wait(ctx, ticket, UINT64_MAX)) < 0) {
            char what[64];
            snprintf(what, sizeof what, "running frame %" PRIu64, f + 1);
            cli_fail(what, r);
            free(ms);
            goto done;
        }
        ms[f] = now_ms() - f0;
        if (!a->quiet)
            cli_spec_drain(ctx, scheme, "kiln run", f, false, &spec);
    }
    if ((r = kiln_context_wait_idle(ctx)) < 0) {
        cli_fail("waiting for the run", r);
        free(ms);
        goto done;
    }
    double run_ms = now_ms() - t0;

    rc = 0;
    for (uint32_t i = 0; i < a->buf_count && !rc; i++)
        if (a->bufs[i].out)
            rc = write_out(ctx, &a->bufs[i], chunk);
    if (!rc)
        rc = cli_images_write(ctx, &a->images);

    kiln_context_stats st = {0};
    if (kiln_context_stats_get(ctx, &st) == KILN_OK && st.check_findings) {
        fprintf(stderr, "kiln run: check mode found %" PRIu64 " access%s past a buffer's end (above)\n",
                st.check_findings, st.check_findings == 1 ? "" : "es");
        cli_note_failure("check mode found %" PRIu64 " access%s past a buffer's end", st.check_findings,
                         st.check_findings == 1 ? "" : "es");
        rc = 1;
    }
    uint64_t other = st.validation_errors - st.check_findings;   /* findings count as errors too */
    if (other) {
        fprintf(stderr, "kiln run: the Vulkan validation layer reported %" PRIu64 " error%s (above)\n", other,
                other == 1 ? "" : "s");
        cli_note_failure("the Vulkan validation layer reported %" PRIu64 " error%s", other, other == 1 ? "" : "s");
        rc = 1;
    }
    *sum = (struct run_summary){.compile_ms = compile_ms, .run_ms = run_ms, .median_ms = cli_median(ms, 0, a->frames),
                                .spec = spec, .validation_errors = st.validation_errors,
                                .validation_warnings = st.validation_warnings,
                                .workgroup_size = {iface.workgroup_size[0], iface.workgroup_size[1], iface.workgroup_size[2]}};
    snprintf(sum->device, sizeof sum->device, "%s", caps.device_name);
    if (!rc && !a->quiet)
        fprintf(stderr,
                "kiln: ran %s: %" PRIu64 " frame%s (median %.3f ms a frame: submit and wait), %" PRIu32 "x%" PRIu32
                "x%" PRIu32 " groups, %.1f ms (compile %.1f ms)\n",
                a->shader, a->frames, a->frames == 1 ? "" : "s", cli_median(ms, 0, a->frames), a->groups[0],
                a->groups[1], a->groups[2], run_ms, compile_ms);
    if (!rc && !a->quiet && a->frames > 1)
        cli_spec_summary(stderr, "specialization", &spec, ms, a->frames);
    free(ms);
done:
    free(chunk);
    kiln_context_destroy(ctx);
    return rc;
}

/* Exit status: 0 ran, 1 compile or run failure, 2 bad arguments. */
int cmd_run(int argc, char **argv)
{
    struct run_args a = {.push_in = {.fd = -1}};
    struct run_summary sum = {0};
    /* --json is seen before anything is printed to stdout; --help, which
     * prints there, wins over it. */
    bool json = false, help = false;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        json |= !strcmp(argv[i], "--json");
        help |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    }
    json &= !help;
    FILE *jf = json ? cli_json_stdout() : NULL;
    int rc = parse_args(argc, argv, &a);
    if (rc == 0)
        rc = run(&a, &sum);
    else if (rc < 0)
        rc = 0;
    if (jf && rc)
        cli_json_failure(jf, rc);
    else if (jf) {
        struct cli_json j;
        cli_json_init(&j, jf);
        cli_json_open(&j, NULL, '{');
        cli_json_bool(&j, "ok", true);
        cli_json_str(&j, "shader", a.shader);
        cli_json_str(&j, "device", sum.device);
        cli_json_uint(&j, "frames", a.frames);
        cli_json_double(&j, "median_ms", sum.median_ms);
        cli_json_double(&j, "run_ms", sum.run_ms);
        cli_json_double(&j, "compile_ms", sum.compile_ms);
        cli_json_open(&j, "groups", '[');
        for (int d = 0; d < 3; d++)
            cli_json_uint(&j, NULL, a.groups[d]);
        cli_json_close(&j, ']');
        cli_json_open(&j, "workgroup_size", '[');
        for (int d = 0; d < 3; d++)
            cli_json_uint(&j, NULL, sum.workgroup_size[d]);
        cli_json_close(&j, ']');
        cli_json_open(&j, "specialization", '{');
        cli_json_uint(&j, "warms", sum.spec.warms);
        cli_json_uint(&j, "promotions", sum.spec.promotions);
        cli_json_uint(&j, "demotions", sum.spec.demotions);
        cli_json_uint(&j, "failed", sum.spec.failed);
        cli_json_uint(&j, "pinned", sum.spec.pinned);
        cli_json_close(&j, '}');
        cli_json_uint(&j, "validation_errors", sum.validation_errors);
        cli_json_uint(&j, "validation_warnings", sum.validation_warnings);
        cli_json_close(&j, '}');
    }
    if (jf && jf != stdout)
        fclose(jf);
    run_args_finish(&a);
    return rc;
}
