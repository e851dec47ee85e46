/* SPDX-License-Identifier: MIT */
/*
 * remote: kiln's public API from another process (or thread). The client
 * stub (client.c) is a context whose rt_ops encode each call as a pipe
 * record and wait for its reply; the server (server.c) owns one device,
 * one compile service and one archive (a host context), and gives each
 * connection a context of its own on them, served by its own thread; the
 * applier (apply.c) decodes one request and runs it on that context.
 * docs/server.md says what travels and what a client can and cannot do.
 */
#ifndef KILN_REMOTE_H
#define KILN_REMOTE_H

#include "base/bytes.h"
#include "context/context.h"

struct tp;
struct srv;
struct srv_client;

/* ---- the client ------------------------------------------------------------------------ */

/* Where a context desc (or KILN_REMOTE) sends a context: NULL for a local
 * one. "unix:PATH" (or a path starting with '/'), or "inproc" for a server
 * on a thread of this process (one, shared by every such context, made for
 * the first and closed with the last). */
const char *remote_target(const kiln_context_desc *desc);
/* A context served remotely at target. */
KILN_NODISCARD kiln_result remote_create(const char *target, const kiln_context_desc *desc, uint32_t serial,
                                         struct kctx **out);

/* ---- the server ------------------------------------------------------------------------ */

struct srv_quota {
    uint32_t objects;     /* buffers, images, programs, schemes and nodes a client holds at once */
    uint64_t bytes;       /* bytes of its buffers and images */
    uint32_t compiles;    /* its programs compiling at once */
};

KILN_NODISCARD kiln_result srv_create(const kiln_server_desc *desc, struct srv **out);
/* Serves a connection (taken over) on a thread of its own. */
KILN_NODISCARD kiln_result srv_attach(struct srv *s, struct tp *t);
/* Accepts connections on the server's socket until srv_stop. */
KILN_NODISCARD kiln_result srv_run(struct srv *s);
void srv_stop(struct srv *s);   /* async-signal-safe */
/* Drops every connection (each one's objects freed), then the host. */
void srv_destroy(struct srv *s);
const char *srv_socket_path(const struct srv *s);
/* Connections being served now, served in all, and the objects (buffers,
 * images, programs, schemes, nodes) their contexts hold now; any may be
 * NULL. */
void srv_counts(struct srv *s, uint32_t *live, uint64_t *served, uint64_t *objects);
#ifdef KILN_TEST_HOOKS
/* The server behind a public handle (test builds only). */
struct srv *srv_of(kiln_server *ks);
#endif

/* ---- the applier ----------------------------------------------------------------------- */

/* A connection's state, apart from how its bytes move: for the server's
 * workers and for the applier's fuzz target. segment, when not NULL, maps
 * the bulk-data segment announced with serial (at least `need` bytes). */
typedef kiln_result (*srv_segment_fn)(void *ud, uint64_t serial, uint64_t need, uint8_t **map, uint64_t *size);
KILN_NODISCARD kiln_result srv_client_open(struct srv *s, srv_segment_fn segment, void *ud,
                                           struct srv_client **out);
/* Applies one request frame and writes its whole reply frame to reply
 * (reply->len 0 first; left 0 for a run-ahead request, PIPE_REQ_POSTED,
 * that succeeded: it has no answer). Returns false when the connection is to end after
 * the reply goes (context_destroy, or a request so broken nothing after it
 * can be trusted: its reply says why). */
bool srv_apply(struct srv_client *cl, const uint8_t *req, size_t len, struct bytes *reply);
/* Gives back the client's data segment's import on the device (before
 * the segment is unmapped: replaced by a bigger one, or at the end), once
 * the client's work is done: a copy through it may still run after its
 * wait failed, and the segment's memory must outlive it (context.h). The
 * wait is in slices with the device let go: it delays this client alone. */
void srv_client_unimport(struct srv_client *cl);
/* Frees everything the client's context holds (its death, or its end). */
void srv_client_close(struct srv_client *cl);

#endif
