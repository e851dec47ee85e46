/* SPDX-License-Identifier: MIT */
/*
 * thread: the one way kiln starts a thread (compile workers and their
 * watchdog, the archive saver, the server's connection threads, the
 * transport's heartbeat), and the drains the process runs at exit.
 *
 * Every thread is named (its name shows in top -H, gdb and /proc, at most
 * 15 characters: "kiln-compile-3") and gets a stack of the size asked for;
 * a thread that cannot be started is KILN_ERR_NO_MEMORY naming it and the
 * system's reason.
 *
 * A drain is a function the process runs at exit (atexit) while its owner
 * is alive: a service that keeps threads registers one, so a program that
 * exits without destroying its context still stops those threads before
 * the process's memory goes. Drains run newest first, under a lock that
 * kthread_drain_remove also takes: an owner that removes its drain is not
 * drained after.
 */
#ifndef KILN_BASE_THREAD_H
#define KILN_BASE_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "kiln.h"

#define KTHREAD_STACK_DEFAULT (1u << 20)

struct kthread {
    pthread_t id;
    bool running;            /* started and not joined yet */
    char name[16];
    void *(*fn)(void *);     /* what it runs, and on what */
    void *arg;
};

/* Starts fn(arg) on a thread named name (cut to 15 characters) with a
 * stack of stack bytes (0: KTHREAD_STACK_DEFAULT). t is the thread's until
 * it is joined: it must stay where it is. Allocates nothing. */
kiln_result kthread_start(struct kthread *t, const char *name, size_t stack, void *(*fn)(void *), void *arg)
    __attribute__((warn_unused_result));
/* Waits for it to end (a thread not running: nothing). */
void kthread_join(struct kthread *t);

struct kthread_drain {
    void (*fn)(void *arg);
    void *arg;
    struct kthread_drain *next;
};
/* Registers d (caller storage, alive until removed) to run fn(arg) at
 * process exit. */
void kthread_drain_add(struct kthread_drain *d, void (*fn)(void *), void *arg);
/* Unregisters d; after it returns, d's function is not called. */
void kthread_drain_remove(struct kthread_drain *d);

#endif
