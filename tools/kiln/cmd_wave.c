/* SPDX-License-Identifier: MIT */
/*
 * cmd_wave.c: `kiln wave`: guest AMD GCN code objects.
 *
 *   kiln wave info CODE.o [--disasm]
 *   kiln wave run CODE.o --kernel NAME --groups X[,Y,Z] [--block X[,Y,Z]]
 *                 --arg ... [--out N=FILE] [--level NAME]
 *                 [--observe FILE] [--observe-json FILE] [--max-instructions N]
 *                 [--max-work N] [--max-seconds S]
 *   kiln wave diff CODE.o --kernel NAME --levels A,B --groups X[,Y,Z] [--block ...]
 *                  --arg ... [--max-instructions N] [--max-work N] [--max-seconds S]
 *   kiln wave levels
 *   kiln wave compare A.obs B.obs
 *
 * `info` lists each kernel's descriptor, arguments and instruction counts
 * (by encoding family), and with --disasm every decoded instruction. `run`
 * runs one kernel through the reference interpreter: --arg values are
 * given in the kernel's explicit argument order (buf:FILE, buf:size:BYTES,
 * local:BYTES for a __local pointer, u32:N, i32:N, u64:N, i64:N, f32:X,
 * f64:X), hidden arguments are kiln's; --out N=FILE writes the buffer of
 * explicit argument N after the run; --observe writes the observation
 * (docs/wave.md's layout), --observe-json its JSON form. The --max-*
 * options set the run's three budgets. `levels` lists the level table;
 * `compare` compares two observations and names the first difference
 * (exit 0 the same, 1 different or unreadable). `diff` runs one kernel at
 * two levels (the same arguments as run) and, where they differ, bisects
 * to the first instruction after which they do (exit 0 the same, 1
 * different or a run failed).
 *
 * Everything here goes through libkiln-wave's public calls (kiln_wave.h).
 *
 * Exit status: 0 done, 1 the run or a file failed, 2 the command line was
 * refused (every refusal names the option and why).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kiln_wave.h"
#include "parse.h"

#define MAX_CODE_OBJECT (256u << 20)
#define MAX_BUFFER (1ull << 31)
#define MAX_OBSERVATION (4ull << 30)
#define MAX_ARGS 256
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- usage ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: kiln wave info CODE.o [--disasm]\n"
               "       kiln wave run CODE.o --kernel NAME --groups X[,Y,Z] [--block X[,Y,Z]]\n"
               "                     --arg VALUE ... [--out N=FILE] [--level NAME]\n"
               "                     [--observe FILE] [--observe-json FILE] [--max-instructions N]\n"
               "                     [--max-work N] [--max-seconds S]\n"
               "       kiln wave diff CODE.o --kernel NAME --levels A,B --groups X[,Y,Z] [--block X[,Y,Z]]\n"
               "                     --arg VALUE ... [--max-instructions N] [--max-work N] [--max-seconds S]\n"
               "       kiln wave levels\n"
               "       kiln wave compare A.obs B.obs\n"
               "\n"
               "Guest AMD GCN (gfx9) code objects, as clang -target amdgcn-amd-amdhsa -mcpu=gfx900\n"
               "writes them (relocatable -c objects or ld.lld -shared ones).\n"
               "\n"
               "info: each kernel's code, descriptor (registers, LDS, scratch, initial SGPRs and\n"
               "VGPRs), arguments (hidden ones marked) and instruction counts per encoding;\n"
               "--disasm prints every decoded instruction.\n"
               "\n"
               "run: runs kernel NAME at a level (default: the reference interpreter).\n"
               "  --groups X[,Y,Z]   workgroups per axis\n"
               "  --block X[,Y,Z]    work-items per workgroup (default: the kernel's\n"
               "                     reqd_work_group_size, else 64)\n"
               "  --arg VALUE        the next explicit argument, in the kernel's order:\n"
               "                     buf:FILE (a buffer holding FILE's bytes), buf:size:BYTES\n"
               "                     (zeroed), local:BYTES (a __local pointer's LDS), u32:N,\n"
               "                     i32:N, u64:N, i64:N, f32:X, f64:X\n"
               "  --out N=FILE       after the run, write the buffer of argument N (explicit\n"
               "                     arguments counted from 0) to FILE\n"
               "  --level NAME       the level to run at (kiln wave levels lists them); auto: the\n"
               "                     cheapest that runs the kernel here, said with the reasons\n"
               "                     the cheaper ones could not\n"
               "  --observe FILE     write the observation: every wave's registers, every lane,\n"
               "                     and each buffer's written ranges and content (docs/wave.md)\n"
               "  --observe-json FILE  the same as JSON\n"
               "  --max-instructions N  the run's budget of instructions (default %llu)\n"
               "  --max-work N       the run's budget of work (default %llu units): a unit\n"
               "                     per instruction and one per %u bytes of memory cleared\n"
               "                     or moved (each group's LDS, scratch and registers as it\n"
               "                     starts, the bytes of every access)\n"
               "  --max-seconds S    the run's budget of wall-clock time (default %g s)\n"
               "A run past a budget fails naming it, its value, the group, and the wave and\n"
               "its pc where one was running.\n"
               "\n"
               "levels: the level table: each level's name, whether it is built, what it is.\n"
               "\n"
               "compare: two observations (--observe files): the same, or the first\n"
               "difference (the wave, register and lane, or the buffer byte); exit 0 when\n"
               "the same, 1 when they differ or one cannot be read.\n"
               "\n"
               "diff: runs kernel NAME at levels A and B (--levels reference,wavefront; the\n"
               "arguments as run takes them) and compares the two observations; where they\n"
               "differ, runs both again with every wave stopped after N instructions, N\n"
               "bisected, and names the first instruction after which they differ: its\n"
               "offset and disassembly, the wave, which instruction of the wave's run it was\n"
               "and which execution of it (inside loops). Exit 0 when the same, 1 when they\n"
               "differ or a run failed.\n",
            (unsigned long long)KILN_WAVE_DEFAULT_MAX_INSTRUCTIONS, (unsigned long long)KILN_WAVE_DEFAULT_MAX_WORK,
            KILN_WAVE_WORK_UNIT_BYTES, KILN_WAVE_DEFAULT_MAX_SECONDS);
}

static int refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int refuse(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kiln wave: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 2;
}

static int load_file(const char *path, kiln_wave_code **code)
{
    char why[320];
    size_t len;
    char *bytes = cli_read_file(path, MAX_CODE_OBJECT, &len, why, sizeof why);
    if (!bytes) {
        fprintf(stderr, "kiln wave: %s: %s\n", path, why);
        return 1;
    }
    kiln_result r = kiln_wave_code_load(bytes, len, code);
    free(bytes);
    if (r != KILN_OK) {
        fprintf(stderr, "kiln wave: %s: %s\n", path, kiln_wave_last_error());
        return 1;
    }
    return 0;
}

/* ---- info ------------------------------------------------------------------------------- */

