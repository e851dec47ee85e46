/* SPDX-License-Identifier: MIT */
/*
 * fold_guard.c: a SPIR-V rewrite that keeps SPIRV-Tools' optimizer from ever
 * folding a signed division by -1.
 *
 * kiln runs SPIRV-Tools' optimizer in its own process (optimize.cpp) on
 * modules whose constants it does not control: a program's own constants,
 * and the words a variant bakes. Debian 12's SPIRV-Tools folds a constant
 * OpSDiv / OpSRem / OpSMod in host C++ arithmetic, and INT_MIN / -1 (32 or
 * 64 bits) traps there (SIGFPE), killing the process. Rather than predicting
 * which words could reach such a fold, this pass makes the fold impossible
 * before the optimizer sees the module: every
 *
 *     r = a OpSDiv b          becomes   c = OpIEqual b, -1
 *                                       s = OpSelect c, 1, b
 *                                       q = a OpSDiv s
 *                                       n = OpISub 0, a
 *                                       r = OpSelect c, n, q
 *
 * and OpSRem / OpSMod the same with r = OpSelect c, 0, q. The divisor the
 * optimizer can see is never -1 (it is 1 exactly when b is -1, b otherwise),
 * so no fold of INT_MIN / -1 can happen, whatever constants reach it. Values
 * are kept exactly: a / -1 is -a (0 - a wraps INT_MIN to INT_MIN, which is
 * fine: the SPIR-V specification leaves INT_MIN / -1 undefined), a % -1 is 0,
 * and every other divisor divides as before. r keeps its id, so decorations
 * and uses stay; the new ids come after the header's bound, which grows.
 *
 * Scalars and vectors of 32- and 64-bit integers are guarded. The -1, 1 and 0
 * constants (and a bool or bool-vector type when the module has none) are
 * added at the end of the global section, before the first OpFunction. A
 * module the pass cannot guard (another integer width, a division inside an
 * OpSpecConstantOp, a malformed stream) is reported and must not be
 * optimized; prog_compile then keeps it unoptimized and counts it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv/unified1/spirv.h>

#include "program.h"
#include "spirv_out.h"

static _Atomic uint64_t guarded_ops, unguarded_modules;

void prog_fold_guard_counts(uint64_t *ops, uint64_t *skipped)
{
    if (ops)
        *ops = atomic_load(&guarded_ops);
    if (skipped)
        *skipped = atomic_load(&unguarded_modules);
}

void prog_fold_guard_count_skip(void) { atomic_fetch_add(&unguarded_modules, 1); }

/* A result type some guarded op uses, with the ids of what its guard needs. */
struct gtype {
    uint32_t type;        /* the int scalar or int vector type */
    uint32_t scalar;      /* its component (itself for a scalar) */
    uint32_t count;       /* components; 1 for a scalar */
    uint32_t width;       /* 32 or 64 */
    uint32_t bool_type;   /* bool or bvec<count>: existing or new */
    bool bool_new;
    uint32_t m1, one, zero;            /* constants of `type` */
    uint32_t sm1, sone, szero;         /* scalar constants, for vectors */
};

static void put_int_const(struct spirv_out *o, uint32_t type, uint32_t id, uint32_t width, int64_t v)
{
    uint32_t a[4] = {type, id, (uint32_t)(uint64_t)v, (uint32_t)((uint64_t)v >> 32)};
    spirv_put_op(o, SpvOpConstant, a, width == 64 ? 4 : 3);
}

/* A vector constant whose `count` components are all `comp`. */
static void put_splat(struct spirv_out *o, uint32_t type, uint32_t id, uint32_t comp, uint32_t count)
{
    uint32_t head[3] = {((3 + count) << 16) | SpvOpConstantComposite, type, id};
    spirv_put(o, head, 3);
    for (uint32_t i = 0; i < count; i++)
        spirv_put(o, &comp, 1);
}

static bool is_guarded_op(uint32_t op) { return op == SpvOpSDiv || op == SpvOpSRem || op == SpvOpSMod; }

static const char *op_name(uint32_t op)
{
    return op == SpvOpSDiv ? "OpSDiv" : op == SpvOpSRem ? "OpSRem" : "OpSMod";
}

