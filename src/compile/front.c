/* SPDX-License-Identifier: MIT */
/*
 * front.c: front-end compiles (GLSL to SPIR-V, with reflection) in a
 * helper process the compile service watches, so one compile's time and
 * memory are bounded (see compile.h, front_compile).
 *
 * Only a separate process can bound a compiler's memory: glslang and the
 * optimizer allocate as they please, and a shader of nested macros can ask
 * for gigabytes over minutes. The helper, kiln-front, is a small program
 * built beside the library; it reads requests on its standard input, each
 * a frame ([u64 length][bytes]), compiles each with prog_compile and
 * writes each reply as a frame on its standard output, until its input
 * ends. Each compile service worker keeps one (started at its first
 * compile, so glslang's built-in tables are made once a worker, not once a
 * compile); one killed past a limit is started again for the next compile.
 * It is started with posix_spawn (an exec: never a fork of a
 * process that has made a context, whose device and threads a child must
 * not inherit), found by KILN_COMPILE_HELPER_PATH, else beside the library
 * or executable kiln is in (the same folder, ../libexec/kiln/, or ../ for
 * the build tree's tests), else at the installed path. While it runs, the
 * worker that started it polls its resident memory (/proc/PID/statm) and
 * the clock every 20 ms and kills it past a limit (rlimits would break the
 * sanitizer builds, whose shadow memory is address space), or when the
 * compile is no longer wanted (its last adopter let go) and has run 2 s
 * (before that it runs on: a late result is kept for the next request,
 * and most compiles are done by then). A helper that
 * dies (the compiler crashed on a hostile shader) fails that compile alone.
 *
 * The request carries the provenance whole, the include snapshot with it
 * (the compile service keys a request from the files it read once, and the
 * helper compiles exactly those: it reads no file itself); the reply
 * carries the compiler's result: on success the front end as the archive
 * encodes it (arc_front_encode: interface, log, SPIR-V), one codec for
 * both. Both are read through the bounds-checked reader; a reply that does
 * not hold up fails the compile, naming why.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile_private.h"

extern char **environ;

#define REQ_MAGIC 0x3251464bu    /* "KFQ2" */
#define REP_MAGIC 0x3152464bu    /* "KFR1" */
#define BLOB_NULL UINT64_MAX
#define REPLY_MAX (512ull << 20)  /* the most a reply may hold (SPIR-V and log) */
#define POLL_MS 20
/* A compile nobody wants any more runs on this long (most are done by
 * then, and a late result is kept for the next request), then stops. */
#define UNWANTED_GRACE_NS (2ull * 1000 * 1000 * 1000)

/* ---- the wire ------------------------------------------------------------------------ */

static void put_blob(struct bytes *b, const void *p, size_t n)
{
    bytes_put_u64(b, p ? (uint64_t)n : BLOB_NULL);
    if (p && n)
        bytes_put(b, p, n);
}
static void put_str(struct bytes *b, const char *s) { put_blob(b, s, s ? strlen(s) : 0); }

/* A blob as a malloc'd NUL-terminated copy (NULL for a NULL blob); false
 * on overrun or want of memory. */
static bool read_blob(struct bytes_reader *r, char **out, size_t *len)
{
    *out = NULL;
    uint64_t n = bytes_read_u64(r);
    if (r->overrun)
        return false;
    if (len)
        *len = 0;
    if (n == BLOB_NULL)
        return true;
    if (n > bytes_remaining(r)) {
        r->overrun = true;
        return false;
    }
    const uint8_t *p = bytes_read_span(r, (size_t)n);
    *out = str_ndup((const char *)(p ? p : (const uint8_t *)""), (size_t)n);
    if (len)
        *len = (size_t)n;
    return *out != NULL;
}

