/* SPDX-License-Identifier: MIT */
/*
 * test_program.c: the front end without a device: the param prelude and
 * its line numbers, baking, entries, includes, defines, desc validation and
 * reflection of the interface.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spirv-tools/libspirv.h>
#include <spirv/unified1/spirv.h>

#include "program/program_private.h"
#include "test.h"

static kiln_result compile(const kiln_program_desc *d, struct prog_output *out)
{
    struct prog_source src;
    kiln_result r = prog_source_init(&src, d);
    if (r < 0)
        return r;
    r = prog_compile(&src, out);
    prog_source_finish(&src);
    return r;
}

static const char *k_storage =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) buffer Data { uint d[]; };\n"
    "void main() { d[gl_GlobalInvocationID.x] = kiln_param(0) + kiln_param(7); }\n";

TEST(universal_program_reads_params_and_declares_all_words)
{
    struct prog_output out;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_storage, .name = "p.comp"}, &out));
    CHECK_EQ(out.iface.push_constant_size, KILN_PUSH_BYTES);   /* every word, even though 2 are read */
    CHECK_EQ(out.iface.binding_count, 1);
    CHECK_EQ(out.iface.workgroup_size[0], 64);
    CHECK_EQ(out.iface.workgroup_size[1], 1);
    CHECK(out.words > 5 && out.spirv[0] == 0x07230203u);
    prog_output_finish(&out);
}

TEST(baking_a_word_compiles_a_constant_and_keeps_the_interface)
{
    struct prog_output uni, baked;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_storage, .optimize = -1}, &uni));
    kiln_define def = {"KILN_SPEC_MAIN_UW0", "10u"};
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_storage, .defines = &def, .define_count = 1, .optimize = -1},
                       &baked));
    /* The baked module differs, and holds the literal 10 as a constant. */
    CHECK(uni.words != baked.words || memcmp(uni.spirv, baked.spirv, uni.words * 4));
    char why[256];
    CHECK(prog_iface_compatible(&uni.iface, &baked.iface, why, sizeof why));
    CHECK_EQ(baked.iface.push_constant_size, KILN_PUSH_BYTES);  /* word 7 still read at its offset */
    prog_output_finish(&uni);
    prog_output_finish(&baked);
}

TEST(optimized_builds_keep_every_declared_binding)
{
    /* Baking word 0 to 0 makes binding 0 unread; it must stay declared. */
    const char *src = "#version 450\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) readonly buffer In { uint a[]; };\n"
                      "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                      "layout(std430, binding = 2) readonly buffer Unused { uint c[]; };\n"
                      "void main() { if (kiln_param(0) == 1u) b[0] = a[0]; else b[0] = 5u; }\n";
    kiln_define bake = {"KILN_SPEC_MAIN_UW0", "0u"};
    struct prog_output uni, baked;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src}, &uni));
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src, .defines = &bake, .define_count = 1}, &baked));
    CHECK_EQ(uni.iface.binding_count, 3);
    CHECK_EQ(baked.iface.binding_count, 3);
    char why[256] = "";
    CHECK(prog_iface_compatible(&uni.iface, &baked.iface, why, sizeof why));
    if (why[0])
        fprintf(stderr, "%s\n", why);
    prog_output_finish(&uni);
    prog_output_finish(&baked);
}

TEST(prelude_text_has_every_slot_macro)
{
    struct prog_source src;
    REQUIRE_OK(prog_source_init(&src, &(kiln_program_desc){.source = k_storage, .entry = "main"}));
    size_t len;
    char *text = prog_preprocess(&src, false, &len);
    REQUIRE(text);
    for (int n = 0; n < 8; n++) {
        char want[64];
        snprintf(want, sizeof want, "#ifndef KILN_SPEC_MAIN_UW%d\n", n);
        CHECK(strstr(text, want) != NULL);
    }
    CHECK(strstr(text, "#line 2\n") != NULL);  /* the source's line 2 follows the prelude */
    free(text);
    prog_source_finish(&src);
}

/* A compile error on a known source line is reported at that line. */
static void check_error_line(const char *source, const char *where)
{
    struct prog_output out;
    CHECK_RESULT(compile(&(kiln_program_desc){.source = source, .name = "bad.comp"}, &out), KILN_ERR_COMPILE);
    if (!out.log || !strstr(out.log, where)) {
        test_failures_++;
        fprintf(stderr, "%s: log lacks '%s':\n%s\n", test_name_, where, out.log ? out.log : "(null)");
    }
    CHECK(out.spirv == NULL);
    prog_output_finish(&out);
}

/* A #version too old for compute is refused by kiln, naming its line,
 * before the compiler sees it (glslang would print its whole built-in
 * table to standard output for some of them); versions compute takes
 * compile. */
TEST(a_version_too_old_for_compute_is_refused_at_its_line)
{
    check_error_line("#version 110\nvoid main() {}\n", "bad.comp:1: error: '#version'");
    check_error_line("// first\n/* #version 450 in a comment */\n#version 300 es\nvoid main() {}\n",
                     "bad.comp:3: error: '#version'");
    check_error_line("#version <50\nvoid main() {}\n", "bad.comp:1: error: '#version'");
    const char *fine[] = {"#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n",
                          "#version 310 es\nlayout(local_size_x = 1) in;\nvoid main() {}\n",
                          "/* #version 110 */\n#version 460 core\nlayout(local_size_x = 1) in;\nvoid main() {}\n"};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        struct prog_output out;
        kiln_result r = compile(&(kiln_program_desc){.source = fine[i]}, &out);
        if (r != KILN_OK)
            fprintf(stderr, "%s: source %zu: %s\n", test_name_, i, out.log ? out.log : kiln_last_error());
        CHECK_OK(r);
        prog_output_finish(&out);
    }
}

