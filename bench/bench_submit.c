/* SPDX-License-Identifier: MIT */
/*
 * bench_submit.c: what a kiln scheme submit costs next to hand-written Vulkan.
 *
 * A scheme of N (default 1000) one-workgroup dispatch nodes runs three ways,
 * each iteration being a submit and a wait for it, end to end:
 *   hand   a hand-written Vulkan loop on its own VkDevice (same physical
 *          device as kiln's): vkQueueSubmit of one pre-recorded command
 *          buffer signalling timeline value v, then vkWaitSemaphores(v);
 *   clean  kiln_scheme_submit of an unchanged scheme (a replay) and
 *          kiln_ticket_wait;
 *   param  kiln_node_set_param on one node with a new value (a params-only
 *          re-record of the whole scheme), then submit and wait.
 * It prints the median per-iteration times, clean/hand (target <= 1.10x) and
 * param/clean. The time of the submit call alone (what the host thread pays
 * before it could go on) is printed beside the end-to-end time.
 *
 * Fairness: the hand-written command buffer holds exactly what kiln records
 * (src/backend/vk/vk.c, vk_cmd_record): the leading barrier, the pipeline
 * bound once, then per node its own descriptor set, the 32-byte push
 * constants and the dispatch, then the trailing barrier; it is recorded with
 * SIMULTANEOUS_USE as kiln's are. Each node binds its own disjoint range of
 * one buffer (offsets at minStorageBufferOffsetAlignment), so kiln places no
 * barrier between nodes and the two command buffers match command for
 * command. Both sides compile the same GLSL (kiln's param prelude written
 * out by hand for the hand side) with the same shaderc options; the SPIR-V
 * sizes are printed to show it. Validation is forced off for kiln, and the
 * hand side never enables it.
 *
 * Noise: the machine may be shared, and its load comes in bursts. After a
 * warm-up the variants take turns in short blocks (BLOCK timed iterations,
 * the order rotating), so a burst hits all three alike; each figure is the
 * median over every timed iteration. Each block starts with one untimed
 * iteration: switching between kiln's VkDevice and the hand-written one
 * wakes the other device's idle driver threads, and without it the variant
 * that follows its own device more often (a kiln one) would look faster.
 * Rounds group the blocks only to print the spread of per-round ratios.
 *
 * Checks: at the end both buffers are read back and compared with the sums
 * the shader should have made, and kiln's scheme stats must show a replay
 * for every clean submit, a params-only record for every param one, and no
 * barriers; a side that skipped or added work fails the run.
 *
 * Exit status: 0 whether or not the target is met (a miss prints MISSED);
 * 1 on errors.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include "kiln.h"

#define BENCH_NAME "bench_submit"
#include "bench.h"

#define TARGET_RATIO 1.10
#define AUTO_SECONDS 25.0   /* measured time aimed at when --iters is not given */
#define BLOCK 4             /* timed iterations of one variant in a row */

/* ---- errors and time ---------------------------------------------------------- */

/* ---- the shader ------------------------------------------------------------------ */

/* kiln's side: kiln injects the push-constant block and kiln_param(). */
static const char kiln_source[] = "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(std430, binding = 0) buffer B { uint d[]; };\n"
                                  "void main() { d[kiln_param(0)] += kiln_param(1); }\n";

/* The hand side: the same shader with kiln's prelude written out. */
static const char hand_source[] = "#version 450\n"
                                  "layout(local_size_x = 1) in;\n"
                                  "layout(push_constant) uniform kiln_params_block {\n"
                                  "    uint uw0; uint uw1; uint uw2; uint uw3; uint uw4; uint uw5; uint uw6; uint uw7;\n"
                                  "} kiln_pc;\n"
                                  "layout(std430, binding = 0) buffer B { uint d[]; };\n"
                                  "void main() { d[kiln_pc.uw0] += kiln_pc.uw1; }\n";

/* The options kiln's compile uses (src/program/program.c). The result is
 * the caller's to release. */
static shaderc_compilation_result_t compile_hand(void)
{
    shaderc_compiler_t compiler = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (!compiler || !opts)
        die("shaderc initialization failed");
    shaderc_compile_options_set_source_language(opts, shaderc_source_language_glsl);
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_2);
    shaderc_compile_options_set_optimization_level(opts, shaderc_optimization_level_performance);
    shaderc_compilation_result_t res = shaderc_compile_into_spv(compiler, hand_source, sizeof hand_source - 1,
                                                                shaderc_compute_shader, "hand.comp", "main", opts);
    if (!res || shaderc_result_get_compilation_status(res) != shaderc_compilation_status_success)
        die("the hand-written shader failed to compile: %s", res ? shaderc_result_get_error_message(res) : "no result");
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(compiler);
    return res;
}

