/* SPDX-License-Identifier: MIT */
/*
 * vk_instance.c: the Vulkan backend's instance (and the validation layer), the choice of a physical device, its caps.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "vk_private.h"

/* ---- instance and device choice ----------------------------------------------- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *ud)
{
    struct kb_device *dev = ud;
    (void)type;
    if ((sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) && dev->caps.check &&
        vk_check_report((struct vk_device *)dev, data->pMessage))
        return VK_FALSE;   /* an out-of-bounds access, named and counted */
    if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        atomic_fetch_add(&dev->validation_errors, 1);
        log_error("validation: %s", data->pMessage);
    } else if (sev & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        atomic_fetch_add(&dev->validation_warnings, 1);
        log_warn("validation: %s", data->pMessage);
    }
    return VK_FALSE;
}

/* 1: the instance layer is installed, 0: not, -1: out of host memory
 * (raised) for the list of layers. */
static int has_layer(const char *name)
{
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *props = mem_calloc(n ? n : 1, sizeof *props);
    if (!props)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the list of %u Vulkan layers", n), -1;
    vkEnumerateInstanceLayerProperties(&n, props);
    bool found = false;
    for (uint32_t i = 0; i < n; i++)
        found |= !strcmp(props[i].layerName, name);
    free(props);
    return found;
}

/* Every vkCreateInstance goes through create_instance, which keeps the
 * shared objects the loader mapped for it (the driver, the layers) mapped
 * for the process's life (RTLD_NODELETE). Drivers are not all made to be
 * unloaded and loaded again: NVIDIA's uses static TLS, which glibc never
 * gives back at dlclose, so after some dozens of contexts made and
 * destroyed in one process its ICD no longer loads ("Found no drivers").
 * Kept mapped, a driver loads once. It also keeps LeakSanitizer able to
 * name, and tests/lsan.supp to suppress, what the validation layer keeps,
 * and lavapipe's 128 bytes per instance, held by its globals, reachable.
 * The cost: a process that made a context keeps its driver mapped after
 * destroying every context. */
#define MAPPED_MAX 1024

struct mapped {
    uintptr_t base[MAPPED_MAX];   /* load addresses: what was mapped before */
    const char *name[MAPPED_MAX];
    uint32_t n;
    bool full;
};

static int list_mapped(struct dl_phdr_info *info, size_t size, void *ud)
{
    (void)size;
    struct mapped *m = ud;
    if (m->n == MAPPED_MAX) {
        m->full = true;
        return 1;
    }
    m->base[m->n] = (uintptr_t)info->dlpi_addr;
    m->name[m->n++] = info->dlpi_name;
    return 0;
}

