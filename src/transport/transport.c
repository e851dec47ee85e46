/* SPDX-License-Identifier: MIT */
/*
 * transport.c: the transport object, an ops table with two
 * implementations: sockets between processes and queues inside one.
 *
 * Sockets: frames on a SOCK_STREAM socket through the frame reader (a
 * receive reads only while no whole frame is buffered, so the reader holds
 * at most one frame and a read's worth more), descriptors on a SOCK_DGRAM
 * socketpair through fdpass.c. Both sockets are non-blocking and every
 * wait is a poll with a deadline; the stream's hang-up is how a receive on
 * either socket learns that the peer is gone.
 *
 * In process: a shared block with one queue of frames and one of sideband
 * messages per direction, a mutex and a condition variable. Sends copy
 * (frames) or dup() (descriptors), so ownership is as over a socket; the
 * same size limits apply, and a direction holds at most TP_INPROC_QUEUED
 * bytes (a send waits for room, as a full socket buffer makes it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/transport.h"

#define TP_INPROC_QUEUED (4ull * TP_FRAME_MAX)
#define SOCK_CHUNK 65536

struct tp_ops {
    const char *name;
    kiln_result (*send)(struct tp *t, const void *data, size_t len);
    kiln_result (*recv)(struct tp *t, void *dst, size_t cap, size_t *len, uint64_t timeout_ns);
    kiln_result (*send_fds)(struct tp *t, const void *msg, size_t len, const int *fds, uint32_t n);
    kiln_result (*recv_fds)(struct tp *t, void *msg, size_t cap, size_t *len, int *fds, uint32_t n_cap,
                            uint32_t *n, uint64_t timeout_ns);
    void (*shutdown)(struct tp *t);
    void (*destroy)(struct tp *t);
    int (*peer_fd)(const struct tp *t);
};

struct tp {
    const struct tp_ops *ops;
    uint64_t send_timeout_ns;
    bool shut;   /* tp_shutdown was called: no more sending */
};

static uint64_t send_timeout(void)
{
    return env_u64("KILN_IPC_SEND_TIMEOUT_MS", TP_SEND_TIMEOUT_MS_DEFAULT) * 1000000ull;
}

static kiln_result shut_error(void) { return KILN_RAISE(KILN_ERR_IO, "this end of the transport was shut down"); }

/* ---- the wrappers: checks both implementations share ------------------------------------ */

const char *tp_name(const struct tp *t) { return t->ops->name; }

kiln_result tp_send(struct tp *t, const void *data, size_t len)
{
    if (len > TP_FRAME_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT, "a frame of %zu bytes is past the frame limit (%u bytes)", len,
                          TP_FRAME_MAX);
    if (t->shut)
        return shut_error();
    return t->ops->send(t, data, len);
}

kiln_result tp_recv(struct tp *t, void *dst, size_t cap, size_t *len, uint64_t timeout_ns)
{
    *len = 0;
    return t->ops->recv(t, dst, cap, len, KILN_MIN(timeout_ns, 1ull << 62));
}

kiln_result tp_send_fds(struct tp *t, const void *msg, size_t len, const int *fds, uint32_t n)
{
    if (len > TP_SIDEBAND_PAYLOAD)
        return KILN_RAISE(KILN_ERR_LIMIT, "a sideband message of %zu bytes is past the limit (%u)", len,
                          TP_SIDEBAND_PAYLOAD);
    if (n > TP_FDS_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT, "%u descriptors in one message: the limit is %u", n, TP_FDS_MAX);
    if (t->shut)
        return shut_error();
    return t->ops->send_fds(t, msg, len, fds, n);
}

kiln_result tp_recv_fds(struct tp *t, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap, uint32_t *n,
                        uint64_t timeout_ns)
{
    *len = 0;
    *n = 0;
    if (cap < TP_SIDEBAND_PAYLOAD || fd_cap < TP_FDS_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT,
                          "sideband buffers of %zu bytes and %u descriptors: a message may need %u and %u; "
                          "nothing was received",
                          cap, fd_cap, TP_SIDEBAND_PAYLOAD, TP_FDS_MAX);
    return t->ops->recv_fds(t, msg, cap, len, fds, fd_cap, n, KILN_MIN(timeout_ns, 1ull << 62));
}

void tp_shutdown(struct tp *t)
{
    if (!t->shut) {
        t->shut = true;
        t->ops->shutdown(t);
    }
}

void tp_destroy(struct tp *t)
{
    if (t)
        t->ops->destroy(t);
}

int tp_peer_fd(const struct tp *t) { return t->ops->peer_fd(t); }

