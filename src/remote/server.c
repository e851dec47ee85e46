/* SPDX-License-Identifier: MIT */
/*
 * server.c: kiln serve. One host context owns the device, the compile
 * service and the archive; each connection is served by a thread of its
 * own with a context of its own on the host (ctx_create_on), fed one
 * request at a time to the applier (apply.c). A connection that ends, for
 * any reason, frees everything its context held; the others never notice.
 *
 * Admission: a connection past max_clients is answered at once by the
 * accept loop with a refusal naming the cap (tp_hello_answer) and closed;
 * one admitted has hello_ns from its accept to finish its hello and make
 * its context (a client that holds a context may then idle as long as it
 * likes). When descriptors run out, accept cannot take the connection
 * waiting in the backlog, and poll would report it again at once: a
 * descriptor kept in reserve is given up to accept it, answer it "out of
 * descriptors" and close it, then taken back; without one, the listening
 * socket rests for a moment. Each such episode is one warning, and every
 * warning a client can cause is rate-limited (srv_warn).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/thread.h"
#include "remote.h"
#include "remote_private.h"

#define SEGMENT_WAIT_NS (2ull * 1000 * 1000 * 1000)
#define WARN_EVERY_NS (10ull * 1000 * 1000 * 1000)   /* one warning of a kind per this long */
#define FDS_REST_MS 200                              /* the listener's rest when no descriptor is left */
#define REQ_KEEP (256u << 10)                        /* a request buffer past this goes back after its frame */

struct srv_conn {
    struct srv_conn *next;
    struct srv *srv;
    int accepted;                /* the socket accept() gave, until the hello is read; -1 in process */
    struct tp *tp;
    struct srv_client *cl;       /* while serving (under mu) */
    int peer_fd;                 /* the stream socket, for srv_destroy to shut; -1: none (under mu) */
    struct kthread thread;
    bool done;                   /* under mu */
    struct tp_segment seg;       /* the bulk-data segment (fd -1: none) */
    uint64_t seg_serial;
    uint64_t born_ns;            /* accepted at (time_now_ns) */
    struct stream st;            /* the command stream, once the client opened it */
    _Atomic bool ending;         /* srv_destroy: the stream's waits end */
    struct srv_conn *beat_next;  /* on srv.beating (under beat_lock) */
    bool in_beat;                /* under beat_lock */
    uint8_t *buf;                /* frames read (cap bytes) */
    size_t cap;
};

/* ---- the server's heartbeat ------------------------------------------------------------------ */

static void *beat_main(void *arg)
{
    struct srv *s = arg;
    uint64_t period = env_u64("KILN_IPC_PEER_TIMEOUT_MS", TP_PEER_TIMEOUT_MS_DEFAULT) * 1000000ull / 8;
    pthread_mutex_lock(&s->beat_lock);
    while (!s->beat_stop) {
        for (struct srv_conn *cn = s->beating; cn; cn = cn->beat_next)
            atomic_fetch_add_explicit(&cn->st.ctl->server_heartbeat, 1, memory_order_relaxed);
        cond_wait_ns(&s->beat_cond, &s->beat_lock, period);
    }
    pthread_mutex_unlock(&s->beat_lock);
    return NULL;
}

static void beat_join(struct srv_conn *cn)
{
    struct srv *s = cn->srv;
    pthread_mutex_lock(&s->beat_lock);
    cn->beat_next = s->beating;
    s->beating = cn;
    cn->in_beat = true;
    atomic_fetch_add_explicit(&cn->st.ctl->server_heartbeat, 1, memory_order_relaxed);
    pthread_mutex_unlock(&s->beat_lock);
}

static void beat_leave(struct srv_conn *cn)
{
    struct srv *s = cn->srv;
    pthread_mutex_lock(&s->beat_lock);
    if (cn->in_beat) {
        struct srv_conn **pp = &s->beating;
        while (*pp != cn)
            pp = &(*pp)->beat_next;
        *pp = cn->beat_next;
        cn->in_beat = false;
    }
    pthread_mutex_unlock(&s->beat_lock);
}

/* ---- warnings a client can cause ------------------------------------------------------------ */

/* Logs at level unless a warning of this kind was logged in the last
 * WARN_EVERY_NS; those held back are counted and said with the next. */
static void srv_warn(struct srv *s, enum srv_warn_kind k, enum log_level level, const char *fmt, ...)
    KILN_PRINTF(4, 5);
