/* SPDX-License-Identifier: MIT */
/*
 * vk_image.c: the Vulkan backend's images and samplers.
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

/* ---- images and samplers ---------------------------------------------------------- */


static VkImageType image_type(uint32_t dims)
{
    return dims == 3 ? VK_IMAGE_TYPE_3D : dims == 2 ? VK_IMAGE_TYPE_2D : VK_IMAGE_TYPE_1D;
}

uint32_t vk_image_usage(struct kb_device *dev, kiln_format format, uint32_t dims, bool *linear)
{
    struct vk_device *d = vkd(dev);
    *linear = false;
    VkFormat vf = vk_format(format);
    if (vf == VK_FORMAT_UNDEFINED)
        return 0;
    VkFormatProperties fp = {0};
    vkGetPhysicalDeviceFormatProperties(d->phys, vf, &fp);
    VkFormatFeatureFlags f = fp.optimalTilingFeatures;
    if (!(f & VK_FORMAT_FEATURE_TRANSFER_SRC_BIT) || !(f & VK_FORMAT_FEATURE_TRANSFER_DST_BIT))
        return 0;   /* kiln uploads, reads back and clears every image */
    uint32_t usage = 0;
    VkImageUsageFlags want[2] = {VK_IMAGE_USAGE_STORAGE_BIT, VK_IMAGE_USAGE_SAMPLED_BIT};
    VkFormatFeatureFlags need[2] = {VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT, VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT};
    for (int i = 0; i < 2; i++) {
        VkImageFormatProperties ip;
        if ((f & need[i]) &&
            vkGetPhysicalDeviceImageFormatProperties(d->phys, vf, image_type(dims),
                                                     VK_IMAGE_TILING_OPTIMAL,
                                                     want[i] | VK_IMAGE_USAGE_TRANSFER_SRC_BIT |
                                                         VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                                                     0, &ip) == VK_SUCCESS)
            usage |= i ? KILN_IMAGE_SAMPLED : KILN_IMAGE_STORAGE;
    }
    *linear = (usage & KILN_IMAGE_SAMPLED) && (f & VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT);
    return usage;
}

/* A layout change of a whole image, ordered after src's accesses and
 * before dst's. */
static void image_barrier(VkCommandBuffer cb, VkImage image, VkImageLayout from, VkImageLayout to,
                          VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst,
                          VkAccessFlags dst_access)
{
    VkImageMemoryBarrier b = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
        .srcAccessMask = src_access,
        .dstAccessMask = dst_access,
        .oldLayout = from,
        .newLayout = to,
        .srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED,
        .image = image,
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, VK_REMAINING_MIP_LEVELS, 0, VK_REMAINING_ARRAY_LAYERS},
    };
    vkCmdPipelineBarrier(cb, src, dst, 0, 0, NULL, 0, NULL, 1, &b);
}

/* Shader and transfer work that may touch an image around a transfer. */
#define IMAGE_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define IMAGE_ACCESS                                                                               \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)