/* ---- sockets ------------------------------------------------------------------------ */

struct tp_sock {
    struct tp base;
    int stream, dgram;           /* owned */
    struct tp_frame_reader rd;
    bool eof;                    /* the stream read its end: the peer shut down or closed */
    bool dead;                   /* a send was cut short: the outgoing stream is unframed */
};

static struct tp_sock *as_sock(struct tp *t) { return (struct tp_sock *)t; }

/* Waits for events on fd until deadline (absolute, time_now_ns). */
static kiln_result poll_until(int fd, short events, uint64_t deadline, const char *what)
{
    for (;;) {
        uint64_t now = time_now_ns();
        int ms = now >= deadline ? 0 : (int)KILN_MIN((deadline - now + 999999) / 1000000u, (uint64_t)60000);
        struct pollfd pf = {.fd = fd, .events = events};
        int n = poll(&pf, 1, ms);
        if (n > 0)
            return KILN_OK;
        if (n < 0 && errno != EINTR)
            return KILN_RAISE(KILN_ERR_IO, "poll to %s: %s", what, strerror(errno));
        if (n == 0 && time_now_ns() >= deadline)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "nothing came in time to %s", what);
    }
}

static kiln_result sock_send(struct tp *t, const void *data, size_t len)
{
    struct tp_sock *s = as_sock(t);
    if (s->dead)
        return KILN_RAISE(KILN_ERR_IO, "the stream is dead: an earlier send was cut short");
    uint8_t hdr[TP_FRAME_HEADER];
    KILN_TRY(tp_frame_header(hdr, len));
    size_t total = TP_FRAME_HEADER + len, done = 0;
    uint64_t deadline = time_now_ns() + t->send_timeout_ns;
    while (done < total) {
        struct iovec iov[2];
        int k = 0;
        if (done < TP_FRAME_HEADER)
            iov[k++] = (struct iovec){hdr + done, TP_FRAME_HEADER - done};
        size_t off = done > TP_FRAME_HEADER ? done - TP_FRAME_HEADER : 0;
        if (len > off)
            iov[k++] = (struct iovec){(uint8_t *)data + off, len - off};
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t n = sendmsg(s->stream, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            done += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        kiln_result r;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            r = poll_until(s->stream, POLLOUT, deadline, "send a frame");
        else
            r = KILN_RAISE(KILN_ERR_IO, "sending a frame: %s%s", strerror(errno),
                           errno == EPIPE || errno == ECONNRESET ? " (the peer closed)" : "");
        if (r < 0) {
            if (done) {
                s->dead = true;
                log_debug("transport: a frame was cut short after %zu of %zu bytes; the stream is dead", done, total);
            }
            return r;
        }
    }
    return KILN_OK;
}

static kiln_result sock_recv(struct tp *t, void *dst, size_t cap, size_t *len, uint64_t timeout_ns)
{
    struct tp_sock *s = as_sock(t);
    uint64_t deadline = time_now_ns() + timeout_ns;
    uint8_t chunk[SOCK_CHUNK];
    for (;;) {
        kiln_result r = tp_frame_take(&s->rd, dst, cap, len);
        if (r != KILN_ERR_PENDING)
            return r;
        if (s->eof)
            return KILN_RAISE(KILN_ERR_IO, "the peer closed the stream%s",
                              tp_frame_want(&s->rd) && (s->rd.len > s->rd.at) ? " in the middle of a frame" : "");
        size_t want = KILN_MIN(KILN_MAX(tp_frame_want(&s->rd), (size_t)4096), sizeof chunk);
        ssize_t n = recv(s->stream, chunk, want, MSG_DONTWAIT);
        if (n > 0) {
            /* A bad header is not reported here: the frames before it are
             * still taken, then tp_frame_take says protocol mismatch. */
            kiln_result fr = tp_frame_feed(&s->rd, chunk, (size_t)n);
            if (fr == KILN_ERR_NO_MEMORY)
                return fr;
            continue;
        }
        if (n == 0) {
            s->eof = true;
            continue;
        }
        if (errno == EINTR)
            continue;
        if (errno == ECONNRESET) {
            s->eof = true;
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return KILN_RAISE(KILN_ERR_IO, "receiving a frame: %s", strerror(errno));
        KILN_TRY(poll_until(s->stream, POLLIN, deadline, "receive a frame"));
    }
}

static kiln_result sock_send_fds(struct tp *t, const void *msg, size_t len, const int *fds, uint32_t n)
{
    return tp_fd_send(as_sock(t)->dgram, msg, len, fds, n, t->send_timeout_ns);
}

static kiln_result sock_recv_fds(struct tp *t, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap,
                                 uint32_t *n, uint64_t timeout_ns)
{
    struct tp_sock *s = as_sock(t);
    uint64_t deadline = time_now_ns() + timeout_ns;
    for (;;) {
        kiln_result r = tp_fd_recv(s->dgram, msg, cap, len, fds, fd_cap, n, 0);
        if (r != KILN_ERR_TIMEOUT)
            return r;
        /* Nothing queued: wait for a message or for the stream to hang up
         * (a datagram socket does not tell that its peer closed). */
        struct pollfd hup = {.fd = s->stream, .events = POLLRDHUP};
        if (poll(&hup, 1, 0) > 0 && (hup.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            return KILN_RAISE(KILN_ERR_IO, "the peer closed; no sideband message is left");
        struct pollfd pf[2] = {{.fd = s->dgram, .events = POLLIN}, {.fd = s->stream, .events = POLLRDHUP}};
        uint64_t now = time_now_ns();
        if (now >= deadline)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "no sideband message came in time");
        int ms = (int)KILN_MIN((deadline - now + 999999) / 1000000u, (uint64_t)60000);
        if (poll(pf, 2, ms) < 0 && errno != EINTR)
            return KILN_RAISE(KILN_ERR_IO, "poll for a sideband message: %s", strerror(errno));
    }
}

static void sock_shutdown(struct tp *t) { shutdown(as_sock(t)->stream, SHUT_WR); }

static void sock_destroy(struct tp *t)
{
    struct tp_sock *s = as_sock(t);
    if (s->stream >= 0)
        close(s->stream);
    if (s->dgram >= 0)
        close(s->dgram);
    tp_frame_reader_finish(&s->rd);
    free(s);
}

static int sock_peer_fd(const struct tp *t) { return ((const struct tp_sock *)t)->stream; }

static const struct tp_ops sock_ops = {"socket", sock_send, sock_recv, sock_send_fds, sock_recv_fds,
                                       sock_shutdown, sock_destroy, sock_peer_fd};

static kiln_result nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return KILN_RAISE(KILN_ERR_IO, "transport: descriptor %d: fcntl: %s", fd, strerror(errno));
    return KILN_OK;
}

kiln_result tp_socket_create(int stream_fd, int dgram_fd, struct tp **out)
{
    *out = NULL;
    kiln_result r = KILN_OK;
    struct tp_sock *s = NULL;
    if (stream_fd < 0 || dgram_fd < 0)
        r = KILN_RAISE(KILN_ERR_INVALID, "transport: descriptors %d and %d", stream_fd, dgram_fd);
    else if ((r = nonblocking(stream_fd)) == KILN_OK && (r = nonblocking(dgram_fd)) == KILN_OK &&
             !(s = mem_calloc(1, sizeof *s)))
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "transport: no memory for a socket end");
    if (r < 0) {
        if (stream_fd >= 0)
            close(stream_fd);
        if (dgram_fd >= 0)
            close(dgram_fd);
        return r;
    }
    s->base.ops = &sock_ops;
    s->base.send_timeout_ns = send_timeout();
    s->stream = stream_fd;
    s->dgram = dgram_fd;
    tp_frame_reader_init(&s->rd);
    *out = &s->base;
    return KILN_OK;
}

kiln_result tp_socket_pair(struct tp **a, struct tp **b)
{
    *a = *b = NULL;
    int st[2], dg[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st))
        return KILN_RAISE(KILN_ERR_IO, "transport: socketpair: %s", strerror(errno));
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg)) {
        close(st[0]);
        close(st[1]);
        return KILN_RAISE(KILN_ERR_IO, "transport: socketpair: %s", strerror(errno));
    }
    kiln_result r = tp_socket_create(st[0], dg[0], a);
    if (r < 0) {
        close(st[1]);
        close(dg[1]);
        return r;
    }
    r = tp_socket_create(st[1], dg[1], b);
    if (r < 0) {
        tp_destroy(*a);
        *a = NULL;
    }
    return r;
}

