/* SPDX-License-Identifier: MIT */
/*
 * test_store.c: a context's archive folder (src/archive/store.c) without a
 * GPU: run archives take entries up to their bounds, the saver saves each
 * once and holds back while its gate says busy (unless enough waits), a
 * failed save is tried once more and then let go, entries past a bound are
 * counted and not kept, adders on many threads lose nothing they were told
 * was kept, and the saver tidies the folder (compaction, the size bound,
 * used files marked used) after its delay. A FIFO under an archive's name
 * never hangs the opening (skipped, counted); a read-only folder is looked
 * up and never written, and a context says it is read-only.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/arc_files.h"
#include "test.h"

static char g_root[256];   /* KILN_ARCHIVE_DIR of the current test */

static kiln_caps test_caps(void)
{
    kiln_caps c = {0};
    snprintf(c.device_name, sizeof c.device_name, "store test device");
    c.driver_version = 42;
    c.vendor_id = 1;
    c.device_id = 2;
    c.pipeline_cache_uuid[0] = 9;
    return c;
}

static void fresh_root(void)
{
    snprintf(g_root, sizeof g_root, "/tmp/kiln-store-XXXXXX");
    if (!mkdtemp(g_root))
        abort();
    setenv("KILN_ARCHIVE", "1", 1);
    setenv("KILN_ARCHIVE_DIR", g_root, 1);
    unsetenv("KILN_ARCHIVE_READONLY");
    unsetenv("KILN_ARCHIVE_MAX_SIZE");
}

static void remove_root(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_root);
}

/* Small bounds, no tidying unless a test asks. */
static struct arc_store_config small_cfg(void)
{
    struct arc_store_config c;
    arc_store_config_default(&c);
    c.run_bytes = 4096;
    c.taking = 4;
    c.unsaved_bytes = 1 << 20;
    c.urgent_bytes = 1 << 20;
    c.retry_s = 0.1;
    c.tidy_delay_s = 3600;
    return c;
}

static uint32_t count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    uint32_t n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name), s = strlen(suffix);
        n += l > s && !strcmp(e->d_name + l - s, suffix);
    }
    if (d)
        closedir(d);
    return n;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void entry_of(uint32_t i, char key[32], uint8_t *value, size_t len)
{
    snprintf(key, 32, "entry-%u", i);
    for (size_t k = 0; k < len; k++)
        value[k] = (uint8_t)(i * 31 + k);
}

/* How many of entries 0..n-1 a fresh store finds, each with the right
 * value. */
static uint32_t entries_found(uint32_t n, size_t len)
{
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    if (arc_store_open(&s, &caps, &cfg) != KILN_OK || !s.enabled)
        return 0;
    uint32_t found = 0;
    uint8_t *want = malloc(len);
    struct bytes buf = {0};
    for (uint32_t i = 0; i < n; i++) {
        char key[32];
        entry_of(i, key, want, len);
        uint8_t h[16];
        hash128(key, strlen(key), h);
        const uint8_t *v;
        size_t vlen;
        if (arc_store_find(&s, ARC_FRONT, h, key, strlen(key), &buf, &v, &vlen) == ARC_HIT && vlen == len &&
            !memcmp(v, want, len))
            found++;
    }
    free(buf.p);
    free(want);
    arc_store_close(&s, NULL, 0);
    return found;
}

/* How many files of the folder hold entry key (each entry must be in one
 * file only). */
struct copies {
    const char *key;
    uint32_t n;
};

static void count_copies(void *ud, const char *path, const struct arc_file *f)
{
    (void)path;
    struct copies *c = ud;
    const uint8_t *v;
    size_t vlen;
    c->n += arc_file_find(f, ARC_FRONT, c->key, strlen(c->key), NULL, &v, &vlen) == ARC_HIT;
}

static uint32_t copies_of(const char *dir, const char *key)
{
    kiln_caps caps = test_caps();
    struct arc_device dev;
    arc_device_from_caps(&dev, &caps);
    struct copies c = {key, 0};
    test_each_arc(dir, &dev, count_copies, &c);
    return c.n;
}

static bool gate_busy_flag(void *ud) { return atomic_load((_Atomic bool *)ud); }

/* A run archive past run_bytes is saved by the saver (not at close), once;
 * the rest at close; every entry comes back from a fresh store. */
