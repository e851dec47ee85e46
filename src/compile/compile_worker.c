/* SPDX-License-Identifier: MIT */
/*
 * compile_worker.c: the compile service's workers (see compile.h): the
 * board acted on (board.c is the policy), running front and back ends,
 * giants and retries alone, slow compiles and the watchdog, and the
 * per-worker pipeline caches merged at a phase end.
 *
 * The compiles themselves (run_front, run_back) run without svc->lock: a
 * worker takes a job off a queue under it, compiles, and takes it again to
 * record the outcome.
 *
 * Per-worker pipeline caches: with them on, a worker first asks the shared
 * cache for the pipeline without compiling (where the device supports that);
 * on a miss it compiles through its own cache. When no job is queued or
 * running (a phase end) the last worker to go idle merges every worker cache
 * into the shared one with one vkMergePipelineCaches, while no job runs.
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

/* ---- the board (board.h: the policy; here, acting on it) ----------------------------------- */

static void defer(struct csvc *s, struct cjob *j)
{
    csvc_requeue(s, j, Q_DEFERRED);
    if (!j->deferred) {
        j->deferred = true;
        s->stats.giants_deferred++;
        log_info("compile: giant %s (%zu SPIR-V words) deferred: %u giants in flight, bound %u; %u deferred now",
                 j->name, j->words, s->giants_running, s->giant_bound, csvc_q_length(s, Q_DEFERRED));
    }
}

/* What is queued and what runs, as the board sees it. The board asks only
 * whether there is some of each, so each queue is looked at, not counted:
 * a queue's small jobs are looked for (up to the first) only when a giant
 * may not start, the one case the board asks about them. */
static struct board board_of(struct csvc *s)
{
    struct board b = {.giants_running = s->giants_running,
                      .giant_bound = s->giant_bound,
                      .alone_running = s->alone_running,
                      .alone_queued = !list_empty(&s->queues[Q_ALONE]),
                      .deferred_queued = !list_empty(&s->queues[Q_DEFERRED])};
    bool may = board_giant_may_start(&b);
    for (int q = 0; q < BOARD_PRIOS; q++) {
        b.queued[q] = !list_empty(&s->queues[q]);
        if (may)
            continue;
        struct cjob *j;
        list_for_each(j, it, &s->queues[q], struct cjob, q_link) {
            if (!j->giant) {
                b.small[q] = 1;
                break;
            }
        }
    }
    return b;
}

/* Defers queue q's giants up to its first small job, which it returns
 * (NULL: none, every giant of the queue deferred). */
static struct cjob *first_small(struct csvc *s, int q)
{
    struct cjob *j;
    list_for_each(j, it, &s->queues[q], struct cjob, q_link) {
        if (!j->giant)
            return j;
        defer(s, j);
    }
    return NULL;
}

/* The next job to run, or NULL. */
static struct cjob *pick(struct csvc *s)
{
    struct board b = board_of(s);
    struct board_choice c = board_choose(&b);
    for (int q = 0; q < BOARD_PRIOS; q++)
        if (c.defer_all & (1u << q))
            (void)first_small(s, q);   /* giants only: all deferred */
    switch (c.take) {
    case BOARD_ALONE: return csvc_q_first(s, Q_ALONE);
    case BOARD_DEFERRED: return csvc_q_first(s, Q_DEFERRED);
    case BOARD_FIRST: return csvc_q_first(s, c.prio);
    case BOARD_FIRST_SMALL: return first_small(s, c.prio);
    case BOARD_IDLE: break;
    }
    return NULL;
}

/* ---- running jobs ----------------------------------------------------------------------- */

/* Notes (the archive's ARC_NOTE): precompile reads them. A note already
 * there is not added again. */
static void note(struct csvc *s, uint32_t what, const uint8_t hash[16], const char *name, uint32_t words,
                 double seconds)
{
    struct arc_note n = {.what = what, .words = words, .noted_ns = time_now_ns(), .seconds = seconds};
    memcpy(n.front_hash, hash, 16);
    snprintf(n.name, sizeof n.name, "%s", name);
    struct bytes key = {0}, value = {0};
    arc_note_encode(&n, &key, &value);
    if (!key.oom && !value.oom) {
        uint8_t kh[16];
        hash128(key.p, key.len, kh);
        const uint8_t *v;
        size_t vn;
        struct bytes buf = {0};
        if (arc_store_find(s->archive, ARC_NOTE, kh, key.p, key.len, &buf, &v, &vn) != ARC_HIT)
            (void)arc_store_add(s->archive, ARC_NOTE, key.p, key.len, value.p, value.len);
        free(buf.p);
    }
    free(key.p);
    free(value.p);
}

