/* SPDX-License-Identifier: MIT */
/*
 * trace.c: the Chrome trace-event file (see trace.h). The file is one JSON
 * object, {"traceEvents": [...], "displayTimeUnit": "ms"}; each event an
 * object with name, cat, ph ("X" spans with dur, "i" marks, "M" track
 * names), ts in microseconds, pid 1, tid its track. Strings are escaped as
 * JSON asks (quotes, backslashes, control characters as \u00XX), so any
 * program or scheme name is safe in it.
 */
#define _GNU_SOURCE
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct trace {
    pthread_mutex_t lock;   /* guards buf, len, cap, oom, events */
    char *buf;
    size_t len, cap;
    bool oom;               /* an event could not be kept: the file says how many were lost */
    uint64_t lost, events;
    uint64_t t0_ns;
    char path[4096];
};

kiln_result trace_open(const char *path, struct trace **out)
{
    *out = NULL;
    if (!path || !*path)
        return KILN_OK;
    struct trace *t = mem_calloc(1, sizeof *t);
    if (!t)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the trace");
    if (strlen(path) >= sizeof t->path) {
        free(t);
        return KILN_RAISE(KILN_ERR_INVALID, "trace path of %zu bytes; at most %zu", strlen(path),
                          sizeof t->path - 1);
    }
    snprintf(t->path, sizeof t->path, "%s", path);
    pthread_mutex_init(&t->lock, NULL);
    t->t0_ns = time_now_ns();
    *out = t;
    return KILN_OK;
}

/* Appends n bytes (lock held); false when out of memory. */
static bool put(struct trace *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {   /* doubling, to at most 1 GiB of events */
        size_t cap = t->cap ? t->cap : 1 << 16;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = cap <= (1u << 30) ? realloc(t->buf, cap) : NULL;
        if (!grown)
            return false;
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    return true;
}

/* A JSON string's characters (without the quotes) of s. */
static bool put_escaped(struct trace *t, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            if (!put(t, esc, 2))
                return false;
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            if (!put(t, esc, 6))
                return false;
        } else if (!put(t, (const char *)&c, 1)) {
            return false;
        }
    }
    return true;
}

static void event(struct trace *t, char ph, uint32_t track, const char *cat, const char *name, uint64_t at_ns,
                  uint64_t dur_ns, const char *detail)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    uint64_t ts = at_ns > t->t0_ns ? at_ns - t->t0_ns : 0;
    char head[160];
    int n = snprintf(head, sizeof head, "%s{\"ph\":\"%c\",\"pid\":1,\"tid\":%u,\"ts\":%llu.%03u,", t->events ? ",\n" : "",
                     ph, track, (unsigned long long)(ts / 1000), (unsigned)(ts % 1000));
    size_t before = t->len;
    bool ok = put(t, head, (size_t)n);
    if (ok && ph == 'X') {
        n = snprintf(head, sizeof head, "\"dur\":%llu.%03u,", (unsigned long long)(dur_ns / 1000),
                     (unsigned)(dur_ns % 1000));
        ok = put(t, head, (size_t)n);
    }
    if (ok && ph == 'i')
        ok = put(t, "\"s\":\"t\",", 8);
    ok = ok && put(t, "\"cat\":\"", 7) && put_escaped(t, cat) && put(t, "\",\"name\":\"", 10) &&
         put_escaped(t, ph == 'M' ? "thread_name" : name) && put(t, "\",\"args\":{", 10);
    if (ok && ph == 'M')
        ok = put(t, "\"name\":\"", 8) && put_escaped(t, name) && put(t, "\"", 1);
    else if (ok && detail)
        ok = put(t, "\"detail\":\"", 10) && put_escaped(t, detail) && put(t, "\"", 1);
    ok = ok && put(t, "}}", 2);
    if (ok) {
        t->events++;
    } else {
        t->len = before;   /* the event whole or not at all */
        t->lost++;
    }
    pthread_mutex_unlock(&t->lock);
}

void trace_track(struct trace *t, uint32_t track, const char *name)
{
    event(t, 'M', track, "track", name, t ? t->t0_ns : 0, 0, NULL);
}

void trace_span(struct trace *t, uint32_t track, const char *cat, const char *name, uint64_t start_ns,
                uint64_t end_ns, const char *detail)
{
    event(t, 'X', track, cat, name, start_ns, end_ns > start_ns ? end_ns - start_ns : 0, detail);
}

void trace_mark(struct trace *t, uint32_t track, const char *cat, const char *name, uint64_t at_ns,
                const char *detail)
{
    event(t, 'i', track, cat, name, at_ns, 0, detail);
}

/* Writes data to path: through a temporary file beside it renamed over
 * it, or in place where path is no regular file (a FIFO, /dev/stdout).
 * KILN_ERR_IO raised naming the step that failed. */
static kiln_result write_file(const char *path, const char *data, size_t len)
{
    struct stat st;
    bool in_place = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    const char *target = in_place ? path : tmp;
    int fd = open(target, O_WRONLY | O_CLOEXEC | (in_place ? 0 : O_CREAT | O_TRUNC), 0644);
    if (fd < 0)
        return KILN_RAISE(KILN_ERR_IO, "cannot open %s: %s", target, strerror(errno));
    int err = 0;
    for (size_t done = 0; !err && done < len;) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0 && errno != EINTR)
            err = errno;
        else if (w > 0)
            done += (size_t)w;
    }
    if (close(fd) < 0 && !err)
        err = errno;
    if (!err && !in_place && rename(tmp, path) < 0)
        err = errno;
    if (err) {
        if (!in_place)
            unlink(tmp);
        return KILN_RAISE(KILN_ERR_IO, "writing %s: %s", path, strerror(err));
    }
    return KILN_OK;
}

void trace_close(struct trace *t)
{
    if (!t)
        return;
    char tail[160];
    int n = snprintf(tail, sizeof tail, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"events_lost\":%llu}}\n",
                     (unsigned long long)t->lost);
    static const char head[] = "{\"traceEvents\":[\n";
    size_t total = sizeof head - 1 + t->len + (size_t)n;
    char *all = mem_alloc(total);
    if (!all) {
        log_warn("trace: NOT written to %s: out of host memory for its %zu bytes", t->path, total);
    } else {
        memcpy(all, head, sizeof head - 1);
        if (t->len)
            memcpy(all + sizeof head - 1, t->buf, t->len);
        memcpy(all + sizeof head - 1 + t->len, tail, (size_t)n);
        if (write_file(t->path, all, total) < 0)
            log_warn("trace: NOT written to %s: %s", t->path, kiln_last_error());
        else
            log_info("trace: %llu events written to %s%s", (unsigned long long)t->events, t->path,
                     t->lost ? " (some lost: out of host memory)" : "");
        free(all);
    }
    pthread_mutex_destroy(&t->lock);
    free(t->buf);
    free(t);
}
