/* SPDX-License-Identifier: MIT */
/*
 * transport: how bytes and descriptors move between a kiln client and a kiln
 * server, in two processes or in one. Nothing here knows what the bytes
 * mean; the call catalogue and the server sit above it. docs/transport.md
 * draws the wire and ring layouts and says what a hostile peer can do.
 *
 * Five parts, each usable alone:
 * - framing (frame.c): a byte stream cut into [u32 magic][u32 length]
 *   [payload] frames of at most TP_FRAME_MAX bytes. A bad magic or an
 *   oversize length latches the reader dead: once the whole frames before
 *   it are taken, every read says "protocol mismatch" (KILN_ERR_IO), since
 *   nothing after a desynchronized header can be trusted. A destination too
 *   small gets KILN_ERR_LIMIT with the size needed, and the frame stays
 *   queued.
 * - the control page and the SPSC ring (ring.c; remote/stream.c puts a
 *   connection's calls on them): one 4 KiB page
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
 * The transport raises, never warns: a dead peer, a broken ring, a frame
 * cut short are errors naming what happened (and a debug line), and the
 * side that owns the connection says what they mean, once: a server
 * through its rate limiter (a client can cause them at will), a client
 * through the call that failed.
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
#include <sys/types.h>

#include "base/base.h"
#include "base/thread.h"

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
/* A reader whose buffer grew past this for a big frame gives it back once
 * that frame is taken and nothing is left: an idle connection holds no
 * memory for the largest frame it ever had. */
#define TP_FRAME_KEEP (256u << 10)
struct tp_frame_reader {
    uint8_t *buf;        /* owned; bytes fed and not yet taken, from `at` to `len` */
    size_t at, len, cap;
    size_t hdr;          /* buf index of the first header not yet checked */
    bool dead;           /* latched: a header was bad; only the frames before it come out */
    char why[160];       /* what was bad, for every later error */
    uint64_t offset;     /* stream offset of buf[at], for messages */
};
void tp_frame_reader_init(struct tp_frame_reader *r);
void tp_frame_reader_finish(struct tp_frame_reader *r);
/* Appends n bytes of the stream. KILN_ERR_IO (protocol mismatch, naming the
 * stream offset and the bad field) when a header in them is bad, and for
 * every call once dead (the bytes from the bad header on are dropped);
 * KILN_ERR_NO_MEMORY when the buffer cannot grow (the bytes are then not
 * taken, and the reader is not dead). */
kiln_result tp_frame_feed(struct tp_frame_reader *r, const void *data, size_t n);
/* Bytes the reader needs before its next frame is whole (at least 1 when
 * no frame is whole; 0 when one is): how much a socket read may take
 * without reading past the frame. Once dead no more come. */
size_t tp_frame_want(const struct tp_frame_reader *r);
/* Takes the next whole frame. KILN_OK: its payload copied to dst, *len its
 * size. KILN_ERR_LIMIT: cap is smaller than the frame, *len the size
 * needed, the frame still queued. KILN_ERR_PENDING: no whole frame yet
 * (*len 0). KILN_ERR_IO when dead and no whole frame is left. */
kiln_result tp_frame_take(struct tp_frame_reader *r, void *dst, size_t cap, size_t *len);

/* ---- the control page ------------------------------------------------------------- */

/* One 4 KiB page at the start of the shared segment. Each group of fields
 * that one side writes sits on a cache line of its own, so the two sides
 * never write one line; the parked flags, which both sides write (the
 * sleeper sets its flag, the other side clears it to wake it), have a line
 * each. Offsets are pinned below and by test_ring. Every field is read by
 * the other side once into a local and validated there: none is trusted. */
#define TP_CACHE_LINE 64
#define TP_CONTROL_SIZE 4096
#define TP_CONTROL_MAGIC 0x434e4c4bu   /* "KLNC" */
#define TP_CONTROL_VERSION 1
#define TP_EVENT_SLOTS 32
#define TP_EVENT_DATA 48

/* One ring's cursors: byte counts since the ring began, never wrapped (a
 * position in the ring is cursor & (size - 1)), so a stale or torn value
 * can never look like a valid earlier one. head >= applied >= retired. */
