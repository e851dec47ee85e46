/* SPDX-License-Identifier: MIT */
/*
 * test_lost.c: device loss and runaway work (DESIGN.md invariant 9). A
 * context whose device is lost, or whose submitted work outlives its device
 * timeout, fails every later call with KILN_ERR_DEVICE_LOST naming what was
 * running, destroy returns in bounded time, and other contexts carry on.
 *
 * Work that never finishes is simulated, never run: by the mock (mockb_hang,
 * mockb_lose) and by the Vulkan backend's fault hook (vkb_fault), which
 * makes kiln see a submit that the device really runs to its end as never
 * finishing. So the Vulkan path is exercised on any driver without a shader
 * that does not terminate. Timeouts on the Vulkan device are 1 s, far above
 * what the small dispatches here take on a loaded machine under ASan.
 *
 * Leaks: a Vulkan device abandoned to its work is left allocated on
 * purpose (and logged), and kiln keeps what it holds of it reachable; but
 * the driver's own objects of that device are not all reachable from the
 * handles kiln keeps (lavapipe's are not), so a leak checker would report
 * them. The Vulkan tests that may abandon therefore run in a child process
 * that ends with _exit (no leak check there), forked before any context
 * exists; the mock tests, whose abandon path frees every host object, and
 * the Vulkan test that frees everything run in the parent, under the leak
 * checker.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "backend/mock/mock.h"
#include "context/context.h"
#include "test.h"

static const char *k_double = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer Data { uint v[]; };\n"
                              "void main() { uint i = gl_GlobalInvocationID.x; v[i] = v[i] * 2u + kiln_param(0); }\n";

#define N 256

struct fix {
    kiln_context ctx;
    struct kb_device *dev;
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    kiln_node node;
};

static kiln_result setup(struct fix *f, const kiln_context_desc *desc)
{
    KILN_TRY(kiln_context_create(desc, &f->ctx));
    f->dev = ctx_device(api_context_peek(f->ctx));
    KILN_TRY(kiln_program_create(f->ctx, &(kiln_program_desc){.source = k_double, .name = "double.comp"}, &f->prog));
    KILN_TRY(kiln_program_wait(f->ctx, f->prog));
    KILN_TRY(kiln_buffer_create(f->ctx, &(kiln_buffer_desc){.size = N * 4, .label = "data"}, &f->buf));
    uint32_t init[N];
    for (uint32_t i = 0; i < N; i++)
        init[i] = i;
    KILN_TRY(kiln_buffer_upload(f->ctx, f->buf, 0, init, sizeof init));
    KILN_TRY(kiln_scheme_create(f->ctx, &(kiln_scheme_desc){.label = "frame"}, &f->scheme));
    kiln_binding b = {.binding = 0, .buffer = f->buf};
    return kiln_scheme_add_node(f->ctx, f->scheme,
                                &(kiln_node_desc){.program = f->prog, .bindings = &b, .binding_count = 1,
                                                  .groups = {N / 64}, .label = "blur"},
                                &f->node);
}

/* One submit, waited for; the buffer then holds v*2 per earlier frame. */
static kiln_result frame(struct fix *f)
{
    kiln_ticket t;
    KILN_TRY(kiln_scheme_submit(f->ctx, f->scheme, &t));
    return kiln_ticket_wait(f->ctx, t, UINT64_MAX);
}

static double seconds_since(uint64_t t0) { return (double)(time_now_ns() - t0) / 1e9; }

/* Every kind of call on a lost context fails with KILN_ERR_DEVICE_LOST and
 * names what was running. */
static void check_all_calls_lost(struct fix *f, kiln_ticket t, const char *names)
{
    uint32_t v[4];
    kiln_buffer b2;
    kiln_scheme s2;
    kiln_context_stats st;
    kiln_caps caps;
    CHECK_RESULT(kiln_buffer_readback(f->ctx, f->buf, 0, v, sizeof v), KILN_ERR_DEVICE_LOST);
    CHECK_MSG(names);
    CHECK_RESULT(kiln_buffer_upload(f->ctx, f->buf, 0, v, sizeof v), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_buffer_create(f->ctx, &(kiln_buffer_desc){.size = 64}, &b2), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_scheme_submit(f->ctx, f->scheme, NULL), KILN_ERR_DEVICE_LOST);
    CHECK_MSG(names);
    CHECK_RESULT(kiln_scheme_create(f->ctx, NULL, &s2), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_node_set_param(f->ctx, f->node, 0, 1), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_ticket_wait(f->ctx, t, 0), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_context_wait_idle(f->ctx), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_context_stats_get(f->ctx, &st), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_context_caps(f->ctx, &caps), KILN_ERR_DEVICE_LOST);
    CHECK_RESULT(kiln_buffer_destroy(f->ctx, f->buf), KILN_ERR_DEVICE_LOST);
    CHECK_MSG(names);
}

