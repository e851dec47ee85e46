/* SPDX-License-Identifier: MIT */
/*
 * parse.h: kiln's one parser for each kind of number a person types: byte
 * sizes, 32-bit param words, unsigned counts and durations in seconds. The
 * command-line tool (its options) and the library (its environment
 * switches) both call these, so `5T` means the same everywhere and an
 * overflow is refused everywhere.
 *
 * Decisions:
 * - Whole text or nothing: no leading or trailing blanks, no '+', no
 *   trailing junk, no empty text. Decimal stays decimal ("010" is ten, never
 *   octal); hex is written 0x (or 0X).
 * - Overflow is an error, never a wrap or a clamp.
 * - A failure writes a message naming the text and why into why[] (when why
 *   is not NULL), for instance "'99999999999999999999' is not a size: it is
 *   more than 18446744073709551615 bytes". Callers prefix the option or the
 *   variable's name.
 * - This header depends on nothing but the C library, so the tool may
 *   include it without the rest of kiln's internals.
 */
#ifndef KILN_PARSE_H
#define KILN_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* Room for any message the parsers write, NUL included. */
#define PARSE_WHY_LEN 224

/* An unsigned count: decimal digits, or 0x and 1 or more hex digits, at
 * most UINT64_MAX. */
bool parse_u64(const char *s, uint64_t *out, char *why);

/* A size in bytes: a whole decimal number with an optional suffix K, M, G
 * or T (any case; powers of 1024: 1K = 1024), itself optionally followed by
 * B or iB ("64KiB", "1g", "512MB"; "100B" is 100 bytes); or 0x hex with no
 * suffix. 0 parses (callers that need a positive size say so). Refused:
 * negative numbers, fractions, unknown suffixes, results over UINT64_MAX. */
bool parse_size(const char *s, uint64_t *out, char *why);

/* A 32-bit param word, as a shader reads kiln_param(n):
 * - an integer: decimal 0..4294967295, negative decimal down to
 *   -2147483648 (stored as its two's complement: -1 is 0xffffffff), or 0x
 *   hex up to 0xffffffff;
 * - or a float, stored as its IEEE-754 single-precision bits: a decimal
 *   number with a '.' or an exponent (1.5, -2e3, .5, 3.), or any decimal
 *   number with an f suffix (1f, 1.5f), or inf, -inf, infinity, nan (any
 *   case). The float must be within float range (1e39 is refused; numbers
 *   below the smallest float become denormals, and a nonzero number that
 *   would round to 0 is refused).
 * Refused: "", "f", "1.2.3", "0x", "-0x1" (hex is unsigned), hex floats,
 * integers out of range. */
bool parse_word(const char *s, uint32_t *out, char *why);

/* A duration in seconds: decimal digits with an optional fraction ("5",
 * "0.25", ".5"), at most 1e9 (about 31 years). Negative, exponents, inf
 * and nan are refused. */
bool parse_seconds(const char *s, double *out, char *why);

#endif
