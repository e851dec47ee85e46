/* SPDX-License-Identifier: MIT */
/*
 * scheme.c: nodes, binding checks, barriers, recording and submit (see
 * scheme.h for the model).
 */
#include "scheme.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The predictor's read-only view of a node (spec_view_fn). */
static void node_view(const struct spec_site *site, struct spec_view *out)
{
    const struct node *n = (const struct node *)(const void *)((const char *)site - offsetof(struct node, site));
    uint32_t bound = 0;
    for (uint32_t i = 0; i < n->binding_count; i++)   /* kiln_len(b): set 0, element 0 */
        if (n->bindings[i].buffer && n->bindings[i].set == 0 && n->bindings[i].element == 0 &&
            n->bindings[i].binding < KILN_MAX_BINDINGS)
            bound |= 1u << n->bindings[i].binding;
    *out = (struct spec_view){.node = n->id,
                              .label = n->label,
                              .program = n->prog->name,
                              .state = n->prog->state,
                              .iface = &n->prog->iface,
                              .front = n->prog->front,
                              .params = n->params,
                              .bound = bound,
                              .lens = n->lens,
                              .groups = n->groups};
}

static void mark_params_dirty(struct scheme *s)
{
    if (s->dirty == SCHEME_CLEAN)
        s->dirty = SCHEME_PARAMS;
}

/* Acts on what a predictor hook asked (enum spec_verdict). */
static void heed(struct scheme *s, unsigned verdict)
{
    if (verdict & SPEC_RERECORD)
        mark_params_dirty(s);
}

kiln_result scheme_create(struct kb_device *dev, const char *label, bool skip_pending, bool skip_log,
                          int spec_verify, struct spec_cache *spec, struct scheme **out)
{
    struct scheme *s = mem_calloc(1, sizeof *s);
    if (!s)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for scheme '%s'", label);
    s->dev = dev;
    s->current = -1;
    s->dirty = SCHEME_STRUCT;
    s->skip_pending = skip_pending;
    s->skip_log = skip_log;
    s->spec_verify = spec_verify;
    snprintf(s->label, sizeof s->label, "%s", label);
    spec_sched_init(&s->spec, spec, dev, s->label, node_view);
    *out = s;
    return KILN_OK;
}

/* Counts (+1) or uncounts (-1) a node's hold on what it binds. */
static void bind_refs(struct node *n, int by)
{
    for (uint32_t i = 0; i < n->binding_count + n->reach_count; i++) {
        if (n->bindings[i].buffer) {
            KILN_ASSERT(by > 0 || n->bindings[i].buffer->bind_refs > 0);
            n->bindings[i].buffer->bind_refs += (uint32_t)by;
        }
        if (n->bindings[i].image) {
            KILN_ASSERT(by > 0 || n->bindings[i].image->bind_refs > 0);
            n->bindings[i].image->bind_refs += (uint32_t)by;
        }
    }
}

static void node_free(struct scheme *s, struct node *n)
{
    if (n->bindset)
        kb_bindset_destroy(s->dev, n->bindset);
    bind_refs(n, -1);
    KILN_ASSERT(n->prog->node_refs > 0);
    n->prog->node_refs--;
    free(n);
}

void scheme_destroy(struct scheme *s)
{
    if (s->last_ticket)
        (void)kb_ticket_wait(s->dev, s->last_ticket, UINT64_MAX);
    for (uint32_t i = 0; i < s->node_count; i++) {
        (void)spec_site_remove(&s->spec, &s->nodes[i]->site);
        node_free(s, s->nodes[i]);
    }
    spec_sched_finish(&s->spec);
    for (uint32_t i = 0; i < s->garbage_count; i++)
        kb_bindset_destroy(s->dev, s->garbage[i].bindset);
    for (uint32_t i = 0; i < s->cmd_count; i++)
        kb_cmd_destroy(s->dev, s->cmds[i].cmd);
    free(s->garbage);
    free(s->touches);
    free(s->steps);
    free(s->nodes);
    free(s);
}

/* ---- nodes ------------------------------------------------------------------------ */

static kiln_result check_groups(const struct scheme *s, const char *label, const uint32_t g[3])
{
    const kiln_caps *c = &s->dev->caps;
    static const char axis[] = "xyz";
    for (int i = 0; i < 3; i++) {
        if (g[i] == 0)
            return KILN_RAISE(KILN_ERR_INVALID, "node '%s': a grid of 0 workgroups in %c runs nothing; give at least 1",
                              label, axis[i]);
        if (g[i] > c->max_workgroup_count[i])
            return KILN_RAISE(KILN_ERR_LIMIT, "node '%s': %u workgroups in %c, the device allows at most %u", label,
                              g[i], axis[i], c->max_workgroup_count[i]);
    }
    return KILN_OK;
}

/* Checks a node's bindings against its (ready) program's interface and
 * makes its binding set. */
uint32_t node_param_words(const struct node *n)
{
    if (n->prog->state == KILN_PROGRAM_READY)
        return n->prog->iface.param_words;
    return KILN_MAX(n->param_count, (uint32_t)KILN_PARAM_WORDS);
}

/* Where a descriptor is, for messages: "binding 2", "binding 2 of set 1",
 * with " element 3" for an element of an array. */
static const char *place(char buf[64], uint32_t set, uint32_t binding, uint32_t element, bool array)
{
    int n = snprintf(buf, 64, "binding %u", binding);
    if (set && n > 0 && n < 64)
        n += snprintf(buf + n, 64 - (size_t)n, " of set %u", set);
    if (array && n > 0 && n < 64)
        snprintf(buf + n, 64 - (size_t)n, " element %u", element);
    return buf;
}

static bool is_texel(kiln_binding_kind k)
{
    return k == KILN_BINDING_STORAGE_TEXEL_BUFFER || k == KILN_BINDING_UNIFORM_TEXEL_BUFFER;
}

