/* SPDX-License-Identifier: MIT */
/*
 * test_cli.c: tests of the kiln command-line tool as a user runs it.
 *
 * Each test writes GLSL shaders and raw input files into a fresh temporary
 * folder, runs the kiln binary (argv[1], from CMake) as a child process with
 * its stdout and stderr sent to files, and reads the output files back.
 * Results are compared with values computed here on the CPU: a prefix sum,
 * a histogram made with atomics, a matrix product, accumulation over frames,
 * float words; never just "it exited 0". Error tests check the exit status
 * (1: shader or run failed, 2: bad arguments) and that the message names
 * what was wrong.
 *
 * Every run inherits CTest's KILN_VALIDATION=1, and every run's stderr is
 * searched for validation errors, which fail the test that ran it. The info
 * test checks that validation really is on. Further arguments after the
 * binary name run only the tests so named. The temporary folder is removed
 * when everything passed and kept (its path printed) otherwise.
 */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <math.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <shaderc/shaderc.h>

#include "test.h"

extern char **environ;

static const char *kiln_bin;
static char tmp_dir[256];
static const char *kiln_stdin;   /* the next KILN's standard input (a path); NULL: the test's own */

/* ---- files --------------------------------------------------------------------------- */

/* A path in the test folder. The result is one of a small ring of static
 * buffers: valid until 16 more calls of P (copy it to keep it longer). */
static const char *P(const char *name)
{
    static char ring[16][512];
    static unsigned next;
    char *p = ring[next++ % 16];
    snprintf(p, sizeof ring[0], "%s/%s", tmp_dir, name);
    return p;
}

static void write_file(const char *name, const void *data, size_t len)
{
    FILE *f = fopen(P(name), "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
        fprintf(stderr, "test_cli: cannot write %s\n", P(name));
        exit(1);
    }
}

static void write_text(const char *name, const char *text) { write_file(name, text, strlen(text)); }

/* The whole file, NUL-terminated, malloc'd; NULL if it cannot be read. */
static char *read_path(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    if (buf && n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n > 0 ? n : 0] = 0;
        if (len)
            *len = (size_t)(n > 0 ? n : 0);
    }
    return buf;
}

/* Reads an output file of exactly `want` bytes into a malloc'd buffer;
 * NULL (and a failure) otherwise. */
#define READ_OUT(name, want) read_out_(__FILE__, __LINE__, (name), (want))
static void *read_out_(const char *file, int line, const char *name, size_t want)
{
    size_t len = 0;
    char *buf = read_path(P(name), &len);
    if (!buf || len != want) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: output %s: %s%zu bytes, expected %zu\n", file, line, test_name_, name,
                buf ? "" : "missing; ", len, want);
        free(buf);
        return NULL;
    }
    return buf;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* ---- running kiln ------------------------------------------------------------------------ */

struct run {
    int status;     /* exit status, or -1 when it died of a signal or did not start */
    char *out;      /* its stdout */
    char *err;      /* its stderr */
    char cmd[1024]; /* the command line, for failure messages */
};

static void run_free(struct run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Runs `kiln ARGS...` (argv NULL-terminated) with env entries "K=V" added
 * (NULL-terminated; may be NULL) over the inherited environment. Fails the
 * running test when its stderr shows a Vulkan validation error. */
#define KILN(r, env, ...) kiln_run_(__FILE__, __LINE__, (r), (env), (const char *const[]){__VA_ARGS__, NULL})
static void kiln_run_(const char *file, int line, struct run *r, const char *const *env, const char *const *args)
{
    memset(r, 0, sizeof *r);
    r->status = -1;
    const char *argv[64];
    int argc = 0;
    argv[argc++] = kiln_bin;
    size_t used = (size_t)snprintf(r->cmd, sizeof r->cmd, "kiln");
    for (int i = 0; args[i] && argc < 63; i++) {
        argv[argc++] = args[i];
        if (used < sizeof r->cmd)
            used += (size_t)snprintf(r->cmd + used, sizeof r->cmd - used, " %s", args[i]);
    }
    argv[argc] = NULL;

    const char *envp[256];
    int envc = 0;
    for (int i = 0; env && env[i] && envc < 128; i++)
        envp[envc++] = env[i];
    for (char **e = environ; *e && envc < 255; e++) {
        bool overridden = false;
        for (int i = 0; env && env[i]; i++) {
            size_t n = strcspn(env[i], "=") + 1;
            overridden |= !strncmp(*e, env[i], n);
        }
        if (!overridden)
            envp[envc++] = *e;
    }
    envp[envc] = NULL;

    char out_path[512], err_path[512];
    snprintf(out_path, sizeof out_path, "%s/stdout.txt", tmp_dir);
    snprintf(err_path, sizeof err_path, "%s/stderr.txt", tmp_dir);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (kiln_stdin)
        posix_spawn_file_actions_addopen(&fa, 0, kiln_stdin, O_RDONLY, 0);
    kiln_stdin = NULL;
    posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    int e = posix_spawn(&pid, kiln_bin, &fa, NULL, (char *const *)argv, (char *const *)envp);
    posix_spawn_file_actions_destroy(&fa);
    if (e) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: cannot start %s: %s\n", file, line, test_name_, kiln_bin, strerror(e));
        return;
    }
    int ws;
    while (waitpid(pid, &ws, 0) < 0)
        ;
    r->out = read_path(out_path, NULL);
    r->err = read_path(err_path, NULL);
    if (!r->out)
        r->out = calloc(1, 1);
    if (!r->err)
        r->err = calloc(1, 1);
    if (WIFEXITED(ws)) {
        r->status = WEXITSTATUS(ws);
    } else {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: `%s` died of signal %d; stderr:\n%s\n", file, line, test_name_, r->cmd,
                WIFSIGNALED(ws) ? WTERMSIG(ws) : 0, r->err);
    }
    if (strstr(r->err, "error: validation") || strstr(r->err, "validation layer reported")) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: `%s` reported Vulkan validation errors:\n%s\n", file, line, test_name_, r->cmd,
                r->err);
    }
}

/* KILN with standard input read from the file `in` (a path). */
#define KILN_IN(r, env, in, ...) (kiln_stdin = (in), KILN(r, env, __VA_ARGS__))

/* The run exited with `want`; otherwise a failure showing its stderr. */
#define CHECK_STATUS(r, want)                                                                      \
    do {                                                                                           \
        if ((r).status != (want)) {                                                                \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: `%s` exited %d, expected %d; stderr:\n%s\n", __FILE__, __LINE__, \
                    test_name_, (r).cmd, (r).status, (want), (r).err);                             \
        }                                                                                          \
    } while (0)

/* The run's text (err or out) contains needle. */
#define CHECK_HAS(r, stream, needle)                                                               \
    do {                                                                                           \
        if (!strstr((r).stream, (needle))) {                                                       \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: `%s`: %s lacks '%s'; it was:\n%s\n", __FILE__, __LINE__,  \
                    test_name_, (r).cmd, #stream, (needle), (r).stream);                           \
        }                                                                                          \
    } while (0)

/* ---- data ------------------------------------------------------------------------------ */

static uint32_t rng_state = 0x9E3779B9u;

static uint32_t rnd(void)
{
    uint32_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return rng_state = x;
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- computing things ------------------------------------------------------------------- */

/* A single-workgroup inclusive scan: 256 threads, 4 elements each, a
 * Hillis-Steele scan of the per-thread sums in shared memory. n (param 0)
 * may be less than 1024; dst past n is left alone. */
static const char prefix_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(binding = 0) readonly buffer In { uint src[]; };\n"
    "layout(binding = 1) writeonly buffer Out { uint dst[]; };\n"
    "shared uint partial[256];\n"
    "void main() {\n"
    "    uint n = kiln_param(0);\n"
    "    uint t = gl_LocalInvocationID.x;\n"
    "    uint v[4];\n"
    "    uint run = 0u;\n"
    "    for (uint k = 0u; k < 4u; k++) {\n"
    "        uint i = t * 4u + k;\n"
    "        run += i < n ? src[i] : 0u;\n"
    "        v[k] = run;\n"
    "    }\n"
    "    partial[t] = run;\n"
    "    barrier();\n"
    "    for (uint off = 1u; off < 256u; off <<= 1) {\n"
    "        uint add = t >= off ? partial[t - off] : 0u;\n"
    "        barrier();\n"
    "        partial[t] += add;\n"
    "        barrier();\n"
    "    }\n"
    "    uint before = t > 0u ? partial[t - 1u] : 0u;\n"
    "    for (uint k = 0u; k < 4u; k++) {\n"
    "        uint i = t * 4u + k;\n"
    "        if (i < n) dst[i] = v[k] + before;\n"
    "    }\n"
    "}\n";

TEST(run_prefix_sum)
{
    enum { N = 1000, CAP = 1024 };
    uint32_t in[N], want[N];
    uint32_t acc = 0;
    for (int i = 0; i < N; i++) {
        in[i] = rnd();   /* full 32-bit words: the sums wrap, on both sides */
        acc += in[i];
        want[i] = acc;
    }
    write_text("prefix.comp", prefix_src);
    write_file("prefix_in.bin", in, sizeof in);
    struct run r;
    char nparam[32], outbuf[64];
    snprintf(nparam, sizeof nparam, "0=%d", N);
    snprintf(outbuf, sizeof outbuf, "1=size:%d:fill:0xdeadbeef", CAP * 4);
    char in_arg[600], out_arg[600];
    snprintf(in_arg, sizeof in_arg, "0=%s", P("prefix_in.bin"));
    snprintf(out_arg, sizeof out_arg, "1=%s", P("prefix_out.bin"));
    KILN(&r, NULL, "run", P("prefix.comp"), "--param", nparam, "--buffer", in_arg, "--buffer", outbuf, "--out",
         out_arg);
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "kiln: ran ");
    CHECK_HAS(r, err, "1 frame (median ");
    CHECK_HAS(r, err, "a frame: submit and wait), 1x1x1 groups");
    uint32_t *got = READ_OUT("prefix_out.bin", CAP * 4);
    if (got) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != want[i];
        for (int i = N; i < CAP; i++)
            bad += got[i] != 0xdeadbeefu;   /* the fill, untouched past n */
        CHECK_EQ(bad, 0);
        if (bad)
            fprintf(stderr, "  e.g. [0] %u want %u, [%d] %u want %u\n", got[0], want[0], N - 1, got[N - 1],
                    want[N - 1]);
    }
    free(got);
    run_free(&r);
}

/* 64 KiB of bytes into 256 bins: per-workgroup bins in shared memory with
 * atomicAdd, then one atomicAdd per bin into the global histogram. */
static const char histogram_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(binding = 0) readonly buffer Bytes { uint words[]; };\n"
    "layout(binding = 1) buffer Bins { uint bins[256]; };\n"
    "shared uint local_bins[256];\n"
    "void main() {\n"
    "    uint t = gl_LocalInvocationID.x;\n"
    "    local_bins[t] = 0u;\n"
    "    barrier();\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < words.length()) {\n"
    "        uint w = words[i];\n"
    "        for (uint k = 0u; k < 4u; k++)\n"
    "            atomicAdd(local_bins[(w >> (8u * k)) & 255u], 1u);\n"
    "    }\n"
    "    barrier();\n"
    "    if (local_bins[t] != 0u)\n"
    "        atomicAdd(bins[t], local_bins[t]);\n"
    "}\n";

TEST(run_histogram)
{
    enum { BYTES = 65536 };
    uint8_t *data = malloc(BYTES);
    uint32_t want[256] = {0};
    REQUIRE(data);
    for (int i = 0; i < BYTES; i++) {
        /* skewed, so that a bin mix-up shows: small values are likelier */
        uint32_t a = rnd() & 255, b = rnd() & 255;
        data[i] = (uint8_t)(a < b ? a : b);
        want[data[i]]++;
    }
    write_text("histogram.comp", histogram_src);
    write_file("bytes.bin", data, BYTES);
    free(data);
    char in_arg[600], out_arg[600];
    snprintf(in_arg, sizeof in_arg, "0=%s", P("bytes.bin"));
    snprintf(out_arg, sizeof out_arg, "1=%s", P("bins.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("histogram.comp"), "--groups", "64", "--buffer", in_arg, "--buffer", "1=size:1024",
         "--out", out_arg);
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("bins.bin", 1024);
    if (got) {
        uint32_t total = 0;
        int bad = 0;
        for (int i = 0; i < 256; i++) {
            total += got[i];
            bad += got[i] != want[i];
        }
        CHECK_EQ(total, BYTES);
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);

    /* Bins that start filled: the counts land on top of the fill. */
    KILN(&r, NULL, "run", P("histogram.comp"), "--groups=64", "--buffer", in_arg, "--buffer=1=size:1024:fill:1000",
         "--out", out_arg, "--quiet");
    CHECK_STATUS(r, 0);
    CHECK_EQ(strlen(r.err), 0);   /* --quiet */
    got = READ_OUT("bins.bin", 1024);
    if (got) {
        int bad = 0;
        for (int i = 0; i < 256; i++)
            bad += got[i] != want[i] + 1000;
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);
}

/* C = alpha * A * B with row-major A (M x K) and B (K x N); M, N, K and
 * alpha (a float word) are params. One invocation per element of C. */
static const char matmul_src[] =
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 8) in;\n"
    "layout(binding = 0) readonly buffer A { float a[]; };\n"
    "layout(binding = 1) readonly buffer B { float b[]; };\n"
    "layout(binding = 2) writeonly buffer C { float c[]; };\n"
    "void main() {\n"
    "    uint m = kiln_param(0), n = kiln_param(1), k = kiln_param(2);\n"
    "    float alpha = kiln_paramf(3);\n"
    "    uint col = gl_GlobalInvocationID.x, row = gl_GlobalInvocationID.y;\n"
    "    if (row >= m || col >= n) return;\n"
    "    float sum = 0.0;\n"
    "    for (uint i = 0u; i < k; i++)\n"
    "        sum += a[row * k + i] * b[i * n + col];\n"
    "    c[row * n + col] = alpha * sum;\n"
    "}\n";

TEST(run_matrix_product)
{
    enum { M = 64, K = 48, N = 32 };
    static float a[M * K], b[K * N], want[M * N], bound[M * N];
    const float alpha = 0.5f;
    for (int i = 0; i < M * K; i++)
        a[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    for (int i = 0; i < K * N; i++)
        b[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double s = 0, abs_s = 0;
            for (int i = 0; i < K; i++) {
                s += (double)a[r * K + i] * b[i * N + c];
                abs_s += fabs((double)a[r * K + i] * b[i * N + c]);
            }
            want[r * N + c] = (float)(alpha * s);
            bound[r * N + c] = (float)(alpha * abs_s);
        }
    write_text("matmul.comp", matmul_src);
    write_file("a.bin", a, sizeof a);
    write_file("b.bin", b, sizeof b);
    char a_arg[600], b_arg[600], c_arg[600], p0[16], p1[16], p2[16];
    snprintf(a_arg, sizeof a_arg, "0=%s", P("a.bin"));
    snprintf(b_arg, sizeof b_arg, "1=%s", P("b.bin"));
    snprintf(c_arg, sizeof c_arg, "2=%s", P("c.bin"));
    snprintf(p0, sizeof p0, "0=%d", M);
    snprintf(p1, sizeof p1, "1=%d", N);
    snprintf(p2, sizeof p2, "2=%d", K);
    char groups[32], csize[32];
    snprintf(groups, sizeof groups, "%d,%d", N / 8, M / 8);
    snprintf(csize, sizeof csize, "2=size:%d", M * N * 4);
    struct run r;
    KILN(&r, NULL, "run", P("matmul.comp"), "--groups", groups, "--param", p0, "--param", p1, "--param", p2,
         "--param", "3=0.5f", "--buffer", a_arg, "--buffer", b_arg, "--buffer", csize, "--out", c_arg);
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "4x8x1 groups");
    float *got = READ_OUT("c.bin", M * N * 4);
    if (got) {
        int bad = 0;
        for (int i = 0; i < M * N; i++) {
            /* float sums in another order: relative to the sum of |terms| */
            float tol = 1e-5f * bound[i] + 1e-6f;
            if (!(fabsf(got[i] - want[i]) <= tol)) {
                if (!bad)
                    fprintf(stderr, "  c[%d] = %g, expected %g\n", i, got[i], want[i]);
                bad++;
            }
        }
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);
}

/* Each frame reads what the previous one wrote: d = 2d + p0 is not
 * commutative across frames, so lost or reordered frames show. */
static const char frames_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) buffer Counts { uint count[]; };\n"
    "layout(binding = 1) buffer Doubling { uint d[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < count.length()) count[i] += 1u;\n"
    "    if (i < d.length()) d[i] = 2u * d[i] + kiln_param(0);\n"
    "}\n";

/* --timeout ends a run whose dispatch outlives it with KILN_ERR_DEVICE_LOST
 * naming what ran, exit 1, at once; on a device fast enough to finish first
 * the run succeeds. Bad values are refused as arguments. */
TEST(run_timeout_ends_a_runaway_run)
{
    write_text("slow.comp", test_slow_src);
    /* A run that times out exits while its dispatch still runs, the device
     * abandoned to it on purpose (the log says so): the driver's objects
     * are then left allocated, which a leak checker in a sanitizer build
     * would report. They are suppressed for this run alone (with the
     * validation layer's, as tests/lsan.supp does); kiln's stay checked. */
    write_text("lost.supp", "leak:libvulkan_lvp.so\nleak:libVkLayer_khronos_validation.so\n");
    char lsan[600];
    snprintf(lsan, sizeof lsan, "LSAN_OPTIONS=suppressions=%s:print_suppressions=0", P("lost.supp"));
    const char *const env[] = {lsan, NULL};
    struct run r;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    KILN(&r, env, "run", P("slow.comp"), "--buffer", "0=size:16", "--param", "0=60000", "--groups", "3000",
         "--timeout", "0.3", "-q");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    /* At once: but a server in the run's own process (KILN_REMOTE=inproc)
     * must wait for its device before the process can end, however long
     * the abandoned dispatch runs on a loaded machine. */
    const char *remote = getenv("KILN_REMOTE");
    if (!remote || strcmp(remote, "inproc"))
        CHECK(s < 10.0);
    if (r.status != 0) {
        CHECK_STATUS(r, 1);
        CHECK_HAS(r, err, "KILN_ERR_DEVICE_LOST");
        CHECK_HAS(r, err, "node: 'run' running program");
        CHECK_HAS(r, err, "did not finish within");
    }
    run_free(&r);
    static const char *const bad[] = {"0", "-1", "x", "1e3"};
    for (int i = 0; i < 4; i++) {
        KILN(&r, NULL, "run", P("slow.comp"), "--buffer", "0=size:16", "--timeout", bad[i]);
        CHECK_STATUS(r, 2);
        CHECK_HAS(r, err, "--timeout");
        run_free(&r);
    }
}

TEST(run_frames_accumulate)
{
    enum { N = 1000 };
    uint32_t d0[N];
    for (int i = 0; i < N; i++)
        d0[i] = (uint32_t)i;
    write_text("frames.comp", frames_src);
    write_file("d.bin", d0, sizeof d0);
    char count_out[600], d_arg[600];
    snprintf(count_out, sizeof count_out, "0=%s", P("count.bin"));
    snprintf(d_arg, sizeof d_arg, "1=%s", P("d.bin"));
    struct run r;
    /* d.bin is read and then written over: input and output may be one file */
    KILN(&r, NULL, "run", P("frames.comp"), "--groups", "16", "--frames", "5", "--param", "0=3", "--buffer",
         "0=size:4000", "--buffer", d_arg, "--out", count_out, "--out", d_arg);
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "5 frames (median ");
    CHECK_HAS(r, err, " ms a frame: submit and wait)");
    uint32_t *count = READ_OUT("count.bin", N * 4);
    uint32_t *d = READ_OUT("d.bin", N * 4);
    if (count && d) {
        int bad = 0;
        for (int i = 0; i < N; i++) {
            uint32_t want = (uint32_t)i;
            for (int f = 0; f < 5; f++)
                want = 2 * want + 3;
            bad += count[i] != 5 || d[i] != want;
        }
        CHECK_EQ(bad, 0);
        if (bad)
            fprintf(stderr, "  count[1] = %u, d[1] = %u (want 5, 125)\n", count[1], d[1]);
    }
    free(count);
    free(d);
    run_free(&r);
}

/* At context destroy kiln logs its close lines: the compile service's
 * (what it compiled, adopted, deduplicated...) and the context's. */
TEST(close_lines_at_destroy)
{
    write_text("frames.comp", frames_src);
    struct run r;
    /* Specialization off: its variant would be a second program asked for. */
    static const char *const info[] = {"KILN_LOG=info", "KILN_SPECIALIZATION=0", NULL};
    KILN(&r, info, "run", P("frames.comp"), "--groups", "1", "--buffer",
         "0=size:256", "--buffer", "1=size:256");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "compile: 1 programs asked for; 2 compiles started");
    CHECK_HAS(r, err, "context closed: 1 submits");
    run_free(&r);
}

