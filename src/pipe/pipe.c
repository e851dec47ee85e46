/* SPDX-License-Identifier: MIT */
/*
 * pipe.c: the catalogue's tables, strings in a tail, and the counters'
 * two forms.
 */
#include "pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct row {
    const char *name;
    enum pipe_class cls;
    uint32_t flags, rec_size;
} rows[] = {
#define X(name, record, class, flags, ...) {#name, PIPE_CLASS_##class, (flags), sizeof(struct pipe_rec_##record)},
#define L(name, record, class, flags) X(name, record, class, flags, )
#include "context/calls.def"
#undef L
#undef X
};
_Static_assert(sizeof rows / sizeof rows[0] == PIPE_OPS, "one row per catalogue entry");

static const char *const class_names[PIPE_CLASSES] = {"object", "data", "query", "state", "submit", "wait",
                                                      "archive"};

const char *pipe_op_name(uint32_t op) { return op < PIPE_OPS ? rows[op].name : op == PIPE_OP_STREAM ? "stream" : NULL; }
enum pipe_class pipe_op_class(uint32_t op) { return op < PIPE_OPS ? rows[op].cls : PIPE_CLASSES; }
uint32_t pipe_op_flags(uint32_t op) { return op < PIPE_OPS ? rows[op].flags : 0; }
uint32_t pipe_op_rec_size(uint32_t op) { return op < PIPE_OPS ? rows[op].rec_size : 0; }
const char *pipe_class_name(uint32_t cls) { return cls < PIPE_CLASSES ? class_names[cls] : "?"; }

void pipe_put_str(struct bytes *b, const char *s, size_t n)
{
    if (!s) {
        bytes_put_u32(b, PIPE_NULL);
        return;
    }
    if (n == SIZE_MAX)
        n = strlen(s);
    if (n >= PIPE_NULL) {   /* cannot be sent; the frame limit refuses it long before */
        b->oom = true;
        return;
    }
    bytes_put_u32(b, (uint32_t)n);
    bytes_put(b, s, n);
}

void pipe_arena_init(struct pipe_arena *a, size_t tail_size)
{
    /* Each string takes at least its 4 length bytes of the tail and one
     * NUL more here: twice the tail always holds them. */
    *a = (struct pipe_arena){.cap = 2 * tail_size + 16};
}

void pipe_arena_finish(struct pipe_arena *a)
{
    free(a->p);
    *a = (struct pipe_arena){0};
}

