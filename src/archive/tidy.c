/* SPDX-License-Identifier: MIT */
/*
 * tidy.c: keeping an archive folder bounded (see archive.h). gc removes
 * whole files, least recently used first; compaction merges small files
 * into one pack.
 *
 * A file's mtime is its use clock: arc_touch sets it, gc sorts by it. No
 * side file has to agree with the folder, and a copied folder keeps it.
 *
 * gc removes first the files that serve nothing (kiln cannot read them, or
 * they are no kiln archive: a bad header), then the least recently used.
 * Files of another format version are judged by age like the rest: a newer
 * kiln sharing the folder may be using them.
 *
 * Every file is opened as arc_file_open_path opens it, gc's header check
 * included (arc_load for compaction's sources, which are small and read
 * whole, so a file cut meanwhile loads what was there, never SIGBUS):
 * without blocking, and checked to be a regular file of at most
 * ARC_MAX_FILE bytes before a byte is read. A FIFO or device planted under
 * an archive's name is skipped, never waited on; a file past the bound is
 * one kiln never reads, so gc counts it as serving nothing.
 *
 * One process tidies a folder at a time, under a non-blocking flock on
 * ".tidy.lock": a second tidier skips rather than waits, tidying being
 * never urgent. Lookups and saves take no lock: saves go through ".tmp"
 * files, which tidying never touches, and a removed file stays readable
 * through the descriptors of processes that opened it.
 *
 * Compaction saves the pack before it removes a single source, so every
 * entry is in some whole file at every instant: a crash costs duplicates,
 * never an entry. Sources are read through the checks lookups use
 * (arc_file_entry), so a damaged entry is dropped, never copied.
 */
#define _GNU_SOURCE
#include "archive.h"
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#define DIR_MAX 4096                   /* longer folder names are refused */
#define PATH_CAP (DIR_MAX + 256 + 2)   /* a folder, '/', a file name of at most 255 bytes */

/* ---- the folder --------------------------------------------------------------------- */

/* One .arc file as listed. */
struct listed {
    char name[256];
    uint64_t size;
    struct timespec mtime;
    bool useless;   /* gc: serves nothing (unreadable, or not a kiln archive) */
};

struct listing {
    struct listed *v;
    uint32_t count, cap;
    uint64_t bytes;
};

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && !strcmp(s + n - m, suffix);
}

static bool has_prefix(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static void join(char *out, const char *dir, const char *name) { snprintf(out, PATH_CAP, "%s/%s", dir, name); }

/* Takes the folder's tidy lock: *fd holds it, or *busy says another
 * process does (and *fd is -1). */
static kiln_result lock_folder(const char *dir, int *fd, bool *busy)
{
    *fd = -1;
    *busy = false;
    if (strlen(dir) >= DIR_MAX)
        return KILN_RAISE(KILN_ERR_INVALID, "archive tidy: folder name longer than %d bytes", DIR_MAX - 1);
    char path[PATH_CAP];
    join(path, dir, ".tidy.lock");
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY, 0644);
    if (f < 0)
        return KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot open %s: %s", dir, path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(f);
        return KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: %s is not a regular file: not tidying", dir, path);
    }
    int r;
    while ((r = flock(f, LOCK_EX | LOCK_NB)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        int e = errno;
        close(f);
        if (e == EWOULDBLOCK) {
            *busy = true;
            return KILN_OK;
        }
        return KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot lock %s: %s", dir, path, strerror(e));
    }
    *fd = f;
    return KILN_OK;
}

/* Closing the descriptor releases the flock. */
static void unlock_folder(int fd)
{
    if (fd >= 0)
        close(fd);
}

/* The folder's .arc files (regular files only; ".tmp" files end otherwise
 * and are never listed). */
