/* SPDX-License-Identifier: MIT */
/*
 * test_waits.c: a call that waits holds no lock another thread's call on
 * the same context needs. On the mock backend, whose gate (mockb_gate)
 * holds submitted work in flight for exactly as long as the test says and
 * whose compile service can be held (csvc_hold): while threads wait on a
 * ticket, a readback of bytes that work writes, a destroy of a buffer it
 * uses and a program's compile, another thread creates, uploads, reads
 * back, records, submits and queries on that context, and is done before
 * any of the waits could end. With the gate closed nothing else can end
 * them, so the test holds under any timing; were a wait to hold the
 * context's lock, the other thread would not finish, and the test says so
 * (bounded, never a hang). In the ThreadSanitizer build it checks the
 * locking too (label threads).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "api/api.h"
#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "context/context_private.h"
#include "test.h"

static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Polls cond every millisecond for up to limit_ms (a bound for a broken
 * build, never reached by a working one). */
#define POLL(cond, limit_ms)                                                                       \
    for (int i_ = 0; !(cond) && i_ < (limit_ms); i_++)                                             \
    nap_ms(1)

/* One waiting call on its own thread. */
struct waiter {
    pthread_t thread;
    kiln_context ctx;
    enum { WAIT_TICKET, WAIT_READBACK, WAIT_DESTROY, WAIT_PROGRAM } kind;
    kiln_ticket ticket;
    kiln_buffer buffer;
    kiln_node node;
    kiln_program program;
    kiln_result result;
    char why[512];
    atomic_bool done;
};

static void *wait_body(void *arg)
{
    struct waiter *w = arg;
    uint32_t back[64];
    switch (w->kind) {
    case WAIT_TICKET: w->result = kiln_ticket_wait(w->ctx, w->ticket, UINT64_MAX); break;
    case WAIT_READBACK: w->result = kiln_buffer_readback(w->ctx, w->buffer, 0, back, sizeof back); break;
    case WAIT_DESTROY:
        w->result = kiln_node_remove(w->ctx, w->node);
        if (w->result == KILN_OK)
            w->result = kiln_buffer_destroy(w->ctx, w->buffer);
        break;
    case WAIT_PROGRAM: w->result = kiln_program_wait(w->ctx, w->program); break;
    }
    snprintf(w->why, sizeof w->why, "%s", kiln_last_error());
    atomic_store(&w->done, true);
    return NULL;
}

/* Another thread's calls, none of which needs the waited-for work. */
struct other {
    pthread_t thread;
    kiln_context ctx;
    kiln_program ready;          /* compiled */
    kiln_node node;              /* of the submitted scheme */
    kiln_ticket gated;           /* not done while the test runs this */
    int failures;
    char first[512];
    atomic_bool done;
};

static void fail(struct other *o, const char *what)
{
    if (!o->failures++)
        snprintf(o->first, sizeof o->first, "%s: %s", what, kiln_last_error());
}

#define STEP(o, call)                                                                              \
    do {                                                                                           \
        if ((call) != KILN_OK)                                                                     \
            fail((o), #call);                                                                      \
    } while (0)

static void *other_body(void *arg)
{
    struct other *o = arg;
    kiln_context c = o->ctx;
    uint32_t words[64], back[64];
    for (int i = 0; i < 64; i++)
        words[i] = 0x51u * (uint32_t)i;
    kiln_buffer b;
    kiln_scheme s;
    kiln_node n;
    kiln_program p;
    kiln_program_state st;
    kiln_context_stats stats;
    uint32_t pending;
    STEP(o, kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof words}, &b));
    STEP(o, kiln_buffer_upload(c, b, 0, words, sizeof words));
    STEP(o, kiln_buffer_readback(c, b, 0, back, sizeof back));
    if (memcmp(back, words, sizeof back))
        fail(o, "the readback of a buffer no submit uses");
    STEP(o, kiln_program_create(c, &(kiln_program_desc){.source = k_add, .name = "other.comp"}, &p));
    STEP(o, kiln_program_status(c, p, &st));
    STEP(o, kiln_scheme_create(c, &(kiln_scheme_desc){.label = "other"}, &s));
    STEP(o, kiln_scheme_add_node(c, s,
                                 &(kiln_node_desc){.program = o->ready,
                                                   .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                   .binding_count = 1, .groups = {1}},
                                 &n));
    STEP(o, kiln_node_set_param(c, o->node, 0, 7));
    kiln_ticket t;
    STEP(o, kiln_scheme_submit(c, s, &t));   /* returns its ticket; its work waits at the gate too */
    STEP(o, kiln_context_stats_get(c, &stats));
    STEP(o, kiln_compiles_pending(c, &pending));
    if (kiln_ticket_wait(c, o->gated, 0) != KILN_ERR_TIMEOUT)
        fail(o, "a zero-timeout wait on the gated ticket (KILN_ERR_TIMEOUT expected)");
    atomic_store(&o->done, true);
    return NULL;
}

