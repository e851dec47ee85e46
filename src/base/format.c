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
    [KILN_FORMAT_R11F_G11F_B10F] = {"r11f_g11f_b10f", 4},
    [KILN_FORMAT_RGB10_A2] = {"rgb10_a2", 4},
    [KILN_FORMAT_RGBA16] = {"rgba16", 8},     [KILN_FORMAT_RG16] = {"rg16", 4},
    [KILN_FORMAT_RG8] = {"rg8", 2},           [KILN_FORMAT_R16] = {"r16", 2},
    [KILN_FORMAT_RGBA16_SNORM] = {"rgba16_snorm", 8},
    [KILN_FORMAT_RG16_SNORM] = {"rg16_snorm", 4},
    [KILN_FORMAT_RG8_SNORM] = {"rg8_snorm", 2},
    [KILN_FORMAT_R16_SNORM] = {"r16_snorm", 2},
    [KILN_FORMAT_R8_SNORM] = {"r8_snorm", 1},
    [KILN_FORMAT_RG16I] = {"rg16i", 4},       [KILN_FORMAT_RG8I] = {"rg8i", 2},
    [KILN_FORMAT_R16I] = {"r16i", 2},         [KILN_FORMAT_RGB10_A2UI] = {"rgb10_a2ui", 4},
    [KILN_FORMAT_RG16UI] = {"rg16ui", 4},     [KILN_FORMAT_RG8UI] = {"rg8ui", 2},
    [KILN_FORMAT_R16UI] = {"r16ui", 2},       [KILN_FORMAT_R64UI] = {"r64ui", 8},
    [KILN_FORMAT_R64I] = {"r64i", 8},
};

const char *kiln_format_name(kiln_format format)
{
    return format_valid(format) ? formats[format].name : NULL;
}

uint32_t kiln_format_size(kiln_format format)
{
    return format_valid(format) ? formats[format].bytes : 0;
}
