/* SPDX-License-Identifier: MIT */
/*
 * test_entry.c: each archive entry kind's codec (archive/entry.c): values
 * round-trip exactly; the interface is on disk field by field, little-endian,
 * at fixed widths (its bytes are checked, not only read back); every range
 * check refuses with a reason naming the field; a value cut at every length
 * or with any byte flipped decodes to the same value or is refused, never
 * read past (ASan build).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"
#include "test.h"

static kiln_program_interface sample_iface(void)
{
    kiln_program_interface it = {.binding_count = 3, .push_constant_size = 96, .workgroup_size = {64, 2, 1},
                                 .spirv_words = 6, .params_read = 0x05, .lens_read = 0x4, .groups_read = 1,
                                 .own_push_block = 0, .param_words = KILN_PARAM_WORDS,
                                 .subgroup_ops = KILN_SUBGROUP_BASIC | KILN_SUBGROUP_ARITHMETIC};
    it.bindings[0] = (kiln_binding_info){.set = 0, .binding = 0, .kind = KILN_BINDING_STORAGE_BUFFER,
                                         .access = KILN_ACCESS_READ, .min_size = 16, .count = 1};
    it.bindings[1] = (kiln_binding_info){.set = 0, .binding = 1, .kind = KILN_BINDING_UNIFORM_BUFFER,
                                         .access = KILN_ACCESS_READ, .min_size = 0x123456789ull, .count = 4};
    it.bindings[2] = (kiln_binding_info){.set = 2, .binding = 5, .kind = KILN_BINDING_STORAGE_TEXEL_BUFFER,
                                         .access = KILN_ACCESS_READ | KILN_ACCESS_WRITE, .count = 1,
                                         .format = KILN_FORMAT_RGBA8};
    snprintf(it.bindings[0].name, sizeof it.bindings[0].name, "In");
    snprintf(it.bindings[1].name, sizeof it.bindings[1].name, "Params");
    memset(it.bindings[2].name, 'n', sizeof it.bindings[2].name - 1);   /* the longest name there is */
    snprintf(it.entry, sizeof it.entry, "main");
    return it;
}

static const uint32_t k_spirv[6] = {0x07230203u, 0x00010500u, 0x000d000bu, 42, 0, 0xdeadbeefu};
static const char k_log[] = "prog.comp:3: warning: unused variable\n";

/* A front end's value, malloc'd. */
static uint8_t *front_value(const kiln_program_interface *it, size_t *len)
{
    struct bytes b = {0};
    arc_front_encode(&b, it, k_log, k_spirv, 6);
    *len = b.len;
    return b.oom ? NULL : b.p;
}

