/* SPDX-License-Identifier: MIT */
/*
 * interp_private.h: what the interpreter's files share (interp.c: the
 * machine, memory, scalar and control instructions; interp_valu.c: the
 * vector ALU). Nothing outside the interpreter includes it.
 */
#ifndef KILN_WAVE_INTERP_PRIVATE_H
#define KILN_WAVE_INTERP_PRIVATE_H

#include "wave/interp.h"
#include "wave/ir.h"

enum wave_status { WS_RUN, WS_BARRIER, WS_DONE };

struct wave {
    uint32_t s[WAVE_SREG_COUNT];   /* by operand code; the read-only specials are computed */
    uint32_t (*v)[WAVE_LANES];     /* WAVE_VGPRS registers */
    bool scc;
    uint64_t pc;                   /* image offset of the next instruction */
    enum wave_status status;
    uint32_t group[3], index;
    uint64_t lanes;                /* lanes that are work-items */
    uint32_t mode;                 /* HW_REG_MODE */
    bool gpr_idx_on;
    uint32_t gpr_idx, gpr_idx_mode; /* s_set_gpr_idx_on's index and mode bits (1 src0, 2 src1, 4 src2, 8 dst) */
};

struct machine;

static inline uint64_t wv_exec(const struct wave *w)
{
    return (uint64_t)w->s[WAVE_SREG_EXEC_HI] << 32 | w->s[WAVE_SREG_EXEC_LO];
}
static inline uint64_t wv_vcc(const struct wave *w)
{
    return (uint64_t)w->s[WAVE_SREG_VCC_HI] << 32 | w->s[WAVE_SREG_VCC_LO];
}

/* Fails the run naming the current instruction; returns KILN_ERR_INVALID
 * (or code). */
kiln_result interp_fail(struct machine *m, kiln_result code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A scalar operand code's dword (specials computed). */
uint32_t interp_sget(const struct wave *w, unsigned code);
/* Executes one vector ALU instruction (VOP1, VOP2, VOPC, VOP3A/B, VOP3P,
 * in any encoding) on w. */
kiln_result interp_valu(struct machine *m, struct wave *w, const struct wave_instr *in);

#endif