static VkResult create_instance(const VkInstanceCreateInfo *ici, VkInstance *out)
{
    static struct mapped before, after;   /* large: not on the stack; guarded by lock */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    before.n = 0;
    before.full = false;
    dl_iterate_phdr(list_mapped, &before);
    VkResult vr = vkCreateInstance(ici, NULL, out);
    after.n = 0;
    after.full = false;
    dl_iterate_phdr(list_mapped, &after);
    for (uint32_t i = 0; i < after.n; i++) {
        bool old = false;
        for (uint32_t k = 0; k < before.n && !old; k++)
            old = before.base[k] == after.base[i];
        if (!old && after.name[i] && after.name[i][0])
            (void)dlopen(after.name[i], RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    }
    if (before.full || after.full)
        log_debug("vk: more than %d shared objects mapped; some drivers may be unloaded with their instance",
                  MAPPED_MAX);
    pthread_mutex_unlock(&lock);
    return vr;
}

kiln_result vk_make_instance(struct vk_device *d, bool validation, bool check)
{
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "kiln",
        .pEngineName = "kiln",
        .engineVersion = VK_MAKE_API_VERSION(0, KILN_VERSION_MAJOR, KILN_VERSION_MINOR, 0),
        .apiVersion = VK_API_VERSION_1_3,
    };
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    /* Check mode adds the layer's GPU-assisted validation, which
     * instruments shaders to report accesses past a binding's range; it
     * takes the device's last descriptor set slot for its own. */
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,
                                              VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT,
                                              VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_RESERVE_BINDING_SLOT_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = check ? 3 : 1,
        .pEnabledValidationFeatures = enables,
    };
    VkDebugUtilsMessengerCreateInfoEXT mci = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = &features,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = &d->base,
    };
    int layer = validation ? has_layer(layers[0]) : 0;
    if (layer < 0)
        return KILN_ERR_NO_MEMORY;
    if (check && !layer)
        return KILN_RAISE(KILN_ERR_INVALID, "check mode needs the Vulkan validation layer (%s), which is not installed "
                          "(Debian: vulkan-validationlayers)", layers[0]);
    if (validation && !layer) {
        log_warn("validation asked for, but %s is not installed (Debian: vulkan-validationlayers); running without it",
                 layers[0]);
        validation = false;
    }
    VkInstanceCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &mci : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validation ? 1 : 0,
        .ppEnabledExtensionNames = exts,
    };
    VkResult vr = create_instance(&ici, &d->instance);
    if (vr == VK_ERROR_INCOMPATIBLE_DRIVER)
        return KILN_RAISE(KILN_ERR_NO_DEVICE, "no Vulkan driver is installed (Debian: mesa-vulkan-drivers gives lavapipe)");
    VK_CHECK(vr, "vkCreateInstance");
    if (validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(d->instance, "vkCreateDebugUtilsMessengerEXT");
        mci.pNext = NULL;
        if (create)
            VK_CHECK(create(d->instance, &mci, NULL, &d->messenger), "vkCreateDebugUtilsMessengerEXT");
        d->base.caps.validation = 1;
        d->base.caps.check = check;
    }
    return KILN_OK;
}

/* 1: the device has the extension, 0: not, -1: out of host memory (raised)
 * for the list of extensions. */
int vk_has_device_extension(VkPhysicalDevice p, const char *name)
{
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL);
    VkExtensionProperties *props = mem_calloc(n ? n : 1, sizeof *props);
    if (!props)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the list of %u device extensions", n), -1;
    vkEnumerateDeviceExtensionProperties(p, NULL, &n, props);
    bool found = false;
    for (uint32_t i = 0; i < n; i++)
        found |= !strcmp(props[i].extensionName, name);
    free(props);
    return found;
}

static kiln_device_type map_type(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return KILN_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return KILN_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return KILN_DEVICE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return KILN_DEVICE_CPU;
    default: return KILN_DEVICE_OTHER;
    }
}

static const char *type_name(VkPhysicalDeviceType t)
{
    static const char *names[] = {"other", "integrated GPU", "discrete GPU", "virtual GPU", "CPU"};
    return (unsigned)t < 5 ? names[t] : "other";
}

/* The first queue family with compute, and its properties when out is
 * not NULL; -1 when there is none. */
static int compute_family(VkPhysicalDevice p, VkQueueFamilyProperties *out)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
    VkQueueFamilyProperties props[32];
    n = KILN_MIN(n, 32u);
    vkGetPhysicalDeviceQueueFamilyProperties(p, &n, props);
    for (uint32_t i = 0; i < n; i++)
        if (props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            if (out)
                *out = props[i];
            return (int)i;
        }
    return -1;
}

/* Why a device cannot serve kiln, or NULL. */
static const char *unfit(VkPhysicalDevice p)
{
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(p, &props);
    if (props.apiVersion < VK_API_VERSION_1_2)
        return "Vulkan 1.2 needed";
    if (compute_family(p, NULL) < 0)
        return "no compute queue";
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceFeatures2 f = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12};
    vkGetPhysicalDeviceFeatures2(p, &f);
    if (!f12.timelineSemaphore)
        return "no timeline semaphores";
    return NULL;
}

