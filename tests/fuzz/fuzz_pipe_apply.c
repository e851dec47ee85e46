/* SPDX-License-Identifier: MIT */
/*
 * fuzz_pipe_apply.c: fuzz target for the server's applier (src/remote/
 * apply.c), which meets every byte a client sends. One server host on the
 * mock backend is made once per process; each input is one client of it:
 * opened, fed request frames, closed (which frees whatever its context
 * held, so the leak check at exit sees every client's objects gone).
 *
 * The input: byte 0 is flags (bit 0: do not begin with the harness's own
 * valid context_create, so calls before one are tried too; bit 1: through
 * the command stream, below); the rest is request frames, each [u32
 * length][that many bytes], the length clamped to what is left. Handles
 * differ between runs (they carry the context's serial), so any 8-aligned
 * 64-bit word past a frame's head of the form MARK | k is replaced by the
 * k-th id (mod their count) that this input's replies returned: seeds name
 * their objects so and stay valid.
 *
 * Through the command stream (bit 1), as a client reaches the server after
 * its handshake: the harness makes a stream of 4 KiB rings as a client
 * does (stream_make), the server's side adopts the same sealed segment
 * (stream_adopt), and each frame goes as a record of the command ring; the
 * server's side takes every record ready, as the connection's loop does (a
 * STREAM_MSG record is applied, a STREAM_FRAME record announces the frame
 * that a message past half a ring travels in, here the input's next one),
 * and its reply goes back on the return ring, where the client's side must
 * read the same bytes. A length word with bit 31 set is a scribble
 * instead of a frame: the next 12 bytes are [u32 offset][u64 value], and
 * the value is written into the shared segment at offset (mod its size),
 * as a hostile client may at any moment, so cursors, headers and control
 * fields are fuzzed too; with bit 30 set the frame goes as a STREAM_FRAME
 * record (an announcement that lies). Whatever a scribble does, the
 * server's side must refuse it with a reason or carry on, never crash or
 * read outside the segment; after one, replies may differ from what the
 * server sent (the client's view of the return ring was scribbled too).
 *
 * A crash, a sanitizer report or a broken promise is a bug: every reply
 * is a whole reply (head, message, out of the sizes it says), echoes the
 * op and seq of a request that had a whole head, carries 0 or a kiln_result
 * error, an error with a message saying why and no out; the connection is
 * ended only by context_destroy or a protocol mismatch. KILN_FUZZ_TRACE=1
 * prints each reply, for checking what a seed reaches. The seeds in
 * corpus/fuzz_pipe_apply/ come from fuzz_write_seeds below
 * (fuzz_pipe_apply_replay --write-seeds DIR), besides inputs the fuzzer
 * found that once broke a promise.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipe/pipe.h"
#include "remote/remote.h"
#include "remote/remote_private.h"

/* A handle placeholder: the high 48 bits; the low 16 pick an id. */
#define MARK 0x4b494c4e48440000ull
#define MARK_MASK 0xffffffffffff0000ull
#define IDS_MAX 64

static struct srv *host;
static bool trace;   /* KILN_FUZZ_TRACE=1: each reply printed (for writing seeds) */

static void host_done(void)
{
    srv_destroy(host);
    host = NULL;
}

/* The host, made at the first input: the mock device, no archive on disk,
 * one compile thread, and quotas small enough that no input asks the
 * allocator for more than the fuzzer lets it have. */
