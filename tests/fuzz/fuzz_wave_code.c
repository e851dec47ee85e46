/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wave_code.c: fuzz target for the decoder and the reference
 * interpreter on arbitrary instruction streams. The input's first 8 bytes
 * pick the setup (the kernel descriptor's code properties and rsrc2, and
 * the block size); the rest, padded to whole dwords, is the code of a
 * kernel laid out in an image by hand, with one buffer argument. Every
 * instruction is decoded and printed, then the kernel runs for one group
 * with a small budget: whatever the code does (registers at any index,
 * addresses anywhere, branches anywhere, lane-crossing ops, barriers),
 * the run ends with a result or an error naming what was wrong. Before
 * it, the Lane level's analysis and the Lane and Wavefront levels'
 * checks judge the same code: a verdict, or a refusal with its reason.
 *
 * A crash, a sanitizer report, a leak or an error without a message is a
 * bug. Seeds are the code of clang's kernels for tests/wave/kernels.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "wave/decode.h"
#include "wave/interp.h"
#include "wave/lane.h"
#include "wave/loader.h"
#include "wave/wavefront.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8 || size > (64u << 10))
        return 0;
    err_clear();
    size_t code_bytes = (size - 8 + 3) & ~(size_t)3;
    struct wave_code c = {0};
    struct wave_kernel k = {0};
    struct wave_arg arg = {.kind = WAVE_ARG_GLOBAL_BUFFER, .offset = 0, .size = 8};
    c.image_size = code_bytes + 4;   /* an s_endpgm after the input */
    c.image = calloc(1, (size_t)c.image_size);
    if (!c.image)
        abort();
    memcpy(c.image, data + 8, size - 8);
    memcpy(c.image + code_bytes, "\x00\x00\x81\xbf", 4);
    c.text_addr = 0, c.text_size = c.image_size;
    c.kernels = &k, c.kernel_count = 1;
    snprintf(c.target, sizeof c.target, "gfx900");
    snprintf(k.name, sizeof k.name, "fuzz");
    k.code_addr = 0, k.code_size = c.image_size;
    k.kernarg_size = 16, k.args = &arg, k.arg_count = 1, k.explicit_count = 1;
    k.vgprs = 32, k.sgprs = 32, k.wavefront_size = 64;
    k.group_segment_size = data[0] & 1 ? 256 : 0;
    k.private_segment_size = data[0] & 2 ? 16 : 0;
    uint16_t props = (uint16_t)(data[1] & 0x7f);
    k.code_properties = props;
    struct wave_setup *s = &k.setup;
    s->private_segment_buffer = props & 1, s->dispatch_ptr = props & 2, s->queue_ptr = props & 4;
    s->kernarg_segment_ptr = props & 8, s->dispatch_id = props & 16, s->flat_scratch_init = props & 32;
    s->private_segment_size = props & 64;
    s->user_sgpr_count = 4 * s->private_segment_buffer + 2 * s->dispatch_ptr + 2 * s->queue_ptr +
                         2 * s->kernarg_segment_ptr + 2 * s->dispatch_id + 2 * s->flat_scratch_init +
                         s->private_segment_size;
    s->workgroup_id[0] = data[2] & 1, s->workgroup_id[1] = data[2] & 2, s->workgroup_id[2] = data[2] & 4;
    s->workgroup_info = data[2] & 8, s->private_segment_wave_offset = data[2] & 16;
    s->workitem_id_dims = 1 + (data[3] % 3);
    k.rsrc1 = (uint32_t)data[4] << 12;
    uint32_t block[3] = {1u + data[5] % 100u, 1u + data[6] % 2u, 1u};

    size_t nwords = (size_t)(c.image_size / 4);
    uint32_t *words = malloc(nwords * 4);
    if (!words)
        abort();
    memcpy(words, c.image, nwords * 4);
    for (size_t pc = 0; pc < nwords * 4;) {
        struct wave_instr in;
        int n = wave_decode(words, nwords, pc, &in);
        if (n <= 0) {
            if (!err_last()[0])
                abort();
            pc += 4;
            continue;
        }
        char text[160];
        wave_print(&in, text, sizeof text);
        pc += 4u * (unsigned)n;
    }
    free(words);

    /* the GPU levels' analyses and translations (no device: nothing runs):
     * a verdict, or a refusal with its reason, whatever the code */
    if (lane_analyse(&c, &k, NULL) != KILN_OK && !err_last()[0])
        abort();
    err_clear();
    if (lane_check(&c, &k, NULL) != KILN_OK && !err_last()[0])
        abort();
    err_clear();
    if (wf_check(&c, &k, NULL) != KILN_OK && !err_last()[0])
        abort();
    err_clear();

    uint8_t buf[512] = {0};
    struct wave_value v = {.kind = WAVE_VALUE_BUFFER, .data = buf, .size = sizeof buf};
    struct wave_run_desc d = {.code = &c, .kernel = &k, .groups = {1 + data[7] % 2u, 1, 1},
                              .block = {block[0], block[1], block[2]}, .args = &v, .arg_count = 1,
                              .max_instructions = 400, .observe = data[7] & 0x80};
    struct wave_result res;
    if (wave_run(&d, &res) != KILN_OK && !err_last()[0])
        abort();
    wave_result_finish(&res);
    free(c.image);
    return 0;
}
