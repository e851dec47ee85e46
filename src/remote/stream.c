/* SPDX-License-Identifier: MIT */
/*
 * stream.c: a connection's command stream in shared memory. After the
 * socket handshake (the hello, then context_create as one frame each way)
 * the client makes one sealed segment holding a control page and two
 * rings (transport.h): the command ring, which the client writes and the
 * server reads, and the return ring, the other way. Every later request is
 * a record in the command ring and its reply a record in the return ring,
 * each rung with the doorbell (spin, then park). A message too big for a
 * record (half the ring) goes as one frame on the socket, and a record of
 * kind *_FRAME says so, so the order of messages is the ring's alone.
 *
 * The control page is live: the rings' cursors and sequence numbers move
 * with every record, the server writes its epoch (a random number of its
 * run, nonzero; a client that sees it change takes the server as
 * replaced) and the generation (1: the rings are never reset), and each
 * side's heartbeat beats on a thread of its own, watched by the other
 * side between its waits' slices. Both sides copy a record out of the
 * ring, then check it (ring.c), and retire it at once: nothing is read
 * from shared memory twice.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "remote_private.h"

static uint64_t ring_size_from_env(void)
{
    uint64_t kib = env_u64("KILN_IPC_RING_KIB", STREAM_RING_KIB_DEFAULT), size = TP_RING_MIN;
    while (size < kib * 1024 && size < STREAM_RING_MAX)
        size *= 2;
    return size;
}

static kiln_result rings_init(struct stream *st, bool server)
{
    struct tp_control *c = st->ctl;
    uint8_t *base = st->seg.map;
    struct tp_ring *cmd = server ? &st->in : &st->out, *ret = server ? &st->out : &st->in;
    KILN_TRY(tp_ring_init(cmd, &c->cmd, base + st->layout.cmd_offset, st->layout.cmd_size, STREAM_KINDS));
    KILN_TRY(tp_ring_init(ret, &c->stage, base + st->layout.stage_offset, st->layout.stage_size, STREAM_KINDS));
    st->in.peer = &st->peer;
    st->out.peer = &st->peer;
    st->server = server;
    return KILN_OK;
}

void stream_init(struct stream *st)
{
    memset(st, 0, sizeof *st);
    st->seg.fd = -1;
}

kiln_result stream_make(struct stream *st)
{
    uint64_t size = ring_size_from_env();
    st->layout = tp_layout_of(size, size);
    KILN_TRY(tp_segment_create(&st->seg, "kiln-stream", st->layout.total, 0));
    st->ctl = (struct tp_control *)st->seg.map;
    kiln_result r = tp_control_init(st->ctl, size, size);
    if (r == KILN_OK)
        r = rings_init(st, false);
    if (r < 0)
        stream_finish(st);
    return r;
}

kiln_result stream_adopt(struct stream *st, int fd, uint64_t size, uint64_t epoch)
{
    KILN_TRY(tp_segment_adopt(&st->seg, fd, size, 0));   /* sealed: no client can cut it under the server */
    st->ctl = (struct tp_control *)st->seg.map;
    kiln_result r = tp_control_layout(st->ctl, st->seg.size, &st->layout);
    if (r == KILN_OK && (st->layout.cmd_size > STREAM_RING_MAX || st->layout.stage_size > STREAM_RING_MAX))
        r = KILN_RAISE(KILN_ERR_LIMIT, "stream: rings of %llu and %llu bytes; at most %llu each",
                       (unsigned long long)st->layout.cmd_size, (unsigned long long)st->layout.stage_size,
                       (unsigned long long)STREAM_RING_MAX);
    if (r == KILN_OK)
        r = rings_init(st, true);
    if (r < 0) {
        stream_finish(st);
        return r;
    }
    st->epoch = epoch;
    atomic_store(&st->ctl->generation, 1);
    atomic_store(&st->ctl->epoch, epoch);
    return KILN_OK;
}

kiln_result stream_start(struct stream *st, uint64_t epoch, int peer_fd)
{
    struct tp_control *c = st->ctl;
    /* The client watches the server's heartbeat, the server the
     * client's, each with its own timeout (a client paused in a debugger
     * keeps its objects far longer than a server may stand still). */
    uint64_t timeout_ns = st->server ? env_u64("KILN_IPC_CLIENT_TIMEOUT_MS", STREAM_CLIENT_TIMEOUT_MS_DEFAULT) * 1000000ull
                                     : 0;
    tp_peer_init(&st->peer, st->server ? &c->client_heartbeat : &c->server_heartbeat, peer_fd, timeout_ns);
    if (!st->server) {
        st->epoch = epoch;
        if (atomic_load(&c->epoch) != epoch)
            return KILN_RAISE(KILN_ERR_IO, "protocol mismatch: the server said epoch %llx, its control page %llx",
                              (unsigned long long)epoch, (unsigned long long)atomic_load(&c->epoch));
        KILN_TRY(tp_heartbeat_start(&st->beat, &c->client_heartbeat, 0));
    }
    st->live = true;
    return KILN_OK;
}

