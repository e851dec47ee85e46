/* SPDX-License-Identifier: MIT */
/*
 * test_real_shaders.c: compute shaders written the way public projects
 * write them, run unchanged on a real device (lavapipe in CI, validation
 * on) and checked against the CPU: a workgroup reduction through shared
 * memory and barrier(), subgroup arithmetic, clustered subgroup sums. What
 * a device cannot run is refused naming the feature, never run wrong: each
 * subgroup test asks the device which operation classes it has and expects
 * either right results or KILN_ERR_LIMIT naming the missing class.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>

#include "test.h"

#define GROUPS 16u
#define LOCAL 256u
#define N (GROUPS * LOCAL)

static uint32_t value(uint32_t i) { return (i * 2654435761u) >> 20; }

/* Runs `src` with binding 0 = the input (N values), binding 1 = out
 * (out_words, zeroed), GROUPS workgroups. Returns the result of the
 * program's wait (the output is read only on KILN_OK). */
/* Inside run(): a failed call fails the test and returns its result. */
#define TRY_OK(call)                                                                               \
    do {                                                                                           \
        kiln_result r_ = (call);                                                                   \
        if (r_ != KILN_OK) {                                                                       \
            CHECK_OK(r_);                                                                          \
            return r_;                                                                             \
        }                                                                                          \
    } while (0)

static kiln_result run(kiln_context ctx, const char *src, const char *name, uint32_t *out, uint32_t out_words)
{
    kiln_program p;
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = name}, &p);
    if (r == KILN_OK)
        r = kiln_program_wait(ctx, p);
    if (r != KILN_OK)
        return r;
    static uint32_t in[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = value(i);
    kiln_buffer a, b;
    TRY_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = sizeof in, .label = "in"}, &a));
    TRY_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = out_words * 4u, .label = "out"}, &b));
    TRY_OK(kiln_buffer_upload(ctx, a, 0, in, sizeof in));
    memset(out, 0, out_words * 4u);
    TRY_OK(kiln_buffer_upload(ctx, b, 0, out, out_words * 4u));
    kiln_scheme s;
    TRY_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_binding bind[2] = {{.binding = 0, .buffer = a}, {.binding = 1, .buffer = b}};
    kiln_node n;
    TRY_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = bind, .binding_count = 2,
                                                               .groups = {GROUPS}},
                                    &n));
    TRY_OK(kiln_scheme_submit(ctx, s, NULL));
    TRY_OK(kiln_buffer_readback(ctx, b, 0, out, out_words * 4u));
    CHECK_OK(kiln_scheme_destroy(ctx, s));
    CHECK_OK(kiln_program_destroy(ctx, p));
    CHECK_OK(kiln_buffer_destroy(ctx, a));
    CHECK_OK(kiln_buffer_destroy(ctx, b));
    return KILN_OK;
}

/* A tree reduction in shared memory, a barrier() between its steps. */
TEST(shared_memory_reduction_with_barriers)
{
    static const char *src = "#version 450\n"
                             "layout(local_size_x = 256) in;\n"
                             "layout(std430, binding = 0) readonly buffer In { uint v[]; };\n"
                             "layout(std430, binding = 1) writeonly buffer Out { uint sums[]; };\n"
                             "shared uint partial[256];\n"
                             "void main() {\n"
                             "    uint l = gl_LocalInvocationID.x;\n"
                             "    partial[l] = v[gl_GlobalInvocationID.x];\n"
                             "    barrier();\n"
                             "    for (uint stride = 128u; stride > 0u; stride >>= 1) {\n"
                             "        if (l < stride) partial[l] += partial[l + stride];\n"
                             "        barrier();\n"
                             "    }\n"
                             "    if (l == 0u) sums[gl_WorkGroupID.x] = partial[0];\n"
                             "}\n";
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    uint32_t sums[GROUPS];
    CHECK_OK(run(ctx, src, "reduce.comp", sums, GROUPS));
    for (uint32_t g = 0; g < GROUPS; g++) {
        uint32_t want = 0;
        for (uint32_t l = 0; l < LOCAL; l++)
            want += value(g * LOCAL + l);
        CHECK_EQ(sums[g], want);
    }
    test_context_done(ctx);
}

/* Each invocation writes its subgroup sum (or clustered sum) and where it
 * sits (subgroup id, id within it); the CPU groups invocations by those and
 * checks every sum. Holds for any subgroup size. */
static const char *k_subgroup = "#version 450\n"
                                "#extension GL_KHR_shader_subgroup_arithmetic : require\n"
                                "#extension GL_KHR_shader_subgroup_clustered : enable\n"
                                "layout(local_size_x = 256) in;\n"
                                "layout(std430, binding = 0) readonly buffer In { uint v[]; };\n"
                                "layout(std430, binding = 1) writeonly buffer Out { uvec4 o[]; };\n"
                                "void main() {\n"
                                "    uint i = gl_GlobalInvocationID.x;\n"
                                "    o[i] = uvec4(SUM(v[i]), gl_WorkGroupID.x * 1024u + gl_SubgroupID,\n"
                                "                 gl_SubgroupInvocationID, gl_SubgroupSize);\n"
                                "}\n";

static void check_subgroup(const char *sum, uint32_t cluster, uint32_t need, const char *need_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    char src[2048];
    snprintf(src, sizeof src, "#define SUM(x) %s\n", sum);
    /* the define goes after #version: put it in the source's body */
    const char *body = strchr(k_subgroup, '\n') + 1;
    char full[4096];
    snprintf(full, sizeof full, "#version 450\n%s%s", src, body);
    static uint32_t out[4 * N];
    kiln_result r = run(ctx, full, "subgroup.comp", out, 4 * N);
    if (!(caps.subgroup_ops & need)) {
        CHECK_RESULT(r, KILN_ERR_LIMIT);
        CHECK_MSG(need_name);
        test_context_done(ctx);
        return;
    }
    CHECK_OK(r);
    if (r != KILN_OK) {
        test_context_done(ctx);
        return;
    }
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N && bad < 5; i++) {
        uint32_t want = 0, size = out[4 * i + 3];
        for (uint32_t j = 0; j < N; j++) {
            bool same = out[4 * j + 1] == out[4 * i + 1];   /* same workgroup and subgroup */
            if (same && (!cluster || out[4 * j + 2] / cluster == out[4 * i + 2] / cluster))
                want += value(j);
        }
        if (out[4 * i] != want || !size) {
            bad++;
            fprintf(stderr, "%s: invocation %u (subgroup %u, lane %u of %u): %u, expected %u\n", test_name_, i,
                    out[4 * i + 1], out[4 * i + 2], size, out[4 * i], want);
        }
    }
    CHECK_EQ(bad, 0);
    test_context_done(ctx);
}

TEST(subgroup_arithmetic)
{
    check_subgroup("subgroupAdd(x)", 0, KILN_SUBGROUP_ARITHMETIC, "arithmetic");
}

TEST(clustered_subgroup_sums)
{
    check_subgroup("subgroupClusteredAdd(x, 4u)", 4, KILN_SUBGROUP_CLUSTERED, "clustered");
}

int main(void)
{
    RUN(shared_memory_reduction_with_barriers);
    RUN(subgroup_arithmetic);
    RUN(clustered_subgroup_sums);
    return TEST_SUMMARY();
}