TEST(compile_errors_keep_source_line_numbers)
{
    check_error_line("#version 450\n"
                     "layout(local_size_x = 1) in;\n"
                     "void main() {\n"
                     "    undeclared_thing = 1;\n"
                     "}\n",
                     "bad.comp:4:");
    /* A header of comments and extensions before the prelude. */
    check_error_line("// kernel header\n"
                     "#version 450\n"
                     "/* a block\n"
                     "   comment */\n"
                     "#extension GL_KHR_shader_subgroup_basic : require\n"
                     "\n"
                     "layout(local_size_x = 1) in;\n"
                     "void main() { int x = ; }\n",
                     "bad.comp:8:");
    /* No #version: kiln supplies one and the numbers still match. */
    check_error_line("layout(local_size_x = 1) in;\n"
                     "void main() {\n"
                     "  float f = vec2(1.0);\n"
                     "}\n",
                     "bad.comp:3:");
}

TEST(named_entry_gets_its_own_macros)
{
    const char *src = "#version 450\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                      "void other() { d[1] = 5u; }\n"
                      "void blur() { d[0] = KILN_SPEC_BLUR_UW3 + kiln_param(2); }\n";
    struct prog_output out;
    CHECK_OK(compile(&(kiln_program_desc){.source = src, .entry = "blur"}, &out));
    CHECK(!strcmp(out.iface.entry, "blur"));
    prog_output_finish(&out);
    /* An entry the source does not define is a failed compile that says so. */
    CHECK_RESULT(compile(&(kiln_program_desc){.source = src, .entry = "blu", .name = "e.comp"}, &out),
                 KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "e.comp: error: entry 'blu'"));
    prog_output_finish(&out);
}

TEST(float_and_int_accessors)
{
    struct prog_output out;
    const char *src = "#version 450\n"
          "layout(local_size_x = 1) in;\n"
          "layout(std430, binding = 0) buffer D { int i; float f[]; };\n"
          "void main() { f[0] = kiln_paramf(1) * 2.0; i = kiln_parami(2); }\n";
    CHECK_OK(compile(&(kiln_program_desc){.source = src}, &out));
    CHECK_EQ(out.iface.bindings[0].min_size, 4);   /* the fixed part: one int */
    prog_output_finish(&out);
}

TEST(defines_reach_the_source)
{
    const char *src = "#version 450\n"
                      "layout(local_size_x = WG) in;\n"
                      "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                      "void main() { d[0] = VALUE; }\n";
    kiln_define defs[] = {{"WG", "32"}, {"VALUE", "7u"}};
    struct prog_output out;
    CHECK_OK(compile(&(kiln_program_desc){.source = src, .defines = defs, .define_count = 2}, &out));
    CHECK_EQ(out.iface.workgroup_size[0], 32);
    prog_output_finish(&out);
    CHECK_RESULT(compile(&(kiln_program_desc){.source = src}, &out), KILN_ERR_COMPILE);
    prog_output_finish(&out);
}

TEST(includes_resolve_from_include_folders)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/common.glsl", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    fputs("uint twice(uint x) { return 2u * x; }\n", f);
    fclose(f);
    const char *src = "#version 450\n"
                      "#include \"common.glsl\"\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                      "void main() { d[0] = twice(kiln_param(0)); }\n";
    const char *dirs[] = {dir};
    struct prog_output out;
    CHECK_OK(compile(&(kiln_program_desc){.source = src, .include_dirs = dirs, .include_dir_count = 1}, &out));
    prog_output_finish(&out);
    /* Without the folder the include is not found, and the log says which. */
    CHECK_RESULT(compile(&(kiln_program_desc){.source = src, .name = "inc.comp"}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "common.glsl"));
    prog_output_finish(&out);
    unlink(path);
    rmdir(dir);
}

/* ---- the include resolver: depth, cycles, what it reads ----------------------- */

/* Writes dir/name with text. */
static bool put_text(const char *dir, const char *name, const char *text)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static void remove_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_EQ(system(cmd), 0);
}

static const char *k_inc_main = "#version 450\n"
                                "#include \"a.h\"\n"
                                "layout(local_size_x = 1) in;\n"
                                "layout(std430, binding = 0) buffer D { uint d[]; };\n"
                                "void main() { d[0] = kiln_param(0); }\n";

/* Compiles k_inc_main with dir as its include folder; the log must hold
 * `want` (NULL: must compile). Returns within seconds whatever the files
 * do (an alarm kills the test binary otherwise). */
static void compile_includes(const char *dir, const char *want)
{
    const char *dirs[] = {dir};
    struct prog_output out;
    alarm(60);
    kiln_result r = compile(&(kiln_program_desc){.source = k_inc_main, .name = "m.comp", .include_dirs = dirs,
                                                 .include_dir_count = 1},
                            &out);
    alarm(0);
    if (!want) {
        CHECK_OK(r);
        if (r != KILN_OK && out.log)
            fprintf(stderr, "log: %s\n", out.log);
    } else {
        CHECK_EQ(r, KILN_ERR_COMPILE);
        CHECK(out.log && strstr(out.log, want));
        if (!out.log || !strstr(out.log, want))
            fprintf(stderr, "log lacks '%s': %s\n", want, out.log ? out.log : "(none)");
    }
    prog_output_finish(&out);
}

static void compile_includes_service(const char *dir, const char *want);