TEST(run_archives_fill_and_save)
{
    fresh_root();
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    REQUIRE(s.enabled);
    uint8_t value[1000];
    for (uint32_t i = 0; i < 10; i++) {
        char key[32];
        entry_of(i, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
    }
    /* 10 KB of entries in 4 KB run archives: two filled, saved meanwhile. */
    for (int t = 0; t < 3000 && arc_store_stats_get(&s).saved < 2; t++)
        sleep_ms(10);
    struct arc_store_stats st = arc_store_stats_get(&s);
    CHECK_EQ(st.saved, 2);
    CHECK_EQ(count_files(s.dir, ".arc"), 2);
    /* What was saved no longer counts against the unsaved bound: a store
     * that took 1 MiB in 4 KB run archives still takes entries. */
    char key[32];
    uint32_t refused_for_good = 0;
    for (uint32_t i = 10; i < 1100; i++) {
        entry_of(i, key, value, sizeof value);
        int tries = 0;
        while (!arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value) && ++tries < 2000)
            sleep_ms(5);   /* the saver (at nice 19) is behind: let it catch up */
        refused_for_good += tries == 2000;
    }
    CHECK_EQ(refused_for_good, 0);
    /* Once the queue is saved, only the run archives taking entries count. */
    for (int t = 0; t < 3000; t++) {
        pthread_mutex_lock(&s.lock);
        bool drained = list_empty(&s.queue) && !s.saving;
        uint64_t unsaved = s.unsaved;
        pthread_mutex_unlock(&s.lock);
        if (drained) {
            CHECK(unsaved <= (uint64_t)cfg.taking * cfg.run_bytes);
            break;
        }
        sleep_ms(10);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", s.dir);
    char line[8192];
    arc_store_close(&s, line, sizeof line);
    CHECK_EQ(count_files(dir, ".tmp"), 0);
    CHECK(count_files(dir, ".arc") > 100);   /* saved once each, 4 KB apiece */
    CHECK_EQ(entries_found(10, sizeof value), 10);
    for (uint32_t i = 0; i < 10; i++) {
        char key[32];
        entry_of(i, key, value, sizeof value);
        CHECK_EQ(copies_of(dir, key), 1);
    }
    remove_root();
}

/* The saver holds back while its gate says busy; once urgent_bytes wait it
 * saves anyway. Past unsaved_bytes an entry is not kept, and counted. */
TEST(saver_gate_and_unsaved_bound)
{
    fresh_root();
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    cfg.urgent_bytes = 12000;
    cfg.unsaved_bytes = 20000;
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    _Atomic bool busy = true;
    arc_store_set_gate(&s, gate_busy_flag, &busy);
    uint8_t value[1000];
    char key[32];
    for (uint32_t i = 0; i < 5; i++) {   /* ~5 KB: one full run archive waits */
        entry_of(i, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
    }
    sleep_ms(300);
    struct arc_store_stats st = arc_store_stats_get(&s);
    CHECK_EQ(st.saved, 0);
    CHECK(st.saver_waits > 0);
    /* Past 12 KB waiting: saved although busy. */
    for (uint32_t i = 5; i < 13; i++) {
        entry_of(i, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
    }
    for (int t = 0; t < 3000 && arc_store_stats_get(&s).saved == 0; t++)
        sleep_ms(10);
    CHECK(arc_store_stats_get(&s).saved >= 1);
    /* Fill to the unsaved bound while busy and not urgent: some not kept. */
    pthread_mutex_lock(&s.lock);   /* the saver reads cfg under the store's lock */
    s.cfg.urgent_bytes = 1 << 30;
    pthread_mutex_unlock(&s.lock);
    uint32_t kept = 13, refused = 0;
    for (uint32_t i = 13; i < 60; i++) {
        entry_of(i, key, value, sizeof value);
        if (arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value))
            kept++;
        else
            refused++;
    }
    CHECK(refused > 0);
    CHECK_EQ(arc_store_stats_get(&s).over_bound, refused);
    atomic_store(&busy, false);
    arc_store_set_gate(&s, NULL, NULL);
    char line[8192];
    arc_store_close(&s, line, sizeof line);
    char want[64];
    snprintf(want, sizeof want, "%u not kept (over a bound)", refused);
    CHECK(strstr(line, want) != NULL);
    CHECK_EQ(entries_found(60, sizeof value), kept);
    remove_root();
}

/* A failed save is tried once more after retry_s and then succeeds. */
TEST(failed_save_retried_once)
{
    fresh_root();
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    uint8_t value[1000];
    char key[32];
    arc_fault_set(ARC_FAULT_EIO, arc_fault_steps() + 2);   /* the first save's first write */
    for (uint32_t i = 0; i < 5; i++) {
        entry_of(i, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
    }
    for (int t = 0; t < 3000 && arc_store_stats_get(&s).saved == 0; t++)
        sleep_ms(10);
    arc_fault_set(ARC_FAULT_NONE, 0);
    struct arc_store_stats st = arc_store_stats_get(&s);
    CHECK_EQ(st.saves_failed, 1);
    CHECK_EQ(st.saved, 1);
    CHECK_EQ(st.let_go, 0);
    arc_store_close(&s, NULL, 0);
    CHECK_EQ(entries_found(5, sizeof value), 5);
    remove_root();
}

/* A save that fails twice is let go, its entries counted. */
TEST(twice_failed_save_let_go)
{
    fresh_root();
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s.dir);   /* every save now fails: no folder */
    CHECK_EQ(system(cmd), 0);
    uint8_t value[1000];
    char key[32];
    for (uint32_t i = 0; i < 4; i++)   /* 4 KB: one full run archive */ {
        entry_of(i, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
    }
    for (int t = 0; t < 3000 && arc_store_stats_get(&s).let_go == 0; t++)
        sleep_ms(10);
    struct arc_store_stats st = arc_store_stats_get(&s);
    CHECK_EQ(st.saves_failed, 2);
    CHECK_EQ(st.let_go, 1);
    CHECK_EQ(st.entries_let_go, 4);
    char line[8192];
    arc_store_close(&s, line, sizeof line);
    CHECK(strstr(line, "1 run archives let go (4 entries)") != NULL);
    remove_root();
}

/* Adders on 8 threads: every entry the store said it kept is in exactly one
 * file after close; the rest were counted. */
struct adder {
    struct arc_store *s;
    uint32_t first, n, kept;
    bool kept_flags[200];
};

static void *adder_main(void *arg)
{
    struct adder *a = arg;
    uint8_t value[300];
    char key[32];
    for (uint32_t i = 0; i < a->n; i++) {
        entry_of(a->first + i, key, value, sizeof value);
        a->kept_flags[i] = arc_store_add(a->s, ARC_FRONT, key, strlen(key), value, sizeof value);
        a->kept += a->kept_flags[i];
    }
    return NULL;
}

TEST(adders_on_many_threads)
{
    fresh_root();
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    cfg.taking = 2;
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    struct adder a[8];
    pthread_t t[8];
    for (uint32_t i = 0; i < 8; i++) {
        a[i] = (struct adder){.s = &s, .first = i * 200, .n = 200};
        CHECK_EQ(pthread_create(&t[i], NULL, adder_main, &a[i]), 0);
    }
    uint32_t kept = 0;
    for (uint32_t i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        kept += a[i].kept;
    }
    struct arc_store_stats st = arc_store_stats_get(&s);
    CHECK_EQ(st.added, kept);
    CHECK_EQ(st.added + st.over_bound, 1600);
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", s.dir);
    arc_store_close(&s, NULL, 0);
    CHECK_EQ(entries_found(1600, 300), kept);
    /* Exactly once each: spot-check every 37th entry. */
    for (uint32_t i = 0; i < 1600; i += 37) {
        char key[32];
        uint8_t value[300];
        entry_of(i, key, value, sizeof value);
        CHECK_EQ(copies_of(dir, key), a[i / 200].kept_flags[i % 200] ? 1 : 0);
    }
    remove_root();
}

/* After its delay the saver compacts small run archives, keeps the folder
 * under max_size by removing the least recently used files, and marks a
 * file that served a hit as used (its mtime). */
TEST(saver_tidies_folder)
{
    fresh_root();
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    /* Three processes' worth of small run archives. */
    uint8_t value[1000];
    for (uint32_t r = 0; r < 3; r++) {
        struct arc_store s;
        REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
        char key[32];
        entry_of(r, key, value, sizeof value);
        CHECK(arc_store_add(&s, ARC_FRONT, key, strlen(key), value, sizeof value));
        arc_store_close(&s, NULL, 0);
    }
    struct arc_store s;
    cfg.tidy_delay_s = 0;
    cfg.compact_at = 3;
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", s.dir);
    for (int t = 0; t < 3000 && count_files(dir, ".arc") != 1; t++)
        sleep_ms(10);
    CHECK_EQ(count_files(dir, ".arc"), 1);
    arc_store_close(&s, NULL, 0);
    CHECK_EQ(entries_found(3, sizeof value), 3);

    /* A hit marks its file used: it outlives an older, unused file. */
    struct arc_store old;
    cfg.tidy_delay_s = 3600;
    REQUIRE_OK(arc_store_open(&old, &caps, &cfg));
    char key[32];
    entry_of(7, key, value, sizeof value);
    CHECK(arc_store_add(&old, ARC_FRONT, key, strlen(key), value, sizeof value));
    arc_store_close(&old, NULL, 0);
    /* Make every file old; the pack (entries 0..2) then gets used. */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[8300];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct timespec times[2] = {{.tv_sec = 1000000}, {.tv_sec = 1000000}};
        if (e->d_name[0] != '.')
            utimensat(AT_FDCWD, path, times, 0);
    }
    if (d)
        closedir(d);
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    entry_of(1, key, value, sizeof value);
    uint8_t h[16];
    hash128(key, strlen(key), h);
    const uint8_t *v;
    size_t vlen;
    struct bytes buf = {0};
    CHECK_EQ(arc_store_find(&s, ARC_FRONT, h, key, strlen(key), &buf, &v, &vlen), ARC_HIT);
    free(buf.p);
    for (int t = 0; t < 3000; t++) {   /* the saver marks it */
        struct stat stt;
        bool marked = false;
        for (uint32_t i = 0; i < s.file_count; i++) {
            char path[8300];
            snprintf(path, sizeof path, "%s/%s", dir, s.files[i].name);
            if (stat(path, &stt) == 0 && stt.st_mtime > 1000000)
                marked = true;
        }
        if (marked)
            break;
        sleep_ms(10);
    }
    arc_store_close(&s, NULL, 0);
    /* A bound that holds one file: the unused one goes. */
    cfg.tidy_delay_s = 0;
    cfg.max_size = 4000;   /* the pack is ~3.5 KB, the other file ~1.2 KB */
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    for (int t = 0; t < 3000 && count_files(dir, ".arc") != 1; t++)
        sleep_ms(10);
    arc_store_close(&s, NULL, 0);
    CHECK_EQ(count_files(dir, ".arc"), 1);
    CHECK_EQ(entries_found(3, sizeof value), 3);   /* the used pack stayed */
    remove_root();
}

/* KILN_ARCHIVE_MAX_SIZE: sizes with units; nonsense keeps 1 GiB. */
TEST(max_size_from_env)
{
    struct arc_store_config c;
    setenv("KILN_ARCHIVE_MAX_SIZE", "512M", 1);
    arc_store_config_default(&c);
    CHECK_EQ(c.max_size, 512ull << 20);
    setenv("KILN_ARCHIVE_MAX_SIZE", "2GiB", 1);
    arc_store_config_default(&c);
    CHECK_EQ(c.max_size, 2ull << 30);
    setenv("KILN_ARCHIVE_MAX_SIZE", "4096", 1);
    arc_store_config_default(&c);
    CHECK_EQ(c.max_size, 4096);
    setenv("KILN_ARCHIVE_MAX_SIZE", "lots", 1);
    arc_store_config_default(&c);
    CHECK_EQ(c.max_size, 1ull << 30);
    unsetenv("KILN_ARCHIVE_MAX_SIZE");
}

/* ---- files and folders the store must not trust -------------------------------------- */

/* Writes entries first..first+n-1 (values of len bytes) as dir/name. */
/* A file of front-end entries first..first+n-1 (values of len bytes),
 * then, when pad, one entry of pad zero bytes: past ARC_READ_WHOLE, a
 * file the store reads where it lies rather than whole. */
static bool put_entries_padded(const char *dir, const char *name, uint32_t first, uint32_t n, size_t len, size_t pad)
{
    kiln_caps caps = test_caps();
    struct arc_device dev;
    arc_device_from_caps(&dev, &caps);
    struct arc_writer w;
    arc_writer_init(&w, &dev);
    uint8_t value[256];
    for (uint32_t i = 0; i < n && len <= sizeof value; i++) {
        char key[32];
        entry_of(first + i, key, value, len);
        arc_writer_add(&w, ARC_FRONT, key, strlen(key), value, len);
    }
    uint8_t *big = pad ? calloc(1, pad) : NULL;
    if (big)
        arc_writer_add(&w, ARC_BACK, "pad", 3, big, pad);
    free(big);
    const uint8_t *data;
    size_t l;
    bool ok = arc_writer_close(&w, &data, &l) == KILN_OK && arc_save(dir, name, data, l) == KILN_OK;
    arc_writer_finish(&w);
    return ok;
}

static bool put_entries(const char *dir, const char *name, uint32_t first, uint32_t n, size_t len)
{
    return put_entries_padded(dir, name, first, n, len, 0);
}

/* How many of entries first..first+n-1 the open store finds, right. */
static uint32_t found_in(struct arc_store *s, uint32_t first, uint32_t n, size_t len)
{
    uint32_t found = 0;
    uint8_t want[256];
    struct bytes buf = {0};
    for (uint32_t i = 0; i < n; i++) {
        char key[32];
        entry_of(first + i, key, want, len);
        uint8_t h[16];
        hash128(key, strlen(key), h);
        const uint8_t *v;
        size_t vlen;
        found += arc_store_find(s, ARC_FRONT, h, key, strlen(key), &buf, &v, &vlen) == ARC_HIT && vlen == len &&
                 !memcmp(v, want, len);
    }
    free(buf.p);
    return found;
}

/* The device pair's folder under g_root (made by a store opened once). */
static bool pair_dir(char *out, size_t cap)
{
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    if (arc_store_open(&s, &caps, &cfg) != KILN_OK || !s.enabled)
        return false;
    snprintf(out, cap, "%s", s.dir);
    arc_store_close(&s, NULL, 0);
    return true;
}

/* Files changed under an open store. Large ones (read where they lie):
 * one cut to nothing (as `cp` over it does first), one cut in the middle
 * of its entries, one rewritten in place with other bytes, one replaced by
 * rename. Lookups of the changed files' entries miss and are counted
 * corrupt, never raise SIGBUS (the archive kept them mapped once); the
 * replaced file still serves the entries it had when opened (its
 * descriptor keeps the old file). A small one (read whole at open) cut to
 * nothing serves on. The store closes cleanly. */
TEST(files_cut_or_rewritten_under_an_open_store_miss_never_crash)
{
    fresh_root();
    char dir[4096], path[4200], tmp[4200];
    size_t pad = ARC_READ_WHOLE + 4096;
    REQUIRE(pair_dir(dir, sizeof dir));
    REQUIRE(put_entries_padded(dir, "run-1.arc", 0, 8, 200, pad));
    REQUIRE(put_entries_padded(dir, "run-2.arc", 8, 8, 200, pad));
    REQUIRE(put_entries_padded(dir, "run-3.arc", 16, 8, 200, pad));
    REQUIRE(put_entries_padded(dir, "run-4.arc", 24, 8, 200, pad));
    REQUIRE(put_entries(dir, "run-5.arc", 40, 8, 200));
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    REQUIRE(s.enabled);
    CHECK_EQ(found_in(&s, 0, 32, 200), 32);
    CHECK_EQ(found_in(&s, 40, 8, 200), 8);
    snprintf(path, sizeof path, "%s/run-1.arc", dir);
    CHECK_EQ(truncate(path, 0), 0);
    snprintf(path, sizeof path, "%s/run-2.arc", dir);
    CHECK_EQ(truncate(path, 64 + 3 * 256), 0);   /* the header and about three entries stay */
    snprintf(path, sizeof path, "%s/run-3.arc", dir);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0);
    uint8_t junk[8192];
    memset(junk, 0x5a, sizeof junk);
    CHECK(pwrite(fd, junk, sizeof junk, 64) > 0);   /* every entry overwritten */
    close(fd);
    snprintf(path, sizeof path, "%s/run-5.arc", dir);
    CHECK_EQ(truncate(path, 0), 0);
    REQUIRE(put_entries(dir, "new.tmp", 100, 8, 200));
    snprintf(tmp, sizeof tmp, "%s/new.tmp", dir);
    snprintf(path, sizeof path, "%s/run-4.arc", dir);
    CHECK_EQ(rename(tmp, path), 0);
    CHECK_EQ(found_in(&s, 0, 8, 200), 0);
    uint32_t cut = found_in(&s, 8, 8, 200);
    CHECK(cut >= 1 && cut <= 3);
    CHECK_EQ(found_in(&s, 16, 8, 200), 0);
    CHECK_EQ(found_in(&s, 24, 8, 200), 8);
    CHECK_EQ(found_in(&s, 100, 8, 200), 0);   /* the new file was not there at open */
    CHECK_EQ(found_in(&s, 40, 8, 200), 8);    /* the small one was read whole */
    /* A miss on a cut or rewritten file is corrupt, not absent. */
    char key[32];
    uint8_t want[200];
    entry_of(20, key, want, sizeof want);
    uint8_t h[16];
    hash128(key, strlen(key), h);
    struct bytes buf = {0};
    const uint8_t *v;
    size_t vlen;
    CHECK_EQ(arc_store_find(&s, ARC_FRONT, h, key, strlen(key), &buf, &v, &vlen), ARC_CORRUPT);
    free(buf.p);
    arc_store_close(&s, NULL, 0);
    remove_root();
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Links below the archive root are never followed where kiln writes or
 * removes: a device pair's folder that is a link to another folder (with
 * a dead process's .tmp and a file kiln would save beside) leaves the
 * archive off, naming the link, and nothing in the target is removed or
 * written; a .arc link in the real folder is skipped and its target's
 * time is never touched; a save into a folder that is a link is refused
 * by name. A root that is itself a link is resolved once and used. */
TEST(links_below_the_archive_root_are_never_followed)
{
    fresh_root();
    char dir[4096], target[] = "/tmp/kiln-store-target-XXXXXX", path[4300], tmp[4300];
    REQUIRE(pair_dir(dir, sizeof dir));
    REQUIRE(mkdtemp(target));
    /* The pair folder replaced by a link to target. */
    snprintf(tmp, sizeof tmp, "rm -rf '%s'", dir);
    REQUIRE(system(tmp) == 0);
    REQUIRE(symlink(target, dir) == 0);
    snprintf(tmp, sizeof tmp, "%s/run-9.arc.999999999.tmp", target);
    FILE *f = fopen(tmp, "w");
    REQUIRE(f);
    fputs("a dead writer's", f);
    fclose(f);
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    CHECK(!s.enabled);
    CHECK(!arc_store_add(&s, ARC_FRONT, "k", 1, "v", 1));
    arc_store_close(&s, NULL, 0);
    CHECK(exists(tmp));   /* not cleaned through the link */
    CHECK_EQ(count_files(target, ".arc"), 0);
    CHECK_RESULT(arc_save(dir, "run-x.arc", "data", 4), KILN_ERR_IO);
    CHECK_MSG("is a symbolic link");
    CHECK_EQ(count_files(target, ".arc"), 0);
    CHECK_EQ(arc_clean_tmp(dir), 0);
    CHECK(exists(tmp));
    struct arc_tidy_result tr;
    CHECK_RESULT(arc_gc(dir, 0, &tr), KILN_ERR_IO);
    CHECK_MSG("symbolic link");
    /* A real folder again, holding a good file and a .arc link to a good
     * file elsewhere (old time): the link is skipped, its target untouched. */
    REQUIRE(unlink(dir) == 0);
    REQUIRE(mkdir(dir, 0755) == 0);
    REQUIRE(put_entries(dir, "run-1.arc", 0, 4, 64));
    REQUIRE(put_entries(target, "elsewhere.arc", 4, 4, 64));
    snprintf(path, sizeof path, "%s/elsewhere.arc", target);
    struct timespec old[2] = {{1000000, 0}, {1000000, 0}};
    REQUIRE(utimensat(AT_FDCWD, path, old, 0) == 0);
    snprintf(tmp, sizeof tmp, "%s/linked.arc", dir);
    REQUIRE(symlink(path, tmp) == 0);
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    REQUIRE(s.enabled);
    CHECK_EQ(s.file_count, 1);
    CHECK_EQ(arc_store_stats_get(&s).files_skipped, 1);
    CHECK_EQ(found_in(&s, 0, 4, 64), 4);
    CHECK_EQ(found_in(&s, 4, 4, 64), 0);
    arc_store_close(&s, NULL, 0);
    arc_touch(dir, "linked.arc");
    struct stat st;
    REQUIRE(stat(path, &st) == 0);
    CHECK_EQ(st.st_mtim.tv_sec, 1000000);
    /* The root given as a link: resolved, and the store works there. */
    char link_root[300];
    snprintf(link_root, sizeof link_root, "%s-link", g_root);
    REQUIRE(symlink(g_root, link_root) == 0);
    setenv("KILN_ARCHIVE_DIR", link_root, 1);
    REQUIRE_OK(arc_store_open(&s, &caps, &cfg));
    CHECK(s.enabled);
    CHECK(strncmp(s.dir, g_root, strlen(g_root)) == 0);
    CHECK_EQ(found_in(&s, 0, 4, 64), 4);
    arc_store_close(&s, NULL, 0);
    unlink(link_root);
    snprintf(tmp, sizeof tmp, "rm -rf '%s'", target);
    CHECK_EQ(system(tmp), 0);
    remove_root();
}

/* A FIFO named x.arc in the folder and in a KILN_ARCHIVE_READONLY root:
 * opening the store returns at once (an alarm turns a hang into a
 * failure), both are skipped and counted, and the good files serve. */
TEST(a_fifo_in_the_folder_or_a_readonly_root_is_skipped)
{
    fresh_root();
    char dir[4096], ro_root[] = "/tmp/kiln-store-ro-XXXXXX", ro_dir[4096 + 64], fifo[4096 + 80];
    REQUIRE(pair_dir(dir, sizeof dir));
    REQUIRE(mkdtemp(ro_root));
    snprintf(ro_dir, sizeof ro_dir, "%s%s", ro_root, dir + strlen(g_root));
    REQUIRE(mkdir(ro_dir, 0755) == 0);
    REQUIRE(put_entries(dir, "run-1.arc", 0, 4, 64));
    REQUIRE(put_entries(ro_dir, "shipped.arc", 4, 4, 64));
    snprintf(fifo, sizeof fifo, "%s/x.arc", dir);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    snprintf(fifo, sizeof fifo, "%s/x.arc", ro_dir);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    setenv("KILN_ARCHIVE_READONLY", ro_root, 1);
    struct arc_store s;
    kiln_caps caps = test_caps();
    struct arc_store_config cfg = small_cfg();
    alarm(60);
    kiln_result r = arc_store_open(&s, &caps, &cfg);
    alarm(0);
    REQUIRE_OK(r);
    REQUIRE(s.enabled);
    CHECK_EQ(s.file_count, 2);
    CHECK_EQ(s.readonly_files, 1);
    CHECK_EQ(arc_store_stats_get(&s).files_skipped, 2);
    CHECK_EQ(found_in(&s, 0, 8, 64), 8);
    char line[8192];
    arc_store_close(&s, line, sizeof line);
    CHECK(strstr(line, "2 files skipped at open"));
    unsetenv("KILN_ARCHIVE_READONLY");
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ro_root);
    CHECK_EQ(system(cmd), 0);
    remove_root();
}

/* The same through a context (the mock device): creating it returns at
 * once past a FIFO in its folder and in a read-only root, and the archive
 * an earlier context saved is there, entries checked. */
TEST(a_context_is_made_at_once_past_a_fifo)
{
    fresh_root();
    static const char *src = "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                             "void main() { d[0] = kiln_param(0); }\n";
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    kiln_program prog;
    CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src, .name = "fifo.comp"}, &prog));
    CHECK_OK(kiln_program_wait(ctx, prog));
    kiln_archive_info info;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    kiln_context_destroy(ctx);   /* saves its run archive */
    REQUIRE(info.enabled);
    char ro_root[] = "/tmp/kiln-store-ro-XXXXXX", ro_dir[4096 + 64], fifo[4096 + 80];
    REQUIRE(mkdtemp(ro_root));
    snprintf(ro_dir, sizeof ro_dir, "%s%s", ro_root, info.dir + strlen(g_root));
    REQUIRE(mkdir(ro_dir, 0755) == 0);
    snprintf(fifo, sizeof fifo, "%s/x.arc", info.dir);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    snprintf(fifo, sizeof fifo, "%s/x.arc", ro_dir);
    REQUIRE(mkfifo(fifo, 0644) == 0);
    setenv("KILN_ARCHIVE_READONLY", ro_root, 1);
    alarm(60);
    kiln_result r = kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx);
    alarm(0);
    REQUIRE_OK(r);
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    CHECK(info.enabled);
    CHECK_EQ(info.readonly, 0);   /* its own folder is writable; a read-only root does not change that */
    CHECK_EQ(info.file_count, 1);   /* the run archive; neither FIFO */
    kiln_archive_file f[4];
    uint32_t n = 0;
    CHECK_OK(kiln_archive_files(ctx, 0, f, 4, &n));
    CHECK_EQ(n, 1);
    CHECK(n == 1 && f[0].status == KILN_ARCHIVE_FILE_OK && f[0].entries >= 1 && f[0].corrupt == 0);
    kiln_context_destroy(ctx);
    unsetenv("KILN_ARCHIVE_READONLY");
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ro_root);
    CHECK_EQ(system(cmd), 0);
    remove_root();
}