void front_request_encode(struct bytes *b, const struct prog_source *src)
{
    bytes_put_u32(b, REQ_MAGIC);
    bytes_put_u32(b, (uint32_t)src->lang);
    put_blob(b, src->source, src->source_len);
    put_str(b, src->name);
    put_str(b, src->entry);
    put_str(b, src->preamble);
    for (int a = 0; a < 3; a++)
        bytes_put_u32(b, src->workgroup_size[a]);
    bytes_put_u32(b, (uint32_t)src->optimize);
    bytes_put_u32(b, src->define_count);
    for (uint32_t i = 0; i < src->define_count; i++) {
        put_str(b, src->defines[i].name);
        put_str(b, src->defines[i].value);
    }
    bytes_put_u32(b, src->include_dir_count);
    for (uint32_t i = 0; i < src->include_dir_count; i++)
        put_str(b, src->include_dirs[i]);
    bytes_put_u32(b, src->includes_sealed || src->includes);   /* the helper reads no file: it is sealed */
    bytes_put_u32(b, src->include_count);
    for (uint32_t i = 0; i < src->include_count; i++) {
        const struct prog_include *f = &src->includes[i];
        put_str(b, f->req);
        put_str(b, f->from);
        bytes_put_u32(b, f->relative);
        put_str(b, f->path);
        put_blob(b, f->content, f->len);
        put_str(b, f->refused);
    }
}

bool front_request_decode(const uint8_t *p, size_t n, struct prog_source *src)
{
    *src = (struct prog_source){0};
    struct bytes_reader r;
    bytes_reader_init(&r, p, n);
    bool ok = bytes_read_u32(&r) == REQ_MAGIC;
    uint32_t lang = bytes_read_u32(&r);
    ok = ok && lang >= KILN_LANGUAGE_GLSL && lang <= KILN_LANGUAGE_SPIRV;
    src->lang = (kiln_language)lang;
    ok = ok && read_blob(&r, &src->source, &src->source_len) && src->source &&
              read_blob(&r, &src->name, NULL) && src->name && read_blob(&r, &src->entry, NULL) && src->entry &&
              read_blob(&r, &src->preamble, NULL);
    for (int a = 0; a < 3; a++)
        src->workgroup_size[a] = bytes_read_u32(&r);
    src->optimize = (int)bytes_read_u32(&r);
    uint32_t defines = bytes_read_u32(&r);
    /* Each define is two blobs of at least 8 bytes each. */
    ok = ok && !r.overrun && defines <= bytes_remaining(&r) / 16 &&
         (src->defines = mem_calloc(defines + 1, sizeof *src->defines)) != NULL;
    for (uint32_t i = 0; ok && i < defines; i++) {
        src->define_count = i + 1;
        ok = read_blob(&r, &src->defines[i].name, NULL) && read_blob(&r, &src->defines[i].value, NULL) &&
             src->defines[i].name && src->defines[i].value;
    }
    uint32_t dirs = ok ? bytes_read_u32(&r) : 0;
    ok = ok && !r.overrun && dirs <= KILN_MAX_INCLUDE_DIRS &&
         (src->include_dirs = mem_calloc(dirs + 1, sizeof *src->include_dirs)) != NULL;
    for (uint32_t i = 0; ok && i < dirs; i++) {
        src->include_dir_count = i + 1;
        ok = read_blob(&r, &src->include_dirs[i], NULL) && src->include_dirs[i];
    }
    src->includes_sealed = ok && bytes_read_u32(&r) != 0;
    uint32_t files = ok ? bytes_read_u32(&r) : 0;
    ok = ok && !r.overrun && files <= PROG_MAX_INCLUDE_FILES &&
         (src->includes = mem_calloc(files + 1, sizeof *src->includes)) != NULL;
    for (uint32_t i = 0; ok && i < files; i++) {
        struct prog_include *f = &src->includes[i];
        src->include_count = i + 1;
        ok = read_blob(&r, &f->req, NULL) && read_blob(&r, &f->from, NULL) && f->req && f->from;
        f->relative = ok && bytes_read_u32(&r) != 0;
        ok = ok && read_blob(&r, &f->path, NULL) && read_blob(&r, &f->content, &f->len) &&
             read_blob(&r, &f->refused, NULL);
    }
    src->constants = mem_alloc(sizeof *src->constants);   /* no input of the SPIR-V: none travel */
    ok = ok && src->constants && !r.overrun && bytes_remaining(&r) == 0;
    if (!ok)
        prog_source_finish(src);
    return ok;
}