/* kiln archive: a second run takes its program from the archive; ls and
 * verify show the file; a damaged entry makes verify fail; compact merges
 * the run archives into one, dropping the damaged entry; gc removes files
 * past a size. A run archive holds, per program, its front end and the
 * note of its use, and its pipeline where the driver's pipeline caches keep
 * compiled code (caps.pipeline_cache_keeps_code): the counts say which. */
TEST(archive_commands)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);
    const unsigned keeps = caps.pipeline_cache_keeps_code ? 1 : 0, per_program = 2 + keeps;
    char want[160];
    write_text("frames.comp", frames_src);
    char dir[600], env_dir[700];
    snprintf(dir, sizeof dir, "%s/archive", tmp_dir);
    snprintf(env_dir, sizeof env_dir, "KILN_ARCHIVE_DIR=%s", dir);
    /* Specialization off: the counts are of programs, not their variants. */
    const char *env[] = {"KILN_ARCHIVE=1", env_dir, "KILN_LOG=info", "KILN_SPECIALIZATION=0", NULL};
    struct run r;
    for (int i = 0; i < 2; i++) {
        KILN(&r, env, "run", P("frames.comp"), "--groups", "1", "--buffer", "0=size:256", "--buffer", "1=size:256");
        CHECK_STATUS(r, 0);
        if (i == 0)
            snprintf(want, sizeof want, "archive: 0 front ends and 0 pipelines from it, 1 and %u compiled and added",
                     keeps);
        else
            snprintf(want, sizeof want, "archive: 1 front ends and %u pipelines from it, 0 and 0 compiled and added",
                     keeps);
        CHECK_HAS(r, err, want);
        run_free(&r);
    }
    KILN(&r, env, "archive", "path");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, dir);
    run_free(&r);
    KILN(&r, env, "archive", "verify");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "1 files");
    snprintf(want, sizeof want, "%u good entries, 0 corrupt entries", per_program);
    CHECK_HAS(r, out, want);
    run_free(&r);
    /* Damage the file's first entry, the front end (added before its note
     * and its pipeline), past the 64-byte header. */
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "f=$(ls %s/*/*.arc) && printf 'XX' | dd of=$f bs=1 seek=200 conv=notrunc status=none",
             dir);
    CHECK_EQ(system(cmd), 0);
    KILN(&r, env, "archive", "verify");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, out, "1 corrupt entries");
    CHECK_HAS(r, err, "corruption found");
    run_free(&r);
    /* A second program: a second run archive. Its source differs only in a
     * comment, so its SPIR-V is the first's: where pipelines are archived,
     * its pipeline (keyed by SPIR-V and layout) comes from the first
     * program's entry and is not added again. */
    char src2[sizeof frames_src + 16];
    snprintf(src2, sizeof src2, "%s// two\n", frames_src);
    write_text("frames2.comp", src2);
    KILN(&r, env, "run", P("frames2.comp"), "--groups", "1", "--buffer", "0=size:256", "--buffer", "1=size:256");
    CHECK_STATUS(r, 0);
    snprintf(want, sizeof want, "archive: 0 front ends and %u pipelines from it, 1 and 0 compiled and added", keeps);
    CHECK_HAS(r, err, want);
    run_free(&r);
    KILN(&r, env, "archive", "compact");
    CHECK_STATUS(r, 0);
    /* Every entry but the damaged front end: the first program's note (and
     * pipeline), the second's front end and note. */
    const unsigned kept = 3 + keeps;
    snprintf(want, sizeof want, "compact: 2 small files merged into one (%u entries kept, 0 duplicates and 1 bad entries",
             kept);
    CHECK_HAS(r, out, want);
    CHECK_HAS(r, out, "-> 1 files");
    run_free(&r);
    KILN(&r, env, "archive", "verify");
    CHECK_STATUS(r, 0);
    snprintf(want, sizeof want, "%u good entries, 0 corrupt entries", kept);
    CHECK_HAS(r, out, want);
    run_free(&r);
    KILN(&r, env, "archive", "gc", "--max-size", "nonsense");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "bad --max-size: 'nonsense' is not a size");
    run_free(&r);
    KILN(&r, env, "archive", "gc", "--max-size", "1K");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "gc: 1 least recently used files removed");
    CHECK_HAS(r, out, "-> 0 files, 0 bytes");
    run_free(&r);
    KILN(&r, env, "archive", "nonsense");
    CHECK_STATUS(r, 2);
    run_free(&r);
}

/* Runs `kiln ARGS...` as the user "nobody" when the tests run as root
 * (file permissions bind root only on read-only mounts), else as is; false
 * (and nothing run) when it cannot be done here. */
#define KILN_AS_NOBODY(r, env, ...)                                                                  \
    kiln_as_nobody_(__FILE__, __LINE__, (r), (env), (const char *const[]){__VA_ARGS__, NULL})
static bool kiln_as_nobody_(const char *file, int line, struct run *r, const char *const *env,
                            const char *const *args)
{
    if (geteuid() != 0) {
        kiln_run_(file, line, r, env, args);
        return true;
    }
    static const char setpriv[] = "/usr/bin/setpriv";
    if (access(setpriv, X_OK) < 0)
        return false;
    const char *argv[64] = {"--reuid=65534", "--regid=65534", "--clear-groups", "--", kiln_bin};
    int n = 5;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *kiln = kiln_bin;
    kiln_bin = setpriv;
    kiln_run_(file, line, r, env, argv);
    kiln_bin = kiln;
    return true;
}

/* kiln archive on a folder it may read but not write (a shipped archive):
 * ls and verify list and check it (exit 0); compact and gc say it is
 * read-only. A folder that cannot be used at all, and an archive turned
 * off, say so with exit status 3, never 1 (corruption). */
TEST(archive_read_only_and_unusable_folders)
{
    write_text("ro.comp", frames_src);
    char dir[600], env_dir[700], cmd[1600];
    snprintf(dir, sizeof dir, "%s/ro-archive", tmp_dir);
    snprintf(env_dir, sizeof env_dir, "KILN_ARCHIVE_DIR=%s", dir);
    const char *env[] = {"KILN_ARCHIVE=1", env_dir, "KILN_SPECIALIZATION=0", NULL};
    struct run r;
    KILN(&r, env, "run", P("ro.comp"), "--groups", "1", "--buffer", "0=size:256", "--buffer", "1=size:256");
    CHECK_STATUS(r, 0);
    run_free(&r);
    /* Readable by all, written by none. */
    snprintf(cmd, sizeof cmd, "chmod 0755 %s %s && chmod 0555 %s/*", tmp_dir, dir, dir);
    CHECK_EQ(system(cmd), 0);
    if (KILN_AS_NOBODY(&r, env, "archive", "ls")) {
        CHECK_STATUS(r, 0);
        CHECK_HAS(r, out, "1 files");
        CHECK_HAS(r, out, "0 corrupt entries, 0 files unusable");
        run_free(&r);
        KILN_AS_NOBODY(&r, env, "archive", "verify");
        CHECK_STATUS(r, 0);
        CHECK_HAS(r, out, "0 corrupt entries");
        run_free(&r);
        KILN_AS_NOBODY(&r, env, "archive", "gc");
        CHECK_STATUS(r, 3);
        CHECK_HAS(r, err, "is read-only");
        run_free(&r);
    } else {
        fprintf(stderr, "%s: running as root without setpriv: the read-only folder is not tried\n", test_name_);
    }
    snprintf(cmd, sizeof cmd, "chmod 0755 %s/*", dir);
    CHECK_EQ(system(cmd), 0);
    /* A folder that cannot be made: a file stands where it would go. */
    write_text("in-the-way", "x");
    char blocked[700];
    snprintf(blocked, sizeof blocked, "KILN_ARCHIVE_DIR=%s/in-the-way/archive", tmp_dir);
    const char *env_blocked[] = {"KILN_ARCHIVE=1", blocked, NULL};
    KILN(&r, env_blocked, "archive", "ls");
    CHECK_STATUS(r, 3);
    CHECK_HAS(r, err, "cannot be used: Not a directory");
    run_free(&r);
    KILN(&r, env_blocked, "archive", "verify");
    CHECK_STATUS(r, 3);
    run_free(&r);
    const char *env_off[] = {"KILN_ARCHIVE=0", NULL};
    KILN(&r, env_off, "archive", "verify");
    CHECK_STATUS(r, 3);
    CHECK_HAS(r, out, "archive: off");
    run_free(&r);
    KILN(&r, NULL, "archive", "--help");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "3  the archive is off");
    run_free(&r);
}

/* kiln run --frames N prints specialization events as they happen, one
 * line each naming the node and its baked slots, and counts them. */
TEST(run_frames_prints_specialization)
{
    static const char loop_src[] = "#version 450\n"
                                   "layout(local_size_x = 64) in;\n"
                                   "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                                   "void main() { uint v = x[gl_GlobalInvocationID.x];\n"
                                   "    for (uint k = 0u; k < kiln_param(0); k++) v = v * 3u + 1u;\n"
                                   "    x[gl_GlobalInvocationID.x] = v; }\n";
    write_text("loop.comp", loop_src);
    struct run r;
    static const char *const on[] = {"KILN_SPECIALIZATION=1", NULL};
    KILN(&r, on, "run", P("loop.comp"), "--buffer", "0=size:4096", "--groups", "16", "--param", "0=100",
         "--frames", "300");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "kiln run: submit 1: warm     node 'run' (");
    CHECK_HAS(r, err, "loop.comp): slot0=0x64");
    CHECK_HAS(r, err, "specialization     1 warms");
    run_free(&r);
    static const char *const off[] = {"KILN_SPECIALIZATION=0", NULL};
    KILN(&r, off, "run", P("loop.comp"), "--buffer", "0=size:4096", "--groups", "16", "--param", "0=100",
         "--frames", "3");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "specialization     0 warms, 0 promotions, 0 demotions");
    run_free(&r);
}

/* Signed division by -1. The divisor is param word 0 (or -D B=-1, a constant
 * without any bake); INT_MIN / -1 and INT_MIN % -1 are undefined in SPIR-V
 * and may be anything, but the run survives them (SPIRV-Tools used to fold
 * them in kiln's process and die of SIGFPE once the word was baked), and
 * every other a / -1 is exactly -a, specialized or not. */
TEST(run_signed_division_by_minus_one)
{
    static const char div_src[] =
        "#version 450\n"
        "layout(local_size_x = 8) in;\n"
        "layout(std430, binding = 0) buffer X { int x[]; };\n"
        "#ifndef B\n"
        "#define B kiln_parami(0)\n"
        "#endif\n"
        "void main() {\n"
        "    uint i = gl_GlobalInvocationID.x;\n"
        "    int m = -2147483647 - 1; int b = B; int c = 123456;\n"
        "    if (i == 0u) x[0] = (-2147483647 - 1) / B;\n"
        "    if (i == 1u) x[1] = m / b;\n"
        "    if (i == 2u) x[2] = m % b;\n"
        "    if (i == 3u) x[3] = c / b;\n"
        "    if (i == 4u) x[4] = int(i) * 1000 / b;\n"
        "    ivec2 v = ivec2(m + 5, 77) / ivec2(b);\n"
        "    if (i == 5u) x[5] = v.x;\n"
        "    if (i == 6u) x[6] = v.y;\n"
        "    if (i == 7u) x[7] = -9 % b;\n"
        "}\n";
    write_text("div.comp", div_src);
    static const char *const on[] = {"KILN_SPECIALIZATION=1", NULL};
    static const char *const off[] = {"KILN_SPECIALIZATION=0", NULL};
    char out_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("div.bin"));
    for (int k = 0; k < 3; k++) {
        struct run r;
        if (k == 0)   /* baked after a few frames */
            KILN(&r, on, "run", P("div.comp"), "--buffer", "0=size:32", "--out", out_arg, "--param", "0=-1",
                 "--frames", "20");
        else if (k == 1)   /* never baked */
            KILN(&r, off, "run", P("div.comp"), "--buffer", "0=size:32", "--out", out_arg, "--param", "0=-1",
                 "--frames", "3");
        else   /* a constant -1 in the universal program */
            KILN(&r, on, "run", P("div.comp"), "--define", "B=-1", "--buffer", "0=size:32", "--out", out_arg);
        CHECK_STATUS(r, 0);
        if (k == 0)
            CHECK_HAS(r, err, "slot0=0xffffffff");   /* the word was baked */
        run_free(&r);
        int32_t *x = READ_OUT("div.bin", 32);
        if (x) {
            CHECK_EQ(x[3], -123456);
            CHECK_EQ(x[4], -4000);
            CHECK_EQ(x[5], 2147483643);
            CHECK_EQ(x[6], -77);
            CHECK_EQ(x[7], 0);
        }
        free(x);
    }
}

/* Param words: raw words as given, and float math on float words. */
static const char words_src[] =
    "#version 450\n"
    "layout(local_size_x = 8) in;\n"
    "layout(binding = 0) readonly buffer In { float x[]; };\n"
    "layout(binding = 1) writeonly buffer Out { uint raw[8]; float y[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i == 0u) {\n"
    "        raw[0] = kiln_param(0); raw[1] = kiln_param(1); raw[2] = kiln_param(2);\n"
    "        raw[3] = kiln_param(3); raw[4] = kiln_param(4); raw[5] = kiln_param(5);\n"
    "        raw[6] = kiln_param(6); raw[7] = kiln_param(7);\n"
    "    }\n"
    "    if (i < x.length()) y[i] = x[i] * kiln_paramf(0) + float(kiln_parami(1));\n"
    "}\n";

TEST(run_float_words)
{
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)i - 4.0f;
    write_text("words.comp", words_src);
    write_file("x.bin", x, sizeof x);
    char x_arg[600], out_arg[600];
    snprintf(x_arg, sizeof x_arg, "0=%s", P("x.bin"));
    snprintf(out_arg, sizeof out_arg, "1=%s", P("words_out.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("words.comp"), "--groups", "2", "--param", "0=1.5f", "--param", "1=-2", "--param",
         "2=0x10", "--param", "3=-0.25f", "--param", "7=4294967295", "--buffer", x_arg, "--buffer",
         "1=size:96:fill:0xffffffff", "--out", out_arg);
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("words_out.bin", 96);
    if (got) {
        CHECK_EQ(got[0], f2u(1.5f));
        CHECK_EQ(got[1], 0xfffffffeu);
        CHECK_EQ(got[2], 16);
        CHECK_EQ(got[3], f2u(-0.25f));
        CHECK_EQ(got[4], 0);   /* words not given are 0 */
        CHECK_EQ(got[7], 0xffffffffu);
        for (int i = 0; i < 16; i++)
            CHECK_EQ(got[8 + i], f2u(x[i] * 1.5f - 2.0f));   /* exact in float */
    }
    free(got);
    run_free(&r);
}

/* A shader with its own push_constant block (kiln adds none): --push-file
 * fills the block, --push N=WORD sets single words over it; --param, kiln's
 * words, is refused naming --push; a file or a word past the block too. */
static const char own_push_src[] =
    "#version 450\n"
    "layout(local_size_x = 4) in;\n"
    "layout(push_constant) uniform Push { uint mul; uint add; float scale; uint tail[7]; } pc;\n"
    "layout(binding = 0) writeonly buffer Out { float y[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    y[i] = float(i * pc.mul + pc.add + pc.tail[6]) * pc.scale;\n"
    "}\n";

