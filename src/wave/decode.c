/* SPDX-License-Identifier: MIT */
/*
 * decode: gfx9 machine code to the IR, by hand from the Vega ISA's encoding
 * tables. The first dword's leading bits pick the encoding; the family's
 * opcode field picks the op through one table built from ops.def at compile
 * time (wave_op_by_code); each operand field is then read by the one function
 * for its kind of field (a 9-bit source, an 8-bit scalar source, a 7-bit
 * scalar destination, a vector register), which knows the codes the
 * architecture gives meaning to and refuses the rest.
 *
 * Strictness. What decodes is exactly what LLVM's AMDGPU disassembler
 * (the reference tests/wave/test_decode.c holds kiln to, word for word)
 * decodes, with the same length: a field an op uses must hold a value the
 * architecture gives meaning to; a modifier the op cannot take (abs on an
 * integer source, omod on an integer result, op_sel on an absent source)
 * refuses the word; a field the op does not use must be zero where LLVM
 * looks at it and is ignored where it does not (VOP3's op_sel on ops
 * without 16-bit operands, the sdst of scalar ops without a destination,
 * v_nop's src0). Misaligned scalar tuples are aligned down (s[1:2] reads
 * as s[0:1]), as the hardware and LLVM do. Where LLVM accepts what the
 * architecture reserves, kiln follows and says so in ir.h (code 125 as
 * null, reserved DPP controls kept for the reader to refuse); where LLVM
 * decodes a word while marking an operand invalid, kiln refuses it.
 *
 * Bounds. Every dword is read through dec_word(), which refuses an index past
 * the buffer; nothing is read ahead of need.
 */
#include "wave/decode.h"
#include "wave/decode_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

