/* SPDX-License-Identifier: MIT */
/*
 * context: the local runtime. A context owns one backend device and every
 * object made on it (buffers, programs, schemes, nodes), each named by a
 * handle from the context's pools.
 *
 * struct rt_ops is the runtime's call table: one entry per public call,
 * taking plain data and handles. api/ dispatches every public call through
 * it; ctx_local_ops runs them here, and a remote client's table
 * (remote/client.c) encodes each call as a record. A desc comes as the caller
 * gave it (NULL where its public call allows that); each function taking
 * one applies its kiln_<x>_desc_defaults once, at its top, and reads only
 * the filled-in copy, as a server's handler does.
 *
 * Locking: api/ holds ctx->lock around every call into the table, so the
 * functions here run one at a time per context; a server holds its host
 * lock around the calls it makes on its clients' contexts. Which mutex a
 * context's calls are made under is kctx.held. A call that waits (for a
 * ticket, a compile, a transfer, a precompile) lets that mutex go for the
 * wait and takes it back after (context.c, "waits"): other threads' calls
 * on the context, and a server's other clients, go on meanwhile, and the
 * waiting call resolves its handles again once it holds the mutex. Lock
 * order: the api's context-pool lock, then ctx->lock (or the host lock),
 * then a module's own (the compile service's, the device's watch).
 */
#ifndef KILN_CONTEXT_H
#define KILN_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "base/base.h"
#include "context/calls.h"

struct kctx;

/* The call table: one op per row X of the catalogue (calls.def), named as
 * it names the call, taking the context and the call's parameters; and
 * destroy, the end of a context's life. */
struct rt_ops {
#define X(name, record, class, flags, params) kiln_result (*name)(struct kctx *c KC_EACH(KC_DECL, params));
#define L(name, record, class, flags)
#include "context/calls.def"
#undef L
#undef X
    void (*destroy)(struct kctx *c);
};
/* A table of ops is made from the rows too, each .name = <prefix>_name
 * (ctx_local_ops: l_, the remote client's: r_), so a row without its
 * function does not compile. */

/* What every kind of context is: its call table, its lock, its users and
 * its handles' serial. The local runtime's state is its own
 * (context_private.h, included by src/context/ and kiln's white-box tests
 * only); a remote client's is the client's (remote/client.c). Which kind a
 * context is, is a property of its table (ctx_is_local). */
struct kctx {
    const struct rt_ops *ops;
    pthread_mutex_t lock;       /* serializes calls on this context (taken by api/) */
    /* The mutex this context's calls are made under: &lock, or for a
     * server's client context the server's host lock (ctx_calls_under).
     * Set before the first call, then only read. */
    pthread_mutex_t *held;
    /* Threads blocked on lock, entering a remote context (api/): its wait
     * letting the context go between slices lets them in first. */
    _Atomic uint32_t queued;
    /* Threads inside or entering the context; protected by the api's
     * users_lock. kiln_context_destroy waits for it to drop to 0. */
    uint32_t users;
    uint32_t serial;            /* tags this context's handles */
};

extern const struct rt_ops ctx_local_ops;
static inline bool ctx_is_local(const struct kctx *c) { return c->ops == &ctx_local_ops; }

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

/* A server's client that mints its own scheme and node handles (pipe.h):
 * the next scheme or node made on c takes id (pool_claim: refused, by
 * name, unless it is the next the client's pool may mint), once; 0: the
 * pool's own next. ctx_mint_void: a call that was to make id failed, and
 * its slot moves on as the client's pool did (made and destroyed), so
 * the two pools stay in step; nothing when id cannot be minted. */
void ctx_mint(struct kctx *c, uint64_t id);
void ctx_mint_void(struct kctx *c, uint64_t id);

/* The highest generation any of the context's handles carried: a later
 * context given the same serial takes it as its gen_floor (ctx_create_on),
 * so no handle of this one resolves there. */
uint32_t ctx_gen_high(const struct kctx *c);

struct csvc;

#ifdef KILN_TEST_HOOKS
/* The device of a context, for kiln's own tests (test builds only). */
struct kb_device *ctx_device(struct kctx *c);
#endif

/* ---- for a server: what it asks of the local contexts it serves --------------------------- */
/* Each takes a local context (ctx_is_local), its caller serializing as for
 * every call on it. */

/* The context's calls are made under mu from now on (kctx.held): the
 * server's host lock, for a context it serves. */
