/* SPDX-License-Identifier: MIT */
/*
 * lane_check.c: the Lane level's validity analysis (lane.h gives the
 * rules). It works on the kernel's flow graph (cfg.h) with three
 * dataflows over the scalar file (codes 0..127 and SCC):
 * - forward, which registers may hold a lane mask at each point (a mask
 *   is right in a lane's own bit alone), and whether SCC was set from one;
 *   with whether LDS was written since the last s_barrier;
 * - backward, which registers are live (read before written again);
 * - per branch on exec, forward over the code a lane may skip, which
 *   masks are "quiet" there (their bit is 0 for a lane that is off), so
 *   that exec provably keeps a skipping lane off.
 */
#include "wave/lane.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/cfg.h"
#include "wave/decode.h"
#include "wave/wavefront.h"

/* ---- sets of scalar registers ------------------------------------------------------------ */

#define RS_SCC 128u
#define RS_WORDS 5u

struct rset {
    uint32_t w[RS_WORDS];
};

static void rs_add(struct rset *s, unsigned b) { s->w[b / 32] |= 1u << (b % 32); }
static bool rs_has(const struct rset *s, unsigned b) { return (s->w[b / 32] >> (b % 32)) & 1u; }
static bool rs_union(struct rset *s, const struct rset *t)
{
    bool grew = false;
    for (unsigned i = 0; i < RS_WORDS; i++) {
        grew |= (t->w[i] & ~s->w[i]) != 0;
        s->w[i] |= t->w[i];
    }
    return grew;
}

static void rs_range(struct rset *s, const struct wave_operand *o)
{
    if (o->kind != WAVE_OPND_SGPR)
        return;
    unsigned n = o->count ? o->count : 1;
    if (o->reg < 128) {
        for (unsigned i = 0; i < n && o->reg + i < 128; i++)
            rs_add(s, o->reg + i);
    } else if (o->reg == WAVE_SREG_SCC) {
        rs_add(s, RS_SCC);
    } else if (o->reg == WAVE_SREG_VCCZ) {
        rs_add(s, WAVE_SREG_VCC_LO), rs_add(s, WAVE_SREG_VCC_HI);
    } else if (o->reg == WAVE_SREG_EXECZ) {
        rs_add(s, WAVE_SREG_EXEC_LO), rs_add(s, WAVE_SREG_EXEC_HI);
    }
}

static bool is_salu(unsigned fam)
{
    return fam == WAVE_FAM_SOP1 || fam == WAVE_FAM_SOP2 || fam == WAVE_FAM_SOPK || fam == WAVE_FAM_SOPC;
}

/* Scalar instructions that leave SCC as it was (every other one of
 * SOP1, SOP2, SOPK and SOPC is taken to set it: more than it does is
 * safe here). */
static bool keeps_scc(unsigned op)
{
    switch (op) {
    case WAVE_OP_S_MOV_B32: case WAVE_OP_S_MOV_B64: case WAVE_OP_S_CMOV_B32: case WAVE_OP_S_CMOV_B64:
    case WAVE_OP_S_MOVK_I32: case WAVE_OP_S_CMOVK_I32: case WAVE_OP_S_CSELECT_B32: case WAVE_OP_S_CSELECT_B64:
    case WAVE_OP_S_GETPC_B64: case WAVE_OP_S_SETPC_B64: case WAVE_OP_S_SWAPPC_B64: case WAVE_OP_S_MUL_I32:
    case WAVE_OP_S_BFM_B32: case WAVE_OP_S_BFM_B64: case WAVE_OP_S_SEXT_I32_I8: case WAVE_OP_S_SEXT_I32_I16:
    case WAVE_OP_S_BREV_B32: case WAVE_OP_S_FF1_I32_B32: case WAVE_OP_S_FF1_I32_B64: case WAVE_OP_S_GETREG_B32:
        return true;
    default:
        return false;
    }
}

static bool reads_scc(unsigned op)
{
    return op == WAVE_OP_S_CSELECT_B32 || op == WAVE_OP_S_CSELECT_B64 || op == WAVE_OP_S_CMOV_B32 ||
           op == WAVE_OP_S_CMOV_B64 || op == WAVE_OP_S_CMOVK_I32 || op == WAVE_OP_S_ADDC_U32 ||
           op == WAVE_OP_S_SUBB_U32 || op == WAVE_OP_S_CBRANCH_SCC0 || op == WAVE_OP_S_CBRANCH_SCC1;
}

static bool is_cmpx(unsigned op) { return !strncmp(wave_op_name(op), "v_cmpx_", 7); }

