/* SPDX-License-Identifier: MIT */
/*
 * decode_vector.c: the decoder's vector encodings (see decode.h): VOP1,
 * VOP2, VOPC, VOP3 (a and b), VOP3P, SDWA and DPP, and the vector memory
 * encodings FLAT, GLOBAL, SCRATCH, MUBUF and DS.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/decode_private.h"

/* ---- vector ALU ---- */


/* Sources taking neg/abs in SDWA and DPP: the float ones (v_cndmask_b32
 * takes them in DPP only). */
static uint8_t float_srcs(const struct wave_op_info *info, bool sdwa)
{
    struct vop3_mods m = dec_vop3_mods_of(info);
    if (sdwa && strcmp(info->name, "v_cndmask_b32") == 0)
        return 0;
    return (uint8_t)(m.srcmods & ~m.intsrc);
}
static bool vop_dpp(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst);

/* Makes the implicit vcc operands of an e32 form explicit. */
static void vcc_operands(struct wave_instr *in, const struct wave_op_info *info)
{
    static const struct wave_operand vcc = { WAVE_OPND_SGPR, 2, WAVE_SREG_VCC_LO, 0 };
    if (info->flags & WAVE_F_VCC_OUT)
        in->dst[1] = vcc;
    if (info->flags & WAVE_F_VCC_IN)
        in->src[2] = vcc;
}

bool dec_vop2(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_VOP2, BITS(w, 30, 25));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vsrc1 = BITS(w, 16, 9), vdst = BITS(w, 24, 17);
    if (!info)
        return false;
    if (src0 == 0xf9)
        return dec_vop_sdwa(d, info, vsrc1, vdst);
    if (src0 == 0xfa)
        return vop_dpp(d, info, vsrc1, vdst);
    if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst") ||
        !dec_src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0") ||
        !dec_vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1"))
        return false;
    if (in->op == WAVE_OP_V_MADMK_F32 || in->op == WAVE_OP_V_MADMK_F16 ||
        in->op == WAVE_OP_V_MADAK_F32 || in->op == WAVE_OP_V_MADAK_F16) {
        uint32_t k;
        if (!dec_word(d, 1, &k))
            return false;
        d->literal = true; /* a literal src0 is K too */
        d->lit = k;
        if (src0 == 255)
            in->src[0] = (struct wave_operand){ WAVE_OPND_LITERAL, 1, 0, k };
        struct wave_operand kop = { WAVE_OPND_IMM, 1, 0, k };
        if (in->op == WAVE_OP_V_MADMK_F32 || in->op == WAVE_OP_V_MADMK_F16) {
            in->src[2] = in->src[1];
            in->src[1] = kop;
        } else {
            in->src[2] = kop;
        }
        return true;
    }
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    vcc_operands(in, info);
    return true;
}

bool dec_vop1(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_VOP1, BITS(w, 16, 9));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vdst = BITS(w, 24, 17);
    if (!info)
        return false;
    if (src0 == 0xf9 || src0 == 0xfa) {
        bool ok = src0 == 0xf9 ? dec_vop_sdwa(d, info, 0, vdst) : vop_dpp(d, info, 0, vdst);
        bool plain = !info->src[0] || in->op == WAVE_OP_V_SWAP_B32;
        if (ok || !plain)
            return ok;
        /* v_nop, v_clrexcp and v_swap_b32 do not read src0 as a source code: a
         * word that is no SDWA or DPP form is their plain form */
        struct wave_instr keep = *in;
        memset(in, 0, sizeof *in);
        in->op = keep.op;
        in->raw[0] = keep.raw[0];
        d->len = 1;
    }
    if (!info->dst && !info->src[0]) /* v_nop, v_clrexcp: src0 is not looked at */
        return dec_must_zero(d, vdst, "vdst");
    if (in->op == WAVE_OP_V_READFIRSTLANE_B32) {
        /* the 8-bit field holds a scalar operand code: a register, or (as
         * LLVM reads it) one of the read-only specials, which a reader refuses
         * to write */
        bool ok = vdst < 128 ? dec_sdst(d, vdst, 1, &in->dst[0], "sdst")
                             : dec_src_code(d, vdst, 1, A_SPECIAL, &in->dst[0], "sdst");
        /* its source is a register: a VGPR, or as LLVM reads it an SGPR */
        return ok && dec_src_code(d, src0, 1, A_VGPR | A_SPECIAL, &in->src[0], "src0");
    }
    if (in->op == WAVE_OP_V_SWAP_B32) /* both are vector registers: bit 8 is not looked at */
        return dec_vreg(d, vdst, 1, &in->dst[0], "vdst") && dec_vreg(d, src0 & 0xff, 1, &in->src[0], "src0");
    return dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst") &&
           dec_src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0");
}