/* A front end's archive value (the archive's ARC_FRONT). */
static bool archive_front(struct csvc *s, struct cjob *j)
{
    bool kept = false;
    struct bytes v = {0};
    arc_front_encode(&v, &j->out.iface, j->out.log, j->out.spirv, j->out.words);
    if (!v.oom)
        kept = arc_store_add(s->archive, ARC_FRONT, j->key, j->key_len, v.p, v.len);
    free(v.p);
    return kept;
}

/* Fills j->out from an archive value; false if the value does not hold up
 * (the reason logged) or its copies find no memory. */
static bool unarchive_front(struct cjob *j, const uint8_t *v, size_t n)
{
    struct arc_front f;
    char why[ARC_WHY_LEN];
    if (!arc_front_decode(v, n, &f, why)) {
        log_warn("archive: %s: its front-end entry is not used (compiled instead): %s", j->name, why);
        return false;
    }
    uint32_t *copy = mem_alloc(f.words * 4);
    char *log = str_ndup(f.log, f.log_len);
    if (!copy || !log) {
        free(copy);
        free(log);
        return false;
    }
    arc_front_spirv(&f, copy);
    j->out = (struct prog_output){.spirv = copy, .words = f.words, .log = log, .iface = f.iface};
    /* Counted here, once, as for a compiled front end (count_shared); a
     * module that cannot be read is not used either. */
    if (prog_shared_bytes(j->out.spirv, j->out.words, &j->shared_bytes) < 0) {
        log_warn("archive: %s: its front-end entry is not used (compiled instead): %s", j->name, kiln_last_error());
        prog_output_finish(&j->out);
        return false;
    }
    return true;
}

/* Counts the Workgroup memory a compiled front end's SPIR-V declares, once:
 * every back end made from it checks the device's limit against the count
 * (run_back) instead of parsing the module again. KILN_ERR_NO_MEMORY when
 * the count could not be made for want of memory; another failure (a
 * module kiln cannot read) is this program's, its reason the log. */
static kiln_result count_shared(struct cjob *j)
{
    kiln_result r = prog_shared_bytes(j->out.spirv, j->out.words, &j->shared_bytes);
    if (r < 0 && r != KILN_ERR_NO_MEMORY) {
        /* Defensive: the compiler's modules are read by reflection first. */
        char buf[512];
        snprintf(buf, sizeof buf, "%s: error: %s\n", j->name, kiln_last_error());
        free(j->out.log);
        j->out.log = str_dup(buf);
        snprintf(j->fail_msg, sizeof j->fail_msg, "%s", buf);
    }
    return r;
}

/* The compiles run without the lock and return how the job ended; the
 * worker publishes that state under the lock, so nobody sees a job FAILED
 * that is about to be retried. Outputs written here are read only after. */
/* Whether a running front end is still wanted: its last adopter let go
 * (a destroyed context's, a gone client's program). Polled by front.c
 * while the helper runs; takes the service's lock. */
struct unwanted_ud {
    struct csvc *s;
    struct cjob *j;
};
static int unwanted(void *ud)
{
    struct unwanted_ud *u = ud;
    pthread_mutex_lock(&u->s->lock);
    int w = u->s->stopping                                  ? FRONT_STOP
            : u->j->cancel_requested && u->j->adopters == 0 ? FRONT_UNWANTED
                                                            : FRONT_WANTED;
    pthread_mutex_unlock(&u->s->lock);
    return w;
}