static struct srv *host_get(void)
{
    if (host)
        return host;
    kiln_set_log_level(KILN_LOG_ERROR);
    setenv("KILN_IPC_RING_KIB", "4", 1);   /* the stream's rings: 4 KiB, so records wrap and big ones go as frames */
    trace = getenv("KILN_FUZZ_TRACE") && !strcmp(getenv("KILN_FUZZ_TRACE"), "1");
    kiln_context_desc cd = {.backend = KILN_BACKEND_MOCK, .archive = -1, .compile_threads = 1,
                            .specialization = -1};
    kiln_server_desc sd = {.context = &cd, .max_objects = 256, .max_bytes = 64u << 20, .max_compiles = 8};
    if (srv_create(&sd, &host) != KILN_OK) {
        fprintf(stderr, "fuzz_pipe_apply: no mock server: %s\n", kiln_last_error());
        abort();
    }
    atexit(host_done);
    return host;
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

struct run {
    struct srv_client *cl;
    struct bytes rep;
    uint64_t ids[IDS_MAX];   /* ids and tickets the replies returned, in order */
    uint32_t id_count;
    /* through the command stream: the client's side and the server's */
    bool stream, scribbled;
    struct stream cst, sst;
    const uint8_t *held;   /* the frame a STREAM_FRAME record announced (the socket's, here) */
    size_t held_len;
};

static bool op_returns_id(uint32_t op)
{
    return op == PIPE_OP_buffer_create || op == PIPE_OP_image_create || op == PIPE_OP_program_create ||
           op == PIPE_OP_scheme_create || op == PIPE_OP_scheme_add_node || op == PIPE_OP_scheme_submit;
}

/* Applies one frame and checks its reply; false when the connection ends. */
static bool feed(struct run *run, const uint8_t *frame, size_t len)
{
    bool go_on = srv_apply(run->cl, frame, len, &run->rep);
    const uint8_t *p = run->rep.p;
    struct pipe_rep rep;
    if (!run->rep.oom && !run->rep.len && len >= sizeof(struct pipe_req) && go_on) {
        struct pipe_req req;
        memcpy(&req, frame, sizeof req);
        if (req.flags & PIPE_REQ_POSTED)
            return true;   /* run ahead and done: no answer */
    }
    if (run->rep.oom || run->rep.len < sizeof rep)
        abort();   /* no reply, or not even its head */
    memcpy(&rep, p, sizeof rep);
    if ((uint64_t)sizeof rep + rep.msg_size + rep.out_size != run->rep.len)
        abort();   /* the head's sizes are not the reply's */
    if (len >= sizeof(struct pipe_req)) {
        struct pipe_req req;
        memcpy(&req, frame, sizeof req);
        if (rep.op != req.op || rep.seq != req.seq)
            abort();   /* another request's reply */
    }
    const char *msg = (const char *)p + sizeof rep;
    if (trace)
        fprintf(stderr, "%s #%llu: %s %.*s\n", pipe_op_name(rep.op) ? pipe_op_name(rep.op) : "?",
                (unsigned long long)rep.seq, kiln_result_name((kiln_result)rep.result), (int)rep.msg_size, msg);
    if (rep.result > 0 || (rep.result < 0 && !strcmp(kiln_result_name((kiln_result)rep.result), "KILN_ERR_UNKNOWN")))
        abort();   /* not a kiln_result */
    if (rep.result < 0 && (rep.msg_size == 0 || rep.out_size != 0))
        abort();   /* a refusal without its reason, or with an answer */
    if (rep.result == 0 && rep.msg_size != 0)
        abort();   /* a message on success */
    if (rep.msg_size && memchr(msg, 0, rep.msg_size))
        abort();   /* the message is text */
    if (!go_on) {
        bool destroyed = rep.op == PIPE_OP_context_destroy && rep.result == KILN_OK;
        bool mismatch = rep.result == KILN_ERR_PROTOCOL && memmem(msg, rep.msg_size, "protocol mismatch", 17);
        if (!destroyed && !mismatch)
            abort();   /* the connection ended for another reason */
    }
    if (rep.result == KILN_OK && op_returns_id(rep.op)) {
        if (rep.out_size != (rep.op == PIPE_OP_scheme_add_node ? sizeof(struct pipe_node_made) : 8))
            abort();   /* a made object's answer is its id (a node's, with its param words) */
        if (run->id_count < IDS_MAX)
            memcpy(&run->ids[run->id_count++], msg + rep.msg_size, 8);
    }
    return go_on;
}

/* ---- through the command stream ------------------------------------------------------- */

static bool stream_open(struct run *run)
{
    stream_init(&run->cst);
    stream_init(&run->sst);
    if (stream_make(&run->cst) != KILN_OK)
        return false;   /* no shared memory here: nothing to feed through */
    int fd = dup(run->cst.seg.fd);
    uint64_t epoch = 0x6b696c6e00000001ull;
    if (fd < 0 || stream_adopt(&run->sst, fd, run->cst.seg.size, epoch) != KILN_OK) {
        fprintf(stderr, "fuzz_pipe_apply: the server's side refused an honest stream: %s\n", kiln_last_error());
        abort();
    }
    run->cst.epoch = epoch;   /* what the server's answer to PIPE_OP_STREAM would have said */
    return true;
}

static void stream_close(struct run *run)
{
    stream_finish(&run->sst);
    stream_finish(&run->cst);
}

/* The reply the server's side made (run->rep) sent back on the return
 * ring, and read by the client's side: the same bytes, unless a scribble
 * changed the ring under them. */
static bool reply_back(struct run *run)
{
    struct stream *s = &run->sst, *c = &run->cst;
    size_t n = run->rep.len;
    kiln_result r;
    if (n <= stream_record_max(s)) {
        r = stream_put(s, STREAM_MSG, run->rep.p, n, NULL, 0, 0);
    } else {
        uint64_t len = n;   /* a frame on the socket, which here is the harness */
        r = stream_put(s, STREAM_FRAME, &len, sizeof len, NULL, 0, 0);
    }
    if (r < 0) {
        if (!run->scribbled)
            abort();   /* an honest client's return ring refused a reply */
        return false;
    }
    uint32_t kind;
    const uint8_t *msg;
    size_t len;
    r = stream_try_get(c, &kind, &msg, &len);
    if (run->scribbled)
        return r == KILN_OK;
    if (r != KILN_OK)
        abort();   /* a reply sent and not read back */
    if (kind == STREAM_MSG && (len != n || memcmp(msg, run->rep.p, n)))
        abort();   /* read back other bytes */
    uint64_t want;
    if (kind == STREAM_FRAME && (stream_announced(msg, len, &want) != KILN_OK || want != n))
        abort();   /* an announcement of another size */
    return true;
}

/* One frame (or scribble) of the input through the stream: posted by the
 * client's side, then every record ready taken by the server's side and
 * applied. False when the connection ends. */
static bool feed_stream_records(struct run *run, uint32_t word, const uint8_t *frame, size_t len)
{
    kiln_result r = KILN_OK;
    if (!frame) {
        /* nothing to post: only what is ready */
    } else if (len > stream_record_max(&run->cst) && !(word & (1u << 30))) {
        uint64_t n = len;   /* the message travels as a frame; its record announces it */
        run->held = frame;
        run->held_len = len;
        r = stream_put(&run->cst, STREAM_FRAME, &n, sizeof n, NULL, 0, 0);
    } else {
        r = stream_put(&run->cst, word & (1u << 30) ? STREAM_FRAME : STREAM_MSG, frame,
                       KILN_MIN(len, stream_record_max(&run->cst)), NULL, 0, 0);
    }
    if (r < 0) {
        if (!run->scribbled)
            abort();   /* an honest client could not post to a ring the server drains */
        return false;
    }
    for (;;) {
        uint32_t kind;
        const uint8_t *msg;
        size_t n;
        r = stream_try_get(&run->sst, &kind, &msg, &n);
        if (r == KILN_ERR_PENDING) {
            err_clear();
            return true;
        }
        if (r < 0) {
            if (!run->scribbled || !*kiln_last_error())
                abort();   /* an honest stream broken, or a broken one without a reason */
            return false;   /* the server closes the connection */
        }
        if (kind == STREAM_FRAME) {
            uint64_t want;
            if (stream_announced(msg, n, &want) < 0 || !run->held || want != run->held_len)
                return false;   /* the server waits for the frame, then closes */
            msg = run->held;
            n = run->held_len;
        }
        run->held = NULL;
        bool go_on = feed(run, msg, n);
        if (run->rep.len && !reply_back(run))
            return false;
        if (!go_on)
            return false;
    }
}

static bool feed_stream(struct run *run, uint32_t word, const uint8_t *frame, size_t len)
{
    bool go_on = feed_stream_records(run, word, frame, len);
    run->held = NULL;   /* the frame is the caller's: an announcement not yet taken finds none */
    return go_on;
}

/* Writes value into the shared segment at offset (mod its size). */
static void scribble(struct run *run, uint32_t offset, uint64_t value)
{
    uint64_t room = run->cst.seg.size - sizeof value;
    memcpy(run->cst.seg.map + offset % room, &value, sizeof value);
    run->scribbled = true;
}

/* The harness's context_create: a zero desc (the server's backend) of this
 * protocol version, specialization off. */
static void hello(struct bytes *b)
{
    struct pipe_rec_context rec = {.specialization = -1, .version = PIPE_VERSION};
    struct bytes tail = {0};
    for (int i = 0; i < 4; i++)
        pipe_put_str(&tail, NULL, 0);
    struct pipe_req head = {.op = PIPE_OP_context_create, .rec_size = sizeof rec, .tail_size = (uint32_t)tail.len,
                            .seq = 1};
    bytes_put(b, &head, sizeof head);
    bytes_put(b, &rec, sizeof rec);
    bytes_put(b, tail.p, tail.len);
    free(tail.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct srv *s = host_get();
    struct run run = {0};
    if (srv_client_open(s, NULL, NULL, &run.cl) != KILN_OK)
        abort();
    uint8_t flags = size ? data[0] : 0;
    data += size ? 1 : 0;
    size -= size ? 1 : 0;
    bool go_on = true;
    run.stream = (flags & 2) && stream_open(&run);
    if (!(flags & 1)) {
        struct bytes h = {0};
        hello(&h);
        if (h.oom)
            abort();
        go_on = feed(&run, h.p, h.len);
        free(h.p);
        struct pipe_rep rep;
        memcpy(&rep, run.rep.p, sizeof rep);
        if (rep.result != KILN_OK) {
            fprintf(stderr, "fuzz_pipe_apply: the harness's context_create refused: %.*s\n", (int)rep.msg_size,
                    (const char *)run.rep.p + sizeof rep);
            abort();
        }
    }
    while (go_on && size >= 4) {
        uint32_t word = get_u32(data);
        data += 4;
        size -= 4;
        if (run.stream && (word & (1u << 31))) {
            if (size < 12)
                break;
            uint64_t value;
            memcpy(&value, data + 4, sizeof value);
            scribble(&run, get_u32(data), value);
            data += 12;
            size -= 12;
            go_on = feed_stream(&run, 0, NULL, 0);   /* the server's side may read at any moment */
            continue;
        }
        size_t n = KILN_MIN((size_t)(run.stream ? word & ~(3u << 30) : word), size);
        uint8_t *frame = malloc(n ? n : 1);   /* exactly n bytes: ASan sees an overread */
        if (!frame)
            abort();
        memcpy(frame, data, n);
        for (size_t at = sizeof(struct pipe_req); at + 8 <= n; at += 8) {
            uint64_t v;
            memcpy(&v, frame + at, 8);
            if ((v & MARK_MASK) == MARK && run.id_count) {
                v = run.ids[(v & 0xffff) % run.id_count];
                memcpy(frame + at, &v, 8);
            }
        }
        go_on = run.stream ? feed_stream(&run, word, frame, n) : feed(&run, frame, n);
        free(frame);
        data += n;
        size -= n;
    }
    srv_client_close(run.cl);
    if (run.stream)
        stream_close(&run);
    free(run.rep.p);
    return 0;
}

/* ---- seeds ------------------------------------------------------------------------------------ */

/* One seed being written: its bytes and the next request's seq. */
struct seed {
    struct bytes b;
    uint64_t seq;
};

static uint64_t mark(uint32_t k) { return MARK | k; }

/* Appends [u32 length][head][record][tail]; rec_size and tail_size as
 * given (a broken request may lie). */
static void put_req(struct seed *s, uint32_t op, const void *rec, uint32_t rec_size, const void *tail,
                    uint32_t tail_size)
{
    struct pipe_req head = {.op = op, .rec_size = rec_size, .tail_size = tail_size, .seq = ++s->seq};
    bytes_put_u32(&s->b, (uint32_t)(sizeof head + rec_size + tail_size));
    bytes_put(&s->b, &head, sizeof head);
    bytes_put(&s->b, rec, rec_size);
    bytes_put(&s->b, tail, tail_size);
}

#define REQ(s, op, rec, tail) put_req((s), PIPE_OP_##op, &(rec), sizeof(rec), (tail)->p, (uint32_t)(tail)->len)

static struct bytes str_tail(const char *a, const char *b, const char *c)
{
    struct bytes t = {0};
    pipe_put_str(&t, a, SIZE_MAX);
    if (b)
        pipe_put_str(&t, b, SIZE_MAX);
    if (c)
        pipe_put_str(&t, c, SIZE_MAX);
    return t;
}

static const struct bytes no_tail;

static void req_handle(struct seed *s, uint32_t op, uint64_t id)
{
    struct pipe_rec_handle r = {id};
    put_req(s, op, &r, sizeof r, NULL, 0);
}

static void req_none(struct seed *s, uint32_t op)
{
    struct pipe_rec_none r = {0};
    put_req(s, op, &r, sizeof r, NULL, 0);
}

static void buffer_create(struct seed *s, uint64_t size, const char *label)
{
    struct bytes t = str_tail(label, NULL, NULL);
    struct pipe_rec_buffer r = {.size = size, .label_len = (uint32_t)t.len};
    REQ(s, buffer_create, r, &t);
    free(t.p);
}

static void range(struct seed *s, uint32_t op, uint64_t id, uint64_t off, uint64_t size, uint32_t via, bool in)
{
    struct pipe_rec_range r = {.id = id, .offset = off, .size = size, .via = via};
    struct bytes t = {0};
    for (uint64_t i = 0; in && i < size; i++)
        bytes_put_u8(&t, (uint8_t)(i * 7 + 1));
    put_req(s, op, &r, sizeof r, t.p, (uint32_t)t.len);
    free(t.p);
}

static const char *k_src = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                           "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                           "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] * kiln_param(0); }\n";

