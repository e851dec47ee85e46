/* SPDX-License-Identifier: MIT */
/*
 * specialize.c: sites, the predictor, the variant cache (see
 * specialize.h for the model).
 *
 * Submit numbers: the scheme's submits so far (spec_submitted counts them)
 * plus one is the submit being made ("now" at the top of a submit). A word
 * set before submit k has held its value at the top of submit k + h for h
 * submits (k .. k + h - 1).
 *
 * The predictor reads a node only through its scheme's view (struct
 * spec_view) and writes nothing of the scheme's: what the scheme must do
 * (re-record, verify a promotion) gathers in q->verdict while a hook runs
 * and is returned by it.
 */
#include "specialize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/trace.h"
#include "compile/compile.h"

void spec_policy_default(struct spec_policy *p)
{
    *p = (struct spec_policy){.warm = 2, .promote = 10, .cap = 4096, .max_failures = 3, .park_submits = 2,
                              .measure = 3, .gain = 0.97, .cache_per_scheme = 16};
}

/* ---- the variant cache -------------------------------------------------------------- */

void spec_cache_init(struct spec_cache *c, struct csvc *svc, bool capable, int override)
{
    *c = (struct spec_cache){.svc = svc, .capable = capable, .override = override};
    list_init(&c->variants);
    spec_policy_default(&c->policy);
}

bool spec_enabled(const struct spec_cache *c)
{
    if (!c || !c->capable)
        return false;
    if (c->override)
        return c->override > 0;
    return env_flag("KILN_SPECIALIZATION", 1) != 0;
}

static void variant_free(struct spec_cache *c, struct spec_variant *v)
{
    list_remove(&v->lru);
    c->count--;
    if (v->job)
        csvc_release(c->svc, v->job);
    free(v);
}

/* Drops unreferenced variants past the bound, least recently used first. */
static void cache_trim(struct spec_cache *c)
{
    uint32_t limit = c->policy.cache_per_scheme * (c->schemes ? c->schemes : 1);
    struct spec_variant *v;
    list_for_each_rev(v, tmp, &c->variants, struct spec_variant, lru) {
        if (c->unreferenced <= limit)
            break;
        if (v->refs)
            continue;
        c->unreferenced--;
        variant_free(c, v);
    }
}

static void variant_ref(struct spec_cache *c, struct spec_variant *v)
{
    if (v->refs++ == 0)
        c->unreferenced--;
    list_remove(&v->lru);
    list_add_head(&c->variants, &v->lru);
}

/* Lets go of a reference. A variant nobody holds whose compile has not
 * started is cancelled and forgotten; one compiling or compiled stays
 * cached. */
static void variant_unref(struct spec_cache *c, struct spec_variant *v)
{
    if (!v || --v->refs)
        return;
    if (csvc_cancel_unstarted(c->svc, v->job)) {
        v->job = NULL;   /* released by the cancel */
        variant_free(c, v);
        return;
    }
    c->unreferenced++;
    cache_trim(c);
}

void spec_cache_finish(struct spec_cache *c)
{
    while (c->variants.next && !list_empty(&c->variants))   /* a zeroed cache was never initialized */
        variant_free(c, list_entry(list_first(&c->variants), struct spec_variant, lru));
    *c = (struct spec_cache){0};
}

/* ---- events and trace --------------------------------------------------------------- */

static void slots_text(char *buf, size_t cap, uint64_t mask, const uint32_t *words, const struct spec_facts *f)
{
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < KILN_MAX_PARAM_WORDS && n < cap; i++)
        if (mask & ((uint64_t)1 << i))
            n += (size_t)snprintf(buf + n, cap - n, "%sslot%u=0x%x", n ? " " : "", i, words[i]);
    for (uint32_t b = 0; f && b < KILN_MAX_BINDINGS && n < cap; b++)
        if (f->lens_mask & (1u << b))
            n += (size_t)snprintf(buf + n, cap - n, "%slen%u=%u", n ? " " : "", b, f->lens[b]);
    if (f && f->groups_on && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%sgroups=%ux%ux%u", n ? " " : "", f->groups[0], f->groups[1],
                              f->groups[2]);
    if (!n)
        snprintf(buf, cap, "(none)");
}