static bool is_image(kiln_binding_kind k)
{
    return k == KILN_BINDING_STORAGE_IMAGE || k == KILN_BINDING_SAMPLED_IMAGE ||
           k == KILN_BINDING_COMBINED_IMAGE_SAMPLER;
}

static bool has_sampler(kiln_binding_kind k)
{
    return k == KILN_BINDING_SAMPLER || k == KILN_BINDING_COMBINED_IMAGE_SAMPLER;
}

/* Checks one image, sampler or combined image sampler descriptor (the
 * kinds that bind no buffer). */
static kiln_result check_image(struct scheme *s, struct node *n, const kiln_binding_info *want,
                               struct node_binding *b, const char *at)
{
    const kiln_caps *caps = &s->dev->caps;
    const char *kind = prog_kind_name(want->kind);
    bool given_sampler = b->sampler.filter || b->sampler.address;
    if (b->buffer)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a %s in %s; it takes %s, not a buffer (buffer "
                          "'%s' given)", n->label, at, want->name, kind, n->prog->name,
                          want->kind == KILN_BINDING_SAMPLER ? "a sampler (kiln_binding.sampler)"
                                                             : "an image (kiln_binding.image)", b->buffer->label);
    if (b->format)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s is a %s in %s; a format is for texel buffers only (an "
                          "image has its own)", n->label, at, kind, n->prog->name);
    if (given_sampler && !has_sampler(want->kind))
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s ('%s') is a %s in %s, which takes no sampler; a sampler "
                          "goes on a sampler or combined image sampler binding (sampler2D)%s", n->label, at,
                          want->name, kind, n->prog->name,
                          want->kind == KILN_BINDING_STORAGE_IMAGE ? ": a storage image is read with imageLoad, "
                          "unfiltered" : "");
    if (has_sampler(want->kind)) {
        kiln_sampler_desc sd = kiln_sampler_desc_defaults(&b->sampler);
        if (sd.filter > KILN_FILTER_NEAREST || sd.address > KILN_ADDRESS_BORDER)
            return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s: sampler filter %d or address mode %d is no "
                              "kiln_filter or kiln_address_mode", n->label, at, (int)sd.filter, (int)sd.address);
        b->sampler = sd;
    }
    if (want->kind == KILN_BINDING_SAMPLER) {
        if (b->image)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a sampler in %s; it takes a sampler "
                              "(kiln_binding.sampler), not an image (image '%s' given)", n->label, at, want->name,
                              n->prog->name, b->image->label);
        return KILN_OK;
    }
    struct kb_image *img = b->image;
    if (!img)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a %s in %s, bound without an image; give "
                          "kiln_binding.image", n->label, at, want->name, kind, n->prog->name);
    bool storage = want->kind == KILN_BINDING_STORAGE_IMAGE;
    if (!(img->usage & (storage ? KILN_IMAGE_STORAGE : KILN_IMAGE_SAMPLED)))
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s is a %s in %s, but image '%s' was created without %s",
                          n->label, at, kind, n->prog->name, img->label,
                          storage ? "KILN_IMAGE_STORAGE" : "KILN_IMAGE_SAMPLED");
    if (img->dims != want->image_dims)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a %uD image in %s; image '%s' is %uD", n->label,
                          at, want->name, want->image_dims, n->prog->name, img->label, img->dims);
    if (want->image_cube && !img->cube)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a cube image in %s; image '%s' is no cube map "
                          "(kiln_image_desc.cube)", n->label, at, want->name, n->prog->name, img->label);
    if (!want->image_arrayed && !want->image_cube && (img->layers != 1 || img->cube))
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a plain %uD image in %s; image '%s' has %u layers: "
                          "declare an arrayed image (%s%uDArray) or bind an image of one layer", n->label, at,
                          want->name, want->image_dims, n->prog->name, img->label, img->layers,
                          storage ? "image" : "texture", want->image_dims);
    if (storage && b->level >= img->levels)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s ('%s'): level %u; image '%s' has %u level%s", n->label, at,
                          want->name, b->level, img->label, img->levels, img->levels == 1 ? "" : "s");
    if (!storage && b->level)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s ('%s'): level %u; a %s sees every level (a level is for "
                          "storage images)", n->label, at, want->name, b->level, kind);
    b->arrayed = want->image_arrayed;
    b->cube = want->image_cube;
    if (storage && want->format && want->format != img->format)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is declared %s in %s; image '%s' is %s", n->label,
                          at, want->name, kiln_format_name(want->format), n->prog->name, img->label,
                          kiln_format_name(img->format));
    if (storage && !want->format) {
        bool reads = want->access & KILN_ACCESS_READ, writes = want->access & KILN_ACCESS_WRITE;
        if ((reads && !caps->storage_image_read_without_format) ||
            (writes && !caps->storage_image_write_without_format))
            return KILN_RAISE(KILN_ERR_LIMIT, "node '%s': %s ('%s') declares no format qualifier, and the device "
                              "cannot %s a storage image without one (shaderStorageImage%sWithoutFormat); declare "
                              "its format (layout(%s))", n->label, at, want->name, reads ? "read" : "write",
                              reads ? "Read" : "Write", kiln_format_name(img->format));
    }
    if (has_sampler(want->kind) && b->sampler.filter == KILN_FILTER_LINEAR) {
        bool linear;
        (void)kb_image_usage(s->dev, img->format, img->dims, &linear);
        if (!linear)
            return KILN_RAISE(KILN_ERR_LIMIT, "node '%s': %s: the device cannot filter %s images linearly "
                              "(SAMPLED_IMAGE_FILTER_LINEAR); give the binding a nearest sampler", n->label, at,
                              kiln_format_name(img->format));
    }
    return KILN_OK;
}