static void srv_warn(struct srv *s, enum srv_warn_kind k, enum log_level level, const char *fmt, ...)
{
    uint64_t now = time_now_ns();
    pthread_mutex_lock(&s->warn_lock);
    struct srv_warn_rate *w = &s->warn[k];
    if (w->said && now - w->last_ns < WARN_EVERY_NS) {
        w->quiet++;
        pthread_mutex_unlock(&s->warn_lock);
        return;
    }
    uint64_t quiet = w->quiet;
    w->quiet = 0;
    w->last_ns = now;
    w->said = true;
    pthread_mutex_unlock(&s->warn_lock);
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (quiet)
        log_msg(level, "%s (and %llu more like it held back)", text, (unsigned long long)quiet);
    else
        log_msg(level, "%s", text);
}

/* ---- a connection ------------------------------------------------------------------------- */

/* The applier's segment: the one announced with serial, adopted from the
 * descriptor channel (announcements come before the request using them). */
static kiln_result conn_segment(void *ud, uint64_t serial, uint64_t need, uint8_t **map, uint64_t *size)
{
    struct srv_conn *cn = ud;
    if (!serial)   /* the client found no segment could hold it */
        return KILN_RAISE(KILN_ERR_LIMIT, "request: %llu bytes of data in one call; a remote call moves at most "
                          "%llu", (unsigned long long)need, (unsigned long long)TP_SEGMENT_MAX);
    while (cn->seg.fd < 0 || cn->seg_serial != serial) {
        uint8_t msg[TP_SIDEBAND_PAYLOAD];
        int fds[TP_FDS_MAX];
        size_t len = 0;
        uint32_t n = 0;
        kiln_result r = tp_recv_fds(cn->tp, msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEGMENT_WAIT_NS);
        if (r < 0)
            return KILN_RAISE(KILN_ERR_INVALID, "request: data in segment %llu, never announced (%s)",
                              (unsigned long long)serial, err_last());
        uint64_t ann[2] = {0, 0};
        if (len != sizeof ann || n != 1) {
            for (uint32_t i = 0; i < n; i++)
                close(fds[i]);
            return KILN_RAISE(KILN_ERR_INVALID, "request: a segment announcement of %zu bytes and %u descriptors "
                              "(16 and 1 expected)", len, n);
        }
        memcpy(ann, msg, sizeof ann);
        struct tp_segment s;
        KILN_TRY(tp_segment_adopt(&s, fds[0], ann[1], 0));
        if (cn->seg.fd >= 0) {
            srv_client_unimport(cn->cl);   /* before its memory goes */
            tp_segment_finish(&cn->seg);
        }
        cn->seg = s;
        cn->seg_serial = ann[0];
    }
    if (need > cn->seg.size)
        return KILN_RAISE(KILN_ERR_INVALID, "request: %llu bytes in a segment of %llu", (unsigned long long)need,
                          (unsigned long long)cn->seg.size);
    *map = cn->seg.map;
    *size = cn->seg.size;
    return KILN_OK;
}

static bool uid_allowed(const struct srv *s, uid_t uid)
{
    if (uid == s->uid)
        return true;
    for (uint32_t i = 0; i < s->allow_uid_count; i++)
        if (s->allow_uids[i] == uid)
            return true;
    return false;
}

/* The time left until deadline (at least 1 ns: a deadline passed waits not
 * at all, never forever). */
static uint64_t left_ns(uint64_t deadline)
{
    uint64_t now = time_now_ns();
    return deadline > now ? deadline - now : 1;
}

/* Reads the hello, admits the peer by uid and answers it; false when the
 * connection is to end. */
static bool admit(struct srv_conn *cn, uint64_t deadline)
{
    struct srv *s = cn->srv;
    struct ucred cred = {0};
    int fd = cn->accepted;
    cn->accepted = -1;
    kiln_result r = tp_accept_hello(fd, left_ns(deadline), &cn->tp, &cred);
    if (r < 0) {
        /* A client that died as it connected is no news; anything else
         * at the socket that is not a kiln client is, and so is a server
         * out of descriptors (said with the accept loop's, at the same
         * rate). */
        bool gone = strstr(err_last(), "closed before") != NULL;
        srv_warn(s, r == KILN_ERR_LIMIT ? SRV_WARN_FDS : gone ? SRV_WARN_GONE : SRV_WARN_HELLO,
                 gone ? LOG_INFO : LOG_WARN, "kiln serve: a connection refused: %s", err_last());
        return false;
    }
    int peer = tp_peer_fd(cn->tp);
    if (!uid_allowed(s, cred.uid)) {
        char why[TP_REFUSAL_MAX];
        snprintf(why, sizeof why, "uid %u may not use this server (it admits uid %u%s)", (unsigned)cred.uid,
                 (unsigned)s->uid, s->allow_uid_count ? " and the uids --allow-uid names" : " only");
        (void)tp_hello_answer(peer, KILN_ERR_IO, why);
        srv_warn(s, SRV_WARN_UID, LOG_WARN, "kiln serve: a connection from pid %d refused: %s", (int)cred.pid, why);
        return false;
    }
    if (tp_hello_answer(peer, KILN_OK, NULL) < 0) {
        srv_warn(s, SRV_WARN_GONE, LOG_INFO, "kiln serve: a connection ended before its answer: %s", err_last());
        return false;
    }
    pthread_mutex_lock(&s->mu);
    cn->peer_fd = peer;
    pthread_mutex_unlock(&s->mu);
    return true;
}

