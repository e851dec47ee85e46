/* SPDX-License-Identifier: MIT */
/*
 * loader_meta.c: the code object's metadata (see loader.h): kiln's own
 * bounds-checked MessagePack cursor, and the kernels, arguments and limits
 * read from the NT_AMDGPU_METADATA note.
 */
#define _POSIX_C_SOURCE 200809L
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wave/loader.h"
#include "wave/loader_private.h"
#include "base/base.h"

#define MP_MAX_DEPTH 32   /* MessagePack nesting kiln follows */

/* ---- MessagePack ------------------------------------------------------------------- */

/* A cursor over the note's bytes. Every read checks its bytes are there;
 * a failed read sets bad and why, and every later read fails too. */
struct mp {
    const uint8_t *p;
    size_t len, at;
    bool bad;
    char why[400];
};

static bool mp_fail(struct mp *m, const char *fmt, ...) KILN_PRINTF(2, 3);
static bool mp_fail(struct mp *m, const char *fmt, ...)
{
    if (!m->bad) {
        char what[320];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(m->why, sizeof m->why, "%s at byte %zu of the metadata", what, m->at);
    }
    m->bad = true;
    return false;
}

static bool mp_take(struct mp *m, size_t n, const uint8_t **out)
{
    *out = NULL;
    if (m->bad)
        return false;
    if (n > m->len - m->at)
        return mp_fail(m, "truncated value");
    *out = m->p + m->at;
    m->at += n;
    return true;
}

static uint64_t be(const uint8_t *b, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | b[i];
    return v;
}

/* The next value's header: its kind and, for containers and strings, its
 * length; the cursor then stands at its payload. */
enum mp_kind { MP_NIL, MP_BOOL, MP_UINT, MP_INT, MP_FLOAT, MP_STR, MP_BIN, MP_ARRAY, MP_MAP, MP_EXT };
struct mp_val {
    enum mp_kind kind;
    uint64_t u;          /* a uint, a bool, a length or count */
    int64_t i;           /* an int */
    const uint8_t *s;    /* a string's or bin's bytes (u of them) */
};

static bool mp_next(struct mp *m, struct mp_val *v)
{
    const uint8_t *b = NULL;
    if (!mp_take(m, 1, &b))
        return false;
    uint8_t t = b[0];
    size_t n = 0;   /* bytes of length or value that follow */
    *v = (struct mp_val){0};
    if (t <= 0x7f) {
        v->kind = MP_UINT, v->u = t;
        return true;
    }
    if (t >= 0xe0) {
        v->kind = MP_INT, v->i = (int8_t)t;
        return true;
    }
    if ((t & 0xf0) == 0x80) {
        v->kind = MP_MAP, v->u = t & 0x0f;
        goto count;
    }
    if ((t & 0xf0) == 0x90) {
        v->kind = MP_ARRAY, v->u = t & 0x0f;
        goto count;
    }
    if ((t & 0xe0) == 0xa0) {
        v->kind = MP_STR, v->u = t & 0x1f;
        goto bytes;
    }
    switch (t) {
    case 0xc0: v->kind = MP_NIL; return true;
    case 0xc2: case 0xc3: v->kind = MP_BOOL, v->u = t & 1; return true;
    case 0xc4: case 0xc5: case 0xc6:
        v->kind = MP_BIN, n = (size_t)1 << (t - 0xc4);
        if (!mp_take(m, n, &b))
            return false;
        v->u = be(b, n);
        goto bytes;
    case 0xd9: case 0xda: case 0xdb:
        v->kind = MP_STR, n = (size_t)1 << (t - 0xd9);
        if (!mp_take(m, n, &b))
            return false;
        v->u = be(b, n);
        goto bytes;
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        n = (size_t)1 << (t - 0xcc);
        if (!mp_take(m, n, &b))
            return false;
        v->kind = MP_UINT, v->u = be(b, n);
        return true;
    case 0xd0: case 0xd1: case 0xd2: case 0xd3:
        n = (size_t)1 << (t - 0xd0);
        if (!mp_take(m, n, &b))
            return false;
        v->kind = MP_INT;
        {
            uint64_t u = be(b, n);
            unsigned sh = 64 - 8 * (unsigned)n;
            v->i = sh ? (int64_t)(u << sh) >> sh : (int64_t)u;
        }
        if (v->i >= 0)
            v->kind = MP_UINT, v->u = (uint64_t)v->i;
        return true;
    case 0xca: case 0xcb:
        v->kind = MP_FLOAT;
        return mp_take(m, t == 0xca ? 4 : 8, &b);
    case 0xdc: case 0xdd:
        n = t == 0xdc ? 2 : 4;
        if (!mp_take(m, n, &b))
            return false;
        v->kind = MP_ARRAY, v->u = be(b, n);
        goto count;
    case 0xde: case 0xdf:
        n = t == 0xde ? 2 : 4;
        if (!mp_take(m, n, &b))
            return false;
        v->kind = MP_MAP, v->u = be(b, n);
        goto count;
    case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8:
        v->kind = MP_EXT;
        return mp_take(m, 1 + ((size_t)1 << (t - 0xd4)), &b);
    case 0xc7: case 0xc8: case 0xc9:
        n = (size_t)1 << (t - 0xc7);
        if (!mp_take(m, n, &b))
            return false;
        v->kind = MP_EXT;
        return mp_take(m, 1 + be(b, n), &b);
    default:
        m->at--;
        return mp_fail(m, "byte 0x%02x, which starts no MessagePack value,", t);
    }
count:
    /* every element takes at least a byte (a map's entry two) */
    if (v->u > (m->len - m->at) / (v->kind == MP_MAP ? 2 : 1))
        return mp_fail(m, "a container counting more elements than bytes remain");
    return true;
bytes:
    return mp_take(m, v->u, &v->s);
}

