/* SPDX-License-Identifier: MIT */
/*
 * vk.c: kiln's Vulkan backend.
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

#include <vulkan/vulkan.h>

#include "backend/backend.h"
#include "base/parse.h"

struct vk_buffer {
    struct kb_buffer base;
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;               /* mapped pointer where memory is host-visible */
};

/* An image in its one layout, GENERAL, from creation on (storage and
 * sampled use both allow it), with one view of the whole image. */
struct vk_image {
    struct kb_image base;
    VkImage image;
    VkDeviceMemory mem;
    VkImageView view;
};

/* Descriptor types by kiln_binding_kind (a pool's sizes are counted by
 * kind). */
#define KINDS (KILN_BINDING_COMBINED_IMAGE_SAMPLER + 1)
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

struct kb_bindset {
    VkDescriptorPool pool;
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
    VkCommandBuffer xfer_cb;         /* staging copies, one at a time */
    VkSemaphore timeline;
    uint32_t mem_device;             /* memory type of buffers */
    uint32_t mem_staging;            /* host-visible coherent type for staging */
    bool unified;
    VkPhysicalDeviceMemoryProperties memprops;   /* filled by fill_caps */
    VkSampler samplers[FILTERS][ADDRESSES];      /* by kiln_sampler_desc; under the context lock */
    /* vkb_fault: */
    bool fault_lost;                 /* submits and waits report VK_ERROR_DEVICE_LOST */
    uint64_t hang_from;              /* tickets from here on are never done, as kiln sees them (0: none) */
    /* Abandonment (see the top): objects left to the running work, by kind. */
    pthread_mutex_t kept_lock;       /* guards kept, kept_count, kept_cap, kept_kinds (compile workers destroy pipelines) */
    void **kept;                     /* host structs and handles, kept reachable */
    uint32_t kept_count, kept_cap;
    uint32_t kept_kinds[8];
    struct vk_device *next_abandoned;   /* graveyard link */
};

enum kept_kind {
    KEPT_BUFFER, KEPT_LAYOUT, KEPT_PIPELINE, KEPT_CACHE, KEPT_BINDSET, KEPT_CMD, KEPT_STAGING, KEPT_IMAGE, KEPT_KINDS
};
static const char *const kept_names[KEPT_KINDS] = {"buffers", "pipeline layouts", "pipelines", "pipeline caches",
                                                   "binding sets", "command buffers", "staging buffers", "images"};

static pthread_mutex_t graveyard_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards graveyard */
static struct vk_device *graveyard;   /* abandoned devices, kept reachable for the process's life */

static kiln_result vk_fail(VkResult vr, const char *file, int line, const char *what)
{
    kiln_result code = (vr == VK_ERROR_OUT_OF_HOST_MEMORY || vr == VK_ERROR_OUT_OF_DEVICE_MEMORY)
                           ? KILN_ERR_NO_MEMORY
                           : vr == VK_ERROR_DEVICE_LOST ? KILN_ERR_DEVICE_LOST
                                                        : KILN_ERR_DEVICE;
    return err_raise(code, file, line, "%s failed: VkResult %d", what, (int)vr);
}
#define VK_CHECK(expr, what)                                                                       \
    do {                                                                                           \
        VkResult vk_r_ = (expr);                                                                   \
        if (vk_r_ != VK_SUCCESS)                                                                   \
            return vk_fail(vk_r_, __FILE__, __LINE__, what);                                       \
    } while (0)

static struct vk_device *vkd(struct kb_device *d) { return (struct vk_device *)d; }

/* True when the device is lost with submitted work unfinished: objects
 * may still be in use by it. Called by the context lock's holder. */
static bool unfinished_lost(struct vk_device *d)
{
    return kb_is_lost(&d->base) && kb_ticket_done(&d->base) < d->base.submitted;
}

/* On an abandoned device, or a lost one with work unfinished: keeps host
 * struct `host` and up to two handles reachable instead of destroying them,
 * and returns true; false on a device that destroys as usual. Where the
 * list cannot grow, the object is left unreachable (still never destroyed
 * under running work). */
