/* SPDX-License-Identifier: MIT */
/*
 * vk_private.h: what the Vulkan backend's files share (vk_device.c,
 * vk_instance.c, vk_buffer.c, vk_pipeline.c, vk_image.c, vk_cmd.c): its
 * objects, each embedding the generic one first (asserted below), and the
 * helpers more than one file calls. vk_device.c's top says how the backend
 * works.
 */
#ifndef KILN_VK_PRIVATE_H
#define KILN_VK_PRIVATE_H

#include <pthread.h>
#include <stddef.h>

#include <vulkan/vulkan.h>

#include "backend/backend.h"

struct vk_buffer {
    struct kb_buffer base;
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;               /* mapped pointer where memory is host-visible */
};

/* An image in its one layout, GENERAL, from creation on (storage and
 * sampled use both allow it), with one view of the whole image. */
#define VK_IMAGE_VIEWS 40   /* a storage view per level of 16 and its arrayed kin, and the sampled ones */
struct vk_image {
    struct kb_image base;
    VkImage image;
    VkDeviceMemory mem;
    /* Views as bindings ask for them (vk_image_view), made on first use
     * under the context lock: by view type and mip level (-1: every
     * level). */
    struct vk_image_view { VkImageViewType type; int level; VkImageView view; } views[VK_IMAGE_VIEWS];
    uint32_t view_count;
};

/* Descriptor types by kiln_binding_kind (a pool's sizes are counted by
 * kind). */
#define KINDS (KILN_BINDING_COMBINED_IMAGE_SAMPLER + 1)

/* Samplers by kiln_sampler_desc (filled in): made when a binding set first
 * asks for one, kept for the device's life. */
#define FILTERS (KILN_FILTER_NEAREST + 1)
#define ADDRESSES (KILN_ADDRESS_BORDER + 1)

/* A program's layout: one descriptor set layout per set 0..set_count-1
 * (a set the program leaves empty has an empty one: Vulkan's pipeline
 * layout lists sets by number). */
struct kb_layout {
    VkDescriptorSetLayout set_layouts[KILN_MAX_SETS];
    uint32_t set_count;
    VkPipelineLayout layout;
    uint32_t descriptors[KINDS];   /* by kind, array elements counted: a binding set's pool sizes */
    uint32_t push_bytes;     /* the push range: kiln's KILN_PUSH_BYTES, or the program's own block's size */
    bool own_push;
};

struct kb_pipeline {
    VkPipeline pipe;
};

/* Check mode (vk_check.c): one buffer descriptor a dispatch binds, and
 * what one dispatch of a recording runs. */
struct vk_check_binding {
    uint32_t set, binding, element;
    uint64_t size;           /* the range's bytes */
    uint64_t reach;          /* bytes from the range's start to the buffer's end */
};
struct vk_check_dispatch {
    VkCommandBuffer cb;      /* the command buffer it is recorded in (check mode: its own) */
    char label[64];          /* the node's */
    uint32_t count;
    struct vk_check_binding b[KILN_MAX_DESCRIPTORS];
};

struct kb_bindset {
    VkDescriptorPool pool;
    struct vk_check_binding info[KILN_MAX_DESCRIPTORS];   /* its buffer descriptors, for check mode's lines */
    uint32_t info_count;
    VkDescriptorSet sets[KILN_MAX_SETS];   /* the layout's set_count of them */
    uint32_t set_count;
    VkBufferView views[KILN_MAX_DESCRIPTORS];   /* texel buffers' views */
    uint32_t view_count;
};

struct kb_cmd {
    VkCommandBuffer cb;
    VkQueryPool pool;        /* timestamps of timed dispatches: two each */
    uint32_t pool_size;
    uint32_t timed;          /* timed dispatches in the current recording */
    /* Check mode: the recording is one command buffer per dispatch
     * (parts, submitted in one batch), so the layer's report, which names
     * a command buffer, names the dispatch; notes[k] says what parts[k]
     * runs. The device lists its recordings (vk_check.c; notes and the
     * list under vk_device.check_lock). */
    VkCommandBuffer *parts;
    uint32_t part_count, part_cap;
    struct vk_check_dispatch *notes;
    uint32_t note_count, note_cap;
    bool check_listed;
    struct kb_cmd *check_next;
};

