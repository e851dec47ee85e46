/* SPDX-License-Identifier: MIT */
/*
 * interp.c: the reference interpreter's machine (see interp.h for the
 * model): the address map and its regions, the dispatch (groups, waves,
 * their initial registers, barriers), the instruction loop with its budget
 * and its decode cache, and the scalar, control and memory instructions.
 * The vector ALU is interp_valu.c.
 *
 * The budgets (interp.h) are checked before each instruction and as each
 * group starts, before its memory is cleared: the work a group starts
 * with is charged in full then, and every access is charged in mem_at and
 * lds_at, the two places every load, store and atomic goes through. A
 * group clears only the span of scratch the group before it wrote (a
 * range kept by mem_at), which is all scratch can hold that is not zero.
 *
 * Instructions are decoded when a wave first reaches them, once per
 * address (a cache indexed by the dword's place in the executable span),
 * so bytes no wave executes are never judged, and a branch into the
 * middle of an instruction decodes what is there, as the hardware would.
 *
 * Memory instructions are described by their names (ops.def's spelling:
 * "global_load_sbyte_d16_hi", "ds_max_rtn_f64", "buffer_atomic_cmpswap_x2"),
 * read once into a table of what each moves: element width, count, sign,
 * which half of a register, the atomic operation.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/interp_private.h"

kiln_result interp_fail(struct machine *m, kiln_result code, const char *fmt, ...)
{
    char what[512], text[160] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!m->cur && m->cur_group)
        return KILN_RAISE(code, "wave run: kernel '%s', group (%u,%u,%u), as it starts: %s", m->k->name,
                          m->cur_group[0], m->cur_group[1], m->cur_group[2], what);
    if (!m->cur)
        return KILN_RAISE(code, "wave run: %s", what);
    if (m->cur_in)
        wave_print(m->cur_in, text, sizeof text);
    const struct wave *w = m->cur;
    return KILN_RAISE(code, "wave run: kernel '%s', group (%u,%u,%u) wave %u, at image offset 0x%llx%s%s%s: %s",
                      m->k->name, w->group[0], w->group[1], w->group[2], w->index, (unsigned long long)m->cur_pc,
                      text[0] ? " ('" : "", text, text[0] ? "')" : "", what);
}

/* ---- registers ---------------------------------------------------------------------------- */

uint32_t interp_sget(const struct wave *w, unsigned code)
{
    switch (code) {
    case WAVE_SREG_SHARED_BASE: return WAVE_SHARED_HI;
    case WAVE_SREG_SHARED_LIMIT: return WAVE_SHARED_HI;
    case WAVE_SREG_PRIVATE_BASE: return WAVE_PRIVATE_HI;
    case WAVE_SREG_PRIVATE_LIMIT: return WAVE_PRIVATE_HI;
    case WAVE_SREG_POPS_EXITING_WAVE_ID: return 0;
    case WAVE_SREG_VCCZ: return wv_vcc(w) == 0;
    case WAVE_SREG_EXECZ: return wv_exec(w) == 0;
    case WAVE_SREG_SCC: return w->scc;
    default: return code < 128 ? w->s[code] : 0;
    }
}

void interp_sset(struct wave *w, unsigned code, uint32_t v)
{
    if (code < 128)
        w->s[code] = v;
}

uint32_t interp_sv32(const struct wave *w, const struct wave_operand *o)
{
    switch (o->kind) {
    case WAVE_OPND_SGPR: return interp_sget(w, o->reg);
    case WAVE_OPND_CONST: return (uint32_t)wave_const_bits(o->value, 32);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return o->value;
    default: return 0;
    }
}

uint64_t interp_sv64(const struct wave *w, const struct wave_operand *o)
{
    switch (o->kind) {
    case WAVE_OPND_SGPR: return (uint64_t)interp_sget(w, o->reg + 1u) << 32 | interp_sget(w, o->reg);
    case WAVE_OPND_CONST: return wave_const_bits(o->value, 64);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return o->value;
    default: return 0;
    }
}

void interp_sdst32(struct wave *w, const struct wave_instr *in, uint32_t v)
{
    if (in->dst[0].kind == WAVE_OPND_SGPR)
        interp_sset(w, in->dst[0].reg, v);
}

