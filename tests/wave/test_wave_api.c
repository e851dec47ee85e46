/* SPDX-License-Identifier: MIT */
/*
 * test_wave_api.c: libkiln-wave through its public calls alone, linked as
 * a user links it (the shipped kiln-wave and kiln): the level table (the
 * reference built and first, the GPU levels built, an unknown name told
 * apart from them), a level's analysis,
 * auto's choice and its reasons, a run, its
 * observation in both forms, and the comparison of two observations naming
 * the first difference. Skipped (exit 77) where clang cannot compile for
 * amdgcn.
 */
#include "kernels/kernels.h"

#include "kiln_wave.h"
#include "test.h"


static kiln_wave_code *g_code;   /* memory.cl */
static uint32_t g_grid2d;

TEST(the_level_table_starts_with_the_reference)
{
    uint32_t n = kiln_wave_level_count();
    CHECK(n >= 4);
    kiln_wave_level_info l;
    REQUIRE(kiln_wave_level_get(0, &l) == KILN_OK);
    CHECK(!strcmp(l.name, "reference") && l.built);
    const char *gpu[] = {"lane", "wavefront", "subgroup"};
    for (size_t g = 0; g < 3; g++) {
        bool found = false;
        for (uint32_t i = 0; i < n; i++)
            if (kiln_wave_level_get(i, &l) == KILN_OK && !strcmp(l.name, gpu[g])) {
                found = true;
                CHECK(l.built);   /* every GPU level is built */
                CHECK(l.summary && l.summary[0]);
            }
        CHECK(found);
    }
    CHECK(kiln_wave_level_get(n, &l) == KILN_ERR_INVALID);
}

