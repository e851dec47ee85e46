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

kiln_result prog_reflect(const uint32_t *spirv, size_t words, kiln_program_interface *out)
{
    *out = (kiln_program_interface){.spirv_words = (uint32_t)words};
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
        /* The param words the code reads (kiln's block: word n at 4n). */
        const spvc_buffer_range *ranges;
        size_t nr;
        if (spvc_compiler_get_active_buffer_ranges(comp, pc[0].id, &ranges, &nr) == SPVC_SUCCESS)
            for (size_t i = 0; i < nr; i++)
                for (size_t w = ranges[i].offset / 4;
                     w < KILN_PARAM_WORDS + KILN_MAX_BINDINGS && w * 4 < ranges[i].offset + ranges[i].range; w++) {
                    if (w < KILN_PARAM_WORDS)
                        out->params_read |= 1u << w;
                    else
                        out->lens_read |= 1u << (w - KILN_PARAM_WORDS);
                }
    }
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
