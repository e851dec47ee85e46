/* SPDX-License-Identifier: MIT */
/*
 * client.c: a context whose calls run in a kiln server. Each rt_ops entry
 * encodes its call as the catalogue's record (pipe.h), posts it on the
 * connection's command stream (stream.c; context_create, before the
 * stream opens, goes as a frame) and waits for its reply on the return
 * ring; the context handle is the client's,
 * every other handle the server's (tagged with the server-side context's
 * serial, so they resolve nowhere else). api/ serializes calls per
 * context, so one call is in flight per connection.
 *
 * Waits (a ticket, a program, wait_idle) are made in slices of SLICE_NS:
 * between two, the context is let go (kctx.held), and a thread waiting to
 * enter it goes first (kctx.queued), so a long wait on one thread never
 * stalls another's calls on the same context by more than a slice.
 *
 * Bulk data past PIPE_INLINE_MAX goes through one memfd segment per
 * connection, grown as needed and announced (with a new serial) on the
 * transport's descriptor channel just before the request that first uses
 * it: an upload is one copy into it, a readback one copy out.
 *
 * A server that dies, stops beating or changes its epoch, or a connection
 * that breaks, makes this and every later call fail with
 * KILN_ERR_DEVICE_LOST naming the server and what happened; no call waits
 * on a dead server. A forked child's calls are refused (the connection is
 * the parent's).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/pool.h"
#include "kiln.h"
#include "pipe/pipe.h"
#include "program/program.h"
#include "remote.h"
#include "remote_private.h"
#include "transport/transport.h"

#define CONNECT_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)
#define SLICE_NS (2ull * 1000 * 1000)        /* a remote wait holds the context this long at most */
#define YIELD_NS (1ull * 1000 * 1000)        /* how long a wait between slices lets queued callers go first */
#define HUNG_LOOK_NS (100ull * 1000 * 1000)   /* how often a wait for an answer looks whether the server reads */
#define HUNG_TIMEOUT_MS 60000u               /* KILN_IPC_HUNG_TIMEOUT_MS: records unread this long: a hung server */
#define WAIT_SPIN_US 2000u                   /* a wait's answer is spun for this long (4 cores or more): a slice */

struct memo_iface {
    uint64_t id;
    kiln_program_interface iface;
};

/* The first run-ahead call that failed since the last synchronization
 * point, and how many did. */
struct deferred {
    uint32_t count;
    bool swap;          /* a node_set_program among them */
    uint32_t op;
    kiln_result result;
    uint64_t seq;
    char msg[512];
};

/* The byte sizes of the buffers and images this client made and has not
 * destroyed, by id: an open-addressed table (linear probing, removal by
 * shifting back, so no tombstones), for uploads that run ahead. */
struct sizes {
    struct sized {
        uint64_t id, bytes;   /* id 0: an empty slot */
    } *slot;
    uint32_t count, cap;   /* cap: 0 or a power of two */
};

static uint32_t sizes_home(const struct sizes *t, uint64_t id)
{
    return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
}

static const struct sized *sizes_find(const struct sizes *t, uint64_t id)
{
    for (uint32_t i = t->cap ? sizes_home(t, id) : 0; t->cap && t->slot[i].id; i = (i + 1) & (t->cap - 1))
        if (t->slot[i].id == id)
            return &t->slot[i];
    return NULL;
}

/* Out of memory only costs run-ahead: an id not kept is asked of the server. */
static void sizes_put(struct sizes *t, uint64_t id, uint64_t bytes)
{
    if (!id)
        return;
    if ((t->count + 1) * 4 > t->cap * 3) {
        uint32_t cap = t->cap ? t->cap * 2 : 64;
        struct sized *slot = calloc(cap, sizeof *slot), *old = t->slot;
        if (!slot)
            return;
        uint32_t old_cap = t->cap;
        *t = (struct sizes){.slot = slot, .cap = cap};
        for (uint32_t i = 0; i < old_cap; i++)
            if (old[i].id)
                sizes_put(t, old[i].id, old[i].bytes);
        free(old);
    }
    uint32_t i = sizes_home(t, id);
    while (t->slot[i].id && t->slot[i].id != id)
        i = (i + 1) & (t->cap - 1);
    t->count += !t->slot[i].id;
    t->slot[i] = (struct sized){id, bytes};
}

static void sizes_drop(struct sizes *t, uint64_t id)
{
    const struct sized *f = sizes_find(t, id);
    if (!f)
        return;
    uint32_t hole = (uint32_t)(f - t->slot), mask = t->cap - 1;
    t->slot[hole].id = 0;
    t->count--;
    for (uint32_t i = (hole + 1) & mask; t->slot[i].id; i = (i + 1) & mask) {
        uint32_t home = sizes_home(t, t->slot[i].id);
        if (((i - home) & mask) >= ((i - hole) & mask)) {   /* its home is at or before the hole: move it back */
            t->slot[hole] = t->slot[i];
            t->slot[i].id = 0;
            hole = i;
        }
    }
}

/* A node the client made and has not removed (the object of its handle
 * in rclient.nodes): its scheme, and its program's param words. */
struct rnode {
    uint64_t scheme;
    uint64_t program;       /* the program param_words are of (0 with PIPE_WORDS_UNKNOWN) */
    uint32_t param_words;   /* PIPE_WORDS_UNKNOWN: not known (its program was compiling, or swapped) */
    bool own_block;         /* its words are its program's own push_constant block's */
};

struct rclient {
    struct kctx base;            /* first: api/ sees a kctx; its ops (remote_ops) say it is remote */
    struct tp *tp;
    char where[160];             /* "kiln server at unix:/run/..." */
    struct srv *inproc;          /* the in-process server this holds, or NULL */
    uint64_t seq;
    struct bytes req, tail;      /* reused for every request */
    uint8_t *rep;
    size_t rep_cap;
    bool lost;
    kiln_result lost_code;       /* what every call returns once lost */
    char lost_why[512];
    struct stream st;            /* the command stream, once open (st.live) */
    pid_t pid;                   /* the process that made it: a forked child may not use it */
    struct tp_segment seg;       /* fd -1: none yet */
    uint64_t seg_serial;         /* the serial it was announced with */
    bool have_caps;
    kiln_caps caps;
    struct memo_iface *ifaces;   /* interfaces of programs found ready */
    uint32_t iface_count, iface_cap;
    bool stats_on, stats_log;
    bool sync;                   /* KILN_SYNC: a submit waits for its ticket */
    uint32_t wait_spin_us;       /* KILN_IPC_WAIT_SPIN_US: how long a wait's answer is spun for */
    uint64_t hung_ns;            /* KILN_IPC_HUNG_TIMEOUT_MS */
    struct deferred deferred;    /* run-ahead errors not yet reported */
    uint64_t deferred_seq;       /* the last run-ahead call whose error came */
    /* The client mints its scheme and node handles (pipe_rec_scheme) from
     * pools of the server context's serial and floor, as the server's own
     * pools would: so it knows which are live, and makes them without
     * waiting. A scheme's object is rc itself; a node's its struct rnode. */
    struct pool schemes, nodes;
    struct sizes sizes;          /* its buffers' and images' bytes */
    uint64_t tickets;            /* its newest ticket: it numbers them (pipe_rec_submit) */
    bool sent;                   /* the last request built went out */
    char *stats_file;
    struct pipe_stats stats;     /* since the last summary */
};

static struct rclient *rc_of(struct kctx *c) { return (struct rclient *)c; }

static kiln_result lost(struct rclient *rc)
{
    return KILN_RAISE(rc->lost_code, "%s: %s", rc->where, rc->lost_why);
}

/* The connection is over, for the reason just raised: KILN_ERR_PROTOCOL
 * when the server broke the protocol (a reply to no call, a broken ring),
 * else KILN_ERR_DEVICE_LOST (it died, stopped, hung, was replaced, or the
 * socket broke). Every later call says the same. */
static kiln_result lose(struct rclient *rc, const char *what)
{
    if (!rc->lost) {
        rc->lost = true;
        rc->lost_code = err_last_code() == KILN_ERR_PROTOCOL ? KILN_ERR_PROTOCOL : KILN_ERR_DEVICE_LOST;
        snprintf(rc->lost_why, sizeof rc->lost_why, "%s: %s", what, err_last());
    }
    return lost(rc);
}

