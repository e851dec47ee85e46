/* SPDX-License-Identifier: MIT */
/*
 * api.c: kiln's public entry points.
 *
 * Each call resolves its context handle in the process-wide context pool,
 * takes that context's lock, and dispatches through the context's rt_ops
 * table (the local runtime's, or a remote client's). The entry points of
 * every call acting on a context but its create and destroy are made from
 * the call catalogue (context/calls.def, context/calls.h). Descs pass through
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
 *
 * A call that waits lets the context's lock go for the wait (context.h):
 * calls on one context run one at a time except across waits.
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
    /* Only a remote context's waits look at queued: a local one's let the
     * lock go for the whole wait. */
    bool count = !ctx_is_local(c);
    if (count)
        atomic_fetch_add(&c->queued, 1);
    pthread_mutex_lock(&c->lock);
    if (count)
        atomic_fetch_sub(&c->queued, 1);
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
 * the context entered) unless its device is lost, and leaves. */
#define IN_CONTEXT(h, call)                                                                        \
    do {                                                                                           \
        struct kctx *c_;                                                                           \
        KILN_TRY(enter((h), &c_));                                                                 \
        kiln_result r_ = ctx_live(c_);                                                             \
        if (r_ == KILN_OK)                                                                         \
            r_ = ctx_seen(c_, (call));                                                             \
        return leave(c_, r_);                                                                      \
    } while (0)

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

    /* Refused here, local or remote alike (a server's own settings would
     * otherwise decide, and say so only in its log). */
    if (desc && desc->check > 0 && desc->robust > 0)
        return KILN_RAISE(KILN_ERR_INVALID, "context desc: check mode and robust access exclude each other: check "
                          "reports the out-of-bounds accesses robust access would make safe (check by the desc, "
                          "robust by the desc)");
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

kiln_result kiln_devices(kiln_device_info *out, uint32_t cap, uint32_t *count)
{
    err_clear();
    NEED(count, "count");
    if (cap)
        NEED(out, "out");
    return kb_backend_of(KILN_BACKEND_DEFAULT)->enumerate(out, cap, count);
}

/* Every call acting on a context but its create and destroy, from its
 * catalogue row: its
 * pointers checked (calls.h says which), its context resolved and locked,
 * its op called. */
#define KC_NEED NEED
#define X(name, record, class, flags, params)                                                      \
    kiln_result kiln_##name(kiln_context ctx KC_EACH(KC_DECL, params))                             \
    {                                                                                              \
        KC_EACH(KC_CHECK, params)                                                                  \
        IN_CONTEXT(ctx, c_->ops->name(c_ KC_EACH(KC_ARG, params)));                                \
    }
#define L(name, record, class, flags)
#include "context/calls.def"
#undef L
#undef X

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
