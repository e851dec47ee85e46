/* SPDX-License-Identifier: MIT */
/*
 * ring.c: the control page, the SPSC rings in shared memory, their
 * doorbell, peer liveness and the event ring.
 *
 * Trust: the peer shares these bytes and may write anything into them at
 * any moment. So each side keeps its own cursor locally and only ever
 * writes it; the other side's cursor is loaded once into a local and
 * checked there (it may only move forward, and never more than a ring's
 * size from this side's own); a record's header is copied out of the ring
 * before it is checked, and the payload is copied out with bounds computed
 * from the checked copy, so nothing the peer writes later changes what was
 * checked. Whatever the peer writes, every byte this side reads or writes
 * lies inside [data, data + size) or the control page. A check that fails
 * breaks the ring for good (latched, with the reason).
 *
 * Ordering: a record's bytes are written with plain stores and published
 * by a release store of head; the consumer's acquire load of head makes
 * them visible. Space is given back the same way through the retired tail
 * (not the applied one: a record the server still uses, borrowed into GPU
 * work, is applied but not retired).
 *
 * The doorbell (tests/transport/doorbell.pml models it): a sleeper stores
 * its parked flag, issues a full fence, and re-tests the ring before it
 * sleeps on the flag's futex; the waker publishes its cursor, issues a full
 * fence, and then reads the flag, clearing it with an exchange and calling
 * FUTEX_WAKE when it was set. Without the two fences each side's store can
 * sit in its store buffer while it loads the other's old value, and the
 * sleeper sleeps on a ring that has a record (the lost wakeup); with them,
 * at least one side sees the other's store. Sleeps are slices of at most
 * TP_PARK_SLICE_NS, and the peer's liveness is checked between slices, so
 * nothing waits for ever on a dead or scribbling peer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "transport/transport.h"

/* The longest single sleep on a futex: how late a dead peer can be seen
 * beyond its timeout. Tests make it longer than their waits, so that a lost
 * wakeup shows as a wait that times out instead of a slice that hides it. */
#define TP_PARK_SLICE_NS (20ull * 1000 * 1000)
static _Atomic uint64_t park_slice_ns = TP_PARK_SLICE_NS;
#ifdef KILN_TEST_HOOKS
void tp_test_park_slice(uint64_t ns) { atomic_store(&park_slice_ns, ns ? ns : TP_PARK_SLICE_NS); }
#endif

/* A spinning loop's breath: lets the core's other thread run. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

static uint64_t align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

static bool pow2_in_range(uint64_t n) { return n >= TP_RING_MIN && n <= TP_RING_MAX && !(n & (n - 1)); }

/* ---- control page ------------------------------------------------------------------- */

kiln_result tp_control_init(struct tp_control *c, uint64_t cmd_ring_size, uint64_t stage_ring_size)
{
    if (!pow2_in_range(cmd_ring_size) || !pow2_in_range(stage_ring_size))
        return KILN_RAISE(KILN_ERR_INVALID, "ring sizes %llu and %llu: each must be a power of two from %u to %llu",
                          (unsigned long long)cmd_ring_size, (unsigned long long)stage_ring_size, TP_RING_MIN,
                          (unsigned long long)TP_RING_MAX);
    memset(c, 0, sizeof *c);
    c->magic = TP_CONTROL_MAGIC;
    c->version = TP_CONTROL_VERSION;
    c->size = TP_CONTROL_SIZE;
    c->cmd_ring_size = cmd_ring_size;
    c->stage_ring_size = stage_ring_size;
    atomic_thread_fence(memory_order_release);
    return KILN_OK;
}

