/* SPDX-License-Identifier: MIT */
/*
 * test_thread.c: base/thread: a thread runs with its name and its stack
 * size, is joined once; a drain runs at exit while registered, newest
 * first, and not once removed.
 */
#define _GNU_SOURCE   /* pthread_getname_np, pthread_getattr_np */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/thread.h"
#include "test.h"

struct seen {
    char name[16];
    size_t stack;
};

static void *note_self(void *arg)
{
    struct seen *s = arg;
    pthread_getname_np(pthread_self(), s->name, sizeof s->name);
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstacksize(&a, &s->stack);
        pthread_attr_destroy(&a);
    }
    return NULL;
}

TEST(a_thread_has_its_name_and_stack)
{
    struct kthread t;
    struct seen s = {0};
    REQUIRE_OK(kthread_start(&t, "kiln-test-a-long-name", 4u << 20, note_self, &s));
    CHECK(t.running);
    kthread_join(&t);
    CHECK(!t.running);
    kthread_join(&t);   /* again: nothing */
    CHECK(!strcmp(s.name, "kiln-test-a-lon"));   /* 15 characters at most, as the kernel keeps */
    CHECK(s.stack >= (4u << 20));
}

static int drain_fd = -1;
static void drain_write(void *arg)
{
    if (write(drain_fd, arg, 1) != 1)
        _exit(9);
}

TEST(drains_run_at_exit_newest_first_and_not_once_removed)
{
    int p[2];
    REQUIRE(pipe(p) == 0);
    fflush(stdout);   /* the child exits through stdio: nothing of ours printed twice */
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        drain_fd = p[1];
        static struct kthread_drain a, b, c;
        kthread_drain_add(&a, drain_write, "a");
        kthread_drain_add(&b, drain_write, "b");
        kthread_drain_add(&c, drain_write, "c");
        kthread_drain_remove(&b);
        exit(0);
    }
    close(p[1]);
    char got[8] = {0};
    ssize_t n = 0, k;
    while ((k = read(p[0], got + n, sizeof got - 1 - (size_t)n)) > 0)
        n += k;
    close(p[0]);
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    CHECK(!strcmp(got, "ca"));
}

int main(void)
{
    RUN(a_thread_has_its_name_and_stack);
    RUN(drains_run_at_exit_newest_first_and_not_once_removed);
    return TEST_SUMMARY();
}
