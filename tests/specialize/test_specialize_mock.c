/* SPDX-License-Identifier: MIT */
/*
 * test_specialize_mock.c: specialization prediction, deterministically, on the
 * mock backend. Compiles are held during each submit and run to the end
 * after it, so each variant is ready by the next submit; events then land
 * on exact submit numbers, which each test spells out:
 *   "warm@1{0,1}" a variant baking slots 0 and 1 started (or was joined) at
 *   the top of submit 1; "promote@2{0,1}" the node runs it from submit 2;
 *   "demote@5{0,1}" set_param before submit 5 moved a baked word.
 * Program P reads param words 0 and 1; a changed word warms after holding
 * 2 submits, or 10 once it has broken a bake (the policy's defaults).
 * Declines that are no events (a failed cost-model wait, a variant not to
 * be had) are counted.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "backend/mock/mock.h"
#include "compile/compile.h"
#include "context/context.h"
#include "scheme/scheme.h"
#include "context/context_private.h"
#include "test.h"

/* The mock's timestamps for the cost-model tests: the universal program's
 * dispatch "takes" 1000 ns, a variant's g_variant_cost. */
static struct kb_pipeline *g_universal;
static uint64_t g_variant_cost;

static uint64_t cost(void *ud, const struct kb_pipeline *pipe)
{
    (void)ud;
    return pipe == g_universal ? 1000 : g_variant_cost;
}

static const char *k_two = "#version 450\n"
                           "layout(local_size_x = 64) in;\n"
                           "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                           "void main() { uint i = gl_GlobalInvocationID.x; x[i] = x[i] * kiln_param(0) + "
                           "kiln_param(1); }\n";

/* Every variant baking slot 0 fails to compile: failures on demand. */
static const char *k_fails = "#version 450\n"
                             "layout(local_size_x = 64) in;\n"
                             "layout(std430, binding = 0) buffer X { uint x[]; };\n"
                             "#define PASTE(a, b) a##b\n"
                             "#define XPASTE(a, b) PASTE(a, b)\n"
                             "#define WORD_kiln_pc kiln_pc\n"
                             "/* universal: WORD_kiln_pc.uw0, fine; baked: WORD_3u, undeclared */\n"
                             "void main() { x[gl_GlobalInvocationID.x] += XPASTE(WORD_, KILN_SPEC_MAIN_UW0); }\n";

struct fx {
    kiln_context ctx;
    kiln_program prog;
    kiln_buffer buf;
    kiln_scheme scheme;
    kiln_node node[4];
    char log[4096];              /* events so far, as text */
    size_t log_len;
};

static kiln_result fx_init(struct fx *f, const char *source, int nodes)
{
    memset(f, 0, sizeof *f);
    KILN_TRY(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK, .specialization = 1,
                                                      .compile_threads = 2},
                                 &f->ctx));
    KILN_TRY(kiln_program_create(f->ctx, &(kiln_program_desc){.source = source, .name = "p.comp"}, &f->prog));
    KILN_TRY(kiln_program_wait(f->ctx, f->prog));
    KILN_TRY(kiln_buffer_create(f->ctx, &(kiln_buffer_desc){.size = 4096}, &f->buf));
    KILN_TRY(kiln_scheme_create(f->ctx, &(kiln_scheme_desc){.label = "spec"}, &f->scheme));
    for (int i = 0; i < nodes; i++)
        KILN_TRY(kiln_scheme_add_node(
            f->ctx, f->scheme,
            &(kiln_node_desc){.program = f->prog, .bindings = &(kiln_binding){.binding = 0, .buffer = f->buf},
                              .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){3, 1}, .param_count = KILN_PARAM_WORDS},
            &f->node[i]));
    return KILN_OK;
}

static void fx_done(struct fx *f) { kiln_context_destroy(f->ctx); }

static void wait_compiles(struct fx *f)
{
    uint32_t pending = 1;
    for (int t = 0; t < 20000 && pending; t++) {
        if (kiln_compiles_pending(f->ctx, &pending) != KILN_OK)
            return;
        if (pending)
            nanosleep(&(struct timespec){0, 500 * 1000}, NULL);
    }
}

