/* SPDX-License-Identifier: MIT */
/*
 * front_main.c: kiln-front, the helper process one front-end compile runs
 * in (see front.c). It reads requests on standard input, one frame each,
 * compiles each with prog_compile (from the files the request carries: it
 * opens none), writes each reply as a frame on standard output, and exits
 * (with _exit: no exit handler runs) when its input ends. The library
 * starts it, one for each compile worker; it is no command for people to
 * run.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile/compile_private.h"

#define REQUEST_MAX (1ull << 30)

static bool write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads n bytes of standard input; false at its end or on an error. */
static bool read_all(uint8_t *p, size_t n)
{
    while (n) {
        ssize_t r = read(0, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

int main(int argc, char **argv)
{
    if (argc != 2 || strcmp(argv[1], "--front")) {
        fprintf(stderr, "kiln-front: kiln's compile helper; the library starts it (requests on standard input)\n");
        return 2;
    }
    for (;;) {
        uint64_t len;
        if (!read_all((uint8_t *)&len, sizeof len))
            _exit(0);   /* the service closed its end: done */
        if (len > REQUEST_MAX)
            _exit(3);
        uint8_t *in = mem_alloc(len ? (size_t)len : 1);
        if (!in || !read_all(in, (size_t)len))
            _exit(4);
        struct prog_source src;
        struct prog_output out = {0};
        kiln_result r;
        if (front_request_decode(in, (size_t)len, &src)) {
            r = prog_compile(&src, &out);
            prog_source_finish(&src);
        } else {
            r = KILN_RAISE(KILN_ERR_INVALID, "kiln-front: its request does not hold up");
        }
        free(in);
        struct bytes rep = {0};
        bytes_put_u64(&rep, 0);
        front_reply_encode(&rep, r, r < 0 ? kiln_last_error() : NULL, &out);
        prog_output_finish(&out);
        if (rep.oom)
            _exit(5);
        uint64_t body = rep.len - 8;
        memcpy(rep.p, &body, 8);
        bool ok = write_all(1, rep.p, rep.len);
        free(rep.p);
        if (!ok)
            _exit(0);   /* the service is gone */
        err_clear();
        malloc_trim(0);   /* a big compile's memory goes back before the next */
    }
}
