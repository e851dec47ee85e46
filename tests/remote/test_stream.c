/* SPDX-License-Identifier: MIT */
/*
 * test_stream.c: the command stream, from a client's side and from a
 * hostile one's. A client's calls after its context is made travel as
 * records in a shared segment (found here as a hostile client would find
 * it: its descriptor in /proc/self/fd, mapped); the control page is live
 * (the server's epoch, the generation, the cursors and sequence numbers,
 * the server's heartbeat); messages past half a small ring go as frames
 * and still arrive whole; a server stopped with SIGSTOP is noticed within
 * the peer timeout, and a page whose epoch changes is taken as a replaced
 * server; a forked child gets a clear error. A client that scribbles on
 * its own rings (a kind no ring has, a head moved backwards or far ahead,
 * a record past what was published, a frame announced past the frame
 * limit, a request of garbage) loses its connection and nothing else: the
 * server frees its objects and serves an honest client right after. Its
 * segment cannot be cut under the server (sealed). A stray answer on the
 * return ring is KILN_ERR_PROTOCOL for the client.
 *
 * These tests make their own servers: KILN_REMOTE, if set, is cleared.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "remote/remote.h"
#include "remote/remote_private.h"
#include "test.h"
#include "remote/server_harness.h"
#include "transport/transport.h"

static void nap_ms(unsigned ms) { nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000L}, NULL); }

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the segment, as a hostile client finds it ------------------------------------------- */

/* The descriptors of this process that are command-stream segments. */
static unsigned stream_fds(int *out, unsigned cap)
{
    unsigned n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char link[300], to[256];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t len = readlink(link, to, sizeof to - 1);
        if (len <= 0)
            continue;
        to[len] = 0;
        if (strstr(to, "memfd:kiln-stream") && n < cap)
            out[n++] = atoi(e->d_name);
    }
    closedir(d);
    return n;
}

struct mapped {
    int fd;
    uint8_t *map;
    size_t size;
    struct tp_control *ctl;
};

/* The stream segment that appeared since `before` (n descriptors), mapped. */
static bool map_new_stream(const int *before, unsigned n, struct mapped *m)
{
    int now[64];
    unsigned k = stream_fds(now, 64);
    for (unsigned i = 0; i < k; i++) {
        bool old = false;
        for (unsigned j = 0; j < n; j++)
            old |= now[i] == before[j];
        if (old)
            continue;
        struct stat st;
        if (fstat(now[i], &st))
            return false;
        m->fd = now[i];
        m->size = (size_t)st.st_size;
        m->map = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
        m->ctl = (struct tp_control *)m->map;
        return m->map != MAP_FAILED;
    }
    return false;
}

static void unmap(struct mapped *m) { munmap(m->map, m->size); }

/* A client on s, and its stream's segment mapped. */
static bool client_mapped(const struct server *s, kiln_context *c, struct mapped *m)
{
    int before[64];
    unsigned n = stream_fds(before, 64);
    if (client(s, c) != KILN_OK) {
        fprintf(stderr, "client: %s\n", kiln_last_error());
        return false;
    }
    return map_new_stream(before, n, m);
}

static bool folder(struct server *s) { return folder_make_as(s, "/tmp/kiln-stream"); }


/* A server of the mock device in a fresh folder. */
static bool mock_start(struct server *s)
{
    kiln_context_desc host = {.backend = KILN_BACKEND_MOCK};
    return folder(s) && server_start(s, &(kiln_server_desc){.context = &host}) == KILN_OK;
}


/* ---- a client's view ------------------------------------------------------------------------- */

/* After the handshake every call is a record: the command ring's
 * sequence numbers count the calls, each one answered on the return ring
 * but the upload, which runs ahead (inline, into a buffer the client
 * made); the server wrote its epoch and generation and its heartbeat moves. */
TEST(a_clients_calls_go_on_its_command_stream)
{
    struct server s;
    REQUIRE(mock_start(&s));
    kiln_context c;
    struct mapped m;
    REQUIRE(client_mapped(&s, &c, &m));
    struct tp_control *ctl = m.ctl;
    CHECK_EQ(ctl->magic, TP_CONTROL_MAGIC);
    CHECK(atomic_load(&ctl->epoch) != 0);
    CHECK_EQ(atomic_load(&ctl->generation), 1);
    uint64_t sent = atomic_load(&ctl->cmd.submitted_seq), applied = atomic_load(&ctl->cmd.applied_seq);
    uint64_t answered = atomic_load(&ctl->stage.submitted_seq);
    CHECK_EQ(sent, applied);
    kiln_buffer b;
    CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 4096}, &b));
    uint32_t v[1024] = {7, 8, 9}, got[1024];
    CHECK_OK(kiln_buffer_upload(c, b, 0, v, sizeof v));
    CHECK_OK(kiln_buffer_readback(c, b, 0, got, sizeof got));
    CHECK(!memcmp(v, got, sizeof v));
    CHECK_EQ(atomic_load(&ctl->cmd.submitted_seq), sent + 3);
    CHECK_EQ(atomic_load(&ctl->cmd.applied_seq), sent + 3);
    CHECK_EQ(atomic_load(&ctl->cmd.retired_seq), sent + 3);
    CHECK_EQ(atomic_load(&ctl->stage.submitted_seq), answered + 2);
    CHECK_EQ(atomic_load(&ctl->stage.retired_seq), answered + 2);
    uint64_t beat = atomic_load(&ctl->server_heartbeat), until = now_ms() + 10000;
    while (atomic_load(&ctl->server_heartbeat) == beat && now_ms() < until)
        nap_ms(20);
    CHECK(atomic_load(&ctl->server_heartbeat) != beat);
    /* The segment is sealed: the client cannot cut it under the server. */
    CHECK(ftruncate(m.fd, 4096) != 0 && errno == EPERM);
    unmap(&m);
    kiln_context_destroy(c);
    server_finish(&s);
}

