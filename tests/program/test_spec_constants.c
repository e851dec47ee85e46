/* SPDX-License-Identifier: MIT */
/*
 * test_spec_constants.c: specialization constants as shaders from public
 * projects declare them (a workgroup size by local_size_x_id, a loop
 * bound, a float learning rate, a bool switching a path, a shared array
 * sized by a constant, the kernel-library habit of one id sizing both the
 * workgroup and a loop), set through kiln_program_desc.constants and run
 * on a real device (lavapipe in CI, validation on), checked against the
 * CPU. Also: the interface lists every declared constant with its type,
 * default and value; a wrong id or a value its type cannot hold is refused
 * by name; the device's shared-memory limit sees a constant's set size;
 * programs that differ only in their constants share one front end and an
 * archive keeps a pipeline per set; the predictor's variants keep the
 * constants; the mock backend records what a pipeline was made with; and
 * constants left at their defaults are said once.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "test.h"

#define N 4096u

static uint32_t fbits(float f)
{
    uint32_t w;
    memcpy(&w, &f, 4);
    return w;
}

/* Gradient descent over a parameter vector, as an optimizer kernel writes
 * it: the workgroup size, the number of passes, the learning rate and
 * whether to clamp are the host's choice, made at pipeline creation. */
static const char *k_sgd = "#version 450\n"
                           "// sgd_step.comp: PASSES steps of theta -= rate * grad * (p + 1)\n"
                           "layout(local_size_x_id = 0) in;\n"
                           "layout(constant_id = 1) const uint PASSES = 1;\n"
                           "layout(constant_id = 2) const float LEARNING_RATE = 0.0;\n"
                           "layout(constant_id = 3) const bool CLAMP = false;\n"
                           "\n"
                           "layout(std430, binding = 0) buffer Params { float theta[]; };\n"
                           "layout(std430, binding = 1) readonly buffer Grads { float grad[]; };\n"
                           "layout(std430, binding = 2) writeonly buffer Seen { uint seen[]; };\n"
                           "\n"
                           "void main() {\n"
                           "    uint i = gl_GlobalInvocationID.x;\n"
                           "    precise float t = theta[i];\n"
                           "    for (uint p = 0u; p < PASSES; ++p) {\n"
                           "        precise float step = LEARNING_RATE * grad[i];\n"
                           "        t -= step * float(p + 1u);\n"
                           "    }\n"
                           "    if (CLAMP)\n"
                           "        t = clamp(t, -1.0, 1.0);\n"
                           "    theta[i] = t;\n"
                           "    seen[i] = gl_WorkGroupSize.x * 65536u + gl_LocalInvocationID.x;\n"
                           "}\n";

static float theta0(uint32_t i) { return (float)((int)(i % 97u) - 48) / 16.0f; }
static float grad0(uint32_t i) { return (float)((int)(i * 7u % 31u) - 15) / 8.0f; }

static float sgd_cpu(uint32_t i, uint32_t passes, float rate, bool clamp)
{
    float t = theta0(i);
    for (uint32_t p = 0; p < passes; p++) {
        float step = rate * grad0(i);
        t -= step * (float)(p + 1);
    }
    if (clamp)
        t = t < -1.0f ? -1.0f : t > 1.0f ? 1.0f : t;
    return t;
}

static kiln_result make(kiln_context ctx, const char *src, const char *name, const kiln_spec_constant *c,
                        uint32_t n, kiln_program *p)
{
    kiln_result r = kiln_program_create(
        ctx, &(kiln_program_desc){.source = src, .name = name, .constants = c, .constant_count = n}, p);
    return r < 0 ? r : kiln_program_wait(ctx, *p);
}

/* Runs prog over `groups` workgroups with the buffers bound at 0, 1, 2
 * (count of them) and waits. */
static kiln_result run_node(kiln_context ctx, kiln_program prog, const kiln_buffer *b, uint32_t count,
                            uint32_t groups)
{
    kiln_scheme s;
    kiln_binding bind[3];
    for (uint32_t i = 0; i < count; i++)
        bind[i] = (kiln_binding){.binding = i, .buffer = b[i]};
    kiln_node n;
    KILN_TRY(kiln_scheme_create(ctx, NULL, &s));
    kiln_result r = kiln_scheme_add_node(
        ctx, s, &(kiln_node_desc){.program = prog, .bindings = bind, .binding_count = count, .groups = {groups}}, &n);
    kiln_ticket t = {0};
    if (r == KILN_OK)
        r = kiln_scheme_submit(ctx, s, &t);
    if (r == KILN_OK)
        r = kiln_ticket_wait(ctx, t, UINT64_MAX);
    kiln_result d = kiln_scheme_destroy(ctx, s);
    return r < 0 ? r : d;
}

/* The sgd kernel with workgroups of `wg` invocations: every element is
 * computed (by a workgroup of that size) and right. */