TEST(an_include_cycle_is_refused_naming_its_chain)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX", chain[400];
    REQUIRE(mkdtemp(dir));
    /* A header that includes itself, unguarded. */
    REQUIRE(put_text(dir, "a.h", "#include \"a.h\"\nuint fa() { return 1u; }\n"));
    snprintf(chain, sizeof chain, "%s/a.h includes %s/a.h includes %s/a.h", dir, dir, dir);
    compile_includes(dir, chain);
    /* The same through the compile service, which compiles from the files
     * as it read them once: the compiler's second ask (as <a.h>) must get
     * the cycle again, not "cannot open include". */
    compile_includes_service(dir, chain);
    /* Two headers that include each other, unguarded. */
    REQUIRE(put_text(dir, "a.h", "#include \"b.h\"\nuint fa() { return 1u; }\n"));
    REQUIRE(put_text(dir, "b.h", "#include \"a.h\"\nuint fb() { return 2u; }\n"));
    snprintf(chain, sizeof chain, "%s/a.h includes %s/b.h includes %s/a.h", dir, dir, dir);
    compile_includes(dir, chain);
    compile_includes(dir, "#include cycle");
    compile_includes_service(dir, chain);
    remove_tree(dir);
}

TEST(guarded_headers_included_again_are_fine)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX";
    REQUIRE(mkdtemp(dir));
    /* a.h and b.h include each other behind guards, and a.h includes b.h
     * twice: each header's body is read once. */
    REQUIRE(put_text(dir, "a.h", "#ifndef A_H\n#define A_H\n#include \"b.h\"\n#include \"b.h\"\n"
                                 "uint fa() { return fb() + 1u; }\n#endif\n"));
    REQUIRE(put_text(dir, "b.h", "#ifndef B_H\n#define B_H\n#include \"a.h\"\nuint fb() { return 2u; }\n#endif\n"));
    compile_includes(dir, NULL);
    /* A header that includes itself behind a guard. */
    REQUIRE(put_text(dir, "a.h", "#ifndef A_H\n#define A_H\n#include \"a.h\"\nuint fa() { return 1u; }\n#endif\n"));
    compile_includes(dir, NULL);
    /* #pragma once (kiln honours it; glslang only warns): included again on
     * one chain (a.h -> c.h -> a.h), and twice side by side (c.h). */
    REQUIRE(put_text(dir, "a.h", "#pragma once\n#include \"c.h\"\n#include \"c.h\"\nuint fa() { return 1u; }\n"));
    REQUIRE(put_text(dir, "c.h", "  # pragma once\n#include \"a.h\"\nuint fc() { return 3u; }\n"));
    compile_includes(dir, NULL);
    remove_tree(dir);
}

TEST(includes_nest_at_most_32_deep)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX";
    REQUIRE(mkdtemp(dir));
    /* a.h -> h1.h -> ... -> h<n>.h: 32 levels compile, 33 are refused. */
    for (int deep = 32; deep <= 33; deep++) {
        REQUIRE(put_text(dir, "a.h", "#include \"h1.h\"\n"));
        for (int i = 1; i < deep; i++) {
            char name[32], text[64];
            snprintf(name, sizeof name, "h%d.h", i);
            if (i + 1 < deep)
                snprintf(text, sizeof text, "#include \"h%d.h\"\n", i + 1);
            else
                snprintf(text, sizeof text, "uint fh() { return %du; }\n", i);
            REQUIRE(put_text(dir, name, text));
        }
        compile_includes(dir, deep == 32 ? NULL : "includes nested deeper than 32");
    }
    remove_tree(dir);
}

/* The same through the compile service (on the mock backend, which
 * compiles front ends as any backend does): it keys the request from the
 * files as it reads them once and compiles from that snapshot, which must
 * keep a refused file's reason, not turn it into "not found". */
static void compile_includes_service(const char *dir, const char *want)
{
    const char *dirs[] = {dir};
    kiln_context ctx;
    REQUIRE_OK(kiln_context_create(&(kiln_context_desc){.backend = KILN_BACKEND_MOCK}, &ctx));
    alarm(60);
    kiln_program p;
    kiln_result r = kiln_program_create(ctx, &(kiln_program_desc){.source = k_inc_main, .name = "m.comp",
                                                                  .include_dirs = dirs, .include_dir_count = 1},
                                        &p);
    if (r == KILN_OK)
        r = kiln_program_wait(ctx, p);
    alarm(0);
    CHECK_EQ(r, KILN_ERR_COMPILE);
    char log[2048] = "";
    if (r == KILN_ERR_COMPILE)
        CHECK_OK(kiln_program_log(ctx, p, log, sizeof log, NULL));
    CHECK(strstr(log, want) != NULL);
    if (!strstr(log, want))
        fprintf(stderr, "service log lacks '%s': %s\n", want, log);
    CHECK(strstr(log, "cannot open include") == NULL);   /* never "not found" */
    kiln_context_destroy(ctx);
}

TEST(an_include_that_is_no_regular_file_is_refused_at_once)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX", path[600];
    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.h", dir);
    REQUIRE(mkfifo(path, 0644) == 0);   /* opened for reading without O_NONBLOCK, it waits for a writer */
    compile_includes(dir, "is not a regular file (a FIFO)");
    compile_includes_service(dir, "is not a regular file (a FIFO)");
    /* A folder under the name: refused as well, not taken for "absent". */
    REQUIRE(unlink(path) == 0);
    REQUIRE(mkdir(path, 0755) == 0);
    compile_includes(dir, "is not a regular file (a folder)");
    compile_includes_service(dir, "is not a regular file (a folder)");
    remove_tree(dir);
}