/* Runs body in a forked child that exits with _exit, so that no leak
 * check runs there; its failures count as the test's. */
static void in_child(void (*body)(void))
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        body();
        fflush(stdout);
        fflush(stderr);
        _exit(test_failures_ ? 1 : 0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        test_failures_++;
        fprintf(stderr, "%s: the child running it failed (status 0x%x)\n", test_name_, (unsigned)st);
    }
}

/* ---- mock ---------------------------------------------------------------------------- */

TEST(runaway_work_loses_the_context_and_destroy_returns)
{
    struct fix other = {0}, f = {0};
    REQUIRE_OK(setup(&other, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}));
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .device_timeout_ms = 50}));
    CHECK_OK(frame(&f));   /* finished work is no runaway */
    mockb_hang(f.dev, true);
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));
    /* A caller's shorter bound is a plain timeout: the device lives on. */
    CHECK_RESULT(kiln_ticket_wait(f.ctx, t, 5ull * 1000 * 1000), KILN_ERR_TIMEOUT);
    uint32_t v[4];
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(kiln_buffer_readback(f.ctx, f.buf, 0, v, sizeof v), KILN_ERR_DEVICE_LOST);
    CHECK(seconds_since(t0) < 5.0);
    CHECK_MSG("scheme 'frame'");
    CHECK_MSG("'blur' running program double.comp");
    CHECK_MSG("did not finish within");
    check_all_calls_lost(&f, t, "scheme 'frame'");
    /* The other context carries on. */
    CHECK_OK(frame(&other));
    t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(f.ctx));
    CHECK(seconds_since(t0) < 5.0);
    CHECK_OK(frame(&other));
    CHECK_OK(kiln_buffer_readback(other.ctx, other.buf, 0, v, sizeof v));
    CHECK_EQ(v[3], 3);   /* the mock runs no shader: the upload reads back */
    CHECK_OK(kiln_context_destroy(other.ctx));
}

TEST(a_driver_that_reports_loss_loses_the_context)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}));
    mockb_hold(f.dev, true);
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));
    mockb_lose(f.dev);
    CHECK_RESULT(kiln_ticket_wait(f.ctx, t, UINT64_MAX), KILN_ERR_DEVICE_LOST);
    CHECK_MSG("driver reported the device lost");
    CHECK_MSG("scheme 'frame'");
    check_all_calls_lost(&f, t, "driver reported the device lost");
    uint64_t t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(f.ctx));
    CHECK(seconds_since(t0) < 5.0);
}

TEST(a_submit_the_driver_refuses_as_lost_loses_the_context)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}));
    mockb_lose(f.dev);
    CHECK_RESULT(kiln_scheme_submit(f.ctx, f.scheme, NULL), KILN_ERR_DEVICE_LOST);
    CHECK_MSG("when submitting scheme 'frame'");
    kiln_ticket none = {0};
    check_all_calls_lost(&f, none, "when submitting scheme 'frame'");
    CHECK_OK(kiln_context_destroy(f.ctx));
}

TEST(the_environment_sets_the_timeout_when_the_desc_leaves_it)
{
    setenv("KILN_DEVICE_TIMEOUT_S", "0.05", 1);
    struct fix f = {0};
    kiln_result r = setup(&f, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK});
    unsetenv("KILN_DEVICE_TIMEOUT_S");
    REQUIRE_OK(r);
    mockb_hang(f.dev, true);
    CHECK_OK(kiln_scheme_submit(f.ctx, f.scheme, NULL));
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(kiln_context_wait_idle(f.ctx), KILN_ERR_DEVICE_LOST);
    CHECK(seconds_since(t0) < 5.0);
    CHECK_MSG("scheme 'frame'");
    CHECK_OK(kiln_context_destroy(f.ctx));
}

TEST(without_a_timeout_slow_work_is_only_a_timeout)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.backend = KILN_BACKEND_MOCK}));
    mockb_hang(f.dev, true);
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));
    CHECK_RESULT(kiln_ticket_wait(f.ctx, t, 20ull * 1000 * 1000), KILN_ERR_TIMEOUT);
    kiln_buffer b2;
    CHECK_OK(kiln_buffer_create(f.ctx, &(kiln_buffer_desc){.size = 64}, &b2));
    mockb_hang(f.dev, false);   /* the slow work finishes */
    CHECK_OK(kiln_ticket_wait(f.ctx, t, UINT64_MAX));
    CHECK_OK(frame(&f));
    CHECK_OK(kiln_context_destroy(f.ctx));
}

