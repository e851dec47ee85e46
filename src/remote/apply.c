/* SPDX-License-Identifier: MIT */
/*
 * apply.c: the server's applier. One request frame in, one reply frame
 * out: the head and the record checked against the catalogue, the tail
 * decoded with every length compared with what arrived, the call run on
 * the connection's own context (so a handle resolves in its own pools
 * only: another client's is KILN_ERR_HANDLE), the client's quotas kept.
 * Nothing a request holds is trusted; a refused request says why in its
 * reply and leaves the connection and the context as they were.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/pool.h"
#include "pipe/pipe.h"
#include "program/program.h"
#include "remote.h"
#include "remote_private.h"

/* How long a waiting call holds the device at a time. */
#define SLICE_NS (2ull * 1000 * 1000)

/* One request, decoded as far as the head. */
struct req {
    struct srv_client *cl;
    struct kctx *c;
    const void *rec;             /* the record, aligned */
    struct bytes_reader tail;
    struct pipe_arena arena;
    struct bytes *out;
    kiln_result live;            /* ctx_live's verdict, for OP */
    uint64_t seg_size;           /* the segment's bytes, when range_bytes mapped it */
    bool posted;                 /* run ahead: answered only if it fails */
};

typedef kiln_result (*apply_fn)(struct req *q);

/* Takes the host lock; a wait for it past PIPE_STALL_NS is the client's
 * stall (counted when the server counts). */
static void lock(struct srv_client *cl)
{
    if (!cl->srv->stats_on) {
        pthread_mutex_lock(&cl->srv->host_lock);
        return;
    }
    if (pthread_mutex_trylock(&cl->srv->host_lock) == 0)
        return;
    uint64_t t0 = time_now_ns();
    pthread_mutex_lock(&cl->srv->host_lock);
    uint64_t waited = time_now_ns() - t0;
    if (waited > PIPE_STALL_NS) {
        cl->stats.stalls++;
        cl->stats.stalled_ns += waited;
    }
}
static void unlock(struct srv_client *cl) { pthread_mutex_unlock(&cl->srv->host_lock); }

/* OP runs a call of the context's table under the host lock, as api/ runs
 * a local call: refused on a lost device, a loss it finds latched. */
static kiln_result enter(struct req *q)
{
    lock(q->cl);
    ctx_device_enter(q->c);
    q->live = ctx_live(q->c);
    return q->live;
}

static kiln_result leave(struct req *q, kiln_result r)
{
    r = q->live == KILN_OK ? ctx_seen(q->c, r) : q->live;
    ctx_device_leave(q->c);
    unlock(q->cl);
    return r;
}
#define OP(q, name, ...) leave((q), enter(q) == KILN_OK ? (q)->c->ops->name((q)->c, __VA_ARGS__) : KILN_OK)

static kiln_result no_tail(struct req *q)
{
    size_t n = bytes_remaining(&q->tail);
    return n ? KILN_RAISE(KILN_ERR_INVALID, "request: %zu bytes after its record where none belong", n) : KILN_OK;
}

static kiln_result tail_done(struct req *q, const char *what)
{
    if (q->tail.overrun)
        return KILN_RAISE(KILN_ERR_INVALID, "request: %s runs past the tail", what);
    size_t n = bytes_remaining(&q->tail);
    return n ? KILN_RAISE(KILN_ERR_INVALID, "request: %zu bytes after %s", n, what) : KILN_OK;
}

static void put_out(struct req *q, const void *p, size_t n) { bytes_put(q->out, p, n); }

/* ---- quotas -------------------------------------------------------------------------------- */

static kiln_result quota_objects(struct req *q, uint32_t adding)
{
    uint64_t held = ctx_objects_held(q->c);
    if (held + adding > q->cl->srv->quota.objects)
        return KILN_RAISE(KILN_ERR_LIMIT, "%s holds %llu objects; the server allows each client %u at once",
                          q->cl->who, (unsigned long long)held, q->cl->srv->quota.objects);
    return KILN_OK;
}

static kiln_result quota_bytes(struct req *q, uint64_t adding)
{
    uint64_t max = q->cl->srv->quota.bytes;
    if (adding > max || q->cl->bytes > max - adding)
        return KILN_RAISE(KILN_ERR_LIMIT, "%s holds %llu bytes of buffers and images and asks for %llu more; the "
                          "server allows each client %llu", q->cl->who, (unsigned long long)q->cl->bytes,
                          (unsigned long long)adding, (unsigned long long)max);
    return KILN_OK;
}

static kiln_result quota_compiles(struct req *q)
{
    uint32_t n = ctx_programs_pending(q->c);
    if (n >= q->cl->srv->quota.compiles)
        return KILN_RAISE(KILN_ERR_LIMIT, "%s has %u programs compiling; the server allows each client %u at once "
                          "(wait for some: kiln_program_wait)", q->cl->who, n, q->cl->srv->quota.compiles);
    return KILN_OK;
}

/* ---- the context ------------------------------------------------------------------------- */

/* A handle serial for a new client context, and the generation floor its
 * handles start above (mu held). Handles carry 8 bits of serial, so
 * serials come round again after 256 contexts: a serial's floor is the
 * highest generation any context that had it issued, so a handle of an
 * earlier connection never resolves in a later one. A serial no live
 * context has is taken first; when every one is live (more than 254
 * clients at once) one is shared, which costs nothing but that guard (a
 * connection reaches only its own context's objects whatever handle it
 * sends). A serial whose floor leaves too few generations is passed over
 * while another is left; a floor rises only as far as a client's makes
 * and destroys took its generations (pool_claim takes no generation
 * ahead), and when every serial's is that high, a free one starts again
 * from 0, keeping the guard's last part (a handle of another connection
 * reaches nothing of this one's), so no client can lock others out. 0 only
 * when every serial is live and spent. */
static uint32_t serial_take(struct srv *s, uint32_t *floor)
{
    for (int pass = 0; pass < 3; pass++) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t serial = ++s->next_serial;
            uint32_t k = serial & 0xff;
            if (!serial || (pass < 2 && s->serial_floor[k] > POOL_FLOOR_MAX) || (pass != 1 && s->serial_live[k]))
                continue;
            if (s->serial_floor[k] > POOL_FLOOR_MAX) {
                log_info("kiln serve: handle serial %u starts its generations again from 1 (every serial's "
                         "generations are spent)", (unsigned)k);
                s->serial_floor[k] = 0;
            }
            s->serial_live[k]++;
            *floor = s->serial_floor[k];
            return serial;
        }
    }
    return 0;
}

