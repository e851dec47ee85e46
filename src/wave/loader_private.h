/* SPDX-License-Identifier: MIT */
/*
 * loader_private.h: what the loader's files share (loader.c: ELF, layout,
 * relocations, descriptors; loader_meta.c: the metadata note).
 */
#ifndef KILN_WAVE_LOADER_PRIVATE_H
#define KILN_WAVE_LOADER_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "wave/loader.h"

/* KILN_ERR_INVALID with "code object: " and the message. */
kiln_result ld_bad(const char *fmt, ...) KILN_PRINTF(1, 2);

/* The metadata's spelling of each enum wave_arg_kind. */
extern const char *const wave_arg_kind_names[WAVE_ARG_KIND_COUNT];

/* A kernel as the metadata lists it, before its descriptor joins it. */
struct md_kernel {
    struct wave_kernel k;
    char symbol[WAVE_NAME_LEN];
    bool has_kernarg_size;
};

/* Reads the metadata note's MessagePack (p[0..len)) into the kernels it
 * lists: *out (malloc'd) holds *count of them. */
kiln_result ld_parse_metadata(const uint8_t *p, size_t len, struct wave_code *code, struct md_kernel **out,
                                  uint32_t *count);

#endif
