/* SPDX-License-Identifier: MIT */
/*
 * cfg: a kernel's code as its levels see it: the instructions in order,
 * decoded once, split into basic blocks with their successors. The
 * Wavefront and Lane translators take their blocks from here (one case
 * of the dispatcher each), the Lane level's analysis its flow graph.
 *
 * A block ends at a branch, at s_endpgm and at s_barrier (where a wave
 * of a group waits for the others: the dispatcher returns there, and the
 * block after it is a successor like a fall-through).
 */
#ifndef KILN_WAVE_CFG_H
#define KILN_WAVE_CFG_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln.h"
#include "wave/ir.h"
#include "wave/loader.h"

struct wave_block {
    uint32_t first, last;   /* instruction indices, inclusive */
    int32_t succ[2];        /* successor blocks (-1 none): the branch target, the next block */
};

struct wave_cfg {
    struct wave_instr *in;
    uint64_t *pc;           /* each instruction's image offset */
    uint32_t n;
    bool *leader;           /* starts a block */
    uint32_t *block_of;     /* each instruction's block */
    struct wave_block *blocks;
    uint32_t nblocks;
};

/* Decodes k and splits it: KILN_ERR_INVALID naming the offset of words
 * that do not decode, or a branch to no instruction of the kernel (level
 * says whose refusal it is). */
kiln_result wave_cfg_make(const struct wave_code *code, const struct wave_kernel *k, const char *level,
                          struct wave_cfg *c) __attribute__((warn_unused_result));
void wave_cfg_finish(struct wave_cfg *c);

bool wave_is_branch(unsigned op);
bool wave_ends_block(unsigned op);
/* The image offset a branch at pc jumps to. */
uint64_t wave_branch_target(uint64_t pc, const struct wave_instr *in);
/* The first IMM operand's value (a SOPP's or SOPK's simm16), 0 if none. */
uint32_t wave_imm_of(const struct wave_instr *in);

#endif