static enum cjob_state run_front(struct csvc *s, struct cjob *j, struct csvc_worker *w)
{
    if (s->hooks.front && s->hooks.front(s->hooks.ud, &j->src) < 0) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s: error: %s\n", j->name, kiln_last_error());
        j->out.log = str_dup(buf);
        snprintf(j->fail_msg, sizeof j->fail_msg, "%s", buf);
        return CJOB_FAILED;
    }
    j->archive_cause = -1;
    if (s->archive && s->archive->enabled) {
        const uint8_t *v;
        size_t n;
        struct bytes buf = {0};
        enum arc_cause c = arc_store_find(s->archive, ARC_FRONT, j->hash, j->key, j->key_len, &buf, &v, &n);
        if (c == ARC_HIT && !unarchive_front(j, v, n))
            c = ARC_CORRUPT;
        free(buf.p);
        j->archive_cause = (int)c;
        if (c == ARC_HIT) {
            j->from_archive = true;
            return CJOB_DONE;
        }
    }
    if (j->bake_of) {
        /* A baked variant: made from the universal's SPIR-V, which does
         * not change once its node is done (it is: the caller held it
         * done when it asked). */
        kiln_result r = j->bake_of->state == CJOB_DONE
                            ? prog_bake_variant(&j->bake_of->out, j->name, j->bake_words, j->bake_count, &j->out)
                            : KILN_RAISE(KILN_ERR_COMPILE, "%s: its universal program did not compile", j->name);
        if (r == KILN_OK)
            r = count_shared(j);
        if (r == KILN_ERR_NO_MEMORY)
            csvc_fail_oom(j, kiln_last_error());
        else if (r < 0)
            snprintf(j->fail_msg, sizeof j->fail_msg, "%s", kiln_last_error());
        if (r == KILN_OK && s->archive && s->archive->enabled) {
            j->archived = archive_front(s, j);
            j->qa_miss = s->archive->qa;
        }
        return r == KILN_OK ? CJOB_DONE : CJOB_FAILED;
    }
    if (!j->src.source) {
        /* A precompile's node: its archive entry was all it had. */
        char buf[512];
        snprintf(buf, sizeof buf, "%s: error: precompile: its archive entry is gone or damaged (%s)\n", j->name,
                 arc_cause_name(j->archive_cause < 0 ? ARC_ABSENT : (enum arc_cause)j->archive_cause));
        j->out.log = str_dup(buf);
        snprintf(j->fail_msg, sizeof j->fail_msg, "%s", buf);
        return CJOB_FAILED;
    }
    struct front_limits lim = {.timeout_ns = (uint64_t)(s->cfg.compile_timeout_s * 1e9),
                               .max_bytes = s->cfg.compile_max_bytes,
                               .in_process = s->cfg.compile_in_process,
                               .wanted = unwanted,
                               .ud = &(struct unwanted_ud){s, j}};
    kiln_result r = front_compile(&j->src, &lim, &w->helper, &j->out);
    if (r == KILN_OK)
        r = count_shared(j);
    if (r == KILN_ERR_NO_MEMORY)
        csvc_fail_oom(j, kiln_last_error());
    if (r == KILN_ERR_LIMIT) {
        j->fail_code = KILN_ERR_LIMIT;
        snprintf(j->fail_msg, sizeof j->fail_msg, "%s", kiln_last_error());
        j->stopped_unwanted = lim.stopped_unwanted;
    }
    if (r == KILN_OK && s->archive && s->archive->enabled) {
        j->archived = archive_front(s, j);
        j->qa_miss = s->archive->qa;
    }
    return r == KILN_OK ? CJOB_DONE : CJOB_FAILED;
}

/* A back end's failure: r is the failing call's result (KILN_ERR_NO_MEMORY
 * makes it a failure for want of host memory, KILN_ERR_LIMIT one of a
 * device limit, never retried), its last error the reason. */
static enum cjob_state fail_back(struct cjob *j, kiln_result r, const char *what)
{
    snprintf(j->fail_msg, sizeof j->fail_msg, "%s: error: %s: %s\n", j->name, what, kiln_last_error());
    j->fail_code = r == KILN_ERR_NO_MEMORY || r == KILN_ERR_LIMIT ? r : 0;
    return CJOB_FAILED;
}

/* A device that stops long loops (kiln_caps.loop_budget): a warning for
 * each loop of the program that may run past it, once per program's back
 * end (a baked variant's loops are its universal's). */
static void warn_loops(const struct cjob *j, uint32_t budget, const char *device)
{
    struct prog_loop loops[8];
    uint32_t all, n = prog_loops_unbounded(j->spirv, j->words, budget, loops, 8, &all);
    for (uint32_t i = 0; i < n; i++) {
        char count[96];
        if (loops[i].bound)
            snprintf(count, sizeof count, "runs up to %llu iterations", (unsigned long long)loops[i].bound);
        else
            snprintf(count, sizeof count, "runs a count not known when it compiles");
        log_warn("%s: loop %u of %u (in %s) %s; %s stops a shader after %u loop iterations in all, per invocation, "
                 "and returns what it has, so a longer run is wrong without a word", j->name, loops[i].ordinal, all,
                 loops[i].function, count, device, budget);
    }
}

