/* SPDX-License-Identifier: MIT */
/*
 * compile.c: the compile service (see compile.h for the model): its
 * configuration, life (create, stop, destroy, the exit drain), its
 * telemetry, and the accessors other modules and tests read it through.
 * Its other files: compile_node.c (nodes, the dedupe table, queues,
 * requests), compile_worker.c (the board acted on, running jobs, workers,
 * giants, retry alone, slow compiles, per-worker pipeline caches); board.c
 * (the scheduling policy); precompile.c. The structs are in
 * compile_private.h.
 *
 * Everything here runs with svc->lock held, or before the workers start
 * and after they are joined.
 */
#define _GNU_SOURCE
#include "board.h"
#include "compile_private.h"
#include "base/trace.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration -------------------------------------------------------------- */

/*
 * Per-worker pipeline caches by default, per driver, from measurements
 * (bench/bench_compile, cold, 2026-11-29):
 * - NVIDIA 580.159 on an H200, 16 cores: no gain. 400 small programs, 4 and
 *   16 workers, two seeds: on 1.46/1.74 s and 0.48/0.51 s, off 1.41/1.66 s
 *   and 0.46/0.51 s; with 4 giants: on 4.11/3.03 s and 2.78/2.02 s, off
 *   4.10/3.20 s and 2.81/2.29 s. The driver's shared cache does not make
 *   workers contend, so kiln skips the merge step: off.
 * - lavapipe (Mesa 22.3): its pipeline cache keeps nothing: off.
 * Drivers not measured yet: off, until a measurement says otherwise.
 */
static bool worker_caches_default(const struct kb_device *dev)
{
    (void)dev;
    return false;
}

void csvc_config_default(struct csvc_config *c, const struct kb_device *dev)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *c = (struct csvc_config){
        .workers = (uint32_t)env_u64("KILN_COMPILE_THREADS", cores > 0 ? (uint64_t)cores : 2),
        .giant_words = env_u64("KILN_GIANT_WORDS", 100000),
        .giant_compiles = (uint32_t)env_u64("KILN_GIANT_COMPILES", 4),
        .alone_tries = (uint32_t)env_u64("KILN_ALONE_TRIES", 2),
        .slow_s = env_seconds("KILN_SLOW_COMPILE_S", 10),
        .stack_bytes = 16u << 20,
        .compile_timeout_s = env_seconds("KILN_COMPILE_TIMEOUT_S", 60),
        .compile_max_bytes = env_size("KILN_COMPILE_MAX_BYTES", 2ull << 30),
        .compile_in_process = !env_flag("KILN_COMPILE_HELPER", 1),
    };
    if (c->workers == 0)
        c->workers = 1;
    if (c->workers > 256)
        c->workers = 256;
    c->worker_caches = env_flag("KILN_WORKER_CACHES", worker_caches_default(dev));
}

/* ---- stopping: at destroy, or drained at process exit ---------------------------------------- */

/* Cancels what has not started and joins the workers once running
 * compiles end. Says what it did when `why` is given. */
static void stop(struct csvc *s, const char *why)
{
    pthread_mutex_lock(&s->lock);
    if (s->stopping) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->stopping = true;
    /* What has not started never will. */
    uint32_t cancelled = 0, running = s->running;
    for (int q = 0; q < Q_COUNT; q++)
        for (struct cjob *j; (j = csvc_q_first(s, q));) {
            csvc_q_remove(j);
            j->state = CJOB_CANCELLED;
            s->stats.cancelled++;
            cancelled++;
            csvc_fire_conts(s, j);
        }
    if (why && (cancelled || running))
        log_info("compile: %s: %u queued compiles cancelled, waiting for %u running", why, cancelled, running);
    pthread_cond_broadcast(&s->work);
    pthread_cond_broadcast(&s->ended);
    pthread_mutex_unlock(&s->lock);
    for (uint32_t i = 0; i < s->worker_count; i++)
        kthread_join(&s->workers[i].thread);
    kthread_join(&s->watchdog);
}

static void drain_at_exit(void *arg) { stop(arg, "process exit with a context not destroyed"); }

void csvc_set_archive(struct csvc *s, struct arc_store *archive) { s->archive = archive; }

