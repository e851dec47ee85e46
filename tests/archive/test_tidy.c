/* SPDX-License-Identifier: MIT */
/*
 * test_tidy.c: tidying an archive folder. gc removes the least recently
 * used files (oldest mtime; arc_touch marks a use) until the folder fits
 * its bound, and keeps everything when it already fits. Compaction merges
 * small run archives into one pack holding every distinct entry once,
 * dropping duplicates and damaged entries, leaving large files, too few
 * files, other devices' files and saves in progress (.tmp) alone. A second
 * tidier finds the folder busy. A kill at every step of compaction's save
 * loses no entry, and the next compaction drops the duplicates it leaves.
 * A folder without archives tidies to nothing; gc removes files serving
 * nothing first (a file past ARC_MAX_FILE among them); FIFOs and folders
 * under archive names are never waited on.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "archive/archive.h"
#include "archive/arc_files.h"
#include "test.h"

static const struct arc_device k_dev = {.cache_uuid = {9, 8, 7}, .driver_version = 11, .vendor_id = 12,
                                        .device_id = 13, .name_hash = 14};
static const struct arc_device k_other = {.cache_uuid = {1}, .driver_version = 11, .vendor_id = 12,
                                          .device_id = 13, .name_hash = 14};

/* The entries files are made of, by number: kind, key and value follow
 * from the number, so a duplicate is the same entry in two files. */
#define N_ENTRIES 40
static enum arc_kind kind_of(int i) { return (enum arc_kind)(1 + i % 3); }
static size_t key_of(int i, char key[16]) { return (size_t)snprintf(key, 16, "key-%03d", i); }
static size_t value_of(int i, uint8_t v[600])
{
    size_t n = 20 + (size_t)i * 13;
    for (size_t k = 0; k < n; k++)
        v[k] = (uint8_t)(i * 31 + k * 7 + 1);
    return n;
}

/* A whole archive of entries ids[0..n) (plus one padding entry of pad
 * bytes when pad), malloc'd. */
static uint8_t *build(const int *ids, int n, size_t pad, const struct arc_device *dev, size_t *len)
{
    struct arc_writer w;
    arc_writer_init(&w, dev);
    for (int j = 0; j < n; j++) {
        char key[16];
        uint8_t v[600];
        size_t kl = key_of(ids[j], key), vl = value_of(ids[j], v);
        arc_writer_add(&w, kind_of(ids[j]), key, kl, v, vl);
    }
    uint8_t *big = pad ? calloc(1, pad) : NULL;
    if (big)
        arc_writer_add(&w, ARC_NOTE, "pad", 3, big, pad);
    free(big);
    const uint8_t *data;
    uint8_t *copy = NULL;
    if (arc_writer_close(&w, &data, len) == KILN_OK && (copy = malloc(*len)))
        memcpy(copy, data, *len);
    arc_writer_finish(&w);
    return copy;
}

static bool put_file(const char *dir, const char *name, const void *data, size_t len)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

static bool put_arc(const char *dir, const char *name, const int *ids, int n, size_t pad)
{
    size_t len;
    uint8_t *data = build(ids, n, pad, &k_dev, &len);
    bool ok = data && put_file(dir, name, data, len);
    free(data);
    return ok;
}

static void set_mtime(const char *dir, const char *name, time_t sec)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct timespec t[2] = {{.tv_sec = sec}, {.tv_sec = sec}};
    utimensat(AT_FDCWD, path, t, 0);
}

static bool exists(const char *dir, const char *name)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

static uint64_t size_of(const char *dir, const char *name)
{
    char path[600];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The folder's files whose names start with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += !strncmp(e->d_name, prefix, strlen(prefix));
    if (d)
        closedir(d);
    return n;
}

/* Walks every entry of every .arc file in dir: counts[i] gets how often
 * entry i is there with its right value; *wrong counts entries with a
 * wrong value or an unknown key, *bad entries failing their checks. */