static bool same_iface(const kiln_program_interface *a, const kiln_program_interface *b)
{
    /* Both were zeroed before being filled, so their bytes compare. */
    return !memcmp(a, b, sizeof *a);
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

TEST(front_round_trip)
{
    kiln_program_interface it = sample_iface();
    size_t len;
    uint8_t *v = front_value(&it, &len);
    REQUIRE(v);
    struct arc_front f;
    char why[ARC_WHY_LEN] = "";
    CHECK(arc_front_decode(v, len, &f, why));
    CHECK(same_iface(&f.iface, &it));
    CHECK(f.log_len == strlen(k_log) && !memcmp(f.log, k_log, f.log_len));
    CHECK_EQ(f.words, 6);
    uint32_t words[6];
    arc_front_spirv(&f, words);
    CHECK(!memcmp(words, k_spirv, sizeof words));
    CHECK(f.log >= (const char *)v && f.spirv + 24 == v + len);   /* views into the value */
    free(v);
    /* No log at all. */
    struct bytes b = {0};
    arc_front_encode(&b, &it, NULL, k_spirv, 6);
    REQUIRE(!b.oom);
    CHECK(arc_front_decode(b.p, b.len, &f, why) && f.log_len == 0);
    free(b.p);
}

/* The on-disk bytes themselves: every field at its fixed width,
 * little-endian, in the struct's order, only the bindings in use. */
TEST(interface_bytes_on_disk)
{
    kiln_program_interface it = sample_iface();
    struct bytes b = {0};
    arc_iface_put(&b, &it);
    REQUIRE(!b.oom);
    enum { BINDING = 4 * 4 + 8 + 64 + 12 + 8 };   /* format 10: image_arrayed, image_cube */
    CHECK_EQ(b.len, 4 + 3 * BINDING + 4 + 12 + 4 + 64 + 16 + 12 + 4 + 8);   /* ... constant_count (none), */
    /* push_float_words (format 9) */
    const uint8_t *p = b.p;
    CHECK_EQ(le32(p), 3);
    const uint8_t *b1 = p + 4 + BINDING;
    CHECK_EQ(le32(b1 + 4), 1);                                   /* binding */
    CHECK_EQ(le32(b1 + 8), KILN_BINDING_UNIFORM_BUFFER);         /* kind */
    CHECK(!memcmp(b1 + 16, "\x89\x67\x45\x23\x01\0\0\0", 8));   /* min_size, u64 */
    CHECK(!memcmp(b1 + 24, "Params\0", 7) && b1[24 + 63] == 0);
    CHECK(le32(b1 + 88) == 4 && le32(b1 + 92) == 0);            /* count, format */
    CHECK_EQ(le32(b1 + 96), 0);                                  /* image_dims (no image) */
    CHECK(le32(b1 + BINDING) == 2 && le32(b1 + BINDING + 92) == KILN_FORMAT_RGBA8);   /* set, format */
    const uint8_t *tail = p + 4 + 3 * BINDING;
    CHECK_EQ(le32(tail), 96);                                    /* push_constant_size */
    CHECK(le32(tail + 4) == 64 && le32(tail + 8) == 2 && le32(tail + 12) == 1);
    CHECK_EQ(le32(tail + 16), 6);                                /* spirv_words */
    CHECK(!memcmp(tail + 20, "main\0", 5));
    CHECK(le32(tail + 84) == 5 && le32(tail + 88) == 0);          /* params_read, u64 */
    CHECK(le32(tail + 92) == 4 && le32(tail + 96) == 1);           /* lens_read, groups_read */
    CHECK(le32(tail + 100) == 0 && le32(tail + 104) == KILN_PARAM_WORDS);   /* own_push_block, param_words */
    CHECK_EQ(le32(tail + 108), KILN_SUBGROUP_BASIC | KILN_SUBGROUP_ARITHMETIC);   /* subgroup_ops */
    /* Read back alone, to the last byte. */
    struct bytes_reader r;
    bytes_reader_init(&r, b.p, b.len);
    kiln_program_interface back;
    char why[ARC_WHY_LEN];
    CHECK(arc_iface_read(&r, &back, why));
    CHECK(same_iface(&back, &it));
    CHECK_EQ(bytes_remaining(&r), 0);
    free(b.p);
}

/* Encodes it, then checks the decoder refuses it with a reason holding
 * `needle`. */
static void check_refused(const kiln_program_interface *it, const char *needle, int line)
{
    size_t len;
    uint8_t *v = front_value(it, &len);
    struct arc_front f;
    char why[ARC_WHY_LEN] = "";
    bool ok = v && arc_front_decode(v, len, &f, why);
    if (ok || !strstr(why, needle)) {
        test_failures_++;
        fprintf(stderr, "%s:%d: %s: decoded %d, reason '%s' lacks '%s'\n", __FILE__, line, test_name_, ok, why,
                needle);
    }
    free(v);
}
#define REFUSED(it, needle) check_refused(&(it), (needle), __LINE__)

TEST(interface_ranges_are_checked)
{
    kiln_program_interface it = sample_iface();
    kiln_program_interface bad = it;
    bad.bindings[1].kind = (kiln_binding_kind)9;
    REFUSED(bad, "kind 9");
    bad = it;   /* format 8: an image's dims are 1, 2 or 3, and only an image has them */
    bad.bindings[1].image_dims = 2;
    REFUSED(bad, "image_dims 2 for a binding of kind 2");
    bad = it;   /* format 10: arrayed and cube are an image's, 0 or 1, and a cube is 2D and not arrayed */
    bad.bindings[1].image_arrayed = 1;
    REFUSED(bad, "image_arrayed 1");
    bad = it;
    bad.bindings[2].image_cube = 2;
    REFUSED(bad, "image_cube 2");
    bad = it;
    bad.bindings[2].kind = KILN_BINDING_STORAGE_IMAGE;
    REFUSED(bad, "image_dims 0 for a binding of kind 5");
    bad.bindings[2].image_dims = 4;
    REFUSED(bad, "image_dims 4");
    bad.bindings[2].image_dims = 3;   /* a 3D rgba8 storage image reads back as it went in */
    {
        struct bytes b = {0};
        arc_iface_put(&b, &bad);
        struct bytes_reader r;
        bytes_reader_init(&r, b.p, b.len);
        kiln_program_interface back;
        char why[ARC_WHY_LEN] = "";
        CHECK(!b.oom && arc_iface_read(&r, &back, why));
        CHECK(back.bindings[2].kind == KILN_BINDING_STORAGE_IMAGE && back.bindings[2].image_dims == 3 &&
              back.bindings[2].format == KILN_FORMAT_RGBA8);
        free(b.p);
    }
    bad = it;
    bad.bindings[0].access = 0x10;
    REFUSED(bad, "access 0x10");
    bad = it;
    bad.bindings[2].set = 0;
    bad.bindings[2].binding = 1;   /* equal to the one before */
    REFUSED(bad, "order");
    bad = it;
    bad.bindings[0].set = 1;       /* a set after set 0's bindings comes last */
    REFUSED(bad, "order");
    bad = it;
    bad.bindings[2].set = KILN_MAX_SETS;
    REFUSED(bad, "set 8 is past KILN_MAX_SETS");
    bad = it;
    bad.bindings[1].count = 0;
    REFUSED(bad, "count 0");
    bad = it;
    bad.bindings[1].count = KILN_MAX_DESCRIPTORS;   /* with the others' 2: past the bound */
    REFUSED(bad, "KILN_MAX_DESCRIPTORS");
    bad = it;
    bad.bindings[2].format = KILN_FORMAT_COUNT;
    REFUSED(bad, "format 42");
    bad = it;
    bad.bindings[0].format = KILN_FORMAT_R32F;      /* a storage buffer has none */
    REFUSED(bad, "format 1");
    bad = it;
    bad.params_read = 1u << KILN_PARAM_WORDS;
    REFUSED(bad, "params_read");
    bad = it;
    bad.lens_read = 1u << KILN_MAX_BINDINGS;
    REFUSED(bad, "lens_read");
    bad = it;
    bad.own_push_block = 2;
    REFUSED(bad, "own_push_block");
    bad = it;
    bad.param_words = 9;          /* kiln's block has 8 */
    REFUSED(bad, "param_words");
    bad = it;
    bad.own_push_block = 1;       /* an own block of 96 bytes needs 24 words */
    bad.param_words = 23;
    REFUSED(bad, "param_words");
    bad = it;
    bad.subgroup_ops = 1u << 8;
    REFUSED(bad, "subgroup_ops");
    bad = it;
    bad.push_float_words = 1ull << KILN_PARAM_WORDS;   /* past the block's words */
    REFUSED(bad, "push_float_words");
    bad = it;
    bad.groups_read = 2;
    REFUSED(bad, "groups_read 2");
    bad = it;
    bad.spirv_words = 7;
    REFUSED(bad, "7 SPIR-V words");

    /* What the encoder never writes, made by hand in the bytes: a binding
     * count past the bound, names without their NUL. */
    size_t len;
    uint8_t *v = front_value(&it, &len);
    REQUIRE(v);
    struct arc_front f;
    char why[ARC_WHY_LEN];
    v[4] = KILN_MAX_BINDINGS + 1;
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "binding_count 17"));
    v[4] = 3;
    enum { BINDING = 4 * 4 + 8 + 64 + 12 + 8 };   /* format 10: image_arrayed, image_cube */
    uint8_t *name0 = v + 4 + 4 + 24;
    memset(name0, 'x', 64);
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "name is not NUL-terminated"));
    memset(name0, 0, 64);
    uint8_t *entry = v + 4 + 4 + 3 * BINDING + 20;
    memset(entry, 'e', 64);
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "entry name"));
    free(v);
}

