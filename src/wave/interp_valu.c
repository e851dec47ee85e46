/* SPDX-License-Identifier: MIT */
/*
 * interp_valu.c: the reference interpreter's vector ALU (see interp.h).
 *
 * One instruction runs lane by lane over the lanes exec enables: each
 * source is read for the lane (SGPRs, inline constants and literals are
 * the same for every lane), through the encoding's modifiers in the order
 * the hardware applies them (SDWA's select and sign extension, then abs,
 * then neg; DPP's source lane), the op computes a value and, for VOPC and
 * the carry ops, a bit; then the value is written through the encoding's
 * output side (omod, clamp, SDWA's destination select) and the bits make
 * the mask the op writes (zero for the lanes exec leaves off). Nothing is
 * written before every lane is computed, so an op reading the register it
 * writes sees the old value in every lane.
 *
 * Comparisons (v_cmp*, v_cmpx*) are not listed one by one: their
 * condition and type are read once from ops.def's names.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/base.h"
#include "base/half.h"
#include "wave/interp_float.h"
#include "wave/interp_private.h"

/* ---- comparisons from their names ------------------------------------------------------ */

enum cmp_type { CT_F16, CT_F32, CT_F64, CT_I16, CT_I32, CT_I64, CT_U16, CT_U32, CT_U64 };
struct cmp_sem {
    bool valid, x, is_class;
    uint8_t cond;   /* index into conds[] */
    uint8_t type;
};
static const char *const conds[] = {"f", "lt", "eq", "le", "gt", "lg", "ge", "o", "u", "nge", "nlg",
                                    "ngt", "nle", "neq", "nlt", "tru", "ne", "t"};
static struct cmp_sem cmp_table[WAVE_OP_COUNT];
static pthread_once_t cmp_once = PTHREAD_ONCE_INIT;

static void cmp_init(void)
{
    static const char *const types[] = {"f16", "f32", "f64", "i16", "i32", "i64", "u16", "u32", "u64"};
    for (unsigned op = 1; op < WAVE_OP_COUNT; op++) {
        const struct wave_op_info *info = wave_op_info(op);
        if (!info || info->family != WAVE_FAM_VOPC)
            continue;
        const char *n = info->name;
        struct cmp_sem s = {0};
        if (!strncmp(n, "v_cmpx_", 7))
            s.x = true, n += 7;
        else if (!strncmp(n, "v_cmp_", 6))
            n += 6;
        else
            continue;
        const char *us = strrchr(n, '_');
        if (!us)
            continue;
        for (unsigned t = 0; t < KILN_ARRAY_LEN(types); t++)
            if (!strcmp(us + 1, types[t]))
                s.type = (uint8_t)t, s.valid = true;
        if (!s.valid)
            continue;
        size_t clen = (size_t)(us - n);
        s.valid = false;
        if (clen == 5 && !strncmp(n, "class", 5))
            s.is_class = s.valid = true;
        for (unsigned c = 0; c < KILN_ARRAY_LEN(conds); c++)
            if (strlen(conds[c]) == clen && !strncmp(n, conds[c], clen))
                s.cond = (uint8_t)c, s.valid = true;
        cmp_table[op] = s;
    }
}

static bool fcond(unsigned c, double a, double b)
{
    bool un = isnan(a) || isnan(b);
    switch (c) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return !un && a != b;
    case 6: return a >= b;
    case 7: return !un;
    case 8: return un;
    case 9: return !(a >= b);
    case 10: return un || a == b;
    case 11: return !(a > b);
    case 12: return !(a <= b);
    case 13: return !(a == b);
    case 14: return !(a < b);
    default: return true;   /* tru */
    }
}

static bool icond(unsigned c, int64_t a, int64_t b, bool is_signed)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    switch (c) {
    case 0: return false;
    case 1: return is_signed ? a < b : ua < ub;
    case 2: return a == b;
    case 3: return is_signed ? a <= b : ua <= ub;
    case 4: return is_signed ? a > b : ua > ub;
    case 6: return is_signed ? a >= b : ua >= ub;
    case 16: return a != b;   /* ne */
    default: return true;     /* t */
    }
}

/* ---- operands ---------------------------------------------------------------------------- */


static unsigned vreg(const struct vctx *c, unsigned reg, unsigned slot_bit)
{
    if (c->w->gpr_idx_on && (c->w->gpr_idx_mode & slot_bit))
        reg += c->w->gpr_idx;
    return reg & 0xff;
}

