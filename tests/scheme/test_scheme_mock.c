/* SPDX-License-Identifier: MIT */
/*
 * test_scheme_mock.c: scheme logic on the mock backend: what is recorded
 * and when (full, params-only, replay), where barriers go, that in-flight
 * command buffers are never re-recorded, handle misuse, busy objects.
 * Results of computations are checked on lavapipe (tests/vk), not here.
 */
#include "api/api.h"
#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "context/context_private.h"
#include "test.h"

static const char *k_rw = "#version 450\n"
                          "layout(local_size_x = 64) in;\n"
                          "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                          "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                          "void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] * kiln_param(0); }\n";

struct fixture {
    kiln_context ctx;
    struct kb_device *dev;
    kiln_program prog;
    kiln_buffer buf[4];
    kiln_scheme scheme;
};

static kiln_result setup(struct fixture *f)
{
    /* Specialization off: these tests count records (tests/specialize has its own). */
    KILN_TRY(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .specialization = -1}, &f->ctx));
    f->dev = ctx_device(api_context_peek(f->ctx));
    KILN_TRY(kiln_program_create(f->ctx, &(kiln_program_desc){.source = k_rw, .name = "rw.comp"}, &f->prog));
    KILN_TRY(kiln_program_wait(f->ctx, f->prog));   /* so that bad bindings are refused at add */
    for (int i = 0; i < 4; i++)
        KILN_TRY(kiln_buffer_create(f->ctx, &(kiln_buffer_desc){.size = 4096}, &f->buf[i]));
    return kiln_scheme_create(f->ctx, &(kiln_scheme_desc){.label = "test"}, &f->scheme);
}

/* A node reading buffer `in` and writing buffer `out` (optionally at byte offsets). */
static kiln_result add(struct fixture *f, int in, uint64_t in_off, int out, uint64_t out_off, kiln_node *n)
{
    kiln_binding b[2] = {{.binding = 0, .buffer = f->buf[in], .offset = in_off, .size = 1024},
                         {.binding = 1, .buffer = f->buf[out], .offset = out_off, .size = 1024}};
    return kiln_scheme_add_node(f->ctx, f->scheme,
                                &(kiln_node_desc){.program = f->prog, .bindings = b, .binding_count = 2, .groups = {4}},
                                n);
}

static kiln_scheme_stats stats(struct fixture *f)
{
    kiln_scheme_stats s = {0};
    if (kiln_scheme_stats_get(f->ctx, f->scheme, &s) != KILN_OK)
        fprintf(stderr, "stats: %s\n", kiln_last_error());
    return s;
}

static kiln_result submit(struct fixture *f)
{
    kiln_ticket t;
    return kiln_scheme_submit(f->ctx, f->scheme, &t);
}

