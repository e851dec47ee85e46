/* SPDX-License-Identifier: MIT */
/*
 * vk_device.c: kiln's Vulkan backend: the device's life, and its ops table.
 *
 * One instance, one physical device, one queue of a compute-capable family.
 * Tickets are values of one timeline semaphore (Vulkan 1.2 core): submit N
 * signals N, a wait on N is vkWaitSemaphores.
 *
 * Memory: where the device's memory is the host's (integrated GPUs, CPU
 * devices such as lavapipe) a buffer is DEVICE_LOCAL | HOST_VISIBLE |
 * HOST_COHERENT memory mapped once; elsewhere it is DEVICE_LOCAL memory and
 * upload/readback go through a staging buffer and a transfer command.
 *
 * Recordings begin with a barrier making earlier submits' shader and
 * transfer writes visible to this one's shaders and end with one making its
 * shader writes visible to the host and to transfers: "vkQueueSubmit ...
 * does not imply a memory dependency between batches" (Vulkan spec, 7.4
 * Queue Submission), so kiln states it.
 *
 * With validation on, VK_LAYER_KHRONOS_validation runs with synchronization
 * validation, and its messages go to kiln's log and the device's counters.
 *
 * Loss (see backend.h): VK_ERROR_DEVICE_LOST is KILN_ERR_DEVICE_LOST, and
 * every wait goes through kb_ticket_wait, bounded by the device timeout.
 * A device abandoned at destroy (lost with work unfinished: lavapipe runs a
 * dispatch on a thread nothing can stop) destroys no Vulkan object: each
 * destroy op keeps the object's host struct and handles on the device's
 * `kept` list, and the device joins `graveyard`, a process-wide list, so
 * that what was left on purpose stays reachable (a leak checker does not
 * report it) and is logged by kind. vkb_fault is the tests' fault hook.
 *
 * The backend's files: vk_device.c (this: the device's life and its ops
 * table), vk_instance.c (instance, device choice, caps), vk_buffer.c
 * (buffers, staging, submits and waits), vk_pipeline.c (layouts,
 * pipelines, caches, binding sets), vk_image.c (images, samplers), vk_cmd.c
 * (recordings, timestamps, tickets); vk_private.h what they share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "base/parse.h"
#include "vk_private.h"

static const char *const kept_names[KEPT_KINDS] = {"buffers", "pipeline layouts", "pipelines", "pipeline caches",
                                                   "binding sets", "command buffers", "staging buffers", "images"};

static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards graveyard */
static struct vk_device *graveyard;   /* abandoned devices, kept reachable for the process's life */

kiln_result vk_fail(VkResult vr, const char *file, int line, const char *what)
{
    kiln_result code = (vr == VK_ERROR_OUT_OF_HOST_MEMORY || vr == VK_ERROR_OUT_OF_DEVICE_MEMORY)
                           ? KILN_ERR_NO_MEMORY
                           : vr == VK_ERROR_DEVICE_LOST ? KILN_ERR_DEVICE_LOST
                                                        : KILN_ERR_DEVICE;
    return err_raise(code, file, line, "%s failed: VkResult %d", what, (int)vr);
}


/* True when the device is lost with submitted work unfinished: objects
 * may still be in use by it. Called by the context lock's holder. */
bool vk_unfinished_lost(struct vk_device *d)
{
    return kb_is_lost(&d->base) && kb_ticket_done(&d->base) < d->base.submitted;
}

/* On an abandoned device, or a lost one with work unfinished: keeps host
 * struct `host` and up to two handles reachable instead of destroying them,
 * and returns true; false on a device that destroys as usual. Where the
 * list cannot grow, the object is left unreachable (still never destroyed
 * under running work). */
bool vk_keep(struct vk_device *d, enum kept_kind kind, void *host, void *h1, void *h2)
{
    if (!atomic_load(&d->base.abandon) && !vk_unfinished_lost(d))
        return false;
    pthread_mutex_lock(&d->kept_lock);
    if (vec_reserve((void **)&d->kept, &d->kept_cap, d->kept_count + 4, sizeof *d->kept)) {
        d->kept[d->kept_count++] = (void *)(uintptr_t)kind;
        d->kept[d->kept_count++] = host;
        d->kept[d->kept_count++] = h1;
        d->kept[d->kept_count++] = h2;
    }
    d->kept_kinds[kind]++;
    pthread_mutex_unlock(&d->kept_lock);
    return true;
}