/* Operand n's dword for the lane, before modifiers. */
uint32_t interp_raw32(const struct vctx *c, unsigned n)
{
    const struct wave_operand *o = &c->in->src[n];
    uint32_t v;
    switch (o->kind) {
    case WAVE_OPND_SGPR: v = interp_sget(c->w, o->reg); break;
    case WAVE_OPND_VGPR: {
        int lane = n == 0 ? c->src0_lane : c->lane;
        v = lane < 0 ? 0 : c->w->v[vreg(c, o->reg, 1u << n)][lane];   /* DPP, bound_ctrl: no source lane */
        break;
    }
    case WAVE_OPND_CONST: v = (uint32_t)wave_const_bits(o->value, 32); break;
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: v = o->value; break;
    default: v = 0;
    }
    if (c->in->enc == WAVE_ENC_SDWA && n < 2) {
        unsigned sel = c->in->mods.src_sel[n];
        bool sext = (c->in->mods.sext >> n) & 1;
        if (sel < 4) {
            v = (v >> (8 * sel)) & 0xff;
            if (sext)
                v = (uint32_t)(int32_t)(int8_t)v;
        } else if (sel < 6) {
            v = (v >> (16 * (sel - 4))) & 0xffff;
            if (sext)
                v = (uint32_t)(int32_t)(int16_t)v;
        }
    }
    return v;
}

/* Operand n as 16 bits: an inline constant in the 16-bit form (fp: the
 * half-precision constants), else the low half, or the high one where
 * VOP3's op_sel asks. */
uint32_t interp_raw16(const struct vctx *c, unsigned n, bool fp)
{
    const struct wave_operand *o = &c->in->src[n];
    if (o->kind == WAVE_OPND_CONST)
        return (uint32_t)wave_const_bits(o->value, 16) & 0xffff;
    (void)fp;
    uint32_t v = interp_raw32(c, n);
    if (c->in->enc == WAVE_ENC_VOP3 || wave_op_info(c->in->op)->family == WAVE_FAM_VOP3A)
        if ((c->in->mods.op_sel >> n) & 1)
            v >>= 16;
    return v & 0xffff;
}

uint64_t interp_raw64(const struct vctx *c, unsigned n, bool fp)
{
    const struct wave_operand *o = &c->in->src[n];
    switch (o->kind) {
    case WAVE_OPND_SGPR: return (uint64_t)interp_sget(c->w, o->reg + 1u) << 32 | interp_sget(c->w, o->reg);
    case WAVE_OPND_VGPR: {
        int lane = n == 0 ? c->src0_lane : c->lane;
        unsigned r = vreg(c, o->reg, 1u << n);
        return lane < 0 ? 0 : (uint64_t)c->w->v[(r + 1) & 0xff][lane] << 32 | c->w->v[r][lane];
    }
    case WAVE_OPND_CONST: return wave_const_bits(o->value, 64);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return fp ? (uint64_t)o->value << 32 : o->value;
    default: return 0;
    }
}

/* A float source as the ALU reads it: a denormal is read as zero of its
 * sign where MODE.FP_DENORM flushes inputs (interp_float.h), then abs, then
 * neg. */
