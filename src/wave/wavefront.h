/* SPDX-License-Identifier: MIT */
/*
 * wavefront: the Wavefront level, one GPU invocation simulating a whole
 * 64-lane guest wave, run through kiln's own compile service, archive and
 * schemes like any caller of kiln.h.
 *
 * The translation (wavefront_gen.c) turns a kernel's IR into one GLSL
 * compute program (generated for shaderc: kiln's program input is GLSL):
 * - a workgroup of the program is a guest workgroup, one invocation per
 *   wave (local_size_x = its waves);
 * - a wave's scalar file is uint s[128] (operand codes 0..127: exec at
 *   126/127, vcc at 106/107, m0 at 124, each a 32-bit half: no 64-bit
 *   integers anywhere), scc a bool, its vector file uint v[vgprs * 64]
 *   (register-major, a lane's dword at v[r * 64 + lane]);
 * - a vector instruction is a loop over the 64 lanes whose write is a
 *   select under the exec mask (the old value read, the new one computed,
 *   the mask keeping one), never a branch; cross-lane reads (readlane,
 *   readfirstlane, writelane, mbcnt) are plain indexing into the arrays;
 * - control flow is a dispatcher: the kernel's basic blocks are the cases
 *   of one switch on the guest pc inside one loop, whose every iteration
 *   is counted against WF_BLOCK_BOUND: a run that reaches it fails naming
 *   the kernel and the bound, never returning a wrong observation (lavapipe
 *   stops every loop of an invocation after 65,535 iterations and returns
 *   what it has, so the bound is below that);
 * - lavapipe gives each invocation one budget of 65,535 loop iterations,
 *   every loop of the program drawing on it (a lane loop of 64 iterations
 *   included), and once it is spent ends each loop after one pass: a
 *   program's last loop, the canary, runs twice (its count read from the
 *   init words, so no compiler folds it) and a run whose canary did not
 *   fails naming the device's limit, never returning what the cut loops
 *   left;
 * - guest memory is one storage buffer (the arena) holding every region
 *   the reference maps (the code object's image, the kernarg segment, the
 *   dispatch packet and queue, each buffer argument), found by the
 *   address's high dword as in the reference's map (interp.h), so every
 *   address, and so every register, agrees with the reference's; an access
 *   outside them fails the run naming the address, the lane and the pc;
 *   bytes written are marked in a bitmap as the reference marks them;
 * - LDS is the workgroup's shared array, cleared at the start; s_barrier
 *   ends a phase: each wave runs until it ends or reaches a barrier, then
 *   the group's invocations meet at barrier() in control flow uniform
 *   across it (the phase loop's exit is read from shared memory), and the
 *   waves at the barrier go on together, as the reference runs them.
 *
 * What a kernel needs that the level does not translate (an instruction,
 * an encoding, a modifier, scratch) is
 * refused by wf_check before anything runs, naming the instruction, its
 * image offset and the reason.
 */
#ifndef KILN_WAVE_WAVEFRONT_H
#define KILN_WAVE_WAVEFRONT_H

#include "base/bytes.h"
#include "kiln.h"
#include "wave/interp.h"
#include "wave/loader.h"

/* Block transitions a wave may make before its run fails (below lavapipe's
 * 65,535 iterations a loop). */
#define WF_BLOCK_BOUND 65000u
/* Barrier episodes a workgroup may go through (each a loop iteration too). */
#define WF_PHASE_BOUND 16384u

/* Per wave, words of the setup the host writes and of the state the
 * program leaves. */
#define WF_INIT_WORDS (128u + 1u + 3u * 64u + 3u)   /* s[128], scc, v0..v2, the canary's 2, stop after, watched pc */
#define WF_OUT_HEAD 11u   /* status, pc, address lo/hi, lane, instructions lo/hi, scc, steps, last pc, watched */
/* The Lane and Subgroup levels' head: each lane's own status, pc, address
 * lo/hi, lane, instructions lo/hi, scc, steps, last pc and watched count
 * (the run makes WF_OUT_HEAD of them). */
#define WF_LANE_WORDS 11u
#define WF_LANE_HEAD (64u * WF_LANE_WORDS)

