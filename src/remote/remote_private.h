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
                     SRV_WARN_FDS, SRV_WARN_FDS_BACK, SRV_WARN_COUNT };
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
    pthread_mutex_t warn_lock;   /* guards warn */
    struct srv_warn_rate warn[SRV_WARN_COUNT];
};


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
    char who[64];                /* "client 3 (pid 1234)" */
};

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
