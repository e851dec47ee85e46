/* SPDX-License-Identifier: MIT */
/*
 * vk_buffer.c: the Vulkan backend's buffers, staging copies, queue submits and timeline waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "vk_private.h"

/* ---- buffers ------------------------------------------------------------------- */


uint64_t vk_buffer_address(struct kb_device *dev, struct kb_buffer *buf)
{
    VkBufferDeviceAddressInfo ai = {.sType = VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO,
                                    .buffer = ((struct vk_buffer *)buf)->buf};
    return vkGetBufferDeviceAddress(vkd(dev)->device, &ai);
}

kiln_result vk_buffer_create(struct kb_device *dev, uint64_t size, uint32_t usage, struct kb_buffer **out)
{
    struct vk_device *d = vkd(dev);
    /* The size is rounded up to 4 below: it must not wrap (the context
     * refuses sizes over caps.max_buffer_size before this; defensive). */
    if (!size || size > dev->caps.max_buffer_size)
        return KILN_RAISE(KILN_ERR_LIMIT, "a buffer of %llu bytes; the device allows 1 to %llu (max_buffer_size)",
                          (unsigned long long)size, (unsigned long long)dev->caps.max_buffer_size);
    struct vk_buffer *b = mem_calloc(1, sizeof *b);
    if (!b)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a %llu-byte buffer's object",
                          (unsigned long long)size);
    b->base.size = size;
    b->base.usage = usage;
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        /* A multiple of 4, so vkCmdFillBuffer's VK_WHOLE_SIZE reaches the
         * last byte ("the nearest smaller multiple [of 4] is used"). */
        .size = (size + 3) & ~(uint64_t)3,
        /* Texel buffers ride on the usage (kiln.h, kiln_buffer_usage): a
         * storage buffer is also a storage and a uniform texel buffer, a
         * uniform buffer also a uniform texel buffer. */
        .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 ((usage & KILN_BUFFER_STORAGE) ? VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                                      VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT |
                                                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
                                                : 0) |
                 ((usage & KILN_BUFFER_UNIFORM)
                      ? VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT
                      : 0) |
                 ((usage & KILN_BUFFER_ADDRESS) ? VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT : 0),
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult vr = vkCreateBuffer(d->device, &bci, NULL, &b->buf);
    if (vr != VK_SUCCESS) {
        free(b);
        return vk_fail(vr, __FILE__, __LINE__, "vkCreateBuffer");
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, b->buf, &req);
    VkMemoryPropertyFlags want = d->unified ? (VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                               VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                                            : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    int type = vk_find_memory(&d->memprops, req.memoryTypeBits, want);
    if (type < 0) {
        vkDestroyBuffer(d->device, b->buf, NULL);
        free(b);
        return KILN_RAISE(KILN_ERR_DEVICE, "no memory type fits a buffer of %llu bytes", (unsigned long long)size);
    }
    VkMemoryAllocateFlagsInfo flags = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
                                       .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT};
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = (usage & KILN_BUFFER_ADDRESS) ? &flags : NULL,
                                .allocationSize = req.size,
                                .memoryTypeIndex = (uint32_t)type};
    vr = vkAllocateMemory(d->device, &mai, NULL, &b->mem);
    if (vr == VK_SUCCESS)
        vr = vkBindBufferMemory(d->device, b->buf, b->mem, 0);
    if (vr == VK_SUCCESS && d->unified)
        vr = vkMapMemory(d->device, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
    if (vr != VK_SUCCESS) {
        if (b->mem)
            vkFreeMemory(d->device, b->mem, NULL);
        vkDestroyBuffer(d->device, b->buf, NULL);
        free(b);
        return vk_fail(vr, __FILE__, __LINE__, "allocating buffer memory");
    }
    /* New buffers read as zeros (kiln.h promises it; Vulkan does not). */
    kiln_result r = KILN_OK;
    b->base.mapped = b->map != NULL;
    if (b->map)
        memset(b->map, 0, size);
    else
        r = vk_buffer_zero(d, b);
    if (r < 0) {
        vk_buffer_destroy(dev, &b->base);   /* kept, not destroyed, if the fill may still run */
        return r;
    }
    *out = &b->base;
    return KILN_OK;
}

void vk_buffer_destroy(struct kb_device *dev, struct kb_buffer *buf)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    if (vk_keep(d, KEPT_BUFFER, b, (void *)b->buf, (void *)b->mem))
        return;
    vkDestroyBuffer(d->device, b->buf, NULL);
    vkFreeMemory(d->device, b->mem, NULL);
    free(b);
}

