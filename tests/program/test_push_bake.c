/* SPDX-License-Identifier: MIT */
/*
 * test_push_bake.c: baking a shader's own push-constant words into its
 * SPIR-V (src/program/push_bake.c). Each module is compiled from GLSL with
 * shaderc (vulkan1.1, unoptimized, as glslangValidator -V --target-env
 * vulkan1.1 makes it), baked, and checked the way a user of the variant
 * would see it: the output validates (SPIRV-Tools' validator in process and
 * the spirv-val tool, --target-env vulkan1.1 both); the loads of the baked
 * members are gone and the others remain; each constant that took a load's
 * place holds the member's bytes. Running the variants on lavapipe waits for
 * the public API to take a program's own push block.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <spirv/unified1/spirv.h>

#include "base/base.h"
#include "program/program_private.h"
#include "test.h"

struct mod {
    uint32_t *w;
    size_t n;
};

/* Compiles a compute shader; an empty module (n 0) on failure, printed. */
static struct mod glsl(const char *src)
{
    struct mod m = {0};
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t o = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    shaderc_compilation_result_t r =
        shaderc_compile_into_spv(c, src, strlen(src), shaderc_compute_shader, "t.comp", "main", o);
    if (shaderc_result_get_compilation_status(r) == shaderc_compilation_status_success) {
        m.n = shaderc_result_get_length(r) / 4;
        m.w = malloc(m.n * 4);
        memcpy(m.w, shaderc_result_get_bytes(r), m.n * 4);
    } else {
        fprintf(stderr, "glsl: %s\n", shaderc_result_get_error_message(r));
    }
    shaderc_result_release(r);
    shaderc_compile_options_release(o);
    shaderc_compiler_release(c);
    return m;
}

/* spirv-val for the module's SPIR-V version (--target-env vulkan1.1 for
 * 1.3, what these tests compile; vulkan1.2 for kiln's own 1.5), in process
 * and (when installed) the tool itself. */
static bool valid(const uint32_t *w, size_t n, const char *what)
{
    uint32_t minor = n > 1 ? (w[1] >> 8) & 0xff : 0;
    spv_target_env env = minor <= 3 ? SPV_ENV_VULKAN_1_1 : minor <= 5 ? SPV_ENV_VULKAN_1_2 : SPV_ENV_VULKAN_1_3;
    const char *env_name = minor <= 3 ? "vulkan1.1" : minor <= 5 ? "vulkan1.2" : "vulkan1.3";
    spv_context c = spvContextCreate(env);
    spv_const_binary_t bin = {w, n};
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidate(c, &bin, &diag);
    if (r != SPV_SUCCESS)
        fprintf(stderr, "%s: spirv-val: %s\n", what, diag && diag->error ? diag->error : "(no message)");
    spvDiagnosticDestroy(diag);
    spvContextDestroy(c);
    if (r != SPV_SUCCESS)
        return false;
    static int have_tool = -1;
    if (have_tool < 0)
        have_tool = system("command -v spirv-val >/dev/null 2>&1") == 0;
    if (!have_tool)
        return true;
    char path[] = "/tmp/kiln-push-bake-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    bool ok = write(fd, w, n * 4) == (ssize_t)(n * 4);
    close(fd);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "spirv-val --target-env %s %s", env_name, path);
    ok = ok && system(cmd) == 0;
    unlink(path);
    if (!ok)
        fprintf(stderr, "%s: the spirv-val tool refused it\n", what);
    return ok;
}

/* The instruction defining `id`, or NULL: of the opcodes these tests look
 * up (each with a result type, then the result id). */
static const uint32_t *def_of(const struct mod *m, uint32_t id)
{
    static const uint32_t ops[] = {SpvOpVariable, SpvOpAccessChain, SpvOpInBoundsAccessChain, SpvOpConstant,
                                   SpvOpConstantComposite, SpvOpCopyObject, SpvOpUConvert, SpvOpSConvert,
                                   SpvOpFConvert, SpvOpLoad};
    for (size_t at = 5; at < m->n; at += m->w[at] >> 16) {
        uint32_t op = m->w[at] & 0xffff;
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (op == ops[k] && (m->w[at] >> 16) >= 3 && m->w[at + 2] == id)
                return m->w + at;
    }
    return NULL;
}

/* The index path of a pointer from the push-constant variable through
 * access chains (a dynamic index reads DYN); false when it is not one. */
