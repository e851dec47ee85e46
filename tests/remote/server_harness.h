/* SPDX-License-Identifier: MIT */
/*
 * server_harness.h: a real kiln server on a thread of the test process, at
 * a socket in a fresh folder under /tmp, for tests that talk to it as
 * another process would (test_remote, test_hostile). Include test.h first.
 */
#ifndef KILN_TEST_SERVER_HARNESS_H
#define KILN_TEST_SERVER_HARNESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln.h"

struct server {
    char dir[32];              /* the test's own folder */
    char path[48];             /* the socket in it */
    char remote[64];           /* "unix:<path>" */
    kiln_server *ks;
    pthread_t thread;
    bool running;
    kiln_result run_result;
};

/* A fresh folder for a test (named from prefix, "/tmp/kiln-x"); the socket
 * path is <dir>/kiln.sock. */
static inline bool folder_make_as(struct server *s, const char *prefix)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "%s-XXXXXX", prefix);
    if (!mkdtemp(s->dir))
        return false;
    snprintf(s->path, sizeof s->path, "%s/kiln.sock", s->dir);
    snprintf(s->remote, sizeof s->remote, "unix:%s", s->path);
    return true;
}

static inline void *harness_serve_main(void *arg)
{
    struct server *s = arg;
    s->run_result = kiln_server_run(s->ks);
    return NULL;
}

/* Makes the server at s->path (desc may be NULL) and runs it on a thread. */
static inline kiln_result server_start(struct server *s, const kiln_server_desc *desc)
{
    kiln_server_desc d = desc ? *desc : (kiln_server_desc){0};
    d.socket_path = s->path;
    kiln_result r = kiln_server_create(&d, &s->ks);
    if (r < 0)
        return r;
    if (pthread_create(&s->thread, NULL, harness_serve_main, s)) {
        kiln_server_destroy(s->ks);
        s->ks = NULL;
        return KILN_ERR_NO_MEMORY;
    }
    s->running = true;
    return KILN_OK;
}

/* Stops and destroys the server (if running); checks that run returned OK. */
static inline void server_stop(struct server *s)
{
    if (s->running) {
        kiln_server_stop(s->ks);
        pthread_join(s->thread, NULL);
        s->running = false;
        CHECK_RESULT(s->run_result, KILN_OK);
    }
    if (s->ks)
        kiln_server_destroy(s->ks);
    s->ks = NULL;
}

static inline kiln_result client(const struct server *s, kiln_context *out)
{
    return kiln_context_create(&(kiln_context_desc){.remote = s->remote}, out);
}

/* Stops the server and removes its socket and folder. */
static inline void server_finish(struct server *s)
{
    server_stop(s);
    unlink(s->path);
    rmdir(s->dir);
}

/* An honest client's whole round: a buffer up and back. */
static inline bool honest_round(const struct server *s)
{
    kiln_context c;
    if (client(s, &c) != KILN_OK) {
        fprintf(stderr, "honest client: %s\n", kiln_last_error());
        return false;
    }
    uint32_t v[64], got[64];
    for (uint32_t i = 0; i < 64; i++)
        v[i] = i * 2654435761u;
    kiln_buffer b;
    bool ok = kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof v}, &b) == KILN_OK &&
              kiln_buffer_upload(c, b, 0, v, sizeof v) == KILN_OK &&
              kiln_buffer_readback(c, b, 0, got, sizeof got) == KILN_OK && !memcmp(v, got, sizeof v);
    if (!ok)
        fprintf(stderr, "honest client: %s\n", kiln_last_error());
    kiln_context_destroy(c);
    return ok;
}

#endif
