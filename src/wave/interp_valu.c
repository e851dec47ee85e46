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
#include "wave/interp_private.h"

/* ---- bits and floats --------------------------------------------------------------- */

static inline float f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}
static inline uint32_t b32(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
static inline double f64(uint64_t b)
{
    double f;
    memcpy(&f, &b, 8);
    return f;
}
static inline uint64_t b64(double f)
{
    uint64_t b;
    memcpy(&b, &f, 8);
    return b;
}

static inline float h2f(uint32_t h) { return half_to_float((uint16_t)h); }
static inline uint32_t f2h(float f) { return half_from_float(f); }

/* IEEE-mode min and max: a NaN operand yields the other. */
static float fmin_ieee(float a, float b) { return isnan(a) ? b : isnan(b) ? a : (a < b || (a == b && signbit(a))) ? a : b; }
static float fmax_ieee(float a, float b) { return isnan(a) ? b : isnan(b) ? a : (a > b || (a == b && !signbit(a))) ? a : b; }
static double dmin_ieee(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (a < b || (a == b && signbit(a))) ? a : b; }
static double dmax_ieee(double a, double b) { return isnan(a) ? b : isnan(b) ? a : (a > b || (a == b && !signbit(a))) ? a : b; }
static float fmed3(float a, float b, float c)
{
    if (isnan(a) || isnan(b) || isnan(c))
        return fmin_ieee(fmin_ieee(a, b), c);
    float mx = fmax_ieee(fmax_ieee(a, b), c);
    if (mx == a)
        return fmax_ieee(b, c);
    if (mx == b)
        return fmax_ieee(a, c);
    return fmax_ieee(a, b);
}
static int32_t imed3(int32_t a, int32_t b, int32_t c)
{
    int32_t lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : c > hi ? hi : c;
}
static uint32_t umed3(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    return c < lo ? lo : c > hi ? hi : c;
}

/* Float to integer as the hardware converts: NaN to 0, out of range
 * saturated, truncated toward zero. */
static int32_t cvt_i32(double d)
{
    if (isnan(d))
        return 0;
    if (d >= 2147483647.0)
        return INT32_MAX;
    if (d <= -2147483648.0)
        return INT32_MIN;
    return (int32_t)d;
}
static uint32_t cvt_u32(double d)
{
    if (isnan(d) || d <= 0)
        return 0;
    if (d >= 4294967295.0)
        return UINT32_MAX;
    return (uint32_t)d;
}

static uint32_t class_mask(double v, bool is_snan)
{
    if (isnan(v))
        return is_snan ? 1u : 2u;
    bool neg = signbit(v);
    if (isinf(v))
        return neg ? 1u << 2 : 1u << 9;
    if (v == 0)
        return neg ? 1u << 5 : 1u << 6;
    int c = fpclassify(v);
    if (c == FP_SUBNORMAL)
        return neg ? 1u << 4 : 1u << 7;
    return neg ? 1u << 3 : 1u << 8;
}

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

struct vctx {
    struct machine *m;
    struct wave *w;
    const struct wave_instr *in;
    int lane;
    int src0_lane;   /* DPP: the lane src0 is read from */
};

static unsigned vreg(const struct vctx *c, unsigned reg, unsigned slot_bit)
{
    if (c->w->gpr_idx_on && (c->w->gpr_idx_mode & slot_bit))
        reg += c->w->gpr_idx;
    return reg & 0xff;
}

/* Operand n's dword for the lane, before modifiers. */
static uint32_t raw32(const struct vctx *c, unsigned n)
{
    const struct wave_operand *o = &c->in->src[n];
    uint32_t v;
    switch (o->kind) {
    case WAVE_OPND_SGPR: v = interp_sget(c->w, o->reg); break;
    case WAVE_OPND_VGPR: {
        int lane = n == 0 ? c->src0_lane : c->lane;
        v = c->w->v[vreg(c, o->reg, 1u << n)][lane];
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
static uint32_t raw16(const struct vctx *c, unsigned n, bool fp)
{
    const struct wave_operand *o = &c->in->src[n];
    if (o->kind == WAVE_OPND_CONST)
        return (uint32_t)wave_const_bits(o->value, 16) & 0xffff;
    (void)fp;
    uint32_t v = raw32(c, n);
    if (c->in->enc == WAVE_ENC_VOP3 || wave_op_info(c->in->op)->family == WAVE_FAM_VOP3A)
        if ((c->in->mods.op_sel >> n) & 1)
            v >>= 16;
    return v & 0xffff;
}

static uint64_t raw64(const struct vctx *c, unsigned n, bool fp)
{
    const struct wave_operand *o = &c->in->src[n];
    switch (o->kind) {
    case WAVE_OPND_SGPR: return (uint64_t)interp_sget(c->w, o->reg + 1u) << 32 | interp_sget(c->w, o->reg);
    case WAVE_OPND_VGPR: {
        int lane = n == 0 ? c->src0_lane : c->lane;
        unsigned r = vreg(c, o->reg, 1u << n);
        return (uint64_t)c->w->v[(r + 1) & 0xff][lane] << 32 | c->w->v[r][lane];
    }
    case WAVE_OPND_CONST: return wave_const_bits(o->value, 64);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return fp ? (uint64_t)o->value << 32 : o->value;
    default: return 0;
    }
}

static float fa(const struct vctx *c, unsigned n)
{
    float v = f32(raw32(c, n));
    if ((c->in->mods.abs >> n) & 1)
        v = fabsf(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
static double da(const struct vctx *c, unsigned n)
{
    double v = f64(raw64(c, n, true));
    if ((c->in->mods.abs >> n) & 1)
        v = fabs(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
static float ha(const struct vctx *c, unsigned n)
{
    float v = h2f(raw16(c, n, true));
    if ((c->in->mods.abs >> n) & 1)
        v = fabsf(v);
    if ((c->in->mods.neg >> n) & 1)
        v = -v;
    return v;
}
/* A 32-bit source moved as bits, with VOP3's abs and neg on its sign bit
 * (v_mov_b32_e64 v0, -v1; v_cndmask_b32_e64 v0, v1, -v1, vcc). */
static uint32_t mbits(const struct vctx *c, unsigned n)
{
    uint32_t v = raw32(c, n);
    if ((c->in->mods.abs >> n) & 1)
        v &= 0x7fffffffu;
    if ((c->in->mods.neg >> n) & 1)
        v ^= 0x80000000u;
    return v;
}
#define U(n) raw32(c, (n))
#define I(n) ((int32_t)raw32(c, (n)))
#define U16(n) raw16(c, (n), false)
#define I16(n) ((int16_t)raw16(c, (n), false))
#define F(n) fa(c, (n))
#define D(n) da(c, (n))
#define H(n) ha(c, (n))
#define U64(n) raw64(c, (n), false)

/* Output modifiers of a float result. */
static float fout(const struct vctx *c, float v)
{
    switch (c->in->mods.omod) {
    case 1: v *= 2.0f; break;
    case 2: v *= 4.0f; break;
    case 3: v *= 0.5f; break;
    }
    if (c->in->mods.clamp)
        v = isnan(v) ? 0.0f : v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    return v;
}
static double dout(const struct vctx *c, double v)
{
    switch (c->in->mods.omod) {
    case 1: v *= 2.0; break;
    case 2: v *= 4.0; break;
    case 3: v *= 0.5; break;
    }
    if (c->in->mods.clamp)
        v = isnan(v) ? 0.0 : v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v;
    return v;
}
#define RF(x) (*res = b32(fout(c, (x))))
#define RD(x) (*res = b64(dout(c, (x))))
#define RH(x) (*res = f2h(fout(c, (x))))
#define RU(x) (*res = (uint32_t)(x))

static uint32_t sat_u16(int32_t v) { return v < 0 ? 0 : v > 65535 ? 65535 : (uint32_t)v; }
static uint32_t sat_i16(int32_t v) { return (uint32_t)(uint16_t)(int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v); }

static float frexp_mant(float x)
{
    if (isnan(x) || isinf(x))
        return x;
    int e;
    return frexpf(x, &e);
}
static int32_t frexp_exp(double x)
{
    if (isnan(x) || isinf(x) || x == 0)
        return 0;
    int e;
    frexp(x, &e);
    return e;
}

static double div_fixup(double q, double den, double num)
{
    if (isnan(den))
        return den;
    if (isnan(num))
        return num;
    bool sign = signbit(den) != signbit(num);
    if (den == 0 && num == 0)
        return NAN;
    if (isinf(den) && isinf(num))
        return NAN;
    if (den == 0 || isinf(num))
        return sign ? -INFINITY : INFINITY;
    if (isinf(den) || num == 0)
        return sign ? -0.0 : 0.0;
    (void)q;
    return num / den;
}

/* ---- one lane ---------------------------------------------------------------------------- */

/* Computes the op for c->lane into *res (and *flag for carry-outs). Returns
 * false for an op this function does not run. */
static bool lane_op(struct vctx *c, uint64_t *res, bool *flag)
{
    const struct wave_instr *in = c->in;
    uint64_t t64;
    uint32_t a, b;
    switch (in->op) {
    /* VOP1 */
    case WAVE_OP_V_MOV_B32: RU(mbits(c, 0)); break;
    case WAVE_OP_V_NOT_B32: RU(~U(0)); break;
    case WAVE_OP_V_BFREV_B32:
        a = U(0), b = 0;
        for (int i = 0; i < 32; i++)
            b |= ((a >> i) & 1u) << (31 - i);
        RU(b);
        break;
    case WAVE_OP_V_FFBH_U32: a = U(0); RU(a ? (uint32_t)__builtin_clz(a) : UINT32_MAX); break;
    case WAVE_OP_V_FFBL_B32: a = U(0); RU(a ? (uint32_t)__builtin_ctz(a) : UINT32_MAX); break;
    case WAVE_OP_V_FFBH_I32:
        a = U(0);
        if (a == 0 || a == UINT32_MAX)
            RU(UINT32_MAX);
        else
            RU((uint32_t)__builtin_clz((int32_t)a < 0 ? ~a : a) - 1);
        break;
    case WAVE_OP_V_CVT_I32_F64: RU((uint32_t)cvt_i32(D(0))); break;
    case WAVE_OP_V_CVT_U32_F64: RU(cvt_u32(D(0))); break;
    case WAVE_OP_V_CVT_F64_I32: RD((double)I(0)); break;
    case WAVE_OP_V_CVT_F64_U32: RD((double)U(0)); break;
    case WAVE_OP_V_CVT_F32_I32: RF((float)I(0)); break;
    case WAVE_OP_V_CVT_F32_U32: RF((float)U(0)); break;
    case WAVE_OP_V_CVT_U32_F32: RU(cvt_u32(F(0))); break;
    case WAVE_OP_V_CVT_I32_F32: RU((uint32_t)cvt_i32(F(0))); break;
    case WAVE_OP_V_CVT_RPI_I32_F32: RU((uint32_t)cvt_i32(floor((double)F(0) + 0.5))); break;
    case WAVE_OP_V_CVT_FLR_I32_F32: RU((uint32_t)cvt_i32(floor((double)F(0)))); break;
    case WAVE_OP_V_CVT_OFF_F32_I4: RF((float)((int32_t)(U(0) << 28) >> 28) * 0.0625f); break;
    case WAVE_OP_V_CVT_F32_F64: RF((float)D(0)); break;
    case WAVE_OP_V_CVT_F64_F32: RD((double)F(0)); break;
    case WAVE_OP_V_CVT_F32_UBYTE0: RF((float)(U(0) & 0xff)); break;
    case WAVE_OP_V_CVT_F32_UBYTE1: RF((float)((U(0) >> 8) & 0xff)); break;
    case WAVE_OP_V_CVT_F32_UBYTE2: RF((float)((U(0) >> 16) & 0xff)); break;
    case WAVE_OP_V_CVT_F32_UBYTE3: RF((float)(U(0) >> 24)); break;
    case WAVE_OP_V_CVT_F16_F32: RH(F(0)); break;
    case WAVE_OP_V_CVT_F32_F16: RF(H(0)); break;
    case WAVE_OP_V_CVT_F16_U16: RH((float)U16(0)); break;
    case WAVE_OP_V_CVT_F16_I16: RH((float)I16(0)); break;
    case WAVE_OP_V_CVT_U16_F16: {
        float h = H(0);
        RU(isnan(h) || h <= 0 ? 0 : h >= 65535.0f ? 65535 : (uint32_t)h);
        break;
    }
    case WAVE_OP_V_CVT_I16_F16: {
        float h = H(0);
        RU(isnan(h) ? 0 : sat_i16((int32_t)fmaxf(fminf(h, 40000.0f), -40000.0f)));
        break;
    }
    case WAVE_OP_V_CVT_NORM_I16_F16: RU(sat_i16((int32_t)nearbyintf(fmaxf(-1.0f, fminf(1.0f, H(0))) * 32767.0f))); break;
    case WAVE_OP_V_CVT_NORM_U16_F16: RU(sat_u16((int32_t)nearbyintf(fmaxf(0.0f, fminf(1.0f, H(0))) * 65535.0f))); break;
    case WAVE_OP_V_SAT_PK_U8_I16: {
        int16_t lo = (int16_t)U(0), hi = (int16_t)(U(0) >> 16);
        RU((uint32_t)(lo < 0 ? 0 : lo > 255 ? 255 : lo) | (uint32_t)(hi < 0 ? 0 : hi > 255 ? 255 : hi) << 8);
        break;
    }
    case WAVE_OP_V_TRUNC_F64: RD(trunc(D(0))); break;
    case WAVE_OP_V_CEIL_F64: RD(ceil(D(0))); break;
    case WAVE_OP_V_RNDNE_F64: RD(nearbyint(D(0))); break;
    case WAVE_OP_V_FLOOR_F64: RD(floor(D(0))); break;
    case WAVE_OP_V_FRACT_F64: {
        double x = D(0);
        RD(isinf(x) ? NAN : fmin(x - floor(x), 0x1.fffffffffffffp-1));
        break;
    }
    case WAVE_OP_V_FRACT_F32: {
        float x = F(0);
        RF(isinf(x) ? NAN : fminf(x - floorf(x), 0x1.fffffep-1f));
        break;
    }
    case WAVE_OP_V_TRUNC_F32: RF(truncf(F(0))); break;
    case WAVE_OP_V_CEIL_F32: RF(ceilf(F(0))); break;
    case WAVE_OP_V_RNDNE_F32: RF(nearbyintf(F(0))); break;
    case WAVE_OP_V_FLOOR_F32: RF(floorf(F(0))); break;
    case WAVE_OP_V_EXP_F32: case WAVE_OP_V_EXP_LEGACY_F32: RF(exp2f(F(0))); break;
    case WAVE_OP_V_LOG_F32: case WAVE_OP_V_LOG_LEGACY_F32: RF(log2f(F(0))); break;
    case WAVE_OP_V_RCP_F32: case WAVE_OP_V_RCP_IFLAG_F32: RF(1.0f / F(0)); break;
    case WAVE_OP_V_RSQ_F32: RF(1.0f / sqrtf(F(0))); break;
    case WAVE_OP_V_RCP_F64: RD(1.0 / D(0)); break;
    case WAVE_OP_V_RSQ_F64: RD(1.0 / sqrt(D(0))); break;
    case WAVE_OP_V_SQRT_F32: RF(sqrtf(F(0))); break;
    case WAVE_OP_V_SQRT_F64: RD(sqrt(D(0))); break;
    case WAVE_OP_V_SIN_F32: RF((float)sin((double)F(0) * 6.283185307179586)); break;
    case WAVE_OP_V_COS_F32: RF((float)cos((double)F(0) * 6.283185307179586)); break;
    case WAVE_OP_V_FREXP_EXP_I32_F64: RU((uint32_t)frexp_exp(D(0))); break;
    case WAVE_OP_V_FREXP_MANT_F64: {
        double x = D(0);
        int e;
        RD(isnan(x) || isinf(x) ? x : frexp(x, &e));
        break;
    }
    case WAVE_OP_V_FREXP_EXP_I32_F32: RU((uint32_t)frexp_exp(F(0))); break;
    case WAVE_OP_V_FREXP_MANT_F32: RF(frexp_mant(F(0))); break;
    case WAVE_OP_V_RCP_F16: RH(1.0f / H(0)); break;
    case WAVE_OP_V_SQRT_F16: RH(sqrtf(H(0))); break;
    case WAVE_OP_V_RSQ_F16: RH(1.0f / sqrtf(H(0))); break;
    case WAVE_OP_V_LOG_F16: RH(log2f(H(0))); break;
    case WAVE_OP_V_EXP_F16: RH(exp2f(H(0))); break;
    case WAVE_OP_V_FREXP_MANT_F16: RH(frexp_mant(H(0))); break;
    case WAVE_OP_V_FREXP_EXP_I16_F16: RU((uint32_t)(uint16_t)frexp_exp(H(0))); break;
    case WAVE_OP_V_FLOOR_F16: RH(floorf(H(0))); break;
    case WAVE_OP_V_CEIL_F16: RH(ceilf(H(0))); break;
    case WAVE_OP_V_TRUNC_F16: RH(truncf(H(0))); break;
    case WAVE_OP_V_RNDNE_F16: RH(nearbyintf(H(0))); break;
    case WAVE_OP_V_FRACT_F16: {
        float x = H(0);
        RH(isinf(x) ? NAN : fminf(x - floorf(x), 0x1.ffcp-1f));
        break;
    }
    case WAVE_OP_V_SIN_F16: RH((float)sin((double)H(0) * 6.283185307179586)); break;
    case WAVE_OP_V_COS_F16: RH((float)cos((double)H(0) * 6.283185307179586)); break;

    /* VOP2 */
    case WAVE_OP_V_CNDMASK_B32: RU((U64(2) >> c->lane) & 1 ? mbits(c, 1) : mbits(c, 0)); break;
    case WAVE_OP_V_ADD_F32: RF(F(0) + F(1)); break;
    case WAVE_OP_V_SUB_F32: RF(F(0) - F(1)); break;
    case WAVE_OP_V_SUBREV_F32: RF(F(1) - F(0)); break;
    case WAVE_OP_V_MUL_LEGACY_F32: {
        float x = F(0), y = F(1);
        RF(x == 0.0f || y == 0.0f ? 0.0f : x * y);
        break;
    }
    case WAVE_OP_V_MUL_F32: RF(F(0) * F(1)); break;
    case WAVE_OP_V_MUL_I32_I24: RU((uint32_t)((int32_t)(U(0) << 8) >> 8) * (uint32_t)((int32_t)(U(1) << 8) >> 8)); break;
    case WAVE_OP_V_MUL_HI_I32_I24:
        RU((uint32_t)(((int64_t)((int32_t)(U(0) << 8) >> 8) * (int64_t)((int32_t)(U(1) << 8) >> 8)) >> 32));
        break;
    case WAVE_OP_V_MUL_U32_U24: RU((U(0) & 0xffffff) * (U(1) & 0xffffff)); break;
    case WAVE_OP_V_MUL_HI_U32_U24: RU(((uint64_t)(U(0) & 0xffffff) * (U(1) & 0xffffff)) >> 32); break;
    case WAVE_OP_V_MIN_F32: RF(fmin_ieee(F(0), F(1))); break;
    case WAVE_OP_V_MAX_F32: RF(fmax_ieee(F(0), F(1))); break;
    case WAVE_OP_V_MIN_I32: RU(I(0) < I(1) ? I(0) : I(1)); break;
    case WAVE_OP_V_MAX_I32: RU(I(0) > I(1) ? I(0) : I(1)); break;
    case WAVE_OP_V_MIN_U32: RU(U(0) < U(1) ? U(0) : U(1)); break;
    case WAVE_OP_V_MAX_U32: RU(U(0) > U(1) ? U(0) : U(1)); break;
    case WAVE_OP_V_LSHRREV_B32: RU(U(1) >> (U(0) & 31)); break;
    case WAVE_OP_V_ASHRREV_I32: RU((uint32_t)(I(1) >> (U(0) & 31))); break;
    case WAVE_OP_V_LSHLREV_B32: RU(U(1) << (U(0) & 31)); break;
    case WAVE_OP_V_AND_B32: RU(U(0) & U(1)); break;
    case WAVE_OP_V_OR_B32: RU(U(0) | U(1)); break;
    case WAVE_OP_V_XOR_B32: RU(U(0) ^ U(1)); break;
    case WAVE_OP_V_MAC_F32: RF(F(0) * F(1) + f32(c->w->v[in->dst[0].reg & 0xff][c->lane])); break;
    case WAVE_OP_V_MADMK_F32: case WAVE_OP_V_MADAK_F32: RF(F(0) * F(1) + F(2)); break;
    case WAVE_OP_V_ADD_CO_U32: t64 = (uint64_t)U(0) + U(1); *flag = t64 >> 32; RU(t64); break;
    case WAVE_OP_V_SUB_CO_U32: a = U(0), b = U(1); *flag = b > a; RU(a - b); break;
    case WAVE_OP_V_SUBREV_CO_U32: a = U(1), b = U(0); *flag = b > a; RU(a - b); break;
    case WAVE_OP_V_ADDC_CO_U32:
        t64 = (uint64_t)U(0) + U(1) + ((U64(2) >> c->lane) & 1);
        *flag = t64 >> 32;
        RU(t64);
        break;
    case WAVE_OP_V_SUBB_CO_U32: {
        uint64_t x = U(0), y = (uint64_t)U(1) + ((U64(2) >> c->lane) & 1);
        *flag = y > x;
        RU(x - y);
        break;
    }
    case WAVE_OP_V_SUBBREV_CO_U32: {
        uint64_t x = U(1), y = (uint64_t)U(0) + ((U64(2) >> c->lane) & 1);
        *flag = y > x;
        RU(x - y);
        break;
    }
    case WAVE_OP_V_ADD_U32: case WAVE_OP_V_ADD_I32: RU(U(0) + U(1)); break;
    case WAVE_OP_V_SUB_U32: case WAVE_OP_V_SUB_I32: RU(U(0) - U(1)); break;
    case WAVE_OP_V_SUBREV_U32: RU(U(1) - U(0)); break;
    case WAVE_OP_V_ADD_F16: RH(H(0) + H(1)); break;
    case WAVE_OP_V_SUB_F16: RH(H(0) - H(1)); break;
    case WAVE_OP_V_SUBREV_F16: RH(H(1) - H(0)); break;
    case WAVE_OP_V_MUL_F16: RH(H(0) * H(1)); break;
    case WAVE_OP_V_MAC_F16: RH(H(0) * H(1) + h2f(c->w->v[in->dst[0].reg & 0xff][c->lane] & 0xffff)); break;
    case WAVE_OP_V_MADMK_F16: case WAVE_OP_V_MADAK_F16: RH(H(0) * H(1) + H(2)); break;
    case WAVE_OP_V_ADD_U16: case WAVE_OP_V_ADD_I16: RU((U16(0) + U16(1)) & 0xffff); break;
    case WAVE_OP_V_SUB_U16: case WAVE_OP_V_SUB_I16: RU((U16(0) - U16(1)) & 0xffff); break;
    case WAVE_OP_V_SUBREV_U16: RU((U16(1) - U16(0)) & 0xffff); break;
    case WAVE_OP_V_MUL_LO_U16: RU((U16(0) * U16(1)) & 0xffff); break;
    case WAVE_OP_V_LSHLREV_B16: RU((U16(1) << (U16(0) & 15)) & 0xffff); break;
    case WAVE_OP_V_LSHRREV_B16: RU(U16(1) >> (U16(0) & 15)); break;
    case WAVE_OP_V_ASHRREV_I16: RU((uint16_t)(I16(1) >> (U16(0) & 15))); break;
    case WAVE_OP_V_MAX_F16: RH(fmax_ieee(H(0), H(1))); break;
    case WAVE_OP_V_MIN_F16: RH(fmin_ieee(H(0), H(1))); break;
    case WAVE_OP_V_MAX_U16: RU(U16(0) > U16(1) ? U16(0) : U16(1)); break;
    case WAVE_OP_V_MAX_I16: RU((uint16_t)(I16(0) > I16(1) ? I16(0) : I16(1))); break;
    case WAVE_OP_V_MIN_U16: RU(U16(0) < U16(1) ? U16(0) : U16(1)); break;
    case WAVE_OP_V_MIN_I16: RU((uint16_t)(I16(0) < I16(1) ? I16(0) : I16(1))); break;
    case WAVE_OP_V_LDEXP_F16: RH(ldexpf(H(0), I16(1))); break;

    /* VOP3 only */
    case WAVE_OP_V_MAD_LEGACY_F32: {
        float x = F(0), y = F(1);
        RF((x == 0.0f || y == 0.0f ? 0.0f : x * y) + F(2));
        break;
    }
    case WAVE_OP_V_MAD_F32: RF(F(0) * F(1) + F(2)); break;
    case WAVE_OP_V_MAD_I32_I24:
        RU((uint32_t)((int32_t)(U(0) << 8) >> 8) * (uint32_t)((int32_t)(U(1) << 8) >> 8) + U(2));
        break;
    case WAVE_OP_V_MAD_U32_U24: RU((U(0) & 0xffffff) * (U(1) & 0xffffff) + U(2)); break;
    case WAVE_OP_V_BFE_U32: {
        uint32_t off = U(1) & 31, w = U(2) & 31;
        RU(w == 0 ? 0 : (U(0) >> off) & (w >= 32 ? UINT32_MAX : (1u << w) - 1));
        break;
    }
    case WAVE_OP_V_BFE_I32: {
        uint32_t off = U(1) & 31, w = U(2) & 31;
        if (w == 0)
            RU(0);
        else {
            uint32_t v = U(0) >> off;
            RU((uint32_t)((int32_t)(v << (32 - w)) >> (32 - w)));
        }
        break;
    }
    case WAVE_OP_V_BFI_B32: RU((U(0) & U(1)) | (~U(0) & U(2))); break;
    case WAVE_OP_V_FMA_F32: RF(fmaf(F(0), F(1), F(2))); break;
    case WAVE_OP_V_FMA_F64: RD(fma(D(0), D(1), D(2))); break;
    case WAVE_OP_V_LERP_U8: {
        uint32_t x = U(0), y = U(1), z = U(2), r = 0;
        for (int i = 0; i < 4; i++)
            r |= ((((x >> (8 * i)) & 0xff) + ((y >> (8 * i)) & 0xff) + ((z >> (8 * i)) & 1)) >> 1 & 0xff) << (8 * i);
        RU(r);
        break;
    }
    case WAVE_OP_V_ALIGNBIT_B32: RU((uint32_t)((((uint64_t)U(0) << 32) | U(1)) >> (U(2) & 31))); break;
    case WAVE_OP_V_ALIGNBYTE_B32: RU((uint32_t)((((uint64_t)U(0) << 32) | U(1)) >> (8 * (U(2) & 3)))); break;
    case WAVE_OP_V_MIN3_F32: RF(fmin_ieee(fmin_ieee(F(0), F(1)), F(2))); break;
    case WAVE_OP_V_MIN3_I32: {
        int32_t x = I(0) < I(1) ? I(0) : I(1);
        RU(x < I(2) ? x : I(2));
        break;
    }
    case WAVE_OP_V_MIN3_U32: a = U(0) < U(1) ? U(0) : U(1); RU(a < U(2) ? a : U(2)); break;
    case WAVE_OP_V_MAX3_F32: RF(fmax_ieee(fmax_ieee(F(0), F(1)), F(2))); break;
    case WAVE_OP_V_MAX3_I32: {
        int32_t x = I(0) > I(1) ? I(0) : I(1);
        RU(x > I(2) ? x : I(2));
        break;
    }
    case WAVE_OP_V_MAX3_U32: a = U(0) > U(1) ? U(0) : U(1); RU(a > U(2) ? a : U(2)); break;
    case WAVE_OP_V_MED3_F32: RF(fmed3(F(0), F(1), F(2))); break;
    case WAVE_OP_V_MED3_I32: RU((uint32_t)imed3(I(0), I(1), I(2))); break;
    case WAVE_OP_V_MED3_U32: RU(umed3(U(0), U(1), U(2))); break;
    case WAVE_OP_V_MIN3_F16: RH(fmin_ieee(fmin_ieee(H(0), H(1)), H(2))); break;
    case WAVE_OP_V_MAX3_F16: RH(fmax_ieee(fmax_ieee(H(0), H(1)), H(2))); break;
    case WAVE_OP_V_MED3_F16: RH(fmed3(H(0), H(1), H(2))); break;
    case WAVE_OP_V_MIN3_I16: {
        int32_t x = I16(0) < I16(1) ? I16(0) : I16(1);
        RU((uint16_t)(x < I16(2) ? x : I16(2)));
        break;
    }
    case WAVE_OP_V_MAX3_I16: {
        int32_t x = I16(0) > I16(1) ? I16(0) : I16(1);
        RU((uint16_t)(x > I16(2) ? x : I16(2)));
        break;
    }
    case WAVE_OP_V_MED3_I16: RU((uint16_t)imed3(I16(0), I16(1), I16(2))); break;
    case WAVE_OP_V_MIN3_U16: a = U16(0) < U16(1) ? U16(0) : U16(1); RU(a < U16(2) ? a : U16(2)); break;
    case WAVE_OP_V_MAX3_U16: a = U16(0) > U16(1) ? U16(0) : U16(1); RU(a > U16(2) ? a : U16(2)); break;
    case WAVE_OP_V_MED3_U16: RU(umed3(U16(0), U16(1), U16(2))); break;
    case WAVE_OP_V_SAD_U8: {
        uint32_t x = U(0), y = U(1), r = U(2);
        for (int i = 0; i < 4; i++) {
            int d = (int)((x >> (8 * i)) & 0xff) - (int)((y >> (8 * i)) & 0xff);
            r += (uint32_t)(d < 0 ? -d : d);
        }
        RU(r);
        break;
    }
    case WAVE_OP_V_SAD_HI_U8: {
        uint32_t x = U(0), y = U(1), r = 0;
        for (int i = 0; i < 4; i++) {
            int d = (int)((x >> (8 * i)) & 0xff) - (int)((y >> (8 * i)) & 0xff);
            r += (uint32_t)(d < 0 ? -d : d);
        }
        RU((r << 16) + U(2));
        break;
    }
    case WAVE_OP_V_SAD_U16: {
        uint32_t x = U(0), y = U(1), r = U(2);
        for (int i = 0; i < 2; i++) {
            int d = (int)((x >> (16 * i)) & 0xffff) - (int)((y >> (16 * i)) & 0xffff);
            r += (uint32_t)(d < 0 ? -d : d);
        }
        RU(r);
        break;
    }
    case WAVE_OP_V_SAD_U32: a = U(0), b = U(1); RU((a > b ? a - b : b - a) + U(2)); break;
    case WAVE_OP_V_CVT_PK_U8_F32: {
        uint32_t byte = U(1) & 3, v = cvt_u32(nearbyintf(F(0)));
        v = v > 255 ? 255 : v;
        RU((U(2) & ~(0xffu << (8 * byte))) | v << (8 * byte));
        break;
    }
    case WAVE_OP_V_DIV_FIXUP_F32: RF((float)div_fixup(F(0), F(1), F(2))); break;   /* in double: exact, then rounded once */
    case WAVE_OP_V_DIV_FIXUP_F64: RD(div_fixup(D(0), D(1), D(2))); break;
    case WAVE_OP_V_DIV_FIXUP_F16: case WAVE_OP_V_DIV_FIXUP_LEGACY_F16: RH((float)div_fixup(H(0), H(1), H(2))); break;
    /* The division sequence (div_scale, rcp, fmas, div_fmas, div_fixup):
     * div_scale never scales (its vcc bit stays 0), div_fmas is the fma,
     * and div_fixup gives the special cases' results or else the correctly
     * rounded quotient of its numerator and denominator, which is what the
     * sequence computes. */
    case WAVE_OP_V_DIV_FMAS_F32: RF(fmaf(F(0), F(1), F(2))); break;
    case WAVE_OP_V_DIV_FMAS_F64: RD(fma(D(0), D(1), D(2))); break;
    case WAVE_OP_V_DIV_SCALE_F32: RF(F(0)); break;
    case WAVE_OP_V_DIV_SCALE_F64: RD(D(0)); break;
    case WAVE_OP_V_MSAD_U8: {
        uint32_t x = U(0), y = U(1), r = U(2);
        for (int i = 0; i < 4; i++) {
            int yb = (int)((y >> (8 * i)) & 0xff), d = (int)((x >> (8 * i)) & 0xff) - yb;
            r += yb ? (uint32_t)(d < 0 ? -d : d) : 0;
        }
        RU(r);
        break;
    }
    case WAVE_OP_V_MAD_LEGACY_F16: case WAVE_OP_V_MAD_F16: RH(H(0) * H(1) + H(2)); break;
    case WAVE_OP_V_FMA_LEGACY_F16: case WAVE_OP_V_FMA_F16: RH(fmaf(H(0), H(1), H(2))); break;
    case WAVE_OP_V_MAD_LEGACY_U16: case WAVE_OP_V_MAD_U16: RU((U16(0) * U16(1) + U16(2)) & 0xffff); break;
    case WAVE_OP_V_MAD_LEGACY_I16: case WAVE_OP_V_MAD_I16: RU((uint16_t)(I16(0) * I16(1) + I16(2))); break;
    case WAVE_OP_V_PERM_B32: {
        uint64_t bytes = (uint64_t)U(0) << 32 | U(1);
        uint32_t sel = U(2), r = 0;
        for (int i = 0; i < 4; i++) {
            uint32_t s = (sel >> (8 * i)) & 0xff, byte;
            if (s < 8)
                byte = (bytes >> (8 * s)) & 0xff;
            else if (s < 12) {
                static const int src_byte[4] = {1, 3, 5, 7};
                byte = (bytes >> (8 * src_byte[s - 8] + 7)) & 1 ? 0xff : 0;
            } else
                byte = s == 12 ? 0 : 0xff;
            r |= byte << (8 * i);
        }
        RU(r);
        break;
    }
    case WAVE_OP_V_CVT_PKACCUM_U8_F32: {
        uint32_t byte = U(1) & 3, v = cvt_u32(nearbyintf(F(0)));
        v = v > 255 ? 255 : v;
        RU((c->w->v[in->dst[0].reg & 0xff][c->lane] & ~(0xffu << (8 * byte))) | v << (8 * byte));
        break;
    }
    case WAVE_OP_V_MAD_U32_U16: RU(U16(0) * U16(1) + U(2)); break;
    case WAVE_OP_V_MAD_I32_I16: RU((uint32_t)(I16(0) * I16(1)) + U(2)); break;
    case WAVE_OP_V_XAD_U32: RU((U(0) ^ U(1)) + U(2)); break;
    case WAVE_OP_V_LSHL_ADD_U32: RU((U(0) << (U(1) & 31)) + U(2)); break;
    case WAVE_OP_V_ADD_LSHL_U32: RU((U(0) + U(1)) << (U(2) & 31)); break;
    case WAVE_OP_V_ADD3_U32: RU(U(0) + U(1) + U(2)); break;
    case WAVE_OP_V_LSHL_OR_B32: RU((U(0) << (U(1) & 31)) | U(2)); break;
    case WAVE_OP_V_AND_OR_B32: RU((U(0) & U(1)) | U(2)); break;
    case WAVE_OP_V_OR3_B32: RU(U(0) | U(1) | U(2)); break;
    case WAVE_OP_V_ADD_F64: RD(D(0) + D(1)); break;
    case WAVE_OP_V_MUL_F64: RD(D(0) * D(1)); break;
    case WAVE_OP_V_MIN_F64: RD(dmin_ieee(D(0), D(1))); break;
    case WAVE_OP_V_MAX_F64: RD(dmax_ieee(D(0), D(1))); break;
    case WAVE_OP_V_LDEXP_F64: RD(ldexp(D(0), I(1))); break;
    case WAVE_OP_V_LDEXP_F32: RF(ldexpf(F(0), I(1))); break;
    case WAVE_OP_V_MUL_LO_U32: RU(U(0) * U(1)); break;
    case WAVE_OP_V_MUL_HI_U32: RU(((uint64_t)U(0) * U(1)) >> 32); break;
    case WAVE_OP_V_MUL_HI_I32: RU((uint64_t)((int64_t)I(0) * I(1)) >> 32); break;
    case WAVE_OP_V_BCNT_U32_B32: RU((uint32_t)__builtin_popcount(U(0)) + U(1)); break;
    case WAVE_OP_V_MBCNT_LO_U32_B32:
        RU((uint32_t)__builtin_popcount(U(0) & (uint32_t)((1ull << (c->lane < 32 ? c->lane : 32)) - 1)) + U(1));
        break;
    case WAVE_OP_V_MBCNT_HI_U32_B32:
        RU((uint32_t)__builtin_popcount(U(0) & (uint32_t)(c->lane <= 32 ? 0 : (1ull << (c->lane - 32)) - 1)) + U(1));
        break;
    case WAVE_OP_V_LSHLREV_B64: *res = raw64(c, 1, false) << (U(0) & 63); break;
    case WAVE_OP_V_LSHRREV_B64: *res = raw64(c, 1, false) >> (U(0) & 63); break;
    case WAVE_OP_V_ASHRREV_I64: *res = (uint64_t)((int64_t)raw64(c, 1, false) >> (U(0) & 63)); break;
    case WAVE_OP_V_BFM_B32: RU(((U(0) & 31) == 0 ? 0 : (uint32_t)((1ull << (U(0) & 31)) - 1)) << (U(1) & 31)); break;
    case WAVE_OP_V_CVT_PKNORM_I16_F32:
        RU(sat_i16((int32_t)nearbyintf(fmaxf(-1.0f, fminf(1.0f, F(0))) * 32767.0f)) |
           sat_i16((int32_t)nearbyintf(fmaxf(-1.0f, fminf(1.0f, F(1))) * 32767.0f)) << 16);
        break;
    case WAVE_OP_V_CVT_PKNORM_U16_F32:
        RU(sat_u16((int32_t)nearbyintf(fmaxf(0.0f, fminf(1.0f, F(0))) * 65535.0f)) |
           sat_u16((int32_t)nearbyintf(fmaxf(0.0f, fminf(1.0f, F(1))) * 65535.0f)) << 16);
        break;
    case WAVE_OP_V_CVT_PKNORM_I16_F16:
        RU(sat_i16((int32_t)nearbyintf(fmaxf(-1.0f, fminf(1.0f, H(0))) * 32767.0f)) |
           sat_i16((int32_t)nearbyintf(fmaxf(-1.0f, fminf(1.0f, H(1))) * 32767.0f)) << 16);
        break;
    case WAVE_OP_V_CVT_PKNORM_U16_F16:
        RU(sat_u16((int32_t)nearbyintf(fmaxf(0.0f, fminf(1.0f, H(0))) * 65535.0f)) |
           sat_u16((int32_t)nearbyintf(fmaxf(0.0f, fminf(1.0f, H(1))) * 65535.0f)) << 16);
        break;
    case WAVE_OP_V_CVT_PKRTZ_F16_F32: {
        /* round toward zero: convert, and step back toward zero if it rounded away */
        uint32_t r = 0;
        for (int i = 0; i < 2; i++) {
            float x = F((unsigned)i);
            uint32_t h = f2h(x);
            float back = h2f(h);
            if (!isnan(x) && fabsf(back) > fabsf(x))
                h = (h & 0x7fff) == 0x7c00 ? (h & 0x8000) | 0x7bff : h - 1;
            r |= (h & 0xffff) << (16 * i);
        }
        RU(r);
        break;
    }
    case WAVE_OP_V_CVT_PK_U16_U32: RU((U(0) > 65535 ? 65535 : U(0)) | (U(1) > 65535 ? 65535 : U(1)) << 16); break;
    case WAVE_OP_V_CVT_PK_I16_I32: RU(sat_i16(I(0)) | sat_i16(I(1)) << 16); break;
    case WAVE_OP_V_PACK_B32_F16: RU(f2h(H(0)) | f2h(H(1)) << 16); break;
    case WAVE_OP_V_MAD_U64_U32: {
        uint64_t p = (uint64_t)U(0) * U(1), q = raw64(c, 2, false), r = p + q;
        *flag = r < p;
        *res = r;
        break;
    }
    case WAVE_OP_V_MAD_I64_I32: {
        __int128 r = (__int128)((int64_t)I(0) * I(1)) + (int64_t)raw64(c, 2, false);
        *flag = r > INT64_MAX || r < INT64_MIN;
        *res = (uint64_t)(int64_t)r;
        break;
    }
    case WAVE_OP_V_TRIG_PREOP_F64: {
        /* bits of 2/pi from a 1201-bit table, shifted by the exponent and
         * the segment: computed here from a long double's 2/pi would lose
         * bits, so kiln refuses it rather than guess */
        return false;
    }
    default: return false;
    }
    return true;
}

/* ---- VOP3P ------------------------------------------------------------------------------- */

static uint32_t half_of(const struct vctx *c, unsigned n, bool hi)
{
    const struct wave_operand *o = &c->in->src[n];
    if (o->kind == WAVE_OPND_CONST) {
        /* an inline constant is the same in both halves (for 16-bit ops) */
        return (uint32_t)wave_const_bits(o->value, 16) & 0xffff;
    }
    uint32_t v = raw32(c, n);
    return hi ? v >> 16 : v & 0xffff;
}

static bool lane_vop3p(struct vctx *c, uint64_t *res)
{
    const struct wave_instr *in = c->in;
    const struct wave_mods *md = &in->mods;
    unsigned nsrc = wave_op_info(in->op)->src[2] ? 3 : 2;
    if (in->op == WAVE_OP_V_MAD_MIX_F32 || in->op == WAVE_OP_V_MAD_MIXLO_F16 || in->op == WAVE_OP_V_MAD_MIXHI_F16) {
        float s[3];
        for (unsigned n = 0; n < 3; n++) {
            bool is16 = (md->op_sel_hi >> n) & 1;
            if (is16)
                s[n] = h2f(half_of(c, n, (md->op_sel >> n) & 1));
            else
                s[n] = f32(raw32(c, n));
            if ((md->abs >> n) & 1)   /* for mix ops this field is abs (neg_hi's place) */
                s[n] = fabsf(s[n]);
            if ((md->neg >> n) & 1)
                s[n] = -s[n];
        }
        float r = fmaf(s[0], s[1], s[2]);
        if (md->clamp)
            r = isnan(r) ? 0.0f : r < 0 ? 0.0f : r > 1 ? 1.0f : r;
        if (in->op == WAVE_OP_V_MAD_MIX_F32)
            *res = b32(r);
        else {
            uint32_t old = c->w->v[in->dst[0].reg & 0xff][c->lane];
            uint32_t h = f2h(r);
            *res = in->op == WAVE_OP_V_MAD_MIXLO_F16 ? (old & 0xffff0000u) | h : (old & 0xffff) | h << 16;
        }
        return true;
    }
    uint32_t out = 0;
    for (int half = 0; half < 2; half++) {
        uint32_t v[3] = {0};
        for (unsigned n = 0; n < nsrc; n++) {
            bool hi = half ? (md->op_sel_hi >> n) & 1 : (md->op_sel >> n) & 1;
            v[n] = half_of(c, n, hi);
        }
        bool is_f = in->op == WAVE_OP_V_PK_FMA_F16 || in->op == WAVE_OP_V_PK_ADD_F16 ||
                    in->op == WAVE_OP_V_PK_MUL_F16 || in->op == WAVE_OP_V_PK_MIN_F16 || in->op == WAVE_OP_V_PK_MAX_F16;
        float f[3] = {0};
        if (is_f)
            for (unsigned n = 0; n < nsrc; n++) {
                f[n] = h2f(v[n]);
                uint8_t negm = half ? md->abs : md->neg;   /* neg_hi is kept in abs */
                if ((negm >> n) & 1)
                    f[n] = -f[n];
            }
        int16_t s0 = (int16_t)v[0], s1 = (int16_t)v[1], s2 = (int16_t)v[2];
        uint32_t r;
        switch (in->op) {
        case WAVE_OP_V_PK_MAD_I16: r = (uint16_t)(s0 * s1 + s2); break;
        case WAVE_OP_V_PK_MUL_LO_U16: r = (v[0] * v[1]) & 0xffff; break;
        case WAVE_OP_V_PK_ADD_I16: r = md->clamp ? sat_i16(s0 + s1) : (uint16_t)(s0 + s1); break;
        case WAVE_OP_V_PK_SUB_I16: r = md->clamp ? sat_i16(s0 - s1) : (uint16_t)(s0 - s1); break;
        case WAVE_OP_V_PK_LSHLREV_B16: r = (v[1] << (v[0] & 15)) & 0xffff; break;
        case WAVE_OP_V_PK_LSHRREV_B16: r = v[1] >> (v[0] & 15); break;
        case WAVE_OP_V_PK_ASHRREV_I16: r = (uint16_t)(s1 >> (v[0] & 15)); break;
        case WAVE_OP_V_PK_MAX_I16: r = (uint16_t)(s0 > s1 ? s0 : s1); break;
        case WAVE_OP_V_PK_MIN_I16: r = (uint16_t)(s0 < s1 ? s0 : s1); break;
        case WAVE_OP_V_PK_MAD_U16: r = (v[0] * v[1] + v[2]) & 0xffff; break;
        case WAVE_OP_V_PK_ADD_U16: r = md->clamp ? sat_u16((int32_t)(v[0] + v[1])) : (v[0] + v[1]) & 0xffff; break;
        case WAVE_OP_V_PK_SUB_U16: r = md->clamp ? sat_u16((int32_t)v[0] - (int32_t)v[1]) : (v[0] - v[1]) & 0xffff; break;
        case WAVE_OP_V_PK_MAX_U16: r = v[0] > v[1] ? v[0] : v[1]; break;
        case WAVE_OP_V_PK_MIN_U16: r = v[0] < v[1] ? v[0] : v[1]; break;
        case WAVE_OP_V_PK_FMA_F16: r = f2h(fmaf(f[0], f[1], f[2])); break;
        case WAVE_OP_V_PK_ADD_F16: r = f2h(f[0] + f[1]); break;
        case WAVE_OP_V_PK_MUL_F16: r = f2h(f[0] * f[1]); break;
        case WAVE_OP_V_PK_MIN_F16: r = f2h(fmin_ieee(f[0], f[1])); break;
        case WAVE_OP_V_PK_MAX_F16: r = f2h(fmax_ieee(f[0], f[1])); break;
        default: return false;
        }
        if (is_f && md->clamp) {
            float x = h2f(r);
            r = f2h(isnan(x) ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x);
        }
        out |= (r & 0xffff) << (16 * half);
    }
    *res = out;
    return true;
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
    if (ctrl >= 0x121 && ctrl <= 0x12f)
        return row + ((in_row + (int)(ctrl & 15)) & 15);
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
        uint32_t v = raw32(&c, 0);
        if (in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg < 128)
            w->s[in->dst[0].reg] = v;
        return KILN_OK;
    }
    case WAVE_OP_V_READLANE_B32: {
        c.lane = c.src0_lane = (int)(raw32(&c, 1) & 63);
        uint32_t v = raw32(&c, 0);
        if (in->dst[0].kind == WAVE_OPND_SGPR && in->dst[0].reg < 128)
            w->s[in->dst[0].reg] = v;
        return KILN_OK;
    }
    case WAVE_OP_V_WRITELANE_B32: {
        c.lane = c.src0_lane = 0;
        uint32_t v = raw32(&c, 0);
        int l = (int)(raw32(&c, 1) & 63);
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
                uint32_t bits = raw32(&c, 1);
                double v;
                bool snan;
                if (s->type == CT_F64) {
                    uint64_t x = raw64(&c, 0, true);
                    v = f64(x), snan = isnan(v) && !((x >> 51) & 1);
                } else if (s->type == CT_F32) {
                    uint32_t x = raw32(&c, 0);
                    v = f32(x), snan = isnan(v) && !((x >> 22) & 1);
                } else {
                    uint32_t x = raw16(&c, 0, true);
                    v = h2f(x), snan = isnan(v) && !((x >> 9) & 1);
                }
                if ((in->mods.abs & 1))
                    v = fabs(v);
                if ((in->mods.neg & 1))
                    v = -v;
                r = (class_mask(v, snan) & bits) != 0;
            } else {
                switch (s->type) {
                case CT_F16: r = fcond(s->cond, ha(&c, 0), ha(&c, 1)); break;
                case CT_F32: r = fcond(s->cond, fa(&c, 0), fa(&c, 1)); break;
                case CT_F64: r = fcond(s->cond, da(&c, 0), da(&c, 1)); break;
                case CT_I16: r = icond(s->cond, (int16_t)raw16(&c, 0, false), (int16_t)raw16(&c, 1, false), true); break;
                case CT_U16: r = icond(s->cond, raw16(&c, 0, false), raw16(&c, 1, false), false); break;
                case CT_I32: r = icond(s->cond, (int32_t)raw32(&c, 0), (int32_t)raw32(&c, 1), true); break;
                case CT_U32: r = icond(s->cond, raw32(&c, 0), raw32(&c, 1), false); break;
                case CT_I64: r = icond(s->cond, (int64_t)raw64(&c, 0, false), (int64_t)raw64(&c, 1, false), true); break;
                default: r = icond(s->cond, (int64_t)raw64(&c, 0, false), (int64_t)raw64(&c, 1, false), false); break;
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
        bool flag = false, ok;
        if (c.src0_lane < 0) {
            /* DPP with bound_ctrl: src0 reads zero; run the op with lane 0's
             * register replaced is not possible in place, so read it from a
             * lane whose value is then masked: handled by zeroing below */
            c.src0_lane = l;
            uint32_t saved = 0;
            const struct wave_operand *o = &in->src[0];
            if (o->kind == WAVE_OPND_VGPR) {
                saved = w->v[o->reg & 0xff][l];
                w->v[o->reg & 0xff][l] = 0;
            }
            ok = info->family == WAVE_FAM_VOP3P ? lane_vop3p(&c, &r) : lane_op(&c, &r, &flag);
            if (o->kind == WAVE_OPND_VGPR)
                w->v[o->reg & 0xff][l] = saved;
        } else {
            ok = info->family == WAVE_FAM_VOP3P ? lane_vop3p(&c, &r) : lane_op(&c, &r, &flag);
        }
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
