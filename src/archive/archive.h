/* SPDX-License-Identifier: MIT */
/*
 * archive: kiln's pipeline archive on disk: the file format (format.c),
 * what each kind of entry holds (entry.c), crash-safe saving (save.c),
 * tidying a folder (tidy.c) and a context's archive folder with its run
 * archives and saver thread (store.c).
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
 *
 * Bytes: every record (header, entry head, index row, footer) and every
 * entry kind's key and value has one encoder on the byte writer and one
 * decoder on the bounds-checked reader (base/bytes.h); nothing is read at
 * a hand-computed offset, and no struct is copied to disk as it lies in
 * memory. The format version covers them all: a change to any record, to
 * an entry kind's encoding or to a struct an encoding mirrors (the program
 * interface) bumps ARC_FORMAT_VERSION, so files written before are counted
 * as another version's (a stale miss), never misread.
 */
#ifndef KILN_ARCHIVE_H
#define KILN_ARCHIVE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "base/thread.h"
#include "base/list.h"

/* 2: the program interface in front-end entries written field by field
 * (it was the struct's bytes); records and notes unchanged. */
#define ARC_FORMAT_VERSION 10   /* 9: the interface's push_float_words; 10: its bindings' image_arrayed, image_cube */
#define ARC_HEADER_SIZE 64
#define ARC_ENTRY_HEAD_SIZE 48
#define ARC_INDEX_ROW_SIZE 32
#define ARC_FOOTER_SIZE 32
#define ARC_MAX_KEY (64u << 20)     /* sizes declared past these are corrupt, not allocated */
#define ARC_MAX_VALUE (1ull << 32)
/* The largest archive file kiln reads (16 GiB): larger than any it writes (a
 * run archive stops taking entries at its bound, 64 MiB by default, and one
 * entry is at most ARC_MAX_KEY + ARC_MAX_VALUE; compaction merges at most
 * this many bytes of sources into one pack). A larger file is refused
 * unread. */
#define ARC_MAX_FILE (16ull << 30)
/* Archive files this small are read whole at open (arc_file_open_path). */
#define ARC_READ_WHOLE (8u << 20)

enum arc_kind { ARC_FRONT = 1, ARC_BACK = 2, ARC_NOTE = 3 };

