/* SPDX-License-Identifier: MIT */
/*
 * bytes.c: the byte writer and the bounds-checked reader (see bytes.h).
 *
 * Numbers are assembled a byte at a time, so the host's byte order and
 * alignment never matter. Every read passes through can_read(), the one
 * place the overrun flag is checked and set.
 */
#include "bytes.h"

#include <string.h>

#include "base.h"

#include <stdarg.h>
#include <stdio.h>

/* ---- writing ------------------------------------------------------------------ */

uint8_t *bytes_put(struct bytes *b, const void *src, size_t n)
{
    if (b->oom)
        return NULL;
    if (!n)   /* nothing to add, and an empty b has no storage to point into yet */
        return b->p ? b->p + b->len : NULL;
    if (n > SIZE_MAX / 4 || b->len > SIZE_MAX / 4) {
        b->oom = true;
        return NULL;
    }
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = mem_realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    if (src)
        memcpy(at, src, n);
    else
        memset(at, 0, n);
    b->len += n;
    return at;
}

static void put_le(struct bytes *b, uint64_t v, unsigned n)
{
    uint8_t buf[8];
    for (unsigned i = 0; i < n; i++)
        buf[i] = (uint8_t)(v >> (8 * i));
    bytes_put(b, buf, n);
}

void bytes_put_u8(struct bytes *b, uint8_t v) { put_le(b, v, 1); }
void bytes_put_u32(struct bytes *b, uint32_t v) { put_le(b, v, 4); }
void bytes_put_u64(struct bytes *b, uint64_t v) { put_le(b, v, 8); }

void bytes_put_f64(struct bytes *b, double v)
{
    uint64_t bits;
    _Static_assert(sizeof bits == sizeof v, "a double is 64 bits");
    memcpy(&bits, &v, sizeof bits);
    put_le(b, bits, 8);
}

void bytes_put_str(struct bytes *b, const char *s, size_t n)
{
    KILN_ASSERT(n >= 1);
    size_t len = 0;
    while (len < n - 1 && s[len])
        len++;
    uint8_t *p = bytes_put(b, NULL, n);
    if (p)
        memcpy(p, s, len);
}

/* ---- reading ------------------------------------------------------------------ */

void bytes_reader_init(struct bytes_reader *r, const void *data, size_t len)
{
    KILN_ASSERT(data || !len);
    *r = (struct bytes_reader){.data = data, .len = len};
}

/* Whether n more bytes can be read; latches overrun when not. */
static bool can_read(struct bytes_reader *r, size_t n)
{
    if (r->overrun)
        return false;
    if (n > r->len - r->at) {
        r->overrun = true;
        return false;
    }
    return true;
}

static uint64_t read_le(struct bytes_reader *r, unsigned n)
{
    if (!can_read(r, n))
        return 0;
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->data[r->at + i] << (8 * i);
    r->at += n;
    return v;
}

uint8_t bytes_read_u8(struct bytes_reader *r) { return (uint8_t)read_le(r, 1); }
uint32_t bytes_read_u32(struct bytes_reader *r) { return (uint32_t)read_le(r, 4); }
uint64_t bytes_read_u64(struct bytes_reader *r) { return read_le(r, 8); }

double bytes_read_f64(struct bytes_reader *r)
{
    uint64_t bits = read_le(r, 8);
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

const uint8_t *bytes_read_span(struct bytes_reader *r, size_t n)
{
    if (!can_read(r, n))
        return NULL;
    const uint8_t *p = r->data ? r->data + r->at : NULL;
    r->at += n;
    return p;
}

void bytes_read_copy(struct bytes_reader *r, void *dst, size_t n)
{
    const uint8_t *p = bytes_read_span(r, n);
    if (!n)
        return;
    if (p)
        memcpy(dst, p, n);
    else
        memset(dst, 0, n);
}

bool bytes_read_str(struct bytes_reader *r, char *dst, size_t n)
{
    KILN_ASSERT(n >= 1);
    const uint8_t *p = bytes_read_span(r, n);
    const uint8_t *end = p ? memchr(p, 0, n) : NULL;
    size_t len = end ? (size_t)(end - p) : 0;
    if (len)
        memcpy(dst, p, len);
    memset(dst + len, 0, n - len);   /* what followed the NUL is not kept */
    return end != NULL;
}

size_t bytes_remaining(const struct bytes_reader *r) { return r->overrun ? 0 : r->len - r->at; }

void bytes_putf(struct bytes *b, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *at = n >= 0 ? (char *)bytes_put(b, NULL, (size_t)n + 1) : NULL;
    if (at) {
        vsnprintf(at, (size_t)n + 1, fmt, again);
        b->len--;   /* the NUL stays after the text, outside its length */
    }
    va_end(again);
}