kiln_result tp_control_check(const struct tp_control *c, uint64_t *cmd_ring_size, uint64_t *stage_ring_size)
{
    const volatile struct tp_control *v = c;   /* each field read once, here */
    uint32_t magic = v->magic, version = v->version, size = v->size;
    uint64_t cmd = v->cmd_ring_size, stage = v->stage_ring_size;
    if (magic != TP_CONTROL_MAGIC)
        return KILN_RAISE(KILN_ERR_IO, "protocol mismatch: control page magic 0x%08x is not KLNC (0x%08x)", magic,
                          TP_CONTROL_MAGIC);
    if (version != TP_CONTROL_VERSION)
        return KILN_RAISE(KILN_ERR_IO, "protocol mismatch: control page version %u, this kiln speaks %u", version,
                          TP_CONTROL_VERSION);
    if (size != TP_CONTROL_SIZE)
        return KILN_RAISE(KILN_ERR_IO, "protocol mismatch: control page size %u, expected %u", size, TP_CONTROL_SIZE);
    if (!pow2_in_range(cmd) || !pow2_in_range(stage))
        return KILN_RAISE(KILN_ERR_IO,
                          "protocol mismatch: control page ring sizes %llu and %llu (each a power of two from %u to %llu)",
                          (unsigned long long)cmd, (unsigned long long)stage, TP_RING_MIN,
                          (unsigned long long)TP_RING_MAX);
    *cmd_ring_size = cmd;
    *stage_ring_size = stage;
    return KILN_OK;
}

struct tp_layout tp_layout_of(uint64_t cmd_ring_size, uint64_t stage_ring_size)
{
    struct tp_layout l = {TP_CONTROL_SIZE, cmd_ring_size, TP_CONTROL_SIZE + cmd_ring_size, stage_ring_size, 0};
    l.total = l.stage_offset + stage_ring_size;   /* each at most TP_RING_MAX: no overflow */
    return l;
}

kiln_result tp_control_layout(const struct tp_control *c, uint64_t segment_size, struct tp_layout *out)
{
    memset(out, 0, sizeof *out);
    uint64_t cmd = 0, stage = 0;
    KILN_TRY(tp_control_check(c, &cmd, &stage));
    struct tp_layout l = tp_layout_of(cmd, stage);
    if (l.total > segment_size)
        return KILN_RAISE(KILN_ERR_IO,
                          "protocol mismatch: the control page's rings (%llu and %llu bytes) need a segment of %llu "
                          "bytes, this one has %llu",
                          (unsigned long long)cmd, (unsigned long long)stage, (unsigned long long)l.total,
                          (unsigned long long)segment_size);
    *out = l;
    return KILN_OK;
}

/* ---- futex and peer ------------------------------------------------------------------- */

/* Sleeps while *flag == 1, at most ns; returns at once if it is not 1. Not
 * FUTEX_PRIVATE: the flag may be in memory shared with another process. */
static void futex_wait(_Atomic uint32_t *flag, uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000u), .tv_nsec = (long)(ns % 1000000000u)};
    syscall(SYS_futex, (uint32_t *)flag, FUTEX_WAIT, 1, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *flag)
{
    syscall(SYS_futex, (uint32_t *)flag, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void tp_peer_init(struct tp_peer *p, const _Atomic uint64_t *heartbeat, int fd, uint64_t timeout_ns)
{
    memset(p, 0, sizeof *p);
    p->heartbeat = heartbeat;
    p->fd = fd;
    p->timeout_ns = timeout_ns ? timeout_ns : env_u64("KILN_IPC_PEER_TIMEOUT_MS", TP_PEER_TIMEOUT_MS_DEFAULT) * 1000000ull;
    if (heartbeat)
        p->last = atomic_load_explicit(heartbeat, memory_order_relaxed);
    p->since_ns = time_now_ns();
}

kiln_result tp_peer_check(struct tp_peer *p)
{
    if (p->dead)
        return KILN_RAISE(KILN_ERR_IO, "peer is dead: %s", p->why);
    if (p->stop && atomic_load_explicit(p->stop, memory_order_acquire)) {
        snprintf(p->why, sizeof p->why, "this side is closing");
        p->dead = true;
        return KILN_RAISE(KILN_ERR_IO, "peer is dead: %s", p->why);
    }
    if (p->fd >= 0) {
        struct pollfd pf = {.fd = p->fd, .events = POLLRDHUP};
        if (poll(&pf, 1, 0) > 0 && (pf.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))) {
            snprintf(p->why, sizeof p->why, "its socket closed");
            p->dead = true;
        }
    }
    if (!p->dead && p->heartbeat) {
        uint64_t now = time_now_ns(), beat = atomic_load_explicit(p->heartbeat, memory_order_relaxed);
        if (beat != p->last) {
            p->last = beat;
            p->since_ns = now;
        } else if (now - p->since_ns > p->timeout_ns) {
            snprintf(p->why, sizeof p->why, "its heartbeat stayed at %llu for %llu ms (limit %llu ms)",
                     (unsigned long long)beat, (unsigned long long)((now - p->since_ns) / 1000000u),
                     (unsigned long long)(p->timeout_ns / 1000000u));
            p->dead = true;
        }
    }
    if (!p->dead)
        return KILN_OK;
    log_debug("transport: peer is dead: %s", p->why);
    return KILN_RAISE(KILN_ERR_IO, "peer is dead: %s", p->why);
}

static void *beat_main(void *arg)
{
    struct tp_heartbeat *h = arg;
    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        atomic_fetch_add_explicit(h->counter, 1, memory_order_relaxed);
        cond_wait_ns(&h->cond, &h->mu, h->period_ns);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

kiln_result tp_heartbeat_start(struct tp_heartbeat *h, _Atomic uint64_t *counter, uint64_t period_ns)
{
    memset(h, 0, sizeof *h);
    h->counter = counter;
    h->period_ns =
        period_ns ? period_ns : env_u64("KILN_IPC_PEER_TIMEOUT_MS", TP_PEER_TIMEOUT_MS_DEFAULT) * 1000000ull / 8;
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cond, NULL);
    kiln_result r = kthread_start(&h->thread, "kiln-heartbeat", 0, beat_main, h);
    if (r != KILN_OK) {
        pthread_cond_destroy(&h->cond);
        pthread_mutex_destroy(&h->mu);
        return r;
    }
    h->running = true;
    return KILN_OK;
}

void tp_heartbeat_stop(struct tp_heartbeat *h)
{
    if (!h->running)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    pthread_cond_signal(&h->cond);
    pthread_mutex_unlock(&h->mu);
    kthread_join(&h->thread);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->mu);
    h->running = false;
}