static enum cjob_state run_back(struct csvc *s, struct cjob *j, struct csvc_worker *w, uint32_t giants_in_flight,
                                struct kb_cache *alone_cache)
{
    kiln_result hr;
    if (s->hooks.back && (hr = s->hooks.back(s->hooks.ud, j->name, j->words, j->alone, giants_in_flight)) < 0) {
        return fail_back(j, hr, "the driver refused the pipeline");
    }
    /* Specialization constants set (a set node's back end): the pipeline's
     * values (one per id), and the shared memory counted with them (the
     * front end's count is the defaults'). */
    struct kb_spec spec[KILN_MAX_SPEC_CONSTANTS];
    uint32_t spec_count = 0;
    for (uint32_t i = 0; i < j->iface.constant_count && i < KILN_MAX_SPEC_CONSTANTS; i++) {
        const kiln_spec_constant_info *c = &j->iface.constants[i];
        bool seen = false;
        for (uint32_t k = 0; k < spec_count; k++)
            seen |= spec[k].id == c->id;
        if (c->set && !seen)
            spec[spec_count++] = (struct kb_spec){.id = c->id, .size = prog_spec_size(c->type), .value = c->value};
    }
    if (spec_count && (hr = prog_shared_bytes_set(j->spirv, j->words, &j->iface, &j->shared_bytes)) < 0)
        return fail_back(j, hr, "its shared memory could not be counted");
    /* The device's limits, checked before any Vulkan call for this program:
     * a program the device cannot run fails here, its state FAILED and its
     * wait KILN_ERR_LIMIT, naming the limit and the value. */
    if ((hr = prog_check_limits_shared(&j->iface, j->shared_bytes, &s->dev->caps)) < 0 ||
        (hr = prog_check_device(j->name, j->spirv, j->words, &s->dev->caps)) < 0)
        return fail_back(j, hr, "the device cannot run it");
    if (s->dev->caps.loop_budget && j->universal)
        warn_loops(j, s->dev->caps.loop_budget, s->dev->caps.device_name);
    if ((hr = kb_layout_create(s->dev, &j->iface, &j->layout)) < 0) {
        return fail_back(j, hr, "the device refused its pipeline layout");
    }
    /* A driver whose pipeline caches keep only a header (the device's probe
     * says so at creation) never has a pipeline to archive or look up. */
    if (s->archive && s->archive->enabled && !s->dev->caps.pipeline_cache_keeps_code)
        atomic_store(&s->archive->back_never_hits, true);
    struct arc_store *arc = s->archive && s->archive->enabled && !atomic_load(&s->archive->back_never_hits)
                                ? s->archive
                                : NULL;
    if (s->archive && s->archive->enabled && !arc)
        j->archive_cause = ARC_NEVER_HITS;
    if (arc) {
        const uint8_t *blob;
        size_t n;
        struct bytes buf = {0};
        enum arc_cause c = arc_store_find(arc, ARC_BACK, j->hash, j->key, j->key_len, &buf, &blob, &n);
        char why[ARC_WHY_LEN];
        if (c == ARC_HIT && !arc_back_decode(blob, n, why)) {
            log_warn("archive: %s: its pipeline entry is not used (compiled instead): %s", j->name, why);
            c = ARC_CORRUPT;
        }
        j->archive_cause = (int)c;
        struct kb_cache *seeded = NULL;
        bool seeded_ok = c == ARC_HIT && kb_cache_create(s->dev, blob, n, &seeded) == KILN_OK;
        free(buf.p);   /* the cache holds a copy of the data (vkCreatePipelineCache) */
        if (seeded_ok) {
            kiln_result r = kb_pipeline_create(s->dev, j->layout, j->spirv, j->words, spec, spec_count, seeded,
                                               s->dev->cache_control, &j->pipeline);
            kb_cache_destroy(s->dev, seeded);
            if (r == KILN_OK) {
                j->from_archive = true;
                return CJOB_DONE;
            }
            j->archive_cause = ARC_CORRUPT;   /* the driver could not use the data: compile */
        }
        /* Compile through a cache of its own, whose data is then this
         * pipeline's archive entry. */
        struct kb_cache *own;
        if (kb_cache_create(s->dev, NULL, 0, &own) == KILN_OK) {
            kiln_result r = kb_pipeline_create(s->dev, j->layout, j->spirv, j->words, spec, spec_count, own, false,
                                               &j->pipeline);
            void *data = NULL;
            size_t len = 0;
            if (r == KILN_OK && kb_cache_data(s->dev, own, &data, &len) == KILN_OK) {
                if (len <= 32) {
                    /* Only the 32-byte header: the driver keeps nothing. */
                    if (!atomic_exchange(&arc->back_never_hits, true))
                        log_info("archive: this driver keeps no compiled code in a pipeline cache; pipelines "
                                 "are not archived or looked up (program front ends still are)");
                } else {
                    j->archived = arc_store_add(arc, ARC_BACK, j->key, j->key_len, data, len);
                    j->qa_miss = arc->qa;
                }
            }
            free(data);
            kb_cache_destroy(s->dev, own);
            if (r < 0)
                return fail_back(j, r, "the driver refused the pipeline");
            return CJOB_DONE;
        }
    }
    kiln_result r = KILN_ERR_PENDING;
    struct kb_cache *cache = alone_cache;
    if (!cache && s->cfg.worker_caches && w->cache) {
        if (s->shared && s->dev->cache_control) {
            r = kb_pipeline_create(s->dev, j->layout, j->spirv, j->words, spec, spec_count, s->shared, true,
                                   &j->pipeline);
            if (r == KILN_OK) {
                pthread_mutex_lock(&s->lock);
                s->stats.cache_hits++;
                pthread_mutex_unlock(&s->lock);
            }
        }
        cache = w->cache;
    } else if (!cache) {
        cache = s->shared;
    }
    if (r == KILN_ERR_PENDING)
        r = kb_pipeline_create(s->dev, j->layout, j->spirv, j->words, spec, spec_count, cache, false,
                               &j->pipeline);
    if (r < 0) {
        return fail_back(j, r, "the driver refused the pipeline");
    }
    j->via_worker_cache = cache != NULL && cache == w->cache;
    return CJOB_DONE;
}

