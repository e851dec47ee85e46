/* SPDX-License-Identifier: MIT */
/*
 * context.c: the local runtime: every public call as it runs in-process.
 *
 * Handles are resolved here, through the context's pools, and every refusal
 * names the object and why (pool_why). Destroying an object another object
 * still uses (a buffer bound by a node, a program run by a node) is
 * KILN_ERR_BUSY: nothing is freed under a recorded scheme.
 *
 * Waits let the context go (see "waits" below): a call waiting on a
 * ticket, a compile, a transfer or a precompile holds no lock while it
 * waits, so other threads' calls on the context go on. Destroying an
 * object waits, the context let go, for the submits that use it; a call
 * of another thread that was waiting on the object then finds its handle
 * gone (KILN_ERR_HANDLE, naming it).
 *
 * A lost device (backend.h: the driver said so, or work outlived the
 * context's device timeout) fails every later call (ctx_live, called by
 * api/ before each). Destroy then waits for nothing: a lost device whose
 * work is unfinished is abandoned to it (kb_abandon), everything kiln holds
 * on the host is freed, and the close line says what was left.
 */
#include "context_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/trace.h"
#include "compile/compile.h"
#include "scheme/scheme.h"

#define GET(pool, type, what, h, out)                                                              \
    do {                                                                                           \
        (out) = pool_get(&c->pool, (h).id);                                                        \
        if (!(out))                                                                                \
            return KILN_RAISE(KILN_ERR_HANDLE, "%s 0x%016llx: %s", what, (unsigned long long)(h).id, \
                              pool_why(&c->pool, (h).id));                                         \
    } while (0)

#ifdef KILN_TEST_HOOKS
struct kb_device *ctx_device(struct kctx *kc) {
    struct lctx *c = lctx_of(kc); return c->dev; }
#endif

kiln_result ctx_live(struct kctx *kc)
{
    if (!ctx_is_local(kc))
        return KILN_OK;   /* a remote context: the server judges its device */
    struct lctx *c = lctx_of(kc);
    if (atomic_load(&c->fault))
        return KILN_RAISE(KILN_ERR_DEVICE_LOST, "%s", c->fault_why);
    return c->dev ? kb_live(c->dev) : KILN_OK;
}

void ctx_device_enter(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    if (c->dev && c->host) {
        c->dev->owner = c;
        c->dev->owner_timeout_ns = c->timeout_ns;
    }
}

void ctx_device_leave(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    if (c->dev && c->host) {
        c->dev->owner = NULL;
        c->dev->owner_timeout_ns = 0;
    }
}

void ctx_client_fault(void *ud, const void *owner, const char *why)
{
    (void)ud;
    struct lctx *c = (struct lctx *)owner;
    if (atomic_load(&c->fault))
        return;
    snprintf(c->fault_why, sizeof c->fault_why, "%s", why);
    atomic_store(&c->fault, true);
    log_warn("%s", why);
}

kiln_result ctx_settle(struct kctx *kc, uint64_t ticket, uint64_t slice_ns)
{
    struct lctx *c = lctx_of(kc);
    if (!c->dev || !ticket || kb_ticket_done(c->dev) >= ticket)
        return KILN_OK;
    ctx_device_enter(&c->base);
    kiln_result r = kb_ticket_wait(c->dev, ticket, slice_ns);
    ctx_device_leave(&c->base);
    return r;
}

kiln_result ctx_drain(struct kctx *kc, uint64_t slice_ns) { return ctx_settle(kc, lctx_of(kc)->last_ticket, slice_ns); }

kiln_result ctx_seen(struct kctx *kc, kiln_result r)
{
    if (!ctx_is_local(kc))
        return r;
    struct lctx *c = lctx_of(kc);
    if (r == KILN_ERR_DEVICE_LOST && atomic_load(&c->fault))
        return r;   /* this client's own fault: the device is not lost for it */
    return c->dev ? kb_seen(c->dev, r) : r;
}

/* ---- waits ---------------------------------------------------------------------------- */

/* A call that waits lets the context go for the wait (let_go, take_back):
 * the mutex its calls are made under (kctx.held) is let go, and on a
 * server's client context the host device's owner too, so other threads'
 * calls on the context, and a server's other clients, run meanwhile. What
 * the caller resolved before is stale after: it resolves its handles
 * again. A closing context (l_destroy, which runs with nothing held) waits
 * holding what it holds. */
static void let_go(struct lctx *c)
{
    if (c->closing)
        return;
    ctx_device_leave(&c->base);
    pthread_mutex_unlock(c->base.held);
}

static void take_back(struct lctx *c)
{
    if (c->closing)
        return;
    pthread_mutex_lock(c->base.held);
    ctx_device_enter(&c->base);
}

/* Waits for ticket, at most timeout_ns, with the context let go. */
static kiln_result wait_ticket(struct lctx *c, uint64_t ticket, uint64_t timeout_ns)
{
    if (!ticket || (kb_ticket_done(c->dev) >= ticket && !kb_is_lost(c->dev)))
        return KILN_OK;
    const void *owner = c->host ? c : NULL;   /* as ctx_device_enter makes it */
    let_go(c);
    kiln_result r = kb_ticket_wait_as(c->dev, owner, ticket, timeout_ns);
    take_back(c);
    return r;
}

/* The backend's wait for a transfer of its own (struct kb_wait). */
static kiln_result wait_transfer(void *ud, uint64_t ticket) { return wait_ticket(ud, ticket, UINT64_MAX); }

/* Waits, with the context let go, for the compile of p (marking it
 * wanted). p may be gone when this returns: the caller resolves it again. */
static void wait_compile(struct lctx *c, struct prog *p)
{
    if (prog_refresh(p) != KILN_PROGRAM_PENDING)
        return;
    struct csvc *svc = p->svc;
    struct cjob *front = p->front;
    csvc_adopt(svc, front);   /* the wait's own hold: a destroy of p meanwhile frees nothing it waits on */
    let_go(c);
    struct csvc_result res;
    (void)csvc_wait(svc, front, true, &res);
    csvc_release(svc, front);
    take_back(c);
}

/* Notes work a call left running (a submit, a fill, a staged upload) as
 * the context's newest, and under KILN_SYNC=1 waits for it, so that every
 * call waits for its work and an error appears at its call. */
static kiln_result made(struct lctx *c, uint64_t ticket)
{
    c->last_ticket = KILN_MAX(c->last_ticket, ticket);
    return c->sync ? wait_ticket(c, ticket, UINT64_MAX) : KILN_OK;
}

/* ---- for a server (context.h) ------------------------------------------------------- */

void ctx_calls_under(struct kctx *kc, pthread_mutex_t *mu) { kc->held = mu; }


uint64_t ctx_objects_held(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    return (uint64_t)c->buffers.live + c->images.live + c->programs.live + c->schemes.live + c->nodes.live;
}

uint32_t ctx_programs_pending(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    uint32_t cur = 0, n = 0;
    uint64_t id;
    struct prog *p;
    while ((p = pool_next(&c->programs, &cur, &id)))
        n += prog_refresh(p) == KILN_PROGRAM_PENDING;
    return n;
}

bool ctx_buffer_size(struct kctx *kc, kiln_buffer b, uint64_t *size)
{
    const struct kb_buffer *kb = pool_get(&lctx_of(kc)->buffers, b.id);
    *size = kb ? kb->size : 0;
    return kb != NULL;
}

bool ctx_image_bytes(struct kctx *kc, kiln_image i, uint64_t *bytes)
{
    const struct kb_image *ki = pool_get(&lctx_of(kc)->images, i.id);
    *bytes = ki ? ki->bytes : 0;
    return ki != NULL;
}

uint64_t ctx_last_ticket(struct kctx *kc) { return lctx_of(kc)->last_ticket; }
kiln_backend_kind ctx_backend(struct kctx *kc) { return lctx_of(kc)->dev->caps.backend; }
uint64_t ctx_max_buffer_size(struct kctx *kc) { return lctx_of(kc)->dev->caps.max_buffer_size; }

