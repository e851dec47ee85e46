/* SPDX-License-Identifier: MIT */
/*
 * fdpass.c: descriptors over SCM_RIGHTS, one sideband message per datagram
 * on a SOCK_DGRAM socketpair kept for them alone.
 *
 * The receiving side takes a datagram whole or not at all: the caller's
 * buffers must hold the largest message before recvmsg is called, so a
 * short buffer never leaves half a message taken. What arrived is judged by
 * tp_sideband_parse, which walks the ancillary data itself with every
 * length checked against what is left (a cmsg_len is the kernel's, but the
 * parser is also fed hostile bytes by a fuzzer) and closes nothing; on any
 * failure tp_fd_recv closes every descriptor the datagram brought, so a bad
 * message leaks none into the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport/transport.h"

_Static_assert(TP_SIDEBAND_CONTROL == CMSG_SPACE(TP_FDS_MAX * sizeof(int)), "room for TP_FDS_MAX descriptors, no more");

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#define BAD(...) KILN_RAISE(KILN_ERR_IO, "sideband message: " __VA_ARGS__)

kiln_result tp_sideband_parse(const uint8_t *data, size_t len, const void *control, size_t controllen, int msg_flags,
                              struct tp_sideband *out)
{
    memset(out, 0, sizeof *out);
    /* Collect every descriptor first, so the caller can close them all
     * whatever else is wrong. */
    const uint8_t *c = control;
    size_t at = 0, clen = KILN_MIN(controllen, (size_t)TP_SIDEBAND_CONTROL);
    bool other = false, odd = false;
    while (clen - at >= sizeof(struct cmsghdr)) {
        struct cmsghdr h;
        memcpy(&h, c + at, sizeof h);
        if (h.cmsg_len < CMSG_LEN(0) || h.cmsg_len > clen - at) {
            odd = true;
            break;
        }
        size_t dlen = h.cmsg_len - CMSG_LEN(0);
        if (h.cmsg_level == SOL_SOCKET && h.cmsg_type == SCM_RIGHTS) {
            if (dlen % sizeof(int))
                odd = true;
            for (size_t i = 0; i + sizeof(int) <= dlen && out->nfds < KILN_ARRAY_LEN(out->fds); i += sizeof(int))
                memcpy(&out->fds[out->nfds++], c + at + CMSG_LEN(0) + i, sizeof(int));
        } else {
            other = true;
        }
        size_t step = CMSG_ALIGN(h.cmsg_len);
        if (step > clen - at)
            break;
        at += step;
    }
    if (msg_flags & MSG_CTRUNC)
        return BAD("its descriptors were cut short (MSG_CTRUNC): more than %u were sent", TP_FDS_MAX);
    if (msg_flags & MSG_TRUNC)
        return BAD("longer than %u bytes (MSG_TRUNC)", TP_SIDEBAND_MAX);
    if (controllen > TP_SIDEBAND_CONTROL)
        return BAD("%zu bytes of ancillary data, more than the %u a message may bring", controllen,
                   TP_SIDEBAND_CONTROL);
    if (other)
        return BAD("ancillary data other than SCM_RIGHTS");
    if (odd)
        return BAD("malformed ancillary data");
    if (len < TP_SIDEBAND_HEADER)
        return BAD("%zu bytes, short of its %u-byte header", len, TP_SIDEBAND_HEADER);
    uint32_t magic = get_u32(data), count = get_u32(data + 4), plen = get_u32(data + 8), zero = get_u32(data + 12);
    if (magic != TP_SIDEBAND_MAGIC)
        return BAD("magic 0x%08x is not KLNS (0x%08x)", magic, TP_SIDEBAND_MAGIC);
    if (zero)
        return BAD("reserved word is 0x%08x, not 0", zero);
    if (len > TP_SIDEBAND_MAX)
        return BAD("%zu bytes, past the %u-byte limit", len, TP_SIDEBAND_MAX);
    if (plen != len - TP_SIDEBAND_HEADER)
        return BAD("payload length %u, but %zu bytes follow the header", plen, len - TP_SIDEBAND_HEADER);
    if (count > TP_FDS_MAX)
        return BAD("descriptor count %u is past the limit (%u)", count, TP_FDS_MAX);
    if (count != out->nfds)
        return BAD("header says %u descriptors, %u came", count, out->nfds);
    out->payload = data + TP_SIDEBAND_HEADER;
    out->payload_len = plen;
    return KILN_OK;
}

