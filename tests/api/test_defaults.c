/* SPDX-License-Identifier: MIT */
/*
 * test_defaults.c: every desc's kiln_<x>_desc_defaults. For each desc: a
 * zero desc (and NULL) comes back with its defaults filled in and its
 * "decided later" fields at 0; explicit values come back as given; filling
 * twice changes nothing; and the runtime behaves as the filled-in desc says
 * (on the Vulkan device, lavapipe in CI): a NULL label reads as its default
 * in messages, a node of groups {4, 0, 0} runs 4x1x1 over its whole buffer,
 * a program of optimize 0 is the program of optimize 1, a tidy of compact_at
 * 0 merges two small archives.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

#define STR_EQ(a, b) ((a) && (b) && !strcmp((a), (b)))
/* Field by field (padding is not compared). Pointers compare as pointers:
 * a result's pointers are the caller's own, never copies. */
#define SAME(a, b) same_((a), (b))

static bool ctx_same(kiln_context_desc a, kiln_context_desc b)
{
    return a.backend == b.backend && a.device == b.device && a.validation == b.validation && a.pending == b.pending &&
           a.compile_threads == b.compile_threads && a.specialization == b.specialization &&
           a.device_timeout_ms == b.device_timeout_ms && a.archive == b.archive && a.archive_dir == b.archive_dir &&
           a.archive_readonly == b.archive_readonly && a.archive_max_size == b.archive_max_size &&
           a.archive_qa == b.archive_qa && a.giant_words == b.giant_words && a.giant_compiles == b.giant_compiles &&
           a.alone_tries == b.alone_tries && a.slow_compile_s == b.slow_compile_s &&
           a.worker_caches == b.worker_caches && a.spec_verify == b.spec_verify && a.skip_log == b.skip_log &&
           a.force_staging == b.force_staging && a.trace_path == b.trace_path;
}
static bool buf_same(kiln_buffer_desc a, kiln_buffer_desc b)
{
    return a.size == b.size && a.usage == b.usage && a.label == b.label;
}
static bool prog_same(kiln_program_desc a, kiln_program_desc b)
{
    return a.source == b.source && a.source_len == b.source_len && a.name == b.name && a.entry == b.entry &&
           a.defines == b.defines && a.define_count == b.define_count && a.include_dirs == b.include_dirs &&
           a.include_dir_count == b.include_dir_count && a.optimize == b.optimize;
}
static bool scheme_same(kiln_scheme_desc a, kiln_scheme_desc b) { return a.label == b.label; }
static bool node_same(kiln_node_desc a, kiln_node_desc b)
{
    return a.program.id == b.program.id && a.bindings == b.bindings && a.binding_count == b.binding_count &&
           !memcmp(a.groups, b.groups, sizeof a.groups) && a.params == b.params && a.param_count == b.param_count &&
           a.label == b.label;
}
static bool tidy_same(kiln_archive_tidy_desc a, kiln_archive_tidy_desc b)
{
    return a.compact == b.compact && a.compact_at == b.compact_at && a.small_bytes == b.small_bytes && a.gc == b.gc &&
           a.max_size == b.max_size;
}
static bool precompile_same(kiln_precompile_desc a, kiln_precompile_desc b) { return a.stall_s == b.stall_s; }
#define same_(a, b)                                                                                \
    _Generic((a), kiln_context_desc: ctx_same, kiln_buffer_desc: buf_same, kiln_program_desc: prog_same, \
             kiln_scheme_desc: scheme_same, kiln_node_desc: node_same, kiln_archive_tidy_desc: tidy_same, \
             kiln_precompile_desc: precompile_same)((a), (b))

/* ---- context ------------------------------------------------------------ */

