/* SPDX-License-Identifier: MIT */
/*
 * backend: the device ops table. A backend (vk/ for Vulkan, mock/ for tests
 * of kiln's own logic) implements struct backend_ops; every other module
 * calls it through the kb_* wrappers below. The backends kiln is built with
 * are the rows of one registry (kb_backends) that context creation,
 * kiln_devices, kiln_backend_name, `kiln info` and `kiln serve` read.
 *
 * Objects are opaque to callers except for struct kb_buffer's base fields.
 * A backend is not thread-safe: its device belongs to the context lock's
 * holder (see context.h), except for what compile workers call (layouts,
 * pipelines, caches: thread-safe, as Vulkan's object creation is),
 * kb_ticket_done, and kb_ticket_wait_as, which any number of threads may
 * call at once, with or without the context lock (vkWaitSemaphores has no
 * host synchronization requirement; the loss bookkeeping has its own lock,
 * kb_device.watch).
 *
 * Tickets: each submit signals the next value of a monotonic counter
 * (kb_device.submitted + 1); a ticket is done when the counter reaches it.
 *
 * Loss and runaway work (backend.c, shared by every backend): every submit
 * is noted with what it runs (a scheme's label, nodes and programs; a
 * transfer). A device is latched lost when the driver reports it
 * (KILN_ERR_DEVICE_LOST from an op: VK_ERROR_DEVICE_LOST) or when, with a
 * timeout set (kb_set_timeout), kiln waits on work and the device finishes
 * nothing for that long: the clock of the oldest unfinished submit starts at
 * the later of its submit and the moment kiln last saw the device finish a
 * submit, so work queued behind other work is not charged for its wait.
 * Each submit is judged by its owner's bound (kb_device.owner): a server's
 * client's runaway work faults that client, not the device. Every wait is
 * bounded by it (a wait "for ever" means "while the device
 * lives"). Once lost, kb_live, kb_submit and kb_ticket_wait refuse with
 * KILN_ERR_DEVICE_LOST and the first reason. A lost device whose work has
 * not finished is abandoned at destroy (kb_abandon): a CPU driver cannot
 * stop a dispatch, so its objects are left to the running work, kept
 * reachable and logged, never freed under it.
 */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

struct kb_layout;
struct kb_pipeline;
struct kb_bindset;
struct kb_cmd;
struct kb_cache;

#define KB_NOTES 64   /* submits remembered by what they run */

struct kb_device {
    const struct backend_ops *ops;
    kiln_caps caps;
    /* A pipeline can be asked for "from the cache or not at all"
     * (VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT). */
    bool cache_control;
    /* Dispatches can be timed (kb_step.timed, kb_cmd_times). */
    bool timestamps;
    _Atomic uint64_t validation_errors;    /* the validation layer's errors, counted by its callback */
    _Atomic uint64_t validation_warnings;
    _Atomic uint64_t check_findings;       /* check mode: out-of-bounds accesses reported (also errors) */
    /* Loss (backend.c). timeout_ns is set once, before any work; `lost`
     * and `abandon` are atomic; lost_why is written once, under watch,
     * before `lost`. */
    uint64_t timeout_ns;                   /* runaway bound; 0 = none */
    _Atomic int lost;                      /* enum kb_lost */
    _Atomic bool abandon;                  /* destroy ops leave objects to running work */
    char lost_why[768];                    /* the first reason, written before `lost` */
    /* The newest ticket submitted: the one count of tickets issued. A
     * backend's submit (a scheme's or its own transfer) signals
     * submitted + 1 and, once the submit is made, stores it here (atomic:
     * waits, on any thread, read it). */
    _Atomic uint64_t submitted;
    /* Guards the loss bookkeeping below (seen_done, progress_ns, notes),
     * which submits write under the context lock and waits read and write
     * with or without it. Taken after the context lock; no wait is made
     * and no callback called while it is held. */
    pthread_mutex_t watch;
    uint64_t seen_done, progress_ns;       /* the done counter as last seen, and when it last moved */
    struct kb_submit_note {
        uint64_t ticket, at_ns;
        const void *owner;                 /* who submitted it (kb_device.owner then); NULL: the device's own */
        uint64_t timeout_ns;               /* its runaway bound: its owner's, or the device's; 0 = none */
        bool faulted;                      /* past its bound and its owner told (kb_device.fault) */
        char what[200];
    } notes[KB_NOTES];                     /* by ticket % KB_NOTES */
    /* Work of many owners on one device (a server's clients): the owner
     * whose call runs now and its runaway bound, set by the caller while
     * it holds the device (NULL: the device's own context, with
     * timeout_ns). A submit past its owner's bound is that owner's fault
     * alone: fault is called with the owner and the reason (once a
     * submit), the device is not lost, and only that owner's waits end
     * with KILN_ERR_DEVICE_LOST; other owners' work queued behind it is
     * not charged for the time it takes. */
    const void *owner;
    uint64_t owner_timeout_ns;
    void (*fault)(void *ud, const void *owner, const char *why);
    void *fault_ud;
    /* The context's trace (base/trace.h), NULL when it writes none: the
     * device's modules (backend, compile service, schemes, predictor) add
     * their events to it. Set once, before any work. */
    struct trace *trace;
};

