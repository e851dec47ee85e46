/* SPDX-License-Identifier: MIT */
/*
 * describe.c: a kernel for people (kiln_wave_kernel_describe): its initial
 * register setup, its instruction counts per encoding family and, asked,
 * its disassembly.
 */
#include "wave/describe.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/base.h"
#include "kiln_wave.h"
#include "wave/decode.h"


static void setup_text(struct bytes *b, const struct wave_kernel *k)
{
    const struct wave_setup *s = &k->setup;
    unsigned r = 0;
    bytes_putf(b, "  initial SGPRs:");
#define USER(flag, n, what)                                                                        \
    if (s->flag) {                                                                                 \
        if ((n) == 1)                                                                              \
            bytes_putf(b, " s%u %s;", r, what);                                                            \
        else                                                                                       \
            bytes_putf(b, " s[%u:%u] %s;", r, r + (n) - 1, what);                                          \
        r += (n);                                                                                  \
    }
    USER(private_segment_buffer, 4, "private segment buffer")
    USER(dispatch_ptr, 2, "dispatch packet")
    USER(queue_ptr, 2, "queue")
    USER(kernarg_segment_ptr, 2, "kernarg segment")
    USER(dispatch_id, 2, "dispatch id")
    USER(flat_scratch_init, 2, "flat scratch init")
    USER(private_segment_size, 1, "private segment size")
#undef USER
    r = s->user_sgpr_count;
    static const char axes[] = "xyz";
    for (int a = 0; a < 3; a++)
        if (s->workgroup_id[a])
            bytes_putf(b, " s%u workgroup id %c;", r++, axes[a]);
    if (s->workgroup_info)
        bytes_putf(b, " s%u workgroup info;", r++);
    if (s->private_segment_wave_offset)
        bytes_putf(b, " s%u scratch wave offset;", r++);
    bytes_putf(b, " (%u user SGPRs)\n", s->user_sgpr_count);
    bytes_putf(b, "  initial VGPRs: work-item id x in v0%s%s\n", s->workitem_id_dims >= 2 ? ", y in v1" : "",
       s->workitem_id_dims >= 3 ? ", z in v2" : "");
}

kiln_result wave_describe(const struct wave_code *code, const struct wave_kernel *k, uint32_t sections,
                          struct bytes *out)
{
    if (sections & KILN_WAVE_DESCRIBE_SETUP)
        setup_text(out, k);
    bool disasm = sections & KILN_WAVE_DESCRIBE_DISASM;
    if (!(sections & (KILN_WAVE_DESCRIBE_DISASM | KILN_WAVE_DESCRIBE_COUNTS)))
        return KILN_OK;
    size_t nwords;
    uint32_t *words = wave_code_words(code, &nwords);
    if (!words)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of memory describing kernel '%s'", k->name);
    /* families, then SDWA and DPP (encodings of VOP1/VOP2/VOPC ops) */
    uint32_t counts[WAVE_FAM_COUNT + 3] = {0};
    uint32_t total = 0;
    kiln_result r = KILN_OK;
    uint64_t end = k->code_addr + k->code_size;
    if (disasm)
        bytes_putf(out, "  code:\n");
    for (uint64_t pc = k->code_addr; pc < end;) {
        struct wave_instr in;
        int n = wave_decode(words, (size_t)(end / 4), (size_t)pc, &in);
        if (n <= 0) {
            r = KILN_RAISE(KILN_ERR_INVALID, "kernel '%s': %s", k->name, err_last());
            bytes_putf(out, "  cannot decode at 0x%" PRIx64 ": %s\n", pc, err_last());
            break;
        }
        const struct wave_op_info *info = wave_op_info(in.op);
        unsigned slot = info ? info->family : WAVE_FAM_COUNT;
        if (in.enc == WAVE_ENC_SDWA)
            slot = WAVE_FAM_COUNT + 1;
        else if (in.enc == WAVE_ENC_DPP)
            slot = WAVE_FAM_COUNT + 2;
        counts[slot]++;
        total++;
        if (disasm) {
            char text[200];
            wave_print(&in, text, sizeof text);
            bytes_putf(out, "    %06" PRIx64 ":", pc);
            for (int d = 0; d < 3; d++)
                bytes_putf(out, d < n ? " %08x" : "         ", d < n ? in.raw[d] : 0);
            bytes_putf(out, "  %s\n", text);
        }
        pc += 4ull * (unsigned)n;
    }
    free(words);
    if (!(sections & KILN_WAVE_DESCRIBE_COUNTS))
        return r;
    bytes_putf(out, "  instructions: %u (", total);
    bool first = true;
    for (unsigned f = 0; f < WAVE_FAM_COUNT + 3; f++)
        if (counts[f]) {
            bytes_putf(out, "%s%s %u", first ? "" : ", ",
               f < WAVE_FAM_COUNT ? wave_family_name(f) : f == WAVE_FAM_COUNT + 1 ? "SDWA" : "DPP", counts[f]);
            first = false;
        }
    bytes_putf(out, ")\n");
    return r;
}
