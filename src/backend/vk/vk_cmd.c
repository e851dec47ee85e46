/* SPDX-License-Identifier: MIT */
/*
 * vk_cmd.c: the Vulkan backend's command buffers: recording, timestamps, submits, tickets.
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

/* ---- commands and submits --------------------------------------------------------- */

kiln_result vk_cmd_create(struct kb_device *dev, struct kb_cmd **out)
{
    struct vk_device *d = vkd(dev);
    struct kb_cmd *c = mem_calloc(1, sizeof *c);
    if (!c)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a command buffer's object");
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkResult vr = vkAllocateCommandBuffers(d->device, &ai, &c->cb);
    if (vr != VK_SUCCESS) {
        free(c);
        return vk_fail(vr, __FILE__, __LINE__, "vkAllocateCommandBuffers");
    }
    *out = c;
    return KILN_OK;
}

void vk_cmd_destroy(struct kb_device *dev, struct kb_cmd *c)
{
    struct vk_device *d = vkd(dev);
    if (c->check_listed)
        vk_check_forget(d, c);
    if (c->part_cap) {   /* check mode's parts: freed now (check mode waits for every submit) */
        vkFreeCommandBuffers(d->device, d->cmd_pool, c->part_cap, c->parts);
        free(c->parts);
        c->parts = NULL;
        c->part_cap = c->part_count = 0;
    }
    if (vk_keep(d, KEPT_CMD, c, (void *)c->cb, (void *)c->pool))
        return;
    vkFreeCommandBuffers(d->device, d->cmd_pool, 1, &c->cb);
    if (c->pool)
        vkDestroyQueryPool(d->device, c->pool, NULL);
    free(c);
}

/* A query pool of at least n timestamps for c (not in flight). */
static kiln_result cmd_pool(struct vk_device *d, struct kb_cmd *c, uint32_t n)
{
    if (c->pool_size >= n)
        return KILN_OK;
    if (c->pool)
        vkDestroyQueryPool(d->device, c->pool, NULL);
    c->pool = VK_NULL_HANDLE;
    c->pool_size = 0;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = n};
    VK_CHECK(vkCreateQueryPool(d->device, &qi, NULL, &c->pool), "vkCreateQueryPool");
    c->pool_size = n;
    return KILN_OK;
}

kiln_result vk_cmd_times(struct kb_device *dev, struct kb_cmd *c, uint64_t *ns, uint32_t cap, uint32_t *count)
{
    struct vk_device *d = vkd(dev);
    *count = 0;
    if (!c->timed || !c->pool)
        return KILN_OK;
    uint64_t raw[2 * 64];
    uint32_t n = KILN_MIN(c->timed, KILN_MIN(cap, 64u));
    VkResult vr = vkGetQueryPoolResults(d->device, c->pool, 0, 2 * n, sizeof raw, raw, sizeof raw[0],
                                        VK_QUERY_RESULT_64_BIT);
    if (vr == VK_NOT_READY)
        return KILN_ERR_PENDING;
    VK_CHECK(vr, "vkGetQueryPoolResults");
    for (uint32_t i = 0; i < n; i++) {
        uint64_t ticks = ((raw[2 * i + 1] & d->timestamp_mask) - (raw[2 * i] & d->timestamp_mask)) & d->timestamp_mask;
        ns[i] = (uint64_t)((double)ticks * d->timestamp_period);
    }
    *count = n;
    return KILN_OK;
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                    VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = src_access,
                          .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* One dispatch step into cb: its pipeline (unless *bound already), its
 * sets, its words, the dispatch, timed into pool's queries 2*t and
 * 2*t+1 where t >= 0. */
static void record_dispatch(VkCommandBuffer cb, const struct kb_step *s, VkPipeline *bound, VkQueryPool pool, int t)
{
    if (s->pipeline->pipe != *bound) {
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline->pipe);
        *bound = s->pipeline->pipe;
    }
    if (s->bindset->set_count)   /* every set up to the program's last, the empty ones too */
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout->layout, 0, s->bindset->set_count,
                                s->bindset->sets, 0, NULL);
    if (s->layout->own_push) {
        if (s->layout->push_bytes)   /* the program's own block: the node's words */
            vkCmdPushConstants(cb, s->layout->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, s->layout->push_bytes,
                               s->params);
    } else {
        uint32_t push[KILN_PUSH_BYTES / 4];
        memcpy(push, s->params, KILN_PARAM_WORDS * sizeof s->params[0]);
        memcpy(push + KILN_PARAM_WORDS, s->lens, sizeof s->lens);
        vkCmdPushConstants(cb, s->layout->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
    }
    if (t >= 0)
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 2 * (uint32_t)t);
    vkCmdDispatch(cb, s->groups[0], s->groups[1], s->groups[2]);
    if (t >= 0)
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, pool, 2 * (uint32_t)t + 1);
}