/* ---- the hand-written Vulkan side ------------------------------------------------- */

struct hand {
    VkInstance instance;
    VkPhysicalDevice phys;
    VkDevice device;
    VkQueue queue;
    VkBuffer buf;
    VkDeviceMemory mem;
    uint32_t *map;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkDescriptorPool pool;
    VkDescriptorSet *sets;
    VkCommandPool cmd_pool;
    VkCommandBuffer cb;
    VkSemaphore timeline;
    uint64_t value;          /* the last value submitted */
    uint32_t spirv_words;
    int device_local;        /* 1: the buffer is device-local memory */
};

static void mem_barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags src_access,
                        VkPipelineStageFlags dst, VkAccessFlags dst_access)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = src_access,
                          .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

/* Sets up a device on the physical device named `device_name` and records
 * the command buffer: node i adds params[i][1] to word 0 of its range. */
static void hand_init(struct hand *h, const char *device_name, uint32_t nodes, uint64_t stride,
                      const uint32_t (*params)[KILN_PARAM_WORDS])
{
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "bench_submit",
                             .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VCHECK(vkCreateInstance(&ici, NULL, &h->instance));
    uint32_t family;
    h->phys = bench_find_device(h->instance, device_name, &family);
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .timelineSemaphore = VK_TRUE};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f12,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qci};
    VCHECK(vkCreateDevice(h->phys, &dci, NULL, &h->device));
    vkGetDeviceQueue(h->device, family, 0, &h->queue);

    /* The buffer: device-local host-visible coherent memory, kiln's choice on
     * a unified device; elsewhere host-visible memory (said in the output). */
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = stride * nodes,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VCHECK(vkCreateBuffer(h->device, &bci, NULL, &h->buf));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(h->device, h->buf, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(h->phys, &mp);
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags wants[2] = {VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host, host};
    uint32_t type = UINT32_MAX;
    for (int w = 0; w < 2 && type == UINT32_MAX; w++)
        for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
            if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & wants[w]) == wants[w])
                type = i;
    if (type == UINT32_MAX)
        die("device '%s' has no host-visible coherent memory", device_name);
    h->device_local = (mp.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    VCHECK(vkAllocateMemory(h->device, &mai, NULL, &h->mem));
    VCHECK(vkBindBufferMemory(h->device, h->buf, h->mem, 0));
    void *map;
    VCHECK(vkMapMemory(h->device, h->mem, 0, VK_WHOLE_SIZE, 0, &map));
    h->map = map;
    memset(h->map, 0, stride * nodes);

    /* Layout, pipeline, one descriptor set per node. */
    VkDescriptorSetLayoutBinding b = {.binding = 0,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .descriptorCount = 1,
                                      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dslci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                             .bindingCount = 1,
                                             .pBindings = &b};
    VCHECK(vkCreateDescriptorSetLayout(h->device, &dslci, NULL, &h->set_layout));
    VkPushConstantRange pcr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = 4 * KILN_PARAM_WORDS};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &h->set_layout,
                                       .pushConstantRangeCount = 1,
                                       .pPushConstantRanges = &pcr};
    VCHECK(vkCreatePipelineLayout(h->device, &plci, NULL, &h->layout));

    shaderc_compilation_result_t spv = compile_hand();
    h->spirv_words = (uint32_t)(shaderc_result_get_length(spv) / 4);
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = shaderc_result_get_length(spv),
                                     .pCode = (const uint32_t *)shaderc_result_get_bytes(spv)};
    VkShaderModule mod;
    VCHECK(vkCreateShaderModule(h->device, &smci, NULL, &mod));
    shaderc_result_release(spv);
    VkComputePipelineCreateInfo cpci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = mod,
                  .pName = "main"},
        .layout = h->layout,
    };
    VCHECK(vkCreateComputePipelines(h->device, VK_NULL_HANDLE, 1, &cpci, NULL, &h->pipe));
    vkDestroyShaderModule(h->device, mod, NULL);

    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, nodes};
    VkDescriptorPoolCreateInfo dpci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                       .maxSets = nodes,
                                       .poolSizeCount = 1,
                                       .pPoolSizes = &ps};
    VCHECK(vkCreateDescriptorPool(h->device, &dpci, NULL, &h->pool));
    h->sets = calloc(nodes, sizeof *h->sets);
    if (!h->sets)
        die("out of memory");
    for (uint32_t i = 0; i < nodes; i++) {
        VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = h->pool,
                                          .descriptorSetCount = 1,
                                          .pSetLayouts = &h->set_layout};
        VCHECK(vkAllocateDescriptorSets(h->device, &ai, &h->sets[i]));
        VkDescriptorBufferInfo info = {h->buf, stride * i, stride};
        VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                  .dstSet = h->sets[i],
                                  .dstBinding = 0,
                                  .descriptorCount = 1,
                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = &info};
        vkUpdateDescriptorSets(h->device, 1, &w, 0, NULL);
    }

    /* The command buffer, command for command what vk_cmd_record makes. */
    VkCommandPoolCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = family};
    VCHECK(vkCreateCommandPool(h->device, &cpi, NULL, &h->cmd_pool));
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = h->cmd_pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    VCHECK(vkAllocateCommandBuffers(h->device, &cai, &h->cb));
    VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
    VCHECK(vkBeginCommandBuffer(h->cb, &cbi));
    const VkAccessFlags rw = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    mem_barrier(h->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, rw);
    vkCmdBindPipeline(h->cb, VK_PIPELINE_BIND_POINT_COMPUTE, h->pipe);
    for (uint32_t i = 0; i < nodes; i++) {
        vkCmdBindDescriptorSets(h->cb, VK_PIPELINE_BIND_POINT_COMPUTE, h->layout, 0, 1, &h->sets[i], 0, NULL);
        vkCmdPushConstants(h->cb, h->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4 * KILN_PARAM_WORDS, params[i]);
        vkCmdDispatch(h->cb, 1, 1, 1);
    }
    mem_barrier(h->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    VCHECK(vkEndCommandBuffer(h->cb));

    VkSemaphoreTypeCreateInfo sti = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &sti};
    VCHECK(vkCreateSemaphore(h->device, &sci, NULL, &h->timeline));
}

