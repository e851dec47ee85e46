/* SPDX-License-Identifier: MIT */
/*
 * test_remote_threads.c: a kiln server's locking, for the ThreadSanitizer
 * build. One server on the mock backend (so TSan checks kiln's locks, not a
 * driver's) and its accept loop on a thread; clients on four threads, each
 * with a remote context of its own, create, submit, wait and read back at
 * once, while one more thread keeps connecting and leaving without
 * destroying its context; then the server stops under a client still
 * connected, which must see KILN_ERR_DEVICE_LOST and no hang.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

#define CLIENTS 4

static const char *k_add = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { x[gl_GlobalInvocationID.x] += kiln_param(0); }\n";

static char remote[200];
static kiln_server *server;
static atomic_int stop_churn;

static void *serve(void *arg)
{
    (void)arg;
    kiln_result r = kiln_server_run(server);
    return (void *)(intptr_t)r;
}

static kiln_result client(kiln_context *ctx)
{
    return kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .remote = remote}, ctx);
}

/* One client's life: every kind of call, its results checked. */
static void *work(void *arg)
{
    intptr_t errors = 0, id = (intptr_t)arg;
    kiln_context ctx;
    if (client(&ctx) != KILN_OK)
        return (void *)1;
    kiln_program p;
    kiln_buffer b;
    kiln_scheme s;
    kiln_node n;
    errors += kiln_program_create(ctx, &(kiln_program_desc){.source = k_add}, &p) != KILN_OK;
    errors += kiln_program_wait(ctx, p) != KILN_OK;
    errors += kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &b) != KILN_OK;
    uint32_t words[64], back[64];
    for (uint32_t i = 0; i < 64; i++)
        words[i] = (uint32_t)id * 1000 + i;
    errors += kiln_buffer_upload(ctx, b, 0, words, sizeof words) != KILN_OK;
    errors += kiln_scheme_create(ctx, NULL, &s) != KILN_OK;
    errors += kiln_scheme_add_node(ctx, s,
                                   &(kiln_node_desc){.program = p,
                                                     .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                     .binding_count = 1, .groups = {1}},
                                   &n) != KILN_OK;
    for (uint32_t f = 0; f < 30; f++) {
        kiln_ticket t;
        errors += kiln_node_set_param(ctx, n, 0, f) != KILN_OK;
        errors += kiln_scheme_submit(ctx, s, &t) != KILN_OK;
        errors += kiln_ticket_wait(ctx, t, UINT64_MAX) != KILN_OK;
    }
    kiln_scheme_stats st;
    errors += kiln_scheme_stats_get(ctx, s, &st) != KILN_OK || st.submits != 30;
    errors += kiln_buffer_readback(ctx, b, 0, back, sizeof back) != KILN_OK;
    errors += memcmp(back, words, sizeof back) != 0;   /* the mock runs nothing: bytes as uploaded */
    errors += kiln_context_destroy(ctx) != KILN_OK;
    return (void *)errors;
}

/* Clients that connect, make objects and drop the connection without a
 * word: their contexts go with their connections. */
static void *churn(void *arg)
{
    (void)arg;
    intptr_t errors = 0;
    while (!atomic_load(&stop_churn)) {
        kiln_context ctx;
        if (client(&ctx) != KILN_OK) {
            errors++;
            break;
        }
        kiln_buffer b;
        errors += kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64}, &b) != KILN_OK;
        errors += kiln_context_destroy(ctx) != KILN_OK;
    }
    return (void *)errors;
}

TEST(clients_on_threads_share_one_server)
{
    pthread_t t[CLIENTS], c;
    atomic_store(&stop_churn, 0);
    REQUIRE(pthread_create(&c, NULL, churn, NULL) == 0);
    for (intptr_t i = 0; i < CLIENTS; i++)
        REQUIRE(pthread_create(&t[i], NULL, work, (void *)i) == 0);
    for (int i = 0; i < CLIENTS; i++) {
        void *errors;
        pthread_join(t[i], &errors);
        CHECK_EQ((intptr_t)errors, 0);
    }
    atomic_store(&stop_churn, 1);
    void *errors;
    pthread_join(c, &errors);
    CHECK_EQ((intptr_t)errors, 0);
}

int main(void)
{
    /* This test makes its own server. */
    unsetenv("KILN_REMOTE");
    char dir[] = "/tmp/kiln-remote-threads-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    snprintf(remote, sizeof remote, "unix:%s/kiln.sock", dir);
    kiln_server_desc sd = {.socket_path = remote + 5,
                           .context = &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}};
    if (kiln_server_create(&sd, &server) != KILN_OK) {
        fprintf(stderr, "kiln_server_create: %s\n", kiln_last_error());
        return 1;
    }
    pthread_t st;
    if (pthread_create(&st, NULL, serve, NULL))
        return 1;
    RUN(clients_on_threads_share_one_server);

    /* The last test: a client still connected while the server goes. */
    kiln_context ctx;
    kiln_buffer b;
    int lost = 0;
    if (client(&ctx) == KILN_OK && kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64}, &b) == KILN_OK) {
        kiln_server_stop(server);
        void *r;
        pthread_join(st, &r);
        kiln_server_destroy(server);   /* ends the connection: the client's objects freed */
        uint32_t w = 1;
        kiln_result rr = kiln_buffer_upload(ctx, b, 0, &w, 4);
        if (rr == KILN_OK)   /* posted (run ahead): the loss comes at the next synchronization point */
            rr = kiln_buffer_readback(ctx, b, 0, &w, 4);
        lost = rr == KILN_ERR_DEVICE_LOST && strstr(kiln_last_error(), "kiln server");
        if (!lost)
            fprintf(stderr, "after the server went: %s: %s\n", kiln_result_name(rr), kiln_last_error());
        lost &= kiln_context_destroy(ctx) == KILN_OK;
    }
    printf("%s a_server_going_under_a_client_fails_its_calls_with_device_lost\n", lost ? "ok  " : "FAIL");
    test_passed_ += lost;
    test_failed_ += !lost;
    rmdir(dir);
    return TEST_SUMMARY();
}
