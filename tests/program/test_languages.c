/* SPDX-License-Identifier: MIT */
/*
 * test_languages.c: programs a host gives as SPIR-V or HLSL run on a real
 * device (lavapipe in CI, validation on) and give what the CPU computes:
 * a module assembled here with two entry points, its own push block and
 * a specialization constant; a module glslang made outside kiln; HLSL
 * with a cbuffer, a StructuredBuffer and a RWStructuredBuffer whose
 * registers t0 and u0 do not alias. Bad modules are refused naming what
 * was wrong; a module needing a feature a device lacks is refused naming
 * the capability and the feature, decided from the module and the caps
 * alone.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>

#include "program/program.h"
#include "glslang_module.h"
#include "test.h"

#define N 512u

/* Two GLCompute entry points over one storage buffer: scale_add writes
 * o[i] = i * MUL + pc.a + 1000 * pc.b (MUL: specialization constant 3,
 * default 1; pc: the module's own push block of two words); twice writes
 * o[i] = 2 * i. SPIR-V 1.3 (Vulkan 1.1). */
static const char k_asm[] =
    "OpCapability Shader\n"
    "OpMemoryModel Logical GLSL450\n"
    "OpEntryPoint GLCompute %scale_add \"scale_add\" %gid\n"
    "OpEntryPoint GLCompute %twice \"twice\" %gid\n"
    "OpExecutionMode %scale_add LocalSize 64 1 1\n"
    "OpExecutionMode %twice LocalSize 32 1 1\n"
    "OpDecorate %gid BuiltIn GlobalInvocationId\n"
    "OpDecorate %rta ArrayStride 4\n"
    "OpMemberDecorate %Out 0 Offset 0\n"
    "OpDecorate %Out Block\n"
    "OpDecorate %out DescriptorSet 0\n"
    "OpDecorate %out Binding 0\n"
    "OpMemberDecorate %Push 0 Offset 0\n"
    "OpMemberDecorate %Push 1 Offset 4\n"
    "OpDecorate %Push Block\n"
    "OpDecorate %mul SpecId 3\n"
    "%void = OpTypeVoid\n"
    "%fn = OpTypeFunction %void\n"
    "%uint = OpTypeInt 32 0\n"
    "%int = OpTypeInt 32 1\n"
    "%v3uint = OpTypeVector %uint 3\n"
    "%p_in = OpTypePointer Input %v3uint\n"
    "%gid = OpVariable %p_in Input\n"
    "%rta = OpTypeRuntimeArray %uint\n"
    "%Out = OpTypeStruct %rta\n"
    "%p_out = OpTypePointer StorageBuffer %Out\n"
    "%out = OpVariable %p_out StorageBuffer\n"
    "%Push = OpTypeStruct %uint %uint\n"
    "%p_push = OpTypePointer PushConstant %Push\n"
    "%pc = OpVariable %p_push PushConstant\n"
    "%p_pcu = OpTypePointer PushConstant %uint\n"
    "%p_sbu = OpTypePointer StorageBuffer %uint\n"
    "%c0 = OpConstant %int 0\n"
    "%c1 = OpConstant %int 1\n"
    "%u2 = OpConstant %uint 2\n"
    "%u1000 = OpConstant %uint 1000\n"
    "%mul = OpSpecConstant %uint 1\n"
    "%scale_add = OpFunction %void None %fn\n"
    "%l0 = OpLabel\n"
    "%g = OpLoad %v3uint %gid\n"
    "%x = OpCompositeExtract %uint %g 0\n"
    "%pa = OpAccessChain %p_pcu %pc %c0\n"
    "%a = OpLoad %uint %pa\n"
    "%pb = OpAccessChain %p_pcu %pc %c1\n"
    "%b = OpLoad %uint %pb\n"
    "%xm = OpIMul %uint %x %mul\n"
    "%xa = OpIAdd %uint %xm %a\n"
    "%bk = OpIMul %uint %b %u1000\n"
    "%r = OpIAdd %uint %xa %bk\n"
    "%po = OpAccessChain %p_sbu %out %c0 %x\n"
    "OpStore %po %r\n"
    "OpReturn\n"
    "OpFunctionEnd\n"
    "%twice = OpFunction %void None %fn\n"
    "%l1 = OpLabel\n"
    "%g1 = OpLoad %v3uint %gid\n"
    "%x1 = OpCompositeExtract %uint %g1 0\n"
    "%r1 = OpIMul %uint %x1 %u2\n"
    "%po1 = OpAccessChain %p_sbu %out %c0 %x1\n"
    "OpStore %po1 %r1\n"
    "OpReturn\n"
    "OpFunctionEnd\n";

