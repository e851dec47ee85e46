/* SPDX-License-Identifier: MIT */
/*
 * spec_args.c: `kiln run --spec ID=VALUE`, specialization constants set
 * from the command line, and the notes naming constants left at their
 * defaults.
 *
 * Decisions:
 * - A VALUE is read by the type the shader declares for the constant, so
 *   its text can be what a person writes: `--spec 2=0.5` for a float,
 *   `--spec 3=true` for a bool, `--spec 0=256` for a uint. The types are
 *   known only from the compiled shader: the arguments are checked for
 *   form (ID=VALUE, an id given once) with the others, and read once the
 *   program's interface is there (kiln run compiles the shader without
 *   constants first; the program with them shares that compile's SPIR-V).
 * - Integers: decimal (negative for signed types) or 0x hex (the value's
 *   bits: 0xfffb is -5 for an int16). Floats: decimal with or without a
 *   fraction, exponent or f suffix (0.5, 0.5f, 2, 1e-3), inf, nan, or 0x
 *   hex for their bits. A float16 takes a decimal rounded to nearest, or
 *   its 16 bits in hex. Bools: true, false, 1, 0. Numbers go through
 *   base/parse.h, as every number kiln reads.
 * - A value the type cannot hold (an int16 of 40000, a bool of 2, 0.5 for
 *   a uint, a float16 past 65504) is refused naming the constant, before
 *   any program with it is made; so is a 64-bit constant (a word carries
 *   32 bits) and an id the shader does not declare.
 * - One id may name two constants (a workgroup size and a constant_id of
 *   the same id); the value is read for each and must give one word.
 * - kiln run first makes the program with the values read without their
 *   types (cli_spec_guess: a WORD as --param reads it, true and false as 1
 *   and 0), which is what the typed reading gives in the common cases
 *   (256 for a uint, 0.5 for a float, true for a bool), so one program is
 *   made; where the typed reading differs ("2" for a float is 2.0) the
 *   program is made again with the typed words, sharing the compile. A
 *   guess the program refuses (an undeclared id, a value out of range)
 *   falls back to the shader made without constants, to read the types and
 *   name the argument. Made at its defaults instead, a shader whose
 *   defaults are past a limit of the device (a shared array sized by a
 *   constant) could not be run whatever --spec says.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "half.h"
#include "parse.h"

static const char *type_name(kiln_scalar_type t)
{
    static const char *const names[] = {"?",     "bool",   "int",     "uint",  "float",  "int8",  "uint8",
                                        "int16", "uint16", "float16", "int64", "uint64", "double"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static const char *article(kiln_scalar_type t)
{
    return t == KILN_SCALAR_INT || t == KILN_SCALAR_INT8 || t == KILN_SCALAR_INT16 || t == KILN_SCALAR_INT64 ? "an"
                                                                                                              : "a";
}

bool cli_spec_add(struct cli_spec_args *s, const char *v, char *why, size_t cap)
{
    const char *eq = strchr(v, '=');
    char num[32];
    size_t n = eq ? (size_t)(eq - v) : 0;
    uint64_t id;
    if (!eq || n == 0 || n >= sizeof num || !eq[1]) {
        snprintf(why, cap, "--spec %s: expected ID=VALUE (the constant_id, then its value)", v);
        return false;
    }
    memcpy(num, v, n);
    num[n] = 0;
    char pwhy[PARSE_WHY_LEN];
    if (!parse_u64(num, &id, pwhy) || id > UINT32_MAX) {
        snprintf(why, cap, "--spec %s: '%s' is not a constant_id (0 to %" PRIu32 ")", v, num, UINT32_MAX);
        return false;
    }
    for (uint32_t i = 0; i < s->count; i++)
        if (s->args[i].id == id) {
            snprintf(why, cap, "--spec %s: id %" PRIu64 " is given twice (the first: --spec %s)", v, id,
                     s->args[i].arg);
            return false;
        }
    if (s->count == KILN_MAX_SPEC_CONSTANTS) {
        snprintf(why, cap, "--spec %s: at most %d constants", v, KILN_MAX_SPEC_CONSTANTS);
        return false;
    }
    s->args[s->count++] = (struct cli_spec_arg){.id = (uint32_t)id, .value = eq + 1, .arg = v};
    return true;
}

/* A binary16's bits for f, rounded to nearest even; false when f is past
 * the type's range or a nonzero f would round to 0. */
static bool half_bits(float f, uint32_t *out)
{
    uint16_t h = half_from_float(f);
    if ((h & 0x7fffu) == 0x7c00u && !isinf(f))
        return false;   /* past the largest half */
    if ((h & 0x7fffu) == 0 && f != 0.0f)
        return false;   /* too small to be told from 0 */
    *out = h;
    return true;
}

