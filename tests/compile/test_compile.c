/* SPDX-License-Identifier: MIT */
/*
 * test_compile.c: the compile service's scheduling on the mock backend.
 * The front end is the real compiler (shaderc); the back end makes mock
 * pipelines. The service's test hooks run at the start of every job, before
 * the compile: here they are a gate that records which jobs started, in
 * what order, how many giants were in flight at once, and that can hold a
 * job (the test releases it by name) or fail it like a driver would.
 *
 * Everything is asserted as the scheduler's users see it: hook calls (what
 * ran, in which order, beside what), csvc_status/csvc_wait results, the
 * service's stats, the slow list. The few internals read (a node's state,
 * the giant bound, a node's back end) are read through compile.h's test
 * calls, under the service lock.
 * Waits are bounded, so a broken scheduler fails a test instead of hanging
 * it. Must stay clean under ThreadSanitizer (LABELS threads).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/mock/mock.h"
#include "base/base.h"
#include "compile/compile.h"
#include "test.h"

#define WAIT_S 60.0         /* generous: ThreadSanitizer slows shaderc a lot */
#define GIANT_LINES 300     /* statements in a giant's body */

static uint64_t g_giant_words;   /* between a small program's SPIR-V words and a giant's */

/* REQUIRE that goes to the test's `done:` label, where its rig is torn
 * down: a service left with a held hook would hang the exit drain. */
#define NEED(cond)                                                                                 \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: NEED(%s) failed\n", __FILE__, __LINE__, test_name_, #cond); \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define NEED_OK(call)                                                                              \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: %s returned %s: %s\n", __FILE__, __LINE__, test_name_,     \
                    #call, kiln_result_name(r_), kiln_last_error());                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

static double now_s(void) { return (double)time_now_ns() / 1e9; }

/* ---- sources --------------------------------------------------------------------------- */

/* A small program; k makes it distinct. */
static char *small_src(unsigned k)
{
    char *s = malloc(512);
    if (!s)
        abort();
    snprintf(s, 512,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(std430, binding = 0) buffer D { uint d[]; };\n"
             "void main() { uint i = gl_GlobalInvocationID.x; d[i] = d[i] * %uu + kiln_param(0); }\n",
             k + 3);
    return s;
}

/* A giant: a loop-free chain of GIANT_LINES statements; k makes it distinct. */
static char *giant_src(unsigned k)
{
    size_t cap = 512 + (size_t)GIANT_LINES * 80;
    char *s = malloc(cap);
    if (!s)
        abort();
    size_t o = (size_t)snprintf(s, cap,
                                "#version 450\n"
                                "layout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                                "void main() {\n"
                                "    uint i = gl_GlobalInvocationID.x;\n"
                                "    uint x = d[i];\n");
    for (unsigned j = 0; j < GIANT_LINES; j++)
        o += (size_t)snprintf(s + o, cap - o, "    x = (x ^ (x >> %uu)) * %uu + %uu;\n", j % 13 + 1,
                              2654435761u + 2 * j + 1000 * k, j);
    snprintf(s + o, cap - o, "    d[i] = x;\n}\n");
    return s;
}

/* ---- the gate: hooks that record, hold and fail jobs ------------------------------------- */

#define KEY_MAX 96
#define EV_MAX 1024
#define HOLD_MAX 16
#define IN_MAX 64

enum fail_mode { FAIL_NONE = 0, FAIL_WHEN_OVERLAPPED_ONCE, FAIL_ALWAYS };

struct ev {
    char key[KEY_MAX];     /* "front:<name>" or "back:<name>" */
    bool alone;
    uint32_t giants_in_flight;
};

struct gate {
    pthread_mutex_t m;           /* guards everything below */
    pthread_cond_t c;            /* holds changed, or a hook entered or left */
    char holds[HOLD_MAX][KEY_MAX];   /* patterns; a trailing '*' matches a prefix */
    uint32_t hold_n;
    struct ev ev[EV_MAX];        /* hook calls in the order they started */
    uint32_t ev_n;
    char inside[IN_MAX][KEY_MAX];    /* hooks running now */
    uint32_t inside_n;
    uint32_t fronts, backs;
    uint32_t giants_in, giants_max, alone_in;
    uint32_t violations;         /* a giant beside a retry alone */
    struct { char key[KEY_MAX]; enum fail_mode mode; uint32_t fails; } rules[8];   /* failing jobs */
    uint32_t rule_n;
    /* Looking after a failure: when the hook for look_key fails its job, a
     * thread takes the service lock before the hook returns, holds it while
     * the worker records the failure, and notes the job's state as
     * csvc_status would report it then. */
    char look_key[KEY_MAX];
    struct csvc *look_svc;
    pthread_t looker;
    bool looker_started, looker_locked;
    int look_state;            /* -1 until seen; -2: the job was not found running */
};

static void gate_init(struct gate *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->m, NULL);
    pthread_cond_init(&g->c, NULL);
}

static void gate_finish(struct gate *g)
{
    if (g->looker_started)
        pthread_join(g->looker, NULL);
    pthread_cond_destroy(&g->c);
    pthread_mutex_destroy(&g->m);
}

static bool matches(const char *pattern, const char *key)
{
    size_t n = strlen(pattern);
    if (n && pattern[n - 1] == '*')
        return !strncmp(pattern, key, n - 1);
    return !strcmp(pattern, key);
}

static bool held_locked(struct gate *g, const char *key)
{
    for (uint32_t i = 0; i < g->hold_n; i++)
        if (matches(g->holds[i], key))
            return true;
    return false;
}

static void gate_hold(struct gate *g, const char *pattern)
{
    pthread_mutex_lock(&g->m);
    if (g->hold_n < HOLD_MAX)
        snprintf(g->holds[g->hold_n++], KEY_MAX, "%s", pattern);
    pthread_mutex_unlock(&g->m);
}

/* Drops every hold equal to pattern ("*" alone drops them all). */
static void gate_release(struct gate *g, const char *pattern)
{
    pthread_mutex_lock(&g->m);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < g->hold_n; i++)
        if (strcmp(pattern, "*") && strcmp(g->holds[i], pattern))
            memmove(g->holds[kept++], g->holds[i], KEY_MAX);
    g->hold_n = kept;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

/* Makes the hook for key fail the job as a driver would. */
static void gate_fail(struct gate *g, const char *key, enum fail_mode mode)
{
    pthread_mutex_lock(&g->m);
    snprintf(g->rules[g->rule_n].key, KEY_MAX, "%s", key);
    g->rules[g->rule_n++].mode = mode;
    pthread_mutex_unlock(&g->m);
}

/* Runs with the service lock held (lock order: the service's, then the gate's). */
static void look_locked(struct csvc *svc, void *ud)
{
    struct gate *g = ud;
    pthread_mutex_lock(&g->m);
    g->looker_locked = true;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
    sleep_ms(100);   /* the worker leaves the hook and comes for the lock */
    /* The job is still its worker's: the worker records how it ended
     * under this lock. */
    int state = csvc_running_state_locked(svc, CJOB_BACK, strchr(g->look_key, ':') + 1);
    pthread_mutex_lock(&g->m);
    g->look_state = state < 0 ? -2 : state;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
}

static void *looker_main(void *arg)
{
    struct gate *g = arg;
    csvc_with_lock(g->look_svc, look_locked, g);
    return NULL;
}

static void gate_look_after_fail(struct gate *g, const char *key, struct csvc *svc)
{
    pthread_mutex_lock(&g->m);
    snprintf(g->look_key, KEY_MAX, "%s", key);
    g->look_svc = svc;
    g->look_state = -1;
    pthread_mutex_unlock(&g->m);
}

static int gate_seen_after_fail(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    while (g->looker_started && g->look_state < 0)
        pthread_cond_wait(&g->c, &g->m);
    int st = g->look_state;
    pthread_mutex_unlock(&g->m);
    return st;
}

static void deadline(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    ts->tv_sec += (time_t)s;
}

static bool inside_locked(struct gate *g, const char *key)
{
    for (uint32_t i = 0; i < g->inside_n; i++)
        if (!strcmp(g->inside[i], key))
            return true;
    return false;
}

/* Waits until the hook for key is running (and held). */
static bool gate_wait_inside(struct gate *g, const char *key)
{
    struct timespec ts;
    deadline(&ts, WAIT_S);
    pthread_mutex_lock(&g->m);
    bool ok = true;
    while (ok && !inside_locked(g, key))
        ok = pthread_cond_timedwait(&g->c, &g->m, &ts) == 0;
    ok = inside_locked(g, key);
    pthread_mutex_unlock(&g->m);
    if (!ok)
        fprintf(stderr, "%s: timed out waiting for hook %s\n", test_name_, key);
    return ok;
}

/* Waits until n giants are inside their back hook. */
static bool gate_wait_giants(struct gate *g, uint32_t n)
{
    struct timespec ts;
    deadline(&ts, WAIT_S);
    pthread_mutex_lock(&g->m);
    while (g->giants_in < n && pthread_cond_timedwait(&g->c, &g->m, &ts) == 0) {
    }
    bool ok = g->giants_in >= n;
    uint32_t in = g->giants_in;
    pthread_mutex_unlock(&g->m);
    if (!ok)
        fprintf(stderr, "%s: timed out waiting for %u giants in their back end (%u)\n", test_name_, n, in);
    return ok;
}

/* How many hook calls were for key (prefix match with a trailing '*'). */
static uint32_t gate_count(struct gate *g, const char *pattern)
{
    pthread_mutex_lock(&g->m);
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->ev_n; i++)
        n += matches(pattern, g->ev[i].key);
    pthread_mutex_unlock(&g->m);
    return n;
}

/* Index of the first hook call for key at or after `from`, or -1. */
static int gate_index(struct gate *g, const char *key, uint32_t from)
{
    pthread_mutex_lock(&g->m);
    int at = -1;
    for (uint32_t i = from; i < g->ev_n && at < 0; i++)
        if (!strcmp(g->ev[i].key, key))
            at = (int)i;
    pthread_mutex_unlock(&g->m);
    return at;
}