/* Why a lookup found nothing usable. */
enum arc_cause {
    ARC_HIT = 0,
    ARC_ABSENT,           /* no entry with this key */
    ARC_DEVICE_MISMATCH,  /* the file serves another device pair */
    ARC_CORRUPT,          /* bad magic, bounds or checksum */
    ARC_VERSION,          /* another format version */
    ARC_NEVER_HITS,       /* not asked: the driver keeps no compiled code in pipeline caches */
    ARC_OVER_BOUND,       /* compiled, but not kept: past a run archive bound */
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
/* Appends every entry of src (not closed) to dst (not closed). */
void arc_writer_merge(struct arc_writer *dst, const struct arc_writer *src);
/* Appends the index and footer. On success *data and *len give the whole file
 * (owned by the writer until arc_writer_finish). */
KILN_NODISCARD kiln_result arc_writer_close(struct arc_writer *w, const uint8_t **data, size_t *len);
void arc_writer_finish(struct arc_writer *w);

/* ---- reading ------------------------------------------------------------------ */

struct arc_file {
    const uint8_t *data;      /* held in memory: borrowed (the caller keeps it alive and unchanged), or owned */
    uint8_t *owned;           /* data when the file read it whole (arc_file_open_path), freed at close */
    int fd;                   /* on disk: the file's descriptor, owned (-1 in memory) */
    bool on_disk;             /* read with pread on fd, never mapped */
    size_t size;              /* its size when opened */
    enum arc_cause whole;     /* ARC_HIT when the header is good, else why the file serves nothing */
    bool indexed;             /* the footer and index checked out */
    bool salvaged;            /* scanned: the tail was cut or the index bad */
    bool oom;                 /* listing ran out of memory (arc_file_open then fails) */
    struct arc_entry_ref { uint32_t kind; uint64_t offset; uint8_t key_hash[16]; } *refs;
    uint32_t ref_count;
};

/* Opens an archive held in memory. Never fails on content: a bad file
 * opens with file->whole saying why it serves nothing. Fails only when out
 * of memory for its entry list. */
KILN_NODISCARD kiln_result arc_file_open(struct arc_file *f, const void *data, size_t size,
                                         const struct arc_device *dev);

/* Opens the archive file at path to read it where it lies, through a
 * descriptor the file keeps (closed by arc_file_close), with pread: never
 * mapped, so a file cut, rewritten or replaced under a running process
 * (`cp` over it truncates it first) makes lookups miss, counted as
 * ARC_CORRUPT, and never raises SIGBUS. Only the header, footer and index
 * are read here (a file with no good index is scanned once). A file of at
 * most ARC_READ_WHOLE bytes (most run archives) is read whole instead and
 * served from memory: no system call per lookup, and nothing done to the
 * file afterwards changes what it serves. The file is
 * opened without blocking (O_NONBLOCK: a FIFO or device planted under an
 * archive name never hangs the opener) and checked before a byte is read:
 * anything but a regular file fails with KILN_ERR_IO ("not a regular
 * file"), a file past ARC_MAX_FILE with KILN_ERR_LIMIT; each message names
 * the path. A symbolic link is followed when follow says so (read-only
 * folders: shipped archives may be links), else refused by name
 * (KILN_ERR_IO, "is a symbolic link": the folder kiln writes). Content
 * never fails the call, as for arc_file_open. */
KILN_NODISCARD kiln_result arc_file_open_path(struct arc_file *f, const char *path, const struct arc_device *dev,
                                              bool follow);
void arc_file_close(struct arc_file *f);

/* Checks an archive's header alone (its first ARC_HEADER_SIZE bytes of
 * size): ARC_CORRUPT when it is no kiln archive (short, bad magic or
 * checksum), ARC_VERSION for another format version, ARC_DEVICE_MISMATCH
 * when it serves another device pair than dev, else ARC_HIT. dev NULL:
 * the device pair is not judged. */
enum arc_cause arc_header_check(const void *data, size_t size, const struct arc_device *dev);

/* Looks an entry up by kind and key (hash found, then full key compared).
 * On ARC_HIT, *value and *value_len point into the file's bytes (held in
 * memory) or into buf, which an on-disk file's entry is read into: buf is
 * the caller's (zero-initialized, grown here, free() its p when done), and
 * the value lasts until buf is used again (NULL will do for a file held
 * in memory). Lookups of one file from several threads each pass a buffer
 * of their own. */
enum arc_cause arc_file_find(const struct arc_file *f, enum arc_kind kind, const void *key, size_t key_len,
                             struct bytes *buf, const uint8_t **value, size_t *value_len);

/* The same, with the key's hash128 already at hand. */
enum arc_cause arc_file_find_hashed(const struct arc_file *f, enum arc_kind kind, const uint8_t hash[16],
                                    const void *key, size_t key_len, struct bytes *buf, const uint8_t **value,
                                    size_t *value_len);

/* Checks every entry; counts by cause (counts[ARC_HIT] = good entries). */
void arc_file_verify(const struct arc_file *f, uint64_t counts[ARC_CAUSE_COUNT]);

/* The i-th entry of the file (its index, or what salvage kept), checked as
 * lookups check it (bounds, head, checksum): ARC_HIT with *kind, *key and
 * *value pointing into the file's bytes or buf, as arc_file_find says;
 * ARC_CORRUPT when the entry fails a check; ARC_ABSENT when i >= ref_count;
 * f->whole when the file serves nothing. Outputs are set only on ARC_HIT. */
enum arc_cause arc_file_entry(const struct arc_file *f, uint32_t i, struct bytes *buf, uint32_t *kind,
                              const uint8_t **key, size_t *key_len, const uint8_t **value, size_t *value_len);

/* ---- entry kinds: one codec each (entry.c) ------------------------------------------ */

/*
 * The archive's records check that an entry is whole (bounds, checksums);
 * what its key and value mean is its kind's, and each kind has exactly one
 * encoder and one decoder, here. Every reader of an entry's value goes
 * through its kind's decoder, which checks every field it reads (bounds
 * through the reader, ranges by hand) and says why it refuses a value: a
 * refused value is a counted miss (ARC_CORRUPT) with that reason, never a
 * crash and never a half-read value.
 */
#define ARC_WHY_LEN 160   /* a decoder's reason, NUL included */
/* The most words a program's own push-constant block may declare in an
 * interface (64 KiB: more than any device takes). */
#define ARC_MAX_PUSH_WORDS 16384u

/* The program interface (kiln_program_interface) on disk, every field at a
 * fixed width, little-endian, in the struct's order:
 *   binding_count u32, then per binding (binding_count of them): set u32,
 *   binding u32, kind u32, access u32, min_size u64, name 64 bytes, count
 *   u32, format u32 (format 6), image_dims u32 (format 8), image_arrayed u32
 *   and image_cube u32 (format 10: 0 or 1, an image's only; a cube's dims 2);
 *   push_constant_size u32, workgroup_size 3 x u32, spirv_words u32,
 *   entry 64 bytes, params_read u64 (format 5), lens_read u32, groups_read u32.
 * Strings are fixed fields ending in a NUL (base/bytes.h). Reading checks
 * ranges: binding_count <= KILN_MAX_BINDINGS; each binding's kind one of
 * kiln_binding_kind, set below KILN_MAX_SETS, count at least 1 and all
 * counts at most KILN_MAX_DESCRIPTORS, format 0 or (a storage texel
 * buffer's or storage image's) a kiln_format, image_dims (format 8: a u32
 * after format) 1, 2 or 3 for an image kind and 0 for the others, access only
 * kiln_access bits, name NUL-terminated;
 * bindings in strictly increasing (set, binding) order; entry
 * NUL-terminated; params_read within KILN_PARAM_WORDS bits, lens_read
 * within KILN_MAX_BINDINGS bits; groups_read 0 or 1. Bindings past
 * binding_count read back as zeros. Then (format 7) the specialization
 * constants: constant_count u32 (at most KILN_MAX_SPEC_CONSTANTS) and per
 * constant id u32, type u32 (a kiln_scalar_type), default_value u64, value
 * u64 (each within its type's bits; value the default unless set), set
 * u32, used u32 (0 or 1), workgroup_axis u32 (0..3), name 64 bytes
 * (NUL-terminated), in (id, workgroup_axis) order. Then (format 9)
 * push_float_words u64 (within param_words bits). A field added to the
 * struct is added to both functions, and the format version bumped
 * (entry.c asserts the struct's layout against it). */
void arc_iface_put(struct bytes *out, const kiln_program_interface *iface);
/* Reads an interface; false (why set) on overrun or a value out of range.
 * *iface is fully written either way (zeros on failure). */
bool arc_iface_read(struct bytes_reader *r, kiln_program_interface *iface, char why[ARC_WHY_LEN]);

/*
 * ARC_FRONT: a program's front end.
 *   key    its canonical front-end request (ckey_front): opaque here,
 *          compared whole
 *   value  magic "KFE2" (u32), the interface (arc_iface_put), the log's
 *          length (u32) and bytes, then the SPIR-V to the end, as u32
 *          words: at least its 5-word header, its magic number first, as
 *          many words as the interface's spirv_words
 */
#define ARC_FRONT_MAGIC 0x3245464bu   /* "KFE2" */
struct arc_front {
    kiln_program_interface iface;
    const char *log;             /* log_len bytes inside the value (borrowed), not NUL-terminated */
    size_t log_len;
    const uint8_t *spirv;        /* words little-endian words inside the value (borrowed, maybe unaligned) */
    size_t words;
};
/* Appends the value of a front end to out (check out->oom after). log NULL
 * is an empty log; the bytes are copied. */
void arc_front_encode(struct bytes *out, const kiln_program_interface *iface, const char *log,
                      const uint32_t *spirv, size_t words);
/* Decodes a front end's value; false (why set) when it does not hold up.
 * On success out's pointers point into value. */
bool arc_front_decode(const uint8_t *value, size_t len, struct arc_front *out, char why[ARC_WHY_LEN]);
/* Copies a decoded front end's SPIR-V (f->words words) into words. */
void arc_front_spirv(const struct arc_front *f, uint32_t *words);

/*
 * ARC_BACK: a pipeline's back end.
 *   key    its canonical back-end request (ckey_back): opaque here
 *   value  the data of a pipeline cache that compiled just that pipeline,
 *          as the driver gave it (vkGetPipelineCacheData), kept whole: its
 *          own encoding, and the driver is its decoder (Vulkan,
 *          VkPipelineCacheCreateInfo: "If the pipeline cache data is
 *          incompatible ... with the device, the pipeline cache will be
 *          initially empty"; kiln then compiles)
 * The archive's decoder refuses only what cannot hold a pipeline: no more
 * than a pipeline cache's 32-byte header (ARC_BACK_HEADER).
 */
#define ARC_BACK_HEADER 32
bool arc_back_decode(const uint8_t *value, size_t len, char why[ARC_WHY_LEN]);

/*
 * ARC_NOTE: a note about a program, for precompile's order.
 *   key    what (u32: ARC_NOTE_USED or ARC_NOTE_SLOW), then the hash128 of
 *          the program's front-end key (16 bytes): ARC_NOTE_KEY_LEN bytes
 *   value  what again (u32), words (u32), noted_ns (u64), seconds (f64),
 *          name (64 bytes, NUL-terminated)
 */
#define ARC_NOTE_USED 0x31554e4bu    /* "KNU1": the program was used on this device */
#define ARC_NOTE_SLOW 0x31534e4bu    /* "KNS1": its compile ran past the slow threshold */
#define ARC_NOTE_KEY_LEN 20
struct arc_note {
    uint32_t what;               /* ARC_NOTE_USED or ARC_NOTE_SLOW */
    uint8_t front_hash[16];      /* hash128 of the program's front-end key */
    uint32_t words;              /* its SPIR-V words */
    uint64_t noted_ns;           /* CLOCK_MONOTONIC is per boot: orders the notes of one file only */
    double seconds;              /* a slow compile's time */
    char name[64];               /* the program's name (cut to 63 bytes) */
};
/* Appends a note's key to key and its value to value (check their oom). */
void arc_note_encode(const struct arc_note *n, struct bytes *key, struct bytes *value);
/* Decodes a note from its key and value; false (why set) when they do not
 * hold up. */
bool arc_note_decode(const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, struct arc_note *out,
                     char why[ARC_WHY_LEN]);

/* ---- files ------------------------------------------------------------------------ */

/*
 * Saving a file: written to "<name>.<pid>.tmp" (created exclusively), each
 * chunk written, fsync'd, closed, renamed over "<name>", then the folder
 * fsync'd. A crash at any step leaves either the old state or the whole new
 * file, plus perhaps a .tmp that arc_clean_tmp removes later. Each step goes
 * through one fault step, which test builds (KILN_TEST_HOOKS) let tests use
 * to kill the process or make the step fail there.
 */
#ifdef KILN_TEST_HOOKS
enum arc_fault { ARC_FAULT_NONE = 0, ARC_FAULT_KILL, ARC_FAULT_ENOSPC, ARC_FAULT_EIO };
/* From now on, the `step`th save step (1-based, counted over all saves of
 * the process) does `fault`. */
void arc_fault_set(enum arc_fault fault, uint32_t step);
/* Save steps taken so far (tests size their loops with it). */
uint32_t arc_fault_steps(void);
#endif

/* Saves data as dir/name. On failure the message names the step and the
 * system's reason, and no .tmp is left behind (when the process lives).
 * dir is opened once without following a link (a folder that is a
 * symbolic link is refused by name), and the .tmp, the rename and the
 * folder's fsync all go through that descriptor, so nothing is written
 * through a link. */
KILN_NODISCARD kiln_result arc_save(const char *dir, const char *name, const void *data, size_t len);

/* Removes .tmp files left in dir by processes no longer running; returns how
 * many. A dir that is a symbolic link is left alone (nothing removed). */
uint32_t arc_clean_tmp(const char *dir);

/* Opens path to read an archive file (base's bounded open: without
 * blocking, a regular file only, at most max_bytes, capped at
 * ARC_MAX_FILE; a link followed only when follow): KILN_OK with *fd (the
 * caller closes it) and *size; KILN_ERR_LIMIT past the bound, KILN_ERR_IO
 * otherwise, each naming the path. */
KILN_NODISCARD kiln_result arc_open_bounded(const char *path, uint64_t max_bytes, bool follow, int *fd,
                                            uint64_t *size);

/* A whole file read into memory (compaction's sources, which are small). */
struct arc_loaded {
    uint8_t *data;               /* owned; NULL for an empty file */
    size_t size;                 /* the bytes read: fewer than its size at open when it was cut meanwhile */
};
/* Reads the file at path whole, opened and checked as arc_file_open_path
 * opens and checks it (same errors; a symbolic link is refused: only
 * folders kiln writes load files), and refused with KILN_ERR_LIMIT past
 * max_bytes. A file cut while it is read loads what was there; a read
 * error fails with KILN_ERR_IO naming the path. */
KILN_NODISCARD kiln_result arc_load(struct arc_loaded *l, const char *path, uint64_t max_bytes);
void arc_loaded_free(struct arc_loaded *l);

/* ---- tidying a folder ------------------------------------------------------------- */

/*
 * A folder grows by one run archive per process that compiled something.
 * Tidying keeps it bounded: gc removes whole files, least recently used
 * first; compaction merges many small files into one pack. Both take an
 * exclusive, non-blocking flock on "<dir>/.tidy.lock" (created if missing),
 * so one process tidies a folder at a time and others skip it. Neither
 * reads nor removes ".tmp" files (saves in progress; arc_clean_tmp removes
 * dead ones). Files other processes have open may be removed: their
 * descriptors stay valid. A file that vanishes meanwhile (another process
 * removed it) is not an error.
 */
struct arc_tidy_result {
    uint32_t files_before, files_after;   /* the folder's .arc files */
    uint64_t bytes_before, bytes_after;
    uint32_t removed;             /* files removed as least recently used (gc) */
    uint32_t merged;              /* small files merged into one and removed (compact) */
    uint64_t entries_kept;        /* entries written into the merged file */
    uint64_t duplicates_dropped;  /* entries another merged file (or the same one) already had */
    uint64_t bad_dropped;         /* entries that failed their checks, or files serving nothing */
    bool busy;                    /* another process was tidying the folder: nothing done */
};

/* Removes whole .arc files of dir until its .arc files total at most
 * max_bytes: first those that serve nothing (kiln cannot open or read them,
 * or their header is no kiln archive's; counted in bad_dropped too), then
 * the least recently used (oldest mtime; arc_touch marks a use). Files of
 * another format version count as any other.
 * *out is filled (zeroed first) whether or not the call fails; busy set
 * with KILN_OK when another process holds the tidy lock. Fails with
 * KILN_ERR_IO naming the path and the system's reason when the folder
 * cannot be read or a file cannot be removed. dir is borrowed. */
KILN_NODISCARD kiln_result arc_gc(const char *dir, uint64_t max_bytes, struct arc_tidy_result *out);

/* When at least min_files (at least 2) small archives - "run-*.arc" and
 * "pack-*.arc" of at most small_bytes each - are in dir, merges them into
 * one new "pack-<pid>-<random hex>.arc" for device dev, then removes them.
 * Entries are deduplicated by kind and full key (the first one met is
 * kept); entries failing their checks are dropped, and a file whose header
 * is corrupt (serving nothing) is removed with them. Files of another
 * format version or device pair are left alone. The pack is written with
 * arc_save, so a crash leaves either no pack or a whole one; a crash
 * between the save and the removals leaves duplicates, which lookups
 * tolerate and the next compaction drops. The pack keeps the newest mtime
 * of its sources, so gc's order holds. *out as for arc_gc. Unreadable
 * sources are left alone with a warning. dir and dev are borrowed. */
KILN_NODISCARD kiln_result arc_compact(const char *dir, const struct arc_device *dev, uint64_t small_bytes,
                                       uint32_t min_files, struct arc_tidy_result *out);

/* Marks dir/name used now (sets its mtime), so gc removes it last. A link
 * there is not followed (its own time is set). Errors (a read-only folder,
 * a file gone) are ignored. */
void arc_touch(const char *dir, const char *name);

/* ---- a context's archive folder ---------------------------------------------------- */

struct arc_store_file {
    char name[256];
    struct arc_file file;        /* on disk: read with pread on the descriptor it keeps */
    bool readonly;               /* from a KILN_ARCHIVE_READONLY folder */
    _Atomic bool used;           /* served a hit in this process (the saver marks it used on disk) */
    bool touched;                /* the saver marked it (saver thread only) */
};

/* A run archive: entries this process compiled, saved once as one file. */
struct arc_run {
    struct arc_writer w;
    uint32_t entries;
    uint64_t counted;            /* its bytes counted in the store's unsaved (closing adds index and footer) */
    bool held;                   /* an adder is writing into it (without the store lock) */
    const uint8_t *data;         /* the whole file once closed (owned by w) */
    size_t len;
    uint32_t tries;              /* failed saves so far */
    uint64_t retry_ns;           /* its next save not before this time */
    struct list link;            /* in the store's save queue (under its lock) */
};

/* The run archives' bounds and the saver's rules. Defaults in
 * arc_store_config_default; tests shrink them. */
struct arc_store_config {
    uint64_t run_bytes;          /* a run archive takes entries until estimated at this (64 MiB) */
    uint32_t taking;             /* at most this many take entries at once (16) */
    uint64_t unsaved_bytes;      /* run archives not saved yet hold at most this (1 GiB) */
    uint64_t urgent_bytes;       /* the saver ignores its gate when this much waits (512 MiB) */
    double retry_s;              /* a failed save is tried once more this much later (5 s) */
    uint64_t max_size;           /* KILN_ARCHIVE_MAX_SIZE: the folder's bound (1 GiB) */
    uint64_t small_bytes;        /* run archives at most this big are compacted (8 MiB) ... */
    uint32_t compact_at;         /* ... once this many are in the folder (8) */
    double tidy_delay_s;         /* the saver tidies the folder this long after open (2 s): short-lived
                                  * contexts (the CLI's archive commands) leave it as it is */
    /* The context desc's settings; 0 or NULL: the environment variable
     * decides (KILN_ARCHIVE, KILN_ARCHIVE_DIR, KILN_ARCHIVE_READONLY,
     * KILN_ARCHIVE_QA), read at open. */
    int enabled;                 /* 1 on, -1 off */
    const char *dir;             /* the root folder (borrowed for the open's length) */
    const char *readonly_roots;  /* ':'-separated; "" none (borrowed likewise) */
    int qa;                      /* 1 on, -1 off */
    struct trace *trace;         /* the context's trace (base/trace.h): loads and saves; NULL: none */
};
void arc_store_config_default(struct arc_store_config *cfg);

/* The saver's gate: true while the process is busy in a way a save would
 * slow (a giant compile in flight, the application submitting). Called on
 * the saver thread without the store's lock. */
typedef bool (*arc_gate_fn)(void *ud);

struct arc_store_stats {
    uint64_t added;              /* entries added to run archives */
    uint64_t over_bound;         /* entries not kept: every run archive busy or full, or too much unsaved */
    uint64_t notes;              /* notes added */
    uint32_t saved;              /* run archives saved */
    uint64_t saved_bytes;
    uint32_t saves_failed;       /* failed save attempts */
    uint32_t let_go;             /* run archives given up after two failed saves */
    uint64_t entries_let_go;
    uint32_t saver_waits;        /* times the saver held back for its gate */
    uint32_t files_skipped;      /* .arc files found at open and not used: not a regular file, past
                                  * ARC_MAX_FILE, unreadable (each warned about by path) */
    uint64_t readonly_dropped;   /* entries not kept: the folder is read-only */
    uint64_t look_ns, add_ns, save_ns;
};

struct arc_store {
    bool enabled;                /* false: KILN_ARCHIVE=0 or the folder is unusable */
    bool dir_readonly;           /* the folder can be read, not written: lookups only, no saver */
    char dir[4096];              /* the device pair's folder */
    struct arc_device device;
    struct arc_store_config cfg;
    struct arc_store_file *files;   /* opened at open; the list never changes after; read-only folders' first */
    uint32_t file_count, file_cap;
    uint32_t readonly_files;     /* how many of files come from KILN_ARCHIVE_READONLY folders */
    bool qa;                     /* KILN_ARCHIVE_QA: every compile the archive lacked is named and fails the run */
    /* The driver keeps no compiled code in a pipeline cache (lavapipe):
     * back-end entries are neither kept nor looked up. Set once. */
    _Atomic bool back_never_hits;
    _Atomic uint64_t look_ns;    /* time spent in lookups (lock-free) */

