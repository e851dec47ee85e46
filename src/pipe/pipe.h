/* SPDX-License-Identifier: MIT */
/*
 * pipe: what a call looks like on the wire between a kiln client and a
 * kiln server. The catalogue (calls.def) lists every public call that acts
 * on a context; this header turns it into opcodes, names, classes and the
 * record each call's request carries, and defines the two message heads
 * and the per-connection counters. Nothing here moves bytes (transport/)
 * or runs a call (remote/).
 *
 * A request is one transport frame:
 *   [struct pipe_req][the call's record, rec_size bytes][tail, tail_size bytes]
 * and its reply one frame:
 *   [struct pipe_rep][message, msg_size bytes][out, out_size bytes]
 * The record is a fixed struct of plain numbers and handles (8-byte
 * aligned, sizes asserted below). The tail carries what has no fixed size:
 * strings as [u32 length][bytes] (length PIPE_NULL: a NULL pointer),
 * arrays, and inline data. The message is kiln_last_error's text when the
 * result is an error. Both ends run on one host, so numbers are in the
 * host's order; the server still trusts nothing: every size is checked
 * against what arrived, every handle against the caller's own pools.
 */
#ifndef KILN_PIPE_H
#define KILN_PIPE_H

#include <stdint.h>

#include "base/base.h"

/* The protocol's version: a client and a server of other versions do not
 * talk (the server refuses context_create, naming both). */
#define PIPE_VERSION 7u   /* 3: calls go on the command stream (remote/stream.c); 4: the client mints
                            * scheme and node handles and numbers its tickets; 5: a set_param names
                            * the program its slot was checked against; 6: a program's language,
                            * preamble and workgroup size, kiln_caps' shader_features; 7: the
                            * interface's push_float_words, kiln_format's 20 new formats, the
                            * context desc's check and robust, an image's layers, levels and cube,
                            * a node's reaches, buffer_address */

enum pipe_class { PIPE_CLASS_OBJECT, PIPE_CLASS_DATA, PIPE_CLASS_QUERY, PIPE_CLASS_STATE, PIPE_CLASS_SUBMIT,
                  PIPE_CLASS_WAIT, PIPE_CLASS_ARCHIVE, PIPE_CLASSES };

enum pipe_flags {
    PIPE_F_MEMO = 1u << 0,       /* its answer never changes once had: the client may keep it */
    PIPE_F_WAITS = 1u << 1,      /* may wait long: the server waits in slices, letting others run */
    PIPE_F_DATA_IN = 1u << 2,    /* carries the caller's bytes (inline, or in the segment) */
    PIPE_F_DATA_OUT = 1u << 3,   /* returns bytes for the caller (likewise) */
};

enum pipe_op {
#define X(name, record, class, flags, ...) PIPE_OP_##name,
#define L(name, record, class, flags) X(name, record, class, flags, )
#include "context/calls.def"
#undef L
#undef X
    PIPE_OPS
};
/* Not a call of the catalogue: the client's request, as a frame after
 * context_create, to move the connection onto the command stream whose
 * segment it just announced (remote_private.h). */
#define PIPE_OP_STREAM 0x4d525453u

/* ---- records ---------------------------------------------------------------------- */

#define PIPE_NULL 0xffffffffu   /* a string length meaning "NULL" */

struct pipe_rec_none { uint64_t reserved; };             /* 0 */
struct pipe_rec_handle { uint64_t id; };
struct pipe_rec_pair { uint64_t a, b; };                  /* node_set_program: node, program */
/* program: the program whose words the client checked slot against (a
 * program's handle names one interface for good, so it is the node's
 * interface serial); the server refuses the word if the node runs another
 * (a swap the client ran ahead was refused). 0: not checked by the client. */
struct pipe_rec_param { uint64_t node; uint32_t slot, word; uint64_t program; };
struct pipe_rec_list { uint64_t id; uint32_t first, cap; };   /* id: the object listed, where there is one */
struct pipe_rec_wait { uint64_t ticket, timeout_ns; };
/* A client numbers its tickets itself, 1, 2, 3, ..., one per submit
 * (ticket; 0: the server numbers it, and answers the number), so a submit
 * needs no answer; the server maps them onto the device's timeline. */
struct pipe_rec_submit { uint64_t scheme, ticket; };

/* Bulk data: inline (the request's tail, or the reply's out) or in the
 * connection's segment, from its start. */
enum pipe_via { PIPE_VIA_INLINE = 0, PIPE_VIA_SEGMENT = 1 };
#define PIPE_INLINE_MAX (1u << 20)   /* bytes moved inline at most; more go through the segment */
struct pipe_rec_range {
    uint64_t id, offset, size;   /* offset: a buffer's; an image part's (PIPE_PART); 0 for a whole image */
    uint32_t via;                /* enum pipe_via */
    uint32_t reserved;
    uint64_t segment;            /* via the segment: the serial it was announced with */
};

