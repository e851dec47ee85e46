/* SPDX-License-Identifier: MIT */
/*
 * test_transport.c: the transport object, its socket and in-process ends
 * run through the same cases (so what passes in process holds between
 * processes): frames both ways up to the 64 MiB limit, a buffer too small,
 * descriptors with their messages, shutdown with the peer draining what
 * was sent, destroy with messages pending (their descriptors closed),
 * timeouts. Then what only sockets have: bytes that break the framing, a
 * send cut short. And two processes: a child serves a control page and a
 * ring in a memfd it passes over SCM_RIGHTS; the parent reads its records,
 * then sees it die (SIGKILL: the socket) and hang (SIGSTOP: the heartbeat)
 * within the documented bounds.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "transport/transport.h"

#define MS (1000ull * 1000)
#define SEC (1000 * MS)

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

typedef kiln_result (*pair_fn)(struct tp **a, struct tp **b);
static const struct {
    const char *name;
    pair_fn make;
} kinds[] = {{"socket", tp_socket_pair}, {"in-process", tp_inproc_pair}};

struct big_send {
    struct tp *t;
    uint8_t *data;
    size_t len;
    kiln_result r;
};

static void *send_thread(void *arg)
{
    struct big_send *b = arg;
    b->r = tp_send(b->t, b->data, b->len);
    return NULL;
}

TEST(frames_both_ways)
{
    for (size_t k = 0; k < KILN_ARRAY_LEN(kinds); k++) {
        struct tp *a, *b;
        REQUIRE_OK(kinds[k].make(&a, &b));
        CHECK(!strcmp(tp_name(a), kinds[k].name));
        static const size_t sizes[] = {0, 1, 4096, 1 << 20};
        uint8_t *buf = malloc(1 << 20), *out = malloc(1 << 20);
        REQUIRE(buf && out);
        for (size_t i = 0; i < 1 << 20; i++)
            buf[i] = (uint8_t)(i * 7);
        for (size_t i = 0; i < KILN_ARRAY_LEN(sizes); i++) {
            struct big_send s = {a, buf, sizes[i], KILN_OK};
            pthread_t th;
            REQUIRE(!pthread_create(&th, NULL, send_thread, &s));   /* a MiB outgrows a socket's buffer */
            size_t len;
            CHECK_OK(tp_recv(b, out, 1 << 20, &len, 10 * SEC));
            pthread_join(th, NULL);
            CHECK_OK(s.r);
            CHECK_EQ(len, sizes[i]);
            CHECK(!memcmp(out, buf, len));
            CHECK_OK(tp_send(b, buf, sizes[i] / 8));   /* and back */
            CHECK_OK(tp_recv(a, out, 1 << 20, &len, 10 * SEC));
            CHECK_EQ(len, sizes[i] / 8);
        }
        /* Too small a buffer: the size needed, and the frame stays. */
        CHECK_OK(tp_send(a, "twelve bytes", 12));
        size_t len = 0;
        CHECK_RESULT(tp_recv(b, out, 11, &len, SEC), KILN_ERR_LIMIT);
        CHECK_EQ(len, 12);
        CHECK_OK(tp_recv(b, out, 12, &len, SEC));
        CHECK(!memcmp(out, "twelve bytes", 12));
        CHECK_RESULT(tp_recv(b, out, 12, &len, 0), KILN_ERR_TIMEOUT);
        CHECK_RESULT(tp_recv(b, out, 12, &len, 20 * MS), KILN_ERR_TIMEOUT);
        CHECK_RESULT(tp_send(a, buf, (size_t)TP_FRAME_MAX + 1), KILN_ERR_LIMIT);
        free(buf);
        free(out);
        tp_destroy(a);
        tp_destroy(b);
    }
}