void front_reply_encode(struct bytes *b, kiln_result r, const char *error, const struct prog_output *out)
{
    bytes_put_u32(b, REP_MAGIC);
    bytes_put_u32(b, (uint32_t)(int32_t)r);
    put_str(b, error);
    bytes_put_f64(b, out->seconds);
    put_str(b, out->log);
    if (r == KILN_OK) {
        struct bytes v = {0};
        arc_front_encode(&v, &out->iface, out->log, out->spirv, out->words);
        put_blob(b, v.oom ? NULL : v.p, v.len);
        b->oom |= v.oom;
        free(v.p);
    } else {
        put_blob(b, NULL, 0);
    }
}

/* The helper's reply into out; its result, or KILN_ERR_COMPILE naming what
 * was wrong with the reply. */
static kiln_result reply_decode(const char *name, const uint8_t *p, size_t n, struct prog_output *out)
{
    *out = (struct prog_output){0};
    struct bytes_reader r;
    bytes_reader_init(&r, p, n);
    char *error = NULL, *log = NULL, *front = NULL;
    size_t front_len = 0;
    bool ok = bytes_read_u32(&r) == REP_MAGIC;
    int32_t result = (int32_t)bytes_read_u32(&r);
    ok = ok && read_blob(&r, &error, NULL);
    double seconds = bytes_read_f64(&r);
    ok = ok && read_blob(&r, &log, NULL) && read_blob(&r, &front, &front_len) && !r.overrun &&
         bytes_remaining(&r) == 0 && result <= 0 && result > -1000;
    kiln_result res;
    char why[ARC_WHY_LEN] = "its reply does not hold up";
    struct arc_front f;
    if (ok && result == KILN_OK && front && arc_front_decode((const uint8_t *)front, front_len, &f, why)) {
        uint32_t *spirv = mem_alloc(f.words * 4 + 4);
        char *flog = str_ndup(f.log ? f.log : "", f.log_len);
        if (spirv && flog) {
            arc_front_spirv(&f, spirv);
            *out = (struct prog_output){.spirv = spirv, .words = f.words, .log = flog, .iface = f.iface,
                                        .seconds = seconds};
            res = KILN_OK;
        } else {
            free(spirv);
            free(flog);
            res = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory taking %s's compiled front end", name);
        }
    } else if (ok && result < 0) {
        out->log = log;
        out->seconds = seconds;
        log = NULL;
        res = KILN_RAISE((kiln_result)result, "%s", error ? error : "");
    } else {
        char line[400];
        snprintf(line, sizeof line, "%s: error: the compile helper's reply is not one kiln reads (%s)\n", name,
                 why);
        out->log = str_dup(line);
        res = KILN_RAISE(KILN_ERR_COMPILE, "%s: the compile helper's reply is not one kiln reads (%s)", name, why);
    }
    free(error);
    free(log);
    free(front);
    return res;
}

/* ---- finding the helper ------------------------------------------------------------- */

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static char helper[PATH_MAX];    /* "" when none was found */
static char looked[1024];        /* where it was looked for, for the message */

static bool try_path(const char *path)
{
    size_t n = strlen(looked);
    if (n + strlen(path) + 3 < sizeof looked)
        snprintf(looked + n, sizeof looked - n, "%s%s", n ? ", " : "", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0 && strlen(path) < sizeof helper) {
        snprintf(helper, sizeof helper, "%s", path);
        return true;
    }
    return false;
}