static int cmd_info_wave(int argc, char **argv)
{
    const char *path = NULL;
    bool disasm = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--disasm"))
            disasm = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-')
            return refuse("info: unknown option '%s'", argv[i]);
        else if (path)
            return refuse("info: one code object at a time ('%s' and '%s')", path, argv[i]);
        else
            path = argv[i];
    }
    if (!path)
        return refuse("info: no code object given");
    kiln_wave_code *code;
    if (load_file(path, &code))
        return 1;
    kiln_wave_code_info ci;
    if (kiln_wave_code_info_get(code, &ci) != KILN_OK) {
        fprintf(stderr, "kiln wave: %s: %s\n", path, kiln_wave_last_error());
        kiln_wave_code_destroy(code);
        return 1;
    }
    printf("%s: %s, code object v%u, %s, %u kernel%s, image %" PRIu64 " bytes\n", path, ci.target,
           ci.code_object_version, ci.relocatable ? "relocatable (relocations applied)" : "linked", ci.kernel_count,
           ci.kernel_count == 1 ? "" : "s", ci.image_size);
    int status = 0;
    for (uint32_t ki = 0; ki < ci.kernel_count; ki++) {
        kiln_wave_kernel_info k;
        if (kiln_wave_kernel_get(code, ki, &k) != KILN_OK) {
            fprintf(stderr, "kiln wave: %s: %s\n", path, kiln_wave_last_error());
            status = 1;
            break;
        }
        printf("\nkernel %s\n", k.name);
        printf("  code: image 0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes), descriptor at 0x%" PRIx64 "\n",
               k.code_addr, k.code_addr + k.code_size, k.code_size, k.descriptor_addr);
        printf("  registers: %u VGPRs, %u SGPRs allocated (metadata: %u VGPRs, %u SGPRs used)\n", k.vgprs, k.sgprs,
               k.md_vgprs, k.md_sgprs);
        printf("  LDS %u bytes, scratch %u bytes per work-item, kernarg segment %u bytes\n", k.lds_bytes,
               k.scratch_bytes, k.kernarg_size);
        if (k.reqd_size[0])
            printf("  workgroup: reqd_work_group_size %ux%ux%u\n", k.reqd_size[0], k.reqd_size[1], k.reqd_size[2]);
        else if (k.max_flat_size)
            printf("  workgroup: at most %u work-items\n", k.max_flat_size);
        char *setup = NULL, *text = NULL;
        if (kiln_wave_kernel_describe(code, ki, KILN_WAVE_DESCRIBE_SETUP, &setup) != KILN_OK) {
            fprintf(stderr, "kiln wave: %s: %s\n", path, kiln_wave_last_error());
            status = 1;
            break;
        }
        fputs(setup, stdout);
        kiln_wave_free(setup);
        printf("  arguments:\n");
        for (uint32_t a = 0; a < k.arg_count; a++) {
            kiln_wave_arg_info g;
            if (kiln_wave_arg_get(code, ki, a, &g) != KILN_OK)
                break;
            if (g.kind == KILN_WAVE_ARG_HIDDEN)
                printf("    (hidden) %-26s offset %u, %u bytes\n", g.value_kind, g.offset, g.size);
            else
                printf("    %u %-10s %-22s %-10s offset %u, %u bytes\n", a, g.name[0] ? g.name : "-", g.value_kind,
                       g.type_name[0] ? g.type_name : "-", g.offset, g.size);
        }
        uint32_t sections = KILN_WAVE_DESCRIBE_COUNTS | (disasm ? KILN_WAVE_DESCRIBE_DISASM : 0);
        kiln_result r = kiln_wave_kernel_describe(code, ki, sections, &text);
        if (text)
            fputs(text, stdout);
        else
            fprintf(stderr, "kiln wave: %s: %s\n", path, kiln_wave_last_error());
        status |= r != KILN_OK;
        kiln_wave_free(text);
    }
    kiln_wave_code_destroy(code);
    return status;
}

