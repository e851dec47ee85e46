/* SPDX-License-Identifier: MIT */
/*
 * program_private.h: what the program module's files share and no other
 * module calls (program.h is the module's face).
 */
#ifndef KILN_PROGRAM_PRIVATE_H
#define KILN_PROGRAM_PRIVATE_H

#include <string.h>

#include <shaderc/shaderc.h>
#include <spirv_cross/spirv_cross_c.h>

#include "base/bytes.h"

#include "program.h"

/* spec_const.c: lists the specialization constants the module behind comp
 * declares into out->constants (sorted by id, then workgroup axis; each
 * used = 1, none set). KILN_ERR_COMPILE naming them when there are more
 * than KILN_MAX_SPEC_CONSTANTS, or a constant of a type kiln does not know.
 * Called by prog_reflect, on its compiler. */
kiln_result prog_reflect_constants(spvc_compiler comp, kiln_program_interface *out);

/* The constants of a module the optimizer has not seen (prog_compile's,
 * before it optimizes): listed as prog_reflect lists them. */
kiln_result prog_declared_constants(const uint32_t *spirv, size_t words, kiln_program_interface *out);

/* Gives iface (reflected from the optimized module) the list `declared`
 * holds (from the module before the optimizer), each entry the optimizer
 * dropped marked used = 0: a program may set a constant its source
 * declares whether or not the code uses it. */
void prog_spec_merge_declared(kiln_program_interface *iface, const kiln_program_interface *declared);

/* Whether a module declares any specialization constant (a scan of its
 * opcodes, without parsing it). */
bool prog_has_spec_constants(const uint32_t *spirv, size_t words);

/* Appends n bytes of text to b, a NUL kept after them outside its length
 * (program.c, program_include.c). */
static inline void prog_text_put(struct bytes *b, const char *s, size_t n)
{
    uint8_t *at = bytes_put(b, NULL, n + 1);
    if (!at)
        return;
    memcpy(at, s, n);
    b->len--;   /* the NUL stays after the text, outside its length */
}

/* program_include.c: shaderc's include callbacks over prog_include_resolve
 * (user_data: a struct prog_includer). */

shaderc_include_result *prog_shaderc_include(void *ud, const char *req, int type, const char *from, size_t depth);
void prog_shaderc_release(void *ud, shaderc_include_result *r);

#endif
