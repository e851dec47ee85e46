/* SPDX-License-Identifier: MIT */
/*
 * compare.c: two observations (observe.h's binary layout) compared, the
 * first difference named: the differential oracle's verdict.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "base/bytes.h"
#include "wave/observe.h"


struct obs {
    const char *which;             /* "first", "second" */
    struct bytes_reader r;
    uint32_t waves, vgprs, buffers;
    uint64_t instructions;
};

static kiln_result obs_open(struct obs *o, const char *which, const void *p, size_t n)
{
    o->which = which;
    bytes_reader_init(&o->r, p, n);
    uint32_t magic = bytes_read_u32(&o->r), version = bytes_read_u32(&o->r);
    o->waves = bytes_read_u32(&o->r);
    o->vgprs = bytes_read_u32(&o->r);
    o->buffers = bytes_read_u32(&o->r);
    (void)bytes_read_u32(&o->r);
    o->instructions = bytes_read_u64(&o->r);
    if (o->r.overrun)
        return KILN_RAISE(KILN_ERR_INVALID, "the %s observation is cut short in its header (%zu bytes)", which, n);
    if (magic != WAVE_OBSERVE_MAGIC)
        return KILN_RAISE(KILN_ERR_INVALID, "the %s is not an observation (magic 0x%08x, not 0x%08x)", which, magic,
                          WAVE_OBSERVE_MAGIC);
    if (version != WAVE_OBSERVE_VERSION)
        return KILN_RAISE(KILN_ERR_INVALID, "the %s observation is of version %u; kiln reads version %u", which,
                          version, WAVE_OBSERVE_VERSION);
    if (o->vgprs > 256 || bytes_remaining(&o->r) / WAVE_OBSERVE_WAVE_BYTES(o->vgprs) < o->waves)
        return KILN_RAISE(KILN_ERR_INVALID, "the %s observation declares %u waves of %u VGPRs, more than its %zu bytes",
                          which, o->waves, o->vgprs, n);
    return KILN_OK;
}

static const char *sgpr_name(unsigned s, char *buf, size_t cap)
{
    if (s < 102)
        snprintf(buf, cap, "s%u", s);
    else if (s >= 108 && s < 124)
        snprintf(buf, cap, "ttmp%u", s - 108);
    else {
        static const char *const names[] = {"flat_scratch_lo", "flat_scratch_hi", "xnack_mask_lo", "xnack_mask_hi",
                                            "vcc_lo", "vcc_hi"};
        snprintf(buf, cap, "%s",
                 s < 108 ? names[s - 102] : s == 124 ? "m0" : s == 126 ? "exec_lo" : s == 127 ? "exec_hi" : "s125");
    }
    return buf;
}

kiln_result wave_observe_compare(const void *a, size_t a_size, const void *b, size_t b_size, bool *same, char *why,
                                 size_t cap)
{
    int64_t wave;
    return wave_observe_compare_at(a, a_size, b, b_size, same, why, cap, &wave);
}