/* ---- requests and replies ----------------------------------------------------------------- */

/* Reads one frame into cn->buf within timeout_ns; its length in *len. */
static kiln_result read_frame(struct srv_conn *cn, uint64_t timeout_ns, size_t *len)
{
    size_t want = 64 << 10;
    *len = 0;
    for (;;) {
        kiln_result r = cn->cap ? tp_recv(cn->tp, cn->buf, cn->cap, len, timeout_ns) : KILN_ERR_LIMIT;
        if (r != KILN_ERR_LIMIT)
            return r;
        want = KILN_MAX(want, *len);
        uint8_t *p = realloc(cn->buf, want);
        if (!p)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a request of %zu bytes", want);
        err_clear();
        cn->buf = p;
        cn->cap = want;
    }
}

/* The next request: a frame until the stream is open (within the
 * connection's deadline until it has a context), then a record (or the
 * frame a record announces). False when the connection is to end. */
static bool next_request(struct srv_conn *cn, uint64_t deadline, const uint8_t **req, size_t *len)
{
    struct srv *s = cn->srv;
    struct srv_client *cl = cn->cl;
    if (!cn->st.live) {
        bool made = cl->ctx != NULL;
        kiln_result r = read_frame(cn, made ? UINT64_MAX : left_ns(deadline), len);
        if (r == KILN_ERR_TIMEOUT && !made)
            srv_warn(s, SRV_WARN_SLOW, LOG_INFO,
                     "kiln serve: %s closed: it made no context within %.0f s of connecting", cl->who,
                     (double)s->hello_ns / 1e9);
        *req = cn->buf;
        return r == KILN_OK;   /* else the client went: closed, died, or broke the framing */
    }
    for (;;) {
        /* A server ending takes no more records: a client posting without
         * end never finds the ring empty, so the stream's own wait, which
         * notices the end, would never be reached. */
        if (atomic_load(&cn->ending))
            return false;
        uint32_t kind;
        const uint8_t *msg;
        kiln_result r = stream_get(&cn->st, UINT64_MAX, &kind, &msg, len);
        if (r == KILN_ERR_TIMEOUT) {
            err_clear();
            continue;
        }
        if (r < 0) {
            if (!atomic_load(&cn->ending) && !strstr(err_last(), "socket closed"))
                srv_warn(s, SRV_WARN_STREAM, LOG_WARN, "kiln serve: %s closed: its command stream: %s", cl->who,
                         err_last());
            return false;
        }
        if (kind == STREAM_MSG) {
            *req = msg;
            return true;
        }
        uint64_t want;
        r = stream_announced(msg, *len, &want);
        if (r == KILN_OK)
            r = read_frame(cn, STREAM_FRAME_WAIT_NS, len);
        if (r == KILN_OK && *len != want)
            r = KILN_RAISE(KILN_ERR_IO, "a frame of %zu bytes where its record said %llu", *len,
                           (unsigned long long)want);
        if (r < 0) {
            srv_warn(s, SRV_WARN_STREAM, LOG_WARN, "kiln serve: %s closed: its command stream: %s", cl->who,
                     err_last());
            return false;
        }
        *req = cn->buf;
        return true;
    }
}

/* Sends a reply: a frame until the stream is open, then a record (or a
 * record announcing the frame that follows it). */
static kiln_result send_reply(struct srv_conn *cn, const struct bytes *rep)
{
    if (!cn->st.live)
        return tp_send(cn->tp, rep->p, rep->len);
    return stream_send(&cn->st, cn->tp, rep->p, rep->len, UINT64_MAX);
}

/* PIPE_OP_STREAM: adopts the segment announced just before it. Its reply
 * (a frame) carries the epoch; the stream starts once that is sent
 * (start_stream). False when the connection is to end. */
