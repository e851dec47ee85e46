/* SPDX-License-Identifier: MIT */
/*
 * parse.c: the number parsers of parse.h.
 *
 * Integers are read digit by digit with an overflow check per digit rather
 * than through strtoull, whose leading blanks, signs (it negates "-1" into
 * UINT64_MAX), octal and ERANGE clamping each needed a guard of their own.
 * Floats are checked against the grammar here first; only text that passed
 * reaches strtof/strtod, so their own extras (hex floats, "nan(...)",
 * leading blanks) can never be let in. The tool does not change the locale,
 * so the decimal point is '.'.
 */
#define _POSIX_C_SOURCE 200809L
#include "parse.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Writes "'TEXT' is not a KIND: WHY" into why (TEXT cut at 64 bytes);
 * returns false. */
static bool fail(char *why, const char *text, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool fail(char *why, const char *text, const char *kind, const char *fmt, ...)
{
    if (!why)
        return false;
    size_t n = strlen(text);
    int used = snprintf(why, PARSE_WHY_LEN, "'%.*s%s' is not %s: ", 64, text, n > 64 ? "..." : "", kind);
    if (used < 0 || used >= PARSE_WHY_LEN)
        return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why + used, PARSE_WHY_LEN - (size_t)used, fmt, ap);
    va_end(ap);
    return false;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool is_hex_prefix(const char *s) { return s[0] == '0' && (s[1] == 'x' || s[1] == 'X'); }

/* Reads the digits at *p (decimal, or hex after a 0x the caller skipped)
 * into *v, moving *p past them. Returns 1 when at least one digit was read,
 * 0 when none, -1 on overflow (then *p is past every digit). */
static int read_digits(const char **p, unsigned base, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    bool over = false;
    int d;
    for (; (d = base == 16 ? hex_value(*s) : (is_digit(*s) ? *s - '0' : -1)) >= 0; s++) {
        if (x > (UINT64_MAX - (uint64_t)d) / base)
            over = true;
        else
            x = x * base + (uint64_t)d;
    }
    if (s == *p)
        return 0;
    *p = s;
    *v = x;
    return over ? -1 : 1;
}

/* The leading unsigned number of s, decimal or 0x hex, for parse_u64 and
 * parse_size (kind, empty and unit name their messages): *p is left after
 * its digits, *hex says which. false (why filled) when s is empty,
 * negative, has no digits or overflows. */
static bool leading_number(const char *s, const char *kind, const char *empty, const char *unit, const char **p,
                           uint64_t *v, bool *hex, char *why)
{
    if (!s || !*s)
        return fail(why, s ? s : "", kind, "it is empty; expected %s", empty);
    if (*s == '-')
        return fail(why, s, kind, "it is negative; %s is 0 or more", kind);
    *hex = is_hex_prefix(s);
    *p = *hex ? s + 2 : s;
    int r = read_digits(p, *hex ? 16 : 10, v);
    if (r == 0)
        return fail(why, s, kind, *hex ? "0x has no hex digits after it" : "it does not start with a digit");
    if (r < 0)
        return fail(why, s, kind, "it is more than %llu%s", (unsigned long long)UINT64_MAX, unit);
    return true;
}

bool parse_u64(const char *s, uint64_t *out, char *why)
{
    static const char kind[] = "a count";
    const char *p;
    uint64_t v;
    bool hex;
    if (!leading_number(s, kind, "decimal digits or 0x hex", "", &p, &v, &hex, why))
        return false;
    if (*p)
        return fail(why, s, kind, "'%s' follows the number", p);
    *out = v;
    return true;
}

bool parse_size(const char *s, uint64_t *out, char *why)
{
    static const char kind[] = "a size";
    const char *p;
    uint64_t v;
    bool hex = false;
    if (!leading_number(s, kind, "bytes, or a number with K, M, G or T", " bytes", &p, &v, &hex, why))
        return false;
    unsigned shift = 0;
    if (!hex && *p) {
        switch (*p) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: break;
        }
        if (*p == '.')
            return fail(why, s, kind, "a size is a whole number (write 1536M, not 1.5G)");
        if (shift) {
            p++;
            if (!strcasecmp(p, "ib") || !strcasecmp(p, "b"))
                p += strlen(p);
        } else if (!strcasecmp(p, "b")) {
            p++;
        }
    }
    if (*p)
        return fail(why, s, kind, "'%s' follows the number; expected nothing, or K, M, G or T%s", p,
                    hex ? " (and no suffix after 0x hex)" : "");
    if (shift && v > (UINT64_MAX >> shift))
        return fail(why, s, kind, "it is more than %llu bytes", (unsigned long long)UINT64_MAX);
    *out = v << shift;
    return true;
}