enum kb_lost { KB_LIVE = 0, KB_LOST_DRIVER = 1, KB_LOST_TIMEOUT = 2 };

/* How a backend waits for a transfer of its own that a read needs done:
 * fn(ud, ticket), or kb_ticket_wait where the caller gives NULL. The
 * context's lets its lock go for the wait. */
struct kb_wait {
    kiln_result (*fn)(void *ud, uint64_t ticket);
    void *ud;
};

/* A buffer: backends embed this as their buffer's first member. */
struct kb_buffer {
    uint64_t size;
    uint32_t usage;        /* kiln_buffer_usage bits */
    /* Host copies reach its memory directly (they wait, on the host, for
     * the submits using its bytes); else each is a transfer, ordered on
     * the device. Set by the backend. */
    bool mapped;
    /* Owned by the context (under its lock): */
    uint64_t id;
    uint32_t bind_refs;    /* nodes binding it */
    /* The newest submit binding it, and the newest that may write it
     * (0: none): a write from the host waits for last_use, a read for
     * last_write, a destroy for last_use. */
    uint64_t last_use, last_write;
    char label[64];
};

/* An image: backends embed this as their image's first member. Images
 * live in one layout (Vulkan's GENERAL) from creation on. */
struct kb_image {
    uint32_t width, height, depth;
    uint32_t dims;           /* 1, 2 or 3 */
    uint32_t layers, levels; /* at least 1 each */
    bool cube;               /* a cube map (2D, layers a multiple of 6) */
    kiln_format format;
    uint32_t usage;          /* kiln_image_usage bits, resolved (never 0) */
    uint64_t bytes;          /* every level's width * height * depth * layers * texel bytes (kb_image_level) */
    bool mapped;             /* as a buffer's */
    /* Owned by the context (under its lock): */
    uint64_t id;
    uint32_t bind_refs;      /* nodes binding it */
    uint64_t last_use, last_write;   /* as a buffer's */
    char label[64];
};

/* One descriptor of a binding set: element `element` of (set, binding):
 * a range of a buffer, a texel buffer's with its format (a view is made);
 * an image (storage, sampled); an image and a sampler (combined); a
 * sampler. */
struct kb_binding {
    uint32_t set, binding, element;
    kiln_binding_kind kind;
    kiln_format format;      /* texel buffers: resolved (never 0); else 0 */
    struct kb_buffer *buffer;
    uint64_t offset, size;
    struct kb_image *image;
    kiln_sampler_desc sampler;   /* filled in (kiln_sampler_desc_defaults) where the kind has one */
    /* An image's view as the shader declares it: arrayed (every layer),
     * cube (six layers a face); a storage image's one mip level (sampled
     * ones see every level). */
    bool arrayed, cube;
    uint32_t level;
};

/* Part of an image a transfer moves: layers [layer, layer + layers) of one
 * level; a NULL part is every level and layer (kb_image.bytes). */
struct kb_image_part {
    uint32_t level, layer, layers;
};

/* The bytes of a part of an image. */
static inline uint64_t kb_image_part_bytes(const struct kb_image *img, const struct kb_image_part *p)
{
    uint32_t w = img->width >> p->level, h = img->height >> p->level, d = img->depth >> p->level;
    return (uint64_t)(w ? w : 1) * (h ? h : 1) * (d ? d : 1) * p->layers * kiln_format_size(img->format);
}

