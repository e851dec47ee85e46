/* SPDX-License-Identifier: MIT */
/*
 * level.c: the table of levels (level.h). The reference interpreter is row
 * 0; the Lane, Wavefront and Subgroup levels follow it.
 */
#include "wave/level.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/lane.h"
#include "wave/wavefront.h"

kiln_result wave_kernel_decodes(const struct wave_code *code, const struct wave_kernel *k)
{
    size_t nwords;
    uint32_t *words = wave_code_words(code, &nwords);
    if (!words)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory decoding kernel '%s'", k->name);
    kiln_result r = KILN_OK;
    uint64_t end = k->code_addr + k->code_size;
    for (uint64_t pc = k->code_addr; pc < end;) {
        struct wave_instr in;
        int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &in);
        if (n <= 0) {
            r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': %s", k->name, err_last());
            break;
        }
        pc += 4ull * (unsigned)n;
    }
    free(words);
    return r;
}

/* The reference runs what the decoder accepts, on no device; an
 * instruction it decodes but does not run is refused when the run reaches
 * it (docs/wave.md lists them), since the analysis cannot know whether a
 * run reaches it. */
static kiln_result reference_check(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps)
{
    (void)caps;
    return wave_kernel_decodes(code, k);
}

const struct wave_level wave_levels[] = {
    {"reference", "the reference interpreter, on the CPU: the oracle every level is judged against", reference_check,
     wave_run, true},
    {"lane", "one GPU invocation per guest lane, translated to GLSL and run by kiln, where lanes never meet",
     lane_check, lane_run, false},
    {"wavefront", "one GPU invocation simulating a whole 64-lane wave, translated to GLSL and run by kiln", wf_check,
     wf_run, true},
    {"subgroup", "one GPU invocation per guest lane, a workgroup a wave in lockstep, lanes meeting through shared "
                 "memory: runs what crosses lanes", sg_check, sg_run, true},
};
const uint32_t wave_level_count = KILN_ARRAY_LEN(wave_levels);

kiln_result wave_level_resolve(const char *name, const struct wave_level **out)
{
    *out = NULL;
    if (!name)
        name = wave_levels[0].name;
    for (uint32_t i = 0; i < wave_level_count; i++) {
        if (strcmp(name, wave_levels[i].name))
            continue;
        *out = &wave_levels[i];
        return KILN_OK;
    }
    char list[256] = "";
    for (uint32_t i = 0; i < wave_level_count; i++) {
        size_t at = strlen(list);
        snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", wave_levels[i].name);
    }
    return KILN_RAISE(KILN_ERR_INVALID, "no level is named '%s' (the levels: %s)", name, list);
}

/* Cheapest first, as bench_wave measures them (docs/wave.md has the
 * figures). The reference, on the host, runs everything the decoder takes
 * and is the slowest by far: always the last resort. On a CPU device
 * (lavapipe, measured) the Wavefront level is the cheapest: the device
 * runs invocations side by side in SIMD lanes either way, and Lane repeats
 * the wave's scalar work in each of its 64 invocations, Subgroup that and
 * its barriers (saxpy on 65,536 items: 19, 45 and 71 ms). On a GPU Lane
 * comes first, then Subgroup (64 invocations a wave, where the Wavefront
 * level runs a wave as one looping over its lanes: a thousand threads for
 * a million items): an order bench_wave is to confirm on the GPU machine,
 * which was not lent when it was set. */
static const char *const gpu_order[WAVE_AUTO_LEVELS] = {"lane", "subgroup", "wavefront", "reference"};
static const char *const cpu_order[WAVE_AUTO_LEVELS] = {"wavefront", "lane", "subgroup", "reference"};

const char *const *wave_auto_order(const kiln_caps *caps)
{
    return caps && caps->device_type == KILN_DEVICE_CPU ? cpu_order : gpu_order;
}

kiln_result wave_level_choose(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps,
                              const struct wave_level **out, char *why, size_t cap)
{
    *out = NULL;
    if (cap)
        why[0] = 0;
    const char *const *order = wave_auto_order(caps);
    for (uint32_t i = 0; i < WAVE_AUTO_LEVELS; i++) {
        const struct wave_level *row;
        if (wave_level_resolve(order[i], &row) != KILN_OK)
            continue;   /* defensive: every name of the order is a built row */
        if (row->check(code, k, caps) == KILN_OK) {
            *out = row;
            return KILN_OK;
        }
        size_t at = strlen(why);
        if (at + 1 < cap)
            snprintf(why + at, cap - at, "%s: %s\n", row->name, err_last());
    }
    return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': no level runs it:\n%s", k->name, why);
}

uint8_t **wave_buffers_keep(const struct wave_run_desc *d)
{
    uint8_t **kept = mem_calloc(d->arg_count ? d->arg_count : 1, sizeof *kept);
    for (uint32_t i = 0; kept && i < d->arg_count; i++) {
        if (d->args[i].kind != WAVE_VALUE_BUFFER || !d->args[i].size)
            continue;
        if (!(kept[i] = mem_alloc((size_t)d->args[i].size))) {
            wave_buffers_free(kept, d);
            return NULL;
        }
        memcpy(kept[i], d->args[i].data, (size_t)d->args[i].size);
    }
    return kept;
}

void wave_buffers_put(uint8_t **kept, const struct wave_run_desc *d)
{
    for (uint32_t i = 0; kept && i < d->arg_count; i++)
        if (kept[i])
            memcpy(d->args[i].data, kept[i], (size_t)d->args[i].size);
}

void wave_buffers_free(uint8_t **kept, const struct wave_run_desc *d)
{
    for (uint32_t i = 0; kept && i < d->arg_count; i++)
        free(kept[i]);
    free(kept);
}