/* k_asm assembled; the caller frees it with free(). */
static uint32_t *assemble(const char *text, size_t *words)
{
    spv_context c = spvContextCreate(SPV_ENV_VULKAN_1_1);
    spv_binary bin = NULL;
    spv_diagnostic diag = NULL;
    uint32_t *w = NULL;
    if (spvTextToBinary(c, text, strlen(text), &bin, &diag) == SPV_SUCCESS) {
        w = malloc(bin->wordCount * 4);
        memcpy(w, bin->code, bin->wordCount * 4);
        *words = bin->wordCount;
    } else {
        fprintf(stderr, "assembling: %s\n", diag && diag->error ? diag->error : "?");
    }
    spvBinaryDestroy(bin);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(c);
    return w;
}

/* Runs program p on out (binding 0, N uints) with params, groups of the
 * program's size; fills got. */
static kiln_result run_one(kiln_context ctx, kiln_program p, kiln_buffer out, const uint32_t *params,
                           uint32_t param_count, uint32_t groups, uint32_t *got)
{
    kiln_scheme s;
    kiln_node n;
    KILN_TRY(kiln_scheme_create(ctx, NULL, &s));
    kiln_result r = kiln_scheme_add_node(ctx, s,
                                         &(kiln_node_desc){.program = p,
                                                           .bindings = &(kiln_binding){.binding = 0, .buffer = out},
                                                           .binding_count = 1, .groups = {groups}, .params = params,
                                                           .param_count = param_count},
                                         &n);
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, s, NULL);
    if (r == KILN_OK)
        r = kiln_buffer_readback(ctx, out, 0, got, N * 4);
    kiln_result d = kiln_scheme_destroy(ctx, s);
    return r < 0 ? r : d;
}

/* The number of elements of got[0..N) that differ from want(i). */
#define COUNT_WRONG(got, expr)                                                                     \
    ({                                                                                             \
        uint32_t bad_ = 0;                                                                         \
        for (uint32_t i = 0; i < N; i++)                                                           \
            bad_ += (got)[i] != (uint32_t)(expr);                                                  \
        bad_;                                                                                      \
    })

TEST(an_assembled_module_with_two_entries_its_push_block_and_a_constant)
{
    size_t words = 0;
    uint32_t *m = assemble(k_asm, &words);
    REQUIRE(m);
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4, .label = "out"}, &out));
    static uint32_t got[N];

    /* The words in spirv, the language said by AUTO; constant 3 set to 7. */
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "scale_add",
                                                        .constants = &(kiln_spec_constant){.id = 3, .word = 7},
                                                        .constant_count = 1},
                                   &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.own_push_block, 1);
    CHECK_EQ(iface.param_words, 2);
    CHECK_EQ(iface.workgroup_size[0], 64);
    CHECK_OK(run_one(ctx, p, out, (const uint32_t[]){5, 3}, 2, N / 64, got));
    CHECK_EQ(COUNT_WRONG(got, i * 7 + 5 + 3000), 0);

    /* The same bytes in source, language given, no constants: MUL is 1. */
    kiln_program p2;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.source = (const char *)m, .source_len = words * 4,
                                                        .language = KILN_LANGUAGE_SPIRV, .entry = "scale_add",
                                                        .name = "two.spv"},
                                   &p2));
    REQUIRE_OK(kiln_program_wait(ctx, p2));
    CHECK_OK(run_one(ctx, p2, out, (const uint32_t[]){1, 0}, 2, N / 64, got));
    CHECK_EQ(COUNT_WRONG(got, i + 1), 0);

    /* The other entry: local size 32, no push block read. */
    kiln_program p3;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "twice"},
                                   &p3));
    REQUIRE_OK(kiln_program_wait(ctx, p3));
    REQUIRE_OK(kiln_program_interface_get(ctx, p3, &iface));
    CHECK_EQ(iface.workgroup_size[0], 32);
    CHECK_OK(run_one(ctx, p3, out, NULL, 0, N / 32, got));
    CHECK_EQ(COUNT_WRONG(got, 2 * i), 0);

    /* An entry the module lacks: the wait fails and lists what it has. */
    kiln_program p4;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "thrice"},
                                   &p4));
    CHECK_RESULT(kiln_program_wait(ctx, p4), KILN_ERR_COMPILE);
    char log[1024];
    size_t len = 0;
    CHECK_OK(kiln_program_log(ctx, p4, log, sizeof log, &len));
    CHECK(strstr(log, "no GLCompute entry point named 'thrice'"));
    CHECK(strstr(log, "'scale_add' (GLCompute), 'twice' (GLCompute)"));
    free(m);
    test_context_done(ctx);
}

