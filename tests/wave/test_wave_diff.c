/* SPDX-License-Identifier: MIT */
/*
 * test_wave_diff.c: kiln_wave_diff, the differential oracle's localisation,
 * against a level made wrong on purpose: a test hook corrupts the
 * Wavefront level's translation of one instruction (bit 0 of its
 * destination flipped at its nth execution in each wave), and the diff
 * with the reference must name that instruction's offset, the execution
 * (inside a loop) and the wave, and give the caller's buffers back as they
 * were; the same at the Subgroup level (bisected) and the Lane level (found,
 * said not bisected). Two agreeing levels report the same; a level
 * against itself is refused. Skipped (exit 77) without clang's amdgcn target and test data.
 */


#include "kernels/kernels.h"

#include "kiln_wave.h"
#include "test.h"
#include "wave/wavefront.h"

#include <inttypes.h>

static kiln_wave_code *g_code;
static uint32_t g_loop_sum;

static kiln_result diff_loop_sum(uint32_t *out, kiln_wave_diff_report *rep, const char *a, const char *b)
{
    uint32_t n = 11;
    kiln_wave_value args[2] = {{.kind = KILN_WAVE_VALUE_BUFFER, .data = out, .size = 128 * 4},
                               {.kind = KILN_WAVE_VALUE_BYTES, .size = 4}};
    memcpy(args[1].bytes, &n, 4);
    return kiln_wave_diff(g_code,
                          &(kiln_wave_run_desc){.level = a, .kernel = g_loop_sum, .groups = {2, 1, 1},
                                                .block = {64, 1, 1}, .args = args, .arg_count = 2},
                          b, rep);
}

TEST(levels_that_agree_are_the_same)
{
    uint32_t out[128] = {0};
    kiln_wave_diff_report rep;
    REQUIRE(diff_loop_sum(out, &rep, NULL, "wavefront") == KILN_OK);
    CHECK(rep.same);
    CHECK(!rep.bisected);
    CHECK_EQ(rep.runs, 2);
    CHECK_EQ(out[5], 0);   /* the buffer as given */
}

/* v_xad_u32 at 0xb0 is the loop's body (loop_sum runs g * 7 % 11 times a
 * lane): corrupted at its third execution, the diff names it there. */
TEST(a_corrupted_instruction_is_found_and_its_execution_named)
{
    uint32_t out[128];
    for (int i = 0; i < 128; i++)
        out[i] = 0x5a5a0000u + (uint32_t)i;
    wf_test_corrupt(0xb0, 3);
    kiln_wave_diff_report rep;
    if (getenv("KILN_TEST_VERBOSE"))
        fprintf(stderr, "  diff, the third execution corrupted\n");
    kiln_result r = diff_loop_sum(out, &rep, "reference", "wavefront");
    wf_test_corrupt(0, 0);
    REQUIRE(r == KILN_OK);
    CHECK(!rep.same);
    CHECK(rep.first[0] != 0);
    CHECK(rep.bisected);
    CHECK_EQ(rep.offset, 0xb0);
    CHECK(strstr(rep.instruction, "v_xad_u32") != NULL);
    CHECK_EQ(rep.execution, 3);
    CHECK(rep.step > 3);
    CHECK(strstr(rep.at_step, "v2 lane") != NULL);
    CHECK_EQ(rep.group[0], 0);
    CHECK_EQ(rep.wave, 0);
    CHECK(rep.runs > 4);
    int kept = 0;
    for (int i = 0; i < 128; i++)
        kept += out[i] == 0x5a5a0000u + (uint32_t)i;
    CHECK_EQ(kept, 128);   /* given back as they were */
    fprintf(stderr, "  found %s at 0x%" PRIx64 ", execution %" PRIu64 ", step %" PRIu64 " in %u runs\n",
            rep.instruction, rep.offset, rep.execution, rep.step, rep.runs);
    /* the other order names the same instruction */
    if (getenv("KILN_TEST_VERBOSE"))
        fprintf(stderr, "  diff, the first execution corrupted, the levels the other way\n");
    wf_test_corrupt(0xb0, 1);
    r = diff_loop_sum(out, &rep, "wavefront", "reference");
    wf_test_corrupt(0, 0);
    REQUIRE(r == KILN_OK);
    CHECK(rep.bisected);
    CHECK_EQ(rep.offset, 0xb0);
    CHECK_EQ(rep.execution, 1);
}

