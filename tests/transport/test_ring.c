/* SPDX-License-Identifier: MIT */
/*
 * test_ring.c: the control page and the SPSC ring (src/transport/ring.c),
 * in one thread. The page's layout byte by byte; records of every size in
 * order across the wrap, with the pad; space given back only when retired;
 * the limits. Then the peer turned hostile: every cursor and header it can
 * write, set to what breaks the ring, is refused by name, nothing is handed
 * out, and the ring stays broken. The event ring, and peer liveness.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"
#include "transport/transport.h"

/* A control page and a ring of its own, as two sides would share them. */
struct shm {
    struct tp_control c;
    _Alignas(64) uint8_t data[1 << 16];
};

static struct shm *shm_new(uint64_t ring, struct tp_ring *prod, struct tp_ring *cons)
{
    struct shm *s = aligned_alloc(4096, sizeof *s);
    if (!s || tp_control_init(&s->c, ring, TP_RING_MIN) != KILN_OK ||
        tp_ring_init(prod, &s->c.cmd, s->data, ring, 9) != KILN_OK ||
        tp_ring_init(cons, &s->c.cmd, s->data, ring, 9) != KILN_OK) {
        free(s);
        return NULL;
    }
    return s;
}

static uint64_t raw_u64(const void *page, size_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)page + off, 8);
    return v;
}

TEST(control_page_layout)
{
    struct tp_control *c = aligned_alloc(4096, sizeof *c);
    REQUIRE(c);
    REQUIRE_OK(tp_control_init(c, 1 << 16, 1 << 20));
    CHECK_EQ(sizeof *c, 4096);
    CHECK(!memcmp(c, "KLNC", 4));   /* the magic as it reads in the page */
    CHECK_EQ(raw_u64(c, 0x10), 1 << 16);
    CHECK_EQ(raw_u64(c, 0x18), 1 << 20);
    /* Each field written through the struct lands at its documented offset. */
    struct { _Atomic uint64_t *f; size_t off; } at[] = {
        {&c->epoch, 0x20}, {&c->generation, 0x28}, {&c->client_heartbeat, 0x40},
        {&c->client_frame_serial, 0x48}, {&c->server_heartbeat, 0x80}, {&c->completed_frame_serial, 0x88},
        {&c->cmd.head, 0xc0}, {&c->cmd.submitted_seq, 0xc8}, {&c->cmd.applied, 0x100}, {&c->cmd.retired, 0x108},
        {&c->cmd.applied_seq, 0x110}, {&c->cmd.retired_seq, 0x118}, {&c->stage.head, 0x1c0},
        {&c->stage.applied, 0x200}, {&c->stage.retired, 0x208}, {&c->event_head, 0x2c0},
        {&c->event_dropped, 0x2c8}, {&c->event_tail, 0x300},
    };
    for (size_t i = 0; i < KILN_ARRAY_LEN(at); i++) {
        atomic_store(at[i].f, 0x1111111111111111ull * (i + 1));
        CHECK_EQ(raw_u64(c, at[i].off), 0x1111111111111111ull * (i + 1));
    }
    struct { _Atomic uint32_t *f; size_t off; } flags[] = {
        {&c->cmd.consumer_parked, 0x140}, {&c->cmd.producer_parked, 0x180}, {&c->stage.consumer_parked, 0x240},
        {&c->stage.producer_parked, 0x280}, {&c->event_full, 0x340},
    };
    for (size_t i = 0; i < KILN_ARRAY_LEN(flags); i++) {
        atomic_store(flags[i].f, 0xabcd0000u + (uint32_t)i);
        uint32_t v;
        memcpy(&v, (uint8_t *)c + flags[i].off, 4);
        CHECK_EQ(v, 0xabcd0000u + i);
    }
    CHECK_EQ((uint8_t *)&c->events[0] - (uint8_t *)c, 0x400);
    CHECK_EQ((uint8_t *)&c->events[TP_EVENT_SLOTS] - (uint8_t *)c, 0xc00);
    /* The two sides' groups never share a cache line. */
    CHECK((offsetof(struct tp_control, client_heartbeat) / 64) != (offsetof(struct tp_control, server_heartbeat) / 64));
    CHECK((offsetof(struct tp_ring_ctl, head) / 64) != (offsetof(struct tp_ring_ctl, applied) / 64));
    free(c);
}

