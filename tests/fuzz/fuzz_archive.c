/* SPDX-License-Identifier: MIT */
/*
 * fuzz_archive.c: fuzz target for the archive reader and its entry codecs.
 * Any bytes are opened as an archive of a fixed device pair; lookups and a
 * full verify run over them, and every entry that checks out goes through
 * its kind's decoder; the bytes themselves are also decoded as each kind's
 * value (and a note's key). A crash, a sanitizer report, a hit whose bytes
 * lie outside the input, or a decoded value past its limits is a bug.
 * Built with libFuzzer (-DKILN_FUZZ=ON, clang) or linked with replay.c,
 * which feeds it a corpus without libFuzzer (CTest does).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive/archive.h"

static const struct arc_device k_dev = {.cache_uuid = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6},
                                        .driver_version = 1, .vendor_id = 2, .device_id = 3, .name_hash = 4};

/* Decodes key and value as an entry of kind; what a decoder accepts must
 * lie within the value and within the limits. */
static void decode(uint32_t kind, const uint8_t *key, size_t key_len, const uint8_t *value, size_t len)
{
    char why[ARC_WHY_LEN];
    if (kind == ARC_FRONT) {
        struct arc_front f;
        if (!arc_front_decode(value, len, &f, why))
            return;
        if (f.iface.binding_count > KILN_MAX_BINDINGS || !memchr(f.iface.entry, 0, sizeof f.iface.entry) ||
            f.log < (const char *)value || f.log_len > len || f.words * 4 > len || f.spirv + f.words * 4 != value + len)
            abort();
        uint32_t *words = malloc(f.words * 4);
        if (words)
            arc_front_spirv(&f, words);
        free(words);
    } else if (kind == ARC_NOTE) {
        struct arc_note n;
        if (arc_note_decode(key, key_len, value, len, &n, why) && !memchr(n.name, 0, sizeof n.name))
            abort();
    } else {
        (void)arc_back_decode(value, len, why);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The bytes as a value of each kind (a note's key: its first 20). */
    for (uint32_t kind = ARC_FRONT; kind <= ARC_NOTE; kind++)
        decode(kind, data, size < ARC_NOTE_KEY_LEN ? size : ARC_NOTE_KEY_LEN, data, size);
    struct arc_file f;
    if (arc_file_open(&f, data, size, &k_dev) != KILN_OK)
        return 0;
    static const char *keys[] = {"", "a", "front-key", "back-key", "note"};
    for (int kind = ARC_FRONT; kind <= ARC_NOTE; kind++)
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const uint8_t *v;
            size_t vl;
            if (arc_file_find(&f, (enum arc_kind)kind, keys[i], strlen(keys[i]), NULL, &v, &vl) == ARC_HIT &&
                (v < data || vl > size || v - data > (ptrdiff_t)(size - vl)))
                abort();   /* a hit must lie inside the input */
        }
    uint64_t counts[ARC_CAUSE_COUNT];
    arc_file_verify(&f, counts);
    for (uint32_t i = 0; i < f.ref_count; i++) {
        uint32_t kind;
        const uint8_t *key, *value;
        size_t key_len, value_len;
        if (arc_file_entry(&f, i, NULL, &kind, &key, &key_len, &value, &value_len) == ARC_HIT)
            decode(kind, key, key_len, value, value_len);
    }
    arc_file_close(&f);
    return 0;
}

/* Writes seed archives into dir: a good one, one cut short, one damaged.
 * Besides raw entries they hold one valid value of each kind, as kiln
 * writes them. */
int fuzz_write_seeds(const char *dir);
int fuzz_write_seeds(const char *dir)
{
    struct arc_writer w;
    arc_writer_init(&w, &k_dev);
    arc_writer_add(&w, ARC_FRONT, "front-key", 9, "spirv-and-interface", 19);
    arc_writer_add(&w, ARC_BACK, "back-key", 8, "pipeline-cache-blob", 19);
    arc_writer_add(&w, ARC_NOTE, "note", 4, "", 0);
    arc_writer_add(&w, ARC_FRONT, "", 0, "empty key", 9);
    kiln_program_interface iface = {.binding_count = 3, .workgroup_size = {64, 1, 1}, .spirv_words = 5,
                                    .params_read = 1, .lens_read = 2, .groups_read = 1};
    iface.bindings[0] = (kiln_binding_info){.binding = 0, .kind = KILN_BINDING_STORAGE_BUFFER,
                                            .access = KILN_ACCESS_READ, .min_size = 4, .name = "In", .count = 1};
    iface.bindings[1] = (kiln_binding_info){.set = 2, .binding = 1, .kind = KILN_BINDING_STORAGE_TEXEL_BUFFER,
                                            .access = KILN_ACCESS_READ, .name = "T", .count = 4,
                                            .format = KILN_FORMAT_RGBA8};
    iface.bindings[2] = (kiln_binding_info){.set = 2, .binding = 3, .kind = KILN_BINDING_STORAGE_IMAGE,
                                            .access = KILN_ACCESS_WRITE, .name = "Img", .count = 1,
                                            .format = KILN_FORMAT_R32F, .image_dims = 3};   /* format 8 */
    snprintf(iface.entry, sizeof iface.entry, "main");
    iface.constant_count = 2;   /* one id sizing the workgroup and a constant (format 7) */
    iface.constants[0] = (kiln_spec_constant_info){.id = 0, .type = KILN_SCALAR_UINT, .default_value = 32,
                                                   .value = 64, .set = 1, .used = 1, .name = "BLOCK"};
    iface.constants[1] = (kiln_spec_constant_info){.id = 0, .type = KILN_SCALAR_UINT, .default_value = 1,
                                                   .value = 64, .set = 1, .used = 1, .workgroup_axis = 1,
                                                   .name = "local_size_x"};
    static const uint32_t spirv[5] = {0x07230203u, 0x00010500u, 0, 8, 0};
    struct bytes front = {0}, key = {0}, note = {0};
    arc_front_encode(&front, &iface, "a log\n", spirv, 5);
    struct arc_note n = {.what = ARC_NOTE_USED, .front_hash = {1, 2, 3}, .words = 5, .noted_ns = 7, .name = "p"};
    arc_note_encode(&n, &key, &note);
    if (front.oom || key.oom || note.oom)
        return 1;
    arc_writer_add(&w, ARC_FRONT, "front-value", 11, front.p, front.len);
    arc_writer_add(&w, ARC_NOTE, key.p, key.len, note.p, note.len);
    free(front.p);
    free(key.p);
    free(note.p);
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