static void find_helper(void)
{
    const char *env = getenv("KILN_COMPILE_HELPER_PATH");
    if (env && *env) {
        try_path(env);
        return;   /* named: that one or none */
    }
    Dl_info info;
    if (dladdr((void *)find_helper, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        char dir[PATH_MAX], path[PATH_MAX + 64];
        char *real = realpath(info.dli_fname, NULL);
        snprintf(dir, sizeof dir, "%s", real ? real : info.dli_fname);
        free(real);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        const char *rel[] = {"kiln-front", "../libexec/kiln/kiln-front", "../kiln-front", "../../kiln-front"};
        for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, rel[i]);
            if (try_path(path))
                return;
        }
    }
#ifdef KILN_FRONT_INSTALL_PATH
    if (try_path(KILN_FRONT_INSTALL_PATH))
        return;
#endif
#ifdef KILN_FRONT_BUILD_PATH
    if (try_path(KILN_FRONT_BUILD_PATH))
        return;
#endif
}

const char *front_helper_path(void)
{
    pthread_once(&find_once, find_helper);
    return helper;
}

/* ---- running it ------------------------------------------------------------------ */

/* The resident bytes of pid, or 0 when they cannot be read. */
static uint64_t resident(pid_t pid)
{
    char p[64], buf[128];
    snprintf(p, sizeof p, "/proc/%d/statm", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long size = 0, rss = 0;
    if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
        return 0;
    return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The compile's failure past a limit, as its log and error say it. */
static kiln_result limit_failure(const char *name, const char *what, struct prog_output *out)
{
    char line[600];
    snprintf(line, sizeof line, "%s: error: the compile %s; it was stopped\n", name, what);
    free(out->log);
    out->log = str_dup(line);
    return KILN_RAISE(KILN_ERR_LIMIT, "%s: the compile %s; it was stopped", name, what);
}

static void helper_end(struct front_helper *h, bool kill_it)
{
    if (h->pid <= 0)
        return;
    if (kill_it)
        kill(h->pid, SIGKILL);
    if (h->to >= 0)
        close(h->to);
    if (h->from >= 0)
        close(h->from);
    int status = 0;
    while (waitpid(h->pid, &status, 0) < 0 && errno == EINTR)
        ;
    h->status = status;
    h->pid = 0;
    h->to = h->from = -1;
}

void front_helper_finish(struct front_helper *h) { helper_end(h, false); }

/* Starts the helper at path: its standard input and output are pipes to
 * this process. */
static kiln_result helper_start(struct front_helper *h, const char *path, const char *name)
{
    int in[2] = {-1, -1}, outp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) || pipe2(outp, O_CLOEXEC)) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (in[i] >= 0)
                close(in[i]);
            if (outp[i] >= 0)
                close(outp[i]);
        }
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "%s: no pipe for the compile helper: %s", name, strerror(e));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    char *argv[] = {(char *)path, (char *)"--front", NULL};
    pid_t pid;
    int e = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(outp[1]);
    if (e) {
        close(in[1]);
        close(outp[0]);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "%s: the compile helper %s could not start: %s", name, path,
                          strerror(e));
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(outp[0], F_SETFL, O_NONBLOCK);
    *h = (struct front_helper){.pid = pid, .to = in[1], .from = outp[0]};
    return KILN_OK;
}

