/* SPDX-License-Identifier: MIT */
/*
 * interp_mem.c: the reference interpreter's memory instructions (see
 * interp.h): scalar memory, buffers, flat, global and scratch, LDS and its
 * swizzles and permutes, atomics.
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

void interp_mem_tables(void) { pthread_once(&mem_once, mem_init); }

/* One atomic read-modify-write of a bytes-wide value at p: data and cmp
 * as the op takes them; returns the old value. */
static uint64_t atomic_apply(uint8_t *p, uint32_t bytes, uint8_t aop, uint64_t data, uint64_t cmp)
{
    uint64_t old = interp_ld(p, bytes), nv = old;
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
    interp_st(p, nv & mask, bytes);
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
kiln_result interp_vmem(struct machine *m, struct wave *w, const struct wave_instr *in)
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
        base = ((uint64_t)(d1 & 0xffff) << 32 | d0) + interp_sv32(w, &in->src[2]);
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
                a = interp_sv64(w, &in->src[1]) + (uint32_t)vdata(w, &in->src[0], l, 0, 1);
            else
                a = vdata(w, &in->src[0], l, 0, 2);
            a += (uint64_t)(int64_t)in->mods.offset;
            break;
        case WAVE_FAM_SCRATCH: {
            uint32_t off = (uint32_t)in->mods.offset;
            if (in->src[1].kind == WAVE_OPND_SGPR)
                off += interp_sv32(w, &in->src[1]);
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
            uint8_t *p = interp_flat_at(m, w, a, s->bytes, true, l);
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
            uint8_t *p = interp_flat_at(m, w, ea, s->bytes, s->kind == MK_STORE, l);
            if (!p)
                return KILN_ERR_INVALID;
            if (s->kind == MK_LOAD)
                load_elem(w, &in->dst[0], l, i, s, interp_ld(p, s->bytes));
            else
                interp_st(p, store_elem(w, data, l, i, s), s->bytes);
        }
    }
    return KILN_OK;
}

/* DS: LDS, per lane. */
kiln_result interp_ds(struct machine *m, struct wave *w, const struct wave_instr *in)
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
            uint8_t *p = interp_lds_at(m, (uint64_t)addr + off16, n, l);
            if (!p)
                return KILN_ERR_INVALID;
            for (uint32_t i = 0; i < s->count; i++) {
                if (s->kind == MK_LOAD)
                    load_elem(w, &in->dst[0], l, i, s, interp_ld(p + i * s->bytes, s->bytes));
                else
                    interp_st(p + i * s->bytes, store_elem(w, &in->src[1], l, i, s), s->bytes);
            }
            break;
        }
        case MK_READ2:
        case MK_WRITE2:
        case MK_XCHG2: {
            uint32_t scale = s->bytes * (s->st64 ? 64u : 1u), words = s->bytes / 4;
            for (int e = 0; e < 2; e++) {
                uint64_t a = (uint64_t)addr + (uint64_t)(e ? in->mods.offset1 : in->mods.offset0) * scale;
                uint8_t *p = interp_lds_at(m, a, s->bytes, l);
                if (!p)
                    return KILN_ERR_INVALID;
                uint64_t old = interp_ld(p, s->bytes);
                if (s->kind != MK_READ2)
                    interp_st(p, vdata(w, &in->src[1 + e], l, 0, words), s->bytes);
                if (s->kind != MK_WRITE2)
                    for (uint32_t k = 0; k < words; k++)
                        vput(w, &in->dst[0], l, e * words + k, (uint32_t)(old >> (32 * k)));
            }
            break;
        }
        case MK_ATOMIC: {
            uint8_t *p = interp_lds_at(m, (uint64_t)addr + off16, s->bytes, l);
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
kiln_result interp_smem(struct machine *m, struct wave *w, const struct wave_instr *in)
{
    const struct wave_op_info *info = wave_op_info(in->op);
    const char *n = info->name;
    if (strstr(n, "dcache") || !strcmp(n, "s_atc_probe") || !strcmp(n, "s_atc_probe_buffer"))
        return KILN_OK;
    if (!strcmp(n, "s_memtime") || !strcmp(n, "s_memrealtime")) {
        interp_sdst64(w, in, m->executed);
        return KILN_OK;
    }
    if (strstr(n, "scratch"))
        return interp_fail(m, KILN_ERR_INVALID, "%s is not run by kiln's reference interpreter", n);
    bool buffer = !strncmp(n, "s_buffer_", 9);
    uint64_t base = interp_sv64(w, &in->src[0]);
    if (buffer)
        base &= 0xffffffffffffull;
    uint64_t a = base + interp_sv32(w, &in->src[1]);
    a &= ~3ull;
    const struct mem_sem *s = &mem_table[in->op];
    if (s->kind == MK_ATOMIC) {
        uint8_t *p = interp_mem_at(m, a, s->bytes, true, -1);
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
                interp_sset(w, in->dst[0].reg + k, (uint32_t)(old >> (32 * k)));
        return KILN_OK;
    }
    bool store = strstr(n, "_store_") != NULL;
    const struct wave_operand *r = store ? &in->src[2] : &in->dst[0];
    uint32_t count = r->count ? r->count : 1;
    uint8_t *p = interp_mem_at(m, a, 4 * count, store, -1);
    if (!p)
        return KILN_ERR_INVALID;
    for (uint32_t k = 0; k < count; k++) {
        if (store)
            interp_st(p + 4 * k, interp_sget(w, r->reg + k), 4);
        else
            interp_sset(w, r->reg + k, (uint32_t)interp_ld(p + 4 * k, 4));
    }
    return KILN_OK;
}