struct census {
    int counts[N_ENTRIES];
    int wrong, bad, files;
};
static void census_file(void *ud, const char *path, const struct arc_file *f)
{
    (void)path;
    struct census *c = ud;
    if (f->whole != ARC_HIT)
        return;
    c->files++;
    for (uint32_t j = 0; j < f->ref_count; j++) {
        uint32_t kind;
        const uint8_t *k, *v;
        size_t kl, vl;
        if (arc_file_entry(f, j, NULL, &kind, &k, &kl, &v, &vl) != ARC_HIT) {
            c->bad++;
            continue;
        }
        if (kl == 3 && !memcmp(k, "pad", 3))
            continue;
        int i = -1;
        if (kl == 7 && !memcmp(k, "key-", 4))
            i = (k[4] - '0') * 100 + (k[5] - '0') * 10 + (k[6] - '0');
        char key[16];
        uint8_t want[600];
        if (i < 0 || i >= N_ENTRIES || key_of(i, key) != kl || memcmp(key, k, kl) ||
            kind != (uint32_t)kind_of(i) || value_of(i, want) != vl || memcmp(want, v, vl)) {
            c->wrong++;
            continue;
        }
        c->counts[i]++;
    }
}

static void census(const char *dir, struct census *c)
{
    memset(c, 0, sizeof *c);
    test_each_arc(dir, &k_dev, census_file, c);
}

/* Every entry ids[0..n) can be looked up, with its right value, in some
 * .arc file of dir. */
static bool all_found(const char *dir, const int *ids, int n)
{
    struct census c;
    census(dir, &c);
    for (int j = 0; j < n; j++) {
        if (c.counts[ids[j]] < 1)
            return false;
    }
    return c.wrong == 0;
}

static void remove_dir(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK_EQ(system(cmd), 0);
}

/* ---- gc ---------------------------------------------------------------------------- */

static const int k_five[] = {1, 2, 3, 4, 5};

TEST(gc_removes_the_oldest_files_until_under_the_bound)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const char *names[] = {"run-c.arc", "run-a.arc", "pack-e.arc", "run-b.arc", "run-d.arc"};
    for (int i = 0; i < 5; i++) {
        REQUIRE(put_arc(dir, names[i], k_five, 5, 0));
        set_mtime(dir, names[i], 1000000 + 1000 * i);   /* oldest first: c, a, e, b, d */
    }
    uint64_t one = size_of(dir, "run-a.arc");
    REQUIRE(one > 0);
    /* Neither a save in progress nor another file counts or goes. */
    REQUIRE(put_file(dir, "run-x.arc.1.tmp", "x", 1));
    REQUIRE(put_file(dir, "notes.txt", "x", 1));
    set_mtime(dir, "run-x.arc.1.tmp", 1);
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, 3 * one - 1, &r));   /* room for two files and a bit */
    CHECK(!r.busy);
    CHECK_EQ(r.files_before, 5);
    CHECK_EQ(r.bytes_before, 5 * one);
    CHECK_EQ(r.removed, 3);
    CHECK_EQ(r.files_after, 2);
    CHECK_EQ(r.bytes_after, 2 * one);
    CHECK(!exists(dir, "run-c.arc") && !exists(dir, "run-a.arc") && !exists(dir, "pack-e.arc"));
    CHECK(exists(dir, "run-b.arc") && exists(dir, "run-d.arc"));
    CHECK(exists(dir, "run-x.arc.1.tmp") && exists(dir, "notes.txt"));
    /* Exactly at the bound: nothing more goes. */
    CHECK_OK(arc_gc(dir, 2 * one, &r));
    CHECK_EQ(r.removed, 0);
    CHECK_EQ(r.files_after, 2);
    /* A bound of 0 empties the folder of archives, and only of them. */
    CHECK_OK(arc_gc(dir, 0, &r));
    CHECK_EQ(r.removed, 2);
    CHECK_EQ(r.files_after, 0);
    CHECK_EQ(r.bytes_after, 0);
    CHECK(exists(dir, "run-x.arc.1.tmp") && exists(dir, "notes.txt"));
    remove_dir(dir);
}