static bool writes_exec_implicitly(const struct wave_instr *in)
{
    const char *n = wave_op_name(in->op);
    return is_cmpx(in->op) || strstr(n, "saveexec") || strstr(n, "wrexec");
}

/* The scalar registers in reads and writes (exec included where written;
 * its implicit reads by vector instructions are left out: exec has its
 * own rule). */
static void uses(const struct wave_instr *in, struct rset *rd, struct rset *wr)
{
    memset(rd, 0, sizeof *rd);
    memset(wr, 0, sizeof *wr);
    const struct wave_op_info *info = wave_op_info(in->op);
    for (int i = 0; i < 4; i++)
        rs_range(rd, &in->src[i]);
    for (int i = 0; i < 2; i++)
        rs_range(wr, &in->dst[i]);
    if (reads_scc(in->op))
        rs_add(rd, RS_SCC);
    if (info && is_salu(info->family) && !keeps_scc(in->op))
        rs_add(wr, RS_SCC);
    if (writes_exec_implicitly(in))
        rs_add(wr, WAVE_SREG_EXEC_LO), rs_add(wr, WAVE_SREG_EXEC_HI);
    if (in->op == WAVE_OP_S_CBRANCH_VCCZ || in->op == WAVE_OP_S_CBRANCH_VCCNZ || in->op == WAVE_OP_V_DIV_FMAS_F32 ||
        in->op == WAVE_OP_V_DIV_FMAS_F64)
        rs_add(rd, WAVE_SREG_VCC_LO), rs_add(rd, WAVE_SREG_VCC_HI);
}

/* ---- masks combined bit by bit --------------------------------------------------------- */

enum mop {
    MOP_NONE, MOP_MOV, MOP_NOT, MOP_AND, MOP_OR, MOP_XOR, MOP_ANDN2, MOP_ANDN1, MOP_ORN2, MOP_ORN1, MOP_NAND,
    MOP_NOR, MOP_XNOR, MOP_SEL, MOP_CMOV,
};

/* How op combines its sources, bit by bit (MOP_NONE: it does not); for
 * the saveexec family, *save set: the new exec is op(source, exec). */
static enum mop mask_op(unsigned op, bool *save)
{
    *save = false;
    switch (op) {
    case WAVE_OP_S_MOV_B64: case WAVE_OP_S_MOV_B32: return MOP_MOV;
    case WAVE_OP_S_NOT_B64: case WAVE_OP_S_NOT_B32: return MOP_NOT;
    case WAVE_OP_S_AND_B64: case WAVE_OP_S_AND_B32: return MOP_AND;
    case WAVE_OP_S_OR_B64: case WAVE_OP_S_OR_B32: return MOP_OR;
    case WAVE_OP_S_XOR_B64: case WAVE_OP_S_XOR_B32: return MOP_XOR;
    case WAVE_OP_S_ANDN2_B64: case WAVE_OP_S_ANDN2_B32: return MOP_ANDN2;
    case WAVE_OP_S_ORN2_B64: case WAVE_OP_S_ORN2_B32: return MOP_ORN2;
    case WAVE_OP_S_NAND_B64: case WAVE_OP_S_NAND_B32: return MOP_NAND;
    case WAVE_OP_S_NOR_B64: case WAVE_OP_S_NOR_B32: return MOP_NOR;
    case WAVE_OP_S_XNOR_B64: case WAVE_OP_S_XNOR_B32: return MOP_XNOR;
    case WAVE_OP_S_CSELECT_B64: case WAVE_OP_S_CSELECT_B32: return MOP_SEL;
    case WAVE_OP_S_CMOV_B64: case WAVE_OP_S_CMOV_B32: return MOP_CMOV;
    case WAVE_OP_S_AND_SAVEEXEC_B64: *save = true; return MOP_AND;
    case WAVE_OP_S_OR_SAVEEXEC_B64: *save = true; return MOP_OR;
    case WAVE_OP_S_XOR_SAVEEXEC_B64: *save = true; return MOP_XOR;
    case WAVE_OP_S_ANDN2_SAVEEXEC_B64: *save = true; return MOP_ANDN2;
    case WAVE_OP_S_ANDN1_SAVEEXEC_B64: *save = true; return MOP_ANDN1;
    case WAVE_OP_S_ORN2_SAVEEXEC_B64: *save = true; return MOP_ORN2;
    case WAVE_OP_S_ORN1_SAVEEXEC_B64: *save = true; return MOP_ORN1;
    case WAVE_OP_S_NAND_SAVEEXEC_B64: *save = true; return MOP_NAND;
    case WAVE_OP_S_NOR_SAVEEXEC_B64: *save = true; return MOP_NOR;
    case WAVE_OP_S_XNOR_SAVEEXEC_B64: *save = true; return MOP_XNOR;
    default: return MOP_NONE;
    }
}