TEST(clean_submits_replay_and_params_rerecord_without_topology)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n[3];
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n[0]));
    REQUIRE_OK(add(&f, 1, 0, 2, 0, &n[1]));
    REQUIRE_OK(add(&f, 2, 0, 3, 0, &n[2]));
    CHECK_OK(submit(&f));
    for (int i = 0; i < 5; i++)
        CHECK_OK(submit(&f));
    kiln_scheme_stats s = stats(&f);
    CHECK_EQ(s.submits, 6);
    CHECK_EQ(s.records_full, 1);
    CHECK_EQ(s.records_params, 0);
    CHECK_EQ(s.replays, 5);
    CHECK_EQ(mockb_counts(f.dev).records, 1);

    CHECK_OK(kiln_node_set_param(f.ctx, n[1], 0, 42));
    CHECK_OK(submit(&f));
    s = stats(&f);
    CHECK_EQ(s.records_full, 1);
    CHECK_EQ(s.records_params, 1);
    struct kb_step step;
    REQUIRE(mockb_last_dispatch(f.dev, 1, &step));
    CHECK_EQ(step.params[0], 42);

    /* The same word again is no change at all. */
    CHECK_OK(kiln_node_set_param(f.ctx, n[1], 0, 42));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).records_params, 1);
    CHECK_EQ(stats(&f).replays, 6);

    /* Many set_params between two submits make one params-only record. */
    for (uint32_t w = 0; w < 10; w++)
        CHECK_OK(kiln_node_set_param(f.ctx, n[w % 3], 0, w));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).records_params, 2);
    CHECK_EQ(stats(&f).records_full, 1);

    /* A node's words read back as set (desc words, then set_param), and a
     * removed node's handle is refused. */
    uint32_t words[KILN_PARAM_WORDS];
    CHECK_OK(kiln_node_set_param(f.ctx, n[2], 7, 0xdeadbeefu));
    uint32_t count = 0;
    CHECK_OK(kiln_node_get_params(f.ctx, n[2], words, KILN_PARAM_WORDS, &count));
    CHECK_EQ(count, KILN_PARAM_WORDS);
    CHECK_EQ(words[0], 8);   /* the last of the loop's words for n[2] (w = 8) */
    CHECK_EQ(words[7], 0xdeadbeefu);
    CHECK_EQ(words[3], 0);
    CHECK_RESULT(kiln_node_set_param(f.ctx, n[2], KILN_PARAM_WORDS, 1), KILN_ERR_INVALID);

    /* Structural: removing a node. */
    CHECK_OK(kiln_node_remove(f.ctx, n[1]));
    CHECK_RESULT(kiln_node_get_params(f.ctx, n[1], words, KILN_PARAM_WORDS, NULL), KILN_ERR_HANDLE);
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).records_full, 2);
    CHECK_EQ(stats(&f).nodes, 2);
    test_context_done(f.ctx);
}

TEST(barriers_follow_hazards)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n;
    /* 0: read b0 write b1; 1: read b0 write b2 (independent): no barrier. */
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    REQUIRE_OK(add(&f, 0, 0, 2, 0, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 0);
    /* 2: read b1 (written by 0): read-after-write. */
    REQUIRE_OK(add(&f, 1, 0, 3, 0, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 1);
    /* 3: write b1 after 2 read it: write-after-read. */
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 2);
    /* 4: write b1 again: write-after-write. */
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 3);
    /* 5: write a disjoint range of b1: no hazard. */
    REQUIRE_OK(add(&f, 0, 0, 1, 2048, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 3);
    /* 6: read an overlapping range of b1 [1024, 2048) overlaps [2048..)? no; [1536..2560) does. */
    REQUIRE_OK(add(&f, 1, 1536, 2, 2048, &n));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).barriers, 4);
    CHECK_EQ(mockb_counts(f.dev).barriers_recorded, 0 + 1 + 2 + 3 + 3 + 4);
    test_context_done(f.ctx);
}

TEST(in_flight_command_buffers_are_never_rerecorded)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n;
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    mockb_hold(f.dev, true);
    kiln_ticket t[6];
    CHECK_OK(kiln_scheme_submit(f.ctx, f.scheme, &t[0]));
    for (int i = 1; i < 6; i++) {
        CHECK_OK(kiln_node_set_param(f.ctx, n, 0, (uint32_t)i));
        CHECK_OK(kiln_scheme_submit(f.ctx, f.scheme, &t[i]));
    }
    /* Every record went to a command buffer not in flight: with all held,
     * the ring grows to its bound, then a record waits for the oldest. */
    kiln_scheme_stats s = stats(&f);
    CHECK_EQ(s.command_buffers, 4);
    CHECK_EQ(s.records_full + s.records_params, 6);
    CHECK(mockb_counts(f.dev).waits >= 2);
    mockb_release(f.dev);
    CHECK_OK(kiln_node_set_param(f.ctx, n, 0, 99));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).command_buffers, 4);
    mockb_hold(f.dev, false);
    CHECK_OK(kiln_ticket_wait(f.ctx, t[5], UINT64_MAX));
    CHECK_RESULT(kiln_ticket_wait(f.ctx, (kiln_ticket){1000}, 0), KILN_ERR_INVALID);
    test_context_done(f.ctx);
}

