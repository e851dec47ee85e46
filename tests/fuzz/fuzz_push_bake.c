/* SPDX-License-Identifier: MIT */
/*
 * fuzz_push_bake.c: fuzz target for the push-constant bake
 * (src/program/push_bake.c), which reads SPIR-V kiln did not write.
 *
 * Input: one byte k (k % 33 baked words), k entries of five bytes (a word
 * index, the byte offset being 4 times it, and the value, little-endian),
 * then the module's words, little-endian.
 *
 * A crash, a sanitizer report or a read past the module is a bug, and so
 * is any of: an answer outside 0, 1, -1, -2; a refusal with no reason; a
 * result whose header differs from the input's or whose bound shrank; a
 * module that validates (for its SPIR-V version's Vulkan) baked into one
 * that does not; a result that still has something to bake with the same
 * words, or keeps a different number of loads.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>

#include "program/program.h"

static bool validates(const uint32_t *w, size_t n)
{
    uint32_t minor = (w[1] >> 8) & 0xff;
    spv_context c = spvContextCreate(minor <= 3 ? SPV_ENV_VULKAN_1_1 : minor <= 5 ? SPV_ENV_VULKAN_1_2
                                                                                  : SPV_ENV_VULKAN_1_3);
    spv_const_binary_t bin = {w, n};
    bool ok = spvValidate(c, &bin, NULL) == SPV_SUCCESS;
    spvContextDestroy(c);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t k = data[0] % 33;
    if (size < 1 + 5 * (size_t)k)
        return 0;
    struct prog_push_word baked[32];
    for (uint32_t i = 0; i < k; i++) {
        const uint8_t *e = data + 1 + 5 * i;
        baked[i].offset = 4u * e[0];
        baked[i].value = e[1] | (uint32_t)e[2] << 8 | (uint32_t)e[3] << 16 | (uint32_t)e[4] << 24;
    }
    size_t at = 1 + 5 * (size_t)k, words = (size - at) / 4;
    uint32_t *in = malloc(words ? words * 4 : 1);   /* exactly the module: ASan sees overreads */
    if (!in)
        return 0;
    memcpy(in, data + at, words * 4);

    uint32_t *out = (uint32_t *)1;
    size_t out_words = 7;
    struct prog_push_bake_counts c = {99, 99};
    char why[256];
    memset(why, 'x', sizeof why);
    int rc = prog_push_bake(in, words, baked, k, &out, &out_words, &c, why, sizeof why);
    if (rc < -2 || rc > 1)
        abort();
    if (rc < 0) {
        size_t len = strnlen(why, sizeof why);
        if (len == 0 || len == sizeof why || out || out_words)
            abort();
    } else if (rc == 1) {
        if (out || c.baked)
            abort();
    } else {
        if (!out || out_words < 5 || !c.baked || out[3] < in[3] || memcmp(out, in, 12) || out[4] != in[4])
            abort();
        if (validates(in, words) && !validates(out, out_words))
            abort();
        /* Baked again with the same words: nothing left to bake. */
        uint32_t *again = NULL;
        size_t again_words = 0;
        struct prog_push_bake_counts c2;
        int rc2 = prog_push_bake(out, out_words, baked, k, &again, &again_words, &c2, why, sizeof why);
        if (rc2 == 0 || rc2 == -1 || (rc2 == 1 && c2.kept != c.kept))
            abort();
        free(again);
        free(out);
    }
    free(in);
    return 0;
}

/* Seeds: modules compiled from shaders with their own push blocks (the
 * test's kinds: scalars, vectors, a struct, arrays with constant and
 * dynamic indices, 64-, 16- and 8-bit members with and without their
 * arithmetic capabilities, matrices of both orders), each with words that
 * bake some of it. */