/* ---- counters ------------------------------------------------------------------------- */

static void stats_flush(struct rclient *rc)
{
    pipe_stats_flush(&rc->stats, PIPE_SIDE_CLIENT, NULL, rc->stats_log, rc->stats_file);
}

static void count(struct rclient *rc, uint32_t op, size_t sent, size_t received, bool refused)
{
    enum pipe_class cls = pipe_op_class(op);
    rc->stats.calls[cls]++;
    rc->stats.bytes_sent[cls] += sent;
    rc->stats.bytes_received[cls] += received;
    rc->stats.refused += refused;
    if (op == PIPE_OP_scheme_submit && ++rc->stats.submits == PIPE_STATS_EVERY)
        stats_flush(rc);
}

/* ---- one call ------------------------------------------------------------------------- */

/* The request in rc->req: a record on the stream (or a record announcing
 * it, then a frame), or a frame before the stream opens. A record waits
 * for room in slices, taking the answers that came meanwhile (run-ahead
 * calls' errors), so a server blocked on a full return ring is never
 * waited for by a client blocked on a full command ring. */
static kiln_result drain(struct rclient *rc);
static kiln_result send_request(struct rclient *rc)
{
    if (!rc->st.live) {
        KILN_TRY(tp_send(rc->tp, rc->req.p, rc->req.len));
        rc->sent = true;
        return KILN_OK;
    }
    for (;;) {
        kiln_result r = stream_send(&rc->st, rc->tp, rc->req.p, rc->req.len, SLICE_NS);
        rc->sent = r == KILN_OK;
        if (r != KILN_ERR_TIMEOUT)
            return r;
        err_clear();
        KILN_TRY(drain(rc));
    }
}

/* One frame into rc->rep, grown to fit. */
static kiln_result receive_frame(struct rclient *rc, uint64_t timeout_ns, size_t *len)
{
    for (;;) {
        kiln_result r = tp_recv(rc->tp, rc->rep, rc->rep_cap, len, timeout_ns);
        if (r != KILN_ERR_LIMIT)
            return r;
        uint8_t *p = realloc(rc->rep, *len);
        if (!p)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a reply of %zu bytes", *len);
        rc->rep = p;
        rc->rep_cap = *len;
        err_clear();   /* the frame did not fit: no error of the call's */
    }
}

/* A record's message, or the frame it announces: *rep (valid until the
 * next receive) and *len. */
static kiln_result message(struct rclient *rc, uint32_t kind, const uint8_t **rep, size_t *len)
{
    if (kind == STREAM_MSG)
        return KILN_OK;
    uint64_t want;
    KILN_TRY(stream_announced(*rep, *len, &want));
    KILN_TRY(receive_frame(rc, STREAM_FRAME_WAIT_NS, len));
    if (*len != want)
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a reply frame of %zu bytes where its record said %llu",
                          *len, (unsigned long long)want);
    *rep = rc->rep;
    return KILN_OK;
}

/* The next answer: *rep (valid until the next receive) and *len. The
 * stream's wait watches the server's heartbeat and socket: a server
 * stopped, hung in every thread or gone is noticed within
 * KILN_IPC_PEER_TIMEOUT_MS. One whose heartbeat beats but which reads
 * none of the records waiting for it for KILN_IPC_HUNG_TIMEOUT_MS is
 * taken as hung (a long call's record was read when it began: its wait
 * never counts). */
static kiln_result receive(struct rclient *rc, const uint8_t **rep, size_t *len)
{
    if (!rc->st.live) {
        KILN_TRY(receive_frame(rc, UINT64_MAX, len));
        *rep = rc->rep;
        return KILN_OK;
    }
    const struct tp_ring_ctl *cmd = &rc->st.ctl->cmd;
    uint64_t seen = atomic_load_explicit(&cmd->applied_seq, memory_order_relaxed), since = time_now_ns();
    for (;;) {
        uint32_t kind;
        kiln_result r = stream_get(&rc->st, HUNG_LOOK_NS, &kind, rep, len);
        if (r != KILN_ERR_TIMEOUT) {
            KILN_TRY(r);
            return message(rc, kind, rep, len);
        }
        err_clear();
        uint64_t applied = atomic_load_explicit(&cmd->applied_seq, memory_order_relaxed), now = time_now_ns();
        if (applied != seen || applied >= rc->st.out.published_seq) {
            seen = applied;
            since = now;
        } else if (now - since > rc->hung_ns) {
            return KILN_RAISE(KILN_ERR_IO, "the server read none of this client's %llu waiting records for %llu ms "
                              "(KILN_IPC_HUNG_TIMEOUT_MS), though its heartbeat beats: hung",
                              (unsigned long long)(rc->st.out.published_seq - applied),
                              (unsigned long long)((now - since) / 1000000u));
        }
    }
}

/* An answer's head, checked against its length. */
static kiln_result parse(const uint8_t *rp, size_t len, struct pipe_rep *rep)
{
    if (len < sizeof *rep)
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a reply of %zu bytes", len);
    memcpy(rep, rp, sizeof *rep);
    if (rep->msg_size > len - sizeof *rep || rep->out_size != len - sizeof *rep - rep->msg_size || rep->result > 0 ||
        rep->result < KILN_ERR_PROTOCOL)
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: reply to call %llu (op %u), result %d, %u + %u bytes of %zu",
                          (unsigned long long)rep->seq, rep->op, rep->result, rep->msg_size, rep->out_size, len);
    return KILN_OK;
}

/* A swap run ahead was refused, and the caller has now been told: which
 * node kept its program the answer does not say, so every node's words
 * are asked of the server from then on (until its next swap). Until the
 * caller is told, a param word posted for the program a node was swapped
 * to is refused by the server rather than set on the old program's words
 * (pipe_rec_param.program), whenever the refusal came back. */
static void words_forget(struct rclient *rc)
{
    struct rnode *n;
    uint64_t id;
    for (uint32_t cur = 0; (n = pool_next(&rc->nodes, &cur, &id));)
        n->param_words = PIPE_WORDS_UNKNOWN, n->program = 0;
}

/* An answer that is not the one awaited: a run-ahead call's error, kept
 * for the next synchronization point. Anything else breaks the stream. */
static kiln_result defer(struct rclient *rc, const struct pipe_rep *rep, const uint8_t *rp, uint64_t before)
{
    if (rep->result >= 0 || rep->seq <= rc->deferred_seq || rep->seq >= before || !pipe_op_name(rep->op))
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: an answer to call %llu (op %u, result %d) where no "
                          "run-ahead call of that number can have failed", (unsigned long long)rep->seq, rep->op,
                          rep->result);
    rc->deferred_seq = rep->seq;
    rc->deferred.swap |= rep->op == PIPE_OP_node_set_program;
    if (!rc->deferred.count++) {
        rc->deferred.result = (kiln_result)rep->result;
        rc->deferred.seq = rep->seq;
        rc->deferred.op = rep->op;
        snprintf(rc->deferred.msg, sizeof rc->deferred.msg, "%.*s", (int)rep->msg_size,
                 (const char *)rp + sizeof *rep);
    }
    if (rc->stats_on)
        rc->stats.deferred++;
    return KILN_OK;
}

/* Takes every answer already in the return ring (run-ahead calls'
 * errors), waiting for none. */
static kiln_result drain(struct rclient *rc)
{
    for (;;) {
        uint32_t kind;
        const uint8_t *rp;
        size_t len;
        kiln_result r = stream_try_get(&rc->st, &kind, &rp, &len);
        if (r == KILN_ERR_PENDING)
            return KILN_OK;
        struct pipe_rep rep;
        if (r < 0 || message(rc, kind, &rp, &len) < 0 || parse(rp, len, &rep) < 0 || defer(rc, &rep, rp, rc->seq + 1) < 0)
            return lose(rc, "reading a run-ahead call's answer");
    }
}

/* A synchronization point's result: r, or, when r is a success and a
 * run-ahead call failed since the last one, that call's error, naming it. */
