/* SPDX-License-Identifier: MIT */
/*
 * interp_lane.c: the reference interpreter's vector ALU, one lane at a time
 * (see interp.h): every VOP1, VOP2, VOPC and VOP3 operation on one lane's
 * operands, and VOP3P's packed halves.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "base/base.h"
#include "base/half.h"
#include "wave/interp_float.h"
#include "wave/interp_private.h"

/* An operation's operands and result, as its row writes them. */
#define U(n) interp_raw32(c, (n))
#define I(n) ((int32_t)interp_raw32(c, (n)))
#define U16(n) interp_raw16(c, (n), false)
#define I16(n) ((int16_t)interp_raw16(c, (n), false))
#define F(n) interp_fa(c, (n))
#define D(n) interp_da(c, (n))
#define H(n) interp_ha(c, (n))
#define U64(n) interp_raw64(c, (n), false)
/* Min and max under the wave's MODE.IEEE bit (interp_float.h). */
#define IEEE_MODE(c) (((c)->w->mode >> 9) & 1)
#define FMIN(a, b) fmin_mode((a), (b), IEEE_MODE(c))
#define FMAX(a, b) fmax_mode((a), (b), IEEE_MODE(c))
#define DMIN(a, b) dmin_mode((a), (b), IEEE_MODE(c))
#define DMAX(a, b) dmax_mode((a), (b), IEEE_MODE(c))

/* Output modifiers of a float result (omod, then clamp), in the result's
 * precision; fout and dout return it flushed where MODE.FP_DENORM flushes
 * results (a denormal becomes a zero of its sign; interp_float.h), hout
 * gives a half's bits, flushed likewise. */
static float fmods(const struct vctx *c, float v)
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
static float fout(const struct vctx *c, float v)
{
    v = fmods(c, v);
    return c->w->mode & DENORM_OUT32 ? v : f32(flush32(b32(v)));
}
static uint32_t hout(const struct vctx *c, float v)
{
    uint32_t h = f2h(fmods(c, v));
    return c->w->mode & DENORM_OUT64 ? h : flush16(h);
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
    return c->w->mode & DENORM_OUT64 ? v : f64(flush64(b64(v)));
}
/* An integer add's or subtract's exact result, wrapped to bits, or with
 * VOP3's clamp bit saturated to the type's range (unsigned, or signed for
 * the _i ops): a clamped v_add_u32 of 0xffffffff and 1 is 0xffffffff. */
static uint32_t uclamp(const struct vctx *c, int64_t exact, unsigned bits)
{
    int64_t top = (int64_t)((1ull << bits) - 1);
    if (c->in->mods.clamp)
        exact = exact < 0 ? 0 : exact > top ? top : exact;
    return (uint32_t)((uint64_t)exact & (uint64_t)top);
}
static uint32_t sclamp(const struct vctx *c, int64_t exact, unsigned bits)
{
    int64_t lo = -(int64_t)(1ull << (bits - 1)), hi = (int64_t)(1ull << (bits - 1)) - 1;
    if (c->in->mods.clamp)
        exact = exact < lo ? lo : exact > hi ? hi : exact;
    return (uint32_t)((uint64_t)exact & ((1ull << bits) - 1));
}
#define RUC(x) (*res = uclamp(c, (x), 32))
#define RSC(x) (*res = sclamp(c, (x), 32))

#define RF(x) (*res = b32(fout(c, (x))))
#define RD(x) (*res = b64(dout(c, (x))))
#define RH(x) (*res = hout(c, (x)))
#define RU(x) (*res = (uint32_t)(x))

/* ---- one lane ---------------------------------------------------------------------------- */

/* Computes the op for c->lane into *res (and *flag for carry-outs). Returns
 * false for an op this function does not run. */