static const char *event_name(kiln_spec_event_kind k)
{
    switch (k) {
    case KILN_SPEC_WARM: return "warm";
    case KILN_SPEC_PROMOTE: return "promote";
    case KILN_SPEC_DEMOTE: return "demote";
    case KILN_SPEC_FAILED: return "variant compile failed";
    case KILN_SPEC_PINNED: return "pinned to its universal program";
    }
    return "?";
}

static void event(struct spec_sched *q, const struct spec_site *t, kiln_spec_event_kind kind, uint64_t submit,
                  const struct spec_variant *v)
{
    struct spec_view n;
    q->view(t, &n);
    kiln_spec_event *e = &q->events[(q->event_head + q->event_count) % SPEC_EVENTS];
    if (q->event_count == SPEC_EVENTS) {
        q->event_head = (q->event_head + 1) % SPEC_EVENTS;
        q->events_dropped++;
    } else {
        q->event_count++;
    }
    *e = (kiln_spec_event){.kind = kind, .submit = submit, .node = {n.node}};
    snprintf(e->node_label, sizeof e->node_label, "%s", n.label);
    snprintf(e->program, sizeof e->program, "%s", n.program);
    if (v) {
        e->mask = v->mask;
        memcpy(e->words, v->words, sizeof e->words);
        e->lens_mask = v->facts.lens_mask;
        memcpy(e->lens, v->facts.lens, sizeof e->lens);
        e->groups_baked = (int)v->facts.groups_on;
        memcpy(e->groups, v->facts.groups, sizeof e->groups);
    }
    char slots[400];
    slots_text(slots, sizeof slots, e->mask, e->words, v ? &v->facts : NULL);
    if (q->dev->trace) {
        char detail[600];
        snprintf(detail, sizeof detail, "scheme '%s' node '%s' (%s), submit %llu:%s", q->label, n.label, n.program,
                 (unsigned long long)submit, slots);
        trace_mark(q->dev->trace, TRACE_SPEC, "specialization", event_name(kind), time_now_ns(), detail);
    }
    if (kind == KILN_SPEC_FAILED || kind == KILN_SPEC_PINNED)
        log_warn("spec: scheme '%s' node '%s' (%s) at submit %llu: %s: %s", q->label, n.label, n.program,
                 (unsigned long long)submit, event_name(kind), slots);
    else
        log_debug("spec: scheme '%s' node '%s' (%s) at submit %llu: %s: %s", q->label, n.label, n.program,
                  (unsigned long long)submit, event_name(kind), slots);
}

uint32_t spec_events_take(struct spec_sched *q, kiln_spec_event *out, uint32_t cap)
{
    uint32_t n = 0;
    while (n < cap && q->event_count) {
        out[n++] = q->events[q->event_head];
        q->event_head = (q->event_head + 1) % SPEC_EVENTS;
        q->event_count--;
    }
    return n;
}

/* ---- the awake list and the wake queue ---------------------------------------------- */

static void wake(struct spec_sched *q, struct spec_site *t)
{
    if (t->awake)
        return;
    if (!vec_reserve((void **)&q->awake, &q->awake_cap, q->awake_count + 1, sizeof *q->awake)) {
        /* The site waits for its next change (never a wrong frame). */
        q->wakes_dropped++;
        struct spec_view n;
        q->view(t, &n);
        log_warn("spec: scheme '%s' node '%s': out of host memory waking its site (%u awake): it is looked at again "
                 "when a word changes",
                 q->label, n.label, q->awake_count);
        return;
    }
    t->awake = true;
    q->awake[q->awake_count++] = t;
}

static void heap_swap(struct spec_sched *q, uint32_t a, uint32_t b)
{
    struct spec_site *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->heap_at = a;
    q->heap[b]->heap_at = b;
}