static bool is_hex(const char *t) { return t[0] == '0' && (t[1] == 'x' || t[1] == 'X'); }

/* The word for text as constant c's type reads it; false with why. */
static bool read_value(const kiln_spec_constant_info *c, const char *text, uint32_t *word, char *why, size_t cap)
{
    char pwhy[PARSE_WHY_LEN];
    const char *t = type_name(c->type);
    switch (c->type) {
    case KILN_SCALAR_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1"))
            *word = 1;
        else if (!strcmp(text, "false") || !strcmp(text, "0"))
            *word = 0;
        else {
            snprintf(why, cap, "specialization constant '%s' (id %u) is a bool: '%s' is not true, false, 1 or 0",
                     c->name, c->id, text);
            return false;
        }
        return true;
    case KILN_SCALAR_FLOAT:
    case KILN_SCALAR_FLOAT16: {
        bool half = c->type == KILN_SCALAR_FLOAT16;
        uint64_t bits;
        if (is_hex(text)) {   /* the value's bits */
            if (!parse_u64(text, &bits, pwhy) || bits > (half ? 0xffffu : 0xffffffffu)) {
                snprintf(why, cap, "specialization constant '%s' (id %u) is a %s: '%s' is not %s bits in hex", c->name,
                         c->id, t, text, half ? "its 16" : "its 32");
                return false;
            }
            *word = (uint32_t)bits;
            return true;
        }
        /* A decimal is a float value: "2" is 2.0 (parse_word reads a
         * number with an f suffix as a float). */
        char buf[96];
        size_t n = strlen(text);
        bool suffixed = n && (text[n - 1] == 'f' || text[n - 1] == 'F');
        bool named = strpbrk(text, "iInN") != NULL;   /* inf, infinity, nan */
        snprintf(buf, sizeof buf, "%s%s", text, suffixed || named ? "" : "f");
        uint32_t w;
        if (n >= sizeof buf - 1 || !parse_word(buf, &w, pwhy)) {
            snprintf(why, cap, "specialization constant '%s' (id %u) is a %s: '%s' is not a float (0.5, 0.5f, 2, "
                     "1e-3, inf, or 0x bits)", c->name, c->id, t, text);
            return false;
        }
        if (!half) {
            *word = w;
            return true;
        }
        float f;
        memcpy(&f, &w, 4);
        if (!half_bits(f, word)) {
            snprintf(why, cap, "specialization constant '%s' (id %u) is a float16: %s is outside its range (at most "
                     "65504, a nonzero value at least 2^-24 in size)", c->name, c->id, text);
            return false;
        }
        return true;
    }
    case KILN_SCALAR_INT64:
    case KILN_SCALAR_UINT64:
    case KILN_SCALAR_DOUBLE:
        snprintf(why, cap, "specialization constant '%s' (id %u) is a 64-bit %s: kiln sets constants of at most 32 "
                 "bits", c->name, c->id, t);
        return false;
    default: {   /* the integers */
        bool is_signed = c->type == KILN_SCALAR_INT || c->type == KILN_SCALAR_INT8 || c->type == KILN_SCALAR_INT16;
        unsigned bits = c->type == KILN_SCALAR_INT8 || c->type == KILN_SCALAR_UINT8     ? 8
                        : c->type == KILN_SCALAR_INT16 || c->type == KILN_SCALAR_UINT16 ? 16
                                                                                          : 32;
        int64_t lo = is_signed ? -((int64_t)1 << (bits - 1)) : 0;
        int64_t hi = is_signed ? ((int64_t)1 << (bits - 1)) - 1 : (int64_t)((1ull << bits) - 1);
        uint64_t mag;
        bool neg = text[0] == '-';
        if (!parse_u64(text + neg, &mag, pwhy) || (neg && is_hex(text + 1))) {
            snprintf(why, cap, "specialization constant '%s' (id %u) is %s %s: '%s' is not an integer (decimal, or 0x "
                     "hex for its bits)", c->name, c->id, article(c->type), t, text);
            return false;
        }
        int64_t v;
        if (is_hex(text)) {   /* the bits: sign-extended for a signed type */
            if (mag > (uint64_t)((1ull << bits) - 1)) {
                snprintf(why, cap, "specialization constant '%s' (id %u) is %s %s: %s has more than its %u bits",
                         c->name, c->id, article(c->type), t, text, bits);
                return false;
            }
            v = is_signed && (mag >> (bits - 1)) ? (int64_t)mag - ((int64_t)1 << bits) : (int64_t)mag;
        } else {
            if (mag > (uint64_t)INT64_MAX || (neg ? -(int64_t)mag < lo : (int64_t)mag > hi)) {
                snprintf(why, cap, "specialization constant '%s' (id %u) is %s %s: %s is outside %" PRId64 "..%" PRId64,
                         c->name, c->id, article(c->type), t, text, lo, hi);
                return false;
            }
            v = neg ? -(int64_t)mag : (int64_t)mag;
        }
        *word = (uint32_t)v;   /* a signed value as an int32: -5 is 0xfffffffb */
        return true;
    }
    }
}

