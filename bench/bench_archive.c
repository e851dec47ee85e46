/* SPDX-License-Identifier: MIT */
/*
 * bench_archive.c: kiln's pipeline archive, a cold start against a warm start
 * of the same programs.
 *
 * The programs: bench_gen.h's seeded generator writes N distinct small
 * compute programs (default 200) and, with --giants, G giants of L
 * straight-line statements (default none; kiln judges them against
 * KILN_GIANT_WORDS as usual). No duplicates: every program is a compile of
 * its own.
 *
 * A start is one child process. It makes a context (.compile_threads from
 * --workers, validation off), calls kiln_program_create for every program
 * (each returns at once), then kiln_program_wait on each in creation order,
 * and reports through a pipe:
 *   whole start    context create to the last program ready;
 *   programs       the whole start less the context create: the first
 *                  kiln_program_create to the last program ready, the part
 *                  of a start an archive can shorten;
 *   per program    create to ready, median and mean; a program's ready time
 *                  is when its wait returned: waiting in creation order, an
 *                  upper bound on when it became ready;
 *   destroy        kiln_context_destroy, where the run archive is saved;
 *   counts         from kiln_context_stats: front ends compiled (distinct
 *                  programs less archive_hits), front ends and pipelines from
 *                  the archive, compiles started (jobs run, front and back
 *                  ends apart, those the archive served included).
 * Every program must end READY; anything else is an error of the run.
 *
 * Why a process per start: a warm start is a later launch of an
 * application. Within one process, state outlives a context: the driver's
 * in-memory caches, glslang's built-in tables, the loader and the driver
 * already mapped. The benchmark therefore re-executes itself
 * (fork + execve of /proc/self/exe with --child and the parameters), with
 * an environment made for the mode, so nothing but files on disk connects
 * a cold start to its warm start.
 *
 * Modes, each a cold start in fresh empty folders then a warm start reusing
 * them (all three by default, --modes picks):
 *   alone   the archive alone: KILN_ARCHIVE=1, KILN_ARCHIVE_DIR=<fresh>,
 *           drivers' disk caches off (MESA_SHADER_CACHE_DISABLE=true,
 *           __GL_SHADER_DISK_CACHE=0);
 *   both    the archive and the drivers' disk caches, these in a fresh
 *           folder of the mode's own (MESA_SHADER_CACHE_DIR and
 *           __GL_SHADER_DISK_CACHE_PATH, __GL_SHADER_DISK_CACHE=1,
 *           MESA_SHADER_CACHE_DISABLE=false);
 *   driver  the drivers' disk caches alone, as above, with KILN_ARCHIVE=0:
 *           what a warm start gets without kiln's archive.
 * KILN_ARCHIVE_READONLY and KILN_ARCHIVE_QA are removed from the children's
 * environment; KILN_LOG=info is set there only with --verbose. Everything
 * else (KILN_DEVICE, KILN_WORKER_CACHES, ...) passes through.
 *
 * Before the modes, one start is run and not counted (a warm-up: the first
 * process on a machine pays the driver's one-time setup, which would
 * otherwise fall on whichever start ran first); --no-warmup skips it.
 *
 * Targets: the warm start of "alone" compiles no front end (every device);
 * on a device that is not a CPU device its programs part is at most 5% of
 * the cold one's (the whole start, with the context create, is printed
 * beside it). On a CPU device the second is not a target: lavapipe keeps no
 * compiled code in pipeline caches, so a warm start still builds every
 * pipeline (lavapipe turns SPIR-V into NIR there and into machine code at a
 * program's first dispatch, which no start here makes).
 *
 * Exit status: 0 when every start ran and every program compiled, whether or
 * not the targets were met (a missed one prints MISSED); 1 on errors. The
 * temporary folders are removed at the end unless --keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln.h"

#define BENCH_NAME "bench_archive"
#include "bench.h"
#include "bench_gen.h"

extern char **environ;

#define DEFAULT_GIANT_LINES 3000
#define TARGET_WARM_PERCENT 5.0

static double secs_since(uint64_t t0) { return (double)(now_ns() - t0) / 1e9; }

/* ---- options -------------------------------------------------------------------- */

enum mode { MODE_ALONE, MODE_BOTH, MODE_DRIVER, MODE_COUNT };