/* The raw wait (backend_ops.ticket_wait): kb_ticket_wait bounds it. */
kiln_result vk_wait_value(struct vk_device *d, uint64_t value, uint64_t timeout_ns)
{
    if (d->fault_lost)
        return vk_fail(VK_ERROR_DEVICE_LOST, __FILE__, __LINE__, "vkWaitSemaphores (vkb_fault)");
    if (d->hang_from && value >= d->hang_from) {
        /* Hung as kiln sees it: the earlier work runs, this never ends. */
        if (d->hang_from > 1)
            KILN_TRY(vk_wait_value(d, d->hang_from - 1, timeout_ns));
        uint64_t ns = KILN_MIN(timeout_ns, 5000000000ull);
        struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        return KILN_RAISE(KILN_ERR_TIMEOUT, "ticket %llu hangs (vkb_fault)", (unsigned long long)value);
    }
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &d->timeline,
                              .pValues = &value};
    VkResult vr = vkWaitSemaphores(d->device, &wi, timeout_ns);
    if (vr == VK_TIMEOUT)
        return KILN_RAISE(KILN_ERR_TIMEOUT, "ticket %llu not done within %llu ns", (unsigned long long)value,
                          (unsigned long long)timeout_ns);
    VK_CHECK(vr, "vkWaitSemaphores");
    return KILN_OK;
}

/* Submits one command buffer signalling the next ticket, returned in
 * *ticket; notes it as running `what` unless NULL (kb_submit notes it).
 * after, when nonzero, is a ticket whose work the buffer's transfer
 * commands wait for (a wait on the timeline at the transfer stage), and
 * nothing else before it: a transfer runs beside earlier dispatches that
 * do not touch its bytes. A signal still covers every command submitted
 * before it, so ticket N done still means every ticket up to N done. */
kiln_result vk_queue_submit(struct vk_device *d, VkCommandBuffer cb, const char *what, uint64_t after, uint64_t *ticket)
{
    return vk_queue_submit_n(d, &cb, 1, what, after, ticket);
}