#define DYN 0xffffffffu
static bool push_path(const struct mod *m, uint32_t ptr, uint32_t *path, uint32_t *len)
{
    uint32_t rev[32], n = 0;
    for (int hops = 0; hops < 32; hops++) {
        const uint32_t *d = def_of(m, ptr);
        if (!d)
            return false;
        uint32_t op = d[0] & 0xffff, words = d[0] >> 16;
        if (op == SpvOpVariable) {
            if (d[3] != SpvStorageClassPushConstant)
                return false;
            *len = n;
            for (uint32_t i = 0; i < n; i++)
                path[i] = rev[n - 1 - i];
            return true;
        }
        if (op != SpvOpAccessChain && op != SpvOpInBoundsAccessChain)
            return false;
        for (uint32_t i = words - 1; i >= 4 && n < 32; i--) {
            const uint32_t *k = def_of(m, d[i]);
            rev[n++] = k && (k[0] & 0xffff) == SpvOpConstant ? k[3] : DYN;
        }
        ptr = d[3];
    }
    return false;
}

/* Result ids of the loads through push-constant pointers with this index
 * path (NULL path, len ~0: every such load); returns how many. */
static uint32_t push_loads(const struct mod *m, const uint32_t *want, uint32_t want_len, uint32_t *ids,
                           uint32_t cap)
{
    uint32_t found = 0;
    for (size_t at = 5; at < m->n; at += m->w[at] >> 16) {
        if ((m->w[at] & 0xffff) != SpvOpLoad)
            continue;
        uint32_t path[32], len;
        if (!push_path(m, m->w[at + 3], path, &len))
            continue;
        if (want && (len != want_len || memcmp(path, want, len * 4)))
            continue;
        if (ids && found < cap)
            ids[found] = m->w[at + 2];
        found++;
    }
    return found;
}
#define PATH(...) (const uint32_t[]){__VA_ARGS__}, sizeof((const uint32_t[]){__VA_ARGS__}) / 4

/* The words of the constant `id` (a composite's components in order, each
 * 64-bit scalar as two words); returns how many. */
static uint32_t const_words(const struct mod *m, uint32_t id, uint32_t *out, uint32_t cap)
{
    const uint32_t *d = def_of(m, id);
    if (!d)
        return 0;
    uint32_t op = d[0] & 0xffff, n = d[0] >> 16, got = 0;
    if (op == SpvOpConstant) {
        for (uint32_t i = 3; i < n && got < cap; i++)
            out[got++] = d[i];
    } else if (op == SpvOpConstantComposite) {
        for (uint32_t i = 3; i < n; i++)
            got += const_words(m, d[i], out + got, cap - got);
    }
    return got;
}

/* What took the place of the load `id` in `out`: the opcode (OpCopyObject
 * or a conversion) and the constant's words. */
static uint32_t baked_as(const struct mod *out, uint32_t id, uint32_t *words, uint32_t *nwords)
{
    const uint32_t *d = def_of(out, id);
    *nwords = 0;
    if (!d || (d[0] >> 16) != 4)
        return d ? d[0] & 0xffff : 0;
    *nwords = const_words(out, d[3], words, 16);
    return d[0] & 0xffff;
}

static struct prog_push_word W(uint32_t offset, uint32_t value) { return (struct prog_push_word){offset, value}; }

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Bakes and validates; out.w NULL unless rc is 0. */
static int bake(const struct mod *in, const struct prog_push_word *words, uint32_t count, struct mod *out,
                struct prog_push_bake_counts *c)
{
    char why[256] = "";
    out->w = NULL;
    out->n = 0;
    int rc = prog_push_bake(in->w, in->n, words, count, &out->w, &out->n, c, why, sizeof why);
    if (rc < 0)
        fprintf(stderr, "bake: %s\n", why);
    if (rc == 0) {
        CHECK(valid(out->w, out->n, "baked"));
        CHECK(out->w[3] > in->w[3]);   /* the bound grew */
    }
    return rc;
}

/* Checks that the load at `path` in `in` became OpCopyObject (or `op`) of
 * a constant holding `want`. */
#define CHECK_BAKED(op_, path_, ...)                                                                  \
    do {                                                                                          \
        uint32_t ids_[4], got_[16], ngot_;                                                        \
        const uint32_t want_[] = {__VA_ARGS__};                                                   \
        uint32_t n_ = push_loads(&in, path_, ids_, 4);                                            \
        CHECK(n_ >= 1);                                                                           \
        for (uint32_t i_ = 0; i_ < n_ && i_ < 4; i_++) {                                          \
            CHECK_EQ(baked_as(&out, ids_[i_], got_, &ngot_), op_);                                \
            CHECK_EQ(ngot_, sizeof want_ / 4);                                                    \
            CHECK(ngot_ == sizeof want_ / 4 && !memcmp(got_, want_, sizeof want_));               \
        }                                                                                         \
    } while (0)

/* ---- scalars, vectors, structs, arrays ----------------------------------------- */

