/* SPDX-License-Identifier: MIT */
/*
 * remote_private.h: the server's and the applier's shared state (server.c,
 * apply.c, client.c's in-process server).
 *
 * Locking: host_lock serializes every call on the host's device (the
 * backend is not thread-safe; each client context is a kctx on it). A
 * worker takes it per request, and a call that may wait long (ticket and
 * program waits, wait_idle) waits in slices, letting it go between them,
 * so one client's wait never stalls the others. mu guards the connection
 * list and counts. Order: mu, then host_lock (srv_counts); nothing takes
 * mu while holding host_lock.
 */
#ifndef KILN_REMOTE_PRIVATE_H
#define KILN_REMOTE_PRIVATE_H

#include <pthread.h>
#include <sys/types.h>

#include "base/list.h"
#include "pipe/pipe.h"
#include "remote.h"
#include "transport/transport.h"

struct srv_conn;

/* The host contexts' handle serial (no handle of a host reaches a client). */
#define SRV_HOST_SERIAL 1u

/* Warnings a client can cause, each rate-limited on its own. */
enum srv_warn_kind { SRV_WARN_HELLO, SRV_WARN_GONE, SRV_WARN_UID, SRV_WARN_FULL, SRV_WARN_SLOW, SRV_WARN_START,
                     SRV_WARN_FDS, SRV_WARN_FDS_BACK, SRV_WARN_STREAM, SRV_WARN_COUNT };
struct srv_warn_rate {
    uint64_t last_ns;            /* the last one logged */
    uint64_t quiet;              /* held back since */
    bool said;
};

struct srv {
    struct kctx *host;           /* owns the device, compile service and archive */
    pthread_mutex_t host_lock;   /* see above */
    struct srv_quota quota;
    char path[108];              /* the socket path; "" in process only */
    int listen_fd;
    int wake[2];                 /* a pipe: srv_stop writes, srv_run polls */
    uid_t uid;
    uint32_t *allow_uids, allow_uid_count;
    /* The host's desc, its strings copied, to make a new host when the
     * device is lost (srv_host_renew). */
    kiln_context_desc host_desc;
    char *host_strings[4];       /* owned: device, archive_dir, archive_readonly, trace_path */
    /* Hosts on a lost device, kept while clients made on them live (under
     * host_lock); each client counts on its host (srv_client.host). */
    struct srv_old_host { struct kctx *host; uint32_t clients; struct srv_old_host *next; } *old_hosts;
    uint32_t host_clients;       /* clients on the current host (under host_lock) */
    uint32_t hosts_renewed;
    pthread_mutex_t mu;
    pthread_cond_t cond;         /* a connection ended */
    struct srv_conn *conns;      /* live connections (worker threads) */
    uint32_t live;
    uint64_t served;
    uint32_t next_serial;        /* tags client contexts' handles (under mu) */
    uint32_t serial_floor[256];  /* per 8-bit serial: the highest generation its contexts issued (under mu) */
    uint32_t serial_live[256];   /* per 8-bit serial: live contexts that have it, the host's too (under mu) */
    uint32_t max_clients;        /* connections served at once; more are refused at accept */
    uint64_t hello_ns;           /* from accept to a made context */
    int reserve_fd;              /* given up to accept a connection when descriptors run out (-1: none) */
    bool fds_short;              /* in an out-of-descriptors episode (srv_run's thread only) */
    uint64_t fds_refused;        /* connections refused in it */
    /* Per-client counters (pipe.h), as KILN_PIPE_STATS and
     * KILN_PIPE_STATS_FILE said at the server's start; set once. */
    bool stats_on, stats_log;
    char *stats_file;
    uint64_t epoch;              /* this run's, written into every stream's control page */
    /* The server's heartbeat: one thread beats in every live stream's
     * control page (beating: a list of its own, under beat_lock, so that
     * nothing else the server locks can hold a beat back). */
    pthread_mutex_t beat_lock;
    pthread_cond_t beat_cond;
    struct srv_conn *beating;
    bool beat_stop, beat_running;
    struct kthread beat;
    pthread_mutex_t warn_lock;   /* guards warn */
    struct srv_warn_rate warn[SRV_WARN_COUNT];
};


