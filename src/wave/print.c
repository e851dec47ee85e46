/* SPDX-License-Identifier: MIT */
/*
 * print: an instruction of the IR as text, in the syntax LLVM's AMDGPU
 * disassembler prints for gfx900 ("v_add_f32_e64 v0, -|v1|, s2 clamp"), so
 * that kiln's listing and llvm-objdump's can be compared line by line:
 * the mnemonic with its encoding suffix, the operands in LLVM's order, then
 * the modifiers. Numbers follow LLVM too: an inline integer in decimal, a
 * float constant as the float, a literal in hex unless its value is one of
 * those.
 *
 * All output goes through one appender (struct out) that counts what the
 * full text needs and never writes past the buffer.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"

struct out {
    char *buf;
    size_t cap, len;
};

KILN_PRINTF(2, 3) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

/* The operand type an op's sources carry, for constants: 16, 32 or 64 bits,
 * and whether float. */
struct optype {
    unsigned bits;
    bool fp;
};

static struct optype src_type(const struct wave_op_info *info, unsigned width)
{
    struct optype t = { width >= 2 ? 64 : 32, false };
    const char *name = info->name;
    const char *last = NULL;
    for (const char *p = strchr(name, '_'); p; p = strchr(p + 1, '_')) {
        const char *tok = p + 1;
        if ((tok[0] == 'f' || tok[0] == 'i' || tok[0] == 'u' || tok[0] == 'b') &&
            (strncmp(tok + 1, "16", 2) == 0 || strncmp(tok + 1, "32", 2) == 0 ||
             strncmp(tok + 1, "64", 2) == 0) &&
            (tok[3] == '_' || tok[3] == 0))
            last = tok;
    }
    /* 16-bit operands: vector ops whose sources are halves (not the
     * packed or byte-lane ones, whose sources are whole dwords) */
    static const char *const whole[] = { "v_sat_pk_u8_i16", "v_sad_u16", "v_qsad_pk_u16_u8",
                                         "v_mqsad_pk_u16_u8" };
    bool scalar = info->family <= WAVE_FAM_SMEM;
    if (last) {
        t.fp = last[0] == 'f';
        if (strncmp(last + 1, "16", 2) == 0 && width < 2 && !scalar)
            t.bits = 16;
        for (size_t i = 0; i < KILN_ARRAY_LEN(whole); i++)
            if (strcmp(name, whole[i]) == 0)
                t.bits = 32;
    }
    if (strncmp(name, "v_pk_", 5) == 0 || strncmp(name, "v_mad_mix", 9) == 0)
        t.bits = 16;
    return t;
}

static const char *special_name(unsigned reg, unsigned count)
{
    if (count >= 2) { /* wider tuples at these codes print as the pair */
        switch (reg) {
        case 102: return "flat_scratch";
        case 104: return "xnack_mask";
        case 106: return "vcc";
        case 125: return "null";
        case 126: return "exec";
        default: break;
        }
    } else if (count == 1) {
        switch (reg) {
        case 102: return "flat_scratch_lo";
        case 103: return "flat_scratch_hi";
        case 104: return "xnack_mask_lo";
        case 105: return "xnack_mask_hi";
        case 106: return "vcc_lo";
        case 107: return "vcc_hi";
        case 124: return "m0";
        case 125: return "null";
        case 126: return "exec_lo";
        case 127: return "exec_hi";
        default: break;
        }
    }
    switch (reg) {
    case 235: return "src_shared_base";
    case 236: return "src_shared_limit";
    case 237: return "src_private_base";
    case 238: return "src_private_limit";
    case 239: return "src_pops_exiting_wave_id";
    case 251: return "src_vccz";
    case 252: return "src_execz";
    case 253: return "src_scc";
    case 254: return "src_lds_direct";
    default: return NULL;
    }
}

static void put_reg(struct out *o, const struct wave_operand *op)
{
    unsigned n = op->count ? op->count : 1;
    if (op->kind == WAVE_OPND_VGPR) {
        if (n == 1)
            put(o, "v%u", op->reg);
        else
            put(o, "v[%u:%u]", op->reg, op->reg + n - 1);
        return;
    }
    const char *sp = special_name(op->reg, n);
    if (sp) {
        put(o, "%s", sp);
    } else if (op->reg >= 108 && op->reg <= 123) {
        unsigned t = op->reg - 108u;
        if (n == 1)
            put(o, "ttmp%u", t);
        else
            put(o, "ttmp[%u:%u]", t, t + n - 1);
    } else if (n == 1) {
        put(o, "s%u", op->reg);
    } else {
        put(o, "s[%u:%u]", op->reg, op->reg + n - 1);
    }
}

