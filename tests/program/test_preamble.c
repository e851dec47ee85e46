/* SPDX-License-Identifier: MIT */
/*
 * test_preamble.c: programs as ML runtimes and engines hand them over, run
 * on a real device (lavapipe in CI, validation on) and checked against
 * what the CPU computes: a shader whose macros (function-like ones among
 * them) and #extension lines come in a 60-macro host preamble and whose
 * workgroup size the host sets through specialization ids 233-235; more
 * defines than kiln once took, function-like ones among them; a workgroup
 * size set over a module's literal size whose constant other code shares,
 * and over HLSL's numthreads. What is malformed is refused naming it.
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include <shaderc/shaderc.h>

#include "base/base.h"
#include "glslang_module.h"
#include "test.h"

#define N 512u

/* The shader as an ML runtime keeps it: every type and access through the
 * host's macros, the workgroup size specialization constants 233-235. */
static const char k_ml[] = "#version 450\n"
                           "#extension GL_EXT_control_flow_attributes : enable\n"
                           "layout(local_size_x_id = 233, local_size_y_id = 234, local_size_z_id = 235) in;\n"
                           "layout(binding = 0) readonly buffer A { sfp a_blob[]; };\n"
                           "layout(binding = 1) writeonly buffer B { sfp b_blob[]; };\n"
                           "layout(push_constant) uniform P { int n; int mul; } p;\n"
                           "void main() {\n"
                           "    int gx = int(gl_GlobalInvocationID.x);\n"
                           "    if (gx >= psc(n)) return;\n"
                           "    afp v = buffer_ld1(a_blob, gx);\n"
                           "    [[unroll]] for (int k = 0; k < UNROLL; k++) v = mad_op(v, afp(psc(mul)), afp(K_7));\n"
                           "    buffer_st1(b_blob, gx, v + afp(gl_WorkGroupSize.x) + SUM3(K_1, K_2, K_3));\n"
                           "}\n";

/* 60 macros: 50 plain, 10 function-like, and #extension lines, as a host
 * inserts them after #version. */
static char *ml_preamble(void)
{
    static char text[8192];
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "#extension GL_EXT_shader_explicit_arithmetic_types : require\n");
    for (int i = 0; i < 50; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "#define K_%d %d\n", i, i);
    static const char *const fn[] = {
        "#define sfp uint\n#define afp uint\n",   /* two plain ones of the 50 above's kind */
        "#define psc(x) (p.x)\n",
        "#define buffer_ld1(buf, i) buf[i]\n",
        "#define buffer_st1(buf, i, v) buf[i] = (v)\n",
        "#define mad_op(a, b, c) ((a) * (b) + (c))\n",
        "#define SUM3(a, b, c) ((a) + (b) + (c))\n",
        "#define MAX2(a, b) max(a, b)\n",
        "#define MIN2(a, b) min(a, b)\n",
        "#define SQR(x) ((x) * (x))\n",
        "#define UNUSED_FN(a) 0\n",
        "#define UNROLL 2\n",
    };
    for (size_t i = 0; i < sizeof fn / sizeof fn[0]; i++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s", fn[i]);
    return text;
}

static uint32_t ml_want(uint32_t i, uint32_t mul, uint32_t wg)
{
    uint32_t v = i;
    for (int k = 0; k < 2; k++)
        v = v * mul + 7;
    return v + wg + 6;
}

/* Runs p over a (binding 0) into b (binding 1), n elements, push words
 * {n, mul}, groups workgroups. */
static kiln_result run_ml(kiln_context ctx, kiln_program p, kiln_buffer a, kiln_buffer b, uint32_t mul,
                          uint32_t groups)
{
    kiln_scheme s;
    kiln_node node;
    KILN_TRY(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[2] = {{.binding = 0, .buffer = a}, {.binding = 1, .buffer = b}};
    kiln_result r = kiln_scheme_add_node(ctx, s,
                                         &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                                           .groups = {groups}, .params = (uint32_t[]){N, mul},
                                                           .param_count = 2},
                                         &node);
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, s, NULL);
    kiln_result d = kiln_scheme_destroy(ctx, s);
    return r < 0 ? r : d;
}

