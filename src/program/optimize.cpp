/* SPDX-License-Identifier: MIT */
// optimize.cpp: SPIR-V optimization that keeps every declared binding, and
// SPIRV-Tools' validator for the modules hosts give.
//
// shaderc's own optimizer run removes descriptor bindings a build does not
// read, so a program baked with some words would bind differently from its
// universal build. kiln therefore compiles with shaderc unoptimized and runs
// SPIRV-Tools' performance passes itself with preserve-bindings on. This is
// the one C++ file in kiln: SPIRV-Tools exposes its optimizer only through
// C++ in Debian 12's version (its C API has the options, not the run).
// The validator's calls are C, but libspirv.h defines a const at file
// scope, which in C is an external definition the shipped library would
// export: here, in C++, it is internal.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <spirv-tools/libspirv.h>
#include <spirv-tools/optimizer.hpp>

#include "base/base.h"   // mem_alloc

extern "C" int prog_spirv_optimize(const uint32_t *in, size_t words, int env, uint32_t **out, size_t *out_words,
                                   char *err, size_t err_cap);
extern "C" int prog_spirv_env(uint32_t version_word);
extern "C" int prog_spirv_validate(const uint32_t *w, size_t words, int env, char *err, size_t err_cap);

extern "C" int prog_spirv_env(uint32_t version_word)
{
    uint32_t major = (version_word >> 16) & 0xff, minor = (version_word >> 8) & 0xff;
    if (major != 1 || minor > 6)
        return -1;
    return minor <= 3   ? SPV_ENV_VULKAN_1_1
           : minor == 4 ? SPV_ENV_VULKAN_1_1_SPIRV_1_4
           : minor == 5 ? SPV_ENV_VULKAN_1_2
                        : SPV_ENV_VULKAN_1_3;
}

// Validates w for env (a spv_target_env from prog_spirv_env) with the block
// layouts Vulkan 1.2's features allow (relaxed, std430 uniforms, scalar)
// and LocalSizeId. 0: valid; 1: invalid, err saying why on one line and at
// which word; -1: out of host memory.
extern "C" int prog_spirv_validate(const uint32_t *w, size_t words, int env, char *err, size_t err_cap)
{
    spv_context ctx = spvContextCreate(static_cast<spv_target_env>(env));
    spv_validator_options opts = spvValidatorOptionsCreate();
    if (!ctx || !opts) {
        spvContextDestroy(ctx);
        spvValidatorOptionsDestroy(opts);
        return -1;
    }
    spvValidatorOptionsSetRelaxBlockLayout(opts, true);
    spvValidatorOptionsSetUniformBufferStandardLayout(opts, true);
    spvValidatorOptionsSetScalarBlockLayout(opts, true);
    spvValidatorOptionsSetWorkgroupScalarBlockLayout(opts, true);
    spvValidatorOptionsSetAllowLocalSizeId(opts, true);
    spv_const_binary_t bin = {w, words};
    spv_diagnostic diag = nullptr;
    spv_result_t r = spvValidateWithOptions(ctx, opts, &bin, &diag);
    if (r != SPV_SUCCESS) {
        std::snprintf(err, err_cap, "%s", diag && diag->error ? diag->error : "SPIRV-Tools gave no reason");
        // SPIRV-Tools ends its text with the instruction, on lines of its own.
        for (char *c = err; *c; c++)
            if (*c == '\n')
                *c = ' ';
        size_t n = std::strlen(err);
        while (n && err[n - 1] == ' ')
            err[--n] = 0;
        if (diag && diag->position.index)
            std::snprintf(err + n, err_cap - n, " (at word %zu)", diag->position.index);
    }
    spvDiagnosticDestroy(diag);
    spvValidatorOptionsDestroy(opts);
    spvContextDestroy(ctx);
    return r == SPV_SUCCESS ? 0 : r == SPV_ERROR_OUT_OF_MEMORY ? -1 : 1;
}

// Optimizes for speed for the target environment env (a spv_target_env); *out comes from mem_alloc (free()
// releases it). Returns 0, or -1 with err filled.
extern "C" int prog_spirv_optimize(const uint32_t *in, size_t words, int env, uint32_t **out, size_t *out_words,
                                   char *err, size_t err_cap)
{
    // A fixed buffer, not a std::string: a standard template instantiated
    // here would be a weak global of the shipped library (see the exports
    // test).
    char first_error[512] = "";
    try {
        spvtools::Optimizer opt(static_cast<spv_target_env>(env));
        opt.SetMessageConsumer([&](spv_message_level_t level, const char *, const spv_position_t &pos,
                                   const char *msg) {
            if (level <= SPV_MSG_ERROR && !first_error[0])
                std::snprintf(first_error, sizeof first_error, "%zu: %s", pos.index, msg);
        });
        opt.RegisterPerformancePasses();
        spv_optimizer_options options = spvOptimizerOptionsCreate();
        spvOptimizerOptionsSetPreserveBindings(options, true);
        spvOptimizerOptionsSetRunValidator(options, false);
        std::vector<uint32_t> result;
        bool ok = opt.Run(in, words, &result, options);
        spvOptimizerOptionsDestroy(options);
        if (!ok) {
            std::snprintf(err, err_cap, "SPIR-V optimizer failed: %s",
                          first_error[0] ? first_error : "no reason given");
            return -1;
        }
        *out = static_cast<uint32_t *>(mem_alloc(result.size() * 4 + 4));
        if (!*out) {
            std::snprintf(err, err_cap, "out of host memory for the optimized SPIR-V (%zu words)", result.size());
            return -1;
        }
        std::memcpy(*out, result.data(), result.size() * 4);
        *out_words = result.size();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(err, err_cap, "SPIR-V optimizer failed: %s", e.what());
        return -1;
    }
}
