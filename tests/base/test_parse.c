/* SPDX-License-Identifier: MIT */
/*
 * test_parse.c: the number parsers of base/parse.h, which the command-line
 * tool's options and the library's environment switches share: every form
 * each one takes, with its value, and every form it refuses, with a message
 * that names the text and says why. Then the environment readers built on
 * them (env_u64, env_size, env_seconds) and KILN_ARCHIVE_MAX_SIZE.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"
#include "base/base.h"
#include "base/parse.h"
#include "test.h"

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The message names the text (quoted) and contains `because`. */
static void check_why(const char *file, int line, const char *text, const char *why, const char *because)
{
    char quoted[96];
    snprintf(quoted, sizeof quoted, "'%.64s", text);
    if (!strstr(why, quoted) || !strstr(why, because)) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: message for '%s' is '%s'; wanted it to name the text and say '%s'\n", file,
                line, test_name_, text, why, because);
    }
}

#define SIZE_OK(text, want)                                                                        \
    do {                                                                                           \
        uint64_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (!parse_size((text), &v_, why_) || v_ != (uint64_t)(want)) {                            \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_size('%s') gave %llu (%s), expected %llu\n", __FILE__, \
                    __LINE__, test_name_, (text), (unsigned long long)v_, why_,                    \
                    (unsigned long long)(want));                                                   \
        }                                                                                          \
    } while (0)
#define SIZE_BAD(text, because)                                                                    \
    do {                                                                                           \
        uint64_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (parse_size((text), &v_, why_) || v_ != 12345) {                                        \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_size('%s') was taken\n", __FILE__, __LINE__, test_name_, \
                    (text));                                                                       \
        } else {                                                                                   \
            check_why(__FILE__, __LINE__, (text), why_, (because));                                \
        }                                                                                          \
    } while (0)

TEST(sizes_taken)
{
    SIZE_OK("0", 0);
    SIZE_OK("4096", 4096);
    SIZE_OK("010", 10);   /* decimal, never octal */
    SIZE_OK("0x1000", 4096);
    SIZE_OK("0XfF", 255);
    SIZE_OK("1K", 1024);
    SIZE_OK("1k", 1024);
    SIZE_OK("64KiB", 64 << 10);
    SIZE_OK("64kb", 64 << 10);
    SIZE_OK("512M", 512ull << 20);
    SIZE_OK("512MB", 512ull << 20);
    SIZE_OK("2GiB", 2ull << 30);
    SIZE_OK("1g", 1ull << 30);
    SIZE_OK("5T", 5ull << 40);
    SIZE_OK("5tib", 5ull << 40);
    SIZE_OK("100B", 100);
    SIZE_OK("100b", 100);
    SIZE_OK("18446744073709551615", UINT64_MAX);
    SIZE_OK("0xffffffffffffffff", UINT64_MAX);
    SIZE_OK("16777215T", 16777215ull << 40);   /* the largest whole number of T */
    SIZE_OK("00000000000000000000000000001K", 1024);
}

TEST(sizes_refused)
{
    SIZE_BAD("", "empty");
    SIZE_BAD("99999999999999999999", "more than 18446744073709551615");
    SIZE_BAD("18446744073709551616", "more than");
    SIZE_BAD("0x10000000000000000", "more than");
    SIZE_BAD("16777216T", "more than");
    SIZE_BAD("99999999999999999999T", "more than");
    SIZE_BAD("-1", "negative");
    SIZE_BAD("-5K", "negative");
    SIZE_BAD("+5", "does not start with a digit");
    SIZE_BAD(" 5", "does not start with a digit");
    SIZE_BAD("5 ", "' ' follows");
    SIZE_BAD("lots", "does not start with a digit");
    SIZE_BAD("K", "does not start with a digit");
    SIZE_BAD("5Q", "'Q' follows");
    SIZE_BAD("5KK", "'K' follows");
    SIZE_BAD("5Kx", "'x' follows");
    SIZE_BAD("5KiBs", "'iBs' follows");
    SIZE_BAD("5iB", "'iB' follows");
    SIZE_BAD("1.5G", "whole number");
    SIZE_BAD("0x", "no hex digits");
    SIZE_BAD("0x10K", "no suffix after 0x");
    SIZE_BAD("0xg", "no hex digits");
    /* a long text is named, cut short */
    char long_text[300];
    memset(long_text, '7', sizeof long_text - 2);
    long_text[sizeof long_text - 2] = 'x';
    long_text[sizeof long_text - 1] = 0;
    char why[PARSE_WHY_LEN];
    uint64_t v;
    CHECK(!parse_size(long_text, &v, why));
    CHECK(strstr(why, "...' is not a size") != NULL);
    CHECK(!parse_size(NULL, &v, NULL));   /* why may be NULL */
}

#define U64_OK(text, want)                                                                         \
    do {                                                                                           \
        uint64_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (!parse_u64((text), &v_, why_) || v_ != (uint64_t)(want)) {                             \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_u64('%s') gave %llu (%s)\n", __FILE__, __LINE__,      \
                    test_name_, (text), (unsigned long long)v_, why_);                             \
        }                                                                                          \
    } while (0)
#define U64_BAD(text, because)                                                                     \
    do {                                                                                           \
        uint64_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (parse_u64((text), &v_, why_) || v_ != 12345) {                                         \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_u64('%s') was taken\n", __FILE__, __LINE__, test_name_, \
                    (text));                                                                       \
        } else {                                                                                   \
            check_why(__FILE__, __LINE__, (text), why_, (because));                                \
        }                                                                                          \
    } while (0)

TEST(counts)
{
    U64_OK("0", 0);
    U64_OK("1", 1);
    U64_OK("010", 10);
    U64_OK("4294967295", 4294967295u);
    U64_OK("18446744073709551615", UINT64_MAX);
    U64_OK("0x10", 16);
    U64_OK("0xFFFFFFFFFFFFFFFF", UINT64_MAX);
    U64_BAD("", "empty");
    U64_BAD("18446744073709551616", "more than 18446744073709551615");
    U64_BAD("99999999999999999999", "more than");
    U64_BAD("0x1ffffffffffffffff", "more than");
    U64_BAD("-1", "negative");
    U64_BAD("-0", "negative");
    U64_BAD("+1", "does not start with a digit");
    U64_BAD(" 1", "does not start with a digit");
    U64_BAD("1 ", "' ' follows");
    U64_BAD("1K", "'K' follows");   /* a count takes no suffix */
    U64_BAD("1.0", "'.0' follows");
    U64_BAD("1e3", "'e3' follows");
    U64_BAD("0x", "no hex digits");
    U64_BAD("x1", "does not start with a digit");
}

#define WORD_OK(text, want)                                                                        \
    do {                                                                                           \
        uint32_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (!parse_word((text), &v_, why_) || v_ != (uint32_t)(want)) {                            \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_word('%s') gave 0x%08x (%s), expected 0x%08x\n",      \
                    __FILE__, __LINE__, test_name_, (text), v_, why_, (uint32_t)(want));           \
        }                                                                                          \
    } while (0)
#define WORD_BAD(text, because)                                                                    \
    do {                                                                                           \
        uint32_t v_ = 12345;                                                                       \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (parse_word((text), &v_, why_) || v_ != 12345) {                                        \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_word('%s') was taken as 0x%08x\n", __FILE__, __LINE__, \
                    test_name_, (text), v_);                                                       \
        } else {                                                                                   \
            check_why(__FILE__, __LINE__, (text), why_, (because));                                \
        }                                                                                          \
    } while (0)

TEST(words_integers)
{
    WORD_OK("0", 0);
    WORD_OK("42", 42);
    WORD_OK("010", 10);
    WORD_OK("4294967295", 0xffffffffu);
    WORD_OK("-1", 0xffffffffu);
    WORD_OK("-0", 0);
    WORD_OK("-5", (uint32_t)-5);
    WORD_OK("-2147483648", 0x80000000u);
    WORD_OK("0xff", 0xff);
    WORD_OK("0XDEADBEEF", 0xdeadbeefu);
    WORD_OK("0xffffffff", 0xffffffffu);
    WORD_OK("0x1f", 0x1f);   /* hex, even though it ends in f */
    WORD_OK("0x00000000000000000001", 1);
}

TEST(words_floats)
{
    WORD_OK("1.5", f2u(1.5f));
    WORD_OK("1.5f", f2u(1.5f));
    WORD_OK("1.5F", f2u(1.5f));
    WORD_OK("-2e3", f2u(-2000.0f));
    WORD_OK("2E-3", f2u(2e-3f));
    WORD_OK("1e+2", f2u(100.0f));
    WORD_OK("1e3", f2u(1000.0f));   /* an exponent makes it a float */
    WORD_OK(".5", f2u(0.5f));
    WORD_OK("3.", f2u(3.0f));
    WORD_OK("1f", f2u(1.0f));   /* an f suffix makes it a float */
    WORD_OK("-3f", f2u(-3.0f));
    WORD_OK("0.0", 0);
    WORD_OK("-0.0", 0x80000000u);
    WORD_OK("3.4028235e38", f2u(3.4028235e38f));
    WORD_OK("1e-40", f2u(1e-40f));   /* a denormal */
    WORD_OK("0e999", 0);             /* zero, whatever the exponent */
    WORD_OK("inf", f2u(INFINITY));
    WORD_OK("-inf", f2u(-INFINITY));
    WORD_OK("Infinity", f2u(INFINITY));
    uint32_t v;
    CHECK(parse_word("nan", &v, NULL));
    float f;
    memcpy(&f, &v, 4);
    CHECK(isnan(f));
}

TEST(words_refused)
{
    WORD_BAD("", "empty");
    WORD_BAD("f", "expected an integer");
    WORD_BAD("F", "expected an integer");
    WORD_BAD("-", "expected an integer");
    WORD_BAD("-f", "expected an integer");
    WORD_BAD(".", "expected an integer");
    WORD_BAD(".f", "expected an integer");
    WORD_BAD("1.2.3", "expected an integer");
    WORD_BAD("1..2", "expected an integer");
    WORD_BAD("zz", "expected an integer");
    WORD_BAD("1e", "expected an integer");
    WORD_BAD("1e+", "expected an integer");
    WORD_BAD("1ff", "expected an integer");
    WORD_BAD("1.5ff", "expected an integer");
    WORD_BAD("+1", "expected an integer");
    WORD_BAD("--1", "expected an integer");
    WORD_BAD(" 1", "expected an integer");
    WORD_BAD("1 ", "expected an integer");
    WORD_BAD("nan(1)", "expected an integer");
    WORD_BAD("infx", "expected an integer");
    WORD_BAD("4294967296", "more than 4294967295");
    WORD_BAD("99999999999999999999", "more than 4294967295");
    WORD_BAD("-2147483649", "less than -2147483648");
    WORD_BAD("-99999999999999999999", "less than -2147483648");
    WORD_BAD("0x100000000", "more than 0xffffffff");
    WORD_BAD("0x", "no hex digits");
    WORD_BAD("0xfg", "follows the hex digits");
    WORD_BAD("0x1.8p1", "hex floats");
    WORD_BAD("-0x1", "0x hex is unsigned");
    WORD_BAD("1e39", "beyond the float range");
    WORD_BAD("-1e39f", "beyond the float range");
    WORD_BAD("1e-50", "too small for a float");
}

#define SECONDS_OK(text, want)                                                                     \
    do {                                                                                           \
        double v_ = -1;                                                                            \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (!parse_seconds((text), &v_, why_) || v_ != (want)) {                                   \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_seconds('%s') gave %g (%s)\n", __FILE__, __LINE__,    \
                    test_name_, (text), v_, why_);                                                 \
        }                                                                                          \
    } while (0)
#define SECONDS_BAD(text, because)                                                                 \
    do {                                                                                           \
        double v_ = -1;                                                                            \
        char why_[PARSE_WHY_LEN] = "";                                                             \
        if (parse_seconds((text), &v_, why_) || v_ != -1) {                                        \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: parse_seconds('%s') was taken\n", __FILE__, __LINE__,       \
                    test_name_, (text));                                                           \
        } else {                                                                                   \
            check_why(__FILE__, __LINE__, (text), why_, (because));                                \
        }                                                                                          \
    } while (0)

TEST(durations)
{
    SECONDS_OK("0", 0.0);
    SECONDS_OK("5", 5.0);
    SECONDS_OK("0.25", 0.25);
    SECONDS_OK(".5", 0.5);
    SECONDS_OK("2.", 2.0);
    SECONDS_OK("1000000000", 1e9);
    SECONDS_BAD("", "empty");
    SECONDS_BAD("-1", "negative");
    SECONDS_BAD("1000000001", "more than 1e9");
    SECONDS_BAD("1e3", "expected decimal seconds");
    SECONDS_BAD("inf", "expected decimal seconds");
    SECONDS_BAD("nan", "expected decimal seconds");
    SECONDS_BAD("5s", "expected decimal seconds");
    SECONDS_BAD(".", "expected decimal seconds");
    SECONDS_BAD("1.2.3", "expected decimal seconds");
}

/* The environment readers take the same forms and keep the default, with a
 * warning, on anything else. */
TEST(environment_switches)
{
    setenv("KILN_TEST_PARSE", "0x10", 1);
    CHECK_EQ(env_u64("KILN_TEST_PARSE", 7), 16);
    setenv("KILN_TEST_PARSE", "99999999999999999999", 1);
    CHECK_EQ(env_u64("KILN_TEST_PARSE", 7), 7);   /* strtoull clamped this to UINT64_MAX */
    setenv("KILN_TEST_PARSE", "-1", 1);
    CHECK_EQ(env_u64("KILN_TEST_PARSE", 7), 7);
    setenv("KILN_TEST_PARSE", "5T", 1);
    CHECK(env_size("KILN_TEST_PARSE", 7) == 5ull << 40);
    setenv("KILN_TEST_PARSE", "5X", 1);
    CHECK_EQ(env_size("KILN_TEST_PARSE", 7), 7);
    setenv("KILN_TEST_PARSE", "0.5", 1);
    CHECK(env_seconds("KILN_TEST_PARSE", 3.0) == 0.5);
    setenv("KILN_TEST_PARSE", "soon", 1);
    CHECK(env_seconds("KILN_TEST_PARSE", 3.0) == 3.0);
    setenv("KILN_TEST_PARSE", "", 1);
    CHECK_EQ(env_u64("KILN_TEST_PARSE", 7), 7);
    unsetenv("KILN_TEST_PARSE");
    CHECK_EQ(env_size("KILN_TEST_PARSE", 9), 9);

    /* KILN_ARCHIVE_MAX_SIZE goes through the same size parser. */
    struct arc_store_config c;
    setenv("KILN_ARCHIVE_MAX_SIZE", "5T", 1);
    arc_store_config_default(&c);
    CHECK(c.max_size == 5ull << 40);
    setenv("KILN_ARCHIVE_MAX_SIZE", "99999999999999999999", 1);
    arc_store_config_default(&c);
    CHECK(c.max_size == 1ull << 30);
    setenv("KILN_ARCHIVE_MAX_SIZE", "0", 1);
    arc_store_config_default(&c);
    CHECK(c.max_size == 1ull << 30);
    unsetenv("KILN_ARCHIVE_MAX_SIZE");
}

/* A message that quotes the error before it (a raise passed err_last() or
 * kiln_last_error(), as the server's and the remote client's do) reads
 * whole: the raise never formats from the buffer it writes. */
TEST(an_error_may_quote_the_one_before)
{
    (void)KILN_RAISE(KILN_ERR_IO, "transport: waiting for a segment timed out");
    (void)KILN_RAISE(KILN_ERR_INVALID, "request: data in segment %u, never announced (%s)", 104u, err_last());
    CHECK(!strcmp(kiln_last_error(),
                  "request: data in segment 104, never announced (transport: waiting for a segment timed out)"));
    (void)KILN_RAISE(KILN_ERR_IO, "%s", kiln_last_error());
    CHECK(!strcmp(kiln_last_error(),
                  "request: data in segment 104, never announced (transport: waiting for a segment timed out)"));
    (void)KILN_RAISE(KILN_ERR_IO, "%s; %s", err_last(), err_last());
    CHECK(strstr(kiln_last_error(), "timed out); request: data in segment 104"));
    err_clear();
}

int main(void)
{
    RUN(sizes_taken);
    RUN(sizes_refused);
    RUN(counts);
    RUN(words_integers);
    RUN(words_floats);
    RUN(words_refused);
    RUN(durations);
    RUN(environment_switches);
    RUN(an_error_may_quote_the_one_before);
    return TEST_SUMMARY();
}