TEST(an_include_past_the_bound_is_refused_unread)
{
    char dir[] = "/tmp/kiln-test-inc-XXXXXX", path[600];
    REQUIRE(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.h", dir);
    /* Sparse: one byte past PROG_MAX_INCLUDE_BYTES, holding nothing. */
    FILE *f = fopen(path, "w");
    REQUIRE(f);
    REQUIRE(ftruncate(fileno(f), (off_t)PROG_MAX_INCLUDE_BYTES + 1) == 0);
    fclose(f);
    compile_includes(dir, "past the largest included file kiln reads");
    compile_includes_service(dir, "past the largest included file kiln reads");
    /* At the bound it is read (and, all zeros, fails to compile as text). */
    REQUIRE(truncate(path, (off_t)PROG_MAX_INCLUDE_BYTES) == 0);
    struct prog_output out;
    const char *dirs[] = {dir};
    CHECK_RESULT(compile(&(kiln_program_desc){.source = k_inc_main, .name = "m.comp", .include_dirs = dirs,
                                              .include_dir_count = 1},
                         &out),
                 KILN_ERR_COMPILE);
    CHECK(out.log && !strstr(out.log, "past the largest"));
    prog_output_finish(&out);
    remove_tree(dir);
}

/* The resolver alone, without the compiler: the way a fuzz target drives
 * it, over an in-memory include table. */
TEST(the_include_resolver_runs_alone)
{
    struct prog_include table[] = {
        {.req = "a.h", .from = "m.comp", .relative = true, .path = "inc/a.h", .content = "A", .len = 1},
        {.req = "b.h", .from = "inc/a.h", .relative = true, .path = "inc/b.h", .content = "B", .len = 1},
        {.req = "a.h", .from = "inc/b.h", .relative = true, .path = "inc/a.h", .content = "A", .len = 1},
        {.req = "gone.h", .from = "m.comp", .relative = false, .path = NULL, .content = NULL, .len = 0},
        {.req = "pipe.h", .from = "m.comp", .relative = false, .refused = "inc/pipe.h is not a regular file (a FIFO)"},
        {.req = "big.h", .from = "m.comp", .relative = true, .refused = "inc/big.h is 20000000 bytes, past the bound"},
    };
    struct prog_source src = {.name = "m.comp", .includes = table, .include_count = 6};
    struct prog_includer in;
    prog_includer_init(&in, &src);
    char *content = NULL, path[256];
    size_t len = 0;
    REQUIRE_OK(prog_include_resolve(&in, "m.comp", "a.h", true, 1, &content, &len, path, sizeof path));
    CHECK(len == 1 && content && content[0] == 'A' && !strcmp(path, "inc/a.h"));
    free(content);
    REQUIRE_OK(prog_include_resolve(&in, "inc/a.h", "b.h", true, 2, &content, &len, path, sizeof path));
    free(content);
    /* a.h again, from b.h: a guard may stop it there, so it is given. */
    REQUIRE_OK(prog_include_resolve(&in, "inc/b.h", "a.h", true, 3, &content, &len, path, sizeof path));
    free(content);
    /* b.h again from a.h: the step a.h -> b.h is taken a second time. */
    CHECK_RESULT(prog_include_resolve(&in, "inc/a.h", "b.h", true, 4, &content, &len, path, sizeof path),
                 KILN_ERR_COMPILE);
    CHECK_MSG("inc/a.h includes inc/b.h includes inc/a.h includes inc/b.h");
    CHECK(content == NULL);
    /* Back up the chain, the same step is a new one: a sibling include. */
    REQUIRE_OK(prog_include_resolve(&in, "inc/a.h", "b.h", true, 2, &content, &len, path, sizeof path));
    free(content);
    /* Not in the table; too deep. */
    CHECK_RESULT(prog_include_resolve(&in, "m.comp", "gone.h", false, 1, &content, &len, path, sizeof path),
                 KILN_ERR_IO);
    CHECK_MSG("gone.h");
    CHECK_MSG("cannot open include");
    /* Refused when the snapshot was taken: it says so. */
    CHECK_RESULT(prog_include_resolve(&in, "m.comp", "pipe.h", false, 1, &content, &len, path, sizeof path),
                 KILN_ERR_IO);
    CHECK_MSG("inc/pipe.h is not a regular file (a FIFO)");
    /* glslang asks for a "x" it could not open again as <x>: the refusal
     * of the "x" answers both (the snapshot keyed only that lookup). */
    CHECK_RESULT(prog_include_resolve(&in, "m.comp", "big.h", true, 1, &content, &len, path, sizeof path),
                 KILN_ERR_IO);
    CHECK_MSG("inc/big.h is 20000000 bytes");
    CHECK_RESULT(prog_include_resolve(&in, "m.comp", "big.h", false, 1, &content, &len, path, sizeof path),
                 KILN_ERR_IO);
    CHECK_MSG("inc/big.h is 20000000 bytes");
    CHECK_RESULT(prog_include_resolve(&in, "x.h", "a.h", true, PROG_MAX_INCLUDE_DEPTH + 1, &content, &len, path,
                                      sizeof path),
                 KILN_ERR_LIMIT);
    CHECK_MSG("deeper than 32");
    prog_includer_finish(&in);
}

TEST(reflection_reads_kinds_access_and_sizes)
{
    const char *src = "#version 450\n"
                      "layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;\n"
                      "layout(std430, binding = 3) readonly buffer In { uint a[]; };\n"
                      "layout(std430, binding = 1) writeonly buffer Out { uint b[]; };\n"
                      "layout(std430, binding = 2) buffer Both { uvec4 head; uint c[]; };\n"
                      "layout(std140, binding = 0) uniform U { vec4 scale; uint n; };\n"
                      "void main() { uint i = gl_LocalInvocationIndex; b[i] = a[i] + c[i] + n; c[i] = head.x; }\n";
    struct prog_output out;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src}, &out));
    const kiln_program_interface *it = &out.iface;
    REQUIRE(it->binding_count == 4);
    /* Sorted by binding number. */
    CHECK_EQ(it->bindings[0].binding, 0);
    CHECK_EQ(it->bindings[0].kind, KILN_BINDING_UNIFORM_BUFFER);
    CHECK_EQ(it->bindings[0].access, KILN_ACCESS_READ);
    CHECK_EQ(it->bindings[0].min_size, 20);   /* vec4 + uint */
    CHECK_EQ(it->bindings[1].binding, 1);
    CHECK_EQ(it->bindings[1].access, KILN_ACCESS_WRITE);
    CHECK_EQ(it->bindings[2].binding, 2);
    CHECK_EQ(it->bindings[2].access, KILN_ACCESS_READ | KILN_ACCESS_WRITE);
    CHECK_EQ(it->bindings[2].min_size, 16);
    CHECK_EQ(it->bindings[3].binding, 3);
    CHECK_EQ(it->bindings[3].kind, KILN_BINDING_STORAGE_BUFFER);
    CHECK_EQ(it->bindings[3].access, KILN_ACCESS_READ);
    CHECK(!strcmp(it->bindings[3].name, "In"));   /* names survive optimization, for messages */
    CHECK(!strcmp(it->bindings[0].name, "U"));
    CHECK_EQ(it->workgroup_size[0], 8);
    CHECK_EQ(it->workgroup_size[1], 4);
    CHECK_EQ(it->workgroup_size[2], 2);
    prog_output_finish(&out);
}

