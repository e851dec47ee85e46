/* SPDX-License-Identifier: MIT */
/*
 * cfg.c: a kernel's instructions and basic blocks (cfg.h).
 */
#include "wave/cfg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"

bool wave_is_branch(unsigned op)
{
    return op == WAVE_OP_S_BRANCH || op == WAVE_OP_S_CBRANCH_SCC0 || op == WAVE_OP_S_CBRANCH_SCC1 ||
           op == WAVE_OP_S_CBRANCH_VCCZ || op == WAVE_OP_S_CBRANCH_VCCNZ || op == WAVE_OP_S_CBRANCH_EXECZ ||
           op == WAVE_OP_S_CBRANCH_EXECNZ;
}

bool wave_ends_block(unsigned op) { return wave_is_branch(op) || op == WAVE_OP_S_ENDPGM || op == WAVE_OP_S_BARRIER; }

uint32_t wave_imm_of(const struct wave_instr *in)
{
    for (int i = 0; i < 4; i++)
        if (in->src[i].kind == WAVE_OPND_IMM)
            return in->src[i].value;
    return 0;
}

uint64_t wave_branch_target(uint64_t pc, const struct wave_instr *in)
{
    return pc + 4ull * in->words + (uint64_t)((int64_t)(int16_t)wave_imm_of(in) * 4);
}

void wave_cfg_finish(struct wave_cfg *c)
{
    free(c->in);
    free(c->pc);
    free(c->leader);
    free(c->block_of);
    free(c->blocks);
    memset(c, 0, sizeof *c);
}

/* The index of the instruction at pc, or -1. */
static int64_t index_of(const struct wave_cfg *c, uint64_t pc)
{
    uint32_t lo = 0, hi = c->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (c->pc[mid] < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->n && c->pc[lo] == pc ? (int64_t)lo : -1;
}

static kiln_result decode_all(const struct wave_code *code, const struct wave_kernel *k, struct wave_cfg *c)
{
    size_t nwords;
    uint32_t *words = wave_code_words(code, &nwords);
    if (!words)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory decoding kernel '%s'", k->name);
    uint64_t end = k->code_addr + k->code_size;
    size_t cap = (size_t)(k->code_size / 4) + 1;
    c->in = mem_calloc(cap, sizeof *c->in);
    c->pc = mem_calloc(cap, sizeof *c->pc);
    c->leader = mem_calloc(cap, sizeof *c->leader);
    c->block_of = mem_calloc(cap, sizeof *c->block_of);
    c->blocks = mem_calloc(cap, sizeof *c->blocks);
    kiln_result r = KILN_OK;
    if (!c->in || !c->pc || !c->leader || !c->block_of || !c->blocks)
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory decoding kernel '%s'", k->name);
    for (uint64_t pc = k->code_addr; r == KILN_OK && pc < end;) {
        int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &c->in[c->n]);
        if (n <= 0) {
            r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': %s", k->name, err_last());
            break;
        }
        c->pc[c->n++] = pc;
        pc += 4ull * (unsigned)n;
    }
    free(words);
    return r;
}

kiln_result wave_cfg_make(const struct wave_code *code, const struct wave_kernel *k, const char *level,
                          struct wave_cfg *c)
{
    memset(c, 0, sizeof *c);
    kiln_result r = decode_all(code, k, c);
    if (r == KILN_OK && c->n)
        c->leader[0] = true;
    for (uint32_t i = 0; r == KILN_OK && i < c->n; i++) {
        unsigned op = c->in[i].op;
        if (!wave_ends_block(op))
            continue;
        if (i + 1 < c->n)
            c->leader[i + 1] = true;
        if (wave_is_branch(op)) {
            uint64_t to = wave_branch_target(c->pc[i], &c->in[i]);
            int64_t t = index_of(c, to);
            if (t < 0)
                r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': %s at offset 0x%" PRIx64 " branches to 0x%" PRIx64
                               ", no instruction of the kernel (the %s level)",
                               k->name, wave_op_name(op), c->pc[i], to, level);
            else
                c->leader[t] = true;
        }
    }
    for (uint32_t i = 0; r == KILN_OK && i < c->n; i++) {
        if (c->leader[i]) {
            if (c->nblocks)
                c->blocks[c->nblocks - 1].last = i - 1;
            c->blocks[c->nblocks++] = (struct wave_block){.first = i, .succ = {-1, -1}};
        }
        c->block_of[i] = c->nblocks - 1;
    }
    if (r == KILN_OK && c->nblocks)
        c->blocks[c->nblocks - 1].last = c->n - 1;
    for (uint32_t b = 0; r == KILN_OK && b < c->nblocks; b++) {
        struct wave_block *bl = &c->blocks[b];
        unsigned op = c->in[bl->last].op;
        bool next = op != WAVE_OP_S_ENDPGM && op != WAVE_OP_S_BRANCH && b + 1 < c->nblocks;
        if (wave_is_branch(op))
            bl->succ[0] = (int32_t)c->block_of[index_of(c, wave_branch_target(c->pc[bl->last], &c->in[bl->last]))];
        if (next)
            bl->succ[1] = (int32_t)(b + 1);
    }
    if (r != KILN_OK)
        wave_cfg_finish(c);
    return r;
}