static const char *k_mixed =
    "#version 450\n"
    "layout(local_size_x = 1) in;\n"
    "struct In { uint a; float b; };\n"
    "layout(push_constant) uniform Push {\n"
    "    uint u; int i; float f; uvec4 v4; vec2 v2; In s; uint arr[4]; uint dyn;\n"
    "} pc;\n"   /* u 0, i 4, f 8, v4 16, v2 32, s 40, arr 48, dyn 64 */
    "layout(std430, binding = 0) buffer B { uint x[]; };\n"
    "void main() {\n"
    "    x[0] = pc.u; x[1] = uint(pc.i); x[2] = floatBitsToUint(pc.f);\n"
    "    x[3] = pc.v4.y; uvec4 w = pc.v4; x[4] = w.z;\n"
    "    x[5] = floatBitsToUint(pc.v2.y); vec2 t = pc.v2; x[6] = floatBitsToUint(t.x);\n"
    "    x[7] = pc.s.a; x[8] = floatBitsToUint(pc.s.b); In whole = pc.s; x[9] = whole.a;\n"
    "    x[10] = pc.arr[2]; x[11] = pc.arr[pc.dyn];\n"
    "}\n";

static void mixed_words(struct prog_push_word *w)
{
    w[0] = W(0, 7);
    w[1] = W(4, (uint32_t)-5);
    w[2] = W(8, f2u(1.5f));
    for (uint32_t k = 0; k < 4; k++)
        w[3 + k] = W(16 + 4 * k, 100 + k);
    w[7] = W(32, f2u(-2.0f));
    w[8] = W(36, f2u(0.25f));
    w[9] = W(40, 41);
    w[10] = W(44, f2u(3.0f));
    for (uint32_t k = 0; k < 4; k++)
        w[11 + k] = W(48 + 4 * k, 200 + k);
    w[15] = W(64, 1);
}

TEST(scalars_vectors_structs_and_constant_indices_are_baked)
{
    struct mod in = glsl(k_mixed), out;
    REQUIRE(in.n);
    REQUIRE(valid(in.w, in.n, "compiled"));
    struct prog_push_word w[16];
    mixed_words(w);
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 16, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpCopyObject, PATH(0), 7);
    CHECK_BAKED(SpvOpCopyObject, PATH(1), (uint32_t)-5);
    CHECK_BAKED(SpvOpCopyObject, PATH(2), f2u(1.5f));
    CHECK_BAKED(SpvOpCopyObject, PATH(3, 1), 101);
    CHECK_BAKED(SpvOpCopyObject, PATH(3), 100, 101, 102, 103);
    CHECK_BAKED(SpvOpCopyObject, PATH(4, 1), f2u(0.25f));
    CHECK_BAKED(SpvOpCopyObject, PATH(4), f2u(-2.0f), f2u(0.25f));
    CHECK_BAKED(SpvOpCopyObject, PATH(5, 0), 41);
    CHECK_BAKED(SpvOpCopyObject, PATH(5, 1), f2u(3.0f));
    CHECK_BAKED(SpvOpCopyObject, PATH(6, 2), 202);
    CHECK_BAKED(SpvOpCopyObject, PATH(7), 1);   /* the dynamic index's own word */
    /* Left: the whole struct, and the array read through a dynamic index. */
    CHECK_EQ(push_loads(&out, PATH(5), NULL, 0), 1);
    CHECK_EQ(push_loads(&out, PATH(6, DYN), NULL, 0), 1);
    CHECK_EQ(push_loads(&out, NULL, ~0u, NULL, 0), 2);
    CHECK_EQ(c.kept, 2);
    CHECK_EQ(c.baked, push_loads(&in, NULL, ~0u, NULL, 0) - 2);
    /* The block is declared as it was: the same variable, type and offsets. */
    uint32_t decorations_in = 0, decorations_out = 0;
    for (size_t at = 5; at < in.n; at += in.w[at] >> 16)
        decorations_in += (in.w[at] & 0xffff) == SpvOpMemberDecorate;
    for (size_t at = 5; at < out.n; at += out.w[at] >> 16)
        decorations_out += (out.w[at] & 0xffff) == SpvOpMemberDecorate;
    CHECK_EQ(decorations_out, decorations_in);
    free(out.w);
    free(in.w);
}

TEST(a_member_partly_baked_stays_a_load)
{
    struct mod in = glsl(k_mixed), out;
    REQUIRE(in.n);
    /* v4's words 0, 1, 3 (not 2); v2's first word; the struct's second. */
    struct prog_push_word w[] = {W(16, 1), W(20, 2), W(28, 4), W(32, f2u(8.0f)), W(44, f2u(9.0f))};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 5, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpCopyObject, PATH(3, 1), 2);
    CHECK_BAKED(SpvOpCopyObject, PATH(5, 1), f2u(9.0f));
    CHECK_EQ(push_loads(&out, PATH(3), NULL, 0), 1);      /* v4 whole: word 2 is not baked */
    CHECK_EQ(push_loads(&out, PATH(4), NULL, 0), 1);      /* v2 whole: its second word is not */
    CHECK_EQ(push_loads(&out, PATH(4, 1), NULL, 0), 1);
    CHECK_EQ(push_loads(&out, PATH(0), NULL, 0), 1);      /* nothing of u baked */
    CHECK_EQ(c.baked, 2);
    CHECK_EQ(c.kept, push_loads(&in, NULL, ~0u, NULL, 0) - 2);
    free(out.w);
    /* Words no load reads in full: nothing to do, the caller keeps its module. */
    /* v4.z (read only inside the whole vector), arr[3] (only through the
     * dynamic index), a word past the block. */
    struct prog_push_word none[] = {W(24, 1), W(60, 2), W(100, 3)};
    CHECK_EQ(bake(&in, none, 3, &out, &c), 1);
    CHECK(!out.w);
    CHECK_EQ(c.baked, 0);
    CHECK_EQ(bake(&in, NULL, 0, &out, &c), 1);
    CHECK_EQ(c.kept, push_loads(&in, NULL, ~0u, NULL, 0));
    free(in.w);
}