static kiln_result list_folder(const char *dir, struct listing *l)
{
    *l = (struct listing){0};
    DIR *d = file_opendir_nofollow(dir);
    if (!d)
        return KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot open the folder: %s", dir,
                          errno == ELOOP || errno == ENOTDIR ? "it is a symbolic link (kiln follows no links in a "
                                                               "folder it writes)"
                                                             : strerror(errno));
    kiln_result r = KILN_OK;
    struct dirent *e;
    for (;;) {
        errno = 0;
        if (!(e = readdir(d))) {
            if (errno)
                r = KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot read the folder: %s", dir, strerror(errno));
            break;
        }
        if (!has_suffix(e->d_name, ".arc") || strlen(e->d_name) >= sizeof l->v->name)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;   /* removed since the folder was read */
            r = KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot stat %s: %s", dir, e->d_name, strerror(errno));
            break;
        }
        if (!S_ISREG(st.st_mode))
            continue;
        if (!vec_reserve((void **)&l->v, &l->cap, l->count + 1, sizeof *l->v)) {
            r = KILN_RAISE(KILN_ERR_NO_MEMORY, "archive tidy of %s: out of host memory listing the folder", dir);
            break;
        }
        struct listed *f = &l->v[l->count++];
        *f = (struct listed){0};
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        f->size = (uint64_t)st.st_size;
        f->mtime = st.st_mtim;
        l->bytes += f->size;
    }
    closedir(d);
    return r;
}

static int time_cmp(struct timespec a, struct timespec b)
{
    if (a.tv_sec != b.tv_sec)
        return a.tv_sec < b.tv_sec ? -1 : 1;
    return a.tv_nsec < b.tv_nsec ? -1 : a.tv_nsec > b.tv_nsec;
}

/* Files serving nothing first, then least recently used first; the name
 * breaks ties so the order is stable. */
static int by_age(const void *a, const void *b)
{
    const struct listed *x = a, *y = b;
    if (x->useless != y->useless)
        return x->useless ? -1 : 1;
    int c = time_cmp(x->mtime, y->mtime);
    return c ? c : strcmp(x->name, y->name);
}

/* Sorts a listing; an empty one has no array to sort (qsort's pointer must
 * not be NULL, even for no elements). */
static void sort_listing(struct listing *l, int (*cmp)(const void *, const void *))
{
    if (l->count > 1)
        qsort(l->v, l->count, sizeof *l->v, cmp);
}

/* Whether dir/name serves nothing to any kiln of this format: kiln cannot
 * read it (arc_file_open_path refuses it: unreadable, not a regular file,
 * past ARC_MAX_FILE), or its header is no kiln archive's. Only the header
 * (and an index) is read. A file gone meanwhile is not useless (gc counts
 * it gone anyway). */
static bool useless_file(const char *dir, const char *name)
{
    char path[PATH_CAP];
    join(path, dir, name);
    struct arc_file f;
    kiln_result r = arc_file_open_path(&f, path, NULL, false);
    if (r != KILN_OK) {
        bool gone = access(path, F_OK) < 0 && errno == ENOENT;
        err_clear();
        return r != KILN_ERR_NO_MEMORY && !gone;
    }
    bool useless = f.whole == ARC_CORRUPT;
    arc_file_close(&f);
    return useless;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct listed *)a)->name, ((const struct listed *)b)->name);
}

/* Removes dir/name: 0, or the errno of the failure (ENOENT: it was gone). */
static int remove_file(const char *dir, const char *name)
{
    char path[PATH_CAP];
    join(path, dir, name);
    return unlink(path) < 0 ? errno : 0;
}

void arc_touch(const char *dir, const char *name)
{
    if (strlen(dir) >= DIR_MAX || strlen(name) > 255)
        return;
    char path[PATH_CAP];
    join(path, dir, name);
    (void)utimensat(AT_FDCWD, path, NULL, AT_SYMLINK_NOFOLLOW);   /* a read-only folder just keeps its order */
}

/* ---- gc ------------------------------------------------------------------------------ */

