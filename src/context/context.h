/* SPDX-License-Identifier: MIT */
/*
 * context: the local runtime. A context owns one backend device and every
 * object made on it (buffers, programs, schemes, nodes), each named by a
 * handle from the context's pools.
 *
 * struct rt_ops is the runtime's call table: one entry per public call,
 * taking plain data and handles. api/ dispatches every public call through
 * it; ctx_local_ops runs them here, and a remote client will implement the
 * same table by encoding each call as a record. A desc comes as the caller
 * gave it (NULL where its public call allows that); each function taking
 * one applies its kiln_<x>_desc_defaults once, at its top, and reads only
 * the filled-in copy, as a server's handler will.
 *
 * Locking: api/ holds ctx->lock around every call into the table, so the
 * functions here run one at a time per context. Lock order: the api's
 * context-pool lock, then ctx->lock.
 */
#ifndef KILN_CONTEXT_H
#define KILN_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>

#include "archive/archive.h"
#include "backend/backend.h"
#include "base/base.h"
#include "base/pool.h"
#include "specialize/specialize.h"

struct kctx;

struct rt_ops {
    kiln_result (*caps)(struct kctx *c, kiln_caps *out);
    kiln_result (*wait_idle)(struct kctx *c);
    kiln_result (*stats)(struct kctx *c, kiln_context_stats *out);
    kiln_result (*buffer_create)(struct kctx *c, const kiln_buffer_desc *d, kiln_buffer *out);
    kiln_result (*buffer_destroy)(struct kctx *c, kiln_buffer b);
    kiln_result (*buffer_upload)(struct kctx *c, kiln_buffer b, uint64_t off, const void *data, uint64_t size);
    kiln_result (*buffer_readback)(struct kctx *c, kiln_buffer b, uint64_t off, void *data, uint64_t size);
    kiln_result (*image_create)(struct kctx *c, const kiln_image_desc *d, kiln_image *out);
    kiln_result (*image_destroy)(struct kctx *c, kiln_image i);
    kiln_result (*image_upload)(struct kctx *c, kiln_image i, const void *data, uint64_t size);
    kiln_result (*image_readback)(struct kctx *c, kiln_image i, void *data, uint64_t size);
    kiln_result (*program_create)(struct kctx *c, const kiln_program_desc *d, kiln_program *out);
    kiln_result (*program_destroy)(struct kctx *c, kiln_program p);
    kiln_result (*program_status)(struct kctx *c, kiln_program p, kiln_program_state *out);
    kiln_result (*program_wait)(struct kctx *c, kiln_program p);
    kiln_result (*program_log)(struct kctx *c, kiln_program p, char *buf, size_t cap, size_t *len);
    kiln_result (*program_interface)(struct kctx *c, kiln_program p, kiln_program_interface *out);
    kiln_result (*scheme_create)(struct kctx *c, const kiln_scheme_desc *d, kiln_scheme *out);
    kiln_result (*scheme_destroy)(struct kctx *c, kiln_scheme s);
    kiln_result (*scheme_add_node)(struct kctx *c, kiln_scheme s, const kiln_node_desc *d, kiln_node *out);
    kiln_result (*scheme_submit)(struct kctx *c, kiln_scheme s, kiln_ticket *out);
    kiln_result (*scheme_stats)(struct kctx *c, kiln_scheme s, kiln_scheme_stats *out);
    kiln_result (*node_remove)(struct kctx *c, kiln_node n);
    kiln_result (*node_set_param)(struct kctx *c, kiln_node n, uint32_t slot, uint32_t word);
    kiln_result (*node_set_program)(struct kctx *c, kiln_node n, kiln_program p);
    kiln_result (*node_get_params)(struct kctx *c, kiln_node n, uint32_t *out, uint32_t cap, uint32_t *count);
    kiln_result (*ticket_wait)(struct kctx *c, kiln_ticket t, uint64_t timeout_ns);
    kiln_result (*archive_info)(struct kctx *c, kiln_archive_info *out);
    kiln_result (*archive_files)(struct kctx *c, uint32_t first, kiln_archive_file *out, uint32_t cap,
                                 uint32_t *count);
    kiln_result (*archive_tidy)(struct kctx *c, const kiln_archive_tidy_desc *d, kiln_archive_tidy_result *out);
    kiln_result (*precompile)(struct kctx *c, const kiln_precompile_desc *d, kiln_precompile_result *out);
    kiln_result (*scheme_spec_events)(struct kctx *c, kiln_scheme s, kiln_spec_event *out, uint32_t cap,
                                      uint32_t *count);
    kiln_result (*node_is_specialized)(struct kctx *c, kiln_node n, int *out);
    kiln_result (*compiles_pending)(struct kctx *c, uint32_t *out);
    void (*destroy)(struct kctx *c);
};

