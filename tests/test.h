/* SPDX-License-Identifier: MIT */
/*
 * test.h: kiln's small test runner. A test file defines TEST(name) functions
 * and a main that runs them with RUN(name); CHECK(cond) and CHECK_OK(call)
 * record failures with file:line and go on; REQUIRE_OK stops the test.
 * The program prints "N passed, N failed" and exits non-zero on failure.
 *
 * Vulkan tests: test_context() makes a context with validation on (CTest
 * sets KILN_VALIDATION=1) and test_context_done() fails the test when the
 * validation layer reported any error.
 */
#ifndef KILN_TEST_H
#define KILN_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln.h"

static int test_failures_, test_passed_, test_failed_;
static const char *test_name_;

#define TEST(name) static void name(void)
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: CHECK(%s) failed\n", __FILE__, __LINE__, test_name_, #cond); \
        }                                                                                          \
    } while (0)
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                                        \
        if (a_ != b_) {                                                                            \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__,     \
                    test_name_, #a, a_, #b, b_);                                                   \
        }                                                                                          \
    } while (0)
#define CHECK_RESULT(call, want)                                                                   \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != (want)) {                                                                        \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__,    \
                    test_name_, #call, kiln_result_name(r_), kiln_result_name(want), kiln_last_error()); \
        }                                                                                          \
    } while (0)
#define CHECK_OK(call) CHECK_RESULT(call, KILN_OK)
#define REQUIRE_OK(call)                                                                           \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: %s returned %s: %s\n", __FILE__, __LINE__, test_name_,      \
                    #call, kiln_result_name(r_), kiln_last_error());                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#define REQUIRE(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: REQUIRE(%s) failed\n", __FILE__, __LINE__, test_name_, #cond); \
            return;                                                                                \
        }                                                                                          \
    } while (0)
