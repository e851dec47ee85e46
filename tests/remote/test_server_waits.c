/* SPDX-License-Identifier: MIT */
/*
 * test_server_waits.c: no client of a kiln server stalls another. On the
 * mock backend, with the server's compile service held (csvc_hold) and its
 * device's work gated (mockb_gate), one client's submit waits on the
 * server for a program still compiling (the wait policy) and another's
 * waits on a ticket; meanwhile a third client creates, uploads, reads
 * back, records and submits, and is done before either wait could end
 * (nothing can end them while the hold and the gate are on, so this holds
 * under any timing). Were the server to keep its host lock across a wait,
 * the third client would not finish, and the test says so, bounded. For
 * the ThreadSanitizer build too (label threads).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "server_harness.h"

#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "context/context_private.h"
#include "remote/remote.h"
#include "remote/remote_private.h"

static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A client's one call on its own thread. */
struct waiting {
    pthread_t thread;
    kiln_context ctx;
    kiln_scheme scheme;      /* submitted, when ticket is 0 */
    kiln_ticket ticket;      /* waited for */
    kiln_result result;
    char why[512];
    atomic_bool done;
};

static void *waiting_body(void *arg)
{
    struct waiting *w = arg;
    /* A scheme's submit waits for its compile on the server (the wait
     * policy); it runs ahead, so its wait is the ticket's. */
    if (!w->ticket.value)
        w->result = kiln_scheme_submit(w->ctx, w->scheme, &w->ticket);
    if (w->result == KILN_OK)
        w->result = kiln_ticket_wait(w->ctx, w->ticket, UINT64_MAX);
    snprintf(w->why, sizeof w->why, "%s", kiln_last_error());
    atomic_store(&w->done, true);
    return NULL;
}

struct busy {
    pthread_t thread;
    kiln_context ctx;
    kiln_program ready;
    int failures;
    char first[512];
    atomic_bool done;
};

#define STEP(b, call)                                                                              \
    do {                                                                                           \
        if ((call) != KILN_OK && !(b)->failures++)                                                 \
            snprintf((b)->first, sizeof (b)->first, "%s: %s", #call, kiln_last_error());           \
    } while (0)

static void *busy_body(void *arg)
{
    struct busy *b = arg;
    kiln_context c = b->ctx;
    uint32_t words[64], back[64];
    for (int i = 0; i < 64; i++)
        words[i] = 5u * (uint32_t)i;
    kiln_buffer buf;
    kiln_scheme s;
    kiln_node n;
    STEP(b, kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof words}, &buf));
    STEP(b, kiln_buffer_upload(c, buf, 0, words, sizeof words));
    STEP(b, kiln_buffer_readback(c, buf, 0, back, sizeof back));
    if (memcmp(back, words, sizeof back) && !b->failures++)
        snprintf(b->first, sizeof b->first, "the readback differs from the upload");
    STEP(b, kiln_scheme_create(c, NULL, &s));
    STEP(b, kiln_scheme_add_node(c, s,
                                 &(kiln_node_desc){.program = b->ready,
                                                   .bindings = &(kiln_binding){.binding = 0, .buffer = buf},
                                                   .binding_count = 1, .groups = {1}},
                                 &n));
    STEP(b, kiln_node_set_param(c, n, 0, 3));
    STEP(b, kiln_scheme_submit(c, s, NULL));   /* its work waits at the gate: the submit does not */
    kiln_context_stats st;
    STEP(b, kiln_context_stats_get(c, &st));
    atomic_store(&b->done, true);
    return NULL;
}

#define KILN_TRY_TEST(call)                                                                        \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK)                                                                         \
            return r_;                                                                             \
    } while (0)

/* A program on a client (waited for when wait), and a scheme of one node
 * running it. */
