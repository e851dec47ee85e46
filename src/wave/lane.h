/* SPDX-License-Identifier: MIT */
/*
 * lane: the Lane level, one GPU invocation per guest lane, and the
 * analysis that says when that is faithful.
 *
 * The translation is the Wavefront level's (wavefront_gen.c) with each
 * vector instruction's lane loop cut to the invocation's own lane: a
 * lane keeps its own VGPRs, and computes the wave's scalar instructions
 * itself, as every lane of its wave does. A lane mask (exec, vcc, a saved
 * exec) is then right in the lane's own bit alone, and exec's branches
 * (s_cbranch_execz, s_cbranch_execnz) test that bit: a lane that is off
 * skips what the wave would run for the others.
 *
 * That is faithful when (docs/wave.md, "The Lane level", states it for
 * people; lane_check.c checks it):
 * 1. no instruction reads another lane's value (v_readlane,
 *    v_readfirstlane of a VGPR, v_writelane, DPP, ds_swizzle, ds_permute,
 *    ds_bpermute);
 * 2. a lane mask is only combined bit by bit (s_and_b64 .. s_xnor_b64,
 *    s_mov_b64, s_cselect_b64, the saveexec family), written to exec, or
 *    read per lane (v_cndmask's mask, v_addc's carry): never read as a
 *    number (s_bcnt1, s_ff1, s_cmp, a VALU source, the SCC a mask's
 *    operation sets, s_cbranch_vccz);
 * 3. no read may see what another lane wrote with no s_barrier between:
 *    an LDS read after an LDS write, an atomic (memory or LDS) that
 *    returns what it found (a wave's lanes run in lockstep and in lane
 *    order; invocations do not);
 * 4. for each branch on exec, what the wave runs while a lane is off and
 *    skipping leaves that lane nothing to read: every scalar written
 *    there is dead where the lane rejoins, or a mask whose bit for that
 *    lane is provably what the lane holds; exec never turns the lane back
 *    on there; and there is no s_barrier or s_endpgm there.
 * Scalars written where lanes may skip are the ones Lane cannot see in
 * its observation (observe.h's blind masks).
 */
#ifndef KILN_WAVE_LANE_H
#define KILN_WAVE_LANE_H

#include "kiln.h"
#include "wave/interp.h"
#include "wave/loader.h"

/* What the analysis leaves a run. */
struct lane_facts {
    uint32_t sgpr_blind[4];   /* bit s: scalar code s is written where lanes may skip */
    bool scc_blind;
};

/* KILN_OK when the Lane level runs k faithfully (facts filled, when not
 * NULL); KILN_ERR_INVALID naming the instruction, its offset and which
 * rule it breaks. */
kiln_result lane_analyse(const struct wave_code *code, const struct wave_kernel *k, struct lane_facts *facts)
    __attribute__((warn_unused_result));

/* The level's row (level.h): the analysis, then the translation's own
 * refusals. */
kiln_result lane_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
    __attribute__((warn_unused_result));
kiln_result lane_run(const struct wave_run_desc *desc, struct wave_result *out) __attribute__((warn_unused_result));

#endif
