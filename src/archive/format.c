/* SPDX-License-Identifier: MIT */
/*
 * format.c: the archive file format (see archive.h): a writer that builds a
 * whole file in memory, and a reader that checks every byte it uses.
 *
 * Each record (header, entry head, index row, footer) has one encoder on
 * the byte writer and one decoder on the bounds-checked reader
 * (base/bytes.h): numbers are little-endian, and every length a file
 * declares is read through the reader, which compares it with the bytes
 * actually there (by subtraction, so huge declared sizes cannot wrap). What
 * an entry's key and value mean is its kind's codec's (entry.c); here they
 * are bytes checked whole by their hashes.
 */
#define _GNU_SOURCE
#include "archive.h"

#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static const uint8_t HEAD_MAGIC[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'C', 0};
static const uint8_t FOOT_MAGIC[8] = {'K', 'I', 'L', 'N', 'I', 'D', 'X', 0};
#define ENTRY_MAGIC 0x544e454bu   /* "KENT" */

_Static_assert(ARC_MAX_FILE <= SIZE_MAX, "an archive file's offsets and sizes are size_t: it needs a 64-bit size_t");

const char *arc_cause_name(enum arc_cause c)
{
    switch (c) {
    case ARC_HIT: return "hit";
    case ARC_ABSENT: return "absent";
    case ARC_DEVICE_MISMATCH: return "device mismatch";
    case ARC_CORRUPT: return "corrupt";
    case ARC_VERSION: return "format version";
    case ARC_NEVER_HITS: return "driver never hits";
    case ARC_OVER_BOUND: return "over a bound";
    case ARC_CAUSE_COUNT: break;
    }
    return "?";
}

void arc_device_from_caps(struct arc_device *d, const kiln_caps *caps)
{
    *d = (struct arc_device){.driver_version = caps->driver_version,
                             .vendor_id = caps->vendor_id,
                             .device_id = caps->device_id,
                             .name_hash = XXH3_64bits(caps->device_name, strlen(caps->device_name))};
    memcpy(d->cache_uuid, caps->pipeline_cache_uuid, 16);
}

