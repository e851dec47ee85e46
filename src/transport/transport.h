/*
 * transport: how bytes and descriptors move between a kiln client and a kiln
 * server, in two processes or in one. Nothing here knows what the bytes
 * mean; the call catalogue and the server sit above it. docs/transport.md
 * draws the wire and ring layouts and says what a hostile peer can do.
 *
 * Five parts, each usable alone:
 * - framing (frame.c): a byte stream cut into [u32 magic][u32 length]
 *   [payload] frames of at most TP_FRAME_MAX bytes. A bad magic or an
 *   oversize length latches the reader dead: it and every later read say
 *   "protocol mismatch" (KILN_ERR_IO), since nothing after a desynchronized
 *   header can be trusted. A destination too small gets KILN_ERR_LIMIT with
 *   the size needed, and the frame stays queued.
 * - the control page and the SPSC ring (control.h, ring.c): one 4 KiB page
 *   of cursors, flags and counters, and rings of records in shared memory,
 *   read by copy-then-validate.
 * - the doorbell (ring.c): spin, then park on a futex in the control page,
 *   ordered so that no wakeup is lost (tests/transport/doorbell.pml proves
 *   the ordering with Spin); a heartbeat per side so that a dead peer is
 *   noticed within a bounded time.
 * - segments (segment.c): shared memory from memfd_create, sealed against
 *   shrinking and growing, or shm_open + shm_unlink where memfd is missing.
 * - descriptor passing (fdpass.c): SCM_RIGHTS over a SOCK_DGRAM socketpair
 *   of its own, each datagram a sideband message with the descriptors.
 * And the transport object (transport.c) over them: frames and descriptor
 * messages, through an ops table with two implementations, sockets between
 * processes and queues inside one process, with the same limits.
 *
 * Errors: KILN_ERR_IO for a peer that closed, died or broke the protocol
 * (the message says which), KILN_ERR_LIMIT for a size past a limit (named),
 * KILN_ERR_TIMEOUT for a wait that ran out, KILN_ERR_INVALID for a bad
 * argument of the caller's own.
 */
#ifndef KILN_TRANSPORT_H
#define KILN_TRANSPORT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- framing ------------------------------------------------------------------ */

/* "KLNF" as it reads on the wire (the u32 is little-endian). */
#define TP_FRAME_MAGIC 0x464e4c4bu
#define TP_FRAME_HEADER 8u
#define TP_FRAME_MAX (64u << 20)   /* payload bytes; a header saying more is corrupt */

/* Writes the 8-byte header of a frame of len payload bytes into hdr.
 * KILN_ERR_LIMIT when len is past TP_FRAME_MAX. */
kiln_result tp_frame_header(uint8_t hdr[TP_FRAME_HEADER], size_t len);

/* A frame reader: bytes go in as they arrive (in pieces of any size), whole
 * frames come out. It holds at most one frame's bytes beyond what was fed
 * in one piece, since a header is checked as soon as its 8 bytes are in. */
struct tp_frame_reader {
    uint8_t *buf;        /* owned; bytes fed and not yet taken, from `at` to `len` */
    size_t at, len, cap;
    size_t hdr;          /* buf index of the first header not yet checked */
    bool dead;           /* latched: a header was bad; every call fails */
    char why[160];       /* what was bad, for every later error */
    uint64_t offset;     /* stream offset of buf[at], for messages */
};
void tp_frame_reader_init(struct tp_frame_reader *r);
void tp_frame_reader_finish(struct tp_frame_reader *r);
/* Appends n bytes of the stream. KILN_ERR_IO (protocol mismatch, naming the
 * stream offset and the bad field) when a header in them is bad, and for
 * every call once dead; KILN_ERR_NO_MEMORY when the buffer cannot grow
 * (the bytes are then not taken, and the reader is not dead). */
kiln_result tp_frame_feed(struct tp_frame_reader *r, const void *data, size_t n);
/* Bytes the reader needs before its next frame is whole (at least 1 when
 * no frame is whole; 0 when one is): how much a socket read may take
 * without reading past the frame. */
size_t tp_frame_want(const struct tp_frame_reader *r);
/* Takes the next whole frame. KILN_OK: its payload copied to dst, *len its
 * size. KILN_ERR_LIMIT: cap is smaller than the frame, *len the size
 * needed, the frame still queued. KILN_ERR_PENDING: no whole frame yet
 * (*len 0). KILN_ERR_IO once dead. */
kiln_result tp_frame_take(struct tp_frame_reader *r, void *dst, size_t cap, size_t *len);

#endif