/* ---- 64, 16 and 8 bits ------------------------------------------------------- */

TEST(sixty_four_bit_members_take_two_words)
{
    static const char *src =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(push_constant) uniform Push { uint a; uint64_t big; int64_t neg; double d; u64vec2 v; } pc;\n"
        "layout(std430, binding = 0) buffer B { uint64_t x[]; };\n"
        "void main() { x[0] = pc.big; x[1] = uint64_t(pc.neg); x[2] = uint64_t(pc.d); x[3] = pc.v.y;\n"
        "    x[4] = uint64_t(pc.a); }\n";   /* big 8, neg 16, d 24, v 32 */
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    double d = -1234.5;
    uint64_t db;
    memcpy(&db, &d, 8);
    struct prog_push_word w[] = {W(8, 0x89abcdefu), W(12, 0x01234567u), W(16, 0xfffffffeu), W(20, 0xffffffffu),
                                 W(24, (uint32_t)db), W(28, (uint32_t)(db >> 32)), W(40, 5), W(44, 6),
                                 W(36, 0)};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 9, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpCopyObject, PATH(1), 0x89abcdefu, 0x01234567u);
    CHECK_BAKED(SpvOpCopyObject, PATH(2), 0xfffffffeu, 0xffffffffu);
    CHECK_BAKED(SpvOpCopyObject, PATH(3), (uint32_t)db, (uint32_t)(db >> 32));
    CHECK_BAKED(SpvOpCopyObject, PATH(4, 1), 5, 6);
    CHECK_EQ(push_loads(&out, PATH(0), NULL, 0), 1);
    CHECK_EQ(c.baked, 4);
    CHECK_EQ(c.kept, 1);
    free(out.w);
    /* Half of a 64-bit member is not enough. */
    CHECK_EQ(bake(&in, w, 1, &out, &c), 1);
    CHECK_EQ(c.kept, 5);
    free(in.w);
}

/* 16- and 8-bit members, computed with (the module declares Int16, Int8 and
 * Float16): constants of their own types. */
TEST(small_members_with_arithmetic_get_constants_of_their_own_type)
{
    static const char *src =
        "#version 450\n"
        "#extension GL_EXT_shader_16bit_storage : require\n"
        "#extension GL_EXT_shader_8bit_storage : require\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types : require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(push_constant) uniform Push { uint16_t h; int16_t sh; int8_t c; uint8_t uc; float16_t hf;\n"
        "    f16vec2 hv; } pc;\n"   /* h 0, sh 2, c 4, uc 5, hf 6, hv 8 */
        "layout(std430, binding = 0) buffer B { uint x[]; };\n"
        "void main() {\n"
        "    x[0] = uint(pc.h * uint16_t(3)); x[1] = uint(int(pc.sh * int16_t(2)));\n"
        "    x[2] = uint(int(pc.c * int8_t(2))); x[3] = uint(pc.uc + uint8_t(1));\n"
        "    x[4] = floatBitsToUint(float(pc.hf * float16_t(2.0)));\n"
        "    x[5] = floatBitsToUint(float(pc.hv.y + pc.hv.x));\n"
        "}\n";
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    bool int16 = false, int8 = false, f16 = false;
    for (size_t at = 5; at < in.n && (in.w[at] & 0xffff) == SpvOpCapability; at += in.w[at] >> 16) {
        int16 |= in.w[at + 1] == SpvCapabilityInt16;
        int8 |= in.w[at + 1] == SpvCapabilityInt8;
        f16 |= in.w[at + 1] == SpvCapabilityFloat16;
    }
    CHECK(int16 && int8 && f16);
    /* h = 0xbeef, sh = -3, c = -100, uc = 200, hf = 1.5 (0x3e00), hv = (-2, 0.5). */
    struct prog_push_word w[] = {W(0, 0xbeefu | 0xfffdu << 16), W(4, 0x9cu | 200u << 8 | 0x3e00u << 16),
                                 W(8, 0xc000u | 0x3800u << 16)};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 3, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpCopyObject, PATH(0), 0xbeef);
    CHECK_BAKED(SpvOpCopyObject, PATH(1), 0xfffffffdu);   /* a narrow signed literal is sign-extended */
    CHECK_BAKED(SpvOpCopyObject, PATH(2), 0xffffff9cu);
    CHECK_BAKED(SpvOpCopyObject, PATH(3), 200);
    CHECK_BAKED(SpvOpCopyObject, PATH(4), 0x3e00);
    CHECK_BAKED(SpvOpCopyObject, PATH(5, 1), 0x3800);
    CHECK_BAKED(SpvOpCopyObject, PATH(5, 0), 0xc000);
    CHECK_EQ(c.kept, 0);
    CHECK_EQ(push_loads(&out, NULL, ~0u, NULL, 0), 0);
    free(out.w);
    free(in.w);
}