static kiln_result a_context_create(struct req *q)
{
    const struct pipe_rec_context *r = q->rec;
    if (q->c)
        return KILN_RAISE(KILN_ERR_INVALID, "request: this connection's context exists already");
    if (r->version != PIPE_VERSION)
        return KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: the client speaks pipe version %u, this server %u",
                          r->version, PIPE_VERSION);
    kiln_context_desc d = {
        .backend = (kiln_backend_kind)r->backend, .validation = r->validation,
        .pending = (kiln_pending_policy)r->pending, .compile_threads = r->compile_threads,
        .specialization = r->specialization, .device_timeout_ms = r->device_timeout_ms, .archive = r->archive,
        .archive_qa = r->archive_qa, .archive_max_size = r->archive_max_size, .giant_words = r->giant_words,
        .giant_compiles = r->giant_compiles, .alone_tries = r->alone_tries, .slow_compile_s = r->slow_compile_s,
        .worker_caches = r->worker_caches, .spec_verify = r->spec_verify, .skip_log = r->skip_log,
        .force_staging = r->force_staging, .check = r->check, .robust = r->robust};
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "device", false, &d.device, NULL));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "archive_dir", false, &d.archive_dir, NULL));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "archive_readonly", false, &d.archive_readonly, NULL));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "trace_path", false, &d.trace_path, NULL));
    KILN_TRY(tail_done(q, "the context desc"));
    if (d.pending != KILN_PENDING_WAIT && d.pending != KILN_PENDING_SKIP)
        return KILN_RAISE(KILN_ERR_INVALID, "context desc: unknown pending policy %d", (int)d.pending);
    struct srv *s = q->cl->srv;
    lock(q->cl);
    /* A device lost for everyone (the driver's word): new clients get a
     * new one. */
    kiln_result renewed = ctx_device_lost(s->host, NULL, 0) ? srv_host_renew(s) : KILN_OK;
    if (!d.backend && renewed == KILN_OK)
        d.backend = ctx_backend(s->host);
    unlock(q->cl);
    KILN_TRY(renewed);
    pthread_mutex_lock(&s->mu);
    uint32_t floor, serial = serial_take(s, &floor);
    pthread_mutex_unlock(&s->mu);
    if (!serial)
        return KILN_RAISE(KILN_ERR_LIMIT, "the server has served so many contexts that it has no handle serial "
                          "left to give without a chance of an old handle resolving; restart it");
    lock(q->cl);
    kiln_result res = ctx_create_on(s->host, &d, serial, floor, &q->cl->ctx);
    if (res == KILN_OK) {
        q->cl->host = s->host;
        s->host_clients++;
        ctx_calls_under(q->cl->ctx, &s->host_lock);   /* its waits let the host lock go (context.h) */
    }
    unlock(q->cl);
    pthread_mutex_lock(&s->mu);
    if (res == KILN_OK)
        q->cl->serial = serial;
    else
        s->serial_live[serial & 0xff]--;
    pthread_mutex_unlock(&s->mu);
    KILN_TRY(res);
    /* The client mints its scheme and node handles from pools of this
     * serial and floor (pipe_rec_scheme). */
    struct pipe_context_made made = {serial, floor};
    put_out(q, &made, sizeof made);
    return KILN_OK;
}

static kiln_result a_context_destroy(struct req *q) { return no_tail(q); }

static kiln_result a_context_caps(struct req *q)
{
    kiln_caps caps;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, context_caps, &caps));
    put_out(q, &caps, sizeof caps);
    return KILN_OK;
}

/* Waits for ticket in slices of SLICE_NS, the device let go between them. */
static kiln_result wait_sliced(struct req *q, uint64_t ticket, uint64_t timeout_ns)
{
    uint64_t start = time_now_ns();
    for (;;) {
        uint64_t spent = time_now_ns() - start;
        uint64_t left = timeout_ns == UINT64_MAX ? UINT64_MAX : timeout_ns > spent ? timeout_ns - spent : 0;
        kiln_result r = OP(q, ticket_wait, (kiln_ticket){ticket}, KILN_MIN(left, SLICE_NS));
        if (r != KILN_ERR_TIMEOUT)
            return r;
        if (left <= SLICE_NS)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "ticket %llu not done after %llu ns", (unsigned long long)ticket,
                              (unsigned long long)timeout_ns);
    }
}

static kiln_result a_context_wait_idle(struct req *q)
{
    KILN_TRY(no_tail(q));
    lock(q->cl);
    uint64_t last = ctx_last_ticket(q->c);
    unlock(q->cl);
    KILN_TRY(wait_sliced(q, last, UINT64_MAX));
    return leave(q, enter(q) == KILN_OK ? q->c->ops->context_wait_idle(q->c) : KILN_OK);
}

static kiln_result a_context_stats_get(struct req *q)
{
    kiln_context_stats st;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, context_stats_get, &st));
    put_out(q, &st, sizeof st);
    return KILN_OK;
}

/* ---- buffers and images ------------------------------------------------------------------------ */

static kiln_result a_buffer_create(struct req *q)
{
    const struct pipe_rec_buffer *r = q->rec;
    kiln_buffer_desc d = {.size = r->size, .usage = r->usage};
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "label", false, &d.label, NULL));
    KILN_TRY(tail_done(q, "the buffer desc"));
    lock(q->cl);
    kiln_result res = quota_objects(q, 1);
    /* A size past the device's limit is the runtime's to refuse, naming it. */
    if (res == KILN_OK && d.size <= ctx_max_buffer_size(q->c))
        res = quota_bytes(q, d.size);
    unlock(q->cl);
    KILN_TRY(res);
    kiln_buffer b;
    KILN_TRY(OP(q, buffer_create, &d, &b));
    q->cl->bytes += d.size;
    put_out(q, &b.id, sizeof b.id);
    return KILN_OK;
}

static kiln_result a_buffer_destroy(struct req *q)
{
    const struct pipe_rec_handle *r = q->rec;
    KILN_TRY(no_tail(q));
    lock(q->cl);
    uint64_t size;
    (void)ctx_buffer_size(q->c, (kiln_buffer){r->id}, &size);
    unlock(q->cl);
    KILN_TRY(OP(q, buffer_destroy, (kiln_buffer){r->id}));
    q->cl->bytes -= KILN_MIN(size, q->cl->bytes);
    return KILN_OK;
}

