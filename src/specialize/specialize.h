/* SPDX-License-Identifier: MIT */
/*
 * specialize: specialization prediction (its functions are prefixed
 * spec_). A dispatch node's param words are the caller's facts about a
 * frame; a word that stays put can be compiled into
 * the program as a constant, and the compiler can then drop whole code
 * paths. kiln decides which words to bake on its own: callers name no flag.
 *
 * Every node whose program reads a param word has a site. Per slot (param
 * word) the site knows:
 * - certain: never changed by kiln_node_set_param since the node's first
 *   submit (a change before it is part of recording). A certain word needs
 *   no history and counts as proven;
 * - for a changed word, the submit from which it has held its value, and a
 *   bake threshold: how long it must hold before it is baked. The threshold
 *   starts at the policy's warm count and grows each time the slot breaks a
 *   compile or a promotion (to the promote count, then doubling, capped),
 *   so a word that flips every few submits is baked once, disproved once,
 *   and then left dynamic while its neighbours bake.
 * Only kiln_node_set_param moves a word; re-records for other reasons leave
 * history alone.
 *
 * Beside the words, two more kinds of facts are certain and bake with
 * them: the byte length of the range bound at each binding (kiln_len(b)
 * reads KILN_SPEC_<ENTRY>_LEN<b>, by default a push-constant word kiln
 * fills) and the grid size (kiln_groups() reads KILN_SPEC_<ENTRY>_GROUPS_X
 * .. _Z, by default gl_NumWorkGroups). No call changes a node's bindings or
 * grid once it is made, so these never demote; they are baked when the
 * program reads them.
 *
 * The bake target of a site: the slots its program reads that are certain
 * or have held past their threshold. Stages: when the target is not what
 * the node runs, the site warms (its variant compiles at background
 * priority through the compile service, and so through the archive); once
 * the variant is ready and every changed slot in it has held for the
 * promote count, the site promotes (the node records with the variant). A
 * new site warms at its first submit: all its words are certain.
 *
 * The one invariant: demotion is mandatory. kiln_node_set_param with a word
 * that differs from a baked one puts the node back on its universal program
 * in the same call, so no submit runs a variant whose baked words disagree
 * with the frame.
 *
 * Off the hot path: the predictor runs at the top of a submit and looks
 * only at sites in the scheme's awake list (declared, a word changed, a
 * compile in flight) or whose next decision point in the wake queue (a
 * min-heap keyed by submit number) has come. A settled site costs nothing.
 *
 * Variants: program identity (the universal's front-end key hash) plus the
 * baked mask and words, cached per context and shared by its schemes,
 * refcounted by the sites warming or bound to them. Sites warming the same
 * variant share one compile; a site letting go of a variant whose compile
 * has not started cancels it; one already running finishes and stays
 * cached. Unreferenced variants are kept, least recently used first out, up
 * to 16 per live scheme. A variant a node stops recording with is parked
 * until two more submits have passed and the device finished the last
 * submit that may have used it. Three failed compiles pin a site to its
 * universal program.
 *
 * Cost model (where the device has timestamps): a site warming a variant
 * times its node's dispatches, and promotes only once the universal program
 * has been timed as often as the variant will be (3 submits); the variant
 * is then timed for 3 submits; one whose fastest time is not at most 97% of
 * the universal's fastest is demoted and its words marked no-gain for that
 * site, so tiny dispatches stop paying re-records. Timing needs the node's
 * previous submit done: while a site times, submits wait for the one
 * before.
 *
 * KILN_SPEC_VERIFY=1 (for debugging kiln or a shader): on a site's first
 * promoted submit, the scheme runs the node's universal program and its
 * variant alone on copies of the node's buffers and compares what they
 * wrote; a difference pins the site and fails that submit loudly.
 *
 * Gates: only where the backend's pipeline layout follows the program's
 * signature (a variant then binds exactly like its universal), and only
 * while KILN_SPECIALIZATION (read at every submit; a context's desc may
 * override it) is on; turned off, every site is demoted on the next submit
 * and its compiles dropped.
 */
#ifndef KILN_SPECIALIZE_H
#define KILN_SPECIALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/list.h"

struct csvc;
struct cjob;
struct kb_device;
struct kb_pipeline;

struct spec_policy {
    uint32_t warm;           /* a changed word warms after holding this many submits (2) */
    uint32_t promote;        /* ... and is swapped in after this many (10) */
    uint32_t cap;            /* bake thresholds grow to at most this (4096) */
    uint32_t max_failures;   /* failed compiles before a site is pinned (3) */
    uint32_t park_submits;   /* an unbound variant is kept this many submits (2) */
    uint32_t measure;        /* cost model: submits a promoted variant is timed for (3) */
    double gain;             /* ... it stays only if it takes at most this share of the universal's time (0.97) */
    uint32_t cache_per_scheme;   /* unreferenced variants kept, per live scheme (16) */
};
void spec_policy_default(struct spec_policy *p);

