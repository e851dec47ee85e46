/* SPDX-License-Identifier: MIT */
/*
 * test_segment.c: memfd segments and descriptor passing. A segment made
 * here and adopted through a received descriptor shows the same bytes; its
 * seals hold against both sides; a short segment, an unsealed one and a
 * descriptor that is not memory are refused. Over SCM_RIGHTS: messages and
 * descriptors arrive together; a buffer too small is refused before
 * anything is taken; a message with MSG_CTRUNC, a wrong count or a bad
 * header closes every descriptor it brought (the process's count of open
 * descriptors is the witness).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "transport/transport.h"

#define SEC (1000ull * 1000 * 1000)

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

TEST(memfd_segment_shared_and_sealed)
{
    struct tp_segment a, b;
    REQUIRE_OK(tp_segment_create(&a, "kiln-test", 65536, 0));
    CHECK(a.sealed);
    memcpy(a.map + 65536 - 5, "tail", 5);
    CHECK_OK(tp_segment_adopt(&b, dup(a.fd), 65536, 0));
    CHECK(b.sealed);
    CHECK(!memcmp(b.map + 65536 - 5, "tail", 5));
    b.map[0] = 42;
    CHECK_EQ(a.map[0], 42);   /* one memory */
    CHECK(ftruncate(a.fd, 4096) != 0);    /* sealed against shrinking */
    CHECK(ftruncate(b.fd, 1 << 20) != 0); /* and growing */
    CHECK(fcntl(a.fd, F_ADD_SEALS, F_SEAL_WRITE) != 0);   /* and further seals */
    tp_segment_finish(&b);
    /* Announced larger than it is: refused before mapping. */
    CHECK_RESULT(tp_segment_adopt(&b, dup(a.fd), 65537, 0), KILN_ERR_IO);
    CHECK_MSG("65536 bytes, short of the 65537 announced");
    CHECK_OK(tp_segment_adopt(&b, dup(a.fd), 4096, 0));   /* a shorter view is fine */
    tp_segment_finish(&b);
    tp_segment_finish(&a);
    CHECK_RESULT(tp_segment_create(&a, "kiln-test", 0, 0), KILN_ERR_LIMIT);
    CHECK_RESULT(tp_segment_create(&a, "kiln-test", TP_SEGMENT_MAX + 1, 0), KILN_ERR_LIMIT);
}

TEST(shm_fallback_and_refusals)
{
    int before = open_fds();
    struct tp_segment a, b;
    REQUIRE_OK(tp_segment_create(&a, "kiln-test", 8192, TP_SEGMENT_SHM));
    CHECK(!a.sealed);
    a.map[8191] = 7;
    /* Unsealed: a peer could shrink it under the mapping, so it is refused
     * unless the adopter takes that on. */
    CHECK_RESULT(tp_segment_adopt(&b, dup(a.fd), 8192, 0), KILN_ERR_IO);
    CHECK_MSG("not sealed");
    CHECK_OK(tp_segment_adopt(&b, dup(a.fd), 8192, TP_SEGMENT_UNSEALED_OK));
    CHECK_EQ(b.map[8191], 7);
    tp_segment_finish(&b);
    tp_segment_finish(&a);
    /* A descriptor that is not a memory file. */
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) == 0);
    CHECK_RESULT(tp_segment_adopt(&b, sv[0], 4096, TP_SEGMENT_UNSEALED_OK), KILN_ERR_IO);
    CHECK_MSG("not a memory file");
    close(sv[1]);
    CHECK_EQ(open_fds(), before);   /* every refusal closed what it was given */
}

TEST(descriptors_with_their_message)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
    struct tp_segment a, b;
    REQUIRE_OK(tp_segment_create(&a, "kiln-test", 4096, 0));
    strcpy((char *)a.map, "through the socket");
    int before = open_fds();
    int two[2] = {a.fd, a.fd};
    CHECK_OK(tp_fd_send(sv[0], "segment 1", 9, two, 2, SEC));
    CHECK_OK(tp_fd_send(sv[0], "", 0, NULL, 0, SEC));   /* no payload, no descriptor */
    uint8_t msg[TP_SIDEBAND_PAYLOAD];
    int fds[TP_FDS_MAX];
    size_t len;
    uint32_t n;
    /* Buffers too small: refused, and the message is still there. */
    CHECK_RESULT(tp_fd_recv(sv[1], msg, sizeof msg - 1, &len, fds, TP_FDS_MAX, &n, SEC), KILN_ERR_LIMIT);
    CHECK_MSG("nothing was received");
    CHECK_RESULT(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX - 1, &n, SEC), KILN_ERR_LIMIT);
    CHECK_OK(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC));
    CHECK_EQ(len, 9);
    CHECK(!memcmp(msg, "segment 1", 9));
    REQUIRE(n == 2);
    CHECK(fcntl(fds[0], F_GETFD) & FD_CLOEXEC);
    close(fds[1]);
    CHECK_OK(tp_segment_adopt(&b, fds[0], 4096, 0));
    CHECK(!strcmp((char *)b.map, "through the socket"));
    tp_segment_finish(&b);
    CHECK_OK(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC));
    CHECK_EQ(len + n, 0);
    CHECK_RESULT(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, 0), KILN_ERR_TIMEOUT);
    CHECK_EQ(open_fds(), before);
    /* The limits, on the sending side. */
    int many[TP_FDS_MAX + 1];
    for (size_t i = 0; i < KILN_ARRAY_LEN(many); i++)
        many[i] = a.fd;
    CHECK_RESULT(tp_fd_send(sv[0], "", 0, many, TP_FDS_MAX + 1, SEC), KILN_ERR_LIMIT);
    CHECK_RESULT(tp_fd_send(sv[0], msg, TP_SIDEBAND_PAYLOAD + 1, NULL, 0, SEC), KILN_ERR_LIMIT);
    CHECK_OK(tp_fd_send(sv[0], msg, TP_SIDEBAND_PAYLOAD, many, TP_FDS_MAX, SEC));   /* the limits themselves */
    CHECK_OK(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC));
    CHECK_EQ(len, TP_SIDEBAND_PAYLOAD);
    CHECK_EQ(n, TP_FDS_MAX);
    for (uint32_t i = 0; i < n; i++)
        close(fds[i]);
    /* The peer gone: a datagram socket does not tell (the transport's
     * stream socket does); the wait ends at its timeout. */
    close(sv[0]);
    CHECK_RESULT(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC / 100), KILN_ERR_TIMEOUT);
    close(sv[1]);
    tp_segment_finish(&a);
}