static void sgd_run(kiln_context ctx, uint32_t wg, uint32_t passes, float rate, bool clamp)
{
    kiln_spec_constant c[] = {{0, wg}, {1, passes}, {2, fbits(rate)}, {3, clamp}};
    kiln_program p;
    REQUIRE_OK(make(ctx, k_sgd, "sgd_step.comp", c, 4, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.workgroup_size[0], wg);
    CHECK_EQ(it.workgroup_size[1], 1);
    static float theta[N], grad[N];
    static uint32_t seen[N];
    for (uint32_t i = 0; i < N; i++) {
        theta[i] = theta0(i);
        grad[i] = grad0(i);
        seen[i] = 0;
    }
    kiln_buffer b[3];
    for (int i = 0; i < 3; i++)
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &b[i]));
    REQUIRE_OK(kiln_buffer_upload(ctx, b[0], 0, theta, sizeof theta));
    REQUIRE_OK(kiln_buffer_upload(ctx, b[1], 0, grad, sizeof grad));
    REQUIRE_OK(kiln_buffer_upload(ctx, b[2], 0, seen, sizeof seen));
    CHECK_OK(run_node(ctx, p, b, 3, N / wg));
    CHECK_OK(kiln_buffer_readback(ctx, b[0], 0, theta, sizeof theta));
    CHECK_OK(kiln_buffer_readback(ctx, b[2], 0, seen, sizeof seen));
    int bad = 0, unseen = 0;
    for (uint32_t i = 0; i < N; i++) {
        float want = sgd_cpu(i, passes, rate, clamp);
        bad += fabsf(theta[i] - want) > 1e-5f * fmaxf(1.0f, fabsf(want));
        unseen += seen[i] != wg * 65536u + i % wg;
    }
    if (bad || unseen)
        fprintf(stderr, "wg %u: %d wrong, %d not computed by a workgroup of %u (theta[1] %g, want %g)\n", wg, bad,
                unseen, wg, (double)theta[1], (double)sgd_cpu(1, passes, rate, clamp));
    CHECK_EQ(bad, 0);
    CHECK_EQ(unseen, 0);
    for (int i = 0; i < 3; i++)
        CHECK_OK(kiln_buffer_destroy(ctx, b[i]));
    CHECK_OK(kiln_program_destroy(ctx, p));
}

TEST(workgroup_size_loop_bound_rate_and_bool_set_by_constants)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    sgd_run(ctx, 64, 3, 0.125f, false);
    sgd_run(ctx, 256, 5, 0.0625f, false);
    sgd_run(ctx, 256, 5, 0.0625f, true);   /* the bool takes the other path */
    sgd_run(ctx, 1, 2, 0.5f, true);
    test_context_done(ctx);
}

/* A reduction through shared memory whose size is the workgroup's: one id
 * sizes both (local_size_x_id = 0 and constant_id = 0), as kernel
 * libraries write it. Their defaults differ (1 and 32); the interface
 * lists both. */
static const char *k_tile_sum = "#version 450\n"
                                "layout(local_size_x_id = 0) in;\n"
                                "layout(constant_id = 0) const uint BLOCK_SIZE = 32;\n"
                                "\n"
                                "shared uint partial[BLOCK_SIZE];\n"
                                "\n"
                                "layout(std430, binding = 0) readonly buffer In { uint data[]; };\n"
                                "layout(std430, binding = 1) writeonly buffer Out { uint sums[]; };\n"
                                "\n"
                                "void main() {\n"
                                "    uint l = gl_LocalInvocationID.x;\n"
                                "    partial[l] = data[gl_GlobalInvocationID.x];\n"
                                "    barrier();\n"
                                "    for (uint s = BLOCK_SIZE / 2u; s > 0u; s >>= 1u) {\n"
                                "        if (l < s)\n"
                                "            partial[l] += partial[l + s];\n"
                                "        barrier();\n"
                                "    }\n"
                                "    if (l == 0u)\n"
                                "        sums[gl_WorkGroupID.x] = partial[0];\n"
                                "}\n";

static uint32_t datum(uint32_t i) { return (i * 2654435761u) >> 22; }

TEST(one_id_sizes_the_workgroup_and_a_shared_array)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    static uint32_t in[N], out[N];
    for (uint32_t i = 0; i < N; i++)
        in[i] = datum(i);
    kiln_buffer b[2];
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &b[0]));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &b[1]));
    REQUIRE_OK(kiln_buffer_upload(ctx, b[0], 0, in, sizeof in));
    static const uint32_t sizes[] = {64, 256};
    for (int k = 0; k < 2; k++) {
        uint32_t wg = sizes[k];
        kiln_program p;
        REQUIRE_OK(make(ctx, k_tile_sum, "tile_sum.comp", (kiln_spec_constant[]){{0, wg}}, 1, &p));
        kiln_program_interface it;
        REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
        CHECK_EQ(it.workgroup_size[0], wg);
        REQUIRE(it.constant_count == 2);
        /* (id, axis) order: the named constant, then the workgroup's x. */
        CHECK(!strcmp(it.constants[0].name, "BLOCK_SIZE"));
        CHECK_EQ(it.constants[0].workgroup_axis, 0);
        CHECK_EQ(it.constants[0].default_value, 32);
        CHECK(!strcmp(it.constants[1].name, "local_size_x"));
        CHECK_EQ(it.constants[1].workgroup_axis, 1);
        CHECK_EQ(it.constants[1].default_value, 1);
        for (int e = 0; e < 2; e++) {
            CHECK_EQ(it.constants[e].id, 0);
            CHECK_EQ(it.constants[e].type, KILN_SCALAR_UINT);
            CHECK_EQ(it.constants[e].value, wg);
            CHECK_EQ(it.constants[e].set, 1);
            CHECK_EQ(it.constants[e].used, 1);
        }
        memset(out, 0xff, sizeof out);
        REQUIRE_OK(kiln_buffer_upload(ctx, b[1], 0, out, sizeof out));
        CHECK_OK(run_node(ctx, p, b, 2, N / wg));
        CHECK_OK(kiln_buffer_readback(ctx, b[1], 0, out, sizeof out));
        int bad = 0;
        for (uint32_t g = 0; g < N / wg; g++) {
            uint32_t want = 0;
            for (uint32_t i = 0; i < wg; i++)
                want += in[g * wg + i];
            bad += out[g] != want;
        }
        CHECK_EQ(bad, 0);
        CHECK_EQ(out[N / wg], 0xffffffffu);   /* nothing past the groups run */
        CHECK_OK(kiln_program_destroy(ctx, p));
    }
    CHECK_OK(kiln_buffer_destroy(ctx, b[0]));
    CHECK_OK(kiln_buffer_destroy(ctx, b[1]));
    test_context_done(ctx);
}

