/* SPDX-License-Identifier: MIT */
/*
 * api.c: kiln's public entry points.
 *
 * Each call resolves its context handle in the process-wide context pool,
 * takes that context's lock, and dispatches through the context's rt_ops
 * table (local today; a remote client's table later). Descs pass through
 * as given (NULL where a call allows it): the table's functions apply
 * their defaults (kiln_<x>_desc_defaults, src/base/defaults.c), once.
 *
 * Entering a context: under contexts_lock (shared) the handle is resolved
 * and the context's user count raised; then, with no api lock held, the
 * context's own lock is taken. kiln_context_destroy removes the handle
 * (contexts_lock exclusive, briefly), then waits, holding nothing, for the
 * user count to drop to 0 before it frees the context. So a destroy never
 * frees a context another thread is in, and a busy context never stalls
 * calls on another. users_lock guards every context's user count; it is
 * taken after contexts_lock, never before, and nothing is waited for while
 * it is held except users_cond.
 */
#include <pthread.h>
#include <stdlib.h>

#include "base/base.h"
#include "base/pool.h"
#include "api/api.h"
#include "context/context.h"
#include "remote/remote.h"

static pthread_rwlock_t contexts_lock = PTHREAD_RWLOCK_INITIALIZER;   /* read: resolving; write: changing the pool */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;        /* every kctx's users */
static pthread_cond_t users_cond = PTHREAD_COND_INITIALIZER;          /* a users count dropped */
static struct pool contexts;        /* protected by contexts_lock */
static uint32_t context_serial;     /* protected by contexts_lock */

static kiln_result enter(kiln_context h, struct kctx **out)
{
    err_clear();
    pthread_rwlock_rdlock(&contexts_lock);
    struct kctx *c = contexts.tag ? pool_get(&contexts, h.id) : NULL;
    if (!c) {
        const char *why = contexts.tag ? pool_why(&contexts, h.id) : "no context was ever created";
        pthread_rwlock_unlock(&contexts_lock);
        return KILN_RAISE(KILN_ERR_HANDLE, "context 0x%016llx: %s", (unsigned long long)h.id, why);
    }
    pthread_mutex_lock(&users_lock);
    c->users++;
    pthread_mutex_unlock(&users_lock);
    pthread_rwlock_unlock(&contexts_lock);
    pthread_mutex_lock(&c->lock);
    *out = c;
    return KILN_OK;
}

static kiln_result leave(struct kctx *c, kiln_result r)
{
    pthread_mutex_unlock(&c->lock);
    pthread_mutex_lock(&users_lock);
    if (--c->users == 0)
        pthread_cond_broadcast(&users_cond);
    pthread_mutex_unlock(&users_lock);
    return r;
}

/* Every call on a context whose device is lost fails with
 * KILN_ERR_DEVICE_LOST (ctx_live); a call that finds it lost latches it.
 * IN_CONTEXT enters h's context, evaluates `call` (an expression of c_,
 * the context entered) unless its device is lost, and leaves; CALL and
 * CALL0 call an op of the context's table, with arguments after the
 * context and without. */
#define IN_CONTEXT(h, call)                                                                        \
    do {                                                                                           \
        struct kctx *c_;                                                                           \
        KILN_TRY(enter((h), &c_));                                                                 \
        kiln_result r_ = ctx_live(c_);                                                             \
        if (r_ == KILN_OK)                                                                         \
            r_ = ctx_seen(c_, (call));                                                             \
        return leave(c_, r_);                                                                      \
    } while (0)
#define CALL(h, op, ...) IN_CONTEXT(h, c_->ops->op(c_, __VA_ARGS__))
#define CALL0(h, op) IN_CONTEXT(h, c_->ops->op(c_))

#define NEED(ptr, what)                                                                            \
    do {                                                                                           \
        if (!(ptr))                                                                                \
            return KILN_RAISE(KILN_ERR_INVALID, "%s is NULL", what);                               \
    } while (0)

kiln_result kiln_context_create(const kiln_context_desc *desc, kiln_context *out)
{
    err_clear();
    NEED(out, "out");
    out->id = 0;
    pthread_rwlock_wrlock(&contexts_lock);
    if (!contexts.tag)
        pool_init(&contexts, POOL_CONTEXT, 0);
    uint32_t serial = ++context_serial;
    pthread_rwlock_unlock(&contexts_lock);

    struct kctx *c;
    const char *remote = remote_target(desc);
    KILN_TRY(remote ? remote_create(remote, desc, serial, &c) : ctx_create(desc, serial, &c));
    pthread_rwlock_wrlock(&contexts_lock);
    uint64_t id;
    kiln_result r = pool_insert(&contexts, c, "context", &id);
    pthread_rwlock_unlock(&contexts_lock);
    if (r < 0) {
        c->ops->destroy(c);
        return r;
    }
    out->id = id;
    return KILN_OK;
}

