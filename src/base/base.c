/* SPDX-License-Identifier: MIT */
/*
 * base.c: logging, errors, environment switches, strings, time.
 *
 * The last error is thread-local: a call's message stays readable until the
 * next failing call on the same thread. Log output goes to stderr, one line a
 * message, prefixed "kiln: <level>: ", or to the application's callback
 * (kiln_set_log_callback). The level is the one kiln_set_log_level set,
 * else KILN_LOG's, else warn. Lines are written one at a time (the sink's
 * lock), so a callback sees whole lines in order and never two at once.
 */
#define _GNU_SOURCE
#include "base.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <xxhash.h>

static _Thread_local char last_error[1024];
static _Thread_local kiln_result last_code;   /* the code last_error was raised with */

static enum log_level parse_level(const char *v)
{
    if (!v || !*v)
        return LOG_WARN;
    if (!strcasecmp(v, "error"))
        return LOG_ERROR;
    if (!strcasecmp(v, "warn") || !strcasecmp(v, "warning"))
        return LOG_WARN;
    if (!strcasecmp(v, "info"))
        return LOG_INFO;
    if (!strcasecmp(v, "debug"))
        return LOG_DEBUG;
    fprintf(stderr, "kiln: warn: KILN_LOG=%s is not one of error, warn, info, debug; using warn\n", v);
    return LOG_WARN;
}

static _Atomic int set_level = -1;   /* kiln_set_log_level's, as an enum log_level; -1: none */

enum log_level log_threshold(void)
{
    int l = atomic_load_explicit(&set_level, memory_order_relaxed);
    if (l >= 0)
        return (enum log_level)l;
    /* Every thread computes the same value from the same environment; the
     * worst case is parsing it twice. */
    static _Atomic int env_level = -1;
    l = atomic_load_explicit(&env_level, memory_order_relaxed);
    if (l < 0) {
        l = (int)parse_level(getenv("KILN_LOG"));
        atomic_store_explicit(&env_level, l, memory_order_relaxed);
    }
    return (enum log_level)l;
}

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards sink, sink_user; one line at a time */
static kiln_log_fn sink;
static void *sink_user;

void kiln_set_log_callback(kiln_log_fn fn, void *user)
{
    pthread_mutex_lock(&sink_lock);
    sink = fn;
    sink_user = user;
    pthread_mutex_unlock(&sink_lock);
}

void kiln_set_log_level(kiln_log_level level)
{
    int l = level >= KILN_LOG_ERROR && level <= KILN_LOG_DEBUG ? (int)level - 1 : -1;
    atomic_store_explicit(&set_level, l, memory_order_relaxed);
}

kiln_log_level kiln_get_log_level(void) { return (kiln_log_level)(log_threshold() + 1); }

void log_msg(enum log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    if (level > log_threshold())
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&sink_lock);
    if (sink)
        sink((kiln_log_level)(level + 1), line, sink_user);
    else
        fprintf(stderr, "kiln: %s: %s\n", names[level], line);
    pthread_mutex_unlock(&sink_lock);
}

#if defined(KILN_TEST_HOOKS) || !defined(NDEBUG)
void base_assert_failed(const char *file, int line, const char *cond)
{
    fprintf(stderr, "kiln: internal error: %s:%d: %s does not hold\n", file, line, cond);
    abort();
}
#endif