struct spec_variant {
    uint8_t prog_hash[16];   /* the universal's front-end key hash */
    uint64_t mask;           /* baked slots */
    uint32_t words[KILN_MAX_PARAM_WORDS];   /* baked words; 0 outside mask */
    struct spec_facts {      /* certain facts baked beside the words (no call can change them) */
        uint32_t lens_mask;  /* bit b: the length of the range at binding b (kiln_len(b)) */
        uint32_t lens[KILN_MAX_BINDINGS];
        uint32_t groups_on;  /* 1: the grid size (kiln_groups()) */
        uint32_t groups[3];
    } facts;
    struct cjob *job;        /* its compile's front node, held */
    struct kb_pipeline *pipeline;   /* once compiled (a site binds only a compiled variant) */
    uint32_t refs;           /* sites warming or bound, and parked releases */
    struct list lru;         /* in the cache's list, most recently used first */
};

/* A context's variants, shared by its schemes. Under the context's lock. */
struct spec_cache {
    struct csvc *svc;
    struct spec_policy policy;
    struct list variants;    /* struct spec_variant.lru, most recently used first */
    uint32_t count, unreferenced;
    uint32_t schemes;        /* live schemes (the bound on unreferenced entries) */
    int override;            /* 1 on, -1 off, 0: KILN_SPECIALIZATION decides */
    bool capable;            /* the backend's layout follows the signature */
};
void spec_cache_init(struct spec_cache *c, struct csvc *svc, bool capable, int override);
/* Lets go of every variant (before the compile service goes). */
void spec_cache_finish(struct spec_cache *c);
/* Whether prediction runs now (the gates above). */
bool spec_enabled(const struct spec_cache *c);

struct spec_slot {
    bool changed;            /* moved by set_param since the first submit */
    uint64_t since;          /* changed: the first submit that ran its current word */
    uint32_t threshold;      /* its bake threshold */
};

/* What the predictor may read of a node: a read-only view its scheme fills
 * on demand (spec_view_fn). The pointers are the scheme's, valid until the
 * hook or spec_predict call that asked returns. */
struct spec_view {
    uint64_t node;                 /* the node's handle id (events) */
    const char *label;             /* the node's label */
    const char *program;           /* its program's name */
    kiln_program_state state;      /* its program's */
    const kiln_program_interface *iface;   /* its program's; read only when READY */
    struct cjob *front;            /* its program's front-end job: identity and provenance (variants hold it) */
    const uint32_t *params;        /* KILN_MAX_PARAM_WORDS words (0 past the program's param_words) */
    uint32_t bound;                /* bit b: a range is bound at binding b */
    const uint32_t *lens;          /* KILN_MAX_BINDINGS byte lengths, by binding number */
    const uint32_t *groups;        /* the grid, 3 counts */
};

struct spec_site;
typedef void (*spec_view_fn)(const struct spec_site *site, struct spec_view *out);

/* A node's site (embedded in the scheme's node; only spec_ functions touch
 * its fields). */
struct spec_site {
    struct list link;        /* the scheduler's list of every site */
    bool started;            /* the node's first submit happened */
    bool pinned;             /* too many failed compiles: universal for good */
    bool awake;              /* in the awake list */
    uint64_t promoted_at;    /* the submit that last promoted it (KILN_SPEC_VERIFY checks that one) */
    /* The cost model: while timing, the node's dispatches carry timestamps;
     * the fastest universal and variant times seen decide whether a
     * promotion pays. */
    bool timing;
    uint64_t uni_best, var_best;   /* ns; fastest seen */
    uint32_t uni_n, var_n;
    struct spec_no_gain {    /* bakes found not faster: not promoted again at these words */
        uint64_t mask;
        uint32_t words[KILN_MAX_PARAM_WORDS];
    } no_gain[4];
    uint32_t no_gain_n;
    uint32_t failures;
    struct spec_slot slot[KILN_MAX_PARAM_WORDS];
    struct spec_variant *warming;    /* compiling or ready, not bound yet */
    struct spec_variant *bound;      /* promoted: the node records with it */
    uint64_t wake_at;        /* next decision point (submit number); 0 none */
    uint32_t heap_at;        /* its place in the wake queue; UINT32_MAX none */
};

/* A scheme's part (embedded in the scheme; only spec_ functions touch its
 * fields). */
struct spec_parked {
    struct spec_variant *v;
    uint64_t after_submit;   /* released once this submit has been made ... */
    uint64_t ticket;         /* ... and the device finished this one */
};

#define SPEC_EVENTS 256

