/* SPDX-License-Identifier: MIT */
/*
 * backend.c: what every backend shares: loss of the device and runaway
 * work (see "Loss and runaway work" in backend.h).
 *
 * No timer and no thread watch the device: kiln learns of runaway work when
 * it waits on it, and every wait is cut at the runaway deadline of the
 * oldest unfinished submit. The wait is made one submit at a time (the
 * oldest unfinished first), so the moment each finishes is seen and the
 * next one's clock starts there: a queue of many short submits is never
 * taken for one long one. A caller's own shorter bound still gives
 * KILN_ERR_TIMEOUT, and leaves the device live.
 *
 * Submits run under the context lock; waits run with it or without it,
 * on any number of threads at once (a thread waiting on a ticket lets the
 * context's other calls go on). The bookkeeping both touch (the notes, the
 * done counter as last seen) is under kb_device.watch, held only for
 * bookkeeping: never across a wait, a log line or a fault callback.
 * `lost` is atomic; lost_why is written under watch before it.
 */
#include "backend.h"
#include "base/trace.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const struct kb_backend kb_backends[] = {
    {KILN_BACKEND_VULKAN, "vulkan", "Vulkan", true, true, vkb_create, vkb_enumerate},
    {KILN_BACKEND_MOCK, "mock", "the mock backend", false, false, mockb_create, NULL},
};
const uint32_t kb_backend_count = sizeof kb_backends / sizeof kb_backends[0];

const struct kb_backend *kb_backend_of(kiln_backend_kind kind)
{
    if (kind == KILN_BACKEND_DEFAULT)
        return &kb_backends[0];
    for (uint32_t i = 0; i < kb_backend_count; i++)
        if (kb_backends[i].kind == kind)
            return &kb_backends[i];
    return NULL;
}

const struct kb_backend *kb_backend_named(const char *name)
{
    for (uint32_t i = 0; name && i < kb_backend_count; i++)
        if (!strcmp(kb_backends[i].name, name))
            return &kb_backends[i];
    return NULL;
}

const char *kiln_backend_name(kiln_backend_kind kind)
{
    if (kind == KILN_BACKEND_DEFAULT)
        return "default";
    const struct kb_backend *b = kb_backend_of(kind);
    return b ? b->name : "unknown";
}

void kb_device_init(struct kb_device *d) { pthread_mutex_init(&d->watch, NULL); }
void kb_device_finish(struct kb_device *d) { pthread_mutex_destroy(&d->watch); }

void kb_set_timeout(struct kb_device *d, uint64_t ns) { d->timeout_ns = ns; }

void kb_note_submit(struct kb_device *d, uint64_t ticket, const char *what)
{
    pthread_mutex_lock(&d->watch);
    struct kb_submit_note *n = &d->notes[ticket % KB_NOTES];
    n->ticket = ticket;
    n->at_ns = time_now_ns();
    n->owner = d->owner;
    n->timeout_ns = d->owner ? d->owner_timeout_ns : d->timeout_ns;
    n->faulted = false;
    snprintf(n->what, sizeof n->what, "%s", what ? what : "a submit");
    struct kb_submit_note mark = *n;
    pthread_mutex_unlock(&d->watch);
    if (d->trace) {   /* every submit passes here: nothing more without a trace */
        char name[32];
        snprintf(name, sizeof name, "submit %llu", (unsigned long long)ticket);
        trace_mark(d->trace, TRACE_SUBMITS, "submit", name, mark.at_ns, mark.what);
    }
}

/* A copy of ticket's note (false when it has been written over). */
static bool note_copy(struct kb_device *d, uint64_t ticket, struct kb_submit_note *out)
{
    pthread_mutex_lock(&d->watch);
    const struct kb_submit_note *n = &d->notes[ticket % KB_NOTES];
    bool kept = n->ticket == ticket;
    if (kept)
        *out = *n;
    pthread_mutex_unlock(&d->watch);
    return kept;
}