/* ---- ring ----------------------------------------------------------------------------- */

kiln_result tp_ring_init(struct tp_ring *r, struct tp_ring_ctl *ctl, void *data, uint64_t size, uint32_t max_kind)
{
    memset(r, 0, sizeof *r);
    if (!pow2_in_range(size))
        return KILN_RAISE(KILN_ERR_INVALID, "ring size %llu: must be a power of two from %u to %llu",
                          (unsigned long long)size, TP_RING_MIN, (unsigned long long)TP_RING_MAX);
    if ((uintptr_t)data & 7)
        return KILN_RAISE(KILN_ERR_INVALID, "ring data at %p is not 8-aligned", data);
    if (!max_kind)
        return KILN_RAISE(KILN_ERR_INVALID, "a ring needs at least one record kind (max_kind 0)");
    r->ctl = ctl;
    r->data = data;
    r->size = size;
    r->mask = size - 1;
    r->max_kind = max_kind;
    r->spin_us = (uint32_t)KILN_MIN(env_u64("KILN_IPC_SPIN_US", TP_SPIN_US_DEFAULT), 1000000u);
    return KILN_OK;
}

static kiln_result broken_error(const struct tp_ring *r)
{
    return KILN_RAISE(KILN_ERR_IO, "ring broken: %s", r->why);
}

kiln_result tp_ring_break(struct tp_ring *r, const char *why)
{
    if (!r->broken) {
        snprintf(r->why, sizeof r->why, "%s", why);
        r->broken = true;
        log_debug("transport: ring broken: %s", r->why);
    }
    return broken_error(r);
}

#define BREAK(r, ...)                                                                              \
    do {                                                                                           \
        char why_[160];                                                                            \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                                  \
        return tp_ring_break((r), why_);                                                           \
    } while (0)

/* Wakes the side sleeping on flag, if it sleeps. Called after the caller
 * published its cursor. */
static bool ring_bell(_Atomic uint32_t *flag)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (!atomic_load_explicit(flag, memory_order_relaxed))
        return false;
    if (atomic_exchange_explicit(flag, 0, memory_order_seq_cst))
        futex_wake(flag);
    return true;
}

/* Waits until ready(r) or timeout_ns: spin, then park on flag in slices,
 * checking the peer between them. The ordering is the doorbell's (see the
 * top of this file). */
