/* SPDX-License-Identifier: MIT */
/*
 * loops.c: the loops of a module whose iteration count is not a constant,
 * for devices that bound loops. Lavapipe stops a shader after 65,535 loop
 * iterations in all, per invocation (one budget every loop shares), and
 * returns what it has: a longer run is wrong without a word, so kiln warns
 * where a program's loops may run past it (kiln_caps.loop_budget).
 *
 * A loop (an OpLoopMerge) is judged by its exit test: the conditional
 * branch ending its header block, or the block its header branches to
 * (glslang's for loops test there). The count is a constant where that
 * test compares, as integers, something with a constant or a
 * specialization constant (set by the time a pipeline is made), or joins
 * such a comparison to others with && (`i <= r && i <= 64`: a cap); the
 * constant's size is the bound kept: at most the budget passes. Anything
 * else (a bound read from a buffer or a push word, a float counter, a
 * while (true) left by a break) is not a constant. Loops within loops are
 * judged one by one: their product is not counted against the budget.
 */
#include "program_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_NAME 5
#define OP_FUNCTION 54
#define OP_FUNCTION_END 56
#define OP_CONSTANT 43
#define OP_SPEC_CONSTANT 50
#define OP_LOGICAL_OR 166
#define OP_LOGICAL_AND 167
#define OP_LOGICAL_NOT 168
#define OP_IEQUAL 170
#define OP_SLESS_THAN_EQUAL 179   /* 170..179: the integer comparisons */
#define OP_LOOP_MERGE 246
#define OP_LABEL 248
#define OP_BRANCH 249
#define OP_BRANCH_CONDITIONAL 250

/* The constant an id names (32 bits at most), as the comparison reads it. */
static bool constant_of(const uint32_t *w, const size_t *def, uint32_t bound, uint32_t id, bool is_signed,
                        uint64_t *size)
{
    size_t i = id < bound ? def[id] : 0;
    if (!i)
        return false;
    uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
    if ((op != OP_CONSTANT && op != OP_SPEC_CONSTANT) || wc != 4)
        return false;
    int64_t v = is_signed ? (int64_t)(int32_t)w[i + 3] : (int64_t)w[i + 3];
    *size = (uint64_t)(v < 0 ? -v : v);
    return true;
}

/* Whether the exit test `cond` bounds its loop by a constant, and the
 * constant's size: a comparison with a constant; a `&&` of tests, one of
 * which does (the smallest); an `||` of tests that all do (the largest);
 * `!` of one. depth bounds the walk. */
static bool bounded(const uint32_t *w, const size_t *def, uint32_t bound, uint32_t cond, uint64_t *size, int depth)
{
    size_t i = cond < bound ? def[cond] : 0;
    if (!i || depth > 8)
        return false;
    uint32_t op = w[i] & 0xffff;
    if (op == OP_LOGICAL_NOT && (w[i] >> 16) == 4)
        return bounded(w, def, bound, w[i + 3], size, depth + 1);
    if ((op == OP_LOGICAL_AND || op == OP_LOGICAL_OR) && (w[i] >> 16) == 5) {
        uint64_t a = 0, b = 0;
        bool ka = bounded(w, def, bound, w[i + 3], &a, depth + 1), kb = bounded(w, def, bound, w[i + 4], &b, depth + 1);
        if (op == OP_LOGICAL_AND && (ka || kb)) {
            *size = ka && kb ? (a < b ? a : b) : ka ? a : b;
            return true;
        }
        if (op == OP_LOGICAL_OR && ka && kb) {
            *size = a > b ? a : b;
            return true;
        }
        return false;
    }
    if (op < OP_IEQUAL || op > OP_SLESS_THAN_EQUAL || (w[i] >> 16) != 5)
        return false;
    bool is_signed = op == 173 || op == 175 || op == 177 || op == 179;   /* OpSGreaterThan ... OpSLessThanEqual */
    return constant_of(w, def, bound, w[i + 3], is_signed, size) ||
           constant_of(w, def, bound, w[i + 4], is_signed, size);
}

/* Whether the instruction at word i is opcode op of at least n words,
 * all within the module. */