static void heap_up(struct spec_sched *q, uint32_t i)
{
    while (i && q->heap[(i - 1) / 2]->wake_at > q->heap[i]->wake_at) {
        heap_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct spec_sched *q, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_count && q->heap[l]->wake_at < q->heap[m]->wake_at)
            m = l;
        if (r < q->heap_count && q->heap[r]->wake_at < q->heap[m]->wake_at)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static void unschedule(struct spec_sched *q, struct spec_site *t)
{
    uint32_t i = t->heap_at;
    t->wake_at = 0;
    if (i == UINT32_MAX)
        return;
    t->heap_at = UINT32_MAX;
    if (i != --q->heap_count) {
        q->heap[i] = q->heap[q->heap_count];
        q->heap[i]->heap_at = i;
        heap_up(q, i);
        heap_down(q, q->heap[i]->heap_at);
    }
}

/* The site's next decision point; 0: none. */
static void schedule(struct spec_sched *q, struct spec_site *t, uint64_t at)
{
    unschedule(q, t);
    if (!at || !vec_reserve((void **)&q->heap, &q->heap_cap, q->heap_count + 1, sizeof *q->heap))
        return;
    t->wake_at = at;
    t->heap_at = q->heap_count;
    q->heap[q->heap_count++] = t;
    heap_up(q, t->heap_at);
}

/* ---- sites ----------------------------------------------------------------------------- */

static uint64_t now_of(const struct spec_sched *q) { return q->submits + 1; }

static unsigned verdict_take(struct spec_sched *q)
{
    unsigned v = q->verdict;
    q->verdict = 0;
    return v;
}

static void site_reset(struct spec_site *t, const struct spec_policy *p, bool keep_certain)
{
    for (int i = 0; i < KILN_MAX_PARAM_WORDS; i++) {
        bool changed = keep_certain ? t->slot[i].changed : false;
        t->slot[i] = (struct spec_slot){.changed = changed, .since = t->slot[i].since, .threshold = p->warm};
    }
    t->failures = 0;
    t->pinned = false;
}

void spec_sched_init(struct spec_sched *q, struct spec_cache *cache, struct kb_device *dev, const char *label,
                     spec_view_fn view)
{
    *q = (struct spec_sched){.cache = cache, .dev = dev, .label = label, .view = view};
    list_init(&q->sites);
    if (cache)
        cache->schemes++;
}

static void park(struct spec_sched *q, struct spec_variant *v)
{
    if (!v)
        return;
    if (!vec_reserve((void **)&q->parked, &q->parked_cap, q->parked_count + 1, sizeof *q->parked)) {
        /* No room to defer: the device must be done with it first. A
         * failed wait (a lost device) leaves nothing running it. */
        if (kb_ticket_wait(q->dev, q->last_ticket, UINT64_MAX) < 0) {
            /* Not a cost-model wait: logged only (the context is lost, and
             * its close line says so). */
            log_warn("spec: scheme '%s': waiting for ticket %llu to release a variant: %s", q->label,
                     (unsigned long long)q->last_ticket, kiln_last_error());
            err_clear();
        }
        variant_unref(q->cache, v);
        return;
    }
    q->parked[q->parked_count++] =
        (struct spec_parked){v, q->submits + q->cache->policy.park_submits, q->last_ticket};
}

static void release_parked(struct spec_sched *q, bool all)
{
    if (!q->parked_count)
        return;
    uint64_t done = kb_ticket_done(q->dev);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < q->parked_count; i++) {
        struct spec_parked *p = &q->parked[i];
        if (all || (q->submits >= p->after_submit && done >= p->ticket))
            variant_unref(q->cache, p->v);
        else
            q->parked[kept++] = *p;
    }
    q->parked_count = kept;
}

void spec_sched_finish(struct spec_sched *q)
{
    for (uint32_t i = 0; i < q->parked_count; i++)
        variant_unref(q->cache, q->parked[i].v);
    if (q->cache && q->cache->schemes)
        q->cache->schemes--;
    free(q->parked);
    free(q->awake);
    free(q->spare);
    free(q->heap);
    *q = (struct spec_sched){0};
}

static void drop_warming(struct spec_sched *q, struct spec_site *t)
{
    variant_unref(q->cache, t->warming);
    t->warming = NULL;
}