kiln_result pipe_read_str(struct bytes_reader *r, struct pipe_arena *a, const char *what, bool may_hold_nul,
                          const char **out, size_t *len)
{
    *out = NULL;
    if (len)
        *len = 0;
    uint32_t n = bytes_read_u32(r);
    if (r->overrun)
        return KILN_RAISE(KILN_ERR_INVALID, "request: the tail ends before %s's length", what);
    if (n == PIPE_NULL)
        return KILN_OK;
    const uint8_t *s = bytes_read_span(r, n);
    if (!s)
        return KILN_RAISE(KILN_ERR_INVALID, "request: %s claims %u bytes; the tail holds fewer", what, n);
    if (!may_hold_nul && memchr(s, 0, n))
        return KILN_RAISE(KILN_ERR_INVALID, "request: %s holds a NUL byte", what);
    if (!a->p && !(a->p = mem_alloc(a->cap)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a request's strings");
    if (a->cap - a->used < (size_t)n + 1)   /* cannot happen for a tail the arena was sized for */
        return KILN_RAISE(KILN_ERR_INVALID, "request: %s does not fit its arena", what);
    char *d = a->p + a->used;
    memcpy(d, s, n);
    d[n] = 0;
    a->used += (size_t)n + 1;
    *out = d;
    if (len)
        *len = n;
    return KILN_OK;
}

/* Appends to buf at *at, never past cap (as snprintf, counting what it
 * would have written). */
KILN_PRINTF(4, 5) static void put(char *buf, size_t cap, int *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t off = (size_t)*at < cap ? (size_t)*at : cap;
    int n = vsnprintf(buf + off, cap - off, fmt, ap);
    va_end(ap);
    if (n > 0)
        *at += n;
}

static void put_by_class(char *buf, size_t cap, int *at, const char *key, const uint64_t *v)
{
    put(buf, cap, at, "\"%s\":{", key);
    for (uint32_t i = 0; i < PIPE_CLASSES; i++)
        put(buf, cap, at, "%s\"%s\":%llu", i ? "," : "", class_names[i], (unsigned long long)v[i]);
    put(buf, cap, at, "}");
}

int pipe_stats_json(const struct pipe_stats *s, enum pipe_side side, const char *who, char *buf, size_t cap)
{
    int at = 0;
    if (cap)
        buf[0] = 0;
    put(buf, cap, &at, "{\"side\":\"%s\",", side == PIPE_SIDE_SERVER ? "server" : "client");
    if (side == PIPE_SIDE_SERVER)
        put(buf, cap, &at, "\"client\":\"%s\",", who ? who : "");
    put(buf, cap, &at, "\"submits\":%llu,", (unsigned long long)s->submits);
    put_by_class(buf, cap, &at, "calls", s->calls);
    put(buf, cap, &at, ",");
    put_by_class(buf, cap, &at, "bytes_sent", s->bytes_sent);
    put(buf, cap, &at, ",");
    put_by_class(buf, cap, &at, "bytes_received", s->bytes_received);
    put(buf, cap, &at, ",\"segment_bytes\":%llu,", (unsigned long long)s->segment_bytes);
    if (side == PIPE_SIDE_CLIENT)
        put(buf, cap, &at, "\"memo_hits\":%llu,\"memo_misses\":%llu,", (unsigned long long)s->memo_hits,
            (unsigned long long)s->memo_misses);
    put(buf, cap, &at, "\"refused\":%llu,\"posted\":%llu,\"deferred\":%llu", (unsigned long long)s->refused,
        (unsigned long long)s->posted, (unsigned long long)s->deferred);
    if (side == PIPE_SIDE_SERVER)
        put(buf, cap, &at, ",\"applied\":%llu,\"stalls\":%llu,\"stalled_ns\":%llu,\"imported_bytes\":%llu,"
            "\"paced\":%llu,\"paced_ns\":%llu", (unsigned long long)s->applied, (unsigned long long)s->stalls,
            (unsigned long long)s->stalled_ns, (unsigned long long)s->imported_bytes, (unsigned long long)s->paced,
            (unsigned long long)s->paced_ns);
    put(buf, cap, &at, "}");
    return at;
}

int pipe_stats_line(const struct pipe_stats *s, enum pipe_side side, const char *who, char *buf, size_t cap)
{
    uint64_t calls = 0, sent = 0, received = 0;
    for (uint32_t i = 0; i < PIPE_CLASSES; i++) {
        calls += s->calls[i];
        sent += s->bytes_sent[i];
        received += s->bytes_received[i];
    }
    int at = 0;
    if (cap)
        buf[0] = 0;
    if (side == PIPE_SIDE_SERVER)
        put(buf, cap, &at, "pipe (server, %s): ", who ? who : "a client");
    else
        put(buf, cap, &at, "pipe: ");
    put(buf, cap, &at, "%llu submits, %llu calls (", (unsigned long long)s->submits, (unsigned long long)calls);
    for (uint32_t i = 0; i < PIPE_CLASSES; i++)
        put(buf, cap, &at, "%s%s %llu", i ? ", " : "", class_names[i], (unsigned long long)s->calls[i]);
    put(buf, cap, &at, "), %llu bytes sent, %llu received, %llu through the segment; ", (unsigned long long)sent,
        (unsigned long long)received, (unsigned long long)s->segment_bytes);
    if (side == PIPE_SIDE_CLIENT)
        put(buf, cap, &at, "memo %llu hits, %llu misses; ", (unsigned long long)s->memo_hits,
            (unsigned long long)s->memo_misses);
    put(buf, cap, &at, "%llu refused; %llu run ahead, %llu of them failed", (unsigned long long)s->refused,
        (unsigned long long)s->posted, (unsigned long long)s->deferred);
    if (side == PIPE_SIDE_SERVER)
        put(buf, cap, &at, "; %llu applied, %llu stalls on the host lock (%.3f ms); %llu bytes uploaded on the device "
            "from the imported segment; %llu waits at its bound of work in flight (%.3f ms)",
            (unsigned long long)s->applied, (unsigned long long)s->stalls, (double)s->stalled_ns / 1e6,
            (unsigned long long)s->imported_bytes, (unsigned long long)s->paced, (double)s->paced_ns / 1e6);
    return at;
}

void pipe_stats_flush(struct pipe_stats *s, enum pipe_side side, const char *who, bool log, const char *file)
{
    if (log) {
        char line[1024];
        pipe_stats_line(s, side, who, line, sizeof line);
        log_warn("%s", line);
    }
    if (file) {
        FILE *f = fopen(file, "a");
        if (f) {
            char json[2048];
            pipe_stats_json(s, side, who, json, sizeof json);
            fprintf(f, "%s\n", json);
            fclose(f);
        }
    }
    memset(s, 0, sizeof *s);
}