kiln_result vk_pick_device(struct vk_device *d, const char *selector)
{
    uint32_t n = 0;
    VK_CHECK(vkEnumeratePhysicalDevices(d->instance, &n, NULL), "vkEnumeratePhysicalDevices");
    VkPhysicalDevice devs[16];
    n = KILN_MIN(n, 16u);
    VkResult vr = vkEnumeratePhysicalDevices(d->instance, &n, devs);
    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE)
        VK_CHECK(vr, "vkEnumeratePhysicalDevices");

    char seen[2048] = "";
    size_t used = 0;
    VkPhysicalDeviceProperties props[16];
    for (uint32_t i = 0; i < n; i++) {
        vkGetPhysicalDeviceProperties(devs[i], &props[i]);
        const VkPhysicalDeviceProperties *p = &props[i];
        const char *why = unfit(devs[i]);
        used += (size_t)snprintf(seen + used, used < sizeof seen ? sizeof seen - used : 0, "%s%u: %s (%s, Vulkan %u.%u%s%s)",
                                 i ? "; " : "", i, p->deviceName, type_name(p->deviceType),
                                 VK_API_VERSION_MAJOR(p->apiVersion), VK_API_VERSION_MINOR(p->apiVersion),
                                 why ? ", unfit: " : "", why ? why : "");
        if (used >= sizeof seen)
            used = sizeof seen - 1;
    }
    if (!n)
        return KILN_RAISE(KILN_ERR_NO_DEVICE, "no Vulkan device found (is a driver installed? Debian: mesa-vulkan-drivers)");

    int pick = -1;
    if (selector && *selector) {
        uint64_t idx;
        if (parse_u64(selector, &idx, NULL)) {   /* an index; anything else is a name */
            if (idx >= n)
                return KILN_RAISE(KILN_ERR_NO_DEVICE, "device index %s is out of range; devices seen: %s", selector,
                                  seen);
            pick = (int)idx;
        } else {
            for (uint32_t i = 0; i < n && pick < 0; i++)
                if (str_icontains(props[i].deviceName, selector))
                    pick = (int)i;
            if (pick < 0)
                return KILN_RAISE(KILN_ERR_NO_DEVICE, "no device name contains '%s'; devices seen: %s", selector, seen);
        }
        const char *why = unfit(devs[pick]);
        if (why)
            return KILN_RAISE(KILN_ERR_NO_DEVICE, "device %d cannot serve kiln (%s); devices seen: %s", pick, why, seen);
    } else {
        static const VkPhysicalDeviceType order[] = {
            VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
            VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU, VK_PHYSICAL_DEVICE_TYPE_OTHER};
        for (size_t o = 0; o < KILN_ARRAY_LEN(order) && pick < 0; o++)
            for (uint32_t i = 0; i < n && pick < 0; i++)
                if (props[i].deviceType == order[o] && !unfit(devs[i]))
                    pick = (int)i;
        if (pick < 0)
            return KILN_RAISE(KILN_ERR_NO_DEVICE, "no Vulkan device can serve kiln; devices seen: %s", seen);
    }
    d->phys = devs[pick];
    d->queue_family = (uint32_t)compute_family(d->phys, NULL);
    d->base.caps.api_version = props[pick].apiVersion;   /* fill_caps' query depends on it */
    return KILN_OK;
}

/* The caps, from one query of the device's properties (and one of its
 * memory's, kept for buffer allocation): pick_device has set
 * caps.api_version, which decides whether Vulkan 1.3's properties may be
 * chained. */