static kiln_result settle(struct rclient *rc, kiln_result r)
{
    if (r < 0 || !rc->deferred.count)
        return r;
    struct deferred d = rc->deferred;
    rc->deferred.count = 0;
    rc->deferred.swap = false;
    if (d.swap)
        words_forget(rc);
    char more[64] = "";
    if (d.count > 1)
        snprintf(more, sizeof more, " (and %u more run-ahead calls failed since)", d.count - 1);
    return KILN_RAISE(d.result, "an earlier call failed: %s (call %llu, run ahead): %s%s", pipe_op_name(d.op),
                      (unsigned long long)d.seq, d.msg, more);
}

/* Builds op's request from rec and rc->tail into rc->req. */
static kiln_result build(struct rclient *rc, uint32_t op, const void *rec, uint32_t flags, struct pipe_req *head)
{
    rc->sent = false;
    if (rc->pid != getpid())
        return KILN_RAISE(KILN_ERR_INVALID, "this remote context belongs to process %ld, not to this one (%ld): a "
                          "forked child makes a context of its own", (long)rc->pid, (long)getpid());
    if (rc->lost)
        return lost(rc);
    uint32_t rec_size = pipe_op_rec_size(op);
    *head = (struct pipe_req){.op = op, .rec_size = rec_size, .tail_size = (uint32_t)rc->tail.len, .flags = flags,
                              .seq = ++rc->seq};
    rc->req.len = 0;
    bytes_put(&rc->req, head, sizeof *head);
    bytes_put(&rc->req, rec, rec_size);
    bytes_put(&rc->req, rc->tail.p, rc->tail.len);
    rc->tail.len = 0;
    if (rc->req.oom || rc->tail.oom) {
        rc->req.oom = rc->tail.oom = false;
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a %s request", pipe_op_name(op));
    }
    return KILN_OK;
}

/* Posts op with its record, run ahead: no answer is waited for (on the
 * stream; before it, and under KILN_SYNC, it is an ordinary call). */
static kiln_result call(struct rclient *rc, uint32_t op, const void *rec, void *out, size_t out_cap, size_t *out_len);
static kiln_result post(struct rclient *rc, uint32_t op, const void *rec)
{
    if (!rc->st.live || rc->sync)
        return call(rc, op, rec, NULL, 0, NULL);
    struct pipe_req head;
    KILN_TRY(build(rc, op, rec, PIPE_REQ_POSTED, &head));
    if (send_request(rc) < 0 || drain(rc) < 0)
        return lose(rc, "sending a request");
    if (rc->stats_on && op < PIPE_OPS) {
        rc->stats.posted++;
        count(rc, op, rc->req.len + TP_FRAME_HEADER, 0, false);
    }
    return KILN_OK;
}

/* The answer to call seq, taking run-ahead calls' errors that come first. */
static kiln_result await(struct rclient *rc, uint64_t seq, const uint8_t **rp, size_t *len, struct pipe_rep *rep)
{
    for (;;) {
        if (receive(rc, rp, len) < 0)
            return lose(rc, "waiting for a reply");
        if (parse(*rp, *len, rep) < 0)
            return lose(rc, "reading a reply");
        if (rep->seq == seq)
            return KILN_OK;
        if (defer(rc, rep, *rp, seq) < 0)
            return lose(rc, "reading a reply");
    }
}

/* Sends op with its record and rc->tail, waits for the reply. A fixed
 * answer (out_len NULL) must be exactly out_cap bytes; otherwise up to
 * out_cap are copied and *out_len says how many came. */
static kiln_result call(struct rclient *rc, uint32_t op, const void *rec, void *out, size_t out_cap, size_t *out_len)
{
    struct pipe_req head;
    KILN_TRY(build(rc, op, rec, 0, &head));
    if (send_request(rc) < 0)
        return lose(rc, "sending a request");
    size_t len = 0;
    const uint8_t *rp;
    struct pipe_rep rep;
    /* A wait's answer comes when the device is done, a slice at most: the
     * client spins that long before it parks (waking from a futex costs
     * tens of microseconds), as a local wait on a fence may. */
    uint32_t spin = rc->st.in.spin_us;
    if (pipe_op_flags(op) & PIPE_F_WAITS)
        rc->st.in.spin_us = rc->wait_spin_us;
    kiln_result got = await(rc, head.seq, &rp, &len, &rep);
    rc->st.in.spin_us = spin;
    if (got < 0)
        return got;
    if (rep.op != op) {
        (void)KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: reply to call %llu (%s) is for op %u",
                         (unsigned long long)head.seq, pipe_op_name(op), rep.op);
        return lose(rc, "reading a reply");
    }
    if (rc->stats_on && op < PIPE_OPS)
        count(rc, op, rc->req.len + TP_FRAME_HEADER, len + TP_FRAME_HEADER, rep.result < 0);
    const uint8_t *msg = rp + sizeof rep, *o = msg + rep.msg_size;
    if (rep.result < 0)
        return KILN_RAISE((kiln_result)rep.result, "%.*s", (int)rep.msg_size, (const char *)msg);
    if (out_len) {
        *out_len = rep.out_size;
        memcpy(out, o, KILN_MIN(out_cap, rep.out_size));
    } else if (rep.out_size != out_cap) {
        (void)KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: %s answered %u bytes; %zu expected", pipe_op_name(op),
                         rep.out_size, out_cap);
        return lose(rc, "reading a reply");
    } else if (out_cap) {
        memcpy(out, o, out_cap);
    }
    return KILN_OK;
}

#define REC(op, rec) call(rc, PIPE_OP_##op, &(rec), NULL, 0, NULL)
#define ASK(op, rec, out) call(rc, PIPE_OP_##op, &(rec), (out), sizeof *(out), NULL)

/* ---- waits ------------------------------------------------------------------------------- */

/* Between two slices of a wait: the context let go; threads queued to
 * enter it take it first (for YIELD_NS at most), then it is taken back. */