struct tp_ring_ctl {
    /* written by the producer */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t head;   /* bytes published */
    _Atomic uint64_t submitted_seq;                  /* records published */
    /* written by the consumer */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t applied;   /* bytes read and handed on */
    _Atomic uint64_t retired;                           /* bytes done with: the producer may write there again */
    _Atomic uint64_t applied_seq, retired_seq;          /* records applied, retired */
    /* set by the consumer before it sleeps, cleared by the producer to wake it */
    _Alignas(TP_CACHE_LINE) _Atomic uint32_t consumer_parked;
    /* set by the producer before it sleeps for space, cleared by the consumer */
    _Alignas(TP_CACHE_LINE) _Atomic uint32_t producer_parked;
};

/* An event, server to client (a completion, a notice): kind 0 is never
 * sent; size bytes of data are meaningful. */
struct tp_event {
    uint32_t kind;
    uint32_t size;
    uint64_t serial;
    uint8_t data[TP_EVENT_DATA];
};

struct tp_control {
    /* 0x000, written by the creator before the peer sees the page; epoch and
     * generation by the server only */
    _Alignas(TP_CACHE_LINE) uint32_t magic;
    uint32_t version, size, flags;
    uint64_t cmd_ring_size, stage_ring_size;   /* bytes; each a power of two */
    _Atomic uint64_t epoch;        /* the server's start count: a restarted server bumps it */
    _Atomic uint64_t generation;   /* the rings' generation: bumped when the rings are reset */
    /* 0x040, written by the client */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t client_heartbeat;
    _Atomic uint64_t client_frame_serial;   /* the last frame the client submitted */
    /* 0x080, written by the server */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t server_heartbeat;
    _Atomic uint64_t completed_frame_serial;   /* the last frame whose work finished */
    /* 0x0c0: the command ring (client produces, server consumes); 0x1c0: the
     * stage ring (bulk data, the same way) */
    struct tp_ring_ctl cmd, stage;
    /* 0x2c0, written by the server: the event ring's head and counts */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t event_head;
    _Atomic uint64_t event_dropped;   /* events not posted because the ring was full */
    /* 0x300, written by the client */
    _Alignas(TP_CACHE_LINE) _Atomic uint64_t event_tail;
    /* 0x340: set by the server when an event was dropped, cleared by the
     * client once it has caught up another way */
    _Alignas(TP_CACHE_LINE) _Atomic uint32_t event_full;
    uint8_t reserved0[0x400 - 0x344];
    /* 0x400: the event slots, written by the server */
    struct tp_event events[TP_EVENT_SLOTS];
    uint8_t reserved[TP_CONTROL_SIZE - 0x400 - TP_EVENT_SLOTS * sizeof(struct tp_event)];
};

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "the control page needs lock-free 32- and 64-bit atomics (they are shared between processes)");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && sizeof(_Atomic uint32_t) == 4, "atomics of plain size");
_Static_assert(sizeof(struct tp_ring_ctl) == 4 * TP_CACHE_LINE, "a ring's cursors take four lines");
_Static_assert(offsetof(struct tp_ring_ctl, head) == 0x00 && offsetof(struct tp_ring_ctl, submitted_seq) == 0x08 &&
               offsetof(struct tp_ring_ctl, applied) == 0x40 && offsetof(struct tp_ring_ctl, retired) == 0x48 &&
               offsetof(struct tp_ring_ctl, applied_seq) == 0x50 && offsetof(struct tp_ring_ctl, retired_seq) == 0x58 &&
               offsetof(struct tp_ring_ctl, consumer_parked) == 0x80 &&
               offsetof(struct tp_ring_ctl, producer_parked) == 0xc0,
               "tp_ring_ctl's offsets are part of the wire: docs/transport.md");
_Static_assert(sizeof(struct tp_event) == 64, "an event fills one line");
_Static_assert(sizeof(struct tp_control) == TP_CONTROL_SIZE && _Alignof(struct tp_control) == TP_CACHE_LINE,
               "the control page is one 4 KiB page, aligned to a cache line");
