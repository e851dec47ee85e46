/* SPDX-License-Identifier: MIT */
/*
 * test_wavefront.c: the Wavefront level against the reference, through
 * libkiln-wave's public calls on the default device (lavapipe here, the
 * GPU machine's driver there). Every kernel of the corpus the level runs is
 * run at both levels on the same inputs, and the two observations (every
 * wave's registers, every lane, and every buffer's bytes and written
 * ranges) must be the same; what the level does not run is refused before
 * it runs, naming the instruction, its offset and why; a run past the
 * level's bound of block transitions fails naming the bound, never
 * returning an unfinished observation. Skipped (exit 77) where clang
 * cannot compile for amdgcn and the build's test data is not at hand.
 */
#include "kernels/kernels.h"

#include <time.h>

#include "kiln_wave.h"
#include "test.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}


/* One argument of a case: a buffer of size bytes (zeros; or random
 * small integers, or floats that are whole eighths, normal and of either
 * sign: no NaN or denormal, whose handling devices may differ in), a 4- or
 * 8-byte value, or dynamic LDS. */
struct arg {
    char kind;        /* 'b' buffer, 'i' integers, 'F' floats, 'R' float bits (no NaN or inf: denormals
                       * too), 'u' u32, 'q' u64, 'f' f32 (its bits), 'l' local */
    uint64_t value;   /* the value, or the size in bytes */
};

struct kcase {
    const char *file;      /* NAME.cl compiled, or NAME.s assembled */
    bool assembled;
    const char *kernel;
    uint32_t groups[3], block[3];
    struct arg args[6];
    uint32_t nargs;
    /* the Lane level's verdict: NULL, it runs the kernel (and must match
     * the reference); else a phrase of its refusal (the instruction's
     * offset and the rule it breaks) */
    const char *lane;
};

static kiln_context g_ctx;   /* every run's: the level keeps its programs on it */

static kiln_wave_code *load(const char *file, bool assembled)
{
    char path[700];
    if ((assembled ? kt_assemble(file, path, sizeof path) : kt_compile(file, 0, path, sizeof path)) != 0)
        return NULL;
    size_t len;
    uint8_t *bytes = kt_read(path, &len);
    kiln_wave_code *code = NULL;
    if (bytes && kiln_wave_code_load(bytes, len, &code) != KILN_OK)
        code = NULL;
    free(bytes);
    return code;
}

static uint32_t rnd_state = 12345;
static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1664525u + 1013904223u;
    return rnd_state >> 8;
}

/* The case's argument values, buffers filled afresh (the same bytes for
 * both levels: the caller seeds rnd). */
static void make_args(const struct kcase *c, kiln_wave_value *v, void **bufs)
{
    for (uint32_t i = 0; i < c->nargs; i++) {
        const struct arg *a = &c->args[i];
        v[i] = (kiln_wave_value){0};
        bufs[i] = NULL;
        switch (a->kind) {
        case 'b': case 'i': case 'F': case 'R': {
            uint32_t *p = calloc(1, (size_t)a->value + 4);
            for (uint64_t k = 0; a->kind == 'i' && k < a->value / 4; k++)
                p[k] = rnd() % 1000;
            for (uint64_t k = 0; a->kind == 'R' && k < a->value / 4; k++) {
                uint32_t x = rnd() ^ rnd() << 24;
                p[k] = (x & 0x7f800000u) == 0x7f800000u ? x & ~0x40000000u : x;
                if (k % 7 == 0)
                    p[k] &= 0x807fffffu;   /* a denormal (or zero) every seventh */
            }
            for (uint64_t k = 0; a->kind == 'F' && k < a->value / 4; k++) {
                float f = (float)((int)(rnd() % 2001) - 1000) / 8.0f;
                memcpy(&p[k], &f, 4);
            }
            bufs[i] = p;
            v[i] = (kiln_wave_value){.kind = KILN_WAVE_VALUE_BUFFER, .data = p, .size = a->value};
            break;
        }
        case 'u': case 'f':
            v[i] = (kiln_wave_value){.kind = KILN_WAVE_VALUE_BYTES, .size = 4};
            memcpy(v[i].bytes, &a->value, 4);
            break;
        case 'q':
            v[i] = (kiln_wave_value){.kind = KILN_WAVE_VALUE_BYTES, .size = 8};
            memcpy(v[i].bytes, &a->value, 8);
            break;
        case 'l':
            v[i] = (kiln_wave_value){.kind = KILN_WAVE_VALUE_LOCAL, .size = a->value};
            break;
        }
    }
}