static void between_slices(struct rclient *rc, uint64_t nap_ns)
{
    pthread_mutex_unlock(rc->base.held);
    uint64_t start = time_now_ns();
    if (nap_ns) {
        struct timespec ts = {(time_t)(nap_ns / 1000000000u), (long)(nap_ns % 1000000000u)};
        nanosleep(&ts, NULL);
    }
    while (atomic_load(&rc->base.queued) && time_now_ns() - start < YIELD_NS) {
        struct timespec ts = {0, 20 * 1000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(rc->base.held);
}

/* Waits for ticket, at most timeout_ns, a slice at a time. */
static kiln_result wait_ticket(struct rclient *rc, uint64_t ticket, uint64_t timeout_ns)
{
    uint64_t start = time_now_ns();
    for (;;) {
        uint64_t spent = time_now_ns() - start, left = timeout_ns > spent ? timeout_ns - spent : 0;
        struct pipe_rec_wait rec = {ticket, KILN_MIN(left, SLICE_NS)};
        kiln_result r = REC(ticket_wait, rec);
        if (r != KILN_ERR_TIMEOUT)
            return r;
        if (left <= SLICE_NS)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "ticket %llu not done within %llu ns", (unsigned long long)ticket,
                              (unsigned long long)timeout_ns);
        err_clear();
        between_slices(rc, 0);
    }
}

/* ---- the segment ------------------------------------------------------------------------- */

/* A segment of at least size bytes, announced to the server. */
static kiln_result segment(struct rclient *rc, uint64_t size, struct pipe_rec_range *rec)
{
    rec->via = PIPE_VIA_SEGMENT;
    if (size > TP_SEGMENT_MAX) {
        /* No segment holds it: the server refuses the range as the runtime
         * would (past the object's end), or names this limit. */
        rec->segment = 0;
        return KILN_OK;
    }
    if (rc->seg.fd < 0 || rc->seg.size < size) {
        uint64_t want = rc->seg.fd < 0 ? PIPE_INLINE_MAX : rc->seg.size;
        while (want < size)
            want *= 2;
        struct tp_segment s;
        KILN_TRY(tp_segment_create(&s, "kiln-remote-data", want, 0));
        if (rc->seg.fd >= 0)
            tp_segment_finish(&rc->seg);
        rc->seg = s;
        uint64_t ann[2] = {++rc->seg_serial, want};
        if (tp_send_fds(rc->tp, ann, sizeof ann, &rc->seg.fd, 1) < 0)
            return lose(rc, "announcing the data segment");
    }
    rec->segment = rc->seg_serial;
    if (rc->stats_on)
        rc->stats.segment_bytes += size;
    return KILN_OK;
}

/* The most bytes of data a request or reply carries inline: what fits a
 * record with room for its heads, up to PIPE_INLINE_MAX. */
static uint64_t inline_max(const struct rclient *rc)
{
    if (!rc->st.live)
        return PIPE_INLINE_MAX;
    size_t m = stream_record_max(&rc->st);
    return KILN_MIN((uint64_t)PIPE_INLINE_MAX, m > 4096 ? m - 4096 : 0);
}

/* Whether an upload of rec can run ahead: its bytes go inline (the
 * record holds a copy, so the caller may reuse its memory at once) into
 * an object this client made, within its size as the client knows it.
 * Anything else is answered, so its errors come at the call, exact. */
static bool upload_posts(const struct rclient *rc, uint32_t op, const struct pipe_rec_range *rec)
{
    const struct sized *known = sizes_find(&rc->sizes, rec->id);
    if (!known || rec->size > inline_max(rc))
        return false;
    if (op == PIPE_OP_image_upload)
        return rec->size == known->bytes;
    if (op == PIPE_OP_image_upload_part)
        return false;   /* the part's size is the server's to check: answered */
    return rec->offset <= known->bytes && rec->size <= known->bytes - rec->offset;
}

static kiln_result data_in(struct rclient *rc, uint32_t op, struct pipe_rec_range *rec, const void *data)
{
    if (!data && rec->size)
        return KILN_RAISE(KILN_ERR_INVALID, "data pointer is NULL");
    if (rec->size <= inline_max(rc)) {
        bytes_put(&rc->tail, data, rec->size);
        if (upload_posts(rc, op, rec))
            return post(rc, op, rec);
    } else {
        KILN_TRY(segment(rc, rec->size, rec));
        if (rec->segment)
            memcpy(rc->seg.map, data, rec->size);
    }
    return call(rc, op, rec, NULL, 0, NULL);
}

static kiln_result data_out(struct rclient *rc, uint32_t op, struct pipe_rec_range *rec, void *data)
{
    if (!data && rec->size)
        return KILN_RAISE(KILN_ERR_INVALID, "data pointer is NULL");
    if (rec->size <= inline_max(rc))
        return call(rc, op, rec, data, rec->size, NULL);
    KILN_TRY(segment(rc, rec->size, rec));
    KILN_TRY(call(rc, op, rec, NULL, 0, NULL));
    if (rec->segment)
        memcpy(data, rc->seg.map, rec->size);
    return KILN_OK;
}

/* ---- the client's schemes and nodes ---------------------------------------------------- */

/* The scheme of a handle the client minted, or the runtime's refusal of
 * it, at once, in its words (a stale, foreign or never-made handle). */
static kiln_result scheme_live(struct rclient *rc, kiln_scheme s)
{
    if (!pool_get(&rc->schemes, s.id))
        return KILN_RAISE(KILN_ERR_HANDLE, "scheme 0x%016llx: %s", (unsigned long long)s.id, pool_why(&rc->schemes, s.id));
    return KILN_OK;
}

static kiln_result node_live(struct rclient *rc, kiln_node n, struct rnode **out)
{
    if (!(*out = pool_get(&rc->nodes, n.id)))
        return KILN_RAISE(KILN_ERR_HANDLE, "node 0x%016llx: %s", (unsigned long long)n.id, pool_why(&rc->nodes, n.id));
    return KILN_OK;
}

static void node_drop(struct rclient *rc, uint64_t id) { free(pool_remove(&rc->nodes, id)); }

/* ---- the calls --------------------------------------------------------------------------- */

static kiln_result r_context_caps(struct kctx *c, kiln_caps *out)
{
    struct rclient *rc = rc_of(c);
    if (rc->stats_on)
        rc->have_caps ? rc->stats.memo_hits++ : rc->stats.memo_misses++;
    if (!rc->have_caps) {
        struct pipe_rec_none rec = {0};
        KILN_TRY(ASK(context_caps, rec, &rc->caps));
        rc->have_caps = true;
    }
    *out = rc->caps;
    return KILN_OK;
}

static kiln_result r_context_wait_idle(struct kctx *c)
{
    struct rclient *rc = rc_of(c);
    if (rc->tickets)   /* the long part in slices; the call itself then finds little left */
        KILN_TRY(wait_ticket(rc, rc->tickets, UINT64_MAX));
    struct pipe_rec_none rec = {0};
    return settle(rc, REC(context_wait_idle, rec));
}

static kiln_result r_context_stats_get(struct kctx *c, kiln_context_stats *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_none rec = {0};
    return ASK(context_stats_get, rec, out);
}

static kiln_result r_buffer_create(struct kctx *c, const kiln_buffer_desc *desc, kiln_buffer *out)
{
    struct rclient *rc = rc_of(c);
    kiln_buffer_desc d = kiln_buffer_desc_defaults(desc);
    struct pipe_rec_buffer rec = {.size = d.size, .usage = d.usage};
    pipe_put_str(&rc->tail, d.label, SIZE_MAX);
    rec.label_len = (uint32_t)rc->tail.len;
    KILN_TRY(ASK(buffer_create, rec, &out->id));
    sizes_put(&rc->sizes, out->id, d.size);
    return KILN_OK;
}

static kiln_result r_destroy_handle(struct rclient *rc, uint32_t op, uint64_t id)
{
    struct pipe_rec_handle rec = {id};
    KILN_TRY(call(rc, op, &rec, NULL, 0, NULL));
    if (op == PIPE_OP_buffer_destroy || op == PIPE_OP_image_destroy)
        sizes_drop(&rc->sizes, id);
    return KILN_OK;
}

static kiln_result r_buffer_destroy(struct kctx *c, kiln_buffer b)
{
    return r_destroy_handle(rc_of(c), PIPE_OP_buffer_destroy, b.id);
}

static kiln_result r_buffer_upload(struct kctx *c, kiln_buffer b, uint64_t off, const void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = b.id, .offset = off, .size = size};
    return data_in(rc_of(c), PIPE_OP_buffer_upload, &rec, data);
}

static kiln_result r_buffer_readback(struct kctx *c, kiln_buffer b, uint64_t off, void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = b.id, .offset = off, .size = size};
    return settle(rc_of(c), data_out(rc_of(c), PIPE_OP_buffer_readback, &rec, data));
}

static kiln_result r_image_create(struct kctx *c, const kiln_image_desc *desc, kiln_image *out)
{
    struct rclient *rc = rc_of(c);
    kiln_image_desc d = kiln_image_desc_defaults(desc);
    struct pipe_rec_image rec = {.width = d.width, .height = d.height, .depth = d.depth, .dims = d.dims,
                                 .format = (uint32_t)d.format, .usage = d.usage, .layers = d.layers,
                                 .levels = d.levels, .cube = d.cube != 0};
    pipe_put_str(&rc->tail, d.label, SIZE_MAX);
    rec.label_len = (uint32_t)rc->tail.len;
    KILN_TRY(ASK(image_create, rec, &out->id));
    sizes_put(&rc->sizes, out->id, (uint64_t)d.width * d.height * d.depth * kiln_format_size(d.format));
    return KILN_OK;
}

static kiln_result r_image_destroy(struct kctx *c, kiln_image i)
{
    return r_destroy_handle(rc_of(c), PIPE_OP_image_destroy, i.id);
}

static kiln_result r_image_upload(struct kctx *c, kiln_image i, const void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = i.id, .size = size};
    return data_in(rc_of(c), PIPE_OP_image_upload, &rec, data);
}

static kiln_result r_image_readback(struct kctx *c, kiln_image i, void *data, uint64_t size)
{
    struct pipe_rec_range rec = {.id = i.id, .size = size};
    return settle(rc_of(c), data_out(rc_of(c), PIPE_OP_image_readback, &rec, data));
}