static void put_const(struct out *o, uint32_t code, struct optype t)
{
    static const char *const floats[9] = { "0.5", "-0.5", "1.0", "-1.0", "2.0",
                                           "-2.0", "4.0", "-4.0", NULL };
    if (code >= 128 && code <= 192) {
        put(o, "%u", code - 128);
    } else if (code >= 193 && code <= 208) {
        put(o, "-%u", code - 192);
    } else if (code >= 240 && code <= 248 && t.bits == 16 && !t.fp) {
        put(o, "0x%" PRIx64, wave_const_bits(code, 16)); /* a float's bits for a 16-bit integer */
    } else if (code >= 240 && code <= 247) {
        put(o, "%s", floats[code - 240]);
    } else if (code == 248) {
        put(o, "%s", t.bits == 64 ? "0.15915494309189532" : "0.15915494");
    }
}

static void put_literal(struct out *o, uint32_t v, struct optype t)
{
    if (t.bits == 16) { /* a 16-bit operand takes the literal's low half */
        v &= 0xffff;
        int16_t h = (int16_t)v;
        if (!t.fp && h >= -16 && h <= 64) {
            put(o, "%d", h);
            return;
        }
        for (uint32_t code = 240; t.fp && code <= 248; code++)
            if (wave_const_bits(code, 16) == v) {
                put_const(o, code, t);
                return;
            }
        put(o, "0x%" PRIx32, v);
        return;
    }
    int32_t s = (int32_t)v;
    if (s >= -16 && s <= 64) {
        put(o, "%" PRId32, s);
        return;
    }
    if (t.bits == 32) { /* a float constant's bits print as the float, whatever the type */
        for (uint32_t code = 240; code <= 248; code++)
            if (wave_const_bits(code, 32) == v) {
                put_const(o, code, t);
                return;
            }
    }
    put(o, "0x%" PRIx32, v);
}

static void put_operand(struct out *o, const struct wave_operand *op, struct optype t)
{
    if (op->kind == WAVE_OPND_SGPR || op->kind == WAVE_OPND_VGPR) {
        put_reg(o, op);
        return;
    }
    switch (op->kind) {
    case WAVE_OPND_SGPR:
    case WAVE_OPND_VGPR: put_reg(o, op); break;
    case WAVE_OPND_CONST: put_const(o, op->value, t); break;
    case WAVE_OPND_LITERAL: put_literal(o, op->value, t); break;
    case WAVE_OPND_IMM: put(o, "0x%" PRIx32, op->value); break;
    default: put(o, "off"); break;
    }
}

/* A source with its float modifiers (-, |x|, sext()). */
static void put_src(struct out *o, const struct wave_instr *in, unsigned i, struct optype t)
{
    const struct wave_mods *m = &in->mods;
    const struct wave_op_info *info = wave_op_info(in->op);
    /* VOP3P spells its modifiers as lists, but for v_mad_mix* */
    bool packed = info && info->family == WAVE_FAM_VOP3P && strncmp(info->name, "v_mad_mix", 9) != 0;
    bool neg = !packed && ((m->neg >> i) & 1), abs = !packed && ((m->abs >> i) & 1);
    bool sext = !packed && ((m->sext >> i) & 1);
    /* -2 would read as the constant -2: a negated constant is neg(2) */
    bool imm = !abs && (in->src[i].kind == WAVE_OPND_CONST || in->src[i].kind == WAVE_OPND_LITERAL);
    if (neg)
        put(o, imm ? "neg(" : "-");
    if (abs)
        put(o, "|");
    if (sext)
        put(o, "sext(");
    put_operand(o, &in->src[i], t);
    if (sext)
        put(o, ")");
    if (abs)
        put(o, "|");
    if (neg && imm)
        put(o, ")");
}

static void put_omod_clamp(struct out *o, const struct wave_mods *m)
{
    if (m->clamp)
        put(o, " clamp");
    static const char *const omods[4] = { "", " mul:2", " mul:4", " div:2" };
    put(o, "%s", omods[m->omod & 3]);
}

