/* SPDX-License-Identifier: MIT */
/*
 * vk_pipeline.c: the Vulkan backend's pipeline layouts, pipelines, pipeline caches and binding sets.
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

static const VkDescriptorType descriptor_type[KINDS] = {
    [KILN_BINDING_STORAGE_BUFFER] = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
    [KILN_BINDING_UNIFORM_BUFFER] = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
    [KILN_BINDING_STORAGE_TEXEL_BUFFER] = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER,
    [KILN_BINDING_UNIFORM_TEXEL_BUFFER] = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
    [KILN_BINDING_STORAGE_IMAGE] = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE,
    [KILN_BINDING_SAMPLED_IMAGE] = VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE,
    [KILN_BINDING_SAMPLER] = VK_DESCRIPTOR_TYPE_SAMPLER,
    [KILN_BINDING_COMBINED_IMAGE_SAMPLER] = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
};

/* ---- layouts, pipelines, binding sets ------------------------------------------- */

kiln_result vk_layout_create(struct kb_device *dev, const kiln_program_interface *iface, struct kb_layout **out)
{
    struct vk_device *d = vkd(dev);
    struct kb_layout *l = mem_calloc(1, sizeof *l);
    if (!l)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a pipeline layout");
    /* Every set up to the last the program uses: the empty ones between
     * get empty set layouts. */
    for (uint32_t i = 0; i < iface->binding_count; i++)
        l->set_count = KILN_MAX(l->set_count, KILN_MIN(iface->bindings[i].set, KILN_MAX_SETS - 1u) + 1);
    VkResult vr = VK_SUCCESS;
    for (uint32_t set = 0; set < l->set_count && vr == VK_SUCCESS; set++) {
        VkDescriptorSetLayoutBinding b[KILN_MAX_BINDINGS];
        uint32_t n = 0;
        for (uint32_t i = 0; i < iface->binding_count; i++) {
            const kiln_binding_info *bi = &iface->bindings[i];
            if (bi->set != set)
                continue;
            kiln_binding_kind kind = bi->kind < KINDS ? bi->kind : KILN_BINDING_STORAGE_BUFFER;
            b[n++] = (VkDescriptorSetLayoutBinding){
                .binding = bi->binding,
                .descriptorType = descriptor_type[kind ? kind : KILN_BINDING_STORAGE_BUFFER],
                .descriptorCount = bi->count ? bi->count : 1,
                .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
            };
            l->descriptors[kind] += bi->count ? bi->count : 1;
        }
        VkDescriptorSetLayoutCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                               .bindingCount = n,
                                               .pBindings = b};
        vr = vkCreateDescriptorSetLayout(d->device, &dci, NULL, &l->set_layouts[set]);
    }
    /* kiln's param ABI: its whole block, always, whatever the program
     * reads; or the program's own block as it declares it. */
    l->own_push = iface->own_push_block != 0;
    l->push_bytes = l->own_push ? iface->push_constant_size : KILN_PUSH_BYTES;
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = l->push_bytes};
    VkPipelineLayoutCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = l->set_count,
                                      .pSetLayouts = l->set_layouts,
                                      .pushConstantRangeCount = l->push_bytes ? 1 : 0,
                                      .pPushConstantRanges = &pcr};
    if (vr == VK_SUCCESS)
        vr = vkCreatePipelineLayout(d->device, &pci, NULL, &l->layout);
    if (vr != VK_SUCCESS) {
        vk_layout_free_handles(d, l);
        free(l);
        return vk_fail(vr, __FILE__, __LINE__, "creating a pipeline layout");
    }
    *out = l;
    return KILN_OK;
}

void vk_layout_destroy(struct kb_device *dev, struct kb_layout *l)
{
    struct vk_device *d = vkd(dev);
    if (vk_keep(d, KEPT_LAYOUT, l, (void *)l->layout, NULL))
        return;
    vk_layout_free_handles(d, l);
    free(l);
}


