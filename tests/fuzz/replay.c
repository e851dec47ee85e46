/* SPDX-License-Identifier: MIT */
/*
 * replay.c: runs a fuzz target over corpus files without libFuzzer, so CI
 * replays every corpus on every build. Arguments are files or folders
 * (every regular file inside is fed once). `--write-seeds DIR` makes the
 * target's seed files instead, for targets that define fuzz_write_seeds.
 * With no arguments, <target>_replay replays ../corpus/<target> beside its
 * own folder, where a packed copy of the tests keeps the corpora.
 * Prints "N passed, 0 failed": a failing input crashes or aborts, which
 * CTest reports.
 */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* A target that makes its own seed files defines this; others do not. */
int fuzz_write_seeds(const char *dir) __attribute__((weak));

static int feed(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 0;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);   /* exactly n bytes: ASan sees overreads */
    size_t got = n > 0 ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write-seeds")) {
        if (!fuzz_write_seeds) {
            fprintf(stderr, "replay: this target makes no seeds\n");
            return 1;
        }
        return fuzz_write_seeds(argv[2]);
    }
    char packed[4096 + 64];
    char *packed_argv[2] = {argv[0], packed};
    if (argc == 1) {
        /* <dir>/tests/fuzz_x_replay -> <dir>/corpus/fuzz_x */
        char self[4000];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr, "replay: no inputs given, and this program's own path is unknown\n");
            return 1;
        }
        self[n] = 0;
        char *base = strrchr(self, '/');
        *base++ = 0;
        char *suffix = strstr(base, "_replay");
        if (suffix)
            *suffix = 0;
        snprintf(packed, sizeof packed, "%s/../corpus/%s", self, base);
        argc = 2;
        argv = packed_argv;
    }
    int inputs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st)) {
            fprintf(stderr, "replay: no such file or folder: %s\n", argv[i]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            inputs += feed(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            if (!stat(path, &st) && S_ISREG(st.st_mode))
                inputs += feed(path);
        }
        if (d)
            closedir(d);
    }
    if (!inputs) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    printf("%d passed, 0 failed\n", inputs);
    return 0;
}