/* With rings of 4 KiB (KILN_IPC_RING_KIB=4) most messages are past half a
 * ring: they go as frames their records announce, and a real program
 * (a source of 40 KiB) compiles and runs right. */
TEST(with_small_rings_big_messages_go_as_frames_and_arrive_whole)
{
    setenv("KILN_IPC_RING_KIB", "4", 1);
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    kiln_context c;
    struct mapped m;
    REQUIRE(client_mapped(&s, &c, &m));
    CHECK_EQ(m.ctl->cmd_ring_size, 4096);
    char *src = malloc(48 << 10);
    REQUIRE(src);
    int at = snprintf(src, 48 << 10, "#version 450\nlayout(local_size_x = 64) in;\n"
                                     "layout(std430, binding = 0) buffer B { uint v[]; };\n");
    for (int i = 0; i < 600; i++)
        at += snprintf(src + at, (48 << 10) - (size_t)at, "// line %04d of a long comment, to make the source big\n",
                       i);
    snprintf(src + at, (48 << 10) - (size_t)at, "void main() { v[gl_GlobalInvocationID.x] *= 3u; }\n");
    kiln_program p;
    CHECK_OK(kiln_program_create(c, &(kiln_program_desc){.source = src, .name = "big"}, &p));
    CHECK_OK(kiln_program_wait(c, p));
    kiln_program_interface iface;
    CHECK_OK(kiln_program_interface_get(c, p, &iface));
    CHECK_EQ(iface.workgroup_size[0], 64);
    enum { N = 64 * 40 };
    uint32_t *v = malloc(N * 4), *got = malloc(N * 4);
    REQUIRE(v && got);
    for (uint32_t i = 0; i < N; i++)
        v[i] = i;
    kiln_buffer b;
    CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = N * 4}, &b));
    CHECK_OK(kiln_buffer_upload(c, b, 0, v, N * 4));
    kiln_scheme sc;
    CHECK_OK(kiln_scheme_create(c, NULL, &sc));
    kiln_node n;
    CHECK_OK(kiln_scheme_add_node(c, sc, &(kiln_node_desc){.program = p, .groups = {40, 1, 1},
                                                          .bindings = (kiln_binding[]){{.binding = 0, .buffer = b}},
                                                          .binding_count = 1}, &n));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(c, sc, &t));
    CHECK_OK(kiln_ticket_wait(c, t, UINT64_MAX));
    CHECK_OK(kiln_buffer_readback(c, b, 0, got, N * 4));
    bool right = true;
    for (uint32_t i = 0; i < N; i++)
        right &= got[i] == i * 3u;
    CHECK(right);
    free(v);
    free(got);
    free(src);
    unmap(&m);
    kiln_context_destroy(c);
    server_finish(&s);
    unsetenv("KILN_IPC_RING_KIB");
}

/* Whether pid is stopped, as /proc says. */
static bool stopped(pid_t pid)
{
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool t = fgets(line, sizeof line, f) && strrchr(line, ')') && strrchr(line, ')')[2] == 'T';
    fclose(f);
    return t;
}

/* A server that stops (SIGSTOP) is noticed within the peer timeout (1 s
 * here, the bound generous for loaded machines): the call fails with
 * KILN_ERR_DEVICE_LOST naming the heartbeat, and every later call too. */
TEST(a_stopped_server_is_noticed_within_the_peer_timeout)
{
    struct server s;
    REQUIRE(folder(&s));
    setenv("KILN_IPC_PEER_TIMEOUT_MS", "1000", 1);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n > 0) {
            self[n] = 0;
            execl(self, self, "--serve", s.path, (char *)NULL);
        }
        _exit(6);
    }
    for (int i = 0; i < 600 && access(s.path, F_OK); i++)
        nap_ms(50);
    REQUIRE(access(s.path, F_OK) == 0);
    kiln_context c;
    REQUIRE_OK(client(&s, &c));
    kiln_buffer b;
    CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b));
    kill(pid, SIGSTOP);
    /* Stopped for sure (kill returns before the signal takes it). */
    for (int i = 0; i < 1000 && !stopped(pid); i++)
        nap_ms(2);
    REQUIRE(stopped(pid));
    uint64_t t0 = now_ms();
    CHECK_RESULT(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b), KILN_ERR_DEVICE_LOST);
    uint64_t took = now_ms() - t0;
    CHECK_MSG("heartbeat");
    CHECK(took >= 900 && took < 20000);
    fprintf(stderr, "  noticed after %llu ms: %s\n", (unsigned long long)took, kiln_last_error());
    CHECK_RESULT(kiln_context_wait_idle(c), KILN_ERR_DEVICE_LOST);
    kiln_context_destroy(c);
    kill(pid, SIGKILL);
    kill(pid, SIGCONT);
    waitpid(pid, NULL, 0);
    unsetenv("KILN_IPC_PEER_TIMEOUT_MS");
    unlink(s.path);
    rmdir(s.dir);
}

/* ---- a server that beats but reads nothing ------------------------------------------------------ */

/* A fake server: it admits one client, answers its context_create and its
 * stream, beats its heartbeat, and then reads nothing more. */
struct fake {
    int listen_fd;
    pthread_t thread;
    struct tp *tp;
    struct stream st;
    struct tp_heartbeat beat;
    _Atomic bool stop;
};