/* A client's work in flight on the device, at most: pieces of work (a
 * submit, a staged upload, a copy through the segment) and the bytes of
 * the requests that made them. Run-ahead calls cost a client no answer,
 * so this is what bounds a flood of them: past it, the client's next call
 * waits for its own oldest work, its ring fills and its own posts slow
 * down, and another client's work waits behind this much of its at most. */
#define SRV_AHEAD_WORK 256u
#define SRV_AHEAD_BYTES (64ull << 20)

struct srv_client {
    struct srv *srv;
    struct kctx *ctx;            /* NULL until context_create */
    struct kctx *host;           /* the host ctx was made on (under host_lock) */
    uint32_t serial;             /* its handles' serial (set with ctx) */
    srv_segment_fn segment;
    void *segment_ud;
    uint64_t bytes;              /* of its buffers and images */
    uint64_t calls, refused;
    struct pipe_stats stats;     /* since its last summary (srv.stats_on); its worker's alone */
    struct bytes out;            /* a reply's out bytes, reused from request to request */
    /* The data segment imported on the device (VK_EXT_external_memory_host,
     * under host_lock): an upload from it is one device copy. */
    struct kb_host *import;
    const uint8_t *import_map;   /* the mapping import (or its refusal) is for; NULL: none tried */
    /* Its tickets are its own numbers (pipe_rec_submit): ticket k's device
     * ticket is dev_tickets[k % SRV_TICKETS_KEPT] while k is among the
     * last SRV_TICKETS_KEPT; an older one waits for the oldest kept (it is
     * done when that is). A submit that failed maps to the one before it. */
    uint64_t *dev_tickets;       /* SRV_TICKETS_KEPT, made at the first submit */
    uint64_t tickets;            /* its newest ticket */
    /* Its work left running on the device (submits, staged uploads, copies
     * through the segment), oldest first: each piece's ticket and the
     * request bytes that made it. A call finds it at SRV_AHEAD_WORK pieces
     * or SRV_AHEAD_BYTES and waits for the oldest first (srv_apply). Its
     * connection's thread alone. */
    struct srv_ahead { uint64_t ticket, bytes; } ahead[SRV_AHEAD_WORK];
    uint32_t ahead_first, ahead_n;
    uint64_t ahead_bytes;
    uint64_t ahead_ticket;       /* the newest ticket in it */
    char who[64];                /* "client 3 (pid 1234)" */
};

#define SRV_TICKETS_KEPT 1024u

/* ---- the command stream (stream.c) ------------------------------------------------------- */

/* Record kinds, both rings: a message in the record, or a message that is
 * the next frame on the socket (its payload: the frame's u64 length). */
enum stream_kind { STREAM_MSG = 1, STREAM_FRAME = 2, STREAM_KINDS = 2 };
#define STREAM_RING_KIB_DEFAULT 1024u              /* KILN_IPC_RING_KIB: each ring's size */
#define STREAM_RING_MAX (64ull << 20)
#define STREAM_CLIENT_TIMEOUT_MS_DEFAULT 300000u   /* KILN_IPC_CLIENT_TIMEOUT_MS: a silent client's objects live this long */
#define STREAM_BUF_KEEP (256u << 10)               /* a record buffer past this goes back after its message */
#define STREAM_FRAME_WAIT_NS (10ull * 1000 * 1000 * 1000)   /* a frame a record announced must come within this */

/* The stream's announcement on the descriptor channel, with the segment:
 * {STREAM_MAGIC, the segment's bytes}. The request PIPE_OP_STREAM (a frame)
 * follows it; its reply's out is the server's epoch. */
#define STREAM_MAGIC 0x4d525453u   /* "STRM" */