/* The predictor treats a module as it does a GLSL program: a node whose
 * own push words stay put runs, once its variant compiles, the module with
 * them baked in (both words, here), and gives what the universal module
 * gives; a word set anew puts the universal module back in that call. */
TEST(a_modules_push_words_are_baked_by_the_predictor)
{
    size_t words = 0;
    uint32_t *m = assemble(k_asm, &words);
    REQUIRE(m);
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "scale_add",
                                                             .name = "bake.spv"},
                                   &p));
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &out));
    kiln_scheme s;
    kiln_node n;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.buffer = out},
                                                      .binding_count = 1, .groups = {N / 64},
                                                      .params = (uint32_t[]){4, 2}, .param_count = 2,
                                                      .label = "scale_add"},
                                    &n));
    static uint32_t got[N];
    int baked = 0;
    uint32_t wrong = 0;
    /* frames until the variant runs, bounded by time rather than frames:
     * on a loaded machine, or a server compiling for other clients too,
     * it takes longer than a few hundred quick frames */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (double waited = 0; waited < 60 && !baked;) {
        CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
        CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
        wrong += COUNT_WRONG(got, i + 4 + 2000);
        CHECK_OK(kiln_node_is_specialized(ctx, n, &baked));   /* not compiles_pending: a server counts others' */
        if (!baked)
            nanosleep(&(struct timespec){0, 2 * 1000 * 1000}, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    }
    CHECK_EQ(baked, 1);
    CHECK_EQ(wrong, 0);
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));   /* a frame on the variant */
    CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    CHECK_EQ(COUNT_WRONG(got, i + 4 + 2000), 0);
    kiln_spec_event ev[16];
    uint32_t count = 0;
    CHECK_OK(kiln_scheme_spec_events(ctx, s, ev, 16, &count));
    bool promoted = false;
    for (uint32_t e = 0; e < count; e++)
        promoted |= ev[e].kind == KILN_SPEC_PROMOTE && (ev[e].mask & 3) == 3 && ev[e].words[0] == 4 &&
                    ev[e].words[1] == 2;
    CHECK(promoted);
    /* A word set anew: the universal module runs it from that submit. */
    CHECK_OK(kiln_node_set_param(ctx, n, 1, 7));
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    CHECK_OK(kiln_buffer_readback(ctx, out, 0, got, sizeof got));
    CHECK_EQ(COUNT_WRONG(got, i + 4 + 7000), 0);
    CHECK_OK(kiln_node_is_specialized(ctx, n, &baked));
    CHECK_EQ(baked, 0);
    free(m);
    test_context_done(ctx);
}

