/* SPDX-License-Identifier: MIT */
/*
 * spec_const.c: specialization constants. What a module declares is read
 * with SPIRV-Cross like the rest of the interface; the values a program
 * sets are checked against the declared types and given to its interface.
 *
 * Design:
 * - The SPIR-V is never rewritten for constants. One front end (GLSL to
 *   SPIR-V) serves every set of values; the compile service keys each set
 *   apart and makes its pipeline with the values in a VkSpecializationInfo
 *   (src/compile, src/backend). What kiln itself reads from the module
 *   with values in mind (its shared memory, for the device's limit) is
 *   counted with the set values in place of the defaults
 *   (prog_shared_bytes_set: it reads OpSpecConstant through its SpecId and
 *   evaluates the OpSpecConstantOp arithmetic GLSL array sizes make),
 *   rather than by writing the values into a copy of the module as new
 *   defaults and counting that: same answer, no copy, no second writer of
 *   SPIR-V to keep valid.
 * - Every declared constant is listed, also one the optimizer removed
 *   because the code never reads it (prog_compile reflects the module
 *   before optimizing too, when it has constants): setting such a constant
 *   is no error (Vulkan ignores a map entry no constant uses), and the
 *   interface says `used = 0`.
 * - `layout(local_size_x_id = N) in;` makes a constant of its own (the
 *   workgroup size's x, default the local_size_x given or 1) beside any
 *   `layout(constant_id = N)` of the same id: two entries, one id sets both
 *   (the pattern of kernel libraries that size the workgroup and a loop by
 *   one constant). The interface's workgroup_size is what the local_size
 *   entries hold.
 * - A word is read as its constant's type reads it (kiln.h): a value the
 *   type cannot hold is refused by name, never truncated. 64-bit constants
 *   are listed but cannot be set: one word cannot carry their value, and a
 *   guess at the other half (zero or sign extension) would be a silent
 *   wrong answer for some values.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/half.h"
#include "program_private.h"

static const char *const axis_names[4] = {"", "local_size_x", "local_size_y", "local_size_z"};

static int cmp_info(const void *a, const void *b)
{
    const kiln_spec_constant_info *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->workgroup_axis < y->workgroup_axis ? -1 : x->workgroup_axis > y->workgroup_axis;
}

static const char *type_name(kiln_scalar_type t)
{
    switch (t) {
    case KILN_SCALAR_BOOL: return "bool";
    case KILN_SCALAR_INT: return "int";
    case KILN_SCALAR_UINT: return "uint";
    case KILN_SCALAR_FLOAT: return "float";
    case KILN_SCALAR_INT8: return "int8";
    case KILN_SCALAR_UINT8: return "uint8";
    case KILN_SCALAR_INT16: return "int16";
    case KILN_SCALAR_UINT16: return "uint16";
    case KILN_SCALAR_FLOAT16: return "float16";
    case KILN_SCALAR_INT64: return "int64";
    case KILN_SCALAR_UINT64: return "uint64";
    case KILN_SCALAR_DOUBLE: return "double";
    }
    return "?";
}

uint32_t prog_spec_size(kiln_scalar_type t)
{
    switch (t) {
    case KILN_SCALAR_INT8:
    case KILN_SCALAR_UINT8: return 1;
    case KILN_SCALAR_INT16:
    case KILN_SCALAR_UINT16:
    case KILN_SCALAR_FLOAT16: return 2;
    case KILN_SCALAR_INT64:
    case KILN_SCALAR_UINT64:
    case KILN_SCALAR_DOUBLE: return 8;
    default: return 4;   /* bool: a VkBool32 */
    }
}

void prog_spec_value_text(kiln_scalar_type t, uint64_t bits, char *buf, size_t cap)
{
    switch (t) {
    case KILN_SCALAR_BOOL: snprintf(buf, cap, "%s", bits ? "true" : "false"); break;
    case KILN_SCALAR_INT: snprintf(buf, cap, "%" PRId32, (int32_t)(uint32_t)bits); break;
    case KILN_SCALAR_INT16: snprintf(buf, cap, "%d", (int)(int16_t)(uint16_t)bits); break;
    case KILN_SCALAR_INT8: snprintf(buf, cap, "%d", (int)(int8_t)(uint8_t)bits); break;
    case KILN_SCALAR_INT64: snprintf(buf, cap, "%" PRId64, (int64_t)bits); break;
    case KILN_SCALAR_FLOAT: {
        uint32_t w = (uint32_t)bits;
        float f;
        memcpy(&f, &w, 4);
        snprintf(buf, cap, "%.9g", (double)f);
        break;
    }
    case KILN_SCALAR_FLOAT16: snprintf(buf, cap, "%.5g", (double)half_to_float((uint16_t)(uint32_t)bits)); break;
    case KILN_SCALAR_DOUBLE: {
        double d;
        memcpy(&d, &bits, 8);
        snprintf(buf, cap, "%.17g", d);
        break;
    }
    default: snprintf(buf, cap, "%" PRIu64, bits); break;   /* the unsigned types */
    }
}

