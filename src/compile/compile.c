/* SPDX-License-Identifier: MIT */
/*
 * compile.c: the compile service (see compile.h for the model): nodes,
 * dedupe table, queues and board, workers, giants, retry alone, slow
 * compiles, per-worker pipeline caches, and the accessors other modules
 * read nodes through. The structs are in compile_private.h; precompile is
 * precompile.c.
 *
 * Queues and the cache of released results are base/list.h lists; the
 * dedupe table's buckets are singly linked chains (compile_private.h says
 * why). Front nodes are made in one place (csvc_front_new), for requests
 * and for precompile's archive keys alike.
 *
 * Everything here runs with svc->lock held except the compiles themselves
 * (run_front, run_back), which a worker runs after taking a job off a queue
 * and before it takes the lock again to record the outcome.
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

#define LRU_MAX 64          /* released results kept for re-adoption */

static const char *kind_name(enum cjob_kind k) { return k == CJOB_FRONT ? "front end" : "back end"; }

static void hash_hex(const uint8_t h[16], char out[33])
{
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

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

/* ---- queues ---------------------------------------------------------------------- */

static void q_push(struct csvc *s, int q, struct cjob *j)
{
    j->queue = q;
    list_add_tail(&s->queues[q], &j->q_link);
}

static void q_remove(struct cjob *j)
{
    list_remove(&j->q_link);
    j->queue = -1;
}

/* The job at the head of queue q, or NULL. */
static struct cjob *q_first(struct csvc *s, int q)
{
    struct list *l = list_first(&s->queues[q]);
    return l ? list_entry(l, struct cjob, q_link) : NULL;
}

static uint32_t q_length(struct csvc *s, int q)
{
    uint32_t n = 0;
    for (const struct list *l = s->queues[q].next; l != &s->queues[q]; l = l->next)
        n++;
    return n;
}

static bool queued_any(struct csvc *s)
{
    for (int q = 0; q < Q_COUNT; q++)
        if (!list_empty(&s->queues[q]))
            return true;
    return false;
}

void csvc_requeue(struct csvc *s, struct cjob *j, int q)
{
    q_remove(j);
    q_push(s, q, j);
}

/* Puts a runnable job on the queue its priority and kind say. */
static void enqueue(struct csvc *s, struct cjob *j)
{
    j->state = CJOB_QUEUED;
    q_push(s, j->alone ? Q_ALONE : (int)j->prio, j);
    pthread_cond_signal(&s->work);
}

/* ---- the table and the cache of released results ---------------------------------------- */

static uint32_t bucket(const struct csvc *s, const uint8_t h[16])
{
    uint32_t v;
    memcpy(&v, h, 4);
    return v & (s->table_cap - 1);
}

static bool table_grow(struct csvc *s)
{
    uint32_t cap = s->table_cap ? s->table_cap * 2 : 256;
    struct cjob **t = mem_calloc(cap, sizeof *t);
    if (!t)
        return false;
    struct cjob **old = s->table;
    uint32_t old_cap = s->table_cap;
    s->table = t;
    s->table_cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
        for (struct cjob *j = old[i], *next; j; j = next) {
            next = j->h_next;
            uint32_t b = bucket(s, j->hash);
            j->h_next = s->table[b];
            s->table[b] = j;
        }
    free(old);
    return true;
}

static void table_insert(struct csvc *s, struct cjob *j)
{
    if (s->table_count * 2 >= s->table_cap && !table_grow(s) && !s->table_cap)
        return;   /* no table at all: the node simply cannot be found again */
    uint32_t b = bucket(s, j->hash);
    j->h_next = s->table[b];
    s->table[b] = j;
    j->in_table = true;
    s->table_count++;
}

static void table_remove(struct csvc *s, struct cjob *j)
{
    if (!j->in_table)
        return;
    for (struct cjob **p = &s->table[bucket(s, j->hash)]; *p; p = &(*p)->h_next)
        if (*p == j) {
            *p = j->h_next;
            break;
        }
    j->in_table = false;
    s->table_count--;
}

/* The hash picks candidates; the full compare decides. */
struct cjob *csvc_find(struct csvc *s, enum cjob_kind kind, const uint8_t h[16], const uint8_t *key, size_t len)
{
    if (!s->table_cap)
        return NULL;
    for (struct cjob *j = s->table[bucket(s, h)]; j; j = j->h_next) {
        if (j->kind != kind || memcmp(j->hash, h, 16))
            continue;
        if (j->key_len != len || memcmp(j->key, key, len)) {
            s->stats.hash_collisions++;
            continue;
        }
        if (j->cancel_requested || j->state == CJOB_CANCELLED)
            continue;
        return j;
    }
    return NULL;
}

static void lru_remove(struct csvc *s, struct cjob *j)
{
    if (!list_linked(&j->lru_link))
        return;
    list_remove(&j->lru_link);
    s->lru_count--;
}

static void job_free(struct csvc *s, struct cjob *j);
static void release_locked(struct csvc *s, struct cjob *j);

static void lru_trim(struct csvc *s, uint32_t keep)
{
    while (s->lru_count > keep) {
        struct cjob *old = list_entry(list_last(&s->lru), struct cjob, lru_link);
        lru_remove(s, old);
        table_remove(s, old);
        job_free(s, old);
    }
}

/* A finished node nobody holds: kept for re-adoption, newest first. */
static void lru_add(struct csvc *s, struct cjob *j)
{
    list_add_head(&s->lru, &j->lru_link);
    s->lru_count++;
}

/* ---- nodes ---------------------------------------------------------------------------- */

/* A failure is not kept (release_locked), a back end's either: a front node
 * nobody holds lets go of a back end that ended without a pipeline, so the
 * next request for the program compiles its back end again. Nobody reads
 * that back end's reason any more: csvc_status's pointers are valid only
 * while the front node is held. */
static void drop_failed_back(struct csvc *s, struct cjob *front)
{
    struct cjob *b = front->back;
    if (front->adopters == 0 && b && (b->state == CJOB_FAILED || b->state == CJOB_CANCELLED)) {
        front->back = NULL;
        release_locked(s, b);
    }
}

static void derive_set(struct csvc *s, struct cjob *base, void *ud);
static void no_cont(struct csvc *s, struct cjob *j, void *ud) { (void)s, (void)j, (void)ud; }

static void job_free(struct csvc *s, struct cjob *j)
{
    if (j->back)
        release_locked(s, j->back);
    if (j->base) {
        /* A set node going before its base ended: its continuation there
         * becomes a no-op (the array is left as it is: it may be firing). */
        for (uint32_t i = 0; i < j->base->cont_count; i++)
            if (j->base->conts[i].fn == derive_set && j->base->conts[i].ud == j)
                j->base->conts[i] = (struct cont){no_cont, NULL};
        j->base->set_holds--;
        release_locked(s, j->base);
    }
    if (j->bake_of)
        release_locked(s, j->bake_of);
    free(j->bake_words);
    if (j->pipeline)
        kb_pipeline_destroy(s->dev, j->pipeline);
    if (j->layout)
        kb_layout_destroy(s->dev, j->layout);
    prog_source_finish(&j->src);
    prog_output_finish(&j->out);
    free(j->spirv);
    free(j->key);
    free(j->conts);
    free(j);
}

static void fire_conts(struct csvc *s, struct cjob *j)
{
    if (j->conts_fired)
        return;
    j->conts_fired = true;
    for (uint32_t i = 0; i < j->cont_count; i++)
        j->conts[i].fn(s, j, j->conts[i].ud);
}

static bool ended(const struct cjob *j)
{
    return j->state == CJOB_DONE || j->state == CJOB_FAILED || j->state == CJOB_CANCELLED;
}

kiln_result csvc_then(struct csvc *s, struct cjob *j, void (*fn)(struct csvc *, struct cjob *, void *), void *ud)
{
    pthread_mutex_lock(&s->lock);
    kiln_result r = KILN_OK;
    if (ended(j) && j->conts_fired) {
        fn(s, j, ud);
    } else if (!vec_reserve((void **)&j->conts, &j->cont_cap, j->cont_count + 1, sizeof *j->conts)) {
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a continuation of %s's compile", j->name);
    } else {
        j->conts[j->cont_count++] = (struct cont){fn, ud};
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

/* Lets go of one adopter. The last one cancels a node not started; a node
 * running finishes and is kept; a finished node goes to the cache. */
static void release_locked(struct csvc *s, struct cjob *j)
{
    if (j->adopters == 0)
        return;   /* defensive: never expected */
    if (--j->adopters)
        return;
    if (j->state == CJOB_QUEUED) {
        j->cancel_requested = true;
        q_remove(j);
        table_remove(s, j);
        j->state = CJOB_CANCELLED;
        if (!j->base)   /* a set node compiles nothing: no compile was cancelled */
            s->stats.cancelled++;
        fire_conts(s, j);
        pthread_cond_broadcast(&s->ended);
        job_free(s, j);
    } else if (j->state == CJOB_RUNNING) {
        j->cancel_requested = true;   /* the worker keeps its result when it ends */
    } else if (j->state == CJOB_DONE) {
        drop_failed_back(s, j);
        lru_add(s, j);
        lru_trim(s, LRU_MAX);
    } else {
        /* A failure is not kept: asked for again, the program compiles again
         * (a driver's failure may not repeat). */
        table_remove(s, j);
        job_free(s, j);
    }
}

bool csvc_cancel_unstarted(struct csvc *s, struct cjob *front)
{
    pthread_mutex_lock(&s->lock);
    bool cancel = front->state == CJOB_QUEUED && front->adopters == 1;
    if (cancel)
        release_locked(s, front);
    pthread_mutex_unlock(&s->lock);
    return cancel;
}

void csvc_release(struct csvc *s, struct cjob *front)
{
    pthread_mutex_lock(&s->lock);
    release_locked(s, front);
    pthread_mutex_unlock(&s->lock);
}

static void adopt(struct csvc *s, struct cjob *j)
{
    if (j->adopters++ == 0)
        lru_remove(s, j);
}

static void set_prio(struct csvc *s, struct cjob *j, enum cprio prio)
{
    if (prio <= j->prio)
        return;
    j->prio = prio;
    if (j->base)   /* a set node's front end is what it waits for */
        set_prio(s, j->base, prio);
    if (prio == CPRIO_WANTED)
        s->stats.wanted++;
    if (j->state == CJOB_QUEUED && j->queue >= 0 && j->queue < Q_DEFERRED) {
        csvc_requeue(s, j, (int)prio);
        pthread_cond_signal(&s->work);
    }
}

/* Marks a job's failure as one for want of host memory; `why` says what
 * could not be allocated. The text is kept in the job: nothing is allocated. */
static void fail_oom(struct cjob *j, const char *why)
{
    j->fail_code = KILN_ERR_NO_MEMORY;
    snprintf(j->fail_msg, sizeof j->fail_msg, "%s: error: %s\n", j->name, why);
}

/* The continuation of every front node: post or adopt its back-end node. */
static void post_back(struct csvc *s, struct cjob *front, void *ud)
{
    (void)ud;
    if (front->state != CJOB_DONE || front->back)
        return;
    if (front->adopters <= front->set_holds)
        return;   /* nobody wants it (set nodes take its SPIR-V, not its back end); posted if someone adopts it later */
    uint8_t *key;
    size_t len;
    const char *why;
    if (ckey_back(s->dev, front->out.spirv, front->out.words, &front->out.iface, &key, &len) < 0) {
        why = kiln_last_error();
        goto oom;
    }
    uint8_t h[16];
    hash128(key, len, h);
    struct cjob *b = csvc_find(s, CJOB_BACK, h, key, len);
    if (b) {
        free(key);
        if (ended(b))
            s->stats.deduplicated++;
        else
            s->stats.adopted++;
        adopt(s, b);
        set_prio(s, b, front->prio);
        front->back = b;
        return;
    }
    b = mem_calloc(1, sizeof *b);
    uint32_t *spirv = mem_alloc(front->out.words * 4 + 4);
    if (!b || !spirv) {
        free(b);
        free(spirv);
        free(key);
        why = "out of host memory for the back-end compile job";
        goto oom;
    }
    memcpy(spirv, front->out.spirv, front->out.words * 4);
    *b = (struct cjob){.kind = CJOB_BACK, .prio = front->prio, .key = key, .key_len = len, .adopters = 1,
                       .spirv = spirv, .words = front->out.words, .iface = front->out.iface,
                       .shared_bytes = front->shared_bytes, .queue = -1};
    list_init(&b->q_link);
    list_init(&b->lru_link);
    memcpy(b->hash, h, 16);
    memcpy(b->name, front->name, sizeof b->name);
    memcpy(b->origin, front->hash, 16);
    b->giant = b->words > s->cfg.giant_words;
    table_insert(s, b);
    front->back = b;
    enqueue(s, b);
    return;
oom:
    /* Out of host memory: the program fails, saying what could not be
     * allocated. */
    front->state = CJOB_FAILED;
    fail_oom(front, why);
}

/* ---- requests --------------------------------------------------------------------------- */

/* Adopts a front node for a request at prio (counted by the caller). */
static struct cjob *adopt_front(struct csvc *s, struct cjob *j, enum cprio prio)
{
    drop_failed_back(s, j);   /* one that failed after its front node was let go */
    adopt(s, j);
    set_prio(s, j, prio);
    if (j->back)
        set_prio(s, j->back, prio);
    else
        post_back(s, j, NULL);   /* a front end that finished while nobody held it */
    return j;
}

struct cjob *csvc_adopt_front(struct csvc *s, struct cjob *j, enum cprio prio)
{
    if (ended(j))
        s->stats.deduplicated++;
    else
        s->stats.adopted++;
    return adopt_front(s, j, prio);
}

/* The front node equal to a request, to adopt (lock held), or NULL. A
 * precompile's node (made from an archive key, with no source) takes the
 * request's source and included files when it is not running (queued, it
 * can then compile from them should its archive entry fail; done, variants
 * are made from them); one running is waited for (it only reads the
 * archive). */
static struct cjob *find_front(struct csvc *s, const uint8_t h[16], const uint8_t *key, size_t len,
                               const struct prog_source *src, struct prog_include **includes,
                               uint32_t *include_count)
{
    for (;;) {
        struct cjob *j = csvc_find(s, CJOB_FRONT, h, key, len);
        if (!j || j->src.source)
            return j;
        if (j->state != CJOB_RUNNING) {
            /* Queued: it can compile from the source should its entry fail;
             * done: variants of the program are made from its source. */
            struct prog_source copy;
            if (prog_source_copy(&copy, src) == KILN_OK) {
                copy.includes = *includes;
                copy.include_count = *include_count;
                *includes = NULL;
                *include_count = 0;
                prog_source_finish(&j->src);
                j->src = copy;
            }
            return j;
        }
        pthread_cond_wait(&s->ended, &s->lock);
    }
}

struct cjob *csvc_front_new(uint8_t *key, size_t len, const uint8_t hash[16], const char *name, enum cprio prio)
{
    struct cjob *j = mem_calloc(1, sizeof *j);
    if (!j || !vec_reserve((void **)&j->conts, &j->cont_cap, 1, sizeof *j->conts)) {
        free(j);
        free(key);
        return NULL;
    }
    j->kind = CJOB_FRONT;
    j->prio = prio;
    j->key = key;
    j->key_len = len;
    memcpy(j->hash, hash, 16);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->adopters = 1;
    j->queue = -1;
    list_init(&j->q_link);
    list_init(&j->lru_link);
    j->conts[j->cont_count++] = (struct cont){post_back, NULL};
    return j;
}

void csvc_post(struct csvc *s, struct cjob *j)
{
    table_insert(s, j);
    enqueue(s, j);
}

/* Asks for the front end of src (whose constants it ignores: see
 * csvc_request); for_set: the hold is a set node's (counted in set_holds,
 * so that the front node posts no back end for it). */
static kiln_result request_front(struct csvc *s, const struct prog_source *src, enum cprio prio, bool for_set,
                                 struct cjob **out)
{
    uint8_t *key;
    size_t len;
    struct prog_include *includes;
    uint32_t include_count;
    KILN_TRY(ckey_front(src, &key, &len, &includes, &include_count));
    uint8_t h[16];
    hash128(key, len, h);
    pthread_mutex_lock(&s->lock);
    s->stats.requests++;
    struct cjob *j = find_front(s, h, key, len, src, &includes, &include_count);
    if (j) {
        j->set_holds += for_set;
        *out = csvc_adopt_front(s, j, prio);
        pthread_mutex_unlock(&s->lock);
        free(key);
        prog_includes_free(includes, include_count);
        return KILN_OK;
    }
    pthread_mutex_unlock(&s->lock);

    j = csvc_front_new(key, len, h, src->name, prio);
    if (!j) {
        prog_includes_free(includes, include_count);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile job of %s", src->name);
    }
    kiln_result r = prog_source_copy(&j->src, src);
    if (r < 0) {
        prog_includes_free(includes, include_count);
        job_free(s, j);
        return r;
    }
    j->src.includes = includes;          /* the compile reads exactly what was keyed */
    j->src.include_count = include_count;

    pthread_mutex_lock(&s->lock);
    /* Another thread may have posted the same request meanwhile. */
    struct cjob *twin = find_front(s, h, j->key, len, src, &j->src.includes, &j->src.include_count);
    if (twin) {
        twin->set_holds += for_set;
        *out = csvc_adopt_front(s, twin, prio);
        job_free(s, j);
        pthread_mutex_unlock(&s->lock);
        return KILN_OK;
    }
    r = csvc_start_workers(s);
    if (r < 0) {
        job_free(s, j);
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    j->set_holds = for_set;
    csvc_post(s, j);
    *out = j;
    pthread_mutex_unlock(&s->lock);
    return KILN_OK;
}

/* The continuation a set node has on its base front node: when the front
 * end ends, the set node takes its SPIR-V, log and interface with the
 * constants applied, and ends too (lock held). A front end that failed
 * fails it alike; constants the shader does not declare, or values their
 * types cannot hold, fail it with KILN_ERR_INVALID. */
static void derive_set(struct csvc *s, struct cjob *base, void *ud)
{
    struct cjob *j = ud;
    if (ended(j))
        return;   /* defensive: it ends once */
    if (base->state != CJOB_DONE) {
        j->state = base->state == CJOB_CANCELLED ? CJOB_CANCELLED : CJOB_FAILED;
        j->fail_code = base->fail_code;
        memcpy(j->fail_msg, base->fail_msg, sizeof j->fail_msg);
        if (base->out.log)
            j->out.log = str_dup(base->out.log);   /* NULL (no memory): fail_msg says it, if shorter */
    } else {
        j->out.spirv = mem_alloc(base->out.words * 4 + 4);
        j->out.log = str_dup(base->out.log ? base->out.log : "");
        j->out.words = base->out.words;
        j->out.iface = base->out.iface;
        j->out.seconds = base->out.seconds;
        j->shared_bytes = base->shared_bytes;
        if (!j->out.spirv || !j->out.log) {
            j->state = CJOB_FAILED;
            fail_oom(j, "out of host memory taking its front end's SPIR-V");
        } else if (prog_spec_apply(&j->out.iface, j->src.constants, j->src.constant_count) < 0 ||
                   prog_spec_min_sizes(base->out.spirv, base->out.words, &j->out.iface) < 0) {
            j->state = CJOB_FAILED;
            j->fail_code = KILN_ERR_INVALID;
            snprintf(j->fail_msg, sizeof j->fail_msg, "%s: error: %s\n", j->name, kiln_last_error());
            err_clear();   /* the caller's thread is not this program's */
        } else {
            memcpy(j->out.spirv, base->out.spirv, base->out.words * 4);
            j->state = CJOB_DONE;
        }
    }
    fire_conts(s, j);
    pthread_cond_broadcast(&s->ended);
}

kiln_result csvc_request(struct csvc *s, const struct prog_source *src, enum cprio prio, struct cjob **out)
{
    if (!src->constant_count)
        return request_front(s, src, prio, false, out);
    /* One front end serves every set of constants: the request for the
     * source without them, then the set's own node over it. */
    struct prog_source plain = *src;
    plain.constants = NULL;
    plain.constant_count = 0;
    struct cjob *front;
    KILN_TRY(request_front(s, &plain, prio, true, &front));
    /* front->key is its identity: written before publication; front is held. */
    uint8_t *key;
    size_t len;
    struct cjob *j = NULL;
    kiln_result r = ckey_set(front->key, front->key_len, src->constants, src->constant_count, &key, &len);
    if (r == KILN_OK) {
        uint8_t h[16];
        hash128(key, len, h);
        if (!(j = csvc_front_new(key, len, h, src->name, prio)))
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile job of %s", src->name);
        else
            r = prog_source_copy(&j->src, src);
    }
    pthread_mutex_lock(&s->lock);
    struct cjob *twin = r == KILN_OK ? csvc_find(s, CJOB_FRONT, j->hash, j->key, j->key_len) : NULL;
    if (r < 0 || twin) {
        /* The set is asked for already (or cannot be): its node holds the
         * front end, not this request. */
        front->set_holds--;
        release_locked(s, front);
        if (twin)
            *out = adopt_front(s, twin, prio);   /* counted once, as the front end's request */
        pthread_mutex_unlock(&s->lock);
        if (j)
            job_free(s, j);   /* never published: no lock needed */
        return r;
    }
    j->base = front;
    table_insert(s, j);
    if (ended(front) && front->conts_fired) {
        derive_set(s, front, j);
    } else if (!vec_reserve((void **)&front->conts, &front->cont_cap, front->cont_count + 1, sizeof *front->conts)) {
        j->state = CJOB_FAILED;
        fail_oom(j, "out of host memory waiting for its front end");
    } else {
        front->conts[front->cont_count++] = (struct cont){derive_set, j};
    }
    *out = j;
    pthread_mutex_unlock(&s->lock);
    return KILN_OK;
}

kiln_result csvc_request_baked(struct csvc *s, struct cjob *universal, const struct prog_push_word *words,
                               uint32_t count, enum cprio prio, struct cjob **out)
{
    /* The key: a tag no GLSL request's key starts with, the universal's
     * key hash, then the words (offset, value) in the order given. */
    static const char tag[8] = "KBAKE1\0";
    size_t len = sizeof tag + 16 + 4 + (size_t)count * 8;
    uint8_t *key = mem_alloc(len);
    struct prog_push_word *copy = mem_alloc((count ? count : 1) * sizeof *copy);
    if (!key || !copy) {
        free(key);
        free(copy);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a variant of %s", universal->name);
    }
    memcpy(key, tag, sizeof tag);
    memcpy(key + sizeof tag, universal->hash, 16);
    memcpy(key + sizeof tag + 16, &count, 4);
    for (uint32_t i = 0; i < count; i++) {
        memcpy(key + sizeof tag + 20 + 8 * (size_t)i, &words[i].offset, 4);
        memcpy(key + sizeof tag + 24 + 8 * (size_t)i, &words[i].value, 4);
        copy[i] = words[i];
    }
    uint8_t h[16];
    hash128(key, len, h);
    pthread_mutex_lock(&s->lock);
    s->stats.requests++;
    struct cjob *j = csvc_find(s, CJOB_FRONT, h, key, len);
    if (j) {
        *out = csvc_adopt_front(s, j, prio);
        pthread_mutex_unlock(&s->lock);
        free(key);
        free(copy);
        return KILN_OK;
    }
    pthread_mutex_unlock(&s->lock);
    j = csvc_front_new(key, len, h, universal->name, prio);
    if (!j) {
        free(copy);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile job of a variant of %s",
                          universal->name);
    }
    j->bake_words = copy;
    j->bake_count = count;
    j->src.name = str_dup(universal->name);   /* what csvc_status says it was compiled as */
    if (!j->src.name) {
        job_free(s, j);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile job of a variant of %s",
                          universal->name);
    }
    pthread_mutex_lock(&s->lock);
    struct cjob *twin = csvc_find(s, CJOB_FRONT, h, j->key, len);
    kiln_result r = twin ? KILN_OK : csvc_start_workers(s);
    if (twin || r < 0) {
        if (twin)
            *out = csvc_adopt_front(s, twin, prio);
        job_free(s, j);
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    adopt(s, universal);
    j->bake_of = universal;
    csvc_post(s, j);
    *out = j;
    pthread_mutex_unlock(&s->lock);
    return KILN_OK;
}

kiln_program_state csvc_status_locked(struct csvc *s, struct cjob *f, struct csvc_result *out)
{
    (void)s;
    /* A set node's log is its front end's, written under that one's name. */
    *out = (struct csvc_result){.state = KILN_PROGRAM_PENDING,
                                .compiled_as = f->base && f->base->src.name ? f->base->src.name : f->src.name};
    if (f->state == CJOB_FAILED || f->state == CJOB_CANCELLED) {
        out->state = KILN_PROGRAM_FAILED;
        out->front = &f->out;
        out->code = f->fail_code == KILN_ERR_NO_MEMORY || f->fail_code == KILN_ERR_INVALID ||
                            f->fail_code == KILN_ERR_LIMIT
                        ? f->fail_code
                        : KILN_ERR_COMPILE;
        out->error = !f->fail_code && f->out.log && f->out.log[0] ? f->out.log
                     : f->fail_msg[0]                            ? f->fail_msg
                                                                 : "the compile was cancelled";
    } else if (f->state == CJOB_DONE && f->back) {
        out->front = &f->out;
        struct cjob *b = f->back;
        if (b->state == CJOB_DONE) {
            out->state = KILN_PROGRAM_READY;
            out->layout = b->layout;
            out->pipeline = b->pipeline;
        } else if (b->state == CJOB_FAILED || b->state == CJOB_CANCELLED) {
            out->state = KILN_PROGRAM_FAILED;
            out->code = b->fail_code == KILN_ERR_NO_MEMORY || b->fail_code == KILN_ERR_LIMIT ? b->fail_code
                                                                                          : KILN_ERR_COMPILE;
            out->error = b->fail_msg[0] ? b->fail_msg : "the back end was cancelled";
        }
    }
    return out->state;
}

kiln_program_state csvc_status(struct csvc *s, struct cjob *f, struct csvc_result *out)
{
    pthread_mutex_lock(&s->lock);
    kiln_program_state st = csvc_status_locked(s, f, out);
    pthread_mutex_unlock(&s->lock);
    return st;
}

void csvc_want(struct csvc *s, struct cjob *f)
{
    pthread_mutex_lock(&s->lock);
    set_prio(s, f, CPRIO_WANTED);
    if (f->back)
        set_prio(s, f->back, CPRIO_WANTED);
    pthread_mutex_unlock(&s->lock);
}

kiln_program_state csvc_wait(struct csvc *s, struct cjob *f, bool want, struct csvc_result *out)
{
    pthread_mutex_lock(&s->lock);
    for (;;) {
        if (want) {
            set_prio(s, f, CPRIO_WANTED);
            if (f->back)
                set_prio(s, f->back, CPRIO_WANTED);
        }
        if (csvc_status_locked(s, f, out) != KILN_PROGRAM_PENDING)
            break;
        pthread_cond_wait(&s->ended, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return out->state;
}

/* ---- the board (board.h: the policy; here, acting on it) ----------------------------------- */

static void defer(struct csvc *s, struct cjob *j)
{
    csvc_requeue(s, j, Q_DEFERRED);
    if (!j->deferred) {
        j->deferred = true;
        s->stats.giants_deferred++;
        log_info("compile: giant %s (%zu SPIR-V words) deferred: %u giants in flight, bound %u; %u deferred now",
                 j->name, j->words, s->giants_running, s->giant_bound, q_length(s, Q_DEFERRED));
    }
}

/* What is queued and what runs, as the board sees it. */
static struct board board_of(struct csvc *s)
{
    struct board b = {.giants_running = s->giants_running,
                      .giant_bound = s->giant_bound,
                      .alone_running = s->alone_running,
                      .alone_queued = q_length(s, Q_ALONE),
                      .deferred_queued = q_length(s, Q_DEFERRED)};
    for (int q = 0; q < BOARD_PRIOS; q++) {
        struct cjob *j;
        list_for_each(j, it, &s->queues[q], struct cjob, q_link) {
            b.queued[q]++;
            b.small[q] += !j->giant;
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
    case BOARD_ALONE: return q_first(s, Q_ALONE);
    case BOARD_DEFERRED: return q_first(s, Q_DEFERRED);
    case BOARD_FIRST: return q_first(s, c.prio);
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
            fail_oom(j, kiln_last_error());
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
        fail_oom(j, kiln_last_error());
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
    if ((hr = prog_check_limits_shared(&j->iface, j->shared_bytes, &s->dev->caps)) < 0)
        return fail_back(j, hr, "the device cannot run it");
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
        enqueue(s, j);
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
        enqueue(s, j);
        return;
    }
    if (j->state == CJOB_FAILED && j->stopped_unwanted)
        s->stats.cancelled++;
    if (j->state == CJOB_FAILED) {
        s->stats.failed += !j->stopped_unwanted;
        if (j->kind == CJOB_FRONT && !j->src.source)
            table_remove(s, j);   /* a request with a source must not adopt a precompile's failure */
        if (j->kind == CJOB_BACK && j->alone)
            log_warn("compile: %s failed for good after %u tries alone: %s", j->name, j->alone_tries, j->fail_msg);
    }
    fire_conts(s, j);
    pthread_cond_broadcast(&s->ended);
    if (j->cancel_requested && j->adopters == 0) {
        /* Finished for nobody: the result is kept, and may be adopted again. */
        j->cancel_requested = false;
        if (j->state == CJOB_DONE) {
            lru_add(s, j);
            lru_trim(s, LRU_MAX);
        } else {
            table_remove(s, j);
            job_free(s, j);
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
            if (s->running == 0 && !queued_any(s))
                merge_caches(s);   /* a phase end: no job runs, none waits */
            pthread_cond_wait(&s->work, &s->lock);
            continue;
        }
        q_remove(j);
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
        for (struct cjob *j; (j = q_first(s, q));) {
            q_remove(j);
            j->state = CJOB_CANCELLED;
            s->stats.cancelled++;
            cancelled++;
            fire_conts(s, j);
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
            job_free(s, j);
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
            job_free(s, j);
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
        n += q_length(s, q);
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
