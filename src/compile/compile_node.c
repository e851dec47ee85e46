/* SPDX-License-Identifier: MIT */
/*
 * compile_node.c: the compile service's nodes (see compile.h): queues, the
 * dedupe table and the cache of released results, nodes and their
 * continuations, requests, status and waits. Everything here runs with
 * svc->lock held.
 */
#define _GNU_SOURCE
#include "compile_private.h"
#include "base/trace.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- queues ---------------------------------------------------------------------- */

static void q_push(struct csvc *s, int q, struct cjob *j)
{
    j->queue = q;
    list_add_tail(&s->queues[q], &j->q_link);
}

void csvc_q_remove(struct cjob *j)
{
    list_remove(&j->q_link);
    j->queue = -1;
}

/* The job at the head of queue q, or NULL. */
struct cjob *csvc_q_first(struct csvc *s, int q)
{
    struct list *l = list_first(&s->queues[q]);
    return l ? list_entry(l, struct cjob, q_link) : NULL;
}

uint32_t csvc_q_length(struct csvc *s, int q)
{
    uint32_t n = 0;
    for (const struct list *l = s->queues[q].next; l != &s->queues[q]; l = l->next)
        n++;
    return n;
}

bool csvc_queued_any(struct csvc *s)
{
    for (int q = 0; q < Q_COUNT; q++)
        if (!list_empty(&s->queues[q]))
            return true;
    return false;
}

void csvc_requeue(struct csvc *s, struct cjob *j, int q)
{
    csvc_q_remove(j);
    q_push(s, q, j);
}

/* Puts a runnable job on the queue its priority and kind say. */
void csvc_enqueue(struct csvc *s, struct cjob *j)
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

void csvc_table_remove(struct csvc *s, struct cjob *j)
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

static void release_locked(struct csvc *s, struct cjob *j);

void csvc_lru_trim(struct csvc *s, uint32_t keep)
{
    while (s->lru_count > keep) {
        struct cjob *old = list_entry(list_last(&s->lru), struct cjob, lru_link);
        lru_remove(s, old);
        csvc_table_remove(s, old);
        csvc_job_free(s, old);
    }
}

/* A finished node nobody holds: kept for re-adoption, newest first. */
void csvc_lru_add(struct csvc *s, struct cjob *j)
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

void csvc_job_free(struct csvc *s, struct cjob *j)
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

void csvc_fire_conts(struct csvc *s, struct cjob *j)
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
        csvc_q_remove(j);
        csvc_table_remove(s, j);
        j->state = CJOB_CANCELLED;
        if (!j->base)   /* a set node compiles nothing: no compile was cancelled */
            s->stats.cancelled++;
        csvc_fire_conts(s, j);
        pthread_cond_broadcast(&s->ended);
        csvc_job_free(s, j);
    } else if (j->state == CJOB_RUNNING) {
        j->cancel_requested = true;   /* the worker keeps its result when it ends */
    } else if (j->state == CJOB_DONE) {
        drop_failed_back(s, j);
        csvc_lru_add(s, j);
        csvc_lru_trim(s, LRU_MAX);
    } else {
        /* A failure is not kept: asked for again, the program compiles again
         * (a driver's failure may not repeat). */
        csvc_table_remove(s, j);
        csvc_job_free(s, j);
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

void csvc_adopt(struct csvc *s, struct cjob *front)
{
    pthread_mutex_lock(&s->lock);
    KILN_ASSERT(front->adopters > 0);
    adopt(s, front);
    pthread_mutex_unlock(&s->lock);
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
void csvc_fail_oom(struct cjob *j, const char *why)
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
    b->universal = !front->bake_of;
    b->giant = b->words > s->cfg.giant_words;
    table_insert(s, b);
    front->back = b;
    csvc_enqueue(s, b);
    return;
oom:
    /* Out of host memory: the program fails, saying what could not be
     * allocated. */
    front->state = CJOB_FAILED;
    csvc_fail_oom(front, why);
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
    csvc_enqueue(s, j);
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
        csvc_job_free(s, j);
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
        csvc_job_free(s, j);
        pthread_mutex_unlock(&s->lock);
        return KILN_OK;
    }
    r = csvc_start_workers(s);
    if (r < 0) {
        csvc_job_free(s, j);
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
            csvc_fail_oom(j, "out of host memory taking its front end's SPIR-V");
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
    csvc_fire_conts(s, j);
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
            csvc_job_free(s, j);   /* never published: no lock needed */
        return r;
    }
    j->base = front;
    table_insert(s, j);
    if (ended(front) && front->conts_fired) {
        derive_set(s, front, j);
    } else if (!vec_reserve((void **)&front->conts, &front->cont_cap, front->cont_count + 1, sizeof *front->conts)) {
        j->state = CJOB_FAILED;
        csvc_fail_oom(j, "out of host memory waiting for its front end");
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
        csvc_job_free(s, j);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile job of a variant of %s",
                          universal->name);
    }
    pthread_mutex_lock(&s->lock);
    struct cjob *twin = csvc_find(s, CJOB_FRONT, h, j->key, len);
    kiln_result r = twin ? KILN_OK : csvc_start_workers(s);
    if (twin || r < 0) {
        if (twin)
            *out = csvc_adopt_front(s, twin, prio);
        csvc_job_free(s, j);
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
