/* SPDX-License-Identifier: MIT */
/*
 * level: the table of the wave recompiler's levels, the one seam a new
 * model of the guest wavefront plugs into.
 *
 * A row is a name, a line for people, and two functions: check, the
 * level's validity analysis (can it run this kernel faithfully on a device
 * with these caps, or which instruction at which image offset rules it
 * out), and run, which runs a dispatch and fills the result every level
 * fills alike (observe.h reads it into the one observation layout). Every
 * row is a built level (kiln_wave_level_info.built stays in the API for a
 * row added by name before its level).
 *
 * Adding a level: write its check and run (run through kiln.h's program
 * and scheme calls where it runs on a device), fill its row in level.c,
 * and add its cases to tests/wave/test_wavefront.c (the corpus at every
 * level) and tests/wave/test_wave_api.c (the table).
 */
#ifndef KILN_WAVE_LEVEL_H
#define KILN_WAVE_LEVEL_H

#include "kiln.h"
#include "kiln_wave.h"
#include "wave/interp.h"
#include "wave/loader.h"

struct wave_level {
    const char *name;
    const char *summary;
    /* KILN_OK when the level runs k faithfully on a device with caps (NULL:
     * no device); KILN_ERR_INVALID naming the instruction and its offset. */
    kiln_result (*check)(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps);
    kiln_result (*run)(const struct wave_run_desc *desc, struct wave_result *out);
    /* run honours stop_after and watch_pc (a diff bisects with it) */
    bool stops;
};

extern const struct wave_level wave_levels[];
extern const uint32_t wave_level_count;

/* The row named name (NULL: the reference): KILN_OK. An unknown name:
 * KILN_ERR_INVALID listing the table, *out NULL. */
kiln_result wave_level_resolve(const char *name, const struct wave_level **out) __attribute__((warn_unused_result));

/* "auto": the levels in the order it tries them on a device with caps
 * (NULL: a GPU), cheapest first (level.c says how the order was
 * measured); WAVE_AUTO_LEVELS of them. */
#define WAVE_AUTO_LEVELS 4u
const char *const *wave_auto_order(const kiln_caps *caps);

/* auto's choice for k on a device with caps (NULL: any): the first level
 * of wave_auto_order(caps) whose check passes, in *out; why[0..cap) holds a
 * line for each level ruled out before it ("lane: <its refusal>"). None
 * valid: KILN_ERR_INVALID with those lines. */
kiln_result wave_level_choose(const struct wave_code *code, const struct wave_kernel *k, const kiln_caps *caps,
                              const struct wave_level **out, char *why, size_t cap) __attribute__((warn_unused_result));

/* The buffer arguments of d as a run starts from them, so that another
 * run (a bisection's, auto's next level) starts from them too: NULL where
 * memory ran out. wave_buffers_put gives them back to d's buffers,
 * wave_buffers_free lets them go (both take NULL). */
uint8_t **wave_buffers_keep(const struct wave_run_desc *d);
void wave_buffers_put(uint8_t **kept, const struct wave_run_desc *d);
void wave_buffers_free(uint8_t **kept, const struct wave_run_desc *d);

/* kiln_wave_diff's work (diff.c): base run at levels a and b, compared,
 * a difference bisected; base's buffers are given back as they were. */
kiln_result wave_diff(const struct wave_level *a, const struct wave_level *b, const struct wave_run_desc *base,
                      kiln_wave_diff_report *out) __attribute__((warn_unused_result));

/* Decodes k's code from its first instruction to its end: KILN_OK, or
 * KILN_ERR_INVALID naming the offset and the words that do not decode. */
kiln_result wave_kernel_decodes(const struct wave_code *code, const struct wave_kernel *k)
    __attribute__((warn_unused_result));

#endif
