/* SPDX-License-Identifier: MIT */
/*
 * local_size.c: a workgroup size set by the host, written into a module.
 *
 * Hosts set a shader's workgroup size themselves: ML runtimes through
 * specialization constants (often ids 233-235), engines by patching the
 * module's LocalSize. A program's workgroup_size does either, on the
 * module any language made, before the optimizer sees it:
 *
 * - `OpExecutionMode LocalSize x y z`: the literals set.
 * - `OpExecutionModeId LocalSizeId`, and the `BuiltIn WorkgroupSize`
 *   composite (gl_WorkGroupSize, local_size_x_id's carrier): each axis's
 *   constituent becomes the value. A specialization constant becomes a
 *   plain constant of that value (its SpecId dropped: the host fixed it,
 *   so `constants` can no longer set it); a plain constant of another
 *   value, which other code may share, is replaced in that place by a new
 *   constant of the value.
 *
 * The composite then holds only constants and becomes a plain composite,
 * so the optimizer folds gl_WorkGroupSize as it would a literal size.
 */
#include "program_private.h"

#include <stdio.h>
#include <stdlib.h>

#define OP_EXECUTION_MODE 16
#define OP_EXECUTION_MODE_ID 331
#define OP_DECORATE 71
#define OP_CONSTANT 43
#define OP_CONSTANT_COMPOSITE 44
#define OP_SPEC_CONSTANT 50
#define OP_SPEC_CONSTANT_COMPOSITE 51
#define OP_FUNCTION 54
#define MODE_LOCAL_SIZE 17
#define MODE_LOCAL_SIZE_ID 38
#define DECO_SPEC_ID 1
#define DECO_BUILTIN 11
#define BUILTIN_WORKGROUP_SIZE 25

struct fix {
    uint32_t *w;
    size_t words;
    uint32_t bound;       /* the module's id bound as it came */
    size_t *def;          /* def[id]: the word index of id's defining constant, or 0 */
    bool *drop;           /* drop[i]: the instruction at word i is left out */
    uint32_t new_type[3], new_id[3], new_value[3];
    int new_count;
    char *why;
    size_t why_cap;
};

/* Makes operand *ref (an id of an integer constant) stand for value. */
static bool set_constant(struct fix *f, uint32_t *ref, uint32_t value, int axis)
{
    uint32_t id = *ref;
    size_t i = id < f->bound ? f->def[id] : 0;
    if (!i) {
        snprintf(f->why, f->why_cap, "its workgroup size's axis %d is not a constant kiln can set", axis);
        return false;
    }
    uint32_t op = f->w[i] & 0xffff;
    if (op == OP_SPEC_CONSTANT) {
        /* Fixed by the host: a constant now, with no SpecId. */
        f->w[i] = (f->w[i] & 0xffff0000u) | OP_CONSTANT;
        f->w[i + 3] = value;
        for (size_t k = 5; k < f->words; k += f->w[k] >> 16)   /* well formed: the scan saw every instruction */
            if ((f->w[k] & 0xffff) == OP_DECORATE && (f->w[k] >> 16) >= 3 && f->w[k + 1] == id &&
                f->w[k + 2] == DECO_SPEC_ID)
                f->drop[k] = true;
        return true;
    }
    if (op == OP_CONSTANT && f->w[i + 3] == value)
        return true;
    if (op == OP_CONSTANT) {   /* shared, perhaps: a new constant in its place */
        for (int k = 0; k < f->new_count; k++)
            if (f->new_type[k] == f->w[i + 1] && f->new_value[k] == value) {
                *ref = f->new_id[k];
                return true;
            }
        int k = f->new_count++;
        f->new_type[k] = f->w[i + 1];
        f->new_value[k] = value;
        f->new_id[k] = f->w[3]++;
        *ref = f->new_id[k];
        return true;
    }
    snprintf(f->why, f->why_cap, "its workgroup size's axis %d is a computed constant (opcode %u), which kiln cannot "
             "set", axis, op);
    return false;
}

