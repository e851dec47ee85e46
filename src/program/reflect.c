/*
 * reflect.c: a program's interface read from its SPIR-V with SPIRV-Cross's
 * C API (libspirv-cross-c-shared): descriptor bindings with kind and
 * declared access, push-constant size and workgroup size.
 *
 * Access is what the source declares: a `readonly` block reads, a
 * `writeonly` block writes, any other block does both. kiln derives barriers
 * from it, so declaring `readonly` where it holds spares barriers.
 *
 * kiln binds buffers in descriptor set 0; images, samplers and other sets
 * are refused with a message naming the resource.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv_cross/spirv_cross_c.h>

#include "program.h"

static int cmp_binding(const void *a, const void *b)
{
    const kiln_binding_info *x = a, *y = b;
    if (x->set != y->set)
        return x->set < y->set ? -1 : 1;
    return x->binding < y->binding ? -1 : x->binding > y->binding;
}

static void on_spvc_error(void *ud, const char *msg)
{
    snprintf(ud, 256, "%s", msg);
}

static const char *resource_kind_name(spvc_resource_type t)
{
    switch (t) {
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE: return "storage image";
    case SPVC_RESOURCE_TYPE_SAMPLED_IMAGE: return "sampled image";
    case SPVC_RESOURCE_TYPE_SEPARATE_IMAGE: return "texture";
    case SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS: return "sampler";
    case SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE: return "acceleration structure";
    case SPVC_RESOURCE_TYPE_ATOMIC_COUNTER: return "atomic counter";
    default: return "resource";
    }
}

kiln_result prog_reflect(const uint32_t *spirv, size_t words, bool own_push, kiln_program_interface *out)
{
    *out = (kiln_program_interface){.spirv_words = (uint32_t)words, .own_push_block = own_push ? 1 : 0,
                                    .param_words = own_push ? 0 : KILN_PARAM_WORDS};
    char spvc_err[256] = "";
    spvc_context ctx = NULL;
    if (spvc_context_create(&ctx) != SPVC_SUCCESS)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "SPIRV-Cross could not make a context");
    spvc_context_set_error_callback(ctx, on_spvc_error, spvc_err);
    kiln_result r = KILN_OK;
    spvc_parsed_ir ir;
    spvc_compiler comp;
    spvc_resources res;
    if (spvc_context_parse_spirv(ctx, spirv, words, &ir) != SPVC_SUCCESS ||
        spvc_context_create_compiler(ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &comp) !=
            SPVC_SUCCESS ||
        spvc_compiler_create_shader_resources(comp, &res) != SPVC_SUCCESS) {
        r = KILN_RAISE(KILN_ERR_COMPILE, "SPIR-V could not be reflected: %s", spvc_err);
        goto done;
    }

    static const spvc_resource_type buffer_types[] = {SPVC_RESOURCE_TYPE_STORAGE_BUFFER,
                                                      SPVC_RESOURCE_TYPE_UNIFORM_BUFFER};
    for (size_t t = 0; t < KILN_ARRAY_LEN(buffer_types); t++) {
        const spvc_reflected_resource *list;
        size_t count;
        spvc_resources_get_resource_list_for_type(res, buffer_types[t], &list, &count);
        for (size_t i = 0; i < count; i++) {
            unsigned set = spvc_compiler_get_decoration(comp, list[i].id, SpvDecorationDescriptorSet);
            unsigned binding = spvc_compiler_get_decoration(comp, list[i].id, SpvDecorationBinding);
            const char *name = list[i].name && *list[i].name ? list[i].name : "(unnamed)";
            if (set != 0) {
                r = KILN_RAISE(KILN_ERR_LAYOUT, "buffer '%s' is in descriptor set %u; kiln binds set 0 only", name,
                               set);
                goto done;
            }
            spvc_type vtype = spvc_compiler_get_type_handle(comp, list[i].type_id);
            if (spvc_type_get_num_array_dimensions(vtype) > 0) {
                r = KILN_RAISE(KILN_ERR_LAYOUT, "buffer '%s' (binding %u) is an array of blocks; kiln binds one buffer "
                               "per binding", name, binding);
                goto done;
            }
            if (out->binding_count == KILN_MAX_BINDINGS) {
                r = KILN_RAISE(KILN_ERR_LAYOUT, "more than %d bindings; kiln binds at most %d", KILN_MAX_BINDINGS,
                               KILN_MAX_BINDINGS);
                goto done;
            }
            for (uint32_t k = 0; k < out->binding_count; k++)
                if (out->bindings[k].binding == binding) {
                    r = KILN_RAISE(KILN_ERR_LAYOUT, "binding %u is declared twice ('%s' and '%s')", binding,
                                   out->bindings[k].name, name);
                    goto done;
                }
            kiln_binding_info *b = &out->bindings[out->binding_count++];
            b->set = set;
            b->binding = binding;
            snprintf(b->name, sizeof b->name, "%s", name);
            if (buffer_types[t] == SPVC_RESOURCE_TYPE_UNIFORM_BUFFER) {
                b->kind = KILN_BINDING_UNIFORM_BUFFER;
                b->access = KILN_ACCESS_READ;
            } else {
                b->kind = KILN_BINDING_STORAGE_BUFFER;
                b->access = KILN_ACCESS_READ | KILN_ACCESS_WRITE;
                const SpvDecoration *decos;
                size_t nd;
                if (spvc_compiler_get_buffer_block_decorations(comp, list[i].id, &decos, &nd) == SPVC_SUCCESS)
                    for (size_t d = 0; d < nd; d++) {
                        if (decos[d] == SpvDecorationNonWritable)
                            b->access &= ~(uint32_t)KILN_ACCESS_WRITE;
                        if (decos[d] == SpvDecorationNonReadable)
                            b->access &= ~(uint32_t)KILN_ACCESS_READ;
                    }
            }
            size_t size = 0;
            spvc_type type = spvc_compiler_get_type_handle(comp, list[i].base_type_id);
            if (spvc_compiler_get_declared_struct_size(comp, type, &size) == SPVC_SUCCESS)
                b->min_size = size;
        }
    }
    static const spvc_resource_type refused[] = {
        SPVC_RESOURCE_TYPE_STORAGE_IMAGE,    SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,
        SPVC_RESOURCE_TYPE_SEPARATE_IMAGE,   SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,
        SPVC_RESOURCE_TYPE_ATOMIC_COUNTER,   SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE,
    };
    for (size_t t = 0; t < KILN_ARRAY_LEN(refused); t++) {
        const spvc_reflected_resource *list;
        size_t count;
        spvc_resources_get_resource_list_for_type(res, refused[t], &list, &count);
        if (count) {
            r = KILN_RAISE(KILN_ERR_LAYOUT, "%s '%s' (binding %u): kiln binds storage and uniform buffers only",
                           resource_kind_name(refused[t]), list[0].name,
                           spvc_compiler_get_decoration(comp, list[0].id, SpvDecorationBinding));
            goto done;
        }
    }
    qsort(out->bindings, out->binding_count, sizeof out->bindings[0], cmp_binding);

    const spvc_reflected_resource *pc;
    size_t npc;
    spvc_resources_get_resource_list_for_type(res, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &pc, &npc);
    if (npc) {
        size_t size = 0;
        spvc_type type = spvc_compiler_get_type_handle(comp, pc[0].base_type_id);
        if (spvc_compiler_get_declared_struct_size(comp, type, &size) == SPVC_SUCCESS)
            out->push_constant_size = (uint32_t)size;
        if (own_push) /* the block's words are the node's (a block past 2^32 bytes is refused by the limits) */
            out->param_words = (uint32_t)KILN_MIN((size + 3) / 4, (size_t)UINT32_MAX);
        /* The param words the code reads: word n at 4n, of kiln's block
         * (then the lengths) or of the program's own. */
        const spvc_buffer_range *ranges;
        size_t nr;
        size_t limit = own_push ? KILN_MAX_PARAM_WORDS : KILN_PARAM_WORDS + KILN_MAX_BINDINGS;
        if (spvc_compiler_get_active_buffer_ranges(comp, pc[0].id, &ranges, &nr) == SPVC_SUCCESS)
            for (size_t i = 0; i < nr; i++)
                for (size_t w = ranges[i].offset / 4; w < limit && w * 4 < ranges[i].offset + ranges[i].range; w++) {
                    if (own_push || w < KILN_PARAM_WORDS)
                        out->params_read |= (uint64_t)1 << w;
                    else
                        out->lens_read |= 1u << (w - KILN_PARAM_WORDS);
                }
    }
    /* The subgroup operation classes the code needs: SPIR-V's
     * GroupNonUniform* capabilities (61..68) in the order of Vulkan's bits. */
    const SpvCapability *capabilities;
    size_t ncap;
    if (spvc_compiler_get_declared_capabilities(comp, &capabilities, &ncap) == SPVC_SUCCESS)
        for (size_t i = 0; i < ncap; i++)
            if (capabilities[i] >= SpvCapabilityGroupNonUniform && capabilities[i] <= SpvCapabilityGroupNonUniformQuad)
                out->subgroup_ops |= 1u << (capabilities[i] - SpvCapabilityGroupNonUniform);
    spvc_compiler_update_active_builtins(comp);
    out->groups_read = spvc_compiler_has_active_builtin(comp, SpvBuiltInNumWorkgroups, SpvStorageClassInput) ? 1 : 0;
    for (unsigned i = 0; i < 3; i++)
        out->workgroup_size[i] =
            spvc_compiler_get_execution_mode_argument_by_index(comp, SpvExecutionModeLocalSize, i);