static void fake_answer(struct fake *f, const uint8_t *req, const void *out, uint32_t n)
{
    struct pipe_req q;
    memcpy(&q, req, sizeof q);
    uint8_t rep[sizeof(struct pipe_rep) + 8];
    struct pipe_rep h = {.op = q.op, .result = 0, .out_size = n, .seq = q.seq};
    memcpy(rep, &h, sizeof h);
    if (n)
        memcpy(rep + sizeof h, out, n);
    (void)tp_send(f->tp, rep, sizeof h + n);
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    const uint64_t s5 = 5ull * 1000 * 1000 * 1000;
    int conn = accept4(f->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    struct ucred cred;
    if (conn < 0 || tp_accept_hello(conn, s5, &f->tp, &cred) < 0 || tp_hello_answer(tp_peer_fd(f->tp), KILN_OK, NULL) < 0)
        return NULL;
    static uint8_t buf[64 << 10];
    size_t len;
    if (tp_recv(f->tp, buf, sizeof buf, &len, s5) < 0)
        return NULL;
    struct pipe_context_made made = {.serial = 1};
    fake_answer(f, buf, &made, sizeof made);   /* context_create */
    uint8_t msg[TP_SIDEBAND_PAYLOAD];
    int fds[TP_FDS_MAX];
    uint32_t nfds = 0;
    uint64_t size = 0, epoch = 0x6b696c6e;
    if (tp_recv_fds(f->tp, msg, sizeof msg, &len, fds, TP_FDS_MAX, &nfds, s5) < 0 || nfds != 1 || len != 16)
        return NULL;
    memcpy(&size, msg + 8, sizeof size);
    if (stream_adopt(&f->st, fds[0], size, epoch) < 0 || tp_recv(f->tp, buf, sizeof buf, &len, s5) < 0)
        return NULL;
    fake_answer(f, buf, &epoch, sizeof epoch);   /* PIPE_OP_STREAM */
    if (tp_heartbeat_start(&f->beat, &f->st.ctl->server_heartbeat, 20ull * 1000 * 1000) < 0)
        return NULL;
    while (!atomic_load(&f->stop))
        nap_ms(10);
    tp_heartbeat_stop(&f->beat);
    return NULL;
}

/* A server whose heartbeat beats but which reads none of the records
 * waiting for it is taken as hung after KILN_IPC_HUNG_TIMEOUT_MS (1 s
 * here): the call fails with KILN_ERR_DEVICE_LOST saying so. */
TEST(a_server_that_beats_but_reads_nothing_is_taken_as_hung)
{
    struct server s;
    REQUIRE(folder(&s));
    struct fake f = {.listen_fd = -1};
    stream_init(&f.st);
    REQUIRE_OK(tp_listen(s.path, 0600, &f.listen_fd));
    REQUIRE(pthread_create(&f.thread, NULL, fake_main, &f) == 0);
    setenv("KILN_IPC_HUNG_TIMEOUT_MS", "1000", 1);
    kiln_context c;
    kiln_result made = client(&s, &c);
    unsetenv("KILN_IPC_HUNG_TIMEOUT_MS");
    CHECK_OK(made);
    if (made == KILN_OK) {
        uint64_t t0 = now_ms();
        kiln_buffer b;
        CHECK_RESULT(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b), KILN_ERR_DEVICE_LOST);
        uint64_t took = now_ms() - t0;
        CHECK_MSG("hung");
        CHECK(took >= 900 && took < 20000);
        fprintf(stderr, "  noticed after %llu ms: %s\n", (unsigned long long)took, kiln_last_error());
        kiln_context_destroy(c);
    }
    atomic_store(&f.stop, true);
    pthread_join(f.thread, NULL);
    stream_finish(&f.st);
    if (f.tp)
        tp_destroy(f.tp);
    close(f.listen_fd);
    unlink(s.path);
    rmdir(s.dir);
}

/* A control page whose epoch changes is not the server the client spoke
 * to: its next call fails naming the epoch, and the server is unharmed. */
TEST(an_epoch_that_changes_is_a_replaced_server)
{
    struct server s;
    REQUIRE(mock_start(&s));
    kiln_context c;
    struct mapped m;
    REQUIRE(client_mapped(&s, &c, &m));
    atomic_fetch_add(&m.ctl->epoch, 1);
    kiln_buffer b;
    CHECK_RESULT(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b), KILN_ERR_DEVICE_LOST);
    CHECK_MSG("epoch");
    unmap(&m);
    kiln_context_destroy(c);
    CHECK(honest_round(&s));
    server_finish(&s);
}

/* A forked child using its parent's remote context gets a clear error;
 * the parent's context goes on. */
TEST(a_forked_child_cannot_use_its_parents_remote_context)
{
    struct server s;
    REQUIRE(mock_start(&s));
    kiln_context c;
    REQUIRE_OK(client(&s, &c));
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        kiln_buffer b;
        kiln_result r = kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b);
        bool said = strstr(kiln_last_error(), "forked child") != NULL;
        kiln_context_destroy(c);   /* the child's copies closed; the parent's connection stands */
        _exit(r == KILN_ERR_INVALID && said ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    kiln_buffer b;
    CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b));
    uint32_t v[64] = {1, 2, 3}, got[64];
    CHECK_OK(kiln_buffer_upload(c, b, 0, v, sizeof v));
    CHECK_OK(kiln_buffer_readback(c, b, 0, got, sizeof got));
    CHECK(!memcmp(v, got, sizeof v));
    kiln_context_destroy(c);
    server_finish(&s);
}