/* The same members with the storage extensions only: the module may not
 * compute in 16 or 8 bits (no Int16, Int8, Float16), so each becomes a
 * 32-bit constant converted in the load's place. */
TEST(small_members_with_storage_only_are_converted_from_32_bits)
{
    static const char *src =
        "#version 450\n"
        "#extension GL_EXT_shader_16bit_storage : require\n"
        "#extension GL_EXT_shader_8bit_storage : require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(push_constant) uniform Push { uint16_t h; int16_t sh; int8_t c; uint8_t uc; float16_t hf;\n"
        "    f16vec2 hv; i16vec2 iv; float16_t nan; } pc;\n"   /* h 0, sh 2, c 4, uc 5, hf 6, hv 8, iv 12, nan 16 */
        "layout(std430, binding = 0) buffer B { uint x[]; };\n"
        "void main() {\n"
        "    x[0] = uint(pc.h); x[1] = uint(int(pc.sh)); x[2] = uint(int(pc.c)); x[3] = uint(pc.uc);\n"
        "    x[4] = floatBitsToUint(float(pc.hf)); vec2 v = vec2(pc.hv); x[5] = floatBitsToUint(v.y);\n"
        "    ivec2 iv = ivec2(pc.iv); x[6] = uint(iv.x); x[7] = floatBitsToUint(float(pc.nan));\n"
        "}\n";
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    for (size_t at = 5; at < in.n && (in.w[at] & 0xffff) == SpvOpCapability; at += in.w[at] >> 16)
        CHECK(in.w[at + 1] != SpvCapabilityInt16 && in.w[at + 1] != SpvCapabilityInt8 &&
              in.w[at + 1] != SpvCapabilityFloat16);
    struct prog_push_word w[] = {W(0, 0xbeefu | 0xfffdu << 16), W(4, 0x9cu | 200u << 8 | 0x3e00u << 16),
                                 W(8, 0xc000u | 0x3800u << 16), W(12, 0x0005u | 0xfff0u << 16),
                                 W(16, 0x7e01u)};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 5, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpUConvert, PATH(0), 0xbeef);
    CHECK_BAKED(SpvOpSConvert, PATH(1), 0xfffffffdu);
    CHECK_BAKED(SpvOpSConvert, PATH(2), 0xffffff9cu);
    CHECK_BAKED(SpvOpUConvert, PATH(3), 200);
    CHECK_BAKED(SpvOpFConvert, PATH(4), f2u(1.5f));
    CHECK_BAKED(SpvOpFConvert, PATH(5), f2u(-2.0f), f2u(0.5f));
    CHECK_BAKED(SpvOpSConvert, PATH(6), 5, 0xfffffff0u);
    /* A NaN (and a denormal) half is not baked: a conversion may not keep its bits. */
    CHECK_EQ(push_loads(&out, PATH(7), NULL, 0), 1);
    CHECK_EQ(c.kept, 1);
    CHECK_EQ(c.baked, 7);
    free(out.w);
    free(in.w);
}

/* ---- matrices ------------------------------------------------------------------ */

TEST(matrices_follow_their_stride_and_major_order)
{
    static const char *src =
        "#version 450\n"
        "layout(local_size_x = 1) in;\n"
        "layout(push_constant) uniform Push { mat2 m; layout(row_major) mat2 rm; layout(row_major) mat2x3 r23; } pc;\n"
        "layout(std430, binding = 0) buffer B { float x[]; };\n"   /* m 0, rm 16, r23 32 (2 columns of 3) */
        "void main() {\n"
        "    x[0] = pc.m[1][0]; x[1] = pc.rm[1][0]; mat2 a = pc.m; mat2 b = pc.rm; x[2] = a[0][1] + b[0][1];\n"
        "    mat2x3 c = pc.r23; x[3] = c[1][2]; x[4] = pc.r23[0].z;\n"
        "}\n";
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    /* Word k holds 10 + k as a float. Row-major mat2x3 at 32: row r (of 3) at
     * 32 + r * 8, column c within it at + 4 c. */
    struct prog_push_word w[14];
    for (uint32_t k = 0; k < 14; k++)
        w[k] = W(4 * k, f2u(10.0f + (float)k));
#define F(k) f2u(10.0f + (float)(k))
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 14, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_BAKED(SpvOpCopyObject, PATH(0, 1, 0), F(2));       /* column-major: column 1 at 8 */
    CHECK_BAKED(SpvOpCopyObject, PATH(1, 1, 0), F(5));       /* row-major: row 0 at 16, column 1 at +4 */
    CHECK_BAKED(SpvOpCopyObject, PATH(0), F(0), F(1), F(2), F(3));
    CHECK_BAKED(SpvOpCopyObject, PATH(1), F(4), F(6), F(5), F(7));
    CHECK_BAKED(SpvOpCopyObject, PATH(2), F(8), F(10), F(12), F(9), F(11), F(13));
    CHECK_BAKED(SpvOpCopyObject, PATH(2, 0, 2), F(12));
    CHECK_EQ(c.kept, 0);
#undef F
    free(out.w);
    free(in.w);
}

