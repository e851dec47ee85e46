/* SPDX-License-Identifier: MIT */
/*
 * mock.c: the deterministic backend (see mock.h).
 *
 * Pipeline caches: by default a cache keeps no compiled code and its data is
 * a 32-byte header (as lavapipe's). A device made after
 * mockb_keep_compiled_code(true) behaves like a driver whose caches keep
 * code (NVIDIA's): a cache remembers every pipeline compiled through it, by
 * the XXH3-128 of its SPIR-V; its data is the header followed by one
 * 32-byte record per pipeline (the hash, then the hash again standing for
 * the code); a cache seeded with such data supplies those pipelines without
 * compiling, also when asked for them "from the cache or not at all". Data
 * that does not check out seeds an empty cache, as Vulkan says
 * (vkCreatePipelineCache ignores incompatible initial data).
 */
#include "mock.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <stdio.h>
#include <string.h>

struct mock_buffer {
    struct kb_buffer base;
    uint8_t *bytes;
};
struct mock_image {
    struct kb_image base;
    uint8_t *bytes;
};
struct kb_layout { int unused; };
struct kb_pipeline {
    uint32_t spec_count;                         /* the specialization constants it was made with */
    struct kb_spec spec[KILN_MAX_SPEC_CONSTANTS];
};
struct kb_cache {
    uint32_t pipelines;          /* pipelines compiled through it (and merged into it) */
    uint8_t (*kept)[16];         /* keeping mode: the SPIR-V hashes of the pipelines it holds */
    uint32_t kept_count, kept_cap;
};
struct kb_bindset { int unused; };
struct kb_cmd {
    struct kb_step *steps;
    uint32_t n, cap;
};

struct mock_device {
    struct kb_device base;
    pthread_mutex_t lock;        /* counts: compile workers make pipelines concurrently */
    struct mock_counts counts;
    /* The highest ticket done (base.submitted: the highest submitted);
     * atomic, as waits run on any thread (backend.h). */
    _Atomic uint64_t done_ticket;
    bool hold;
    _Atomic uint64_t hang_from;  /* mockb_hang: tickets from here on never finish (0: none) */
    _Atomic bool lost;           /* mockb_lose */
    uint64_t abandoned;          /* objects destroyed while abandoned (freed anyway: nothing runs them) */
    struct kb_cmd *last_submitted;
    /* mockb_gate: submits from gate_from on wait at the gate (0: open). */
    pthread_mutex_t gate_lock;   /* guards gate_from and gated; gate_cond waits on it */
    pthread_cond_t gate_cond;
    uint64_t gate_from;
    uint32_t gated;
    uint64_t (*cost)(void *ud, const struct kb_pipeline *pipe);   /* mockb_set_cost */
    void *cost_ud;
    bool keeps_code;             /* its caches keep compiled code (mockb_keep_compiled_code) */
};

#define MOCK_CACHE_HEADER 32
#define MOCK_CACHE_RECORD 32
static const char mock_cache_magic[8] = "KMOCKPC1";

static _Atomic bool g_keep_code;   /* for devices made from now on */
static const struct backend_ops mock_ops;
static struct mock_device *md(struct kb_device *d) { return (struct mock_device *)d; }

#ifdef KILN_TEST_HOOKS   /* the mock's controls: test builds only */
void mockb_keep_compiled_code(bool keeps) { atomic_store(&g_keep_code, keeps); }

struct mock_counts mockb_counts(struct kb_device *dev)
{
    pthread_mutex_lock(&md(dev)->lock);
    struct mock_counts c = md(dev)->counts;
    pthread_mutex_unlock(&md(dev)->lock);
    return c;
}
void mockb_hold(struct kb_device *dev, bool hold) { md(dev)->hold = hold; }
void mockb_release(struct kb_device *dev)
{
    struct mock_device *d = md(dev);
    if (!d->lost)
        d->done_ticket = d->hang_from ? KILN_MAX(d->done_ticket, d->hang_from - 1) : d->base.submitted;
}

