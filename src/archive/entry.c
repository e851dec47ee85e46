/* SPDX-License-Identifier: MIT */
/*
 * entry.c: what each kind of archive entry holds (see archive.h): for each
 * kind one encoder, on the byte writer, and one decoder, on the
 * bounds-checked reader (base/bytes.h). Nothing else in kiln reads or
 * writes an entry's key or value field by field.
 *
 * A decoder reads every field first and checks the reader's overrun flag
 * once, then checks ranges; a value longer than its fields is refused too,
 * except where the last field runs to the end (a front end's SPIR-V). Each
 * refusal names the field, the value and the limit, and leaves the output
 * untouched (the interface: zeroed).
 *
 * The program interface is written field by field, never as the struct's
 * bytes: the compiler's padding and layout and the host's byte order stay
 * off disk. The assertions below tie the struct's layout to the format
 * version: change the struct, bump ARC_FORMAT_VERSION, update the codec
 * (arc_iface_put, arc_iface_read), then the assertions.
 */
#include "archive.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define SPIRV_MAGIC 0x07230203u
#define SPIRV_HEADER_WORDS 5
#define NOTE_VALUE_LEN (4 + 4 + 8 + 8 + 64)

/* The layout of kiln_program_interface (LP64) that format version 10's
 * interface codec knows, field by field. A struct change fails here:
 * change the struct, bump ARC_FORMAT_VERSION, update the codec, then these
 * numbers (a version bump alone fails here too, so that the codec is
 * looked at). */
#define BINDING_AT(field, at) (offsetof(kiln_binding_info, field) == (at))
#define IFACE_AT(field, at) (offsetof(kiln_program_interface, field) == (at))
_Static_assert(ARC_FORMAT_VERSION == 10 && sizeof(kiln_binding_info) == 112 && BINDING_AT(set, 0) &&
                   BINDING_AT(binding, 4) && BINDING_AT(kind, 8) && BINDING_AT(access, 12) &&
                   BINDING_AT(min_size, 16) && BINDING_AT(name, 24) && BINDING_AT(count, 88) &&
                   BINDING_AT(format, 92) && BINDING_AT(image_dims, 96) && BINDING_AT(image_arrayed, 100) &&
                   BINDING_AT(image_cube, 104) && sizeof(((kiln_binding_info *)0)->name) == 64,
               "kiln_binding_info is not the layout archive format 10 encodes: change the struct, bump "
               "ARC_FORMAT_VERSION, update arc_iface_put and arc_iface_read");
_Static_assert(ARC_FORMAT_VERSION == 10 && sizeof(kiln_program_interface) == 5256 && KILN_MAX_BINDINGS == 16 &&
                   IFACE_AT(binding_count, 0) && IFACE_AT(bindings, 8) && IFACE_AT(push_constant_size, 1800) &&
                   IFACE_AT(workgroup_size, 1804) && IFACE_AT(spirv_words, 1816) && IFACE_AT(entry, 1820) &&
                   IFACE_AT(params_read, 1888) && IFACE_AT(lens_read, 1896) && IFACE_AT(groups_read, 1900) &&
                   IFACE_AT(own_push_block, 1904) && IFACE_AT(param_words, 1908) && IFACE_AT(subgroup_ops, 1912) &&
                   IFACE_AT(constant_count, 1916) && IFACE_AT(constants, 1920) && KILN_MAX_SPEC_CONSTANTS == 32 &&
                   IFACE_AT(push_float_words, 5248) &&
                   sizeof(((kiln_program_interface *)0)->entry) == 64,
               "kiln_program_interface is not the layout archive format 10 encodes: change the struct, bump "
               "ARC_FORMAT_VERSION, update arc_iface_put and arc_iface_read");