bool interp_lane_op(struct vctx *c, uint64_t *res, bool *flag)
{
    const struct wave_instr *in = c->in;
    uint64_t t64;
    uint32_t a, b;
    switch (in->op) {
    /* VOP1 */
    case WAVE_OP_V_MOV_B32: RU(interp_mbits(c, 0)); break;
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
    /* V_FRACT: S0 + -floor(S0), below 1: a NaN source gives a NaN (quiet,
     * with its payload), an infinite one the default NaN; not the bound
     * that fmin would take over a NaN. */
    case WAVE_OP_V_FRACT_F64: {
        double x = D(0);
        RD(isnan(x) ? f64(b64(x) | 0x8000000000000ull) : isinf(x) ? NAN : fmin(x - floor(x), 0x1.fffffffffffffp-1));
        break;
    }
    case WAVE_OP_V_FRACT_F32: {
        float x = F(0);
        RF(isnan(x) ? f32(b32(x) | 0x400000u) : isinf(x) ? NAN : fminf(x - floorf(x), 0x1.fffffep-1f));
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
        RH(isnan(x) ? x : isinf(x) ? NAN : fminf(x - floorf(x), 0x1.ffcp-1f));
        break;
    }
    case WAVE_OP_V_SIN_F16: RH((float)sin((double)H(0) * 6.283185307179586)); break;
    case WAVE_OP_V_COS_F16: RH((float)cos((double)H(0) * 6.283185307179586)); break;

    /* VOP2 */
    case WAVE_OP_V_CNDMASK_B32: RU((U64(2) >> c->lane) & 1 ? interp_mbits(c, 1) : interp_mbits(c, 0)); break;
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
    case WAVE_OP_V_MIN_F32: RF(FMIN(F(0), F(1))); break;
    case WAVE_OP_V_MAX_F32: RF(FMAX(F(0), F(1))); break;
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
    /* Integer adds and subtracts: carries from the exact result, which
     * VOP3's clamp saturates (uclamp, sclamp). */
    case WAVE_OP_V_ADD_CO_U32: t64 = (uint64_t)U(0) + U(1); *flag = t64 >> 32; RUC((int64_t)t64); break;
    case WAVE_OP_V_SUB_CO_U32: a = U(0), b = U(1); *flag = b > a; RUC((int64_t)a - b); break;
    case WAVE_OP_V_SUBREV_CO_U32: a = U(1), b = U(0); *flag = b > a; RUC((int64_t)a - b); break;
    case WAVE_OP_V_ADDC_CO_U32:
        t64 = (uint64_t)U(0) + U(1) + ((U64(2) >> c->lane) & 1);
        *flag = t64 >> 32;
        RUC((int64_t)t64);
        break;
    case WAVE_OP_V_SUBB_CO_U32: {
        uint64_t x = U(0), y = (uint64_t)U(1) + ((U64(2) >> c->lane) & 1);
        *flag = y > x;
        RUC((int64_t)x - (int64_t)y);
        break;
    }
    case WAVE_OP_V_SUBBREV_CO_U32: {
        uint64_t x = U(1), y = (uint64_t)U(0) + ((U64(2) >> c->lane) & 1);
        *flag = y > x;
        RUC((int64_t)x - (int64_t)y);
        break;
    }
    case WAVE_OP_V_ADD_U32: RUC((int64_t)U(0) + U(1)); break;
    case WAVE_OP_V_ADD_I32: RSC((int64_t)I(0) + I(1)); break;
    case WAVE_OP_V_SUB_U32: RUC((int64_t)U(0) - U(1)); break;
    case WAVE_OP_V_SUB_I32: RSC((int64_t)I(0) - I(1)); break;
    case WAVE_OP_V_SUBREV_U32: RUC((int64_t)U(1) - U(0)); break;
    case WAVE_OP_V_ADD_F16: RH(H(0) + H(1)); break;
    case WAVE_OP_V_SUB_F16: RH(H(0) - H(1)); break;
    case WAVE_OP_V_SUBREV_F16: RH(H(1) - H(0)); break;
    case WAVE_OP_V_MUL_F16: RH(H(0) * H(1)); break;
    case WAVE_OP_V_MAC_F16: RH(H(0) * H(1) + h2f(c->w->v[in->dst[0].reg & 0xff][c->lane] & 0xffff)); break;
    case WAVE_OP_V_MADMK_F16: case WAVE_OP_V_MADAK_F16: RH(H(0) * H(1) + H(2)); break;
    case WAVE_OP_V_ADD_U16: *res = uclamp(c, (int64_t)U16(0) + U16(1), 16); break;
    case WAVE_OP_V_ADD_I16: *res = sclamp(c, (int64_t)I16(0) + I16(1), 16); break;
    case WAVE_OP_V_SUB_U16: *res = uclamp(c, (int64_t)U16(0) - U16(1), 16); break;
    case WAVE_OP_V_SUB_I16: *res = sclamp(c, (int64_t)I16(0) - I16(1), 16); break;
    case WAVE_OP_V_SUBREV_U16: *res = uclamp(c, (int64_t)U16(1) - U16(0), 16); break;
    case WAVE_OP_V_MUL_LO_U16: RU((U16(0) * U16(1)) & 0xffff); break;
    case WAVE_OP_V_LSHLREV_B16: RU((U16(1) << (U16(0) & 15)) & 0xffff); break;
    case WAVE_OP_V_LSHRREV_B16: RU(U16(1) >> (U16(0) & 15)); break;
    case WAVE_OP_V_ASHRREV_I16: RU((uint16_t)(I16(1) >> (U16(0) & 15))); break;
    case WAVE_OP_V_MAX_F16: RH(FMAX(H(0), H(1))); break;
    case WAVE_OP_V_MIN_F16: RH(FMIN(H(0), H(1))); break;
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
    case WAVE_OP_V_MIN3_F32: RF(FMIN(FMIN(F(0), F(1)), F(2))); break;
    case WAVE_OP_V_MIN3_I32: {
        int32_t x = I(0) < I(1) ? I(0) : I(1);
        RU(x < I(2) ? x : I(2));
        break;
    }
    case WAVE_OP_V_MIN3_U32: a = U(0) < U(1) ? U(0) : U(1); RU(a < U(2) ? a : U(2)); break;
    case WAVE_OP_V_MAX3_F32: RF(FMAX(FMAX(F(0), F(1)), F(2))); break;
    case WAVE_OP_V_MAX3_I32: {
        int32_t x = I(0) > I(1) ? I(0) : I(1);
        RU(x > I(2) ? x : I(2));
        break;
    }
    case WAVE_OP_V_MAX3_U32: a = U(0) > U(1) ? U(0) : U(1); RU(a > U(2) ? a : U(2)); break;
    case WAVE_OP_V_MED3_F32: RF(fmed3(F(0), F(1), F(2), IEEE_MODE(c))); break;
    case WAVE_OP_V_MED3_I32: RU((uint32_t)imed3(I(0), I(1), I(2))); break;
    case WAVE_OP_V_MED3_U32: RU(umed3(U(0), U(1), U(2))); break;
    case WAVE_OP_V_MIN3_F16: RH(FMIN(FMIN(H(0), H(1)), H(2))); break;
    case WAVE_OP_V_MAX3_F16: RH(FMAX(FMAX(H(0), H(1)), H(2))); break;
    case WAVE_OP_V_MED3_F16: RH(fmed3(H(0), H(1), H(2), IEEE_MODE(c))); break;
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
    case WAVE_OP_V_MIN_F64: RD(DMIN(D(0), D(1))); break;
    case WAVE_OP_V_MAX_F64: RD(DMAX(D(0), D(1))); break;
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
    case WAVE_OP_V_LSHLREV_B64: *res = interp_raw64(c, 1, false) << (U(0) & 63); break;
    case WAVE_OP_V_LSHRREV_B64: *res = interp_raw64(c, 1, false) >> (U(0) & 63); break;
    case WAVE_OP_V_ASHRREV_I64: *res = (uint64_t)((int64_t)interp_raw64(c, 1, false) >> (U(0) & 63)); break;
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
        uint64_t p = (uint64_t)U(0) * U(1), q = interp_raw64(c, 2, false), r = p + q;
        *flag = r < p;
        *res = r;
        break;
    }
    case WAVE_OP_V_MAD_I64_I32: {
        __int128 r = (__int128)((int64_t)I(0) * I(1)) + (int64_t)interp_raw64(c, 2, false);
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
    uint32_t v = interp_raw32(c, n);
    return hi ? v >> 16 : v & 0xffff;
}

bool interp_lane_vop3p(struct vctx *c, uint64_t *res)
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
                s[n] = f32(interp_raw32(c, n));
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
                f[n] = h2f(flush_in16(c->w->mode, v[n]));   /* MODE.FP_DENORM, as interp_ha */
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
        case WAVE_OP_V_PK_MIN_F16: r = f2h(FMIN(f[0], f[1])); break;
        case WAVE_OP_V_PK_MAX_F16: r = f2h(FMAX(f[0], f[1])); break;
        default: return false;
        }
        if (is_f && md->clamp) {
            float x = h2f(r);
            r = f2h(isnan(x) ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x);
        }
        if (is_f && !(c->w->mode & DENORM_OUT64))
            r = flush16(r);
        out |= (r & 0xffff) << (16 * half);
    }
    *res = out;
    return true;
}
