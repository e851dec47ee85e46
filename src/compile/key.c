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

#define KEY_FORMAT "kiln-key-3"   /* 3: binding lengths in the push block; params_read, lens_read, groups_read */
#define MAX_INCLUDES 256

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

struct incs {
    struct prog_include *v;
    uint32_t n, cap;
    bool oom;
};

static void note_include(struct incs *incs, const char *req, const char *from, bool relative, const char *path,
                         const char *content, size_t len, const char *refused)
{
    if (incs->oom || !vec_reserve((void **)&incs->v, &incs->cap, incs->n + 1, sizeof *incs->v)) {
        incs->oom = true;
        return;
    }
    struct prog_include *e = &incs->v[incs->n++];
    *e = (struct prog_include){.req = str_dup(req), .from = str_dup(from), .relative = relative,
                               .path = path ? str_dup(path) : NULL,
                               .content = content ? str_ndup(content, len) : NULL, .len = len,
                               .refused = refused ? str_dup(refused) : NULL};
    incs->oom |= !e->req || !e->from || (path && !e->path) || (content && !e->content) || (refused && !e->refused);
}

/* Appends (request, path, bytes) of each file `text` includes, recursively,
 * and keeps each read in incs. */
static void scan_includes(const struct prog_source *src, const char *text, size_t len, const char *from,
                          unsigned depth, unsigned *count, struct bytes *b, struct incs *incs)
{
    if (depth > PROG_MAX_INCLUDE_DEPTH)   /* deeper, the compile refuses the include */
        return;
    size_t pos = 0, n, blanks;
    const char *rest;
    while ((rest = prog_next_directive(text, len, &pos, "include", &n, &blanks))) {
        if (!n || (rest[0] != '"' && rest[0] != '<'))
            continue;
        char close = rest[0] == '"' ? '"' : '>';
        const char *end = memchr(rest + 1, close, n - 1);
        if (!end || *count >= MAX_INCLUDES)
            continue;
        char req[PATH_MAX];
        snprintf(req, sizeof req, "%.*s", (int)(end - rest - 1), rest + 1);
        char path[PATH_MAX] = "", why[PATH_MAX + 160];
        size_t clen = 0;
        char *content = NULL;
        kiln_result r = prog_include_read(src, req, close == '"', from, path, sizeof path, &content, &clen, why,
                                          sizeof why);
        incs->oom |= r == KILN_ERR_NO_MEMORY;   /* not "not found": the key would describe another program */
        (*count)++;
        put_str(b, req);
        put_str(b, from);
        /* A refused file keeps its reason: the compile, served from this
         * snapshot, says why it was refused, not "not found". */
        note_include(incs, req, from, close == '"', content ? path : NULL, content, clen,
                     r == KILN_ERR_IO ? why : NULL);
        if (!content) {
            put_str(b, "");       /* not found or refused: the compile fails alike */
            continue;
        }
        put_str(b, path);
        put_field(b, content, clen);
        scan_includes(src, content, clen, path, depth + 1, count, b, incs);
        free(content);
    }
}

kiln_result ckey_front(const struct prog_source *src, uint8_t **key, size_t *len, struct prog_include **includes,
                       uint32_t *include_count)
{
    struct bytes b = {0};
    struct incs incs = {0};
    put_str(&b, KEY_FORMAT "-front");
    char ver[64];
    unsigned spv_ver = 0, spv_rev = 0;
    shaderc_get_spv_version(&spv_ver, &spv_rev);
    snprintf(ver, sizeof ver, "kiln %d.%d shaderc-spv %u.%u", KILN_VERSION_MAJOR, KILN_VERSION_MINOR, spv_ver, spv_rev);
    put_str(&b, ver);
    put_str(&b, "vulkan1.2");
    put_u64(&b, (uint64_t)(src->optimize > 0));
    put_str(&b, src->entry);
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
    unsigned count = 0;
    scan_includes(src, src->source, src->source_len, src->name, 0, &count, &b, &incs);
    put_u64(&b, count);
    if (b.oom || incs.oom) {
        free(b.p);
        prog_includes_free(incs.v, incs.n);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory for the compile key of %s", src->name);
    }
    *key = b.p;
    *len = b.len;
    *includes = incs.v;
    *include_count = incs.n;
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