static uint32_t gate_events(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    uint32_t n = g->ev_n;
    pthread_mutex_unlock(&g->m);
    return n;
}

static struct ev gate_event(struct gate *g, uint32_t i)
{
    pthread_mutex_lock(&g->m);
    struct ev e = {0};
    if (i < g->ev_n)
        e = g->ev[i];
    pthread_mutex_unlock(&g->m);
    return e;
}

static void gate_dump(struct gate *g, uint32_t from)
{
    pthread_mutex_lock(&g->m);
    fprintf(stderr, "%s: hook calls from %u:", test_name_, from);
    for (uint32_t i = from; i < g->ev_n; i++)
        fprintf(stderr, " %s%s", g->ev[i].key, g->ev[i].alone ? "(alone)" : "");
    fprintf(stderr, "\n");
    pthread_mutex_unlock(&g->m);
}

static kiln_result gate_pass(struct gate *g, const char *kind, const char *name, bool giant, bool alone,
                             uint32_t giants_in_flight)
{
    char key[KEY_MAX];
    snprintf(key, sizeof key, "%s:%s", kind, name);
    pthread_mutex_lock(&g->m);
    if (g->ev_n < EV_MAX) {
        struct ev *e = &g->ev[g->ev_n++];
        snprintf(e->key, sizeof e->key, "%s", key);
        e->alone = alone;
        e->giants_in_flight = giants_in_flight;
    }
    if (!strcmp(kind, "front"))
        g->fronts++;
    else
        g->backs++;
    if (giant && ((alone && g->giants_in > 0) || (!alone && g->alone_in > 0)))
        g->violations++;
    for (uint32_t i = 0; i < g->rule_n; i++) {
        if (strcmp(g->rules[i].key, key))
            continue;
        bool fail = g->rules[i].mode == FAIL_ALWAYS ||
                    (g->rules[i].mode == FAIL_WHEN_OVERLAPPED_ONCE && giants_in_flight > 0 && !g->rules[i].fails);
        if (fail) {
            g->rules[i].fails++;
            if (g->look_svc && !g->looker_started && !strcmp(g->look_key, key)) {
                g->looker_started = pthread_create(&g->looker, NULL, looker_main, g) == 0;
                while (g->looker_started && !g->looker_locked)
                    pthread_cond_wait(&g->c, &g->m);
            }
            pthread_cond_broadcast(&g->c);
            pthread_mutex_unlock(&g->m);
            return KILN_RAISE(KILN_ERR_DEVICE, "test driver: out of device memory compiling %s", name);
        }
    }
    if (g->inside_n < IN_MAX)
        snprintf(g->inside[g->inside_n++], KEY_MAX, "%s", key);
    if (giant && !alone) {
        g->giants_in++;
        if (g->giants_in > g->giants_max)
            g->giants_max = g->giants_in;
    }
    if (alone)
        g->alone_in++;
    pthread_cond_broadcast(&g->c);
    while (held_locked(g, key))
        pthread_cond_wait(&g->c, &g->m);
    for (uint32_t i = 0; i < g->inside_n; i++)
        if (!strcmp(g->inside[i], key)) {
            memmove(g->inside[i], g->inside[g->inside_n - 1], KEY_MAX);
            g->inside_n--;
            break;
        }
    if (giant && !alone)
        g->giants_in--;
    if (alone)
        g->alone_in--;
    pthread_cond_broadcast(&g->c);
    pthread_mutex_unlock(&g->m);
    return KILN_OK;
}

static kiln_result hook_front(void *ud, const struct prog_source *src)
{
    return gate_pass(ud, "front", src->name, false, false, 0);
}

static kiln_result hook_back(void *ud, const char *name, size_t words, bool alone, uint32_t giants_in_flight)
{
    return gate_pass(ud, "back", name, words > g_giant_words, alone, giants_in_flight);
}

/* ---- the rig: a mock device, a service over it, the gate ------------------------------ */

struct rig {
    struct kb_device *dev;
    struct csvc *svc;
    struct gate g;
    struct cjob *jobs[256];      /* held by the test; released at rig_done */
    uint32_t job_n;
    bool destroyed;
    bool gave_up;                /* a wait timed out: later waits do not wait */
};

struct rig_opts {
    uint32_t workers, giant_compiles, alone_tries;
    double slow_s;
    int worker_caches;
    bool in_process;   /* front ends compiled in this process (fault injection reaches them) */
};

static kiln_result rig_init(struct rig *r, struct rig_opts o)
{
    memset(r, 0, sizeof *r);
    gate_init(&r->g);
    KILN_TRY(mockb_create(&(struct kb_settings){0}, &r->dev));
    struct csvc_config cfg = {
        .workers = o.workers ? o.workers : 2,
        .giant_words = g_giant_words,
        .giant_compiles = o.giant_compiles ? o.giant_compiles : 4,
        .alone_tries = o.alone_tries ? o.alone_tries : 2,
        .slow_s = o.slow_s > 0 ? o.slow_s : 60,
        .worker_caches = o.worker_caches,
        .stack_bytes = 16u << 20,
        .compile_in_process = o.in_process,
    };
    return csvc_create(r->dev, &cfg, &(struct csvc_hooks){hook_front, hook_back, &r->g}, &r->svc);
}

/* Releases every held job, drains, destroys; the mock must hold no object. */
static void rig_done(struct rig *r)
{
    gate_release(&r->g, "*");
    if (r->svc && !r->destroyed) {
        for (uint32_t i = 0; i < r->job_n; i++)
            if (r->jobs[i])
                csvc_release(r->svc, r->jobs[i]);
        csvc_destroy(r->svc);
    }
    if (r->dev) {
        CHECK_EQ(mockb_counts(r->dev).live_objects, 0);
        kb_destroy(r->dev);
    }
    gate_finish(&r->g);
}

static kiln_result request_desc(struct rig *r, const kiln_program_desc *d, enum cprio prio, struct cjob **out)
{
    struct prog_source src;
    KILN_TRY(prog_source_init(&src, d));
    kiln_result res = csvc_request(r->svc, &src, prio, out);
    prog_source_finish(&src);
    if (res == KILN_OK) {
        if (r->job_n < KILN_ARRAY_LEN(r->jobs))
            r->jobs[r->job_n++] = *out;
        else
            CHECK(!"the rig holds too many jobs");
    }
    return res;
}

/* Requests a program; the rig holds the node until rig_done (or drop). */
static kiln_result request(struct rig *r, const char *name, const char *source, struct cjob **out)
{
    return request_desc(r, &(kiln_program_desc){.source = source, .name = name}, CPRIO_NORMAL, out);
}

static kiln_result request_small(struct rig *r, const char *name, unsigned k, struct cjob **out)
{
    char *s = small_src(k);
    kiln_result res = request(r, name, s, out);
    free(s);
    return res;
}

static kiln_result request_giant(struct rig *r, const char *name, unsigned k, struct cjob **out)
{
    char *s = giant_src(k);
    kiln_result res = request(r, name, s, out);
    free(s);
    return res;
}

/* Lets go of one of the rig's holds on job (the test releases it itself). */
static void drop(struct rig *r, struct cjob *j)
{
    for (uint32_t i = 0; i < r->job_n; i++)
        if (r->jobs[i] == j) {
            r->jobs[i] = NULL;
            csvc_release(r->svc, j);
            return;
        }
    CHECK(!"drop of a job the rig does not hold");
}

static enum cjob_state job_state(struct rig *r, struct cjob *j) { return csvc_job_state(r->svc, j); }

static uint32_t giant_bound(struct rig *r) { return csvc_giant_bound(r->svc); }

/* Polls until a stat reaches want. */
#define WAIT_STAT(r, field, want) wait_stat((r), offsetof(struct csvc_stats, field), (want), #field)
static bool wait_stat(struct rig *r, size_t off, uint64_t want, const char *what)
{
    double end = now_s() + (r->gave_up ? 0 : WAIT_S);
    for (;;) {
        struct csvc_stats st = csvc_stats_get(r->svc);
        uint64_t v;
        memcpy(&v, (const char *)&st + off, sizeof v);
        if (v >= want)
            return true;
        if (now_s() > end) {
            fprintf(stderr, "%s: timed out waiting for stats.%s >= %llu (at %llu)\n", test_name_, what,
                    (unsigned long long)want, (unsigned long long)v);
            r->gave_up = true;
            return false;
        }
        sleep_ms(2);
    }
}

static bool wait_idle(struct rig *r)
{
    double end = now_s() + (r->gave_up ? 0 : WAIT_S);
    while (csvc_pending(r->svc) != 0) {
        if (now_s() > end) {
            fprintf(stderr, "%s: timed out waiting for the service to go idle\n", test_name_);
            r->gave_up = true;
            return false;
        }
        sleep_ms(2);
    }
    return true;
}

/* The program's state once it ended, as csvc_wait would return it, but
 * bounded: a job that never ends fails the test instead of hanging it (and
 * the rig's later waits give up at once). */
static kiln_program_state wait_result(struct rig *r, struct cjob *j, struct csvc_result *res)
{
    double end = now_s() + (r->gave_up ? 0 : WAIT_S);
    for (;;) {
        kiln_program_state st = csvc_status(r->svc, j, res);
        if (st != KILN_PROGRAM_PENDING)
            return st;
        if (now_s() > end) {
            if (!r->gave_up)
                fprintf(stderr, "%s: timed out waiting for %s to end\n", test_name_, csvc_job_name(j));
            r->gave_up = true;
            return st;
        }
        sleep_ms(1);
    }
}

static kiln_program_state wait_state(struct rig *r, struct cjob *j)
{
    struct csvc_result res;
    return wait_result(r, j, &res);
}

static uint32_t gate_giants_max(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    uint32_t n = g->giants_max;
    pthread_mutex_unlock(&g->m);
    return n;
}