static void program_create(struct seed *s, const char *src, const char *name)
{
    struct bytes t = {0};
    pipe_put_str(&t, src, SIZE_MAX);
    pipe_put_str(&t, name, SIZE_MAX);
    pipe_put_str(&t, NULL, 0);   /* entry: the default */
    pipe_put_str(&t, NULL, 0);   /* no preamble */
    bytes_put_u32(&t, 0);   /* no included files */
    struct pipe_rec_program r = {.source_len = (uint32_t)strlen(src), .name_len = name ? (uint32_t)strlen(name) : 0};
    REQ(s, program_create, r, &t);
    free(t.p);
}

static void scheme_create(struct seed *s, const char *label)
{
    struct bytes t = str_tail(label, NULL, NULL);
    struct pipe_rec_scheme r = {.label_len = (uint32_t)t.len};
    REQ(s, scheme_create, r, &t);
    free(t.p);
}

/* A node of program prog reading buffer in and writing buffer out, with
 * one param word. */
static void add_node(struct seed *s, uint64_t scheme, uint64_t prog, uint64_t in, uint64_t out)
{
    kiln_binding b[2] = {{.binding = 0, .buffer = {in}, .size = 256}, {.binding = 1, .buffer = {out}, .size = 256}};
    uint32_t param = 3;
    struct bytes t = {0};
    bytes_put(&t, b, sizeof b);
    bytes_put(&t, &param, sizeof param);
    pipe_put_str(&t, "node", SIZE_MAX);
    struct pipe_rec_node r = {.scheme = scheme, .program = prog, .groups = {1, 1, 1}, .binding_count = 2,
                              .param_count = 1, .label_len = 8};
    REQ(s, scheme_add_node, r, &t);
    free(t.p);
}