/* Runs c at level (observed) into *obs; KILN_OK or the run's error. */
static kiln_result run_case(kiln_wave_code *code, const struct kcase *c, const char *level, void **obs, size_t *len)
{
    uint32_t k;
    kiln_result r = kiln_wave_kernel_find(code, c->kernel, &k);
    if (r != KILN_OK)
        return r;
    kiln_wave_value v[6];
    void *bufs[6];
    rnd_state = 12345;
    make_args(c, v, bufs);
    kiln_wave_result *res = NULL;
    r = kiln_wave_run(code,
                      &(kiln_wave_run_desc){.level = level, .kernel = k, .groups = {c->groups[0], c->groups[1],
                                                                                      c->groups[2]},
                                            .block = {c->block[0], c->block[1], c->block[2]}, .args = v,
                                            .arg_count = c->nargs, .observe = true, .context = g_ctx},
                      &res);
    if (r == KILN_OK)
        r = kiln_wave_observation(res, KILN_WAVE_FORM_BINARY, obs, len);
    kiln_wave_result_destroy(res);
    for (uint32_t i = 0; i < c->nargs; i++)
        free(bufs[i]);
    return r;
}

/* a's and b's observations the same; else the first difference said. */
static void same(const struct kcase *c, const char *level, void *a, size_t al, void *b, size_t bl)
{
    bool same = false;
    char why[512] = "";
    CHECK(kiln_wave_compare(a, al, b, bl, &same, why, sizeof why) == KILN_OK);
    if (!same)
        fprintf(stderr, "  %s (%s) at %s: %s\n", c->kernel, c->file, level, why);
    CHECK(same);
}

/* The Subgroup level's refusals in the corpus, by kernel (every other
 * kernel it runs, and must match the reference). */
static const struct {
    const char *kernel, *verdict;
} subgroup_refuses[] = {
    {"reduce", "a group of 256 work-items shares LDS or barriers across 4 waves"}, /* a wave a workgroup */
    {"lds_histogram", "a group of 128 work-items shares LDS or barriers across 2 waves"},
};

static const char *subgroup_verdict(const char *kernel)
{
    for (size_t i = 0; i < sizeof subgroup_refuses / sizeof subgroup_refuses[0]; i++)
        if (!strcmp(subgroup_refuses[i].kernel, kernel))
            return subgroup_refuses[i].verdict;
    return NULL;
}

/* The reference against every device level that runs the kernel: the
 * same observation; the Lane and Subgroup levels' verdicts as pinned. */
