/* SPDX-License-Identifier: MIT */
/*
 * reflect.c: a program's interface read from its SPIR-V with SPIRV-Cross's
 * C API (libspirv-cross-c-shared): descriptor bindings with kind and
 * declared access, push-constant size and workgroup size.
 *
 * Access is what the source declares: a `readonly` block reads, a
 * `writeonly` block writes, any other block does both. kiln derives barriers
 * from it, so declaring `readonly` where it holds spares barriers.
 *
 * Buffers are bound as shaders declare them (see kiln.h): in any set below
 * KILN_MAX_SETS; several blocks on one (set, binding) merged into one
 * binding (one buffer seen through each: the union of their access, the
 * largest fixed size, the names joined by '|'; a clash of kinds or array
 * lengths refused by name); an array of blocks as one binding of `count`
 * descriptors; texel buffers (Dim Buffer images) with the format their
 * qualifier declares; 2D and 3D images (storage images with their format
 * qualifier or none, sampled images, combined image samplers) and
 * samplers. Images of other shapes (1D, cube, arrayed, multisampled) and
 * other resources are refused with a message naming the resource.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv_cross/spirv_cross_c.h>

#include "program_private.h"

static int cmp_binding(const void *a, const void *b)
{
    const kiln_binding_info *x = a, *y = b;
    if (x->set != y->set)
        return x->set < y->set ? -1 : 1;
    return x->binding < y->binding ? -1 : x->binding > y->binding;
}

const char *prog_kind_name(kiln_binding_kind kind)
{
    switch (kind) {
    case KILN_BINDING_STORAGE_BUFFER: return "storage buffer";
    case KILN_BINDING_UNIFORM_BUFFER: return "uniform buffer";
    case KILN_BINDING_STORAGE_TEXEL_BUFFER: return "storage texel buffer";
    case KILN_BINDING_UNIFORM_TEXEL_BUFFER: return "uniform texel buffer";
    case KILN_BINDING_STORAGE_IMAGE: return "storage image";
    case KILN_BINDING_SAMPLED_IMAGE: return "sampled image";
    case KILN_BINDING_SAMPLER: return "sampler";
    case KILN_BINDING_COMBINED_IMAGE_SAMPLER: return "combined image sampler";
    default: return "binding of unknown kind";
    }
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

/* Whether a resource of an image type is a texel buffer (Dim Buffer:
 * imageBuffer, textureBuffer, samplerBuffer), which kiln binds from a
 * buffer. */
static bool is_texel_buffer(spvc_compiler comp, const spvc_reflected_resource *res)
{
    return spvc_type_get_image_dimension(spvc_compiler_get_type_handle(comp, res->base_type_id)) == SpvDimBuffer;
}

/* The words of a block (struct type `t` at byte `base`) that hold 32-bit
 * floats: bit n for word n, words past 63 left out. Members, vectors,
 * matrices (by their stride), one-dimensional arrays (by theirs) and
 * structs within, to a depth of 8. */
static uint64_t float_words(spvc_compiler comp, spvc_type t, uint32_t base, int depth)
{
    uint64_t words = 0;
    unsigned n = spvc_type_get_num_member_types(t);
    for (unsigned m = 0; m < n && depth < 8; m++) {
        spvc_type mt = spvc_compiler_get_type_handle(comp, spvc_type_get_member_type(t, m));
        unsigned off = 0, stride = 0, mstride = 0;
        if (spvc_compiler_type_struct_member_offset(comp, t, m, &off) != SPVC_SUCCESS)
            continue;
        unsigned count = 1, dims = spvc_type_get_num_array_dimensions(mt);
        if (dims > 1 || (dims == 1 && (!spvc_type_array_dimension_is_literal(mt, 0) ||
                                       spvc_compiler_type_struct_member_array_stride(comp, t, m, &stride) !=
                                           SPVC_SUCCESS)))
            continue;   /* many dimensions, or a length set by a constant: not followed */
        if (dims == 1)
            count = (unsigned)spvc_type_get_array_dimension(mt, 0);
        for (unsigned e = 0; e < count && base + off + e * stride < 256; e++) {
            uint32_t at = base + off + e * stride;
            spvc_basetype bt = spvc_type_get_basetype(mt);
            if (bt == SPVC_BASETYPE_STRUCT) {
                words |= float_words(comp, mt, at, depth + 1);
            } else if (bt == SPVC_BASETYPE_FP32) {
                unsigned cols = spvc_type_get_columns(mt), vec = spvc_type_get_vector_size(mt);
                if (cols > 1 && spvc_compiler_type_struct_member_matrix_stride(comp, t, m, &mstride) != SPVC_SUCCESS)
                    continue;
                for (unsigned c = 0; c < cols; c++)
                    for (unsigned k = 0; k < vec; k++) {
                        uint32_t w = (at + c * mstride + k * 4) / 4;
                        if (w < 64)
                            words |= 1ull << w;
                    }
            }
        }
    }
    return words;
}