struct kctx {
    const struct rt_ops *ops;
    pthread_mutex_t lock;       /* serializes calls on this context (taken by api/) */
    /* Threads inside or entering the context; protected by the api's
     * users_lock. kiln_context_destroy waits for it to drop to 0. */
    uint32_t users;
    uint32_t serial;            /* tags this context's handles */
    /* Below: touched only with lock held. */
    struct kb_device *dev;
    /* A server's client context (ctx_create_on) borrows its host's device,
     * compile service and archive: host is that context, and the host's
     * owner serializes every call on the device (remote/server.c). NULL: a
     * context that owns them. */
    struct kctx *host;
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
    int spec_verify;            /* the desc's KILN_SPEC_VERIFY: 1, -1, or 0 (the variable, at every submit) */
    struct trace *trace;        /* kiln_context_desc.trace_path's (KILN_TRACE), NULL: none */
    uint64_t traced;            /* submits up to this ticket are in the trace as device spans */
};

extern const struct rt_ops ctx_local_ops;

/* Makes a local context on the device the desc and KILN_DEVICE choose; desc
 * may be NULL (kiln_context_desc_defaults applies, here). */
KILN_NODISCARD kiln_result ctx_create(const kiln_context_desc *desc, uint32_t serial, struct kctx **out);

/* Makes a context on host's device, sharing its compile service (so
 * programs two such contexts create alike compile once) and its archive;
 * its objects, handles (tagged with serial, with generations above
 * gen_floor) and schemes are its own, and
 * destroying it frees them and nothing of the host's. desc may be NULL; a
 * backend, device or trace_path other than the host's is refused by name
 * (KILN_ERR_INVALID); other fields shaping the device, the compile service
 * or the archive are the host's (named in the log when they differ).
 * Callers serialize every call on host's device. */
KILN_NODISCARD kiln_result ctx_create_on(struct kctx *host, const kiln_context_desc *desc, uint32_t serial,
                                         uint32_t gen_floor, struct kctx **out);
struct prog_include;
/* program_create for a server's client: the program's included files came
 * with it (files, n of them, consumed), and nothing is read from the
 * server's disk. Callers serialize as for every call on the context. */
KILN_NODISCARD kiln_result ctx_program_create_sealed(struct kctx *c, const kiln_program_desc *d,
                                                     struct prog_include *files, uint32_t n, kiln_program *out);

/* The highest generation any of the context's handles carried: a later
 * context given the same serial takes it as its gen_floor (ctx_create_on),
 * so no handle of this one resolves there. */
uint32_t ctx_gen_high(const struct kctx *c);

struct csvc;

#ifdef KILN_TEST_HOOKS
/* The device of a context, for kiln's own tests (test builds only). */
struct kb_device *ctx_device(struct kctx *c);
#endif

/* KILN_ERR_DEVICE_LOST naming what was running when c's device was lost,
 * else KILN_OK: api/ asks before every call (lock held). */
KILN_NODISCARD kiln_result ctx_live(struct kctx *c);
/* A server's calls on a client context run between these (the host's
 * device lock held): the device then knows whose work it is given
 * (kb_device.owner), and judges it by that client's bound. */
void ctx_device_enter(struct kctx *c);
void ctx_device_leave(struct kctx *c);
/* The host device's fault callback (kb_device.fault): owner, a client
 * context of it, is latched at fault with why. */
void ctx_client_fault(void *ud, const void *owner, const char *why);
/* Waits up to slice_ns for every submit of the context to finish, its
 * fault notwithstanding (the host's device lock held): KILN_OK when they
 * have, KILN_ERR_TIMEOUT when not yet, KILN_ERR_DEVICE_LOST when the
 * device is. A faulted client's work may still run: its objects are freed
 * only once it ends. */
kiln_result ctx_drain(struct kctx *c, uint64_t slice_ns);
/* r, after latching c's device lost if r is KILN_ERR_DEVICE_LOST (any op
 * may report it): api/ passes every call's result through (lock held). */
kiln_result ctx_seen(struct kctx *c, kiln_result r);

#endif