struct spec_sched {
    struct spec_cache *cache;        /* the context's */
    struct kb_device *dev;           /* the scheme's device: timestamps, tickets */
    const char *label;               /* the scheme's label (borrowed; it outlives the scheduler) */
    spec_view_fn view;               /* the scheme's view of a site's node */
    struct list sites;               /* every site, in the order added */
    uint64_t submits;                /* the scheme's submits made so far (spec_submitted) */
    uint64_t last_ticket;            /* the last one's ticket */
    unsigned verdict;                /* enum spec_verdict bits gathered by the call under way */
    struct spec_site **awake;
    uint32_t awake_count, awake_cap;
    struct spec_site **spare;        /* the list being stepped, kept for the next submit */
    uint32_t spare_cap;
    struct spec_site **heap;         /* the wake queue, by site.wake_at */
    uint32_t heap_count, heap_cap;
    struct spec_parked *parked;
    uint32_t parked_count, parked_cap;
    bool was_enabled;
    kiln_spec_event events[SPEC_EVENTS];   /* a ring, oldest overwritten */
    uint32_t event_head, event_count;
    uint64_t events_dropped;
    uint64_t warms, promotions, demotions, pinned, failures, no_gain;
    /* Declines that are not events (invariant 5: counted, logged, in the
     * context's close line): */
    uint64_t samples_lost;           /* the cost model's wait for (or read of) a timed submit failed */
    uint64_t lookups_missed;         /* a site wanted a variant and none could be had (no source, no memory, the
                                      * compile service refused): it stays universal */
    uint64_t wakes_dropped;          /* out of host memory waking a site: it waits for its next change */
    uint32_t timing;                 /* sites timing their dispatches now */
};

/* What a call asks of the scheme (bits; 0: nothing). */
enum spec_verdict {
    SPEC_RERECORD = 1u << 0,   /* a node's pipeline or timing changed: a params-only re-record */
    SPEC_VERIFY = 1u << 1,     /* a site promoted at this submit (KILN_SPEC_VERIFY checks it) */
};

/* cache NULL: no specialization (every hook does nothing). label and the
 * view function are the scheme's. */
void spec_sched_init(struct spec_sched *q, struct spec_cache *cache, struct kb_device *dev, const char *label,
                     spec_view_fn view);
/* Releases every parked variant (the scheme's submits are done). */
void spec_sched_finish(struct spec_sched *q);

/* Hooks, called by the scheme; each returns spec_verdict bits. The submit
 * being made ("now") is the scheme's submits so far plus one. */
unsigned spec_site_add(struct spec_sched *q, struct spec_site *t);
unsigned spec_site_remove(struct spec_sched *q, struct spec_site *t);
/* Before a word changes: demotes and drops holds as the invariant says. */
unsigned spec_param_changed(struct spec_sched *q, struct spec_site *t, uint32_t slot, uint32_t old_word,
                            uint32_t new_word);
/* The caller replaced the universal: the site starts over (certain words
 * stay certain, the cache is kept). */
unsigned spec_program_changed(struct spec_sched *q, struct spec_site *t);
/* The predictor: at the top of a submit. */
unsigned spec_predict(struct spec_sched *q);
/* A submit was made with this ticket. */
void spec_submitted(struct spec_sched *q, uint64_t ticket);
/* KILN_SPEC_VERIFY found the node's variant wrong: back to the universal
 * program for good (pinned), said loudly. */
unsigned spec_verify_failed(struct spec_sched *q, struct spec_site *t);

/* What the scheme records: the pipeline a node records with (its variant's,
 * or NULL for the universal), and whether its dispatch is timed. */
struct kb_pipeline *spec_pipeline(const struct spec_site *t);
bool spec_timed(const struct spec_site *t);
/* Whether the scheme should read its last submit's times before predicting
 * (some site is timing): it waits for that submit, then hands each timed
 * dispatch's nanoseconds to spec_time_taken, or reports spec_times_lost. */
bool spec_wants_times(const struct spec_sched *q);
void spec_time_taken(struct spec_sched *q, struct spec_site *t, uint64_t ns, bool ran_variant);
void spec_times_lost(struct spec_sched *q, const char *why);
/* Whether the site was promoted by the submit being made. */
bool spec_promoted_now(const struct spec_sched *q, const struct spec_site *t);
/* The bound variant's baked words, as " slot<i>=0x<word>..." ("" when none). */
void spec_bake_text(const struct spec_site *t, char *buf, size_t cap);
/* The predictor's counts into a scheme's stats (the spec_ fields). */
void spec_stats(const struct spec_sched *q, kiln_scheme_stats *out);
/* Copies and removes up to cap events, oldest first. */
uint32_t spec_events_take(struct spec_sched *q, kiln_spec_event *out, uint32_t cap);

#endif