static const char *const sels[7] = { "BYTE_0", "BYTE_1", "BYTE_2", "BYTE_3",
                                     "WORD_0", "WORD_1", "DWORD" };

static void put_sdwa(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    const struct wave_mods *m = &in->mods;
    static const char *const unused[3] = { "UNUSED_PAD", "UNUSED_SEXT", "UNUSED_PRESERVE" };
    if (info->family != WAVE_FAM_VOPC) {
        put_omod_clamp(o, m);
        put(o, " dst_sel:%s dst_unused:%s", sels[m->dst_sel % 7], unused[m->dst_unused % 3]);
    }
    put(o, " src0_sel:%s", sels[m->src_sel[0] % 7]);
    if (info->family != WAVE_FAM_VOP1)
        put(o, " src1_sel:%s", sels[m->src_sel[1] % 7]);
}

static void put_dpp(struct out *o, const struct wave_mods *m)
{
    unsigned c = m->dpp_ctrl;
    if (c <= 0xff)
        put(o, " quad_perm:[%u,%u,%u,%u]", c & 3, (c >> 2) & 3, (c >> 4) & 3, (c >> 6) & 3);
    else if (c >= 0x101 && c <= 0x10f)
        put(o, " row_shl:%u", c & 15);
    else if (c >= 0x111 && c <= 0x11f)
        put(o, " row_shr:%u", c & 15);
    else if (c >= 0x121 && c <= 0x12f)
        put(o, " row_ror:%u", c & 15);
    else if (c == 0x130)
        put(o, " wave_shl:1");
    else if (c == 0x134)
        put(o, " wave_rol:1");
    else if (c == 0x138)
        put(o, " wave_shr:1");
    else if (c == 0x13c)
        put(o, " wave_ror:1");
    else if (c == 0x140)
        put(o, " row_mirror");
    else if (c == 0x141)
        put(o, " row_half_mirror");
    else if (c == 0x142)
        put(o, " row_bcast:15");
    else if (c == 0x143)
        put(o, " row_bcast:31");
    put(o, " row_mask:0x%x bank_mask:0x%x", m->row_mask, m->bank_mask);
    if (m->bound_ctrl)
        put(o, " bound_ctrl:1");
}

static void put_vop(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    bool first = true;
    unsigned nsrc = 0;
#define SEP() (put(o, first ? " " : ", "), first = false)
    /* destinations */
    if (in->dst[0].kind) {
        SEP();
        put_reg(o, &in->dst[0]);
    }
    if (in->dst[1].kind && (in->enc != WAVE_ENC_NATIVE || info->family == WAVE_FAM_VOPC ||
                            (info->flags & WAVE_F_VCC_OUT) || info->family == WAVE_FAM_VOP3B)) {
        SEP();
        put_reg(o, &in->dst[1]);
    }
    for (unsigned i = 0; i < 3; i++)
        if (in->src[i].kind)
            nsrc = i + 1;
    if ((info->flags & WAVE_F_MAC) && in->src[2].kind)
        nsrc = 2; /* the accumulator is the destination, not printed */
    bool madk = in->op == WAVE_OP_V_MADMK_F16 || in->op == WAVE_OP_V_MADAK_F16 ||
                in->op == WAVE_OP_V_MADMK_F32 || in->op == WAVE_OP_V_MADAK_F32;
    for (unsigned i = 0; i < nsrc; i++) {
        SEP();
        unsigned width = i < 3 ? info->src[i] : 1;
        if (madk && in->src[i].kind == WAVE_OPND_LITERAL && in->op == WAVE_OP_V_MADMK_F16)
            put(o, "0x%" PRIx32, in->src[i].value); /* a literal src0 is K, printed as K */
        else if (madk && in->src[i].kind == WAVE_OPND_LITERAL && in->op == WAVE_OP_V_MADAK_F16)
            put(o, "0x%" PRIx32, in->src[i].value & 0xffff);
        else
            put_src(o, in, i, src_type(info, width));
    }
#undef SEP
    if (info->family == WAVE_FAM_VOP3P) {
        const struct wave_mods *m = &in->mods;
        unsigned n = in->src[2].kind ? 3 : 2;
        unsigned hi_default = strncmp(info->name, "v_mad_mix", 9) == 0 ? 0 : (1u << n) - 1;
        if (m->op_sel) {
            put(o, " op_sel:[");
            for (unsigned i = 0; i < n; i++)
                put(o, "%s%u", i ? "," : "", (m->op_sel >> i) & 1);
            put(o, "]");
        }
        if ((m->op_sel_hi & ((1u << n) - 1)) != hi_default) {
            put(o, " op_sel_hi:[");
            for (unsigned i = 0; i < n; i++)
                put(o, "%s%u", i ? "," : "", (m->op_sel_hi >> i) & 1);
            put(o, "]");
        }
        bool mix = strncmp(info->name, "v_mad_mix", 9) == 0;
        if (m->neg && !mix) {
            put(o, " neg_lo:[");
            for (unsigned i = 0; i < n; i++)
                put(o, "%s%u", i ? "," : "", (m->neg >> i) & 1);
            put(o, "]");
        }
        if (m->abs && !mix) {
            put(o, " neg_hi:[");
            for (unsigned i = 0; i < n; i++)
                put(o, "%s%u", i ? "," : "", (m->abs >> i) & 1);
            put(o, "]");
        }
        if (m->clamp)
            put(o, " clamp");
        return;
    }
    if (in->enc == WAVE_ENC_SDWA) {
        put_sdwa(o, in, info);
        return;
    }
    if (in->enc == WAVE_ENC_DPP) {
        put_dpp(o, &in->mods);
        return;
    }
    if (in->mods.op_sel) {
        put(o, " op_sel:[");
        unsigned n = nsrc;
        for (unsigned i = 0; i < n; i++)
            put(o, "%u,", (in->mods.op_sel >> i) & 1);
        put(o, "%u]", (in->mods.op_sel >> 3) & 1);
    }
    put_omod_clamp(o, &in->mods);
}