bool ctx_device_lost(struct kctx *kc, char *why, size_t cap)
{
    struct kb_device *d = lctx_of(kc)->dev;
    bool lost = d && kb_is_lost(d);
    if (cap)
        snprintf(why, cap, "%s", lost ? d->lost_why : "");
    return lost;
}

void ctx_host_route_faults(struct kctx *host)
{
    struct kb_device *d = lctx_of(host)->dev;
    d->fault = ctx_client_fault;   /* its fault_ud stays NULL: the owner says whose */
    d->fault_ud = NULL;
}

/* ---- context ------------------------------------------------------------------------ */

static kiln_result l_context_caps(struct kctx *kc, kiln_caps *out)
{
    struct lctx *c = lctx_of(kc);
    *out = c->dev->caps;
    return KILN_OK;
}

static kiln_result l_context_wait_idle(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    kiln_result r = wait_ticket(c, c->last_ticket, UINT64_MAX);
    kb_trace_done(c->dev, &c->traced);
    return r;
}

static kiln_result l_context_stats_get(struct kctx *kc, kiln_context_stats *out)
{
    struct lctx *c = lctx_of(kc);
    c->stats.buffers = c->buffers.live;
    c->stats.images = c->images.live;
    c->stats.programs = c->programs.live;
    c->stats.schemes = c->schemes.live;
    c->stats.nodes = c->nodes.live;
    c->stats.validation_errors = atomic_load(&c->dev->validation_errors);
    c->stats.validation_warnings = atomic_load(&c->dev->validation_warnings);
    c->stats.check_findings = atomic_load(&c->dev->check_findings);
    c->stats.programs_compiled = c->stats.programs_failed = 0;
    uint32_t cur = 0;
    struct prog *p;
    while ((p = pool_next(&c->programs, &cur, NULL))) {
        kiln_program_state st = prog_refresh(p);
        c->stats.programs_compiled += st == KILN_PROGRAM_READY;
        c->stats.programs_failed += st == KILN_PROGRAM_FAILED;
    }
    struct csvc_stats cs = csvc_stats_get(c->svc);
    c->stats.compile_requests = cs.requests;
    c->stats.compiles_started = cs.started;
    c->stats.compiles_adopted = cs.adopted;
    c->stats.compiles_deduplicated = cs.deduplicated;
    c->stats.compiles_failed = cs.failed;
    c->stats.compiles_pending = csvc_pending(c->svc);
    c->stats.giants_deferred = cs.giants_deferred;
    c->stats.retries_alone = cs.retries_alone;
    c->stats.slow_compiles = cs.slow;
    c->stats.front_end_seconds = cs.front_s;
    c->stats.archive_hits = cs.archive_hits;
    c->stats.archive_added = cs.archive_added;
    c->stats.archive_pipeline_hits = cs.archive_back_hits;
    c->stats.archive_pipelines_added = cs.archive_back_added;
    c->stats.archive_qa_compiles = cs.qa_compiles;
    c->stats.archive_misses = 0;
    for (int i = ARC_ABSENT; i < ARC_CAUSE_COUNT; i++)
        c->stats.archive_misses += cs.archive_misses[i];
    struct arc_store_stats as = arc_store_stats_get(c->archive);
    c->stats.archive_not_kept = as.over_bound;
    c->stats.archive_runs_saved = as.saved;
    c->stats.archive_saves_failed = as.saves_failed;
    c->stats.archive_entries_let_go = as.entries_let_go;
    c->stats.back_end_seconds = cs.back_s;
    c->stats.skipped_nodes = c->skipped_nodes;
    cur = 0;
    struct scheme *s;
    while ((s = pool_next(&c->schemes, &cur, NULL)))
        c->stats.skipped_nodes += s->stats.skipped_nodes;
    *out = c->stats;
    return KILN_OK;
}

/* ---- images ------------------------------------------------------------------------- */

static kiln_result l_image_create(struct kctx *kc, const kiln_image_desc *desc, kiln_image *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_image_desc d = kiln_image_desc_defaults(desc);
    const kiln_caps *caps = &c->dev->caps;
    const char *fname = kiln_format_name(d.format);
    if (!d.width || !d.height)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': %ux%u texels; width and height are at least 1", d.label,
                          d.width, d.height);
    if (d.dims < 1 || d.dims > 3)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': dims %u; an image is 1D, 2D or 3D", d.label, d.dims);
    if (d.dims < 3 && d.depth != 1)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': a %uD image of depth %u; give dims 3 (or depth 1)", d.label,
                          d.dims, d.depth);
    if (d.dims == 1 && d.height != 1)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': a 1D image of height %u; a 1D image's height is 1", d.label,
                          d.height);
    if (d.dims == 3 && d.layers != 1)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': a 3D image of %u layers; a 3D image has one (its slices are "
                          "its depth)", d.label, d.layers);
    if (d.cube && (d.dims != 2 || d.width != d.height || d.layers % 6))
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': a cube map is 2D, square and six layers a cube; this one is "
                          "%uD, %ux%u, %u layers", d.label, d.dims, d.width, d.height, d.layers);
    if (d.cube && d.layers != 6)
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': a cube array (%u layers, %u cubes): kiln makes cube maps of one "
                          "cube", d.label, d.layers, d.layers / 6);
    if (d.layers > caps->max_image_array_layers)
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': %u layers; the device allows %u (maxImageArrayLayers)", d.label,
                          d.layers, caps->max_image_array_layers);
    uint32_t side = KILN_MAX(d.width, KILN_MAX(d.height, d.depth)), most_levels = 1;
    while (side >> most_levels)
        most_levels++;
    if (d.levels > most_levels)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': %u mip levels; a %ux%ux%u image has at most %u (down to 1 "
                          "texel a side)", d.label, d.levels, d.width, d.height, d.depth, most_levels);
    if (!fname)
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': format %d is no kiln_format (r32f, rgba8, ...)", d.label,
                          (int)d.format);
    if (d.usage & ~(uint32_t)(KILN_IMAGE_STORAGE | KILN_IMAGE_SAMPLED))
        return KILN_RAISE(KILN_ERR_INVALID, "image '%s': unknown usage bits 0x%x", d.label, d.usage);
    uint32_t most = d.cube ? caps->max_image_dimension_cube
                    : d.dims == 3 ? caps->max_image_dimension_3d
                    : d.dims == 2 ? caps->max_image_dimension_2d
                                  : caps->max_image_dimension_1d;
    if (d.width > most || d.height > most || (d.dims == 3 && d.depth > most))
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': %ux%ux%u texels; the device allows %u a side for %s images "
                          "(maxImageDimension%s)", d.label, d.width, d.height, d.depth, most,
                          d.cube ? "cube" : d.dims == 3 ? "3D" : d.dims == 2 ? "2D" : "1D",
                          d.cube ? "Cube" : d.dims == 3 ? "3D" : d.dims == 2 ? "2D" : "1D");
    struct kb_image want = {.width = d.width, .height = d.height, .depth = d.depth, .dims = d.dims,
                            .layers = d.layers, .levels = d.levels, .cube = d.cube != 0, .format = d.format};
    uint64_t bytes = 0;
    for (uint32_t l = 0; l < d.levels; l++)
        bytes += kb_image_part_bytes(&want, &(struct kb_image_part){l, 0, d.layers});
    if (bytes > caps->max_buffer_size)   /* uploads and readbacks stage it in one buffer */
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': %llu bytes; kiln stages an image in one buffer, and the device "
                          "allows %llu (max_buffer_size)", d.label, (unsigned long long)bytes,
                          (unsigned long long)caps->max_buffer_size);
    bool linear;
    uint32_t can = kb_image_usage(c->dev, d.format, d.dims, &linear);
    if (!can)
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': the device supports %uD %s images neither as storage nor as "
                          "sampled images", d.label, d.dims, fname);
    uint32_t usage = d.usage ? d.usage : can;
    if (usage & ~can)
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': the device does not support %uD %s images as %s images",
                          d.label, d.dims, fname, (usage & ~can & KILN_IMAGE_STORAGE) ? "storage" : "sampled");
    want.usage = usage;
    want.bytes = bytes;
    snprintf(want.label, sizeof want.label, "%s", d.label);
    struct kb_image *img;
    KILN_TRY(kb_image_create(c->dev, &want, &img));
    kiln_result r = pool_insert(&c->images, img, "image", &img->id);
    if (r < 0) {
        (void)kb_ticket_wait(c->dev, img->last_use, UINT64_MAX);   /* its clear may run */
        kb_image_destroy(c->dev, img);
        return r;
    }
    out->id = img->id;
    return made(c, img->last_write);
}