/* ---- one lane's bit ---------------------------------------------------------------------- */

/* What is known of a register's bit for one lane: 0, 1, nothing, or
 * "what register r held at the start" (BV_ENTRY + r). A lane mask's bit
 * is known where a skipping lane is concerned: exec's is 0 (the lane is
 * off), a comparison's is 0 (a lane that is off gets 0), the rest follows
 * from the bitwise algebra. */
enum { BV_ZERO = 0, BV_ONE = 1, BV_ANY = 2, BV_ENTRY = 3 };
#define BV_REGS 129u   /* codes 0..127 and SCC */

static uint16_t bv_not(uint16_t x) { return x == BV_ZERO ? BV_ONE : x == BV_ONE ? BV_ZERO : BV_ANY; }
static uint16_t bv_and(uint16_t a, uint16_t b)
{
    if (a == BV_ZERO || b == BV_ZERO)
        return BV_ZERO;
    return a == BV_ONE ? b : b == BV_ONE ? a : a == b ? a : BV_ANY;
}
static uint16_t bv_or(uint16_t a, uint16_t b)
{
    if (a == BV_ONE || b == BV_ONE)
        return BV_ONE;
    return a == BV_ZERO ? b : b == BV_ZERO ? a : a == b ? a : BV_ANY;
}
static uint16_t bv_xor(uint16_t a, uint16_t b)
{
    if (a == BV_ZERO)
        return b;
    if (b == BV_ZERO)
        return a;
    if (a == b && a != BV_ANY)
        return BV_ZERO;
    return a == BV_ONE ? bv_not(b) : b == BV_ONE ? bv_not(a) : BV_ANY;
}

static uint16_t bv_eval(enum mop m, uint16_t a, uint16_t b)
{
    switch (m) {
    case MOP_MOV: return a;
    case MOP_NOT: return bv_not(a);
    case MOP_AND: return bv_and(a, b);
    case MOP_OR: return bv_or(a, b);
    case MOP_XOR: return bv_xor(a, b);
    case MOP_ANDN2: return bv_and(a, bv_not(b));
    case MOP_ANDN1: return bv_and(bv_not(a), b);
    case MOP_ORN2: return bv_or(a, bv_not(b));
    case MOP_ORN1: return bv_or(bv_not(a), b);
    case MOP_NAND: return bv_not(bv_and(a, b));
    case MOP_NOR: return bv_not(bv_or(a, b));
    case MOP_XNOR: return bv_not(bv_xor(a, b));
    case MOP_SEL: case MOP_CMOV: return a == b ? a : BV_ANY;
    default: return BV_ANY;
    }
}

/* An operand's bit: a register's (its dwords agreeing), 0 or -1 as
 * constants, else nothing known. */
static uint16_t bv_read(const uint16_t *v, const struct wave_operand *o)
{
    if (o->kind == WAVE_OPND_CONST)
        return o->value == 128 ? BV_ZERO : o->value == 193 ? BV_ONE : BV_ANY;
    if ((o->kind == WAVE_OPND_LITERAL || o->kind == WAVE_OPND_IMM) && o->value == 0)
        return BV_ZERO;
    if ((o->kind == WAVE_OPND_LITERAL || o->kind == WAVE_OPND_IMM) && o->value == 0xffffffffu && o->count < 2)
        return BV_ONE;
    if (o->kind != WAVE_OPND_SGPR || o->reg >= 128)
        return BV_ANY;
    uint16_t x = v[o->reg];
    for (unsigned i = 1; i < (o->count ? o->count : 1u) && o->reg + i < 128; i++) {
        uint16_t y = v[o->reg + i];
        bool same = x >= BV_ENTRY ? y == x + i : y == x;
        if (!same)
            return BV_ANY;
    }
    return x;
}

static void bv_write(uint16_t *v, const struct wave_operand *o, uint16_t x)
{
    if (o->kind != WAVE_OPND_SGPR || o->reg >= 128)
        return;
    for (unsigned i = 0; i < (o->count ? o->count : 1u) && o->reg + i < 128; i++)
        v[o->reg + i] = x >= BV_ENTRY ? (uint16_t)(x + i) : x;
}

static const struct wave_operand exec_opnd = {.kind = WAVE_OPND_SGPR, .count = 2, .reg = WAVE_SREG_EXEC_LO};

static bool writes_mask_per_lane(const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    return info && !is_salu(info->family) && info->family != WAVE_FAM_SOPP && info->family != WAVE_FAM_SMEM &&
           in->dst[1].kind == WAVE_OPND_SGPR;
}