static const char *const k_seed_src[] = {
    "#version 450\nlayout(local_size_x = 1) in;\nstruct In { uint a; float b; };\n"
    "layout(push_constant) uniform Push { uint u; int i; float f; uvec4 v4; vec2 v2; In s; uint arr[4]; uint dyn; } pc;\n"
    "layout(std430, binding = 0) buffer B { uint x[]; };\n"
    "void main() { x[0] = pc.u; x[1] = uint(pc.i); x[2] = floatBitsToUint(pc.f); x[3] = pc.v4.y; uvec4 w = pc.v4;\n"
    "  x[4] = w.z; x[5] = floatBitsToUint(pc.v2.y); vec2 t = pc.v2; x[6] = floatBitsToUint(t.x); x[7] = pc.s.a;\n"
    "  In whole = pc.s; x[9] = whole.a; x[10] = pc.arr[2]; x[11] = pc.arr[pc.dyn]; }\n",
    "#version 450\n#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
    "layout(local_size_x = 1) in;\n"
    "layout(push_constant) uniform Push { uint a; uint64_t big; int64_t neg; double d; u64vec2 v; } pc;\n"
    "layout(std430, binding = 0) buffer B { uint64_t x[]; };\n"
    "void main() { x[0] = pc.big; x[1] = uint64_t(pc.neg); x[2] = uint64_t(pc.d); x[3] = pc.v.y; x[4] = pc.a; }\n",
    "#version 450\n#extension GL_EXT_shader_16bit_storage : require\n#extension GL_EXT_shader_8bit_storage : require\n"
    "layout(local_size_x = 1) in;\n"
    "layout(push_constant) uniform Push { uint16_t h; int16_t sh; int8_t c; uint8_t uc; float16_t hf; f16vec2 hv; } pc;\n"
    "layout(std430, binding = 0) buffer B { uint x[]; };\n"
    "void main() { x[0] = uint(pc.h); x[1] = uint(int(pc.sh)); x[2] = uint(int(pc.c)); x[3] = uint(pc.uc);\n"
    "  x[4] = floatBitsToUint(float(pc.hf)); vec2 v = vec2(pc.hv); x[5] = floatBitsToUint(v.y); }\n",
    "#version 450\n#extension GL_EXT_shader_16bit_storage : require\n#extension GL_EXT_shader_8bit_storage : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types : require\nlayout(local_size_x = 1) in;\n"
    "layout(push_constant) uniform Push { uint16_t h; int16_t sh; int8_t c; uint8_t uc; float16_t hf; f16vec2 hv; } pc;\n"
    "layout(std430, binding = 0) buffer B { uint x[]; };\n"
    "void main() { x[0] = uint(pc.h * uint16_t(3)); x[1] = uint(int(pc.sh * int16_t(2)));\n"
    "  x[2] = uint(int(pc.c * int8_t(2))); x[3] = uint(pc.uc + uint8_t(1));\n"
    "  x[4] = floatBitsToUint(float(pc.hf * float16_t(2.0))); x[5] = floatBitsToUint(float(pc.hv.y + pc.hv.x)); }\n",
    "#version 450\nlayout(local_size_x = 1) in;\n"
    "layout(push_constant) uniform Push { mat2 m; layout(row_major) mat2 rm; layout(row_major) mat2x3 r23; uint n; } pc;\n"
    "layout(std430, binding = 0) buffer B { float x[]; };\n"
    "void main() { x[0] = pc.m[1][0]; x[1] = pc.rm[1][0]; mat2 a = pc.m; mat2 b = pc.rm; x[2] = a[0][1] + b[0][1];\n"
    "  mat2x3 c = pc.r23; x[3] = c[1][2]; x[4] = pc.r23[0].z;\n"
    "  for (uint i = 0u; i < pc.n; i++) x[5 + i] = float(i); }\n",
};

int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    shaderc_compiler_t sc = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(opts, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    int fail = 0;
    for (size_t s = 0; s < sizeof k_seed_src / sizeof k_seed_src[0] && !fail; s++) {
        shaderc_compilation_result_t r = shaderc_compile_into_spv(sc, k_seed_src[s], strlen(k_seed_src[s]),
                                                                  shaderc_compute_shader, "seed.comp", "main", opts);
        if (shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
            fprintf(stderr, "seed %zu: %s\n", s, shaderc_result_get_error_message(r));
            fail = 1;
        }
        /* Two seeds per module: the first 16 words baked, and every other word of the first 32. */
        for (int v = 0; v < 2 && !fail; v++) {
            char path[4096];
            snprintf(path, sizeof path, "%s/seed-%02zu-%d", dir, s, v);
            FILE *f = fopen(path, "wb");
            uint8_t head[1 + 5 * 16];
            head[0] = 16;
            for (uint32_t i = 0; i < 16; i++) {
                uint32_t value = 0x3f800000u + 0x10001u * i;
                head[1 + 5 * i] = (uint8_t)(v ? 2 * i : i);
                memcpy(head + 2 + 5 * i, &value, 4);   /* little-endian hosts only, as kiln */
            }
            if (!f || fwrite(head, 1, sizeof head, f) != sizeof head ||
                fwrite(shaderc_result_get_bytes(r), 1, shaderc_result_get_length(r), f) !=
                    shaderc_result_get_length(r))
                fail = 1;
            if (f && fclose(f))
                fail = 1;
        }
        shaderc_result_release(r);
    }
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(sc);
    return fail;
}
