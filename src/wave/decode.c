/* SPDX-License-Identifier: MIT */
/*
 * decode: gfx9 machine code to the IR, by hand from the Vega ISA's encoding
 * tables. The first dword's leading bits pick the encoding; the family's
 * opcode field picks the op through one table built from ops.def at compile
 * time (op_by_code); each operand field is then read by the one function
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
 * Bounds. Every dword is read through word(), which refuses an index past
 * the buffer; nothing is read ahead of need.
 */
#include "wave/decode.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"

static const struct wave_op_info op_table[WAVE_OP_COUNT] = {
    [WAVE_OP_INVALID] = { "invalid", 0, 0, 0, { 0, 0, 0 }, 0 },
#define X(id, nm, fam, opc, d, s0, s1, s2, fl)                                                     \
    [WAVE_OP_##id] = { nm, WAVE_FAM_##fam, opc, d, { s0, s1, s2 }, fl },
#include "wave/ops.def"
#undef X
};

/* Op by family and opcode field; 0 (WAVE_OP_INVALID) where none. */
static const uint16_t op_by_code[WAVE_FAM_COUNT][1024] = {
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
    return &op_table[op];
}

const char *wave_op_name(unsigned op)
{
    return op < WAVE_OP_COUNT ? op_table[op].name : "invalid";
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
static unsigned name_types(const char *name, const char *types[4])
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

static bool is_float(const char *t) { return t && t[0] == 'f'; }

static bool name_is(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, list[i]) == 0)
            return true;
    return false;
}

/* What the VOP3 encoding's modifier fields may hold for an op. */
struct vop3_mods {
    uint8_t srcmods; /* mask of sources taking abs/neg */
    uint8_t intsrc;  /* of those, integer sources: neg is sext, abs is ignored */
    bool clamp, omod;
    uint8_t opsel;   /* op_sel bits the op takes (bit 3: dst) */
};

/* gfx9's VOP3 ops with op_sel: the 16-bit ones new in gfx9. */
static const char *const opsel_ops[] = {
    "v_mad_f16",     "v_mad_u16",     "v_mad_i16",       "v_fma_f16",     "v_div_fixup_f16",
    "v_min3_f16",    "v_min3_i16",    "v_min3_u16",      "v_max3_f16",    "v_max3_i16",
    "v_max3_u16",    "v_med3_f16",    "v_med3_i16",      "v_med3_u16",    "v_mad_u32_u16",
    "v_mad_i32_i16", "v_add_i16",     "v_sub_i16",       "v_pack_b32_f16", "v_cvt_pknorm_i16_f16",
    "v_cvt_pknorm_u16_f16",
};

static struct vop3_mods vop3_mods_of(const struct wave_op_info *info)
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
    unsigned nt = name_types(info->name, types);
    unsigned nsrc = 0;
    for (unsigned i = 0; i < 3; i++)
        if (info->src[i])
            nsrc = i + 1;
    uint8_t present = (uint8_t)((1u << nsrc) - 1);
    const char *src_t = nt ? types[nt - 1] : NULL;
    const char *dst_t = nt ? types[0] : NULL;
    bool cvt = strncmp(info->name, "v_cvt_", 6) == 0;
    if (info->family == WAVE_FAM_VOPC) {
        if (is_float(src_t)) {
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
    if (is_float(src_t) || strcmp(info->name, "v_cvt_pk_u8_f32") == 0 ||
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
    } else if (cvt && is_float(dst_t)) {
        m.clamp = m.omod = true; /* integer to float: the result takes them */
    } else if (name_is(info->name, int_clamp, KILN_ARRAY_LEN(int_clamp))) {
        m.clamp = true;
    }
    return m;
}

/* ---- the decoding context ---- */

struct dec {
    const uint32_t *code;
    size_t n, i; /* dwords in code; the instruction's first dword */
    struct wave_instr *out;
    unsigned len;  /* dwords of the encoding read so far */
    bool literal;  /* a literal dword follows the encoding */
    uint32_t lit;
    char why[160];
};

KILN_PRINTF(2, 3) static bool fail(struct dec *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    return false;
}

static bool word(struct dec *d, unsigned k, uint32_t *w)
{
    *w = 0;
    if (d->i + k >= d->n)
        return fail(d, "the instruction needs dword %u, past the end of the code (%zu dwords)",
                    k + 1, d->n - d->i);
    *w = d->code[d->i + k];
    if (k < 3)
        d->out->raw[k] = *w;
    return true;
}

#define BITS(w, hi, lo) ((uint32_t)(((uint64_t)(w) >> (lo)) & ((1ull << ((hi) - (lo) + 1)) - 1)))

/* What a source field may hold. */
enum { A_VGPR = 1, A_CONST = 2, A_LIT = 4, A_SPECIAL = 8 };

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
            return fail(d, "%s: s[%u:%u] runs past s103", what, code, code + width - 1);
        o->reg = (uint16_t)code;
        return true;
    }
    if (code >= 108 && code <= 123) {
        unsigned t = code - 108, align = width >= 4 ? 4 : width;
        t &= ~(align - 1);
        if (t + width > 16)
            return fail(d, "%s: ttmp[%u:%u] runs past ttmp15", what, t, t + width - 1);
        o->reg = (uint16_t)(108 + t);
        return true;
    }
    o->reg = (uint16_t)code;
    if (width == 1 && code >= 102 && code <= 127)
        return true;
    if (width >= 2 && width <= 4 &&
        (code == 102 || code == 104 || code == 106 || code == 126 || code == WAVE_SREG_NULL))
        return true;
    return fail(d, "%s: scalar operand code %u is no %u-dword register", what, code, width);
}

