/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wave_load.c: fuzz target for the wave recompiler's loader and
 * decoder: any bytes are loaded as an AMDHSA code object
 * (src/wave/loader.h); whatever loads has each kernel's code decoded
 * instruction by instruction and printed (fuzz_wave_code runs code on the
 * interpreter; this target stays fast enough for millions of inputs).
 *
 * A crash, a sanitizer report, a leak, an error without a message, or a
 * loaded kernel whose code or descriptor lies outside the image is a bug.
 * A few kilobytes can lay out an image of up to WAVE_MAX_IMAGE (sections
 * go where their addresses say, the gaps zero), whose kernels then span
 * millions of zero words: bounded work, but under ASan a 10 KB input
 * decoding 5.5 million of them outlasted the fuzzer's timeout. So the
 * instructions decoded per input are capped (DECODE_BUDGET); past it an
 * input only repeats decodes already done.
 * Seeds are clang's objects for tests/wave/kernels (relocatable and
 * linked).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/loader.h"

#define DECODE_BUDGET 100000u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20))
        return 0;
    err_clear();
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
    uint32_t budget = DECODE_BUDGET;
    for (uint32_t k = 0; k < c.kernel_count && budget; k++) {
        const struct wave_kernel *kn = &c.kernels[k];
        if (kn->code_addr + kn->code_size > c.image_size || kn->kd_addr + 64 > c.image_size ||
            kn->explicit_count > kn->arg_count)
            abort();
        uint64_t end = kn->code_addr + kn->code_size;
        for (uint64_t pc = kn->code_addr; pc < end && budget; budget--) {
            struct wave_instr in;
            int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &in);
            if (n <= 0)
                break;
            char text[160];
            wave_print(&in, text, sizeof text);
            pc += 4ull * (unsigned)n;
        }
    }
    free(words);
    wave_code_finish(&c);
    return 0;
}
