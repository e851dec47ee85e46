/* SPDX-License-Identifier: MIT */
/*
 * test_remote.c: server mode as a user meets it. Each test starts a real
 * kiln server inside this process (kiln_server_create on a socket in a
 * fresh folder under /tmp, kiln_server_run on a thread of its own) and
 * talks to it through contexts made with remote = "unix:<path>", as
 * another process would: results computed by two clients against the CPU,
 * one compile for a program two clients create alike, handles that belong
 * to another client refused, per-client quotas, a client that dies
 * (a forked child that exits without a goodbye) leaving nothing behind, a
 * server that goes away under an open context, bulk data through the
 * segment, refused descs and targets, the socket file's rules, and the
 * pipe's counters written to KILN_PIPE_STATS_FILE.
 *
 * These tests make their own servers: KILN_REMOTE, if set, is cleared.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote/remote.h"
#include "test.h"
#include "remote/server_harness.h"

#define MIB (1024u * 1024u)

/* In-place: x = x * p0 + p1 over binding 0. */
static const char k_mad[] = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                            "void main() {\n"
                            "    uint i = gl_GlobalInvocationID.x;\n"
                            "    x[i] = x[i] * kiln_param(0) + kiln_param(1);\n"
                            "}\n";

/* Another program, for a compile of one client alone. */
static const char k_xor[] = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                            "void main() {\n"
                            "    uint i = gl_GlobalInvocationID.x;\n"
                            "    x[i] ^= kiln_param(0) + i;\n"
                            "}\n";

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ms(unsigned ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

/* ---- a server on a thread ------------------------------------------------------------------ */

static bool folder_make(struct server *s) { return folder_make_as(s, "/tmp/kiln-remote"); }

static void server_end(struct server *s) { server_stop(s); }

/* Removes the files a test left in its folder, then the folder. */
static void folder_remove(struct server *s, const char *const *names)
{
    char p[96];
    unlink(s->path);
    for (; names && *names; names++) {
        snprintf(p, sizeof p, "%s/%s", s->dir, *names);
        unlink(p);
    }
    if (s->dir[0])
        rmdir(s->dir);
}

static kiln_result make_program(kiln_context c, const char *src, const char *name, kiln_program *out)
{
    kiln_result r = kiln_program_create(c, &(kiln_program_desc){.source = src, .name = name}, out);
    return r < 0 ? r : kiln_program_wait(c, *out);
}

/* ---- a. two clients compute right ------------------------------------------------------------- */

#define WORK_N 4096u

struct work {
    const struct server *srv;
    uint32_t seed, p0, p1;
    kiln_result result;        /* the first failure, with its message */
    char why[512];
    uint32_t mismatches;
    uint64_t validation_errors;
};

static void work_fail(struct work *w, kiln_result r, const char *what)
{
    if (w->result == KILN_OK) {
        w->result = r;
        snprintf(w->why, sizeof w->why, "%s: %s: %s", what, kiln_result_name(r), kiln_last_error());
    }
}

#define WORK_TRY(w, call)                                                                          \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            work_fail((w), r_, #call);                                                             \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* One client's whole run, on its own thread: a buffer, the mad program, a
 * one-node scheme submitted three times, the result read back and
 * compared with the CPU's. */
static void *work_main(void *arg)
{
    struct work *w = arg;
    static __thread uint32_t host[WORK_N], got[WORK_N];
    kiln_context c = {0};
    w->result = KILN_OK;
    WORK_TRY(w, client(w->srv, &c));
    kiln_buffer buf;
    kiln_program prog;
    kiln_scheme sch;
    kiln_node node;
    uint32_t x = w->seed;
    for (uint32_t i = 0; i < WORK_N; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        host[i] = x;
    }
    WORK_TRY(w, kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof host, .label = "work"}, &buf));
    WORK_TRY(w, kiln_buffer_upload(c, buf, 0, host, sizeof host));
    WORK_TRY(w, make_program(c, k_mad, "mad.comp", &prog));
    WORK_TRY(w, kiln_scheme_create(c, &(kiln_scheme_desc){.label = "work"}, &sch));
    kiln_binding b = {.binding = 0, .buffer = buf};
    uint32_t params[2] = {w->p0, w->p1};
    WORK_TRY(w, kiln_scheme_add_node(c, sch,
                                     &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1,
                                                       .groups = {WORK_N / 64}, .params = params, .param_count = 2},
                                     &node));
    for (int k = 0; k < 3; k++)
        WORK_TRY(w, kiln_scheme_submit(c, sch, NULL));
    WORK_TRY(w, kiln_buffer_readback(c, buf, 0, got, sizeof got));
    for (uint32_t i = 0; i < WORK_N; i++) {
        uint32_t want = host[i];
        for (int k = 0; k < 3; k++)
            want = want * w->p0 + w->p1;
        w->mismatches += got[i] != want;
    }
    kiln_context_stats st;
    WORK_TRY(w, kiln_context_stats_get(c, &st));
    w->validation_errors = st.validation_errors;
out:
    if (c.id)
        kiln_context_destroy(c);
    return NULL;
}

