/*
 * format.c: the archive file format (see archive.h): a writer that builds a
 * whole file in memory, and a reader that checks every byte it uses.
 *
 * All numbers are little-endian. Lengths declared by a file are compared
 * against the bytes actually there before anything is read, with
 * subtraction rather than addition so that huge declared sizes cannot wrap.
 */
#include "archive.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static const uint8_t HEAD_MAGIC[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'C', 0};
static const uint8_t FOOT_MAGIC[8] = {'K', 'I', 'L', 'N', 'I', 'D', 'X', 0};
#define ENTRY_MAGIC 0x544e454bu   /* "KENT" */

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

/* ---- little-endian fields ------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t entry_sum(const void *key, size_t klen, const void *value, size_t vlen)
{
    return XXH3_64bits_withSeed(value, vlen, XXH3_64bits(key, klen));
}

static size_t pad8(size_t n) { return (n + 7) & ~(size_t)7; }

static void header_bytes(uint8_t h[ARC_HEADER_SIZE], const struct arc_device *dev)
{
    memset(h, 0, ARC_HEADER_SIZE);
    memcpy(h, HEAD_MAGIC, 8);
    put32(h + 8, ARC_FORMAT_VERSION);
    put32(h + 12, ARC_HEADER_SIZE);
    memcpy(h + 16, dev->cache_uuid, 16);
    put32(h + 32, dev->driver_version);
    put32(h + 36, dev->vendor_id);
    put32(h + 40, dev->device_id);
    put32(h + 44, 0);   /* flags */
    put64(h + 48, dev->name_hash);
    put64(h + 56, XXH3_64bits(h, 56));
}

/* ---- writing ---------------------------------------------------------------------- */

static uint8_t *grow(struct arc_writer *w, size_t n) { return bytes_put(&w->out, NULL, n); }

void arc_writer_init(struct arc_writer *w, const struct arc_device *dev)
{
    *w = (struct arc_writer){0};
    uint8_t *h = grow(w, ARC_HEADER_SIZE);
    if (h)
        header_bytes(h, dev);
}

void arc_writer_add(struct arc_writer *w, enum arc_kind kind, const void *key, size_t key_len, const void *value,
                    size_t value_len)
{
    if (key_len > ARC_MAX_KEY || value_len > ARC_MAX_VALUE ||
        !vec_reserve((void **)&w->rows, &w->row_cap, w->row_count + 1, sizeof *w->rows)) {
        w->out.oom = true;
        return;
    }
    size_t at = w->out.len;
    uint8_t *p = grow(w, ARC_ENTRY_HEAD_SIZE + pad8(key_len + value_len));
    if (!p)
        return;
    put32(p, ENTRY_MAGIC);
    put32(p + 4, (uint32_t)kind);
    put64(p + 8, key_len);
    put64(p + 16, value_len);
    hash128(key, key_len, p + 24);
    put64(p + 40, entry_sum(key, key_len, value, value_len));
    if (key_len)
        memcpy(p + ARC_ENTRY_HEAD_SIZE, key, key_len);
    if (value_len)
        memcpy(p + ARC_ENTRY_HEAD_SIZE + key_len, value, value_len);
    struct arc_row *r = &w->rows[w->row_count++];
    r->kind = (uint32_t)kind;
    r->offset = at;
    memcpy(r->key_hash, p + 24, 16);
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
    uint8_t *p = grow(dst, body);
    if (!p)
        return;
    memcpy(p, src->out.p + ARC_HEADER_SIZE, body);
    for (uint32_t i = 0; i < src->row_count; i++) {
        struct arc_row r = src->rows[i];
        r.offset = r.offset - ARC_HEADER_SIZE + at;
        dst->rows[dst->row_count++] = r;
    }
}

