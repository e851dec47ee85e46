/* SPDX-License-Identifier: MIT */
/*
 * precompile.c: csvc_precompile (see compile.h for its contract). It reads
 * the archive's front ends and notes (written by compile.c, read through
 * the archive's decoders, which refuse what a lookup would refuse: such an
 * entry is skipped with its reason), orders them, and posts one front node
 * per front key through csvc_front_new, as a request would, but with the
 * archive key alone: such a node compiles nothing unless its entry fails and
 * a request has given it the source meanwhile. The nodes are held in
 * svc->pre until the service is destroyed (compile.c frees them there).
 */
#include "compile_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pre_item {
    uint8_t hash[16];            /* of the front key */
    uint8_t *key;                /* a copy of the archive's key (owned) */
    size_t key_len;
    uint32_t words;
    bool noted, slow;
    uint64_t noted_ns;
    char name[64];
};

struct pre_scan {
    struct pre_item *items;
    uint32_t count, cap;
    struct note_seen { uint8_t hash[16]; uint32_t magic; uint64_t noted_ns; char name[64]; } *notes;
    uint32_t note_count, note_cap;
    bool oom;
};

static bool scan_note(void *ud, const uint8_t *key, size_t klen, const uint8_t *value, size_t vlen)
{
    struct pre_scan *p = ud;
    struct arc_note nv;
    char why[ARC_WHY_LEN];
    if (!arc_note_decode(key, klen, value, vlen, &nv, why)) {
        log_warn("archive: precompile skips a note: %s", why);
        return true;
    }
    if (!vec_reserve((void **)&p->notes, &p->note_cap, p->note_count + 1, sizeof *p->notes)) {
        p->oom = true;
        return false;
    }
    struct note_seen *n = &p->notes[p->note_count++];
    *n = (struct note_seen){.magic = nv.what, .noted_ns = nv.noted_ns};
    memcpy(n->hash, nv.front_hash, 16);
    memcpy(n->name, nv.name, sizeof n->name);
    return true;
}

static bool scan_front(void *ud, const uint8_t *key, size_t klen, const uint8_t *value, size_t vlen)
{
    struct pre_scan *p = ud;
    struct arc_front f;
    char why[ARC_WHY_LEN];
    if (!arc_front_decode(value, vlen, &f, why)) {
        log_warn("archive: precompile skips a front-end entry: %s", why);
        return true;
    }
    if (!vec_reserve((void **)&p->items, &p->cap, p->count + 1, sizeof *p->items)) {
        p->oom = true;
        return false;
    }
    uint8_t *copy = mem_alloc(klen ? klen : 1);
    if (!copy) {
        p->oom = true;
        return false;
    }
    memcpy(copy, key, klen);
    struct pre_item *it = &p->items[p->count++];
    *it = (struct pre_item){.key = copy, .key_len = klen, .words = (uint32_t)f.words};
    hash128(key, klen, it->hash);
    snprintf(it->name, sizeof it->name, "archived program");
    return true;
}

static void items_free(struct pre_scan *p)
{
    for (uint32_t i = 0; i < p->count; i++)
        free(p->items[i].key);
    free(p->items);
    p->items = NULL;
    p->count = 0;
}

static int cmp_hash(const void *a, const void *b) { return memcmp(a, b, 16); }

/* The order: slow last; noted (used on this device) first; then fewer SPIR-V
 * words first; then the order they were noted in. */
static int cmp_pre(const void *a, const void *b)
{
    const struct pre_item *x = a, *y = b;
    if (x->slow != y->slow)
        return x->slow ? 1 : -1;
    if (x->noted != y->noted)
        return x->noted ? -1 : 1;
    if (x->words != y->words)
        return x->words < y->words ? -1 : 1;
    if (x->noted_ns != y->noted_ns)
        return x->noted_ns < y->noted_ns ? -1 : 1;
    return memcmp(x->hash, y->hash, 16);
}

/* A front node made from an archive key alone (lock held): it has a name
 * and no source until a request with the source adopts it. */
static struct cjob *post_keyed(struct csvc *s, const struct pre_item *it)
{
    struct cjob *j = csvc_find(s, CJOB_FRONT, it->hash, it->key, it->key_len);
    if (j)
        return csvc_adopt_front(s, j, CPRIO_NORMAL);
    uint8_t *key = mem_alloc(it->key_len ? it->key_len : 1);
    char *name = str_dup(it->name);
    if (!key || !name) {
        free(key);
        free(name);
        return NULL;
    }
    memcpy(key, it->key, it->key_len);
    j = csvc_front_new(key, it->key_len, it->hash, it->name, CPRIO_NORMAL);
    if (!j) {
        free(name);
        return NULL;
    }
    j->src.name = name;
    csvc_post(s, j);
    return j;
}

/* Moves a precompile's job still at normal priority to the background
 * (lock held); one a submit waits for stays where it is. */
