/* SPDX-License-Identifier: MIT */
/*
 * format.h: kiln's texel formats (kiln_format, kiln.h): their names as
 * GLSL's format qualifiers spell them and their sizes. The table is in
 * format.c; a backend maps each to its own format (vk_pipeline.c: VkFormat), the
 * program module maps SPIR-V's ImageFormat to it (reflect.c).
 */
#ifndef KILN_BASE_FORMAT_H
#define KILN_BASE_FORMAT_H

#include <stdbool.h>

#include "kiln.h"

/* Whether f is a format (KILN_FORMAT_UNDEFINED is not). */
static inline bool format_valid(kiln_format f) { return f > KILN_FORMAT_UNDEFINED && f < KILN_FORMAT_COUNT; }

#endif