TEST(run_own_push_block)
{
    write_text("own.comp", own_push_src);
    uint32_t block[10] = {3, 100, f2u(0.5f), 0, 0, 0, 0, 0, 0, 7};
    write_file("push.bin", block, sizeof block);
    write_file("push_big.bin", block, sizeof block);
    /* A host's padded struct: the block's 40 bytes and 8 of padding. */
    write_file("push_padded.bin", (uint32_t[12]){3, 100, f2u(0.5f), 0, 0, 0, 0, 0, 0, 7, 0xdead, 0xbeef}, 48);
    char out_arg[600], file_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("own_out.bin"));
    snprintf(file_arg, sizeof file_arg, "%s", P("push.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("own.comp"), "--groups", "2", "--push-file", file_arg, "--push", "1=40", "--buffer",
         "0=size:32", "--out", out_arg);
    CHECK_STATUS(r, 0);
    float *got = READ_OUT("own_out.bin", 32);
    if (got)
        for (uint32_t i = 0; i < 8; i++)
            CHECK(got[i] == (float)(i * 3 + 40 + 7) * 0.5f);
    free(got);
    run_free(&r);

    KILN(&r, NULL, "run", P("own.comp"), "--param", "0=1", "--buffer", "0=size:32");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "declares its own push_constant block (40 bytes)");
    CHECK_HAS(r, err, "--push N=WORD");
    run_free(&r);
    KILN(&r, NULL, "run", P("own.comp"), "--push", "10=1", "--buffer", "0=size:32");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "word 10 is past the shader's push_constant block (40 bytes: words 0..9)");
    run_free(&r);
    /* A float member given a decimal integer: its bits, with a note. */
    KILN(&r, NULL, "run", P("own.comp"), "--push", "2=3", "--buffer", "0=size:32");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "note: --push 2=3: word 2 of the push_constant block is a float, and 3 is read as the integer "
                      "bits 0x00000003");
    CHECK(!strstr(r.err, "--push 0="));
    run_free(&r);
    KILN(&r, NULL, "run", P("own.comp"), "--push", "2=3.0", "--push", "0=3", "--buffer", "0=size:32");
    CHECK_STATUS(r, 0);
    CHECK(!strstr(r.err, "is a float"));   /* 3.0 is a float's value; word 0 is a uint */
    run_free(&r);
    snprintf(file_arg, sizeof file_arg, "%s", P("push_padded.bin"));
    KILN(&r, NULL, "run", P("own.comp"), "--groups", "2", "--push-file", file_arg, "--buffer", "0=size:32", "--out",
         out_arg);
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "48 bytes; the shader's push_constant block holds 40, so bytes 40..47 are ignored");
    got = READ_OUT("own_out.bin", 32);
    if (got)
        for (uint32_t i = 0; i < 8; i++)
            CHECK(got[i] == (float)(i * 3 + 100 + 7) * 0.5f);
    free(got);
    run_free(&r);
    /* And the other way: --push on a shader that reads kiln's words. */
    write_text("kiln_words.comp", "#version 450\nlayout(local_size_x = 1) in;\n"
                                  "layout(binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = kiln_param(0); }\n");
    KILN(&r, NULL, "run", P("kiln_words.comp"), "--push", "0=1", "--buffer", "0=size:4");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "declares no push_constant block of its own; kiln's param words are set with --param");
    run_free(&r);
    /* A block given no values runs with zeros, and says so (not with -q). */
    KILN(&r, NULL, "run", P("own.comp"), "--buffer", "0=size:32");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "note: ");
    CHECK_HAS(r, err, "its push_constant block (40 bytes) is given no values, so it runs with zeros");
    run_free(&r);
    KILN(&r, NULL, "run", P("own.comp"), "-q", "--buffer", "0=size:32");
    CHECK_STATUS(r, 0);
    CHECK(!strstr(r.err, "is given no values"));
    run_free(&r);
}

/* A SPIR-V module (kiln run x.spv, or any name by its magic number, or
 * --lang spirv) and an HLSL kernel (x.hlsl, or --lang hlsl) run as GLSL
 * does; what a module cannot take is refused by name. */
static const char lang_glsl[] = "#version 450\n"
                                "layout(local_size_x = 8) in;\n"
                                "layout(constant_id = 0) const uint K = 2;\n"
                                "layout(push_constant) uniform P { uint add; } pc;\n"
                                "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                                "void main() { uint i = gl_GlobalInvocationID.x; o[i] = i * K + pc.add; }\n";
static const char lang_hlsl[] = "cbuffer C : register(b0) { uint mul; };\n"
                                "StructuredBuffer<uint> src : register(t0);\n"
                                "RWStructuredBuffer<uint> dst : register(u0);\n"
                                "[numthreads(8, 1, 1)]\n"
                                "void CSMain(uint3 id : SV_DispatchThreadID) { dst[id.x] = src[id.x] * mul; }\n";

TEST(run_spirv_and_hlsl)
{
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    shaderc_compilation_result_t cr =
        shaderc_compile_into_spv(c, lang_glsl, strlen(lang_glsl), shaderc_compute_shader, "m.comp", "main", o);
    REQUIRE(shaderc_result_get_compilation_status(cr) == shaderc_compilation_status_success);
    write_file("m.spv", shaderc_result_get_bytes(cr), shaderc_result_get_length(cr));
    write_file("m.bin", shaderc_result_get_bytes(cr), shaderc_result_get_length(cr));
    write_file("m_cut.spv", shaderc_result_get_bytes(cr), shaderc_result_get_length(cr) - 2);
    shaderc_result_release(cr);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    char out_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("lang_out.bin"));
    struct run r;
    /* By its name, with --spec and --push on its own constant and block. */
    KILN(&r, NULL, "run", P("m.spv"), "--groups", "2", "--spec", "0=5", "--push", "0=7", "--buffer", "0=size:64",
         "--out", out_arg);
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("lang_out.bin", 64);
    for (uint32_t i = 0; got && i < 16; i++)
        CHECK_EQ(got[i], i * 5 + 7);
    free(got);
    run_free(&r);
    /* By its bytes, under a name that says nothing. */
    KILN(&r, NULL, "run", P("m.bin"), "--groups", "2", "--push", "0=1", "--buffer", "0=size:64", "--out", out_arg);
    CHECK_STATUS(r, 0);
    got = READ_OUT("lang_out.bin", 64);
    for (uint32_t i = 0; got && i < 16; i++)
        CHECK_EQ(got[i], i * 2 + 1);
    free(got);
    run_free(&r);
    KILN(&r, NULL, "run", P("m.spv"), "--define", "X=1", "--buffer", "0=size:64");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "is a SPIR-V module, which has no preprocessor");
    run_free(&r);
    KILN(&r, NULL, "run", P("m.spv"), "--entry", "other", "--buffer", "0=size:64");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "no GLCompute entry point named 'other'; its entry points: 'main' (GLCompute)");
    run_free(&r);
    KILN(&r, NULL, "run", P("m_cut.spv"), "--buffer", "0=size:64");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "whole 32-bit words");
    run_free(&r);
    KILN(&r, NULL, "run", P("m.spv"), "--lang", "fortran");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--lang fortran: expected glsl, hlsl or spirv");
    run_free(&r);

    /* HLSL: t0 is binding 16, b0 binding 32 (uniform), u0 binding 0. */
    write_text("k.hlsl", lang_hlsl);
    write_text("k.txt", lang_hlsl);
    uint32_t in[16], mul[4] = {3, 0, 0, 0};
    for (uint32_t i = 0; i < 16; i++)
        in[i] = i + 100;
    write_file("k_in.bin", in, sizeof in);
    write_file("k_mul.bin", mul, sizeof mul);
    char in_arg[600], mul_arg[600];
    snprintf(in_arg, sizeof in_arg, "16=%s", P("k_in.bin"));
    snprintf(mul_arg, sizeof mul_arg, "32=%s", P("k_mul.bin"));
    /* By its name, and under another name by --lang. */
    for (int k = 0; k < 2; k++) {
        if (k == 0)
            KILN(&r, NULL, "run", P("k.hlsl"), "--entry", "CSMain", "--groups", "2", "--buffer", "0=size:64",
                 "--buffer", in_arg, "--buffer", mul_arg, "--out", out_arg);
        else
            KILN(&r, NULL, "run", P("k.txt"), "--lang", "hlsl", "--entry", "CSMain", "--groups", "2", "--buffer",
                 "0=size:64", "--buffer", in_arg, "--buffer", mul_arg, "--out", out_arg);
        CHECK_STATUS(r, 0);
        got = READ_OUT("lang_out.bin", 64);
        for (uint32_t i = 0; got && i < 16; i++)
            CHECK_EQ(got[i], (i + 100) * 3);
        free(got);
        run_free(&r);
    }
    KILN(&r, NULL, "run", P("k.hlsl"), "--entry", "CSMain", "--push", "0=1", "--buffer", "0=size:64", "--buffer",
         in_arg, "--buffer", mul_arg);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "has no push_constant block, so nothing takes its words");
    run_free(&r);
}

/* --entry, --define K=V and bare --define K (= 1), and #include of files
 * next to the shader, both <x> (include folders only) and "x". */
static const char entry_src[] =
    "#version 450\n"
    "#extension GL_GOOGLE_include_directive : require\n"
    "#include <helpers.glsl>\n"
    "#include \"sub/more.glsl\"\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) buffer Data { int d[]; };\n"
    "void scale() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i >= d.length()) return;\n"
    "#if NEGATE == 1\n"
    "    d[i] = -plus_one(twice(d[i]) * FACTOR);\n"
    "#else\n"
    "    d[i] = plus_one(twice(d[i]) * FACTOR);\n"
    "#endif\n"
    "}\n";

TEST(run_entry_defines_includes)
{
    write_text("entry.comp", entry_src);
    write_text("helpers.glsl", "int twice(int v) { return 2 * v; }\n");
    if (mkdir(P("sub"), 0755) && errno != EEXIST)
        REQUIRE(!"mkdir sub");
    write_text("sub/more.glsl", "int plus_one(int v) { return v + 1; }\n");
    int32_t d[100];
    for (int i = 0; i < 100; i++)
        d[i] = i - 50;
    write_file("ints.bin", d, sizeof d);
    char d_arg[600], out_arg[600];
    snprintf(d_arg, sizeof d_arg, "0=%s", P("ints.bin"));
    snprintf(out_arg, sizeof out_arg, "0=%s", P("ints_out.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("entry.comp"), "--entry", "scale", "--groups", "2", "--define", "FACTOR=3", "--define",
         "NEGATE", "--buffer", d_arg, "--out", out_arg);
    CHECK_STATUS(r, 0);
    int32_t *got = READ_OUT("ints_out.bin", sizeof d);
    if (got) {
        int bad = 0;
        for (int i = 0; i < 100; i++)
            bad += got[i] != -(2 * d[i] * 3 + 1);
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);
    KILN(&r, NULL, "run", P("entry.comp"), "--entry=scale", "--groups", "2", "--define=FACTOR=5", "--define",
         "NEGATE=0", "--buffer", d_arg, "--out", out_arg, "-q");
    CHECK_STATUS(r, 0);
    got = READ_OUT("ints_out.bin", sizeof d);
    if (got) {
        int bad = 0;
        for (int i = 0; i < 100; i++)
            bad += got[i] != 2 * d[i] * 5 + 1;
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);
}

/* A shader as an ML runtime keeps it: its types and accessors are the
 * host's macros (a --preamble file after #version, function-like
 * --defines) and its workgroup size is the host's (--workgroup-size over
 * local_size_x_id). */
static const char host_src[] = "#version 450\n"
                               "layout(local_size_x_id = 233) in;\n"
                               "layout(std430, binding = 0) buffer D { sfp d[]; };\n"
                               "void main() { uint i = gl_GlobalInvocationID.x;\n"
                               "    buffer_st(d, i, psc(buffer_ld(d, i)) + gl_WorkGroupSize.x); }\n";

TEST(run_preamble_and_workgroup_size)
{
    write_text("host.comp", host_src);
    write_text("host_pre.glsl", "#extension GL_EXT_control_flow_attributes : enable\n"
                                "#define sfp uint\n#define buffer_ld(b, i) b[i]\n");
    char out_arg[600], pre_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("host_out.bin"));
    snprintf(pre_arg, sizeof pre_arg, "%s", P("host_pre.glsl"));
    struct run r;
    KILN(&r, NULL, "run", P("host.comp"), "--preamble", pre_arg, "--preamble-text", "#define psc(x) ((x) * 3u)",
         "--define", "buffer_st(b,i,v)=b[i] = (v)", "--workgroup-size", "16", "--groups", "4", "--buffer",
         "0=size:256:fill:2", "--out", out_arg, "-q");
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("host_out.bin", 256);
    for (uint32_t i = 0; got && i < 64; i++)
        CHECK_EQ(got[i], 2 * 3 + 16);
    free(got);
    run_free(&r);
    KILN(&r, NULL, "run", P("host.comp"), "--workgroup-size", "0", "--buffer", "0=size:256");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--workgroup-size 0: expected X[,Y[,Z]], each 1 to 65535");
    run_free(&r);
    KILN(&r, NULL, "run", P("host.comp"), "--define", "f(x=1", "--buffer", "0=size:256");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "the macro's parameters have no ')'");
    run_free(&r);
    KILN(&r, NULL, "run", P("host.comp"), "--preamble", P("no_such_preamble.glsl"), "--buffer", "0=size:256");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--preamble");
    run_free(&r);
}

/* A binding declared uniform gets a uniform buffer. */
static const char uniform_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) buffer Data { uint d[]; };\n"
    "layout(binding = 1) uniform Coeffs { uint mul; uint add; } u;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < d.length()) d[i] = d[i] * u.mul + u.add;\n"
    "}\n";

TEST(run_uniform_buffer)
{
    uint32_t d[64], coeffs[4] = {7, 11, 0, 0};
    for (int i = 0; i < 64; i++)
        d[i] = (uint32_t)i * 3;
    write_text("uniform.comp", uniform_src);
    write_file("ud.bin", d, sizeof d);
    write_file("coeffs.bin", coeffs, sizeof coeffs);
    char d_arg[600], u_arg[600], out_arg[600];
    snprintf(d_arg, sizeof d_arg, "0=%s", P("ud.bin"));
    snprintf(u_arg, sizeof u_arg, "1=%s", P("coeffs.bin"));
    snprintf(out_arg, sizeof out_arg, "0=%s", P("ud_out.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("uniform.comp"), "--buffer", d_arg, "--buffer", u_arg, "--out", out_arg);
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("ud_out.bin", sizeof d);
    if (got) {
        int bad = 0;
        for (int i = 0; i < 64; i++)
            bad += got[i] != d[i] * 7 + 11;
        CHECK_EQ(bad, 0);
    }
    free(got);
    run_free(&r);
}

/* png: inputs and outputs: a 3x2 RGBA image in, its pixels as the buffer
 * (rows top to bottom, 4 bytes a pixel), an image out of the same size;
 * what is not a PNG, an image whose pixels would not fit a binding and an
 * output whose size nothing says are refused by name before any run. */
static const char png_invert_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) readonly buffer In { uint px[]; };\n"
    "layout(binding = 1) writeonly buffer Out { uint o[]; };\n"
    "void main() { uint i = gl_GlobalInvocationID.x; if (i < px.length()) o[i] = px[i] ^ 0x00ffffffu; }\n";
/* 3x2 pixels, 8-bit RGBA: byte k of the pixels is (k * 40) % 256. */
static const uint8_t png_3x2[] =
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x03\x00\x00\x00\x02\x08\x06"
    "\x00\x00\x00\x9d\x74\x66\x1a\x00\x00\x00\x23\x49\x44\x41\x54\x78\x9c\x63\x60\xd0\x08\xa8\x58\x70\xe2\x83"
    "\x84\x43\xc6\x84\x1d\x0c\x0f\x38\x0c\x22\x1a\x56\x5c\xf8\xa1\xe0\x51\x30\x03\x00\x87\xca\x0b\x21\xd7\xf6"
    "\x84\x28\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";
/* A valid header claiming 100000x100000 pixels (40 GB as RGBA). */
static const uint8_t png_huge[] =
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x06"
    "\x00\x00\x00\xa8\x52\x0b\xc8\x00\x00\x00\x0b\x49\x44\x41\x54\x78\x9c\x63\x60\x80\x01\x00\x00\x0a\x00\x01"
    "\x7f\x80\x74\x5e\x00\x00\x00\x00\x49\x45\x4e\x44\xae\x42\x60\x82";

TEST(run_png_images)
{
    write_text("invert.comp", png_invert_src);
    write_file("in.png", png_3x2, sizeof png_3x2 - 1);
    write_file("huge.png", png_huge, sizeof png_huge - 1);
    char in_arg[600], out_png[600], raw0[600], back_in[600], raw1[600], huge_arg[600], notpng[600];
    snprintf(in_arg, sizeof in_arg, "0=png:%s", P("in.png"));
    snprintf(out_png, sizeof out_png, "1=png:%s", P("inverted.png"));
    snprintf(raw0, sizeof raw0, "0=%s", P("pixels.bin"));
    snprintf(back_in, sizeof back_in, "0=png:%s", P("inverted.png"));
    snprintf(raw1, sizeof raw1, "1=%s", P("twice.bin"));
    snprintf(huge_arg, sizeof huge_arg, "0=png:%s", P("huge.png"));
    snprintf(notpng, sizeof notpng, "0=png:%s", P("invert.comp"));
    uint8_t want[24], inv[24];
    for (int k = 0; k < 24; k++) {
        want[k] = (uint8_t)((k * 40) % 256);
        inv[k] = k % 4 == 3 ? want[k] : (uint8_t)~want[k];
    }
    struct run r;
    KILN(&r, NULL, "run", P("invert.comp"), "--buffer", in_arg, "--buffer", "1=size:24", "--out", out_png, "--out",
         raw0);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint8_t *got = READ_OUT("pixels.bin", 24);
    if (got)
        CHECK(!memcmp(got, want, 24));   /* the decoder's pixels, as the shader saw them */
    free(got);
    /* The image written reads back as the inverted pixels; inverted again,
     * it is the original. */
    KILN(&r, NULL, "run", P("invert.comp"), "--buffer", back_in, "--buffer", "1=size:24", "--out", raw0, "--out",
         raw1);
    CHECK_STATUS(r, 0);
    run_free(&r);
    got = READ_OUT("pixels.bin", 24);
    if (got)
        CHECK(!memcmp(got, inv, 24));
    free(got);
    got = READ_OUT("twice.bin", 24);
    if (got)
        CHECK(!memcmp(got, want, 24));
    free(got);

    KILN(&r, NULL, "run", P("invert.comp"), "--buffer", notpng, "--buffer", "1=size:24");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "not a readable PNG");
    run_free(&r);
    KILN(&r, NULL, "run", P("invert.comp"), "--buffer", huge_arg, "--buffer", "1=size:24");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "100000x100000 pixels needs 40000000000 bytes");
    run_free(&r);
    KILN(&r, NULL, "run", P("invert.comp"), "--buffer", "0=size:24", "--buffer", "1=size:24", "--out", out_png);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "the image's size is not known");
    run_free(&r);
}

