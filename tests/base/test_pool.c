/* SPDX-License-Identifier: MIT */
/*
 * test_pool.c: handle pools: ids are never 0, stale and foreign ids are
 * refused with a reason, a slot whose generation would wrap is retired.
 */
#include "base/pool.h"
#include "test.h"

TEST(ids_are_nonzero_and_resolve)
{
    struct pool p;
    pool_init(&p, POOL_BUFFER, 7);
    int a, b;
    uint64_t ia = pool_add(&p, &a), ib = pool_add(&p, &b);
    CHECK(ia != 0 && ib != 0 && ia != ib);
    CHECK(pool_get(&p, ia) == &a);
    CHECK(pool_get(&p, ib) == &b);
    CHECK(pool_get(&p, 0) == NULL);
    CHECK(!strcmp(pool_why(&p, 0), "null handle"));
    CHECK_EQ(p.live, 2);
    pool_finish(&p);
}

TEST(stale_ids_are_refused_after_reuse)
{
    struct pool p;
    pool_init(&p, POOL_PROGRAM, 1);
    int a, b;
    uint64_t ia = pool_add(&p, &a);
    CHECK(pool_remove(&p, ia) == &a);
    CHECK(pool_get(&p, ia) == NULL);
    CHECK(pool_remove(&p, ia) == NULL);
    uint64_t ib = pool_add(&p, &b);
    CHECK_EQ(pool_id_slot(ib), pool_id_slot(ia));   /* the slot is reused ... */
    CHECK(ib != ia);                               /* ... under a new generation */
    CHECK(pool_get(&p, ia) == NULL);
    CHECK(strstr(pool_why(&p, ia), "stale") != NULL);
    CHECK(pool_get(&p, ib) == &b);
    pool_finish(&p);
}

TEST(foreign_and_wrong_type_ids_are_refused)
{
    struct pool bufs1, bufs2, progs1;
    pool_init(&bufs1, POOL_BUFFER, 1);
    pool_init(&bufs2, POOL_BUFFER, 2);
    pool_init(&progs1, POOL_PROGRAM, 1);
    int a, b, c;
    uint64_t ia = pool_add(&bufs1, &a);
    pool_add(&bufs2, &b);
    pool_add(&progs1, &c);
    CHECK(pool_get(&bufs2, ia) == NULL);   /* same slot and gen, other context */
    CHECK(strstr(pool_why(&bufs2, ia), "another context") != NULL);
    CHECK(pool_get(&progs1, ia) == NULL);  /* same context, other type */
    CHECK(strstr(pool_why(&progs1, ia), "another object type") != NULL);
    CHECK(pool_get(&bufs1, ia + 5) == NULL);
    pool_finish(&bufs1);
    pool_finish(&bufs2);
    pool_finish(&progs1);
}

TEST(generation_wrap_retires_the_slot)
{
    struct pool p;
    pool_init(&p, POOL_NODE, 3);
    int a;
    uint64_t id = pool_add(&p, &a);
    uint32_t slot = pool_id_slot(id);
    pool_remove(&p, id);
    pool_test_set_gen(&p, slot, UINT32_MAX);
    uint64_t last = pool_add(&p, &a);
    CHECK_EQ(pool_id_slot(last), slot);
    CHECK_EQ(pool_id_gen(last), UINT32_MAX);
    pool_remove(&p, last);
    CHECK_EQ(p.retired, 1);
    uint64_t next = pool_add(&p, &a);
    CHECK(pool_id_slot(next) != slot);     /* the wrapped slot is never handed out again */
    CHECK(pool_get(&p, last) == NULL);
    pool_finish(&p);
}

TEST(iteration_visits_live_objects)
{
    struct pool p;
    pool_init(&p, POOL_SCHEME, 1);
    int v[5];
    uint64_t ids[5];
    for (int i = 0; i < 5; i++)
        ids[i] = pool_add(&p, &v[i]);
    pool_remove(&p, ids[1]);
    pool_remove(&p, ids[3]);
    uint32_t cur = 0;
    uint64_t id;
    int seen = 0;
    void *o;
    while ((o = pool_next(&p, &cur, &id))) {
        CHECK(pool_get(&p, id) == o);
        seen++;
    }
    CHECK_EQ(seen, 3);
    pool_finish(&p);
}

TEST(many_objects)
{
    struct pool p;
    pool_init(&p, POOL_BUFFER, 9);
    static int v[5000];
    static uint64_t ids[5000];
    for (int i = 0; i < 5000; i++)
        ids[i] = pool_add(&p, &v[i]);
    for (int i = 0; i < 5000; i += 2)
        pool_remove(&p, ids[i]);
    int ok = 1;
    for (int i = 0; i < 5000; i++)
        ok &= pool_get(&p, ids[i]) == ((i % 2) ? &v[i] : NULL);
    CHECK(ok);
    CHECK_EQ(p.live, 2500);
    pool_finish(&p);
}