kiln_result prog_set_local_size(const char *name, const uint32_t size[3], uint32_t **spirv, size_t *words,
                                char **log)
{
    *log = NULL;
    if (!size[0] && !size[1] && !size[2])
        return KILN_OK;
    uint32_t *w = *spirv;
    size_t n = *words;
    char why[256] = "";
    if (n < 5 || w[3] > PROG_MAX_ID_BOUND) {
        snprintf(why, sizeof why, "workgroup_size cannot be set: the module's header %s",
                 n < 5 ? "is cut short" : "gives an id bound past SPIR-V's limit of 4194303");
        return prog_refuse(log, name, why);
    }
    struct fix f = {.w = w, .words = n, .bound = w[3], .why = why, .why_cap = sizeof why};
    f.def = mem_calloc(w[3] + 1, sizeof *f.def);
    f.drop = mem_calloc(n, sizeof *f.drop);
    uint32_t *out = mem_alloc((n + 16) * 4);
    if (!f.def || !f.drop || !out) {
        free(f.def);
        free(f.drop);
        free(out);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory setting the workgroup size of %s", name);
    }
    size_t local_size = 0, local_size_id = 0, first_function = 0;
    uint32_t builtin = 0;
    bool ok = true;
    for (size_t i = 5; ok && i < n; i += w[i] >> 16) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        if (!wc || wc > n - i) {
            snprintf(why, sizeof why, "the module has a malformed instruction at word %zu", i);
            ok = false;
            break;
        }
        if (op == OP_EXECUTION_MODE && wc >= 6 && w[i + 2] == MODE_LOCAL_SIZE)
            local_size = i;
        else if (op == OP_EXECUTION_MODE_ID && wc >= 6 && w[i + 2] == MODE_LOCAL_SIZE_ID)
            local_size_id = i;
        else if (op == OP_DECORATE && wc >= 4 && w[i + 2] == DECO_BUILTIN && w[i + 3] == BUILTIN_WORKGROUP_SIZE)
            builtin = w[i + 1];
        else if ((((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && wc >= 4) ||
                  ((op == OP_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT_COMPOSITE) && wc >= 3)) &&
                 w[i + 2] < w[3])
            f.def[w[i + 2]] = i;
        else if (op == OP_FUNCTION && !first_function)
            first_function = i;
    }
    if (ok && !local_size && !local_size_id) {
        snprintf(why, sizeof why, "the module declares no workgroup size (LocalSize or LocalSizeId)");
        ok = false;
    }
    size_t composite = builtin ? f.def[builtin] : 0;
    if (ok && builtin && (!composite || (w[composite] >> 16) < 6)) {
        snprintf(why, sizeof why, "its gl_WorkGroupSize is not a constant composite kiln can set");
        ok = false;
    }
    for (int a = 0; ok && a < 3; a++) {
        if (!size[a])
            continue;
        if (local_size)
            w[local_size + 3 + a] = size[a];
        if (local_size_id)
            ok = set_constant(&f, &w[local_size_id + 3 + a], size[a], a);
        if (ok && composite)
            ok = set_constant(&f, &w[composite + 3 + a], size[a], a);
    }
    if (ok && composite && (w[composite] & 0xffff) == OP_SPEC_CONSTANT_COMPOSITE) {
        bool all_plain = true;
        for (int a = 0; a < 3; a++) {
            uint32_t c = w[composite + 3 + a];
            size_t d = c < f.bound ? f.def[c] : 0;
            all_plain &= (d && (w[d] & 0xffff) == OP_CONSTANT) || c >= f.bound;
        }
        if (all_plain)
            w[composite] = (w[composite] & 0xffff0000u) | OP_CONSTANT_COMPOSITE;
    }
    kiln_result r = KILN_OK;
    if (ok) {
        /* New constants go before the composite that uses them, else
         * before the first function (LocalSizeId refers forward). */
        size_t at = composite ? composite : first_function ? first_function : n;
        size_t o = 0;
        for (size_t i = 0; i < 5; i++)
            out[o++] = w[i];
        for (size_t i = 5; i <= n; i += i < n ? w[i] >> 16 : 1) {
            if (i == at)
                for (int k = 0; k < f.new_count; k++) {
                    out[o++] = (4u << 16) | OP_CONSTANT;
                    out[o++] = f.new_type[k];
                    out[o++] = f.new_id[k];
                    out[o++] = f.new_value[k];
                }
            if (i == n)
                break;
            if (!f.drop[i]) {
                memcpy(&out[o], &w[i], (w[i] >> 16) * 4);
                o += w[i] >> 16;
            }
        }
        free(*spirv);
        *spirv = out;
        *words = o;
        out = NULL;
    } else {
        char text[400];
        snprintf(text, sizeof text, "workgroup_size %ux%ux%u cannot be set: %s", size[0], size[1], size[2], why);
        r = prog_refuse(log, name, text);
    }
    free(out);
    free(f.def);
    free(f.drop);
    return r;
}