static kiln_result l_image_destroy(struct kctx *kc, kiln_image h)
{
    struct lctx *c = lctx_of(kc);
    struct kb_image *img;
    for (;;) {   /* until no submit using it is running, the context let go while one is */
        GET(images, struct kb_image, "image", h, img);
        if (img->bind_refs)
            return KILN_RAISE(KILN_ERR_BUSY, "image '%s' is bound by %u node%s; remove them first", img->label,
                              img->bind_refs, img->bind_refs == 1 ? "" : "s");
        if (kb_ticket_done(c->dev) >= img->last_use)
            break;
        KILN_TRY(wait_ticket(c, img->last_use, UINT64_MAX));
    }
    pool_remove(&c->images, h.id);
    kb_image_destroy(c->dev, img);
    return KILN_OK;
}

/* The newest submit a host copy of an object's bytes must wait for: for a
 * write, any that uses them; for a read, any that may write them. A copy
 * the backend makes as a transfer of its own (not mapped) is ordered on
 * the device, and waits for nothing here. */
static uint64_t hazard(bool mapped, uint64_t last_use, uint64_t last_write, bool write)
{
    return !mapped ? 0 : write ? last_use : last_write;
}

static kiln_result image_io(struct lctx *c, kiln_image h, const kiln_image_part *given, void *data, uint64_t size,
                            bool upload)
{
    struct kb_image *img;
    struct kb_image_part part;
    for (;;) {   /* until the submits it must wait for are done, the context let go while they run */
        GET(images, struct kb_image, "image", h, img);
        if (!data)
            return KILN_RAISE(KILN_ERR_INVALID, "image '%s': data pointer is NULL", img->label);
        if (given) {
            part = (struct kb_image_part){given->level, given->layer, given->layers ? given->layers : 1};
            if (part.level >= img->levels || part.layer >= img->layers || part.layers > img->layers - part.layer)
                return KILN_RAISE(KILN_ERR_INVALID, "image '%s': level %u, layers %u..%u; it has %u level%s of %u "
                                  "layer%s", img->label, part.level, part.layer, part.layer + part.layers - 1,
                                  img->levels, img->levels == 1 ? "" : "s", img->layers, img->layers == 1 ? "" : "s");
            uint64_t want = kb_image_part_bytes(img, &part);
            if (size != want)
                return KILN_RAISE(KILN_ERR_INVALID, "image '%s': %llu bytes given; level %u's %u layer%s are %llu "
                                  "bytes", img->label, (unsigned long long)size, part.level, part.layers,
                                  part.layers == 1 ? "" : "s", (unsigned long long)want);
        } else if (size != img->bytes)
            return KILN_RAISE(KILN_ERR_INVALID, "image '%s': %llu bytes given; its %ux%ux%u %s texels (%u layer%s, "
                              "%u level%s) are %llu bytes (every texel %s at once)", img->label,
                              (unsigned long long)size, img->width, img->height, img->depth,
                              kiln_format_name(img->format), img->layers, img->layers == 1 ? "" : "s", img->levels,
                              img->levels == 1 ? "" : "s", (unsigned long long)img->bytes,
                              upload ? "is uploaded" : "is read back");
        uint64_t t = hazard(img->mapped, img->last_use, img->last_write, upload);
        if (kb_ticket_done(c->dev) >= t)
            break;
        KILN_TRY(wait_ticket(c, t, UINT64_MAX));
    }
    const struct kb_image_part *p = given ? &part : NULL;
    if (!upload)
        return kb_image_read(c->dev, img, p, data, &(struct kb_wait){wait_transfer, c});
    KILN_TRY(kb_image_write(c->dev, img, p, data));
    return made(c, img->last_write);
}

static kiln_result l_image_upload(struct kctx *kc, kiln_image h, const void *data, uint64_t size)
{
    struct lctx *c = lctx_of(kc);
    return image_io(c, h, NULL, (void *)data, size, true);
}

static kiln_result l_image_readback(struct kctx *kc, kiln_image h, void *data, uint64_t size)
{
    struct lctx *c = lctx_of(kc);
    return image_io(c, h, NULL, data, size, false);
}

static kiln_result l_image_upload_part(struct kctx *kc, kiln_image h, const kiln_image_part *part, const void *data,
                                       uint64_t size)
{
    return image_io(lctx_of(kc), h, part, (void *)data, size, true);
}

static kiln_result l_image_readback_part(struct kctx *kc, kiln_image h, const kiln_image_part *part, void *data,
                                         uint64_t size)
{
    return image_io(lctx_of(kc), h, part, data, size, false);
}

/* ---- buffers ------------------------------------------------------------------------ */

static kiln_result l_buffer_create(struct kctx *kc, const kiln_buffer_desc *desc, kiln_buffer *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_buffer_desc d = kiln_buffer_desc_defaults(desc);
    if (!d.size)
        return KILN_RAISE(KILN_ERR_INVALID, "buffer desc: size is 0; a buffer holds at least 1 byte");
    if (d.usage & ~(uint32_t)(KILN_BUFFER_STORAGE | KILN_BUFFER_UNIFORM | KILN_BUFFER_ADDRESS))
        return KILN_RAISE(KILN_ERR_INVALID, "buffer desc: unknown usage bits 0x%x", d.usage);
    if ((d.usage & KILN_BUFFER_ADDRESS) && !(c->dev->caps.shader_features & KILN_FEATURE_DEVICE_ADDRESS))
        return KILN_RAISE(KILN_ERR_LIMIT, "buffer '%s': KILN_BUFFER_ADDRESS needs bufferDeviceAddress, which the "
                          "device (%s) lacks", d.label, c->dev->caps.device_name);
    if (d.size > c->dev->caps.max_buffer_size)
        return KILN_RAISE(KILN_ERR_LIMIT, "buffer '%s' of %llu bytes; the device allows %llu (max_buffer_size)",
                          d.label, (unsigned long long)d.size, (unsigned long long)c->dev->caps.max_buffer_size);
    struct kb_buffer *b;
    KILN_TRY(kb_buffer_create(c->dev, d.size, d.usage, &b));
    snprintf(b->label, sizeof b->label, "%s", d.label);
    kiln_result r = pool_insert(&c->buffers, b, "buffer", &b->id);
    if (r < 0) {
        (void)kb_ticket_wait(c->dev, b->last_use, UINT64_MAX);   /* its zero fill may run */
        kb_buffer_destroy(c->dev, b);
        return r;
    }
    out->id = b->id;
    return made(c, b->last_write);
}

static kiln_result l_buffer_destroy(struct kctx *kc, kiln_buffer h)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    for (;;) {   /* until no submit using it is running, the context let go while one is */
        GET(buffers, struct kb_buffer, "buffer", h, b);
        if (b->bind_refs)
            return KILN_RAISE(KILN_ERR_BUSY, "buffer '%s' is bound by %u node%s; remove them first", b->label,
                              b->bind_refs, b->bind_refs == 1 ? "" : "s");
        if (kb_ticket_done(c->dev) >= b->last_use)
            break;
        KILN_TRY(wait_ticket(c, b->last_use, UINT64_MAX));
    }
    pool_remove(&c->buffers, h.id);
    kb_buffer_destroy(c->dev, b);
    return KILN_OK;
}