/* Skips the rest of a value whose header v was just read. */
static bool mp_skip_rest(struct mp *m, const struct mp_val *v, int depth)
{
    if (v->kind != MP_ARRAY && v->kind != MP_MAP)
        return !m->bad;
    if (depth >= MP_MAX_DEPTH)
        return mp_fail(m, "values nested deeper than 32");
    uint64_t n = v->kind == MP_MAP ? v->u * 2 : v->u;
    for (uint64_t i = 0; i < n; i++) {
        struct mp_val e;
        if (!mp_next(m, &e) || !mp_skip_rest(m, &e, depth + 1))
            return false;
    }
    return true;
}

static bool mp_skip(struct mp *m)
{
    struct mp_val v;
    return mp_next(m, &v) && mp_skip_rest(m, &v, 0);
}

static bool mp_key_is(const struct mp_val *k, const char *s)
{
    size_t n = strlen(s);
    return k->kind == MP_STR && k->u == n && !memcmp(k->s, s, n);
}

static bool mp_uint(struct mp *m, const char *field, uint64_t max, uint64_t *out)
{
    struct mp_val v;
    if (!mp_next(m, &v))
        return false;
    if (v.kind == MP_BOOL) /* .is_const and friends may be written either way */
        v.kind = MP_UINT;
    if (v.kind != MP_UINT || v.u > max) {
        return mp_fail(m, "%s is not an unsigned integer up to %llu", field, (unsigned long long)max);
    }
    *out = v.u;
    return true;
}

static bool mp_str(struct mp *m, const char *field, char *out, size_t cap)
{
    struct mp_val v;
    if (!mp_next(m, &v))
        return false;
    if (v.kind != MP_STR) {
        return mp_fail(m, "%s is not a string", field);
    }
    size_t n = v.u < cap - 1 ? (size_t)v.u : cap - 1;
    memcpy(out, v.s, n);
    out[n] = 0;
    return true;
}

static bool mp_container(struct mp *m, enum mp_kind kind, const char *field, uint64_t *count)
{
    struct mp_val v;
    if (!mp_next(m, &v))
        return false;
    if (v.kind != kind) {
        return mp_fail(m, "%s is not %s", field, kind == MP_MAP ? "a map" : "an array");
    }
    *count = v.u;
    return true;
}

/* ---- the metadata -------------------------------------------------------------------- */


