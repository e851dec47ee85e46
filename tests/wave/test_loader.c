/* SPDX-License-Identifier: MIT */
/*
 * test_loader.c: AMDHSA code objects as clang and ld.lld make them, read
 * by the loader: kernels, their descriptors (the initial register setup,
 * counts, LDS), arguments with the hidden ones and their documented values
 * (read back by a kernel through the implicit argument pointer and the
 * dispatch packet), the relocatable and the linked forms alike. Then the
 * refusals, each naming what is wrong: not ELF, another machine, a target
 * kiln does not accept, a broken metadata note, a missing descriptor, a
 * relocation to an undefined symbol; and every truncation and many
 * corruptions of a real object load or fail without a crash (ASan and
 * UBSan builds check the "without").
 *
 * Skipped (exit 77) where clang cannot compile for amdgcn.
 */
#include "kernels/kernels.h"

#include "test.h"
#include "wave/interp.h"
#include "wave/loader.h"

static uint8_t *obj_bytes(const char *name, int link, size_t *len)
{
    char path[700];
    if (kt_compile(name, link, path, sizeof path) != 0)
        return NULL;
    return kt_read(path, len);
}

/* The offset of needle in bytes, or -1. */
static long find(const uint8_t *p, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(p + i, needle, k))
            return (long)i;
    return -1;
}

TEST(relocatable_and_linked)
{
    static const char *const names[] = {"control", "memory", "math"};
    for (int s = 0; s < 3; s++) {
        size_t lo, ls;
        uint8_t *o = obj_bytes(names[s], 0, &lo), *so = obj_bytes(names[s], 1, &ls);
        REQUIRE(o && so);
        struct wave_code a, b;
        REQUIRE_OK(wave_code_load(o, lo, &a));
        REQUIRE_OK(wave_code_load(so, ls, &b));
        CHECK(a.relocatable && !b.relocatable);
        CHECK(!strcmp(a.target, "gfx900") && !strcmp(b.target, "gfx900"));
        CHECK_EQ(a.code_object_version, 4);
        CHECK(!strcmp(a.target_full, "amdgcn-amd-amdhsa--gfx900"));
        CHECK_EQ(a.kernel_count, b.kernel_count);
        for (uint32_t i = 0; i < a.kernel_count && i < b.kernel_count; i++) {
            const struct wave_kernel *x = &a.kernels[i], *y = wave_code_kernel(&b, a.kernels[i].name);
            REQUIRE(y);
            CHECK_EQ(x->code_size, y->code_size);
            CHECK(x->code_size > 0 && !memcmp(a.image + x->code_addr, b.image + y->code_addr, x->code_size));
            CHECK_EQ(x->rsrc1, y->rsrc1);
            CHECK_EQ(x->rsrc2, y->rsrc2);
            CHECK_EQ(x->group_segment_size, y->group_segment_size);
            CHECK_EQ(x->kernarg_size, y->kernarg_size);
            CHECK_EQ(x->arg_count, y->arg_count);
            CHECK(x->setup.kernarg_segment_ptr);
            CHECK(x->setup.workgroup_id[0]);
            CHECK_EQ(x->wavefront_size, 64);
        }
        wave_code_finish(&a);
        wave_code_finish(&b);
        free(o);
        free(so);
    }
}

TEST(descriptors_and_arguments)
{
    size_t len;
    uint8_t *o = obj_bytes("memory", 0, &len);
    REQUIRE(o);
    struct wave_code c;
    REQUIRE_OK(wave_code_load(o, len, &c));
    free(o);
    const struct wave_kernel *k = wave_code_kernel(&c, "reduce");
    REQUIRE(k);
    CHECK_EQ(k->group_segment_size, 1024);   /* __local uint sh[256] */
    CHECK_EQ(k->reqd_size[0], 256);
    CHECK_EQ(k->reqd_size[1], 1);
    CHECK_EQ(k->explicit_count, 2);
    CHECK_EQ(k->args[0].kind, WAVE_ARG_GLOBAL_BUFFER);
    CHECK_EQ(k->args[0].offset, 0);
    CHECK_EQ(k->args[1].offset, 8);
    CHECK(k->args[1].is_const);
    CHECK_EQ(k->setup.workitem_id_dims, 1);
    k = wave_code_kernel(&c, "grid2d");
    REQUIRE(k);
    CHECK_EQ(k->setup.workitem_id_dims, 2);
    CHECK(k->setup.workgroup_id[1]);
    k = wave_code_kernel(&c, "reverse_local");
    REQUIRE(k);
    CHECK_EQ(k->args[1].kind, WAVE_ARG_DYNAMIC_SHARED_POINTER);
    CHECK_EQ(k->args[1].size, 4);
    CHECK_EQ(k->args[1].address_space, 3);
    k = wave_code_kernel(&c, "private_array");
    REQUIRE(k);
    CHECK(k->private_segment_size > 0);
    CHECK(k->setup.private_segment_buffer);
    CHECK(k->setup.private_segment_wave_offset);
    CHECK(wave_code_kernel(&c, "reduce.kd") == NULL);
    CHECK(wave_code_kernel(&c, "nothing") == NULL);
    wave_code_finish(&c);
}

