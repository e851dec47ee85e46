/* SPDX-License-Identifier: MIT */
/*
 * observe.c: the observation's binary and JSON forms (see observe.h for
 * the layout). Both walk the same things in the same order: the run's
 * waves, then each buffer argument with the ranges its written-bytes map
 * holds.
 */
#define _POSIX_C_SOURCE 200809L
#include "wave/observe.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

/* The written ranges of a map of size bytes: calls fn for each. */
static uint32_t ranges(const uint8_t *map, uint64_t size, void (*fn)(void *, uint64_t, uint64_t), void *ctx)
{
    uint32_t n = 0;
    uint64_t i = 0;
    while (map && i < size) {
        if (!((map[i >> 3] >> (i & 7)) & 1)) {
            i++;
            continue;
        }
        uint64_t start = i;
        while (i < size && ((map[i >> 3] >> (i & 7)) & 1))
            i++;
        if (fn)
            fn(ctx, start, i - start);
        n++;
    }
    return n;
}

static void put_range(void *ctx, uint64_t off, uint64_t len)
{
    bytes_put_u64(ctx, off);
    bytes_put_u64(ctx, len);
}

static bool is_buffer(const struct wave_run_desc *d, uint32_t i)
{
    return d->args[i].kind == WAVE_VALUE_BUFFER;
}

kiln_result wave_observe_encode(const struct wave_run_desc *d, const struct wave_result *r, struct bytes *out)
{
    uint32_t buffers = 0;
    for (uint32_t i = 0; i < d->arg_count; i++)
        buffers += is_buffer(d, i);
    bytes_put_u32(out, WAVE_OBSERVE_MAGIC);
    bytes_put_u32(out, WAVE_OBSERVE_VERSION);
    bytes_put_u32(out, r->final_count);
    bytes_put_u32(out, r->vgpr_count);
    bytes_put_u32(out, buffers);
    bytes_put_u32(out, 0);
    bytes_put_u64(out, r->instructions);
    for (uint32_t w = 0; w < r->final_count; w++) {
        const struct wave_final *f = &r->finals[w];
        if (!f->vgpr)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "observation: wave %u's registers were not kept", w);
        for (int a = 0; a < 3; a++)
            bytes_put_u32(out, f->group[a]);
        bytes_put_u32(out, f->wave);
        bytes_put_u64(out, f->lanes);
        bytes_put_u32(out, f->scc);
        bytes_put_u32(out, f->scc_blind);
        for (int i = 0; i < 4; i++)
            bytes_put_u32(out, f->sgpr_blind[i]);
        for (int i = 0; i < 8; i++)
            bytes_put_u32(out, f->vgpr_blind[i]);
        for (int s = 0; s < 128; s++)
            bytes_put_u32(out, f->sgpr[s]);
        for (uint32_t v = 0; v < r->vgpr_count; v++)
            for (int l = 0; l < WAVE_LANES; l++)
                bytes_put_u32(out, f->vgpr[v][l]);
    }
    for (uint32_t i = 0; i < d->arg_count; i++) {
        if (!is_buffer(d, i))
            continue;
        const struct wave_value *v = &d->args[i];
        const uint8_t *map = i < r->written_count ? r->written[i] : NULL;
        bytes_put_u32(out, i);
        bytes_put_u32(out, ranges(map, v->size, NULL, NULL));
        bytes_put_u64(out, v->size);
        ranges(map, v->size, put_range, out);
        bytes_put(out, v->data, (size_t)v->size);
        bytes_put(out, NULL, (size_t)((8 - v->size % 8) % 8));
    }
    if (out->oom)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "observation: out of memory");
    return KILN_OK;
}


struct jrange {
    struct bytes *b;
    bool first;
};

static void json_range(void *ctx, uint64_t off, uint64_t len)
{
    struct jrange *j = ctx;
    bytes_putf(j->b, "%s[%" PRIu64 ", %" PRIu64 "]", j->first ? "" : ", ", off, len);
    j->first = false;
}