static bool parse_arg(struct mp *m, struct wave_arg *a, uint32_t kernel, uint32_t index)
{
    uint64_t n = 0, u = 0;
    char ctx[96];
    snprintf(ctx, sizeof ctx, "kernel %u's argument %u", kernel, index);
    if (!mp_container(m, MP_MAP, ctx, &n))
        return false;
    bool has_kind = false, has_offset = false, has_size = false;
    for (uint64_t i = 0; i < n; i++) {
        struct mp_val key;
        if (!mp_next(m, &key))
            return false;
        if (mp_key_is(&key, ".name")) {
            if (!mp_str(m, ".name", a->name, sizeof a->name))
                return false;
        } else if (mp_key_is(&key, ".type_name")) {
            if (!mp_str(m, ".type_name", a->type_name, sizeof a->type_name))
                return false;
        } else if (mp_key_is(&key, ".offset")) {
            if (!mp_uint(m, ".offset", UINT32_MAX, &u))
                return false;
            a->offset = (uint32_t)u, has_offset = true;
        } else if (mp_key_is(&key, ".size")) {
            if (!mp_uint(m, ".size", UINT32_MAX, &u))
                return false;
            a->size = (uint32_t)u, has_size = true;
        } else if (mp_key_is(&key, ".is_const")) {
            if (!mp_uint(m, ".is_const", 1, &u))
                return false;
            a->is_const = u;
        } else if (mp_key_is(&key, ".value_kind")) {
            char kind[64];
            if (!mp_str(m, ".value_kind", kind, sizeof kind))
                return false;
            int found = -1;
            for (int k = 0; k < WAVE_ARG_KIND_COUNT; k++)
                if (!strcmp(kind, wave_arg_kind_names[k]))
                    found = k;
            if (found < 0) {
                return mp_fail(m, "%s has an unknown .value_kind '%s'", ctx, kind);
            }
            a->kind = (enum wave_arg_kind)found, has_kind = true;
        } else if (mp_key_is(&key, ".address_space")) {
            char as[32];
            if (!mp_str(m, ".address_space", as, sizeof as))
                return false;
            static const char *const spaces[] = {"generic", "global", "region", "local", "constant", "private"};
            a->address_space = 0;
            for (uint32_t s = 0; s < KILN_ARRAY_LEN(spaces); s++)
                if (!strcmp(as, spaces[s]))
                    a->address_space = s;
        } else {
            if (!mp_skip_rest(m, &key, 1) || !mp_skip(m))
                return false;
        }
    }
    if (!m->bad && (!has_kind || !has_offset || !has_size)) {
        return mp_fail(m, "%s lacks %s", ctx,
                 !has_kind ? ".value_kind" : !has_offset ? ".offset" : ".size");
    }
    return !m->bad;
}

static bool parse_kernel(struct mp *m, struct md_kernel *mk, uint32_t index)
{
    uint64_t n = 0, u = 0;
    char ctx[64];
    snprintf(ctx, sizeof ctx, "kernel %u", index);
    if (!mp_container(m, MP_MAP, ctx, &n))
        return false;
    struct wave_kernel *k = &mk->k;
    k->wavefront_size = 64;
    k->kernarg_align = 8;
    for (uint64_t i = 0; i < n && !m->bad; i++) {
        struct mp_val key;
        if (!mp_next(m, &key))
            return false;
        if (mp_key_is(&key, ".name")) {
            mp_str(m, ".name", k->name, sizeof k->name);
        } else if (mp_key_is(&key, ".symbol")) {
            mp_str(m, ".symbol", mk->symbol, sizeof mk->symbol);
        } else if (mp_key_is(&key, ".kernarg_segment_size")) {
            if (mp_uint(m, ".kernarg_segment_size", 1u << 20, &u))
                k->kernarg_size = (uint32_t)u, mk->has_kernarg_size = true;
        } else if (mp_key_is(&key, ".kernarg_segment_align")) {
            if (mp_uint(m, ".kernarg_segment_align", 1u << 16, &u))
                k->kernarg_align = (uint32_t)u;
        } else if (mp_key_is(&key, ".max_flat_workgroup_size")) {
            if (mp_uint(m, ".max_flat_workgroup_size", 1024, &u))
                k->max_flat_size = (uint32_t)u;
        } else if (mp_key_is(&key, ".wavefront_size")) {
            if (mp_uint(m, ".wavefront_size", 64, &u))
                k->wavefront_size = (uint32_t)u;
        } else if (mp_key_is(&key, ".sgpr_count")) {
            if (mp_uint(m, ".sgpr_count", 1024, &u))
                k->md_sgpr_count = (uint32_t)u;
        } else if (mp_key_is(&key, ".vgpr_count")) {
            if (mp_uint(m, ".vgpr_count", 1024, &u))
                k->md_vgpr_count = (uint32_t)u;
        } else if (mp_key_is(&key, ".reqd_workgroup_size")) {
            if (!mp_container(m, MP_ARRAY, ".reqd_workgroup_size", &u))
                return false;
            if (u != 3)
                return mp_fail(m, ".reqd_workgroup_size does not hold 3 numbers");
            for (int a = 0; a < 3; a++) {
                uint64_t s = 0;
                if (!mp_uint(m, ".reqd_workgroup_size", 1024, &s))
                    return false;
                k->reqd_size[a] = (uint32_t)s;
            }
        } else if (mp_key_is(&key, ".args")) {
            uint64_t count = 0;
            if (!mp_container(m, MP_ARRAY, ".args", &count))
                return false;
            if (count > WAVE_MAX_ARGS)
                return mp_fail(m, ".args lists more than 256 arguments");
            if (k->args)
                return mp_fail(m, ".args given twice");
            k->args = mem_calloc(count ? count : 1, sizeof *k->args);
            if (!k->args)
                return mp_fail(m, "out of memory");
            k->arg_count = (uint32_t)count;
            for (uint32_t a = 0; a < count; a++)
                if (!parse_arg(m, &k->args[a], index, a))
                    return false;
        } else {
            if (!mp_skip_rest(m, &key, 1) || !mp_skip(m))
                return false;
        }
    }
    if (m->bad)
        return false;
    if (!k->name[0])
        return mp_fail(m, "a kernel without .name");
    if (!mk->symbol[0])
        snprintf(mk->symbol, sizeof mk->symbol, "%.*s.kd", WAVE_NAME_LEN - 4, k->name);
    if (k->wavefront_size != 64) {
        return mp_fail(m, "kernel '%s' is wave%u: kiln runs wave64 only", k->name, k->wavefront_size);
    }
    return true;
}

