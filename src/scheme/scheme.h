/* SPDX-License-Identifier: MIT */
/*
 * scheme: retained graphs of dispatch nodes.
 *
 * A scheme records its nodes into a command buffer once and replays it
 * while nothing changed. Changes come in two kinds:
 * - structural (a node added or removed): barriers are derived again from
 *   the nodes' read/write sets and the commands re-recorded;
 * - params-only (kiln_node_set_param, kiln_node_set_program): the same
 *   topology and barriers, re-recorded with new words or pipelines.
 * A command buffer still in flight is never re-recorded: the scheme keeps a
 * small ring of them and records into one the device is done with.
 *
 * Barriers: walking the nodes in order, a node that reads or writes a
 * buffer range an earlier node wrote since the last barrier (read-after-
 * write, write-after-write), or writes a range one read (write-after-read),
 * gets a barrier before it. Hazards are a buffer's bytes: the set, binding
 * or array element a node sees them through, or the view a texel buffer
 * reads them as, does not matter.
 *
 * Bindings resolve by (set, binding, element); kiln_len(b) is set 0's
 * binding b (element 0 of an array).
 *
 * Specialization (src/specialize): at the top of a submit the predictor may swap
 * a node's program for a variant with its stable words baked in (a
 * params-only change); set_param demotes in the same call. The predictor
 * sees a node only through the read-only view the scheme gives it
 * (node_view) and answers with verdicts (re-record, verify); the scheme
 * does all recording and timing and hands the measured times in.
 *
 * A node whose program is still compiling makes a submit wait for it (and
 * mark it wanted), or, under the context's skip policy, is left out of the
 * recording and counted; the scheme records again once the program is done.
 *
 * Not thread-safe: schemes belong to the context lock's holder.
 */
#ifndef KILN_SCHEME_H
#define KILN_SCHEME_H

#include "backend/backend.h"
#include "base/base.h"
#include "compile/compile.h"
#include "program/program.h"
#include "specialize/specialize.h"

#define SCHEME_MAX_CMDS 4   /* retained command buffers; past it a record waits for the oldest */

/* One descriptor a node binds: element `element` of (set, binding). */
struct node_binding {
    uint32_t set, binding, element;
    struct kb_buffer *buffer;    /* buffers and texel buffers; else NULL */
    uint64_t offset, size;
    kiln_format format;      /* as the caller gave it (0: the shader's format qualifier) */
    struct kb_image *image;      /* storage and sampled images, combined image samplers; else NULL */
    kiln_sampler_desc sampler;   /* as the caller gave it; filled in at bind for kinds that have one */
    uint32_t level;              /* a storage image's mip level, as the caller gave it */
    /* From the program's interface, once checked: */
    bool arrayed, cube;          /* an image's view as the shader declares it */
    uint32_t access;
    kiln_binding_kind kind;
    kiln_format view_format; /* a texel buffer's format, resolved; else 0 */
};

struct node {
    uint64_t id;
    struct scheme *scheme;
    uint32_t index;          /* position in scheme->nodes */
    struct prog *prog;
    /* The descriptors the program declares (binding_count), then the
     * buffers it reaches through device addresses (reach_count: read and
     * written whole, for hazards and holds alone; bound to nothing). */
    struct node_binding bindings[KILN_MAX_DESCRIPTORS + KILN_MAX_REACHES];
    uint32_t binding_count, reach_count;
    uint32_t groups[3];
    uint32_t params[KILN_MAX_PARAM_WORDS];   /* kiln's 8 words or the program's own block's; 0 past param_count */
    uint32_t param_count;    /* words the caller gave (checked against the program's param_words at bind) */
    uint32_t lens[KILN_MAX_BINDINGS];   /* byte length of the range at each binding number of set 0, element 0
                                         * (kiln_len) */
    char label[64];
    struct kb_bindset *bindset;  /* made once the program is ready and the bindings fit it */
    bool barrier_before;
    bool skipped;                /* left out of the current recording: its program was pending */
    const struct prog *skip_logged;  /* the program a skip was last logged for */
    bool timed;                  /* its dispatch in the current recording carries timestamps ... */
    bool timed_variant;          /* ... and ran its variant */
    struct spec_site site;       /* specialization: only spec_ functions touch it */
};