kiln_result wave_observe_json(const struct wave_run_desc *d, const struct wave_result *r, struct bytes *out)
{
    bytes_putf(out, "{\n  \"version\": %u,\n  \"instructions\": %" PRIu64 ",\n  \"vgprs\": %u,\n  \"waves\": [", WAVE_OBSERVE_VERSION,
       r->instructions, r->vgpr_count);
    for (uint32_t w = 0; w < r->final_count; w++) {
        const struct wave_final *f = &r->finals[w];
        if (!f->vgpr)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "observation: wave %u's registers were not kept", w);
        uint64_t exec = (uint64_t)f->sgpr[127] << 32 | f->sgpr[126], vcc = (uint64_t)f->sgpr[107] << 32 | f->sgpr[106];
        bytes_putf(out, "%s\n    {\"group\": [%u, %u, %u], \"wave\": %u, \"lanes\": \"0x%016" PRIx64 "\",\n", w ? "," : "",
           f->group[0], f->group[1], f->group[2], f->wave, f->lanes);
        bytes_putf(out, "     \"exec\": \"0x%016" PRIx64 "\", \"vcc\": \"0x%016" PRIx64 "\", \"scc\": %u, \"m0\": %u,\n", exec,
           vcc, f->scc, f->sgpr[124]);
        bool blind = f->scc_blind;
        for (int i = 0; i < 8; i++)
            blind |= (i < 4 && f->sgpr_blind[i]) || f->vgpr_blind[i];
        if (blind) {   /* what the level could not see, as lists of register names */
            bytes_putf(out, "     \"blind\": [%s", f->scc_blind ? "\"scc\"" : "");
            bool first = !f->scc_blind;
            for (unsigned s = 0; s < 128; s++)
                if ((f->sgpr_blind[s / 32] >> (s % 32)) & 1)
                    bytes_putf(out, "%s\"s%u\"", first ? "" : ", ", s), first = false;
            for (unsigned v = 0; v < 256; v++)
                if ((f->vgpr_blind[v / 32] >> (v % 32)) & 1)
                    bytes_putf(out, "%s\"v%u\"", first ? "" : ", ", v), first = false;
            bytes_putf(out, "],\n");
        }
        bytes_putf(out, "     \"sgpr\": [");
        for (int s = 0; s < 128; s++)
            bytes_putf(out, "%s%u", s ? ", " : "", f->sgpr[s]);
        bytes_putf(out, "],\n     \"vgpr\": [");
        for (uint32_t v = 0; v < r->vgpr_count; v++) {
            bytes_putf(out, "%s\n       [", v ? "," : "");
            for (int l = 0; l < WAVE_LANES; l++)
                bytes_putf(out, "%s%u", l ? ", " : "", f->vgpr[v][l]);
            bytes_putf(out, "]");
        }
        bytes_putf(out, "]}");
    }
    bytes_putf(out, "\n  ],\n  \"buffers\": [");
    bool first = true;
    for (uint32_t i = 0; i < d->arg_count; i++) {
        if (!is_buffer(d, i))
            continue;
        const struct wave_value *v = &d->args[i];
        const uint8_t *map = i < r->written_count ? r->written[i] : NULL;
        bytes_putf(out, "%s\n    {\"argument\": %u, \"size\": %" PRIu64 ", \"written\": [", first ? "" : ",", i, v->size);
        first = false;
        struct jrange j = {.b = out, .first = true};
        ranges(map, v->size, json_range, &j);
        bytes_putf(out, "]");
        if (v->size <= 65536) {
            bytes_putf(out, ", \"data\": \"");
            const uint8_t *p = v->data;
            for (uint64_t k = 0; k < v->size; k++)
                bytes_putf(out, "%02x", p[k]);
            bytes_putf(out, "\"");
        }
        bytes_putf(out, "}");
    }
    bytes_putf(out, "\n  ]\n}\n");
    if (out->oom)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "observation: out of memory");
    return KILN_OK;
}
