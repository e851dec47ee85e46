/* SPDX-License-Identifier: MIT */
// optimize.cpp: SPIR-V optimization that keeps every declared binding.
//
// shaderc's own optimizer run removes descriptor bindings a build does not
// read, so a program baked with some words would bind differently from its
// universal build. kiln therefore compiles with shaderc unoptimized and runs
// SPIRV-Tools' performance passes itself with preserve-bindings on. This is
// the one C++ file in kiln: SPIRV-Tools exposes its optimizer only through
// C++ in Debian 12's version (its C API has the options, not the run).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <spirv-tools/libspirv.h>
#include <spirv-tools/optimizer.hpp>

#include "base/base.h"   // mem_alloc

extern "C" int prog_spirv_optimize(const uint32_t *in, size_t words, uint32_t **out, size_t *out_words,
                                   char *err, size_t err_cap);

// Optimizes for speed; *out comes from mem_alloc (free() releases it). Returns 0, or -1 with err filled.
extern "C" int prog_spirv_optimize(const uint32_t *in, size_t words, uint32_t **out, size_t *out_words,
                                   char *err, size_t err_cap)
{
    // A fixed buffer, not a std::string: a standard template instantiated
    // here would be a weak global of the shipped library (see the exports
    // test).
    char first_error[512] = "";
    try {
        spvtools::Optimizer opt(SPV_ENV_VULKAN_1_2);
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