enum scheme_dirty { SCHEME_CLEAN = 0, SCHEME_PARAMS = 1, SCHEME_STRUCT = 2 };

struct scheme_cmd {
    struct kb_cmd *cmd;
    uint64_t ticket;         /* its last submit; done when the device passed it */
};

/* What a submit of the current recording uses: each buffer or image once,
 * and whether any node may write it. A submit moves their last_use (and
 * last_write) to its ticket. */
struct scheme_touch {
    struct kb_buffer *buffer;    /* one of the two */
    struct kb_image *image;
    bool writes;
};

struct scheme_garbage {
    struct kb_bindset *bindset;
    uint64_t ticket;         /* free once this ticket is done */
};

struct scheme {
    uint64_t id;
    struct kb_device *dev;
    char label[64];
    char what[200];   /* what a submit runs, for a device-loss message; made at each record */
    struct node **nodes;
    uint32_t node_count, node_cap;
    enum scheme_dirty dirty;
    struct scheme_cmd cmds[SCHEME_MAX_CMDS];
    uint32_t cmd_count;
    int current;             /* index of the cmd holding the valid recording, -1 none */
    struct kb_step *steps;
    uint32_t step_cap;
    struct scheme_garbage *garbage;
    uint32_t garbage_count, garbage_cap;
    struct scheme_touch *touches;   /* made with each full record */
    uint32_t touch_count, touch_cap;
    uint64_t last_ticket;
    bool skip_pending;       /* the context's policy: skip nodes whose program is pending (else wait) */
    bool skip_log;           /* KILN_SKIP_LOG: name each skipped node once per program */
    int spec_verify;         /* KILN_SPEC_VERIFY as the context desc sets it: 1, -1, or 0 (the variable decides,
                              * read at every submit) */
    uint32_t skipping;       /* nodes left out of the current recording */
    kiln_scheme_stats stats;
    struct spec_sched spec;  /* specialization (only spec_ functions touch it): sites, parked variants, events */
};

/* label: not NULL (kiln_scheme_desc_defaults gives one); copied. spec: the
 * context's variant cache (NULL: no specialization). */
KILN_NODISCARD kiln_result scheme_create(struct kb_device *dev, const char *label, bool skip_pending, bool skip_log,
                                         int spec_verify, struct spec_cache *spec, struct scheme **out);
/* Waits for the scheme's submits, then frees it and its nodes (their
 * handles must already be gone from the caller's pool). */
void scheme_destroy(struct scheme *s);

/* What a node is made from: bindings resolved to buffers by the caller. */
struct node_init {
    struct prog *prog;
    struct node_binding bindings[KILN_MAX_DESCRIPTORS];
    uint32_t binding_count;
    uint32_t groups[3];      /* as kiln_node_desc_defaults fills them: a 0 anywhere is refused */
    uint32_t params[KILN_MAX_PARAM_WORDS];   /* kiln's 8 words or the program's own block's; 0 past param_count */
    uint32_t param_count;    /* words the caller gave (checked against the program's param_words at bind) */
    const char *label;       /* NULL or "": "node<N>", N the node's index */
    struct kb_buffer *reaches[KILN_MAX_REACHES];   /* reached through device addresses: read and written whole */
    uint32_t reach_count;
};

KILN_NODISCARD kiln_result scheme_node_add(struct scheme *s, const struct node_init *init, struct node **out);
void scheme_node_remove(struct node *n);
KILN_NODISCARD kiln_result node_set_param(struct node *n, uint32_t slot, uint32_t word);
/* The node's param words: its program's param_words once compiled, else at
 * least KILN_PARAM_WORDS (the words the desc gave). */
uint32_t node_param_words(const struct node *n);
KILN_NODISCARD kiln_result node_set_program(struct node *n, struct prog *p);
KILN_NODISCARD kiln_result scheme_submit(struct scheme *s, uint64_t *ticket);
/* A program the next submit would wait for (under the wait policy, a
 * node's program still compiling), or NULL: the caller may wait for it
 * first without the context's lock (context.c). */
struct prog *scheme_waits_for(struct scheme *s);
/* Brings s->stats' specialization counts up to date. */
void scheme_stats_update(struct scheme *s);

#endif
