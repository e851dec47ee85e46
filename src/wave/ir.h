/* SPDX-License-Identifier: MIT */
/*
 * ir: the one representation of a guest GCN (gfx9) instruction that every
 * level of the wave recompiler uses: the decoder makes it, the printer
 * prints it, the reference interpreter and the translators read it.
 *
 * An instruction is an opcode (enum wave_op, one entry per operation of
 * ops.def, whatever encoding carried it), the encoding that carried it
 * (enum wave_enc: a VOP2 operation may arrive as e32, VOP3, SDWA or DPP),
 * up to two destinations and four sources (struct wave_operand), and the
 * modifiers of its encoding (struct wave_mods). Implicit operands are made
 * explicit: v_addc_co_u32_e32 has dst[1] = vcc and src[2] = vcc as its
 * VOP3 form has an sdst and an ssrc2, so no reader needs to know e32 from
 * e64.
 *
 * How operands are encoded
 * ------------------------
 * kind WAVE_OPND_SGPR: reg is the 8-bit scalar operand code of the ISA,
 *   used as an index into one scalar file of 256 dwords: 0..101 are
 *   s0..s101, 102/103 flat_scratch_lo/hi, 104/105 xnack_mask_lo/hi,
 *   106/107 vcc_lo/vcc_hi, 108..123 ttmp0..15, 124 m0, 126/127
 *   exec_lo/exec_hi (WAVE_SREG_*). Read-only specials are registers of the
 *   same file at their codes: src_shared_base 235 .. src_pops_exiting_wave_id
 *   239, vccz 251, execz 252, scc 253, lds_direct 254 (the operand code
 *   reads LDS at m0, one dword). Code 125 is reserved on gfx9 but LLVM's
 *   disassembler reads it as null (reads zero, writes are dropped): kiln
 *   accepts it as that, WAVE_SREG_NULL. count is the number of consecutive
 *   dwords (1, 2, 3, 4, 8, 16): s[4:5] is {reg 4, count 2}; vcc is
 *   {106, 2}; exec is {126, 2}.
 * kind WAVE_OPND_VGPR: reg is the vector register (0..255, not the 9-bit
 *   source code), count consecutive registers: v[2:3] is {reg 2, count 2}.
 * kind WAVE_OPND_CONST: an inline constant; value holds its operand code
 *   (128..208 integers 0..64 and -1..-16; 240..248 the float constants
 *   0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 4.0, -4.0, 1/(2*pi)). Its bits depend
 *   on the operand's type: wave_const_bits() gives them for 16, 32 and 64
 *   bit operands. count as for registers (2 for a 64-bit source).
 * kind WAVE_OPND_LITERAL: the 32-bit literal dword following the
 *   instruction, in value (for a 64-bit float operand the hardware takes it
 *   as the high dword, for a 64-bit integer operand zero-extends it).
 * kind WAVE_OPND_IMM: an immediate field of the encoding that LLVM prints
 *   as an operand: SOPK's and SOPP's simm16 (value sign-extended where the
 *   op treats it as signed: branches, s_movk_i32), SMEM's immediate offset,
 *   v_madmk/v_madak's constant (also the literal), s_setreg_imm32's
 *   literal. Branch targets stay as the simm16 in dwords relative to the
 *   next instruction.
 * kind WAVE_OPND_NONE: absent (a memory op without vaddr: "off").
 *
 * Per family (dst/src slots; "data" of stores and atomics is a source):
 *   SOP1, SOP2, SOPC, VOP1, VOP2, VOP3 (a): dst[0] = destination,
 *     src[0..2] = sources in ISA order (v_swap_b32 writes src[0]'s
 *     register too; v_mac/v_madmk/v_madak read their constant or dst as
 *     LLVM prints them: v_madmk_f32 v0, v1, K, v2 is src[0] v1, src[1] K
 *     (IMM), src[2] v2; v_mac_f32 has src[2] = dst[0]). VOP3b and VOPC-in-VOP3 put the
 *     scalar destination in dst[1] (VOPC: dst[0] is NONE, dst[1] is the
 *     mask, vcc for e32). v_readlane/v_readfirstlane have an SGPR dst[0].
 *     VOPC's VOP3 sdst and v_readfirstlane_b32's sdst are 8-bit fields:
 *     LLVM reads a read-only special code there (src_shared_base, src_scc,
 *     ...) as a destination, and so does kiln; a reader refuses to write
 *     one.
 *   SOPK: dst[0] = sdst where the op writes it, src[0] = sdst as a source
 *     where the op reads it (s_cmpk_*, s_addk_i32 reads and writes it),
 *     src[1] = the simm16 (IMM). s_setreg_b32: src[0] = the register,
 *     src[1] = hwreg. s_setreg_imm32_b32: src[0] = literal, src[1] = hwreg.
 *   SOPP: src[0] = simm16 where the op has one.
 *   SMEM: dst[0] = sdata for loads (and returning atomics), src[0] = sbase
 *     (count 2, or 4 for s_buffer_*), src[1] = the offset (IMM or SGPR),
 *     src[2] = sdata for stores and atomics.
 *   DS: dst[0] = vdst, src[0] = addr, src[1] = data0, src[2] = data1;
 *     mods.offset0/offset1 (and offset = offset1<<8|offset0 for the ops
 *     that take one 16-bit offset), mods.gds.
 *   MUBUF: dst[0] = vdata for loads and returning atomics, src[0] = vaddr
 *     (NONE without offen and idxen, count 2 with both), src[1] = srsrc
 *     (count 4), src[2] = soffset (SGPR or CONST), src[3] = vdata for stores
 *     and atomics; mods.offset (12 bits), offen, idxen, glc, slc, lds.
 *   FLAT, GLOBAL, SCRATCH: dst[0] = vdst, src[0] = vaddr (count 2 for
 *     flat and for global without saddr, 1 otherwise; NONE for scratch with
 *     saddr), src[1] = saddr (NONE when "off"), src[2] = vdata; mods.offset
 *     (signed for global and scratch), glc, slc, lds.
 *
 * Details of the families above:
 *   SMEM: the immediate offset is 21 bits, signed (value and mods.offset
 *     hold it sign-extended); an SGPR offset is the low 7 bits of the
 *     second dword. s_atc_probe/s_atc_probe_buffer: src[2] = the probe bits
 *     (IMM, the sdata field). s_dcache_discard*: src[0] = sbase, src[1] =
 *     the offset, no data. s_memtime, s_memrealtime: dst[0] (count 2).
 *   MUBUF: with lds set a load's data goes to LDS at m0; dst[0] stays the
 *     vdata field, as LLVM prints it. buffer_store_lds_dword has no vdata.
 *     Atomics' returned data (glc) is dst[0] with the width of one value
 *     (cmpswap returns one of its two).
 *   FLAT: the offset is 13 bits, unsigned; GLOBAL, SCRATCH: 13 bits, signed.
 *   DS: ds_gws_init/sema_br/barrier take their value in the addr field
 *     (src[0]), as LLVM encodes them; ds_append/consume/read_addtid have
 *     only dst[0]; ds_write_addtid_b32 only src[1].
 */