TEST(hidden_arguments)
{
    size_t len;
    uint8_t *o = obj_bytes("hidden", 0, &len);
    REQUIRE(o);
    struct wave_code c;
    REQUIRE_OK(wave_code_load(o, len, &c));
    free(o);
    const struct wave_kernel *k = wave_code_kernel(&c, "hidden");
    REQUIRE(k);
    CHECK_EQ(k->explicit_count, 1);
    REQUIRE(k->arg_count >= 4);
    CHECK_EQ(k->args[1].kind, WAVE_ARG_HIDDEN_GLOBAL_OFFSET_X);
    CHECK_EQ(k->args[2].kind, WAVE_ARG_HIDDEN_GLOBAL_OFFSET_Y);
    CHECK(!strcmp(wave_arg_kind_name(k->args[1].kind), "hidden_global_offset_x"));
    CHECK(k->setup.dispatch_ptr);
    /* the fill: every hidden argument its documented value (here all 0),
     * the explicit ones untouched */
    uint8_t seg[256];
    memset(seg, 0xab, sizeof seg);
    REQUIRE(k->kernarg_size <= sizeof seg);
    struct wave_dispatch_info di = {.groups = {3, 1, 1}, .block = {64, 1, 1}, .dims = 1};
    wave_kernarg_fill(k, seg, &di);
    CHECK_EQ(seg[0], 0xab);
    for (uint32_t i = 8; i < k->kernarg_size; i++)
        CHECK_EQ(seg[i], 0);
    /* and a kernel reads them, and the dispatch packet, as kiln gives them */
    uint32_t out[4 * 192];
    struct wave_value arg = {.kind = WAVE_VALUE_BUFFER, .data = out, .size = sizeof out};
    struct wave_run_desc d = {.code = &c, .kernel = k, .groups = {3, 1, 1}, .block = {64, 1, 1}, .args = &arg,
                              .arg_count = 1};
    struct wave_result res;
    CHECK_OK(wave_run(&d, &res));
    wave_result_finish(&res);
    int bad = 0;
    for (int g = 0; g < 192; g++)
        bad += out[4 * g] != 0 || out[4 * g + 1] != 192 || out[4 * g + 2] != 1 || out[4 * g + 3] != 0;
    CHECK_EQ(bad, 0);
    wave_code_finish(&c);
}

/* An object llvm-mc assembled from hand-written directives and metadata:
 * another writer of the same format. */
TEST(assembled_object)
{
    char path[700];
    REQUIRE(kt_assemble("modifiers", path, sizeof path) == 0);
    size_t len;
    uint8_t *o = kt_read(path, &len);
    REQUIRE(o);
    struct wave_code c;
    REQUIRE_OK(wave_code_load(o, len, &c));
    free(o);
    REQUIRE(c.kernel_count == 1);
    const struct wave_kernel *k = &c.kernels[0];
    CHECK(!strcmp(k->name, "k"));
    CHECK(k->setup.kernarg_segment_ptr && !k->setup.private_segment_buffer && !k->setup.dispatch_ptr);
    CHECK_EQ(k->setup.user_sgpr_count, 2);
    CHECK(k->setup.workgroup_id[0]);
    CHECK_EQ(k->vgprs, 32);
    CHECK_EQ(k->kernarg_size, 8);
    CHECK_EQ(k->code_addr, 0);
    wave_code_finish(&c);
}

/* Loads bytes expecting a refusal whose message holds want. */
#define CHECK_REFUSED(bytes, n, want)                                                              \
    do {                                                                                           \
        struct wave_code c_;                                                                       \
        CHECK_RESULT(wave_code_load((bytes), (n), &c_), KILN_ERR_INVALID);                         \
        CHECK_MSG(want);                                                                           \
    } while (0)