TEST(gc_keeps_everything_when_under_the_bound)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(put_arc(dir, "run-a.arc", k_five, 5, 0));
    REQUIRE(put_arc(dir, "run-b.arc", k_five, 3, 0));
    uint64_t total = size_of(dir, "run-a.arc") + size_of(dir, "run-b.arc");
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, total, &r));
    CHECK_EQ(r.removed, 0);
    CHECK_EQ(r.files_before, 2);
    CHECK_EQ(r.files_after, 2);
    CHECK_EQ(r.bytes_before, total);
    CHECK_EQ(r.bytes_after, total);
    CHECK(exists(dir, "run-a.arc") && exists(dir, "run-b.arc"));
    CHECK_OK(arc_gc(dir, UINT64_MAX, &r));
    CHECK_EQ(r.removed, 0);
    remove_dir(dir);
    /* A folder that is not there is an error naming it. */
    CHECK_RESULT(arc_gc(dir, 0, &r), KILN_ERR_IO);
    CHECK_MSG(dir);
}

TEST(a_touched_file_goes_last)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const char *names[] = {"run-a.arc", "run-b.arc", "run-c.arc"};
    for (int i = 0; i < 3; i++) {
        REQUIRE(put_arc(dir, names[i], k_five, 5, 0));
        set_mtime(dir, names[i], 1000000 + 1000 * i);
    }
    uint64_t one = size_of(dir, "run-a.arc");
    arc_touch(dir, "run-a.arc");       /* the oldest, now used */
    arc_touch(dir, "run-gone.arc");    /* no such file: ignored */
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, 2 * one, &r));
    CHECK_EQ(r.removed, 1);
    CHECK(exists(dir, "run-a.arc") && !exists(dir, "run-b.arc") && exists(dir, "run-c.arc"));
    CHECK_OK(arc_gc(dir, one, &r));
    CHECK_EQ(r.removed, 1);
    CHECK(exists(dir, "run-a.arc") && !exists(dir, "run-c.arc"));
    remove_dir(dir);
}

/* ---- compaction ------------------------------------------------------------------------ */

#define SMALL 8192