/* SPIR-V's ImageFormat (a format qualifier) as a kiln_format; 0 for
 * Unknown (none declared) and for a format kiln does not take (*known
 * false then). */
static kiln_format format_of(SpvImageFormat f, bool *known)
{
    static const struct { SpvImageFormat spv; kiln_format kiln; } map[] = {
        {SpvImageFormatR32f, KILN_FORMAT_R32F},         {SpvImageFormatR32ui, KILN_FORMAT_R32UI},
        {SpvImageFormatR32i, KILN_FORMAT_R32I},         {SpvImageFormatRg32f, KILN_FORMAT_RG32F},
        {SpvImageFormatRg32ui, KILN_FORMAT_RG32UI},     {SpvImageFormatRg32i, KILN_FORMAT_RG32I},
        {SpvImageFormatRgba32f, KILN_FORMAT_RGBA32F},   {SpvImageFormatRgba32ui, KILN_FORMAT_RGBA32UI},
        {SpvImageFormatRgba32i, KILN_FORMAT_RGBA32I},   {SpvImageFormatR16f, KILN_FORMAT_R16F},
        {SpvImageFormatRg16f, KILN_FORMAT_RG16F},       {SpvImageFormatRgba16f, KILN_FORMAT_RGBA16F},
        {SpvImageFormatRgba16ui, KILN_FORMAT_RGBA16UI}, {SpvImageFormatRgba16i, KILN_FORMAT_RGBA16I},
        {SpvImageFormatRgba8, KILN_FORMAT_RGBA8},       {SpvImageFormatRgba8Snorm, KILN_FORMAT_RGBA8_SNORM},
        {SpvImageFormatRgba8ui, KILN_FORMAT_RGBA8UI},   {SpvImageFormatRgba8i, KILN_FORMAT_RGBA8I},
        {SpvImageFormatR8, KILN_FORMAT_R8},             {SpvImageFormatR8ui, KILN_FORMAT_R8UI},
        {SpvImageFormatR8i, KILN_FORMAT_R8I},
        {SpvImageFormatR11fG11fB10f, KILN_FORMAT_R11F_G11F_B10F}, {SpvImageFormatRgb10A2, KILN_FORMAT_RGB10_A2},
        {SpvImageFormatRgba16, KILN_FORMAT_RGBA16},     {SpvImageFormatRg16, KILN_FORMAT_RG16},
        {SpvImageFormatRg8, KILN_FORMAT_RG8},           {SpvImageFormatR16, KILN_FORMAT_R16},
        {SpvImageFormatRgba16Snorm, KILN_FORMAT_RGBA16_SNORM}, {SpvImageFormatRg16Snorm, KILN_FORMAT_RG16_SNORM},
        {SpvImageFormatRg8Snorm, KILN_FORMAT_RG8_SNORM}, {SpvImageFormatR16Snorm, KILN_FORMAT_R16_SNORM},
        {SpvImageFormatR8Snorm, KILN_FORMAT_R8_SNORM},  {SpvImageFormatRg16i, KILN_FORMAT_RG16I},
        {SpvImageFormatRg8i, KILN_FORMAT_RG8I},         {SpvImageFormatR16i, KILN_FORMAT_R16I},
        {SpvImageFormatRgb10a2ui, KILN_FORMAT_RGB10_A2UI}, {SpvImageFormatRg16ui, KILN_FORMAT_RG16UI},
        {SpvImageFormatRg8ui, KILN_FORMAT_RG8UI},       {SpvImageFormatR16ui, KILN_FORMAT_R16UI},
        {SpvImageFormatR64ui, KILN_FORMAT_R64UI},       {SpvImageFormatR64i, KILN_FORMAT_R64I},
    };
    *known = f == SpvImageFormatUnknown;
    for (size_t i = 0; i < KILN_ARRAY_LEN(map); i++)
        if (map[i].spv == f) {
            *known = true;
            return map[i].kiln;
        }
    return KILN_FORMAT_UNDEFINED;
}

/* Reads one buffer-like resource (a storage or uniform block, or a texel
 * buffer) of list type `type` into *b: 1, or 0 when it is an image kiln
 * does not bind here (left to the refusal below), or KILN_ERR_LAYOUT
 * raised naming what kiln cannot bind (an array of unknown length or of
 * more than one dimension, a format kiln does not know). */
/* A resource's name, set, binding and array length into *b: 0, or
 * KILN_ERR_LAYOUT raised naming what kiln cannot bind. */