/* A part travels in the range's offset (PIPE_PART), checked there: a
 * field past its bits is refused here, naming it. */
static kiln_result part_offset(const kiln_image_part *part, uint64_t *out)
{
    uint32_t layers = part->layers ? part->layers : 1;
    if (part->level > 0xffffu || part->layer > 0xffffffu || layers > 0xffffffu)
        return KILN_RAISE(KILN_ERR_INVALID, "image part: level %u, layer %u, layers %u; past any image's", part->level,
                          part->layer, layers);
    *out = PIPE_PART(part->level, part->layer, layers);
    return KILN_OK;
}

static kiln_result r_image_upload_part(struct kctx *c, kiln_image i, const kiln_image_part *part, const void *data,
                                       uint64_t size)
{
    struct pipe_rec_range rec = {.id = i.id, .size = size};
    KILN_TRY(part_offset(part, &rec.offset));
    return data_in(rc_of(c), PIPE_OP_image_upload_part, &rec, data);
}

static kiln_result r_image_readback_part(struct kctx *c, kiln_image i, const kiln_image_part *part, void *data,
                                         uint64_t size)
{
    struct pipe_rec_range rec = {.id = i.id, .size = size};
    KILN_TRY(part_offset(part, &rec.offset));
    return settle(rc_of(c), data_out(rc_of(c), PIPE_OP_image_readback_part, &rec, data));
}

/* The files the program desc d includes, read here, on the client's side,
 * as a local compile would read them, to be sent with it: the server reads
 * no file of its own for a client's program. The desc is checked first, by
 * the runtime's own checks (what cannot be encoded, arrays past kiln's
 * limits or NULL arrays, is refused here). On KILN_OK *files (owned:
 * prog_includes_free) holds *n. */
static kiln_result gather_includes(const kiln_program_desc *d, struct prog_include **files, uint32_t *n)
{
    struct prog_source src;
    KILN_TRY(prog_source_init(&src, d));
    uint64_t bytes;
    kiln_result r = prog_include_gather(&src, files, n, &bytes);
    prog_source_finish(&src);
    KILN_TRY(r);
    if (bytes > PROG_MAX_BUNDLE_BYTES) {
        prog_includes_free(*files, *n);
        return KILN_RAISE(KILN_ERR_LIMIT, "program %s: its included files hold %llu bytes; a kiln server takes at "
                          "most %u with a program", d->name, (unsigned long long)bytes, PROG_MAX_BUNDLE_BYTES);
    }
    return KILN_OK;
}

/* [u32 count] then per file its request, includer, [u32 relative], path,
 * bytes and refusal (strings; NULL where none). */
static void put_includes(struct rclient *rc, const struct prog_include *files, uint32_t n)
{
    bytes_put_u32(&rc->tail, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct prog_include *f = &files[i];
        pipe_put_str(&rc->tail, f->req, SIZE_MAX);
        pipe_put_str(&rc->tail, f->from, SIZE_MAX);
        bytes_put_u32(&rc->tail, f->relative);
        pipe_put_str(&rc->tail, f->path, SIZE_MAX);
        pipe_put_str(&rc->tail, f->content, f->len);
        pipe_put_str(&rc->tail, f->refused, SIZE_MAX);
    }
}

static kiln_result r_program_create(struct kctx *c, const kiln_program_desc *desc, kiln_program *out)
{
    struct rclient *rc = rc_of(c);
    if (!desc)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc is NULL");
    kiln_program_desc d = kiln_program_desc_defaults(desc);
    /* Everything that can refuse it, before any byte of its request is
     * written. */
    struct prog_include *files;
    uint32_t nfiles;
    KILN_TRY(gather_includes(&d, &files, &nfiles));
    struct pipe_rec_program rec = {.define_count = d.define_count, .include_dir_count = d.include_dir_count,
                                   .constant_count = d.constant_count, .optimize = d.optimize,
                                   .language = (uint32_t)d.language,
                                   .workgroup_size = {d.workgroup_size[0], d.workgroup_size[1], d.workgroup_size[2]}};
    /* A module in spirv travels as source's bytes. */
    const char *text = d.spirv ? (const char *)d.spirv : d.source;
    size_t text_len = d.spirv ? d.spirv_words * 4 : d.source_len;
    pipe_put_str(&rc->tail, text, text_len);
    pipe_put_str(&rc->tail, d.name, SIZE_MAX);
    pipe_put_str(&rc->tail, d.entry, SIZE_MAX);
    pipe_put_str(&rc->tail, d.preamble, SIZE_MAX);
    for (uint32_t i = 0; i < d.define_count; i++) {
        pipe_put_str(&rc->tail, d.defines[i].name, SIZE_MAX);
        pipe_put_str(&rc->tail, d.defines[i].value, SIZE_MAX);
    }
    for (uint32_t i = 0; i < d.include_dir_count; i++)
        pipe_put_str(&rc->tail, d.include_dirs[i], SIZE_MAX);
    bytes_put(&rc->tail, d.constants, (size_t)d.constant_count * sizeof d.constants[0]);
    put_includes(rc, files, nfiles);
    prog_includes_free(files, nfiles);
    rec.source_len = text_len > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)text_len;
    return ASK(program_create, rec, &out->id);
}

/* The interface of a program known ready, or NULL. */
static const kiln_program_interface *iface_known(struct rclient *rc, uint64_t id)
{
    for (uint32_t i = 0; i < rc->iface_count; i++)
        if (rc->ifaces[i].id == id)
            return &rc->ifaces[i].iface;
    return NULL;
}

/* A ready program's interface, kept: it is fixed for the life of its id
 * (a destroyed program's id never names another). Not kept when memory
 * runs out: asked again next time. */
static void memo_keep(struct rclient *rc, uint64_t id, const kiln_program_interface *iface)
{
    if (rc->iface_count == rc->iface_cap) {
        uint32_t cap = rc->iface_cap ? 2 * rc->iface_cap : 16;
        struct memo_iface *m = realloc(rc->ifaces, cap * sizeof *m);
        if (!m)
            return;
        rc->ifaces = m;
        rc->iface_cap = cap;
    }
    rc->ifaces[rc->iface_count++] = (struct memo_iface){id, *iface};
}

static void memo_forget(struct rclient *rc, uint64_t id)
{
    for (uint32_t i = 0; i < rc->iface_count; i++)
        if (rc->ifaces[i].id == id)
            rc->ifaces[i] = rc->ifaces[--rc->iface_count];
}

static kiln_result r_program_destroy(struct kctx *c, kiln_program p)
{
    struct rclient *rc = rc_of(c);
    KILN_TRY(r_destroy_handle(rc, PIPE_OP_program_destroy, p.id));
    memo_forget(rc, p.id);
    return KILN_OK;
}

static kiln_result r_program_status(struct kctx *c, kiln_program p, kiln_program_state *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_handle rec = {p.id};
    uint32_t st;
    KILN_TRY(ASK(program_status, rec, &st));
    *out = (kiln_program_state)st;
    return KILN_OK;
}

static kiln_result r_program_wait(struct kctx *c, kiln_program p)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_handle rec = {p.id};
    /* Asked after ever longer naps (the context let go between), then
     * waited for: the wait, on a compile that has ended, says how. */
    for (uint64_t nap = 50 * 1000;; nap = KILN_MIN(nap * 2, SLICE_NS)) {
        kiln_program_state st = KILN_PROGRAM_PENDING;
        KILN_TRY(ASK(program_status, rec, &st));
        if (st != KILN_PROGRAM_PENDING)
            break;
        between_slices(rc, nap);
    }
    kiln_program_interface iface;   /* a ready program's answer: memoized */
    KILN_TRY(settle(rc, ASK(program_wait, rec, &iface)));
    if (!iface_known(rc, p.id))
        memo_keep(rc, p.id, &iface);
    return KILN_OK;
}