/* Whether s (from its start to its end) is a decimal float as parse_word
 * takes it, with an optional trailing f; *nonzero says whether any
 * mantissa digit is nonzero; *special whether it is inf or nan. */
static bool float_syntax(const char *s, bool *nonzero, bool *special, bool *f_suffix)
{
    const char *p = s;
    *nonzero = *special = *f_suffix = false;
    if (*p == '-')
        p++;
    if (!strcasecmp(p, "inf") || !strcasecmp(p, "infinity") || !strcasecmp(p, "nan")) {
        *special = true;
        return true;
    }
    size_t digits = 0;
    bool point = false, exponent = false;
    for (; is_digit(*p); p++, digits++)
        *nonzero |= *p != '0';
    if (*p == '.') {
        point = true;
        for (p++; is_digit(*p); p++, digits++)
            *nonzero |= *p != '0';
    }
    if (!digits)
        return false;
    if (*p == 'e' || *p == 'E') {
        exponent = true;
        p++;
        if (*p == '-' || *p == '+')
            p++;
        if (!is_digit(*p))
            return false;
        while (is_digit(*p))
            p++;
    }
    if (*p == 'f' || *p == 'F') {
        *f_suffix = true;
        p++;
    }
    return !*p && (point || exponent || *f_suffix);
}

bool parse_word(const char *s, uint32_t *out, char *why)
{
    static const char kind[] = "a word";
    static const char forms[] = "expected an integer (42, -5, 0xff) or a float (1.5, -2e3, 1f, inf)";
    if (!s || !*s)
        return fail(why, s ? s : "", kind, "it is empty; %s", forms);
    /* Integers first: the whole text in integer form decides, in range or not. */
    bool neg = s[0] == '-';
    const char *p = neg ? s + 1 : s;
    bool hex = is_hex_prefix(p);
    if (hex && neg)
        return fail(why, s, kind, "0x hex is unsigned; write a negative number in decimal");
    const char *q = hex ? p + 2 : p;
    uint64_t v;
    int r = read_digits(&q, hex ? 16 : 10, &v);
    if (hex && r == 0)
        return fail(why, s, kind, "0x has no hex digits after it");
    if (r != 0 && !*q) {
        if (neg) {
            if (r < 0 || v > 2147483648ull)
                return fail(why, s, kind, "it is less than -2147483648");
            *out = (uint32_t)(0u - (uint32_t)v);
            return true;
        }
        if (r < 0 || v > UINT32_MAX)
            return fail(why, s, kind, "it is more than %s", hex ? "0xffffffff" : "4294967295");
        *out = (uint32_t)v;
        return true;
    }
    if (hex)
        return fail(why, s, kind, "'%s' follows the hex digits (hex floats are not taken)", q);
    bool nonzero, special, f_suffix;
    if (!float_syntax(s, &nonzero, &special, &f_suffix))
        return fail(why, s, kind, "%s", forms);
    char num[128];
    size_t n = strlen(s) - (f_suffix ? 1 : 0);
    if (n >= sizeof num)
        return fail(why, s, kind, "it is longer than %zu characters", sizeof num - 1);
    memcpy(num, s, n);
    num[n] = 0;
    float f = strtof(num, NULL);
    if (!special && isinf(f))
        return fail(why, s, kind, "it is beyond the float range (about 3.4e38)");
    if (!special && f == 0.0f && nonzero)
        return fail(why, s, kind, "it is too small for a float and would read as 0");
    memcpy(out, &f, sizeof f);
    return true;
}

bool parse_seconds(const char *s, double *out, char *why)
{
    static const char kind[] = "a duration in seconds";
    if (!s || !*s)
        return fail(why, s ? s : "", kind, "it is empty; expected seconds such as 5 or 0.25");
    if (*s == '-')
        return fail(why, s, kind, "it is negative");
    const char *p = s;
    size_t digits = 0;
    for (; is_digit(*p); p++)
        digits++;
    if (*p == '.')
        for (p++; is_digit(*p); p++)
            digits++;
    if (!digits || *p)
        return fail(why, s, kind, "expected decimal seconds such as 5, 0.25 or .5");
    double d = strtod(s, NULL);
    if (!(d <= 1e9))
        return fail(why, s, kind, "it is more than 1e9 seconds");
    *out = d;
    return true;
}