TEST(control_page_check)
{
    struct tp_control *c = aligned_alloc(4096, sizeof *c);
    REQUIRE(c);
    uint64_t a = 0, b = 0;
    CHECK_RESULT(tp_control_init(c, 3000, 4096), KILN_ERR_INVALID);
    REQUIRE_OK(tp_control_init(c, 8192, 4096));
    CHECK_OK(tp_control_check(c, &a, &b));
    CHECK_EQ(a, 8192);
    CHECK_EQ(b, 4096);
    c->magic ^= 1;
    CHECK_RESULT(tp_control_check(c, &a, &b), KILN_ERR_IO);
    CHECK_MSG("magic");
    c->magic ^= 1;
    c->version = 7;
    CHECK_RESULT(tp_control_check(c, &a, &b), KILN_ERR_IO);
    CHECK_MSG("version 7");
    c->version = TP_CONTROL_VERSION;
    c->stage_ring_size = 4097;
    a = b = 0;
    CHECK_RESULT(tp_control_check(c, &a, &b), KILN_ERR_IO);
    CHECK_MSG("4097");
    CHECK_EQ(a + b, 0);   /* sizes come back only when valid */
    c->stage_ring_size = 1ull << 40;
    CHECK_RESULT(tp_control_check(c, &a, &b), KILN_ERR_IO);
    /* The rings must fit the segment they came in. */
    c->stage_ring_size = 4096;
    struct tp_layout l;
    CHECK_OK(tp_control_layout(c, 4096 + 8192 + 4096, &l));
    CHECK_EQ(l.cmd_offset, 4096);
    CHECK_EQ(l.stage_offset, 4096 + 8192);
    CHECK_EQ(l.total, 4096 + 8192 + 4096);
    CHECK_RESULT(tp_control_layout(c, 4096 + 8192 + 4095, &l), KILN_ERR_IO);
    CHECK_MSG("need a segment of 16384 bytes, this one has 16383");
    CHECK_EQ(l.total, 0);
    free(c);
}

/* Writes record i: kind 1 + i % 9, i % 300 bytes of i + j. */
static kiln_result put(struct tp_ring *p, uint32_t i)
{
    uint8_t buf[300];
    size_t n = i % 300;
    for (size_t j = 0; j < n; j++)
        buf[j] = (uint8_t)(i + j);
    return tp_ring_write(p, 1 + i % 9, buf, n, 0);
}

static bool got_right(const struct tp_record *rec, const uint8_t *buf, uint32_t i)
{
    if (rec->kind != 1 + i % 9 || rec->size != i % 300)
        return false;
    for (size_t j = 0; j < rec->size; j++)
        if (buf[j] != (uint8_t)(i + j))
            return false;
    return true;
}

TEST(records_in_order_across_the_wrap)
{
    struct tp_ring p, c;
    struct shm *s = shm_new(4096, &p, &c);
    REQUIRE(s);
    uint32_t sent = 0, seen = 0;
    struct tp_record last = {0};
    uint8_t buf[300];
    struct tp_record rec;
    /* Many laps of a 4 KiB ring with records of 8 to 304 bytes: pads at
     * every alignment of the wrap. */
    while (seen < 3000) {
        kiln_result res;
        while ((res = put(&p, sent)) == KILN_OK)
            sent++;
        CHECK_EQ(res, KILN_ERR_TIMEOUT);   /* full: the consumer has retired nothing */
        /* A reserve that finds no room publishes what was written first, so
         * the consumer can free it. */
        CHECK_EQ(atomic_load(&s->c.cmd.head), p.head);
        tp_ring_publish(&p);
        while ((res = tp_ring_read(&c, buf, sizeof buf, &rec)) == KILN_OK) {
            if (!got_right(&rec, buf, seen)) {
                CHECK(got_right(&rec, buf, seen));
                break;
            }
            seen++;
            CHECK_EQ(rec.seq, seen);
            last = rec;
        }
        REQUIRE(res == KILN_ERR_PENDING);
        REQUIRE(seen == sent);
        CHECK_EQ(atomic_load(&s->c.cmd.applied), c.tail);
        CHECK_EQ(atomic_load(&s->c.cmd.retired), c.retired);   /* read is not retired */
        CHECK_RESULT(put(&p, sent), KILN_ERR_TIMEOUT);          /* so still no room */
        REQUIRE_OK(tp_ring_retire(&c, &last));
    }
    CHECK_EQ(atomic_load(&s->c.cmd.submitted_seq), sent);
    CHECK_EQ(atomic_load(&s->c.cmd.applied_seq), seen);
    CHECK_EQ(atomic_load(&s->c.cmd.retired_seq), seen);
    CHECK(!p.broken && !c.broken);
    free(s);
}