kiln_result err_raise(kiln_result code, const char *file, int line, const char *fmt, ...)
{
    /* Formatted apart first: a message may quote the error before it
     * (KILN_RAISE(..., "(%s)", err_last())), which formatting into
     * last_error itself would read while writing it. */
    char text[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    memcpy(last_error, text, sizeof last_error);
    last_code = code;
    log_debug("%s:%d: %s: %s", file, line, kiln_result_name(code), last_error);
    return code;
}

void err_clear(void)
{
    last_error[0] = 0;
    last_code = KILN_OK;
}
const char *err_last(void) { return last_error; }
kiln_result err_last_code(void) { return last_code; }

int env_flag(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on"))
        return 1;
    if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off"))
        return 0;
    log_warn("%s=%s is not a switch (1/true/yes/on or 0/false/no/off); using %d", name, v, dflt);
    return dflt;
}

/* Reads name through parse (parse_u64 or parse_size); dflt when unset or
 * empty, and when malformed, with a warning naming why. */
static uint64_t env_parsed(const char *name, uint64_t dflt, bool (*parse)(const char *, uint64_t *, char *),
                           const char *unit)
{
    const char *v = getenv(name);
    uint64_t x;
    char why[PARSE_WHY_LEN];
    if (!v || !*v)
        return dflt;
    if (!parse(v, &x, why)) {
        log_warn("%s: %s; using %llu%s", name, why, (unsigned long long)dflt, unit);
        return dflt;
    }
    return x;
}

uint64_t env_u64(const char *name, uint64_t dflt) { return env_parsed(name, dflt, parse_u64, ""); }
uint64_t env_size(const char *name, uint64_t dflt) { return env_parsed(name, dflt, parse_size, " bytes"); }

double env_seconds(const char *name, double dflt)
{
    const char *v = getenv(name);
    double x;
    char why[PARSE_WHY_LEN];
    if (!v || !*v)
        return dflt;
    if (!parse_seconds(v, &x, why)) {
        log_warn("%s: %s; using %g s", name, why, dflt);
        return dflt;
    }
    return x;
}

#ifdef KILN_TEST_HOOKS
/* 0: disarmed. Otherwise the number of allocations still to succeed plus
 * one; it sticks at 1 once reached, so every later allocation fails too. */
static _Atomic uint64_t fault_countdown;
static _Atomic uint64_t fault_hits;

static bool fault_now(void)
{
    uint64_t c = atomic_load_explicit(&fault_countdown, memory_order_relaxed);
    while (c > 1)
        if (atomic_compare_exchange_weak(&fault_countdown, &c, c - 1))
            return false;
    if (c == 1) {
        atomic_fetch_add(&fault_hits, 1);
        return true;
    }
    return false;
}

void mem_fault_arm(uint64_t n)
{
    atomic_store(&fault_hits, 0);
    atomic_store(&fault_countdown, n);
}

uint64_t mem_fault_hits(void) { return atomic_load(&fault_hits); }
#else
static inline bool fault_now(void) { return false; }   /* shipped builds: no fault injection */
#endif

void *mem_alloc(size_t n) { return fault_now() ? NULL : malloc(n); }
void *mem_calloc(size_t count, size_t size) { return fault_now() ? NULL : calloc(count, size); }
void *mem_realloc(void *p, size_t n) { return fault_now() ? NULL : realloc(p, n); }

char *str_dup(const char *s) { return s ? str_ndup(s, strlen(s)) : NULL; }

char *str_ndup(const char *s, size_t n)
{
    char *d = mem_alloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

bool str_icontains(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    if (!n)
        return true;
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return true;
    return false;
}

bool vec_reserve(void **buf, uint32_t *cap, uint32_t need, size_t sz)
{
    if (need <= *cap)
        return true;
    uint32_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *p = mem_realloc(*buf, (size_t)c * sz);
    if (!p)
        return false;
    *buf = p;
    *cap = c;
    return true;
}

void hash128(const void *data, size_t len, uint8_t out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, len));
    memcpy(out, c.digest, 16);
}

uint64_t time_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t at = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec = (time_t)(at / 1000000000ull);
    ts.tv_nsec = (long)(at % 1000000000ull);
    pthread_cond_timedwait(cond, mutex, &ts);
}

const char *kiln_result_name(kiln_result r)
{
    switch (r) {
    case KILN_OK: return "KILN_OK";
    case KILN_ERR_INVALID: return "KILN_ERR_INVALID";
    case KILN_ERR_HANDLE: return "KILN_ERR_HANDLE";
    case KILN_ERR_NO_DEVICE: return "KILN_ERR_NO_DEVICE";
    case KILN_ERR_DEVICE: return "KILN_ERR_DEVICE";
    case KILN_ERR_NO_MEMORY: return "KILN_ERR_NO_MEMORY";
    case KILN_ERR_COMPILE: return "KILN_ERR_COMPILE";
    case KILN_ERR_PENDING: return "KILN_ERR_PENDING";
    case KILN_ERR_LAYOUT: return "KILN_ERR_LAYOUT";
    case KILN_ERR_BUSY: return "KILN_ERR_BUSY";
    case KILN_ERR_LIMIT: return "KILN_ERR_LIMIT";
    case KILN_ERR_TIMEOUT: return "KILN_ERR_TIMEOUT";
    case KILN_ERR_IO: return "KILN_ERR_IO";
    case KILN_ERR_VERIFY: return "KILN_ERR_VERIFY";
    case KILN_ERR_DEVICE_LOST: return "KILN_ERR_DEVICE_LOST";
    case KILN_ERR_PROTOCOL: return "KILN_ERR_PROTOCOL";
    }
    return "KILN_ERR_UNKNOWN";
}

const char *kiln_last_error(void) { return last_error; }

#define KILN_STR_(x) #x
#define KILN_STR(x) KILN_STR_(x)
const char *kiln_version(void)
{
    return KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(KILN_VERSION_MINOR) "." KILN_STR(KILN_VERSION_PATCH);
}
