/* SPDX-License-Identifier: MIT */
/*
 * bytes: the one way kiln turns values into bytes and bytes back into
 * values, for every byte that leaves the process or comes into it from
 * outside (archive files; the transport and the server next).
 *
 * Writing: struct bytes, a growing buffer. Once an append fails for
 * memory, oom stays set and later appends do nothing, so a caller writes
 * all its fields and checks once at the end.
 *
 * Reading: struct bytes_reader, a cursor over borrowed bytes (Mesa's
 * blob_reader is the model). Every read first checks that its bytes are
 * there; one that is not reads nothing, returns zeros (or NULL) and sets
 * overrun, and from then on every read fails the same way, so a decoder
 * reads all its fields and checks overrun once. A length is only ever
 * compared with what remains, never added to a position, so no declared
 * size can wrap. The reader judges bounds only; whether a value makes sense
 * is its decoder's call.
 *
 * Numbers are little-endian and of fixed width whatever the host; a double
 * travels as the 64 bits of its IEEE 754 binary64 form. A string in a
 * fixed field of n bytes is its bytes, then zeros: at most n - 1 bytes, so
 * a NUL always ends it.
 */
#ifndef KILN_BYTES_H
#define KILN_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- writing ------------------------------------------------------------------ */

/* A growing byte buffer; zero-initialize it. p is owned (free() it). */
struct bytes {
    uint8_t *p;
    size_t len, cap;
    bool oom;
};
/* Appends n bytes (zeros when src is NULL); returns where they went, or
 * NULL once out of memory. The address is valid until the next append. */
uint8_t *bytes_put(struct bytes *b, const void *src, size_t n);
void bytes_put_u8(struct bytes *b, uint8_t v);
void bytes_put_u32(struct bytes *b, uint32_t v);
void bytes_put_u64(struct bytes *b, uint64_t v);
void bytes_put_f64(struct bytes *b, double v);
/* Writes s as a fixed field of n bytes (n >= 1): at most n - 1 of its
 * bytes, then zeros. A longer s is cut. */
void bytes_put_str(struct bytes *b, const char *s, size_t n);
/* Appends the text fmt formats, whole (no length bound), and keeps a NUL
 * after it, outside len: the buffer reads as a C string after any append
 * of text. */
void bytes_putf(struct bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- reading ------------------------------------------------------------------ */

/* A cursor over data (borrowed: the caller keeps it alive and unchanged
 * while reading). */
struct bytes_reader {
    const uint8_t *data;
    size_t len;
    size_t at;                   /* bytes read so far; never past len */
    bool overrun;                /* a read wanted more than remained: it and every later read failed */
};
/* Starts reading data's len bytes (data may be NULL when len is 0). */
void bytes_reader_init(struct bytes_reader *r, const void *data, size_t len);
/* The numbers; 0 on overrun. */
uint8_t bytes_read_u8(struct bytes_reader *r);
uint32_t bytes_read_u32(struct bytes_reader *r);
uint64_t bytes_read_u64(struct bytes_reader *r);
double bytes_read_f64(struct bytes_reader *r);
/* The next n bytes, in place: a pointer into the data (n == 0 gives the
 * cursor), or NULL on overrun. */
const uint8_t *bytes_read_span(struct bytes_reader *r, size_t n);
/* Copies the next n bytes to dst; on overrun dst is zeroed instead. */
void bytes_read_copy(struct bytes_reader *r, void *dst, size_t n);
/* Copies a fixed string field of n bytes (n >= 1) to dst. True when its
 * bytes were there and a NUL ends it within the field (dst is then a C
 * string); false otherwise (overrun tells the two apart), dst then all
 * zeros. */
bool bytes_read_str(struct bytes_reader *r, char *dst, size_t n);
/* Bytes not read yet (0 once overrun). */
size_t bytes_remaining(const struct bytes_reader *r);

#endif
