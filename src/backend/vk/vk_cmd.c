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

kiln_result vk_cmd_record(struct kb_device *dev, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
{
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
    const VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    barrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
    VkPipeline bound = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n; i++) {
        const struct kb_step *s = &steps[i];
        if (s->kind == KB_STEP_BARRIER) {
            barrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
            continue;
        }
        if (s->pipeline->pipe != bound) {
            vkCmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->pipeline->pipe);
            bound = s->pipeline->pipe;
        }
        if (s->bindset->set_count)   /* every set up to the program's last, the empty ones too */
            vkCmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, s->layout->layout, 0,
                                    s->bindset->set_count, s->bindset->sets, 0, NULL);
        if (s->layout->own_push) {
            if (s->layout->push_bytes)   /* the program's own block: the node's words */
                vkCmdPushConstants(c->cb, s->layout->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, s->layout->push_bytes,
                                   s->params);
        } else {
            uint32_t push[KILN_PUSH_BYTES / 4];
            memcpy(push, s->params, KILN_PARAM_WORDS * sizeof s->params[0]);
            memcpy(push + KILN_PARAM_WORDS, s->lens, sizeof s->lens);
            vkCmdPushConstants(c->cb, s->layout->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, push);
        }
        bool time_it = s->timed && timed_at < timed;
        if (time_it)
            vkCmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, c->pool, 2 * timed_at);
        vkCmdDispatch(c->cb, s->groups[0], s->groups[1], s->groups[2]);
        if (time_it) {
            vkCmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, c->pool, 2 * timed_at + 1);
            timed_at++;
        }
    }
    barrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    VK_CHECK(vkEndCommandBuffer(c->cb), "vkEndCommandBuffer");
    return KILN_OK;
}

kiln_result vk_submit(struct kb_device *dev, struct kb_cmd *c, uint64_t *ticket)
{
    return vk_queue_submit(vkd(dev), c->cb, NULL, 0, ticket);
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