static kiln_result check_range(const struct kb_buffer *b, uint64_t off, const void *data, uint64_t size)
{
    if (!data && size)
        return KILN_RAISE(KILN_ERR_INVALID, "buffer '%s': data pointer is NULL", b->label);
    if (off > b->size || size > b->size - off)
        return KILN_RAISE(KILN_ERR_INVALID, "buffer '%s': range [%llu, +%llu) runs past its %llu bytes", b->label,
                          (unsigned long long)off, (unsigned long long)size, (unsigned long long)b->size);
    return KILN_OK;
}

/* Resolves buffer h for a host copy of [off, +size) and waits, the
 * context let go, for the submits the copy must wait for (hazard). */
static kiln_result buffer_io(struct lctx *c, kiln_buffer h, uint64_t off, const void *data, uint64_t size, bool write,
                             struct kb_buffer **out)
{
    for (;;) {
        struct kb_buffer *b;
        GET(buffers, struct kb_buffer, "buffer", h, b);
        KILN_TRY(check_range(b, off, data, size));
        uint64_t t = hazard(b->mapped, b->last_use, b->last_write, write);
        if (!size || kb_ticket_done(c->dev) >= t) {
            *out = b;
            return KILN_OK;
        }
        KILN_TRY(wait_ticket(c, t, UINT64_MAX));
    }
}

static kiln_result l_buffer_upload(struct kctx *kc, kiln_buffer h, uint64_t off, const void *data, uint64_t size)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    KILN_TRY(buffer_io(c, h, off, data, size, true, &b));
    if (!size)
        return KILN_OK;
    KILN_TRY(kb_buffer_write(c->dev, b, off, data, size));
    return made(c, b->last_write);
}

kiln_result ctx_host_import(struct kctx *kc, void *p, uint64_t size, struct kb_host **out)
{
    return kb_host_import(lctx_of(kc)->dev, p, size, out);
}

void ctx_host_release(struct kctx *kc, struct kb_host *h) { kb_host_release(lctx_of(kc)->dev, h); }

kiln_result ctx_buffer_upload_host(struct kctx *kc, kiln_buffer h, uint64_t off, struct kb_host *src, const void *map,
                                   uint64_t size, uint64_t *on_device)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    KILN_TRY(buffer_io(c, h, off, map, size, true, &b));
    if (!size)
        return KILN_OK;
    if (b->mapped) {   /* the host's copy is the only one either way */
        KILN_TRY(kb_buffer_write(c->dev, b, off, map, size));
        return made(c, b->last_write);
    }
    kiln_result r = kb_buffer_write_host(c->dev, b, off, src, 0, size, &(struct kb_wait){wait_transfer, c});
    c->last_ticket = KILN_MAX(c->last_ticket, b->last_use);   /* a copy left running after a failed wait too */
    KILN_TRY(r);
    *on_device += size;
    return KILN_OK;
}

kiln_result ctx_buffer_readback_host(struct kctx *kc, kiln_buffer h, uint64_t off, struct kb_host *dst, void *map,
                                     uint64_t size, uint64_t *on_device)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    KILN_TRY(buffer_io(c, h, off, map, size, false, &b));
    if (!size)
        return KILN_OK;
    if (b->mapped)   /* the host's copy is the only one either way */
        return kb_buffer_read(c->dev, b, off, map, size, &(struct kb_wait){wait_transfer, c});
    kiln_result r = kb_buffer_read_host(c->dev, b, off, dst, 0, size, &(struct kb_wait){wait_transfer, c});
    c->last_ticket = KILN_MAX(c->last_ticket, b->last_use);   /* a copy left running after a failed wait too */
    KILN_TRY(r);
    *on_device += size;
    return KILN_OK;
}

static kiln_result l_buffer_readback(struct kctx *kc, kiln_buffer h, uint64_t off, void *data, uint64_t size)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    KILN_TRY(buffer_io(c, h, off, data, size, false, &b));
    return size ? kb_buffer_read(c->dev, b, off, data, size, &(struct kb_wait){wait_transfer, c}) : KILN_OK;
}

/* ---- programs ----------------------------------------------------------------------- */

/* Gives a made program its handle in c. */
static kiln_result program_insert(struct lctx *c, struct prog *p, kiln_program *out)
{
    kiln_result r = pool_insert(&c->programs, p, "program", &p->id);
    if (r < 0) {
        prog_destroy(p);
        return r;
    }
    out->id = p->id;
    return KILN_OK;
}

static kiln_result l_program_create(struct kctx *kc, const kiln_program_desc *d, kiln_program *out)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    KILN_TRY(prog_create(c->svc, d, CPRIO_NORMAL, &p));
    return program_insert(c, p, out);
}

kiln_result ctx_program_create_sealed(struct kctx *kc, const kiln_program_desc *d, struct prog_include *files,
                                      uint32_t n, kiln_program *out)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    KILN_TRY(prog_create_sealed(c->svc, d, files, n, CPRIO_NORMAL, &p));
    return program_insert(c, p, out);
}

static kiln_result l_program_destroy(struct kctx *kc, kiln_program h)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    /* Its pipeline may be in any submit not yet done: the newest is
     * waited for, the context let go. */
    for (;;) {
        GET(programs, struct prog, "program", h, p);
        if (p->node_refs)
            return KILN_RAISE(KILN_ERR_BUSY, "program %s is run by %u node%s; remove them or set another program "
                              "first", p->name, p->node_refs, p->node_refs == 1 ? "" : "s");
        if (kb_ticket_done(c->dev) >= c->last_ticket)
            break;
        KILN_TRY(wait_ticket(c, c->last_ticket, UINT64_MAX));
    }
    pool_remove(&c->programs, h.id);
    prog_destroy(p);
    return KILN_OK;
}

static kiln_result l_program_status(struct kctx *kc, kiln_program h, kiln_program_state *out)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    GET(programs, struct prog, "program", h, p);
    *out = prog_refresh(p);
    return KILN_OK;
}

static kiln_result l_program_wait(struct kctx *kc, kiln_program h)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    GET(programs, struct prog, "program", h, p);
    if (prog_refresh(p) == KILN_PROGRAM_PENDING) {
        wait_compile(c, p);
        GET(programs, struct prog, "program", h, p);   /* destroyed by another thread meanwhile: refused */
    }
    return prog_wait(p) == KILN_PROGRAM_FAILED ? prog_raise_failed(p, "") : KILN_OK;
}

static kiln_result l_program_log(struct kctx *kc, kiln_program h, char *buf, size_t cap, size_t *len)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    GET(programs, struct prog, "program", h, p);
    const char *log = prog_refresh(p) == KILN_PROGRAM_PENDING || !p->log ? "" : p->log;
    if (buf && cap)
        snprintf(buf, cap, "%s", log);
    if (len)
        *len = strlen(log);
    return KILN_OK;
}

static kiln_result l_program_interface_get(struct kctx *kc, kiln_program h, kiln_program_interface *out)
{
    struct lctx *c = lctx_of(kc);
    struct prog *p;
    GET(programs, struct prog, "program", h, p);
    kiln_program_state st = prog_refresh(p);
    if (st == KILN_PROGRAM_FAILED)
        return prog_raise_failed(p, "");
    if (st == KILN_PROGRAM_PENDING)
        return KILN_RAISE(KILN_ERR_PENDING, "program %s is still compiling", p->name);
    *out = p->iface;
    return KILN_OK;
}

/* ---- schemes and nodes ------------------------------------------------------------------ */

/* A new scheme's or node's handle: the one its remote client minted
 * (ctx_mint), else its pool's next. */
static kiln_result insert(struct lctx *c, struct pool *p, void *obj, const char *what, uint64_t *id)
{
    uint64_t want = c->mint;
    c->mint = 0;
    if (!want)
        return pool_insert(p, obj, what, id);
    KILN_TRY(pool_claim(p, want, obj, what));
    *id = want;
    return KILN_OK;
}

static struct pool *minted_pool(struct lctx *c, uint64_t id)
{
    uint32_t type = (uint32_t)(id >> POOL_SLOT_BITS) & 0xf;
    return type == POOL_SCHEME ? &c->schemes : type == POOL_NODE ? &c->nodes : NULL;
}

void ctx_mint(struct kctx *kc, uint64_t id) { lctx_of(kc)->mint = id; }