/* An upload through the data segment to a buffer in device memory (the
 * server's device forced to staging) is one device copy straight from the
 * client's segment, which the server imported once, and a readback one
 * device copy back into it: the bytes land right, again after the segment
 * grows, and the server's counters say how many bytes went so (where the device imports host memory; elsewhere the
 * bytes still land right, copied on the host). */
TEST(uploads_and_readbacks_through_the_segment_are_one_device_copy_where_the_device_imports_it)
{
    struct server s;
    REQUIRE(folder(&s));
    char stats[96];
    snprintf(stats, sizeof stats, "%s/server.jsonl", s.dir);
    setenv("KILN_PIPE_STATS_FILE", stats, 1);
    kiln_context_desc host = {.force_staging = 1, .validation = 1};
    REQUIRE_OK(server_start(&s, &(kiln_server_desc){.context = &host}));
    unsetenv("KILN_PIPE_STATS_FILE");
    kiln_context c;
    REQUIRE_OK(client(&s, &c));
    uint64_t total = 0;
    for (uint32_t mib = 3; mib <= 5; mib += 2) {   /* the second grows the segment */
        size_t n = (size_t)mib << 20;
        uint8_t *v = malloc(n), *got = malloc(n);
        REQUIRE(v && got);
        for (size_t i = 0; i < n; i++)
            v[i] = (uint8_t)(i * 131 + mib);
        kiln_buffer b;
        CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = n + 4096}, &b));
        CHECK_OK(kiln_buffer_upload(c, b, 4096, v, n));
        CHECK_OK(kiln_buffer_readback(c, b, 4096, got, n));
        CHECK(!memcmp(v, got, n));
        total += 2 * n;   /* in, and back out */
        free(v);
        free(got);
    }
    kiln_context_stats st;
    CHECK_OK(kiln_context_stats_get(c, &st));
    CHECK_EQ(st.validation_errors, 0);
    kiln_context_destroy(c);
    server_stop(&s);
    FILE *f = fopen(stats, "r");
    char line[4096] = "";
    CHECK(f && fgets(line, sizeof line, f));
    if (f)
        fclose(f);
    const char *at = strstr(line, "\"imported_bytes\":");
    CHECK(at != NULL);
    unsigned long long imported = at ? strtoull(at + 17, NULL, 10) : 0;
    fprintf(stderr, "  %llu of %llu bytes copied on the device to and from the imported segment\n", imported,
            (unsigned long long)total);
    CHECK(imported == 0 || imported == total);
    unlink(stats);
    unlink(s.path);
    rmdir(s.dir);
}

/* ---- run-ahead ------------------------------------------------------------------------------- */

static const char add_src[] = "#version 450\nlayout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer B { uint v[]; };\n"
                              "void main() { uint i = gl_GlobalInvocationID.x; v[i] = kiln_param(0) + i; }\n";
static const char other_src[] = "#version 450\nlayout(local_size_x = 64) in;\n"
                                "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                                "layout(std430, binding = 1) buffer B { uint v[]; };\n"
                                "void main() { uint i = gl_GlobalInvocationID.x; v[i] = a[i]; }\n";

struct ahead {
    kiln_context c;
    struct mapped m;
    kiln_program p, other;
    kiln_buffer b;
    kiln_scheme sc;
    kiln_node n;
};

static bool ahead_make(const struct server *s, struct ahead *a)
{
    kiln_program_interface iface;
    return client_mapped(s, &a->c, &a->m) &&
           kiln_program_create(a->c, &(kiln_program_desc){.source = add_src, .name = "add"}, &a->p) == KILN_OK &&
           kiln_program_create(a->c, &(kiln_program_desc){.source = other_src, .name = "other"}, &a->other) ==
               KILN_OK &&
           kiln_program_wait(a->c, a->p) == KILN_OK && kiln_program_wait(a->c, a->other) == KILN_OK &&
           kiln_program_interface_get(a->c, a->other, &iface) == KILN_OK &&
           kiln_buffer_create(a->c, &(kiln_buffer_desc){.size = 256 * 4}, &a->b) == KILN_OK &&
           kiln_scheme_create(a->c, NULL, &a->sc) == KILN_OK &&
           kiln_scheme_add_node(a->c, a->sc, &(kiln_node_desc){.program = a->p, .groups = {4, 1, 1},
                                                              .bindings = (kiln_binding[]){{.binding = 0, .buffer = a->b}},
                                                              .binding_count = 1}, &a->n) == KILN_OK;
}

static void ahead_end(struct ahead *a)
{
    unmap(&a->m);
    kiln_context_destroy(a->c);
}

/* set_param on a node whose program is ready runs ahead: 1000 calls post
 * 1000 records and get no answer, and the frame that follows computes
 * with the last word; a slot past the program's words is refused at once
 * by the client, and a removed node's handle at once, by the client too. */
TEST(set_param_runs_ahead_and_its_own_errors_come_at_once)
{
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct ahead a;
    REQUIRE(ahead_make(&s, &a));
    struct tp_control *ctl = a.m.ctl;
    uint64_t sent = atomic_load(&ctl->cmd.submitted_seq), answered = atomic_load(&ctl->stage.submitted_seq);
    for (uint32_t i = 1; i <= 1000; i++)
        CHECK_OK(kiln_node_set_param(a.c, a.n, 0, i));
    CHECK_EQ(atomic_load(&ctl->cmd.submitted_seq), sent + 1000);
    CHECK_EQ(atomic_load(&ctl->stage.submitted_seq), answered);   /* not one answer */
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    uint32_t got[256];
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[0], 1000);
    CHECK_EQ(got[255], 1255);
    CHECK_RESULT(kiln_node_set_param(a.c, a.n, KILN_MAX_PARAM_WORDS, 1), KILN_ERR_INVALID);
    CHECK_MSG("param slot");
    kiln_node gone;
    CHECK_OK(kiln_scheme_add_node(a.c, a.sc, &(kiln_node_desc){.program = a.p, .groups = {4, 1, 1},
                                                              .bindings = (kiln_binding[]){{.binding = 0, .buffer = a.b}},
                                                              .binding_count = 1}, &gone));
    CHECK_OK(kiln_node_remove(a.c, gone));
    CHECK_RESULT(kiln_node_set_param(a.c, gone, 0, 1), KILN_ERR_HANDLE);
    CHECK_MSG("stale");
    ahead_end(&a);
    server_finish(&s);
}