TEST(compaction_merges_small_run_archives_into_one_pack)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    /* Four run archives sharing some entries: 0..9, 5..14, 10..19 and 0..4
     * again (5 + 5 + 5 duplicates; 20 distinct entries). */
    int a[10], b[10], c[10], d[5];
    for (int i = 0; i < 10; i++) {
        a[i] = i;
        b[i] = 5 + i;
        c[i] = 10 + i;
    }
    for (int i = 0; i < 5; i++)
        d[i] = i;
    REQUIRE(put_arc(dir, "run-1-a.arc", a, 10, 0));
    REQUIRE(put_arc(dir, "run-2-b.arc", b, 10, 0));
    REQUIRE(put_arc(dir, "run-3-c.arc", c, 10, 0));
    REQUIRE(put_arc(dir, "run-4-d.arc", d, 5, 0));
    set_mtime(dir, "run-2-b.arc", 2000000);
    set_mtime(dir, "run-3-c.arc", 1000000);
    set_mtime(dir, "run-4-d.arc", 1500000);
    set_mtime(dir, "run-1-a.arc", 3000000);
    /* Left alone: a large run archive, an archive that is neither a run nor
     * a pack, and a save in progress that looks like a run archive. */
    int e[2] = {30, 31};
    REQUIRE(put_arc(dir, "run-5-big.arc", e, 2, 3 * SMALL));
    REQUIRE(put_arc(dir, "shipped.arc", e, 1, 0));
    size_t tl;
    uint8_t *t = build(e, 2, 0, &k_dev, &tl);
    REQUIRE(t && put_file(dir, "run-6-x.arc.999999.tmp", t, tl));
    uint64_t before = 0;
    const char *all[] = {"run-1-a.arc", "run-2-b.arc", "run-3-c.arc", "run-4-d.arc", "run-5-big.arc", "shipped.arc"};
    for (int i = 0; i < 6; i++)
        before += size_of(dir, all[i]);

    struct arc_tidy_result r;
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 3, &r));
    CHECK(!r.busy);
    CHECK_EQ(r.files_before, 6);
    CHECK_EQ(r.bytes_before, before);
    CHECK_EQ(r.merged, 4);
    CHECK_EQ(r.entries_kept, 20);
    CHECK_EQ(r.duplicates_dropped, 15);
    CHECK_EQ(r.bad_dropped, 0);
    CHECK_EQ(r.files_after, 3);
    CHECK_EQ(count_files(dir, "pack-"), 1);
    CHECK_EQ(count_files(dir, "run-"), 2);   /* run-5-big.arc, and the .tmp */
    CHECK(exists(dir, "run-5-big.arc") && exists(dir, "shipped.arc"));
    CHECK(!exists(dir, "run-1-a.arc") && !exists(dir, "run-4-d.arc"));
    CHECK_EQ(size_of(dir, "run-6-x.arc.999999.tmp"), tl);   /* a .tmp is never read or removed */

    /* The pack: every distinct entry exactly once, with its value; dated
     * as its newest source. */
    struct census cs;
    census(dir, &cs);
    CHECK_EQ(cs.wrong, 0);
    CHECK_EQ(cs.bad, 0);
    for (int i = 0; i < 20; i++)
        CHECK_EQ(cs.counts[i], 1);
    CHECK_EQ(cs.counts[30], 2);   /* the big file and shipped.arc, untouched */
    DIR *dd = opendir(dir);
    struct dirent *de;
    char pack[300] = "";
    while (dd && (de = readdir(dd)))
        if (!strncmp(de->d_name, "pack-", 5))
            snprintf(pack, sizeof pack, "%s", de->d_name);
    if (dd)
        closedir(dd);
    char want[64];
    snprintf(want, sizeof want, "pack-%ld-", (long)getpid());
    CHECK(!strncmp(pack, want, strlen(want)));
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, pack);
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_mtime == 3000000);
    CHECK_EQ(r.bytes_after, size_of(dir, "run-5-big.arc") + size_of(dir, "shipped.arc") + (uint64_t)st.st_size);

    /* A small pack and new run archives merge again; a large pack stays. */
    int f[3] = {20, 21, 0};
    REQUIRE(put_arc(dir, "run-7-f.arc", f, 3, 0));
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));
    CHECK_EQ(r.merged, 2);
    CHECK_EQ(r.entries_kept, 22);
    CHECK_EQ(r.duplicates_dropped, 1);
    CHECK_EQ(count_files(dir, "pack-"), 1);
    census(dir, &cs);
    for (int i = 0; i < 22; i++)
        CHECK_EQ(cs.counts[i], 1);
    CHECK_OK(arc_compact(dir, &k_dev, 100, 2, &r));   /* nothing small now */
    CHECK_EQ(r.merged, 0);
    CHECK_EQ(r.files_after, r.files_before);
    free(t);
    remove_dir(dir);
}

TEST(compaction_drops_damaged_entries_and_files)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    int a[3] = {20, 21, 22}, b[3] = {23, 24, 21};
    size_t len;
    uint8_t *data = build(a, 3, 0, &k_dev, &len);
    REQUIRE(data);
    /* Flip the first value byte of entry 21 in the first file: its
     * checksum fails; the index still names it. */
    uint8_t *at = memmem(data, len, "key-021", 7);
    REQUIRE(at);
    at[7] ^= 0x40;
    REQUIRE(put_file(dir, "run-1.arc", data, len));
    REQUIRE(put_arc(dir, "run-2.arc", b, 3, 0));
    REQUIRE(put_file(dir, "run-3.arc", "not an archive at all", 21));   /* serves nothing */
    REQUIRE(put_file(dir, "run-4.arc", "", 0));
    struct arc_tidy_result r;
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 4, &r));
    CHECK_EQ(r.merged, 4);
    CHECK_EQ(r.bad_dropped, 3);         /* one entry, two files */
    CHECK_EQ(r.entries_kept, 5);        /* 20, 22, 23, 24, and 21 from the second file */
    CHECK_EQ(r.duplicates_dropped, 0);
    CHECK_EQ(r.files_after, 1);
    struct census c;
    census(dir, &c);
    CHECK_EQ(c.wrong, 0);
    CHECK_EQ(c.bad, 0);
    for (int i = 20; i <= 24; i++)
        CHECK_EQ(c.counts[i], 1);
    free(data);

    /* Only damaged files: no pack, and they go. */
    REQUIRE(put_file(dir, "run-5.arc", "junk", 4));
    REQUIRE(put_file(dir, "run-6.arc", "junk", 4));
    CHECK_OK(arc_compact(dir, &k_dev, 100, 2, &r));
    CHECK_EQ(r.merged, 2);
    CHECK_EQ(r.entries_kept, 0);
    CHECK_EQ(r.bad_dropped, 2);
    CHECK(!exists(dir, "run-5.arc") && !exists(dir, "run-6.arc"));
    CHECK_EQ(count_files(dir, "pack-"), 1);
    remove_dir(dir);
}