float interp_fa(const struct vctx *c, unsigned n)
{
    float v = f32(flush_in32(c->w->mode, interp_raw32(c, n)));
    if ((c->in->mods.abs >> n) & 1)
        v = fabsf(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
double interp_da(const struct vctx *c, unsigned n)
{
    double v = f64(flush_in64(c->w->mode, interp_raw64(c, n, true)));
    if ((c->in->mods.abs >> n) & 1)
        v = fabs(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
float interp_ha(const struct vctx *c, unsigned n)
{
    float v = h2f(flush_in16(c->w->mode, interp_raw16(c, n, true)));
    if ((c->in->mods.abs >> n) & 1)
        v = fabsf(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
/* A 32-bit source moved as bits, with VOP3's abs and neg on its sign bit
 * (v_mov_b32_e64 v0, -v1; v_cndmask_b32_e64 v0, v1, -v1, vcc). */
uint32_t interp_mbits(const struct vctx *c, unsigned n)
{
    uint32_t v = interp_raw32(c, n);
    if ((c->in->mods.abs >> n) & 1)
        v &= 0x7fffffffu;
    if ((c->in->mods.neg >> n) & 1)
        v ^= 0x80000000u;
    return v;
}




/* ---- DPP ----------------------------------------------------------------------------------- */

/* The lane src0 is read from for lane l, or -1 when there is none. */
static int dpp_source(unsigned ctrl, int l)
{
    int row = l & ~15, in_row = l & 15;
    if (ctrl <= 0xff)
        return (l & ~3) + (int)((ctrl >> (2 * (l & 3))) & 3);
    if (ctrl >= 0x101 && ctrl <= 0x10f) {
        int s = in_row + (int)(ctrl & 15);
        return s < 16 ? row + s : -1;
    }
    if (ctrl >= 0x111 && ctrl <= 0x11f) {
        int s = in_row - (int)(ctrl & 15);
        return s >= 0 ? row + s : -1;
    }
    if (ctrl >= 0x121 && ctrl <= 0x12f)   /* row_ror: "row rotate right", the way row_shr shifts */
        return row + ((in_row - (int)(ctrl & 15)) & 15);
    switch (ctrl) {
    case 0x130: return l + 1 < 64 ? l + 1 : -1;     /* wave_shl:1 */
    case 0x134: return (l + 1) & 63;                /* wave_rol:1 */
    case 0x138: return l >= 1 ? l - 1 : -1;         /* wave_shr:1 */
    case 0x13c: return (l + 63) & 63;               /* wave_ror:1 */
    case 0x140: return row + 15 - in_row;           /* row_mirror */
    case 0x141: return row + (in_row & 8) + 7 - (in_row & 7);   /* row_half_mirror */
    case 0x142: return row >= 16 ? row - 1 : -1;    /* row_bcast:15 */
    case 0x143: return l >= 32 ? 31 : -1;           /* row_bcast:31 */
    default: return -2;
    }
}

/* ---- the instruction --------------------------------------------------------------------- */

static void write_dst(struct vctx *c, const struct wave_operand *d, int lane, uint64_t v)
{
    struct wave *w = c->w;
    if (d->kind == WAVE_OPND_VGPR) {
        unsigned r = vreg(c, d->reg, 8);
        uint32_t lo = (uint32_t)v;
        if (c->in->enc == WAVE_ENC_SDWA) {
            unsigned sel = c->in->mods.dst_sel, unused = c->in->mods.dst_unused;
            uint32_t old = w->v[r][lane], mask, shift, val;
            if (sel < 4)
                shift = 8 * sel, mask = 0xffu << shift;
            else if (sel < 6)
                shift = 16 * (sel - 4), mask = 0xffffu << shift;
            else
                shift = 0, mask = UINT32_MAX;
            val = (lo << shift) & mask;
            if (mask != UINT32_MAX) {
                uint32_t below = shift ? (1u << shift) - 1 : 0, above = ~(mask | below);
                uint32_t top = mask & ~(mask >> 1);   /* the field's sign bit */
                if (unused == 2)
                    val |= old & ~mask;
                else if (unused == 1 && (val & top))
                    val |= above;
            }
            lo = val;
        }
        w->v[r][lane] = lo;
        if (d->count >= 2)
            w->v[(r + 1) & 0xff][lane] = (uint32_t)(v >> 32);
    }
}

static void write_mask(struct wave *w, const struct wave_operand *d, uint64_t mask)
{
    if (d->kind != WAVE_OPND_SGPR || d->reg >= 127)
        return;
    w->s[d->reg] = (uint32_t)mask;
    if (d->count >= 2)
        w->s[d->reg + 1] = (uint32_t)(mask >> 32);
}

/* Whether the op writes a 16-bit result into a VGPR (gfx9: the low half,
 * the high half zeroed, unless VOP3's op_sel bit 3 asks for the high). */
static bool is_16bit_result(const struct wave_instr *in)
{
    switch (in->op) {
    case WAVE_OP_V_CVT_F16_F32: return true;
    case WAVE_OP_V_CVT_F32_F16:
    case WAVE_OP_V_PACK_B32_F16:
    case WAVE_OP_V_CVT_PKNORM_I16_F16:
    case WAVE_OP_V_CVT_PKNORM_U16_F16:
    case WAVE_OP_V_MAD_U32_U16:
    case WAVE_OP_V_MAD_I32_I16: return false;
    default: break;
    }
    if (wave_op_info(in->op)->family == WAVE_FAM_VOP3P)
        return false;
    const char *n = wave_op_name(in->op);
    size_t len = strlen(n);
    return len > 4 && (!strcmp(n + len - 4, "_f16") || !strcmp(n + len - 4, "_u16") || !strcmp(n + len - 4, "_i16") ||
                       !strcmp(n + len - 4, "_b16"));
}

kiln_result interp_valu(struct machine *m, struct wave *w, const struct wave_instr *in)
{
    pthread_once(&cmp_once, cmp_init);
    const struct wave_op_info *info = wave_op_info(in->op);
    uint64_t exec = wv_exec(w);
    struct vctx c = {.m = m, .w = w, .in = in};
    int src_lane[WAVE_LANES];
    uint64_t enabled = exec;
    if (in->enc == WAVE_ENC_DPP) {
        unsigned ctrl = in->mods.dpp_ctrl;
        for (int l = 0; l < WAVE_LANES; l++) {
            int s = dpp_source(ctrl, l);
            if (s == -2)
                return interp_fail(m, KILN_ERR_INVALID, "DPP control 0x%x is reserved", ctrl);
            bool row_on = (in->mods.row_mask >> (l >> 4)) & 1, bank_on = (in->mods.bank_mask >> ((l >> 2) & 3)) & 1;
            if (!row_on || !bank_on)
                enabled &= ~(1ull << l);
            if (s < 0 || !((exec >> s) & 1)) {
                if (in->mods.bound_ctrl)
                    s = -1;   /* read as zero */
                else
                    enabled &= ~(1ull << l), s = l;
            }
            src_lane[l] = s;
        }
    }

    /* lane-crossing and special ops */
    switch (in->op) {
    case WAVE_OP_V_NOP:
    case WAVE_OP_V_CLREXCP:
        return KILN_OK;
    case WAVE_OP_V_READFIRSTLANE_B32: {
        int l = exec ? __builtin_ctzll(exec) : 0;
        c.lane = c.src0_lane = l;
        uint32_t v = interp_raw32(&c, 0);
        if (in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg < 128)
            w->s[in->dst[0].reg] = v;
        return KILN_OK;
    }
    case WAVE_OP_V_READLANE_B32: {
        c.lane = c.src0_lane = (int)(interp_raw32(&c, 1) & 63);
        uint32_t v = interp_raw32(&c, 0);
        if (in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg < 128)
            w->s[in->dst[0].reg] = v;
        return KILN_OK;
    }
    case WAVE_OP_V_WRITELANE_B32: {
        c.lane = c.src0_lane = 0;
        uint32_t v = interp_raw32(&c, 0);
        int l = (int)(interp_raw32(&c, 1) & 63);
        if (in->dst[0].kind == WAVE_OPND_VGPR)
            w->v[vreg(&c, in->dst[0].reg, 8)][l] = v;
        return KILN_OK;
    }
    case WAVE_OP_V_SWAP_B32:
        for (int l = 0; l < WAVE_LANES; l++)
            if ((exec >> l) & 1) {
                uint32_t *x = &w->v[in->dst[0].reg & 0xff][l], *y = &w->v[in->src[0].reg & 0xff][l], t = *x;
                *x = *y;
                *y = t;
            }
        return KILN_OK;
    case WAVE_OP_V_SCREEN_PARTITION_4SE_B32:
    case WAVE_OP_V_CUBEID_F32:
    case WAVE_OP_V_CUBESC_F32:
    case WAVE_OP_V_CUBETC_F32:
    case WAVE_OP_V_CUBEMA_F32:
    case WAVE_OP_V_QSAD_PK_U16_U8:
    case WAVE_OP_V_MQSAD_PK_U16_U8:
    case WAVE_OP_V_MQSAD_U32_U8:
    case WAVE_OP_V_TRIG_PREOP_F64:
        return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", info->name);
    default: break;
    }

    /* comparisons */
    if (info->family == WAVE_FAM_VOPC) {
        const struct cmp_sem *s = &cmp_table[in->op];
        if (!s->valid)
            return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", info->name);
        uint64_t mask = 0;
        for (int l = 0; l < WAVE_LANES; l++) {
            if (!((enabled >> l) & 1))
                continue;
            c.lane = c.src0_lane = l;
            bool r;
            if (s->is_class) {
                uint32_t bits = interp_raw32(&c, 1);
                double v;
                bool snan, denorm;   /* in the source's own precision */
                if (s->type == CT_F64) {
                    uint64_t x = interp_raw64(&c, 0, true);
                    v = f64(x), snan = isnan(v) && !((x >> 51) & 1), denorm = fpclassify(v) == FP_SUBNORMAL;
                } else if (s->type == CT_F32) {
                    uint32_t x = interp_raw32(&c, 0);
                    v = f32(x), snan = isnan(v) && !((x >> 22) & 1), denorm = !(x & 0x7f800000u) && (x & 0x7fffffu);
                } else {
                    uint32_t x = interp_raw16(&c, 0, true);
                    v = h2f(x), snan = isnan(v) && !((x >> 9) & 1), denorm = !(x & 0x7c00u) && (x & 0x3ffu);
                }
                if ((in->mods.abs & 1))
                    v = fabs(v);
                if ((in->mods.neg & 1))
                    v = -v;
                r = (class_mask(v, snan, denorm) & bits) != 0;
            } else {
                switch (s->type) {
                case CT_F16: r = fcond(s->cond, interp_ha(&c, 0), interp_ha(&c, 1)); break;
                case CT_F32: r = fcond(s->cond, interp_fa(&c, 0), interp_fa(&c, 1)); break;
                case CT_F64: r = fcond(s->cond, interp_da(&c, 0), interp_da(&c, 1)); break;
                case CT_I16: r = icond(s->cond, (int16_t)interp_raw16(&c, 0, false), (int16_t)interp_raw16(&c, 1, false), true); break;
                case CT_U16: r = icond(s->cond, interp_raw16(&c, 0, false), interp_raw16(&c, 1, false), false); break;
                case CT_I32: r = icond(s->cond, (int32_t)interp_raw32(&c, 0), (int32_t)interp_raw32(&c, 1), true); break;
                case CT_U32: r = icond(s->cond, interp_raw32(&c, 0), interp_raw32(&c, 1), false); break;
                case CT_I64: r = icond(s->cond, (int64_t)interp_raw64(&c, 0, false), (int64_t)interp_raw64(&c, 1, false), true); break;
                default: r = icond(s->cond, (int64_t)interp_raw64(&c, 0, false), (int64_t)interp_raw64(&c, 1, false), false); break;
                }
            }
            if (r)
                mask |= 1ull << l;
        }
        write_mask(w, &in->dst[1], mask);
        if (s->x) {
            w->s[WAVE_SREG_EXEC_LO] = (uint32_t)mask;
            w->s[WAVE_SREG_EXEC_HI] = (uint32_t)(mask >> 32);
        }
        return KILN_OK;
    }

    /* everything else: per lane, results kept until every lane is done */
    static _Thread_local uint64_t results[WAVE_LANES];
    uint64_t flags = 0;
    bool h16 = is_16bit_result(in) && in->dst[0].kind == WAVE_OPND_VGPR;
    for (int l = 0; l < WAVE_LANES; l++) {
        if (!((enabled >> l) & 1))
            continue;
        c.lane = l;
        c.src0_lane = in->enc == WAVE_ENC_DPP ? src_lane[l] : l;
        uint64_t r = 0;
        bool flag = false;
        /* DPP with bound_ctrl and no source lane: src0_lane -1, src0 reads
         * 0 (interp_raw32), and no register changes: src1, or the
         * destination a MAC reads, may be the same register. */
        bool ok = info->family == WAVE_FAM_VOP3P ? interp_lane_vop3p(&c, &r) : interp_lane_op(&c, &r, &flag);
        if (!ok)
            return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", info->name);
        if (h16) {
            /* a 16-bit result: VOP3's op_sel bit 3 writes the high half
             * (keeping the low), otherwise the low half with the high zeroed
             * (gfx9) */
            uint32_t old = w->v[vreg(&c, in->dst[0].reg, 8)][l];
            if ((in->enc == WAVE_ENC_VOP3 || info->family == WAVE_FAM_VOP3A) && (in->mods.op_sel & 8))
                r = (old & 0xffff) | (uint32_t)(r & 0xffff) << 16;
            else
                r &= 0xffff;
        }
        results[l] = r;
        if (flag)
            flags |= 1ull << l;
    }
    for (int l = 0; l < WAVE_LANES; l++)
        if ((enabled >> l) & 1)
            write_dst(&c, &in->dst[0], l, results[l]);
    if (info->flags & WAVE_F_VCC_OUT || in->op == WAVE_OP_V_DIV_SCALE_F32 || in->op == WAVE_OP_V_DIV_SCALE_F64 ||
        in->op == WAVE_OP_V_MAD_U64_U32 || in->op == WAVE_OP_V_MAD_I64_I32)
        write_mask(w, &in->dst[1], flags);
    return KILN_OK;
}