/* ---- in process --------------------------------------------------------------------- */

struct msg {
    struct msg *next;
    size_t len;
    uint32_t nfds;              /* sideband messages: descriptors owned by the queue */
    int fds[TP_FDS_MAX];
    uint8_t bytes[];
};

struct queue {                  /* one direction */
    struct msg *frames, **frames_tail, *side, **side_tail;
    uint64_t queued;            /* bytes of frames and messages held */
    bool closed;                /* the sending end shut down or went */
};

struct inproc_shared {
    pthread_mutex_t mu;         /* protects everything below */
    pthread_cond_t cond;        /* signalled on every change */
    struct queue q[2];          /* q[i]: to end i */
    int ends;                   /* ends not yet destroyed */
};

struct tp_inproc {
    struct tp base;
    struct inproc_shared *sh;
    int side;
};

static struct tp_inproc *as_in(struct tp *t) { return (struct tp_inproc *)t; }

static void free_msgs(struct msg *m)
{
    while (m) {
        struct msg *next = m->next;
        for (uint32_t i = 0; i < m->nfds; i++)
            close(m->fds[i]);
        free(m);
        m = next;
    }
}

/* Queues m (len bytes of payload) to the other end, waiting for room. */
static kiln_result in_push(struct tp *t, struct msg *m, bool frame)
{
    struct tp_inproc *e = as_in(t);
    struct inproc_shared *sh = e->sh;
    struct queue *q = &sh->q[1 - e->side];
    uint64_t deadline = time_now_ns() + t->send_timeout_ns;
    pthread_mutex_lock(&sh->mu);
    while (sh->ends == 2 && q->queued && q->queued + m->len > TP_INPROC_QUEUED) {
        uint64_t now = time_now_ns();
        if (now >= deadline) {
            pthread_mutex_unlock(&sh->mu);
            free_msgs(m);
            return KILN_RAISE(KILN_ERR_TIMEOUT, "waited %llu ms for the peer to take what was sent",
                              (unsigned long long)(t->send_timeout_ns / 1000000u));
        }
        cond_wait_ns(&sh->cond, &sh->mu, deadline - now);
    }
    if (sh->ends < 2) {
        pthread_mutex_unlock(&sh->mu);
        free_msgs(m);
        return KILN_RAISE(KILN_ERR_IO, "the peer closed");
    }
    m->next = NULL;
    if (frame) {
        *q->frames_tail = m;
        q->frames_tail = &m->next;
    } else {
        *q->side_tail = m;
        q->side_tail = &m->next;
    }
    q->queued += m->len;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->mu);
    return KILN_OK;
}

