/* SPDX-License-Identifier: MIT */
/*
 * cmd_wave.c: `kiln wave`: guest AMD GCN code objects.
 *
 *   kiln wave info CODE.o [--disasm]
 *   kiln wave run CODE.o --kernel NAME --groups X[,Y,Z] [--block X[,Y,Z]]
 *                 --arg ... [--out N=FILE] [--level reference]
 *                 [--observe FILE] [--observe-json FILE] [--max-instructions N]
 *                 [--max-work N] [--max-seconds S]
 *
 * `info` lists each kernel's descriptor, arguments and instruction counts
 * (by encoding family), and with --disasm every decoded instruction. `run`
 * runs one kernel through the reference interpreter: --arg values are
 * given in the kernel's explicit argument order (buf:FILE, buf:size:BYTES,
 * local:BYTES for a __local pointer, u32:N, i32:N, u64:N, i64:N, f32:X,
 * f64:X), hidden arguments are kiln's; --out N=FILE writes the buffer of
 * explicit argument N after the run; --observe writes the observation
 * (src/wave/observe.h's layout), --observe-json its JSON form. The
 * --max-* options set the run's three budgets (src/wave/interp.h).
 *
 * The tool is built against the shipped library, which exports kiln_*
 * only, so the wave sources it needs are compiled into it
 * (tools/kiln/wave.cmake), with base/bytes.c; the few base helpers they
 * call (errors, allocation, logging, the clock) are defined below for
 * them, and their errors are read with err_last(), this copy's.
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

#include "base/base.h"
#include "cli.h"
#include "wave/decode.h"
#include "wave/interp.h"
#include "wave/loader.h"
#include "wave/observe.h"

#define MAX_CODE_OBJECT (256u << 20)
#define MAX_BUFFER (1ull << 31)

/* ---- base's helpers, for the wave sources compiled into the tool ---------------------- */

static _Thread_local char wave_error[1024];

