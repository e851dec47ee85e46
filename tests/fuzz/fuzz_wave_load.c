/*
 * fuzz_wave_load.c: fuzz target for the wave recompiler's loader and
 * decoder: any bytes are loaded as an AMDHSA code object
 * (src/wave/loader.h); whatever loads has each kernel's code decoded
 * instruction by instruction and printed, then run by the reference
 * interpreter for one group of 64 work-items with a small instruction
 * budget (zeroed buffers, zero values, a little LDS for __local
 * arguments).
 *
 * A crash, a sanitizer report, a leak, an error without a message, or a
 * loaded kernel whose code or descriptor lies outside the image is a bug.
 * Seeds are clang's objects for tests/wave/kernels (relocatable and
 * linked).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/interp.h"
#include "wave/loader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    struct wave_code c;
    if (wave_code_load(data, size, &c) != KILN_OK) {
        if (!err_last()[0])
            abort();
        return 0;
    }
    size_t nwords = (size_t)(c.image_size / 4);
    uint32_t *words = malloc(nwords * 4 + 4);
    if (!words)
        abort();
    memcpy(words, c.image, nwords * 4);
    for (uint32_t k = 0; k < c.kernel_count; k++) {
        const struct wave_kernel *kn = &c.kernels[k];
        if (kn->code_addr + kn->code_size > c.image_size || kn->kd_addr + 64 > c.image_size ||
            kn->explicit_count > kn->arg_count)
            abort();
        uint64_t end = kn->code_addr + kn->code_size;
        for (uint64_t pc = kn->code_addr; pc < end;) {
            struct wave_instr in;
            int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &in);
            if (n <= 0)
                break;
            char text[160];
            wave_print(&in, text, sizeof text);
            pc += 4ull * (unsigned)n;
        }
        /* run it: every explicit argument given something of its kind */
        struct wave_value args[WAVE_MAX_ARGS];
        uint8_t bufs[4][256];
        memset(bufs, 0, sizeof bufs);
        bool runnable = true;
        for (uint32_t a = 0; a < kn->explicit_count; a++) {
            const struct wave_arg *g = &kn->args[a];
            args[a] = (struct wave_value){0};
            if (g->kind == WAVE_ARG_GLOBAL_BUFFER)
                args[a] = (struct wave_value){.kind = WAVE_VALUE_BUFFER, .data = bufs[a % 4], .size = 256};
            else if (g->kind == WAVE_ARG_DYNAMIC_SHARED_POINTER)
                args[a] = (struct wave_value){.kind = WAVE_VALUE_LOCAL, .size = 64};
            else if (g->kind == WAVE_ARG_BY_VALUE && g->size <= sizeof args[a].bytes)
                args[a] = (struct wave_value){.kind = WAVE_VALUE_BYTES, .size = g->size};
            else
                runnable = false;
        }
        if (!runnable)
            continue;
        struct wave_run_desc d = {.code = &c, .kernel = kn, .groups = {1, 1, 1}, .block = {64, 1, 1},
                                  .args = args, .arg_count = kn->explicit_count, .max_instructions = 2000,
                                  .observe = true};
        if (kn->reqd_size[0] && kn->reqd_size[0] * kn->reqd_size[1] * kn->reqd_size[2] <= 256)
            memcpy(d.block, kn->reqd_size, sizeof d.block);
        struct wave_result res;
        if (wave_run(&d, &res) != KILN_OK && !err_last()[0])
            abort();
        wave_result_finish(&res);
    }
    free(words);
    wave_code_finish(&c);
    return 0;
}