/* Images through kiln run: a PNG as a storage image inverted into
 * another, written back as raw texels and as a PNG (read again, it is the
 * same); a PNG sampled through a sampler2D with linear filtering (within
 * 1/255 of the CPU's) and nearest-repeat; raw r32ui texels updated in
 * place; a zeroed 3D image written texel by texel; and the errors. */
static const char img_invert_src[] =
    "#version 450\n"
    "layout(local_size_x = 4, local_size_y = 4) in;\n"
    "layout(binding = 0, rgba8) uniform readonly image2D Src;\n"
    "layout(binding = 1, rgba8) uniform writeonly image2D Dst;\n"
    "void main() {\n"
    "    ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
    "    if (any(greaterThanEqual(p, imageSize(Src)))) return;\n"
    "    vec4 v = imageLoad(Src, p);\n"
    "    imageStore(Dst, p, vec4(1.0 - v.rgb, v.a));\n"
    "}\n";
static const char img_sample_src[] =
    "#version 450\n"
    "layout(local_size_x = 16) in;\n"
    "layout(binding = 0) uniform sampler2D Tex;\n"
    "layout(std430, binding = 1) writeonly buffer Out { vec4 o[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    vec2 uv = vec2(float(i % 4u) * 5.0 - 3.0, float(i / 4u) * 4.0 - 3.0) / 8.0;\n"
    "    o[i] = textureLod(Tex, uv, 0.0);\n"
    "}\n";
static const char img_count_src[] =
    "#version 450\n"
    "layout(local_size_x = 4, local_size_y = 2) in;\n"
    "layout(binding = 0, r32ui) uniform uimage2D Counts;\n"
    "void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy); imageStore(Counts, p, imageLoad(Counts, p) * 3u + 1u); }\n";
static const char img_volume_src[] =
    "#version 450\n"
    "layout(local_size_x = 4, local_size_y = 4, local_size_z = 2) in;\n"
    "layout(binding = 0, r32f) uniform writeonly image3D Vol;\n"
    "void main() { ivec3 p = ivec3(gl_GlobalInvocationID); imageStore(Vol, p, vec4(float(p.x + 10 * p.y + 100 * p.z))); }\n";

/* The 3x2 PNG's texel (x, y) channel c, clamped to the edge or repeated. */
static float png_texel(int x, int y, int c, bool repeat)
{
    if (repeat) {
        x = ((x % 3) + 3) % 3;
        y = ((y % 2) + 2) % 2;
    } else {
        x = x < 0 ? 0 : x > 2 ? 2 : x;
        y = y < 0 ? 0 : y > 1 ? 1 : y;
    }
    return (float)(((y * 3 + x) * 4 + c) * 40 % 256) / 255.0f;
}

TEST(run_images)
{
    write_text("img_invert.comp", img_invert_src);
    write_text("img_sample.comp", img_sample_src);
    write_text("img_count.comp", img_count_src);
    write_text("img_volume.comp", img_volume_src);
    write_file("in.png", png_3x2, sizeof png_3x2 - 1);
    char in_png[600], raw_out[600], png_out[600], back_png[600], back_raw[600];
    snprintf(in_png, sizeof in_png, "0=%s", P("in.png"));
    snprintf(raw_out, sizeof raw_out, "1=%s", P("inv.bin"));
    snprintf(png_out, sizeof png_out, "1=%s", P("inv.png"));
    snprintf(back_png, sizeof back_png, "0=%s", P("inv.png"));
    snprintf(back_raw, sizeof back_raw, "0=%s", P("back.bin"));
    uint8_t inv[24];
    for (int k = 0; k < 24; k++)
        inv[k] = k % 4 == 3 ? (uint8_t)((k * 40) % 256) : (uint8_t)(255 - (k * 40) % 256);
    struct run r;
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--image", "1=size:3x2", "--out-image", raw_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--image", "1=size:3x2", "--out-image", png_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint8_t *got = READ_OUT("inv.bin", 24);
    if (got)
        for (int k = 0; k < 24; k++)
            CHECK(abs((int)got[k] - (int)inv[k]) <= 1);   /* rgba8 through floats: within 1/255 */
    /* The PNG written, read again as binding 0's image and written back
     * raw, holds the same texels. */
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", back_png, "--image", "1=size:3x2", "--out-image", back_raw);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint8_t *back = READ_OUT("back.bin", 24);
    if (got && back)
        CHECK(!memcmp(back, got, 24));   /* the PNG holds exactly the texels written raw */
    free(got);
    free(back);

    /* Sampled: linear and clamped (the default), then nearest and repeating. */
    char samples[600];
    snprintf(samples, sizeof samples, "1=%s", P("samples.bin"));
    for (int pass = 0; pass < 2; pass++) {
        KILN(&r, NULL, "run", P("img_sample.comp"), "--image", in_png, "--buffer", "1=size:256", "--out", samples,
             pass ? "--sampler" : "--quiet", pass ? "0=nearest,repeat" : "--quiet");
        CHECK_STATUS(r, 0);
        run_free(&r);
        float *f = READ_OUT("samples.bin", 256);
        for (int i = 0; f && i < 16; i++) {
            /* Normalized coordinates in eighths, so every device computes
             * the same texel coordinates (3 and 2 texels: never on a
             * texel's edge). */
            float u = ((float)(i % 4) * 5.0f - 3.0f) / 8.0f * 3.0f, v = ((float)(i / 4) * 4.0f - 3.0f) / 8.0f * 2.0f;
            for (int c = 0; c < 4; c++) {
                float want;
                if (pass) {
                    want = png_texel((int)floorf(u), (int)floorf(v), c, true);
                } else {
                    float x = u - 0.5f, y = v - 0.5f;
                    int x0 = (int)floorf(x), y0 = (int)floorf(y);
                    float a = x - (float)x0, b = y - (float)y0;
                    want = (1 - a) * (1 - b) * png_texel(x0, y0, c, false) + a * (1 - b) * png_texel(x0 + 1, y0, c, false) +
                           (1 - a) * b * png_texel(x0, y0 + 1, c, false) + a * b * png_texel(x0 + 1, y0 + 1, c, false);
                }
                if (fabsf(f[i * 4 + c] - want) > 1.0f / 255.0f) {
                    test_failures_++;
                    fprintf(stderr, "pass %d sample %d channel %d: %f, the CPU's %f\n", pass, i, c, f[i * 4 + c], want);
                }
            }
        }
        free(f);
    }

    /* Raw integer texels, in place. */
    uint32_t counts[8];
    for (uint32_t i = 0; i < 8; i++)
        counts[i] = i * 1000u + 7u;
    write_file("counts.bin", counts, sizeof counts);
    char raw_in[600], raw_back[600], bad_size[600], png_for_int[600], png_of_int[600];
    snprintf(raw_in, sizeof raw_in, "0=%s:4x2:r32ui", P("counts.bin"));
    snprintf(raw_back, sizeof raw_back, "0=%s", P("counts_out.bin"));
    snprintf(bad_size, sizeof bad_size, "0=%s:4x3:r32ui", P("counts.bin"));
    snprintf(png_for_int, sizeof png_for_int, "0=%s", P("in.png"));
    snprintf(png_of_int, sizeof png_of_int, "0=%s", P("counts.png"));
    KILN(&r, NULL, "run", P("img_count.comp"), "--image", raw_in, "--out-image", raw_back, "--frames", "2");
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *c2 = READ_OUT("counts_out.bin", sizeof counts);
    for (uint32_t i = 0; c2 && i < 8; i++)
        CHECK_EQ(c2[i], (counts[i] * 3u + 1u) * 3u + 1u);   /* frame 2 saw frame 1's values */
    free(c2);
    KILN(&r, NULL, "run", P("img_count.comp"), "--image", bad_size);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "holds 32 bytes; 4x3x1 r32ui texels are 48");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_count.comp"), "--image", png_for_int);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "a PNG converts to normalized and float formats");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_count.comp"), "--image", raw_in, "--out-image", png_of_int);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "a PNG holds normalized and float formats");
    run_free(&r);

    /* A zeroed 3D image. */
    char vol_out[600];
    snprintf(vol_out, sizeof vol_out, "0=%s", P("vol.bin"));
    KILN(&r, NULL, "run", P("img_volume.comp"), "--image", "0=size:4x4x2", "--out-image", vol_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    float *vol = READ_OUT("vol.bin", 4 * 4 * 2 * 4);
    for (int i = 0; vol && i < 32; i++)
        CHECK(vol[i] == (float)(i % 4 + 10 * (i / 4 % 4) + 100 * (i / 16)));
    free(vol);

    /* Errors, by name. */
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--image", "1=size:3x2", "--sampler", "0=linear");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "a storage image is read with imageLoad");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", "0=size:0x2");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "expected size:WxH[xD][:FORMAT]");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_sample.comp"), "--image", in_png, "--sampler", "0=bilinear");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "filter 'bilinear' is neither linear nor nearest");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--out-image", png_out);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "binding 1 has no --image");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--buffer", "0=size:24");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "a binding takes one or the other");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", in_png, "--out", "0=x.bin");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "write it with --out-image");
    run_free(&r);
    KILN(&r, NULL, "run", P("img_invert.comp"), "--image", "0=size:3x2:r32f", "--image", "1=size:3x2");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "is declared rgba8");
    run_free(&r);
}

/* Two bindings of one node on slices of one named buffer: the first
 * half read, the second half written (each slice's length is what the
 * shader's runtime array sees); the named buffer written out whole and a
 * slice alone; the errors by name. */
TEST(run_buffer_slices)
{
    write_text("slices.comp", "#version 450\nlayout(local_size_x = 4) in;\n"
                              "layout(binding = 0) readonly buffer In { uint a[]; };\n"
                              "layout(binding = 1) writeonly buffer Out { uint b[]; };\n"
                              "void main() {\n"
                              "    uint i = gl_GlobalInvocationID.x;\n"
                              "    if (i < uint(a.length())) b[i] = a[i] * 2u + uint(b.length());\n"
                              "}\n");
    uint32_t words[128];
    for (uint32_t i = 0; i < 128; i++)
        words[i] = i * 3u + 1u;
    write_file("data.bin", words, sizeof words);
    char data[600], whole[600], half[600];
    snprintf(data, sizeof data, "data=%s", P("data.bin"));
    snprintf(whole, sizeof whole, "data=%s", P("whole.bin"));
    snprintf(half, sizeof half, "1=%s", P("half.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("slices.comp"), "--groups", "16", "--buffer", data, "--bind", "0=data:0:256", "--bind",
         "1=data:256", "--out", whole, "--out", half);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *w = READ_OUT("whole.bin", sizeof words), *h = READ_OUT("half.bin", 256);
    for (uint32_t i = 0; w && i < 128; i++)
        CHECK_EQ(w[i], i < 64 ? words[i] : words[i - 64] * 2u + 64u);
    if (w && h)
        CHECK(!memcmp(h, w + 64, 256));
    free(w);
    free(h);

    /* Errors, by name. */
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--bind", "0=data:0:256", "--bind", "1=data:4");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "offset 4 is not a multiple of");
    CHECK_HAS(r, err, "minStorageBufferOffsetAlignment");
    run_free(&r);
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--bind", "0=data:0:256", "--bind", "1=data:256:512");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "bytes 256..767 are past the end of buffer 'data' (512 bytes)");
    run_free(&r);
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--bind", "0=dta:0:256", "--bind", "1=data:256");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "no buffer is named 'dta'");
    run_free(&r);
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--buffer", "0=size:16", "--buffer", "1=size:16");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "no --bind takes a slice of buffer 'data'");
    run_free(&r);
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--bind", "0=data", "--buffer", "0=size:16");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "binding 0 is given twice");
    run_free(&r);
    KILN(&r, NULL, "run", P("slices.comp"), "--buffer", data, "--bind", "0=data:x");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--bind 0=data:x: offset");
    run_free(&r);
}

/* --check names an access past a buffer's end (exit 1); --robust makes
 * one safe (a read there gives zero where the device has robustness2, as
 * kiln info says); both together are refused. */
TEST(run_check_and_robust)
{
    write_text("oob.comp", "#version 450\nlayout(local_size_x = 4) in;\n"
                           "layout(binding = 0) readonly buffer In { uint a[]; };\n"
                           "layout(binding = 1) writeonly buffer Out { uint b[]; };\n"
                           "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i + 60u]; }\n");
    char out[600];
    snprintf(out, sizeof out, "1=%s", P("oob_out.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("oob.comp"), "--check", "--groups", "4", "--buffer", "0=size:256:fill:7", "--buffer",
         "1=size:64");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "check: node 'run' (dispatch 0 of its submit) accessed byte ");
    CHECK_HAS(r, err, "of binding 0 of set 0, past the 256 bytes it reaches (0..255), by invocation (");
    run_free(&r);
    static const char *const robust_env[] = {"KILN_ROBUST=1", NULL};
    KILN(&r, robust_env, "info");
    CHECK_STATUS(r, 0);
    bool zeros = strstr(r.out, "robustBufferAccess2") != NULL;
    run_free(&r);
    KILN(&r, NULL, "run", P("oob.comp"), "--robust", "--groups", "4", "--buffer", "0=size:256:fill:7", "--buffer",
         "1=size:64", "--out", out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *got = READ_OUT("oob_out.bin", 64);
    for (uint32_t i = 0; got && zeros && i < 16; i++)
        CHECK_EQ(got[i], i < 4 ? 7u : 0u);   /* a[60..63] are in the buffer, the rest past it */
    free(got);
    KILN(&r, NULL, "run", P("oob.comp"), "--check", "--robust", "--buffer", "0=size:256", "--buffer", "1=size:64");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "check mode and robust access exclude each other");
    run_free(&r);
}

/* On a device with a loop budget (kiln info says so: lavapipe's 65535), a
 * loop whose count is a push word is named when kiln run compiles it; a
 * constant one is not. */
TEST(run_loop_warning)
{
    write_text("loops.comp", "#version 450\nlayout(local_size_x = 1) in;\n"
                             "layout(binding = 0) buffer B { uint v[]; };\n"
                             "void main() { uint s = 0u;\n"
                             "    for (uint i = 0u; i < 10u; i++) s += i;\n"
                             "    for (uint i = 0u; i < kiln_param(0); i++) s += 1u;\n"
                             "    v[0] = s; }\n");
    struct run r;
    KILN(&r, NULL, "info");
    CHECK_STATUS(r, 0);
    bool budget = strstr(r.out, "65535 iterations in all per invocation") != NULL;
    run_free(&r);
    KILN(&r, NULL, "run", P("loops.comp"), "--buffer", "0=size:4", "--param", "0=5", "-q");
    CHECK_STATUS(r, 0);
    if (budget)
        CHECK_HAS(r, err, "loops.comp: loop 2 of 2 (in main()) runs a count not known when it compiles");
    CHECK(!strstr(r.err, "loop 1 of 2"));
    run_free(&r);
}

/* Images of the shape the shader declares: an arrayed binding reads
 * WxHxL as layers (raw texels, the layers one after another), a cube
 * binding six faces, a 1D binding Wx1; each written and read back raw. */
TEST(run_image_shapes)
{
    write_text("layers.comp", "#version 450\nlayout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;\n"
                              "layout(binding = 0, r32ui) uniform uimage2DArray L;\n"
                              "layout(binding = 1, r32ui) uniform writeonly uimage1D Row;\n"
                              "layout(binding = 2) uniform samplerCube Sky;\n"
                              "void main() { ivec3 p = ivec3(gl_GlobalInvocationID);\n"
                              "    imageStore(L, p, imageLoad(L, p) * 2u + uint(p.z));\n"
                              "    if (p.y == 0 && p.z == 0)\n"
                              "        imageStore(Row, p.x, uvec4(uint(textureLod(Sky, vec3(0, 0, -1), 0.0).r)));\n"
                              "}\n");
    uint32_t in[2 * 2 * 3];
    for (uint32_t i = 0; i < 12; i++)
        in[i] = i + 1;
    write_file("layers.bin", in, sizeof in);
    float faces[6 * 4];
    for (int i = 0; i < 24; i++)
        faces[i] = (float)(i / 4 * 10);   /* face f holds 10 f: -Z is face 5 */
    write_file("faces.bin", faces, sizeof faces);
    char layers_in[600], layers_out[600], row_out[600], sky_in[600];
    snprintf(layers_in, sizeof layers_in, "0=%s:2x2x3:r32ui", P("layers.bin"));
    snprintf(layers_out, sizeof layers_out, "0=%s", P("layers_out.bin"));
    snprintf(row_out, sizeof row_out, "1=%s", P("row_out.bin"));
    snprintf(sky_in, sizeof sky_in, "2=%s:2x2:r32f", P("faces.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("layers.comp"), "--groups", "2,2,3", "--image", layers_in, "--image", "1=size:2x1",
         "--image", sky_in, "--sampler", "2=nearest", "--out-image", layers_out, "--out-image", row_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *got = READ_OUT("layers_out.bin", sizeof in), *row = READ_OUT("row_out.bin", 8);
    for (uint32_t i = 0; got && i < 12; i++)
        CHECK_EQ(got[i], in[i] * 2u + i / 4u);   /* layer i / 4 */
    for (uint32_t i = 0; row && i < 2; i++)
        CHECK_EQ(row[i], 50u);
    free(got);
    free(row);
    KILN(&r, NULL, "run", P("layers.comp"), "--image", layers_in, "--image", "1=size:2x1", "--image",
         "2=size:2x2x2");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "binding 2 is a cube image: give its six faces as size:WxW[:FORMAT]");
    run_free(&r);
}

/* --address: a shader writing through a buffer's device address (a
 * param word pair) into a named buffer, written out whole; a named buffer
 * no one uses and an address past the node's words are refused. */
TEST(run_buffer_address)
{
    write_text("addr.comp", "#version 450\n"
                            "#extension GL_EXT_buffer_reference : require\n"
                            "#extension GL_EXT_buffer_reference_uvec2 : require\n"
                            "layout(local_size_x = 4) in;\n"
                            "layout(buffer_reference, std430) buffer Table { uint v[]; };\n"
                            "layout(binding = 0) readonly buffer In { uint a[]; };\n"
                            "void main() { uint i = gl_GlobalInvocationID.x;\n"
                            "    Table t = Table(uvec2(kiln_param(2), kiln_param(3)));\n"
                            "    t.v[i] = a[i] + 1000u; }\n");
    uint32_t in[16];
    for (uint32_t i = 0; i < 16; i++)
        in[i] = i * 9u;
    write_file("addr_in.bin", in, sizeof in);
    char in_arg[600], out_arg[600];
    snprintf(in_arg, sizeof in_arg, "0=%s", P("addr_in.bin"));
    snprintf(out_arg, sizeof out_arg, "table=%s", P("table.bin"));
    struct run r;
    KILN(&r, NULL, "info");
    bool has = strstr(r.out, "bufferDeviceAddress") != NULL;
    run_free(&r);
    KILN(&r, NULL, "run", P("addr.comp"), "--groups", "4", "--buffer", in_arg, "--buffer", "table=size:64",
         "--address", "2=table", "--out", out_arg);
    if (!has) {
        CHECK_STATUS(r, 1);
        CHECK_HAS(r, err, "KILN_BUFFER_ADDRESS needs bufferDeviceAddress");
        run_free(&r);
        return;
    }
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *got = READ_OUT("table.bin", 64);
    for (uint32_t i = 0; got && i < 16; i++)
        CHECK_EQ(got[i], i * 9u + 1000u);
    free(got);
    KILN(&r, NULL, "run", P("addr.comp"), "--buffer", in_arg, "--buffer", "table=size:64", "--address", "7=table");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "words 7 and 8 are past the node's 8 param words");
    run_free(&r);
    KILN(&r, NULL, "run", P("addr.comp"), "--buffer", in_arg, "--address", "2=tabel");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "no buffer is named 'tabel'");
    run_free(&r);
}

