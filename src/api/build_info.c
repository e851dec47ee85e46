/* SPDX-License-Identifier: MIT */
/*
 * build_info.c: kiln_build_info_get. The versions of the libraries kiln is
 * built with come from their pkg-config modules at configure time
 * (CMakeLists.txt defines KILN_BUILT_WITH_*); the Vulkan loader's is asked
 * at the call, since the loader found at run time may be another; the
 * SPIR-V version from shaderc itself.
 */
#include <stdio.h>
#include <string.h>

#include <shaderc/shaderc.h>
#include <vulkan/vulkan.h>

#include "base/base.h"

#ifndef KILN_BUILT_WITH_SHADERC
#define KILN_BUILT_WITH_SHADERC ""
#endif
#ifndef KILN_BUILT_WITH_SPIRV_TOOLS
#define KILN_BUILT_WITH_SPIRV_TOOLS ""
#endif
#ifndef KILN_BUILT_WITH_SPIRV_CROSS
#define KILN_BUILT_WITH_SPIRV_CROSS ""
#endif

static void version_text(char *buf, size_t cap, uint32_t v)
{
    snprintf(buf, cap, "%u.%u.%u", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

kiln_result kiln_build_info_get(kiln_build_info *out)
{
    err_clear();
    if (!out)
        return KILN_RAISE(KILN_ERR_INVALID, "out is NULL");
    *out = (kiln_build_info){0};
    snprintf(out->kiln, sizeof out->kiln, "%s", kiln_version());
    version_text(out->vulkan_headers, sizeof out->vulkan_headers, VK_HEADER_VERSION_COMPLETE);
    uint32_t loader = 0;
    if (vkEnumerateInstanceVersion(&loader) == VK_SUCCESS)
        version_text(out->vulkan_loader, sizeof out->vulkan_loader, loader);
    snprintf(out->shaderc, sizeof out->shaderc, "%s", KILN_BUILT_WITH_SHADERC);
    snprintf(out->spirv_tools, sizeof out->spirv_tools, "%s", KILN_BUILT_WITH_SPIRV_TOOLS);
    snprintf(out->spirv_cross, sizeof out->spirv_cross, "%s", KILN_BUILT_WITH_SPIRV_CROSS);
    unsigned spv = 0, rev = 0;
    shaderc_get_spv_version(&spv, &rev);
    snprintf(out->spirv, sizeof out->spirv, "%u.%u", (spv >> 16) & 0xff, (spv >> 8) & 0xff);
    return KILN_OK;
}