/* ---- Vulkan ---------------------------------------------------------------------------- */

static void check_values(struct fix *f, uint32_t frames)
{
    uint32_t v[N];
    CHECK_OK(kiln_buffer_readback(f->ctx, f->buf, 0, v, sizeof v));
    uint32_t bad = 0;
    for (uint32_t i = 0; i < N; i++)
        bad += v[i] != (i << frames);
    CHECK_EQ(bad, 0);
}

static uint64_t validation_errors(struct fix *f) { return atomic_load(&f->dev->validation_errors); }

static void vk_a_submit_that_never_finishes_is_abandoned_and_others_carry_on_body(void)
{
    struct fix other = {0}, f = {0};
    REQUIRE_OK(setup(&other, &(kiln_context_desc){.specialization = -1}));
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.specialization = -1, .device_timeout_ms = 1000}));
    CHECK_OK(frame(&f));
    check_values(&f, 1);
    vkb_fault(f.dev, VKB_FAULT_HANG);
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));
    CHECK_RESULT(kiln_ticket_wait(f.ctx, t, 1000), KILN_ERR_TIMEOUT);
    uint32_t v[4];
    uint64_t t0 = time_now_ns();
    CHECK_RESULT(kiln_buffer_readback(f.ctx, f.buf, 0, v, sizeof v), KILN_ERR_DEVICE_LOST);
    double waited = seconds_since(t0);
    CHECK(waited >= 0.5 && waited < 10.0);
    CHECK_MSG("scheme 'frame' (1 node: 'blur' running program double.comp)");
    check_all_calls_lost(&f, t, "scheme 'frame'");
    CHECK_EQ(validation_errors(&f), 0);
    CHECK_OK(frame(&other));
    t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(f.ctx));   /* abandons the device: nothing waits, nothing is freed under it */
    CHECK(seconds_since(t0) < 10.0);
    CHECK_OK(frame(&other));
    check_values(&other, 2);
    test_context_done(other.ctx);
}

TEST(vk_a_device_the_driver_reports_lost_fails_every_call_and_frees_all)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.specialization = -1}));
    CHECK_OK(frame(&f));
    vkb_fault(f.dev, VKB_FAULT_LOST);
    CHECK_RESULT(kiln_scheme_submit(f.ctx, f.scheme, NULL), KILN_ERR_DEVICE_LOST);
    CHECK_MSG("driver reported the device lost when submitting scheme 'frame'");
    kiln_ticket none = {0};
    check_all_calls_lost(&f, none, "driver reported the device lost");
    CHECK_EQ(validation_errors(&f), 0);
    /* Nothing was running: destroy frees everything (a leak checker would
     * see anything left). */
    uint64_t t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(f.ctx));
    CHECK(seconds_since(t0) < 10.0);
}

static void vk_a_wait_the_driver_reports_lost_fails_every_call_body(void)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.specialization = -1}));
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));
    vkb_fault(f.dev, VKB_FAULT_LOST);
    /* The work may have finished already (then the wait needs no driver
     * call and succeeds) or not (then the driver's loss is seen). */
    kiln_result r = kiln_ticket_wait(f.ctx, t, UINT64_MAX);
    CHECK(r == KILN_OK || r == KILN_ERR_DEVICE_LOST);
    if (r == KILN_OK)
        CHECK_RESULT(kiln_scheme_submit(f.ctx, f.scheme, NULL), KILN_ERR_DEVICE_LOST);
    check_all_calls_lost(&f, t, "driver reported the device lost");
    CHECK_EQ(validation_errors(&f), 0);
    /* Destroy returns either way: it frees all when the work is done, and
     * abandons the device to it when it is not. */
    uint64_t t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(f.ctx));
    CHECK(seconds_since(t0) < 10.0);
}