#define CONSTANT_AT(field, at) (offsetof(kiln_spec_constant_info, field) == (at))
_Static_assert(ARC_FORMAT_VERSION == 10 && sizeof(kiln_spec_constant_info) == 104 && CONSTANT_AT(id, 0) &&
                   CONSTANT_AT(type, 4) && CONSTANT_AT(default_value, 8) && CONSTANT_AT(value, 16) &&
                   CONSTANT_AT(set, 24) && CONSTANT_AT(used, 28) && CONSTANT_AT(workgroup_axis, 32) &&
                   CONSTANT_AT(name, 36) && sizeof(((kiln_spec_constant_info *)0)->name) == 64 &&
                   KILN_SCALAR_DOUBLE == 12,
               "kiln_spec_constant_info is not the layout archive format 10 encodes: change the struct, bump "
               "ARC_FORMAT_VERSION, update arc_iface_put and arc_iface_read");

static bool refuse(char why[ARC_WHY_LEN], const char *fmt, ...) KILN_PRINTF(2, 3);
static bool refuse(char why[ARC_WHY_LEN], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, ARC_WHY_LEN, fmt, ap);
    va_end(ap);
    return false;
}

/* The bits below `bits` (bits <= 32). */
static uint32_t low_bits(unsigned bits) { return bits >= 32 ? UINT32_MAX : (1u << bits) - 1; }

/* ---- the program interface -------------------------------------------------------- */

void arc_iface_put(struct bytes *out, const kiln_program_interface *iface)
{
    uint32_t n = iface->binding_count;
    if (n > KILN_MAX_BINDINGS) {   /* defensive, never true: no interface holds more */
        out->oom = true;
        return;
    }
    bytes_put_u32(out, n);
    for (uint32_t i = 0; i < n; i++) {
        const kiln_binding_info *b = &iface->bindings[i];
        bytes_put_u32(out, b->set);
        bytes_put_u32(out, b->binding);
        bytes_put_u32(out, (uint32_t)b->kind);
        bytes_put_u32(out, b->access);
        bytes_put_u64(out, b->min_size);
        bytes_put_str(out, b->name, sizeof b->name);
        bytes_put_u32(out, b->count);
        bytes_put_u32(out, (uint32_t)b->format);
        bytes_put_u32(out, b->image_dims);   /* format 8 */
        bytes_put_u32(out, b->image_arrayed);   /* format 10 */
        bytes_put_u32(out, b->image_cube);
    }
    bytes_put_u32(out, iface->push_constant_size);
    for (int i = 0; i < 3; i++)
        bytes_put_u32(out, iface->workgroup_size[i]);
    bytes_put_u32(out, iface->spirv_words);
    bytes_put_str(out, iface->entry, sizeof iface->entry);
    bytes_put_u64(out, iface->params_read);
    bytes_put_u32(out, iface->lens_read);
    bytes_put_u32(out, (uint32_t)iface->groups_read);
    bytes_put_u32(out, (uint32_t)iface->own_push_block);
    bytes_put_u32(out, iface->param_words);
    bytes_put_u32(out, iface->subgroup_ops);
    /* Format 7: the specialization constants. */
    uint32_t nc = KILN_MIN(iface->constant_count, (uint32_t)KILN_MAX_SPEC_CONSTANTS);
    bytes_put_u32(out, nc);
    for (uint32_t i = 0; i < nc; i++) {
        const kiln_spec_constant_info *c = &iface->constants[i];
        bytes_put_u32(out, c->id);
        bytes_put_u32(out, (uint32_t)c->type);
        bytes_put_u64(out, c->default_value);
        bytes_put_u64(out, c->value);
        bytes_put_u32(out, (uint32_t)c->set);
        bytes_put_u32(out, (uint32_t)c->used);
        bytes_put_u32(out, c->workgroup_axis);
        bytes_put_str(out, c->name, sizeof c->name);
    }
    bytes_put_u64(out, iface->push_float_words);   /* format 9 */
}

/* The bits a constant of type t holds (a bool: 1). */
static unsigned constant_bits(uint32_t t)
{
    switch (t) {
    case KILN_SCALAR_BOOL: return 1;
    case KILN_SCALAR_INT8:
    case KILN_SCALAR_UINT8: return 8;
    case KILN_SCALAR_INT16:
    case KILN_SCALAR_UINT16:
    case KILN_SCALAR_FLOAT16: return 16;
    case KILN_SCALAR_INT64:
    case KILN_SCALAR_UINT64:
    case KILN_SCALAR_DOUBLE: return 64;
    default: return 32;
    }
}