/* The last error's message mentions `needle`. */
#define CHECK_MSG(needle)                                                                          \
    do {                                                                                           \
        if (!strstr(kiln_last_error(), (needle))) {                                                \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", __FILE__, __LINE__, test_name_, \
                    kiln_last_error(), (needle));                                                  \
        }                                                                                          \
    } while (0)

#define RUN(name)                                                                                  \
    do {                                                                                           \
        test_name_ = #name;                                                                        \
        int before_ = test_failures_;                                                              \
        name();                                                                                    \
        if (test_failures_ == before_) {                                                           \
            test_passed_++;                                                                        \
            printf("ok   %s\n", #name);                                                            \
        } else {                                                                                   \
            test_failed_++;                                                                        \
            printf("FAIL %s\n", #name);                                                            \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

#define TEST_SUMMARY()                                                                             \
    (printf("%d passed, %d failed\n", test_passed_, test_failed_), test_failed_ ? 1 : 0)

/* For a test file whose tests reach behind the public API (test hooks,
 * fault injection, the local runtime's own settings): in a remote
 * configuration (KILN_REMOTE set) it says so and runs locally. Call it at
 * the top of main. */
int unsetenv(const char *name);
#define TEST_LOCAL_ONLY(why)                                                                       \
    do {                                                                                           \
        const char *remote_ = getenv("KILN_REMOTE");                                               \
        if (remote_ && *remote_) {                                                                 \
            printf("runs locally only, not at KILN_REMOTE=%s: %s\n", remote_, (why));             \
            unsetenv("KILN_REMOTE");                                                               \
        }                                                                                          \
    } while (0)

/* kiln's log kept for a test: test_log_start() sends every message to
 * test_log_text() (one a line, the first 8 KiB), until
 * kiln_set_log_callback(NULL, NULL). */
static inline char *test_log_text(void)
{
    static char text[8192];
    return text;
}
static inline size_t *test_log_len_(void)
{
    static size_t len;
    return &len;
}
static inline void test_log_keep_(kiln_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    size_t *len = test_log_len_(), cap = 8192;
    int n = snprintf(test_log_text() + *len, cap - *len, "%s\n", message);
    if (n > 0 && (size_t)n < cap - *len)
        *len += (size_t)n;
}
static inline void test_log_start(void)
{
    *test_log_len_() = 0;
    test_log_text()[0] = 0;
    kiln_set_log_callback(test_log_keep_, NULL);
}

/* r, a call's result on ctx; where ctx is remote (KILN_REMOTE) and r is
 * KILN_OK, what the next synchronization point says instead: a remote
 * context runs calls ahead (submit, add_node, destroys, set_param), and an
 * error only its server can find comes there, naming the call
 * (docs/server.md, "Run-ahead"). So a test states the error a call makes
 * locally at the call, and remotely at the next synchronization point. */
static inline kiln_result test_settled(kiln_context ctx, kiln_result r)
{
    const char *remote = getenv("KILN_REMOTE");
    if (r != KILN_OK || !remote || !*remote || !strcmp(remote, "local"))
        return r;
    r = kiln_context_wait_idle(ctx);
    if (r != KILN_OK && !strstr(kiln_last_error(), "run ahead")) {
        test_failures_++;
        fprintf(stderr, "%s: a remote error at the synchronization point that names no run-ahead call: %s\n",
                test_name_, kiln_last_error());
    }
    return r;
}

/* A context on the default Vulkan device, validation as KILN_VALIDATION says. */
static inline kiln_result test_context(kiln_context *ctx)
{
    return kiln_context_create(&(kiln_context_desc){0}, ctx);
}

/* The same with specialization off: for tests that count records, which a
 * promotion (a params-only record whenever its compile lands) would make
 * depend on timing. */
static inline kiln_result test_context_nospec(kiln_context *ctx)
{
    return kiln_context_create(&(kiln_context_desc){.specialization = -1}, ctx);
}

/* Destroys ctx; fails the running test when validation was asked for but is
 * off, or reported errors. */
#define test_context_done(ctx)                                                                     \
    do {                                                                                           \
        kiln_context_stats st_;                                                                    \
        kiln_caps caps_;                                                                           \
        if (kiln_context_stats_get((ctx), &st_) == KILN_OK &&                                      \
            kiln_context_caps((ctx), &caps_) == KILN_OK) {                                         \
            const char *v_ = getenv("KILN_VALIDATION");                                            \
            if (caps_.backend == KILN_BACKEND_VULKAN && v_ && !strcmp(v_, "1") && !caps_.validation) { \
                test_failures_++;                                                                  \
                fprintf(stderr, "%s:%d: %s: KILN_VALIDATION=1 but validation is off\n", __FILE__,  \
                        __LINE__, test_name_);                                                     \
            }                                                                                      \
            if (st_.validation_errors) {                                                           \
                test_failures_++;                                                                  \
                fprintf(stderr, "%s:%d: %s: %llu validation errors\n", __FILE__, __LINE__,         \
                        test_name_, (unsigned long long)st_.validation_errors);                    \
            }                                                                                      \
        }                                                                                          \
        kiln_context_destroy(ctx);                                                                 \
    } while (0)

/* A dispatch that really runs long, though it terminates: each invocation
 * does kiln_param(0) rounds of xorshift (60000 keeps each loop under
 * lavapipe's 65535-iteration cap). With 3000 workgroups lavapipe takes
 * seconds and a GPU milliseconds, so a timeout test accepts either outcome.
 * Shared by the device-loss tests and the CLI's --timeout test. */
static const char test_slow_src[] = "#version 450\n"
                                    "layout(local_size_x = 64) in;\n"
                                    "layout(std430, binding = 0) buffer Data { uint v[]; };\n"
                                    "void main() {\n"
                                    "    uint x = gl_GlobalInvocationID.x + 1u;\n"
                                    "    for (uint i = 0u; i < kiln_param(0); i++) {\n"
                                    "        x ^= x << 13u; x ^= x >> 17u; x ^= x << 5u;\n"
                                    "    }\n"
                                    "    if (x == 0u) v[0] = x;\n"
                                    "}\n";

#endif