/* A copy of one image into another in the format a shader declares. */
static void write_copy_shader(const char *name, const char *format, const char *prefix)
{
    char src[700];
    snprintf(src, sizeof src,
             "#version 450\n"
             "layout(local_size_x = 1, local_size_y = 1) in;\n"
             "layout(binding = 0, %s) uniform readonly %simage2D Src;\n"
             "layout(binding = 1, %s) uniform writeonly %simage2D Dst;\n"
             "void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy); imageStore(Dst, p, imageLoad(Src, p)); }\n",
             format, prefix, format, prefix);
    write_text(name, src);
}

/* Formats beyond the first round's: a PNG into rgb10_a2 and back out as
 * raw texels (the CPU's packing) and as a PNG (the bytes it came from);
 * raw r16ui texels in place; a PNG refused for a snorm format, naming the
 * formats a PNG converts to. */
TEST(run_image_formats)
{
    write_file("in.png", png_3x2, sizeof png_3x2 - 1);
    write_copy_shader("copy_rgb10a2.comp", "rgb10_a2", "");
    write_copy_shader("copy_r16ui.comp", "r16ui", "u");
    write_copy_shader("copy_snorm.comp", "rgba16_snorm", "");
    char in_png[600], raw_out[600], png_out[600], png_in2[600], raw_out2[600];
    snprintf(in_png, sizeof in_png, "0=%s", P("in.png"));
    snprintf(raw_out, sizeof raw_out, "1=%s", P("rgb10a2.bin"));
    snprintf(png_out, sizeof png_out, "1=%s", P("rgb10a2.png"));
    snprintf(png_in2, sizeof png_in2, "0=%s", P("rgb10a2.png"));
    snprintf(raw_out2, sizeof raw_out2, "1=%s", P("rgb10a2_again.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("copy_rgb10a2.comp"), "--groups", "3,2", "--image", in_png, "--image", "1=size:3x2",
         "--out-image", raw_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    KILN(&r, NULL, "run", P("copy_rgb10a2.comp"), "--groups", "3,2", "--image", in_png, "--image", "1=size:3x2",
         "--out-image", png_out);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *packed = READ_OUT("rgb10a2.bin", 6 * 4);
    for (int i = 0; packed && i < 6; i++) {
        uint32_t want = 0;
        for (int c = 0; c < 4; c++) {
            uint32_t byte = (uint32_t)((i * 4 + c) * 40 % 256), most = c < 3 ? 1023u : 3u;
            want |= (byte * most + 127u) / 255u << (10 * c);
        }
        CHECK_EQ(packed[i], want);
    }
    /* The PNG written holds the bytes read (rgb exactly; alpha in 2 bits),
     * so reading it again packs the same texels. */
    KILN(&r, NULL, "run", P("copy_rgb10a2.comp"), "--groups", "3,2", "--image", png_in2, "--image", "1=size:3x2", "--out-image",
         raw_out2);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *again = READ_OUT("rgb10a2_again.bin", 6 * 4);
    if (packed && again)
        CHECK(!memcmp(packed, again, 6 * 4));
    free(packed);
    free(again);

    uint16_t counts[8];
    for (int i = 0; i < 8; i++)
        counts[i] = (uint16_t)(i * 8191 + 5);
    write_file("counts16.bin", counts, sizeof counts);
    char raw_in[600], raw_back[600];
    snprintf(raw_in, sizeof raw_in, "0=%s:4x2:r16ui", P("counts16.bin"));
    snprintf(raw_back, sizeof raw_back, "1=%s", P("counts16_out.bin"));
    KILN(&r, NULL, "run", P("copy_r16ui.comp"), "--groups", "4,2", "--image", raw_in, "--image", "1=size:4x2", "--out-image", raw_back);
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint16_t *c16 = READ_OUT("counts16_out.bin", sizeof counts);
    if (c16)
        CHECK(!memcmp(c16, counts, sizeof counts));
    free(c16);

    KILN(&r, NULL, "run", P("copy_snorm.comp"), "--image", in_png, "--image", "1=size:3x2");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "not rgba16_snorm; give rgba16_snorm's raw texels");
    CHECK_HAS(r, err, "rgb10_a2");
    run_free(&r);
}

/* size:BYTES with a fill and BYTES not a multiple of 4: the word's byte
 * pattern repeats and stops short; --out writes every byte. */
static const char tail_src[] =
    "#version 450\n"
    "layout(local_size_x = 1) in;\n"
    "layout(binding = 0) buffer Data { uint d[]; };\n"
    "void main() { d[1] = d[0] + 1u; }\n";

/* --trace FILE.json on run and demo: a Chrome trace with the run's
 * compiles and submits. */
TEST(run_and_demo_trace)
{
    /* A trace is written by the runtime that runs the context: this
     * process's here (a server writes its own), so these run locally. */
    char *remote = getenv("KILN_REMOTE") ? strdup(getenv("KILN_REMOTE")) : NULL;
    unsetenv("KILN_REMOTE");
    write_text("tail.comp", tail_src);
    char trace_arg[600], demo_png[600];
    snprintf(trace_arg, sizeof trace_arg, "%s", P("run.json"));
    snprintf(demo_png, sizeof demo_png, "%s", P("demo.png"));
    struct run r;
    KILN(&r, NULL, "run", P("tail.comp"), "--buffer", "0=size:8", "--frames", "3", "--trace", trace_arg);
    CHECK_STATUS(r, 0);
    run_free(&r);
    char *json = read_path(trace_arg, NULL);
    CHECK(json && !strncmp(json, "{\"traceEvents\":[", 16) && strstr(json, "\"cat\":\"compile\"") &&
          strstr(json, "\"cat\":\"submit\"") && strstr(json, "tail.comp"));
    free(json);
    snprintf(trace_arg, sizeof trace_arg, "%s", P("demo.json"));
    KILN(&r, NULL, "demo", "--frames", "4", "--size", "64x64", "--out", demo_png, "--trace", trace_arg);
    CHECK_STATUS(r, 0);
    run_free(&r);
    json = read_path(trace_arg, NULL);
    CHECK(json && strstr(json, "\"cat\":\"device\"") && strstr(json, "demo_blur"));
    free(json);
    KILN(&r, NULL, "run", P("tail.comp"), "--buffer", "0=size:8", "--trace", "");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--trace: expected a file name");
    run_free(&r);
    if (remote)
        setenv("KILN_REMOTE", remote, 1);
    free(remote);
}

TEST(run_fill_odd_size)
{
    write_text("tail.comp", tail_src);
    char out_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("tail.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("tail.comp"), "--buffer", "0=size:10:fill:0x11223344", "--out", out_arg);
    CHECK_STATUS(r, 0);
    uint8_t *got = READ_OUT("tail.bin", 10);
    if (got) {
        const uint8_t want[10] = {0x44, 0x33, 0x22, 0x11, 0x45, 0x33, 0x22, 0x11, 0x44, 0x33};
        CHECK(!memcmp(got, want, 10));
    }
    free(got);
    run_free(&r);
}

/* ---- errors --------------------------------------------------------------------------------- */

/* A #version too old for compute fails naming its line, and nothing but
 * kiln's own output reaches stdout (the compiler would print its whole
 * built-in table there for some of them). */
TEST(run_old_version_fails_with_stdout_clean)
{
    write_text("old.comp", "#version 110\nvoid main() {}\n");
    struct run r;
    KILN(&r, NULL, "run", P("old.comp"), "--buffer", "0=size:4");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "old.comp:1: error: '#version'");
    CHECK(r.out && r.out[0] == 0);
    run_free(&r);
}

TEST(run_compile_error_names_line)
{
    /* line 6: an undeclared name; line 8: a syntax error in a second shader */
    write_text("undeclared.comp", "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(binding = 0) buffer Data { uint d[]; };\n"
                                  "void main() {\n"
                                  "    uint i = 0u;\n"
                                  "    d[i] = no_such_name;\n"
                                  "}\n");
    write_text("syntax.comp", "// a comment first\n"
                              "#version 450\n"
                              "layout(local_size_x = 1) in;\n"
                              "layout(binding = 0) buffer Data { uint d[]; };\n"
                              "\n"
                              "void main() {\n"
                              "    uint x = 1u;\n"
                              "    d[0] = x x;\n"
                              "}\n");
    struct run r;
    char where[600];
    KILN(&r, NULL, "run", P("undeclared.comp"), "--buffer", "0=size:4");
    CHECK_STATUS(r, 1);
    snprintf(where, sizeof where, "%s:6:", P("undeclared.comp"));
    CHECK_HAS(r, err, where);
    CHECK_HAS(r, err, "no_such_name");
    CHECK(!strstr(r.err, "kiln: ran"));
    run_free(&r);
    KILN(&r, NULL, "run", P("syntax.comp"), "--buffer", "0=size:4");
    CHECK_STATUS(r, 1);
    snprintf(where, sizeof where, "%s:8:", P("syntax.comp"));
    CHECK_HAS(r, err, where);
    CHECK_HAS(r, err, "syntax error");
    run_free(&r);
}

struct bad_case {
    const char *args[8];
    const char *needle;   /* the message must name this */
};

TEST(run_bad_arguments)
{
    write_text("ok.comp", tail_src);
    write_file("four.bin", "abcd", 4);
    write_file("empty.bin", "", 0);
    char sh[512], four[600], empty[600], nodir[512];
    snprintf(sh, sizeof sh, "%s", P("ok.comp"));
    snprintf(four, sizeof four, "0=%s", P("four.bin"));
    snprintf(empty, sizeof empty, "0=%s", P("empty.bin"));
    snprintf(nodir, sizeof nodir, "%s", P("no/such/dir/x.comp"));
    const struct bad_case cases[] = {
        {{"--groups", "0"}, "--groups 0"},
        {{"--groups", "1,0"}, "--groups 1,0"},
        {{"--groups", "1,2,3,4"}, "--groups 1,2,3,4"},
        {{"--groups", "x"}, "--groups x"},
        {{"--groups", "1,,2"}, "--groups 1,,2"},
        {{"--groups"}, "--groups needs a value"},
        {{"--param", "9=1"}, "--param 9=1"},
        {{"--param", "0=zz"}, "'zz'"},
        {{"--param", "0=1.5x"}, "'1.5x'"},
        {{"--param", "1"}, "--param 1"},
        {{"--param", "0=1", "--param", "0=2"}, "given twice"},
        {{"--buffer", "0=nosuchfile"}, "nosuchfile"},
        {{"--buffer", empty}, "empty"},
        {{"--buffer", "0=size:0"}, "0=size:0"},
        {{"--buffer", "0=size:lots"}, "'lots'"},
        {{"--buffer", "0=size:16:fill:xyz"}, "'xyz'"},
        {{"--buffer", "x=size:16"}, "x=size:16"},
        {{"--buffer", four, "--buffer", "0=size:8"}, "binding 0 is given twice"},
        {{"--buffer", four, "--out", "1=o.bin"}, "--out 1=o.bin"},
        {{"--buffer", four, "--out", "0=a", "--out", "0=b"}, "--out 0=b"},
        {{"--frames", "0"}, "--frames 0"},
        {{"--frames", "-3"}, "--frames -3"},
        {{"--define", "9X=1"}, "'9X'"},
        {{"--define", "=1"}, "--define =1"},
        {{"--entry", "not-a-name"}, "--entry not-a-name"},
        {{"--bogus"}, "'--bogus'"},
        {{"--quiet=1"}, "takes no value"},
        {{"another.comp"}, "'another.comp'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *argv[12] = {"run", sh};
        for (int i = 0; i < 8 && cases[c].args[i]; i++)
            argv[2 + i] = cases[c].args[i];
        struct run r;
        kiln_run_(__FILE__, __LINE__, &r, NULL, argv);
        CHECK_STATUS(r, 2);
        CHECK_HAS(r, err, cases[c].needle);
        CHECK_HAS(r, err, "usage: kiln run");
        run_free(&r);
    }
    /* no shader; a shader that cannot be read */
    struct run r;
    KILN(&r, NULL, "run");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "no SHADER.comp");
    run_free(&r);
    KILN(&r, NULL, "run", nodir, "--buffer", four);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, nodir);
    run_free(&r);
    /* an --out file that cannot be written is a run failure, named */
    char out_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", nodir);
    KILN(&r, NULL, "run", sh, "--buffer", four, "--out", out_arg, "-q");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, nodir);
    run_free(&r);
}

static const char two_bindings_src[] =
    "#version 450\n"
    "layout(local_size_x = 1) in;\n"
    "layout(binding = 0) readonly buffer In { uint x[]; };\n"
    "layout(binding = 1) writeonly buffer Out { uint y[]; };\n"
    "void main() { y[0] = x[0]; }\n";

TEST(run_binding_errors)
{
    write_text("two.comp", two_bindings_src);
    char sh[512];
    snprintf(sh, sizeof sh, "%s", P("two.comp"));
    struct run r;
    /* binding 1 declared, not given */
    KILN(&r, NULL, "run", sh, "--buffer", "0=size:4");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 1");
    CHECK_HAS(r, err, "nothing is bound");
    run_free(&r);
    /* nothing given at all: the first missing one is named */
    KILN(&r, NULL, "run", sh);
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 0");
    run_free(&r);
    /* a binding given that the shader does not declare */
    KILN(&r, NULL, "run", sh, "--buffer", "0=size:4", "--buffer", "1=size:4", "--buffer", "5=size:4");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 5");
    CHECK_HAS(r, err, "not declared");
    run_free(&r);
}

TEST(run_groups_over_device_limit)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);
    int d = 0;
    for (int i = 1; i < 3; i++)
        if (caps.max_workgroup_count[i] < caps.max_workgroup_count[d])
            d = i;
    if (caps.max_workgroup_count[d] == UINT32_MAX) {
        printf("     (skipped: %s allows 2^32-1 workgroups in every dimension)\n", caps.device_name);
        return;
    }
    uint32_t g[3] = {1, 1, 1};
    g[d] = caps.max_workgroup_count[d] + 1;
    char groups[64], limit[32];
    snprintf(groups, sizeof groups, "%u,%u,%u", g[0], g[1], g[2]);
    snprintf(limit, sizeof limit, "at most %u", caps.max_workgroup_count[d]);
    write_text("limit.comp", tail_src);
    struct run r;
    KILN(&r, NULL, "run", P("limit.comp"), "--groups", groups, "--buffer", "0=size:8");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--groups");
    CHECK_HAS(r, err, limit);
    run_free(&r);
}

/* ---- info and help ------------------------------------------------------------------------------- */

/* The text after "  label" on its line of `kiln info`, trimmed; false if
 * no line starts so. */
static bool field_value(const char *text, const char *label, char *buf, size_t cap)
{
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *l = line;
        while (*l == ' ')
            l++;
        if (strncmp(l, label, strlen(label)))
            continue;
        l += strlen(label);
        while (*l == ' ')
            l++;
        size_t n = strcspn(l, "\n");
        while (n && l[n - 1] == ' ')
            n--;
        snprintf(buf, cap, "%.*s", (int)n, l);
        return true;
    }
    return false;
}