/* Reads the interface's specialization constants (format 7; see
 * archive.h) into it, checking their ranges. False with why on a value
 * out of range; an overrun is the caller's to see. */
static bool constants_read(struct bytes_reader *r, kiln_program_interface *it, char why[ARC_WHY_LEN])
{
    uint32_t n = bytes_read_u32(r);
    if (!r->overrun && n > KILN_MAX_SPEC_CONSTANTS)
        return refuse(why, "constant_count %u is past KILN_MAX_SPEC_CONSTANTS (%d)", n, KILN_MAX_SPEC_CONSTANTS);
    for (uint32_t i = 0; i < n && !r->overrun; i++) {
        kiln_spec_constant_info *c = &it->constants[i];
        c->id = bytes_read_u32(r);
        uint32_t type = bytes_read_u32(r);
        c->default_value = bytes_read_u64(r);
        c->value = bytes_read_u64(r);
        uint32_t set = bytes_read_u32(r), used = bytes_read_u32(r);
        c->workgroup_axis = bytes_read_u32(r);
        bool named = bytes_read_str(r, c->name, sizeof c->name);
        if (r->overrun)
            return true;
        if (type < KILN_SCALAR_BOOL || type > KILN_SCALAR_DOUBLE)
            return refuse(why, "constant %u (id %u): type %u is no kiln_scalar_type", i, c->id, type);
        c->type = (kiln_scalar_type)type;
        unsigned bits = constant_bits(type);
        if (bits < 64 && ((c->default_value >> bits) || (c->value >> bits)))
            return refuse(why, "constant %u (id %u): a value past its type's %u bits", i, c->id, bits);
        if (set > 1 || used > 1)
            return refuse(why, "constant %u (id %u): set %u or used %u is neither 0 nor 1", i, c->id, set, used);
        c->set = (int)set;
        c->used = (int)used;
        if (!set && c->value != c->default_value)
            return refuse(why, "constant %u (id %u): not set, yet its value differs from its default", i, c->id);
        if (c->workgroup_axis > 3)
            return refuse(why, "constant %u (id %u): workgroup_axis %u is past 3", i, c->id, c->workgroup_axis);
        if (!named)
            return refuse(why, "constant %u (id %u): its name is not NUL-terminated within its %zu bytes", i, c->id,
                          sizeof c->name);
        const kiln_spec_constant_info *p = i ? &it->constants[i - 1] : NULL;
        if (p && (c->id < p->id || (c->id == p->id && c->workgroup_axis < p->workgroup_axis)))
            return refuse(why, "constants out of (id, axis) order: (%u, %u) after (%u, %u)", c->id,
                          c->workgroup_axis, p->id, p->workgroup_axis);
    }
    it->constant_count = n;
    return true;
}

