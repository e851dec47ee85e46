/* SPDX-License-Identifier: MIT */
/*
 * fuzz_transport_sideband.c: fuzz target for the sideband parser
 * (tp_sideband_parse in src/transport/fdpass.c), which judges a datagram
 * and its ancillary data as recvmsg handed them over. The input's first
 * byte chooses recvmsg's flags (MSG_CTRUNC, MSG_TRUNC), the next two the
 * length of the control data, which follows; the rest is the datagram.
 *
 * The parser must only read inside both buffers (each an allocation of its
 * exact size) and must report every descriptor it saw, also when it
 * refuses the message; the descriptor numbers are made up, and the parser
 * closes nothing, so none of the process's own descriptors is touched. On
 * success the header's count is the number of descriptors and the payload
 * is the datagram's rest.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "transport/transport.h"

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int flags = (data[0] & 1 ? MSG_CTRUNC : 0) | (data[0] & 2 ? MSG_TRUNC : 0);
    size_t clen = (size_t)(data[1] | data[2] << 8) % 257;
    data += 3;
    size -= 3;
    clen = KILN_MIN(clen, size);
    uint8_t *control = malloc(clen ? clen : 1), *dgram = malloc(size - clen ? size - clen : 1);
    if (!control || !dgram)
        abort();
    memcpy(control, data, clen);
    memcpy(dgram, data + clen, size - clen);
    size_t dlen = size - clen;
    struct tp_sideband sb;
    kiln_result r = tp_sideband_parse(dgram, dlen, control, clen, flags, &sb);
    if (sb.nfds > KILN_ARRAY_LEN(sb.fds))
        abort();
    if (r == KILN_OK) {
        if (flags || dlen < TP_SIDEBAND_HEADER || dlen > TP_SIDEBAND_MAX || clen > TP_SIDEBAND_CONTROL ||
            get_u32(dgram) != TP_SIDEBAND_MAGIC || get_u32(dgram + 4) != sb.nfds || sb.nfds > TP_FDS_MAX ||
            sb.payload != dgram + TP_SIDEBAND_HEADER || sb.payload_len != dlen - TP_SIDEBAND_HEADER)
            abort();
    } else if (r != KILN_ERR_IO || !strstr(kiln_last_error(), "sideband message")) {
        abort();
    }
    free(control);
    free(dgram);
    return 0;
}

/* Writes seeds into dir: good messages with 0, 1 and 16 descriptors, one
 * with a payload, and the refusals (count, magic, truncation, foreign
 * ancillary data). */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    for (int seed = 0; seed < 8; seed++) {
        uint8_t s[512];
        size_t n = 0;
        int nfds = seed == 0 ? 0 : seed == 2 ? 16 : 1;
        union {
            struct cmsghdr align;
            uint8_t buf[TP_SIDEBAND_CONTROL];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        size_t clen = nfds ? CMSG_SPACE(nfds * sizeof(int)) : 0;
        if (nfds) {
            struct cmsghdr h = {.cmsg_len = CMSG_LEN(nfds * sizeof(int)), .cmsg_level = SOL_SOCKET,
                                .cmsg_type = seed == 6 ? SCM_CREDENTIALS : SCM_RIGHTS};
            memcpy(ctl.buf, &h, sizeof h);
            for (int i = 0; i < nfds; i++) {
                int fd = 100 + i;
                memcpy(ctl.buf + CMSG_LEN(0) + i * sizeof(int), &fd, sizeof fd);
            }
        }
        s[n++] = (uint8_t)(seed == 5 ? 1 : 0);
        s[n++] = (uint8_t)clen;
        s[n++] = 0;
        memcpy(s + n, ctl.buf, clen);
        n += clen;
        uint32_t payload = seed == 3 ? 40 : 0;
        uint32_t words[4] = {seed == 4 ? 0x12345678u : TP_SIDEBAND_MAGIC, (uint32_t)(seed == 7 ? 2 : nfds), payload, 0};
        memcpy(s + n, words, sizeof words);
        n += sizeof words;
        for (uint32_t i = 0; i < payload; i++)
            s[n++] = (uint8_t)i;
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02d", dir, seed);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(s, 1, n, f) != n || fclose(f))
            return 1;
    }
    return 0;
}