/* A pool that takes the ids another pool of its tag and floor mints (a
 * remote client's) follows it through adds, removes and failed makes
 * (pool_void), and refuses every id that could let an old one live again. */
TEST(claimed_ids_follow_the_minting_pool_and_refuse_reuse)
{
    struct pool mint, held;
    pool_init_floor(&mint, POOL_NODE, 9, 40);
    pool_init_floor(&held, POOL_NODE, 9, 40);
    int objs[64];
    uint64_t ids[64];
    for (int i = 0; i < 64; i++) {
        ids[i] = pool_add(&mint, &objs[i]);
        if (i % 5 == 3)
            pool_void(&held, ids[i]);   /* its make failed on the holder */
        else
            CHECK_OK(pool_claim(&held, ids[i], &objs[i], "node"));
    }
    for (int i = 0; i < 64; i += 2) {   /* the minter removes; so does the holder, where it was made */
        pool_remove(&mint, ids[i]);
        CHECK(pool_remove(&held, ids[i]) == (i % 5 == 3 ? NULL : &objs[i]));
    }
    for (int i = 0; i < 64; i += 2) {   /* reused slots under new generations, taken */
        uint64_t again = pool_add(&mint, &objs[i]);
        CHECK(again != ids[i]);
        CHECK_OK(pool_claim(&held, again, &objs[i], "node"));
        CHECK(pool_get(&held, again) == &objs[i]);
        CHECK(pool_get(&held, ids[i]) == NULL);
    }
    CHECK_EQ(pool_id_gen(ids[0]), 41);   /* above the floor */
    /* Refused: a live slot, an old generation, a slot past the next, another tag. */
    CHECK_RESULT(pool_claim(&held, ids[1], &objs[1], "node"), KILN_ERR_HANDLE);
    CHECK_MSG("live object");
    pool_remove(&held, ids[1]);
    CHECK_RESULT(pool_claim(&held, ids[1], &objs[1], "node"), KILN_ERR_HANDLE);
    CHECK_MSG("issued before");
    uint64_t far = (ids[1] & ~(uint64_t)POOL_MAX_SLOTS) | (held.len + 1);
    CHECK_RESULT(pool_claim(&held, far, &objs[1], "node"), KILN_ERR_HANDLE);
    CHECK_MSG("skips past");
    struct pool other;
    pool_init(&other, POOL_NODE, 10);
    uint64_t foreign = pool_add(&other, &objs[0]);
    CHECK_RESULT(pool_claim(&held, foreign, &objs[0], "node"), KILN_ERR_HANDLE);
    CHECK_MSG("another context");
    uint64_t below = (uint64_t)40 << 32 | (ids[1] & 0xffffffffu);   /* at the floor: an earlier pool's */
    CHECK_RESULT(pool_claim(&held, below, &objs[1], "node"), KILN_ERR_HANDLE);
    /* Refused too: a generation the minter would not issue yet, on a new
     * slot or a freed one (the top one above all): a client cannot push
     * the generations, and with them the next context's floor, ahead. */
    uint64_t fresh = pool_add(&mint, &objs[2]);
    for (uint32_t gen = 42; gen; gen = gen == UINT32_MAX ? 0 : gen == 42 ? UINT32_MAX : 0) {
        uint64_t ahead = (uint64_t)gen << 32 | (fresh & 0xffffffffu);
        CHECK_RESULT(pool_claim(&held, ahead, &objs[2], "node"), KILN_ERR_HANDLE);
        CHECK_MSG("skips past the slot's next");
        pool_void(&held, ahead);   /* voided alike: nothing moves */
    }
    CHECK_EQ(held.gen_high, 42u);   /* ids[0..63] reused once: 41 and 42, no higher */
    CHECK_OK(pool_claim(&held, fresh, &objs[2], "node"));
    uint64_t freed_ahead = (uint64_t)(pool_id_gen(ids[1]) + 2) << 32 | (ids[1] & 0xffffffffu);
    CHECK_RESULT(pool_claim(&held, freed_ahead, &objs[1], "node"), KILN_ERR_HANDLE);
    CHECK_MSG("skips past the slot's next");
    /* A holder issues no ids of its own. */
    uint64_t own;
    CHECK_RESULT(pool_insert(&held, &objs[0], "node", &own), KILN_ERR_INVALID);
    CHECK_EQ(own, 0);
    pool_finish(&other);
    pool_finish(&mint);
    pool_finish(&held);
}

int main(void)
{
    RUN(ids_are_nonzero_and_resolve);
    RUN(stale_ids_are_refused_after_reuse);
    RUN(foreign_and_wrong_type_ids_are_refused);
    RUN(generation_wrap_retires_the_slot);
    RUN(iteration_visits_live_objects);
    RUN(many_objects);
    RUN(claimed_ids_follow_the_minting_pool_and_refuse_reuse);
    return TEST_SUMMARY();
}
