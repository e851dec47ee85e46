/* SPDX-License-Identifier: MIT */
/*
 * test_threads.c: the public API from several threads at once. Threads
 * share one context (calls serialize on its lock) and each also has its own;
 * a context is destroyed while other threads still call into it, which must
 * give them KILN_ERR_HANDLE, never a crash. Runs on the mock backend so the
 * ThreadSanitizer build checks kiln's locking, not the driver's.
 */
#include <pthread.h>

#include "test.h"

static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

static kiln_context shared_ctx;
static kiln_program shared_prog;

struct worker {
    int id;
    int errors;
};

static int one_round(kiln_context ctx, kiln_program prog, uint32_t seed)
{
    kiln_buffer b;
    kiln_scheme s;
    kiln_node n;
    if (kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &b) != KILN_OK)
        return 1;
    int errors = 0;
    uint32_t words[64];
    for (int i = 0; i < 64; i++)
        words[i] = seed + (uint32_t)i;
    errors += kiln_buffer_upload(ctx, b, 0, words, sizeof words) != KILN_OK;
    errors += kiln_scheme_create(ctx, NULL, &s) != KILN_OK;
    errors += kiln_scheme_add_node(ctx, s,
                                   &(kiln_node_desc){.program = prog,
                                                     .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                     .binding_count = 1, .groups = {1}},
                                   &n) != KILN_OK;
    for (uint32_t f = 0; f < 20; f++) {
        errors += kiln_node_set_param(ctx, n, 0, f) != KILN_OK;
        kiln_ticket t;
        errors += kiln_scheme_submit(ctx, s, &t) != KILN_OK;
        errors += kiln_ticket_wait(ctx, t, UINT64_MAX) != KILN_OK;
    }
    uint32_t back[64];
    errors += kiln_buffer_readback(ctx, b, 0, back, sizeof back) != KILN_OK;
    errors += memcmp(back, words, sizeof back) != 0;   /* the mock runs nothing: bytes as uploaded */
    errors += kiln_scheme_destroy(ctx, s) != KILN_OK;
    errors += kiln_buffer_destroy(ctx, b) != KILN_OK;
    return errors;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    kiln_context own;
    kiln_program prog;
    if (kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &own) != KILN_OK ||
        kiln_program_create(own, &(kiln_program_desc){.source = k_add}, &prog) != KILN_OK) {
        w->errors++;
        return NULL;
    }
    for (int round = 0; round < 5; round++) {
        w->errors += one_round(shared_ctx, shared_prog, (uint32_t)(w->id * 1000 + round));
        w->errors += one_round(own, prog, (uint32_t)round);
    }
    w->errors += kiln_context_destroy(own) != KILN_OK;
    return NULL;
}

TEST(threads_share_a_context_and_own_others)
{
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &shared_ctx));
    REQUIRE_OK(kiln_program_create(shared_ctx, &(kiln_program_desc){.source = k_add}, &shared_prog));
    enum { T = 4 };
    pthread_t th[T];
    struct worker w[T];
    for (int i = 0; i < T; i++) {
        w[i] = (struct worker){.id = i};
        REQUIRE(pthread_create(&th[i], NULL, work, &w[i]) == 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ(w[i].errors, 0);
    }
    kiln_context_stats st;
    CHECK_OK(kiln_context_stats_get(shared_ctx, &st));
    CHECK_EQ(st.submits, T * 5 * 20);
    CHECK_EQ(st.buffers, 0);
    test_context_done(shared_ctx);
}

static void *hammer(void *arg)
{
    kiln_context ctx = *(kiln_context *)arg;
    int refused = 0;
    for (int i = 0; i < 2000; i++) {
        kiln_caps caps;
        kiln_result r = kiln_context_caps(ctx, &caps);
        if (r == KILN_ERR_HANDLE)
            refused++;
        else if (r != KILN_OK)
            return (void *)1;
    }
    (void)refused;
    return NULL;
}

TEST(destroying_a_context_under_other_threads_is_safe)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        REQUIRE(pthread_create(&th[i], NULL, hammer, &ctx) == 0);
    CHECK_OK(kiln_context_destroy(ctx));
    for (int i = 0; i < 3; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        CHECK(ret == NULL);
    }
    kiln_caps caps;
    CHECK_RESULT(kiln_context_caps(ctx, &caps), KILN_ERR_HANDLE);
}

int main(void)
{
    RUN(threads_share_a_context_and_own_others);
    RUN(destroying_a_context_under_other_threads_is_safe);
    return TEST_SUMMARY();
}