void kb_trace_done(struct kb_device *d, uint64_t *traced)
{
    if (!d->trace)
        return;
    uint64_t done = kb_ticket_done(d), now = time_now_ns();
    for (uint64_t t = *traced + 1; t <= done; t++) {
        struct kb_submit_note n;
        if (!note_copy(d, t, &n))
            continue;   /* written over by later submits before anyone waited */
        char name[32];
        snprintf(name, sizeof name, "submit %llu", (unsigned long long)t);
        trace_span(d->trace, TRACE_DEVICE, "device", name, n.at_ns, now, n.what);
    }
    if (done > *traced)
        *traced = done;
}

/* The note of ticket, or NULL when it has been written over (watch held). */
static struct kb_submit_note *note(struct kb_device *d, uint64_t ticket)
{
    struct kb_submit_note *n = &d->notes[ticket % KB_NOTES];
    return n->ticket == ticket ? n : NULL;
}

kiln_result kb_lose(struct kb_device *d, int how, const char *fmt, ...)
{
    bool first = false;
    pthread_mutex_lock(&d->watch);
    if (atomic_load(&d->lost) == KB_LIVE) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->lost_why, sizeof d->lost_why, fmt, ap);
        va_end(ap);
        atomic_store(&d->lost, how);
        first = true;
    }
    pthread_mutex_unlock(&d->watch);
    if (first)
        log_error("%s", d->lost_why);
    return err_raise(KILN_ERR_DEVICE_LOST, __FILE__, __LINE__, "%s", d->lost_why);
}

kiln_result kb_live(struct kb_device *d)
{
    if (atomic_load(&d->lost) == KB_LIVE)
        return KILN_OK;
    return err_raise(KILN_ERR_DEVICE_LOST, __FILE__, __LINE__, "%s", d->lost_why);
}

/* r, after latching d lost when r is the driver's KILN_ERR_DEVICE_LOST (the
 * thread's last error is how the op put it), naming what the device was
 * doing: submitting `submitting` when not NULL, else running its oldest
 * unfinished submit. */
static kiln_result seen(struct kb_device *d, kiln_result r, const char *submitting)
{
    if (r != KILN_ERR_DEVICE_LOST || kb_is_lost(d))
        return r;
    char why[512], doing[256] = "";
    snprintf(why, sizeof why, "%s", err_last());
    if (submitting) {
        snprintf(doing, sizeof doing, " when submitting %s", submitting);
    } else {
        uint64_t done = d->ops->ticket_done(d);
        struct kb_submit_note n;
        if (d->submitted > done && note_copy(d, done + 1, &n))
            snprintf(doing, sizeof doing, " while running %s", n.what);
    }
    return kb_lose(d, KB_LOST_DRIVER, "device lost: the driver reported the device lost%s (%s); every call on "
                   "this context now fails with KILN_ERR_DEVICE_LOST: destroy it", doing, why);
}

kiln_result kb_seen(struct kb_device *d, kiln_result r) { return seen(d, r, NULL); }

kiln_result kb_submit(struct kb_device *d, struct kb_cmd *c, const char *what, uint64_t *t)
{
    KILN_TRY(kb_live(d));
    KILN_TRY(seen(d, d->ops->submit(d, c, t), what ? what : "a submit"));
    kb_note_submit(d, *t, what);
    return KILN_OK;
}

/* What a wait does next, judged under watch. */
enum verdict { WAIT_ON, WAIT_LOSE, WAIT_FAULT };