#ifndef KILN_WAVE_IR_H
#define KILN_WAVE_IR_H

#include <stdbool.h>
#include <stdint.h>

/* Encoding families; an op's family is the encoding it belongs to (a VOP2
 * op is WAVE_FAM_VOP2 even when a VOP3 encoding carries it). VOP3A is the
 * VOP3-only ops with abs/neg/omod, VOP3B those with a scalar destination. */
#define WAVE_FAMILIES(F)                                                                           \
    F(SOP1) F(SOP2) F(SOPK) F(SOPC) F(SOPP) F(SMEM) F(VOP1) F(VOP2) F(VOPC) F(VOP3A) F(VOP3B)       \
    F(VOP3P) F(DS) F(FLAT) F(GLOBAL) F(SCRATCH) F(MUBUF)

enum wave_family {
#define WAVE_FAM_ENUM(f) WAVE_FAM_##f,
    WAVE_FAMILIES(WAVE_FAM_ENUM)
#undef WAVE_FAM_ENUM
    WAVE_FAM_COUNT
};

/* Per-op flags (the last column of ops.def). */
enum {
    WAVE_F_NOE64 = 1u << 0,   /* VOP1/VOP2: no VOP3 form (v_madmk_f32, v_swap_b32) */
    WAVE_F_NOSUFFIX = 1u << 1, /* printed without _e32/_e64 (v_nop, v_readfirstlane_b32) */
    WAVE_F_SDWA = 1u << 2,     /* an SDWA form exists */
    WAVE_F_DPP = 1u << 3,      /* a DPP form exists */
    WAVE_F_VCC_IN = 1u << 4,   /* e32 reads vcc as its last source (v_cndmask, v_addc) */
    WAVE_F_VCC_OUT = 1u << 5,  /* e32 writes vcc (carry-out); VOP3 form is VOP3b */
    WAVE_F_LOAD = 1u << 6,     /* memory: returns data into dst[0] */
    WAVE_F_STORE = 1u << 7,    /* memory: writes data from a source */
    WAVE_F_ATOMIC = 1u << 8,   /* memory: atomic; returns the old value when glc is set */
    WAVE_F_BRANCH = 1u << 9,   /* SOPP/SOPK: simm16 is a branch offset in dwords */
    WAVE_F_SIGNED = 1u << 10,  /* SOPK: simm16 is sign-extended */
    WAVE_F_NOSRC = 1u << 11,   /* SOPP: no simm16 operand printed */
    WAVE_F_MAC = 1u << 12,     /* VOP2 v_mac/v_fmac: the destination is also a source */
};