static const kiln_binding_info *declared(const kiln_program_interface *iface, uint32_t set, uint32_t binding)
{
    for (uint32_t k = 0; k < iface->binding_count; k++)
        if (iface->bindings[k].set == set && iface->bindings[k].binding == binding)
            return &iface->bindings[k];
    return NULL;
}

/* Checks one descriptor a node binds against what its program declares
 * there (want), and notes its access, kind and (a texel buffer's) format. */
static kiln_result check_descriptor(struct scheme *s, struct node *n, const kiln_binding_info *want,
                                    struct node_binding *b)
{
    const kiln_caps *caps = &s->dev->caps;
    char at[64];
    place(at, b->set, b->binding, b->element, want->count > 1);
    b->view_format = KILN_FORMAT_UNDEFINED;
    b->access = want->access;
    b->kind = want->kind;
    if (is_image(want->kind) || want->kind == KILN_BINDING_SAMPLER)
        return check_image(s, n, want, b, at);
    if (!b->buffer)
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a %s in %s, bound without a buffer; give "
                          "kiln_binding.buffer", n->label, at, want->name, prog_kind_name(want->kind),
                          n->prog->name);
    if (b->image || b->sampler.filter || b->sampler.address || b->level)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s ('%s') is a %s in %s; it takes a buffer alone (%s given "
                          "too)", n->label, at, want->name, prog_kind_name(want->kind), n->prog->name,
                          b->image ? "an image" : b->level ? "a mip level" : "a sampler");
    bool texel = is_texel(want->kind);
    bool uniform = want->kind == KILN_BINDING_UNIFORM_BUFFER;
    /* A storage buffer is also bindable as either texel buffer, a uniform
     * one as a uniform texel buffer (kiln.h, kiln_buffer_usage). */
    uint32_t need = uniform ? KILN_BUFFER_UNIFORM
                    : want->kind == KILN_BINDING_UNIFORM_TEXEL_BUFFER ? KILN_BUFFER_STORAGE | KILN_BUFFER_UNIFORM
                                                                      : KILN_BUFFER_STORAGE;
    if (!(b->buffer->usage & need))
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s is a %s in %s, but buffer '%s' was created without %s",
                          n->label, at, prog_kind_name(want->kind), n->prog->name, b->buffer->label,
                          uniform ? "KILN_BUFFER_UNIFORM" : "KILN_BUFFER_STORAGE");
    if (b->format && !texel)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s is a %s in %s; a format (%s) is for texel buffers only",
                          n->label, at, prog_kind_name(want->kind), n->prog->name,
                          kiln_format_name(b->format) ? kiln_format_name(b->format) : "not a kiln_format");
    uint64_t align = texel ? caps->min_texel_buffer_offset_alignment
                     : uniform ? caps->min_uniform_buffer_offset_alignment
                               : caps->min_storage_buffer_offset_alignment;
    if (align && b->offset % align)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s offset %llu is not a multiple of %llu, the device's %s",
                          n->label, at, (unsigned long long)b->offset, (unsigned long long)align,
                          texel ? "minTexelBufferOffsetAlignment"
                          : uniform ? "minUniformBufferOffsetAlignment" : "minStorageBufferOffsetAlignment");
    if (texel) {
        kiln_format f = want->format ? want->format : b->format;
        if (b->format && !kiln_format_name(b->format))
            return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s: format %d is not a kiln_format", n->label, at,
                              (int)b->format);
        if (!f)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is a %s bound without a format: %s declares "
                              "none, so give kiln_binding.format (r32f, rgba8, ...)", n->label, at, want->name,
                              prog_kind_name(want->kind), n->prog->name);
        if (want->format && b->format && b->format != want->format)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') is bound as %s, but %s declares it %s",
                              n->label, at, want->name, kiln_format_name(b->format), n->prog->name,
                              kiln_format_name(want->format));
        uint32_t texel_bytes = kiln_format_size(f);
        if (b->size % texel_bytes)
            return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s (%s, %u-byte texels): a range of %llu bytes is not a "
                              "whole number of texels", n->label, at, kiln_format_name(f), texel_bytes,
                              (unsigned long long)b->size);
        if (b->size / texel_bytes > caps->max_texel_buffer_elements)
            return KILN_RAISE(KILN_ERR_LIMIT, "node '%s': %s: %llu texels, the device allows %u "
                              "(maxTexelBufferElements)", n->label, at, (unsigned long long)(b->size / texel_bytes),
                              caps->max_texel_buffer_elements);
        b->view_format = f;
    } else {
        uint64_t range = uniform ? caps->max_uniform_buffer_range : caps->max_storage_buffer_range;
        if (b->size > range)
            return KILN_RAISE(KILN_ERR_LIMIT, "node '%s': %s range of %llu bytes, the device allows %llu", n->label, at,
                              (unsigned long long)b->size, (unsigned long long)range);
        if (b->size < want->min_size)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') needs at least %llu bytes, %llu are bound",
                              n->label, at, want->name, (unsigned long long)want->min_size,
                              (unsigned long long)b->size);
    }
    return KILN_OK;
}