/* One instruction on the bits; off: whether the lane is known to be off
 * (a comparison then writes 0 to its bit), else what it writes is not
 * known (a comparison's result is the lane's own). */
static void bv_step(uint16_t *v, const struct wave_instr *in, const struct rset *wr, bool off)
{
    bool save;
    enum mop mo = mask_op(in->op, &save);
    if (mo != MOP_NONE) {
        uint16_t a = bv_read(v, &in->src[0]);
        uint16_t b = save ? bv_read(v, &exec_opnd) : mo == MOP_CMOV ? bv_read(v, &in->dst[0]) : bv_read(v, &in->src[1]);
        uint16_t r = bv_eval(mo, a, b);
        if (save) {
            bv_write(v, &in->dst[0], b);
            bv_write(v, &exec_opnd, r);
        } else {
            bv_write(v, &in->dst[0], r);
        }
        if (rs_has(wr, RS_SCC))
            v[RS_SCC] = BV_ANY;
        return;
    }
    for (unsigned r = 0; r < BV_REGS; r++)
        if (rs_has(wr, r))
            v[r] = BV_ANY;
    if (writes_mask_per_lane(in))
        bv_write(v, &in->dst[1], off ? BV_ZERO : BV_ANY);
    if (is_cmpx(in->op))
        bv_write(v, &exec_opnd, off ? BV_ZERO : BV_ANY);
}

static void bv_meet(uint16_t *into, const uint16_t *from, bool *changed)
{
    for (unsigned r = 0; r < BV_REGS; r++)
        if (into[r] != from[r] && into[r] != BV_ANY) {
            into[r] = BV_ANY;
            *changed = true;
        }
}

/* The bits of an operand as a set-membership test: any of its dwords. */
static bool op_in(const struct rset *s, const struct wave_operand *o)
{
    if (o->kind != WAVE_OPND_SGPR)
        return false;
    struct rset t = {{0}};
    rs_range(&t, o);
    for (unsigned i = 0; i < RS_WORDS; i++)
        if (t.w[i] & s->w[i])
            return true;
    return false;
}

static void op_set(struct rset *s, const struct wave_operand *o, bool on)
{
    struct rset t = {{0}};
    rs_range(&t, o);
    for (unsigned i = 0; i < RS_WORDS; i++)
        s->w[i] = on ? s->w[i] | t.w[i] : s->w[i] & ~t.w[i];
}

/* ---- the analysis ------------------------------------------------------------------------ */

struct an {
    const struct wave_kernel *k;
    struct wave_cfg c;
    struct rset *mask_in;    /* per block: may hold a lane mask (RS_SCC: SCC set from one) */
    bool *lds_in;            /* per block: LDS written since the last s_barrier, on some path */
    struct rset *live_in;    /* per block */
    struct rset *rd, *wr;    /* per instruction: the scalars it reads and writes (uses) */
    uint16_t (*bits_end)[BV_REGS];   /* per block: constant_bits at its end */
    struct lane_facts facts;
    char why[320];
    uint32_t at;             /* the refused instruction */
};

static bool refuse(struct an *a, uint32_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool refuse(struct an *a, uint32_t i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->why, sizeof a->why, fmt, ap);
    va_end(ap);
    a->at = i;
    return false;
}

/* The text of an operand's registers ("s[4:5]", "vcc", "exec"). */
static const char *reg_name(const struct wave_operand *o, char *buf, size_t cap)
{
    unsigned n = o->count ? o->count : 1;
    if (o->reg == WAVE_SREG_VCC_LO && n == 2)
        return "vcc";
    if (o->reg == WAVE_SREG_EXEC_LO && n == 2)
        return "exec";
    if (n == 1)
        snprintf(buf, cap, "s%u", (unsigned)o->reg);
    else
        snprintf(buf, cap, "s[%u:%u]", (unsigned)o->reg, o->reg + n - 1);
    return buf;
}

static bool cross_lane(struct an *a, uint32_t i)
{
    const struct wave_instr *in = &a->c.in[i];
    const char *what = NULL;
    switch (in->op) {
    case WAVE_OP_V_READLANE_B32: what = "it reads one lane's VGPR into a scalar"; break;
    case WAVE_OP_V_WRITELANE_B32: what = "it writes one lane's VGPR"; break;
    case WAVE_OP_V_READFIRSTLANE_B32:
        if (in->src[0].kind == WAVE_OPND_VGPR)
            what = "it reads the first active lane's VGPR";
        break;
    case WAVE_OP_DS_SWIZZLE_B32: what = "it swizzles values between lanes"; break;
    case WAVE_OP_DS_PERMUTE_B32: case WAVE_OP_DS_BPERMUTE_B32: what = "it moves values between lanes"; break;
    case WAVE_OP_S_MOVRELS_B32: case WAVE_OP_S_MOVRELS_B64: case WAVE_OP_S_MOVRELD_B32: case WAVE_OP_S_MOVRELD_B64:
        what = "it reaches a scalar register chosen by m0";
        break;
    default: break;
    }
    if (!what && in->enc == WAVE_ENC_DPP)
        what = "its DPP source is another lane's";
    return what ? refuse(a, i, "%s, and one invocation per lane sees only its own (rule 1)", what) : true;
}