TEST(compaction_leaves_too_few_and_foreign_files_alone)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(put_arc(dir, "run-1.arc", k_five, 2, 0));
    REQUIRE(put_arc(dir, "run-2.arc", k_five + 2, 2, 0));
    size_t len;
    uint8_t *other = build(k_five, 5, 0, &k_other, &len);
    REQUIRE(other && put_file(dir, "run-3.arc", other, len));   /* another device pair's */
    free(other);
    REQUIRE(put_arc(dir, "run-4.arc", k_five, 5, 2 * SMALL));    /* large */
    struct arc_tidy_result r;
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 3, &r));            /* two usable small files of three asked */
    CHECK_EQ(r.merged, 0);
    CHECK_EQ(r.entries_kept, 0);
    CHECK_EQ(r.files_before, 4);
    CHECK_EQ(r.files_after, 4);
    CHECK_EQ(r.bytes_after, r.bytes_before);
    CHECK_EQ(count_files(dir, "pack-"), 0);
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 1, &r));            /* at least two, whatever is asked */
    CHECK_EQ(r.merged, 2);
    CHECK_EQ(r.entries_kept, 4);
    CHECK(exists(dir, "run-3.arc") && exists(dir, "run-4.arc"));
    CHECK(!exists(dir, "run-1.arc") && !exists(dir, "run-2.arc"));
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));            /* the pack alone, and another's file */
    CHECK_EQ(r.merged, 0);
    CHECK_EQ(count_files(dir, "pack-"), 1);
    remove_dir(dir);
}

TEST(a_second_tidier_finds_the_folder_busy)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(put_arc(dir, "run-1.arc", k_five, 3, 0));
    REQUIRE(put_arc(dir, "run-2.arc", k_five + 1, 3, 0));
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, UINT64_MAX, &r));   /* makes .tidy.lock */
    char lock[600];
    snprintf(lock, sizeof lock, "%s/.tidy.lock", dir);
    /* flock belongs to an open file description: this one conflicts with
     * the one arc_gc and arc_compact open. */
    int fd = open(lock, O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(flock(fd, LOCK_EX | LOCK_NB) == 0);
    CHECK_OK(arc_gc(dir, 0, &r));
    CHECK(r.busy);
    CHECK_EQ(r.removed, 0);
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));
    CHECK(r.busy);
    CHECK_EQ(r.merged, 0);
    CHECK(exists(dir, "run-1.arc") && exists(dir, "run-2.arc"));
    close(fd);
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));
    CHECK(!r.busy);
    CHECK_EQ(r.merged, 2);
    CHECK_OK(arc_gc(dir, 0, &r));
    CHECK(!r.busy);
    CHECK_EQ(r.removed, 1);
    remove_dir(dir);
}

/* Three overlapping run archives: entries 0..11, 12 distinct. */
static const int k_r1[] = {0, 1, 2, 3, 4, 5}, k_r2[] = {4, 5, 6, 7, 8}, k_r3[] = {8, 9, 10, 11, 0};
static bool put_three(const char *dir)
{
    return put_arc(dir, "run-1.arc", k_r1, 6, 0) && put_arc(dir, "run-2.arc", k_r2, 5, 0) &&
           put_arc(dir, "run-3.arc", k_r3, 5, 0);
}