void ctx_calls_under(struct kctx *c, pthread_mutex_t *mu);
/* Objects the context holds now: buffers, images, programs, schemes, nodes. */
uint64_t ctx_objects_held(struct kctx *c);
/* Its programs still compiling. */
uint32_t ctx_programs_pending(struct kctx *c);
/* The bytes of buffer b / image i of the context; false when it has none
 * such (the call on it then refuses it, naming why). */
bool ctx_buffer_size(struct kctx *c, kiln_buffer b, uint64_t *size);
bool ctx_image_bytes(struct kctx *c, kiln_image i, uint64_t *bytes);
/* The newest ticket it issued (0: none). */
uint64_t ctx_last_ticket(struct kctx *c);
/* Its device's backend and largest buffer. */
kiln_backend_kind ctx_backend(struct kctx *c);
uint64_t ctx_max_buffer_size(struct kctx *c);
/* True when its device was lost (the driver's word, or a fault latched on
 * the device), the reason in why[0..cap). */
bool ctx_device_lost(struct kctx *c, char *why, size_t cap);
/* Makes c, a host, route its device's faults to the client context whose
 * work ran past its bound (ctx_client_fault), instead of losing the
 * device. */
void ctx_host_route_faults(struct kctx *host);

/* KILN_ERR_DEVICE_LOST naming what was running when c's device was lost,
 * else KILN_OK: api/ asks before every call (lock held); KILN_OK for a
 * remote context, whose server judges its device. */
KILN_NODISCARD kiln_result ctx_live(struct kctx *c);
/* A server's calls on a client context run between these (the host's
 * device lock held): the device then knows whose work it is given
 * (kb_device.owner), and judges it by that client's bound. */
void ctx_device_enter(struct kctx *c);
void ctx_device_leave(struct kctx *c);
/* The host device's fault callback (kb_device.fault): owner, a client
 * context of it, is latched at fault with why. */
void ctx_client_fault(void *ud, const void *owner, const char *why);
/* A server's view of a client's data segment, imported once on c's
 * device (kb_host_import): size bytes at p. KILN_ERR_DEVICE where the
 * device cannot import it (the caller then copies on the host).
 *
 * No device work outlives the memory it reads or writes: a copy through
 * an import is c's work (ctx_last_ticket covers it, even when its wait
 * failed and it was left running), so the import may be released, and p
 * unmapped, only once ctx_drain says c's work is done. */
KILN_NODISCARD kiln_result ctx_host_import(struct kctx *c, void *p, uint64_t size, struct kb_host **out);
void ctx_host_release(struct kctx *c, struct kb_host *h);
/* kiln_buffer_upload of size bytes from the start of src (mapped at map):
 * a device copy from the imported memory, waited for (the context let go)
 * so the bytes are the caller's again when it returns; a host-visible
 * buffer takes the bytes from map. *on_device grows by the bytes the
 * device copied. */
KILN_NODISCARD kiln_result ctx_buffer_upload_host(struct kctx *c, kiln_buffer b, uint64_t off, struct kb_host *src,
                                                  const void *map, uint64_t size, uint64_t *on_device);
/* kiln_buffer_readback of size bytes into the start of dst (mapped at
 * map): a device copy into the imported memory, waited for (the context
 * let go); a host-visible buffer's bytes are copied to map. *on_device
 * grows by the bytes the device copied. */
KILN_NODISCARD kiln_result ctx_buffer_readback_host(struct kctx *c, kiln_buffer b, uint64_t off, struct kb_host *dst,
                                                    void *map, uint64_t size, uint64_t *on_device);
/* kiln_node_set_param, refused when program (not 0) is not the program
 * the node runs: a remote client's word for a swap the server refused. */
KILN_NODISCARD kiln_result ctx_node_set_param_for(struct kctx *c, kiln_node n, uint64_t program, uint32_t slot,
                                                  uint32_t word);
/* Waits up to slice_ns for every submit of the context to finish, its
 * fault notwithstanding (the host's device lock held): KILN_OK when they
 * have, KILN_ERR_TIMEOUT when not yet, KILN_ERR_DEVICE_LOST when the
 * device is. A faulted client's work may still run: its objects are freed
 * only once it ends. */
kiln_result ctx_drain(struct kctx *c, uint64_t slice_ns);
/* ctx_drain up to ticket (a ticket of c's work, at most ctx_last_ticket)
 * rather than all of it. */
kiln_result ctx_settle(struct kctx *c, uint64_t ticket, uint64_t slice_ns);
/* r, after latching c's device lost if r is KILN_ERR_DEVICE_LOST (any op
 * may report it): api/ passes every call's result through (lock held). */
kiln_result ctx_seen(struct kctx *c, kiln_result r);

#endif