static void hand_finish(struct hand *h)
{
    vkDeviceWaitIdle(h->device);
    vkDestroySemaphore(h->device, h->timeline, NULL);
    vkDestroyCommandPool(h->device, h->cmd_pool, NULL);
    vkDestroyDescriptorPool(h->device, h->pool, NULL);
    vkDestroyPipeline(h->device, h->pipe, NULL);
    vkDestroyPipelineLayout(h->device, h->layout, NULL);
    vkDestroyDescriptorSetLayout(h->device, h->set_layout, NULL);
    vkUnmapMemory(h->device, h->mem);
    vkDestroyBuffer(h->device, h->buf, NULL);
    vkFreeMemory(h->device, h->mem, NULL);
    vkDestroyDevice(h->device, NULL);
    vkDestroyInstance(h->instance, NULL);
    free(h->sets);
}

/* ---- the kiln side ------------------------------------------------------------- */

struct kside {
    kiln_context ctx;
    kiln_caps caps;
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    kiln_node *nodes;
    uint32_t spirv_words;
};

static void kiln_init(struct kside *k, uint32_t nodes, uint64_t *stride, uint32_t (**params)[KILN_PARAM_WORDS])
{
    /* Specialization off: this measures recording and replay; its own
     * overhead is measured by bench_spec. */
    KCHECK(kiln_context_create(&(kiln_context_desc){.validation = -1, .specialization = -1}, &k->ctx));
    KCHECK(kiln_context_caps(k->ctx, &k->caps));
    if (k->caps.validation)
        die("the validation layer is on; timings would be meaningless");
    uint64_t align = k->caps.min_storage_buffer_offset_alignment ? k->caps.min_storage_buffer_offset_alignment : 1;
    *stride = (16 + align - 1) / align * align;

    KCHECK(kiln_program_create(k->ctx, &(kiln_program_desc){.source = kiln_source, .name = "bench.comp"}, &k->prog));
    if (kiln_program_wait(k->ctx, k->prog) != KILN_OK) {
        char log[2048] = "";
        if (kiln_program_log(k->ctx, k->prog, log, sizeof log, NULL) != KILN_OK)
            snprintf(log, sizeof log, "(no log: %s)", kiln_last_error());
        die("the kiln program failed to compile: %s", log);
    }
    kiln_program_interface iface;
    KCHECK(kiln_program_interface_get(k->ctx, k->prog, &iface));
    k->spirv_words = iface.spirv_words;

    KCHECK(kiln_buffer_create(k->ctx, &(kiln_buffer_desc){.size = *stride * nodes, .label = "bench"}, &k->buf));
    void *zero = calloc(nodes, *stride);
    if (!zero)
        die("out of memory");
    KCHECK(kiln_buffer_upload(k->ctx, k->buf, 0, zero, *stride * nodes));
    free(zero);

    KCHECK(kiln_scheme_create(k->ctx, &(kiln_scheme_desc){.label = "bench"}, &k->scheme));
    k->nodes = calloc(nodes, sizeof *k->nodes);
    *params = calloc(nodes, sizeof **params);
    if (!k->nodes || !*params)
        die("out of memory");
    for (uint32_t i = 0; i < nodes; i++) {
        (*params)[i][0] = 0;          /* word index within the node's range */
        (*params)[i][1] = 1 + i % 7;  /* the addend */
        kiln_binding b = {.binding = 0, .buffer = k->buf, .offset = *stride * i, .size = *stride};
        kiln_node_desc nd = {.program = k->prog, .bindings = &b, .binding_count = 1, .groups = {1, 1, 1},
                             .params = (*params)[i], .param_count = KILN_PARAM_WORDS};
        KCHECK(kiln_scheme_add_node(k->ctx, k->scheme, &nd, &k->nodes[i]));
    }
}