TEST(context_desc_defaults_fill_the_backend_and_leave_env_fields_to_create)
{
    kiln_context_desc z = kiln_context_desc_defaults(NULL);
    CHECK_EQ(z.backend, KILN_BACKEND_VULKAN);
    CHECK(z.device == NULL);
    CHECK_EQ(z.validation, 0);          /* KILN_VALIDATION, at create */
    CHECK_EQ(z.pending, KILN_PENDING_WAIT);
    CHECK_EQ(z.compile_threads, 0);     /* KILN_COMPILE_THREADS or the cores, at create */
    CHECK_EQ(z.specialization, 0);      /* KILN_SPECIALIZATION, at every submit */
    CHECK_EQ(z.device_timeout_ms, 0);   /* KILN_DEVICE_TIMEOUT_S, at create */
    kiln_context_desc zero = kiln_context_desc_defaults(&(kiln_context_desc){0});
    CHECK(SAME(z, zero));
    kiln_context_desc given = {.backend = KILN_BACKEND_MOCK, .device = "llvmpipe", .validation = -1,
                               .pending = KILN_PENDING_SKIP, .compile_threads = 3, .specialization = -1,
                               .device_timeout_ms = 500};
    kiln_context_desc g = kiln_context_desc_defaults(&given);
    CHECK(SAME(g, given));
    kiln_context_desc twice = kiln_context_desc_defaults(&z);
    CHECK(SAME(twice, z));

    /* The runtime: NULL and a zero desc both make a Vulkan context. */
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(NULL, &ctx));
    kiln_caps caps;
    CHECK_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(caps.backend, KILN_BACKEND_VULKAN);
    test_context_done(ctx);
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    CHECK_OK(kiln_context_caps(ctx, &caps));
    CHECK_EQ(caps.backend, KILN_BACKEND_MOCK);
    kiln_context_destroy(ctx);
}

/* ---- buffers ------------------------------------------------------------ */

static const char k_uniform_src[] = "#version 450\n"
                                    "layout(local_size_x = 1) in;\n"
                                    "layout(std140, binding = 0) uniform U { uint u; };\n"
                                    "layout(std430, binding = 1) buffer O { uint o[]; };\n"
                                    "void main() { o[0] = u; }\n";

TEST(buffer_desc_defaults_are_storage_and_buffer)
{
    kiln_buffer_desc z = kiln_buffer_desc_defaults(NULL);
    CHECK_EQ(z.size, 0);   /* no default: 0 is refused */
    CHECK_EQ(z.usage, KILN_BUFFER_STORAGE);
    CHECK(STR_EQ(z.label, "buffer"));
    kiln_buffer_desc zero = kiln_buffer_desc_defaults(&(kiln_buffer_desc){0});
    CHECK(SAME(z, zero));
    const char *label = "mine";
    kiln_buffer_desc given = {.size = 8, .usage = KILN_BUFFER_UNIFORM, .label = label};
    kiln_buffer_desc g = kiln_buffer_desc_defaults(&given);
    CHECK(SAME(g, given));
    CHECK(g.label == label);   /* borrowed, not copied */
    kiln_buffer_desc twice = kiln_buffer_desc_defaults(&z);
    CHECK(SAME(twice, z));

    /* The runtime: a buffer of a zero usage and no label is a storage
     * buffer called 'buffer'. */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_uniform_src, .name = "u.comp"}, &p));
    REQUIRE_OK(kiln_program_wait(ctx, p));
    kiln_buffer plain, out;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16}, &plain));
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16, .label = "out"}, &out));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, NULL, &s));
    kiln_node n;
    kiln_binding b[2] = {{.binding = 0, .buffer = plain}, {.binding = 1, .buffer = out}};
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2,
                                                                 .groups = {1}},
                                      &n)),
                 KILN_ERR_LAYOUT);
    CHECK_MSG("buffer 'buffer' was created without KILN_BUFFER_UNIFORM");
    /* As storage it binds (binding 1). */
    kiln_buffer uni;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 16, .usage = KILN_BUFFER_UNIFORM}, &uni));
    b[0].buffer = uni;
    b[1].buffer = plain;
    CHECK_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = b, .binding_count = 2,
                                                             .groups = {1}},
                                  &n));
    test_context_done(ctx);
}

/* ---- programs ----------------------------------------------------------- */

/* Images: depth 1, dims 2 (3 where depth > 1), label "image"; usage left
 * to create (the device's uses of the format). Samplers: linear, clamped. */