static kiln_result one_node(kiln_context c, const char *name, kiln_program *prog, kiln_scheme *s, bool wait)
{
    kiln_buffer buf;
    kiln_node n;
    KILN_TRY_TEST(kiln_program_create(c, &(kiln_program_desc){.source = k_add, .name = name,
                                                              .defines = &(kiln_define){name, NULL},
                                                              .define_count = 1},
                                      prog));
    if (wait)
        KILN_TRY_TEST(kiln_program_wait(c, *prog));
    KILN_TRY_TEST(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &buf));
    KILN_TRY_TEST(kiln_scheme_create(c, NULL, s));
    return kiln_scheme_add_node(c, *s,
                                &(kiln_node_desc){.program = *prog,
                                                  .bindings = &(kiln_binding){.binding = 0, .buffer = buf},
                                                  .binding_count = 1, .groups = {1}},
                                &n);
}

TEST(a_client_waiting_on_the_server_stalls_no_other)
{
    struct server srv;
    REQUIRE(folder_make_as(&srv, "/tmp/kiln-srvwait"));
    REQUIRE_OK(server_start(&srv, &(kiln_server_desc){.context = &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}}));
    struct srv *s = srv_of(srv.ks);
    kiln_context a, c, b;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .remote = srv.remote}, &a));
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .remote = srv.remote}, &c));
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .remote = srv.remote}, &b));
    kiln_program pc, pa;
    kiln_scheme sc, sa;
    REQUIRE_OK(one_node(c, "C", &pc, &sc, true));
    struct busy busy = {.ctx = b};
    REQUIRE_OK(kiln_program_create(b, &(kiln_program_desc){.source = k_add, .name = "B"}, &busy.ready));
    REQUIRE_OK(kiln_program_wait(b, busy.ready));

    /* The hold and the gate: nothing compiles, no work finishes. */
    pthread_mutex_lock(&s->host_lock);
    struct kctx *host = s->host;
    pthread_mutex_unlock(&s->host_lock);
    struct csvc *svc = lctx_of(host)->svc;
    struct kb_device *dev = ctx_device(host);
    csvc_hold(svc, true);
    mockb_gate(dev, true);
    REQUIRE_OK(one_node(a, "A", &pa, &sa, false));   /* its program cannot compile while held */
    struct waiting wa = {.ctx = a, .scheme = sa}, wc = {.ctx = c};
    REQUIRE_OK(kiln_scheme_submit(c, sc, &wc.ticket));
    REQUIRE(pthread_create(&wa.thread, NULL, waiting_body, &wa) == 0);
    REQUIRE(pthread_create(&wc.thread, NULL, waiting_body, &wc) == 0);
    nap_ms(50);   /* both into their waits on the server, most likely (the assertions hold either way) */

    REQUIRE(pthread_create(&busy.thread, NULL, busy_body, &busy) == 0);
    for (int i = 0; i < 30000 && !atomic_load(&busy.done); i++)
        nap_ms(1);
    CHECK(atomic_load(&busy.done));   /* false: a wait on the server held what this client needed */
    CHECK(!atomic_load(&wa.done));    /* nothing could end them yet */
    CHECK(!atomic_load(&wc.done));

    csvc_hold(svc, false);
    mockb_gate(dev, false);
    pthread_join(busy.thread, NULL);
    pthread_join(wa.thread, NULL);
    pthread_join(wc.thread, NULL);
    if (busy.failures)
        fprintf(stderr, "the busy client: %d calls failed, the first: %s\n", busy.failures, busy.first);
    CHECK_EQ(busy.failures, 0);
    if (wa.result != KILN_OK)
        fprintf(stderr, "A's submit: %s\n", wa.why);
    if (wc.result != KILN_OK)
        fprintf(stderr, "C's wait: %s\n", wc.why);
    CHECK_OK(wa.result);
    CHECK_OK(wc.result);
    CHECK_OK(kiln_context_destroy(a));
    CHECK_OK(kiln_context_destroy(b));
    CHECK_OK(kiln_context_destroy(c));
    server_stop(&srv);
    unlink(srv.path);
    rmdir(srv.dir);
}

int main(void)
{
    unsetenv("KILN_REMOTE");   /* this test makes its own server */
    RUN(a_client_waiting_on_the_server_stalls_no_other);
    return TEST_SUMMARY();
}