TEST(info_prints_devices_and_caps)
{
    struct run r;
    KILN(&r, NULL, "info");
    CHECK_STATUS(r, 0);
    kiln_device_info dev;
    uint32_t count = 0;
    CHECK_OK(kiln_devices(&dev, 1, &count));
    CHECK(count >= 1);
    if (count)
        CHECK_HAS(r, out, dev.name);   /* device 0 is listed by name */
    static const char *const fields[] = {"devices:", "device name:", "driver name:", "driver info:",
                                         "api version:", "driver version:", "subgroup size:",
                                         "max workgroup count:", "max workgroup size:",
                                         "max workgroup invocations:", "max storage buffer range:",
                                         "max push constants:", "min storage buffer offset alignment:",
                                         "min uniform buffer offset alignment:", "pipeline cache uuid:",
                                         "unified memory:", "validation:"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK_HAS(r, out, fields[i]);
    const char *v = getenv("KILN_VALIDATION");
    if (v && !strcmp(v, "1")) {
        char value[64];
        CHECK(field_value(r.out, "validation:", value, sizeof value) && !strcmp(value, "on"));
    }
    /* the caps printed are the context's */
    kiln_context ctx;
    if (test_context(&ctx) == KILN_OK) {
        kiln_caps caps;
        if (kiln_context_caps(ctx, &caps) == KILN_OK) {
            char want[128];
            snprintf(want, sizeof want, "%u x %u x %u", caps.max_workgroup_count[0], caps.max_workgroup_count[1],
                     caps.max_workgroup_count[2]);
            CHECK_HAS(r, out, want);
            CHECK_HAS(r, out, caps.device_name);
        }
        test_context_done(ctx);
    }
    run_free(&r);

    KILN(&r, ((const char *[]){"KILN_DEVICE=no-such-device-anywhere", NULL}), "info");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "no-such-device-anywhere");
    CHECK_HAS(r, err, "devices seen");
    run_free(&r);

    KILN(&r, NULL, "info", "--bogus");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--bogus");
    run_free(&r);
}

TEST(help_texts)
{
    struct run r;
    KILN(&r, NULL, "run", "--help");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "--buffer B=size:BYTES");
    CHECK_HAS(r, out, "--frames N");
    run_free(&r);
    KILN(&r, NULL, "info", "--help");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "usage: kiln info");
    run_free(&r);
    KILN(&r, NULL, "help");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "run SHADER.comp");
    run_free(&r);
}

/* ---- numbers, input files, outputs, version ------------------------------------------------ */

/* Words and sizes go through the parsers the environment switches use
 * (base/parse.h): a float without an f suffix, negative words as two's
 * complement, sizes with K..T; 'f', '1.2.3' and overflows are refused by
 * name before anything runs. */
TEST(run_words_and_sizes)
{
    write_text("words2.comp", words_src);
    float x[4] = {1, 2, 3, 4};
    write_file("x2.bin", x, sizeof x);
    char x_arg[600], out_arg[600];
    snprintf(x_arg, sizeof x_arg, "0=%s", P("x2.bin"));
    snprintf(out_arg, sizeof out_arg, "1=%s", P("words2_out.bin"));
    struct run r;
    KILN(&r, NULL, "run", P("words2.comp"), "--param", "0=1.5", "--param", "1=-1", "--param", "2=-2e3", "--param",
         "3=inf", "--param", "4=1f", "--param", "5=0x1f", "--param", "6=-2147483648", "--param", "7=010",
         "--buffer", x_arg, "--buffer", "1=size:1K", "--out", out_arg, "-q");
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *got = READ_OUT("words2_out.bin", 1024);   /* 1K is 1024 bytes */
    if (got) {
        CHECK_EQ(got[0], f2u(1.5f));
        CHECK_EQ(got[1], 0xffffffffu);
        CHECK_EQ(got[2], f2u(-2000.0f));
        CHECK_EQ(got[3], f2u(INFINITY));
        CHECK_EQ(got[4], f2u(1.0f));
        CHECK_EQ(got[5], 0x1f);
        CHECK_EQ(got[6], 0x80000000u);
        CHECK_EQ(got[7], 10);   /* decimal, not octal */
        CHECK_EQ(got[8], f2u(1.0f * 1.5f - 1.0f));
    }
    free(got);

    /* Refused, exit 2, naming the text and why; a shader that does not
     * compile shows they are refused before the compile. */
    write_text("broken.comp", "#version 450\nvoid main() { nonsense }\n");
    const struct bad_case cases[] = {
        {{"--param", "0=f"}, "'f' is not a word"},
        {{"--param", "0="}, "'' is not a word"},
        {{"--param", "0=1.2.3"}, "'1.2.3' is not a word"},
        {{"--param", "0=4294967296"}, "more than 4294967295"},
        {{"--param", "0=-2147483649"}, "less than -2147483648"},
        {{"--param", "0=1e39"}, "float range"},
        {{"--buffer", "0=size:99999999999999999999"}, "more than 18446744073709551615"},
        {{"--buffer", "0=size:-1"}, "negative"},
        {{"--buffer", "0=size:5Q"}, "'Q' follows"},
        {{"--buffer", "0=size:8:fill:f"}, "'f' is not a word"},
        {{"--frames", "4294967295"}, "from 1 to 10000000"},
        {{"--frames", "99999999999999999999"}, "more than 18446744073709551615"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *argv[12] = {"run", P("broken.comp")};
        for (int i = 0; i < 8 && cases[c].args[i]; i++)
            argv[2 + i] = cases[c].args[i];
        kiln_run_(__FILE__, __LINE__, &r, NULL, argv);
        CHECK_STATUS(r, 2);
        CHECK_HAS(r, err, cases[c].needle);
        run_free(&r);
    }
    /* A size past what a binding of the device holds is refused by name. */
    KILN(&r, NULL, "run", P("words2.comp"), "--buffer", "0=size:5T", "--buffer", "1=size:64");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "max storage buffer range");
    run_free(&r);

    /* archive gc --max-size: the same size parser as KILN_ARCHIVE_MAX_SIZE. */
    char env_dir[700];
    snprintf(env_dir, sizeof env_dir, "KILN_ARCHIVE_DIR=%s/arc-sizes", tmp_dir);
    const char *env[] = {"KILN_ARCHIVE=1", env_dir, NULL};
    KILN(&r, env, "archive", "gc", "--max-size", "99999999999999999999");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "more than 18446744073709551615");
    run_free(&r);
    KILN(&r, env, "archive", "gc", "--max-size", "5T");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "gc:");
    run_free(&r);
}

/* Input files are read with a bound: a folder is refused by name, an
 * endless device and a regular file past the device's storage buffer range
 * are refused without being read whole, a FIFO nobody writes is not waited
 * on. */
TEST(run_input_files_bounded)
{
    write_text("in.comp", tail_src);
    char sh[512], arg[700];
    snprintf(sh, sizeof sh, "%s", P("in.comp"));
    mkdir(P("a_folder"), 0755);
    struct run r;
    snprintf(arg, sizeof arg, "0=%s", P("a_folder"));
    KILN(&r, NULL, "run", sh, "--buffer", arg);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "a_folder': is a directory");
    run_free(&r);

    KILN(&r, NULL, "run", sh, "--buffer", "0=/dev/zero");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "'/dev/zero' gives more than the");
    run_free(&r);

    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);
    /* A sparse file one byte past the range: no disk space used. */
    int fd = open(P("huge.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && ftruncate(fd, (off_t)caps.max_storage_buffer_range + 1) == 0);
    if (fd >= 0)
        close(fd);
    snprintf(arg, sizeof arg, "0=%s", P("huge.bin"));
    KILN(&r, NULL, "run", sh, "--buffer", arg);
    CHECK_STATUS(r, 2);
    char want[96];
    snprintf(want, sizeof want, "holds %llu bytes, more than the %u", (unsigned long long)caps.max_storage_buffer_range + 1,
             caps.max_storage_buffer_range);
    CHECK_HAS(r, err, want);
    run_free(&r);
    unlink(P("huge.bin"));

    CHECK_EQ(mkfifo(P("fifo"), 0644), 0);
    snprintf(arg, sizeof arg, "0=%s", P("fifo"));
    KILN(&r, NULL, "run", sh, "--buffer", arg);
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "is empty");
    run_free(&r);
    unlink(P("fifo"));
}

/* Runs `kiln ARGS...` under a file size limit of `blocks` 512-byte blocks
 * (sh's ulimit -f), as KILN does otherwise. */
#define KILN_FSIZE(r, blocks, ...) kiln_fsize_(__FILE__, __LINE__, (r), (blocks), (const char *const[]){__VA_ARGS__, NULL})
static void kiln_fsize_(const char *file, int line, struct run *r, int blocks, const char *const *args)
{
    char script[96];
    snprintf(script, sizeof script, "ulimit -f %d && exec \"$0\" \"$@\"", blocks);
    const char *argv[64] = {"-c", script, kiln_bin};
    int n = 3;
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *bin = kiln_bin;
    kiln_bin = "/bin/sh";
    kiln_run_(file, line, r, NULL, argv);
    kiln_bin = bin;
}

/* Whether the test folder holds a file whose name contains `part`. */
static bool folder_has(const char *part)
{
    DIR *d = opendir(tmp_dir);
    bool found = false;
    for (struct dirent *e; d && (e = readdir(d));)
        found |= strstr(e->d_name, part) != NULL;
    if (d)
        closedir(d);
    return found;
}

static const char add_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) buffer Data { uint d[]; };\n"
    "void main() { uint i = gl_GlobalInvocationID.x; if (i < d.length()) d[i] += kiln_param(0); }\n";

/* Outputs replace their file only once complete: --out onto the input
 * round-trips, a failed write (file size limit) leaves the old content and
 * no temporary file, and a device such as /dev/full is written in place,
 * its failure reported, the device never removed. */
TEST(outputs_written_safely)
{
    enum { N = 16384 };   /* 64 KiB */
    static uint32_t data[N];
    for (int i = 0; i < N; i++)
        data[i] = rnd();
    write_text("add.comp", add_src);
    write_file("p.bin", data, sizeof data);
    char sh[512], in_arg[600], out_arg[600];
    snprintf(sh, sizeof sh, "%s", P("add.comp"));
    snprintf(in_arg, sizeof in_arg, "0=%s", P("p.bin"));
    snprintf(out_arg, sizeof out_arg, "0=%s", P("p.bin"));
    chmod(P("p.bin"), 0640);
    struct run r;
    KILN(&r, NULL, "run", sh, "--groups", "256", "--param", "0=3", "--buffer", in_arg, "--out", out_arg, "-q");
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *got = READ_OUT("p.bin", sizeof data);
    if (got) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += got[i] != data[i] + 3u;
        CHECK_EQ(bad, 0);
        memcpy(data, got, sizeof data);
    }
    free(got);
    struct stat st;
    CHECK(stat(P("p.bin"), &st) == 0 && (st.st_mode & 07777) == 0640);   /* its mode kept */

    /* 8 KiB allowed, 64 KiB to write: the write fails, p.bin is untouched. */
    KILN_FSIZE(&r, 16, "run", sh, "--groups", "256", "--param", "0=5", "--buffer", in_arg, "--out", out_arg);
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "File too large");
    CHECK_HAS(r, err, "p.bin");
    run_free(&r);
    got = READ_OUT("p.bin", sizeof data);
    CHECK(got && !memcmp(got, data, sizeof data));
    free(got);
    CHECK(!folder_has(".kiln-"));   /* its temporary file removed */

    /* The same for demo's PNG. */
    write_text("old.png", "old content");
    KILN_FSIZE(&r, 16, "demo", "--frames", "1", "--size", "256x256", "--out", P("old.png"));
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "cannot write");
    CHECK_HAS(r, err, "File too large");
    run_free(&r);
    char *old = read_path(P("old.png"), NULL);
    CHECK(old && !strcmp(old, "old content"));
    free(old);
    CHECK(!folder_has(".kiln-"));

    /* A folder as --out is refused and stays. */
    mkdir(P("out_folder"), 0755);
    snprintf(out_arg, sizeof out_arg, "0=%s", P("out_folder"));
    KILN(&r, NULL, "run", sh, "--buffer", in_arg, "--out", out_arg, "-q");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "out_folder: is a directory");
    run_free(&r);
    CHECK(stat(P("out_folder"), &st) == 0 && S_ISDIR(st.st_mode));

    /* A full device: a copy of /dev/full where we may make one (root), else
     * /dev/full itself (which only root could have removed). */
    char full[512];
    snprintf(full, sizeof full, "%s", P("full"));
    if (mknod(full, S_IFCHR | 0666, makedev(1, 7)) != 0)
        snprintf(full, sizeof full, "/dev/full");
    if (stat(full, &st) != 0 || !S_ISCHR(st.st_mode)) {
        printf("     (no full device here: that part is skipped)\n");
        return;
    }
    snprintf(out_arg, sizeof out_arg, "0=%s", full);
    KILN(&r, NULL, "run", sh, "--buffer", in_arg, "--out", out_arg, "-q");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "No space left on device");
    run_free(&r);
    CHECK(stat(full, &st) == 0 && S_ISCHR(st.st_mode));
    KILN(&r, NULL, "demo", "--frames", "1", "--size", "16x16", "--out", full);
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "No space left on device");
    run_free(&r);
    CHECK(stat(full, &st) == 0 && S_ISCHR(st.st_mode));   /* still there, still a device */
    /* /dev/null takes the PNG in place. */
    KILN(&r, NULL, "demo", "--frames", "1", "--size", "16x16", "--out", "/dev/null");
    CHECK_STATUS(r, 0);
    run_free(&r);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
}

TEST(version_and_help)
{
    char ver[32], want[64];
    snprintf(ver, sizeof ver, "%d.%d.%d", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH);
    CHECK(!strcmp(kiln_version(), ver));
    snprintf(want, sizeof want, "kiln %s\n", ver);
    static const char *const forms[] = {"--version", "version"};
    for (int i = 0; i < 2; i++) {
        struct run r;
        KILN(&r, NULL, forms[i]);
        CHECK_STATUS(r, 0);
        CHECK(!strncmp(r.out, want, strlen(want)));   /* then what it is built with and runs on */
        CHECK_HAS(r, out, "  Vulkan loader ");
        CHECK_HAS(r, out, "  shaderc ");
        kiln_build_info bi;
        CHECK_OK(kiln_build_info_get(&bi));
        CHECK(!strcmp(bi.kiln, ver) && bi.vulkan_headers[0] && bi.spirv[0]);
        if (bi.vulkan_loader[0]) {
            char loader[64];
            snprintf(loader, sizeof loader, "Vulkan loader %s", bi.vulkan_loader);
            CHECK_HAS(r, out, loader);
        }
        run_free(&r);
    }
    struct run r;
    KILN(&r, NULL, "help", "run");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "usage: kiln run");
    CHECK_HAS(r, out, "--buffer B=size:BYTES");
    run_free(&r);
    KILN(&r, NULL, "help", "archive");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, out, "usage: kiln archive");
    run_free(&r);
    KILN(&r, NULL, "help", "nonsense");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "no command 'nonsense'");
    run_free(&r);
}

/* ---- bindings as shaders declare them: S.B and B[E] ------------------------------------------ */

/* Binding 0 seen as packed halves and as floats, in the style of a large
 * kernel library: each invocation reads its two halves and writes their
 * sum over them as one float. Set 2's binding 3 holds a copy; set 1 is
 * empty. */
static const char views_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(binding = 0) readonly buffer Packed { float16_t h[]; };\n"
    "layout(binding = 0) writeonly buffer Full { float f[]; };\n"
    "layout(set = 2, binding = 3) writeonly buffer Copy { float c[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    float s = float(h[2u * i]) + float(h[2u * i + 1u]);\n"
    "    f[i] = s;\n"
    "    c[i] = s;\n"
    "}\n";

/* An array of blocks in set 1, and the sum written to set 0. */
static const char parts_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(set = 1, binding = 0) readonly buffer Parts { uint v[]; } parts[4];\n"
    "layout(binding = 1) writeonly buffer Sum { uint s[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    s[i] = parts[0].v[i] + 10u * parts[1].v[i] + 100u * parts[2].v[i] + 1000u * parts[3].v[i];\n"
    "}\n";

/* Texel buffers: a storage one with its format in the shader, a uniform
 * one whose format --texel-format gives. */
static const char texel_src[] =
    "#version 450\n"
    "#extension GL_EXT_samplerless_texture_functions : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(set = 1, binding = 0) uniform textureBuffer scale;\n"
    "layout(binding = 0, r32f) uniform imageBuffer data;\n"
    "void main() {\n"
    "    int i = int(gl_GlobalInvocationID.x);\n"
    "    imageStore(data, i, imageLoad(data, i) * texelFetch(scale, i % 4).x);\n"
    "}\n";

static uint16_t to_half(float f)   /* for values a half holds exactly */
{
    if (f == 0)
        return 0;
    uint32_t u = f2u(f);
    return (uint16_t)(((u >> 16) & 0x8000) | (uint32_t)((int)((u >> 23) & 0xff) - 112) << 10 | ((u >> 13) & 0x3ff));
}