void ctx_mint_void(struct kctx *kc, uint64_t id)
{
    struct lctx *c = lctx_of(kc);
    c->mint = 0;
    struct pool *p = minted_pool(c, id);
    if (p && !pool_get(p, id))
        pool_void(p, id);
}

static kiln_result l_scheme_create(struct kctx *kc, const kiln_scheme_desc *desc, kiln_scheme *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_scheme_desc d = kiln_scheme_desc_defaults(desc);
    struct scheme *s;
    KILN_TRY(scheme_create(c->dev, d.label, c->pending == KILN_PENDING_SKIP, c->skip_log, c->spec_verify, &c->spec,
                           &s));
    kiln_result r = insert(c, &c->schemes, s, "scheme", &s->id);
    if (r < 0) {
        scheme_destroy(s);
        return r;
    }
    out->id = s->id;
    return KILN_OK;
}

static void scheme_account(struct lctx *c, struct scheme *s)
{
    c->records_full += s->stats.records_full;
    c->skipped_nodes += s->stats.skipped_nodes;
    c->records_params += s->stats.records_params;
    c->replays += s->stats.replays;
    scheme_stats_update(s);
    c->spec_warms += s->stats.spec_warms;
    c->spec_promotions += s->stats.spec_promotions;
    c->spec_demotions += s->stats.spec_demotions;
    c->spec_pinned += s->stats.spec_pinned;
    c->spec_no_gain += s->stats.spec_no_gain;
    c->spec_samples_lost += s->stats.spec_samples_lost;
    c->spec_lookups_missed += s->stats.spec_lookups_missed;
    c->spec_wakes_dropped += s->stats.spec_wakes_dropped;
}

static kiln_result l_scheme_destroy(struct kctx *kc, kiln_scheme h)
{
    struct lctx *c = lctx_of(kc);
    struct scheme *s;
    for (;;) {   /* its submits done first, the context let go while they run */
        GET(schemes, struct scheme, "scheme", h, s);
        if (c->closing || kb_ticket_done(c->dev) >= s->last_ticket)
            break;
        kiln_result r = wait_ticket(c, s->last_ticket, UINT64_MAX);
        if (r == KILN_ERR_DEVICE_LOST) {   /* destroyed all the same: scheme_destroy keeps what lost work may use */
            GET(schemes, struct scheme, "scheme", h, s);
            break;
        }
        KILN_TRY(r);
    }
    for (uint32_t i = 0; i < s->node_count; i++)
        pool_remove(&c->nodes, s->nodes[i]->id);
    pool_remove(&c->schemes, h.id);
    scheme_account(c, s);
    scheme_destroy(s);
    return KILN_OK;
}

static kiln_result l_scheme_add_node(struct kctx *kc, kiln_scheme h, const kiln_node_desc *desc, kiln_node *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_node_desc d = kiln_node_desc_defaults(desc);
    struct scheme *s;
    GET(schemes, struct scheme, "scheme", h, s);
    struct node_init init = {.binding_count = d.binding_count, .label = d.label};
    GET(programs, struct prog, "node desc: program", d.program, init.prog);
    if (d.binding_count > KILN_MAX_DESCRIPTORS)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: %u bindings, at most %d (KILN_MAX_DESCRIPTORS)",
                          d.binding_count, KILN_MAX_DESCRIPTORS);
    if (d.binding_count && !d.bindings)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: binding_count is %u but bindings is NULL", d.binding_count);
    for (uint32_t i = 0; i < d.binding_count; i++) {
        const kiln_binding *bd = &d.bindings[i];
        /* A binding names a buffer, an image, both (refused by the
         * scheme, which knows the kind), or neither (a sampler). */
        struct kb_buffer *b = NULL;
        struct kb_image *img = NULL;
        if (bd->buffer.id && !(b = pool_get(&c->buffers, bd->buffer.id)))
            return KILN_RAISE(KILN_ERR_HANDLE, "node desc: binding %u: buffer 0x%016llx: %s", bd->binding,
                              (unsigned long long)bd->buffer.id, pool_why(&c->buffers, bd->buffer.id));
        if (bd->image.id && !(img = pool_get(&c->images, bd->image.id)))
            return KILN_RAISE(KILN_ERR_HANDLE, "node desc: binding %u: image 0x%016llx: %s", bd->binding,
                              (unsigned long long)bd->image.id, pool_why(&c->images, bd->image.id));
        /* Size 0, decided here (the desc's "decide later"): to the end of the buffer. */
        uint64_t size = !b ? 0 : bd->size ? bd->size : (bd->offset < b->size ? b->size - bd->offset : 0);
        init.bindings[i] = (struct node_binding){.set = bd->set, .binding = bd->binding, .element = bd->element,
                                                 .buffer = b, .offset = bd->offset, .size = size,
                                                 .format = bd->format, .image = img, .sampler = bd->sampler,
                                                 .level = bd->level};
    }
    /* Buffers reached through addresses: ordered as read and written whole. */
    if (d.reach_count > KILN_MAX_REACHES)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: %u buffers reached, at most %d (KILN_MAX_REACHES)",
                          d.reach_count, KILN_MAX_REACHES);
    if (d.reach_count && !d.reaches)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: reach_count is %u but reaches is NULL", d.reach_count);
    for (uint32_t i = 0; i < d.reach_count; i++) {
        struct kb_buffer *b = pool_get(&c->buffers, d.reaches[i].id);
        if (!b)
            return KILN_RAISE(KILN_ERR_HANDLE, "node desc: reaches[%u]: buffer 0x%016llx: %s", i,
                              (unsigned long long)d.reaches[i].id, pool_why(&c->buffers, d.reaches[i].id));
        if (!(b->usage & KILN_BUFFER_ADDRESS))
            return KILN_RAISE(KILN_ERR_INVALID, "node desc: reaches[%u]: buffer '%s' was made without "
                              "KILN_BUFFER_ADDRESS; a shader cannot reach it by address", i, b->label);
        init.reaches[init.reach_count++] = b;
    }
    memcpy(init.groups, d.groups, sizeof init.groups);
    if (d.param_count > KILN_MAX_PARAM_WORDS)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: %u param words; a node carries at most %d", d.param_count,
                          KILN_MAX_PARAM_WORDS);
    if (d.param_count && !d.params)
        return KILN_RAISE(KILN_ERR_INVALID, "node desc: param_count %u with params NULL", d.param_count);
    if (d.param_count)
        memcpy(init.params, d.params, d.param_count * sizeof d.params[0]);
    init.param_count = d.param_count;
    struct node *n;
    KILN_TRY(scheme_node_add(s, &init, &n));
    kiln_result r = insert(c, &c->nodes, n, "node", &n->id);
    if (r < 0) {
        scheme_node_remove(n);
        return r;
    }
    out->id = n->id;
    return KILN_OK;
}

static kiln_result l_scheme_submit(struct kctx *kc, kiln_scheme h, kiln_ticket *out)
{
    struct lctx *c = lctx_of(kc);
    struct scheme *s;
    struct prog *pending;
    /* The programs the submit would wait for (the wait policy) are waited
     * for first, the context let go; then the submit, which finds them
     * done (or, should another thread have added a node meanwhile, waits
     * for that one the same way). */
    for (;;) {
        GET(schemes, struct scheme, "scheme", h, s);
        if (!(pending = scheme_waits_for(s)))
            break;
        wait_compile(c, pending);
    }
    uint64_t t;
    atomic_store(&(c->host ? c->host : c)->last_submit_ns, time_now_ns());
    KILN_TRY(scheme_submit(s, &t));
    c->stats.submits++;
    if (out)
        out->value = t;
    return made(c, t);
}

static kiln_result l_scheme_stats_get(struct kctx *kc, kiln_scheme h, kiln_scheme_stats *out)
{
    struct lctx *c = lctx_of(kc);
    struct scheme *s;
    GET(schemes, struct scheme, "scheme", h, s);
    scheme_stats_update(s);
    *out = s->stats;
    return KILN_OK;
}