static kiln_result r_program_log(struct kctx *c, kiln_program p, char *buf, size_t cap, size_t *len)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_list rec = {.id = p.id, .cap = cap > PIPE_OUT_MAX ? PIPE_OUT_MAX : (uint32_t)cap};
    /* out: [u64 the log's length][its first bytes, at most cap - 1] */
    size_t n = 0;
    uint8_t *tmp = mem_alloc(8 + (size_t)rec.cap);
    if (!tmp)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a program log");
    kiln_result r = call(rc, PIPE_OP_program_log, &rec, tmp, 8 + (size_t)rec.cap, &n);
    if (r == KILN_OK) {
        uint64_t full = 0;
        if (n >= 8)
            memcpy(&full, tmp, 8);
        size_t got = n >= 8 ? KILN_MIN(n - 8, (size_t)rec.cap) : 0;
        if (buf && cap) {
            size_t k = KILN_MIN(got, cap - 1);
            memcpy(buf, tmp + 8, k);
            buf[k] = 0;
        }
        if (len)
            *len = (size_t)full;
    }
    free(tmp);
    return r;
}

static kiln_result r_program_interface_get(struct kctx *c, kiln_program p, kiln_program_interface *out)
{
    struct rclient *rc = rc_of(c);
    const kiln_program_interface *known = iface_known(rc, p.id);
    if (rc->stats_on)
        known ? rc->stats.memo_hits++ : rc->stats.memo_misses++;
    if (known) {
        *out = *known;
        return KILN_OK;
    }
    struct pipe_rec_handle rec = {p.id};
    KILN_TRY(ASK(program_interface_get, rec, out));
    memo_keep(rc, p.id, out);
    return KILN_OK;
}

/* Made with the handle the client mints; answered (its errors are the
 * caller's at once). */
static kiln_result r_scheme_create(struct kctx *c, const kiln_scheme_desc *desc, kiln_scheme *out)
{
    struct rclient *rc = rc_of(c);
    kiln_scheme_desc d = kiln_scheme_desc_defaults(desc);
    struct pipe_rec_scheme rec = {0};
    KILN_TRY(pool_insert(&rc->schemes, rc, "scheme", &rec.id));
    pipe_put_str(&rc->tail, d.label, SIZE_MAX);
    rec.label_len = (uint32_t)rc->tail.len;
    uint64_t id = 0;
    kiln_result r = ASK(scheme_create, rec, &id);
    if (r == KILN_OK && id != rec.id) {
        (void)KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: scheme 0x%016llx made as 0x%016llx",
                         (unsigned long long)rec.id, (unsigned long long)id);
        r = lose(rc, "reading a reply");
    }
    if (r < 0) {
        pool_remove(&rc->schemes, rec.id);   /* as the server's pool does with a scheme not made */
        return r;
    }
    out->id = id;
    return KILN_OK;
}

/* Run ahead: the client knows its schemes. The scheme's nodes go with it. */
static kiln_result r_scheme_destroy(struct kctx *c, kiln_scheme s)
{
    struct rclient *rc = rc_of(c);
    KILN_TRY(scheme_live(rc, s));
    struct pipe_rec_handle rec = {s.id};
    KILN_TRY(post(rc, PIPE_OP_scheme_destroy, &rec));
    pool_remove(&rc->schemes, s.id);
    uint64_t id;
    struct rnode *n;
    for (uint32_t cur = 0; (n = pool_next(&rc->nodes, &cur, &id));)
        if (n->scheme == s.id)
            node_drop(rc, id);
    return KILN_OK;
}

/* Made with the handle the client mints: run ahead when the program is
 * ready (its interface memoized, which gives the node's param words);
 * otherwise answered. What only the server can refuse (a binding's
 * handle, its kind) is reported, run ahead, at the next synchronization
 * point; the node's handle is then stale. */
static kiln_result r_scheme_add_node(struct kctx *c, kiln_scheme s, const kiln_node_desc *desc, kiln_node *out)
{
    struct rclient *rc = rc_of(c);
    kiln_node_desc d = kiln_node_desc_defaults(desc);
    KILN_TRY(scheme_live(rc, s));
    if (d.binding_count > KILN_MAX_DESCRIPTORS)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: %u bindings, at most %d (KILN_MAX_DESCRIPTORS)",
                          d.binding_count, KILN_MAX_DESCRIPTORS);
    if (d.binding_count && !d.bindings)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: binding_count is %u but bindings is NULL", d.binding_count);
    if (d.param_count && !d.params)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: param_count %u with params NULL", d.param_count);
    if (d.param_count > KILN_MAX_PARAM_WORDS)
        return KILN_RAISE(KILN_ERR_LIMIT, "node desc: %u param words; a program has at most %d", d.param_count,
                          KILN_MAX_PARAM_WORDS);
    if (d.reach_count > KILN_MAX_REACHES)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: %u buffers reached, at most %d (KILN_MAX_REACHES)",
                          d.reach_count, KILN_MAX_REACHES);
    if (d.reach_count && !d.reaches)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: reach_count is %u but reaches is NULL", d.reach_count);
    struct rnode *n = mem_alloc(sizeof *n);
    if (!n)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a node");
    struct pipe_rec_node rec = {.scheme = s.id, .program = d.program.id, .binding_count = d.binding_count,
                                .param_count = d.param_count, .reach_count = d.reach_count};
    kiln_result r = pool_insert(&rc->nodes, n, "node", &rec.node);
    if (r < 0) {
        free(n);
        return r;
    }
    memcpy(rec.groups, d.groups, sizeof rec.groups);
    bytes_put(&rc->tail, d.bindings, (size_t)d.binding_count * sizeof d.bindings[0]);
    bytes_put(&rc->tail, d.params, (size_t)d.param_count * sizeof d.params[0]);
    bytes_put(&rc->tail, d.reaches, (size_t)d.reach_count * sizeof d.reaches[0]);
    pipe_put_str(&rc->tail, d.label, SIZE_MAX);
    const kiln_program_interface *iface = iface_known(rc, d.program.id);
    *n = (struct rnode){.scheme = s.id, .param_words = PIPE_WORDS_UNKNOWN};
    if (iface && rc->st.live && !rc->sync) {
        r = post(rc, PIPE_OP_scheme_add_node, &rec);
        n->program = d.program.id;
        n->param_words = iface->param_words;
        n->own_block = iface->own_push_block != 0;
    } else {
        struct pipe_node_made made;
        r = ASK(scheme_add_node, rec, &made);
        if (r == KILN_OK && made.id != rec.node) {
            (void)KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: node 0x%016llx made as 0x%016llx",
                             (unsigned long long)rec.node, (unsigned long long)made.id);
            r = lose(rc, "reading a reply");
        }
        n->program = made.param_words == PIPE_WORDS_UNKNOWN ? 0 : d.program.id;
        n->param_words = made.param_words;
        n->own_block = made.own_block != 0;
    }
    if (r < 0) {
        node_drop(rc, rec.node);   /* as the server's pool does with a node not made */
        return r;
    }
    out->id = rec.node;
    return KILN_OK;
}

/* Run ahead: the client numbers its tickets, and the server maps them
 * onto the device's timeline. A submit only the server can refuse (a
 * program that failed, a lost device) is reported at the next
 * synchronization point, such as the wait on this ticket. */
static kiln_result r_scheme_submit(struct kctx *c, kiln_scheme s, kiln_ticket *out)
{
    struct rclient *rc = rc_of(c);
    KILN_TRY(scheme_live(rc, s));
    struct pipe_rec_submit rec = {s.id, rc->tickets + 1};
    kiln_result r;
    if (rc->st.live && !rc->sync) {
        r = post(rc, PIPE_OP_scheme_submit, &rec);
    } else {
        uint64_t k = 0;
        r = ASK(scheme_submit, rec, &k);
        if (r == KILN_OK && k != rec.ticket) {
            (void)KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: submit numbered %llu answered %llu",
                             (unsigned long long)rec.ticket, (unsigned long long)k);
            r = lose(rc, "reading a reply");
        }
    }
    if (rc->sent)
        rc->tickets = rec.ticket;   /* taken by the server whatever became of the submit */
    KILN_TRY(r);
    if (out)
        out->value = rec.ticket;
    return rc->sync ? wait_ticket(rc, rec.ticket, UINT64_MAX) : KILN_OK;   /* KILN_SYNC: its error at its call */
}