TEST(two_clients_on_one_server_compute_what_the_cpu_computes)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct work w[2] = {{.srv = &s, .seed = 7, .p0 = 3, .p1 = 11}, {.srv = &s, .seed = 99, .p0 = 5, .p1 = 1}};
    pthread_t t[2];
    int started = 0;
    for (int i = 0; i < 2; i++)
        started += pthread_create(&t[i], NULL, work_main, &w[i]) == 0;
    CHECK_EQ(started, 2);
    for (int i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < started; i++) {
        if (w[i].result != KILN_OK)
            fprintf(stderr, "client %d: %s\n", i, w[i].why);
        CHECK_RESULT(w[i].result, KILN_OK);
        CHECK_EQ(w[i].mismatches, 0);
        CHECK_EQ(w[i].validation_errors, 0);
    }
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- b. one compile for two clients ---------------------------------------------------------- */

TEST(a_program_two_clients_create_alike_compiles_once)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, NULL));
    kiln_context a = {0}, b = {0};
    kiln_context_stats st0, st1, st2, stb;
    kiln_program pa, pb, solo;
    REQUIRE_OK(client(&s, &a));
    REQUIRE_OK(client(&s, &b));
    /* What one compile costs the service: a program of client a alone. */
    REQUIRE_OK(kiln_context_stats_get(a, &st0));
    REQUIRE_OK(make_program(a, k_xor, "xor.comp", &solo));
    REQUIRE_OK(kiln_context_stats_get(a, &st1));
    uint64_t one = st1.compiles_started - st0.compiles_started;
    CHECK(one >= 1);
    CHECK_EQ(st1.compile_requests - st0.compile_requests, 1);
    /* Both clients ask for the same program: it costs what one compile
     * does, and the second request joins the first. */
    REQUIRE_OK(kiln_program_create(a, &(kiln_program_desc){.source = k_mad, .name = "mad.comp"}, &pa));
    REQUIRE_OK(kiln_program_create(b, &(kiln_program_desc){.source = k_mad, .name = "mad.comp"}, &pb));
    CHECK_OK(kiln_program_wait(a, pa));
    CHECK_OK(kiln_program_wait(b, pb));
    REQUIRE_OK(kiln_context_stats_get(a, &st2));
    REQUIRE_OK(kiln_context_stats_get(b, &stb));
    CHECK_EQ(st2.compile_requests - st1.compile_requests, 2);
    CHECK_EQ(st2.compiles_started - st1.compiles_started, one);
    CHECK(st2.compiles_adopted + st2.compiles_deduplicated > st1.compiles_adopted + st1.compiles_deduplicated);
    /* Either client sees the shared service's counts. */
    CHECK_EQ(stb.compile_requests, st2.compile_requests);
    CHECK_EQ(stb.compiles_started, st2.compiles_started);
    /* Each holds a program of its own, with the same interface. */
    kiln_program_interface ia, ib;
    CHECK_OK(kiln_program_interface_get(a, pa, &ia));
    CHECK_OK(kiln_program_interface_get(b, pb, &ib));
    CHECK_EQ(ia.binding_count, 1);
    CHECK_EQ(ib.binding_count, 1);
    CHECK_EQ(ia.spirv_words, ib.spirv_words);
    CHECK_EQ(st2.programs, 2);
    CHECK_EQ(stb.programs, 1);
    test_context_done(a);
    test_context_done(b);
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- c. another client's handles ------------------------------------------------------------ */

TEST(another_clients_handles_are_refused_and_its_objects_unharmed)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, NULL));
    kiln_context a = {0}, b = {0};
    REQUIRE_OK(client(&s, &a));
    REQUIRE_OK(client(&s, &b));
    enum { N = 256 };
    uint32_t data[N], junk[N], got[N];
    for (uint32_t i = 0; i < N; i++) {
        data[i] = i * 2654435761u;
        junk[i] = ~data[i];
    }
    kiln_buffer abuf, bbuf;
    kiln_program aprog, bprog;
    REQUIRE_OK(kiln_buffer_create(a, &(kiln_buffer_desc){.size = sizeof data, .label = "a's"}, &abuf));
    REQUIRE_OK(kiln_buffer_upload(a, abuf, 0, data, sizeof data));
    REQUIRE_OK(make_program(a, k_mad, "mad.comp", &aprog));
    /* b names a's buffer in each buffer call. */
    CHECK_RESULT(kiln_buffer_upload(b, abuf, 0, junk, sizeof junk), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_buffer_readback(b, abuf, 0, got, sizeof got), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_buffer_destroy(b, abuf), KILN_ERR_HANDLE);
    /* ... and in a node's binding, and a's program in a node. */
    REQUIRE_OK(kiln_buffer_create(b, &(kiln_buffer_desc){.size = sizeof data, .label = "b's"}, &bbuf));
    REQUIRE_OK(make_program(b, k_mad, "mad.comp", &bprog));
    kiln_scheme sch;
    kiln_node node;
    REQUIRE_OK(kiln_scheme_create(b, NULL, &sch));
    kiln_binding bind = {.binding = 0, .buffer = abuf};
    uint32_t params[2] = {0, 0};   /* would zero the buffer */
    kiln_node_desc nd = {.program = bprog, .bindings = &bind, .binding_count = 1, .groups = {N / 64},
                         .params = params, .param_count = 2};
    /* b's program is ready: the add runs ahead, and the server's refusal
     * comes at the next synchronization point (docs/server.md, "Run-ahead"). */
    CHECK_OK(kiln_scheme_add_node(b, sch, &nd, &node));
    CHECK_RESULT(kiln_context_wait_idle(b), KILN_ERR_HANDLE);
    CHECK_MSG("handle of another context");
    bind.buffer = bbuf;
    nd.program = aprog;
    CHECK_RESULT(kiln_scheme_add_node(b, sch, &nd, &node), KILN_ERR_HANDLE);
    /* b's own objects work. */
    nd.program = bprog;
    CHECK_OK(kiln_scheme_add_node(b, sch, &nd, &node));
    CHECK_OK(kiln_scheme_submit(b, sch, NULL));
    CHECK_OK(kiln_context_wait_idle(b));
    /* a's buffer still holds what a put there. */
    memset(got, 0, sizeof got);
    CHECK_OK(kiln_buffer_readback(a, abuf, 0, got, sizeof got));
    CHECK(memcmp(got, data, sizeof data) == 0);
    test_context_done(b);
    test_context_done(a);
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- d. quotas ------------------------------------------------------------------------------- */