kiln_result csvc_create(struct kb_device *dev, const struct csvc_config *cfg, const struct csvc_hooks *hooks,
                        struct csvc **out)
{
    struct csvc *s = mem_calloc(1, sizeof *s);
    if (!s)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile service");
    s->dev = dev;
    if (cfg)
        s->cfg = *cfg;
    else
        csvc_config_default(&s->cfg, dev);
    if (!s->cfg.workers)
        s->cfg.workers = 1;
    if (!s->cfg.stack_bytes)
        s->cfg.stack_bytes = 16u << 20;
    if (hooks)
        s->hooks = *hooks;
    for (int q = 0; q < Q_COUNT; q++)
        list_init(&s->queues[q]);
    list_init(&s->lru);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->ended, NULL);
    kthread_drain_add(&s->drain, drain_at_exit, s);
    *out = s;
    return KILN_OK;
}

void csvc_destroy(struct csvc *s)
{
    kthread_drain_remove(&s->drain);
    stop(s, "context destroyed");
    pthread_mutex_lock(&s->lock);
    /* Precompiled nodes: released; a failed one (out of the table) freed here. */
    for (uint32_t i = 0; i < s->pre_count; i++) {
        struct cjob *j = s->pre[i];
        if (j->adopters)
            j->adopters--;
        if (!j->in_table && !j->adopters)
            csvc_job_free(s, j);
    }
    free(s->pre);
    /* Every node still in the table is freed, whoever held it. */
    for (uint32_t b = 0; b < s->table_cap; b++)
        for (struct cjob *j = s->table[b], *next; j; j = next) {
            next = j->h_next;
            j->back = NULL;   /* freed on its own through the table */
            j->base = NULL;   /* likewise */
            j->bake_of = NULL;   /* likewise */
            if (j->pipeline)
                kb_pipeline_destroy(s->dev, j->pipeline);
            if (j->layout)
                kb_layout_destroy(s->dev, j->layout);
            j->pipeline = NULL;
            j->layout = NULL;
        }
    for (uint32_t b = 0; b < s->table_cap; b++)
        for (struct cjob *j = s->table[b], *next; j; j = next) {
            next = j->h_next;
            csvc_job_free(s, j);
        }
    pthread_mutex_unlock(&s->lock);
    for (uint32_t i = 0; i < s->worker_count; i++)
        if (s->workers[i].cache)
            kb_cache_destroy(s->dev, s->workers[i].cache);
    if (s->shared)
        kb_cache_destroy(s->dev, s->shared);
    free(s->workers);
    free(s->table);
    free(s->slow);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->ended);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- telemetry ----------------------------------------------------------------------------- */

struct csvc_stats csvc_stats_get(struct csvc *s)
{
    pthread_mutex_lock(&s->lock);
    struct csvc_stats st = s->stats;
    pthread_mutex_unlock(&s->lock);
    return st;
}

uint32_t csvc_pending(struct csvc *s)
{
    pthread_mutex_lock(&s->lock);
    uint32_t n = s->running;
    for (int q = 0; q < Q_COUNT; q++)
        n += csvc_q_length(s, q);
    pthread_mutex_unlock(&s->lock);
    return n;
}

uint32_t csvc_giants_in_flight(struct csvc *s)
{
    pthread_mutex_lock(&s->lock);
    uint32_t n = s->giants_running + (s->alone_running ? 1 : 0);
    pthread_mutex_unlock(&s->lock);
    return n;
}

uint32_t csvc_slow_list(struct csvc *s, struct csvc_slow *out, uint32_t cap)
{
    pthread_mutex_lock(&s->lock);
    uint32_t n = s->slow_count;
    if (out)
        memcpy(out, s->slow, KILN_MIN(n, cap) * sizeof *out);
    pthread_mutex_unlock(&s->lock);
    return n;
}