TEST(a_kill_at_every_step_of_compaction_loses_no_entry)
{
    static const int all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    /* How many save steps a compaction of the three takes. */
    REQUIRE(put_three(dir));
    struct arc_tidy_result r;
    uint32_t before = arc_fault_steps();
    REQUIRE_OK(arc_compact(dir, &k_dev, SMALL, 3, &r));
    uint32_t steps = arc_fault_steps() - before;
    CHECK(steps >= 6);   /* create, write, fsync, rename, folder open, folder fsync */
    CHECK_EQ(r.entries_kept, 12);
    int packs = 0, none = 0;
    for (uint32_t s = 1; s <= steps; s++) {
        remove_dir(dir);
        REQUIRE(mkdir(dir, 0700) == 0);
        REQUIRE(put_three(dir));
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            arc_fault_set(ARC_FAULT_KILL, arc_fault_steps() + s);
            struct arc_tidy_result cr;
            kiln_result cres = arc_compact(dir, &k_dev, SMALL, 3, &cr);
            _exit(cres == KILN_OK ? 0 : 1);
        }
        int ws;
        REQUIRE(waitpid(pid, &ws, 0) == pid);
        CHECK(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
        /* The sources are all there (removals come after the save), and
         * the pack is whole or absent: every entry can be found. */
        CHECK(exists(dir, "run-1.arc") && exists(dir, "run-2.arc") && exists(dir, "run-3.arc"));
        CHECK(all_found(dir, all, 12));
        struct census c;
        census(dir, &c);
        CHECK_EQ(c.bad, 0);
        int p = count_files(dir, "pack-");
        CHECK(p <= 2);   /* the pack, its .tmp, or neither */
        packs += c.files == 4;
        none += c.files == 3;
        /* The dead tidier's .tmp goes; its lock went with it; the next
         * compaction leaves each entry once. */
        arc_clean_tmp(dir);
        CHECK_EQ(count_files(dir, "pack-"), c.files - 3);
        CHECK_OK(arc_compact(dir, &k_dev, SMALL, 3, &r));
        CHECK(!r.busy);
        CHECK_EQ(r.entries_kept, 12);
        census(dir, &c);
        CHECK_EQ(c.files, 1);
        for (int i = 0; i < 12; i++)
            CHECK_EQ(c.counts[i], 1);
    }
    CHECK(none >= 3 && packs >= 1);   /* killed before the rename: no pack; after: a whole one */
    remove_dir(dir);
}

TEST(entries_are_walked_as_lookups_check_them)
{
    size_t len;
    uint8_t *data = build(k_five, 5, 0, &k_dev, &len);
    REQUIRE(data);
    struct arc_file f;
    REQUIRE_OK(arc_file_open(&f, data, len, &k_dev));
    uint32_t kind;
    const uint8_t *k, *v;
    size_t kl, vl;
    for (uint32_t i = 0; i < 5; i++) {
        CHECK_EQ(arc_file_entry(&f, i, NULL, &kind, &k, &kl, &v, &vl), ARC_HIT);
        char key[16];
        CHECK(kl == key_of(k_five[i], key) && !memcmp(k, key, kl));
        CHECK_EQ(kind, kind_of(k_five[i]));
    }
    CHECK_EQ(arc_file_entry(&f, 5, NULL, &kind, &k, &kl, &v, &vl), ARC_ABSENT);
    uint8_t *at = memmem(data, len, "key-003", 7);
    REQUIRE(at);
    at[7] ^= 1;
    CHECK_EQ(arc_file_entry(&f, 2, NULL, &kind, &k, &kl, &v, &vl), ARC_CORRUPT);
    CHECK_EQ(arc_file_entry(&f, 3, NULL, &kind, &k, &kl, &v, &vl), ARC_HIT);
    arc_file_close(&f);
    REQUIRE_OK(arc_file_open(&f, data, len, &k_other));
    CHECK_EQ(arc_file_entry(&f, 0, NULL, &kind, &k, &kl, &v, &vl), ARC_DEVICE_MISMATCH);
    arc_file_close(&f);
    free(data);
}

/* ---- what a folder may hold --------------------------------------------------------- */

/* An empty folder (or one holding no archive) lists nothing: compaction and
 * gc have nothing to sort, and say so without touching a NULL listing (the
 * saver's first tidy of a fresh folder does this). */