/* Level l of an image: its sides (halved per level, at least 1) and the
 * byte offset of its texels in an upload's data (levels in order, each
 * level's layers one after another). */
static inline void kb_image_level(const struct kb_image *img, uint32_t l, uint32_t side[3], uint64_t *offset)
{
    uint64_t off = 0, texel = kiln_format_size(img->format);
    for (uint32_t k = 0;; k++) {
        uint32_t w = img->width >> k, h = img->height >> k, d = img->depth >> k;
        side[0] = w ? w : 1;
        side[1] = h ? h : 1;
        side[2] = d ? d : 1;
        if (k == l)
            break;
        off += (uint64_t)side[0] * side[1] * side[2] * img->layers * texel;
    }
    *offset = off;
}

/* Where a part of an image lies in an upload's data (kb_image_level's
 * order: a level's layers are one after another), and its bytes; a NULL
 * part is all of it. */
static inline void kb_image_part_span(const struct kb_image *img, const struct kb_image_part *p, uint64_t *offset,
                                      uint64_t *bytes)
{
    if (!p) {
        *offset = 0;
        *bytes = img->bytes;
        return;
    }
    uint32_t side[3];
    kb_image_level(img, p->level, side, offset);
    uint64_t layer = (uint64_t)side[0] * side[1] * side[2] * kiln_format_size(img->format);
    *offset += layer * p->layer;
    *bytes = layer * p->layers;
}

/* A specialization constant's value when a pipeline is made (one
 * VkSpecializationMapEntry): `size` bytes (1, 2, 4 or 8; a bool's 4, a
 * VkBool32) of `value`, low byte first. */
struct kb_spec {
    uint32_t id;
    uint32_t size;
    uint64_t value;
};

enum kb_step_kind { KB_STEP_DISPATCH = 1, KB_STEP_BARRIER = 2 };

/* One step of a recording: a dispatch, or a compute-to-compute barrier
 * making every earlier write visible to later reads and writes. */
struct kb_step {
    enum kb_step_kind kind;
    struct kb_pipeline *pipeline;
    struct kb_layout *layout;
    struct kb_bindset *bindset;
    uint32_t params[KILN_MAX_PARAM_WORDS];   /* kiln's 8 words, or the program's own block's words */
    uint32_t lens[KILN_MAX_BINDINGS];   /* byte length of the range at each binding number (push words 8..23) */
    uint32_t groups[3];
    bool timed;              /* time this dispatch (where the device has timestamps) */
    const char *label;       /* the node's label, for messages (borrowed for the call) */
};

struct kb_host;   /* host memory the device reads in place (host_import) */