const struct wave_op_info wave_op_table[WAVE_OP_COUNT] = {
    [WAVE_OP_INVALID] = { "invalid", 0, 0, 0, { 0, 0, 0 }, 0 },
#define X(id, nm, fam, opc, d, s0, s1, s2, fl)                                                     \
    [WAVE_OP_##id] = { nm, WAVE_FAM_##fam, opc, d, { s0, s1, s2 }, fl },
#include "wave/ops.def"
#undef X
};

/* Op by family and opcode field; 0 (WAVE_OP_INVALID) where none. */
const uint16_t wave_op_by_code[WAVE_FAM_COUNT][1024] = {
#define X(id, nm, fam, opc, d, s0, s1, s2, fl) [WAVE_FAM_##fam][opc] = WAVE_OP_##id,
#include "wave/ops.def"
#undef X
};

static const char *const family_names[WAVE_FAM_COUNT] = {
#define F(f) #f,
    WAVE_FAMILIES(F)
#undef F
};

const struct wave_op_info *wave_op_info(unsigned op)
{
    if (op == WAVE_OP_INVALID || op >= WAVE_OP_COUNT)
        return NULL;
    return &wave_op_table[op];
}

const char *wave_op_name(unsigned op)
{
    return op < WAVE_OP_COUNT ? wave_op_table[op].name : "invalid";
}

const char *wave_family_name(unsigned family)
{
    return family < WAVE_FAM_COUNT ? family_names[family] : "unknown";
}

uint64_t wave_const_bits(uint32_t code, unsigned bits)
{
    static const uint16_t f16[9] = { 0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000,
                                     0xc000, 0x4400, 0xc400, 0x3118 };
    static const uint32_t f32[9] = { 0x3f000000, 0xbf000000, 0x3f800000, 0xbf800000, 0x40000000,
                                     0xc0000000, 0x40800000, 0xc0800000, 0x3e22f983 };
    static const uint64_t f64[9] = { 0x3fe0000000000000, 0xbfe0000000000000, 0x3ff0000000000000,
                                     0xbff0000000000000, 0x4000000000000000, 0xc000000000000000,
                                     0x4010000000000000, 0xc010000000000000, 0x3fc45f306dc9c882 };
    uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    if (code >= 128 && code <= 192)
        return (uint64_t)(code - 128) & mask;
    if (code >= 193 && code <= 208)
        return (uint64_t)(-(int64_t)(code - 192)) & mask;
    if (code >= 240 && code <= 248) {
        if (bits == 16)
            return f16[code - 240];
        if (bits == 64)
            return f64[code - 240];
        return f32[code - 240];
    }
    return 0;
}

/* ---- op properties the encodings' modifier fields depend on ---- */

/* The type tokens of an op's name, in order ("v_cvt_f32_i32" -> f32 i32). */
unsigned dec_name_types(const char *name, const char *types[4])
{
    static const char *const known[] = { "f16", "f32", "f64", "i16", "i32", "i64", "u16",
                                         "u32", "u64", "b16", "b32", "b64", "i24", "u24",
                                         "u8",  "i8",  "i4" };
    unsigned n = 0;
    for (const char *p = strchr(name, '_'); p && n < 4; p = strchr(p + 1, '_')) {
        const char *tok = p + 1;
        size_t len = strcspn(tok, "_");
        for (size_t k = 0; k < KILN_ARRAY_LEN(known); k++)
            if (strlen(known[k]) == len && memcmp(known[k], tok, len) == 0)
                types[n++] = known[k];
    }
    return n;
}


static bool name_is(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}


/* gfx9's VOP3 ops with op_sel: the 16-bit ones new in gfx9. */
static const char *const opsel_ops[] = {
    "v_mad_f16",     "v_mad_u16",     "v_mad_i16",       "v_fma_f16",     "v_div_fixup_f16",
    "v_min3_f16",    "v_min3_i16",    "v_min3_u16",      "v_max3_f16",    "v_max3_i16",
    "v_max3_u16",    "v_med3_f16",    "v_med3_i16",      "v_med3_u16",    "v_mad_u32_u16",
    "v_mad_i32_i16", "v_add_i16",     "v_sub_i16",       "v_pack_b32_f16", "v_cvt_pknorm_i16_f16",
    "v_cvt_pknorm_u16_f16",
};

struct vop3_mods dec_vop3_mods_of(const struct wave_op_info *info)
{
    static const char *const int_clamp[] = {
        "v_add_u32",      "v_sub_u32",      "v_subrev_u32",    "v_add_u16",      "v_sub_u16",
        "v_subrev_u16",   "v_add_i32",      "v_sub_i32",       "v_add_i16",      "v_sub_i16",
        "v_mul_u32_u24",  "v_mul_i32_i24",  "v_mad_u32_u24",   "v_mad_i32_i24",  "v_mad_u16",
        "v_mad_i16",      "v_mad_u32_u16",  "v_mad_i32_i16",   "v_mad_legacy_u16", "v_mad_legacy_i16",
        "v_max3_i16",     "v_max3_u16",     "v_min3_i16",      "v_min3_u16",     "v_med3_i16",
        "v_med3_u16",     "v_sad_u8",       "v_sad_hi_u8",     "v_sad_u16",      "v_sad_u32",
        "v_msad_u8",      "v_qsad_pk_u16_u8", "v_mqsad_pk_u16_u8", "v_mqsad_u32_u8",
        "v_add_co_u32",   "v_sub_co_u32",   "v_subrev_co_u32", "v_addc_co_u32",  "v_subb_co_u32",
        "v_subbrev_co_u32", "v_mad_u64_u32", "v_mad_i64_i32",
    };
    static const char *const f16_opsel[] = { "v_mad_f16",   "v_fma_f16",  "v_div_fixup_f16",
                                             "v_min3_f16",  "v_max3_f16", "v_med3_f16" };
    struct vop3_mods m = { 0, 0, false, false, 0 };
    const char *types[4] = { 0 };
    unsigned nt = dec_name_types(info->name, types);
    unsigned nsrc = 0;
    for (unsigned i = 0; i < 3; i++)
        if (info->src[i])
            nsrc = i + 1;
    uint8_t present = (uint8_t)((1u << nsrc) - 1);
    const char *src_t = nt ? types[nt - 1] : NULL;
    const char *dst_t = nt ? types[0] : NULL;
    bool cvt = strncmp(info->name, "v_cvt_", 6) == 0;
    if (info->family == WAVE_FAM_VOPC) {
        if (dec_is_float(src_t)) {
            bool class_op = strstr(info->name, "class") != NULL;
            m.srcmods = class_op ? 1 : 3;
            m.clamp = !class_op;
        }
        return m;
    }
    if (strcmp(info->name, "v_cndmask_b32") == 0) {
        m.srcmods = 3;
        return m;
    }
    if (strcmp(info->name, "v_readlane_b32") == 0 || strcmp(info->name, "v_writelane_b32") == 0)
        return m;
    if (strncmp(info->name, "v_cvt_f32_ubyte", 15) == 0) {
        m.clamp = m.omod = true; /* a byte in, a float out */
        return m;
    }
    static const char *const no_omod[] = { "v_cvt_flr_i32_f32", "v_cvt_rpi_i32_f32",
                                            "v_frexp_exp_i32_f32", "v_cvt_pk_u8_f32",
                                            "v_pack_b32_f16", "v_cvt_pknorm_i16_f16",
                                            "v_cvt_pknorm_u16_f16", "v_cvt_pkaccum_u8_f32",
                                            "v_cvt_pknorm_i16_f32", "v_cvt_pknorm_u16_f32" };
    if (name_is(info->name, opsel_ops, KILN_ARRAY_LEN(opsel_ops)))
        m.opsel = (uint8_t)(present | 8);
    if (dec_is_float(src_t) || strcmp(info->name, "v_cvt_pk_u8_f32") == 0 ||
        strcmp(info->name, "v_cvt_pkaccum_u8_f32") == 0) {
        m.srcmods = present;
        m.clamp = true;
        m.omod = !name_is(info->name, no_omod, KILN_ARRAY_LEN(no_omod)) &&
                 !name_is(info->name, f16_opsel, KILN_ARRAY_LEN(f16_opsel));
        if (strncmp(info->name, "v_ldexp_", 8) == 0 || strcmp(info->name, "v_trig_preop_f64") == 0 ||
            strcmp(info->name, "v_cvt_pkaccum_u8_f32") == 0)
            m.intsrc = 2;
        if (strcmp(info->name, "v_cvt_pk_u8_f32") == 0)
            m.intsrc = 6;
    } else if (cvt && dec_is_float(dst_t)) {
        m.clamp = m.omod = true; /* integer to float: the result takes them */
    } else if (name_is(info->name, int_clamp, KILN_ARRAY_LEN(int_clamp))) {
        m.clamp = true;
    }
    return m;
}

/* ---- the decoding context ---- */


bool dec_fail(struct dec *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    return false;
}

bool dec_word(struct dec *d, unsigned k, uint32_t *w)
{
    *w = 0;
    if (d->i + k >= d->n)
        return dec_fail(d, "the instruction needs dword %u, past the end of the code (%zu dwords)",
                    k + 1, d->n - d->i);
    *w = d->code[d->i + k];
    if (k < 3)
        d->out->raw[k] = *w;
    return true;
}



static bool sgpr_range(struct dec *d, unsigned code, unsigned width, struct wave_operand *o,
                       const char *what)
{
    o->kind = WAVE_OPND_SGPR;
    o->count = (uint8_t)width;
    if (code <= 101) {
        unsigned align = width >= 4 ? 4 : width;
        code &= ~(align - 1);
        /* s[100:103] names s100, s101 and flat_scratch as one tuple */
        if (code + width > 104)
            return dec_fail(d, "%s: s[%u:%u] runs past s103", what, code, code + width - 1);
        o->reg = (uint16_t)code;
        return true;
    }
    if (code >= 108 && code <= 123) {
        unsigned t = code - 108, align = width >= 4 ? 4 : width;
        t &= ~(align - 1);
        if (t + width > 16)
            return dec_fail(d, "%s: ttmp[%u:%u] runs past ttmp15", what, t, t + width - 1);
        o->reg = (uint16_t)(108 + t);
        return true;
    }
    o->reg = (uint16_t)code;
    if (width == 1 && code >= 102 && code <= 127)
        return true;
    if (width >= 2 && width <= 4 &&
        (code == 102 || code == 104 || code == 106 || code == 126 || code == WAVE_SREG_NULL))
        return true;
    return dec_fail(d, "%s: scalar operand code %u is no %u-dword register", what, code, width);
}

/* A source field of 9 bits (VOP) or 8 bits (SOP, the 8-bit fields): code
 * in the 9-bit space. */
bool dec_src_code(struct dec *d, unsigned code, unsigned width, unsigned allow,
                     struct wave_operand *o, const char *what)
{
    memset(o, 0, sizeof *o);
    if (width == 0)
        width = 1;
    if (code >= 256) {
        if (!(allow & A_VGPR))
            return dec_fail(d, "%s: a vector register (v%u) where only scalars go", what, code - 256);
        if (code - 256 + width > 256)
            return dec_fail(d, "%s: v[%u:%u] runs past v255", what, code - 256, code - 256 + width - 1);
        o->kind = WAVE_OPND_VGPR;
        o->reg = (uint16_t)(code - 256);
        o->count = (uint8_t)width;
        return true;
    }
    if (code < 128)
        return sgpr_range(d, code, width, o, what);
    o->count = (uint8_t)width;
    if (width >= 3)
        allow &= (unsigned)~(A_CONST | A_LIT); /* no constant fills three dwords or more */
    if ((code <= 208 || (code >= 240 && code <= 248))) {
        if (!(allow & A_CONST))
            return dec_fail(d, "%s: an inline constant (code %u) where none goes", what, code);
        o->kind = WAVE_OPND_CONST;
        o->value = code;
        return true;
    }
    if (code == 255) {
        if (!(allow & A_LIT))
            return dec_fail(d, "%s: a literal where this encoding takes none", what);
        if (!d->literal) {
            uint32_t w;
            if (!dec_word(d, d->len, &w))
                return false;
            d->literal = true;
            d->lit = w;
        }
        o->kind = WAVE_OPND_LITERAL;
        o->value = d->lit;
        return true;
    }
    if ((code >= 235 && code <= 239) || (code >= 251 && code <= 253) || (code == 254 && width == 1)) {
        if (!(allow & A_SPECIAL))
            return dec_fail(d, "%s: special source %u where none goes", what, code);
        o->kind = WAVE_OPND_SGPR;
        o->reg = (uint16_t)code;
        return true;
    }
    return dec_fail(d, "%s: operand code %u means nothing on gfx9", what, code);
}

#define SSRC_ANY (A_CONST | A_LIT | A_SPECIAL)

bool dec_sdst(struct dec *d, unsigned code, unsigned width, struct wave_operand *o,
                 const char *what)
{
    memset(o, 0, sizeof *o);
    if (code == 124 && width == 1) {
        o->kind = WAVE_OPND_SGPR;
        o->reg = 124;
        o->count = 1;
        return true;
    }
    return sgpr_range(d, code, width, o, what);
}

static void vgpr(struct wave_operand *o, unsigned reg, unsigned width)
{
    o->kind = WAVE_OPND_VGPR;
    o->reg = (uint16_t)reg;
    o->count = (uint8_t)width;
}

bool dec_vreg(struct dec *d, unsigned reg, unsigned width, struct wave_operand *o,
                 const char *what)
{
    memset(o, 0, sizeof *o);
    if (reg + width > 256)
        return dec_fail(d, "%s: v[%u:%u] runs past v255", what, reg, reg + width - 1);
    vgpr(o, reg, width);
    return true;
}

bool dec_must_zero(struct dec *d, uint32_t value, const char *field)
{
    if (value)
        return dec_fail(d, "%s is 0x%x where the op has none", field, value);
    return true;
}

const struct wave_op_info *dec_lookup(struct dec *d, unsigned fam, unsigned opc)
{
    unsigned op = opc < 1024 ? wave_op_by_code[fam][opc] : 0;
    if (!op) {
        dec_fail(d, "%s opcode %u (0x%x) is no gfx900 instruction", family_names[fam], opc, opc);
        return NULL;
    }
    d->out->op = (uint16_t)op;
    return &wave_op_table[op];
}

/* ---- scalar ---- */

/* Scalar sources that must be registers: the ops that take an address or
 * a register index, not a value. */
static unsigned ssrc_allow(unsigned op)
{
    switch (op) {
    case WAVE_OP_S_SETPC_B64:
    case WAVE_OP_S_RFE_B64:
    case WAVE_OP_S_MOVRELS_B32:
    case WAVE_OP_S_MOVRELS_B64:
    case WAVE_OP_S_CBRANCH_JOIN: return A_SPECIAL;
    default: return SSRC_ANY;
    }
}

static bool dec_sop2(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SOP2, BITS(w, 29, 23));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    /* an op without a destination does not look at sdst */
    if (info->dst && !dec_sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    unsigned allow = ssrc_allow(in->op);
    return dec_src_code(d, BITS(w, 7, 0), info->src[0], allow, &in->src[0], "ssrc0") &&
           dec_src_code(d, BITS(w, 15, 8), info->src[1], SSRC_ANY, &in->src[1], "ssrc1");
}

static bool dec_sop1(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SOP1, BITS(w, 15, 8));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    /* fields the op does not use are not looked at */
    if (info->dst && !dec_sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    if (info->src[0])
        return dec_src_code(d, BITS(w, 7, 0), info->src[0], ssrc_allow(in->op), &in->src[0], "ssrc0");
    return true;
}

static bool dec_sopk(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SOPK, BITS(w, 27, 23));
    struct wave_instr *in = d->out;
    uint32_t imm = BITS(w, 15, 0);
    if (!info)
        return false;
    if (in->op == WAVE_OP_S_SETREG_IMM32_B32) {
        uint32_t lit;
        if (!dec_word(d, 1, &lit)) /* the sdst field is not looked at */
            return false;
        d->len = 2;
        in->src[0] = (struct wave_operand){ WAVE_OPND_LITERAL, 1, 0, lit };
        in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
        return true;
    }
    if (info->dst && !dec_sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    if (info->src[0] && !dec_sdst(d, BITS(w, 22, 16), info->src[0], &in->src[0], "sdst"))
        return false;
    if (info->flags & WAVE_F_SIGNED)
        imm = (uint32_t)(int32_t)(int16_t)imm;
    in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
    return true;
}

static bool dec_sopc(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SOPC, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    if (!dec_src_code(d, BITS(w, 7, 0), info->src[0], SSRC_ANY, &in->src[0], "ssrc0"))
        return false;
    if (in->op == WAVE_OP_S_SET_GPR_IDX_ON) {
        in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, BITS(w, 15, 8) };
        return true;
    }
    return dec_src_code(d, BITS(w, 15, 8), info->src[1], SSRC_ANY, &in->src[1], "ssrc1");
}