static void put_waitcnt(struct out *o, uint32_t v)
{
    unsigned vm = (v & 15) | ((v >> 14) & 3) << 4, exp = (v >> 4) & 7, lgkm = (v >> 8) & 15;
    bool any = false;
    if (vm != 63) {
        put(o, " vmcnt(%u)", vm);
        any = true;
    }
    if (exp != 7) {
        put(o, " expcnt(%u)", exp);
        any = true;
    }
    if (lgkm != 15) {
        put(o, " lgkmcnt(%u)", lgkm);
        any = true;
    }
    if (!any)
        put(o, " vmcnt(63) expcnt(7) lgkmcnt(15)");
}

/* " gpr_idx(SRC0,...)" for a mode mask of four bits, hex past them. */
static void put_gpr_idx(struct out *o, uint32_t v)
{
    static const char *const modes[4] = { "SRC0", "SRC1", "SRC2", "DST" };
    if (v > 15) {
        put(o, " 0x%" PRIx32, v);
        return;
    }
    put(o, " gpr_idx(");
    bool any = false;
    for (unsigned k = 0; k < 4; k++)
        if ((v >> k) & 1) {
            put(o, "%s%s", any ? "," : "", modes[k]);
            any = true;
        }
    put(o, ")");
}

/* s_sendmsg's operand: sendmsg(MSG, OP, STREAM) where it names a valid
 * message (the bits past the fields are not looked at), sendmsg(id, op,
 * stream) in numbers where the fields hold the whole value, else the
 * number. */
static void put_sendmsg(struct out *o, uint32_t v)
{
    static const char *const msgs[16] = {
        NULL, "MSG_INTERRUPT", "MSG_GS", "MSG_GS_DONE", "MSG_SAVEWAVE", "MSG_STALL_WAVE_GEN",
        "MSG_HALT_WAVES", "MSG_ORDERED_PS_DONE", "MSG_EARLY_PRIM_DEALLOC", "MSG_GS_ALLOC_REQ",
        "MSG_GET_DOORBELL", NULL, NULL, NULL, NULL, "MSG_SYSMSG",
    };
    static const char *const gs_ops[4] = { "GS_OP_NOP", "GS_OP_CUT", "GS_OP_EMIT", "GS_OP_EMIT_CUT" };
    static const char *const sys_ops[5] = { NULL, "SYSMSG_OP_ECC_ERR_INTERRUPT", "SYSMSG_OP_REG_RD",
                                            "SYSMSG_OP_HOST_TRAP_ACK", "SYSMSG_OP_TTRACE_PC" };
    unsigned id = v & 15, op = (v >> 4) & 7, stream = (v >> 8) & 3;
    bool gs = id == 2 || id == 3;
    bool op_ok = gs ? (op <= 3 && (id == 3 || op != 0)) : id == 15 ? (op >= 1 && op <= 4) : op == 0;
    bool stream_ok = (gs && op != 0) || stream == 0;
    if (msgs[id] && op_ok && stream_ok) {
        put(o, " sendmsg(%s", msgs[id]);
        if (gs) {
            put(o, ", %s", gs_ops[op]);
            if (op != 0)
                put(o, ", %u", stream);
        } else if (id == 15) {
            put(o, ", %s", sys_ops[op]);
        }
        put(o, ")");
    } else if (!(v & ~0x37fu)) {
        put(o, " sendmsg(%u, %u, %u)", id, op, stream);
    } else {
        put(o, " %" PRIu32, v);
    }
}