/* What a wave's run ended with (its out words' first). */
enum wf_status {
    WF_RUNNING = 0,
    WF_DONE = 1,          /* s_endpgm */
    WF_MEM_FAULT = 2,     /* an access outside every region (address, lane, pc) */
    WF_BOUND = 3,         /* WF_BLOCK_BOUND block transitions */
    WF_BAD_TARGET = 4,    /* a jump to no block of the kernel */
    WF_LDS_FAULT = 5,     /* an LDS access past the group's LDS (address, lane, pc) */
    WF_STOPPED = 6,       /* bisection: stopped after its steps, as if it ended */
    WF_DEVICE_LOOPS = 7,  /* the device cut the program's loops short (the canary, below) */
};

/* What the program is translated for. */
struct wf_shape {
    uint32_t waves;       /* per workgroup */
    uint32_t vgprs;       /* registers kept per wave */
    uint32_t regions;     /* entries of the region table */
    uint32_t lds_bytes;   /* the group's LDS */
    bool observe;         /* write every wave's registers out */
    bool bisect;          /* count every instruction, stop after the init's count, watch a pc */
    /* Waves that share nothing (no LDS, no barrier): WF_PACK of them to a
     * workgroup of the program, whatever their guest groups, so a device
     * runs them side by side; total is every wave's count. 0: a workgroup
     * of the program is a guest group. */
    uint32_t packed_total;
    /* The Lane level's program (lane.h): one invocation per lane, 64 a
     * wave, a workgroup a guest group; packed_total and bisect unused. */
    bool lane;
    /* With lane: the Subgroup level's (its lanes in lockstep: a workgroup a
     * wave, masks whole in every lane, lanes meeting through shared memory
     * at barriers the whole wave reaches, ordered atomics taken in lane
     * order); bisect used. */
    bool lockstep;
};

#define WF_PACK 64u

/* Whether k's waves share nothing: it declares no LDS and takes none by
 * argument, and has no s_barrier (so WF_PACK waves may share a workgroup
 * of the program). */
bool wf_independent(const struct wave_code *code, const struct wave_kernel *k);

/* KILN_OK when the level runs k faithfully on a device with caps (NULL: any
 * device), else KILN_ERR_INVALID naming the instruction, its offset and why. */
kiln_result wf_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
    __attribute__((warn_unused_result));
/* wf_check for the Wavefront level (lane false) or the Lane level's
 * translation (lane true: its analysis is lane.h's). */
kiln_result wf_check_shape(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps, bool lane,
                           bool lockstep) __attribute__((warn_unused_result));
/* Appends k's program for shape to glsl; KILN_ERR_INVALID as wf_check. */
kiln_result wf_translate(const struct wave_code *code, const struct wave_kernel *k, const struct wf_shape *shape,
                         struct bytes *glsl) __attribute__((warn_unused_result));
#ifdef KILN_TEST_HOOKS
/* Test hook: the translation of the instruction at this image offset (not
 * a branch) flips bit 0 of its first destination at the nth execution of
 * it in each wave (1: the first); offset 0 turns it off. */
void wf_test_corrupt(uint64_t offset, uint32_t nth);
#endif

/* Whether this thread's last Lane or Wavefront run failed because the
 * device cut its loops short (WF_DEVICE_LOOPS): a limit of the device, not
 * of the kernel, that auto may meet by running another level. */
bool wf_device_loops_ran_out(void);

/* The level's run (level.h's row). */
kiln_result wf_run(const struct wave_run_desc *desc, struct wave_result *out) __attribute__((warn_unused_result));

/* The Subgroup level's row (subgroup.c): its check, and its run. */
kiln_result sg_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
    __attribute__((warn_unused_result));
kiln_result sg_run(const struct wave_run_desc *desc, struct wave_result *out) __attribute__((warn_unused_result));
/* The Lane and Subgroup levels' runs (wavefront_run.c): lane, the Lane
 * level's analysis, or lockstep. */
struct lane_facts;
kiln_result wf_run_lanes(const struct wave_run_desc *desc, const struct lane_facts *lane, bool lockstep,
                         struct wave_result *out) __attribute__((warn_unused_result));

#endif
