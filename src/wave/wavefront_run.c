/* SPDX-License-Identifier: MIT */
/*
 * wavefront_run.c: the Wavefront level's run (wavefront.h). The dispatch's
 * memory is the reference's own (interp_machine_setup builds the same
 * regions at the same addresses, and interp_wave_start gives every wave
 * the same registers to start with), packed into one arena buffer; the
 * translated program runs through kiln.h like any caller's (its compile
 * shared, kept in the archive, run from a scheme), and what it leaves is
 * read back into the wave_result every level fills alike: the buffers and
 * their written bytes, each wave's registers when observed.
 *
 * On a context the caller gives, the programs are kept for later runs of
 * the same translation (a bisection's many runs, a benchmark's): a small
 * cache keyed by the context and the GLSL, an entry confirmed by a full
 * compare of the text and by the program's handle still resolving. On a
 * context of its own the run makes and destroys everything.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/interp_private.h"
#include "wave/lane.h"
#include "wave/wavefront.h"

/* Where each region lies in the arena and its written bitmap. */
struct placed {
    uint64_t arena_off;    /* bytes, 16-aligned */
    uint32_t written_off;  /* words of the bitmap buffer; writable regions only */
};

struct run {
    const struct wave_run_desc *d;
    const struct wave_kernel *k;
    struct machine *m;
    uint32_t groups[3], block[3], nwaves, total;
    kiln_context ctx;
    bool own_ctx;
    kiln_buffer buf[5];   /* arena, regions, written, init, out */
    kiln_program prog;
    bool prog_kept;       /* the kept programs' (not destroyed after the run) */
    const struct lane_facts *lane;   /* the Lane level's run: one invocation per lane */
    bool lockstep;        /* the Subgroup level's: one invocation per lane, a workgroup a wave */
    const char *level;    /* "Wavefront" or "Lane", for messages */
    kiln_scheme sch;
};

static kiln_result kiln_call(kiln_result r, const char *what, const char *kernel, const char *level)
{
    if (r == KILN_OK)
        return r;
    return KILN_RAISE(r, "the %s level's run of kernel '%s': %s failed (%s)", level, kernel, what, kiln_result_name(r));
}
#define CALL(r, what) KILN_TRY(kiln_call((r), (what), run->k->name, run->level))

static kiln_result make_buffer(struct run *run, int i, uint64_t size, const void *data, const char *label)
{
    CALL(kiln_buffer_create(run->ctx, &(kiln_buffer_desc){.size = size ? size : 4, .label = label}, &run->buf[i]),
         "kiln_buffer_create");
    if (data && size)
        CALL(kiln_buffer_upload(run->ctx, run->buf[i], 0, data, size), "kiln_buffer_upload");
    return KILN_OK;
}

/* ---- programs kept on callers' contexts ------------------------------------------------ */

#define WF_KEPT 16
static struct kept {
    uint64_t ctx;          /* its context's id; 0: a free entry */
    char *glsl;            /* owned */
    size_t len;
    kiln_program prog;
    uint64_t used;         /* for the least recently used's eviction */
} kept[WF_KEPT];
static uint64_t kept_clock;
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;   /* guards kept, kept_clock */

/* A kept program of ctx for glsl, or 0. */
static kiln_program kept_find(kiln_context ctx, const struct bytes *glsl)
{
    kiln_program p = {0};
    pthread_mutex_lock(&kept_mu);
    for (int i = 0; i < WF_KEPT; i++) {
        struct kept *e = &kept[i];
        if (e->ctx != ctx.id || e->len != glsl->len || memcmp(e->glsl, glsl->p, glsl->len))
            continue;
        kiln_program_state st;
        if (kiln_program_status(ctx, e->prog, &st) == KILN_OK && st != KILN_PROGRAM_FAILED) {
            e->used = ++kept_clock;
            p = e->prog;
        }
        break;
    }
    pthread_mutex_unlock(&kept_mu);
    return p;
}