static bool dec_sopp(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SOPP, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    uint32_t imm = BITS(w, 15, 0);
    if (!info)
        return false;
    if ((info->flags & WAVE_F_NOSRC) && in->op != WAVE_OP_S_ENDPGM && imm)
        return dec_fail(d, "%s: simm16 is 0x%x where the op takes none", info->name, imm);
    if (info->flags & WAVE_F_BRANCH)
        imm = (uint32_t)(int32_t)(int16_t)imm;
    in->src[0] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
    return true;
}

static bool dec_smem(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = dec_lookup(d, WAVE_FAM_SMEM, BITS(w, 25, 18));
    struct wave_instr *in = d->out;
    uint32_t w1;
    if (!info || !dec_word(d, 1, &w1))
        return false;
    d->len = 2;
    in->mods.glc = (uint8_t)BITS(w, 16, 16);
    in->mods.nv = (uint8_t)BITS(w, 15, 15);
    unsigned sdata = BITS(w, 12, 6), sbase = BITS(w, 5, 0) << 1;
    bool imm = BITS(w, 17, 17);
    if (!info->src[0] && imm)
        return dec_fail(d, "%s: the imm bit is set where the op has no offset", info->name);
    if (info->dst && !dec_sdst(d, sdata, info->dst, &in->dst[0], "sdata"))
        return false;
    if (info->src[2] && !dec_sdst(d, sdata, info->src[2], &in->src[2], "sdata"))
        return false;
    if (info->src[0] && !dec_sdst(d, sbase, info->src[0], &in->src[0], "sbase"))
        return false;
    if (info->src[1]) {
        if (imm) {
            /* 21 bits, signed */
            in->mods.offset = (int32_t)(BITS(w1, 20, 0) ^ 0x100000u) - 0x100000;
            in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, (uint32_t)in->mods.offset };
        } else if (!dec_sdst(d, BITS(w1, 6, 0), 1, &in->src[1], "soffset")) {
            return false;
        }
    }
    if (in->op == WAVE_OP_S_ATC_PROBE || in->op == WAVE_OP_S_ATC_PROBE_BUFFER) {
        memset(&in->dst[0], 0, sizeof in->dst[0]);
        in->src[2] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, sdata };
    }
    return true;
}

