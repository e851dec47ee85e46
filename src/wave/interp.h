/* SPDX-License-Identifier: MIT */
/*
 * interp: the reference interpreter, the oracle of last resort that every
 * faster level of the wave recompiler is judged against. It is written for
 * obvious correctness, not speed.
 *
 * The model (docs/wave.md says it for users):
 * - A dispatch is groups[0..2] workgroups of block[0..2] work-items. The
 *   groups run one after another (x fastest); a group's work-items are
 *   split into wave64s, lane i of wave w being the flat work-item
 *   64 * w + i (x fastest). The waves of a group run round-robin, each
 *   until it ends or reaches s_barrier; when every wave that has not ended
 *   waits at a barrier they all go on. A wave's lanes past the group's
 *   size start with their exec bits clear.
 * - A wave is a scalar file of 256 dwords indexed by operand code (ir.h:
 *   exec, vcc, m0, flat_scratch are registers at their codes), scc, 256
 *   VGPRs of 64 lanes, and a program counter. Registers start as the
 *   kernel descriptor asks (loader.h's wave_setup), the rest zero.
 * - Memory is one flat 64-bit address map of regions: the code object's
 *   image (read-only, at WAVE_IMAGE_BASE), the kernarg segment, the
 *   dispatch packet and a queue block (read-only), each buffer the caller
 *   binds (read-write, at an address kiln picks, 64 KiB apart), and the
 *   scratch of one group's waves. LDS is the group's own, addressed by DS
 *   instructions and by flat addresses in the shared aperture (high dword
 *   WAVE_SHARED_HI); scratch is reached through the private segment
 *   buffer (MUBUF), scratch_* and flat addresses in the private aperture
 *   (WAVE_PRIVATE_HI), swizzled per lane as the hardware does (dword
 *   interleaved across the 64 lanes). An access that is not wholly inside
 *   one region is an error naming the address, never a host access.
 *   Memory operations complete at once (s_waitcnt is a no-op), atomics are
 *   executed lane by lane in lane order.
 * - Floating point is IEEE binary32/64 with round to nearest even;
 *   denormals are flushed (to a zero of their sign) on input and output
 *   as MODE.FP_DENORM says for each precision, and min, max and med3 quiet
 *   a signalling NaN as MODE.IEEE says (the round field is kept but not
 *   acted on); v_rcp, v_rsq, v_sqrt, v_exp, v_log, v_sin and
 *   v_cos are computed by the C library in the operand's precision, which
 *   is at least as accurate as the hardware's.
 * - Every run is bounded by three budgets, each KILN_ERR_LIMIT naming
 *   itself, its value, the kernel, the group and (past a group's start)
 *   the wave and its pc when passed:
 *   - max_instructions (default WAVE_DEFAULT_MAX_INSTRUCTIONS, 200
 *     million) counts instructions across all waves;
 *   - max_work (default WAVE_DEFAULT_MAX_WORK, 500 million units) counts
 *     work: a unit per instruction and one per WAVE_WORK_UNIT_BYTES
 *     (1 KiB) of memory cleared or moved. A group is charged as it starts
 *     for what it starts with zeroed: its LDS, its waves' scratch (the
 *     kernel's declared size) and their vector registers (64 KiB a
 *     wave); every access (global, scratch, LDS, scalar memory, atomics)
 *     for the bytes it moves. The count follows the model, not what kiln
 *     does (it clears again only the scratch a group wrote), so where a
 *     run stops is the same on every machine. By default a run that does
 *     little but clear memory stops after about 500 GB of it: 7 to 10 s
 *     on a 2-core server, within the time budget on a slower machine;
 *   - max_seconds (default WAVE_DEFAULT_MAX_SECONDS, 60) is wall-clock
 *     time, read as each group starts and every WAVE_CLOCK_EVERY
 *     instructions; where it stops depends on the machine.
 * - An instruction the decoder accepts but the interpreter does not run is
 *   KILN_ERR_INVALID naming it (docs/wave.md lists them).
 */
#ifndef KILN_WAVE_INTERP_H
#define KILN_WAVE_INTERP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln.h"
#include "wave/loader.h"

#define WAVE_LANES 64
#define WAVE_VGPRS 256
#define WAVE_DEFAULT_MAX_INSTRUCTIONS 200000000ull
#define WAVE_DEFAULT_MAX_WORK 500000000ull
#define WAVE_DEFAULT_MAX_SECONDS 60.0
#define WAVE_WORK_UNIT_BYTES 1024u        /* memory cleared or moved that counts as one unit of work */
#define WAVE_CLOCK_EVERY 4096u            /* instructions between readings of the clock */
/* The apertures' high dwords (what src_shared_base and src_private_base
 * read, and hidden_shared_base/hidden_private_base hold). */
