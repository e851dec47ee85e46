/* SPDX-License-Identifier: MIT */
/*
 * pool.c: generation-checked handle pools (see pool.h for the id layout).
 *
 * Free slots form a singly linked list through next_free. A freed slot's
 * generation is bumped at once, so its old id goes stale immediately; at the
 * top generation the slot is retired instead of being linked back.
 */
#include "pool.h"
#include "base.h"

#include <stdlib.h>

void pool_init(struct pool *p, enum pool_type type, uint32_t serial) { pool_init_floor(p, type, serial, 0); }

void pool_init_floor(struct pool *p, enum pool_type type, uint32_t serial, uint32_t floor)
{
    if (floor > POOL_FLOOR_MAX)
        floor = POOL_FLOOR_MAX;   /* defensive: callers keep below it */
    *p = (struct pool){.tag = ((uint32_t)type & 0xf) | ((serial & 0xff) << 4), .gen_floor = floor,
                       .gen_high = floor};
}

void pool_finish(struct pool *p)
{
    free(p->e);
    *p = (struct pool){0};
}

static uint64_t make_id(const struct pool *p, uint32_t slot, uint32_t gen)
{
    return ((uint64_t)gen << 32) | ((uint64_t)p->tag << POOL_SLOT_BITS) | slot;
}

static bool grow(struct pool *p)
{
    if (p->len < p->cap)
        return true;
    uint32_t cap = p->cap ? p->cap * 2 : 16;
    struct pool_entry *e = mem_realloc(p->e, (size_t)cap * sizeof *e);
    if (!e)
        return false;
    p->e = e;
    p->cap = cap;
    return true;
}

uint64_t pool_add(struct pool *p, void *obj)
{
    uint32_t slot;
    if (p->minted)
        return 0;
    if (p->free_head) {
        slot = p->free_head - 1;
        p->free_head = p->e[slot].next_free;
    } else {
        if (p->len >= POOL_MAX_SLOTS || !grow(p))
            return 0;
        slot = p->len++;
        p->e[slot] = (struct pool_entry){.gen = p->gen_floor + 1};
    }
    struct pool_entry *e = &p->e[slot];
    e->live = true;
    e->obj = obj;
    p->live++;
    if (e->gen > p->gen_high)
        p->gen_high = e->gen;
    return make_id(p, slot, e->gen);
}

kiln_result pool_insert(struct pool *p, void *obj, const char *what, uint64_t *id)
{
    bool full = !p->free_head && p->len >= POOL_MAX_SLOTS;
    *id = pool_add(p, obj);
    if (*id)
        return KILN_OK;
    if (p->minted)
        return KILN_RAISE(KILN_ERR_INVALID, "%s handles of this context are its client's to mint", what);
    if (full)
        return KILN_RAISE(KILN_ERR_LIMIT, "no %s handles left (%u slots, %u retired)", what, POOL_MAX_SLOTS,
                          p->retired);
    return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory growing the %s handle table past %u slots", what,
                      p->cap);
}

/* Why id may not be claimed, or NULL. */
static const char *claim_refusal(const struct pool *p, uint64_t id)
{
    uint32_t tag = (uint32_t)(id >> POOL_SLOT_BITS) & 0xfff, slot = pool_id_slot(id), gen = pool_id_gen(id);
    if (tag != p->tag)
        return pool_why(p, id);
    if (slot >= POOL_MAX_SLOTS || gen <= p->gen_floor)
        return "its slot or generation is out of range";
    if (slot > p->len)
        return "its slot skips past the next new one";
    if (slot < p->len && p->e[slot].live)
        return "its slot holds a live object";
    if (slot < p->len && (p->e[slot].retired || gen < p->e[slot].gen))
        return "its generation was issued before (a stale handle)";
    /* The owner's pool issues a new slot at the floor's next generation
     * and a freed one at the generation after its last: a generation
     * further on skips ahead, and would raise the serial's floor for
     * every later context (pool.h). */
    if (gen != (slot == p->len ? p->gen_floor + 1 : p->e[slot].gen))
        return "its generation skips past the slot's next";
    return NULL;
}