TEST(a_module_glslang_made_outside_kiln)
{
    static const char *glsl = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(constant_id = 0) const uint K = 2;\n"
                              "layout(push_constant) uniform P { uint add; float f; } pc;\n"
                              "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                              "void main() { uint i = gl_GlobalInvocationID.x; o[i] = i * K + pc.add + uint(pc.f); }\n";
    size_t words = 0;
    uint32_t *m = glslang_module(glsl, shaderc_env_version_vulkan_1_2, &words);
    REQUIRE(m);
    CHECK_EQ((m[1] >> 8) & 0xff, 5);   /* SPIR-V 1.5 */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &out));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    static uint32_t got[N];
    float f = 40.0f;
    uint32_t fw;
    memcpy(&fw, &f, 4);
    CHECK_OK(run_one(ctx, p, out, (const uint32_t[]){2, fw}, 2, N / 64, got));
    CHECK_EQ(COUNT_WRONG(got, i * 2 + 42), 0);

    /* Its OpSource says Slang (source language 11), which the validator
     * of Debian's SPIRV-Tools (2023.1) does not know: debug information
     * only. The module runs, and its log says what kiln changed. */
    bool marked = false;
    for (size_t i = 5; i < words && !marked; i += m[i] >> 16)
        if ((m[i] & 0xffff) == 3 /* OpSource */) {
            m[i + 1] = 11;
            marked = true;
        }
    REQUIRE(marked);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .name = "slang.spv"},
                                   &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    char log[1024];
    size_t len = 0;
    CHECK_OK(kiln_program_log(ctx, p, log, sizeof log, &len));
    CHECK(strstr(log, "slang.spv: note: the validator rejected only its debug information"));
    CHECK(strstr(log, "source language marked Unknown"));
    CHECK_OK(run_one(ctx, p, out, (const uint32_t[]){3, fw}, 2, N / 64, got));
    CHECK_EQ(COUNT_WRONG(got, i * 2 + 43), 0);
    free(m);
    test_context_done(ctx);
}

/* An HLSL kernel: a cbuffer (b0), an input StructuredBuffer (t0) and an
 * output RWStructuredBuffer (u0): u0 is binding 0, t0 binding 16, b0
 * binding 32 (PROG_HLSL_SHIFT_*), so t0 and u0 are two buffers. */
static const char k_hlsl[] = "cbuffer Params : register(b0) { uint n; float scale; };\n"
                             "StructuredBuffer<float> src : register(t0);\n"
                             "RWStructuredBuffer<float> dst : register(u0);\n"
                             "[numthreads(64, 1, 1)]\n"
                             "void CSMain(uint3 id : SV_DispatchThreadID) {\n"
                             "    if (id.x < n) dst[id.x] = src[id.x] * scale + 1.0;\n"
                             "}\n";

TEST(hlsl_with_a_cbuffer_and_structured_buffers)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.source = k_hlsl, .language = KILN_LANGUAGE_HLSL,
                                                        .entry = "CSMain", .name = "saxpy.hlsl"},
                                   &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.binding_count, 3);
    bool saw[3] = {0};
    for (uint32_t i = 0; i < iface.binding_count; i++) {
        uint32_t b = iface.bindings[i].binding;
        saw[0] |= b == PROG_HLSL_SHIFT_U;
        saw[1] |= b == PROG_HLSL_SHIFT_T;
        saw[2] |= b == PROG_HLSL_SHIFT_B;
    }
    CHECK(saw[0] && saw[1] && saw[2]);

    static float in[N], got[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = (float)i * 0.25f - 7.0f;
    struct { uint32_t n; float scale; uint32_t pad[2]; } params = {N - 3, 3.0f, {0, 0}};
    kiln_buffer src, dst, cb;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof in, .label = "src"}, &src));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof got, .label = "dst"}, &dst));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof params, .usage = KILN_BUFFER_UNIFORM, .label = "params"}, &cb));
    REQUIRE_OK(kiln_buffer_upload(ctx, src, 0, in, sizeof in));
    static float minus[N];
    for (uint32_t i = 0; i < N; i++)
        minus[i] = -1.0f;
    REQUIRE_OK(kiln_buffer_upload(ctx, dst, 0, minus, sizeof minus));
    REQUIRE_OK(kiln_buffer_upload(ctx, cb, 0, &params, sizeof params));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding b[3] = {{.binding = PROG_HLSL_SHIFT_U, .buffer = dst},
                         {.binding = PROG_HLSL_SHIFT_T, .buffer = src},
                         {.binding = PROG_HLSL_SHIFT_B, .buffer = cb}};
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 3,
                                                      .groups = {N / 64}},
                                    &n));
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    CHECK_OK(kiln_buffer_readback(ctx, dst, 0, got, sizeof got));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++) {
        float want = i < N - 3 ? in[i] * 3.0f + 1.0f : -1.0f;
        bad += fabsf(got[i] - want) > 1e-5f * fmaxf(1.0f, fabsf(want));
    }
    CHECK_EQ(bad, 0);
    CHECK_OK(kiln_buffer_readback(ctx, src, 0, got, sizeof got));
    CHECK(!memcmp(got, in, sizeof in));   /* t0 was read, never written */
    test_context_done(ctx);
}

