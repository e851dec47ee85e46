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

static void sset(struct wave *w, unsigned code, uint32_t v)
{
    if (code < 128)
        w->s[code] = v;
}

static uint32_t sv32(const struct wave *w, const struct wave_operand *o)
{
    switch (o->kind) {
    case WAVE_OPND_SGPR: return interp_sget(w, o->reg);
    case WAVE_OPND_CONST: return (uint32_t)wave_const_bits(o->value, 32);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return o->value;
    default: return 0;
    }
}

static uint64_t sv64(const struct wave *w, const struct wave_operand *o)
{
    switch (o->kind) {
    case WAVE_OPND_SGPR: return (uint64_t)interp_sget(w, o->reg + 1u) << 32 | interp_sget(w, o->reg);
    case WAVE_OPND_CONST: return wave_const_bits(o->value, 64);
    case WAVE_OPND_LITERAL:
    case WAVE_OPND_IMM: return o->value;
    default: return 0;
    }
}

static void sdst32(struct wave *w, const struct wave_instr *in, uint32_t v)
{
    if (in->dst[0].kind == WAVE_OPND_SGPR)
        sset(w, in->dst[0].reg, v);
}

static void sdst64(struct wave *w, const struct wave_instr *in, uint64_t v)
{
    if (in->dst[0].kind == WAVE_OPND_SGPR) {
        sset(w, in->dst[0].reg, (uint32_t)v);
        sset(w, in->dst[0].reg + 1u, (uint32_t)(v >> 32));
    }
}

static void set_exec(struct wave *w, uint64_t e)
{
    w->s[WAVE_SREG_EXEC_LO] = (uint32_t)e;
    w->s[WAVE_SREG_EXEC_HI] = (uint32_t)(e >> 32);
}

/* The immediate of a SOPK/SOPP instruction (the operand of kind IMM). */
static uint32_t imm_of(const struct wave_instr *in)
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
static uint8_t *mem_at(struct machine *m, uint64_t a, uint32_t n, bool write, int lane)
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

static uint8_t *lds_at(struct machine *m, uint64_t off, uint32_t n, int lane)
{
    if (off > m->lds_size || n > m->lds_size - off) {
        interp_fail(m, KILN_ERR_INVALID, "lane %d reaches %u bytes at LDS offset 0x%llx, past the group's %u bytes", lane,
                    n, (unsigned long long)off, m->lds_size);
        return NULL;
    }
    m->bytes += n;
    return m->lds + off;
}