/* Puts the node back on its universal program (the variant parked). */
static void demote(struct spec_sched *q, struct spec_site *t, uint64_t at)
{
    if (!t->bound)
        return;
    event(q, t, KILN_SPEC_DEMOTE, at, t->bound);
    q->demotions++;
    park(q, t->bound);
    t->bound = NULL;
    q->verdict |= SPEC_RERECORD;
}

static void grow(struct spec_slot *sl, const struct spec_policy *p)
{
    if (sl->threshold < p->promote)
        sl->threshold = p->promote;
    else
        sl->threshold = sl->threshold >= p->cap / 2 ? p->cap : sl->threshold * 2;
}

unsigned spec_site_add(struct spec_sched *q, struct spec_site *t)
{
    *t = (struct spec_site){.heap_at = UINT32_MAX};
    list_init(&t->link);
    list_add_tail(&q->sites, &t->link);
    if (q->cache)
        site_reset(t, &q->cache->policy, false);
    wake(q, t);
    return verdict_take(q);
}

unsigned spec_site_remove(struct spec_sched *q, struct spec_site *t)
{
    list_remove(&t->link);
    if (t->awake)
        for (uint32_t i = 0; i < q->awake_count; i++)
            if (q->awake[i] == t) {
                q->awake[i] = q->awake[--q->awake_count];
                break;
            }
    unschedule(q, t);
    drop_warming(q, t);
    if (t->timing) {
        t->timing = false;
        q->timing--;
    }
    park(q, t->bound);
    t->bound = NULL;
    return verdict_take(q);
}

unsigned spec_param_changed(struct spec_sched *q, struct spec_site *t, uint32_t slot, uint32_t old_word,
                            uint32_t new_word)
{
    if (old_word == new_word || !q->cache || slot >= KILN_MAX_PARAM_WORDS)
        return 0;
    const struct spec_policy *p = &q->cache->policy;
    struct spec_slot *sl = &t->slot[slot];
    uint64_t bit = (uint64_t)1 << slot;
    bool broke = false;
    if (t->bound && (t->bound->mask & bit)) {
        demote(q, t, now_of(q));   /* the invariant: never a variant that disagrees with the frame */
        broke = true;
    }
    if (t->warming && (t->warming->mask & bit)) {
        drop_warming(q, t);
        broke = true;
    }
    if (t->started) {
        if (broke && sl->changed)
            grow(sl, p);
        else if (broke)
            sl->threshold = p->promote;   /* a certain word that moved: it broke a bake */
        sl->changed = true;
        sl->since = now_of(q);
    }
    wake(q, t);
    return verdict_take(q);
}

unsigned spec_program_changed(struct spec_sched *q, struct spec_site *t)
{
    drop_warming(q, t);
    park(q, t->bound);
    t->bound = NULL;
    uint64_t now = now_of(q);
    if (q->cache) {
        site_reset(t, &q->cache->policy, true);
        for (int i = 0; i < KILN_MAX_PARAM_WORDS; i++)
            if (t->slot[i].changed)
                t->slot[i].since = now;   /* held counts start over against the new program */
    }
    wake(q, t);
    return verdict_take(q);
}

static void timing_stop(struct spec_sched *q, struct spec_site *t);

unsigned spec_verify_failed(struct spec_sched *q, struct spec_site *t)
{
    uint64_t now = now_of(q);
    drop_warming(q, t);
    demote(q, t, now);
    timing_stop(q, t);
    if (!t->pinned) {
        t->pinned = true;
        q->pinned++;
        event(q, t, KILN_SPEC_PINNED, now, NULL);
    }
    unschedule(q, t);
    return verdict_take(q);
}

struct kb_pipeline *spec_pipeline(const struct spec_site *t) { return t->bound ? t->bound->pipeline : NULL; }

bool spec_timed(const struct spec_site *t) { return t->timing; }

bool spec_promoted_now(const struct spec_sched *q, const struct spec_site *t)
{
    return t->bound && t->promoted_at == now_of(q);
}

void spec_bake_text(const struct spec_site *t, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = 0;
    for (int w = 0; t->bound && w < KILN_MAX_PARAM_WORDS && k < cap; w++)
        if (t->bound->mask & ((uint64_t)1 << w))
            k += (size_t)snprintf(buf + k, cap - k, " slot%d=0x%x", w, t->bound->words[w]);
}