/* ---- dispatch ---- */

enum encoding {
    E_SOP1, E_SOP2, E_SOPK, E_SOPC, E_SOPP, E_SMEM, E_VOP1, E_VOP2, E_VOPC, E_VOP3, E_VOP3P,
    E_DS, E_FLAT, E_MUBUF, E_MIMG, E_MTBUF, E_EXP, E_VINTRP, E_UNKNOWN,
};

static enum encoding encoding_of(uint32_t w)
{
    if (!(w >> 31)) {
        unsigned top7 = w >> 25;
        if (top7 == 0x3e)
            return E_VOPC;
        if (top7 == 0x3f)
            return E_VOP1;
        return E_VOP2;
    }
    if ((w >> 30) == 2) {
        if ((w >> 28) != 0xb)
            return E_SOP2;
        switch ((w >> 23) & 0x1f) {
        case 0x1d: return E_SOP1;
        case 0x1e: return E_SOPC;
        case 0x1f: return E_SOPP;
        default: return E_SOPK;
        }
    }
    switch (w >> 26) {
    case 0x30: return E_SMEM;
    case 0x31: return E_EXP;
    case 0x34: return ((w >> 23) & 7) == 7 ? E_VOP3P : E_VOP3;
    case 0x35: return E_VINTRP;
    case 0x36: return E_DS;
    case 0x37: return E_FLAT;
    case 0x38: return E_MUBUF;
    case 0x3a: return E_MTBUF;
    case 0x3c: return E_MIMG;
    default: return E_UNKNOWN;
    }
}