/* The bytes of a range request: in the tail, or in the segment. */
static kiln_result range_bytes(struct req *q, const struct pipe_rec_range *r, bool in, uint8_t **p)
{
    *p = NULL;
    if (r->via == PIPE_VIA_INLINE) {
        if (r->size > PIPE_INLINE_MAX)
            return KILN_RAISE(KILN_ERR_INVALID, "request: %llu bytes inline; at most %u travel so",
                              (unsigned long long)r->size, PIPE_INLINE_MAX);
        if (in) {
            if (bytes_remaining(&q->tail) != r->size)
                return KILN_RAISE(KILN_ERR_INVALID, "request: says %llu bytes of data; its tail holds %zu",
                                  (unsigned long long)r->size, bytes_remaining(&q->tail));
            *p = (uint8_t *)bytes_read_span(&q->tail, r->size);
            return KILN_OK;
        }
        KILN_TRY(no_tail(q));
        *p = bytes_put(q->out, NULL, r->size);
        return *p || !r->size ? KILN_OK : KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a reply");
    }
    if (r->via != PIPE_VIA_SEGMENT)
        return KILN_RAISE(KILN_ERR_INVALID, "request: data via %u (0 inline, 1 the segment)", r->via);
    KILN_TRY(no_tail(q));
    if (!q->cl->segment)
        return KILN_RAISE(KILN_ERR_INVALID, "request: data in a segment; this connection has none");
    q->cl->stats.segment_bytes += r->size;
    return q->cl->segment(q->cl->segment_ud, r->segment, r->size, p, &q->seg_size);
}

/* The segment at map imported on the device, once (NULL where the device
 * cannot: the copy then stays on the host). */
static struct kb_host *imported(struct req *q, uint8_t *map)
{
    struct srv_client *cl = q->cl;
    if (cl->import_map == map)
        return cl->import;
    srv_client_unimport(cl);
    struct kb_host *h = NULL;
    kiln_result r = leave(q, enter(q) == KILN_OK ? ctx_host_import(q->c, map, q->seg_size, &h) : KILN_OK);
    if (r < 0 || !h) {
        log_info("kiln serve: %s: its data segment is not imported on the device (%s): uploads and readbacks copy on "
                 "the host",
                 cl->who, r < 0 ? err_last() : "lost");
        err_clear();
        h = NULL;
    }
    cl->import = h;
    cl->import_map = map;
    return h;
}

/* Waits for the client's work up to ticket (0: all of it) to end, in
 * slices with the device let go between them: a client whose work ran
 * past its bound (still running) delays only itself. KILN_OK, or the
 * wait's failure (a lost device). */
static kiln_result settle_to(struct srv_client *cl, uint64_t ticket)
{
    kiln_result r = KILN_ERR_TIMEOUT;
    while (r == KILN_ERR_TIMEOUT) {
        lock(cl);
        r = ticket ? ctx_settle(cl->ctx, ticket, SLICE_NS) : ctx_drain(cl->ctx, SLICE_NS);
        unlock(cl);
    }
    return r;
}
static void settle(struct srv_client *cl) { (void)settle_to(cl, 0); }

void srv_client_unimport(struct srv_client *cl)
{
    if (cl->import) {
        settle(cl);   /* a copy through it may still run, even after its wait failed (context.h) */
        lock(cl);
        ctx_host_release(cl->ctx, cl->import);
        unlock(cl);
    }
    cl->import = NULL;
    cl->import_map = NULL;
}

/* True when the range cannot be moved: no such buffer of the client's, or
 * the range runs past its end. The runtime's call then refuses it, naming
 * what is wrong, before it touches any byte (so it gets a stand-in). */
static bool buffer_range_bad(struct req *q, const struct pipe_rec_range *r)
{
    lock(q->cl);
    uint64_t size;
    bool bad = !ctx_buffer_size(q->c, (kiln_buffer){r->id}, &size) || r->offset > size || r->size > size - r->offset;
    unlock(q->cl);
    return bad;
}

static bool image_range_bad(struct req *q, const struct pipe_rec_range *r)
{
    lock(q->cl);
    uint64_t bytes;
    bool bad = !ctx_image_bytes(q->c, (kiln_image){r->id}, &bytes) || r->size != bytes;
    unlock(q->cl);
    return bad;
}

static kiln_result a_buffer_upload(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    uint8_t *p;
    if (buffer_range_bad(q, r))
        return OP(q, buffer_upload, (kiln_buffer){r->id}, r->offset, q, r->size);
    KILN_TRY(range_bytes(q, r, true, &p));
    struct kb_host *h = r->via == PIPE_VIA_SEGMENT && p && r->size ? imported(q, p) : NULL;
    if (h) {   /* one copy, on the device, straight from the client's segment */
        return leave(q, enter(q) == KILN_OK ? ctx_buffer_upload_host(q->c, (kiln_buffer){r->id}, r->offset, h, p,
                                                                      r->size, &q->cl->stats.imported_bytes)
                                            : KILN_OK);
    }
    return OP(q, buffer_upload, (kiln_buffer){r->id}, r->offset, p ? p : (const void *)"", r->size);
}

static kiln_result a_buffer_readback(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    uint8_t *p;
    if (buffer_range_bad(q, r))
        return OP(q, buffer_readback, (kiln_buffer){r->id}, r->offset, q, r->size);
    KILN_TRY(range_bytes(q, r, false, &p));
    struct kb_host *h = r->via == PIPE_VIA_SEGMENT && p && r->size ? imported(q, p) : NULL;
    if (h) {   /* one copy, on the device, straight into the client's segment */
        return leave(q, enter(q) == KILN_OK ? ctx_buffer_readback_host(q->c, (kiln_buffer){r->id}, r->offset, h, p,
                                                                        r->size, &q->cl->stats.imported_bytes)
                                            : KILN_OK);
    }
    return OP(q, buffer_readback, (kiln_buffer){r->id}, r->offset, p ? p : (void *)q, r->size);
}

static kiln_result a_image_create(struct req *q)
{
    const struct pipe_rec_image *r = q->rec;
    kiln_image_desc d = {.width = r->width, .height = r->height, .depth = r->depth, .dims = r->dims,
                         .format = (kiln_format)r->format, .usage = r->usage, .layers = r->layers,
                         .levels = r->levels, .cube = r->cube != 0};
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "label", false, &d.label, NULL));
    KILN_TRY(tail_done(q, "the image desc"));
    /* Its bytes as the image will hold them (texels times the format's
     * size; a product past 64 bits saturates), judged before anything is
     * made: a client past its quota never has an image allocated and
     * cleared for it. */
    kiln_image_desc f = kiln_image_desc_defaults(&d);
    uint64_t bytes = kiln_format_size(f.format);
    uint32_t sides[3] = {f.width, f.height, f.dims == 3 ? f.depth : 1};
    for (int i = 0; i < 3; i++)
        bytes = sides[i] && bytes > UINT64_MAX / sides[i] ? UINT64_MAX : bytes * sides[i];
    lock(q->cl);
    kiln_result res = quota_objects(q, 1);
    if (res == KILN_OK)
        res = quota_bytes(q, bytes);
    unlock(q->cl);
    KILN_TRY(res);
    kiln_image img;
    KILN_TRY(OP(q, image_create, &d, &img));
    lock(q->cl);
    uint64_t counted;
    if (ctx_image_bytes(q->c, img, &counted))
        bytes = counted;   /* the same, as the runtime counted it */
    unlock(q->cl);
    q->cl->bytes += bytes;
    put_out(q, &img.id, sizeof img.id);
    return KILN_OK;
}

