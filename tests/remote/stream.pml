/* SPDX-License-Identifier: MIT */
/*
 * stream.pml: kiln's command stream (src/remote/stream.c, client.c,
 * server.c) as a Spin model: both rings at once, each side parking on
 * each of them in turn, and calls that run ahead.
 *
 * The client makes N calls. Each is posted (run ahead: answered only if
 * it fails, which the server decides freely) or awaited; the last is
 * always awaited (a synchronization point). A call is a record in the
 * command ring (CAPC slots); an answer a record in the return ring (CAPR
 * slots). Every wait parks by the doorbell's protocol (flag, re-test,
 * futex wait; the waker publishes, then clears a set flag and wakes):
 *
 *   client, sending    the command ring full: it parks for a slice, then
 *                      takes every answer already there (drain), and tries
 *                      again; a slice may end woken or timed out
 *   client, awaiting   its answer not there: it parks on the return ring,
 *                      taking the answers of earlier run-ahead calls that
 *                      fail as they come (they are kept for the next
 *                      synchronization point)
 *   server, reading    the command ring empty: it parks on it
 *   server, answering  the return ring full: it parks on it
 *
 * Memory is sequentially consistent here: the store-buffer reorderings
 * of one doorbell are doorbell.pml's (tests/transport/), checked there.
 * Checked: no invalid end state (neither side asleep for good: no lost
 * wakeup on either ring in either direction, and no client blocked on a
 * full command ring while its server is blocked on a full return ring),
 * every answer is to a call already made and arrives in call order, and
 * none is left over. Built with -DNODRAIN the client waits for room
 * without taking answers, and Spin must find that deadlock: tests.cmake
 * runs both.
 */
#ifndef N
#define N 4
#endif
#ifndef CAPC
#define CAPC 1
#endif
#ifndef CAPR
#define CAPR 1
#endif

/* the control page: cursors and park flags */
byte chead, ctail;         /* command ring: the client publishes, the server retires */
byte rhead, rtail;         /* return ring: the server publishes, the client retires */
bool c_park_space, c_park_data, s_park_space, s_park_data;
/* the rings' records: the call's number, and whether it is awaited */
byte cmd_call[CAPC];
bool cmd_awaited[CAPC];
byte ret_call[CAPR];
bool c_asleep, s_asleep;   /* in futex_wait */
byte deferred;             /* run-ahead answers the client took */

/* The waker's move, after it published: clear a set flag, and wake. */
#define WAKE(flag, asleep) \
    if \
    :: flag -> atomic { flag = false; asleep = false } \
    :: else -> skip \
    fi

/* The sleeper's: flag, re-test, futex_wait(flag set). */
#define PARK(flag, cond, asleep) \
    flag = true; \
    if \
    :: cond -> flag = false \
    :: else -> \
        atomic { if :: flag -> asleep = true :: else -> skip fi }; \
        !asleep; \
        flag = false \
    fi

/* The same for one slice: it may also end with the time. */
#define PARK_SLICE(flag, cond, asleep) \
    flag = true; \
    if \
    :: cond -> flag = false \
    :: else -> \
        atomic { if :: flag -> asleep = true :: else -> skip fi }; \
        if \
        :: !asleep -> skip \
        :: asleep -> asleep = false   /* the slice ran out */ \
        fi; \
        flag = false \
    fi

/* One answer off the return ring, its room given back. */
#define TAKE(rec) \
    rec = ret_call[rtail % CAPR]; \
    rtail++; \
    WAKE(s_park_space, s_asleep)

active proctype client()
{
    byte i, rec;
    bool awaited;
    do
    :: i == N -> break
    :: else ->
        if
        :: i == N - 1 -> awaited = true
        :: i < N - 1 -> awaited = true
        :: i < N - 1 -> awaited = false
        fi;
        /* send */
        do
        :: chead - ctail < CAPC ->
            cmd_call[chead % CAPC] = i;
            cmd_awaited[chead % CAPC] = awaited;
            chead++;
            WAKE(s_park_data, s_asleep);
            break
        :: else ->
#ifdef NODRAIN
            PARK(c_park_space, chead - ctail < CAPC, c_asleep)
#else
            PARK_SLICE(c_park_space, chead - ctail < CAPC, c_asleep);
            do   /* drain: the answers already there, all run-ahead calls' */
            :: rhead != rtail -> TAKE(rec); assert(rec < i); deferred++
            :: else -> break
            od
#endif
        od;
        /* await */
        do
        :: !awaited -> break
        :: awaited && rhead != rtail ->
            TAKE(rec);
            if
            :: rec == i -> break
            :: else -> assert(rec < i); deferred++   /* an earlier run-ahead call failed */
            fi
        :: awaited && rhead == rtail ->
            PARK(c_park_data, rhead != rtail, c_asleep)
        od;
        i++
    od;
    assert(rhead == rtail)   /* every answer taken */
}

active proctype server()
{
    byte j, rec, last = 255;
    bool awaited, answer;
    do
    :: j == N -> break
    :: else ->
        /* read */
        do
        :: chead != ctail -> break
        :: else -> PARK(s_park_data, chead != ctail, s_asleep)
        od;
        rec = cmd_call[ctail % CAPC];
        awaited = cmd_awaited[ctail % CAPC];
        ctail++;
        WAKE(c_park_space, c_asleep);
        assert(rec == j);   /* in call order */
        /* apply: an awaited call is answered; a posted one only if it failed */
        if
        :: awaited -> answer = true
        :: !awaited -> answer = true
        :: !awaited -> answer = false
        fi;
        if
        :: answer ->
            do
            :: rhead - rtail < CAPR -> break
            :: else -> PARK(s_park_space, rhead - rtail < CAPR, s_asleep)
            od;
            assert(last == 255 || rec > last);
            last = rec;
            ret_call[rhead % CAPR] = rec;
            rhead++;
            WAKE(c_park_data, c_asleep)
        :: else -> skip
        fi;
        j++
    od
}