static uint32_t gate_violations(struct gate *g)
{
    pthread_mutex_lock(&g->m);
    uint32_t n = g->violations;
    pthread_mutex_unlock(&g->m);
    return n;
}

/* ---- 1, 2: dedupe and adoption ------------------------------------------------------------- */

struct burst {
    struct rig *r;
    const char *name, *source;
    int count;
    pthread_barrier_t *start;
    struct cjob *got[8];
    int got_n;
    kiln_result res;
};

static void *burst_main(void *arg)
{
    struct burst *b = arg;
    if (b->start)
        pthread_barrier_wait(b->start);
    for (int i = 0; i < b->count; i++) {
        struct prog_source src;
        b->res = prog_source_init(&src, &(kiln_program_desc){.source = b->source, .name = b->name});
        if (b->res < 0)
            return NULL;
        b->res = csvc_request(b->r->svc, &src, CPRIO_NORMAL, &b->got[i]);
        prog_source_finish(&src);
        if (b->res < 0)
            return NULL;
        b->got_n++;
    }
    return NULL;
}

/* Every request of the bursts got `want`, and sees it READY with one
 * pipeline; releases them all. */
static void check_bursts(struct rig *r, struct burst *b, int nb, struct cjob *want)
{
    struct csvc_result first;
    CHECK_EQ(wait_result(r, want, &first), KILN_PROGRAM_READY);
    CHECK(first.pipeline != NULL);
    for (int t = 0; t < nb; t++) {
        CHECK_OK(b[t].res);
        CHECK_EQ(b[t].got_n, b[t].count);
        for (int i = 0; i < b[t].got_n; i++) {
            struct csvc_result res;
            CHECK(b[t].got[i] == want);
            CHECK_EQ(csvc_wait(r->svc, b[t].got[i], true, &res), KILN_PROGRAM_READY);
            CHECK(res.pipeline == first.pipeline);
        }
    }
}

static void release_bursts(struct rig *r, struct burst *b, int nb)
{
    for (int t = 0; t < nb; t++) {
        for (int i = 0; i < b[t].got_n; i++)
            csvc_release(r->svc, b[t].got[i]);
        b[t].got_n = 0;
    }
}

TEST(identical_requests_compile_once)
{
    struct rig r;
    struct burst b[4] = {0};
    pthread_t t[4];
    int started = 0;
    char *src = small_src(1), *src2 = small_src(2);
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    /* Held in its front end: every later request adopts the node in flight. */
    gate_hold(&r.g, "front:same");
    struct cjob *first;
    NEED_OK(request(&r, "same", src, &first));
    NEED(gate_wait_inside(&r.g, "front:same"));
    for (int i = 0; i < 4; i++) {
        b[i] = (struct burst){.r = &r, .name = "same", .source = src, .count = i < 3 ? 5 : 4};
        NEED(pthread_create(&t[i], NULL, burst_main, &b[i]) == 0);
        started++;
    }
    for (; started > 0; started--)
        pthread_join(t[started - 1], NULL);
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.requests, 20);
    CHECK_EQ(st.adopted, 19);
    gate_release(&r.g, "front:same");
    check_bursts(&r, b, 4, first);
    release_bursts(&r, b, 4);
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.started, 2);   /* one front end, one back end */
    CHECK_EQ(st.adopted + st.deduplicated, 19);
    CHECK_EQ(gate_count(&r.g, "front:same"), 1);
    CHECK_EQ(gate_count(&r.g, "back:same"), 1);

    /* Once done, an equal request is served by the finished node. */
    struct cjob *again;
    NEED_OK(request(&r, "same", src, &again));
    CHECK(again == first);
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.deduplicated, 1);
    CHECK_EQ(st.started, 2);

    /* First requests racing from four threads: still one compile. */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 4);
    for (int i = 0; i < 4; i++) {
        b[i] = (struct burst){.r = &r, .name = "race", .source = src2, .count = 5, .start = &bar};
        if (pthread_create(&t[i], NULL, burst_main, &b[i]) != 0)
            abort();   /* the others would wait at the barrier forever */
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    NEED_OK(b[0].res);
    check_bursts(&r, b, 4, b[0].got[0]);
    release_bursts(&r, b, 4);
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.requests, 41);
    CHECK_EQ(st.started, 4);
    CHECK_EQ(st.adopted + st.deduplicated, 19 + 1 + 19);
    CHECK_EQ(gate_count(&r.g, "front:race"), 1);
    CHECK_EQ(gate_count(&r.g, "back:race"), 1);
    CHECK_EQ(st.hash_collisions, 0);
done:
    gate_release(&r.g, "*");
    for (; started > 0; started--)
        pthread_join(t[started - 1], NULL);
    release_bursts(&r, b, 4);
    rig_done(&r);
    free(src);
    free(src2);
}

TEST(a_request_adopts_the_node_in_flight)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    gate_hold(&r.g, "front:a");
    struct cjob *a1, *a2;
    NEED_OK(request_small(&r, "a", 1, &a1));
    NEED(gate_wait_inside(&r.g, "front:a"));
    CHECK_EQ(job_state(&r, a1), CJOB_RUNNING);
    NEED_OK(request_small(&r, "a", 1, &a2));
    CHECK(a2 == a1);
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.adopted, 1);
    CHECK_EQ(st.deduplicated, 0);
    struct csvc_result res;
    CHECK_EQ(csvc_status(r.svc, a2, &res), KILN_PROGRAM_PENDING);
    gate_release(&r.g, "front:a");
    CHECK_EQ(wait_state(&r, a1), KILN_PROGRAM_READY);
    CHECK_EQ(wait_result(&r, a2, &res), KILN_PROGRAM_READY);
    CHECK(res.pipeline != NULL && res.layout != NULL && res.front && res.front->words > 0);
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.started, 2);
    CHECK_EQ(gate_count(&r.g, "front:a"), 1);
    CHECK_EQ(gate_count(&r.g, "back:a"), 1);
done:
    rig_done(&r);
}

/* ---- 3: what makes two requests equal ------------------------------------------------------- */

static bool write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fputs(text, f);
    return fclose(f) == 0;
}

static void remove_file(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
}

TEST(requests_are_equal_exactly_when_their_inputs_are)
{
    struct rig r;
    char dir[] = "/tmp/kiln-test-compile-XXXXXX";
    bool made_dir = false;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    const char *defsrc = "#version 450\n"
                         "layout(local_size_x = 64) in;\n"
                         "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                         "void main() { d[gl_GlobalInvocationID.x] = VALUE + OTHER; }\n";
    kiln_define ab[] = {{"VALUE", "1u"}, {"OTHER", "2u"}};
    kiln_define ba[] = {{"OTHER", "2u"}, {"VALUE", "1u"}};
    kiln_define ab3[] = {{"VALUE", "3u"}, {"OTHER", "2u"}};
    struct cjob *d1, *d2, *d3;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = defsrc, .name = "def", .defines = ab, .define_count = 2},
                         CPRIO_NORMAL, &d1));
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = defsrc, .name = "def", .defines = ba, .define_count = 2},
                         CPRIO_NORMAL, &d2));
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = defsrc, .name = "def3", .defines = ab3, .define_count = 2},
                         CPRIO_NORMAL, &d3));
    CHECK(d1 == d2);   /* the same set of defines in another order */
    CHECK(d1 != d3);   /* one define's value differs */

    const char *entsrc = "#version 450\n"
                         "layout(local_size_x = 64) in;\n"
                         "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                         "void ea() { d[gl_GlobalInvocationID.x] = 1u; }\n"
                         "void eb() { d[gl_GlobalInvocationID.x] = 2u; }\n";
    struct cjob *ea, *eb, *ea2;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = entsrc, .name = "ea", .entry = "ea"}, CPRIO_NORMAL, &ea));
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = entsrc, .name = "eb", .entry = "eb"}, CPRIO_NORMAL, &eb));
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = entsrc, .name = "ea", .entry = "ea"}, CPRIO_NORMAL, &ea2));
    CHECK(ea != eb);   /* another entry */
    CHECK(ea == ea2);

    /* Optimization off is another request; on is the default. */
    struct cjob *o1, *o2;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = defsrc, .name = "def", .defines = ab, .define_count = 2,
                                                  .optimize = -1},
                         CPRIO_NORMAL, &o1));
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = defsrc, .name = "def", .defines = ab, .define_count = 2,
                                                  .optimize = 1},
                         CPRIO_NORMAL, &o2));
    CHECK(o1 != d1);
    CHECK(o2 == d1);

    /* Included files, through an include folder, two levels deep. Each
     * compile ends before a file changes (see includes_are_compiled_as_keyed). */
    NEED(mkdtemp(dir));
    made_dir = true;
    const char *dirs[] = {dir};
    const char *incsrc = "#version 450\n"
                         "#include \"outer.glsl\"\n"
                         "layout(local_size_x = 64) in;\n"
                         "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                         "void main() { d[gl_GlobalInvocationID.x] = INC + INNER; }\n";
    kiln_program_desc incd = {.source = incsrc, .name = "inc", .include_dirs = dirs, .include_dir_count = 1};
    struct cjob *i1, *i2, *i3, *i4, *i5;
    NEED(write_file(dir, "outer.glsl", "#include \"inner.glsl\"\n#define INC 1u\n"));
    NEED(write_file(dir, "inner.glsl", "#define INNER 10u\n"));
    NEED_OK(request_desc(&r, &incd, CPRIO_NORMAL, &i1));
    CHECK_EQ(wait_state(&r, i1), KILN_PROGRAM_READY);
    NEED(write_file(dir, "outer.glsl", "#include \"inner.glsl\"\n#define INC 2u\n"));
    NEED_OK(request_desc(&r, &incd, CPRIO_NORMAL, &i2));
    CHECK(i2 != i1);   /* the included file changed */
    CHECK_EQ(wait_state(&r, i2), KILN_PROGRAM_READY);
    NEED(write_file(dir, "outer.glsl", "#include \"inner.glsl\"\n#define INC 1u\n"));
    NEED_OK(request_desc(&r, &incd, CPRIO_NORMAL, &i3));
    CHECK(i3 == i1);   /* back as it was */
    NEED(write_file(dir, "inner.glsl", "#define INNER 20u\n"));
    NEED_OK(request_desc(&r, &incd, CPRIO_NORMAL, &i4));
    CHECK(i4 != i1 && i4 != i2);   /* a file the included file includes changed */
    CHECK_EQ(wait_state(&r, i4), KILN_PROGRAM_READY);
    /* A missing include: a request of its own, and a failed compile naming the file. */
    remove_file(dir, "inner.glsl");
    NEED_OK(request_desc(&r, &incd, CPRIO_NORMAL, &i5));
    CHECK(i5 != i1 && i5 != i4);
    struct csvc_result res;
    CHECK_EQ(wait_result(&r, i5, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "inner.glsl"));

    /* Each distinct request compiled once; the equal ones not at all (the
     * distinct ones all make distinct SPIR-V: no back end is shared). */
    CHECK(wait_idle(&r));
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.requests, 13);
    CHECK_EQ(st.adopted + st.deduplicated, 4);   /* d2, ea2, o2, i3 */
    CHECK_EQ(st.hash_collisions, 0);
    CHECK_EQ(gate_count(&r.g, "front:*"), 9);
    CHECK_EQ(gate_count(&r.g, "back:*"), 8);     /* all but the failed i5 */