done:
    spvc_context_destroy(ctx);
    return r;
}

bool prog_iface_compatible(const kiln_program_interface *a, const kiln_program_interface *b, char *why, size_t cap)
{
    static const char *kinds[] = {"?", "storage buffer", "uniform buffer"};
    uint32_t i = 0, j = 0;
    while (i < a->binding_count || j < b->binding_count) {
        const kiln_binding_info *x = i < a->binding_count ? &a->bindings[i] : NULL;
        const kiln_binding_info *y = j < b->binding_count ? &b->bindings[j] : NULL;
        if (!y || (x && x->binding < y->binding)) {
            snprintf(why, cap, "binding %u is not declared by the new program", x->binding);
            return false;
        }
        if (!x || y->binding < x->binding) {
            snprintf(why, cap, "binding %u is declared only by the new program", y->binding);
            return false;
        }
        if (x->kind != y->kind) {
            snprintf(why, cap, "binding %u is a %s, the new program's a %s", x->binding, kinds[x->kind & 3],
                     kinds[y->kind & 3]);
            return false;
        }
        if (x->access != y->access) {
            snprintf(why, cap, "binding %u access differs (%s%s vs %s%s)", x->binding,
                     x->access & KILN_ACCESS_READ ? "r" : "", x->access & KILN_ACCESS_WRITE ? "w" : "",
                     y->access & KILN_ACCESS_READ ? "r" : "", y->access & KILN_ACCESS_WRITE ? "w" : "");
            return false;
        }
        i++;
        j++;
    }
    return true;
}