_Static_assert(offsetof(struct tp_control, magic) == 0x000 && offsetof(struct tp_control, cmd_ring_size) == 0x010 &&
               offsetof(struct tp_control, epoch) == 0x020 && offsetof(struct tp_control, generation) == 0x028 &&
               offsetof(struct tp_control, client_heartbeat) == 0x040 &&
               offsetof(struct tp_control, client_frame_serial) == 0x048 &&
               offsetof(struct tp_control, server_heartbeat) == 0x080 &&
               offsetof(struct tp_control, completed_frame_serial) == 0x088 &&
               offsetof(struct tp_control, cmd) == 0x0c0 && offsetof(struct tp_control, stage) == 0x1c0 &&
               offsetof(struct tp_control, event_head) == 0x2c0 && offsetof(struct tp_control, event_dropped) == 0x2c8 &&
               offsetof(struct tp_control, event_tail) == 0x300 && offsetof(struct tp_control, event_full) == 0x340 &&
               offsetof(struct tp_control, events) == 0x400,
               "tp_control's offsets are part of the wire: docs/transport.md");

/* Zeroes the page and writes its identity (the creator, before the peer
 * maps it). Ring sizes must be powers of two within the ring limits. */
kiln_result tp_control_init(struct tp_control *c, uint64_t cmd_ring_size, uint64_t stage_ring_size);
/* Checks a page made by the peer: magic, version, size and ring sizes
 * (each read once); the ring sizes it holds are returned only if valid. */
kiln_result tp_control_check(const struct tp_control *c, uint64_t *cmd_ring_size, uint64_t *stage_ring_size);

/* Where the rings lie in a shared segment: the control page at 0, the
 * command ring after it, the stage ring after that. */
struct tp_layout {
    uint64_t cmd_offset, cmd_size, stage_offset, stage_size;
    uint64_t total;   /* bytes the segment needs */
};
/* The layout for two ring sizes (each valid for tp_control_init). */
struct tp_layout tp_layout_of(uint64_t cmd_ring_size, uint64_t stage_ring_size);
/* Checks a peer's control page (tp_control_check) and that its rings fit a
 * segment of segment_size bytes; the layout only when both hold. */
kiln_result tp_control_layout(const struct tp_control *c, uint64_t segment_size, struct tp_layout *out);

/* ---- the SPSC ring ---------------------------------------------------------------- */

/* A record: an 8-byte header {u32 size: header and payload bytes, u32
 * kind}, the payload, zeros to the next multiple of 8. Kind 0 is the pad
 * that fills the ring to its end where a record would not fit before the
 * wrap; records never straddle it. */
#define TP_RECORD_HEADER 8u
#define TP_RECORD_PAD 0u
#define TP_RING_MIN 4096u
#define TP_RING_MAX (1ull << 30)
/* A record takes at most half the ring, so one always fits once the ring
 * is drained, pad included. */
#define TP_RECORD_MAX(ring_size) ((ring_size) / 2)

/* Peer liveness, for every wait on shared memory: the peer's heartbeat
 * counter in the control page must move within timeout_ns, and its socket
 * (when fd >= 0) must not be closed. */
struct tp_peer {
    const _Atomic uint64_t *heartbeat;   /* borrowed; NULL: not watched */
    int fd;                              /* borrowed; -1: none */
    uint64_t timeout_ns;
    const _Atomic bool *stop;            /* borrowed; NULL: none. Once set, the peer counts as gone (our side ends) */
    uint64_t last, since_ns;             /* the value last seen, and when it last moved */
    bool dead;
    char why[160];
};
/* KILN_IPC_PEER_TIMEOUT_MS, default 5000: how long a heartbeat may stand still. */
#define TP_PEER_TIMEOUT_MS_DEFAULT 5000
void tp_peer_init(struct tp_peer *p, const _Atomic uint64_t *heartbeat, int fd, uint64_t timeout_ns);
/* KILN_OK while the peer lives; KILN_ERR_IO once it is seen dead (then for
 * ever), saying why: its socket closed, its heartbeat stood still past the
 * timeout, or this side's stop flag was set. */
kiln_result tp_peer_check(struct tp_peer *p);