/* The interface's ranges, in field order (see archive.h). */
static bool iface_check(const kiln_program_interface *it, const uint32_t kinds[], const uint32_t formats[],
                        const bool named[], bool entry_named, uint32_t groups_read, char why[ARC_WHY_LEN])
{
    uint32_t descriptors = 0;
    for (uint32_t i = 0; i < it->binding_count; i++) {
        const kiln_binding_info *b = &it->bindings[i];
        if (kinds[i] < KILN_BINDING_STORAGE_BUFFER || kinds[i] > KILN_BINDING_COMBINED_IMAGE_SAMPLER)
            return refuse(why, "binding %u (set %u): kind %u is no kiln_binding_kind", b->binding, b->set, kinds[i]);
        bool image = kinds[i] == KILN_BINDING_STORAGE_IMAGE || kinds[i] == KILN_BINDING_SAMPLED_IMAGE ||
                     kinds[i] == KILN_BINDING_COMBINED_IMAGE_SAMPLER;
        if (image ? b->image_dims < 1 || b->image_dims > 3 : b->image_dims != 0)
            return refuse(why, "binding %u (set %u): image_dims %u for a binding of kind %u", b->binding, b->set,
                          b->image_dims, kinds[i]);
        if (b->image_arrayed > 1 || b->image_cube > 1 || ((b->image_arrayed || b->image_cube) && !image) ||
            (b->image_cube && (b->image_dims != 2 || b->image_arrayed)))
            return refuse(why, "binding %u (set %u): image_arrayed %u, image_cube %u for a %uD binding of kind %u",
                          b->binding, b->set, b->image_arrayed, b->image_cube, b->image_dims, kinds[i]);
        if (b->set >= KILN_MAX_SETS)
            return refuse(why, "binding %u: set %u is past KILN_MAX_SETS (%d)", b->binding, b->set, KILN_MAX_SETS);
        if (b->count == 0 || b->count > KILN_MAX_DESCRIPTORS - descriptors)
            return refuse(why, "binding %u (set %u): count %u is 0 or takes the descriptors past KILN_MAX_DESCRIPTORS "
                          "(%d)", b->binding, b->set, b->count, KILN_MAX_DESCRIPTORS);
        descriptors += b->count;
        if (formats[i] >= KILN_FORMAT_COUNT || (formats[i] && kinds[i] != KILN_BINDING_STORAGE_TEXEL_BUFFER &&
                                                kinds[i] != KILN_BINDING_STORAGE_IMAGE))
            return refuse(why, "binding %u (set %u): format %u is no kiln_format of a storage texel buffer or image",
                          b->binding, b->set, formats[i]);
        if (b->access & ~(uint32_t)(KILN_ACCESS_READ | KILN_ACCESS_WRITE))
            return refuse(why, "binding %u (set %u): access 0x%x has bits other than read and write", b->binding,
                          b->set, b->access);
        if (!named[i])
            return refuse(why, "binding %u (set %u): its name is not NUL-terminated within its %zu bytes",
                          b->binding, b->set, sizeof b->name);
        const kiln_binding_info *p = i ? &it->bindings[i - 1] : NULL;
        if (p && (b->set < p->set || (b->set == p->set && b->binding <= p->binding)))
            return refuse(why, "bindings out of (set, binding) order: (%u, %u) after (%u, %u)", b->set, b->binding,
                          p->set, p->binding);
    }
    if (!entry_named)
        return refuse(why, "the entry name is not NUL-terminated within its %zu bytes", sizeof it->entry);
    if (it->param_words < 64 && it->params_read >> it->param_words)
        return refuse(why, "params_read 0x%llx names words past the program's %u param words",
                      (unsigned long long)it->params_read, it->param_words);
    if (it->lens_read & ~low_bits(KILN_MAX_BINDINGS))
        return refuse(why, "lens_read 0x%x names bindings past KILN_MAX_BINDINGS (%d)", it->lens_read,
                      KILN_MAX_BINDINGS);
    if (groups_read > 1)
        return refuse(why, "groups_read %u is neither 0 nor 1", groups_read);
    if (it->subgroup_ops & ~0xffu)
        return refuse(why, "subgroup_ops 0x%x has bits past kiln_subgroup_ops", it->subgroup_ops);
    /* A program's own block may be larger than any device takes (the
     * compile gives such an interface; its pipeline is refused later,
     * naming the device's limit): bounded here by what a block can be. */
    if (it->own_push_block ? it->param_words > ARC_MAX_PUSH_WORDS || it->param_words * 4 < it->push_constant_size
                           : it->param_words != KILN_PARAM_WORDS)
        return refuse(why, "param_words %u does not fit a%s push-constant block of %u bytes", it->param_words,
                      it->own_push_block ? " program's own" : " kiln", it->push_constant_size);
    return true;
}