TEST(a_client_past_its_quota_is_refused_alone_and_may_create_again_after_freeing)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, &(kiln_server_desc){.max_objects = 3, .max_bytes = 1 * MIB}));
    kiln_context a = {0}, b = {0};
    REQUIRE_OK(client(&s, &a));
    REQUIRE_OK(client(&s, &b));
    kiln_buffer a1, a2, a3, extra;
    kiln_program ap;
    /* Bytes: 512 KiB fit, 600 KiB more do not. */
    REQUIRE_OK(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 512 * 1024}, &a1));
    CHECK_RESULT(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 600 * 1024}, &extra), KILN_ERR_LIMIT);
    CHECK_MSG("1048576");
    /* Objects: three at once, whatever they are. */
    REQUIRE_OK(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 4096}, &a2));
    REQUIRE_OK(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 4096}, &a3));
    CHECK_RESULT(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 4096}, &extra), KILN_ERR_LIMIT);
    CHECK_MSG("3 at once");
    CHECK_RESULT(kiln_program_create(a, &(kiln_program_desc){.source = k_mad}, &ap), KILN_ERR_LIMIT);
    CHECK_MSG("3 at once");
    kiln_scheme sch;
    CHECK_RESULT(kiln_scheme_create(a, NULL, &sch), KILN_ERR_LIMIT);
    CHECK_MSG("objects");
    /* The other client on the same server is not affected. */
    kiln_buffer b1;
    kiln_program bp;
    kiln_scheme bs;
    CHECK_OK(kiln_buffer_create(b, &(kiln_buffer_desc){.size = 512 * 1024}, &b1));
    CHECK_OK(make_program(b, k_mad, "mad.comp", &bp));
    CHECK_OK(kiln_scheme_create(b, NULL, &bs));
    /* a frees some and creates again. */
    CHECK_OK(kiln_buffer_destroy(a, a2));
    CHECK_OK(kiln_program_create(a, &(kiln_program_desc){.source = k_mad}, &ap));
    CHECK_RESULT(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 4096}, &extra), KILN_ERR_LIMIT);
    CHECK_OK(kiln_buffer_destroy(a, a1));
    CHECK_OK(kiln_buffer_create(a, &(kiln_buffer_desc){.size = 1 * MIB - 4096}, &a1));
    kiln_context_stats st;
    CHECK_OK(kiln_context_stats_get(a, &st));
    CHECK_EQ(st.buffers, 2);
    CHECK_EQ(st.programs, 1);
    test_context_done(a);
    test_context_done(b);
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- e. a client that dies --------------------------------------------------------------------- */

/* Reads one byte from fd within ms milliseconds; -1 when none came. */
static int read_byte(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint64_t deadline = now_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= deadline)
            return -1;
        int n = poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        unsigned char c;
        ssize_t got = read(fd, &c, 1);
        return got == 1 ? c : -1;
    }
}

/* The child: waits for the word, makes a context with objects, says so,
 * waits for the word again and exits without destroying anything. Its
 * exit status is 0, or the step that failed. */
static void child_main(const char *remote, int go_fd, int ready_fd)
{
    if (read_byte(go_fd, 60000) != 'g')
        _exit(10);
    kiln_context c;
    if (kiln_context_create(&(kiln_context_desc){.remote = remote}, &c) != KILN_OK)
        _exit(11);
    kiln_buffer buf;
    kiln_program prog;
    kiln_scheme sch;
    kiln_node node;
    uint32_t data[256] = {1, 2, 3};
    if (kiln_buffer_create(c, &(kiln_buffer_desc){.size = sizeof data}, &buf) != KILN_OK ||
        kiln_buffer_upload(c, buf, 0, data, sizeof data) != KILN_OK)
        _exit(12);
    if (kiln_program_create(c, &(kiln_program_desc){.source = k_mad}, &prog) != KILN_OK ||
        kiln_program_wait(c, prog) != KILN_OK)
        _exit(13);
    kiln_binding b = {.binding = 0, .buffer = buf};
    if (kiln_scheme_create(c, NULL, &sch) != KILN_OK ||
        kiln_scheme_add_node(c, sch, &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1,
                                                        .groups = {4}},
                             &node) != KILN_OK ||
        kiln_scheme_submit(c, sch, NULL) != KILN_OK ||
        kiln_context_wait_idle(c) != KILN_OK)   /* the add and submit ran ahead: applied by now */
        _exit(14);
    if (write(ready_fd, "r", 1) != 1)
        _exit(15);
    if (read_byte(go_fd, 60000) != 'x')
        _exit(16);
    _exit(0);
}