/* Rule 2 at one instruction, given the masks before it; updates them. */
static bool mask_step(struct an *a, uint32_t i, struct rset *m, bool check)
{
    const struct wave_instr *in = &a->c.in[i];
    const struct wave_op_info *info = wave_op_info(in->op);
    char nb[24];
    bool save;
    enum mop mo = mask_op(in->op, &save);
    bool any_mask = false;
    for (int s = 0; s < 4; s++)
        any_mask |= op_in(m, &in->src[s]);
    if (save)
        any_mask |= op_in(m, &exec_opnd);
    bool scc_bad = rs_has(m, RS_SCC);
    if (check) {
        if (reads_scc(in->op) && scc_bad)
            return refuse(a, i, "it reads SCC that an operation on a lane mask set (whether any lane's bit is set), "
                                "which one invocation per lane cannot know (rule 2)");
        if (in->op == WAVE_OP_S_CBRANCH_VCCZ || in->op == WAVE_OP_S_CBRANCH_VCCNZ)
            return refuse(a, i, "it branches on whether any lane's vcc bit is set, which one invocation per lane "
                                "cannot know (rule 2)");
        for (int s = 0; s < 4; s++) {
            const struct wave_operand *o = &in->src[s];
            if (o->kind == WAVE_OPND_SGPR && (o->reg == WAVE_SREG_VCCZ || o->reg == WAVE_SREG_EXECZ))
                return refuse(a, i, "it reads %s, whether any lane's bit is set (rule 2)",
                              o->reg == WAVE_SREG_VCCZ ? "vccz" : "execz");
            if (!op_in(m, o))
                continue;
            bool per_lane = mo != MOP_NONE ||
                            (s == 2 && info && (info->flags & WAVE_F_VCC_IN) &&
                             info->family != WAVE_FAM_SOP2);
            if (!per_lane)
                return refuse(a, i, "it reads %s, a lane mask, as a number; one invocation per lane holds only "
                                    "its own bit (rule 2)",
                              reg_name(o, nb, sizeof nb));
        }
    }
    /* what it writes */
    const struct rset *wr = &a->wr[i];
    if (mo != MOP_NONE) {
        if (save) {
            op_set(m, &in->dst[0], op_in(m, &exec_opnd));
            op_set(m, &exec_opnd, any_mask);
        } else {
            op_set(m, &in->dst[0], any_mask);
        }
        if (rs_has(wr, RS_SCC)) {
            if (any_mask)
                rs_add(m, RS_SCC);
            else
                m->w[RS_SCC / 32] &= ~(1u << (RS_SCC % 32));
        }
        return true;
    }
    for (unsigned b = 0; b <= RS_SCC; b++)
        if (rs_has(wr, b))
            m->w[b / 32] &= ~(1u << (b % 32));
    if (writes_mask_per_lane(in))
        op_set(m, &in->dst[1], true);   /* VOPC's mask, a VOP3b carry-out */
    if (is_cmpx(in->op))
        op_set(m, &exec_opnd, true);
    return true;
}

static bool lds_writes(const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    if (!info || info->family != WAVE_FAM_DS)
        return false;
    return (info->flags & (WAVE_F_STORE | WAVE_F_ATOMIC)) || in->op == WAVE_OP_DS_APPEND ||
           in->op == WAVE_OP_DS_CONSUME || in->op == WAVE_OP_DS_WRITE_ADDTID_B32;
}

static bool lds_reads(const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    return info && info->family == WAVE_FAM_DS &&
           ((info->flags & WAVE_F_LOAD) || ((info->flags & WAVE_F_ATOMIC) && info->dst)) &&
           in->op != WAVE_OP_DS_SWIZZLE_B32 && in->op != WAVE_OP_DS_PERMUTE_B32 && in->op != WAVE_OP_DS_BPERMUTE_B32;
}

/* The forward pass: masks and LDS to a fixed point, then every rule of 1,
 * 2 and 3 checked once. */