kiln_result wave_observe_compare_at(const void *a, size_t a_size, const void *b, size_t b_size, bool *same, char *why,
                                    size_t cap, int64_t *wave_out)
{
    *same = false;
    *wave_out = -1;
    if (cap)
        why[0] = 0;
    struct obs x, y;
    kiln_result r = obs_open(&x, "first", a, a_size);
    if (r == KILN_OK)
        r = obs_open(&y, "second", b, b_size);
    if (r != KILN_OK)
        return r;
    if (x.waves != y.waves || x.vgprs != y.vgprs || x.buffers != y.buffers) {
        snprintf(why, cap, "the shapes differ: %u waves of %u VGPRs and %u buffers against %u of %u and %u", x.waves,
                 x.vgprs, x.buffers, y.waves, y.vgprs, y.buffers);
        return KILN_OK;
    }
    for (uint32_t w = 0; w < x.waves; w++) {
        uint32_t hx[4], hy[4];
        for (int i = 0; i < 4; i++)
            hx[i] = bytes_read_u32(&x.r), hy[i] = bytes_read_u32(&y.r);
        uint64_t lx = bytes_read_u64(&x.r), ly = bytes_read_u64(&y.r);
        uint32_t sccx = bytes_read_u32(&x.r), sccy = bytes_read_u32(&y.r);
        /* what either level could not see is not compared */
        uint32_t blind = bytes_read_u32(&x.r) | bytes_read_u32(&y.r), sblind[4], vblind[8];
        for (int i = 0; i < 4; i++)
            sblind[i] = bytes_read_u32(&x.r) | bytes_read_u32(&y.r);
        for (int i = 0; i < 8; i++)
            vblind[i] = bytes_read_u32(&x.r) | bytes_read_u32(&y.r);
        char where[96];
        snprintf(where, sizeof where, "wave %u (group %u,%u,%u wave %u)", w, hx[0], hx[1], hx[2], hx[3]);
        if (memcmp(hx, hy, sizeof hx)) {
            snprintf(why, cap, "wave %u is group %u,%u,%u wave %u in the first, group %u,%u,%u wave %u in the second",
                     w, hx[0], hx[1], hx[2], hx[3], hy[0], hy[1], hy[2], hy[3]);
            return KILN_OK;
        }
        if (lx != ly) {
            snprintf(why, cap, "%s: its work-item lanes differ: 0x%016" PRIx64 " against 0x%016" PRIx64, where, lx, ly);
            return KILN_OK;
        }
        if (!(blind & 1) && sccx != sccy) {
            *wave_out = w;
            snprintf(why, cap, "%s: scc %u against %u", where, sccx, sccy);
            return KILN_OK;
        }
        for (unsigned s = 0; s < 128; s++) {
            uint32_t vx = bytes_read_u32(&x.r), vy = bytes_read_u32(&y.r);
            if (vx != vy && !((sblind[s / 32] >> (s % 32)) & 1)) {
                char name[24];
                *wave_out = w;
                snprintf(why, cap, "%s: %s is 0x%08x against 0x%08x", where, sgpr_name(s, name, sizeof name), vx, vy);
                return KILN_OK;
            }
        }
        for (uint32_t v = 0; v < x.vgprs; v++)
            for (unsigned l = 0; l < 64; l++) {
                uint32_t vx = bytes_read_u32(&x.r), vy = bytes_read_u32(&y.r);
                if (vx != vy && !((vblind[v / 32] >> (v % 32)) & 1)) {
                    *wave_out = w;
                    snprintf(why, cap, "%s: v%u lane %u is 0x%08x against 0x%08x", where, v, l, vx, vy);
                    return KILN_OK;
                }
            }
    }
    for (uint32_t i = 0; i < x.buffers; i++) {
        uint32_t ax = bytes_read_u32(&x.r), ay = bytes_read_u32(&y.r);
        uint32_t nx = bytes_read_u32(&x.r), ny = bytes_read_u32(&y.r);
        uint64_t sx = bytes_read_u64(&x.r), sy = bytes_read_u64(&y.r);
        if (x.r.overrun || y.r.overrun)
            return KILN_RAISE(KILN_ERR_INVALID, "the %s observation is cut short in buffer %u's head",
                              x.r.overrun ? "first" : "second", i);
        if (ax != ay || sx != sy) {
            snprintf(why, cap, "buffer %u is argument %u of %" PRIu64 " bytes in the first, argument %u of %" PRIu64
                     " in the second", i, ax, sx, ay, sy);
            return KILN_OK;
        }
        const uint8_t *rx = bytes_read_span(&x.r, (size_t)nx * 16), *ry = bytes_read_span(&y.r, (size_t)ny * 16);
        bool fits = sx <= bytes_remaining(&x.r) && sx <= bytes_remaining(&y.r);   /* sx == sy */
        const uint8_t *cx = fits ? bytes_read_span(&x.r, (size_t)(sx + (8 - sx % 8) % 8)) : NULL;
        const uint8_t *cy = fits ? bytes_read_span(&y.r, (size_t)(sy + (8 - sy % 8) % 8)) : NULL;
        if (!rx || !ry || !cx || !cy)
            return KILN_RAISE(KILN_ERR_INVALID, "the %s observation is cut short in argument %u's buffer",
                              !rx || !cx ? "first" : "second", ax);
        for (uint64_t k = 0; k < sx; k++)
            if (cx[k] != cy[k]) {
                snprintf(why, cap, "argument %u's buffer: byte %" PRIu64 " is 0x%02x against 0x%02x", ax, k, cx[k],
                         cy[k]);
                return KILN_OK;
            }
        if (nx != ny || memcmp(rx, ry, (size_t)nx * 16)) {
            snprintf(why, cap, "argument %u's buffer: the same bytes, written in other ranges (%u against %u ranges)",
                     ax, nx, ny);
            return KILN_OK;
        }
    }
    if (bytes_remaining(&x.r) || bytes_remaining(&y.r)) {
        return KILN_RAISE(KILN_ERR_INVALID, "the %s observation has %zu bytes past its end",
                          bytes_remaining(&x.r) ? "first" : "second",
                          bytes_remaining(&x.r) ? bytes_remaining(&x.r) : bytes_remaining(&y.r));
    }
    if (x.instructions != y.instructions) {
        /* levels may execute another number of instructions for the same
         * result; the counts are reported, never judged */
        snprintf(why, cap, "the same state (%" PRIu64 " instructions against %" PRIu64 ")", x.instructions,
                 y.instructions);
    }
    *same = true;
    return KILN_OK;
}