/* ---- reflection ------------------------------------------------------------------ */

kiln_result prog_reflect_constants(spvc_compiler comp, kiln_program_interface *out)
{
    out->constant_count = 0;
    const spvc_specialization_constant *list;
    size_t count = 0;
    if (spvc_compiler_get_specialization_constants(comp, &list, &count) != SPVC_SUCCESS)
        count = 0;
    if (count > KILN_MAX_SPEC_CONSTANTS)
        return KILN_RAISE(KILN_ERR_COMPILE, "it declares %zu specialization constants; kiln takes at most %d", count,
                          KILN_MAX_SPEC_CONSTANTS);
    spvc_specialization_constant wg[3];
    spvc_compiler_get_work_group_size_specialization_constants(comp, &wg[0], &wg[1], &wg[2]);
    for (size_t i = 0; i < count; i++) {
        spvc_constant c = spvc_compiler_get_constant_handle(comp, list[i].id);
        spvc_type type = spvc_compiler_get_type_handle(comp, spvc_constant_get_type(c));
        kiln_spec_constant_info *e = &out->constants[out->constant_count];
        *e = (kiln_spec_constant_info){.id = list[i].constant_id, .used = 1};
        for (uint32_t a = 0; a < 3; a++)
            if (wg[a].id && wg[a].id == list[i].id)
                e->workgroup_axis = a + 1;
        switch (spvc_type_get_basetype(type)) {
        case SPVC_BASETYPE_BOOLEAN:
            e->type = KILN_SCALAR_BOOL;
            e->default_value = spvc_constant_get_scalar_u32(c, 0, 0) ? 1 : 0;
            break;
        case SPVC_BASETYPE_INT32: e->type = KILN_SCALAR_INT; break;
        case SPVC_BASETYPE_UINT32: e->type = KILN_SCALAR_UINT; break;
        case SPVC_BASETYPE_FP32: e->type = KILN_SCALAR_FLOAT; break;
        case SPVC_BASETYPE_INT16: e->type = KILN_SCALAR_INT16; break;
        case SPVC_BASETYPE_UINT16: e->type = KILN_SCALAR_UINT16; break;
        case SPVC_BASETYPE_FP16: e->type = KILN_SCALAR_FLOAT16; break;
        case SPVC_BASETYPE_INT8: e->type = KILN_SCALAR_INT8; break;
        case SPVC_BASETYPE_UINT8: e->type = KILN_SCALAR_UINT8; break;
        case SPVC_BASETYPE_INT64: e->type = KILN_SCALAR_INT64; break;
        case SPVC_BASETYPE_UINT64: e->type = KILN_SCALAR_UINT64; break;
        case SPVC_BASETYPE_FP64: e->type = KILN_SCALAR_DOUBLE; break;
        default:
            return KILN_RAISE(KILN_ERR_COMPILE, "specialization constant id %u is of a type kiln does not know "
                              "(SPIRV-Cross base type %d)", e->id, (int)spvc_type_get_basetype(type));
        }
        /* The default's bits: SPIRV-Cross keeps a constant's bits in a union
         * whose narrow readers return them zero- or sign-extended; the
         * 64-bit one is read as a double and copied bit for bit. */
        switch (prog_spec_size(e->type)) {
        case 1: e->default_value = spvc_constant_get_scalar_u8(c, 0, 0) & 0xffu; break;
        case 2: e->default_value = spvc_constant_get_scalar_u16(c, 0, 0) & 0xffffu; break;
        case 8: {
            double d = spvc_constant_get_scalar_fp64(c, 0, 0);
            memcpy(&e->default_value, &d, 8);
            break;
        }
        default:
            if (e->type != KILN_SCALAR_BOOL)
                e->default_value = spvc_constant_get_scalar_u32(c, 0, 0);
            break;
        }
        e->value = e->default_value;
        const char *name = spvc_compiler_get_name(comp, list[i].id);
        snprintf(e->name, sizeof e->name, "%s",
                 name && *name ? name : e->workgroup_axis ? axis_names[e->workgroup_axis] : "(unnamed)");
        out->constant_count++;
    }
    qsort(out->constants, out->constant_count, sizeof out->constants[0], cmp_info);
    return KILN_OK;
}

static void on_spvc_error(void *ud, const char *msg) { snprintf(ud, 256, "%s", msg); }