/* Appends the scheme's new events to f->log. */
static void drain(struct fx *f)
{
    kiln_spec_event ev[64];
    uint32_t n = 0;
    static const char *names[] = {"?", "warm", "promote", "demote", "failed", "pinned"};
    while (kiln_scheme_spec_events(f->ctx, f->scheme, ev, 64, &n) == KILN_OK && n) {
        for (uint32_t i = 0; i < n; i++) {
            char slots[64] = "";
            size_t k = 0;
            for (int b = 0; b < KILN_PARAM_WORDS; b++)
                if (ev[i].mask & ((uint64_t)1 << b))
                    k += (size_t)snprintf(slots + k, sizeof slots - k, "%s%d", k ? "," : "", b);
            int node = -1;
            for (int j = 0; j < 4; j++)
                if (ev[i].node.id == f->node[j].id)
                    node = j;
            f->log_len += (size_t)snprintf(f->log + f->log_len, sizeof f->log - f->log_len, "%s%s%s@%llu{%s}",
                                           f->log_len ? " " : "", node > 0 ? (node == 1 ? "n1:" : "n2:") : "",
                                           names[ev[i].kind], (unsigned long long)ev[i].submit, slots);
        }
    }
}

/* One submit, then every compile it started finishes. Compiles are held
 * during the submit: a variant is never ready the instant it is asked for
 * (on a busy machine a worker could finish one before the submit looks). */
static void step(struct fx *f)
{
    kiln_ticket t;
    struct csvc *svc = lctx_of(api_context_peek(f->ctx))->svc;
    csvc_hold(svc, true);
    CHECK_OK(kiln_scheme_submit(f->ctx, f->scheme, &t));
    csvc_hold(svc, false);
    wait_compiles(f);
    drain(f);
}

static void set(struct fx *f, int node, uint32_t slot, uint32_t word)
{
    CHECK_OK(kiln_node_set_param(f->ctx, f->node[node], slot, word));
    drain(f);
}

static int specialized(struct fx *f, int node)
{
    int on = -1;
    CHECK_OK(kiln_node_is_specialized(f->ctx, f->node[node], &on));
    return on;
}

#define CHECK_LOG(f, want)                                                                                   \
    do {                                                                                                     \
        if (strcmp((f)->log, (want))) {                                                                      \
            test_failures_++;                                                                                \
            fprintf(stderr, "%s:%d: %s: events\n  were    \"%s\"\n  expected \"%s\"\n", __FILE__, __LINE__, \
                    test_name_, (f)->log, (want));                                                           \
        }                                                                                                    \
    } while (0)

static kiln_scheme_stats sstats(struct fx *f)
{
    kiln_scheme_stats s = {0};
    CHECK_OK(kiln_scheme_stats_get(f->ctx, f->scheme, &s));
    return s;
}

TEST(stable_from_the_start)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    for (int i = 1; i <= 20; i++)
        step(&f);
    CHECK_LOG(&f, "warm@1{0,1} promote@2{0,1}");
    CHECK_EQ(specialized(&f, 0), 1);
    kiln_scheme_stats s = sstats(&f);
    CHECK_EQ(s.spec_warms, 1);
    CHECK_EQ(s.spec_promotions, 1);
    CHECK_EQ(s.records_full, 1);      /* submit 1 */
    CHECK_EQ(s.records_params, 1);    /* submit 2 recorded the promotion */
    CHECK_EQ(s.replays, 18);          /* a settled site costs no record */
    fx_done(&f);
}

TEST(changed_once)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    for (int i = 1; i <= 4; i++)
        step(&f);
    set(&f, 0, 0, 7);   /* before submit 5: demoted in the call */
    CHECK_EQ(specialized(&f, 0), 0);
    for (int i = 5; i <= 30; i++)
        step(&f);
    /* Slot 1 alone bakes at once; slot 0 broke a bake, so it must hold 10
     * submits (5..14) and is baked again at 15, swapped in at 16. */
    CHECK_LOG(&f, "warm@1{0,1} promote@2{0,1} demote@5{0,1} warm@5{1} promote@6{1} warm@15{0,1} promote@16{0,1}");
    CHECK_EQ(specialized(&f, 0), 1);
    fx_done(&f);
}

TEST(ping_pong_every_submit)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    for (int i = 1; i <= 60; i++) {
        if (i >= 3)
            set(&f, 0, 0, (uint32_t)(i & 1) + 5);
        step(&f);
    }
    CHECK_LOG(&f, "warm@1{0,1} promote@2{0,1} demote@3{0,1} warm@3{1} promote@4{1}");
    CHECK_EQ(sstats(&f).spec_warms, 2);
    fx_done(&f);
}

