/* SPDX-License-Identifier: MIT */
/*
 * test_doorbell.c: the ring's doorbell under two real threads. A producer
 * hands numbered records to a consumer through a 4 KiB ring (so both sides
 * sleep: the consumer on an empty ring, the producer on a full one), each
 * side with random delays (none, a short spin, a yield, a sleep) and random
 * batches, half the run with spinning off so that every wait parks. The
 * futex sleeps are made longer than the waits, so a lost wakeup cannot hide
 * behind a slice: it shows as a wait that times out with its condition
 * true, and fails the test naming the side and the handoff.
 *
 *   test_doorbell [--handoffs N] [--seed S]   (default 100000; 10^7 for the
 *                                              long run)
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "test.h"
#include "transport/transport.h"

#define WAIT_NS (10ull * 1000 * 1000 * 1000)   /* far past any honest wait here */

static uint64_t handoffs = 100000, seed = 1;

struct shm {
    struct tp_control c;
    _Alignas(64) uint8_t data[4096];
};

struct side {
    struct shm *s;
    struct tp_ring r;
    uint64_t rng;
    uint64_t done;      /* records written or read */
    char err[256];
    uint64_t waits, parks;
};

static uint64_t next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void delay(uint64_t *rng)
{
    uint64_t d = next(rng) % 100;
    if (d < 70)
        return;
    if (d < 90) {
        volatile uint64_t spin = next(rng) % 2000;
        while (spin)
            spin--;
    } else if (d < 97) {
        sched_yield();
    } else {
        struct timespec ts = {0, (long)(next(rng) % 50000)};
        nanosleep(&ts, NULL);
    }
}

static void *producer(void *arg)
{
    struct side *p = arg;
    uint64_t rec[8];
    while (p->done < handoffs) {
        uint64_t batch = 1 + next(&p->rng) % 4;
        for (uint64_t b = 0; b < batch && p->done < handoffs; b++) {
            size_t words = 1 + next(&p->rng) % 8;
            for (size_t w = 0; w < words; w++)
                rec[w] = p->done * 8 + w;
            if (p->done == handoffs / 2)
                p->r.spin_us = 0;   /* from here on every wait parks */
            kiln_result res = tp_ring_write(&p->r, 1, rec, words * 8, WAIT_NS);
            if (res != KILN_OK) {
                snprintf(p->err, sizeof p->err, "producer at record %" PRIu64 ": %s (%s)%s", p->done,
                         kiln_result_name(res), kiln_last_error(),
                         res == KILN_ERR_TIMEOUT ? ": a lost wakeup, the consumer retired and it slept on" : "");
                tp_ring_publish(&p->r);
                return NULL;
            }
            p->done++;
        }
        tp_ring_publish(&p->r);
        delay(&p->rng);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    struct side *c = arg;
    uint64_t rec[8];
    while (c->done < handoffs) {
        if (c->done == handoffs / 2)
            c->r.spin_us = 0;
        kiln_result res = tp_ring_wait(&c->r, WAIT_NS);
        c->waits++;
        if (res != KILN_OK) {
            snprintf(c->err, sizeof c->err, "consumer at record %" PRIu64 ": %s (%s)%s", c->done,
                     kiln_result_name(res), kiln_last_error(),
                     res == KILN_ERR_TIMEOUT && atomic_load(&c->s->c.cmd.head) != c->r.tail
                         ? ": a lost wakeup, records were published and it slept on"
                         : "");
            return NULL;
        }
        uint64_t n = 1 + next(&c->rng) % 6;   /* read a few, then retire them together */
        struct tp_record r;
        for (uint64_t i = 0; i < n && (res = tp_ring_read(&c->r, rec, sizeof rec, &r)) == KILN_OK; i++) {
            bool ok = r.kind == 1 && r.size >= 8 && r.size % 8 == 0;
            for (uint32_t w = 0; ok && w < r.size / 8; w++)
                ok = rec[w] == c->done * 8 + w;
            if (!ok) {
                snprintf(c->err, sizeof c->err, "consumer: record %" PRIu64 " arrived wrong (kind %u, %u bytes)",
                         c->done, r.kind, r.size);
                return NULL;
            }
            c->done++;
            if (tp_ring_retire(&c->r, &r) != KILN_OK) {
                snprintf(c->err, sizeof c->err, "consumer: retire: %s", kiln_last_error());
                return NULL;
            }
        }
        if (res != KILN_OK && res != KILN_ERR_PENDING) {
            snprintf(c->err, sizeof c->err, "consumer: read: %s", kiln_last_error());
            return NULL;
        }
        delay(&c->rng);
    }
    return NULL;
}

TEST(handoffs_with_random_delays)
{
    struct shm *s = aligned_alloc(4096, sizeof *s);
    REQUIRE(s);
    REQUIRE_OK(tp_control_init(&s->c, 4096, 4096));
    struct side p = {.s = s, .rng = seed * 2654435761u + 1}, c = {.s = s, .rng = seed * 40503u + 7};
    REQUIRE_OK(tp_ring_init(&p.r, &s->c.cmd, s->data, 4096, 1));
    REQUIRE_OK(tp_ring_init(&c.r, &s->c.cmd, s->data, 4096, 1));
    tp_test_park_slice(60ull * 1000 * 1000 * 1000);
    uint64_t t0 = time_now_ns();
    pthread_t tp, tc;
    REQUIRE(!pthread_create(&tp, NULL, producer, &p));
    REQUIRE(!pthread_create(&tc, NULL, consumer, &c));
    pthread_join(tp, NULL);
    if (p.err[0])   /* the consumer waits for records that will not come */
        atomic_store(&s->c.cmd.head, 1);   /* misaligned: breaks its ring, so it returns */
    pthread_join(tc, NULL);
    tp_test_park_slice(0);
    double secs = (double)(time_now_ns() - t0) / 1e9;
    if (p.err[0]) {
        fprintf(stderr, "%s\n", p.err);
        CHECK(!p.err[0]);
    } else if (c.err[0]) {
        fprintf(stderr, "%s\n", c.err);
        CHECK(!c.err[0]);
    }
    CHECK_EQ(c.done, handoffs);
    CHECK_EQ(atomic_load(&s->c.cmd.retired_seq), handoffs);
    printf("     %" PRIu64 " handoffs in %.2f s (%.2f M/s): consumer parked %" PRIu64 " times, producer %" PRIu64
           "; wakes sent %" PRIu64 " and %" PRIu64 "\n",
           handoffs, secs, (double)handoffs / secs / 1e6, c.r.parks, p.r.parks, p.r.wakes, c.r.wakes);
    CHECK(c.r.parks > 0 && p.r.parks > 0);   /* both sides really slept */
    free(s);
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--handoffs"))
            handoffs = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
    }
    if (!handoffs || !seed) {
        fprintf(stderr, "usage: test_doorbell [--handoffs N] [--seed S] (both at least 1)\n");
        return 2;
    }
    RUN(handoffs_with_random_delays);
    return TEST_SUMMARY();
}
