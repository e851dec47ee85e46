/* SPDX-License-Identifier: MIT */
/*
 * store.c: a context's archive folder. It resolves the folder for the
 * context's device pair, maps the archive files already there, looks
 * entries up across them, gathers what this process compiles into run
 * archives, and saves those on a saver thread of its own.
 *
 * Run archives: an adder takes a run archive no other thread holds (making
 * one while fewer than cfg.taking exist), copies its entry in without the
 * store's lock, and gives it back. A run archive estimated at cfg.run_bytes
 * or more takes nothing more and goes to the save queue; it is saved once
 * and let go. When every run archive is held, or the ones not saved yet
 * would hold more than cfg.unsaved_bytes, the entry is not kept (counted:
 * it compiles again next time). One saver thread, at the lowest CPU
 * priority, saves the queue (a base/list.h list, oldest first) one file at
 * a time. It holds back while its gate says the process is busy (a giant
 * compile in flight, the application submitting), unless
 * cfg.urgent_bytes or more wait. A failed save is
 * logged with the system's reason and tried once more cfg.retry_s later,
 * then let go. The saver also tidies the folder off the hot path: small run
 * archives compacted into one, least recently used files removed past
 * cfg.max_size, files this process used marked used on disk. At close the
 * run archives still open are saved on the closing thread.
 *
 * Names: "run-<pid>-<ns clock>-<n>.arc"; with the .tmp created exclusively
 * (O_EXCL) no two processes write one name.
 *
 * KILN_ARCHIVE=0 turns it all off: nothing is read, written or logged. A
 * folder that can be read but not written (a shipped archive, a read-only
 * mount) is used read-only: its files are looked up, nothing is saved or
 * tidied, and entries offered are counted as not kept. A folder that cannot
 * be used at all is one "NOT applied" line and kiln goes on without an
 * archive.
 *
 * Loading: every ".arc" file is opened through arc_file_open_path, which
 * keeps its descriptor and reads entries with pread (a file cut or
 * replaced under the process is a counted miss, never SIGBUS), never
 * blocks (a FIFO planted under the name is not waited on) and refuses
 * anything but a regular file of at most ARC_MAX_FILE bytes. A file refused
 * or unreadable is skipped with a warning naming it and counted
 * (files_skipped, in the close line); the good files are used as ever.
 *
 * Thread-safety: lookups read the files' lists, which never change after
 * open, and each lookup reads into a buffer of its own (pread keeps no
 * shared offset);
 * everything else is under the store's lock. Lock order: gate_lock, then
 * whatever the gate takes (the compile service's lock); the store's lock is
 * never held while the gate runs.
 */
#define _GNU_SOURCE
#include "archive.h"
#include "base/file.h"
#include "base/trace.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <xxhash.h>

static kiln_result mkdirs(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return KILN_RAISE(KILN_ERR_IO, "cannot make %s: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) < 0 && errno != EEXIST)
        return KILN_RAISE(KILN_ERR_IO, "cannot make %s: %s", buf, strerror(errno));
    if (access(buf, R_OK | W_OK | X_OK) < 0)
        return KILN_RAISE(KILN_ERR_IO, "cannot use %s: %s", buf, strerror(errno));
    return KILN_OK;
}

/* The folder of one device pair: <root>/<device name>-<driver>-<uuid>. */
static void pair_folder(char *out, size_t cap, const char *root, const kiln_caps *caps)
{
    char name[64];
    size_t n = 0;
    for (const char *c = caps->device_name; *c && n < sizeof name - 1; c++)
        name[n++] = isalnum((unsigned char)*c) ? (char)tolower((unsigned char)*c) : '-';
    name[n] = 0;
    char uuid[33];
    for (int i = 0; i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", caps->pipeline_cache_uuid[i]);
    snprintf(out, cap, "%s/%s-%08x-%s", root, name, caps->driver_version, uuid);
}

/* Opens every .arc file of folder; a file that cannot be used is skipped,
 * warned about by path and counted. follow: symbolic links are followed
 * (read-only roots); else a link is skipped by name (the folder kiln
 * writes, which is itself opened without following a link). */
static void load_files(struct arc_store *s, const char *folder, bool follow)
{
    DIR *d = follow ? opendir(folder) : file_opendir_nofollow(folder);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".arc"))
            continue;
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        if (!vec_reserve((void **)&s->files, &s->file_cap, s->file_count + 1, sizeof *s->files)) {
            s->stats.files_skipped++;
            log_warn("archive: %s and the files after it skipped: out of host memory listing the folder's files",
                     path);
            break;
        }
        struct arc_store_file *f = &s->files[s->file_count];
        *f = (struct arc_store_file){0};
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        kiln_result r = arc_file_open_path(&f->file, path, &s->device, follow);
        if (r != KILN_OK) {
            s->stats.files_skipped++;
            if (r == KILN_ERR_NO_MEMORY)
                log_warn("archive: %s skipped: %s", path, kiln_last_error());
            else
                log_warn("archive: skipped: %s", kiln_last_error());
            err_clear();
            continue;
        }
        if (f->file.whole != ARC_HIT)
            log_info("archive: %s serves nothing: %s", e->d_name, arc_cause_name(f->file.whole));
        s->file_count++;
    }
    if (d)
        closedir(d);
}