bool arc_iface_read(struct bytes_reader *r, kiln_program_interface *iface, char why[ARC_WHY_LEN])
{
    kiln_program_interface it = {0};
    uint32_t kinds[KILN_MAX_BINDINGS], formats[KILN_MAX_BINDINGS];
    bool named[KILN_MAX_BINDINGS];
    *iface = it;
    size_t before = bytes_remaining(r);
    it.binding_count = bytes_read_u32(r);
    if (!r->overrun && it.binding_count > KILN_MAX_BINDINGS)
        return refuse(why, "binding_count %u is past KILN_MAX_BINDINGS (%d)", it.binding_count, KILN_MAX_BINDINGS);
    for (uint32_t i = 0; i < it.binding_count && !r->overrun; i++) {
        kiln_binding_info *b = &it.bindings[i];
        b->set = bytes_read_u32(r);
        b->binding = bytes_read_u32(r);
        kinds[i] = bytes_read_u32(r);
        b->access = bytes_read_u32(r);
        b->min_size = bytes_read_u64(r);
        named[i] = bytes_read_str(r, b->name, sizeof b->name);
        b->count = bytes_read_u32(r);
        formats[i] = bytes_read_u32(r);
        b->image_dims = bytes_read_u32(r);
        b->image_arrayed = bytes_read_u32(r);
        b->image_cube = bytes_read_u32(r);
        /* Stored only once checked (an enum holds only its values). */
        b->kind = kinds[i] >= KILN_BINDING_STORAGE_BUFFER && kinds[i] <= KILN_BINDING_COMBINED_IMAGE_SAMPLER
                      ? (kiln_binding_kind)kinds[i]
                      : KILN_BINDING_STORAGE_BUFFER;
        b->format = formats[i] < KILN_FORMAT_COUNT ? (kiln_format)formats[i] : KILN_FORMAT_UNDEFINED;
    }
    it.push_constant_size = bytes_read_u32(r);
    for (int i = 0; i < 3; i++)
        it.workgroup_size[i] = bytes_read_u32(r);
    it.spirv_words = bytes_read_u32(r);
    bool entry_named = bytes_read_str(r, it.entry, sizeof it.entry);
    it.params_read = bytes_read_u64(r);
    it.lens_read = bytes_read_u32(r);
    uint32_t groups_read = bytes_read_u32(r);
    it.groups_read = groups_read ? 1 : 0;
    uint32_t own_push = bytes_read_u32(r);
    it.param_words = bytes_read_u32(r);
    it.subgroup_ops = bytes_read_u32(r);
    if (!constants_read(r, &it, why))
        return false;
    it.push_float_words = bytes_read_u64(r);
    if (!r->overrun && it.param_words < 64 && it.push_float_words >> it.param_words)
        return refuse(why, "push_float_words 0x%llx names words past the block's %u",
                      (unsigned long long)it.push_float_words, it.param_words);
    if (!r->overrun && own_push > 1)
        return refuse(why, "own_push_block %u is neither 0 nor 1", own_push);
    it.own_push_block = (int)own_push;
    if (r->overrun)
        return refuse(why, "cut short: %zu bytes hold no whole interface of %u bindings", before, it.binding_count);
    if (!iface_check(&it, kinds, formats, named, entry_named, groups_read, why))
        return false;
    *iface = it;
    return true;
}

/* ---- ARC_FRONT ------------------------------------------------------------------------ */

void arc_front_encode(struct bytes *out, const kiln_program_interface *iface, const char *log,
                      const uint32_t *spirv, size_t words)
{
    size_t log_len = log ? strlen(log) : 0;
    if (log_len > UINT32_MAX) {   /* a log past 4 GiB is not archived (a value holds at most that) */
        out->oom = true;
        return;
    }
    bytes_put_u32(out, ARC_FRONT_MAGIC);
    arc_iface_put(out, iface);
    bytes_put_u32(out, (uint32_t)log_len);
    bytes_put(out, log, log_len);
    for (size_t i = 0; i < words; i++)
        bytes_put_u32(out, spirv[i]);
}