/* Waits (bounded) for pid; its exit status, or -1 (killed if it had to be). */
static int child_wait(pid_t pid, int ms)
{
    int status = 0;
    uint64_t deadline = now_ns() + (uint64_t)ms * 1000000ull;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (w < 0 && errno != EINTR)
            return -1;
        if (now_ns() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        nap_ms(20);
    }
}

TEST(a_client_that_exits_without_destroying_leaves_nothing_behind)
{
    struct server s;
    REQUIRE(folder_make(&s));
    /* The child is made before the server's threads exist, and waits for
     * the word to connect. */
    int go[2], ready[2];
    REQUIRE(pipe(go) == 0);
    if (pipe(ready)) {
        close(go[0]);
        close(go[1]);
        REQUIRE(!"pipe");
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(go[1]);
        close(ready[0]);
        child_main(s.remote, go[0], ready[1]);
    }
    close(go[0]);
    close(ready[1]);
    if (pid < 0) {
        close(go[1]);
        close(ready[0]);
        REQUIRE(!"fork");
    }
    kiln_context a = {0};
    kiln_buffer abuf;
    uint32_t data[64], got[64];
    for (uint32_t i = 0; i < 64; i++)
        data[i] = 1000 + i;
    if (server_start(&s, NULL) != KILN_OK) {
        CHECK(!"server_start");
        goto out;
    }
    struct srv *srv = srv_of(s.ks);
    /* A client of this process lives through the child's death. */
    if (client(&s, &a) != KILN_OK || kiln_buffer_create(a, &(kiln_buffer_desc){.size = sizeof data}, &abuf) ||
        kiln_buffer_upload(a, abuf, 0, data, sizeof data)) {
        fprintf(stderr, "client a: %s\n", kiln_last_error());
        CHECK(!"client a");
        goto out;
    }
    uint32_t live0, live1;
    uint64_t objects0, objects1;
    srv_counts(srv, &live0, NULL, &objects0);
    CHECK_EQ(live0, 1);
    CHECK_EQ(objects0, 1);
    CHECK(write(go[1], "g", 1) == 1);
    CHECK_EQ(read_byte(ready[0], 120000), 'r');
    /* The child's objects are there while it lives: a buffer, a program, a
     * scheme and its node. */
    srv_counts(srv, &live1, NULL, &objects1);
    CHECK_EQ(live1, live0 + 1);
    CHECK_EQ(objects1, objects0 + 4);
    CHECK(write(go[1], "x", 1) == 1);
    CHECK_EQ(child_wait(pid, 60000), 0);
    pid = 0;
    /* Its connection and its objects go (its worker frees them). */
    uint64_t deadline = now_ns() + 10ull * 1000000000ull;
    do {
        srv_counts(srv, &live1, NULL, &objects1);
        if (live1 == live0 && objects1 == objects0)
            break;
        nap_ms(20);
    } while (now_ns() < deadline);
    CHECK_EQ(live1, live0);
    CHECK_EQ(objects1, objects0);
    /* The other client carries on. */
    CHECK_OK(kiln_buffer_readback(a, abuf, 0, got, sizeof got));
    CHECK(memcmp(got, data, sizeof data) == 0);
out:
    if (pid > 0) {   /* failed before the child was told to go */
        close(go[1]);
        go[1] = -1;
        child_wait(pid, 1000);
    }
    if (go[1] >= 0)
        close(go[1]);
    close(ready[0]);
    if (a.id)
        test_context_done(a);
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- f. a server that goes away ----------------------------------------------------------------- */

struct orphan {
    kiln_context c;
    kiln_buffer buf;
    kiln_result readback, create, destroy;
    char readback_msg[512], create_msg[512];
    bool done;
    pthread_mutex_t mu;
    pthread_cond_t cond;
};

static void *orphan_main(void *arg)
{
    struct orphan *o = arg;
    uint32_t got[16];
    kiln_buffer b2;
    o->readback = kiln_buffer_readback(o->c, o->buf, 0, got, sizeof got);
    snprintf(o->readback_msg, sizeof o->readback_msg, "%s", kiln_last_error());
    o->create = kiln_buffer_create(o->c, &(kiln_buffer_desc){.size = 64}, &b2);
    snprintf(o->create_msg, sizeof o->create_msg, "%s", kiln_last_error());
    o->destroy = kiln_context_destroy(o->c);
    pthread_mutex_lock(&o->mu);
    o->done = true;
    pthread_cond_signal(&o->cond);
    pthread_mutex_unlock(&o->mu);
    return NULL;
}

TEST(a_server_that_goes_away_makes_later_calls_fail_as_device_lost)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, NULL));
    static struct orphan o = {.mu = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    REQUIRE_OK(client(&s, &o.c));
    uint32_t data[16] = {5, 6, 7};
    REQUIRE_OK(kiln_buffer_create(o.c, &(kiln_buffer_desc){.size = sizeof data}, &o.buf));
    REQUIRE_OK(kiln_buffer_upload(o.c, o.buf, 0, data, sizeof data));
    server_end(&s);
    /* The calls run on a thread so that a hang is a failure here, not a
     * stuck test. */
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, orphan_main, &o) == 0);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 60;
    pthread_mutex_lock(&o.mu);
    while (!o.done)
        if (pthread_cond_timedwait(&o.cond, &o.mu, &until) == ETIMEDOUT)
            break;
    bool done = o.done;
    pthread_mutex_unlock(&o.mu);
    REQUIRE(done);   /* else the calls hang on a server that is gone */
    pthread_join(t, NULL);
    CHECK_EQ(o.readback, KILN_ERR_DEVICE_LOST);
    CHECK(strstr(o.readback_msg, "kiln server") != NULL);
    CHECK(strstr(o.readback_msg, s.path) != NULL);
    CHECK_EQ(o.create, KILN_ERR_DEVICE_LOST);
    CHECK(strstr(o.create_msg, "kiln server") != NULL);
    CHECK_EQ(o.destroy, KILN_OK);
    if (!strstr(o.readback_msg, "kiln server"))
        fprintf(stderr, "message: %s\n", o.readback_msg);
    folder_remove(&s, NULL);
}