/* A folder kiln may read but not write (a shipped archive, a read-only
 * mount) is used read-only: lookups hit, nothing is saved or removed, an
 * entry offered is counted as not kept. Permissions bind root only on a
 * read-only mount, so as root the store runs in a child as "nobody". */
TEST(a_read_only_folder_is_looked_up_not_written)
{
    fresh_root();
    char dir[4096];
    REQUIRE(pair_dir(dir, sizeof dir));
    REQUIRE(put_entries(dir, "run-1.arc", 0, 4, 64));
    REQUIRE(chmod(g_root, 0755) == 0 && chmod(dir, 0555) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
            _exit(90);
        alarm(60);
        struct arc_store s;
        kiln_caps caps = test_caps();
        struct arc_store_config cfg = small_cfg();
        cfg.tidy_delay_s = 0;   /* a writable folder would be tidied at once */
        if (arc_store_open(&s, &caps, &cfg) != KILN_OK || !s.enabled)
            _exit(91);
        int bad = !s.dir_readonly ? 92 : s.saver.running ? 93 : found_in(&s, 0, 4, 64) != 4 ? 94 : 0;
        uint8_t v[8] = {0};
        if (!bad && arc_store_add(&s, ARC_FRONT, "k", 1, v, sizeof v))
            bad = 95;
        if (!bad && arc_store_stats_get(&s).readonly_dropped != 1)
            bad = 96;
        char line[8192];
        arc_store_close(&s, line, sizeof line);
        if (!bad && !strstr(line, "1 not kept (the folder is read-only)"))
            bad = 97;
        _exit(bad);
    }
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws));
    CHECK_EQ(WEXITSTATUS(ws), 0);   /* 90: could not become nobody; 91: store off; 92..97: see above */
    CHECK_EQ(count_files(dir, ".arc"), 1);
    CHECK_EQ(count_files(dir, ".tmp"), 0);
    CHECK(chmod(dir, 0755) == 0);
    remove_root();
}

