/* SPDX-License-Identifier: MIT */
/*
 * push_bake.c: a SPIR-V rewrite that bakes words of a module's own
 * push-constant block into it, making a variant from the universal
 * program's SPIR-V without compiling GLSL again.
 *
 * A real shader declares its own `layout(push_constant) uniform Push {...}`;
 * the specialization predictor finds which of its words stay constant.
 * Given those words (byte offsets into the block and their values), every
 *
 *     %p = OpAccessChain %ptr_PushConstant_T %pc %c0 %c1 ...   (constants only)
 *     %r = OpLoad %T %p                                        (chains of chains too)
 *
 * whose every byte lies in baked words becomes
 *
 *     %k = OpConstant %T <the bytes>        (global section, before the first OpFunction)
 *     %r = OpCopyObject %T %k               (in place of the load)
 *
 * The load keeps its result id, so every use and decoration of %r stays
 * valid without this pass knowing which operands of which opcodes are ids
 * (replacing uses would need the whole grammar, OpPhi and OpExtInst
 * included, and a mistake there silently corrupts a module); SPIRV-Tools'
 * optimizer propagates the copy away in its first passes. The access chains
 * stay (dead once unused) and so do the variable, its types and its
 * decorations: a variant's pipeline layout is its universal program's.
 *
 * Layout follows the module's decorations, as Vulkan reads the block: a
 * struct member at its Offset, an array element at its ArrayStride, a
 * matrix column at its member's MatrixStride (RowMajor swaps the roles of
 * columns and rows), a vector's components adjacent. Values are
 * little-endian; a 64-bit scalar takes two words. Scalars, vectors and
 * matrices of 8-, 16-, 32- and 64-bit ints and floats are baked; a load of
 * a struct or an array, one through a dynamic index (anything but an
 * OpConstant), an index out of its bounds, a member missing its layout, or
 * bytes not all baked is left as it is and counted as kept.
 *
 * 8- and 16-bit values: a module with only the storage capabilities
 * (StoragePushConstant8/16, what glslang emits when the shader merely
 * converts such members) may not compute in those types, so there the
 * constant is made 32 bits wide, of a 32-bit type the module already
 * declares, and converted in place of the load (OpUConvert, OpSConvert,
 * OpFConvert: the conversions those capabilities allow). The conversion is
 * exact; a 16-bit float that is a NaN or a denormal, which a conversion
 * may not carry bit for bit, is kept. With Int8, Int16 or Float16 declared
 * the constant has the load's own type.
 *
 * The input is untrusted: the stream, every id against the header's bound,
 * each instruction's length and each operand read are checked, and a cycle
 * of access chains is refused; such a module is an error with the reason,
 * never a read past its end.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spirv/unified1/spirv.h>

#include "base/half.h"
#include "program.h"
#include "spirv_out.h"

/* Where a pointer into the push-constant block points. */
struct where {
    uint64_t offset;    /* bytes from the block's start */
    uint32_t type;      /* the pointee type */
    uint32_t mstride;   /* MatrixStride of the member a matrix sits in; 0 none */
    uint32_t cstride;   /* bytes between a vector's components */
    uint8_t state;      /* W_UNSEEN, W_BUSY (being resolved), W_DONE */
    bool known;         /* into the block, with every step constant and laid out */
    bool row_major;
};
enum { W_UNSEEN, W_BUSY, W_DONE };

/* A struct member's layout decorations. */
struct member {
    uint32_t offset, mstride;
    bool has_offset, row_major;
};

/* One load to replace: the instruction at `at` becomes `op` (OpCopyObject
 * or a conversion) of `from`. */
struct repl {
    size_t at;
    uint32_t op, from;
};

struct bake {
    const uint32_t *in;
    size_t words;
    uint32_t bound, next;
    uint32_t *def;      /* id -> word of its defining instruction (for the opcodes read here); 0 none */
    uint32_t *aux;      /* struct -> first member + 1; array -> ArrayStride; variable or chain -> where + 1 */
    struct member *mem;
    struct where *wh;
    uint32_t *stack;    /* chains being resolved */
    const struct prog_push_word *baked;   /* sorted by offset */
    uint32_t nbaked;
    bool cap_int8, cap_int16, cap_float16;
    uint32_t int32, float32;        /* a 32-bit int and float type, for conversions; 0 none */
    uint32_t vec32[2][17];          /* [0 int, 1 float][count]: a 32-bit vector type; 0 none */
    struct spirv_out glob;            /* the new constants */
    struct where none;              /* where a pointer that is no variable or chain points: unknown */
    char *why;
    size_t why_cap;
};