static kiln_result park_until(struct tp_ring *r, _Atomic uint32_t *flag, bool (*ready)(struct tp_ring *),
                              uint64_t timeout_ns, const char *what)
{
    if (ready(r))
        return r->broken ? broken_error(r) : KILN_OK;
    timeout_ns = KILN_MIN(timeout_ns, 1ull << 62);   /* start + timeout_ns cannot wrap */
    uint64_t start = time_now_ns(), spin_ns = (uint64_t)r->spin_us * 1000u;
    for (uint32_t i = 0;; i++) {
        cpu_relax();
        if (ready(r)) {
            r->spin_hits++;
            return r->broken ? broken_error(r) : KILN_OK;
        }
        if ((i & 63) == 63 && time_now_ns() - start >= KILN_MIN(spin_ns, timeout_ns))
            break;
    }
    for (;;) {
        atomic_store_explicit(flag, 1, memory_order_relaxed);
        atomic_thread_fence(memory_order_seq_cst);
        if (ready(r)) {
            atomic_store_explicit(flag, 0, memory_order_relaxed);
            return r->broken ? broken_error(r) : KILN_OK;
        }
        uint64_t now = time_now_ns(), left = start + timeout_ns > now ? start + timeout_ns - now : 0;
        if (left)
            futex_wait(flag, KILN_MIN(left, atomic_load_explicit(&park_slice_ns, memory_order_relaxed)));
        r->parks++;
        atomic_store_explicit(flag, 0, memory_order_relaxed);
        if (ready(r))
            return r->broken ? broken_error(r) : KILN_OK;
        if (r->peer)
            KILN_TRY(tp_peer_check(r->peer));
        if (time_now_ns() - start >= timeout_ns)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "waited %llu ms for %s", (unsigned long long)(timeout_ns / 1000000u),
                              what);
    }
}

/* Producer: reads the retired tail once and checks it. */
static kiln_result load_retired(struct tp_ring *r)
{
    uint64_t v = atomic_load_explicit(&r->ctl->retired, memory_order_acquire);
    if (v < r->retired_seen || v > r->published)
        BREAK(r, "retired tail %llu is outside [%llu, %llu] (the last one seen, the head published)",
              (unsigned long long)v, (unsigned long long)r->retired_seen, (unsigned long long)r->published);
    r->retired_seen = v;
    return KILN_OK;
}

static uint64_t need_for(const struct tp_ring *r, uint64_t rec)
{
    uint64_t contiguous = r->size - (r->head & r->mask);
    return rec <= contiguous ? rec : contiguous + rec;
}



static bool has_space(struct tp_ring *r)
{
    if (load_retired(r) < 0)
        return true;   /* broken: stop waiting */
    return r->size - (r->head - r->retired_seen) >= r->want;
}

kiln_result tp_ring_reserve(struct tp_ring *r, uint32_t kind, size_t payload, uint64_t timeout_ns, void **p)
{
    *p = NULL;
    if (r->broken)
        return broken_error(r);
    if (kind == TP_RECORD_PAD || kind > r->max_kind)
        return KILN_RAISE(KILN_ERR_INVALID, "record kind %u: kinds are 1 to %u", kind, r->max_kind);
    if (payload > TP_RECORD_MAX(r->size) - TP_RECORD_HEADER)
        return KILN_RAISE(KILN_ERR_LIMIT, "a record of %zu payload bytes is past the limit of this %llu-byte ring (%llu)",
                          payload, (unsigned long long)r->size,
                          (unsigned long long)(TP_RECORD_MAX(r->size) - TP_RECORD_HEADER));
    uint64_t rec = align8(TP_RECORD_HEADER + payload), need = need_for(r, rec);
    if (r->size - (r->head - r->retired_seen) < need) {
        KILN_TRY(load_retired(r));
        if (r->size - (r->head - r->retired_seen) < need) {
            tp_ring_publish(r);   /* the consumer cannot free what it cannot see */
            r->want = need;
            KILN_TRY(park_until(r, &r->ctl->producer_parked, has_space, timeout_ns, "ring space"));
        }
    }
    uint64_t pos = r->head & r->mask;
    if (rec > r->size - pos) {   /* pad to the wrap */
        uint32_t pad[2] = {(uint32_t)(r->size - pos), TP_RECORD_PAD};
        memcpy(r->data + pos, pad, sizeof pad);
        r->head += r->size - pos;
        pos = 0;
    }
    uint32_t hdr[2] = {(uint32_t)(TP_RECORD_HEADER + payload), kind};
    memcpy(r->data + pos, hdr, sizeof hdr);
    memset(r->data + pos + TP_RECORD_HEADER + payload, 0, rec - TP_RECORD_HEADER - payload);
    r->head += rec;
    r->seq++;
    *p = r->data + pos + TP_RECORD_HEADER;
    return KILN_OK;
}

