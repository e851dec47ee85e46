/*
 * test_program.c: the front end without a device: the param prelude and
 * its line numbers, baking, entries, includes, defines, desc validation and
 * reflection of the interface.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "program/program.h"
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
    char *text = prog_preprocess(&src, &len);
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
                      "layout(rgba8, binding = 2) uniform writeonly image2D picture;\n"
                      "void main() { imageStore(picture, ivec2(0), vec4(1)); }\n";
    struct prog_output out;
    CHECK_RESULT(compile(&(kiln_program_desc){.source = img, .name = "img.comp"}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "storage image") && strstr(out.log, "binding 2"));
    prog_output_finish(&out);
    const char *arr = "#version 450\n"
                      "layout(local_size_x = 1) in;\n"
                      "layout(std430, binding = 0) buffer B { uint d[]; } blocks[2];\n"
                      "void main() { blocks[1].d[0] = blocks[0].d[0]; }\n";
    CHECK_RESULT(compile(&(kiln_program_desc){.source = arr}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "array of blocks"));
    prog_output_finish(&out);
    const char *set1 = "#version 450\n"
                       "layout(local_size_x = 1) in;\n"
                       "layout(std430, set = 1, binding = 0) buffer D { uint d[]; };\n"
                       "void main() { d[0] = 1u; }\n";
    CHECK_RESULT(compile(&(kiln_program_desc){.source = set1}, &out), KILN_ERR_COMPILE);
    CHECK(out.log && strstr(out.log, "set 1"));
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

int main(void)
{
    RUN(universal_program_reads_params_and_declares_all_words);
    RUN(baking_a_word_compiles_a_constant_and_keeps_the_interface);
    RUN(optimized_builds_keep_every_declared_binding);
    RUN(prelude_text_has_every_slot_macro);
    RUN(compile_errors_keep_source_line_numbers);
    RUN(named_entry_gets_its_own_macros);
    RUN(float_and_int_accessors);
    RUN(defines_reach_the_source);
    RUN(includes_resolve_from_include_folders);
    RUN(reflection_reads_kinds_access_and_sizes);
    RUN(unbindable_resources_fail_the_program_with_a_reason);
    RUN(bad_descs_are_refused_by_name);
    RUN(interface_compatibility_names_the_difference);
    RUN(first_error_line);
    return TEST_SUMMARY();
}