/* HLSL's own push constants are a node's param words; an HLSL compile
 * error names the file and line. */
TEST(hlsl_push_constants_and_errors)
{
    static const char *src = "struct P { uint add; uint mul; };\n"
                             "[[vk::push_constant]] ConstantBuffer<P> pc;\n"
                             "RWStructuredBuffer<uint> o;\n"   /* no register: the first free u */
                             "[numthreads(32, 1, 1)]\n"
                             "void go(uint3 id : SV_DispatchThreadID) { o[id.x] = id.x * pc.mul + pc.add; }\n";
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .language = KILN_LANGUAGE_HLSL,
                                                             .entry = "go"},
                                   &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.param_words, 2);
    kiln_buffer out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &out));
    static uint32_t got[N];
    CHECK_OK(run_one(ctx, p, out, (const uint32_t[]){9, 4}, 2, N / 32, got));
    CHECK_EQ(COUNT_WRONG(got, i * 4 + 9), 0);

    kiln_program bad;
    REQUIRE_OK(kiln_program_create(ctx,
                                   &(kiln_program_desc){.source = "[numthreads(1,1,1)]\nvoid main() { undeclared = 1; }\n",
                                                        .language = KILN_LANGUAGE_HLSL, .name = "broken.hlsl"},
                                   &bad));
    CHECK_RESULT(kiln_program_wait(ctx, bad), KILN_ERR_COMPILE);
    char log[1024];
    size_t len = 0;
    CHECK_OK(kiln_program_log(ctx, bad, log, sizeof log, &len));
    CHECK(strstr(log, "broken.hlsl:2"));
    CHECK(strstr(log, "undeclared"));
    test_context_done(ctx);
}

/* A resource annotated [[vk::binding(N, S)]] keeps binding N of set S, as
 * DXC keeps it (glslang's class shifts would have made an SRV's 1 a 17),
 * also where it names a register too;
 * registers beside it are shifted by class, a register's space is its set,
 * and one register name in two spaces is refused by name. */
TEST(hlsl_vk_binding_is_kept_and_spaces_are_sets)
{
    static const char *src = "[[vk::binding(1, 0)]] StructuredBuffer<uint> a;\n"
                             "[[vk::binding(2, 0)]] RWStructuredBuffer<uint> b;\n"
                             "StructuredBuffer<uint> c : register(t0);\n"
                             "RWStructuredBuffer<uint> d : register(u0);\n"
                             "StructuredBuffer<uint> e : register(t1, space1);\n"
                             "/* register(t7) in a comment maps nothing */\n"
                             "[numthreads(32, 1, 1)]\n"
                             "void main(uint3 id : SV_DispatchThreadID) {\n"
                             "    b[id.x] = a[id.x] + e[id.x];\n"
                             "    d[id.x] = c[id.x];\n"
                             "}\n";
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .language = KILN_LANGUAGE_HLSL}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.binding_count, 5);
    uint32_t want[5][2] = {{0, 0}, {0, 1}, {0, 2}, {0, PROG_HLSL_SHIFT_T}, {1, PROG_HLSL_SHIFT_T + 1}};
    for (uint32_t i = 0; i < iface.binding_count && i < 5; i++) {
        CHECK_EQ(iface.bindings[i].set, want[i][0]);
        CHECK_EQ(iface.bindings[i].binding, want[i][1]);
    }

    /* Both on one resource (code written for DXC and for D3D at once):
     * the annotation wins, as DXC's does. */
    static const char *both = "[[vk::binding(0, 0)]] Texture2D<float4> src : register(t0, space0);\n"
                              "[[vk::binding(0, 1)]] RWTexture2D<float4> dst : register(u0, space1);\n"
                              "[[vk::binding(0, 2)]] SamplerState smp : register(s0, space2);\n"
                              "[numthreads(8, 8, 1)] void main(uint3 id : SV_DispatchThreadID) {\n"
                              "    dst[id.xy] = src.SampleLevel(smp, float2(id.xy) / 8.0, 0.0);\n"
                              "}\n";
    kiln_program pb;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = both, .language = KILN_LANGUAGE_HLSL}, &pb));
    REQUIRE_OK(kiln_program_wait(ctx, pb));
    REQUIRE_OK(kiln_program_interface_get(ctx, pb, &iface));
    CHECK_EQ(iface.binding_count, 3);
    for (uint32_t i = 0; i < iface.binding_count && i < 3; i++) {
        CHECK_EQ(iface.bindings[i].set, i);
        CHECK_EQ(iface.bindings[i].binding, 0);
    }

    static const char *two_spaces = "StructuredBuffer<uint> x : register(t0);\n"
                                    "StructuredBuffer<uint> y : register(t0, space2);\n"
                                    "RWStructuredBuffer<uint> o : register(u0);\n"
                                    "[numthreads(1, 1, 1)] void main() { o[0] = x[0] + y[0]; }\n";
    kiln_program bad;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = two_spaces, .language = KILN_LANGUAGE_HLSL,
                                                             .name = "spaces.hlsl"},
                                   &bad));
    CHECK_RESULT(kiln_program_wait(ctx, bad), KILN_ERR_COMPILE);
    char log[1024];
    size_t len = 0;
    CHECK_OK(kiln_program_log(ctx, bad, log, sizeof log, &len));
    CHECK(strstr(log, "spaces.hlsl: error: register t0 is used in space0 and space2"));
    test_context_done(ctx);
}