void stream_finish(struct stream *st)
{
    if (!st->server)
        tp_heartbeat_stop(&st->beat);
    if (st->seg.fd >= 0)
        tp_segment_finish(&st->seg);
    free(st->buf);
    stream_init(st);
}

size_t stream_record_max(const struct stream *st)
{
    return TP_RECORD_MAX(st->out.size) - TP_RECORD_HEADER;
}

/* r, a ring's failure, as KILN_ERR_PROTOCOL when the peer broke the ring. */
static kiln_result broken(const struct stream *st, kiln_result r)
{
    if (r >= 0 || r == KILN_ERR_TIMEOUT || r == KILN_ERR_PENDING || (!st->in.broken && !st->out.broken))
        return r;
    return KILN_RAISE(KILN_ERR_PROTOCOL, "%s", err_last());
}

kiln_result stream_put(struct stream *st, uint32_t kind, const void *a, size_t na, const void *b, size_t nb,
                       uint64_t timeout_ns)
{
    void *p;
    KILN_TRY(broken(st, tp_ring_reserve(&st->out, kind, na + nb, timeout_ns, &p)));
    memcpy(p, a, na);
    if (nb)
        memcpy((uint8_t *)p + na, b, nb);
    tp_ring_publish(&st->out);
    return KILN_OK;
}

kiln_result stream_send(struct stream *st, struct tp *tp, const void *msg, size_t n, uint64_t timeout_ns)
{
    if (n <= stream_record_max(st))
        return stream_put(st, STREAM_MSG, msg, n, NULL, 0, timeout_ns);
    uint64_t len = n;   /* the record first: the reader may be parked on the ring, never on the socket */
    KILN_TRY(stream_put(st, STREAM_FRAME, &len, sizeof len, NULL, 0, timeout_ns));
    return tp_send(tp, msg, n);
}

kiln_result stream_announced(const uint8_t *msg, size_t len, uint64_t *want)
{
    *want = 0;
    if (len == sizeof *want)
        memcpy(want, msg, sizeof *want);
    if (len != sizeof *want || *want > TP_FRAME_MAX)
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a frame record of %zu bytes announcing %llu", len,
                          (unsigned long long)*want);
    return KILN_OK;
}

/* The epoch the client was told, still in the page: a server that
 * changed it is not the one the client spoke to. */
static kiln_result epoch_check(struct stream *st)
{
    uint64_t now = atomic_load_explicit(&st->ctl->epoch, memory_order_relaxed);
    if (st->server || now == st->epoch)
        return KILN_OK;
    return KILN_RAISE(KILN_ERR_IO, "the server's epoch changed from %llx to %llx: a restarted or replaced server",
                      (unsigned long long)st->epoch, (unsigned long long)now);
}

/* Reads the record ready in the ring (KILN_ERR_PENDING: none), copied
 * out into st->buf and retired. */
static kiln_result take(struct stream *st, uint32_t *kind, const uint8_t **msg, size_t *len)
{
    struct tp_record rec;
    kiln_result r = tp_ring_read(&st->in, st->buf, st->cap, &rec);
    if (r == KILN_ERR_LIMIT) {
        err_clear();
        uint8_t *p = realloc(st->buf, rec.size);
        if (!p)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a record of %u bytes", rec.size);
        st->buf = p;
        st->cap = rec.size;
        r = tp_ring_read(&st->in, st->buf, st->cap, &rec);
    }
    if (r != KILN_OK)
        return r;
    KILN_TRY(tp_ring_retire(&st->in, &rec));
    *kind = rec.kind;
    *msg = st->buf;
    *len = rec.size;
    return KILN_OK;
}

kiln_result stream_get(struct stream *st, uint64_t timeout_ns, uint32_t *kind, const uint8_t **msg, size_t *len)
{
    KILN_TRY(epoch_check(st));
    KILN_TRY(broken(st, tp_ring_wait(&st->in, timeout_ns)));
    KILN_TRY(epoch_check(st));
    kiln_result r = take(st, kind, msg, len);
    if (r == KILN_ERR_PENDING)   /* woken for nothing: the caller waits again */
        return KILN_RAISE(KILN_ERR_TIMEOUT, "no record yet");
    return broken(st, r);
}

kiln_result stream_try_get(struct stream *st, uint32_t *kind, const uint8_t **msg, size_t *len)
{
    KILN_TRY(epoch_check(st));
    return broken(st, take(st, kind, msg, len));
}

void stream_shrink(struct stream *st)
{
    if (st->cap > STREAM_BUF_KEEP) {
        free(st->buf);
        st->buf = NULL;
        st->cap = 0;
    }
}

uint64_t stream_epoch_new(void)
{
    uint64_t e = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&e, sizeof e, 1, f) != 1)
            e = 0;
        fclose(f);
    }
    e ^= time_now_ns() * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32;
    return e ? e : 1;
}