/* A host-visible, coherent staging buffer of `size` bytes, mapped. */
/* Host memory the device reads in place (host_import). */
struct vk_host {
    VkBuffer buf;
    VkDeviceMemory mem;
    uint64_t size;
};

struct staging {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
};

struct vk_device {
    struct kb_device base;
    float timestamp_period;      /* ns per timestamp tick */
    uint64_t timestamp_mask;     /* the queue's valid timestamp bits */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool cmd_pool;
    /* Transfers submitted and not yet seen done (fills, clears, staged
     * uploads): freed once their ticket is (vk_xfer_reap). Under the
     * context lock. */
    struct vk_xfer *xfers;
    uint32_t xfer_count, xfer_cap;
    uint64_t xfer_bytes;             /* their staging bytes (bounded: XFER_STAGING_MAX) */
    /* Staging buffers of finished transfers kept for the next (allocating
     * and first touching pinned memory costs more than the copy), their
     * bytes bounded by XFER_STAGING_MAX; freed with the device. Under the
     * context lock. */
    struct vk_spare { struct staging st; uint64_t bytes; } spares[8];
    uint32_t spare_count;
    uint64_t spare_bytes;
    VkSemaphore timeline;
    uint64_t host_align;             /* VK_EXT_external_memory_host's pointer alignment; 0: no host import */
    PFN_vkGetMemoryHostPointerPropertiesEXT host_props;
    uint32_t mem_device;             /* memory type of buffers */
    uint32_t mem_staging;            /* host-visible coherent type for staging */
    bool unified;
    VkPhysicalDeviceMemoryProperties memprops;   /* filled by fill_caps */
    VkSampler samplers[FILTERS][ADDRESSES];      /* by kiln_sampler_desc; under the context lock */
    /* vkb_fault: */
    _Atomic bool fault_lost;         /* submits and waits report VK_ERROR_DEVICE_LOST (atomic: waits run on any thread) */
    _Atomic uint64_t hang_from;      /* tickets from here on are never done, as kiln sees them (0: none) */
    /* Abandonment (see the top): objects left to the running work, by kind. */
    pthread_mutex_t kept_lock;       /* guards kept, kept_count, kept_cap, kept_kinds (compile workers destroy pipelines) */
    void **kept;                     /* host structs and handles, kept reachable */
    uint32_t kept_count, kept_cap;
    uint32_t kept_kinds[8];
    struct vk_device *next_abandoned;   /* graveyard link */
    pthread_mutex_t check_lock;      /* guards checked and each listed command buffer's notes (vk_check.c) */
    struct kb_cmd *checked;          /* check mode: command buffers with a recording, for the layer's reports */
};

enum kept_kind {
    KEPT_BUFFER, KEPT_LAYOUT, KEPT_PIPELINE, KEPT_CACHE, KEPT_BINDSET, KEPT_CMD, KEPT_STAGING, KEPT_IMAGE, KEPT_KINDS
};


struct kb_cache {
    VkPipelineCache cache;
};

/* A transfer: a command buffer of its own and, for a staged copy, its
 * staging buffer. Many may be in flight; each is ordered after every
 * earlier submit on the queue (its opening barrier) and makes its writes
 * visible to later submits and the host (its closing one). */
struct vk_xfer {
    VkCommandBuffer cb;
    struct staging st;       /* st.buf VK_NULL_HANDLE: none */
    uint64_t bytes;          /* st's size */
    uint64_t ticket;         /* its submit, once made */
    uint64_t after;          /* the ticket its commands wait for: the last that touched its bytes */
};