/* ---- one iteration of each variant ------------------------------------------------ */

enum variant { V_HAND, V_CLEAN, V_PARAM, V_COUNT };
static const char *const variant_name[V_COUNT] = {"hand-written loop", "kiln clean submit",
                                                  "kiln submit after set_param"};

struct run {
    struct hand hand;
    struct kside k;
    uint32_t nodes;
    uint32_t param_node;      /* the node whose param the param variant changes */
    uint32_t param_value;     /* its current addend */
    uint64_t count[V_COUNT];  /* iterations run of each variant */
    uint64_t hand_submits;    /* for the final check */
    uint64_t *kiln_added;     /* per node: what kiln's submits added to its word */
};

/* One submit and wait; *submit_ns receives the time of the submit call
 * (with set_param for V_PARAM), the return value the whole iteration. */
static uint64_t iterate(struct run *r, enum variant v, uint64_t *submit_ns)
{
    uint64_t t0 = now_ns(), t1;
    r->count[v]++;
    if (v == V_HAND) {
        uint64_t value = ++r->hand.value;
        VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                            .signalSemaphoreValueCount = 1,
                                            .pSignalSemaphoreValues = &value};
        VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .pNext = &ts,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &r->hand.cb,
                           .signalSemaphoreCount = 1,
                           .pSignalSemaphores = &r->hand.timeline};
        VCHECK(vkQueueSubmit(r->hand.queue, 1, &si, VK_NULL_HANDLE));
        t1 = now_ns();
        VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                  .semaphoreCount = 1,
                                  .pSemaphores = &r->hand.timeline,
                                  .pValues = &value};
        VCHECK(vkWaitSemaphores(r->hand.device, &wi, UINT64_MAX));
        r->hand_submits++;
    } else {
        if (v == V_PARAM) {
            r->param_value = r->param_value == 1 ? 2 : 1;
            KCHECK(kiln_node_set_param(r->k.ctx, r->k.nodes[r->param_node], 1, r->param_value));
        }
        kiln_ticket t;
        KCHECK(kiln_scheme_submit(r->k.ctx, r->k.scheme, &t));
        t1 = now_ns();
        KCHECK(kiln_ticket_wait(r->k.ctx, t, UINT64_MAX));
        for (uint32_t i = 0; i < r->nodes; i++)
            r->kiln_added[i] += i == r->param_node ? r->param_value : 1 + i % 7;
    }
    uint64_t t2 = now_ns();
    *submit_ns = t1 - t0;
    return t2 - t0;
}

/* ---- checks --------------------------------------------------------------------- */