TEST(a_level_is_checked_by_name)
{
    CHECK(kiln_wave_level_check(g_code, g_grid2d, "reference", NULL) == KILN_OK);
    CHECK(kiln_wave_level_check(g_code, g_grid2d, NULL, NULL) == KILN_OK);   /* NULL: the reference */
    CHECK(kiln_wave_level_check(g_code, g_grid2d, "lane", NULL) == KILN_OK);
    CHECK(kiln_wave_level_check(g_code, g_grid2d, "subgroup", NULL) == KILN_OK);
    CHECK(kiln_wave_level_check(g_code, g_grid2d, "lanes", NULL) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("no level is named 'lanes'");
    CHECK_WAVE_MSG("reference");
    CHECK(kiln_wave_level_check(g_code, 999, "reference", NULL) == KILN_ERR_INVALID);
}

/* auto: the cheapest level that runs the kernel, said with the reasons
 * the cheaper ones could not; a run at auto says what it took. */
TEST(auto_takes_the_cheapest_valid_level_and_says_why)
{
    const char *level = NULL;
    char why[2048];
    REQUIRE(kiln_wave_level_choose(g_code, g_grid2d, NULL, &level, why, sizeof why) == KILN_OK);
    CHECK(level && !strcmp(level, "lane"));   /* caps NULL: a GPU's order; per-lane work, nothing crossing lanes */
    CHECK(strstr(why, "auto chose lane") != NULL);
    CHECK(strstr(why, "ruled out") == NULL);
    CHECK(kiln_wave_level_check(g_code, g_grid2d, "auto", NULL) == KILN_OK);
    uint32_t k;
    REQUIRE(kiln_wave_kernel_find(g_code, "private_array", &k) == KILN_OK);
    REQUIRE(kiln_wave_level_choose(g_code, k, NULL, &level, why, sizeof why) == KILN_OK);
    CHECK(level && !strcmp(level, "reference"));   /* scratch: neither GPU level translates it yet */
    CHECK(strstr(why, "ruled out:\n  lane: kernel 'private_array' uses") != NULL);
    CHECK(strstr(why, "\n  wavefront: kernel 'private_array' uses") != NULL);
    CHECK(kiln_wave_level_choose(g_code, 999, NULL, &level, why, sizeof why) == KILN_ERR_INVALID);
    uint32_t out[64];
    kiln_wave_value args[2] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = out, .size = sizeof out},
                               {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
    /* a run chooses for its device: on a CPU device (lavapipe) the
     * Wavefront level is the cheaper, on a GPU Lane */
    kiln_context ctx;
    kiln_caps caps;
    REQUIRE(kiln_context_create(&(kiln_context_desc){.specialization = -1}, &ctx) == KILN_OK);
    REQUIRE(kiln_context_caps(ctx, &caps) == KILN_OK);
    const char *want = caps.device_type == KILN_DEVICE_CPU ? "wavefront" : "lane";
    REQUIRE(kiln_wave_level_choose(g_code, g_grid2d, &caps, &level, why, sizeof why) == KILN_OK);
    CHECK(!strcmp(level, want));
    kiln_wave_result *res = NULL;
    REQUIRE(kiln_wave_run(g_code, &(kiln_wave_run_desc){.level = "auto", .kernel = g_grid2d, .groups = {1},
                                                        .block = {16, 1, 1}, .args = args, .arg_count = 2,
                                                        .context = ctx},
                          &res) == KILN_OK);
    kiln_wave_run_stats st;
    REQUIRE(kiln_wave_run_stats_get(res, &st) == KILN_OK);
    CHECK(!strcmp(st.level, want));
    char said[64];
    snprintf(said, sizeof said, "auto chose %s", want);
    CHECK(st.choice && strstr(st.choice, said) != NULL);
    kiln_wave_result_destroy(res);
    res = NULL;
    /* no context: the one the run makes, the same device */
    REQUIRE(kiln_wave_run(g_code, &(kiln_wave_run_desc){.level = "auto", .kernel = g_grid2d, .groups = {1},
                                                        .block = {16, 1, 1}, .args = args, .arg_count = 2},
                          &res) == KILN_OK);
    REQUIRE(kiln_wave_run_stats_get(res, &st) == KILN_OK);
    CHECK(!strcmp(st.level, want));
    kiln_wave_result_destroy(res);
    kiln_context_destroy(ctx);
    res = NULL;
    REQUIRE(kiln_wave_run(g_code, &(kiln_wave_run_desc){.level = "wavefront", .kernel = g_grid2d, .groups = {1},
                                                        .block = {16, 1, 1}, .args = args, .arg_count = 2},
                          &res) == KILN_OK);
    REQUIRE(kiln_wave_run_stats_get(res, &st) == KILN_OK);
    CHECK(!strcmp(st.level, "wavefront") && st.choice == NULL);   /* pinned: no choice made */
    kiln_wave_result_destroy(res);
}

static kiln_result run_grid(uint32_t width, uint32_t *out, size_t words, kiln_wave_result **res, const char *level)
{
    memset(out, 0, words * 4);
    kiln_wave_value args[2] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = out, .size = words * 4},
                               {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
    memcpy(args[1].bytes, &width, 4);
    return kiln_wave_run(g_code, &(kiln_wave_run_desc){.level = level, .kernel = g_grid2d, .groups = {1},
                                                        .block = {16, 4, 1}, .args = args, .arg_count = 2,
                                                        .observe = true},
                         res);
}

TEST(a_run_writes_its_buffer_and_is_observed)
{
    uint32_t out[64];
    kiln_wave_result *res;
    REQUIRE(run_grid(16, out, 64, &res, NULL) == KILN_OK);
    int bad = 0;
    for (uint32_t y = 0; y < 4; y++)
        for (uint32_t x = 0; x < 16; x++)
            bad += out[y * 16 + x] != x * 1000u + y;
    CHECK_EQ(bad, 0);
    kiln_wave_run_stats st;
    CHECK(kiln_wave_run_stats_get(res, &st) == KILN_OK);
    CHECK(!strcmp(st.level, "reference"));
    CHECK_EQ(st.waves, 1);
    CHECK(st.instructions > 0);
    void *bin = NULL, *json = NULL;
    size_t bin_len = 0, json_len = 0;
    CHECK(kiln_wave_observation(res, KILN_WAVE_FORM_BINARY, &bin, &bin_len) == KILN_OK);
    CHECK(kiln_wave_observation(res, KILN_WAVE_FORM_JSON, &json, &json_len) == KILN_OK);
    CHECK(bin_len > 32 && !memcmp(bin, "KWOB", 4));
    CHECK(json_len > 2 && ((char *)json)[0] == '{');
    kiln_wave_free(bin);
    kiln_wave_free(json);
    kiln_wave_result_destroy(res);
}

TEST(arguments_are_checked_before_the_run)
{
    uint32_t out[64];
    kiln_wave_result *res = NULL;
    kiln_wave_value one = {.kind = KILN_WAVE_VALUE_BUFFER, .data = out, .size = sizeof out};
    CHECK(kiln_wave_run(g_code, &(kiln_wave_run_desc){.kernel = g_grid2d, .args = &one, .arg_count = 1}, &res) ==
          KILN_ERR_INVALID);
    CHECK_WAVE_MSG("takes 2 arguments");
    CHECK(res == NULL);
    kiln_wave_value two[2] = {one, {.kind = KILN_WAVE_VALUE_BYTES, .size = 8}};
    CHECK(kiln_wave_run(g_code, &(kiln_wave_run_desc){.kernel = g_grid2d, .args = two, .arg_count = 2}, &res) ==
          KILN_ERR_INVALID);
    CHECK_WAVE_MSG("argument 1");
    CHECK(kiln_wave_run(g_code, &(kiln_wave_run_desc){.level = "subgroups", .kernel = g_grid2d}, &res) ==
          KILN_ERR_INVALID);
    CHECK_WAVE_MSG("no level is named 'subgroups'");
    uint32_t k;
    CHECK(kiln_wave_kernel_find(g_code, "nothing", &k) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("has no kernel 'nothing'; it has ");
    CHECK_WAVE_MSG("grid2d");
}

TEST(two_observations_compare_to_the_first_difference)
{
    uint32_t a_out[64], b_out[64];
    kiln_wave_result *ra, *rb;
    REQUIRE(run_grid(16, a_out, 64, &ra, "reference") == KILN_OK);
    REQUIRE(run_grid(16, b_out, 64, &rb, "reference") == KILN_OK);
    void *a, *b;
    size_t al, bl;
    REQUIRE(kiln_wave_observation(ra, KILN_WAVE_FORM_BINARY, &a, &al) == KILN_OK);
    REQUIRE(kiln_wave_observation(rb, KILN_WAVE_FORM_BINARY, &b, &bl) == KILN_OK);
    bool same = false;
    char why[512];
    CHECK(kiln_wave_compare(a, al, b, bl, &same, why, sizeof why) == KILN_OK);
    CHECK(same);
    /* One buffer word changed after the run: the buffer byte is named. */
    b_out[5] ^= 0x100;
    kiln_wave_free(b);
    REQUIRE(kiln_wave_observation(rb, KILN_WAVE_FORM_BINARY, &b, &bl) == KILN_OK);
    CHECK(kiln_wave_compare(a, al, b, bl, &same, why, sizeof why) == KILN_OK);
    CHECK(!same);
    CHECK(strstr(why, "argument 0's buffer: byte 21 is 0x") != NULL);
    /* One register of one lane: the wave, register and lane are named. */
    b_out[5] ^= 0x100;
    kiln_wave_free(b);
    REQUIRE(kiln_wave_observation(rb, KILN_WAVE_FORM_BINARY, &b, &bl) == KILN_OK);
    size_t v0_lane7 = 32 + 80 + 4 * 128 + 4 * 7;   /* header, wave head, sgprs, then v0's lanes */
    ((uint8_t *)b)[v0_lane7] ^= 1;
    CHECK(kiln_wave_compare(a, al, b, bl, &same, why, sizeof why) == KILN_OK);
    CHECK(!same);
    CHECK(strstr(why, "wave 0 (group 0,0,0 wave 0): v0 lane 7 is 0x") != NULL);
    /* A register one level says it cannot see (version 2's blind masks)
     * is not compared: v0's bit in the second's vgpr_blind. */
    size_t v_blind = 32 + 32 + 4 * 4;   /* header, wave head to blind, sgpr_blind */
    ((uint8_t *)b)[v_blind] |= 1;
    CHECK(kiln_wave_compare(a, al, b, bl, &same, why, sizeof why) == KILN_OK);
    CHECK(same);
    ((uint8_t *)b)[v_blind] &= (uint8_t)~1u;
    ((uint8_t *)b)[v0_lane7] ^= 1;
    /* Not observations: refused, naming which. */
    CHECK(kiln_wave_compare(a, al, b, 31, &same, why, sizeof why) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("second observation is cut short");
    CHECK(kiln_wave_compare("nonsense, not an observation at all", 36, b, bl, &same, why, sizeof why) ==
          KILN_ERR_INVALID);
    CHECK_WAVE_MSG("the first is not an observation");
    CHECK(kiln_wave_compare(a, al - 8, b, bl, &same, why, sizeof why) == KILN_ERR_INVALID);
    CHECK_WAVE_MSG("the first observation is cut short in argument 0's buffer");
    kiln_wave_free(a);
    kiln_wave_free(b);
    kiln_wave_result_destroy(ra);
    kiln_wave_result_destroy(rb);
}

TEST(a_kernel_is_described)
{
    char *text = NULL;
    CHECK(kiln_wave_kernel_describe(g_code, g_grid2d, KILN_WAVE_DESCRIBE_SETUP, &text) == KILN_OK);
    CHECK(text && strstr(text, "initial SGPRs") && !strstr(text, "instructions:"));
    kiln_wave_free(text);
    CHECK(kiln_wave_kernel_describe(g_code, g_grid2d, KILN_WAVE_DESCRIBE_COUNTS | KILN_WAVE_DESCRIBE_DISASM, &text) ==
          KILN_OK);
    CHECK(text && strstr(text, "s_endpgm") && strstr(text, "instructions: ") && !strstr(text, "initial SGPRs"));
    kiln_wave_free(text);
    CHECK(kiln_wave_kernel_describe(g_code, g_grid2d, 0x80, &text) == KILN_ERR_INVALID);
}

int main(void)
{
    kt_require_target();
    char path[700];
    size_t len;
    if (kt_compile("memory", 0, path, sizeof path) != 0) {
        printf("FAIL cannot compile memory.cl\n0 passed, 1 failed\n");
        return 1;
    }
    uint8_t *bytes = kt_read(path, &len);
    if (!bytes || kiln_wave_code_load(bytes, len, &g_code) != KILN_OK ||
        kiln_wave_kernel_find(g_code, "grid2d", &g_grid2d) != KILN_OK) {
        printf("FAIL cannot load memory.o: %s\n0 passed, 1 failed\n", kiln_wave_last_error());
        return 1;
    }
    free(bytes);
    RUN(the_level_table_starts_with_the_reference);
    RUN(a_level_is_checked_by_name);
    RUN(auto_takes_the_cheapest_valid_level_and_says_why);
    RUN(a_run_writes_its_buffer_and_is_observed);
    RUN(arguments_are_checked_before_the_run);
    RUN(two_observations_compare_to_the_first_difference);
    RUN(a_kernel_is_described);
    kiln_wave_code_destroy(g_code);
    return TEST_SUMMARY();
}