/* The instruction defining `id` if it is `op` (its operands after the
 * opcode word, at least `min` of them), else NULL. */
static const uint32_t *get(const struct bake *b, uint32_t id, SpvOp op, uint32_t min, uint32_t *nops)
{
    if (id >= b->bound || !b->def[id])
        return NULL;
    const uint32_t *w = b->in + b->def[id];
    uint32_t n = w[0] >> 16;
    if ((w[0] & 0xffff) != (uint32_t)op || n - 1 < min)
        return NULL;
    if (nops)
        *nops = n - 1;
    return w + 1;
}

static uint32_t opcode_of(const struct bake *b, uint32_t id)
{
    return id < b->bound && b->def[id] ? b->in[b->def[id]] & 0xffff : 0;
}

/* A scalar int or float type: its width in bits, *is_float and *is_signed
 * set; 0 for anything else (a float with an encoding operand too). */
static uint32_t scalar_width(const struct bake *b, uint32_t type, bool *is_float, bool *is_signed)
{
    const uint32_t *t;
    uint32_t n;
    if ((t = get(b, type, SpvOpTypeInt, 3, NULL))) {
        *is_float = false;
        *is_signed = t[2] != 0;   /* as the validator reads it: 0 or else signed */
        return t[1];
    }
    if ((t = get(b, type, SpvOpTypeFloat, 2, &n)) && n == 2) {
        *is_float = true;
        *is_signed = true;
        return t[1];
    }
    return 0;
}

/* The widths a push-constant scalar can have that this pass bakes. */
static bool bakeable(uint32_t width, bool is_float)
{
    return width == 16 || width == 32 || width == 64 || (width == 8 && !is_float);
}

/* The value of an integer OpConstant (an index or an array length), when
 * it is one and not negative. */
static bool const_index(const struct bake *b, uint32_t id, uint64_t *v)
{
    uint32_t n;
    const uint32_t *c = get(b, id, SpvOpConstant, 3, &n);
    bool f, s;
    uint32_t width = c ? scalar_width(b, c[0], &f, &s) : 0;
    if (!width || f || width > 64 || (width > 32 && n < 4))
        return false;
    uint64_t x = width > 32 ? (uint64_t)c[2] | (uint64_t)c[3] << 32 : c[2];
    if (width < 64)
        x &= (1ull << width) - 1;
    if (s && width && (x >> (width - 1)) & 1)
        return false;   /* negative: out of bounds */
    *v = x;
    return true;
}

/* The vector's component type and count, or 0. */
static uint32_t vector_of(const struct bake *b, uint32_t type, uint32_t *count)
{
    const uint32_t *v = get(b, type, SpvOpTypeVector, 3, NULL);
    if (!v || v[2] < 2 || v[2] > 16)
        return 0;
    *count = v[2];
    return v[1];
}

/* Sets where's vector stride when it now points at a vector outside a matrix. */
static void enter(const struct bake *b, struct where *w, uint32_t type)
{
    uint32_t count = 0;
    bool f, s;
    w->type = type;
    uint32_t comp = vector_of(b, type, &count);
    if (comp)
        w->cstride = scalar_width(b, comp, &f, &s) / 8;
}

/* Moves `w` by one access-chain index; false when it cannot be followed
 * (a dynamic index, out of bounds, no layout, a type with no parts). */