static const struct mode_info {
    const char *key;
    const char *label;
    const char *env;            /* what the children's environment says, for the output */
    int archive, driver_cache;
} mode_info[MODE_COUNT] = {
    {"alone", "archive alone", "KILN_ARCHIVE=1; driver disk caches off", 1, 0},
    {"both", "archive + driver cache", "KILN_ARCHIVE=1; driver disk caches on, in a fresh folder", 1, 1},
    {"driver", "driver cache alone", "KILN_ARCHIVE=0; driver disk caches on, in a fresh folder", 0, 1},
};

struct opts {
    uint32_t programs, giants, giant_lines, workers;
    uint64_t seed;
    bool modes[MODE_COUNT];
    bool keep, verbose, no_warmup;
    int child_fd;               /* >= 0: this process is a start, reporting there */
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_archive [options]\n"
            "  --programs N      distinct programs (default 200)\n"
            "  --giants G        how many of them are giants (default 0)\n"
            "  --giant-lines L   straight-line statements in a giant's body (default %u)\n"
            "  --seed S          the generator's seed (default 1)\n"
            "  --workers N       kiln compile workers (.compile_threads; default 0 = kiln's default)\n"
            "  --modes LIST      of alone, both, driver (or 1, 2, 3), comma-separated (default all):\n"
            "                    alone   the archive, driver disk caches off\n"
            "                    both    the archive and driver disk caches\n"
            "                    driver  driver disk caches, no archive\n"
            "  --keep            keep the temporary folders and print where they are\n"
            "  --no-warmup       no uncounted start before the modes\n"
            "  --verbose         KILN_LOG=info in the starts, and each start's environment\n",
            DEFAULT_GIANT_LINES);
}

static void parse_modes(struct opts *o, const char *v)
{
    if (!v || !*v)
        die("--modes wants a list such as alone,driver");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    memset(o->modes, 0, sizeof o->modes);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int m = -1;
        for (int i = 0; i < MODE_COUNT; i++)
            if (!strcmp(tok, mode_info[i].key) || (tok[0] == '1' + i && !tok[1]))
                m = i;
        if (m < 0)
            die("--modes: unknown mode '%s' (alone, both, driver or 1, 2, 3)", tok);
        o->modes[m] = true;
    }
}

static void parse_opts(struct opts *o, int argc, char **argv)
{
    *o = (struct opts){.programs = 200, .giant_lines = DEFAULT_GIANT_LINES, .seed = 1, .child_fd = -1};
    for (int i = 0; i < MODE_COUNT; i++)
        o->modes[i] = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--programs")) {
            o->programs = (uint32_t)bench_parse_num(a, v, 1, 100000);
            i++;
        } else if (!strcmp(a, "--giants")) {
            o->giants = (uint32_t)bench_parse_num(a, v, 0, 100000);
            i++;
        } else if (!strcmp(a, "--giant-lines")) {
            o->giant_lines = (uint32_t)bench_parse_num(a, v, 1, 10000000);
            i++;
        } else if (!strcmp(a, "--seed")) {
            o->seed = bench_parse_num(a, v, 0, UINT64_MAX);
            i++;
        } else if (!strcmp(a, "--workers")) {
            o->workers = (uint32_t)bench_parse_num(a, v, 0, 256);
            i++;
        } else if (!strcmp(a, "--modes")) {
            parse_modes(o, v);
            i++;
        } else if (!strcmp(a, "--keep")) {
            o->keep = true;
        } else if (!strcmp(a, "--no-warmup")) {
            o->no_warmup = true;
        } else if (!strcmp(a, "--verbose")) {
            o->verbose = true;
        } else if (!strcmp(a, "--child")) {   /* internal: this process is a start */
            o->child_fd = (int)bench_parse_num(a, v, 0, 1 << 20);
            i++;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else {
            usage(stderr);
            die("unknown argument '%s'", a);
        }
    }
    if (o->giants > o->programs)
        die("--giants %u is more than --programs %u", o->giants, o->programs);
}

/* ---- a start (the child) ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs one start and writes its report to `fd`, one "key value" per line.
 * Dies (exit 1) if any program does not end READY. */