_Static_assert(offsetof(struct vk_device, base) == 0, "a struct kb_device * of the Vulkan backend is its vk_device");
_Static_assert(offsetof(struct vk_buffer, base) == 0, "a struct kb_buffer * of the Vulkan backend is its vk_buffer");
_Static_assert(offsetof(struct vk_image, base) == 0, "a struct kb_image * of the Vulkan backend is its vk_image");

static inline struct vk_device *vkd(struct kb_device *d) { return (struct vk_device *)d; }

#define VK_CHECK(expr, what)                                                                       \
    do {                                                                                           \
        VkResult vk_r_ = (expr);                                                                   \
        if (vk_r_ != VK_SUCCESS)                                                                   \
            return vk_fail(vk_r_, __FILE__, __LINE__, what);                                       \
    } while (0)

/* vk_device.c */
kiln_result vk_fail(VkResult vr, const char *file, int line, const char *what);
bool vk_keep(struct vk_device *d, enum kept_kind kind, void *host, void *h1, void *h2);
void vk_bindset_free_handles(struct vk_device *d, struct kb_bindset *s);
void vk_layout_free_handles(struct vk_device *d, struct kb_layout *l);
void vk_image_free_handles(struct vk_device *d, struct vk_image *m);
bool vk_unfinished_lost(struct vk_device *d);

/* vk_instance.c */
void vk_fill_caps(struct vk_device *d);
int vk_find_memory(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits, VkMemoryPropertyFlags want);
int vk_has_device_extension(VkPhysicalDevice p, const char *name);
kiln_result vk_make_instance(struct vk_device *d, bool validation, bool check);
/* The view of an image a binding asks for (kb_binding's arrayed, cube and
 * level), made on first use and kept with the image. */
kiln_result vk_image_view(struct vk_device *d, struct vk_image *m, const struct kb_binding *b, VkImageView *out);
kiln_result vk_pick_device(struct vk_device *d, const char *selector);
bool vk_probe_cache_keeps_code(struct vk_device *d);

/* vk_buffer.c */
void vk_staging_free(struct vk_device *d, struct staging *st);
kiln_result vk_staging_make(struct vk_device *d, uint64_t size, struct staging *st);
/* Begins a transfer with a staging buffer of staging_bytes (0: none),
 * whose commands wait for ticket after (0: none) and earlier transfers,
 * and for no other device work. */
kiln_result vk_xfer_begin(struct vk_device *d, uint64_t staging_bytes, uint64_t after, struct vk_xfer *x);
/* Ends and submits it, noted as `what`: x->ticket. On failure x is freed. */
kiln_result vk_xfer_submit(struct vk_device *d, struct vk_xfer *x, const char *what);
/* Leaves a submitted transfer to run: freed once done. */
void vk_xfer_let_run(struct vk_device *d, struct vk_xfer *x);
/* Frees a transfer (kept where a lost device may still run it). */
void vk_xfer_free(struct vk_device *d, struct vk_xfer *x);
/* Frees the transfers in flight that are done (all: waits for every one). */
void vk_xfer_reap(struct vk_device *d, bool all);
kiln_result vk_queue_submit(struct vk_device *d, VkCommandBuffer cb, const char *what, uint64_t after, uint64_t *ticket);
/* The same for n command buffers in one batch, in order (check mode's
 * recording: one per dispatch). */
kiln_result vk_queue_submit_n(struct vk_device *d, const VkCommandBuffer *cbs, uint32_t n, const char *what,
                              uint64_t after, uint64_t *ticket);
kiln_result vk_wait_value(struct vk_device *d, uint64_t value, uint64_t timeout_ns);
/* Zeroes a new device-local buffer on the device, left to run (its
 * last_use and last_write moved to the fill). */