kiln_result arc_gc(const char *dir, uint64_t max_bytes, struct arc_tidy_result *out)
{
    *out = (struct arc_tidy_result){0};
    int lock;
    KILN_TRY(lock_folder(dir, &lock, &out->busy));
    if (out->busy)
        return KILN_OK;
    struct listing l;
    kiln_result r = list_folder(dir, &l);
    if (r == KILN_OK) {
        out->files_before = out->files_after = l.count;
        out->bytes_before = out->bytes_after = l.bytes;
        if (l.bytes > max_bytes) {
            for (uint32_t i = 0; i < l.count; i++)
                l.v[i].useless = useless_file(dir, l.v[i].name);
        }
        sort_listing(&l, by_age);
        for (uint32_t i = 0; i < l.count && out->bytes_after > max_bytes; i++) {
            int e = remove_file(dir, l.v[i].name);
            if (e && e != ENOENT) {
                r = KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot remove %s: %s", dir, l.v[i].name,
                               strerror(e));
                break;
            }
            out->removed += e == 0;   /* ENOENT: another process removed it; gone all the same */
            out->bad_dropped += e == 0 && l.v[i].useless;
            out->files_after--;
            out->bytes_after -= l.v[i].size;
        }
    }
    free(l.v);
    unlock_folder(lock);
    return r;
}

/* ---- compaction ----------------------------------------------------------------------- */

/* A small file considered for merging. */
struct source {
    const struct listed *listed;
    struct arc_loaded bytes;     /* the whole file, read once */
    struct arc_file file;        /* over bytes */
    bool merge;   /* its entries go into the pack and it is removed after */
};

/* Entries already in the pack, by kind and key: open addressing over
 * slots holding 1 + an index into keys (0: empty). Keys point into the
 * sources' bytes, which outlive the table. */
struct seen {
    struct seen_key { uint32_t kind; const uint8_t *hash, *key; size_t key_len; } *keys;
    size_t count;
    uint32_t *slots;
    size_t mask;
};

static bool seen_init(struct seen *s, size_t most)
{
    size_t cap = 16;
    while (cap < 2 * most)
        cap *= 2;
    *s = (struct seen){.keys = mem_alloc((most ? most : 1) * sizeof *s->keys),
                       .slots = mem_calloc(cap, sizeof *s->slots),
                       .mask = cap - 1};
    return s->keys && s->slots;
}

static void seen_finish(struct seen *s)
{
    free(s->keys);
    free(s->slots);
    *s = (struct seen){0};
}

/* Adds the entry unless one of the same kind and key is there already;
 * true when added. hash is the key's hash128 (the hash only finds the
 * slot; the full key decides). There is room: seen_init was told the most
 * entries there will be. */
static bool seen_add(struct seen *s, uint32_t kind, const uint8_t hash[16], const uint8_t *key, size_t key_len)
{
    struct bytes_reader r;
    bytes_reader_init(&r, hash, 16);
    size_t at = (size_t)(bytes_read_u64(&r) ^ kind) & s->mask;
    for (; s->slots[at]; at = (at + 1) & s->mask) {
        const struct seen_key *k = &s->keys[s->slots[at] - 1];
        if (k->kind == kind && k->key_len == key_len && !memcmp(k->hash, hash, 16) &&
            (key_len == 0 || !memcmp(k->key, key, key_len)))
            return false;
    }
    s->keys[s->count] = (struct seen_key){.kind = kind, .hash = hash, .key = key, .key_len = key_len};
    s->slots[at] = (uint32_t)++s->count;
    return true;
}

/* A fresh pack name: the pid, and a hash of the clock and a counter. */
static void pack_name(char *out, size_t cap)
{
    static _Atomic uint64_t made;
    struct {
        uint64_t ns, n;
        long pid;
    } seed = {time_now_ns(), atomic_fetch_add(&made, 1), (long)getpid()};
    snprintf(out, cap, "pack-%ld-%016llx.arc", seed.pid, (unsigned long long)XXH3_64bits(&seed, sizeof seed));
}

/* Opens the candidates; marks those to merge (a good header, or a corrupt
 * one: it serves nothing and goes). Unreadable files and files of another
 * version or device pair are left alone. Returns how many are marked. */