struct backend_ops {
    const char *name;
    /* Capability: the pipeline layout follows the program's signature, so a
     * variant of a program can run under a node recorded for another. */
    bool layout_follows_signature;
    void (*destroy)(struct kb_device *dev);
    kiln_result (*buffer_create)(struct kb_device *dev, uint64_t size, uint32_t usage, struct kb_buffer **out);
    void (*buffer_destroy)(struct kb_device *dev, struct kb_buffer *buf);
    /* A buffer's device address (one made with KILN_BUFFER_ADDRESS). */
    uint64_t (*buffer_address)(struct kb_device *dev, struct kb_buffer *buf);
    /* Moves bytes between the host and a buffer. The caller has waited
     * for the submits that use the bytes (kb_buffer.last_use, last_write).
     * A staged copy is a transfer of its own, ordered after every earlier
     * submit on the device: a write's is left to run (data is copied
     * before the call returns) and moves the buffer's last_use and
     * last_write to it; a read's is waited for through w. */
    kiln_result (*buffer_write)(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, const void *data,
                                uint64_t size);
    kiln_result (*buffer_read)(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, void *data, uint64_t size,
                               const struct kb_wait *w);
    /* Host memory the device reads in place (size bytes at p, both aligned
     * to the page): a server imports a client's sealed data segment once,
     * so an upload from it is one copy on the device. NULL, or an error,
     * where the device cannot (then the caller copies on the host).
     * Released before the memory is unmapped, and only once every copy
     * through it is done: a copy whose wait failed is left running (its
     * ticket the buffer's last_use), and the caller waits for that ticket
     * before it releases the import or unmaps the memory. */
    kiln_result (*host_import)(struct kb_device *dev, void *p, uint64_t size, struct kb_host **out);
    void (*host_release)(struct kb_device *dev, struct kb_host *h);
    /* Copies size bytes at src_off of h into buf at off on the device,
     * waited for through w: h's bytes are the caller's again when it
     * returns. As buffer_write, the caller has waited for the buffer's
     * users; last_use and last_write move to the copy. */
    kiln_result (*buffer_write_host)(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *h,
                                     uint64_t src_off, uint64_t size, const struct kb_wait *w);
    /* The other way: size bytes of buf at off into h at dst_off, on the
     * device, after the buffer's last write, waited for through w; the
     * buffer's last_use moves to the copy. */
    kiln_result (*buffer_read_host)(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *h,
                                    uint64_t dst_off, uint64_t size, const struct kb_wait *w);
    /* Makes an image of `in`'s size, dims, format and usage (resolved by
     * the caller: usage never 0), its texels zero, in its one layout.
     * The uses the device supports for a format: image_usage. */
    kiln_result (*image_create)(struct kb_device *dev, const struct kb_image *in, struct kb_image **out);
    void (*image_destroy)(struct kb_device *dev, struct kb_image *img);
    /* Every texel (img->bytes), as buffer_write and buffer_read move a
     * buffer's bytes. */
    kiln_result (*image_write)(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                               const void *data);
    kiln_result (*image_read)(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                              void *data, const struct kb_wait *w);
    /* kiln_image_usage bits the device supports for images of a format
     * and dims; *linear: sampled images of it may be filtered linearly. */
    uint32_t (*image_usage)(struct kb_device *dev, kiln_format format, uint32_t dims, bool *linear);
    kiln_result (*layout_create)(struct kb_device *dev, const kiln_program_interface *iface, struct kb_layout **out);
    void (*layout_destroy)(struct kb_device *dev, struct kb_layout *layout);
    /* Makes a compute pipeline, through `cache` when not NULL, with the
     * specialization constants spec[0..spec_count) (each id once). With
     * cache_only, a pipeline the cache cannot supply without compiling is
     * KILN_ERR_PENDING (nothing made). Thread-safe; a cache is internally
     * synchronized. */
    kiln_result (*pipeline_create)(struct kb_device *dev, struct kb_layout *layout, const uint32_t *spirv,
                                   size_t words, const struct kb_spec *spec, uint32_t spec_count,
                                   struct kb_cache *cache, bool cache_only, struct kb_pipeline **out);
    void (*pipeline_destroy)(struct kb_device *dev, struct kb_pipeline *pipe);
    /* A pipeline cache, seeded with data (from cache_data) when not NULL. */
    kiln_result (*cache_create)(struct kb_device *dev, const void *data, size_t len, struct kb_cache **out);
    /* The cache's contents; *data is malloc'd (the caller frees it). */
    kiln_result (*cache_data)(struct kb_device *dev, struct kb_cache *cache, void **data, size_t *len);
    void (*cache_destroy)(struct kb_device *dev, struct kb_cache *cache);
    /* Merges srcs into dst; none of them may be in use meanwhile. */
    kiln_result (*cache_merge)(struct kb_device *dev, struct kb_cache *dst, struct kb_cache *const *srcs, uint32_t n);
    /* Makes the descriptor sets of a layout (every set up to its program's
     * last, the empty ones too) holding the n descriptors b (every one the
     * layout declares, checked by the caller). A texel buffer's format the
     * device cannot use for its kind is KILN_ERR_LIMIT naming it. */
    kiln_result (*bindset_create)(struct kb_device *dev, struct kb_layout *layout, const struct kb_binding *b,
                                  uint32_t n, struct kb_bindset **out);
    void (*bindset_destroy)(struct kb_device *dev, struct kb_bindset *set);
    kiln_result (*cmd_create)(struct kb_device *dev, struct kb_cmd **out);
    void (*cmd_destroy)(struct kb_device *dev, struct kb_cmd *cmd);
    /* Records steps into cmd, replacing what it held. The caller guarantees
     * cmd is not in flight. */
    kiln_result (*cmd_record)(struct kb_device *dev, struct kb_cmd *cmd, const struct kb_step *steps, uint32_t n);
    /* Submits cmd. KILN_ERR_DEVICE_LOST when the driver reports the device
     * lost (as every op may). Called through kb_submit only. */
    kiln_result (*submit)(struct kb_device *dev, struct kb_cmd *cmd, uint64_t *ticket);
    /* The durations (ns) of the timed dispatches of cmd's last completed
     * execution, in step order; *count receives how many. KILN_ERR_PENDING
     * when they are not available (still running, or never run). */
    kiln_result (*cmd_times)(struct kb_device *dev, struct kb_cmd *cmd, uint64_t *ns, uint32_t cap,
                             uint32_t *count);
    /* The highest ticket known done. */
    uint64_t (*ticket_done)(struct kb_device *dev);
    /* Waits at most timeout_ns for ticket: KILN_ERR_TIMEOUT when it is not
     * done by then, KILN_ERR_DEVICE_LOST when the driver reports the device
     * lost. Called through kb_ticket_wait only, which bounds it. */
    kiln_result (*ticket_wait)(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns);
};