TEST(limits_and_small_buffers)
{
    struct tp_ring p, c;
    struct shm *s = shm_new(8192, &p, &c);
    REQUIRE(s);
    void *ptr;
    CHECK_RESULT(tp_ring_reserve(&p, 0, 8, 0, &ptr), KILN_ERR_INVALID);
    CHECK_MSG("kind 0");
    CHECK_RESULT(tp_ring_reserve(&p, 10, 8, 0, &ptr), KILN_ERR_INVALID);
    CHECK_RESULT(tp_ring_reserve(&p, 1, 4096 - 7, 0, &ptr), KILN_ERR_LIMIT);
    CHECK_MSG("4089");
    REQUIRE_OK(tp_ring_reserve(&p, 1, 4096 - 8, 0, &ptr));   /* half the ring, header included */
    memset(ptr, 0x5a, 4096 - 8);
    REQUIRE_OK(tp_ring_write(&p, 2, "abc", 3, 0));
    tp_ring_publish(&p);
    uint8_t buf[4096];
    struct tp_record rec;
    CHECK_RESULT(tp_ring_read(&c, buf, 4087, &rec), KILN_ERR_LIMIT);
    CHECK_EQ(rec.size, 4088);   /* the size needed */
    CHECK_OK(tp_ring_read(&c, buf, sizeof buf, &rec));   /* and the record is still there */
    CHECK_EQ(rec.size, 4088);
    CHECK_EQ(buf[4087], 0x5a);
    struct tp_record first = rec;
    CHECK_OK(tp_ring_read(&c, buf, 3, &rec));
    CHECK_EQ(rec.kind, 2);
    CHECK(!memcmp(buf, "abc", 3));
    struct tp_record forged = rec;
    forged.end += 8;
    CHECK_RESULT(tp_ring_retire(&c, &forged), KILN_ERR_INVALID);   /* past the tail */
    forged = rec;
    forged.seq++;
    CHECK_RESULT(tp_ring_retire(&c, &forged), KILN_ERR_INVALID);   /* not read yet */
    CHECK_OK(tp_ring_retire(&c, &first));
    CHECK_EQ(atomic_load(&s->c.cmd.retired_seq), 1);
    CHECK_OK(tp_ring_retire(&c, &rec));
    CHECK_EQ(atomic_load(&s->c.cmd.retired_seq), 2);
    CHECK_EQ(atomic_load(&s->c.cmd.retired), rec.end);
    CHECK_RESULT(tp_ring_retire(&c, &first), KILN_ERR_INVALID);   /* backwards */
    CHECK_OK(tp_ring_retire(&c, &rec));                          /* again: nothing more */
    /* A half-ring record fits again, whatever the wrap needs. */
    CHECK_OK(tp_ring_reserve(&p, 1, 4096 - 8, 0, &ptr));
    CHECK_RESULT(tp_ring_init(&c, &s->c.cmd, s->data, 6000, 9), KILN_ERR_INVALID);
    CHECK_RESULT(tp_ring_init(&c, &s->c.cmd, s->data + 4, 4096, 9), KILN_ERR_INVALID);
    free(s);
}

/* The producer's side written by a hostile hand: each case sets up bytes
 * in the ring and head, and says what the consumer must refuse. */