kiln_result pool_claim(struct pool *p, uint64_t id, void *obj, const char *what)
{
    const char *why = claim_refusal(p, id);
    if (why)
        return KILN_RAISE(KILN_ERR_HANDLE, "new %s 0x%016llx: not one this context's client may make: %s", what,
                          (unsigned long long)id, why);
    uint32_t slot = pool_id_slot(id), gen = pool_id_gen(id);
    if (slot == p->len) {
        if (!grow(p))
            return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory growing the %s handle table past %u slots", what,
                              p->cap);
        p->len++;
    }
    p->minted = true;
    p->e[slot] = (struct pool_entry){.gen = gen, .live = true, .obj = obj};
    p->live++;
    if (gen > p->gen_high)
        p->gen_high = gen;
    return KILN_OK;
}

void pool_void(struct pool *p, uint64_t id)
{
    uint32_t slot = pool_id_slot(id), gen = pool_id_gen(id);
    if (claim_refusal(p, id) || (slot == p->len && !grow(p)))
        return;
    p->len += slot == p->len;
    p->minted = true;
    p->e[slot] = (struct pool_entry){.gen = gen == UINT32_MAX ? gen : gen + 1, .retired = gen == UINT32_MAX};
    p->retired += gen == UINT32_MAX;
    if (gen > p->gen_high)
        p->gen_high = gen;
}

static struct pool_entry *lookup(const struct pool *p, uint64_t id)
{
    if (!id || ((id >> POOL_SLOT_BITS) & 0xfff) != p->tag)
        return NULL;
    uint32_t slot = pool_id_slot(id);
    if (slot >= p->len)
        return NULL;
    struct pool_entry *e = &p->e[slot];
    if (!e->live || e->gen != pool_id_gen(id))
        return NULL;
    return e;
}

void *pool_get(const struct pool *p, uint64_t id)
{
    struct pool_entry *e = lookup(p, id);
    return e ? e->obj : NULL;
}

const char *pool_why(const struct pool *p, uint64_t id)
{
    if (!id)
        return "null handle";
    uint32_t tag = (uint32_t)(id >> POOL_SLOT_BITS) & 0xfff;
    if ((tag & 0xf) != (p->tag & 0xf))
        return "handle of another object type";
    if (tag != p->tag)
        return "handle of another context";
    uint32_t slot = pool_id_slot(id);
    if (slot >= p->len)
        return "handle never issued";
    if (!p->e[slot].live || p->e[slot].gen != pool_id_gen(id))
        return "stale handle (object destroyed)";
    return "live handle";
}

void *pool_remove(struct pool *p, uint64_t id)
{
    struct pool_entry *e = lookup(p, id);
    if (!e)
        return NULL;
    void *obj = e->obj;
    KILN_ASSERT(e->live && p->live > 0);
    e->obj = NULL;
    e->live = false;
    p->live--;
    if (e->gen == UINT32_MAX) {
        p->retired++;   /* the next generation would wrap to an id already issued */
        e->retired = true;
        return obj;
    }
    e->gen++;
    if (p->minted)
        return obj;   /* its owner mints the next id: no free list here */
    e->next_free = p->free_head;
    p->free_head = (uint32_t)(e - p->e) + 1;
    return obj;
}

void *pool_next(const struct pool *p, uint32_t *cursor, uint64_t *id)
{
    while (*cursor < p->len) {
        uint32_t s = (*cursor)++;
        if (p->e[s].live) {
            if (id)
                *id = make_id(p, s, p->e[s].gen);
            return p->e[s].obj;
        }
    }
    return NULL;
}

#ifdef KILN_TEST_HOOKS
void pool_test_set_gen(struct pool *p, uint32_t slot, uint32_t gen)
{
    if (slot < p->len && !p->e[slot].live && gen)
        p->e[slot].gen = gen;
}
#endif