static uint64_t entry_sum(const void *key, size_t klen, const void *value, size_t vlen)
{
    return XXH3_64bits_withSeed(value, vlen, XXH3_64bits(key, klen));
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---- the records: one encoder and one decoder each ------------------------------------ */

/* The header: magic, version, header size, the device pair, flags (none
 * defined: 0), then XXH3-64 of the 56 bytes before. */
#define HEADER_SUMMED 56

static void header_put(struct bytes *b, const struct arc_device *dev)
{
    size_t at = b->len;
    bytes_put(b, HEAD_MAGIC, sizeof HEAD_MAGIC);
    bytes_put_u32(b, ARC_FORMAT_VERSION);
    bytes_put_u32(b, ARC_HEADER_SIZE);
    bytes_put(b, dev->cache_uuid, sizeof dev->cache_uuid);
    bytes_put_u32(b, dev->driver_version);
    bytes_put_u32(b, dev->vendor_id);
    bytes_put_u32(b, dev->device_id);
    bytes_put_u32(b, 0);   /* flags */
    bytes_put_u64(b, dev->name_hash);
    if (!b->oom)
        bytes_put_u64(b, XXH3_64bits(b->p + at, HEADER_SUMMED));
    KILN_ASSERT(b->oom || b->len - at == ARC_HEADER_SIZE);
}

struct header {
    const uint8_t *magic;
    uint32_t version, size, flags;
    struct arc_device dev;
    uint64_t sum;
};

static bool header_read(struct bytes_reader *r, struct header *h)
{
    h->magic = bytes_read_span(r, sizeof HEAD_MAGIC);
    h->version = bytes_read_u32(r);
    h->size = bytes_read_u32(r);
    bytes_read_copy(r, h->dev.cache_uuid, sizeof h->dev.cache_uuid);
    h->dev.driver_version = bytes_read_u32(r);
    h->dev.vendor_id = bytes_read_u32(r);
    h->dev.device_id = bytes_read_u32(r);
    h->flags = bytes_read_u32(r);
    h->dev.name_hash = bytes_read_u64(r);
    h->sum = bytes_read_u64(r);
    return !r->overrun;
}

/* An entry's head: magic "KENT", kind, key and value lengths, XXH3-128 of
 * the key, XXH3-64 of key and value. */
struct head {
    uint32_t magic, kind;
    uint64_t key_len, value_len;
    uint8_t key_hash[16];
    uint64_t sum;
};

static void head_put(struct bytes *b, const struct head *h)
{
    bytes_put_u32(b, h->magic);
    bytes_put_u32(b, h->kind);
    bytes_put_u64(b, h->key_len);
    bytes_put_u64(b, h->value_len);
    bytes_put(b, h->key_hash, sizeof h->key_hash);
    bytes_put_u64(b, h->sum);
}

static bool head_read(struct bytes_reader *r, struct head *h)
{
    h->magic = bytes_read_u32(r);
    h->kind = bytes_read_u32(r);
    h->key_len = bytes_read_u64(r);
    h->value_len = bytes_read_u64(r);
    bytes_read_copy(r, h->key_hash, sizeof h->key_hash);
    h->sum = bytes_read_u64(r);
    return !r->overrun;
}

/* An index row: kind, 4 zero bytes, the entry's offset, its key's hash. */
static void row_put(struct bytes *b, const struct arc_row *row)
{
    bytes_put_u32(b, row->kind);
    bytes_put_u32(b, 0);
    bytes_put_u64(b, row->offset);
    bytes_put(b, row->key_hash, sizeof row->key_hash);
}

static bool row_read(struct bytes_reader *r, struct arc_row *row)
{
    row->kind = bytes_read_u32(r);
    (void)bytes_read_u32(r);
    row->offset = bytes_read_u64(r);
    bytes_read_copy(r, row->key_hash, sizeof row->key_hash);
    return !r->overrun;
}

/* The footer: magic, the index's offset and row count, XXH3-64 of the
 * index. */
struct footer {
    const uint8_t *magic;
    uint64_t index_at, count, sum;
};

static void footer_put(struct bytes *b, const struct footer *f)
{
    bytes_put(b, FOOT_MAGIC, sizeof FOOT_MAGIC);
    bytes_put_u64(b, f->index_at);
    bytes_put_u64(b, f->count);
    bytes_put_u64(b, f->sum);
}

static bool footer_read(struct bytes_reader *r, struct footer *f)
{
    f->magic = bytes_read_span(r, sizeof FOOT_MAGIC);
    f->index_at = bytes_read_u64(r);
    f->count = bytes_read_u64(r);
    f->sum = bytes_read_u64(r);
    return !r->overrun;
}

/* ---- writing ---------------------------------------------------------------------- */

void arc_writer_init(struct arc_writer *w, const struct arc_device *dev)
{
    *w = (struct arc_writer){0};
    header_put(&w->out, dev);
}

void arc_writer_add(struct arc_writer *w, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                    size_t value_len)
{
    if (key_len > ARC_MAX_KEY || value_len > ARC_MAX_VALUE ||
        !vec_reserve((void **)&w->rows, &w->row_cap, w->row_count + 1, sizeof *w->rows)) {
        w->out.oom = true;
        return;
    }
    struct head h = {.magic = ENTRY_MAGIC, .kind = (uint32_t)kind, .key_len = key_len, .value_len = value_len,
                     .sum = entry_sum(key, key_len, value, value_len)};
    hash128(key, key_len, h.key_hash);
    size_t at = w->out.len;
    head_put(&w->out, &h);
    bytes_put(&w->out, key, key_len);
    bytes_put(&w->out, value, value_len);
    bytes_put(&w->out, NULL, pad8(key_len + value_len) - (key_len + value_len));
    if (w->out.oom)
        return;
    struct arc_row *r = &w->rows[w->row_count++];
    r->kind = (uint32_t)kind;
    r->offset = at;
    memcpy(r->key_hash, h.key_hash, 16);
}

void arc_writer_merge(struct arc_writer *dst, const struct arc_writer *src)
{
    if (src->out.oom) {
        dst->out.oom = true;
        return;
    }
    size_t body = src->out.len - ARC_HEADER_SIZE;
    if (!vec_reserve((void **)&dst->rows, &dst->row_cap, dst->row_count + src->row_count, sizeof *dst->rows)) {
        dst->out.oom = true;
        return;
    }
    size_t at = dst->out.len;
    if (!bytes_put(&dst->out, src->out.p + ARC_HEADER_SIZE, body))
        return;
    for (uint32_t i = 0; i < src->row_count; i++) {
        struct arc_row r = src->rows[i];
        r.offset = r.offset - ARC_HEADER_SIZE + at;
        dst->rows[dst->row_count++] = r;
    }
}

kiln_result arc_writer_close(struct arc_writer *w, const uint8_t **data, size_t *len)
{
    size_t index_at = w->out.len;
    for (uint32_t i = 0; i < w->row_count; i++)
        row_put(&w->out, &w->rows[i]);
    if (w->out.oom)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory building an archive");
    struct footer f = {.index_at = index_at, .count = w->row_count,
                       .sum = XXH3_64bits(w->out.p + index_at, w->out.len - index_at)};
    footer_put(&w->out, &f);
    if (w->out.oom)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory building an archive");
    *data = w->out.p;
    *len = w->out.len;
    return KILN_OK;
}

void arc_writer_finish(struct arc_writer *w)
{
    free(w->out.p);
    free(w->rows);
    *w = (struct arc_writer){0};
}

/* ---- reading ------------------------------------------------------------------------ */

/* Reads len bytes at off: copied from a file held in memory, or read with
 * pread on the file's descriptor. False when they are not all there: past
 * the size the file had when opened, or in a file cut shorter since (as a
 * `cp` over it does): a read that comes up short is a miss, never a
 * signal, which a mapping could not promise. */
static bool read_at(const struct arc_file *f, uint64_t off, void *dst, size_t len)
{
    if (off > f->size || len > f->size - off)
        return false;
    if (!f->on_disk) {
        if (len)
            memcpy(dst, f->data + off, len);
        return true;
    }
    uint8_t *p = dst;
    while (len) {
        ssize_t n = pread(f->fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;   /* an error, or the end of a file cut since it was opened */
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return true;
}

/* The bytes [off, off + len) of the file: a pointer into a file held in
 * memory, or those bytes read into buf (grown as needed; its old contents
 * are lost). NULL when they are not all there or buf cannot grow. */
static const uint8_t *span_at(const struct arc_file *f, uint64_t off, size_t len, struct bytes *buf)
{
    if (off > f->size || len > f->size - off)
        return NULL;
    if (!f->on_disk)
        return f->data + off;
    if (!buf)
        return NULL;   /* a caller's slip: an on-disk file's entry has nowhere to go */
    if (buf->cap < len || !buf->p) {
        size_t cap = KILN_MAX(len, (size_t)4096);
        uint8_t *p = mem_realloc(buf->p, cap);
        if (!p)
            return NULL;
        buf->p = p;
        buf->cap = cap;
    }
    buf->len = len;
    return read_at(f, off, buf->p, len) ? buf->p : NULL;
}

/* An entry as entry_at found it: pointers into the file's bytes (held in
 * memory) or into the buffer it was read into. */
struct entry_view {
    uint32_t kind;
    const uint8_t *key, *value;
    size_t key_len, value_len;
    uint8_t key_hash[16];        /* as its head declares it (checked against the key) */
    uint64_t next;               /* where the next entry would start (at most the file's size) */
};

/* The entry at offset, checked: its head, bounds and checksums. Its key
 * and value are read into buf when the file is on disk. */
static bool entry_at(const struct arc_file *f, uint64_t offset, struct entry_view *e, struct bytes *buf)
{
    uint8_t head[ARC_ENTRY_HEAD_SIZE];
    if (offset < ARC_HEADER_SIZE || !read_at(f, offset, head, sizeof head))
        return false;
    struct bytes_reader r;
    bytes_reader_init(&r, head, sizeof head);
    struct head h;
    if (!head_read(&r, &h) || h.magic != ENTRY_MAGIC || h.kind < ARC_FRONT || h.kind > ARC_NOTE ||
        h.key_len > ARC_MAX_KEY || h.value_len > ARC_MAX_VALUE)
        return false;
    size_t klen = (size_t)h.key_len, vlen = (size_t)h.value_len;
    const uint8_t *body = span_at(f, offset + ARC_ENTRY_HEAD_SIZE, klen + vlen, buf);
    if (!body)
        return false;
    uint8_t hash[16];
    hash128(body, klen, hash);
    if (memcmp(hash, h.key_hash, 16) || entry_sum(body, klen, body + klen, vlen) != h.sum)
        return false;
    *e = (struct entry_view){.kind = h.kind, .key = body, .key_len = klen, .value = body + klen, .value_len = vlen};
    memcpy(e->key_hash, h.key_hash, 16);
    uint64_t span = ARC_ENTRY_HEAD_SIZE + pad8(klen + vlen);
    e->next = span <= f->size - offset ? offset + span : f->size;
    return true;
}

static bool add_ref(struct arc_file *f, uint32_t *cap, uint32_t kind, uint64_t offset, const uint8_t hash[16])
{
    if (!vec_reserve((void **)&f->refs, cap, f->ref_count + 1, sizeof *f->refs)) {
        f->oom = true;
        return false;
    }
    struct arc_entry_ref *r = &f->refs[f->ref_count++];
    r->kind = kind;
    r->offset = offset;
    memcpy(r->key_hash, hash, 16);
    return true;
}

/* Reads the index when the footer and index check out. */
static bool read_index(struct arc_file *f, uint32_t *cap, struct bytes *buf)
{
    uint8_t tail[ARC_FOOTER_SIZE];
    if (f->size < ARC_HEADER_SIZE + ARC_FOOTER_SIZE || !read_at(f, f->size - ARC_FOOTER_SIZE, tail, sizeof tail))
        return false;
    struct bytes_reader r;
    bytes_reader_init(&r, tail, sizeof tail);
    struct footer foot;
    if (!footer_read(&r, &foot) || memcmp(foot.magic, FOOT_MAGIC, sizeof FOOT_MAGIC))
        return false;
    uint64_t room = f->size - ARC_FOOTER_SIZE, at = foot.index_at, count = foot.count;
    if (at < ARC_HEADER_SIZE || at > room || count > (room - at) / ARC_INDEX_ROW_SIZE ||
        count * ARC_INDEX_ROW_SIZE != room - at)
        return false;
    const uint8_t *rows = span_at(f, at, (size_t)(count * ARC_INDEX_ROW_SIZE), buf);
    if (!rows || XXH3_64bits(rows, (size_t)(count * ARC_INDEX_ROW_SIZE)) != foot.sum)
        return false;
    bytes_reader_init(&r, rows, (size_t)(count * ARC_INDEX_ROW_SIZE));
    for (uint64_t i = 0; i < count; i++) {
        struct arc_row row;
        if (!row_read(&r, &row) || row.offset < ARC_HEADER_SIZE || row.offset >= at)
            return false;
        if (!add_ref(f, cap, row.kind, row.offset, row.key_hash))
            return false;
    }
    return true;
}

/* Keeps every whole, valid entry from the start (a cut or damaged file). */
static void salvage(struct arc_file *f, uint32_t *cap, struct bytes *buf)
{
    f->ref_count = 0;
    uint64_t off = ARC_HEADER_SIZE;
    struct entry_view e;
    while (entry_at(f, off, &e, buf)) {
        if (!add_ref(f, cap, e.kind, off, e.key_hash))
            break;
        if (e.next <= off)
            break;
        off = e.next;
    }
    f->salvaged = true;
}

enum arc_cause arc_header_check(const void *data, size_t size, const struct arc_device *dev)
{
    if (!data)
        return ARC_CORRUPT;
    struct bytes_reader r;
    bytes_reader_init(&r, data, size);
    struct header h;
    if (!header_read(&r, &h) || memcmp(h.magic, HEAD_MAGIC, sizeof HEAD_MAGIC) ||
        XXH3_64bits(data, HEADER_SUMMED) != h.sum)
        return ARC_CORRUPT;
    /* No flag is defined yet: a file with one set was written by a format
     * this kiln does not know. */
    if (h.version != ARC_FORMAT_VERSION || h.size != ARC_HEADER_SIZE || h.flags)
        return ARC_VERSION;
    if (!dev)
        return ARC_HIT;
    bool same = !memcmp(h.dev.cache_uuid, dev->cache_uuid, sizeof dev->cache_uuid) &&
                h.dev.driver_version == dev->driver_version && h.dev.vendor_id == dev->vendor_id &&
                h.dev.device_id == dev->device_id && h.dev.name_hash == dev->name_hash;
    return same ? ARC_HIT : ARC_DEVICE_MISMATCH;
}

/* Lists the entries of a file whose header was judged (f->whole). */
static kiln_result list_entries(struct arc_file *f)
{
    if (f->whole != ARC_HIT)
        return KILN_OK;
    uint32_t cap = 0;
    struct bytes buf = {0};
    f->indexed = read_index(f, &cap, &buf);
    if (!f->indexed && !f->oom)
        salvage(f, &cap, &buf);
    free(buf.p);
    if (f->oom) {
        /* A partial list would pass for the whole file (compaction would
         * drop the rest): fail instead. */
        free(f->refs);
        f->refs = NULL;
        f->ref_count = 0;
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory listing an archive's entries");
    }
    return KILN_OK;
}

kiln_result arc_file_open(struct arc_file *f, const void *data, size_t size, const struct arc_device *dev)
{
    *f = (struct arc_file){.data = data, .size = size, .fd = -1, .whole = arc_header_check(data, size, dev)};
    kiln_result r = list_entries(f);
    if (r < 0)
        *f = (struct arc_file){.fd = -1};
    return r;
}

kiln_result arc_file_open_path(struct arc_file *f, const char *path, const struct arc_device *dev, bool follow)
{
    *f = (struct arc_file){.fd = -1};
    int fd;
    uint64_t size;
    KILN_TRY(arc_open_bounded(path, ARC_MAX_FILE, follow, &fd, &size));
    *f = (struct arc_file){.fd = fd, .on_disk = true, .size = (size_t)size};
    if (size <= ARC_READ_WHOLE) {
        /* A small file is read once, whole, and served from memory: no
         * system call per lookup, and what was read cannot change. A
         * file cut meanwhile holds what was there. */
        uint8_t *p = mem_alloc(size ? (size_t)size : 1);
        size_t got = 0;
        while (p && got < size) {
            ssize_t n = pread(fd, p + got, (size_t)size - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        if (p) {
            close(fd);
            *f = (struct arc_file){.data = p, .owned = p, .fd = -1, .size = got};
            f->whole = arc_header_check(p, got, dev);
            kiln_result r = list_entries(f);
            if (r < 0)
                arc_file_close(f);
            return r;
        }
    }
    uint8_t head[ARC_HEADER_SIZE];
    size_t n = (size_t)KILN_MIN(size, (uint64_t)sizeof head);
    f->whole = read_at(f, 0, head, n) ? arc_header_check(head, n, dev) : ARC_CORRUPT;
    kiln_result r = list_entries(f);
    if (r < 0)
        arc_file_close(f);
    return r;
}

void arc_file_close(struct arc_file *f)
{
    if (f->on_disk && f->fd >= 0)
        close(f->fd);
    free(f->owned);
    free(f->refs);
    *f = (struct arc_file){.fd = -1};
}

enum arc_cause arc_file_find(const struct arc_file *f, enum arc_kind kind, const void *key, size_t key_len,
                             struct bytes *buf, const uint8_t **value, size_t *value_len)
{
    uint8_t h[16];
    hash128(key, key_len, h);
    return arc_file_find_hashed(f, kind, h, key, key_len, buf, value, value_len);
}

enum arc_cause arc_file_find_hashed(const struct arc_file *f, enum arc_kind kind, const uint8_t h[16], const void *key,
                                    size_t key_len, struct bytes *buf, const uint8_t **value, size_t *value_len)
{
    if (f->whole != ARC_HIT)
        return f->whole;
    enum arc_cause cause = ARC_ABSENT;
    for (uint32_t i = 0; i < f->ref_count; i++) {
        const struct arc_entry_ref *r = &f->refs[i];
        if (r->kind != (uint32_t)kind || memcmp(r->key_hash, h, 16))
            continue;
        struct entry_view e;
        if (!entry_at(f, r->offset, &e, buf) || e.kind != (uint32_t)kind) {
            cause = ARC_CORRUPT;
            continue;
        }
        if (e.key_len != key_len || (key_len && memcmp(e.key, key, key_len)))
            continue;   /* the hash never decides */
        *value = e.value;
        *value_len = e.value_len;
        return ARC_HIT;
    }
    return cause;
}

/* The entry a listed ref points at, checked as entry_at does and against
 * the ref (kind and key hash). */
static bool ref_entry(const struct arc_file *f, const struct arc_entry_ref *r, struct entry_view *e, struct bytes *buf)
{
    return entry_at(f, r->offset, e, buf) && e->kind == r->kind && !memcmp(e->key_hash, r->key_hash, 16);
}

void arc_file_verify(const struct arc_file *f, uint64_t counts[ARC_CAUSE_COUNT])
{
    memset(counts, 0, ARC_CAUSE_COUNT * sizeof counts[0]);
    if (f->whole != ARC_HIT) {
        counts[f->whole]++;
        return;
    }
    struct bytes buf = {0};
    for (uint32_t i = 0; i < f->ref_count; i++) {
        struct entry_view e;
        counts[ref_entry(f, &f->refs[i], &e, &buf) ? ARC_HIT : ARC_CORRUPT]++;
    }
    free(buf.p);
}

enum arc_cause arc_file_entry(const struct arc_file *f, uint32_t i, struct bytes *buf, uint32_t *kind,
                              const uint8_t **key, size_t *key_len, const uint8_t **value, size_t *value_len)
{
    if (f->whole != ARC_HIT)
        return f->whole;
    if (i >= f->ref_count)
        return ARC_ABSENT;
    struct entry_view e;
    if (!ref_entry(f, &f->refs[i], &e, buf))
        return ARC_CORRUPT;
    *kind = e.kind;
    *key = e.key;
    *key_len = e.key_len;
    *value = e.value;
    *value_len = e.value_len;
    return ARC_HIT;
}