static kiln_result r_scheme_stats_get(struct kctx *c, kiln_scheme s, kiln_scheme_stats *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_handle rec = {s.id};
    return ASK(scheme_stats_get, rec, out);
}

/* Run ahead: the client knows its nodes. */
static kiln_result r_node_remove(struct kctx *c, kiln_node n)
{
    struct rclient *rc = rc_of(c);
    struct rnode *known;
    KILN_TRY(node_live(rc, n, &known));
    struct pipe_rec_handle rec = {n.id};
    KILN_TRY(post(rc, PIPE_OP_node_remove, &rec));
    node_drop(rc, n.id);
    return KILN_OK;
}

/* Run ahead when the client knows the node's param words: a slot past
 * them is refused here, at once, as the server would. */
static kiln_result r_node_set_param(struct kctx *c, kiln_node n, uint32_t slot, uint32_t word)
{
    struct rclient *rc = rc_of(c);
    struct rnode *known;
    KILN_TRY(node_live(rc, n, &known));
    struct pipe_rec_param rec = {n.id, slot, word, known->program};
    if (known->param_words == PIPE_WORDS_UNKNOWN)
        return REC(node_set_param, rec);
    if (slot >= known->param_words)
        return KILN_RAISE(KILN_ERR_INVALID, "node 0x%016llx: param slot %u, slots are 0..%u%s", (unsigned long long)n.id,
                          slot, known->param_words - 1,
                          known->own_block ? " (the words of program's own push_constant block)" : "");
    return post(rc, PIPE_OP_node_set_param, &rec);
}

/* Run ahead when the program is ready (its interface memoized): the
 * node's param words become the program's. A swap only the server can
 * refuse (the program binds otherwise) is reported at the next
 * synchronization point. */
static kiln_result r_node_set_program(struct kctx *c, kiln_node n, kiln_program p)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_pair rec = {n.id, p.id};
    struct rnode *known;
    KILN_TRY(node_live(rc, n, &known));
    const kiln_program_interface *iface = iface_known(rc, p.id);
    if (!iface) {
        KILN_TRY(REC(node_set_program, rec));
        known->param_words = PIPE_WORDS_UNKNOWN;   /* another program's: asked of the server from now on */
        known->program = 0;
        return KILN_OK;
    }
    KILN_TRY(post(rc, PIPE_OP_node_set_program, &rec));
    known->program = p.id;
    known->param_words = iface->param_words;
    known->own_block = iface->own_push_block != 0;
    return KILN_OK;
}

/* A list answer: [u32 how many there are][u32 0][up to cap items]. */
static kiln_result list(struct rclient *rc, uint32_t op, uint64_t id, uint32_t first, void *out, uint32_t cap,
                        size_t item, uint32_t *count)
{
    uint32_t most = (uint32_t)((PIPE_OUT_MAX - 8) / item);
    struct pipe_rec_list rec = {.id = id, .first = first, .cap = cap > most ? most : cap};
    size_t bytes = 8 + (size_t)rec.cap * item, n = 0;
    uint8_t *tmp = mem_alloc(bytes);
    if (!tmp)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a list of %u", rec.cap);
    kiln_result r = call(rc, op, &rec, tmp, bytes, &n);
    if (r == KILN_OK) {
        uint32_t total = 0;
        if (n >= 8)
            memcpy(&total, tmp, 4);
        size_t got = n >= 8 ? (n - 8) / item : 0;
        if (out && got)
            memcpy(out, tmp + 8, KILN_MIN(got, (size_t)rec.cap) * item);
        if (count)
            *count = total;
    }
    free(tmp);
    return r;
}

static kiln_result r_node_get_params(struct kctx *c, kiln_node n, uint32_t *out, uint32_t cap, uint32_t *count)
{
    struct rnode *known;
    KILN_TRY(node_live(rc_of(c), n, &known));
    return settle(rc_of(c), list(rc_of(c), PIPE_OP_node_get_params, n.id, 0, out, out ? cap : 0, sizeof *out, count));
}

static kiln_result r_ticket_wait(struct kctx *c, kiln_ticket t, uint64_t timeout_ns)
{
    struct rclient *rc = rc_of(c);
    if (!t.value)
        return settle(rc, KILN_OK);
    if (t.value > rc->tickets)
        return KILN_RAISE(KILN_ERR_INVALID, "ticket %llu was never issued by this context (newest: %llu)",
                          (unsigned long long)t.value, (unsigned long long)rc->tickets);
    return settle(rc, wait_ticket(rc, t.value, timeout_ns));
}

static kiln_result r_archive_info_get(struct kctx *c, kiln_archive_info *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_none rec = {0};
    return ASK(archive_info_get, rec, out);
}

static kiln_result r_archive_files(struct kctx *c, uint32_t first, kiln_archive_file *out, uint32_t cap,
                                   uint32_t *count)
{
    return list(rc_of(c), PIPE_OP_archive_files, 0, first, out, out ? cap : 0, sizeof *out, count);
}

static kiln_result r_archive_tidy(struct kctx *c, const kiln_archive_tidy_desc *d, kiln_archive_tidy_result *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_tidy rec;
    memset(&rec, 0, sizeof rec);
    rec.desc = kiln_archive_tidy_desc_defaults(d);
    return ASK(archive_tidy, rec, out);
}

static kiln_result r_context_precompile(struct kctx *c, const kiln_precompile_desc *d, kiln_precompile_result *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_precompile rec = {kiln_precompile_desc_defaults(d).stall_s};
    return ASK(context_precompile, rec, out);
}

static kiln_result r_scheme_spec_events(struct kctx *c, kiln_scheme s, kiln_spec_event *out, uint32_t cap,
                                        uint32_t *count)
{
    return list(rc_of(c), PIPE_OP_scheme_spec_events, s.id, 0, out, out ? cap : 0, sizeof *out, count);
}

static kiln_result r_node_is_specialized(struct kctx *c, kiln_node n, int *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_handle rec = {n.id};
    int32_t v;
    KILN_TRY(ASK(node_is_specialized, rec, &v));
    *out = v;
    return KILN_OK;
}

static kiln_result r_buffer_address(struct kctx *c, kiln_buffer b, uint64_t *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_handle rec = {b.id};
    return ASK(buffer_address, rec, out);
}

static kiln_result r_compiles_pending(struct kctx *c, uint32_t *out)
{
    struct rclient *rc = rc_of(c);
    struct pipe_rec_none rec = {0};
    return ASK(compiles_pending, rec, out);
}

static void r_destroy(struct kctx *c)
{
    struct rclient *rc = rc_of(c);
    if (rc->pid != getpid()) {
        /* A forked child's copy: it closes its descriptors and maps; the
         * connection and the heartbeat (a thread of the parent's) are
         * the parent's. */
        rc->st.beat.running = false;
        rc->lost = true;
        rc->stats.submits = rc->stats.calls[PIPE_CLASS_OBJECT] = 0;
    }
    if (rc->tp && !rc->lost) {
        struct pipe_rec_none rec = {0};
        (void)REC(context_destroy, rec);
    }
    if (rc->stats.submits || rc->stats.calls[PIPE_CLASS_OBJECT])
        stats_flush(rc);
    if (rc->deferred.count)   /* never lost: said where it can still be read */
        log_warn("%s: a remote context was destroyed with %u run-ahead call errors no later call reported; the "
                 "first: %s (call %llu): %s", rc->where, rc->deferred.count, pipe_op_name(rc->deferred.op),
                 (unsigned long long)rc->deferred.seq, rc->deferred.msg);
    if (rc->tp)
        tp_destroy(rc->tp);
    stream_finish(&rc->st);
    if (rc->inproc && rc->pid == getpid())   /* a child's copy of the in-process server is not to be freed */
        remote_inproc_release(rc->inproc);
    if (rc->seg.fd >= 0)
        tp_segment_finish(&rc->seg);
    free(rc->req.p);
    free(rc->tail.p);
    free(rc->rep);
    free(rc->ifaces);
    uint64_t id;
    for (uint32_t cur = 0; pool_next(&rc->nodes, &cur, &id);)
        node_drop(rc, id);
    free(rc->sizes.slot);
    pool_finish(&rc->nodes);
    pool_finish(&rc->schemes);
    free(rc->stats_file);
    pthread_mutex_destroy(&rc->base.lock);
    free(rc);
}