void spec_stats(const struct spec_sched *q, kiln_scheme_stats *out)
{
    out->spec_warms = q->warms;
    out->spec_promotions = q->promotions;
    out->spec_demotions = q->demotions;
    out->spec_pinned = q->pinned;
    out->spec_no_gain = q->no_gain;
    out->spec_samples_lost = q->samples_lost;
    out->spec_lookups_missed = q->lookups_missed;
    out->spec_wakes_dropped = q->wakes_dropped;
    uint64_t bound = 0;
    const struct spec_site *t;
    list_for_each(t, tmp, &q->sites, const struct spec_site, link)
        bound += t->bound != NULL;
    out->spec_specialized = bound;
}

/* The certain facts of the node its program reads. */
static void view_facts(const struct spec_view *n, struct spec_facts *f)
{
    *f = (struct spec_facts){0};
    if (n->iface->own_push_block)
        return;   /* facts bake through kiln's prelude macros, which such a program compiles without */
    uint32_t lens = n->bound & n->iface->lens_read;
    for (uint32_t b = 0; b < KILN_MAX_BINDINGS; b++)
        if (lens & (1u << b)) {
            f->lens_mask |= 1u << b;
            f->lens[b] = n->lens[b];
        }
    if (n->iface->groups_read) {
        f->groups_on = 1;
        memcpy(f->groups, n->groups, sizeof f->groups);
    }
}

/* The variant of n's program baking mask's words and facts: from the
 * cache, or a compile started (*started). NULL when none can be had, *why
 * saying why (pointing at a constant or at why_buf). */
static struct spec_variant *variant_get(struct spec_sched *q, const struct spec_view *n, uint64_t mask,
                                        const struct spec_facts *facts, bool *started, const char **why,
                                        char *why_buf, size_t why_cap)
{
    struct spec_cache *c = q->cache;
    /* Read without the service's lock: the caller (a submit) holds the
     * context's lock, which csvc_front_source asks for. */
    const uint8_t *front_hash = csvc_front_hash(n->front);
    const struct prog_source *front_src = csvc_front_source(n->front);
    uint32_t words[KILN_MAX_PARAM_WORDS] = {0};
    for (int i = 0; i < KILN_MAX_PARAM_WORDS; i++)
        if (mask & ((uint64_t)1 << i))
            words[i] = n->params[i];
    *started = false;
    struct spec_variant *v;
    list_for_each(v, tmp, &c->variants, struct spec_variant, lru)
        if (v->mask == mask && !memcmp(v->words, words, sizeof words) && !memcmp(&v->facts, facts, sizeof *facts) &&
            !memcmp(v->prog_hash, front_hash, 16)) {
            variant_ref(c, v);
            return v;
        }
    struct cjob *job = NULL;
    kiln_result r;
    if (n->iface->own_push_block) {
        /* Its own block's words: baked into the universal's SPIR-V. */
        struct prog_push_word baked[KILN_MAX_PARAM_WORDS];
        uint32_t nb = 0;
        for (uint32_t i = 0; i < KILN_MAX_PARAM_WORDS; i++)
            if (mask & ((uint64_t)1 << i))
                baked[nb++] = (struct prog_push_word){4 * i, words[i]};
        v = mem_calloc(1, sizeof *v);
        r = v ? csvc_request_baked(c->svc, n->front, baked, nb, CPRIO_BACKGROUND, &job) : KILN_ERR_NO_MEMORY;
        goto made;
    }
    if (!front_src->source) {
        *why = "its program has no source to compile a variant from";
        return NULL;
    }
    char entry_uc[64];
    prog_entry_upper(front_src->entry, entry_uc);
    enum { MAX_DEFS = KILN_PARAM_WORDS + KILN_MAX_BINDINGS + 3 };
    char names[MAX_DEFS][96], values[MAX_DEFS][16];
    struct prog_define add[MAX_DEFS];
    uint32_t na = 0;
    for (int i = 0; i < KILN_PARAM_WORDS; i++)   /* kiln's block: words 0..7 only */
        if (mask & ((uint64_t)1 << i)) {
            snprintf(names[na], sizeof names[na], "KILN_SPEC_%s_UW%d", entry_uc, i);
            snprintf(values[na], sizeof values[na], "%uu", words[i]);
            na++;
        }
    for (int b = 0; b < KILN_MAX_BINDINGS; b++)
        if (facts->lens_mask & (1u << b)) {
            snprintf(names[na], sizeof names[na], "KILN_SPEC_%s_LEN%d", entry_uc, b);
            snprintf(values[na], sizeof values[na], "%uu", facts->lens[b]);
            na++;
        }
    for (int a = 0; a < 3 && facts->groups_on; a++) {
        snprintf(names[na], sizeof names[na], "KILN_SPEC_%s_GROUPS_%c", entry_uc, "XYZ"[a]);
        snprintf(values[na], sizeof values[na], "%uu", facts->groups[a]);
        na++;
    }
    for (uint32_t i = 0; i < na; i++)
        add[i] = (struct prog_define){names[i], values[i]};
    struct prog_source src;
    if (prog_source_variant(&src, front_src, add, na) < 0) {
        snprintf(why_buf, why_cap, "%s", kiln_last_error());
        *why = why_buf;
        err_clear();
        return NULL;
    }
    v = mem_calloc(1, sizeof *v);
    r = v ? csvc_request(c->svc, &src, CPRIO_BACKGROUND, &job) : KILN_ERR_NO_MEMORY;
    prog_source_finish(&src);
made:
    if (r < 0) {
        snprintf(why_buf, why_cap, "%s", v ? kiln_last_error() : "out of host memory for the variant");
        *why = why_buf;
        free(v);
        err_clear();
        return NULL;
    }
    memcpy(v->prog_hash, front_hash, 16);
    v->mask = mask;
    memcpy(v->words, words, sizeof words);
    v->facts = *facts;
    v->job = job;
    v->refs = 1;
    list_add_head(&c->variants, &v->lru);
    c->count++;
    *started = true;
    return v;
}