TEST(unbindable_resources_fail_the_program_with_a_reason)
{
    const char *img = "#version 450\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(rgba8, binding = 2) uniform writeonly image2DMS picture;\n"
                      "void main() { imageStore(picture, ivec2(0), 0, vec4(1)); }\n";
    struct prog_output out;
    CHECK_RESULT(compile(&(kiln_program_desc){.source = img, .name = "img.comp"}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "storage image 'picture'") && strstr(out.log, "binding 2") &&
          strstr(out.log, "is a multisampled image"));
    prog_output_finish(&out);
    const char *arr = "#version 450\n"
                      "#extension GL_EXT_nonuniform_qualifier : require\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) buffer B { uint d[]; } blocks[];\n"
                      "void main() { blocks[nonuniformEXT(blocks[0].d[1])].d[0] = 1u; }\n";
    CHECK_RESULT(compile(&(kiln_program_desc){.source = arr}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "'B' (set 0, binding 0) is an array of unknown length"));
    prog_output_finish(&out);
    const char *set9 = "#version 450\n"
                       "layout(local_size_x = 1) in;\n"
                       "layout(std430, set = 9, binding = 0) buffer D { uint d[]; };\n"
                       "void main() { d[0] = 1u; }\n";
    CHECK_RESULT(compile(&(kiln_program_desc){.source = set9}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "'D' (binding 0) is in descriptor set 9; kiln binds sets 0..7"));
    prog_output_finish(&out);
}

TEST(bad_descs_are_refused_by_name)
{
    struct prog_source src;
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){0}), KILN_ERR_INVALID);
    CHECK_MSG("source");
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){.source = k_storage, .entry = "9lives"}),
                 KILN_ERR_INVALID);
    CHECK_MSG("9lives");
    kiln_define bad = {"not an ident", "1"};
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){.source = k_storage, .defines = &bad, .define_count = 1}),
                 KILN_ERR_INVALID);
    CHECK_MSG("not an ident");
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){.source = k_storage, .define_count = 1}),
                 KILN_ERR_INVALID);
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){.source = k_storage, .define_count = 99,
                                                               .defines = &bad}),
                 KILN_ERR_INVALID);
    CHECK_RESULT(prog_source_init(&src, &(kiln_program_desc){.source = "ab\0cd", .source_len = 5}), KILN_ERR_INVALID);
    CHECK_MSG("NUL");
}

TEST(interface_compatibility_names_the_difference)
{
    kiln_program_interface a = {.binding_count = 2}, b;
    a.bindings[0] = (kiln_binding_info){.binding = 0, .kind = KILN_BINDING_STORAGE_BUFFER, .access = 3};
    a.bindings[1] = (kiln_binding_info){.binding = 1, .kind = KILN_BINDING_UNIFORM_BUFFER, .access = 1};
    char why[256];
    b = a;
    CHECK(prog_iface_compatible(&a, &b, why, sizeof why));
    b.bindings[1].kind = KILN_BINDING_STORAGE_BUFFER;
    CHECK(!prog_iface_compatible(&a, &b, why, sizeof why) && strstr(why, "binding 1"));
    b = a;
    b.bindings[0].access = KILN_ACCESS_READ;
    CHECK(!prog_iface_compatible(&a, &b, why, sizeof why) && strstr(why, "access"));
    b = a;
    b.binding_count = 1;
    CHECK(!prog_iface_compatible(&a, &b, why, sizeof why) && strstr(why, "binding 1"));
}

TEST(first_error_line)
{
    char buf[128];
    prog_log_first_error("x.comp:3: warning: meh\nx.comp:5: error: 'y' : undeclared\n1 error\n", buf, sizeof buf);
    CHECK(!strcmp(buf, "x.comp:5: error: 'y' : undeclared"));
}