static bool open_stream(struct srv_conn *cn, const uint8_t *req, size_t len, struct bytes *rep)
{
    struct pipe_req head;
    memcpy(&head, req, sizeof head);
    kiln_result r;
    if (!cn->cl->ctx) {
        r = KILN_RAISE(KILN_ERR_HANDLE, "request: a command stream before the connection's context was made");
    } else if (head.rec_size || head.tail_size || head.flags || len != sizeof head) {
        r = KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a stream request of %zu bytes (record %u, tail %u)", len,
                       head.rec_size, head.tail_size);
    } else {
        uint8_t msg[TP_SIDEBAND_PAYLOAD];
        int fds[TP_FDS_MAX];
        size_t n = 0;
        uint32_t nfds = 0;
        r = tp_recv_fds(cn->tp, msg, sizeof msg, &n, fds, TP_FDS_MAX, &nfds, SEGMENT_WAIT_NS);
        uint32_t ann[4] = {0};
        uint64_t size = 0;
        if (r == KILN_OK) {
            if (n == sizeof ann)
                memcpy(ann, msg, sizeof ann);
            memcpy(&size, &ann[2], sizeof size);
            if (n != sizeof ann || nfds != 1 || ann[0] != STREAM_MAGIC) {
                for (uint32_t i = 0; i < nfds; i++)
                    close(fds[i]);
                r = KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a stream announcement of %zu bytes, %u descriptors, "
                               "magic %08x", n, nfds, ann[0]);
            } else {
                r = stream_adopt(&cn->st, fds[0], size, cn->srv->epoch);
            }
        } else {
            r = KILN_RAISE(KILN_ERR_IO, "a command stream never announced (%s)", err_last());
        }
    }
    struct bytes out = {0};
    uint64_t epoch = cn->srv->epoch;
    bytes_put(&out, &epoch, sizeof epoch);
    srv_reply(rep, PIPE_OP_STREAM, head.seq, r, &out);
    free(out.p);
    if (r < 0)
        srv_warn(cn->srv, SRV_WARN_STREAM, LOG_WARN, "kiln serve: %s closed: %s", cn->cl->who, err_last());
    return r == KILN_OK;
}

/* The stream's reply went: from now on every request is a record. */
static bool start_stream(struct srv_conn *cn)
{
    if (stream_start(&cn->st, cn->srv->epoch, tp_peer_fd(cn->tp)) < 0)
        return false;
    cn->st.peer.stop = &cn->ending;
    beat_join(cn);
    return true;
}

static void serve(struct srv_conn *cn)
{
    struct srv *s = cn->srv;
    uint64_t deadline = cn->born_ns + s->hello_ns;
    if (cn->accepted >= 0 && !admit(cn, deadline))
        return;
    struct srv_client *cl;
    if (srv_client_open(s, conn_segment, cn, &cl) < 0)
        return;
    pthread_mutex_lock(&s->mu);
    cn->cl = cl;
    pthread_mutex_unlock(&s->mu);
    struct bytes rep = {0};
    for (;;) {
        const uint8_t *req;
        size_t len;
        if (!next_request(cn, deadline, &req, &len))
            break;
        bool go_on;
        if (!cn->st.live && len >= sizeof(struct pipe_req) && ((const struct pipe_req *)(const void *)req)->op ==
                                                                  PIPE_OP_STREAM) {
            go_on = open_stream(cn, req, len, &rep);
        } else {
            go_on = srv_apply(cl, req, len, &rep);
        }
        if (rep.oom || (rep.len && send_reply(cn, &rep) < 0) || !go_on)
            break;
        if (cn->st.ctl && !cn->st.live && !start_stream(cn))
            break;
        if (rep.cap > (1u << 22)) {   /* a big readback's buffer is not kept */
            free(rep.p);
            rep = (struct bytes){0};
        }
        if (cn->cap > REQ_KEEP) {   /* nor a big request's */
            free(cn->buf);
            cn->buf = NULL;
            cn->cap = 0;
        }
        stream_shrink(&cn->st);
    }
    free(rep.p);
    pthread_mutex_lock(&s->mu);
    cn->cl = NULL;
    pthread_mutex_unlock(&s->mu);
    srv_client_close(cl);
}