static bool step(const struct bake *b, struct where *w, uint32_t index)
{
    uint64_t idx;
    if (!const_index(b, index, &idx) || idx > UINT32_MAX)
        return false;
    uint32_t n = 0, count = 0;
    const uint32_t *t;
    uint64_t add;
    bool f, s;
    if ((t = get(b, w->type, SpvOpTypeStruct, 1, &n))) {
        if (idx >= n - 1)
            return false;
        const struct member *m = &b->mem[b->aux[w->type] - 1 + idx];
        if (!m->has_offset)
            return false;
        add = m->offset;
        w->mstride = m->mstride;
        w->row_major = m->row_major;
        enter(b, w, t[1 + idx]);
    } else if ((t = get(b, w->type, SpvOpTypeArray, 3, NULL))) {
        uint64_t len;
        uint32_t stride = b->aux[w->type];
        if (!const_index(b, t[2], &len) || idx >= len || !stride)
            return false;
        add = idx * stride;
        enter(b, w, t[1]);
    } else if ((t = get(b, w->type, SpvOpTypeMatrix, 3, NULL))) {
        uint32_t comp = vector_of(b, t[1], &count), size = comp ? scalar_width(b, comp, &f, &s) / 8 : 0;
        if (idx >= t[2] || !size || !w->mstride)
            return false;
        add = w->row_major ? idx * size : idx * w->mstride;
        w->cstride = w->row_major ? w->mstride : size;
        w->type = t[1];
    } else if (vector_of(b, w->type, &count)) {
        if (idx >= count)
            return false;
        add = idx * w->cstride;
        w->type = b->in[b->def[w->type] + 2];
    } else {
        return false;
    }
    if (add > UINT32_MAX || w->offset + add > UINT32_MAX)
        return false;
    w->offset += add;
    return true;
}

/* Resolves the pointer `p` (a variable or an access chain): *out is where
 * it points, known or not. Chains are resolved once and remembered; the
 * walk to the root is a loop, not recursion, so a long chain of chains
 * cannot exhaust the stack. -1 on a cycle. */
static int resolve(struct bake *b, uint32_t p, struct where **out)
{
    uint32_t depth = 0;
    for (;;) {
        uint32_t k = opcode_of(b, p);
        uint32_t slot = k == SpvOpVariable || k == SpvOpAccessChain || k == SpvOpInBoundsAccessChain ? b->aux[p] : 0;
        if (!slot) {
            *out = &b->none;   /* not a variable or chain: a parameter, a copy, an id undefined */
            break;
        }
        struct where *w = &b->wh[slot - 1];
        if (w->state == W_DONE) {
            *out = w;
            break;
        }
        if (w->state == W_BUSY) {
            snprintf(b->why, b->why_cap, "access chain %u is based, through its bases, on itself (a cycle)", p);
            return -1;
        }
        const uint32_t *a = b->in + b->def[p] + 1;
        if (k == SpvOpVariable) {
            const uint32_t *ptr = get(b, a[0], SpvOpTypePointer, 3, NULL);
            *w = (struct where){.state = W_DONE};
            if (ptr && a[2] == SpvStorageClassPushConstant && ptr[1] == SpvStorageClassPushConstant) {
                w->known = true;
                enter(b, w, ptr[2]);
            }
            *out = w;
            break;
        }
        w->state = W_BUSY;
        b->stack[depth++] = p;
        p = a[2];
    }
    /* Unwind: each chain steps from its base, nearest the root first. */
    while (depth) {
        uint32_t c = b->stack[--depth];
        const uint32_t *a = b->in + b->def[c] + 1;
        uint32_t nidx = (b->in[b->def[c]] >> 16) - 4;
        struct where *w = &b->wh[b->aux[c] - 1];
        *w = **out;
        w->state = W_DONE;
        for (uint32_t i = 0; i < nidx && w->known; i++)
            w->known = step(b, w, a[3 + i]);
        *out = w;
    }
    return 0;
}

static int cmp_word(const void *x, const void *y)
{
    uint32_t a = ((const struct prog_push_word *)x)->offset, c = ((const struct prog_push_word *)y)->offset;
    return a < c ? -1 : a > c;
}

/* The `bytes` bytes at `offset` in the block, little-endian, when every one
 * lies in a baked word. */