static uint32_t open_sources(const char *dir, const struct arc_device *dev, struct source *src, uint32_t n,
                             struct arc_tidy_result *out)
{
    uint32_t marked = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct source *s = &src[i];
        char path[PATH_CAP];
        join(path, dir, s->listed->name);
        if (arc_load(&s->bytes, path, ARC_MAX_FILE) != KILN_OK) {
            if (access(path, F_OK) < 0 && errno == ENOENT) {
                err_clear();   /* another process removed it meanwhile */
                out->files_after--;
                out->bytes_after -= s->listed->size;
            } else {
                log_warn("archive: tidy: %s (left alone)", kiln_last_error());
            }
            continue;
        }
        if (arc_file_open(&s->file, s->bytes.data, s->bytes.size, dev) != KILN_OK) {
            log_warn("archive: tidy: %s: %s (left alone)", path, kiln_last_error());
            arc_loaded_free(&s->bytes);
            continue;
        }
        if (s->file.whole == ARC_HIT || s->file.whole == ARC_CORRUPT) {
            s->merge = true;
            marked++;
        } else {
            log_info("archive: tidy: %s serves another %s (left alone)", path,
                     s->file.whole == ARC_VERSION ? "format version" : "device pair");
        }
    }
    return marked;
}

/* Writes every good, new entry of the marked sources into w. */
static void merge_entries(struct source *src, uint32_t n, struct seen *seen, struct arc_writer *w,
                          struct arc_tidy_result *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const struct arc_file *f = &src[i].file;
        if (!src[i].merge)
            continue;
        if (f->whole != ARC_HIT) {
            out->bad_dropped++;   /* the whole file serves nothing */
            continue;
        }
        for (uint32_t j = 0; j < f->ref_count; j++) {
            uint32_t kind;
            const uint8_t *key, *value;
            size_t key_len, value_len;
            if (arc_file_entry(f, j, NULL, &kind, &key, &key_len, &value, &value_len) != ARC_HIT) {
                out->bad_dropped++;
                continue;
            }
            /* arc_file_entry checked the row's hash against the entry's,
             * and the entry's against its key. */
            if (!seen_add(seen, kind, f->refs[j].key_hash, key, key_len)) {
                out->duplicates_dropped++;
                continue;
            }
            arc_writer_add(w, (enum arc_kind)kind, key, key_len, value, value_len);
            out->entries_kept++;
        }
    }
}

/* Saves the pack of w's entries, dated as its newest source. */
static kiln_result save_pack(const char *dir, struct arc_writer *w, const struct source *src, uint32_t n,
                             struct arc_tidy_result *out)
{
    const uint8_t *data;
    size_t len;
    KILN_TRY(arc_writer_close(w, &data, &len));
    char name[128];
    pack_name(name, sizeof name);
    KILN_TRY(arc_save(dir, name, data, len));
    out->files_after++;
    out->bytes_after += len;
    struct timespec newest = {0, 0};
    for (uint32_t i = 0; i < n; i++) {
        if (src[i].merge && time_cmp(src[i].listed->mtime, newest) > 0)
            newest = src[i].listed->mtime;
    }
    char path[PATH_CAP];
    join(path, dir, name);
    /* The pack's entries were last used when its newest source was; a
     * failure here only makes gc keep it longer. */
    (void)utimensat(AT_FDCWD, path, (struct timespec[2]){{.tv_nsec = UTIME_OMIT}, newest}, AT_SYMLINK_NOFOLLOW);
    return KILN_OK;
}

/* Removes the merged sources; the first failure other than "already gone"
 * is raised, after trying them all. */
static kiln_result remove_sources(const char *dir, const struct source *src, uint32_t n, struct arc_tidy_result *out)
{
    kiln_result r = KILN_OK;
    for (uint32_t i = 0; i < n; i++) {
        if (!src[i].merge)
            continue;
        int e = remove_file(dir, src[i].listed->name);
        if (e && e != ENOENT) {
            if (r == KILN_OK)
                r = KILN_RAISE(KILN_ERR_IO, "archive tidy of %s: cannot remove merged %s: %s", dir,
                               src[i].listed->name, strerror(e));
            continue;   /* its entries are in the pack too: a duplicate, which lookups tolerate */
        }
        out->merged += e == 0;
        out->files_after--;
        out->bytes_after -= src[i].listed->size;
    }
    return r;
}