TEST(set_program_is_params_only_and_checks_the_interface)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n;
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    CHECK_OK(submit(&f));
    kiln_define bake = {"KILN_SPEC_MAIN_UW0", "3u"};
    kiln_program baked, other;
    REQUIRE_OK(kiln_program_create(f.ctx, &(kiln_program_desc){.source = k_rw, .defines = &bake, .define_count = 1},
                                   &baked));
    CHECK_OK(kiln_node_set_program(f.ctx, n, baked));
    CHECK_OK(submit(&f));
    CHECK_EQ(stats(&f).records_full, 1);
    CHECK_EQ(stats(&f).records_params, 1);

    /* A program whose binding 1 is read-write does not bind like it. */
    const char *rw2 = "#version 450\n"
                      "layout(local_size_x = 64) in;\n"
                      "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                      "layout(std430, binding = 1) buffer Out { uint b[]; };\n"
                      "void main() { b[0] += a[0]; }\n";
    REQUIRE_OK(kiln_program_create(f.ctx, &(kiln_program_desc){.source = rw2, .name = "rw2.comp"}, &other));
    CHECK_RESULT(kiln_node_set_program(f.ctx, n, other), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 1");
    /* A program needing more bytes than the node binds. */
    const char *big = "#version 450\n"
                      "layout(local_size_x = 64) in;\n"
                      "layout(std430, binding = 0) readonly buffer In { uint a[2048]; };\n"
                      "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                      "void main() { b[0] = a[2047]; }\n";
    kiln_program bigp;
    REQUIRE_OK(kiln_program_create(f.ctx, &(kiln_program_desc){.source = big, .name = "big.comp"}, &bigp));
    CHECK_RESULT(kiln_node_set_program(f.ctx, n, bigp), KILN_ERR_LAYOUT);
    CHECK_MSG("8192 bytes");
    /* Busy objects are not destroyed under a node. */
    CHECK_RESULT(kiln_program_destroy(f.ctx, baked), KILN_ERR_BUSY);
    CHECK_RESULT(kiln_buffer_destroy(f.ctx, f.buf[0]), KILN_ERR_BUSY);
    CHECK_OK(kiln_program_destroy(f.ctx, f.prog));  /* no node runs it any more */
    CHECK_OK(kiln_node_remove(f.ctx, n));
    CHECK_OK(kiln_program_destroy(f.ctx, baked));
    CHECK_OK(kiln_buffer_destroy(f.ctx, f.buf[0]));
    test_context_done(f.ctx);
}

TEST(handle_misuse_is_an_error_never_a_crash)
{
    struct fixture f, g;
    REQUIRE_OK(setup(&f));
    REQUIRE_OK(setup(&g));
    kiln_node n;
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    CHECK_OK(kiln_node_remove(f.ctx, n));
    CHECK_RESULT(kiln_node_set_param(f.ctx, n, 0, 1), KILN_ERR_HANDLE);   /* stale */
    CHECK_MSG("stale");
    CHECK_RESULT(kiln_node_remove(f.ctx, n), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_node_set_param(f.ctx, (kiln_node){0}, 0, 1), KILN_ERR_HANDLE);   /* null */
    CHECK_MSG("null");
    /* Another context's buffer. */
    CHECK_RESULT(kiln_buffer_upload(f.ctx, g.buf[0], 0, "x", 1), KILN_ERR_HANDLE);
    CHECK_MSG("another context");
    /* A program handle where a buffer belongs. */
    CHECK_RESULT(kiln_buffer_destroy(f.ctx, (kiln_buffer){f.prog.id}), KILN_ERR_HANDLE);
    CHECK_MSG("another object type");
    /* A node desc naming a foreign program or a stale buffer. */
    kiln_binding b = {.binding = 0, .buffer = f.buf[0]};
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &(kiln_node_desc){.program = g.prog, .bindings = &b,
                                                                        .binding_count = 1, .groups = {1}}, &n),
                 KILN_ERR_HANDLE);
    kiln_buffer gone;
    REQUIRE_OK(kiln_buffer_create(f.ctx, &(kiln_buffer_desc){.size = 16}, &gone));
    CHECK_OK(kiln_buffer_destroy(f.ctx, gone));
    b.buffer = gone;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &(kiln_node_desc){.program = f.prog, .bindings = &b,
                                                                        .binding_count = 1, .groups = {1}}, &n),
                 KILN_ERR_HANDLE);
    CHECK_MSG("binding 0");
    /* Scheme destroyed: its nodes' handles die with it. */
    REQUIRE_OK(add(&f, 0, 0, 1, 0, &n));
    CHECK_OK(kiln_scheme_destroy(f.ctx, f.scheme));
    CHECK_RESULT(kiln_node_set_param(f.ctx, n, 0, 1), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_scheme_submit(f.ctx, f.scheme, NULL), KILN_ERR_HANDLE);
    /* A destroyed context. */
    kiln_context dead = g.ctx;
    test_context_done(g.ctx);
    CHECK_RESULT(kiln_buffer_upload(dead, g.buf[0], 0, "x", 1), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_context_destroy(dead), KILN_ERR_HANDLE);
    CHECK_RESULT(kiln_context_destroy((kiln_context){0}), KILN_ERR_HANDLE);
    test_context_done(f.ctx);
}

