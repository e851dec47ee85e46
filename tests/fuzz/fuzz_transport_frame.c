/* SPDX-License-Identifier: MIT */
/*
 * fuzz_transport_frame.c: fuzz target for the stream's frame reader
 * (src/transport/frame.c), the first thing a peer's bytes meet. The input
 * is the stream; its first two bytes choose how it is cut into pieces and
 * how large the receiving buffer is, so every split of a header and every
 * too-small buffer is tried.
 *
 * A crash, a sanitizer report or a broken promise is a bug: a frame taken
 * is at most TP_FRAME_MAX and its bytes are the stream's; a too-small
 * buffer is told the exact size and the frame is still there; once dead,
 * the reader stays dead and its error names a stream offset.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t piece = 1 + data[0] % 64, cap = (size_t)data[1] * 3;
    data += 2;
    size -= 2;
    struct tp_frame_reader r;
    tp_frame_reader_init(&r);
    uint8_t *dst = malloc(cap ? cap : 1);   /* exactly cap bytes: ASan sees an overrun */
    size_t fed = 0, taken = 0;   /* stream bytes fed; stream bytes of frames taken */
    bool dead = false;
    while (fed < size || !dead) {
        size_t len = 12345;
        kiln_result res = tp_frame_take(&r, dst, cap, &len);
        if (res == KILN_OK) {
            /* the frame is the stream's bytes at its offset */
            if (len > TP_FRAME_MAX || taken + TP_FRAME_HEADER + len > fed ||
                get_u32(data + taken) != TP_FRAME_MAGIC || get_u32(data + taken + 4) != len ||
                (len && memcmp(dst, data + taken + TP_FRAME_HEADER, len)))
                abort();
            taken += TP_FRAME_HEADER + len;
            continue;
        }
        if (res == KILN_ERR_LIMIT) {
            if (len <= cap || len > TP_FRAME_MAX)
                abort();
            size_t again;
            uint8_t *big = malloc(len);   /* the frame is still there */
            if (!big || tp_frame_take(&r, big, len, &again) != KILN_OK || again != len ||
                memcmp(big, data + taken + TP_FRAME_HEADER, len))
                abort();
            free(big);
            taken += TP_FRAME_HEADER + len;
            continue;
        }
        if (res == KILN_ERR_IO) {
            if (!r.dead || !strstr(kiln_last_error(), "protocol mismatch") || !strstr(kiln_last_error(), "offset"))
                abort();
            dead = true;
            if (fed < size && tp_frame_feed(&r, data + fed, KILN_MIN(piece, size - fed)) != KILN_ERR_IO)
                abort();   /* dead for good */
            break;
        }
        if (res != KILN_ERR_PENDING || len != 0 || r.dead)
            abort();
        if (fed == size)
            break;
        size_t n = KILN_MIN(piece, size - fed);
        kiln_result fr = tp_frame_feed(&r, data + fed, n);
        fed += n;
        if (fr == KILN_ERR_IO)
            dead = true;
        else if (fr != KILN_OK)
            abort();
    }
    free(dst);
    tp_frame_reader_finish(&r);
    return 0;
}

/* Writes seeds into dir: streams of good frames cut several ways, a bad
 * magic after a good frame, an oversize length, a frame at the limit's
 * header. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    uint8_t s[1024];
    for (int seed = 0; seed < 6; seed++) {
        size_t n = 0;
        s[n++] = (uint8_t)(seed * 11 + 1);
        s[n++] = (uint8_t)(seed * 7);
        for (int f = 0; f < 5; f++) {
            size_t len = (size_t)(seed * 13 + f * 29) % 90;
            if (tp_frame_header(s + n, len) != KILN_OK)
                return 1;
            n += TP_FRAME_HEADER;
            for (size_t i = 0; i < len; i++)
                s[n++] = (uint8_t)(i ^ (size_t)seed);
        }
        if (seed == 3)
            memcpy(s + n, "XXXX\x04\0\0\0abcd", 12), n += 12;
        if (seed == 4)
            memcpy(s + n, "KLNF\x01\0\0\x04", 8), n += 8;
        if (seed == 5)
            memcpy(s + n, "KLNF\0\0\0\x04", 8), n += 8;
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02d", dir, seed);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(s, 1, n, f) != n || fclose(f))
            return 1;
    }
    return 0;
}