bool dec_vopc(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_VOPC, BITS(w, 24, 17));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vsrc1 = BITS(w, 16, 9);
    if (!info)
        return false;
    if (src0 == 0xf9)
        return dec_vop_sdwa(d, info, vsrc1, 0);
    if (src0 == 0xfa)
        return dec_fail(d, "%s: DPP is not decoded for VOPC", info->name);
    in->dst[1] = (struct wave_operand){ WAVE_OPND_SGPR, 2, WAVE_SREG_VCC_LO, 0 };
    return dec_src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0") &&
           dec_vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1");
}

/* SDWA (gfx9): the second dword carries src0 (a VGPR, or with s0 a
 * scalar), the selects and the modifiers. */
bool dec_vop_sdwa(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst)
{
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t s;
    if (!(info->flags & WAVE_F_SDWA))
        return dec_fail(d, "%s has no SDWA form", info->name);
    if (!dec_word(d, 1, &s))
        return false;
    d->len = 2;
    in->enc = WAVE_ENC_SDWA;
    bool vopc = info->family == WAVE_FAM_VOPC;
    bool vop1 = info->family == WAVE_FAM_VOP1;
    unsigned code0 = BITS(s, 7, 0) + (BITS(s, 23, 23) ? 0 : 256);
    if (!dec_src_code(d, code0, 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[0], "src0"))
        return false;
    m->src_sel[0] = (uint8_t)BITS(s, 18, 16);
    m->sext = (uint8_t)BITS(s, 19, 19);
    m->neg = (uint8_t)BITS(s, 20, 20);
    m->abs = (uint8_t)BITS(s, 21, 21);
    if (!vop1) {
        unsigned code1 = vsrc1 + (BITS(s, 31, 31) ? 0 : 256);
        if (!dec_src_code(d, code1, 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[1], "src1"))
            return false;
        m->src_sel[1] = (uint8_t)BITS(s, 26, 24);
        m->sext |= (uint8_t)(BITS(s, 27, 27) << 1);
        m->neg |= (uint8_t)(BITS(s, 28, 28) << 1);
        m->abs |= (uint8_t)(BITS(s, 29, 29) << 1);
    } else if (BITS(s, 31, 24) & 0xbf) { /* bit 30 is not looked at */
        return dec_fail(d, "%s (SDWA): src1 fields 0x%x where VOP1 has no src1", info->name,
                    BITS(s, 31, 24));
    }
    uint8_t fsrc = float_srcs(info, true);
    if ((m->neg | m->abs) & ~fsrc)
        return dec_fail(d, "%s (SDWA): neg/abs on an integer source", info->name);
    if (m->sext & fsrc)
        return dec_fail(d, "%s (SDWA): sext on a float source", info->name);
    if (m->src_sel[0] > 6 || m->src_sel[1] > 6)
        return dec_fail(d, "%s (SDWA): a source select past DWORD (6)", info->name);
    if (vopc) {
        if (BITS(s, 15, 15)) {
            if (!dec_sdst(d, BITS(s, 14, 8), 2, &in->dst[1], "sdst"))
                return false;
        } else { /* vcc; the sdst field is not looked at */
            in->dst[1] = (struct wave_operand){ WAVE_OPND_SGPR, 2, WAVE_SREG_VCC_LO, 0 };
        }
    } else {
        m->dst_sel = (uint8_t)BITS(s, 10, 8);
        m->dst_unused = (uint8_t)BITS(s, 12, 11);
        m->clamp = (uint8_t)BITS(s, 13, 13);
        m->omod = (uint8_t)BITS(s, 15, 14);
        struct vop3_mods am = dec_vop3_mods_of(info);
        const char *types[4] = { 0 };
        bool fdst = dec_name_types(info->name, types) > 0 && dec_is_float(types[0]) &&
                    strcmp(info->name, "v_cvt_pkrtz_f16_f32") != 0;
        if (m->omod && !(am.omod && fdst))
            return dec_fail(d, "%s (SDWA): omod where the result is no float", info->name);
        if (m->dst_sel > 6)
            return dec_fail(d, "%s (SDWA): dst_sel %u is past DWORD (6)", info->name, m->dst_sel);
        if (info->dst) {
            if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
                return false;
        } else if (!dec_must_zero(d, vdst, "vdst")) {
            return false;
        }
    }
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    vcc_operands(in, info);
    return true;
}