/* Waits until fd is ready for events, at most timeout_ns. */
static kiln_result wait_fd(int fd, short events, uint64_t timeout_ns, const char *what)
{
    uint64_t start = time_now_ns();
    for (;;) {
        uint64_t spent = time_now_ns() - start;
        if (spent >= timeout_ns && timeout_ns)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "waited %llu ms to %s", (unsigned long long)(timeout_ns / 1000000u),
                              what);
        uint64_t left_ms = timeout_ns ? (timeout_ns - spent + 999999) / 1000000u : 0;
        struct pollfd pf = {.fd = fd, .events = events};
        int n = poll(&pf, 1, (int)KILN_MIN(left_ms, (uint64_t)60000));
        if (n > 0)
            return KILN_OK;   /* ready, or hung up: the call that follows says which */
        if (n < 0 && errno != EINTR)
            return KILN_RAISE(KILN_ERR_IO, "poll to %s: %s", what, strerror(errno));
        if (!timeout_ns)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "nothing ready to %s", what);
    }
}

kiln_result tp_fd_send(int sock, const void *msg, size_t len, const int *fds, uint32_t n, uint64_t timeout_ns)
{
    if (len > TP_SIDEBAND_PAYLOAD)
        return KILN_RAISE(KILN_ERR_LIMIT, "a sideband message of %zu bytes is past the limit (%u)", len,
                          TP_SIDEBAND_PAYLOAD);
    if (n > TP_FDS_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT, "%u descriptors in one message: the limit is %u", n, TP_FDS_MAX);
    uint8_t hdr[TP_SIDEBAND_HEADER];
    put_u32(hdr, TP_SIDEBAND_MAGIC);
    put_u32(hdr + 4, n);
    put_u32(hdr + 8, (uint32_t)len);
    put_u32(hdr + 12, 0);
    struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)msg, len}};
    union {
        struct cmsghdr align;
        uint8_t buf[TP_SIDEBAND_CONTROL];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (n) {
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE(n * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(n * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    }
    for (;;) {
        ssize_t sent = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent >= 0)
            return KILN_OK;   /* a datagram goes whole or not at all */
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return KILN_RAISE(KILN_ERR_IO, "sending a sideband message: %s%s", strerror(errno),
                              errno == EPIPE || errno == ECONNREFUSED ? " (the peer closed)" : "");
        KILN_TRY(wait_fd(sock, POLLOUT, timeout_ns, "send a sideband message"));
    }
}

static void close_all(const int *fds, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

kiln_result tp_fd_recv(int sock, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap, uint32_t *n,
                       uint64_t timeout_ns)
{
    *len = 0;
    *n = 0;
    if (cap < TP_SIDEBAND_PAYLOAD || fd_cap < TP_FDS_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT,
                          "sideband buffers of %zu bytes and %u descriptors: a message may need %u and %u; "
                          "nothing was received",
                          cap, fd_cap, TP_SIDEBAND_PAYLOAD, TP_FDS_MAX);
    uint8_t data[TP_SIDEBAND_MAX + 1];
    union {
        struct cmsghdr align;
        uint8_t buf[TP_SIDEBAND_CONTROL];
    } ctl;
    for (;;) {
        struct iovec iov = {data, sizeof data};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                            .msg_controllen = sizeof ctl.buf};
        ssize_t got = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            KILN_TRY(wait_fd(sock, POLLIN, timeout_ns, "receive a sideband message"));
            continue;
        }
        if (got < 0)
            return KILN_RAISE(KILN_ERR_IO, "receiving a sideband message: %s", strerror(errno));
        struct tp_sideband sb;
        kiln_result r = tp_sideband_parse(data, (size_t)got, ctl.buf, mh.msg_controllen, mh.msg_flags, &sb);
        if (r < 0) {
            close_all(sb.fds, sb.nfds);
            log_debug("transport: %s; %u descriptor(s) it brought closed", err_last(), sb.nfds);
            return r;
        }
        memcpy(msg, sb.payload, sb.payload_len);
        memcpy(fds, sb.fds, sb.nfds * sizeof(int));
        *len = sb.payload_len;
        *n = sb.nfds;
        return KILN_OK;
    }
}