void interp_sdst64(struct wave *w, const struct wave_instr *in, uint64_t v)
{
    if (in->dst[0].kind == WAVE_OPND_SGPR) {
        interp_sset(w, in->dst[0].reg, (uint32_t)v);
        interp_sset(w, in->dst[0].reg + 1u, (uint32_t)(v >> 32));
    }
}

void interp_set_exec(struct wave *w, uint64_t e)
{
    w->s[WAVE_SREG_EXEC_LO] = (uint32_t)e;
    w->s[WAVE_SREG_EXEC_HI] = (uint32_t)(e >> 32);
}

/* The immediate of a SOPK/SOPP instruction (the operand of kind IMM). */
uint32_t interp_imm_of(const struct wave_instr *in)
{
    for (int i = 0; i < 4; i++)
        if (in->src[i].kind == WAVE_OPND_IMM)
            return in->src[i].value;
    return 0;
}

/* ---- memory ------------------------------------------------------------------------------- */

static struct region *region_add(struct machine *m, uint64_t base, uint64_t size, uint8_t *data, bool writable,
                                 const char *what)
{
    struct region *r = &m->regions[m->nregions++];
    *r = (struct region){.base = base, .size = size, .data = data, .writable = writable, .what = what};
    return r;
}

/* A host pointer to n bytes at guest address a, or NULL having failed. */
uint8_t *interp_mem_at(struct machine *m, uint64_t a, uint32_t n, bool write, int lane)
{
    for (uint32_t i = 0; i < m->nregions; i++) {
        struct region *r = &m->regions[i];
        if (a < r->base || a - r->base >= r->size)
            continue;
        uint64_t off = a - r->base;
        if (n > r->size - off)
            break;
        if (write && !r->writable) {
            interp_fail(m, KILN_ERR_INVALID, "lane %d writes %u bytes at 0x%llx, in the %s, which is read-only", lane,
                        n, (unsigned long long)a, r->what);
            return NULL;
        }
        if (write && r->written)
            for (uint32_t b = 0; b < n; b++)
                r->written[(off + b) >> 3] |= (uint8_t)(1u << ((off + b) & 7));
        if (write && r->dirty_kept) {
            r->dirty_lo = KILN_MIN(r->dirty_lo, off);
            r->dirty_hi = KILN_MAX(r->dirty_hi, off + n);
        }
        m->bytes += n;
        return r->data + off;
    }
    interp_fail(m, KILN_ERR_INVALID, "lane %d %s %u bytes at address 0x%llx, outside every mapped region", lane,
                write ? "writes" : "reads", n, (unsigned long long)a);
    return NULL;
}

uint8_t *interp_lds_at(struct machine *m, uint64_t off, uint32_t n, int lane)
{
    if (off > m->lds_size || n > m->lds_size - off) {
        interp_fail(m, KILN_ERR_INVALID, "lane %d reaches %u bytes at LDS offset 0x%llx, past the group's %u bytes", lane,
                    n, (unsigned long long)off, m->lds_size);
        return NULL;
    }
    m->bytes += n;
    return m->lds + off;
}

/* A private (scratch) offset of a lane, swizzled as gfx9 lays scratch out:
 * dwords interleaved across the 64 lanes. */
static uint64_t swizzle(uint64_t off, int lane)
{
    return (off / 4) * 4 * WAVE_LANES + (uint64_t)lane * 4 + off % 4;
}

/* The flat address a of a lane: LDS (shared aperture), scratch (private
 * aperture) or the global map. */
uint8_t *interp_flat_at(struct machine *m, struct wave *w, uint64_t a, uint32_t n, bool write, int lane)
{
    uint32_t hi = (uint32_t)(a >> 32);
    if (hi == WAVE_SHARED_HI)
        return interp_lds_at(m, (uint32_t)a, n, lane);
    if (hi == WAVE_PRIVATE_HI) {
        uint64_t fs = (uint64_t)w->s[WAVE_SREG_FLAT_SCRATCH_HI] << 32 | w->s[WAVE_SREG_FLAT_SCRATCH_LO];
        return interp_mem_at(m, fs + swizzle((uint32_t)a, lane), n, write, lane);
    }
    return interp_mem_at(m, a, n, write, lane);
}

/* ---- the instruction loop -------------------------------------------------------------------- */