TEST(largest_frame)
{
    for (size_t k = 0; k < KILN_ARRAY_LEN(kinds); k++) {
        struct tp *a, *b;
        REQUIRE_OK(kinds[k].make(&a, &b));
        uint8_t *buf = calloc(1, TP_FRAME_MAX), *out = malloc(TP_FRAME_MAX);
        REQUIRE(buf && out);
        buf[TP_FRAME_MAX - 1] = 0xee;
        struct big_send s = {a, buf, TP_FRAME_MAX, KILN_OK};
        pthread_t th;
        REQUIRE(!pthread_create(&th, NULL, send_thread, &s));
        size_t len;
        CHECK_OK(tp_recv(b, out, TP_FRAME_MAX, &len, 60 * SEC));
        pthread_join(th, NULL);
        CHECK_OK(s.r);
        CHECK_EQ(len, TP_FRAME_MAX);
        CHECK_EQ(out[TP_FRAME_MAX - 1], 0xee);
        free(buf);
        free(out);
        tp_destroy(a);
        tp_destroy(b);
    }
}

TEST(descriptors)
{
    for (size_t k = 0; k < KILN_ARRAY_LEN(kinds); k++) {
        struct tp *a, *b;
        REQUIRE_OK(kinds[k].make(&a, &b));
        struct tp_segment seg, got;
        REQUIRE_OK(tp_segment_create(&seg, "kiln-test", 4096, 0));
        strcpy((char *)seg.map, kinds[k].name);
        int before = open_fds();
        CHECK_OK(tp_send_fds(a, "seg", 3, &seg.fd, 1));
        uint8_t msg[TP_SIDEBAND_PAYLOAD];
        int fds[TP_FDS_MAX];
        size_t len;
        uint32_t n;
        CHECK_RESULT(tp_recv_fds(b, msg, 100, &len, fds, TP_FDS_MAX, &n, SEC), KILN_ERR_LIMIT);
        CHECK_OK(tp_recv_fds(b, msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC));
        CHECK_EQ(len, 3);
        REQUIRE(n == 1);
        CHECK(fds[0] != seg.fd);   /* a descriptor of its own */
        CHECK_OK(tp_segment_adopt(&got, fds[0], 4096, 0));
        CHECK(!strcmp((char *)got.map, kinds[k].name));
        tp_segment_finish(&got);
        CHECK_EQ(open_fds(), before);
        CHECK_RESULT(tp_recv_fds(b, msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, 10 * MS), KILN_ERR_TIMEOUT);
        int many[TP_FDS_MAX + 1] = {0};
        CHECK_RESULT(tp_send_fds(a, "", 0, many, TP_FDS_MAX + 1), KILN_ERR_LIMIT);
        CHECK_RESULT(tp_send_fds(a, msg, TP_SIDEBAND_PAYLOAD + 1, NULL, 0), KILN_ERR_LIMIT);
        /* Messages left unread: destroying the end closes their descriptors. */
        CHECK_OK(tp_send_fds(a, "x", 1, &seg.fd, 1));
        CHECK_OK(tp_send_fds(a, "y", 1, &seg.fd, 1));
        tp_destroy(b);
        CHECK_EQ(open_fds(), before - (k == 0 ? 2 : 0));   /* a socket end is two descriptors */
        tp_destroy(a);
        tp_segment_finish(&seg);
    }
}

TEST(shutdown_then_drain)
{
    for (size_t k = 0; k < KILN_ARRAY_LEN(kinds); k++) {
        struct tp *a, *b;
        REQUIRE_OK(kinds[k].make(&a, &b));
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK_OK(tp_send(a, "one", 3));
        CHECK_OK(tp_send_fds(a, "fd", 2, &fd, 1));
        CHECK_OK(tp_send(a, "goodbye: done", 13));
        tp_shutdown(a);
        CHECK_RESULT(tp_send(a, "late", 4), KILN_ERR_IO);
        CHECK_MSG("shut down");
        CHECK_RESULT(tp_send_fds(a, "late", 4, NULL, 0), KILN_ERR_IO);
        uint8_t out[TP_SIDEBAND_PAYLOAD];
        size_t len;
        CHECK_OK(tp_recv(b, out, sizeof out, &len, SEC));
        CHECK_EQ(len, 3);
        CHECK_OK(tp_recv(b, out, sizeof out, &len, SEC));
        CHECK(len == 13 && !memcmp(out, "goodbye: done", 13));   /* the last word comes through */
        CHECK_RESULT(tp_recv(b, out, sizeof out, &len, SEC), KILN_ERR_IO);
        CHECK_MSG("peer closed");
        int fds[TP_FDS_MAX];
        uint32_t n;
        CHECK_OK(tp_recv_fds(b, out, sizeof out, &len, fds, TP_FDS_MAX, &n, SEC));
        CHECK_EQ(n, 1);
        close(fds[0]);
        CHECK_RESULT(tp_recv_fds(b, out, sizeof out, &len, fds, TP_FDS_MAX, &n, SEC), KILN_ERR_IO);
        /* The other direction still works. */
        CHECK_OK(tp_send(b, "still here", 10));
        CHECK_OK(tp_recv(a, out, sizeof out, &len, SEC));
        CHECK_EQ(len, 10);
        /* And a destroyed end's last frames are still read. */
        CHECK_OK(tp_send(b, "last", 4));
        tp_destroy(b);
        CHECK_OK(tp_recv(a, out, sizeof out, &len, SEC));
        CHECK_EQ(len, 4);
        CHECK_RESULT(tp_recv(a, out, sizeof out, &len, SEC), KILN_ERR_IO);
        CHECK_RESULT(tp_send(a == a ? a : b, "x", 1), KILN_ERR_IO);   /* shut down */
        tp_destroy(a);
        close(fd);
    }
}

