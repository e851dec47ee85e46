/* SPDX-License-Identifier: MIT */
/*
 * fuzz_spirv_in.c: fuzz target for what kiln reads of a host's SPIR-V
 * module and HLSL text: the module taken as a program (spirv_in.c: the
 * validator, the entry point kept and renamed), whether a device can run
 * it (its capabilities and extensions against caps), a workgroup size the
 * host sets (local_size.c), and HLSL registers read from preprocessed text
 * (hlsl_in.c).
 *
 * Input: one byte of choices (bit 0: the entry "main" or "other"; bits
 * 1-3: the workgroup size set, 0 for none; bit 4: a device lacking every
 * feature), then the module's words, little-endian; the same bytes are
 * also read as HLSL text.
 *
 * A crash, a sanitizer report, a read past the module or a hang is a bug,
 * and so is: a result other than KILN_OK, KILN_ERR_COMPILE, KILN_ERR_LIMIT,
 * KILN_ERR_INVALID or KILN_ERR_NO_MEMORY; a refusal without its reason in
 * the log; a module taken (validated) whose workgroup size, once set, no
 * longer validates.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shaderc/shaderc.h>

#include "program/program_private.h"

static bool result_known(kiln_result r)
{
    return r == KILN_OK || r == KILN_ERR_COMPILE || r == KILN_ERR_LIMIT || r == KILN_ERR_INVALID ||
           r == KILN_ERR_NO_MEMORY;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t pick = data[0];
    size_t bytes = (size - 1) & ~(size_t)3;
    char *module = malloc(bytes + 1);   /* exactly the module (and a NUL): ASan sees overreads */
    if (!module)
        return 0;
    memcpy(module, data + 1, bytes);
    module[bytes] = 0;
    struct prog_source src = {.lang = KILN_LANGUAGE_SPIRV, .source = module, .source_len = bytes,
                              .name = "fuzz.spv", .entry = (pick & 1) ? "other" : "main"};

    kiln_caps caps = {.api_version = (1u << 22) | (3u << 12), .subgroup_ops = (pick & 16) ? 0 : ~0u,
                      .shader_features = (pick & 16) ? 0 : ~0u};
    snprintf(caps.device_name, sizeof caps.device_name, "fuzz device");
    uint32_t *words = malloc(bytes ? bytes : 4);
    if (words) {
        memcpy(words, module, bytes);
        if (!result_known(prog_check_device("fuzz.spv", words, bytes / 4, &caps)))
            abort();
        /* The loop budget's analysis reads the same bytes (loops.c). */
        struct prog_loop loops[4];
        uint32_t all = 0, n = prog_loops_unbounded(words, bytes / 4, 65535, loops, 4, &all);
        if (n > 4 || n > all)
            abort();
        free(words);
    }
    err_clear();

    uint32_t *out = NULL;
    size_t out_words = 0;
    char *log = NULL;
    kiln_result r = prog_spirv_take(&src, &out, &out_words, &log);
    if (!result_known(r) || (r == KILN_ERR_COMPILE && (!log || !strstr(log, "fuzz.spv: error: "))))
        abort();
    if (r == KILN_OK) {
        static const uint32_t sizes[8][3] = {{0, 0, 0}, {1, 0, 0}, {7, 3, 0}, {64, 1, 1},
                                             {0, 2, 0}, {0, 0, 9}, {1024, 1, 1}, {3, 5, 7}};
        const uint32_t *size3 = sizes[(pick >> 1) & 7];
        char *why = NULL;
        kiln_result s = prog_set_local_size("fuzz.spv", size3, &out, &out_words, &why);
        if (!result_known(s) || (s == KILN_ERR_COMPILE && (!why || !strstr(why, "cannot be set"))))
            abort();
        if (s == KILN_OK && (size3[0] || size3[1] || size3[2])) {
            char err[512];
            int env = prog_spirv_env(out[1]);
            if (env >= 0 && prog_spirv_validate(out, out_words, env, err, sizeof err) == 1) {
                fprintf(stderr, "a workgroup size made a valid module invalid: %s\n", err);
                abort();
            }
        }
        free(why);
    }
    free(out);
    free(log);
    err_clear();

    /* The same bytes as preprocessed HLSL. */
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    if (opts) {
        char *why = NULL;
        kiln_result h = prog_hlsl_map_registers(opts, "fuzz.hlsl", module, bytes, &why);
        if (!result_known(h) || (h == KILN_ERR_COMPILE && (!why || !strstr(why, "fuzz.hlsl: error: "))))
            abort();
        free(why);
        shaderc_compile_options_release(opts);
    }
    err_clear();
    free(module);
    return 0;
}

/* Seeds: modules compiled from shaders whose workgroup size is literal,
 * set by specialization ids, or read through gl_WorkGroupSize, with one
 * entry and with capabilities a device may lack; and HLSL register text. */
static const char *const k_seed_glsl[] = {
    "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, binding = 0) buffer O { uint o[]; };\n"
    "void main() { o[gl_GlobalInvocationID.x] = gl_WorkGroupSize.x + 64u; }\n",
    "#version 450\nlayout(local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;\n"
    "layout(constant_id = 0) const uint K = 3;\nlayout(std430, binding = 0) buffer O { uint o[]; };\n"
    "void main() { o[gl_GlobalInvocationID.x] = gl_WorkGroupSize.x * K + gl_WorkGroupSize.y; }\n",
    "#version 450\n#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
    "layout(local_size_x = 8, local_size_y = 8) in;\nlayout(std430, binding = 0) buffer O { uint64_t o[]; };\n"
    "layout(push_constant) uniform P { uint64_t add; } pc;\n"
    "void main() { o[gl_LocalInvocationIndex] = pc.add + uint64_t(gl_WorkGroupSize.x); }\n",
};

static const char k_seed_hlsl[] = "cbuffer C : register(b0) { uint n; };\nStructuredBuffer<uint> a : register(t0);\n"
                                  "RWStructuredBuffer<uint> b : register(u0, space1);\n"
                                  "[[vk::binding(3, 0)]] RWStructuredBuffer<uint> c;\n"
                                  "Texture2D<float4> t : register( T2 , space0 ) ;\nSamplerState s : register(s1);\n";

static int write_seed(const char *dir, const char *name, uint8_t pick, const void *p, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int fail = !f || fwrite(&pick, 1, 1, f) != 1 || fwrite(p, 1, n, f) != n;
    if (f && fclose(f))
        fail = 1;
    return fail;
}

int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    shaderc_compiler_t sc = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    int fail = 0;
    for (size_t s = 0; s < sizeof k_seed_glsl / sizeof k_seed_glsl[0] && !fail; s++) {
        shaderc_compilation_result_t r = shaderc_compile_into_spv(sc, k_seed_glsl[s], strlen(k_seed_glsl[s]),
                                                                  shaderc_compute_shader, "seed.comp", "main", opts);
        if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
            fprintf(stderr, "seed %zu: %s\n", s, shaderc_result_get_error_message(r));
            fail = 1;
        }
        for (uint8_t pick = 0; pick < 32 && !fail; pick += 6) {
            char name[64];
            snprintf(name, sizeof name, "seed-%02zu-%02u", s, pick);
            fail = write_seed(dir, name, pick, shaderc_result_get_bytes(r), shaderc_result_get_length(r));
        }
        shaderc_result_release(r);
    }
    if (!fail)
        fail = write_seed(dir, "seed-hlsl", 0, k_seed_hlsl, sizeof k_seed_hlsl - 1);
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(sc);
    return fail;
}