/* A cache in shared memory sized by a constant: the device's limit is
 * checked against the size the constant sets (16 vec4 per row). */
static const char *k_rows = "#version 450\n"
                            "layout(local_size_x = 64) in;\n"
                            "layout(constant_id = 0) const uint ROWS = 1;\n"
                            "shared vec4 cache[ROWS * 16u + 0u];\n"
                            "layout(std430, binding = 0) buffer X { vec4 x[]; };\n"
                            "void main() {\n"
                            "    uint l = gl_LocalInvocationID.x;\n"
                            "    cache[l % (ROWS * 16u)] = x[gl_GlobalInvocationID.x];\n"
                            "    barrier();\n"
                            "    x[gl_GlobalInvocationID.x] = cache[(l + 1u) % (ROWS * 16u)];\n"
                            "}\n";

TEST(the_shared_memory_limit_sees_the_constants_size)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    uint32_t fit = caps.max_shared_memory_size / 256u;   /* rows that fit */
    kiln_program p;
    CHECK_OK(make(ctx, k_rows, "rows.comp", NULL, 0, &p));   /* the default: 256 bytes */
    CHECK_OK(kiln_program_destroy(ctx, p));
    CHECK_OK(make(ctx, k_rows, "rows.comp", (kiln_spec_constant[]){{0, fit}}, 1, &p));
    CHECK_OK(kiln_program_destroy(ctx, p));
    CHECK_RESULT(make(ctx, k_rows, "rows.comp", (kiln_spec_constant[]){{0, fit + 1}}, 1, &p), KILN_ERR_LIMIT);
    char want[160];
    snprintf(want, sizeof want, "it uses %u bytes of shared memory; the device allows %u", (fit + 1) * 256u,
             caps.max_shared_memory_size);
    CHECK_MSG(want);
    CHECK_MSG("rows.comp");
    CHECK_OK(kiln_program_destroy(ctx, p));
    /* And a workgroup size past the device's, through local_size_x_id. */
    CHECK_RESULT(make(ctx, k_sgd, "sgd_step.comp", (kiln_spec_constant[]){{0, caps.max_workgroup_size[0] + 1}}, 1, &p),
                 KILN_ERR_LIMIT);
    CHECK_MSG("local_size_x = ");
    CHECK_OK(kiln_program_destroy(ctx, p));
    test_context_done(ctx);
}

