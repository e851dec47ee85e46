/* SPDX-License-Identifier: MIT */
/*
 * decode_private.h: what the decoder's files share (decode.c: the tables,
 * operands, scalar encodings and the dispatch; decode_vector.c: the vector
 * encodings).
 */
#ifndef KILN_WAVE_DECODE_PRIVATE_H
#define KILN_WAVE_DECODE_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "wave/ir.h"

/* ops.def as tables: by op, and by family and opcode. */
extern const struct wave_op_info wave_op_table[WAVE_OP_COUNT];
extern const uint16_t wave_op_by_code[WAVE_FAM_COUNT][1024];

/* What the VOP3 encoding's modifier fields may hold for an op. */
struct vop3_mods {
    uint8_t srcmods; /* mask of sources taking abs/neg */
    uint8_t intsrc;  /* of those, integer sources: neg is sext, abs is ignored */
    bool clamp, omod;
    uint8_t opsel;   /* op_sel bits the op takes (bit 3: dst) */
};

/* The decoding context. */
struct dec {
    const uint32_t *code;
    size_t n, i; /* dwords in code; the instruction's first dword */
    struct wave_instr *out;
    unsigned len;  /* dwords of the encoding read so far */
    bool literal;  /* a literal dword follows the encoding */
    uint32_t lit;
    char why[160];
};

#define BITS(w, hi, lo) ((uint32_t)(((uint64_t)(w) >> (lo)) & ((1ull << ((hi) - (lo) + 1)) - 1)))

/* What a source field may hold. */
enum { A_VGPR = 1, A_CONST = 2, A_LIT = 4, A_SPECIAL = 8 };
#define SRC_ANY (A_VGPR | A_CONST | A_LIT | A_SPECIAL)

/* Fails the instruction with a message (always false). */
bool dec_fail(struct dec *d, const char *fmt, ...) KILN_PRINTF(2, 3);

/* Shared by decode.c and decode_vector.c. */
bool dec_ds(struct dec *d, uint32_t w);
bool dec_flat(struct dec *d, uint32_t w);
bool dec_mubuf(struct dec *d, uint32_t w);
bool dec_vop1(struct dec *d, uint32_t w);
bool dec_vop2(struct dec *d, uint32_t w);
bool dec_vop3p(struct dec *d, uint32_t w);
bool dec_vop3(struct dec *d, uint32_t w);
bool dec_vopc(struct dec *d, uint32_t w);
const struct wave_op_info *dec_lookup(struct dec *d, unsigned fam, unsigned opc);
bool dec_must_zero(struct dec *d, uint32_t value, const char *field);
unsigned dec_name_types(const char *name, const char *types[4]);
bool dec_sdst(struct dec *d, unsigned code, unsigned width, struct wave_operand *o,
                 const char *what);
bool dec_src_code(struct dec *d, unsigned code, unsigned width, unsigned allow,
                     struct wave_operand *o, const char *what);
struct vop3_mods dec_vop3_mods_of(const struct wave_op_info *info);
bool dec_vop_sdwa(struct dec *d, const struct wave_op_info *info, unsigned vsrc1, unsigned vdst);
bool dec_vreg(struct dec *d, unsigned reg, unsigned width, struct wave_operand *o,
                 const char *what);
bool dec_word(struct dec *d, unsigned k, uint32_t *w);

/* A type token (dec_name_types) of a float type. */
static inline bool dec_is_float(const char *t) { return t && t[0] == 'f'; }

#endif