static void vk_a_transfer_that_never_finishes_loses_the_context_body(void)
{
    struct fix f = {0};
    REQUIRE_OK(setup(&f, &(kiln_context_desc){.specialization = -1, .device_timeout_ms = 1000}));
    kiln_caps caps;
    REQUIRE_OK(kiln_context_caps(f.ctx, &caps));
    vkb_fault(f.dev, VKB_FAULT_HANG);
    uint32_t v[N];
    kiln_result r = kiln_buffer_readback(f.ctx, f.buf, 0, v, sizeof v);
    if (caps.unified_memory) {
        CHECK_OK(r);   /* mapped memory: a readback submits nothing */
        REQUIRE_OK(kiln_scheme_submit(f.ctx, f.scheme, NULL));
        r = kiln_buffer_readback(f.ctx, f.buf, 0, v, sizeof v);
        CHECK_MSG("scheme 'frame'");
    } else {
        CHECK_MSG("a transfer");
    }
    CHECK_RESULT(r, KILN_ERR_DEVICE_LOST);
    CHECK_OK(kiln_context_destroy(f.ctx));
}

TEST(vk_a_submit_that_never_finishes_is_abandoned_and_others_carry_on) { in_child(vk_a_submit_that_never_finishes_is_abandoned_and_others_carry_on_body); }

TEST(vk_a_wait_the_driver_reports_lost_fails_every_call) { in_child(vk_a_wait_the_driver_reports_lost_fails_every_call_body); }

TEST(vk_a_transfer_that_never_finishes_loses_the_context) { in_child(vk_a_transfer_that_never_finishes_loses_the_context_body); }

/* A dispatch that really runs long, though it terminates (test_slow_src,
 * 3000 workgroups, 60000 rounds). With a 0.3 s timeout either the work
 * finishes first (a fast device: the context stays live) or the device is
 * lost by timeout: both are right, and which one happens depends only on
 * the device's speed. */

static void vk_a_long_dispatch_outlives_a_short_timeout_or_finishes_body(void)
{
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.specialization = -1, .device_timeout_ms = 300}, &ctx));
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    kiln_node node;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = test_slow_src, .name = "slow.comp"}, &prog));
    REQUIRE_OK(kiln_program_wait(ctx, prog));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16}, &buf));
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "slow"}, &scheme));
    kiln_binding b = {.binding = 0, .buffer = buf};
    REQUIRE_OK(kiln_scheme_add_node(ctx, scheme,
                                    &(kiln_node_desc){.program = prog, .bindings = &b, .binding_count = 1,
                                                      .groups = {3000}, .params = (const uint32_t[KILN_PARAM_WORDS]){60000}, .param_count = KILN_PARAM_WORDS, .label = "xorshift"},
                                    &node));
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, scheme, &t));
    uint32_t v[4];
    uint64_t t0 = time_now_ns();
    kiln_result r = kiln_buffer_readback(ctx, buf, 0, v, sizeof v);
    CHECK(seconds_since(t0) < 10.0);
    if (r == KILN_OK) {
        CHECK_OK(kiln_scheme_submit(ctx, scheme, NULL));   /* finished in time: the context lives */
    } else {
        CHECK_RESULT(r, KILN_ERR_DEVICE_LOST);
        CHECK_MSG("scheme 'slow' (1 node: 'xorshift' running program slow.comp) did not finish within");
        CHECK_RESULT(kiln_scheme_submit(ctx, scheme, NULL), KILN_ERR_DEVICE_LOST);
    }
    t0 = time_now_ns();
    CHECK_OK(kiln_context_destroy(ctx));   /* lavapipe: returns at once, the dispatch still running */
    CHECK(seconds_since(t0) < 10.0);
}

TEST(vk_a_long_dispatch_outlives_a_short_timeout_or_finishes)
{
    in_child(vk_a_long_dispatch_outlives_a_short_timeout_or_finishes_body);
}

int main(void)
{
    TEST_LOCAL_ONLY("it injects device faults and loss through the local backend's test hooks");
    /* First, forked before this process has made any context or thread. */
    RUN(vk_a_submit_that_never_finishes_is_abandoned_and_others_carry_on);
    RUN(vk_a_wait_the_driver_reports_lost_fails_every_call);
    RUN(vk_a_transfer_that_never_finishes_loses_the_context);
    RUN(vk_a_long_dispatch_outlives_a_short_timeout_or_finishes);
    RUN(runaway_work_loses_the_context_and_destroy_returns);
    RUN(a_driver_that_reports_loss_loses_the_context);
    RUN(a_submit_the_driver_refuses_as_lost_loses_the_context);
    RUN(the_environment_sets_the_timeout_when_the_desc_leaves_it);
    RUN(without_a_timeout_slow_work_is_only_a_timeout);
    RUN(vk_a_device_the_driver_reports_lost_fails_every_call_and_frees_all);
    return TEST_SUMMARY();
}