static kiln_result node_bind(struct scheme *s, struct node *n)
{
    const kiln_program_interface *iface = &n->prog->iface;
    if (n->param_count > iface->param_words)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %u param words given; program %s has %u (%s)", n->label,
                          n->param_count, n->prog->name, iface->param_words,
                          iface->own_push_block ? "the words of its own push_constant block" : "kiln's param words");
    char at[64];
    for (uint32_t i = 0; i < n->binding_count; i++) {
        const struct node_binding *b = &n->bindings[i];
        const kiln_binding_info *want = declared(iface, b->set, b->binding);
        if (!want)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s is not declared by program %s", n->label,
                              place(at, b->set, b->binding, 0, false), n->prog->name);
        if (b->element >= want->count)
            return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': %s ('%s') %s; element %u is past its end", n->label,
                              place(at, b->set, b->binding, 0, false), want->name,
                              want->count > 1 ? "is an array" : "is no array", b->element);
    }
    /* Every descriptor the program declares, bound once (scheme_node_add
     * refused one given twice). */
    for (uint32_t k = 0; k < iface->binding_count; k++) {
        const kiln_binding_info *want = &iface->bindings[k];
        for (uint32_t e = 0; e < want->count; e++) {
            struct node_binding *b = NULL;
            for (uint32_t i = 0; i < n->binding_count; i++)
                if (n->bindings[i].set == want->set && n->bindings[i].binding == want->binding &&
                    n->bindings[i].element == e)
                    b = &n->bindings[i];
            if (!b && want->count > 1)
                return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': program %s declares %s ('%s') as an array of %u; "
                                  "element %u is not bound", n->label, n->prog->name,
                                  place(at, want->set, want->binding, 0, false), want->name, want->count, e);
            if (!b)
                return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': program %s declares %s ('%s') but nothing is bound to it",
                                  n->label, n->prog->name, place(at, want->set, want->binding, 0, false), want->name);
            KILN_TRY(check_descriptor(s, n, want, b));
        }
    }
    struct kb_binding kb[KILN_MAX_DESCRIPTORS];
    for (uint32_t i = 0; i < n->binding_count; i++) {
        const struct node_binding *b = &n->bindings[i];
        kb[i] = (struct kb_binding){.set = b->set, .binding = b->binding, .element = b->element, .kind = b->kind,
                                    .format = b->view_format, .buffer = b->buffer, .offset = b->offset,
                                    .size = b->size, .image = b->image, .sampler = b->sampler, .arrayed = b->arrayed,
                                    .cube = b->cube, .level = b->level};
    }
    return kb_bindset_create(s->dev, n->prog->layout, kb, n->binding_count, &n->bindset);
}

kiln_result scheme_node_add(struct scheme *s, const struct node_init *init, struct node **out)
{
    char label[64];
    snprintf(label, sizeof label, "%s", init->label ? init->label : "");
    if (!label[0])   /* the node desc's "decided later": named by its place */
        snprintf(label, sizeof label, "node%u", s->node_count);
    KILN_TRY(check_groups(s, label, init->groups));
    if (init->binding_count > KILN_MAX_DESCRIPTORS)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %u bindings, at most %d", label, init->binding_count,
                          KILN_MAX_DESCRIPTORS);
    for (uint32_t i = 0; i < init->binding_count; i++) {
        const struct node_binding *b = &init->bindings[i];
        char at[64];
        place(at, b->set, b->binding, b->element, b->element != 0);
        for (uint32_t k = 0; k < i; k++)
            if (init->bindings[k].set == b->set && init->bindings[k].binding == b->binding &&
                init->bindings[k].element == b->element)
                return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s is given twice", label, at);
        if (!b->buffer)   /* an image or a sampler: checked against the program at bind */
            continue;
        if (b->offset > b->buffer->size || b->size > b->buffer->size - b->offset)
            return KILN_RAISE(KILN_ERR_INVALID,
                              "node '%s': %s range [%llu, +%llu) runs past the end of buffer '%s' (%llu bytes)",
                              label, at, (unsigned long long)b->offset, (unsigned long long)b->size,
                              b->buffer->label, (unsigned long long)b->buffer->size);
        if (b->size == 0)
            return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %s has an empty range", label, at);
    }
    if (!vec_reserve((void **)&s->nodes, &s->node_cap, s->node_count + 1, sizeof *s->nodes))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for scheme '%s's node list (%u nodes)", s->label,
                          s->node_count + 1);
    struct node *n = mem_calloc(1, sizeof *n);
    if (!n)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for node %u of scheme '%s'", s->node_count, s->label);
    n->scheme = s;
    n->prog = init->prog;
    memcpy(n->bindings, init->bindings, init->binding_count * sizeof n->bindings[0]);
    n->binding_count = init->binding_count;
    for (uint32_t i = 0; i < init->reach_count && i < KILN_MAX_REACHES; i++)
        n->bindings[n->binding_count + n->reach_count++] =
            (struct node_binding){.set = UINT32_MAX, .buffer = init->reaches[i], .size = init->reaches[i]->size,
                                  .access = KILN_ACCESS_READ | KILN_ACCESS_WRITE, .kind = KILN_BINDING_STORAGE_BUFFER};
    memcpy(n->groups, init->groups, sizeof n->groups);
    if (init->param_count > KILN_MAX_PARAM_WORDS) {
        free(n);
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': %u param words; a node carries at most %d", label,
                          init->param_count, KILN_MAX_PARAM_WORDS);
    }
    memcpy(n->params, init->params, sizeof n->params);
    n->param_count = init->param_count;
    memcpy(n->label, label, sizeof label);
    for (uint32_t i = 0; i < n->binding_count; i++)   /* kiln_len(b): set 0, element 0 */
        if (n->bindings[i].buffer && n->bindings[i].set == 0 && n->bindings[i].element == 0 &&
            n->bindings[i].binding < KILN_MAX_BINDINGS)
            n->lens[n->bindings[i].binding] =
                n->bindings[i].size > UINT32_MAX ? UINT32_MAX : (uint32_t)n->bindings[i].size;
    if (prog_refresh(n->prog) == KILN_PROGRAM_READY) {
        kiln_result r = node_bind(s, n);
        if (r < 0) {
            free(n);
            return r;
        }
    }
    n->prog->node_refs++;
    bind_refs(n, +1);
    n->index = s->node_count;
    s->nodes[s->node_count++] = n;
    s->dirty = SCHEME_STRUCT;
    s->stats.nodes = s->node_count;
    heed(s, spec_site_add(&s->spec, &n->site));
    *out = n;
    return KILN_OK;
}