static bool keep(struct vk_device *d, enum kept_kind kind, void *host, void *h1, void *h2)
{
    if (!atomic_load(&d->base.abandon) && !unfinished_lost(d))
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
static void layout_free_handles(struct vk_device *d, struct kb_layout *l)
{
    if (l->layout)
        vkDestroyPipelineLayout(d->device, l->layout, NULL);
    for (uint32_t i = 0; i < l->set_count; i++)
        if (l->set_layouts[i])
            vkDestroyDescriptorSetLayout(d->device, l->set_layouts[i], NULL);
}

static void image_free_handles(struct vk_device *d, struct vk_image *m)
{
    if (m->view)
        vkDestroyImageView(d->device, m->view, NULL);
    if (m->image)
        vkDestroyImage(d->device, m->image, NULL);
    if (m->mem)
        vkFreeMemory(d->device, m->mem, NULL);
}

static void bindset_free_handles(struct vk_device *d, struct kb_bindset *s)
{
    if (s->pool)
        vkDestroyDescriptorPool(d->device, s->pool, NULL);   /* frees its sets */
    for (uint32_t i = 0; i < s->view_count; i++)
        vkDestroyBufferView(d->device, s->views[i], NULL);
}

/* Destroys what keep() kept, on a device not abandoned after all (the work
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
            layout_free_handles(d, host);
            break;
        case KEPT_PIPELINE: vkDestroyPipeline(d->device, (VkPipeline)h1, NULL); break;
        case KEPT_CACHE: vkDestroyPipelineCache(d->device, (VkPipelineCache)h1, NULL); break;
        case KEPT_BINDSET: bindset_free_handles(d, host); break;
        case KEPT_IMAGE: image_free_handles(d, host); break;
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

/* ---- instance and device choice ----------------------------------------------- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *ud)
{
    struct kb_device *dev = ud;
    (void)type;
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

static kiln_result make_instance(struct vk_device *d, bool validation)
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
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
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
    }
    return KILN_OK;
}

/* 1: the device has the extension, 0: not, -1: out of host memory (raised)
 * for the list of extensions. */
static int has_device_extension(VkPhysicalDevice p, const char *name)
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

static kiln_result pick_device(struct vk_device *d, const char *selector)
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
static void fill_caps(struct vk_device *d)
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
    VkPhysicalDeviceFeatures feat;
    vkGetPhysicalDeviceFeatures(d->phys, &feat);   /* every feature is enabled at create (vkb_create) */
    c->storage_image_read_without_format = feat.shaderStorageImageReadWithoutFormat ? 1 : 0;
    c->storage_image_write_without_format = feat.shaderStorageImageWriteWithoutFormat ? 1 : 0;
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
static bool probe_cache_keeps_code(struct vk_device *d)
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

static int find_memory(const VkPhysicalDeviceMemoryProperties *mp, uint32_t type_bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < mp->memoryTypeCount; i++)
        if ((type_bits & (1u << i)) && (mp->memoryTypes[i].propertyFlags & want) == want)
            return (int)i;
    return -1;
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
    pthread_mutex_destroy(&d->kept_lock);
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
    pthread_mutex_init(&d->kept_lock, NULL);
    kiln_result r = make_instance(d, set->validation);
    if (r == KILN_OK)
        r = pick_device(d, selector);
    if (r < 0) {
        vk_destroy(&d->base);
        return r;
    }
    fill_caps(d);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = d->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    /* Every feature the device has, so programs may use 64-bit, 16-bit and
     * 8-bit types, subgroup operations and the like where the device allows;
     * robust buffer access stays off (it costs speed; kiln checks ranges). */
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    VkPhysicalDevicePipelineCreationCacheControlFeatures fcc = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_CREATION_CACHE_CONTROL_FEATURES};
    bool v13 = d->base.caps.api_version >= VK_API_VERSION_1_3;
    int has_cc = v13 ? 0 : has_device_extension(d->phys, VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME);
    if (has_cc < 0) {
        vk_destroy(&d->base);
        return KILN_ERR_NO_MEMORY;
    }
    bool ext_cc = has_cc > 0;
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = v13 ? (void *)&f13 : ext_cc ? (void *)&fcc : NULL};
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    vkGetPhysicalDeviceFeatures2(d->phys, &features);
    features.features.robustBufferAccess = VK_FALSE;
    f13.robustImageAccess = VK_FALSE;
    d->base.cache_control = v13 ? f13.pipelineCreationCacheControl : fcc.pipelineCreationCacheControl;
    const char *dev_exts[] = {VK_EXT_PIPELINE_CREATION_CACHE_CONTROL_EXTENSION_NAME};
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .enabledExtensionCount = ext_cc ? 1 : 0,
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
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = d->queue_family,
    };
    VkSemaphoreTypeCreateInfo sti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &sti};
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    if ((vr = vkCreateCommandPool(d->device, &pci, NULL, &d->cmd_pool)) != VK_SUCCESS ||
        (vr = vkCreateSemaphore(d->device, &sci, NULL, &d->timeline)) != VK_SUCCESS ||
        (cai.commandPool = d->cmd_pool, vr = vkAllocateCommandBuffers(d->device, &cai, &d->xfer_cb)) != VK_SUCCESS) {
        vk_destroy(&d->base);
        return vk_fail(vr, __FILE__, __LINE__, "creating the queue's command pool and timeline");
    }

    const VkMemoryPropertyFlags unified = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                          VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int mem_unified = find_memory(&d->memprops, ~0u, unified);
    kiln_device_type t = d->base.caps.device_type;
    d->unified = mem_unified >= 0 && (t == KILN_DEVICE_CPU || t == KILN_DEVICE_INTEGRATED_GPU);
    if (d->unified && staging) {
        d->unified = false;   /* tests of the separate-memory path on a unified device */
        log_info("KILN_FORCE_STAGING: buffers go through staging copies");
    }
    d->base.caps.unified_memory = d->unified;
    d->base.caps.pipeline_cache_keeps_code = probe_cache_keeps_code(d);
    log_info("device: %s (%s), %s memory", d->base.caps.device_name, d->base.caps.driver_name,
             d->unified ? "unified" : "separate (staged)");
    *out = &d->base;
    return KILN_OK;
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