/* ---- run -------------------------------------------------------------------------------- */

static bool parse_dims(const char *s, uint32_t out[3], uint32_t max, char *why, size_t cap)
{
    out[0] = out[1] = out[2] = 1;
    char buf[96];
    if (strlen(s) >= sizeof buf) {
        snprintf(why, cap, "'%s' is too long", s);
        return false;
    }
    snprintf(buf, sizeof buf, "%s", s);
    int n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        uint64_t v;
        char pwhy[PARSE_WHY_LEN];
        if (n == 3) {
            snprintf(why, cap, "'%s' has more than 3 numbers", s);
            return false;
        }
        if (!parse_u64(tok, &v, pwhy) || v == 0 || v > max) {
            snprintf(why, cap, "'%s' is not a count from 1 to %u", tok, max);
            return false;
        }
        out[n++] = (uint32_t)v;
    }
    if (n == 0 || s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,")) {
        snprintf(why, cap, "'%s' is not X[,Y,Z]", s);
        return false;
    }
    return true;
}

/* A signed integer in [lo, hi]: decimal, or 0x hex (read as its bits). */
static bool parse_signed(const char *s, int64_t lo, int64_t hi, uint64_t bits_max, int64_t *out)
{
    if (!s[0])
        return false;
    if (!strncmp(s, "0x", 2)) {
        uint64_t v;
        char why[PARSE_WHY_LEN];
        if (!parse_u64(s, &v, why) || v > bits_max)
            return false;
        *out = (int64_t)v;
        return true;
    }
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

struct run_arg {
    kiln_wave_value v;
    const char *text;   /* the --arg as given; borrowed */
    bool owned;         /* v.data is malloc'd */
    bool is_float;      /* f32: or f64: */
};

static bool parse_arg(const char *s, struct run_arg *a, char *why, size_t cap)
{
    *a = (struct run_arg){.text = s};
    char pwhy[PARSE_WHY_LEN];
    if (!strncmp(s, "buf:size:", 9)) {
        uint64_t n;
        if (!parse_size(s + 9, &n, pwhy) || n > MAX_BUFFER) {
            snprintf(why, cap, "'%s': the size is not a byte count up to 2 GiB", s);
            return false;
        }
        a->v = (kiln_wave_value){.kind = KILN_WAVE_VALUE_BUFFER, .data = calloc(1, n ? n : 1), .size = n};
        a->owned = true;
        if (!a->v.data) {
            snprintf(why, cap, "'%s': out of memory", s);
            return false;
        }
        return true;
    }
    if (!strncmp(s, "buf:", 4)) {
        size_t len;
        char fwhy[320];
        char *data = cli_read_file(s + 4, MAX_BUFFER, &len, fwhy, sizeof fwhy);
        if (!data) {
            snprintf(why, cap, "'%s': %s", s, fwhy);
            return false;
        }
        a->v = (kiln_wave_value){.kind = KILN_WAVE_VALUE_BUFFER, .data = data, .size = len};
        a->owned = true;
        return true;
    }
    if (!strncmp(s, "local:", 6)) {
        uint64_t n;
        if (!parse_size(s + 6, &n, pwhy) || n > 65536) {
            snprintf(why, cap, "'%s': the size is not a byte count up to 65536", s);
            return false;
        }
        a->v = (kiln_wave_value){.kind = KILN_WAVE_VALUE_LOCAL, .size = n};
        return true;
    }
    const char *colon = strchr(s, ':');
    if (!colon) {
        snprintf(why, cap, "'%s' is not TYPE:VALUE (buf:FILE, buf:size:BYTES, local:BYTES, u32:N, i32:N, u64:N, "
                           "i64:N, f32:X, f64:X)",
                 s);
        return false;
    }
    const char *val = colon + 1;
    size_t tlen = (size_t)(colon - s);
    a->v.kind = KILN_WAVE_VALUE_BYTES;
    int64_t iv;
    uint64_t uv;
    if (tlen == 3 && !strncmp(s, "u32", 3) && parse_signed(val, 0, UINT32_MAX, UINT32_MAX, &iv)) {
        uint32_t x = (uint32_t)iv;
        memcpy(a->v.bytes, &x, 4), a->v.size = 4;
    } else if (tlen == 3 && !strncmp(s, "i32", 3) && parse_signed(val, INT32_MIN, INT32_MAX, UINT32_MAX, &iv)) {
        uint32_t x = (uint32_t)iv;
        memcpy(a->v.bytes, &x, 4), a->v.size = 4;
    } else if (tlen == 3 && !strncmp(s, "u64", 3) && parse_u64(val, &uv, pwhy)) {
        memcpy(a->v.bytes, &uv, 8), a->v.size = 8;
    } else if (tlen == 3 && !strncmp(s, "i64", 3) && parse_signed(val, INT64_MIN, INT64_MAX, UINT64_MAX, &iv)) {
        memcpy(a->v.bytes, &iv, 8), a->v.size = 8;
    } else if (tlen == 3 && (!strncmp(s, "f32", 3) || !strncmp(s, "f64", 3))) {
        errno = 0;
        char *end;
        double d = strtod(val, &end);
        if (!val[0] || *end || errno == ERANGE || (s[1] == '3' && isfinite(d) && fabs(d) > 3.4028234663852886e38)) {
            snprintf(why, cap, "'%s': '%s' is not a %s number", s, val, s[1] == '3' ? "32-bit float" : "64-bit float");
            return false;
        }
        a->is_float = true;
        if (s[1] == '3') {
            float f = (float)d;
            memcpy(a->v.bytes, &f, 4), a->v.size = 4;
        } else {
            memcpy(a->v.bytes, &d, 8), a->v.size = 8;
        }
    } else {
        snprintf(why, cap, "'%s': '%.*s' takes %s, and '%s' is not one", s, (int)tlen, s,
                 !strncmp(s, "u32", 3) ? "0..4294967295 or 0x hex" : !strncmp(s, "i32", 3) ? "-2147483648..2147483647"
                 : !strncmp(s, "u64", 3) ? "an unsigned 64-bit count"
                 : !strncmp(s, "i64", 3) ? "a signed 64-bit integer"
                                         : "no value: the types are buf, local, u32, i32, u64, i64, f32, f64",
                 val);
        return false;
    }
    return true;
}

static bool level_usable(const char *name, char *why, size_t cap);

struct out_spec {
    uint32_t arg;
    const char *file;
};

static int print_diff(const char *kname, const char *a, const char *b, const kiln_wave_diff_report *rep);

/* run, and diff (argv[0] says which: the same arguments, --levels A,B in
 * place of --level, no outputs). */
static int cmd_run_wave(int argc, char **argv)
{
    const bool diff = !strcmp(argv[0], "diff");
    const char *verb = diff ? "diff" : "run";
    const char *level_b = NULL;
    char levels_buf[128] = "";
    const char *path = NULL, *kname = NULL, *groups_s = NULL, *block_s = NULL, *observe = NULL, *observe_json = NULL;
    uint64_t max_instructions = 0, max_work = 0;
    double max_seconds = 0;
    struct run_arg *args = calloc((size_t)argc, sizeof *args);
    struct out_spec *outs = calloc((size_t)argc, sizeof *outs);
    uint32_t nargs = 0, nouts = 0;
    int status = 2;
    kiln_wave_code *code = NULL;
    const char *level = NULL;
    char why[600];
    if (!args || !outs) {
        fprintf(stderr, "kiln wave: out of memory\n");
        status = 1;
        goto done;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            status = 0;
            goto done;
        }
        if (a[0] != '-') {
            if (path) {
                refuse("%s: one code object at a time ('%s' and '%s')", verb, path, a);
                goto done;
            }
            path = a;
            continue;
        }
        static const char *const valued[] = {"--kernel", "--groups", "--block", "--arg", "--out", "--level",
                                             "--observe", "--observe-json", "--max-instructions", "--max-work",
                                             "--max-seconds", "--levels"};
        bool known = false;
        for (size_t k = 0; k < ARRAY_LEN(valued); k++)
            known |= !strcmp(a, valued[k]);
        bool diff_only = !strcmp(a, "--levels");
        bool run_only = !strcmp(a, "--level") || !strcmp(a, "--out") || !strcmp(a, "--observe") ||
                        !strcmp(a, "--observe-json");
        if (!known || (diff && run_only) || (!diff && diff_only)) {
            refuse("%s: unknown option '%s'%s", verb, a,
                   diff && !strcmp(a, "--level") ? " (diff takes --levels A,B)" : "");
            goto done;
        }
        if (!has_value) {
            refuse("%s: %s needs a value", verb, a);
            goto done;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--levels")) {
            const char *comma = strchr(v, ',');
            if (!comma || comma == v || !comma[1] || strchr(comma + 1, ',') || strlen(v) >= sizeof levels_buf) {
                refuse("diff: --levels '%s' is not two level names, A,B", v);
                goto done;
            }
            snprintf(levels_buf, sizeof levels_buf, "%s", v);
            levels_buf[comma - v] = 0;
            level = levels_buf;
            level_b = levels_buf + (comma - v) + 1;
            char lwhy[300];
            for (int k = 0; k < 2; k++)
                if (!level_usable(k ? level_b : level, lwhy, sizeof lwhy)) {
                    refuse("diff: --levels %s: %s: %s", v, k ? level_b : level, lwhy);
                    goto done;
                }
            continue;
        }
        if (!strcmp(a, "--kernel"))
            kname = v;
        else if (!strcmp(a, "--groups"))
            groups_s = v;
        else if (!strcmp(a, "--block"))
            block_s = v;
        else if (!strcmp(a, "--observe"))
            observe = v;
        else if (!strcmp(a, "--observe-json"))
            observe_json = v;
        else if (!strcmp(a, "--level")) {
            char lwhy[300];
            if (!level_usable(v, lwhy, sizeof lwhy)) {
                refuse("run: --level %s: %s", v, lwhy);
                goto done;
            }
            level = v;
        } else if (!strcmp(a, "--max-instructions")) {
            char pwhy[PARSE_WHY_LEN];
            if (!parse_u64(v, &max_instructions, pwhy) || max_instructions == 0) {
                refuse("%s: --max-instructions '%s' is not a count above 0", verb, v);
                goto done;
            }
        } else if (!strcmp(a, "--max-work")) {
            char pwhy[PARSE_WHY_LEN];
            if (!parse_u64(v, &max_work, pwhy) || max_work == 0) {
                refuse("%s: --max-work '%s' is not a count above 0", verb, v);
                goto done;
            }
        } else if (!strcmp(a, "--max-seconds")) {
            char *end;
            errno = 0;
            max_seconds = strtod(v, &end);
            if (!v[0] || *end || errno || !isfinite(max_seconds) || !(max_seconds > 0)) {
                refuse("%s: --max-seconds '%s' is not a time above 0 (seconds, as 60 or 0.5)", verb, v);
                goto done;
            }
        } else if (!strcmp(a, "--arg")) {
            if (!parse_arg(v, &args[nargs], why, sizeof why)) {
                if (args[nargs].owned)
                    free(args[nargs].v.data);
                refuse("%s: --arg %s", verb, why);
                goto done;
            }
            nargs++;
        } else { /* --out N=FILE */
            const char *eq = strchr(v, '=');
            char num[32];
            uint64_t n;
            char pwhy[PARSE_WHY_LEN];
            if (!eq || eq == v || (size_t)(eq - v) >= sizeof num || !eq[1]) {
                refuse("run: --out '%s' is not N=FILE", v);
                goto done;
            }
            snprintf(num, sizeof num, "%.*s", (int)(eq - v), v);
            if (!parse_u64(num, &n, pwhy) || n >= MAX_ARGS) {
                refuse("run: --out '%s': '%s' is not an argument number", v, num);
                goto done;
            }
            outs[nouts++] = (struct out_spec){.arg = (uint32_t)n, .file = eq + 1};
        }
    }
    if (!path) {
        refuse("%s: no code object given", verb);
        goto done;
    }
    if (!kname) {
        refuse("%s: --kernel NAME is needed", verb);
        goto done;
    }
    if (!groups_s) {
        refuse("%s: --groups X[,Y,Z] is needed", verb);
        goto done;
    }
    if (diff && !level_b) {
        refuse("diff: --levels A,B is needed (kiln wave levels lists them)");
        goto done;
    }
    uint32_t groups[3], block[3] = {64, 1, 1};
    if (!parse_dims(groups_s, groups, UINT32_MAX, why, sizeof why)) {
        refuse("%s: --groups %s", verb, why);
        goto done;
    }
    if (block_s && !parse_dims(block_s, block, KILN_WAVE_MAX_GROUP, why, sizeof why)) {
        refuse("%s: --block %s", verb, why);
        goto done;
    }
    if (load_file(path, &code)) {
        status = 1;
        goto done;
    }
    uint32_t ki;
    kiln_wave_kernel_info k;
    if (kiln_wave_kernel_find(code, kname, &ki) != KILN_OK || kiln_wave_kernel_get(code, ki, &k) != KILN_OK) {
        fprintf(stderr, "kiln wave: %s: %s: %s\n", verb, path, kiln_wave_last_error());
        goto done;
    }
    if (nargs != k.explicit_count) {
        fprintf(stderr, "kiln wave: %s: kernel '%s' takes %u arguments, %u --arg given:\n", verb, kname, k.explicit_count,
                nargs);
        for (uint32_t a = 0; a < k.explicit_count; a++) {
            kiln_wave_arg_info g;
            if (kiln_wave_arg_get(code, ki, a, &g) == KILN_OK)
                fprintf(stderr, "  %u %s: %s %s\n", a, g.name[0] ? g.name : "-", g.value_kind, g.type_name);
        }
        goto done;
    }
    for (uint32_t a = 0; a < nargs; a++) {
        kiln_wave_arg_info g;
        if (kiln_wave_arg_get(code, ki, a, &g) != KILN_OK) {
            fprintf(stderr, "kiln wave: run: %s\n", kiln_wave_last_error());
            goto done;
        }
        const kiln_wave_value *v = &args[a].v;
        /* a float argument takes f32/f64, an integer one the integer forms
         * (the type's name as the metadata spells it: "float", "double") */
        bool float_arg = !strcmp(g.type_name, "float") || !strcmp(g.type_name, "double") ||
                         !strcmp(g.type_name, "half");
        bool ok = (g.kind == KILN_WAVE_ARG_GLOBAL_BUFFER && v->kind == KILN_WAVE_VALUE_BUFFER) ||
                  (g.kind == KILN_WAVE_ARG_LOCAL_POINTER && v->kind == KILN_WAVE_VALUE_LOCAL) ||
                  (g.kind == KILN_WAVE_ARG_BY_VALUE && v->kind == KILN_WAVE_VALUE_BYTES && v->size == g.size &&
                   (!g.type_name[0] || float_arg == args[a].is_float));
        if (!ok) {
            fprintf(stderr, "kiln wave: run: --arg %s does not fit argument %u ('%s', %s %s, %u bytes)\n",
                    args[a].text, a, g.name, g.value_kind, g.type_name, g.size);
            goto done;
        }
    }
    for (uint32_t o = 0; o < nouts; o++)
        if (outs[o].arg >= nargs || args[outs[o].arg].v.kind != KILN_WAVE_VALUE_BUFFER) {
            fprintf(stderr, "kiln wave: run: --out %u=%s: argument %u is not a buffer\n", outs[o].arg, outs[o].file,
                    outs[o].arg);
            goto done;
        }
    kiln_wave_value *values = calloc(nargs ? nargs : 1, sizeof *values);
    if (!values) {
        status = 1;
        goto done;
    }
    for (uint32_t a = 0; a < nargs; a++)
        values[a] = args[a].v;
    kiln_wave_run_desc d = {.level = level, .kernel = ki, .groups = {groups[0], groups[1], groups[2]},
                            .block = {block[0], block[1], block[2]}, .args = values, .arg_count = nargs,
                            .max_instructions = max_instructions, .max_work = max_work,
                            .max_seconds = max_seconds, .observe = observe || observe_json};
    if (!block_s)
        memset(d.block, 0, sizeof d.block);   /* the kernel's reqd_work_group_size, else 64 */
    if (diff) {
        kiln_wave_diff_report rep;
        if (kiln_wave_diff(code, &d, level_b, &rep) != KILN_OK) {
            fprintf(stderr, "kiln wave: diff: %s\n", kiln_wave_last_error());
            status = 1;
        } else {
            status = print_diff(kname, level, level_b, &rep);
        }
        free(values);
        goto done;
    }
    kiln_wave_result *res = NULL;
    kiln_result r = kiln_wave_run(code, &d, &res);
    status = 0;
    kiln_wave_run_stats st = {0};
    if (r != KILN_OK) {
        fprintf(stderr, "kiln wave: run: %s\n", kiln_wave_last_error());
        status = 1;
    } else if (kiln_wave_run_stats_get(res, &st) == KILN_OK) {
        if (st.choice)
            fprintf(stderr, "kiln wave: %s\n", st.choice);
        fprintf(stderr, "kiln wave: %s: %u waves, %" PRIu64 " instructions (%s)\n", kname, st.waves, st.instructions,
                st.level);
        for (uint32_t o = 0; o < nouts && status == 0; o++) {
            const kiln_wave_value *v = &values[outs[o].arg];
            char fwhy[320];
            if (!cli_write_file(outs[o].file, v->data, (size_t)v->size, fwhy, sizeof fwhy)) {
                fprintf(stderr, "kiln wave: %s: %s\n", outs[o].file, fwhy);
                status = 1;
            }
        }
        for (int form = 0; form < 2 && status == 0; form++) {
            const char *file = form ? observe_json : observe;
            if (!file)
                continue;
            void *b = NULL;
            size_t len = 0;
            kiln_result e = kiln_wave_observation(res, form ? KILN_WAVE_FORM_JSON : KILN_WAVE_FORM_BINARY, &b, &len);
            char fwhy[320];
            if (e != KILN_OK) {
                fprintf(stderr, "kiln wave: %s: %s\n", file, kiln_wave_last_error());
                status = 1;
            } else if (!cli_write_file(file, b, len, fwhy, sizeof fwhy)) {
                fprintf(stderr, "kiln wave: %s: %s\n", file, fwhy);
                status = 1;
            }
            kiln_wave_free(b);
        }
    }
    kiln_wave_result_destroy(res);
    free(values);
done:
    for (uint32_t a = 0; args && a < nargs; a++)
        if (args[a].owned)
            free(args[a].v.data);
    free(args);
    free(outs);
    kiln_wave_code_destroy(code);
    return status;
}