/* The child of a_read_only_folder_says_so_through_a_context, a new
 * program image (a forked copy of a process that made a context must not
 * make another): exit 0 when a context finds its folder read-only and says
 * so in kiln_archive_info. */
static int read_only_context_child(void)
{
    alarm(60);
    kiln_context ctx;
    if (kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx) != KILN_OK)
        return 81;
    kiln_archive_info info;
    int bad = kiln_archive_info_get(ctx, &info) != KILN_OK ? 82 : !info.enabled ? 83 : info.readonly != 1 ? 84 : 0;
    kiln_context_destroy(ctx);
    return bad;
}

/* A context whose folder it may read but not write says so
 * (kiln_archive_info.readonly), as the CLI's archive commands read it. The
 * folder is made by a context first, then made read-only; permissions bind
 * root only on a read-only mount, so as root the child runs as "nobody". */
TEST(a_read_only_folder_says_so_through_a_context)
{
    fresh_root();
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    kiln_archive_info info;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    kiln_context_destroy(ctx);
    REQUIRE(info.enabled);
    CHECK_EQ(info.readonly, 0);
    REQUIRE(chmod(g_root, 0755) == 0 && chmod(info.dir, 0555) == 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
            _exit(90);
        execl("/proc/self/exe", "test_store", "--read-only-context", (char *)NULL);
        _exit(91);
    }
    int ws;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    CHECK(WIFEXITED(ws));
    CHECK_EQ(WEXITSTATUS(ws), 0);   /* 90: could not become nobody; 91: no exec; 81..84: see the child */
    CHECK(chmod(info.dir, 0755) == 0);
    remove_root();
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--read-only-context"))
        return read_only_context_child();
    RUN(run_archives_fill_and_save);
    RUN(saver_gate_and_unsaved_bound);
    RUN(failed_save_retried_once);
    RUN(twice_failed_save_let_go);
    RUN(adders_on_many_threads);
    RUN(saver_tidies_folder);
    RUN(max_size_from_env);
    RUN(files_cut_or_rewritten_under_an_open_store_miss_never_crash);
    RUN(links_below_the_archive_root_are_never_followed);
    RUN(a_fifo_in_the_folder_or_a_readonly_root_is_skipped);
    RUN(a_context_is_made_at_once_past_a_fifo);
    RUN(a_read_only_folder_is_looked_up_not_written);
    RUN(a_read_only_folder_says_so_through_a_context);
    return TEST_SUMMARY();
}