static bool forward(struct an *a)
{
    struct wave_cfg *c = &a->c;
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t b = 0; b < c->nblocks; b++) {
            struct rset m = a->mask_in[b];
            bool lds = a->lds_in[b];
            for (uint32_t i = c->blocks[b].first; i <= c->blocks[b].last; i++) {
                (void)mask_step(a, i, &m, false);
                if (lds_writes(&c->in[i]))
                    lds = true;
                if (c->in[i].op == WAVE_OP_S_BARRIER)
                    lds = false;
            }
            for (int s = 0; s < 2; s++) {
                int32_t t = c->blocks[b].succ[s];
                if (t < 0)
                    continue;
                changed |= rs_union(&a->mask_in[t], &m);
                if (lds && !a->lds_in[t])
                    a->lds_in[t] = changed = true;
            }
        }
    }
    for (uint32_t b = 0; b < c->nblocks; b++) {
        struct rset m = a->mask_in[b];
        bool lds = a->lds_in[b];
        for (uint32_t i = c->blocks[b].first; i <= c->blocks[b].last; i++) {
            if (!cross_lane(a, i) || !mask_step(a, i, &m, true))
                return false;
            const struct wave_op_info *info = wave_op_info(c->in[i].op);
            bool vmem = info && (info->family == WAVE_FAM_FLAT || info->family == WAVE_FAM_GLOBAL ||
                                 info->family == WAVE_FAM_MUBUF);
            bool lds_rtn = info && info->family == WAVE_FAM_DS && (info->flags & WAVE_F_ATOMIC) && info->dst;
            if (((vmem && c->in[i].mods.glc) || lds_rtn) && (info->flags & WAVE_F_ATOMIC))
                return refuse(a, i, "it returns what its atomic found in memory, which depends on the order the lanes "
                                    "reach it: a wave's lanes go in lane order, invocations in any (rule 3)");
            if (lds && lds_reads(&c->in[i]))
                return refuse(a, i, "it may read LDS that another lane of its wave wrote with no s_barrier between; "
                                    "a wave's lanes run in lockstep, invocations do not (rule 3)");
            if (lds_writes(&c->in[i]))
                lds = true;
            if (c->in[i].op == WAVE_OP_S_BARRIER)
                lds = false;
        }
    }
    return true;
}

static void liveness(struct an *a)
{
    struct wave_cfg *c = &a->c;
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t b = c->nblocks; b-- > 0;) {
            struct rset live = {{0}};
            for (int s = 0; s < 2; s++)
                if (c->blocks[b].succ[s] >= 0)
                    rs_union(&live, &a->live_in[c->blocks[b].succ[s]]);
            for (uint32_t i = c->blocks[b].last + 1; i-- > c->blocks[b].first;)
                for (unsigned w = 0; w < RS_WORDS; w++)
                    live.w[w] = (live.w[w] & ~a->wr[i].w[w]) | a->rd[i].w[w];
            changed |= rs_union(&a->live_in[b], &live);
        }
    }
}

/* Which registers hold all zeros or all ones at each block's end, for
 * every lane alike (s_mov_b64 s[4:5], -1): what a skipping lane's bit is
 * known to be where it leaves. */
static void constant_bits(struct an *a)
{
    struct wave_cfg *c = &a->c;
    uint16_t (*in)[BV_REGS] = a->bits_end;
    uint16_t start[BV_REGS];
    for (unsigned r = 0; r < BV_REGS; r++)
        start[r] = BV_ANY;
    uint16_t (*ent)[BV_REGS] = mem_calloc(c->nblocks ? c->nblocks : 1, sizeof *ent);
    bool *seen = mem_calloc(c->nblocks ? c->nblocks : 1, sizeof *seen);
    if (!ent || !seen) {   /* nothing known: every skip judged without constants */
        for (uint32_t b = 0; b < c->nblocks; b++)
            memcpy(in[b], start, sizeof start);
        free(ent);
        free(seen);
        return;
    }
    if (c->nblocks) {
        memcpy(ent[0], start, sizeof start);
        seen[0] = true;
    }
    for (bool changed = c->nblocks > 0; changed;) {
        changed = false;
        for (uint32_t b = 0; b < c->nblocks; b++) {
            if (!seen[b])
                continue;
            uint16_t v[BV_REGS];
            memcpy(v, ent[b], sizeof v);
            for (uint32_t i = c->blocks[b].first; i <= c->blocks[b].last; i++)
                bv_step(v, &c->in[i], &a->wr[i], false);
            memcpy(in[b], v, sizeof v);
            for (int s = 0; s < 2; s++) {
                int32_t t = c->blocks[b].succ[s];
                if (t < 0)
                    continue;
                if (!seen[t]) {
                    seen[t] = true, changed = true;
                    memcpy(ent[t], v, sizeof v);
                } else {
                    bv_meet(ent[t], v, &changed);
                }
            }
        }
    }
    for (uint32_t b = 0; b < c->nblocks; b++)
        if (!seen[b])
            memcpy(in[b], start, sizeof start);
    free(ent);
    free(seen);
}

