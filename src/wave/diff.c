/* SPDX-License-Identifier: MIT */
/*
 * diff.c: two levels' runs of one kernel compared, and a difference
 * bisected to the first instruction after which they differ (kiln_wave_diff,
 * `kiln wave diff`): the differential oracle's localisation.
 *
 * Every level can stop each wave once it has executed N instructions, as
 * if it ended there (wave_run_desc.stop_after), and report how far each
 * wave got, the offset of its last instruction and how often it ran a
 * watched one. Runs stopped at N compare the same for N below the first
 * diverging instruction and differ from it on: N is searched by doubling,
 * then halving. The wave is the one whose register differs at N, or, where
 * only memory does, the first wave whose N-th instruction writes memory.
 * Each run starts from the caller's buffers as given, and they are given
 * back so.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "base/bytes.h"
#include "wave/decode.h"
#include "wave/level.h"
#include "wave/observe.h"

struct bisect {
    const struct wave_level *a, *b;
    const struct wave_run_desc *base;
    kiln_context ctx;    /* every run's: a device level's programs are kept on it between runs */
    uint8_t **saved;     /* each buffer argument's bytes as given */
    uint32_t runs;
};

static void restore(const struct bisect *bs) { wave_buffers_put(bs->saved, bs->base); }

/* One observed run at level, stopped after `stop` instructions a wave (0:
 * never), watching `watch`. */
static kiln_result run_at(struct bisect *bs, const struct wave_level *level, uint64_t stop, uint64_t watch,
                          struct wave_result *res, struct bytes *obs)
{
    restore(bs);
    struct wave_run_desc d = *bs->base;
    d.context = bs->ctx;
    d.observe = true;
    d.stop_after = stop;
    d.watch_pc = watch;
    bs->runs++;
    kiln_result r = level->run(&d, res);
    if (r == KILN_OK && obs)
        r = wave_observe_encode(&d, res, obs);
    return r;
}

/* Whether the two levels' runs stopped at `stop` differ; the first
 * difference in why, the differing wave in *wave (-1: not a register). */
static kiln_result differ(struct bisect *bs, uint64_t stop, bool *diff, char *why, size_t cap, int64_t *wave)
{
    struct wave_result ra, rb;
    struct bytes oa = {0}, ob = {0};
    kiln_result r = run_at(bs, bs->a, stop, 0, &ra, &oa);
    if (r == KILN_OK)
        r = run_at(bs, bs->b, stop, 0, &rb, &ob);
    else
        memset(&rb, 0, sizeof rb);
    bool same = true;
    if (r == KILN_OK)
        r = wave_observe_compare_at(oa.p, oa.len, ob.p, ob.len, &same, why, cap, wave);
    *diff = !same;
    wave_result_finish(&ra);
    wave_result_finish(&rb);
    free(oa.p);
    free(ob.p);
    return r;
}

/* Whether the instruction at offset (of the image's words) writes memory:
 * a store or an atomic. */
static bool writes_memory(const uint32_t *words, size_t nwords, uint64_t offset)
{
    struct wave_instr in;
    if (wave_decode(words, nwords, (size_t)offset, &in) <= 0)
        return false;
    const struct wave_op_info *info = wave_op_info(in.op);
    return info && (info->flags & (WAVE_F_STORE | WAVE_F_ATOMIC));
}

static kiln_result locate(struct bisect *bs, uint64_t n, int64_t wave, kiln_wave_diff_report *out)
{
    const struct wave_code *code = bs->base->code;
    size_t nwords;
    uint32_t *words = wave_code_words(code, &nwords);
    if (!words)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave diff: out of memory decoding the code object");
    struct wave_result res;
    kiln_result r = run_at(bs, bs->a, n, 0, &res, NULL);
    if (r == KILN_OK && !res.final_count)
        r = KILN_RAISE(KILN_ERR_INVALID, "wave diff: the run at step %" PRIu64 " kept no waves", n);
    struct wave_instr in;
    if (r == KILN_OK && (wave < 0 || (uint64_t)wave >= res.final_count)) {
        wave = 0;   /* only memory differs: the first wave whose n-th instruction writes it */
        for (uint32_t i = 0; i < res.final_count; i++)
            if (res.finals[i].steps == n && writes_memory(words, nwords, res.finals[i].last_pc)) {
                wave = i;
                break;
            }
    }
    uint64_t pc = 0;
    if (r == KILN_OK) {
        const struct wave_final *f = &res.finals[wave];
        pc = f->last_pc;
        memcpy(out->group, f->group, sizeof out->group);
        out->wave = f->wave;
        out->step = f->steps;
        out->offset = pc;
    }
    wave_result_finish(&res);
    if (r == KILN_OK)
        r = run_at(bs, bs->a, n, pc, &res, NULL);
    if (r == KILN_OK) {
        out->execution = res.finals[wave].watch_count;
        if (wave_decode(words, nwords, (size_t)pc, &in) > 0)
            wave_print(&in, out->instruction, sizeof out->instruction);
        out->bisected = true;
    }
    wave_result_finish(&res);
    free(words);
    return r;
}