TEST(image_and_sampler_desc_defaults)
{
    kiln_image_desc z = kiln_image_desc_defaults(NULL);
    CHECK(z.depth == 1 && z.dims == 2 && z.usage == 0 && STR_EQ(z.label, "image"));
    kiln_image_desc vol = kiln_image_desc_defaults(&(kiln_image_desc){.width = 4, .height = 4, .depth = 8});
    CHECK(vol.dims == 3 && vol.depth == 8 && vol.width == 4);
    kiln_image_desc one = kiln_image_desc_defaults(&(kiln_image_desc){.dims = 3});
    CHECK(one.dims == 3 && one.depth == 1);   /* a 3D image of one slice */
    kiln_image_desc twice = kiln_image_desc_defaults(&vol);
    CHECK(twice.dims == vol.dims && twice.depth == vol.depth && twice.label == vol.label);
    kiln_sampler_desc sz = kiln_sampler_desc_defaults(NULL);
    CHECK(sz.filter == KILN_FILTER_LINEAR && sz.address == KILN_ADDRESS_CLAMP);
    kiln_sampler_desc sg = kiln_sampler_desc_defaults(&(kiln_sampler_desc){.filter = KILN_FILTER_NEAREST,
                                                                            .address = KILN_ADDRESS_REPEAT});
    CHECK(sg.filter == KILN_FILTER_NEAREST && sg.address == KILN_ADDRESS_REPEAT);
}

TEST(define_defaults_give_one)
{
    kiln_define z = kiln_define_defaults(NULL);
    CHECK(z.name == NULL);
    CHECK(STR_EQ(z.value, "1"));
    kiln_define g = kiln_define_defaults(&(kiln_define){.name = "A", .value = "7"});
    CHECK(STR_EQ(g.name, "A") && STR_EQ(g.value, "7"));
    kiln_define n = kiln_define_defaults(&(kiln_define){.name = "A"});
    CHECK(STR_EQ(n.name, "A") && STR_EQ(n.value, "1"));
}

/* Compiles only when FLAG is 1 (the default value of a define). */
static const char k_flag_src[] = "#version 450\n"
                                 "layout(local_size_x = 1) in;\n"
                                 "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                                 "#if FLAG != 1\n"
                                 "#error FLAG is not 1\n"
                                 "#endif\n"
                                 "void main() { o[0] = FLAG; }\n";
static const char k_bad_src[] = "#version 450\n"
                                "layout(local_size_x = 1) in;\n"
                                "void main() { this is no glsl; }\n";

TEST(program_desc_defaults_name_entry_length_and_optimize)
{
    kiln_program_desc z = kiln_program_desc_defaults(NULL);
    CHECK(z.source == NULL);
    CHECK_EQ(z.source_len, 0);   /* no source to measure */
    CHECK(STR_EQ(z.name, "program.comp"));
    CHECK(STR_EQ(z.entry, "main"));
    CHECK_EQ(z.optimize, 1);
    CHECK(z.defines == NULL && z.define_count == 0 && z.include_dirs == NULL && z.include_dir_count == 0);
    kiln_program_desc zero = kiln_program_desc_defaults(&(kiln_program_desc){0});
    CHECK(SAME(z, zero));
    kiln_program_desc src = kiln_program_desc_defaults(&(kiln_program_desc){.source = k_flag_src});
    CHECK_EQ(src.source_len, strlen(k_flag_src));
    const kiln_define defs[] = {{.name = "FLAG"}};
    const char *dirs[] = {"/tmp"};
    kiln_program_desc given = {.source = k_flag_src, .source_len = 20, .name = "f.comp", .entry = "go",
                               .defines = defs, .define_count = 1, .include_dirs = dirs, .include_dir_count = 1,
                               .optimize = -1};
    kiln_program_desc g = kiln_program_desc_defaults(&given);
    CHECK(SAME(g, given));
    CHECK(g.defines == defs && g.defines[0].value == NULL);   /* the caller's array, not rewritten */
    kiln_program_desc twice = kiln_program_desc_defaults(&src);
    CHECK(SAME(twice, src));

    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    /* A define's NULL value is "1"; the whole string is the source. */
    kiln_program flag;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_flag_src, .defines = defs, .define_count = 1},
                                   &flag));
    CHECK_OK(kiln_program_wait(ctx, flag));
    kiln_program_interface iface;
    CHECK_OK(kiln_program_interface_get(ctx, flag, &iface));
    CHECK(STR_EQ(iface.entry, "main"));
    /* No name: messages say program.comp. */
    kiln_program bad;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_bad_src}, &bad));
    CHECK_RESULT(kiln_program_wait(ctx, bad), KILN_ERR_COMPILE);
    CHECK_MSG("program.comp");
    /* optimize 0 is optimize 1: the same program, sharing one compile. */
    kiln_context_stats before, after;
    CHECK_OK(kiln_context_stats_get(ctx, &before));
    kiln_program opt0, opt1, opt_off;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_uniform_src, .name = "o.comp"}, &opt0));
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_uniform_src, .name = "o.comp", .optimize = 1},
                                   &opt1));
    CHECK_OK(kiln_program_wait(ctx, opt0));
    CHECK_OK(kiln_program_wait(ctx, opt1));
    CHECK_OK(kiln_context_stats_get(ctx, &after));
    CHECK_EQ(after.compiles_adopted + after.compiles_deduplicated,
             before.compiles_adopted + before.compiles_deduplicated + 1);
    /* ...and optimize -1 is another. */
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_uniform_src, .name = "o.comp", .optimize = -1},
                                   &opt_off));
    CHECK_OK(kiln_program_wait(ctx, opt_off));
    kiln_context_stats last;
    CHECK_OK(kiln_context_stats_get(ctx, &last));
    CHECK_EQ(last.compiles_adopted + last.compiles_deduplicated, after.compiles_adopted + after.compiles_deduplicated);
    test_context_done(ctx);
}