/* Keeps prog for glsl on ctx, in place of an entry of the same text or of
 * the least recently used (its program destroyed where its context still
 * is). */
static void kept_add(kiln_context ctx, const struct bytes *glsl, kiln_program prog)
{
    char *text = mem_alloc(glsl->len + 1);
    if (!text)
        return;   /* not kept: the run destroys it */
    memcpy(text, glsl->p, glsl->len);
    pthread_mutex_lock(&kept_mu);
    struct kept *e = &kept[0];
    for (int i = 0; i < WF_KEPT; i++) {
        bool same = kept[i].ctx == ctx.id && kept[i].len == glsl->len && !memcmp(kept[i].glsl, glsl->p, glsl->len);
        if (same || !kept[i].ctx) {
            e = &kept[i];
            break;
        }
        if (kept[i].used < e->used)
            e = &kept[i];
    }
    if (e->ctx)
        (void)kiln_program_destroy((kiln_context){e->ctx}, e->prog);   /* a stale context refuses it: nothing to do */
    free(e->glsl);
    *e = (struct kept){.ctx = ctx.id, .glsl = text, .len = glsl->len, .prog = prog, .used = ++kept_clock};
    pthread_mutex_unlock(&kept_mu);
}

/* The translated program, compiled (a failure gives the compiler's log). */
static kiln_result make_program(struct run *run, const struct wf_shape *sh)
{
    struct bytes glsl = {0};
    kiln_result r = wf_translate(run->m->code, run->k, sh, &glsl);
    if (r == KILN_OK && getenv("KILN_WAVE_DUMP"))   /* the generated program, for people */
        fprintf(stderr, "%.*s", (int)glsl.len, (const char *)glsl.p);
    char name[160];
    snprintf(name, sizeof name, "%s.%s.comp", run->k->name, run->lane ? "lane" : "wavefront");
    if (r == KILN_OK && !run->own_ctx && (run->prog = kept_find(run->ctx, &glsl)).id) {
        run->prog_kept = true;
        free(glsl.p);
        return KILN_OK;
    }
    if (r == KILN_OK)
        r = kiln_call(kiln_program_create(run->ctx, &(kiln_program_desc){.source = (const char *)glsl.p,
                                                                           .source_len = glsl.len, .name = name,
                                                                           .optimize = -1},
                                          &run->prog),
                      "kiln_program_create", run->k->name, run->level);
    if (r == KILN_OK && !run->own_ctx) {
        kept_add(run->ctx, &glsl, run->prog);
        run->prog_kept = true;
    }
    free(glsl.p);
    KILN_TRY(r);
    r = kiln_program_wait(run->ctx, run->prog);
    if (r == KILN_ERR_COMPILE) {
        char log[2048] = "";
        size_t len = 0;
        if (kiln_program_log(run->ctx, run->prog, log, sizeof log, &len) != KILN_OK)
            snprintf(log, sizeof log, "(no log)");
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': its %s program did not compile (a translator "
                          "defect): %.1500s",
                          run->k->name, run->level, log);
    }
    CALL(r, "kiln_program_wait");
    return KILN_OK;
}

/* The group of wave wi (dispatch order: groups x fastest, a group's waves
 * in order). */
static void group_of(const struct run *run, uint32_t wi, uint32_t g[3])
{
    uint32_t gi = wi / run->nwaves;
    g[0] = gi % run->groups[0];
    g[1] = gi / run->groups[0] % run->groups[1];
    g[2] = gi / (run->groups[0] * run->groups[1]);
}

static _Thread_local bool loops_ran_out;   /* this thread's last run: WF_DEVICE_LOOPS */
bool wf_device_loops_ran_out(void) { return loops_ran_out; }