static void put_hwreg(struct out *o, uint32_t v)
{
    static const char *const names[] = { NULL, "HW_REG_MODE", "HW_REG_STATUS", "HW_REG_TRAPSTS",
                                         "HW_REG_HW_ID", "HW_REG_GPR_ALLOC", "HW_REG_LDS_ALLOC",
                                         "HW_REG_IB_STS", NULL, NULL, NULL, NULL, NULL, NULL,
                                         NULL, "HW_REG_SH_MEM_BASES" };
    unsigned id = v & 63, off = (v >> 6) & 31, size = ((v >> 11) & 31) + 1;
    const char *name = id < KILN_ARRAY_LEN(names) ? names[id] : NULL;
    if (name)
        put(o, "hwreg(%s", name);
    else
        put(o, "hwreg(%u", id);
    if (off != 0 || size != 32)
        put(o, ", %u, %u", off, size);
    put(o, ")");
}

static void put_scalar(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    bool first = true;
#define SEP() (put(o, first ? " " : ", "), first = false)
    switch (info->family) {
    case WAVE_FAM_SOPP:
        if (in->op == WAVE_OP_S_ENDPGM && in->src[0].value)
            put(o, " %" PRIu32, in->src[0].value & 0xffff);
        if (info->flags & WAVE_F_NOSRC)
            return;
        if (in->op == WAVE_OP_S_WAITCNT) {
            put_waitcnt(o, in->src[0].value);
            return;
        }
        if (in->op == WAVE_OP_S_SENDMSG || in->op == WAVE_OP_S_SENDMSGHALT) {
            put_sendmsg(o, in->src[0].value & 0xffff);
            return;
        }
        if (in->op == WAVE_OP_S_SET_GPR_IDX_MODE) {
            put_gpr_idx(o, in->src[0].value & 0xffff);
            return;
        }
        put(o, " %" PRIu32, in->src[0].value & 0xffff);
        return;
    case WAVE_FAM_SOPK:
        if (in->op == WAVE_OP_S_SETREG_IMM32_B32) {
            put(o, " ");
            put_hwreg(o, in->src[1].value);
            put(o, ", ");
            put_literal(o, in->src[0].value, (struct optype){ 32, true });
            return;
        }
        if (in->op == WAVE_OP_S_GETREG_B32 || in->op == WAVE_OP_S_SETREG_B32) {
            const struct wave_operand *r = in->dst[0].kind ? &in->dst[0] : &in->src[0];
            if (in->op == WAVE_OP_S_SETREG_B32) {
                put(o, " ");
                put_hwreg(o, in->src[1].value);
                put(o, ", ");
                put_reg(o, r);
            } else {
                put(o, " ");
                put_reg(o, r);
                put(o, ", ");
                put_hwreg(o, in->src[1].value);
            }
            return;
        }
        SEP();
        put_reg(o, in->dst[0].kind ? &in->dst[0] : &in->src[0]);
        SEP();
        if (info->flags & WAVE_F_BRANCH)
            put(o, "%" PRIu32, in->src[1].value & 0xffff);
        else
            put(o, "0x%" PRIx32, in->src[1].value & 0xffff);
        return;
    default: break;
    }
    if (in->dst[0].kind) {
        SEP();
        put_reg(o, &in->dst[0]);
    }
    for (unsigned i = 0; i < 2; i++) {
        if (!in->src[i].kind)
            continue;
        SEP();
        if (in->op == WAVE_OP_S_SET_GPR_IDX_ON && i == 1) {
            put_gpr_idx(o, in->src[1].value);
            continue;
        }
        put_operand(o, &in->src[i], src_type(info, info->src[i]));
    }
#undef SEP
}