/* ---- signed division by -1 (fold_guard.c) ------------------------------------ */

/* Constants that reach INT_MIN / -1 (32 and 64 bits, scalars and vectors,
 * / and %) once the optimizer propagates them: without the guard, SPIRV-Tools
 * folds them in this process and SIGFPE kills it. */
static const char *k_div_min =
    "#version 450\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
    "layout(local_size_x = 1) in;\n"
    "layout(std430, binding = 0) buffer B { int x[8]; int64_t y[4]; };\n"
    "void main() {\n"
    "    int m = -2147483647 - 1; int b = -1;\n"
    "    x[0] = m / b; x[1] = m % b;\n"
    "    ivec3 v = ivec3(m, 5, m) / ivec3(b); x[2] = v.x; x[3] = v.y;\n"
    "    ivec2 r = ivec2(m, 7) % ivec2(b); x[4] = r.x; x[5] = r.y;\n"
    "    int64_t m64 = -9223372036854775807l - 1l; int64_t b64 = -1l;\n"
    "    y[0] = m64 / b64; y[1] = m64 % b64;\n"
    "    i64vec2 w = i64vec2(m64, 3l) / i64vec2(b64); y[2] = w.x; y[3] = w.y;\n"
    "}\n";

static bool spirv_valid(const uint32_t *w, size_t n, const char *what)
{
    spv_context c = spvContextCreate(SPV_ENV_VULKAN_1_2);
    spv_const_binary_t bin = {w, n};
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidate(c, &bin, &diag);
    if (r != SPV_SUCCESS)
        fprintf(stderr, "%s: spirv-val: %s\n", what, diag && diag->error ? diag->error : "(no message)");
    spvDiagnosticDestroy(diag);
    spvContextDestroy(c);
    return r == SPV_SUCCESS;
}

/* How many OpSDiv/OpSRem/OpSMod the module holds, and how many of them take
 * their divisor from an OpSelect (the guard's). */
static void count_divisions(const uint32_t *w, size_t n, uint32_t *divs, uint32_t *selected)
{
    *divs = *selected = 0;
    for (size_t at = 5; at < n; at += w[at] >> 16) {
        uint32_t op = w[at] & 0xffff;
        if (op != SpvOpSDiv && op != SpvOpSRem && op != SpvOpSMod)
            continue;
        (*divs)++;
        for (size_t d = 5; d < n; d += w[d] >> 16)
            if ((w[d] & 0xffff) == SpvOpSelect && w[d + 2] == w[at + 4])
                (*selected)++;
    }
}

TEST(division_guard_rewrites_every_signed_division_and_validates)
{
    struct prog_output raw;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_div_min, .name = "div.comp", .optimize = -1}, &raw));
    uint32_t before, sel;
    count_divisions(raw.spirv, raw.words, &before, &sel);
    CHECK_EQ(before, 7);
    CHECK_EQ(sel, 0);
    /* OpSMod too: the same module with every OpSRem turned into OpSMod. */
    uint32_t *smod = malloc(raw.words * 4);
    REQUIRE(smod);
    memcpy(smod, raw.spirv, raw.words * 4);
    for (size_t at = 5; at < raw.words; at += smod[at] >> 16)
        if ((smod[at] & 0xffff) == SpvOpSRem)
            smod[at] = (smod[at] & 0xffff0000u) | SpvOpSMod;
    const uint32_t *mods[2] = {raw.spirv, smod};
    for (int k = 0; k < 2; k++) {
        uint32_t *g = NULL, *opt = NULL, n_rw = 0;
        size_t gw = 0, ow = 0;
        char err[256] = "";
        CHECK_EQ(prog_fold_guard(mods[k], raw.words, &g, &gw, &n_rw, err, sizeof err), 0);
        if (!g) {
            fprintf(stderr, "guard: %s\n", err);
            continue;
        }
        CHECK_EQ(n_rw, 7);
        uint32_t divs;
        count_divisions(g, gw, &divs, &sel);
        CHECK_EQ(divs, 7);
        CHECK_EQ(sel, 7);   /* every divisor is the guard's select */
        CHECK(g[3] > raw.spirv[3]);   /* the bound grew */
        CHECK(spirv_valid(g, gw, k ? "guarded (SMod)" : "guarded"));
        /* The optimizer runs on it in this process and survives. */
        CHECK_EQ(prog_spirv_optimize(g, gw, SPV_ENV_VULKAN_1_2, &opt, &ow, err, sizeof err), 0);
        if (opt)
            CHECK(spirv_valid(opt, ow, "guarded and optimized"));
        free(g);
        free(opt);
    }
    free(smod);
    /* A module that divides nothing is left alone. */
    struct prog_output plain;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_storage, .optimize = -1}, &plain));
    uint32_t *g = NULL;
    size_t gw = 0;
    char err[256];
    CHECK_EQ(prog_fold_guard(plain.spirv, plain.words, &g, &gw, NULL, err, sizeof err), 1);
    CHECK(!g);
    prog_output_finish(&plain);
    prog_output_finish(&raw);
}