/* The first wave that did not end at s_endpgm, as an error. */
static kiln_result wave_failure(const struct run *run, const uint32_t *out, uint32_t out_words)
{
    const char *lv = run->level;
    for (uint32_t w = 0; w < run->total; w++) {
        const uint32_t *o = out + (size_t)w * out_words;
        if (o[0] == WF_DONE || o[0] == WF_STOPPED)
            continue;
        uint32_t g[3];
        group_of(run, w, g);
        char where[256];
        snprintf(where, sizeof where, "kernel '%s', group %u,%u,%u wave %u, at offset 0x%x", run->k->name, g[0], g[1],
                 g[2], w % run->nwaves, o[1]);
        uint64_t a = (uint64_t)o[3] << 32 | o[2];
        switch (o[0]) {
        case WF_MEM_FAULT:
            return KILN_RAISE(KILN_ERR_INVALID, "%s: %s 0x%016" PRIx64 " is in no region of the dispatch's memory "
                              "(the %s level)",
                              where, o[4] < 64 ? "a lane's access of address" : "a scalar access of address", a, lv);
        case WF_LDS_FAULT:
            return KILN_RAISE(KILN_ERR_INVALID, "%s: lane %u's LDS access at %u is past the group's %u bytes of LDS "
                              "(the %s level)",
                              where, o[4], o[2], run->m->lds_size, lv);
        case WF_BOUND:
            return KILN_RAISE(KILN_ERR_LIMIT, "%s: the wave made %u block transitions, the %s level's bound "
                              "(a longer run is refused rather than returned unfinished)",
                              where, WF_BLOCK_BOUND, lv);
        case WF_DEVICE_LOOPS:
            loops_ran_out = true;
            return KILN_RAISE(KILN_ERR_LIMIT, "%s: the device cut the %s level's loops short (lavapipe runs at most "
                              "65,535 loop iterations an invocation, and this wave's program needs more: %s): "
                              "refused rather than returned wrong",
                              where, lv, run->lane ? "about a dozen a block it runs" : "64 for each vector instruction");
        case WF_BAD_TARGET:
            return KILN_RAISE(KILN_ERR_INVALID, "%s: control reached offset 0x%x, no instruction of the kernel "
                              "(the %s level)",
                              where, o[1], lv);
        default:
            return KILN_RAISE(KILN_ERR_INVALID, "%s: the wave ended with status %u (the %s level)", where,
                              o[0], lv);
        }
    }
    return KILN_OK;
}

/* The Lane level's out records (a head per lane) made the Wavefront
 * level's, in place: the lowest lane that did not end at s_endpgm gives
 * the status (else lane 0's DONE), the longest lane the instruction
 * count, lane 0 scc (where scc is seen, every lane holds the wave's). */
static void lane_records(uint32_t *out, uint32_t waves, uint32_t dev_words, uint32_t out_words)
{
    for (uint32_t w = 0; w < waves; w++) {
        const uint32_t *o = out + (size_t)w * dev_words;
        uint32_t head[WF_OUT_HEAD] = {0}, pick = 0;
        uint64_t most = 0;
        for (uint32_t l = 0; l < 64; l++) {
            const uint32_t *e = o + l * WF_LANE_WORDS;
            if (e[0] != WF_DONE && o[pick * WF_LANE_WORDS] == WF_DONE)
                pick = l;
            most = KILN_MAX(most, (uint64_t)e[6] << 32 | e[5]);
        }
        const uint32_t *e = o + pick * WF_LANE_WORDS;
        memcpy(head, e, 5 * sizeof *head);
        head[5] = (uint32_t)most, head[6] = (uint32_t)(most >> 32), head[7] = o[7];
        head[8] = e[8], head[9] = e[9], head[10] = e[10];   /* a bisection's: every lane's alike in lockstep */
        uint32_t *dst = out + (size_t)w * out_words;   /* out_words < dev_words: never past the source */
        memmove(dst + WF_OUT_HEAD, o + WF_LANE_HEAD, (out_words - WF_OUT_HEAD) * sizeof *dst);
        memcpy(dst, head, sizeof head);
    }
}