/* A side's heartbeat: a thread that adds 1 to counter every period_ns
 * (KILN_IPC_PEER_TIMEOUT_MS / 8 by default) while the process lives. */
struct tp_heartbeat {
    _Atomic uint64_t *counter;   /* borrowed; in the control page */
    uint64_t period_ns;
    struct kthread thread;
    pthread_mutex_t mu;          /* protects stop */
    pthread_cond_t cond;
    bool stop, running;
};
kiln_result tp_heartbeat_start(struct tp_heartbeat *h, _Atomic uint64_t *counter, uint64_t period_ns);
void tp_heartbeat_stop(struct tp_heartbeat *h);

/* One side's view of one ring. The side keeps its own cursor locally (the
 * producer its head, the consumer its tail) and never reads it back from
 * shared memory; the other side's cursor is read once per use, and must
 * lie between what was seen before and a ring's size from its own. */
struct tp_ring {
    struct tp_ring_ctl *ctl;   /* borrowed */
    uint8_t *data;             /* borrowed: size bytes, 8-aligned */
    uint64_t size, mask;
    uint32_t max_kind;         /* kinds 1..max_kind are records; anything else breaks the ring */
    uint32_t spin_us;          /* KILN_IPC_SPIN_US, default 50: spin this long before parking */
    struct tp_peer *peer;      /* borrowed, may be NULL: checked while waiting */
    /* producer */
    uint64_t head;             /* written, published or not */
    uint64_t published;        /* head as last published */
    uint64_t seq, published_seq;   /* records written, records published */
    uint64_t retired_seen;     /* the consumer's retired tail, as last read and checked */
    uint64_t want;             /* bytes a reserve waits for */
    /* consumer */
    uint64_t tail;             /* read (= applied) */
    uint64_t retired;          /* retired, as last published */
    uint64_t applied_seq, retired_seq;
    uint64_t head_seen;        /* the producer's head, as last read and checked */
    bool broken;               /* latched: the peer broke the ring; every call fails */
    char why[160];
    /* counters: parks, wakes sent, spins that found work */
    uint64_t parks, wakes, spin_hits;
};
#define TP_SPIN_US_DEFAULT 50

/* A view of a ring of size bytes at data, with its cursors in ctl. The
 * ring starts empty (tp_control_init zeroed the cursors); local cursors
 * start at 0. size: a power of two, TP_RING_MIN..TP_RING_MAX. */
kiln_result tp_ring_init(struct tp_ring *r, struct tp_ring_ctl *ctl, void *data, uint64_t size, uint32_t max_kind);

/* Producer. Reserves a record of payload bytes of kind (1..max_kind) and
 * returns where its payload goes; it is not visible to the consumer until
 * tp_ring_publish. Waits for space up to timeout_ns (publishing what was
 * written first): KILN_ERR_TIMEOUT, or KILN_ERR_IO when the peer dies or
 * the ring is broken. KILN_ERR_LIMIT past TP_RECORD_MAX. */
kiln_result tp_ring_reserve(struct tp_ring *r, uint32_t kind, size_t payload, uint64_t timeout_ns, void **p);
/* tp_ring_reserve and a copy of payload. */
kiln_result tp_ring_write(struct tp_ring *r, uint32_t kind, const void *payload, size_t n, uint64_t timeout_ns);
/* Makes every record written so far visible, then wakes the consumer if it
 * sleeps (publish, full fence, read the parked flag). */
void tp_ring_publish(struct tp_ring *r);

/* Consumer. A record read from the ring: copied out, then checked. */
struct tp_record {
    uint32_t kind;
    uint32_t size;        /* payload bytes (copied to dst) */
    uint64_t end;         /* the ring cursor just past it */
    uint64_t seq;         /* its number: records read from this ring, it included */
};
/* Copies the next record's payload to dst, after checking its header
 * (copied out first): 8-aligned, within what the producer published, not
 * across the wrap, a known kind, a pad exactly to the wrap. A header that
 * fails breaks the ring (KILN_ERR_IO naming the cursor and the field) and
 * nothing is handed out. KILN_ERR_PENDING: empty. KILN_ERR_LIMIT: cap is
 * smaller than the payload, rec->size says how much is needed, the record
 * stays. The record counts as applied once read. */