/* ---- the registry: one row per backend --------------------------------------------------- */

/* What a context asks of a backend's device: the desc's settings, else the
 * environment's (kiln.h says which; the caller resolves them). */
struct kb_settings {
    const char *device;            /* a selector (an index or part of a name); NULL or "": the backend's choice */
    bool validation;               /* the Vulkan validation layer */
    bool staging;                  /* copies through staging buffers on a unified-memory device too */
    bool check;                    /* check mode: validation with GPU-assisted checks, robust access off */
    bool robust;                   /* robust buffer (and image) access */
};

struct kb_backend {
    kiln_backend_kind kind;
    const char *name;              /* kiln_backend_name's: "vulkan", "mock" */
    const char *title;             /* for people: "Vulkan", "the mock backend" */
    bool remote_by_env;            /* KILN_REMOTE may send its contexts to a server (the mock's stay in process) */
    bool executes;                 /* runs dispatches (their results can be read back); the mock counts them only */
    KILN_NODISCARD kiln_result (*create)(const struct kb_settings *s, struct kb_device **out);
    /* its devices, for kiln_devices and kiln info; NULL: it lists none */
    KILN_NODISCARD kiln_result (*enumerate)(kiln_device_info *out, uint32_t cap, uint32_t *count);
};

/* Every backend kiln is built with, the default (KILN_BACKEND_DEFAULT's)
 * first. Adding one: its enum value in kiln.h, its row in backend.c, its
 * ops (the conformance test, tests/backend/test_backends.c, runs every row). */
extern const struct kb_backend kb_backends[];
extern const uint32_t kb_backend_count;
/* The row of kind (KILN_BACKEND_DEFAULT: the first), or NULL. */
const struct kb_backend *kb_backend_of(kiln_backend_kind kind);
/* The row named name (as kiln_backend_name spells it), or NULL. */
const struct kb_backend *kb_backend_named(const char *name);

/* Backends' constructors (rows of the registry). */
KILN_NODISCARD kiln_result vkb_create(const struct kb_settings *s, struct kb_device **out);
KILN_NODISCARD kiln_result vkb_enumerate(kiln_device_info *out, uint32_t cap, uint32_t *count);
KILN_NODISCARD kiln_result mockb_create(const struct kb_settings *s, struct kb_device **out);

/* Fault hooks of the Vulkan backend, for kiln's tests: VKB_FAULT_LOST makes
 * every later submit and wait report VK_ERROR_DEVICE_LOST (the work already
 * submitted still runs to its end); VKB_FAULT_HANG makes every later submit
 * "never finish" as kiln sees it (the device runs it, kiln is told it did
 * not: its ticket is never done, waits on it time out). */
#ifdef KILN_TEST_HOOKS
enum vkb_fault { VKB_FAULT_LOST = 1, VKB_FAULT_HANG = 2 };
void vkb_fault(struct kb_device *dev, enum vkb_fault fault);
#endif

/* ---- wrappers: the one way other modules call a backend ---- */

