/*
 * store.c: a context's archive folder. It resolves the folder for the
 * context's device pair, maps the archive files already there, looks
 * front-end entries up across them, gathers what this process compiles
 * into a run archive, and saves that run archive once, at close.
 *
 * KILN_ARCHIVE=0 turns it all off: nothing is read, written or logged. A
 * folder that cannot be used is one "NOT applied" line and kiln goes on
 * without an archive.
 *
 * Thread-safety: lookups read mapped files that never change after open;
 * adds take the store's lock (compile workers add concurrently).
 */
#define _GNU_SOURCE
#include "archive.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

static void load_files(struct arc_store *s, const char *folder)
{
    DIR *d = opendir(folder);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".arc"))
            continue;
        if (!vec_reserve((void **)&s->files, &s->file_cap, s->file_count + 1, sizeof *s->files))
            break;
        struct arc_store_file *f = &s->files[s->file_count];
        snprintf(f->name, sizeof f->name, "%s", e->d_name);
        char path[4096 + 512];
        snprintf(path, sizeof path, "%s/%s", folder, e->d_name);
        if (arc_map_open(&f->map, path) != KILN_OK) {
            log_warn("archive: %s", kiln_last_error());
            continue;
        }
        if (arc_file_open(&f->file, f->map.data, f->map.size, &s->device) != KILN_OK) {
            arc_map_close(&f->map);
            continue;
        }
        if (f->file.whole != ARC_HIT)
            log_info("archive: %s serves nothing: %s", e->d_name, arc_cause_name(f->file.whole));
        s->file_count++;
    }
    if (d)
        closedir(d);
}

kiln_result arc_store_open(struct arc_store *s, const kiln_caps *caps)
{
    *s = (struct arc_store){0};
    if (!env_flag("KILN_ARCHIVE", 1))
        return KILN_OK;   /* off: nothing read, written or logged */
    char root[3072];
    const char *dir = getenv("KILN_ARCHIVE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
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
    pair_folder(s->dir, sizeof s->dir, root, caps);
    if (mkdirs(s->dir) < 0) {
        log_warn("archive: NOT applied: %s", kiln_last_error());
        err_clear();
        return KILN_OK;
    }
    arc_device_from_caps(&s->device, caps);
    uint32_t cleaned = arc_clean_tmp(s->dir);
    if (cleaned)
        log_info("archive: removed %u temporary files of dead processes", cleaned);
    pthread_mutex_init(&s->lock, NULL);
    arc_writer_init(&s->run, &s->device);
    const char *ro = getenv("KILN_ARCHIVE_READONLY");
    for (const char *p = ro; p && *p;) {
        const char *colon = strchr(p, ':');
        size_t n = colon ? (size_t)(colon - p) : strlen(p);
        if (n) {
            char ro_root[3072], folder[4096];
            snprintf(ro_root, sizeof ro_root, "%.*s", (int)KILN_MIN(n, sizeof ro_root - 1), p);
            pair_folder(folder, sizeof folder, ro_root, caps);
            uint32_t before = s->file_count;
            load_files(s, folder);
            s->readonly_files += s->file_count - before;
        }
        p = colon ? colon + 1 : p + n;
    }
    load_files(s, s->dir);
    s->enabled = true;
    s->qa = env_flag("KILN_ARCHIVE_QA", 0);
    log_info("archive: %s: %u files (%u from read-only folders)", s->dir, s->file_count, s->readonly_files);
    return KILN_OK;
}

enum arc_cause arc_store_find(struct arc_store *s, enum arc_kind kind, const uint8_t hash[16], const void *key,
                              size_t key_len, const uint8_t **value, size_t *value_len)
{
    if (!s->enabled)
        return ARC_ABSENT;
    enum arc_cause best = ARC_ABSENT;
    for (uint32_t i = 0; i < s->file_count; i++) {
        enum arc_cause c = arc_file_find_hashed(&s->files[i].file, kind, hash, key, key_len, value, value_len);
        if (c == ARC_HIT)
            return c;
        if (c != ARC_ABSENT && best == ARC_ABSENT)
            best = c;
    }
    return best;
}

void arc_store_add(struct arc_store *s, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                   size_t value_len)
{
    if (!s->enabled)
        return;
    pthread_mutex_lock(&s->lock);
    arc_writer_add(&s->run, kind, key, key_len, value, value_len);
    s->added++;
    pthread_mutex_unlock(&s->lock);
}

void arc_store_close(struct arc_store *s, char *summary, size_t cap)
{
    if (summary && cap)
        summary[0] = 0;
    if (!s->enabled)
        return;
    double mb = 0;
    const char *saved = "nothing new to save";
    if (s->added) {
        const uint8_t *data;
        size_t len;
        char name[128];
        snprintf(name, sizeof name, "run-%ld-%llx.arc", (long)getpid(),
                 (unsigned long long)(time_now_ns() ^ (uintptr_t)s));
        if (arc_writer_close(&s->run, &data, &len) == KILN_OK && arc_save(s->dir, name, data, len) == KILN_OK) {
            mb = (double)len / (1 << 20);
            saved = "run archive saved";
        } else {
            log_warn("archive: run archive not saved: %s (its entries compile again next time)", kiln_last_error());
            saved = "run archive save FAILED";
        }
    }
    if (summary)
        snprintf(summary, cap, "archive: %s: %llu entries added, %s (%.2f MB)", s->dir, (unsigned long long)s->added,
                 saved, mb);
    arc_writer_finish(&s->run);
    for (uint32_t i = 0; i < s->file_count; i++) {
        arc_file_close(&s->files[i].file);
        arc_map_close(&s->files[i].map);
    }
    free(s->files);
    pthread_mutex_destroy(&s->lock);
    *s = (struct arc_store){0};
}