/* ---- a 29-word block ------------------------------------------------------------- */

TEST(a_block_of_29_words)
{
    char src[4096];
    int n = snprintf(src, sizeof src,
                     "#version 450\nlayout(local_size_x = 1) in;\nlayout(push_constant) uniform Push {");
    for (int k = 0; k < 29; k++)
        n += snprintf(src + n, sizeof src - (size_t)n, " %s w%d;", k % 3 == 1 ? "int" : k % 3 == 2 ? "float" : "uint",
                      k);
    n += snprintf(src + n, sizeof src - (size_t)n,
                  " } pc;\nlayout(std430, binding = 0) buffer B { uint x[]; };\nvoid main() {");
    for (int k = 0; k < 29; k++)
        n += snprintf(src + n, sizeof src - (size_t)n, " x[%d] = %s(pc.w%d);", k,
                      k % 3 == 2 ? "floatBitsToUint" : "uint", k);
    snprintf(src + n, sizeof src - (size_t)n, " }\n");
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    struct prog_push_word w[29];
    for (uint32_t k = 0; k < 29; k++)
        w[k] = W(4 * k, k % 3 == 2 ? f2u((float)k / 4) : 1000 + k);
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 29, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_EQ(c.baked, 29);
    CHECK_EQ(push_loads(&out, NULL, ~0u, NULL, 0), 0);
    for (uint32_t k = 0; k < 29; k++)
        CHECK_BAKED(SpvOpCopyObject, PATH(k), k % 3 == 2 ? f2u((float)k / 4) : 1000 + k);
    free(out.w);
    /* The odd words only, given in reverse order. */
    struct prog_push_word odd[14];
    for (uint32_t k = 0; k < 14; k++)
        odd[k] = w[27 - 2 * k];
    CHECK_EQ(bake(&in, odd, 14, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_EQ(c.baked, 14);
    CHECK_EQ(c.kept, 15);
    for (uint32_t k = 0; k < 29; k++)
        CHECK_EQ(push_loads(&out, &k, 1, NULL, 0), k % 2 ? 0 : 1);
    free(out.w);
    free(in.w);
}

/* ---- the optimizer folds what was baked ------------------------------------------ */

static uint32_t count_op(const struct mod *m, SpvOp op)
{
    uint32_t k = 0;
    for (size_t at = 5; at < m->n; at += m->w[at] >> 16)
        k += (m->w[at] & 0xffff) == (uint32_t)op;
    return k;
}

/* The path kiln's compile takes (prog_fold_guard first, then SPIRV-Tools'
 * performance passes) run on a module. */
static struct mod optimize(const struct mod *in)
{
    struct mod g = {0}, o = {0};
    char err[256] = "";
    int rc = prog_fold_guard(in->w, in->n, &g.w, &g.n, NULL, err, sizeof err);
    CHECK(rc == 0 || rc == 1);
    const struct mod *src = rc == 0 ? &g : in;
    CHECK_EQ(prog_spirv_optimize(src->w, src->n, SPV_ENV_VULKAN_1_2, &o.w, &o.n, err, sizeof err), 0);
    if (err[0])
        fprintf(stderr, "optimize: %s\n", err);
    free(g.w);
    return o;
}

TEST(a_baked_loop_bound_is_folded_by_the_optimizer)
{
    static const char *src =
        "#version 450\n"
        "#extension GL_EXT_control_flow_attributes : require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(push_constant) uniform Push { uint n; int divisor; float scale; } pc;\n"
        "layout(std430, binding = 0) buffer B { float d[]; };\n"
        "layout(std430, binding = 1) buffer C { int q[]; };\n"
        "void main() {\n"
        "    float acc = 0.0;\n"
        "    [[unroll]] for (uint i = 0u; i < pc.n; i++) acc += d[i] * float(i + 1u);\n"
        "    d[64] = acc * pc.scale;\n"
        "    q[0] = q[1] / pc.divisor;\n"   /* the guard's path: a division by a baked word */
        "}\n";
    struct mod in = glsl(src), out;
    REQUIRE(in.n);
    struct prog_push_word w[] = {W(0, 4), W(4, (uint32_t)-1)};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 2, &out, &c), 0);
    REQUIRE(out.w);
    CHECK_EQ(c.baked, 2);
    struct mod uni = optimize(&in), var = optimize(&out);
    REQUIRE(uni.w && var.w);
    CHECK(valid(uni.w, uni.n, "universal, optimized"));
    CHECK(valid(var.w, var.n, "variant, optimized"));
    /* The universal program still loops on pc.n; the variant's loop of 4 is
     * unrolled away, and neither n nor divisor is read any more. */
    CHECK_EQ(count_op(&uni, SpvOpLoopMerge), 1);
    CHECK_EQ(count_op(&var, SpvOpLoopMerge), 0);
    CHECK_EQ(count_op(&var, SpvOpPhi), 0);
    CHECK_EQ(push_loads(&uni, PATH(0), NULL, 0), 1);
    CHECK_EQ(push_loads(&var, PATH(0), NULL, 0), 0);
    CHECK_EQ(push_loads(&var, PATH(1), NULL, 0), 0);
    CHECK_EQ(push_loads(&var, PATH(2), NULL, 0), 1);   /* scale was not baked */
    CHECK(var.n < uni.n);
    free(uni.w);
    free(var.w);
    free(out.w);
    free(in.w);
}