static inline void kb_destroy(struct kb_device *d) { d->ops->destroy(d); }
static inline kiln_result kb_buffer_create(struct kb_device *d, uint64_t size, uint32_t usage, struct kb_buffer **o)
{ return d->ops->buffer_create(d, size, usage, o); }
static inline void kb_buffer_destroy(struct kb_device *d, struct kb_buffer *b) { d->ops->buffer_destroy(d, b); }
static inline kiln_result kb_host_import(struct kb_device *d, void *p, uint64_t n, struct kb_host **out)
{
    *out = NULL;
    return d->ops->host_import ? d->ops->host_import(d, p, n, out) : KILN_ERR_DEVICE;
}
static inline void kb_host_release(struct kb_device *d, struct kb_host *h)
{
    if (h)
        d->ops->host_release(d, h);
}
static inline kiln_result kb_buffer_write_host(struct kb_device *d, struct kb_buffer *b, uint64_t off,
                                               struct kb_host *h, uint64_t src_off, uint64_t n, const struct kb_wait *w)
{ return d->ops->buffer_write_host(d, b, off, h, src_off, n, w); }
static inline kiln_result kb_buffer_read_host(struct kb_device *d, struct kb_buffer *b, uint64_t off,
                                              struct kb_host *h, uint64_t dst_off, uint64_t n, const struct kb_wait *w)
{ return d->ops->buffer_read_host(d, b, off, h, dst_off, n, w); }
static inline kiln_result kb_buffer_write(struct kb_device *d, struct kb_buffer *b, uint64_t off, const void *p,
                                          uint64_t n)
{ return d->ops->buffer_write(d, b, off, p, n); }
static inline kiln_result kb_buffer_read(struct kb_device *d, struct kb_buffer *b, uint64_t off, void *p, uint64_t n,
                                         const struct kb_wait *w)
{ return d->ops->buffer_read(d, b, off, p, n, w); }
static inline uint64_t kb_buffer_address(struct kb_device *d, struct kb_buffer *b) { return d->ops->buffer_address(d, b); }
static inline kiln_result kb_image_create(struct kb_device *d, const struct kb_image *in, struct kb_image **o)
{ return d->ops->image_create(d, in, o); }
static inline void kb_image_destroy(struct kb_device *d, struct kb_image *i) { d->ops->image_destroy(d, i); }
static inline kiln_result kb_image_write(struct kb_device *d, struct kb_image *i, const struct kb_image_part *part,
                                         const void *p)
{ return d->ops->image_write(d, i, part, p); }
static inline kiln_result kb_image_read(struct kb_device *d, struct kb_image *i, const struct kb_image_part *part,
                                        void *p, const struct kb_wait *w)
{ return d->ops->image_read(d, i, part, p, w); }
static inline uint32_t kb_image_usage(struct kb_device *d, kiln_format f, uint32_t dims, bool *linear)
{ return d->ops->image_usage(d, f, dims, linear); }
static inline kiln_result kb_layout_create(struct kb_device *d, const kiln_program_interface *i, struct kb_layout **o)
{ return d->ops->layout_create(d, i, o); }
static inline void kb_layout_destroy(struct kb_device *d, struct kb_layout *l) { d->ops->layout_destroy(d, l); }
static inline kiln_result kb_pipeline_create(struct kb_device *d, struct kb_layout *l, const uint32_t *spirv,
                                             size_t words, const struct kb_spec *spec, uint32_t spec_count,
                                             struct kb_cache *c, bool cache_only, struct kb_pipeline **o)
{ return d->ops->pipeline_create(d, l, spirv, words, spec, spec_count, c, cache_only, o); }
static inline kiln_result kb_cache_create(struct kb_device *d, const void *data, size_t len, struct kb_cache **o)
{ return d->ops->cache_create(d, data, len, o); }
static inline kiln_result kb_cache_data(struct kb_device *d, struct kb_cache *c, void **data, size_t *len)
{ return d->ops->cache_data(d, c, data, len); }
static inline void kb_cache_destroy(struct kb_device *d, struct kb_cache *c) { d->ops->cache_destroy(d, c); }
static inline kiln_result kb_cache_merge(struct kb_device *d, struct kb_cache *dst, struct kb_cache *const *srcs,
                                         uint32_t n)
{ return d->ops->cache_merge(d, dst, srcs, n); }
static inline void kb_pipeline_destroy(struct kb_device *d, struct kb_pipeline *p) { d->ops->pipeline_destroy(d, p); }
static inline kiln_result kb_bindset_create(struct kb_device *d, struct kb_layout *l, const struct kb_binding *b,
                                            uint32_t n, struct kb_bindset **o)
{ return d->ops->bindset_create(d, l, b, n, o); }
static inline void kb_bindset_destroy(struct kb_device *d, struct kb_bindset *s) { d->ops->bindset_destroy(d, s); }
static inline kiln_result kb_cmd_create(struct kb_device *d, struct kb_cmd **o) { return d->ops->cmd_create(d, o); }
static inline void kb_cmd_destroy(struct kb_device *d, struct kb_cmd *c) { d->ops->cmd_destroy(d, c); }
static inline kiln_result kb_cmd_record(struct kb_device *d, struct kb_cmd *c, const struct kb_step *s, uint32_t n)
{ return d->ops->cmd_record(d, c, s, n); }
static inline kiln_result kb_cmd_times(struct kb_device *d, struct kb_cmd *c, uint64_t *ns, uint32_t cap,
                                       uint32_t *count)
{ return d->ops->cmd_times(d, c, ns, cap, count); }
static inline uint64_t kb_ticket_done(struct kb_device *d) { return d->ops->ticket_done(d); }

