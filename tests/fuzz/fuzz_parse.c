/* SPDX-License-Identifier: MIT */
/*
 * fuzz_parse.c: fuzz target for the number parsers every option and
 * environment switch goes through (src/base/parse.h): sizes, param words,
 * counts and seconds. Any bytes are tried as each kind.
 *
 * A crash, a sanitizer report, a message that is empty or overruns
 * PARSE_WHY_LEN, or a parse that does not round-trip is a bug: a size or
 * count printed back in decimal parses to the same value, a word printed
 * back as 0x hex parses to the same bits, and seconds are within the
 * documented range.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"

static void check_why(bool ok, const char *why)
{
    size_t n = strnlen(why, PARSE_WHY_LEN);
    if (n == PARSE_WHY_LEN || (!ok && n == 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 256)
        return 0;
    char s[257];
    memcpy(s, data, size);
    s[size] = 0;
    char why[PARSE_WHY_LEN], again[64];
    uint64_t v, w;
    uint32_t word, word2;
    double secs;
    bool ok;

    memset(why, 0, sizeof why);
    ok = parse_size(s, &v, why);
    check_why(ok, why);
    if (ok) {
        snprintf(again, sizeof again, "%" PRIu64, v);
        if (!parse_size(again, &w, why) || w != v)
            abort();
    }
    memset(why, 0, sizeof why);
    ok = parse_u64(s, &v, why);
    check_why(ok, why);
    if (ok) {
        snprintf(again, sizeof again, "%" PRIu64, v);
        if (!parse_u64(again, &w, why) || w != v)
            abort();
    }
    memset(why, 0, sizeof why);
    ok = parse_word(s, &word, why);
    check_why(ok, why);
    if (ok) {
        snprintf(again, sizeof again, "0x%" PRIx32, word);
        if (!parse_word(again, &word2, why) || word2 != word)
            abort();
    }
    memset(why, 0, sizeof why);
    ok = parse_seconds(s, &secs, why);
    check_why(ok, why);
    if (ok && !(secs >= 0 && secs <= 1e9))
        abort();
    return 0;
}

/* Writes seeds into dir: one per form each parser knows. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    static const char *const seeds[] = {"0", "42", "0x1f", "-1", "-2147483648", "4294967295", "1.5", "-2e3",
                                        ".5", "3.", "1.5f", "inf", "-inf", "nan", "5T", "64KiB", "1g", "512MB",
                                        "100B", "0.25", "18446744073709551615", "99999999999999999999", "f",
                                        "1.2.3", "0x", "1e39", "1e-50"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02zu", dir, i);
        FILE *f = fopen(path, "wb");
        if (!f || fputs(seeds[i], f) < 0 || fclose(f))
            return 1;
    }
    return 0;
}