void mockb_hang(struct kb_device *dev, bool hang)
{
    struct mock_device *d = md(dev);
    if (hang && !d->hang_from) {
        d->hang_from = d->base.submitted + 1;
    } else if (!hang && d->hang_from) {
        d->hang_from = 0;
        if (!d->lost)
            d->done_ticket = d->base.submitted;
    }
}

void mockb_lose(struct kb_device *dev) { md(dev)->lost = true; }

void mockb_gate(struct kb_device *dev, bool closed)
{
    struct mock_device *d = md(dev);
    pthread_mutex_lock(&d->gate_lock);
    if (closed && !d->gate_from) {
        d->gate_from = d->base.submitted + 1;
    } else if (!closed && d->gate_from) {
        d->gate_from = 0;
        pthread_cond_broadcast(&d->gate_cond);
    }
    pthread_mutex_unlock(&d->gate_lock);
}

uint32_t mockb_gated(struct kb_device *dev)
{
    struct mock_device *d = md(dev);
    pthread_mutex_lock(&d->gate_lock);
    uint32_t n = d->gated;
    pthread_mutex_unlock(&d->gate_lock);
    return n;
}

uint32_t mockb_pipeline_spec(const struct kb_pipeline *pipe, struct kb_spec *out, uint32_t cap)
{
    for (uint32_t i = 0; i < pipe->spec_count && i < cap; i++)
        out[i] = pipe->spec[i];
    return pipe->spec_count;
}

bool mockb_last_dispatch(struct kb_device *dev, uint32_t i, struct kb_step *out)
{
    struct kb_cmd *c = md(dev)->last_submitted;
    for (uint32_t k = 0; c && k < c->n; k++)
        if (c->steps[k].kind == KB_STEP_DISPATCH && i-- == 0) {
            *out = c->steps[k];
            return true;
        }
    return false;
}
#endif

static void *counted(struct mock_device *d, size_t size)
{
    void *p = mem_calloc(1, size);
    pthread_mutex_lock(&d->lock);
    if (p)
        d->counts.live_objects++;
    pthread_mutex_unlock(&d->lock);
    return p;
}
static void uncounted(struct mock_device *d, void *p)
{
    pthread_mutex_lock(&d->lock);
    if (p)
        d->counts.live_objects--;
    if (p && atomic_load(&d->base.abandon))
        d->abandoned++;
    pthread_mutex_unlock(&d->lock);
    free(p);
}

static void count(struct mock_device *d, uint64_t *field)
{
    pthread_mutex_lock(&d->lock);
    (*field)++;
    pthread_mutex_unlock(&d->lock);
}

static void mock_destroy(struct kb_device *dev)
{
    if (atomic_load(&dev->abandon))
        log_info("mock: abandoned device: %llu objects a device would have left to its running work (the mock frees "
                 "them: nothing runs them)", (unsigned long long)md(dev)->abandoned);
    pthread_mutex_destroy(&md(dev)->lock);
    pthread_mutex_destroy(&md(dev)->gate_lock);
    pthread_cond_destroy(&md(dev)->gate_cond);
    kb_device_finish(dev);
    free(dev);
}

static kiln_result mock_buffer_create(struct kb_device *dev, uint64_t size, uint32_t usage, struct kb_buffer **out)
{
    struct mock_device *d = md(dev);
    struct mock_buffer *b = counted(d, sizeof *b);
    if (!b || !(b->bytes = mem_calloc(1, size))) {
        uncounted(d, b);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a %llu-byte buffer",
                          (unsigned long long)size);
    }
    b->base.size = size;
    b->base.usage = usage;
    b->base.mapped = true;   /* the mock's bytes are host memory */
    d->counts.buffers_created++;
    *out = &b->base;
    return KILN_OK;
}