kiln_result vk_queue_submit_n(struct vk_device *d, const VkCommandBuffer *cbs, uint32_t n, const char *what,
                              uint64_t after, uint64_t *ticket)
{
    if (d->fault_lost)
        return vk_fail(VK_ERROR_DEVICE_LOST, __FILE__, __LINE__, "vkQueueSubmit (vkb_fault)");
    uint64_t value = d->base.submitted + 1;
    VkPipelineStageFlags stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .waitSemaphoreValueCount = after ? 1 : 0,
                                        .pWaitSemaphoreValues = &after,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .waitSemaphoreCount = after ? 1 : 0,
                       .pWaitSemaphores = &d->timeline,
                       .pWaitDstStageMask = &stage,
                       .commandBufferCount = n,
                       .pCommandBuffers = cbs,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &d->timeline};
    VK_CHECK(vkQueueSubmit(d->queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    d->base.submitted = value;
    *ticket = value;
    if (what)
        kb_note_submit(&d->base, value, what);
    return KILN_OK;
}

/* Frees a staging buffer, or keeps it where a transfer that did not finish
 * on a lost device may still use it. */
void vk_staging_free(struct vk_device *d, struct staging *st)
{
    if (vk_keep(d, KEPT_STAGING, NULL, (void *)st->buf, (void *)st->mem))
        return;
    if (st->mem)
        vkFreeMemory(d->device, st->mem, NULL);
    vkDestroyBuffer(d->device, st->buf, NULL);
}

kiln_result vk_staging_make(struct vk_device *d, uint64_t size, struct staging *st)
{
    *st = (struct staging){0};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VK_CHECK(vkCreateBuffer(d->device, &bci, NULL, &st->buf), "vkCreateBuffer (staging)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, st->buf, &req);
    int type = vk_find_memory(&d->memprops, req.memoryTypeBits,
                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    VkResult vr = VK_ERROR_OUT_OF_DEVICE_MEMORY;
    if (type >= 0) {
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = req.size,
                                    .memoryTypeIndex = (uint32_t)type};
        vr = vkAllocateMemory(d->device, &mai, NULL, &st->mem);
        if (vr == VK_SUCCESS)
            vr = vkBindBufferMemory(d->device, st->buf, st->mem, 0);
        if (vr == VK_SUCCESS)
            vr = vkMapMemory(d->device, st->mem, 0, VK_WHOLE_SIZE, 0, &st->map);
    }
    if (vr != VK_SUCCESS) {
        vk_staging_free(d, st);
        return vk_fail(vr, __FILE__, __LINE__, "allocating staging memory");
    }
    return KILN_OK;
}

/* ---- transfers ----------------------------------------------------------------- */

#define XFER_STAGING_MAX (256ull << 20)   /* staging bytes of transfers left running, at most */
#define XFER_CHUNK (64ull << 20)          /* a staged copy goes in chunks of this, each its own transfer */

void vk_xfer_free(struct vk_device *d, struct vk_xfer *x)
{
    bool keep = x->st.buf && !vk_unfinished_lost(d) && !atomic_load(&d->base.abandon) &&
                d->spare_count < sizeof d->spares / sizeof d->spares[0] &&
                d->spare_bytes + x->bytes <= XFER_STAGING_MAX;
    if (keep) {
        d->spares[d->spare_count++] = (struct vk_spare){x->st, x->bytes};
        d->spare_bytes += x->bytes;
    } else if (x->st.buf) {
        vk_staging_free(d, &x->st);
    }
    if (x->cb && !vk_keep(d, KEPT_CMD, NULL, (void *)x->cb, NULL))
        vkFreeCommandBuffers(d->device, d->cmd_pool, 1, &x->cb);
    *x = (struct vk_xfer){0};
}

void vk_xfer_reap(struct vk_device *d, bool all)
{
    if (all && d->xfer_count)
        (void)kb_ticket_wait(&d->base, d->xfers[d->xfer_count - 1].ticket, UINT64_MAX);
    uint64_t done = kb_ticket_done(&d->base);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < d->xfer_count; i++) {
        if (d->xfers[i].ticket <= done || all) {
            d->xfer_bytes -= d->xfers[i].bytes;
            vk_xfer_free(d, &d->xfers[i]);
        } else {
            d->xfers[kept++] = d->xfers[i];
        }
    }
    d->xfer_count = kept;
    for (uint32_t i = 0; all && i < d->spare_count; i++)
        vk_staging_free(d, &d->spares[i].st);
    if (all)
        d->spare_count = 0, d->spare_bytes = 0;
}

kiln_result vk_xfer_begin(struct vk_device *d, uint64_t staging_bytes, uint64_t after, struct vk_xfer *x)
{
    *x = (struct vk_xfer){.after = after};
    vk_xfer_reap(d, false);
    /* Staging left running is bounded: past it, the oldest is waited for. */
    while (staging_bytes && d->xfer_count && d->xfer_bytes + staging_bytes > XFER_STAGING_MAX) {
        KILN_TRY(kb_ticket_wait(&d->base, d->xfers[0].ticket, UINT64_MAX));
        vk_xfer_reap(d, false);
    }
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = d->cmd_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VK_CHECK(vkAllocateCommandBuffers(d->device, &cai, &x->cb), "vkAllocateCommandBuffers (transfer)");
    for (uint32_t i = 0; staging_bytes && i < d->spare_count; i++) {
        struct vk_spare *sp = &d->spares[i];
        if (sp->bytes >= staging_bytes && sp->bytes / 2 <= staging_bytes) {   /* fits, and not twice too big */
            x->st = sp->st;
            x->bytes = sp->bytes;
            d->spare_bytes -= sp->bytes;
            *sp = d->spares[--d->spare_count];
            staging_bytes = 0;
        }
    }
    if (staging_bytes) {
        kiln_result r = vk_staging_make(d, staging_bytes, &x->st);
        if (r < 0) {
            vk_xfer_free(d, x);
            return r;
        }
        x->bytes = staging_bytes;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(x->cb, &bi);
    /* Only earlier transfers come before it here, and the ticket `after`
     * through the timeline (vk_queue_submit): dispatches that do not touch
     * its bytes run on beside it. */
    VkMemoryBarrier before = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(x->cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL,
                         0, NULL);
    return KILN_OK;
}

kiln_result vk_xfer_submit(struct vk_device *d, struct vk_xfer *x, const char *what)
{
    VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
                                              VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(x->cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0,
                         NULL);
    VkResult vr = vkEndCommandBuffer(x->cb);
    kiln_result r = vr == VK_SUCCESS ? vk_queue_submit(d, x->cb, what, x->after, &x->ticket)
                                     : vk_fail(vr, __FILE__, __LINE__, "vkEndCommandBuffer (transfer)");
    if (r < 0) {
        vk_xfer_free(d, x);
        return kb_seen(&d->base, r);
    }
    return KILN_OK;
}

void vk_xfer_let_run(struct vk_device *d, struct vk_xfer *x)
{
    if (!vec_reserve((void **)&d->xfers, &d->xfer_cap, d->xfer_count + 1, sizeof *d->xfers)) {
        (void)kb_ticket_wait(&d->base, x->ticket, UINT64_MAX);   /* no room to leave it: wait, then free */
        vk_xfer_free(d, x);
        return;
    }
    d->xfers[d->xfer_count++] = *x;
    d->xfer_bytes += x->bytes;
    *x = (struct vk_xfer){0};
}

/* Fills a new buffer with zeros on the device, left to run. */
kiln_result vk_buffer_zero(struct vk_device *d, struct vk_buffer *b)
{
    struct vk_xfer x;
    KILN_TRY(vk_xfer_begin(d, 0, 0, &x));   /* a new buffer: nothing used it */
    vkCmdFillBuffer(x.cb, b->buf, 0, VK_WHOLE_SIZE, 0);
    KILN_TRY(vk_xfer_submit(d, &x, "a transfer (a new buffer's zero fill)"));
    b->base.last_use = b->base.last_write = x.ticket;
    vk_xfer_let_run(d, &x);
    return KILN_OK;
}

kiln_result vk_buffer_write(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, const void *data,
                                   uint64_t size)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    if (b->map) {
        memcpy((char *)b->map + off, data, size);
        return KILN_OK;
    }
    /* Staged: each chunk copied into staging of its own and left to run. */
    for (uint64_t done = 0; done < size; done += XFER_CHUNK) {
        uint64_t n = KILN_MIN(XFER_CHUNK, size - done);
        struct vk_xfer x;
        KILN_TRY(vk_xfer_begin(d, n, buf->last_use, &x));   /* after what reads or writes it */
        memcpy(x.st.map, (const char *)data + done, n);
        VkBufferCopy region = {.srcOffset = 0, .dstOffset = off + done, .size = n};
        vkCmdCopyBuffer(x.cb, x.st.buf, b->buf, 1, &region);
        KILN_TRY(vk_xfer_submit(d, &x, "a transfer (a buffer upload)"));
        buf->last_use = buf->last_write = x.ticket;
        vk_xfer_let_run(d, &x);
    }
    return KILN_OK;
}

kiln_result vk_buffer_read(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, void *data,
                                  uint64_t size, const struct kb_wait *w)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    if (b->map) {
        memcpy(data, (char *)b->map + off, size);
        return KILN_OK;
    }
    /* Staged: chunks of XFER_CHUNK, each a transfer into staging of its
     * own, in batches of up to XFER_STAGING_MAX bytes; a batch is
     * submitted whole, then waited for once. The last batch is waited for
     * through w (the caller's lock let go); earlier ones holding it, since
     * the buffer must outlive every later chunk's copy. */
    enum { BATCH = (int)(XFER_STAGING_MAX / XFER_CHUNK) };
    for (uint64_t done = 0; done < size;) {
        struct vk_xfer x[BATCH];
        uint64_t at[BATCH], len[BATCH];
        int n = 0;
        kiln_result r = KILN_OK;
        for (; n < BATCH && done < size; n++, done += len[n - 1]) {
            at[n] = done;
            len[n] = KILN_MIN(XFER_CHUNK, size - done);
            r = vk_xfer_begin(d, len[n], buf->last_write, &x[n]);   /* after what writes it */
            if (r == KILN_OK) {
                VkBufferCopy region = {.srcOffset = off + done, .dstOffset = 0, .size = len[n]};
                vkCmdCopyBuffer(x[n].cb, b->buf, x[n].st.buf, 1, &region);
                r = vk_xfer_submit(d, &x[n], "a transfer (a buffer readback)");
            }
            if (r < 0)
                break;   /* x[n] is freed; those before are waited for below */
            buf->last_use = x[n].ticket;   /* a destroy waits for it */
        }
        if (n && r == KILN_OK) {
            const struct vk_xfer *last = &x[n - 1];
            r = done >= size && w ? w->fn(w->ud, last->ticket) : kb_ticket_wait(&d->base, last->ticket, UINT64_MAX);
        } else if (n) {
            (void)kb_ticket_wait(&d->base, x[n - 1].ticket, UINT64_MAX);
        }
        for (int i = 0; i < n; i++) {
            if (r == KILN_OK)
                memcpy((char *)data + at[i], x[i].st.map, len[i]);
            vk_xfer_free(d, &x[i]);
        }
        KILN_TRY(r);
    }
    return KILN_OK;
}