/* Records how a job ended (lock held). */
static void job_ended(struct csvc *s, struct cjob *j)
{
    s->running--;
    if (j->giant && !j->alone)
        s->giants_running--;
    if (j->alone)
        s->alone_running = false;
    if (j->kind == CJOB_FRONT && !j->from_archive)
        s->stats.front_s += j->seconds;
    else if (j->kind == CJOB_BACK)
        s->stats.back_s += j->seconds;
    if (j->from_archive)
        (*(j->kind == CJOB_FRONT ? &s->stats.archive_hits : &s->stats.archive_back_hits))++;
    else if (j->archive_cause > 0)
        s->stats.archive_misses[j->archive_cause]++;
    if (j->archived)
        (*(j->kind == CJOB_FRONT ? &s->stats.archive_added : &s->stats.archive_back_added))++;
    if (j->qa_miss) {
        s->stats.qa_compiles++;
        log_warn("archive QA: %s: %s compiled; the archive lacked it", j->name, kind_name(j->kind));
    }
    if (j->slow_said)
        log_warn("compile: slow %s of %s ended after %.1f s", kind_name(j->kind), j->name, j->seconds);

    /* Retry alone: a back end that failed beside other giants. */
    if (j->kind == CJOB_BACK && j->state == CJOB_FAILED && j->fail_code != KILN_ERR_LIMIT &&
        (j->giants_seen > 0 || j->alone) &&
        j->alone_tries < s->cfg.alone_tries && !j->cancel_requested) {
        bool was_alone = j->alone;
        j->alone_tries++;
        j->alone = true;
        j->giants_seen = 0;
        s->stats.retries_alone++;
        log_warn("compile: %s failed %s; trying it again alone with a fresh pipeline cache (try %u of %u)", j->name,
                 was_alone ? "alone" : "while other giants compiled", j->alone_tries, s->cfg.alone_tries);
        if (j->layout) {
            kb_layout_destroy(s->dev, j->layout);
            j->layout = NULL;
        }
        j->fail_code = 0;
        j->fail_msg[0] = 0;
        csvc_enqueue(s, j);
        return;
    }
    if (j->kind == CJOB_FRONT && j->stopped_unwanted && j->adopters > 0) {
        /* Stopped as unwanted, then asked for again before it ended: it
         * compiles again for its new adopter. */
        j->stopped_unwanted = false;
        j->cancel_requested = false;
        j->fail_code = 0;
        j->fail_msg[0] = 0;
        prog_output_finish(&j->out);
        csvc_enqueue(s, j);
        return;
    }
    if (j->state == CJOB_FAILED && j->stopped_unwanted)
        s->stats.cancelled++;
    if (j->state == CJOB_FAILED) {
        s->stats.failed += !j->stopped_unwanted;
        if (j->kind == CJOB_FRONT && !j->src.source)
            csvc_table_remove(s, j);   /* a request with a source must not adopt a precompile's failure */
        if (j->kind == CJOB_BACK && j->alone)
            log_warn("compile: %s failed for good after %u tries alone: %s", j->name, j->alone_tries, j->fail_msg);
    }
    csvc_fire_conts(s, j);
    pthread_cond_broadcast(&s->ended);
    if (j->cancel_requested && j->adopters == 0) {
        /* Finished for nobody: the result is kept, and may be adopted again. */
        j->cancel_requested = false;
        if (j->state == CJOB_DONE) {
            csvc_lru_add(s, j);
            csvc_lru_trim(s, LRU_MAX);
        } else {
            csvc_table_remove(s, j);
            csvc_job_free(s, j);
        }
    }
}