static kiln_result fetch(struct machine *m, uint64_t pc, const struct wave_instr **out)
{
    const struct wave_code *c = m->code;
    if (pc < c->text_addr || pc >= c->text_addr + c->text_size || (pc & 3))
        return interp_fail(m, KILN_ERR_INVALID, "the program counter 0x%llx is not an instruction of the executable "
                           "section (0x%llx..0x%llx)",
                           (unsigned long long)pc, (unsigned long long)c->text_addr,
                           (unsigned long long)(c->text_addr + c->text_size));
    size_t i = (pc - c->text_addr) / 4;
    if (!m->slot[i]) {
        if (m->ninstrs == m->cap) {
            uint32_t cap = m->cap ? m->cap * 2 : 256;
            struct wave_instr *n = mem_realloc(m->instrs, cap * sizeof *n);
            if (!n)
                return interp_fail(m, KILN_ERR_NO_MEMORY, "out of memory for decoded instructions");
            m->instrs = n, m->cap = cap;
        }
        struct wave_instr *in = &m->instrs[m->ninstrs];
        /* the decoder sees the executable span only, so nothing past it is read as code */
        size_t end_words = (size_t)((c->text_addr + c->text_size) / 4);
        int r = wave_decode(m->words, end_words, (size_t)pc, in);
        if (r < 0)
            return interp_fail(m, KILN_ERR_INVALID, "cannot decode: %s", err_last());
        m->slot[i] = (int32_t)++m->ninstrs;
    }
    *out = &m->instrs[m->slot[i] - 1];
    return KILN_OK;
}

/* The work of instructions and bytes, in units. */
static uint64_t work_units(uint64_t instructions, uint64_t bytes)
{
    return instructions + bytes / WAVE_WORK_UNIT_BYTES;
}

/* bytes: those counted, with what a group about to start would add. */
static kiln_result work_fail(struct machine *m, uint64_t bytes)
{
    return interp_fail(m, KILN_ERR_LIMIT, "the run passed its work budget of %llu units (%llu instructions and %llu "
                       "bytes of memory cleared or moved%s; a unit is an instruction or %u bytes)",
                       (unsigned long long)m->work_budget, (unsigned long long)m->executed,
                       (unsigned long long)bytes, bytes > m->bytes ? ", this group's included" : "",
                       WAVE_WORK_UNIT_BYTES);
}

/* KILN_ERR_LIMIT when the run is past its wall-clock budget. */
static kiln_result time_check(struct machine *m)
{
    uint64_t spent = time_now_ns() - m->start_ns;
    if (spent <= m->time_budget_ns)
        return KILN_OK;
    return interp_fail(m, KILN_ERR_LIMIT, "the run passed its time budget of %g s (%.3f s spent, %llu instructions run)",
                       m->max_seconds, (double)spent / 1e9, (unsigned long long)m->executed);
}

static kiln_result step(struct machine *m, struct wave *w)
{
    const struct wave_instr *in = NULL;
    m->cur = w;
    m->cur_in = NULL;
    m->cur_pc = w->pc;
    KILN_TRY(fetch(m, w->pc, &in));
    m->cur_in = in;
    if (++m->executed > m->budget)
        return interp_fail(m, KILN_ERR_LIMIT, "the run passed its budget of %llu instructions",
                           (unsigned long long)m->budget);
    if (work_units(m->executed, m->bytes) > m->work_budget)
        return work_fail(m, m->bytes);
    if (m->executed % WAVE_CLOCK_EVERY == 0)
        KILN_TRY(time_check(m));
    uint64_t next = w->pc + 4ull * in->words;
    w->steps++;
    w->last_pc = w->pc;
    w->watch_count += m->d->watch_pc && w->pc == m->d->watch_pc;
    w->pc = next;
    const struct wave_op_info *info = wave_op_info(in->op);
    if (!info)
        return interp_fail(m, KILN_ERR_INVALID, "an instruction without an op");
    switch (info->family) {
    case WAVE_FAM_SOP1: case WAVE_FAM_SOP2: case WAVE_FAM_SOPK: case WAVE_FAM_SOPC: case WAVE_FAM_SOPP:
        return interp_salu(m, w, in, next);
    case WAVE_FAM_SMEM:
        return interp_smem(m, w, in);
    case WAVE_FAM_DS:
        return interp_ds(m, w, in);
    case WAVE_FAM_FLAT: case WAVE_FAM_GLOBAL: case WAVE_FAM_SCRATCH: case WAVE_FAM_MUBUF:
        return interp_vmem(m, w, in);
    default:
        return interp_valu(m, w, in);
    }
}