kiln_result prog_declared_constants(const uint32_t *spirv, size_t words, kiln_program_interface *out)
{
    out->constant_count = 0;
    char err[256] = "";
    spvc_context ctx = NULL;
    if (spvc_context_create(&ctx) != SPVC_SUCCESS)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "SPIRV-Cross could not make a context");
    spvc_context_set_error_callback(ctx, on_spvc_error, err);
    spvc_parsed_ir ir;
    spvc_compiler comp;
    kiln_result r;
    if (spvc_context_parse_spirv(ctx, spirv, words, &ir) != SPVC_SUCCESS ||
        spvc_context_create_compiler(ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &comp) !=
            SPVC_SUCCESS)
        r = KILN_RAISE(KILN_ERR_COMPILE, "SPIR-V could not be reflected: %s", err);
    else
        r = prog_reflect_constants(comp, out);
    spvc_context_destroy(ctx);
    return r;
}

bool prog_has_spec_constants(const uint32_t *spirv, size_t words)
{
    for (size_t at = 5; at < words;) {
        uint32_t n = spirv[at] >> 16, op = spirv[at] & 0xffff;
        if (op >= SpvOpSpecConstantTrue && op <= SpvOpSpecConstant)
            return true;
        if (op == SpvOpFunction || n == 0)
            break;   /* constants come before the first function */
        at += n;
    }
    return false;
}

void prog_spec_merge_declared(kiln_program_interface *iface, const kiln_program_interface *declared)
{
    kiln_spec_constant_info all[2 * KILN_MAX_SPEC_CONSTANTS];
    uint32_t n = 0;
    bool kept[KILN_MAX_SPEC_CONSTANTS] = {false};
    for (uint32_t i = 0; i < declared->constant_count; i++) {
        kiln_spec_constant_info e = declared->constants[i];
        e.used = 0;
        for (uint32_t k = 0; k < iface->constant_count; k++) {
            const kiln_spec_constant_info *o = &iface->constants[k];
            if (!kept[k] && o->id == e.id && o->workgroup_axis == e.workgroup_axis && !strcmp(o->name, e.name)) {
                e = *o;
                kept[k] = true;
                break;
            }
        }
        all[n++] = e;
    }
    for (uint32_t k = 0; k < iface->constant_count; k++)   /* defensive: the optimizer makes none */
        if (!kept[k])
            all[n++] = iface->constants[k];
    qsort(all, n, sizeof all[0], cmp_info);
    iface->constant_count = KILN_MIN(n, (uint32_t)KILN_MAX_SPEC_CONSTANTS);
    memcpy(iface->constants, all, iface->constant_count * sizeof all[0]);
}

/* ---- values set ------------------------------------------------------------------ */

/* Whether word fits e's type; else why (naming the constant). */
static bool fits(const kiln_spec_constant_info *e, uint32_t word, char *why, size_t cap)
{
    int32_t s = (int32_t)word;
    const char *t = type_name(e->type);
    switch (e->type) {
    case KILN_SCALAR_BOOL:
        if (word <= 1)
            return true;
        snprintf(why, cap, "specialization constant '%s' (id %u) is a bool: %u is neither 0 (false) nor 1 (true)",
                 e->name, e->id, word);
        return false;
    case KILN_SCALAR_INT8:
    case KILN_SCALAR_INT16: {
        int32_t lo = e->type == KILN_SCALAR_INT8 ? INT8_MIN : INT16_MIN, hi = e->type == KILN_SCALAR_INT8 ? INT8_MAX : INT16_MAX;
        if (s >= lo && s <= hi)
            return true;
        snprintf(why, cap, "specialization constant '%s' (id %u) is an %s: %" PRId32 " (0x%x) is outside %d..%d", e->name,
                 e->id, t, s, word, lo, hi);
        return false;
    }
    case KILN_SCALAR_UINT8:
    case KILN_SCALAR_UINT16: {
        uint32_t hi = e->type == KILN_SCALAR_UINT8 ? UINT8_MAX : UINT16_MAX;
        if (word <= hi)
            return true;
        snprintf(why, cap, "specialization constant '%s' (id %u) is a %s: %u is past %u", e->name, e->id, t, word, hi);
        return false;
    }
    case KILN_SCALAR_FLOAT16:
        if (word <= 0xffff)
            return true;
        snprintf(why, cap, "specialization constant '%s' (id %u) is a float16: the word 0x%x holds more than its 16 "
                 "bits", e->name, e->id, word);
        return false;
    case KILN_SCALAR_INT64:
    case KILN_SCALAR_UINT64:
    case KILN_SCALAR_DOUBLE:
        snprintf(why, cap, "specialization constant '%s' (id %u) is a 64-bit %s: kiln sets constants of at most 32 "
                 "bits (one word each), so it runs at its default", e->name, e->id, t);
        return false;
    default:
        if (e->workgroup_axis && word == 0) {
            snprintf(why, cap, "specialization constant '%s' (id %u) sizes the workgroup in %c: 0 invocations is no "
                     "workgroup", e->name, e->id, "xyz"[e->workgroup_axis - 1]);
            return false;
        }
        return true;
    }
}