/* Op kinds from ops.def: X(ID, "llvm name", FAMILY, opcode, dst, s0, s1,
 * s2, flags). */
enum wave_op {
    WAVE_OP_INVALID = 0,
#define X(id, name, fam, opc, d, s0, s1, s2, fl) WAVE_OP_##id,
#include "ops.def"
#undef X
    WAVE_OP_COUNT
};

/* What ops.def says about an op. Widths are in dwords, 0 for an absent
 * operand; their meaning per family is ops.def's opening comment. */
struct wave_op_info {
    const char *name;  /* LLVM's spelling without _e32/_e64/_sdwa/_dpp */
    uint8_t family;    /* enum wave_family */
    uint16_t opcode;   /* the opcode field of the family's own encoding */
    uint8_t dst, src[3];
    uint16_t flags;    /* WAVE_F_* */
};

/* The encoding an instruction arrived in. */
enum wave_enc {
    WAVE_ENC_NATIVE = 0, /* the family's own encoding (e32 for VOP1/VOP2/VOPC) */
    WAVE_ENC_VOP3,       /* a VOP1/VOP2/VOPC op in the VOP3 encoding (_e64) */
    WAVE_ENC_SDWA,       /* a VOP1/VOP2/VOPC op with the SDWA dword (_sdwa) */
    WAVE_ENC_DPP,        /* a VOP1/VOP2 op with the DPP dword (_dpp) */
};

/* Scalar operand codes the architecture reserves (WAVE_OPND_SGPR's reg). */
enum {
    WAVE_SREG_FLAT_SCRATCH_LO = 102,
    WAVE_SREG_FLAT_SCRATCH_HI = 103,
    WAVE_SREG_XNACK_MASK_LO = 104,
    WAVE_SREG_XNACK_MASK_HI = 105,
    WAVE_SREG_VCC_LO = 106,
    WAVE_SREG_VCC_HI = 107,
    WAVE_SREG_TTMP0 = 108,
    WAVE_SREG_M0 = 124,
    WAVE_SREG_NULL = 125,  /* reserved on gfx9; LLVM decodes it as null (reads 0) */
    WAVE_SREG_EXEC_LO = 126,
    WAVE_SREG_EXEC_HI = 127,
    WAVE_SREG_SHARED_BASE = 235,
    WAVE_SREG_SHARED_LIMIT = 236,
    WAVE_SREG_PRIVATE_BASE = 237,
    WAVE_SREG_PRIVATE_LIMIT = 238,
    WAVE_SREG_POPS_EXITING_WAVE_ID = 239,
    WAVE_SREG_VCCZ = 251,
    WAVE_SREG_EXECZ = 252,
    WAVE_SREG_SCC = 253,
    WAVE_SREG_COUNT = 256, /* size of the scalar file indexed by reg */
};