static kiln_result run_it(struct run *run, struct wave_result *res)
{
    const struct wave_run_desc *d = run->d;
    struct machine *m = run->m;
    const struct wave_kernel *k = run->k;
    /* the arena: every region, 16-aligned; a written bitmap per writable one */
    struct placed pl[MAX_REGIONS];
    uint64_t arena = 0;
    uint32_t written_words = 0;
    for (uint32_t i = 0; i < m->nregions; i++) {
        pl[i].arena_off = arena;
        arena += (m->regions[i].size + 15) / 16 * 16;
        pl[i].written_off = written_words;
        if (m->regions[i].writable)
            written_words += (uint32_t)((m->regions[i].size + 31) / 32);
    }
    arena += 16;   /* an unaligned dword's second word is never past the end */
    kiln_caps caps;
    CALL(kiln_context_caps(run->ctx, &caps), "kiln_context_caps");
    if (arena > caps.max_storage_buffer_range)
        return KILN_RAISE(KILN_ERR_LIMIT, "kernel '%s': the dispatch's memory is %" PRIu64 " bytes, more than the "
                          "device binds in one buffer (%u; the Wavefront level keeps it in one)",
                          k->name, arena, caps.max_storage_buffer_range);
    if (m->lds_size > caps.max_shared_memory_size)
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': %u bytes of LDS, more than the device's shared memory "
                          "(%u; the Wavefront level keeps LDS there)",
                          k->name, m->lds_size, caps.max_shared_memory_size);
    uint32_t invocations = run->lockstep ? WAVE_LANES : run->lane ? run->nwaves * WAVE_LANES : run->nwaves;
    if (invocations > caps.max_workgroup_size[0] || invocations > caps.max_workgroup_invocations)
        return KILN_RAISE(KILN_ERR_LIMIT, "kernel '%s': %u waves a workgroup, %u invocations at the %s level, more "
                          "than the device's %u",
                          k->name, run->nwaves, invocations, run->level,
                          KILN_MIN(caps.max_workgroup_size[0], caps.max_workgroup_invocations));
    struct wf_shape sh = {.waves = run->nwaves, .vgprs = res->vgpr_count, .regions = m->nregions,
                          .lds_bytes = m->lds_size, .observe = d->observe,
                          .bisect = d->stop_after || d->watch_pc, .lane = run->lane != NULL || run->lockstep,
                          .lockstep = run->lockstep,
                          .packed_total = !run->lane && !run->lockstep && !m->lds_size && wf_independent(m->code, k)
                                              ? run->total : 0};
    uint32_t out_words = WF_OUT_HEAD + (d->observe ? 128u + sh.vgprs * 64u : 0u);
    uint32_t dev_words = out_words - WF_OUT_HEAD + (run->lane || run->lockstep ? WF_LANE_HEAD : WF_OUT_HEAD);
    KILN_TRY(make_program(run, &sh));

    uint8_t *ab = mem_calloc(1, (size_t)arena);
    uint32_t *rg = mem_calloc(m->nregions ? m->nregions : 1, 16);
    uint32_t *init = mem_calloc((size_t)run->total, WF_INIT_WORDS * 4);
    struct wave w = {.v = mem_calloc(3, sizeof *w.v)};   /* v0..v2 are what a wave starts with */
    uint64_t *lanes = mem_calloc(run->total, sizeof *lanes);
    kiln_result r = ab && rg && init && w.v && lanes ? KILN_OK
                  : KILN_RAISE(KILN_ERR_NO_MEMORY, "kernel '%s': out of memory for the %s level's run", k->name,
                               run->level);
    for (uint32_t i = 0; r == KILN_OK && i < m->nregions; i++) {
        const struct region *reg = &m->regions[i];
        memcpy(ab + pl[i].arena_off, reg->data, (size_t)reg->size);
        rg[4 * i + 0] = (uint32_t)(reg->base >> 32);
        rg[4 * i + 1] = (uint32_t)pl[i].arena_off;
        rg[4 * i + 2] = (uint32_t)reg->size;
        rg[4 * i + 3] = reg->writable ? pl[i].written_off | 0x80000000u : 0;
        if ((uint32_t)reg->base || reg->size > UINT32_MAX)   /* defensive: the map puts each at a 4 GiB boundary */
            r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': region '%s' at 0x%" PRIx64 " is not one the Wavefront "
                           "level can place", k->name, reg->what, reg->base);
    }
    for (uint32_t gz = 0, wi = 0; r == KILN_OK && gz < run->groups[2]; gz++)
        for (uint32_t gy = 0; gy < run->groups[1]; gy++)
            for (uint32_t gx = 0; gx < run->groups[0]; gx++)
                for (uint32_t i = 0; i < run->nwaves; i++, wi++) {
                    uint32_t g[3] = {gx, gy, gz};
                    interp_wave_start(m, &w, g, i, run->block);
                    uint32_t *p = init + (size_t)wi * WF_INIT_WORDS;
                    memcpy(p, w.s, 128 * 4);
                    p[128] = w.scc;
                    for (int v = 0; v < 3; v++)
                        memcpy(p + 129 + 64 * v, w.v[v], 64 * 4);
                    p[WF_INIT_WORDS - 3] = 2;   /* the canary's passes */
                    p[WF_INIT_WORDS - 2] = d->stop_after && d->stop_after < UINT32_MAX ? (uint32_t)d->stop_after
                                                                                       : UINT32_MAX;
                    p[WF_INIT_WORDS - 1] = d->watch_pc ? (uint32_t)(d->watch_pc / 4) : UINT32_MAX;
                    lanes[wi] = w.lanes;
                }
    if (r == KILN_OK)
        r = make_buffer(run, 0, arena, ab, "wave arena");
    if (r == KILN_OK)
        r = make_buffer(run, 1, 16ull * m->nregions, rg, "wave regions");
    if (r == KILN_OK)
        r = make_buffer(run, 2, 4ull * written_words, NULL, "wave written");
    if (r == KILN_OK)
        r = make_buffer(run, 3, (uint64_t)run->total * WF_INIT_WORDS * 4, init, "wave init");
    if (r == KILN_OK)
        r = make_buffer(run, 4, (uint64_t)run->total * dev_words * 4, NULL, "wave out");
    if (r == KILN_OK && run->lane && !run->lockstep && d->observe) {   /* the lanes gather scalars into cleared words */
        uint8_t *zero = mem_calloc((size_t)run->total, dev_words * 4);
        r = zero ? kiln_call(kiln_buffer_upload(run->ctx, run->buf[4], 0, zero, (uint64_t)run->total * dev_words * 4),
                             "kiln_buffer_upload", k->name, run->level)
                 : KILN_RAISE(KILN_ERR_NO_MEMORY, "kernel '%s': out of memory for the %s level's run", k->name,
                              run->level);
        free(zero);
    }
    free(rg);
    free(init);
    free(w.v);
    kiln_binding b[5];
    for (int i = 0; i < 5; i++)
        b[i] = (kiln_binding){.binding = (uint32_t)i, .buffer = run->buf[i]};
    kiln_node node;
    kiln_ticket t;
    if (r == KILN_OK)
        r = kiln_call(kiln_scheme_create(run->ctx, &(kiln_scheme_desc){.label = "wave"}, &run->sch),
                      "kiln_scheme_create", k->name, run->level);
    if (r == KILN_OK)
        r = kiln_call(kiln_scheme_add_node(run->ctx, run->sch,
                                           &(kiln_node_desc){.program = run->prog, .bindings = b, .binding_count = 5,
                                                             .groups = {run->lockstep ? run->total
                                                                        : sh.packed_total ? (run->total + WF_PACK - 1) / WF_PACK
                                                                                        : run->groups[0],
                                                                        sh.packed_total || run->lockstep ? 1 : run->groups[1],
                                                                        sh.packed_total || run->lockstep ? 1 : run->groups[2]},
                                                             .label = k->name},
                                           &node),
                      "kiln_scheme_add_node", k->name, run->level);
    if (r == KILN_OK)
        r = kiln_call(kiln_scheme_submit(run->ctx, run->sch, &t), "kiln_scheme_submit", k->name, run->level);
    if (r == KILN_OK)
        r = kiln_call(kiln_ticket_wait(run->ctx, t, UINT64_MAX), "kiln_ticket_wait", k->name, run->level);
    /* what it left */
    uint32_t *out = r == KILN_OK ? mem_alloc((size_t)run->total * dev_words * 4) : NULL;
    uint32_t *wr = r == KILN_OK ? mem_calloc(written_words ? written_words : 1, 4) : NULL;
    if (r == KILN_OK && (!out || !wr))
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "kernel '%s': out of memory for the %s level's results", k->name,
                       run->level);
    if (r == KILN_OK)
        r = kiln_call(kiln_buffer_readback(run->ctx, run->buf[4], 0, out, (uint64_t)run->total * dev_words * 4),
                      "kiln_buffer_readback", k->name, run->level);
    if (r == KILN_OK && (run->lane || run->lockstep))
        lane_records(out, run->total, dev_words, out_words);
    if (r == KILN_OK && written_words)
        r = kiln_call(kiln_buffer_readback(run->ctx, run->buf[2], 0, wr, 4ull * written_words),
                      "kiln_buffer_readback", k->name, run->level);
    if (r == KILN_OK)
        r = kiln_call(kiln_buffer_readback(run->ctx, run->buf[0], 0, ab, arena), "kiln_buffer_readback", k->name,
                      run->level);
    /* buffers and their written bytes, as the reference leaves them */
    for (uint32_t i = 0; r == KILN_OK && i < d->arg_count; i++) {
        if (d->args[i].kind != WAVE_VALUE_BUFFER || !d->args[i].size)
            continue;
        uint64_t base = WAVE_BUFFER_BASE + (uint64_t)i * WAVE_BUFFER_SPACING;
        for (uint32_t j = 0; j < m->nregions; j++) {
            if (m->regions[j].base != base)
                continue;
            memcpy(d->args[i].data, ab + pl[j].arena_off, (size_t)d->args[i].size);
            uint8_t *map = mem_calloc(1, (size_t)(d->args[i].size + 7) / 8);
            if (!map) {
                r = KILN_RAISE(KILN_ERR_NO_MEMORY, "kernel '%s': out of memory for a written map", k->name);
                break;
            }
            memcpy(map, wr + pl[j].written_off, (size_t)(d->args[i].size + 7) / 8);
            res->written[i] = map;
        }
    }
    for (uint32_t wi = 0; r == KILN_OK && wi < run->total; wi++) {
        const uint32_t *o = out + (size_t)wi * out_words;
        res->instructions += (uint64_t)o[6] << 32 | o[5];
    }
    if (r == KILN_OK)
        r = wave_failure(run, out, out_words);
    res->waves = run->total;
    for (uint32_t wi = 0; r == KILN_OK && d->observe && wi < run->total; wi++) {
        const uint32_t *o = out + (size_t)wi * out_words;
        struct wave_final *f = &res->finals[res->final_count++];
        group_of(run, wi, f->group);
        f->wave = wi % run->nwaves;
        f->lanes = lanes[wi];
        f->scc = o[7];
        f->steps = sh.bisect ? o[8] : (uint64_t)o[6] << 32 | o[5];
        f->last_pc = o[9];
        f->watch_count = o[10];
        memcpy(f->sgpr, o + WF_OUT_HEAD, sizeof f->sgpr);
        if (run->lane) {   /* scalars written where lanes skip: the wave's values are not the lanes' */
            f->scc_blind = run->lane->scc_blind;
            memcpy(f->sgpr_blind, run->lane->sgpr_blind, sizeof f->sgpr_blind);
            for (int i = 0; i < 4; i++)
                for (int b = 0; b < 32; b++)
                    if ((f->sgpr_blind[i] >> b) & 1)
                        f->sgpr[32 * i + b] = 0;
            f->scc = f->scc_blind ? 0 : f->scc;
        }
        f->vgpr = mem_alloc((size_t)res->vgpr_count * sizeof *f->vgpr + 1);
        if (!f->vgpr) {
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "kernel '%s': out of memory for the observation", k->name);
            break;
        }
        memcpy(f->vgpr, o + WF_OUT_HEAD + 128, (size_t)res->vgpr_count * sizeof *f->vgpr);
    }
    free(out);
    free(wr);
    free(ab);
    free(lanes);
    return r;
}