static kiln_result in_send(struct tp *t, const void *data, size_t len)
{
    struct msg *m = mem_alloc(sizeof *m + len);
    if (!m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "transport: no memory for a frame of %zu bytes", len);
    m->len = len;
    m->nfds = 0;
    if (len)
        memcpy(m->bytes, data, len);
    return in_push(t, m, true);
}

static kiln_result in_send_fds(struct tp *t, const void *msg, size_t len, const int *fds, uint32_t n)
{
    struct msg *m = mem_alloc(sizeof *m + len);
    if (!m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "transport: no memory for a sideband message");
    m->len = len;
    m->nfds = 0;
    if (len)
        memcpy(m->bytes, msg, len);
    for (uint32_t i = 0; i < n; i++) {
        int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 0);
        if (fd < 0) {
            int err = errno;
            free_msgs(m);
            return KILN_RAISE(err == EMFILE ? KILN_ERR_LIMIT : KILN_ERR_INVALID, "descriptor %d (#%u): dup: %s",
                              fds[i], i, strerror(err));
        }
        m->fds[m->nfds++] = fd;
    }
    return in_push(t, m, false);
}

/* Waits for the head of one of this end's queues; NULL with the error in
 * *r when none came. The mutex is held on return either way. */
static struct msg *in_wait(struct tp_inproc *e, bool frame, uint64_t timeout_ns, kiln_result *r)
{
    struct inproc_shared *sh = e->sh;
    struct queue *q = &sh->q[e->side];
    uint64_t deadline = time_now_ns() + timeout_ns;
    for (;;) {
        struct msg *m = frame ? q->frames : q->side;
        if (m)
            return m;
        if (q->closed) {
            *r = KILN_RAISE(KILN_ERR_IO, frame ? "the peer closed the stream" : "the peer closed; no sideband message is left");
            return NULL;
        }
        uint64_t now = time_now_ns();
        if (now >= deadline) {
            *r = KILN_RAISE(KILN_ERR_TIMEOUT, frame ? "nothing came in time to receive a frame"
                                                    : "no sideband message came in time");
            return NULL;
        }
        cond_wait_ns(&sh->cond, &sh->mu, deadline - now);
    }
}

static void in_pop(struct inproc_shared *sh, struct queue *q, bool frame)
{
    struct msg *m = frame ? q->frames : q->side;
    if (frame) {
        q->frames = m->next;
        if (!q->frames)
            q->frames_tail = &q->frames;
    } else {
        q->side = m->next;
        if (!q->side)
            q->side_tail = &q->side;
    }
    q->queued -= m->len;
    pthread_cond_broadcast(&sh->cond);
}