    pthread_mutex_t lock;        /* guards everything below */
    pthread_cond_t wake;         /* the saver: a run archive is full, a file was used, or stop */
    struct arc_run *taking[64];  /* run archives taking entries (cfg.taking of them at most) */
    uint32_t taking_count;
    struct list queue;           /* full run archives waiting for the saver (struct arc_run, by link) */
    struct arc_run *saving;      /* the one the saver writes now */
    uint64_t unsaved;            /* bytes held by run archives not saved yet (taking, queued, saving) */
    uint64_t last_save_ns;       /* the process's last save (names stay unique) */
    bool stopping;
    struct kthread saver;
    bool files_used;             /* a file's used flag was set since the saver looked */
    uint64_t open_ns;
    struct arc_store_stats stats;

    pthread_mutex_t gate_lock;   /* guards gate and gate_ud; held while the gate runs */
    arc_gate_fn gate;
    void *gate_ud;
};

/* Opens the archive folder of a device pair (KILN_ARCHIVE, KILN_ARCHIVE_DIR,
 * else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), and the same device
 * pair's folders under each KILN_ARCHIVE_READONLY=dir[:dir] root (archives
 * shipped with an application: looked up first, never written). Never
 * fails: an unusable folder is logged once as NOT applied and the store
 * stays disabled; one that can be read but not written opens read-only
 * (dir_readonly: lookups only; adds are counted as not kept). Files that
 * cannot be used (not regular files, past ARC_MAX_FILE, unreadable) are
 * skipped, warned about by path and counted; opening never blocks on one.
 * cfg NULL: the defaults (and KILN_ARCHIVE_MAX_SIZE). The
 * saver thread starts here; it first tidies the folder (compacts small run
 * archives, removes least recently used files past max_size) when its gate
 * allows. */
KILN_NODISCARD kiln_result arc_store_open(struct arc_store *s, const kiln_caps *caps,
                                          const struct arc_store_config *cfg);
/* Sets the saver's gate (NULL: none). Returns once the saver is not inside
 * the old gate, so its ud may be freed after. */
void arc_store_set_gate(struct arc_store *s, arc_gate_fn gate, void *ud);
/* An entry across the folder's files, by its key and the key's hash128
 * (computed once by the caller, not once per file); on ARC_HIT *value
 * points into buf (the caller's, zero-initialized; free() its p when
 * done), valid until buf is used again. A file cut or rewritten since open
 * makes its entries miss (ARC_CORRUPT), never a signal. Thread-safe (each
 * thread with a buffer of its own). */
enum arc_cause arc_store_find(struct arc_store *s, enum arc_kind kind, const uint8_t hash[16], const void *key,
                              size_t key_len, struct bytes *buf, const uint8_t **value, size_t *value_len);
/* Adds an entry (copied) to a run archive no other thread holds meanwhile.
 * Past a bound the entry is not kept: returns false and counts it.
 * Thread-safe. */
bool arc_store_add(struct arc_store *s, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                   size_t value_len);
/* Calls fn for every entry of `kind` that passes its checks, in every file
 * found at open (read-only folders' first); key and value are valid only
 * during the call (fn copies what it keeps). fn returns false to stop. */
void arc_store_each(struct arc_store *s, enum arc_kind kind,
                    bool (*fn)(void *ud, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len),
                    void *ud);
struct arc_store_stats arc_store_stats_get(struct arc_store *s);
/* Stops the saver (a save in progress ends first), saves every run archive
 * still open (one more try for one that failed once), and closes; summary
 * receives the close line. */
void arc_store_close(struct arc_store *s, char *summary, size_t cap);

#endif