static kiln_result l_scheme_spec_events(struct kctx *kc, kiln_scheme h, kiln_spec_event *out, uint32_t cap,
                                        uint32_t *count)
{
    struct lctx *c = lctx_of(kc);
    struct scheme *s;
    GET(schemes, struct scheme, "scheme", h, s);
    *count = spec_events_take(&s->spec, out, cap);
    return KILN_OK;
}

static kiln_result l_buffer_address(struct kctx *kc, kiln_buffer h, uint64_t *out)
{
    struct lctx *c = lctx_of(kc);
    struct kb_buffer *b;
    GET(buffers, struct kb_buffer, "buffer", h, b);
    if (!(b->usage & KILN_BUFFER_ADDRESS))
        return KILN_RAISE(KILN_ERR_INVALID, "buffer '%s': made without KILN_BUFFER_ADDRESS, so it has no device "
                          "address a shader may use", b->label);
    *out = kb_buffer_address(c->dev, b);
    return KILN_OK;
}

static kiln_result l_node_is_specialized(struct kctx *kc, kiln_node h, int *out)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    GET(nodes, struct node, "node", h, n);
    *out = spec_pipeline(&n->site) != NULL;
    return KILN_OK;
}

static kiln_result l_compiles_pending(struct kctx *kc, uint32_t *out)
{
    struct lctx *c = lctx_of(kc);
    *out = csvc_pending(c->svc);
    return KILN_OK;
}

static kiln_result l_node_remove(struct kctx *kc, kiln_node h)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    GET(nodes, struct node, "node", h, n);
    pool_remove(&c->nodes, h.id);
    scheme_node_remove(n);
    return KILN_OK;
}

static kiln_result l_node_set_param(struct kctx *kc, kiln_node h, uint32_t slot, uint32_t word)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    GET(nodes, struct node, "node", h, n);
    return node_set_param(n, slot, word);
}

kiln_result ctx_node_set_param_for(struct kctx *kc, kiln_node h, uint64_t program, uint32_t slot, uint32_t word)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    GET(nodes, struct node, "node", h, n);
    if (program && n->prog->id != program)
        return KILN_RAISE(KILN_ERR_INVALID, "node 0x%016llx runs program 0x%016llx ('%s'), not 0x%016llx, whose "
                          "words param slot %u was set for: the swap to it was refused, so the word is not set",
                          (unsigned long long)h.id, (unsigned long long)n->prog->id, n->prog->name,
                          (unsigned long long)program, slot);
    return node_set_param(n, slot, word);
}

static kiln_result l_node_set_program(struct kctx *kc, kiln_node h, kiln_program ph)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    struct prog *p;
    /* The swap needs both programs' interfaces: their compiles are waited
     * for first, the context let go. */
    for (;;) {
        GET(nodes, struct node, "node", h, n);
        GET(programs, struct prog, "program", ph, p);
        struct prog *pending = prog_refresh(p) == KILN_PROGRAM_PENDING         ? p
                               : prog_refresh(n->prog) == KILN_PROGRAM_PENDING ? n->prog
                                                                               : NULL;
        if (!pending)
            break;
        wait_compile(c, pending);
    }
    return node_set_program(n, p);
}

static kiln_result l_node_get_params(struct kctx *kc, kiln_node h, uint32_t *out, uint32_t cap, uint32_t *count)
{
    struct lctx *c = lctx_of(kc);
    struct node *n;
    GET(nodes, struct node, "node", h, n);
    prog_refresh(n->prog);
    uint32_t words = node_param_words(n);
    memcpy(out, n->params, KILN_MIN(cap, words) * sizeof out[0]);
    if (count)
        *count = words;
    return KILN_OK;
}

static kiln_result l_ticket_wait(struct kctx *kc, kiln_ticket t, uint64_t timeout_ns)
{
    struct lctx *c = lctx_of(kc);
    if (t.value > c->last_ticket)
        return KILN_RAISE(KILN_ERR_INVALID, "ticket %llu was never issued by this context (newest: %llu)",
                          (unsigned long long)t.value, (unsigned long long)c->last_ticket);
    kiln_result r = wait_ticket(c, t.value, timeout_ns);
    kb_trace_done(c->dev, &c->traced);
    return r;
}

/* ---- the archive ---------------------------------------------------------------------------- */

static kiln_result l_archive_info_get(struct kctx *kc, kiln_archive_info *out)
{
    struct lctx *c = lctx_of(kc);
    *out = (kiln_archive_info){.enabled = c->archive->enabled, .file_count = c->archive->file_count,
                               .readonly = c->archive->dir_readonly};
    snprintf(out->dir, sizeof out->dir, "%s", c->archive->dir);
    return KILN_OK;
}

static kiln_result l_archive_files(struct kctx *kc, uint32_t first, kiln_archive_file *out, uint32_t cap,
                                   uint32_t *count)
{
    struct lctx *c = lctx_of(kc);
    *count = c->archive->file_count;
    for (uint32_t i = first; i < c->archive->file_count && i - first < cap; i++) {
        const struct arc_store_file *f = &c->archive->files[i];
        kiln_archive_file *o = &out[i - first];
        *o = (kiln_archive_file){.bytes = f->file.size, .salvaged = f->file.salvaged};
        snprintf(o->name, sizeof o->name, "%s", f->name);
        o->status = f->file.whole == ARC_HIT              ? KILN_ARCHIVE_FILE_OK
                    : f->file.whole == ARC_DEVICE_MISMATCH ? KILN_ARCHIVE_FILE_DEVICE_MISMATCH
                    : f->file.whole == ARC_VERSION         ? KILN_ARCHIVE_FILE_VERSION
                                                           : KILN_ARCHIVE_FILE_CORRUPT;
        uint64_t counts[ARC_CAUSE_COUNT];
        arc_file_verify(&f->file, counts);
        if (o->status == KILN_ARCHIVE_FILE_OK) {
            o->entries = counts[ARC_HIT];
            o->corrupt = counts[ARC_CORRUPT];
        }
    }
    return KILN_OK;
}

static kiln_result l_archive_tidy(struct kctx *kc, const kiln_archive_tidy_desc *desc, kiln_archive_tidy_result *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_archive_tidy_desc d = kiln_archive_tidy_desc_defaults(desc);
    *out = (kiln_archive_tidy_result){0};
    if (!c->archive->enabled)
        return KILN_RAISE(KILN_ERR_INVALID, "archive tidy: the archive is off (KILN_ARCHIVE=0) or its folder unusable");
    struct arc_tidy_result t = {0};
    if (d.compact) {
        KILN_TRY(arc_compact(c->archive->dir, &c->archive->device, d.small_bytes, d.compact_at, &t));
        *out = (kiln_archive_tidy_result){.files_before = t.files_before, .files_after = t.files_after,
                                          .bytes_before = t.bytes_before, .bytes_after = t.bytes_after,
                                          .merged = t.merged, .entries_kept = t.entries_kept,
                                          .duplicates_dropped = t.duplicates_dropped, .bad_dropped = t.bad_dropped,
                                          .busy = t.busy};
    }
    if (d.gc) {
        t = (struct arc_tidy_result){0};
        KILN_TRY(arc_gc(c->archive->dir, d.max_size ? d.max_size : c->archive->cfg.max_size, &t));
        if (!d.compact) {
            out->files_before = t.files_before;
            out->bytes_before = t.bytes_before;
        }
        out->files_after = t.files_after;
        out->bytes_after = t.bytes_after;
        out->removed = t.removed;
        out->bad_dropped += t.bad_dropped;   /* files removed first as serving nothing */
        out->busy |= t.busy;
    }
    return KILN_OK;
}