kiln_result vk_pipeline_create(struct kb_device *dev, struct kb_layout *layout, const uint32_t *spirv,
                                      size_t words, const struct kb_spec *spec, uint32_t spec_count,
                                      struct kb_cache *cache, bool cache_only, struct kb_pipeline **out)
{
    struct vk_device *d = vkd(dev);
    if (cache_only && (!cache || !d->base.cache_control))
        return KILN_RAISE(KILN_ERR_PENDING, "the device cannot make a pipeline from a cache without compiling");
    /* Specialization constants: "pData ... contains the actual constant
     * values to specialize with", each map entry's size that of its
     * constant's type (a VkBool32 for a bool); written in the host's byte
     * order, as the driver reads them. */
    if (spec_count > KILN_MAX_SPEC_CONSTANTS)   /* defensive: an interface holds no more */
        return KILN_RAISE(KILN_ERR_INVALID, "%u specialization constants, at most %d", spec_count,
                          KILN_MAX_SPEC_CONSTANTS);
    VkSpecializationMapEntry entries[KILN_MAX_SPEC_CONSTANTS];
    uint64_t data[KILN_MAX_SPEC_CONSTANTS];   /* 8 bytes a constant at most */
    size_t data_len = 0;
    for (uint32_t i = 0; i < spec_count; i++) {
        uint8_t *at = (uint8_t *)data + data_len;
        uint8_t v8 = (uint8_t)spec[i].value;
        uint16_t v16 = (uint16_t)spec[i].value;
        uint32_t v32 = (uint32_t)spec[i].value;
        uint32_t size = spec[i].size == 1 || spec[i].size == 2 || spec[i].size == 8 ? spec[i].size : 4;
        memcpy(at, size == 1 ? (const void *)&v8 : size == 2 ? (const void *)&v16 : size == 4 ? (const void *)&v32
                                                                                            : (const void *)&spec[i].value,
               size);
        entries[i] = (VkSpecializationMapEntry){.constantID = spec[i].id, .offset = (uint32_t)data_len, .size = size};
        data_len += size;
    }
    VkSpecializationInfo si = {.mapEntryCount = spec_count, .pMapEntries = entries, .dataSize = data_len,
                               .pData = data};
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = words * 4,
                                     .pCode = spirv};
    VkShaderModule mod;
    VK_CHECK(vkCreateShaderModule(d->device, &smci, NULL, &mod), "vkCreateShaderModule");
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .flags = cache_only ? VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT : 0,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main",
                  .pSpecializationInfo = spec_count ? &si : NULL},
        .layout = layout->layout,
    };
    VkPipeline pipe = VK_NULL_HANDLE;
    VkResult vr = vkCreateComputePipelines(d->device, cache ? cache->cache : VK_NULL_HANDLE, 1, &cpci, NULL, &pipe);
    vkDestroyShaderModule(d->device, mod, NULL);
    if (vr == VK_PIPELINE_COMPILE_REQUIRED) {
        if (pipe)
            vkDestroyPipeline(d->device, pipe, NULL);
        return KILN_RAISE(KILN_ERR_PENDING, "not in the pipeline cache");
    }
    if (vr != VK_SUCCESS)
        return vk_fail(vr, __FILE__, __LINE__, "vkCreateComputePipelines");
    struct kb_pipeline *p = mem_calloc(1, sizeof *p);
    if (!p) {
        vkDestroyPipeline(d->device, pipe, NULL);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a pipeline's object");
    }
    p->pipe = pipe;
    *out = p;
    return KILN_OK;
}

kiln_result vk_cache_create(struct kb_device *dev, const void *data, size_t len, struct kb_cache **out)
{
    struct kb_cache *c = mem_calloc(1, sizeof *c);
    if (!c)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a pipeline cache's object");
    /* "If the contents of pInitialData are incompatible ... the
     * implementation must ignore it" (vkCreatePipelineCache): stale data
     * makes an empty cache, never an error. */
    VkPipelineCacheCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                                    .initialDataSize = data ? len : 0,
                                    .pInitialData = data};
    VkResult vr = vkCreatePipelineCache(vkd(dev)->device, &ci, NULL, &c->cache);
    if (vr != VK_SUCCESS) {
        free(c);
        return vk_fail(vr, __FILE__, __LINE__, "vkCreatePipelineCache");
    }
    *out = c;
    return KILN_OK;
}

