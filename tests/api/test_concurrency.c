/* SPDX-License-Identifier: MIT */
/*
 * test_concurrency.c: calls on one context from several threads, on the
 * real device, in process or through a server (KILN_REMOTE). While one
 * thread waits on a long dispatch, another creates, uploads, reads back,
 * records and submits on the same context and is done before the
 * dispatch is: the wait held nothing it needed. How long a dispatch takes
 * is the device's business, so the dispatch grows until it outlasts the
 * other thread's calls (a run where it did not is inconclusive, and the
 * next one is four times longer); the test fails only when no dispatch,
 * however long, was outlasted. With KILN_SYNC=1 every submit returns with
 * its work done.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "test.h"

/* Each invocation: rounds of xorshift (at most 60000: lavapipe stops a
 * loop at 65535), its result stored. */
static const char *k_long = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, binding = 0) buffer Out { uint v[]; };\n"
                            "void main() {\n"
                            "    uint x = gl_GlobalInvocationID.x + 1u;\n"
                            "    for (uint i = 0u; i < kiln_param(0); i++) {\n"
                            "        x ^= x << 13u; x ^= x >> 17u; x ^= x << 5u;\n"
                            "    }\n"
                            "    v[gl_GlobalInvocationID.x] = x;\n"
                            "}\n";
static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

#define ROUNDS 60000u

static uint32_t xorshift(uint32_t x, uint32_t rounds)
{
    for (uint32_t i = 0; i < rounds; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    return x;
}

struct waiter {
    kiln_context ctx;
    kiln_ticket ticket;
    kiln_result result;
    atomic_bool done;
};

static void *wait_body(void *arg)
{
    struct waiter *w = arg;
    w->result = kiln_ticket_wait(w->ctx, w->ticket, UINT64_MAX);
    atomic_store(&w->done, true);
    return NULL;
}

#define TRY(call)                                                                                  \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            fprintf(stderr, "%s: %s\n", #call, kiln_last_error());                                 \
            return r_;                                                                             \
        }                                                                                          \
    } while (0)

/* The other thread's calls: none needs the long dispatch. KILN_OK or the
 * first failure. */
static kiln_result other_calls(kiln_context c, kiln_program add, bool readback)
{
    uint32_t words[64], back[64];
    for (int i = 0; i < 64; i++)
        words[i] = 3u * (uint32_t)i;
    kiln_buffer b;
    kiln_scheme s;
    kiln_node n;
    kiln_program_state st;
    TRY(kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof words, .label = "other"}, &b));
    TRY(kiln_buffer_upload(c, b, 0, words, sizeof words));
    if (readback) {   /* a host copy, where memory is mapped (else a transfer, queued behind the dispatch) */
        TRY(kiln_buffer_readback(c, b, 0, back, sizeof back));
        if (memcmp(back, words, sizeof back))
            return fprintf(stderr, "the readback of a buffer no submit uses differs from its upload\n"),
                   KILN_ERR_INVALID;
    }
    TRY(kiln_program_status(c, add, &st));
    TRY(kiln_scheme_create(c, &(kiln_scheme_desc){.label = "other"}, &s));
    TRY(kiln_scheme_add_node(c, s,
                                  &(kiln_node_desc){.program = add,
                                                    .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                    .binding_count = 1, .groups = {1}},
                                  &n));
    TRY(kiln_node_set_param(c, n, 0, 1));
    TRY(kiln_scheme_submit(c, s, NULL));
    return KILN_OK;
}