static kiln_result l_context_precompile(struct kctx *kc, const kiln_precompile_desc *desc, kiln_precompile_result *out)
{
    struct lctx *c = lctx_of(kc);
    kiln_precompile_desc d = kiln_precompile_desc_defaults(desc);
    double stall = d.stall_s ? d.stall_s : env_seconds("KILN_PRECOMPILE_STALL_S", 5);
    struct csvc_precompile r;
    /* The compile service and the archive have their own locks: the
     * context is let go for the whole precompile. */
    let_go(c);
    kiln_result res = csvc_precompile(c->svc, stall, &r);
    take_back(c);
    KILN_TRY(res);
    *out = (kiln_precompile_result){.programs = r.programs, .noted = r.noted, .slow = r.slow, .ready = r.ready,
                                    .failed = r.failed, .background = r.background, .seconds = r.seconds};
    return KILN_OK;
}

/* ---- create and destroy -------------------------------------------------------------------- */

/* The archive saver holds back while a giant compiles or the application
 * submitted in the last SUBMIT_QUIET_NS. Runs on the saver thread without
 * the context's lock: it reads an atomic and takes the service's lock. */
#define SUBMIT_QUIET_NS (100ull * 1000 * 1000)

static bool saver_gate(void *ud)
{
    struct lctx *c = ud;
    uint64_t last = atomic_load(&c->last_submit_ns);
    if (last && time_now_ns() - last < SUBMIT_QUIET_NS)
        return true;
    return csvc_giants_in_flight(c->svc) > 0;
}

/* The compile service and the archive a context owns, with their closing
 * lines: the archive's saver is stopped reading the service first. */
static void close_service_and_archive(struct lctx *c)
{
    arc_store_set_gate(c->archive, NULL, NULL);
    if (c->svc) {
        char line[1024];
        csvc_summary(c->svc, line, sizeof line);
        log_info("%s", line);
        csvc_destroy(c->svc);
    }
    char arc_line[4096 + 256];
    arc_store_close(c->archive, arc_line, sizeof arc_line);
    if (arc_line[0])
        log_info("%s", arc_line);
}

static void l_destroy(struct kctx *kc)
{
    struct lctx *c = lctx_of(kc);
    c->closing = true;   /* its waits hold what they hold: nothing, or a server's host lock */
    if (c->dev) {
        if (!kb_is_lost(c->dev))
            (void)l_context_wait_idle(&c->base);   /* bounded by the device timeout, past which the device is lost */
        bool abandoned = !c->host && kb_abandon(c->dev);
        uint32_t cur = 0;
        uint64_t id;
        struct scheme *s;
        while ((s = pool_next(&c->schemes, &cur, &id)))
            (void)l_scheme_destroy(&c->base, (kiln_scheme){id});
        cur = 0;
        struct prog *p;
        while ((p = pool_next(&c->programs, &cur, &id))) {
            pool_remove(&c->programs, id);
            prog_destroy(p);
        }
        spec_cache_finish(&c->spec);   /* the schemes are gone; its variants go before the service */
        if (!c->host)   /* a server's client context borrows them: they close with its host */
            close_service_and_archive(c);
        cur = 0;
        struct kb_buffer *b;
        while ((b = pool_next(&c->buffers, &cur, &id))) {
            pool_remove(&c->buffers, id);
            kb_buffer_destroy(c->dev, b);
        }
        cur = 0;
        struct kb_image *img;
        while ((img = pool_next(&c->images, &cur, &id))) {
            pool_remove(&c->images, id);
            kb_image_destroy(c->dev, img);
        }
        uint64_t verr = atomic_load(&c->dev->validation_errors);
        log_info("context closed: %llu submits (%llu full records, %llu params-only records, %llu replays, "
                 "%llu nodes skipped while compiling); specialization: %llu variant compiles, %llu promotions, "
                 "%llu demotions (%llu no faster), %llu pinned, %llu variants not to be had, %llu sites not woken "
                 "(out of memory), %llu submits' times lost to the cost model; validation: %s, %llu errors; "
                 "check mode: %s, %llu out-of-bounds accesses",
                 (unsigned long long)c->stats.submits, (unsigned long long)c->records_full,
                 (unsigned long long)c->records_params, (unsigned long long)c->replays,
                 (unsigned long long)c->skipped_nodes, (unsigned long long)c->spec_warms,
                 (unsigned long long)c->spec_promotions, (unsigned long long)c->spec_demotions,
                 (unsigned long long)c->spec_no_gain, (unsigned long long)c->spec_pinned,
                 (unsigned long long)c->spec_lookups_missed, (unsigned long long)c->spec_wakes_dropped,
                 (unsigned long long)c->spec_samples_lost,
                 c->dev->caps.validation ? "on" : "off", (unsigned long long)verr, c->dev->caps.check ? "on" : "off",
                 (unsigned long long)atomic_load(&c->dev->check_findings));
        uint64_t guarded, unguarded;
        prog_fold_guard_counts(&guarded, &unguarded);
        if (guarded || unguarded)
            log_info("fold guard (this process so far): %llu signed divisions guarded before the optimizer, "
                     "%llu modules left unoptimized (a division it could not guard)",
                     (unsigned long long)guarded, (unsigned long long)unguarded);
        if (!c->host) {   /* likewise the device */
            if (kb_is_lost(c->dev))
                log_warn("context closed on a lost device (%s): %s", abandoned ? "its running work keeps the "
                         "device, which is abandoned, not freed" : "nothing was running; all freed",
                         c->dev->lost_why);
            kb_trace_done(c->dev, &c->traced);
            c->dev->trace = NULL;   /* an abandoned device outlives the trace */
            kb_destroy(c->dev);
        }
    }
    trace_close(c->trace);
    pool_finish(&c->buffers);
    pool_finish(&c->images);
    pool_finish(&c->programs);
    pool_finish(&c->schemes);
    pool_finish(&c->nodes);
    pthread_mutex_destroy(&c->base.lock);
    free(c);
}

const struct rt_ops ctx_local_ops = {
#define X(name, record, class, flags, params) .name = l_##name,
#define L(name, record, class, flags)
#include "context/calls.def"
#undef L
#undef X
    .destroy = l_destroy,
};

/* A context with empty pools tagged with serial, issuing generations above
 * floor, on no device yet. */
static struct lctx *ctx_alloc(uint32_t serial, uint32_t floor)
{
    struct lctx *c = mem_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ops = &ctx_local_ops;
    c->base.serial = serial;
    c->archive = &c->own_archive;
    pthread_mutex_init(&c->base.lock, NULL);
    c->base.held = &c->base.lock;
    pool_init_floor(&c->buffers, POOL_BUFFER, serial, floor);
    pool_init_floor(&c->programs, POOL_PROGRAM, serial, floor);
    pool_init_floor(&c->schemes, POOL_SCHEME, serial, floor);
    pool_init_floor(&c->nodes, POOL_NODE, serial, floor);
    pool_init_floor(&c->images, POOL_IMAGE, serial, floor);
    return c;
}

uint32_t ctx_gen_high(const struct kctx *kc)
{
    const struct lctx *c = lctx_of_const(kc);
    const struct pool *p[] = {&c->buffers, &c->programs, &c->schemes, &c->nodes, &c->images};
    uint32_t high = 0;
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        high = KILN_MAX(high, p[i]->gen_high);
    return high;
}

/* The settings each context has of its own, a server's clients too. */
static void per_context_settings(struct lctx *c, const kiln_context_desc *d)
{
    c->pending = d->pending;
    c->skip_log = d->skip_log ? d->skip_log > 0 : env_flag("KILN_SKIP_LOG", 0);
    c->spec_verify = d->spec_verify;
    c->sync = env_flag("KILN_SYNC", 0);
}

