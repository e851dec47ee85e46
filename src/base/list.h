/* SPDX-License-Identifier: MIT */
/*
 * list: one intrusive doubly linked list for every module (a job queue, a
 * cache's recency order, a save queue). A list is a `struct list` head; an
 * element embeds a `struct list` link and is found from it with
 * list_entry(). The head is a ring sentinel, so insertion and removal never
 * branch on "first" or "last", and a link that is in no list points at
 * itself (list_linked() is false), so removing twice is harmless.
 *
 * Not thread-safe: a list belongs to whoever holds the lock guarding its
 * head.
 */
#ifndef KILN_LIST_H
#define KILN_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list {
    struct list *prev, *next;
};

/* Makes an empty list, or an unlinked element link. */
static inline void list_init(struct list *l) { l->prev = l->next = l; }
static inline bool list_empty(const struct list *l) { return l->next == l; }
/* Whether an element's link is in a list (its link was list_init'ed). */
static inline bool list_linked(const struct list *e) { return e->next != e; }

static inline void list_insert_after(struct list *at, struct list *e)
{
    e->prev = at;
    e->next = at->next;
    at->next->prev = e;
    at->next = e;
}
static inline void list_add_head(struct list *l, struct list *e) { list_insert_after(l, e); }
static inline void list_add_tail(struct list *l, struct list *e) { list_insert_after(l->prev, e); }

/* Unlinks e (a no-op when it is in no list) and leaves it unlinked. */
static inline void list_remove(struct list *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    list_init(e);
}

/* The first or last link, or NULL when the list is empty. */
static inline struct list *list_first(const struct list *l) { return list_empty(l) ? NULL : l->next; }
static inline struct list *list_last(const struct list *l) { return list_empty(l) ? NULL : l->prev; }

/* The element of type `type` whose `member` is the link `ptr`. */
#define list_entry(ptr, type, member) ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Walks l's elements first to last (or last to first); `it` may be
 * removed inside the body. `it` is a `type *`. */
#define list_for_each(it, tmp, l, type, member)                                              \
    for (struct list *tmp##_at = (l)->next, *tmp = tmp##_at->next;                           \
         tmp##_at != (l) && ((it) = list_entry(tmp##_at, type, member), 1);                  \
         tmp##_at = tmp, tmp = tmp##_at->next)
#define list_for_each_rev(it, tmp, l, type, member)                                          \
    for (struct list *tmp##_at = (l)->prev, *tmp = tmp##_at->prev;                           \
         tmp##_at != (l) && ((it) = list_entry(tmp##_at, type, member), 1);                  \
         tmp##_at = tmp, tmp = tmp##_at->prev)

#endif