const char *wave_encoding_name(uint32_t w)
{
    static const char *const names[] = {
        "SOP1", "SOP2", "SOPK", "SOPC", "SOPP", "SMEM", "VOP1", "VOP2", "VOPC", "VOP3", "VOP3P",
        "DS", "FLAT", "MUBUF", "MIMG", "MTBUF", "EXP", "VINTRP", "unknown",
    };
    enum encoding e = encoding_of(w);
    if (e == E_VOP1 || e == E_VOP2 || e == E_VOPC) {
        if ((w & 0x1ff) == 0xf9)
            return "SDWA";
        if ((w & 0x1ff) == 0xfa)
            return "DPP";
    }
    if (e == E_VOP3) {
        unsigned opc = BITS(w, 25, 16);
        if (opc >= 448 && wave_op_by_code[WAVE_FAM_VOP3B][opc])
            return "VOP3B";
        return "VOP3A";
    }
    if (e == E_FLAT) {
        static const char *const segs[4] = { "FLAT", "SCRATCH", "GLOBAL", "FLAT" };
        return segs[BITS(w, 15, 14)];
    }
    return names[e];
}

static bool dispatch(struct dec *d, uint32_t w)
{
    switch (encoding_of(w)) {
    case E_SOP1: return dec_sop1(d, w);
    case E_SOP2: return dec_sop2(d, w);
    case E_SOPK: return dec_sopk(d, w);
    case E_SOPC: return dec_sopc(d, w);
    case E_SOPP: return dec_sopp(d, w);
    case E_SMEM: return dec_smem(d, w);
    case E_VOP1: return dec_vop1(d, w);
    case E_VOP2: return dec_vop2(d, w);
    case E_VOPC: return dec_vopc(d, w);
    case E_VOP3: return dec_vop3(d, w);
    case E_VOP3P: return dec_vop3p(d, w);
    case E_DS: return dec_ds(d, w);
    case E_FLAT: return dec_flat(d, w);
    case E_MUBUF: return dec_mubuf(d, w);
    case E_MIMG: return dec_fail(d, "MIMG (image) instructions are not decoded");
    case E_MTBUF: return dec_fail(d, "MTBUF (typed buffer) instructions are not decoded");
    case E_EXP: return dec_fail(d, "EXP (export) instructions are not decoded");
    case E_VINTRP: return dec_fail(d, "VINTRP (interpolation) instructions are not decoded");
    case E_UNKNOWN: break;
    }
    return dec_fail(d, "the leading bits 0x%02x name no gfx9 encoding", w >> 26);
}

