/* SPDX-License-Identifier: MIT */
/*
 * bench.h: what kiln's benchmarks share: fatal errors with the program's
 * name, result checks for kiln and Vulkan calls, a monotonic clock and
 * medians of samples.
 * Each benchmark defines BENCH_NAME before including it.
 */
#ifndef KILN_BENCH_H
#define KILN_BENCH_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* An option's number in [lo, hi]; dies naming the option otherwise. */
static inline uint64_t bench_parse_num(const char *opt, const char *s, uint64_t lo, uint64_t hi)
{
    char *end;
    unsigned long long v = s ? strtoull(s, &end, 10) : 0;
    if (!s || !*s || *end || s[0] == '-' || v < lo || v > hi)
        die("%s wants a number from %llu to %llu, got '%s'", opt, (unsigned long long)lo, (unsigned long long)hi,
            s ? s : "");
    return v;
}

/* qsort's order for uint64_t samples. */
static inline int bench_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median of n samples, in their unit; sorts them. */
static inline double bench_median(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2.0;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The physical device of `instance` named `name` (as kiln_caps reports it)
 * and its first compute queue family; dies if there is none. */
static inline VkPhysicalDevice bench_find_device(VkInstance instance, const char *name, uint32_t *family)
{
    uint32_t n = 16;
    VkPhysicalDevice devs[16], phys = VK_NULL_HANDLE;
    VkResult vr = vkEnumeratePhysicalDevices(instance, &n, devs);
    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE)
        die("vkEnumeratePhysicalDevices returned %d", (int)vr);
    for (uint32_t i = 0; i < n && !phys; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        if (!strcmp(p.deviceName, name))
            phys = devs[i];
    }
    if (!phys)
        die("no Vulkan device named '%s'", name);
    uint32_t nf = 32;
    VkQueueFamilyProperties qf[32];
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, qf);
    *family = UINT32_MAX;
    for (uint32_t i = 0; i < nf && *family == UINT32_MAX; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
            *family = i;
    if (*family == UINT32_MAX)
        die("device '%s' has no compute queue", name);
    return phys;
}

#endif