TEST(run_bindings_as_declared)
{
    enum { N = 128 };
    struct run r;
    char a0[600], a1[600], a2[600], a3[600], a4[600], o0[600], o1[600];

    /* Two views of binding 0 and a binding in set 2 (S.B). */
    uint16_t halves[2 * N];
    float want[N];
    for (int i = 0; i < N; i++) {
        float x = (float)(i % 50 - 25) * 0.5f, y = (float)(i % 7) * 0.25f;
        halves[2 * i] = to_half(x);
        halves[2 * i + 1] = to_half(y);
        want[i] = x + y;
    }
    write_text("views.comp", views_src);
    write_file("halves.bin", halves, sizeof halves);
    snprintf(a0, sizeof a0, "0=%s", P("halves.bin"));
    snprintf(o0, sizeof o0, "0=%s", P("floats.bin"));
    snprintf(o1, sizeof o1, "2.3=%s", P("copy.bin"));
    KILN(&r, NULL, "run", P("views.comp"), "--buffer", a0, "--buffer", "2.3=size:512", "--out", o0, "--out", o1,
         "--groups", "2");
    CHECK_STATUS(r, 0);
    run_free(&r);
    float *f = READ_OUT("floats.bin", sizeof want), *c = READ_OUT("copy.bin", sizeof want);
    if (f && c) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += f[i] != want[i] || c[i] != want[i];
        CHECK_EQ(bad, 0);
    }
    free(f);
    free(c);

    /* An array of blocks in set 1: S.B[E], one --buffer per element. */
    uint32_t v[4][N];
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < N; i++)
            v[k][i] = (uint32_t)(i + k) % 10;
        char name[32];
        snprintf(name, sizeof name, "part%d.bin", k);
        write_file(name, v[k], sizeof v[k]);
    }
    write_text("parts.comp", parts_src);
    snprintf(a0, sizeof a0, "1.0[0]=%s", P("part0.bin"));
    snprintf(a1, sizeof a1, "1.0[1]=%s", P("part1.bin"));
    snprintf(a2, sizeof a2, "1.0[2]=%s", P("part2.bin"));
    snprintf(a3, sizeof a3, "1.0[3]=%s", P("part3.bin"));
    snprintf(o0, sizeof o0, "1=%s", P("sum.bin"));
    KILN(&r, NULL, "run", P("parts.comp"), "--buffer", a2, "--buffer", a0, "--buffer", a3, "--buffer", a1,
         "--buffer", "0.1=size:512", "--out", o0, "--groups", "2");
    CHECK_STATUS(r, 0);
    run_free(&r);
    uint32_t *sum = READ_OUT("sum.bin", N * 4);
    if (sum) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += sum[i] != v[0][i] + 10 * v[1][i] + 100 * v[2][i] + 1000 * v[3][i];
        CHECK_EQ(bad, 0);
    }
    free(sum);
    /* An element not given is named, and what the shader declares is listed. */
    KILN(&r, NULL, "run", P("parts.comp"), "--buffer", a0, "--buffer", a1, "--buffer", a3, "--buffer",
         "1=size:512");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "declares binding 0 of set 1 ('Parts') as an array of 4; element 2 is not bound");
    CHECK_HAS(r, err, "binding 1.0 'Parts' (storage read-only, an array of 4: [0] to [3])");
    CHECK_HAS(r, err, "given by --buffer: 1.0 (512 bytes), 1.0[1] (512 bytes), 1.0[3] (512 bytes), 1 (512 bytes)");
    run_free(&r);
    /* A set's binding given in set 0. */
    KILN(&r, NULL, "run", P("parts.comp"), "--buffer", "0=size:512", "--buffer", "1=size:512");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 0 is not declared by program");
    run_free(&r);

    /* Texel buffers: the storage one's format from the shader, the
     * uniform one's from --texel-format. */
    float data[N], scale[4] = {2.0f, -1.0f, 0.5f, 4.0f};
    for (int i = 0; i < N; i++)
        data[i] = (float)i - 60.0f;
    write_text("texel.comp", texel_src);
    write_file("data.bin", data, sizeof data);
    write_file("scale.bin", scale, sizeof scale);
    snprintf(a0, sizeof a0, "0=%s", P("data.bin"));
    snprintf(a4, sizeof a4, "1.0=%s", P("scale.bin"));
    snprintf(o0, sizeof o0, "0=%s", P("scaled.bin"));
    KILN(&r, NULL, "run", P("texel.comp"), "--buffer", a0, "--buffer", a4, "--texel-format", "1.0=r32f", "--out", o0,
         "--groups", "2");
    CHECK_STATUS(r, 0);
    run_free(&r);
    float *scaled = READ_OUT("scaled.bin", sizeof data);
    if (scaled) {
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += scaled[i] != data[i] * scale[i % 4];
        CHECK_EQ(bad, 0);
    }
    free(scaled);
    /* Without --texel-format the uniform texel buffer has no format. */
    KILN(&r, NULL, "run", P("texel.comp"), "--buffer", a0, "--buffer", a4, "-q");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 0 of set 1 ('scale') is a uniform texel buffer bound without a format");
    CHECK_HAS(r, err, "binding 0 'data' (storage texel buffer r32f read-write)");
    run_free(&r);

    /* A storage and a uniform block on one binding fail the compile by name. */
    write_text("mix.comp", "#version 450\nlayout(local_size_x = 1) in;\n"
                           "layout(set = 1, binding = 0) buffer S { uint s[]; };\n"
                           "layout(set = 1, binding = 0) uniform U { uint u; };\n"
                           "void main() { s[0] = u; }\n");
    KILN(&r, NULL, "run", P("mix.comp"), "--buffer", "1.0=size:16");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "binding 0 of set 1 is declared as a storage buffer ('S') and as a uniform buffer ('U')");
    run_free(&r);

    /* Bad sites and formats are refused before any run (exit 2). */
    static const char *const bad_args[][3] = {
        {"--buffer", "1.=size:4", "expected B=FILE"},
        {"--buffer", "1.2[=size:4", "expected B=FILE"},
        {"--out", "x.1=o.bin", "expected B=FILE"},
        {"--texel-format", "0=rgb9", "'rgb9' is not a format kiln knows (r32f, r32ui"},
        {"--texel-format", "3=r32f", "binding 3 has no --buffer"},
        {"--buffer", "1.0[2]=size:4", "binding 1.0[2] is given twice"},
    };
    for (size_t k = 0; k < sizeof bad_args / sizeof bad_args[0]; k++) {
        KILN(&r, NULL, "run", P("texel.comp"), "--buffer", "1.0[2]=size:4", bad_args[k][0], bad_args[k][1]);
        CHECK_STATUS(r, 2);
        CHECK_HAS(r, err, bad_args[k][2]);
        run_free(&r);
    }
}

/* --spec ID=VALUE: each value read by its constant's declared type (the
 * workgroup size by local_size_x_id, a loop bound, a float rate as a
 * decimal and as its bits, a bool), checked against the CPU with
 * workgroups of 256 and 64; constants left at their defaults named in a
 * note, once each; a wrong id and values their types cannot hold refused
 * by name. */
static const char spec_src[] = "#version 450\n"
                               "layout(local_size_x_id = 0) in;\n"
                               "layout(constant_id = 1) const uint STEPS = 1;\n"
                               "layout(constant_id = 2) const float RATE = 0.0;\n"
                               "layout(constant_id = 3) const bool NEGATE = false;\n"
                               "layout(std430, binding = 0) buffer Data { float v[]; };\n"
                               "layout(std430, binding = 1) writeonly buffer Who { uint who[]; };\n"
                               "void main() {\n"
                               "    uint i = gl_GlobalInvocationID.x;\n"
                               "    precise float x = v[i];\n"
                               "    for (uint k = 0u; k < STEPS; k++)\n"
                               "        x = x * RATE + 1.0;\n"
                               "    v[i] = NEGATE ? -x : x;\n"
                               "    who[i] = gl_WorkGroupSize.x;\n"
                               "}\n";

static float spec_cpu(uint32_t i, uint32_t steps, float rate, bool negate)
{
    float x = (float)i * 0.25f;
    for (uint32_t k = 0; k < steps; k++)
        x = x * rate + 1.0f;
    return negate ? -x : x;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

TEST(run_spec_constants)
{
    enum { M = 1024 };
    write_text("spec.comp", spec_src);
    float in[M];
    for (uint32_t i = 0; i < M; i++)
        in[i] = (float)i * 0.25f;
    write_file("spec_in.bin", in, sizeof in);
    char in_arg[600], out_arg[600], who_arg[600];
    snprintf(in_arg, sizeof in_arg, "0=%s", P("spec_in.bin"));
    snprintf(out_arg, sizeof out_arg, "0=%s", P("spec_out.bin"));
    snprintf(who_arg, sizeof who_arg, "1=%s", P("spec_who.bin"));
    static const struct {
        const char *wg, *groups, *steps, *rate, *negate;   /* NULL: not given */
        uint32_t wg_n, steps_n;
        float rate_f;
        bool negate_b;
    } runs[] = {
        {"0=256", "4", "1=3", "2=0.5f", "3=true", 256, 3, 0.5f, true},
        {"0=64", "16", NULL, "2=0x3e800000", NULL, 64, 1, 0.25f, false},   /* the rate as its bits */
        {"0=0x80", "8", "1=2", "2=2", "3=0", 128, 2, 2.0f, false},        /* "2" for a float is 2.0 */
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        const char *args[24] = {"run", P("spec.comp"), "--groups", runs[k].groups, "--buffer", in_arg,
                                "--buffer", "1=size:4096", "--out", out_arg, "--out", who_arg,
                                "--spec", runs[k].wg};
        int n = 14;
        const char *more[] = {runs[k].steps, runs[k].rate, runs[k].negate};
        for (int m = 0; m < 3; m++)
            if (more[m]) {
                args[n++] = "--spec";
                args[n++] = more[m];
            }
        struct run r;
        kiln_run_(__FILE__, __LINE__, &r, NULL, args);
        CHECK_STATUS(r, 0);
        float *v = READ_OUT("spec_out.bin", sizeof in);
        uint32_t *who = READ_OUT("spec_who.bin", 4096);
        int bad = 0;
        for (uint32_t i = 0; v && who && i < M; i++)
            bad += v[i] != spec_cpu(i, runs[k].steps_n, runs[k].rate_f, runs[k].negate_b) || who[i] != runs[k].wg_n;
        CHECK_EQ(bad, 0);
        free(v);
        free(who);
        /* The notes: one for each constant left at its default, once. */
        CHECK_EQ(count_of(r.err, "left at its default"), (runs[k].steps ? 0 : 1) + (runs[k].negate ? 0 : 1));
        if (!runs[k].steps) {
            CHECK_HAS(r, err, "note: ");
            CHECK_EQ(count_of(r.err, "note: "), 2);
        }
        if (!runs[k].negate) {
            char want[600];
            snprintf(want, sizeof want, "note: %s: specialization constant 'NEGATE' (id 3) left at its default "
                     "false; set it with --spec 3=WORD", P("spec.comp"));
            CHECK_HAS(r, err, want);
        }
        if (!runs[k].steps)
            CHECK_HAS(r, err, "specialization constant 'STEPS' (id 1) left at its default 1; set it with --spec 1=WORD");
        run_free(&r);
    }

    /* Without --spec, the workgroup of 1 (local_size_x_id's default) is named too. */
    struct run r;
    KILN(&r, NULL, "run", P("spec.comp"), "--buffer", "0=size:4", "--buffer", "1=size:4");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "specialization constant 'local_size_x' (id 0) left at its default 1; set it with --spec 0=WORD");
    CHECK_EQ(count_of(r.err, "left at its default"), 4);
    run_free(&r);
    KILN(&r, NULL, "run", "-q", P("spec.comp"), "--buffer", "0=size:4", "--buffer", "1=size:4");
    CHECK_STATUS(r, 0);
    CHECK_EQ(count_of(r.err, "note: "), 0);
    run_free(&r);

    static const char *const refused[][2] = {
        {"9=1", "--spec 9=1: the shader declares no specialization constant of id 9 (it declares 0 'local_size_x', "
                "1 'STEPS', 2 'RATE', 3 'NEGATE')"},
        {"3=2", "--spec 3=2: specialization constant 'NEGATE' (id 3) is a bool: '2' is not true, false, 1 or 0"},
        {"1=0.5", "--spec 1=0.5: specialization constant 'STEPS' (id 1) is a uint: '0.5' is not an integer"},
        {"1=-1", "--spec 1=-1: specialization constant 'STEPS' (id 1) is a uint: -1 is outside 0..4294967295"},
        {"1=0x100000000", "is a uint: 0x100000000 has more than its 32 bits"},
        {"2=fast", "--spec 2=fast: specialization constant 'RATE' (id 2) is a float: 'fast' is not a float"},
        {"2=1e39", "'RATE' (id 2) is a float: '1e39' is not a float"},
        {"0=0", "--spec 0=0: specialization constant 'local_size_x' (id 0) sizes the workgroup in x: 0 invocations"},
        {"x=1", "--spec x=1: 'x' is not a constant_id"},
        {"1", "--spec 1: expected ID=VALUE"},
    };
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        KILN(&r, NULL, "run", P("spec.comp"), "--buffer", "0=size:4", "--buffer", "1=size:4", "--spec",
             refused[k][0]);
        CHECK_STATUS(r, 2);
        CHECK_HAS(r, err, refused[k][1]);
        run_free(&r);
    }
    KILN(&r, NULL, "run", P("spec.comp"), "--spec", "1=2", "--spec=1=3", "--buffer", "0=size:4");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--spec 1=3: id 1 is given twice (the first: --spec 1=2)");
    run_free(&r);
    /* One program where the values read alike with and without their types
     * (256 for a uint, 0.5f for a float, true for a bool); where they do
     * not ("2" for a float is 2.0), a second one sharing the compile. */
    static const char *const info[] = {"KILN_LOG=info", "KILN_SPECIALIZATION=0", NULL};
    KILN(&r, info, "run", P("spec.comp"), "--buffer", "0=size:4096", "--buffer", "1=size:4096", "--groups", "4",
         "--spec", "0=256", "--spec", "2=0.5f", "--spec", "3=true");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "compile: 1 programs asked for; 2 compiles started");
    run_free(&r);
    KILN(&r, info, "run", P("spec.comp"), "--buffer", "0=size:4096", "--buffer", "1=size:4096", "--groups", "4",
         "--spec", "0=256", "--spec", "2=2");
    CHECK_STATUS(r, 0);
    CHECK_HAS(r, err, "compile: 2 programs asked for; 3 compiles started");
    /* The float given as a decimal integer: its value, and a note with the bits. */
    CHECK_HAS(r, err, "note: --spec 2=2: 'RATE' (id 2) is a float, so 2 is read as the value 2.0 (bits 0x40000000)");
    run_free(&r);
    /* A shader whose default is past the device (a shared array of 16 MiB)
     * runs with the value its host would set, and not without it. */
    write_text("big_shared.comp", "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(constant_id = 0) const uint ROWS = 1048576;\n"
                                  "shared vec4 cache[ROWS];\n"
                                  "layout(std430, binding = 0) buffer X { vec4 x[]; };\n"
                                  "void main() {\n"
                                  "    uint l = gl_LocalInvocationID.x;\n"
                                  "    cache[l % ROWS] = x[gl_GlobalInvocationID.x] * 2.0;\n"
                                  "    barrier();\n"
                                  "    x[gl_GlobalInvocationID.x] = cache[l % ROWS];\n"
                                  "}\n");
    KILN(&r, NULL, "run", P("big_shared.comp"), "--buffer", "0=size:1024", "--spec", "0=64");
    CHECK_STATUS(r, 0);
    run_free(&r);
    KILN(&r, NULL, "run", P("big_shared.comp"), "--buffer", "0=size:1024");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "KILN_ERR_LIMIT");
    CHECK_HAS(r, err, "it uses 16777216 bytes of shared memory");
    run_free(&r);
    /* A workgroup past the device's: the library's limit check, exit 1. */
    KILN(&r, NULL, "run", P("spec.comp"), "--buffer", "0=size:4", "--buffer", "1=size:4", "--spec", "0=100000");
    CHECK_STATUS(r, 1);
    CHECK_HAS(r, err, "KILN_ERR_LIMIT");
    CHECK_HAS(r, err, "local_size_x = 100000");
    run_free(&r);
}

/* ---- --json and '-' ------------------------------------------------------------------------- */

/* A JSON validator (RFC 8259), so no test depends on python: each returns
 * the text after the value, or NULL when it is not JSON. */
static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    return p;
}

static const char *js_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20)
            return NULL;   /* a raw control character, or the end of the text */
        if (c == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!isxdigit((unsigned char)p[i]))
                        return NULL;
                p += 5;
            } else if (*p && strchr("\"\\/bfnrt", *p)) {
                p++;
            } else {
                return NULL;
            }
            continue;
        }
        /* UTF-8: a lead byte and its continuation bytes; no overlong
         * two-byte forms, nothing past F4. */
        int more = c < 0x80 ? 0 : c >= 0xC2 && c <= 0xDF ? 1 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xF0 && c <= 0xF4 ? 3 : -1;
        if (more < 0)
            return NULL;
        p++;
        for (int i = 0; i < more; i++, p++)
            if (((unsigned char)*p & 0xC0) != 0x80)
                return NULL;
    }
    return p + 1;
}

static const char *js_value(const char *p, int depth)
{
    p = js_ws(p);
    if (depth > 64)
        return NULL;
    if (*p == '"')
        return js_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = js_ws(p + 1);
        if (*p == close)
            return p + 1;
        for (;;) {
            if (close == '}') {
                if (!(p = js_string(js_ws(p))))
                    return NULL;
                p = js_ws(p);
                if (*p++ != ':')
                    return NULL;
            }
            if (!(p = js_value(p, depth + 1)))
                return NULL;
            p = js_ws(p);
            if (*p == close)
                return p + 1;
            if (*p++ != ',')
                return NULL;
        }
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++)
        if (!strncmp(p, words[i], strlen(words[i])))
            return p + strlen(words[i]);
    const char *q = p;
    if (*q == '-')
        q++;
    if (*q == '0')
        q++;
    else if (*q >= '1' && *q <= '9')
        while (isdigit((unsigned char)*q))
            q++;
    else
        return NULL;
    if (*q == '.') {
        if (!isdigit((unsigned char)*++q))
            return NULL;
        while (isdigit((unsigned char)*q))
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        q++;
        if (*q == '+' || *q == '-')
            q++;
        if (!isdigit((unsigned char)*q))
            return NULL;
        while (isdigit((unsigned char)*q))
            q++;
    }
    return q;
}

/* text is exactly one JSON object (and a newline). */
static bool json_object(const char *text)
{
    const char *p = js_ws(text);
    return *p == '{' && (p = js_value(p, 0)) && !*js_ws(p);
}

/* The value of "key" (its first occurrence), or NULL. */
static const char *json_get(const char *text, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(text, pat);
    return p ? p + strlen(pat) : NULL;
}

static double json_num(const char *text, const char *key)
{
    const char *v = json_get(text, key);
    return v ? strtod(v, NULL) : -1;
}