/* ---- the dispatch --------------------------------------------------------------------------- */

void interp_wave_start(struct machine *m, struct wave *w, const uint32_t g[3], uint32_t index, const uint32_t block[3])
{
    const struct wave_kernel *k = m->k;
    const struct wave_setup *su = &k->setup;
    uint32_t (*v)[WAVE_LANES] = w->v;
    memset(w, 0, sizeof *w);
    w->v = v;
    memset(w->v, 0, sizeof(uint32_t) * WAVE_LANES * 3);   /* v0..v2; the caller clears the rest */
    w->group[0] = g[0], w->group[1] = g[1], w->group[2] = g[2];
    w->index = index;
    w->pc = k->code_addr;
    unsigned s = 0;
    uint32_t wave_scratch = m->lane_scratch * WAVE_LANES;
    if (su->private_segment_buffer) {
        /* base, swizzled (element 4 bytes, index stride 64), add_tid: lane
         * i's dword j of scratch at base + wave offset + (j * 64 + i) * 4 */
        w->s[s++] = (uint32_t)WAVE_SCRATCH_BASE;
        w->s[s++] = (uint32_t)(WAVE_SCRATCH_BASE >> 32) | 1u << 31;
        w->s[s++] = UINT32_MAX;
        w->s[s++] = 1u << 19 | 3u << 21 | 1u << 23 | 4u << 15;
    }
    if (su->dispatch_ptr)
        w->s[s++] = (uint32_t)WAVE_DISPATCH_BASE, w->s[s++] = (uint32_t)(WAVE_DISPATCH_BASE >> 32);
    if (su->queue_ptr)
        w->s[s++] = (uint32_t)WAVE_QUEUE_BASE, w->s[s++] = (uint32_t)(WAVE_QUEUE_BASE >> 32);
    if (su->kernarg_segment_ptr)
        w->s[s++] = (uint32_t)WAVE_KERNARG_BASE, w->s[s++] = (uint32_t)(WAVE_KERNARG_BASE >> 32);
    if (su->dispatch_id)
        w->s[s++] = 0, w->s[s++] = 0;
    if (su->flat_scratch_init)
        w->s[s++] = (uint32_t)WAVE_SCRATCH_BASE, w->s[s++] = (uint32_t)(WAVE_SCRATCH_BASE >> 32);
    if (su->private_segment_size)
        w->s[s++] = m->lane_scratch;
    s = su->user_sgpr_count;
    for (int a = 0; a < 3; a++)
        if (su->workgroup_id[a])
            w->s[s++] = g[a];
    if (su->workgroup_info)
        w->s[s++] = 0;
    if (su->private_segment_wave_offset)
        w->s[s++] = index * wave_scratch;
    uint32_t items = block[0] * block[1] * block[2];
    for (int l = 0; l < WAVE_LANES; l++) {
        uint32_t flat = index * WAVE_LANES + (uint32_t)l;
        if (flat >= items)
            continue;
        w->lanes |= 1ull << l;
        w->v[0][l] = flat % block[0];
        if (su->workitem_id_dims >= 2)
            w->v[1][l] = flat / block[0] % block[1];
        if (su->workitem_id_dims >= 3)
            w->v[2][l] = flat / (block[0] * block[1]);
    }
    interp_set_exec(w, w->lanes);
    /* MODE from the descriptor: FLOAT_MODE, DX10_CLAMP, IEEE */
    w->mode = ((k->rsrc1 >> 12) & 0xff) | ((k->rsrc1 >> 21) & 1) << 8 | ((k->rsrc1 >> 23) & 1) << 9;
    w->status = WS_RUN;
}

struct wave_run_desc wave_run_defaults(const struct wave_run_desc *desc)
{
    struct wave_run_desc d = *desc;
    for (int a = 0; a < 3; a++) {
        d.groups[a] = d.groups[a] ? d.groups[a] : 1;
        d.block[a] = d.block[a] ? d.block[a] : 1;
    }
    if (!d.max_instructions)
        d.max_instructions = WAVE_DEFAULT_MAX_INSTRUCTIONS;
    if (!d.max_work)
        d.max_work = WAVE_DEFAULT_MAX_WORK;
    if (d.max_seconds == 0)
        d.max_seconds = WAVE_DEFAULT_MAX_SECONDS;
    return d;
}