TEST(int_min_over_minus_one_compiles_optimized_without_killing_the_process)
{
    /* Without the guard this compile dies of SIGFPE inside SPIRV-Tools. */
    struct prog_output out;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = k_div_min, .name = "div.comp"}, &out));
    CHECK(spirv_valid(out.spirv, out.words, "compiled"));
    prog_output_finish(&out);
    /* The shape: the divisor is a baked word. */
    static const char *baked =
        "#version 450\n"
        "layout(local_size_x = 1) in;\n"
        "layout(std430, binding = 0) buffer B { int x[]; };\n"
        "void main() { int a = -2147483647 - 1; int b = kiln_parami(0);\n"
        "    x[0] = (-2147483647 - 1) / kiln_parami(0); x[1] = a / b; x[2] = a % b; }\n";
    kiln_define def = {"KILN_SPEC_MAIN_UW0", "0xffffffffu"};
    REQUIRE_OK(compile(&(kiln_program_desc){.source = baked, .defines = &def, .define_count = 1}, &out));
    prog_output_finish(&out);
}

TEST(division_of_other_widths_is_left_unoptimized_and_counted)
{
    static const char *src16 =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n"
        "layout(local_size_x = 1) in;\n"
        "layout(std430, binding = 0) buffer B { int x[]; };\n"
        "void main() { int16_t a = int16_t(x[0]); int16_t b = int16_t(x[1]); x[2] = int(a / b); }\n";
    struct prog_output raw, out;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src16, .optimize = -1}, &raw));
    uint32_t *g = NULL;
    size_t gw = 0;
    char err[256] = "";
    CHECK_EQ(prog_fold_guard(raw.spirv, raw.words, &g, &gw, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "16-bit") != NULL);
    uint64_t skipped0, skipped1;
    prog_fold_guard_counts(NULL, &skipped0);
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src16}, &out));
    prog_fold_guard_counts(NULL, &skipped1);
    CHECK_EQ(skipped1, skipped0 + 1);
    CHECK_EQ(out.words, raw.words);   /* kept as compiled */
    prog_output_finish(&out);
    prog_output_finish(&raw);
    /* A division inside a specialization constant is left unoptimized too. */
    static const char *spec_div =
        "#version 450\n"
        "layout(local_size_x = 1) in;\n"
        "layout(constant_id = 0) const int K = -1;\n"
        "const int Q = (-2147483647 - 1) / K;\n"
        "layout(std430, binding = 0) buffer B { int x[]; };\n"
        "void main() { x[0] = Q; }\n";
    REQUIRE_OK(compile(&(kiln_program_desc){.source = spec_div, .optimize = -1}, &raw));
    CHECK_EQ(prog_fold_guard(raw.spirv, raw.words, &g, &gw, NULL, err, sizeof err), -1);
    CHECK(strstr(err, "specialization constant") != NULL);
    prog_fold_guard_counts(NULL, &skipped0);
    REQUIRE_OK(compile(&(kiln_program_desc){.source = spec_div}, &out));
    prog_fold_guard_counts(NULL, &skipped1);
    CHECK_EQ(skipped1, skipped0 + 1);
    prog_output_finish(&out);
    prog_output_finish(&raw);
    /* Malformed input is refused, not read past its end. */
    uint32_t bad[7] = {0x07230203u, 0x10000, 0, 10, 0, (9u << 16) | SpvOpSDiv, 1};
    CHECK_EQ(prog_fold_guard(bad, 7, &g, &gw, NULL, err, sizeof err), -1);
    CHECK_EQ(prog_fold_guard(bad, 3, &g, &gw, NULL, err, sizeof err), -1);
}

/* ---- device limits (reflect.c) ------------------------------------------------ */