TEST(a_wrong_id_or_a_value_its_type_cannot_hold_is_refused_by_name)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    CHECK_RESULT(make(ctx, k_sgd, "sgd_step.comp", (kiln_spec_constant[]){{1, 4}, {9, 1}}, 2, &p), KILN_ERR_INVALID);
    CHECK_MSG("sgd_step.comp");
    CHECK_MSG("specialization constant id 9 (set to 0x1) is not declared by the shader");
    CHECK_MSG("1 'PASSES', 2 'LEARNING_RATE', 3 'CLAMP'");
    kiln_program_interface it;
    CHECK_RESULT(kiln_program_interface_get(ctx, p, &it), KILN_ERR_INVALID);
    CHECK_OK(kiln_program_destroy(ctx, p));
    CHECK_RESULT(make(ctx, k_sgd, "sgd_step.comp", (kiln_spec_constant[]){{3, 2}}, 1, &p), KILN_ERR_INVALID);
    CHECK_MSG("specialization constant 'CLAMP' (id 3) is a bool: 2 is neither 0 (false) nor 1 (true)");
    CHECK_OK(kiln_program_destroy(ctx, p));
    CHECK_RESULT(make(ctx, k_sgd, "sgd_step.comp", (kiln_spec_constant[]){{0, 0}}, 1, &p), KILN_ERR_INVALID);
    CHECK_MSG("'local_size_x' (id 0) sizes the workgroup in x: 0 invocations is no workgroup");
    CHECK_OK(kiln_program_destroy(ctx, p));
    /* Refused at create: an id given twice, a count without an array. */
    CHECK_RESULT(kiln_program_create(ctx,
                                     &(kiln_program_desc){.source = k_sgd,
                                                          .constants = (kiln_spec_constant[]){{1, 2}, {1, 3}},
                                                          .constant_count = 2},
                                     &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("specialization constant id 1 is set twice");
    CHECK_RESULT(kiln_program_create(ctx, &(kiln_program_desc){.source = k_sgd, .constant_count = 1}, &p),
                 KILN_ERR_INVALID);
    CHECK_MSG("constant_count is 1 but constants is NULL");
    /* A program whose source does not compile fails as a compile, with
     * constants or not. */
    CHECK_RESULT(make(ctx, "#version 450\nvoid main() { nope; }\n", "broken.comp", (kiln_spec_constant[]){{0, 1}}, 1,
                      &p),
                 KILN_ERR_COMPILE);
    CHECK_MSG("broken.comp");
    CHECK_OK(kiln_program_destroy(ctx, p));
    test_context_done(ctx);
}

/* Constants of 8-, 16- and 64-bit types: listed with their defaults;
 * 16-bit ones set when the word fits, 64-bit ones refused (a word cannot
 * carry their value). On the mock backend: a device need not support these
 * types for kiln to list and check them, and the mock records the values
 * each pipeline was made with. */
static const char *k_widths = "#version 450\n"
                              "#extension GL_EXT_shader_explicit_arithmetic_types : require\n"
                              "layout(local_size_x_id = 6, local_size_y_id = 7) in;\n"
                              "layout(constant_id = 0) const int16_t OFFSET = -7s;\n"
                              "layout(constant_id = 1) const uint16_t COUNT = 9us;\n"
                              "layout(constant_id = 2) const float16_t SCALE = 0.5hf;\n"
                              "layout(constant_id = 3) const double BIAS = 2.25lf;\n"
                              "layout(constant_id = 4) const int64_t BASE = -3l;\n"
                              "layout(constant_id = 5) const bool ON = true;\n"
                              "layout(constant_id = 8) const float UNUSED = 1.0;\n"
                              "layout(std430, binding = 0) buffer O { float o[]; };\n"
                              "void main() {\n"
                              "    if (ON)\n"
                              "        o[gl_LocalInvocationIndex] = float(OFFSET) + float(COUNT) + float(SCALE) +\n"
                              "                                     float(BIAS) + float(BASE);\n"
                              "}\n";

static const kiln_spec_constant_info *find(const kiln_program_interface *it, const char *name)
{
    for (uint32_t i = 0; i < it->constant_count; i++)
        if (!strcmp(it->constants[i].name, name))
            return &it->constants[i];
    return NULL;
}

/* Submits prog once on the mock; the constants its dispatch's pipeline was
 * made with (-1: no dispatch seen). */
static int dispatched_spec(kiln_context ctx, struct kb_device *dev, kiln_program prog, kiln_buffer b,
                           struct kb_spec spec[KILN_MAX_SPEC_CONSTANTS])
{
    kiln_scheme s;
    kiln_node n;
    int count = -1;
    struct kb_step step;
    CHECK_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = prog, .bindings = &(kiln_binding){.buffer = b},
                                                            .binding_count = 1, .groups = {1}},
                                  &n));
    CHECK_OK(kiln_scheme_submit(ctx, s, NULL));
    if (mockb_last_dispatch(dev, 0, &step))
        count = (int)mockb_pipeline_spec(step.pipeline, spec, KILN_MAX_SPEC_CONSTANTS);
    CHECK_OK(kiln_scheme_destroy(ctx, s));
    return count;
}