static kiln_result a_image_destroy(struct req *q)
{
    const struct pipe_rec_handle *r = q->rec;
    KILN_TRY(no_tail(q));
    lock(q->cl);
    uint64_t bytes;
    (void)ctx_image_bytes(q->c, (kiln_image){r->id}, &bytes);
    unlock(q->cl);
    KILN_TRY(OP(q, image_destroy, (kiln_image){r->id}));
    q->cl->bytes -= KILN_MIN(bytes, q->cl->bytes);
    return KILN_OK;
}

static kiln_result a_image_upload(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    uint8_t *p;
    if (r->offset)
        return KILN_RAISE(KILN_ERR_INVALID, "request: an image upload has no offset");
    if (image_range_bad(q, r))
        return OP(q, image_upload, (kiln_image){r->id}, q, r->size);
    KILN_TRY(range_bytes(q, r, true, &p));
    return OP(q, image_upload, (kiln_image){r->id}, p ? p : (const void *)"", r->size);
}

static kiln_result a_image_readback(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    uint8_t *p;
    if (r->offset)
        return KILN_RAISE(KILN_ERR_INVALID, "request: an image readback has no offset");
    if (image_range_bad(q, r))
        return OP(q, image_readback, (kiln_image){r->id}, q, r->size);
    KILN_TRY(range_bytes(q, r, false, &p));
    return OP(q, image_readback, (kiln_image){r->id}, p ? p : (void *)q, r->size);
}

static kiln_result a_image_upload_part(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    kiln_image_part part = {PIPE_PART_LEVEL(r->offset), PIPE_PART_LAYER(r->offset), PIPE_PART_LAYERS(r->offset)};
    uint8_t *p;
    KILN_TRY(range_bytes(q, r, true, &p));
    return OP(q, image_upload_part, (kiln_image){r->id}, &part, p ? p : (const void *)"", r->size);
}

static kiln_result a_image_readback_part(struct req *q)
{
    const struct pipe_rec_range *r = q->rec;
    kiln_image_part part = {PIPE_PART_LEVEL(r->offset), PIPE_PART_LAYER(r->offset), PIPE_PART_LAYERS(r->offset)};
    uint8_t *p;
    KILN_TRY(range_bytes(q, r, false, &p));
    return OP(q, image_readback_part, (kiln_image){r->id}, &part, p ? p : (void *)q, r->size);
}

/* ---- programs ------------------------------------------------------------------------------ */

/* A program's included files, as put_includes (client.c) sends them:
 * at most PROG_MAX_INCLUDE_FILES, their bytes at most
 * PROG_MAX_BUNDLE_BYTES. On KILN_OK *out (owned: prog_includes_free) holds
 * *n copies. */
static kiln_result read_includes(struct req *q, struct prog_include **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    uint32_t count = bytes_read_u32(&q->tail);
    if (q->tail.overrun)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: its included files' count is missing");
    if (count > PROG_MAX_INCLUDE_FILES)
        return KILN_RAISE(KILN_ERR_LIMIT, "program desc: %u included files; at most %u travel with a program",
                          count, PROG_MAX_INCLUDE_FILES);
    struct prog_include *v = mem_calloc(count ? count : 1, sizeof *v);
    if (!v)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a program's %u included files", count);
    kiln_result r = KILN_OK;
    uint64_t bytes = 0;
    uint32_t i = 0;
    for (; r == KILN_OK && i < count; i++) {
        const char *req, *from, *path, *content, *refused;
        size_t len = 0;
        r = pipe_read_str(&q->tail, &q->arena, "an included file's request", false, &req, NULL);
        if (r == KILN_OK)
            r = pipe_read_str(&q->tail, &q->arena, "an included file's includer", false, &from, NULL);
        uint32_t relative = r == KILN_OK ? bytes_read_u32(&q->tail) : 0;
        if (r == KILN_OK && (q->tail.overrun || relative > 1))
            r = KILN_RAISE(KILN_ERR_INVALID, "program desc: included file %u: a bad relative flag", i);
        if (r == KILN_OK)
            r = pipe_read_str(&q->tail, &q->arena, "an included file's path", false, &path, NULL);
        if (r == KILN_OK)
            r = pipe_read_str(&q->tail, &q->arena, "an included file's bytes", true, &content, &len);
        if (r == KILN_OK)
            r = pipe_read_str(&q->tail, &q->arena, "an included file's refusal", false, &refused, NULL);
        if (r == KILN_OK && (!req || !from))
            r = KILN_RAISE(KILN_ERR_INVALID, "program desc: included file %u has no request or includer", i);
        if (r == KILN_OK && content && (bytes += len) > PROG_MAX_BUNDLE_BYTES)
            r = KILN_RAISE(KILN_ERR_LIMIT, "program desc: its included files hold more than %u bytes, the most "
                           "that travel with a program", PROG_MAX_BUNDLE_BYTES);
        if (r < 0)
            break;
        struct prog_include *f = &v[i];
        *f = (struct prog_include){.req = str_dup(req), .from = str_dup(from), .relative = relative,
                                   .path = path ? str_dup(path) : NULL,
                                   .content = content ? str_ndup(content, len) : NULL, .len = content ? len : 0,
                                   .refused = refused ? str_dup(refused) : NULL};
        if (!f->req || !f->from || (path && !f->path) || (content && !f->content) || (refused && !f->refused))
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a program's included files");
    }
    if (r < 0) {
        prog_includes_free(v, count);   /* calloc'd: the entries not reached are empty */
        return r;
    }
    *out = v;
    *n = count;
    return KILN_OK;
}

static kiln_result program_create_with(struct req *q, kiln_define *defines);

static kiln_result a_program_create(struct req *q)
{
    const struct pipe_rec_program *r = q->rec;
    /* A define is two strings of at least 4 bytes each in the tail. */
    if (r->define_count > q->tail.len / 8)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: %u defines in a tail of %zu bytes", r->define_count,
                          q->tail.len);
    kiln_define *defines = mem_alloc(((size_t)r->define_count + 1) * sizeof *defines);
    if (!defines)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a program's %u defines", r->define_count);
    kiln_result res = program_create_with(q, defines);
    free(defines);
    return res;
}

