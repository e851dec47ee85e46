/* SPDX-License-Identifier: MIT */
/*
 * board.c: the compile service's scheduling policy (board.h).
 */
#include "board.h"

bool board_giant_may_start(const struct board *b)
{
    return b->giants_running < b->giant_bound && !b->alone_running && b->alone_queued == 0;
}

uint32_t board_giant_bound(uint32_t giant_compiles, uint32_t workers)
{
    uint32_t spare = workers > 1 ? workers - 1 : 1;
    uint32_t bound = giant_compiles < spare ? giant_compiles : spare;
    return bound ? bound : 1;
}

/* Queue prio's pick: its first job when giants may start (or it is not a
 * giant: the caller sees which), else its first small job; none when it
 * holds giants only, which are then all deferred. */
static bool from_queue(const struct board *b, int prio, struct board_choice *c)
{
    if (!b->queued[prio])
        return false;
    if (board_giant_may_start(b)) {
        c->take = BOARD_FIRST;
        c->prio = prio;
        return true;
    }
    if (b->small[prio]) {
        c->take = BOARD_FIRST_SMALL;
        c->prio = prio;
        return true;
    }
    c->defer_all |= 1u << prio;
    return false;
}

struct board_choice board_choose(const struct board *b)
{
    struct board_choice c = {.take = BOARD_IDLE, .prio = -1};
    if (b->alone_queued && !b->alone_running && b->giants_running == 0) {
        c.take = BOARD_ALONE;
        return c;
    }
    if (from_queue(b, 2, &c))   /* wanted */
        return c;
    if (b->deferred_queued && board_giant_may_start(b)) {
        c.take = BOARD_DEFERRED;
        return c;
    }
    for (int prio = 1; prio >= 0; prio--)   /* normal, background */
        if (from_queue(b, prio, &c))
            return c;
    return c;
}
