/* SPDX-License-Identifier: MIT */
/*
 * test_frame.c: the stream's framing (src/transport/frame.c). Frames fed in
 * pieces of every size come out whole and in order; a buffer too small
 * gets the size needed and the frame stays queued; a bad magic or a length
 * past 64 MiB latches the reader dead: the whole frames before it still come
 * out, then every call says protocol mismatch with the bad header's offset.
 */
#include <stdlib.h>

#include "test.h"
#include "transport/transport.h"

/* Appends a frame of n bytes (each byte seed + its index) to s. */
static size_t put_frame(uint8_t *s, size_t n, uint8_t seed)
{
    if (tp_frame_header(s, n) != KILN_OK)
        return 0;
    for (size_t i = 0; i < n; i++)
        s[TP_FRAME_HEADER + i] = (uint8_t)(seed + i);
    return TP_FRAME_HEADER + n;
}

TEST(frames_in_pieces_of_every_size)
{
    static const size_t sizes[] = {0, 1, 7, 8, 9, 100, 4096, 0, 3};
    uint8_t stream[8192 + 256];
    size_t total = 0;
    for (size_t i = 0; i < KILN_ARRAY_LEN(sizes); i++)
        total += put_frame(stream + total, sizes[i], (uint8_t)i);
    for (size_t piece = 1; piece <= 13; piece += 3) {
        struct tp_frame_reader r;
        tp_frame_reader_init(&r);
        size_t fed = 0, got = 0;
        uint8_t out[4096];
        while (got < KILN_ARRAY_LEN(sizes)) {
            size_t len;
            kiln_result res = tp_frame_take(&r, out, sizeof out, &len);
            if (res == KILN_ERR_PENDING) {
                REQUIRE(fed < total);
                CHECK(tp_frame_want(&r) > 0);
                size_t n = KILN_MIN(piece, total - fed);
                REQUIRE(tp_frame_feed(&r, stream + fed, n) == KILN_OK);
                fed += n;
                continue;
            }
            REQUIRE(res == KILN_OK);
            CHECK_EQ(len, sizes[got]);
            for (size_t i = 0; i < len; i++)
                if (out[i] != (uint8_t)(got + i)) {
                    CHECK(out[i] == (uint8_t)(got + i));
                    break;
                }
            got++;
        }
        CHECK_EQ(fed, total);
        size_t len = 99;
        CHECK_RESULT(tp_frame_take(&r, out, sizeof out, &len), KILN_ERR_PENDING);
        CHECK_EQ(len, 0);
        tp_frame_reader_finish(&r);
    }
}

TEST(too_small_a_buffer_keeps_the_frame)
{
    uint8_t stream[64];
    size_t n = put_frame(stream, 40, 5);
    n += put_frame(stream + n, 2, 9);
    struct tp_frame_reader r;
    tp_frame_reader_init(&r);
    REQUIRE_OK(tp_frame_feed(&r, stream, n));
    uint8_t out[40];
    size_t len = 0;
    CHECK_RESULT(tp_frame_take(&r, out, 39, &len), KILN_ERR_LIMIT);
    CHECK_EQ(len, 40);   /* the size needed */
    CHECK_MSG("40 bytes");
    CHECK_RESULT(tp_frame_take(&r, out, 0, &len), KILN_ERR_LIMIT);
    CHECK_EQ(len, 40);
    CHECK_OK(tp_frame_take(&r, out, 40, &len));   /* still there */
    CHECK_EQ(len, 40);
    CHECK_EQ(out[0], 5);
    CHECK_EQ(out[39], 5 + 39);
    CHECK_OK(tp_frame_take(&r, out, 40, &len));
    CHECK_EQ(len, 2);
    CHECK_EQ(out[1], 10);
    tp_frame_reader_finish(&r);
}

/* A 4 MiB frame grows the reader's buffer; once it is taken and nothing
 * is left the buffer goes back, so an idle connection keeps nothing of its
 * largest frame; small frames after it still come out. */