static void check_results(struct run *r, uint64_t stride)
{
    uint32_t words = (uint32_t)(stride / 4);
    uint32_t *kb = malloc(stride * r->nodes);
    if (!kb)
        die("out of memory");
    KCHECK(kiln_buffer_readback(r->k.ctx, r->k.buf, 0, kb, stride * r->nodes));
    for (uint32_t i = 0; i < r->nodes; i++) {
        uint32_t want_k = (uint32_t)r->kiln_added[i];
        uint32_t want_h = (uint32_t)(r->hand_submits * (1 + i % 7));
        if (kb[i * words] != want_k)
            die("kiln node %u: word is %u, expected %u", i, kb[i * words], want_k);
        if (r->hand.map[i * words] != want_h)
            die("hand-written node %u: word is %u, expected %u", i, r->hand.map[i * words], want_h);
    }
    free(kb);
}

/* ---- main -------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_submit [--nodes N] [--iters M] [--rounds R]\n"
               "  --nodes N   dispatch nodes in the scheme (default 1000)\n"
               "  --iters M   timed iterations of each variant per round (default: chosen so\n"
               "              the measured part takes about %.0f s)\n"
               "  --rounds R  rounds (default 15)\n",
               AUTO_SECONDS);
}

int main(int argc, char **argv)
{
    uint32_t nodes = 1000, iters = 0, rounds = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = (uint32_t)bench_parse_num("--nodes", i + 1 < argc ? argv[++i] : NULL, 1, 1000000);
        else if (!strcmp(argv[i], "--iters"))
            iters = (uint32_t)bench_parse_num("--iters", i + 1 < argc ? argv[++i] : NULL, 1, 1000000);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = (uint32_t)bench_parse_num("--rounds", i + 1 < argc ? argv[++i] : NULL, 1, 1000000);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            die("unknown argument '%s'", argv[i]);
        }
    }

    struct run r = {.nodes = nodes, .param_node = nodes / 2, .param_value = 1 + (nodes / 2) % 7};
    uint64_t stride;
    uint32_t(*params)[KILN_PARAM_WORDS];
    kiln_init(&r.k, nodes, &stride, &params);
    hand_init(&r.hand, r.k.caps.device_name, nodes, stride, (const uint32_t(*)[KILN_PARAM_WORDS])params);
    free(params);
    r.kiln_added = calloc(nodes, sizeof *r.kiln_added);
    if (!r.kiln_added)
        die("out of memory");

    printf("bench_submit: %u nodes of 1 workgroup, each on its own %" PRIu64 "-byte range\n", nodes, stride);
    printf("device: %s (%s; %s)\n", r.k.caps.device_name, r.k.caps.driver_name, r.k.caps.driver_info);
    printf("SPIR-V words: kiln %u, hand-written %u; validation off\n", r.k.spirv_words, r.hand.spirv_words);
    if (!r.hand.device_local || !r.k.caps.unified_memory)
        printf("note: buffers are in different memory (kiln: %s, hand-written: %s); the comparison is rough\n",
               r.k.caps.unified_memory ? "unified" : "device-local, staged",
               r.hand.device_local ? "device-local host-visible" : "host memory");

    /* Warm-up, at least 3 of each and about a second: the first kiln submit
     * records, and the drivers' threads and caches settle. Its timings also
     * size --iters when not given. */
    uint64_t warm_ns[V_COUNT] = {0}, dummy;
    uint64_t warm_start = now_ns();
    int warm = 0;
    while (warm < 3 || (warm < 50 && now_ns() - warm_start < 1000000000u)) {
        for (int v = 0; v < V_COUNT; v++)
            warm_ns[v] += iterate(&r, (enum variant)v, &dummy);
        warm++;
    }
    if (!iters) {
        /* Each block of BLOCK timed iterations has one untimed one before it. */
        double per_iter_s = (double)(warm_ns[V_HAND] + warm_ns[V_CLEAN] + warm_ns[V_PARAM]) / warm / 1e9;
        double m = AUTO_SECONDS / (per_iter_s * rounds * (BLOCK + 1) / BLOCK);
        iters = m < 5 ? 5 : m > 2000 ? 2000 : (uint32_t)m;
    }
    printf("%u rounds x %u timed iterations of each variant, interleaved in blocks of %d\n\n", rounds, iters, BLOCK);
    fflush(stdout);

    kiln_scheme_stats before;
    KCHECK(kiln_scheme_stats_get(r.k.ctx, r.k.scheme, &before));
    uint64_t count_before[V_COUNT];
    memcpy(count_before, r.count, sizeof count_before);

    size_t total = (size_t)rounds * iters;
    uint64_t *end_to_end[V_COUNT], *submit_only[V_COUNT];
    for (int v = 0; v < V_COUNT; v++) {
        end_to_end[v] = malloc(total * sizeof(uint64_t));
        submit_only[v] = malloc(total * sizeof(uint64_t));
        if (!end_to_end[v] || !submit_only[v])
            die("out of memory");
    }
    uint64_t t_start = now_ns();
    size_t n = 0;
    for (uint32_t round = 0; round < rounds; round++) {
        for (uint32_t done = 0; done < iters; done += BLOCK) {
            uint32_t b = iters - done < BLOCK ? iters - done : BLOCK;
            for (uint32_t k = 0; k < V_COUNT; k++) {
                enum variant v = (enum variant)((round + done / BLOCK + k) % V_COUNT);
                (void)iterate(&r, v, &dummy);   /* settles the switch from the other device */
                for (uint32_t j = 0; j < b; j++)
                    end_to_end[v][n + done + j] = iterate(&r, v, &submit_only[v][n + done + j]);
            }
        }
        n += iters;
    }
    double measured_s = (double)(now_ns() - t_start) / 1e9;

    kiln_scheme_stats after;
    KCHECK(kiln_scheme_stats_get(r.k.ctx, r.k.scheme, &after));
    check_results(&r, stride);

    /* Per-round medians (sorting each round's slice leaves the overall
     * median as it was), to show how far the rounds spread. */
    printf("per-round clean/hand:");
    for (uint32_t round = 0; round < rounds; round++) {
        size_t at = (size_t)round * iters;
        printf(" %.2f", bench_median(end_to_end[V_CLEAN] + at, iters) / bench_median(end_to_end[V_HAND] + at, iters));
    }
    printf("\nper-round param/clean:");
    for (uint32_t round = 0; round < rounds; round++) {
        size_t at = (size_t)round * iters;
        printf(" %.2f", bench_median(end_to_end[V_PARAM] + at, iters) / bench_median(end_to_end[V_CLEAN] + at, iters));
    }
    printf("\n\n");

    double e2e[V_COUNT], sub[V_COUNT];
    for (int v = 0; v < V_COUNT; v++) {
        e2e[v] = bench_median(end_to_end[v], total) / 1e3;
        sub[v] = bench_median(submit_only[v], total) / 1e3;
    }
    printf("median per iteration     submit+wait    submit call    (per node)\n");
    for (int v = 0; v < V_COUNT; v++)
        printf("  %-28s %9.1f us   %9.1f us   %6.3f us\n", variant_name[v], e2e[v], sub[v], e2e[v] / nodes);
    printf("  (submit call: vkQueueSubmit, kiln_scheme_submit, or kiln_node_set_param + kiln_scheme_submit)\n");
    printf("kiln records during the run: %" PRIu64 " replays, %" PRIu64 " params-only records, %" PRIu64
           " full records (expected %" PRIu64 ", %" PRIu64 ", 0)\n",
           after.replays - before.replays, after.records_params - before.records_params,
           after.records_full - before.records_full, r.count[V_CLEAN] - count_before[V_CLEAN],
           r.count[V_PARAM] - count_before[V_PARAM]);
    printf("kiln scheme: %" PRIu64 " nodes, %" PRIu64 " barriers between nodes (expected 0), %" PRIu64
           " command buffers\n",
           after.nodes, after.barriers, after.command_buffers);
    printf("results checked: %u node words on each side match the expected sums\n", nodes);
    printf("measured part: %.1f s\n\n", measured_s);

    double clean_ratio = e2e[V_CLEAN] / e2e[V_HAND];
    double param_ratio = e2e[V_PARAM] / e2e[V_CLEAN];
    printf("submit call alone, kiln clean / hand-written: %.2fx (%.1f us vs %.1f us)\n", sub[V_CLEAN] / sub[V_HAND],
           sub[V_CLEAN], sub[V_HAND]);
    printf("clean submit / hand-written loop: %.2fx (target <= %.2fx) %s\n", clean_ratio, TARGET_RATIO,
           clean_ratio <= TARGET_RATIO ? "met" : "MISSED");
    printf("submit after set_param / clean submit: %.2fx\n", param_ratio);
    if (total < 30)
        printf("(only %zu timed iterations of each variant: the ratios are rough)\n", total);

    for (int v = 0; v < V_COUNT; v++) {
        free(end_to_end[v]);
        free(submit_only[v]);
    }
    free(r.kiln_added);
    hand_finish(&r.hand);
    free(r.k.nodes);
    (void)kiln_context_destroy(r.k.ctx);
    return 0;
}
