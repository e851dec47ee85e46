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

/* spirv_in.c: *log = "name: error: text\n" (malloc'd), and
 * KILN_ERR_COMPILE raised saying the same; KILN_ERR_NO_MEMORY when the log
 * cannot be made. */
kiln_result prog_refuse(char **log, const char *name, const char *text);

/* spirv_in.c: a SPIR-V program's module (src->lang KILN_LANGUAGE_SPIRV) as
 * kiln runs it: validated with SPIRV-Tools for the Vulkan version its
 * SPIR-V version needs, its GLCompute entry point named src->entry kept
 * and named "main", every other entry point and its execution modes
 * dropped. KILN_OK with *out (mem_alloc'd; the caller frees it) and
 * *out_words, and *log NULL or a note (malloc'd) of what kiln changed (a
 * module the validator rejected only in its debug information runs
 * without it); KILN_ERR_COMPILE with *log (malloc'd) saying why;
 * KILN_ERR_NO_MEMORY. */
kiln_result prog_spirv_take(const struct prog_source *src, uint32_t **out, size_t *out_words, char **log);
/* The module w (words of it, valid) with its GLCompute entry point named
 * entry kept and named "main", every other entry point and its execution
 * modes dropped (an HLSL compile's entry keeps its source name). Results
 * as prog_spirv_take's; name labels messages. */
kiln_result prog_spirv_entry(const char *name, const char *entry, const uint32_t *w, size_t words, uint32_t **out,
                             size_t *out_words, char **log);
/* The largest id bound a module may have (SPIR-V's universal limit). */
#define PROG_MAX_ID_BOUND 4194303u

/* local_size.c: the module *spirv (*words) with its workgroup size set
 * to size, axis by axis (0: kept): LocalSize's literals, LocalSizeId's and
 * gl_WorkGroupSize's constants (a specialization constant among them
 * becomes a plain one). The module is replaced (mem_alloc'd). KILN_OK
 * (also when size is all 0); KILN_ERR_COMPILE with *log (malloc'd) when
 * the module's size cannot be set; KILN_ERR_NO_MEMORY. */
kiln_result prog_set_local_size(const char *name, const uint32_t size[3], uint32_t **spirv, size_t *words,
                                char **log);
/* hlsl_in.c: gives opts the set and binding of every register(xN,
 * spaceS) the preprocessed HLSL text names (binding N + PROG_HLSL_SHIFT_X
 * in set S), so that [[vk::binding]] resources keep theirs. KILN_ERR_COMPILE
 * with *log (malloc'd) when one register name is used in two spaces or two
 * registers land on one binding; KILN_ERR_NO_MEMORY. */
kiln_result prog_hlsl_map_registers(shaderc_compile_options_t opts, const char *name, const char *text, size_t len,
                                    char **log);
/* optimize.cpp: speed passes with every declared binding kept, for the
 * target environment env (a spv_target_env): 0 with *out (malloc'd) and
 * *out_words; otherwise err says why. */
int prog_spirv_optimize(const uint32_t *in, size_t words, int env, uint32_t **out, size_t *out_words, char *err,
                        size_t err_cap);
/* optimize.cpp: the SPIRV-Tools target environment (a spv_target_env) for
 * a module whose header's version word is version_word (SPIR-V 1.0-1.3:
 * Vulkan 1.1, 1.4: Vulkan 1.1 with SPIR-V 1.4, 1.5: Vulkan 1.2, 1.6:
 * Vulkan 1.3); -1 past SPIR-V 1.6. */
int prog_spirv_env(uint32_t version_word);
/* Validates a module for env with the block layouts Vulkan 1.2's features
 * allow: 0 valid; 1 invalid, err saying why (one line, at which word); -1
 * out of host memory. */
int prog_spirv_validate(const uint32_t *w, size_t words, int env, char *err, size_t err_cap);

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