int prog_fold_guard(const uint32_t *in, size_t words, uint32_t **out, size_t *out_words, uint32_t *rewritten,
                    char *err, size_t err_cap)
{
    *out = NULL;
    *out_words = 0;
    if (rewritten)
        *rewritten = 0;
    if (words < 5 || in[0] != SpvMagicNumber) {
        snprintf(err, err_cap, "not a SPIR-V module (%zu words)", words);
        return -1;
    }
    uint32_t bound = in[3];
    if (bound > (1u << 24)) {   /* the cap prog_shared_bytes applies too */
        snprintf(err, err_cap, "the module's id bound %u is past %u", bound, 1u << 24);
        return -1;
    }
    /* Pass 1: types, the first function, the ops to guard. Id-indexed tables
     * are bounded by the header's bound, itself checked against each id. */
    uint32_t *int_width = mem_calloc(bound ? bound : 1, sizeof *int_width);   /* int type id -> width */
    uint32_t *vec_comp = mem_calloc(bound ? bound : 1, sizeof *vec_comp);     /* vector id -> component */
    uint32_t *vec_count = mem_calloc(bound ? bound : 1, sizeof *vec_count);
    struct gtype *types = NULL;
    uint32_t ntypes = 0, nops = 0, bool_type = 0;
    size_t func_at = 0;
    int rc = -1;
    struct spirv_out o = {0};
    if (!int_width || !vec_comp || !vec_count) {
        snprintf(err, err_cap, "out of host memory guarding divisions (%u ids)", bound);
        rc = -2;
        goto done;
    }
    for (size_t at = 5; at < words;) {
        uint32_t n = in[at] >> 16, op = in[at] & 0xffff;
        if (n == 0 || n > words - at) {
            snprintf(err, err_cap, "malformed instruction at word %zu", at);
            goto done;
        }
        const uint32_t *a = in + at + 1;
        if ((op == SpvOpTypeInt || op == SpvOpTypeVector || op == SpvOpTypeBool) && (n < 2 || a[0] >= bound)) {
            if (n < 2)
                snprintf(err, err_cap, "a type with no result id at word %zu", at);
            else
                snprintf(err, err_cap, "id %u at word %zu is beyond the bound %u", a[0], at, bound);
            goto done;
        }
        if (op == SpvOpTypeInt && n >= 4)
            int_width[a[0]] = a[1];
        else if (op == SpvOpTypeVector && n >= 4 && a[1] < bound) {
            vec_comp[a[0]] = a[1];
            vec_count[a[0]] = a[2];
        } else if (op == SpvOpTypeBool && n >= 2)
            bool_type = a[0];
        else if (op == SpvOpFunction && !func_at)
            func_at = at;
        else if (op == SpvOpSpecConstantOp && n >= 4 && is_guarded_op(a[2])) {
            snprintf(err, err_cap, "an %s in a specialization constant (id %u) cannot be guarded", op_name(a[2]),
                     a[1]);
            goto done;
        } else if (is_guarded_op(op)) {
            if (!func_at) {
                snprintf(err, err_cap, "an %s outside any function (word %zu)", op_name(op), at);
                goto done;
            }
            if (n != 5 || a[0] >= bound) {
                snprintf(err, err_cap, "malformed %s at word %zu", op_name(op), at);
                goto done;
            }
            uint32_t t = a[0], scalar = vec_comp[t] ? vec_comp[t] : t, count = vec_comp[t] ? vec_count[t] : 1;
            uint32_t width = int_width[scalar];
            if (width != 32 && width != 64) {
                snprintf(err, err_cap, "%s on %u-bit integers (id %u) cannot be guarded", op_name(op), width, a[1]);
                goto done;
            }
            nops++;
            uint32_t k = 0;
            while (k < ntypes && types[k].type != t)
                k++;
            if (k == ntypes) {
                struct gtype *p = mem_realloc(types, (ntypes + 1) * sizeof *p);
                if (!p) {
                    snprintf(err, err_cap, "out of host memory guarding divisions");
                    rc = -2;
                    goto done;
                }
                types = p;
                types[ntypes++] = (struct gtype){.type = t, .scalar = scalar, .count = count, .width = width};
            }
        }
        at += n;
    }
    if (!nops) {
        rc = 1;   /* nothing to guard: the caller keeps its module */
        goto done;
    }

    /* New ids: bool types where missing, then each type's constants. */
    uint32_t next = bound;
    bool bool_new = false;
    if (!bool_type) {
        bool_type = next++;
        bool_new = true;
    }
    for (uint32_t k = 0; k < ntypes; k++) {
        struct gtype *g = &types[k];
        if (g->count == 1) {
            g->bool_type = bool_type;
        } else {
            for (uint32_t id = 1; id < bound && !bool_new && !g->bool_type; id++)
                if (vec_comp[id] == bool_type && vec_count[id] == g->count)
                    g->bool_type = id;
            for (uint32_t j = 0; j < k && !g->bool_type; j++)
                if (types[j].bool_new && types[j].count == g->count)
                    g->bool_type = types[j].bool_type;
            if (!g->bool_type) {
                g->bool_type = next++;
                g->bool_new = true;
            }
        }
        g->m1 = next++;
        g->one = next++;
        g->zero = next++;
        if (g->count > 1) {
            g->sm1 = next++;
            g->sone = next++;
            g->szero = next++;
        }
    }
    if (next < bound || (uint64_t)next + 4ull * nops > UINT32_MAX) {
        snprintf(err, err_cap, "the module's id bound %u leaves no room for %u guards", bound, nops);
        goto done;
    }

    /* Pass 2: copy, adding the helpers before the first function and
     * expanding each guarded op in place. */
    o.cap = words + 24 * (size_t)nops + 64 * ntypes + 16;
    o.w = mem_alloc(o.cap * sizeof *o.w);
    if (!o.w) {
        snprintf(err, err_cap, "out of host memory guarding divisions (%zu words)", o.cap);
        rc = -2;
        goto done;
    }
    spirv_put(&o, in, 5);
    for (size_t at = 5; at < words;) {
        uint32_t n = in[at] >> 16, op = in[at] & 0xffff;
        const uint32_t *a = in + at + 1;
        if (at == func_at) {
            if (bool_new)
                spirv_put_op(&o, SpvOpTypeBool, &bool_type, 1);
            for (uint32_t k = 0; k < ntypes; k++) {
                struct gtype *g = &types[k];
                if (g->bool_new)
                    spirv_put_op(&o, SpvOpTypeVector, (uint32_t[]){g->bool_type, bool_type, g->count}, 3);
                if (g->count == 1) {
                    put_int_const(&o, g->type, g->m1, g->width, -1);
                    put_int_const(&o, g->type, g->one, g->width, 1);
                    put_int_const(&o, g->type, g->zero, g->width, 0);
                } else {
                    put_int_const(&o, g->scalar, g->sm1, g->width, -1);
                    put_int_const(&o, g->scalar, g->sone, g->width, 1);
                    put_int_const(&o, g->scalar, g->szero, g->width, 0);
                    put_splat(&o, g->type, g->m1, g->sm1, g->count);
                    put_splat(&o, g->type, g->one, g->sone, g->count);
                    put_splat(&o, g->type, g->zero, g->szero, g->count);
                }
            }
        }
        if (is_guarded_op(op)) {
            struct gtype *g = types;
            while (g->type != a[0])
                g++;
            uint32_t t = a[0], r = a[1], x = a[2], y = a[3];
            uint32_t c = next++, s = next++, q = next++;
            spirv_put_op(&o, SpvOpIEqual, (uint32_t[]){g->bool_type, c, y, g->m1}, 4);
            spirv_put_op(&o, SpvOpSelect, (uint32_t[]){t, s, c, g->one, y}, 5);
            spirv_put_op(&o, (SpvOp)op, (uint32_t[]){t, q, x, s}, 4);
            if (op == SpvOpSDiv) {
                uint32_t neg = next++;
                spirv_put_op(&o, SpvOpISub, (uint32_t[]){t, neg, g->zero, x}, 4);
                spirv_put_op(&o, SpvOpSelect, (uint32_t[]){t, r, c, neg, q}, 5);
            } else {
                spirv_put_op(&o, SpvOpSelect, (uint32_t[]){t, r, c, g->zero, q}, 5);
            }
        } else {
            spirv_put(&o, in + at, n);
        }
        at += n;
    }
    if (o.oom) {
        snprintf(err, err_cap, "out of host memory guarding divisions");
        rc = -2;
        goto done;
    }
    o.w[3] = next;
    *out = o.w;
    *out_words = o.n;
    o.w = NULL;
    if (rewritten)
        *rewritten = nops;
    atomic_fetch_add(&guarded_ops, nops);
    rc = 0;
done:
    free(o.w);
    free(types);
    free(int_width);
    free(vec_comp);
    free(vec_count);
    return rc;
}