/* ---- device limits --------------------------------------------------------------- */

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
static uint64_t mul_sat(uint64_t a, uint64_t b) { return b && a > UINT64_MAX / b ? UINT64_MAX : a * b; }

kiln_result prog_shared_bytes(const uint32_t *spirv, size_t words, uint64_t *out)
{
    *out = 0;
    if (words < 5 || spirv[0] != SpvMagicNumber)
        return KILN_RAISE(KILN_ERR_INVALID, "not a SPIR-V module (%zu words)", words);
    uint32_t bound = spirv[3];
    if (bound > (1u << 24))
        return KILN_RAISE(KILN_ERR_INVALID, "SPIR-V id bound %u is beyond what kiln reads (%u)", bound, 1u << 24);
    /* Per id: a type's size in bytes, a pointer's pointee, a constant's value. */
    uint64_t *size = mem_calloc(bound + 1, sizeof *size);
    uint64_t *value = mem_calloc(bound + 1, sizeof *value);
    uint32_t *pointee = mem_calloc(bound + 1, sizeof *pointee);
    kiln_result r = KILN_OK;
    if (!size || !value || !pointee) {
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory reading a module of %u ids", bound);
        goto done;
    }
#define ID(k) (a[k] < bound ? a[k] : bound)   /* an id out of range reads the zeroed spare entry */
    for (size_t at = 5; at < words;) {
        uint32_t n = spirv[at] >> 16, op = spirv[at] & 0xffff;
        if (n == 0 || n > words - at) {
            r = KILN_RAISE(KILN_ERR_INVALID, "malformed SPIR-V instruction at word %zu", at);
            goto done;
        }
        const uint32_t *a = spirv + at + 1;
        switch (n >= 3 || (n == 2 && op == SpvOpTypeBool) ? op : 0) {   /* OpTypeBool is 2 words */
        case SpvOpTypeInt:
        case SpvOpTypeFloat: size[ID(0)] = a[1] / 8; break;
        case SpvOpTypeBool: size[ID(0)] = 4; break;
        case SpvOpTypeVector:
        case SpvOpTypeMatrix:
            if (n >= 4)
                size[ID(0)] = mul_sat(size[ID(1)], a[2]);
            break;
        case SpvOpTypeArray:
            if (n >= 4)
                size[ID(0)] = mul_sat(size[ID(1)], value[ID(2)]);
            break;
        case SpvOpTypeStruct: {
            uint64_t sum = 0;
            for (uint32_t m = 1; m < n - 1; m++)
                sum = add_sat(sum, size[ID(m)]);
            size[ID(0)] = sum;
            break;
        }
        case SpvOpTypePointer:
            if (n >= 4)
                pointee[ID(0)] = a[2];
            break;
        case SpvOpConstant:
        case SpvOpSpecConstant:   /* its default: what runs unless specialized */
            if (n >= 4)
                value[ID(1)] = a[2] | (n >= 5 ? (uint64_t)a[3] << 32 : 0);
            break;
        case SpvOpVariable:
            if (n >= 4 && a[2] == SpvStorageClassWorkgroup) {
                uint32_t t = pointee[ID(0)];
                *out = add_sat(*out, size[t < bound ? t : bound]);
            }
            break;
        default: break;
        }
        at += n;
    }
#undef ID
done:
    free(size);
    free(value);
    free(pointee);
    return r;
}