/* kiln's own prelude block is a push-constant block like any other. */
TEST(the_prelude_block_bakes_too)
{
    struct prog_source s;
    REQUIRE_OK(prog_source_init(&s, &(kiln_program_desc){
        .source = "#version 450\nlayout(local_size_x = 64) in;\n"
                  "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                  "void main() { d[gl_GlobalInvocationID.x] = kiln_param(0) + kiln_param(7) + kiln_len(0); }\n",
        .optimize = -1}));
    struct prog_output po;
    kiln_result r = prog_compile(&s, &po);
    prog_source_finish(&s);
    REQUIRE_OK(r);
    struct mod in = {po.spirv, po.words}, out;
    struct prog_push_word w[] = {W(0, 11), W(28, 22)};
    struct prog_push_bake_counts c;
    CHECK_EQ(bake(&in, w, 2, &out, &c), 0);
    CHECK_EQ(c.baked, 2);
    CHECK_EQ(c.kept, 1);   /* kiln_len(0), at byte 32, was not baked */
    free(out.w);
    prog_output_finish(&po);
}

/* ---- hostile input ---------------------------------------------------------------- */

TEST(malformed_modules_and_words_are_refused_with_a_reason)
{
    struct mod in = glsl(k_mixed);
    REQUIRE(in.n);
    struct prog_push_word w[16];
    mixed_words(w);
    uint32_t *o = NULL;
    size_t on = 0;
    char why[256];
#define REFUSED(words_, n_, bw_, bn_, needle)                                                     \
    do {                                                                                      \
        why[0] = 0;                                                                           \
        CHECK_EQ(prog_push_bake(words_, n_, bw_, bn_, &o, &on, NULL, why, sizeof why), -1);   \
        CHECK(!o);                                                                            \
        if (!strstr(why, needle)) {                                                           \
            fprintf(stderr, "why '%s' lacks '%s'\n", why, needle);                           \
            CHECK(0);                                                                         \
        }                                                                                     \
    } while (0)
    REFUSED(in.w, 3, w, 16, "not a SPIR-V module");
    /* Words: not 4-aligned, twice. */
    struct prog_push_word bad[] = {W(0, 1), W(6, 2)};
    REFUSED(in.w, in.n, bad, 2, "not a multiple of 4");
    bad[1].offset = 0;
    REFUSED(in.w, in.n, bad, 2, "baked twice");
    uint32_t *m = malloc(in.n * 4);
    REQUIRE(m);
    /* The first instruction after the header, stretched past the end, and of length 0. */
    memcpy(m, in.w, in.n * 4);
    m[5] = (uint32_t)(in.n) << 16 | (m[5] & 0xffff);
    REFUSED(m, in.n, w, 16, "malformed instruction");
    m[5] &= 0xffff;
    REFUSED(m, in.n, w, 16, "malformed instruction");
    /* An id past the bound; an id defined twice; a truncated type. */
    size_t at_int = 0, at_var = 0, at_chain = 0, at_struct = 0;
    for (size_t at = 5; at < in.n; at += in.w[at] >> 16) {
        uint32_t op = in.w[at] & 0xffff;
        if (op == SpvOpTypeInt && !at_int)
            at_int = at;
        if (op == SpvOpVariable && in.w[at + 3] == SpvStorageClassPushConstant)
            at_var = at;
        if (op == SpvOpAccessChain && !at_chain && in.w[at + 3] == in.w[at_var + 2])
            at_chain = at;
        if (op == SpvOpTypeStruct)
            at_struct = at;
    }
    REQUIRE(at_int && at_var && at_chain && at_struct);
    memcpy(m, in.w, in.n * 4);
    m[at_int + 1] = m[3] + 5;
    REFUSED(m, in.n, w, 16, "beyond the bound");
    memcpy(m, in.w, in.n * 4);
    m[at_struct + 1] = m[at_int + 1];
    REFUSED(m, in.n, w, 16, "defined twice");
    /* A cycle: the chain made its own base. */
    memcpy(m, in.w, in.n * 4);
    m[at_chain + 3] = m[at_chain + 2];
    REFUSED(m, in.n, w, 16, "cycle");
    /* A chain based on a type, not a pointer: kept, whatever that id's own tables hold. */
    memcpy(m, in.w, in.n * 4);
    m[at_chain + 3] = m[at_struct + 1];
    struct prog_push_bake_counts c;
    CHECK_EQ(prog_push_bake(m, in.n, w, 16, &o, &on, &c, why, sizeof why), 0);
    CHECK_EQ(c.kept, 3);
    free(o);
    o = NULL;
    /* A load outside any function. */
    memcpy(m, in.w, in.n * 4);
    m[at_int] = (m[at_int] & 0xffff0000u) | SpvOpLoad;
    REFUSED(m, in.n, w, 16, "outside any function");
    /* Every length the module can be cut to, and every word flipped: an
     * answer each time, never a read past the end (the ASan build checks);
     * what comes out of a module that still validates, validates. */
    for (size_t cut = 0; cut <= in.n; cut++) {
        uint32_t *cm = malloc(cut ? cut * 4 : 1);   /* exactly cut words: ASan sees overreads */
        memcpy(cm, in.w, cut * 4);
        int rc = prog_push_bake(cm, cut, w, 16, &o, &on, NULL, why, sizeof why);
        CHECK(rc >= -1 && rc <= 1);
        CHECK(rc >= 0 || why[0]);
        free(o);
        o = NULL;
        free(cm);
    }
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_1);
    uint32_t answered = 0;
    for (size_t at = 5; at < in.n; at++) {
        static const uint32_t flips[] = {1, 0x10000, 0xffffffffu, 0x80000000u};
        for (size_t f = 0; f < 4; f++) {
            memcpy(m, in.w, in.n * 4);
            m[at] ^= flips[f];
            int rc = prog_push_bake(m, in.n, w, 16, &o, &on, NULL, why, sizeof why);
            CHECK(rc >= -1 && rc <= 1);
            spv_const_binary_t bm = {m, in.n}, bo = {o, on};
            if (rc == 0 && spvValidate(ctx, &bm, NULL) == SPV_SUCCESS && spvValidate(ctx, &bo, NULL) != SPV_SUCCESS) {
                fprintf(stderr, "word %zu ^ 0x%x: a valid module baked into an invalid one\n", at, flips[f]);
                CHECK(0);
            }
            answered++;
            free(o);
            o = NULL;
        }
    }
    spvContextDestroy(ctx);
    CHECK(answered > 0);