static void put_smem(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    const struct wave_operand *data = in->dst[0].kind ? &in->dst[0] : &in->src[2];
    if (!info->src[0]) {
        if (in->dst[0].kind) {
            put(o, " ");
            put_reg(o, &in->dst[0]);
        }
        return;
    }
    put(o, " ");
    if (data->kind == WAVE_OPND_IMM) /* s_atc_probe's probe bits */
        put(o, data->value <= 64 ? "%" PRIu32 ", " : "0x%" PRIx32 ", ", data->value);
    else if (data->kind) {
        put_reg(o, data);
        put(o, ", ");
    }
    put_reg(o, &in->src[0]);
    put(o, ", ");
    if (in->src[1].kind == WAVE_OPND_IMM) {
        int32_t off = (int32_t)in->src[1].value;
        if (off < 0)
            put(o, "-0x%" PRIx32, (uint32_t)-off);
        else
            put(o, "0x%" PRIx32, (uint32_t)off);
    } else {
        put_reg(o, &in->src[1]);
    }
    if (in->mods.glc && (info->flags & (WAVE_F_LOAD | WAVE_F_STORE | WAVE_F_ATOMIC)))
        put(o, " glc");
}

/* ds_swizzle_b32's offset as LLVM spells the pattern: QUAD_PERM (bit 15,
 * bits 8..14 clear), or from the and/or/xor masks (bit 15 clear) SWAP,
 * REVERSE, BROADCAST or BITMASK_PERM, whose letters give each lane-id bit
 * from the top: 0 and 1 forced, p kept, i inverted. */
static void put_swizzle(struct out *o, unsigned v)
{
    if ((v & 0xff00) == 0x8000) {
        put(o, " offset:swizzle(QUAD_PERM,%u,%u,%u,%u)", v & 3, (v >> 2) & 3, (v >> 4) & 3,
            (v >> 6) & 3);
        return;
    }
    if (v & 0x8000) {
        put(o, " offset:%u", v);
        return;
    }
    unsigned and_m = v & 31, or_m = (v >> 5) & 31, xor_m = (v >> 10) & 31;
    if (and_m == 31 && or_m == 0 && xor_m && !(xor_m & (xor_m - 1))) {
        put(o, " offset:swizzle(SWAP,%u)", xor_m);
        return;
    }
    if (and_m == 31 && or_m == 0 && xor_m && !((xor_m + 1) & xor_m)) {
        put(o, " offset:swizzle(REVERSE,%u)", xor_m + 1);
        return;
    }
    unsigned group = 32 - and_m;
    if (group > 1 && !(group & (group - 1)) && or_m < group && xor_m == 0) {
        put(o, " offset:swizzle(BROADCAST,%u,%u)", group, or_m);
        return;
    }
    unsigned probe0 = or_m ^ xor_m, probe1 = ((31 & and_m) | or_m) ^ xor_m;
    char mask[6];
    for (unsigned b = 0; b < 5; b++) {
        unsigned bit = 1u << (4 - b);
        bool p0 = probe0 & bit, p1 = probe1 & bit;
        mask[b] = p0 && p1 ? '1' : !p0 && !p1 ? '0' : p1 ? 'p' : 'i';
    }
    mask[5] = 0;
    put(o, " offset:swizzle(BITMASK_PERM,\"%s\")", mask);
}

static void put_ds(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    bool first = true;
    const struct wave_mods *m = &in->mods;
#define SEP() (put(o, first ? " " : ", "), first = false)
    if (in->dst[0].kind) {
        SEP();
        put_reg(o, &in->dst[0]);
    }
    for (unsigned i = 0; i < 3; i++)
        if (in->src[i].kind) {
            SEP();
            put_reg(o, &in->src[i]);
        }
#undef SEP
    bool two = strncmp(info->name, "ds_write2", 9) == 0 || strncmp(info->name, "ds_read2", 8) == 0 ||
               strncmp(info->name, "ds_wrxchg2", 10) == 0;
    if (two) {
        if (m->offset0)
            put(o, " offset0:%u", m->offset0);
        if (m->offset1)
            put(o, " offset1:%u", m->offset1);
    } else if (in->op == WAVE_OP_DS_SWIZZLE_B32) {
        if (m->offset)
            put_swizzle(o, (unsigned)m->offset);
    } else if (m->offset) {
        put(o, " offset:%d", m->offset);
    }
    if (m->gds)
        put(o, " gds");
}