TEST(tidying_a_folder_without_archives)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    for (int round = 0; round < 2; round++) {
        struct arc_tidy_result r;
        CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));
        CHECK(!r.busy);
        CHECK_EQ(r.files_before, 0);
        CHECK_EQ(r.files_after, 0);
        CHECK_EQ(r.merged, 0);
        CHECK_OK(arc_gc(dir, 0, &r));
        CHECK_EQ(r.files_before, 0);
        CHECK_EQ(r.removed, 0);
        CHECK_OK(arc_compact(dir, &k_dev, SMALL, 1, &r));
        CHECK_EQ(r.merged, 0);
        REQUIRE(put_file(dir, "notes.txt", "x", 1));   /* not an archive: still none listed */
    }
    remove_dir(dir);
}

/* gc removes what serves nothing before any good file, whatever its age:
 * a file that is no kiln archive (junk, a cut header), then the least
 * recently used. A file of another format version is judged by age. */
TEST(gc_removes_files_serving_nothing_first)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    REQUIRE(put_arc(dir, "run-a.arc", k_five, 5, 0));
    REQUIRE(put_arc(dir, "run-b.arc", k_five, 5, 0));
    uint64_t one = size_of(dir, "run-a.arc");
    REQUIRE(one > 100);
    uint8_t *junk = calloc(1, one);
    REQUIRE(junk);
    memset(junk, 'j', one);
    REQUIRE(put_file(dir, "run-junk.arc", junk, one));
    size_t len;
    uint8_t *cut = build(k_five, 5, 0, &k_dev, &len);
    REQUIRE(cut);
    REQUIRE(put_file(dir, "run-cut.arc", cut, 40));   /* a header cut short */
    free(cut);
    set_mtime(dir, "run-a.arc", 1000000);   /* oldest */
    set_mtime(dir, "run-b.arc", 2000000);
    set_mtime(dir, "run-junk.arc", 3000000);   /* newest */
    set_mtime(dir, "run-cut.arc", 3000000);
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, 2 * one, &r));   /* room for two good files */
    CHECK_EQ(r.files_before, 4);
    CHECK_EQ(r.removed, 2);
    CHECK_EQ(r.bad_dropped, 2);
    CHECK(!exists(dir, "run-junk.arc") && !exists(dir, "run-cut.arc"));
    CHECK(exists(dir, "run-a.arc") && exists(dir, "run-b.arc"));
    /* Past the useless ones, the oldest good file goes. */
    CHECK_OK(arc_gc(dir, one, &r));
    CHECK_EQ(r.removed, 1);
    CHECK_EQ(r.bad_dropped, 0);
    CHECK(!exists(dir, "run-a.arc") && exists(dir, "run-b.arc"));
    /* A file kiln cannot read serves nothing either (only a process that
     * permissions bind can see it: not root). */
    if (geteuid() != 0) {
        REQUIRE(put_arc(dir, "run-c.arc", k_five, 5, 0));
        REQUIRE(put_arc(dir, "run-locked.arc", k_five, 5, 0));
        set_mtime(dir, "run-b.arc", 1000000);
        set_mtime(dir, "run-c.arc", 2000000);
        set_mtime(dir, "run-locked.arc", 3000000);
        char path[600];
        snprintf(path, sizeof path, "%s/run-locked.arc", dir);
        REQUIRE(chmod(path, 0) == 0);
        CHECK_OK(arc_gc(dir, 2 * one, &r));
        CHECK_EQ(r.removed, 1);
        CHECK(!exists(dir, "run-locked.arc") && exists(dir, "run-b.arc") && exists(dir, "run-c.arc"));
    }
    free(junk);
    remove_dir(dir);
}

/* A file past ARC_MAX_FILE is one kiln never reads, whatever its header
 * says: gc counts it as serving nothing and removes it before any good
 * file, however recently used (sparse: no disk is spent on it). */