kiln_result kb_ticket_wait_as(struct kb_device *d, const void *owner, uint64_t ticket, uint64_t timeout_ns)
{
    KILN_TRY(kb_live(d));
    uint64_t start = time_now_ns();
    uint64_t until = timeout_ns > UINT64_MAX - start ? UINT64_MAX : start + timeout_ns;
    uint64_t reached = 0;   /* the highest ticket a raw wait said is done (should the counter fail to say it) */
    for (;;) {
        uint64_t done = KILN_MAX(d->ops->ticket_done(d), reached);
        if (done >= ticket)
            return KILN_OK;
        uint64_t now = time_now_ns();
        uint64_t wait_for = ticket, wait_until = until, next = done + 1, began = 0;
        enum verdict v = WAIT_ON;
        const void *guilty = NULL;
        char what[240] = "";
        pthread_mutex_lock(&d->watch);
        if (done > d->seen_done) {
            d->seen_done = done;
            d->progress_ns = now;
        }
        /* The oldest unfinished submit, judged by its own bound (its
         * owner's), and when its clock started. */
        struct kb_submit_note *n = note(d, next);
        uint64_t bound = n ? n->timeout_ns : d->timeout_ns;
        if (bound && !(n && n->faulted)) {
            began = KILN_MAX(n ? n->at_ns : 0, d->progress_ns);
            if (!began)   /* its submit no longer noted, and no progress seen yet: from now */
                began = d->progress_ns = now;
            uint64_t deadline = began > UINT64_MAX - bound ? UINT64_MAX : began + bound;
            if (now >= deadline) {
                if (n)
                    snprintf(what, sizeof what, "%s", n->what);
                else
                    snprintf(what, sizeof what, "submit %llu", (unsigned long long)next);
                if (!n || !n->owner || !d->fault) {
                    v = WAIT_LOSE;
                } else {
                    /* One owner's runaway work: that owner is at fault, the
                     * device and the others go on (their work waits behind
                     * it, uncharged). Marked here, so it is told once. */
                    v = WAIT_FAULT;
                    n->faulted = true;
                    guilty = n->owner;
                }
            } else {
                wait_for = next;
                wait_until = KILN_MIN(wait_until, deadline);
            }
        }
        pthread_mutex_unlock(&d->watch);
        if (v == WAIT_LOSE)
            return kb_lose(d, KB_LOST_TIMEOUT,
                           "device lost: %s did not finish within %.3f s of its start (the context's device "
                           "timeout: device_timeout_ms or KILN_DEVICE_TIMEOUT_S); every call on this context "
                           "now fails with KILN_ERR_DEVICE_LOST: destroy it",
                           what, (double)(now - began) / 1e9);
        if (v == WAIT_FAULT) {
            char why[768];
            snprintf(why, sizeof why, "device lost for this context: %s did not finish within %.3f s of its "
                     "start (its device timeout: device_timeout_ms, or the server's KILN_DEVICE_TIMEOUT_S); the "
                     "device serves the server's other clients on, and every call on this context now fails "
                     "with KILN_ERR_DEVICE_LOST: destroy it", what, (double)(now - began) / 1e9);
            d->fault(d->fault_ud, guilty, why);
            if (guilty == owner)
                return err_raise(KILN_ERR_DEVICE_LOST, __FILE__, __LINE__, "%s", why);
            continue;
        }
        if (now >= until)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "ticket %llu not done within %llu ns", (unsigned long long)ticket,
                              (unsigned long long)timeout_ns);
        kiln_result r = d->ops->ticket_wait(d, wait_for, wait_until == UINT64_MAX ? UINT64_MAX : wait_until - now);
        if (r == KILN_ERR_DEVICE_LOST)
            return kb_seen(d, r);
        if (r < 0 && r != KILN_ERR_TIMEOUT)
            return r;
        if (r == KILN_OK)
            reached = KILN_MAX(reached, wait_for);
        /* Done or timed out: the top of the loop decides which. */
    }
}

bool kb_abandon(struct kb_device *d)
{
    if (!kb_is_lost(d))
        return false;
    uint64_t done = d->ops->ticket_done(d);
    if (done >= d->submitted)
        return false;
    atomic_store(&d->abandon, true);
    struct kb_submit_note n;
    bool kept = note_copy(d, done + 1, &n);
    log_warn("device abandoned: %llu submit%s had not finished (the oldest: %s); a device cannot be made to stop "
             "running work, so it and the objects that work may use are left to it, not freed",
             (unsigned long long)(d->submitted - done), d->submitted - done == 1 ? "" : "s",
             kept ? n.what : "no longer recorded");
    return true;
}
