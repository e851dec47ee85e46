/* SPDX-License-Identifier: MIT */
/*
 * frame.c: the stream's framing, [u32 magic][u32 length][payload], both
 * numbers little-endian. The reader checks every header as soon as its 8
 * bytes are in, before it trusts the length for anything: a length is
 * compared with TP_FRAME_MAX and with what is buffered, never used to size
 * an allocation (the buffer grows only with bytes actually fed). A bad
 * header latches the reader dead with the reason, since every byte after a
 * desynchronized header would be read as something it is not; the whole
 * frames before it are still handed out (the last may say what went wrong),
 * so what a reader gets does not depend on how the bytes were cut.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

kiln_result tp_frame_header(uint8_t hdr[TP_FRAME_HEADER], size_t len)
{
    if (len > TP_FRAME_MAX)
        return KILN_RAISE(KILN_ERR_LIMIT, "a frame of %zu bytes is past the frame limit (%u bytes)", len,
                          TP_FRAME_MAX);
    put_u32(hdr, TP_FRAME_MAGIC);
    put_u32(hdr + 4, (uint32_t)len);
    return KILN_OK;
}

void tp_frame_reader_init(struct tp_frame_reader *r)
{
    memset(r, 0, sizeof *r);
}

void tp_frame_reader_finish(struct tp_frame_reader *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}

static kiln_result dead_error(const struct tp_frame_reader *r)
{
    return KILN_RAISE(KILN_ERR_IO, "protocol mismatch: %s", r->why);
}

/* Latches the reader dead at the header at buffer index i: the bytes from
 * there on are dropped, the whole frames before it can still be taken. */
static kiln_result latch(struct tp_frame_reader *r, size_t i, const char *fmt, uint32_t v)
{
    char what[96];
    snprintf(what, sizeof what, fmt, v);
    snprintf(r->why, sizeof r->why, "frame header at stream offset %llu: %s",
             (unsigned long long)(r->offset + (i - r->at)), what);
    log_debug("transport: protocol mismatch: %s; the stream is dead", r->why);
    r->dead = true;
    r->len = r->hdr = i;
    return dead_error(r);
}

/* Checks every header whose 8 bytes are buffered and not yet checked. */
static kiln_result check_headers(struct tp_frame_reader *r)
{
    while (r->len - r->hdr >= TP_FRAME_HEADER) {
        uint32_t magic = get_u32(r->buf + r->hdr), n = get_u32(r->buf + r->hdr + 4);
        if (magic != TP_FRAME_MAGIC)
            return latch(r, r->hdr, "magic 0x%08x is not KLNF (0x464e4c4b)", magic);
        if (n > TP_FRAME_MAX)
            return latch(r, r->hdr, "length %u is past the frame limit (67108864 bytes)", n);
        if (r->len - r->hdr - TP_FRAME_HEADER < n)
            break;   /* its payload is still coming; the next header is not in yet */
        r->hdr += TP_FRAME_HEADER + n;
    }
    return KILN_OK;
}

kiln_result tp_frame_feed(struct tp_frame_reader *r, const void *data, size_t n)
{
    if (r->dead)
        return dead_error(r);
    if (!n)
        return KILN_OK;
    if (r->at && r->cap - r->len < n) {   /* slide the untaken bytes to the front first */
        memmove(r->buf, r->buf + r->at, r->len - r->at);
        r->len -= r->at;
        r->hdr -= r->at;
        r->at = 0;
    }
    if (r->cap - r->len < n) {
        if (n > SIZE_MAX / 2 - r->len)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "frame reader: %zu more bytes do not fit in memory", n);
        size_t cap = r->cap ? r->cap : 4096;
        while (cap - r->len < n)
            cap *= 2;
        uint8_t *p = mem_realloc(r->buf, cap);
        if (!p)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "frame reader: no memory for %zu bytes", cap);
        r->buf = p;
        r->cap = cap;
    }
    memcpy(r->buf + r->len, data, n);
    r->len += n;
    return check_headers(r);
}

size_t tp_frame_want(const struct tp_frame_reader *r)
{
    size_t have = r->len - r->at;
    if (have < TP_FRAME_HEADER)
        return TP_FRAME_HEADER - have;
    size_t need = TP_FRAME_HEADER + get_u32(r->buf + r->at + 4);   /* checked: at most TP_FRAME_MAX */
    return have >= need ? 0 : need - have;   /* dead: the frame will not come, take says so */
}

kiln_result tp_frame_take(struct tp_frame_reader *r, void *dst, size_t cap, size_t *len)
{
    *len = 0;
    if (tp_frame_want(r))
        return r->dead ? dead_error(r) : KILN_ERR_PENDING;
    uint32_t n = get_u32(r->buf + r->at + 4);
    if (cap < n) {
        *len = n;
        return KILN_RAISE(KILN_ERR_LIMIT, "a frame of %u bytes does not fit a buffer of %zu bytes; it stays queued",
                          n, cap);
    }
    if (n)
        memcpy(dst, r->buf + r->at + TP_FRAME_HEADER, n);
    *len = n;
    r->at += TP_FRAME_HEADER + n;
    r->offset += TP_FRAME_HEADER + n;
    if (r->at == r->len) {
        r->at = r->len = r->hdr = 0;
        if (r->cap > TP_FRAME_KEEP) {   /* a big frame's buffer goes back once it is taken */
            free(r->buf);
            r->buf = NULL;
            r->cap = 0;
        }
    }
    return KILN_OK;
}