/* A source field of 9 bits (VOP) or 8 bits (SOP, the 8-bit fields): code
 * in the 9-bit space. */
static bool src_code(struct dec *d, unsigned code, unsigned width, unsigned allow,
                     struct wave_operand *o, const char *what)
{
    memset(o, 0, sizeof *o);
    if (width == 0)
        width = 1;
    if (code >= 256) {
        if (!(allow & A_VGPR))
            return fail(d, "%s: a vector register (v%u) where only scalars go", what, code - 256);
        if (code - 256 + width > 256)
            return fail(d, "%s: v[%u:%u] runs past v255", what, code - 256, code - 256 + width - 1);
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
            return fail(d, "%s: an inline constant (code %u) where none goes", what, code);
        o->kind = WAVE_OPND_CONST;
        o->value = code;
        return true;
    }
    if (code == 255) {
        if (!(allow & A_LIT))
            return fail(d, "%s: a literal where this encoding takes none", what);
        if (!d->literal) {
            uint32_t w;
            if (!word(d, d->len, &w))
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
            return fail(d, "%s: special source %u where none goes", what, code);
        o->kind = WAVE_OPND_SGPR;
        o->reg = (uint16_t)code;
        return true;
    }
    return fail(d, "%s: operand code %u means nothing on gfx9", what, code);
}

#define SRC_ANY (A_VGPR | A_CONST | A_LIT | A_SPECIAL)
#define SSRC_ANY (A_CONST | A_LIT | A_SPECIAL)

static bool sdst(struct dec *d, unsigned code, unsigned width, struct wave_operand *o,
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

static bool vreg(struct dec *d, unsigned reg, unsigned width, struct wave_operand *o,
                 const char *what)
{
    memset(o, 0, sizeof *o);
    if (reg + width > 256)
        return fail(d, "%s: v[%u:%u] runs past v255", what, reg, reg + width - 1);
    vgpr(o, reg, width);
    return true;
}

static bool must_zero(struct dec *d, uint32_t value, const char *field)
{
    if (value)
        return fail(d, "%s is 0x%x where the op has none", field, value);
    return true;
}

static const struct wave_op_info *lookup(struct dec *d, unsigned fam, unsigned opc)
{
    unsigned op = opc < 1024 ? op_by_code[fam][opc] : 0;
    if (!op) {
        fail(d, "%s opcode %u (0x%x) is no gfx900 instruction", family_names[fam], opc, opc);
        return NULL;
    }
    d->out->op = (uint16_t)op;
    return &op_table[op];
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
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SOP2, BITS(w, 29, 23));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    /* an op without a destination does not look at sdst */
    if (info->dst && !sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    unsigned allow = ssrc_allow(in->op);
    return src_code(d, BITS(w, 7, 0), info->src[0], allow, &in->src[0], "ssrc0") &&
           src_code(d, BITS(w, 15, 8), info->src[1], SSRC_ANY, &in->src[1], "ssrc1");
}

static bool dec_sop1(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SOP1, BITS(w, 15, 8));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    /* fields the op does not use are not looked at */
    if (info->dst && !sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    if (info->src[0])
        return src_code(d, BITS(w, 7, 0), info->src[0], ssrc_allow(in->op), &in->src[0], "ssrc0");
    return true;
}

static bool dec_sopk(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SOPK, BITS(w, 27, 23));
    struct wave_instr *in = d->out;
    uint32_t imm = BITS(w, 15, 0);
    if (!info)
        return false;
    if (in->op == WAVE_OP_S_SETREG_IMM32_B32) {
        uint32_t lit;
        if (!word(d, 1, &lit)) /* the sdst field is not looked at */
            return false;
        d->len = 2;
        in->src[0] = (struct wave_operand){ WAVE_OPND_LITERAL, 1, 0, lit };
        in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
        return true;
    }
    if (info->dst && !sdst(d, BITS(w, 22, 16), info->dst, &in->dst[0], "sdst"))
        return false;
    if (info->src[0] && !sdst(d, BITS(w, 22, 16), info->src[0], &in->src[0], "sdst"))
        return false;
    if (info->flags & WAVE_F_SIGNED)
        imm = (uint32_t)(int32_t)(int16_t)imm;
    in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
    return true;
}

static bool dec_sopc(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SOPC, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    if (!info)
        return false;
    if (!src_code(d, BITS(w, 7, 0), info->src[0], SSRC_ANY, &in->src[0], "ssrc0"))
        return false;
    if (in->op == WAVE_OP_S_SET_GPR_IDX_ON) {
        in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, BITS(w, 15, 8) };
        return true;
    }
    return src_code(d, BITS(w, 15, 8), info->src[1], SSRC_ANY, &in->src[1], "ssrc1");
}