/* The Vulkan objects of a layout and of a binding set (their host structs
 * are freed by the caller). */
void vk_layout_free_handles(struct vk_device *d, struct kb_layout *l)
{
    if (l->layout)
        vkDestroyPipelineLayout(d->device, l->layout, NULL);
    for (uint32_t i = 0; i < l->set_count; i++)
        if (l->set_layouts[i])
            vkDestroyDescriptorSetLayout(d->device, l->set_layouts[i], NULL);
}

void vk_image_free_handles(struct vk_device *d, struct vk_image *m)
{
    for (uint32_t i = 0; i < m->view_count; i++)
        vkDestroyImageView(d->device, m->views[i].view, NULL);
    if (m->image)
        vkDestroyImage(d->device, m->image, NULL);
    if (m->mem)
        vkFreeMemory(d->device, m->mem, NULL);
}

void vk_bindset_free_handles(struct vk_device *d, struct kb_bindset *s)
{
    if (s->pool)
        vkDestroyDescriptorPool(d->device, s->pool, NULL);   /* frees its sets */
    for (uint32_t i = 0; i < s->view_count; i++)
        vkDestroyBufferView(d->device, s->views[i], NULL);
}

/* Destroys what vk_keep() kept, on a device not abandoned after all (the work
 * that might have used them finished). */
static void release_kept(struct vk_device *d)
{
    for (uint32_t i = 0; i + 4 <= d->kept_count; i += 4) {
        void *host = d->kept[i + 1], *h1 = d->kept[i + 2], *h2 = d->kept[i + 3];
        switch ((enum kept_kind)(uintptr_t)d->kept[i]) {
        case KEPT_BUFFER:
        case KEPT_STAGING:
            vkDestroyBuffer(d->device, (VkBuffer)h1, NULL);
            vkFreeMemory(d->device, (VkDeviceMemory)h2, NULL);
            break;
        case KEPT_LAYOUT:
            vk_layout_free_handles(d, host);
            break;
        case KEPT_PIPELINE: vkDestroyPipeline(d->device, (VkPipeline)h1, NULL); break;
        case KEPT_CACHE: vkDestroyPipelineCache(d->device, (VkPipelineCache)h1, NULL); break;
        case KEPT_BINDSET: vk_bindset_free_handles(d, host); break;
        case KEPT_IMAGE: vk_image_free_handles(d, host); break;
        case KEPT_CMD: {
            VkCommandBuffer cb = (VkCommandBuffer)h1;
            vkFreeCommandBuffers(d->device, d->cmd_pool, 1, &cb);
            if (h2)
                vkDestroyQueryPool(d->device, (VkQueryPool)h2, NULL);
            break;
        }
        default: break;
        }
        free(host);
    }
    d->kept_count = 0;
}

static const struct backend_ops vk_ops;
static void vk_destroy(struct kb_device *dev)
{
    struct vk_device *d = vkd(dev);
    if (atomic_load(&dev->abandon)) {
        char line[512];
        size_t used = 0;
        for (int k = 0; k < KEPT_KINDS; k++)
            if (d->kept_kinds[k] && used < sizeof line)
                used += (size_t)snprintf(line + used, sizeof line - used, ", %u %s", d->kept_kinds[k], kept_names[k]);
        log_warn("vulkan: device %s abandoned to its running work: the device, its queue, command pool and timeline%s "
                 "are left allocated for the process's life (a dispatch cannot be stopped; freeing them under it "
                 "would crash)", dev->caps.device_name, used ? line : "");
        pthread_mutex_lock(&graveyard_lock);
        d->next_abandoned = graveyard;
        graveyard = d;
        pthread_mutex_unlock(&graveyard_lock);
        return;
    }
    if (d->device) {
        /* Nothing is left running here (a lost device with unfinished work
         * is abandoned instead), so this returns at once. */
        vkDeviceWaitIdle(d->device);
        vk_xfer_reap(d, true);
        release_kept(d);
        for (int f = 0; f < FILTERS; f++)
            for (int a = 0; a < ADDRESSES; a++)
                if (d->samplers[f][a])
                    vkDestroySampler(d->device, d->samplers[f][a], NULL);
        if (d->timeline)
            vkDestroySemaphore(d->device, d->timeline, NULL);
        if (d->cmd_pool)
            vkDestroyCommandPool(d->device, d->cmd_pool, NULL);
        vkDestroyDevice(d->device, NULL);
    }
    if (d->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(d->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy)
            destroy(d->instance, d->messenger, NULL);
    }
    if (d->instance)
        vkDestroyInstance(d->instance, NULL);
    free(d->kept);
    free(d->xfers);
    pthread_mutex_destroy(&d->kept_lock);
    pthread_mutex_destroy(&d->check_lock);
    kb_device_finish(&d->base);
    free(d);
}