/* The report for people, on stdout: 0 the same, 1 different. */
static int print_diff(const char *kname, const char *a, const char *b, const kiln_wave_diff_report *rep)
{
    if (rep->same) {
        printf("the same: kernel %s at %s and at %s (%u runs)\n", kname, a, b, rep->runs);
        return 0;
    }
    printf("different: kernel %s at %s and at %s: %s\n", kname, a, b, rep->first);
    if (rep->bisected) {
        printf("first after: offset 0x%" PRIx64 ": %s\n", rep->offset, rep->instruction);
        printf("  in group %u,%u,%u wave %u, its instruction %" PRIu64 " run, execution %" PRIu64 " of it\n",
               rep->group[0], rep->group[1], rep->group[2], rep->wave, rep->step, rep->execution);
        printf("  there: %s\n", rep->at_step);
    } else if (rep->at_step[0]) {
        printf("%s\n", rep->at_step);
    } else {
        printf("not bisected: runs stopped at every step agree (the difference needs the whole run)\n");
    }
    printf("(%u runs)\n", rep->runs);
    return 1;
}

/* ---- levels and compare ------------------------------------------------------------------ */

/* A level of the table that is built; why says otherwise which of the two
 * it is not. */
static bool level_usable(const char *name, char *why, size_t cap)
{
    if (!strcmp(name, "auto"))
        return true;   /* the cheapest level that runs the kernel, chosen at the run */
    char names[200] = "";
    for (uint32_t i = 0; i < kiln_wave_level_count(); i++) {
        kiln_wave_level_info l;
        if (kiln_wave_level_get(i, &l) != KILN_OK)
            continue;
        if (!strcmp(l.name, name)) {
            if (!l.built)
                snprintf(why, cap, "the %s level is not built yet (kiln wave levels lists what is)", name);
            return l.built;
        }
        size_t at = strlen(names);
        snprintf(names + at, sizeof names - at, "%s%s", at ? ", " : "", l.name);
    }
    snprintf(why, cap, "no level has that name (the levels: %s; or auto)", names);
    return false;
}