static bool is_op(const uint32_t *w, size_t words, size_t i, uint32_t op, uint32_t n)
{
    return i < words && (w[i] & 0xffff) == op && (w[i] >> 16) >= n && (w[i] >> 16) <= words - i;
}

/* The word index of the terminator of the block starting at word i. */
static size_t terminator(const uint32_t *w, size_t words, size_t i)
{
    while (i < words && (w[i] >> 16) && (w[i] >> 16) <= words - i) {
        uint32_t op = w[i] & 0xffff;
        if (op == OP_BRANCH || op == OP_BRANCH_CONDITIONAL || (op >= 251 && op <= 255))   /* switch, kill, return */
            return i;
        i += w[i] >> 16;
    }
    return words;
}

uint32_t prog_loops_unbounded(const uint32_t *w, size_t words, uint32_t budget, struct prog_loop *out, uint32_t cap,
                              uint32_t *loops)
{
    *loops = 0;
    if (words < 5)
        return 0;
    /* Ids past a bound of the module's own size are taken as unknown (a
     * loop they decide is warned about): a hostile header's bound costs
     * no more than the module does. */
    uint32_t bound = w[3];
    size_t most = words * 4 + 64;
    if (bound > most)
        bound = (uint32_t)(most < (1u << 22) ? most : (1u << 22));
    size_t *def = calloc(bound ? bound : 1, sizeof *def);
    if (!def)
        return 0;   /* a warning's analysis, not worth failing the program */
    /* Where each id is defined, and each function's name. */
    for (size_t i = 5; i < words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (!wc || wc > words - i)
            break;
        if (op == OP_LABEL && wc >= 2 && w[i + 1] < bound)
            def[w[i + 1]] = i;
        else if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT || (op >= OP_LOGICAL_OR && op <= OP_LOGICAL_NOT) ||
                  (op >= OP_IEQUAL && op <= OP_SLESS_THAN_EQUAL)) &&
                 wc >= 3 && w[i + 2] < bound)
            def[w[i + 2]] = i;
        i += wc;
    }
    uint32_t n = 0;
    char function[64] = "";
    uint32_t function_id = 0;
    for (size_t i = 5; i < words;) {
        uint32_t wc = w[i] >> 16, op = w[i] & 0xffff;
        if (!wc || wc > words - i)
            break;
        if (op == OP_FUNCTION && wc >= 5) {
            function_id = w[i + 2];
            snprintf(function, sizeof function, "function %%%u", function_id);
            for (size_t k = 5; k < i;) {   /* its OpName, if any */
                uint32_t kc = w[k] >> 16;
                if (!kc || kc > words - k)
                    break;
                if ((w[k] & 0xffff) == OP_NAME && kc >= 3 && w[k + 1] == function_id) {
                    size_t len = strnlen((const char *)&w[k + 2], (kc - 2) * 4);
                    const char *name = (const char *)&w[k + 2];
                    const char *paren = memchr(name, '(', len);   /* glslang names main as "main(" */
                    snprintf(function, sizeof function, "%.*s()", (int)(paren ? (size_t)(paren - name) : len), name);
                    break;
                }
                k += kc;
            }
        }
        if (op == OP_LOOP_MERGE) {
            (*loops)++;
            size_t t = i + wc;   /* the header's terminator follows its merge */
            uint32_t cond = 0;
            if (is_op(w, words, t, OP_BRANCH_CONDITIONAL, 4)) {
                cond = w[t + 1];
            } else if (is_op(w, words, t, OP_BRANCH, 2) && w[t + 1] < bound && def[w[t + 1]]) {
                size_t e = terminator(w, words, def[w[t + 1]] + 2);
                if (is_op(w, words, e, OP_BRANCH_CONDITIONAL, 4))
                    cond = w[e + 1];
            }
            uint64_t size = 0;
            bool constant = cond && bounded(w, def, bound, cond, &size, 0);
            if ((!constant || size > budget) && n < cap) {
                out[n] = (struct prog_loop){.ordinal = *loops, .bound = constant ? size : 0};
                snprintf(out[n].function, sizeof out[n].function, "%s", function);
                n++;
            }
        }
        i += wc;
    }
    free(def);
    return n;
}