TEST(flip_every_5)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    for (int i = 1; i <= 60; i++) {
        if (i > 1 && i % 5 == 1)
            set(&f, 0, 0, (uint32_t)(i / 5) % 2 + 10);
        step(&f);
    }
    /* Slot 0 holds 5 submits at a time, never the 10 it needs after it broke
     * the first bake: it stays dynamic while slot 1 bakes. */
    CHECK_LOG(&f, "warm@1{0,1} promote@2{0,1} demote@6{0,1} warm@6{1} promote@7{1}");
    fx_done(&f);
}

TEST(moving_counter_beside_stable_flag)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    for (int i = 1; i <= 40; i++) {
        if (i >= 2)
            set(&f, 0, 0, (uint32_t)i);   /* a frame counter */
        step(&f);
    }
    /* The first bake (both words certain) was compiling when the counter
     * first moved: its hold dropped; then the flag alone bakes. */
    CHECK_LOG(&f, "warm@1{0,1} warm@2{1} promote@3{1}");
    CHECK_EQ(specialized(&f, 0), 1);
    fx_done(&f);
}

TEST(sites_share_one_compile)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 3));
    step(&f);
    step(&f);
    CHECK_LOG(&f, "warm@1{0,1} n1:warm@1{0,1} n2:warm@1{0,1} promote@2{0,1} n1:promote@2{0,1} n2:promote@2{0,1}");
    CHECK_EQ(sstats(&f).spec_warms, 1);   /* three sites, one compile */
    /* A second scheme of the context shares the cached variant. */
    kiln_scheme other;
    kiln_node on;
    REQUIRE_OK(kiln_scheme_create(f.ctx, NULL, &other));
    REQUIRE_OK(kiln_scheme_add_node(
        f.ctx, other,
        &(kiln_node_desc){.program = f.prog, .bindings = &(kiln_binding){.binding = 0, .buffer = f.buf},
                          .binding_count = 1, .groups = {1}, .params = (const uint32_t[KILN_PARAM_WORDS]){3, 1}, .param_count = KILN_PARAM_WORDS},
        &on));
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(f.ctx, other, &t));
    int spec = 0;
    CHECK_OK(kiln_node_is_specialized(f.ctx, on, &spec));
    CHECK_EQ(spec, 1);   /* ready in the cache: promoted by its first submit */
    kiln_scheme_stats os;
    CHECK_OK(kiln_scheme_stats_get(f.ctx, other, &os));
    CHECK_EQ(os.spec_warms, 0);
    CHECK_EQ(os.spec_promotions, 1);
    fx_done(&f);
}

/* A baked word changing while the compile has not started: the hold is
 * dropped and the compile cancelled; one compiled anyway stays cached. */
TEST(cancel_unstarted_compile)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    csvc_hold(c->svc, true);
    kiln_ticket t;
    CHECK_OK(kiln_scheme_submit(f.ctx, f.scheme, &t));   /* warm: queued, held */
    uint64_t cancelled = csvc_stats_get(c->svc).cancelled;
    set(&f, 0, 1, 9);    /* slot 1 was in the warming bake */
    CHECK_EQ(csvc_stats_get(c->svc).cancelled, cancelled + 1);
    CHECK_EQ(c->spec.count, 0);   /* nothing cached: it never ran */
    csvc_hold(c->svc, false);
    wait_compiles(&f);
    drain(&f);
    CHECK_LOG(&f, "warm@1{0,1}");
    fx_done(&f);
}

TEST(pinned_after_three_failures)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_fails, 1));
    for (int i = 1; i <= 12; i++)
        step(&f);
    CHECK_LOG(&f, "warm@1{0} failed@2{0} warm@3{0} failed@4{0} warm@5{0} failed@6{0} pinned@6{}");
    kiln_scheme_stats s = sstats(&f);
    CHECK_EQ(s.spec_pinned, 1);
    CHECK_EQ(s.spec_warms, 3);
    CHECK_EQ(specialized(&f, 0), 0);
    fx_done(&f);
}

/* Pinned while the cost model timed it: the site stops timing (else every
 * later submit would wait for the one before). */