TEST(an_ml_runtime_shader_with_a_host_preamble_and_its_workgroup_size)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static uint32_t in[N], got[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = i;
    kiln_buffer a, b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof in}, &a));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof got}, &b));
    REQUIRE_OK(kiln_buffer_upload(ctx, a, 0, in, sizeof in));
    const char *pre = ml_preamble();
    for (uint32_t wg = 32; wg <= 64; wg += 32) {
        kiln_program p;
        REQUIRE_OK(kiln_program_create(ctx,
                                       &(kiln_program_desc){.source = k_ml, .name = "ml.comp", .preamble = pre,
                                                            .workgroup_size = {wg, 1, 1}},
                                       &p));
        REQUIRE_OK(kiln_program_wait(ctx, p));
        kiln_program_interface iface;
        REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
        CHECK_EQ(iface.workgroup_size[0], wg);
        CHECK_EQ(iface.workgroup_size[1], 1);
        /* The host fixed them: no constant is left to set. */
        for (uint32_t i = 0; i < iface.constant_count; i++)
            CHECK(iface.constants[i].id < 233 || iface.constants[i].id > 235);
        CHECK_OK(run_ml(ctx, p, a, b, 3, N / wg));
        CHECK_OK(kiln_buffer_readback(ctx, b, 0, got, sizeof got));
        uint32_t bad = 0;
        for (uint32_t i = 0; i < N; i++)
            bad += got[i] != ml_want(i, 3, wg);
        CHECK_EQ(bad, 0);
        /* Setting a fixed constant is refused, naming it. */
        kiln_program q;
        kiln_result r = kiln_program_create(ctx,
                                            &(kiln_program_desc){.source = k_ml, .preamble = pre,
                                                                 .workgroup_size = {wg, 1, 1},
                                                                 .constants = &(kiln_spec_constant){233, 16},
                                                                 .constant_count = 1},
                                            &q);
        if (r == KILN_OK)
            r = kiln_program_wait(ctx, q);
        CHECK(r < 0);
        CHECK_MSG("233");
    }
    test_context_done(ctx);
}

/* Runs p (binding 0: N uints) over groups workgroups into got. */
static kiln_result run_into(kiln_context ctx, kiln_program p, uint32_t groups, uint32_t *got)
{
    kiln_buffer o;
    kiln_scheme s;
    kiln_node n;
    KILN_TRY(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &o));
    kiln_result r = kiln_scheme_create(ctx, NULL, &s);
    if (r == KILN_OK) {
        r = kiln_scheme_add_node(ctx, s,
                                 &(kiln_node_desc){.program = p, .bindings = &(kiln_binding){.buffer = o},
                                                   .binding_count = 1, .groups = {groups}},
                                 &n);
        if (r == KILN_OK)
            r = kiln_scheme_submit(ctx, s, NULL);
        if (r == KILN_OK)
            r = kiln_buffer_readback(ctx, o, 0, got, N * 4);
        kiln_result d = kiln_scheme_destroy(ctx, s);
        r = r < 0 ? r : d;
    }
    kiln_result d = kiln_buffer_destroy(ctx, o);
    return r < 0 ? r : d;
}

TEST(many_defines_and_function_like_ones)
{
    /* 100 defines (kiln once took 32), two of them function-like. */
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                              "void main() { uint i = gl_GlobalInvocationID.x; o[i] = TWICE(i) + ADD3(D_0, D_42, D_99); }\n";
    kiln_define defs[100];
    static char names[98][16], values[98][16];
    for (int i = 0; i < 98; i++) {
        snprintf(names[i], sizeof names[i], "D_%d", i == 97 ? 99 : i);
        snprintf(values[i], sizeof values[i], "%du", i == 97 ? 99 : i);
        defs[i] = (kiln_define){names[i], values[i]};
    }
    defs[98] = (kiln_define){"TWICE(x)", "((x) * 2u)"};
    defs[99] = (kiln_define){"ADD3( a ,b, c )", "(a + b + c)"};
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .defines = defs, .define_count = 100},
                                   &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    static uint32_t got[N];
    REQUIRE_OK(run_into(ctx, p, N / 64, got));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += got[i] != i * 2 + 141;
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