kiln_result vk_cache_data(struct kb_device *dev, struct kb_cache *c, void **data, size_t *len)
{
    struct vk_device *d = vkd(dev);
    size_t n = 0;
    VK_CHECK(vkGetPipelineCacheData(d->device, c->cache, &n, NULL), "vkGetPipelineCacheData");
    void *buf = mem_alloc(n ? n : 1);
    if (!buf)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for %zu bytes of pipeline cache data", n);
    VkResult vr = vkGetPipelineCacheData(d->device, c->cache, &n, buf);
    if (vr != VK_SUCCESS) {
        free(buf);
        return vk_fail(vr, __FILE__, __LINE__, "vkGetPipelineCacheData");
    }
    *data = buf;
    *len = n;
    return KILN_OK;
}

void vk_cache_destroy(struct kb_device *dev, struct kb_cache *c)
{
    if (vk_keep(vkd(dev), KEPT_CACHE, c, (void *)c->cache, NULL))
        return;
    vkDestroyPipelineCache(vkd(dev)->device, c->cache, NULL);
    free(c);
}

kiln_result vk_cache_merge(struct kb_device *dev, struct kb_cache *dst, struct kb_cache *const *srcs, uint32_t n)
{
    VkPipelineCache src[64];
    for (uint32_t done = 0; done < n;) {
        uint32_t k = KILN_MIN(n - done, 64u);
        for (uint32_t i = 0; i < k; i++)
            src[i] = srcs[done + i]->cache;
        VK_CHECK(vkMergePipelineCaches(vkd(dev)->device, dst->cache, k, src), "vkMergePipelineCaches");
        done += k;
    }
    return KILN_OK;
}

void vk_pipeline_destroy(struct kb_device *dev, struct kb_pipeline *p)
{
    if (vk_keep(vkd(dev), KEPT_PIPELINE, p, (void *)p->pipe, NULL))
        return;
    vkDestroyPipeline(vkd(dev)->device, p->pipe, NULL);
    free(p);
}

/* kiln_format as VkFormat. */
VkFormat vk_format(kiln_format f)
{
    static const VkFormat map[KILN_FORMAT_COUNT] = {
        [KILN_FORMAT_R32F] = VK_FORMAT_R32_SFLOAT,
        [KILN_FORMAT_R32UI] = VK_FORMAT_R32_UINT,
        [KILN_FORMAT_R32I] = VK_FORMAT_R32_SINT,
        [KILN_FORMAT_RG32F] = VK_FORMAT_R32G32_SFLOAT,
        [KILN_FORMAT_RG32UI] = VK_FORMAT_R32G32_UINT,
        [KILN_FORMAT_RG32I] = VK_FORMAT_R32G32_SINT,
        [KILN_FORMAT_RGBA32F] = VK_FORMAT_R32G32B32A32_SFLOAT,
        [KILN_FORMAT_RGBA32UI] = VK_FORMAT_R32G32B32A32_UINT,
        [KILN_FORMAT_RGBA32I] = VK_FORMAT_R32G32B32A32_SINT,
        [KILN_FORMAT_R16F] = VK_FORMAT_R16_SFLOAT,
        [KILN_FORMAT_RG16F] = VK_FORMAT_R16G16_SFLOAT,
        [KILN_FORMAT_RGBA16F] = VK_FORMAT_R16G16B16A16_SFLOAT,
        [KILN_FORMAT_RGBA16UI] = VK_FORMAT_R16G16B16A16_UINT,
        [KILN_FORMAT_RGBA16I] = VK_FORMAT_R16G16B16A16_SINT,
        [KILN_FORMAT_RGBA8] = VK_FORMAT_R8G8B8A8_UNORM,
        [KILN_FORMAT_RGBA8_SNORM] = VK_FORMAT_R8G8B8A8_SNORM,
        [KILN_FORMAT_RGBA8UI] = VK_FORMAT_R8G8B8A8_UINT,
        [KILN_FORMAT_RGBA8I] = VK_FORMAT_R8G8B8A8_SINT,
        [KILN_FORMAT_R8] = VK_FORMAT_R8_UNORM,
        [KILN_FORMAT_R8UI] = VK_FORMAT_R8_UINT,
        [KILN_FORMAT_R8I] = VK_FORMAT_R8_SINT,
        [KILN_FORMAT_R11F_G11F_B10F] = VK_FORMAT_B10G11R11_UFLOAT_PACK32,
        [KILN_FORMAT_RGB10_A2] = VK_FORMAT_A2B10G10R10_UNORM_PACK32,
        [KILN_FORMAT_RGBA16] = VK_FORMAT_R16G16B16A16_UNORM,
        [KILN_FORMAT_RG16] = VK_FORMAT_R16G16_UNORM,
        [KILN_FORMAT_RG8] = VK_FORMAT_R8G8_UNORM,
        [KILN_FORMAT_R16] = VK_FORMAT_R16_UNORM,
        [KILN_FORMAT_RGBA16_SNORM] = VK_FORMAT_R16G16B16A16_SNORM,
        [KILN_FORMAT_RG16_SNORM] = VK_FORMAT_R16G16_SNORM,
        [KILN_FORMAT_RG8_SNORM] = VK_FORMAT_R8G8_SNORM,
        [KILN_FORMAT_R16_SNORM] = VK_FORMAT_R16_SNORM,
        [KILN_FORMAT_R8_SNORM] = VK_FORMAT_R8_SNORM,
        [KILN_FORMAT_RG16I] = VK_FORMAT_R16G16_SINT,
        [KILN_FORMAT_RG8I] = VK_FORMAT_R8G8_SINT,
        [KILN_FORMAT_R16I] = VK_FORMAT_R16_SINT,
        [KILN_FORMAT_RGB10_A2UI] = VK_FORMAT_A2B10G10R10_UINT_PACK32,
        [KILN_FORMAT_RG16UI] = VK_FORMAT_R16G16_UINT,
        [KILN_FORMAT_RG8UI] = VK_FORMAT_R8G8_UINT,
        [KILN_FORMAT_R16UI] = VK_FORMAT_R16_UINT,
        [KILN_FORMAT_R64UI] = VK_FORMAT_R64_UINT,
        [KILN_FORMAT_R64I] = VK_FORMAT_R64_SINT,
    };
    return f > KILN_FORMAT_UNDEFINED && f < KILN_FORMAT_COUNT ? map[f] : VK_FORMAT_UNDEFINED;
}