#ifdef KILN_TEST_HOOKS
void vkb_fault(struct kb_device *dev, enum vkb_fault fault)
{
    struct vk_device *d = vkd(dev);
    if (fault == VKB_FAULT_LOST)
        d->fault_lost = true;
    else if (fault == VKB_FAULT_HANG && !d->hang_from)
        d->hang_from = d->base.submitted + 1;
}
#endif

kiln_result vkb_create(const struct kb_settings *set, struct kb_device **out)
{
    const char *selector = set->device;
    bool staging = set->staging;
    struct vk_device *d = mem_calloc(1, sizeof *d);
    if (!d)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the Vulkan device");
    d->base.ops = &vk_ops;
    kb_device_init(&d->base);
    pthread_mutex_init(&d->kept_lock, NULL);
    pthread_mutex_init(&d->check_lock, NULL);
    kiln_result r = vk_make_instance(d, set->validation || set->check, set->check);
    if (r == KILN_OK)
        r = vk_pick_device(d, selector);
    if (r < 0) {
        vk_destroy(&d->base);
        return r;
    }
    vk_fill_caps(d);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    /* Every feature the device has, so programs may use 64-bit, 16-bit and
     * 8-bit types, subgroup operations and the like where the device allows;
     * robust access stays off (it costs speed; kiln checks ranges) unless
     * asked for (kb_settings.robust), and is always off in check mode,
     * whose reports it would hide. */
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDevicePipelineCreationCacheControlFeatures fcc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_CREATION_CACHE_CONTROL_FEATURES};
    bool v13 = d->base.caps.api_version >= VK_API_VERSION_1_3;
    int has_cc = v13 ? 0 : vk_has_device_extension(d->phys, VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME);
    if (has_cc < 0) {
        vk_destroy(&d->base);
        return KILN_ERR_NO_MEMORY;
    }
    bool ext_cc = has_cc > 0;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = v13 ? (void *)&f13 : ext_cc ? (void *)&fcc : NULL};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    /* 64-bit integer images: the extension where vk_fill_caps found its
     * feature. */
    bool image_int64 = d->base.caps.shader_features & KILN_FEATURE_IMAGE_INT64;
    VkPhysicalDeviceShaderImageAtomicInt64FeaturesEXT i64 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_IMAGE_ATOMIC_INT64_FEATURES_EXT, .pNext = &f11};
    /* Robust access asked for: robustness2 too where the device has it. */
    int has_r2 = set->robust ? vk_has_device_extension(d->phys, VK_EXT_ROBUSTNESS_2_EXTENSION_NAME) : 0;
    VkPhysicalDeviceRobustness2FeaturesEXT r2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT,
                                                 .pNext = image_int64 ? (void *)&i64 : (void *)&f11};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                          .pNext = has_r2 > 0   ? (void *)&r2
                                                   : image_int64 ? (void *)&i64
                                                                 : (void *)&f11};
    vkGetPhysicalDeviceFeatures2(d->phys, &features);
    bool robust = set->robust && features.features.robustBufferAccess;
    if (set->robust && !robust)
        log_warn("robust access asked for, but %s has no robustBufferAccess; running without it",
                 d->base.caps.device_name);
    features.features.robustBufferAccess = robust;
    f13.robustImageAccess = robust && f13.robustImageAccess;
    r2.robustBufferAccess2 = robust && r2.robustBufferAccess2;
    r2.robustImageAccess2 = robust && r2.robustImageAccess2;
    r2.nullDescriptor = VK_FALSE;
    d->base.caps.robust_access = !robust ? 0 : r2.robustBufferAccess2 ? 2 : 1;
    if (d->base.caps.check && d->base.caps.max_bound_descriptor_sets > 1)
        d->base.caps.max_bound_descriptor_sets--;   /* the layer's GPU-assisted checks take the last */
    d->base.cache_control = v13 ? f13.pipelineCreationCacheControl : fcc.pipelineCreationCacheControl;
    /* Host memory imported in place (a server's view of a client's sealed
     * data segment): where the device has VK_EXT_external_memory_host. */
    int has_host = vk_has_device_extension(d->phys, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME);
    const char *dev_exts[4];
    uint32_t ext_count = 0;
    if (image_int64)
        dev_exts[ext_count++] = VK_EXT_SHADER_IMAGE_ATOMIC_INT64_EXTENSION_NAME;
    if (has_r2 > 0)
        dev_exts[ext_count++] = VK_EXT_ROBUSTNESS_2_EXTENSION_NAME;
    if (ext_cc)
        dev_exts[ext_count++] = VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME;
    if (has_host > 0 && !env_flag("KILN_NO_HOST_IMPORT", 0)) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT};
        VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &hp};
        vkGetPhysicalDeviceProperties2(d->phys, &p2);
        d->host_align = hp.minImportedHostPointerAlignment;
        dev_exts[ext_count++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    }
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .enabledExtensionCount = ext_count,
        .ppEnabledExtensionNames = dev_exts,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
    };
    VkResult vr = vkCreateDevice(d->phys, &dci, NULL, &d->device);
    if (vr != VK_SUCCESS) {
        vk_destroy(&d->base);
        return vk_fail(vr, __FILE__, __LINE__, "vkCreateDevice");
    }
    vkGetDeviceQueue(d->device, d->queue_family, 0, &d->queue);
    if (d->host_align)
        d->host_props = (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(
            d->device, "vkGetMemoryHostPointerPropertiesEXT");
    if (!d->host_props)
        d->host_align = 0;
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->queue_family,
    };
    VkSemaphoreTypeCreateInfo sti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &sti};
    if ((vr = vkCreateCommandPool(d->device, &pci, NULL, &d->cmd_pool)) != VK_SUCCESS ||
        (vr = vkCreateSemaphore(d->device, &sci, NULL, &d->timeline)) != VK_SUCCESS) {
        vk_destroy(&d->base);
        return vk_fail(vr, __FILE__, __LINE__, "creating the queue's command pool and timeline");
    }

    const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int mem_unified = vk_find_memory(&d->memprops, ~0u, unified);
    kiln_device_type t = d->base.caps.device_type;
    d->unified = mem_unified >= 0 && (t == KILN_DEVICE_CPU || t == KILN_DEVICE_INTEGRATED_GPU);
    if (d->unified && staging) {
        d->unified = false;   /* tests of the separate-memory path on a unified device */
        log_info("KILN_FORCE_STAGING: buffers go through staging copies");
    }
    d->base.caps.unified_memory = d->unified;
    d->base.caps.pipeline_cache_keeps_code = vk_probe_cache_keeps_code(d);
    log_info("device: %s (%s), %s memory", d->base.caps.device_name, d->base.caps.driver_name,
             d->unified ? "unified" : "separate (staged)");
    *out = &d->base;
    return KILN_OK;
}