static void to_background(struct csvc *s, struct cjob *j)
{
    if (!j || j->prio != CPRIO_NORMAL)
        return;
    j->prio = CPRIO_BACKGROUND;
    if (j->state == CJOB_QUEUED && j->queue == CPRIO_NORMAL)
        csvc_requeue(s, j, CPRIO_BACKGROUND);
}

kiln_result csvc_precompile(struct csvc *s, double stall_s, struct csvc_precompile *out)
{
    *out = (struct csvc_precompile){0};
    uint64_t t0 = time_now_ns();
    if (!s->archive || !s->archive->enabled) {
        log_info("precompile: no archive (KILN_ARCHIVE=0 or its folder unusable): nothing to precompile");
        return KILN_OK;
    }
    struct pre_scan p = {0};
    arc_store_each(s->archive, ARC_NOTE, scan_note, &p);
    arc_store_each(s->archive, ARC_FRONT, scan_front, &p);
    if (p.oom) {
        items_free(&p);
        free(p.notes);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory reading the archive's notes");
    }
    /* One item per front key (several files may hold it), with its notes.
     * (An empty archive has no list: qsort and bsearch take no NULL.) */
    if (p.count)
        qsort(p.items, p.count, sizeof *p.items, cmp_hash);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p.count; i++) {
        if (!n || memcmp(p.items[n - 1].hash, p.items[i].hash, 16))
            p.items[n++] = p.items[i];
        else
            free(p.items[i].key);
    }
    p.count = n;
    for (uint32_t i = 0; i < p.note_count; i++) {
        struct pre_item *it = n ? bsearch(p.notes[i].hash, p.items, n, sizeof *p.items, cmp_hash) : NULL;
        if (!it)
            continue;   /* a note of a front end this folder no longer holds */
        if (p.notes[i].magic == ARC_NOTE_SLOW) {
            it->slow = true;
        } else if (!it->noted || p.notes[i].noted_ns < it->noted_ns) {
            it->noted = true;
            it->noted_ns = p.notes[i].noted_ns;
        }
        if (p.notes[i].name[0])
            memcpy(it->name, p.notes[i].name, sizeof it->name);
    }
    if (n)
        qsort(p.items, n, sizeof *p.items, cmp_pre);
    free(p.notes);

    pthread_mutex_lock(&s->lock);
    kiln_result r = csvc_start_workers(s);
    uint32_t base = s->pre_count;
    if (r == KILN_OK && !vec_reserve((void **)&s->pre, &s->pre_cap, base + n, sizeof *s->pre))
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the precompile list (%u programs)", base + n);
    for (uint32_t i = 0; r == KILN_OK && i < n; i++) {
        struct cjob *j = post_keyed(s, &p.items[i]);
        if (!j) {
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for precompile job %u of %u", i + 1, n);
            break;
        }
        s->pre[s->pre_count++] = j;
        out->programs++;
        out->noted += p.items[i].noted;
        out->slow += p.items[i].slow;
    }
    items_free(&p);
    if (r < 0) {
        pthread_mutex_unlock(&s->lock);
        return r;
    }
    /* Wait while compiles keep finishing. */
    uint32_t ended_before = UINT32_MAX;
    uint64_t progress_ns = time_now_ns();
    for (;;) {
        uint32_t ready = 0, failed = 0;
        for (uint32_t i = base; i < s->pre_count; i++) {
            struct csvc_result res;
            kiln_program_state st = csvc_status_locked(s, s->pre[i], &res);
            ready += st == KILN_PROGRAM_READY;
            failed += st == KILN_PROGRAM_FAILED;
        }
        out->ready = ready;
        out->failed = failed;
        uint64_t now = time_now_ns();
        if (ready + failed != ended_before) {
            ended_before = ready + failed;
            progress_ns = now;
        }
        if (ready + failed == out->programs || s->stopping)
            break;
        if ((double)(now - progress_ns) / 1e9 >= stall_s) {
            for (uint32_t i = base; i < s->pre_count; i++) {
                struct cjob *j = s->pre[i];
                to_background(s, j);
                to_background(s, j->back);
            }
            out->background = out->programs - ready - failed;
            break;
        }
        cond_wait_ns(&s->ended, &s->lock, 50ull * 1000 * 1000);
    }
    pthread_mutex_unlock(&s->lock);
    out->seconds = (double)(time_now_ns() - t0) / 1e9;
    if (out->background)
        log_info("precompile: %u of %u programs ready in %.2f s (%u failed); nothing finished for %.1f s: the other "
                 "%u go on in the background",
                 out->ready, out->programs, out->seconds, out->failed, stall_s, out->background);
    else
        log_info("precompile: %u of %u programs ready in %.2f s (%u noted on this device, %u found slow before, "
                 "%u failed)",
                 out->ready, out->programs, out->seconds, out->noted, out->slow, out->failed);
    return KILN_OK;
}