static kiln_result in_recv(struct tp *t, void *dst, size_t cap, size_t *len, uint64_t timeout_ns)
{
    struct tp_inproc *e = as_in(t);
    kiln_result r = KILN_OK;
    pthread_mutex_lock(&e->sh->mu);
    struct msg *m = in_wait(e, true, timeout_ns, &r);
    if (m) {
        *len = m->len;
        if (cap < m->len) {
            m = NULL;
            r = KILN_RAISE(KILN_ERR_LIMIT, "a frame of %zu bytes does not fit a buffer of %zu bytes; it stays queued",
                           *len, cap);
        } else {
            in_pop(e->sh, &e->sh->q[e->side], true);
        }
    }
    pthread_mutex_unlock(&e->sh->mu);
    if (m) {
        if (m->len)
            memcpy(dst, m->bytes, m->len);
        free(m);
    }
    return r;
}

static kiln_result in_recv_fds(struct tp *t, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap,
                               uint32_t *n, uint64_t timeout_ns)
{
    (void)cap;
    (void)fd_cap;   /* checked by the wrapper: at least the largest message */
    struct tp_inproc *e = as_in(t);
    kiln_result r = KILN_OK;
    pthread_mutex_lock(&e->sh->mu);
    struct msg *m = in_wait(e, false, timeout_ns, &r);
    if (m)
        in_pop(e->sh, &e->sh->q[e->side], false);
    pthread_mutex_unlock(&e->sh->mu);
    if (!m)
        return r;
    if (m->len)
        memcpy(msg, m->bytes, m->len);
    memcpy(fds, m->fds, m->nfds * sizeof(int));
    *len = m->len;
    *n = m->nfds;
    free(m);
    return KILN_OK;
}

static void in_shutdown(struct tp *t)
{
    struct tp_inproc *e = as_in(t);
    pthread_mutex_lock(&e->sh->mu);
    e->sh->q[1 - e->side].closed = true;
    pthread_cond_broadcast(&e->sh->cond);
    pthread_mutex_unlock(&e->sh->mu);
}

static void in_destroy(struct tp *t)
{
    struct tp_inproc *e = as_in(t);
    struct inproc_shared *sh = e->sh;
    pthread_mutex_lock(&sh->mu);
    struct queue *mine = &sh->q[e->side];
    struct msg *frames = mine->frames, *side = mine->side;
    mine->frames = mine->side = NULL;
    mine->frames_tail = &mine->frames;
    mine->side_tail = &mine->side;
    mine->queued = 0;
    sh->q[1 - e->side].closed = true;   /* what it sent stays for the peer to drain */
    bool last = --sh->ends == 0;
    pthread_cond_broadcast(&sh->cond);
    pthread_mutex_unlock(&sh->mu);
    free_msgs(frames);
    free_msgs(side);
    if (last) {
        for (int i = 0; i < 2; i++) {
            free_msgs(sh->q[i].frames);
            free_msgs(sh->q[i].side);
        }
        pthread_cond_destroy(&sh->cond);
        pthread_mutex_destroy(&sh->mu);
        free(sh);
    }
    free(e);
}

static int in_peer_fd(const struct tp *t)
{
    (void)t;
    return -1;
}

static const struct tp_ops inproc_ops = {"in-process", in_send, in_recv, in_send_fds, in_recv_fds,
                                         in_shutdown, in_destroy, in_peer_fd};

kiln_result tp_inproc_pair(struct tp **a, struct tp **b)
{
    *a = *b = NULL;
    struct inproc_shared *sh = mem_calloc(1, sizeof *sh);
    struct tp_inproc *e[2] = {mem_calloc(1, sizeof *e[0]), mem_calloc(1, sizeof *e[1])};
    if (!sh || !e[0] || !e[1]) {
        free(sh);
        free(e[0]);
        free(e[1]);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "transport: no memory for an in-process pair");
    }
    pthread_mutex_init(&sh->mu, NULL);
    pthread_cond_init(&sh->cond, NULL);
    sh->ends = 2;
    uint64_t timeout = send_timeout();
    for (int i = 0; i < 2; i++) {
        sh->q[i].frames_tail = &sh->q[i].frames;
        sh->q[i].side_tail = &sh->q[i].side;
        e[i]->base.ops = &inproc_ops;
        e[i]->base.send_timeout_ns = timeout;
        e[i]->sh = sh;
        e[i]->side = i;
    }
    *a = &e[0]->base;
    *b = &e[1]->base;
    return KILN_OK;
}