struct stream {
    struct tp_segment seg;       /* fd -1: none */
    struct tp_control *ctl;      /* at seg.map */
    struct tp_layout layout;
    struct tp_ring out, in;      /* this side's: the ring it writes, the ring it reads */
    struct tp_peer peer;         /* the other side's heartbeat and socket */
    struct tp_heartbeat beat;    /* the client's (the server beats for all its clients) */
    uint64_t epoch;
    uint8_t *buf;                /* the last record read */
    size_t cap;
    bool server, live;
};
void stream_init(struct stream *st);
/* The client's: a new segment, its control page and rings. */
KILN_NODISCARD kiln_result stream_make(struct stream *st);
/* The server's: the client's segment (fd consumed), checked, its epoch
 * and generation written. */
KILN_NODISCARD kiln_result stream_adopt(struct stream *st, int fd, uint64_t size, uint64_t epoch);
/* Both sides, once the server answered PIPE_OP_STREAM: the peer watched
 * (its heartbeat, and peer_fd's closing), the client's heartbeat started
 * and the epoch the server answered checked against the page. */
KILN_NODISCARD kiln_result stream_start(struct stream *st, uint64_t epoch, int peer_fd);
void stream_finish(struct stream *st);
/* The most bytes one record's message may hold; more go as a frame. */
size_t stream_record_max(const struct stream *st);
/* Writes one record of kind holding a then b, and publishes it, waiting
 * at most timeout_ns for room (KILN_ERR_TIMEOUT). */
KILN_NODISCARD kiln_result stream_put(struct stream *st, uint32_t kind, const void *a, size_t na, const void *b,
                                      size_t nb, uint64_t timeout_ns);
/* The next record, copied out and retired: *msg (valid until the next get)
 * and *len. KILN_ERR_TIMEOUT when none came within timeout_ns (or the wait
 * woke for nothing); KILN_ERR_IO when the peer died, its epoch changed or
 * it broke the ring. */
KILN_NODISCARD kiln_result stream_get(struct stream *st, uint64_t timeout_ns, uint32_t *kind, const uint8_t **msg,
                                      size_t *len);
/* A whole message: one record, or, past stream_record_max, a record
 * announcing it and then the message as a frame on tp. KILN_ERR_TIMEOUT
 * (nothing sent) when the ring had no room within timeout_ns. */
KILN_NODISCARD kiln_result stream_send(struct stream *st, struct tp *tp, const void *msg, size_t n,
                                       uint64_t timeout_ns);
/* The frame length a STREAM_FRAME record announces, checked against the
 * frame limit (KILN_ERR_PROTOCOL when the record is not one). */
KILN_NODISCARD kiln_result stream_announced(const uint8_t *msg, size_t len, uint64_t *want);
/* The next record if one is there (KILN_ERR_PENDING: none), without
 * waiting: one load of the producer's head when the ring is empty. */
KILN_NODISCARD kiln_result stream_try_get(struct stream *st, uint32_t *kind, const uint8_t **msg, size_t *len);
/* Gives back a big record buffer. */
void stream_shrink(struct stream *st);
/* A server's epoch: random, nonzero. */
uint64_t stream_epoch_new(void);

/* A reply to op's call seq: its head, r's message when r is an error,
 * else out's bytes (rep->len 0 first). */
void srv_reply(struct bytes *rep, uint32_t op, uint64_t seq, kiln_result r, const struct bytes *out);

/* Makes a new host in place of one whose device was lost (host_lock
 * held): new clients are served by it; clients of the old one keep
 * failing with KILN_ERR_DEVICE_LOST until they go, then it is freed. */
KILN_NODISCARD kiln_result srv_host_renew(struct srv *s);
/* A client made on host went (host_lock held): an old host with no
 * clients left is freed. */
void srv_host_release(struct srv *s, struct kctx *host);

/* The in-process server (client.c's "inproc"): made by the first context
 * that asks, with that context's desc, and closed with the last. */
kiln_result remote_inproc_connect(const kiln_context_desc *desc, struct srv **srv, struct tp **mine);
void remote_inproc_release(struct srv *srv);

#endif