done:
    if (made_dir) {
        remove_file(dir, "inner.glsl");
        remove_file(dir, "outer.glsl");
        rmdir(dir);
    }
    rig_done(&r);
}

/* The key records each included file's bytes when the program is asked
 * for; the compile must build those bytes, or a result is cached under a
 * key that does not describe it. */
TEST(includes_are_compiled_as_keyed)
{
    struct rig r;
    char dir[] = "/tmp/kiln-test-compile-XXXXXX";
    bool made_dir = false;
    struct prog_output want = {0};
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    NEED(mkdtemp(dir));
    made_dir = true;
    const char *dirs[] = {dir};
    const char *src = "#version 450\n"
                      "#include \"k.glsl\"\n"
                      "layout(local_size_x = 64) in;\n"
                      "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                      "void main() { d[gl_GlobalInvocationID.x] = K; }\n";
    kiln_program_desc d = {.source = src, .name = "keyed", .include_dirs = dirs, .include_dir_count = 1};
    NEED(write_file(dir, "k.glsl", "#define K 1u\n"));
    gate_hold(&r.g, "front:keyed");
    struct cjob *j;
    NEED_OK(request_desc(&r, &d, CPRIO_NORMAL, &j));
    NEED(gate_wait_inside(&r.g, "front:keyed"));
    /* The file changes between the request and the compile. */
    NEED(write_file(dir, "k.glsl", "#define K 2u\n"));
    gate_release(&r.g, "front:keyed");
    struct csvc_result res;
    NEED(wait_result(&r, j, &res) == KILN_PROGRAM_READY);
    /* An equal request (K = 1 again) is served this node, so it must hold
     * what K = 1 compiles to. */
    NEED(write_file(dir, "k.glsl", "#define K 1u\n"));
    struct prog_source ps;
    NEED_OK(prog_source_init(&ps, &d));
    kiln_result cr = prog_compile(&ps, &want);
    prog_source_finish(&ps);
    NEED_OK(cr);
    struct cjob *again;
    NEED_OK(request_desc(&r, &d, CPRIO_NORMAL, &again));
    CHECK(again == j);
    CHECK(res.front->words == want.words && !memcmp(res.front->spirv, want.spirv, want.words * 4));
done:
    prog_output_finish(&want);
    if (made_dir) {
        remove_file(dir, "k.glsl");
        rmdir(dir);
    }
    rig_done(&r);
}

/* ---- 4: release and cancel --------------------------------------------------------------- */

TEST(a_queued_node_is_cancelled_only_when_its_last_adopter_lets_go)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    gate_hold(&r.g, "front:busy");
    struct cjob *busy, *a1, *a2;
    NEED_OK(request_small(&r, "busy", 1, &busy));
    NEED(gate_wait_inside(&r.g, "front:busy"));
    NEED_OK(request_small(&r, "a", 2, &a1));
    NEED_OK(request_small(&r, "a", 2, &a2));
    NEED(a1 == a2);
    CHECK_EQ(csvc_stats_get(r.svc).adopted, 1);
    drop(&r, a1);
    CHECK_EQ(job_state(&r, a2), CJOB_QUEUED);   /* one adopter is left */
    CHECK_EQ(csvc_stats_get(r.svc).cancelled, 0);
    CHECK_EQ(csvc_pending(r.svc), 2);
    drop(&r, a2);
    CHECK_EQ(csvc_stats_get(r.svc).cancelled, 1);
    CHECK_EQ(csvc_pending(r.svc), 1);           /* only busy */
    gate_release(&r.g, "front:busy");
    CHECK_EQ(wait_state(&r, busy), KILN_PROGRAM_READY);
    CHECK(wait_idle(&r));
    CHECK_EQ(gate_count(&r.g, "front:a"), 0);   /* never ran */
    CHECK_EQ(gate_count(&r.g, "back:a"), 0);
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.cancelled, 1);
    CHECK_EQ(st.started, 2);
    /* A new request for it is a new node, and compiles. */
    struct cjob *a3;
    NEED_OK(request_small(&r, "a", 2, &a3));
    CHECK_EQ(wait_state(&r, a3), KILN_PROGRAM_READY);
    CHECK_EQ(gate_count(&r.g, "front:a"), 1);
done:
    rig_done(&r);
}

TEST(a_node_cancelled_while_running_is_not_adopted)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    gate_hold(&r.g, "front:run");
    struct cjob *p1, *p2, *p3;
    NEED_OK(request_small(&r, "run", 1, &p1));
    NEED(gate_wait_inside(&r.g, "front:run"));
    drop(&r, p1);   /* released while its front end runs */
    NEED_OK(request_small(&r, "run", 1, &p2));
    CHECK(p2 != p1);   /* a new node */
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.adopted, 0);
    CHECK_EQ(st.cancelled, 0);   /* running: it finishes */
    gate_release(&r.g, "front:run");
    CHECK_EQ(wait_state(&r, p2), KILN_PROGRAM_READY);
    CHECK(wait_idle(&r));
    CHECK_EQ(gate_count(&r.g, "front:run"), 2);
    CHECK_EQ(gate_count(&r.g, "back:run"), 1);   /* the two front ends made the same SPIR-V */
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.started, 3);
    /* A third request is served a finished node. */
    uint64_t dedup = st.deduplicated;
    NEED_OK(request_small(&r, "run", 1, &p3));
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.deduplicated, dedup + 1);
    CHECK_EQ(st.started, 3);
done:
    rig_done(&r);
}

TEST(a_late_result_is_kept_for_the_next_request)
{
    /* Released while its front end runs, nobody asks meanwhile: the front
     * end's result is kept when it ends (no back end is compiled for
     * nobody), and the next request is served it without compiling it
     * again; only its back end is compiled then. In process: a helper's
     * front end nobody wants is stopped 2 s into its run, which a loaded
     * machine under a sanitizer can reach. */
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1, .in_process = true}));
    gate_hold(&r.g, "front:late");
    struct cjob *l1, *l2;
    NEED_OK(request_small(&r, "late", 7, &l1));
    NEED(gate_wait_inside(&r.g, "front:late"));
    drop(&r, l1);
    gate_release(&r.g, "front:late");
    CHECK(wait_idle(&r));
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.started, 1);
    CHECK_EQ(st.cancelled, 0);
    CHECK_EQ(gate_count(&r.g, "back:late"), 0);
    NEED_OK(request_small(&r, "late", 7, &l2));
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.deduplicated, 1);
    struct csvc_result res;
    CHECK_EQ(wait_result(&r, l2, &res), KILN_PROGRAM_READY);
    CHECK(res.pipeline != NULL);
    CHECK(wait_idle(&r));
    CHECK_EQ(csvc_stats_get(r.svc).started, 2);
    CHECK_EQ(gate_count(&r.g, "front:late"), 1);
    CHECK_EQ(gate_count(&r.g, "back:late"), 1);
done:
    rig_done(&r);
}

TEST(released_results_are_kept_for_re_adoption)
{
    /* A finished program nobody holds any more is kept: asking again is
     * served without compiling. The cache is small: after many more
     * releases the oldest is gone and compiles again, the newest is kept. */
    enum { MANY = 100 };
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    struct cjob *j, *again;
    NEED_OK(request_small(&r, "kept", 1, &j));
    CHECK_EQ(wait_state(&r, j), KILN_PROGRAM_READY);
    drop(&r, j);
    NEED_OK(request_small(&r, "kept", 1, &again));
    struct csvc_result res;
    CHECK_EQ(csvc_status(r.svc, again, &res), KILN_PROGRAM_READY);   /* at once */
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.deduplicated, 1);
    CHECK_EQ(st.started, 2);
    drop(&r, again);

    for (unsigned i = 0; i < MANY; i++) {
        char name[32];
        snprintf(name, sizeof name, "many-%u", i);
        NEED_OK(request_small(&r, name, 100 + i, &j));
        CHECK_EQ(wait_state(&r, j), KILN_PROGRAM_READY);
        drop(&r, j);
    }
    NEED(wait_idle(&r));
    st = csvc_stats_get(r.svc);
    CHECK_EQ(st.started, 2 + 2 * MANY);
    char name[32];
    snprintf(name, sizeof name, "many-%u", MANY - 1);
    NEED_OK(request_small(&r, name, 100 + MANY - 1, &j));   /* the newest released */
    CHECK_EQ(csvc_status(r.svc, j, &res), KILN_PROGRAM_READY);
    CHECK_EQ(csvc_stats_get(r.svc).started, 2 + 2 * MANY);
    NEED_OK(request_small(&r, "kept", 1, &j));   /* the oldest released: evicted */
    CHECK_EQ(wait_state(&r, j), KILN_PROGRAM_READY);
    CHECK_EQ(csvc_stats_get(r.svc).started, 2 + 2 * MANY + 2);
    CHECK_EQ(gate_count(&r.g, "front:kept"), 2);