static void retire_bindset(struct scheme *s, struct kb_bindset *b)
{
    if (!b)
        return;
    if (kb_ticket_done(s->dev) >= s->last_ticket ||
        !vec_reserve((void **)&s->garbage, &s->garbage_cap, s->garbage_count + 1, sizeof *s->garbage)) {
        /* Done already, or no room to defer: the device must finish first. */
        (void)kb_ticket_wait(s->dev, s->last_ticket, UINT64_MAX);
        kb_bindset_destroy(s->dev, b);
        return;
    }
    s->garbage[s->garbage_count++] = (struct scheme_garbage){b, s->last_ticket};
}

void scheme_node_remove(struct node *n)
{
    struct scheme *s = n->scheme;
    (void)spec_site_remove(&s->spec, &n->site);   /* a structural change re-records anyway */
    retire_bindset(s, n->bindset);
    n->bindset = NULL;
    for (uint32_t i = n->index + 1; i < s->node_count; i++) {
        s->nodes[i - 1] = s->nodes[i];
        s->nodes[i - 1]->index = i - 1;
    }
    s->node_count--;
    s->dirty = SCHEME_STRUCT;
    s->stats.nodes = s->node_count;
    node_free(s, n);
}

kiln_result node_set_param(struct node *n, uint32_t slot, uint32_t word)
{
    uint32_t words = node_param_words(n);
    if (slot >= words)
        return KILN_RAISE(KILN_ERR_INVALID, "node '%s': param slot %u, slots are 0..%u%s", n->label, slot, words - 1,
                          n->prog->state != KILN_PROGRAM_READY ? " (its program is still compiling: a program with its "
                                                                 "own push_constant block may have more)"
                          : n->prog->iface.own_push_block ? " (the words of program's own push_constant block)"
                                                          : "");
    if (n->params[slot] != word) {
        heed(n->scheme, spec_param_changed(&n->scheme->spec, &n->site, slot, n->params[slot], word));
        n->params[slot] = word;
        mark_params_dirty(n->scheme);
    }
    return KILN_OK;
}

kiln_result node_set_program(struct node *n, struct prog *p)
{
    if (p == n->prog)
        return KILN_OK;
    /* The swap needs both interfaces: wait for compiles still running. */
    prog_wait(p);
    prog_wait(n->prog);
    if (p->state == KILN_PROGRAM_FAILED) {
        char where[100];
        snprintf(where, sizeof where, "node '%s': ", n->label);
        return prog_raise_failed(p, where);
    }
    if (!n->bindset) {
        /* The node was never bound (its program failed): the new program's
         * bindings are checked when the scheme records. */
        n->prog->node_refs--;
        p->node_refs++;
        n->prog = p;
        (void)spec_program_changed(&n->scheme->spec, &n->site);   /* a structural change re-records anyway */
        n->scheme->dirty = SCHEME_STRUCT;
        return KILN_OK;
    }
    char why[256];
    if (!prog_iface_compatible(&n->prog->iface, &p->iface, why, sizeof why))
        return KILN_RAISE(KILN_ERR_LAYOUT, "node '%s': program %s does not bind like %s: %s", n->label, p->name,
                          n->prog->name, why);
    for (uint32_t k = 0; k < p->iface.binding_count; k++) {
        const kiln_binding_info *want = &p->iface.bindings[k];
        for (uint32_t i = 0; i < n->binding_count; i++) {
            const struct node_binding *b = &n->bindings[i];
            char at[64];
            if (b->set == want->set && b->binding == want->binding && b->size < want->min_size)
                return KILN_RAISE(KILN_ERR_LAYOUT,
                                  "node '%s': program %s needs at least %llu bytes at %s ('%s'), %llu are bound",
                                  n->label, p->name, (unsigned long long)want->min_size,
                                  place(at, b->set, b->binding, b->element, want->count > 1), want->name,
                                  (unsigned long long)b->size);
        }
    }
    n->prog->node_refs--;
    p->node_refs++;
    n->prog = p;
    (void)spec_program_changed(&n->scheme->spec, &n->site);   /* re-recorded below anyway */
    mark_params_dirty(n->scheme);
    return KILN_OK;
}

/* ---- recording ------------------------------------------------------------------------ */

/* An access of a recorded node: a buffer's range, or a whole image (an
 * image is one range). */
struct pending_access {
    const void *res;         /* the kb_buffer or kb_image */
    uint64_t offset, size;
    uint32_t access;
};

static struct pending_access access_of(const struct node_binding *b)
{
    if (b->image)
        return (struct pending_access){b->image, 0, UINT64_MAX, b->access};
    return (struct pending_access){b->buffer, b->offset, b->size, b->access};
}

static bool conflicts(const struct pending_access *p, const struct node_binding *nb)
{
    struct pending_access b = access_of(nb);
    if (!b.res || p->res != b.res || p->offset >= b.offset + b.size || b.offset >= p->offset + p->size)
        return false;
    return ((p->access | b.access) & KILN_ACCESS_WRITE) != 0;
}

static kiln_result place_barriers(struct scheme *s)
{
    struct pending_access *pend = NULL;
    uint32_t np = 0, cap = 0;
    uint64_t barriers = 0;
    for (uint32_t i = 0; i < s->node_count; i++) {
        struct node *n = s->nodes[i];
        if (n->skipped)
            continue;
        bool need = false;
        uint32_t touched = n->binding_count + n->reach_count;
        for (uint32_t b = 0; b < touched && !need; b++)
            for (uint32_t k = 0; k < np && !need; k++)
                need = conflicts(&pend[k], &n->bindings[b]);
        n->barrier_before = need;
        if (need) {
            np = 0;
            barriers++;
        }
        if (!vec_reserve((void **)&pend, &cap, np + touched, sizeof *pend)) {
            free(pend);
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for scheme '%s's hazard list", s->label);
        }
        for (uint32_t b = 0; b < touched; b++)
            if (n->bindings[b].buffer || n->bindings[b].image)   /* a sampler accesses nothing */
                pend[np++] = access_of(&n->bindings[b]);
    }
    free(pend);
    s->stats.barriers = barriers;
    return KILN_OK;
}