static bool dec_sopp(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SOPP, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    uint32_t imm = BITS(w, 15, 0);
    if (!info)
        return false;
    if ((info->flags & WAVE_F_NOSRC) && in->op != WAVE_OP_S_ENDPGM && imm)
        return fail(d, "%s: simm16 is 0x%x where the op takes none", info->name, imm);
    if (info->flags & WAVE_F_BRANCH)
        imm = (uint32_t)(int32_t)(int16_t)imm;
    in->src[0] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, imm };
    return true;
}

static bool dec_smem(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_SMEM, BITS(w, 25, 18));
    struct wave_instr *in = d->out;
    uint32_t w1;
    if (!info || !word(d, 1, &w1))
        return false;
    d->len = 2;
    in->mods.glc = (uint8_t)BITS(w, 16, 16);
    in->mods.nv = (uint8_t)BITS(w, 15, 15);
    unsigned sdata = BITS(w, 12, 6), sbase = BITS(w, 5, 0) << 1;
    bool imm = BITS(w, 17, 17);
    if (!info->src[0] && imm)
        return fail(d, "%s: the imm bit is set where the op has no offset", info->name);
    if (info->dst && !sdst(d, sdata, info->dst, &in->dst[0], "sdata"))
        return false;
    if (info->src[2] && !sdst(d, sdata, info->src[2], &in->src[2], "sdata"))
        return false;
    if (info->src[0] && !sdst(d, sbase, info->src[0], &in->src[0], "sbase"))
        return false;
    if (info->src[1]) {
        if (imm) {
            /* 21 bits, signed */
            in->mods.offset = (int32_t)(BITS(w1, 20, 0) ^ 0x100000u) - 0x100000;
            in->src[1] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, (uint32_t)in->mods.offset };
        } else if (!sdst(d, BITS(w1, 6, 0), 1, &in->src[1], "soffset")) {
            return false;
        }
    }
    if (in->op == WAVE_OP_S_ATC_PROBE || in->op == WAVE_OP_S_ATC_PROBE_BUFFER) {
        memset(&in->dst[0], 0, sizeof in->dst[0]);
        in->src[2] = (struct wave_operand){ WAVE_OPND_IMM, 1, 0, sdata };
    }
    return true;
}

/* ---- vector ALU ---- */

static bool vop_sdwa(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst);

/* Sources taking neg/abs in SDWA and DPP: the float ones (v_cndmask_b32
 * takes them in DPP only). */