/* A texel buffer's view: the format must carry the kind's buffer feature
 * (VkFormatProperties.bufferFeatures), else KILN_ERR_LIMIT naming it. */
static kiln_result make_view(struct vk_device *d, const struct kb_binding *b, VkBufferView *out)
{
    bool storage = b->kind == KILN_BINDING_STORAGE_TEXEL_BUFFER;
    VkFormat vf = vk_format(b->format);
    VkFormatProperties fp = {0};
    if (vf != VK_FORMAT_UNDEFINED)
        vkGetPhysicalDeviceFormatProperties(d->phys, vf, &fp);
    VkFormatFeatureFlags need = storage ? VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT
                                        : VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT;
    if (!(fp.bufferFeatures & need))
        return KILN_RAISE(KILN_ERR_LIMIT, "binding %u of set %u: the device cannot use format %s for a %s texel "
                          "buffer (VkFormatProperties.bufferFeatures lacks %s)", b->binding, b->set,
                          kiln_format_name(b->format) ? kiln_format_name(b->format) : "(none)",
                          storage ? "storage" : "uniform",
                          storage ? "STORAGE_TEXEL_BUFFER" : "UNIFORM_TEXEL_BUFFER");
    VkBufferViewCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
                                 .buffer = ((struct vk_buffer *)b->buffer)->buf,
                                 .format = vf,
                                 .offset = b->offset,
                                 .range = b->size};
    VK_CHECK(vkCreateBufferView(d->device, &ci, NULL, out), "vkCreateBufferView");
    return KILN_OK;
}