kiln_result wave_diff(const struct wave_level *a, const struct wave_level *b, const struct wave_run_desc *base,
                      kiln_wave_diff_report *out)
{
    memset(out, 0, sizeof *out);
    if (a == b)
        return KILN_RAISE(KILN_ERR_INVALID, "wave diff: level '%s' against itself: the same program twice proves "
                          "nothing (give two levels)",
                          a->name);
    struct bisect bs = {.a = a, .b = b, .base = base, .ctx = base->context};
    bool own_ctx = false;
    if (!bs.ctx.id) {   /* one context for every run, so a device level compiles its program once */
        kiln_result rc = kiln_context_create(&(kiln_context_desc){.specialization = -1}, &bs.ctx);
        if (rc != KILN_OK)
            return KILN_RAISE(rc, "wave diff: kiln_context_create failed (%s)", kiln_result_name(rc));
        own_ctx = true;
    }
    bs.saved = wave_buffers_keep(base);
    if (!bs.saved) {
        if (own_ctx)
            kiln_context_destroy(bs.ctx);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave diff: out of memory keeping the buffer arguments");
    }
    kiln_result r = KILN_OK;
    /* the whole runs */
    struct wave_result ra = {0}, rb = {0};
    struct bytes oa = {0}, ob = {0};
    if (r == KILN_OK)
        r = run_at(&bs, a, 0, 0, &ra, &oa);
    if (r == KILN_OK)
        r = run_at(&bs, b, 0, 0, &rb, &ob);
    bool same = true;
    int64_t wave = -1;
    if (r == KILN_OK)
        r = wave_observe_compare_at(oa.p, oa.len, ob.p, ob.len, &same, out->first, sizeof out->first, &wave);
    uint64_t most = 1;
    for (uint32_t i = 0; i < ra.final_count; i++)
        most = KILN_MAX(most, ra.finals[i].steps);
    for (uint32_t i = 0; i < rb.final_count; i++)
        most = KILN_MAX(most, rb.finals[i].steps);
    wave_result_finish(&ra);
    wave_result_finish(&rb);
    free(oa.p);
    free(ob.p);
    out->same = r == KILN_OK && same;
    if (r == KILN_OK && !same && (!a->stops || !b->stops))
        snprintf(out->at_step, sizeof out->at_step, "not bisected: the %s level cannot stop a wave after its N-th "
                 "instruction (a lane counts only its own); the first difference is the whole runs'",
                 a->stops ? b->name : a->name);
    else if (r == KILN_OK && !same) {
        /* the least n whose stopped runs differ: doubling, then halving */
        uint64_t lo = 0, hi = 1;
        bool diff = false;
        char why[512];
        for (;;) {
            r = differ(&bs, hi, &diff, why, sizeof why, &wave);
            if (r != KILN_OK || diff || hi >= most)
                break;
            lo = hi;
            hi = KILN_MIN(hi * 2, most);
        }
        while (r == KILN_OK && diff && hi - lo > 1) {
            uint64_t mid = lo + (hi - lo) / 2;
            bool d2;
            int64_t w2;
            char why2[512];
            r = differ(&bs, mid, &d2, why2, sizeof why2, &w2);
            if (r != KILN_OK)
                break;
            if (d2) {
                hi = mid;
                wave = w2;
                memcpy(why, why2, sizeof why);
            } else {
                lo = mid;
            }
        }
        if (r == KILN_OK && diff) {
            snprintf(out->at_step, sizeof out->at_step, "%s", why);
            r = locate(&bs, hi, wave, out);
        }
    }
    out->runs = bs.runs;
    restore(&bs);
    wave_buffers_free(bs.saved, base);
    if (own_ctx)
        kiln_context_destroy(bs.ctx);
    return r;
}
