/* SPDX-License-Identifier: MIT */
/*
 * base: what every module of kiln stands on. Logging with levels, raising
 * errors with file and line (the message becomes the thread's last error),
 * environment switches, and small allocation helpers. The byte writer and
 * reader (bytes.h) and the number parsers (parse.h) come with it.
 *
 * Errors: a failing function returns a negative kiln_result made by
 * KILN_RAISE(code, fmt, ...), which logs at debug level with file:line and
 * stores the message for kiln_last_error(). KILN_TRY(expr) forwards one.
 */
#ifndef KILN_BASE_H
#define KILN_BASE_H

#include <stdarg.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"

/* C linkage for C++ callers (src/program/optimize.cpp), over bytes.h's and
 * parse.h's declarations too. */
#ifdef __cplusplus
extern "C" {
#endif

#include "bytes.h"
#include "parse.h"

#define KILN_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define KILN_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KILN_MAX(a, b) ((a) > (b) ? (a) : (b))
#define KILN_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* KILN_ASSERT(cond): an invariant a header states, checked where it is on
 * (the test build, kiln_internal, and Debug builds: the ASan+UBSan suite)
 * and compiled away in the shipped Release library. A broken invariant is
 * kiln's bug, never the caller's: it names the file, line and condition
 * and aborts, so a test stops where the state first went wrong. Bad input
 * is an error return, never an assertion. */
#if defined(KILN_TEST_HOOKS) || !defined(NDEBUG)
void base_assert_failed(const char *file, int line, const char *cond) __attribute__((noreturn));
#define KILN_ASSERT(cond) ((cond) ? (void)0 : base_assert_failed(__FILE__, __LINE__, #cond))
#else
#define KILN_ASSERT(cond) ((void)0)
#endif

enum log_level { LOG_ERROR = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_DEBUG = 3 };

/* Level from KILN_LOG (error|warn|info|debug), read once; default warn. */
enum log_level log_threshold(void);
void log_msg(enum log_level level, const char *fmt, ...) KILN_PRINTF(2, 3);
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

/* Stores the message as the thread's last error and returns code. */
kiln_result err_raise(kiln_result code, const char *file, int line, const char *fmt, ...) KILN_PRINTF(4, 5);
#define KILN_RAISE(code, ...) err_raise((code), __FILE__, __LINE__, __VA_ARGS__)
#define KILN_TRY(expr)                                                                             \
    do {                                                                                           \
        kiln_result try_r_ = (expr);                                                               \
        if (try_r_ < 0)                                                                            \
            return try_r_;                                                                         \
    } while (0)
void err_clear(void);
const char *err_last(void);
/* The code the last error was raised with (KILN_OK once cleared). */
kiln_result err_last_code(void);

/* Environment switches. env_flag: 1 for 1/true/yes/on, 0 for 0/false/no/off,
 * dflt when unset or empty; a value that is neither is warned about once. */
int env_flag(const char *name, int dflt);
/* The numbers of parse.h, read from the environment: dflt when unset or
 * empty; a value that does not parse is warned about, naming the variable,
 * the text and why, and dflt is used. env_u64 takes a count (decimal or 0x
 * hex), env_size a size (bytes, or with K, M, G, T), env_seconds a
 * duration (decimal seconds, fractions allowed). */
uint64_t env_u64(const char *name, uint64_t dflt);
uint64_t env_size(const char *name, uint64_t dflt);
double env_seconds(const char *name, double dflt);

/* Every allocation kiln makes itself goes through these three (free() is
 * the release): allocation that aborts on exhaustion of host memory is not
 * kiln's way, they return NULL and callers raise KILN_ERR_NO_MEMORY. The
 * driver's and the compiler's own allocations do not come here.
 *
 * Fault injection for tests: mem_fault_arm(n) makes the n-th allocation
 * from now (1 = the next) and every later one fail, process-wide, until
 * mem_fault_arm(0) disarms it; mem_fault_hits() counts the failures made.
 * Disarmed, the check is one relaxed atomic load. */
void *mem_alloc(size_t n);
void *mem_calloc(size_t count, size_t size);
void *mem_realloc(void *p, size_t n);
#ifdef KILN_TEST_HOOKS   /* test builds only (kiln_internal) */
void mem_fault_arm(uint64_t n);
uint64_t mem_fault_hits(void);
#endif

char *str_dup(const char *s);
char *str_ndup(const char *s, size_t n);
/* Case-insensitive substring search. */
bool str_icontains(const char *hay, const char *needle);
/* Grows *buf to hold at least need elements of size sz; false on failure. */
bool vec_reserve(void **buf, uint32_t *cap, uint32_t need, size_t sz);

/* XXH3-128 of data in canonical (byte-order independent) form: the hash
 * of every content-addressed key in kiln. */
void hash128(const void *data, size_t len, uint8_t out[16]);

/* Monotonic clock in nanoseconds. */
uint64_t time_now_ns(void);
/* pthread_cond_timedwait for at most ns nanoseconds (the mutex held). */
void cond_wait_ns(pthread_cond_t *cond, pthread_mutex_t *mutex, uint64_t ns);

#ifdef __cplusplus
}
#endif
#endif