void vk_fill_caps(struct vk_device *d)
{
    kiln_caps *c = &d->base.caps;
    bool v13 = c->api_version >= VK_API_VERSION_1_3;
    VkPhysicalDeviceMaintenance4Properties m4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
                                                 .pNext = v13 ? &m4 : NULL};
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
                                            .pNext = &m3};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                              .pNext = &drv};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    vkGetPhysicalDeviceProperties2(d->phys, &p2);
    const VkPhysicalDeviceProperties *p = &p2.properties;
    snprintf(c->device_name, sizeof c->device_name, "%s", p->deviceName);
    VkQueueFamilyProperties qf;
    if (compute_family(d->phys, &qf) >= 0 && qf.timestampValidBits && p->limits.timestampPeriod > 0) {
        d->base.timestamps = true;
        d->timestamp_period = p->limits.timestampPeriod;
        d->timestamp_mask = qf.timestampValidBits >= 64 ? UINT64_MAX : (1ull << qf.timestampValidBits) - 1;
    }
    snprintf(c->driver_name, sizeof c->driver_name, "%s", drv.driverName);
    /* llvmpipe stops a shader after 65535 loop iterations in all, per
     * invocation (its LP_MAX_TGSI_LOOP_ITERATIONS), and returns what it has. */
    c->loop_budget = drv.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ? 65535 : 0;
    snprintf(c->driver_info, sizeof c->driver_info, "%s", drv.driverInfo);
    c->device_type = map_type(p->deviceType);
    c->vendor_id = p->vendorID;
    c->device_id = p->deviceID;
    c->api_version = p->apiVersion;
    c->driver_version = p->driverVersion;
    c->subgroup_size = sub.subgroupSize;
    /* Vulkan's VkSubgroupFeatureFlagBits are kiln_subgroup_ops' bits. */
    c->subgroup_ops = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sub.supportedOperations & 0xffu : 0;
    for (int i = 0; i < 3; i++) {
        c->max_workgroup_count[i] = p->limits.maxComputeWorkGroupCount[i];
        c->max_workgroup_size[i] = p->limits.maxComputeWorkGroupSize[i];
    }
    c->max_workgroup_invocations = p->limits.maxComputeWorkGroupInvocations;
    c->max_storage_buffer_range = p->limits.maxStorageBufferRange;
    c->max_uniform_buffer_range = p->limits.maxUniformBufferRange;
    c->max_push_constants_size = p->limits.maxPushConstantsSize;
    c->min_storage_buffer_offset_alignment = p->limits.minStorageBufferOffsetAlignment;
    c->min_uniform_buffer_offset_alignment = p->limits.minUniformBufferOffsetAlignment;
    memcpy(c->pipeline_cache_uuid, p->pipelineCacheUUID, 16);
    c->backend = KILN_BACKEND_VULKAN;
    c->max_shared_memory_size = p->limits.maxComputeSharedMemorySize;
    c->max_per_stage_storage_buffers = p->limits.maxPerStageDescriptorStorageBuffers;
    c->max_per_stage_uniform_buffers = p->limits.maxPerStageDescriptorUniformBuffers;
    c->max_per_stage_resources = p->limits.maxPerStageResources;
    c->max_bound_descriptor_sets = p->limits.maxBoundDescriptorSets;
    c->max_per_stage_storage_images = p->limits.maxPerStageDescriptorStorageImages;
    c->max_per_stage_sampled_images = p->limits.maxPerStageDescriptorSampledImages;
    c->max_texel_buffer_elements = p->limits.maxTexelBufferElements;
    c->min_texel_buffer_offset_alignment = p->limits.minTexelBufferOffsetAlignment;
    c->max_image_dimension_2d = p->limits.maxImageDimension2D;
    c->max_image_dimension_3d = p->limits.maxImageDimension3D;
    c->max_image_dimension_1d = p->limits.maxImageDimension1D;
    c->max_image_dimension_cube = p->limits.maxImageDimensionCube;
    c->max_image_array_layers = p->limits.maxImageArrayLayers;
    /* Every feature is enabled at create (vkb_create). */
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = v13 ? &f13 : NULL};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    /* 64-bit integer images (r64ui, r64i) come with a device extension. */
    VkPhysicalDeviceShaderImageAtomicInt64FeaturesEXT i64 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_IMAGE_ATOMIC_INT64_FEATURES_EXT, .pNext = &f11};
    bool has_i64 = vk_has_device_extension(d->phys, VK_EXT_SHADER_IMAGE_ATOMIC_INT64_EXTENSION_NAME) > 0;
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = has_i64 ? (void *)&i64 : (void *)&f11};
    vkGetPhysicalDeviceFeatures2(d->phys, &f2);
    const VkPhysicalDeviceFeatures *feat = &f2.features;
    c->storage_image_read_without_format = feat->shaderStorageImageReadWithoutFormat ? 1 : 0;
    c->storage_image_write_without_format = feat->shaderStorageImageWriteWithoutFormat ? 1 : 0;
    const struct { VkBool32 on; uint32_t bit; } have[] = {
        {feat->shaderFloat64, KILN_FEATURE_FLOAT64},
        {feat->shaderInt64, KILN_FEATURE_INT64},
        {feat->shaderInt16, KILN_FEATURE_INT16},
        {f12.shaderFloat16, KILN_FEATURE_FLOAT16},
        {f12.shaderInt8, KILN_FEATURE_INT8},
        {f11.storageBuffer16BitAccess, KILN_FEATURE_STORAGE_16BIT},
        {f11.uniformAndStorageBuffer16BitAccess, KILN_FEATURE_UNIFORM_16BIT},
        {f11.storagePushConstant16, KILN_FEATURE_PUSH_16BIT},
        {f12.storageBuffer8BitAccess, KILN_FEATURE_STORAGE_8BIT},
        {f12.uniformAndStorageBuffer8BitAccess, KILN_FEATURE_UNIFORM_8BIT},
        {f12.storagePushConstant8, KILN_FEATURE_PUSH_8BIT},
        {f12.shaderBufferInt64Atomics, KILN_FEATURE_INT64_ATOMICS},
        {f12.shaderSharedInt64Atomics, KILN_FEATURE_SHARED_INT64_ATOMICS},
        {f12.vulkanMemoryModel, KILN_FEATURE_MEMORY_MODEL},
        {f12.vulkanMemoryModelDeviceScope, KILN_FEATURE_MEMORY_MODEL_DEVICE},
        {f12.bufferDeviceAddress, KILN_FEATURE_DEVICE_ADDRESS},
        {f11.variablePointersStorageBuffer, KILN_FEATURE_VARIABLE_POINTERS_STORAGE},
        {f11.variablePointers, KILN_FEATURE_VARIABLE_POINTERS},
        {feat->shaderImageGatherExtended, KILN_FEATURE_IMAGE_GATHER_EXTENDED},
        {feat->shaderStorageImageExtendedFormats, KILN_FEATURE_STORAGE_IMAGE_EXTENDED_FORMATS},
        {feat->shaderStorageImageMultisample, KILN_FEATURE_STORAGE_IMAGE_MULTISAMPLE},
        {v13 && f13.shaderIntegerDotProduct, KILN_FEATURE_INTEGER_DOT_PRODUCT},
        {has_i64 && i64.shaderImageInt64Atomics, KILN_FEATURE_IMAGE_INT64},
    };
    c->shader_features = 0;
    for (size_t i = 0; i < sizeof have / sizeof have[0]; i++)
        c->shader_features |= have[i].on ? have[i].bit : 0;
    /* The largest buffer: one allocation holds it (maxMemoryAllocationSize,
     * Vulkan 1.1), Vulkan 1.3's maxBufferSize, and no heap smaller. */
    uint64_t most = m3.maxMemoryAllocationSize;
    if (v13 && m4.maxBufferSize)
        most = KILN_MIN(most, (uint64_t)m4.maxBufferSize);
    vkGetPhysicalDeviceMemoryProperties(d->phys, &d->memprops);
    uint64_t heap = 0;
    for (uint32_t i = 0; i < d->memprops.memoryHeapCount; i++)
        heap = KILN_MAX(heap, (uint64_t)d->memprops.memoryHeaps[i].size);
    most = KILN_MIN(most, heap);
    c->max_buffer_size = most & ~(uint64_t)3;
}