kiln_result kiln_context_destroy(kiln_context h)
{
    err_clear();
    pthread_rwlock_wrlock(&contexts_lock);
    struct kctx *c = contexts.tag ? pool_remove(&contexts, h.id) : NULL;
    if (!c) {
        const char *why = contexts.tag ? pool_why(&contexts, h.id) : "no context was ever created";
        pthread_rwlock_unlock(&contexts_lock);
        return KILN_RAISE(KILN_ERR_HANDLE, "context 0x%016llx: %s", (unsigned long long)h.id, why);
    }
    pthread_rwlock_unlock(&contexts_lock);
    /* No new caller can resolve it now; wait for those already in. */
    pthread_mutex_lock(&users_lock);
    while (c->users)
        pthread_cond_wait(&users_cond, &users_lock);
    pthread_mutex_unlock(&users_lock);
    c->ops->destroy(c);
    return KILN_OK;
}

kiln_result kiln_context_caps(kiln_context ctx, kiln_caps *out)
{
    NEED(out, "out");
    CALL(ctx, caps, out);
}

kiln_result kiln_context_wait_idle(kiln_context ctx) { CALL0(ctx, wait_idle); }

kiln_result kiln_context_stats_get(kiln_context ctx, kiln_context_stats *out)
{
    NEED(out, "out");
    CALL(ctx, stats, out);
}

kiln_result kiln_devices(kiln_device_info *out, uint32_t cap, uint32_t *count)
{
    err_clear();
    NEED(count, "count");
    if (cap)
        NEED(out, "out");
    return kb_backend_of(KILN_BACKEND_DEFAULT)->enumerate(out, cap, count);
}

kiln_result kiln_buffer_create(kiln_context ctx, const kiln_buffer_desc *desc, kiln_buffer *out)
{
    NEED(desc, "buffer desc");
    NEED(out, "out");
    out->id = 0;
    CALL(ctx, buffer_create, desc, out);
}

kiln_result kiln_buffer_destroy(kiln_context ctx, kiln_buffer buf) { CALL(ctx, buffer_destroy, buf); }

kiln_result kiln_buffer_upload(kiln_context ctx, kiln_buffer buf, uint64_t offset, const void *data, uint64_t size)
{
    CALL(ctx, buffer_upload, buf, offset, data, size);
}

kiln_result kiln_buffer_readback(kiln_context ctx, kiln_buffer buf, uint64_t offset, void *data, uint64_t size)
{
    CALL(ctx, buffer_readback, buf, offset, data, size);
}

kiln_result kiln_image_create(kiln_context ctx, const kiln_image_desc *desc, kiln_image *out)
{
    NEED(desc, "image desc");
    NEED(out, "out");
    out->id = 0;
    CALL(ctx, image_create, desc, out);
}

kiln_result kiln_image_destroy(kiln_context ctx, kiln_image img) { CALL(ctx, image_destroy, img); }

kiln_result kiln_image_upload(kiln_context ctx, kiln_image img, const void *data, uint64_t size)
{
    CALL(ctx, image_upload, img, data, size);
}

kiln_result kiln_image_readback(kiln_context ctx, kiln_image img, void *data, uint64_t size)
{
    CALL(ctx, image_readback, img, data, size);
}

kiln_result kiln_program_create(kiln_context ctx, const kiln_program_desc *desc, kiln_program *out)
{
    NEED(desc, "program desc");
    NEED(out, "out");
    out->id = 0;
    CALL(ctx, program_create, desc, out);
}

kiln_result kiln_program_destroy(kiln_context ctx, kiln_program prog) { CALL(ctx, program_destroy, prog); }

kiln_result kiln_program_status(kiln_context ctx, kiln_program prog, kiln_program_state *out)
{
    NEED(out, "out");
    CALL(ctx, program_status, prog, out);
}

kiln_result kiln_program_wait(kiln_context ctx, kiln_program prog) { CALL(ctx, program_wait, prog); }

kiln_result kiln_program_log(kiln_context ctx, kiln_program prog, char *buf, size_t cap, size_t *len)
{
    CALL(ctx, program_log, prog, buf, cap, len);
}