static kiln_result program_create_with(struct req *q, kiln_define *defines)
{
    const struct pipe_rec_program *r = q->rec;
    if (r->include_dir_count > KILN_MAX_INCLUDE_DIRS || r->constant_count > KILN_MAX_SPEC_CONSTANTS)
        return KILN_RAISE(KILN_ERR_LIMIT, "program desc: %u include folders, %u constants: past kiln's limits",
                          r->include_dir_count, r->constant_count);
    if (r->language > KILN_LANGUAGE_SPIRV)   /* 0: AUTO, as a desc's */
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: language %u is none of kiln's (0 auto, 1 GLSL, "
                          "2 HLSL, 3 SPIR-V)", r->language);
    kiln_program_desc d = {.language = (kiln_language)r->language, .optimize = r->optimize,
                           .define_count = r->define_count,
                           .include_dir_count = r->include_dir_count, .constant_count = r->constant_count,
                           .workgroup_size = {r->workgroup_size[0], r->workgroup_size[1], r->workgroup_size[2]}};
    const char *dirs[KILN_MAX_INCLUDE_DIRS];
    kiln_spec_constant constants[KILN_MAX_SPEC_CONSTANTS];
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "source", true, &d.source, &d.source_len));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "name", false, &d.name, NULL));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "entry", false, &d.entry, NULL));
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "preamble", false, &d.preamble, NULL));
    if (!d.source)
        return KILN_RAISE(KILN_ERR_INVALID, "program desc: source is NULL");
    for (uint32_t i = 0; i < d.define_count; i++) {
        KILN_TRY(pipe_read_str(&q->tail, &q->arena, "a define's name", false, &defines[i].name, NULL));
        KILN_TRY(pipe_read_str(&q->tail, &q->arena, "a define's value", false, &defines[i].value, NULL));
    }
    for (uint32_t i = 0; i < d.include_dir_count; i++)
        KILN_TRY(pipe_read_str(&q->tail, &q->arena, "an include folder", false, &dirs[i], NULL));
    bytes_read_copy(&q->tail, constants, (size_t)d.constant_count * sizeof constants[0]);
    struct prog_include *files = NULL;
    uint32_t nfiles = 0;
    KILN_TRY(read_includes(q, &files, &nfiles));
    kiln_result res = tail_done(q, "the program desc");
    d.defines = defines;
    d.include_dirs = dirs;
    d.constants = constants;
    lock(q->cl);
    if (res == KILN_OK)
        res = quota_objects(q, 1);
    if (res == KILN_OK)
        res = quota_compiles(q);
    unlock(q->cl);
    if (res < 0) {
        prog_includes_free(files, nfiles);
        return res;
    }
    /* Its name is a label and its includes come from its files alone:
     * nothing of the server's disk is read for it. */
    kiln_program p;
    if (enter(q) == KILN_OK)
        res = ctx_program_create_sealed(q->c, &d, files, nfiles, &p);
    else
        prog_includes_free(files, nfiles);
    KILN_TRY(leave(q, res));
    put_out(q, &p.id, sizeof p.id);
    return KILN_OK;
}

static kiln_result a_program_destroy(struct req *q)
{
    KILN_TRY(no_tail(q));
    return OP(q, program_destroy, (kiln_program){((const struct pipe_rec_handle *)q->rec)->id});
}

static kiln_result a_program_status(struct req *q)
{
    kiln_program_state st;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, program_status, (kiln_program){((const struct pipe_rec_handle *)q->rec)->id}, &st));
    uint32_t v = st;
    put_out(q, &v, sizeof v);
    return KILN_OK;
}

static kiln_result a_program_wait(struct req *q)
{
    kiln_program p = {((const struct pipe_rec_handle *)q->rec)->id};
    KILN_TRY(no_tail(q));
    /* The compile runs on the service's workers: poll its state with the
     * device let go, then ask for the verdict. */
    for (uint64_t nap = 50 * 1000;; nap = KILN_MIN(nap * 2, SLICE_NS / 2)) {
        kiln_program_state st;
        KILN_TRY(OP(q, program_status, p, &st));
        if (st != KILN_PROGRAM_PENDING)
            break;
        nanosleep(&(struct timespec){0, (long)nap}, NULL);
    }
    /* Ready: its interface comes with the answer (the client memoizes it,
     * and runs ahead the calls it bounds). */
    KILN_TRY(OP(q, program_wait, p));
    kiln_program_interface iface;
    KILN_TRY(OP(q, program_interface_get, p, &iface));
    put_out(q, &iface, sizeof iface);
    return KILN_OK;
}

static kiln_result a_program_log(struct req *q)
{
    const struct pipe_rec_list *r = q->rec;
    KILN_TRY(no_tail(q));
    size_t cap = KILN_MIN(r->cap, PIPE_OUT_MAX), len = 0;
    char *buf = mem_alloc(cap + 1);
    if (!buf)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a program log");
    kiln_result res = OP(q, program_log, (kiln_program){r->id}, buf, cap + 1, &len);
    if (res == KILN_OK) {
        uint64_t full = len;
        put_out(q, &full, sizeof full);
        put_out(q, buf, KILN_MIN(len, cap));
    }
    free(buf);
    return res;
}

static kiln_result a_program_interface_get(struct req *q)
{
    kiln_program_interface *iface = mem_alloc(sizeof *iface);
    if (!iface)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for an interface");
    kiln_result res = no_tail(q);
    if (res == KILN_OK)
        res = OP(q, program_interface_get, (kiln_program){((const struct pipe_rec_handle *)q->rec)->id}, iface);
    if (res == KILN_OK)
        put_out(q, iface, sizeof *iface);
    free(iface);
    return res;
}

/* ---- schemes and nodes ------------------------------------------------------------------------ */

/* A scheme or node the client minted (its id) was not made: the context's
 * pool moves on as the client's did, so the next id it mints is taken. */
static kiln_result unmade(struct req *q, uint64_t id, kiln_result r)
{
    if (r < 0 && id && q->c) {
        lock(q->cl);
        ctx_mint_void(q->c, id);
        unlock(q->cl);
    }
    return r;
}

static kiln_result scheme_create(struct req *q, uint64_t id)
{
    kiln_scheme_desc d = {0};
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "label", false, &d.label, NULL));
    KILN_TRY(tail_done(q, "the scheme desc"));
    lock(q->cl);
    kiln_result res = quota_objects(q, 1);
    unlock(q->cl);
    KILN_TRY(res);
    kiln_scheme s;
    KILN_TRY(leave(q, enter(q) == KILN_OK ? (ctx_mint(q->c, id), q->c->ops->scheme_create(q->c, &d, &s)) : KILN_OK));
    put_out(q, &s.id, sizeof s.id);
    return KILN_OK;
}