static uint8_t float_srcs(const struct wave_op_info *info, bool sdwa)
{
    struct vop3_mods m = vop3_mods_of(info);
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

static bool dec_vop2(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_VOP2, BITS(w, 30, 25));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vsrc1 = BITS(w, 16, 9), vdst = BITS(w, 24, 17);
    if (!info)
        return false;
    if (src0 == 0xf9)
        return vop_sdwa(d, info, vsrc1, vdst);
    if (src0 == 0xfa)
        return vop_dpp(d, info, vsrc1, vdst);
    if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst") ||
        !src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0") ||
        !vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1"))
        return false;
    if (in->op == WAVE_OP_V_MADMK_F32 || in->op == WAVE_OP_V_MADMK_F16 ||
        in->op == WAVE_OP_V_MADAK_F32 || in->op == WAVE_OP_V_MADAK_F16) {
        uint32_t k;
        if (!word(d, 1, &k))
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

static bool dec_vop1(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_VOP1, BITS(w, 16, 9));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vdst = BITS(w, 24, 17);
    if (!info)
        return false;
    if (src0 == 0xf9 || src0 == 0xfa) {
        bool ok = src0 == 0xf9 ? vop_sdwa(d, info, 0, vdst) : vop_dpp(d, info, 0, vdst);
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
        return must_zero(d, vdst, "vdst");
    if (in->op == WAVE_OP_V_READFIRSTLANE_B32) {
        /* the 8-bit field holds a scalar operand code: a register, or (as
         * LLVM reads it) one of the read-only specials, which a reader refuses
         * to write */
        bool ok = vdst < 128 ? sdst(d, vdst, 1, &in->dst[0], "sdst")
                             : src_code(d, vdst, 1, A_SPECIAL, &in->dst[0], "sdst");
        /* its source is a register: a VGPR, or as LLVM reads it an SGPR */
        return ok && src_code(d, src0, 1, A_VGPR | A_SPECIAL, &in->src[0], "src0");
    }
    if (in->op == WAVE_OP_V_SWAP_B32) /* both are vector registers: bit 8 is not looked at */
        return vreg(d, vdst, 1, &in->dst[0], "vdst") && vreg(d, src0 & 0xff, 1, &in->src[0], "src0");
    return vreg(d, vdst, info->dst, &in->dst[0], "vdst") &&
           src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0");
}

static bool dec_vopc(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_VOPC, BITS(w, 24, 17));
    struct wave_instr *in = d->out;
    unsigned src0 = BITS(w, 8, 0), vsrc1 = BITS(w, 16, 9);
    if (!info)
        return false;
    if (src0 == 0xf9)
        return vop_sdwa(d, info, vsrc1, 0);
    if (src0 == 0xfa)
        return fail(d, "%s: DPP is not decoded for VOPC", info->name);
    in->dst[1] = (struct wave_operand){ WAVE_OPND_SGPR, 2, WAVE_SREG_VCC_LO, 0 };
    return src_code(d, src0, info->src[0], SRC_ANY, &in->src[0], "src0") &&
           vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1");
}

/* SDWA (gfx9): the second dword carries src0 (a VGPR, or with s0 a
 * scalar), the selects and the modifiers. */
static bool vop_sdwa(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst)
{
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t s;
    if (!(info->flags & WAVE_F_SDWA))
        return fail(d, "%s has no SDWA form", info->name);
    if (!word(d, 1, &s))
        return false;
    d->len = 2;
    in->enc = WAVE_ENC_SDWA;
    bool vopc = info->family == WAVE_FAM_VOPC;
    bool vop1 = info->family == WAVE_FAM_VOP1;
    unsigned code0 = BITS(s, 7, 0) + (BITS(s, 23, 23) ? 0 : 256);
    if (!src_code(d, code0, 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[0], "src0"))
        return false;
    m->src_sel[0] = (uint8_t)BITS(s, 18, 16);
    m->sext = (uint8_t)BITS(s, 19, 19);
    m->neg = (uint8_t)BITS(s, 20, 20);
    m->abs = (uint8_t)BITS(s, 21, 21);
    if (!vop1) {
        unsigned code1 = vsrc1 + (BITS(s, 31, 31) ? 0 : 256);
        if (!src_code(d, code1, 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[1], "src1"))
            return false;
        m->src_sel[1] = (uint8_t)BITS(s, 26, 24);
        m->sext |= (uint8_t)(BITS(s, 27, 27) << 1);
        m->neg |= (uint8_t)(BITS(s, 28, 28) << 1);
        m->abs |= (uint8_t)(BITS(s, 29, 29) << 1);
    } else if (BITS(s, 31, 24) & 0xbf) { /* bit 30 is not looked at */
        return fail(d, "%s (SDWA): src1 fields 0x%x where VOP1 has no src1", info->name,
                    BITS(s, 31, 24));
    }
    uint8_t fsrc = float_srcs(info, true);
    if ((m->neg | m->abs) & ~fsrc)
        return fail(d, "%s (SDWA): neg/abs on an integer source", info->name);
    if (m->sext & fsrc)
        return fail(d, "%s (SDWA): sext on a float source", info->name);
    if (m->src_sel[0] > 6 || m->src_sel[1] > 6)
        return fail(d, "%s (SDWA): a source select past DWORD (6)", info->name);
    if (vopc) {
        if (BITS(s, 15, 15)) {
            if (!sdst(d, BITS(s, 14, 8), 2, &in->dst[1], "sdst"))
                return false;
        } else { /* vcc; the sdst field is not looked at */
            in->dst[1] = (struct wave_operand){ WAVE_OPND_SGPR, 2, WAVE_SREG_VCC_LO, 0 };
        }
    } else {
        m->dst_sel = (uint8_t)BITS(s, 10, 8);
        m->dst_unused = (uint8_t)BITS(s, 12, 11);
        m->clamp = (uint8_t)BITS(s, 13, 13);
        m->omod = (uint8_t)BITS(s, 15, 14);
        struct vop3_mods am = vop3_mods_of(info);
        const char *types[4] = { 0 };
        bool fdst = name_types(info->name, types) > 0 && is_float(types[0]) &&
                    strcmp(info->name, "v_cvt_pkrtz_f16_f32") != 0;
        if (m->omod && !(am.omod && fdst))
            return fail(d, "%s (SDWA): omod where the result is no float", info->name);
        if (m->dst_sel > 6)
            return fail(d, "%s (SDWA): dst_sel %u is past DWORD (6)", info->name, m->dst_sel);
        if (info->dst) {
            if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
                return false;
        } else if (!must_zero(d, vdst, "vdst")) {
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
        return fail(d, "%s has no DPP form", info->name);
    if (!word(d, 1, &s))
        return false;
    d->len = 2;
    in->enc = WAVE_ENC_DPP;
    /* a reserved dpp_ctrl is kept as it is, for the reader to refuse */
    m->dpp_ctrl = (uint16_t)BITS(s, 16, 8);
    m->bound_ctrl = (uint8_t)BITS(s, 19, 19);
    m->neg = (uint8_t)(BITS(s, 20, 20) | BITS(s, 22, 22) << 1);
    m->abs = (uint8_t)(BITS(s, 21, 21) | BITS(s, 23, 23) << 1);
    {
        struct vop3_mods am = vop3_mods_of(info);
        if ((m->neg | m->abs) & ~am.srcmods)
            return fail(d, "%s (DPP): neg/abs on an integer or absent source", info->name);
        m->sext = m->neg & am.intsrc;
        m->neg &= (uint8_t)~am.intsrc;
        m->abs &= (uint8_t)~am.intsrc;
        if (strcmp(info->name, "v_cndmask_b32") == 0)
            m->neg = m->abs = 0; /* not looked at */
    }
    m->bank_mask = (uint8_t)BITS(s, 27, 24);
    m->row_mask = (uint8_t)BITS(s, 31, 28);
    if (info->dst) {
        if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (info->src[0] && !vreg(d, BITS(s, 7, 0), info->src[0], &in->src[0], "src0"))
        return false;
    if (!info->src[0] && !must_zero(d, BITS(s, 7, 0), "DPP src0"))
        return false;
    if (info->family == WAVE_FAM_VOP2 && !vreg(d, vsrc1, info->src[1], &in->src[1], "vsrc1"))
        return false;
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    vcc_operands(in, info);
    return true;
}

/* VOP3: the VOP3-only ops and the VOP1/VOP2/VOPC ops promoted to it. */
static bool dec_vop3(struct dec *d, uint32_t w)
{
    struct wave_instr *in = d->out;
    unsigned opc = BITS(w, 25, 16);
    const struct wave_op_info *info;
    uint32_t w1;
    if (opc < 256)
        info = lookup(d, WAVE_FAM_VOPC, opc);
    else if (opc < 320)
        info = lookup(d, WAVE_FAM_VOP2, opc - 256);
    else if (opc < 448)
        info = lookup(d, WAVE_FAM_VOP1, opc - 320);
    else {
        unsigned op = op_by_code[WAVE_FAM_VOP3A][opc] ? op_by_code[WAVE_FAM_VOP3A][opc]
                                                     : op_by_code[WAVE_FAM_VOP3B][opc];
        if (!op) {
            if (opc >= 0x270 && opc <= 0x277)
                return fail(d, "VOP3 opcode %u (0x%x): interpolation (VINTRP) is not decoded", opc, opc);
            return fail(d, "VOP3 opcode %u (0x%x) is no gfx900 instruction", opc, opc);
        }
        in->op = (uint16_t)op;
        info = &op_table[op];
    }
    if (!info) {
        fail(d, "VOP3 opcode %u (0x%x) is no gfx900 instruction", opc, opc);
        return false;
    }
    if (info->flags & WAVE_F_NOE64)
        return fail(d, "%s has no VOP3 form", info->name);
    if (!word(d, 1, &w1))
        return false;
    d->len = 2;
    if (info->family != WAVE_FAM_VOP3A && info->family != WAVE_FAM_VOP3B)
        in->enc = WAVE_ENC_VOP3;
    bool vop3b = info->family == WAVE_FAM_VOP3B || (info->flags & WAVE_F_VCC_OUT);
    struct vop3_mods allowed = vop3_mods_of(info);
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
        return fail(d, "%s: neg 0x%x on a source that takes none", info->name, m->neg);
    if (m->abs & ~allowed.srcmods)
        return fail(d, "%s: abs 0x%x on a source that takes none", info->name, m->abs);
    /* an integer source of a float op: neg is sign extension, abs nothing */
    m->sext = m->neg & allowed.intsrc;
    m->neg &= (uint8_t)~allowed.intsrc;
    m->abs &= (uint8_t)~allowed.intsrc;
    if (allowed.opsel && (m->op_sel & 7 & ~allowed.opsel))
        return fail(d, "%s: op_sel 0x%x on an absent source", info->name, m->op_sel);
    if (m->omod && !allowed.omod)
        return fail(d, "%s: omod %u where the op takes none", info->name, m->omod);
    if (m->clamp && !allowed.clamp)
        return fail(d, "%s: clamp where the op takes none", info->name);
    m->op_sel &= allowed.opsel;

    /* destinations */
    unsigned vdst = BITS(w, 7, 0);
    if (info->family == WAVE_FAM_VOPC) {
        /* an 8-bit field: a register pair, or (as LLVM reads it) a
         * read-only special, which a reader refuses to write */
        bool ok = vdst < 128 ? sdst(d, vdst, 2, &in->dst[1], "sdst")
                             : src_code(d, vdst, 2, A_SPECIAL, &in->dst[1], "sdst");
        if (!ok)
            return false;
    } else if (in->op == WAVE_OP_V_READLANE_B32 || in->op == WAVE_OP_V_READFIRSTLANE_B32) {
        if (!sdst(d, vdst, 1, &in->dst[0], "sdst"))
            return false;
    } else if (info->dst) {
        if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (vop3b && !sdst(d, BITS(w, 14, 8), 2, &in->dst[1], "sdst"))
        return false;

    /* sources: no literal in gfx9's VOP3 */
    static const char *const names[3] = { "src0", "src1", "src2" };
    unsigned codes[3] = { BITS(w1, 8, 0), BITS(w1, 17, 9), BITS(w1, 26, 18) };
    for (unsigned i = 0; i < 3; i++) {
        if (!widths[i]) {
            /* v_readlane_b32 does not look at src2 */
            if (in->op != WAVE_OP_V_READLANE_B32 && !must_zero(d, codes[i], names[i]))
                return false;
            continue;
        }
        unsigned allow = A_VGPR | A_CONST | A_SPECIAL;
        if (in->op == WAVE_OP_V_READLANE_B32 && i == 0)
            allow = A_VGPR | A_SPECIAL; /* a register: a VGPR, or as LLVM reads it an SGPR */
        if (i == 2 && info->family == WAVE_FAM_VOP2 && (info->flags & WAVE_F_VCC_IN))
            allow = A_VGPR | A_SPECIAL; /* the mask or carry-in: a register pair */
        if (!src_code(d, codes[i], widths[i], allow, &in->src[i], names[i]))
            return false;
    }
    if (info->flags & WAVE_F_MAC)
        in->src[2] = in->dst[0];
    return true;
}

static bool dec_vop3p(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_VOP3P, BITS(w, 22, 16));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !word(d, 1, &w1))
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
            return fail(d, "%s: neg_lo/neg_hi on an absent src2", info->name);
        if (m->op_sel & 4)
            return fail(d, "%s: op_sel on an absent src2", info->name);
        m->op_sel_hi &= 3;
    }
    if (!fp && ((m->abs | m->neg) & 6)) /* src0's bits only, as LLVM reads them */
        return fail(d, "%s: neg_lo/neg_hi on src1 or src2 of an integer op", info->name);
    if (!vreg(d, BITS(w, 7, 0), 1, &in->dst[0], "vdst"))
        return false;
    static const char *const names[3] = { "src0", "src1", "src2" };
    unsigned codes[3] = { BITS(w1, 8, 0), BITS(w1, 17, 9), BITS(w1, 26, 18) };
    for (unsigned i = 0; i < 3; i++) {
        if (i >= nsrc) {
            if (!must_zero(d, codes[i], names[i]))
                return false;
            continue;
        }
        if (!src_code(d, codes[i], 1, A_VGPR | A_CONST | A_SPECIAL, &in->src[i], names[i]))
            return false;
    }
    return true;
}

/* ---- vector memory ---- */

static bool dec_ds(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_DS, BITS(w, 24, 17));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !word(d, 1, &w1))
        return false;
    d->len = 2;
    /* bit 25 is reserved: LLVM ignores it but for the ops that neither
     * return nor take data (ds_nop, the _src2_ ops, the gws semaphores) */
    if (BITS(w, 25, 25) && (in->op == WAVE_OP_DS_NOP || strstr(info->name, "_src2_") ||
                            in->op == WAVE_OP_DS_GWS_SEMA_RELEASE_ALL ||
                            in->op == WAVE_OP_DS_GWS_SEMA_V || in->op == WAVE_OP_DS_GWS_SEMA_P))
        return fail(d, "%s: reserved bit 25 is set", info->name);
    m->offset0 = (uint8_t)BITS(w, 7, 0);
    m->offset1 = (uint8_t)BITS(w, 15, 8);
    m->offset = (int32_t)BITS(w, 15, 0);
    m->gds = (uint8_t)BITS(w, 16, 16);
    unsigned addr = BITS(w1, 7, 0), data0 = BITS(w1, 15, 8), data1 = BITS(w1, 23, 16),
             vdst = BITS(w1, 31, 24);
    if (info->dst) {
        if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    } else if (!must_zero(d, vdst, "vdst")) {
        return false;
    }
    if (info->src[0]) {
        if (!vreg(d, addr, 1, &in->src[0], "addr"))
            return false;
    } else if (!must_zero(d, addr, "addr")) {
        return false;
    }
    if (info->src[1]) {
        if (!vreg(d, data0, info->src[1], &in->src[1], "data0"))
            return false;
    } else if (!must_zero(d, data0, "data0")) {
        return false;
    }
    if (info->src[2]) {
        if (!vreg(d, data1, info->src[2], &in->src[2], "data1"))
            return false;
    } else if (!must_zero(d, data1, "data1")) {
        return false;
    }
    if ((strncmp(info->name, "ds_gws", 6) == 0 || in->op == WAVE_OP_DS_ORDERED_COUNT) && !m->gds)
        return fail(d, "%s without gds", info->name);
    if ((in->op == WAVE_OP_DS_PERMUTE_B32 || in->op == WAVE_OP_DS_BPERMUTE_B32) && m->gds)
        return fail(d, "%s with gds", info->name);
    if (in->op == WAVE_OP_DS_NOP && (m->offset || m->gds))
        return fail(d, "ds_nop: offset 0x%x or gds where the op takes neither", (unsigned)m->offset);
    return true;
}