/* An error only the server can find (a program swap it refuses: the new
 * program binds otherwise) comes at the next synchronization point,
 * naming the call that failed, once; the call itself returned at once.
 * Under KILN_SYNC=1 it comes at its call. */
TEST(a_run_ahead_error_comes_at_the_next_sync_naming_its_call)
{
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct ahead a;
    REQUIRE(ahead_make(&s, &a));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_node_set_program(a.c, a.n, a.other));   /* run ahead: refused on the server */
    CHECK_RESULT(kiln_ticket_wait(a.c, t, UINT64_MAX), KILN_ERR_LAYOUT);
    CHECK_MSG("node_set_program");
    CHECK_MSG("run ahead");
    CHECK_MSG("does not bind like");
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));   /* said once */
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 5));     /* the node kept its program */
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    uint32_t got[256];
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[3], 8);
    ahead_end(&a);

    setenv("KILN_SYNC", "1", 1);
    REQUIRE(ahead_make(&s, &a));
    CHECK_RESULT(kiln_node_set_program(a.c, a.n, a.other), KILN_ERR_LAYOUT);
    CHECK_MSG("does not bind like");
    ahead_end(&a);
    unsetenv("KILN_SYNC");
    server_finish(&s);
}

/* A param word set after a swap that ran ahead is a word for the program
 * swapped to: when the server refused the swap, it refuses the word too
 * (both reported at the next synchronization point) rather than set it
 * on the words of the program the node kept, whether or not the swap's
 * refusal was already back when the word was posted. Once the caller has
 * been told, the node's words are its kept program's again. */
TEST(a_word_for_a_refused_swap_is_not_set_on_the_kept_programs_words)
{
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct ahead a;
    REQUIRE(ahead_make(&s, &a));
    struct tp_control *ctl = a.m.ctl;
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 5));
    for (int round = 0; round < 2; round++) {
        CHECK_OK(kiln_node_set_program(a.c, a.n, a.other));   /* run ahead: refused on the server */
        if (round == 1) {   /* the refusal is back before the word is posted */
            uint64_t sent = atomic_load(&ctl->cmd.submitted_seq), t0 = time_now_ns();
            while (atomic_load(&ctl->cmd.applied_seq) < sent && time_now_ns() - t0 < 10ull * 1000 * 1000 * 1000)
                sched_yield();
        }
        CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 9));   /* run ahead, for "other"'s words */
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
        CHECK_RESULT(kiln_ticket_wait(a.c, t, UINT64_MAX), KILN_ERR_LAYOUT);
        CHECK_MSG("node_set_program");
        CHECK_MSG("and 1 more");
        uint32_t got[256];
        CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
        CHECK_EQ(got[3], 8);   /* 5 + 3: the word for "other" was not set */
        uint32_t words[8], count = 0;
        CHECK_OK(kiln_node_get_params(a.c, a.n, words, 8, &count));
        CHECK_EQ(words[0], 5);
    }
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 9));   /* told: now a word for the kept program */
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    uint32_t got[256];
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[3], 12);
    ahead_end(&a);
    server_finish(&s);
}

/* Inline uploads into a buffer or image the client made run ahead: 200
 * uploads post 200 records and get no answer, the caller's memory is
 * reused at once (each upload's bytes are copied into its record), and
 * what reads the buffer after them sees each in order. An upload past the
 * buffer's end, of the wrong size for an image, or into a buffer not made
 * by this client (or destroyed) is answered, so its error comes at once,
 * in the runtime's words. */