TEST(socket_broken_framing)
{
    int st[2], dg[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st) == 0);
    REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg) == 0);
    struct tp *t;
    REQUIRE_OK(tp_socket_create(st[0], dg[0], &t));
    uint8_t hdr[8];
    REQUIRE_OK(tp_frame_header(hdr, 2));
    REQUIRE(write(st[1], hdr, 8) == 8 && write(st[1], "ok", 2) == 2);
    REQUIRE(write(st[1], "GET / HTTP/1.1\r\n", 16) == 16);
    uint8_t out[64];
    size_t len;
    CHECK_OK(tp_recv(t, out, sizeof out, &len, SEC));
    CHECK_EQ(len, 2);
    CHECK_RESULT(tp_recv(t, out, sizeof out, &len, SEC), KILN_ERR_IO);
    CHECK_MSG("protocol mismatch");
    CHECK_MSG("stream offset 10");
    REQUIRE_OK(tp_frame_header(hdr, 2));
    REQUIRE(write(st[1], hdr, 8) == 8);
    CHECK_RESULT(tp_recv(t, out, sizeof out, &len, SEC), KILN_ERR_IO);   /* for good */
    CHECK_MSG("protocol mismatch");
    tp_destroy(t);
    close(st[1]);
    close(dg[1]);
}

TEST(socket_send_cut_short)
{
    setenv("KILN_IPC_SEND_TIMEOUT_MS", "50", 1);
    struct tp *a, *b;
    kiln_result r = tp_socket_pair(&a, &b);
    unsetenv("KILN_IPC_SEND_TIMEOUT_MS");
    REQUIRE_OK(r);
    size_t n = 8 << 20;   /* past any socket buffer, and nobody reads */
    uint8_t *buf = calloc(1, n);
    REQUIRE(buf);
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(tp_send(a, buf, n), KILN_ERR_TIMEOUT);
    CHECK(time_now_ns() - t0 < 5 * SEC);
    CHECK_RESULT(tp_send(a, "x", 1), KILN_ERR_IO);
    CHECK_MSG("cut short");
    free(buf);
    tp_destroy(a);
    tp_destroy(b);
}

/* The child's side of the two-process test: a control page and a ring in
 * a memfd, passed to the parent; records 0..99; then it waits to be killed
 * or stopped, its heartbeat running. */
static void child(struct tp *t)
{
    struct tp_segment seg;
    struct tp_layout l = tp_layout_of(8192, 4096);
    if (tp_segment_create(&seg, "kiln-test-ring", l.total, 0) != KILN_OK)
        _exit(2);
    struct tp_control *c = (struct tp_control *)seg.map;
    struct tp_ring r;
    struct tp_heartbeat hb;
    if (tp_control_init(c, 8192, 4096) != KILN_OK || tp_ring_init(&r, &c->cmd, seg.map + l.cmd_offset, 8192, 4) ||
        tp_heartbeat_start(&hb, &c->client_heartbeat, 5 * MS) != KILN_OK)
        _exit(3);
    uint64_t size = seg.size;
    if (tp_send_fds(t, &size, sizeof size, &seg.fd, 1) != KILN_OK)
        _exit(4);
    for (uint32_t i = 0; i < 100; i++)
        if (tp_ring_write(&r, 1 + i % 4, &i, sizeof i, 10 * SEC) != KILN_OK)
            _exit(5);
    tp_ring_publish(&r);
    for (;;)
        pause();
}