done:
    rig_done(&r);
}

/* ---- 5: continuations ----------------------------------------------------------------------- */

struct cont_rec {
    atomic_int fired;
    atomic_int state;   /* the node's state when it fired */
};

static void on_end(struct csvc *s, struct cjob *j, void *ud)
{
    (void)s;
    struct cont_rec *c = ud;
    atomic_store(&c->state, (int)csvc_job_state_locked(j));
    atomic_fetch_add(&c->fired, 1);
}

TEST(continuations_fire_exactly_once)
{
    struct rig r;
    struct cont_rec ca, cb, cc, cd, ce;
    struct cont_rec *all[] = {&ca, &cb, &cc, &cd, &ce};
    for (int i = 0; i < 5; i++) {
        atomic_init(&all[i]->fired, 0);
        atomic_init(&all[i]->state, -1);
    }
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    gate_hold(&r.g, "front:c");
    struct cjob *c, *q, *bad, *more;
    NEED_OK(request_small(&r, "c", 1, &c));
    NEED(gate_wait_inside(&r.g, "front:c"));
    NEED_OK(csvc_then(r.svc, c, on_end, &ca));
    CHECK_EQ(atomic_load(&ca.fired), 0);   /* running */

    /* Queued behind c, then released: fires on cancel. */
    NEED_OK(request_small(&r, "q", 2, &q));
    NEED_OK(csvc_then(r.svc, q, on_end, &cc));
    drop(&r, q);
    CHECK_EQ(atomic_load(&cc.fired), 1);
    CHECK_EQ(atomic_load(&cc.state), CJOB_CANCELLED);

    /* A failing compile. */
    NEED_OK(request(&r, "bad", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() { nope(); }\n", &bad));
    NEED_OK(csvc_then(r.svc, bad, on_end, &cd));

    gate_release(&r.g, "front:c");
    CHECK_EQ(wait_state(&r, c), KILN_PROGRAM_READY);
    CHECK_EQ(atomic_load(&ca.fired), 1);
    CHECK_EQ(atomic_load(&ca.state), CJOB_DONE);
    /* Added after the node ended: fires at once, inside the call. */
    NEED_OK(csvc_then(r.svc, c, on_end, &cb));
    CHECK_EQ(atomic_load(&cb.fired), 1);
    CHECK_EQ(atomic_load(&cb.state), CJOB_DONE);
    /* The back-end node too. */
    struct cjob *back = csvc_back_of(r.svc, c);
    NEED(back != NULL);
    NEED_OK(csvc_then(r.svc, back, on_end, &ce));
    CHECK_EQ(atomic_load(&ce.fired), 1);

    CHECK_EQ(wait_state(&r, bad), KILN_PROGRAM_FAILED);
    CHECK_EQ(atomic_load(&cd.fired), 1);
    CHECK_EQ(atomic_load(&cd.state), CJOB_FAILED);

    /* More work, and the end of the service, fire nothing again. */
    NEED_OK(request_small(&r, "more", 3, &more));
    CHECK_EQ(wait_state(&r, more), KILN_PROGRAM_READY);
done:
    rig_done(&r);
    CHECK_EQ(atomic_load(&ca.fired), 1);
    CHECK_EQ(atomic_load(&cb.fired), 1);
    CHECK_EQ(atomic_load(&cc.fired), 1);
    CHECK_EQ(atomic_load(&cd.fired), 1);
    CHECK_EQ(atomic_load(&ce.fired), 1);
}

/* ---- 6-9: giants -------------------------------------------------------------------------- */

static kiln_result request_giants(struct rig *r, const char *prefix, unsigned n, struct cjob **out)
{
    for (unsigned i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s-%u", prefix, i);
        KILN_TRY(request_giant(r, name, i, &out[i]));
    }
    return KILN_OK;
}

/* workers 4, giant_compiles 4: at most min(4, 4 - 1) = 3 giants; one worker
 * stuck on a small job leaves exactly 3 for giants. */
TEST(the_giant_bound_holds_beside_a_stuck_small_compile)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 4, .giant_compiles = 4}));
    gate_hold(&r.g, "back:stuck");
    gate_hold(&r.g, "back:giant*");
    struct cjob *stuck, *g[6];
    NEED_OK(request_small(&r, "stuck", 1, &stuck));
    NEED(gate_wait_inside(&r.g, "back:stuck"));
    CHECK_EQ(giant_bound(&r), 3);
    NEED_OK(request_giants(&r, "giant", 6, g));
    NEED(gate_wait_giants(&r.g, 3));
    sleep_ms(300);   /* time for a fourth to start, were the bound broken */
    CHECK_EQ(gate_count(&r.g, "back:giant*"), 3);
    gate_release(&r.g, "back:giant*");
    for (int i = 0; i < 6; i++)
        CHECK_EQ(wait_state(&r, g[i]), KILN_PROGRAM_READY);
    CHECK_EQ(gate_count(&r.g, "back:giant*"), 6);
    CHECK_EQ(gate_giants_max(&r.g), 3);
    struct csvc_result res;
    CHECK_EQ(csvc_status(r.svc, stuck, &res), KILN_PROGRAM_PENDING);   /* still stuck */
done:
    rig_done(&r);
}

/* giant_compiles 2 with 4 workers, one stuck: 2 giants run, the free
 * worker defers the rest and still serves small work. */
TEST(deferred_giants_leave_workers_to_small_compiles)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 4, .giant_compiles = 2}));
    gate_hold(&r.g, "back:stuck");
    gate_hold(&r.g, "back:giant*");
    struct cjob *stuck, *g[6], *small;
    NEED_OK(request_small(&r, "stuck", 1, &stuck));
    NEED(gate_wait_inside(&r.g, "back:stuck"));
    CHECK_EQ(giant_bound(&r), 2);
    NEED_OK(request_giants(&r, "giant", 6, g));
    NEED(gate_wait_giants(&r.g, 2));
    CHECK(WAIT_STAT(&r, giants_deferred, 4));
    NEED_OK(request_small(&r, "small", 2, &small));
    CHECK_EQ(wait_state(&r, small), KILN_PROGRAM_READY);   /* giants held and deferred meanwhile */
    CHECK_EQ(gate_count(&r.g, "back:giant*"), 2);
    gate_release(&r.g, "back:giant*");
    for (int i = 0; i < 6; i++)
        CHECK_EQ(wait_state(&r, g[i]), KILN_PROGRAM_READY);
    CHECK_EQ(gate_giants_max(&r.g), 2);
    CHECK_EQ(csvc_stats_get(r.svc).giants_deferred, 4);   /* each deferred once */
done:
    rig_done(&r);
}

TEST(one_or_two_workers_bound_giants_to_one)
{
    struct rig r;
    struct cjob *g[3], *small;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1, .giant_compiles = 4}));
    NEED_OK(request_giants(&r, "giant", 3, g));
    CHECK_EQ(giant_bound(&r), 1);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(wait_state(&r, g[i]), KILN_PROGRAM_READY);
    CHECK_EQ(gate_giants_max(&r.g), 1);
    rig_done(&r);

    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2, .giant_compiles = 4}));
    NEED_OK(request_small(&r, "small", 2, &small));
    CHECK_EQ(giant_bound(&r), 1);   /* one worker stays for small work */
done:
    rig_done(&r);
}

/* workers 2, bound 1: giant-a runs (held), giant-b is deferred, a held
 * small front end takes the other worker, then small jobs are queued.
 * When giant-a ends, what runs next on the freed worker? */
static void deferred_scene(bool want)
{
    int failures = test_failures_;
    struct rig r;
    uint32_t mark = 0;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2, .giant_compiles = 4}));
    gate_hold(&r.g, "back:giant-a");
    gate_hold(&r.g, "front:hold-x");
    struct cjob *ga, *gb, *x, *s1, *s2, *s3;
    NEED_OK(request_giant(&r, "giant-a", 1, &ga));
    NEED(gate_wait_inside(&r.g, "back:giant-a"));
    NEED_OK(request_giant(&r, "giant-b", 2, &gb));
    NEED(WAIT_STAT(&r, giants_deferred, 1));
    NEED_OK(request_small(&r, "hold-x", 1, &x));
    NEED(gate_wait_inside(&r.g, "front:hold-x"));
    NEED_OK(request_small(&r, "small-1", 2, &s1));
    NEED_OK(request_small(&r, "small-2", 3, &s2));
    NEED_OK(request_small(&r, "small-3", 4, &s3));
    if (want) {
        csvc_want(r.svc, s3);
        CHECK_EQ(csvc_stats_get(r.svc).wanted, 1);
    }
    mark = gate_events(&r.g);
    CHECK_EQ(gate_count(&r.g, "back:giant-b"), 0);
    gate_release(&r.g, "back:giant-a");
    CHECK_EQ(wait_state(&r, gb), KILN_PROGRAM_READY);
    CHECK_EQ(wait_state(&r, s1), KILN_PROGRAM_READY);
    CHECK_EQ(wait_state(&r, s2), KILN_PROGRAM_READY);
    CHECK_EQ(wait_state(&r, s3), KILN_PROGRAM_READY);
    int gbi = gate_index(&r.g, "back:giant-b", mark);
    int s1i = gate_index(&r.g, "front:small-1", mark);
    if (!want) {
        /* The deferred giant goes first, before the normal work posted after it. */
        CHECK_EQ(gbi, (int)mark);
        CHECK(s1i > gbi);
    } else {
        /* The wanted job and its back end go first, no giant starts while
         * it is queued; then the deferred giant, then normal work. */
        CHECK_EQ(gate_index(&r.g, "front:small-3", mark), (int)mark);
        CHECK_EQ(gate_index(&r.g, "back:small-3", mark), (int)mark + 1);
        CHECK_EQ(gbi, (int)mark + 2);
        CHECK(s1i > gbi);
    }
    gate_release(&r.g, "front:hold-x");
    CHECK_EQ(wait_state(&r, x), KILN_PROGRAM_READY);
    CHECK_EQ(wait_state(&r, ga), KILN_PROGRAM_READY);
    CHECK_EQ(gate_giants_max(&r.g), 1);