kiln_result interp_machine_setup(struct machine *m, const struct wave_run_desc *desc, uint32_t groups[3],
                                 uint32_t block[3])
{
    const struct wave_run_desc dd = wave_run_defaults(desc), *d = &dd;
    const struct wave_kernel *k = d->kernel;
    const struct wave_code *c = d->code;
    if (!c || !k)
        return KILN_RAISE(KILN_ERR_INVALID, "wave run: no code object or kernel");
    if (k < c->kernels || k >= c->kernels + c->kernel_count)
        return KILN_RAISE(KILN_ERR_INVALID, "wave run: the kernel is not one of the code object's");
    if (!(d->max_seconds > 0) || !isfinite(d->max_seconds))
        return KILN_RAISE(KILN_ERR_INVALID, "wave run: max_seconds %g is not a time above 0 s", d->max_seconds);
    for (int a = 0; a < 3; a++) {
        groups[a] = d->groups[a];
        block[a] = d->block[a];
    }
    uint64_t items = (uint64_t)block[0] * block[1] * block[2];
    if (items > WAVE_MAX_GROUP)
        return KILN_RAISE(KILN_ERR_LIMIT, "wave run: a workgroup of %ux%ux%u = %llu work-items, more than %u", block[0],
                          block[1], block[2], (unsigned long long)items, WAVE_MAX_GROUP);
    if (k->max_flat_size && items > k->max_flat_size)
        return KILN_RAISE(KILN_ERR_LIMIT, "wave run: a workgroup of %llu work-items, more than kernel '%s' allows (%u)",
                          (unsigned long long)items, k->name, k->max_flat_size);
    if (k->reqd_size[0] && (block[0] != k->reqd_size[0] || block[1] != k->reqd_size[1] || block[2] != k->reqd_size[2]))
        return KILN_RAISE(KILN_ERR_INVALID, "wave run: kernel '%s' requires workgroups of %ux%ux%u, not %ux%ux%u",
                          k->name, k->reqd_size[0], k->reqd_size[1], k->reqd_size[2], block[0], block[1], block[2]);
    if ((block[1] > 1 && k->setup.workitem_id_dims < 2) || (block[2] > 1 && k->setup.workitem_id_dims < 3))
        log_debug("wave run: kernel '%s' reads %u work-item id(s); the block is %ux%ux%u", k->name,
                  k->setup.workitem_id_dims, block[0], block[1], block[2]);
    if (d->arg_count != k->explicit_count)
        return KILN_RAISE(KILN_ERR_INVALID, "wave run: kernel '%s' takes %u arguments, %u given", k->name,
                          k->explicit_count, d->arg_count);
    m->d = desc, m->code = c, m->k = k;
    m->budget = d->max_instructions;
    m->work_budget = d->max_work;
    m->max_seconds = d->max_seconds;
    m->time_budget_ns = d->max_seconds >= 1e10 ? UINT64_MAX : (uint64_t)(d->max_seconds * 1e9);
    /* the image and the decode cache */
    m->nwords = (size_t)(c->image_size / 4);
    m->words = mem_alloc(m->nwords * 4 + 4);
    m->slot = mem_calloc((size_t)(c->text_size / 4) + 1, sizeof *m->slot);
    if (!m->words || !m->slot)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the decode cache");
    for (size_t i = 0; i < m->nwords; i++)
        m->words[i] = (uint32_t)interp_ld(c->image + 4 * i, 4);
    region_add(m, WAVE_IMAGE_BASE, c->image_size, c->image, false, "code object's image");
    /* the kernarg segment: the kernel's size, rounded up and padded, as
     * loads of a few dwords past the last argument are allowed */
    m->kernarg_size = ((uint64_t)k->kernarg_size + 63) / 64 * 64 + 64;
    m->kernarg = mem_calloc(1, m->kernarg_size);
    if (!m->kernarg)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the kernarg segment");
    region_add(m, WAVE_KERNARG_BASE, m->kernarg_size, m->kernarg, false, "kernarg segment");
    region_add(m, WAVE_DISPATCH_BASE, sizeof m->dispatch, m->dispatch, false, "dispatch packet");
    region_add(m, WAVE_QUEUE_BASE, sizeof m->queue, m->queue, false, "queue");
    /* the explicit arguments */
    uint32_t dynamic_lds = 0, lds_at_arg = (k->group_segment_size + 15) / 16 * 16;
    for (uint32_t i = 0; i < k->explicit_count; i++) {
        const struct wave_arg *ga = &k->args[i];
        const struct wave_value *v = &d->args[i];
        uint8_t *at = m->kernarg + ga->offset;
        switch (ga->kind) {
        case WAVE_ARG_GLOBAL_BUFFER: {
            if (v->kind != WAVE_VALUE_BUFFER)
                return KILN_RAISE(KILN_ERR_INVALID, "wave run: argument %u ('%s') of kernel '%s' is a buffer", i,
                                  ga->name, k->name);
            if (v->size >= WAVE_BUFFER_SPACING)
                return KILN_RAISE(KILN_ERR_LIMIT, "wave run: argument %u's buffer of %llu bytes is larger than 4 GiB",
                                  i, (unsigned long long)v->size);
            uint64_t base = WAVE_BUFFER_BASE + (uint64_t)i * WAVE_BUFFER_SPACING;
            interp_st(at, base, 8);
            if (v->size) {
                struct region *r = region_add(m, base, v->size, v->data, true, "buffer");
                r->written = mem_calloc(1, (size_t)(v->size + 7) / 8);
                if (!r->written)
                    return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the written-bytes map of argument %u", i);
            }
            break;
        }
        case WAVE_ARG_BY_VALUE:
            if (v->kind != WAVE_VALUE_BYTES || v->size != ga->size || ga->size > sizeof v->bytes)
                return KILN_RAISE(KILN_ERR_INVALID, "wave run: argument %u ('%s', %s) of kernel '%s' is a value of %u "
                                  "bytes",
                                  i, ga->name, ga->type_name, k->name, ga->size);
            memcpy(at, v->bytes, ga->size);
            break;
        case WAVE_ARG_DYNAMIC_SHARED_POINTER:
            if (v->kind != WAVE_VALUE_LOCAL)
                return KILN_RAISE(KILN_ERR_INVALID, "wave run: argument %u ('%s') of kernel '%s' is a __local pointer: "
                                  "give its size in bytes",
                                  i, ga->name, k->name);
            lds_at_arg = (lds_at_arg + 15) / 16 * 16;
            interp_st(at, lds_at_arg, 4);
            if (v->size > 65536)
                return KILN_RAISE(KILN_ERR_LIMIT, "wave run: argument %u asks %llu bytes of LDS", i,
                                  (unsigned long long)v->size);
            lds_at_arg += (uint32_t)v->size;
            break;
        default:
            return KILN_RAISE(KILN_ERR_INVALID, "wave run: argument %u ('%s') of kernel '%s' is %s, which kiln does not "
                              "provide",
                              i, ga->name, k->name, wave_arg_kind_name(ga->kind));
        }
    }
    dynamic_lds = lds_at_arg > k->group_segment_size ? lds_at_arg - k->group_segment_size : 0;
    m->lds_size = k->group_segment_size + dynamic_lds;
    if (m->lds_size > 65536)
        return KILN_RAISE(KILN_ERR_LIMIT, "wave run: %u bytes of LDS, more than gfx9's 65536", m->lds_size);
    m->lds = mem_calloc(1, m->lds_size ? m->lds_size : 1);
    if (!m->lds)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: LDS");
    struct wave_dispatch_info di = {.dims = block[2] > 1 || groups[2] > 1 ? 3 : block[1] > 1 || groups[1] > 1 ? 2 : 1,
                                    .dynamic_lds = dynamic_lds,
                                    .private_base_hi = WAVE_PRIVATE_HI,
                                    .shared_base_hi = WAVE_SHARED_HI};
    for (int a = 0; a < 3; a++)
        di.groups[a] = groups[a], di.block[a] = block[a];
    wave_kernarg_fill(k, m->kernarg, &di);
    /* the dispatch packet (hsa_kernel_dispatch_packet_t) */
    interp_st(m->dispatch + 0, 2 /* kernel dispatch */, 2);
    interp_st(m->dispatch + 2, di.dims, 2);
    for (int a = 0; a < 3; a++) {
        interp_st(m->dispatch + 4 + 2 * a, block[a], 2);
        interp_st(m->dispatch + 12 + 4 * a, (uint64_t)groups[a] * block[a], 4);
    }
    interp_st(m->dispatch + 24, k->private_segment_size, 4);
    interp_st(m->dispatch + 28, m->lds_size, 4);
    interp_st(m->dispatch + 32, WAVE_IMAGE_BASE + k->kd_addr, 8);
    interp_st(m->dispatch + 40, WAVE_KERNARG_BASE, 8);
    /* scratch: one group's waves at a time */
    m->lane_scratch = k->private_segment_size;
    uint32_t waves = (uint32_t)((items + WAVE_LANES - 1) / WAVE_LANES);
    m->scratch_size = (uint64_t)m->lane_scratch * WAVE_LANES * waves;
    if (m->scratch_size > WAVE_MAX_SCRATCH)
        return KILN_RAISE(KILN_ERR_LIMIT, "wave run: %u bytes of scratch per work-item for %u waves is %llu bytes, more "
                          "than kiln's %u",
                          m->lane_scratch, waves, (unsigned long long)m->scratch_size, WAVE_MAX_SCRATCH);
    if (m->scratch_size) {
        m->scratch = mem_calloc(1, m->scratch_size);
        if (!m->scratch)
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: %llu bytes of scratch",
                              (unsigned long long)m->scratch_size);
        struct region *r = region_add(m, WAVE_SCRATCH_BASE, m->scratch_size, m->scratch, true, "scratch");
        r->dirty_kept = true;
        r->dirty_lo = UINT64_MAX;
        m->scratch_region = r;
    }
    return KILN_OK;
}

