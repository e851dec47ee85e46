/* SPDX-License-Identifier: MIT */
/*
 * interp_salu.c: the reference interpreter's scalar ALU and control flow
 * (see interp.h): SOP1, SOP2, SOPK, SOPC, SOPP.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/interp_private.h"

/* ---- scalar ALU and control ----------------------------------------------------------------- */

static uint32_t hwreg_read(const struct machine *m, const struct wave *w, unsigned id)
{
    switch (id) {
    case 1: return w->mode;
    case 2: return (w->scc ? 1u : 0) | (wv_exec(w) == 0) << 9 | (wv_vcc(w) == 0) << 10;   /* STATUS */
    case 4: return w->index & 15;                                                          /* HW_ID: wave id */
    case 6: return ((m->lds_size + 255) / 256) << 12;                                      /* LDS_ALLOC */
    default: return 0;
    }
}

/* A taken branch: simm16 dwords from the next instruction (fetch judges
 * where that lands). */
static void branch_to(struct wave *w, const struct wave_instr *in, uint64_t next)
{
    int32_t simm = (int16_t)interp_imm_of(in);
    w->pc = next + (uint64_t)((int64_t)simm * 4);
}

kiln_result interp_salu(struct machine *m, struct wave *w, const struct wave_instr *in, uint64_t next)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const struct wave_operand *s0 = &in->src[0], *s1 = &in->src[1];
    uint32_t a = interp_sv32(w, s0), b = interp_sv32(w, s1), r32;
    uint64_t a64 = interp_sv64(w, s0), b64 = interp_sv64(w, s1), r64;
    uint64_t exec = wv_exec(w);
    switch (in->op) {
    /* SOP1 */
    case WAVE_OP_S_MOV_B32: interp_sdst32(w, in, a); break;
    case WAVE_OP_S_MOV_B64: interp_sdst64(w, in, a64); break;
    case WAVE_OP_S_CMOV_B32: if (w->scc) interp_sdst32(w, in, a); break;
    case WAVE_OP_S_CMOV_B64: if (w->scc) interp_sdst64(w, in, a64); break;
    case WAVE_OP_S_NOT_B32: r32 = ~a; w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_NOT_B64: r64 = ~a64; w->scc = r64 != 0; interp_sdst64(w, in, r64); break;
    case WAVE_OP_S_WQM_B32: case WAVE_OP_S_WQM_B64:
        r64 = 0;
        for (int q = 0; q < 64; q += 4)
            if ((a64 >> q) & 15)
                r64 |= 15ull << q;
        if (in->op == WAVE_OP_S_WQM_B32)
            r64 &= 0xffffffffu, interp_sdst32(w, in, (uint32_t)r64);
        else
            interp_sdst64(w, in, r64);
        w->scc = r64 != 0;
        break;
    case WAVE_OP_S_BREV_B32:
        r32 = 0;
        for (int i = 0; i < 32; i++)
            r32 |= ((a >> i) & 1u) << (31 - i);
        interp_sdst32(w, in, r32);
        break;
    case WAVE_OP_S_BREV_B64:
        r64 = 0;
        for (int i = 0; i < 64; i++)
            r64 |= ((a64 >> i) & 1u) << (63 - i);
        interp_sdst64(w, in, r64);
        break;
    case WAVE_OP_S_BCNT0_I32_B32: r32 = 32 - (uint32_t)__builtin_popcount(a); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT0_I32_B64: r32 = 64 - (uint32_t)__builtin_popcountll(a64); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT1_I32_B32: r32 = (uint32_t)__builtin_popcount(a); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT1_I32_B64: r32 = (uint32_t)__builtin_popcountll(a64); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_FF0_I32_B32: interp_sdst32(w, in, ~a ? (uint32_t)__builtin_ctz(~a) : UINT32_MAX); break;
    case WAVE_OP_S_FF0_I32_B64: interp_sdst32(w, in, ~a64 ? (uint32_t)__builtin_ctzll(~a64) : UINT32_MAX); break;
    case WAVE_OP_S_FF1_I32_B32: interp_sdst32(w, in, a ? (uint32_t)__builtin_ctz(a) : UINT32_MAX); break;
    case WAVE_OP_S_FF1_I32_B64: interp_sdst32(w, in, a64 ? (uint32_t)__builtin_ctzll(a64) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32_B32: interp_sdst32(w, in, a ? (uint32_t)__builtin_clz(a) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32_B64: interp_sdst32(w, in, a64 ? (uint32_t)__builtin_clzll(a64) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32:
        interp_sdst32(w, in, a == 0 || a == UINT32_MAX ? UINT32_MAX : (uint32_t)__builtin_clz((int32_t)a < 0 ? ~a : a) - 1);
        break;
    case WAVE_OP_S_FLBIT_I32_I64:
        interp_sdst32(w, in, a64 == 0 || a64 == UINT64_MAX ? UINT32_MAX
                                                    : (uint32_t)__builtin_clzll((int64_t)a64 < 0 ? ~a64 : a64) - 1);
        break;
    case WAVE_OP_S_SEXT_I32_I8: interp_sdst32(w, in, (uint32_t)(int8_t)a); break;
    case WAVE_OP_S_SEXT_I32_I16: interp_sdst32(w, in, (uint32_t)(int16_t)a); break;
    case WAVE_OP_S_BITSET0_B32: interp_sdst32(w, in, interp_sv32(w, &in->dst[0]) & ~(1u << (a & 31))); break;
    case WAVE_OP_S_BITSET1_B32: interp_sdst32(w, in, interp_sv32(w, &in->dst[0]) | 1u << (a & 31)); break;
    case WAVE_OP_S_BITSET0_B64: interp_sdst64(w, in, interp_sv64(w, &in->dst[0]) & ~(1ull << (a & 63))); break;
    case WAVE_OP_S_BITSET1_B64: interp_sdst64(w, in, interp_sv64(w, &in->dst[0]) | 1ull << (a & 63)); break;
    case WAVE_OP_S_GETPC_B64: interp_sdst64(w, in, WAVE_IMAGE_BASE + next); break;
    case WAVE_OP_S_SETPC_B64: w->pc = a64 - WAVE_IMAGE_BASE; break;
    case WAVE_OP_S_SWAPPC_B64: interp_sdst64(w, in, WAVE_IMAGE_BASE + next); w->pc = a64 - WAVE_IMAGE_BASE; break;
    case WAVE_OP_S_AND_SAVEEXEC_B64: case WAVE_OP_S_OR_SAVEEXEC_B64: case WAVE_OP_S_XOR_SAVEEXEC_B64:
    case WAVE_OP_S_ANDN2_SAVEEXEC_B64: case WAVE_OP_S_ORN2_SAVEEXEC_B64: case WAVE_OP_S_NAND_SAVEEXEC_B64:
    case WAVE_OP_S_NOR_SAVEEXEC_B64: case WAVE_OP_S_XNOR_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_SAVEEXEC_B64:
    case WAVE_OP_S_ORN1_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_WREXEC_B64: case WAVE_OP_S_ANDN2_WREXEC_B64: {
        uint64_t e;
        switch (in->op) {
        case WAVE_OP_S_AND_SAVEEXEC_B64: e = a64 & exec; break;
        case WAVE_OP_S_OR_SAVEEXEC_B64: e = a64 | exec; break;
        case WAVE_OP_S_XOR_SAVEEXEC_B64: e = a64 ^ exec; break;
        case WAVE_OP_S_ANDN2_SAVEEXEC_B64: case WAVE_OP_S_ANDN2_WREXEC_B64: e = a64 & ~exec; break;
        case WAVE_OP_S_ORN2_SAVEEXEC_B64: e = a64 | ~exec; break;
        case WAVE_OP_S_NAND_SAVEEXEC_B64: e = ~(a64 & exec); break;
        case WAVE_OP_S_NOR_SAVEEXEC_B64: e = ~(a64 | exec); break;
        case WAVE_OP_S_XNOR_SAVEEXEC_B64: e = ~(a64 ^ exec); break;
        case WAVE_OP_S_ANDN1_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_WREXEC_B64: e = ~a64 & exec; break;
        default: e = ~a64 | exec; break;   /* orn1 */
        }
        bool wrexec = in->op == WAVE_OP_S_ANDN1_WREXEC_B64 || in->op == WAVE_OP_S_ANDN2_WREXEC_B64;
        interp_set_exec(w, e);
        interp_sdst64(w, in, wrexec ? e : exec);
        w->scc = e != 0;
        break;
    }
    case WAVE_OP_S_QUADMASK_B32: case WAVE_OP_S_QUADMASK_B64:
        r64 = 0;
        for (int q = 0; q < 16; q++)
            if ((a64 >> (4 * q)) & 15)
                r64 |= 1ull << q;
        if (in->op == WAVE_OP_S_QUADMASK_B32)
            r64 &= 0xff, interp_sdst32(w, in, (uint32_t)r64);
        else
            interp_sdst64(w, in, r64);
        w->scc = r64 != 0;
        break;
    case WAVE_OP_S_MOVRELS_B32: interp_sdst32(w, in, interp_sget(w, (s0->reg + w->s[WAVE_SREG_M0]) & 0x7f)); break;
    case WAVE_OP_S_MOVRELS_B64: {
        unsigned r = (s0->reg + w->s[WAVE_SREG_M0]) & 0x7f;
        interp_sdst64(w, in, (uint64_t)interp_sget(w, (r + 1) & 0x7f) << 32 | interp_sget(w, r));
        break;
    }
    case WAVE_OP_S_MOVRELD_B32: interp_sset(w, (in->dst[0].reg + w->s[WAVE_SREG_M0]) & 0x7f, a); break;
    case WAVE_OP_S_MOVRELD_B64: {
        unsigned r = (in->dst[0].reg + w->s[WAVE_SREG_M0]) & 0x7f;
        interp_sset(w, r, (uint32_t)a64);
        interp_sset(w, (r + 1) & 0x7f, (uint32_t)(a64 >> 32));
        break;
    }
    case WAVE_OP_S_ABS_I32: r32 = (int32_t)a < 0 ? 0u - a : a; w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_SET_GPR_IDX_IDX: w->gpr_idx = a & 0xff; break;
    case WAVE_OP_S_BITREPLICATE_B64_B32:
        r64 = 0;
        for (int i = 0; i < 32; i++)
            if ((a >> i) & 1)
                r64 |= 3ull << (2 * i);
        interp_sdst64(w, in, r64);
        break;

    /* SOP2 */
    case WAVE_OP_S_ADD_U32: r64 = (uint64_t)a + b; w->scc = r64 >> 32; interp_sdst32(w, in, (uint32_t)r64); break;
    case WAVE_OP_S_SUB_U32: w->scc = b > a; interp_sdst32(w, in, a - b); break;
    case WAVE_OP_S_ADD_I32:
        r32 = a + b;
        w->scc = ((a ^ r32) & (b ^ r32)) >> 31;
        interp_sdst32(w, in, r32);
        break;
    case WAVE_OP_S_SUB_I32:
        r32 = a - b;
        w->scc = ((a ^ b) & (a ^ r32)) >> 31;
        interp_sdst32(w, in, r32);
        break;
    case WAVE_OP_S_ADDC_U32: r64 = (uint64_t)a + b + w->scc; w->scc = r64 >> 32; interp_sdst32(w, in, (uint32_t)r64); break;
    case WAVE_OP_S_SUBB_U32: r64 = (uint64_t)b + w->scc; w->scc = r64 > a; interp_sdst32(w, in, (uint32_t)(a - r64)); break;
    case WAVE_OP_S_MIN_I32: w->scc = (int32_t)a < (int32_t)b; interp_sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MIN_U32: w->scc = a < b; interp_sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MAX_I32: w->scc = (int32_t)a > (int32_t)b; interp_sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MAX_U32: w->scc = a > b; interp_sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_CSELECT_B32: interp_sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_CSELECT_B64: interp_sdst64(w, in, w->scc ? a64 : b64); break;
#define LOGIC(op32, op64, expr)                                                                     \
    case op32: { uint64_t x = a, y = b; r32 = (uint32_t)(expr); w->scc = r32 != 0; interp_sdst32(w, in, r32); break; } \
    case op64: { uint64_t x = a64, y = b64; r64 = (expr); w->scc = r64 != 0; interp_sdst64(w, in, r64); break; }
    LOGIC(WAVE_OP_S_AND_B32, WAVE_OP_S_AND_B64, x & y)
    LOGIC(WAVE_OP_S_OR_B32, WAVE_OP_S_OR_B64, x | y)
    LOGIC(WAVE_OP_S_XOR_B32, WAVE_OP_S_XOR_B64, x ^ y)
    LOGIC(WAVE_OP_S_ANDN2_B32, WAVE_OP_S_ANDN2_B64, x & ~y)
    LOGIC(WAVE_OP_S_ORN2_B32, WAVE_OP_S_ORN2_B64, x | ~y)
    LOGIC(WAVE_OP_S_NAND_B32, WAVE_OP_S_NAND_B64, ~(x & y))
    LOGIC(WAVE_OP_S_NOR_B32, WAVE_OP_S_NOR_B64, ~(x | y))
    LOGIC(WAVE_OP_S_XNOR_B32, WAVE_OP_S_XNOR_B64, ~(x ^ y))
#undef LOGIC
    case WAVE_OP_S_LSHL_B32: r32 = a << (b & 31); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_LSHL_B64: r64 = a64 << (b & 63); w->scc = r64 != 0; interp_sdst64(w, in, r64); break;
    case WAVE_OP_S_LSHR_B32: r32 = a >> (b & 31); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_LSHR_B64: r64 = a64 >> (b & 63); w->scc = r64 != 0; interp_sdst64(w, in, r64); break;
    case WAVE_OP_S_ASHR_I32: r32 = (uint32_t)((int32_t)a >> (b & 31)); w->scc = r32 != 0; interp_sdst32(w, in, r32); break;
    case WAVE_OP_S_ASHR_I64: r64 = (uint64_t)((int64_t)a64 >> (b & 63)); w->scc = r64 != 0; interp_sdst64(w, in, r64); break;
    case WAVE_OP_S_BFM_B32: interp_sdst32(w, in, (uint32_t)(((1ull << (a & 31)) - 1) << (b & 31))); break;
    case WAVE_OP_S_BFM_B64: interp_sdst64(w, in, ((a & 63) == 0 ? 0 : (UINT64_MAX >> (64 - (a & 63)))) << (b & 63)); break;
    case WAVE_OP_S_MUL_I32: interp_sdst32(w, in, a * b); break;
    case WAVE_OP_S_BFE_U32: case WAVE_OP_S_BFE_I32: {
        uint32_t off = b & 31, wid = (b >> 16) & 0x7f;
        r32 = wid == 0 ? 0 : (a >> off) & (wid >= 32 ? UINT32_MAX : (1u << wid) - 1);
        if (in->op == WAVE_OP_S_BFE_I32 && wid && wid < 32)
            r32 = (uint32_t)((int32_t)(r32 << (32 - wid)) >> (32 - wid));
        w->scc = r32 != 0;
        interp_sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_BFE_U64: case WAVE_OP_S_BFE_I64: {
        uint32_t off = b & 63, wid = (b >> 16) & 0x7f;
        r64 = wid == 0 ? 0 : (a64 >> off) & (wid >= 64 ? UINT64_MAX : (1ull << wid) - 1);
        if (in->op == WAVE_OP_S_BFE_I64 && wid && wid < 64)
            r64 = (uint64_t)((int64_t)(r64 << (64 - wid)) >> (64 - wid));
        w->scc = r64 != 0;
        interp_sdst64(w, in, r64);
        break;
    }
    case WAVE_OP_S_ABSDIFF_I32: {
        int64_t d = (int64_t)(int32_t)a - (int32_t)b;
        r32 = (uint32_t)(d < 0 ? -d : d);
        w->scc = r32 != 0;
        interp_sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_MUL_HI_U32: interp_sdst32(w, in, (uint32_t)(((uint64_t)a * b) >> 32)); break;
    case WAVE_OP_S_MUL_HI_I32: interp_sdst32(w, in, (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int32_t)b) >> 32)); break;
    case WAVE_OP_S_LSHL1_ADD_U32: case WAVE_OP_S_LSHL2_ADD_U32: case WAVE_OP_S_LSHL3_ADD_U32:
    case WAVE_OP_S_LSHL4_ADD_U32: {
        unsigned sh = in->op == WAVE_OP_S_LSHL1_ADD_U32 ? 1 : in->op == WAVE_OP_S_LSHL2_ADD_U32 ? 2
                    : in->op == WAVE_OP_S_LSHL3_ADD_U32 ? 3 : 4;
        r64 = ((uint64_t)a << sh) + b;
        w->scc = r64 > 0xffffffffu;
        interp_sdst32(w, in, (uint32_t)r64);
        break;
    }
    case WAVE_OP_S_PACK_LL_B32_B16: interp_sdst32(w, in, (a & 0xffff) | b << 16); break;
    case WAVE_OP_S_PACK_LH_B32_B16: interp_sdst32(w, in, (a & 0xffff) | (b & 0xffff0000u)); break;
    case WAVE_OP_S_PACK_HH_B32_B16: interp_sdst32(w, in, a >> 16 | (b & 0xffff0000u)); break;

    /* SOPC */
    case WAVE_OP_S_CMP_EQ_I32: case WAVE_OP_S_CMP_EQ_U32: w->scc = a == b; break;
    case WAVE_OP_S_CMP_LG_I32: case WAVE_OP_S_CMP_LG_U32: w->scc = a != b; break;
    case WAVE_OP_S_CMP_GT_I32: w->scc = (int32_t)a > (int32_t)b; break;
    case WAVE_OP_S_CMP_GE_I32: w->scc = (int32_t)a >= (int32_t)b; break;
    case WAVE_OP_S_CMP_LT_I32: w->scc = (int32_t)a < (int32_t)b; break;
    case WAVE_OP_S_CMP_LE_I32: w->scc = (int32_t)a <= (int32_t)b; break;
    case WAVE_OP_S_CMP_GT_U32: w->scc = a > b; break;
    case WAVE_OP_S_CMP_GE_U32: w->scc = a >= b; break;
    case WAVE_OP_S_CMP_LT_U32: w->scc = a < b; break;
    case WAVE_OP_S_CMP_LE_U32: w->scc = a <= b; break;
    case WAVE_OP_S_CMP_EQ_U64: w->scc = a64 == b64; break;
    case WAVE_OP_S_CMP_LG_U64: w->scc = a64 != b64; break;
    case WAVE_OP_S_BITCMP0_B32: w->scc = !((a >> (b & 31)) & 1); break;
    case WAVE_OP_S_BITCMP1_B32: w->scc = (a >> (b & 31)) & 1; break;
    case WAVE_OP_S_BITCMP0_B64: w->scc = !((a64 >> (b & 63)) & 1); break;
    case WAVE_OP_S_BITCMP1_B64: w->scc = (a64 >> (b & 63)) & 1; break;
    case WAVE_OP_S_SET_GPR_IDX_ON:
        w->gpr_idx_on = true;
        w->gpr_idx = a & 0xff;
        w->gpr_idx_mode = b & 15;
        break;

    /* SOPK */
    case WAVE_OP_S_MOVK_I32: interp_sdst32(w, in, (uint32_t)(int16_t)interp_imm_of(in)); break;
    case WAVE_OP_S_CMOVK_I32: if (w->scc) interp_sdst32(w, in, (uint32_t)(int16_t)interp_imm_of(in)); break;
    case WAVE_OP_S_CMPK_EQ_I32: w->scc = (int32_t)a == (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_LG_I32: w->scc = (int32_t)a != (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_GT_I32: w->scc = (int32_t)a > (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_GE_I32: w->scc = (int32_t)a >= (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_LT_I32: w->scc = (int32_t)a < (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_LE_I32: w->scc = (int32_t)a <= (int16_t)interp_imm_of(in); break;
    case WAVE_OP_S_CMPK_EQ_U32: w->scc = a == (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LG_U32: w->scc = a != (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_GT_U32: w->scc = a > (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_GE_U32: w->scc = a >= (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LT_U32: w->scc = a < (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LE_U32: w->scc = a <= (interp_imm_of(in) & 0xffff); break;
    case WAVE_OP_S_ADDK_I32: {
        uint32_t k = (uint32_t)(int16_t)interp_imm_of(in), x = interp_sv32(w, &in->dst[0]);
        r32 = x + k;
        w->scc = ((x ^ r32) & (k ^ r32)) >> 31;
        interp_sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_MULK_I32: interp_sdst32(w, in, interp_sv32(w, &in->dst[0]) * (uint32_t)(int16_t)interp_imm_of(in)); break;
    case WAVE_OP_S_GETREG_B32: {
        uint32_t h = interp_imm_of(in), id = h & 63, off = (h >> 6) & 31, size = ((h >> 11) & 31) + 1;
        uint32_t v = hwreg_read(m, w, id) >> off;
        interp_sdst32(w, in, size >= 32 ? v : v & ((1u << size) - 1));
        break;
    }
    case WAVE_OP_S_SETREG_B32: case WAVE_OP_S_SETREG_IMM32_B32: {
        uint32_t h = 0, v = 0;
        /* src[0] is the value (a register, or the literal), src[1] hwreg */
        h = in->src[1].value;
        v = interp_sv32(w, &in->src[0]);
        uint32_t id = h & 63, off = (h >> 6) & 31, size = ((h >> 11) & 31) + 1;
        uint32_t mask = (size >= 32 ? UINT32_MAX : (1u << size) - 1) << off;
        if (id == 1)
            w->mode = (w->mode & ~mask) | ((v << off) & mask);
        break;
    }
    case WAVE_OP_S_CALL_B64: interp_sdst64(w, in, WAVE_IMAGE_BASE + next); branch_to(w, in, next); break;

    /* SOPP */
    case WAVE_OP_S_NOP: case WAVE_OP_S_WAITCNT: case WAVE_OP_S_SLEEP: case WAVE_OP_S_SETPRIO:
    case WAVE_OP_S_WAKEUP: case WAVE_OP_S_ICACHE_INV: case WAVE_OP_S_INCPERFLEVEL: case WAVE_OP_S_DECPERFLEVEL:
    case WAVE_OP_S_TTRACEDATA: case WAVE_OP_S_CBRANCH_CDBGSYS: case WAVE_OP_S_CBRANCH_CDBGUSER:
    case WAVE_OP_S_CBRANCH_CDBGSYS_OR_USER: case WAVE_OP_S_CBRANCH_CDBGSYS_AND_USER:
        break;
    case WAVE_OP_S_ENDPGM: case WAVE_OP_S_ENDPGM_SAVED: case WAVE_OP_S_ENDPGM_ORDERED_PS_DONE:
        w->status = WS_DONE;
        break;
    case WAVE_OP_S_BRANCH: branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_SCC0: if (!w->scc) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_SCC1: if (w->scc) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_VCCZ: if (wv_vcc(w) == 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_VCCNZ: if (wv_vcc(w) != 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_EXECZ: if (exec == 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_EXECNZ: if (exec != 0) branch_to(w, in, next); break;
    case WAVE_OP_S_BARRIER: w->status = WS_BARRIER; break;
    case WAVE_OP_S_SET_GPR_IDX_OFF: w->gpr_idx_on = false; break;
    case WAVE_OP_S_SET_GPR_IDX_MODE: w->gpr_idx_mode = interp_imm_of(in) & 15; break;
    case WAVE_OP_S_TRAP:
        return interp_fail(m, KILN_ERR_INVALID, "the wave traps (s_trap %u): kiln runs no trap handler", interp_imm_of(in) & 0xff);
    default:
        return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", info->name);
    }
    return KILN_OK;
}