/* ---- g. bulk data ----------------------------------------------------------------------------- */

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (uint8_t)(x >> 24);
    }
}

TEST(data_past_the_inline_bound_round_trips_and_ranges_past_the_end_are_refused)
{
    struct server s;
    REQUIRE(folder_make(&s));
    REQUIRE_OK(server_start(&s, NULL));
    kiln_context c = {0}, local = {0};
    REQUIRE_OK(client(&s, &c));
    const size_t big = 9u * MIB, mid = 3u * MIB, size = 10u * MIB;
    uint8_t *in = malloc(big), *out = malloc(big);
    kiln_buffer buf;
    if (!in || !out || kiln_buffer_create(c, &(kiln_buffer_desc){.size = size, .label = "bulk"}, &buf) != KILN_OK) {
        CHECK(!"setup");
        goto out;
    }
    /* 3 MiB at an offset, then 9 MiB: each more than PIPE_INLINE_MAX. */
    fill(in, mid, 1);
    CHECK_OK(kiln_buffer_upload(c, buf, 4096, in, mid));
    memset(out, 0, big);
    CHECK_OK(kiln_buffer_readback(c, buf, 4096, out, mid));
    CHECK(memcmp(in, out, mid) == 0);
    fill(in, big, 2);
    CHECK_OK(kiln_buffer_upload(c, buf, size - big, in, big));
    memset(out, 0, big);
    CHECK_OK(kiln_buffer_readback(c, buf, size - big, out, big));
    CHECK(memcmp(in, out, big) == 0);
    /* A part of it read back through the segment again, and a small part
     * inline: the same bytes. */
    memset(out, 0, big);
    CHECK_OK(kiln_buffer_readback(c, buf, size - big + 12345, out, mid));
    CHECK(memcmp(in + 12345, out, mid) == 0);
    CHECK_OK(kiln_buffer_readback(c, buf, size - 100, out, 100));
    CHECK(memcmp(in + big - 100, out, 100) == 0);
    /* Past the end, small and large: refused naming the buffer, as a
     * context of this process refuses them. */
    CHECK_RESULT(kiln_buffer_readback(c, buf, size - 4, out, 8), KILN_ERR_INVALID);
    CHECK_MSG("bulk");
    char remote_msg[512];
    snprintf(remote_msg, sizeof remote_msg, "%s", kiln_last_error());
    CHECK_RESULT(kiln_buffer_upload(c, buf, size - mid + 4, in, mid), KILN_ERR_INVALID);
    CHECK_MSG("bulk");
    char remote_up_msg[512];
    snprintf(remote_up_msg, sizeof remote_up_msg, "%s", kiln_last_error());
    CHECK_RESULT(kiln_buffer_readback(c, buf, 2 * MIB, out, big), KILN_ERR_INVALID);
    CHECK_MSG("bulk");
    /* The buffer is as it was. */
    CHECK_OK(kiln_buffer_readback(c, buf, size - big, out, big));
    CHECK(memcmp(in, out, big) == 0);
    kiln_buffer lbuf;
    if (kiln_context_create(&(kiln_context_desc){.remote = "local"}, &local) != KILN_OK ||
        kiln_buffer_create(local, &(kiln_buffer_desc){.size = size, .label = "bulk"}, &lbuf) != KILN_OK) {
        CHECK(!"local context");
        goto out;
    }
    CHECK_RESULT(kiln_buffer_readback(local, lbuf, size - 4, out, 8), KILN_ERR_INVALID);
    CHECK(strcmp(kiln_last_error(), remote_msg) == 0);
    CHECK_RESULT(kiln_buffer_upload(local, lbuf, size - mid + 4, in, mid), KILN_ERR_INVALID);
    CHECK(strcmp(kiln_last_error(), remote_up_msg) == 0);
out:
    free(in);
    free(out);
    if (local.id)
        test_context_done(local);
    if (c.id)
        test_context_done(c);
    server_end(&s);
    folder_remove(&s, NULL);
}

/* ---- h. refused descs and targets ----------------------------------------------------------------- */