/* Sends a raw datagram: hdr's words, then the descriptors as SCM_RIGHTS. */
static int raw_send(int sock, const uint32_t *words, size_t nwords, const int *fds, int n)
{
    union {
        struct cmsghdr align;
        uint8_t buf[CMSG_SPACE(64 * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov = {(void *)words, nwords * 4};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n) {
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    }
    return sendmsg(sock, &mh, 0) < 0 ? -1 : 0;
}

TEST(bad_messages_close_every_descriptor)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0);
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    int many[TP_FDS_MAX + 4];
    for (size_t i = 0; i < KILN_ARRAY_LEN(many); i++)
        many[i] = fd;
    struct {
        const char *msg;
        uint32_t words[4];
        size_t nwords;
        int nfds;
    } cases[] = {
        {"header says 2 descriptors, 1 came", {TP_SIDEBAND_MAGIC, 2, 0, 0}, 4, 1},
        {"header says 0 descriptors, 3 came", {TP_SIDEBAND_MAGIC, 0, 0, 0}, 4, 3},
        {"magic 0x", {0x12345678, 1, 0, 0}, 4, 1},
        {"payload length 4", {TP_SIDEBAND_MAGIC, 1, 4, 0}, 4, 1},
        {"reserved word", {TP_SIDEBAND_MAGIC, 1, 0, 9}, 4, 1},
        {"short of its 16-byte header", {TP_SIDEBAND_MAGIC, 1, 0, 0}, 3, 1},
        {"MSG_CTRUNC", {TP_SIDEBAND_MAGIC, TP_FDS_MAX + 4, 0, 0}, 4, TP_FDS_MAX + 4},
    };
    uint8_t msg[TP_SIDEBAND_PAYLOAD];
    int fds[TP_FDS_MAX];
    size_t len;
    uint32_t n;
    int before = open_fds();
    for (size_t i = 0; i < KILN_ARRAY_LEN(cases); i++) {
        REQUIRE(raw_send(sv[0], cases[i].words, cases[i].nwords, many, cases[i].nfds) == 0);
        CHECK_RESULT(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC), KILN_ERR_IO);
        CHECK_MSG(cases[i].msg);
        CHECK_EQ(n, 0);
        CHECK_EQ(open_fds(), before);   /* nothing leaked in */
    }
    /* A good message after the bad ones still arrives. */
    CHECK_OK(tp_fd_send(sv[0], "ok", 2, &fd, 1, SEC));
    CHECK_OK(tp_fd_recv(sv[1], msg, sizeof msg, &len, fds, TP_FDS_MAX, &n, SEC));
    CHECK_EQ(n, 1);
    close(fds[0]);
    close(fd);
    close(sv[0]);
    close(sv[1]);
}

TEST(parser_on_forged_control_data)
{
    uint8_t data[16] = {'K', 'L', 'N', 'S', 1, 0, 0, 0};
    union {
        struct cmsghdr align;
        uint8_t buf[TP_SIDEBAND_CONTROL];
    } ctl;
    struct tp_sideband sb;
    memset(&ctl, 0, sizeof ctl);
    struct cmsghdr h = {.cmsg_len = CMSG_LEN(4), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS};
    memcpy(ctl.buf, &h, sizeof h);
    int seven = 7;
    memcpy(ctl.buf + CMSG_LEN(0), &seven, 4);
    CHECK_OK(tp_sideband_parse(data, 16, ctl.buf, CMSG_SPACE(4), 0, &sb));
    CHECK_EQ(sb.nfds, 1);
    CHECK_EQ(sb.fds[0], 7);
    h.cmsg_type = SCM_CREDENTIALS;
    memcpy(ctl.buf, &h, sizeof h);
    CHECK_RESULT(tp_sideband_parse(data, 16, ctl.buf, CMSG_SPACE(4), 0, &sb), KILN_ERR_IO);
    CHECK_MSG("other than SCM_RIGHTS");
    h.cmsg_type = SCM_RIGHTS;
    h.cmsg_len = 1000;   /* past the control data */
    memcpy(ctl.buf, &h, sizeof h);
    CHECK_RESULT(tp_sideband_parse(data, 16, ctl.buf, CMSG_SPACE(4), 0, &sb), KILN_ERR_IO);
    CHECK_MSG("malformed");
    CHECK_EQ(sb.nfds, 0);
    CHECK_RESULT(tp_sideband_parse(data, 16, ctl.buf, 0, MSG_TRUNC, &sb), KILN_ERR_IO);
    CHECK_MSG("MSG_TRUNC");
}

int main(void)
{
    RUN(memfd_segment_shared_and_sealed);
    RUN(shm_fallback_and_refusals);
    RUN(descriptors_with_their_message);
    RUN(bad_messages_close_every_descriptor);
    RUN(parser_on_forged_control_data);
    return TEST_SUMMARY();
}