enum wave_opnd_kind {
    WAVE_OPND_NONE = 0,
    WAVE_OPND_SGPR,
    WAVE_OPND_VGPR,
    WAVE_OPND_CONST,
    WAVE_OPND_LITERAL,
    WAVE_OPND_IMM,
};

struct wave_operand {
    uint8_t kind;   /* enum wave_opnd_kind */
    uint8_t count;  /* dwords: 1, 2, 3, 4, 8, 16 */
    uint16_t reg;   /* SGPR: scalar code; VGPR: register number */
    uint32_t value; /* CONST: the operand code; LITERAL, IMM: the value */
};

/* Modifiers. Source bit masks have bit i for src[i]. */
struct wave_mods {
    /* VOP3, SDWA, DPP: negate and absolute value of each float source.
     * VOP3P: neg is neg_lo, abs holds neg_hi (as the encoding does). */
    uint8_t neg, abs;
    uint8_t clamp;  /* VOP3/VOP3P/SDWA clamp bit */
    uint8_t omod;   /* VOP3/SDWA output modifier: 0 none, 1 *2, 2 *4, 3 /2 */
    uint8_t op_sel;    /* VOP3 (bit 3 = dst) and VOP3P op_sel */
    uint8_t op_sel_hi; /* VOP3P op_sel_hi (bits 0..2) */
    /* SDWA: selects are 0..3 BYTE_0..3, 4/5 WORD_0/1, 6 DWORD. */
    uint8_t dst_sel, dst_unused; /* dst_unused: 0 pad, 1 sext, 2 preserve */
    uint8_t src_sel[2];
    uint8_t sext;   /* SDWA: sign-extend mask of src[0..1]; VOP3 and DPP:
                     * the integer sources of a float op (v_ldexp's
                     * exponent, v_cvt_pk_u8_f32's) whose neg bit LLVM
                     * reads as sext (neg and abs are then clear) */
    /* DPP: dpp_ctrl as encoded, reserved values included (LLVM decodes
     * them; a reader refuses them by value) */
    uint16_t dpp_ctrl;
    uint8_t row_mask, bank_mask, bound_ctrl;
    /* memory */
    int32_t offset;    /* SMEM imm offset, MUBUF/FLAT offset (signed for GLOBAL/SCRATCH) */
    uint8_t offset0, offset1; /* DS */
    uint8_t glc, slc, lds, gds, offen, idxen, tfe, nv; /* tfe as encoded (MUBUF):
                     * a load's status dword lands after vdata's count */
};

struct wave_instr {
    uint16_t op;     /* enum wave_op */
    uint8_t enc;     /* enum wave_enc */
    uint8_t words;   /* length in dwords, literal included (1..3) */
    struct wave_operand dst[2];
    struct wave_operand src[4];
    struct wave_mods mods;
    uint32_t raw[3]; /* the dwords decoded */
};

/* The info for op, or NULL for WAVE_OP_INVALID and out-of-range values. */
const struct wave_op_info *wave_op_info(unsigned op);
/* LLVM's name of op ("v_add_f32"), "invalid" for none. */
const char *wave_op_name(unsigned op);
/* The family's name ("VOP2"). */
const char *wave_family_name(unsigned family);

/* The bits of inline constant code (128..208, 240..248) as a source of
 * bits 16, 32 or 64: integers sign-extended to the width, float constants
 * in the width's IEEE format (1/(2*pi) is 0x3118 as f16, 0x3e22f983 as f32,
 * 0x3fc45f306dc9c882 as f64). Returns 0 for a code that is no constant. */
uint64_t wave_const_bits(uint32_t code, unsigned bits);

#endif