done:
    if (test_failures_ > failures)
        gate_dump(&r.g, mark);
    rig_done(&r);
}

TEST(deferred_giants_go_first_when_a_giant_ends) { deferred_scene(false); }
TEST(no_giant_starts_while_a_wanted_compile_is_queued) { deferred_scene(true); }

TEST(a_giant_that_failed_beside_others_is_retried_alone)
{
    /* workers 3, giant_compiles 2: bound 2. */
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 3, .giant_compiles = 2, .alone_tries = 2}));
    gate_hold(&r.g, "back:giant-r1");
    gate_hold(&r.g, "back:giant-r2");   /* its first run fails before the hold */
    gate_fail(&r.g, "back:giant-r2", FAIL_WHEN_OVERLAPPED_ONCE);
    struct cjob *r1, *r2, *r3, *small;
    NEED_OK(request_giant(&r, "giant-r1", 1, &r1));
    gate_look_after_fail(&r.g, "back:giant-r2", r.svc);
    NEED(gate_wait_inside(&r.g, "back:giant-r1"));
    NEED_OK(request_giant(&r, "giant-r2", 2, &r2));
    NEED(WAIT_STAT(&r, retries_alone, 1));
    /* Between its failure and its retry, its status was never FAILED. */
    CHECK_EQ(gate_seen_after_fail(&r.g), CJOB_RUNNING);
    int first = gate_index(&r.g, "back:giant-r2", 0);
    NEED(first >= 0);
    struct ev e = gate_event(&r.g, (uint32_t)first);
    CHECK(!e.alone);
    CHECK_EQ(e.giants_in_flight, 1);
    sleep_ms(200);   /* the retry waits while giant-r1 is in flight */
    CHECK_EQ(gate_count(&r.g, "back:giant-r2"), 1);
    struct csvc_result res;
    CHECK_EQ(csvc_status(r.svc, r2, &res), KILN_PROGRAM_PENDING);   /* not failed: retried */

    gate_release(&r.g, "back:giant-r1");
    NEED(gate_wait_inside(&r.g, "back:giant-r2"));
    int second = gate_index(&r.g, "back:giant-r2", (uint32_t)first + 1);
    NEED(second >= 0);
    e = gate_event(&r.g, (uint32_t)second);
    CHECK(e.alone);
    CHECK_EQ(e.giants_in_flight, 0);
    /* While it runs alone no giant starts (deferred), but small work does. */
    NEED_OK(request_giant(&r, "giant-r3", 3, &r3));
    NEED(WAIT_STAT(&r, giants_deferred, 1));
    NEED_OK(request_small(&r, "small", 1, &small));
    CHECK_EQ(wait_state(&r, small), KILN_PROGRAM_READY);
    CHECK_EQ(gate_count(&r.g, "back:giant-r3"), 0);
    gate_release(&r.g, "back:giant-r2");
    CHECK_EQ(wait_result(&r, r2, &res), KILN_PROGRAM_READY);
    CHECK(res.pipeline != NULL);
    CHECK_EQ(wait_state(&r, r1), KILN_PROGRAM_READY);
    CHECK_EQ(wait_state(&r, r3), KILN_PROGRAM_READY);
    CHECK(gate_index(&r.g, "back:giant-r3", 0) > second);
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.retries_alone, 1);
    CHECK_EQ(st.failed, 0);
    CHECK_EQ(gate_violations(&r.g), 0);
    CHECK_EQ(gate_count(&r.g, "back:giant-r2"), 2);
done:
    rig_done(&r);
}

TEST(a_giant_failing_alone_too_fails_for_good_after_alone_tries)
{
    int failures = test_failures_;
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 3, .giant_compiles = 2, .alone_tries = 2}));
    gate_hold(&r.g, "back:giant-f1");
    gate_fail(&r.g, "back:giant-f2", FAIL_ALWAYS);
    struct cjob *f1, *f2;
    NEED_OK(request_giant(&r, "giant-f1", 1, &f1));
    NEED(gate_wait_inside(&r.g, "back:giant-f1"));
    NEED_OK(request_giant(&r, "giant-f2", 2, &f2));
    NEED(WAIT_STAT(&r, retries_alone, 1));
    gate_release(&r.g, "back:giant-f1");
    struct csvc_result res;
    CHECK_EQ(wait_result(&r, f2, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "out of device memory compiling giant-f2"));   /* the driver's reason */
    CHECK(res.pipeline == NULL);
    CHECK_EQ(wait_state(&r, f1), KILN_PROGRAM_READY);
    CHECK(wait_idle(&r));
    struct csvc_stats st = csvc_stats_get(r.svc);
    /* Tried once beside giant-f1, then alone_tries (2) times alone. */
    CHECK_EQ(st.retries_alone, 2);
    CHECK_EQ(gate_count(&r.g, "back:giant-f2"), 3);
    CHECK_EQ(st.failed, 1);
    CHECK_EQ(gate_violations(&r.g), 0);
done:
    if (test_failures_ > failures)
        gate_dump(&r.g, 0);
    rig_done(&r);
}

/* ---- 10-13 ----------------------------------------------------------------------------------- */

TEST(slow_compiles_are_named)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2, .slow_s = 0.3}));
    gate_hold(&r.g, "front:slowpoke");
    struct cjob *s;
    NEED_OK(request_small(&r, "slowpoke", 1, &s));
    NEED(gate_wait_inside(&r.g, "front:slowpoke"));
    sleep_ms(1000);
    struct csvc_slow list[8];
    uint32_t n = csvc_slow_list(r.svc, list, 8);
    CHECK_EQ(n, 1);
    if (n >= 1) {
        CHECK(!strcmp(list[0].name, "slowpoke"));
        CHECK_EQ(list[0].kind, CJOB_FRONT);
        CHECK(list[0].seconds >= 0.3);
    }
    CHECK_EQ(csvc_stats_get(r.svc).slow, 1);   /* named once, however long it runs */
    gate_release(&r.g, "front:slowpoke");
    CHECK_EQ(wait_state(&r, s), KILN_PROGRAM_READY);
    CHECK_EQ(csvc_slow_list(r.svc, NULL, 0), n);
done:
    rig_done(&r);
}

struct waiter {
    struct csvc *svc;
    struct cjob *job;
    kiln_program_state state;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    struct csvc_result res;
    w->state = csvc_wait(w->svc, w->job, true, &res);
    return NULL;
}

TEST(a_wanted_compile_goes_first)
{
    int failures = test_failures_;
    struct rig r;
    uint32_t mark = 0;
    bool waiting = false;
    pthread_t t;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    gate_hold(&r.g, "front:x");
    struct cjob *x, *j[4];
    NEED_OK(request_small(&r, "x", 1, &x));
    NEED(gate_wait_inside(&r.g, "front:x"));
    const char *names[4] = {"n0", "n1", "n2", "n3"};
    for (int i = 0; i < 4; i++)
        NEED_OK(request_small(&r, names[i], 10 + (unsigned)i, &j[i]));
    csvc_want(r.svc, j[3]);
    CHECK_EQ(csvc_stats_get(r.svc).wanted, 1);
    mark = gate_events(&r.g);
    gate_release(&r.g, "front:x");
    for (int i = 0; i < 4; i++)
        CHECK_EQ(wait_state(&r, j[i]), KILN_PROGRAM_READY);
    CHECK_EQ(gate_index(&r.g, "front:n3", mark), (int)mark);
    CHECK_EQ(gate_index(&r.g, "back:n3", mark), (int)mark + 1);    /* its back end is wanted too */
    CHECK_EQ(gate_index(&r.g, "front:n0", mark), (int)mark + 2);   /* then in order */
    CHECK_EQ(gate_index(&r.g, "front:n1", mark), (int)mark + 3);

    /* A waiter marks it wanted too: csvc_wait(want) from another thread. */
    gate_hold(&r.g, "front:y");
    struct cjob *y, *k[3];
    NEED_OK(request_small(&r, "y", 2, &y));
    NEED(gate_wait_inside(&r.g, "front:y"));
    const char *kn[3] = {"k0", "k1", "k2"};
    for (int i = 0; i < 3; i++)
        NEED_OK(request_small(&r, kn[i], 20 + (unsigned)i, &k[i]));
    struct waiter w = {r.svc, k[2], KILN_PROGRAM_PENDING};
    NEED(pthread_create(&t, NULL, waiter_main, &w) == 0);
    waiting = true;
    CHECK(WAIT_STAT(&r, wanted, 2));
    mark = gate_events(&r.g);
    gate_release(&r.g, "front:y");
    pthread_join(t, NULL);
    waiting = false;
    CHECK_EQ(w.state, KILN_PROGRAM_READY);
    CHECK_EQ(gate_index(&r.g, "front:k2", mark), (int)mark);
    NEED(wait_idle(&r));

    /* Wanting a program whose front end is done moves its queued back end up. */
    gate_hold(&r.g, "front:b0");
    gate_hold(&r.g, "back:b0");
    struct cjob *bj[4];
    const char *bn[4] = {"b0", "b1", "b2", "b3"};
    NEED_OK(request_small(&r, bn[0], 40, &bj[0]));
    /* The one worker is inside b0's front end until every request is in:
     * b1..b3's front ends are queued before b0's back end, whatever the
     * timing. */
    NEED(gate_wait_inside(&r.g, "front:b0"));
    for (int i = 1; i < 4; i++)
        NEED_OK(request_small(&r, bn[i], 40 + (unsigned)i, &bj[i]));
    gate_release(&r.g, "front:b0");
    NEED(gate_wait_inside(&r.g, "back:b0"));   /* the four front ends ran; b1..b3's back ends wait */
    csvc_want(r.svc, bj[3]);
    mark = gate_events(&r.g);
    gate_release(&r.g, "back:b0");
    for (int i = 0; i < 4; i++)
        CHECK_EQ(wait_state(&r, bj[i]), KILN_PROGRAM_READY);
    CHECK_EQ(gate_index(&r.g, "back:b3", mark), (int)mark);
done:
    if (test_failures_ > failures)
        gate_dump(&r.g, 0);
    gate_release(&r.g, "*");
    if (waiting)
        pthread_join(t, NULL);
    rig_done(&r);
}