kiln_result vk_buffer_zero(struct vk_device *d, struct vk_buffer *b);
kiln_result vk_buffer_create(struct kb_device *dev, uint64_t size, uint32_t usage, struct kb_buffer **out);
uint64_t vk_buffer_address(struct kb_device *dev, struct kb_buffer *buf);
void vk_buffer_destroy(struct kb_device *dev, struct kb_buffer *buf);
kiln_result vk_buffer_write(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, const void *data,
                                   uint64_t size);
kiln_result vk_host_import(struct kb_device *dev, void *p, uint64_t size, struct kb_host **out);
void vk_host_release(struct kb_device *dev, struct kb_host *h);
kiln_result vk_buffer_write_host(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *h,
                                 uint64_t src_off, uint64_t size, const struct kb_wait *w);
kiln_result vk_buffer_read_host(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *h,
                                uint64_t dst_off, uint64_t size, const struct kb_wait *w);
kiln_result vk_buffer_read(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, void *data,
                                  uint64_t size, const struct kb_wait *w);

/* vk_pipeline.c */
VkFormat vk_format(kiln_format f);
kiln_result vk_layout_create(struct kb_device *dev, const kiln_program_interface *iface, struct kb_layout **out);
void vk_layout_destroy(struct kb_device *dev, struct kb_layout *l);
kiln_result vk_pipeline_create(struct kb_device *dev, struct kb_layout *layout, const uint32_t *spirv,
                                      size_t words, const struct kb_spec *spec, uint32_t spec_count,
                                      struct kb_cache *cache, bool cache_only, struct kb_pipeline **out);
void vk_pipeline_destroy(struct kb_device *dev, struct kb_pipeline *p);
kiln_result vk_cache_create(struct kb_device *dev, const void *data, size_t len, struct kb_cache **out);
kiln_result vk_cache_data(struct kb_device *dev, struct kb_cache *c, void **data, size_t *len);
void vk_cache_destroy(struct kb_device *dev, struct kb_cache *c);
kiln_result vk_cache_merge(struct kb_device *dev, struct kb_cache *dst, struct kb_cache *const *srcs, uint32_t n);
kiln_result vk_bindset_create(struct kb_device *dev, struct kb_layout *layout, const struct kb_binding *b,
                                     uint32_t n, struct kb_bindset **out);
void vk_bindset_destroy(struct kb_device *dev, struct kb_bindset *s);

/* vk_image.c */
kiln_result vk_sampler_for(struct vk_device *d, kiln_sampler_desc sd, VkSampler *out);
kiln_result vk_image_create(struct kb_device *dev, const struct kb_image *in, struct kb_image **out);
void vk_image_destroy(struct kb_device *dev, struct kb_image *img);
kiln_result vk_image_write(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                           const void *data);
kiln_result vk_image_read(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part, void *data,
                          const struct kb_wait *w);
uint32_t vk_image_usage(struct kb_device *dev, kiln_format format, uint32_t dims, bool *linear);

/* vk_cmd.c */
kiln_result vk_cmd_create(struct kb_device *dev, struct kb_cmd **out);
void vk_cmd_destroy(struct kb_device *dev, struct kb_cmd *c);
kiln_result vk_cmd_times(struct kb_device *dev, struct kb_cmd *c, uint64_t *ns, uint32_t cap, uint32_t *count);
kiln_result vk_cmd_record(struct kb_device *dev, struct kb_cmd *c, const struct kb_step *steps, uint32_t n);
/* Check mode (vk_check.c): a recording's dispatches noted; a command
 * buffer forgotten (before it is freed); a validation message that is an
 * out-of-bounds report turned into a line naming the node and binding
 * (true; counted), else false. */
void vk_check_note(struct vk_device *d, struct kb_cmd *c, const struct kb_step *steps, uint32_t n);
void vk_check_forget(struct vk_device *d, struct kb_cmd *c);
bool vk_check_report(struct vk_device *d, const char *msg);
kiln_result vk_submit(struct kb_device *dev, struct kb_cmd *c, uint64_t *ticket);
uint64_t vk_ticket_done(struct kb_device *dev);
kiln_result vk_ticket_wait(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns);


#endif