/* Starts group g: charges the work of what it starts with zeroed (LDS, its
 * waves' scratch and vector registers), checks the budgets, then clears
 * and starts its waves. */
static kiln_result group_start(struct machine *m, struct wave *waves, uint32_t nwaves, const uint32_t g[3],
                               const uint32_t block[3])
{
    m->cur = NULL, m->cur_in = NULL, m->cur_group = g;
    uint64_t registers = sizeof(uint32_t) * WAVE_LANES * WAVE_VGPRS;
    uint64_t charge = m->lds_size + m->scratch_size + nwaves * registers;
    if (work_units(m->executed, m->bytes + charge) > m->work_budget)
        return work_fail(m, m->bytes + charge);
    KILN_TRY(time_check(m));
    m->cur_group = NULL;
    m->bytes += charge;
    memset(m->lds, 0, m->lds_size);
    struct region *r = m->scratch_region;
    if (r && r->dirty_hi > r->dirty_lo) {
        memset(r->data + r->dirty_lo, 0, r->dirty_hi - r->dirty_lo);
        r->dirty_lo = UINT64_MAX, r->dirty_hi = 0;
    }
    for (uint32_t i = 0; i < nwaves; i++) {
        memset(waves[i].v, 0, sizeof(uint32_t) * WAVE_LANES * WAVE_VGPRS);
        interp_wave_start(m, &waves[i], g, i, block);
    }
    return KILN_OK;
}