static bool dec_flat(struct dec *d, uint32_t w)
{
    static const uint8_t fams[4] = { WAVE_FAM_FLAT, WAVE_FAM_SCRATCH, WAVE_FAM_GLOBAL, 0 };
    unsigned seg = BITS(w, 15, 14);
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (seg == 3)
        return fail(d, "FLAT segment 3 is reserved");
    unsigned fam = fams[seg];
    const struct wave_op_info *info = lookup(d, fam, BITS(w, 24, 18));
    if (!info || !word(d, 1, &w1))
        return false;
    d->len = 2;
    m->glc = (uint8_t)BITS(w, 16, 16);
    m->slc = (uint8_t)BITS(w, 17, 17);
    m->lds = (uint8_t)BITS(w, 13, 13);
    m->nv = (uint8_t)BITS(w1, 23, 23);
    if (m->lds)
        return fail(d, "%s: the lds bit is set", info->name);
    if (fam == WAVE_FAM_FLAT) {
        m->offset = (int32_t)BITS(w, 12, 0); /* unsigned for FLAT */
    } else {
        m->offset = (int32_t)(BITS(w, 12, 0) ^ 0x1000) - 0x1000;
    }
    unsigned addr = BITS(w1, 7, 0), data = BITS(w1, 15, 8), saddr = BITS(w1, 22, 16),
             vdst = BITS(w1, 31, 24);
    bool rtn = (info->flags & WAVE_F_LOAD) || ((info->flags & WAVE_F_ATOMIC) && m->glc);
    if (rtn && info->dst) {
        if (!vreg(d, vdst, info->dst, &in->dst[0], "vdst"))
            return false;
    }
    if (info->src[2]) {
        if (!vreg(d, data, info->src[2], &in->src[2], "data"))
            return false;
    }
    if (fam == WAVE_FAM_FLAT) {
        if (!must_zero(d, saddr, "saddr"))
            return false;
        return vreg(d, addr, 2, &in->src[0], "vaddr");
    }
    if (saddr == 0x7f)
        return vreg(d, addr, fam == WAVE_FAM_GLOBAL ? 2 : 1, &in->src[0], "vaddr");
    if (fam == WAVE_FAM_GLOBAL)
        return vreg(d, addr, 1, &in->src[0], "vaddr") && sdst(d, saddr, 2, &in->src[1], "saddr");
    return sdst(d, saddr, 1, &in->src[1], "saddr");
}