/* ---- loss and runaway work (backend.c) ---- */

/* A backend's device begins and ends with these (the loss bookkeeping's
 * lock); finish is not called on a device left abandoned to its work. */
void kb_device_init(struct kb_device *d);
void kb_device_finish(struct kb_device *d);
/* Work that finishes nothing for ns nanoseconds is runaway; 0: no bound. */
void kb_set_timeout(struct kb_device *d, uint64_t ns);
/* Submits cmd, noting it as running `what` (copied; names the submit in a
 * loss message). KILN_ERR_DEVICE_LOST on a lost device. */
KILN_NODISCARD kiln_result kb_submit(struct kb_device *d, struct kb_cmd *c, const char *what, uint64_t *t);
/* Notes a submit a backend made itself (a transfer) as running `what`. */
void kb_note_submit(struct kb_device *d, uint64_t ticket, const char *what);
/* With a trace: each submit done since *traced (the caller's mark, moved
 * on) as a span from its making to now, when kiln saw it done. Called by
 * the context lock's holder after a wait. */
void kb_trace_done(struct kb_device *d, uint64_t *traced);
/* Waits for ticket, at most timeout_ns (UINT64_MAX: while the device
 * lives), and never past the device's timeout: work that outlives it
 * latches the device lost. KILN_ERR_TIMEOUT when the caller's bound ran
 * out first, KILN_ERR_DEVICE_LOST when the device is (or becomes) lost.
 * owner is who waits (kb_device.owner as it was when the waiter held the
 * device; NULL: the device's own context): runaway work of that owner ends
 * the wait with KILN_ERR_DEVICE_LOST, another owner's is that owner's
 * fault and the wait goes on. Safe from any thread, the context lock held
 * or not. */
kiln_result kb_ticket_wait_as(struct kb_device *d, const void *owner, uint64_t ticket, uint64_t timeout_ns);
/* kb_ticket_wait_as for the holder of the device, as kb_device.owner says. */
static inline kiln_result kb_ticket_wait(struct kb_device *d, uint64_t ticket, uint64_t timeout_ns)
{ return kb_ticket_wait_as(d, d->owner, ticket, timeout_ns); }
/* KILN_OK, or KILN_ERR_DEVICE_LOST naming why the device was lost. */
KILN_NODISCARD kiln_result kb_live(struct kb_device *d);
static inline bool kb_is_lost(struct kb_device *d) { return atomic_load(&d->lost) != KB_LIVE; }
/* Latches the device lost (how: enum kb_lost) with the formatted reason,
 * unless it already is, and raises KILN_ERR_DEVICE_LOST with the reason. */
KILN_NODISCARD kiln_result kb_lose(struct kb_device *d, int how, const char *fmt, ...) KILN_PRINTF(3, 4);
/* r, after latching the device lost if r is KILN_ERR_DEVICE_LOST: for the
 * ops other than submit and wait, which may report it too. */
kiln_result kb_seen(struct kb_device *d, kiln_result r);
/* At destroy: a lost device whose noted work has not all finished is
 * marked abandoned (the destroy ops then leave their objects to the running
 * work) and true is returned. A live device, or one whose work is done,
 * is left to be freed as usual. */
bool kb_abandon(struct kb_device *d);

#endif