/* Forks the child; *t is the parent's end. */
static pid_t spawn(struct tp **t)
{
    struct tp *a, *b;
    if (tp_socket_pair(&a, &b) != KILN_OK)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        tp_destroy(a);
        child(b);
    }
    tp_destroy(b);
    *t = a;
    return pid;
}

/* Receives the child's segment and reads its 100 records. */
static bool attach(struct tp *t, struct tp_segment *seg, struct tp_ring *r, struct tp_peer *peer, uint64_t peer_ns)
{
    uint64_t size = 0;
    size_t len;
    int fds[TP_FDS_MAX];
    uint32_t n;
    uint8_t msg[TP_SIDEBAND_PAYLOAD];
    if (tp_recv_fds(t, msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, 10 * SEC) != KILN_OK || len != 8 || n != 1)
        return false;
    memcpy(&size, msg, 8);
    struct tp_layout l;
    if (tp_segment_adopt(seg, fds[0], size, 0) != KILN_OK ||
        tp_control_layout((struct tp_control *)seg->map, seg->size, &l) != KILN_OK)
        return false;
    struct tp_control *c = (struct tp_control *)seg->map;
    if (tp_ring_init(r, &c->cmd, seg->map + l.cmd_offset, l.cmd_size, 4) != KILN_OK)
        return false;
    tp_peer_init(peer, &c->client_heartbeat, tp_peer_fd(t), peer_ns);
    r->peer = peer;
    for (uint32_t i = 0; i < 100; i++) {
        uint32_t v;
        struct tp_record rec;
        if (tp_ring_wait(r, 10 * SEC) != KILN_OK || tp_ring_read(r, &v, sizeof v, &rec) != KILN_OK || v != i ||
            rec.kind != 1 + i % 4 || tp_ring_retire(r, &rec) != KILN_OK)
            return false;
    }
    return true;
}

TEST(two_processes_and_a_death)
{
    struct tp *t;
    pid_t pid = spawn(&t);
    REQUIRE(pid > 0);
    struct tp_segment seg;
    struct tp_ring r;
    struct tp_peer peer;
    CHECK(attach(t, &seg, &r, &peer, 10 * SEC));
    /* Killed: its socket closes, and a wait on its ring ends at once with
     * the reason (the heartbeat's 10 s would be far later). */
    kill(pid, SIGKILL);
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(tp_ring_wait(&r, 60 * SEC), KILN_ERR_IO);
    CHECK_MSG("socket closed");
    CHECK(time_now_ns() - t0 < 5 * SEC);
    uint8_t buf[16];
    size_t len;
    CHECK_RESULT(tp_recv(t, buf, sizeof buf, &len, 10 * SEC), KILN_ERR_IO);
    CHECK_MSG("peer closed");
    waitpid(pid, NULL, 0);
    tp_segment_finish(&seg);
    tp_destroy(t);
}

TEST(two_processes_and_a_hang)
{
    struct tp *t;
    pid_t pid = spawn(&t);
    REQUIRE(pid > 0);
    struct tp_segment seg;
    struct tp_ring r;
    struct tp_peer peer;
    CHECK(attach(t, &seg, &r, &peer, 300 * MS));
    /* Stopped: its socket stays open, its heartbeat stands still; the wait
     * ends after the peer timeout (300 ms) and one park slice (20 ms), not
     * at its own 60 s. */
    kill(pid, SIGSTOP);
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(tp_ring_wait(&r, 60 * SEC), KILN_ERR_IO);
    CHECK_MSG("heartbeat stayed");
    uint64_t took = time_now_ns() - t0;
    CHECK(took >= 250 * MS && took < 10 * SEC);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    tp_segment_finish(&seg);
    tp_destroy(t);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(frames_both_ways);
    RUN(largest_frame);
    RUN(descriptors);
    RUN(shutdown_then_drain);
    RUN(socket_broken_framing);
    RUN(socket_send_cut_short);
    RUN(two_processes_and_a_death);
    RUN(two_processes_and_a_hang);
    return TEST_SUMMARY();
}
