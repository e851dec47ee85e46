/* SPDX-License-Identifier: MIT */
/*
 * key.c: canonical compile requests and their XXH3-128 hashes.
 *
 * A front-end request is every input that decides the SPIR-V: kiln's key
 * format and compiler versions, the target environment, the optimization switch, the entry, the
 * defines sorted by name, the source bytes, and the request, includer, path
 * and bytes of every file its #include lines reach. Includes are found by a
 * textual scan (resolved the way the compiler resolves them), which also
 * follows includes under #if branches the compiler would skip: a key may
 * hold more than the compile read, never less. The bytes read are kept and
 * the compile is served from them, so a file changed between the request
 * and the compile cannot make SPIR-V its key does not describe.
 *
 * A back-end request: the device key (pipeline-cache UUID, driver version,
 * vendor and device ids), the pipeline layout (from the interface), the
 * specialization constants set (id, size and value of each) and the
 * SPIR-V.
 *
 * A set of specialization constants over a front end (ckey_set): the front
 * end's whole request, then the (id, word) pairs sorted by id. It never
 * compiles GLSL: its node takes the front end's SPIR-V.
 *
 * Fields are length-prefixed, so no two different requests serialize alike.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shaderc/shaderc.h>

#include "compile_private.h"

#define KEY_FORMAT "kiln-key-5"   /* 3: binding lengths in the push block; params_read, lens_read, groups_read; 4: the language, the preamble, the workgroup size; 5: an HLSL register beside [[vk::binding]] yields to it */

static void put(struct bytes *b, const void *data, size_t n) { bytes_put(b, data, n); }
static void put_u64(struct bytes *b, uint64_t v) { put(b, &v, sizeof v); }
static void put_field(struct bytes *b, const void *data, size_t n)
{
    put_u64(b, n);
    put(b, data, n);
}
static void put_str(struct bytes *b, const char *s) { put_field(b, s, strlen(s)); }

static int cmp_define(const void *a, const void *b)
{
    const struct prog_define *x = a, *y = b;
    return strcmp(x->name, y->name);
}

kiln_result ckey_front(const struct prog_source *src, uint8_t **key, size_t *len, struct prog_include **includes,
                       uint32_t *include_count)
{
    struct bytes b = {0};
    put_str(&b, KEY_FORMAT "-front");
    char ver[64];
    unsigned spv_ver = 0, spv_rev = 0;
    shaderc_get_spv_version(&spv_ver, &spv_rev);
    snprintf(ver, sizeof ver, "kiln %d.%d shaderc-spv %u.%u", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, spv_ver, spv_rev);
    put_str(&b, ver);
    /* The language, and the target its compile makes (SPIR-V is taken
     * as given). */
    put_u64(&b, (uint64_t)src->lang);
    put_str(&b, src->lang == KILN_LANGUAGE_HLSL ? "vulkan1.1 spv1.3" : "vulkan1.2");
    put_u64(&b, (uint64_t)(src->optimize > 0));
    put_str(&b, src->entry);
    put_u64(&b, src->preamble != NULL);
    if (src->preamble)
        put_str(&b, src->preamble);
    for (int a = 0; a < 3; a++)
        put_u64(&b, src->workgroup_size[a]);
    struct prog_define *defs = mem_alloc((src->define_count + 1) * sizeof *defs);
    if (!defs) {
        free(b.p);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile key of %s (its defines)",
                          src->name);
    }
    memcpy(defs, src->defines, src->define_count * sizeof *defs);
    qsort(defs, src->define_count, sizeof *defs, cmp_define);
    put_u64(&b, src->define_count);
    for (uint32_t i = 0; i < src->define_count; i++) {
        put_str(&b, defs[i].name);
        put_str(&b, defs[i].value);
    }
    free(defs);
    put_field(&b, src->source, src->source_len);
    struct prog_include *incs = NULL;
    uint32_t count = 0;
    uint64_t bytes = 0;
    kiln_result r = prog_include_gather(src, &incs, &count, &bytes);
    if (r < 0) {
        free(b.p);
        return r;
    }
    /* Each file the scan met, in its order: (request, includer, path and
     * bytes), or an empty path when it was not found or was refused (the
     * compile fails alike). */
    for (uint32_t i = 0; i < count; i++) {
        put_str(&b, incs[i].req);
        put_str(&b, incs[i].from);
        if (!incs[i].content) {
            put_str(&b, "");
            continue;
        }
        put_str(&b, incs[i].path);
        put_field(&b, incs[i].content, incs[i].len);
    }
    put_u64(&b, count);
    if (b.oom) {
        free(b.p);
        prog_includes_free(incs, count);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile key of %s", src->name);
    }
    *key = b.p;
    *len = b.len;
    *includes = incs;
    *include_count = count;
    return KILN_OK;
}

kiln_result ckey_set(const uint8_t *front_key, size_t front_len, const kiln_spec_constant *set, uint32_t n,
                     uint8_t **key, size_t *len)
{
    struct bytes b = {0};
    put_str(&b, KEY_FORMAT "-set");
    put_field(&b, front_key, front_len);
    put_u64(&b, n);
    for (uint32_t i = 0; i < n; i++)
        put_u64(&b, ((uint64_t)set[i].id << 32) | set[i].word);
    if (b.oom) {
        free(b.p);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile key of a set of %u "
                          "specialization constants", n);
    }
    *key = b.p;
    *len = b.len;
    return KILN_OK;
}

kiln_result ckey_back(const struct kb_device *dev, const uint32_t *spirv, size_t words,
                      const kiln_program_interface *iface, uint8_t **key, size_t *len)
{
    struct bytes b = {0};
    put_str(&b, KEY_FORMAT "-back");
    put_field(&b, dev->caps.pipeline_cache_uuid, 16);
    put_u64(&b, dev->caps.driver_version);
    put_u64(&b, ((uint64_t)dev->caps.vendor_id << 32) | dev->caps.device_id);
    put_u64(&b, iface->binding_count);
    for (uint32_t i = 0; i < iface->binding_count; i++) {
        const kiln_binding_info *bi = &iface->bindings[i];
        put_u64(&b, ((uint64_t)bi->set << 32) | bi->binding);
        put_u64(&b, ((uint64_t)bi->kind << 32) | bi->access);
        put_u64(&b, ((uint64_t)bi->count << 32) | (uint32_t)bi->format);   /* the layout's counts; a view's format */
    }
    put_u64(&b, KILN_PUSH_BYTES);   /* the push-constant range every layout has */
    /* The specialization constants set: each set is a pipeline of its own. */
    uint64_t set = 0;
    for (uint32_t i = 0; i < iface->constant_count; i++)
        set += iface->constants[i].set != 0;
    put_u64(&b, set);
    for (uint32_t i = 0; i < iface->constant_count; i++) {
        const kiln_spec_constant_info *c = &iface->constants[i];
        if (c->set) {
            put_u64(&b, ((uint64_t)c->id << 32) | prog_spec_size(c->type));
            put_u64(&b, c->value);
        }
    }
    put_field(&b, spirv, words * 4);
    if (b.oom) {
        free(b.p);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for a back-end compile key (%zu SPIR-V words)",
                          words);
    }
    *key = b.p;
    *len = b.len;
    return KILN_OK;
}

