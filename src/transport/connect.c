/* SPDX-License-Identifier: MIT */
/*
 * connect.c: a transport between two processes that meet at a socket path.
 * The client connects a SOCK_STREAM socket to the path and, as its first
 * bytes, sends the hello [u32 "KLNH"][u32 TP_HELLO_VERSION] with one end of
 * a new SOCK_DGRAM socketpair attached (SCM_RIGHTS): that pair carries the
 * descriptors from then on. The server reads exactly those 8 bytes with
 * their descriptor, checks both, and answers [u32 "KLNA"][u32 its
 * version][i32 0 or the kiln_result of a refusal][u32 n] and n bytes of
 * text saying why (at most TP_REFUSAL_MAX); then the two ends are a
 * tp_socket pair. The answer's layout is the same in every version, so a
 * client and a server of different versions still tell each other which
 * they speak; a refused client reads the server's reason, never a bare
 * hang-up.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "transport.h"

#define HELLO_MAGIC 0x484e4c4bu    /* "KLNH" */
#define ANSWER_MAGIC 0x414e4c4bu   /* "KLNA" */
#define ANSWER_HEAD 16

static kiln_result sun_of(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (!n || n >= sizeof sa->sun_path)
        return KILN_RAISE(KILN_ERR_INVALID, "socket path '%s': %s", path,
                          n ? "longer than a unix socket path may be (107 bytes)" : "empty");
    memcpy(sa->sun_path, path, n);
    return KILN_OK;
}

/* Waits for fd's events until deadline (time_now_ns). */
static kiln_result wait_fd(int fd, short events, uint64_t deadline, const char *what)
{
    for (;;) {
        uint64_t now = time_now_ns();
        if (now >= deadline)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "transport: %s timed out", what);
        uint64_t ms = (deadline - now + 999999) / 1000000;
        struct pollfd p = {fd, events, 0};
        int n = poll(&p, 1, ms > 1000 ? 1000 : (int)ms);
        if (n > 0)
            return KILN_OK;
        if (n < 0 && errno != EINTR)
            return KILN_RAISE(KILN_ERR_IO, "transport: %s: poll: %s", what, strerror(errno));
    }
}

kiln_result tp_listen(const char *path, mode_t mode, int *out)
{
    *out = -1;
    struct sockaddr_un sa;
    KILN_TRY(sun_of(path, &sa));
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return KILN_RAISE(KILN_ERR_IO, "socket path '%s' is taken by something that is not a socket; "
                              "not touching it", path);
        /* A socket: live if someone accepts on it, else left by a server
         * that died, and replaced. */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof sa) == 0) {
            close(probe);
            return KILN_RAISE(KILN_ERR_BUSY, "socket path '%s': a server is already listening there", path);
        }
        if (probe >= 0)
            close(probe);
        if (unlink(path) && errno != ENOENT)
            return KILN_RAISE(KILN_ERR_IO, "socket path '%s': removing the stale socket: %s", path, strerror(errno));
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return KILN_RAISE(KILN_ERR_IO, "socket: %s", strerror(errno));
    mode_t old = umask(0177);   /* the socket is born 0600 */
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc || chmod(path, mode) || listen(fd, 64)) {
        kiln_result r = KILN_RAISE(KILN_ERR_IO, "socket path '%s': %s", path, strerror(errno));
        close(fd);
        return r;
    }
    *out = fd;
    return KILN_OK;
}

/* Reads n bytes of the stream by deadline; false on its end or an error
 * (errno set; 0 at the end). */