TEST(every_width_is_listed_and_checked_and_the_mock_records_the_values)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .specialization = -1}, &ctx));
    struct kb_device *dev = ctx_device(api_context_peek(ctx));
    kiln_program p;
    REQUIRE_OK(make(ctx, k_widths, "widths.comp",
                    (kiln_spec_constant[]){{0, (uint32_t)-5}, {2, 0x3c00}, {6, 8}, {7, 4}, {8, 7}}, 5, &p));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.constant_count, 9);
    CHECK_EQ(it.workgroup_size[0], 8);
    CHECK_EQ(it.workgroup_size[1], 4);
    CHECK_EQ(it.workgroup_size[2], 1);
    const kiln_spec_constant_info *c;
    REQUIRE((c = find(&it, "OFFSET")));
    CHECK(c->type == KILN_SCALAR_INT16 && c->default_value == 0xfff9 && c->value == 0xfffb && c->set && c->used);
    REQUIRE((c = find(&it, "COUNT")));
    CHECK(c->type == KILN_SCALAR_UINT16 && c->default_value == 9 && c->value == 9 && !c->set);
    REQUIRE((c = find(&it, "SCALE")));
    CHECK(c->type == KILN_SCALAR_FLOAT16 && c->default_value == 0x3800 && c->value == 0x3c00 && c->set);
    REQUIRE((c = find(&it, "BIAS")));
    double d = 2.25;
    uint64_t dbits;
    memcpy(&dbits, &d, 8);
    CHECK(c->type == KILN_SCALAR_DOUBLE && c->default_value == dbits && !c->set);
    REQUIRE((c = find(&it, "BASE")));
    CHECK(c->type == KILN_SCALAR_INT64 && c->default_value == (uint64_t)-3 && !c->set);
    REQUIRE((c = find(&it, "ON")));
    CHECK(c->type == KILN_SCALAR_BOOL && c->default_value == 1 && c->id == 5);
    REQUIRE((c = find(&it, "UNUSED")));   /* dropped by the optimizer, listed all the same */
    CHECK(c->type == KILN_SCALAR_FLOAT && c->default_value == fbits(1.0f) && c->value == 7 && c->set && !c->used);
    REQUIRE((c = find(&it, "local_size_y")));
    CHECK(c->id == 7 && c->workgroup_axis == 2 && c->value == 4);

    /* What the pipeline was made with: each value set, at its type's size. */
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &b));
    struct kb_spec spec[KILN_MAX_SPEC_CONSTANTS];
    int n = dispatched_spec(ctx, dev, p, b, spec);
    REQUIRE(n == 5);
    static const struct kb_spec want[] = {{0, 2, 0xfffb}, {2, 2, 0x3c00}, {6, 4, 8}, {7, 4, 4}, {8, 4, 7}};
    for (int i = 0; i < n; i++)
        CHECK(spec[i].id == want[i].id && spec[i].size == want[i].size && spec[i].value == want[i].value);
    CHECK_OK(kiln_buffer_destroy(ctx, b));
    CHECK_OK(kiln_program_destroy(ctx, p));

    /* A program without constants is made with none. */
    REQUIRE_OK(make(ctx, k_widths, "widths.comp", NULL, 0, &p));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 256}, &b));
    CHECK_EQ(dispatched_spec(ctx, dev, p, b, spec), 0);
    CHECK_OK(kiln_program_interface_get(ctx, p, &it));
    CHECK_EQ(it.workgroup_size[0], 1);   /* local_size_x_id's default */
    CHECK_OK(kiln_buffer_destroy(ctx, b));
    CHECK_OK(kiln_program_destroy(ctx, p));

    static const struct {
        kiln_spec_constant c;
        const char *msg;
    } refused[] = {
        {{0, 40000}, "'OFFSET' (id 0) is an int16: 40000 (0x9c40) is outside -32768..32767"},
        {{0, 0xfffb}, "'OFFSET' (id 0) is an int16: 65531 (0xfffb) is outside -32768..32767"},
        {{1, 70000}, "'COUNT' (id 1) is a uint16: 70000 is past 65535"},
        {{2, 0x3f000000}, "'SCALE' (id 2) is a float16: the word 0x3f000000 holds more than its 16 bits"},
        {{3, 1}, "'BIAS' (id 3) is a 64-bit double: kiln sets constants of at most 32 bits"},
        {{4, 1}, "'BASE' (id 4) is a 64-bit int64"},
        {{5, 7}, "'ON' (id 5) is a bool: 7 is neither 0 (false) nor 1 (true)"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK_RESULT(make(ctx, k_widths, "widths.comp", &refused[i].c, 1, &p), KILN_ERR_INVALID);
        CHECK_MSG(refused[i].msg);
        CHECK_OK(kiln_program_destroy(ctx, p));
    }
    test_context_done(ctx);
}

TEST(programs_differing_only_in_constants_share_one_front_end)
{
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_context_stats st0, st;
    REQUIRE_OK(kiln_context_stats_get(ctx, &st0));
    kiln_program a, b, a2, plain;
    kiln_spec_constant ca[] = {{0, 64}, {1, 3}, {2, fbits(0.125f)}};
    kiln_spec_constant cb[] = {{0, 256}, {1, 3}, {2, fbits(0.125f)}};
    kiln_spec_constant ca2[] = {{2, fbits(0.125f)}, {0, 64}, {1, 3}};   /* a's, in another order */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_sgd, .name = "a.comp", .constants = ca,
                                                             .constant_count = 3},
                                   &a));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_sgd, .name = "b.comp", .constants = cb,
                                                             .constant_count = 3},
                                   &b));
    CHECK_OK(kiln_program_wait(ctx, a));
    CHECK_OK(kiln_program_wait(ctx, b));
    REQUIRE_OK(kiln_context_stats_get(ctx, &st));
    CHECK_EQ(st.compile_requests - st0.compile_requests, 2);
    CHECK_EQ(st.compiles_started - st0.compiles_started, 3);   /* one front end, a back end per set */
    CHECK_EQ(st.compiles_adopted + st.compiles_deduplicated - st0.compiles_adopted - st0.compiles_deduplicated, 1);
    /* The same set again, in another order: nothing compiles. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_sgd, .name = "a2.comp", .constants = ca2,
                                                             .constant_count = 3},
                                   &a2));
    CHECK_OK(kiln_program_wait(ctx, a2));
    /* The program without constants: the same front end, its own back end. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_sgd, .name = "plain.comp"}, &plain));
    CHECK_OK(kiln_program_wait(ctx, plain));
    REQUIRE_OK(kiln_context_stats_get(ctx, &st));
    CHECK_EQ(st.compile_requests - st0.compile_requests, 4);
    CHECK_EQ(st.compiles_started - st0.compiles_started, 4);
    kiln_program_interface ia, ib, ia2, ip;
    CHECK_OK(kiln_program_interface_get(ctx, a, &ia));
    CHECK_OK(kiln_program_interface_get(ctx, b, &ib));
    CHECK_OK(kiln_program_interface_get(ctx, a2, &ia2));
    CHECK_OK(kiln_program_interface_get(ctx, plain, &ip));
    CHECK_EQ(ia.workgroup_size[0], 64);
    CHECK_EQ(ib.workgroup_size[0], 256);
    CHECK(!memcmp(&ia, &ia2, sizeof ia));
    CHECK_EQ(ip.workgroup_size[0], 1);
    CHECK_EQ(ip.constants[0].set, 0);
    CHECK_EQ(ip.constants[0].value, 1);
    CHECK_OK(kiln_program_destroy(ctx, a));
    CHECK_OK(kiln_program_destroy(ctx, b));
    CHECK_OK(kiln_program_destroy(ctx, a2));
    CHECK_OK(kiln_program_destroy(ctx, plain));
    test_context_done(ctx);
}

/* Counts lines of `path` that hold `needle`. */
static int count_lines(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    char line[4096];
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    if (f)
        fclose(f);
    return n;
}