TEST(front_value_checks)
{
    kiln_program_interface it = sample_iface();
    size_t len;
    uint8_t *v = front_value(&it, &len);
    REQUIRE(v);
    struct arc_front f;
    char why[ARC_WHY_LEN];
    CHECK(!arc_front_decode(v, 3, &f, why) && strstr(why, "no magic"));
    v[0] ^= 1;
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "magic"));
    v[0] ^= 1;
    v[len - 24] ^= 0xff;   /* the SPIR-V's magic number */
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "SPIR-V magic"));
    v[len - 24] ^= 0xff;
    CHECK(!arc_front_decode(v, len - 1, &f, why) && strstr(why, "whole words"));
    /* A log declared longer than the value. */
    uint8_t *log_len = v + len - 24 - strlen(k_log) - 4;
    CHECK_EQ(le32(log_len), strlen(k_log));
    log_len[3] = 0x7f;
    CHECK(!arc_front_decode(v, len, &f, why) && strstr(why, "runs past"));
    free(v);
    /* Fewer words than a SPIR-V header. */
    struct bytes b = {0};
    kiln_program_interface four = it;
    four.spirv_words = 4;
    arc_front_encode(&b, &four, "", k_spirv, 4);
    REQUIRE(!b.oom);
    CHECK(!arc_front_decode(b.p, b.len, &f, why) && strstr(why, "fewer than"));
    free(b.p);
}