TEST(inline_uploads_run_ahead_and_their_errors_come_at_once)
{
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct ahead a;
    REQUIRE(ahead_make(&s, &a));
    struct tp_control *ctl = a.m.ctl;
    kiln_image img;
    REQUIRE_OK(kiln_image_create(a.c, &(kiln_image_desc){.width = 4, .height = 2, .format = KILN_FORMAT_R32UI}, &img));
    uint64_t sent = atomic_load(&ctl->cmd.submitted_seq), answered = atomic_load(&ctl->stage.submitted_seq);
    uint32_t words[256];
    for (uint32_t i = 0; i < 200; i++) {
        for (uint32_t k = 0; k < 256; k++)
            words[k] = i * 1000 + k;   /* the same memory, rewritten after every call */
        CHECK_OK(kiln_buffer_upload(a.c, a.b, (i % 4) * 256, words, 256));
        CHECK_OK(kiln_image_upload(a.c, img, words, 32));
    }
    CHECK_EQ(atomic_load(&ctl->cmd.submitted_seq), sent + 400);
    CHECK_EQ(atomic_load(&ctl->stage.submitted_seq), answered);   /* not one answer */
    uint32_t got[256], texels[8];
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    for (uint32_t q = 0; q < 4; q++)   /* quarter q was last written by upload 196 + q */
        CHECK_EQ(got[q * 64 + 5], (196 + q) * 1000 + 5);
    CHECK_OK(kiln_image_readback(a.c, img, texels, sizeof texels));
    CHECK_EQ(texels[7], 199 * 1000 + 7);

    /* a submit between uploads: the frame reads the upload before it */
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 7));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_buffer_upload(a.c, a.b, 0, words, 4));   /* after the frame's writes */
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[0], 199 * 1000);
    CHECK_EQ(got[1], 8);

    answered = atomic_load(&ctl->stage.submitted_seq);
    CHECK_RESULT(kiln_buffer_upload(a.c, a.b, 1020, words, 8), KILN_ERR_INVALID);
    CHECK_MSG("runs past its 1024 bytes");
    CHECK_RESULT(kiln_image_upload(a.c, img, words, 16), KILN_ERR_INVALID);
    CHECK_MSG("16 bytes given");
    CHECK(atomic_load(&ctl->stage.submitted_seq) > answered);   /* the server's words, answered */
    kiln_buffer gone;
    REQUIRE_OK(kiln_buffer_create(a.c, &(kiln_buffer_desc){.size = 64}, &gone));
    CHECK_OK(kiln_buffer_destroy(a.c, gone));
    CHECK_RESULT(kiln_buffer_upload(a.c, gone, 0, words, 4), KILN_ERR_HANDLE);
    CHECK_OK(kiln_image_destroy(a.c, img));
    CHECK_RESULT(kiln_image_upload(a.c, img, words, 32), KILN_ERR_HANDLE);
    ahead_end(&a);
    server_finish(&s);
}

/* add_node, submit and node_remove run ahead: the client mints the node
 * handles and numbers the tickets, so 100 adds and 100 submits post 200
 * records and get no answer, and the frame computes with every node. A handle or a
 * ticket the client knows is not live is refused at once, sending
 * nothing. A ticket older than the server keeps mapped still waits right. */
TEST(add_node_submit_and_remove_run_ahead_with_handles_and_tickets_the_client_made)
{
    struct server s;
    REQUIRE(folder(&s));
    REQUIRE_OK(server_start(&s, NULL));
    struct ahead a;
    REQUIRE(ahead_make(&s, &a));
    struct tp_control *ctl = a.m.ctl;
    uint64_t sent = atomic_load(&ctl->cmd.submitted_seq), answered = atomic_load(&ctl->stage.submitted_seq);
    kiln_node nodes[100];
    kiln_ticket first = {0}, t = {0};
    for (uint32_t i = 0; i < 100; i++) {
        kiln_ticket before = t;
        CHECK_OK(kiln_scheme_add_node(a.c, a.sc, &(kiln_node_desc){.program = a.p, .groups = {4, 1, 1},
                                                                  .bindings = (kiln_binding[]){{.binding = 0, .buffer = a.b}},
                                                                  .binding_count = 1, .params = &i, .param_count = 1},
                                      &nodes[i]));
        CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
        if (i)
            CHECK_EQ(t.value, before.value + 1);   /* numbered by the client, one per submit */
        else
            first = t;
    }
    CHECK_EQ(atomic_load(&ctl->cmd.submitted_seq), sent + 200);
    CHECK_EQ(atomic_load(&ctl->stage.submitted_seq), answered);   /* not one answer */
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    uint32_t got[256];
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[7], 99 + 7);   /* the last node added wrote last */
    for (uint32_t i = 0; i < 100; i++)
        CHECK_OK(kiln_node_remove(a.c, nodes[i]));
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 40));
    for (int i = 0; i < 1500; i++)   /* past the tickets the server keeps mapped */
        CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_ticket_wait(a.c, first, UINT64_MAX));
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[7], 47);   /* the removed nodes' writes are gone */

    /* Known dead: refused by the client, nothing sent. */
    kiln_scheme gone;
    REQUIRE_OK(kiln_scheme_create(a.c, NULL, &gone));
    CHECK_OK(kiln_scheme_destroy(a.c, gone));
    sent = atomic_load(&ctl->cmd.submitted_seq);
    CHECK_RESULT(kiln_node_set_param(a.c, nodes[3], 0, 1), KILN_ERR_HANDLE);
    CHECK_MSG("stale handle");
    CHECK_RESULT(kiln_node_remove(a.c, nodes[3]), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_scheme_submit(a.c, gone, &t), KILN_ERR_HANDLE);
    CHECK_MSG("scheme 0x");
    CHECK_RESULT(kiln_scheme_add_node(a.c, gone, &(kiln_node_desc){.program = a.p, .groups = {1, 1, 1}}, &nodes[0]),
                 KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_node_set_param(a.c, (kiln_node){nodes[5].id + 1}, 0, 1), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_ticket_wait(a.c, (kiln_ticket){t.value + 1}, 0), KILN_ERR_INVALID);
    CHECK_MSG("never issued");
    CHECK_EQ(atomic_load(&ctl->cmd.submitted_seq), sent);

    /* What only the server can find (a binding's buffer destroyed) comes
     * at the next synchronization point, naming the add. */
    kiln_buffer dead;
    REQUIRE_OK(kiln_buffer_create(a.c, &(kiln_buffer_desc){.size = 1024}, &dead));
    REQUIRE_OK(kiln_buffer_destroy(a.c, dead));
    kiln_node bad;
    CHECK_OK(kiln_scheme_add_node(a.c, a.sc, &(kiln_node_desc){.program = a.p, .groups = {4, 1, 1},
                                                              .bindings = (kiln_binding[]){{.binding = 0, .buffer = dead}},
                                                              .binding_count = 1}, &bad));
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_RESULT(kiln_ticket_wait(a.c, t, UINT64_MAX), KILN_ERR_HANDLE);
    CHECK_MSG("scheme_add_node");
    CHECK_MSG("run ahead");
    CHECK_MSG("stale handle");
    CHECK_OK(kiln_ticket_wait(a.c, t, UINT64_MAX));   /* said once; the submit ran without the node */
    CHECK_OK(kiln_node_set_param(a.c, a.n, 0, 9));
    CHECK_OK(kiln_scheme_submit(a.c, a.sc, &t));
    CHECK_OK(kiln_buffer_readback(a.c, a.b, 0, got, sizeof got));
    CHECK_EQ(got[7], 16);
    ahead_end(&a);
    server_finish(&s);
}