kiln_result tp_ring_read(struct tp_ring *r, void *dst, size_t cap, struct tp_record *rec);
/* Retires every record read up to and including last (one this ring
 * handed out, not before the last retired): its bytes go back to the
 * producer, which is woken if it sleeps for space. KILN_ERR_INVALID for a
 * record this ring did not hand out or one already retired past. */
kiln_result tp_ring_retire(struct tp_ring *r, const struct tp_record *last);
/* Declares the ring broken (a layer above found a payload it refuses):
 * every later call fails with why. */
kiln_result tp_ring_break(struct tp_ring *r, const char *why);
/* Waits until a record can be read (KILN_OK), spinning spin_us first, then
 * parked on the futex in slices, checking the peer between them:
 * KILN_ERR_TIMEOUT after timeout_ns, KILN_ERR_IO when the peer is dead or
 * the ring broken. */
kiln_result tp_ring_wait(struct tp_ring *r, uint64_t timeout_ns);
#ifdef KILN_TEST_HOOKS
/* The longest sleep between peer checks (20 ms; 0 restores it). */
void tp_test_park_slice(uint64_t ns);
#endif

/* The event ring in the control page: the server posts, the client takes. */
struct tp_events {
    struct tp_control *c;   /* borrowed */
    uint64_t head, tail;    /* local cursors: the poster's head, the taker's tail */
    bool broken;
    char why[128];
};
void tp_events_init(struct tp_events *e, struct tp_control *c);
/* Posts ev (kind != 0, size <= TP_EVENT_DATA). False when the ring is full:
 * the event is dropped, counted in event_dropped, and event_full set. */
bool tp_event_post(struct tp_events *e, const struct tp_event *ev);
/* KILN_OK with *ev copied out and checked; KILN_ERR_PENDING when none;
 * KILN_ERR_IO when the poster broke the ring. */
kiln_result tp_event_take(struct tp_events *e, struct tp_event *ev);

/* ---- segments ------------------------------------------------------------------------ */

/* Shared memory to hand to the peer: a memfd sealed against shrinking and
 * growing (so the peer cannot cut it under a mapping, which would turn a
 * read into SIGBUS), or, where memfd is missing, a POSIX shm object opened
 * and unlinked at once (no name is left behind; no seals exist for it). */
#define TP_SEGMENT_MAX (16ull << 30)
enum tp_segment_flags {
    TP_SEGMENT_SHM = 1u << 0,        /* create: use the shm_open fallback */
    TP_SEGMENT_UNSEALED_OK = 1u << 1 /* adopt: take a segment without seals (the fallback's) */
};
struct tp_segment {
    int fd;            /* owned */
    uint8_t *map;      /* size bytes, shared, read and write */
    uint64_t size;
    bool sealed;       /* sealed against shrinking and growing */
};
/* Makes a segment of size bytes (1..TP_SEGMENT_MAX), zero-filled and
 * mapped. name shows in /proc/PID/fd, for people. */
kiln_result tp_segment_create(struct tp_segment *s, const char *name, uint64_t size, unsigned flags);
/* Maps a segment received from the peer, announced as size bytes. The
 * descriptor is consumed: kept in s on success, closed on failure.
 * Refused: a descriptor that is not a regular file, one whose fstat size is
 * short of size, one not sealed against shrinking (unless
 * TP_SEGMENT_UNSEALED_OK). */
kiln_result tp_segment_adopt(struct tp_segment *s, int fd, uint64_t size, unsigned flags);
void tp_segment_finish(struct tp_segment *s);

/* ---- descriptor passing -------------------------------------------------------------- */

/* A sideband message, one datagram on a SOCK_DGRAM socketpair of its own
 * (message boundaries kept, ancillary data never split from its bytes):
 *   [u32 magic "KLNS"][u32 descriptor count][u32 payload bytes][u32 0][payload]
 * with the descriptors in one SCM_RIGHTS. Descriptors received are the
 * caller's to close; a message that fails any check closes every one. */