kiln_result kiln_program_interface_get(kiln_context ctx, kiln_program prog, kiln_program_interface *out)
{
    NEED(out, "out");
    CALL(ctx, program_interface, prog, out);
}

kiln_result kiln_scheme_create(kiln_context ctx, const kiln_scheme_desc *desc, kiln_scheme *out)
{
    NEED(out, "out");
    out->id = 0;
    CALL(ctx, scheme_create, desc, out);
}

kiln_result kiln_scheme_destroy(kiln_context ctx, kiln_scheme scheme) { CALL(ctx, scheme_destroy, scheme); }

kiln_result kiln_scheme_add_node(kiln_context ctx, kiln_scheme scheme, const kiln_node_desc *desc, kiln_node *out)
{
    NEED(desc, "node desc");
    NEED(out, "out");
    out->id = 0;
    CALL(ctx, scheme_add_node, scheme, desc, out);
}

kiln_result kiln_node_remove(kiln_context ctx, kiln_node node) { CALL(ctx, node_remove, node); }

kiln_result kiln_node_set_param(kiln_context ctx, kiln_node node, uint32_t slot, uint32_t word)
{
    CALL(ctx, node_set_param, node, slot, word);
}

kiln_result kiln_node_set_program(kiln_context ctx, kiln_node node, kiln_program prog)
{
    CALL(ctx, node_set_program, node, prog);
}

kiln_result kiln_node_get_params(kiln_context ctx, kiln_node node, uint32_t *out, uint32_t cap, uint32_t *count)
{
    if (cap)
        NEED(out, "out");
    CALL(ctx, node_get_params, node, out, cap, count);
}

kiln_result kiln_scheme_submit(kiln_context ctx, kiln_scheme scheme, kiln_ticket *ticket)
{
    CALL(ctx, scheme_submit, scheme, ticket);
}

kiln_result kiln_scheme_stats_get(kiln_context ctx, kiln_scheme scheme, kiln_scheme_stats *out)
{
    NEED(out, "out");
    CALL(ctx, scheme_stats, scheme, out);
}

kiln_result kiln_ticket_wait(kiln_context ctx, kiln_ticket ticket, uint64_t timeout_ns)
{
    CALL(ctx, ticket_wait, ticket, timeout_ns);
}

kiln_result kiln_archive_info_get(kiln_context ctx, kiln_archive_info *out)
{
    NEED(out, "out");
    CALL(ctx, archive_info, out);
}

kiln_result kiln_archive_files(kiln_context ctx, uint32_t first, kiln_archive_file *out, uint32_t cap,
                               uint32_t *count)
{
    NEED(count, "count");
    if (cap)
        NEED(out, "out");
    CALL(ctx, archive_files, first, out, cap, count);
}

kiln_result kiln_archive_tidy(kiln_context ctx, const kiln_archive_tidy_desc *desc, kiln_archive_tidy_result *out)
{
    NEED(desc, "desc");
    NEED(out, "out");
    CALL(ctx, archive_tidy, desc, out);
}

kiln_result kiln_context_precompile(kiln_context ctx, const kiln_precompile_desc *desc, kiln_precompile_result *out)
{
    kiln_precompile_result ignored;
    CALL(ctx, precompile, desc, out ? out : &ignored);
}

kiln_result kiln_scheme_spec_events(kiln_context ctx, kiln_scheme scheme, kiln_spec_event *out, uint32_t cap,
                                    uint32_t *count)
{
    NEED(count, "count");
    if (cap)
        NEED(out, "out");
    CALL(ctx, scheme_spec_events, scheme, out, cap, count);
}

kiln_result kiln_node_is_specialized(kiln_context ctx, kiln_node node, int *out)
{
    NEED(out, "out");
    CALL(ctx, node_is_specialized, node, out);
}

kiln_result kiln_compiles_pending(kiln_context ctx, uint32_t *out)
{
    NEED(out, "out");
    CALL(ctx, compiles_pending, out);
}

/* For kiln's own tests and tools: the context behind a handle, unlocked. */
#ifdef KILN_TEST_HOOKS
struct kctx *api_context_peek(kiln_context h)
{
    pthread_rwlock_rdlock(&contexts_lock);
    struct kctx *c = contexts.tag ? pool_get(&contexts, h.id) : NULL;
    pthread_rwlock_unlock(&contexts_lock);
    return c;
}
#endif