/* ---- a hostile client's rings ------------------------------------------------------------------ */

enum scribble { BAD_KIND, HEAD_BACK, HEAD_FAR, SIZE_PAST, FRAME_HUGE, GARBAGE_REQUEST, SCRIBBLES };
static const char *const scribble_names[] = {"a record of a kind no ring has", "the head moved backwards",
                                             "the head two rings ahead", "a record past what was published",
                                             "a frame announced past the frame limit", "a request of garbage"};

/* Writes one record {size, kind, payload} at the command ring's head and
 * publishes it, behind the client's back. */
static void post_raw(struct mapped *m, uint32_t size, uint32_t kind, const void *payload, size_t n, uint64_t advance)
{
    struct tp_control *ctl = m->ctl;
    uint8_t *ring = m->map + TP_CONTROL_SIZE;
    uint64_t head = atomic_load(&ctl->cmd.head), pos = head & (ctl->cmd_ring_size - 1);
    uint32_t hdr[2] = {size, kind};
    memcpy(ring + pos, hdr, sizeof hdr);
    memcpy(ring + pos + 8, payload, n);
    atomic_store(&ctl->cmd.head, head + advance);
    atomic_store(&ctl->cmd.consumer_parked, 0);
}

static void scribble(struct mapped *m, enum scribble how)
{
    struct tp_control *ctl = m->ctl;
    uint64_t head = atomic_load(&ctl->cmd.head);
    uint8_t junk[64];
    for (unsigned i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t)(i * 37 + 11);
    switch (how) {
    case BAD_KIND: post_raw(m, 16, 99, junk, 8, 16); break;
    case HEAD_BACK: atomic_store(&ctl->cmd.head, head - 8); break;
    case HEAD_FAR: atomic_store(&ctl->cmd.head, head + 2 * ctl->cmd_ring_size); break;
    case SIZE_PAST: post_raw(m, 4096, STREAM_MSG, junk, 8, 16); break;
    case FRAME_HUGE: {
        uint64_t huge = 1ull << 40;
        post_raw(m, 16, STREAM_FRAME, &huge, 8, 16);
        break;
    }
    case GARBAGE_REQUEST: post_raw(m, 8 + 64, STREAM_MSG, junk, 64, 72); break;
    case SCRIBBLES: break;
    }
}

static uint32_t live_clients(struct server *s)
{
    uint32_t live = 0;
    srv_counts(srv_of(s->ks), &live, NULL, NULL);
    return live;
}

/* Each scribble on a client's command ring ends that client's connection
 * (its objects freed) and no other: an honest client that holds a buffer
 * throughout keeps it and its bytes, and a new one is served. */
TEST(a_client_scribbling_on_its_ring_loses_its_connection_alone)
{
    struct server s;
    REQUIRE(mock_start(&s));
    kiln_context honest;
    REQUIRE_OK(client(&s, &honest));
    kiln_buffer hb;
    uint32_t v[256], got[256];
    for (uint32_t i = 0; i < 256; i++)
        v[i] = i ^ 0x5a5a5a5au;
    REQUIRE_OK(kiln_buffer_create(honest, &(kiln_buffer_desc){.size = sizeof v}, &hb));
    REQUIRE_OK(kiln_buffer_upload(honest, hb, 0, v, sizeof v));
    uint64_t base_objects = 0;
    srv_counts(srv_of(s.ks), NULL, NULL, &base_objects);
    for (int how = 0; how < SCRIBBLES; how++) {
        kiln_context c;
        struct mapped m;
        REQUIRE(client_mapped(&s, &c, &m));
        kiln_buffer b;
        CHECK_OK(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 1 << 16}, &b));
        CHECK_EQ(live_clients(&s), 2);
        scribble(&m, (enum scribble)how);
        if (how == GARBAGE_REQUEST) {
            /* The server refuses a call it does not know and goes on, as
             * on the socket; the client's own cursors no longer match the
             * ring's, so its next call finds the stream broken (or the
             * server does, and closes it) and the client goes. */
            uint64_t end = atomic_load(&m.ctl->cmd.head), until = now_ms() + 10000;
            while (atomic_load(&m.ctl->cmd.applied) != end && now_ms() < until)
                nap_ms(5);
            /* KILN_ERR_PROTOCOL when the client reads the stray answer,
             * KILN_ERR_DEVICE_LOST when the server closed first. */
            kiln_result r = kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b);
            CHECK(r == KILN_ERR_PROTOCOL || r == KILN_ERR_DEVICE_LOST);
            if (r == KILN_ERR_PROTOCOL)
                CHECK_MSG("protocol mismatch");
            unmap(&m);
            kiln_context_destroy(c);
        }
        uint64_t until = now_ms() + 10000;
        while (live_clients(&s) != 1 && now_ms() < until)
            nap_ms(10);
        bool closed = live_clients(&s) == 1;
        CHECK(closed);
        if (!closed)
            fprintf(stderr, "  after %s the connection stayed\n", scribble_names[how]);
        uint64_t objects = 0;
        srv_counts(srv_of(s.ks), NULL, NULL, &objects);
        CHECK_EQ(objects, base_objects);
        if (how != GARBAGE_REQUEST) {
            CHECK_RESULT(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b), KILN_ERR_DEVICE_LOST);
            unmap(&m);
            kiln_context_destroy(c);
        }
        CHECK_OK(kiln_buffer_readback(honest, hb, 0, got, sizeof got));
        CHECK(!memcmp(v, got, sizeof v));
    }
    CHECK(honest_round(&s));
    kiln_context_destroy(honest);
    server_finish(&s);
}