/* ---- buffers ------------------------------------------------------------------- */

static void xfer_begin(struct vk_device *d);
static kiln_result xfer_end_and_wait(struct vk_device *d);
static void vk_buffer_destroy(struct kb_device *dev, struct kb_buffer *buf);

static kiln_result vk_buffer_create(struct kb_device *dev, uint64_t size, uint32_t usage, struct kb_buffer **out)
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
                      : 0),
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
    int type = find_memory(&d->memprops, req.memoryTypeBits, want);
    if (type < 0) {
        vkDestroyBuffer(d->device, b->buf, NULL);
        free(b);
        return KILN_RAISE(KILN_ERR_DEVICE, "no memory type fits a buffer of %llu bytes", (unsigned long long)size);
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
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
    if (b->map) {
        memset(b->map, 0, size);
    } else {
        xfer_begin(d);
        vkCmdFillBuffer(d->xfer_cb, b->buf, 0, VK_WHOLE_SIZE, 0);
        r = xfer_end_and_wait(d);
    }
    if (r < 0) {
        vk_buffer_destroy(dev, &b->base);   /* kept, not destroyed, if the fill may still run */
        return r;
    }
    *out = &b->base;
    return KILN_OK;
}

static void vk_buffer_destroy(struct kb_device *dev, struct kb_buffer *buf)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    if (keep(d, KEPT_BUFFER, b, (void *)b->buf, (void *)b->mem))
        return;
    vkDestroyBuffer(d->device, b->buf, NULL);
    vkFreeMemory(d->device, b->mem, NULL);
    free(b);
}

/* The raw wait (backend_ops.ticket_wait): kb_ticket_wait bounds it. */
static kiln_result vk_wait_value(struct vk_device *d, uint64_t value, uint64_t timeout_ns)
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
 * *ticket; notes it as running `what` unless NULL (kb_submit notes it). */
