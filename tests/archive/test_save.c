/* SPDX-License-Identifier: MIT */
/*
 * test_save.c: no crash corrupts an archive. A child process saves an
 * archive and is killed (SIGKILL) at each step of the save in turn (create,
 * each write, fsync, rename, folder open, folder fsync); after each, the
 * folder is read: nothing corrupt is served, the archive saved before is
 * whole, the new one is either whole or absent, and the dead writer's .tmp
 * is cleaned up. Injected ENOSPC and EIO at each step fail the save with a
 * message naming the step, leaving no .tmp.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive/archive.h"
#include "test.h"

static const struct arc_device k_dev = {.cache_uuid = {7}, .driver_version = 3, .vendor_id = 4, .device_id = 5};
#define BIG (2500u * 1024u)   /* three write chunks */

static uint8_t *archive_of(const char *tag, size_t *len)
{
    static uint8_t big[BIG];
    for (size_t i = 0; i < BIG; i++)
        big[i] = (uint8_t)(i * 7 + tag[0]);
    struct arc_writer w;
    arc_writer_init(&w, &k_dev);
    char key[32];
    snprintf(key, sizeof key, "%s-small", tag);
    arc_writer_add(&w, ARC_FRONT, key, strlen(key), tag, strlen(tag));
    snprintf(key, sizeof key, "%s-big", tag);
    arc_writer_add(&w, ARC_BACK, key, strlen(key), big, BIG);
    const uint8_t *data;
    uint8_t *copy = NULL;
    if (arc_writer_close(&w, &data, len) == KILN_OK && (copy = malloc(*len)))
        memcpy(copy, data, *len);
    arc_writer_finish(&w);
    return copy;
}

/* 1: the file holds tag's two entries exactly; 0: it is absent; -1: it
 * serves something wrong or only part. */
static int file_state(const char *dir, const char *name, const char *tag)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (access(path, F_OK))
        return 0;
    struct arc_loaded m;
    if (arc_load(&m, path, ARC_MAX_FILE) != KILN_OK)
        return -1;
    struct arc_file f;
    int state = -1;
    if (arc_file_open(&f, m.data, m.size, &k_dev) == KILN_OK) {
        size_t len;
        uint8_t *want = archive_of(tag, &len);
        char key[32];
        const uint8_t *v;
        size_t vl;
        snprintf(key, sizeof key, "%s-small", tag);
        bool small = arc_file_find(&f, ARC_FRONT, key, strlen(key), NULL, &v, &vl) == ARC_HIT && vl == strlen(tag) &&
                     !memcmp(v, tag, vl);
        snprintf(key, sizeof key, "%s-big", tag);
        bool big = arc_file_find(&f, ARC_BACK, key, strlen(key), NULL, &v, &vl) == ARC_HIT && vl == BIG;
        if (big) {
            for (size_t i = 0; i < BIG && big; i++)
                big = v[i] == (uint8_t)(i * 7 + tag[0]);
        }
        state = small && big ? 1 : -1;
        free(want);
        arc_file_close(&f);
    }
    arc_loaded_free(&m);
    return state;
}

static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".tmp") != NULL;
    if (d)
        closedir(d);
    return n;
}

TEST(a_save_round_trips)
{
    char dir[] = "/tmp/kiln-save-XXXXXX";
    REQUIRE(mkdtemp(dir));
    size_t len;
    uint8_t *a = archive_of("alpha", &len);
    REQUIRE(a);
    CHECK_OK(arc_save(dir, "a.arc", a, len));
    CHECK_EQ(file_state(dir, "a.arc", "alpha"), 1);
    CHECK_EQ(count_tmp(dir), 0);
    free(a);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
}