TEST(gc_removes_a_file_past_the_largest_read_first)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX", path[600];
    REQUIRE(mkdtemp(dir));
    REQUIRE(put_arc(dir, "run-a.arc", k_five, 5, 0));
    REQUIRE(put_arc(dir, "run-huge.arc", k_five, 5, 0));   /* a good archive, then made too large */
    snprintf(path, sizeof path, "%s/run-huge.arc", dir);
    if (truncate(path, (off_t)ARC_MAX_FILE + 1) != 0) {
        fprintf(stderr, "%s: this file system keeps no sparse %llu-byte file: not tried\n", test_name_,
                (unsigned long long)ARC_MAX_FILE + 1);
        remove_dir(dir);
        return;
    }
    set_mtime(dir, "run-a.arc", 1000000);      /* the least recently used */
    set_mtime(dir, "run-huge.arc", 2000000);
    uint64_t one = size_of(dir, "run-a.arc");
    struct arc_tidy_result r;
    CHECK_OK(arc_gc(dir, one, &r));
    CHECK_EQ(r.files_before, 2);
    CHECK_EQ(r.removed, 1);
    CHECK_EQ(r.bad_dropped, 1);
    CHECK(!exists(dir, "run-huge.arc") && exists(dir, "run-a.arc"));
    remove_dir(dir);
}

/* A FIFO, or a folder, under an archive's name: opening it to map never
 * waits for a writer, and it is refused naming the path; tidying skips it.
 * An alarm turns a hang into a failure. */
TEST(a_fifo_named_like_an_archive_is_never_waited_on)
{
    char dir[] = "/tmp/kiln-tidy-XXXXXX", path[600];
    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/run-fifo.arc", dir);
    REQUIRE(mkfifo(path, 0644) == 0);
    alarm(60);
    struct arc_file m;
    CHECK_RESULT(arc_file_open_path(&m, path, &k_dev, true), KILN_ERR_IO);
    CHECK_MSG("run-fifo.arc is not a regular file (a FIFO)");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/run-dir.arc", dir);
    REQUIRE(mkdir(sub, 0755) == 0);
    CHECK_RESULT(arc_file_open_path(&m, sub, &k_dev, true), KILN_ERR_IO);
    CHECK_MSG("run-dir.arc is not a regular file (a folder)");
    REQUIRE(put_arc(dir, "run-1.arc", k_five, 3, 0));
    REQUIRE(put_arc(dir, "run-2.arc", k_five + 2, 3, 0));
    struct arc_tidy_result r;
    CHECK_OK(arc_compact(dir, &k_dev, SMALL, 2, &r));
    CHECK_EQ(r.files_before, 2);   /* the FIFO and the folder are not listed */
    CHECK_EQ(r.merged, 2);
    CHECK_OK(arc_gc(dir, 0, &r));
    CHECK_EQ(r.removed, 1);
    alarm(0);
    struct stat st;
    CHECK(lstat(path, &st) == 0 && S_ISFIFO(st.st_mode));   /* left alone */
    /* The tidy lock itself a FIFO: refused, not waited on. */
    snprintf(path, sizeof path, "%s/.tidy.lock", dir);
    unlink(path);
    REQUIRE(mkfifo(path, 0644) == 0);
    alarm(60);
    CHECK_RESULT(arc_gc(dir, 0, &r), KILN_ERR_IO);
    CHECK_MSG("not a regular file");
    alarm(0);
    remove_dir(dir);
}

int main(void)
{
    RUN(entries_are_walked_as_lookups_check_them);
    RUN(gc_removes_the_oldest_files_until_under_the_bound);
    RUN(gc_keeps_everything_when_under_the_bound);
    RUN(a_touched_file_goes_last);
    RUN(compaction_merges_small_run_archives_into_one_pack);
    RUN(compaction_drops_damaged_entries_and_files);
    RUN(compaction_leaves_too_few_and_foreign_files_alone);
    RUN(a_second_tidier_finds_the_folder_busy);
    RUN(a_kill_at_every_step_of_compaction_loses_no_entry);
    RUN(tidying_a_folder_without_archives);
    RUN(gc_removes_files_serving_nothing_first);
    RUN(gc_removes_a_file_past_the_largest_read_first);
    RUN(a_fifo_named_like_an_archive_is_never_waited_on);
    return TEST_SUMMARY();
}