TEST(bad_modules_are_refused_by_name)
{
    size_t words = 0;
    uint32_t *m = assemble(k_asm, &words);
    REQUIRE(m);
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;

    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = 3}, &p), KILN_ERR_INVALID);
    CHECK_MSG("is 3 words; its header alone is 5");

    uint32_t *swapped = malloc(words * 4);
    for (size_t i = 0; i < words; i++)
        swapped[i] = __builtin_bswap32(m[i]);
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.spirv = swapped, .spirv_words = words}, &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("byte-swapped");
    free(swapped);

    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = (const char *)m, .source_len = words * 4 - 2,
                                                                .language = KILN_LANGUAGE_SPIRV},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("whole 32-bit words");

    /* Not SPIR-V at all, said to be. */
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = "#version 450 void main(){} and more text",
                                                                .language = KILN_LANGUAGE_SPIRV},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("SPIR-V's magic number is 0x07230203");

    /* SPIR-V bytes read as GLSL: the NUL byte names the way. */
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = (const char *)m, .source_len = words * 4,
                                                                .language = KILN_LANGUAGE_GLSL},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("KILN_LANGUAGE_SPIRV");

    CHECK_RESULT(kiln_program_create(ctx,
                                     &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "scale_add",
                                                          .defines = &(kiln_define){"X", "1"}, .define_count = 1},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("defines are GLSL's");

    /* Whole and well formed, but invalid: a store into a constant. The
     * wait says so, naming the module and SPIR-V's rule. */
    uint32_t *bent = malloc(words * 4);
    memcpy(bent, m, words * 4);
    /* The first OpStore's pointer operand (word 1) becomes the id of the
     * value it stores (word 2): a store through a non-pointer. */
    bool bentone = false;
    for (size_t i = 5; i < words && !bentone;) {
        uint32_t wc = bent[i] >> 16;
        if ((bent[i] & 0xffff) == 62 /* OpStore */) {
            bent[i + 1] = bent[i + 2];
            bentone = true;
        }
        i += wc ? wc : 1;
    }
    REQUIRE(bentone);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = bent, .spirv_words = words,
                                                             .entry = "scale_add", .name = "bent.spv"},
                                   &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_COMPILE);
    CHECK_MSG("bent.spv");
    char log[2048];
    size_t len = 0;
    CHECK_OK(kiln_program_log(ctx, p, log, sizeof log, &len));
    CHECK(strstr(log, "bent.spv: error: SPIR-V 1.3 module is not valid for Vulkan 1.1"));
    free(bent);

    /* A truncated module: the last instruction runs past the end. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words - 1,
                                                             .entry = "scale_add", .name = "cut.spv"},
                                   &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_COMPILE);
    CHECK_MSG("cut.spv");

    /* The good program still runs after all of them. */
    kiln_program good;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .entry = "twice"},
                                   &good));
    CHECK_OK(kiln_program_wait(ctx, good));
    free(m);
    test_context_done(ctx);
}