#define TP_SIDEBAND_MAGIC 0x534e4c4bu
#define TP_SIDEBAND_HEADER 16u
#define TP_SIDEBAND_MAX 4096u                                   /* datagram bytes */
#define TP_SIDEBAND_PAYLOAD (TP_SIDEBAND_MAX - TP_SIDEBAND_HEADER)
#define TP_FDS_MAX 16u
/* The control buffer recvmsg gets: room for TP_FDS_MAX descriptors and no
 * more (CMSG_SPACE(TP_FDS_MAX * sizeof(int)) on Linux), so a message with
 * more comes with MSG_CTRUNC. */
#define TP_SIDEBAND_CONTROL 80u

/* What one datagram held. fds holds every descriptor found in its control
 * data, also when the message failed (the caller closes them). */
struct tp_sideband {
    const uint8_t *payload;   /* into the datagram */
    uint32_t payload_len;
    int fds[TP_SIDEBAND_CONTROL / sizeof(int)];
    uint32_t nfds;
};
/* Parses a received datagram: data/len its bytes, control/controllen its
 * ancillary data, msg_flags recvmsg's flags. Pure: it closes nothing.
 * KILN_ERR_IO naming what was wrong: MSG_CTRUNC or MSG_TRUNC, ancillary
 * data other than SCM_RIGHTS, a short or bad header, a count that is not
 * the number of descriptors, a payload length that is not the rest. */
kiln_result tp_sideband_parse(const uint8_t *data, size_t len, const void *control, size_t controllen, int msg_flags,
                              struct tp_sideband *out);
/* Sends len bytes (at most TP_SIDEBAND_PAYLOAD) and n descriptors (at most
 * TP_FDS_MAX; the caller keeps its own) as one message, waiting at most
 * timeout_ns for room. */
kiln_result tp_fd_send(int sock, const void *msg, size_t len, const int *fds, uint32_t n, uint64_t timeout_ns);
/* Receives one message: its payload into msg (*len bytes) and its
 * descriptors into fds (*n, each close-on-exec, now the caller's). cap
 * must be at least TP_SIDEBAND_PAYLOAD and fd_cap at least TP_FDS_MAX,
 * refused (KILN_ERR_LIMIT) before anything is received so no message is
 * ever half taken. KILN_ERR_TIMEOUT when none came within timeout_ns,
 * KILN_ERR_IO when the peer sent a bad message (its descriptors closed).
 * A datagram socket does not say that its peer closed: the transport
 * watches its stream socket for that. */
kiln_result tp_fd_recv(int sock, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap, uint32_t *n,
                       uint64_t timeout_ns);

/* ---- the transport ------------------------------------------------------------------- */

/* One end of a connection: frames both ways, and sideband messages with
 * descriptors. Two implementations behind one ops table (transport.c):
 * sockets (a SOCK_STREAM for frames, a SOCK_DGRAM for descriptors) between
 * processes, and queues in one process, with the same limits (frames of at
 * most TP_FRAME_MAX bytes, sideband messages of TP_SIDEBAND_PAYLOAD bytes
 * and TP_FDS_MAX descriptors, each handed over as a new descriptor: dup()
 * in process, SCM_RIGHTS between), so whatever runs over the transport can
 * be tested in one process. Not thread-safe: one thread sends and one
 * receives on an end at a time.
 *
 * Shutdown ends sending, not receiving: frames and messages the peer sent
 * before its shutdown can still be read (usually the last one says why it
 * went), and only then does a receive say the peer closed. */
struct tp;
/* How long a send may wait for room (the peer not reading): KILN_IPC_SEND_TIMEOUT_MS, default 10000. */
#define TP_SEND_TIMEOUT_MS_DEFAULT 10000

/* An end over two connected sockets, which it takes over (closed by
 * tp_destroy, also when this fails). */
kiln_result tp_socket_create(int stream_fd, int dgram_fd, struct tp **out);
/* Both ends of a new pair of socketpairs (for tests, and before a fork). */
kiln_result tp_socket_pair(struct tp **a, struct tp **b);
/* Both ends of an in-process transport. */
kiln_result tp_inproc_pair(struct tp **a, struct tp **b);