static void put_mubuf(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    const struct wave_mods *m = &in->mods;
    const struct wave_operand *data = in->src[3].kind ? &in->src[3] : &in->dst[0];
    if (!info->dst && !info->src[2] && in->op != WAVE_OP_BUFFER_STORE_LDS_DWORD)
        return;
    put(o, " ");
    if (data->kind) {
        put_reg(o, data);
        put(o, ", ");
    }
    if (in->op != WAVE_OP_BUFFER_STORE_LDS_DWORD) {
        if (in->src[0].kind)
            put_reg(o, &in->src[0]);
        else
            put(o, "off");
        put(o, ", ");
    }
    put_reg(o, &in->src[1]);
    put(o, ", ");
    put_operand(o, &in->src[2], (struct optype){ 32, false });
    if (in->op == WAVE_OP_BUFFER_STORE_LDS_DWORD) {
        if (m->offset)
            put(o, " offset:%d", m->offset);
        put(o, " lds%s%s", m->glc ? " glc" : "", m->slc ? " slc" : "");
        return;
    }
    if (m->idxen)
        put(o, " idxen");
    if (m->offen)
        put(o, " offen");
    if (m->offset)
        put(o, " offset:%d", m->offset);
    if (m->glc)
        put(o, " glc");
    if (m->slc)
        put(o, " slc");
    if (m->lds)
        put(o, " lds");
    if (m->tfe && !m->lds && !(info->flags & WAVE_F_ATOMIC))
        put(o, " tfe");
}

static void put_flat(struct out *o, const struct wave_instr *in, const struct wave_op_info *info)
{
    const struct wave_mods *m = &in->mods;
    bool first = true;
#define SEP() (put(o, first ? " " : ", "), first = false)
    if (in->dst[0].kind) {
        SEP();
        put_reg(o, &in->dst[0]);
    }
    SEP();
    if (in->src[0].kind)
        put_reg(o, &in->src[0]);
    else
        put(o, "off");
    if (in->src[2].kind) {
        SEP();
        put_reg(o, &in->src[2]);
    }
    if (info->family != WAVE_FAM_FLAT) {
        SEP();
        if (in->src[1].kind)
            put_reg(o, &in->src[1]);
        else
            put(o, "off");
    }
#undef SEP
    if (m->offset)
        put(o, " offset:%d", m->offset);
    if (m->glc)
        put(o, " glc");
    if (m->slc)
        put(o, " slc");
}

size_t wave_print(const struct wave_instr *in, char *buf, size_t cap)
{
    struct out o = { buf, cap, 0 };
    const struct wave_op_info *info = wave_op_info(in->op);
    if (cap)
        buf[0] = 0;
    if (!info) {
        put(&o, ".long 0x%08" PRIx32, in->raw[0]);
        return o.len;
    }
    put(&o, "%s", info->name);
    bool vop = info->family == WAVE_FAM_VOP1 || info->family == WAVE_FAM_VOP2 ||
               info->family == WAVE_FAM_VOPC;
    if (vop && !(info->flags & WAVE_F_NOSUFFIX)) {
        if (in->enc == WAVE_ENC_SDWA)
            put(&o, "_sdwa");
        else if (in->enc == WAVE_ENC_DPP)
            put(&o, "_dpp");
        else
            put(&o, in->enc == WAVE_ENC_VOP3 ? "_e64" : "_e32");
    }
    switch (info->family) {
    case WAVE_FAM_SOP1:
    case WAVE_FAM_SOP2:
    case WAVE_FAM_SOPK:
    case WAVE_FAM_SOPC:
    case WAVE_FAM_SOPP: put_scalar(&o, in, info); break;
    case WAVE_FAM_SMEM: put_smem(&o, in, info); break;
    case WAVE_FAM_DS: put_ds(&o, in, info); break;
    case WAVE_FAM_MUBUF: put_mubuf(&o, in, info); break;
    case WAVE_FAM_FLAT:
    case WAVE_FAM_GLOBAL:
    case WAVE_FAM_SCRATCH: put_flat(&o, in, info); break;
    default: put_vop(&o, in, info); break;
    }
    return o.len;
}