static void keep_final(struct wave_result *res, const struct wave *w, uint32_t vgprs)
{
    struct wave_final *f = &res->finals[res->final_count++];
    memset(f, 0, sizeof *f);
    memcpy(f->group, w->group, sizeof f->group);
    f->wave = w->index;
    f->lanes = w->lanes;
    memcpy(f->sgpr, w->s, sizeof f->sgpr);
    f->scc = w->scc;
    f->steps = w->steps, f->last_pc = w->last_pc, f->watch_count = w->watch_count;
    f->vgpr = mem_alloc((size_t)vgprs * sizeof *f->vgpr + 1);
    if (f->vgpr)
        memcpy(f->vgpr, w->v, (size_t)vgprs * sizeof *f->vgpr);
}

kiln_result wave_run(const struct wave_run_desc *d, struct wave_result *res)
{
    memset(res, 0, sizeof *res);
    struct machine *m = mem_calloc(1, sizeof *m);
    if (!m)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the machine");
    m->start_ns = time_now_ns();
    interp_mem_tables();
    uint32_t groups[3], block[3];
    struct wave *waves = NULL;
    uint32_t nwaves = 0;
    kiln_result r = interp_machine_setup(m, d, groups, block);
    if (r == KILN_OK) {
        uint32_t items = block[0] * block[1] * block[2];
        nwaves = (items + WAVE_LANES - 1) / WAVE_LANES;
        waves = mem_calloc(nwaves, sizeof *waves);
        if (!waves)
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: waves");
        for (uint32_t i = 0; waves && i < nwaves && r == KILN_OK; i++) {
            waves[i].v = mem_alloc(sizeof(uint32_t) * WAVE_LANES * WAVE_VGPRS);
            if (!waves[i].v)
                r = KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: registers");
        }
        uint64_t total = (uint64_t)groups[0] * groups[1] * groups[2] * nwaves;
        res->vgpr_count = KILN_MIN(d->kernel->vgprs, (uint32_t)WAVE_VGPRS);
        if (r == KILN_OK && d->observe) {
            uint64_t bytes = total * (res->vgpr_count * (uint64_t)WAVE_LANES * 4 + sizeof(struct wave_final));
            if (total > (1u << 20) || bytes > (1ull << 30))
                r = KILN_RAISE(KILN_ERR_LIMIT, "wave run: %llu waves to observe (%llu bytes of registers), more than "
                               "kiln keeps (1048576 waves, 1 GiB)",
                               (unsigned long long)total, (unsigned long long)bytes);
            else if (!(res->finals = mem_calloc(total ? total : 1, sizeof *res->finals)))
                r = KILN_RAISE(KILN_ERR_NO_MEMORY, "wave run: the observation");
        }
    }
    for (uint32_t gz = 0; r == KILN_OK && gz < groups[2]; gz++)
        for (uint32_t gy = 0; r == KILN_OK && gy < groups[1]; gy++)
            for (uint32_t gx = 0; r == KILN_OK && gx < groups[0]; gx++) {
                uint32_t g[3] = {gx, gy, gz};
                r = group_start(m, waves, nwaves, g, block);
                if (r != KILN_OK)
                    break;
                res->waves += nwaves;
                for (;;) {
                    bool any_run = false;
                    for (uint32_t i = 0; i < nwaves && r == KILN_OK; i++)
                        while (waves[i].status == WS_RUN && r == KILN_OK) {
                            if (d->stop_after && waves[i].steps >= d->stop_after) {
                                waves[i].status = WS_DONE;   /* bisection: stopped as if it ended */
                                break;
                            }
                            r = step(m, &waves[i]);
                            any_run = true;
                        }
                    if (r != KILN_OK)
                        break;
                    bool waiting = false;
                    for (uint32_t i = 0; i < nwaves; i++)
                        if (waves[i].status == WS_BARRIER)
                            waves[i].status = WS_RUN, waiting = true;
                    if (!waiting && !any_run)
                        break;
                    if (!waiting)
                        break;
                }
                if (r == KILN_OK && res->finals)
                    for (uint32_t i = 0; i < nwaves; i++)
                        keep_final(res, &waves[i], res->vgpr_count);
            }
    res->instructions = m->executed;
    res->bytes = m->bytes;
    /* the written maps move to the result */
    if (d && d->kernel && d->arg_count) {
        res->written = mem_calloc(d->arg_count, sizeof *res->written);
        if (res->written) {
            res->written_count = d->arg_count;
            uint64_t base_of[WAVE_MAX_ARGS];
            for (uint32_t i = 0; i < d->arg_count && i < WAVE_MAX_ARGS; i++)
                base_of[i] = WAVE_BUFFER_BASE + (uint64_t)i * WAVE_BUFFER_SPACING;
            for (uint32_t j = 0; j < m->nregions; j++)
                for (uint32_t i = 0; i < d->arg_count && i < WAVE_MAX_ARGS; i++)
                    if (m->regions[j].written && m->regions[j].base == base_of[i]) {
                        res->written[i] = m->regions[j].written;
                        m->regions[j].written = NULL;
                    }
        }
    }
    for (uint32_t i = 0; waves && i < nwaves; i++)
        free(waves[i].v);
    free(waves);
    interp_machine_free(m);
    return r;
}

void interp_machine_free(struct machine *m)
{
    if (!m)
        return;
    for (uint32_t j = 0; j < m->nregions; j++)
        free(m->regions[j].written);
    free(m->words);
    free(m->slot);
    free(m->instrs);
    free(m->kernarg);
    free(m->lds);
    free(m->scratch);
    free(m);
}

void wave_result_finish(struct wave_result *r)
{
    for (uint32_t i = 0; r->finals && i < r->final_count; i++)
        free(r->finals[i].vgpr);
    free(r->finals);
    for (uint32_t i = 0; r->written && i < r->written_count; i++)
        free(r->written[i]);
    free(r->written);
    memset(r, 0, sizeof *r);
}