static kiln_result a_scheme_create(struct req *q)
{
    uint64_t id = ((const struct pipe_rec_scheme *)q->rec)->id;
    return unmade(q, id, scheme_create(q, id));
}

static kiln_result a_scheme_destroy(struct req *q)
{
    KILN_TRY(no_tail(q));
    return OP(q, scheme_destroy, (kiln_scheme){((const struct pipe_rec_handle *)q->rec)->id});
}

static kiln_result add_node(struct req *q)
{
    const struct pipe_rec_node *r = q->rec;
    if (r->binding_count > KILN_MAX_DESCRIPTORS || r->param_count > KILN_MAX_PARAM_WORDS ||
        r->reach_count > KILN_MAX_REACHES)
        return KILN_RAISE(KILN_ERR_LIMIT, "node desc: %u bindings (at most %d), %u params (at most %d), %u buffers "
                          "reached (at most %d)", r->binding_count, KILN_MAX_DESCRIPTORS, r->param_count,
                          KILN_MAX_PARAM_WORDS, r->reach_count, KILN_MAX_REACHES);
    kiln_binding bindings[KILN_MAX_DESCRIPTORS];
    uint32_t params[KILN_MAX_PARAM_WORDS];
    kiln_buffer reaches[KILN_MAX_REACHES];
    kiln_node_desc d = {.program = {r->program}, .binding_count = r->binding_count, .param_count = r->param_count,
                        .bindings = bindings, .params = params, .reaches = reaches, .reach_count = r->reach_count};
    memcpy(d.groups, r->groups, sizeof d.groups);
    bytes_read_copy(&q->tail, bindings, (size_t)r->binding_count * sizeof bindings[0]);
    bytes_read_copy(&q->tail, params, (size_t)r->param_count * sizeof params[0]);
    bytes_read_copy(&q->tail, reaches, (size_t)r->reach_count * sizeof reaches[0]);
    KILN_TRY(pipe_read_str(&q->tail, &q->arena, "label", false, &d.label, NULL));
    KILN_TRY(tail_done(q, "the node desc"));
    lock(q->cl);
    kiln_result res = quota_objects(q, 1);
    unlock(q->cl);
    KILN_TRY(res);
    kiln_node n;
    KILN_TRY(leave(q, enter(q) == KILN_OK
                          ? (ctx_mint(q->c, r->node), q->c->ops->scheme_add_node(q->c, (kiln_scheme){r->scheme}, &d, &n))
                          : KILN_OK));
    if (q->posted)
        return KILN_OK;   /* no answer goes back: the client knew the words */
    /* The node's param words, final once its program is ready: the client
     * checks a param slot against them itself, and runs set_param ahead. */
    kiln_program_state ps = KILN_PROGRAM_PENDING;
    uint32_t word, words = 0;
    kiln_program_interface iface;
    bool final = OP(q, program_status, d.program, &ps) == KILN_OK && ps == KILN_PROGRAM_READY &&
                 OP(q, node_get_params, n, &word, 0, &words) == KILN_OK &&
                 OP(q, program_interface_get, d.program, &iface) == KILN_OK;
    struct pipe_node_made made = {.id = n.id, .param_words = final ? words : PIPE_WORDS_UNKNOWN,
                                  .own_block = final && iface.own_push_block};
    put_out(q, &made, sizeof made);
    return KILN_OK;
}

static kiln_result a_scheme_add_node(struct req *q)
{
    uint64_t id = ((const struct pipe_rec_node *)q->rec)->node;
    return unmade(q, id, add_node(q));
}

/* The client's ticket k as a device ticket (k at most its newest). */
static uint64_t dev_ticket(const struct srv_client *cl, uint64_t k)
{
    if (!k || !cl->dev_tickets)
        return 0;
    uint64_t oldest = cl->tickets >= SRV_TICKETS_KEPT ? cl->tickets - SRV_TICKETS_KEPT + 1 : 1;
    return cl->dev_tickets[KILN_MAX(k, oldest) % SRV_TICKETS_KEPT];
}

/* The client numbers its tickets (pipe_rec_submit); the number is taken
 * before anything can fail, so a refused submit's ticket still names
 * something: the submit before it. */
static kiln_result a_scheme_submit(struct req *q)
{
    const struct pipe_rec_submit *r = q->rec;
    struct srv_client *cl = q->cl;
    if (r->ticket && r->ticket != cl->tickets + 1)
        return KILN_RAISE(KILN_ERR_INVALID, "request: submit numbered ticket %llu; this client's next is %llu",
                          (unsigned long long)r->ticket, (unsigned long long)cl->tickets + 1);
    if (!cl->dev_tickets && !(cl->dev_tickets = mem_calloc(SRV_TICKETS_KEPT, sizeof *cl->dev_tickets)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %s's tickets", cl->who);
    uint64_t k = ++cl->tickets, *dev = &cl->dev_tickets[k % SRV_TICKETS_KEPT];
    *dev = k > 1 ? cl->dev_tickets[(k - 1) % SRV_TICKETS_KEPT] : 0;
    kiln_ticket t = {0};
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, scheme_submit, (kiln_scheme){r->scheme}, &t));
    *dev = t.value;
    put_out(q, &k, sizeof k);
    return KILN_OK;
}

static kiln_result a_scheme_stats_get(struct req *q)
{
    kiln_scheme_stats st;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, scheme_stats_get, (kiln_scheme){((const struct pipe_rec_handle *)q->rec)->id}, &st));
    put_out(q, &st, sizeof st);
    return KILN_OK;
}

static kiln_result a_node_remove(struct req *q)
{
    KILN_TRY(no_tail(q));
    return OP(q, node_remove, (kiln_node){((const struct pipe_rec_handle *)q->rec)->id});
}

static kiln_result a_node_set_param(struct req *q)
{
    const struct pipe_rec_param *r = q->rec;
    KILN_TRY(no_tail(q));
    return leave(q, enter(q) == KILN_OK ? ctx_node_set_param_for(q->c, (kiln_node){r->node}, r->program, r->slot,
                                                                 r->word)
                                        : KILN_OK);
}

static kiln_result a_node_set_program(struct req *q)
{
    const struct pipe_rec_pair *r = q->rec;
    KILN_TRY(no_tail(q));
    return OP(q, node_set_program, (kiln_node){r->a}, (kiln_program){r->b});
}

/* A list answer: [u32 total][u32 0][items]. fetch fills up to cap items
 * into a scratch array and says how many there are. */