static void same_at_every_level(const struct kcase *c)
{
    kiln_wave_code *code = load(c->file, c->assembled);
    uint32_t k = 0;
    if (!code || kiln_wave_kernel_find(code, c->kernel, &k) != KILN_OK) {
        test_failures_++;
        fprintf(stderr, "  %s: cannot load %s: %s\n", c->kernel, c->file, kiln_wave_last_error());
        kiln_wave_code_destroy(code);
        return;
    }
    void *a = NULL, *b = NULL, *l = NULL;
    size_t al = 0, bl = 0, ll = 0;
    uint64_t t0 = now_ns();
    kiln_result ra = run_case(code, c, "reference", &a, &al);
    uint64_t t1 = now_ns();
    if (ra != KILN_OK)
        fprintf(stderr, "  %s: the reference: %s\n", c->kernel, kiln_wave_last_error());
    kiln_result rb = run_case(code, c, "wavefront", &b, &bl);
    if (rb != KILN_OK)
        fprintf(stderr, "  %s: the Wavefront level: %s\n", c->kernel, kiln_wave_last_error());
    uint64_t t2 = now_ns();
    kiln_result verdict = kiln_wave_level_check(code, k, "lane", NULL);
    const char *why = verdict == KILN_OK ? NULL : kiln_wave_last_error();
    if (getenv("KILN_TEST_VERBOSE"))
        fprintf(stderr, "  %s: lane %s\n", c->kernel, why ? why : "runs it");
    if (c->lane ? !why || !strstr(why, c->lane) : why != NULL) {
        test_failures_++;
        fprintf(stderr, "  %s: the Lane level's verdict: %s (expected: %s)\n", c->kernel, why ? why : "it runs",
                c->lane ? c->lane : "it runs");
    }
    kiln_result rl = KILN_OK;
    if (verdict == KILN_OK) {
        rl = run_case(code, c, "lane", &l, &ll);
        if (rl != KILN_OK)
            fprintf(stderr, "  %s: the Lane level: %s\n", c->kernel, kiln_wave_last_error());
    }
    uint64_t t3 = now_ns();
    void *sg = NULL;
    size_t sgl = 0;
    kiln_result rs = run_case(code, c, "subgroup", &sg, &sgl);
    const char *sv = subgroup_verdict(c->kernel);
    if (sv ? rs != KILN_ERR_INVALID || !strstr(kiln_wave_last_error(), sv) : rs != KILN_OK) {
        test_failures_++;
        fprintf(stderr, "  %s: the Subgroup level: %s (expected: %s)\n", c->kernel,
                rs == KILN_OK ? "it runs" : kiln_wave_last_error(), sv ? sv : "it runs");
    }
    if (getenv("KILN_TEST_VERBOSE"))
        fprintf(stderr, "  %s: reference %.2f s, wavefront %.2f s, lane %.2f s, subgroup %.2f s (compiles "
                        "included)\n",
                c->kernel, (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9, (double)(t3 - t2) / 1e9,
                (double)(now_ns() - t3) / 1e9);
    if (ra == KILN_OK && rs == KILN_OK)
        same(c, "subgroup", a, al, sg, sgl);
    kiln_wave_free(sg);
    CHECK_EQ(ra, KILN_OK);
    CHECK_EQ(rb, KILN_OK);
    CHECK_EQ(rl, KILN_OK);
    if (ra == KILN_OK && rb == KILN_OK)
        same(c, "wavefront", a, al, b, bl);
    if (ra == KILN_OK && rl == KILN_OK && l)
        same(c, "lane", a, al, l, ll);
    kiln_wave_free(a);
    kiln_wave_free(b);
    kiln_wave_free(l);
    kiln_wave_code_destroy(code);
}

/* The corpus the level runs, each kernel on inputs of its own shape. */
static const struct kcase cases[] = {
    {"memory", false, "grid2d", {3, 2, 1}, {16, 4, 1}, {{'b', 1536}, {'u', 48}}, 2, NULL},
    {"memory", false, "reverse_local", {1, 1, 1}, {64, 1, 1}, {{'i', 256}, {'l', 256}}, 2, NULL},
    {"memory", false, "gather64", {2, 1, 1}, {64, 1, 1}, {{'b', 1024}, {'i', 4096}, {'q', 3}, {'q', 7}}, 4, NULL},
    {"control", false, "branches", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'i', 512}}, 2, NULL},
    {"control", false, "nested", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'u', 5}}, 2, NULL},
    /* unsigned division: v_rcp_iflag_f32, correctly rounded */
    {"control", false, "loop_sum", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'u', 11}}, 2, NULL},
    {"control", false,
     "selects", {2, 1, 1}, {64, 1, 1}, {{'b', 1024}, {'F', 512}, {'f', 0x3e800000}, {'f', 0x40400000}}, 4, NULL},
    {"math", false, "int_math", {1, 1, 1}, {64, 1, 1}, {{'b', 8192}, {'i', 4096}, {'i', 4096}}, 3, NULL},
    /* cross-lane: readfirstlane, mbcnt, ds_swizzle, ds_bpermute, DPP row_shr with bound_ctrl, readlane, a ballot */
    {"lanes", false, "lanes", {2, 1, 1}, {64, 1, 1}, {{'b', 4096}, {'i', 512}}, 2,
     "ds_swizzle_b32 at offset 0x80: it swizzles values between lanes"},
    /* crosslane.cl: a wave prefix sum and reduction through DPP row shifts and broadcasts, wave
     * rotates and shifts, mirrors, quad_perm; ds_swizzle's modes, ds_permute and ds_bpermute;
     * ballots and mbcnt under divergence; lanes leaving a loop at different depths; 64-bit
     * integers, float special values, a division */
    {"crosslane", false, "wave_scan", {2, 1, 1}, {64, 1, 1}, {{'b', 4096}, {'i', 512}}, 2,
     "v_add_u32 at offset 0x60: its DPP source is another lane's"},
    {"crosslane", false, "swizzles", {2, 1, 1}, {64, 1, 1}, {{'b', 4096}, {'i', 512}}, 2,
     "ds_swizzle_b32 at offset 0x17c"},
    {"crosslane", false, "ballots", {2, 1, 1}, {64, 1, 1}, {{'b', 4096}, {'i', 512}}, 2,
     "v_mbcnt_lo_u32_b32 at offset 0x27c: it reads s106, a lane mask, as a number"},
    {"crosslane", false, "early_exits", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'i', 512}}, 2,
     "s_add_i32 at offset 0x430: it writes s20 where the wave may be while a lane that is off skips"},
    {"crosslane", false, "specials", {2, 1, 1}, {64, 1, 1}, {{'b', 2048}, {'b', 2048}, {'R', 512}}, 3, NULL},
    /* several waves of a group: LDS and barriers */
    /* levels.cl: lanes reading their neighbours' LDS with no barrier (lockstep), a uniform
     * float's select, lanes looping to their own depths */
    {"levels", false, "lds_neighbour", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'i', 512}}, 2,
     "ds_read_b32 at offset 0x"},
    {"levels", false, "uniform_float", {2, 1, 1}, {64, 1, 1}, {{'b', 512}, {'F', 512}, {'f', 0x3f400000}}, 3, NULL},
    {"levels", false, "lds_tickets", {2, 1, 1}, {64, 1, 1}, {{'b', 512}}, 1, "ds_add_rtn_u32 at offset 0x"},
    {"levels", false, "ragged_loops", {2, 1, 1}, {64, 1, 1}, {{'b', 4096}, {'i', 512}}, 2, NULL},
    {"memory", false, "reduce", {3, 1, 1}, {256, 1, 1}, {{'b', 64}, {'i', 4096}}, 2, NULL},
    {"more", false, "lds_histogram", {2, 1, 1}, {128, 1, 1}, {{'b', 1024}, {'i', 1024}}, 2, NULL},
    /* a compare-and-swap loop (one wave: its lanes in lane order, as the reference runs them) */
    {"more", false, "float_cas", {1, 1, 1}, {64, 1, 1}, {{'b', 16}, {'i', 256}}, 2,
     "global_atomic_cmpswap at offset 0x"},
    /* hand-written: DPP bound_ctrl on src1's register, VOP3 clamp on integer adds, min and max of a
     * signalling NaN, in both IEEE modes */
    /* float add, multiply and fused multiply-add on any bits, denormals kept (the device's
     * arithmetic where it is exact, integer arithmetic where the device may flush or not fuse) */
    {"bench", false, "saxpy", {4, 1, 1}, {64, 1, 1}, {{'R', 1024}, {'R', 1024}, {'f', 0x3fc00000}}, 3, NULL},
    {"bench", false, "saxpy", {4, 1, 1}, {64, 1, 1}, {{'R', 1024}, {'R', 1024}, {'f', 0x00012345}}, 3, NULL},
    {"bench", false, "scale", {4, 1, 1}, {64, 1, 1}, {{'b', 1024}, {'i', 1024}, {'u', 2654435761u}}, 3, NULL},
    {"oracle", true, "ieee", {1, 1, 1}, {64, 1, 1}, {{'b', 3072}}, 1, "its DPP source is another lane's"},
    {"oracle", true, "noieee", {1, 1, 1}, {64, 1, 1}, {{'b', 3072}}, 1, "its DPP source is another lane's"},
};