static kiln_result queue_submit(struct vk_device *d, VkCommandBuffer cb, const char *what, uint64_t *ticket)
{
    if (d->fault_lost)
        return vk_fail(VK_ERROR_DEVICE_LOST, __FILE__, __LINE__, "vkQueueSubmit (vkb_fault)");
    uint64_t value = d->base.submitted + 1;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &value};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &cb,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &d->timeline};
    VK_CHECK(vkQueueSubmit(d->queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
    d->base.submitted = value;
    *ticket = value;
    if (what)
        kb_note_submit(&d->base, value, what);
    return KILN_OK;
}

/* The transfer command buffer: begin it with a barrier ordering it after
 * every earlier submit's shader and transfer work. */
static void xfer_begin(struct vk_device *d)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(d->xfer_cb, &bi);
    VkMemoryBarrier before = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT |
                                               VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT};
    vkCmdPipelineBarrier(d->xfer_cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &before, 0, NULL, 0, NULL);
}

/* Ends the transfer command buffer with a barrier making its writes visible
 * to the host and to shaders, submits it and waits for it. */
static kiln_result xfer_end_and_wait(struct vk_device *d)
{
    VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT |
                                              VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(d->xfer_cb, VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0,
                         NULL);
    VK_CHECK(vkEndCommandBuffer(d->xfer_cb), "vkEndCommandBuffer (transfer)");
    uint64_t value = 0;
    KILN_TRY(kb_seen(&d->base, queue_submit(d, d->xfer_cb, "a transfer (buffer fill, upload or readback)", &value)));
    return kb_ticket_wait(&d->base, value, UINT64_MAX);
}

/* A host-visible, coherent staging buffer of `size` bytes, mapped. */
struct staging {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
};

/* Frees a staging buffer, or keeps it where a transfer that did not finish
 * on a lost device may still use it. */
static void staging_free(struct vk_device *d, struct staging *st)
{
    if (keep(d, KEPT_STAGING, NULL, (void *)st->buf, (void *)st->mem))
        return;
    if (st->mem)
        vkFreeMemory(d->device, st->mem, NULL);
    vkDestroyBuffer(d->device, st->buf, NULL);
}

static kiln_result staging_make(struct vk_device *d, uint64_t size, struct staging *st)
{
    *st = (struct staging){0};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    VK_CHECK(vkCreateBuffer(d->device, &bci, NULL, &st->buf), "vkCreateBuffer (staging)");
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(d->device, st->buf, &req);
    int type = find_memory(&d->memprops, req.memoryTypeBits,
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
        staging_free(d, st);
        return vk_fail(vr, __FILE__, __LINE__, "allocating staging memory");
    }
    return KILN_OK;
}

/* Copies between a buffer and a staging buffer with one transfer submit,
 * ordered after every earlier submit, and waits for it. */
static kiln_result staged_copy(struct vk_device *d, struct vk_buffer *b, uint64_t off, void *host, uint64_t size,
                               bool upload)
{
    const uint64_t chunk_max = 64ull << 20;
    uint64_t chunk = KILN_MIN(size, chunk_max);
    struct staging st;
    KILN_TRY(staging_make(d, chunk, &st));
    kiln_result r = KILN_OK;
    for (uint64_t done = 0; r == KILN_OK && done < size; done += chunk) {
        uint64_t n = KILN_MIN(chunk, size - done);
        if (upload)
            memcpy(st.map, (char *)host + done, n);
        xfer_begin(d);
        VkBufferCopy region = {.srcOffset = upload ? 0 : off + done, .dstOffset = upload ? off + done : 0, .size = n};
        vkCmdCopyBuffer(d->xfer_cb, upload ? st.buf : b->buf, upload ? b->buf : st.buf, 1, &region);
        r = xfer_end_and_wait(d);
        if (r == KILN_OK && !upload)
            memcpy((char *)host + done, st.map, n);
    }
    staging_free(d, &st);
    return r;
}

static kiln_result vk_buffer_write(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, const void *data,
                                   uint64_t size)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    KILN_TRY(kb_ticket_wait(&d->base, d->base.submitted, UINT64_MAX));
    if (b->map) {
        memcpy((char *)b->map + off, data, size);
        return KILN_OK;
    }
    return staged_copy(d, b, off, (void *)data, size, true);
}