/* Log lines naming a desc field, from whichever thread writes them. */
static pthread_mutex_t named_mu = PTHREAD_MUTEX_INITIALIZER;
static int named_lines;

static void count_named(kiln_log_level level, const char *message, void *user)
{
    (void)level;
    pthread_mutex_lock(&named_mu);
    named_lines += strstr(message, (const char *)user) != NULL;
    pthread_mutex_unlock(&named_mu);
}

TEST(desc_fields_the_server_owns_and_bad_targets_are_refused_by_name)
{
    struct server s;
    REQUIRE(folder_make(&s));
    /* The server's compile service runs 2 workers. */
    REQUIRE_OK(server_start(&s, &(kiln_server_desc){.context = &(kiln_context_desc){.compile_threads = 2}}));
    kiln_context c = {0};
    /* Another backend, another device, a trace of its own: refused by name. */
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.remote = s.remote, .backend = KILN_BACKEND_MOCK}, &c),
                 KILN_ERR_INVALID);
    CHECK_MSG("backend");
    CHECK_EQ(c.id, 0);
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.remote = s.remote, .device = "no-such-gpu-9000"}, &c),
                 KILN_ERR_INVALID);
    CHECK_MSG("no-such-gpu-9000");
    CHECK_EQ(c.id, 0);
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.remote = s.remote, .trace_path = "/tmp/t.json"}, &c),
                 KILN_ERR_INVALID);
    CHECK_MSG("trace_path");
    CHECK_EQ(c.id, 0);
    /* Another compile_threads changes no result: the server's service
     * serves the context, and the log names the field. */
    kiln_set_log_callback(count_named, (void *)"compile_threads");
    kiln_set_log_level(KILN_LOG_INFO);
    kiln_result r = kiln_context_create(&(kiln_context_desc){.remote = s.remote, .compile_threads = 7}, &c);
    kiln_set_log_level(KILN_LOG_DEFAULT);
    kiln_set_log_callback(NULL, NULL);
    CHECK_RESULT(r, KILN_OK);
    CHECK(!strcmp(kiln_last_error(), ""));   /* a call that succeeds leaves no message */
    pthread_mutex_lock(&named_mu);
    CHECK(named_lines >= 1);
    pthread_mutex_unlock(&named_mu);
    if (r == KILN_OK) {
        kiln_program p;
        CHECK_OK(make_program(c, k_mad, "mad.comp", &p));
        test_context_done(c);
    }
    c.id = 0;
    /* A relative path is no target. */
    CHECK_RESULT(kiln_context_create(&(kiln_context_desc){.remote = "unix:relative/path"}, &c), KILN_ERR_INVALID);
    CHECK_MSG("unix:relative/path");
    CHECK_EQ(c.id, 0);
    /* Nothing at the path, and a socket nobody listens on: said, not waited for. */
    char nobody[96], dead[64];
    snprintf(nobody, sizeof nobody, "unix:%s/nobody.sock", s.dir);
    r = kiln_context_create(&(kiln_context_desc){.remote = nobody}, &c);
    CHECK(r < 0);
    CHECK_MSG("no kiln server");
    CHECK_EQ(c.id, 0);
    snprintf(dead, sizeof dead, "%s/dead.sock", s.dir);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", dead);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    if (fd >= 0)
        close(fd);
    snprintf(nobody, sizeof nobody, "unix:%s", dead);
    r = kiln_context_create(&(kiln_context_desc){.remote = nobody}, &c);
    CHECK(r < 0);
    CHECK_MSG("no kiln server");
    CHECK_EQ(c.id, 0);
    server_end(&s);
    folder_remove(&s, (const char *const[]){"dead.sock", NULL});
}

/* ---- i. the socket file ---------------------------------------------------------------------------- */

TEST(the_socket_is_private_a_stale_one_is_replaced_and_a_file_is_left_alone)
{
    struct server s;
    REQUIRE(folder_make(&s));
    /* A stale socket at the path: bound, closed, never unlinked. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", s.path);
    REQUIRE(fd >= 0);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    close(fd);
    struct stat st;
    CHECK(lstat(s.path, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK_OK(server_start(&s, NULL));
    if (s.running) {
        CHECK(lstat(s.path, &st) == 0 && S_ISSOCK(st.st_mode));
        CHECK_EQ(st.st_mode & 0777, 0600);
        CHECK(!strcmp(kiln_server_socket_path(s.ks), s.path));
        /* It serves. */
        kiln_context c;
        kiln_buffer b;
        CHECK_OK(client(&s, &c));
        CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 64}, &b));
        test_context_done(c);
        /* A live one is not taken over. */
        kiln_server *second = NULL;
        CHECK(kiln_server_create(&(kiln_server_desc){.socket_path = s.path}, &second) < 0);
        CHECK_MSG("already listening");
        CHECK(second == NULL);
        CHECK_OK(client(&s, &c));
        test_context_done(c);
    }
    server_end(&s);
    /* The server removes its socket. */
    CHECK(lstat(s.path, &st) != 0 && errno == ENOENT);
    /* A regular file at the path is refused and left as it was. */
    static const char content[] = "not a socket: someone's file\n";
    FILE *f = fopen(s.path, "w");
    REQUIRE(f);
    fputs(content, f);
    fclose(f);
    kiln_server *ks = NULL;
    CHECK_RESULT(kiln_server_create(&(kiln_server_desc){.socket_path = s.path}, &ks), KILN_ERR_IO);
    CHECK_MSG(s.path);
    CHECK(ks == NULL);
    char back[sizeof content + 16] = {0};
    f = fopen(s.path, "r");
    CHECK(f != NULL);
    if (f) {
        size_t n = fread(back, 1, sizeof back - 1, f);
        fclose(f);
        CHECK_EQ(n, strlen(content));
        CHECK(!strcmp(back, content));
    }
    CHECK(lstat(s.path, &st) == 0 && S_ISREG(st.st_mode));
    folder_remove(&s, NULL);
}