struct releaser {
    struct gate *g;
    unsigned ms;
};

static void *releaser_main(void *arg)
{
    struct releaser *rl = arg;
    sleep_ms(rl->ms);
    gate_release(rl->g, "*");
    return NULL;
}

TEST(destroy_with_compiles_queued_and_running_drains)
{
    struct rig r;
    struct cont_rec cq[3];
    for (int i = 0; i < 3; i++) {
        atomic_init(&cq[i].fired, 0);
        atomic_init(&cq[i].state, -1);
    }
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2, .worker_caches = 1}));
    gate_hold(&r.g, "back:b");
    gate_hold(&r.g, "front:f");
    struct cjob *b, *f, *q[3];
    NEED_OK(request_small(&r, "b", 1, &b));
    NEED(gate_wait_inside(&r.g, "back:b"));
    NEED_OK(request_small(&r, "f", 2, &f));
    NEED(gate_wait_inside(&r.g, "front:f"));
    const char *qn[3] = {"q0", "q1", "q2"};
    for (int i = 0; i < 3; i++) {
        NEED_OK(request_small(&r, qn[i], 3 + (unsigned)i, &q[i]));
        NEED_OK(csvc_then(r.svc, q[i], on_end, &cq[i]));
    }
    CHECK_EQ(csvc_pending(r.svc), 5);
    struct releaser rl = {&r.g, 200};
    pthread_t t;
    NEED(pthread_create(&t, NULL, releaser_main, &rl) == 0);
    csvc_destroy(r.svc);   /* the nodes the rig holds go with it */
    r.destroyed = true;
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(atomic_load(&cq[i].fired), 1);
        CHECK_EQ(atomic_load(&cq[i].state), CJOB_CANCELLED);
    }
    CHECK_EQ(gate_count(&r.g, "front:q*"), 0);
    CHECK_EQ(gate_count(&r.g, "back:f"), 0);   /* posted after the stop: never runs */
    CHECK_EQ(gate_count(&r.g, "front:*"), 2);
    CHECK_EQ(gate_count(&r.g, "back:*"), 1);
    rig_done(&r);   /* checks that no mock object is left */

    /* Work queued on one worker, nothing held. */
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    for (int i = 0; i < 3; i++)
        NEED_OK(request_small(&r, qn[i], 3 + (unsigned)i, &q[i]));
    csvc_destroy(r.svc);
    r.destroyed = true;
done:
    rig_done(&r);
}

TEST(failures_carry_their_reason)
{
    struct rig r;
    const char *broken = "#version 450\n"
                         "layout(local_size_x = 1) in;\n"
                         "void main() { undeclared_thing = 1; }\n";
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    struct cjob *bad, *doomed, *refused, *bad2, *hooked;
    NEED_OK(request(&r, "broken.comp", broken, &bad));
    gate_fail(&r.g, "back:doomed", FAIL_ALWAYS);
    NEED_OK(request_small(&r, "doomed", 1, &doomed));
    struct csvc_result res;
    CHECK_EQ(wait_result(&r, bad, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "broken.comp:3:") && strstr(res.error, "undeclared_thing"));
    CHECK(res.pipeline == NULL);
    CHECK_EQ(gate_count(&r.g, "back:broken.comp"), 0);
    CHECK_EQ(wait_result(&r, doomed, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "doomed") && strstr(res.error, "out of device memory compiling doomed"));
    CHECK(res.front != NULL && res.front->words > 0);   /* its front end succeeded */
    CHECK(res.pipeline == NULL);
    /* A workgroup the device cannot run (the mock allows 1024 invocations)
     * fails in the back end, saying why. */
    NEED_OK(request(&r, "wide", "#version 450\nlayout(local_size_x = 1024, local_size_y = 2) in;\nvoid main() {}\n", &refused));
    CHECK_EQ(wait_result(&r, refused, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "the device cannot run it") && strstr(res.error, "2048 invocations"));
    CHECK_EQ(res.code, KILN_ERR_LIMIT);
    CHECK_EQ(gate_count(&r.g, "back:wide"), 1);
    CHECK(wait_idle(&r));
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(st.failed, 3);
    CHECK_EQ(st.retries_alone, 0);   /* small, nothing beside it: not retried */
    CHECK_EQ(gate_count(&r.g, "back:doomed"), 1);
    /* Asking again for a program that failed to compile reports the failure. */
    NEED_OK(request(&r, "broken.comp", broken, &bad2));
    CHECK_EQ(wait_result(&r, bad2, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "broken.comp:3:"));
    rig_done(&r);

    /* A front-end hook failure: the job fails with its reason. */
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    gate_fail(&r.g, "front:hooked", FAIL_ALWAYS);
    NEED_OK(request(&r, "hooked", "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", &hooked));
    CHECK_EQ(wait_result(&r, hooked, &res), KILN_PROGRAM_FAILED);
    CHECK(res.error && strstr(res.error, "hooked") && strstr(res.error, "out of device memory compiling hooked"));
    CHECK_EQ(gate_count(&r.g, "back:hooked"), 0);
done:
    rig_done(&r);
}

/* A back end's failure is not kept once its program is let go: asked for
 * again, the program's front end is adopted (kept for re-adoption) and its
 * back end compiles again, whether it failed before or after the program
 * was let go. */
TEST(a_back_end_failure_is_not_kept_once_its_program_is_let_go)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1}));
    struct csvc_result res;
    gate_fail(&r.g, "back:flaky", FAIL_ALWAYS);
    struct cjob *a, *b, *c, *d;
    NEED_OK(request_small(&r, "flaky", 1, &a));
    CHECK_EQ(wait_result(&r, a, &res), KILN_PROGRAM_FAILED);
    drop(&r, a);
    NEED_OK(request_small(&r, "flaky", 1, &b));
    CHECK_EQ(wait_result(&r, b, &res), KILN_PROGRAM_FAILED);   /* the driver still refuses it */
    CHECK(res.error && strstr(res.error, "out of device memory compiling flaky"));
    CHECK_EQ(gate_count(&r.g, "front:flaky"), 1);
    CHECK_EQ(gate_count(&r.g, "back:flaky"), 2);

    /* The back end fails after the program was let go: its front end has
     * ended, the back end waits (the workers held) when it is released. */
    gate_fail(&r.g, "back:late", FAIL_ALWAYS);
    gate_hold(&r.g, "front:late");
    NEED_OK(request_small(&r, "late", 2, &c));
    NEED(gate_wait_inside(&r.g, "front:late"));
    csvc_hold(r.svc, true);
    gate_release(&r.g, "front:late");
    for (double end = now_s() + WAIT_S; job_state(&r, c) != CJOB_DONE && now_s() < end;)
        sleep_ms(1);
    NEED(job_state(&r, c) == CJOB_DONE);
    drop(&r, c);
    csvc_hold(r.svc, false);
    NEED(wait_idle(&r));
    CHECK_EQ(gate_count(&r.g, "back:late"), 1);
    NEED_OK(request_small(&r, "late", 2, &d));
    CHECK_EQ(wait_result(&r, d, &res), KILN_PROGRAM_FAILED);
    CHECK_EQ(gate_count(&r.g, "front:late"), 1);
    CHECK_EQ(gate_count(&r.g, "back:late"), 2);
done:
    csvc_hold(r.svc, false);
    rig_done(&r);
}

/* Host memory running out while the fold guard rewrites a program's
 * divisions (before the optimizer) fails the program with
 * KILN_ERR_NO_MEMORY, saying what could not be allocated; it never runs
 * unoptimized instead. Each allocation from a request on is failed in turn
 * (the n-th and every later one: base.h's mem_fault_arm), a new program
 * (and SPIR-V) each time, until a request meets no failure. */
TEST(out_of_memory_guarding_divisions_fails_the_program)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 1, .in_process = true}));
    bool guard_failed = false, clean = false;
    for (uint64_t n = 1; n <= 2000 && !clean && !r.gave_up; n++) {
        char name[32], src[256];
        snprintf(name, sizeof name, "divide-%llu", (unsigned long long)n);
        snprintf(src, sizeof src,
                 "#version 450\n"
                 "layout(local_size_x = 64) in;\n"
                 "layout(std430, binding = 0) buffer D { int d[]; };\n"
                 "void main() { uint i = gl_GlobalInvocationID.x; d[i] = d[i] / int(kiln_param(0)) + %d; }\n",
                 (int)n);
        struct prog_source ps;
        NEED_OK(prog_source_init(&ps, &(kiln_program_desc){.source = src, .name = name}));
        mem_fault_arm(n);
        struct cjob *j = NULL;
        kiln_result res = csvc_request(r.svc, &ps, CPRIO_NORMAL, &j);
        struct csvc_result out = {0};
        kiln_program_state st = res == KILN_OK ? wait_result(&r, j, &out) : KILN_PROGRAM_FAILED;
        uint64_t hits = mem_fault_hits();
        mem_fault_arm(0);
        prog_source_finish(&ps);
        if (res != KILN_OK) {
            CHECK_EQ(res, KILN_ERR_NO_MEMORY);
            continue;
        }
        if (st == KILN_PROGRAM_FAILED) {
            CHECK_EQ(out.code, KILN_ERR_NO_MEMORY);
            CHECK(out.error && strstr(out.error, "out of host memory "));
            guard_failed |= out.error && strstr(out.error, "out of host memory guarding divisions");
        } else if (st == KILN_PROGRAM_READY) {
            clean = hits == 0;
        }
        csvc_release(r.svc, j);
    }
    CHECK(clean);
    CHECK(guard_failed);