TEST(every_kernel_the_level_runs_matches_the_reference)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same_at_every_level(&cases[i]);
}

/* What the level cannot run is refused before anything runs, naming the
 * instruction, its image offset and the reason; a kernel with scratch by
 * what it needs. */
TEST(what_the_level_cannot_run_is_refused_by_name)
{
    kiln_wave_code *code = load("memory", false);
    REQUIRE(code);
    uint32_t k;
    REQUIRE(kiln_wave_kernel_find(code, "private_array", &k) == KILN_OK);
    CHECK(kiln_wave_level_check(code, k, "wavefront", NULL) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("scratch");
    CHECK(kiln_wave_level_check(code, k, "reference", NULL) == KILN_OK);
    REQUIRE(kiln_wave_kernel_find(code, "grid2d", &k) == KILN_OK);
    CHECK(kiln_wave_level_check(code, k, "wavefront", NULL) == KILN_OK);
    kiln_wave_code_destroy(code);
    /* SDWA is not translated yet: the check names the instruction */
    code = load("modifiers", true);
    REQUIRE(code);
    REQUIRE(kiln_wave_kernel_find(code, "k", &k) == KILN_OK);
    CHECK(kiln_wave_level_check(code, k, "wavefront", NULL) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("cannot run v_add_u32 at offset 0x54");
    CHECK_WAVE_MSG("SDWA");
    kiln_wave_code_destroy(code);
}

/* Kernel k, which takes no arguments, observed at the reference and at
 * level: true when the two agree (the difference said otherwise); the
 * level's observation as JSON in *json when json is not NULL. */
static bool same_as_reference(kiln_wave_code *code, uint32_t k, const char *name, const char *level, void **json,
                              size_t *jlen)
{
    void *obs[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    const char *at[2] = {"reference", level};
    bool ran = true;
    for (int l = 0; l < 2; l++) {
        kiln_wave_result *res = NULL;
        kiln_result r = kiln_wave_run(code, &(kiln_wave_run_desc){.level = at[l], .kernel = k, .observe = true,
                                                                  .context = g_ctx},
                                      &res);
        if (r != KILN_OK)
            fprintf(stderr, "  %s at %s: %s\n", name, at[l], kiln_wave_last_error());
        ran &= r == KILN_OK && kiln_wave_observation(res, KILN_WAVE_FORM_BINARY, &obs[l], &len[l]) == KILN_OK;
        if (l == 1 && json)
            ran &= r == KILN_OK && kiln_wave_observation(res, KILN_WAVE_FORM_JSON, json, jlen) == KILN_OK;
        kiln_wave_result_destroy(res);
    }
    bool same = false;
    char why[512] = "";
    if (ran && kiln_wave_compare(obs[0], len[0], obs[1], len[1], &same, why, sizeof why) == KILN_OK && !same)
        fprintf(stderr, "  %s at %s: %s\n", name, level, why);
    kiln_wave_free(obs[0]);
    kiln_wave_free(obs[1]);
    return ran && same;
}

/* The Lane level's rule, kernel by kernel (lane_rules.s, by hand): each
 * refusal names the instruction, its offset and the rule; the valid one
 * runs at Lane as at the reference, the scalar written where lanes skip
 * said blind in the observation; the Subgroup level runs them all (masks
 * read as numbers, vccz, lanes woken, a barrier some lanes skip) as the
 * reference does. */
TEST(the_lane_rule_is_pinned_kernel_by_kernel)
{
    kiln_wave_code *code = load("lane_rules", true);
    REQUIRE(code);
    static const struct {
        const char *kernel, *verdict;   /* NULL: runs */
    } rules[] = {
        {"scc_from_mask", "s_cbranch_scc0 at offset 0x8: it reads SCC that an operation on a lane mask set"},
        {"vccz_branch", "s_cbranch_vccz at offset 0x104: it branches on whether any lane's vcc bit is set"},
        {"count_lanes", "s_bcnt1_i32_b64 at offset 0x204: it reads vcc, a lane mask, as a number"},
        {"wakes_lanes", "s_mov_b64 at offset 0x30c: it may turn on a lane that is off and skips from the branch at "
                        "0x308"},
        {"barrier_skipped", "s_barrier at offset 0x40c: the wave may run it while a lane that is off skips from the "
                            "branch at 0x408, and the lane would miss the barrier (rule 4)"},
        {"merged_mask", NULL},
        {"unmerged_mask", "s_mov_b64 at offset 0x614: it writes s4 where the wave may be while a lane that is off "
                          "skips from the branch at 0x60c, and s4 is read after 0x618"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        uint32_t k;
        REQUIRE(kiln_wave_kernel_find(code, rules[i].kernel, &k) == KILN_OK);
        kiln_result r = kiln_wave_level_check(code, k, "lane", NULL);
        if (!rules[i].verdict) {
            CHECK_EQ(r, KILN_OK);
            continue;
        }
        CHECK_EQ(r, KILN_ERR_INVALID);
        if (r != KILN_OK && !strstr(kiln_wave_last_error(), rules[i].verdict)) {
            test_failures_++;
            fprintf(stderr, "  %s: %s\n  expected: %s\n", rules[i].kernel, kiln_wave_last_error(), rules[i].verdict);
        }
        CHECK(kiln_wave_level_check(code, k, "wavefront", NULL) == KILN_OK);   /* the wave runs them all */
    }
    uint32_t k;
    REQUIRE(kiln_wave_kernel_find(code, "merged_mask", &k) == KILN_OK);
    void *json = NULL;
    size_t jlen = 0;
    CHECK(same_as_reference(code, k, "merged_mask", "lane", &json, &jlen));
    /* the Subgroup level runs every one of them as the reference does */
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        uint32_t kk;
        REQUIRE(kiln_wave_kernel_find(code, rules[i].kernel, &kk) == KILN_OK);
        CHECK(same_as_reference(code, kk, rules[i].kernel, "subgroup", NULL, NULL));
    }
    /* s6 and scc are written where lanes skip: blind; s[4:5], merged, seen */
    bool blind = false;
    const char *want = "\"blind\": [\"scc\", \"s6\"";
    for (size_t at = 0; json && !blind && at + strlen(want) <= jlen; at++)
        blind = !memcmp((const char *)json + at, want, strlen(want));
    CHECK(blind);
    kiln_wave_free(json);
    kiln_wave_code_destroy(code);
}

/* levels.cl's escape at 200 iterations: the reference's image from every
 * level that finishes it; where a device cuts a level's loops short
 * (lavapipe: 65,535 loop iterations an invocation, which the Wavefront
 * level's lane loops spend here), the run fails naming that limit, never
 * returning the cut loops' result, and auto goes on to the next level and
 * says so. */
TEST(a_device_loop_limit_is_named_and_auto_goes_on)
{
    kiln_wave_code *code = load("levels", false);
    REQUIRE(code);
    uint32_t k;
    REQUIRE(kiln_wave_kernel_find(code, "escape", &k) == KILN_OK);
    enum { W = 32, H = 16 };
    static uint32_t img[4][W * H];
    const char *levels[4] = {"reference", "wavefront", "lane", "auto"};
    kiln_result r[4];
    char choice[2048] = "";
    for (int l = 0; l < 4; l++) {
        int32_t w = W, h = H, iters = 200;
        float scale = 0.05f;
        memset(img[l], 0xee, sizeof img[l]);
        kiln_wave_value args[5] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = img[l], .size = sizeof img[l]},
                                   {.kind = KILN_WAVE_VALUE_BYTES, .size = 4},
                                   {.kind = KILN_WAVE_VALUE_BYTES, .size = 4},
                                   {.kind = KILN_WAVE_VALUE_BYTES, .size = 4},
                                   {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
        memcpy(args[1].bytes, &w, 4), memcpy(args[2].bytes, &h, 4), memcpy(args[3].bytes, &scale, 4);
        memcpy(args[4].bytes, &iters, 4);
        kiln_wave_result *res = NULL;
        r[l] = kiln_wave_run(code, &(kiln_wave_run_desc){.level = levels[l], .kernel = k, .groups = {2, 4, 1},
                                                         .block = {16, 4, 1}, .args = args, .arg_count = 5,
                                                         .context = g_ctx},
                             &res);
        if (r[l] != KILN_OK)
            fprintf(stderr, "  escape at %s: %s\n", levels[l], kiln_wave_last_error());
        kiln_wave_run_stats st;
        if (l == 3 && res && kiln_wave_run_stats_get(res, &st) == KILN_OK && st.choice)
            snprintf(choice, sizeof choice, "%s", st.choice);
        if (r[l] == KILN_ERR_LIMIT)
            CHECK_WAVE_MSG("the device cut the");
        kiln_wave_result_destroy(res);
    }
    CHECK_EQ(r[0], KILN_OK);
    CHECK(r[1] == KILN_OK || r[1] == KILN_ERR_LIMIT);
    CHECK_EQ(r[2], KILN_OK);   /* a lane's loops: about a dozen a block */
    CHECK_EQ(r[3], KILN_OK);
    for (int l = 1; l < 4; l++)
        if (r[l] == KILN_OK)
            CHECK(!memcmp(img[0], img[l], sizeof img[0]));
    if (r[1] == KILN_ERR_LIMIT && strstr(choice, "auto chose wavefront"))
        CHECK(strstr(choice, "wavefront ran out of the device's loop iterations at run time; auto took lane") != NULL);
    kiln_wave_code_destroy(code);
}

/* A wave that never ends stops at the level's bound of block transitions:
 * KILN_ERR_LIMIT naming the kernel, the wave, the offset and the bound, no
 * observation; the device is fine and runs the next kernel. A kernel
 * whose LDS the device's shared memory cannot hold is refused by name, by
 * the check given the device's caps and by a run. */
TEST(the_levels_bounds_are_named)
{
    kiln_wave_code *code = load("bounds", true);
    REQUIRE(code);
    uint32_t k;
    REQUIRE(kiln_wave_kernel_find(code, "forever", &k) == KILN_OK);
    CHECK(kiln_wave_level_check(code, k, "wavefront", NULL) == KILN_OK);
    kiln_wave_result *res = NULL;
    CHECK(kiln_wave_run(code, &(kiln_wave_run_desc){.level = "wavefront", .kernel = k, .observe = true}, &res) ==
          KILN_ERR_LIMIT);
    CHECK_WAVE_MSG("kernel 'forever', group 0,0,0 wave 0, at offset 0x");
    CHECK_WAVE_MSG("65000 block transitions");
    kiln_wave_result_destroy(res);
    res = NULL;
    CHECK(kiln_wave_run(code, &(kiln_wave_run_desc){.level = "lane", .kernel = k, .context = g_ctx}, &res) ==
          KILN_ERR_LIMIT);
    CHECK_WAVE_MSG("the Lane level's bound");
    kiln_wave_result_destroy(res);
    REQUIRE(kiln_wave_kernel_find(code, "big_lds", &k) == KILN_OK);
    kiln_caps caps = {.max_shared_memory_size = 32768};
    CHECK(kiln_wave_level_check(code, k, "wavefront", &caps) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("65536 bytes of LDS");
    CHECK(kiln_wave_level_check(code, k, "reference", &caps) == KILN_OK);
    kiln_context ctx;
    REQUIRE(kiln_context_create(NULL, &ctx) == KILN_OK);
    REQUIRE(kiln_context_caps(ctx, &caps) == KILN_OK);
    if (caps.max_shared_memory_size < 65536) {   /* every device here: GCN's 64 KiB is more than Vulkan's usual */
        CHECK(kiln_wave_run(code, &(kiln_wave_run_desc){.level = "wavefront", .kernel = k, .context = ctx}, &res) ==
              KILN_ERR_INVALID);
        CHECK_WAVE_MSG("more than the device's shared memory");
        kiln_wave_result_destroy(res);
    }
    /* the same context runs the next kernel */
    kiln_wave_code_destroy(code);
    code = load("memory", false);
    REQUIRE(code);
    REQUIRE(kiln_wave_kernel_find(code, "grid2d", &k) == KILN_OK);
    uint32_t out[64] = {0}, width = 16;
    kiln_wave_value args[2] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = out, .size = sizeof out},
                               {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
    memcpy(args[1].bytes, &width, 4);
    CHECK(kiln_wave_run(code, &(kiln_wave_run_desc){.level = "wavefront", .kernel = k, .block = {16, 4, 1},
                                                    .args = args, .arg_count = 2, .context = ctx},
                        &res) == KILN_OK);
    CHECK_EQ(out[3 * 16 + 5], 5 * 1000u + 3);
    kiln_wave_result_destroy(res);
    kiln_wave_code_destroy(code);
    kiln_context_destroy(ctx);
}

int main(void)
{
    kt_require_target();
    /* specialization off: the level's programs have no param words to bake */
    if (kiln_context_create(&(kiln_context_desc){.specialization = -1}, &g_ctx) != KILN_OK) {
        printf("FAIL no context: %s\n0 passed, 1 failed\n", kiln_last_error());
        return 1;
    }
    RUN(every_kernel_the_level_runs_matches_the_reference);
    RUN(what_the_level_cannot_run_is_refused_by_name);
    RUN(the_lane_rule_is_pinned_kernel_by_kernel);
    RUN(a_device_loop_limit_is_named_and_auto_goes_on);
    RUN(the_levels_bounds_are_named);
    kiln_context_destroy(g_ctx);
    return TEST_SUMMARY();
}