static void list(struct seed *s, uint32_t op, uint64_t id, uint32_t first, uint32_t cap)
{
    struct pipe_rec_list r = {.id = id, .first = first, .cap = cap};
    put_req(s, op, &r, sizeof r, NULL, 0);
}

static int seed_file(const char *dir, const char *name, const char *suffix, const struct bytes *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
    FILE *f = fopen(path, "wb");
    int bad = b->oom || !f || fwrite(b->p, 1, b->len, f) != b->len;
    if (f && fclose(f))
        bad = 1;
    if (bad)
        fprintf(stderr, "fuzz_pipe_apply: cannot write %s\n", path);
    return bad;
}

/* Writes the seed as frames and, as name_ring, the same through the
 * command stream (flag bit 1), unless it is a stream seed already. */
static int seed_write(const char *dir, const char *name, struct seed *s)
{
    int bad = seed_file(dir, name, "", &s->b);
    if (!s->b.oom && s->b.len && !(s->b.p[0] & 2)) {
        s->b.p[0] |= 2;
        bad |= seed_file(dir, name, "_ring", &s->b);
    }
    free(s->b.p);
    *s = (struct seed){0};
    return bad;
}

/* A scribble into the stream's segment (stream seeds only). */
static void put_scribble(struct seed *s, uint32_t offset, uint64_t value)
{
    bytes_put_u32(&s->b, 1u << 31);
    bytes_put_u32(&s->b, offset);
    bytes_put(&s->b, &value, sizeof value);
}