static void *conn_main(void *arg)
{
    struct srv_conn *cn = arg;
    struct srv *s = cn->srv;
    serve(cn);
    if (cn->accepted >= 0)
        close(cn->accepted);
    pthread_mutex_lock(&s->mu);
    cn->peer_fd = -1;
    struct tp *t = cn->tp;
    cn->tp = NULL;
    pthread_mutex_unlock(&s->mu);
    if (t)
        tp_destroy(t);
    if (cn->seg.fd >= 0)
        tp_segment_finish(&cn->seg);
    beat_leave(cn);
    stream_finish(&cn->st);
    free(cn->buf);
    cn->buf = NULL;
    pthread_mutex_lock(&s->mu);
    cn->done = true;
    s->live--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* A connection that never got a worker: its socket or transport closed. */
static void drop(int accepted, struct tp *t)
{
    if (accepted >= 0)
        close(accepted);
    if (t)
        tp_destroy(t);
}

static kiln_result start(struct srv *s, int accepted, struct tp *t)
{
    struct srv_conn *cn = mem_calloc(1, sizeof *cn);
    if (!cn) {
        drop(accepted, t);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a connection");
    }
    cn->srv = s;
    cn->accepted = accepted;
    cn->tp = t;
    cn->peer_fd = -1;
    cn->seg.fd = -1;
    stream_init(&cn->st);
    cn->born_ns = time_now_ns();
    pthread_mutex_lock(&s->mu);
    s->live++;
    char name[32];
    snprintf(name, sizeof name, "kiln-conn-%llu", (unsigned long long)(s->served + 1));
    /* A connection's thread runs the applier, which calls the runtime:
     * the stack a compile worker's caller would have. */
    if (kthread_start(&cn->thread, name, 8u << 20, conn_main, cn) != KILN_OK) {
        s->live--;
        pthread_mutex_unlock(&s->mu);
        drop(accepted, t);
        free(cn);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "no thread for a connection: %s", err_last());
    }
    cn->next = s->conns;
    s->conns = cn;
    pthread_mutex_unlock(&s->mu);
    return KILN_OK;
}

/* Joins the connections that ended. */
static void reap(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    struct srv_conn **pp = &s->conns, *done = NULL;
    while (*pp) {
        struct srv_conn *cn = *pp;
        if (cn->done) {
            *pp = cn->next;
            cn->next = done;
            done = cn;
        } else {
            pp = &cn->next;
        }
    }
    pthread_mutex_unlock(&s->mu);
    while (done) {
        struct srv_conn *next = done->next;
        kthread_join(&done->thread);
        free(done);
        done = next;
    }
}

kiln_result srv_attach(struct srv *s, struct tp *t)
{
    reap(s);
    return start(s, -1, t);
}

/* ---- the server --------------------------------------------------------------------------- */

/* $XDG_RUNTIME_DIR/kiln/kiln.sock, its folder made 0700 (or checked to be
 * ours and private). */
static kiln_result default_path(char *out, size_t cap)
{
    const char *rt = getenv("XDG_RUNTIME_DIR");
    char dir[96];
    if (rt && *rt)
        snprintf(dir, sizeof dir, "%s/kiln", rt);
    else
        snprintf(dir, sizeof dir, "/tmp/kiln-%u", (unsigned)getuid());
    if (mkdir(dir, 0700) && errno != EEXIST)
        return KILN_RAISE(KILN_ERR_IO, "socket folder %s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
        return KILN_RAISE(KILN_ERR_IO, "socket folder %s is not a folder of this user's; not serving there", dir);
    if ((st.st_mode & 0077) && chmod(dir, 0700))
        return KILN_RAISE(KILN_ERR_IO, "socket folder %s: making it 0700: %s", dir, strerror(errno));
    if ((size_t)snprintf(out, cap, "%s/kiln.sock", dir) >= cap)
        return KILN_RAISE(KILN_ERR_INVALID, "socket folder %s: too long a path for a socket", dir);
    return KILN_OK;
}

/* Keeps the host's desc, its strings copied (the caller's are borrowed
 * for the create only). */
static kiln_result keep_host_desc(struct srv *s, const kiln_context_desc *d)
{
    s->host_desc = d ? *d : (kiln_context_desc){0};
    const char **fields[4] = {&s->host_desc.device, &s->host_desc.archive_dir, &s->host_desc.archive_readonly,
                              &s->host_desc.trace_path};
    for (int i = 0; i < 4; i++) {
        if (!*fields[i])
            continue;
        if (!(s->host_strings[i] = str_dup(*fields[i])))
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the server");
        *fields[i] = s->host_strings[i];
    }
    return KILN_OK;
}

/* A host context from the kept desc, its device's faults routed to the
 * client at fault. */
static kiln_result host_make(struct srv *s, struct kctx **out)
{
    KILN_TRY(ctx_create(&s->host_desc, SRV_HOST_SERIAL, out));
    /* A client's runaway work is that client's fault, not the device's. */
    ctx_host_route_faults(*out);
    return KILN_OK;
}

kiln_result srv_host_renew(struct srv *s)
{
    struct srv_old_host *old = mem_calloc(1, sizeof *old);
    if (!old)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory renewing the server's device");
    char why[768];
    (void)ctx_device_lost(s->host, why, sizeof why);
    struct kctx *fresh;
    kiln_result r = host_make(s, &fresh);
    if (r < 0) {
        free(old);
        return KILN_RAISE(r, "the server's device was lost, and a new one could not be made: %s", err_last());
    }
    old->host = s->host;
    old->clients = s->host_clients;
    old->next = s->old_hosts;
    s->old_hosts = old;
    s->host = fresh;
    s->host_clients = 0;
    s->hosts_renewed++;
    log_warn("kiln serve: the device was lost (%s); a new device serves new clients from now on (%u of the old "
             "one's clients still to go)", why, old->clients);
    if (!old->clients)
        srv_host_release(s, old->host);
    return KILN_OK;
}

void srv_host_release(struct srv *s, struct kctx *host)
{
    if (host == s->host) {
        if (s->host_clients)
            s->host_clients--;
        return;
    }
    for (struct srv_old_host **pp = &s->old_hosts; *pp; pp = &(*pp)->next) {
        struct srv_old_host *o = *pp;
        if (o->host != host)
            continue;
        if (o->clients)
            o->clients--;
        if (!o->clients) {
            *pp = o->next;
            o->host->ops->destroy(o->host);
            free(o);
        }
        return;
    }
}

static struct srv *srv_new(const kiln_server_desc *d)
{
    struct srv *s = mem_calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->host_lock, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cond, NULL);
    s->listen_fd = -1;
    s->wake[0] = s->wake[1] = -1;
    s->uid = getuid();
    s->next_serial = SRV_HOST_SERIAL;
    s->serial_live[SRV_HOST_SERIAL] = 1;
    kiln_server_desc f = kiln_server_desc_defaults(d);
    s->quota.objects = f.max_objects;
    s->quota.bytes = f.max_bytes;
    s->quota.compiles = f.max_compiles;
    s->max_clients = f.max_clients;
    s->hello_ns = f.hello_timeout_ms * 1000000ull;
    pthread_mutex_init(&s->warn_lock, NULL);
    pthread_mutex_init(&s->beat_lock, NULL);
    pthread_cond_init(&s->beat_cond, NULL);
    s->epoch = stream_epoch_new();
    s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    const char *sv = getenv("KILN_PIPE_STATS"), *sf = getenv("KILN_PIPE_STATS_FILE");
    s->stats_log = sv && *sv && env_flag("KILN_PIPE_STATS", 0);
    s->stats_file = sf && *sf ? strdup(sf) : NULL;
    s->stats_on = s->stats_log || s->stats_file;
    return s;
}