TEST(pinned_site_stops_timing)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_fails, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    g_universal = NULL;
    g_variant_cost = 500;
    mockb_set_cost(c->dev, cost, NULL);
    for (int i = 1; i <= 8; i++)
        step(&f);
    struct scheme *s = pool_get(&c->schemes, f.scheme.id);
    REQUIRE(s != NULL);
    CHECK_EQ(sstats(&f).spec_pinned, 1);
    CHECK_EQ(s->spec.timing, 0);
    mockb_set_cost(c->dev, NULL, NULL);
    fx_done(&f);
}

TEST(off_switch_mid_run)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    c->spec.override = 0;   /* from here on KILN_SPECIALIZATION decides, read at every submit */
    setenv("KILN_SPECIALIZATION", "1", 1);
    for (int i = 1; i <= 4; i++)
        step(&f);
    setenv("KILN_SPECIALIZATION", "off", 1);
    for (int i = 5; i <= 7; i++)
        step(&f);
    CHECK_EQ(specialized(&f, 0), 0);
    setenv("KILN_SPECIALIZATION", "1", 1);
    for (int i = 8; i <= 9; i++)
        step(&f);
    /* Back on: the cached variant is ready, so the same submit promotes. */
    CHECK_LOG(&f, "warm@1{0,1} promote@2{0,1} demote@5{0,1} warm@8{0,1} promote@8{0,1}");
    unsetenv("KILN_SPECIALIZATION");
    fx_done(&f);
}

/* A variant the node stopped recording with stays referenced until two
 * more submits passed and the device finished the last submit using it. */
TEST(unbound_variant_is_parked)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    step(&f);
    mockb_hold(c->dev, true);   /* submits stay in flight from here on */
    step(&f);   /* 2: promoted; this submit runs the variant */
    REQUIRE(!list_empty(&c->spec.variants));
    struct spec_variant *v = NULL, *e;
    list_for_each(e, tmp, &c->spec.variants, struct spec_variant, lru)
        if (e->mask == 3)
            v = e;
    REQUIRE(v != NULL);
    CHECK_EQ(v->refs, 1);
    set(&f, 0, 0, 8);           /* demote: parked */
    CHECK_EQ(v->refs, 1);
    step(&f);                   /* 3 */
    step(&f);                   /* 4 */
    step(&f);                   /* 5: two submits passed, but the device still runs them */
    CHECK_EQ(v->refs, 1);
    mockb_release(c->dev);
    mockb_hold(c->dev, false);
    step(&f);                   /* 6: released */
    CHECK_EQ(v->refs, 0);       /* unreferenced, still cached */
    fx_done(&f);
}

/* The cost model, with the mock's timestamps: a variant no faster than its
 * universal program is demoted after 3 timed submits and not promoted again
 * at those words; a faster one stays. */

static void cost_model(uint64_t variant_cost, const char *want, uint64_t want_no_gain, int want_specialized)
{
    struct fx f;
    if (fx_init(&f, k_two, 1) != KILN_OK) {
        test_failures_++;
        fprintf(stderr, "%s: setup: %s\n", test_name_, kiln_last_error());
        return;
    }
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    struct prog *p = pool_get(&c->programs, f.prog.id);
    g_universal = p->pipeline;
    g_variant_cost = variant_cost;
    mockb_set_cost(c->dev, cost, NULL);
    for (int i = 1; i <= 20; i++)
        step(&f);
    CHECK_LOG(&f, want);
    CHECK_EQ(sstats(&f).spec_no_gain, want_no_gain);
    CHECK_EQ(specialized(&f, 0), want_specialized);
    mockb_set_cost(c->dev, NULL, NULL);
    fx_done(&f);
}

TEST(cost_model_demotes_a_variant_no_faster)
{
    /* Timed: submits 1, 2, 3 (the universal program; promoted once it has
     * as many samples as the variant will get), 4, 5, 6 (the variant);
     * judged at 7. */
    cost_model(990, "warm@1{0,1} promote@4{0,1} demote@7{0,1}", 1, 0);
}

TEST(cost_model_keeps_a_faster_variant)
{
    cost_model(400, "warm@1{0,1} promote@4{0,1}", 0, 1);
}

/* ---- declines that are no events: counted (invariant 5) ------------------------------ */

/* The mock's ops with ticket_wait failing the next g_fail_waits calls. */
static struct backend_ops g_failing_ops;
static const struct backend_ops *g_real_ops;
static _Atomic int g_fail_waits;   /* atomic: any thread may wait */

