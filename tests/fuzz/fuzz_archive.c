/*
 * fuzz_archive.c: fuzz target for the archive reader. Any bytes are opened
 * as an archive of a fixed device pair; lookups and a full verify run over
 * them. A crash, a sanitizer report or a hit whose bytes lie outside the
 * input is a bug. Built with libFuzzer (-DKILN_FUZZ=ON, clang) or linked
 * with replay.c, which feeds it a corpus without libFuzzer (CTest does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"

static const struct arc_device k_dev = {.cache_uuid = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6},
                                        .driver_version = 1, .vendor_id = 2, .device_id = 3, .name_hash = 4};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arc_file f;
    if (arc_file_open(&f, data, size, &k_dev) != KILN_OK)
        return 0;
    static const char *keys[] = {"", "a", "front-key", "back-key", "note"};
    for (int kind = ARC_FRONT; kind <= ARC_NOTE; kind++)
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const uint8_t *v;
            size_t vl;
            if (arc_file_find(&f, (enum arc_kind)kind, keys[i], strlen(keys[i]), &v, &vl) == ARC_HIT &&
                (v < data || vl > size || v - data > (ptrdiff_t)(size - vl)))
                abort();   /* a hit must lie inside the input */
        }
    uint64_t counts[ARC_CAUSE_COUNT];
    arc_file_verify(&f, counts);
    arc_file_close(&f);
    return 0;
}

/* Writes seed archives into dir: a good one, one cut short, one damaged. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    struct arc_writer w;
    arc_writer_init(&w, &k_dev);
    arc_writer_add(&w, ARC_FRONT, "front-key", 9, "spirv-and-interface", 19);
    arc_writer_add(&w, ARC_BACK, "back-key", 8, "pipeline-cache-blob", 19);
    arc_writer_add(&w, ARC_NOTE, "note", 4, "", 0);
    arc_writer_add(&w, ARC_FRONT, "", 0, "empty key", 9);
    const uint8_t *data;
    size_t len;
    if (arc_writer_close(&w, &data, &len) != KILN_OK)
        return 1;
    static const char *names[] = {"good.arc", "cut.arc", "flipped.arc"};
    int bad = 0;
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *out = fopen(path, "wb");
        if (!out)
            return 1;
        uint8_t *copy = malloc(len);
        memcpy(copy, data, len);
        size_t n = i == 1 ? len - 37 : len;
        if (i == 2)
            copy[len / 2] ^= 0x5a;
        bad |= fwrite(copy, 1, n, out) != n;
        bad |= fclose(out) != 0;
        free(copy);
    }
    arc_writer_finish(&w);
    return bad;
}