kiln_result srv_create(const kiln_server_desc *desc, struct srv **out)
{
    kiln_server_desc d = desc ? *desc : (kiln_server_desc){0};
    *out = NULL;
    if (d.context && d.context->remote && *d.context->remote && strcmp(d.context->remote, "local"))
        return KILN_RAISE(KILN_ERR_INVALID, "server desc: its context must be local (remote is \"%s\")",
                          d.context->remote);
    if (d.allow_uid_count && !d.allow_uids)
        return KILN_RAISE(KILN_ERR_INVALID, "server desc: allow_uid_count is set and allow_uids is NULL");
    struct srv *s = srv_new(&d);
    if (!s)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the server");
    kiln_result r = KILN_OK;
    if (d.allow_uid_count) {
        s->allow_uids = mem_alloc(d.allow_uid_count * sizeof *s->allow_uids);
        if (!s->allow_uids)
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the server");
        else
            memcpy(s->allow_uids, d.allow_uids, d.allow_uid_count * sizeof *s->allow_uids);
        s->allow_uid_count = s->allow_uids ? d.allow_uid_count : 0;
    }
    if (r == KILN_OK)
        r = keep_host_desc(s, d.context);
    if (r == KILN_OK)
        r = host_make(s, &s->host);
    if (r == KILN_OK && pipe2(s->wake, O_CLOEXEC | O_NONBLOCK))
        r = KILN_RAISE(KILN_ERR_IO, "pipe: %s", strerror(errno));
    if (r == KILN_OK && (r = kthread_start(&s->beat, "kiln-serve-beat", 0, beat_main, s)) == KILN_OK)
        s->beat_running = true;
    if (r < 0) {
        srv_destroy(s);
        return r;
    }
    *out = s;
    return KILN_OK;
}

/* Whether others than the owner can pass through folder (search, x). */
static bool folder_reachable(const char *path)
{
    char dir[sizeof ((struct srv *)0)->path];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    struct stat st;
    return stat(dir, &st) == 0 && (st.st_mode & 0011);
}

