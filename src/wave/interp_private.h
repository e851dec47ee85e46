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
    uint64_t steps, last_pc, watch_count;   /* bisection (wave_run_desc.stop_after, watch_pc) */
    uint32_t mode;                 /* HW_REG_MODE */
    bool gpr_idx_on;
    uint32_t gpr_idx, gpr_idx_mode; /* s_set_gpr_idx_on's index and mode bits (1 src0, 2 src1, 4 src2, 8 dst) */
};

/* A run: its memory regions, decode cache, budgets and where it is
 * (interp.c). */
#define MAX_REGIONS (8 + WAVE_MAX_ARGS)

struct region {
    uint64_t base, size;
    uint8_t *data;
    bool writable;
    uint8_t *written;   /* a bit per byte, or NULL */
    const char *what;
    bool dirty_kept;    /* scratch: dirty_lo..dirty_hi spans the bytes written since it was cleared */
    uint64_t dirty_lo, dirty_hi;
};

struct machine {
    const struct wave_run_desc *d;
    const struct wave_code *code;
    const struct wave_kernel *k;
    struct region regions[MAX_REGIONS];
    uint32_t nregions;
    uint8_t *kernarg;
    uint64_t kernarg_size;
    uint8_t dispatch[64];
    uint8_t queue[256];
    uint8_t *lds;
    uint32_t lds_size;
    uint8_t *scratch;
    uint64_t scratch_size;
    uint32_t lane_scratch;   /* scratch bytes per work-item */
    struct region *scratch_region;
    /* the image as dwords, and the decode cache over the executable span */
    uint32_t *words;
    size_t nwords;
    int32_t *slot;           /* per dword of the span: instrs index + 1, 0 not decoded */
    struct wave_instr *instrs;
    uint32_t ninstrs, cap;
    /* the budgets: instructions, work (instructions and bytes, in units)
     * and wall-clock time */
    uint64_t executed, budget;
    uint64_t bytes, work_budget;
    uint64_t start_ns, time_budget_ns;
    double max_seconds;
    /* where a failure is: a wave at an instruction, else a group as it
     * starts (cur_group), else the dispatch */
    const uint32_t *cur_group;
    const struct wave *cur;
    const struct wave_instr *cur_in;
    uint64_t cur_pc;
};


static inline uint64_t wv_exec(const struct wave *w)
{
    return (uint64_t)w->s[WAVE_SREG_EXEC_HI] << 32 | w->s[WAVE_SREG_EXEC_LO];
}
static inline uint64_t wv_vcc(const struct wave *w)
{
    return (uint64_t)w->s[WAVE_SREG_VCC_HI] << 32 | w->s[WAVE_SREG_VCC_LO];
}

/* The dispatch's machine, as a run of desc starts it: its regions (the
 * image, the kernarg segment, the dispatch packet and queue, each buffer
 * argument, the scratch), LDS size and budgets, and groups and block with
 * their defaults. m is zeroed storage from mem_calloc; free it with
 * interp_machine_free whatever this returns. Other levels build their
 * memory from the same regions, so addresses agree with the reference. */
kiln_result interp_machine_setup(struct machine *m, const struct wave_run_desc *desc, uint32_t groups[3],
                                 uint32_t block[3]) __attribute__((warn_unused_result));
void interp_machine_free(struct machine *m);
/* w as wave index of group g starts: its registers as the kernel
 * descriptor asks (loader.h's wave_setup), exec its work-item lanes, MODE
 * from the descriptor, the rest of its scalar state zero. w->v must hold
 * at least 3 registers: v0..v2 are written (zero where no work-item id
 * goes), the others are the caller's to clear. */
void interp_wave_start(struct machine *m, struct wave *w, const uint32_t g[3], uint32_t index, const uint32_t block[3]);

/* Fails the run naming the current instruction; returns KILN_ERR_INVALID
 * (or code). */
kiln_result interp_fail(struct machine *m, kiln_result code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A scalar operand code's dword (specials computed). */
uint32_t interp_sget(const struct wave *w, unsigned code);
/* Executes one vector ALU instruction (VOP1, VOP2, VOPC, VOP3A/B, VOP3P,
 * in any encoding) on w. */
kiln_result interp_valu(struct machine *m, struct wave *w, const struct wave_instr *in);

/* interp_mem.c: the memory instructions' tables, built once (any thread
 * may call it first), and the instructions themselves. */
void interp_mem_tables(void);

/* Shared by interp.c, interp_mem.c and interp_salu.c. */
kiln_result interp_ds(struct machine *m, struct wave *w, const struct wave_instr *in);
kiln_result interp_smem(struct machine *m, struct wave *w, const struct wave_instr *in);
kiln_result interp_vmem(struct machine *m, struct wave *w, const struct wave_instr *in);
kiln_result interp_salu(struct machine *m, struct wave *w, const struct wave_instr *in, uint64_t next);
uint8_t *interp_flat_at(struct machine *m, struct wave *w, uint64_t a, uint32_t n, bool write, int lane);
uint8_t *interp_lds_at(struct machine *m, uint64_t off, uint32_t n, int lane);
/* n little-endian bytes at p, and back. */
static inline uint64_t interp_ld(const uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}
static inline void interp_st(uint8_t *p, uint64_t v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
uint8_t *interp_mem_at(struct machine *m, uint64_t a, uint32_t n, bool write, int lane);
void interp_sdst64(struct wave *w, const struct wave_instr *in, uint64_t v);
void interp_sdst32(struct wave *w, const struct wave_instr *in, uint32_t v);
void interp_sset(struct wave *w, unsigned code, uint32_t v);
uint32_t interp_sv32(const struct wave *w, const struct wave_operand *o);
uint64_t interp_sv64(const struct wave *w, const struct wave_operand *o);
uint32_t interp_imm_of(const struct wave_instr *in);
void interp_set_exec(struct wave *w, uint64_t e);

/* The vector ALU's view of one lane of one instruction (interp_valu.c,
 * interp_lane.c). */
struct vctx {
    struct machine *m;
    struct wave *w;
    const struct wave_instr *in;
    int lane;
    int src0_lane;   /* DPP: the lane src0 is read from; -1: none (bound_ctrl), src0 reads 0 */
};

/* Shared by interp_valu.c and interp_lane.c. */
uint32_t interp_raw32(const struct vctx *c, unsigned n);
uint64_t interp_raw64(const struct vctx *c, unsigned n, bool fp);
uint32_t interp_mbits(const struct vctx *c, unsigned n);
bool interp_lane_op(struct vctx *c, uint64_t *res, bool *flag);
bool interp_lane_vop3p(struct vctx *c, uint64_t *res);

float interp_fa(const struct vctx *c, unsigned n);
double interp_da(const struct vctx *c, unsigned n);
float interp_ha(const struct vctx *c, unsigned n);
uint32_t interp_raw16(const struct vctx *c, unsigned n, bool fp);

#endif