void arc_store_config_default(struct arc_store_config *c)
{
    *c = (struct arc_store_config){
        .run_bytes = 64ull << 20,
        .taking = 16,
        .unsaved_bytes = 1ull << 30,
        .urgent_bytes = 512ull << 20,
        .retry_s = 5.0,
        .max_size = 1ull << 30,
        .small_bytes = 8ull << 20,
        .compact_at = 8,
        .tidy_delay_s = 2.0,
    };
    /* Through the size reader every size goes through (base/parse.h); 0
     * would remove every file, so it is refused too. */
    uint64_t n = env_size("KILN_ARCHIVE_MAX_SIZE", c->max_size);
    if (n)
        c->max_size = n;
    else
        log_warn("KILN_ARCHIVE_MAX_SIZE: NOT applied: 0 bytes would leave no room for any file; using 1G");
}

static void *saver_main(void *arg);

kiln_result arc_store_open(struct arc_store *s, const kiln_caps *caps, const struct arc_store_config *cfg)
{
    *s = (struct arc_store){0};
    uint64_t t_open = time_now_ns();
    struct arc_store_config dflt;
    if (!cfg) {
        arc_store_config_default(&dflt);
        cfg = &dflt;
    }
    /* Each setting the config (the context desc) gives, else its variable. */
    if (cfg->enabled < 0 || (cfg->enabled == 0 && !env_flag("KILN_ARCHIVE", 1)))
        return KILN_OK;   /* off: nothing read, written or logged */
    char root[3072];
    const char *dir = cfg->dir && *cfg->dir ? cfg->dir : getenv("KILN_ARCHIVE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (dir && *dir)
        snprintf(root, sizeof root, "%s", dir);
    else if (xdg && *xdg)
        snprintf(root, sizeof root, "%s/kiln", xdg);
    else if (home && *home)
        snprintf(root, sizeof root, "%s/.cache/kiln", home);
    else {
        log_warn("archive: NOT applied: no KILN_ARCHIVE_DIR, XDG_CACHE_HOME or HOME to put it in");
        return KILN_OK;
    }
    /* The root is resolved once: a user's ~/.cache is often a link, and
     * that is theirs to make. Below it kiln follows no link where it
     * writes or removes: a device pair's folder that is a link is refused
     * by name. */
    char real[PATH_MAX];
    size_t real_len;
    if (mkdirs(root) == KILN_OK && realpath(root, real) && (real_len = strlen(real)) < sizeof root)
        memcpy(root, real, real_len + 1);
    err_clear();
    pair_folder(s->dir, sizeof s->dir, root, caps);
    struct stat lst;
    if (lstat(s->dir, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        log_warn("archive: NOT applied: %s is a symbolic link; kiln neither reads nor writes through a link below "
                 "its archive root (make it a folder, or point KILN_ARCHIVE_DIR at the link's target)", s->dir);
        return KILN_OK;
    }
    if (mkdirs(s->dir) < 0) {
        struct stat st;
        if (stat(s->dir, &st) < 0 || !S_ISDIR(st.st_mode) || access(s->dir, R_OK | X_OK) < 0) {
            log_warn("archive: NOT applied: %s", kiln_last_error());
            err_clear();
            return KILN_OK;
        }
        /* There and readable, not writable: looked up, never written. */
        log_info("archive: %s is read-only (%s): its files are looked up, nothing is saved there", s->dir,
                 kiln_last_error());
        err_clear();
        s->dir_readonly = true;
    }
    s->cfg = *cfg;
    s->cfg.dir = s->cfg.readonly_roots = NULL;   /* borrowed: read below, never kept */
    s->cfg.taking = KILN_MIN(KILN_MAX(s->cfg.taking, 1u), (uint32_t)(sizeof s->taking / sizeof s->taking[0]));
    arc_device_from_caps(&s->device, caps);
    uint32_t cleaned = s->dir_readonly ? 0 : arc_clean_tmp(s->dir);
    if (cleaned)
        log_info("archive: removed %u temporary files of dead processes", cleaned);
    const char *ro = cfg->readonly_roots ? cfg->readonly_roots : getenv("KILN_ARCHIVE_READONLY");
    for (const char *p = ro; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n) {
            char ro_root[3072], folder[4096];
            snprintf(ro_root, sizeof ro_root, "%.*s", (int)KILN_MIN(n, sizeof ro_root - 1), p);
            pair_folder(folder, sizeof folder, ro_root, caps);
            uint32_t before = s->file_count;
            load_files(s, folder, true);
            for (uint32_t i = before; i < s->file_count; i++)
                s->files[i].readonly = true;
            s->readonly_files += s->file_count - before;
        }
        p = colon ? colon + 1 : p + n;
    }
    load_files(s, s->dir, false);
    if (cfg->trace) {
        char detail[4200];
        snprintf(detail, sizeof detail, "%u files from %s (%u from read-only folders)", s->file_count, s->dir,
                 s->readonly_files);
        trace_span(cfg->trace, TRACE_ARCHIVE, "archive", "load", t_open, time_now_ns(), detail);
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->gate_lock, NULL);
    pthread_cond_init(&s->wake, NULL);
    list_init(&s->queue);
    s->enabled = true;
    s->open_ns = time_now_ns();
    s->qa = cfg->qa ? cfg->qa > 0 : env_flag("KILN_ARCHIVE_QA", 0);
    if (!s->dir_readonly) {
        if (kthread_start(&s->saver, "kiln-saver", 0, saver_main, s) != KILN_OK)
            log_warn("archive: no saver thread (%s): run archives are saved at close", err_last());
    }
    log_info("archive: %s%s: %u files (%u from read-only folders, %u skipped)", s->dir,
             s->dir_readonly ? " (read-only)" : "", s->file_count, s->readonly_files, s->stats.files_skipped);
    return KILN_OK;
}

void arc_store_set_gate(struct arc_store *s, arc_gate_fn gate, void *ud)
{
    if (!s->enabled)
        return;
    pthread_mutex_lock(&s->gate_lock);
    s->gate = gate;
    s->gate_ud = ud;
    pthread_mutex_unlock(&s->gate_lock);
}

enum arc_cause arc_store_find(struct arc_store *s, enum arc_kind kind, const uint8_t hash[16], const void *key,
                              size_t key_len, struct bytes *buf, const uint8_t **value, size_t *value_len)
{
    if (!s->enabled)
        return ARC_ABSENT;
    uint64_t t0 = time_now_ns();
    enum arc_cause best = ARC_ABSENT;
    for (uint32_t i = 0; i < s->file_count; i++) {
        enum arc_cause c = arc_file_find_hashed(&s->files[i].file, kind, hash, key, key_len, buf, value, value_len);
        if (c == ARC_HIT) {
            best = c;
            if (!s->files[i].readonly && !atomic_exchange(&s->files[i].used, true)) {
                pthread_mutex_lock(&s->lock);
                s->files_used = true;
                pthread_cond_signal(&s->wake);
                pthread_mutex_unlock(&s->lock);
            }
            break;
        }
        if (c != ARC_ABSENT && best == ARC_ABSENT)
            best = c;
    }
    atomic_fetch_add(&s->look_ns, time_now_ns() - t0);
    return best;
}

/* ---- run archives ------------------------------------------------------------------------ */

static void queue_push(struct arc_store *s, struct arc_run *r) { list_add_tail(&s->queue, &r->link); }

static void taking_remove(struct arc_store *s, struct arc_run *r)
{
    for (uint32_t i = 0; i < s->taking_count; i++)
        if (s->taking[i] == r) {
            s->taking[i] = s->taking[--s->taking_count];
            return;
        }
}

static void run_free(struct arc_run *r)
{
    arc_writer_finish(&r->w);
    free(r);
}

bool arc_store_add(struct arc_store *s, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                   size_t value_len)
{
    if (!s->enabled)
        return false;
    uint64_t t0 = time_now_ns();
    uint64_t grows = ARC_ENTRY_HEAD_SIZE + key_len + value_len + 8 + ARC_INDEX_ROW_SIZE;
    pthread_mutex_lock(&s->lock);
    if (s->dir_readonly) {
        s->stats.readonly_dropped++;
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    struct arc_run *r = NULL;
    if (!s->stopping && s->unsaved + grows <= s->cfg.unsaved_bytes) {
        for (uint32_t i = 0; i < s->taking_count && !r; i++)
            if (!s->taking[i]->held)
                r = s->taking[i];
        if (!r && s->taking_count < s->cfg.taking && (r = mem_calloc(1, sizeof *r))) {
            list_init(&r->link);
            arc_writer_init(&r->w, &s->device);
            r->counted = r->w.out.len;
            s->unsaved += r->counted;
            s->taking[s->taking_count++] = r;
        }
    }
    if (!r) {
        s->stats.over_bound++;
        pthread_mutex_unlock(&s->lock);
        return false;
    }
    r->held = true;
    size_t before = r->w.out.len;
    pthread_mutex_unlock(&s->lock);

    arc_writer_add(&r->w, kind, key, key_len, value, value_len);

    pthread_mutex_lock(&s->lock);
    r->held = false;
    r->entries++;
    r->counted += r->w.out.len - before;
    s->unsaved += r->w.out.len - before;
    s->stats.added++;
    if (kind == ARC_NOTE)
        s->stats.notes++;
    if (r->w.out.len >= s->cfg.run_bytes || r->w.out.oom) {
        taking_remove(s, r);
        queue_push(s, r);
        pthread_cond_signal(&s->wake);
    }
    s->stats.add_ns += time_now_ns() - t0;
    pthread_mutex_unlock(&s->lock);
    return true;
}

/* Saves one run archive (lock not held). On failure the error is raised
 * and the archive keeps its data for another try. */
static kiln_result run_save(struct arc_store *s, struct arc_run *r)
{
    if (!r->data)
        KILN_TRY(arc_writer_close(&r->w, &r->data, &r->len));
    static _Atomic uint32_t serial;
    char name[128];
    snprintf(name, sizeof name, "run-%ld-%llx-%u.arc", (long)getpid(), (unsigned long long)time_now_ns(),
             atomic_fetch_add(&serial, 1));
    return arc_save(s->dir, name, r->data, r->len);
}

/* Saves r and accounts for it (lock held on entry and exit; dropped while
 * writing). last: no later try (the store is closing). */
static void save_one(struct arc_store *s, struct arc_run *r, bool last)
{
    s->saving = r;
    pthread_mutex_unlock(&s->lock);
    uint64_t t0 = time_now_ns();
    kiln_result res = run_save(s, r);
    char why[512];
    snprintf(why, sizeof why, "%s", res == KILN_OK ? "" : kiln_last_error());
    err_clear();
    uint64_t dt = time_now_ns() - t0;
    if (s->cfg.trace) {
        char detail[640];
        snprintf(detail, sizeof detail, "%u entries, %zu bytes%s%s", r->entries, r->len, res == KILN_OK ? "" : ": ",
                 why);
        trace_span(s->cfg.trace, TRACE_ARCHIVE, "archive", res == KILN_OK ? "save" : "save failed", t0, t0 + dt,
                   detail);
    }
    pthread_mutex_lock(&s->lock);
    s->saving = NULL;
    s->stats.save_ns += dt;
    if (res == KILN_OK) {
        s->stats.saved++;
        s->stats.saved_bytes += r->len;
    } else {
        s->stats.saves_failed++;
        if (++r->tries < 2 && !last) {
            r->retry_ns = time_now_ns() + (uint64_t)(s->cfg.retry_s * 1e9);
            log_warn("archive: run archive save failed: %s; trying once more in %g s", why, s->cfg.retry_s);
            queue_push(s, r);
            return;
        }
        s->stats.let_go++;
        s->stats.entries_let_go += r->entries;
        log_warn("archive: run archive save failed%s: %s; its %u entries are let go (they compile again next time)",
                 r->tries > 1 ? " again" : "", why, r->entries);
    }
    s->unsaved -= r->counted;
    run_free(r);
}

/* True while the saver should hold back (lock not held). */
static bool gate_busy(struct arc_store *s)
{
    pthread_mutex_lock(&s->gate_lock);
    bool busy = s->gate && s->gate(s->gate_ud);
    pthread_mutex_unlock(&s->gate_lock);
    return busy;
}

/* Marks used files used on disk and tidies the folder (lock not held). */
static void tidy(struct arc_store *s, bool compact, bool gc)
{
    for (uint32_t i = 0; i < s->file_count; i++) {
        struct arc_store_file *f = &s->files[i];
        if (!f->readonly && !f->touched && atomic_load(&f->used)) {
            f->touched = true;
            arc_touch(s->dir, f->name);
        }
    }
    struct arc_tidy_result t = {0};
    if (compact) {
        if (arc_compact(s->dir, &s->device, s->cfg.small_bytes, s->cfg.compact_at, &t) < 0) {
            log_warn("archive: compaction: %s", kiln_last_error());
            err_clear();
        } else if (t.merged) {
            log_info("archive: compacted %u small run archives into one (%llu entries, %llu duplicates dropped)",
                     t.merged, (unsigned long long)t.entries_kept, (unsigned long long)t.duplicates_dropped);
        }
    }
    t = (struct arc_tidy_result){0};
    if (!gc)
        return;
    if (arc_gc(s->dir, s->cfg.max_size, &t) < 0) {
        log_warn("archive: size bound: %s", kiln_last_error());
        err_clear();
    } else if (t.removed) {
        log_info("archive: %u least recently used files removed (folder %.1f MB, bound %.1f MB)", t.removed,
                 (double)t.bytes_after / (1 << 20), (double)s->cfg.max_size / (1 << 20));
    }
}

#define GATE_POLL_NS (20ull * 1000 * 1000)

static void *saver_main(void *arg)
{
    struct arc_store *s = arg;
    /* Linux: a thread's nice value is its own. */
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    bool tidied = false;
    pthread_mutex_lock(&s->lock);
    while (!s->stopping) {
        uint64_t now = time_now_ns();
        struct arc_run *due = NULL, *r;
        uint64_t next_retry = UINT64_MAX;
        list_for_each(r, tmp, &s->queue, struct arc_run, link) {
            if (r->retry_ns <= now) {
                due = r;
                break;
            }
            next_retry = KILN_MIN(next_retry, r->retry_ns - now);
        }
        uint64_t tidy_at = s->open_ns + (uint64_t)(s->cfg.tidy_delay_s * 1e9);
        bool tidy_due = s->files_used || (!tidied && now >= tidy_at);
        if (!tidied && now < tidy_at)
            next_retry = KILN_MIN(next_retry, tidy_at - now);
        if (!due && !tidy_due) {
            if (next_retry == UINT64_MAX)
                pthread_cond_wait(&s->wake, &s->lock);
            else
                cond_wait_ns(&s->wake, &s->lock, next_retry);
            continue;
        }
        bool urgent = s->unsaved >= s->cfg.urgent_bytes;
        pthread_mutex_unlock(&s->lock);
        bool busy = !urgent && gate_busy(s);
        pthread_mutex_lock(&s->lock);
        if (busy) {
            s->stats.saver_waits++;
            cond_wait_ns(&s->wake, &s->lock, GATE_POLL_NS);
            continue;
        }
        if (due) {
            list_remove(&due->link);
            save_one(s, due, false);
        }
        if (tidy_due || (due && tidied)) {
            s->files_used = false;
            bool first = !tidied && time_now_ns() >= tidy_at;
            bool gc = first || (due && tidied);
            tidied |= first;
            pthread_mutex_unlock(&s->lock);
            tidy(s, first, gc);
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

void arc_store_each(struct arc_store *s, enum arc_kind kind,
                    bool (*fn)(void *ud, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len),
                    void *ud)
{
    if (!s->enabled)
        return;
    struct bytes buf = {0};
    for (uint32_t i = 0; i < s->file_count; i++) {
        const struct arc_file *f = &s->files[i].file;
        for (uint32_t e = 0; e < f->ref_count; e++) {
            uint32_t k;
            const uint8_t *key, *value;
            size_t klen, vlen;
            if (f->refs[e].kind != (uint32_t)kind ||
                arc_file_entry(f, e, &buf, &k, &key, &klen, &value, &vlen) != ARC_HIT || k != (uint32_t)kind)
                continue;
            if (!fn(ud, key, klen, value, vlen))
                goto out;
        }
    }
out:
    free(buf.p);
}

struct arc_store_stats arc_store_stats_get(struct arc_store *s)
{
    if (!s->enabled)
        return (struct arc_store_stats){0};
    pthread_mutex_lock(&s->lock);
    struct arc_store_stats st = s->stats;
    pthread_mutex_unlock(&s->lock);
    st.look_ns = atomic_load(&s->look_ns);
    return st;
}

void arc_store_close(struct arc_store *s, char *summary, size_t cap)
{
    if (summary && cap)
        summary[0] = 0;
    if (!s->enabled)
        return;
    pthread_mutex_lock(&s->lock);
    s->stopping = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
    kthread_join(&s->saver);
    /* Every run archive still open: the ones taking entries merged into one
     * (adders on several threads made several), then the queue. */
    pthread_mutex_lock(&s->lock);
    struct arc_run *into = NULL;
    while (s->taking_count) {
        struct arc_run *r = s->taking[--s->taking_count];
        if (r->entries && !into) {
            into = r;
            continue;
        }
        if (r->entries && into->w.out.len + r->w.out.len <= s->cfg.run_bytes) {
            size_t before = into->w.out.len;
            arc_writer_merge(&into->w, &r->w);
            into->entries += r->entries;
            into->counted += into->w.out.len - before;
            s->unsaved += into->w.out.len - before;
        } else if (r->entries) {
            queue_push(s, r);
            continue;
        }
        s->unsaved -= r->counted;
        run_free(r);
    }
    if (into)
        queue_push(s, into);
    struct list *first;
    while ((first = list_first(&s->queue))) {
        list_remove(first);
        save_one(s, list_entry(first, struct arc_run, link), true);
    }
    struct arc_store_stats st = s->stats;
    pthread_mutex_unlock(&s->lock);
    st.look_ns = atomic_load(&s->look_ns);
    if (summary)
        snprintf(summary, cap,
                 "archive: %s: %llu entries added (%llu notes), %llu not kept (over a bound), %llu not kept (the "
                 "folder is read-only); %u files skipped at open (not regular files, too large or unreadable); %u "
                 "run archives saved once each (%.2f MB), %u saves failed, %u run archives let go (%llu entries); "
                 "saver held back %u times; time: %.3f s looking up, %.3f s adding, %.3f s saving",
                 s->dir, (unsigned long long)st.added, (unsigned long long)st.notes,
                 (unsigned long long)st.over_bound, (unsigned long long)st.readonly_dropped, st.files_skipped,
                 st.saved, (double)st.saved_bytes / (1 << 20), st.saves_failed, st.let_go,
                 (unsigned long long)st.entries_let_go, st.saver_waits, (double)st.look_ns / 1e9,
                 (double)st.add_ns / 1e9, (double)st.save_ns / 1e9);
    for (uint32_t i = 0; i < s->file_count; i++) {
        arc_file_close(&s->files[i].file);
    }
    free(s->files);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->gate_lock);
    pthread_mutex_destroy(&s->lock);
    *s = (struct arc_store){0};
}