static bool read_full(int fd, void *dst, size_t n, uint64_t deadline, kiln_result *timeout)
{
    uint8_t *p = dst;
    while (n) {
        if ((*timeout = wait_fd(fd, POLLIN, deadline, "waiting for the server's answer")) < 0)
            return false;
        ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = 0;
            return false;
        }
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* The server's answer to the hello: KILN_OK when admitted, else its
 * refusal (its code and its words), a server of another version, or a
 * server that hung up without an answer. */
static kiln_result read_answer(int st, const char *path, uint64_t deadline)
{
    uint32_t head[4] = {0, 0, 0, 0};
    kiln_result timeout = KILN_OK;
    if (!read_full(st, head, sizeof head, deadline, &timeout)) {
        if (timeout < 0)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "kiln server at '%s': no answer to the hello (the server may be "
                              "stuck or overloaded)", path);
        if (errno)
            return KILN_RAISE(KILN_ERR_IO, "kiln server at '%s': reading its answer to the hello: %s", path,
                              strerror(errno));
        return KILN_RAISE(KILN_ERR_IO, "kiln server at '%s' closed the connection without answering the hello (a "
                          "server older than transport version %u, which sends no answer, or one that ended)",
                          path, TP_HELLO_VERSION);
    }
    if (head[0] != ANSWER_MAGIC)
        return KILN_RAISE(KILN_ERR_IO, "kiln server at '%s': protocol mismatch (its answer to the hello starts "
                          "0x%08x; a kiln server answers \"KLNA\")", path, head[0]);
    char why[TP_REFUSAL_MAX + 1] = "";
    size_t n = head[3] <= TP_REFUSAL_MAX ? head[3] : TP_REFUSAL_MAX;
    if (n && !read_full(st, why, n, deadline, &timeout))
        why[0] = 0;
    else
        why[n] = 0;
    for (size_t i = 0; why[i]; i++)   /* a peer's words are printed: nothing that steers a terminal */
        if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
            why[i] = '?';
    int32_t code = (int32_t)head[2];
    if (head[1] != TP_HELLO_VERSION)
        return KILN_RAISE(KILN_ERR_IO, "kiln server at '%s' speaks transport version %u; this client speaks %u%s%s",
                          path, head[1], TP_HELLO_VERSION, why[0] ? ": " : "", why);
    if (code == 0)
        return KILN_OK;
    kiln_result r = code < 0 && code > -1000 ? (kiln_result)code : KILN_ERR_IO;
    return KILN_RAISE(r, "kiln server at '%s' refused the connection: %s", path, why[0] ? why : "(no reason given)");
}

kiln_result tp_hello_answer(int conn, kiln_result refusal, const char *why)
{
    uint8_t msg[ANSWER_HEAD + TP_REFUSAL_MAX];
    size_t n = why ? strlen(why) : 0;
    if (n > TP_REFUSAL_MAX)
        n = TP_REFUSAL_MAX;
    uint32_t head[4] = {ANSWER_MAGIC, TP_HELLO_VERSION, (uint32_t)(int32_t)refusal, (uint32_t)n};
    memcpy(msg, head, sizeof head);
    if (n)
        memcpy(msg + ANSWER_HEAD, why, n);
    /* The client's first read; the socket's buffer is empty, so this never
     * blocks, and one that would (a peer that never reads) is not waited for. */
    ssize_t w = send(conn, msg, ANSWER_HEAD + n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w != (ssize_t)(ANSWER_HEAD + n))
        return KILN_RAISE(KILN_ERR_IO, "hello: sending the answer: %s", w < 0 ? strerror(errno) : "cut short");
    return KILN_OK;
}

kiln_result tp_connect(const char *path, uint64_t timeout_ns, struct tp **out)
{
    *out = NULL;
    struct sockaddr_un sa;
    KILN_TRY(sun_of(path, &sa));
    int st = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (st < 0)
        return KILN_RAISE(KILN_ERR_IO, "socket: %s", strerror(errno));
    if (connect(st, (struct sockaddr *)&sa, sizeof sa)) {
        kiln_result r = KILN_RAISE(KILN_ERR_IO, "no kiln server at '%s': %s", path, strerror(errno));
        close(st);
        return r;
    }
    int dg[2];
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg)) {
        kiln_result r = KILN_RAISE(KILN_ERR_IO, "socketpair: %s", strerror(errno));
        close(st);
        return r;
    }
    uint32_t hello[2] = {HELLO_MAGIC, TP_HELLO_VERSION};
    struct iovec iov = {hello, sizeof hello};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &dg[1], sizeof(int));
    kiln_result r = wait_fd(st, POLLOUT, time_now_ns() + timeout_ns, "sending the hello");
    if (r == KILN_OK && sendmsg(st, &m, MSG_NOSIGNAL) != (ssize_t)sizeof hello) {
        int e = errno;
        /* A server that refuses at once (full, out of descriptors) may
         * have answered and closed before the hello went: its answer is
         * still there to read, and says more than the broken pipe. */
        r = e == EPIPE || e == ECONNRESET ? read_answer(st, path, time_now_ns() + timeout_ns) : KILN_OK;
        if (r == KILN_OK)
            r = KILN_RAISE(KILN_ERR_IO, "kiln server at '%s': sending the hello: %s", path, strerror(e));
    } else if (r == KILN_OK) {
        r = read_answer(st, path, time_now_ns() + timeout_ns);
    }
    close(dg[1]);
    if (r < 0) {
        close(st);
        close(dg[0]);
        return r;
    }
    return tp_socket_create(st, dg[0], out);
}