kiln_result tp_ring_write(struct tp_ring *r, uint32_t kind, const void *payload, size_t n, uint64_t timeout_ns)
{
    void *p;
    KILN_TRY(tp_ring_reserve(r, kind, n, timeout_ns, &p));
    if (n)
        memcpy(p, payload, n);
    return KILN_OK;
}

void tp_ring_publish(struct tp_ring *r)
{
    if (r->head == r->published)
        return;
    atomic_store_explicit(&r->ctl->submitted_seq, r->seq, memory_order_relaxed);
    atomic_store_explicit(&r->ctl->head, r->head, memory_order_release);
    r->published = r->head;
    r->published_seq = r->seq;
    if (ring_bell(&r->ctl->consumer_parked))
        r->wakes++;
}

/* Consumer: reads head once and checks it; true when there is a record. */
static kiln_result load_head(struct tp_ring *r)
{
    uint64_t h = atomic_load_explicit(&r->ctl->head, memory_order_acquire);
    if (h < r->head_seen || h - r->tail > r->size || (h & 7))
        BREAK(r, "head %llu is not a cursor from %llu to %llu (the last one seen, a ring past the tail), 8-aligned",
              (unsigned long long)h, (unsigned long long)r->head_seen, (unsigned long long)(r->tail + r->size));
    r->head_seen = h;
    return KILN_OK;
}

static bool readable(struct tp_ring *r)
{
    if (load_head(r) < 0)
        return true;   /* broken: stop waiting */
    return r->head_seen != r->tail;
}

kiln_result tp_ring_read(struct tp_ring *r, void *dst, size_t cap, struct tp_record *rec)
{
    memset(rec, 0, sizeof *rec);
    if (r->broken)
        return broken_error(r);
    for (;;) {
        if (r->head_seen == r->tail) {
            KILN_TRY(load_head(r));
            if (r->head_seen == r->tail)
                return KILN_ERR_PENDING;
        }
        uint64_t pos = r->tail & r->mask, avail = r->head_seen - r->tail, contiguous = r->size - pos;
        uint32_t hdr[2];
        memcpy(hdr, r->data + pos, sizeof hdr);   /* copied out: checked and used from here only */
        uint32_t size = hdr[0], kind = hdr[1];
        if (kind == TP_RECORD_PAD) {
            if (size != contiguous || size > avail)
                BREAK(r, "pad at cursor %llu: size %u, but the wrap is %llu bytes away and %llu are published",
                      (unsigned long long)r->tail, size, (unsigned long long)contiguous, (unsigned long long)avail);
            r->tail += size;
            continue;
        }
        if (kind > r->max_kind)
            BREAK(r, "record at cursor %llu: kind %u is not a kind of this ring (1 to %u)", (unsigned long long)r->tail,
                  kind, r->max_kind);
        if (size < TP_RECORD_HEADER || align8(size) > KILN_MIN(avail, contiguous))
            BREAK(r, "record at cursor %llu: size %u is not from %u to %llu (published bytes, and bytes to the wrap)",
                  (unsigned long long)r->tail, size, TP_RECORD_HEADER,
                  (unsigned long long)KILN_MIN(avail, contiguous));
        rec->kind = kind;
        rec->size = size - TP_RECORD_HEADER;
        if (cap < rec->size)
            return KILN_RAISE(KILN_ERR_LIMIT,
                              "a record of %u payload bytes does not fit a buffer of %zu bytes; it stays in the ring",
                              rec->size, cap);
        if (rec->size)
            memcpy(dst, r->data + pos + TP_RECORD_HEADER, rec->size);
        r->tail += align8(size);
        rec->end = r->tail;
        rec->seq = ++r->applied_seq;
        atomic_store_explicit(&r->ctl->applied_seq, r->applied_seq, memory_order_relaxed);
        atomic_store_explicit(&r->ctl->applied, r->tail, memory_order_release);
        return KILN_OK;
    }
}

