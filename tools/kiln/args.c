/*
 * args.c: helpers shared by the tool's commands: numbers, words, files.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_fail(const char *what, kiln_result r)
{
    fprintf(stderr, "kiln: %s: %s: %s\n", what, kiln_result_name(r), kiln_last_error());
    return 1;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

bool cli_parse_word(const char *s, uint32_t *out)
{
    if (!s || !*s)
        return false;
    size_t n = strlen(s);
    if (s[n - 1] == 'f' && !(n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))) {
        char *end;
        errno = 0;
        float f = strtof(s, &end);
        if (end != s + n - 1 || errno)
            return false;
        memcpy(out, &f, 4);
        return true;
    }
    char *end;
    errno = 0;
    if (s[0] == '-') {
        long long v = strtoll(s, &end, 10);
        if (*end || errno || v < INT32_MIN)
            return false;
        *out = (uint32_t)(int32_t)v;
        return true;
    }
    uint64_t v;
    if (!cli_parse_u64(s, &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            buf = NULL;
            errno = ENOMEM;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        if (bad)
            errno = EIO;
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

bool cli_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    return ok;
}

int cli_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