bool arc_front_decode(const uint8_t *value, size_t len, struct arc_front *out, char why[ARC_WHY_LEN])
{
    struct arc_front f = {0};
    struct bytes_reader r;
    bytes_reader_init(&r, value, len);
    uint32_t magic = bytes_read_u32(&r);
    if (r.overrun)
        return refuse(why, "front end: a value of %zu bytes holds no magic", len);
    if (magic != ARC_FRONT_MAGIC)
        return refuse(why, "front end: magic 0x%08x, not 0x%08x (\"KFE2\")", magic, ARC_FRONT_MAGIC);
    char iwhy[ARC_WHY_LEN];
    if (!arc_iface_read(&r, &f.iface, iwhy))
        return refuse(why, "front end's interface: %s", iwhy);
    uint32_t log_len = bytes_read_u32(&r);
    f.log = (const char *)bytes_read_span(&r, log_len);
    f.log_len = log_len;
    if (r.overrun)
        return refuse(why, "front end: its log of %u bytes runs past the value's %zu bytes", log_len, len);
    size_t rest = bytes_remaining(&r);
    if (rest % 4)
        return refuse(why, "front end: its SPIR-V is %zu bytes, not whole words", rest);
    f.words = rest / 4;
    if (f.words < SPIRV_HEADER_WORDS)
        return refuse(why, "front end: %zu SPIR-V words, fewer than the %d of its header", f.words,
                      SPIRV_HEADER_WORDS);
    f.spirv = bytes_read_span(&r, rest);
    struct bytes_reader sr;
    bytes_reader_init(&sr, f.spirv, rest);
    uint32_t spirv_magic = bytes_read_u32(&sr);
    if (spirv_magic != SPIRV_MAGIC)
        return refuse(why, "front end: SPIR-V magic 0x%08x, not 0x%08x", spirv_magic, SPIRV_MAGIC);
    if (f.iface.spirv_words != f.words)
        return refuse(why, "front end: its interface counts %u SPIR-V words, the value holds %zu", f.iface.spirv_words,
                      f.words);
    *out = f;
    return true;
}

void arc_front_spirv(const struct arc_front *f, uint32_t *words)
{
    struct bytes_reader r;
    bytes_reader_init(&r, f->spirv, f->words * 4);
    for (size_t i = 0; i < f->words; i++)
        words[i] = bytes_read_u32(&r);
}

/* ---- ARC_BACK --------------------------------------------------------------------------- */

bool arc_back_decode(const uint8_t *value, size_t len, char why[ARC_WHY_LEN])
{
    (void)value;   /* the driver's own encoding: the driver decodes it */
    if (len <= ARC_BACK_HEADER)
        return refuse(why, "pipeline: %zu bytes of pipeline-cache data, no more than its %d-byte header: no code",
                      len, ARC_BACK_HEADER);
    return true;
}

/* ---- ARC_NOTE ---------------------------------------------------------------------------- */

void arc_note_encode(const struct arc_note *n, struct bytes *key, struct bytes *value)
{
    bytes_put_u32(key, n->what);
    bytes_put(key, n->front_hash, sizeof n->front_hash);
    bytes_put_u32(value, n->what);
    bytes_put_u32(value, n->words);
    bytes_put_u64(value, n->noted_ns);
    bytes_put_f64(value, n->seconds);
    bytes_put_str(value, n->name, sizeof n->name);
}

bool arc_note_decode(const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, struct arc_note *out,
                     char why[ARC_WHY_LEN])
{
    struct arc_note n = {0};
    struct bytes_reader k, v;
    bytes_reader_init(&k, key, key_len);
    n.what = bytes_read_u32(&k);
    bytes_read_copy(&k, n.front_hash, sizeof n.front_hash);
    if (k.overrun || bytes_remaining(&k))
        return refuse(why, "note: a key of %zu bytes, not %d", key_len, ARC_NOTE_KEY_LEN);
    bytes_reader_init(&v, value, value_len);
    uint32_t what = bytes_read_u32(&v);
    n.words = bytes_read_u32(&v);
    n.noted_ns = bytes_read_u64(&v);
    n.seconds = bytes_read_f64(&v);
    bool named = bytes_read_str(&v, n.name, sizeof n.name);
    if (v.overrun || bytes_remaining(&v))
        return refuse(why, "note: a value of %zu bytes, not %d", value_len, NOTE_VALUE_LEN);
    if (n.what != ARC_NOTE_USED && n.what != ARC_NOTE_SLOW)
        return refuse(why, "note: kind 0x%08x is neither used (0x%08x) nor slow (0x%08x)", n.what, ARC_NOTE_USED,
                      ARC_NOTE_SLOW);
    if (what != n.what)
        return refuse(why, "note: its value's kind 0x%08x is not its key's 0x%08x", what, n.what);
    if (!named)
        return refuse(why, "note: its name is not NUL-terminated within its %zu bytes", sizeof n.name);
    if (!(n.seconds >= 0) || isinf(n.seconds))
        return refuse(why, "note: %g seconds is no duration", n.seconds);
    *out = n;
    return true;
}