static const VkAccessFlags SHADER_RW = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;

/* A recording's opening barrier (transfers' and earlier submits' writes
 * before its shaders) and its closing one (its writes before the host's
 * and transfers' reads). */
static void open_barrier(VkCommandBuffer cb)
{
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, SHADER_RW);
}

static void close_barrier(VkCommandBuffer cb)
{
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
}

/* Check mode: each dispatch in a command buffer of its own (c->parts),
 * each opened with a full compute barrier (the scheme's barriers are
 * kept, and more: check mode is slow anyway), the last closed. Barriers
 * order across command buffers of one batch as within one. */
static kiln_result record_parts(struct vk_device *d, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
{
    uint32_t dispatches = 0;
    for (uint32_t i = 0; i < n; i++)
        dispatches += steps[i].kind == KB_STEP_DISPATCH;
    if (dispatches > c->part_cap) {
        VkCommandBuffer *grown = realloc(c->parts, dispatches * sizeof *grown);
        if (!grown)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %u command buffers", dispatches);
        c->parts = grown;
        VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = d->cmd_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                          .commandBufferCount = dispatches - c->part_cap};
        VK_CHECK(vkAllocateCommandBuffers(d->device, &ai, c->parts + c->part_cap), "vkAllocateCommandBuffers");
        c->part_cap = dispatches;
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (steps[i].kind != KB_STEP_DISPATCH)
            continue;
        VkCommandBuffer cb = c->parts[k++];
        VK_CHECK(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
        open_barrier(cb);
        VkPipeline bound = VK_NULL_HANDLE;
        record_dispatch(cb, &steps[i], &bound, VK_NULL_HANDLE, -1);
        if (k == dispatches)
            close_barrier(cb);
        VK_CHECK(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    }
    c->part_count = k;
    c->timed = 0;
    vk_check_note(d, c, steps, n);
    return KILN_OK;
}

kiln_result vk_cmd_record(struct kb_device *dev, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
{
    if (dev->caps.check)
        return record_parts(vkd(dev), c, steps, n);
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    uint32_t timed = 0;
    for (uint32_t i = 0; i < n && dev->timestamps; i++)
        timed += steps[i].kind == KB_STEP_DISPATCH && steps[i].timed;
    timed = KILN_MIN(timed, 64u);
    if (timed)
        KILN_TRY(cmd_pool(vkd(dev), c, 2 * timed));
    c->timed = timed;
    VK_CHECK(vkBeginCommandBuffer(c->cb, &bi), "vkBeginCommandBuffer");
    if (timed)
        vkCmdResetQueryPool(c->cb, c->pool, 0, 2 * timed);
    uint32_t timed_at = 0;
    open_barrier(c->cb);
    VkPipeline bound = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n; i++) {
        const struct kb_step *s = &steps[i];
        if (s->kind == KB_STEP_BARRIER) {
            barrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, SHADER_RW);
            continue;
        }
        bool time_it = s->timed && timed_at < timed;
        record_dispatch(c->cb, s, &bound, c->pool, time_it ? (int)timed_at++ : -1);
    }
    close_barrier(c->cb);
    VK_CHECK(vkEndCommandBuffer(c->cb), "vkEndCommandBuffer");
    return KILN_OK;
}

kiln_result vk_submit(struct kb_device *dev, struct kb_cmd *c, uint64_t *ticket)
{
    struct vk_device *d = vkd(dev);
    kiln_result r = dev->caps.check ? vk_queue_submit_n(d, c->parts, c->part_count, NULL, 0, ticket)
                                    : vk_queue_submit(d, c->cb, NULL, 0, ticket);
    /* Check mode: the validation layer reads what its instrumented shaders
     * found when the queue goes idle, so the submit waits for its work
     * (bounded by the runaway bound: one that runs past it is left to the
     * ticket's wait, which names it) and then for the idle queue, whose
     * reports name this recording's nodes (vk_check.c). The context lock
     * is held: no other submit is on the queue. */
    if (r == KILN_OK && dev->caps.check &&
        vk_wait_value(d, *ticket, dev->timeout_ns ? dev->timeout_ns : UINT64_MAX) == KILN_OK)
        vkQueueWaitIdle(d->queue);
    return r;
}

uint64_t vk_ticket_done(struct kb_device *dev)
{
    struct vk_device *d = vkd(dev);
    uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(d->device, d->timeline, &v) != VK_SUCCESS)
        return 0;
    if (d->hang_from && v >= d->hang_from)
        v = d->hang_from - 1;   /* vkb_fault: the hung submits never finish, as kiln sees them */
    return v;
}

kiln_result vk_ticket_wait(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns)
{
    return vk_wait_value(vkd(dev), ticket, timeout_ns);
}