TEST(hostile_producer)
{
    struct {
        const char *what, *msg;
        uint32_t size, kind;   /* the first record's header */
        uint64_t head;         /* published head */
        uint64_t at;           /* where the header goes */
    } cases[] = {
        {"head past a ring", "head 4104", 16, 1, 4096 + 8, 0},
        {"head not aligned", "8-aligned", 16, 1, 12, 0},
        {"unknown kind", "kind 10", 16, 10, 16, 0},
        {"size under a header", "size 4", 4, 1, 16, 0},
        {"size past head", "size 24", 24, 1, 16, 0},
        {"huge size", "size 4294967295", 0xffffffffu, 1, 4096, 0},
        {"pad short of the wrap", "pad at cursor 0", 8, 0, 16, 0},
        {"pad past head", "pad at cursor 0", 4096, 0, 16, 0},
    };
    for (size_t i = 0; i < KILN_ARRAY_LEN(cases); i++) {
        struct tp_ring p, c;
        struct shm *s = shm_new(4096, &p, &c);
        REQUIRE(s);
        uint32_t hdr[2] = {cases[i].size, cases[i].kind};
        memcpy(s->data + cases[i].at, hdr, 8);
        memset(s->data + 8, 0x77, 64);
        atomic_store(&s->c.cmd.head, cases[i].head);
        uint8_t buf[8192];
        memset(buf, 0, sizeof buf);
        struct tp_record rec;
        kiln_result res = tp_ring_read(&c, buf, sizeof buf, &rec);
        if (res != KILN_ERR_IO)
            fprintf(stderr, "case '%s'\n", cases[i].what);
        CHECK_EQ(res, KILN_ERR_IO);
        CHECK_MSG("ring broken");
        CHECK_MSG(cases[i].msg);
        CHECK_EQ(buf[0], 0);   /* nothing was handed out */
        CHECK_EQ(rec.size, 0);
        /* Latched: a good record written later is not read either. */
        atomic_store(&s->c.cmd.head, 0);
        CHECK_RESULT(tp_ring_read(&c, buf, sizeof buf, &rec), KILN_ERR_IO);
        CHECK_RESULT(tp_ring_wait(&c, 0), KILN_ERR_IO);
        CHECK_RESULT(tp_ring_retire(&c, &rec), KILN_ERR_IO);
        free(s);
    }
    /* A head that goes backwards. */
    struct tp_ring p, c;
    struct shm *s = shm_new(4096, &p, &c);
    REQUIRE(s);
    REQUIRE_OK(tp_ring_write(&p, 1, "x", 1, 0));
    REQUIRE_OK(tp_ring_write(&p, 1, "y", 1, 0));
    tp_ring_publish(&p);
    uint8_t buf[16];
    struct tp_record rec;
    CHECK_OK(tp_ring_read(&c, buf, sizeof buf, &rec));
    atomic_store(&s->c.cmd.head, 8);
    CHECK_OK(tp_ring_read(&c, buf, sizeof buf, &rec));   /* the head seen before still holds */
    CHECK_RESULT(tp_ring_read(&c, buf, sizeof buf, &rec), KILN_ERR_IO);
    CHECK_MSG("head 8 is not a cursor from 32");
    free(s);
}

TEST(hostile_consumer)
{
    struct tp_ring p, c;
    struct shm *s = shm_new(4096, &p, &c);
    REQUIRE(s);
    REQUIRE_OK(tp_ring_write(&p, 1, "x", 1, 0));
    tp_ring_publish(&p);
    /* A retired tail past what was published would let the producer write
     * over records not read yet. */
    atomic_store(&s->c.cmd.retired, 4096);
    char big[1000] = {0};
    kiln_result res;
    int written = 0;
    while ((res = tp_ring_write(&p, 1, big, sizeof big, 0)) == KILN_OK)
        written++;   /* fits without asking */
    CHECK_EQ(written, 4);
    CHECK_EQ(res, KILN_ERR_IO);   /* asks, and refuses */
    CHECK_MSG("retired tail 4096 is outside [0, 16]");
    CHECK_RESULT(tp_ring_write(&p, 1, "x", 1, 0), KILN_ERR_IO);
    free(s);
}