static kiln_result vk_buffer_read(struct kb_device *dev, struct kb_buffer *buf, uint64_t off, void *data,
                                  uint64_t size)
{
    struct vk_device *d = vkd(dev);
    struct vk_buffer *b = (struct vk_buffer *)buf;
    KILN_TRY(kb_ticket_wait(&d->base, d->base.submitted, UINT64_MAX));
    if (b->map) {
        memcpy(data, (char *)b->map + off, size);
        return KILN_OK;
    }
    return staged_copy(d, b, off, data, size, false);
}

/* ---- layouts, pipelines, binding sets ------------------------------------------- */

static kiln_result vk_layout_create(struct kb_device *dev, const kiln_program_interface *iface, struct kb_layout **out)
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
        layout_free_handles(d, l);
        free(l);
        return vk_fail(vr, __FILE__, __LINE__, "creating a pipeline layout");
    }
    *out = l;
    return KILN_OK;
}

static void vk_layout_destroy(struct kb_device *dev, struct kb_layout *l)
{
    struct vk_device *d = vkd(dev);
    if (keep(d, KEPT_LAYOUT, l, (void *)l->layout, NULL))
        return;
    layout_free_handles(d, l);
    free(l);
}

struct kb_cache {
    VkPipelineCache cache;
};

static kiln_result vk_pipeline_create(struct kb_device *dev, struct kb_layout *layout, const uint32_t *spirv,
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

static kiln_result vk_cache_create(struct kb_device *dev, const void *data, size_t len, struct kb_cache **out)
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

static kiln_result vk_cache_data(struct kb_device *dev, struct kb_cache *c, void **data, size_t *len)
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

static void vk_cache_destroy(struct kb_device *dev, struct kb_cache *c)
{
    if (keep(vkd(dev), KEPT_CACHE, c, (void *)c->cache, NULL))
        return;
    vkDestroyPipelineCache(vkd(dev)->device, c->cache, NULL);
    free(c);
}

static kiln_result vk_cache_merge(struct kb_device *dev, struct kb_cache *dst, struct kb_cache *const *srcs, uint32_t n)
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

static void vk_pipeline_destroy(struct kb_device *dev, struct kb_pipeline *p)
{
    if (keep(vkd(dev), KEPT_PIPELINE, p, (void *)p->pipe, NULL))
        return;
    vkDestroyPipeline(vkd(dev)->device, p->pipe, NULL);
    free(p);
}

/* kiln_format as VkFormat. */
static VkFormat vk_format(kiln_format f)
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
    };
    return f > KILN_FORMAT_UNDEFINED && f < KILN_FORMAT_COUNT ? map[f] : VK_FORMAT_UNDEFINED;
}

/* ---- images and samplers ---------------------------------------------------------- */

static void vk_image_destroy(struct kb_device *dev, struct kb_image *img);

static uint32_t vk_image_usage(struct kb_device *dev, kiln_format format, uint32_t dims, bool *linear)
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
            vkGetPhysicalDeviceImageFormatProperties(d->phys, vf, dims == 3 ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D,
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
        .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
    };
    vkCmdPipelineBarrier(cb, src, dst, 0, 0, NULL, 0, NULL, 1, &b);
}

/* Shader and transfer work that may touch an image around a transfer. */
#define IMAGE_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define IMAGE_ACCESS                                                                               \
    (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)