TEST(a_kill_at_every_step_of_a_save_corrupts_nothing)
{
    char dir[] = "/tmp/kiln-save-XXXXXX";
    REQUIRE(mkdtemp(dir));
    size_t alen, blen;
    uint8_t *a = archive_of("alpha", &alen), *b = archive_of("beta", &blen);
    REQUIRE(a && b);
    REQUIRE_OK(arc_save(dir, "a.arc", a, alen));
    /* How many steps a save of b takes. */
    uint32_t before = arc_fault_steps();
    REQUIRE_OK(arc_save(dir, "probe.arc", b, blen));
    uint32_t steps = arc_fault_steps() - before;
    CHECK(steps >= 7);   /* create, 3 writes, fsync, rename, folder open, folder fsync */
    char probe[600];
    snprintf(probe, sizeof probe, "%s/probe.arc", dir);
    unlink(probe);
    int whole = 0, absent = 0;
    for (uint32_t s = 1; s <= steps; s++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            arc_fault_set(ARC_FAULT_KILL, arc_fault_steps() + s);
            kiln_result r = arc_save(dir, "b.arc", b, blen);
            _exit(r == KILN_OK ? 0 : 1);
        }
        int ws;
        REQUIRE(waitpid(pid, &ws, 0) == pid);
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
        CHECK_EQ(file_state(dir, "a.arc", "alpha"), 1);   /* saved before: still whole */
        int st = file_state(dir, "b.arc", "beta");
        CHECK(st == 0 || st == 1);                        /* never partial, never wrong */
        whole += st == 1;
        absent += st == 0;
        arc_clean_tmp(dir);
        CHECK_EQ(count_tmp(dir), 0);
        char path[600];
        snprintf(path, sizeof path, "%s/b.arc", dir);
        unlink(path);
    }
    CHECK(absent >= 6 && whole >= 1);   /* killed before the rename: absent; after: whole */
    free(a);
    free(b);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
}

static void fail_each_step(enum arc_fault fault, const char *reason)
{
    char dir[] = "/tmp/kiln-save-XXXXXX";
    REQUIRE(mkdtemp(dir));
    size_t blen;
    uint8_t *b = archive_of("beta", &blen);
    REQUIRE(b);
    uint32_t before = arc_fault_steps();
    REQUIRE_OK(arc_save(dir, "probe.arc", b, blen));
    uint32_t steps = arc_fault_steps() - before;
    for (uint32_t s = 1; s <= steps; s++) {
        arc_fault_set(fault, arc_fault_steps() + s);
        CHECK_RESULT(arc_save(dir, "b.arc", b, blen), KILN_ERR_IO);
        CHECK_MSG(reason);
        CHECK_MSG("archive save of");
        CHECK_EQ(count_tmp(dir), 0);
        int st = file_state(dir, "b.arc", "beta");
        CHECK(st == 0 || st == 1);   /* failed before the rename: absent; at the folder fsync: whole */
        char path[600];
        snprintf(path, sizeof path, "%s/b.arc", dir);
        unlink(path);
    }
    arc_fault_set(ARC_FAULT_NONE, 0);
    free(b);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
}

TEST(enospc_at_every_step_fails_the_save_cleanly) { fail_each_step(ARC_FAULT_ENOSPC, "No space left on device"); }
TEST(eio_at_every_step_fails_the_save_cleanly) { fail_each_step(ARC_FAULT_EIO, "Input/output error"); }

TEST(tmp_files_of_live_writers_are_kept)
{
    char dir[] = "/tmp/kiln-save-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char mine[600], dead[600];
    snprintf(mine, sizeof mine, "%s/x.arc.%ld.tmp", dir, (long)getpid());
    snprintf(dead, sizeof dead, "%s/y.arc.999999999.tmp", dir);
    FILE *f = fopen(mine, "w");
    REQUIRE(f);
    fclose(f);
    f = fopen(dead, "w");
    REQUIRE(f);
    fclose(f);
    CHECK_EQ(arc_clean_tmp(dir), 1);
    CHECK(access(mine, F_OK) == 0);
    CHECK(access(dead, F_OK) != 0);
    unlink(mine);
    rmdir(dir);
}

int main(void)
{
    RUN(a_save_round_trips);
    RUN(a_kill_at_every_step_of_a_save_corrupts_nothing);
    RUN(enospc_at_every_step_fails_the_save_cleanly);
    RUN(eio_at_every_step_fails_the_save_cleanly);
    RUN(tmp_files_of_live_writers_are_kept);
    return TEST_SUMMARY();
}
