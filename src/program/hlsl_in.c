/* SPDX-License-Identifier: MIT */
/*
 * hlsl_in.c: an HLSL program's registers as Vulkan bindings.
 *
 * HLSL names a resource's slot by class: u (UAVs), t (SRVs), b (constant
 * buffers), s (samplers), each counted from 0 in its space. Vulkan has one
 * binding number per set, so u0 and t0 must land on different bindings or
 * two buffers alias. kiln shifts each class apart as DXC's -fvk-<x>-shift
 * does: register(xN, spaceS) is binding N + PROG_HLSL_SHIFT_X in set S.
 *
 * glslang's own shifts (shaderc's binding bases) would do that, but it
 * shifts a resource annotated [[vk::binding(n, s)]] too (binding 1 of an
 * SRV becomes 17), which breaks shaders written for Vulkan: DXC keeps an
 * annotated binding as written. So kiln reads the registers itself, from
 * the preprocessed source (comments and inactive #if branches gone), and
 * gives glslang each one's set and binding by name; annotated resources
 * keep theirs (an annotated declaration's register is left out of the map,
 * which glslang would apply over the annotation), and a resource with
 * neither takes the next free binding of its set (shaderc's auto-binding).
 *
 * glslang keys that map by the register's name alone ("t0"), not by its
 * space, so one register name used in two spaces is refused by name
 * rather than merged into one set; so are two registers that land on one
 * binding (u16 and t0, say).
 */
#include "program_private.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

struct reg {
    char name[16];     /* as written: "t0", "U3" */
    uint32_t space, binding;
};

static uint32_t class_shift(char c)
{
    switch (tolower((unsigned char)c)) {
    case 't': return PROG_HLSL_SHIFT_T;
    case 'b': return PROG_HLSL_SHIFT_B;
    case 's': return PROG_HLSL_SHIFT_S;
    default: return PROG_HLSL_SHIFT_U;
    }
}

static size_t skip_space(const char *t, size_t i, size_t n)
{
    while (i < n && isspace((unsigned char)t[i]))
        i++;
    return i;
}

static size_t read_number(const char *t, size_t i, size_t n, uint32_t *v)
{
    uint64_t x = 0;
    size_t s = i;
    while (i < n && isdigit((unsigned char)t[i]) && i - s < 9)
        x = x * 10 + (uint64_t)(t[i++] - '0');
    *v = (uint32_t)x;
    return i == s ? 0 : i;
}

/* One `register(xN[, spaceS])` at t[i] (just after the word): into *r.
 * False for anything else (register(c0), a profile-qualified register). */
static bool parse_register(const char *t, size_t i, size_t n, struct reg *r)
{
    i = skip_space(t, i, n);
    if (i >= n || t[i] != '(')
        return false;
    i = skip_space(t, i + 1, n);
    if (i >= n || !strchr("tTuUbBsS", t[i]) || !t[i])
        return false;
    char cls = t[i];
    uint32_t num;
    size_t e = read_number(t, i + 1, n, &num);
    if (!e)
        return false;
    snprintf(r->name, sizeof r->name, "%c%u", cls, num);
    r->space = 0;
    i = skip_space(t, e, n);
    if (i < n && t[i] == ',') {
        i = skip_space(t, i + 1, n);
        if (n - i < 5 || memcmp(t + i, "space", 5))
            return false;
        if (!(i = read_number(t, i + 5, n, &r->space)))
            return false;
        i = skip_space(t, i, n);
    }
    if (i >= n || t[i] != ')')
        return false;
    r->binding = num + class_shift(cls);
    return true;
}

static bool word_at(const char *t, size_t i, size_t n, const char *w, size_t wl)
{
    return n - i >= wl && !memcmp(t + i, w, wl) && (i == 0 || !(isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_')) &&
           (i + wl == n || !(isalnum((unsigned char)t[i + wl]) || t[i + wl] == '_'));
}

/* Whether the declaration holding the register at t[i] carries a
 * [[vk::binding(...)]] annotation: one between the declaration's start (the
 * last ';', '{' or '}' before it) and the register. The preprocessor
 * spaces its tokens ("vk :: binding"). */
static bool annotated(const char *t, size_t i)
{
    size_t start = i;
    while (start > 0 && t[start - 1] != ';' && t[start - 1] != '{' && t[start - 1] != '}')
        start--;
    for (size_t k = start; k + 2 <= i; k++) {
        if (!word_at(t, k, i, "vk", 2))
            continue;
        size_t j = skip_space(t, k + 2, i);
        if (i - j < 2 || memcmp(t + j, "::", 2))
            continue;
        j = skip_space(t, j + 2, i);
        if (word_at(t, j, i, "binding", 7))
            return true;
    }
    return false;
}

kiln_result prog_hlsl_map_registers(shaderc_compile_options_t opts, const char *name, const char *text, size_t len,
                                    char **log)
{
    *log = NULL;
    struct reg *regs = NULL;
    size_t count = 0, cap = 0;
    kiln_result r = KILN_OK;
    for (size_t i = 0; i < len && r == KILN_OK; i++) {
        struct reg g;
        if (text[i] != 'r' || !word_at(text, i, len, "register", 8) || !parse_register(text, i + 8, len, &g))
            continue;
        if (annotated(text, i))
            continue;   /* its [[vk::binding]] wins, as DXC's does: no map entry would let glslang keep it */
        bool seen = false;
        for (size_t k = 0; k < count && r == KILN_OK && !seen; k++) {
            char why[256];
            if (!strcmp(regs[k].name, g.name)) {
                seen = regs[k].space == g.space;
                if (!seen) {
                    snprintf(why, sizeof why, "register %s is used in space%u and space%u; kiln maps a register name "
                             "to one set: give one of them [[vk::binding(N, SET)]]", g.name, regs[k].space, g.space);
                    r = prog_refuse(log, name, why);
                }
            } else if (regs[k].space == g.space && regs[k].binding == g.binding) {
                snprintf(why, sizeof why, "registers %s and %s are both binding %u of set %u (u is binding N, t "
                         "16+N, b 32+N, s 48+N): give one of them [[vk::binding(N, SET)]]", regs[k].name, g.name,
                         g.binding, g.space);
                r = prog_refuse(log, name, why);
            }
        }
        if (seen || r != KILN_OK)
            continue;
        if (count == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct reg *n = realloc(regs, ncap * sizeof *n);
            if (!n) {
                r = KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory mapping the registers of %s", name);
                break;
            }
            regs = n;
            cap = ncap;
        }
        regs[count++] = g;
    }
    for (size_t k = 0; k < count && r == KILN_OK; k++) {
        char set[16], binding[16];
        snprintf(set, sizeof set, "%u", regs[k].space);
        snprintf(binding, sizeof binding, "%u", regs[k].binding);
        shaderc_compile_options_set_hlsl_register_set_and_binding(opts, regs[k].name, set, binding);
    }
    free(regs);
    return r;
}