/* ---- schemes and nodes -------------------------------------------------- */

TEST(scheme_desc_defaults_label_it_scheme)
{
    kiln_scheme_desc z = kiln_scheme_desc_defaults(NULL);
    CHECK(STR_EQ(z.label, "scheme"));
    kiln_scheme_desc zero = kiln_scheme_desc_defaults(&(kiln_scheme_desc){0});
    CHECK(SAME(z, zero));
    kiln_scheme_desc given = {.label = "frame"};
    kiln_scheme_desc g = kiln_scheme_desc_defaults(&given);
    CHECK(SAME(g, given));
    kiln_scheme_desc empty = kiln_scheme_desc_defaults(&(kiln_scheme_desc){.label = ""});
    CHECK(STR_EQ(empty.label, ""));   /* given, so kept */

    /* The runtime: a scheme made with a NULL desc, or a zero one, is
     * 'scheme' in messages; its unnamed node is 'node0'. */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_program bad;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_bad_src, .name = "bad.comp"}, &bad));
    CHECK_RESULT(kiln_program_wait(ctx, bad), KILN_ERR_COMPILE);
    for (int zero_desc = 0; zero_desc < 2; zero_desc++) {
        kiln_scheme s;
        REQUIRE_OK(kiln_scheme_create(ctx, zero_desc ? &(kiln_scheme_desc){0} : NULL, &s));
        kiln_node n;
        REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = bad, .groups = {1}}, &n));
        CHECK_RESULT(test_settled(ctx, kiln_scheme_submit(ctx, s, NULL)), KILN_ERR_COMPILE);
        CHECK_MSG("scheme 'scheme' node 'node0'");
        CHECK_MSG("bad.comp");
        CHECK_OK(kiln_scheme_destroy(ctx, s));
    }
    test_context_done(ctx);
}

/* Each invocation (one per workgroup) counts itself in o[0] and writes the
 * grid and binding 0's bound length. */