static int read_place(spvc_compiler comp, const spvc_reflected_resource *res, kiln_binding_info *b)
{
    const char *name = res->name && *res->name ? res->name : "(unnamed)";
    unsigned set = spvc_compiler_get_decoration(comp, res->id, SpvDecorationDescriptorSet);
    unsigned binding = spvc_compiler_get_decoration(comp, res->id, SpvDecorationBinding);
    *b = (kiln_binding_info){.set = set, .binding = binding, .count = 1};
    snprintf(b->name, sizeof b->name, "%s", name);
    if (set >= KILN_MAX_SETS)
        return KILN_RAISE(KILN_ERR_LAYOUT, "'%s' (binding %u) is in descriptor set %u; kiln binds sets 0..%d", name,
                          binding, set, KILN_MAX_SETS - 1);
    spvc_type vtype = spvc_compiler_get_type_handle(comp, res->type_id);
    unsigned dims = spvc_type_get_num_array_dimensions(vtype);
    if (dims > 1)
        return KILN_RAISE(KILN_ERR_LAYOUT, "'%s' (set %u, binding %u) is an array of %u dimensions; kiln binds arrays "
                          "of one", name, set, binding, dims);
    if (dims == 1) {
        if (!spvc_type_array_dimension_is_literal(vtype, 0))
            return KILN_RAISE(KILN_ERR_LAYOUT, "'%s' (set %u, binding %u) is an array sized by a specialization "
                              "constant; kiln binds arrays of a length written in the source", name, set, binding);
        b->count = spvc_type_get_array_dimension(vtype, 0);
        if (b->count == 0)
            return KILN_RAISE(KILN_ERR_LAYOUT, "'%s' (set %u, binding %u) is an array of unknown length ('[]'); kiln "
                              "binds arrays of a length written in the source", name, set, binding);
    }
    return 0;
}

/* Reads a 1D, 2D, 3D or cube image (arrayed or not), or a sampler, of list type `type` into *b: 1,
 * or KILN_ERR_LAYOUT raised naming an image of a shape kiln does not bind
 * or a format it does not know. */
static int read_image(spvc_compiler comp, spvc_resource_type type, const spvc_reflected_resource *res,
                      kiln_binding_info *b)
{
    if (read_place(comp, res, b) < 0)
        return KILN_ERR_LAYOUT;
    b->access = KILN_ACCESS_READ;
    if (type == SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS) {
        b->kind = KILN_BINDING_SAMPLER;
        return 1;
    }
    spvc_type t = spvc_compiler_get_type_handle(comp, res->base_type_id);
    SpvDim dim = spvc_type_get_image_dimension(t);
    static const char *const shapes[] = {[SpvDimRect] = "rectangle", [SpvDimSubpassData] = "subpass input"};
    if (dim != SpvDim1D && dim != SpvDim2D && dim != SpvDim3D && dim != SpvDimCube)
        return KILN_RAISE(KILN_ERR_LAYOUT, "%s '%s' (set %u, binding %u) is a %s image; kiln binds 1D, 2D, 3D and cube "
                          "images", resource_kind_name(type), b->name, b->set, b->binding,
                          (size_t)dim < KILN_ARRAY_LEN(shapes) && shapes[dim] ? shapes[dim] : "other-shaped");
    if (spvc_type_get_image_multisampled(t))
        return KILN_RAISE(KILN_ERR_LAYOUT, "%s '%s' (set %u, binding %u) is a multisampled image; kiln binds "
                          "single-sampled images", resource_kind_name(type), b->name, b->set, b->binding);
    if (dim == SpvDimCube && spvc_type_get_image_arrayed(t))
        return KILN_RAISE(KILN_ERR_LAYOUT, "%s '%s' (set %u, binding %u) is an arrayed cube image (a cube array); "
                          "kiln binds cube maps of one cube", resource_kind_name(type), b->name, b->set, b->binding);
    b->image_dims = dim == SpvDim3D ? 3 : dim == SpvDim1D ? 1 : 2;
    b->image_arrayed = spvc_type_get_image_arrayed(t) ? 1 : 0;
    b->image_cube = dim == SpvDimCube;
    switch (type) {
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE: {
        b->kind = KILN_BINDING_STORAGE_IMAGE;
        bool known;
        SpvImageFormat f = spvc_type_get_image_storage_format(t);
        b->format = format_of(f, &known);
        if (!known)
            return KILN_RAISE(KILN_ERR_LAYOUT, "storage image '%s' (set %u, binding %u) declares SPIR-V ImageFormat %d, "
                              "a format qualifier kiln does not know", b->name, b->set, b->binding, (int)f);
        b->access = KILN_ACCESS_READ | KILN_ACCESS_WRITE;
        if (spvc_compiler_has_decoration(comp, res->id, SpvDecorationNonWritable))
            b->access &= ~(uint32_t)KILN_ACCESS_WRITE;
        if (spvc_compiler_has_decoration(comp, res->id, SpvDecorationNonReadable))
            b->access &= ~(uint32_t)KILN_ACCESS_READ;
        break;
    }
    case SPVC_RESOURCE_TYPE_SEPARATE_IMAGE: b->kind = KILN_BINDING_SAMPLED_IMAGE; break;
    default: b->kind = KILN_BINDING_COMBINED_IMAGE_SAMPLER; break;
    }
    return 1;
}

