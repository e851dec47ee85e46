/*
 * bench.h: what kiln's benchmarks share: fatal errors with the program's
 * name, result checks for kiln and Vulkan calls, and a monotonic clock.
 * Each benchmark defines BENCH_NAME before including it.
 */
#ifndef KILN_BENCH_H
#define KILN_BENCH_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <vulkan/vulkan.h>

#include "kiln.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, BENCH_NAME ": error: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

#define KCHECK(call)                                                                               \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK)                                                                         \
            die("%s:%d: %s returned %s: %s", __FILE__, __LINE__, #call, kiln_result_name(r_),      \
                kiln_last_error());                                                                \
    } while (0)

#define VCHECK(call)                                                                               \
    do {                                                                                           \
        VkResult v_ = (call);                                                                      \
        if (v_ != VK_SUCCESS)                                                                      \
            die("%s:%d: %s returned VkResult %d", __FILE__, __LINE__, #call, (int)v_);             \
    } while (0)

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