/* Rule 4 for the branch on exec ending block `from`: S, the blocks the
 * wave may run while a lane that is off skips them, is every block
 * reachable from `start` without entering `join`, where the lane goes. */
static bool skip_region(struct an *a, uint32_t from, int32_t start, int32_t join)
{
    struct wave_cfg *c = &a->c;
    uint32_t br = c->blocks[from].last;
    if (start < 0 || join < 0 || start == join)
        return true;
    bool *in_s = mem_calloc(c->nblocks, sizeof *in_s);
    uint32_t *stack = mem_calloc(c->nblocks, sizeof *stack);
    uint16_t (*val)[BV_REGS] = mem_calloc(c->nblocks, sizeof *val);
    bool *seen = mem_calloc(c->nblocks, sizeof *seen);
    bool ok = in_s && stack && val && seen;
    if (!ok)
        ok = refuse(a, br, "out of memory analysing it");
    uint32_t top = 0;
    if (ok) {
        in_s[start] = true;
        stack[top++] = (uint32_t)start;
    }
    while (ok && top) {
        uint32_t b = stack[--top];
        for (int s = 0; s < 2; s++) {
            int32_t t = c->blocks[b].succ[s];
            if (t >= 0 && t != join && !in_s[t])
                in_s[t] = true, stack[top++] = (uint32_t)t;
        }
    }
    /* a skipping lane's bits at the start: known constants, else what
     * each register held; exec's 0 (it is off) */
    uint16_t v0[BV_REGS], out[BV_REGS];
    bool reaches_join = false;
    const uint16_t *at_branch = a->bits_end[from];
    for (unsigned r = 0; r < BV_REGS; r++)
        v0[r] = at_branch[r] == BV_ZERO || at_branch[r] == BV_ONE ? at_branch[r] : (uint16_t)(BV_ENTRY + r);
    bv_write(v0, &exec_opnd, BV_ZERO);
    if (ok) {
        memcpy(val[start], v0, sizeof v0);
        seen[start] = true;
    }
    for (bool changed = ok; changed;) {
        changed = false;
        for (uint32_t b = 0; b < c->nblocks; b++) {
            if (!in_s[b] || !seen[b])
                continue;
            uint16_t v[BV_REGS];
            memcpy(v, val[b], sizeof v);
            for (uint32_t i = c->blocks[b].first; i <= c->blocks[b].last; i++)
                bv_step(v, &c->in[i], &a->wr[i], true);
            for (int s = 0; s < 2; s++) {
                int32_t t = c->blocks[b].succ[s];
                if (t < 0)
                    continue;
                if (t == join) {
                    if (!reaches_join)
                        memcpy(out, v, sizeof v), reaches_join = true;
                    else {
                        bool ignored = false;
                        bv_meet(out, v, &ignored);
                    }
                    continue;
                }
                if (!seen[t]) {
                    seen[t] = true, changed = true;
                    memcpy(val[t], v, sizeof v);
                } else {
                    bv_meet(val[t], v, &changed);
                }
            }
        }
    }
    /* the checks, on the fixed point: no barrier or end, exec keeps the
     * lane off, and what it writes is dead where the lane rejoins or holds
     * there, in the lane's bit, what the lane itself holds */
    struct rset written = {{0}};
    uint32_t first_writer[BV_REGS];
    for (uint32_t b = 0; ok && b < c->nblocks; b++) {
        if (!in_s[b])
            continue;
        uint16_t v[BV_REGS];
        memcpy(v, val[b], sizeof v);
        for (uint32_t i = c->blocks[b].first; ok && i <= c->blocks[b].last; i++) {
            const struct wave_instr *in = &c->in[i];
            if (in->op == WAVE_OP_S_BARRIER || in->op == WAVE_OP_S_ENDPGM) {
                ok = refuse(a, i, "the wave may run it while a lane that is off skips from the branch at 0x%" PRIx64
                                  ", and the lane would %s (rule 4)",
                            c->pc[br], in->op == WAVE_OP_S_BARRIER ? "miss the barrier" : "run on alone");
                break;
            }
            const struct rset *wr = &a->wr[i];
            for (unsigned r = 0; r < BV_REGS; r++)
                if (rs_has(wr, r) && !rs_has(&written, r))
                    rs_add(&written, r), first_writer[r] = i;
            bv_step(v, in, wr, true);
            if (rs_has(wr, WAVE_SREG_EXEC_LO) && bv_read(v, &exec_opnd) != BV_ZERO) {
                char nb[24];
                ok = refuse(a, i, "it may turn on a lane that is off and skips from the branch at 0x%" PRIx64
                                  " (exec from %s, whose bit for that lane is not known to be 0) (rule 4)",
                            c->pc[br],
                            in->src[0].kind == WAVE_OPND_SGPR ? reg_name(&in->src[0], nb, sizeof nb) : "a constant");
            }
        }
    }
    if (ok && !reaches_join)
        ok = refuse(a, br, "the wave never comes back to 0x%" PRIx64 " where a lane that is off goes (rule 4)",
                    c->pc[c->blocks[join].first]);
    const struct rset *live = &a->live_in[join];
    for (unsigned r = 0; ok && r < BV_REGS; r++) {
        if (!rs_has(&written, r) || r == WAVE_SREG_EXEC_LO || r == WAVE_SREG_EXEC_HI)
            continue;
        if (out[r] == v0[r])
            continue;   /* a lane mask merged under exec: the lane's bit is what it held */
        if (r == RS_SCC)
            a->facts.scc_blind = true;
        else
            a->facts.sgpr_blind[r / 32] |= 1u << (r % 32);
        if (!rs_has(live, r))
            continue;
        char rn[16];
        if (r == RS_SCC)
            snprintf(rn, sizeof rn, "scc");
        else
            snprintf(rn, sizeof rn, "s%u", r);
        ok = refuse(a, first_writer[r], "it writes %s where the wave may be while a lane that is off skips from the "
                                        "branch at 0x%" PRIx64 ", and %s is read after 0x%" PRIx64 " where the lane "
                                        "rejoins: the lane would read what it held before (rule 4)",
                    rn, c->pc[br], rn, c->pc[c->blocks[join].first]);
    }
    free(in_s);
    free(stack);
    free(val);
    free(seen);
    return ok;
}