kiln_result vk_image_create(struct kb_device *dev, const struct kb_image *in, struct kb_image **out)
{
    struct vk_device *d = vkd(dev);
    struct vk_image *m = mem_calloc(1, sizeof *m);
    if (!m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for image '%s's object", in->label);
    m->base = *in;
    VkImageCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .flags = in->cube ? VK_IMAGE_CREATE_CUBE_COMPATIBLE_BIT : 0,
        .imageType = image_type(in->dims),
        .format = vk_format(in->format),
        .extent = {in->width, in->height, in->depth},
        .mipLevels = in->levels,
        .arrayLayers = in->layers,
        .samples = VK_SAMPLE_COUNT_1_BIT,
        .tiling = VK_IMAGE_TILING_OPTIMAL,
        .usage = VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT |
                 ((in->usage & KILN_IMAGE_STORAGE) ? VK_IMAGE_USAGE_STORAGE_BIT : 0) |
                 ((in->usage & KILN_IMAGE_SAMPLED) ? VK_IMAGE_USAGE_SAMPLED_BIT : 0),
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
        .initialLayout = VK_IMAGE_LAYOUT_UNDEFINED,
    };
    VkResult vr = vkCreateImage(d->device, &ici, NULL, &m->image);
    const char *what = "vkCreateImage";
    if (vr == VK_SUCCESS) {
        VkMemoryRequirements req;
        vkGetImageMemoryRequirements(d->device, m->image, &req);
        int type = vk_find_memory(&d->memprops, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = req.size,
                                    .memoryTypeIndex = (uint32_t)type};
        what = "allocating image memory";
        vr = type < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d->device, &mai, NULL, &m->mem);
    }
    if (vr == VK_SUCCESS)
        vr = vkBindImageMemory(d->device, m->image, m->mem, 0);
    if (vr != VK_SUCCESS) {
        vk_image_free_handles(d, m);
        free(m);
        return vk_fail(vr, __FILE__, __LINE__, what);
    }
    /* Texels zero (kiln.h promises it; Vulkan does not), then into its one
     * layout: the transfer's closing barrier makes the clear visible to
     * shaders. */
    struct vk_xfer x;
    kiln_result r = vk_xfer_begin(d, 0, 0, &x);   /* a new image: nothing used it */
    if (r == KILN_OK) {
        image_barrier(x.cb, m->image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                      VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                      VK_ACCESS_TRANSFER_WRITE_BIT);
        VkClearColorValue zero = {{0}};
        VkImageSubresourceRange all = {VK_IMAGE_ASPECT_COLOR_BIT, 0, VK_REMAINING_MIP_LEVELS, 0,
                                       VK_REMAINING_ARRAY_LAYERS};
        vkCmdClearColorImage(x.cb, m->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &zero, 1, &all);
        image_barrier(x.cb, m->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL,
                      VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, IMAGE_STAGES, IMAGE_ACCESS);
        r = vk_xfer_submit(d, &x, "a transfer (a new image's clear)");
    }
    if (r == KILN_OK) {   /* left to run: whatever uses the image next is ordered after it */
        m->base.last_use = m->base.last_write = x.ticket;
        vk_xfer_let_run(d, &x);
    }
    if (r < 0) {
        vk_image_destroy(dev, &m->base);   /* kept, not destroyed, if the clear may still run */
        return r;
    }
    *out = &m->base;
    return KILN_OK;
}

void vk_image_destroy(struct kb_device *dev, struct kb_image *img)
{
    struct vk_device *d = vkd(dev);
    struct vk_image *m = (struct vk_image *)img;
    if (vk_keep(d, KEPT_IMAGE, m, (void *)m->image, (void *)m->mem))
        return;
    vk_image_free_handles(d, m);
    free(m);
}

/* Copies every texel between an image and the host through a staging
 * buffer, with one transfer ordered after the submits that use the image
 * (an upload) or write it (a readback); the image
 * is in a transfer layout for the copy alone and back in GENERAL when the
 * transfer ends. An upload is left to run; a readback waited for through
 * w. */
static kiln_result image_copy(struct vk_device *d, struct vk_image *m, const struct kb_image_part *part, void *host,
                              bool upload, const struct kb_wait *w)
{
    uint64_t at, bytes;
    kb_image_part_span(&m->base, part, &at, &bytes);
    struct vk_xfer x;
    KILN_TRY(vk_xfer_begin(d, bytes, upload ? m->base.last_use : m->base.last_write, &x));
    if (upload)
        memcpy(x.st.map, host, (size_t)bytes);
    VkBufferImageCopy regions[16];   /* a level each: at most 16 (a side of at most 2^15 texels) */
    uint32_t n = part ? 1 : KILN_MIN(m->base.levels, 16u);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t side[3], l = part ? part->level : k;
        uint64_t off;
        kb_image_level(&m->base, l, side, &off);
        regions[k] = (VkBufferImageCopy){
            .bufferOffset = part ? 0 : off,
            .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, l, part ? part->layer : 0,
                                 part ? part->layers : m->base.layers},
            .imageExtent = {side[0], side[1], side[2]},
        };
    }
    VkImageLayout copy = upload ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    /* Chained to the wait for the image's own last use (vk_queue_submit)
     * through the transfer stage, not behind every earlier dispatch. */
    image_barrier(x.cb, m->image, VK_IMAGE_LAYOUT_GENERAL, copy, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, upload ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT);
    if (upload)
        vkCmdCopyBufferToImage(x.cb, x.st.buf, m->image, copy, n, regions);
    else
        vkCmdCopyImageToBuffer(x.cb, m->image, copy, x.st.buf, n, regions);
    image_barrier(x.cb, m->image, copy, VK_IMAGE_LAYOUT_GENERAL, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  upload ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT, IMAGE_STAGES, IMAGE_ACCESS);
    KILN_TRY(vk_xfer_submit(d, &x, upload ? "a transfer (an image upload)" : "a transfer (an image readback)"));
    m->base.last_use = x.ticket;
    if (upload) {
        m->base.last_write = x.ticket;
        vk_xfer_let_run(d, &x);
        return KILN_OK;
    }
    kiln_result r = w ? w->fn(w->ud, x.ticket) : kb_ticket_wait(&d->base, x.ticket, UINT64_MAX);
    if (r == KILN_OK)
        memcpy(host, x.st.map, (size_t)bytes);
    vk_xfer_free(d, &x);
    return r;
}