static bool read_bytes(const struct bake *b, uint64_t offset, uint32_t bytes, uint64_t *v)
{
    *v = 0;
    if (!b->nbaked)
        return false;
    for (uint32_t i = 0; i < bytes; i++) {
        uint64_t at = offset + i;
        struct prog_push_word key = {.offset = (uint32_t)(at & ~3ull)};
        if (at > UINT32_MAX)
            return false;
        const struct prog_push_word *w = bsearch(&key, b->baked, b->nbaked, sizeof key, cmp_word);
        if (!w)
            return false;
        *v |= (uint64_t)((w->value >> (8 * (at & 3))) & 0xff) << (8 * i);
    }
    return true;
}

/* The 32-bit float with the value of a 16-bit one, when it is neither a NaN
 * nor a denormal (which a conversion back may not keep bit for bit). */
static bool half_bits_to_float(uint32_t h, uint32_t *f)
{
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if ((e == 0x1f && m) || (e == 0 && m))
        return false;
    float v = half_to_float((uint16_t)h);
    memcpy(f, &v, 4);
    return true;
}

/* Whether the module may hold a constant of this scalar type itself; when
 * not, the constant is made at 32 bits and converted. */
static bool own_width_ok(const struct bake *b, uint32_t width, bool is_float)
{
    if (width == 8)
        return !is_float && b->cap_int8;
    if (width == 16)
        return is_float ? b->cap_float16 : b->cap_int16;
    return true;
}

/* Emits a constant of type `ktype` holding the scalar of type `type` at
 * `offset`: `ktype` is `type` itself, or (wide) a 32-bit type the value is
 * converted from. Returns its id, or 0 when the value cannot be baked. */
static uint32_t put_scalar(struct bake *b, uint32_t type, uint32_t ktype, uint64_t offset, bool wide)
{
    bool f, s;
    uint32_t width = scalar_width(b, type, &f, &s);
    uint64_t v;
    if (!bakeable(width, f) || !read_bytes(b, offset, width / 8, &v))
        return 0;
    uint32_t lo = (uint32_t)v;
    if (wide && f && !half_bits_to_float(lo, &lo))
        return 0;
    if (width < 32 && !f && s && (v >> (width - 1)) & 1)
        lo |= ~0u << width;   /* SPIR-V's rule for narrow signed literals; OpSConvert truncates it back */
    uint32_t id = b->next++;
    spirv_put_op(&b->glob, SpvOpConstant, (uint32_t[]){ktype, id, lo, (uint32_t)(v >> 32)}, width == 64 ? 4 : 3);
    return id;
}

/* Emits a vector constant of type `ktype` (the load's `type`, or wide, its
 * 32-bit counterpart) whose components start at `offset`, `cstride` apart. */
static uint32_t put_vector(struct bake *b, uint32_t type, uint32_t ktype, uint64_t offset, uint32_t cstride,
                           bool wide)
{
    uint32_t count = 0, kcount = 0, comps[16];
    uint32_t comp = vector_of(b, type, &count), kcomp = vector_of(b, ktype, &kcount);
    if (!comp || !kcomp || kcount != count || !cstride)
        return 0;
    for (uint32_t i = 0; i < count; i++)
        if (!(comps[i] = put_scalar(b, comp, kcomp, offset + (uint64_t)i * cstride, wide)))
            return 0;
    uint32_t id = b->next++;
    uint32_t head[3] = {((3 + count) << 16) | SpvOpConstantComposite, ktype, id};
    spirv_put(&b->glob, head, 3);
    spirv_put(&b->glob, comps, count);
    return id;
}

/* Emits the constant a load of `type` at `w` becomes and returns its id;
 * *op is the instruction that takes the load's place. 0 when it stays a
 * load (what was emitted is then dropped by the caller). */