static bool same_bake(const struct spec_variant *v, uint64_t mask, const uint32_t *params,
                      const struct spec_facts *facts)
{
    if (!v || v->mask != mask || memcmp(&v->facts, facts, sizeof *facts))
        return false;
    for (int i = 0; i < KILN_MAX_PARAM_WORDS; i++)
        if ((mask & ((uint64_t)1 << i)) && v->words[i] != params[i])
            return false;
    return true;
}

static uint64_t earliest(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

/* ---- the cost model ------------------------------------------------------------------ */

/* Sites timed at once, at most: a recording times as many dispatches as the
 * backend's query pool holds. A site past it is promoted unmeasured. */
#define SPEC_TIMED_MAX 64

static void timing_start(struct spec_sched *q, struct spec_site *t)
{
    if (!q->dev->timestamps)
        return;
    t->uni_best = t->var_best = 0;
    t->uni_n = t->var_n = 0;
    if (t->timing || q->timing >= SPEC_TIMED_MAX)
        return;
    t->timing = true;
    q->timing++;
    q->verdict |= SPEC_RERECORD;
}

static void timing_stop(struct spec_sched *q, struct spec_site *t)
{
    if (!t->timing)
        return;
    t->timing = false;
    q->timing--;
    q->verdict |= SPEC_RERECORD;
}

bool spec_wants_times(const struct spec_sched *q) { return q->cache && q->timing; }

void spec_time_taken(struct spec_sched *q, struct spec_site *t, uint64_t ns, bool ran_variant)
{
    (void)q;
    if (!t->timing)
        return;
    if (ran_variant) {
        if (t->bound && (!t->var_n || ns < t->var_best))
            t->var_best = ns;
        t->var_n += t->bound != NULL;
    } else {
        if (!t->uni_n || ns < t->uni_best)
            t->uni_best = ns;
        t->uni_n++;
    }
}

void spec_times_lost(struct spec_sched *q, const char *why)
{
    /* The sites go on timing the next submits; counted and said. */
    q->samples_lost++;
    log_warn("spec: scheme '%s': the cost model's times of submit %llu are lost: %s", q->label,
             (unsigned long long)q->submits, why);
}

static bool no_gain_has(const struct spec_site *t, uint64_t mask, const uint32_t *params)
{
    for (uint32_t i = 0; i < t->no_gain_n && i < 4; i++) {
        if (t->no_gain[i].mask != mask)
            continue;
        bool same = true;
        for (int w = 0; w < KILN_MAX_PARAM_WORDS; w++)
            same &= !(mask & ((uint64_t)1 << w)) || t->no_gain[i].words[w] == params[w];
        if (same)
            return true;
    }
    return false;
}

/* A promoted variant timed long enough: kept, or demoted as no faster. */
static void judge(struct spec_sched *q, struct spec_site *t, uint64_t now)
{
    const struct spec_policy *p = &q->cache->policy;
    timing_stop(q, t);
    if (!t->uni_n || (double)t->var_best <= (double)t->uni_best * p->gain)
        return;
    struct spec_no_gain *g = &t->no_gain[t->no_gain_n++ % 4];
    g->mask = t->bound->mask;
    memcpy(g->words, t->bound->words, sizeof g->words);
    q->no_gain++;
    struct spec_view n;
    q->view(t, &n);
    log_debug("spec: scheme '%s' node '%s' (%s): its variant took %llu ns against the universal program's %llu: no "
              "gain, demoted",
              q->label, n.label, n.program, (unsigned long long)t->var_best, (unsigned long long)t->uni_best);
    demote(q, t, now);
}

/* One look at a site at the top of submit `now`. Leaves it awake when it
 * needs the next submit too, else scheduled or settled. */
static void site_step(struct spec_sched *q, struct spec_site *t, uint64_t now)
{
    const struct spec_policy *p = &q->cache->policy;
    struct spec_view n;
    q->view(t, &n);
    if (t->pinned || n.state != KILN_PROGRAM_READY) {
        if (!t->pinned && n.state == KILN_PROGRAM_PENDING)
            wake(q, t);   /* look again once it is compiled */
        return;
    }
    t->started = true;
    uint64_t read = n.iface->params_read;
    uint64_t target = 0, proven = 0;
    uint64_t next = 0;
    for (uint32_t i = 0; i < KILN_MAX_PARAM_WORDS; i++) {
        uint64_t bit = (uint64_t)1 << i;
        if (!(read & bit))
            continue;
        const struct spec_slot *sl = &t->slot[i];
        if (!sl->changed) {
            target |= bit;
            proven |= bit;
            continue;
        }
        uint64_t held = now - sl->since;
        uint32_t pt = sl->threshold > p->promote ? sl->threshold : p->promote;
        if (held >= sl->threshold)
            target |= bit;
        else
            next = earliest(next, sl->since + sl->threshold);
        if (held >= pt)
            proven |= bit;
        else
            next = earliest(next, sl->since + pt);
    }
    struct spec_facts facts;
    view_facts(&n, &facts);
    bool any_fact = facts.lens_mask || facts.groups_on;
    if (t->bound && t->timing && t->var_n >= p->measure)
        judge(q, t, now);
    if ((!target && !any_fact) || same_bake(t->bound, target, n.params, &facts) ||
        no_gain_has(t, target, n.params)) {
        drop_warming(q, t);   /* nothing better to make now */
        if (t->timing && !(t->bound && t->var_n < p->measure))
            timing_stop(q, t);
        if (t->timing)
            wake(q, t);   /* still measuring its variant */
        else
            schedule(q, t, next);
        return;
    }
    if (!same_bake(t->warming, target, n.params, &facts)) {
        drop_warming(q, t);
        bool started;
        const char *why = "?";
        char why_buf[256];
        t->warming = variant_get(q, &n, target, &facts, &started, &why, why_buf, sizeof why_buf);
        if (!t->warming) {
            /* Stays universal; looked at again at its next change or when
             * scheduled. */
            q->lookups_missed++;
            log_debug("spec: scheme '%s' node '%s' (%s) at submit %llu: no variant to be had: %s", q->label,
                      n.label, n.program, (unsigned long long)now, why);
            schedule(q, t, next);
            return;
        }
        if (started)
            q->warms++;
        event(q, t, KILN_SPEC_WARM, now, t->warming);
        timing_start(q, t);
    }
    struct csvc_result res;
    kiln_program_state st = csvc_status(q->cache->svc, t->warming->job, &res);
    if (st == KILN_PROGRAM_READY)
        t->warming->pipeline = res.pipeline;   /* valid while the variant holds its job */
    if (st == KILN_PROGRAM_PENDING) {
        wake(q, t);
        return;
    }
    if (st == KILN_PROGRAM_FAILED) {
        q->failures++;
        event(q, t, KILN_SPEC_FAILED, now, t->warming);
        for (uint32_t i = 0; i < KILN_MAX_PARAM_WORDS; i++)
            if ((target & ((uint64_t)1 << i)) && t->slot[i].changed)
                grow(&t->slot[i], p);
        /* A failure is not cached: asked for again, the variant compiles
         * again (a driver's failure may not repeat). */
        struct spec_variant *v = t->warming;
        t->warming = NULL;
        if (--v->refs == 0)
            variant_free(q->cache, v);
        if (++t->failures >= p->max_failures) {
            t->pinned = true;
            q->pinned++;
            timing_stop(q, t);
            demote(q, t, now);
            event(q, t, KILN_SPEC_PINNED, now, NULL);
            unschedule(q, t);
            return;
        }
        wake(q, t);
        return;
    }
    if (target & ~proven) {
        schedule(q, t, next);   /* ready; swapped in once the changed words have held long enough */
        return;
    }
    if (t->timing && t->uni_n < p->measure) {
        wake(q, t);   /* the universal program's times first: as many samples as the variant will get */
        return;
    }
    if (t->timing) {
        t->var_n = 0;   /* the variant's samples start with this submit */
        t->var_best = 0;
    }
    /* Promote: recorded by this very submit. */
    park(q, t->bound);
    t->bound = t->warming;
    t->warming = NULL;
    t->promoted_at = now;
    q->verdict |= SPEC_RERECORD | SPEC_VERIFY;
    q->promotions++;
    event(q, t, KILN_SPEC_PROMOTE, now, t->bound);
    if (t->timing)
        wake(q, t);   /* measured over the next submits */
    else
        schedule(q, t, next);
}

unsigned spec_predict(struct spec_sched *q)
{
    if (!q->cache)
        return 0;
    release_parked(q, false);
    uint64_t now = now_of(q);
    bool on = spec_enabled(q->cache);
    struct spec_site *t;
    if (!on) {
        if (q->was_enabled) {
            /* Turned off: every site back on its universal program, compiles dropped. */
            list_for_each(t, tmp, &q->sites, struct spec_site, link) {
                drop_warming(q, t);
                demote(q, t, now);
                timing_stop(q, t);
                unschedule(q, t);
                t->awake = false;
            }
            q->awake_count = 0;
            q->was_enabled = false;
        }
        return verdict_take(q);
    }
    if (!q->was_enabled) {
        q->was_enabled = true;
        list_for_each(t, tmp, &q->sites, struct spec_site, link)
            wake(q, t);
    }
    while (q->heap_count && q->heap[0]->wake_at <= now) {
        t = q->heap[0];
        unschedule(q, t);
        wake(q, t);
    }
    if (!q->awake_count)
        return verdict_take(q);
    /* Each awake site once; a step may wake it again for the next submit. */
    uint32_t count = q->awake_count, cap = q->awake_cap;
    struct spec_site **list = q->awake;
    q->awake = q->spare;   /* the two lists trade places: no allocation per submit */
    q->awake_cap = q->spare_cap;
    q->awake_count = 0;
    for (uint32_t i = 0; i < count; i++)
        list[i]->awake = false;
    for (uint32_t i = 0; i < count; i++)
        site_step(q, list[i], now);
    q->spare = list;
    q->spare_cap = cap;
    return verdict_take(q);
}

void spec_submitted(struct spec_sched *q, uint64_t ticket)
{
    q->submits++;
    q->last_ticket = ticket;
}