static kiln_result vk_image_create(struct kb_device *dev, const struct kb_image *in, struct kb_image **out)
{
    struct vk_device *d = vkd(dev);
    struct vk_image *m = mem_calloc(1, sizeof *m);
    if (!m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for image '%s's object", in->label);
    m->base = *in;
    bool three = in->dims == 3;
    VkImageCreateInfo ici = {
        .sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
        .imageType = three ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D,
        .format = vk_format(in->format),
        .extent = {in->width, in->height, in->depth},
        .mipLevels = 1,
        .arrayLayers = 1,
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
        int type = find_memory(&d->memprops, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
        VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                    .allocationSize = req.size,
                                    .memoryTypeIndex = (uint32_t)type};
        what = "allocating image memory";
        vr = type < 0 ? VK_ERROR_OUT_OF_DEVICE_MEMORY : vkAllocateMemory(d->device, &mai, NULL, &m->mem);
    }
    if (vr == VK_SUCCESS)
        vr = vkBindImageMemory(d->device, m->image, m->mem, 0);
    if (vr == VK_SUCCESS) {
        VkImageViewCreateInfo vci = {
            .sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
            .image = m->image,
            .viewType = three ? VK_IMAGE_VIEW_TYPE_3D : VK_IMAGE_VIEW_TYPE_2D,
            .format = ici.format,
            .subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1},
        };
        what = "vkCreateImageView";
        vr = vkCreateImageView(d->device, &vci, NULL, &m->view);
    }
    if (vr != VK_SUCCESS) {
        image_free_handles(d, m);
        free(m);
        return vk_fail(vr, __FILE__, __LINE__, what);
    }
    /* Texels zero (kiln.h promises it; Vulkan does not), then into its one
     * layout: the transfer's closing barrier makes the clear visible to
     * shaders. */
    xfer_begin(d);
    image_barrier(d->xfer_cb, m->image, VK_IMAGE_LAYOUT_UNDEFINED, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                  VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
    VkClearColorValue zero = {{0}};
    VkImageSubresourceRange all = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdClearColorImage(d->xfer_cb, m->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, &zero, 1, &all);
    image_barrier(d->xfer_cb, m->image, VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, VK_IMAGE_LAYOUT_GENERAL,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, IMAGE_STAGES, IMAGE_ACCESS);
    kiln_result r = xfer_end_and_wait(d);
    if (r < 0) {
        vk_image_destroy(dev, &m->base);   /* kept, not destroyed, if the clear may still run */
        return r;
    }
    *out = &m->base;
    return KILN_OK;
}

static void vk_image_destroy(struct kb_device *dev, struct kb_image *img)
{
    struct vk_device *d = vkd(dev);
    struct vk_image *m = (struct vk_image *)img;
    if (keep(d, KEPT_IMAGE, m, (void *)m->image, (void *)m->mem))
        return;
    image_free_handles(d, m);
    free(m);
}

/* Copies every texel between an image and the host through a staging
 * buffer, with one transfer submit ordered after every earlier submit; the
 * image is in a transfer layout for the copy alone and back in GENERAL
 * when the submit ends. */
static kiln_result image_copy(struct vk_device *d, struct vk_image *m, void *host, bool upload)
{
    KILN_TRY(kb_ticket_wait(&d->base, d->base.submitted, UINT64_MAX));
    struct staging st;
    KILN_TRY(staging_make(d, m->base.bytes, &st));
    if (upload)
        memcpy(st.map, host, (size_t)m->base.bytes);
    xfer_begin(d);
    VkBufferImageCopy region = {
        .imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1},
        .imageExtent = {m->base.width, m->base.height, m->base.depth},
    };
    VkImageLayout copy = upload ? VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL : VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    image_barrier(d->xfer_cb, m->image, VK_IMAGE_LAYOUT_GENERAL, copy, IMAGE_STAGES, IMAGE_ACCESS,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, upload ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT);
    if (upload)
        vkCmdCopyBufferToImage(d->xfer_cb, st.buf, m->image, copy, 1, &region);
    else
        vkCmdCopyImageToBuffer(d->xfer_cb, m->image, copy, st.buf, 1, &region);
    image_barrier(d->xfer_cb, m->image, copy, VK_IMAGE_LAYOUT_GENERAL, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  upload ? VK_ACCESS_TRANSFER_WRITE_BIT : VK_ACCESS_TRANSFER_READ_BIT, IMAGE_STAGES, IMAGE_ACCESS);
    kiln_result r = xfer_end_and_wait(d);
    if (r == KILN_OK && !upload)
        memcpy(host, st.map, (size_t)m->base.bytes);
    staging_free(d, &st);
    return r;
}