static uint32_t bake_value(struct bake *b, uint32_t type, const struct where *w, uint32_t *op)
{
    uint32_t count = 0, cols[4];
    bool f, s;
    uint32_t comp = vector_of(b, type, &count), scalar = comp ? comp : type;
    uint32_t width = scalar_width(b, scalar, &f, &s);
    const uint32_t *m;
    *op = SpvOpCopyObject;
    if (width && !own_width_ok(b, width, f)) {
        /* Only the storage capabilities: a 32-bit constant, converted. */
        uint32_t ktype = comp ? b->vec32[f][count] : f ? b->float32 : b->int32;
        if (!ktype)
            return 0;
        *op = f ? SpvOpFConvert : s ? SpvOpSConvert : SpvOpUConvert;
        return comp ? put_vector(b, type, ktype, w->offset, w->cstride, true)
                    : put_scalar(b, type, ktype, w->offset, true);
    }
    if (width)
        return comp ? put_vector(b, type, type, w->offset, w->cstride, false)
                    : put_scalar(b, type, type, w->offset, false);
    if ((m = get(b, type, SpvOpTypeMatrix, 3, NULL))) {
        uint32_t ccomp = vector_of(b, m[1], &count), size = ccomp ? scalar_width(b, ccomp, &f, &s) / 8 : 0;
        if (!size || m[2] < 2 || m[2] > 4 || !w->mstride || !own_width_ok(b, size * 8, f))
            return 0;
        for (uint32_t i = 0; i < m[2]; i++) {
            uint64_t at = w->offset + (uint64_t)i * (w->row_major ? size : w->mstride);
            if (!(cols[i] = put_vector(b, m[1], m[1], at, w->row_major ? w->mstride : size, false)))
                return 0;
        }
        uint32_t id = b->next++;
        uint32_t head[3] = {((3 + m[2]) << 16) | SpvOpConstantComposite, type, id};
        spirv_put(&b->glob, head, 3);
        spirv_put(&b->glob, cols, m[2]);
        return id;
    }
    return 0;   /* a struct, an array, a bool, a pointer */
}