static kiln_result list_out(struct req *q, size_t item, uint32_t most, kiln_result (*fetch)(struct req *, void *,
                                                                                              uint32_t, uint32_t *))
{
    const struct pipe_rec_list *r = q->rec;
    KILN_TRY(no_tail(q));
    uint32_t cap = KILN_MIN(r->cap, most), total = 0;
    void *items = cap ? mem_calloc(cap, item) : NULL;
    if (cap && !items)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a list of %u", cap);
    kiln_result res = fetch(q, items, cap, &total);
    if (res == KILN_OK) {
        uint32_t head[2] = {total, 0};
        put_out(q, head, sizeof head);
        put_out(q, items, (size_t)KILN_MIN(cap, total) * item);
    }
    free(items);
    return res;
}

static kiln_result fetch_params(struct req *q, void *items, uint32_t cap, uint32_t *total)
{
    const struct pipe_rec_list *r = q->rec;
    return OP(q, node_get_params, (kiln_node){r->id}, items ? items : (void *)total, cap, total);
}

static kiln_result a_node_get_params(struct req *q)
{
    return list_out(q, sizeof(uint32_t), KILN_MAX_PARAM_WORDS, fetch_params);
}

static kiln_result a_ticket_wait(struct req *q)
{
    const struct pipe_rec_wait *r = q->rec;
    KILN_TRY(no_tail(q));
    if (r->ticket > q->cl->tickets)
        return KILN_RAISE(KILN_ERR_INVALID, "ticket %llu was never issued by this context (newest: %llu)",
                          (unsigned long long)r->ticket, (unsigned long long)q->cl->tickets);
    return wait_sliced(q, dev_ticket(q->cl, r->ticket), r->timeout_ns);
}

static kiln_result a_archive_info_get(struct req *q)
{
    kiln_archive_info info;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, archive_info_get, &info));
    put_out(q, &info, sizeof info);
    return KILN_OK;
}

static kiln_result fetch_files(struct req *q, void *items, uint32_t cap, uint32_t *total)
{
    const struct pipe_rec_list *r = q->rec;
    return OP(q, archive_files, r->first, items, cap, total);
}

static kiln_result a_archive_files(struct req *q)
{
    return list_out(q, sizeof(kiln_archive_file), (PIPE_OUT_MAX - 8) / sizeof(kiln_archive_file), fetch_files);
}

/* The archive is the server's, shared by every client: its life (gc,
 * compaction) is the server's to decide, never a client's. */
static kiln_result a_archive_tidy(struct req *q)
{
    KILN_TRY(no_tail(q));
    return KILN_RAISE(KILN_ERR_INVALID, "archive tidy: refused to %s: the server's archive is shared by all its "
                      "clients and tidied by the server alone (run kiln archive gc or compact where the server "
                      "runs)", q->cl->who);
}

static kiln_result a_context_precompile(struct req *q)
{
    const struct pipe_rec_precompile *r = q->rec;
    kiln_precompile_desc d = {r->stall_s};
    kiln_precompile_result res;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, context_precompile, &d, &res));
    put_out(q, &res, sizeof res);
    return KILN_OK;
}

static kiln_result fetch_events(struct req *q, void *items, uint32_t cap, uint32_t *total)
{
    const struct pipe_rec_list *r = q->rec;
    return OP(q, scheme_spec_events, (kiln_scheme){r->id}, items, cap, total);
}

static kiln_result a_scheme_spec_events(struct req *q)
{
    return list_out(q, sizeof(kiln_spec_event), 256, fetch_events);
}

static kiln_result a_node_is_specialized(struct req *q)
{
    int v = 0;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, node_is_specialized, (kiln_node){((const struct pipe_rec_handle *)q->rec)->id}, &v));
    int32_t w = v;
    put_out(q, &w, sizeof w);
    return KILN_OK;
}

static kiln_result a_buffer_address(struct req *q)
{
    uint64_t a = 0;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, buffer_address, (kiln_buffer){((const struct pipe_rec_handle *)q->rec)->id}, &a));
    put_out(q, &a, sizeof a);
    return KILN_OK;
}

static kiln_result a_compiles_pending(struct req *q)
{
    uint32_t n = 0;
    KILN_TRY(no_tail(q));
    KILN_TRY(OP(q, compiles_pending, &n));
    put_out(q, &n, sizeof n);
    return KILN_OK;
}

static const apply_fn appliers[] = {
#define X(name, record, class, flags, ...) [PIPE_OP_##name] = a_##name,
#define L(name, record, class, flags) X(name, record, class, flags, )
#include "context/calls.def"
#undef L
#undef X
};
_Static_assert(sizeof appliers / sizeof appliers[0] == PIPE_OPS, "one applier per catalogue row");

/* ---- one request -------------------------------------------------------------------------- */

/* The reply: head, message, out. */
void srv_reply(struct bytes *rep, uint32_t op, uint64_t seq, kiln_result r, const struct bytes *out)
{
    const char *msg = r < 0 ? err_last() : "";
    size_t mlen = strlen(msg);
    if (mlen > 4096)
        mlen = 4096;
    struct pipe_rep head = {.op = op, .result = r, .seq = seq, .msg_size = (uint32_t)mlen,
                            .out_size = r < 0 ? 0 : (uint32_t)out->len};
    rep->len = 0;
    bytes_put(rep, &head, sizeof head);
    bytes_put(rep, msg, mlen);
    if (r >= 0)
        bytes_put(rep, out->p, out->len);
}

/* ---- the client's work in flight (SRV_AHEAD_WORK) -------------------------------------------- */

/* Before a call of len bytes: while the client's work in flight is at its
 * bound, waits for its oldest piece (in slices, the device let go), so a
 * flood of run-ahead calls slows its own sender alone. A wait that fails
 * (the client's fault, a lost device) ends the pacing: the call itself
 * then meets that state. */
static bool at_bound(const struct srv_client *cl, uint64_t len)
{
    return cl->ahead_n && (cl->ahead_n == SRV_AHEAD_WORK || cl->ahead_bytes + len > SRV_AHEAD_BYTES);
}

static void pace(struct srv_client *cl, uint64_t len)
{
    if (!at_bound(cl, len))
        return;
    uint64_t t0 = time_now_ns();
    while (at_bound(cl, len)) {
        struct srv_ahead *a = &cl->ahead[cl->ahead_first];
        if (settle_to(cl, a->ticket) < 0) {
            err_clear();
            cl->ahead_n = 0;
            cl->ahead_bytes = 0;
            break;
        }
        cl->ahead_first = (cl->ahead_first + 1) % SRV_AHEAD_WORK;
        cl->ahead_n--;
        cl->ahead_bytes -= a->bytes;
    }
    cl->stats.paced++;
    cl->stats.paced_ns += time_now_ns() - t0;
}