/* The Lane level agrees with the reference and with the Wavefront level;
 * corrupted (the same hook: its translation is the Wavefront level's, a
 * lane at a time), the diff finds it, names the register and lane, and
 * says why it is not bisected (a lane cannot stop at the wave's N-th
 * instruction). */
TEST(the_lane_level_agrees_and_a_corrupted_one_is_found)
{
    uint32_t out[128];
    for (int i = 0; i < 128; i++)
        out[i] = 0x5a5a0000u + (uint32_t)i;
    kiln_wave_diff_report rep;
    REQUIRE(diff_loop_sum(out, &rep, "reference", "lane") == KILN_OK);
    CHECK(rep.same);
    REQUIRE(diff_loop_sum(out, &rep, "lane", "wavefront") == KILN_OK);
    CHECK(rep.same);
    wf_test_corrupt(0xb0, 3);
    kiln_result r = diff_loop_sum(out, &rep, "reference", "lane");
    wf_test_corrupt(0, 0);
    REQUIRE(r == KILN_OK);
    CHECK(!rep.same);
    CHECK(!rep.bisected);
    CHECK(strstr(rep.first, "v2 lane") != NULL);
    CHECK(strstr(rep.at_step, "the lane level cannot stop a wave") != NULL);
    CHECK_EQ(rep.runs, 2);
    int kept = 0;
    for (int i = 0; i < 128; i++)
        kept += out[i] == 0x5a5a0000u + (uint32_t)i;
    CHECK_EQ(kept, 128);
    fprintf(stderr, "  lane: %s; %s\n", rep.first, rep.at_step);
}

/* The Subgroup level's lanes run in lockstep, so it stops a wave after
 * its N-th instruction as the Wavefront level does: a corruption there is
 * bisected to the instruction and its execution. */
TEST(a_corrupted_subgroup_level_is_bisected)
{
    uint32_t out[128] = {0};
    kiln_wave_diff_report rep;
    REQUIRE(diff_loop_sum(out, &rep, "reference", "subgroup") == KILN_OK);
    CHECK(rep.same);
    wf_test_corrupt(0xb0, 3);
    kiln_result r = diff_loop_sum(out, &rep, "reference", "subgroup");
    wf_test_corrupt(0, 0);
    REQUIRE(r == KILN_OK);
    CHECK(!rep.same);
    CHECK(rep.bisected);
    CHECK_EQ(rep.offset, 0xb0);
    CHECK(strstr(rep.instruction, "v_xad_u32") != NULL);
    CHECK_EQ(rep.execution, 3);
    CHECK(strstr(rep.at_step, "v2 lane") != NULL);
    fprintf(stderr, "  subgroup: found %s at 0x%" PRIx64 ", execution %" PRIu64 " in %u runs\n", rep.instruction,
            rep.offset, rep.execution, rep.runs);
}

TEST(a_level_against_itself_is_refused)
{
    uint32_t out[128] = {0};
    kiln_wave_diff_report rep;
    CHECK(diff_loop_sum(out, &rep, "wavefront", "wavefront") == KILN_ERR_INVALID);
    CHECK(strstr(kiln_wave_last_error(), "proves nothing") != NULL);
    CHECK(diff_loop_sum(out, &rep, NULL, "nowhere") == KILN_ERR_INVALID);
    CHECK(strstr(kiln_wave_last_error(), "no level is named 'nowhere'") != NULL);
}

int main(void)
{
    kt_require_target();
    char path[700];
    size_t len;
    if (kt_compile("control", 0, path, sizeof path) != 0) {
        printf("FAIL cannot compile control.cl\n0 passed, 1 failed\n");
        return 1;
    }
    uint8_t *bytes = kt_read(path, &len);
    if (!bytes || kiln_wave_code_load(bytes, len, &g_code) != KILN_OK ||
        kiln_wave_kernel_find(g_code, "loop_sum", &g_loop_sum) != KILN_OK) {
        printf("FAIL cannot load control.o: %s\n0 passed, 1 failed\n", kiln_wave_last_error());
        return 1;
    }
    free(bytes);
    RUN(levels_that_agree_are_the_same);
    RUN(a_corrupted_instruction_is_found_and_its_execution_named);
    RUN(the_lane_level_agrees_and_a_corrupted_one_is_found);
    RUN(a_corrupted_subgroup_level_is_bisected);
    RUN(a_level_against_itself_is_refused);
    kiln_wave_code_destroy(g_code);
    return TEST_SUMMARY();
}