static uint64_t ld(const uint8_t *p, uint32_t n)
{
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void st(uint8_t *p, uint64_t v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A private (scratch) offset of a lane, swizzled as gfx9 lays scratch out:
 * dwords interleaved across the 64 lanes. */
static uint64_t swizzle(uint64_t off, int lane)
{
    return (off / 4) * 4 * WAVE_LANES + (uint64_t)lane * 4 + off % 4;
}

/* The flat address a of a lane: LDS (shared aperture), scratch (private
 * aperture) or the global map. */
static uint8_t *flat_at(struct machine *m, struct wave *w, uint64_t a, uint32_t n, bool write, int lane)
{
    uint32_t hi = (uint32_t)(a >> 32);
    if (hi == WAVE_SHARED_HI)
        return lds_at(m, (uint32_t)a, n, lane);
    if (hi == WAVE_PRIVATE_HI) {
        uint64_t fs = (uint64_t)w->s[WAVE_SREG_FLAT_SCRATCH_HI] << 32 | w->s[WAVE_SREG_FLAT_SCRATCH_LO];
        return mem_at(m, fs + swizzle((uint32_t)a, lane), n, write, lane);
    }
    return mem_at(m, a, n, write, lane);
}

/* ---- memory instructions from their names -------------------------------------------------- */

enum mem_kind { MK_NONE, MK_LOAD, MK_STORE, MK_ATOMIC, MK_NOP, MK_READ2, MK_WRITE2, MK_XCHG2, MK_SWIZZLE,
                MK_PERMUTE, MK_BPERMUTE };
enum atomic_op { AO_SWAP, AO_CMPSWAP, AO_ADD, AO_SUB, AO_RSUB, AO_SMIN, AO_UMIN, AO_SMAX, AO_UMAX, AO_AND, AO_OR,
                 AO_XOR, AO_INC, AO_DEC, AO_FMIN, AO_FMAX, AO_FADD, AO_MSKOR, AO_CMPST, AO_FCMPST, AO_WRAP };
struct mem_sem {
    uint8_t kind;
    uint8_t bytes;    /* element: 1, 2, 4 (or 8 for 64-bit DS and atomics) */
    uint8_t count;    /* elements (dwords of a dwordxN) */
    bool sign, d16, d16_hi, rtn, st64;
    uint8_t aop;
};
static struct mem_sem mem_table[WAVE_OP_COUNT];
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;

static bool eat(const char **s, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(*s, prefix, n))
        return false;
    *s += n;
    return true;
}

/* A load or store's type: "ubyte", "sshort_d16_hi", "dwordx3", "format_xy". */
static bool mem_type(const char *t, struct mem_sem *s)
{
    s->count = 1;
    if (eat(&t, "format_")) {
        s->bytes = 4;
        if (eat(&t, "d16_")) {
            s->bytes = 2, s->d16 = true;
            if (eat(&t, "hi_"))
                s->d16_hi = true;
        }
        s->count = (uint8_t)strlen(t);
        return s->count >= 1 && s->count <= 4;
    }
    if (eat(&t, "ubyte") || eat(&t, "byte"))
        s->bytes = 1;
    else if (eat(&t, "sbyte"))
        s->bytes = 1, s->sign = true;
    else if (eat(&t, "ushort") || eat(&t, "short"))
        s->bytes = 2;
    else if (eat(&t, "sshort"))
        s->bytes = 2, s->sign = true;
    else if (eat(&t, "dwordx"))
        s->bytes = 4, s->count = (uint8_t)(*t++ - '0');
    else if (eat(&t, "dword"))
        s->bytes = 4;
    else
        return false;
    if (eat(&t, "_d16"))
        s->d16 = true;
    if (eat(&t, "_hi"))
        s->d16_hi = true;
    return *t == 0 && s->count >= 1 && s->count <= 4;
}

static bool atomic_name(const char *t, struct mem_sem *s)
{
    static const char *const names[] = {"swap", "cmpswap", "add", "sub", "rsub", "smin", "umin", "smax", "umax",
                                        "and", "or", "xor", "inc", "dec"};
    s->kind = MK_ATOMIC, s->bytes = 4, s->count = 1;
    size_t len = strlen(t);
    if (len > 3 && !strcmp(t + len - 3, "_x2"))
        s->bytes = 8, len -= 3;
    for (unsigned i = 0; i < KILN_ARRAY_LEN(names); i++)
        if (strlen(names[i]) == len && !strncmp(t, names[i], len)) {
            s->aop = (uint8_t)i;
            return true;
        }
    return false;
}

static void mem_parse_ds(const char *t, struct mem_sem *s)
{
    if (!strcmp(t, "nop")) {
        s->kind = MK_NOP;
        return;
    }
    if (strstr(t, "src2") || strstr(t, "gws") || strstr(t, "addtid") || !strcmp(t, "consume") ||
        !strcmp(t, "append") || strstr(t, "ordered") || strstr(t, "condxchg"))
        return;
    if (!strcmp(t, "swizzle_b32")) {
        s->kind = MK_SWIZZLE;
        return;
    }
    if (!strcmp(t, "permute_b32") || !strcmp(t, "bpermute_b32")) {
        s->kind = t[0] == 'p' ? MK_PERMUTE : MK_BPERMUTE;
        return;
    }
    /* the two-address forms: read2, write2, wrxchg2 (st64: offsets in
     * units of 64 elements) */
    static const struct {
        const char *prefix;
        uint8_t kind;
        bool st64;
    } pairs[] = {{"read2_b", MK_READ2, false},        {"read2st64_b", MK_READ2, true},
                 {"write2_b", MK_WRITE2, false},      {"write2st64_b", MK_WRITE2, true},
                 {"wrxchg2_rtn_b", MK_XCHG2, false}, {"wrxchg2st64_rtn_b", MK_XCHG2, true}};
    const char *u;
    for (unsigned i = 0; i < KILN_ARRAY_LEN(pairs); i++) {
        u = t;
        if (eat(&u, pairs[i].prefix)) {
            s->kind = pairs[i].kind, s->st64 = pairs[i].st64, s->count = 1;
            s->bytes = !strcmp(u, "64") ? 8 : 4;
            return;
        }
    }
    u = t;
    if (eat(&u, "read_")) {
        s->kind = MK_LOAD, s->count = 1;
        if (eat(&u, "b"))
            s->bytes = 4, s->count = (uint8_t)(atoi(u) / 32);
        else if (eat(&u, "i8"))
            s->bytes = 1, s->sign = true;
        else if (eat(&u, "u8"))
            s->bytes = 1;
        else if (eat(&u, "i16"))
            s->bytes = 2, s->sign = true;
        else if (eat(&u, "u16"))
            s->bytes = 2;
        else
            s->kind = MK_NONE;
        if (eat(&u, "_d16"))
            s->d16 = true;
        if (eat(&u, "_hi"))
            s->d16_hi = true;
        return;
    }
    if (eat(&u, "write_b")) {
        s->kind = MK_STORE, s->count = 1;
        int bits = atoi(u);
        if (bits == 8 || bits == 16)
            s->bytes = (uint8_t)(bits / 8);
        else
            s->bytes = 4, s->count = (uint8_t)(bits / 32);
        s->d16_hi = strstr(u, "d16_hi") != NULL;
        return;
    }
    /* read-modify-write: <op>[_rtn]_<type> */
    static const struct {
        const char *name;
        uint8_t aop;
    } ops[] = {{"add", AO_ADD}, {"sub", AO_SUB}, {"rsub", AO_RSUB}, {"inc", AO_INC}, {"dec", AO_DEC},
               {"min", AO_UMIN}, {"max", AO_UMAX}, {"and", AO_AND}, {"or", AO_OR}, {"xor", AO_XOR},
               {"mskor", AO_MSKOR}, {"wrxchg", AO_SWAP}, {"cmpst", AO_CMPST}, {"wrap", AO_WRAP}};
    const char *us = strrchr(t, '_');
    if (!us)
        return;
    const char *type = us + 1;
    size_t oplen = (size_t)(us - t);
    if (oplen > 4 && !strncmp(us - 4, "_rtn", 4))
        s->rtn = true, oplen -= 4;
    for (unsigned i = 0; i < KILN_ARRAY_LEN(ops); i++)
        if (strlen(ops[i].name) == oplen && !strncmp(t, ops[i].name, oplen)) {
            s->kind = MK_ATOMIC, s->aop = ops[i].aop, s->count = 1;
            s->bytes = type[1] == '6' ? 8 : 4;
            if (type[0] == 'i' && s->aop == AO_UMIN)
                s->aop = AO_SMIN;
            if (type[0] == 'i' && s->aop == AO_UMAX)
                s->aop = AO_SMAX;
            if (type[0] == 'f')
                s->aop = s->aop == AO_UMIN ? AO_FMIN : s->aop == AO_UMAX ? AO_FMAX : s->aop == AO_ADD ? AO_FADD
                       : s->aop == AO_CMPST ? AO_FCMPST : s->aop;
        }
}

static void mem_init(void)
{
    for (unsigned op = 1; op < WAVE_OP_COUNT; op++) {
        const struct wave_op_info *info = wave_op_info(op);
        if (!info)
            continue;
        struct mem_sem s = {0};
        const char *t = info->name;
        switch (info->family) {
        case WAVE_FAM_DS:
            if (eat(&t, "ds_"))
                mem_parse_ds(t, &s);
            break;
        case WAVE_FAM_MUBUF:
        case WAVE_FAM_FLAT:
        case WAVE_FAM_GLOBAL:
        case WAVE_FAM_SCRATCH:
            if (!(eat(&t, "buffer_") || eat(&t, "flat_") || eat(&t, "global_") || eat(&t, "scratch_")))
                break;
            if (!strcmp(t, "wbinvl1") || !strcmp(t, "wbinvl1_vol"))
                s.kind = MK_NOP;
            else if (eat(&t, "load_"))
                s.kind = mem_type(t, &s) ? MK_LOAD : MK_NONE;
            else if (eat(&t, "store_"))
                s.kind = !strncmp(t, "lds", 3) ? MK_NONE : mem_type(t, &s) ? MK_STORE : MK_NONE;
            else if (eat(&t, "atomic_"))
                s.kind = atomic_name(t, &s) ? MK_ATOMIC : MK_NONE;
            break;
        case WAVE_FAM_SMEM:
            if (eat(&t, "s_atomic_") || eat(&t, "s_buffer_atomic_"))
                s.kind = atomic_name(t, &s) ? MK_ATOMIC : MK_NONE;
            break;
        default: break;
        }
        mem_table[op] = s;
    }
}

/* One atomic read-modify-write of a bytes-wide value at p: data and cmp
 * as the op takes them; returns the old value. */
static uint64_t atomic_apply(uint8_t *p, uint32_t bytes, uint8_t aop, uint64_t data, uint64_t cmp)
{
    uint64_t old = ld(p, bytes), nv = old;
    uint64_t mask = bytes == 8 ? UINT64_MAX : 0xffffffffu;
    int64_t so = bytes == 8 ? (int64_t)old : (int32_t)old, sd = bytes == 8 ? (int64_t)data : (int32_t)data;
    double fo, fd;
    if (bytes == 8) {
        memcpy(&fo, &old, 8);
        memcpy(&fd, &data, 8);
    } else {
        float a, b;
        uint32_t x = (uint32_t)old, y = (uint32_t)data;
        memcpy(&a, &x, 4);
        memcpy(&b, &y, 4);
        fo = a, fd = b;
    }
    switch (aop) {
    case AO_SWAP: nv = data; break;
    case AO_CMPSWAP: nv = old == cmp ? data : old; break;
    case AO_ADD: nv = old + data; break;
    case AO_SUB: nv = old - data; break;
    case AO_RSUB: nv = data - old; break;
    case AO_SMIN: nv = so < sd ? old : data; break;
    case AO_UMIN: nv = old < data ? old : data; break;
    case AO_SMAX: nv = so > sd ? old : data; break;
    case AO_UMAX: nv = old > data ? old : data; break;
    case AO_AND: nv = old & data; break;
    case AO_OR: nv = old | data; break;
    case AO_XOR: nv = old ^ data; break;
    case AO_INC: nv = old >= data ? 0 : old + 1; break;
    case AO_DEC: nv = (old == 0 || old > data) ? data : old - 1; break;
    case AO_MSKOR: nv = (old & ~data) | cmp; break;
    case AO_CMPST: nv = old == data ? cmp : old; break;          /* ds_cmpst: compare data0, store data1 */
    case AO_FCMPST: nv = fo == fd ? cmp : old; break;
    case AO_WRAP: nv = old >= data ? old - data : old + cmp; break;
    case AO_FMIN: case AO_FMAX: case AO_FADD: {
        double r = aop == AO_FADD ? fo + fd : aop == AO_FMIN ? (isnan(fo) ? fd : isnan(fd) ? fo : fmin(fo, fd))
                                                              : (isnan(fo) ? fd : isnan(fd) ? fo : fmax(fo, fd));
        if (bytes == 8)
            memcpy(&nv, &r, 8);
        else {
            float f = (float)r;
            uint32_t x;
            memcpy(&x, &f, 4);
            nv = x;
        }
        break;
    }
    }
    st(p, nv & mask, bytes);
    return old;
}

/* The register value of a data operand for a lane: n dwords from the
 * operand's first register. */
static uint64_t vdata(const struct wave *w, const struct wave_operand *o, int lane, unsigned dword, unsigned n)
{
    if (o->kind != WAVE_OPND_VGPR)
        return 0;
    uint64_t v = w->v[(o->reg + dword) & 0xff][lane];
    if (n == 2)
        v |= (uint64_t)w->v[(o->reg + dword + 1) & 0xff][lane] << 32;
    return v;
}

static void vput(struct wave *w, const struct wave_operand *o, int lane, unsigned dword, uint32_t v)
{
    if (o->kind == WAVE_OPND_VGPR)
        w->v[(o->reg + dword) & 0xff][lane] = v;
}

/* A load's element into its register, per d16 and sign. */
static void load_elem(struct wave *w, const struct wave_operand *dst, int lane, unsigned i, const struct mem_sem *s,
                      uint64_t v)
{
    if (s->d16) {
        /* a 16-bit element into a register's half, the other half kept */
        unsigned reg = i / 2, hi = s->d16_hi ? 1 : i & 1;
        uint32_t h = (uint32_t)v & 0xffff;
        if (s->bytes == 1)
            h = s->sign ? (uint32_t)(uint16_t)(int8_t)v : (uint32_t)(uint8_t)v;
        uint32_t old = dst->kind == WAVE_OPND_VGPR ? w->v[(dst->reg + reg) & 0xff][lane] : 0;
        vput(w, dst, lane, reg, hi ? (old & 0xffff) | h << 16 : (old & 0xffff0000u) | h);
        return;
    }
    uint32_t r = (uint32_t)v;
    if (s->bytes == 1)
        r = s->sign ? (uint32_t)(int8_t)v : (uint8_t)v;
    else if (s->bytes == 2)
        r = s->sign ? (uint32_t)(int16_t)v : (uint16_t)v;
    vput(w, dst, lane, i, r);
}

/* A store's element from its register. */
static uint64_t store_elem(const struct wave *w, const struct wave_operand *src, int lane, unsigned i,
                           const struct mem_sem *s)
{
    if (s->d16) {
        uint32_t r = (uint32_t)vdata(w, src, lane, i / 2, 1);
        return (s->d16_hi || (i & 1)) ? r >> 16 : r & 0xffff;
    }
    uint32_t r = (uint32_t)vdata(w, src, lane, i, 1);
    return s->d16_hi ? r >> 16 : r;
}

/* FLAT, GLOBAL, SCRATCH and MUBUF: per lane, an address then the access. */
static kiln_result vmem(struct machine *m, struct wave *w, const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const struct mem_sem *s = &mem_table[in->op];
    if (s->kind == MK_NOP)
        return KILN_OK;
    if (s->kind == MK_NONE || in->mods.lds || in->mods.tfe)
        return interp_fail(m, KILN_ERR_INVALID, "%s%s is not run by kiln's reference interpreter", info->name,
                           in->mods.lds ? " with lds" : in->mods.tfe ? " with tfe" : "");
    bool mubuf = info->family == WAVE_FAM_MUBUF;
    const struct wave_operand *data = mubuf ? &in->src[3] : &in->src[2];
    uint64_t exec = wv_exec(w);
    /* MUBUF: the buffer resource */
    uint64_t base = 0;
    uint32_t stride = 0, es = 4, is = 64;
    bool swz = false, add_tid = false;
    if (mubuf) {
        const struct wave_operand *r = &in->src[1];
        uint32_t d0 = interp_sget(w, r->reg), d1 = interp_sget(w, r->reg + 1u), d3 = interp_sget(w, r->reg + 3u);
        base = ((uint64_t)(d1 & 0xffff) << 32 | d0) + sv32(w, &in->src[2]);
        stride = (d1 >> 16) & 0x3fff;
        swz = d1 >> 31;
        es = 2u << ((d3 >> 19) & 3);
        is = 8u << ((d3 >> 21) & 3);
        add_tid = (d3 >> 23) & 1;
    }
    uint32_t elems = s->kind == MK_ATOMIC ? 1 : s->count;
    for (int l = 0; l < WAVE_LANES; l++) {
        if (!((exec >> l) & 1))
            continue;
        /* the address of element 0 */
        uint64_t a = 0;
        switch (info->family) {
        case WAVE_FAM_FLAT:
            a = vdata(w, &in->src[0], l, 0, 2) + (uint64_t)(int64_t)in->mods.offset;
            break;
        case WAVE_FAM_GLOBAL:
            if (in->src[1].kind == WAVE_OPND_SGPR)
                a = sv64(w, &in->src[1]) + (uint32_t)vdata(w, &in->src[0], l, 0, 1);
            else
                a = vdata(w, &in->src[0], l, 0, 2);
            a += (uint64_t)(int64_t)in->mods.offset;
            break;
        case WAVE_FAM_SCRATCH: {
            uint32_t off = (uint32_t)in->mods.offset;
            if (in->src[1].kind == WAVE_OPND_SGPR)
                off += sv32(w, &in->src[1]);
            if (in->src[0].kind == WAVE_OPND_VGPR)
                off += (uint32_t)vdata(w, &in->src[0], l, 0, 1);
            a = (uint64_t)WAVE_PRIVATE_HI << 32 | off;
            break;
        }
        default: { /* MUBUF */
            uint64_t index = 0, offset = (uint32_t)in->mods.offset;
            unsigned vi = 0;
            if (in->mods.idxen)
                index = (uint32_t)vdata(w, &in->src[0], l, vi++, 1);
            if (in->mods.offen)
                offset += (uint32_t)vdata(w, &in->src[0], l, vi, 1);
            if (add_tid)
                index += (uint64_t)l;
            if (swz)
                a = base + (index / is * stride + offset / es * es) * is + index % is * es + offset % es;
            else
                a = base + index * stride + offset;
            break;
        }
        }
        if (s->kind == MK_ATOMIC) {
            uint8_t *p = flat_at(m, w, a, s->bytes, true, l);
            if (!p)
                return KILN_ERR_INVALID;
            unsigned half = s->bytes / 4;
            uint64_t dv = vdata(w, data, l, 0, half), cv = 0;
            if (s->aop == AO_CMPSWAP)
                cv = vdata(w, data, l, half, half);
            uint64_t old = atomic_apply(p, s->bytes, s->aop, dv, cv);
            if (in->mods.glc) {
                vput(w, &in->dst[0], l, 0, (uint32_t)old);
                if (half == 2)
                    vput(w, &in->dst[0], l, 1, (uint32_t)(old >> 32));
            }
            continue;
        }
        for (uint32_t i = 0; i < elems; i++) {
            uint64_t ea = a + (uint64_t)i * s->bytes;
            if (mubuf && swz)   /* a swizzled element moves to the next element's place */
                ea = a + (uint64_t)(i * s->bytes) / es * es * is + (i * s->bytes) % es;
            uint8_t *p = flat_at(m, w, ea, s->bytes, s->kind == MK_STORE, l);
            if (!p)
                return KILN_ERR_INVALID;
            if (s->kind == MK_LOAD)
                load_elem(w, &in->dst[0], l, i, s, ld(p, s->bytes));
            else
                st(p, store_elem(w, data, l, i, s), s->bytes);
        }
    }
    return KILN_OK;
}

/* DS: LDS, per lane. */
static kiln_result ds(struct machine *m, struct wave *w, const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const struct mem_sem *s = &mem_table[in->op];
    uint64_t exec = wv_exec(w);
    if (s->kind == MK_NOP)
        return KILN_OK;
    if (s->kind == MK_NONE || in->mods.gds)
        return interp_fail(m, KILN_ERR_INVALID, "%s%s is not run by kiln's reference interpreter", info->name,
                           in->mods.gds ? " with gds" : "");
    uint32_t off16 = (uint32_t)in->mods.offset1 << 8 | in->mods.offset0;
    if (s->kind == MK_SWIZZLE || s->kind == MK_PERMUTE || s->kind == MK_BPERMUTE) {
        uint32_t out[WAVE_LANES], src[WAVE_LANES];
        const struct wave_operand *d0 = s->kind == MK_SWIZZLE ? &in->src[0] : &in->src[1];
        for (int l = 0; l < WAVE_LANES; l++)
            src[l] = (exec >> l) & 1 ? (uint32_t)vdata(w, d0, l, 0, 1) : 0, out[l] = 0;
        if (s->kind == MK_PERMUTE) {
            for (int l = 0; l < WAVE_LANES; l++)
                if ((exec >> l) & 1) {
                    int t = (int)((((uint32_t)vdata(w, &in->src[0], l, 0, 1) + off16) >> 2) & 63);
                    out[t] = src[l];
                }
        } else {
            for (int l = 0; l < WAVE_LANES; l++) {
                if (!((exec >> l) & 1))
                    continue;
                int t;
                if (s->kind == MK_BPERMUTE)
                    t = (int)((((uint32_t)vdata(w, &in->src[0], l, 0, 1) + off16) >> 2) & 63);
                else if (off16 & 0x8000)
                    t = (l & ~3) | (int)((off16 >> (2 * (l & 3))) & 3);
                else {
                    int and_m = off16 & 31, or_m = (off16 >> 5) & 31, xor_m = (off16 >> 10) & 31;
                    t = (l & ~31) | ((((l & 31) & and_m) | or_m) ^ xor_m);
                }
                out[l] = (exec >> t) & 1 ? src[t] : 0;
            }
        }
        for (int l = 0; l < WAVE_LANES; l++)
            if ((exec >> l) & 1)
                vput(w, &in->dst[0], l, 0, out[l]);
        return KILN_OK;
    }
    for (int l = 0; l < WAVE_LANES; l++) {
        if (!((exec >> l) & 1))
            continue;
        uint32_t addr = (uint32_t)vdata(w, &in->src[0], l, 0, 1);
        switch (s->kind) {
        case MK_LOAD:
        case MK_STORE: {
            uint32_t n = (uint32_t)s->bytes * s->count;
            uint8_t *p = lds_at(m, (uint64_t)addr + off16, n, l);
            if (!p)
                return KILN_ERR_INVALID;
            for (uint32_t i = 0; i < s->count; i++) {
                if (s->kind == MK_LOAD)
                    load_elem(w, &in->dst[0], l, i, s, ld(p + i * s->bytes, s->bytes));
                else
                    st(p + i * s->bytes, store_elem(w, &in->src[1], l, i, s), s->bytes);
            }
            break;
        }
        case MK_READ2:
        case MK_WRITE2:
        case MK_XCHG2: {
            uint32_t scale = s->bytes * (s->st64 ? 64u : 1u), words = s->bytes / 4;
            for (int e = 0; e < 2; e++) {
                uint64_t a = (uint64_t)addr + (uint64_t)(e ? in->mods.offset1 : in->mods.offset0) * scale;
                uint8_t *p = lds_at(m, a, s->bytes, l);
                if (!p)
                    return KILN_ERR_INVALID;
                uint64_t old = ld(p, s->bytes);
                if (s->kind != MK_READ2)
                    st(p, vdata(w, &in->src[1 + e], l, 0, words), s->bytes);
                if (s->kind != MK_WRITE2)
                    for (uint32_t k = 0; k < words; k++)
                        vput(w, &in->dst[0], l, e * words + k, (uint32_t)(old >> (32 * k)));
            }
            break;
        }
        case MK_ATOMIC: {
            uint8_t *p = lds_at(m, (uint64_t)addr + off16, s->bytes, l);
            if (!p)
                return KILN_ERR_INVALID;
            unsigned words = s->bytes / 4;
            uint64_t old = atomic_apply(p, s->bytes, s->aop, vdata(w, &in->src[1], l, 0, words),
                                        vdata(w, &in->src[2], l, 0, words));
            if (s->rtn)
                for (unsigned k = 0; k < words; k++)
                    vput(w, &in->dst[0], l, k, (uint32_t)(old >> (32 * k)));
            break;
        }
        default: break;
        }
    }
    return KILN_OK;
}

/* SMEM */
static kiln_result smem(struct machine *m, struct wave *w, const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const char *n = info->name;
    if (strstr(n, "dcache") || !strcmp(n, "s_atc_probe") || !strcmp(n, "s_atc_probe_buffer"))
        return KILN_OK;
    if (!strcmp(n, "s_memtime") || !strcmp(n, "s_memrealtime")) {
        sdst64(w, in, m->executed);
        return KILN_OK;
    }
    if (strstr(n, "scratch"))
        return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", n);
    bool buffer = !strncmp(n, "s_buffer_", 9);
    uint64_t base = sv64(w, &in->src[0]);
    if (buffer)
        base &= 0xffffffffffffull;
    uint64_t a = base + sv32(w, &in->src[1]);
    a &= ~3ull;
    const struct mem_sem *s = &mem_table[in->op];
    if (s->kind == MK_ATOMIC) {
        uint8_t *p = mem_at(m, a, s->bytes, true, -1);
        if (!p)
            return KILN_ERR_INVALID;
        const struct wave_operand *d = &in->src[2];
        unsigned half = s->bytes / 4;
        uint64_t dv = 0, cv = 0;
        for (unsigned k = 0; k < half; k++) {
            dv |= (uint64_t)interp_sget(w, d->reg + k) << (32 * k);
            if (s->aop == AO_CMPSWAP)
                cv |= (uint64_t)interp_sget(w, d->reg + half + k) << (32 * k);
        }
        uint64_t old = atomic_apply(p, s->bytes, s->aop, dv, cv);
        if (in->mods.glc)
            for (unsigned k = 0; k < half; k++)
                sset(w, in->dst[0].reg + k, (uint32_t)(old >> (32 * k)));
        return KILN_OK;
    }
    bool store = strstr(n, "_store_") != NULL;
    const struct wave_operand *r = store ? &in->src[2] : &in->dst[0];
    uint32_t count = r->count ? r->count : 1;
    uint8_t *p = mem_at(m, a, 4 * count, store, -1);
    if (!p)
        return KILN_ERR_INVALID;
    for (uint32_t k = 0; k < count; k++) {
        if (store)
            st(p + 4 * k, interp_sget(w, r->reg + k), 4);
        else
            sset(w, r->reg + k, (uint32_t)ld(p + 4 * k, 4));
    }
    return KILN_OK;
}

/* ---- scalar ALU and control ----------------------------------------------------------------- */

static uint32_t hwreg_read(const struct machine *m, const struct wave *w, unsigned id)
{
    switch (id) {
    case 1: return w->mode;
    case 2: return (w->scc ? 1u : 0) | (wv_exec(w) == 0) << 9 | (wv_vcc(w) == 0) << 10;   /* STATUS */
    case 4: return w->index & 15;                                                          /* HW_ID: wave id */
    case 6: return ((m->lds_size + 255) / 256) << 12;                                      /* LDS_ALLOC */
    default: return 0;
    }
}

/* A taken branch: simm16 dwords from the next instruction (fetch judges
 * where that lands). */
static void branch_to(struct wave *w, const struct wave_instr *in, uint64_t next)
{
    int32_t simm = (int16_t)imm_of(in);
    w->pc = next + (uint64_t)((int64_t)simm * 4);
}

static kiln_result salu(struct machine *m, struct wave *w, const struct wave_instr *in, uint64_t next)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const struct wave_operand *s0 = &in->src[0], *s1 = &in->src[1];
    uint32_t a = sv32(w, s0), b = sv32(w, s1), r32;
    uint64_t a64 = sv64(w, s0), b64 = sv64(w, s1), r64;
    uint64_t exec = wv_exec(w);
    switch (in->op) {
    /* SOP1 */
    case WAVE_OP_S_MOV_B32: sdst32(w, in, a); break;
    case WAVE_OP_S_MOV_B64: sdst64(w, in, a64); break;
    case WAVE_OP_S_CMOV_B32: if (w->scc) sdst32(w, in, a); break;
    case WAVE_OP_S_CMOV_B64: if (w->scc) sdst64(w, in, a64); break;
    case WAVE_OP_S_NOT_B32: r32 = ~a; w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_NOT_B64: r64 = ~a64; w->scc = r64 != 0; sdst64(w, in, r64); break;
    case WAVE_OP_S_WQM_B32: case WAVE_OP_S_WQM_B64:
        r64 = 0;
        for (int q = 0; q < 64; q += 4)
            if ((a64 >> q) & 15)
                r64 |= 15ull << q;
        if (in->op == WAVE_OP_S_WQM_B32)
            r64 &= 0xffffffffu, sdst32(w, in, (uint32_t)r64);
        else
            sdst64(w, in, r64);
        w->scc = r64 != 0;
        break;
    case WAVE_OP_S_BREV_B32:
        r32 = 0;
        for (int i = 0; i < 32; i++)
            r32 |= ((a >> i) & 1u) << (31 - i);
        sdst32(w, in, r32);
        break;
    case WAVE_OP_S_BREV_B64:
        r64 = 0;
        for (int i = 0; i < 64; i++)
            r64 |= ((a64 >> i) & 1u) << (63 - i);
        sdst64(w, in, r64);
        break;
    case WAVE_OP_S_BCNT0_I32_B32: r32 = 32 - (uint32_t)__builtin_popcount(a); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT0_I32_B64: r32 = 64 - (uint32_t)__builtin_popcountll(a64); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT1_I32_B32: r32 = (uint32_t)__builtin_popcount(a); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_BCNT1_I32_B64: r32 = (uint32_t)__builtin_popcountll(a64); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_FF0_I32_B32: sdst32(w, in, ~a ? (uint32_t)__builtin_ctz(~a) : UINT32_MAX); break;
    case WAVE_OP_S_FF0_I32_B64: sdst32(w, in, ~a64 ? (uint32_t)__builtin_ctzll(~a64) : UINT32_MAX); break;
    case WAVE_OP_S_FF1_I32_B32: sdst32(w, in, a ? (uint32_t)__builtin_ctz(a) : UINT32_MAX); break;
    case WAVE_OP_S_FF1_I32_B64: sdst32(w, in, a64 ? (uint32_t)__builtin_ctzll(a64) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32_B32: sdst32(w, in, a ? (uint32_t)__builtin_clz(a) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32_B64: sdst32(w, in, a64 ? (uint32_t)__builtin_clzll(a64) : UINT32_MAX); break;
    case WAVE_OP_S_FLBIT_I32:
        sdst32(w, in, a == 0 || a == UINT32_MAX ? UINT32_MAX : (uint32_t)__builtin_clz((int32_t)a < 0 ? ~a : a) - 1);
        break;
    case WAVE_OP_S_FLBIT_I32_I64:
        sdst32(w, in, a64 == 0 || a64 == UINT64_MAX ? UINT32_MAX
                                                    : (uint32_t)__builtin_clzll((int64_t)a64 < 0 ? ~a64 : a64) - 1);
        break;
    case WAVE_OP_S_SEXT_I32_I8: sdst32(w, in, (uint32_t)(int8_t)a); break;
    case WAVE_OP_S_SEXT_I32_I16: sdst32(w, in, (uint32_t)(int16_t)a); break;
    case WAVE_OP_S_BITSET0_B32: sdst32(w, in, sv32(w, &in->dst[0]) & ~(1u << (a & 31))); break;
    case WAVE_OP_S_BITSET1_B32: sdst32(w, in, sv32(w, &in->dst[0]) | 1u << (a & 31)); break;
    case WAVE_OP_S_BITSET0_B64: sdst64(w, in, sv64(w, &in->dst[0]) & ~(1ull << (a & 63))); break;
    case WAVE_OP_S_BITSET1_B64: sdst64(w, in, sv64(w, &in->dst[0]) | 1ull << (a & 63)); break;
    case WAVE_OP_S_GETPC_B64: sdst64(w, in, WAVE_IMAGE_BASE + next); break;
    case WAVE_OP_S_SETPC_B64: w->pc = a64 - WAVE_IMAGE_BASE; break;
    case WAVE_OP_S_SWAPPC_B64: sdst64(w, in, WAVE_IMAGE_BASE + next); w->pc = a64 - WAVE_IMAGE_BASE; break;
    case WAVE_OP_S_AND_SAVEEXEC_B64: case WAVE_OP_S_OR_SAVEEXEC_B64: case WAVE_OP_S_XOR_SAVEEXEC_B64:
    case WAVE_OP_S_ANDN2_SAVEEXEC_B64: case WAVE_OP_S_ORN2_SAVEEXEC_B64: case WAVE_OP_S_NAND_SAVEEXEC_B64:
    case WAVE_OP_S_NOR_SAVEEXEC_B64: case WAVE_OP_S_XNOR_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_SAVEEXEC_B64:
    case WAVE_OP_S_ORN1_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_WREXEC_B64: case WAVE_OP_S_ANDN2_WREXEC_B64: {
        uint64_t e;
        switch (in->op) {
        case WAVE_OP_S_AND_SAVEEXEC_B64: e = a64 & exec; break;
        case WAVE_OP_S_OR_SAVEEXEC_B64: e = a64 | exec; break;
        case WAVE_OP_S_XOR_SAVEEXEC_B64: e = a64 ^ exec; break;
        case WAVE_OP_S_ANDN2_SAVEEXEC_B64: case WAVE_OP_S_ANDN2_WREXEC_B64: e = a64 & ~exec; break;
        case WAVE_OP_S_ORN2_SAVEEXEC_B64: e = a64 | ~exec; break;
        case WAVE_OP_S_NAND_SAVEEXEC_B64: e = ~(a64 & exec); break;
        case WAVE_OP_S_NOR_SAVEEXEC_B64: e = ~(a64 | exec); break;
        case WAVE_OP_S_XNOR_SAVEEXEC_B64: e = ~(a64 ^ exec); break;
        case WAVE_OP_S_ANDN1_SAVEEXEC_B64: case WAVE_OP_S_ANDN1_WREXEC_B64: e = ~a64 & exec; break;
        default: e = ~a64 | exec; break;   /* orn1 */
        }
        bool wrexec = in->op == WAVE_OP_S_ANDN1_WREXEC_B64 || in->op == WAVE_OP_S_ANDN2_WREXEC_B64;
        set_exec(w, e);
        sdst64(w, in, wrexec ? e : exec);
        w->scc = e != 0;
        break;
    }
    case WAVE_OP_S_QUADMASK_B32: case WAVE_OP_S_QUADMASK_B64:
        r64 = 0;
        for (int q = 0; q < 16; q++)
            if ((a64 >> (4 * q)) & 15)
                r64 |= 1ull << q;
        if (in->op == WAVE_OP_S_QUADMASK_B32)
            r64 &= 0xff, sdst32(w, in, (uint32_t)r64);
        else
            sdst64(w, in, r64);
        w->scc = r64 != 0;
        break;
    case WAVE_OP_S_MOVRELS_B32: sdst32(w, in, interp_sget(w, (s0->reg + w->s[WAVE_SREG_M0]) & 0x7f)); break;
    case WAVE_OP_S_MOVRELS_B64: {
        unsigned r = (s0->reg + w->s[WAVE_SREG_M0]) & 0x7f;
        sdst64(w, in, (uint64_t)interp_sget(w, (r + 1) & 0x7f) << 32 | interp_sget(w, r));
        break;
    }
    case WAVE_OP_S_MOVRELD_B32: sset(w, (in->dst[0].reg + w->s[WAVE_SREG_M0]) & 0x7f, a); break;
    case WAVE_OP_S_MOVRELD_B64: {
        unsigned r = (in->dst[0].reg + w->s[WAVE_SREG_M0]) & 0x7f;
        sset(w, r, (uint32_t)a64);
        sset(w, (r + 1) & 0x7f, (uint32_t)(a64 >> 32));
        break;
    }
    case WAVE_OP_S_ABS_I32: r32 = (int32_t)a < 0 ? 0u - a : a; w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_SET_GPR_IDX_IDX: w->gpr_idx = a & 0xff; break;
    case WAVE_OP_S_BITREPLICATE_B64_B32:
        r64 = 0;
        for (int i = 0; i < 32; i++)
            if ((a >> i) & 1)
                r64 |= 3ull << (2 * i);
        sdst64(w, in, r64);
        break;

    /* SOP2 */
    case WAVE_OP_S_ADD_U32: r64 = (uint64_t)a + b; w->scc = r64 >> 32; sdst32(w, in, (uint32_t)r64); break;
    case WAVE_OP_S_SUB_U32: w->scc = b > a; sdst32(w, in, a - b); break;
    case WAVE_OP_S_ADD_I32:
        r32 = a + b;
        w->scc = ((a ^ r32) & (b ^ r32)) >> 31;
        sdst32(w, in, r32);
        break;
    case WAVE_OP_S_SUB_I32:
        r32 = a - b;
        w->scc = ((a ^ b) & (a ^ r32)) >> 31;
        sdst32(w, in, r32);
        break;
    case WAVE_OP_S_ADDC_U32: r64 = (uint64_t)a + b + w->scc; w->scc = r64 >> 32; sdst32(w, in, (uint32_t)r64); break;
    case WAVE_OP_S_SUBB_U32: r64 = (uint64_t)b + w->scc; w->scc = r64 > a; sdst32(w, in, (uint32_t)(a - r64)); break;
    case WAVE_OP_S_MIN_I32: w->scc = (int32_t)a < (int32_t)b; sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MIN_U32: w->scc = a < b; sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MAX_I32: w->scc = (int32_t)a > (int32_t)b; sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_MAX_U32: w->scc = a > b; sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_CSELECT_B32: sdst32(w, in, w->scc ? a : b); break;
    case WAVE_OP_S_CSELECT_B64: sdst64(w, in, w->scc ? a64 : b64); break;
#define LOGIC(op32, op64, expr)                                                                     \
    case op32: { uint64_t x = a, y = b; r32 = (uint32_t)(expr); w->scc = r32 != 0; sdst32(w, in, r32); break; } \
    case op64: { uint64_t x = a64, y = b64; r64 = (expr); w->scc = r64 != 0; sdst64(w, in, r64); break; }
    LOGIC(WAVE_OP_S_AND_B32, WAVE_OP_S_AND_B64, x & y)
    LOGIC(WAVE_OP_S_OR_B32, WAVE_OP_S_OR_B64, x | y)
    LOGIC(WAVE_OP_S_XOR_B32, WAVE_OP_S_XOR_B64, x ^ y)
    LOGIC(WAVE_OP_S_ANDN2_B32, WAVE_OP_S_ANDN2_B64, x & ~y)
    LOGIC(WAVE_OP_S_ORN2_B32, WAVE_OP_S_ORN2_B64, x | ~y)
    LOGIC(WAVE_OP_S_NAND_B32, WAVE_OP_S_NAND_B64, ~(x & y))
    LOGIC(WAVE_OP_S_NOR_B32, WAVE_OP_S_NOR_B64, ~(x | y))
    LOGIC(WAVE_OP_S_XNOR_B32, WAVE_OP_S_XNOR_B64, ~(x ^ y))
#undef LOGIC
    case WAVE_OP_S_LSHL_B32: r32 = a << (b & 31); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_LSHL_B64: r64 = a64 << (b & 63); w->scc = r64 != 0; sdst64(w, in, r64); break;
    case WAVE_OP_S_LSHR_B32: r32 = a >> (b & 31); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_LSHR_B64: r64 = a64 >> (b & 63); w->scc = r64 != 0; sdst64(w, in, r64); break;
    case WAVE_OP_S_ASHR_I32: r32 = (uint32_t)((int32_t)a >> (b & 31)); w->scc = r32 != 0; sdst32(w, in, r32); break;
    case WAVE_OP_S_ASHR_I64: r64 = (uint64_t)((int64_t)a64 >> (b & 63)); w->scc = r64 != 0; sdst64(w, in, r64); break;
    case WAVE_OP_S_BFM_B32: sdst32(w, in, (uint32_t)(((1ull << (a & 31)) - 1) << (b & 31))); break;
    case WAVE_OP_S_BFM_B64: sdst64(w, in, ((a & 63) == 0 ? 0 : (UINT64_MAX >> (64 - (a & 63)))) << (b & 63)); break;
    case WAVE_OP_S_MUL_I32: sdst32(w, in, a * b); break;
    case WAVE_OP_S_BFE_U32: case WAVE_OP_S_BFE_I32: {
        uint32_t off = b & 31, wid = (b >> 16) & 0x7f;
        r32 = wid == 0 ? 0 : (a >> off) & (wid >= 32 ? UINT32_MAX : (1u << wid) - 1);
        if (in->op == WAVE_OP_S_BFE_I32 && wid && wid < 32)
            r32 = (uint32_t)((int32_t)(r32 << (32 - wid)) >> (32 - wid));
        w->scc = r32 != 0;
        sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_BFE_U64: case WAVE_OP_S_BFE_I64: {
        uint32_t off = b & 63, wid = (b >> 16) & 0x7f;
        r64 = wid == 0 ? 0 : (a64 >> off) & (wid >= 64 ? UINT64_MAX : (1ull << wid) - 1);
        if (in->op == WAVE_OP_S_BFE_I64 && wid && wid < 64)
            r64 = (uint64_t)((int64_t)(r64 << (64 - wid)) >> (64 - wid));
        w->scc = r64 != 0;
        sdst64(w, in, r64);
        break;
    }
    case WAVE_OP_S_ABSDIFF_I32: {
        int64_t d = (int64_t)(int32_t)a - (int32_t)b;
        r32 = (uint32_t)(d < 0 ? -d : d);
        w->scc = r32 != 0;
        sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_MUL_HI_U32: sdst32(w, in, (uint32_t)(((uint64_t)a * b) >> 32)); break;
    case WAVE_OP_S_MUL_HI_I32: sdst32(w, in, (uint32_t)((uint64_t)((int64_t)(int32_t)a * (int32_t)b) >> 32)); break;
    case WAVE_OP_S_LSHL1_ADD_U32: case WAVE_OP_S_LSHL2_ADD_U32: case WAVE_OP_S_LSHL3_ADD_U32:
    case WAVE_OP_S_LSHL4_ADD_U32: {
        unsigned sh = in->op == WAVE_OP_S_LSHL1_ADD_U32 ? 1 : in->op == WAVE_OP_S_LSHL2_ADD_U32 ? 2
                    : in->op == WAVE_OP_S_LSHL3_ADD_U32 ? 3 : 4;
        r64 = ((uint64_t)a << sh) + b;
        w->scc = r64 > 0xffffffffu;
        sdst32(w, in, (uint32_t)r64);
        break;
    }
    case WAVE_OP_S_PACK_LL_B32_B16: sdst32(w, in, (a & 0xffff) | b << 16); break;
    case WAVE_OP_S_PACK_LH_B32_B16: sdst32(w, in, (a & 0xffff) | (b & 0xffff0000u)); break;
    case WAVE_OP_S_PACK_HH_B32_B16: sdst32(w, in, a >> 16 | (b & 0xffff0000u)); break;

    /* SOPC */
    case WAVE_OP_S_CMP_EQ_I32: case WAVE_OP_S_CMP_EQ_U32: w->scc = a == b; break;
    case WAVE_OP_S_CMP_LG_I32: case WAVE_OP_S_CMP_LG_U32: w->scc = a != b; break;
    case WAVE_OP_S_CMP_GT_I32: w->scc = (int32_t)a > (int32_t)b; break;
    case WAVE_OP_S_CMP_GE_I32: w->scc = (int32_t)a >= (int32_t)b; break;
    case WAVE_OP_S_CMP_LT_I32: w->scc = (int32_t)a < (int32_t)b; break;
    case WAVE_OP_S_CMP_LE_I32: w->scc = (int32_t)a <= (int32_t)b; break;
    case WAVE_OP_S_CMP_GT_U32: w->scc = a > b; break;
    case WAVE_OP_S_CMP_GE_U32: w->scc = a >= b; break;
    case WAVE_OP_S_CMP_LT_U32: w->scc = a < b; break;
    case WAVE_OP_S_CMP_LE_U32: w->scc = a <= b; break;
    case WAVE_OP_S_CMP_EQ_U64: w->scc = a64 == b64; break;
    case WAVE_OP_S_CMP_LG_U64: w->scc = a64 != b64; break;
    case WAVE_OP_S_BITCMP0_B32: w->scc = !((a >> (b & 31)) & 1); break;
    case WAVE_OP_S_BITCMP1_B32: w->scc = (a >> (b & 31)) & 1; break;
    case WAVE_OP_S_BITCMP0_B64: w->scc = !((a64 >> (b & 63)) & 1); break;
    case WAVE_OP_S_BITCMP1_B64: w->scc = (a64 >> (b & 63)) & 1; break;
    case WAVE_OP_S_SET_GPR_IDX_ON:
        w->gpr_idx_on = true;
        w->gpr_idx = a & 0xff;
        w->gpr_idx_mode = b & 15;
        break;

    /* SOPK */
    case WAVE_OP_S_MOVK_I32: sdst32(w, in, (uint32_t)(int16_t)imm_of(in)); break;
    case WAVE_OP_S_CMOVK_I32: if (w->scc) sdst32(w, in, (uint32_t)(int16_t)imm_of(in)); break;
    case WAVE_OP_S_CMPK_EQ_I32: w->scc = (int32_t)a == (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_LG_I32: w->scc = (int32_t)a != (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_GT_I32: w->scc = (int32_t)a > (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_GE_I32: w->scc = (int32_t)a >= (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_LT_I32: w->scc = (int32_t)a < (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_LE_I32: w->scc = (int32_t)a <= (int16_t)imm_of(in); break;
    case WAVE_OP_S_CMPK_EQ_U32: w->scc = a == (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LG_U32: w->scc = a != (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_GT_U32: w->scc = a > (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_GE_U32: w->scc = a >= (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LT_U32: w->scc = a < (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_CMPK_LE_U32: w->scc = a <= (imm_of(in) & 0xffff); break;
    case WAVE_OP_S_ADDK_I32: {
        uint32_t k = (uint32_t)(int16_t)imm_of(in), x = sv32(w, &in->dst[0]);
        r32 = x + k;
        w->scc = ((x ^ r32) & (k ^ r32)) >> 31;
        sdst32(w, in, r32);
        break;
    }
    case WAVE_OP_S_MULK_I32: sdst32(w, in, sv32(w, &in->dst[0]) * (uint32_t)(int16_t)imm_of(in)); break;
    case WAVE_OP_S_GETREG_B32: {
        uint32_t h = imm_of(in), id = h & 63, off = (h >> 6) & 31, size = ((h >> 11) & 31) + 1;
        uint32_t v = hwreg_read(m, w, id) >> off;
        sdst32(w, in, size >= 32 ? v : v & ((1u << size) - 1));
        break;
    }
    case WAVE_OP_S_SETREG_B32: case WAVE_OP_S_SETREG_IMM32_B32: {
        uint32_t h = 0, v = 0;
        /* src[0] is the value (a register, or the literal), src[1] hwreg */
        h = in->src[1].value;
        v = sv32(w, &in->src[0]);
        uint32_t id = h & 63, off = (h >> 6) & 31, size = ((h >> 11) & 31) + 1;
        uint32_t mask = (size >= 32 ? UINT32_MAX : (1u << size) - 1) << off;
        if (id == 1)
            w->mode = (w->mode & ~mask) | ((v << off) & mask);
        break;
    }
    case WAVE_OP_S_CALL_B64: sdst64(w, in, WAVE_IMAGE_BASE + next); branch_to(w, in, next); break;

    /* SOPP */
    case WAVE_OP_S_NOP: case WAVE_OP_S_WAITCNT: case WAVE_OP_S_SLEEP: case WAVE_OP_S_SETPRIO:
    case WAVE_OP_S_WAKEUP: case WAVE_OP_S_ICACHE_INV: case WAVE_OP_S_INCPERFLEVEL: case WAVE_OP_S_DECPERFLEVEL:
    case WAVE_OP_S_TTRACEDATA: case WAVE_OP_S_CBRANCH_CDBGSYS: case WAVE_OP_S_CBRANCH_CDBGUSER:
    case WAVE_OP_S_CBRANCH_CDBGSYS_OR_USER: case WAVE_OP_S_CBRANCH_CDBGSYS_AND_USER:
        break;
    case WAVE_OP_S_ENDPGM: case WAVE_OP_S_ENDPGM_SAVED: case WAVE_OP_S_ENDPGM_ORDERED_PS_DONE:
        w->status = WS_DONE;
        break;
    case WAVE_OP_S_BRANCH: branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_SCC0: if (!w->scc) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_SCC1: if (w->scc) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_VCCZ: if (wv_vcc(w) == 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_VCCNZ: if (wv_vcc(w) != 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_EXECZ: if (exec == 0) branch_to(w, in, next); break;
    case WAVE_OP_S_CBRANCH_EXECNZ: if (exec != 0) branch_to(w, in, next); break;
    case WAVE_OP_S_BARRIER: w->status = WS_BARRIER; break;
    case WAVE_OP_S_SET_GPR_IDX_OFF: w->gpr_idx_on = false; break;
    case WAVE_OP_S_SET_GPR_IDX_MODE: w->gpr_idx_mode = imm_of(in) & 15; break;
    case WAVE_OP_S_TRAP:
        return interp_fail(m, KILN_ERR_INVALID, "the wave traps (s_trap %u): kiln runs no trap handler", imm_of(in) & 0xff);
    default:
        return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", info->name);
    }
    return KILN_OK;
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
    w->pc = next;
    const struct wave_op_info *info = wave_op_info(in->op);
    if (!info)
        return interp_fail(m, KILN_ERR_INVALID, "an instruction without an op");
    switch (info->family) {
    case WAVE_FAM_SOP1: case WAVE_FAM_SOP2: case WAVE_FAM_SOPK: case WAVE_FAM_SOPC: case WAVE_FAM_SOPP:
        return salu(m, w, in, next);
    case WAVE_FAM_SMEM:
        return smem(m, w, in);
    case WAVE_FAM_DS:
        return ds(m, w, in);
    case WAVE_FAM_FLAT: case WAVE_FAM_GLOBAL: case WAVE_FAM_SCRATCH: case WAVE_FAM_MUBUF:
        return vmem(m, w, in);
    default:
        return interp_valu(m, w, in);
    }
}

/* ---- the dispatch --------------------------------------------------------------------------- */

static void wave_start(struct machine *m, struct wave *w, const uint32_t g[3], uint32_t index, const uint32_t block[3])
{
    const struct wave_kernel *k = m->k;
    const struct wave_setup *su = &k->setup;
    uint32_t (*v)[WAVE_LANES] = w->v;
    memset(w, 0, sizeof *w);
    w->v = v;
    memset(w->v, 0, sizeof(uint32_t) * WAVE_LANES * WAVE_VGPRS);
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
    set_exec(w, w->lanes);
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

static kiln_result setup(struct machine *m, const struct wave_run_desc *desc, uint32_t groups[3], uint32_t block[3])
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
        m->words[i] = (uint32_t)ld(c->image + 4 * i, 4);
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
            st(at, base, 8);
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
            st(at, lds_at_arg, 4);
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
    st(m->dispatch + 0, 2 /* kernel dispatch */, 2);
    st(m->dispatch + 2, di.dims, 2);
    for (int a = 0; a < 3; a++) {
        st(m->dispatch + 4 + 2 * a, block[a], 2);
        st(m->dispatch + 12 + 4 * a, (uint64_t)groups[a] * block[a], 4);
    }
    st(m->dispatch + 24, k->private_segment_size, 4);
    st(m->dispatch + 28, m->lds_size, 4);
    st(m->dispatch + 32, WAVE_IMAGE_BASE + k->kd_addr, 8);
    st(m->dispatch + 40, WAVE_KERNARG_BASE, 8);
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
    for (uint32_t i = 0; i < nwaves; i++)
        wave_start(m, &waves[i], g, i, block);
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
    pthread_once(&mem_once, mem_init);
    uint32_t groups[3], block[3];
    struct wave *waves = NULL;
    uint32_t nwaves = 0;
    kiln_result r = setup(m, d, groups, block);
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
    for (uint32_t j = 0; j < m->nregions; j++)
        free(m->regions[j].written);
    for (uint32_t i = 0; waves && i < nwaves; i++)
        free(waves[i].v);
    free(waves);
    free(m->words);
    free(m->slot);
    free(m->instrs);
    free(m->kernarg);
    free(m->lds);
    free(m->scratch);
    free(m);
    return r;
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