kiln_result tp_ring_retire(struct tp_ring *r, const struct tp_record *last)
{
    if (r->broken)
        return broken_error(r);
    uint64_t cursor = last->end;
    if (cursor < r->retired || cursor > r->tail || last->seq < r->retired_seq || last->seq > r->applied_seq ||
        (cursor == r->retired) != (last->seq == r->retired_seq))
        return KILN_RAISE(KILN_ERR_INVALID,
                          "retire up to record %llu at cursor %llu: not a record read and not retired (records %llu "
                          "to %llu, cursors %llu to %llu)",
                          (unsigned long long)last->seq, (unsigned long long)cursor,
                          (unsigned long long)r->retired_seq, (unsigned long long)r->applied_seq,
                          (unsigned long long)r->retired, (unsigned long long)r->tail);
    if (cursor == r->retired)
        return KILN_OK;
    r->retired = cursor;
    r->retired_seq = last->seq;
    atomic_store_explicit(&r->ctl->retired_seq, r->retired_seq, memory_order_relaxed);
    atomic_store_explicit(&r->ctl->retired, cursor, memory_order_release);
    if (ring_bell(&r->ctl->producer_parked))
        r->wakes++;
    return KILN_OK;
}

kiln_result tp_ring_wait(struct tp_ring *r, uint64_t timeout_ns)
{
    if (r->broken)
        return broken_error(r);
    if (r->head_seen != r->tail)
        return KILN_OK;
    return park_until(r, &r->ctl->consumer_parked, readable, timeout_ns, "a record");
}

/* ---- events --------------------------------------------------------------------------- */

void tp_events_init(struct tp_events *e, struct tp_control *c)
{
    memset(e, 0, sizeof *e);
    e->c = c;
}

bool tp_event_post(struct tp_events *e, const struct tp_event *ev)
{
    uint64_t tail = atomic_load_explicit(&e->c->event_tail, memory_order_acquire);
    /* A tail outside [head - slots, head] is the taker's scribble: the ring
     * counts as full, so nothing is overwritten that might still be read. */
    if (tail > e->head || e->head - tail >= TP_EVENT_SLOTS || !ev->kind || ev->size > TP_EVENT_DATA) {
        atomic_fetch_add_explicit(&e->c->event_dropped, 1, memory_order_relaxed);
        atomic_store_explicit(&e->c->event_full, 1, memory_order_relaxed);
        return false;
    }
    memcpy(&e->c->events[e->head % TP_EVENT_SLOTS], ev, sizeof *ev);
    e->head++;
    atomic_store_explicit(&e->c->event_head, e->head, memory_order_release);
    return true;
}

kiln_result tp_event_take(struct tp_events *e, struct tp_event *ev)
{
    memset(ev, 0, sizeof *ev);
    if (e->broken)
        return KILN_RAISE(KILN_ERR_IO, "event ring broken: %s", e->why);
    uint64_t head = atomic_load_explicit(&e->c->event_head, memory_order_acquire);
    if (head == e->tail)
        return KILN_ERR_PENDING;
    struct tp_event copy;
    if (head > e->tail && head - e->tail <= TP_EVENT_SLOTS) {
        memcpy(&copy, &e->c->events[e->tail % TP_EVENT_SLOTS], sizeof copy);
        if (copy.kind && copy.size <= TP_EVENT_DATA) {
            *ev = copy;
            e->tail++;
            atomic_store_explicit(&e->c->event_tail, e->tail, memory_order_release);
            return KILN_OK;
        }
        snprintf(e->why, sizeof e->why, "event at %llu: kind %u, size %u (kinds from 1, sizes to %u)",
                 (unsigned long long)e->tail, copy.kind, copy.size, TP_EVENT_DATA);
    } else {
        snprintf(e->why, sizeof e->why, "event head %llu is not from %llu to %llu", (unsigned long long)head,
                 (unsigned long long)e->tail, (unsigned long long)(e->tail + TP_EVENT_SLOTS));
    }
    e->broken = true;
    log_debug("transport: event ring broken: %s", e->why);
    return KILN_RAISE(KILN_ERR_IO, "event ring broken: %s", e->why);
}