kiln_result arc_writer_close(struct arc_writer *w, const uint8_t **data, size_t *len)
{
    size_t index_at = w->out.len;
    uint8_t *idx = grow(w, (size_t)w->row_count * ARC_INDEX_ROW_SIZE);
    uint8_t *foot = grow(w, ARC_FOOTER_SIZE);
    if (w->out.oom || (w->row_count && !idx) || !foot)
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory building an archive");
    idx = w->out.p + index_at;   /* grow may have moved the buffer */
    for (uint32_t i = 0; i < w->row_count; i++) {
        uint8_t *row = idx + (size_t)i * ARC_INDEX_ROW_SIZE;
        put32(row, w->rows[i].kind);
        put64(row + 8, w->rows[i].offset);
        memcpy(row + 16, w->rows[i].key_hash, 16);
    }
    foot = w->out.p + w->out.len - ARC_FOOTER_SIZE;
    memcpy(foot, FOOT_MAGIC, 8);
    put64(foot + 8, index_at);
    put64(foot + 16, w->row_count);
    put64(foot + 24, XXH3_64bits(idx, (size_t)w->row_count * ARC_INDEX_ROW_SIZE));
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

/* The entry at offset, checked: its head, bounds and checksum. */
static bool entry_at(const struct arc_file *f, uint64_t offset, uint32_t *kind, const uint8_t **key, size_t *klen,
                     const uint8_t **value, size_t *vlen, uint64_t *next)
{
    if (offset < ARC_HEADER_SIZE || offset > f->size || f->size - offset < ARC_ENTRY_HEAD_SIZE)
        return false;
    const uint8_t *p = f->data + offset;
    uint64_t kl = get64(p + 8), vl = get64(p + 16);
    uint32_t k = get32(p + 4);
    if (get32(p) != ENTRY_MAGIC || k < ARC_FRONT || k > ARC_NOTE || kl > ARC_MAX_KEY || vl > ARC_MAX_VALUE)
        return false;
    uint64_t room = f->size - offset - ARC_ENTRY_HEAD_SIZE;
    if (kl > room || vl > room - kl)
        return false;
    const uint8_t *kp = p + ARC_ENTRY_HEAD_SIZE, *vp = kp + kl;
    uint8_t h[16];
    hash128(kp, (size_t)kl, h);
    if (memcmp(h, p + 24, 16) || entry_sum(kp, (size_t)kl, vp, (size_t)vl) != get64(p + 40))
        return false;
    *kind = k;
    *key = kp;
    *klen = (size_t)kl;
    *value = vp;
    *vlen = (size_t)vl;
    uint64_t span = ARC_ENTRY_HEAD_SIZE + pad8((size_t)(kl + vl));
    *next = span <= f->size - offset ? offset + span : f->size;
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
static bool read_index(struct arc_file *f, uint32_t *cap)
{
    if (f->size < ARC_HEADER_SIZE + ARC_FOOTER_SIZE)
        return false;
    const uint8_t *foot = f->data + f->size - ARC_FOOTER_SIZE;
    if (memcmp(foot, FOOT_MAGIC, 8))
        return false;
    uint64_t at = get64(foot + 8), count = get64(foot + 16);
    uint64_t room = f->size - ARC_FOOTER_SIZE;
    if (at < ARC_HEADER_SIZE || at > room || count > (room - at) / ARC_INDEX_ROW_SIZE ||
        count * ARC_INDEX_ROW_SIZE != room - at)
        return false;
    const uint8_t *idx = f->data + at;
    if (XXH3_64bits(idx, (size_t)(count * ARC_INDEX_ROW_SIZE)) != get64(foot + 24))
        return false;
    for (uint64_t i = 0; i < count; i++) {
        const uint8_t *row = idx + i * ARC_INDEX_ROW_SIZE;
        uint64_t off = get64(row + 8);
        if (off < ARC_HEADER_SIZE || off >= at)
            return false;
        if (!add_ref(f, cap, get32(row), off, row + 16))
            return false;
    }
    return true;
}

/* Keeps every whole, valid entry from the start (a cut or damaged file). */
static void salvage(struct arc_file *f, uint32_t *cap)
{
    f->ref_count = 0;
    uint64_t off = ARC_HEADER_SIZE;
    for (;;) {
        uint32_t kind;
        const uint8_t *k, *v;
        size_t kl, vl;
        uint64_t next;
        if (!entry_at(f, off, &kind, &k, &kl, &v, &vl, &next))
            break;
        if (!add_ref(f, cap, kind, off, f->data + off + 24))
            break;
        if (next <= off)
            break;
        off = next;
    }
    f->salvaged = true;
}

enum arc_cause arc_header_check(const void *data, size_t size, const struct arc_device *dev)
{
    if (!data || size < ARC_HEADER_SIZE || memcmp(data, HEAD_MAGIC, 8))
        return ARC_CORRUPT;
    const uint8_t *h = data;
    if (XXH3_64bits(h, 56) != get64(h + 56))
        return ARC_CORRUPT;
    if (get32(h + 8) != ARC_FORMAT_VERSION || get32(h + 12) != ARC_HEADER_SIZE)
        return ARC_VERSION;
    if (!dev)
        return ARC_HIT;
    uint8_t want[ARC_HEADER_SIZE];
    header_bytes(want, dev);
    return memcmp(want + 16, h + 16, 40) ? ARC_DEVICE_MISMATCH : ARC_HIT;
}

kiln_result arc_file_open(struct arc_file *f, const void *data, size_t size, const struct arc_device *dev)
{
    *f = (struct arc_file){.data = data, .size = size, .whole = arc_header_check(data, size, dev)};
    if (f->whole != ARC_HIT)
        return KILN_OK;
    uint32_t cap = 0;
    f->indexed = read_index(f, &cap);
    if (!f->indexed && !f->oom)
        salvage(f, &cap);
    if (f->oom) {
        /* A partial list would pass for the whole file (compaction would
         * drop the rest): fail instead. */
        free(f->refs);
        *f = (struct arc_file){0};
        return KILN_RAISE(KILN_ERR_NO_MEMORY, "out of host memory listing an archive's entries");
    }
    return KILN_OK;
}

void arc_file_close(struct arc_file *f)
{
    free(f->refs);
    *f = (struct arc_file){0};
}

enum arc_cause arc_file_find(const struct arc_file *f, enum arc_kind kind, const void *key, size_t key_len,
                             const uint8_t **value, size_t *value_len)
{
    uint8_t h[16];
    hash128(key, key_len, h);
    return arc_file_find_hashed(f, kind, h, key, key_len, value, value_len);
}

enum arc_cause arc_file_find_hashed(const struct arc_file *f, enum arc_kind kind, const uint8_t h[16], const void *key,
                                    size_t key_len, const uint8_t **value, size_t *value_len)
{
    if (f->whole != ARC_HIT)
        return f->whole;
    enum arc_cause cause = ARC_ABSENT;
    for (uint32_t i = 0; i < f->ref_count; i++) {
        const struct arc_entry_ref *r = &f->refs[i];
        if (r->kind != (uint32_t)kind || memcmp(r->key_hash, h, 16))
            continue;
        uint32_t k;
        const uint8_t *kp, *vp;
        size_t kl, vl;
        uint64_t next;
        if (!entry_at(f, r->offset, &k, &kp, &kl, &vp, &vl, &next) || k != (uint32_t)kind) {
            cause = ARC_CORRUPT;
            continue;
        }
        if (kl != key_len || (key_len && memcmp(kp, key, key_len)))
            continue;   /* the hash never decides */
        *value = vp;
        *value_len = vl;
        return ARC_HIT;
    }
    return cause;
}

void arc_file_verify(const struct arc_file *f, uint64_t counts[ARC_CAUSE_COUNT])
{
    memset(counts, 0, ARC_CAUSE_COUNT * sizeof counts[0]);
    if (f->whole != ARC_HIT) {
        counts[f->whole]++;
        return;
    }
    for (uint32_t i = 0; i < f->ref_count; i++) {
        uint32_t k;
        const uint8_t *kp, *vp;
        size_t kl, vl;
        uint64_t next;
        bool ok = entry_at(f, f->refs[i].offset, &k, &kp, &kl, &vp, &vl, &next) && k == f->refs[i].kind &&
                  !memcmp(f->data + f->refs[i].offset + 24, f->refs[i].key_hash, 16);
        counts[ok ? ARC_HIT : ARC_CORRUPT]++;
    }
}

enum arc_cause arc_file_entry(const struct arc_file *f, uint32_t i, uint32_t *kind, const uint8_t **key,
                              size_t *key_len, const uint8_t **value, size_t *value_len)
{
    if (f->whole != ARC_HIT)
        return f->whole;
    if (i >= f->ref_count)
        return ARC_ABSENT;
    const struct arc_entry_ref *r = &f->refs[i];
    uint32_t k;
    const uint8_t *kp, *vp;
    size_t kl, vl;
    uint64_t next;
    if (!entry_at(f, r->offset, &k, &kp, &kl, &vp, &vl, &next) || k != r->kind ||
        memcmp(f->data + r->offset + 24, r->key_hash, 16))
        return ARC_CORRUPT;
    *kind = k;
    *key = kp;
    *key_len = kl;
    *value = vp;
    *value_len = vl;
    return ARC_HIT;
}