int wave_decode(const uint32_t *code, size_t nwords, size_t at, struct wave_instr *out)
{
    struct dec d = { .code = code, .n = nwords, .i = at / 4, .out = out, .len = 1 };
    memset(out, 0, sizeof *out);
    if (at % 4)
        return KILN_RAISE(KILN_ERR_INVALID, "byte offset 0x%zx is not a multiple of 4", at);
    if (!code || d.i >= nwords)
        return KILN_RAISE(KILN_ERR_INVALID, "byte offset 0x%zx is past the code's %zu bytes", at,
                          nwords * 4);
    uint32_t w = code[d.i];
    out->raw[0] = w;
    if (dispatch(&d, w)) {
        out->words = (uint8_t)(d.len + (d.literal ? 1 : 0));
        if (d.literal && d.len < 3)
            out->raw[d.len] = d.lit;
        return out->words;
    }
    char dwords[40];
    size_t have = KILN_MIN((size_t)3, nwords - d.i);
    enum encoding e = encoding_of(w);
    unsigned natural = (e >= E_SOP1 && e <= E_SOPP) || ((e == E_VOP1 || e == E_VOP2 || e == E_VOPC) &&
                                                        (w & 0x1ff) != 0xf9 && (w & 0x1ff) != 0xfa)
                           ? 1u
                           : 2u;
    unsigned show = KILN_MIN((unsigned)have, KILN_MAX(natural, d.len + (d.literal ? 1u : 0u)));
    if (show < 1)
        show = 1;
    int k = 0;
    for (unsigned j = 0; j < show; j++)
        k += snprintf(dwords + k, sizeof dwords - (size_t)k, "%s0x%08x", j ? " " : "",
                      code[d.i + j]);
    memset(out, 0, sizeof *out);
    return KILN_RAISE(KILN_ERR_INVALID, "byte offset 0x%zx: dwords %s: %s", at, dwords, d.why);
}