void csvc_summary(struct csvc *s, char *buf, size_t cap)
{
    struct csvc_stats st = csvc_stats_get(s);
    char qa[128] = "";
    if (s->archive && s->archive->qa)
        snprintf(qa, sizeof qa, "; archive QA: %s (%llu compiles the archive lacked)", st.qa_compiles ? "FAIL" : "PASS",
                 (unsigned long long)st.qa_compiles);
    int n = snprintf(buf, cap,
             "compile: %llu programs asked for; %llu compiles started, %llu adopted in flight, %llu deduplicated, "
             "%llu cancelled, %llu giants deferred, %llu retries alone, %llu slow, %llu failed; "
             "%.2f s front end, %.2f s back end; %llu pipeline cache hits, %llu cache merges; "
             "archive: %llu front ends and %llu pipelines from it, %llu and %llu compiled and added, misses: "
             "%llu absent, %llu corrupt, %llu device mismatch, %llu format version, %llu driver never hits",
             (unsigned long long)st.requests, (unsigned long long)st.started, (unsigned long long)st.adopted,
             (unsigned long long)st.deduplicated, (unsigned long long)st.cancelled,
             (unsigned long long)st.giants_deferred, (unsigned long long)st.retries_alone,
             (unsigned long long)st.slow, (unsigned long long)st.failed, st.front_s, st.back_s,
             (unsigned long long)st.cache_hits, (unsigned long long)st.cache_merges,
             (unsigned long long)st.archive_hits, (unsigned long long)st.archive_back_hits,
             (unsigned long long)st.archive_added, (unsigned long long)st.archive_back_added,
             (unsigned long long)st.archive_misses[ARC_ABSENT], (unsigned long long)st.archive_misses[ARC_CORRUPT],
             (unsigned long long)st.archive_misses[ARC_DEVICE_MISMATCH],
             (unsigned long long)st.archive_misses[ARC_VERSION],
             (unsigned long long)st.archive_misses[ARC_NEVER_HITS]);
    if (n > 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "%s", qa);
}

/* ---- what other modules read of a node (compile.h says why each is safe) ---------------- */

const uint8_t *csvc_front_hash(const struct cjob *front) { return front->hash; }

const struct prog_source *csvc_front_source(const struct cjob *front) { return &front->src; }

/* ---- for tests ------------------------------------------------------------------------------ */

#ifdef KILN_TEST_HOOKS

void csvc_hold(struct csvc *s, bool hold)
{
    pthread_mutex_lock(&s->lock);
    s->held = hold;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->lock);
}

enum cjob_state csvc_job_state(struct csvc *s, struct cjob *j)
{
    pthread_mutex_lock(&s->lock);
    enum cjob_state st = j->state;
    pthread_mutex_unlock(&s->lock);
    return st;
}

enum cjob_state csvc_job_state_locked(const struct cjob *j) { return j->state; }

const char *csvc_job_name(const struct cjob *j) { return j->name; }

struct cjob *csvc_back_of(struct csvc *s, struct cjob *front)
{
    pthread_mutex_lock(&s->lock);
    struct cjob *b = front->back;
    pthread_mutex_unlock(&s->lock);
    return b;
}

uint32_t csvc_giant_bound(struct csvc *s)
{
    pthread_mutex_lock(&s->lock);
    uint32_t b = s->giant_bound;
    pthread_mutex_unlock(&s->lock);
    return b;
}

void csvc_with_lock(struct csvc *s, void (*fn)(struct csvc *, void *), void *ud)
{
    pthread_mutex_lock(&s->lock);
    fn(s, ud);
    pthread_mutex_unlock(&s->lock);
}

int csvc_running_state_locked(struct csvc *s, enum cjob_kind kind, const char *name)
{
    for (uint32_t i = 0; i < s->worker_count; i++) {
        struct cjob *j = s->workers[i].job;
        if (j && j->kind == kind && !strcmp(j->name, name))
            return (int)j->state;
    }
    return -1;
}

void csvc_kept(struct csvc *s, struct csvc_kept *out)
{
    pthread_mutex_lock(&s->lock);
    *out = (struct csvc_kept){.caches = s->shared != NULL, .released = s->lru_count};
    for (uint32_t i = 0; i < s->worker_count; i++)
        out->caches += s->workers[i].cache != NULL;
    for (uint32_t b = 0; b < s->table_cap; b++)
        for (struct cjob *j = s->table[b]; j; j = j->h_next) {
            out->layouts += j->layout != NULL;
            out->pipelines += j->pipeline != NULL;
        }
    pthread_mutex_unlock(&s->lock);
}

char *csvc_front_swap_source_text(struct csvc *s, struct cjob *front, char *text)
{
    pthread_mutex_lock(&s->lock);
    char *old = front->src.source;
    front->src.source = text;
    pthread_mutex_unlock(&s->lock);
    return old;
}
#endif
