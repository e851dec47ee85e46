/* SPDX-License-Identifier: MIT */
/*
 * test_bytes.c: base/bytes.h, the writer and the bounds-checked reader every
 * decoder of outside bytes stands on: exact-fit reads, a read one byte past
 * the end, overrun that latches, fixed string fields, and the writer's
 * bytes read back (little-endian whatever the host).
 */
#include <math.h>
#include <stdlib.h>

#include "base/base.h"
#include "test.h"

TEST(exact_fit_reads)
{
    static const uint8_t data[] = {0x11, 0x44, 0x33, 0x22, 0x11, 0x08, 0x07, 0x06, 0x05,
                                   0x04, 0x03, 0x02, 0x01, 'a', 'b', 'c'};
    struct bytes_reader r;
    bytes_reader_init(&r, data, sizeof data);
    CHECK_EQ(bytes_remaining(&r), sizeof data);
    CHECK_EQ(bytes_read_u8(&r), 0x11);
    CHECK_EQ(bytes_read_u32(&r), 0x11223344);
    CHECK(bytes_read_u64(&r) == 0x0102030405060708ull);
    CHECK_EQ(bytes_remaining(&r), 3);
    const uint8_t *p = bytes_read_span(&r, 3);
    CHECK(p == data + 13);   /* in place, not copied */
    CHECK_EQ(bytes_remaining(&r), 0);
    CHECK(!r.overrun);
    CHECK(bytes_read_span(&r, 0) == data + sizeof data);   /* nothing more: still fits */
    CHECK(!r.overrun);
}

TEST(one_byte_past_the_end)
{
    static const uint8_t data[7] = {1, 2, 3, 4, 5, 6, 7};
    /* Each width read at a place where it lacks exactly one byte. */
    for (int w = 0; w < 4; w++) {
        struct bytes_reader r;
        size_t need = w == 0 ? 1 : w == 1 ? 4 : w == 2 ? 8 : 5;
        bytes_reader_init(&r, data, need - 1);
        uint8_t out[8];
        memset(out, 0xee, sizeof out);
        uint64_t v = 1;
        if (w == 0)
            v = bytes_read_u8(&r);
        else if (w == 1)
            v = bytes_read_u32(&r);
        else if (w == 2)
            v = bytes_read_u64(&r);
        else {
            bytes_read_copy(&r, out, need);
            v = out[0] | out[need - 1];
        }
        CHECK_EQ(v, 0);   /* zeros, not the bytes that were there */
        CHECK(r.overrun);
        CHECK_EQ(r.at, 0);   /* nothing was consumed */
        CHECK_EQ(bytes_remaining(&r), 0);
    }
    struct bytes_reader r;
    bytes_reader_init(&r, data, sizeof data);
    CHECK(bytes_read_span(&r, sizeof data + 1) == NULL);
    CHECK(r.overrun);
    /* A length near SIZE_MAX cannot wrap past the end. */
    bytes_reader_init(&r, data, sizeof data);
    (void)bytes_read_u8(&r);
    CHECK(bytes_read_span(&r, SIZE_MAX) == NULL);
    CHECK(r.overrun);
    /* No data at all. */
    bytes_reader_init(&r, NULL, 0);
    CHECK_EQ(bytes_read_u32(&r), 0);
    CHECK(r.overrun);
}

TEST(overrun_latches)
{
    static const uint8_t data[6] = {9, 8, 7, 6, 5, 4};
    struct bytes_reader r;
    bytes_reader_init(&r, data, sizeof data);
    CHECK_EQ(bytes_read_u8(&r), 9);
    CHECK_EQ(bytes_read_u64(&r), 0);   /* 5 bytes left: fails */
    CHECK(r.overrun);
    /* Every later read fails too, even those the bytes left would hold. */
    CHECK_EQ(bytes_read_u8(&r), 0);
    CHECK_EQ(bytes_read_u32(&r), 0);
    CHECK(bytes_read_span(&r, 1) == NULL);
    CHECK(bytes_read_span(&r, 0) == NULL);
    char s[4] = "xyz";
    CHECK(!bytes_read_str(&r, s, 1));
    CHECK_EQ(s[0], 0);
    CHECK(r.overrun);
    CHECK_EQ(bytes_remaining(&r), 0);
}

