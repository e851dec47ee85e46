/* SPDX-License-Identifier: MIT */
/*
 * fuzz_transport_ring.c: fuzz target for what a peer can do to shared
 * memory (src/transport/ring.c). The input's first bytes choose the rings'
 * sizes, the segment's size (tiny ones included, shorter than the rings
 * the control page claims), the record kinds and the features; then a
 * script runs: the peer's pokes (any bytes at any offset of the control
 * page or a ring, at any moment), and this side's moves: reads into
 * buffers of every size, retires, waits, the event ring, and a producer
 * writing the stage ring against a consumer that scribbles on its cursors.
 *
 * The control page and each ring are allocations of their exact size, so
 * a read or write outside any of them is a sanitizer report. Beyond that
 * a bug is a broken promise: a record handed out larger than its buffer or
 * past the head the producer published, a ring that unbreaks, an error
 * without a reason.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/transport.h"

struct input {
    const uint8_t *p;
    size_t n;
};

static uint32_t take(struct input *in, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes && in->n; i++, in->p++, in->n--)
        v |= (uint32_t)in->p[0] << (8 * i);
    return v;
}

static void *alloc(size_t n)
{
    void *p = NULL;
    return posix_memalign(&p, 64, n) ? NULL : p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct input in = {data, size};
    uint32_t sizes = take(&in, 1), short_by = take(&in, 2), kinds = 1 + take(&in, 1) % 16, features = take(&in, 1);
    uint64_t cmd = (uint64_t)TP_RING_MIN << (sizes & 3), stage = (uint64_t)TP_RING_MIN << ((sizes >> 2) & 3);
    struct tp_control *c = alloc(sizeof *c);
    uint8_t *ring[2] = {alloc(cmd), alloc(stage)};
    uint8_t *buf = malloc(65536);
    if (!c || !ring[0] || !ring[1] || !buf)
        abort();
    /* The page as the peer made it: valid (then the script scribbles) or
     * the input's own bytes. */
    if (tp_control_init(c, cmd, stage) != KILN_OK)
        abort();
    if (features & 1) {
        size_t n = KILN_MIN(in.n, sizeof *c);
        memcpy((void *)c, in.p, n);
        in.p += n;
        in.n -= n;
    }
    memset(ring[0], 0, cmd);
    memset(ring[1], 0, stage);
    struct tp_layout l = tp_layout_of(cmd, stage);
    uint64_t seg = features & 2 ? l.total - short_by : l.total;   /* tiny segments: short of the rings */
    struct tp_layout got;
    if (tp_control_layout(c, seg, &got) != KILN_OK) {
        if (!strstr(kiln_last_error(), "protocol mismatch"))
            abort();
        goto done;
    }
    if (got.total > seg || got.cmd_size != c->cmd_ring_size)
        abort();
    /* The rings as the layout says; the allocations are the sizes chosen,
     * and the page (unless scribbled) agrees. */
    if (got.cmd_size != cmd || got.stage_size != stage)
        goto done;
    struct tp_ring cons, prod;
    struct tp_events ev;
    if (tp_ring_init(&cons, &c->cmd, ring[0], cmd, kinds) != KILN_OK ||
        tp_ring_init(&prod, &c->stage, ring[1], stage, kinds) != KILN_OK)
        abort();
    cons.spin_us = prod.spin_us = 0;
    tp_events_init(&ev, c);
    uint32_t steps = 0;
    struct tp_record last = {0};
    while (in.n && steps++ < 4096) {
        uint32_t op = take(&in, 1);
        switch (op % 8) {
        case 0: case 1: {   /* the peer pokes: a ring (cmd, stage) or the page */
            uint32_t where = take(&in, 1) % 3, off = take(&in, 2), n = take(&in, 1) % 17;
            uint8_t *base = where == 2 ? (uint8_t *)c : ring[where];
            uint64_t len = where == 2 ? sizeof *c : where ? stage : cmd;
            off %= (uint32_t)len;
            n = (uint32_t)KILN_MIN((uint64_t)n, len - off);
            n = (uint32_t)KILN_MIN((size_t)n, in.n);
            memcpy(base + off, in.p, n);
            in.p += n;
            in.n -= n;
            break;
        }
        case 2: {   /* read into a buffer of any size */
            size_t cap = take(&in, 2) % 65536;
            struct tp_record rec;
            bool was_broken = cons.broken;
            uint64_t before = cons.tail;
            kiln_result r = tp_ring_read(&cons, buf + 65536 - cap, cap, &rec);
            if (r == KILN_OK)
                last = rec;
            if (r == KILN_OK && (was_broken || rec.size > cap || rec.end > cons.head_seen || rec.end <= before ||
                                 !rec.kind || rec.kind > kinds || rec.end != cons.tail || rec.seq != cons.applied_seq))
                abort();
            if (r == KILN_ERR_LIMIT && rec.size <= cap)
                abort();
            if (r == KILN_ERR_IO && (!cons.broken || !cons.why[0]))
                abort();
            if (was_broken && r != KILN_ERR_IO)
                abort();
            break;
        }
        case 3:   /* retire all that was read, or a cursor of the input's */
            if (op & 8) {
                (void)tp_ring_retire(&cons, &last);
            } else {
                struct tp_record forged = {.end = take(&in, 4), .seq = take(&in, 2)};
                (void)tp_ring_retire(&cons, &forged);
            }
            break;
        case 4:
            (void)tp_ring_wait(&cons, 0);
            break;
        case 5: {   /* this side produces on the stage ring; the peer consumes (and scribbles) */
            size_t n = take(&in, 2) % (stage / 2);
            void *p;
            kiln_result r = tp_ring_reserve(&prod, 1 + op % kinds, n, 0, &p);
            if (r == KILN_OK) {
                uint8_t *q = p;
                if (q < ring[1] || q + n > ring[1] + stage)
                    abort();
                memset(p, 0xab, n);
            }
            if (op & 8)
                tp_ring_publish(&prod);
            break;
        }
        case 6: {   /* events both ways */
            struct tp_event e;
            if (op & 8) {
                memset(&e, 0, sizeof e);
                e.kind = 1 + op % 3;
                e.size = op % (TP_EVENT_DATA + 1);
                (void)tp_event_post(&ev, &e);
            } else {
                kiln_result r = tp_event_take(&ev, &e);
                if (r == KILN_OK && (!e.kind || e.size > TP_EVENT_DATA))
                    abort();
            }
            break;
        }
        case 7:   /* the peer's honest producer moves: a record, published */
            if (!cons.broken) {
                struct tp_ring peer;
                /* a second view that starts where the consumer's head is */
                if (tp_ring_init(&peer, &c->cmd, ring[0], cmd, kinds) != KILN_OK)
                    abort();
                peer.head = peer.published = peer.retired_seen = cons.head_seen;
                peer.spin_us = 0;
                (void)tp_ring_write(&peer, 1 + op % kinds, in.p, KILN_MIN(in.n, (size_t)(op >> 3) * 8), 0);
                tp_ring_publish(&peer);
            }
            break;
        }
    }