/* KILN_LOG=info (set by main): each constant left at its default is named
 * once, when the program is ready, however often it is then used. */
TEST(constants_left_at_their_defaults_are_said_once)
{
    char path[] = "/tmp/kiln-spec-log-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    kiln_context ctx;
    kiln_result r = test_context(&ctx);
    if (r == KILN_OK) {
        kiln_program p;
        /* PASSES, LEARNING_RATE and CLAMP left at their defaults. */
        CHECK_OK(make(ctx, k_sgd, "particle.comp", (kiln_spec_constant[]){{0, 64}}, 1, &p));
        kiln_program_interface it;
        kiln_program_state state;
        for (int i = 0; i < 3; i++) {
            CHECK_OK(kiln_program_interface_get(ctx, p, &it));
            CHECK_OK(kiln_program_status(ctx, p, &state));
            CHECK_OK(kiln_program_wait(ctx, p));
        }
        CHECK_OK(kiln_program_destroy(ctx, p));
        test_context_done(ctx);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    REQUIRE_OK(r);
    CHECK_EQ(count_lines(path, "program particle.comp: specialization constant 'PASSES' (id 1) left at its default 1"),
             1);
    CHECK_EQ(count_lines(path, "program particle.comp: specialization constant 'LEARNING_RATE' (id 2) left at its "
                               "default 0"),
             1);
    CHECK_EQ(count_lines(path, "program particle.comp: specialization constant 'CLAMP' (id 3) left at its default "
                               "false"),
             1);
    CHECK_EQ(count_lines(path, "left at its default"), 3);   /* the workgroup size was set */
    unlink(path);
}

/* An archive keeps one front end for the source and a pipeline per set of
 * constants; a later context takes the front end (and, where the driver's
 * pipeline caches keep compiled code, each pipeline) from it, compiles no
 * SPIR-V, and the programs compute right. On the Vulkan device, then on the
 * mock as a driver whose caches keep code. */
static void archive_round(kiln_backend_kind backend, const char *dir, int round, int *keeps)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = backend, .specialization = -1}, &ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    *keeps = caps.pipeline_cache_keeps_code;
    kiln_archive_info ai;
    REQUIRE_OK(kiln_archive_info_get(ctx, &ai));
    CHECK(ai.enabled && !strncmp(ai.dir, dir, strlen(dir)));
    kiln_program p[2];
    static const uint32_t wg[2] = {64, 256};
    for (int i = 0; i < 2; i++)
        REQUIRE_OK(make(ctx, k_tile_sum, "tile_sum.comp", (kiln_spec_constant[]){{0, wg[i]}}, 1, &p[i]));
    kiln_context_stats st;
    REQUIRE_OK(kiln_context_stats_get(ctx, &st));
    if (round == 0) {
        CHECK_EQ(st.archive_added, 1);
        CHECK_EQ(st.archive_pipelines_added, *keeps ? 2 : 0);
        CHECK_EQ(st.compiles_started, 3);
    } else {
        CHECK_EQ(st.archive_hits, 1);
        CHECK(st.front_end_seconds == 0.0);   /* no SPIR-V compiled */
        CHECK_EQ(st.archive_added, 0);
        CHECK_EQ(st.archive_pipeline_hits, *keeps ? 2 : 0);
        CHECK_EQ(st.archive_pipelines_added, 0);
        if (backend == KILN_BACKEND_MOCK) {
            struct mock_counts mc = mockb_counts(ctx_device(api_context_peek(ctx)));
            CHECK_EQ(mc.pipelines_created, 0);   /* every pipeline from the archive */
            CHECK_EQ(mc.pipelines_from_cache, 2);
        }
    }
    for (int i = 0; i < 2; i++) {
        kiln_program_interface it;
        CHECK_OK(kiln_program_interface_get(ctx, p[i], &it));
        CHECK_EQ(it.workgroup_size[0], wg[i]);
        CHECK_EQ(it.constants[1].value, wg[i]);
    }
    if (backend != KILN_BACKEND_MOCK) {
        static uint32_t in[N], out[N];
        for (uint32_t i = 0; i < N; i++)
            in[i] = datum(i);
        kiln_buffer b[2];
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &b[0]));
        REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = N * 4}, &b[1]));
        REQUIRE_OK(kiln_buffer_upload(ctx, b[0], 0, in, sizeof in));
        for (int k = 0; k < 2; k++) {
            CHECK_OK(run_node(ctx, p[k], b, 2, N / wg[k]));
            CHECK_OK(kiln_buffer_readback(ctx, b[1], 0, out, sizeof out));
            int bad = 0;
            for (uint32_t g = 0; g < N / wg[k]; g++) {
                uint32_t want = 0;
                for (uint32_t i = 0; i < wg[k]; i++)
                    want += in[g * wg[k] + i];
                bad += out[g] != want;
            }
            CHECK_EQ(bad, 0);
        }
        CHECK_OK(kiln_buffer_destroy(ctx, b[0]));
        CHECK_OK(kiln_buffer_destroy(ctx, b[1]));
    }
    for (int i = 0; i < 2; i++)
        CHECK_OK(kiln_program_destroy(ctx, p[i]));
    test_context_done(ctx);
}