TEST(waits_let_the_context_go)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .specialization = -1}, &ctx));
    struct kctx *kc = api_context_peek(ctx);
    struct kb_device *dev = ctx_device(kc);
    kiln_program prog;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_add, .name = "add.comp"}, &prog));
    REQUIRE_OK(kiln_program_wait(ctx, prog));
    kiln_buffer a, w;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256, .label = "a"}, &a));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256, .label = "w"}, &w));
    kiln_scheme s;
    kiln_node na, nw;
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "gated"}, &s));
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = prog,
                                                      .bindings = &(kiln_binding){.binding = 0, .buffer = a},
                                                      .binding_count = 1, .groups = {1}},
                                    &na));
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = prog,
                                                      .bindings = &(kiln_binding){.binding = 0, .buffer = w},
                                                      .binding_count = 1, .groups = {1}},
                                    &nw));
    mockb_gate(dev, true);
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));

    /* Three waits on the gated work, and one on a held compile. */
    struct waiter waits[4] = {
        {.ctx = ctx, .kind = WAIT_TICKET, .ticket = t},
        {.ctx = ctx, .kind = WAIT_READBACK, .buffer = a},
        {.ctx = ctx, .kind = WAIT_DESTROY, .buffer = w, .node = nw},
        {.ctx = ctx, .kind = WAIT_PROGRAM},
    };
    struct csvc *svc = lctx_of(kc)->svc;
    csvc_hold(svc, true);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_add, .name = "held.comp",
                                                             .defines = &(kiln_define){"HELD", NULL}, .define_count = 1},
                                   &waits[3].program));
    for (int i = 0; i < 4; i++)
        REQUIRE(pthread_create(&waits[i].thread, NULL, wait_body, &waits[i]) == 0);
    /* The three device waits are at the gate (the compile's has no such
     * count: it is at most late, and the assertions hold either way). */
    POLL(mockb_gated(dev) == 3, 30000);
    CHECK_EQ(mockb_gated(dev), 3);

    struct other o = {.ctx = ctx, .ready = prog, .node = na, .gated = t};
    REQUIRE(pthread_create(&o.thread, NULL, other_body, &o) == 0);
    POLL(atomic_load(&o.done), 30000);
    CHECK(atomic_load(&o.done));   /* false: some wait held the context */
    for (int i = 0; i < 4; i++)
        CHECK(!atomic_load(&waits[i].done));   /* nothing could end them yet */

    mockb_gate(dev, false);
    csvc_hold(svc, false);
    pthread_join(o.thread, NULL);
    if (o.failures) {
        fprintf(stderr, "other thread: %d calls failed, the first: %s\n", o.failures, o.first);
        CHECK_EQ(o.failures, 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(waits[i].thread, NULL);
        if (waits[i].result != KILN_OK)
            fprintf(stderr, "wait %d: %s: %s\n", i, kiln_result_name(waits[i].result), waits[i].why);
        CHECK_OK(waits[i].result);
    }
    /* The destroy is done: its handle is gone. */
    CHECK_RESULT(kiln_buffer_upload(ctx, w, 0, (uint32_t[1]){1}, 4), KILN_ERR_HANDLE);
    CHECK_OK(kiln_context_destroy(ctx));
}

/* A call waiting on an object another thread destroys finds its handle
 * gone once it resumes, and says so. */
TEST(a_program_destroyed_while_waited_on_is_named)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    struct csvc *svc = lctx_of(api_context_peek(ctx))->svc;
    csvc_hold(svc, true);
    struct waiter w = {.ctx = ctx, .kind = WAIT_PROGRAM};
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_add, .name = "doomed.comp"}, &w.program));
    REQUIRE(pthread_create(&w.thread, NULL, wait_body, &w) == 0);
    nap_ms(20);   /* most likely inside its wait by now; if not, it finds the handle gone at once: the same */
    CHECK_OK(kiln_program_destroy(ctx, w.program));
    csvc_hold(svc, false);
    pthread_join(w.thread, NULL);
    CHECK_EQ(w.result, KILN_ERR_HANDLE);   /* the hold keeps the compile from ending before the destroy */
    CHECK(strstr(w.why, "program 0x") != NULL);
    CHECK_OK(kiln_context_destroy(ctx));
}

int main(void)
{
    TEST_LOCAL_ONLY("it holds the mock device's work and its compile service");
    RUN(waits_let_the_context_go);
    RUN(a_program_destroyed_while_waited_on_is_named);
    return TEST_SUMMARY();
}