TEST(events)
{
    struct tp_control *c = aligned_alloc(4096, sizeof *c);
    REQUIRE(c);
    REQUIRE_OK(tp_control_init(c, 4096, 4096));
    struct tp_events srv, cli;
    tp_events_init(&srv, c);
    tp_events_init(&cli, c);
    struct tp_event ev = {.kind = 3, .size = 5, .serial = 1}, got;
    memcpy(ev.data, "hello", 5);
    for (uint32_t i = 0; i < TP_EVENT_SLOTS; i++) {
        ev.serial = i;
        CHECK(tp_event_post(&srv, &ev));
    }
    CHECK(!tp_event_post(&srv, &ev));   /* full: dropped and counted */
    CHECK_EQ(atomic_load(&c->event_dropped), 1);
    CHECK_EQ(atomic_load(&c->event_full), 1);
    for (uint32_t i = 0; i < TP_EVENT_SLOTS; i++) {
        REQUIRE_OK(tp_event_take(&cli, &got));
        CHECK_EQ(got.serial, i);
        CHECK(!memcmp(got.data, "hello", 5));
    }
    CHECK_RESULT(tp_event_take(&cli, &got), KILN_ERR_PENDING);
    ev.kind = 0;
    CHECK(!tp_event_post(&srv, &ev));   /* refused, counted */
    ev.kind = 1;
    CHECK(tp_event_post(&srv, &ev));
    /* A scribbled slot and a scribbled head break the taker. */
    c->events[cli.tail % TP_EVENT_SLOTS].size = 49;
    CHECK_RESULT(tp_event_take(&cli, &got), KILN_ERR_IO);
    CHECK_MSG("size 49");
    tp_events_init(&cli, c);
    atomic_store(&c->event_head, 1000);
    CHECK_RESULT(tp_event_take(&cli, &got), KILN_ERR_IO);
    CHECK_MSG("event head 1000");
    /* And a scribbled tail makes the poster count the ring full. */
    atomic_store(&c->event_tail, 1u << 30);
    CHECK(!tp_event_post(&srv, &ev));
    free(c);
}

TEST(peer_liveness)
{
    _Atomic uint64_t beat = 5;
    struct tp_peer peer;
    tp_peer_init(&peer, &beat, -1, 30ull * 1000 * 1000);
    CHECK_OK(tp_peer_check(&peer));
    /* A heartbeat that moved since the last check keeps it alive, however
     * long ago the check before was (beats moved by hand: a loaded machine
     * may leave a beating thread unscheduled past any timeout). */
    for (int i = 0; i < 5; i++) {
        usleep(40 * 1000);   /* past the timeout */
        atomic_fetch_add(&beat, 1);
        CHECK_OK(tp_peer_check(&peer));
    }
    /* The heartbeat thread moves it (waited for, bounded). */
    struct tp_heartbeat hb;
    REQUIRE_OK(tp_heartbeat_start(&hb, &beat, 2ull * 1000 * 1000));
    uint64_t t0 = time_now_ns(), before = atomic_load(&beat);
    while (atomic_load(&beat) < before + 3 && time_now_ns() - t0 < 10ull * 1000 * 1000 * 1000)
        usleep(1000);
    tp_heartbeat_stop(&hb);
    CHECK(atomic_load(&beat) >= before + 3);
    CHECK_OK(tp_peer_check(&peer));   /* it moved since the last check */
    /* Stopped: seen dead after the timeout, not before (a check inside the
     * first 30 ms can pass), and for good. */
    t0 = time_now_ns();
    kiln_result res;
    while ((res = tp_peer_check(&peer)) == KILN_OK)
        usleep(1000);
    uint64_t took = time_now_ns() - t0;
    CHECK_EQ(res, KILN_ERR_IO);
    CHECK_MSG("heartbeat stayed at");
    CHECK(took >= 25ull * 1000 * 1000);
    atomic_fetch_add(&beat, 1);
    CHECK_RESULT(tp_peer_check(&peer), KILN_ERR_IO);

    /* A closed socket is seen at once. */
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    tp_peer_init(&peer, NULL, sv[0], 0);
    CHECK_OK(tp_peer_check(&peer));
    close(sv[1]);
    CHECK_RESULT(tp_peer_check(&peer), KILN_ERR_IO);
    CHECK_MSG("socket closed");
    close(sv[0]);

    /* A wait on a ring whose producer died ends with the reason, not at
     * its timeout. */
    struct tp_ring p, c;
    struct shm *s = shm_new(4096, &p, &c);
    REQUIRE(s);
    tp_peer_init(&peer, &s->c.client_heartbeat, -1, 40ull * 1000 * 1000);
    c.peer = &peer;
    t0 = time_now_ns();
    CHECK_RESULT(tp_ring_wait(&c, 60ull * 1000 * 1000 * 1000), KILN_ERR_IO);
    CHECK_MSG("heartbeat");
    CHECK(time_now_ns() - t0 < 30ull * 1000 * 1000 * 1000);
    free(s);
}

int main(void)
{
    RUN(control_page_layout);
    RUN(control_page_check);
    RUN(records_in_order_across_the_wrap);
    RUN(limits_and_small_buffers);
    RUN(hostile_producer);
    RUN(hostile_consumer);
    RUN(events);
    RUN(peer_liveness);
    return TEST_SUMMARY();
}