/* The run's stdout is one JSON object; otherwise a failure showing it. */
#define CHECK_JSON(r)                                                                              \
    do {                                                                                           \
        if (!json_object((r).out)) {                                                               \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: `%s`: stdout is not one JSON object:\n%s\n", __FILE__,     \
                    __LINE__, test_name_, (r).cmd, (r).out);                                       \
        }                                                                                          \
    } while (0)

TEST(json_validator_itself)
{
    CHECK(json_object("{\"a\":[1,-2.5e3,true,null,\"x\\u0001\\\"\"],\"b\":{}}\n"));
    CHECK(json_object("{\"\xc3\xa9\":0}"));
    CHECK(!json_object("{\"a\":1,}"));
    CHECK(!json_object("{\"a\":\"\x01\"}"));
    CHECK(!json_object("{\"a\":\"\xff\"}"));
    CHECK(!json_object("{\"a\":01}"));
    CHECK(!json_object("{\"a\":1} x"));
    CHECK(!json_object("{\"a\":nan}"));
}

TEST(json_info_and_archive)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    test_context_done(ctx);

    struct run r, text;
    KILN(&text, NULL, "info");
    CHECK_STATUS(text, 0);
    KILN(&r, NULL, "info", "--json");
    CHECK_STATUS(r, 0);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":true");
    char want[512], value[300];
    /* the device the text names, the caps the library reports */
    CHECK(field_value(text.out, "device name:", value, sizeof value));
    snprintf(want, sizeof want, "\"device_name\":\"%s\"", value);
    CHECK_HAS(r, out, want);
    snprintf(want, sizeof want, "\"max_workgroup_count\":[%u,%u,%u]", caps.max_workgroup_count[0],
             caps.max_workgroup_count[1], caps.max_workgroup_count[2]);
    CHECK_HAS(r, out, want);
    CHECK(json_num(r.out, "subgroup_size") == caps.subgroup_size);
    CHECK(json_num(r.out, "max_storage_buffer_range") == caps.max_storage_buffer_range);
    CHECK(json_num(r.out, "max_buffer_size") == (double)caps.max_buffer_size);
    CHECK_HAS(r, out, caps.validation ? "\"validation\":true" : "\"validation\":false");
    CHECK(strstr(r.out, "\"devices\":[{\"index\":0,"));
    CHECK(!strstr(r.err, "device name:"));   /* the text is left out */
    run_free(&r);
    run_free(&text);

    KILN(&r, ((const char *[]){"KILN_DEVICE=no-such-device-anywhere", NULL}), "info", "--json");
    CHECK_STATUS(r, 1);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":false,\"exit_status\":1,\"error\":\"");
    CHECK_HAS(r, out, "no-such-device-anywhere");
    run_free(&r);
    KILN(&r, NULL, "info", "--json", "--bogus");
    CHECK_STATUS(r, 2);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "--bogus");
    run_free(&r);

    /* archive ls|verify: what the text lists, as JSON */
    write_text("frames.comp", frames_src);
    char env_dir[700];
    snprintf(env_dir, sizeof env_dir, "KILN_ARCHIVE_DIR=%s/json-archive", tmp_dir);
    const char *env[] = {"KILN_ARCHIVE=1", env_dir, NULL};
    KILN(&r, env, "run", P("frames.comp"), "--buffer", "0=size:256", "--buffer", "1=size:256");
    CHECK_STATUS(r, 0);
    run_free(&r);
    for (int v = 0; v < 2; v++) {
        const char *verb = v ? "verify" : "ls";
        KILN(&text, env, "archive", verb);
        CHECK_STATUS(text, 0);
        KILN(&r, env, "archive", verb, "--json");
        CHECK_STATUS(r, 0);
        CHECK_JSON(r);
        CHECK_HAS(r, out, "\"ok\":true,\"exit_status\":0");
        unsigned files = 0;
        unsigned long long bytes = 0, entries = 0;
        const char *sum = strstr(text.out, " files, ");
        while (sum && sum > text.out && sum[-1] != '\n')
            sum--;
        CHECK(sum && sscanf(sum, "%u files, %llu bytes, %llu good entries", &files, &bytes, &entries) == 3);
        CHECK(files >= 1 && entries >= 1);
        CHECK(count_of(r.out, "\"name\":") == (int)files);
        snprintf(want, sizeof want, "\"totals\":{\"files\":%u,\"bytes\":%llu,\"entries\":%llu,\"corrupt\":0,", files,
                 bytes, entries);
        CHECK_HAS(r, out, want);
        CHECK_HAS(r, out, "\"status\":\"ok\"");
        char dir[600];
        snprintf(dir, sizeof dir, "\"dir\":\"%s/json-archive", tmp_dir);
        CHECK_HAS(r, out, dir);
        run_free(&r);
        run_free(&text);
    }
    KILN(&r, ((const char *[]){"KILN_ARCHIVE=0", NULL}), "archive", "ls", "--json");
    CHECK_STATUS(r, 3);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":false,\"exit_status\":3");
    run_free(&r);
    KILN(&r, env, "archive", "gc", "--json");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--json is for ls and verify");
    run_free(&r);
}

TEST(json_run_and_demo)
{
    write_text("frames.comp", frames_src);
    uint32_t in[64];
    for (int i = 0; i < 64; i++)
        in[i] = (uint32_t)i * 3u;
    write_file("counts.bin", in, sizeof in);
    struct run r;
    char buf_arg[600], out_arg[600];
    snprintf(buf_arg, sizeof buf_arg, "0=%s", P("counts.bin"));
    snprintf(out_arg, sizeof out_arg, "0=%s", P("counts.out"));
    KILN(&r, NULL, "run", P("frames.comp"), "--json", "--frames", "3", "--groups", "2", "--buffer", buf_arg,
         "--buffer", "1=size:256", "--out", out_arg);
    CHECK_STATUS(r, 0);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":true");
    char want[700];
    snprintf(want, sizeof want, "\"shader\":\"%s\"", P("frames.comp"));
    CHECK_HAS(r, out, want);
    CHECK_HAS(r, out, "\"frames\":3,");
    CHECK_HAS(r, out, "\"groups\":[2,1,1]");
    CHECK_HAS(r, out, "\"workgroup_size\":[64,1,1]");
    CHECK_HAS(r, out, "\"validation_errors\":0");
    CHECK(json_num(r.out, "median_ms") > 0 && json_num(r.out, "run_ms") >= json_num(r.out, "median_ms"));
    CHECK(json_num(r.out, "compile_ms") > 0);
    CHECK_HAS(r, err, "kiln: ran ");   /* the human line stays on stderr */
    uint32_t *got = READ_OUT("counts.out", sizeof in);
    for (int i = 0; got && i < 64; i++)
        CHECK(got[i] == in[i] + 3u);
    free(got);
    run_free(&r);

    /* failures: still one object, the exit status as without --json */
    write_text("broken.comp", "#version 450\nvoid main() { nope(); }\n");
    KILN(&r, NULL, "run", P("broken.comp"), "--json");
    CHECK_STATUS(r, 1);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":false,\"exit_status\":1");
    CHECK_HAS(r, out, "broken.comp failed to compile\"}");
    run_free(&r);
    KILN(&r, NULL, "run", P("frames.comp"), "--json", "--frames", "zero");
    CHECK_STATUS(r, 2);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "--frames zero");
    run_free(&r);

    /* a shader named with a quote, a backslash, control bytes, UTF-8 and
     * a byte that is no UTF-8: the name is escaped, the object stays JSON */
    const char *odd = "q\"b\\s\ttab\x01\xc3\xa9\xff.comp";
    write_text(odd, frames_src);
    KILN(&r, NULL, "run", P(odd), "--json", "--buffer", "0=size:256", "--buffer", "1=size:256");
    CHECK_STATUS(r, 0);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "/q\\\"b\\\\s\\u0009tab\\u0001\xc3\xa9\\ufffd.comp\"");
    run_free(&r);

    KILN(&r, NULL, "demo", "--json", "--frames", "4", "--size", "32x24", "--out", P("demo.png"));
    CHECK_STATUS(r, 0);
    CHECK_JSON(r);
    CHECK_HAS(r, out, "\"ok\":true");
    CHECK_HAS(r, out, "\"width\":32,\"height\":24");
    CHECK_HAS(r, out, "\"frames\":4,");
    CHECK_HAS(r, out, "\"submits\":4");
    CHECK(json_num(r.out, "min_ms") <= json_num(r.out, "median_ms") &&
          json_num(r.out, "median_ms") <= json_num(r.out, "max_ms"));
    CHECK_HAS(r, err, "frame time (ms)");   /* the table, on stderr */
    size_t len = 0;
    char *png = read_path(P("demo.png"), &len);
    CHECK(png && len > 8 && !memcmp(png, "\x89PNG", 4));
    free(png);
    run_free(&r);
    KILN(&r, NULL, "demo", "--json", "--out", "-");
    CHECK_STATUS(r, 2);
    CHECK_JSON(r);
    run_free(&r);
}

TEST(stdin_and_stdout)
{
    write_text("frames.comp", frames_src);
    uint32_t in[64];
    for (int i = 0; i < 64; i++)
        in[i] = (uint32_t)i * 7u + 1u;
    write_file("in.bin", in, sizeof in);
    /* buffer in through a pipe, buffer out on stdout */
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s", P("in.fifo"));
    CHECK(mkfifo(fifo, 0600) == 0);
    pid_t writer = fork();
    if (writer == 0) {
        int fd = open(fifo, O_WRONLY);
        ssize_t n = fd >= 0 ? write(fd, in, sizeof in) : -1;
        _exit(n == (ssize_t)sizeof in ? 0 : 1);
    }
    struct run r;
    KILN_IN(&r, NULL, fifo, "run", P("frames.comp"), "--buffer", "0=-", "--buffer", "1=size:256", "--out", "0=-");
    int ws = 0;
    waitpid(writer, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    CHECK_STATUS(r, 0);
    uint32_t *got = READ_OUT("stdout.txt", sizeof in);
    for (int i = 0; got && i < 64; i++)
        CHECK(got[i] == in[i] + 1u);
    free(got);
    run_free(&r);

    /* the shader from stdin; png:- writes a PNG there */
    char buf_arg[600];
    snprintf(buf_arg, sizeof buf_arg, "0=%s", P("in.bin"));
    KILN_IN(&r, NULL, P("frames.comp"), "run", "-", "--buffer", buf_arg, "--buffer", "1=size:256", "--out",
            "0=png:-", "--out", "1=-");
    CHECK_STATUS(r, 2);   /* one output on stdout */
    CHECK_HAS(r, err, "--out 1=-");
    CHECK_HAS(r, err, "takes one output");
    run_free(&r);
    char out_arg[600];
    snprintf(out_arg, sizeof out_arg, "0=%s", P("from-stdin.bin"));
    KILN_IN(&r, NULL, P("frames.comp"), "run", "-", "--buffer", buf_arg, "--buffer", "1=size:256", "--out", out_arg);
    CHECK_STATUS(r, 0);
    got = READ_OUT("from-stdin.bin", sizeof in);
    for (int i = 0; got && i < 64; i++)
        CHECK(got[i] == in[i] + 1u);
    free(got);
    run_free(&r);

    /* stdin is read once: a second '-' is refused by name */
    KILN_IN(&r, NULL, P("frames.comp"), "run", "-", "--buffer", "0=-", "--buffer", "1=size:256");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "cannot read the shader: standard input is read once per run");
    run_free(&r);
    KILN_IN(&r, NULL, P("in.bin"), "run", P("frames.comp"), "--buffer", "0=-", "--buffer", "1=-");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--buffer 1=-");
    CHECK_HAS(r, err, "standard input is read once per run");
    run_free(&r);
    /* a '-' output beside --json: both would write stdout */
    KILN(&r, NULL, "run", P("frames.comp"), "--json", "--buffer", buf_arg, "--buffer", "1=size:256", "--out", "0=-");
    CHECK_STATUS(r, 2);
    CHECK_JSON(r);
    CHECK_HAS(r, err, "--out 0=-: standard output ('-') carries --json's object");
    run_free(&r);
    /* a file named - is reached by a path: FOLDER/- */
    write_file("-", in, sizeof in);
    snprintf(buf_arg, sizeof buf_arg, "0=%s", P("-"));
    KILN(&r, NULL, "run", P("frames.comp"), "--buffer", buf_arg, "--buffer", "1=size:256", "--out", "0=-");
    CHECK_STATUS(r, 0);
    got = READ_OUT("stdout.txt", sizeof in);
    for (int i = 0; got && i < 64; i++)
        CHECK(got[i] == in[i] + 1u);
    free(got);
    run_free(&r);

    /* --push-file -, a png: buffer from stdin, an --image from stdin and
     * an --out-image to stdout (raw texels) */
    write_text("own.comp", own_push_src);
    uint32_t block[10] = {3, 100, f2u(0.5f), 0, 0, 0, 0, 0, 0, 7};
    write_file("push.bin", block, sizeof block);
    char own_out[600];
    snprintf(own_out, sizeof own_out, "0=%s", P("own_out.bin"));
    KILN_IN(&r, NULL, P("push.bin"), "run", P("own.comp"), "--groups", "2", "--push-file", "-", "--push", "1=40",
            "--buffer", "0=size:32", "--out", own_out);
    CHECK_STATUS(r, 0);
    float *fgot = READ_OUT("own_out.bin", 32);
    for (uint32_t i = 0; fgot && i < 8; i++)
        CHECK(fgot[i] == (float)(i * 3 + 40 + 7) * 0.5f);
    free(fgot);
    run_free(&r);
    KILN_IN(&r, NULL, P("push.bin"), "run", P("own.comp"), "--push-file", "-", "--buffer", "0=-");
    CHECK_STATUS(r, 2);
    CHECK_HAS(r, err, "--push-file -: standard input is read once per run");
    run_free(&r);

    uint8_t want[24], inv[24];
    for (int k = 0; k < 24; k++) {
        want[k] = (uint8_t)((k * 40) % 256);
        inv[k] = k % 4 == 3 ? want[k] : (uint8_t)~want[k];
    }
    write_file("in.png", png_3x2, sizeof png_3x2 - 1);
    write_text("invert.comp", png_invert_src);
    KILN_IN(&r, NULL, P("in.png"), "run", P("invert.comp"), "--buffer", "0=png:-", "--buffer", "1=size:24", "--out",
            "1=-");
    CHECK_STATUS(r, 0);
    uint8_t *bgot = READ_OUT("stdout.txt", 24);
    CHECK(bgot && !memcmp(bgot, inv, 24));
    free(bgot);
    run_free(&r);
    write_text("load.comp", "#version 450\nlayout(local_size_x = 1) in;\n"
                            "layout(binding = 0, rgba8) readonly uniform image2D img;\n"
                            "layout(binding = 1) writeonly buffer O { uint o[]; };\n"
                            "void main() { ivec2 p = ivec2(gl_GlobalInvocationID.xy);\n"
                            "    o[p.y * 3 + p.x] = packUnorm4x8(imageLoad(img, p)); }\n");
    char load_out[600];
    snprintf(load_out, sizeof load_out, "1=%s", P("loaded.bin"));
    KILN_IN(&r, NULL, P("in.png"), "run", P("load.comp"), "--groups", "3,2", "--image", "0=-", "--buffer",
            "1=size:24", "--out", load_out, "--out-image", "0=-");
    CHECK_STATUS(r, 0);
    bgot = READ_OUT("loaded.bin", 24);
    CHECK(bgot && !memcmp(bgot, want, 24));
    free(bgot);
    bgot = READ_OUT("stdout.txt", 24);   /* rgba8 texels, not a PNG */
    CHECK(bgot && !memcmp(bgot, want, 24));
    free(bgot);
    run_free(&r);

    /* demo's PNG on stdout, its table on stderr */
    KILN(&r, NULL, "demo", "--frames", "2", "--size", "16x16", "--out", "-");
    CHECK_STATUS(r, 0);
    size_t len = 0;
    char *png = read_path(P("stdout.txt"), &len);
    CHECK(png && len > 8 && !memcmp(png, "\x89PNG\r\n\x1a\n", 8));
    free(png);
    CHECK_HAS(r, err, "frame time (ms)");
    run_free(&r);
}

/* ---- main -------------------------------------------------------------------------------------- */

static bool wanted(int argc, char **argv, const char *name)
{
    if (argc <= 2)
        return true;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], name))
            return true;
    return false;
}

#define RUN_IF(name)                                                                               \
    do {                                                                                           \
        if (wanted(argc, argv, #name))                                                             \
            RUN(name);                                                                             \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli PATH/TO/kiln [TEST...]\n");
        return 2;
    }
    kiln_bin = argv[1];
    snprintf(tmp_dir, sizeof tmp_dir, "%s/kiln-cli-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        perror("test_cli: mkdtemp");
        return 1;
    }
    RUN_IF(run_prefix_sum);
    RUN_IF(run_histogram);
    RUN_IF(run_matrix_product);
    RUN_IF(run_frames_accumulate);
    RUN_IF(run_timeout_ends_a_runaway_run);
    RUN_IF(close_lines_at_destroy);
    RUN_IF(archive_commands);
    RUN_IF(archive_read_only_and_unusable_folders);
    RUN_IF(run_float_words);
    RUN_IF(run_own_push_block);
    RUN_IF(run_spirv_and_hlsl);
    RUN_IF(run_spec_constants);
    RUN_IF(run_frames_prints_specialization);
    RUN_IF(run_signed_division_by_minus_one);
    RUN_IF(run_entry_defines_includes);
    RUN_IF(run_preamble_and_workgroup_size);
    RUN_IF(run_uniform_buffer);
    RUN_IF(run_fill_odd_size);
    RUN_IF(run_png_images);
    RUN_IF(run_images);
    RUN_IF(run_image_formats);
    RUN_IF(run_image_shapes);
    RUN_IF(run_buffer_slices);
    RUN_IF(run_buffer_address);
    RUN_IF(run_check_and_robust);
    RUN_IF(run_loop_warning);
    RUN_IF(run_and_demo_trace);
    RUN_IF(run_compile_error_names_line);
    RUN_IF(run_old_version_fails_with_stdout_clean);
    RUN_IF(run_bad_arguments);
    RUN_IF(run_binding_errors);
    RUN_IF(run_bindings_as_declared);
    RUN_IF(run_groups_over_device_limit);
    RUN_IF(info_prints_devices_and_caps);
    RUN_IF(help_texts);
    RUN_IF(run_words_and_sizes);
    RUN_IF(run_input_files_bounded);
    RUN_IF(outputs_written_safely);
    RUN_IF(version_and_help);
    RUN_IF(json_validator_itself);
    RUN_IF(json_info_and_archive);
    RUN_IF(json_run_and_demo);
    RUN_IF(stdin_and_stdout);
    if (test_passed_ + test_failed_ == 0) {
        fprintf(stderr, "test_cli: no test is named");
        for (int i = 2; i < argc; i++)
            fprintf(stderr, " %s", argv[i]);
        fprintf(stderr, "\n");
        test_failed_++;
    }
    if (test_failed_)
        printf("test files kept in %s\n", tmp_dir);
    else
        nftw(tmp_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return TEST_SUMMARY();
}