/* A compute shader that does nothing (SPIR-V 1.0, local size 1x1x1): the
 * pipeline-cache probe's program. */
static const uint32_t probe_spirv[] = {
    0x07230203, 0x00010000, 0x00070000, 0x00000005, 0x00000000, 0x00020011, 0x00000001, 0x0003000e, 0x00000000,
    0x00000001, 0x0005000f, 0x00000005, 0x00000001, 0x6e69616d, 0x00000000, 0x00060010, 0x00000001, 0x00000011,
    0x00000001, 0x00000001, 0x00000001, 0x00020013, 0x00000002, 0x00030021, 0x00000003, 0x00000002, 0x00050036,
    0x00000002, 0x00000001, 0x00000000, 0x00000003, 0x000200f8, 0x00000004, 0x000100fd, 0x00010038,
};

/* Whether the driver's pipeline caches keep compiled code: one pipeline made
 * through a fresh cache must grow the cache's data past the empty cache's
 * (its header). Lavapipe's stays at the 32-byte header; NVIDIA's grows by
 * the pipeline's code. A probe that cannot run says no: the archive then
 * keeps front ends alone, which is right on any driver. */
bool vk_probe_cache_keeps_code(struct vk_device *d)
{
    VkPipelineLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = sizeof probe_spirv,
                                     .pCode = probe_spirv};
    VkPipelineCacheCreateInfo cci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkShaderModule mod = VK_NULL_HANDLE;
    VkPipelineCache cache = VK_NULL_HANDLE;
    VkPipeline pipe = VK_NULL_HANDLE;
    size_t empty = 0, full = 0;
    uint64_t t0 = time_now_ns();
    VkResult vr;
    if ((vr = vkCreatePipelineLayout(d->device, &lci, NULL, &layout)) == VK_SUCCESS &&
        (vr = vkCreateShaderModule(d->device, &smci, NULL, &mod)) == VK_SUCCESS &&
        (vr = vkCreatePipelineCache(d->device, &cci, NULL, &cache)) == VK_SUCCESS &&
        (vr = vkGetPipelineCacheData(d->device, cache, &empty, NULL)) == VK_SUCCESS) {
        VkComputePipelineCreateInfo cpci = {
            .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
            .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                      .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                      .module = mod,
                      .pName = "main"},
            .layout = layout,
        };
        if ((vr = vkCreateComputePipelines(d->device, cache, 1, &cpci, NULL, &pipe)) == VK_SUCCESS)
            vr = vkGetPipelineCacheData(d->device, cache, &full, NULL);
    }
    if (pipe)
        vkDestroyPipeline(d->device, pipe, NULL);
    if (cache)
        vkDestroyPipelineCache(d->device, cache, NULL);
    if (mod)
        vkDestroyShaderModule(d->device, mod, NULL);
    if (layout)
        vkDestroyPipelineLayout(d->device, layout, NULL);
    if (vr != VK_SUCCESS) {
        log_warn("device: the pipeline-cache probe failed (VkResult %d): pipelines are taken as not kept in "
                 "pipeline caches, so the archive keeps front ends only", (int)vr);
        return false;
    }
    log_info("device: pipeline caches keep %s (a probe pipeline took the cache's data from %zu to %zu bytes, "
             "in %.1f ms)",
             full > empty ? "compiled code" : "no compiled code", empty, full, (double)(time_now_ns() - t0) / 1e6);
    return full > empty;
}

int vk_find_memory(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
}

kiln_result vkb_enumerate(kiln_device_info *out, uint32_t cap, uint32_t *count)
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst;
    VkResult vr = create_instance(&ici, &inst);
    if (vr == VK_ERROR_INCOMPATIBLE_DRIVER) {
        *count = 0;
        return KILN_OK;
    }
    VK_CHECK(vr, "vkCreateInstance");
    uint32_t n = 0;
    vkEnumeratePhysicalDevices(inst, &n, NULL);
    VkPhysicalDevice devs[16];
    n = KILN_MIN(n, 16u);
    vkEnumeratePhysicalDevices(inst, &n, devs);
    for (uint32_t i = 0; i < n && i < cap; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        out[i] = (kiln_device_info){.type = map_type(p.deviceType),
                                    .api_version = p.apiVersion,
                                    .vendor_id = p.vendorID,
                                    .device_id = p.deviceID};
        snprintf(out[i].name, sizeof out[i].name, "%s", p.deviceName);
    }
    *count = n;
    vkDestroyInstance(inst, NULL);
    return KILN_OK;
}