static void merge_caches(struct csvc *s)
{
    if (!s->caches_dirty || !s->shared)
        return;
    struct kb_cache *srcs[256];
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->worker_count; i++)
        if (s->workers[i].cache)
            srcs[n++] = s->workers[i].cache;
    if (kb_cache_merge(s->dev, s->shared, srcs, n) == KILN_OK)
        s->stats.cache_merges++;
    else
        log_warn("compile: merging %u worker pipeline caches failed: %s", n, kiln_last_error());
    s->caches_dirty = false;
}

static void *worker_main(void *arg)
{
    struct csvc_worker *w = arg;
    struct csvc *s = w->svc;
    /* A compile helper that dies while its request is written makes the
     * write fail with EPIPE here, never SIGPIPE the application. */
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, NULL);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        struct cjob *j = s->stopping || s->held ? NULL : pick(s);
        if (!j) {
            if (s->stopping)
                break;
            if (s->running == 0 && !csvc_queued_any(s))
                merge_caches(s);   /* a phase end: no job runs, none waits */
            pthread_cond_wait(&s->work, &s->lock);
            continue;
        }
        csvc_q_remove(j);
        j->state = CJOB_RUNNING;
        j->start_ns = time_now_ns();
        s->running++;
        s->stats.started++;
        uint32_t giants_in_flight = s->giants_running;
        if (j->alone) {
            s->alone_running = true;
        } else if (j->giant) {
            /* Each giant in flight notes the others it overlapped with. */
            for (uint32_t i = 0; i < s->worker_count; i++) {
                struct cjob *o = s->workers[i].job;
                if (o && o->giant && !o->alone) {
                    o->giants_seen++;
                    j->giants_seen++;
                }
            }
            s->giants_running++;
        }
        w->job = j;
        struct kb_cache *alone_cache = NULL;
        pthread_mutex_unlock(&s->lock);

        enum cjob_state outcome;
        if (j->kind == CJOB_FRONT) {
            outcome = run_front(s, j, w);
        } else {
            if (j->alone && kb_cache_create(s->dev, NULL, 0, &alone_cache) < 0)
                alone_cache = NULL;   /* compile without a cache rather than not at all */
            outcome = run_back(s, j, w, giants_in_flight, alone_cache);
            if (alone_cache)
                kb_cache_destroy(s->dev, alone_cache);
        }

        uint64_t end_ns = time_now_ns();
        double seconds = (double)(end_ns - j->start_ns) / 1e9;
        trace_span(s->dev->trace, TRACE_WORKER + (uint32_t)(w - s->workers), "compile",
                   j->kind == CJOB_FRONT ? "front end" : "back end", j->start_ns, end_ns, j->name);
        if (s->archive && s->archive->enabled) {
            if (j->kind == CJOB_FRONT && outcome == CJOB_DONE)
                note(s, ARC_NOTE_USED, j->hash, j->name, (uint32_t)j->out.words, 0);
            if (seconds >= s->cfg.slow_s && outcome == CJOB_DONE)
                note(s, ARC_NOTE_SLOW, j->kind == CJOB_FRONT ? j->hash : j->origin, j->name,
                     (uint32_t)(j->kind == CJOB_FRONT ? j->out.words : j->words), seconds);
        }

        pthread_mutex_lock(&s->lock);
        j->state = outcome;
        j->seconds = seconds;
        w->job = NULL;
        if (j->via_worker_cache)
            s->caches_dirty = true;
        job_ended(s, j);
    }
    pthread_mutex_unlock(&s->lock);
    front_helper_finish(&w->helper);   /* its input closed: it exits */
    return NULL;
}