#define WAVE_SHARED_HI 0x00010000u
#define WAVE_PRIVATE_HI 0x00020000u
/* Where kiln maps the other regions (the image is at WAVE_IMAGE_BASE). */
#define WAVE_KERNARG_BASE 0x0000200000000000ull
#define WAVE_DISPATCH_BASE 0x0000200100000000ull
#define WAVE_QUEUE_BASE 0x0000200200000000ull
#define WAVE_SCRATCH_BASE 0x0000300000000000ull
#define WAVE_BUFFER_BASE 0x0000400000000000ull
#define WAVE_BUFFER_SPACING (1ull << 32)   /* buffer i at WAVE_BUFFER_BASE + i * this; each below 4 GiB */
#define WAVE_MAX_GROUP 1024                /* work-items per workgroup */
#define WAVE_MAX_SCRATCH (256u << 20)      /* scratch bytes of one group's waves */

/* One explicit argument's value, in the kernel's argument order. */
enum wave_value_kind {
    WAVE_VALUE_BYTES,    /* a by-value argument: bytes[0..size) little-endian, size equal to the argument's */
    WAVE_VALUE_BUFFER,   /* a global buffer: data[0..size), borrowed and written in place */
    WAVE_VALUE_LOCAL,    /* a __local pointer: size bytes of dynamic LDS */
};
struct wave_value {
    enum wave_value_kind kind;
    uint8_t bytes[16];
    void *data;
    uint64_t size;
};

struct wave_run_desc {
    const struct wave_code *code;      /* borrowed */
    const struct wave_kernel *kernel;  /* one of code's kernels */
    uint32_t groups[3];                /* 0 counts as 1 */
    uint32_t block[3];                 /* 0 counts as 1; the product at most WAVE_MAX_GROUP */
    const struct wave_value *args;     /* kernel->explicit_count of them; borrowed */
    uint32_t arg_count;
    uint64_t max_instructions;         /* 0: WAVE_DEFAULT_MAX_INSTRUCTIONS */
    uint64_t max_work;                 /* units (an instruction, or WAVE_WORK_UNIT_BYTES bytes); 0: WAVE_DEFAULT_MAX_WORK */
    double max_seconds;                /* wall-clock time, finite and above 0; 0: WAVE_DEFAULT_MAX_SECONDS */
    /* observe: keep each wave's final registers (see observe.h) */
    bool observe;
    kiln_context context;              /* a device level's (kiln_wave_run_desc.context); borrowed, zero: its own */
    /* Bisection (kiln_wave_diff): every wave stops, as if it ended, once it
     * has executed stop_after instructions (0: never); watch_pc counts the
     * executions of the instruction at that image offset (0: none). */
    uint64_t stop_after;
    uint64_t watch_pc;
};

/* The final state of one wave. */
struct wave_final {
    uint32_t group[3];
    uint32_t wave;                     /* index within its group */
    uint64_t lanes;                    /* the lanes that are work-items */
    uint32_t sgpr[128];                /* codes 0..127: s0..s101, flat_scratch, xnack_mask, vcc, ttmp, m0, exec */
    uint32_t scc;
    uint32_t (*vgpr)[WAVE_LANES];      /* vgpr_count registers; owned */
    /* What the level that ran could not see (observe.h): such a register
     * holds 0 and is never compared. The reference sees everything. */
    bool scc_blind;
    uint32_t sgpr_blind[4];            /* bit s: scalar code s */
    uint32_t vgpr_blind[8];            /* bit v: v<v> */
    /* For bisection: the instructions the wave executed, the image offset
     * of the last of them, and the executions of desc.watch_pc among them. */
    uint64_t steps;
    uint64_t last_pc;
    uint64_t watch_count;
};

/* What a run leaves (wave_result_finish frees it). */
struct wave_result {
    uint64_t instructions;             /* executed, every wave counted */
    uint64_t bytes;                    /* memory cleared or moved, as the work budget counts it */
    uint32_t waves;                    /* waves run */
    uint32_t vgpr_count;               /* registers kept per wave: the kernel's allocation */
    struct wave_final *finals;         /* when observed: one per wave, dispatch order; owned */
    uint32_t final_count;
    /* per buffer argument (in argument order): a bitmap of the bytes the
     * run wrote, one bit a byte; owned */
    uint8_t **written;
    uint32_t written_count;            /* desc->arg_count */
};

/* desc with its defaults applied (groups and block of 0 as 1, the
 * budgets of 0 as their defaults): what wave_run runs. desc is borrowed;
 * the copy's pointers are desc's. */
struct wave_run_desc wave_run_defaults(const struct wave_run_desc *desc);

/* Runs the dispatch. On failure the buffers hold what was written before
 * it; the message names the instruction, its offset in the image, the wave
 * and what went wrong. result is caller storage, filled on success and on
 * failure (instructions and bytes count what ran); free it with
 * wave_result_finish. */
kiln_result wave_run(const struct wave_run_desc *desc, struct wave_result *result)
    __attribute__((warn_unused_result));
void wave_result_finish(struct wave_result *r);

#endif