TEST(string_fields)
{
    struct bytes b = {0};
    bytes_put_str(&b, "main", 8);
    bytes_put_str(&b, "a name that is too long", 8);   /* cut to 7 bytes and a NUL */
    bytes_put_str(&b, "", 4);
    REQUIRE(!b.oom && b.len == 20);
    CHECK(!memcmp(b.p, "main\0\0\0\0a name \0\0\0\0\0", 20));
    struct bytes_reader r;
    bytes_reader_init(&r, b.p, b.len);
    char s[8];
    CHECK(bytes_read_str(&r, s, 8) && !strcmp(s, "main"));
    CHECK(bytes_read_str(&r, s, 8) && !strcmp(s, "a name "));
    CHECK(bytes_read_str(&r, s, 4) && !strcmp(s, ""));
    CHECK(!r.overrun);
    /* A field without its NUL is refused (not an overrun), and what follows
     * a NUL is not kept. */
    static const uint8_t raw[] = {'a', 'b', 'c', 'd', 'e', 0, 'x', 'y'};
    bytes_reader_init(&r, raw, sizeof raw);
    memset(s, 0x55, sizeof s);
    CHECK(!bytes_read_str(&r, s, 5));
    CHECK(!r.overrun);
    CHECK(!memcmp(s, "\0\0\0\0\0", 5));
    bytes_reader_init(&r, raw, sizeof raw);
    CHECK(bytes_read_str(&r, s, 8));
    CHECK(!strcmp(s, "abcde") && s[6] == 0 && s[7] == 0);
    free(b.p);
}

TEST(writer_round_trip)
{
    struct bytes b = {0};
    bytes_put_u8(&b, 0xab);
    bytes_put_u32(&b, 0xdeadbeef);
    bytes_put_u64(&b, 0x0123456789abcdefull);
    bytes_put_f64(&b, -1.5);
    bytes_put_f64(&b, INFINITY);
    bytes_put(&b, "span", 4);
    bytes_put(&b, NULL, 3);   /* zeros */
    REQUIRE(!b.oom);
    CHECK_EQ(b.len, 1 + 4 + 8 + 8 + 8 + 4 + 3);
    /* Little-endian on every host. */
    CHECK(!memcmp(b.p, "\xab\xef\xbe\xad\xde\xef\xcd\xab\x89\x67\x45\x23\x01", 13));
    struct bytes_reader r;
    bytes_reader_init(&r, b.p, b.len);
    CHECK_EQ(bytes_read_u8(&r), 0xab);
    CHECK(bytes_read_u32(&r) == 0xdeadbeefu);
    CHECK(bytes_read_u64(&r) == 0x0123456789abcdefull);
    CHECK(bytes_read_f64(&r) == -1.5);
    CHECK(isinf(bytes_read_f64(&r)));
    char span[4];
    bytes_read_copy(&r, span, 4);
    CHECK(!memcmp(span, "span", 4));
    const uint8_t *z = bytes_read_span(&r, 3);
    CHECK(z && !z[0] && !z[1] && !z[2]);
    CHECK_EQ(bytes_remaining(&r), 0);
    CHECK(!r.overrun);
    free(b.p);
}

TEST(writer_out_of_memory_latches)
{
    struct bytes b = {0};
    bytes_put_u32(&b, 1);
    mem_fault_arm(1);   /* the next allocation fails */
    bytes_put(&b, NULL, 1 << 20);
    mem_fault_arm(0);
    CHECK(b.oom);
    size_t len = b.len;
    bytes_put_u64(&b, 2);   /* memory is back; the buffer stays failed */
    bytes_put_str(&b, "x", 4);
    CHECK(b.oom);
    CHECK_EQ(b.len, len);
    free(b.p);
}

int main(void)
{
    RUN(exact_fit_reads);
    RUN(one_byte_past_the_end);
    RUN(overrun_latches);
    RUN(string_fields);
    RUN(writer_round_trip);
    RUN(writer_out_of_memory_latches);
    return TEST_SUMMARY();
}