static int touch_order(const void *a, const void *b)
{
    const struct scheme_touch *x = a, *y = b;
    uintptr_t p = x->buffer ? (uintptr_t)x->buffer : (uintptr_t)x->image;
    uintptr_t q = y->buffer ? (uintptr_t)y->buffer : (uintptr_t)y->image;
    return p < q ? -1 : p > q;
}

/* The recording's touches: every buffer and image a node it runs binds,
 * once, written if any node may write it. */
static kiln_result collect_touches(struct scheme *s)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->node_count; i++) {
        const struct node *nd = s->nodes[i];
        if (nd->skipped)
            continue;
        uint32_t touched = nd->binding_count + nd->reach_count;
        if (!vec_reserve((void **)&s->touches, &s->touch_cap, n + touched, sizeof *s->touches)) {
            s->touch_count = 0;
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for scheme '%s's list of what it uses",
                              s->label);
        }
        for (uint32_t b = 0; b < touched; b++) {
            const struct node_binding *nb = &nd->bindings[b];
            if (nb->buffer || nb->image)
                s->touches[n++] = (struct scheme_touch){nb->buffer, nb->buffer ? NULL : nb->image,
                                                        (nb->access & KILN_ACCESS_WRITE) != 0};
        }
    }
    if (n)
        qsort(s->touches, n, sizeof *s->touches, touch_order);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (kept && !touch_order(&s->touches[kept - 1], &s->touches[i]))
            s->touches[kept - 1].writes |= s->touches[i].writes;
        else
            s->touches[kept++] = s->touches[i];
    }
    s->touch_count = kept;
    return KILN_OK;
}

struct prog *scheme_waits_for(struct scheme *s)
{
    if (s->skip_pending || (s->dirty == SCHEME_CLEAN && s->current >= 0))
        return NULL;   /* a clean recording's programs were all ready when it was made */
    for (uint32_t i = 0; i < s->node_count; i++)
        if (prog_refresh(s->nodes[i]->prog) == KILN_PROGRAM_PENDING)
            return s->nodes[i]->prog;
    return NULL;
}

/* Every node's program ready and bound (or, under the skip policy, the
 * node skipped), or the error naming the node. */
static kiln_result ready_nodes(struct scheme *s)
{
    s->skipping = 0;
    for (uint32_t i = 0; i < s->node_count; i++) {
        struct node *n = s->nodes[i];
        bool was_skipped = n->skipped;
        n->skipped = false;
        if (prog_refresh(n->prog) == KILN_PROGRAM_PENDING) {
            if (s->skip_pending) {
                n->skipped = true;
                s->skipping++;
                if (s->skip_log && n->skip_logged != n->prog) {
                    n->skip_logged = n->prog;
                    log_warn("scheme '%s': node '%s' skipped: program %s is still compiling", s->label, n->label,
                             n->prog->name);
                }
                continue;
            }
            prog_wait(n->prog);   /* marks it wanted */
        }
        if (was_skipped)
            s->dirty = SCHEME_STRUCT;
        if (n->prog->state == KILN_PROGRAM_FAILED) {
            char where[200];
            snprintf(where, sizeof where, "scheme '%s' node '%s': ", s->label, n->label);
            return prog_raise_failed(n->prog, where);
        }
        if (!n->bindset) {
            KILN_TRY(node_bind(s, n));
            s->dirty = SCHEME_STRUCT;   /* its access sets are known only now */
        }
    }
    return KILN_OK;
}

/* Whether a node skipped at the last record has a program no longer pending. */
static bool skips_resolved(struct scheme *s)
{
    for (uint32_t i = 0; i < s->node_count; i++)
        if (s->nodes[i]->skipped && prog_refresh(s->nodes[i]->prog) != KILN_PROGRAM_PENDING)
            return true;
    return false;
}

static void collect_garbage(struct scheme *s)
{
    if (!s->garbage_count)
        return;
    uint64_t done = kb_ticket_done(s->dev);
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s->garbage_count; i++) {
        if (s->garbage[i].ticket <= done)
            kb_bindset_destroy(s->dev, s->garbage[i].bindset);
        else
            s->garbage[kept++] = s->garbage[i];
    }
    s->garbage_count = kept;
}

/* A retained command buffer the device is done with, made or waited for. */
static kiln_result free_cmd(struct scheme *s, int *out)
{
    uint64_t done = kb_ticket_done(s->dev);
    int oldest = -1;
    for (uint32_t i = 0; i < s->cmd_count; i++) {
        if (s->cmds[i].ticket <= done) {
            *out = (int)i;
            return KILN_OK;
        }
        if (oldest < 0 || s->cmds[i].ticket < s->cmds[oldest].ticket)
            oldest = (int)i;
    }
    if (s->cmd_count < SCHEME_MAX_CMDS) {
        KILN_TRY(kb_cmd_create(s->dev, &s->cmds[s->cmd_count].cmd));
        s->cmds[s->cmd_count].ticket = 0;
        *out = (int)s->cmd_count++;
        s->stats.command_buffers = s->cmd_count;
        return KILN_OK;
    }
    KILN_TRY(kb_ticket_wait(s->dev, s->cmds[oldest].ticket, UINT64_MAX));
    *out = oldest;
    return KILN_OK;
}