/* ---- j. the pipe's counters ------------------------------------------------------------------------- */

/* The keys of a JSON object, nested objects' keys in braces:
 * {"a":1,"b":{"c":2}} is "a,b{c}". */
#define KEY_LEN(n, most) ((size_t)(n) < (most) ? (size_t)(n) : (most))
static void json_shape(const char *j, char *out, size_t cap)
{
    size_t n = 0;
    int depth = 0;
    bool first = true;
    out[0] = 0;
#define PUT(s)                                                                                     \
    do {                                                                                           \
        size_t l_ = strlen(s);                                                                     \
        if (l_ < cap - n) {                                                                        \
            memcpy(out + n, (s), l_ + 1);                                                          \
            n += l_;                                                                               \
        }                                                                                          \
    } while (0)
    for (const char *p = j; *p; p++) {
        if (*p == '"') {
            const char *e = strchr(p + 1, '"');
            if (!e)
                break;
            const char *q = e + 1;
            while (*q == ' ')
                q++;
            if (*q == ':') {
                char key[64] = {0};
                memcpy(key, p + 1, KEY_LEN(e - p - 1, sizeof key - 1));
                if (!first)
                    PUT(",");
                PUT(key);
                first = false;
            }
            p = e;
        } else if (*p == '{') {
            if (depth++ > 0) {
                PUT("{");
                first = true;
            }
        } else if (*p == '}') {
            if (--depth > 0) {
                PUT("}");
                first = false;
            }
        }
    }
#undef PUT
}

/* The number at "key": within the object at "outer" (NULL: the top). */
static long long json_number(const char *j, const char *outer, const char *key)
{
    char k[80];
    if (outer) {
        snprintf(k, sizeof k, "\"%s\":{", outer);
        j = strstr(j, k);
        if (!j)
            return -1;
    }
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(j, k);
    return p ? strtoll(p + strlen(k), NULL, 10) : -1;
}

static void stats_file_run(const struct server *s, const char *file)
{
    kiln_context c = {0};
    kiln_buffer buf;
    kiln_program prog;
    kiln_scheme sch;
    kiln_node node;
    REQUIRE_OK(client(s, &c));
    REQUIRE_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256 * 4}, &buf));
    REQUIRE_OK(make_program(c, k_mad, "mad.comp", &prog));
    REQUIRE_OK(kiln_scheme_create(c, NULL, &sch));
    kiln_binding b = {.binding = 0, .buffer = buf};
    REQUIRE_OK(kiln_scheme_add_node(c, sch, &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1,
                                                              .groups = {4}},
                                    &node));
    struct stat st;
    CHECK(stat(file, &st) != 0);   /* nothing yet */
    for (int i = 0; i < 120; i++)
        CHECK_OK(kiln_scheme_submit(c, sch, NULL));
    char line[4096] = {0}, extra[64];
    int lines = 0;
    FILE *f = fopen(file, "r");
    CHECK(f != NULL);
    if (f) {
        if (fgets(line, sizeof line, f))
            lines++;
        while (fgets(extra, sizeof extra, f))
            lines++;
        fclose(f);
    }
    CHECK_EQ(lines, 1);
    char shape[1024];
    json_shape(line, shape, sizeof shape);
#define CLASSES "{object,data,query,state,submit,wait,archive}"
    static const char want[] = "side,submits,calls" CLASSES ",bytes_sent" CLASSES ",bytes_received" CLASSES
                               ",segment_bytes,memo_hits,memo_misses,refused,posted,deferred";
#undef CLASSES
    CHECK(!strcmp(shape, want));
    if (strcmp(shape, want))
        fprintf(stderr, "keys: %s\nwant: %s\nline: %s", shape, want, line);
    CHECK_EQ(json_number(line, NULL, "submits"), 120);
    CHECK_EQ(json_number(line, "calls", "submit"), 120);
    CHECK(json_number(line, "bytes_sent", "submit") > 0);
    /* Submits run ahead (docs/server.md): no answer comes, none is counted. */
    CHECK_EQ(json_number(line, "bytes_received", "submit"), 0);
    CHECK(json_number(line, NULL, "posted") >= 120);
    CHECK_EQ(json_number(line, NULL, "refused"), 0);
    test_context_done(c);
}

TEST(pipe_stats_file_gets_a_json_line_of_the_pinned_names_every_120_submits)
{
    struct server s;
    REQUIRE(folder_make(&s));
    char file[192];
    snprintf(file, sizeof file, "%s/pipe.jsonl", s.dir);
    if (server_start(&s, NULL) == KILN_OK) {
        setenv("KILN_PIPE_STATS_FILE", file, 1);
        stats_file_run(&s, file);
        unsetenv("KILN_PIPE_STATS_FILE");
    } else {
        CHECK(!"server_start");
    }
    server_end(&s);
    folder_remove(&s, (const char *const[]){"pipe.jsonl", NULL});
}