TEST(a_big_frame_s_buffer_is_given_back)
{
    size_t big = 4u << 20;
    uint8_t *stream = malloc(big + 64), *out = malloc(big);
    REQUIRE(stream && out);
    size_t n = put_frame(stream, (uint32_t)big, 3);
    struct tp_frame_reader r;
    tp_frame_reader_init(&r);
    for (size_t at = 0; at < n; at += 65536)
        REQUIRE_OK(tp_frame_feed(&r, stream + at, KILN_MIN((size_t)65536, n - at)));
    CHECK(r.cap >= big);
    size_t len = 0;
    CHECK_OK(tp_frame_take(&r, out, big, &len));
    CHECK_EQ(len, big);
    CHECK(r.cap <= TP_FRAME_KEEP);
    n = put_frame(stream, 7, 1);
    REQUIRE_OK(tp_frame_feed(&r, stream, n));
    CHECK_OK(tp_frame_take(&r, out, big, &len));
    CHECK_EQ(len, 7);
    CHECK(r.cap <= TP_FRAME_KEEP);
    tp_frame_reader_finish(&r);
    free(stream);
    free(out);
}

TEST(bad_magic_latches_dead)
{
    uint8_t stream[64];
    size_t n = put_frame(stream, 4, 1);
    size_t bad = n;
    n += put_frame(stream + n, 4, 2);
    stream[bad] ^= 0x20;   /* 'K' -> 'k' */
    struct tp_frame_reader r;
    tp_frame_reader_init(&r);
    CHECK_RESULT(tp_frame_feed(&r, stream, n), KILN_ERR_IO);
    CHECK_MSG("protocol mismatch");
    CHECK_MSG("stream offset 12");
    CHECK_MSG("magic 0x464e4c6b");
    CHECK(r.dead);
    uint8_t out[16];
    size_t len = 7;
    /* The whole frame before it still comes out, then nothing more. */
    CHECK_OK(tp_frame_take(&r, out, sizeof out, &len));
    CHECK_EQ(len, 4);
    CHECK_EQ(out[0], 1);
    CHECK_RESULT(tp_frame_take(&r, out, sizeof out, &len), KILN_ERR_IO);
    CHECK_MSG("protocol mismatch");
    CHECK_MSG("stream offset 12");
    CHECK_EQ(len, 0);
    CHECK_RESULT(tp_frame_take(&r, out, sizeof out, &len), KILN_ERR_IO);
    CHECK_RESULT(tp_frame_feed(&r, stream, 8), KILN_ERR_IO);
    CHECK_MSG("protocol mismatch");
    tp_frame_reader_finish(&r);
}

TEST(oversize_length_latches_dead)
{
    uint8_t hdr[TP_FRAME_HEADER];
    REQUIRE_OK(tp_frame_header(hdr, TP_FRAME_MAX));   /* the limit itself is a frame */
    struct tp_frame_reader r;
    tp_frame_reader_init(&r);
    CHECK_OK(tp_frame_feed(&r, hdr, sizeof hdr));
    CHECK_EQ(tp_frame_want(&r), TP_FRAME_MAX);
    tp_frame_reader_finish(&r);

    CHECK_RESULT(tp_frame_header(hdr, (size_t)TP_FRAME_MAX + 1), KILN_ERR_LIMIT);
    CHECK_MSG("67108864");
    static const uint8_t over[8] = {'K', 'L', 'N', 'F', 0x01, 0x00, 0x00, 0x04};   /* 64 MiB + 1 */
    tp_frame_reader_init(&r);
    /* Fed one byte at a time: the header is judged when its last byte lands. */
    for (size_t i = 0; i < 7; i++)
        CHECK_OK(tp_frame_feed(&r, over + i, 1));
    CHECK_RESULT(tp_frame_feed(&r, over + 7, 1), KILN_ERR_IO);
    CHECK_MSG("length 67108865 is past the frame limit");
    CHECK_MSG("stream offset 0");
    uint8_t out[8];
    size_t len;
    CHECK_RESULT(tp_frame_take(&r, out, sizeof out, &len), KILN_ERR_IO);
    tp_frame_reader_finish(&r);
}

int main(void)
{
    RUN(frames_in_pieces_of_every_size);
    RUN(too_small_a_buffer_keeps_the_frame);
    RUN(a_big_frame_s_buffer_is_given_back);
    RUN(bad_magic_latches_dead);
    RUN(oversize_length_latches_dead);
    return TEST_SUMMARY();
}