static kiln_result record(struct scheme *s)
{
    bool structural_before = s->dirty == SCHEME_STRUCT;
    KILN_TRY(ready_nodes(s));
    bool structural = structural_before || s->dirty == SCHEME_STRUCT || s->current < 0;
    if (structural) {
        KILN_TRY(place_barriers(s));
        KILN_TRY(collect_touches(s));
    }
    if (!vec_reserve((void **)&s->steps, &s->step_cap, 2 * s->node_count + 1, sizeof *s->steps))
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for scheme '%s's %u recorded steps", s->label,
                          2 * s->node_count + 1);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->node_count; i++) {
        struct node *nd = s->nodes[i];
        if (nd->skipped)
            continue;
        if (nd->barrier_before)
            s->steps[n++] = (struct kb_step){.kind = KB_STEP_BARRIER};
        struct kb_step *st = &s->steps[n++];
        struct kb_pipeline *variant = spec_pipeline(&nd->site);
        *st = (struct kb_step){.kind = KB_STEP_DISPATCH,
                               .pipeline = variant ? variant : nd->prog->pipeline,
                               .layout = nd->prog->layout,
                               .bindset = nd->bindset,
                               .label = nd->label};
        memcpy(st->params, nd->params, sizeof st->params);
        memcpy(st->groups, nd->groups, sizeof st->groups);
        memcpy(st->lens, nd->lens, sizeof st->lens);
        st->timed = nd->timed = spec_timed(&nd->site);
        nd->timed_variant = variant != NULL;
    }
    int slot;
    KILN_TRY(free_cmd(s, &slot));
    KILN_TRY(kb_cmd_record(s->dev, s->cmds[slot].cmd, s->steps, n));
    s->current = slot;
    if (structural)
        s->stats.records_full++;
    else
        s->stats.records_params++;
    s->dirty = SCHEME_CLEAN;
    return KILN_OK;
}

void scheme_stats_update(struct scheme *s)
{
    spec_stats(&s->spec, &s->stats);
}


/* What a submit of s runs, for a loss message: the scheme's label and its
 * recorded nodes with their programs (as many as fit). */
static void describe(const struct scheme *s, char *buf, size_t cap)
{
    uint32_t running = 0;
    for (uint32_t i = 0; i < s->node_count; i++)
        running += !s->nodes[i]->skipped;
    size_t used = (size_t)snprintf(buf, cap, "scheme '%s' (%u node%s:", s->label, running, running == 1 ? "" : "s");
    bool first = true;
    for (uint32_t i = 0; i < s->node_count && used < cap; i++) {
        const struct node *n = s->nodes[i];
        if (n->skipped)
            continue;
        used += (size_t)snprintf(buf + used, cap - used, "%s '%s' running program %s", first ? "" : ",", n->label,
                                 n->prog->name);
        first = false;
    }
    if (used < cap)
        snprintf(buf + used, cap - used, ")");
}

/* The cost model's samples: the last submit's timed dispatches, read once
 * the device is done with it (so while a site times, a submit waits for the
 * one before) and handed to the predictor. */
static void collect_times(struct scheme *s)
{
    if (!spec_wants_times(&s->spec) || s->current < 0 || !s->last_ticket)
        return;
    char why[300];
    if (kb_ticket_wait(s->dev, s->last_ticket, UINT64_MAX) < 0) {
        snprintf(why, sizeof why, "waiting for it failed: %s", kiln_last_error());
        err_clear();
        spec_times_lost(&s->spec, why);
        return;
    }
    uint64_t ns[64];
    uint32_t count = 0;
    if (kb_cmd_times(s->dev, s->cmds[s->current].cmd, ns, 64, &count) < 0) {
        snprintf(why, sizeof why, "reading them failed: %s", kiln_last_error());
        err_clear();
        spec_times_lost(&s->spec, why);
        return;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->node_count && k < count; i++) {
        struct node *n = s->nodes[i];
        if (!n->skipped && n->timed)
            spec_time_taken(&s->spec, &n->site, ns[k++], n->timed_variant);
    }
}

/* ---- KILN_SPEC_VERIFY ------------------------------------------------------------------ */

/* Runs one dispatch of n with `pipeline`, alone, and waits for it. */
static kiln_result run_alone(struct scheme *s, struct node *n, struct kb_pipeline *pipeline)
{
    struct kb_cmd *cmd;
    KILN_TRY(kb_cmd_create(s->dev, &cmd));
    struct kb_step st = {.kind = KB_STEP_DISPATCH, .pipeline = pipeline, .layout = n->prog->layout,
                         .bindset = n->bindset, .label = n->label};
    memcpy(st.params, n->params, sizeof st.params);
    memcpy(st.groups, n->groups, sizeof st.groups);
    memcpy(st.lens, n->lens, sizeof st.lens);
    uint64_t t = 0;
    kiln_result r = kb_cmd_record(s->dev, cmd, &st, 1);
    char what[200];
    snprintf(what, sizeof what, "KILN_SPEC_VERIFY's run of node '%s' of scheme '%s' (program %s)", n->label, s->label,
             n->prog->name);
    if (r == KILN_OK)
        r = kb_submit(s->dev, cmd, what, &t);
    if (r == KILN_OK)
        r = kb_ticket_wait(s->dev, t, UINT64_MAX);
    kb_cmd_destroy(s->dev, cmd);
    return r;
}

/* Bytes of what a node binds at b: a buffer's range, an image's texels,
 * nothing for a sampler. */
static size_t bound_bytes(const struct node_binding *b)
{
    return b->image ? (size_t)b->image->bytes : b->buffer ? (size_t)b->size : 0;
}

/* The node's bound ranges and images, read (into bytes[i]) or written
 * back. */