/* Writes seeds into dir: buffers; a program, a scheme and its node run
 * and waited for; images; the archive and stats calls; and broken
 * requests (an unknown op, a wrong record size, a truncated tail, a string
 * with a NUL, a foreign handle, inline data past its limit, calls before
 * the context, a short head, another protocol version). */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    struct seed s = {0};
    int bad = 0;

    bytes_put_u8(&s.b, 0);
    buffer_create(&s, 256, "a");                                     /* id 0 */
    range(&s, PIPE_OP_buffer_upload, mark(0), 16, 64, PIPE_VIA_INLINE, true);
    range(&s, PIPE_OP_buffer_readback, mark(0), 0, 128, PIPE_VIA_INLINE, false);
    req_none(&s, PIPE_OP_context_stats_get);
    req_none(&s, PIPE_OP_context_caps);
    req_handle(&s, PIPE_OP_buffer_destroy, mark(0));
    req_handle(&s, PIPE_OP_buffer_destroy, mark(0));                    /* stale */
    req_none(&s, PIPE_OP_context_destroy);
    bad |= seed_write(dir, "buffers", &s);

    bytes_put_u8(&s.b, 0);
    program_create(&s, k_src, "rw.comp");                            /* id 0 */
    req_handle(&s, PIPE_OP_program_wait, mark(0));
    req_handle(&s, PIPE_OP_program_status, mark(0));
    list(&s, PIPE_OP_program_log, mark(0), 0, 256);
    req_handle(&s, PIPE_OP_program_interface_get, mark(0));
    buffer_create(&s, 256, NULL);                                    /* id 1 */
    buffer_create(&s, 256, "out");                                   /* id 2 */
    scheme_create(&s, "s");                                          /* id 3 */
    add_node(&s, mark(3), mark(0), mark(1), mark(2));                            /* id 4 */
    struct pipe_rec_param sp = {.node = mark(4), .slot = 0, .word = 5};
    REQ(&s, node_set_param, sp, &no_tail);
    struct pipe_rec_param sp_for = {.node = mark(4), .slot = 1, .word = 6, .program = mark(0)};
    REQ(&s, node_set_param, sp_for, &no_tail);
    struct pipe_rec_param sp_other = {.node = mark(4), .slot = 1, .word = 7, .program = mark(1)};
    REQ(&s, node_set_param, sp_other, &no_tail);                     /* refused: the node runs program 0 */
    list(&s, PIPE_OP_node_get_params, mark(4), 0, 8);
    struct pipe_rec_submit sub = {.scheme = mark(3)};                /* ticket 0: the server numbers it */
    REQ(&s, scheme_submit, sub, &no_tail);                           /* id 5: the ticket */
    struct pipe_rec_wait w = {.ticket = mark(5), .timeout_ns = 1000000000};
    REQ(&s, ticket_wait, w, &no_tail);
    req_handle(&s, PIPE_OP_scheme_stats_get, mark(3));
    list(&s, PIPE_OP_scheme_spec_events, mark(3), 0, 16);
    req_handle(&s, PIPE_OP_node_is_specialized, mark(4));
    req_none(&s, PIPE_OP_compiles_pending);
    range(&s, PIPE_OP_buffer_readback, mark(2), 0, 256, PIPE_VIA_INLINE, false);
    req_handle(&s, PIPE_OP_program_destroy, mark(0));                   /* busy: the node uses it */
    req_handle(&s, PIPE_OP_node_remove, mark(4));
    req_handle(&s, PIPE_OP_scheme_destroy, mark(3));
    req_none(&s, PIPE_OP_context_wait_idle);
    bad |= seed_write(dir, "scheme", &s);

    /* A second program swapped into a node; the client closes with its
     * objects still held. */
    bytes_put_u8(&s.b, 0);
    program_create(&s, k_src, "a.comp");                             /* id 0 */
    program_create(&s, k_src, NULL);                                 /* id 1 */
    buffer_create(&s, 256, NULL);                                    /* id 2 */
    scheme_create(&s, NULL);                                         /* id 3 */
    req_handle(&s, PIPE_OP_program_wait, mark(0));
    req_handle(&s, PIPE_OP_program_wait, mark(1));
    add_node(&s, mark(3), mark(0), mark(2), mark(2));                            /* id 4 */
    struct pipe_rec_pair np = {.a = mark(4), .b = mark(1)};
    REQ(&s, node_set_program, np, &no_tail);
    REQ(&s, scheme_submit, sub, &no_tail);
    bad |= seed_write(dir, "node_set_program", &s);

    bytes_put_u8(&s.b, 0);
    struct bytes t = str_tail("img", NULL, NULL);
    struct pipe_rec_image im = {.width = 4, .height = 4, .depth = 1, .dims = 2, .format = KILN_FORMAT_RGBA8,
                                .label_len = (uint32_t)t.len};
    REQ(&s, image_create, im, &t);                                   /* id 0 */
    free(t.p);
    range(&s, PIPE_OP_image_upload, mark(0), 0, 64, PIPE_VIA_INLINE, true);
    range(&s, PIPE_OP_image_readback, mark(0), 0, 64, PIPE_VIA_INLINE, false);
    range(&s, PIPE_OP_image_readback, mark(0), 0, 63, PIPE_VIA_INLINE, false);   /* not the image's size */
    req_handle(&s, PIPE_OP_image_destroy, mark(0));
    bad |= seed_write(dir, "images", &s);

    bytes_put_u8(&s.b, 0);
    req_none(&s, PIPE_OP_archive_info_get);
    list(&s, PIPE_OP_archive_files, 0, 0, 16);
    struct pipe_rec_tidy td = {.desc = {.compact = 1, .gc = 1}};
    REQ(&s, archive_tidy, td, &no_tail);
    struct pipe_rec_precompile pc = {.stall_s = 0.01};
    REQ(&s, context_precompile, pc, &no_tail);
    req_none(&s, PIPE_OP_compiles_pending);
    bad |= seed_write(dir, "archive", &s);

    /* Refused requests after which the connection goes on. */
    bytes_put_u8(&s.b, 0);
    buffer_create(&s, 64, "b");                                      /* id 0 */
    struct pipe_rec_handle hr = {mark(0)};
    put_req(&s, 999, &hr, sizeof hr, NULL, 0);                       /* unknown op */
    struct bytes tr = {0};
    bytes_put_u32(&tr, 100);                                         /* a label claiming 100 bytes */
    bytes_put(&tr, "abc", 3);
    struct pipe_rec_buffer br = {.size = 64, .label_len = 7};
    REQ(&s, buffer_create, br, &tr);
    free(tr.p);
    struct bytes tn = {0};
    pipe_put_str(&tn, "a\0b", 3);                                    /* a label with a NUL */
    struct pipe_rec_scheme sr = {.label_len = (uint32_t)tn.len};
    REQ(&s, scheme_create, sr, &tn);
    free(tn.p);
    range(&s, PIPE_OP_buffer_upload, 0x0000000100200001ull, 0, 4, PIPE_VIA_INLINE, true);   /* a foreign id */
    range(&s, PIPE_OP_buffer_upload, mark(0), 0, 4, PIPE_VIA_SEGMENT, false);                 /* no segment */
    range(&s, PIPE_OP_buffer_readback, mark(0), 0, 64, 7, false);                              /* no such via */
    range(&s, PIPE_OP_buffer_readback, mark(0), 60, 8, PIPE_VIA_INLINE, false);                /* past its end */
    buffer_create(&s, 128u << 20, NULL);                                                    /* past the quota */
    buffer_create(&s, 1ull << 40, NULL);                                                    /* past the device */
    struct pipe_rec_context again = {.version = PIPE_VERSION};
    struct bytes nulls = str_tail(NULL, NULL, NULL);
    for (int i = 0; i < 3; i++)
        pipe_put_str(&nulls, NULL, 0);
    REQ(&s, context_create, again, &nulls);                          /* exists already */
    req_handle(&s, PIPE_OP_buffer_destroy, mark(0));
    put_req(&s, PIPE_OP_buffer_destroy, &hr, 4, NULL, 0);            /* a wrong record size: the end */
    bad |= seed_write(dir, "refused", &s);

    /* No harness context: calls before context_create, then another
     * protocol version. */
    bytes_put_u8(&s.b, 1);
    buffer_create(&s, 64, NULL);
    req_none(&s, PIPE_OP_context_caps);
    struct pipe_rec_context other = {.version = PIPE_VERSION + 1};
    REQ(&s, context_create, other, &nulls);
    bad |= seed_write(dir, "no_context", &s);

    /* Its own context_create, then a short head. */
    bytes_put_u8(&s.b, 1);
    struct pipe_rec_context own = {.pending = KILN_PENDING_SKIP, .version = PIPE_VERSION};
    REQ(&s, context_create, own, &nulls);
    req_none(&s, PIPE_OP_context_caps);
    bytes_put_u32(&s.b, 10);
    bytes_put(&s.b, "0123456789", 10);
    bad |= seed_write(dir, "short_head", &s);
    free(nulls.p);

    /* Through the stream, with scribbles (each seen by the server's side
     * at once, as a hostile client's would be): a request, then the
     * command ring's head (offset 0x0c0: the page's command cursors)
     * moved back behind what the server has read. */
    bytes_put_u8(&s.b, 2);
    buffer_create(&s, 64, "s");                                      /* id 0 */
    range(&s, PIPE_OP_buffer_upload, mark(0), 0, 64, PIPE_VIA_INLINE, true);
    put_scribble(&s, 0x0c0, 8);
    req_none(&s, PIPE_OP_context_caps);
    bad |= seed_write(dir, "stream_head_back", &s);

    /* A record the client never wrote: a header of a kind no ring has at
     * the ring's start (past the 4 KiB control page), and the head moved
     * past it. */
    bytes_put_u8(&s.b, 2);
    put_scribble(&s, 4096, 0x0000000900000010ull);
    put_scribble(&s, 0x0c0, 16);
    req_none(&s, PIPE_OP_context_caps);
    bad |= seed_write(dir, "stream_bad_kind", &s);

    /* Garbage the client did not publish made visible: the head moved a
     * whole ring ahead of the tail, over zeroed bytes (pads of size 0). */
    bytes_put_u8(&s.b, 2);
    req_none(&s, PIPE_OP_context_caps);
    put_scribble(&s, 0x0c0, 4096);
    bad |= seed_write(dir, "stream_head_ahead", &s);

    /* A message too big for a record of a 4 KiB ring: announced, then
     * applied as its frame (a program of 3 KiB). */
    bytes_put_u8(&s.b, 2);
    char big[3072 + 128];
    snprintf(big, sizeof big, "#version 450\nlayout(local_size_x = 1) in;\n%*s\nvoid main() {}\n", 3072, "");
    program_create(&s, big, "big.comp");
    req_handle(&s, PIPE_OP_program_wait, mark(0));
    list(&s, PIPE_OP_program_log, mark(0), 0, 4096);
    bad |= seed_write(dir, "stream_frame", &s);
    return bad;
}