static void mock_buffer_destroy(struct kb_device *dev, struct kb_buffer *buf)
{
    free(((struct mock_buffer *)buf)->bytes);
    uncounted(md(dev), buf);
}

/* The mock runs nothing: a buffer's address is where its bytes are. */
static uint64_t mock_buffer_address(struct kb_device *dev, struct kb_buffer *buf)
{
    (void)dev;
    return (uint64_t)(uintptr_t)((struct mock_buffer *)buf)->bytes;
}

/* Reads and writes wait for work that is hung or on a lost device, as a
 * device's wait for earlier work would; held work stays in flight (tests of
 * scheduling rely on it). */
static kiln_result wait_hung(struct mock_device *d)
{
    if ((d->hang_from && d->base.submitted >= d->hang_from) || d->lost)
        return kb_ticket_wait(&d->base, d->base.submitted, UINT64_MAX);
    return KILN_OK;
}

static kiln_result mock_buffer_write(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, const void *data,
                                     uint64_t size)
{
    KILN_TRY(wait_hung(md(dev)));
    memcpy(((struct mock_buffer *)buf)->bytes + off, data, size);
    return KILN_OK;
}

static kiln_result mock_buffer_read(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, void *data,
                                    uint64_t size, const struct kb_wait *w)
{
    (void)w;   /* the mock reads at once */
    KILN_TRY(wait_hung(md(dev)));
    memcpy(data, ((struct mock_buffer *)buf)->bytes + off, size);
    return KILN_OK;
}

static kiln_result mock_image_create(struct kb_device *dev, const struct kb_image *in, struct kb_image **out)
{
    struct mock_device *d = md(dev);
    struct mock_image *m = counted(d, sizeof *m);
    if (!m || !(m->bytes = mem_calloc(1, (size_t)in->bytes))) {
        uncounted(d, m);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a %llu-byte image",
                          (unsigned long long)in->bytes);
    }
    m->base = *in;
    m->base.mapped = true;
    *out = &m->base;
    return KILN_OK;
}

static void mock_image_destroy(struct kb_device *dev, struct kb_image *img)
{
    free(((struct mock_image *)img)->bytes);
    uncounted(md(dev), img);
}

static kiln_result mock_image_write(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                                    const void *data)
{
    KILN_TRY(wait_hung(md(dev)));
    uint64_t off, n;
    kb_image_part_span(img, part, &off, &n);
    memcpy(((struct mock_image *)img)->bytes + off, data, (size_t)n);
    return KILN_OK;
}

static kiln_result mock_image_read(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                                   void *data, const struct kb_wait *w)
{
    (void)w;
    KILN_TRY(wait_hung(md(dev)));
    uint64_t off, n;
    kb_image_part_span(img, part, &off, &n);
    memcpy(data, ((struct mock_image *)img)->bytes + off, (size_t)n);
    return KILN_OK;
}

/* The mock runs nothing: every format takes every use. */
static uint32_t mock_image_usage(struct kb_device *dev, kiln_format format, uint32_t dims, bool *linear)
{
    (void)dev, (void)format, (void)dims;
    *linear = true;
    return KILN_IMAGE_STORAGE | KILN_IMAGE_SAMPLED;
}