/* The whole note: map of amdhsa.version, amdhsa.target, amdhsa.kernels. */
kiln_result ld_parse_metadata(const uint8_t *p, size_t len, struct wave_code *code, struct md_kernel **out,
                                  uint32_t *count)
{
    struct mp m = {.p = p, .len = len};
    uint64_t n = 0;
    struct md_kernel *ks = NULL;
    uint32_t nk = 0;
    bool version = false;
    if (mp_container(&m, MP_MAP, "the metadata", &n)) {
        for (uint64_t i = 0; i < n && !m.bad; i++) {
            struct mp_val key;
            if (!mp_next(&m, &key))
                break;
            if (mp_key_is(&key, "amdhsa.version")) {
                uint64_t c = 0, major = 0, minor = 0;
                if (!mp_container(&m, MP_ARRAY, "amdhsa.version", &c))
                    break;
                if (c != 2) {
                    mp_fail(&m, "amdhsa.version does not hold 2 numbers");
                    break;
                }
                if (!mp_uint(&m, "amdhsa.version", 100, &major) || !mp_uint(&m, "amdhsa.version", 100, &minor))
                    break;
                if (major != 1 || minor > 2) {
                    mp_fail(&m, "amdhsa.version %u.%u is not 1.0, 1.1 or 1.2 (code object v3..v5)",
                             (unsigned)major, (unsigned)minor);
                    break;
                }
                version = true;
                code->code_object_version = 3 + (uint32_t)minor;
            } else if (mp_key_is(&key, "amdhsa.target")) {
                mp_str(&m, "amdhsa.target", code->target_full, sizeof code->target_full);
            } else if (mp_key_is(&key, "amdhsa.kernels")) {
                uint64_t c = 0;
                if (!mp_container(&m, MP_ARRAY, "amdhsa.kernels", &c))
                    break;
                if (c > WAVE_MAX_KERNELS) {
                    mp_fail(&m, "amdhsa.kernels lists more than 256 kernels");
                    break;
                }
                if (ks) {
                    mp_fail(&m, "amdhsa.kernels given twice");
                    break;
                }
                ks = mem_calloc(c ? c : 1, sizeof *ks);
                if (!ks) {
                    mp_fail(&m, "out of memory");
                    break;
                }
                for (nk = 0; nk < c; nk++)
                    if (!parse_kernel(&m, &ks[nk], nk)) {
                        nk++;   /* its args array is freed with the rest */
                        break;
                    }
            } else if (!mp_skip_rest(&m, &key, 1) || !mp_skip(&m)) {
                break;
            }
        }
    }
    if (!m.bad && !version)
        mp_fail(&m, "no amdhsa.version");
    if (!m.bad && !ks)
        mp_fail(&m, "no amdhsa.kernels");
    if (m.bad) {
        for (uint32_t i = 0; ks && i < nk; i++)
            free(ks[i].k.args);
        free(ks);
        return ld_bad("%s", m.why);
    }
    *out = ks;
    *count = nk;
    return KILN_OK;
}