static kiln_result vk_image_write(struct kb_device *dev, struct kb_image *img, const void *data)
{
    return image_copy(vkd(dev), (struct vk_image *)img, (void *)data, true);
}

static kiln_result vk_image_read(struct kb_device *dev, struct kb_image *img, void *data)
{
    return image_copy(vkd(dev), (struct vk_image *)img, data, false);
}

/* The device's sampler for a filled-in desc, made on first use. */
static kiln_result sampler_for(struct vk_device *d, kiln_sampler_desc sd, VkSampler *out)
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
            .mipmapMode = VK_SAMPLER_MIPMAP_MODE_NEAREST,
            .addressModeU = modes[sd.address],
            .addressModeV = modes[sd.address],
            .addressModeW = modes[sd.address],
            .maxLod = 0.0f,
            .borderColor = VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK,
        };
        VK_CHECK(vkCreateSampler(d->device, &ci, NULL, s), "vkCreateSampler");
    }
    *out = *s;
    return KILN_OK;
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

static kiln_result vk_bindset_create(struct kb_device *dev, struct kb_layout *layout, const struct kb_binding *b,
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
        bindset_free_handles(d, s);
        free(s);
        return vk_fail(vr, __FILE__, __LINE__, "allocating descriptor sets");
    }
    s->set_count = layout->set_count;
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
                bindset_free_handles(d, s);
                free(s);
                return r;
            }
            writes[i].pTexelBufferView = &s->views[s->view_count++];
        } else if (image) {
            images[i] = (VkDescriptorImageInfo){.imageLayout = VK_IMAGE_LAYOUT_GENERAL};
            if (b[i].image)
                images[i].imageView = ((struct vk_image *)b[i].image)->view;
            kiln_result r = KILN_OK;
            if (b[i].kind == KILN_BINDING_SAMPLER || b[i].kind == KILN_BINDING_COMBINED_IMAGE_SAMPLER)
                r = sampler_for(d, b[i].sampler, &images[i].sampler);
            if (r < 0) {
                bindset_free_handles(d, s);
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

static void vk_bindset_destroy(struct kb_device *dev, struct kb_bindset *s)
{
    if (keep(vkd(dev), KEPT_BINDSET, s, (void *)s->pool, NULL))
        return;
    bindset_free_handles(vkd(dev), s);
    free(s);
}

/* ---- commands and submits --------------------------------------------------------- */

static kiln_result vk_cmd_create(struct kb_device *dev, struct kb_cmd **out)
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

static void vk_cmd_destroy(struct kb_device *dev, struct kb_cmd *c)
{
    struct vk_device *d = vkd(dev);
    if (keep(d, KEPT_CMD, c, (void *)c->cb, (void *)c->pool))
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

static kiln_result vk_cmd_times(struct kb_device *dev, struct kb_cmd *c, uint64_t *ns, uint32_t cap, uint32_t *count)
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

static kiln_result vk_cmd_record(struct kb_device *dev, struct kb_cmd *c, const struct kb_step *steps, uint32_t n)
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

static kiln_result vk_submit(struct kb_device *dev, struct kb_cmd *c, uint64_t *ticket)
{
    return queue_submit(vkd(dev), c->cb, NULL, ticket);
}

static uint64_t vk_ticket_done(struct kb_device *dev)
{
    struct vk_device *d = vkd(dev);
    uint64_t v = 0;
    if (vkGetSemaphoreCounterValue(d->device, d->timeline, &v) != VK_SUCCESS)
        return 0;
    if (d->hang_from && v >= d->hang_from)
        v = d->hang_from - 1;   /* vkb_fault: the hung submits never finish, as kiln sees them */
    return v;
}

static kiln_result vk_ticket_wait(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns)
{
    return vk_wait_value(vkd(dev), ticket, timeout_ns);
}

static const struct backend_ops vk_ops = {
    .name = "vulkan",
    .layout_follows_signature = true,
    .destroy = vk_destroy,
    .buffer_create = vk_buffer_create,
    .buffer_destroy = vk_buffer_destroy,
    .buffer_write = vk_buffer_write,
    .buffer_read = vk_buffer_read,
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
