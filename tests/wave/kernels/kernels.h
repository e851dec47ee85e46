/* SPDX-License-Identifier: MIT */
/*
 * kernels.h: what the wave tests share: compiling a kernel source of this
 * folder with clang for gfx900 at test time (and linking it with ld.lld),
 * reading a file, and the skip when clang lacks the amdgcn target (exit
 * 77, which CTest reports as skipped).
 *
 * The compiler is KILN_WAVE_CLANG (CMake finds it), the folder
 * KILN_WAVE_KERNELS; outputs go to a fresh folder under TMPDIR (or /tmp),
 * removed at exit. Where KILN_TEST_DATA names a folder holding wave/NAME.o
 * (and .so), made by the build (tests/wave/kernels/make_data.sh) on a
 * machine with clang, those are used instead: a machine without clang (the
 * H200 machine) runs the tests on them.
 */
#ifndef KILN_WAVE_TEST_KERNELS_H
#define KILN_WAVE_TEST_KERNELS_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WAVE_TEST_SKIP 77

static char kt_dir[512];

static void kt_cleanup(void)
{
    if (!kt_dir[0])
        return;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", kt_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", kt_dir);
}

/* Runs argv quietly (stderr kept when verbose); its exit status, or -1. */
static int kt_spawn(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (quiet) {
            FILE *n = freopen("/dev/null", "w", stderr);
            (void)n;
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The work folder, made on first use. */
static const char *kt_tmp(void)
{
    if (kt_dir[0])
        return kt_dir;
    const char *t = getenv("TMPDIR");
    snprintf(kt_dir, sizeof kt_dir, "%s/kiln-wave-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(kt_dir)) {
        kt_dir[0] = 0;
        return NULL;
    }
    atexit(kt_cleanup);
    return kt_dir;
}

/* Compiles KILN_WAVE_KERNELS/name.cl into <tmp>/name.o (and, link set,
 * ld.lld -shared it into <tmp>/name.so). Fills path with the object's
 * path. 0 on success. */
/* The build's copy of name.ext (ext "o" or "so") under KILN_TEST_DATA,
 * into path: 1 when there is one. */
static int kt_data(const char *name, const char *ext, char *path, size_t cap)
{
    const char *d = getenv("KILN_TEST_DATA");
    if (!d || !*d)
        return 0;
    snprintf(path, cap, "%s/wave/%s.%s", d, name, ext);
    return access(path, R_OK) == 0;
}

static int kt_compile(const char *name, int link, char *path, size_t cap)
{
    if (kt_data(name, link ? "so" : "o", path, cap))
        return 0;
    const char *tmp = kt_tmp();
    if (!tmp)
        return -1;
    char src[700], inc[700], obj[700], so[700];
    snprintf(src, sizeof src, "%s/%s.cl", KILN_WAVE_KERNELS, name);
    snprintf(inc, sizeof inc, "-I%s", KILN_WAVE_KERNELS);
    snprintf(obj, sizeof obj, "%s/%s.o", tmp, name);
    snprintf(so, sizeof so, "%s/%s.so", tmp, name);
    char *cc[] = {(char *)KILN_WAVE_CLANG, "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900", "-nogpulib",
                  "-O2", inc, "-c", src, "-o", obj, NULL};
    if (kt_spawn(cc, 0) != 0)
        return -1;
    if (link) {
        char *ld[] = {(char *)KILN_WAVE_LLD, "-shared", obj, "-o", so, NULL};
        if (kt_spawn(ld, 0) != 0)
            return -1;
    }
    snprintf(path, cap, "%s", link ? so : obj);
    return 0;
}

/* Assembles KILN_WAVE_KERNELS/name.s with llvm-mc into <tmp>/name.o. */
static inline int kt_assemble(const char *name, char *path, size_t cap)
{
    if (kt_data(name, "o", path, cap))
        return 0;
    const char *tmp = kt_tmp();
    if (!tmp)
        return -1;
    char src[700], obj[700];
    snprintf(src, sizeof src, "%s/%s.s", KILN_WAVE_KERNELS, name);
    snprintf(obj, sizeof obj, "%s/%s.o", tmp, name);
    char *mc[] = {(char *)KILN_WAVE_LLVM_MC, "-triple", "amdgcn-amd-amdhsa", "-mcpu=gfx900", "-filetype=obj", src, "-o",
                  obj, NULL};
    if (kt_spawn(mc, 0) != 0)
        return -1;
    snprintf(path, cap, "%s", obj);
    return 0;
}

/* Exits 77 (skip) when clang cannot make gfx900 code objects and the
 * build's are not at hand. */
static void kt_require_target(void)
{
    char have[700];
    if (kt_data("memory", "o", have, sizeof have))
        return;
    const char *tmp = kt_tmp();
    char src[700], obj[700];
    if (!tmp) {
        fprintf(stderr, "SKIP: no temporary folder\n");
        exit(WAVE_TEST_SKIP);
    }
    snprintf(src, sizeof src, "%s/probe.cl", tmp);
    snprintf(obj, sizeof obj, "%s/probe.o", tmp);
    FILE *f = fopen(src, "w");
    if (f) {
        fputs("__kernel void probe(__global int *p) { *p = 1; }\n", f);
        fclose(f);
    }
    char *cc[] = {(char *)KILN_WAVE_CLANG, "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900", "-nogpulib",
                  "-O2", "-c", src, "-o", obj, NULL};
    if (!f || access(KILN_WAVE_CLANG, X_OK) != 0 || kt_spawn(cc, 1) != 0) {
        fprintf(stderr, "SKIP: %s cannot compile OpenCL C for amdgcn-amd-amdhsa gfx900 (clang with the AMDGPU target is "
                        "needed)\n",
                KILN_WAVE_CLANG);
        exit(WAVE_TEST_SKIP);
    }
}

/* The last wave error (kiln_wave_last_error) mentions needle. */
#define CHECK_WAVE_MSG(needle)                                                                     \
    do {                                                                                           \
        if (!strstr(kiln_wave_last_error(), (needle))) {                                           \
            test_failures_++;                                                                      \
            fprintf(stderr, "%s:%d: %s: message '%s' lacks '%s'\n", __FILE__, __LINE__, test_name_, \
                    kiln_wave_last_error(), (needle));                                             \
        }                                                                                          \
    } while (0)

/* The whole file, malloc'd; NULL when it cannot be read. */
static uint8_t *kt_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = n > 0 ? malloc((size_t)n) : NULL;
    if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    fclose(f);
    *len = p ? (size_t)n : 0;
    return p;
}

#endif
