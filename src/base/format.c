/* SPDX-License-Identifier: MIT */
/*
 * format.c: the table of kiln_format (see format.h): each format's GLSL
 * format-qualifier name and its texel size in bytes.
 */
#include "format.h"

#include <stddef.h>

static const struct {
    const char *name;
    uint32_t bytes;
} formats[KILN_FORMAT_COUNT] = {
    [KILN_FORMAT_R32F] = {"r32f", 4},         [KILN_FORMAT_R32UI] = {"r32ui", 4},
    [KILN_FORMAT_R32I] = {"r32i", 4},         [KILN_FORMAT_RG32F] = {"rg32f", 8},
    [KILN_FORMAT_RG32UI] = {"rg32ui", 8},     [KILN_FORMAT_RG32I] = {"rg32i", 8},
    [KILN_FORMAT_RGBA32F] = {"rgba32f", 16},  [KILN_FORMAT_RGBA32UI] = {"rgba32ui", 16},
    [KILN_FORMAT_RGBA32I] = {"rgba32i", 16},  [KILN_FORMAT_R16F] = {"r16f", 2},
    [KILN_FORMAT_RG16F] = {"rg16f", 4},       [KILN_FORMAT_RGBA16F] = {"rgba16f", 8},
    [KILN_FORMAT_RGBA16UI] = {"rgba16ui", 8}, [KILN_FORMAT_RGBA16I] = {"rgba16i", 8},
    [KILN_FORMAT_RGBA8] = {"rgba8", 4},       [KILN_FORMAT_RGBA8_SNORM] = {"rgba8_snorm", 4},
    [KILN_FORMAT_RGBA8UI] = {"rgba8ui", 4},   [KILN_FORMAT_RGBA8I] = {"rgba8i", 4},
    [KILN_FORMAT_R8] = {"r8", 1},             [KILN_FORMAT_R8UI] = {"r8ui", 1},
    [KILN_FORMAT_R8I] = {"r8i", 1},
};

const char *kiln_format_name(kiln_format format)
{
    return format_valid(format) ? formats[format].name : NULL;
}

uint32_t kiln_format_size(kiln_format format)
{
    return format_valid(format) ? formats[format].bytes : 0;
}