/* Reads the hello's 8 bytes without waiting, with what descriptors came:
 * the first in *dg (-1: none), the others closed, *fds counting them all;
 * *flags the message's (MSG_CTRUNC: a descriptor could not be taken).
 * recvmsg's result. */
static ssize_t recv_hello(int conn, uint32_t hello[2], int *dg, uint32_t *fds, int *flags)
{
    struct iovec iov = {hello, 2 * sizeof hello[0]};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n = recvmsg(conn, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    *dg = -1;
    *fds = 0;
    *flags = n >= 0 ? m.msg_flags : 0;
    for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof fd);
            if ((*fds)++ == 0)
                *dg = fd;
            else
                close(fd);
        }
    }
    return n;
}

void tp_hello_refuse(int conn, kiln_result code, const char *why)
{
    uint32_t hello[2];
    int dg, flags;
    uint32_t fds;
    (void)recv_hello(conn, hello, &dg, &fds, &flags);
    if (dg >= 0)
        close(dg);
    (void)tp_hello_answer(conn, code, why);
    shutdown(conn, SHUT_WR);
    close(conn);
}

kiln_result tp_accept_hello(int conn, uint64_t timeout_ns, struct tp **out, struct ucred *peer)
{
    *out = NULL;
    socklen_t cl = sizeof *peer;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, peer, &cl)) {
        kiln_result r = KILN_RAISE(KILN_ERR_IO, "SO_PEERCRED: %s", strerror(errno));
        close(conn);
        return r;
    }
    kiln_result r = wait_fd(conn, POLLIN, time_now_ns() + timeout_ns, "waiting for the client's hello");
    uint32_t hello[2] = {0, 0};
    int dg = -1;
    if (r == KILN_OK) {
        uint32_t fds = 0;
        int flags = 0;
        ssize_t n = recv_hello(conn, hello, &dg, &fds, &flags);
        int type = 0;
        socklen_t tl = sizeof type;
        if (n < 0)
            r = KILN_RAISE(KILN_ERR_IO, "hello: %s", strerror(errno));
        else if (n == 0)
            r = KILN_RAISE(KILN_ERR_IO, "hello: the client closed before its hello");
        else if (n != (ssize_t)sizeof hello || hello[0] != HELLO_MAGIC)
            r = KILN_RAISE(KILN_ERR_IO, "hello: protocol mismatch (%zd bytes, magic 0x%08x; a kiln client sends "
                           "\"KLNH\")", n, hello[0]);
        else if (hello[1] != TP_HELLO_VERSION) {
            char why[160];
            snprintf(why, sizeof why, "this client speaks transport version %u; the server speaks %u", hello[1],
                     TP_HELLO_VERSION);
            (void)tp_hello_answer(conn, KILN_ERR_IO, why);
            r = KILN_RAISE(KILN_ERR_IO, "hello: protocol mismatch (%s)", why);
        }
        else if (fds == 0 && (flags & MSG_CTRUNC)) {
            /* A descriptor came and could not be taken: this process has
             * none left (EMFILE), not a client speaking another protocol. */
            (void)tp_hello_answer(conn, KILN_ERR_LIMIT, "the server is out of descriptors; try again later");
            r = KILN_RAISE(KILN_ERR_LIMIT, "hello: the server is out of descriptors (the client's datagram socket "
                           "could not be taken)");
        } else if (fds != 1 || (flags & MSG_CTRUNC))
            r = KILN_RAISE(KILN_ERR_IO, "hello: protocol mismatch (%u descriptors; one datagram socket expected)",
                           fds);
        else if (getsockopt(dg, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_DGRAM)
            r = KILN_RAISE(KILN_ERR_IO, "hello: protocol mismatch (the descriptor is no datagram socket)");
    }
    if (r < 0) {
        close(conn);
        if (dg >= 0)
            close(dg);
        return r;
    }
    return tp_socket_create(conn, dg, out);
}
