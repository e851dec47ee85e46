/* SPDX-License-Identifier: MIT */
/*
 * args.c: helpers shared by the tool's commands: input files, failures.
 * Numbers, sizes and words are parsed by base/parse.h, the parsers the
 * library's environment switches use too.
 *
 * Input files are bounded: a regular file's size is checked (fstat) before
 * a byte is read, anything else (a pipe, /dev/zero) is read no further than
 * the bound allows, and a folder is refused by name. Nothing is read
 * without a bound.
 *
 * "-" names standard input, read once per run: the first "-" takes it (a
 * dup of fd 0, so closing it leaves fd 0 alone) and a second is refused,
 * since the first would have read it all. A file named - is ./-.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Reads the decimal number at *p (digits only), moving *p past it. */
static bool read_num(const char **p, uint32_t *out)
{
    uint64_t x = 0;
    const char *s = *p;
    if (*s < '0' || *s > '9')
        return false;
    for (; *s >= '0' && *s <= '9'; s++)
        if ((x = x * 10 + (uint64_t)(*s - '0')) > UINT32_MAX)
            return false;
    *p = s;
    *out = (uint32_t)x;
    return true;
}

/* Splits "[S.]B[[E]]=REST" into a site (set 0, element 0 unless given) and
 * REST (borrowed). */
bool cli_site_split(const char *v, struct cli_site *at, const char **rest)
{
    const char *p = v;
    *at = (struct cli_site){0};
    if (!read_num(&p, &at->binding))
        return false;
    if (*p == '.') {
        p++;
        at->set = at->binding;
        if (!read_num(&p, &at->binding))
            return false;
    }
    if (*p == '[') {
        p++;
        if (!read_num(&p, &at->element) || *p++ != ']')
            return false;
    }
    if (*p != '=')
        return false;
    *rest = p + 1;
    return true;
}

/* A site as the flags write it: "2", "1.2", "1.2[3]". */
const char *cli_site_text(struct cli_site at, char buf[48])
{
    int n = at.set ? snprintf(buf, 48, "%" PRIu32 ".%" PRIu32, at.set, at.binding)
                   : snprintf(buf, 48, "%" PRIu32, at.binding);
    if (at.element && n > 0 && n < 48)
        snprintf(buf + n, 48 - (size_t)n, "[%" PRIu32 "]", at.element);
    return buf;
}

/* The format a GLSL format qualifier names ("r32f"), 0 for none. */
kiln_format cli_format_named(const char *name)
{
    for (kiln_format f = 1; f < KILN_FORMAT_COUNT; f++)
        if (!strcmp(name, kiln_format_name(f)))
            return f;
    return KILN_FORMAT_UNDEFINED;
}

bool cli_site_same(struct cli_site a, struct cli_site b)
{
    return a.set == b.set && a.binding == b.binding && a.element == b.element;
}


static char last_failure[1024];

void cli_note_failure(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_failure, sizeof last_failure, fmt, ap);
    va_end(ap);
}

const char *cli_last_failure(void) { return last_failure; }

int cli_fail(const char *what, kiln_result r)
{
    fprintf(stderr, "kiln: %s: %s: %s\n", what, kiln_result_name(r), kiln_last_error());
    cli_note_failure("%s: %s: %s", what, kiln_result_name(r), kiln_last_error());
    return 1;
}

bool cli_in_open(struct cli_in *in, const char *path, char *why, size_t why_len)
{
    *in = (struct cli_in){.fd = -1};
    static bool stdin_taken;
    if (!strcmp(path, "-")) {
        if (stdin_taken) {
            snprintf(why, why_len, "standard input is read once per run, and an earlier '-' reads it already "
                                   "(name a file called - as ./-)");
            return false;
        }
        int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) != 0) {
            snprintf(why, why_len, "standard input: %s", strerror(errno));
            if (fd >= 0)
                close(fd);
            return false;
        }
        if (S_ISDIR(st.st_mode)) {
            snprintf(why, why_len, "standard input is a directory");
            close(fd);
            return false;
        }
        stdin_taken = true;
        in->fd = fd;
        in->stream = !S_ISREG(st.st_mode);
        /* A regular file as stdin may be read from its current offset on. */
        off_t at = in->stream ? 0 : lseek(fd, 0, SEEK_CUR);
        in->size = in->stream ? 0 : (uint64_t)(st.st_size - (at > 0 && at <= st.st_size ? at : 0));
        return true;
    }
    /* O_NONBLOCK: opening a FIFO nobody writes must not hang here; reads
     * block again after. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, why_len, "%s", strerror(errno));
        close(fd);
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(why, why_len, "is a directory");
        close(fd);
        return false;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    in->fd = fd;
    in->stream = !S_ISREG(st.st_mode);
    in->size = in->stream ? 0 : (uint64_t)st.st_size;
    return true;
}

void cli_in_close(struct cli_in *in)
{
    if (in->fd >= 0)
        close(in->fd);
    in->fd = -1;
}

char *cli_in_read(struct cli_in *in, uint64_t max, size_t *len, char *why, size_t why_len)
{
    if (max > SIZE_MAX - 1)
        max = SIZE_MAX - 1;
    if (!in->stream && in->size > max) {
        snprintf(why, why_len, "holds %" PRIu64 " bytes, more than the %" PRIu64 " that can be used", in->size,
                 max);
        cli_in_close(in);
        return NULL;
    }
    /* A regular file: its size from fstat (it may shrink meanwhile; what
     * grows past it is not read). A stream: read in steps, never past
     * max + 1 bytes, the one that shows it is too long. */
    size_t cap = in->stream ? (size_t)(max + 1 < (1u << 16) ? max + 1 : (1u << 16)) : (size_t)in->size;
    size_t limit = in->stream ? (size_t)max + 1 : (size_t)in->size;
    size_t n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (n == cap) {
            if (cap == limit)
                break;
            size_t bigger = cap > limit / 2 ? limit : cap * 2;
            char *b = realloc(buf, bigger + 1);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap = bigger;
        }
        ssize_t got = read(in->fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            snprintf(why, why_len, "%s", strerror(errno));
            free(buf);
            cli_in_close(in);
            return NULL;
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    cli_in_close(in);
    if (!buf) {
        snprintf(why, why_len, "out of host memory for %zu bytes", cap);
        return NULL;
    }
    if (n > max) {
        snprintf(why, why_len, "gives more than the %" PRIu64 " bytes that can be used", max);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

char *cli_read_file(const char *path, uint64_t max, size_t *len, char *why, size_t why_len)
{
    struct cli_in in;
    if (!cli_in_open(&in, path, why, why_len))
        return NULL;
    return cli_in_read(&in, max, len, why, why_len);
}

int cli_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

bool cli_decimal_integer(const char *t)
{
    t += *t == '-';
    if (!*t)
        return false;
    while (*t >= '0' && *t <= '9')
        t++;
    return !*t;
}