static kiln_result run_level(const struct wave_run_desc *desc, const struct lane_facts *lane, bool lockstep,
                             struct wave_result *res)
{
    memset(res, 0, sizeof *res);
    loops_ran_out = false;
    struct run run0 = {.d = desc, .lane = lane, .lockstep = lockstep,
                       .level = lockstep ? "Subgroup" : lane ? "Lane" : "Wavefront"},
               *run = &run0;
    run->m = mem_calloc(1, sizeof *run->m);
    if (!run->m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the machine");
    kiln_result r = interp_machine_setup(run->m, desc, run->groups, run->block);
    run->k = desc->kernel;
    if (r == KILN_OK) {
        uint32_t items = run->block[0] * run->block[1] * run->block[2];
        run->nwaves = (items + WAVE_LANES - 1) / WAVE_LANES;
        uint64_t total = (uint64_t)run->groups[0] * run->groups[1] * run->groups[2] * run->nwaves;
        res->vgpr_count = KILN_MIN(run->k->vgprs, (uint32_t)WAVE_VGPRS);
        if (total > (1u << 20))
            r = KILN_RAISE(KILN_ERR_LIMIT, "wave run: %" PRIu64 " waves, more than the %s level runs at once "
                           "(1048576)", total, run->level);
        run->total = (uint32_t)total;
    }
    if (r == KILN_OK && desc->arg_count) {
        res->written = mem_calloc(desc->arg_count, sizeof *res->written);
        res->written_count = res->written ? desc->arg_count : 0;
        if (!res->written)
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the written maps");
    }
    if (r == KILN_OK && desc->observe && !(res->finals = mem_calloc(run->total ? run->total : 1, sizeof *res->finals)))
        r = KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the observation");
    if (r == KILN_OK) {
        run->ctx = desc->context;
        if (!run->ctx.id) {
            /* specialization off: the program has no param words to bake */
            r = kiln_call(kiln_context_create(&(kiln_context_desc){.specialization = -1}, &run->ctx),
                          "kiln_context_create", run->k->name, run->level);
            run->own_ctx = r == KILN_OK;
        }
    }
    if (r == KILN_OK)
        r = run_it(run, res);
    if (run->sch.id)
        (void)kiln_scheme_destroy(run->ctx, run->sch);
    if (run->prog.id && !run->prog_kept)
        (void)kiln_program_destroy(run->ctx, run->prog);
    for (int i = 0; i < 5; i++)
        if (run->buf[i].id)
            (void)kiln_buffer_destroy(run->ctx, run->buf[i]);
    if (run->own_ctx)
        (void)kiln_context_destroy(run->ctx);
    interp_machine_free(run->m);
    return r;
}

kiln_result wf_run(const struct wave_run_desc *desc, struct wave_result *res)
{
    return run_level(desc, NULL, false, res);
}

kiln_result wf_run_lanes(const struct wave_run_desc *desc, const struct lane_facts *lane, bool lockstep,
                         struct wave_result *res)
{
    return run_level(desc, lane, lockstep, res);
}

kiln_result lane_run(const struct wave_run_desc *desc, struct wave_result *res)
{
    memset(res, 0, sizeof *res);
    if (desc->stop_after || desc->watch_pc)
        return KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': the Lane level cannot stop a wave after its N-th instruction "
                          "(a lane counts only its own): bisect at the Wavefront level",
                          desc->kernel ? desc->kernel->name : "?");
    struct lane_facts facts;   /* the analysis once; the run's translation refuses what it does not translate */
    KILN_TRY(lane_analyse(desc->code, desc->kernel, &facts));
    return run_level(desc, &facts, false, res);
}