/* The server counts each client's calls under the same names (its side
 * "server", the client named), a line every 120 of its submits and one
 * when it goes. */
TEST(a_server_keeps_counters_for_each_client)
{
    struct server s;
    REQUIRE(folder_make(&s));
    char file[192];
    snprintf(file, sizeof file, "%s/server.jsonl", s.dir);
    setenv("KILN_PIPE_STATS_FILE", file, 1);   /* read by the server at its start alone */
    kiln_result started = server_start(&s, NULL);
    unsetenv("KILN_PIPE_STATS_FILE");
    if (started == KILN_OK) {
        kiln_context c = {0};
        kiln_buffer buf;
        kiln_program prog;
        kiln_scheme sch;
        kiln_node node;
        REQUIRE_OK(client(&s, &c));
        REQUIRE_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256 * 4}, &buf));
        REQUIRE_OK(make_program(c, k_mad, "mad.comp", &prog));
        REQUIRE_OK(kiln_scheme_create(c, NULL, &sch));
        kiln_binding b = {.binding = 0, .buffer = buf};
        REQUIRE_OK(kiln_scheme_add_node(c, sch, &(kiln_node_desc){.program = prog, .bindings = &b,
                                                                  .binding_count = 1, .groups = {4}},
                                        &node));
        for (int i = 0; i < 120; i++)
            CHECK_OK(kiln_scheme_submit(c, sch, NULL));
        CHECK_RESULT(kiln_buffer_upload(c, (kiln_buffer){12345}, 0, "x", 1), KILN_ERR_HANDLE);
        CHECK_OK(kiln_context_destroy(c));
        char lines[2][4096] = {{0}};
        int n = 0;
        for (int tries = 0; tries < 1000 && n < 2; tries++) {   /* the close's line comes from the worker */
            FILE *f = fopen(file, "r");
            n = 0;
            while (f && n < 2 && fgets(lines[n], sizeof lines[n], f))
                n++;
            if (f)
                fclose(f);
            if (n < 2)
                usleep(10 * 1000);
        }
        CHECK_EQ(n, 2);
        char shape[1024];
        json_shape(lines[0], shape, sizeof shape);
#define CLASSES "{object,data,query,state,submit,wait,archive}"
        static const char want[] = "side,client,submits,calls" CLASSES ",bytes_sent" CLASSES
                                   ",bytes_received" CLASSES ",segment_bytes,refused,posted,deferred,applied,stalls,stalled_ns,imported_bytes,"
                                   "paced,paced_ns";
#undef CLASSES
        CHECK(!strcmp(shape, want));
        if (strcmp(shape, want))
            fprintf(stderr, "keys: %s\nwant: %s\nline: %s", shape, want, lines[0]);
        CHECK(strstr(lines[0], "\"side\":\"server\",\"client\":\"client ") != NULL);
        CHECK_EQ(json_number(lines[0], NULL, "submits"), 120);
        CHECK_EQ(json_number(lines[0], "calls", "submit"), 120);
        CHECK(json_number(lines[0], NULL, "applied") >= 120 + 5);   /* the create, buffer, program, scheme, node */
        CHECK(json_number(lines[0], "bytes_received", "submit") > 0);
        CHECK_EQ(json_number(lines[0], "bytes_sent", "submit"), 0);   /* run ahead: answered only on error */
        CHECK(json_number(lines[0], NULL, "posted") >= 120);
        CHECK_EQ(json_number(lines[0], NULL, "refused"), 0);
        /* The second: from then to the client's end, the refused upload in it. */
        CHECK_EQ(json_number(lines[1], NULL, "submits"), 0);
        CHECK_EQ(json_number(lines[1], NULL, "refused"), 1);
    } else {
        CHECK(!"server_start");
    }
    server_end(&s);
    folder_remove(&s, (const char *const[]){"server.jsonl", NULL});
}

int main(void)
{
    /* These tests make their own servers. */
    if (getenv("KILN_REMOTE"))
        unsetenv("KILN_REMOTE");
    RUN(two_clients_on_one_server_compute_what_the_cpu_computes);
    RUN(a_program_two_clients_create_alike_compiles_once);
    RUN(another_clients_handles_are_refused_and_its_objects_unharmed);
    RUN(a_client_past_its_quota_is_refused_alone_and_may_create_again_after_freeing);
    RUN(a_client_that_exits_without_destroying_leaves_nothing_behind);
    RUN(a_server_that_goes_away_makes_later_calls_fail_as_device_lost);
    RUN(data_past_the_inline_bound_round_trips_and_ranges_past_the_end_are_refused);
    RUN(desc_fields_the_server_owns_and_bad_targets_are_refused_by_name);
    RUN(the_socket_is_private_a_stale_one_is_replaced_and_a_file_is_left_alone);
    RUN(pipe_stats_file_gets_a_json_line_of_the_pinned_names_every_120_submits);
    RUN(a_server_keeps_counters_for_each_client);
    return TEST_SUMMARY();
}