/* After a call of len bytes: the work it left running, if any, joins the
 * client's work in flight. */
static void ahead_note(struct srv_client *cl, uint64_t len)
{
    uint64_t t = ctx_last_ticket(cl->ctx);   /* this connection's thread alone moves it */
    if (t <= cl->ahead_ticket)
        return;
    cl->ahead_ticket = t;
    KILN_ASSERT(cl->ahead_n < SRV_AHEAD_WORK);   /* pace made room, or emptied it on a failed wait */
    cl->ahead[(cl->ahead_first + cl->ahead_n) % SRV_AHEAD_WORK] = (struct srv_ahead){t, len};
    cl->ahead_n++;
    cl->ahead_bytes += len;
}

bool srv_apply(struct srv_client *cl, const uint8_t *req, size_t len, struct bytes *rep)
{
    err_clear();
    struct pipe_req head = {0};
    uint64_t recbuf[16];   /* the largest record, aligned */
    struct bytes out = cl->out;   /* kept from the last request: no allocation per call */
    out.len = 0;
    out.oom = false;
    kiln_result r;
    bool go_on = true;
    if (len < sizeof head) {
        r = KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: a request of %zu bytes (a head is %zu)", len, sizeof head);
        go_on = false;
    } else {
        memcpy(&head, req, sizeof head);
        uint32_t rec_size = pipe_op_rec_size(head.op);
        if (head.op >= PIPE_OPS) {
            r = KILN_RAISE(KILN_ERR_INVALID, "request: unknown call %u (this server knows %u)", head.op, PIPE_OPS);
        } else if (head.rec_size != rec_size || (head.flags & ~(uint32_t)PIPE_REQ_POSTED) ||
                   (uint64_t)head.tail_size != len - sizeof head - KILN_MIN(len - sizeof head, rec_size) ||
                   len - sizeof head < rec_size) {
            r = KILN_RAISE(KILN_ERR_PROTOCOL, "protocol mismatch: %s's request says a %u-byte record and %u tail bytes "
                           "(flags %x) in %zu bytes; its record is %u bytes", pipe_op_name(head.op),
                           head.rec_size, head.tail_size, head.flags, len, rec_size);
            go_on = false;
        } else if (!cl->ctx && head.op != PIPE_OP_context_create) {
            r = KILN_RAISE(KILN_ERR_HANDLE, "request: %s before the connection's context was made",
                           pipe_op_name(head.op));
        } else {
            memcpy(recbuf, req + sizeof head, rec_size);
            struct req q = {.cl = cl, .c = cl->ctx, .rec = recbuf, .out = &out,
                            .posted = (head.flags & PIPE_REQ_POSTED) != 0};
            bytes_reader_init(&q.tail, req + sizeof head + rec_size, head.tail_size);
            pipe_arena_init(&q.arena, head.tail_size);
            if (cl->ctx)
                pace(cl, len);
            r = appliers[head.op](&q);
            if (cl->ctx)
                ahead_note(cl, len);
            pipe_arena_finish(&q.arena);
            if (out.oom && r >= 0)
                r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %s's reply", pipe_op_name(head.op));
            if (head.op == PIPE_OP_context_destroy && r == KILN_OK)
                go_on = false;
            if (head.op == PIPE_OP_context_create && r == KILN_ERR_PROTOCOL)
                go_on = false;   /* another protocol version: nothing more will make sense */
        }
    }
    cl->calls++;
    cl->refused += r < 0;
    bool posted = (head.flags & PIPE_REQ_POSTED) && go_on;
    if (posted && r >= 0)
        rep->len = 0;   /* run ahead and done: nothing to answer */
    else
        srv_reply(rep, head.op, head.seq, r, &out);
    if (cl->srv->stats_on && head.op < PIPE_OPS) {
        enum pipe_class cls = pipe_op_class(head.op);
        cl->stats.calls[cls]++;
        cl->stats.bytes_received[cls] += len;
        cl->stats.bytes_sent[cls] += rep->len;
        cl->stats.refused += r < 0;
        cl->stats.posted += posted;
        cl->stats.deferred += posted && r < 0;
        cl->stats.applied++;
        if (head.op == PIPE_OP_scheme_submit && ++cl->stats.submits == PIPE_STATS_EVERY)
            pipe_stats_flush(&cl->stats, PIPE_SIDE_SERVER, cl->who, cl->srv->stats_log, cl->srv->stats_file);
    }
    if (out.cap > PIPE_OUT_MAX) {   /* an inline readback's: not kept */
        free(out.p);
        out = (struct bytes){0};
    }
    cl->out = out;
    return go_on;
}

kiln_result srv_client_open(struct srv *s, srv_segment_fn segment, void *ud, struct srv_client **out)
{
    struct srv_client *cl = mem_calloc(1, sizeof *cl);
    if (!cl)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a client");
    cl->srv = s;
    cl->segment = segment;
    cl->segment_ud = ud;
    pthread_mutex_lock(&s->mu);
    snprintf(cl->who, sizeof cl->who, "client %llu", (unsigned long long)++s->served);
    pthread_mutex_unlock(&s->mu);
    *out = cl;
    return KILN_OK;
}

void srv_client_close(struct srv_client *cl)
{
    if (!cl)
        return;
    if (cl->ctx) {
        /* Death by handle: everything the context holds goes, in the
         * context's own order (its work waited for, schemes before the
         * programs and buffers they use). */
        uint32_t high = ctx_gen_high(cl->ctx);
        /* Its work ends first, so nothing of its is freed under that work:
         * not its objects, not the import of its segment (nor the segment,
         * unmapped after this returns). */
        settle(cl);
        srv_client_unimport(cl);
        lock(cl);
        cl->ctx->ops->destroy(cl->ctx);
        srv_host_release(cl->srv, cl->host);   /* an old host goes with its last client */
        unlock(cl);
        struct srv *s = cl->srv;
        pthread_mutex_lock(&s->mu);
        uint32_t k = cl->serial & 0xff;
        s->serial_floor[k] = KILN_MAX(s->serial_floor[k], high);
        s->serial_live[k]--;
        pthread_mutex_unlock(&s->mu);
    }
    if (cl->srv->stats_on && cl->stats.applied)   /* what came since the last summary */
        pipe_stats_flush(&cl->stats, PIPE_SIDE_SERVER, cl->who, cl->srv->stats_log, cl->srv->stats_file);
    log_info("%s: gone after %llu calls (%llu refused)", cl->who, (unsigned long long)cl->calls,
             (unsigned long long)cl->refused);
    free(cl->out.p);
    free(cl->dev_tickets);
    free(cl);
}
