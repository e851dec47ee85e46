/* SPDX-License-Identifier: MIT */
/*
 * test_format.c: the archive file format: round trips, and hostile files
 * (cut at every length, every byte flipped, wrong magic, version or device,
 * huge declared sizes, an index pointing anywhere): a lookup gives the
 * exact bytes stored or a miss with its cause, never a crash (ASan build)
 * and never a wrong value.
 */
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "archive/archive.h"
#include "test.h"

static void put_sum(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#define N_ENTRIES 12

static const struct arc_device k_dev = {.cache_uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
                                        .driver_version = 42, .vendor_id = 0x10de, .device_id = 7,
                                        .name_hash = 0x1234};

struct entry {
    enum arc_kind kind;
    char key[64];
    size_t key_len;
    uint8_t value[300];
    size_t value_len;
};
static struct entry entries[N_ENTRIES];

static void make_entries(void)
{
    for (int i = 0; i < N_ENTRIES; i++) {
        struct entry *e = &entries[i];
        e->kind = (enum arc_kind)(1 + i % 3);
        e->key_len = (size_t)snprintf(e->key, sizeof e->key, "key-%d", i);
        if (i == 5)
            e->key_len = 0;   /* an empty key is a key */
        e->value_len = (size_t)(i * 23) % sizeof e->value;
        for (size_t k = 0; k < e->value_len; k++)
            e->value[k] = (uint8_t)(i * 31 + k);
    }
}

/* A whole archive of the entries, malloc'd. */
static uint8_t *build(size_t *len, const struct arc_device *dev)
{
    struct arc_writer w;
    arc_writer_init(&w, dev);
    for (int i = 0; i < N_ENTRIES; i++)
        arc_writer_add(&w, entries[i].kind, entries[i].key, entries[i].key_len, entries[i].value,
                       entries[i].value_len);
    const uint8_t *data;
    uint8_t *copy = NULL;
    if (arc_writer_close(&w, &data, len) == KILN_OK && (copy = malloc(*len)))
        memcpy(copy, data, *len);
    arc_writer_finish(&w);
    return copy;
}

/* Looks every entry up in (data, len): each is the exact value or a miss.
 * Returns how many hit; counts wrong values in *wrong. */
static int lookups(const uint8_t *data, size_t len, int *wrong, enum arc_cause *first_miss)
{
    /* A buffer of exactly len bytes, so ASan sees any read past it. */
    uint8_t *copy = malloc(len ? len : 1);
    if (len)
        memcpy(copy, data, len);
    struct arc_file f;
    int hits = 0;
    *first_miss = ARC_HIT;
    if (arc_file_open(&f, copy, len, &k_dev) == KILN_OK) {
        for (int i = 0; i < N_ENTRIES; i++) {
            const uint8_t *v;
            size_t vl;
            enum arc_cause c = arc_file_find(&f, entries[i].kind, entries[i].key, entries[i].key_len, NULL, &v, &vl);
            if (c == ARC_HIT) {
                hits++;
                if (vl != entries[i].value_len || memcmp(v, entries[i].value, vl))
                    (*wrong)++;
            } else if (*first_miss == ARC_HIT) {
                *first_miss = c;
            }
        }
        uint64_t counts[ARC_CAUSE_COUNT];
        arc_file_verify(&f, counts);
        arc_file_close(&f);
    }
    free(copy);
    return hits;
}

TEST(round_trip)
{
    make_entries();
    size_t len;
    uint8_t *data = build(&len, &k_dev);
    REQUIRE(data);
    int wrong = 0;
    enum arc_cause miss;
    CHECK_EQ(lookups(data, len, &wrong, &miss), N_ENTRIES);
    CHECK_EQ(wrong, 0);
    struct arc_file f;
    REQUIRE_OK(arc_file_open(&f, data, len, &k_dev));
    CHECK(f.indexed);
    const uint8_t *v;
    size_t vl;
    CHECK_EQ(arc_file_find(&f, ARC_FRONT, "nope", 4, NULL, &v, &vl), ARC_ABSENT);
    CHECK_EQ(arc_file_find(&f, ARC_BACK, "key-0", 5, NULL, &v, &vl), ARC_ABSENT);   /* key-0 is a front entry */
    uint64_t counts[ARC_CAUSE_COUNT];
    arc_file_verify(&f, counts);
    CHECK_EQ(counts[ARC_HIT], N_ENTRIES);
    CHECK_EQ(counts[ARC_CORRUPT], 0);
    arc_file_close(&f);
    free(data);
}

TEST(another_device_pair_or_version_serves_nothing)
{
    make_entries();
    struct arc_device other = k_dev;
    other.driver_version++;
    size_t len;
    uint8_t *data = build(&len, &other);
    REQUIRE(data);
    int wrong = 0;
    enum arc_cause miss;
    CHECK_EQ(lookups(data, len, &wrong, &miss), 0);
    CHECK_EQ(miss, ARC_DEVICE_MISMATCH);
    free(data);
    data = build(&len, &k_dev);
    REQUIRE(data);
    data[8] = 99;   /* another format version, with a header checksum that holds */
    put_sum(data + 56, XXH3_64bits(data, 56));
    CHECK_EQ(lookups(data, len, &wrong, &miss), 0);
    CHECK_EQ(miss, ARC_VERSION);
    memcpy(data, "NOTKILN!", 8);
    CHECK_EQ(lookups(data, len, &wrong, &miss), 0);
    CHECK_EQ(miss, ARC_CORRUPT);
    CHECK_EQ(wrong, 0);
    free(data);
}

TEST(cut_at_every_length_keeps_every_whole_entry)
{
    make_entries();
    size_t len;
    uint8_t *data = build(&len, &k_dev);
    REQUIRE(data);
    /* Where each entry ends, to know which must survive a cut. */
    struct arc_file f;
    REQUIRE_OK(arc_file_open(&f, data, len, &k_dev));
    size_t ends[N_ENTRIES];
    for (int i = 0; i < N_ENTRIES; i++)
        ends[i] = f.refs[i].offset + ARC_ENTRY_HEAD_SIZE + entries[i].key_len + entries[i].value_len;
    arc_file_close(&f);
    int wrong = 0, lost = 0;
    for (size_t cut = 0; cut < len; cut++) {
        enum arc_cause miss;
        int hits = lookups(data, cut, &wrong, &miss);
        int whole = 0;
        for (int i = 0; i < N_ENTRIES; i++)
            whole += cut >= ((ends[i] + 7) & ~(size_t)7);
        lost += hits < whole;
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(lost, 0);
    free(data);
}

TEST(every_byte_flipped_gives_right_values_or_misses)
{
    make_entries();
    size_t len;
    uint8_t *data = build(&len, &k_dev);
    REQUIRE(data);
    int wrong = 0, header_hits = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (int bit = 0; bit < 8; bit += 3) {
            data[pos] ^= (uint8_t)(1u << bit);
            enum arc_cause miss;
            int hits = lookups(data, len, &wrong, &miss);
            if (pos < ARC_HEADER_SIZE)
                header_hits += hits;
            data[pos] ^= (uint8_t)(1u << bit);
        }
    }
    CHECK_EQ(wrong, 0);
    CHECK_EQ(header_hits, 0);   /* a damaged header serves nothing */
    free(data);
}

TEST(huge_declared_sizes_and_wild_offsets_are_misses)
{
    make_entries();
    size_t len;
    uint8_t *data = build(&len, &k_dev);
    REQUIRE(data);
    int wrong = 0;
    enum arc_cause miss;
    /* The first entry declares a key of 2^62 bytes. */
    uint8_t *e = data + ARC_HEADER_SIZE;
    for (int i = 0; i < 8; i++)
        e[8 + i] = i == 7 ? 0x40 : 0;
    CHECK(lookups(data, len, &wrong, &miss) < N_ENTRIES);
    /* The footer declares 2^60 index rows. */
    uint8_t *data2 = build(&len, &k_dev);
    REQUIRE(data2);
    uint8_t *foot = data2 + len - ARC_FOOTER_SIZE;
    foot[16 + 7] = 0x10;
    CHECK_EQ(lookups(data2, len, &wrong, &miss), N_ENTRIES);   /* the index is refused; the scan finds all */
    /* An index whose rows point into the middle of entries, its checksum
     * redone so the index is believed: those lookups miss as corrupt. */
    uint8_t *data3 = build(&len, &k_dev);
    REQUIRE(data3);
    foot = data3 + len - ARC_FOOTER_SIZE;
    uint64_t at = 0, count = 0;
    for (int i = 7; i >= 0; i--) {
        at = at << 8 | foot[8 + i];
        count = count << 8 | foot[16 + i];
    }
    for (uint64_t r = 0; r < count; r += 2)
        data3[at + r * ARC_INDEX_ROW_SIZE + 8] += 4;   /* offset + 4 */
    put_sum(foot + 24, XXH3_64bits(data3 + at, count * ARC_INDEX_ROW_SIZE));
    int hits = lookups(data3, len, &wrong, &miss);
    CHECK_EQ(hits, N_ENTRIES / 2);
    CHECK_EQ(miss, ARC_CORRUPT);
    free(data3);
    CHECK_EQ(wrong, 0);
    free(data);
    free(data2);
}

int main(void)
{
    RUN(round_trip);
    RUN(another_device_pair_or_version_serves_nothing);
    RUN(cut_at_every_length_keeps_every_whole_entry);
    RUN(every_byte_flipped_gives_right_values_or_misses);
    RUN(huge_declared_sizes_and_wild_offsets_are_misses);
    return TEST_SUMMARY();
}
