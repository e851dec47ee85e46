/* SPDX-License-Identifier: MIT */
/*
 * json.c: the tool's JSON writer, for --json: one object on stdout,
 * written straight to a FILE as its values are given.
 *
 * Design decisions:
 * - The writer keeps only a comma flag per nesting level; callers open and
 *   close objects and arrays in order (an unbalanced close is a bug, and an
 *   assert says so). Inside an object every value takes its key; inside an
 *   array the key is NULL.
 * - Strings are bytes (file names, device names): valid UTF-8 passes
 *   through unchanged; quote and backslash are escaped, every control
 *   character (and DEL) is written as \u00XX, and each byte that does not
 *   start a well-formed UTF-8 sequence (an overlong form, a surrogate, past
 *   U+10FFFF, a stray continuation, a cut sequence) becomes U+FFFD, so the
 *   output is valid JSON whatever the bytes were.
 * - Doubles are written with 17 significant digits (they read back exactly);
 *   NaN and the infinities, which JSON cannot hold, are written as null.
 * - --json owns the process's stdout: cli_json_stdout moves the human lines
 *   that would go there onto stderr, so stdout carries the object alone.
 */
#define _POSIX_C_SOURCE 200809L
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_json_init(struct cli_json *j, FILE *f)
{
    *j = (struct cli_json){.f = f};
}

/* The length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629's
 * table), 0 when s[0] starts none. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;   /* the second byte's range */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;   /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;   /* nothing past U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

void cli_json_escape(FILE *f, const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20 || c == 0x7F) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            size_t len = utf8_len(s + i, n - i);
            if (len)
                fwrite(s + i, 1, len, f);
            else
                fputs("\\ufffd", f);
            i += len ? len : 1;
        }
    }
    fputc('"', f);
}

/* The comma and key before a value. */
static void key(struct cli_json *j, const char *k)
{
    if (j->depth && j->more[j->depth - 1])
        fputc(',', j->f);
    if (j->depth)
        j->more[j->depth - 1] = true;
    if (k) {
        cli_json_escape(j->f, k, strlen(k));
        fputc(':', j->f);
    }
}

void cli_json_open(struct cli_json *j, const char *k, char bracket)
{
    assert(j->depth < sizeof j->more / sizeof j->more[0]);
    key(j, k);
    fputc(bracket, j->f);
    j->more[j->depth++] = false;
}

void cli_json_close(struct cli_json *j, char bracket)
{
    assert(j->depth > 0);
    fputc(bracket, j->f);
    if (--j->depth == 0) {
        fputc('\n', j->f);
        fflush(j->f);
    }
}

void cli_json_str(struct cli_json *j, const char *k, const char *s)
{
    key(j, k);
    if (s)
        cli_json_escape(j->f, s, strlen(s));
    else
        fputs("null", j->f);
}

void cli_json_uint(struct cli_json *j, const char *k, uint64_t v)
{
    key(j, k);
    fprintf(j->f, "%" PRIu64, v);
}

void cli_json_int(struct cli_json *j, const char *k, int64_t v)
{
    key(j, k);
    fprintf(j->f, "%" PRId64, v);
}

void cli_json_double(struct cli_json *j, const char *k, double v)
{
    key(j, k);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f);
}

void cli_json_bool(struct cli_json *j, const char *k, bool v)
{
    key(j, k);
    fputs(v ? "true" : "false", j->f);
}

void cli_json_null(struct cli_json *j, const char *k)
{
    key(j, k);
    fputs("null", j->f);
}

FILE *cli_json_stdout(void)
{
    fflush(stdout);
    int fd = dup(STDOUT_FILENO);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return stdout;   /* cannot move it aside: the human lines must then stay off stdout */
    }
    (void)dup2(STDERR_FILENO, STDOUT_FILENO);
    return f;
}

void cli_json_failure(FILE *f, int status)
{
    struct cli_json j;
    cli_json_init(&j, f);
    cli_json_open(&j, NULL, '{');
    cli_json_bool(&j, "ok", false);
    cli_json_int(&j, "exit_status", status);
    cli_json_str(&j, "error", cli_last_failure()[0] ? cli_last_failure() : NULL);
    cli_json_close(&j, '}');
}
