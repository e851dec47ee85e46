/* SPDX-License-Identifier: MIT */
/*
 * pool: generation-checked handle pools. Every kiln object is named by a
 * 64-bit id: bits 0-19 the slot, bits 20-31 the pool's tag (object type and
 * a per-pool serial, so a handle of another type or, with high probability,
 * of another context is refused), bits 32-63 the slot's generation (>= 1,
 * so no live id is 0). Freeing a slot bumps its generation, so stale ids no
 * longer resolve; a slot whose generation would wrap is retired for good.
 *
 * Not thread-safe: a pool belongs to one lock's holder (see context.h).
 */
#ifndef KILN_POOL_H
#define KILN_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "kiln.h"

#define POOL_SLOT_BITS 20
#define POOL_MAX_SLOTS ((1u << POOL_SLOT_BITS) - 1)

enum pool_type { POOL_CONTEXT = 1, POOL_BUFFER = 2, POOL_PROGRAM = 3, POOL_SCHEME = 4, POOL_NODE = 5,
                 POOL_IMAGE = 6 };

struct pool_entry {
    uint32_t gen;     /* current generation; the live id carries it */
    bool live;
    bool retired;     /* its generation reached the top: never live again */
    uint32_t next_free;
    void *obj;
};

struct pool {
    uint32_t tag;          /* 12 bits: type in the low 4, serial above */
    struct pool_entry *e;
    uint32_t len, cap;     /* slots used so far / allocated */
    uint32_t free_head;    /* 1-based index of the first free slot, 0 = none */
    uint32_t live;         /* live objects */
    uint32_t retired;      /* slots retired at generation wrap */
    uint32_t gen_floor;    /* every generation this pool issues is above it */
    uint32_t gen_high;     /* the highest generation it issued (gen_floor when none) */
    bool minted;           /* its ids are minted elsewhere (pool_claim): it issues none itself */
};

void pool_init(struct pool *p, enum pool_type type, uint32_t serial);
/* pool_init for a pool whose tag an earlier pool had (a server reuses its
 * 8-bit serials): every id it issues carries a generation above floor, so
 * no id of the earlier pool (all at most floor) ever resolves in it. A
 * floor so high that few generations remain (past POOL_FLOOR_MAX) is the
 * caller's to avoid. */
void pool_init_floor(struct pool *p, enum pool_type type, uint32_t serial, uint32_t floor);
#define POOL_FLOOR_MAX (UINT32_MAX - (1u << 24))
void pool_finish(struct pool *p);
/* Stores obj and returns its id, or 0 when the pool is full or memory ran out. */
uint64_t pool_add(struct pool *p, void *obj);
/* pool_add with the refusal raised: KILN_ERR_LIMIT when every slot is taken,
 * KILN_ERR_NO_MEMORY when the slot table could not grow; `what` names the
 * object ("buffer") in the message. *id is 0 on failure. */
kiln_result pool_insert(struct pool *p, void *obj, const char *what, uint64_t *id);
/* Stores obj under id, an id minted by its owner's own pool of the same
 * type, serial and floor (a remote client's, which runs ahead of the
 * server that holds the objects). Refused (KILN_ERR_HANDLE, naming why)
 * unless id has this pool's tag and names either the next new slot or a
 * free one, at exactly the slot's next generation (the floor's next for a
 * new slot): so no id that was ever live here resolves again, and no
 * client can push the generations, and with them a later context's floor,
 * further than its own makes and destroys did. From the first claim on, the pool issues
 * no ids of its own (pool_add refuses). */
kiln_result pool_claim(struct pool *p, uint64_t id, void *obj, const char *what);
/* As pool_claim then pool_remove, raising nothing: the slot moves on as
 * if id had been made and destroyed. Nothing when id may not be claimed. */
void pool_void(struct pool *p, uint64_t id);
/* The object of a live id, else NULL (null, stale, foreign or wrong type). */
void *pool_get(const struct pool *p, uint64_t id);
/* Why pool_get refused an id: a short phrase for messages. */
const char *pool_why(const struct pool *p, uint64_t id);
/* Frees a live id's slot; returns its object (NULL if the id is not live). */
void *pool_remove(struct pool *p, uint64_t id);
/* Iteration over live objects: start with *cursor = 0; NULL at the end. */
void *pool_next(const struct pool *p, uint32_t *cursor, uint64_t *id);
#ifdef KILN_TEST_HOOKS
/* Test hook: set the generation a slot will have next. */
void pool_test_set_gen(struct pool *p, uint32_t slot, uint32_t gen);
#endif

static inline uint32_t pool_id_slot(uint64_t id) { return (uint32_t)(id & POOL_MAX_SLOTS); }
static inline uint32_t pool_id_gen(uint64_t id) { return (uint32_t)(id >> 32); }

#endif