int prog_push_bake(const uint32_t *in, size_t words, const struct prog_push_word *baked, uint32_t count,
                   uint32_t **out, size_t *out_words, struct prog_push_bake_counts *counts, char *why,
                   size_t why_cap)
{
    *out = NULL;
    *out_words = 0;
    struct prog_push_bake_counts n_ = {0};
    if (counts)
        *counts = n_;
    if (words < 5 || in[0] != SpvMagicNumber) {
        snprintf(why, why_cap, "not a SPIR-V module (%zu words)", words);
        return -1;
    }
    if (words > UINT32_MAX) {
        snprintf(why, why_cap, "a module of %zu words is past %u", words, UINT32_MAX);
        return -1;
    }
    uint32_t bound = in[3];
    if (bound > (1u << 24)) {   /* the cap prog_shared_bytes and prog_fold_guard apply too */
        snprintf(why, why_cap, "the module's id bound %u is past %u", bound, 1u << 24);
        return -1;
    }
    struct bake b = {.in = in, .words = words, .bound = bound, .next = bound, .why = why, .why_cap = why_cap};
    struct spirv_out o = {0};
    struct prog_push_word *sorted = NULL;
    struct repl *repl = NULL;
    uint32_t nrepl = 0, nmembers = 0, nwhere = 0, nloads = 0;
    size_t func_at = 0;
    int rc = -1;
    if (count) {
        sorted = mem_alloc(count * sizeof *sorted);
        if (!sorted)
            goto oom;
        memcpy(sorted, baked, count * sizeof *sorted);
        qsort(sorted, count, sizeof *sorted, cmp_word);
        for (uint32_t i = 0; i < count; i++) {
            if (sorted[i].offset % 4) {
                snprintf(why, why_cap, "baked byte offset %u is not a multiple of 4", sorted[i].offset);
                goto done;
            }
            if (i && sorted[i].offset == sorted[i - 1].offset) {
                snprintf(why, why_cap, "byte offset %u is baked twice", sorted[i].offset);
                goto done;
            }
        }
    }
    b.baked = sorted;
    b.nbaked = count;
    b.def = mem_calloc(bound ? bound : 1, sizeof *b.def);
    b.aux = mem_calloc(bound ? bound : 1, sizeof *b.aux);
    if (!b.def || !b.aux)
        goto oom;

    /* Pass 1: the stream checked, the definitions this pass reads, the
     * capabilities, the 32-bit types conversions can start from. */
    for (size_t at = 5; at < words;) {
        uint32_t n = in[at] >> 16, op = in[at] & 0xffff;
        if (n == 0 || n > words - at) {
            snprintf(why, why_cap, "malformed instruction at word %zu (%u words, %zu left)", at, n,
                     words - at);
            goto done;
        }
        const uint32_t *a = in + at + 1;
        uint32_t min = 0, result = 0;   /* operands needed; the result's position + 1 */
        switch (op) {
        case SpvOpTypeInt: min = 3, result = 1; break;
        case SpvOpTypeFloat: min = 2, result = 1; break;
        case SpvOpTypeVector:
        case SpvOpTypeMatrix:
        case SpvOpTypeArray:
        case SpvOpTypePointer: min = 3, result = 1; break;
        case SpvOpTypeStruct: min = 1, result = 1; break;
        case SpvOpConstant:
        case SpvOpVariable:
        case SpvOpAccessChain:
        case SpvOpInBoundsAccessChain: min = 3, result = 2; break;
        case SpvOpLoad: min = 3; break;
        case SpvOpCapability: min = 1; break;
        default: break;
        }
        if (n - 1 < min) {
            snprintf(why, why_cap, "truncated instruction (opcode %u) at word %zu: %u operands, %u needed", op, at,
                     n - 1, min);
            goto done;
        }
        if (result) {
            uint32_t id = a[result - 1];
            if (id == 0 || id >= bound) {
                snprintf(why, why_cap, "id %u at word %zu is beyond the bound %u", id, at, bound);
                goto done;
            }
            if (b.def[id]) {
                snprintf(why, why_cap, "id %u is defined twice (words %u and %zu)", id, b.def[id], at);
                goto done;
            }
            b.def[id] = (uint32_t)at;
        }
        bool f, s;
        uint32_t count_v = 0;
        switch (op) {
        case SpvOpCapability:
            b.cap_int8 |= a[0] == SpvCapabilityInt8;
            b.cap_int16 |= a[0] == SpvCapabilityInt16;
            b.cap_float16 |= a[0] == SpvCapabilityFloat16;
            break;
        case SpvOpTypeInt:
            if (a[1] == 32 && !b.int32)
                b.int32 = a[0];
            break;
        case SpvOpTypeFloat:
            if (a[1] == 32 && n == 3 && !b.float32)
                b.float32 = a[0];
            break;
        case SpvOpTypeVector:
            if (vector_of(&b, a[0], &count_v) && scalar_width(&b, a[1], &f, &s) == 32 && (!f || a[1] == b.float32) &&
                !b.vec32[f][count_v])
                b.vec32[f][count_v] = a[0];
            break;
        case SpvOpTypeStruct:
            if (n - 2 > UINT32_MAX - 1 - nmembers) {   /* cannot happen within a 32-bit word count */
                snprintf(why, why_cap, "too many struct members at word %zu", at);
                goto done;
            }
            b.aux[a[0]] = nmembers + 1;
            nmembers += n - 2;
            break;
        case SpvOpVariable:
        case SpvOpAccessChain:
        case SpvOpInBoundsAccessChain:
            b.aux[a[1]] = ++nwhere;
            break;
        case SpvOpFunction:
            if (!func_at)
                func_at = at;
            break;
        case SpvOpLoad:
            if (!func_at) {
                snprintf(why, why_cap, "an OpLoad outside any function (word %zu)", at);
                goto done;
            }
            nloads++;
            break;
        default: break;
        }
        at += n;
    }

    /* Pass 2: the layout decorations (they come before the types they name). */
    b.mem = mem_calloc(nmembers ? nmembers : 1, sizeof *b.mem);
    b.wh = mem_calloc(nwhere ? nwhere : 1, sizeof *b.wh);
    b.stack = mem_alloc((nwhere ? nwhere : 1) * sizeof *b.stack);
    repl = mem_alloc((nloads ? nloads : 1) * sizeof *repl);
    if (!b.mem || !b.wh || !b.stack || !repl)
        goto oom;
    for (size_t at = 5; at < (func_at ? func_at : words); at += in[at] >> 16) {
        uint32_t n = in[at] >> 16, op = in[at] & 0xffff;
        const uint32_t *a = in + at + 1;
        if ((op == SpvOpDecorate && n >= 3) || (op == SpvOpMemberDecorate && n >= 4)) {
            if (a[0] >= bound) {
                snprintf(why, why_cap, "decoration of id %u at word %zu is beyond the bound %u", a[0], at, bound);
                goto done;
            }
        } else {
            continue;
        }
        uint32_t k = opcode_of(&b, a[0]), nm;
        if (op == SpvOpDecorate) {
            if (a[1] == SpvDecorationArrayStride && n >= 4 && k == SpvOpTypeArray)
                b.aux[a[0]] = a[2];
            continue;
        }
        if (!get(&b, a[0], SpvOpTypeStruct, 1, &nm) || a[1] >= nm - 1)
            continue;
        struct member *m = &b.mem[b.aux[a[0]] - 1 + a[1]];
        if (a[2] == SpvDecorationOffset && n >= 5) {
            m->offset = a[3];
            m->has_offset = true;
        } else if (a[2] == SpvDecorationMatrixStride && n >= 5) {
            m->mstride = a[3];
        } else if (a[2] == SpvDecorationRowMajor) {
            m->row_major = true;
        } else if (a[2] == SpvDecorationColMajor) {
            m->row_major = false;
        }
    }

    /* Pass 3: each load through a push-constant pointer, baked or kept. */
    for (size_t at = func_at ? func_at : words; at < words; at += in[at] >> 16) {
        const uint32_t *a = in + at + 1;
        if ((in[at] & 0xffff) != SpvOpLoad)
            continue;
        if (a[0] >= bound || a[1] >= bound || a[2] >= bound || !a[1]) {
            snprintf(why, why_cap, "an OpLoad at word %zu names an id beyond the bound %u", at, bound);
            goto done;
        }
        uint32_t pk = opcode_of(&b, a[2]);
        if (pk != SpvOpVariable && pk != SpvOpAccessChain && pk != SpvOpInBoundsAccessChain)
            continue;
        const uint32_t *ptr = get(&b, in[b.def[a[2]] + 1], SpvOpTypePointer, 3, NULL);
        if (!ptr || ptr[1] != SpvStorageClassPushConstant)
            continue;
        struct where *w;
        if (resolve(&b, a[2], &w) < 0)
            goto done;
        size_t glob_n = b.glob.n;
        uint32_t next = b.next;
        uint32_t op = 0, from = w->known && w->type == a[0] ? bake_value(&b, a[0], w, &op) : 0;
        if (b.glob.oom)
            goto oom;
        if (!from) {   /* part of a vector or matrix may have been emitted */
            b.glob.n = glob_n;
            b.next = next;
        }
        if (b.next > (1u << 24)) {
            snprintf(why, why_cap, "the module's id bound %u leaves no room for the baked constants", bound);
            goto done;
        }
        if (!from) {
            n_.kept++;
            continue;
        }
        repl[nrepl++] = (struct repl){.at = at, .op = op, .from = from};
    }
    if (counts)
        *counts = n_;
    if (!nrepl) {
        rc = 1;   /* nothing baked: the caller keeps its module */
        goto done;
    }

    /* Pass 4: copy, the constants before the first function, each baked
     * load replaced in place. */
    o.cap = words + b.glob.n + 8;
    o.w = mem_alloc(o.cap * sizeof *o.w);
    if (!o.w)
        goto oom;
    spirv_put(&o, in, 5);
    uint32_t r = 0;
    for (size_t at = 5; at < words; at += in[at] >> 16) {
        if (at == func_at)
            spirv_put(&o, b.glob.w, b.glob.n);
        if (r < nrepl && repl[r].at == at) {
            spirv_put_op(&o, repl[r].op, (uint32_t[]){in[at + 1], in[at + 2], repl[r].from}, 3);
            r++;
        } else {
            spirv_put(&o, in + at, in[at] >> 16);
        }
    }
    if (o.oom)
        goto oom;
    o.w[3] = b.next;
    *out = o.w;
    *out_words = o.n;
    o.w = NULL;
    n_.baked = nrepl;
    if (counts)
        *counts = n_;
    rc = 0;
    goto done;
oom:
    snprintf(why, why_cap, "out of host memory baking push constants (%zu words, bound %u)", words, bound);
    rc = -2;
done:
    free(o.w);
    free(b.glob.w);
    free(repl);
    free(b.stack);
    free(b.wh);
    free(b.mem);
    free(b.aux);
    free(b.def);
    free(sorted);
    return rc;
}