#undef REFUSED
    free(m);
    free(in.w);
}

TEST(out_of_host_memory_is_reported_at_every_allocation)
{
    struct mod in = glsl(k_mixed);
    REQUIRE(in.n);
    struct prog_push_word w[16];
    mixed_words(w);
    int rc = -2;
    uint32_t n;
    for (n = 1; rc == -2 && n < 100; n++) {
        uint32_t *o = NULL;
        size_t on = 0;
        char why[256] = "";
        mem_fault_arm(n);
        rc = prog_push_bake(in.w, in.n, w, 16, &o, &on, NULL, why, sizeof why);
        mem_fault_arm(0);
        if (rc == -2) {
            CHECK(!o);
            CHECK(strstr(why, "out of host memory baking push constants") != NULL);
        } else {
            CHECK_EQ(rc, 0);
            CHECK(valid(o, on, "baked after the faults"));
        }
        free(o);
    }
    CHECK(n > 3);   /* several allocations were failed in turn */
    CHECK_EQ(rc, 0);
    free(in.w);
}

int main(void)
{
    RUN(scalars_vectors_structs_and_constant_indices_are_baked);
    RUN(a_member_partly_baked_stays_a_load);
    RUN(sixty_four_bit_members_take_two_words);
    RUN(small_members_with_arithmetic_get_constants_of_their_own_type);
    RUN(small_members_with_storage_only_are_converted_from_32_bits);
    RUN(matrices_follow_their_stride_and_major_order);
    RUN(a_block_of_29_words);
    RUN(a_baked_loop_bound_is_folded_by_the_optimizer);
    RUN(the_prelude_block_bakes_too);
    RUN(malformed_modules_and_words_are_refused_with_a_reason);
    RUN(out_of_host_memory_is_reported_at_every_allocation);
    return TEST_SUMMARY();
}