done:
    mem_fault_arm(0);
    rig_done(&r);
}

TEST(worker_caches_merge_at_a_phase_end)
{
    struct rig r;
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2, .worker_caches = 1}));
    struct cjob *j[4];
    const char *names[4] = {"m0", "m1", "m2", "m3"};
    for (int i = 0; i < 4; i++)
        NEED_OK(request_small(&r, names[i], 30 + (unsigned)i, &j[i]));
    for (int i = 0; i < 4; i++)
        CHECK_EQ(wait_state(&r, j[i]), KILN_PROGRAM_READY);
    CHECK(WAIT_STAT(&r, cache_merges, 1));
    CHECK(mockb_counts(r.dev).cache_merges >= 1);
done:
    rig_done(&r);
}

/* ---- specialization constants: one front end, a back end per set -------------------------- */

static const char *k_sets_src = "#version 450\n"
                                "layout(local_size_x_id = 0) in;\n"
                                "layout(constant_id = 1) const uint K = 1;\n"
                                "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                                "void main() { x[gl_GlobalInvocationID.x] *= K; }\n";

struct set_burst {
    struct rig *r;
    uint32_t k;                  /* the set: {0: 64, 1: k} */
    pthread_barrier_t *start;
    struct cjob *got[4];
    int got_n;
    kiln_result res;
};

static void *set_burst_main(void *arg)
{
    struct set_burst *b = arg;
    pthread_barrier_wait(b->start);
    kiln_spec_constant c[2] = {{1, b->k}, {0, 64}};
    for (int i = 0; i < 4; i++) {
        struct prog_source src;
        b->res = prog_source_init(&src, &(kiln_program_desc){.source = k_sets_src, .name = "sets", .constants = c,
                                                              .constant_count = 2});
        if (b->res < 0)
            return NULL;
        b->res = csvc_request(b->r->svc, &src, CPRIO_NORMAL, &b->got[i]);
        prog_source_finish(&src);
        if (b->res < 0)
            return NULL;
        b->got_n++;
    }
    return NULL;
}

/* Sets of constants requested from four threads at once, while the front
 * end is held: one front-end compile, one set node and one back end per
 * set, each pipeline made with its set's values; a set let go before its
 * front end ends goes (and with nobody else holding the front end, it is
 * cancelled); values the shader cannot take fail their set alone. */
TEST(sets_of_constants_share_a_front_end)
{
    struct rig r;
    struct set_burst b[4] = {0};
    pthread_t t[4];
    int started = 0;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 4);
    NEED_OK(rig_init(&r, (struct rig_opts){.workers = 2}));
    gate_hold(&r.g, "front:sets");
    for (int i = 0; i < 4; i++) {
        b[i] = (struct set_burst){.r = &r, .k = i % 2 ? 7 : 3, .start = &bar};
        if (pthread_create(&t[i], NULL, set_burst_main, &b[i]) != 0)
            abort();   /* the others would wait at the barrier forever */
        started++;
    }
    for (; started > 0; started--)
        pthread_join(t[started - 1], NULL);
    NEED(gate_wait_inside(&r.g, "front:sets"));
    for (int i = 0; i < 4; i++) {
        NEED_OK(b[i].res);
        for (int k = 0; k < 4; k++)
            CHECK(b[i].got[k] == b[i % 2].got[0]);   /* one node per set */
    }
    CHECK(b[0].got[0] != b[1].got[0]);
    CHECK(csvc_back_of(r.svc, b[0].got[0]) == NULL);   /* no back end before the front end ends */
    /* A set asked for once more, and let go at once: it waits for the same
     * front end, and goes when let go (nothing runs for it). */
    struct cjob *gone;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = k_sets_src, .name = "sets",
                                                   .constants = (kiln_spec_constant[]){{1, 99}}, .constant_count = 1},
                         CPRIO_NORMAL, &gone));
    drop(&r, gone);
    gate_release(&r.g, "front:sets");
    for (int i = 0; i < 2; i++) {
        struct csvc_result res;
        CHECK_EQ(wait_result(&r, b[i].got[0], &res), KILN_PROGRAM_READY);
        NEED(res.pipeline && res.front);
        CHECK_EQ(res.front->iface.workgroup_size[0], 64);
        struct kb_spec spec[4];
        CHECK_EQ(mockb_pipeline_spec(res.pipeline, spec, 4), 2);
        CHECK(spec[0].id == 0 && spec[0].size == 4 && spec[0].value == 64);
        CHECK(spec[1].id == 1 && spec[1].size == 4 && spec[1].value == (i ? 7u : 3u));
    }
    NEED(wait_idle(&r));
    struct csvc_stats st = csvc_stats_get(r.svc);
    CHECK_EQ(gate_count(&r.g, "front:sets"), 1);
    CHECK_EQ(gate_count(&r.g, "back:sets"), 2);   /* the two sets', none of the defaults' */
    CHECK_EQ(st.started, 3);
    CHECK_EQ(st.requests, 17);
    CHECK_EQ(st.cancelled, 0);   /* the set let go compiled nothing */

    /* A set the shader cannot take fails alone, with KILN_ERR_INVALID. */
    struct cjob *bad;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = k_sets_src, .name = "sets",
                                                  .constants = (kiln_spec_constant[]){{5, 1}}, .constant_count = 1},
                         CPRIO_NORMAL, &bad));
    struct csvc_result res;
    CHECK_EQ(wait_result(&r, bad, &res), KILN_PROGRAM_FAILED);
    CHECK_EQ(res.code, KILN_ERR_INVALID);
    CHECK(res.error && strstr(res.error, "specialization constant id 5 (set to 0x1) is not declared"));
    NEED(wait_idle(&r));
    CHECK_EQ(csvc_stats_get(r.svc).started, 3);

    /* A set let go while its front end is queued, held by nothing else:
     * the front end is cancelled, never run. */
    gate_hold(&r.g, "front:busy");
    struct cjob *busy[2], *lone;
    NEED_OK(request_small(&r, "busy", 1, &busy[0]));
    NEED_OK(request_small(&r, "busy", 2, &busy[1]));
    NEED(gate_wait_inside(&r.g, "front:busy"));
    uint64_t cancelled = csvc_stats_get(r.svc).cancelled;
    NEED_OK(request_desc(&r, &(kiln_program_desc){.source = "#version 450\nlayout(local_size_x_id = 3) in;\n"
                                                            "void main() {}\n",
                                                  .name = "lone", .constants = (kiln_spec_constant[]){{3, 2}},
                                                  .constant_count = 1},
                         CPRIO_NORMAL, &lone));
    drop(&r, lone);
    CHECK_EQ(csvc_stats_get(r.svc).cancelled, cancelled + 1);
    gate_release(&r.g, "front:busy");
    CHECK_EQ(gate_count(&r.g, "front:lone"), 0);
done:
    gate_release(&r.g, "*");
    for (; started > 0; started--)
        pthread_join(t[started - 1], NULL);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < b[i].got_n; k++)
            csvc_release(r.svc, b[i].got[k]);
    pthread_barrier_destroy(&bar);
    rig_done(&r);
}

/* Sizes a small program and a giant with the real front end, and puts the
 * giant threshold between them. */
static bool measure(void)
{
    size_t words[2] = {0};
    for (int i = 0; i < 2; i++) {
        char *s = i ? giant_src(0) : small_src(0);
        struct prog_source src;
        struct prog_output out = {0};
        if (prog_source_init(&src, &(kiln_program_desc){.source = s}) < 0) {
            free(s);
            return false;
        }
        kiln_result r = prog_compile(&src, &out);
        words[i] = out.words;
        prog_output_finish(&out);
        prog_source_finish(&src);
        free(s);
        if (r < 0) {
            fprintf(stderr, "measure: %s\n", kiln_last_error());
            return false;
        }
    }
    if (words[1] < 4 * words[0]) {
        fprintf(stderr, "measure: a giant of %zu words is not much bigger than a small one (%zu)\n", words[1],
                words[0]);
        return false;
    }
    g_giant_words = (words[0] + words[1]) / 2;
    printf("small program %zu SPIR-V words, giant %zu; giants over %llu\n", words[0], words[1],
           (unsigned long long)g_giant_words);
    return true;
}

int main(void)
{
    if (!measure())
        return 1;
    RUN(identical_requests_compile_once);
    RUN(a_request_adopts_the_node_in_flight);
    RUN(requests_are_equal_exactly_when_their_inputs_are);
    RUN(includes_are_compiled_as_keyed);
    RUN(a_queued_node_is_cancelled_only_when_its_last_adopter_lets_go);
    RUN(a_node_cancelled_while_running_is_not_adopted);
    RUN(a_late_result_is_kept_for_the_next_request);
    RUN(released_results_are_kept_for_re_adoption);
    RUN(continuations_fire_exactly_once);
    RUN(the_giant_bound_holds_beside_a_stuck_small_compile);
    RUN(deferred_giants_leave_workers_to_small_compiles);
    RUN(one_or_two_workers_bound_giants_to_one);
    RUN(deferred_giants_go_first_when_a_giant_ends);
    RUN(no_giant_starts_while_a_wanted_compile_is_queued);
    RUN(a_giant_that_failed_beside_others_is_retried_alone);
    RUN(a_giant_failing_alone_too_fails_for_good_after_alone_tries);
    RUN(slow_compiles_are_named);
    RUN(a_wanted_compile_goes_first);
    RUN(destroy_with_compiles_queued_and_running_drains);
    RUN(failures_carry_their_reason);
    RUN(out_of_memory_guarding_divisions_fails_the_program);
    RUN(a_back_end_failure_is_not_kept_once_its_program_is_let_go);
    RUN(worker_caches_merge_at_a_phase_end);
    RUN(sets_of_constants_share_a_front_end);
    return TEST_SUMMARY();
}
