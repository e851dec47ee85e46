/* SPDX-License-Identifier: MIT */
/*
 * test_board.c: the compile service's scheduling policy alone (board.h),
 * driven with counts: no thread, no job, no compile.
 */
#include "compile/board.h"
#include "test.h"

enum { BG = 0, NORMAL = 1, WANTED = 2 };

TEST(the_giant_bound_leaves_a_worker_for_small_work)
{
    CHECK_EQ(board_giant_bound(4, 16), 4);
    CHECK_EQ(board_giant_bound(4, 3), 2);
    CHECK_EQ(board_giant_bound(4, 2), 1);
    CHECK_EQ(board_giant_bound(4, 1), 1);   /* one worker: giants still run, one at a time */
    CHECK_EQ(board_giant_bound(0, 8), 1);
}

TEST(nothing_queued_is_idle)
{
    struct board b = {.giant_bound = 2};
    CHECK_EQ(board_choose(&b).take, BOARD_IDLE);
}

TEST(wanted_work_goes_first_then_normal_then_background)
{
    struct board b = {.giant_bound = 2, .queued = {1, 1, 1}, .small = {1, 1, 1}};
    struct board_choice c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST && c.prio == WANTED);
    b.queued[WANTED] = b.small[WANTED] = 0;
    c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST && c.prio == NORMAL);
    b.queued[NORMAL] = b.small[NORMAL] = 0;
    c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST && c.prio == BG);
}

TEST(giants_past_the_bound_are_deferred_and_small_work_runs)
{
    /* two giants in flight, bound two: the wanted queue's giants are
     * passed over for its first small job */
    struct board b = {.giants_running = 2, .giant_bound = 2, .queued = {0, 0, 3}, .small = {0, 0, 1}};
    CHECK(!board_giant_may_start(&b));
    struct board_choice c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST_SMALL && c.prio == WANTED);
    CHECK_EQ(c.defer_all, 0);
    /* giants only: all of them deferred, and normal work runs */
    b.small[WANTED] = 0;
    b.queued[NORMAL] = b.small[NORMAL] = 1;
    c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST_SMALL && c.prio == NORMAL);
    CHECK_EQ(c.defer_all, 1u << WANTED);
    /* nothing small anywhere: idle, every queue's giants deferred */
    b.queued[NORMAL] = 2, b.small[NORMAL] = 0;
    c = board_choose(&b);
    CHECK_EQ(c.take, BOARD_IDLE);
    CHECK_EQ(c.defer_all, (1u << WANTED) | (1u << NORMAL));
}

TEST(deferred_giants_start_once_a_slot_frees_before_normal_work)
{
    struct board b = {.giants_running = 1, .giant_bound = 2, .deferred_queued = 2, .queued = {0, 5, 0},
                      .small = {0, 5, 0}};
    CHECK(board_giant_may_start(&b));
    CHECK_EQ(board_choose(&b).take, BOARD_DEFERRED);
    /* but wanted work still goes first */
    b.queued[WANTED] = b.small[WANTED] = 1;
    struct board_choice c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST && c.prio == WANTED);
}

TEST(a_retry_alone_waits_for_every_giant_and_holds_giants_back)
{
    struct board b = {.giants_running = 1, .giant_bound = 3, .alone_queued = 1, .queued = {0, 2, 0},
                      .small = {0, 1, 0}};
    CHECK(!board_giant_may_start(&b));   /* a retry waits: no giant starts */
    struct board_choice c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST_SMALL && c.prio == NORMAL);
    b.giants_running = 0;
    CHECK_EQ(board_choose(&b).take, BOARD_ALONE);
    /* while it runs, small work goes on and giants wait */
    b.alone_queued = 0, b.alone_running = true;
    CHECK(!board_giant_may_start(&b));
    c = board_choose(&b);
    CHECK(c.take == BOARD_FIRST_SMALL && c.prio == NORMAL);
    /* a second retry waits for the first */
    b.alone_queued = 1;
    c = board_choose(&b);
    CHECK(c.take != BOARD_ALONE);
}

int main(void)
{
    RUN(the_giant_bound_leaves_a_worker_for_small_work);
    RUN(nothing_queued_is_idle);
    RUN(wanted_work_goes_first_then_normal_then_background);
    RUN(giants_past_the_bound_are_deferred_and_small_work_runs);
    RUN(deferred_giants_start_once_a_slot_frees_before_normal_work);
    RUN(a_retry_alone_waits_for_every_giant_and_holds_giants_back);
    return TEST_SUMMARY();
}