static kiln_result srv_listen(struct srv *s, const char *path)
{
    if (path && *path) {
        if (strlen(path) >= sizeof s->path)
            return KILN_RAISE(KILN_ERR_INVALID, "socket path '%s': longer than a unix socket path may be", path);
        snprintf(s->path, sizeof s->path, "%s", path);
    } else if (s->allow_uid_count) {
        return KILN_RAISE(KILN_ERR_INVALID, "--allow-uid (allow_uids) needs --socket PATH (socket_path): the "
                          "default socket sits in this user's private runtime folder, which other uids cannot "
                          "reach");
    } else {
        KILN_TRY(default_path(s->path, sizeof s->path));
    }
    /* Admitting other uids, the socket is open to all and the peer's
     * credentials (SO_PEERCRED) decide; else only this uid may connect. */
    kiln_result r = tp_listen(s->path, s->allow_uid_count ? 0666 : 0600, &s->listen_fd);
    if (r < 0) {
        s->path[0] = 0;   /* not ours: never removed */
        return r;
    }
    if (s->allow_uid_count && !folder_reachable(s->path))
        log_warn("kiln serve: the folder of %s is not searchable by other users: the uids --allow-uid names cannot "
                 "reach the socket (chmod o+x or g+x the folder)", s->path);
    return KILN_OK;
}

/* accept failed for want of descriptors: the connection waiting is taken
 * with the reserve descriptor and refused; true when the listener should
 * rest (no reserve to use). */
static bool out_of_descriptors(struct srv *s, int err)
{
    if (!s->fds_short) {
        /* An episode can flap (a refused client's close frees a
         * descriptor for one accept): its warning is rate-limited too. */
        s->fds_short = true;
        srv_warn(s, SRV_WARN_FDS, LOG_WARN, "kiln serve: out of descriptors (%s): new clients are refused until "
                 "some close (serving %u; raise the descriptor limit, ulimit -n, or lower --max-clients)",
                 strerror(err), s->live);
    }
    s->fds_refused++;
    if (s->reserve_fd < 0)
        return true;
    close(s->reserve_fd);
    s->reserve_fd = -1;
    int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
        tp_hello_refuse(fd, KILN_ERR_LIMIT, "the server is out of descriptors; try again later");
    s->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd < 0 || s->reserve_fd < 0;
}

kiln_result srv_run(struct srv *s)
{
    if (s->listen_fd < 0)
        return KILN_RAISE(KILN_ERR_INVALID, "the server has no socket to serve");
    uint64_t rest_until = 0;
    for (;;) {
        bool resting = time_now_ns() < rest_until;
        struct pollfd p[2] = {{s->wake[0], POLLIN, 0}, {s->listen_fd, POLLIN, 0}};
        int n = poll(p, resting ? 1 : 2, resting ? FDS_REST_MS : 1000);
        reap(s);
        if (n < 0 && errno != EINTR)
            return KILN_RAISE(KILN_ERR_IO, "kiln serve: poll: %s", strerror(errno));
        if (n <= 0)
            continue;
        if (p[0].revents) {
            char b[64];
            while (read(s->wake[0], b, sizeof b) > 0) {
            }
            return KILN_OK;
        }
        if (resting || !(p[1].revents & POLLIN))
            continue;
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            int e = errno;
            if ((e == EMFILE || e == ENFILE) && out_of_descriptors(s, e))
                rest_until = time_now_ns() + FDS_REST_MS * 1000000ull;
            continue;
        }
        if (s->fds_short) {
            srv_warn(s, SRV_WARN_FDS_BACK, LOG_INFO, "kiln serve: descriptors again: %llu connections were refused "
                     "for want of them", (unsigned long long)s->fds_refused);
            s->fds_short = false;
            s->fds_refused = 0;
        }
        pthread_mutex_lock(&s->mu);
        uint32_t live = s->live;
        pthread_mutex_unlock(&s->mu);
        if (live >= s->max_clients) {
            char why[TP_REFUSAL_MAX];
            snprintf(why, sizeof why, "the server serves its most clients at once (%u, --max-clients); try again "
                     "later", s->max_clients);
            tp_hello_refuse(fd, KILN_ERR_LIMIT, why);
            srv_warn(s, SRV_WARN_FULL, LOG_WARN, "kiln serve: a connection refused: %s", why);
            continue;
        }
        if (start(s, fd, NULL) < 0)
            srv_warn(s, SRV_WARN_START, LOG_WARN, "kiln serve: %s", err_last());
    }
}

void srv_stop(struct srv *s)
{
    if (s && s->wake[1] >= 0) {
        ssize_t w = write(s->wake[1], "x", 1);
        (void)w;
    }
}

