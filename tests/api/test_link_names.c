/* SPDX-License-Identifier: MIT */
/*
 * test_link_names.c: an application that defines functions with the names
 * kiln's modules use inside (log_msg, str_dup, hash128, pool_init,
 * scheme_create, mem_alloc) links against the shipped libkiln.a and runs:
 * the library's own functions of those names are local to it, and each
 * side calls its own. Linked against the shipped library, not the internal
 * one (a link error is this test failing).
 */
#include <stdio.h>
#include <string.h>

#include "kiln.h"

static int app_calls;

/* The application's own functions, named as kiln's internals are. */
void log_msg(int level, const char *fmt, ...);
void log_msg(int level, const char *fmt, ...) { (void)level, (void)fmt, app_calls++; }
char *str_dup(const char *s);
char *str_dup(const char *s) { app_calls++; return (char *)s; }
void hash128(const void *data, size_t len, unsigned char out[16]);
void hash128(const void *data, size_t len, unsigned char out[16]) { (void)data, (void)len, memset(out, 7, 16), app_calls++; }
int pool_init(void *p);
int pool_init(void *p) { (void)p; return ++app_calls; }
int scheme_create(void);
int scheme_create(void) { return ++app_calls; }
void *mem_alloc(size_t n);
void *mem_alloc(size_t n) { (void)n; app_calls++; return NULL; }   /* kiln must not call this one */

int main(void)
{
    log_msg(0, "x");
    (void)str_dup("x");
    unsigned char h[16];
    hash128("x", 1, h);
    (void)pool_init(NULL);
    (void)scheme_create();
    (void)mem_alloc(1);
    int failed = app_calls != 6;
    /* kiln uses its own: a context, a buffer and a round trip on the mock
     * device (a NULL mem_alloc would make them fail). */
    kiln_context ctx;
    kiln_buffer buf;
    uint32_t v = 42, back = 0;
    kiln_result r = kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx);
    if (r == KILN_OK) {
        r = kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 4}, &buf);
        if (r == KILN_OK)
            r = kiln_buffer_upload(ctx, buf, 0, &v, 4);
        if (r == KILN_OK)
            r = kiln_buffer_readback(ctx, buf, 0, &back, 4);
        kiln_context_destroy(ctx);
    }
    failed |= r != KILN_OK || back != 42 || app_calls != 6;
    if (failed)
        fprintf(stderr, "FAIL: %s (%s), app calls %d, read back %u\n", kiln_result_name(r), kiln_last_error(),
                app_calls, back);
    printf("%d passed, %d failed\n", !failed, failed);
    return failed;
}