static int read_buffer(spvc_compiler comp, spvc_resource_type type, const spvc_reflected_resource *res,
                       kiln_binding_info *b)
{
    bool image = type != SPVC_RESOURCE_TYPE_STORAGE_BUFFER && type != SPVC_RESOURCE_TYPE_UNIFORM_BUFFER;
    if (image && !is_texel_buffer(comp, res))
        return read_image(comp, type, res, b);
    if (read_place(comp, res, b) < 0)
        return KILN_ERR_LAYOUT;
    const char *name = b->name;
    unsigned set = b->set, binding = b->binding;
    bool nonwritable = false, nonreadable = false;
    switch (type) {
    case SPVC_RESOURCE_TYPE_UNIFORM_BUFFER:
        b->kind = KILN_BINDING_UNIFORM_BUFFER;
        b->access = KILN_ACCESS_READ;
        break;
    case SPVC_RESOURCE_TYPE_STORAGE_BUFFER: {
        b->kind = KILN_BINDING_STORAGE_BUFFER;
        const SpvDecoration *decos;
        size_t nd;
        if (spvc_compiler_get_buffer_block_decorations(comp, res->id, &decos, &nd) == SPVC_SUCCESS)
            for (size_t d = 0; d < nd; d++) {
                nonwritable |= decos[d] == SpvDecorationNonWritable;
                nonreadable |= decos[d] == SpvDecorationNonReadable;
            }
        break;
    }
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE: {
        b->kind = KILN_BINDING_STORAGE_TEXEL_BUFFER;
        nonwritable = spvc_compiler_has_decoration(comp, res->id, SpvDecorationNonWritable);
        nonreadable = spvc_compiler_has_decoration(comp, res->id, SpvDecorationNonReadable);
        SpvImageFormat f = spvc_type_get_image_storage_format(spvc_compiler_get_type_handle(comp, res->base_type_id));
        bool known;
        b->format = format_of(f, &known);
        if (!known)
            return KILN_RAISE(KILN_ERR_LAYOUT, "storage texel buffer '%s' (set %u, binding %u) declares SPIR-V "
                              "ImageFormat %d, a format qualifier kiln does not know", name, set, binding, (int)f);
        break;
    }
    default:   /* textureBuffer, samplerBuffer */
        b->kind = KILN_BINDING_UNIFORM_TEXEL_BUFFER;
        b->access = KILN_ACCESS_READ;
        break;
    }
    if (b->kind == KILN_BINDING_STORAGE_BUFFER || b->kind == KILN_BINDING_STORAGE_TEXEL_BUFFER) {
        b->access = KILN_ACCESS_READ | KILN_ACCESS_WRITE;
        if (nonwritable)
            b->access &= ~(uint32_t)KILN_ACCESS_WRITE;
        if (nonreadable)
            b->access &= ~(uint32_t)KILN_ACCESS_READ;
    }
    if (!image) {
        size_t size = 0;
        spvc_type btype = spvc_compiler_get_type_handle(comp, res->base_type_id);
        if (spvc_compiler_get_declared_struct_size(comp, btype, &size) == SPVC_SUCCESS)
            b->min_size = size;
    }
    return 1;
}

/* Adds a binding to the interface, or merges it into the one declared at
 * the same (set, binding): several blocks on one binding see one buffer,
 * so their kinds and array lengths must agree; access is the union, the
 * fixed size the largest, the names joined by '|'. 0, or KILN_ERR_LAYOUT
 * raised naming the clash. */
