/*
 * specialize.c: sites, the predictor, the variant cache (see
 * specialize.h for the model).
 *
 * Submit numbers: the scheme's submits so far plus one is the submit being
 * made ("now" at the top of a submit). A word set before submit k has held
 * its value at the top of submit k + h for h submits (k .. k + h - 1).
 */
#include "specialize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compile.h"
#include "scheme/scheme.h"

void spec_policy_default(struct spec_policy *p)
{
    *p = (struct spec_policy){.warm = 2, .promote = 10, .cap = 4096, .max_failures = 3, .park_submits = 2,
                              .measure = 3, .gain = 0.97, .cache_per_scheme = 16};
}

/* ---- the variant cache -------------------------------------------------------------- */

void spec_cache_init(struct spec_cache *c, struct csvc *svc, bool capable, int override)
{
    *c = (struct spec_cache){.svc = svc, .capable = capable, .override = override};
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

static void list_remove(struct spec_cache *c, struct spec_variant *v)
{
    if (v->prev)
        v->prev->next = v->next;
    else
        c->head = v->next;
    if (v->next)
        v->next->prev = v->prev;
    else
        c->tail = v->prev;
    v->prev = v->next = NULL;
}

static void list_push_front(struct spec_cache *c, struct spec_variant *v)
{
    v->prev = NULL;
    v->next = c->head;
    if (c->head)
        c->head->prev = v;
    else
        c->tail = v;
    c->head = v;
}

static void variant_free(struct spec_cache *c, struct spec_variant *v)
{
    list_remove(c, v);
    c->count--;
    if (v->job)
        csvc_release(c->svc, v->job);
    free(v);
}

/* Drops unreferenced variants past the bound, least recently used first. */
static void cache_trim(struct spec_cache *c)
{
    uint32_t limit = c->policy.cache_per_scheme * (c->schemes ? c->schemes : 1);
    for (struct spec_variant *v = c->tail, *prev; v && c->unreferenced > limit; v = prev) {
        prev = v->prev;
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
    list_remove(c, v);
    list_push_front(c, v);
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
    while (c->head)
        variant_free(c, c->head);
    *c = (struct spec_cache){0};
}

/* ---- events and trace --------------------------------------------------------------- */

static void slots_text(char *buf, size_t cap, uint32_t mask, const uint32_t *words, const struct spec_facts *f)
{
    size_t n = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < KILN_PARAM_WORDS && n < cap; i++)
        if (mask & (1u << i))
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

static void event(struct scheme *s, struct node *n, kiln_spec_event_kind kind, uint64_t submit,
                  const struct spec_variant *v)
{
    struct spec_sched *q = &s->spec;
    kiln_spec_event *e = &q->events[(q->event_head + q->event_count) % SPEC_EVENTS];
    if (q->event_count == SPEC_EVENTS) {
        q->event_head = (q->event_head + 1) % SPEC_EVENTS;
        q->events_dropped++;
    } else {
        q->event_count++;
    }
    *e = (kiln_spec_event){.kind = kind, .submit = submit, .node = {n->id}};
    snprintf(e->node_label, sizeof e->node_label, "%s", n->label);
    snprintf(e->program, sizeof e->program, "%s", n->prog->name);
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
    if (kind == KILN_SPEC_FAILED || kind == KILN_SPEC_PINNED)
        log_warn("spec: scheme '%s' node '%s' (%s) at submit %llu: %s: %s", s->label, n->label, n->prog->name,
                 (unsigned long long)submit, event_name(kind), slots);
    else
        log_debug("spec: scheme '%s' node '%s' (%s) at submit %llu: %s: %s", s->label, n->label, n->prog->name,
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

static void wake(struct scheme *s, struct node *n)
{
    struct spec_sched *q = &s->spec;
    if (n->site.awake)
        return;
    if (!vec_reserve((void **)&q->awake, &q->awake_cap, q->awake_count + 1, sizeof *q->awake)) {
        /* The site waits for its next change (never a wrong frame). */
        q->wakes_dropped++;
        log_warn("spec: scheme '%s' node '%s': out of host memory waking its site (%u awake): it is looked at again "
                 "when a word changes",
                 s->label, n->label, q->awake_count);
        return;
    }
    n->site.awake = true;
    q->awake[q->awake_count++] = n;
}

static void heap_swap(struct spec_sched *q, uint32_t a, uint32_t b)
{
    struct node *t = q->heap[a];
    q->heap[a] = q->heap[b];
    q->heap[b] = t;
    q->heap[a]->site.heap_at = a;
    q->heap[b]->site.heap_at = b;
}

static void heap_up(struct spec_sched *q, uint32_t i)
{
    while (i && q->heap[(i - 1) / 2]->site.wake_at > q->heap[i]->site.wake_at) {
        heap_swap(q, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(struct spec_sched *q, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->heap_count && q->heap[l]->site.wake_at < q->heap[m]->site.wake_at)
            m = l;
        if (r < q->heap_count && q->heap[r]->site.wake_at < q->heap[m]->site.wake_at)
            m = r;
        if (m == i)
            return;
        heap_swap(q, i, m);
        i = m;
    }
}

static void unschedule(struct spec_sched *q, struct node *n)
{
    uint32_t i = n->site.heap_at;
    n->site.wake_at = 0;
    if (i == UINT32_MAX)
        return;
    n->site.heap_at = UINT32_MAX;
    if (i != --q->heap_count) {
        q->heap[i] = q->heap[q->heap_count];
        q->heap[i]->site.heap_at = i;
        heap_up(q, i);
        heap_down(q, q->heap[i]->site.heap_at);
    }
}

/* The site's next decision point; 0: none. */
static void schedule(struct spec_sched *q, struct node *n, uint64_t at)
{
    unschedule(q, n);
    if (!at || !vec_reserve((void **)&q->heap, &q->heap_cap, q->heap_count + 1, sizeof *q->heap))
        return;
    n->site.wake_at = at;
    n->site.heap_at = q->heap_count;
    q->heap[q->heap_count++] = n;
    heap_up(q, n->site.heap_at);
}

/* ---- sites ----------------------------------------------------------------------------- */

static uint64_t now_of(const struct scheme *s) { return s->stats.submits + 1; }

static void site_reset(struct spec_site *t, const struct spec_policy *p, bool keep_certain)
{
    for (int i = 0; i < KILN_PARAM_WORDS; i++) {
        bool changed = keep_certain ? t->slot[i].changed : false;
        t->slot[i] = (struct spec_slot){.changed = changed, .since = t->slot[i].since, .threshold = p->warm};
    }
    t->failures = 0;
    t->pinned = false;
}

void spec_sched_init(struct spec_sched *q, struct spec_cache *cache)
{
    *q = (struct spec_sched){.cache = cache};
    if (cache)
        cache->schemes++;
}

static void park(struct scheme *s, struct spec_variant *v)
{
    struct spec_sched *q = &s->spec;
    if (!v)
        return;
    if (!vec_reserve((void **)&q->parked, &q->parked_cap, q->parked_count + 1, sizeof *q->parked)) {
        /* No room to defer: the device must be done with it first. A
         * failed wait (a lost device) leaves nothing running it. */
        if (kb_ticket_wait(s->dev, s->last_ticket, UINT64_MAX) < 0) {
            /* Not a cost-model wait: logged only (the context is lost, and
             * its close line says so). */
            log_warn("spec: scheme '%s': waiting for ticket %llu to release a variant: %s", s->label,
                     (unsigned long long)s->last_ticket, kiln_last_error());
            err_clear();
        }
        variant_unref(q->cache, v);
        return;
    }
    q->parked[q->parked_count++] =
        (struct spec_parked){v, s->stats.submits + q->cache->policy.park_submits, s->last_ticket};
}

static void release_parked(struct scheme *s, bool all)
{
    struct spec_sched *q = &s->spec;
    if (!q->parked_count)
        return;
    uint64_t done = kb_ticket_done(s->dev);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < q->parked_count; i++) {
        struct spec_parked *p = &q->parked[i];
        if (all || (s->stats.submits >= p->after_submit && done >= p->ticket))
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

static void drop_warming(struct scheme *s, struct node *n)
{
    variant_unref(s->spec.cache, n->site.warming);
    n->site.warming = NULL;
}

/* Puts the node back on its universal program (the variant parked). */
static void demote(struct scheme *s, struct node *n, uint64_t at)
{
    struct spec_site *t = &n->site;
    if (!t->bound)
        return;
    event(s, n, KILN_SPEC_DEMOTE, at, t->bound);
    s->spec.demotions++;
    park(s, t->bound);
    t->bound = NULL;
    if (s->dirty == SCHEME_CLEAN)
        s->dirty = SCHEME_PARAMS;
}

static void grow(struct spec_slot *sl, const struct spec_policy *p)
{
    if (sl->threshold < p->promote)
        sl->threshold = p->promote;
    else
        sl->threshold = sl->threshold >= p->cap / 2 ? p->cap : sl->threshold * 2;
}

void spec_node_added(struct scheme *s, struct node *n)
{
    struct spec_site *t = &n->site;
    *t = (struct spec_site){.heap_at = UINT32_MAX};
    if (s->spec.cache)
        site_reset(t, &s->spec.cache->policy, false);
    wake(s, n);
}

void spec_node_removed(struct scheme *s, struct node *n)
{
    struct spec_sched *q = &s->spec;
    if (n->site.awake)
        for (uint32_t i = 0; i < q->awake_count; i++)
            if (q->awake[i] == n) {
                q->awake[i] = q->awake[--q->awake_count];
                break;
            }
    unschedule(q, n);
    drop_warming(s, n);
    if (n->site.timing) {
        n->site.timing = false;
        q->timing--;
    }
    park(s, n->site.bound);
    n->site.bound = NULL;
}

void spec_param_changed(struct scheme *s, struct node *n, uint32_t slot, uint32_t old_word, uint32_t new_word)
{
    struct spec_site *t = &n->site;
    if (old_word == new_word || !s->spec.cache)
        return;
    const struct spec_policy *p = &s->spec.cache->policy;
    struct spec_slot *sl = &t->slot[slot];
    uint32_t bit = 1u << slot;
    bool broke = false;
    if (t->bound && (t->bound->mask & bit)) {
        demote(s, n, now_of(s));   /* the invariant: never a variant that disagrees with the frame */
        broke = true;
    }
    if (t->warming && (t->warming->mask & bit)) {
        drop_warming(s, n);
        broke = true;
    }
    if (t->started) {
        if (broke && sl->changed)
            grow(sl, p);
        else if (broke)
            sl->threshold = p->promote;   /* a certain word that moved: it broke a bake */
        sl->changed = true;
        sl->since = now_of(s);
    }
    wake(s, n);
}

void spec_program_changed(struct scheme *s, struct node *n)
{
    struct spec_site *t = &n->site;
    drop_warming(s, n);
    park(s, t->bound);
    t->bound = NULL;
    uint64_t now = now_of(s);
    if (s->spec.cache) {
        site_reset(t, &s->spec.cache->policy, true);
        for (int i = 0; i < KILN_PARAM_WORDS; i++)
            if (t->slot[i].changed)
                t->slot[i].since = now;   /* held counts start over against the new program */
    }
    wake(s, n);
}

static void timing_stop(struct scheme *s, struct node *n);

void spec_verify_failed(struct scheme *s, struct node *n)
{
    struct spec_site *t = &n->site;
    uint64_t now = now_of(s);
    drop_warming(s, n);
    demote(s, n, now);
    timing_stop(s, n);
    if (!t->pinned) {
        t->pinned = true;
        s->spec.pinned++;
        event(s, n, KILN_SPEC_PINNED, now, NULL);
    }
    unschedule(&s->spec, n);
}

struct kb_pipeline *spec_pipeline(const struct node *n)
{
    return n->site.bound ? n->site.bound->pipeline : NULL;
}

/* The certain facts of n its program reads. */
static void node_facts(const struct node *n, struct spec_facts *f)
{
    *f = (struct spec_facts){0};
    const kiln_program_interface *iface = &n->prog->iface;
    for (uint32_t i = 0; i < n->binding_count; i++) {
        uint32_t b = n->bindings[i].binding;
        if (b < KILN_MAX_BINDINGS && (iface->lens_read & (1u << b))) {
            f->lens_mask |= 1u << b;
            f->lens[b] = n->lens[b];
        }
    }
    if (iface->groups_read) {
        f->groups_on = 1;
        memcpy(f->groups, n->groups, sizeof f->groups);
    }
}

/* The variant of n's program baking mask's words and facts: from the
 * cache, or a compile started (*started). NULL when none can be had, *why
 * saying why (pointing at a constant or at why_buf). */
static struct spec_variant *variant_get(struct scheme *s, struct node *n, uint32_t mask,
                                        const struct spec_facts *facts, bool *started, const char **why,
                                        char *why_buf, size_t why_cap)
{
    struct spec_cache *c = s->spec.cache;
    const struct cjob *front = n->prog->front;
    uint32_t words[KILN_PARAM_WORDS] = {0};
    for (int i = 0; i < KILN_PARAM_WORDS; i++)
        if (mask & (1u << i))
            words[i] = n->params[i];
    *started = false;
    for (struct spec_variant *v = c->head; v; v = v->next)
        if (v->mask == mask && !memcmp(v->words, words, sizeof words) && !memcmp(&v->facts, facts, sizeof *facts) &&
            !memcmp(v->prog_hash, front->hash, 16)) {
            variant_ref(c, v);
            return v;
        }
    if (!front->src.source) {
        *why = "its program has no source to compile a variant from";
        return NULL;
    }
    char entry_uc[64];
    prog_entry_upper(front->src.entry, entry_uc);
    enum { MAX_DEFS = KILN_PARAM_WORDS + KILN_MAX_BINDINGS + 3 };
    char names[MAX_DEFS][96], values[MAX_DEFS][16];
    struct prog_define add[MAX_DEFS];
    uint32_t na = 0;
    for (int i = 0; i < KILN_PARAM_WORDS; i++)
        if (mask & (1u << i)) {
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
    if (prog_source_variant(&src, &front->src, add, na) < 0) {
        snprintf(why_buf, why_cap, "%s", kiln_last_error());
        *why = why_buf;
        err_clear();
        return NULL;
    }
    struct spec_variant *v = mem_calloc(1, sizeof *v);
    struct cjob *job = NULL;
    kiln_result r = v ? csvc_request(c->svc, &src, CPRIO_BACKGROUND, &job) : KILN_ERR_NO_MEMORY;
    prog_source_finish(&src);
    if (r < 0) {
        snprintf(why_buf, why_cap, "%s", v ? kiln_last_error() : "out of host memory for the variant");
        *why = why_buf;
        free(v);
        err_clear();
        return NULL;
    }
    memcpy(v->prog_hash, front->hash, 16);
    v->mask = mask;
    memcpy(v->words, words, sizeof words);
    v->facts = *facts;
    v->job = job;
    v->refs = 1;
    list_push_front(c, v);
    c->count++;
    *started = true;
    return v;
}

static bool same_bake(const struct spec_variant *v, uint32_t mask, const uint32_t *params,
                      const struct spec_facts *facts)
{
    if (!v || v->mask != mask || memcmp(&v->facts, facts, sizeof *facts))
        return false;
    for (int i = 0; i < KILN_PARAM_WORDS; i++)
        if ((mask & (1u << i)) && v->words[i] != params[i])
            return false;
    return true;
}

static uint64_t earliest(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

/* ---- the cost model ------------------------------------------------------------------ */

/* Sites timed at once, at most: a recording times as many dispatches as the
 * backend's query pool holds. A site past it is promoted unmeasured. */
#define SPEC_TIMED_MAX 64

static void timing_start(struct scheme *s, struct node *n)
{
    struct spec_site *t = &n->site;
    if (!s->dev->timestamps)
        return;
    t->uni_best = t->var_best = 0;
    t->uni_n = t->var_n = 0;
    if (t->timing || s->spec.timing >= SPEC_TIMED_MAX)
        return;
    t->timing = true;
    s->spec.timing++;
    if (s->dirty == SCHEME_CLEAN)
        s->dirty = SCHEME_PARAMS;
}

static void timing_stop(struct scheme *s, struct node *n)
{
    struct spec_site *t = &n->site;
    if (!t->timing)
        return;
    t->timing = false;
    s->spec.timing--;
    if (s->dirty == SCHEME_CLEAN)
        s->dirty = SCHEME_PARAMS;
}

/* Reads the times of the last submit's timed dispatches into their sites. */
static void collect_times(struct scheme *s)
{
    if (!s->spec.timing || s->current < 0 || !s->last_ticket)
        return;
    /* A failed wait or read: this submit's samples are lost (the sites go on
     * timing the next ones); counted and said. */
    if (kb_ticket_wait(s->dev, s->last_ticket, UINT64_MAX) < 0) {
        s->spec.time_waits_failed++;
        log_warn("spec: scheme '%s': the cost model's wait for submit %llu failed: %s; its times are lost", s->label,
                 (unsigned long long)s->stats.submits, kiln_last_error());
        err_clear();
        return;
    }
    uint64_t ns[64];
    uint32_t count = 0;
    if (kb_cmd_times(s->dev, s->cmds[s->current].cmd, ns, 64, &count) < 0) {
        s->spec.time_waits_failed++;
        log_warn("spec: scheme '%s': reading the times of submit %llu failed: %s; they are lost", s->label,
                 (unsigned long long)s->stats.submits, kiln_last_error());
        err_clear();
        return;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->node_count && k < count; i++) {
        struct node *n = s->nodes[i];
        struct spec_site *t = &n->site;
        if (n->skipped || !t->timed_in_record)
            continue;
        uint64_t v = ns[k++];
        if (!t->timing)
            continue;
        if (t->timed_variant) {
            if (t->bound && (!t->var_n || v < t->var_best))
                t->var_best = v;
            t->var_n += t->bound != NULL;
        } else {
            if (!t->uni_n || v < t->uni_best)
                t->uni_best = v;
            t->uni_n++;
        }
    }
}

static bool no_gain_has(const struct spec_site *t, uint32_t mask, const uint32_t *params)
{
    for (uint32_t i = 0; i < t->no_gain_n && i < 4; i++) {
        if (t->no_gain[i].mask != mask)
            continue;
        bool same = true;
        for (int w = 0; w < KILN_PARAM_WORDS; w++)
            same &= !(mask & (1u << w)) || t->no_gain[i].words[w] == params[w];
        if (same)
            return true;
    }
    return false;
}

/* A promoted variant timed long enough: kept, or demoted as no faster. */
static void judge(struct scheme *s, struct node *n, uint64_t now)
{
    struct spec_site *t = &n->site;
    const struct spec_policy *p = &s->spec.cache->policy;
    timing_stop(s, n);
    if (!t->uni_n || (double)t->var_best <= (double)t->uni_best * p->gain)
        return;
    struct spec_no_gain *g = &t->no_gain[t->no_gain_n++ % 4];
    g->mask = t->bound->mask;
    memcpy(g->words, t->bound->words, sizeof g->words);
    s->spec.no_gain++;
    log_debug("spec: scheme '%s' node '%s' (%s): its variant took %llu ns against the universal program's %llu: no "
              "gain, demoted",
              s->label, n->label, n->prog->name, (unsigned long long)t->var_best, (unsigned long long)t->uni_best);
    demote(s, n, now);
}

/* One look at a site at the top of submit `now`. Leaves it awake when it
 * needs the next submit too, else scheduled or settled. */
static void site_step(struct scheme *s, struct node *n, uint64_t now)
{
    struct spec_site *t = &n->site;
    struct spec_sched *q = &s->spec;
    const struct spec_policy *p = &q->cache->policy;
    if (t->pinned || n->prog->state != KILN_PROGRAM_READY) {
        if (!t->pinned && n->prog->state == KILN_PROGRAM_PENDING)
            wake(s, n);   /* look again once it is compiled */
        return;
    }
    t->started = true;
    uint32_t read = n->prog->iface.params_read;
    uint32_t target = 0, proven = 0;
    uint64_t next = 0;
    for (uint32_t i = 0; i < KILN_PARAM_WORDS; i++) {
        uint32_t bit = 1u << i;
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
    node_facts(n, &facts);
    bool any_fact = facts.lens_mask || facts.groups_on;
    if (t->bound && t->timing && t->var_n >= p->measure)
        judge(s, n, now);
    if ((!target && !any_fact) || same_bake(t->bound, target, n->params, &facts) ||
        no_gain_has(t, target, n->params)) {
        drop_warming(s, n);   /* nothing better to make now */
        if (t->timing && !(t->bound && t->var_n < p->measure))
            timing_stop(s, n);
        if (t->timing)
            wake(s, n);   /* still measuring its variant */
        else
            schedule(q, n, next);
        return;
    }
    if (!same_bake(t->warming, target, n->params, &facts)) {
        drop_warming(s, n);
        bool started;
        const char *why = "?";
        char why_buf[256];
        t->warming = variant_get(s, n, target, &facts, &started, &why, why_buf, sizeof why_buf);
        if (!t->warming) {
            /* Stays universal; looked at again at its next change or when
             * scheduled. */
            q->lookups_missed++;
            log_debug("spec: scheme '%s' node '%s' (%s) at submit %llu: no variant to be had: %s", s->label,
                      n->label, n->prog->name, (unsigned long long)now, why);
            schedule(q, n, next);
            return;
        }
        if (started)
            q->warms++;
        event(s, n, KILN_SPEC_WARM, now, t->warming);
        timing_start(s, n);
    }
    struct csvc_result res;
    kiln_program_state st = csvc_status(q->cache->svc, t->warming->job, &res);
    if (st == KILN_PROGRAM_READY)
        t->warming->pipeline = res.pipeline;   /* valid while the variant holds its job */
    if (st == KILN_PROGRAM_PENDING) {
        wake(s, n);
        return;
    }
    if (st == KILN_PROGRAM_FAILED) {
        q->failures++;
        event(s, n, KILN_SPEC_FAILED, now, t->warming);
        for (uint32_t i = 0; i < KILN_PARAM_WORDS; i++)
            if ((target & (1u << i)) && t->slot[i].changed)
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
            timing_stop(s, n);
            demote(s, n, now);
            event(s, n, KILN_SPEC_PINNED, now, NULL);
            unschedule(q, n);
            return;
        }
        wake(s, n);
        return;
    }
    if (target & ~proven) {
        schedule(q, n, next);   /* ready; swapped in once the changed words have held long enough */
        return;
    }
    if (t->timing && t->uni_n < p->measure) {
        wake(s, n);   /* the universal program's times first: as many samples as the variant will get */
        return;
    }
    if (t->timing) {
        t->var_n = 0;   /* the variant's samples start with this submit */
        t->var_best = 0;
    }
    /* Promote: recorded by this very submit. */
    park(s, t->bound);
    t->bound = t->warming;
    t->warming = NULL;
    t->verify_due = true;
    q->promoted_now = true;
    q->promotions++;
    event(s, n, KILN_SPEC_PROMOTE, now, t->bound);
    if (s->dirty == SCHEME_CLEAN)
        s->dirty = SCHEME_PARAMS;
    if (t->timing)
        wake(s, n);   /* measured over the next submits */
    else
        schedule(q, n, next);
}

void spec_predict(struct scheme *s)
{
    struct spec_sched *q = &s->spec;
    if (!q->cache)
        return;
    release_parked(s, false);
    collect_times(s);
    uint64_t now = now_of(s);
    bool on = spec_enabled(q->cache);
    if (!on) {
        if (q->was_enabled) {
            /* Turned off: every site back on its universal program, compiles dropped. */
            for (uint32_t i = 0; i < s->node_count; i++) {
                struct node *n = s->nodes[i];
                drop_warming(s, n);
                demote(s, n, now);
                timing_stop(s, n);
                unschedule(q, n);
                n->site.awake = false;
            }
            q->awake_count = 0;
            q->was_enabled = false;
        }
        return;
    }
    if (!q->was_enabled) {
        q->was_enabled = true;
        for (uint32_t i = 0; i < s->node_count; i++)
            wake(s, s->nodes[i]);
    }
    while (q->heap_count && q->heap[0]->site.wake_at <= now) {
        struct node *n = q->heap[0];
        unschedule(q, n);
        wake(s, n);
    }
    if (!q->awake_count)
        return;
    /* Each awake site once; a step may wake it again for the next submit. */
    uint32_t count = q->awake_count, cap = q->awake_cap;
    struct node **list = q->awake;
    q->awake = q->spare;   /* the two lists trade places: no allocation per submit */
    q->awake_cap = q->spare_cap;
    q->awake_count = 0;
    for (uint32_t i = 0; i < count; i++)
        list[i]->site.awake = false;
    for (uint32_t i = 0; i < count; i++)
        site_step(s, list[i], now);
    q->spare = list;
    q->spare_cap = cap;
}