TEST(an_archive_keeps_a_pipeline_per_set_of_constants)
{
    char root[] = "/tmp/kiln-spec-arc-XXXXXX";
    REQUIRE(mkdtemp(root));
    setenv("KILN_ARCHIVE", "1", 1);
    static const kiln_backend_kind backends[] = {KILN_BACKEND_VULKAN, KILN_BACKEND_MOCK};
    for (int k = 0; k < 2; k++) {
        char dir[128];
        snprintf(dir, sizeof dir, "%s/%d", root, k);
        setenv("KILN_ARCHIVE_DIR", dir, 1);
        if (backends[k] == KILN_BACKEND_MOCK)
            mockb_keep_compiled_code(true);
        int keeps = 0;
        archive_round(backends[k], dir, 0, &keeps);
        archive_round(backends[k], dir, 1, &keeps);
        if (backends[k] == KILN_BACKEND_MOCK)
            CHECK_EQ(keeps, 1);
        mockb_keep_compiled_code(false);
    }
    setenv("KILN_ARCHIVE", "0", 1);
    unsetenv("KILN_ARCHIVE_DIR");
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK_EQ(system(cmd), 0);
}

/* The predictor bakes a node's param words into variants of its program:
 * a variant keeps the program's constants, so every frame computes what
 * the universal program computes (KILN_SPEC_VERIFY=1 compares them at each
 * promotion too). With kiln's params (variants from GLSL) and with the
 * shader's own push block (variants at the SPIR-V level). */
static const char *k_scale_kiln = "#version 450\n"
                                  "layout(local_size_x_id = 0) in;\n"
                                  "layout(constant_id = 1) const uint MUL = 1;\n"
                                  "layout(constant_id = 2) const bool TWICE = false;\n"
                                  "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                                  "void main() {\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    uint v = x[i] * MUL + kiln_param(0);\n"
                                  "    for (uint k = 0u; k < kiln_param(1); k++) v = v * 3u + 1u;\n"
                                  "    if (TWICE) v *= 2u;\n"
                                  "    x[i] = v;\n"
                                  "}\n";
static const char *k_scale_own = "#version 450\n"
                                 "layout(local_size_x_id = 0) in;\n"
                                 "layout(constant_id = 1) const uint MUL = 1;\n"
                                 "layout(constant_id = 2) const bool TWICE = false;\n"
                                 "layout(push_constant) uniform Push { uint add; uint loops; } pc;\n"
                                 "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                                 "void main() {\n"
                                 "    uint i = gl_GlobalInvocationID.x;\n"
                                 "    uint v = x[i] * MUL + pc.add;\n"
                                 "    for (uint k = 0u; k < pc.loops; k++) v = v * 3u + 1u;\n"
                                 "    if (TWICE) v *= 2u;\n"
                                 "    x[i] = v;\n"
                                 "}\n";

static void predictor_keeps(const char *src, const char *name)
{
    setenv("KILN_SPEC_VERIFY", "1", 1);
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = 1}, &ctx));
    kiln_program p;
    REQUIRE_OK(make(ctx, src, name, (kiln_spec_constant[]){{0, 128}, {1, 5}, {2, 1}}, 3, &p));
    enum { M = 1024 };
    kiln_buffer b;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = M * 4}, &b));
    static uint32_t want[M], got[M];
    for (uint32_t i = 0; i < M; i++)
        want[i] = i;
    REQUIRE_OK(kiln_buffer_upload(ctx, b, 0, want, sizeof want));
    kiln_scheme s;
    kiln_node node;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    const uint32_t params[2] = {7, 2};
    REQUIRE_OK(kiln_scheme_add_node(ctx, s,
                                    &(kiln_node_desc){.program = p,
                                                      .bindings = &(kiln_binding){.binding = 0, .buffer = b},
                                                      .binding_count = 1, .groups = {M / 128}, .params = params,
                                                      .param_count = 2},
                                    &node));
    int bad_frames = 0;
    for (int frame = 0; frame < 40; frame++) {
        kiln_ticket t;
        CHECK_OK(kiln_scheme_submit(ctx, s, &t));
        for (uint32_t i = 0; i < M; i++) {
            uint32_t v = want[i] * 5u + params[0];
            for (uint32_t k = 0; k < params[1]; k++)
                v = v * 3u + 1u;
            want[i] = v * 2u;
        }
        CHECK_OK(kiln_buffer_readback(ctx, b, 0, got, sizeof got));
        bad_frames += memcmp(got, want, sizeof got) != 0;
        uint32_t pending = 1;
        for (int w = 0; w < 5000 && pending; w++) {
            CHECK_OK(kiln_compiles_pending(ctx, &pending));
            if (pending)
                nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
        }
    }
    CHECK_EQ(bad_frames, 0);
    /* It ran a variant (which may since have gone back to the universal
     * program: on lavapipe a variant is not always faster). */
    kiln_scheme_stats st;
    CHECK_OK(kiln_scheme_stats_get(ctx, s, &st));
    CHECK(st.spec_promotions >= 1);
    CHECK_EQ(st.spec_pinned, 0);
    CHECK_OK(kiln_scheme_destroy(ctx, s));
    CHECK_OK(kiln_buffer_destroy(ctx, b));
    CHECK_OK(kiln_program_destroy(ctx, p));
    unsetenv("KILN_SPEC_VERIFY");
    test_context_done(ctx);
}