TEST(shared_memory_is_summed_with_explicit_type_sizes)
{
    static const char *src =
        "#version 450\n"
        "layout(local_size_x = 64) in;\n"
        "layout(constant_id = 0) const uint N = 10u;\n"
        "layout(std430, binding = 0) buffer B { uint x[]; };\n"
        "struct S { float a; vec3 b; uint c[5]; };\n"
        "shared uint u[100];\n"         /* 400 */
        "shared vec4 v[3];\n"           /* 48 */
        "shared mat3 m;\n"              /* 36 */
        "shared S s[2];\n"              /* 2 * (4 + 12 + 20) = 72 */
        "shared float f[N];\n"          /* 40: the constant's default */
        "shared bool t[4];\n"           /* 16: a bool takes 4 bytes */
        "void main() { uint i = gl_LocalInvocationID.x;\n"
        "    u[i] = i; v[i % 3u].x = 1.0; m[0][0] = 2.0; s[i % 2u].c[1] = i; f[i % N] = 3.0; t[i % 4u] = true;\n"
        "    barrier();\n"
        "    x[i] = u[63u - i] + uint(v[0].x + m[0][0]) + s[0].c[1] + uint(f[0]) + uint(t[1]); }\n";
    struct prog_output out;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = src, .optimize = -1}, &out));
    uint64_t bytes = 0;
    CHECK_OK(prog_shared_bytes(out.spirv, out.words, &bytes));
    CHECK_EQ(bytes, 400 + 48 + 36 + 72 + 40 + 16);

    kiln_caps caps = {.max_workgroup_size = {1024, 1024, 64}, .max_workgroup_invocations = 1024,
                      .max_shared_memory_size = 612, .max_push_constants_size = 128,
                      .max_per_stage_storage_buffers = 4, .max_per_stage_uniform_buffers = 12,
                      .max_per_stage_resources = 128, .max_bound_descriptor_sets = 4,
                      .max_per_stage_storage_images = 4, .max_per_stage_sampled_images = 4};
    CHECK_OK(prog_check_limits(out.spirv, out.words, &out.iface, &caps));
    caps.max_shared_memory_size = 611;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &out.iface, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("uses 612 bytes of shared memory; the device allows 611 (maxComputeSharedMemorySize)");
    caps.max_shared_memory_size = 612;
    caps.max_workgroup_size[0] = 32;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &out.iface, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("local_size_x = 64, the device allows at most 32");
    caps.max_workgroup_size[0] = 1024;
    caps.max_workgroup_invocations = 63;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &out.iface, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("maxComputeWorkGroupInvocations");
    caps.max_workgroup_invocations = 1024;
    caps.max_push_constants_size = KILN_PUSH_BYTES - 4;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &out.iface, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("maxPushConstantsSize");
    caps.max_push_constants_size = 128;
    /* Buffer counts per stage: the interface's bindings by kind. */
    kiln_program_interface many = out.iface;
    many.binding_count = 6;
    for (uint32_t i = 0; i < 6; i++)
        many.bindings[i] = (kiln_binding_info){.binding = i, .count = 1,
                                               .kind = i < 5 ? KILN_BINDING_STORAGE_BUFFER : KILN_BINDING_UNIFORM_BUFFER};
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("binds 5 storage buffers; the device allows 4 (maxPerStageDescriptorStorageBuffers)");
    caps.max_per_stage_storage_buffers = 8;
    caps.max_per_stage_uniform_buffers = 0;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("maxPerStageDescriptorUniformBuffers");
    caps.max_per_stage_uniform_buffers = 12;
    caps.max_per_stage_resources = 5;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("maxPerStageResources");
    caps.max_per_stage_resources = 6;
    CHECK_OK(prog_check_limits(out.spirv, out.words, &many, &caps));
    /* An array counts its elements; texel buffers and sets have limits of their own. */
    many.bindings[0].count = 5;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("binds 9 storage buffers; the device allows 8");
    many.bindings[0] = (kiln_binding_info){.set = 3, .binding = 0, .count = 5,
                                           .kind = KILN_BINDING_STORAGE_TEXEL_BUFFER};
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("binds 5 storage images and storage texel buffers; the device allows 4 "
              "(maxPerStageDescriptorStorageImages)");
    many.bindings[0].count = 1;
    many.bindings[0].kind = KILN_BINDING_UNIFORM_TEXEL_BUFFER;
    caps.max_per_stage_sampled_images = 0;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("maxPerStageDescriptorSampledImages");
    caps.max_per_stage_sampled_images = 4;
    caps.max_bound_descriptor_sets = 3;
    CHECK_RESULT(prog_check_limits(out.spirv, out.words, &many, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("uses descriptor set 3; the device binds sets 0..2 (maxBoundDescriptorSets 3)");
    caps.max_bound_descriptor_sets = 4;
    CHECK_OK(prog_check_limits(out.spirv, out.words, &many, &caps));
    /* Huge arrays saturate instead of wrapping. */
    static const char *huge =
        "#version 450\nlayout(local_size_x = 1) in;\nlayout(std430, binding = 0) buffer B { uint x[]; };\n"
        "shared uint a[1073741823]; shared uint b[1073741823]; shared uint c[1073741823]; shared uint d[1073741823];\n"
        "shared uint e[1073741823];\n"
        "void main() { a[x[0]] = 1u; b[x[0]] = 1u; c[x[0]] = 1u; d[x[0]] = 1u; e[x[0]] = 1u; x[1] = a[0] + e[1]; }\n";
    struct prog_output big;
    REQUIRE_OK(compile(&(kiln_program_desc){.source = huge, .optimize = -1}, &big));
    CHECK_OK(prog_shared_bytes(big.spirv, big.words, &bytes));
    CHECK_EQ(bytes, 5ull * 4 * 1073741823);
    CHECK_RESULT(prog_check_limits(big.spirv, big.words, &big.iface, &caps), KILN_ERR_LIMIT);
    CHECK_MSG("21474836460 bytes of shared memory");
    prog_output_finish(&big);
    prog_output_finish(&out);
    uint32_t bad[6] = {0x07230203u, 0x10000, 0, 10, 0, (9u << 16) | SpvOpVariable};
    CHECK_RESULT(prog_shared_bytes(bad, 6, &bytes), KILN_ERR_INVALID);
}

int main(void)
{
    RUN(universal_program_reads_params_and_declares_all_words);
    RUN(baking_a_word_compiles_a_constant_and_keeps_the_interface);
    RUN(optimized_builds_keep_every_declared_binding);
    RUN(prelude_text_has_every_slot_macro);
    RUN(compile_errors_keep_source_line_numbers);
    RUN(a_version_too_old_for_compute_is_refused_at_its_line);
    RUN(named_entry_gets_its_own_macros);
    RUN(float_and_int_accessors);
    RUN(defines_reach_the_source);
    RUN(includes_resolve_from_include_folders);
    RUN(an_include_cycle_is_refused_naming_its_chain);
    RUN(guarded_headers_included_again_are_fine);
    RUN(includes_nest_at_most_32_deep);
    RUN(an_include_that_is_no_regular_file_is_refused_at_once);
    RUN(an_include_past_the_bound_is_refused_unread);
    RUN(the_include_resolver_runs_alone);
    RUN(reflection_reads_kinds_access_and_sizes);
    RUN(unbindable_resources_fail_the_program_with_a_reason);
    RUN(bad_descs_are_refused_by_name);
    RUN(interface_compatibility_names_the_difference);
    RUN(first_error_line);
    RUN(division_guard_rewrites_every_signed_division_and_validates);
    RUN(int_min_over_minus_one_compiles_optimized_without_killing_the_process);
    RUN(division_of_other_widths_is_left_unoptimized_and_counted);
    RUN(shared_memory_is_summed_with_explicit_type_sizes);
    return TEST_SUMMARY();
}