static bool vop_dpp(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst)
{
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t s;
    if (!(info->flags & WAVE_F_DPP))
        return dec_fail(d, "%s has no DPP form", info->name);
    if (!dec_word(d, 1, &s))
        return false;
    d->len = 2;
    in->enc = WAVE_ENC_DPP;
    /* a reserved dpp_ctrl is kept as it is, for the reader to refuse */
    m->dpp_ctrl = (uint16_t)BITS(s, 16, 8);
    m->bound_ctrl = (uint8_t)BITS(s, 19, 19);
    m->neg = (uint8_t)(BITS(s, 20, 20) | BITS(s, 22, 22) << 1);
    m->abs = (uint8_t)(BITS(s, 21, 21) | BITS(s, 23, 23) << 1);
    {
        struct vop3_mods am = dec_vop3_mods_of(info);
        if ((m->neg | m->abs) & ~am.srcmods)
            return dec_fail(d, "%s (DPP): neg/abs on an integer or absent source", info->name);
        m->sext = m->neg & am.intsrc;
        m->neg &= (uint8_t)~am.intsrc;
        m->abs &= (uint8_t)~am.intsrc;
        if (strcmp(info->name, "v_cndmask_b32") == 0)
            m->neg = m->abs = 0; /* not looked at */
    }
    m->bank_mask = (uint8_t)BITS(s, 27, 24);
    m->row_mask = (uint8_t)BITS(s, 31, 28);
    if (info->dst) {
        if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!dec_must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (info->src[0] && !dec_vreg(d, BITS(s, 7, 0), info->src[0], &in->src[0], "src0"))
        return false;
    if (!info->src[0] && !dec_must_zero(d, BITS(s, 7, 0), "DPP src0"))
        return false;
    if (info->family == WAVE_FAM_VOP2 && !dec_vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1"))
        return false;
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    vcc_operands(in, info);
    return true;
}

/* VOP3: the VOP3-only ops and the VOP1/VOP2/VOPC ops promoted to it. */
bool dec_vop3(struct dec *d, uint32_t w)
{
    struct wave_instr *in = d->out;
    unsigned opc = BITS(w, 25, 16);
    const struct wave_op_info *info;
    uint32_t w1;
    if (opc < 256)
        info = dec_lookup(d, WAVE_FAM_VOPC, opc);
    else if (opc < 320)
        info = dec_lookup(d, WAVE_FAM_VOP2, opc - 256);
    else if (opc < 448)
        info = dec_lookup(d, WAVE_FAM_VOP1, opc - 320);
    else {
        unsigned op = wave_op_by_code[WAVE_FAM_VOP3A][opc] ? wave_op_by_code[WAVE_FAM_VOP3A][opc]
                                                     : wave_op_by_code[WAVE_FAM_VOP3B][opc];
        if (!op) {
            if (opc >= 0x270 && opc <= 0x277)
                return dec_fail(d, "VOP3 opcode %u (0x%x): interpolation (VINTRP) is not decoded", opc, opc);
            return dec_fail(d, "VOP3 opcode %u (0x%x) is no gfx900 instruction", opc, opc);
        }
        in->op = (uint16_t)op;
        info = &wave_op_table[op];
    }
    if (!info) {
        dec_fail(d, "VOP3 opcode %u (0x%x) is no gfx900 instruction", opc, opc);
        return false;
    }
    if (info->flags & WAVE_F_NOE64)
        return dec_fail(d, "%s has no VOP3 form", info->name);
    if (!dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    if (info->family != WAVE_FAM_VOP3A && info->family != WAVE_FAM_VOP3B)
        in->enc = WAVE_ENC_VOP3;
    bool vop3b = info->family == WAVE_FAM_VOP3B || (info->flags & WAVE_F_VCC_OUT);
    struct vop3_mods allowed = dec_vop3_mods_of(info);
    struct wave_mods *m = &in->mods;
    unsigned widths[3] = { info->src[0], info->src[1], info->src[2] };
    if (info->family == WAVE_FAM_VOP2 && (info->flags & WAVE_F_VCC_IN))
        widths[2] = 2;
    if (info->flags & WAVE_F_MAC)
        widths[2] = 0; /* the VOP3 form names no src2: it is the destination */

    m->neg = (uint8_t)BITS(w1, 31, 29);
    m->omod = (uint8_t)BITS(w1, 28, 27);
    m->clamp = (uint8_t)BITS(w, 15, 15);
    if (!vop3b) {
        m->abs = (uint8_t)BITS(w, 10, 8);
        m->op_sel = (uint8_t)BITS(w, 14, 11);
    }
    if (in->op == WAVE_OP_V_READLANE_B32) {
        m->neg = m->abs = 0; /* no modifiers; the bits are not looked at */
    }
    if (m->neg & ~allowed.srcmods)
        return dec_fail(d, "%s: neg 0x%x on a source that takes none", info->name, m->neg);
    if (m->abs & ~allowed.srcmods)
        return dec_fail(d, "%s: abs 0x%x on a source that takes none", info->name, m->abs);
    /* an integer source of a float op: neg is sign extension, abs nothing */
    m->sext = m->neg & allowed.intsrc;
    m->neg &= (uint8_t)~allowed.intsrc;
    m->abs &= (uint8_t)~allowed.intsrc;
    if (allowed.opsel && (m->op_sel & 7 & ~allowed.opsel))
        return dec_fail(d, "%s: op_sel 0x%x on an absent source", info->name, m->op_sel);
    if (m->omod && !allowed.omod)
        return dec_fail(d, "%s: omod %u where the op takes none", info->name, m->omod);
    if (m->clamp && !allowed.clamp)
        return dec_fail(d, "%s: clamp where the op takes none", info->name);
    m->op_sel &= allowed.opsel;

    /* destinations */
    unsigned vdst = BITS(w, 7, 0);
    if (info->family == WAVE_FAM_VOPC) {
        /* an 8-bit field: a register pair, or (as LLVM reads it) a
         * read-only special, which a reader refuses to write */
        bool ok = vdst < 128 ? dec_sdst(d, vdst, 2, &in->dst[1], "sdst")
                             : dec_src_code(d, vdst, 2, A_SPECIAL, &in->dst[1], "sdst");
        if (!ok)
            return false;
    } else if (in->op == WAVE_OP_V_READLANE_B32 || in->op == WAVE_OP_V_READFIRSTLANE_B32) {
        if (!dec_sdst(d, vdst, 1, &in->dst[0], "sdst"))
            return false;
    } else if (info->dst) {
        if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!dec_must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (vop3b && !dec_sdst(d, BITS(w, 14, 8), 2, &in->dst[1], "sdst"))
        return false;

    /* sources: no literal in gfx9's VOP3 */
    static const char *const names[3] = { "src0", "src1", "src2" };
    unsigned codes[3] = { BITS(w1, 8, 0), BITS(w1, 17, 9), BITS(w1, 26, 18) };
    for (unsigned i = 0; i < 3; i++) {
        if (!widths[i]) {
            /* v_readlane_b32 does not look at src2 */
            if (in->op != WAVE_OP_V_READLANE_B32 && !dec_must_zero(d, codes[i], names[i]))
                return false;
            continue;
        }
        unsigned allow = A_VGPR | A_CONST | A_SPECIAL;
        if (in->op == WAVE_OP_V_READLANE_B32 && i == 0)
            allow = A_VGPR | A_SPECIAL; /* a register: a VGPR, or as LLVM reads it an SGPR */
        if (i == 2 && info->family == WAVE_FAM_VOP2 && (info->flags & WAVE_F_VCC_IN))
            allow = A_VGPR | A_SPECIAL; /* the mask or carry-in: a register pair */
        if (!dec_src_code(d, codes[i], widths[i], allow, &in->src[i], names[i]))
            return false;
    }
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    return true;
}

bool dec_vop3p(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_VOP3P, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    unsigned nsrc = info->src[2] ? 3 : 2;
    bool fp = strstr(info->name, "_f16") || strstr(info->name, "_f32");
    m->abs = (uint8_t)BITS(w, 10, 8); /* neg_hi */
    m->op_sel = (uint8_t)BITS(w, 13, 11);
    m->op_sel_hi = (uint8_t)(BITS(w1, 28, 27) | BITS(w, 14, 14) << 2);
    m->clamp = (uint8_t)BITS(w, 15, 15);
    m->neg = (uint8_t)BITS(w1, 31, 29);
    if (nsrc == 2) {
        if ((m->abs | m->neg) & 4)
            return dec_fail(d, "%s: neg_lo/neg_hi on an absent src2", info->name);
        if (m->op_sel & 4)
            return dec_fail(d, "%s: op_sel on an absent src2", info->name);
        m->op_sel_hi &= 3;
    }
    if (!fp && ((m->abs | m->neg) & 6)) /* src0's bits only, as LLVM reads them */
        return dec_fail(d, "%s: neg_lo/neg_hi on src1 or src2 of an integer op", info->name);
    if (!dec_vreg(d, BITS(w, 7, 0), 1, &in->dst[0], "vdst"))
        return false;
    static const char *const names[3] = { "src0", "src1", "src2" };
    unsigned codes[3] = { BITS(w1, 8, 0), BITS(w1, 17, 9), BITS(w1, 26, 18) };
    for (unsigned i = 0; i < 3; i++) {
        if (i >= nsrc) {
            if (!dec_must_zero(d, codes[i], names[i]))
                return false;
            continue;
        }
        if (!dec_src_code(d, codes[i], 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[i], names[i]))
            return false;
    }
    return true;
}

/* ---- vector memory ---- */

bool dec_ds(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_DS, BITS(w, 24, 17));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    /* bit 25 is reserved: LLVM ignores it but for the ops that neither
     * return nor take data (ds_nop, the _src2_ ops, the gws semaphores) */
    if (BITS(w, 25, 25) && (in->op == WAVE_OP_DS_NOP || strstr(info->name, "_src2_") ||
                            in->op == WAVE_OP_DS_GWS_SEMA_RELEASE_ALL ||
                            in->op == WAVE_OP_DS_GWS_SEMA_V || in->op == WAVE_OP_DS_GWS_SEMA_P))
        return dec_fail(d, "%s: reserved bit 25 is set", info->name);
    m->offset0 = (uint8_t)BITS(w, 7, 0);
    m->offset1 = (uint8_t)BITS(w, 15, 8);
    m->offset = (int32_t)BITS(w, 15, 0);
    m->gds = (uint8_t)BITS(w, 16, 16);
    unsigned addr = BITS(w1, 7, 0), data0 = BITS(w1, 15, 8), data1 = BITS(w1, 23, 16),
             vdst = BITS(w1, 31, 24);
    if (info->dst) {
        if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!dec_must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (info->src[0]) {
        if (!dec_vreg(d, addr, 1, &in->src[0], "addr"))
            return false;
    } else if (!dec_must_zero(d, addr, "addr")) {
        return false;
    }
    if (info->src[1]) {
        if (!dec_vreg(d, data0, info->src[1], &in->src[1], "data0"))
            return false;
    } else if (!dec_must_zero(d, data0, "data0")) {
        return false;
    }
    if (info->src[2]) {
        if (!dec_vreg(d, data1, info->src[2], &in->src[2], "data1"))
            return false;
    } else if (!dec_must_zero(d, data1, "data1")) {
        return false;
    }
    if ((strncmp(info->name, "ds_gws", 6) == 0 || in->op == WAVE_OP_DS_ORDERED_COUNT) && !m->gds)
        return dec_fail(d, "%s without gds", info->name);
    if ((in->op == WAVE_OP_DS_PERMUTE_B32 || in->op == WAVE_OP_DS_BPERMUTE_B32) && m->gds)
        return dec_fail(d, "%s with gds", info->name);
    if (in->op == WAVE_OP_DS_NOP && (m->offset || m->gds))
        return dec_fail(d, "ds_nop: offset 0x%x or gds where the op takes neither", (unsigned)m->offset);
    return true;
}

bool dec_flat(struct dec *d, uint32_t w)
{
    static const uint8_t fams[4] = { WAVE_FAM_FLAT, WAVE_FAM_SCRATCH, WAVE_FAM_GLOBAL, 0 };
    unsigned seg = BITS(w, 15, 14);
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (seg == 3)
        return dec_fail(d, "FLAT segment 3 is reserved");
    unsigned fam = fams[seg];
    const struct wave_op_info *info = dec_lookup(d, fam, BITS(w, 24, 18));
    if (!info || !dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    m->glc = (uint8_t)BITS(w, 16, 16);
    m->slc = (uint8_t)BITS(w, 17, 17);
    m->lds = (uint8_t)BITS(w, 13, 13);
    m->nv = (uint8_t)BITS(w1, 23, 23);
    if (m->lds)
        return dec_fail(d, "%s: the lds bit is set", info->name);
    if (fam == WAVE_FAM_FLAT) {
        m->offset = (int32_t)BITS(w, 12, 0); /* unsigned for FLAT */
    } else {
        m->offset = (int32_t)(BITS(w, 12, 0) ^ 0x1000) - 0x1000;
    }
    unsigned addr = BITS(w1, 7, 0), data = BITS(w1, 15, 8), saddr = BITS(w1, 22, 16),
             vdst = BITS(w1, 31, 24);
    bool rtn = (info->flags & WAVE_F_LOAD) || ((info->flags & WAVE_F_ATOMIC) && m->glc);
    if (rtn && info->dst) {
        if (!dec_vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    }
    if (info->src[2]) {
        if (!dec_vreg(d, data, info->src[2], &in->src[2], "data"))
            return false;
    }
    if (fam == WAVE_FAM_FLAT) {
        if (!dec_must_zero(d, saddr, "saddr"))
            return false;
        return dec_vreg(d, addr, 2, &in->src[0], "vaddr");
    }
    if (saddr == 0x7f)
        return dec_vreg(d, addr, fam == WAVE_FAM_GLOBAL ? 2 : 1, &in->src[0], "vaddr");
    if (fam == WAVE_FAM_GLOBAL)
        return dec_vreg(d, addr, 1, &in->src[0], "vaddr") && dec_sdst(d, saddr, 2, &in->src[1], "saddr");
    return dec_sdst(d, saddr, 1, &in->src[1], "saddr");
}

bool dec_mubuf(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_MUBUF, BITS(w, 24, 18));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    m->offset = (int32_t)BITS(w, 11, 0);
    m->offen = (uint8_t)BITS(w, 12, 12);
    m->idxen = (uint8_t)BITS(w, 13, 13);
    m->glc = (uint8_t)BITS(w, 14, 14);
    m->lds = (uint8_t)BITS(w, 16, 16);
    m->slc = (uint8_t)BITS(w, 17, 17);
    /* tfe: a load returns a status dword after its data */
    m->tfe = (uint8_t)BITS(w1, 23, 23);
    unsigned vaddr = BITS(w1, 7, 0), vdata = BITS(w1, 15, 8), srsrc = BITS(w1, 20, 16) << 2,
             soffset = BITS(w1, 31, 24);
    if (!info->dst && !info->src[2] && !(info->flags & (WAVE_F_LOAD | WAVE_F_STORE))) {
        /* buffer_wbinvl1*, buffer_store_lds_dword: no data operand */
        if (in->op != WAVE_OP_BUFFER_STORE_LDS_DWORD)
            return dec_must_zero(d, BITS(w, 16, 12), "offen/idxen/glc/lds");
    }
    if (in->op == WAVE_OP_BUFFER_STORE_LDS_DWORD) {
        if (!m->lds || m->offen || m->idxen)
            return dec_fail(d, "buffer_store_lds_dword needs lds and no vaddr");
    } else if (m->lds && ((info->flags & (WAVE_F_STORE | WAVE_F_ATOMIC)) || strstr(info->name, "d16") ||
                          strstr(info->name, "format_xy"))) {
        return dec_fail(d, "%s: the lds bit is set", info->name);
    }
    unsigned naddr = m->offen + m->idxen;
    if (naddr && !dec_vreg(d, vaddr, naddr, &in->src[0], "vaddr"))
        return false;
    if (!dec_sdst(d, srsrc, 4, &in->src[1], "srsrc"))
        return false;
    if (!dec_src_code(d, soffset, 1, A_CONST | A_SPECIAL, &in->src[2], "soffset"))
        return false;
    bool rtn = (info->flags & WAVE_F_LOAD) || ((info->flags & WAVE_F_ATOMIC) && m->glc);
    /* with tfe the status dword goes to the register after vdata's count */
    if (rtn && info->dst && !dec_vreg(d, vdata, info->dst, &in->dst[0], "vdata"))
        return false;
    if (info->src[2] && !dec_vreg(d, vdata, info->src[2], &in->src[3], "vdata"))
        return false;
    return true;
}