TEST(the_predictors_variants_keep_the_constants)
{
    predictor_keeps(k_scale_kiln, "scale_kiln.comp");
    predictor_keeps(k_scale_own, "scale_own.comp");
}

/* A block whose array a constant sizes (`uint counts[LEVELS + 1]`) needs
 * the bytes the value set makes it: a buffer that size is taken, one too
 * small for it refused, whatever the default says. */
static const char *k_levels = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(constant_id = 0) const uint LEVELS = 4;\n"
                              "layout(std430, binding = 0) buffer Stats { uint total; uint counts[LEVELS + 1]; };\n"
                              "void main() {\n"
                              "    atomicAdd(counts[gl_GlobalInvocationID.x % (LEVELS + 1u)], 1u);\n"
                              "    atomicAdd(total, 1u);\n"
                              "}\n";

TEST(a_block_sized_by_a_constant_needs_the_bytes_its_value_makes)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program dflt, two, seven;
    REQUIRE_OK(make(ctx, k_levels, "levels.comp", NULL, 0, &dflt));
    REQUIRE_OK(make(ctx, k_levels, "levels.comp", (kiln_spec_constant[]){{0, 2}}, 1, &two));
    REQUIRE_OK(make(ctx, k_levels, "levels.comp", (kiln_spec_constant[]){{0, 7}}, 1, &seven));
    kiln_program_interface it;
    REQUIRE_OK(kiln_program_interface_get(ctx, dflt, &it));
    CHECK_EQ(it.bindings[0].min_size, 4 + 5 * 4);
    REQUIRE_OK(kiln_program_interface_get(ctx, two, &it));
    CHECK_EQ(it.bindings[0].min_size, 4 + 3 * 4);
    REQUIRE_OK(kiln_program_interface_get(ctx, seven, &it));
    CHECK_EQ(it.bindings[0].min_size, 4 + 8 * 4);
    kiln_buffer small, big;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16}, &small));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 36}, &big));
    CHECK_OK(run_node(ctx, two, &small, 1, 4));           /* 16 bytes are what 2 levels need */
    uint32_t got[9];
    REQUIRE_OK(kiln_buffer_readback(ctx, small, 0, got, 16));
    CHECK(got[0] == 256 && got[1] == 86 && got[2] == 85 && got[3] == 85);
    kiln_scheme s;
    kiln_node n;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s,
                                      &(kiln_node_desc){.program = seven, .bindings = &(kiln_binding){.buffer = small},
                                                        .binding_count = 1, .groups = {4}},
                                      &n)),
                 KILN_ERR_LAYOUT);   /* 7 levels need 36 */
    CHECK_MSG("needs at least 36 bytes, 16 are bound");
    CHECK_OK(run_node(ctx, seven, &big, 1, 4));
    REQUIRE_OK(kiln_buffer_readback(ctx, big, 0, got, 36));
    CHECK_EQ(got[0], 256);
    for (int k = 0; k < 8; k++)
        CHECK_EQ(got[1 + k], 32);
    test_context_done(ctx);
}

/* A shader whose own push block holds a buffer reference (a 64-bit
 * address, two param words) compiles where the device has
 * bufferDeviceAddress, and is refused naming the feature where not. */
TEST(a_shader_using_buffer_addresses_compiles_where_the_device_has_them)
{
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(ctx, &caps));
    static const char src[] = "#version 450\n"
                              "#extension GL_EXT_buffer_reference : require\n"
                              "layout(local_size_x = 1) in;\n"
                              "layout(buffer_reference, std430) buffer Verts { float v[]; };\n"
                              "layout(push_constant) uniform P { Verts verts; };\n"
                              "void main() { verts.v[0] = 1.0; }\n";
    kiln_program p;
    if (caps.shader_features & KILN_FEATURE_DEVICE_ADDRESS) {
        REQUIRE_OK(make(ctx, src, "bda.comp", NULL, 0, &p));
        kiln_program_interface it;
        REQUIRE_OK(kiln_program_interface_get(ctx, p, &it));
        CHECK_EQ(it.param_words, 2);
        CHECK_EQ(it.push_float_words, 0);   /* an address is no float */
    } else {
        CHECK_RESULT(make(ctx, src, "bda.comp", NULL, 0, &p), KILN_ERR_LIMIT);
        CHECK_MSG("which needs bufferDeviceAddress");
    }
    test_context_done(ctx);
}

int main(void)
{
    setenv("KILN_LOG", "info", 1);   /* read once, at the first log line */
    RUN(workgroup_size_loop_bound_rate_and_bool_set_by_constants);
    RUN(one_id_sizes_the_workgroup_and_a_shared_array);
    RUN(the_shared_memory_limit_sees_the_constants_size);
    RUN(a_wrong_id_or_a_value_its_type_cannot_hold_is_refused_by_name);
    RUN(every_width_is_listed_and_checked_and_the_mock_records_the_values);
    RUN(programs_differing_only_in_constants_share_one_front_end);
    RUN(constants_left_at_their_defaults_are_said_once);
    RUN(an_archive_keeps_a_pipeline_per_set_of_constants);
    RUN(the_predictors_variants_keep_the_constants);
    RUN(a_block_sized_by_a_constant_needs_the_bytes_its_value_makes);
    RUN(a_shader_using_buffer_addresses_compiles_where_the_device_has_them);
    return TEST_SUMMARY();
}
