/* SPDX-License-Identifier: MIT */
/*
 * decode: gfx9 (gfx900) machine code to the IR of ir.h, one instruction at
 * a time, and back to text as LLVM's disassembler prints it.
 *
 * The decoder is table-driven from ops.def: an encoding whose family,
 * opcode or fields it does not know is an error naming the byte offset and
 * the dwords, never a guess. It never reads past the buffer it is given: an
 * instruction whose literal or second dword lies beyond it is an error too.
 * Families decoded: SOP1, SOP2, SOPK, SOPC, SOPP, SMEM, VOP1, VOP2, VOPC,
 * VOP3 (a and b), VOP3P, SDWA, DPP, FLAT, GLOBAL, SCRATCH, MUBUF, DS.
 * MIMG, MTBUF, EXP and VINTRP are refused by name (wave_decode's message
 * says which).
 */
#ifndef KILN_WAVE_DECODE_H
#define KILN_WAVE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "wave/ir.h"

/* Decodes the instruction at byte offset `at` (a multiple of 4) of code,
 * which holds nwords dwords (little-endian as in the code object, already
 * in host order). On success fills *out and returns its length in dwords
 * (1..3). On failure returns KILN_ERR_INVALID with a message naming the
 * byte offset, the dwords and what was not understood ("byte offset 0x40:
 * dwords 0xd1fe0000 0x00000000: VOP3 opcode 0x1fe is no gfx900
 * instruction"). code is borrowed; *out is written even on failure (zeroed). */
int wave_decode(const uint32_t *code, size_t nwords, size_t at, struct wave_instr *out);

/* The name of the encoding a first dword selects by its leading bits (and,
 * for VOP1/VOP2/VOPC, an src0 of 0xf9 or 0xfa; for FLAT, the segment):
 * "SOP1" .. "MUBUF" as wave_family_name spells the families, "SDWA",
 * "DPP", or one the decoder refuses: "MIMG", "MTBUF", "EXP", "VINTRP",
 * "unknown". Never NULL; needs only the first dword. */
const char *wave_encoding_name(uint32_t first_dword);

/* Prints inst as LLVM's disassembler does ("v_add_f32_e32 v0, 1.0, v1")
 * into buf (cap bytes, always NUL-terminated when cap > 0). Returns the
 * length the full text has, as snprintf does. */
size_t wave_print(const struct wave_instr *inst, char *buf, size_t cap);

#endif