TEST(bad_defines_preambles_and_sizes_are_refused_by_name)
{
    static const char src[] = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    struct { const char *name, *value, *msg; } bad[] = {
        {"F(x", "1", "end with ')'"},
        {"F(x y)", "1", "end with ')'"},
        {"F(1x)", "1", "parameter 1x) of the macro is not an identifier"},
        {"F(...)", "1", "parameter ...) of the macro is not an identifier"},
        {"9lives", "1", "is an identifier"},
        {"A-B", "1", "'-' after the identifier"},
        {"F(a)b", "1", "text after the macro's ')'"},
        {"V", "1\n2", "holds a line break"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_RESULT(kiln_program_create(ctx,
                                         &(kiln_program_desc){.source = src,
                                                              .defines = &(kiln_define){bad[i].name, bad[i].value},
                                                              .define_count = 1},
                                         &p),
                     KILN_ERR_INVALID);
        CHECK_MSG(bad[i].msg);
    }
    char *big = malloc(KILN_MAX_PREAMBLE_BYTES + 2);
    REQUIRE(big);
    memset(big, ' ', KILN_MAX_PREAMBLE_BYTES + 1);
    big[KILN_MAX_PREAMBLE_BYTES + 1] = 0;
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .preamble = big}, &p), KILN_ERR_LIMIT);
    CHECK_MSG("KILN_MAX_PREAMBLE_BYTES");
    free(big);
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .workgroup_size = {70000}}, &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("workgroup_size[0] is 70000");
    /* Past the device's limit: refused when made, naming the limit. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .workgroup_size = {4096, 4096}}, &p));
    CHECK(kiln_program_wait(ctx, p) < 0);
    CHECK(strstr(kiln_last_error(), "local_size_x = 4096, the device allows at most"));
    /* An error in the preamble names the program. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "pre.comp",
                                                             .preamble = "#define OK 1\nthis is not glsl\n"},
                                   &p));
    CHECK_RESULT(kiln_program_wait(ctx, p), KILN_ERR_COMPILE);
    CHECK_MSG("pre.comp");
    test_context_done(ctx);
}

/* p runs wg wide: element i is i * 1000 + its lane * 10 + shared. */
static void check_sized(kiln_context ctx, kiln_program p, uint32_t wg, uint32_t shared)
{
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_program_interface iface;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &iface));
    CHECK_EQ(iface.workgroup_size[0], wg);
    static uint32_t got[N];
    REQUIRE_OK(run_into(ctx, p, N / wg, got));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += got[i] != i * 1000 + (i % wg) * 10 + shared;
    CHECK_EQ(bad, 0);
}

/* A module whose literal size's constant 64 is also its code's: the launch
 * becomes 16 wide (gl_LocalInvocationID says so), the code's 64 stays. */
TEST(a_workgroup_size_over_a_modules_and_hlsls_own)
{
    static const char glsl[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                               "void main() { uint i = gl_GlobalInvocationID.x;\n"
                               "    o[i] = i * 1000u + gl_LocalInvocationID.x * 10u + 64u; }\n";
    size_t words = 0;
    uint32_t *m = glslang_module(glsl, shaderc_env_version_vulkan_1_1, &words);
    REQUIRE(m);
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words,
                                                             .workgroup_size = {16}},
                                   &p));
    check_sized(ctx, p, 16, 64);
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words}, &p));
    check_sized(ctx, p, 64, 64);
    static const char hlsl[] = "RWStructuredBuffer<uint> o : register(u0);\n"
                               "[numthreads(64, 1, 1)]\n"
                               "void main(uint3 id : SV_DispatchThreadID, uint3 t : SV_GroupThreadID) {\n"
                               "    o[id.x] = id.x * 1000 + t.x * 10 + 7; }\n";
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = hlsl, .language = KILN_LANGUAGE_HLSL,
                                                             .workgroup_size = {32}},
                                   &p));
    check_sized(ctx, p, 32, 7);
    /* A preamble with a module is refused: it has no preprocessor. */
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.spirv = m, .spirv_words = words, .preamble = "x"},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("no preprocessor");
    free(m);
    test_context_done(ctx);
}

int main(void)
{
    RUN(an_ml_runtime_shader_with_a_host_preamble_and_its_workgroup_size);
    RUN(many_defines_and_function_like_ones);
    RUN(bad_defines_preambles_and_sizes_are_refused_by_name);
    RUN(a_workgroup_size_over_a_modules_and_hlsls_own);
    return TEST_SUMMARY();
}