kiln_result front_compile(const struct prog_source *src, struct front_limits *lim, struct front_helper *h,
                          struct prog_output *out)
{
    *out = (struct prog_output){0};
    const char *path = lim->in_process || !h ? "" : front_helper_path();
    if (!path[0]) {
        static _Atomic bool said;
        if (!lim->in_process && h && !atomic_exchange(&said, true))
            log_warn("compile: no kiln-front helper found (looked at %s; KILN_COMPILE_HELPER_PATH names one): front "
                     "ends compile in this process, without time or memory limits", looked[0] ? looked : "nothing");
        return prog_compile(src, out);
    }
    struct bytes req = {0};
    bytes_put_u64(&req, 0);   /* the frame's length, set below */
    front_request_encode(&req, src);
    if (req.oom) {
        free(req.p);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %s's compile request", src->name);
    }
    uint64_t body = req.len - 8;
    memcpy(req.p, &body, 8);
    if (h->pid <= 0) {
        kiln_result r = helper_start(h, path, src->name);
        if (r < 0) {
            free(req.p);
            return r;
        }
    }
    uint64_t start = time_now_ns();
    size_t sent = 0;
    struct bytes rep = {0};
    uint64_t want = UINT64_MAX;   /* the reply's length once its head is in */
    char stopped[256] = "";
    bool gone = false;            /* the helper closed its end (it died) */
    while (!stopped[0] && !gone && rep.len < (want == UINT64_MAX ? UINT64_MAX : want + 8)) {
        struct pollfd p[2] = {{h->from, POLLIN, 0}, {h->to, POLLOUT, 0}};
        int np = sent < req.len ? 2 : 1;
        int k = poll(p, (nfds_t)np, POLL_MS);
        if (k < 0 && errno != EINTR)
            break;
        if (np == 2 && (p[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t w = write(h->to, req.p + sent, req.len - sent);
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                gone = true;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            /* The helper writes one reply a request and nothing more until
             * the next request: whatever is there is this reply's. */
            uint8_t buf[65536];
            ssize_t n = -1;
            while (rep.len <= REPLY_MAX + 8 && (n = read(h->from, buf, sizeof buf)) > 0)
                bytes_put(&rep, buf, (size_t)n);
            gone = rep.len <= REPLY_MAX + 8 && n == 0;
            if (want == UINT64_MAX && rep.len >= 8 && !rep.oom)
                memcpy(&want, rep.p, 8);
            if (rep.len > REPLY_MAX + 8 || (want != UINT64_MAX && want > REPLY_MAX))
                snprintf(stopped, sizeof stopped, "sent more than %llu bytes back", (unsigned long long)REPLY_MAX);
        }
        if (rep.oom)
            break;
        uint64_t ns = time_now_ns() - start;
        uint64_t rss = resident(h->pid);
        if (!stopped[0] && lim->timeout_ns && ns > lim->timeout_ns)
            snprintf(stopped, sizeof stopped, "ran past its time limit of %.1f s (KILN_COMPILE_TIMEOUT_S, "
                     "compile_timeout_ms)", (double)lim->timeout_ns / 1e9);
        else if (!stopped[0] && lim->max_bytes && rss > lim->max_bytes)
            snprintf(stopped, sizeof stopped, "passed its memory limit of %llu MiB (%llu MiB resident; "
                     "KILN_COMPILE_MAX_BYTES, compile_max_bytes)", (unsigned long long)(lim->max_bytes >> 20),
                     (unsigned long long)(rss >> 20));
        else if (!stopped[0] && lim->wanted) {
            int w = lim->wanted(lim->ud);
            if (w == FRONT_STOP || (w == FRONT_UNWANTED && ns > UNWANTED_GRACE_NS)) {
                snprintf(stopped, sizeof stopped, "was no longer wanted");
                lim->stopped_unwanted = true;
            }
        }
    }
    free(req.p);
    kiln_result r;
    if (stopped[0]) {
        helper_end(h, true);   /* its memory goes back with it; the next compile starts another */
        r = limit_failure(src->name, stopped, out);
    } else if (rep.oom) {
        helper_end(h, true);
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %s's compiled front end", src->name);
    } else if (gone || want == UINT64_MAX || rep.len < want + 8) {
        helper_end(h, true);
        int status = h->status;
        char line[300];
        if (WIFSIGNALED(status))
            snprintf(line, sizeof line, "the compiler's process died (signal %d) compiling it", WTERMSIG(status));
        else
            snprintf(line, sizeof line, "the compiler's process ended (status %d) compiling it",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        char logline[400];
        snprintf(logline, sizeof logline, "%s: error: %s\n", src->name, line);
        out->log = str_dup(logline);
        r = KILN_RAISE(KILN_ERR_COMPILE, "%s: %s", src->name, line);
    } else {
        r = reply_decode(src->name, rep.p + 8, (size_t)want, out);
    }
    free(rep.p);
    return r;
}
