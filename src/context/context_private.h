/* SPDX-License-Identifier: MIT */
/*
 * context_private.h: the local runtime's context, for src/context/ (and
 * kiln's white-box tests) alone. Every other module reaches a context
 * through its call table and the accessors of context.h.
 */
#ifndef KILN_CONTEXT_PRIVATE_H
#define KILN_CONTEXT_PRIVATE_H

#include <stdatomic.h>

#include "archive/archive.h"
#include "base/pool.h"
#include "context/context.h"
#include "specialize/specialize.h"

struct lctx {
    struct kctx base;           /* first: a struct kctx * of a local context points here */
    /* Below: touched only with lock held. */
    struct kb_device *dev;
    /* A server's client context (ctx_create_on) borrows its host's device,
     * compile service and archive: host is that context, and the host's
     * owner serializes every call on the device (remote/server.c). NULL: a
     * context that owns them. */
    struct lctx *host;
    /* A client context's own runaway bound (its desc's device_timeout_ms,
     * else its host's), and its fault: its work ran past it. The device
     * is not lost for that (kb_device.owner): this context alone fails
     * every later call with KILN_ERR_DEVICE_LOST and fault_why. fault is
     * set once, under the host's device lock; fault_why before it. */
    uint64_t timeout_ns;
    _Atomic bool fault;
    char fault_why[768];
    kiln_context_desc made_with;   /* a host's desc, filled in; its strings NULL (for ctx_create_on) */
    struct pool buffers, programs, schemes, nodes, images;
    uint64_t mint;              /* the handle the next scheme or node takes (ctx_mint), 0: its pool's next */
    uint64_t last_ticket;       /* the newest ticket issued */
    kiln_context_stats stats;
    uint64_t records_full, records_params, replays;   /* of destroyed schemes, for the close line */
    uint64_t skipped_nodes;                           /* of destroyed schemes */
    uint64_t spec_warms, spec_promotions, spec_demotions, spec_pinned, spec_no_gain;   /* of destroyed schemes */
    uint64_t spec_samples_lost, spec_lookups_missed, spec_wakes_dropped;        /* likewise */
    struct csvc *svc;           /* the compile service (its own lock; taken after this one) */
    struct arc_store *archive;  /* the device pair's archive folder (its own lock): own_archive, or the host's */
    struct arc_store own_archive;
    _Atomic uint64_t last_submit_ns;   /* the archive saver's gate reads it without the lock */
    struct spec_cache spec;     /* specialization variants, shared by the schemes */
    kiln_pending_policy pending;
    bool skip_log;              /* KILN_SKIP_LOG */
    bool sync;                  /* KILN_SYNC: every call waits for the work it made */
    bool closing;               /* l_destroy runs: waits let nothing go */
    int spec_verify;            /* the desc's KILN_SPEC_VERIFY: 1, -1, or 0 (the variable, at every submit) */
    struct trace *trace;        /* kiln_context_desc.trace_path's (KILN_TRACE), NULL: none */
    uint64_t traced;            /* submits up to this ticket are in the trace as device spans */
};

_Static_assert(offsetof(struct lctx, base) == 0, "a local context's struct kctx comes first");

/* The local context behind c (ctx_is_local(c)). */
static inline struct lctx *lctx_of(struct kctx *c) { return (struct lctx *)c; }
static inline const struct lctx *lctx_of_const(const struct kctx *c) { return (const struct lctx *)c; }

#endif