static const struct rt_ops remote_ops = {
#define X(name, record, class, flags, params) .name = r_##name,
#define L(name, record, class, flags)
#include "context/calls.def"
#undef L
#undef X
    .destroy = r_destroy,
};

/* ---- making one ------------------------------------------------------------------------- */

const char *remote_target(const kiln_context_desc *desc)
{
    const char *t = desc && desc->remote ? desc->remote : NULL;
    if (!t) {
        /* The environment never sends a mock context away: the mock is a
         * device of this process, for tests of kiln's own logic. */
        const struct kb_backend *b = kb_backend_of(desc ? desc->backend : KILN_BACKEND_DEFAULT);
        if (b && !b->remote_by_env)
            return NULL;
        t = getenv("KILN_REMOTE");
    }
    if (!t || !*t || !strcmp(t, "local"))
        return NULL;
    return t;
}

/* The client's environment decides the per-context settings it sends
 * (the server's environment is not the application's). */
static void env_into(kiln_context_desc *d)
{
    if (!d->specialization && getenv("KILN_SPECIALIZATION") && *getenv("KILN_SPECIALIZATION"))
        d->specialization = env_flag("KILN_SPECIALIZATION", 1) ? 1 : -1;
    if (!d->skip_log && getenv("KILN_SKIP_LOG") && *getenv("KILN_SKIP_LOG"))
        d->skip_log = env_flag("KILN_SKIP_LOG", 0) ? 1 : -1;
    if (!d->spec_verify && getenv("KILN_SPEC_VERIFY") && *getenv("KILN_SPEC_VERIFY"))
        d->spec_verify = env_flag("KILN_SPEC_VERIFY", 0) ? 1 : -1;
    if (!d->device_timeout_ms) {
        double s = env_seconds("KILN_DEVICE_TIMEOUT_S", 0);
        if (s > 0)
            d->device_timeout_ms = s * 1e3 >= UINT32_MAX ? UINT32_MAX : (uint32_t)(s * 1e3) + (s * 1e3 < 1);
    }
}

static kiln_result hello(struct rclient *rc, const kiln_context_desc *desc)
{
    kiln_context_desc d = kiln_context_desc_defaults(desc);
    env_into(&d);
    struct pipe_rec_context rec = {
        .backend = d.backend, .validation = d.validation, .pending = d.pending,
        .compile_threads = d.compile_threads, .specialization = d.specialization,
        .device_timeout_ms = d.device_timeout_ms, .archive = d.archive, .archive_qa = d.archive_qa,
        .archive_max_size = d.archive_max_size, .giant_words = d.giant_words, .giant_compiles = d.giant_compiles,
        .alone_tries = d.alone_tries, .slow_compile_s = d.slow_compile_s, .worker_caches = d.worker_caches,
        .spec_verify = d.spec_verify, .skip_log = d.skip_log, .force_staging = d.force_staging,
        .check = d.check, .robust = d.robust, .version = PIPE_VERSION};
    /* The environment's device-shaping variables are this process's, not
     * the server's: only what the desc itself sets travels. */
    pipe_put_str(&rc->tail, d.device, SIZE_MAX);
    pipe_put_str(&rc->tail, d.archive_dir, SIZE_MAX);
    pipe_put_str(&rc->tail, d.archive_readonly, SIZE_MAX);
    pipe_put_str(&rc->tail, d.trace_path, SIZE_MAX);
    if (!desc || !desc->backend)
        rec.backend = 0;   /* "the server's" */
    struct pipe_context_made made;
    KILN_TRY(ASK(context_create, rec, &made));
    pool_init_floor(&rc->schemes, POOL_SCHEME, made.serial, made.floor);
    pool_init_floor(&rc->nodes, POOL_NODE, made.serial, made.floor);
    return KILN_OK;
}

/* Moves the connection onto the command stream: the segment announced on
 * the descriptor channel, then PIPE_OP_STREAM (the last frame), whose
 * answer is the server's epoch. */
static kiln_result open_stream(struct rclient *rc)
{
    if (stream_make(&rc->st) < 0) {
        /* No shared memory to be had (RLIMIT_FSIZE, no memfd or shm):
         * the connection goes on as frames, as it began. */
        log_info("%s: no command stream (%s): calls go as frames on the socket", rc->where, err_last());
        err_clear();
        return KILN_OK;
    }
    uint32_t ann[4] = {STREAM_MAGIC, 0, 0, 0};
    uint64_t size = rc->st.seg.size, epoch = 0;
    memcpy(&ann[2], &size, sizeof size);
    if (tp_send_fds(rc->tp, ann, sizeof ann, &rc->st.seg.fd, 1) < 0)
        return lose(rc, "announcing the command stream");
    KILN_TRY(call(rc, PIPE_OP_STREAM, NULL, &epoch, sizeof epoch, NULL));
    if (stream_start(&rc->st, epoch, tp_peer_fd(rc->tp)) < 0)
        return lose(rc, "starting the command stream");
    return KILN_OK;
}

kiln_result remote_create(const char *target, const kiln_context_desc *desc, uint32_t serial, struct kctx **out)
{
    struct rclient *rc = mem_calloc(1, sizeof *rc);
    if (!rc)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a remote context");
    rc->base.ops = &remote_ops;
    rc->base.serial = serial;
    rc->seg.fd = -1;
    stream_init(&rc->st);
    rc->pid = getpid();
    pthread_mutex_init(&rc->base.lock, NULL);
    rc->base.held = &rc->base.lock;
    rc->sync = env_flag("KILN_SYNC", 0);
    rc->hung_ns = env_u64("KILN_IPC_HUNG_TIMEOUT_MS", HUNG_TIMEOUT_MS) * 1000000ull;
    /* Spinning takes a core: only where there are cores to spare (on two,
     * a spinning client would slow the device work it waits for when the
     * device is the CPU), as CUDA's automatic schedule does. */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    rc->wait_spin_us = (uint32_t)KILN_MIN(env_u64("KILN_IPC_WAIT_SPIN_US", cpus >= 4 ? WAIT_SPIN_US : TP_SPIN_US_DEFAULT),
                                          1000000u);
    kiln_result r;
    if (!strcmp(target, "inproc")) {
        snprintf(rc->where, sizeof rc->where, "kiln server in this process");
        struct tp *mine = NULL;
        r = remote_inproc_connect(desc, &rc->inproc, &mine);
        rc->tp = mine;
    } else {
        const char *path = !strncmp(target, "unix:", 5) ? target + 5 : target;
        snprintf(rc->where, sizeof rc->where, "kiln server at unix:%s", path);
        r = path[0] == '/' ? tp_connect(path, CONNECT_TIMEOUT_NS, &rc->tp)
                           : KILN_RAISE(KILN_ERR_INVALID, "remote '%s': not \"unix:PATH\" with an absolute PATH, "
                                        "nor \"inproc\"", target);
    }
    if (r == KILN_OK) {
        const char *sv = getenv("KILN_PIPE_STATS"), *sf = getenv("KILN_PIPE_STATS_FILE");
        rc->stats_log = sv && *sv && env_flag("KILN_PIPE_STATS", 0);
        rc->stats_file = sf && *sf ? strdup(sf) : NULL;
        rc->stats_on = rc->stats_log || rc->stats_file;
        r = hello(rc, desc);
        if (r == KILN_OK)
            r = open_stream(rc);
        if (r == KILN_ERR_DEVICE_LOST)   /* the server hung up at once: say who */
            r = KILN_RAISE(KILN_ERR_IO, "%s", kiln_last_error());
    }
    if (r < 0) {
        char why[1024];
        snprintf(why, sizeof why, "%s", kiln_last_error());
        rc->lost = true;   /* nothing to say goodbye to */
        rc->lost_code = KILN_ERR_DEVICE_LOST;
        r_destroy(&rc->base);
        return KILN_RAISE(r, "%s", why);
    }
    *out = &rc->base;
    return KILN_OK;
}