static kiln_result failing_wait(struct kb_device *dev, uint64_t ticket, uint64_t timeout_ns)
{
    int left = atomic_load(&g_fail_waits);
    while (left > 0 && !atomic_compare_exchange_weak(&g_fail_waits, &left, left - 1))
        ;
    if (left > 0) {
        return KILN_RAISE(KILN_ERR_DEVICE, "test: the wait for ticket %llu fails", (unsigned long long)ticket);
    }
    return g_real_ops->ticket_wait(dev, ticket, timeout_ns);
}

/* The cost model waits for the last submit to read its times; a failed
 * wait loses that submit's samples and is counted, not forgotten. */
TEST(a_failed_cost_model_wait_is_counted)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    struct prog *p = pool_get(&c->programs, f.prog.id);
    struct scheme *s = pool_get(&c->schemes, f.scheme.id);
    REQUIRE(p && s);
    g_universal = p->pipeline;
    g_variant_cost = 400;
    mockb_set_cost(c->dev, cost, NULL);
    mockb_hold(c->dev, true);   /* submits stay in flight: the next one's top must wait for this one */
    step(&f);                   /* 1: warms, its dispatch timed */
    CHECK(s->spec.timing > 0);   /* a site times its dispatches */
    g_real_ops = c->dev->ops;
    g_failing_ops = *c->dev->ops;
    g_failing_ops.ticket_wait = failing_wait;
    c->dev->ops = &g_failing_ops;
    atomic_store(&g_fail_waits, 1);
    step(&f);                   /* 2: its wait for submit 1's times fails */
    c->dev->ops = g_real_ops;
    CHECK_EQ(atomic_load(&g_fail_waits), 0);
    CHECK_EQ(sstats(&f).spec_samples_lost, 1);
    mockb_release(c->dev);
    mockb_hold(c->dev, false);
    for (int i = 3; i <= 10; i++)
        step(&f);
    CHECK_EQ(sstats(&f).spec_samples_lost, 1);
    CHECK_EQ(specialized(&f, 0), 1);   /* the lost samples only delayed it */
    mockb_set_cost(c->dev, NULL, NULL);
    fx_done(&f);
}

/* A site that wants a variant and can have none (here its program has no
 * source to compile one from, as for a program made from an archive's
 * SPIR-V) stays universal, and each miss is counted. */
TEST(a_variant_lookup_that_finds_nothing_is_counted)
{
    struct fx f;
    REQUIRE_OK(fx_init(&f, k_two, 1));
    struct lctx *c = lctx_of(api_context_peek(f.ctx));
    struct prog *p = pool_get(&c->programs, f.prog.id);
    struct scheme *s = pool_get(&c->schemes, f.scheme.id);
    REQUIRE(p && s && p->front);
    char *source = csvc_front_swap_source_text(c->svc, p->front, NULL);
    for (int i = 1; i <= 4; i++)
        step(&f);
    csvc_front_swap_source_text(c->svc, p->front, source);
    CHECK_LOG(&f, "");
    CHECK_EQ(specialized(&f, 0), 0);
    CHECK(sstats(&f).spec_lookups_missed >= 1);
    uint64_t missed = sstats(&f).spec_lookups_missed;
    /* A word changes: the site looks again, and now finds its variant. */
    set(&f, 0, 0, 9);
    for (int i = 5; i <= 8; i++)
        step(&f);
    CHECK_EQ(sstats(&f).spec_lookups_missed, missed);
    CHECK_EQ(specialized(&f, 0), 1);
    fx_done(&f);
}

int main(void)
{
    unsetenv("KILN_SPECIALIZATION");
    setenv("KILN_ARCHIVE", "0", 1);   /* every variant compiles: none is ready the instant it is asked for */
    RUN(stable_from_the_start);
    RUN(changed_once);
    RUN(ping_pong_every_submit);
    RUN(flip_every_5);
    RUN(moving_counter_beside_stable_flag);
    RUN(sites_share_one_compile);
    RUN(cancel_unstarted_compile);
    RUN(pinned_after_three_failures);
    RUN(pinned_site_stops_timing);
    RUN(off_switch_mid_run);
    RUN(unbound_variant_is_parked);
    RUN(cost_model_demotes_a_variant_no_faster);
    RUN(cost_model_keeps_a_faster_variant);
    RUN(a_failed_cost_model_wait_is_counted);
    RUN(a_variant_lookup_that_finds_nothing_is_counted);
    return TEST_SUMMARY();
}