/* prog_check_device decides from the module and the caps alone: the same
 * module on caps lacking a feature is refused naming the capability and
 * the feature; on caps having it, taken; a SPIR-V version past the
 * device's Vulkan is refused. */
TEST(a_device_lacking_a_feature_refuses_by_name)
{
    static const char *glsl = "#version 450\n"
                              "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
                              "layout(local_size_x = 1) in;\n"
                              "layout(std430, binding = 0) buffer O { uint64_t o[]; };\n"
                              "void main() { o[0] = o[1] * 3ul; }\n";
    size_t words = 0;
    uint32_t *m = glslang_module(glsl, shaderc_env_version_vulkan_1_2, &words);
    REQUIRE(m);
    kiln_caps caps = {.device_name = "a device", .api_version = (1u << 22) | (2u << 12),
                      .shader_features = ~0u & ~(uint32_t)KILN_FEATURE_INT64, .subgroup_ops = 0xff};
    CHECK_RESULT(prog_check_device("wide.comp", m, words, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("wide.comp declares SPIR-V capability Int64, which needs shaderInt64; the device (a device) lacks it");
    caps.shader_features |= KILN_FEATURE_INT64;
    CHECK_OK(prog_check_device("wide.comp", m, words, &caps));
    caps.api_version = (1u << 22) | (1u << 12);   /* Vulkan 1.1: SPIR-V up to 1.3 */
    CHECK_RESULT(prog_check_device("wide.comp", m, words, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("SPIR-V 1.5, and this device's Vulkan 1.1 takes SPIR-V up to 1.3");
    free(m);

    /* On the real device: whatever it lacks, what it has is what caps say,
     * so a module declaring only what it has is taken. */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps real;
    REQUIRE_OK(kiln_context_caps(ctx, &real));
    m = glslang_module(glsl, shaderc_env_version_vulkan_1_2, &words);
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .name = "wide.spv"},
                                   &p));
    kiln_result r = kiln_program_wait(ctx, p);
    if (real.shader_features & KILN_FEATURE_INT64) {
        CHECK_OK(r);
    } else {
        CHECK_RESULT(r, KILN_ERR_LIMIT);
        CHECK_MSG("shaderInt64");
    }
    free(m);

    /* Subgroup operations lavapipe lacks (clustered; the H200 has them):
     * refused by name on a device without them, run on one with them. */
    static const char *clustered = "#version 450\n"
                                   "#extension GL_KHR_shader_subgroup_clustered : require\n"
                                   "layout(local_size_x = 64) in;\n"
                                   "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                                   "void main() { uint i = gl_GlobalInvocationID.x; o[i] = subgroupClusteredAdd(i, 4); }\n";
    m = glslang_module(clustered, shaderc_env_version_vulkan_1_2, &words);
    REQUIRE(m);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .name = "sum4.spv"},
                                   &p));
    r = kiln_program_wait(ctx, p);
    if (real.subgroup_ops & KILN_SUBGROUP_CLUSTERED) {
        CHECK_OK(r);
        kiln_buffer out;
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &out));
        static uint32_t got[N];
        CHECK_OK(run_one(ctx, p, out, NULL, 0, N / 64, got));
        CHECK_EQ(COUNT_WRONG(got, 4 * (i & ~3u) + 6), 0);
    } else {
        CHECK_RESULT(r, KILN_ERR_LIMIT);
        CHECK_MSG("sum4.spv: error: the device cannot run it: it uses subgroup operations the device does not "
                  "support in compute shaders: clustered");
    }
    free(m);
    test_context_done(ctx);
}

int main(void)
{
    RUN(an_assembled_module_with_two_entries_its_push_block_and_a_constant);
    RUN(a_modules_push_words_are_baked_by_the_predictor);
    RUN(a_module_glslang_made_outside_kiln);
    RUN(hlsl_with_a_cbuffer_and_structured_buffers);
    RUN(hlsl_push_constants_and_errors);
    RUN(hlsl_vk_binding_is_kept_and_spaces_are_sets);
    RUN(bad_modules_are_refused_by_name);
    RUN(a_device_lacking_a_feature_refuses_by_name);
    return TEST_SUMMARY();
}
