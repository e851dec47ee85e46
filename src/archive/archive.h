/*
 * archive: kiln's pipeline archive on disk. This part is the file format:
 * building an archive file in memory and reading one back without trusting
 * a byte of it. (Folders per device pair, run archives, the saver, lookups
 * from the compile service: see issue 4; they build on this.)
 *
 * A file is:
 *   header   64 bytes: magic "KILNARC\0", format version, header size, the
 *            device pair it serves (pipeline-cache UUID, driver version,
 *            vendor and device ids, XXH3-64 of the device name), flags,
 *            XXH3-64 of the header's first 56 bytes
 *   entries  each: a 48-byte record head (magic "KENT", kind, key length,
 *            value length, XXH3-128 of the key, XXH3-64 of key and value)
 *            then the key and the value, padded to 8 bytes
 *   index    one 32-byte row per entry (kind, offset, XXH3-128 of the key)
 *   footer   32 bytes: magic "KILNIDX\0", index offset, entry count,
 *            XXH3-64 of the index
 *
 * Reading: the header must match magic, version and device pair; the index
 * is used when the footer and the index check out, else the entries are
 * scanned from the start and every whole, valid entry is kept (a truncated
 * tail loses only itself). Entries are checked when looked up (bounds, head,
 * checksum), never trusted: a bad one is a counted miss with its cause.
 */
#ifndef KILN_ARCHIVE_H
#define KILN_ARCHIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define ARC_FORMAT_VERSION 1
#define ARC_HEADER_SIZE 64
#define ARC_ENTRY_HEAD_SIZE 48
#define ARC_INDEX_ROW_SIZE 32
#define ARC_FOOTER_SIZE 32
#define ARC_MAX_KEY (64u << 20)     /* sizes declared past these are corrupt, not allocated */
#define ARC_MAX_VALUE (1ull << 32)

enum arc_kind { ARC_FRONT = 1, ARC_BACK = 2, ARC_NOTE = 3 };

/* Why a lookup found nothing usable. */
enum arc_cause {
    ARC_HIT = 0,
    ARC_ABSENT,           /* no entry with this key */
    ARC_DEVICE_MISMATCH,  /* the file serves another device pair */
    ARC_CORRUPT,          /* bad magic, bounds or checksum */
    ARC_VERSION,          /* another format version */
    ARC_NEVER_HITS,       /* not asked: the driver keeps no compiled code in pipeline caches */
    ARC_CAUSE_COUNT
};
const char *arc_cause_name(enum arc_cause c);

/* The device pair an archive serves. */
struct arc_device {
    uint8_t cache_uuid[16];
    uint32_t driver_version;
    uint32_t vendor_id, device_id;
    uint64_t name_hash;       /* XXH3-64 of the device name */
};
void arc_device_from_caps(struct arc_device *d, const kiln_caps *caps);

/* ---- writing ----------------------------------------------------------------- */

struct arc_writer {
    struct bytes out;            /* the file so far */
    struct arc_row { uint32_t kind; uint64_t offset; uint8_t key_hash[16]; } *rows;
    uint32_t row_count, row_cap;
};

void arc_writer_init(struct arc_writer *w, const struct arc_device *dev);
/* Appends an entry; the bytes are copied. */
void arc_writer_add(struct arc_writer *w, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                    size_t value_len);
/* Appends the index and footer. On success *data and *len give the whole file
 * (owned by the writer until arc_writer_finish). */
KILN_NODISCARD kiln_result arc_writer_close(struct arc_writer *w, const uint8_t **data, size_t *len);
void arc_writer_finish(struct arc_writer *w);

/* ---- reading ------------------------------------------------------------------ */

struct arc_file {
    const uint8_t *data;      /* borrowed: the caller keeps it alive and unchanged */
    size_t size;
    enum arc_cause whole;     /* ARC_HIT when the header is good, else why the file serves nothing */
    bool indexed;             /* the footer and index checked out */
    bool salvaged;            /* scanned: the tail was cut or the index bad */
    struct arc_entry_ref { uint32_t kind; uint64_t offset; uint8_t key_hash[16]; } *refs;
    uint32_t ref_count;
};

/* Opens an archive held in memory (a mapped file). Never fails on content:
 * a bad file opens with file->whole saying why it serves nothing. */
KILN_NODISCARD kiln_result arc_file_open(struct arc_file *f, const void *data, size_t size,
                                         const struct arc_device *dev);
void arc_file_close(struct arc_file *f);

