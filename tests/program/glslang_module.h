/* SPDX-License-Identifier: MIT */
/*
 * glslang_module.h: a GLSL compute shader compiled by glslang (through
 * shaderc) outside kiln, for the Vulkan version asked: the module a host
 * brings from its own build. NULL (the compiler's message on stderr) when
 * it does not compile; malloc'd words otherwise.
 */
#ifndef KILN_TEST_GLSLANG_MODULE_H
#define KILN_TEST_GLSLANG_MODULE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shaderc/shaderc.h>

static inline uint32_t *glslang_module(const char *glsl, shaderc_env_version vulkan, size_t *words)
{
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, vulkan);
    shaderc_compilation_result_t r =
        shaderc_compile_into_spv(c, glsl, strlen(glsl), shaderc_compute_shader, "host.comp", "main", o);
    uint32_t *w = NULL;
    if (shaderc_result_get_compilation_status(r) == shaderc_compilation_status_success) {
        size_t bytes = shaderc_result_get_length(r);
        w = malloc(bytes);
        if (w)
            memcpy(w, shaderc_result_get_bytes(r), bytes);
        *words = bytes / 4;
    } else {
        fprintf(stderr, "glslang: %s\n", shaderc_result_get_error_message(r));
    }
    shaderc_result_release(r);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    return w;
}

#endif
