/* SPDX-License-Identifier: MIT */
/*
 * spirv_out.h: the growing word buffer kiln's SPIR-V rewriting passes
 * (fold_guard.c, push_bake.c) write their output module into. Private to
 * src/program. An allocation failure latches `oom`: every later write does
 * nothing, and the pass reports the failure once at its end.
 */
#ifndef KILN_SPIRV_OUT_H
#define KILN_SPIRV_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <spirv/unified1/spirv.h>

#include "base/base.h"

struct spirv_out {
    uint32_t *w;
    size_t n, cap;
    bool oom;
};

/* Appends n words. */
static inline void spirv_put(struct spirv_out *o, const uint32_t *w, size_t n)
{
    if (o->oom || !n)
        return;
    if (o->n + n > o->cap) {
        size_t cap = o->cap * 2 > o->n + n ? o->cap * 2 : o->n + n + 64;
        uint32_t *p = mem_realloc(o->w, cap * sizeof *p);
        if (!p) {
            o->oom = true;
            return;
        }
        o->w = p;
        o->cap = cap;
    }
    memcpy(o->w + o->n, w, n * sizeof *w);
    o->n += n;
}

/* Appends one instruction: its head word (word count, opcode), then args. */
static inline void spirv_put_op(struct spirv_out *o, SpvOp op, const uint32_t *args, uint32_t nargs)
{
    uint32_t head = ((nargs + 1) << 16) | (uint32_t)op;
    spirv_put(o, &head, 1);
    spirv_put(o, args, nargs);
}

#endif