TEST(bad_nodes_are_refused_with_reasons)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n;
    kiln_binding b[2] = {{.binding = 0, .buffer = f.buf[0]}, {.binding = 1, .buffer = f.buf[1]}};
    kiln_node_desc d = {.program = f.prog, .bindings = b, .binding_count = 2, .groups = {0}};
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_INVALID);
    CHECK_MSG("0 workgroups");
    d.groups[0] = 70000;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_LIMIT);
    CHECK_MSG("at most 65535");
    d.groups[0] = 1;
    d.binding_count = 1;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 1");
    d.binding_count = 2;
    b[1].binding = 5;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_LAYOUT);
    CHECK_MSG("binding 5");
    b[1].binding = 1;
    b[1].offset = 4000;
    b[1].size = 200;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_INVALID);
    CHECK_MSG("past the end");
    b[1].offset = 4;
    b[1].size = 16;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_INVALID);
    CHECK_MSG("multiple of 16");
    b[1].offset = 0;
    b[1].size = 0;
    kiln_buffer ubuf;
    REQUIRE_OK(kiln_buffer_create(f.ctx, &(kiln_buffer_desc){.size = 256, .usage = KILN_BUFFER_UNIFORM}, &ubuf));
    b[0].buffer = ubuf;
    CHECK_RESULT(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n), KILN_ERR_LAYOUT);
    CHECK_MSG("KILN_BUFFER_STORAGE");
    b[0].buffer = f.buf[0];
    CHECK_RESULT(kiln_node_set_param(f.ctx, n, 8, 1), KILN_ERR_HANDLE);  /* n was never made */
    REQUIRE_OK(kiln_scheme_add_node(f.ctx, f.scheme, &d, &n));
    CHECK_RESULT(kiln_node_set_param(f.ctx, n, 8, 1), KILN_ERR_INVALID);
    CHECK_MSG("slot 8");
    /* Nothing refused reached the scheme. */
    CHECK_EQ(stats(&f).nodes, 1);
    CHECK_RESULT(kiln_buffer_create(f.ctx, &(kiln_buffer_desc){.size = 0}, &ubuf), KILN_ERR_INVALID);
    CHECK_RESULT(kiln_buffer_upload(f.ctx, f.buf[2], 4090, "0123456789", 10), KILN_ERR_INVALID);
    CHECK_MSG("runs past");
    test_context_done(f.ctx);
}