static const char k_grid_src[] = "#version 450\n"
                                 "layout(local_size_x = 1) in;\n"
                                 "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                                 "void main() {\n"
                                 "    atomicAdd(o[0], 1u);\n"
                                 "    if (gl_WorkGroupID == uvec3(0u)) {\n"
                                 "        o[1] = gl_NumWorkGroups.x; o[2] = gl_NumWorkGroups.y; o[3] = gl_NumWorkGroups.z;\n"
                                 "        o[4] = kiln_len(0);\n"
                                 "    }\n"
                                 "}\n";

TEST(node_desc_defaults_make_y_and_z_one)
{
    kiln_node_desc z = kiln_node_desc_defaults(NULL);
    CHECK_EQ(z.groups[0], 0);   /* no default: 0 is refused */
    CHECK_EQ(z.groups[1], 1);
    CHECK_EQ(z.groups[2], 1);
    CHECK(z.label == NULL);     /* decided at add_node: node<N> */
    CHECK(z.bindings == NULL && z.binding_count == 0 && z.program.id == 0);
    CHECK(z.params == NULL && z.param_count == 0);   /* every word 0 */
    kiln_node_desc zero = kiln_node_desc_defaults(&(kiln_node_desc){0});
    CHECK(SAME(z, zero));
    kiln_node_desc four = kiln_node_desc_defaults(&(kiln_node_desc){.groups = {4}});
    CHECK(four.groups[0] == 4 && four.groups[1] == 1 && four.groups[2] == 1);
    kiln_binding b = {.binding = 0, .buffer = {42}};   /* size 0: decided at add_node */
    kiln_node_desc given = {.program = {7}, .bindings = &b, .binding_count = 1, .groups = {4, 2, 3},
                            .params = (const uint32_t[KILN_PARAM_WORDS]){1, 2, 3, 4, 5, 6, 7, 8}, .param_count = KILN_PARAM_WORDS, .label = "n"};
    kiln_node_desc g = kiln_node_desc_defaults(&given);
    CHECK(SAME(g, given));
    CHECK(g.bindings == &b && g.bindings[0].size == 0);
    kiln_node_desc twice = kiln_node_desc_defaults(&four);
    CHECK(SAME(twice, four));

    /* The runtime: groups {4, 0, 0} runs 4x1x1; binding size 0 binds the
     * whole buffer. */
    kiln_context ctx;
    REQUIRE_OK(test_context_nospec(&ctx));
    kiln_program p;
    REQUIRE_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = k_grid_src, .name = "grid.comp"}, &p));
    kiln_buffer buf;
    REQUIRE_OK(kiln_buffer_create(ctx, &(kiln_buffer_desc){.size = 64, .label = "grid"}, &buf));
    kiln_scheme s;
    REQUIRE_OK(kiln_scheme_create(ctx, &(kiln_scheme_desc){.label = "grid"}, &s));
    kiln_node n;
    kiln_binding bind = {.binding = 0, .buffer = buf};
    REQUIRE_OK(kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = &bind, .binding_count = 1,
                                                               .groups = {4, 0, 0}},
                                    &n));
    kiln_ticket t;
    REQUIRE_OK(kiln_scheme_submit(ctx, s, &t));
    CHECK_OK(kiln_ticket_wait(ctx, t, UINT64_MAX));
    uint32_t o[5];
    CHECK_OK(kiln_buffer_readback(ctx, buf, 0, o, sizeof o));
    CHECK_EQ(o[0], 4);
    CHECK_EQ(o[1], 4);
    CHECK_EQ(o[2], 1);
    CHECK_EQ(o[3], 1);
    CHECK_EQ(o[4], 64);
    /* x has no default. */
    CHECK_RESULT(test_settled(ctx, kiln_scheme_add_node(ctx, s, &(kiln_node_desc){.program = p, .bindings = &bind, .binding_count = 1},
                                      &n)),
                 KILN_ERR_INVALID);
    CHECK_MSG("node 'node1': a grid of 0 workgroups in x");
    test_context_done(ctx);
}

/* ---- the archive -------------------------------------------------------- */

static int count_arc(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        n += len > 4 && !strcmp(e->d_name + len - 4, ".arc");
    }
    if (d)
        closedir(d);
    return n;
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