kiln_result ctx_create(const kiln_context_desc *desc, uint32_t serial, struct kctx **out)
{
    kiln_context_desc d = kiln_context_desc_defaults(desc);
    struct lctx *c = ctx_alloc(serial, 0);
    if (!c)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the context");
    const char *trace_path = d.trace_path ? d.trace_path : getenv("KILN_TRACE");
    kiln_result r = trace_open(trace_path, &c->trace);
    if (r < 0) {
        l_destroy(&c->base);
        return r;
    }
    const struct kb_backend *backend = kb_backend_of(d.backend);
    if (backend) {
        /* Settings: the desc's, else the environment's (kiln.h). */
        struct kb_settings set = {
            .device = d.device && *d.device ? d.device : getenv("KILN_DEVICE"),
            .validation = d.validation > 0 || (d.validation == 0 && env_flag("KILN_VALIDATION", 0)),
            .staging = d.force_staging > 0 || (d.force_staging == 0 && env_flag("KILN_FORCE_STAGING", 0)),
            .check = d.check > 0 || (d.check == 0 && env_flag("KILN_CHECK", 0)),
            .robust = d.robust > 0 || (d.robust == 0 && env_flag("KILN_ROBUST", 0)),
        };
        set.validation |= set.check;
        r = set.check && set.robust
                ? KILN_RAISE(KILN_ERR_INVALID, "context desc: check mode and robust access exclude each other: check "
                             "reports the out-of-bounds accesses robust access would make safe (check %s, robust %s)",
                             d.check > 0 ? "by the desc" : "by KILN_CHECK", d.robust > 0 ? "by the desc" : "by KILN_ROBUST")
                : backend->create(&set, &c->dev);
    } else {
        r = KILN_RAISE(KILN_ERR_INVALID, "context desc: unknown backend %d", (int)d.backend);
    }
    if (r == KILN_OK && c->trace) {
        c->dev->trace = c->trace;
        trace_track(c->trace, TRACE_SUBMITS, "submits (kiln)");
        trace_track(c->trace, TRACE_DEVICE, "device (submitted to seen done)");
        trace_track(c->trace, TRACE_SPEC, "specialization");
        trace_track(c->trace, TRACE_ARCHIVE, "pipeline archive");
    }
    if (r == KILN_OK) {
        struct csvc_config cfg;
        csvc_config_default(&cfg, c->dev);
        if (d.compile_threads)
            cfg.workers = KILN_MIN(d.compile_threads, 256u);
        if (d.giant_words)
            cfg.giant_words = d.giant_words;
        if (d.giant_compiles)
            cfg.giant_compiles = d.giant_compiles;
        if (d.alone_tries)
            cfg.alone_tries = d.alone_tries;
        if (d.slow_compile_s > 0)
            cfg.slow_s = d.slow_compile_s;
        if (d.worker_caches)
            cfg.worker_caches = d.worker_caches > 0;
        for (uint32_t i = 0; c->trace && i < cfg.workers; i++) {
            char name[32];
            snprintf(name, sizeof name, "compile worker %u", i);
            trace_track(c->trace, TRACE_WORKER + i, name);
        }
        r = csvc_create(c->dev, &cfg, NULL, &c->svc);
        if (r == KILN_OK)
            spec_cache_init(&c->spec, c->svc, c->dev->ops->layout_follows_signature, d.specialization);
    }
    if (r == KILN_OK) {
        struct arc_store_config acfg;
        arc_store_config_default(&acfg);
        acfg.enabled = d.archive;
        acfg.dir = d.archive_dir;
        acfg.readonly_roots = d.archive_readonly;
        acfg.qa = d.archive_qa;
        acfg.trace = c->trace;
        if (d.archive_max_size)
            acfg.max_size = d.archive_max_size;
        r = arc_store_open(c->archive, &c->dev->caps, &acfg);
        csvc_set_archive(c->svc, c->archive);
        arc_store_set_gate(c->archive, saver_gate, c);
    }
    if (r < 0) {
        l_destroy(&c->base);
        return r;
    }
    per_context_settings(c, &d);
    c->made_with = d;
    c->made_with.device = c->made_with.archive_dir = c->made_with.archive_readonly = NULL;
    c->made_with.trace_path = c->made_with.remote = NULL;
    double timeout_s = d.device_timeout_ms ? d.device_timeout_ms / 1e3 : env_seconds("KILN_DEVICE_TIMEOUT_S", 0);
    if (timeout_s > 0)
        kb_set_timeout(c->dev, timeout_s >= 1e9 ? UINT64_MAX / 2 : (uint64_t)(timeout_s * 1e9));
    *out = &c->base;
    return KILN_OK;
}

/* A client's desc against its host. Choosing another backend or device is
 * refused by name, as is a trace (a file the client asked for would never
 * appear: the server writes its own). Fields that shape the host's device,
 * compile service or archive are the host's: a client's other values do
 * not change any result, so they are named once in the log and the host's
 * apply. */
static kiln_result check_client_desc(const struct lctx *host, const kiln_context_desc *d)
{
    const kiln_context_desc *h = &host->made_with;
    kiln_backend_kind kind = host->dev->caps.backend;
    if (d->backend != kind)
        return KILN_RAISE(KILN_ERR_INVALID, "context desc: backend: the server runs %s; a client cannot choose "
                          "another", kb_backend_of(kind)->title);
    if (d->device && *d->device && !strstr(host->dev->caps.device_name, d->device) && strcmp(d->device, "0"))
        return KILN_RAISE(KILN_ERR_INVALID, "context desc: device '%s': the server owns one device (%s); a client "
                          "cannot choose another", d->device, host->dev->caps.device_name);
    if (d->trace_path && *d->trace_path)
        return KILN_RAISE(KILN_ERR_INVALID, "context desc: trace_path: a remote context's trace is the server's "
                          "own (its KILN_TRACE); none would be written at '%s'", d->trace_path);
    char names[256] = "";
#define HOSTS(cond, field)                                                                         \
    do {                                                                                           \
        if (cond)                                                                                  \
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", field); \
    } while (0)
    HOSTS(d->validation && (d->validation > 0) != (host->dev->caps.validation != 0), "validation");
    HOSTS(d->check && (d->check > 0) != (host->dev->caps.check != 0), "check");
    HOSTS(d->robust && (d->robust > 0) != (host->dev->caps.robust_access != 0), "robust");
    HOSTS(d->force_staging && d->force_staging != h->force_staging, "force_staging");
    HOSTS(d->compile_threads && d->compile_threads != h->compile_threads, "compile_threads");
    HOSTS(d->giant_words && d->giant_words != h->giant_words, "giant_words");
    HOSTS(d->giant_compiles && d->giant_compiles != h->giant_compiles, "giant_compiles");
    HOSTS(d->alone_tries && d->alone_tries != h->alone_tries, "alone_tries");
    HOSTS(d->slow_compile_s > 0 && d->slow_compile_s != h->slow_compile_s, "slow_compile_s");
    HOSTS(d->worker_caches && d->worker_caches != h->worker_caches, "worker_caches");
    HOSTS(d->archive && (d->archive > 0) != host->archive->enabled, "archive");
    HOSTS(d->archive_dir && *d->archive_dir && strncmp(host->archive->dir, d->archive_dir, strlen(d->archive_dir)),
          "archive_dir");
    HOSTS(d->archive_readonly, "archive_readonly");
    HOSTS(d->archive_max_size && d->archive_max_size != h->archive_max_size, "archive_max_size");
    HOSTS(d->archive_qa && d->archive_qa != h->archive_qa, "archive_qa");
#undef HOSTS
    if (names[0])
        log_info("context desc: %s: the server's device, compile service and archive are shared by its clients; "
                 "its settings apply", names);
    return KILN_OK;
}

kiln_result ctx_create_on(struct kctx *host_ctx, const kiln_context_desc *desc, uint32_t serial, uint32_t gen_floor,
                          struct kctx **out)
{
    struct lctx *host = lctx_of(host_ctx);
    kiln_context_desc d = kiln_context_desc_defaults(desc);
    KILN_TRY(check_client_desc(host, &d));
    struct lctx *c = ctx_alloc(serial, gen_floor);
    if (!c)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the context");
    c->host = host;
    c->dev = host->dev;
    c->svc = host->svc;
    c->archive = host->archive;
    /* Its own runaway bound: a job that ends in DEVICE_LOST after 1 s
     * locally does so served too, and it faults this client alone. */
    c->timeout_ns = d.device_timeout_ms ? d.device_timeout_ms * 1000000ull : host->dev->timeout_ns;
    spec_cache_init(&c->spec, c->svc, c->dev->ops->layout_follows_signature, d.specialization);
    per_context_settings(c, &d);
    *out = &c->base;
    return KILN_OK;
}