kiln_result vk_image_write(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part,
                           const void *data)
{
    return image_copy(vkd(dev), (struct vk_image *)img, part, (void *)data, true, NULL);
}

kiln_result vk_image_read(struct kb_device *dev, struct kb_image *img, const struct kb_image_part *part, void *data,
                          const struct kb_wait *w)
{
    return image_copy(vkd(dev), (struct vk_image *)img, part, data, false, w);
}

kiln_result vk_image_view(struct vk_device *d, struct vk_image *m, const struct kb_binding *b, VkImageView *out)
{
    const struct kb_image *img = &m->base;
    VkImageViewType type = b->cube                         ? VK_IMAGE_VIEW_TYPE_CUBE
                           : img->dims == 3                ? VK_IMAGE_VIEW_TYPE_3D
                           : img->dims == 1 && b->arrayed  ? VK_IMAGE_VIEW_TYPE_1D_ARRAY
                           : img->dims == 1                ? VK_IMAGE_VIEW_TYPE_1D
                           : b->arrayed                    ? VK_IMAGE_VIEW_TYPE_2D_ARRAY
                                                           : VK_IMAGE_VIEW_TYPE_2D;
    /* A storage image sees its binding's level; a sampled one every level. */
    int level = b->kind == KILN_BINDING_STORAGE_IMAGE ? (int)b->level : -1;
    for (uint32_t i = 0; i < m->view_count; i++)
        if (m->views[i].type == type && m->views[i].level == level) {
            *out = m->views[i].view;
            return KILN_OK;
        }
    if (m->view_count == VK_IMAGE_VIEWS)   /* 16 levels and three types at most; defensive */
        return KILN_RAISE(KILN_ERR_LIMIT, "image '%s': more than %d views asked for", img->label, VK_IMAGE_VIEWS);
    VkImageViewCreateInfo vci = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
        .image = m->image,
        .viewType = type,
        .format = vk_format(img->format),
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, level < 0 ? 0 : (uint32_t)level,
                             level < 0 ? img->levels : 1, 0, img->layers},
    };
    VkImageView v;
    VK_CHECK(vkCreateImageView(d->device, &vci, NULL, &v), "vkCreateImageView");
    m->views[m->view_count++] = (struct vk_image_view){type, level, v};
    *out = v;
    return KILN_OK;
}

/* The device's sampler for a filled-in desc, made on first use. */
kiln_result vk_sampler_for(struct vk_device *d, kiln_sampler_desc sd, VkSampler *out)
{
    if (sd.filter <= KILN_FILTER_DEFAULT || sd.filter >= FILTERS || sd.address <= KILN_ADDRESS_DEFAULT ||
        sd.address >= ADDRESSES)
        return KILN_RAISE(KILN_ERR_INVALID, "sampler: filter %d or address mode %d is no kiln_filter or "
                          "kiln_address_mode", (int)sd.filter, (int)sd.address);
    VkSampler *s = &d->samplers[sd.filter][sd.address];
    if (!*s) {
        static const VkSamplerAddressMode modes[ADDRESSES] = {
            [KILN_ADDRESS_CLAMP] = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
            [KILN_ADDRESS_REPEAT] = VK_SAMPLER_ADDRESS_MODE_REPEAT,
            [KILN_ADDRESS_MIRROR] = VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT,
            [KILN_ADDRESS_BORDER] = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
        };
        VkFilter f = sd.filter == KILN_FILTER_NEAREST ? VK_FILTER_NEAREST : VK_FILTER_LINEAR;
        VkSamplerCreateInfo ci = {
            .sType = VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
            .magFilter = f,
            .minFilter = f,
            .addressModeU = modes[sd.address],
            .addressModeV = modes[sd.address],
            .addressModeW = modes[sd.address],
            .mipmapMode = f == VK_FILTER_NEAREST ? VK_SAMPLER_MIPMAP_MODE_NEAREST : VK_SAMPLER_MIPMAP_MODE_LINEAR,
            .maxLod = VK_LOD_CLAMP_NONE,   /* every level a mipmapped image has */
            .borderColor = VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK,
        };
        VK_CHECK(vkCreateSampler(d->device, &ci, NULL, s), "vkCreateSampler");
    }
    *out = *s;
    return KILN_OK;
}
