/* SPDX-License-Identifier: MIT */
/*
 * board: which compile runs next, as pure policy over what is queued and
 * what runs (compile.h gives the rules as users see them). The compile
 * service (compile.c) fills a struct board from its queues under its lock,
 * asks board_choose, and acts: it takes the job the choice names and
 * defers the giants the choice passes over. No thread, no job, no lock
 * here: tests/compile/test_board.c drives it with counts alone.
 *
 * The rules:
 * - a retry alone (a giant that failed, tried again with a fresh cache)
 *   runs when no giant is in flight; while one waits or runs, no giant
 *   starts;
 * - at most giant_bound giants are in flight (min(4, workers - 1), at
 *   least 1: board_giant_bound);
 * - wanted work first: a wanted giant that may not start is deferred, and
 *   the first small wanted job runs instead;
 * - then deferred giants, oldest first, once one may start;
 * - then normal, then background work, each as wanted work is.
 */
#ifndef KILN_COMPILE_BOARD_H
#define KILN_COMPILE_BOARD_H

#include <stdbool.h>
#include <stdint.h>

#define BOARD_PRIOS 3   /* enum cprio: background, normal, wanted */

struct board {
    uint32_t giants_running;       /* giants in flight (a retry alone not counted) */
    uint32_t giant_bound;
    bool alone_running;            /* a retry alone in flight */
    /* Counts the policy reads only as none or some: a caller may give 1
     * for "some", and small[] only where a giant may not start. */
    uint32_t alone_queued;         /* retries waiting */
    uint32_t deferred_queued;      /* giants deferred, waiting */
    uint32_t queued[BOARD_PRIOS];  /* jobs waiting, by enum cprio */
    uint32_t small[BOARD_PRIOS];   /* of them, not giants */
};

enum board_take {
    BOARD_IDLE,                    /* nothing may start now */
    BOARD_ALONE,                   /* the first retry alone */
    BOARD_DEFERRED,                /* the first deferred giant */
    BOARD_FIRST,                   /* the first job of queue prio */
    BOARD_FIRST_SMALL,             /* the first small job of queue prio; defer the giants before it */
};

struct board_choice {
    enum board_take take;
    int prio;                      /* for FIRST and FIRST_SMALL */
    /* Queues whose giants are all passed over (may not start, and no small
     * job behind them was taken): bit p for enum cprio p. Their giants are
     * deferred. */
    uint32_t defer_all;
};

/* Whether a giant may start now. */
bool board_giant_may_start(const struct board *b);
/* What runs next. */
struct board_choice board_choose(const struct board *b);
/* The giants in flight at once for a service of `workers` threads asked
 * for at most `giant_compiles`: min(giant_compiles, workers - 1), at least
 * 1 (a giant never takes the last worker while another may run). */
uint32_t board_giant_bound(uint32_t giant_compiles, uint32_t workers);

#endif