static int cmd_levels_wave(int argc, char **argv)
{
    (void)argv;
    if (argc > 1)
        return refuse("levels: takes no arguments ('%s')", argv[1]);
    for (uint32_t i = 0; i < kiln_wave_level_count(); i++) {
        kiln_wave_level_info l;
        if (kiln_wave_level_get(i, &l) == KILN_OK)
            printf("%-10s %-9s %s\n", l.name, l.built ? "built" : "not built", l.summary);
    }
    printf("%-10s %-9s %s\n", "auto", "", "the cheapest level that runs the kernel on this device (a GPU: lane, "
           "subgroup, wavefront, reference; a CPU device: wavefront first); the run says which it took and why the "
           "cheaper ones could not");
    return 0;
}

static int cmd_compare_wave(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 3)
        return refuse("compare: takes two observation files (kiln wave run --observe FILE)");
    char *obs[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    int status = 1;
    for (int i = 0; i < 2; i++) {
        char why[320];
        obs[i] = cli_read_file(argv[1 + i], MAX_OBSERVATION, &len[i], why, sizeof why);
        if (!obs[i]) {
            fprintf(stderr, "kiln wave: %s: %s\n", argv[1 + i], why);
            goto done;
        }
    }
    bool same;
    char why[512];
    if (kiln_wave_compare(obs[0], len[0], obs[1], len[1], &same, why, sizeof why) != KILN_OK) {
        fprintf(stderr, "kiln wave: compare: %s\n", kiln_wave_last_error());
        goto done;
    }
    if (same)
        printf("the same%s%s\n", why[0] ? ": " : "", why);
    else
        printf("different: %s\n", why);
    status = same ? 0 : 1;
done:
    free(obs[0]);
    free(obs[1]);
    return status;
}

int cmd_wave(int argc, char **argv);
int cmd_wave(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "info"))
        return cmd_info_wave(argc - 1, argv + 1);
    if (!strcmp(argv[1], "run") || !strcmp(argv[1], "diff"))
        return cmd_run_wave(argc - 1, argv + 1);
    if (!strcmp(argv[1], "levels"))
        return cmd_levels_wave(argc - 1, argv + 1);
    if (!strcmp(argv[1], "compare"))
        return cmd_compare_wave(argc - 1, argv + 1);
    fprintf(stderr, "kiln wave: unknown subcommand '%s' (info, run, diff, levels, compare)\n", argv[1]);
    usage(stderr);
    return 2;
}