/* Merges the marked sources into a pack, saves it, then removes them. */
static kiln_result merge(const char *dir, const struct arc_device *dev, struct source *src, uint32_t n,
                         struct arc_tidy_result *out)
{
    size_t most = 0;
    for (uint32_t i = 0; i < n; i++)
        most += src[i].merge ? src[i].file.ref_count : 0;
    if (most > UINT32_MAX - 1)
        return KILN_RAISE(KILN_ERR_LIMIT, "archive tidy of %s: %zu entries to merge at once", dir, most);
    struct seen seen;
    if (!seen_init(&seen, most)) {
        seen_finish(&seen);
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "archive tidy of %s: out of host memory for the set of %zu keys merged",
                          dir, most);
    }
    struct arc_writer w;
    arc_writer_init(&w, dev);
    merge_entries(src, n, &seen, &w, out);
    kiln_result r = KILN_OK;
    /* Nothing kept (every entry bad): no pack; the sources only go. */
    if (out->entries_kept)
        r = save_pack(dir, &w, src, n, out);
    if (r == KILN_OK)
        r = remove_sources(dir, src, n, out);
    arc_writer_finish(&w);
    seen_finish(&seen);
    return r;
}

static bool small_archive(const struct listed *f, uint64_t small_bytes)
{
    return f->size <= small_bytes && (has_prefix(f->name, "run-") || has_prefix(f->name, "pack-"));
}

/* Compacts the listed folder (l sorted by name). */
static kiln_result compact_listed(const char *dir, const struct arc_device *dev, const struct listing *l,
                                  uint64_t small_bytes, uint32_t min_files, struct arc_tidy_result *out)
{
    if (l->count < min_files)
        return KILN_OK;   /* too few files to find enough small ones */
    struct source *src = mem_calloc(l->count, sizeof *src);
    if (!src)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "archive tidy of %s: out of host memory for the list of %u files",
                          dir, l->count);
    /* The small archives, in order. The pack holds at most its sources'
     * bytes: they are bounded so that it stays a file kiln reads
     * (ARC_MAX_FILE); the rest wait for the next compaction. */
    uint32_t n = 0;
    uint64_t total = 0;
    for (uint32_t i = 0; i < l->count; i++) {
        if (small_archive(&l->v[i], small_bytes) && l->v[i].size <= ARC_MAX_FILE - total) {
            src[n++].listed = &l->v[i];
            total += l->v[i].size;
        }
    }
    if (n < min_files) {
        free(src);
        return KILN_OK;
    }
    kiln_result r = KILN_OK;
    if (open_sources(dir, dev, src, n, out) >= min_files)
        r = merge(dir, dev, src, n, out);
    for (uint32_t i = 0; i < n; i++) {
        arc_file_close(&src[i].file);
        arc_loaded_free(&src[i].bytes);
    }
    free(src);
    return r;
}

kiln_result arc_compact(const char *dir, const struct arc_device *dev, uint64_t small_bytes, uint32_t min_files,
                        struct arc_tidy_result *out)
{
    *out = (struct arc_tidy_result){0};
    int lock;
    KILN_TRY(lock_folder(dir, &lock, &out->busy));
    if (out->busy)
        return KILN_OK;
    struct listing l;
    kiln_result r = list_folder(dir, &l);
    if (r == KILN_OK) {
        out->files_before = out->files_after = l.count;
        out->bytes_before = out->bytes_after = l.bytes;
        sort_listing(&l, by_name);   /* the first of duplicates met is kept: a stable choice */
        /* One file merged alone would only be rewritten. */
        r = compact_listed(dir, dev, &l, small_bytes, KILN_MAX(min_files, 2u), out);
    }
    free(l.v);
    unlock_folder(lock);
    return r;
}