TEST(a_wait_on_one_thread_lets_another_go_on)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    kiln_program slow, add;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_long, .name = "long.comp"}, &slow));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_add, .name = "add.comp"}, &add));
    REQUIRE_OK(kiln_program_wait(ctx, slow));
    REQUIRE_OK(kiln_program_wait(ctx, add));
    /* The work grows by 4x a run: first its workgroups (to 4096), then
     * nodes of the same dispatch one after another (they write the same
     * buffer: a barrier between each). A run whose dispatch took over 5 s
     * and still ended first is no longer inconclusive: it fails. */
    bool conclusive = false;
    double took = 0;
    for (uint64_t size = 16; !conclusive && took < 5.0 && size <= (16ull << 24); size *= 4) {
        uint32_t groups = (uint32_t)(size < 4096 ? size : 4096), nodes = (uint32_t)(size / groups);
        kiln_buffer out;
        kiln_scheme s;
        kiln_node n;
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = (uint64_t)groups * 64 * 4}, &out));
        REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "long"}, &s));
        for (uint32_t i = 0; i < nodes; i++)
            REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                            &(kiln_node_desc){.program = slow,
                                                              .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                              .binding_count = 1, .groups = {groups},
                                                              .params = (const uint32_t[KILN_PARAM_WORDS]){ROUNDS},
                                                              .param_count = KILN_PARAM_WORDS},
                                            &n));
        struct waiter w = {.ctx = ctx};
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        REQUIRE_OK(kiln_scheme_submit(ctx, s, &w.ticket));
        pthread_t thread;
        REQUIRE(pthread_create(&thread, NULL, wait_body, &w) == 0);
        struct timespec settle = {0, 20 * 1000 * 1000};   /* the waiter into its wait, most likely */
        nanosleep(&settle, NULL);
        CHECK_OK(other_calls(ctx, add, caps.unified_memory));
        /* Still running: the calls above did not wait for it. */
        kiln_result still = kiln_ticket_wait(ctx, w.ticket, 0);
        CHECK(still == KILN_OK || still == KILN_ERR_TIMEOUT);
        conclusive = still == KILN_ERR_TIMEOUT && !atomic_load(&w.done);
        pthread_join(thread, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        CHECK_OK(w.result);
        /* The dispatch's results, read back once it is done. */
        uint32_t v[4];
        CHECK_OK(kiln_buffer_readback(ctx, out, ((uint64_t)groups * 64 - 4) * 4, v, sizeof v));
        for (uint32_t i = 0; i < 4; i++)
            CHECK_EQ(v[i], xorshift(groups * 64 - 4 + i + 1, ROUNDS));
        printf("%u workgroups x %u nodes, %.3f s: %s\n", groups, nodes, took,
               conclusive ? "the other thread's calls were done before the dispatch"
                          : "the dispatch was done first (inconclusive)");
        CHECK_OK(kiln_scheme_destroy(ctx, s));
        CHECK_OK(kiln_buffer_destroy(ctx, out));
    }
    CHECK(conclusive);   /* false: a dispatch of seconds ended before the other thread's calls */
    test_context_done(ctx);
}

TEST(kiln_sync_makes_a_submit_return_with_its_work_done)
{
    setenv("KILN_SYNC", "1", 1);
    kiln_context ctx;
    kiln_result made = test_context_nospec(&ctx);
    unsetenv("KILN_SYNC");
    REQUIRE_OK(made);
    kiln_program slow;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_long, .name = "long.comp"}, &slow));
    REQUIRE_OK(kiln_program_wait(ctx, slow));
    kiln_buffer out;
    kiln_scheme s;
    kiln_node n;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256 * 64 * 4}, &out));
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = slow,
                                                      .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                      .binding_count = 1, .groups = {256},
                                                      .params = (const uint32_t[KILN_PARAM_WORDS]){ROUNDS},
                                                      .param_count = KILN_PARAM_WORDS},
                                    &n));
    for (int i = 0; i < 3; i++) {
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        CHECK_OK(kiln_ticket_wait(ctx, t, 0));   /* done already: no wait needed */
    }
    test_context_done(ctx);
}

int main(void)
{
    RUN(a_wait_on_one_thread_lets_another_go_on);
    RUN(kiln_sync_makes_a_submit_return_with_its_work_done);
    return TEST_SUMMARY();
}