static kiln_result ranges_io(struct scheme *s, struct node *n, uint8_t **bytes, bool write)
{
    for (uint32_t i = 0; i < n->binding_count; i++) {
        const struct node_binding *b = &n->bindings[i];
        if (b->image)
            KILN_TRY(write ? kb_image_write(s->dev, b->image, NULL, bytes[i])
                           : kb_image_read(s->dev, b->image, NULL, bytes[i], NULL));
        else if (b->buffer)
            KILN_TRY(write ? kb_buffer_write(s->dev, b->buffer, b->offset, bytes[i], b->size)
                           : kb_buffer_read(s->dev, b->buffer, b->offset, bytes[i], b->size, NULL));
    }
    return KILN_OK;
}

/* Runs the universal program and the variant on the same inputs (the
 * node's buffers as they are now, restored after each) and compares what
 * each left in the node's ranges. */
static kiln_result verify_node(struct scheme *s, struct node *n)
{
    struct kb_pipeline *variant = spec_pipeline(&n->site);
    if (!variant || !n->bindset)
        return KILN_OK;
    /* Every submit and transfer on the device done first: the copies below
     * go around the hazard tracking. */
    KILN_TRY(kb_ticket_wait(s->dev, s->dev->submitted, UINT64_MAX));
    uint8_t *snap[KILN_MAX_DESCRIPTORS] = {0}, *uni[KILN_MAX_DESCRIPTORS] = {0}, *var[KILN_MAX_DESCRIPTORS] = {0};
    kiln_result r = KILN_OK;
    for (uint32_t i = 0; i < n->binding_count && r == KILN_OK; i++) {
        size_t size = KILN_MAX(bound_bytes(&n->bindings[i]), (size_t)1);
        snap[i] = mem_alloc(size);
        uni[i] = mem_alloc(size);
        var[i] = mem_alloc(size);
        if (!snap[i] || !uni[i] || !var[i])
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for KILN_SPEC_VERIFY's copies");
    }
    if (r == KILN_OK)
        r = ranges_io(s, n, snap, false);
    if (r == KILN_OK)
        r = run_alone(s, n, n->prog->pipeline);
    if (r == KILN_OK)
        r = ranges_io(s, n, uni, false);
    if (r == KILN_OK)
        r = ranges_io(s, n, snap, true);
    if (r == KILN_OK)
        r = run_alone(s, n, variant);
    if (r == KILN_OK)
        r = ranges_io(s, n, var, false);
    if (r == KILN_OK)
        r = ranges_io(s, n, snap, true);
    for (uint32_t i = 0; i < n->binding_count && r == KILN_OK; i++) {
        size_t size = bound_bytes(&n->bindings[i]);
        if (!memcmp(uni[i], var[i], size))
            continue;
        size_t at = 0;
        while (uni[i][at] == var[i][at])
            at++;
        char slots[160];
        spec_bake_text(&n->site, slots, sizeof slots);
        log_error("KILN_SPEC_VERIFY: scheme '%s' node '%s' (%s):%s: the variant wrote other values than the "
                  "universal program at binding %u, byte %zu of its range (0x%02x, universal 0x%02x); the node "
                  "runs its universal program from now on",
                  s->label, n->label, n->prog->name, slots, n->bindings[i].binding, at, var[i][at], uni[i][at]);
        heed(s, spec_verify_failed(&s->spec, &n->site));
        r = KILN_RAISE(KILN_ERR_VERIFY,
                       "KILN_SPEC_VERIFY: node '%s' (%s): its variant (%s) computed other values than the universal "
                       "program at binding %u, byte %zu",
                       n->label, n->prog->name, slots + (slots[0] == ' '), n->bindings[i].binding, at);
    }
    for (uint32_t i = 0; i < n->binding_count; i++) {
        free(snap[i]);
        free(uni[i]);
        free(var[i]);
    }
    return r;
}

/* KILN_SPEC_VERIFY=1: every node promoted by this submit is checked. */
static kiln_result verify_promotions(struct scheme *s)
{
    if (s->spec_verify < 0 || (s->spec_verify == 0 && !env_flag("KILN_SPEC_VERIFY", 0)))
        return KILN_OK;
    kiln_result first = KILN_OK;
    for (uint32_t i = 0; i < s->node_count; i++) {
        struct node *n = s->nodes[i];
        if (!spec_promoted_now(&s->spec, &n->site))
            continue;
        if (!n->bindset)
            KILN_TRY(ready_nodes(s));
        kiln_result r = verify_node(s, n);
        if (r < 0 && first == KILN_OK)
            first = r;
    }
    return first;
}

kiln_result scheme_submit(struct scheme *s, uint64_t *ticket)
{
    collect_garbage(s);
    collect_times(s);
    unsigned verdict = spec_predict(&s->spec);
    heed(s, verdict);
    if (verdict & SPEC_VERIFY)
        KILN_TRY(verify_promotions(s));
    if (s->skipping && skips_resolved(s))
        s->dirty = SCHEME_STRUCT;
    if (s->dirty != SCHEME_CLEAN || s->current < 0) {
        KILN_TRY(record(s));
        describe(s, s->what, sizeof s->what);   /* what runs changes only with a record */
    } else {
        s->stats.replays++;
    }
    uint64_t t;
    KILN_TRY(kb_submit(s->dev, s->cmds[s->current].cmd, s->what, &t));
    s->cmds[s->current].ticket = t;
    s->last_ticket = t;
    for (uint32_t i = 0; i < s->touch_count; i++) {
        struct scheme_touch *u = &s->touches[i];
        if (u->buffer) {
            u->buffer->last_use = t;
            if (u->writes)
                u->buffer->last_write = t;
        } else {
            u->image->last_use = t;
            if (u->writes)
                u->image->last_write = t;
        }
    }
    s->stats.submits++;
    spec_submitted(&s->spec, t);
    s->stats.skipped_nodes += s->skipping;
    *ticket = t;
    return KILN_OK;
}