static int add_binding(kiln_program_interface *out, const kiln_binding_info *b)
{
    for (uint32_t k = 0; k < out->binding_count; k++) {
        kiln_binding_info *was = &out->bindings[k];
        if (was->set != b->set || was->binding != b->binding)
            continue;
        if (was->kind != b->kind)
            return KILN_RAISE(KILN_ERR_LAYOUT, "binding %u of set %u is declared as a %s ('%s') and as a %s ('%s'); "
                              "the blocks on one binding see one buffer and must be of one kind", b->binding, b->set,
                              prog_kind_name(was->kind), was->name, prog_kind_name(b->kind), b->name);
        if (was->count != b->count)
            return KILN_RAISE(KILN_ERR_LAYOUT, "binding %u of set %u is declared as arrays of %u ('%s') and %u ('%s') "
                              "elements; the declarations on one binding must agree", b->binding, b->set, was->count,
                              was->name, b->count, b->name);
        if (was->format && b->format && was->format != b->format)
            return KILN_RAISE(KILN_ERR_LAYOUT, "binding %u of set %u is declared with formats %s ('%s') and %s ('%s')",
                              b->binding, b->set, kiln_format_name(was->format), was->name,
                              kiln_format_name(b->format), b->name);
        was->access |= b->access;
        was->min_size = KILN_MAX(was->min_size, b->min_size);
        if (!was->format)
            was->format = b->format;
        size_t n = strlen(was->name);
        snprintf(was->name + n, sizeof was->name - n, "|%s", b->name);
        return 0;
    }
    if (out->binding_count == KILN_MAX_BINDINGS)
        return KILN_RAISE(KILN_ERR_LAYOUT, "more than %d bindings; kiln binds at most %d", KILN_MAX_BINDINGS,
                          KILN_MAX_BINDINGS);
    out->bindings[out->binding_count++] = *b;
    return 0;
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

    static const spvc_resource_type buffer_types[] = {
        SPVC_RESOURCE_TYPE_STORAGE_BUFFER, SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, SPVC_RESOURCE_TYPE_STORAGE_IMAGE,
        SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS};
    for (size_t t = 0; t < KILN_ARRAY_LEN(buffer_types); t++) {
        const spvc_reflected_resource *list;
        size_t count;
        spvc_resources_get_resource_list_for_type(res, buffer_types[t], &list, &count);
        for (size_t i = 0; i < count; i++) {
            kiln_binding_info b;
            int got = read_buffer(comp, buffer_types[t], &list[i], &b);
            if (got < 0 || (got > 0 && add_binding(out, &b) < 0)) {
                r = KILN_ERR_LAYOUT;   /* raised by read_buffer or add_binding */
                goto done;
            }
        }
    }
    uint32_t descriptors = 0;
    for (uint32_t i = 0; i < out->binding_count; i++)
        descriptors += out->bindings[i].count;
    if (descriptors > KILN_MAX_DESCRIPTORS) {
        r = KILN_RAISE(KILN_ERR_LAYOUT, "%u descriptors (array elements counted); kiln binds at most %d",
                       descriptors, KILN_MAX_DESCRIPTORS);
        goto done;
    }
    static const spvc_resource_type refused[] = {
        SPVC_RESOURCE_TYPE_ATOMIC_COUNTER,
        SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE,
    };
    for (size_t t = 0; t < KILN_ARRAY_LEN(refused); t++) {
        const spvc_reflected_resource *list;
        size_t count;
        spvc_resources_get_resource_list_for_type(res, refused[t], &list, &count);
        for (size_t i = 0; i < count; i++) {
            r = KILN_RAISE(KILN_ERR_LAYOUT, "%s '%s' (binding %u): kiln binds buffers, images and samplers only",
                           resource_kind_name(refused[t]), list[i].name,
                           spvc_compiler_get_decoration(comp, list[i].id, SpvDecorationBinding));
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
        if (own_push) { /* the block's words are the node's (a block past 2^32 bytes is refused by the limits) */
            out->param_words = (uint32_t)KILN_MIN((size + 3) / 4, (size_t)UINT32_MAX);
            out->push_float_words = float_words(comp, type, 0, 0);
        }
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
        for (size_t i = 0; i < ncap; i++) {
            if (capabilities[i] >= SpvCapabilityGroupNonUniform && capabilities[i] <= SpvCapabilityGroupNonUniformQuad)
                out->subgroup_ops |= 1u << (capabilities[i] - SpvCapabilityGroupNonUniform);
        }
    spvc_compiler_update_active_builtins(comp);
    out->groups_read = spvc_compiler_has_active_builtin(comp, SpvBuiltInNumWorkgroups, SpvStorageClassInput) ? 1 : 0;
    for (unsigned i = 0; i < 3; i++)
        out->workgroup_size[i] =
            spvc_compiler_get_execution_mode_argument_by_index(comp, SpvExecutionModeLocalSize, i);
    r = prog_reflect_constants(comp, out);   /* spec_const.c */
done:
    spvc_context_destroy(ctx);
    return r;
}

bool prog_iface_compatible(const kiln_program_interface *a, const kiln_program_interface *b, char *why, size_t cap)
{
    uint32_t i = 0, j = 0;
    while (i < a->binding_count || j < b->binding_count) {
        const kiln_binding_info *x = i < a->binding_count ? &a->bindings[i] : NULL;
        const kiln_binding_info *y = j < b->binding_count ? &b->bindings[j] : NULL;
        int order = !x ? 1 : !y ? -1 : cmp_binding(x, y);
        const kiln_binding_info *at = order <= 0 ? x : y;
        char place[48];
        if (at->set)
            snprintf(place, sizeof place, "binding %u of set %u", at->binding, at->set);
        else
            snprintf(place, sizeof place, "binding %u", at->binding);
        if (order < 0) {
            snprintf(why, cap, "%s is not declared by the new program", place);
            return false;
        }
        if (order > 0) {
            snprintf(why, cap, "%s is declared only by the new program", place);
            return false;
        }
        if (x->kind != y->kind) {
            snprintf(why, cap, "%s is a %s, the new program's a %s", place, prog_kind_name(x->kind),
                     prog_kind_name(y->kind));
            return false;
        }
        if (x->count != y->count) {
            snprintf(why, cap, "%s is an array of %u, the new program's of %u", place, x->count, y->count);
            return false;
        }
        if (x->image_dims != y->image_dims) {
            snprintf(why, cap, "%s is a %uD image, the new program's %uD", place, x->image_dims, y->image_dims);
            return false;
        }
        if (x->image_arrayed != y->image_arrayed || x->image_cube != y->image_cube) {
            snprintf(why, cap, "%s is %s image, the new program's %s", place,
                     x->image_cube ? "a cube" : x->image_arrayed ? "an arrayed" : "a plain",
                     y->image_cube ? "a cube" : y->image_arrayed ? "an arrayed" : "a plain");
            return false;
        }
        if (x->format != y->format) {
            snprintf(why, cap, "%s declares format %s, the new program %s", place,
                     x->format ? kiln_format_name(x->format) : "none", y->format ? kiln_format_name(y->format) : "none");
            return false;
        }
        if (x->access != y->access) {
            snprintf(why, cap, "%s access differs (%s%s vs %s%s)", place, x->access & KILN_ACCESS_READ ? "r" : "",
                     x->access & KILN_ACCESS_WRITE ? "w" : "", y->access & KILN_ACCESS_READ ? "r" : "",
                     y->access & KILN_ACCESS_WRITE ? "w" : "");
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

/* The value of constant `id` as set in iface (bits), or false. */
static bool set_value(const kiln_program_interface *iface, uint32_t id, uint64_t *value)
{
    for (uint32_t i = 0; iface && i < iface->constant_count && i < KILN_MAX_SPEC_CONSTANTS; i++)
        if (iface->constants[i].id == id && iface->constants[i].set) {
            *value = iface->constants[i].value;
            return true;
        }
    return false;
}

static uint64_t low_mask(unsigned bits) { return bits >= 64 || bits == 0 ? UINT64_MAX : ((uint64_t)1 << bits) - 1; }
/* v (of `bits` bits) sign-extended to 64. */
static int64_t sext(uint64_t v, unsigned bits)
{
    if (bits == 0 || bits >= 64)
        return (int64_t)v;
    uint64_t m = (uint64_t)1 << (bits - 1);
    return (int64_t)(((v & low_mask(bits)) ^ m) - m);
}

/* An OpSpecConstantOp of integer or boolean arithmetic over constants, as
 * GLSL writes array sizes (N * 2 + 1, N >> 1, N > 4 ? N : 4): its value,
 * `bits` wide. An operation kiln does not evaluate is 0 (as an unknown
 * value always was here). Division by 0 is 0: the module is invalid
 * anyway. */
static uint64_t spec_op(uint32_t op, const uint64_t *x, const uint8_t *xb, uint32_t nx, unsigned bits)
{
    uint64_t a = nx > 0 ? x[0] : 0, b = nx > 1 ? x[1] : 0;
    int64_t sa = nx > 0 ? sext(a, xb[0]) : 0, sb = nx > 1 ? sext(b, xb[1]) : 0;
    uint64_t v = 0;
    switch (op) {
    case SpvOpIAdd: v = a + b; break;
    case SpvOpISub: v = a - b; break;
    case SpvOpIMul: v = a * b; break;
    case SpvOpUDiv: v = b ? (a & low_mask(xb[0])) / (b & low_mask(xb[1])) : 0; break;
    case SpvOpUMod: v = b ? (a & low_mask(xb[0])) % (b & low_mask(xb[1])) : 0; break;
    case SpvOpSDiv: v = sb && !(sb == -1 && sa == INT64_MIN) ? (uint64_t)(sa / sb) : 0; break;
    case SpvOpSRem: v = sb && sb != -1 ? (uint64_t)(sa % sb) : 0; break;
    case SpvOpSMod:
        if (sb && sb != -1) {
            int64_t m = sa % sb;
            v = (uint64_t)(m && ((m < 0) != (sb < 0)) ? m + sb : m);
        }
        break;
    case SpvOpSNegate: v = (uint64_t)0 - a; break;
    case SpvOpNot: v = ~a; break;
    case SpvOpShiftLeftLogical: v = b < 64 ? a << b : 0; break;
    case SpvOpShiftRightLogical: v = b < 64 ? (a & low_mask(xb[0])) >> b : 0; break;
    case SpvOpShiftRightArithmetic: v = (uint64_t)(b < 64 ? sa >> b : sa < 0 ? -1 : 0); break;
    case SpvOpBitwiseOr: v = a | b; break;
    case SpvOpBitwiseXor: v = a ^ b; break;
    case SpvOpBitwiseAnd: v = a & b; break;
    case SpvOpUConvert: v = a & low_mask(xb[0]); break;
    case SpvOpSConvert: v = (uint64_t)sa; break;
    case SpvOpIEqual: case SpvOpLogicalEqual: v = (a & low_mask(xb[0])) == (b & low_mask(xb[1])); break;
    case SpvOpINotEqual: case SpvOpLogicalNotEqual: v = (a & low_mask(xb[0])) != (b & low_mask(xb[1])); break;
    case SpvOpUGreaterThan: v = (a & low_mask(xb[0])) > (b & low_mask(xb[1])); break;
    case SpvOpUGreaterThanEqual: v = (a & low_mask(xb[0])) >= (b & low_mask(xb[1])); break;
    case SpvOpULessThan: v = (a & low_mask(xb[0])) < (b & low_mask(xb[1])); break;
    case SpvOpULessThanEqual: v = (a & low_mask(xb[0])) <= (b & low_mask(xb[1])); break;
    case SpvOpSGreaterThan: v = sa > sb; break;
    case SpvOpSGreaterThanEqual: v = sa >= sb; break;
    case SpvOpSLessThan: v = sa < sb; break;
    case SpvOpSLessThanEqual: v = sa <= sb; break;
    case SpvOpLogicalOr: v = (a | b) & 1; break;
    case SpvOpLogicalAnd: v = a & b & 1; break;
    case SpvOpLogicalNot: v = !(a & 1); break;
    case SpvOpSelect: v = nx > 2 ? ((a & 1) ? x[1] : x[2]) : 0; break;
    default: break;
    }
    return v & low_mask(bits);
}

kiln_result prog_shared_bytes(const uint32_t *spirv, size_t words, uint64_t *out)
{
    return prog_shared_bytes_set(spirv, words, NULL, out);
}

kiln_result prog_shared_bytes_set(const uint32_t *spirv, size_t words, const kiln_program_interface *iface,
                                  uint64_t *out)
{
    *out = 0;
    if (words < 5 || spirv[0] != SpvMagicNumber)
        return KILN_RAISE(KILN_ERR_INVALID, "not a SPIR-V module (%zu words)", words);
    uint32_t bound = spirv[3];
    if (bound > (1u << 24))
        return KILN_RAISE(KILN_ERR_INVALID, "SPIR-V id bound %u is beyond what kiln reads (%u)", bound, 1u << 24);
    /* Per id: a type's size in bytes, a pointer's pointee, a constant's
     * value; a scalar type's or a constant's width in bits; a constant's
     * SpecId + 1 (0: none). */
    uint64_t *size = mem_calloc(bound + 1, sizeof *size);
    uint64_t *value = mem_calloc(bound + 1, sizeof *value);
    uint32_t *pointee = mem_calloc(bound + 1, sizeof *pointee);
    uint32_t *spec = mem_calloc(bound + 1, sizeof *spec);
    uint8_t *bits = mem_calloc(bound + 1, sizeof *bits);
    kiln_result r = KILN_OK;
    if (!size || !value || !pointee || !spec || !bits) {
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
        case SpvOpDecorate:
            if (n >= 4 && a[1] == SpvDecorationSpecId)
                spec[ID(0)] = a[2] + 1;
            break;
        case SpvOpTypeInt:
        case SpvOpTypeFloat:
            size[ID(0)] = a[1] / 8;
            bits[ID(0)] = (uint8_t)KILN_MIN(a[1], 64u);
            break;
        case SpvOpTypeBool:
            size[ID(0)] = 4;
            bits[ID(0)] = 1;
            break;
        case SpvOpTypeVector:
        case SpvOpTypeMatrix:
            if (n >= 4)
                size[ID(0)] = mul_sat(size[ID(1)], a[2]);
            break;
        case SpvOpTypeArray:
            if (n >= 4)
                size[ID(0)] = mul_sat(size[ID(1)], value[ID(2)] & low_mask(bits[ID(2)]));
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
        case SpvOpConstantTrue:
        case SpvOpConstantFalse:
        case SpvOpSpecConstantTrue:
        case SpvOpSpecConstantFalse:
        case SpvOpConstant:
        case SpvOpSpecConstant: {   /* a specialization constant: the value set, else its default */
            uint64_t v = op == SpvOpConstantTrue || op == SpvOpSpecConstantTrue ? 1
                         : op == SpvOpConstant || op == SpvOpSpecConstant
                             ? (n >= 4 ? a[2] | (n >= 5 ? (uint64_t)a[3] << 32 : 0) : 0)
                             : 0;
            bool is_spec = op == SpvOpSpecConstant || op == SpvOpSpecConstantTrue || op == SpvOpSpecConstantFalse;
            if (is_spec && spec[ID(1)])
                set_value(iface, spec[ID(1)] - 1, &v);
            value[ID(1)] = v;
            bits[ID(1)] = bits[ID(0)];
            break;
        }
        case SpvOpSpecConstantOp:
            if (n >= 4) {
                uint64_t x[3] = {0};
                uint8_t xb[3] = {0};
                for (uint32_t k = 0; k < 3 && k + 4 < n; k++) {
                    x[k] = value[ID(3 + k)];
                    xb[k] = bits[ID(3 + k)];
                }
                bits[ID(1)] = bits[ID(0)];
                value[ID(1)] = spec_op(a[2], x, xb, n - 4 < 3 ? n - 4 : 3, bits[ID(0)]);
            }
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
    free(spec);
    free(bits);
    return r;
}

kiln_result prog_check_limits(const uint32_t *spirv, size_t words, const kiln_program_interface *iface,
                              const kiln_caps *caps)
{
    uint64_t shared;
    KILN_TRY(prog_shared_bytes_set(spirv, words, iface, &shared));
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
    /* Descriptors by kind (an array counts its elements). */
    uint32_t storage = 0, uniform = 0, storage_texel = 0, uniform_texel = 0, samplers = 0, last_set = 0;
    for (uint32_t i = 0; i < iface->binding_count; i++) {
        const kiln_binding_info *b = &iface->bindings[i];
        switch (b->kind) {
        case KILN_BINDING_UNIFORM_BUFFER: uniform += b->count; break;
        case KILN_BINDING_STORAGE_TEXEL_BUFFER:
        case KILN_BINDING_STORAGE_IMAGE: storage_texel += b->count; break;
        case KILN_BINDING_UNIFORM_TEXEL_BUFFER:
        case KILN_BINDING_SAMPLED_IMAGE:
        case KILN_BINDING_COMBINED_IMAGE_SAMPLER: uniform_texel += b->count; break;
        case KILN_BINDING_SAMPLER: samplers += b->count; break;
        default: storage += b->count; break;
        }
        last_set = KILN_MAX(last_set, b->set);
    }
    if (iface->binding_count && last_set >= caps->max_bound_descriptor_sets)
        return KILN_RAISE(KILN_ERR_LIMIT, "it uses descriptor set %u; the device binds sets 0..%u "
                          "(maxBoundDescriptorSets %u)", last_set, caps->max_bound_descriptor_sets - 1,
                          caps->max_bound_descriptor_sets);
    if (storage_texel > caps->max_per_stage_storage_images)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u storage images and storage texel buffers; the device allows %u "
                          "(maxPerStageDescriptorStorageImages)", storage_texel, caps->max_per_stage_storage_images);
    if (uniform_texel > caps->max_per_stage_sampled_images)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u sampled images and uniform texel buffers; the device allows %u "
                          "(maxPerStageDescriptorSampledImages)", uniform_texel, caps->max_per_stage_sampled_images);
    if (storage > caps->max_per_stage_storage_buffers)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u storage buffers; the device allows %u "
                          "(maxPerStageDescriptorStorageBuffers)", storage, caps->max_per_stage_storage_buffers);
    if (uniform > caps->max_per_stage_uniform_buffers)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u uniform buffers; the device allows %u "
                          "(maxPerStageDescriptorUniformBuffers)", uniform, caps->max_per_stage_uniform_buffers);
    uint32_t all = storage + uniform + storage_texel + uniform_texel + samplers;
    if (all > caps->max_per_stage_resources)
        return KILN_RAISE(KILN_ERR_LIMIT, "it binds %u resources; the device allows %u per stage "
                          "(maxPerStageResources)", all, caps->max_per_stage_resources);
    return KILN_OK;
}