static void child_run(const struct opts *o, int fd)
{
    struct workload w = {.distinct = o->programs, .giants = o->giants, .giant_lines = o->giant_lines};
    workload_make(&w, o->seed);
    kiln_program *progs = calloc(w.count, sizeof *progs);
    uint64_t *t_create = calloc(w.count, sizeof *t_create);
    double *ready_ms = calloc(w.count, sizeof *ready_ms);
    if (!progs || !t_create || !ready_ms)
        die("out of memory");

    uint64_t t0 = now_ns();
    kiln_context ctx;
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .compile_threads = o->workers}, &ctx));
    double ctx_create_s = secs_since(t0);
    uint64_t tc = now_ns();
    for (uint32_t k = 0; k < w.count; k++) {
        kiln_program_desc d = desc_of(&w.progs[w.list[k]]);
        t_create[k] = now_ns();
        KCHECK(kiln_program_create(ctx, &d, &progs[k]));
    }
    double creates_s = secs_since(tc);
    for (uint32_t k = 0; k < w.count; k++) {
        kiln_result r = kiln_program_wait(ctx, progs[k]);
        ready_ms[k] = (double)(now_ns() - t_create[k]) / 1e6;
        if (r != KILN_OK) {
            char log[2048] = "";
            if (kiln_program_log(ctx, progs[k], log, sizeof log, NULL) != KILN_OK)
                snprintf(log, sizeof log, "(no log: %s)", kiln_last_error());
            die("%s did not compile: %s: %s", w.progs[w.list[k]].name, kiln_result_name(r), log);
        }
    }
    double whole_s = secs_since(t0);

    for (uint32_t k = 0; k < w.count; k++) {
        kiln_program_state st;
        KCHECK(kiln_program_status(ctx, progs[k], &st));
        if (st != KILN_PROGRAM_READY)
            die("%s is not READY after its wait (state %d)", w.progs[w.list[k]].name, (int)st);
    }
    kiln_context_stats st;
    kiln_caps caps;
    kiln_archive_info arc;
    KCHECK(kiln_context_stats_get(ctx, &st));
    KCHECK(kiln_context_caps(ctx, &caps));
    KCHECK(kiln_archive_info_get(ctx, &arc));
    uint64_t t = now_ns();
    KCHECK(kiln_context_destroy(ctx));
    double destroy_s = secs_since(t);

    double sum = 0;
    for (uint32_t k = 0; k < w.count; k++)
        sum += ready_ms[k];
    qsort(ready_ms, w.count, sizeof *ready_ms, cmp_double);
    double median = w.count % 2 ? ready_ms[w.count / 2] : (ready_ms[w.count / 2 - 1] + ready_ms[w.count / 2]) / 2;
    uint64_t distinct = st.compile_requests - st.compiles_adopted - st.compiles_deduplicated;

    /* Names may hold spaces: each value runs to the end of its line. */
    dprintf(fd,
            "whole %.9f\nctx_create %.9f\ncreates %.9f\ndestroy %.9f\nready_median_ms %.6f\nready_mean_ms %.6f\n"
            "programs %" PRIu64 "\nfronts_compiled %" PRIu64 "\narchive_hits %" PRIu64 "\npipeline_hits %" PRIu64
            "\ncompiles_started %" PRIu64 "\narchive_enabled %d\narchive_files %u\ndevice_type %d\n"
            "device %s\ndriver %s\ndriver_info %s\n",
            whole_s, ctx_create_s, creates_s, destroy_s, median, sum / w.count, distinct,
            distinct - st.archive_hits, st.archive_hits, st.archive_pipeline_hits, st.compiles_started,
            arc.enabled, arc.file_count, (int)caps.device_type, caps.device_name, caps.driver_name,
            caps.driver_info);
    free(progs);
    free(t_create);
    free(ready_ms);
    for (uint32_t i = 0; i < w.distinct; i++)
        free(w.progs[i].source);
    free(w.progs);
    free(w.list);
}

/* ---- the parent: folders ------------------------------------------------------------ */

static char tmp_root[4096];     /* "" until made */
static bool keep_root;

static int remove_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if ((type == FTW_DP ? rmdir(path) : unlink(path)) && errno != ENOENT)
        fprintf(stderr, BENCH_NAME ": warning: cannot remove %s: %s\n", path, strerror(errno));
    return 0;
}