kiln_result prog_spec_apply(kiln_program_interface *iface, const kiln_spec_constant *set, uint32_t n)
{
    char why[512];
    for (uint32_t i = 0; i < n; i++) {
        bool found = false;
        for (uint32_t k = 0; k < iface->constant_count; k++) {
            const kiln_spec_constant_info *e = &iface->constants[k];
            if (e->id != set[i].id)
                continue;
            found = true;
            if (!fits(e, set[i].word, why, sizeof why))
                return KILN_RAISE(KILN_ERR_INVALID, "%s", why);
        }
        if (!found) {
            size_t at = 0;
            why[0] = 0;
            for (uint32_t k = 0; k < iface->constant_count && at < sizeof why; k++)
                at += (size_t)snprintf(why + at, sizeof why - at, "%s%u '%s'", k ? ", " : "", iface->constants[k].id,
                                       iface->constants[k].name);
            return KILN_RAISE(KILN_ERR_INVALID, "specialization constant id %u (set to 0x%x) is not declared by the "
                              "shader (%s%s)", set[i].id, set[i].word, iface->constant_count ? "it declares " : "it "
                              "declares none", why);
        }
    }
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = 0; k < iface->constant_count; k++) {
            kiln_spec_constant_info *e = &iface->constants[k];
            if (e->id != set[i].id)
                continue;
            uint32_t size = prog_spec_size(e->type);
            e->value = size >= 4 ? set[i].word : set[i].word & ((1u << (8 * size)) - 1);
            e->set = 1;
            if (e->workgroup_axis)
                iface->workgroup_size[e->workgroup_axis - 1] = (uint32_t)e->value;
        }
    return KILN_OK;
}

kiln_result prog_spec_min_sizes(const uint32_t *spirv, size_t words, kiln_program_interface *iface)
{
    bool any = false;
    for (uint32_t k = 0; k < iface->constant_count; k++)
        any |= iface->constants[k].set && !iface->constants[k].workgroup_axis;
    if (!any || words < 5)
        return KILN_OK;
    uint32_t bound = spirv[3];
    uint32_t *copy = mem_alloc(words * sizeof *copy);
    uint32_t *spec_of = mem_calloc((size_t)bound + 1, sizeof *spec_of);   /* SpecId + 1 by result id */
    if (!copy || !spec_of) {
        free(copy);
        free(spec_of);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory sizing blocks with specialization constants");
    }
    memcpy(copy, spirv, words * sizeof *copy);
    /* Decorations come before the constants they decorate (the module's
     * layout), so one pass sees each SpecId first. */
    for (size_t at = 5; at < words;) {
        uint32_t n = copy[at] >> 16, op = copy[at] & 0xffff;
        if (n == 0 || n > words - at)
            break;   /* malformed: what was read stays (the module was validated before) */
        uint32_t *a = copy + at + 1;
        if (op == SpvOpDecorate && n >= 4 && a[1] == SpvDecorationSpecId && a[0] < bound)
            spec_of[a[0]] = a[2] + 1;
        bool spec = op == SpvOpSpecConstant || op == SpvOpSpecConstantTrue || op == SpvOpSpecConstantFalse;
        uint32_t id = n >= 3 ? a[1] : bound;   /* result type, then result id */
        if (spec && id < bound && spec_of[id])
            for (uint32_t k = 0; k < iface->constant_count; k++) {
                const kiln_spec_constant_info *c = &iface->constants[k];
                if (!c->set || c->workgroup_axis || c->id != spec_of[id] - 1)
                    continue;
                if (op == SpvOpSpecConstant && n == 4)   /* one word: 8, 16 and 32-bit types */
                    a[2] = (uint32_t)c->value;
                else if (op != SpvOpSpecConstant)
                    copy[at] = (n << 16) | (c->value ? SpvOpSpecConstantTrue : SpvOpSpecConstantFalse);
            }
        at += n;
    }
    free(spec_of);
    kiln_program_interface sized;
    kiln_result r = prog_reflect(copy, words, iface->own_push_block != 0, &sized);
    free(copy);
    if (r < 0)
        return r;
    for (uint32_t i = 0; i < iface->binding_count; i++)
        for (uint32_t k = 0; k < sized.binding_count; k++)
            if (sized.bindings[k].set == iface->bindings[i].set &&
                sized.bindings[k].binding == iface->bindings[i].binding)
                iface->bindings[i].min_size = sized.bindings[k].min_size;
    return KILN_OK;
}