kiln_result prog_check_limits(const uint32_t *spirv, size_t words, const kiln_program_interface *iface,
                              const kiln_caps *caps)
{
    uint64_t shared;
    KILN_TRY(prog_shared_bytes(spirv, words, &shared));
    return prog_check_limits_shared(iface, shared, caps);
}

kiln_result prog_check_limits_shared(const kiln_program_interface *iface, uint64_t shared, const kiln_caps *caps)
{
    static const char axis[] = "xyz";
    const uint32_t *wg = iface->workgroup_size;
    for (int i = 0; i < 3; i++)
        if (wg[i] > caps->max_workgroup_size[i])
            return KILN_RAISE(KILN_ERR_LIMIT, "local_size_%c = %u, the device allows at most %u "
                              "(maxComputeWorkGroupSize[%d])", axis[i], wg[i], caps->max_workgroup_size[i], i);
    uint64_t inv = (uint64_t)wg[0] * wg[1] * wg[2];
    if (inv > caps->max_workgroup_invocations)
        return KILN_RAISE(KILN_ERR_LIMIT, "a workgroup of %ux%ux%u = %llu invocations, the device allows at most %u "
                          "(maxComputeWorkGroupInvocations)", wg[0], wg[1], wg[2], (unsigned long long)inv,
                          caps->max_workgroup_invocations);
    if (shared > caps->max_shared_memory_size)
        return KILN_RAISE(KILN_ERR_LIMIT, "it uses %llu bytes of shared memory; the device allows %u "
                          "(maxComputeSharedMemorySize)", (unsigned long long)shared, caps->max_shared_memory_size);
    uint32_t push = iface->own_push_block ? iface->push_constant_size
                                          : KILN_MAX(iface->push_constant_size, (uint32_t)KILN_PUSH_BYTES);
    uint32_t missing = iface->subgroup_ops & ~caps->subgroup_ops;
    if (missing) {
        static const char *const names[] = {"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative",
                                            "clustered", "quad"};
        char list[160] = "";
        size_t n = 0;
        for (unsigned b = 0; b < 8 && n < sizeof list; b++)
            if (missing & (1u << b))
                n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", names[b]);
        return KILN_RAISE(KILN_ERR_LIMIT, "it uses subgroup operations the device does not support in compute "
                          "shaders: %s (VkPhysicalDeviceSubgroupProperties.supportedOperations)", list);
    }
    if (iface->own_push_block && iface->param_words > KILN_MAX_PARAM_WORDS)
        return KILN_RAISE(KILN_ERR_LIMIT, "its push_constant block is %u bytes; a node carries at most %d param words "
                          "(%d bytes)", iface->push_constant_size, KILN_MAX_PARAM_WORDS, 4 * KILN_MAX_PARAM_WORDS);
    if (push > caps->max_push_constants_size)
        return KILN_RAISE(KILN_ERR_LIMIT, "it needs %u bytes of push constants; the device allows %u "
                          "(maxPushConstantsSize)", push, caps->max_push_constants_size);
    uint32_t storage = 0, uniform = 0;
    for (uint32_t i = 0; i < iface->binding_count; i++)
        (*(iface->bindings[i].kind == KILN_BINDING_UNIFORM_BUFFER ? &uniform : &storage))++;
    if (storage > caps->max_per_stage_storage_buffers)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u storage buffers; the device allows %u "
                          "(maxPerStageDescriptorStorageBuffers)", storage, caps->max_per_stage_storage_buffers);
    if (uniform > caps->max_per_stage_uniform_buffers)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u uniform buffers; the device allows %u "
                          "(maxPerStageDescriptorUniformBuffers)", uniform, caps->max_per_stage_uniform_buffers);
    if (storage + uniform > caps->max_per_stage_resources)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u buffers; the device allows %u resources per stage "
                          "(maxPerStageResources)", storage + uniform, caps->max_per_stage_resources);
    return KILN_OK;
}