struct pipe_rec_buffer { uint64_t size; uint32_t usage, label_len; };   /* tail: label */
struct pipe_rec_image {
    uint32_t width, height, depth, dims, format, usage, label_len, reserved;   /* tail: label */
    uint32_t layers, levels, cube, reserved2;
};
/* An image part in a range record's offset: level in bits 0..15, the first
 * layer in 16..39, the layer count in 40..63. */
#define PIPE_PART(level, layer, layers) \
    ((uint64_t)(level) | (uint64_t)(layer) << 16 | (uint64_t)(layers) << 40)
#define PIPE_PART_LEVEL(o) ((uint32_t)((o) & 0xffffu))
#define PIPE_PART_LAYER(o) ((uint32_t)(((o) >> 16) & 0xffffffu))
#define PIPE_PART_LAYERS(o) ((uint32_t)((o) >> 40))

/* A client mints its scheme and node handles (id; 0: the server's pool
 * mints one, for a client that mints none) from a pool of the type, serial
 * and floor context_create answered (struct pipe_context_made): so a call
 * that makes one needs no answer. tail: label */
struct pipe_rec_scheme { uint64_t id; uint32_t label_len, reserved; };
/* tail: binding_count kiln_binding structs, param_count words,
 * reach_count buffer handles, the label */
struct pipe_rec_node {
    uint64_t node;          /* minted by the client (see pipe_rec_scheme) */
    uint64_t scheme, program;
    uint32_t groups[3];
    uint32_t binding_count, param_count, label_len;
    uint32_t reach_count, reserved;
};
/* tail: the source (a SPIR-V module's bytes where language is SPIR-V),
 * name, entry, preamble (or its NULL); each define's name and value; each
 * include folder; constant_count kiln_spec_constant pairs */
struct pipe_rec_program {
    uint32_t source_len, name_len, entry_len;
    uint32_t define_count, include_dir_count, constant_count;
    int32_t optimize;
    uint32_t language;   /* a kiln_language (the client sends it resolved; 0, AUTO, is taken) */
    uint32_t workgroup_size[3];
    uint32_t reserved;
};
/* kiln_context_desc's numbers; tail: device, archive_dir,
 * archive_readonly, trace_path. version is PIPE_VERSION. */
struct pipe_rec_context {
    int32_t backend, validation, pending;
    uint32_t compile_threads;
    int32_t specialization;
    uint32_t device_timeout_ms;
    int32_t archive, archive_qa;
    uint64_t archive_max_size, giant_words;
    uint32_t giant_compiles, alone_tries;
    double slow_compile_s;
    int32_t worker_caches, spec_verify, skip_log, force_staging;
    uint32_t device_len, archive_dir_len, archive_readonly_len, trace_path_len;
    uint32_t version, reserved;
    int32_t check, robust;
};
/* scheme_add_node's answer: the node, and its param words once final
 * (its program ready), else PIPE_WORDS_UNKNOWN. */
#define PIPE_WORDS_UNKNOWN 0xffffffffu
/* context_create's answer: the serial and generation floor of the
 * context's handles, for the client's own scheme and node pools. */
struct pipe_context_made { uint32_t serial, floor; };
struct pipe_node_made { uint64_t id; uint32_t param_words, own_block; };   /* own_block: the program's own push_constant block */
struct pipe_rec_tidy { kiln_archive_tidy_desc desc; };   /* plain numbers */
struct pipe_rec_precompile { double stall_s; };