/* Names compiles that run past slow_s, once while they run (lock held). */
static void check_slow(struct csvc *s)
{
    uint64_t now = time_now_ns();
    for (uint32_t i = 0; i < s->worker_count; i++) {
        struct cjob *j = s->workers[i].job;
        if (!j || j->slow_said || (double)(now - j->start_ns) / 1e9 < s->cfg.slow_s)
            continue;
        j->slow_said = true;
        s->stats.slow++;
        char hex[33];
        hash_hex(j->hash, hex);
        size_t words = j->kind == CJOB_FRONT ? 0 : j->words;
        log_warn("compile: slow %s of %s (key %s, %zu SPIR-V words) running for %.1f s", kind_name(j->kind), j->name,
                 hex, words, (double)(now - j->start_ns) / 1e9);
        if (vec_reserve((void **)&s->slow, &s->slow_cap, s->slow_count + 1, sizeof *s->slow)) {
            struct csvc_slow *e = &s->slow[s->slow_count++];
            *e = (struct csvc_slow){.words = words, .kind = j->kind, .seconds = (double)(now - j->start_ns) / 1e9};
            memcpy(e->name, j->name, sizeof e->name);
            memcpy(e->hash, j->hash, 16);
        }
    }
}

static void *watchdog_main(void *arg)
{
    struct csvc *s = arg;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        double step = s->cfg.slow_s < 1.0 ? s->cfg.slow_s / 4 : 0.5;
        cond_wait_ns(&s->ended, &s->lock, (uint64_t)(step * 1e9));
        check_slow(s);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

kiln_result csvc_start_workers(struct csvc *s)
{
    if (s->started)
        return KILN_OK;
    s->workers = mem_calloc(s->cfg.workers, sizeof *s->workers);
    if (!s->workers)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %u compile workers", s->cfg.workers);
    if (kb_cache_create(s->dev, NULL, 0, &s->shared) < 0) {
        log_warn("compile: no shared pipeline cache (%s); compiling without one", kiln_last_error());
        s->shared = NULL;
    }
    for (uint32_t i = 0; i < s->cfg.workers; i++) {
        struct csvc_worker *w = &s->workers[i];
        w->svc = s;
        if (s->cfg.worker_caches && kb_cache_create(s->dev, NULL, 0, &w->cache) < 0)
            w->cache = NULL;
        char name[32];
        snprintf(name, sizeof name, "kiln-compile-%u", i);
        if (kthread_start(&w->thread, name, s->cfg.stack_bytes, worker_main, w) != KILN_OK) {
            if (w->cache)
                kb_cache_destroy(s->dev, w->cache);
            if (i == 0) {
                free(s->workers);
                s->workers = NULL;
                if (s->shared)
                    kb_cache_destroy(s->dev, s->shared);
                s->shared = NULL;
                return KILN_RAISE(KILN_ERR_NO_MEMORY, "no compile worker thread could be started: %s", err_last());
            }
            log_warn("compile: started %u of %u workers (%s)", i, s->cfg.workers, err_last());
            break;
        }
        s->worker_count++;
    }
    if (kthread_start(&s->watchdog, "kiln-watchdog", 0, watchdog_main, s) != KILN_OK)
        log_warn("compile: no watchdog (%s): slow compiles are not named while they run", err_last());
    s->started = true;
    s->giant_bound = board_giant_bound(s->cfg.giant_compiles, s->worker_count);
    log_info("compile: %u workers (16 MiB stacks), %s pipeline caches, giants over %llu words, at most %u at once",
             s->worker_count, s->cfg.worker_caches ? "per-worker" : "one shared",
             (unsigned long long)s->cfg.giant_words, s->giant_bound);
    return KILN_OK;
}