/* Looks an entry up by kind and key (hash found, then full key compared).
 * On ARC_HIT, *value and *value_len point into the file's bytes. */
enum arc_cause arc_file_find(const struct arc_file *f, enum arc_kind kind, const void *key, size_t key_len,
                             const uint8_t **value, size_t *value_len);

/* The same, with the key's hash128 already at hand. */
enum arc_cause arc_file_find_hashed(const struct arc_file *f, enum arc_kind kind, const uint8_t hash[16],
                                    const void *key, size_t key_len, const uint8_t **value, size_t *value_len);

/* Checks every entry; counts by cause (counts[ARC_HIT] = good entries). */
void arc_file_verify(const struct arc_file *f, uint64_t counts[ARC_CAUSE_COUNT]);

/* ---- files ------------------------------------------------------------------------ */

/*
 * Saving a file: written to "<name>.<pid>.tmp" (created exclusively), each
 * chunk written, fsync'd, closed, renamed over "<name>", then the folder
 * fsync'd. A crash at any step leaves either the old state or the whole new
 * file, plus perhaps a .tmp that arc_clean_tmp removes later. Each step goes
 * through arc_fault_step, the hook tests use to kill the process or make the
 * step fail there.
 */
enum arc_fault { ARC_FAULT_NONE = 0, ARC_FAULT_KILL, ARC_FAULT_ENOSPC, ARC_FAULT_EIO };
/* From now on, the `step`th save step (1-based, counted over all saves of
 * the process) does `fault`. */
void arc_fault_set(enum arc_fault fault, uint32_t step);
/* Save steps taken so far (tests size their loops with it). */
uint32_t arc_fault_steps(void);

/* Saves data as dir/name. On failure the message names the step and the
 * system's reason, and no .tmp is left behind (when the process lives). */
KILN_NODISCARD kiln_result arc_save(const char *dir, const char *name, const void *data, size_t len);

/* Removes .tmp files left in dir by processes no longer running; returns how
 * many. */
uint32_t arc_clean_tmp(const char *dir);

/* A file mapped read-only. */
struct arc_map {
    void *data;
    size_t size;
};
KILN_NODISCARD kiln_result arc_map_open(struct arc_map *m, const char *path);
void arc_map_close(struct arc_map *m);

/* ---- a context's archive folder ---------------------------------------------------- */

struct arc_store_file {
    char name[256];
    struct arc_map map;
    struct arc_file file;
};

struct arc_store {
    bool enabled;                /* false: KILN_ARCHIVE=0 or the folder is unusable */
    char dir[4096];              /* the device pair's folder */
    struct arc_device device;
    struct arc_store_file *files;   /* mapped at open; never change after; read-only folders' first */
    uint32_t file_count, file_cap;
    uint32_t readonly_files;     /* how many of files come from KILN_ARCHIVE_READONLY folders */
    pthread_mutex_t lock;        /* guards run and added */
    struct arc_writer run;       /* this process's run archive */
    uint64_t added;
    /* The driver keeps no compiled code in a pipeline cache (lavapipe):
     * back-end entries are neither kept nor looked up. Set once. */
    _Atomic bool back_never_hits;
    bool qa;                     /* KILN_ARCHIVE_QA: every compile the archive lacked is named and fails the run */
};

/* Opens the archive folder of a device pair (KILN_ARCHIVE, KILN_ARCHIVE_DIR,
 * else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), and the same device
 * pair's folders under each KILN_ARCHIVE_READONLY=dir[:dir] root (archives
 * shipped with an application: looked up first, never written). Never
 * fails: an unusable folder is logged once as NOT applied and the store
 * stays disabled. */
KILN_NODISCARD kiln_result arc_store_open(struct arc_store *s, const kiln_caps *caps);
/* An entry across the folder's files, by its key and the key's hash128
 * (computed once by the caller, not once per file); on ARC_HIT *value
 * points into a mapped file valid until arc_store_close. Thread-safe. */
enum arc_cause arc_store_find(struct arc_store *s, enum arc_kind kind, const uint8_t hash[16], const void *key,
                              size_t key_len, const uint8_t **value, size_t *value_len);
/* Adds an entry to this process's run archive (copied). Thread-safe. */
void arc_store_add(struct arc_store *s, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                   size_t value_len);
/* Saves the run archive (once) and closes; summary receives the close line. */
void arc_store_close(struct arc_store *s, char *summary, size_t cap);

#endif