kiln_result lane_analyse(const struct wave_code *code, const struct wave_kernel *k, struct lane_facts *facts)
{
    struct an a = {.k = k};
    KILN_TRY(wave_cfg_make(code, k, "Lane", &a.c));
    kiln_result r = KILN_OK;
    a.mask_in = mem_calloc(a.c.nblocks + 1, sizeof *a.mask_in);
    a.lds_in = mem_calloc(a.c.nblocks + 1, sizeof *a.lds_in);
    a.live_in = mem_calloc(a.c.nblocks + 1, sizeof *a.live_in);
    a.bits_end = mem_calloc(a.c.nblocks + 1, sizeof *a.bits_end);
    a.rd = mem_calloc(a.c.n + 1, sizeof *a.rd);
    a.wr = mem_calloc(a.c.n + 1, sizeof *a.wr);
    for (uint32_t i = 0; a.rd && a.wr && i < a.c.n; i++)
        uses(&a.c.in[i], &a.rd[i], &a.wr[i]);
    if (!a.mask_in || !a.lds_in || !a.live_in || !a.bits_end || !a.rd || !a.wr)
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory analysing kernel '%s' for the Lane level", k->name);
    bool ok = r == KILN_OK && forward(&a);
    if (ok) {
        liveness(&a);
        constant_bits(&a);
    }
    for (uint32_t b = 0; ok && b < a.c.nblocks; b++) {
        const struct wave_block *bl = &a.c.blocks[b];
        unsigned op = a.c.in[bl->last].op;
        if (op == WAVE_OP_S_CBRANCH_EXECZ)        /* off: to the target; the wave may go on */
            ok = skip_region(&a, b, bl->succ[1], bl->succ[0]);
        else if (op == WAVE_OP_S_CBRANCH_EXECNZ)  /* off: on; the wave may go to the target */
            ok = skip_region(&a, b, bl->succ[0], bl->succ[1]);
    }
    if (r == KILN_OK && !ok)
        r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': the Lane level cannot run %s at offset 0x%" PRIx64 ": %s",
                       k->name, wave_op_name(a.c.in[a.at].op), a.c.pc[a.at], a.why);
    if (r == KILN_OK && facts)
        *facts = a.facts;
    free(a.mask_in);
    free(a.lds_in);
    free(a.live_in);
    free(a.bits_end);
    free(a.rd);
    free(a.wr);
    wave_cfg_finish(&a.c);
    return r;
}

kiln_result lane_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
{
    KILN_TRY(lane_analyse(code, k, NULL));
    return wf_check_shape(code, k, caps, true, false);
}