TEST(tidy_desc_defaults_merge_two_small_archives)
{
    kiln_archive_tidy_desc z = kiln_archive_tidy_desc_defaults(NULL);
    CHECK_EQ(z.compact, 0);
    CHECK_EQ(z.compact_at, 2);
    CHECK_EQ(z.small_bytes, 8ull << 20);
    CHECK_EQ(z.gc, 0);
    CHECK_EQ(z.max_size, 0);   /* the context's bound: KILN_ARCHIVE_MAX_SIZE at create, else 1 GiB */
    kiln_archive_tidy_desc zero = kiln_archive_tidy_desc_defaults(&(kiln_archive_tidy_desc){0});
    CHECK(SAME(z, zero));
    kiln_archive_tidy_desc given = {.compact = 1, .compact_at = 5, .small_bytes = 100, .gc = 1, .max_size = 1000};
    kiln_archive_tidy_desc g = kiln_archive_tidy_desc_defaults(&given);
    CHECK(SAME(g, given));
    kiln_archive_tidy_desc twice = kiln_archive_tidy_desc_defaults(&z);
    CHECK(SAME(twice, z));

    /* The runtime: two contexts each leave one small run archive; a tidy
     * of compact_at and small_bytes 0 merges them (2 of at most 8 MiB),
     * one of small_bytes 1 finds none small. */
    char dir[] = "/tmp/kiln-test-defaults-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("KILN_ARCHIVE", "1", 1);
    setenv("KILN_ARCHIVE_DIR", dir, 1);
    for (int i = 0; i < 2; i++) {
        kiln_context ctx;
        REQUIRE_OK(test_context(&ctx));
        char src[256];
        snprintf(src, sizeof src,
                 "#version 450\nlayout(local_size_x = 1) in;\n"
                 "layout(std430, binding = 0) buffer O { uint o[]; };\nvoid main() { o[0] = %du; }\n", i + 10);
        kiln_program p;
        CHECK_OK(kiln_program_create(ctx, &(kiln_program_desc){.source = src}, &p));
        CHECK_OK(kiln_program_wait(ctx, p));
        test_context_done(ctx);
    }
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_archive_info info;
    CHECK_OK(kiln_archive_info_get(ctx, &info));
    CHECK_EQ(info.enabled, 1);
    CHECK_EQ(count_arc(info.dir), 2);
    kiln_archive_tidy_result r;
    const char *remote = getenv("KILN_REMOTE");
    if (remote && *remote) {
        /* A server's archive is the server's: a client's tidy is refused,
         * and the files stay. */
        CHECK_RESULT(kiln_archive_tidy(ctx, &(kiln_archive_tidy_desc){.compact = 1}, &r), KILN_ERR_INVALID);
        CHECK_MSG("tidied by the server alone");
        CHECK_EQ(count_arc(info.dir), 2);
        test_context_done(ctx);
        setenv("KILN_ARCHIVE", "0", 1);
        unsetenv("KILN_ARCHIVE_DIR");
        remove_tree(dir);
        return;
    }
    CHECK_OK(kiln_archive_tidy(ctx, &(kiln_archive_tidy_desc){.compact = 1, .small_bytes = 1}, &r));
    CHECK_EQ(r.merged, 0);
    CHECK_EQ(count_arc(info.dir), 2);
    CHECK_OK(kiln_archive_tidy(ctx, &(kiln_archive_tidy_desc){.compact = 1}, &r));
    CHECK_EQ(r.merged, 2);
    CHECK_EQ(count_arc(info.dir), 1);
    test_context_done(ctx);
    setenv("KILN_ARCHIVE", "0", 1);
    unsetenv("KILN_ARCHIVE_DIR");
    remove_tree(dir);
}

TEST(precompile_desc_defaults_leave_the_stall_to_the_call)
{
    kiln_precompile_desc z = kiln_precompile_desc_defaults(NULL);
    CHECK(z.stall_s == 0);   /* KILN_PRECOMPILE_STALL_S at each call, else 5 */
    kiln_precompile_desc zero = kiln_precompile_desc_defaults(&(kiln_precompile_desc){0});
    CHECK(SAME(z, zero));
    CHECK(kiln_precompile_desc_defaults(&(kiln_precompile_desc){.stall_s = -3}).stall_s == 0);
    CHECK(kiln_precompile_desc_defaults(&(kiln_precompile_desc){.stall_s = NAN}).stall_s == 0);
    CHECK(kiln_precompile_desc_defaults(&(kiln_precompile_desc){.stall_s = 2.5}).stall_s == 2.5);

    /* The runtime: a NULL desc is a zero desc (the archive is off here:
     * nothing to precompile). */
    kiln_context ctx;
    REQUIRE_OK(test_context(&ctx));
    kiln_precompile_result r;
    CHECK_OK(kiln_context_precompile(ctx, NULL, &r));
    CHECK_EQ(r.programs, 0);
    CHECK_OK(kiln_context_precompile(ctx, &(kiln_precompile_desc){0}, NULL));
    test_context_done(ctx);
}

int main(void)
{
    RUN(context_desc_defaults_fill_the_backend_and_leave_env_fields_to_create);
    RUN(buffer_desc_defaults_are_storage_and_buffer);
    RUN(image_and_sampler_desc_defaults);
    RUN(define_defaults_give_one);
    RUN(program_desc_defaults_name_entry_length_and_optimize);
    RUN(scheme_desc_defaults_label_it_scheme);
    RUN(node_desc_defaults_make_y_and_z_one);
    RUN(tidy_desc_defaults_merge_two_small_archives);
    RUN(precompile_desc_defaults_leave_the_stall_to_the_call);
    return TEST_SUMMARY();
}