void srv_destroy(struct srv *s)
{
    if (!s)
        return;
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->path[0])
        unlink(s->path);
    /* Every connection ends: its socket shut, so its worker's wait ends and
     * it frees its client's objects. */
    pthread_mutex_lock(&s->mu);
    for (struct srv_conn *cn = s->conns; cn; cn = cn->next) {
        atomic_store(&cn->ending, true);
        if (cn->peer_fd >= 0)
            shutdown(cn->peer_fd, SHUT_RDWR);
    }
    while (s->live)
        pthread_cond_wait(&s->cond, &s->mu);
    pthread_mutex_unlock(&s->mu);
    reap(s);
    if (s->beat_running) {
        pthread_mutex_lock(&s->beat_lock);
        s->beat_stop = true;
        pthread_cond_signal(&s->beat_cond);
        pthread_mutex_unlock(&s->beat_lock);
        kthread_join(&s->beat);
    }
    pthread_mutex_destroy(&s->beat_lock);
    pthread_cond_destroy(&s->beat_cond);
    while (s->old_hosts) {
        struct srv_old_host *o = s->old_hosts;
        s->old_hosts = o->next;
        o->host->ops->destroy(o->host);
        free(o);
    }
    if (s->host)
        s->host->ops->destroy(s->host);
    for (int i = 0; i < 4; i++)
        free(s->host_strings[i]);
    for (int i = 0; i < 2; i++)
        if (s->wake[i] >= 0)
            close(s->wake[i]);
    free(s->allow_uids);
    free(s->stats_file);
    if (s->reserve_fd >= 0)
        close(s->reserve_fd);
    pthread_mutex_destroy(&s->warn_lock);
    pthread_mutex_destroy(&s->host_lock);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cond);
    free(s);
}

const char *srv_socket_path(const struct srv *s) { return s->path; }

void srv_counts(struct srv *s, uint32_t *live, uint64_t *served, uint64_t *objects)
{
    pthread_mutex_lock(&s->mu);
    if (live)
        *live = s->live;
    if (served)
        *served = s->served;
    if (objects) {
        *objects = 0;
        pthread_mutex_lock(&s->host_lock);
        for (struct srv_conn *cn = s->conns; cn; cn = cn->next) {
            struct kctx *c = cn->cl ? cn->cl->ctx : NULL;
            if (c)
                *objects += ctx_objects_held(c);
        }
        pthread_mutex_unlock(&s->host_lock);
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- the public calls ------------------------------------------------------------------------ */

struct kiln_server {
    struct srv *srv;
};

kiln_result kiln_server_create(const kiln_server_desc *desc, kiln_server **out)
{
    err_clear();
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "out is NULL");
    *out = NULL;
    struct kiln_server *ks = mem_calloc(1, sizeof *ks);
    if (!ks)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the server");
    kiln_result r = srv_create(desc, &ks->srv);
    if (r == KILN_OK)
        r = srv_listen(ks->srv, desc ? desc->socket_path : NULL);
    if (r < 0) {
        srv_destroy(ks->srv);
        free(ks);
        return r;
    }
    *out = ks;
    return KILN_OK;
}

kiln_result kiln_server_run(kiln_server *ks)
{
    err_clear();
    if (!ks)
        return KILN_RAISE(KILN_ERR_INVALID, "server is NULL");
    return srv_run(ks->srv);
}

void kiln_server_stop(kiln_server *ks)
{
    if (ks)
        srv_stop(ks->srv);
}

void kiln_server_destroy(kiln_server *ks)
{
    if (!ks)
        return;
    srv_destroy(ks->srv);
    free(ks);
}

const char *kiln_server_socket_path(const kiln_server *ks) { return ks ? srv_socket_path(ks->srv) : ""; }

#ifdef KILN_TEST_HOOKS
struct srv *srv_of(kiln_server *ks) { return ks->srv; }
#endif

/* ---- the in-process server -------------------------------------------------------------------- */

static pthread_mutex_t inproc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct srv *inproc;   /* under inproc_lock */
static uint32_t inproc_refs;

kiln_result remote_inproc_connect(const kiln_context_desc *desc, struct srv **srv, struct tp **mine)
{
    *srv = NULL;
    *mine = NULL;
    pthread_mutex_lock(&inproc_lock);
    kiln_result r = KILN_OK;
    if (!inproc) {
        kiln_context_desc host = desc ? *desc : (kiln_context_desc){0};
        host.remote = NULL;
        kiln_server_desc sd = {.context = &host};
        r = srv_create(&sd, &inproc);
    }
    struct tp *theirs = NULL;
    if (r == KILN_OK)
        r = tp_inproc_pair(mine, &theirs);
    if (r == KILN_OK)
        r = srv_attach(inproc, theirs);
    if (r == KILN_OK) {
        inproc_refs++;
        *srv = inproc;
    } else if (*mine) {
        tp_destroy(*mine);
        *mine = NULL;
    }
    if (!inproc_refs && inproc) {
        srv_destroy(inproc);
        inproc = NULL;
    }
    pthread_mutex_unlock(&inproc_lock);
    return r;
}

void remote_inproc_release(struct srv *srv)
{
    pthread_mutex_lock(&inproc_lock);
    if (srv == inproc && --inproc_refs == 0) {
        srv_destroy(inproc);
        inproc = NULL;
    }
    pthread_mutex_unlock(&inproc_lock);
}