/* ---- host memory in place -------------------------------------------------------------- */

kiln_result vk_host_import(struct kb_device *dev, void *p, uint64_t size, struct kb_host **out)
{
    struct vk_device *d = vkd(dev);
    *out = NULL;
    if (!d->host_align || (uintptr_t)p % d->host_align || size % d->host_align || !size)
        return KILN_RAISE(KILN_ERR_DEVICE, "host import: not offered, or %llu bytes at %p not aligned to %llu",
                          (unsigned long long)size, p, (unsigned long long)d->host_align);
    const VkExternalMemoryHandleTypeFlagBits kind = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
    VkMemoryHostPointerPropertiesEXT props = {.sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
    VkResult vr = d->host_props(d->device, kind, p, &props);
    if (vr != VK_SUCCESS || !props.memoryTypeBits)
        return KILN_RAISE(KILN_ERR_DEVICE, "host import: the driver takes no memory at %p (%d)", p, (int)vr);
    struct vk_host *h = mem_calloc(1, sizeof *h);
    if (!h)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a host import");
    VkExternalMemoryBufferCreateInfo ext = {.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes = kind};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = &ext,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    vr = vkCreateBuffer(d->device, &bci, NULL, &h->buf);
    VkMemoryRequirements req = {0};
    if (vr == VK_SUCCESS)
        vkGetBufferMemoryRequirements(d->device, h->buf, &req);
    int type = vk_find_memory(&d->memprops, req.memoryTypeBits & props.memoryTypeBits, 0);
    if (vr == VK_SUCCESS && (type < 0 || req.size > size))
        vr = VK_ERROR_FORMAT_NOT_SUPPORTED;
    if (vr == VK_SUCCESS) {
        VkImportMemoryHostPointerInfoEXT imp = {.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                                .handleType = kind,
                                                .pHostPointer = p};
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .pNext = &imp,
                                    .allocationSize = size,
                                    .memoryTypeIndex = (uint32_t)type};
        vr = vkAllocateMemory(d->device, &mai, NULL, &h->mem);
    }
    if (vr == VK_SUCCESS)
        vr = vkBindBufferMemory(d->device, h->buf, h->mem, 0);
    if (vr != VK_SUCCESS) {
        vk_host_release(dev, (struct kb_host *)h);
        return vk_fail(vr, __FILE__, __LINE__, "host import (vkAllocateMemory of a host pointer)");
    }
    h->size = size;
    *out = (struct kb_host *)h;
    return KILN_OK;
}