kiln_result err_raise(kiln_result code, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wave_error, sizeof wave_error, fmt, ap);
    va_end(ap);
    (void)file, (void)line;
    return code;
}
const char *err_last(void) { return wave_error; }
void err_clear(void) { wave_error[0] = 0; }
void *mem_alloc(size_t n) { return malloc(n ? n : 1); }
void *mem_calloc(size_t count, size_t size) { return calloc(count ? count : 1, size ? size : 1); }
void *mem_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
uint64_t time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
void log_msg(enum log_level level, const char *fmt, ...)
{
    if (level > LOG_WARN)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("kiln: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- usage ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    const struct wave_run_desc dflt = wave_run_defaults(&(struct wave_run_desc){0});
    fprintf(f, "usage: kiln wave info CODE.o [--disasm]\n"
               "       kiln wave run CODE.o --kernel NAME --groups X[,Y,Z] [--block X[,Y,Z]]\n"
               "                     --arg VALUE ... [--out N=FILE] [--level reference]\n"
               "                     [--observe FILE] [--observe-json FILE] [--max-instructions N]\n"
               "                     [--max-work N] [--max-seconds S]\n"
               "\n"
               "Guest AMD GCN (gfx9) code objects, as clang -target amdgcn-amd-amdhsa -mcpu=gfx900\n"
               "writes them (relocatable -c objects or ld.lld -shared ones).\n"
               "\n"
               "info: each kernel's code, descriptor (registers, LDS, scratch, initial SGPRs and\n"
               "VGPRs), arguments (hidden ones marked) and instruction counts per encoding;\n"
               "--disasm prints every decoded instruction.\n"
               "\n"
               "run: runs kernel NAME on the reference interpreter.\n"
               "  --groups X[,Y,Z]   workgroups per axis\n"
               "  --block X[,Y,Z]    work-items per workgroup (default: the kernel's\n"
               "                     reqd_work_group_size, else 64)\n"
               "  --arg VALUE        the next explicit argument, in the kernel's order:\n"
               "                     buf:FILE (a buffer holding FILE's bytes), buf:size:BYTES\n"
               "                     (zeroed), local:BYTES (a __local pointer's LDS), u32:N,\n"
               "                     i32:N, u64:N, i64:N, f32:X, f64:X\n"
               "  --out N=FILE       after the run, write the buffer of argument N (explicit\n"
               "                     arguments counted from 0) to FILE\n"
               "  --level reference  the reference interpreter (the only level built)\n"
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
               "its pc where one was running.\n",
            (unsigned long long)dflt.max_instructions, (unsigned long long)dflt.max_work, WAVE_WORK_UNIT_BYTES,
            dflt.max_seconds);
}

static int refuse(const char *fmt, ...) KILN_PRINTF(1, 2);
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

static int load_file(const char *path, struct wave_code *code)
{
    char why[320];
    size_t len;
    char *bytes = cli_read_file(path, MAX_CODE_OBJECT, &len, why, sizeof why);
    if (!bytes) {
        fprintf(stderr, "kiln wave: %s: %s\n", path, why);
        return 1;
    }
    kiln_result r = wave_code_load(bytes, len, code);
    free(bytes);
    if (r != KILN_OK) {
        fprintf(stderr, "kiln wave: %s: %s\n", path, err_last());
        return 1;
    }
    return 0;
}

/* ---- info ------------------------------------------------------------------------------- */

static void print_setup(const struct wave_kernel *k)
{
    const struct wave_setup *s = &k->setup;
    unsigned r = 0;
    printf("  initial SGPRs:");
#define USER(flag, n, what)                                                                        \
    if (s->flag) {                                                                                 \
        if ((n) == 1)                                                                              \
            printf(" s%u %s;", r, what);                                                           \
        else                                                                                       \
            printf(" s[%u:%u] %s;", r, r + (n) - 1, what);                                         \
        r += (n);                                                                                  \
    }
    USER(private_segment_buffer, 4, "private segment buffer")
    USER(dispatch_ptr, 2, "dispatch packet")
    USER(queue_ptr, 2, "queue")
    USER(kernarg_segment_ptr, 2, "kernarg segment")
    USER(dispatch_id, 2, "dispatch id")
    USER(flat_scratch_init, 2, "flat scratch init")
    USER(private_segment_size, 1, "private segment size")
#undef USER
    r = s->user_sgpr_count;
    static const char axes[] = "xyz";
    for (int a = 0; a < 3; a++)
        if (s->workgroup_id[a])
            printf(" s%u workgroup id %c;", r++, axes[a]);
    if (s->workgroup_info)
        printf(" s%u workgroup info;", r++);
    if (s->private_segment_wave_offset)
        printf(" s%u scratch wave offset;", r++);
    printf(" (%u user SGPRs)\n", s->user_sgpr_count);
    printf("  initial VGPRs: work-item id x in v0%s%s\n", s->workitem_id_dims >= 2 ? ", y in v1" : "",
           s->workitem_id_dims >= 3 ? ", z in v2" : "");
}

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
    struct wave_code code;
    if (load_file(path, &code))
        return 1;
    printf("%s: %s, code object v%u, %s, %u kernel%s, image %" PRIu64 " bytes\n", path, code.target,
           code.code_object_version, code.relocatable ? "relocatable (relocations applied)" : "linked",
           code.kernel_count, code.kernel_count == 1 ? "" : "s", code.image_size);
    int status = 0;
    const uint32_t *words = NULL;
    size_t nwords = (size_t)(code.image_size / 4);
    uint32_t *w = malloc(nwords * 4 + 4);
    if (!w) {
        wave_code_finish(&code);
        fprintf(stderr, "kiln wave: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < nwords; i++)
        w[i] = (uint32_t)code.image[4 * i] | (uint32_t)code.image[4 * i + 1] << 8 |
               (uint32_t)code.image[4 * i + 2] << 16 | (uint32_t)code.image[4 * i + 3] << 24;
    words = w;
    for (uint32_t ki = 0; ki < code.kernel_count; ki++) {
        const struct wave_kernel *k = &code.kernels[ki];
        printf("\nkernel %s\n", k->name);
        printf("  code: image 0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes), descriptor at 0x%" PRIx64 "\n",
               k->code_addr, k->code_addr + k->code_size, k->code_size, k->kd_addr);
        printf("  registers: %u VGPRs, %u SGPRs allocated (metadata: %u VGPRs, %u SGPRs used)\n", k->vgprs, k->sgprs,
               k->md_vgpr_count, k->md_sgpr_count);
        printf("  LDS %u bytes, scratch %u bytes per work-item, kernarg segment %u bytes\n", k->group_segment_size,
               k->private_segment_size, k->kernarg_size);
        if (k->reqd_size[0])
            printf("  workgroup: reqd_work_group_size %ux%ux%u\n", k->reqd_size[0], k->reqd_size[1], k->reqd_size[2]);
        else if (k->max_flat_size)
            printf("  workgroup: at most %u work-items\n", k->max_flat_size);
        print_setup(k);
        printf("  arguments:\n");
        for (uint32_t a = 0; a < k->arg_count; a++) {
            const struct wave_arg *g = &k->args[a];
            if (wave_arg_hidden(g->kind))
                printf("    (hidden) %-26s offset %u, %u bytes\n", wave_arg_kind_name(g->kind), g->offset, g->size);
            else
                printf("    %u %-10s %-22s %-10s offset %u, %u bytes\n", a, g->name[0] ? g->name : "-",
                       wave_arg_kind_name(g->kind), g->type_name[0] ? g->type_name : "-", g->offset, g->size);
        }
        /* decode the code linearly */
        uint32_t counts[WAVE_FAM_COUNT + 3] = {0};
        uint32_t total = 0;
        uint64_t end = k->code_addr + k->code_size;
        if (disasm)
            printf("  code:\n");
        for (uint64_t pc = k->code_addr; pc < end;) {
            struct wave_instr in;
            int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &in);
            if (n <= 0) {
                printf("  cannot decode at 0x%" PRIx64 ": %s\n", pc, err_last());
                status = 1;
                break;
            }
            const struct wave_op_info *info = wave_op_info(in.op);
            unsigned slot = info ? info->family : WAVE_FAM_COUNT;
            if (in.enc == WAVE_ENC_SDWA)
                slot = WAVE_FAM_COUNT + 1;
            else if (in.enc == WAVE_ENC_DPP)
                slot = WAVE_FAM_COUNT + 2;
            counts[slot]++;
            total++;
            if (disasm) {
                char text[200];
                wave_print(&in, text, sizeof text);
                printf("    %06" PRIx64 ":", pc);
                for (int d = 0; d < 3; d++)
                    printf(d < n ? " %08x" : "         ", d < n ? in.raw[d] : 0);
                printf("  %s\n", text);
            }
            pc += 4ull * (unsigned)n;
        }
        printf("  instructions: %u (", total);
        bool first = true;
        for (unsigned f = 0; f < WAVE_FAM_COUNT + 3; f++)
            if (counts[f]) {
                printf("%s%s %u", first ? "" : ", ",
                       f < WAVE_FAM_COUNT ? wave_family_name(f) : f == WAVE_FAM_COUNT + 1 ? "SDWA" : "DPP", counts[f]);
                first = false;
            }
        printf(")\n");
    }
    free(w);
    wave_code_finish(&code);
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
    struct wave_value v;
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
        a->v = (struct wave_value){.kind = WAVE_VALUE_BUFFER, .data = calloc(1, n ? n : 1), .size = n};
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
        a->v = (struct wave_value){.kind = WAVE_VALUE_BUFFER, .data = data, .size = len};
        a->owned = true;
        return true;
    }
    if (!strncmp(s, "local:", 6)) {
        uint64_t n;
        if (!parse_size(s + 6, &n, pwhy) || n > 65536) {
            snprintf(why, cap, "'%s': the size is not a byte count up to 65536", s);
            return false;
        }
        a->v = (struct wave_value){.kind = WAVE_VALUE_LOCAL, .size = n};
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
    a->v.kind = WAVE_VALUE_BYTES;
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

struct out_spec {
    uint32_t arg;
    const char *file;
};

static int cmd_run_wave(int argc, char **argv)
{
    const char *path = NULL, *kname = NULL, *groups_s = NULL, *block_s = NULL, *observe = NULL, *observe_json = NULL;
    uint64_t max_instructions = 0, max_work = 0;
    double max_seconds = 0;
    struct run_arg *args = calloc((size_t)argc, sizeof *args);
    struct out_spec *outs = calloc((size_t)argc, sizeof *outs);
    uint32_t nargs = 0, nouts = 0;
    int status = 2;
    struct wave_code code = {0};
    bool loaded = false;
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
                refuse("run: one code object at a time ('%s' and '%s')", path, a);
                goto done;
            }
            path = a;
            continue;
        }
        static const char *const valued[] = {"--kernel", "--groups", "--block", "--arg", "--out", "--level",
                                             "--observe", "--observe-json", "--max-instructions", "--max-work",
                                             "--max-seconds"};
        bool known = false;
        for (size_t k = 0; k < KILN_ARRAY_LEN(valued); k++)
            known |= !strcmp(a, valued[k]);
        if (!known) {
            refuse("run: unknown option '%s'", a);
            goto done;
        }
        if (!has_value) {
            refuse("run: %s needs a value", a);
            goto done;
        }
        const char *v = argv[++i];
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
            if (strcmp(v, "reference")) {
                refuse("run: --level %s: part 1 builds the reference interpreter only ('reference'); the lane, "
                       "wavefront and subgroup levels are not built",
                       v);
                goto done;
            }
        } else if (!strcmp(a, "--max-instructions")) {
            char pwhy[PARSE_WHY_LEN];
            if (!parse_u64(v, &max_instructions, pwhy) || max_instructions == 0) {
                refuse("run: --max-instructions '%s' is not a count above 0", v);
                goto done;
            }
        } else if (!strcmp(a, "--max-work")) {
            char pwhy[PARSE_WHY_LEN];
            if (!parse_u64(v, &max_work, pwhy) || max_work == 0) {
                refuse("run: --max-work '%s' is not a count above 0", v);
                goto done;
            }
        } else if (!strcmp(a, "--max-seconds")) {
            char *end;
            errno = 0;
            max_seconds = strtod(v, &end);
            if (!v[0] || *end || errno || !isfinite(max_seconds) || !(max_seconds > 0)) {
                refuse("run: --max-seconds '%s' is not a time above 0 (seconds, as 60 or 0.5)", v);
                goto done;
            }
        } else if (!strcmp(a, "--arg")) {
            if (!parse_arg(v, &args[nargs], why, sizeof why)) {
                if (args[nargs].owned)
                    free(args[nargs].v.data);
                refuse("run: --arg %s", why);
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
            if (!parse_u64(num, &n, pwhy) || n >= WAVE_MAX_ARGS) {
                refuse("run: --out '%s': '%s' is not an argument number", v, num);
                goto done;
            }
            outs[nouts++] = (struct out_spec){.arg = (uint32_t)n, .file = eq + 1};
        }
    }
    if (!path) {
        refuse("run: no code object given");
        goto done;
    }
    if (!kname) {
        refuse("run: --kernel NAME is needed");
        goto done;
    }
    if (!groups_s) {
        refuse("run: --groups X[,Y,Z] is needed");
        goto done;
    }
    uint32_t groups[3], block[3] = {64, 1, 1};
    if (!parse_dims(groups_s, groups, UINT32_MAX, why, sizeof why)) {
        refuse("run: --groups %s", why);
        goto done;
    }
    if (block_s && !parse_dims(block_s, block, WAVE_MAX_GROUP, why, sizeof why)) {
        refuse("run: --block %s", why);
        goto done;
    }
    if (load_file(path, &code)) {
        status = 1;
        goto done;
    }
    loaded = true;
    const struct wave_kernel *k = wave_code_kernel(&code, kname);
    if (!k) {
        fprintf(stderr, "kiln wave: run: %s has no kernel '%s'; it has:", path, kname);
        for (uint32_t i = 0; i < code.kernel_count; i++)
            fprintf(stderr, " %s", code.kernels[i].name);
        fprintf(stderr, "\n");
        goto done;
    }
    if (!block_s && k->reqd_size[0])
        memcpy(block, k->reqd_size, sizeof block);
    if (nargs != k->explicit_count) {
        fprintf(stderr, "kiln wave: run: kernel '%s' takes %u arguments, %u --arg given:\n", kname, k->explicit_count,
                nargs);
        for (uint32_t a = 0; a < k->explicit_count; a++)
            fprintf(stderr, "  %u %s: %s %s\n", a, k->args[a].name[0] ? k->args[a].name : "-",
                    wave_arg_kind_name(k->args[a].kind), k->args[a].type_name);
        goto done;
    }
    for (uint32_t a = 0; a < nargs; a++) {
        const struct wave_arg *g = &k->args[a];
        const struct wave_value *v = &args[a].v;
        /* a float argument takes f32/f64, an integer one the integer forms
         * (the type's name as the metadata spells it: "float", "double") */
        bool float_arg = !strcmp(g->type_name, "float") || !strcmp(g->type_name, "double") ||
                         !strcmp(g->type_name, "half");
        bool ok = (g->kind == WAVE_ARG_GLOBAL_BUFFER && v->kind == WAVE_VALUE_BUFFER) ||
                  (g->kind == WAVE_ARG_DYNAMIC_SHARED_POINTER && v->kind == WAVE_VALUE_LOCAL) ||
                  (g->kind == WAVE_ARG_BY_VALUE && v->kind == WAVE_VALUE_BYTES && v->size == g->size &&
                   (!g->type_name[0] || float_arg == args[a].is_float));
        if (!ok) {
            fprintf(stderr, "kiln wave: run: --arg %s does not fit argument %u ('%s', %s %s, %u bytes)\n",
                    args[a].text, a, g->name, wave_arg_kind_name(g->kind), g->type_name, g->size);
            goto done;
        }
    }
    for (uint32_t o = 0; o < nouts; o++)
        if (outs[o].arg >= nargs || args[outs[o].arg].v.kind != WAVE_VALUE_BUFFER) {
            fprintf(stderr, "kiln wave: run: --out %u=%s: argument %u is not a buffer\n", outs[o].arg, outs[o].file,
                    outs[o].arg);
            goto done;
        }
    struct wave_value *values = calloc(nargs ? nargs : 1, sizeof *values);
    if (!values) {
        status = 1;
        goto done;
    }
    for (uint32_t a = 0; a < nargs; a++)
        values[a] = args[a].v;
    struct wave_run_desc d = {.code = &code, .kernel = k, .groups = {groups[0], groups[1], groups[2]},
                              .block = {block[0], block[1], block[2]}, .args = values, .arg_count = nargs,
                              .max_instructions = max_instructions, .max_work = max_work,
                              .max_seconds = max_seconds, .observe = observe || observe_json};
    struct wave_result res;
    kiln_result r = wave_run(&d, &res);
    status = 0;
    if (r != KILN_OK) {
        fprintf(stderr, "kiln wave: run: %s\n", err_last());
        status = 1;
    } else {
        fprintf(stderr, "kiln wave: %s: %u waves, %" PRIu64 " instructions (reference)\n", kname, res.waves,
                res.instructions);
        for (uint32_t o = 0; o < nouts && status == 0; o++) {
            const struct wave_value *v = &values[outs[o].arg];
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
            struct bytes b = {0};
            kiln_result e = form ? wave_observe_json(&d, &res, &b) : wave_observe_encode(&d, &res, &b);
            char fwhy[320];
            if (e != KILN_OK) {
                fprintf(stderr, "kiln wave: %s: %s\n", file, err_last());
                status = 1;
            } else if (!cli_write_file(file, b.p, b.len, fwhy, sizeof fwhy)) {
                fprintf(stderr, "kiln wave: %s: %s\n", file, fwhy);
                status = 1;
            }
            free(b.p);
        }
    }
    wave_result_finish(&res);
    free(values);
done:
    for (uint32_t a = 0; args && a < nargs; a++)
        if (args[a].owned)
            free(args[a].v.data);
    free(args);
    free(outs);
    if (loaded)
        wave_code_finish(&code);
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
    if (!strcmp(argv[1], "run"))
        return cmd_run_wave(argc - 1, argv + 1);
    fprintf(stderr, "kiln wave: unknown subcommand '%s' (info, run)\n", argv[1]);
    usage(stderr);
    return 2;
}