/* ---- warnings a client can cause ------------------------------------------------------------- */

static atomic_uint warned;   /* lines at warn or error since the sink went in */
static char first_warned[512];

static void count_warnings(kiln_log_level level, const char *message, void *user)
{
    (void)user;
    if (level == KILN_LOG_ERROR || level == KILN_LOG_WARN) {
        if (atomic_fetch_add(&warned, 1) == 0)
            snprintf(first_warned, sizeof first_warned, "%s", message);
        if (getenv("KILN_TEST_VERBOSE"))
            fprintf(stderr, "  warned: %s\n", message);
    }
}

/* The vanishing client: a context and a buffer at remote, then gone
 * without destroying them (its socket closes with the process). */
static int vanish_child(const char *remote)
{
    kiln_context c;
    kiln_buffer b;
    if (kiln_context_create(&(kiln_context_desc){.remote = remote}, &c) != KILN_OK ||
        kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b) != KILN_OK)
        return 1;
    _exit(0);
}

/* Clients that exit without destroying their context and clients that
 * break their rings, a hundred of each in a few seconds, cost the server's
 * log a few lines, not one each: every warning a client can cause goes
 * through the rate limiter (the transport only raises). */
TEST(a_flood_of_dying_and_scribbling_clients_is_a_few_log_lines)
{
    struct server s;
    REQUIRE(mock_start(&s));
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    REQUIRE(len > 0);
    self[len] = 0;
    atomic_store(&warned, 0);
    kiln_set_log_callback(count_warnings, NULL);
    unsigned vanished = 0;
    for (int i = 0; i < 100; i++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            execl(self, self, "--vanish", s.remote, (char *)NULL);
            _exit(6);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        vanished += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    CHECK_EQ(vanished, 100);
    for (int i = 0; i < 100; i++) {
        kiln_context c;
        struct mapped m;
        REQUIRE(client_mapped(&s, &c, &m));
        scribble(&m, i % 2 ? HEAD_FAR : BAD_KIND);
        kiln_buffer b;
        uint64_t until = now_ms() + 10000;
        while (live_clients(&s) > 0 && now_ms() < until)
            nap_ms(2);
        CHECK_RESULT(kiln_buffer_create(c, &(kiln_buffer_desc){.size = 256}, &b), KILN_ERR_DEVICE_LOST);
        unmap(&m);
        kiln_context_destroy(c);
    }
    uint64_t until = now_ms() + 10000;
    while (live_clients(&s) > 0 && now_ms() < until)
        nap_ms(10);
    CHECK_EQ(live_clients(&s), 0);
    kiln_set_log_callback(NULL, NULL);
    unsigned n = atomic_load(&warned);
    CHECK(n <= 6);
    if (n > 6)
        fprintf(stderr, "  %u warnings for 200 clients; the first: %s\n", n, first_warned);
    CHECK(honest_round(&s));
    server_finish(&s);
}

/* The child server of the stop test: a mock device at path. */
static int serve_child(const char *path)
{
    kiln_context_desc host = {.backend = KILN_BACKEND_MOCK};
    kiln_server *ks;
    if (kiln_server_create(&(kiln_server_desc){.context = &host, .socket_path = path}, &ks) != KILN_OK) {
        fprintf(stderr, "serve: %s\n", kiln_last_error());
        return 1;
    }
    kiln_result r = kiln_server_run(ks);
    kiln_server_destroy(ks);
    return r == KILN_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--serve"))
        return serve_child(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--vanish"))
        return vanish_child(argv[2]);
    if (getenv("KILN_REMOTE"))
        unsetenv("KILN_REMOTE");
    signal(SIGPIPE, SIG_IGN);
    RUN(a_clients_calls_go_on_its_command_stream);
    RUN(with_small_rings_big_messages_go_as_frames_and_arrive_whole);
    RUN(a_stopped_server_is_noticed_within_the_peer_timeout);
    RUN(an_epoch_that_changes_is_a_replaced_server);
    RUN(a_server_that_beats_but_reads_nothing_is_taken_as_hung);
    RUN(a_forked_child_cannot_use_its_parents_remote_context);
    RUN(uploads_and_readbacks_through_the_segment_are_one_device_copy_where_the_device_imports_it);
    RUN(set_param_runs_ahead_and_its_own_errors_come_at_once);
    RUN(a_run_ahead_error_comes_at_the_next_sync_naming_its_call);
    RUN(a_word_for_a_refused_swap_is_not_set_on_the_kept_programs_words);
    RUN(add_node_submit_and_remove_run_ahead_with_handles_and_tickets_the_client_made);
    RUN(inline_uploads_run_ahead_and_their_errors_come_at_once);
    RUN(a_client_scribbling_on_its_ring_loses_its_connection_alone);
    RUN(a_flood_of_dying_and_scribbling_clients_is_a_few_log_lines);
    return TEST_SUMMARY();
}