/* "socket" or "in-process". */
const char *tp_name(const struct tp *t);
/* Sends one frame of len bytes (at most TP_FRAME_MAX), whole or not at all
 * as far as the peer can tell: a send cut short by the send timeout kills
 * the end (KILN_ERR_IO), since the stream would no longer be framed. */
kiln_result tp_send(struct tp *t, const void *data, size_t len);
/* Receives one frame: KILN_OK with *len bytes in dst; KILN_ERR_LIMIT when
 * cap is too small, *len the size needed, the frame still queued;
 * KILN_ERR_TIMEOUT when none came within timeout_ns (0: do not wait);
 * KILN_ERR_IO when the peer closed (after every frame it sent was read) or
 * broke the framing (protocol mismatch, for good). */
kiln_result tp_recv(struct tp *t, void *dst, size_t cap, size_t *len, uint64_t timeout_ns);
/* A sideband message: payload and descriptors (the caller keeps its own;
 * the peer gets new ones). */
kiln_result tp_send_fds(struct tp *t, const void *msg, size_t len, const int *fds, uint32_t n);
/* Receives a sideband message as tp_fd_recv says (buffers checked before
 * anything is taken), or KILN_ERR_IO once the peer closed and none is left. */
kiln_result tp_recv_fds(struct tp *t, void *msg, size_t cap, size_t *len, int *fds, uint32_t fd_cap, uint32_t *n,
                        uint64_t timeout_ns);
/* Ends sending; the peer drains what was sent, then sees the end closed. */
void tp_shutdown(struct tp *t);
/* Closes the end (its descriptors, and any received and not taken). */
void tp_destroy(struct tp *t);
/* The socket whose closing means the peer is gone (for tp_peer), or -1
 * in process. */
int tp_peer_fd(const struct tp *t);

/* ---- meeting at a socket path (connect.c) ------------------------------------------- */

/* The client's first bytes on the stream: [u32 "KLNH"][u32 version], with
 * one end of a datagram socketpair attached, which carries descriptors;
 * the server's first: its answer (connect.c). 2: the answer. */
#define TP_HELLO_VERSION 2u
#define TP_REFUSAL_MAX 240u   /* bytes of a refusal's reason */
/* A listening socket at path, born 0600 and then made mode (0600, or
 * 0666 for a server that admits other uids by their credentials). A
 * socket left there by a server that died is replaced; one a server
 * listens on is KILN_ERR_BUSY; anything else at path is KILN_ERR_IO and
 * left alone. The folder is the caller's to make. */
kiln_result tp_listen(const char *path, mode_t mode, int *fd);
/* Connects to a server listening at path, sends the hello and waits for
 * the answer (all within timeout_ns): a refusal comes back with the
 * server's code and reason ("kiln server at 'PATH' refused the
 * connection: ..."), a server of another version as KILN_ERR_IO naming
 * both versions, no answer as KILN_ERR_TIMEOUT. */
kiln_result tp_connect(const char *path, uint64_t timeout_ns, struct tp **out);
/* The server's answer on a connection whose hello was read: refusal 0
 * admits the client; a kiln_result refuses it, why (cut to
 * TP_REFUSAL_MAX bytes) saying so. Never blocks. conn is borrowed. */
kiln_result tp_hello_answer(int conn, kiln_result refusal, const char *why);
/* Refuses a connection accept() gave without serving it (the server is
 * full, or out of descriptors): its hello, if in, is read first (so the
 * close does not reset the connection before the client reads the
 * answer; the descriptor it carries is closed), then the answer goes and
 * conn is closed. Never blocks. */
void tp_hello_refuse(int conn, kiln_result code, const char *why);
/* Takes a connection accept() gave (consumed: closed on failure), reads
 * the peer's credentials (SO_PEERCRED) and its hello within timeout_ns.
 * KILN_ERR_IO "protocol mismatch" for anything but a hello with one
 * datagram socket (a client of another version is answered so first).
 * The server then answers with tp_hello_answer on tp_peer_fd(*out). */
struct ucred;
kiln_result tp_accept_hello(int conn, uint64_t timeout_ns, struct tp **out, struct ucred *peer);

#endif