#define X(name, record, class, flags, ...)                                                              \
    _Static_assert(sizeof(struct pipe_rec_##record) % 8 == 0 && _Alignof(struct pipe_rec_##record) <= 8, \
                   "pipe record of " #name ": a multiple of 8 bytes, 8-aligned at most");
#define L(name, record, class, flags) X(name, record, class, flags, )
#include "context/calls.def"
#undef L
#undef X
_Static_assert(sizeof(struct pipe_rec_range) == 40 && sizeof(struct pipe_rec_node) == 56 &&
                   sizeof(struct pipe_rec_program) == 48 && sizeof(struct pipe_rec_context) == 112 &&
                   sizeof(struct pipe_rec_tidy) == 32 && sizeof(struct pipe_rec_image) == 48 &&
                   sizeof(struct pipe_rec_param) == 24,
               "pipe records are part of the wire: a change is a new PIPE_VERSION");

/* ---- messages ----------------------------------------------------------------------- */

struct pipe_req {
    uint32_t op;          /* enum pipe_op */
    uint32_t rec_size;    /* must be the op's record size */
    uint32_t tail_size;
    uint32_t flags;       /* enum pipe_req_flags */
    uint64_t seq;         /* the client's call count; the reply carries it back */
};
enum pipe_req_flags {
    /* Run ahead (on the command stream only): the client does not wait for
     * the answer. The server answers only an error, which the client
     * reports at its next synchronization point (kiln.h, "Run-ahead"). */
    PIPE_REQ_POSTED = 1u << 0,
};
struct pipe_rep {
    uint32_t op;
    int32_t result;       /* kiln_result */
    uint32_t msg_size;    /* the error message's bytes (no NUL) */
    uint32_t out_size;
    uint64_t seq;
};
_Static_assert(sizeof(struct pipe_req) == 24 && sizeof(struct pipe_rep) == 24, "pipe heads are part of the wire");

/* A reply's most out bytes besides bulk data: the largest fixed answer
 * (a program interface) and lists (capped to fit). */
#define PIPE_OUT_MAX (256u << 10)

/* Per row: its name ("buffer_upload"), class, flags and record size. An op
 * past the catalogue gets NULL ("stream" for PIPE_OP_STREAM), PIPE_CLASSES,
 * 0 and 0. */
const char *pipe_op_name(uint32_t op);
enum pipe_class pipe_op_class(uint32_t op);
uint32_t pipe_op_flags(uint32_t op);
uint32_t pipe_op_rec_size(uint32_t op);
/* "object", "data", ... ("?" past the last). */
const char *pipe_class_name(uint32_t cls);

/* ---- strings in a tail ---------------------------------------------------------------- */

/* Writes s as [u32 length][bytes]; NULL as [PIPE_NULL]. n is s's length
 * (strlen when s is a C string: pass SIZE_MAX). */
void pipe_put_str(struct bytes *b, const char *s, size_t n);

/* Where decoded strings live: at most one allocation per request, made by
 * its first string (a request without strings, a submit, allocates
 * nothing), big enough for every string its tail can hold with a NUL
 * each. */
struct pipe_arena {
    char *p;
    size_t used, cap;
};
void pipe_arena_init(struct pipe_arena *a, size_t tail_size);
void pipe_arena_finish(struct pipe_arena *a);
/* Reads a string written by pipe_put_str: *out is a NUL-terminated copy in
 * the arena (or NULL), *len its length. KILN_ERR_INVALID naming `what` when
 * the tail ends early or the string holds a NUL and may_hold_nul is false;
 * KILN_ERR_NO_MEMORY when the arena cannot be made. */
kiln_result pipe_read_str(struct bytes_reader *r, struct pipe_arena *a, const char *what, bool may_hold_nul,
                          const char **out, size_t *len);

/* ---- counters ------------------------------------------------------------------------ */

/* One connection's counts, kept by the client and, of the same names, by
 * the server for each client: off (KILN_PIPE_STATS and
 * KILN_PIPE_STATS_FILE unset, in the process that keeps them; a server
 * reads them at its start) they cost one branch per call. A summary goes
 * out every PIPE_STATS_EVERY submits (the server's also when the client
 * goes): a log line (KILN_PIPE_STATS=1) and a JSON line appended to
 * KILN_PIPE_STATS_FILE, its "side" "client" or "server". The names are
 * pinned by test_pipe. */
#define PIPE_STATS_EVERY 120u
#define PIPE_STALL_NS (1000u * 1000u)   /* a wait for the server's host lock past this is a stall */
enum pipe_side { PIPE_SIDE_CLIENT, PIPE_SIDE_SERVER };
struct pipe_stats {
    uint64_t calls[PIPE_CLASSES];
    uint64_t bytes_sent[PIPE_CLASSES];       /* frames this side sent: requests, or replies */
    uint64_t bytes_received[PIPE_CLASSES];   /* frames it received */
    uint64_t segment_bytes;                  /* bulk data through the segment, both ways */
    uint64_t memo_hits, memo_misses;         /* the client's: PIPE_F_MEMO answers kept, and asked for */
    uint64_t refused;                        /* calls the server answered with an error */
    uint64_t posted;                         /* calls run ahead: sent (client), applied (server) with no answer awaited */
    uint64_t deferred;                       /* run-ahead calls that failed: errors reported at a later call */
    uint64_t submits;
    /* The server's: */
    uint64_t applied;                        /* requests applied */
    uint64_t stalls;                         /* times a call waited past PIPE_STALL_NS for the host lock */
    uint64_t stalled_ns;                     /* how long those waits took, all told */
    uint64_t imported_bytes;                 /* bytes the device copied between buffers and the imported data segment */
    uint64_t paced;                          /* times a call waited for the client's own earlier work, at its bound */
    uint64_t paced_ns;                       /* how long those waits took, all told */
};
/* Writes the counts as one JSON object (no newline) into buf; returns the
 * length it needed (as snprintf). who: the server's name for the client
 * (a server's counts), else NULL. */
int pipe_stats_json(const struct pipe_stats *s, enum pipe_side side, const char *who, char *buf, size_t cap);
/* One line for people. */
int pipe_stats_line(const struct pipe_stats *s, enum pipe_side side, const char *who, char *buf, size_t cap);
/* The summary: the line logged (as a warning, so it shows by default)
 * when log, the JSON line appended to file when not NULL; then the counts
 * start again from zero. */
void pipe_stats_flush(struct pipe_stats *s, enum pipe_side side, const char *who, bool log, const char *file);

#endif