TEST(refusals)
{
    size_t len;
    uint8_t *o = obj_bytes("control", 0, &len);
    REQUIRE(o);
    uint8_t *p = malloc(len);
    REQUIRE(p);
    CHECK_REFUSED(o, 0, "too few for an ELF64 header");
    CHECK_REFUSED(o, 63, "too few for an ELF64 header");
    CHECK_REFUSED((const uint8_t *)"this is not an object at all, this is not an object at all, this is not.", 70,
                  "not an ELF file");
    memcpy(p, o, len);
    p[4] = 1;   /* ELFCLASS32 */
    CHECK_REFUSED(p, len, "not a little-endian ELF64 object");
    memcpy(p, o, len);
    p[18] = 62, p[19] = 0;   /* EM_X86_64 */
    CHECK_REFUSED(p, len, "not EM_AMDGPU (224)");
    memcpy(p, o, len);
    p[48] = 0x30;   /* e_flags' machine: gfx908 */
    CHECK_REFUSED(p, len, "the target is gfx908");
    memcpy(p, o, len);
    p[48] = 0x99;
    CHECK_REFUSED(p, len, "machine 0x99");
    memcpy(p, o, len);
    p[8] = 9;   /* EI_ABIVERSION */
    CHECK_REFUSED(p, len, "EI_ABIVERSION is 9");
    memcpy(p, o, len);
    p[8] = 1;   /* says v3, the metadata says v4 */
    CHECK_REFUSED(p, len, "EI_ABIVERSION 1 says code object v3, the metadata v4");
    /* the metadata: a key renamed, a version from the future */
    memcpy(p, o, len);
    long at = find(p, len, "amdhsa.kernels");
    REQUIRE(at >= 0);
    p[at + 7] = 'K';
    CHECK_REFUSED(p, len, "no amdhsa.kernels");
    memcpy(p, o, len);
    at = find(p, len, "amdhsa.version");
    REQUIRE(at >= 0);
    /* the value follows the 14-byte key: fixarray of two fixints */
    REQUIRE(p[at + 14] == 0x92);
    p[at + 15] = 2;
    CHECK_REFUSED(p, len, "amdhsa.version 2.1");
    memcpy(p, o, len);
    at = find(p, len, "global_buffer");
    REQUIRE(at >= 0);
    memcpy(p + at, "global_bufferZ", 13);
    p[at + 12] = 'Z';
    CHECK_REFUSED(p, len, "unknown .value_kind 'global_buffeZ'");
    /* the descriptor's symbol renamed in the string table (the last
     * place the name is; the metadata's .symbol comes first): no descriptor */
    memcpy(p, o, len);
    at = -1;
    for (long from = 0, f; (f = find(p + from, len - (size_t)from, "nested.kd")) >= 0; from += f + 1)
        at = from + f;
    REQUIRE(at >= 0);
    p[at] = 'N';
    CHECK_REFUSED(p, len, "no symbol 'nested.kd'");
    /* an undefined symbol */
    size_t elen;
    uint8_t *e = obj_bytes("external", 0, &elen);
    REQUIRE(e);
    CHECK_REFUSED(e, elen, "refers to 'kiln_wave_elsewhere', which the object does not define");
    free(e);
    free(p);
    free(o);
}

/* Every prefix of a real object, and each byte replaced in turn: a result
 * or an error with a message, never a crash or an overread. */
TEST(truncations_and_corruptions)
{
    static const char *const names[] = {"memory", "hidden"};
    for (int s = 0; s < 2; s++) {
        for (int link = 0; link < 2; link++) {
            size_t len;
            uint8_t *o = obj_bytes(names[s], link, &len);
            REQUIRE(o);
            int loaded = 0, refused = 0;
            for (size_t n = 0; n < len; n++) {
                uint8_t *cut = malloc(n ? n : 1);   /* exactly n bytes: ASan sees an overread */
                REQUIRE(cut);
                memcpy(cut, o, n);
                struct wave_code c;
                kiln_result r = wave_code_load(cut, n, &c);
                if (r == KILN_OK) {
                    loaded++;
                    wave_code_finish(&c);
                } else {
                    refused++;
                    CHECK(kiln_last_error()[0] != 0);
                }
                free(cut);
            }
            CHECK(refused > 0);
            uint8_t *p = malloc(len);
            REQUIRE(p);
            static const uint8_t values[] = {0x00, 0xff, 0x80, 0x7f, 0x01};
            for (size_t i = 0; i < len; i++) {
                memcpy(p, o, len);
                p[i] = values[i % 5] == o[i] ? (uint8_t)~o[i] : values[i % 5];
                struct wave_code c;
                if (wave_code_load(p, len, &c) == KILN_OK) {
                    /* whatever loads is whole: each kernel's code and descriptor inside the image */
                    for (uint32_t k = 0; k < c.kernel_count; k++) {
                        CHECK(c.kernels[k].code_addr + c.kernels[k].code_size <= c.image_size);
                        CHECK(c.kernels[k].kd_addr + 64 <= c.image_size);
                    }
                    wave_code_finish(&c);
                }
            }
            free(p);
            free(o);
            (void)loaded;
        }
    }
}

int main(void)
{
    kt_require_target();
    RUN(relocatable_and_linked);
    RUN(descriptors_and_arguments);
    RUN(hidden_arguments);
    RUN(assembled_object);
    RUN(refusals);
    RUN(truncations_and_corruptions);
    return TEST_SUMMARY();
}