static kiln_result mock_layout_create(struct kb_device *dev, const kiln_program_interface *iface,
                                      struct kb_layout **out)
{
    (void)iface;
    struct mock_device *d = md(dev);
    if (!(*out = counted(d, sizeof **out)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a pipeline layout");
    count(d, &d->counts.layouts_created);
    return KILN_OK;
}
static void mock_layout_destroy(struct kb_device *dev, struct kb_layout *l) { uncounted(md(dev), l); }

/* Whether c holds the pipeline of hash h (device lock held). */
static bool cache_holds(const struct kb_cache *c, const uint8_t h[16])
{
    for (uint32_t i = 0; c && i < c->kept_count; i++)
        if (!memcmp(c->kept[i], h, 16))
            return true;
    return false;
}

/* Adds h to c unless there (device lock held); false when out of memory. */
static bool cache_keep(struct kb_cache *c, const uint8_t h[16])
{
    if (cache_holds(c, h))
        return true;
    if (!vec_reserve((void **)&c->kept, &c->kept_cap, c->kept_count + 1, sizeof *c->kept))
        return false;
    memcpy(c->kept[c->kept_count++], h, 16);
    return true;
}

static kiln_result mock_pipeline_create(struct kb_device *dev, struct kb_layout *layout, const uint32_t *spirv,
                                        size_t words, const struct kb_spec *spec, uint32_t spec_count,
                                        struct kb_cache *cache, bool cache_only, struct kb_pipeline **out)
{
    (void)layout;
    struct mock_device *d = md(dev);
    if (!spirv || words < 5 || spirv[0] != 0x07230203u)
        return KILN_RAISE(KILN_ERR_DEVICE, "mock: pipeline from %zu words that are not SPIR-V", words);
    if (spec_count > KILN_MAX_SPEC_CONSTANTS)
        return KILN_RAISE(KILN_ERR_INVALID, "mock: %u specialization constants", spec_count);
    /* A pipeline is its SPIR-V and its constants, as a driver's cache keys it. */
    uint8_t h[16], hs[16];
    hash128(spirv, words * 4, h);
    if (spec_count) {
        hash128(spec, spec_count * sizeof *spec, hs);
        for (int i = 0; i < 16; i++)
            h[i] ^= (uint8_t)(hs[i] + i + 1);
    }
    pthread_mutex_lock(&d->lock);
    bool cached = d->keeps_code && cache_holds(cache, h);
    pthread_mutex_unlock(&d->lock);
    if (cache_only && !cached)
        return KILN_RAISE(KILN_ERR_PENDING, "mock: not in the pipeline cache");
    if (!(*out = counted(d, sizeof **out)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a pipeline");
    (*out)->spec_count = spec_count;
    if (spec_count)
        memcpy((*out)->spec, spec, spec_count * sizeof *spec);
    pthread_mutex_lock(&d->lock);
    if (cached) {
        d->counts.pipelines_from_cache++;
    } else {
        d->counts.pipelines_created++;
        if (cache)
            cache->pipelines++;
        if (cache && d->keeps_code && !cache_keep(cache, h)) {
            pthread_mutex_unlock(&d->lock);
            uncounted(d, *out);
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a pipeline cache's record");
        }
    }
    pthread_mutex_unlock(&d->lock);
    return KILN_OK;
}

static void mock_cache_destroy(struct kb_device *dev, struct kb_cache *c)
{
    if (c)
        free(c->kept);
    uncounted(md(dev), c);
}

/* Seeded with data of the keeping mode's form: each record whose two
 * halves agree is kept; anything else seeds nothing. */
static kiln_result mock_cache_create(struct kb_device *dev, const void *data, size_t len, struct kb_cache **out)
{
    struct mock_device *d = md(dev);
    struct kb_cache *c = counted(d, sizeof *c);
    if (!c)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a pipeline cache");
    const uint8_t *p = data;
    if (d->keeps_code && p && len >= MOCK_CACHE_HEADER && (len - MOCK_CACHE_HEADER) % MOCK_CACHE_RECORD == 0 &&
        !memcmp(p, mock_cache_magic, sizeof mock_cache_magic)) {
        for (size_t off = MOCK_CACHE_HEADER; off < len; off += MOCK_CACHE_RECORD)
            if (!memcmp(p + off, p + off + 16, 16) && !cache_keep(c, p + off)) {
                mock_cache_destroy(dev, c);
                return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a pipeline cache's records");
            }
    }
    *out = c;
    return KILN_OK;
}

/* The header (magic, then zeros), and in the keeping mode a record per
 * pipeline the cache holds. */
static kiln_result mock_cache_data(struct kb_device *dev, struct kb_cache *c, void **data, size_t *len)
{
    struct mock_device *d = md(dev);
    pthread_mutex_lock(&d->lock);
    size_t n = MOCK_CACHE_HEADER + (size_t)c->kept_count * MOCK_CACHE_RECORD;
    uint8_t *p = mem_calloc(1, n);
    if (p) {
        memcpy(p, mock_cache_magic, sizeof mock_cache_magic);
        for (uint32_t i = 0; i < c->kept_count; i++) {
            memcpy(p + MOCK_CACHE_HEADER + (size_t)i * MOCK_CACHE_RECORD, c->kept[i], 16);
            memcpy(p + MOCK_CACHE_HEADER + (size_t)i * MOCK_CACHE_RECORD + 16, c->kept[i], 16);
        }
    }
    pthread_mutex_unlock(&d->lock);
    if (!p)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for pipeline cache data");
    *data = p;
    *len = n;
    return KILN_OK;
}

static kiln_result mock_cache_merge(struct kb_device *dev, struct kb_cache *dst, struct kb_cache *const *srcs,
                                   uint32_t n)
{
    struct mock_device *d = md(dev);
    pthread_mutex_lock(&d->lock);
    for (uint32_t i = 0; i < n; i++) {
        dst->pipelines += srcs[i]->pipelines;
        for (uint32_t k = 0; k < srcs[i]->kept_count; k++)
            if (!cache_keep(dst, srcs[i]->kept[k])) {
                pthread_mutex_unlock(&d->lock);
                return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory merging pipeline caches");
            }
    }
    d->counts.cache_merges++;
    pthread_mutex_unlock(&d->lock);
    return KILN_OK;
}

static void mock_pipeline_destroy(struct kb_device *dev, struct kb_pipeline *p) { uncounted(md(dev), p); }

static kiln_result mock_bindset_create(struct kb_device *dev, struct kb_layout *layout, const struct kb_binding *b,
                                       uint32_t n, struct kb_bindset **out)
{
    (void)layout, (void)b, (void)n;
    struct mock_device *d = md(dev);
    if (!(*out = counted(d, sizeof **out)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a binding set");
    count(d, &d->counts.bindsets_created);
    return KILN_OK;
}
static void mock_bindset_destroy(struct kb_device *dev, struct kb_bindset *s) { uncounted(md(dev), s); }

static kiln_result mock_cmd_create(struct kb_device *dev, struct kb_cmd **out)
{
    struct mock_device *d = md(dev);
    if (!(*out = counted(d, sizeof **out)))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for a command buffer");
    count(d, &d->counts.cmds_created);
    return KILN_OK;
}

static void mock_cmd_destroy(struct kb_device *dev, struct kb_cmd *c)
{
    struct mock_device *d = md(dev);
    if (d->last_submitted == c)
        d->last_submitted = NULL;
    free(c->steps);
    uncounted(d, c);
}

static kiln_result mock_cmd_record(struct kb_device *dev, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
{
    struct mock_device *d = md(dev);
    if (!vec_reserve((void **)&c->steps, &c->cap, n, sizeof *steps))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "mock: out of host memory for %u recorded steps", n);
    if (n)
        memcpy(c->steps, steps, n * sizeof *steps);
    c->n = n;
    pthread_mutex_lock(&d->lock);
    d->counts.records++;
    for (uint32_t i = 0; i < n; i++) {
        if (steps[i].kind == KB_STEP_DISPATCH)
            d->counts.dispatches_recorded++;
        else
            d->counts.barriers_recorded++;
    }
    pthread_mutex_unlock(&d->lock);
    return KILN_OK;
}

#ifdef KILN_TEST_HOOKS
void mockb_set_cost(struct kb_device *dev, uint64_t (*cost)(void *ud, const struct kb_pipeline *pipe), void *ud)
{
    md(dev)->cost = cost;
    md(dev)->cost_ud = ud;
    dev->timestamps = cost != NULL;
}
#endif

static kiln_result mock_cmd_times(struct kb_device *dev, struct kb_cmd *c, uint64_t *ns, uint32_t cap,
                                  uint32_t *count)
{
    struct mock_device *d = md(dev);
    *count = 0;
    for (uint32_t i = 0; i < c->n && *count < cap && d->cost; i++)
        if (c->steps[i].kind == KB_STEP_DISPATCH && c->steps[i].timed)
            ns[(*count)++] = d->cost(d->cost_ud, c->steps[i].pipeline);
    return KILN_OK;
}

static kiln_result mock_submit(struct kb_device *dev, struct kb_cmd *c, uint64_t *ticket)
{
    struct mock_device *d = md(dev);
    if (d->lost)
        return KILN_RAISE(KILN_ERR_DEVICE_LOST, "mock: the device is lost (mockb_lose)");
    *ticket = ++d->base.submitted;
    pthread_mutex_lock(&d->gate_lock);
    bool gated = d->gate_from != 0;
    pthread_mutex_unlock(&d->gate_lock);
    if (!d->hold && !d->hang_from && !gated)
        d->done_ticket = d->base.submitted;
    d->last_submitted = c;
    count(d, &d->counts.submits);
    return KILN_OK;
}

static uint64_t mock_ticket_done(struct kb_device *dev) { return md(dev)->done_ticket; }

static kiln_result mock_ticket_wait(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns)
{
    struct mock_device *d = md(dev);
    count(d, &d->counts.waits);
    if (ticket > d->base.submitted)
        return KILN_RAISE(KILN_ERR_INVALID, "mock: ticket %llu was never issued", (unsigned long long)ticket);
    if (d->lost)
        return KILN_RAISE(KILN_ERR_DEVICE_LOST, "mock: the device is lost (mockb_lose)");
    if (d->hang_from && ticket >= d->hang_from) {
        /* The work before the hung submit runs; the hung one never ends. */
        uint64_t ran = d->hang_from - 1, seen = atomic_load(&d->done_ticket);
        while (seen < ran && !atomic_compare_exchange_weak(&d->done_ticket, &seen, ran)) {
        }
        uint64_t ns = KILN_MIN(timeout_ns, 5000000000ull);
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        return KILN_RAISE(KILN_ERR_TIMEOUT, "mock: ticket %llu hangs (mockb_hang)", (unsigned long long)ticket);
    }
    pthread_mutex_lock(&d->gate_lock);
    if (d->gate_from && ticket >= d->gate_from) {
        /* At the gate until it opens or the bound runs out. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = KILN_MIN(timeout_ns, 3600ull * 1000000000u);
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec += (long)(ns % 1000000000u);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        d->gated++;
        int e = 0;
        while (d->gate_from && ticket >= d->gate_from && e != ETIMEDOUT)
            e = pthread_cond_timedwait(&d->gate_cond, &d->gate_lock, &until);
        d->gated--;
        bool open = !(d->gate_from && ticket >= d->gate_from);
        pthread_mutex_unlock(&d->gate_lock);
        if (!open)
            return KILN_RAISE(KILN_ERR_TIMEOUT, "mock: ticket %llu at the gate (mockb_gate)", (unsigned long long)ticket);
    } else {
        pthread_mutex_unlock(&d->gate_lock);
    }
    /* Waiting "runs" the work up to the ticket. */
    uint64_t seen = atomic_load(&d->done_ticket);
    while (seen < ticket && !atomic_compare_exchange_weak(&d->done_ticket, &seen, ticket)) {
    }
    return KILN_OK;
}

static const struct backend_ops mock_ops = {
    .name = "mock",
    .layout_follows_signature = true,
    .destroy = mock_destroy,
    .buffer_create = mock_buffer_create,
    .buffer_destroy = mock_buffer_destroy,
    .buffer_address = mock_buffer_address,
    .buffer_write = mock_buffer_write,
    .buffer_read = mock_buffer_read,
    .image_create = mock_image_create,
    .image_destroy = mock_image_destroy,
    .image_write = mock_image_write,
    .image_read = mock_image_read,
    .image_usage = mock_image_usage,
    .layout_create = mock_layout_create,
    .layout_destroy = mock_layout_destroy,
    .pipeline_create = mock_pipeline_create,
    .pipeline_destroy = mock_pipeline_destroy,
    .cache_create = mock_cache_create,
    .cache_data = mock_cache_data,
    .cache_destroy = mock_cache_destroy,
    .cache_merge = mock_cache_merge,
    .bindset_create = mock_bindset_create,
    .bindset_destroy = mock_bindset_destroy,
    .cmd_create = mock_cmd_create,
    .cmd_destroy = mock_cmd_destroy,
    .cmd_record = mock_cmd_record,
    .cmd_times = mock_cmd_times,
    .submit = mock_submit,
    .ticket_done = mock_ticket_done,
    .ticket_wait = mock_ticket_wait,
};

kiln_result mockb_create(const struct kb_settings *set, struct kb_device **out)
{
    (void)set;   /* one device, no layers, nothing to stage */
    struct mock_device *d = mem_calloc(1, sizeof *d);
    if (!d)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the mock device");
    d->base.ops = &mock_ops;
    kb_device_init(&d->base);
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->gate_lock, NULL);
    pthread_cond_init(&d->gate_cond, NULL);
    kiln_caps *c = &d->base.caps;
    snprintf(c->device_name, sizeof c->device_name, "kiln mock device");
    snprintf(c->driver_name, sizeof c->driver_name, "kiln mock");
    c->device_type = KILN_DEVICE_OTHER;
    c->api_version = (1u << 22) | (2u << 12);
    c->subgroup_size = 32;
    c->subgroup_ops = 0xff;   /* the mock runs nothing: it claims every class */
    for (int i = 0; i < 3; i++) {
        c->max_workgroup_count[i] = 65535;
        c->max_workgroup_size[i] = 1024;
    }
    c->max_workgroup_invocations = 1024;
    c->max_storage_buffer_range = 1u << 30;
    c->max_uniform_buffer_range = 65536;
    c->max_push_constants_size = 128;
    c->max_shared_memory_size = 32768;
    c->max_per_stage_storage_buffers = 16;
    c->max_per_stage_uniform_buffers = 12;
    c->max_per_stage_resources = 128;
    c->max_buffer_size = 1ull << 32;
    c->max_bound_descriptor_sets = KILN_MAX_SETS;
    c->max_per_stage_storage_images = 16;
    c->max_per_stage_sampled_images = 16;
    c->max_texel_buffer_elements = 1u << 27;
    c->min_texel_buffer_offset_alignment = 16;
    c->max_image_dimension_2d = 16384;
    c->max_image_dimension_1d = 16384;
    c->max_image_dimension_cube = 16384;
    c->max_image_array_layers = 2048;
    c->max_image_dimension_3d = 2048;
    c->storage_image_read_without_format = 1;
    c->storage_image_write_without_format = 1;
    c->shader_features = ~0u;   /* the mock runs no shader: it lacks nothing */
    c->min_storage_buffer_offset_alignment = 16;
    c->min_uniform_buffer_offset_alignment = 16;
    c->unified_memory = 1;
    c->backend = KILN_BACKEND_MOCK;
    if (atomic_load(&g_keep_code)) {
        /* Another "driver": its archives live in a device pair of their own. */
        d->keeps_code = true;
        d->base.cache_control = true;
        c->pipeline_cache_keeps_code = 1;
        c->pipeline_cache_uuid[0] = 1;
        snprintf(c->driver_name, sizeof c->driver_name, "kiln mock (pipeline caches keep compiled code)");
    }
    *out = &d->base;
    return KILN_OK;
}