TEST(failed_program_fails_the_submit_naming_the_node)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_program bad;
    REQUIRE_OK(kiln_program_create(f.ctx, &(kiln_program_desc){.source = "#version 450\nvoid main() { oops; }\n",
                                                               .name = "oops.comp"}, &bad));
    kiln_program_state st;
    CHECK_RESULT(kiln_program_wait(f.ctx, bad), KILN_ERR_COMPILE);
    CHECK_MSG("oops.comp:2");
    CHECK_OK(kiln_program_status(f.ctx, bad, &st));
    CHECK_EQ(st, KILN_PROGRAM_FAILED);
    char log[512];
    size_t len = 0;
    CHECK_OK(kiln_program_log(f.ctx, bad, log, sizeof log, &len));
    CHECK(len > 0 && strstr(log, "oops.comp:2: error"));
    kiln_program_interface itf;
    CHECK_RESULT(kiln_program_interface_get(f.ctx, bad, &itf), KILN_ERR_COMPILE);
    /* The same source under another name shares the compile, and its log
     * speaks of its own name. */
    kiln_program twin;
    REQUIRE_OK(kiln_program_create(f.ctx, &(kiln_program_desc){.source = "#version 450\nvoid main() { oops; }\n",
                                                               .name = "other/name.comp"}, &twin));
    CHECK_RESULT(kiln_program_wait(f.ctx, twin), KILN_ERR_COMPILE);
    CHECK_MSG("other/name.comp:2");
    CHECK_OK(kiln_program_log(f.ctx, twin, log, sizeof log, &len));
    CHECK(strstr(log, "other/name.comp:2: error") && !strstr(log, "oops.comp"));
    kiln_context_stats cs0;
    CHECK_OK(kiln_context_stats_get(f.ctx, &cs0));
    CHECK_EQ(cs0.compiles_deduplicated + cs0.compiles_adopted, 1);
    CHECK_OK(kiln_program_destroy(f.ctx, twin));
    kiln_node n;
    REQUIRE_OK(kiln_scheme_add_node(f.ctx, f.scheme, &(kiln_node_desc){.program = bad, .groups = {1}, .label = "broken"},
                                    &n));
    CHECK_RESULT(submit(&f), KILN_ERR_COMPILE);
    CHECK_MSG("node 'broken'");
    CHECK_MSG("oops.comp:2");
    /* Fixing the node makes the scheme run again: a good program ... */
    CHECK_OK(kiln_node_set_program(f.ctx, n, f.prog));
    CHECK_RESULT(submit(&f), KILN_ERR_LAYOUT);   /* ... whose bindings the node lacks */
    CHECK_MSG("binding 0");
    CHECK_OK(kiln_node_remove(f.ctx, n));
    CHECK_OK(submit(&f));
    kiln_context_stats cs;
    CHECK_OK(kiln_context_stats_get(f.ctx, &cs));
    CHECK_EQ(cs.programs_failed, 1);
    CHECK_EQ(cs.programs_compiled, 1);
    test_context_done(f.ctx);
}

TEST(teardown_frees_every_backend_object)
{
    struct fixture f;
    REQUIRE_OK(setup(&f));
    kiln_node n;
    for (int i = 0; i < 10; i++)
        REQUIRE_OK(add(&f, 0, 0, 1 + i % 3, 0, &n));
    CHECK_OK(submit(&f));
    CHECK_OK(kiln_node_remove(f.ctx, n));
    CHECK_OK(submit(&f));
    CHECK_OK(kiln_scheme_destroy(f.ctx, f.scheme));
    CHECK_OK(kiln_program_destroy(f.ctx, f.prog));
    for (int i = 0; i < 4; i++)
        CHECK_OK(kiln_buffer_destroy(f.ctx, f.buf[i]));
    /* What is left is what the compile service keeps for re-use: its
     * pipeline caches and the released program's layout and pipeline. */
    struct csvc_kept k;
    csvc_kept(lctx_of(api_context_peek(f.ctx))->svc, &k);
    uint64_t kept = (uint64_t)k.caches + k.layouts + k.pipelines;
    CHECK_EQ(k.released, 1);   /* rw.comp's front node, holding its back node */
    CHECK_EQ(kept, 3);
    CHECK_EQ(mockb_counts(f.dev).live_objects, kept);
    test_context_done(f.ctx);
}

int main(void)
{
    RUN(clean_submits_replay_and_params_rerecord_without_topology);
    RUN(barriers_follow_hazards);
    RUN(in_flight_command_buffers_are_never_rerecorded);
    RUN(set_program_is_params_only_and_checks_the_interface);
    RUN(handle_misuse_is_an_error_never_a_crash);
    RUN(bad_nodes_are_refused_with_reasons);
    RUN(failed_program_fails_the_submit_naming_the_node);
    RUN(teardown_frees_every_backend_object);
    return TEST_SUMMARY();
}