static bool dec_mubuf(struct dec *d, uint32_t w)
{
    const struct wave_op_info *info = lookup(d, WAVE_FAM_MUBUF, BITS(w, 24, 18));
    struct wave_instr *in = d->out;
    struct wave_mods *m = &in->mods;
    uint32_t w1;
    if (!info || !word(d, 1, &w1))
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
            return must_zero(d, BITS(w, 16, 12), "offen/idxen/glc/lds");
    }
    if (in->op == WAVE_OP_BUFFER_STORE_LDS_DWORD) {
        if (!m->lds || m->offen || m->idxen)
            return fail(d, "buffer_store_lds_dword needs lds and no vaddr");
    } else if (m->lds && ((info->flags & (WAVE_F_STORE | WAVE_F_ATOMIC)) || strstr(info->name, "d16") ||
                          strstr(info->name, "format_xy"))) {
        return fail(d, "%s: the lds bit is set", info->name);
    }
    unsigned naddr = m->offen + m->idxen;
    if (naddr && !vreg(d, vaddr, naddr, &in->src[0], "vaddr"))
        return false;
    if (!sdst(d, srsrc, 4, &in->src[1], "srsrc"))
        return false;
    if (!src_code(d, soffset, 1, A_CONST | A_SPECIAL, &in->src[2], "soffset"))
        return false;
    bool rtn = (info->flags & WAVE_F_LOAD) || ((info->flags & WAVE_F_ATOMIC) && m->glc);
    /* with tfe the status dword goes to the register after vdata's count */
    if (rtn && info->dst && !vreg(d, vdata, info->dst, &in->dst[0], "vdata"))
        return false;
    if (info->src[2] && !vreg(d, vdata, info->src[2], &in->src[3], "vdata"))
        return false;
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
        if (opc >= 448 && op_by_code[WAVE_FAM_VOP3B][opc])
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
    case E_MIMG: return fail(d, "MIMG (image) instructions are not decoded");
    case E_MTBUF: return fail(d, "MTBUF (typed buffer) instructions are not decoded");
    case E_EXP: return fail(d, "EXP (export) instructions are not decoded");
    case E_VINTRP: return fail(d, "VINTRP (interpolation) instructions are not decoded");
    case E_UNKNOWN: break;
    }
    return fail(d, "the leading bits 0x%02x name no gfx9 encoding", w >> 26);
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