bool cli_spec_words(const struct cli_spec_args *s, const kiln_program_interface *it, kiln_spec_constant *out,
                    bool quiet, char *why, size_t cap)
{
    for (uint32_t i = 0; i < s->count; i++) {
        const struct cli_spec_arg *a = &s->args[i];
        bool found = false;
        uint32_t word = 0;
        const kiln_spec_constant_info *first = NULL;
        for (uint32_t k = 0; k < it->constant_count; k++) {
            const kiln_spec_constant_info *c = &it->constants[k];
            if (c->id != a->id)
                continue;
            uint32_t w;
            char r[512];
            if (!read_value(c, a->value, &w, r, sizeof r)) {
                snprintf(why, cap, "--spec %s: %s", a->arg, r);
                return false;
            }
            if (c->workgroup_axis && w == 0) {
                snprintf(why, cap, "--spec %s: specialization constant '%s' (id %u) sizes the workgroup in %c: 0 "
                         "invocations is no workgroup", a->arg, c->name, c->id, "xyz"[c->workgroup_axis - 1]);
                return false;
            }
            if (found && w != word) {
                snprintf(why, cap, "--spec %s: id %u is '%s' (%s) and '%s' (%s), which read '%s' as different words "
                         "(0x%x, 0x%x)", a->arg, a->id, first->name, type_name(first->type), c->name,
                         type_name(c->type), a->value, word, w);
                return false;
            }
            if (!found && !quiet && (c->type == KILN_SCALAR_FLOAT || c->type == KILN_SCALAR_FLOAT16) &&
                cli_decimal_integer(a->value))
                fprintf(stderr, "note: --spec %s: '%s' (id %u) is a %s, so %s is read as the value %s.0 (bits 0x%0*x); "
                        "give 0x hex to set the bits as they are\n", a->arg, c->name, c->id, type_name(c->type),
                        a->value, a->value, c->type == KILN_SCALAR_FLOAT ? 8 : 4, w);
            found = true;
            first = first ? first : c;
            word = w;
        }
        if (!found) {
            size_t n = (size_t)snprintf(why, cap, "--spec %s: the shader declares no specialization constant of id %u "
                                        "(it declares %s", a->arg, a->id, it->constant_count ? "" : "none");
            for (uint32_t k = 0; k < it->constant_count && n < cap; k++)
                n += (size_t)snprintf(why + n, cap - n, "%s%u '%s'", k ? ", " : "", it->constants[k].id,
                                      it->constants[k].name);
            if (n < cap)
                snprintf(why + n, cap - n, ")");
            return false;
        }
        out[i] = (kiln_spec_constant){.id = a->id, .word = word};
    }
    return true;
}

bool cli_spec_guess(const struct cli_spec_args *s, kiln_spec_constant *out)
{
    for (uint32_t i = 0; i < s->count; i++) {
        const char *v = s->args[i].value;
        uint32_t w;
        if (!strcmp(v, "true") || !strcmp(v, "false"))
            w = v[0] == 't';
        else if (!parse_word(v, &w, NULL))
            return false;
        out[i] = (kiln_spec_constant){.id = s->args[i].id, .word = w};
    }
    return true;
}

void cli_spec_value_text(const kiln_spec_constant_info *c, uint64_t bits, char *buf, size_t cap)
{
    switch (c->type) {
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
    default: snprintf(buf, cap, "%" PRIu64, bits); break;
    }
}

void cli_spec_notes(FILE *f, const char *shader, const kiln_program_interface *it)
{
    for (uint32_t i = 0; i < it->constant_count; i++) {
        const kiln_spec_constant_info *c = &it->constants[i];
        if (c->set || !c->used)
            continue;
        char v[64];
        cli_spec_value_text(c, c->default_value, v, sizeof v);
        if (c->type >= KILN_SCALAR_INT64)
            fprintf(f, "note: %s: specialization constant '%s' (id %u) left at its default %s (a 64-bit %s: kiln "
                    "cannot set it)\n", shader, c->name, c->id, v, type_name(c->type));
        else
            fprintf(f, "note: %s: specialization constant '%s' (id %u) left at its default %s; set it with --spec "
                    "%u=WORD\n", shader, c->name, c->id, v, c->id);
    }
}