kiln_result vk_bindset_create(struct kb_device *dev, struct kb_layout *layout, const struct kb_binding *b,
                                     uint32_t n, struct kb_bindset **out)
{
    struct vk_device *d = vkd(dev);
    if (n > KILN_MAX_DESCRIPTORS)   /* the scheme holds at most that many (defensive) */
        return KILN_RAISE(KILN_ERR_INVALID, "%u descriptors in one binding set; at most %d", n, KILN_MAX_DESCRIPTORS);
    struct kb_bindset *s = mem_calloc(1, sizeof *s);
    if (!s)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a binding set");
    VkDescriptorPoolSize sizes[KINDS];
    uint32_t ns = 0;
    for (int k = 1; k < KINDS; k++)
        if (layout->descriptors[k])
            sizes[ns++] = (VkDescriptorPoolSize){descriptor_type[k], layout->descriptors[k]};
    VkDescriptorPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = layout->set_count ? layout->set_count : 1,
                                      .poolSizeCount = ns,
                                      .pPoolSizes = sizes};
    VkResult vr = layout->set_count ? vkCreateDescriptorPool(d->device, &pci, NULL, &s->pool) : VK_SUCCESS;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = s->pool,
                                      .descriptorSetCount = layout->set_count,
                                      .pSetLayouts = layout->set_layouts};
    if (vr == VK_SUCCESS && layout->set_count)
        vr = vkAllocateDescriptorSets(d->device, &ai, s->sets);
    if (vr != VK_SUCCESS) {
        vk_bindset_free_handles(d, s);
        free(s);
        return vk_fail(vr, __FILE__, __LINE__, "allocating descriptor sets");
    }
    s->set_count = layout->set_count;
    for (uint32_t i = 0; i < n; i++)   /* buffer ranges, for check mode's lines */
        if (b[i].buffer)
            s->info[s->info_count++] = (struct vk_check_binding){b[i].set, b[i].binding, b[i].element, b[i].size,
                                                                 b[i].buffer->size - b[i].offset};
    VkDescriptorBufferInfo infos[KILN_MAX_DESCRIPTORS];
    VkDescriptorImageInfo images[KILN_MAX_DESCRIPTORS];
    VkWriteDescriptorSet writes[KILN_MAX_DESCRIPTORS];
    for (uint32_t i = 0; i < n; i++) {
        bool texel = b[i].kind == KILN_BINDING_STORAGE_TEXEL_BUFFER || b[i].kind == KILN_BINDING_UNIFORM_TEXEL_BUFFER;
        bool image = b[i].kind >= KILN_BINDING_STORAGE_IMAGE && b[i].kind <= KILN_BINDING_COMBINED_IMAGE_SAMPLER;
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = b[i].set < s->set_count ? s->sets[b[i].set] : VK_NULL_HANDLE,
            .dstBinding = b[i].binding,
            .dstArrayElement = b[i].element,
            .descriptorCount = 1,
            .descriptorType = descriptor_type[b[i].kind < KINDS && b[i].kind ? b[i].kind : KILN_BINDING_STORAGE_BUFFER],
        };
        if (texel) {
            kiln_result r = make_view(d, &b[i], &s->views[s->view_count]);
            if (r < 0) {
                vk_bindset_free_handles(d, s);
                free(s);
                return r;
            }
            writes[i].pTexelBufferView = &s->views[s->view_count++];
        } else if (image) {
            images[i] = (VkDescriptorImageInfo){.imageLayout = VK_IMAGE_LAYOUT_GENERAL};
            kiln_result r = b[i].image ? vk_image_view(d, (struct vk_image *)b[i].image, &b[i], &images[i].imageView)
                                       : KILN_OK;
            if (r == KILN_OK && (b[i].kind == KILN_BINDING_SAMPLER || b[i].kind == KILN_BINDING_COMBINED_IMAGE_SAMPLER))
                r = vk_sampler_for(d, b[i].sampler, &images[i].sampler);
            if (r < 0) {
                vk_bindset_free_handles(d, s);
                free(s);
                return r;
            }
            writes[i].pImageInfo = &images[i];
        } else {
            infos[i] = (VkDescriptorBufferInfo){((struct vk_buffer *)b[i].buffer)->buf, b[i].offset, b[i].size};
            writes[i].pBufferInfo = &infos[i];
        }
    }
    vkUpdateDescriptorSets(d->device, n, writes, 0, NULL);
    *out = s;
    return KILN_OK;
}

void vk_bindset_destroy(struct kb_device *dev, struct kb_bindset *s)
{
    if (vk_keep(vkd(dev), KEPT_BINDSET, s, (void *)s->pool, NULL))
        return;
    vk_bindset_free_handles(vkd(dev), s);
    free(s);
}