/* Cut at every length: refused (every value here is whole only at its full
 * length), never read past; every byte flipped: the same value or refused. */
TEST(front_cut_and_flipped)
{
    kiln_program_interface it = sample_iface();
    size_t len;
    uint8_t *v = front_value(&it, &len);
    REQUIRE(v);
    struct arc_front f;
    char why[ARC_WHY_LEN];
    int decoded = 0;
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);   /* exactly cut bytes: ASan sees a read past them */
        memcpy(copy, v, cut);
        decoded += arc_front_decode(copy, cut, &f, why);
        free(copy);
    }
    /* Cutting whole SPIR-V words off the end leaves a value whose
     * interface no longer counts its words: refused as well. */
    CHECK_EQ(decoded, 0);
    int refused = 0;
    for (size_t pos = 0; pos < len; pos++) {
        v[pos] ^= 0x40;
        if (arc_front_decode(v, len, &f, why)) {
            /* Accepted: then it reads back as what the bytes now say,
             * within the limits. */
            CHECK(f.iface.binding_count <= KILN_MAX_BINDINGS);
            CHECK(memchr(f.iface.entry, 0, sizeof f.iface.entry) != NULL);
        } else {
            refused++;
        }
        v[pos] ^= 0x40;
    }
    CHECK(refused > 0);
    free(v);
}

TEST(note_round_trip_and_checks)
{
    struct arc_note n = {.what = ARC_NOTE_SLOW, .words = 1234, .noted_ns = 0x1122334455667788ull, .seconds = 12.5};
    for (int i = 0; i < 16; i++)
        n.front_hash[i] = (uint8_t)(i * 7);
    snprintf(n.name, sizeof n.name, "slow.comp");
    struct bytes key = {0}, value = {0};
    arc_note_encode(&n, &key, &value);
    REQUIRE(!key.oom && !value.oom);
    CHECK_EQ(key.len, ARC_NOTE_KEY_LEN);
    CHECK_EQ(value.len, 4 + 4 + 8 + 8 + 64);
    CHECK_EQ(le32(key.p), ARC_NOTE_SLOW);
    CHECK(!memcmp(key.p + 4, n.front_hash, 16));
    struct arc_note back;
    char why[ARC_WHY_LEN];
    CHECK(arc_note_decode(key.p, key.len, value.p, value.len, &back, why));
    CHECK(back.what == n.what && back.words == n.words && back.noted_ns == n.noted_ns &&
          back.seconds == n.seconds && !strcmp(back.name, n.name) && !memcmp(back.front_hash, n.front_hash, 16));
    /* Refusals, each with its reason. */
    CHECK(!arc_note_decode(key.p, key.len - 1, value.p, value.len, &back, why) && strstr(why, "key of 19"));
    CHECK(!arc_note_decode(key.p, key.len, value.p, value.len - 1, &back, why) && strstr(why, "value of 87"));
    value.p[0] ^= 1;
    CHECK(!arc_note_decode(key.p, key.len, value.p, value.len, &back, why) && strstr(why, "not its key's"));
    value.p[0] ^= 1;
    key.p[0] ^= 1;
    value.p[0] ^= 1;
    CHECK(!arc_note_decode(key.p, key.len, value.p, value.len, &back, why) && strstr(why, "neither used"));
    key.p[0] ^= 1;
    value.p[0] ^= 1;
    memset(value.p + 24, 'x', 64);
    CHECK(!arc_note_decode(key.p, key.len, value.p, value.len, &back, why) && strstr(why, "name"));
    free(key.p);
    free(value.p);
    /* A negative or infinite time is no duration. */
    n.seconds = -1;
    key = (struct bytes){0};
    value = (struct bytes){0};
    arc_note_encode(&n, &key, &value);
    REQUIRE(!key.oom && !value.oom);
    CHECK(!arc_note_decode(key.p, key.len, value.p, value.len, &back, why) && strstr(why, "no duration"));
    free(key.p);
    free(value.p);
}

TEST(back_value_checks)
{
    uint8_t data[40] = {0};
    char why[ARC_WHY_LEN];
    CHECK(arc_back_decode(data, sizeof data, why));
    CHECK(!arc_back_decode(data, ARC_BACK_HEADER, why) && strstr(why, "32 bytes"));
    CHECK(!arc_back_decode(NULL, 0, why));
}

/* Format 7: the specialization constants, each field at its width, read
 * back exactly, their ranges checked. */
