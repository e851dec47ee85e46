/* SPDX-License-Identifier: MIT */
/*
 * thread.c: named threads with their stack size, and the exit drains
 * (thread.h).
 */
#define _GNU_SOURCE   /* pthread_setname_np */
#include "thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

/* A thread names itself before it runs its function, so its name is
 * there from its first instruction on (t lives while the thread does). */
static void *trampoline(void *p)
{
    struct kthread *t = p;
    (void)pthread_setname_np(pthread_self(), t->name);   /* a name is for people: a refusal costs nothing */
    return t->fn(t->arg);
}

kiln_result kthread_start(struct kthread *t, const char *name, size_t stack, void *(*fn)(void *), void *arg)
{
    t->running = false;
    t->fn = fn;
    t->arg = arg;
    snprintf(t->name, sizeof t->name, "%s", name);
    size_t bytes = stack ? stack : KTHREAD_STACK_DEFAULT;
    pthread_attr_t attr;
    int e = pthread_attr_init(&attr);
    if (e == 0)
        e = pthread_attr_setstacksize(&attr, bytes);
    if (e == 0)
        e = pthread_create(&t->id, &attr, trampoline, t);
    pthread_attr_destroy(&attr);
    if (e)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "no thread %s (%zu-byte stack): %s", t->name, bytes, strerror(e));
    t->running = true;
    return KILN_OK;
}

void kthread_join(struct kthread *t)
{
    if (!t->running)
        return;
    pthread_join(t->id, NULL);
    t->running = false;
}

static pthread_mutex_t drains_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards drains, registered */
static struct kthread_drain *drains;
static bool registered;

static void run_drains(void)
{
    pthread_mutex_lock(&drains_lock);
    for (struct kthread_drain *d = drains; d; d = d->next)
        d->fn(d->arg);
    pthread_mutex_unlock(&drains_lock);
}

void kthread_drain_add(struct kthread_drain *d, void (*fn)(void *), void *arg)
{
    d->fn = fn;
    d->arg = arg;
    pthread_mutex_lock(&drains_lock);
    d->next = drains;
    drains = d;
    if (!registered)
        registered = atexit(run_drains) == 0;
    pthread_mutex_unlock(&drains_lock);
}

void kthread_drain_remove(struct kthread_drain *d)
{
    pthread_mutex_lock(&drains_lock);
    for (struct kthread_drain **p = &drains; *p; p = &(*p)->next)
        if (*p == d) {
            *p = d->next;
            break;
        }
    pthread_mutex_unlock(&drains_lock);
}