static void cleanup(void)
{
    if (!tmp_root[0])
        return;
    if (keep_root) {
        printf("kept: %s\n", tmp_root);
        return;
    }
    nftw(tmp_root, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static uint64_t du_files, du_bytes;

static int count_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (type == FTW_F) {
        du_files++;
        du_bytes += (uint64_t)sb->st_size;
    }
    return 0;
}

/* Files and bytes under `dir` (none if it does not exist). */
static void folder_usage(const char *dir, uint64_t *files, uint64_t *bytes)
{
    du_files = du_bytes = 0;
    nftw(dir, count_one, 16, FTW_PHYS);
    *files = du_files;
    *bytes = du_bytes;
}

/* dir + "/" + name into buf; a path too long is an error. */
static void path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(buf, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        die("path too long: %s/%s", dir, name);
}

static void make_dir(const char *path)
{
    if (mkdir(path, 0700) && errno != EEXIST)
        die("cannot make %s: %s", path, strerror(errno));
}

/* ---- the parent: starts -------------------------------------------------------------- */

struct start {
    double process_s;           /* fork to the child's exit, measured here */
    double whole_s, ctx_create_s, creates_s, destroy_s;
    double ready_median_ms, ready_mean_ms;
    uint64_t programs, fronts_compiled, archive_hits, pipeline_hits, compiles_started;
    int archive_enabled, device_type;
    uint32_t archive_files;
    char device[256], driver[256], driver_info[256];
};

/* Variables the children's environment gets from the mode, never from ours. */
static const char *const managed[] = {
    "KILN_ARCHIVE", "KILN_ARCHIVE_DIR", "KILN_ARCHIVE_READONLY", "KILN_ARCHIVE_QA",
    "MESA_SHADER_CACHE_DISABLE", "MESA_SHADER_CACHE_DIR", "MESA_GLSL_CACHE_DISABLE", "MESA_GLSL_CACHE_DIR",
    "__GL_SHADER_DISK_CACHE", "__GL_SHADER_DISK_CACHE_PATH",
};

static bool is_managed(const char *entry, bool verbose)
{
    size_t n = strcspn(entry, "=");
    for (size_t i = 0; i < sizeof managed / sizeof *managed; i++)
        if (strlen(managed[i]) == n && !strncmp(entry, managed[i], n))
            return true;
    return verbose && n == 8 && !strncmp(entry, "KILN_LOG", 8);
}

struct env {
    char **v;
    size_t n, cap;
};

static void env_add(struct env *e, const char *name, const char *value)
{
    if (e->n + 2 > e->cap) {
        e->cap = e->cap ? e->cap * 2 : 64;
        if (!(e->v = realloc(e->v, e->cap * sizeof *e->v)))
            die("out of memory");
    }
    size_t len = strlen(name) + (value ? strlen(value) + 1 : 0) + 1;
    char *s = malloc(len);
    if (!s)
        die("out of memory");
    if (value)
        snprintf(s, len, "%s=%s", name, value);
    else
        snprintf(s, len, "%s", name);
    e->v[e->n++] = s;
    e->v[e->n] = NULL;
}

/* The environment of a start of mode m, whose folders are under `dir`. */
static struct env mode_env(enum mode m, const char *dir, bool verbose)
{
    struct env e = {0};
    for (char **p = environ; *p; p++)
        if (!is_managed(*p, verbose))
            env_add(&e, *p, NULL);
    char path[4200];
    const struct mode_info *mi = &mode_info[m];
    env_add(&e, "KILN_ARCHIVE", mi->archive ? "1" : "0");
    path_join(path, sizeof path, dir, "archive");
    env_add(&e, "KILN_ARCHIVE_DIR", path);   /* KILN_ARCHIVE=0 too: nothing may reach the user's folder */
    if (mi->driver_cache) {
        path_join(path, sizeof path, dir, "driver-cache");
        env_add(&e, "MESA_SHADER_CACHE_DISABLE", "false");
        env_add(&e, "MESA_SHADER_CACHE_DIR", path);
        env_add(&e, "__GL_SHADER_DISK_CACHE", "1");
        env_add(&e, "__GL_SHADER_DISK_CACHE_PATH", path);
    } else {
        env_add(&e, "MESA_SHADER_CACHE_DISABLE", "true");
        env_add(&e, "__GL_SHADER_DISK_CACHE", "0");
    }
    if (verbose)
        env_add(&e, "KILN_LOG", "info");
    return e;
}

static void env_free(struct env *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}

static void parse_report(struct start *s, char *text, const char *what)
{
    int seen = 0;
    for (char *save, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *v = strchr(line, ' ');
        if (!v)
            continue;
        *v++ = 0;
        seen++;
        if (!strcmp(line, "whole")) s->whole_s = strtod(v, NULL);
        else if (!strcmp(line, "ctx_create")) s->ctx_create_s = strtod(v, NULL);
        else if (!strcmp(line, "creates")) s->creates_s = strtod(v, NULL);
        else if (!strcmp(line, "destroy")) s->destroy_s = strtod(v, NULL);
        else if (!strcmp(line, "ready_median_ms")) s->ready_median_ms = strtod(v, NULL);
        else if (!strcmp(line, "ready_mean_ms")) s->ready_mean_ms = strtod(v, NULL);
        else if (!strcmp(line, "programs")) s->programs = strtoull(v, NULL, 10);
        else if (!strcmp(line, "fronts_compiled")) s->fronts_compiled = strtoull(v, NULL, 10);
        else if (!strcmp(line, "archive_hits")) s->archive_hits = strtoull(v, NULL, 10);
        else if (!strcmp(line, "pipeline_hits")) s->pipeline_hits = strtoull(v, NULL, 10);
        else if (!strcmp(line, "compiles_started")) s->compiles_started = strtoull(v, NULL, 10);
        else if (!strcmp(line, "archive_enabled")) s->archive_enabled = atoi(v);
        else if (!strcmp(line, "archive_files")) s->archive_files = (uint32_t)strtoul(v, NULL, 10);
        else if (!strcmp(line, "device_type")) s->device_type = atoi(v);
        else if (!strcmp(line, "device")) snprintf(s->device, sizeof s->device, "%s", v);
        else if (!strcmp(line, "driver")) snprintf(s->driver, sizeof s->driver, "%s", v);
        else if (!strcmp(line, "driver_info")) snprintf(s->driver_info, sizeof s->driver_info, "%s", v);
        else seen--;
    }
    if (seen != 17)
        die("the %s start's report is incomplete (%d of 17 fields)", what, seen);
}

/* Runs one start as a child process with the environment of mode m. */
static struct start run_start(const struct opts *o, const char *self, enum mode m, const char *dir, bool warm)
{
    char what[128];
    snprintf(what, sizeof what, "%s %s", mode_info[m].label, warm ? "warm" : "cold");
    struct env env = mode_env(m, dir, o->verbose);
    int pfd[2];
    if (pipe(pfd))
        die("pipe: %s", strerror(errno));
    if (fcntl(pfd[0], F_SETFD, FD_CLOEXEC))
        die("fcntl: %s", strerror(errno));

    char num[6][32];
    snprintf(num[0], sizeof num[0], "%d", pfd[1]);
    snprintf(num[1], sizeof num[1], "%u", o->programs);
    snprintf(num[2], sizeof num[2], "%u", o->giants);
    snprintf(num[3], sizeof num[3], "%u", o->giant_lines);
    snprintf(num[4], sizeof num[4], "%" PRIu64, o->seed);
    snprintf(num[5], sizeof num[5], "%u", o->workers);
    char *args[] = {(char *)self, "--child", num[0], "--programs", num[1], "--giants", num[2],
                    "--giant-lines", num[3], "--seed", num[4], "--workers", num[5], NULL};
    if (o->verbose) {
        printf("  %s: environment set:", what);
        for (size_t i = 0; i < env.n; i++)
            if (is_managed(env.v[i], true))
                printf(" %s", env.v[i]);
        printf("\n");
    }
    fflush(stdout);
    fflush(stderr);

    uint64_t t0 = now_ns();
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(pfd[0]);
        execve("/proc/self/exe", args, env.v);
        fprintf(stderr, BENCH_NAME ": error: execve /proc/self/exe: %s\n", strerror(errno));
        _exit(127);
    }
    close(pfd[1]);
    env_free(&env);

    char buf[4096];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(pfd[0], buf + len, sizeof buf - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
        if (len == sizeof buf - 1)
            break;
    }
    buf[len] = 0;
    close(pfd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid: %s", strerror(errno));
    struct start s = {.process_s = secs_since(t0)};
    if (WIFSIGNALED(status))
        die("the %s start was killed by signal %d", what, WTERMSIG(status));
    if (!WIFEXITED(status) || WEXITSTATUS(status))
        die("the %s start failed (exit status %d; its error is above)", what, WEXITSTATUS(status));
    parse_report(&s, buf, what);

    if (s.archive_enabled != mode_info[m].archive)
        die("the %s start's archive is %s, expected %s (a folder kiln could not use? see its log)", what,
            s.archive_enabled ? "on" : "off", mode_info[m].archive ? "on" : "off");
    printf("%s: whole %.3f s (context create %.3f s, %" PRIu64 " creates returned in %.3f s), destroy %.3f s, "
           "process %.2f s\n"
           "  per program create to ready: median %.1f ms, mean %.1f ms; archive files at start: %u; front ends "
           "compiled %" PRIu64 ", from the archive %" PRIu64 "; pipelines from the archive %" PRIu64
           "; compiles started %" PRIu64 "\n",
           what, s.whole_s, s.ctx_create_s, s.programs, s.creates_s, s.destroy_s, s.process_s, s.ready_median_ms,
           s.ready_mean_ms, s.archive_files, s.fronts_compiled, s.archive_hits, s.pipeline_hits, s.compiles_started);
    fflush(stdout);
    return s;
}

/* ---- main ---------------------------------------------------------------------------- */

static const char *type_name(int t)
{
    switch (t) {
    case KILN_DEVICE_INTEGRATED_GPU: return "integrated GPU";
    case KILN_DEVICE_DISCRETE_GPU: return "discrete GPU";
    case KILN_DEVICE_VIRTUAL_GPU: return "virtual GPU";
    case KILN_DEVICE_CPU: return "CPU device";
    default: return "other device";
    }
}

static void percent(char *buf, size_t cap, double warm, double cold)
{
    if (cold > 0)
        snprintf(buf, cap, "%.1f%%", 100.0 * warm / cold);
    else
        snprintf(buf, cap, "-");
}

int main(int argc, char **argv)
{
    struct opts o;
    parse_opts(&o, argc, argv);
    if (o.child_fd >= 0) {
        child_run(&o, o.child_fd);
        return 0;
    }

    uint64_t t_all = now_ns();
    const char *tmp = getenv("TMPDIR");
    snprintf(tmp_root, sizeof tmp_root, "%s/bench_archive.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmp_root)) {
        int e = errno;
        tmp_root[0] = 0;
        die("cannot make a temporary folder: %s", strerror(e));
    }
    keep_root = o.keep;
    atexit(cleanup);

    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_archive: %u distinct programs (%u giants of %u statements, %u small of 20-60 lines), seed %" PRIu64
           "; a child process per start\n",
           o.programs, o.giants, o.giant_lines, o.programs - o.giants, o.seed);
    char workers[160];
    const char *env_threads = getenv("KILN_COMPILE_THREADS");
    if (o.workers)
        snprintf(workers, sizeof workers, "%u (--workers)", o.workers);
    else if (env_threads && *env_threads)
        snprintf(workers, sizeof workers, "kiln's default: KILN_COMPILE_THREADS=%.32s", env_threads);
    else
        snprintf(workers, sizeof workers, "kiln's default: %ld, the number of cores", cores);
    printf("machine: %ld cores; compile workers: %s\n", cores, workers);
    printf("folders: %s (%s)\n", tmp_root, o.keep ? "kept: --keep" : "removed at the end; --keep keeps them");
    fflush(stdout);

    if (!o.no_warmup) {
        char dir[4200], sub[4300];
        path_join(dir, sizeof dir, tmp_root, "warmup");
        make_dir(dir);
        path_join(sub, sizeof sub, dir, "archive");
        make_dir(sub);
        path_join(sub, sizeof sub, dir, "driver-cache");
        make_dir(sub);
        printf("\nwarm-up (not counted)\n");
        (void)run_start(&o, argv[0], MODE_DRIVER, dir, false);
    }

    struct start res[MODE_COUNT][2];
    bool device_said = false;
    int device_type = KILN_DEVICE_OTHER;
    for (int m = 0; m < MODE_COUNT; m++) {
        if (!o.modes[m])
            continue;
        char dir[4200], sub[4300];
        path_join(dir, sizeof dir, tmp_root, mode_info[m].key);
        make_dir(dir);
        path_join(sub, sizeof sub, dir, "archive");
        make_dir(sub);
        path_join(sub, sizeof sub, dir, "driver-cache");
        make_dir(sub);
        printf("\nmode %s (%s)\n", mode_info[m].label, mode_info[m].env);
        for (int warm = 0; warm < 2; warm++) {
            res[m][warm] = run_start(&o, argv[0], (enum mode)m, dir, warm);
            if (!device_said) {
                device_type = res[m][warm].device_type;
                printf("device: %s (%s; %s), a %s\n", res[m][warm].device, res[m][warm].driver,
                       res[m][warm].driver_info, type_name(device_type));
                device_said = true;
            }
        }
        uint64_t files, bytes;
        path_join(sub, sizeof sub, dir, "archive");
        folder_usage(sub, &files, &bytes);
        printf("  archive folder: %" PRIu64 " files, %.1f KiB", files, (double)bytes / 1024);
        path_join(sub, sizeof sub, dir, "driver-cache");
        folder_usage(sub, &files, &bytes);
        printf("; driver cache folder: %" PRIu64 " files, %.1f KiB\n", files, (double)bytes / 1024);
        fflush(stdout);
    }

    /* The tables. */
    for (int m = 0; m < MODE_COUNT; m++) {
        if (!o.modes[m])
            continue;
        const struct start *c = &res[m][0], *w = &res[m][1];
        printf("\n%s (%s)\n", mode_info[m].label, mode_info[m].env);
        printf("  %-10s %9s %10s %12s %13s %10s %13s %13s %13s\n", "start", "whole s", "programs s", "prog med ms",
               "prog mean ms", "destroy s", "fronts built", "fronts arch.", "pipes arch.");
        for (int k = 0; k < 2; k++) {
            const struct start *s = &res[m][k];
            printf("  %-10s %9.3f %10.3f %12.1f %13.1f %10.3f %13" PRIu64 " %13" PRIu64 " %13" PRIu64 "\n",
                   k ? "warm" : "cold", s->whole_s, s->whole_s - s->ctx_create_s, s->ready_median_ms,
                   s->ready_mean_ms, s->destroy_s, s->fronts_compiled, s->archive_hits, s->pipeline_hits);
        }
        char r[5][16];
        percent(r[0], sizeof r[0], w->whole_s, c->whole_s);
        percent(r[1], sizeof r[1], w->whole_s - w->ctx_create_s, c->whole_s - c->ctx_create_s);
        percent(r[2], sizeof r[2], w->ready_median_ms, c->ready_median_ms);
        percent(r[3], sizeof r[3], w->ready_mean_ms, c->ready_mean_ms);
        percent(r[4], sizeof r[4], w->destroy_s, c->destroy_s);
        printf("  %-10s %9s %10s %12s %13s %10s\n", "warm/cold", r[0], r[1], r[2], r[3], r[4]);
    }
    printf("\nwhole s: context create to the last program ready; programs s: the same less the context\n"
           "  create; prog med/mean ms: each program's create to ready; destroy s: context destroy (the\n"
           "  run archive is saved there); fronts built: front ends compiled; fronts arch., pipes arch.:\n"
           "  front ends and pipelines taken from the archive; warm/cold: the warm start's figure as a\n"
           "  percentage of the cold one's.\n");

    /* The targets. */
    printf("\ntargets:\n");
    if (o.modes[MODE_ALONE]) {
        const struct start *c = &res[MODE_ALONE][0], *w = &res[MODE_ALONE][1];
        printf("  warm start compiles no front end (archive alone): %s (%" PRIu64 " of %" PRIu64 " compiled)\n",
               w->fronts_compiled == 0 ? "met" : "MISSED", w->fronts_compiled, w->programs);
        double wp = w->whole_s - w->ctx_create_s, cp = c->whole_s - c->ctx_create_s;
        double pc = cp > 0 ? 100.0 * wp / cp : 100.0;
        double whole_pc = c->whole_s > 0 ? 100.0 * w->whole_s / c->whole_s : 100.0;
        if (device_type != KILN_DEVICE_CPU)
            printf("  warm start's programs <= %.0f%% of cold (archive alone): %s (%.1f%%: %.3f s against %.3f s;\n"
                   "    with the context create: %.1f%%, %.3f s against %.3f s)\n",
                   TARGET_WARM_PERCENT, pc <= TARGET_WARM_PERCENT ? "met" : "MISSED", pc, wp, cp, whole_pc,
                   w->whole_s, c->whole_s);
        else
            printf("  warm start's programs <= %.0f%% of cold (archive alone): not a target on a CPU device, whose\n"
                   "    driver keeps no compiled code in pipeline caches (%.1f%%: %.3f s against %.3f s)\n",
                   TARGET_WARM_PERCENT, pc, wp, cp);
    } else {
        printf("  warm start compiles no front end (archive alone): not measured (--modes left it out)\n");
    }
    printf("total run: %.1f s\n", secs_since(t_all));
    return 0;
}