done:
    free(c);
    free(ring[0]);
    free(ring[1]);
    free(buf);
    return 0;
}

/* Writes seeds into dir: each ring size pair with a script of honest
 * records, reads and retires; scribbles of each cursor; a tiny segment. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    for (int seed = 0; seed < 8; seed++) {
        uint8_t s[512];
        size_t n = 0;
        s[n++] = (uint8_t)(seed * 5);                        /* sizes */
        s[n++] = (uint8_t)(seed == 7 ? 64 : 0);              /* short_by */
        s[n++] = 0;
        s[n++] = (uint8_t)(3);                               /* kinds: 4 */
        s[n++] = (uint8_t)(seed == 7 ? 2 : 0);               /* features */
        for (int i = 0; i < 12; i++) {
            s[n++] = (uint8_t)(7 | ((i % 5 + 1) << 3));       /* a record */
            for (int k = 0; k < 8 * (i % 5 + 1) && n < sizeof s - 40; k++)
                s[n++] = (uint8_t)(i + k);
            s[n++] = 2;                                     /* read */
            s[n++] = 0;
            s[n++] = 1;
            if (i % 3 == 2)
                s[n++] = 3 | 8;                             /* retire */
        }
        if (seed >= 1 && seed <= 5) {                       /* scribble a cursor, then read */
            static const uint16_t offs[] = {0xc0, 0x100, 0x108, 0x2c0, 0x300};
            s[n++] = 1;
            s[n++] = 2;
            s[n++] = (uint8_t)offs[seed - 1];
            s[n++] = (uint8_t)(offs[seed - 1] >> 8);
            s[n++] = 8;
            for (int k = 0; k < 8; k++)
                s[n++] = (uint8_t)(0x41 + k * seed);
            s[n++] = 2;
            s[n++] = 0;
            s[n++] = 1;
            s[n++] = 6;
            s[n++] = 5 | 8;
            s[n++] = 100;
            s[n++] = 0;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02d", dir, seed);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(s, 1, n, f) != n || fclose(f))
            return 1;
    }
    return 0;
}
