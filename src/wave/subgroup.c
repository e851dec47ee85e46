/* SPDX-License-Identifier: MIT */
/*
 * subgroup.c: the Subgroup level's check and run (wavefront.h's
 * wf_shape.lockstep). One invocation per guest lane, a workgroup of the
 * program a guest wave, its 64 lanes in lockstep: every lane runs every
 * instruction the wave runs, lane masks are whole in every lane (a
 * compare's bits gathered through shared memory), and what crosses lanes
 * (readlane, readfirstlane, writelane, DPP, ds_swizzle, ds_permute,
 * ds_bpermute) goes through shared memory between barriers that the whole
 * wave reaches, since its control flow is the wave's. A memory write is
 * seen by every lane before the next instruction (a barrier after it), as
 * in the wave's lockstep, so an LDS word one lane writes and another reads
 * with no s_barrier between reads as on the hardware. It runs any number
 * of lanes a device's subgroup holds (lavapipe's 8, the H200's 32): the
 * logical wave64 is the workgroup, not one subgroup.
 *
 * An atomic whose result depends on the order lanes reach it (a value
 * returned, a swap) takes its lanes in turn, in lane order, as the wave
 * does (wavefront_gen.c's turns). What it does not run yet: a group of
 * more than one wave that shares LDS or barriers (its waves would need one
 * workgroup, each with its own control flow).
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "wave/cfg.h"
#include "wave/wavefront.h"

/* What the level refuses by its own rule (the translation's refusals
 * come after): a group of several waves sharing LDS or barriers. */
static kiln_result sg_rules(const struct wave_code *code, const struct wave_kernel *k, uint32_t items)
{
    struct wave_cfg c;
    KILN_TRY(wave_cfg_make(code, k, "Subgroup", &c));
    bool shares = k->group_segment_size > 0;
    for (uint32_t i = 0; i < k->explicit_count; i++)
        shares |= k->args[i].kind == WAVE_ARG_DYNAMIC_SHARED_POINTER;
    kiln_result r = KILN_OK;
    for (uint32_t i = 0; i < c.n; i++)
        shares |= c.in[i].op == WAVE_OP_S_BARRIER;
    if (shares && items > WAVE_LANES)
        r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': a group of %u work-items shares LDS or barriers across %u "
                       "waves; the Subgroup level runs a wave a workgroup and does not run such groups yet",
                       k->name, items, (items + WAVE_LANES - 1) / WAVE_LANES);
    wave_cfg_finish(&c);
    return r;
}

kiln_result sg_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
{
    uint32_t items = k->reqd_size[0] ? k->reqd_size[0] * k->reqd_size[1] * k->reqd_size[2] : WAVE_LANES;
    KILN_TRY(sg_rules(code, k, items));
    return wf_check_shape(code, k, caps, true, true);
}

kiln_result sg_run(const struct wave_run_desc *desc, struct wave_result *res)
{
    memset(res, 0, sizeof *res);
    struct wave_run_desc d = wave_run_defaults(desc);
    KILN_TRY(sg_rules(desc->code, desc->kernel, d.block[0] * d.block[1] * d.block[2]));
    return wf_run_lanes(desc, NULL, true, res);   /* its translation refuses what it does not translate */
}