static const struct backend_ops vk_ops = {
    .name = "vulkan",
    .layout_follows_signature = true,
    .destroy = vk_destroy,
    .buffer_create = vk_buffer_create,
    .buffer_destroy = vk_buffer_destroy,
    .buffer_address = vk_buffer_address,
    .buffer_write = vk_buffer_write,
    .buffer_read = vk_buffer_read,
    .host_import = vk_host_import,
    .host_release = vk_host_release,
    .buffer_write_host = vk_buffer_write_host,
    .buffer_read_host = vk_buffer_read_host,
    .image_create = vk_image_create,
    .image_destroy = vk_image_destroy,
    .image_write = vk_image_write,
    .image_read = vk_image_read,
    .image_usage = vk_image_usage,
    .layout_create = vk_layout_create,
    .layout_destroy = vk_layout_destroy,
    .pipeline_create = vk_pipeline_create,
    .pipeline_destroy = vk_pipeline_destroy,
    .cache_create = vk_cache_create,
    .cache_data = vk_cache_data,
    .cache_destroy = vk_cache_destroy,
    .cache_merge = vk_cache_merge,
    .bindset_create = vk_bindset_create,
    .bindset_destroy = vk_bindset_destroy,
    .cmd_create = vk_cmd_create,
    .cmd_destroy = vk_cmd_destroy,
    .cmd_times = vk_cmd_times,
    .cmd_record = vk_cmd_record,
    .submit = vk_submit,
    .ticket_done = vk_ticket_done,
    .ticket_wait = vk_ticket_wait,
};
