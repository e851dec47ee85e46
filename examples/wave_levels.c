/* SPDX-License-Identifier: MIT */
/*
 * wave_levels.c: libkiln-wave's level table, and, given a guest code
 * object (clang -target amdgcn-amd-amdhsa -mcpu=gfx900 -c k.cl), each of
 * its kernels with its explicit arguments and whether each built level can
 * run it.
 *
 *   wave_levels [CODE.o]
 */
#include <stdio.h>
#include <stdlib.h>

#include "kiln_wave.h"

static int list_kernels(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    static unsigned char bytes[64 << 20];
    size_t len = fread(bytes, 1, sizeof bytes, f);
    fclose(f);
    kiln_wave_code *code;
    kiln_wave_code_info info;
    if (kiln_wave_code_load(bytes, len, &code) != KILN_OK || kiln_wave_code_info_get(code, &info) != KILN_OK) {
        fprintf(stderr, "%s: %s\n", path, kiln_wave_last_error());
        return 1;
    }
    printf("%s: %s, %u kernels\n", path, info.target, info.kernel_count);
    for (uint32_t k = 0; k < info.kernel_count; k++) {
        kiln_wave_kernel_info ki;
        if (kiln_wave_kernel_get(code, k, &ki) != KILN_OK)
            continue;
        printf("  %s(", ki.name);
        for (uint32_t a = 0; a < ki.explicit_count; a++) {
            kiln_wave_arg_info arg;
            if (kiln_wave_arg_get(code, k, a, &arg) == KILN_OK)
                printf("%s%s %s", a ? ", " : "", arg.type_name, arg.name);
        }
        printf(")\n");
        for (uint32_t l = 0; l < kiln_wave_level_count(); l++) {
            kiln_wave_level_info li;
            if (kiln_wave_level_get(l, &li) != KILN_OK || !li.built)
                continue;
            kiln_result r = kiln_wave_level_check(code, k, li.name, NULL);
            printf("    %s: %s\n", li.name, r == KILN_OK ? "runs it" : kiln_wave_last_error());
        }
    }
    kiln_wave_code_destroy(code);
    return 0;
}

int main(int argc, char **argv)
{
    for (uint32_t i = 0; i < kiln_wave_level_count(); i++) {
        kiln_wave_level_info l;
        if (kiln_wave_level_get(i, &l) == KILN_OK)
            printf("%-10s %-9s %s\n", l.name, l.built ? "built" : "not built", l.summary);
    }
    return argc > 1 ? list_kernels(argv[1]) : 0;
}