void vk_host_release(struct kb_device *dev, struct kb_host *kh)
{
    struct vk_device *d = vkd(dev);
    struct vk_host *h = (struct vk_host *)kh;
    if (!h)
        return;
    if (h->buf)
        vkDestroyBuffer(d->device, h->buf, NULL);
    if (h->mem)
        vkFreeMemory(d->device, h->mem, NULL);
    free(h);
}

/* One device copy between buf at off and h at host_off, in the direction
 * `in` says (true: into buf), waited for through w. */
static kiln_result host_copy(struct vk_device *d, struct kb_buffer *buf, uint64_t off, struct vk_host *h,
                             uint64_t host_off, uint64_t size, bool in, const struct kb_wait *w)
{
    struct vk_buffer *b = (struct vk_buffer *)buf;
    if (host_off > h->size || size > h->size - host_off)
        return KILN_RAISE(KILN_ERR_INVALID, "host copy: %llu bytes at %llu of %llu", (unsigned long long)size,
                          (unsigned long long)host_off, (unsigned long long)h->size);
    struct vk_xfer x;
    KILN_TRY(vk_xfer_begin(d, 0, in ? buf->last_use : buf->last_write, &x));
    VkBufferCopy region = {.srcOffset = in ? host_off : off, .dstOffset = in ? off : host_off, .size = size};
    vkCmdCopyBuffer(x.cb, in ? h->buf : b->buf, in ? b->buf : h->buf, 1, &region);
    KILN_TRY(vk_xfer_submit(d, &x, in ? "a transfer (an upload from a client's segment)"
                                      : "a transfer (a readback into a client's segment)"));
    buf->last_use = x.ticket;
    if (in)
        buf->last_write = x.ticket;
    kiln_result r = w ? w->fn(w->ud, x.ticket) : kb_ticket_wait(&d->base, x.ticket, UINT64_MAX);
    if (r < 0) {
        vk_xfer_let_run(d, &x);   /* the segment may still be in use: the caller keeps it until the device is done */
        return r;
    }
    vk_xfer_free(d, &x);
    return KILN_OK;
}

kiln_result vk_buffer_write_host(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *kh,
                                 uint64_t src_off, uint64_t size, const struct kb_wait *w)
{
    return host_copy(vkd(dev), buf, off, (struct vk_host *)kh, src_off, size, true, w);
}

kiln_result vk_buffer_read_host(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, struct kb_host *kh,
                                uint64_t dst_off, uint64_t size, const struct kb_wait *w)
{
    return host_copy(vkd(dev), buf, off, (struct vk_host *)kh, dst_off, size, false, w);
}
