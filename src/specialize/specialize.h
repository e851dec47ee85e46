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
#include <stdint.h>

#include "base/base.h"

struct csvc;
struct cjob;
struct scheme;
struct node;
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
    uint32_t mask;           /* baked slots */
    uint32_t words[KILN_PARAM_WORDS];   /* baked words; 0 outside mask */
    struct spec_facts {      /* certain facts baked beside the words (no call can change them) */
        uint32_t lens_mask;  /* bit b: the length of the range at binding b (kiln_len(b)) */
        uint32_t lens[KILN_MAX_BINDINGS];
        uint32_t groups_on;  /* 1: the grid size (kiln_groups()) */
        uint32_t groups[3];
    } facts;
    struct cjob *job;        /* its compile's front node, held */
    struct kb_pipeline *pipeline;   /* once compiled (a site binds only a compiled variant) */
    uint32_t refs;           /* sites warming or bound, and parked releases */
    struct spec_variant *prev, *next;   /* the cache's list, most recently used first */
};

/* A context's variants, shared by its schemes. Under the context's lock. */
struct spec_cache {
    struct csvc *svc;
    struct spec_policy policy;
    struct spec_variant *head, *tail;
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

/* A node's site (embedded in struct node). */
struct spec_site {
    bool started;            /* the node's first submit happened */
    bool pinned;             /* too many failed compiles: universal for good */
    bool awake;              /* in the scheme's awake list */
    bool verify_due;         /* promoted by this submit: KILN_SPEC_VERIFY checks it */
    /* The cost model: while timing, the node's dispatches carry timestamps;
     * the fastest universal and variant times seen decide whether a
     * promotion pays. */
    bool timing;
    bool timed_in_record;    /* the current recording times it ... */
    bool timed_variant;      /* ... running its variant */
    uint64_t uni_best, var_best;   /* ns; fastest seen */
    uint32_t uni_n, var_n;
    struct spec_no_gain {    /* bakes found not faster: not promoted again at these words */
        uint32_t mask;
        uint32_t words[KILN_PARAM_WORDS];
    } no_gain[4];
    uint32_t no_gain_n;
    uint32_t failures;
    struct spec_slot slot[KILN_PARAM_WORDS];
    struct spec_variant *warming;    /* compiling or ready, not bound yet */
    struct spec_variant *bound;      /* promoted: the node records with it */
    uint64_t wake_at;        /* next decision point (submit number); 0 none */
    uint32_t heap_at;        /* its place in the wake queue; UINT32_MAX none */
};

/* The scheme's part (embedded in struct scheme). */
struct spec_parked {
    struct spec_variant *v;
    uint64_t after_submit;   /* released once this submit has been made ... */
    uint64_t ticket;         /* ... and the device finished this one */
};

#define SPEC_EVENTS 256

struct spec_sched {
    struct spec_cache *cache;        /* the context's */
    struct node **awake;
    uint32_t awake_count, awake_cap;
    struct node **spare;             /* the list being stepped, kept for the next submit */
    uint32_t spare_cap;
    struct node **heap;              /* the wake queue, by site.wake_at */
    uint32_t heap_count, heap_cap;
    struct spec_parked *parked;
    uint32_t parked_count, parked_cap;
    bool was_enabled;
    bool promoted_now;               /* a site promoted at this submit's top */
    kiln_spec_event events[SPEC_EVENTS];   /* a ring, oldest overwritten */
    uint32_t event_head, event_count;
    uint64_t events_dropped;
    uint64_t warms, promotions, demotions, pinned, failures, no_gain;
    /* Declines that are not events (invariant 5: counted, logged, in the
     * context's close line): */
    uint64_t time_waits_failed;      /* the cost model's wait for (or read of) a timed submit failed: samples lost */
    uint64_t lookups_missed;         /* a site wanted a variant and none could be had (no source, no memory, the
                                      * compile service refused): it stays universal */
    uint64_t wakes_dropped;          /* out of host memory waking a site: it waits for its next change */
    uint32_t timing;                 /* sites timing their dispatches now */
};

void spec_sched_init(struct spec_sched *q, struct spec_cache *cache);
/* Releases every parked variant (the scheme's submits are done). */
void spec_sched_finish(struct spec_sched *q);

/* Hooks, called by the scheme. `now` is the submit number about to be made
 * (the scheme's submits so far plus one). */
void spec_node_added(struct scheme *s, struct node *n);
void spec_node_removed(struct scheme *s, struct node *n);
/* Before a word changes: demotes and drops holds as the invariant says. */
void spec_param_changed(struct scheme *s, struct node *n, uint32_t slot, uint32_t old_word, uint32_t new_word);
/* The caller replaced the universal: the site starts over (certain words
 * stay certain, the cache is kept). */
void spec_program_changed(struct scheme *s, struct node *n);
/* The predictor: at the top of a submit. */
void spec_predict(struct scheme *s);
/* The pipeline a node records with: its variant's, or NULL for the
 * universal. */
struct kb_pipeline *spec_pipeline(const struct node *n);
/* KILN_SPEC_VERIFY found the node's variant wrong: back to the universal
 * program for good (pinned), said loudly. */
void spec_verify_failed(struct scheme *s, struct node *n);
/* Copies and removes up to cap events, oldest first. */
uint32_t spec_events_take(struct spec_sched *q, kiln_spec_event *out, uint32_t cap);

#endif
