/* SPDX-License-Identifier: MIT */
/*
 * doorbell.pml: kiln's ring doorbell (src/transport/ring.c) as a Spin model,
 * on a machine with a store buffer per side, so that the one reordering x86
 * and every weaker machine allow, a store passing a later load, is in it.
 *
 * A producer hands N records through a ring of CAP slots to a consumer.
 * Each side sleeps when it cannot go on (the consumer on an empty ring, the
 * producer on a full one) by the same protocol:
 *   sleeper: parked = 1; FENCE; re-test the ring; futex_wait(parked == 1)
 *   waker:   publish cursor; FENCE; if (parked) { exchange(parked, 0); wake }
 * A store goes into its side's buffer and reaches memory later, in order
 * (the flusher processes); a load sees its own side's latest buffered store
 * first, memory otherwise; a fence waits for its side's buffer to drain; an
 * exchange and a futex call drain it and act on memory at once, as locked
 * instructions and system calls do.
 *
 * Checked: no lost wakeup (an assertion: a side asleep, the other side done
 * with every move that could wake it, and its condition already true) and
 * no deadlock (Spin's invalid end states). Built with -DNOFENCE the fences
 * are gone, and Spin must find the lost wakeup: tests.cmake runs both.
 */
#ifndef N
#define N 3
#endif
#ifndef CAP
#define CAP 1
#endif
#ifdef NOFENCE
#define FENCE(buf) skip
#else
#define FENCE(buf) empty(buf)
#endif

/* variables in memory */
#define V_HEAD 0      /* records published: the producer writes it */
#define V_TAIL 1      /* records retired: the consumer writes it */
#define V_CPARK 2     /* consumer parked: set by the consumer, cleared by either */
#define V_PPARK 3     /* producer parked: set by the producer, cleared by either */
byte mem[4];

/* store buffers: (variable, value) in program order */
chan pbuf = [3] of { byte, byte };
chan cbuf = [3] of { byte, byte };

bool p_asleep, c_asleep;   /* in futex_wait */
byte phead, ctail;         /* each side's own cursor, for the lost_wakeup check */
bool p_done, c_done;
bool no_lost_wakeup = true;

/* A store by side `buf`. */
#define STORE(buf, var, val) buf!var,val

/* futex_wait(&mem[var], 1): drains the side's buffer, then sleeps only if
 * the flag still holds 1, until a wake. */
#define FUTEX_WAIT(buf, var, asleep) \
    atomic { empty(buf) -> if :: mem[var] == 1 -> asleep = true :: else -> skip fi }; \
    !asleep

/* The waker's move: exchange(parked, 0) and a wake if it was set. */
#define WAKE_IF_PARKED(buf, var, asleep) \
    if \
    :: mem[var] == 1 -> atomic { empty(buf) -> if :: mem[var] == 1 -> mem[var] = 0; asleep = false :: else -> skip fi } \
    :: else -> skip \
    fi

proctype flusher(chan buf)
{
    byte var, val;
end:
    do
    :: atomic { buf?var,val -> mem[var] = val }
    od
}

active proctype producer()
{
#define head phead   /* its own cursor: it alone writes it, so it reads it locally */
    byte tail;
    do
    :: head == N -> break
    :: else ->
        tail = mem[V_TAIL];
        if
        :: head - tail < CAP ->
            head++;
            STORE(pbuf, V_HEAD, head);               /* publish */
            FENCE(pbuf);
            WAKE_IF_PARKED(pbuf, V_CPARK, c_asleep)
        :: else ->                                   /* full: park for space */
            STORE(pbuf, V_PPARK, 1);
            FENCE(pbuf);
            if
            :: head - mem[V_TAIL] < CAP -> STORE(pbuf, V_PPARK, 0)   /* re-test found space */
            :: else ->
                FUTEX_WAIT(pbuf, V_PPARK, p_asleep);
                STORE(pbuf, V_PPARK, 0)
            fi
        fi
    od;
    p_done = true
#undef head
}

active proctype consumer()
{
#define tail ctail
    do
    :: tail == N -> break
    :: else ->
        if
        :: mem[V_HEAD] != tail ->
            tail++;
            STORE(cbuf, V_TAIL, tail);               /* retire */
            FENCE(cbuf);
            WAKE_IF_PARKED(cbuf, V_PPARK, p_asleep)
        :: else ->                                   /* empty: park */
            STORE(cbuf, V_CPARK, 1);
            FENCE(cbuf);
            if
            :: mem[V_HEAD] != tail -> STORE(cbuf, V_CPARK, 0)
            :: else ->
                FUTEX_WAIT(cbuf, V_CPARK, c_asleep);
                STORE(cbuf, V_CPARK, 0)
            fi
        fi
    od;
    c_done = true
#undef tail
}

/* A lost wakeup: a side asleep while what it waits for is already in
 * memory, and the other side asleep too or done, so nobody is left to wake
 * it. */
active proctype lost_wakeup()
{
end:
    atomic {
        (c_asleep && mem[V_HEAD] != ctail && (p_done || p_asleep) && empty(pbuf)) ||
        (p_asleep && phead - mem[V_TAIL] < CAP && (c_done || c_asleep) && empty(cbuf)) ->
        no_lost_wakeup = false;
        assert(no_lost_wakeup)
    }
}

init
{
    run flusher(pbuf);
    run flusher(cbuf)
}