TEST(interface_constants_on_disk_and_checked)
{
    kiln_program_interface it = sample_iface();
    it.constant_count = 3;
    it.constants[0] = (kiln_spec_constant_info){.id = 0, .type = KILN_SCALAR_UINT, .default_value = 32, .value = 64,
                                                .set = 1, .used = 1};
    snprintf(it.constants[0].name, sizeof it.constants[0].name, "BLOCK_SIZE");
    it.constants[1] = (kiln_spec_constant_info){.id = 0, .type = KILN_SCALAR_UINT, .default_value = 1, .value = 64,
                                                .set = 1, .used = 1, .workgroup_axis = 1};
    snprintf(it.constants[1].name, sizeof it.constants[1].name, "local_size_x");
    it.constants[2] = (kiln_spec_constant_info){.id = 7, .type = KILN_SCALAR_DOUBLE,
                                                .default_value = 0x4002000000000000ull,
                                                .value = 0x4002000000000000ull};
    memset(it.constants[2].name, 'c', sizeof it.constants[2].name - 1);   /* the longest name there is */
    struct bytes b = {0};
    arc_iface_put(&b, &it);
    REQUIRE(!b.oom);
    enum { BINDING = 4 * 4 + 8 + 64 + 12 + 8, CONSTANT = 4 + 4 + 8 + 8 + 4 + 4 + 4 + 64 };
    const size_t head = 4 + 3 * BINDING + 4 + 12 + 4 + 64 + 16 + 12;
    CHECK_EQ(b.len, head + 4 + 3 * CONSTANT + 8);   /* then push_float_words */
    const uint8_t *c = b.p + head;
    CHECK_EQ(le32(c), 3);
    const uint8_t *c1 = c + 4 + CONSTANT;
    CHECK(le32(c1) == 0 && le32(c1 + 4) == KILN_SCALAR_UINT);           /* id, type */
    CHECK(le32(c1 + 8) == 1 && le32(c1 + 12) == 0);                     /* default_value, u64 */
    CHECK(le32(c1 + 16) == 64 && le32(c1 + 20) == 0);                   /* value, u64 */
    CHECK(le32(c1 + 24) == 1 && le32(c1 + 28) == 1 && le32(c1 + 32) == 1);   /* set, used, workgroup_axis */
    CHECK(!memcmp(c1 + 36, "local_size_x\0", 13));
    CHECK(le32(c1 + CONSTANT + 12) == 0x40020000u);                    /* the double's high half */
    struct bytes_reader r;
    bytes_reader_init(&r, b.p, b.len);
    kiln_program_interface back;
    char why[ARC_WHY_LEN];
    CHECK(arc_iface_read(&r, &back, why));
    CHECK(same_iface(&back, &it));
    CHECK_EQ(bytes_remaining(&r), 0);
    free(b.p);

    kiln_program_interface bad = it;
    bad.constants[0].type = (kiln_scalar_type)13;
    REFUSED(bad, "type 13");
    bad = it;
    bad.constants[0].value = 1ull << 32;   /* past a uint's 32 bits */
    REFUSED(bad, "past its type's 32 bits");
    bad = it;
    bad.constants[0].set = 2;
    REFUSED(bad, "set 2");
    bad = it;
    bad.constants[2].value = 0;            /* not set, yet not its default */
    REFUSED(bad, "not set, yet its value differs");
    bad = it;
    bad.constants[1].workgroup_axis = 4;
    REFUSED(bad, "workgroup_axis 4");
    bad = it;
    bad.constants[2].id = 0;               /* after (0, 1) */
    REFUSED(bad, "out of (id, axis) order");
    /* What the encoder never writes, made by hand in the bytes. */
    struct bytes e = {0};
    arc_iface_put(&e, &it);
    REQUIRE(!e.oom);
    e.p[head] = KILN_MAX_SPEC_CONSTANTS + 1;
    bytes_reader_init(&r, e.p, e.len);
    CHECK(!arc_iface_read(&r, &back, why) && strstr(why, "constant_count 33"));
    e.p[head] = 3;
    memset(e.p + head + 4 + 36, 'x', 64);   /* a name without its NUL */
    bytes_reader_init(&r, e.p, e.len);
    CHECK(!arc_iface_read(&r, &back, why) && strstr(why, "name is not NUL-terminated"));
    free(e.p);
}

int main(void)
{
    RUN(front_round_trip);
    RUN(interface_bytes_on_disk);
    RUN(interface_ranges_are_checked);
    RUN(interface_constants_on_disk_and_checked);
    RUN(front_value_checks);
    RUN(front_cut_and_flipped);
    RUN(note_round_trip_and_checks);
    RUN(back_value_checks);
    return TEST_SUMMARY();
}
